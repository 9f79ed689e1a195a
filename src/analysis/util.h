/*
 * util.h - helpers shared by analyzers: host names, namespaces, visibility.
 *
 * Follows Istio's pkg/config/analysis/analyzers/util (ConvertHostToFQDN,
 * GetResourceNameFromHost, exportTo handling) and pkg/config/host matching rules.
 * Returned strings live in the analysis context's arena.
 */
#ifndef WF_ANALYSIS_UTIL_H
#define WF_ANALYSIS_UTIL_H

#include <stdbool.h>

#include "analysis/analyzer.h"

/* Istio's ConvertHostToFQDN: a host with no dot that does not start with "*" gets
 * ".<ns>.svc.<suffix>" (an empty ns gives "name..svc.<suffix>", as upstream); a host with
 * dots or a leading wildcard is returned unchanged. */
const char *wf_fqdn(wf_analysis_ctx *ctx, const char *ns, const char *host);




/* exportTo visibility: is a resource in namespace `owner_ns` with exportTo list `export_to`
 * (empty = "*", the mesh default) visible from namespace `from_ns`? "." means owner_ns,
 * "*" everywhere, "~" nowhere. */
bool wf_export_visible(const wf_strs *export_to, const char *owner_ns, const char *from_ns);



/* "<ns>/<name>" or "<name>" (resource.FullName.String()). */
const char *wf_full_name(wf_analysis_ctx *ctx, const wf_resource *r);

/* The labels of set as a Go map holds them: one entry per key (a repeated key keeps its last
 * value), sorted by key. out->items is an arena array. Returns false on out of memory. */
bool wf_kvs_go_map(wf_arena *a, const wf_kvs *set, wf_kvs *out);

/* Kubernetes labels.SelectorFromSet(set).String(): "k1=v1,k2=v2" sorted by key, a repeated
 * key keeping its last value; "" for an empty set. Arena string, NULL on out of memory. */
const char *wf_selector_string(wf_arena *a, const wf_kvs *set);

/* Go's fmt %v of a string slice: "[a b c]". */
const char *wf_go_slice(wf_analysis_ctx *ctx, const char *const *v, size_t n);

#endif
