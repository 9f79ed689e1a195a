/*
 * metadata_exchange.h - Istio's TCP metadata exchange: the istio.metadata_exchange network
 * filter (downstream, on istiod's inbound TCP filter chains) and its upstream half (a cluster's
 * `filters`, on istiod's outbound clusters and PassthroughCluster), typed_config
 * type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange {protocol:
 * istio-peer-exchange} (plain or in a TypedStruct; enable_discovery and additional_labels are
 * read and ignored: weft has no workload discovery to fall back to).
 *
 * Followed: istio/proxy source/extensions/filters/network/metadata_exchange/metadata_exchange.cc
 * (now envoy contrib/istio/filters/network/metadata_exchange): when the connection's negotiated
 * ALPN is the configured protocol, each side writes, ahead of any byte it forwards, an initial
 * header (magic 0x3D230467 then the length of what follows, both 32-bit big-endian) and a
 * serialized google.protobuf.Any {type_url "type.googleapis.com/google.protobuf.Struct", value:
 * Struct {"x-envoy-peer-metadata": <the workload Struct, istio_peer.h>,
 * "x-envoy-peer-metadata-id": <node id>}} (deterministic: keys sorted); it reads the peer's
 * header and Any from the front of the bytes it receives, drains them (the application never
 * sees them) and keeps the peer's workload as the connection's filter state downstream_peer
 * (downstream filter) or upstream_peer (upstream filter) for istio.stats. Not the protocol's
 * ALPN, a wrong magic, an Any that does not parse, or the peer half-closing before its header
 * was complete: no peer (Istio's peer_not_found), the bytes pass unchanged (after a correct
 * header whose data is refused, the 8 header bytes are drained, as Istio does). weft refuses a
 * data length over WP_TCP_MX_MAX_DATA (Istio has no limit; its buffer grows).
 *
 * The bytes are handled where they are buffered: the TCP proxy (tcp_proxy.c) owns the
 * downstream socket and calls the wp_tcp_mx_* functions below on its read buffer (the network
 * filter only holds the downstream state, wp_dconn.mx); the cluster's half lives on the
 * upstream connection (upstream/upstream.c drains the peer's preamble for every owner; the TCP
 * proxy writes ours, an HTTP upstream connection does not). Pure functions besides the
 * filter's allocation; no global state.
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_METADATA_EXCHANGE_H
#define WEFT_PROXY_FILTERS_NETWORK_METADATA_EXCHANGE_H

#include "proxy/net/network_filter.h"
#include "proxy/net/peer_exchange.h"

#define WP_TCP_MX_NAME          "istio.metadata_exchange"
#define WP_TCP_MX_NAME_LEGACY   "envoy.filters.network.metadata_exchange"
#define WP_TCP_MX_UPSTREAM_NAME "envoy.filters.network.upstream.metadata_exchange"

/* The downstream filter (config wp_tcp_mx_config): allocates the connection's wp_tcp_mx
 * (wp_dconn.mx, freed at the end of the loop iteration the connection closed in). */
extern const wp_nf_ops wp_tcp_mx_network_filter;

#endif
