/*
 * istio_stats.h - Istio's `istio.stats` as a network filter (net/network_filter.h), the way
 * istiod puts it ahead of envoy.filters.network.tcp_proxy on TCP filter chains (istio/proxy
 * source/extensions/filters/http/istio_stats/istio_stats.cc, its network filter half; facts:
 * protocols.md §4.2 filter order and §4.5, envoy-istio-behaviour.md §7.2). Config: the HTTP
 * filter's wp_istio_stats_filter (filters/http/istio_stats.h; stats.PluginConfig, reporter from
 * the listener's traffic_direction).
 *
 * Every tcp_reporting_duration (Istio's default 5 s; 0: at close only) and when the connection
 * closes it reports what is new, with Istio's labels less response_code and
 * grpc_response_status and request_protocol="tcp" (wp_istio_labels_tcp) as they are then:
 * istio_tcp_connections_opened_total +1 on the first report, istio_tcp_received_bytes_total +=
 * bytes read from the downstream since the last report, istio_tcp_sent_bytes_total += bytes
 * written to it, istio_tcp_connections_closed_total +1 on the last; response_flags the TCP
 * proxy's (so a connection's opened count may sit under "-" and its close under its flags, as
 * in Istio). The peer's workload labels come from Istio's TCP metadata exchange
 * (metadata_exchange.h): the downstream peer (filter state downstream_peer) at the destination,
 * the upstream peer (upstream_peer, the cluster's exchange) at the source; without one they
 * are `unknown` (revision `latest`), as Istio's without a discovery match; the principals
 * and the peer's namespace come from the TLS peer certificate's SPIFFE URI SAN (the downstream's at
 * the destination, the upstream's at the source), connection_security_policy is mutual_tls or none
 * at the destination and unknown at the source; destination_service from the upstream
 * cluster's istio.services metadata.
 *
 * Per-connection state: the bytes reported so far and the report timer (malloc'd when the
 * connection starts, freed from the timer's close callback after on_close); the stream info
 * is the TCP proxy's (wp_tcp_proxy_info). A label tuple the worker has not seen allocates
 * (istio_stats.h).
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_ISTIO_STATS_H
#define WEFT_PROXY_FILTERS_NETWORK_ISTIO_STATS_H

#include "proxy/net/network_filter.h"

extern const wp_nf_ops wp_istio_stats_network_filter;

#endif
