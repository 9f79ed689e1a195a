/*
 * gateway.c - a router proxy's listeners and `http.<port>` route configurations from the
 * Gateways selecting it and the VirtualServices bound to them (see gateway.h).
 */
#include "pilot/gateway.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pilot/authz.h"
#include "pilot/gateway_hosts.h"
#include "pilot/gateway_tcp.h"
#include "pilot/gateway_tls.h"
#include "pilot/lds.h"
#include "pilot/rds_internal.h"
#include "pilot/tcp.h"

#define RC_TYPE "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

/* One selected HTTP server and the port its listener takes. */
typedef struct gw_server {
    const wf_resource *gw;
    const wf_gateway_server *srv;
    int32_t listen;
    bool tls;     /* terminates TLS (gateway_tls.h) */
    bool pass;    /* TLS passthrough or TCP: network chains (gateway_tcp.h) */
    size_t order; /* for a stable sort */
} gw_server;

typedef struct gw_ctx {
    const wf_store *s;
    const wf_gateway_options *o;
    const char *suffix;
    gw_server *v;
    size_t n, cap;
} gw_ctx;

/* ---------- which servers, on which ports ---------- */

static bool selects(const wf_resource *r, const wf_gateway_options *o)
{
    const wf_gateway *g = r->t.gateway;
    if (!g)
        return false;
    if (!g->has_selector || g->selector.n == 0)
        return true;
    return o->proxy_labels && wf_kvs_subset(&g->selector, o->proxy_labels);
}

static bool http_server(const wf_gateway_server *srv)
{
    const char *p = srv->protocol ? srv->protocol : "";
    return srv->port > 0 && srv->port <= 65535 &&
           (!strcasecmp(p, "HTTP") || !strcasecmp(p, "HTTP2") || !strcasecmp(p, "GRPC"));
}

static int32_t pod_port(const wf_resource *pod, const char *name)
{
    const wf_pod *p = pod && pod->kind == WF_KIND_POD ? pod->t.pod : NULL;
    for (size_t c = 0; p && c < p->spec.ncontainers; c++)
        for (size_t i = 0; i < p->spec.containers[c].nports; i++) {
            const wf_container_port *cp = &p->spec.containers[c].ports[i];
            if (cp->name && !strcmp(cp->name, name))
                return cp->container_port;
        }
    return 0;
}

/* The targetPort of `port` on a Service selecting the pod; the port itself without one. */
static int32_t listener_port(const gw_ctx *x, int32_t port)
{
    size_t n = 0;
    const char *ns = x->o->proxy_ns && *x->o->proxy_ns ? x->o->proxy_ns : "";
    const wf_resource *const *svcs = wf_store_kind_ns(x->s, WF_KIND_SERVICE, ns, &n);
    for (size_t i = 0; i < n && x->o->proxy_labels; i++) {
        const wf_service *svc = svcs[i]->t.service;
        if (!svc || !svc->has_selector || svc->selector.n == 0 ||
            !wf_kvs_subset(&svc->selector, x->o->proxy_labels))
            continue;
        for (size_t j = 0; j < svc->nports; j++) {
            const wf_service_port *sp = &svc->ports[j];
            if (sp->port != port || (sp->protocol && !strcmp(sp->protocol, "UDP")))
                continue;
            int32_t t = sp->target_name       ? pod_port(x->o->pod, sp->target_name)
                        : sp->target_port > 0 ? sp->target_port
                                              : sp->port;
            if (t > 0 && t <= 65535)
                return t;
        }
    }
    return port;
}

static int add_server(gw_ctx *x, const wf_resource *gw, const wf_gateway_server *srv)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        gw_server *v = realloc(x->v, cap * sizeof *v);
        if (!v)
            return -1;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n] = (gw_server){.gw = gw,
                             .srv = srv,
                             .listen = listener_port(x, srv->port),
                             .tls = wf_gw_tls_server(srv),
                             .pass = wf_gw_passthrough_server(srv) || wf_gw_tcp_server(srv)};
    x->v[x->n].order = x->n;
    x->n++;
    return 0;
}

static int cmp_server(const void *a, const void *b)
{
    const gw_server *x = a, *y = b;
    if (x->listen != y->listen)
        return (x->listen > y->listen) - (x->listen < y->listen);
    return (x->order > y->order) - (x->order < y->order);
}

/* Fill x->v with the selected HTTP and TLS-terminating servers, by listener port then load
 * order. */
static int collect(gw_ctx *x)
{
    size_t n = 0;
    const wf_resource *const *gws = wf_store_kind(x->s, WF_KIND_GATEWAY, &n);
    for (size_t i = 0; i < n; i++) {
        if (!selects(gws[i], x->o))
            continue;
        const wf_gateway *g = gws[i]->t.gateway;
        for (size_t j = 0; j < g->nservers; j++)
            if ((http_server(&g->servers[j]) || wf_gw_tls_server(&g->servers[j]) ||
                 wf_gw_passthrough_server(&g->servers[j]) || wf_gw_tcp_server(&g->servers[j])) &&
                add_server(x, gws[i], &g->servers[j]) != 0)
                return -1;
    }
    if (x->n > 1)
        qsort(x->v, x->n, sizeof *x->v, cmp_server);
    return 0;
}

static int ctx_init(gw_ctx *x, const wf_store *s, const wf_gateway_options *o)
{
    *x = (gw_ctx){.s = s, .o = o};
    x->suffix = o->domain_suffix ? o->domain_suffix : wf_store_domain_suffix(s);
    if (collect(x) != 0) {
        free(x->v);
        return -1;
    }
    return 0;
}

/* ---------- listeners ---------- */

/* The end of the group of servers sharing x->v[from].listen. */
static size_t group_end(const gw_ctx *x, size_t from)
{
    size_t j = from + 1;
    while (j < x->n && x->v[j].listen == x->v[from].listen)
        j++;
    return j;
}

static bool group_has_tls(const gw_ctx *x, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (x->v[i].tls)
            return true;
    return false;
}

/* A port with TLS servers: tls_inspector and one chain per TLS server (gateway_tls.h); the
 * plain HTTP servers of that port are left out (Istio refuses to mix them on one port). */
static json_t *tls_listener(const gw_ctx *x, size_t from, size_t to, const char *bind)
{
    char rds[24];
    snprintf(rds, sizeof rds, "http.%d", (int)x->v[from].listen);
    json_t *l = wf_lds_port_listener(WF_LDS_GATEWAY, x->v[from].listen, bind, rds);
    json_t *chains = json_array();
    bool ok = l && chains;
    for (size_t i = from; ok && i < to; i++)
        if (x->v[i].tls)
            ok = json_array_append_new(
                     chains, wf_gw_tls_chain(x->v[i].gw, x->v[i].srv, x->v[i].listen)) == 0;
    if (ok)
        ok = json_object_set_new(l, "listener_filters", wf_gw_tls_listener_filters()) == 0 &&
             json_object_set(l, "filter_chains", chains) == 0;
    json_decref(chains);
    if (!ok) {
        json_decref(l);
        return NULL;
    }
    return l;
}

static bool group_has_pass(const gw_ctx *x, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (x->v[i].pass)
            return true;
    return false;
}

/* A port with passthrough servers: the TLS-terminating chains (if any), then the SNI chains of
 * gateway_tcp.h with the network RBAC filters authz; plain HTTP servers left out. */
static json_t *pass_listener(const gw_ctx *x, size_t from, size_t to, const char *bind,
                             const json_t *authz)
{
    char name[32];
    snprintf(name, sizeof name, "0.0.0.0_%d", (int)x->v[from].listen);
    json_t *l =
        group_has_tls(x, from, to)
            ? tls_listener(x, from, to, bind)
            : json_pack("{s:s,s:s,s:{s:{s:s,s:i}},s:o,s:[],s:s}", "@type",
                        "type.googleapis.com/envoy.config.listener.v3.Listener", "name", name,
                        "address", "socket_address", "address", bind, "port_value",
                        (int)x->v[from].listen, "listener_filters", wf_gw_tls_listener_filters(),
                        "filter_chains", "traffic_direction", "OUTBOUND");
    json_t *chains = json_object_get(l, "filter_chains");
    const char *root = x->o->mesh ? wf_meshcfg_root_ns(x->o->mesh) : NULL;
    for (size_t i = from; l && i < to; i++) {
        const wf_gw_tcp_in in = {.s = x->s,
                                 .gw = x->v[i].gw,
                                 .srv = x->v[i].srv,
                                 .proxy_ns = x->o->proxy_ns,
                                 .proxy_labels = x->o->proxy_labels,
                                 .suffix = x->suffix,
                                 .root_ns = root,
                                 .authz = authz};
        if (x->v[i].pass && wf_gw_passthrough_chains(&in, chains) != 0) {
            json_decref(l);
            l = NULL;
        }
    }
    bool sni = group_has_tls(x, from, to);
    for (size_t i = 0; l && !sni && i < json_array_size(chains); i++)
        sni = json_object_get(json_object_get(json_array_get(chains, i), "filter_chain_match"),
                              "server_names") != NULL;
    if (l && !sni) /* a TCP server's chain: no SNI to inspect */
        json_object_del(l, "listener_filters");
    return l;
}

static json_t *gateway_listener(const gw_ctx *x, size_t from, size_t to, const char *bind,
                                const json_t *authz_tcp)
{
    if (group_has_pass(x, from, to))
        return pass_listener(x, from, to, bind, authz_tcp);
    if (group_has_tls(x, from, to))
        return tls_listener(x, from, to, bind);
    char rds[24];
    snprintf(rds, sizeof rds, "http.%d", (int)x->v[from].listen);
    /* Istio's httpOpts.protocol of a plaintext port is its first server's: GRPC gets
     * envoy.filters.http.grpc_stats */
    const char *p = x->v[from].srv->protocol;
    return wf_lds_port_listener_grpc(WF_LDS_GATEWAY, x->v[from].listen, bind, rds,
                                     p && !strcasecmp(p, "GRPC"));
}

json_t *wf_gateway_listeners(const wf_store *store, const wf_gateway_options *opt)
{
    gw_ctx x;
    if (!store || !opt || ctx_init(&x, store, opt) != 0)
        return NULL;
    const char *bind = opt->bind && *opt->bind ? opt->bind : "0.0.0.0";
    /* AuthorizationPolicies whose selector matches the gateway pod apply to its listeners */
    const wf_authz_options ao = {
        .ns = opt->proxy_ns, .labels = opt->proxy_labels, .mesh = opt->mesh};
    json_t *authz = wf_authz_http_filters(store, &ao);
    json_t *authz_tcp = authz ? wf_authz_tcp_filters(store, &ao) : NULL;
    json_t *out = authz_tcp ? json_array() : NULL;
    for (size_t i = 0; out && i < x.n;) {
        size_t j = group_end(&x, i);
        json_t *l = gateway_listener(&x, i, j, bind, authz_tcp);
        if (l && wf_lds_add_http_filters(l, authz) != 0) {
            json_decref(l);
            l = NULL;
        }
        if (l && json_array_size(json_object_get(l, "filter_chains")) == 0) {
            json_decref(l); /* Istio omits a listener without chains (no route bound) */
        } else if (json_array_append_new(out, l) != 0) {
            json_decref(out);
            out = NULL;
        }
        i = j;
    }
    json_decref(authz);
    json_decref(authz_tcp);
    free(x.v);
    return out;
}

/* ---------- which VirtualServices and hosts ---------- */

/* Names.Intersection of the server's and the VirtualService's hosts into hosts (an array of
 * strings, no duplicates). Returns 0, -1 on OOM. */
static int intersect(const gw_ctx *x, const gw_server *gs, const wf_resource *vs, json_t *hosts)
{
    for (size_t i = 0; i < gs->srv->hosts.n; i++) {
        const char *sh = wf_gw_server_host(gs->srv->hosts.v[i], vs->ns, gs->gw->ns);
        for (size_t j = 0; sh && j < vs->t.vs->hosts.n; j++) {
            char *vh = rds_resolve_host(vs->t.vs->hosts.v[j], vs->ns, x->suffix);
            if (!vh)
                return -1;
            const char *pick = wf_gw_host_subset(sh, vh)   ? sh
                               : wf_gw_host_subset(vh, sh) ? vh
                                                           : NULL;
            bool seen = false;
            for (size_t k = 0; pick && k < json_array_size(hosts) && !seen; k++)
                seen = !strcmp(json_string_value(json_array_get(hosts, k)), pick);
            int rc = pick && !seen ? json_array_append_new(hosts, json_string(pick)) : 0;
            free(vh);
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

/* ---------- virtual hosts ---------- */

typedef struct rc_build {
    const gw_ctx *x;
    json_t *vhosts; /* object host -> virtual host */
} rc_build;

/* tls.httpsRedirect: Istio gives the server's virtual hosts require_tls ALL (a 301 to https
 * for every request that did not come over TLS). */
static bool https_redirect(const wf_gateway_server *srv)
{
    const wf_node *r = wf_map_get(srv->tls, "httpsRedirect");
    const char *v = wf_node_str(r);
    return v && !strcmp(v, "true");
}

static int add_to_vhost(rc_build *b, const char *host, const wf_gateway_server *srv, json_t *routes)
{
    json_t *v = json_object_get(b->vhosts, host);
    if (!v) {
        json_t *copy = json_copy(routes);
        v = json_pack("{s:o,s:[s],s:o,s:b}", "name", json_sprintf("%s:%d", host, (int)srv->port),
                      "domains", host, "routes", copy, "include_request_attempt_count", 1);
        if (json_object_set_new(b->vhosts, host, v) != 0)
            return -1;
    } else if (json_array_extend(json_object_get(v, "routes"), routes) != 0) {
        return -1;
    }
    return https_redirect(srv) ? json_object_set_new(v, "require_tls", json_string("ALL")) : 0;
}

/* The routes of one VirtualService on one server into its intersecting hosts. */
static int add_vs(rc_build *b, const gw_server *gs, const wf_resource *vs)
{
    json_t *hosts = json_array(), *routes = json_array();
    char gname[512];
    snprintf(gname, sizeof gname, "%s/%s", gs->gw->ns, gs->gw->name);
    const char *pns = b->x->o->proxy_ns && *b->x->o->proxy_ns ? b->x->o->proxy_ns : NULL;
    const rds_ctx rx = {.s = b->x->s,
                        .proxy_ns = pns,
                        .suffix = b->x->suffix,
                        .proxy_labels = b->x->o->proxy_labels,
                        .default_retries = b->x->o->default_retries,
                        .gateway = gname};
    int rc = hosts && routes ? intersect(b->x, gs, vs, hosts) : -1;
    if (rc == 0 && json_array_size(hosts) > 0)
        rc = rds_vs_routes(&rx, vs, gs->srv->port, routes);
    for (size_t i = 0; rc == 0 && json_array_size(routes) > 0 && i < json_array_size(hosts); i++)
        rc = add_to_vhost(b, json_string_value(json_array_get(hosts, i)), gs->srv, routes);
    json_decref(hosts);
    json_decref(routes);
    return rc;
}

static int add_server_vhosts(rc_build *b, const gw_server *gs)
{
    size_t n = 0;
    const char *pns = b->x->o->proxy_ns && *b->x->o->proxy_ns ? b->x->o->proxy_ns : NULL;
    const wf_resource *const *vss = wf_store_kind(b->x->s, WF_KIND_VIRTUALSERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *vs = vss[i];
        if (!vs->t.vs || !rds_vs_visible(vs, pns) || !wf_gw_vs_binds(vs, gs->gw))
            continue;
        if (add_vs(b, gs, vs) != 0)
            return -1;
    }
    return 0;
}

/* SortVHostRoutes: catch-all routes last, the others in order. */
static int sort_routes(json_t *vhost)
{
    json_t *routes = json_object_get(vhost, "routes"), *tail = json_array();
    if (!tail)
        return -1;
    for (size_t i = 0; i < json_array_size(routes);) {
        json_t *r = json_array_get(routes, i);
        if (!rds_catch_all_route(r)) {
            i++;
            continue;
        }
        if (json_array_append(tail, r) != 0 || json_array_remove(routes, i) != 0) {
            json_decref(tail);
            return -1;
        }
    }
    int rc = json_array_extend(routes, tail);
    json_decref(tail);
    return rc;
}

static int cmp_vhost(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "name"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "name"));
    return strcmp(x ? x : "", y ? y : "");
}

/* The virtual hosts of b->vhosts sorted by name (SortVirtualHosts), or Istio's blackhole. */
static json_t *vhost_list(rc_build *b, int32_t first_port)
{
    size_t n = json_object_size(b->vhosts), i = 0;
    if (n == 0)
        return json_pack("[{s:o,s:[s],s:[]}]", "name",
                         json_sprintf("blackhole:%d", (int)first_port), "domains", "*", "routes");
    json_t **v = calloc(n, sizeof *v), *out = json_array();
    const char *k;
    json_t *vh;
    int rc = v && out ? 0 : -1;
    json_object_foreach(b->vhosts, k, vh)
    {
        if (rc != 0)
            break;
        v[i++] = vh;
        rc = sort_routes(vh);
    }
    if (rc == 0)
        qsort(v, n, sizeof *v, cmp_vhost);
    for (i = 0; rc == 0 && i < n; i++)
        rc = json_array_append(out, v[i]);
    free(v);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The route configuration name of the servers x->v[from, to) sharing one listener port, with
 * tls: the TLS server x->v[from] alone (its https.* name), else the plain HTTP servers. */
static json_t *route_config(const gw_ctx *x, size_t from, size_t to, bool tls)
{
    rc_build b = {.x = x, .vhosts = json_object()};
    int rc = b.vhosts ? 0 : -1;
    int32_t first_port = 0;
    for (size_t i = from; rc == 0 && i < to; i++) {
        if (x->v[i].tls != tls || x->v[i].pass)
            continue;
        first_port = first_port ? first_port : x->v[i].srv->port;
        rc = add_server_vhosts(&b, &x->v[i]);
    }
    json_t *vhosts = rc == 0 ? vhost_list(&b, first_port) : NULL;
    json_decref(b.vhosts);
    if (!vhosts)
        return NULL;
    char name[512];
    if (tls)
        wf_gw_https_route_name(x->v[from].gw, x->v[from].srv, name, sizeof name);
    else
        snprintf(name, sizeof name, "http.%d", (int)x->v[from].listen);
    return json_pack("{s:s,s:s,s:o,s:b,s:b}", "@type", RC_TYPE, "name", name, "virtual_hosts",
                     vhosts, "validate_clusters", 0, "ignore_port_in_host_matching", 1);
}

/* The route configurations of one listener port: "http.<port>" for its plain HTTP servers (a
 * port without TLS servers), one "https.*" per TLS server. 0 or -1 (OOM). */
static int port_route_configs(const gw_ctx *x, size_t from, size_t to, json_t *out)
{
    if (!group_has_tls(x, from, to)) /* a passthrough port has no HCM (gateway_tcp.h) */
        return group_has_pass(x, from, to)
                   ? 0
                   : json_array_append_new(out, route_config(x, from, to, false));
    for (size_t i = from; i < to; i++)
        if (x->v[i].tls && json_array_append_new(out, route_config(x, i, i + 1, true)) != 0)
            return -1;
    return 0;
}

json_t *wf_gateway_route_configs(const wf_store *store, const wf_gateway_options *opt)
{
    gw_ctx x;
    if (!store || !opt || ctx_init(&x, store, opt) != 0)
        return NULL;
    json_t *out = json_array();
    for (size_t i = 0; out && i < x.n;) {
        size_t j = group_end(&x, i);
        if (port_route_configs(&x, i, j, out) != 0) {
            json_decref(out);
            out = NULL;
        }
        i = j;
    }
    free(x.v);
    return out;
}
