/*
 * analysis.h - running analyzers over a store and shaping the findings the way
 * `istioctl analyze` does (../shared/reference/istio-analyze.md §2-3).
 *
 * wf_analyze() runs the selected analyzers, then applies suppression (-S and the
 * galley.istio.io/analyze-suppress annotation) and the namespace filter, sorts (severity,
 * code, resource Kind/name/namespace, text) and removes findings whose rendered line is
 * identical.
 */
#ifndef WF_ANALYSIS_ANALYSIS_H
#define WF_ANALYSIS_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/analyzer.h"

/* Bytes of rendered finding text after which a run stops collecting: pathological input
 * (thousands of resources all conflicting with each other) must not exhaust memory. */
#define WF_ANALYSIS_MAX_TEXT_BYTES (64u << 20)

typedef struct wf_analysis_opts {
    const char *const *analyzers; /* --analyzer names; none (or none matching) = all default */
    size_t nanalyzers;
    const char *ns_filter;       /* keep findings in this namespace only; NULL = all */
    const char *const *suppress; /* "CODE=<resource glob>" */
    size_t nsuppress;
    /* Analyzers the caller adds to the registry's for this run (a layer above this one, e.g.
     * weftctl's checks that need weft-pilot's translation); selected like the registry's
     * (--analyzer names, else default_on). NULL/0 = none. */
    const wf_analyzer *const *extra;
    size_t nextra;
    /* The resources are a Kubernetes cluster's (`--use-kube`): what lacks effect in the local
     * mesh only is not reported (model/unimplemented.h WF_UNIMPL_KUBERNETES). */
    bool kubernetes;
} wf_analysis_opts;

typedef struct wf_analysis_result {
    wf_finding *findings; /* sorted, deduplicated, filtered */
    size_t n;
    bool truncated;          /* findings passed WF_ANALYSIS_MAX_TEXT_BYTES and were dropped */
    const wf_analyzer **ran; /* analyzers that ran, sorted by name */
    size_t nran;
    wf_arena arena; /* owns texts and scratch data */
} wf_analysis_result;

/* Run and collect. Returns a result the caller frees with wf_analysis_result_free, or NULL
 * on out of memory. */
wf_analysis_result *wf_analyze(const wf_store *s, const wf_meshcfg *mesh,
                               const wf_analysis_opts *opts);

void wf_analysis_result_free(wf_analysis_result *r);

/* Whether findings on r are reported when the namespace filter is ns (istioctl's -n): always
 * with ns NULL (-A) or r NULL; a Namespace belongs to itself; cluster-scoped kinds are always
 * in; others when their namespace is ns. */
bool wf_resource_in_namespace(const wf_resource *r, const char *ns);

/* The resource part of a finding's origin as istioctl prints it inside the parentheses:
 * "<Kind> [<ns>/]<name>" (the caller adds the file reference). Arena string. */
const char *wf_finding_origin(wf_arena *a, const wf_finding *f);

/* The ingress gateway Pod and Service `istioctl analyze` adds to an analysis of files
 * (pkg/config/analysis/local/defaults.go: the default MeshConfig's ingressControllerMode
 * STRICT and ingressService istio-ingressgateway), YAML to load under
 * WF_ANALYSIS_DEFAULTS_NAME before the files (so that the user's own replace them). */
#define WF_ANALYSIS_DEFAULTS_NAME "<defaults>"
extern const char wf_analysis_offline_defaults[];

/* Istio's analysis message documentation. */
#define WF_ANALYSIS_DOC_BASE "https://istio.io/latest/docs/reference/config/analysis"
/* A message code's documentationUrl as istioctl analyze prints it
 * (WF_ANALYSIS_DOC_BASE/<code>/?ref=istioctl-analyze); weft's own WFT codes link to
 * docs/analyze.md#<code>. Written into buf (cap bytes); returns buf. */
const char *wf_analysis_doc_url(const char *code, char *buf, size_t cap);

/* The file reference "<file>:<line>" (or "<file>" for JSON input); NULL when none. */
const char *wf_finding_reference(wf_arena *a, const wf_finding *f);

#endif
