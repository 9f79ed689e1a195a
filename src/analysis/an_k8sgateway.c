/*
 * an_k8sgateway.c - Istio's Kubernetes Gateway API analyzers (istio/istio
 * pkg/config/analysis/analyzers/k8sgateway):
 *
 * - k8sgateway.SelectorAnalyzer (workloadselector.go): an AuthorizationPolicy,
 *   RequestAuthentication, Telemetry or WasmPlugin that uses `selector` (not `targetRef`)
 *   to select a Kubernetes Gateway's pods (label gateway.networking.k8s.io/gateway-name) in
 *   its namespace is ineffective (IST0166), once per selected gateway pod.
 * - k8sgateway.CRDVersionAnalyzer (crdversion.go): a Gateway API CRD whose
 *   gateway.networking.k8s.io/bundle-version is below the minimum this Istio version
 *   watches (pkg/config/schema/gatewayapi MinimumCRDVersions) is IST0176.
 */
#include <string.h>

#include "analysis/an_gateway_util.h"
#include "analysis/analyzer.h"

#define GATEWAY_NAME_LABEL "gateway.networking.k8s.io/gateway-name"
#define BUNDLE_VERSION_ANN "gateway.networking.k8s.io/bundle-version"

/* ==== k8sgateway.SelectorAnalyzer ==== */

/* maps.Contains(labels, matchLabels): every matchLabels pair is in labels. A missing or
 * empty matchLabels is contained in anything. */
static bool labels_contain(const wf_kvs *labels, const wf_node *match)
{
    if (!match || match->type != WF_NODE_MAP)
        return true;
    for (size_t i = 0; i < match->len; i++) {
        const wf_map_entry *e = &match->u.entries[i];
        const char *want = wf_node_str(e->value);
        const char *have = wf_kvs_get(labels, e->key);
        if (!have || strcmp(have, want ? want : "") != 0)
            return false;
    }
    return true;
}

static void check_policy_selector(wf_analysis_ctx *ctx, const wf_resource *r)
{
    /* GetTargetRef() != nil: the policy attaches by reference, the selector is not used */
    const wf_node *target = wf_map_get(r->spec, "targetRef");
    if (target && target->type != WF_NODE_NULL)
        return;
    const wf_node *sel = wf_map_get(r->spec, "selector");
    if (!sel || sel->type != WF_NODE_MAP)
        return;
    const wf_node *match = wf_map_get(sel, "matchLabels");
    size_t np;
    const wf_resource *const *pv = wf_store_kind(wf_ctx_store(ctx), WF_KIND_POD, &np);
    for (size_t i = 0; i < np; i++) {
        const char *gw = wf_kvs_get(&pv[i]->labels, GATEWAY_NAME_LABEL);
        if (gw && strcmp(pv[i]->ns, r->ns) == 0 && labels_contain(&pv[i]->labels, match))
            WF_REPORT(ctx, WF_IST0166, r, NULL, gw);
    }
}

static void run_selector(wf_analysis_ctx *ctx)
{
    static const wf_kind kinds[] = {WF_KIND_AUTHORIZATIONPOLICY, WF_KIND_REQUESTAUTHENTICATION,
                                    WF_KIND_TELEMETRY, WF_KIND_WASMPLUGIN};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t n;
        const wf_resource *const *rv = wf_store_kind(wf_ctx_store(ctx), kinds[k], &n);
        for (size_t i = 0; i < n; i++)
            check_policy_selector(ctx, rv[i]);
    }
}

const wf_analyzer wf_an_k8sgateway_SelectorAnalyzer = {
    .name = "k8sgateway.SelectorAnalyzer",
    .description = "Check that selectors are effective for Kubernetes gateway",
    .inputs = {WF_KIND_AUTHORIZATIONPOLICY, WF_KIND_REQUESTAUTHENTICATION, WF_KIND_TELEMETRY,
               WF_KIND_WASMPLUGIN, WF_KIND_POD, WF_KIND_OTHER},
    .codes = {WF_IST0166, WF_MSG_COUNT},
    .default_on = true,
    .run = run_selector,
};

/* ==== k8sgateway.CRDVersionAnalyzer ==== */

/* gatewayapi.MinimumCRDVersions */
static const struct {
    const char *crd;
    wf_semver min;
} minimum_versions[] = {
    {"grpcroutes.gateway.networking.k8s.io", {1, 1, 0, "", "", 0, 0}},
    {"backendtlspolicies.gateway.networking.k8s.io", {1, 4, 0, "", "", 0, 0}},
    {"tlsroutes.gateway.networking.k8s.io", {1, 5, 0, "", "", 0, 0}},
};

static const wf_semver *minimum_for(const char *crd)
{
    for (size_t i = 0; i < sizeof(minimum_versions) / sizeof(minimum_versions[0]); i++)
        if (strcmp(minimum_versions[i].crd, crd) == 0)
            return &minimum_versions[i].min;
    return NULL;
}

static void check_crd_version(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const wf_semver *min = minimum_for(r->name);
    const char *bv = min ? wf_kvs_get(&r->annotations, BUNDLE_VERSION_ANN) : NULL;
    wf_semver installed;
    if (!bv || !wf_semver_parse(bv, &installed))
        return;
    wf_semver stripped = installed;
    stripped.pre = "";
    stripped.pre_len = 0;
    if (wf_semver_compare(&stripped, min) >= 0)
        return;
    const char *have = wf_semver_string(wf_ctx_arena(ctx), &installed);
    const char *need = wf_semver_string(wf_ctx_arena(ctx), min);
    if (have && need)
        WF_REPORT(ctx, WF_IST0176, r, NULL, r->name, have, need);
}

static void run_crd_version(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *rv = wf_store_kind(wf_ctx_store(ctx), WF_KIND_CRD, &n);
    for (size_t i = 0; i < n; i++)
        check_crd_version(ctx, rv[i]);
}

const wf_analyzer wf_an_k8sgateway_CRDVersionAnalyzer = {
    .name = "k8sgateway.CRDVersionAnalyzer",
    .description =
        "Checks Gateway API CRDs are at the minimum version required by this Istio version",
    .inputs = {WF_KIND_CRD, WF_KIND_OTHER},
    .codes = {WF_IST0176, WF_MSG_COUNT},
    .default_on = true,
    .run = run_crd_version,
};
