/*
 * tcp.c - a sidecar's TCP listeners and chains: outbound per TCP service port with
 * VirtualService tcp/tls routes, inbound per TCP target port and PeerAuthentication mode (see
 * tcp.h).
 */
#include "pilot/tcp.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/node_json.h"
#include "model/protocol.h"
#include "pilot/cds.h"
#include "pilot/cds_internal.h"
#include "pilot/naming.h"
#include "pilot/rds_internal.h"

#define LISTENER_TYPE "type.googleapis.com/envoy.config.listener.v3.Listener"
#define TCP_NAME      "envoy.filters.network.tcp_proxy"
#define TCP_TYPE      "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
#define TYPED_STRUCT  "type.googleapis.com/udpa.type.v1.TypedStruct"
#define MX_NAME       "istio.metadata_exchange"
#define MX_URL        "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange"
#define STATS_URL     "type.googleapis.com/stats.PluginConfig"
#define TLSI_TYPE                                                                                  \
    "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"

bool wf_tcp_service_port(const wf_service_port *sp)
{
    if (!sp || sp->port <= 0 || sp->port > 65535)
        return false;
    wf_protocol p = wf_protocol_of_kube_port(sp->port, sp->name, sp->protocol, sp->app_protocol);
    switch (p) {
    case WF_PROTO_TCP:
    case WF_PROTO_TLS:
    case WF_PROTO_HTTPS:
    case WF_PROTO_MONGO:
    case WF_PROTO_REDIS:
    case WF_PROTO_MYSQL:
        return true;
    default:
        return false;
    }
}

static bool tls_port(const wf_service_port *sp)
{
    wf_protocol p = wf_protocol_of_kube_port(sp->port, sp->name, sp->protocol, sp->app_protocol);
    return p == WF_PROTO_TLS || p == WF_PROTO_HTTPS;
}

json_t *wf_tcp_stats_filter(bool inbound)
{
    json_t *value = inbound ? json_pack("{s:b}", "disable_host_header_fallback", 1) : json_object();
    return json_pack("{s:s,s:{s:s,s:s,s:o}}", "name", "istio.stats", "typed_config", "@type",
                     TYPED_STRUCT, "type_url", STATS_URL, "value", value);
}

/* xdsfilters.tcpMx: MetadataExchange {protocol, enable_discovery} in a TypedStruct. */
static json_t *tcp_mx_config(void)
{
    return json_pack("{s:s,s:s,s:{s:s,s:b}}", "@type", TYPED_STRUCT, "type_url", MX_URL, "value",
                     "protocol", "istio-peer-exchange", "enable_discovery", 1);
}

json_t *wf_tcp_listener_mx(void)
{
    return json_pack("{s:s,s:o}", "name", MX_NAME, "typed_config", tcp_mx_config());
}

json_t *wf_tcp_cluster_mx(void)
{
    return json_pack("[{s:s,s:o}]", "name", MX_NAME, "typed_config", tcp_mx_config());
}

json_t *wf_tcp_proxy_filter(const char *stat_prefix, const char *cluster)
{
    if (!cluster)
        return NULL;
    return json_pack("{s:s,s:{s:s,s:s,s:s}}", "name", TCP_NAME, "typed_config", "@type", TCP_TYPE,
                     "stat_prefix", stat_prefix ? stat_prefix : cluster, "cluster", cluster);
}

json_t *wf_tcp_tls_inspector(void)
{
    return json_pack("[{s:s,s:{s:s,s:i}}]", "name", "envoy.filters.listener.tls_inspector",
                     "typed_config", "@type", TLSI_TYPE, "initial_read_buffer_size", 512);
}

json_t *wf_tcp_cidr_range(const char *cidr)
{
    char addr[64];
    const char *slash = cidr ? strchr(cidr, '/') : NULL;
    size_t len = slash ? (size_t)(slash - cidr) : (cidr ? strlen(cidr) : 0);
    if (!cidr || len == 0 || len >= sizeof addr)
        return NULL;
    memcpy(addr, cidr, len);
    addr[len] = '\0';
    unsigned char buf[16];
    int max = inet_pton(AF_INET, addr, buf) == 1    ? 32
              : inet_pton(AF_INET6, addr, buf) == 1 ? 128
                                                    : 0;
    if (max == 0)
        return NULL;
    long n = max;
    if (slash) {
        char *end = NULL;
        n = strtol(slash + 1, &end, 10);
        if (!slash[1] || *end || n < 0 || n > max)
            return NULL;
    }
    return json_pack("{s:s,s:i}", "address_prefix", addr, "prefix_len", (int)n);
}

/* ---------- outbound ---------- */

typedef struct out_ctx {
    const wf_store *s;
    const wf_tcp_outbound *o;
    const wf_svc *svc;
    const wf_service_port *sp;
    json_t *chains;
    json_t *seen_tls; /* "sni|subnets" keys of emitted tls chains */
    bool catch_all;
    bool has_sni;
} out_ctx;

/* Istio's GetDestinationCluster port: destination.port.number, else the port of a destination
 * service that has exactly one, else the listener's port. 0 on OOM. */
static int32_t dest_port(const wf_tcp_route_ctx *c, const char *host, int32_t given)
{
    if (given > 0)
        return given;
    const wf_svc_view v = {.proxy_ns = c->proxy_ns, .suffix = c->suffix};
    wf_svc svc;
    int found = wf_svc_find(c->s, host, &v, &svc);
    if (found < 0)
        return 0;
    int32_t p = found && svc.nports == 1 && svc.ports[0].port > 0 ? svc.ports[0].port : c->port;
    if (found)
        wf_svc_clear(&svc);
    return p;
}

/* The cluster of a route destination: outbound|<port>|<subset>|<host>. */
static char *dest_cluster(const wf_tcp_route_ctx *c, const wf_resource *vs, const wf_destination *d)
{
    char *host = rds_resolve_host(d->host, vs->ns, c->suffix);
    int32_t port = host ? dest_port(c, host, d->port) : 0;
    char *name = port ? wf_cluster_name("outbound", port, d->subset, host) : NULL;
    free(host);
    return name;
}

static json_t *weighted(const wf_tcp_route_ctx *c, const wf_resource *vs, const wf_route *r)
{
    json_t *cl = json_array();
    for (size_t i = 0; cl && i < r->ndest; i++) {
        const wf_route_destination *d = &r->dests[i];
        if (!d->dest.host || d->weight <= 0)
            continue;
        char *name = dest_cluster(c, vs, &d->dest);
        if (!name || json_array_append_new(
                         cl, json_pack("{s:s,s:i}", "name", name, "weight", (int)d->weight)) != 0) {
            free(name);
            json_decref(cl);
            return NULL;
        }
        free(name);
    }
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s.%s", vs->name, vs->ns);
    return cl ? json_pack("{s:s,s:{s:s,s:s,s:{s:o}}}", "name", TCP_NAME, "typed_config", "@type",
                          TCP_TYPE, "stat_prefix", prefix, "weighted_clusters", "clusters", cl)
              : NULL;
}

/* The DestinationRule connectionPool.tcp of host's subset for port on tcp_proxy filter tp
 * (tcp.h). -1 on OOM. */
static int apply_pool(const wf_tcp_route_ctx *c, json_t *tp, const char *host, const char *subset,
                      int32_t port)
{
    const wf_svc_view v = {.proxy_ns = c->proxy_ns, .suffix = c->suffix};
    wf_svc svc;
    int found = wf_svc_find(c->s, host, &v, &svc);
    if (found <= 0)
        return found;
    const wf_resource *dr =
        wf_cds_find_destinationrule(c->s, host, svc.ns, c->proxy_ns, c->root_ns, c->suffix);
    wf_svc_clear(&svc);
    if (!dr || !dr->t.dr)
        return 0;
    const wf_node *sub = NULL;
    for (size_t i = 0; subset && i < dr->t.dr->nsubsets; i++)
        if (dr->t.dr->subsets[i].name && !strcmp(dr->t.dr->subsets[i].name, subset))
            sub = dr->t.dr->subsets[i].traffic_policy;
    cds_policy p = cds_policy_resolve(dr->t.dr->traffic_policy, sub, port);
    const wf_node *tcp = wf_map_get(p.pool, "tcp");
    json_t *tc = json_object_get(tp, "typed_config");
    json_t *idle = rds_duration_at(tcp, "idleTimeout");
    json_t *mcd = rds_duration_at(tcp, "maxConnectionDuration");
    int rc = 0;
    if (idle)
        rc |= json_object_set_new(tc, "idle_timeout", idle);
    if (mcd)
        rc |= json_object_set_new(tc, "max_downstream_connection_duration", mcd);
    return rc ? -1 : 0;
}

/* tcp_proxy to one destination with its DestinationRule's TCP settings. */
static json_t *single(const wf_tcp_route_ctx *c, const char *host, const char *subset, int32_t port)
{
    char *name = wf_cluster_name("outbound", port, subset, host);
    json_t *tp = name ? wf_tcp_proxy_filter(NULL, name) : NULL;
    free(name);
    if (tp && apply_pool(c, tp, host, subset, port) != 0) {
        json_decref(tp);
        return NULL;
    }
    return tp;
}

json_t *wf_tcp_route_filters(const wf_tcp_route_ctx *c, const wf_resource *vs, const wf_route *r)
{
    if (!c || !vs || !r)
        return NULL;
    size_t npos = 0;
    for (size_t i = 0; i < r->ndest; i++)
        npos += r->dests[i].weight != 0 && r->dests[i].dest.host;
    json_t *tp = NULL;
    if (r->ndest == 1 || npos <= 1) {
        const wf_destination *d = NULL;
        for (size_t i = 0; i < r->ndest && !d; i++)
            if (r->dests[i].dest.host && (r->ndest == 1 || r->dests[i].weight != 0))
                d = &r->dests[i].dest;
        char *host = d ? rds_resolve_host(d->host, vs->ns, c->suffix) : NULL;
        int32_t port = host ? dest_port(c, host, d->port) : 0;
        tp = port ? single(c, host, d->subset, port) : NULL;
        free(host);
    } else {
        tp = weighted(c, vs, r);
    }
    return tp ? json_pack("[o,o]", wf_tcp_stats_filter(c->gateway), tp) : NULL;
}

/* istio.stats + tcp_proxy for route r of vs (NULL: the service's own cluster). */
static json_t *route_filters(const out_ctx *x, const wf_resource *vs, const wf_route *r)
{
    const wf_tcp_route_ctx c = {.s = x->s,
                                .proxy_ns = x->o->proxy_ns,
                                .suffix = x->o->suffix,
                                .root_ns = x->o->root_ns,
                                .port = x->sp->port};
    if (r)
        return wf_tcp_route_filters(&c, vs, r);
    json_t *tp = single(&c, x->svc->host, NULL, x->sp->port);
    return tp ? json_pack("[o,o]", wf_tcp_stats_filter(false), tp) : NULL;
}

static bool same_match(const json_t *a, const json_t *b)
{
    return (!a && !b) || (a && b && json_equal(a, b));
}

/* Appends a chain (match consumed, may be NULL), unless a chain of the listener (an earlier
 * service's) has the same match: Envoy refuses duplicate matches. -1 on OOM. */
static int add_chain(out_ctx *x, json_t *match, const wf_resource *vs, const wf_route *r)
{
    if (!match)
        x->catch_all = true;
    for (size_t i = 0; i < json_array_size(x->chains); i++)
        if (same_match(json_object_get(json_array_get(x->chains, i), "filter_chain_match"),
                       match)) {
            json_decref(match);
            return 0;
        }
    x->has_sni = x->has_sni || json_object_get(match, "server_names");
    json_t *f = route_filters(x, vs, r);
    json_t *c = f ? json_pack("{s:o*,s:o}", "filter_chain_match", match, "filters", f) : NULL;
    if (!f)
        json_decref(match);
    return c ? json_array_append_new(x->chains, c) : -1;
}

/* Static predicates of an L4 / TLS match (tcp.h). */
static bool static_match(const out_ctx *x, const wf_node *m)
{
    int64_t port = 0;
    if (wf_node_int(wf_map_get(m, "port"), &port) && port != 0 && port != x->sp->port)
        return false;
    const wf_node *gws = wf_map_get(m, "gateways");
    bool mesh = wf_seq_len(gws) == 0;
    for (size_t i = 0; i < wf_seq_len(gws) && !mesh; i++) {
        const char *g = wf_node_str(wf_seq_at(gws, i));
        mesh = g && !strcmp(g, "mesh");
    }
    const char *sns = wf_map_str(m, "sourceNamespace");
    if (!mesh || (sns && (!x->o->proxy_ns || strcmp(sns, x->o->proxy_ns) != 0)))
        return false;
    const wf_node *sl = wf_map_get(m, "sourceLabels");
    for (size_t i = 0; sl && sl->type == WF_NODE_MAP && i < sl->len; i++) {
        const char *want = wf_node_str(sl->u.entries[i].value);
        const char *have =
            x->o->proxy_labels ? wf_kvs_get(x->o->proxy_labels, sl->u.entries[i].key) : NULL;
        if (!want || !have || strcmp(want, have) != 0)
            return false;
    }
    return true;
}

/* prefix_ranges of m's destinationSubnets (NULL when none; *bad on an unparsable one). */
static json_t *subnets(const wf_node *m, bool *oom)
{
    const wf_node *ds = wf_map_get(m, "destinationSubnets");
    *oom = false;
    if (wf_seq_len(ds) == 0)
        return NULL;
    json_t *out = json_array();
    for (size_t i = 0; out && i < wf_seq_len(ds); i++) {
        json_t *r = wf_tcp_cidr_range(wf_node_str(wf_seq_at(ds, i)));
        if (r && json_array_append_new(out, r) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    *oom = out == NULL;
    if (out && json_array_size(out) == 0) { /* validation refuses these: no match at all */
        json_decref(out);
        return NULL;
    }
    return out;
}

static int tls_routes(out_ctx *x, const wf_resource *vs)
{
    const wf_virtualservice *v = vs->t.vs;
    for (size_t i = 0; i < v->ntls; i++) {
        const wf_route *r = &v->tls[i];
        if (r->ndest == 0)
            continue;
        for (size_t j = 0; j < wf_seq_len(r->match); j++) {
            const wf_node *m = wf_seq_at(r->match, j);
            if (!static_match(x, m))
                continue;
            bool oom;
            json_t *sn = wf_node_json_strings(wf_map_get(m, "sniHosts"));
            json_t *pr = subnets(m, &oom);
            json_t *k = sn && !oom ? json_pack("[O,O*]", sn, pr) : NULL;
            char *key = k ? json_dumps(k, JSON_COMPACT) : NULL;
            json_decref(k);
            if (!key) {
                json_decref(sn);
                json_decref(pr);
                return -1;
            }
            if (json_object_get(x->seen_tls, key)) {
                free(key);
                json_decref(sn);
                json_decref(pr);
                continue;
            }
            int rc = json_object_set_new(x->seen_tls, key, json_true());
            free(key);
            json_t *match = json_pack("{s:o*,s:o*}", "server_names",
                                      json_array_size(sn) ? sn : NULL, "prefix_ranges", pr);
            if (!json_array_size(sn))
                json_decref(sn);
            if (rc != 0 || !match || add_chain(x, match, vs, r) != 0)
                return -1;
        }
    }
    return 0;
}

static int tcp_routes(out_ctx *x, const wf_resource *vs)
{
    const wf_virtualservice *v = vs->t.vs;
    for (size_t i = 0; i < v->ntcp && !x->catch_all; i++) {
        const wf_route *r = &v->tcp[i];
        if (r->ndest == 0)
            continue;
        if (wf_seq_len(r->match) == 0)
            return add_chain(x, NULL, vs, r);
        json_t *acc = NULL; /* subnet matches of this route accumulate into one chain */
        for (size_t j = 0; j < wf_seq_len(r->match) && !x->catch_all; j++) {
            const wf_node *m = wf_seq_at(r->match, j);
            if (!static_match(x, m))
                continue;
            bool oom;
            json_t *pr = subnets(m, &oom);
            if (oom) {
                json_decref(acc);
                return -1;
            }
            if (!pr) {
                json_decref(acc);
                return add_chain(x, NULL, vs, r);
            }
            if (!acc) {
                acc = pr;
                continue;
            }
            int rc = json_array_extend(acc, pr);
            json_decref(pr);
            if (rc != 0) {
                json_decref(acc);
                return -1;
            }
        }
        if (acc && add_chain(x, json_pack("{s:o}", "prefix_ranges", acc), vs, r) != 0)
            return -1;
    }
    return 0;
}

static bool host_covers(const char *pattern, const char *host)
{
    if (!strcmp(pattern, "*") || !strcmp(pattern, host))
        return true;
    if (pattern[0] != '*' || pattern[1] != '.')
        return false;
    size_t pl = strlen(pattern + 1), hl = strlen(host);
    return hl > pl && !strcmp(host + hl - pl, pattern + 1);
}

/* The VirtualService for the service (tcp.h), NULL when none; *oom on OOM. */
static const wf_resource *find_vs(const out_ctx *x, bool *oom)
{
    const rds_ctx rx = {
        .s = x->s, .proxy_ns = x->o->proxy_ns, .suffix = x->o->suffix, .scope = x->o->scope};
    size_t n = 0;
    const wf_resource *const *all = wf_store_kind(x->s, WF_KIND_VIRTUALSERVICE, &n);
    *oom = false;
    for (size_t i = 0; i < n; i++) {
        const wf_resource *vs = all[i];
        const wf_virtualservice *v = vs->t.vs;
        if (!v || (v->ntcp == 0 && v->ntls == 0) || !rds_vs_visible(vs, x->o->proxy_ns))
            continue;
        bool mesh = v->gateways.n == 0;
        for (size_t g = 0; g < v->gateways.n && !mesh; g++)
            mesh = !strcmp(v->gateways.v[g], "mesh");
        int in = mesh ? rds_vs_in_scope(&rx, vs) : 0;
        if (in < 0) {
            *oom = true;
            return NULL;
        }
        for (size_t h = 0; in && h < v->hosts.n; h++) {
            char *rh = rds_resolve_host(v->hosts.v[h], vs->ns, x->o->suffix);
            if (!rh) {
                *oom = true;
                return NULL;
            }
            bool hit = host_covers(rh, x->svc->host);
            free(rh);
            if (hit)
                return vs;
        }
    }
    return NULL;
}

/* The listener address Istio names a service's listener by: a Service's clusterIP, a
 * ServiceEntry's first plain address, else its auto-allocated one; NULL when none (a wildcard
 * listener). */
static const char *svc_vip(const wf_svc *svc)
{
    if (!svc->is_se)
        return svc->vip && *svc->vip && strcmp(svc->vip, "None") ? svc->vip : NULL;
    const wf_strs *a = wf_svc_addresses(svc);
    for (size_t i = 0; a && i < a->n; i++)
        if (!strchr(a->v[i], '/'))
            return a->v[i];
    return svc->vip; /* the auto-allocated one (lds.h auto_allocate), NULL none */
}

/* The chains of x->svc on x->sp into x->chains (tcp.h). -1 on OOM. */
static int service_chains(out_ctx *x, bool wildcard)
{
    bool oom;
    const wf_resource *vs = find_vs(x, &oom);
    size_t before = json_array_size(x->chains);
    x->seen_tls = json_object();
    x->catch_all = false;
    int rc = oom || !x->seen_tls ? -1 : 0;
    if (rc == 0 && vs)
        rc = tls_routes(x, vs);
    if (rc == 0 && json_array_size(x->chains) == before && tls_port(x->sp)) {
        /* Istio's default TLS chain: the host as SNI only on a listener without VIP */
        json_t *m = wildcard ? json_pack("{s:[s]}", "server_names", x->svc->host) : NULL;
        rc = wildcard && !m ? -1 : add_chain(x, m, NULL, NULL);
    }
    if (rc == 0 && vs)
        rc = tcp_routes(x, vs);
    if (rc == 0 && !x->catch_all)
        rc = add_chain(x, NULL, NULL, NULL);
    json_decref(x->seen_tls);
    x->seen_tls = NULL;
    return rc;
}

json_t *wf_tcp_service_chains(const wf_store *s, const wf_tcp_outbound *o, const wf_svc *svc,
                              const wf_service_port *sp, bool *has_sni)
{
    if (!s || !o || !o->suffix || !svc || !sp)
        return NULL;
    out_ctx x = {.s = s, .o = o, .svc = svc, .sp = sp, .chains = json_array()};
    if (!x.chains || service_chains(&x, svc_vip(svc) == NULL) != 0) {
        json_decref(x.chains);
        return NULL;
    }
    if (has_sni)
        *has_sni = x.has_sni;
    return x.chains;
}

/* Does service i share the listener the service first names? A service with a clusterIP has
 * one of its own; the others share 0.0.0.0_<port>. */
static bool shares(const wf_svcs *svcs, size_t first, size_t i)
{
    return i == first || (!svc_vip(&svcs->v[first]) && !svc_vip(&svcs->v[i]));
}

/* The listener of port sp->port: services from svcs->v[first] on (tcp.h). */
static json_t *outbound_listener(const wf_store *s, const wf_tcp_outbound *o, const wf_svcs *svcs,
                                 size_t first, int32_t port)
{
    const char *vip = svc_vip(&svcs->v[first]);
    out_ctx x = {.s = s, .o = o, .chains = json_array()};
    int rc = x.chains ? 0 : -1;
    for (size_t i = first; rc == 0 && i < svcs->n; i++) {
        const wf_service_port *sp = wf_svc_port(&svcs->v[i], port);
        if (!sp || !wf_tcp_service_port(sp) || !shares(svcs, first, i))
            continue;
        x.svc = &svcs->v[i];
        x.sp = sp;
        rc = service_chains(&x, vip == NULL);
    }
    char name[128];
    snprintf(name, sizeof name, "%s_%d", vip ? vip : "0.0.0.0", (int)port);
    const char *bind = o->bind ? o->bind : o->per_vip && vip ? vip : "0.0.0.0";
    json_t *l =
        rc == 0 ? json_pack("{s:s,s:s,s:{s:{s:s,s:i}}}", "@type", LISTENER_TYPE, "name", name,
                            "address", "socket_address", "address", bind, "port_value", (int)port)
                : NULL;
    if (l && x.has_sni && json_object_set_new(l, "listener_filters", wf_tcp_tls_inspector()) != 0)
        goto fail;
    if (!l || json_object_set_new(l, "filter_chains", x.chains) != 0) {
        x.chains = NULL;
        goto fail;
    }
    x.chains = NULL;
    if (json_object_set_new(l, "traffic_direction", json_string("OUTBOUND")) != 0)
        goto fail;
    return l;
fail:
    json_decref(x.chains);
    json_decref(l);
    return NULL;
}

static bool port_taken(const int32_t *taken, size_t n, const int32_t *mine, size_t m, int32_t p)
{
    for (size_t i = 0; i < n; i++)
        if (taken[i] == p)
            return true;
    for (size_t i = 0; i < m; i++)
        if (mine[i] == p)
            return true;
    return false;
}

int wf_tcp_outbound_listeners(const wf_store *s, const wf_svcs *svcs, const wf_tcp_outbound *o,
                              const int32_t *taken, size_t ntaken, json_t *out)
{
    if (!s || !svcs || !o || !o->suffix || !out)
        return -1;
    int32_t *mine = NULL;
    size_t nmine = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < svcs->n; i++) {
        for (size_t j = 0; rc == 0 && j < svcs->v[i].nports; j++) {
            const wf_service_port *sp = &svcs->v[i].ports[j];
            if (!wf_tcp_service_port(sp))
                continue;
            if (o->per_vip && svc_vip(&svcs->v[i])) { /* <vip>_<port>, its own address */
                rc = json_array_append_new(out, outbound_listener(s, o, svcs, i, sp->port));
                continue;
            }
            if (port_taken(taken, ntaken, mine, nmine, sp->port))
                continue;
            if (nmine == cap) {
                cap = cap ? cap * 2 : 8;
                int32_t *v = realloc(mine, cap * sizeof *v);
                if (!v) {
                    rc = -1;
                    break;
                }
                mine = v;
            }
            mine[nmine++] = sp->port;
            rc = json_array_append_new(out, outbound_listener(s, o, svcs, i, sp->port));
        }
    }
    free(mine);
    return rc;
}

/* ---------- inbound ---------- */

/* Istio's inbound mTLS ALPNs (security.md §3.1). */
static json_t *istio_alpns(void)
{
    return json_pack("[s,s,s,s,s]", "istio", "istio-peer-exchange", "istio-http/1.0",
                     "istio-http/1.1", "istio-h2");
}

/* wf_authn_inbound_tls with Istio's TCP ALPNs (ALPNDownstreamWithMxc). */
json_t *wf_tcp_inbound_tls(const wf_meshcfg *mesh)
{
    json_t *ts = wf_authn_inbound_tls(mesh);
    json_t *common = json_object_get(json_object_get(ts, "typed_config"), "common_tls_context");
    if (!common ||
        json_object_set_new(common, "alpn_protocols",
                            json_pack("[s,s,s]", "istio-peer-exchange", "h2", "http/1.1")) != 0) {
        json_decref(ts);
        return NULL;
    }
    return ts;
}

static int add_in_chain(json_t *chains, json_t *match, const json_t *filters, json_t *ts,
                        const char *name)
{
    json_t *c = json_pack("{s:o*,s:o,s:o*,s:s}", "filter_chain_match", match, "filters",
                          json_deep_copy(filters), "transport_socket", ts, "name", name);
    return c ? json_array_append_new(chains, c) : -1;
}

static json_t *inbound_chains(wf_mtls_mode mode, const json_t *filters, const char *name,
                              const wf_meshcfg *mesh)
{
    json_t *out = json_array();
    int rc = out ? 0 : -1;
    if (rc == 0 && mode == WF_MTLS_STRICT)
        rc = add_in_chain(out, json_pack("{s:s}", "transport_protocol", "tls"), filters,
                          wf_tcp_inbound_tls(mesh), name);
    if (rc == 0 && mode == WF_MTLS_PERMISSIVE) {
        rc = add_in_chain(out,
                          json_pack("{s:s,s:o}", "transport_protocol", "tls",
                                    "application_protocols", istio_alpns()),
                          filters, wf_tcp_inbound_tls(mesh), name);
        if (rc == 0)
            rc = add_in_chain(out, json_pack("{s:s}", "transport_protocol", "tls"), filters, NULL,
                              name);
        if (rc == 0)
            rc = add_in_chain(out, json_pack("{s:s}", "transport_protocol", "raw_buffer"), filters,
                              NULL, name);
    }
    if (rc == 0 && mode == WF_MTLS_DISABLE)
        rc = add_in_chain(out, NULL, filters, NULL, name);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *wf_tcp_inbound_filters(int32_t port, const json_t *authz)
{
    char cluster[32];
    snprintf(cluster, sizeof cluster, "inbound|%d||", (int)port);
    return wf_tcp_inbound_cluster_filters(cluster, authz);
}

json_t *wf_tcp_inbound_cluster_filters(const char *cluster, const json_t *authz)
{
    json_t *filters = cluster ? json_array() : NULL;
    if (!filters || json_array_append_new(filters, wf_tcp_listener_mx()) != 0 ||
        (authz && json_array_extend(filters, (json_t *)authz) != 0) ||
        json_array_append_new(filters, wf_tcp_stats_filter(true)) != 0 ||
        json_array_append_new(filters, wf_tcp_proxy_filter(NULL, cluster)) != 0) {
        json_decref(filters);
        return NULL;
    }
    return filters;
}

json_t *wf_tcp_inbound_listener(int32_t port, const char *bind, wf_mtls_mode mode,
                                const wf_meshcfg *mesh, const json_t *authz)
{
    char name[128];
    bind = bind && *bind ? bind : "0.0.0.0";
    snprintf(name, sizeof name, "%s_%d", bind, (int)port);
    json_t *filters = wf_tcp_inbound_filters(port, authz);
    if (!filters)
        return NULL;
    if (mode == WF_MTLS_UNSET)
        mode = WF_MTLS_PERMISSIVE;
    json_t *chains = inbound_chains(mode, filters, name, mesh);
    json_decref(filters);
    json_t *l =
        chains ? json_pack("{s:s,s:s,s:{s:{s:s,s:i}}}", "@type", LISTENER_TYPE, "name", name,
                           "address", "socket_address", "address", bind, "port_value", (int)port)
               : NULL;
    int err = l ? 0 : -1;
    if (err == 0 && mode != WF_MTLS_DISABLE)
        err = json_object_set_new(l, "listener_filters", wf_tcp_tls_inspector());
    if (err == 0) {
        err = json_object_set_new(l, "filter_chains", chains);
        chains = NULL;
    }
    if (err == 0)
        err = json_object_set_new(l, "traffic_direction", json_string("INBOUND"));
    json_decref(chains);
    if (err != 0) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* ---------- ports several services share ---------- */

/* The first service of svcs with an HTTP port (http) or a TCP port numbered port. */
static const wf_svc *first_with(const wf_svcs *svcs, int32_t port, bool http)
{
    for (size_t i = 0; i < svcs->n; i++) {
        const wf_service_port *sp = wf_svc_port(&svcs->v[i], port);
        if (sp && (http ? rds_http_service_port(sp) : wf_tcp_service_port(sp)))
            return &svcs->v[i];
    }
    return NULL;
}

/* Does x's TCP port sp lose its listener (or its chains) to another service (tcp.h)? */
static const wf_svc *taker_of(const wf_svcs *svcs, const wf_svc *x, const wf_service_port *sp,
                              bool *http)
{
    const wf_svc *t = first_with(svcs, sp->port, true);
    *http = t != NULL;
    if (t)
        return t;
    t = first_with(svcs, sp->port, false);
    if (!t || t == x)
        return NULL;
    if (svc_vip(t) || svc_vip(x))
        return t;
    /* both wildcard: TLS ports are told apart by SNI, others share the one catch-all */
    return tls_port(sp) && tls_port(wf_svc_port(t, sp->port)) ? NULL : t;
}

int wf_tcp_port_clashes(const wf_store *s, const char *suffix, wf_tcp_clash_cb cb, void *arg)
{
    if (!s || !cb)
        return -1;
    const wf_svc_view v = {.suffix = suffix ? suffix : wf_store_domain_suffix(s)};
    wf_svcs svcs;
    if (wf_svcs_collect(s, &v, &svcs) != 0)
        return -1;
    int n = 0;
    for (size_t i = 0; i < svcs.n; i++) {
        const wf_svc *x = &svcs.v[i];
        for (size_t j = 0; j < x->nports; j++) {
            const wf_service_port *sp = &x->ports[j];
            bool http, seen = false;
            const wf_svc *t = wf_tcp_service_port(sp) ? taker_of(&svcs, x, sp, &http) : NULL;
            for (size_t k = 0; t && k < i && !seen; k++) /* another host of one ServiceEntry */
                seen = svcs.v[k].res == x->res &&
                       taker_of(&svcs, &svcs.v[k], &svcs.v[k].ports[j], &(bool){false}) != NULL;
            if (!t || seen)
                continue;
            const wf_tcp_clash c = {.res = x->res,
                                    .port = sp,
                                    .index = j,
                                    .taker = t->res,
                                    .taker_host = t->host,
                                    .http = http};
            cb(&c, arg);
            n++;
        }
    }
    wf_svcs_free(&svcs);
    return n;
}
