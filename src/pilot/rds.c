/*
 * rds.c - a sidecar's outbound route configurations: ports, virtual hosts, domains and which
 * VirtualService binds a Service (see rds.h). The VirtualService routes are in rds_route.c.
 */
#include "pilot/rds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/protocol.h"
#include "pilot/naming.h"
#include "pilot/rds_internal.h"

#define RC_TYPE "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
#define PH_TYPE                                                                                    \
    "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"
#define RETRY_ON  "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
#define MAX_PORTS RDS_MAX_PORTS

char *rds_resolve_host(const char *host, const char *ns, const char *suffix)
{
    char *out = NULL;
    if (!host)
        return NULL;
    if (strchr(host, '.') || strcmp(host, "*") == 0)
        return strdup(host);
    if (asprintf(&out, "%s.%s.svc.%s", host, ns ? ns : "", suffix) < 0)
        return NULL;
    return out;
}

json_t *rds_default_retry_policy(void)
{
    return json_pack("{s:s,s:i,s:[{s:s,s:{s:s}}],s:s}", "retry_on", RETRY_ON, "num_retries", 2,
                     "retry_host_predicate", "name", "envoy.retry_host_predicates.previous_hosts",
                     "typed_config", "@type", PH_TYPE, "host_selection_retry_max_attempts", "5");
}

/* ---------- which Services and ports ---------- */

/* Istio's protocol of a Service port (model/protocol.h), reduced to "gets an HTTP route
 * configuration": the HTTP family, and undeclared protocols (sniffed: their HTTP chain uses
 * these routes, pilot/sniff.h). */
bool rds_http_service_port(const wf_service_port *sp)
{
    if (sp->port <= 0 || sp->port > 65535)
        return false;
    wf_protocol p = wf_protocol_of_kube_port(sp->port, sp->name, sp->protocol, sp->app_protocol);
    return wf_protocol_is_http(p) || p == WF_PROTO_UNSUPPORTED;
}

static bool service_has_port(const wf_svc *svc, int32_t port)
{
    const wf_service_port *sp = wf_svc_port(svc, port);
    return sp && rds_http_service_port(sp);
}

static int cmp_port(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The distinct HTTP ports of the services, ascending (rds_internal.h). */
size_t rds_http_ports(const wf_svcs *svcs, int32_t *ports)
{
    size_t np = 0;
    for (size_t i = 0; i < svcs->n; i++) {
        for (size_t j = 0; j < svcs->v[i].nports && np < MAX_PORTS; j++) {
            const wf_service_port *sp = &svcs->v[i].ports[j];
            bool seen = false;
            for (size_t k = 0; k < np && !seen; k++)
                seen = ports[k] == sp->port;
            if (!seen && rds_http_service_port(sp))
                ports[np++] = sp->port;
        }
    }
    qsort(ports, np, sizeof *ports, cmp_port);
    return np;
}

/* ---------- which VirtualService binds a Service ---------- */

bool rds_vs_visible(const wf_resource *vs, const char *proxy_ns)
{
    const wf_strs *e = &vs->t.vs->export_to;
    if (e->n == 0)
        return true;
    for (size_t i = 0; i < e->n; i++) {
        const char *t = e->v[i];
        if (!strcmp(t, "*") || (proxy_ns && !strcmp(t, proxy_ns)) ||
            (proxy_ns && !strcmp(t, ".") && !strcmp(vs->ns, proxy_ns)))
            return true;
    }
    return false;
}

static bool vs_for_mesh(const wf_resource *vs)
{
    const wf_strs *g = &vs->t.vs->gateways;
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->v[i], "mesh"))
            return true;
    return g->n == 0;
}

/* Istio's selectVirtualServices: a VirtualService is in the Sidecar scope when one of its
 * hosts (short names resolved in its namespace) is. 1 yes, 0 no, -1 OOM. */
int rds_vs_in_scope(const rds_ctx *x, const wf_resource *vs)
{
    if (!x->scope)
        return 1;
    for (size_t j = 0; j < vs->t.vs->hosts.n; j++) {
        char *h = rds_resolve_host(vs->t.vs->hosts.v[j], vs->ns, x->suffix);
        if (!h)
            return -1;
        bool ok = wf_scope_visible(x->scope, vs->ns, h);
        free(h);
        if (ok)
            return 1;
    }
    return 0;
}

/* Which VirtualService binds each service (rds_bind): built once per call from the
 * VirtualServices that apply to the proxy (exported, for "mesh", in the Sidecar scope). An exact
 * (resolved) host maps to the first VirtualService in load order naming it; wildcard hosts are
 * kept in load order. */
typedef struct vs_index {
    json_t *exact; /* resolved host -> integer position in the store's VS list */
    size_t nwild;
    struct wild {
        size_t vs;  /* position in the store's VS list */
        char *host; /* "*" or "*.suffix" */
    } * wild;
} vs_index;

static void vs_index_free(vs_index *ix)
{
    json_decref(ix->exact);
    for (size_t i = 0; i < ix->nwild; i++)
        free(ix->wild[i].host);
    free(ix->wild);
    *ix = (vs_index){0};
}

static bool vs_applies(const rds_ctx *x, const wf_resource *vs, int *in_scope)
{
    *in_scope = 0;
    if (!vs->t.vs || !rds_vs_visible(vs, x->proxy_ns) || !vs_for_mesh(vs))
        return false;
    *in_scope = rds_vs_in_scope(x, vs);
    return *in_scope != 0;
}

/* Adds host h (owned, consumed) of the VS at position i. 0 or -1 (OOM). */
static int vs_index_add(vs_index *ix, size_t i, char *h, size_t cap)
{
    int rc = 0;
    if (!json_object_get(ix->exact, h))
        rc = json_object_set_new(ix->exact, h, json_integer((json_int_t)i));
    if (rc == 0 && (!strcmp(h, "*") || (h[0] == '*' && h[1] == '.')) && ix->nwild < cap) {
        ix->wild[ix->nwild++] = (struct wild){.vs = i, .host = h};
        return 0;
    }
    free(h);
    return rc;
}

static size_t count_vs_hosts(const wf_resource *const *all, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += all[i]->t.vs ? all[i]->t.vs->hosts.n : 0;
    return total;
}

static int vs_index_build(const rds_ctx *x, vs_index *ix)
{
    size_t n = 0;
    const wf_resource *const *all = wf_store_kind(x->s, WF_KIND_VIRTUALSERVICE, &n);
    size_t cap = count_vs_hosts(all, n);
    *ix = (vs_index){.exact = json_object(), .wild = calloc(cap ? cap : 1, sizeof *ix->wild)};
    if (!ix->exact || !ix->wild)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        int in_scope;
        if (!vs_applies(x, all[i], &in_scope)) {
            if (in_scope < 0)
                goto fail;
            continue;
        }
        for (size_t j = 0; j < all[i]->t.vs->hosts.n; j++) {
            char *h = rds_resolve_host(all[i]->t.vs->hosts.v[j], all[i]->ns, x->suffix);
            if (!h || vs_index_add(ix, i, h, cap) != 0)
                goto fail;
        }
    }
    return 0;
fail:
    vs_index_free(ix);
    return -1;
}

/* Does wildcard w ("*" or "*.suffix") cover fqdn? */
static bool wild_covers(const char *w, const char *fqdn)
{
    if (!strcmp(w, "*"))
        return true;
    size_t hl = strlen(w), fl = strlen(fqdn);
    return fl > hl - 1 && !strcmp(fqdn + fl - (hl - 1), w + 1);
}

/* Position (store VS list) of the VirtualService binding fqdn, or SIZE_MAX when none: the first
 * with an exact host, else the first whose wildcard host covers it. */
static size_t vs_index_find(const vs_index *ix, const char *fqdn)
{
    json_t *e = json_object_get(ix->exact, fqdn);
    if (e)
        return (size_t)json_integer_value(e);
    for (size_t i = 0; i < ix->nwild; i++)
        if (wild_covers(ix->wild[i].host, fqdn))
            return ix->wild[i].vs;
    return SIZE_MAX;
}

/* The binding of every service of x->svcs, and the order virtual hosts are built in: services
 * bound by a VirtualService first (VirtualService load order, then service order), then the
 * unbound ones (service order). */
typedef struct rds_bind {
    const wf_resource **vs; /* per service (x->svcs order); NULL = unbound */
    size_t *order;          /* service positions in build order */
    size_t *key;            /* scratch: VS position per service (SIZE_MAX = unbound) */
} rds_bind;

static void rds_bind_free(rds_bind *b)
{
    free(b->vs);
    free(b->order);
    free(b->key);
}

typedef struct bind_pair {
    size_t key, pos;
} bind_pair;

static int cmp_pair(const void *a, const void *b)
{
    const bind_pair *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sorts the first nb (bound) entries of b->order by (VS position, service position). */
static int bind_sort(rds_bind *b, size_t nb)
{
    bind_pair *p = calloc(nb ? nb : 1, sizeof *p);
    if (!p) {
        rds_bind_free(b);
        return -1;
    }
    for (size_t i = 0; i < nb; i++)
        p[i] = (bind_pair){.key = b->key[b->order[i]], .pos = b->order[i]};
    qsort(p, nb, sizeof *p, cmp_pair);
    for (size_t i = 0; i < nb; i++)
        b->order[i] = p[i].pos;
    free(p);
    return 0;
}

static int rds_bind_build(const rds_ctx *x, rds_bind *b)
{
    size_t n = x->svcs->n, nvs = 0;
    const wf_resource *const *all = wf_store_kind(x->s, WF_KIND_VIRTUALSERVICE, &nvs);
    vs_index ix;
    *b = (rds_bind){.vs = calloc(n ? n : 1, sizeof *b->vs),
                    .order = calloc(n ? n : 1, sizeof *b->order),
                    .key = calloc(n ? n : 1, sizeof *b->key)};
    if (!b->vs || !b->order || !b->key || vs_index_build(x, &ix) != 0) {
        rds_bind_free(b);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        b->key[i] = vs_index_find(&ix, x->svcs->v[i].host);
        b->vs[i] = b->key[i] == SIZE_MAX ? NULL : all[b->key[i]];
        b->order[i] = i;
    }
    vs_index_free(&ix);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (b->key[i] != SIZE_MAX)
            b->order[k++] = i;
    size_t nb = k;
    for (size_t i = 0; i < n; i++)
        if (b->key[i] == SIZE_MAX)
            b->order[k++] = i;
    return bind_sort(b, nb);
}

/* ---------- virtual hosts ---------- */

typedef struct rc_build {
    const rds_ctx *x;
    int32_t port;
    bool port_domains;
    json_t *used;   /* object used as a set of the domains taken so far */
    json_t *vhosts; /* the configuration's virtual_hosts */
} rc_build;

/* Append d (and "d:port" when asked) unless an earlier virtual host took it. */
static int add_domain(rc_build *b, json_t *doms, const char *d, size_t len)
{
    char buf[512];
    for (int k = 0; k < (b->port_domains ? 2 : 1); k++) {
        int n = k ? snprintf(buf, sizeof buf, "%.*s:%d", (int)len, d, (int)b->port)
                  : snprintf(buf, sizeof buf, "%.*s", (int)len, d);
        if (n < 0 || (size_t)n >= sizeof buf)
            return 0; /* longer than any DNS name: skipped */
        if (json_object_get(b->used, buf))
            continue;
        if (json_object_set_new(b->used, buf, json_true()) != 0 ||
            json_array_append_new(doms, json_string(buf)) != 0)
            return -1;
    }
    return 0;
}

/* The length of "name.ns" when host is "name.ns.svc.<suffix>" (Istio's alt hosts apply),
 * else 0. */
static size_t kube_host_prefix(const char *host, const char *suffix)
{
    size_t hl = strlen(host), sl = strlen(suffix);
    if (hl <= sl + 5 || strcmp(host + hl - sl, suffix) != 0 ||
        strncmp(host + hl - sl - 5, ".svc.", 5) != 0)
        return 0;
    size_t pl = hl - sl - 5;
    const char *dot = memchr(host, '.', pl);
    return dot && dot != host && !memchr(dot + 1, '.', pl - (size_t)(dot + 1 - host)) &&
                   (size_t)(dot + 1 - host) < pl
               ? pl
               : 0;
}

/* GenerateAltVirtualHosts: for a proxy in the service's namespace `name`, `name.ns.svc`,
 * `name.ns`; otherwise `name.ns`, `name.ns.svc`. */
static int alt_domains(rc_build *b, json_t *doms, const char *host, size_t ns_len)
{
    const char *dot = strchr(host, '.');
    size_t name_len = (size_t)(dot - host), svc_len = ns_len + 4;
    bool same = b->x->proxy_ns && strlen(b->x->proxy_ns) == ns_len - name_len - 1 &&
                !strncmp(b->x->proxy_ns, dot + 1, ns_len - name_len - 1);
    int rc = same ? add_domain(b, doms, host, name_len) : 0;
    if (rc == 0)
        rc = add_domain(b, doms, host, same ? svc_len : ns_len);
    if (rc == 0)
        rc = add_domain(b, doms, host, same ? ns_len : svc_len);
    return rc;
}

/* generateVirtualHostDomains: the host, its alt names, the clusterIP or the ServiceEntry's
 * addresses (plain IPs only). */
static json_t *vhost_domains(rc_build *b, const wf_svc *svc)
{
    json_t *doms = json_array();
    if (!doms)
        return NULL;
    size_t ns_len = kube_host_prefix(svc->host, b->x->suffix);
    int rc = add_domain(b, doms, svc->host, strlen(svc->host));
    if (rc == 0 && ns_len)
        rc = alt_domains(b, doms, svc->host, ns_len);
    if (rc == 0 && svc->vip)
        rc = add_domain(b, doms, svc->vip, strlen(svc->vip));
    const wf_strs *addrs = wf_svc_addresses(svc);
    for (size_t i = 0; rc == 0 && addrs && i < addrs->n; i++)
        if (addrs->v[i] && *addrs->v[i] && !strchr(addrs->v[i], '/'))
            rc = add_domain(b, doms, addrs->v[i], strlen(addrs->v[i]));
    if (rc == 0)
        return doms;
    json_decref(doms);
    return NULL;
}

/* Istio's default route of a Service without a VirtualService (BuildDefaultHTTPOutboundRoute):
 * the retry policy is ConvertPolicy(MeshConfig defaultHttpRetryPolicy), Istio's default when
 * that is unset; setTimeout(nil): timeout and max_grpc_timeout "0s" (a gRPC client's
 * grpc-timeout applies uncapped). */
static json_t *default_route(const rds_ctx *x, const char *cluster)
{
    json_t *retry = NULL;
    json_t *r =
        json_pack("{s:{s:s},s:{s:s,s:s,s:s},s:s}", "match", "prefix", "/", "route", "cluster",
                  cluster, "timeout", "0s", "max_grpc_timeout", "0s", "name", "default");
    if (!r || rds_retry_policy(x->default_retries, &retry) != 0 ||
        (retry && json_object_set_new(json_object_get(r, "route"), "retry_policy", retry) != 0)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

static json_t *service_routes(rc_build *b, const char *fqdn, const wf_resource *vs)
{
    json_t *routes = json_array();
    if (!routes)
        return NULL;
    if (vs) {
        if (rds_vs_routes(b->x, vs, b->port, routes) == 0)
            return routes;
        json_decref(routes);
        return NULL;
    }
    char *cluster = wf_cluster_name("outbound", b->port, NULL, fqdn);
    if (!cluster || json_array_append_new(routes, default_route(b->x, cluster)) != 0) {
        free(cluster);
        json_decref(routes);
        return NULL;
    }
    free(cluster);
    return routes;
}

static int add_vhost(rc_build *b, const wf_svc *svc, const wf_resource *vs)
{
    const char *fqdn = svc->host;
    json_t *routes = service_routes(b, fqdn, vs);
    if (!routes)
        return -1;
    if (json_array_size(routes) == 0) { /* no route applies: Istio builds no vhost */
        json_decref(routes);
        return 0;
    }
    json_t *doms = vhost_domains(b, svc);
    if (!doms || json_array_size(doms) == 0) {
        json_decref(routes);
        json_decref(doms);
        return doms ? 0 : -1;
    }
    json_t *v = json_pack("{s:o,s:o,s:o,s:b}", "name", json_sprintf("%s:%d", fqdn, (int)b->port),
                          "domains", doms, "routes", routes, "include_request_attempt_count", 1);
    return json_array_append_new(b->vhosts, v); /* NULL v: -1 */
}

/* Virtual hosts of the services on b->port, in the binding order. */
static int add_services(rc_build *b, const rds_bind *bind)
{
    for (size_t i = 0; i < b->x->svcs->n; i++) {
        size_t k = bind->order[i];
        const wf_svc *svc = &b->x->svcs->v[k];
        if (service_has_port(svc, b->port) && add_vhost(b, svc, bind->vs[k]) != 0)
            return -1;
    }
    return 0;
}

/* Istio's allow_any / block_all virtual host. */
static json_t *catch_all_vhost(bool registry_only)
{
    const char *name = registry_only ? "block_all" : "allow_any";
    json_t *route = registry_only
                        ? json_pack("{s:{s:s},s:{s:i},s:s}", "match", "prefix", "/",
                                    "direct_response", "status", 502, "name", name)
                        : json_pack("{s:{s:s},s:{s:s,s:s,s:s},s:s}", "match", "prefix", "/",
                                    "route", "cluster", WF_CLUSTER_PASSTHROUGH, "timeout", "0s",
                                    "max_grpc_timeout", "0s", "name", name);
    return json_pack("{s:s,s:[s],s:[o],s:b}", "name", name, "domains", "*", "routes", route,
                     "include_request_attempt_count", 1);
}

static json_t *route_config(const rds_ctx *x, const wf_rds_options *opt, const rds_bind *bind,
                            int32_t port)
{
    rc_build b = {.x = x,
                  .port = port,
                  .port_domains = opt->port_in_domains,
                  .used = json_object(),
                  .vhosts = json_array()};
    json_t *rc = NULL;
    if (!b.used || !b.vhosts)
        goto out;
    if (add_services(&b, bind) != 0 ||
        json_array_append_new(b.vhosts, catch_all_vhost(opt->registry_only)) != 0)
        goto out;
    rc = json_pack("{s:s,s:o,s:O,s:b}", "@type", RC_TYPE, "name", json_sprintf("%d", (int)port),
                   "virtual_hosts", b.vhosts, "validate_clusters", 0);
    if (rc && !opt->port_in_domains &&
        json_object_set_new(rc, "ignore_port_in_host_matching", json_true()) != 0)
        goto fail;
out:
    json_decref(b.used);
    json_decref(b.vhosts);
    return rc;
fail:
    json_decref(rc);
    rc = NULL;
    goto out;
}

json_t *wf_rds_sidecar_route_configs(const wf_store *store, const wf_rds_options *opt)
{
    static const wf_rds_options none = {0};
    if (!store)
        return NULL;
    if (!opt)
        opt = &none;
    wf_svcs svcs;
    rds_ctx x = {.s = store,
                 .proxy_ns = opt->proxy_ns && *opt->proxy_ns ? opt->proxy_ns : NULL,
                 .suffix = opt->domain_suffix ? opt->domain_suffix : wf_store_domain_suffix(store),
                 .proxy_labels = opt->proxy_labels,
                 .default_retries = opt->default_retries,
                 .scope = opt->scope,
                 .svcs = &svcs};
    const wf_svc_view v = {.proxy_ns = x.proxy_ns, .suffix = x.suffix, .scope = opt->scope};
    if (wf_svcs_collect(store, &v, &svcs) != 0)
        return NULL;
    rds_bind bind;
    if (rds_bind_build(&x, &bind) != 0) {
        wf_svcs_free(&svcs);
        return NULL;
    }
    json_t *out = json_array();
    int32_t *ports = calloc(MAX_PORTS, sizeof *ports);
    if (!out || !ports)
        goto fail;
    size_t np = rds_http_ports(&svcs, ports);
    for (size_t i = 0; i < np; i++)
        if (json_array_append_new(out, route_config(&x, opt, &bind, ports[i])) != 0)
            goto fail;
    free(ports);
    rds_bind_free(&bind);
    wf_svcs_free(&svcs);
    return out;
fail:
    free(ports);
    rds_bind_free(&bind);
    wf_svcs_free(&svcs);
    json_decref(out);
    return NULL;
}
