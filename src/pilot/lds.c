/*
 * lds.c - a sidecar's outbound HTTP listeners: one per HTTP service port, each with Istio's
 * HTTP connection manager fetching route configuration "<port>" over ADS (see lds.h).
 */
#include "pilot/lds.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/protocol.h"
#include "pilot/nds.h"
#include "pilot/rds_internal.h"
#include "pilot/sniff.h"
#include "pilot/tcp.h"

#define LISTENER_TYPE "type.googleapis.com/envoy.config.listener.v3.Listener"
#define HCM_NAME      "envoy.filters.network.http_connection_manager"
#define HCM_TYPE                                                                                   \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define TYPED_STRUCT "type.googleapis.com/udpa.type.v1.TypedStruct"
#define MX_URL       "type.googleapis.com/io.istio.http.peer_metadata.Config"
#define STATS_URL    "type.googleapis.com/stats.PluginConfig"
#define FAULT_TYPE   "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
#define CORS_TYPE    "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"
#define ROUTER_TYPE  "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
#define GRPC_STATS_TYPE                                                                            \
    "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig"

/* istio.metadata_exchange as Istio writes it: xdsfilters.SidecarOutboundMetadataFilter (sidecar
 * outbound and gateway) or SidecarInboundMetadataFilter (sidecar inbound). */
static json_t *mx_filter(bool inbound)
{
    const char *disc = inbound ? "downstream_discovery" : "upstream_discovery";
    const char *prop = inbound ? "downstream_propagation" : "upstream_propagation";
    return json_pack("{s:s,s:{s:s,s:s,s:{s:[{s:{}},{s:{}}],s:[{s:{}}]}}}", "name",
                     "istio.metadata_exchange", "typed_config", "@type", TYPED_STRUCT, "type_url",
                     MX_URL, "value", disc, "istio_headers", "workload_discovery", prop,
                     "istio_headers");
}

static json_t *typed_filter(const char *name, const char *type)
{
    return json_pack("{s:s,s:{s:s}}", "name", name, "typed_config", "@type", type);
}

/* istio.stats: the reporter follows the listener direction; the Host header fallback for
 * destination_service is disabled on inbound and gateway listeners (Istio's telemetry.go). */
static json_t *stats_filter(wf_lds_class cls)
{
    json_t *value = cls == WF_LDS_SIDECAR_OUTBOUND
                        ? json_object()
                        : json_pack("{s:b}", "disable_host_header_fallback", 1);
    return json_pack("{s:s,s:{s:s,s:s,s:o}}", "name", "istio.stats", "typed_config", "@type",
                     TYPED_STRUCT, "type_url", STATS_URL, "value", value);
}

/* xdsfilters.GrpcStats: message counts as filter state for istio.stats, no per-method stats. */
static json_t *grpc_stats_filter(void)
{
    return json_pack("{s:s,s:{s:s,s:b,s:b}}", "name", "envoy.filters.http.grpc_stats",
                     "typed_config", "@type", GRPC_STATS_TYPE, "emit_filter_state", 1,
                     "stats_for_all_methods", 0);
}

/* Istio's HTTP filter chain; a gRPC port (IsGRPC) gets envoy.filters.http.grpc_stats where
 * buildHTTPConnectionManager appends it: after the exchange and the authorization filters
 * (wf_lds_add_http_filters inserts those right after the exchange), before fault. */
static json_t *http_filters(wf_lds_class cls, bool grpc)
{
    json_t *hf = json_pack("[o,o,o,o,o]", mx_filter(cls == WF_LDS_SIDECAR_INBOUND),
                           typed_filter("envoy.filters.http.fault", FAULT_TYPE),
                           typed_filter("envoy.filters.http.cors", CORS_TYPE), stats_filter(cls),
                           typed_filter("envoy.filters.http.router", ROUTER_TYPE));
    if (hf && grpc && json_array_insert_new(hf, 1, grpc_stats_filter()) != 0) {
        json_decref(hf);
        return NULL;
    }
    return hf;
}

/* route_config_name over ADS, or the inline configuration (consumed). */
static int set_routes(json_t *h, const wf_lds_http *spec)
{
    if (!spec->rds_name)
        return json_object_set_new(h, "route_config", spec->route_config);
    json_decref(spec->route_config);
    json_t *rds = json_pack("{s:s,s:{s:{},s:s}}", "route_config_name", spec->rds_name,
                            "config_source", "ads", "resource_api_version", "V3");
    return json_object_set_new(h, "rds", rds);
}

static json_t *hcm(const wf_lds_http *spec)
{
    /* Envoy's field order: stat_prefix, rds / route_config, http_filters, ... */
    json_t *h = json_pack("{s:s,s:s}", "@type", HCM_TYPE, "stat_prefix", spec->stat_prefix);
    if (!h) {
        json_decref(spec->route_config);
        return NULL;
    }
    json_t *rest = set_routes(h, spec) == 0
                       ? json_pack("{s:o,s:s,s:b}", "http_filters",
                                   http_filters(spec->cls, spec->grpc), "server_name",
                                   "istio-envoy", "use_remote_address", spec->cls == WF_LDS_GATEWAY)
                       : NULL;
    if (rest && spec->cls == WF_LDS_SIDECAR_INBOUND && /* the app learns its caller */
        json_object_update_missing_new(
            rest,
            json_pack("{s:s,s:{s:b,s:b,s:b}}", "forward_client_cert_details", "APPEND_FORWARD",
                      "set_current_client_cert_details", "subject", 1, "dns", 1, "uri", 1)) != 0) {
        json_decref(rest);
        rest = NULL;
    }
    if (rest &&
        json_object_update_missing_new(
            rest, json_pack("{s:s,s:b,s:s}", "stream_idle_timeout", "0s", "normalize_path", 1,
                            "path_with_escaped_slashes_action", "KEEP_UNCHANGED")) != 0) {
        json_decref(rest);
        rest = NULL;
    }
    if (!rest || json_object_update(h, rest) != 0) {
        json_decref(rest);
        json_decref(h);
        return NULL;
    }
    json_decref(rest);
    return h;
}

json_t *wf_lds_http_listener(const wf_lds_http *spec)
{
    if (!spec || !spec->name || !spec->address || !spec->stat_prefix ||
        (!spec->rds_name && !spec->route_config)) {
        if (spec)
            json_decref(spec->route_config);
        return NULL;
    }
    const char *dir = spec->cls == WF_LDS_SIDECAR_INBOUND ? "INBOUND" : "OUTBOUND";
    return json_pack("{s:s,s:s,s:{s:{s:s,s:i}},s:[{s:[{s:s,s:o}]}],s:s}", "@type", LISTENER_TYPE,
                     "name", spec->name, "address", "socket_address", "address", spec->address,
                     "port_value", (int)spec->port, "filter_chains", "filters", "name", HCM_NAME,
                     "typed_config", hcm(spec), "traffic_direction", dir);
}

json_t *wf_lds_port_listener(wf_lds_class cls, int32_t port, const char *bind, const char *rds_name)
{
    return wf_lds_port_listener_grpc(cls, port, bind, rds_name, false);
}

json_t *wf_lds_port_listener_grpc(wf_lds_class cls, int32_t port, const char *bind,
                                  const char *rds_name, bool grpc)
{
    char name[32], prefix[48];
    snprintf(name, sizeof name, "0.0.0.0_%d", (int)port);
    snprintf(prefix, sizeof prefix, "outbound_0.0.0.0_%d", (int)port);
    const wf_lds_http spec = {.cls = cls,
                              .name = name,
                              .address = bind,
                              .port = port,
                              .stat_prefix = prefix,
                              .rds_name = rds_name,
                              .grpc = grpc};
    return wf_lds_http_listener(&spec);
}

/* Istio's httpOpts.protocol of an outbound port's HCM is the port's protocol in the first
 * service (service order) that declares one for it: whether that is gRPC (IsGRPC: GRPC or
 * GRPC-Web; by port name or appProtocol). */
static bool grpc_port(const wf_svcs *svcs, int32_t port)
{
    for (size_t i = 0; i < svcs->n; i++) {
        const wf_service_port *p = wf_svc_port(&svcs->v[i], port);
        wf_protocol pr =
            p ? wf_protocol_of_kube_port(p->port, p->name, p->protocol, p->app_protocol)
              : WF_PROTO_UNSUPPORTED;
        if (pr != WF_PROTO_UNSUPPORTED)
            return pr == WF_PROTO_GRPC || pr == WF_PROTO_GRPC_WEB;
    }
    return false;
}

static json_t *listener(int32_t port, const char *bind, bool grpc)
{
    char rds[16];
    snprintf(rds, sizeof rds, "%d", (int)port);
    return wf_lds_port_listener_grpc(WF_LDS_SIDECAR_OUTBOUND, port, bind, rds, grpc);
}

/* The first service (service order) whose port port is sniffed (no declared protocol). */
static const wf_svc *sniffed_service(const wf_svcs *svcs, int32_t port, const wf_service_port **sp)
{
    for (size_t i = 0; i < svcs->n; i++) {
        const wf_service_port *p = wf_svc_port(&svcs->v[i], port);
        if (p && wf_protocol_of_kube_port(p->port, p->name, p->protocol, p->app_protocol) ==
                     WF_PROTO_UNSUPPORTED) {
            *sp = p;
            return &svcs->v[i];
        }
    }
    return NULL;
}

/* The HTTP listener of port, sniffed (pilot/sniff.h). */
static json_t *sniffed_listener(const wf_store *s, const wf_svcs *svcs, const wf_tcp_outbound *to,
                                const wf_lds_options *opt, int32_t port)
{
    json_t *l = listener(port, opt->bind ? opt->bind : "0.0.0.0", grpc_port(svcs, port));
    const wf_service_port *sp = NULL;
    const wf_svc *svc = l ? sniffed_service(svcs, port, &sp) : NULL;
    bool has_sni = false;
    json_t *tcp = svc ? wf_tcp_service_chains(s, to, svc, sp, &has_sni) : NULL;
    if (!l || (svc && !tcp) ||
        wf_sniff_outbound(l, tcp, has_sni, opt->registry_only, wf_sniff_timeout(opt->mesh)) != 0) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* Istio's outbound TCP listener fields: no detection timeout, go on when a filter waits. */
static int tcp_timeouts(json_t *l)
{
    if (json_object_set_new(l, "listener_filters_timeout", json_string("0s")) != 0 ||
        json_object_set_new(l, "continue_on_listener_filters_timeout", json_true()) != 0)
        return -1;
    return wf_sniff_order(l);
}

json_t *wf_lds_sidecar_outbound_listeners(const wf_store *store)
{
    return wf_lds_sidecar_outbound_listeners_at(store, NULL);
}

json_t *wf_lds_sidecar_outbound_listeners_at(const wf_store *store, const char *bind)
{
    const wf_lds_options o = {.bind = bind};
    return wf_lds_sidecar_outbound_listeners_opt(store, &o);
}

/* The auto-allocated addresses (alloc: nds.h, kept alive by the caller) as the VIPs of the
 * ServiceEntry hosts that have none. */
static int auto_vips(wf_svcs *svcs, const json_t *alloc)
{
    for (size_t i = 0; i < svcs->n; i++) {
        wf_svc *v = &svcs->v[i];
        const wf_strs *a = wf_svc_addresses(v);
        if (!v->is_se || (a && a->n) || v->resolution == WF_SVC_NONE)
            continue;
        char key[512];
        snprintf(key, sizeof key, "%s/%s", v->ns ? v->ns : "", v->host);
        const json_t *e = json_object_get(alloc, key);
        if (e)
            v->vip = json_string_value(json_object_get(e, "ipv4"));
    }
    return 0;
}

json_t *wf_lds_sidecar_outbound_listeners_opt(const wf_store *store, const wf_lds_options *opt)
{
    static const wf_lds_options none = {0};
    if (!store)
        return NULL;
    if (!opt)
        opt = &none;
    const wf_svc_view v = {.proxy_ns = opt->proxy_ns && *opt->proxy_ns ? opt->proxy_ns : NULL,
                           .suffix = opt->domain_suffix ? opt->domain_suffix
                                                        : wf_store_domain_suffix(store),
                           .scope = opt->scope};
    wf_svcs svcs;
    if (wf_svcs_collect(store, &v, &svcs) != 0)
        return NULL;
    json_t *out = json_array();
    int32_t *ports = calloc(RDS_MAX_PORTS, sizeof *ports);
    json_t *alloc = opt->auto_allocate ? wf_nds_auto_allocate(store) : NULL;
    if (!out || !ports || (opt->auto_allocate && (!alloc || auto_vips(&svcs, alloc) != 0)))
        goto fail;
    size_t np = rds_http_ports(&svcs, ports);
    const wf_tcp_outbound to = {.bind = opt->bind,
                                .proxy_ns = v.proxy_ns,
                                .proxy_labels = opt->proxy_labels,
                                .root_ns = opt->root_ns,
                                .suffix = v.suffix,
                                .scope = opt->scope,
                                .per_vip = opt->per_vip};
    for (size_t i = 0; i < np; i++)
        if (json_array_append_new(out, sniffed_listener(store, &svcs, &to, opt, ports[i])) != 0)
            goto fail;
    size_t nhttp = json_array_size(out);
    if (wf_tcp_outbound_listeners(store, &svcs, &to, ports, np, out) != 0)
        goto fail;
    for (size_t i = nhttp; i < json_array_size(out); i++)
        if (tcp_timeouts(json_array_get(out, i)) != 0)
            goto fail;
    free(ports);
    json_decref(alloc);
    wf_svcs_free(&svcs);
    return out;
fail:
    json_decref(alloc);
    free(ports);
    wf_svcs_free(&svcs);
    json_decref(out);
    return NULL;
}

/* The index after istio.metadata_exchange in http_filters (0 when absent). */
static size_t after_mx(const json_t *hf)
{
    for (size_t i = 0; i < json_array_size(hf); i++) {
        const char *n = json_string_value(json_object_get(json_array_get(hf, i), "name"));
        if (n && strcmp(n, "istio.metadata_exchange") == 0)
            return i + 1;
    }
    return 0;
}

static int add_to_hcm(json_t *tc, const json_t *filters)
{
    json_t *hf = json_deep_copy(json_object_get(tc, "http_filters"));
    if (!hf)
        return -1;
    size_t at = after_mx(hf);
    for (size_t i = 0; i < json_array_size(filters); i++)
        if (json_array_insert_new(hf, at + i, json_deep_copy(json_array_get(filters, i))) != 0) {
            json_decref(hf);
            return -1;
        }
    return json_object_set_new(tc, "http_filters", hf);
}

int wf_lds_add_http_filters(json_t *listener, const json_t *filters)
{
    if (!json_array_size(filters))
        return 0;
    json_t *chains = json_object_get(listener, "filter_chains");
    for (size_t c = 0; c < json_array_size(chains); c++) {
        json_t *fs = json_object_get(json_array_get(chains, c), "filters");
        for (size_t i = 0; i < json_array_size(fs); i++) {
            json_t *f = json_array_get(fs, i);
            const char *n = json_string_value(json_object_get(f, "name"));
            if (n && strcmp(n, HCM_NAME) == 0 &&
                add_to_hcm(json_object_get(f, "typed_config"), filters) != 0)
                return -1;
        }
    }
    return 0;
}
