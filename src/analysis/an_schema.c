/*
 * an_schema.c - schema.ValidationAnalyzer.<Kind>: Istio's validation as analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers/schema/validation.go: one analyzer per
 * Istio kind runs the kind's validation (src/model/validate*.c) on every resource of that
 * kind; each error becomes IST0106 SchemaValidationError, each warning IST0133 SchemaWarning,
 * except VirtualService's unreachable rules (IST0130) and ineffective matches (IST0131),
 * which keep their own messages (morePreciseMessage). A finding points at the field's line
 * when the validator names a node, else at the document line.
 *
 * MeshConfig, MeshNetworks and TrafficExtension have analyzers too (they are in Istio's
 * list) but weft loads no resource of those kinds, so they report nothing.
 */
#include "analysis/analyzer.h"
#include "model/validate_ex.h"

static void on_issue(const wf_resource *r, const wf_validation_issue *issue, void *arg)
{
    wf_analysis_ctx *ctx = arg;
    WF_REPORT(ctx, issue->warning ? WF_IST0133 : WF_IST0106, r, issue->node, issue->message);
}

static void on_aware(const wf_resource *r, const wf_validation_aware *a, void *arg)
{
    wf_analysis_ctx *ctx = arg;
    if (a->type == WF_VALIDATION_UNREACHABLE_RULE)
        WF_REPORT(ctx, WF_IST0130, r, NULL, a->params[0], a->params[1]);
    else
        WF_REPORT(ctx, WF_IST0131, r, NULL, a->params[0], a->params[1], a->params[2]);
}

static void run_kind(wf_analysis_ctx *ctx, wf_kind kind)
{
    size_t n;
    const wf_resource *const *rs = wf_store_kind(wf_ctx_store(ctx), kind, &n);
    for (size_t i = 0; i < n; i++) {
        if (rs[i]->synthetic)
            continue;
        wf_validate_resource_ex(rs[i], on_issue, on_aware, ctx);
    }
}

#define SCHEMA_ANALYZER(Kind, KIND)                                                                \
    static void run_##Kind(wf_analysis_ctx *ctx)                                                   \
    {                                                                                              \
        run_kind(ctx, KIND);                                                                       \
    }                                                                                              \
    const wf_analyzer wf_an_schema_##Kind = {                                                      \
        .name = "schema.ValidationAnalyzer." #Kind,                                                \
        .description = "Runs schema validation as an analyzer on '" #Kind "' resources",           \
        .inputs = {KIND, WF_KIND_OTHER},                                                           \
        .codes = {WF_IST0106, WF_IST0130, WF_IST0131, WF_IST0133, WF_MSG_COUNT},                   \
        .default_on = true,                                                                        \
        .run = run_##Kind,                                                                         \
    };

SCHEMA_ANALYZER(AuthorizationPolicy, WF_KIND_AUTHORIZATIONPOLICY)
SCHEMA_ANALYZER(DestinationRule, WF_KIND_DESTINATIONRULE)
SCHEMA_ANALYZER(EnvoyFilter, WF_KIND_ENVOYFILTER)
SCHEMA_ANALYZER(Gateway, WF_KIND_GATEWAY)
SCHEMA_ANALYZER(PeerAuthentication, WF_KIND_PEERAUTHENTICATION)
SCHEMA_ANALYZER(ProxyConfig, WF_KIND_PROXYCONFIG)
SCHEMA_ANALYZER(RequestAuthentication, WF_KIND_REQUESTAUTHENTICATION)
SCHEMA_ANALYZER(ServiceEntry, WF_KIND_SERVICEENTRY)
SCHEMA_ANALYZER(Sidecar, WF_KIND_SIDECAR)
SCHEMA_ANALYZER(Telemetry, WF_KIND_TELEMETRY)
SCHEMA_ANALYZER(VirtualService, WF_KIND_VIRTUALSERVICE)
SCHEMA_ANALYZER(WasmPlugin, WF_KIND_WASMPLUGIN)
SCHEMA_ANALYZER(WorkloadEntry, WF_KIND_WORKLOADENTRY)
SCHEMA_ANALYZER(WorkloadGroup, WF_KIND_WORKLOADGROUP)

/* Kinds weft does not load from files: listed, never reporting. */
static void run_nothing(wf_analysis_ctx *ctx)
{
    (void)ctx;
}

#define SCHEMA_ANALYZER_EMPTY(Kind)                                                                \
    const wf_analyzer wf_an_schema_##Kind = {                                                      \
        .name = "schema.ValidationAnalyzer." #Kind,                                                \
        .description = "Runs schema validation as an analyzer on '" #Kind "' resources",           \
        .inputs = {WF_KIND_OTHER},                                                                 \
        .codes = {WF_IST0106, WF_IST0130, WF_IST0131, WF_IST0133, WF_MSG_COUNT},                   \
        .default_on = true,                                                                        \
        .run = run_nothing,                                                                        \
    };

SCHEMA_ANALYZER_EMPTY(MeshConfig)
SCHEMA_ANALYZER_EMPTY(MeshNetworks)
SCHEMA_ANALYZER_EMPTY(TrafficExtension)
