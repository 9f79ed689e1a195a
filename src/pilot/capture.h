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
 *  - virtualInbound: 0.0.0.0:15006, listener_filters [original_dst, then tls_inspector when a
 *    port's chains needed it], traffic_direction INBOUND; chains "virtualInbound-blackhole"
 *    (destination_port 15006 -> BlackHoleCluster), each per-port inbound listener's chains
 *    (inbound.h) with filter_chain_match.destination_port = the port added, and the catch-all
 *    "virtualInbound" (prefix_ranges 0.0.0.0/0 -> tcp_proxy InboundPassthroughCluster).
 *    Simplified from Istio: no http_inspector / virtualInbound-catchall-http chains, no
 *    per-mTLS-mode passthrough chains, no filter_disabled on the listener filters.
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

#define WF_CLUSTER_INBOUND_PASSTHROUGH "InboundPassthroughCluster"
#define WF_CAPTURE_INBOUND_SOURCE      "127.0.0.6"

/* The virtualOutbound listener (new reference). */
json_t *wf_capture_virtual_outbound(bool registry_only);

/* The capture layout from the explicit-mode listeners: outbound (0.0.0.0_<port>, only read:
 * copies get bind_to_port false) and inbound (per-port listeners, only read). Returns a new
 * array [virtualOutbound-less: outbound copies..., virtualInbound]; the caller adds
 * virtualOutbound (wf_capture_virtual_outbound) first. */
json_t *wf_capture_listeners(const json_t *outbound, const json_t *inbound);

/* Rewrites the inbound|* clusters of clusters (an array, changed in place) to Istio's
 * ORIGINAL_DST shape and appends InboundPassthroughCluster. 0, -1 out of memory. */
int wf_capture_inbound_clusters(json_t *clusters);

#endif
