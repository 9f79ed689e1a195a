/*
 * istio_stats.c - Istio's standard metrics: label values, the per-worker series tables and
 * their registration in the stats store, istio_build (see istio_stats.h).
 */
#include "proxy/filters/http/istio_stats.h"

#include <stdlib.h>
#include <string.h>

#include "proxy/http/filter.h"

/* ------------------------------------------------------------------ labels */

enum {
    L_REPORTER,
    L_SRC_WORKLOAD,
    L_SRC_CANONICAL_SERVICE,
    L_SRC_CANONICAL_REVISION,
    L_SRC_WORKLOAD_NAMESPACE,
    L_SRC_PRINCIPAL,
    L_SRC_APP,
    L_SRC_VERSION,
    L_SRC_CLUSTER,
    L_DST_WORKLOAD,
    L_DST_WORKLOAD_NAMESPACE,
    L_DST_PRINCIPAL,
    L_DST_APP,
    L_DST_VERSION,
    L_DST_SERVICE,
    L_DST_CANONICAL_SERVICE,
    L_DST_CANONICAL_REVISION,
    L_DST_SERVICE_NAME,
    L_DST_SERVICE_NAMESPACE,
    L_DST_CLUSTER,
    L_REQUEST_PROTOCOL,
    L_RESPONSE_CODE,
    L_GRPC_RESPONSE_STATUS,
    L_RESPONSE_FLAGS,
    L_CONNECTION_SECURITY_POLICY,
};

const char *const wp_istio_label_names[WP_ISTIO_NLABELS] = {
    "reporter",
    "source_workload",
    "source_canonical_service",
    "source_canonical_revision",
    "source_workload_namespace",
    "source_principal",
    "source_app",
    "source_version",
    "source_cluster",
    "destination_workload",
    "destination_workload_namespace",
    "destination_principal",
    "destination_app",
    "destination_version",
    "destination_service",
    "destination_canonical_service",
    "destination_canonical_revision",
    "destination_service_name",
    "destination_service_namespace",
    "destination_cluster",
    "request_protocol",
    "response_code",
    "grpc_response_status",
    "response_flags",
    "connection_security_policy",
};

static wp_istio_str lit(const char *s)
{
    return (wp_istio_str){s, s ? strlen(s) : 0};
}

static wp_istio_str or_else(wp_istio_str v, const char *dflt)
{
    return v.len ? v : lit(dflt);
}

void wp_istio_service(const char *route_name, const wp_cluster *cl, wp_istio_str host_header,
                      bool disable_fallback, wp_istio_str *host, wp_istio_str *name)
{
    static const char *const special[] = {
        "BlackHoleCluster", "PassthroughCluster", "InboundPassthroughCluster",
        "InboundPassthroughClusterIpv4", "InboundPassthroughClusterIpv6"};
    *host = *name = (wp_istio_str){NULL, 0};
    if (!disable_fallback)
        *host = *name = host_header;
    if (route_name && strcmp(route_name, "block_all") == 0) {
        *name = lit("BlackHoleCluster");
        return;
    }
    if (route_name && strcmp(route_name, "allow_any") == 0) {
        *name = lit("PassthroughCluster");
        return;
    }
    if (!cl)
        return;
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
        if (strcmp(cl->name, special[i]) == 0) {
            *name = lit(cl->name);
            return;
        }
    }
    if (!cl->istio_services)
        return;
    if (cl->istio_svc_host)
        *host = lit(cl->istio_svc_host);
    if (cl->istio_svc_name) {
        *name = lit(cl->istio_svc_name);
    } else {
        const char *dot = host->len ? memchr(host->p, '.', host->len) : NULL;
        *name = (wp_istio_str){host->p, dot ? (size_t)(dot - host->p) : host->len};
    }
}

/* The labels that describe the peer (the other end), with Istio's defaults. */
static void peer_labels(const wp_istio_workload *p, wp_istio_str ns, wp_istio_str *workload,
                        wp_istio_str *canon, wp_istio_str *rev, wp_istio_str *nsout,
                        wp_istio_str *app, wp_istio_str *version, wp_istio_str *cluster)
{
    static const wp_istio_workload none;
    if (!p)
        p = &none;
    *workload = or_else(p->f[WP_WL_WORKLOAD], "unknown");
    *canon = or_else(p->f[WP_WL_CANONICAL_NAME], "unknown");
    *rev = or_else(p->f[WP_WL_CANONICAL_REVISION], "latest");
    *nsout = or_else(ns, "unknown");
    *app = or_else(p->f[WP_WL_APP], "unknown");
    *version = or_else(p->f[WP_WL_VERSION], "unknown");
    *cluster = or_else(p->f[WP_WL_CLUSTER], "unknown");
}

/* The labels that describe this proxy's workload: node metadata as is (istio_stats.cc). */
static void local_labels(const wp_istio_workload *w, wp_istio_str *workload, wp_istio_str *canon,
                         wp_istio_str *rev, wp_istio_str *ns, wp_istio_str *app,
                         wp_istio_str *version, wp_istio_str *cluster)
{
    *workload = w->f[WP_WL_WORKLOAD];
    *canon = w->f[WP_WL_CANONICAL_NAME];
    *rev = w->f[WP_WL_CANONICAL_REVISION];
    *ns = w->f[WP_WL_NAMESPACE];
    *app = w->f[WP_WL_APP];
    *version = w->f[WP_WL_VERSION];
    *cluster = w->f[WP_WL_CLUSTER];
}

/* The namespace in a SPIFFE principal "<domain>/ns/<ns>/sa/<sa>" (istio_stats.cc
 * getNamespace); empty when it has none. */
static wp_istio_str san_namespace(wp_istio_str san)
{
    static const char key[] = "/ns/";
    for (size_t i = 0; san.len >= sizeof key - 1 && i <= san.len - (sizeof key - 1); i++) {
        if (memcmp(san.p + i, key, sizeof key - 1) != 0)
            continue;
        const char *b = san.p + i + sizeof key - 1, *e = san.p + san.len;
        const char *slash = memchr(b, '/', (size_t)(e - b));
        return (wp_istio_str){b, (size_t)((slash ? slash : e) - b)};
    }
    return (wp_istio_str){NULL, 0};
}

/* The peer's namespace: from the peer SAN when it has one, else the peer metadata's. */
static wp_istio_str peer_namespace(const wp_istio_workload *peer, wp_istio_str peer_san)
{
    wp_istio_str ns = peer_san.len ? san_namespace(peer_san) : (wp_istio_str){NULL, 0};
    if (!ns.len && peer)
        ns = peer->f[WP_WL_NAMESPACE];
    return ns;
}

static void destination_side(const wp_istio_stats_filter *f, const wp_istio_workload *peer,
                             const wp_istio_sans *sans, wp_istio_str host, wp_istio_str name,
                             wp_istio_str *v)
{
    const wp_istio_workload *l = &f->local->w;
    wp_istio_str pns = peer_namespace(peer, sans->peer_san);
    peer_labels(peer, pns, &v[L_SRC_WORKLOAD], &v[L_SRC_CANONICAL_SERVICE],
                &v[L_SRC_CANONICAL_REVISION], &v[L_SRC_WORKLOAD_NAMESPACE], &v[L_SRC_APP],
                &v[L_SRC_VERSION], &v[L_SRC_CLUSTER]);
    v[L_SRC_PRINCIPAL] = or_else(sans->peer_san, "unknown");
    local_labels(l, &v[L_DST_WORKLOAD], &v[L_DST_CANONICAL_SERVICE], &v[L_DST_CANONICAL_REVISION],
                 &v[L_DST_WORKLOAD_NAMESPACE], &v[L_DST_APP], &v[L_DST_VERSION], &v[L_DST_CLUSTER]);
    v[L_DST_PRINCIPAL] = or_else(sans->local_san, "unknown");
    v[L_DST_SERVICE] = host.len ? host : l->f[WP_WL_CANONICAL_NAME];
    v[L_DST_SERVICE_NAME] = name.len ? name : l->f[WP_WL_CANONICAL_NAME];
    v[L_DST_SERVICE_NAMESPACE] = l->f[WP_WL_NAMESPACE];
    /* mutual_tls: the downstream connection has both a peer and a local URI SAN */
    v[L_CONNECTION_SECURITY_POLICY] =
        lit(sans->peer_san.len && sans->local_san.len ? "mutual_tls" : "none");
}

static void source_side(const wp_istio_stats_filter *f, const wp_istio_workload *peer,
                        const wp_istio_sans *sans, wp_istio_str host, wp_istio_str name,
                        wp_istio_str *v)
{
    const wp_istio_workload *l = &f->local->w;
    wp_istio_str pns = peer_namespace(peer, sans->peer_san);
    local_labels(l, &v[L_SRC_WORKLOAD], &v[L_SRC_CANONICAL_SERVICE], &v[L_SRC_CANONICAL_REVISION],
                 &v[L_SRC_WORKLOAD_NAMESPACE], &v[L_SRC_APP], &v[L_SRC_VERSION], &v[L_SRC_CLUSTER]);
    v[L_SRC_PRINCIPAL] = or_else(sans->local_san, "unknown"); /* the upstream connection's */
    peer_labels(peer, pns, &v[L_DST_WORKLOAD], &v[L_DST_CANONICAL_SERVICE],
                &v[L_DST_CANONICAL_REVISION], &v[L_DST_WORKLOAD_NAMESPACE], &v[L_DST_APP],
                &v[L_DST_VERSION], &v[L_DST_CLUSTER]);
    v[L_DST_PRINCIPAL] = or_else(sans->peer_san, "unknown");
    v[L_DST_SERVICE] = or_else(host, "unknown");
    v[L_DST_SERVICE_NAME] = or_else(name, "unknown");
    v[L_DST_SERVICE_NAMESPACE] = or_else(pns, "unknown");
    v[L_CONNECTION_SECURITY_POLICY] = lit("unknown"); /* always at the source */
}

wp_istio_str wp_istio_first_san(const char *joined)
{
    if (!joined)
        return (wp_istio_str){NULL, 0};
    return (wp_istio_str){joined, strcspn(joined, ",")};
}

void wp_istio_labels_build(const wp_istio_stats_filter *f, const wp_istio_workload *peer,
                           const wp_istio_sans *sans, wp_istio_str svc_host, wp_istio_str svc_name,
                           const char *code, const char *flags, wp_istio_labels *out)
{
    static const wp_istio_sans no_sans;
    wp_istio_str *v = out->v;
    if (!sans)
        sans = &no_sans;
    memset(out, 0, sizeof *out);
    bool dst = f->reporter == WP_ISTIO_REPORTER_DESTINATION;
    v[L_REPORTER] = lit(dst ? "destination" : "source");
    if (dst)
        destination_side(f, peer, sans, svc_host, svc_name, v);
    else
        source_side(f, peer, sans, svc_host, svc_name, v);
    v[L_REQUEST_PROTOCOL] = lit("http");
    v[L_RESPONSE_CODE] = lit(code);
    v[L_GRPC_RESPONSE_STATUS] = lit("");
    v[L_RESPONSE_FLAGS] = lit(flags);
}

void wp_istio_labels_grpc(wp_istio_labels *l, const char *grpc_status)
{
    l->v[L_REQUEST_PROTOCOL] = lit("grpc");
    l->v[L_GRPC_RESPONSE_STATUS] = lit(grpc_status);
}

void wp_istio_labels_tcp(wp_istio_labels *l)
{
    l->tcp = true;
    l->v[L_REQUEST_PROTOCOL] = lit("tcp");
    l->v[L_RESPONSE_CODE] = l->v[L_GRPC_RESPONSE_STATUS] = (wp_istio_str){NULL, 0};
}

void wp_istio_labels_messages(wp_istio_labels *l)
{
    l->messages = true;
}

/* Whether label i is one of l's (the TCP metrics have two fewer, the message counters stop at
 * destination_cluster). */
static bool has_label(const wp_istio_labels *l, int i)
{
    if (l->messages)
        return i <= L_DST_CLUSTER;
    return !l->tcp || (i != L_RESPONSE_CODE && i != L_GRPC_RESPONSE_STATUS);
}

void wp_istio_stats_suffix(const wp_istio_labels *l, wf_strbuf *out)
{
    for (int i = 0; i < WP_ISTIO_NLABELS; i++) {
        if (!has_label(l, i))
            continue;
        const char *n = wp_istio_label_names[i];
        wf_strbuf_putc(out, '.');
        wf_strbuf_append(out, n, strlen(n));
        if (!l->v[i].len)
            continue; /* Envoy's joiner: an empty StatName adds no segment */
        wf_strbuf_putc(out, '.');
        wf_strbuf_append(out, l->v[i].p, l->v[i].len);
    }
}

void wp_istio_prom_labels(const wp_istio_labels *l, wf_strbuf *out)
{
    bool first = true;
    for (int i = 0; i < WP_ISTIO_NLABELS; i++) {
        if (!has_label(l, i))
            continue;
        if (!first)
            wf_strbuf_putc(out, ',');
        first = false;
        wf_strbuf_puts(out, wp_istio_label_names[i]);
        wf_strbuf_append(out, "=\"", 2);
        for (size_t k = 0; k < l->v[i].len; k++) {
            char c = l->v[i].p[k];
            if (c == '\\')
                wf_strbuf_append(out, "\\\\", 2);
            else if (c == '"')
                wf_strbuf_append(out, "\\\"", 2);
            else if (c == '\n')
                wf_strbuf_append(out, "\\n", 2);
            else
                wf_strbuf_putc(out, c);
        }
        wf_strbuf_putc(out, '"');
    }
}

/* ------------------------------------------------------------------ series table */

uint64_t wp_istio_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

wp_istio_series *wp_istio_table_find(const wp_istio_table *t, const char *key, size_t len,
                                     uint64_t hash)
{
    if (!t->cap)
        return NULL;
    for (size_t i = hash & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        wp_istio_series *e = &t->v[i];
        if (!e->key)
            return NULL;
        if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
            return e;
    }
}

static wp_istio_series *place(wp_istio_series *v, size_t cap, uint64_t hash)
{
    size_t i = hash & (cap - 1);
    while (v[i].key)
        i = (i + 1) & (cap - 1);
    return &v[i];
}

static int grow(wp_istio_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    wp_istio_series *v = calloc(cap, sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->v[i].key)
            *place(v, cap, t->v[i].hash) = t->v[i];
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
    return 0;
}

wp_istio_series *wp_istio_table_insert(wp_istio_table *t, const char *key, size_t len,
                                       uint64_t hash)
{
    if ((t->n + 1) * 4 > t->cap * 3 && grow(t) != 0)
        return NULL;
    char *k = malloc(len + 1);
    if (!k)
        return NULL;
    memcpy(k, key, len);
    k[len] = '\0';
    wp_istio_series *e = place(t->v, t->cap, hash);
    *e = (wp_istio_series){
        k, len, hash, {WP_STAT_INVALID, WP_STAT_INVALID, WP_STAT_INVALID, WP_STAT_INVALID}};
    t->n++;
    return e;
}

void wp_istio_table_free(wp_istio_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->v[i].key);
    free(t->v);
    *t = (wp_istio_table){0};
}

/* ------------------------------------------------------------------ runtime */

typedef struct {
    wp_istio_table table;
    wf_strbuf key;          /* the current stream's /stats suffix */
    wf_strbuf name, labels; /* registration scratch */
} wp_istio_shard;

struct wp_istio_rt {
    wp_stats *store;
    unsigned nworkers;
    wp_istio_shard *shards;
};

static const char *const METRICS[WP_ISTIO_NM] = {"istio_requests_total",
                                                 "istio_request_duration_milliseconds",
                                                 "istio_request_bytes", "istio_response_bytes"};

wp_istio_rt *wp_istio_rt_new(wp_stats *store, unsigned nworkers)
{
    wp_istio_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NULL;
    rt->shards = calloc(nworkers ? nworkers : 1, sizeof *rt->shards);
    if (!rt->shards) {
        free(rt);
        return NULL;
    }
    rt->store = store;
    rt->nworkers = nworkers;
    return rt;
}

void wp_istio_rt_free(wp_istio_rt *rt)
{
    if (!rt)
        return;
    for (unsigned i = 0; i < rt->nworkers; i++) {
        wp_istio_table_free(&rt->shards[i].table);
        wf_strbuf_free(&rt->shards[i].key);
        wf_strbuf_free(&rt->shards[i].name);
        wf_strbuf_free(&rt->shards[i].labels);
    }
    free(rt->shards);
    free(rt);
}

static const char *const TCP_METRICS[WP_ISTIO_NM] = {
    "istio_tcp_connections_opened_total", "istio_tcp_connections_closed_total",
    "istio_tcp_sent_bytes_total", "istio_tcp_received_bytes_total"};

static const char *const MSG_METRICS[WP_ISTIO_NM] = {"istio_request_messages_total",
                                                     "istio_response_messages_total", NULL, NULL};

/* The slow path: a label tuple this worker has not seen. Registers the names (the four HTTP
 * metrics, the four TCP counters for TCP labels, the two message counters for message labels:
 * their suffixes differ, so one table holds all). */
static wp_istio_series *new_series(wp_istio_rt *rt, wp_istio_shard *sh, const wp_istio_labels *l,
                                   uint64_t hash)
{
    const char *const *names = l->messages ? MSG_METRICS : l->tcp ? TCP_METRICS : METRICS;
    wp_istio_series *e = wp_istio_table_insert(&sh->table, sh->key.data, sh->key.len, hash);
    if (!e)
        return NULL;
    wf_strbuf_reset(&sh->labels);
    wp_istio_prom_labels(l, &sh->labels);
    for (int m = 0; m < WP_ISTIO_NM && names[m] && !wf_strbuf_failed(&sh->labels); m++) {
        wf_strbuf_reset(&sh->name);
        wf_strbuf_printf(&sh->name, WP_ISTIO_NAMESPACE ".%s%s", names[m], e->key);
        if (wf_strbuf_failed(&sh->name))
            break;
        const char *lab = wf_strbuf_cstr(&sh->labels);
        e->id[m] = m == WP_ISTIO_REQUESTS || l->tcp || l->messages
                       ? wp_stats_counter_ns(rt->store, sh->name.data, names[m], lab)
                       : wp_stats_histogram_ns(rt->store, sh->name.data, names[m], lab);
    }
    if (wf_strbuf_failed(&sh->name) || wf_strbuf_failed(&sh->labels)) {
        wf_strbuf_free(&sh->name); /* failed buffers stay failed: start over next time */
        wf_strbuf_free(&sh->labels);
    }
    return e;
}

/* The series of l on worker's table (registered on first sight), NULL when out of memory. */
static wp_istio_series *series_of(wp_istio_rt *rt, unsigned worker, const wp_istio_labels *l)
{
    if (!rt || worker >= rt->nworkers)
        return NULL;
    wp_istio_shard *sh = &rt->shards[worker];
    wf_strbuf_reset(&sh->key);
    wp_istio_stats_suffix(l, &sh->key);
    if (wf_strbuf_failed(&sh->key)) {
        wf_strbuf_free(&sh->key); /* a failed buffer stays failed: start over next time */
        return NULL;
    }
    uint64_t hash = wp_istio_hash(sh->key.data, sh->key.len);
    wp_istio_series *e = wp_istio_table_find(&sh->table, sh->key.data, sh->key.len, hash);
    return e ? e : new_series(rt, sh, l, hash);
}

int wp_istio_record_tcp(wp_istio_rt *rt, unsigned worker, wp_stats_shard *stats,
                        const wp_istio_labels *l, uint64_t opened, uint64_t closed, uint64_t sent,
                        uint64_t received)
{
    wp_istio_series *e = l->tcp ? series_of(rt, worker, l) : NULL;
    if (!e)
        return -1;
    const uint64_t v[WP_ISTIO_NM] = {opened, closed, sent, received};
    for (int m = 0; m < WP_ISTIO_NM; m++)
        if (v[m])
            wp_stat_add(stats, e->id[m], (int64_t)v[m]);
    return 0;
}

int wp_istio_record_messages(wp_istio_rt *rt, unsigned worker, wp_stats_shard *stats,
                             const wp_istio_labels *l, uint64_t requests, uint64_t responses)
{
    wp_istio_series *e = l->messages ? series_of(rt, worker, l) : NULL;
    if (!e)
        return -1;
    wp_stat_add(stats, e->id[0], (int64_t)requests);
    wp_stat_add(stats, e->id[1], (int64_t)responses);
    return 0;
}

int wp_istio_record(wp_istio_rt *rt, unsigned worker, wp_stats_shard *stats,
                    const wp_istio_labels *l, uint64_t duration_ms, uint64_t rq_bytes,
                    uint64_t resp_bytes)
{
    if (!rt || worker >= rt->nworkers)
        return -1;
    wp_istio_shard *sh = &rt->shards[worker];
    wf_strbuf_reset(&sh->key);
    wp_istio_stats_suffix(l, &sh->key);
    if (wf_strbuf_failed(&sh->key)) {
        wf_strbuf_free(&sh->key); /* a failed buffer stays failed: start over next time */
        return -1;
    }
    uint64_t hash = wp_istio_hash(sh->key.data, sh->key.len);
    wp_istio_series *e = wp_istio_table_find(&sh->table, sh->key.data, sh->key.len, hash);
    if (!e && !(e = new_series(rt, sh, l, hash)))
        return -1;
    wp_stat_add(stats, e->id[WP_ISTIO_REQUESTS], 1);
    wp_hist_record(stats, e->id[WP_ISTIO_DURATION], duration_ms);
    wp_hist_record(stats, e->id[WP_ISTIO_RQ_BYTES], rq_bytes);
    wp_hist_record(stats, e->id[WP_ISTIO_RESP_BYTES], resp_bytes);
    return 0;
}

/* ------------------------------------------------------------------ istio_build */

int wp_istio_register_build(wp_stats *store, const wp_config *c, wp_stats_shard *sh)
{
    const wp_istio_local *local = NULL;
    for (size_t i = 0; i < c->nhcms && !local; i++) {
        const wp_istio_stats_filter *f =
            wp_fchain_find(c->hcms[i]->filter_chain, WP_ISTIO_STATS_NAME);
        if (f)
            local = f->local;
    }
    for (size_t i = 0; i < c->nlisteners && !local; i++) { /* istio.stats network filters */
        const wp_listener *ls = &c->listeners[i];
        for (size_t k = 0; k <= ls->nchains && !local; k++) {
            const wp_filter_chain *fc = k < ls->nchains ? &ls->chains[k] : ls->default_chain;
            for (size_t j = 0; fc && j < fc->nfilters && !local; j++)
                if (fc->filters[j].kind == WP_NF_ISTIO_STATS)
                    local = ((const wp_istio_stats_filter *)fc->filters[j].config)->local;
        }
    }
    if (!local)
        return 0;
    const char *tag =
        local->istio_version && *local->istio_version ? local->istio_version : "unknown";
    wf_strbuf name = WF_STRBUF_INIT, labels = WF_STRBUF_INIT;
    wf_strbuf_printf(&name, WP_ISTIO_NAMESPACE ".istio_build.component.proxy.tag.%s", tag);
    wf_strbuf_puts(&labels, "component=\"proxy\",tag=\"");
    for (const char *p = tag; *p; p++) {
        if (*p == '\\' || *p == '"')
            wf_strbuf_putc(&labels, '\\');
        if (*p == '\n')
            wf_strbuf_puts(&labels, "\\n");
        else
            wf_strbuf_putc(&labels, *p);
    }
    wf_strbuf_putc(&labels, '"');
    int rc = -1;
    if (!wf_strbuf_failed(&name) && !wf_strbuf_failed(&labels)) {
        uint32_t slot = wp_stats_gauge_ns(store, name.data, "istio_build", labels.data);
        if (slot != WP_STAT_INVALID) {
            wp_stat_add(sh, slot, 1);
            rc = 0;
        }
    }
    wf_strbuf_free(&name);
    wf_strbuf_free(&labels);
    return rc;
}
