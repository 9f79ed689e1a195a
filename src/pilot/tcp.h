/*
 * tcp.h - a sidecar's TCP listeners and filter chains: outbound listeners of the Service ports
 * Istio treats as TCP (with VirtualService `tcp` and `tls` routes), the inbound TCP chains of a
 * pod's TCP target ports per PeerAuthentication mode, and the network filters they hold.
 *
 * Follows istiod (istio/istio pilot/pkg/networking/core: listener.go
 * buildSidecarOutboundListeners, tls.go buildSidecarOutboundTCPTLSFilterChainOpts,
 * networkfilter.go buildOutboundNetworkFilters / buildInboundNetworkFilters,
 * filterchain_options.go; reference protocols.md §1.1, §1.2, §4.2, §4.6, security.md §3.3,
 * §4.1, §6.3). Envoy v3 JSON with "@type" and /config_dump's snake_case names, as lds.h.
 *
 * Which ports are TCP (wf_tcp_service_port): Istio's protocol of the port (model/protocol.h:
 * appProtocol, else the name's prefix; 25, 53, 3306, 27017 unnamed) is TCP, TLS, HTTPS, Mongo,
 * Redis or MySQL. Undeclared ports are sniffed (pilot/sniff.h): their listener is the HTTP
 * one, whose default chain comes from wf_tcp_service_chains. Mongo, MySQL and
 * Redis get plain TCP proxying (Istio's mongo_proxy filter, on by default for Mongo, is left
 * out).
 *
 * Network filters:
 *  - istio.stats: {"name": "istio.stats", "typed_config": {"@type": TypedStruct, "type_url":
 *    "type.googleapis.com/stats.PluginConfig", "value": V}} (lds.h's HTTP filter shape; V {} on
 *    outbound chains, {"disable_host_header_fallback": true} on inbound ones, as Istio's
 *    telemetry.go for both HTTP and TCP).
 *  - envoy.filters.network.tcp_proxy: {"@type": ...tcp_proxy.v3.TcpProxy, "stat_prefix": P,
 *    "cluster": C} or, for several weighted destinations, "weighted_clusters": {"clusters":
 *    [{"name", "weight"}]} with stat_prefix "<vsName>.<vsNamespace>" (only weights > 0).
 *    Single destinations: stat_prefix = cluster (Istio's default outboundClusterStatName), and
 *    from the DestinationRule of the destination host (pilot/cds.h, trafficPolicy merged with
 *    the subset's and the port's, as its clusters) connectionPool.tcp.idleTimeout ->
 *    "idle_timeout", maxConnectionDuration -> "max_downstream_connection_duration" (Istio's
 *    buildOutboundNetworkFiltersWithSingleDestination; node metadata IDLE_TIMEOUT is not read).
 *  - MeshConfig access logging is added by pilot/generate.c to every tcp_proxy as to every
 *    HCM: Istio writes the same text format for TCP (protocols.md §4.4).
 *
 * Outbound (wf_tcp_outbound_listeners): one Listener per visible service (Services, then
 * ServiceEntries, load order) and TCP port, named "<clusterIP>_<port>" when the Service has a
 * clusterIP (not "None"), else "0.0.0.0_<port>" (Istio: headless ports get per-pod listeners;
 * weft gives them one wildcard listener to the service cluster). weft-proxy does not capture
 * traffic, so every such listener binds bind:<port> (pilot/generate.h WEFT_LOCALHOST); a port
 * some listener already took (an HTTP port, or an earlier TCP service on the same port) gets
 * no second listener (the first service wins, as the first bind would). Fields: "@type",
 * name, address, listener_filters [tls_inspector] when a chain matches server_names,
 * filter_chains, traffic_direction "OUTBOUND". Chains (unnamed, as Istio's):
 *  - the first VirtualService (load order) exported to the proxy's namespace, for "mesh"
 *    (gateways empty or naming it), in the Sidecar scope, one of whose hosts (short names
 *    resolved in its namespace) is the service's host or a wildcard ("*", "*.suffix") covering
 *    it;
 *  - its `tls` routes: each match whose static predicates hold (port absent or the service
 *    port; sourceLabels a subset of the proxy's labels; gateways absent or naming "mesh";
 *    sourceNamespace absent or the proxy's namespace) gives a chain {"filter_chain_match":
 *    {"server_names": sniHosts, "prefix_ranges": destinationSubnets}}, a (sniHosts, subnets)
 *    pair already emitted is skipped; with none and a TLS/HTTPS port, the default chain;
 *  - its `tcp` routes (routes without destinations skipped): a route without match, or a
 *    passing match without destinationSubnets, is the terminal catch-all chain (no
 *    filter_chain_match); a passing match with destinationSubnets gives a chain with
 *    prefix_ranges;
 *  - then, unless a catch-all chain exists, the default chain to "outbound|<port>||<host>".
 *  Each chain's filters: istio.stats, tcp_proxy. Destinations: "outbound|<p>|<subset>|<host>"
 *  with host resolved in the VirtualService's namespace, p = destination.port.number, else
 *  the destination service's only port, else the service port (wf_tcp_route_filters).
 *  A listener without VIP ("0.0.0.0_<port>") also takes the chains of the later services on
 *  that port without VIP (TLS ServiceEntries to many hosts on 443, told apart by SNI: their
 *  default TLS chain matches server_names [host]); a chain whose filter_chain_match equals an
 *  earlier chain's is left out (Envoy refuses duplicates: the first service wins).
 *  prefix_ranges: [{"address_prefix": A, "prefix_len": N}] ("10.0.0.0/8"; a bare address is
 *  /32, or /128 for IPv6).
 *
 * Inbound (wf_tcp_inbound_listener): for a TCP target port P the listener "<bind>_P" bound on
 * bind:P (pilot/inbound.h's per-port listener), traffic_direction INBOUND, chains by mode (the
 * "PERMISSIVE, TCP" / "STRICT, HTTP or TCP" rows of protocols.md §1.2), each named like the
 * listener, holding the pod's network RBAC filters (pilot/authz.h wf_authz_tcp_filters; none
 * when no policy applies), istio.stats (inbound) and tcp_proxy {"stat_prefix":
 * "inbound|P||", "cluster": "inbound|P||"}:
 *   STRICT:     tls -> MTLS
 *   PERMISSIVE: tls + ALPNs [istio, istio-peer-exchange, istio-http/1.0, istio-http/1.1,
 *               istio-h2] -> MTLS; tls (a client's own TLS, passed through) -> plain;
 *               raw_buffer -> plain
 *   DISABLE:    one chain without filter_chain_match
 * and the tls_inspector listener filter for STRICT and PERMISSIVE. MTLS is pilot/authn.h
 * wf_authn_inbound_tls with Istio's TCP ALPNs ["istio-peer-exchange", "h2", "http/1.1"]
 * (ALPNDownstreamWithMxc; on a TCP chain h2 is opaque bytes). Every inbound chain starts
 * with the istio.metadata_exchange network filter (xdsfilters.TCPListenerMx: TypedStruct of
 * envoy.tcp.metadataexchange.config.MetadataExchange {protocol: istio-peer-exchange,
 * enable_discovery: true}), as buildCompleteNetworkFilters puts it ahead of the authz and
 * stats filters; it acts only on ALPN istio-peer-exchange.
 *
 * Ownership: every result is new JSON the caller json_decrefs; inputs are only read. Errors:
 * NULL on out of memory (and on NULL required arguments). No global state.
 */
#ifndef WF_PILOT_TCP_H
#define WF_PILOT_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "model/store.h"
#include "pilot/authn.h"
#include "pilot/serviceentry.h"
#include "pilot/sidecar_scope.h"

/* Istio's TCP class for a Service (or ServiceEntry) port (above). */
bool wf_tcp_service_port(const wf_service_port *sp);

/* istio.stats as a network filter; inbound selects the inbound value. */
json_t *wf_tcp_stats_filter(bool inbound);
/* Istio's TCP metadata exchange filters: xdsfilters.TCPListenerMx (a listener network
 * filter) and [xdsfilters.TCPClusterMx] (a cluster's `filters`, what applyMetadataExchange
 * appends to outbound clusters and the PassthroughCluster). New JSON, NULL on OOM. */
json_t *wf_tcp_listener_mx(void);
json_t *wf_tcp_cluster_mx(void);

/* tcp_proxy to one cluster (stat_prefix NULL = cluster). */
json_t *wf_tcp_proxy_filter(const char *stat_prefix, const char *cluster);

/* Istio's xdsfilters.TLSInspector listener filter list: [{"name":
 * "envoy.filters.listener.tls_inspector", "typed_config": {..., "initial_read_buffer_size":
 * 512}}]. */
json_t *wf_tcp_tls_inspector(void);

/* "a.b.c.d/n" (or a bare address) as an Envoy CidrRange; NULL when unparsable or on OOM. */
json_t *wf_tcp_cidr_range(const char *cidr);

/* The filters of a VirtualService tcp or tls route r of vs: [istio.stats, tcp_proxy] as above.
 * A destination without port goes to the port of its service when that has exactly one port
 * (a service visible to proxy_ns), else to port (Istio's GetDestinationCluster). gateway
 * selects the gateway (= inbound) istio.stats value. NULL on OOM or a route without
 * destination. */
typedef struct wf_tcp_route_ctx {
    const wf_store *s;
    const char *proxy_ns; /* NULL = none */
    const char *suffix;   /* cluster DNS suffix (required) */
    const char *root_ns;  /* MeshConfig rootNamespace (DestinationRules); NULL = istio-system */
    int32_t port;         /* the listener's service / server port */
    bool gateway;
} wf_tcp_route_ctx;

json_t *wf_tcp_route_filters(const wf_tcp_route_ctx *c, const wf_resource *vs, const wf_route *r);

typedef struct wf_tcp_outbound {
    const char *bind;           /* listener address; NULL = "0.0.0.0" */
    const char *proxy_ns;       /* NULL = none */
    const wf_kvs *proxy_labels; /* NULL = none (sourceLabels then never match) */
    const char *suffix;         /* cluster DNS suffix (required) */
    const char *root_ns;        /* MeshConfig rootNamespace; NULL = istio-system */
    const wf_scope *scope;      /* NULL = everything visible */
    /* a captured sidecar's listeners, as istiod's: each TCP port of a service with a clusterIP
     * gets a listener of its own, named and bound <clusterIP>_<port> (bind_to_port false once
     * capture.h has them), so virtualOutbound hands it only connections to that address; the
     * services without one share 0.0.0.0_<port>. false (explicit mode, every listener on the
     * pod's one address): one listener per port, the first service with a clusterIP naming it */
    bool per_vip;
} wf_tcp_outbound;

/* The outbound TCP listeners of svcs (the services the proxy sees, serviceentry.h) as above,
 * appended to out; taken holds the ports already listened on (ntaken of them) and is not
 * changed. Returns 0, -1 on out of memory (out may then hold some of them). */
int wf_tcp_outbound_listeners(const wf_store *s, const wf_svcs *svcs, const wf_tcp_outbound *o,
                              const int32_t *taken, size_t ntaken, json_t *out);

/* The chains of one service's TCP port on an outbound listener (the chains above: tls routes,
 * the default TLS chain, tcp routes, the catch-all to outbound|<port>||<host>), for the sniffed
 * listeners of pilot/sniff.h. *has_sni (may be NULL) tells whether a chain matches
 * server_names. A new array, NULL on OOM. */
json_t *wf_tcp_service_chains(const wf_store *s, const wf_tcp_outbound *o, const wf_svc *svc,
                              const wf_service_port *sp, bool *has_sni);

/* wf_authn_inbound_tls with Istio's TCP ALPNs [istio-peer-exchange, h2, http/1.1]. */
json_t *wf_tcp_inbound_tls(const wf_meshcfg *mesh);

/* The network filters of an inbound TCP chain of port: istio.metadata_exchange, authz (copied;
 * NULL = none), istio.stats (inbound), tcp_proxy to inbound|<port>||. NULL on OOM. */
json_t *wf_tcp_inbound_filters(int32_t port, const json_t *authz);
/* The same to cluster (stat_prefix = cluster): virtualInbound's InboundPassthroughCluster. */
json_t *wf_tcp_inbound_cluster_filters(const char *cluster, const json_t *authz);

/* The inbound listener of TCP target port port (above): authz is wf_authz_tcp_filters' array
 * (copied; NULL or empty = none). NULL on OOM. */
json_t *wf_tcp_inbound_listener(int32_t port, const char *bind, wf_mtls_mode mode,
                                const wf_meshcfg *mesh, const json_t *authz);

/* ---- ports several services share ("never accept silently") ----
 *
 * weft-proxy binds one outbound listener per port on the pod's address (tcp.h above), where
 * Istio gives each service VIP its own listener. So a TCP service port gets nothing in a
 * sidecar that also sees: a service with an HTTP port of that number (the HTTP listener takes
 * it), or an earlier TCP service on it when either has a VIP, or when neither has one and the
 * ports are not both TLS (the earlier one's catch-all chain takes the connections; TLS ports
 * are told apart by SNI). Checked over the services exported everywhere (every sidecar's view
 * without Sidecar scope), in service order; cb gets each such port once. Returns the count, -1
 * on OOM or a NULL store. */
typedef struct wf_tcp_clash {
    const wf_resource *res;      /* the Service or ServiceEntry that loses the port */
    const wf_service_port *port; /* its port (node: its place in the resource) */
    size_t index;                /* its index in spec.ports */
    const wf_resource *taker;    /* the service that takes the port */
    const char *taker_host;
    bool http; /* taken by an HTTP port */
} wf_tcp_clash;

typedef void (*wf_tcp_clash_cb)(const wf_tcp_clash *c, void *arg);

int wf_tcp_port_clashes(const wf_store *s, const char *suffix, wf_tcp_clash_cb cb, void *arg);

#endif
