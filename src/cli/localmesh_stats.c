/*
 * localmesh_stats.c - a local-mesh proxy's stats inclusion inputs (lm_proxy_stats in
 * localmesh_internal.h; the stats_config itself is built by proxy_stats_config.h).
 *
 * Followed (Istio): pilot-agent merges the pod's proxy.istio.io/config into MeshConfig's
 * defaultConfig with golang/protobuf jsonpb, which replaces each top-level field the
 * annotation sets (unmarshalMessage: m.NewField + m.Set), so an annotation proxyStatsMatcher
 * replaces MeshConfig's whole; then pkg/bootstrap/config.go getStatsOptions prefers the
 * deprecated sidecar.istio.io/statsInclusion* annotations, list by list, over that
 * ProxyConfig. Istio does not check the patterns: Envoy refuses the bootstrap and the
 * istio-proxy container crash-loops. The local mesh checks them when it plans the pod.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/meshcfg.h"
#include "cli/localmesh_internal.h"

/* ---- reading ProxyStatsMatcher ------------------------------------------------------------ */

/* One list field (absent or null: empty) into *out. Returns 0, 1 when it is not a list of
 * scalars, -1 when out of memory. */
static int read_list(wf_lm_plan *p, const wf_node *psm, const char *field, wf_psc_list *out)
{
    const wf_node *n = wf_map_get(psm, field);
    *out = (wf_psc_list){0};
    if (!n || n->type == WF_NODE_NULL)
        return 0;
    if (n->type != WF_NODE_SEQ)
        return 1;
    const char **v = wf_arena_alloc(&p->arena, (n->len + 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n->len; i++)
        if (!(v[i] = wf_node_str(wf_seq_at(n, i))))
            return 1;
    *out = (wf_psc_list){v, n->len};
    return 0;
}

/* All three lists of a ProxyStatsMatcher node; *bad names the field that is not a list of
 * strings. Returns 0, 1 (bad) or -1. */
static int read_matcher(wf_lm_plan *p, const wf_node *psm, wf_psc_list out[WF_PSC_NKINDS],
                        const char **bad)
{
    if (psm && psm->type != WF_NODE_MAP && psm->type != WF_NODE_NULL) {
        *bad = "";
        return 1;
    }
    for (int k = 0; k < WF_PSC_NKINDS; k++) {
        int rc = read_list(p, psm, wf_psc_field[k], &out[k]);
        if (rc != 0) {
            *bad = wf_psc_field[k];
            return rc;
        }
    }
    return 0;
}

/* ---- checking ----------------------------------------------------------------------------- */

typedef struct bad_pattern {
    int kind;
    bool from_annotation;
    size_t index;
    char pattern[256];
    char why[512];
} bad_pattern;

static int check_one(int kind, bool from_annotation, size_t index, const char *pattern, void *arg)
{
    bad_pattern *b = arg;
    if (!wf_psc_check_pattern(kind, pattern, b->why, sizeof b->why))
        return 0;
    b->kind = kind;
    b->from_annotation = from_annotation;
    b->index = index;
    snprintf(b->pattern, sizeof b->pattern, "%s", pattern);
    return 1;
}

/* Check every user pattern (with a stand-in instance IP for "{pod_ip}"). Returns 0 when all
 * pass, 1 with *b filled, -1 when out of memory. */
static int check_all(const wf_psc_in *in, bad_pattern *b)
{
    static const char *const stand_in[] = {"127.10.0.2"};
    wf_psc_in copy = *in;
    copy.ips = (wf_psc_list){stand_in, 1};
    for (int k = 0; k < WF_PSC_NKINDS; k++) {
        int rc = wf_psc_visit(&copy, k, check_one, b);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- messages ----------------------------------------------------------------------------- */

static const wf_node *annotation_node(const wf_kvs *annotations, const char *key)
{
    const wf_node *at = NULL;
    for (size_t i = 0; annotations && i < annotations->n; i++)
        if (strcmp(annotations->items[i].key, key) == 0)
            at = annotations->items[i].node;
    return at;
}

/* "FILE:L:C: Kind ns/name: spec.template.metadata.annotations[KEY]: " */
static void workload_where(wf_strbuf *b, const wf_lm_plan *p, const wf_resource *r,
                           const wf_kvs *annotations, const char *key)
{
    lm_where(b, r, annotation_node(annotations, key));
    wf_strbuf_printf(b, ": %s %s/%s: spec.template.metadata.annotations[%s]: ", r->kind_name,
                     *r->ns ? r->ns : p->default_ns, r->name, key);
}

/* The message for a bad pattern; pc_from_pod tells whether ProxyConfig lists came from the
 * pod's proxy.istio.io/config (else MeshConfig). */
static void bad_message(wf_strbuf *b, const wf_lm_plan *p, const wf_resource *r,
                        const wf_kvs *annotations, bool pc_from_pod, const bad_pattern *bp)
{
    if (bp->from_annotation) {
        workload_where(b, p, r, annotations, wf_psc_annotation[bp->kind]);
        wf_strbuf_printf(b, "item %zu", bp->index);
    } else if (pc_from_pod) {
        workload_where(b, p, r, annotations, "proxy.istio.io/config");
        wf_strbuf_printf(b, "proxyStatsMatcher.%s[%zu]", wf_psc_field[bp->kind], bp->index);
    } else {
        wf_strbuf_printf(b, "%s: defaultConfig.proxyStatsMatcher.%s[%zu]",
                         p->mesh_origin ? p->mesh_origin : "MeshConfig", wf_psc_field[bp->kind],
                         bp->index);
    }
    wf_strbuf_printf(b, " \"%s\": %s", bp->pattern, bp->why);
}

/* ---- entry point -------------------------------------------------------------------------- */

static bool env_true(const lm_strv *env, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; env && i < env->n; i++)
        if (strncmp(env->v[i], key, kl) == 0 && env->v[i][kl] == '=')
            return strcmp(env->v[i] + kl + 1, "true") == 0;
    return false;
}

/* Read the ProxyConfig lists: pod's when it sets proxyStatsMatcher, else MeshConfig's, checked
 * as protobuf JSON decodes a ProxyStatsMatcher (wf_meshcfg_check_stats_matcher: no unknown
 * field, lists of strings). Returns 0, 1 (bad; *msg filled) or -1. */
static int pick_matcher(wf_lm_plan *p, const wf_node *mesh, const wf_resource *r,
                        const wf_kvs *annotations, const wf_node *pc, wf_psc_in *out,
                        bool *from_pod, wf_strbuf *msg)
{
    const wf_node *psm = wf_map_get(pc, "proxyStatsMatcher");
    *from_pod = psm && psm->type != WF_NODE_NULL;
    if (!*from_pod)
        psm = wf_node_path(mesh, "defaultConfig.proxyStatsMatcher");
    char why[512];
    uint32_t line, col;
    const char *bad = NULL;
    int rc = wf_meshcfg_check_stats_matcher(psm, "proxyStatsMatcher", why, sizeof why, &line, &col)
                 ? 1
                 : read_matcher(p, psm, out->pc, &bad);
    if (rc != 1)
        return rc;
    if (bad)
        snprintf(why, sizeof why, "proxyStatsMatcher%s%s: want a list of strings", *bad ? "." : "",
                 bad);
    if (*from_pod)
        workload_where(msg, p, r, annotations, "proxy.istio.io/config");
    else
        wf_strbuf_printf(msg, "%s: defaultConfig.", p->mesh_origin ? p->mesh_origin : "MeshConfig");
    wf_strbuf_puts(msg, why);
    return 1;
}

int lm_proxy_stats(wf_lm_plan *p, const wf_node *mesh, const wf_resource *r,
                   const wf_kvs *annotations, const wf_node *pc, const lm_strv *env, wf_psc_in *out,
                   const char **pod_error, wf_strbuf *err)
{
    *out = (wf_psc_in){0};
    *pod_error = NULL;
    for (int k = 0; k < WF_PSC_NKINDS; k++)
        out->anno[k] = wf_kvs_get(annotations, wf_psc_annotation[k]);
    out->exit_on_zero_active = env_true(env, "EXIT_ON_ZERO_ACTIVE_CONNECTIONS");
    wf_strbuf msg = WF_STRBUF_INIT;
    bool from_pod = false;
    bad_pattern bp = {0};
    int rc = pick_matcher(p, mesh, r, annotations, pc, out, &from_pod, &msg);
    if (rc == 0 && (rc = check_all(out, &bp)) == 1)
        bad_message(&msg, p, r, annotations, from_pod, &bp);
    bool pod_fault = rc == 1 && r && (from_pod || bp.from_annotation);
    if (rc == 1 && !pod_fault) /* MeshConfig is wrong: every proxy would refuse it */
        wf_strbuf_puts(err, wf_strbuf_cstr(&msg));
    if (pod_fault && !(*pod_error = wf_arena_strdup(&p->arena, wf_strbuf_cstr(&msg))))
        rc = -1;
    bool oom = wf_strbuf_failed(&msg);
    wf_strbuf_free(&msg);
    if (oom || rc < 0)
        return -1;
    return pod_fault || rc == 0 ? 0 : -1;
}
