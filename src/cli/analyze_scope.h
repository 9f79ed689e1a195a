/*
 * analyze_scope.h - which of the resources read from files `weftctl analyze` reports on, and
 * which namespaces its namespace filter leaves out.
 *
 * istioctl analyze (../shared/reference/istio-analyze.md §3) analyzes every resource but
 * reports only findings on resources in the analyzed namespace (`-n`, else `default`), and
 * says "No validation issues found" even when every resource it read was in another
 * namespace. weftctl keeps istioctl's stdout and uses this count to say on stderr what was
 * left out (issue 15 item 4: never an all-clear over input that was not looked at).
 *
 * Counted: resources of known kinds the store read from the user's input, not kinds no
 * analyzer reads (WF_KIND_OTHER, skipped silently as istioctl does), not the defaults weftctl
 * adds (file "<defaults>"), not the Pods it synthesizes from workload controllers (their
 * controller is counted). The rule for "in the namespace" is the filter's own
 * (wf_resource_in_namespace).
 *
 * Memory: the result borrows namespace strings from the store (valid while it lives) and owns
 * its array; free with wf_analyze_scope_free.
 */
#ifndef WF_CLI_ANALYZE_SCOPE_H
#define WF_CLI_ANALYZE_SCOPE_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "model/store.h"

/* The name the defaults buffer is loaded under (cmd_analyze.c). */
#define WF_ANALYZE_DEFAULTS_NAME WF_ANALYSIS_DEFAULTS_NAME

typedef struct wf_ns_count {
    const char *ns; /* borrowed from the store */
    size_t n;       /* resources read in it */
} wf_ns_count;

typedef struct wf_analyze_scope {
    size_t in_scope;         /* resources whose findings are reported */
    size_t skipped;          /* resources in other namespaces */
    wf_ns_count *skipped_ns; /* their namespaces, sorted by name; NULL when none */
    size_t nskipped_ns;
} wf_analyze_scope;

/* Counts the store's resources against namespace ns (NULL = all namespaces: nothing is
 * skipped). The store must be finalized. Returns 0, or -1 on out of memory (out zeroed). */
int wf_analyze_scope_count(const wf_store *s, const char *ns, wf_analyze_scope *out);

void wf_analyze_scope_free(wf_analyze_scope *sc);

#endif
