/*
 * an_destinationrule.c - DestinationRule analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers/destinationrule:
 * - subset.go (PodNotSelectedAnalyzer, "destinationrule.SubsetSelectPodAnalyzer"):
 *   IST0174 when the DR host resolves to no Service or ServiceEntry (util.GetDestinationHost
 *   over util.InitServiceEntryHostMap), IST0173 for each subset whose selector (the
 *   ServiceEntry's workloadSelector labels merged with the subset labels) matches no pod in
 *   any namespace. Pod labels are augmented with the non-empty topology labels (region,
 *   zone, subzone) of the pod's Node and with kubernetes.io/hostname, as the service registry
 *   does. Pods the store synthesizes from workload controllers count.
 * - ca-certificates.go (CaCertificateAnalyzer): IST0128/IST0129 for TLS mode SIMPLE or
 *   MUTUAL without caCertificates, at the top level and per port; a credentialName only
 *   counts when the DR has a workloadSelector.
 */
#include <stdint.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"

/* ---- the ServiceEntry host map (util.InitServiceEntryHostMap) ---- */

/* One "<scope>/<fqdn>" key. A later insert of the same key replaces the value, as a Go map
 * assignment does. Services carry no workload selector. */
typedef struct hm_entry {
    const char *key;   /* "<scope>/<fqdn>" */
    const char *scope; /* part before the first '/' */
    const char *fqdn;  /* part after it */
    const wf_kvs *wsel;
} hm_entry;

typedef struct hostmap {
    wf_arena *arena;
    hm_entry *v;
    size_t n, cap;
    size_t *slots; /* open addressing: index+1 into v, 0 = empty */
    size_t nslots;
    bool oom;
} hostmap;

static uint64_t hm_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t *hm_slot(const hostmap *m, const char *key)
{
    if (!m->nslots)
        return NULL;
    size_t i = (size_t)hm_hash(key) & (m->nslots - 1);
    while (m->slots[i] && strcmp(m->v[m->slots[i] - 1].key, key) != 0)
        i = (i + 1) & (m->nslots - 1);
    return &m->slots[i];
}

static bool hm_grow(hostmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    hm_entry *v = wf_arena_alloc(m->arena, cap * sizeof(*v));
    size_t *slots = wf_arena_alloc(m->arena, cap * 2 * sizeof(*slots));
    if (!v || !slots)
        return false;
    if (m->n)
        memcpy(v, m->v, m->n * sizeof(*v));
    m->v = v;
    m->cap = cap;
    m->slots = slots;
    m->nslots = cap * 2;
    for (size_t i = 0; i < m->n; i++)
        *hm_slot(m, v[i].key) = i + 1;
    return true;
}

/* ConvertHostToFQDN: a host that neither starts with '*' nor contains a dot gets
 * ".<ns>.svc.<domain>". */
static const char *to_fqdn(wf_analysis_ctx *ctx, const char *ns, const char *host)
{
    if (host[0] == '*' || strchr(host, '.'))
        return host;
    return wf_arena_printf(wf_ctx_arena(ctx), "%s.%s.svc.%s", host, ns,
                           wf_store_domain_suffix(wf_ctx_store(ctx)));
}

static void hm_put(wf_analysis_ctx *ctx, hostmap *m, const char *scope, const char *ns,
                   const char *host, const wf_kvs *wsel)
{
    const char *fqdn = to_fqdn(ctx, ns, host);
    const char *key = fqdn ? wf_arena_printf(m->arena, "%s/%s", scope, fqdn) : NULL;
    if (!key || (m->n == m->cap && !hm_grow(m))) {
        m->oom = true;
        return;
    }
    size_t *slot = hm_slot(m, key);
    if (*slot) {
        m->v[*slot - 1].wsel = wsel;
        return;
    }
    m->v[m->n] = (hm_entry){key, scope, fqdn, wsel};
    *slot = ++m->n;
}

static const hm_entry *hm_get(wf_analysis_ctx *ctx, const hostmap *m, const char *scope,
                              const char *ns, const char *host)
{
    const char *fqdn = to_fqdn(ctx, ns, host);
    const char *key = fqdn ? wf_arena_printf(wf_ctx_arena(ctx), "%s/%s", scope, fqdn) : NULL;
    size_t *slot = key ? hm_slot(m, key) : NULL;
    return slot && *slot ? &m->v[*slot - 1] : NULL;
}

static void hm_add_serviceentry(wf_analysis_ctx *ctx, hostmap *m, const wf_resource *r)
{
    const wf_serviceentry *se = r->t.se;
    const wf_kvs *wsel = se->has_workload_selector ? &se->workload_selector : NULL;
    bool all = se->export_to.n == 0;
    for (size_t h = 0; h < se->hosts.n; h++) {
        const char *host = se->hosts.v[h] ? se->hosts.v[h] : "";
        if (all) {
            hm_put(ctx, m, "*", r->ns, host, wsel);
            continue;
        }
        for (size_t e = 0; e < se->export_to.n; e++) {
            const char *x = se->export_to.v[e] ? se->export_to.v[e] : "";
            if (strcmp(x, "*") == 0) {
                hm_put(ctx, m, "*", r->ns, host, wsel);
                all = true; /* later hosts go to "*" only, as upstream */
                break;
            }
            hm_put(ctx, m, strcmp(x, ".") == 0 ? r->ns : x, r->ns, host, wsel);
        }
    }
}

/* A Service is visible in the namespaces named by its networking.istio.io/exportTo
 * annotation (comma-separated, "." = its own namespace), everywhere when there is none. */
static void hm_add_service(wf_analysis_ctx *ctx, hostmap *m, const wf_resource *r)
{
    const char *anno = wf_kvs_get(&r->annotations, "networking.istio.io/exportTo");
    if (!anno || !anno[0]) {
        hm_put(ctx, m, "*", r->ns, r->name, NULL);
        return;
    }
    for (const char *p = anno;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *scope = wf_arena_strndup(m->arena, p, len);
        if (!scope) {
            m->oom = true;
            return;
        }
        hm_put(ctx, m, strcmp(scope, ".") == 0 ? r->ns : scope, r->ns, r->name, NULL);
        if (!comma)
            break;
        p = comma + 1;
    }
}

static void hm_build(wf_analysis_ctx *ctx, hostmap *m)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t n;
    const wf_resource *const *ses = wf_store_kind(s, WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n && !m->oom; i++)
        if (ses[i]->t.se)
            hm_add_serviceentry(ctx, m, ses[i]);
    const wf_resource *const *svcs = wf_store_kind(s, WF_KIND_SERVICE, &n);
    for (size_t i = 0; i < n && !m->oom; i++)
        hm_add_service(ctx, m, svcs[i]);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return lx <= ls && memcmp(s + ls - lx, suffix, lx) == 0;
}

/* util.GetDestinationHost: exact "*" scope, then the DR's exportTo scopes (its own
 * namespace when empty), then wildcard ServiceEntry hosts visible from the namespace.
 * Returns NULL when nothing matches. */
static const hm_entry *destination_host(wf_analysis_ctx *ctx, const hostmap *m, const char *ns,
                                        const wf_strs *export_to, const char *host)
{
    const hm_entry *e = hm_get(ctx, m, "*", ns, host);
    if (e)
        return e;
    if (export_to->n == 0 && (e = hm_get(ctx, m, ns, ns, host)))
        return e;
    for (size_t i = 0; i < export_to->n; i++) {
        const char *x = export_to->v[i] ? export_to->v[i] : "";
        if ((e = hm_get(ctx, m, strcmp(x, ".") == 0 ? ns : x, ns, host)))
            return e;
    }
    const char *bare = host[0] == '*' ? host + 1 : host;
    for (size_t i = 0; i < m->n; i++) {
        const hm_entry *c = &m->v[i];
        if (c->fqdn[0] != '*')
            continue;
        if (strcmp(c->scope, "*") != 0 && strcmp(c->scope, ns) != 0)
            continue;
        if (has_suffix(bare, c->fqdn + 1))
            return c;
    }
    return NULL;
}

/* ---- SubsetSelectPodAnalyzer ---- */

typedef struct subset_matcher {
    const wf_resource *dr;
    const char *name;
    const wf_kvs *wsel;   /* ServiceEntry workloadSelector labels, or NULL */
    const wf_kvs *labels; /* subset labels (override wsel on the same key) */
    bool matched;
} subset_matcher;

typedef struct pod_view {
    const wf_kvs *labels;
    const char *node_name; /* set only when the Node exists */
    const wf_kvs *node_labels;
} pod_view;

#define LABEL_REGION   "topology.kubernetes.io/region"
#define LABEL_ZONE     "topology.kubernetes.io/zone"
#define LABEL_SUBZONE  "topology.istio.io/subzone"
#define LABEL_HOSTNAME "kubernetes.io/hostname"

/* Value of a pod label after node topology augmentation; NULL when absent. */
static const char *pod_label(const pod_view *p, const char *key)
{
    if (p->node_name) {
        if (strcmp(key, LABEL_HOSTNAME) == 0)
            return p->node_name;
        if (strcmp(key, LABEL_REGION) == 0 || strcmp(key, LABEL_ZONE) == 0 ||
            strcmp(key, LABEL_SUBZONE) == 0) {
            const char *v = wf_kvs_get(p->node_labels, key);
            if (v && v[0]) /* empty locality labels are not added (upstream test) */
                return v;
        }
    }
    return wf_kvs_get(p->labels, key);
}

static bool kv_matches(const pod_view *p, const wf_kv *kv)
{
    const char *v = pod_label(p, kv->key);
    return v && strcmp(v, kv->value ? kv->value : "") == 0;
}

static bool matcher_matches(const subset_matcher *m, const pod_view *p)
{
    for (size_t i = 0; i < m->labels->n; i++)
        if (!kv_matches(p, &m->labels->items[i]))
            return false;
    for (size_t i = 0; m->wsel && i < m->wsel->n; i++) {
        const wf_kv *kv = &m->wsel->items[i];
        if (!wf_kvs_get(m->labels, kv->key) && !kv_matches(p, kv))
            return false;
    }
    return true;
}

static bool later_subset_named(const wf_destinationrule *dr, size_t i)
{
    const char *name = dr->subsets[i].name ? dr->subsets[i].name : "";
    for (size_t j = i + 1; j < dr->nsubsets; j++)
        if (strcmp(dr->subsets[j].name ? dr->subsets[j].name : "", name) == 0)
            return true;
    return false;
}

/* Matchers for every DR whose host resolves; reports IST0174 for the others. Subsets are
 * keyed by name upstream, so of several with one name only the last one counts. */
static subset_matcher *collect_matchers(wf_analysis_ctx *ctx, const hostmap *m, size_t *count)
{
    size_t n, total = 0;
    const wf_resource *const *drs = wf_store_kind(wf_ctx_store(ctx), WF_KIND_DESTINATIONRULE, &n);
    for (size_t i = 0; i < n; i++)
        total += drs[i]->t.dr ? drs[i]->t.dr->nsubsets : 0;
    subset_matcher *out = wf_arena_alloc(wf_ctx_arena(ctx), (total + 1) * sizeof(*out));
    *count = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const wf_destinationrule *dr = drs[i]->t.dr;
        if (!dr)
            continue;
        const char *host = dr->host ? dr->host : "";
        const hm_entry *se = destination_host(ctx, m, drs[i]->ns, &dr->export_to, host);
        if (!se) {
            WF_REPORT(ctx, WF_IST0174, drs[i], NULL, host);
            continue;
        }
        for (size_t k = 0; k < dr->nsubsets; k++) {
            if (later_subset_named(dr, k))
                continue;
            const wf_subset *sub = &dr->subsets[k];
            out[(*count)++] =
                (subset_matcher){drs[i], sub->name ? sub->name : "", se->wsel, &sub->labels, false};
        }
    }
    return out;
}

static pod_view make_pod_view(const wf_store *s, const wf_resource *pod)
{
    pod_view v = {&pod->labels, NULL, NULL};
    const char *node = pod->t.pod ? pod->t.pod->spec.node_name : NULL;
    if (!node || !node[0])
        return v;
    const wf_resource *nr = wf_store_find(s, WF_KIND_NODE, "", node);
    if (nr) {
        v.node_name = node;
        v.node_labels = &nr->labels;
    }
    return v;
}

static void run_subset_select_pod(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    hostmap m = {.arena = wf_ctx_arena(ctx)};
    hm_build(ctx, &m);
    if (m.oom)
        return;
    size_t nm;
    subset_matcher *ms = collect_matchers(ctx, &m, &nm);
    if (!ms || nm == 0)
        return;
    size_t np, unmatched = nm;
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &np);
    for (size_t i = 0; i < np && unmatched; i++) {
        pod_view pv = make_pod_view(s, pods[i]);
        for (size_t k = 0; k < nm; k++) {
            if (!ms[k].matched && matcher_matches(&ms[k], &pv)) {
                ms[k].matched = true;
                unmatched--;
            }
        }
    }
    for (size_t k = 0; k < nm; k++)
        if (!ms[k].matched)
            WF_REPORT(ctx, WF_IST0173, ms[k].dr, NULL, ms[k].name);
}

const wf_analyzer wf_an_destinationrule_SubsetSelectPodAnalyzer = {
    .name = "destinationrule.SubsetSelectPodAnalyzer",
    .description = "Checks if pods are selected by subsets in destination rules.",
    .inputs = {WF_KIND_DESTINATIONRULE, WF_KIND_POD, WF_KIND_SERVICE, WF_KIND_SERVICEENTRY,
               WF_KIND_NODE, WF_KIND_OTHER},
    .codes = {WF_IST0173, WF_IST0174, WF_MSG_COUNT},
    .default_on = true,
    .run = run_subset_select_pod,
};

/* ---- CaCertificateAnalyzer ---- */

/* ClientTLSSettings mode name for SIMPLE (1) or MUTUAL (2), by name or enum number; NULL
 * for any other mode. */
static const char *simple_or_mutual(const wf_node *tls)
{
    const wf_node *mode = wf_map_get(tls, "mode");
    const char *s = wf_node_str(mode);
    int64_t num;
    if (!s)
        return NULL;
    if (strcmp(s, "SIMPLE") == 0 || (wf_node_int(mode, &num) && num == 1))
        return "SIMPLE";
    if (strcmp(s, "MUTUAL") == 0 || (wf_node_int(mode, &num) && num == 2))
        return "MUTUAL";
    return NULL;
}

static bool has_text(const wf_node *n, const char *key)
{
    const char *s = wf_map_str(n, key);
    return s && s[0];
}

/* Does this tls block leave the server certificate unverified? */
static bool missing_ca(const wf_resource *r, const wf_node *tls)
{
    if (has_text(tls, "caCertificates"))
        return false;
    const wf_node *ws = wf_map_get(r->spec, "workloadSelector");
    bool has_ws = ws && ws->type != WF_NODE_NULL;
    return !(has_text(tls, "credentialName") && has_ws);
}

/* PortSelector's proto text form, as p.GetPort().String() prints it. */
static const char *port_text(wf_analysis_ctx *ctx, const wf_node *port)
{
    int64_t num;
    if (!port || port->type == WF_NODE_NULL)
        return "<nil>";
    if (!wf_node_int(wf_map_get(port, "number"), &num) || num == 0)
        return "";
    return wf_arena_printf(wf_ctx_arena(ctx), "number:%lld", (long long)num);
}

static void analyze_ca(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const char *name = wf_full_name(ctx, r);
    const char *host = wf_map_str(r->spec, "host");
    const wf_node *tp = wf_map_get(r->spec, "trafficPolicy");
    const wf_node *tls = wf_map_get(tp, "tls");
    const char *mode = simple_or_mutual(tls);
    if (!name)
        return;
    if (!host)
        host = "";
    if (mode && missing_ca(r, tls))
        WF_REPORT(ctx, WF_IST0128, r, wf_map_get(tls, "caCertificates"), name, r->ns, mode, host);
    const wf_node *pls = wf_map_get(tp, "portLevelSettings");
    for (size_t i = 0; i < wf_seq_len(pls); i++) {
        const wf_node *p = wf_seq_at(pls, i);
        const wf_node *ptls = wf_map_get(p, "tls");
        mode = simple_or_mutual(ptls);
        if (!mode || !missing_ca(r, ptls))
            continue;
        const char *port = port_text(ctx, wf_map_get(p, "port"));
        if (port)
            WF_REPORT(ctx, WF_IST0129, r, wf_map_get(ptls, "caCertificates"), name, r->ns, mode,
                      host, port);
    }
}

static void run_ca_certificate(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *drs = wf_store_kind(wf_ctx_store(ctx), WF_KIND_DESTINATIONRULE, &n);
    for (size_t i = 0; i < n; i++)
        analyze_ca(ctx, drs[i]);
}

const wf_analyzer wf_an_destinationrule_CaCertificateAnalyzer = {
    .name = "destinationrule.CaCertificateAnalyzer",
    .description = "Checks if caCertificates is set when TLS mode is SIMPLE/MUTUAL",
    .inputs = {WF_KIND_DESTINATIONRULE, WF_KIND_OTHER},
    .codes = {WF_IST0128, WF_IST0129, WF_MSG_COUNT},
    .default_on = true,
    .run = run_ca_certificate,
};
