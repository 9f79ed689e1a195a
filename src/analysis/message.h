/*
 * message.h - Istio analysis message types (IST codes) and rendered messages.
 *
 * The table of message types is generated at build time from
 * ../shared/corpus/istio-analyzers/messages.json (Istio's pkg/config/analysis/msg/
 * messages.yaml) by tools/gen_messages.py into messages_gen.h/.c; nothing here is
 * hand-typed. Templates use Go fmt verbs (%s, %q, %v, %d) and are rendered with Go's rules
 * (%q quotes like strconv.Quote).
 */
#ifndef WF_ANALYSIS_MESSAGE_H
#define WF_ANALYSIS_MESSAGE_H

#include <stddef.h>

#include "core/gofmt.h"
#include "core/strbuf.h"

typedef enum wf_level { WF_LEVEL_ERROR = 0, WF_LEVEL_WARNING = 1, WF_LEVEL_INFO = 2 } wf_level;

typedef struct wf_msg_type {
    const char *code; /* "IST0101" */
    const char *name; /* "ReferencedResourceNotFound" */
    wf_level level;
    const char *description;
    const char *tmpl; /* Go format string */
    size_t nargs;
} wf_msg_type;

#include "messages_gen.h" /* enum wf_msg_id { WF_IST0001, ..., WF_MSG_COUNT } */

/* The type for an id; NULL when out of range. */
const wf_msg_type *wf_msg_type_get(wf_msg_id id);

/* Lookup by code ("IST0101"); NULL when unknown. */
const wf_msg_type *wf_msg_type_by_code(const char *code);

/* "Error", "Warning", "Info". */
const char *wf_level_name(wf_level l);

/* Parse a level name case-insensitively; returns -1 when unknown. */
int wf_level_parse(const char *s);

/* Render a Go format template with string arguments: %s and %v print the string, %q
 * prints it Go-quoted, %d prints it as is. Missing arguments render as Go does
 * ("%!s(MISSING)"). Appends to out. */
void wf_go_format(wf_strbuf *out, const char *tmpl, const char *const *args, size_t nargs);

#endif
