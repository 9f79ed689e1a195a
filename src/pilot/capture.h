/*
 * capture.h - Istio's sidecar listener layout under iptables capture (interception mode
 * REDIRECT; reference protocols.md §5.3-5.4): what istiod sends a sidecar whose traffic
 * istio-iptables redirects, as opposed to weft's explicit mode where every per-port listener
 * binds the pod's own loopback address (WEFT_LOCALHOST). Followed:
 * pilot/pkg/networking/core/listener.go (buildSidecarOutboundListeners: bind_to_port false on
 * 0.0.0.0_<port> when the proxy captures), listener_builder.go (buildVirtualOutboundListener,
 * buildInboundListeners / virtualInbound), cluster_builder.go (buildInboundPassthroughCluster,
 * inbound ORIGINAL_DST clusters with upstream_bind_config 127.0.0.6), and the config dump in
 * ../shared/corpus/istioctl-golden/upstream/istioctl/pkg/authz/testdata/configdump.yaml.
 *
 * Shapes (Envoy v3 JSON with "@type", snake_case, as pilot/lds.h):
 *  - virtualOutbound: 0.0.0.0:15001, use_original_dst true, traffic_direction OUTBOUND; chains
 *    "virtualOutbound-blackhole" (destination_port 15001 -> tcp_proxy BlackHoleCluster, the
 *    loop guard) and "virtualOutbound-catchall-tcp" (no match -> tcp_proxy PassthroughCluster,
 *    or BlackHoleCluster under outboundTrafficPolicy REGISTRY_ONLY); tcp_proxy stat_prefix =
 *    cluster name. (Istio also puts istio.stats before tcp_proxy.)
 *  - the outbound listeners (lds.h) unchanged but for "bind_to_port": false; the proxy hands
 *    them connections whose original destination port is theirs.
 *  - virtualInbound (Istio's inboundVirtualListener; protocols.md §1.2): 0.0.0.0:15006, chains in
 *    Istio's order:
 *     "virtualInbound-blackhole" (destination_port 15006 -> istio.metadata_exchange,
 *       istio.stats, tcp_proxy BlackHoleCluster: the loop guard, buildInboundBlackhole);
 *     the passthrough chains (buildInboundPassthroughChains) pilot/inbound.h builds with
 *       opt->capture: the sniffed chains of the workload's PeerAuthentication mode (the same
 *       chains, matches and filters as a sniffed target port's) for any destination port, the
 *       HTTP ones named "virtualInbound-catchall-http" (HCM stat_prefix and route_config
 *       "InboundPassthroughCluster", vhost "inbound|http|0", route "default" to
 *       InboundPassthroughCluster with timeout 0s, the workload's HTTP filters) and the TCP
 *       ones "virtualInbound" (istio.metadata_exchange, network RBAC, istio.stats, tcp_proxy
 *       InboundPassthroughCluster); then the same for each portLevelMtls port no target port
 *       has, matching destination_port (authn ForPassthrough);
 *     each per-port inbound listener's chains (inbound.h) with filter_chain_match
 *       destination_port = the port, first.
 *    listener_filters (populateListenerFilters): original_dst; tls_inspector when a chain
 *    matches transport_protocol "tls", with filter_disabled {destination_port_range [p, p+1)}
 *    (an or_match of them when several) for the ports whose chains need no TLS (15006), or,
 *    when the catch-all needs none (DISABLE), {not_match: ...} of the ports that need it;
 *    http_inspector when a chain matches "http/1.1"/"h2c", disabled on every port whose chains
 *    match neither (explicit HTTP and TCP ports, 15006; port 0 = the catch-all under STRICT).
 *    Then listener_filters_timeout (MeshConfig protocolDetectionTimeout), traffic_direction
 *    INBOUND, continue_on_listener_filters_timeout true.
 *    Istio 1.10-1.22 also set prefix_ranges 0.0.0.0/0 (or ::/0) on the passthrough chains,
 *    one per IP family with clusters InboundPassthroughClusterIpv4/Ipv6 (the istioctl golden
 *    dump above shows that); 1.23+ has neither, as here.
 *  - clusters: inbound|<port>|| become ORIGINAL_DST (lb_policy CLUSTER_PROVIDED, no
 *    load_assignment, upstream_bind_config source 127.0.0.6, which the iptables rules exempt),
 *    and InboundPassthroughCluster is added (ORIGINAL_DST, 127.0.0.6, connect_timeout 10s).
 *
 * Ownership: functions take and return new JSON references as said; NULL / -1 = out of memory.
 */
#ifndef WF_PILOT_CAPTURE_H
#define WF_PILOT_CAPTURE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "pilot/naming.h"

#define WF_CAPTURE_INBOUND_SOURCE "127.0.0.6"
/* virtualInbound's passthrough chain names (Istio's model.VirtualInboundListenerName,
 * VirtualInboundCatchAllHTTPFilterChainName) */
#define WF_CHAIN_VIRTUAL_INBOUND      "virtualInbound"
#define WF_CHAIN_VIRTUAL_INBOUND_HTTP "virtualInbound-catchall-http"

/* The virtualOutbound listener (new reference). */
json_t *wf_capture_virtual_outbound(bool registry_only);

/* The capture layout from the explicit-mode listeners: outbound (0.0.0.0_<port>, only read:
 * copies get bind_to_port false) and inbound (per-port listeners and the passthrough one,
 * pilot/inbound.h with capture; only read). Returns a new array [virtualOutbound-less:
 * outbound copies..., virtualInbound]; the caller adds virtualOutbound
 * (wf_capture_virtual_outbound) first. */
json_t *wf_capture_listeners(const json_t *outbound, const json_t *inbound);

/* Rewrites the inbound|* clusters of clusters (an array, changed in place) to Istio's
 * ORIGINAL_DST shape and appends InboundPassthroughCluster. 0, -1 out of memory. */
int wf_capture_inbound_clusters(json_t *clusters);

/* Makes chain (a FilterChain object) match destination_port port: filter_chain_match gets
 * destination_port first (Envoy's field order), filter_chain_match is added first when
 * absent. 0, -1 out of memory. */
int wf_capture_match_port(json_t *chain, uint32_t port);

#endif
