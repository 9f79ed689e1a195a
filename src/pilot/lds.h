/*
 * lds.h - the outbound HTTP listeners (LDS) of a sidecar proxy, translated from the config
 * store.
 *
 * Input: a finalized wf_store (model/store.h) holding Kubernetes Services. Output: one jansson
 * object per listener, in Envoy v3 JSON shape with the snake_case names Envoy's /config_dump
 * prints (and "@type", as in the sibling cds.h / rds.h resources).
 *
 * What is built, following Istio's sidecar outbound HTTP listeners
 * (pilot/pkg/networking/core/listener.go, listener_builder.go buildHTTPConnectionManager,
 * pilot/pkg/xds/filters/filters.go):
 *  - one Listener per distinct service port that carries HTTP: exactly the ports of the
 *    route configurations of rds.h (rds_http_ports over the services the proxy sees:
 *    Kubernetes Services and ServiceEntry hosts, exportTo, Sidecar scope; Istio's protocol
 *    detection; TCP-like, UDP and well-known TCP ports get none), ascending by port.
 *  - name "0.0.0.0_<port>", address 0.0.0.0:<port>, traffic_direction OUTBOUND, one filter
 *    chain holding envoy.filters.network.http_connection_manager with:
 *    stat_prefix "outbound_0.0.0.0_<port>";
 *    rds {route_config_name "<port>", config_source {ads {}, resource_api_version V3}};
 *    http_filters in Istio's sidecar-outbound order: istio.metadata_exchange
 *    (io.istio.http.peer_metadata.Config in a udpa TypedStruct: upstream_discovery
 *    [istio_headers, workload_discovery], upstream_propagation [istio_headers]),
 *    envoy.filters.http.grpc_stats on a gRPC port (the port's protocol in the first
 *    service declaring one is GRPC or GRPC-Web, by name or appProtocol: Istio's IsGRPC;
 *    envoy.extensions.filters.http.grpc_stats.v3.FilterConfig {emit_filter_state: true,
 *    stats_for_all_methods: false}, xdsfilters.GrpcStats: the message counts istio.stats
 *    reports as istio_request_messages_total / istio_response_messages_total),
 *    envoy.filters.http.fault, envoy.filters.http.cors (fault before cors, as in the
 *    istioctl golden dumps), istio.stats (stats.PluginConfig, empty value: the reporter
 *    follows the OUTBOUND direction), envoy.filters.http.router;
 *    server_name "istio-envoy", use_remote_address false, stream_idle_timeout "0s",
 *    normalize_path true, path_with_escaped_slashes_action KEEP_UNCHANGED (as in the
 *    golden dumps' HTTP connection managers).
 *
 *  - each of them sniffed as Istio's wildcard HTTP listeners are (pilot/sniff.h): the HCM
 *    chain matches transport_protocol raw_buffer and application_protocols [http/1.1, h2c]
 *    found by the envoy.filters.listener.http_inspector listener filter; the
 *    default_filter_chain is the TCP chain of the first service whose port is sniffed (no
 *    declared protocol), else Istio's PassthroughFilterChain; listener_filters_timeout is
 *    MeshConfig protocolDetectionTimeout ("0s" = none), continue_on_listener_filters_timeout
 *    true.
 *
 *  - then the outbound TCP listeners of pilot/tcp.h (Service and ServiceEntry ports Istio
 *    treats as TCP, with VirtualService tcp/tls routes), in service order, on the ports no
 *    HTTP listener took, with Istio's listener_filters_timeout "0s" and
 *    continue_on_listener_filters_timeout true.
 *
 * Loading into weft-proxy: the proxy's bootstrap loader (src/proxy/bootstrap/bootstrap.c) accepts a
 * static listener with name, address, traffic_direction and one filter chain, and the HCM
 * fields stat_prefix, server_name, use_remote_address, stream_idle_timeout, the fault,
 * grpc_stats, istio.* and router filters. It does NOT yet accept: "rds" (the proxy must gain RDS
 * over its xDS client to load these listeners), "@type" on a listener, envoy.filters.http.cors,
 * normalize_path and path_with_escaped_slashes_action. These are emitted anyway because
 * they are what Istio sends; the proxy has to learn them.
 *
 * Left out (Istio emits them): access_log (Istio writes one only when MeshConfig
 * accessLogFile is set; pilot/generate.c adds it to every HCM and, with the NR filter, to every
 * listener), tracing, request_id_extension,
 * upgrade_configs (websocket), envoy.filters.http.grpc_web for GRPC-Web ports (grpc_stats is
 * emitted, see above, and on gateways' GRPC ports, gateway.h),
 * istio.alpn, Istio's bind_to_port false, per-VIP "<VIP>_<port>" listeners of sniffed services
 * (pilot/sniff.h), the virtualOutbound (15001) listener, the listeners of a Sidecar's egress
 * `port` / `bind` and its ingress listeners (pilot/sidecar_scope.h).
 */
#ifndef WF_PILOT_LDS_H
#define WF_PILOT_LDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "analysis/meshcfg.h"
#include "model/store.h"
#include "pilot/sidecar_scope.h"

/* The outbound listeners of a sidecar (HTTP, then TCP): a new JSON array (the caller owns it and
 * releases it with json_decref) of Listener objects, ascending by port; empty when no Service has
 * an HTTP port. store is only read. Returns NULL on out of memory or a NULL store. */
json_t *wf_lds_sidecar_outbound_listeners(const wf_store *store);

/* The same listeners bound to bind:<port> instead of 0.0.0.0:<port> (bind NULL = "0.0.0.0");
 * names stay "0.0.0.0_<port>". For the local mesh, where each pod's sidecar binds its own
 * loopback address (pilot/generate.h WEFT_LOCALHOST). */
json_t *wf_lds_sidecar_outbound_listeners_at(const wf_store *store, const char *bind);

/* Who the listeners are for. */
typedef struct wf_lds_options {
    const char *bind;           /* listener address; NULL = "0.0.0.0" (names stay 0.0.0.0_<port>) */
    const char *proxy_ns;       /* the proxy's namespace (exportTo); NULL or "" = none */
    const char *domain_suffix;  /* NULL = wf_store_domain_suffix(store) */
    const wf_scope *scope;      /* the proxy's Sidecar scope; NULL = everything visible */
    const wf_kvs *proxy_labels; /* its labels (VirtualService tcp/tls sourceLabels); NULL = none */
    const char *root_ns;    /* MeshConfig rootNamespace (DestinationRules); NULL = istio-system */
    const wf_meshcfg *mesh; /* protocolDetectionTimeout (pilot/sniff.h); NULL = defaults */
    bool registry_only;     /* outboundTrafficPolicy REGISTRY_ONLY: BlackHoleCluster fallthrough */
    bool per_vip; /* a captured sidecar (bind NULL): TCP listeners per clusterIP (tcp.h) */
    /* the proxy's DNS_AUTO_ALLOCATE: a ServiceEntry host without addresses that Istio
     * allocates one for (nds.h) has its listener named and, with per_vip, bound at it
     * (240.240.x.y_<port>), as istiod does, so TCP ServiceEntries on one port do not share a
     * listener */
    bool auto_allocate;
} wf_lds_options;

/* The outbound listeners of the services a sidecar described by opt sees (opt NULL: all
 * defaults, as wf_lds_sidecar_outbound_listeners). Same ownership and errors. */
json_t *wf_lds_sidecar_outbound_listeners_opt(const wf_store *store, const wf_lds_options *opt);

/* ---- one HTTP listener, shared with pilot/inbound.h and pilot/gateway.h ---- */

/* Istio's listener classes (istionetworking.ListenerClass), which pick the HCM's details:
 *  - SIDECAR_OUTBOUND: as above.
 *  - SIDECAR_INBOUND: traffic_direction INBOUND; istio.metadata_exchange with the downstream
 *    flavor (SidecarInboundMetadataFilter: downstream_discovery [istio_headers,
 *    workload_discovery], downstream_propagation [istio_headers]); istio.stats value
 *    {disable_host_header_fallback: true}.
 *  - GATEWAY: traffic_direction OUTBOUND, the outbound metadata_exchange flavor, istio.stats
 *    {disable_host_header_fallback: true}, use_remote_address true (Istio's gateways trust
 *    the connection's peer as the client address, pilot/pkg/networking/core/gateway.go). */
typedef enum wf_lds_class {
    WF_LDS_SIDECAR_OUTBOUND = 0,
    WF_LDS_SIDECAR_INBOUND,
    WF_LDS_GATEWAY,
} wf_lds_class;

typedef struct wf_lds_http {
    wf_lds_class cls;
    const char *name;        /* listener name ("0.0.0.0_8080") */
    const char *address;     /* bind address */
    int32_t port;            /* bind port */
    const char *stat_prefix; /* HCM stat_prefix */
    const char *rds_name;    /* route_config_name fetched over ADS; NULL = inline route_config */
    json_t *route_config;    /* the inline RouteConfiguration when rds_name is NULL: a reference
                              * the call takes over (released even on failure) */
    bool grpc; /* a gRPC port: envoy.filters.http.grpc_stats before envoy.filters.http.fault */
} wf_lds_http;

/* One Listener with one filter chain holding Istio's HTTP connection manager for spec (the
 * HCM fields described above: server_name, stream_idle_timeout, normalize_path, ...). Returns
 * a new object (caller json_decrefs), or NULL on out of memory or when spec lacks name,
 * address, stat_prefix or both rds_name and route_config. */
json_t *wf_lds_http_listener(const wf_lds_http *spec);

/* The outbound-style listener of one port as Istio names it: "0.0.0.0_<port>" bound on bind,
 * stat_prefix "outbound_0.0.0.0_<port>", route configuration rds_name fetched over ADS (cls
 * WF_LDS_SIDECAR_OUTBOUND with "<port>", WF_LDS_GATEWAY with "http.<port>"). Same return as
 * wf_lds_http_listener. */
json_t *wf_lds_port_listener(wf_lds_class cls, int32_t port, const char *bind,
                             const char *rds_name);
/* The same, for a gRPC port when grpc is set (envoy.filters.http.grpc_stats in its HCM). */
json_t *wf_lds_port_listener_grpc(wf_lds_class cls, int32_t port, const char *bind,
                                  const char *rds_name, bool grpc);

/* Inserts copies of filters (HTTP filters, e.g. pilot/authz.h's RBAC filters) into the
 * http_filters of every HTTP connection manager of listener, right after
 * istio.metadata_exchange (at the front when there is none): Istio's place for the authn and
 * authz filters (listener_builder.go: metadata exchange, CUSTOM authz, authn, authz, ..., fault,
 * cors, stats, router). Each connection manager gets its own copy. Returns 0, -1 on out of
 * memory (listener is then partly changed). filters NULL or empty: nothing to do. */
int wf_lds_add_http_filters(json_t *listener, const json_t *filters);

#endif
