/*
 * an_misc.c - three small upstream analyzers (istio/istio
 * pkg/config/analysis/analyzers):
 * - applicationUID.Analyzer (deployment/pod.go): Pods and Deployments whose application
 *   containers (or pod security context) run as UID 1337, the proxy's (IST0144);
 * - deprecation.DeprecationAnalyzer (deprecation/deprecation.go): deprecated fields in
 *   VirtualServices and Sidecars and removed Istio CRDs (IST0002);
 * - sidecar.SelectorAnalyzer (sidecar/selector.go): Sidecar workload selectors that match no
 *   pod (IST0101) or overlap on a pod (IST0110), several selector-less Sidecars in one
 *   namespace (IST0111), and Sidecars that cannot apply because their workloads or
 *   namespace run in ambient mode (IST0167).
 * Synthetic Pods (made by the store from workload templates) are selector targets for the
 * Sidecar analyzer but are never reported on by the UID analyzer, which reports the
 * Deployment itself.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"

#define PROXY_UID 1337

/* ---- applicationUID.Analyzer ---- */

/* util.IsIstioControlPlane: an "istio" label, or release=istio. */
static bool istio_control_plane(const wf_resource *r)
{
    const char *release = wf_kvs_get(&r->labels, "release");
    return wf_kvs_get(&r->labels, "istio") || (release && strcmp(release, "istio") == 0);
}

/* Any UID 1337 in the pod security context or an application container's? */
static bool runs_as_proxy_uid(const wf_pod_spec *spec)
{
    if (spec->run_as_user == PROXY_UID)
        return true;
    for (size_t i = 0; i < spec->ncontainers; i++) {
        const wf_container *c = &spec->containers[i];
        if (c->name &&
            (strcmp(c->name, "istio-proxy") == 0 || strcmp(c->name, "istio-operator") == 0))
            continue;
        if (c->run_as_user == PROXY_UID)
            return true;
    }
    return false;
}

/* Upstream reports once per offending field; the messages are identical and deduplicated,
 * so one finding per resource is reported here. */
static void run_app_uid(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t n;
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *p = pods[i];
        if (p->synthetic || !p->t.pod || istio_control_plane(p))
            continue;
        if (runs_as_proxy_uid(&p->t.pod->spec))
            WF_REPORT0(ctx, WF_IST0144, p, NULL);
    }
    const wf_resource *const *deps = wf_store_kind(s, WF_KIND_DEPLOYMENT, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *d = deps[i];
        if (!d->t.workload || istio_control_plane(d))
            continue;
        if (runs_as_proxy_uid(&d->t.workload->spec))
            WF_REPORT0(ctx, WF_IST0144, d, NULL);
    }
}

const wf_analyzer wf_an_applicationUID_Analyzer = {
    .name = "applicationUID.Analyzer",
    .description = "Checks invalid application UID",
    .inputs = {WF_KIND_POD, WF_KIND_DEPLOYMENT, WF_KIND_OTHER},
    .codes = {WF_IST0144, WF_MSG_COUNT},
    .default_on = true,
    .run = run_app_uid,
};

/* ---- deprecation.DeprecationAnalyzer ---- */

/* Istio CRDs removed from the charts (rbac.istio.io). */
static const char *const removed_rbac_kinds[] = {"ClusterRbacConfig", "RbacConfig", "ServiceRole",
                                                 "ServiceRoleBinding"};

/* An int32 field as protobuf JSON reads it: a number, or a quoted decimal string. */
static bool proto_int(const wf_node *n, int64_t *out)
{
    if (wf_node_int(n, out))
        return true;
    const char *s = (n && n->quoted) ? wf_node_str(n) : NULL;
    if (!s || !*s)
        return false;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0')
        return false;
    *out = v;
    return true;
}

static void deprecated_vs(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const wf_node *http = wf_map_get(r->spec, "http");
    for (size_t i = 0; i < wf_seq_len(http); i++) {
        int64_t pct;
        const wf_node *p = wf_node_path(wf_seq_at(http, i), "fault.delay.percent");
        if (proto_int(p, &pct) && pct > 0)
            WF_REPORT(ctx, WF_IST0002, r, NULL,
                      "HTTPRoute.fault.delay.percent is deprecated; use "
                      "HTTPRoute.fault.delay.percentage");
    }
}

static void deprecated_sidecar(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const wf_node *ep = wf_node_path(r->spec, "outboundTrafficPolicy.egressProxy");
    if (ep && ep->type != WF_NODE_NULL)
        WF_REPORT(ctx, WF_IST0002, r, NULL, "OutboundTrafficPolicy.EgressProxy ignored");
}

static void deprecated_crd(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const char *group = wf_map_str(r->spec, "group");
    const char *kind = wf_node_str(wf_node_path(r->spec, "names.kind"));
    if (!group || !kind || strcmp(group, "rbac.istio.io") != 0)
        return;
    for (size_t i = 0; i < sizeof(removed_rbac_kinds) / sizeof(removed_rbac_kinds[0]); i++) {
        if (strcmp(kind, removed_rbac_kinds[i]) != 0)
            continue;
        const char *text = wf_arena_printf(
            wf_ctx_arena(ctx), "Custom resource type rbac.istio.io %s is removed", kind);
        if (text)
            WF_REPORT(ctx, WF_IST0002, r, NULL, text);
    }
}

static void for_kind(wf_analysis_ctx *ctx, wf_kind k,
                     void (*fn)(wf_analysis_ctx *, const wf_resource *))
{
    size_t n;
    const wf_resource *const *rs = wf_store_kind(wf_ctx_store(ctx), k, &n);
    for (size_t i = 0; i < n; i++)
        fn(ctx, rs[i]);
}

static void run_deprecation(wf_analysis_ctx *ctx)
{
    for_kind(ctx, WF_KIND_VIRTUALSERVICE, deprecated_vs);
    for_kind(ctx, WF_KIND_SIDECAR, deprecated_sidecar);
    for_kind(ctx, WF_KIND_CRD, deprecated_crd);
}

const wf_analyzer wf_an_deprecation_DeprecationAnalyzer = {
    .name = "deprecation.DeprecationAnalyzer",
    .description = "Checks for deprecated Istio types and fields",
    .inputs = {WF_KIND_VIRTUALSERVICE, WF_KIND_SIDECAR, WF_KIND_CRD, WF_KIND_OTHER},
    .codes = {WF_IST0002, WF_MSG_COUNT},
    .default_on = true,
    .run = run_deprecation,
};

/* ---- sidecar.SelectorAnalyzer ---- */

typedef struct sc_run {
    wf_analysis_ctx *ctx;
    const wf_resource *const *sidecars;
    size_t nsidecars;
    const wf_resource *const *pods;
    size_t npods;
    bool *reported;  /* per sidecar: IST0167 already given */
    size_t *scratch; /* nsidecars entries */
} sc_run;

static const wf_kvs *sc_selector(const wf_resource *sc)
{
    return (sc->t.sidecar && sc->t.sidecar->workload_selector.n > 0)
               ? &sc->t.sidecar->workload_selector
               : NULL;
}

static bool sc_selects(const wf_resource *sc, const wf_resource *pod)
{
    const wf_kvs *sel = sc_selector(sc);
    return sel && strcmp(sc->ns, pod->ns) == 0 && wf_kvs_subset(sel, &pod->labels);
}

/* IST0101 for selector Sidecars that match no pod in their namespace. */
static void report_unmatched(sc_run *run)
{
    for (size_t i = 0; i < run->nsidecars; i++) {
        const wf_resource *sc = run->sidecars[i];
        const wf_kvs *sel = sc_selector(sc);
        if (!sel)
            continue;
        bool found = false;
        for (size_t j = 0; j < run->npods && !found; j++)
            found = sc_selects(sc, run->pods[j]);
        if (found)
            continue;
        /* the line of the smallest label key, as util.ExtractLabelFromSelectorString */
        wf_kvs sorted;
        const char *str = wf_selector_string(wf_ctx_arena(run->ctx), sel);
        const wf_kv *first = wf_kvs_go_map(wf_ctx_arena(run->ctx), sel, &sorted) && sorted.n
                                 ? &sorted.items[0]
                                 : NULL;
        if (str)
            WF_REPORT(run->ctx, WF_IST0101, sc, first ? first->node : NULL, "selector", str);
    }
}

/* util.PodInAmbientMode */
static bool pod_ambient(const wf_resource *pod)
{
    const char *v = pod ? wf_kvs_get(&pod->annotations, "ambient.istio.io/redirection") : NULL;
    return v && strcmp(v, "enabled") == 0;
}

/* util.NamespaceInAmbientMode */
static bool namespace_ambient(const wf_resource *ns)
{
    if (!ns)
        return false;
    const char *inj = wf_kvs_get(&ns->labels, "istio-injection");
    const char *rev = wf_kvs_get(&ns->labels, "istio.io/rev");
    const char *mode = wf_kvs_get(&ns->labels, "istio.io/dataplane-mode");
    if ((inj && strcmp(inj, "enabled") == 0) || (rev && *rev))
        return false;
    return mode && strcmp(mode, "ambient") == 0;
}

static bool same_pod(const wf_resource *a, const wf_resource *b)
{
    return strcmp(a->ns, b->ns) == 0 && strcmp(a->name, b->name) == 0;
}

static void report_ineffective(sc_run *run, size_t sc_index, const char *reason)
{
    if (run->reported[sc_index])
        return;
    run->reported[sc_index] = true;
    WF_REPORT(run->ctx, WF_IST0167, run->sidecars[sc_index], NULL, reason);
}

/* Selector Sidecars matching pods named like pods[first] (podsToSidecars[name]), in
 * Sidecar order, into idx (when non-NULL); returns how many; *last is the last matching pod. */
static size_t group_matches(const sc_run *run, size_t first, size_t *idx, const wf_resource **last)
{
    const wf_resource *key = run->pods[first];
    size_t n = 0;
    for (size_t s = 0; s < run->nsidecars; s++) {
        for (size_t p = first; p < run->npods; p++) {
            if (same_pod(run->pods[p], key) && sc_selects(run->sidecars[s], run->pods[p])) {
                if (idx)
                    idx[n] = s;
                n++;
                *last = run->pods[p];
            }
        }
    }
    return n;
}

static void check_pod_group(sc_run *run, size_t first)
{
    const wf_resource *key = run->pods[first], *last = NULL;
    size_t n = group_matches(run, first, NULL, &last);
    bool ambient = pod_ambient(last);
    if (n == 0 || (n == 1 && !ambient))
        return;
    wf_arena *a = wf_ctx_arena(run->ctx);
    size_t *idx = wf_arena_alloc(a, n * sizeof(*idx));
    const char **names = wf_arena_alloc(a, n * sizeof(*names));
    if (!idx || !names)
        return;
    group_matches(run, first, idx, &last);
    for (size_t i = 0; i < n; i++)
        names[i] = run->sidecars[idx[i]]->name;
    const char *list = wf_go_slice(run->ctx, names, n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *sc = run->sidecars[idx[i]];
        if (ambient)
            report_ineffective(run, idx[i],
                               "selected workload is in ambient mode, the policy has no impact");
        else
            WF_REPORT(run->ctx, WF_IST0110, sc, wf_map_get(sc->metadata, "name"), list, key->ns,
                      key->name);
    }
}

static void report_overlaps(sc_run *run)
{
    for (size_t p = 0; p < run->npods; p++) {
        bool seen = false;
        for (size_t q = 0; q < p && !seen; q++)
            seen = same_pod(run->pods[q], run->pods[p]);
        if (!seen)
            check_pod_group(run, p);
    }
}

/* Sidecars without a (non-empty) selector in namespace ns, in order, into idx. */
static size_t namespace_scoped(const sc_run *run, const char *ns, size_t *idx)
{
    size_t n = 0;
    for (size_t s = 0; s < run->nsidecars; s++) {
        if (!sc_selector(run->sidecars[s]) && strcmp(run->sidecars[s]->ns, ns) == 0)
            idx[n++] = s;
    }
    return n;
}

static void check_namespace_group(sc_run *run, const char *ns, size_t *idx)
{
    size_t n = namespace_scoped(run, ns, idx);
    const wf_resource *nsr = wf_store_find(wf_ctx_store(run->ctx), WF_KIND_NAMESPACE, "", ns);
    if (namespace_ambient(nsr)) {
        for (size_t i = 0; i < n; i++)
            report_ineffective(run, idx[i],
                               "namespace is in ambient mode, the policy has no impact");
        return;
    }
    if (n < 2)
        return;
    const char **names = wf_arena_alloc(wf_ctx_arena(run->ctx), n * sizeof(*names));
    if (!names)
        return;
    for (size_t i = 0; i < n; i++)
        names[i] = run->sidecars[idx[i]]->name;
    const char *list = wf_go_slice(run->ctx, names, n);
    for (size_t i = 0; i < n; i++)
        WF_REPORT(run->ctx, WF_IST0111, run->sidecars[idx[i]], NULL, list, ns);
}

static void report_namespace_scoped(sc_run *run)
{
    for (size_t s = 0; s < run->nsidecars; s++) {
        const wf_resource *sc = run->sidecars[s];
        if (sc_selector(sc))
            continue;
        bool seen = false; /* handle each namespace once, at its first Sidecar */
        for (size_t t = 0; t < s && !seen; t++)
            seen = !sc_selector(run->sidecars[t]) && strcmp(run->sidecars[t]->ns, sc->ns) == 0;
        if (!seen)
            check_namespace_group(run, sc->ns, run->scratch);
    }
}

static void run_sidecar_selector(wf_analysis_ctx *ctx)
{
    sc_run run = {.ctx = ctx};
    const wf_store *s = wf_ctx_store(ctx);
    run.sidecars = wf_store_kind(s, WF_KIND_SIDECAR, &run.nsidecars);
    run.pods = wf_store_kind(s, WF_KIND_POD, &run.npods);
    if (run.nsidecars == 0)
        return;
    wf_arena *a = wf_ctx_arena(ctx);
    run.reported = wf_arena_alloc(a, run.nsidecars * sizeof(*run.reported));
    run.scratch = wf_arena_alloc(a, run.nsidecars * sizeof(*run.scratch));
    if (!run.reported || !run.scratch)
        return;
    report_unmatched(&run);
    report_overlaps(&run);
    report_namespace_scoped(&run);
}

const wf_analyzer wf_an_sidecar_SelectorAnalyzer = {
    .name = "sidecar.SelectorAnalyzer",
    .description = "Validates that sidecars that define a workload selector match at least one "
                   "pod, and that there aren't multiple sidecar resources that select overlapping "
                   "pods",
    .inputs = {WF_KIND_SIDECAR, WF_KIND_POD, WF_KIND_NAMESPACE, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0110, WF_IST0111, WF_IST0167, WF_MSG_COUNT},
    .default_on = true,
    .run = run_sidecar_selector,
};
