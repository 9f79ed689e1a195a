/*
 * sniff.h - Istio's protocol sniffing on a sidecar's listeners: the HTTP inspector listener
 * filter, the HTTP chain's application-protocol match, the detection timeout, and the outbound
 * HTTP listener turned into Istio's sniffed shape.
 *
 * Follows istiod (pilot/pkg/networking/core/listener.go buildSidecarOutboundListener and
 * buildListenerFromEntry, plaintextHTTPALPNs, buildOutboundCatchAllNetworkFiltersOnly;
 * pilot/pkg/xds/filters/filters.go HTTPInspector; reference protocols.md §1.2, §1.4):
 *  - listener filter {"name": "envoy.filters.listener.http_inspector", "typed_config":
 *    {"@type": "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.
 *    HttpInspector"}};
 *  - the HTTP chain's match {"transport_protocol": "raw_buffer", "application_protocols":
 *    ["http/1.1", "h2c"]} (Istio adds "http/1.0" first only with PILOT_HTTP10; weft, as
 *    protocols.md §1.2 says, for a proxy whose node metadata HTTP10 is "1": pilot/generate.c);
 *  - listener_filters_timeout: MeshConfig protocolDetectionTimeout (a Go duration, ≥ 1ms or 0;
 *    default "0s" = none since Istio 1.9) when the listener has the HTTP inspector, else "0s";
 *    continue_on_listener_filters_timeout true on every outbound listener.
 *
 * Outbound (wf_sniff_outbound): weft binds one outbound listener per port (pilot/lds.h), where
 * Istio gives each sniffed service VIP its own "<VIP>_<port>" listener next to the shared
 * "0.0.0.0_<port>" HTTP one; weft's "0.0.0.0_<port>" listener of an HTTP or sniffed port takes
 * both roles, with Istio's wildcard-HTTP-listener shape: the HCM chain (route configuration
 * "<port>") under the match above, http_inspector, and as default_filter_chain
 *  - the TCP chains of the first service (service order) whose port is sniffed (pilot/tcp.h
 *    wf_tcp_service_chains: VirtualService tls/tcp routes, else istio.stats + tcp_proxy to
 *    "outbound|<port>||<host>"): the catch-all one becomes default_filter_chain, chains with a
 *    match (server_names, prefix_ranges) go before the HCM chain, and server_names add the TLS
 *    inspector first, as Istio orders them;
 *  - else Istio's "PassthroughFilterChain" {"filter_chain_match": {}, "name":
 *    "PassthroughFilterChain", "filters": [istio.stats, tcp_proxy to PassthroughCluster, or
 *    BlackHoleCluster under REGISTRY_ONLY (stat_prefix the cluster)]}.
 *  So a non-HTTP client on such a port reaches the sniffed service over TCP (or the
 *  passthrough), an HTTP/1.1 or h2c client the routes of that port. Other services sniffed on
 *  the same port share its TCP destination (weft has no VIPs to tell them apart).
 *
 * Ownership: new JSON the caller json_decrefs; inputs only read. NULL / -1 on out of memory.
 */
#ifndef WF_PILOT_SNIFF_H
#define WF_PILOT_SNIFF_H

#include <stdbool.h>

#include <jansson.h>

#include "analysis/meshcfg.h"

#define WF_SNIFF_HTTP_INSPECTOR "envoy.filters.listener.http_inspector"

/* Istio's xdsfilters.HTTPInspector listener filter object. */
json_t *wf_sniff_http_inspector(void);

/* {"transport_protocol": "raw_buffer", "application_protocols": ["http/1.1", "h2c"]}. */
json_t *wf_sniff_http_match(void);

/* MeshConfig protocolDetectionTimeout as a protobuf JSON duration ("0s" when unset or
 * unparsable; mesh may be NULL). */
json_t *wf_sniff_timeout(const wf_meshcfg *mesh);

/* Turns the single-chain outbound HTTP listener l into the sniffed shape above. tcp_chains (the
 * sniffed service's, consumed; NULL = the passthrough chain) and has_sni come from
 * wf_tcp_service_chains; registry_only picks BlackHoleCluster for the passthrough chain;
 * timeout (consumed) is wf_sniff_timeout's. Returns 0, -1 on OOM (l then partly changed). */
int wf_sniff_outbound(json_t *l, json_t *tcp_chains, bool has_sni, bool registry_only,
                      json_t *timeout);

/* Puts Envoy's listener fields in Envoy's order at the end of l: default_filter_chain,
 * listener_filters, listener_filters_timeout, continue_on_listener_filters_timeout,
 * traffic_direction (the others keep their place). 0, -1 on OOM. */
int wf_sniff_order(json_t *l);

#endif
