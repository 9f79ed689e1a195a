/*
 * ui_validations.h - GET /ui/api/validations of weft-pilot's web view (issue 22; Kiali's
 * validations, with `istioctl analyze`'s messages): per resource the analyzers' messages, the
 * resource's YAML with the line at fault, the services it routes to or configures; the config
 * pilot rejected with what it serves instead; the Istio fields weft does not implement.
 *
 * Messages: exactly what `weftctl analyze` prints for pilot's config (cli/cmd_analyze.c), IST
 * and WFT codes: every default analyzer of the registry plus weft's
 * weft.PeerAuthenticationPortAnalyzer (pilot/analyze_authn.h), on a store loaded as analyze
 * loads one:
 *  - the directory source: `weftctl analyze -A DIR...` of pilot's --config-dir folders, read
 *    again from disk (istioctl's offline defaults, the ingress gateway Pod and Service, loaded
 *    first; workload controllers stand for their pods), resources without a namespace getting
 *    pilot's --default-namespace as pilot serves them. "origin" is the file, "yaml" the
 *    document's text as written in it (from its first line to the next "---"), "line" the
 *    1-based line of the finding in that text (0 when unknown: JSON files).
 *  - the Kubernetes source: `weftctl analyze --use-kube -A` of the objects pilot serves (the
 *    snapshot's documents), each rendered as YAML (ui_yaml.h) and analyzed in that form, so
 *    "yaml" is the rendered object and "line" the finding's line in it; "origin" is
 *    "kubernetes".
 * The analysis runs at most once per snapshot: lazily, at the first request after a new
 * snapshot (wf_snapshot.seq), and its answer is kept until the next one (wf_ui_validations_runs
 * counts the runs). Messages without a resource (none of Istio's analyzers report one today)
 * are listed under "mesh_messages" (same fields as a resource's messages, without "line").
 *
 * "services": the FQDN hosts a resource routes to or configures, as Istio's
 * ConvertHostToFQDN makes them (a host without a dot gets ".<ns>.svc.<domain suffix>", others
 * kept): a VirtualService's hosts and its http/tcp/tls route destinations and mirrors, a
 * DestinationRule's host, a ServiceEntry's hosts, a Service's own name; none for a Gateway and
 * other kinds. Sorted, unique.
 *
 * "rejected": /debug/config_errors's errors of the snapshot ("origin" the file, "line", "message"
 * "Kind ns/name: field: message", "resource" "Kind ns/name" or "" for a whole file, its
 * "namespace", "resources": the "Kind/ns/name" it is about, for a file rejected as a whole every
 * resource of it pilot keeps serving), with "serving": "last good version kept: <push
 * version>" (the push version that first served the content now kept: wf_ui_validations_note)
 * or "nothing served: no good version yet". "not_implemented": the snapshot's WFT warnings (model/unimplemented.h), {code,
 * resource "Kind/ns/name", field, message}.
 *
 * ?namespace=NS keeps what belongs to NS (analysis.h wf_resource_in_namespace: cluster-scoped
 * resources always; a Namespace belongs to itself); "summary" counts the levels of the messages
 * kept. The answer's "version" is the push version served.
 *
 * Ownership: the cache owns its JSON; answers are new values (caller json_decrefs).
 * Single-threaded (pilot's loop). No globals.
 */
#ifndef WF_PILOT_UI_VALIDATIONS_H
#define WF_PILOT_UI_VALIDATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "pilot/source.h"

typedef struct wf_ui_validations wf_ui_validations;

typedef struct wf_ui_val_source {
    const char *const *dirs; /* the directory source's folders (copied); n_dirs 0 = the
                              * Kubernetes source: the snapshot's documents */
    size_t n_dirs;
    const char *default_ns; /* namespace of resources that name none; NULL = "default" */
} wf_ui_val_source;

/* A new cache (src copied), NULL when out of memory. */
wf_ui_validations *wf_ui_validations_new(const wf_ui_val_source *src);
void wf_ui_validations_free(wf_ui_validations *v);

/* Snapshot s is served as push version: the resources it changed are recorded as served since
 * version (for "rejected"). Call for every snapshot delivered. 0, or -1 out of memory. */
int wf_ui_validations_note(wf_ui_validations *v, const wf_snapshot *s, const char *version);

/* The answer for snapshot s (NULL: an empty answer) served as version, kept to namespace ns
 * (NULL or "" = all): a new object, or NULL when out of memory. */
json_t *wf_ui_validations_json(wf_ui_validations *v, const wf_snapshot *s, const char *version,
                               const char *ns);

/* How many times the analyzers ran (at most once per snapshot asked about). */
uint64_t wf_ui_validations_runs(const wf_ui_validations *v);

#endif
