/*
 * an_auth.c - AuthorizationPolicy and RequestAuthentication analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers:
 * - authz/authorizationpolicies.go (AuthorizationPoliciesAnalyzer,
 *   "auth.AuthorizationPoliciesAnalyzer"): IST0127 when the policy's selector matches no
 *   in-mesh pod (anywhere in the mesh for a policy in the root namespace, else in the
 *   policy's namespace), or when a selector-less policy outside the root namespace has no
 *   in-mesh pod in its namespace; IST0101 (reftype "namespace") for every
 *   rules[].from[].source.namespaces / notNamespaces entry that matches no Namespace
 *   ("*", "prefix*" and "*suffix" globs, else case-insensitive equality). A pod is in the
 *   mesh when util.PodInMesh holds (an istio-proxy container with an image; else the
 *   sidecar.istio.io/inject label, then annotation, is "true"; else its Namespace has
 *   istio-injection=enabled) or it carries ambient.istio.io/redirection: enabled.
 * - authn/blockedcidrs.go (BlockedCIDRsAnalyzer, "authn.BlockedCIDRsAnalyzer"): when
 *   RequestAuthentications exist, IST0175 on every Deployment labelled app=istiod whose
 *   containers do not set BLOCKED_CIDRS_IN_JWKS_URIS to a non-empty value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"

/* ---- in-mesh pods (util/in_mesh.go) ---- */

static bool has_istio_proxy(const wf_pod_spec *ps)
{
    const wf_container *lists[2] = {ps->containers, ps->init_containers};
    size_t counts[2] = {ps->ncontainers, ps->ninit};
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (lists[l][i].name && strcmp(lists[l][i].name, "istio-proxy") == 0)
                return lists[l][i].image && lists[l][i].image[0];
    return false;
}

static bool pod_in_mesh(const wf_store *s, const wf_resource *pod)
{
    if (pod->t.pod && has_istio_proxy(&pod->t.pod->spec))
        return true;
    const char *v = wf_kvs_get(&pod->labels, "sidecar.istio.io/inject");
    if (!v)
        v = wf_kvs_get(&pod->annotations, "sidecar.istio.io/inject");
    if (v)
        return strcmp(v, "true") == 0;
    const wf_resource *ns = wf_store_find(s, WF_KIND_NAMESPACE, "", pod->ns);
    if (ns) {
        const char *inj = wf_kvs_get(&ns->labels, "istio-injection");
        return inj && strcmp(inj, "enabled") == 0;
    }
    return false;
}

static bool pod_in_ambient(const wf_resource *pod)
{
    const char *v = wf_kvs_get(&pod->annotations, "ambient.istio.io/redirection");
    return v && strcmp(v, "enabled") == 0;
}

/* ---- selectors ---- */

/* selector.matchLabels as a Go map (one entry per key, the last wins), sorted by key. */
static bool match_labels(wf_analysis_ctx *ctx, const wf_node *sel, wf_kvs *out)
{
    wf_kvs raw;
    return wf_decode_kvs(wf_ctx_arena(ctx), wf_map_get(sel, "matchLabels"), &raw) == 0 &&
           wf_kvs_go_map(wf_ctx_arena(ctx), &raw, out);
}

/* ---- AuthorizationPoliciesAnalyzer ---- */

typedef struct mesh_pods {
    const wf_resource **v; /* in-mesh pods (a pod both injected and ambient counts once) */
    size_t n;
} mesh_pods;

static bool collect_mesh_pods(wf_analysis_ctx *ctx, mesh_pods *mp)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t np;
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &np);
    mp->n = 0;
    mp->v = wf_arena_alloc(wf_ctx_arena(ctx), (np ? np : 1) * sizeof(*mp->v));
    if (!mp->v)
        return false;
    for (size_t i = 0; i < np; i++)
        if (pod_in_mesh(s, pods[i]) || pod_in_ambient(pods[i]))
            mp->v[mp->n++] = pods[i];
    return true;
}

/* Does some in-mesh pod (in ns, or anywhere when ns is NULL) match the label set? */
static bool mesh_pod_matches(const mesh_pods *mp, const char *ns, const wf_kvs *set)
{
    for (size_t i = 0; i < mp->n; i++)
        if ((!ns || strcmp(mp->v[i]->ns, ns) == 0) && wf_kvs_subset(set, &mp->v[i]->labels))
            return true;
    return false;
}

static void analyze_no_matching_workloads(wf_analysis_ctx *ctx, const wf_resource *r,
                                          const mesh_pods *mp)
{
    const wf_node *sel = wf_map_get(r->spec, "selector");
    if (sel && sel->type == WF_NODE_NULL)
        sel = NULL;
    wf_kvs set;
    if (sel && !match_labels(ctx, sel, &set))
        return;
    if (strcmp(r->ns, wf_meshcfg_root_ns(wf_ctx_mesh(ctx))) == 0) {
        if (sel && !mesh_pod_matches(mp, NULL, &set))
            WF_REPORT(ctx, WF_IST0127, r, NULL, wf_selector_string(wf_ctx_arena(ctx), &set));
        return;
    }
    if (!sel) {
        wf_kvs none = {0, NULL};
        if (!mesh_pod_matches(mp, r->ns, &none))
            WF_REPORT(ctx, WF_IST0127, r, NULL, "");
        return;
    }
    if (!mesh_pod_matches(mp, r->ns, &set))
        WF_REPORT(ctx, WF_IST0127, r, NULL, wf_selector_string(wf_ctx_arena(ctx), &set));
}

/* namespaceMatch(ns, exp) */
static bool namespace_match(const char *ns, const char *exp)
{
    size_t nl = strlen(ns), el = strlen(exp);
    if (strcmp(exp, "*") == 0)
        return true;
    if (exp[0] == '*')
        return nl >= el - 1 && strcmp(ns + nl - (el - 1), exp + 1) == 0;
    if (el && exp[el - 1] == '*')
        return strncmp(ns, exp, el - 1) == 0;
    return strcasecmp(ns, exp) == 0;
}

static bool any_namespace_matches(const wf_store *s, const char *exp)
{
    size_t n;
    const wf_resource *const *nss = wf_store_kind(s, WF_KIND_NAMESPACE, &n);
    for (size_t i = 0; i < n; i++)
        if (namespace_match(nss[i]->name, exp))
            return true;
    return false;
}

/* Check source.namespaces then source.notNamespaces. As upstream, the line is looked up at
 * source.namespaces[k] even for a notNamespaces entry (k = its index in notNamespaces). */
static void check_source(wf_analysis_ctx *ctx, const wf_resource *r, const wf_node *source)
{
    const wf_node *nss = wf_map_get(source, "namespaces");
    const wf_node *lists[2] = {nss, wf_map_get(source, "notNamespaces")};
    for (size_t l = 0; l < 2; l++) {
        for (size_t k = 0; k < wf_seq_len(lists[l]); k++) {
            const char *exp = wf_node_str(wf_seq_at(lists[l], k));
            if (!exp || any_namespace_matches(wf_ctx_store(ctx), exp))
                continue;
            const wf_node *at = wf_seq_at(nss, k);
            if (at && at->type != WF_NODE_SCALAR && at->type != WF_NODE_NULL)
                at = NULL;
            WF_REPORT(ctx, WF_IST0101, r, at, "namespace", exp);
        }
    }
}

static void analyze_namespace_not_found(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const wf_node *rules = wf_map_get(r->spec, "rules");
    for (size_t i = 0; i < wf_seq_len(rules); i++) {
        const wf_node *from = wf_map_get(wf_seq_at(rules, i), "from");
        for (size_t j = 0; j < wf_seq_len(from); j++) {
            const wf_node *source = wf_map_get(wf_seq_at(from, j), "source");
            if (source && source->type == WF_NODE_MAP)
                check_source(ctx, r, source);
        }
    }
}

static void run_authorization_policies(wf_analysis_ctx *ctx)
{
    mesh_pods mp;
    if (!collect_mesh_pods(ctx, &mp))
        return;
    size_t n;
    const wf_resource *const *aps =
        wf_store_kind(wf_ctx_store(ctx), WF_KIND_AUTHORIZATIONPOLICY, &n);
    for (size_t i = 0; i < n; i++) {
        analyze_no_matching_workloads(ctx, aps[i], &mp);
        analyze_namespace_not_found(ctx, aps[i]);
    }
}

const wf_analyzer wf_an_auth_AuthorizationPoliciesAnalyzer = {
    .name = "auth.AuthorizationPoliciesAnalyzer",
    .description = "Checks the validity of authorization policies",
    .inputs = {WF_KIND_AUTHORIZATIONPOLICY, WF_KIND_NAMESPACE, WF_KIND_POD, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0127, WF_MSG_COUNT},
    .default_on = true,
    .run = run_authorization_policies,
};

/* ---- BlockedCIDRsAnalyzer ---- */

static bool has_blocked_cidrs_env(const wf_pod_spec *ps)
{
    for (size_t i = 0; i < ps->ncontainers; i++) {
        const wf_node *env = wf_map_get(ps->containers[i].node, "env");
        for (size_t j = 0; j < wf_seq_len(env); j++) {
            const wf_node *e = wf_seq_at(env, j);
            const char *name = wf_map_str(e, "name"), *value = wf_map_str(e, "value");
            if (name && strcmp(name, "BLOCKED_CIDRS_IN_JWKS_URIS") == 0 && value && value[0])
                return true;
        }
    }
    return false;
}

/* formatRANames: up to five names joined by ", ", then ", and N more". */
static const char *format_ra_names(wf_analysis_ctx *ctx, const wf_resource *const *ras, size_t n)
{
    wf_strbuf b = WF_STRBUF_INIT;
    size_t shown = n <= 5 ? n : 5;
    for (size_t i = 0; i < shown; i++) {
        if (i)
            wf_strbuf_puts(&b, ", ");
        wf_strbuf_puts(&b, wf_full_name(ctx, ras[i]));
    }
    if (n > shown)
        wf_strbuf_printf(&b, ", and %zu more", n - shown);
    const char *s =
        wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(wf_ctx_arena(ctx), wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return s ? s : "";
}

static void run_blocked_cidrs(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t nra, nd;
    const wf_resource *const *ras = wf_store_kind(s, WF_KIND_REQUESTAUTHENTICATION, &nra);
    if (nra == 0)
        return;
    const wf_resource *const *deps = wf_store_kind(s, WF_KIND_DEPLOYMENT, &nd);
    const char *names = NULL, *count = NULL;
    for (size_t i = 0; i < nd; i++) {
        const char *app = wf_kvs_get(&deps[i]->labels, "app");
        if (!app || strcmp(app, "istiod") != 0 || !deps[i]->t.workload)
            continue;
        if (has_blocked_cidrs_env(&deps[i]->t.workload->spec))
            continue;
        if (!names) {
            names = format_ra_names(ctx, ras, nra);
            count = wf_arena_printf(wf_ctx_arena(ctx), "%zu", nra);
            if (!count)
                return;
        }
        WF_REPORT(ctx, WF_IST0175, deps[i], NULL, count, names);
    }
}

const wf_analyzer wf_an_authn_BlockedCIDRsAnalyzer = {
    .name = "authn.BlockedCIDRsAnalyzer",
    .description = "Checks that BLOCKED_CIDRS_IN_JWKS_URIS is configured on istiod when "
                   "RequestAuthentication resources exist",
    .inputs = {WF_KIND_REQUESTAUTHENTICATION, WF_KIND_DEPLOYMENT, WF_KIND_OTHER},
    .codes = {WF_IST0175, WF_MSG_COUNT},
    .default_on = true,
    .run = run_blocked_cidrs,
};
