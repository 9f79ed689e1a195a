/*
 * inbound.c - a sidecar's inbound clusters and listeners from the Services selecting its pod
 * (see inbound.h).
 */
#include "pilot/inbound.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/protocol.h"
#include "pilot/authn.h"
#include "pilot/authz.h"
#include "pilot/capture.h"
#include "pilot/cds_internal.h"
#include "pilot/lds.h"
#include "pilot/naming.h"
#include "pilot/rds_internal.h"
#include "pilot/sniff.h"
#include "pilot/tcp.h"

#define CLUSTER_TYPE "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define CONNECT_TO   "10s" /* MeshConfig.connectTimeout default */

/* One target port of the pod. */
typedef struct in_port {
    int32_t port;
    bool http;  /* some Service port targeting it declares an HTTP protocol */
    bool sniff; /* some Service port targeting it declares none (Istio sniffs it) */
    bool tcp;   /* some Service port targeting it is TCP (pilot/tcp.h) */
    bool grpc;  /* every HTTP one is gRPC (no inbound retry policy) */
    bool h2;    /* every HTTP one is HTTP2, GRPC or GRPC-Web (an HTTP/2 inbound cluster) */
} in_port;

typedef struct in_ports {
    in_port *v;
    size_t n, cap;
    bool oom;
} in_ports;

/* Called for every (Service, port, target port) of the pod; false stops the walk. */
typedef bool (*target_cb)(const wf_resource *svc, const wf_service_port *sp, int32_t target,
                          void *arg);

static bool selects(const wf_resource *r, const wf_inbound_options *o)
{
    const wf_service *svc = r->t.service;
    if (!svc || !svc->has_selector || svc->selector.n == 0 || !r->name || !*r->name)
        return false;
    if (svc->type && strcmp(svc->type, "ExternalName") == 0)
        return false;
    return wf_kvs_subset(&svc->selector, o->labels);
}

/* The pod's port for a Service port; 0 when a named targetPort resolves to nothing. */
static int32_t target_port(const wf_resource *pod, const wf_service_port *sp)
{
    if (!sp->target_name)
        return sp->target_port > 0 ? sp->target_port : sp->port;
    const wf_pod *p = pod && pod->kind == WF_KIND_POD ? pod->t.pod : NULL;
    for (size_t c = 0; p && c < p->spec.ncontainers; c++) {
        const wf_container *ct = &p->spec.containers[c];
        for (size_t i = 0; i < ct->nports; i++)
            if (ct->ports[i].name && strcmp(ct->ports[i].name, sp->target_name) == 0)
                return ct->ports[i].container_port;
    }
    return 0;
}

static void each_target(const wf_store *s, const wf_inbound_options *o, target_cb cb, void *arg)
{
    size_t n = 0;
    if (!o->ns || !*o->ns || !o->labels)
        return;
    const wf_resource *const *svcs = wf_store_kind_ns(s, WF_KIND_SERVICE, o->ns, &n);
    for (size_t i = 0; i < n; i++) {
        if (!selects(svcs[i], o))
            continue;
        const wf_service *svc = svcs[i]->t.service;
        for (size_t j = 0; j < svc->nports; j++) {
            const wf_service_port *sp = &svc->ports[j];
            if (sp->protocol && strcmp(sp->protocol, "UDP") == 0)
                continue;
            int32_t t = target_port(o->pod, sp);
            if (t > 0 && t <= 65535 && !cb(svcs[i], sp, t, arg))
                return;
        }
    }
}

/* Istio's IsGRPC (grpc, grpc-web) for the port's protocol. */
static bool grpc_port(const wf_service_port *sp)
{
    const char *p = sp->app_protocol ? sp->app_protocol : sp->name ? sp->name : "";
    size_t len = sp->app_protocol ? strlen(p) : strcspn(p, "-");
    return (len == 4 && strncasecmp(p, "grpc", 4) == 0) || strncasecmp(p, "grpc-web", 8) == 0;
}

static bool add_port(const wf_resource *svc, const wf_service_port *sp, int32_t t, void *arg)
{
    (void)svc;
    in_ports *ps = arg;
    wf_protocol pr = wf_protocol_of_kube_port(sp->port, sp->name, sp->protocol, sp->app_protocol);
    bool valid = sp->port > 0 && sp->port <= 65535;
    bool http = valid && wf_protocol_is_http(pr), grpc = http && grpc_port(sp);
    bool sniff = valid && pr == WF_PROTO_UNSUPPORTED;
    bool h2 = pr == WF_PROTO_HTTP2 || pr == WF_PROTO_GRPC || pr == WF_PROTO_GRPC_WEB;
    bool tcp = wf_tcp_service_port(sp);
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].port == t) { /* gRPC only when every HTTP port targeting it is */
            ps->v[i].tcp = ps->v[i].tcp || tcp;
            ps->v[i].sniff = ps->v[i].sniff || sniff;
            if (http) {
                ps->v[i].grpc = ps->v[i].http ? ps->v[i].grpc && grpc : grpc;
                ps->v[i].h2 = ps->v[i].http ? ps->v[i].h2 && h2 : h2;
                ps->v[i].http = true;
            }
            return true;
        }
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 8;
        in_port *v = realloc(ps->v, cap * sizeof *v);
        if (!v) {
            ps->oom = true;
            return false;
        }
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n++] = (in_port){
        .port = t, .http = http, .sniff = sniff, .tcp = tcp, .grpc = grpc, .h2 = http && h2};
    return true;
}

static int cmp_port(const void *a, const void *b)
{
    int32_t x = ((const in_port *)a)->port, y = ((const in_port *)b)->port;
    return (x > y) - (x < y);
}

/* The pod's distinct target ports, ascending. Returns 0, or -1 on OOM (ps freed). */
static int collect(const wf_store *s, const wf_inbound_options *o, in_ports *ps)
{
    *ps = (in_ports){0};
    each_target(s, o, add_port, ps);
    if (ps->oom) {
        free(ps->v);
        *ps = (in_ports){0};
        return -1;
    }
    if (ps->n > 1)
        qsort(ps->v, ps->n, sizeof *ps->v, cmp_port);
    return 0;
}

/* ---------- clusters ---------- */

typedef struct svc_meta {
    int32_t port;
    const char *suffix;
    json_t *list; /* services [{host, name, namespace}] */
    bool oom;
} svc_meta;

static bool add_service_meta(const wf_resource *svc, const wf_service_port *sp, int32_t t,
                             void *arg)
{
    (void)sp;
    svc_meta *m = arg;
    if (t != m->port)
        return true;
    char host[512];
    snprintf(host, sizeof host, "%s.%s.svc.%s", svc->name, svc->ns, m->suffix);
    size_t i;
    json_t *e;
    json_array_foreach(m->list, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "host")), host) == 0)
            return true;
    }
    json_t *o = json_pack("{s:s,s:s,s:s}", "host", host, "name", svc->name, "namespace", svc->ns);
    if (json_array_append_new(m->list, o) != 0) {
        m->oom = true;
        return false;
    }
    return true;
}

static json_t *cluster_metadata(const wf_store *s, const wf_inbound_options *o, int32_t port,
                                const char *suffix)
{
    svc_meta m = {.port = port, .suffix = suffix, .list = json_array()};
    if (!m.list)
        return NULL;
    each_target(s, o, add_service_meta, &m);
    if (m.oom) {
        json_decref(m.list);
        return NULL;
    }
    return json_pack("{s:{s:{s:o}}}", "filter_metadata", "istio", "services", m.list);
}

static json_t *load_assignment(const char *name, const char *addr, int32_t port)
{
    return json_pack("{s:s,s:[{s:[{s:{s:{s:{s:s,s:i}}}}]}]}", "cluster_name", name, "endpoints",
                     "lb_endpoints", "endpoint", "address", "socket_address", "address", addr,
                     "port_value", (int)port);
}

/* setUpstreamProtocol for an inbound cluster: HTTP/2 to the app on an HTTP/2-class port, the
 * downstream's protocol on a sniffed one (cds_internal.h), else nothing; never an h2 upgrade. */
static int inbound_protocol(json_t *c, const in_port *p)
{
    int rc = 0;
    if (p->http && p->h2)
        rc = cds_set_h2(c);
    else if (!p->http && p->sniff)
        rc = cds_set_use_downstream(c);
    return rc == 0 ? cds_finish_protocol(c) : -1;
}

static json_t *inbound_cluster(const wf_store *s, const wf_inbound_options *o, const in_port *p,
                               const char *suffix)
{
    int32_t port = p->port;
    char *name = wf_cluster_name("inbound", port, NULL, NULL);
    if (!name)
        return NULL;
    const char *app = o->app_address ? o->app_address : "127.0.0.1";
    json_t *c = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:{},s:o}", "@type", CLUSTER_TYPE, "name", name,
                          "type", "STATIC", "connect_timeout", CONNECT_TO, "load_assignment",
                          load_assignment(name, app, port), "circuit_breakers",
                          cds_default_circuit_breakers(), "common_lb_config", "metadata",
                          cluster_metadata(s, o, port, suffix));
    free(name);
    if (c && inbound_protocol(c, p) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

json_t *wf_inbound_clusters(const wf_store *store, const wf_inbound_options *opt)
{
    in_ports ps;
    if (!store || !opt || collect(store, opt, &ps) != 0)
        return NULL;
    const char *suffix = opt->domain_suffix ? opt->domain_suffix : wf_store_domain_suffix(store);
    json_t *out = json_array();
    for (size_t i = 0; out && i < ps.n; i++)
        if (json_array_append_new(out, inbound_cluster(store, opt, &ps.v[i], suffix)) != 0) {
            json_decref(out);
            out = NULL;
        }
    free(ps.v);
    return out;
}

/* ---------- listeners ---------- */

/* Istio's inbound route configuration for one port (buildSidecarInboundHTTPRouteConfig). */
static json_t *inbound_route_config(const in_port *p, const char *cluster)
{
    json_t *route = json_pack("{s:s,s:s}", "cluster", cluster, "timeout", "0s");
    if (route && !p->grpc &&
        json_object_set_new(
            route, "retry_policy",
            json_pack("{s:s,s:i}", "retry_on", "reset-before-request", "num_retries", 2)) != 0) {
        json_decref(route);
        return NULL;
    }
    return json_pack("{s:s,s:[{s:o,s:[s],s:[{s:{s:s},s:o,s:s}]}],s:b}", "name", cluster,
                     "virtual_hosts", "name", json_sprintf("inbound|http|%d", (int)p->port),
                     "domains", "*", "routes", "match", "prefix", "/", "route", route, "name",
                     "default", "validate_clusters", 0);
}

/* Istio's inbound mTLS ALPNs a TLS chain of an HTTP-only port matches (security.md §3.1). */
static json_t *istio_alpns(void)
{
    return json_pack("[s,s,s,s,s]", "istio", "istio-peer-exchange", "istio-http/1.0",
                     "istio-http/1.1", "istio-h2");
}

/* Istio's xdsfilters.TLSInspector (security.md §3.3). */
static json_t *tls_inspector(void)
{
    return json_pack("[{s:s,s:{s:s,s:i}}]", "name", "envoy.filters.listener.tls_inspector",
                     "typed_config", "@type",
                     "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3."
                     "TlsInspector",
                     "initial_read_buffer_size", 512);
}

/* One chain in Envoy's field order: filter_chain_match (NULL = none), filters (a deep copy),
 * transport_socket (NULL = none), name. match and ts are consumed, even on failure. */
static json_t *chain(json_t *match, json_t *filters, json_t *ts, const char *name)
{
    return json_pack("{s:o*,s:o,s:o*,s:s}", "filter_chain_match", match, "filters",
                     json_deep_copy(filters), "transport_socket", ts, "name", name);
}

/* The chains of mode (filterchain_options.go, security.md §3.3 "HTTP" row): STRICT: tls ->
 * mTLS+HCM; PERMISSIVE: tls + Istio ALPNs -> mTLS+HCM, raw_buffer -> HCM; DISABLE: HCM. */
static json_t *mode_chains(wf_mtls_mode mode, json_t *filters, const char *name,
                           const wf_meshcfg *mesh)
{
    json_t *out = json_array();
    if (!out)
        return NULL;
    if (mode != WF_MTLS_DISABLE) {
        json_t *m = mode == WF_MTLS_STRICT ? json_pack("{s:s}", "transport_protocol", "tls")
                                           : json_pack("{s:s,s:o}", "transport_protocol", "tls",
                                                       "application_protocols", istio_alpns());
        json_t *ts = wf_authn_inbound_tls(mesh);
        if (!m || !ts || json_array_append_new(out, chain(m, filters, ts, name)) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    if (mode != WF_MTLS_STRICT) {
        json_t *m = mode == WF_MTLS_PERMISSIVE
                        ? json_pack("{s:s}", "transport_protocol", "raw_buffer")
                        : NULL;
        if ((mode == WF_MTLS_PERMISSIVE && !m) ||
            json_array_append_new(out, chain(m, filters, NULL, name)) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Replaces l's single chain with the chains of mode, adds the TLS inspector when a chain matches
 * on transport_protocol, and keeps traffic_direction last (Envoy's field order). l is released
 * on failure. */
static json_t *apply_mode(json_t *l, wf_mtls_mode mode, const wf_meshcfg *mesh)
{
    json_t *filters =
        l ? json_object_get(json_array_get(json_object_get(l, "filter_chains"), 0), "filters")
          : NULL;
    json_t *dir = l ? json_incref(json_object_get(l, "traffic_direction")) : NULL;
    const char *name = l ? json_string_value(json_object_get(l, "name")) : NULL;
    json_t *chains = filters && name ? mode_chains(mode, filters, name, mesh) : NULL;
    if (!chains || !dir) {
        json_decref(chains);
        json_decref(dir);
        json_decref(l);
        return NULL;
    }
    /* set_new consumes its value even on failure */
    int err = json_object_set_new(l, "filter_chains", chains);
    err |= json_object_del(l, "traffic_direction");
    if (mode != WF_MTLS_DISABLE)
        err |= json_object_set_new(l, "listener_filters", tls_inspector());
    err |= json_object_set_new(l, "traffic_direction", dir);
    if (err) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* ---------- sniffed target ports (Istio's ListenerProtocolAuto chains) ---------- */

static json_t *alpn_match(const char *transport, json_t *alpns)
{
    return alpns ? json_pack("{s:s,s:o}", "transport_protocol", transport, "application_protocols",
                             alpns)
                 : json_pack("{s:s}", "transport_protocol", transport);
}

static int add(json_t *out, json_t *c)
{
    return c ? json_array_append_new(out, c) : -1;
}

/* filterchain_options.go inboundPermissiveFilterChainMatchWithMxcOptions,
 * inboundStrictFilterChainMatchOptions, inboundPlainTextFilterChainMatchOptions (inbound.h). */
static json_t *sniff_chains(wf_mtls_mode mode, json_t *http, json_t *tcp, const char *http_name,
                            const char *tcp_name, const wf_meshcfg *mesh)
{
    json_t *out = json_array();
    int rc = out ? 0 : -1;
    if (rc == 0 && mode != WF_MTLS_DISABLE)
        rc = add(out, chain(alpn_match("tls", json_pack("[s,s,s]", "istio-http/1.0",
                                                        "istio-http/1.1", "istio-h2")),
                            http, wf_authn_inbound_tls(mesh), http_name));
    if (rc == 0 && mode != WF_MTLS_STRICT)
        rc = add(out, chain(wf_sniff_http_match(), http, NULL, http_name));
    if (rc == 0 && mode == WF_MTLS_PERMISSIVE)
        rc = add(out, chain(alpn_match("tls", json_pack("[s,s]", "istio-peer-exchange", "istio")),
                            tcp, wf_tcp_inbound_tls(mesh), tcp_name));
    if (rc == 0 && mode != WF_MTLS_STRICT)
        rc = add(out, chain(alpn_match("raw_buffer", NULL), tcp, NULL, tcp_name));
    if (rc == 0 && mode != WF_MTLS_DISABLE) /* STRICT: mTLS; PERMISSIVE: the client's own TLS */
        rc = add(out, chain(alpn_match("tls", NULL), tcp,
                            mode == WF_MTLS_STRICT ? wf_tcp_inbound_tls(mesh) : NULL, tcp_name));
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* l (the port's HTTP listener, released on failure) with the sniffed chains of mode around
 * the HCM and the TCP filters tcp, the TLS inspector (not DISABLE) and the HTTP inspector (not
 * STRICT: only TLS arrives), and Istio's virtualInbound listener_filters_timeout
 * (protocolDetectionTimeout) and continue_on_listener_filters_timeout true. */
static json_t *apply_sniff(json_t *l, wf_mtls_mode mode, const wf_meshcfg *mesh, const json_t *tcp)
{
    json_t *http =
        l ? json_object_get(json_array_get(json_object_get(l, "filter_chains"), 0), "filters")
          : NULL;
    const char *name = l ? json_string_value(json_object_get(l, "name")) : NULL;
    if (mode == WF_MTLS_UNSET)
        mode = WF_MTLS_PERMISSIVE;
    json_t *chains =
        http && tcp && name ? sniff_chains(mode, http, (json_t *)tcp, name, name, mesh) : NULL;
    json_t *lf = mode != WF_MTLS_DISABLE ? tls_inspector() : json_array();
    int err = chains && lf ? 0 : -1;
    if (err == 0 && mode != WF_MTLS_STRICT)
        err = json_array_append_new(lf, wf_sniff_http_inspector());
    if (err == 0) {
        err = json_object_set_new(l, "filter_chains", chains);
        chains = NULL;
    }
    if (err == 0) {
        err = json_object_set_new(l, "listener_filters", lf);
        lf = NULL;
    }
    if (err == 0)
        err = json_object_set_new(l, "listener_filters_timeout", wf_sniff_timeout(mesh));
    if (err == 0)
        err = json_object_set_new(l, "continue_on_listener_filters_timeout", json_true());
    if (err == 0)
        err = wf_sniff_order(l);
    json_decref(chains);
    json_decref(lf);
    if (err != 0) {
        json_decref(l);
        return NULL;
    }
    return l;
}

static json_t *inbound_listener(const in_port *p, const char *bind, const wf_peer_authn *pa,
                                const wf_meshcfg *mesh, const json_t *authz, const json_t *tcp)
{
    char name[128], prefix[48];
    char *cluster = wf_cluster_name("inbound", p->port, NULL, NULL);
    if (!cluster)
        return NULL;
    snprintf(name, sizeof name, "%s_%d", bind, (int)p->port);
    snprintf(prefix, sizeof prefix, "inbound_0.0.0.0_%d", (int)p->port);
    const wf_lds_http spec = {.cls = WF_LDS_SIDECAR_INBOUND,
                              .name = name,
                              .address = bind,
                              .port = p->port,
                              .stat_prefix = prefix,
                              .route_config = inbound_route_config(p, cluster),
                              .grpc = p->grpc};
    free(cluster);
    json_t *l = wf_lds_http_listener(&spec);
    if (l && wf_lds_add_http_filters(l, authz) != 0) {
        json_decref(l);
        l = NULL;
    }
    wf_mtls_mode mode = wf_peer_authn_port_mode(pa, (uint32_t)p->port);
    return tcp ? apply_sniff(l, mode, mesh, tcp) : apply_mode(l, mode, mesh);
}

/* ---------- virtualInbound's passthrough chains (capture) ---------- */

static const in_port *find_port(const in_ports *ps, uint32_t port);

/* Appends the passthrough chains of mode to out, matching destination_port port (0 = any
 * port): sniff_chains around the HCM of http and the TCP filters tcp. 0, -1 on OOM. */
static int passthrough_port(json_t *out, wf_mtls_mode mode, uint32_t port, json_t *http,
                            json_t *tcp, const wf_meshcfg *mesh)
{
    json_t *chains = sniff_chains(mode == WF_MTLS_UNSET ? WF_MTLS_PERMISSIVE : mode, http, tcp,
                                  WF_CHAIN_VIRTUAL_INBOUND_HTTP, WF_CHAIN_VIRTUAL_INBOUND, mesh);
    int rc = chains ? 0 : -1;
    size_t i;
    json_t *fc;
    json_array_foreach(chains, i, fc)
    {
        if (rc == 0 && port)
            rc = wf_capture_match_port(fc, port);
    }
    if (rc == 0)
        rc = json_array_extend(out, chains);
    json_decref(chains);
    return rc;
}

static int cmp_mtls_port(const void *a, const void *b)
{
    uint32_t x = ((const wf_mtls_port *)a)->port, y = ((const wf_mtls_port *)b)->port;
    return (x > y) - (x < y);
}

/* Istio's buildInboundPassthroughChains without the blackhole (capture.c adds it): the chains
 * of authn ForPassthrough's settings, the workload's mode on any port, then each port-level
 * mode of a port no target port has, ascending, on that port. */
static int passthrough_chains(json_t *out, const in_ports *ps, const wf_peer_authn *pa,
                              const wf_meshcfg *mesh, json_t *http, json_t *tcp)
{
    if (passthrough_port(out, pa->mode, 0, http, tcp, mesh) != 0)
        return -1;
    wf_mtls_port *ports = pa->nports ? malloc(pa->nports * sizeof *ports) : NULL;
    if (pa->nports && !ports)
        return -1;
    if (pa->nports) {
        memcpy(ports, pa->ports, pa->nports * sizeof *ports);
        qsort(ports, pa->nports, sizeof *ports, cmp_mtls_port);
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pa->nports; i++)
        if (!find_port(ps, ports[i].port))
            rc = passthrough_port(out, ports[i].mode, ports[i].port, http, tcp, mesh);
    free(ports);
    return rc;
}

/* The listener carrying virtualInbound's passthrough chains (inbound.h, capture). */
static json_t *passthrough_listener(const in_ports *ps, const wf_peer_authn *pa,
                                    const wf_meshcfg *mesh, const json_t *authz,
                                    const json_t *authz_tcp)
{
    const in_port any = {.port = 0};
    const wf_lds_http spec = {.cls = WF_LDS_SIDECAR_INBOUND,
                              .name = WF_CHAIN_VIRTUAL_INBOUND,
                              .address = "0.0.0.0",
                              .port = 15006,
                              .stat_prefix = WF_CLUSTER_INBOUND_PASSTHROUGH,
                              .route_config =
                                  inbound_route_config(&any, WF_CLUSTER_INBOUND_PASSTHROUGH)};
    json_t *l = wf_lds_http_listener(&spec);
    if (l && wf_lds_add_http_filters(l, authz) != 0) {
        json_decref(l);
        l = NULL;
    }
    json_t *http =
        l ? json_object_get(json_array_get(json_object_get(l, "filter_chains"), 0), "filters")
          : NULL;
    json_t *tcp = wf_tcp_inbound_cluster_filters(WF_CLUSTER_INBOUND_PASSTHROUGH, authz_tcp);
    json_t *chains = json_array();
    int err = http && tcp && chains ? passthrough_chains(chains, ps, pa, mesh, http, tcp) : -1;
    json_decref(tcp);
    if (err == 0) {
        err = json_object_set_new(l, "filter_chains", chains);
        chains = NULL;
    }
    if (err == 0)
        err = json_object_set_new(l, "listener_filters_timeout", wf_sniff_timeout(mesh));
    if (err == 0)
        err = json_object_set_new(l, "continue_on_listener_filters_timeout", json_true());
    if (err == 0)
        err = wf_sniff_order(l);
    json_decref(chains);
    if (err != 0) {
        json_decref(l);
        return NULL;
    }
    return l;
}

json_t *wf_inbound_listeners(const wf_store *store, const wf_inbound_options *opt)
{
    in_ports ps;
    if (!store || !opt || collect(store, opt, &ps) != 0)
        return NULL;
    const char *bind = opt->bind && *opt->bind ? opt->bind : "0.0.0.0";
    wf_peer_authn pa;
    const char *root = opt->mesh ? wf_meshcfg_root_ns(opt->mesh) : NULL;
    if (wf_peer_authn_compose(store, root, opt->ns, opt->labels, &pa) != 0) {
        free(ps.v);
        return NULL;
    }
    const wf_authz_options ao = {.ns = opt->ns, .labels = opt->labels, .mesh = opt->mesh};
    json_t *authz = wf_authz_http_filters(store, &ao);
    json_t *authz_tcp = authz ? wf_authz_tcp_filters(store, &ao) : NULL;
    json_t *out = authz_tcp ? json_array() : NULL;
    for (size_t i = 0; out && i < ps.n; i++) {
        const in_port *p = &ps.v[i];
        json_t *l = NULL;
        if (p->http) { /* a declared HTTP protocol wins the port, then sniffing, then TCP */
            l = inbound_listener(p, bind, &pa, opt->mesh, authz, NULL);
        } else if (p->sniff) {
            json_t *tcp = wf_tcp_inbound_filters(p->port, authz_tcp);
            l = tcp ? inbound_listener(p, bind, &pa, opt->mesh, authz, tcp) : NULL;
            json_decref(tcp);
        } else if (p->tcp)
            l = wf_tcp_inbound_listener(p->port, bind,
                                        wf_peer_authn_port_mode(&pa, (uint32_t)p->port), opt->mesh,
                                        authz_tcp);
        else
            continue;
        if (json_array_append_new(out, l) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    if (out && opt->capture &&
        json_array_append_new(out, passthrough_listener(&ps, &pa, opt->mesh, authz, authz_tcp)) !=
            0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(authz);
    json_decref(authz_tcp);
    wf_peer_authn_free(&pa);
    free(ps.v);
    return out;
}

/* ---------- PeerAuthentication modes no chain carries ---------- */

static bool label_or_annotation(const wf_resource *r, const char *key, const char *value)
{
    const char *v = wf_kvs_get(&r->labels, key);
    if (!v)
        v = wf_kvs_get(&r->annotations, key);
    return v && strcmp(v, value) == 0;
}

/* Gateway pods and pods without a sidecar take no inbound PeerAuthentication chains. */
static bool sidecar_pod(const wf_store *s, const wf_resource *pod)
{
    const char *istio = wf_kvs_get(&pod->labels, "istio");
    if (label_or_annotation(pod, "sidecar.istio.io/inject", "false") ||
        (istio && (strcmp(istio, "ingressgateway") == 0 || strcmp(istio, "egressgateway") == 0)))
        return false;
    size_t n = 0;
    const wf_resource *const *gws = wf_store_kind(s, WF_KIND_GATEWAY, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_gateway *g = gws[i]->t.gateway;
        if (g && g->has_selector && g->selector.n && wf_kvs_subset(&g->selector, &pod->labels))
            return false;
    }
    return true;
}

typedef struct gap_walk {
    wf_inbound_gap_cb cb;
    void *arg;
    wf_inbound_gap *seen; /* reported (policy, port) pairs */
    size_t n, cap;
    bool stop;
} gap_walk;

/* Reports g unless its (policy, port) was. -1 on OOM. */
static int report_gap(gap_walk *w, const wf_inbound_gap *g)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->seen[i].policy == g->policy && w->seen[i].port == g->port)
            return 0;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 8;
        wf_inbound_gap *v = realloc(w->seen, cap * sizeof *v);
        if (!v)
            return -1;
        w->seen = v;
        w->cap = cap;
    }
    w->seen[w->n++] = *g;
    w->stop = !w->cb(g, w->arg);
    return 0;
}

static const in_port *find_port(const in_ports *ps, uint32_t port)
{
    for (size_t i = 0; i < ps->n; i++)
        if ((uint32_t)ps->v[i].port == port)
            return &ps->v[i];
    return NULL;
}

/* The narrowest policy whose spec.mtls set the workload mode. */
static const wf_resource *mode_setter(const wf_peer_authn *pa)
{
    const wf_resource *chain[3] = {pa->wl, pa->ns, pa->mesh};
    for (int i = 0; i < 3; i++)
        if (chain[i] && wf_mtls_mode_of(wf_map_get(chain[i]->spec, "mtls")) != WF_MTLS_UNSET)
            return chain[i];
    return NULL;
}

static int pod_gaps(const wf_store *s, const char *root, const wf_resource *pod, gap_walk *w)
{
    const wf_inbound_options o = {.ns = pod->ns, .labels = &pod->labels, .pod = pod};
    in_ports ps;
    wf_peer_authn pa;
    if (collect(s, &o, &ps) != 0)
        return -1;
    if (wf_peer_authn_compose(s, root, pod->ns, &pod->labels, &pa) != 0) {
        free(ps.v);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && !w->stop && i < pa.nports; i++) {
        const in_port *p = find_port(&ps, pa.ports[i].port);
        if (!p || !(p->http || p->sniff || p->tcp))
            rc = report_gap(w, &(wf_inbound_gap){.policy = pa.wl,
                                                 .pod = pod,
                                                 .port = pa.ports[i].port,
                                                 .mode = pa.ports[i].mode,
                                                 .port_level = true});
    }
    const wf_resource *setter = mode_setter(&pa);
    for (size_t i = 0; rc == 0 && !w->stop && setter && i < ps.n; i++) {
        uint32_t port = (uint32_t)ps.v[i].port;
        bool named = false;
        for (size_t k = 0; k < pa.nports; k++)
            named = named || pa.ports[k].port == port;
        if (!ps.v[i].http && !ps.v[i].sniff && !ps.v[i].tcp && !named && pa.mode == WF_MTLS_STRICT)
            rc = report_gap(
                w, &(wf_inbound_gap){.policy = setter, .pod = pod, .port = port, .mode = pa.mode});
    }
    wf_peer_authn_free(&pa);
    free(ps.v);
    return rc;
}

int wf_inbound_authn_gaps(const wf_store *store, const char *root_ns, wf_inbound_gap_cb cb,
                          void *arg)
{
    if (!store || !cb)
        return -1;
    gap_walk w = {.cb = cb, .arg = arg};
    size_t n = 0;
    wf_store_kind(store, WF_KIND_PEERAUTHENTICATION, &n);
    if (n == 0) /* nothing to compose: every port is PERMISSIVE (no gap), and no pod walk */
        return 0;
    const wf_resource *const *pods = wf_store_kind(store, WF_KIND_POD, &n);
    int rc = 0;
    for (size_t i = 0; rc == 0 && !w.stop && i < n; i++)
        if (pods[i]->ns && *pods[i]->ns && sidecar_pod(store, pods[i]))
            rc = pod_gaps(store, root_ns, pods[i], &w);
    free(w.seen);
    return rc == 0 ? (int)w.n : -1;
}

static const wf_node *gap_node(const wf_inbound_gap *g)
{
    if (!g->port_level)
        return wf_map_get(wf_map_get(g->policy->spec, "mtls"), "mode");
    const wf_node *plm = wf_map_get(g->policy->spec, "portLevelMtls");
    for (size_t i = 0; plm && plm->type == WF_NODE_MAP && i < plm->len; i++) {
        const char *k = plm->u.entries[i].key;
        if (k && strtoul(k, NULL, 10) == g->port)
            return plm->u.entries[i].value;
    }
    return NULL;
}

const wf_node *wf_inbound_gap_describe(const wf_inbound_gap *g, char *field, size_t fcap,
                                       char *detail, size_t dcap, bool *security)
{
    *security = g->mode == WF_MTLS_STRICT;
    if (g->port_level)
        snprintf(field, fcap, "spec.portLevelMtls[%u].mode", (unsigned)g->port);
    else
        snprintf(field, fcap, "spec.mtls.mode");
    snprintf(detail, dcap,
             "on port %u of pod %s/%s: it is not a Service target port of the pod, and only "
             "those have inbound listeners in weft; %s",
             (unsigned)g->port, g->pod->ns, g->pod->name,
             *security ? "plaintext connections to the port are not refused by the sidecar"
                       : "no filter chain carries the mode");
    return gap_node(g);
}
