/*
 * ui_yaml.h - a JSON value as YAML text for the web view (issue 22): the resources of the
 * Kubernetes config source, which pilot holds as JSON, are shown as `kubectl get -o yaml`
 * shows them: block style, keys in the JSON object's order, sequences at their key's
 * indentation ("- "), strings that would read back as another type (numbers, booleans, null,
 * "") quoted. Emitted with libyaml.
 */
#ifndef WF_PILOT_UI_YAML_H
#define WF_PILOT_UI_YAML_H

#include <jansson.h>

#include "core/strbuf.h"

/* Appends j as one YAML document (no "---", a final newline) to out. 0, or -1 (out of memory
 * or a value libyaml refuses; out then holds what was emitted). */
int wf_ui_json_to_yaml(const json_t *j, wf_strbuf *out);

#endif
