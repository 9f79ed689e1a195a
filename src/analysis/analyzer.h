/*
 * analyzer.h - the analyzer framework: what an analyzer declares, how it reports.
 *
 * Mirrors Istio's pkg/config/analysis: each analyzer has the name `istioctl analyze -L`
 * prints, a description, the kinds it reads and the codes it may emit. An analyzer is a
 * function over the store that calls wf_report() for each finding. Findings are collected,
 * then filtered, suppressed, sorted and deduplicated by the caller (see analysis.h).
 */
#ifndef WF_ANALYSIS_ANALYZER_H
#define WF_ANALYSIS_ANALYZER_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/message.h"
#include "analysis/meshcfg.h"
#include "model/store.h"

typedef struct wf_analysis_ctx wf_analysis_ctx;

typedef struct wf_analyzer {
    const char *name;        /* "virtualservice.DestinationRuleAnalyzer" */
    const char *description; /* as upstream */
    wf_kind inputs[8];       /* kinds read; WF_KIND_OTHER-terminated */
    wf_msg_id codes[8];      /* codes emitted; WF_MSG_COUNT-terminated */
    bool default_on;         /* registered in Istio's All() (runs without --analyzer) */
    void (*run)(wf_analysis_ctx *ctx);
} wf_analyzer;

/* One finding. Strings live in the context's arena. */
typedef struct wf_finding {
    wf_msg_id id;
    const wf_resource *res; /* may be NULL (message without a resource) */
    uint32_t line;          /* 0 = none */
    const char *text;       /* rendered message text (template with args) */
    const char *analyzer;   /* name of the analyzer that reported it */
} wf_finding;

/* Read-only inputs of a run. */
const wf_store *wf_ctx_store(const wf_analysis_ctx *ctx);
const wf_meshcfg *wf_ctx_mesh(const wf_analysis_ctx *ctx);
/* The run reads a Kubernetes cluster (wf_analysis_opts.kubernetes). */
bool wf_ctx_kubernetes(const wf_analysis_ctx *ctx);
/* Arena for scratch data that lives as long as the run. */
wf_arena *wf_ctx_arena(wf_analysis_ctx *ctx);

/* Report a finding of message `id` on resource `res` (may be NULL). `at` is the node the
 * finding points to; its line (or its key's line when given via wf_report_at_key) replaces
 * the document line. args are the template's arguments as strings (see wf_go_format). */
void wf_report(wf_analysis_ctx *ctx, wf_msg_id id, const wf_resource *res, const wf_node *at,
               const char *const *args, size_t nargs);

/* Same with an explicit line (0 = the resource's document line). */
void wf_report_line(wf_analysis_ctx *ctx, wf_msg_id id, const wf_resource *res, uint32_t line,
                    const char *const *args, size_t nargs);

#define WF_NARGS(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))
/* WF_REPORT(ctx, WF_IST0101, res, node, "host", "reviews") */
#define WF_REPORT(ctx, id, res, at, ...)                                                           \
    wf_report((ctx), (id), (res), (at), (const char *[]){__VA_ARGS__}, WF_NARGS(__VA_ARGS__))
#define WF_REPORT0(ctx, id, res, at) wf_report((ctx), (id), (res), (at), NULL, 0)

/* The registry of all analyzers, sorted by name. */
const wf_analyzer *const *wf_analyzers_all(size_t *n);

/* Lookup by exact name; NULL when none. */
const wf_analyzer *wf_analyzer_find(const char *name);

#endif
