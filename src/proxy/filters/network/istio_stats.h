/*
 * istio_stats.h - Istio's `istio.stats` as a network filter (net/network_filter.h), the way
 * istiod puts it ahead of envoy.filters.network.tcp_proxy on TCP filter chains (istio/proxy
 * source/extensions/filters/http/istio_stats/istio_stats.cc, its network filter half; facts:
 * protocols.md §4.2 filter order and §4.5, envoy-istio-behaviour.md §7.2). Config: the HTTP
 * filter's wp_istio_stats_filter (filters/http/istio_stats.h; stats.PluginConfig, reporter from
 * the listener's traffic_direction).
 *
 * When the connection closes it records, with Istio's labels less response_code and
 * grpc_response_status and request_protocol="tcp" (wp_istio_labels_tcp):
 * istio_tcp_connections_opened_total and istio_tcp_connections_closed_total +1,
 * istio_tcp_received_bytes_total += bytes read from the downstream, istio_tcp_sent_bytes_total
 * += bytes written to it, response_flags the TCP proxy's. There is no peer metadata exchange
 * over TCP in weft (istio.metadata_exchange / ALPN istio-peer-exchange is not implemented), so
 * the peer's workload labels are `unknown` (revision `latest`); the principals and the peer's
 * namespace come from the TLS peer certificate's SPIFFE URI SAN (the downstream's at the
 * destination, the upstream's at the source), connection_security_policy is mutual_tls or none
 * at the destination and unknown at the source; destination_service from the upstream
 * cluster's istio.services metadata. Not done: the periodic report every
 * tcp_reporting_duration (a long connection is counted when it closes).
 *
 * Per-connection state: none (the TCP proxy's session holds the stream info it reads through
 * wp_tcp_proxy_info); allocation only for a label tuple the worker has not seen (istio_stats.h).
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_ISTIO_STATS_H
#define WEFT_PROXY_FILTERS_NETWORK_ISTIO_STATS_H

#include "proxy/net/network_filter.h"

extern const wp_nf_ops wp_istio_stats_network_filter;

#endif
