/*
 * tcp_proxy.h - envoy.filters.network.tcp_proxy as the terminal network filter of a chain
 * (net/network_filter.h), Envoy's TcpProxy::Filter (source/common/tcp_proxy/tcp_proxy.cc;
 * config wp_tcp_proxy, config.h, decoded by bootstrap_tcp_proxy.c). Facts followed:
 * ../shared/reference/protocols.md §4.1-4.4.
 *
 * Behaviour, as Envoy's:
 *  - on the new connection (after the filters before it): tcp.<stat_prefix>.downstream_cx_total,
 *    the idle timer is armed at once (Envoy 1.36), then the upstream is chosen: the cluster, or
 *    one of weighted_clusters by weight; its connection breaker (max_connections full: UO,
 *    cluster upstream_cx_overflow), a host from the cluster's load balancer (none: UH, cluster
 *    upstream_cx_none_healthy), a connection from its pool with the host's transport socket
 *    (raw, or TLS from the cluster's UpstreamTlsContext / transport_socket_matches). A cluster
 *    the snapshot lacks: NC, downstream_cx_no_route;
 *  - downstream reads are held while connecting (Envoy's readDisable in initialize);
 *  - outlier detection hears of each attempt (connect failure, timeout, success: Envoy's
 *    LocalOriginConnectFailed / LocalOriginTimeout / LocalOriginConnectSuccessFinal);
 *  - a connect failure sets UF (refused/reset while connecting, connect_timeout) with the pool's
 *    %UPSTREAM_TRANSPORT_FAILURE_REASON%, a local failure none; the next attempt (a host picked
 *    again) starts on the next loop iteration while attempts < max_connect_attempts, else URX
 *    and cluster upstream_cx_connect_attempts_exceeded close the connection (so one refused
 *    connect logs "UF,URX", as Istio's TCP lines show);
 *  - once connected, bytes are copied both ways. Back-pressure: one buffer per direction (the
 *    reading side's buffer, 16 KiB) is written to the other side; while that write is pending
 *    the reading side is paused (downstream_flow_control_paused_reading_total / cluster
 *    upstream_flow_control_paused_reading_total and their resumed_ counters), so the proxy
 *    never holds more than one buffer per direction, far below the listener's
 *    per_connection_buffer_limit_bytes;
 *  - half-close: an end of stream from one side is passed on as a shutdown of the other side's
 *    write direction once its pending bytes are written; the other direction goes on. The
 *    connection closes when both directions ended, or at once on a reset or write error of
 *    either side;
 *  - idle_timeout (no bytes either way for that long): tcp.<stat_prefix>.idle_timeout, closed
 *    without a flag; max_downstream_connection_duration: DT and
 *    tcp.<stat_prefix>.max_downstream_connection_duration;
 *  - the access_log entries are written once, when the connection closes: "- - -" request
 *    fields, response code 0, %BYTES_RECEIVED% / %BYTES_SENT% the downstream bytes read / written,
 *    %UPSTREAM_HOST% / %UPSTREAM_CLUSTER% / %UPSTREAM_LOCAL_ADDRESS%, SNI and peer URI SAN of a
 *    TLS downstream, %CONNECTION_TERMINATION_DETAILS% a network filter set (RBAC's).
 *  - Istio's TCP metadata exchange (metadata_exchange.h) runs on the session's buffers: with
 *    the chain's istio.metadata_exchange (wp_dconn.mx) the downstream peer's preamble is
 *    drained from the first downstream bytes and ours written ahead of the first bytes sent
 *    downstream (alone, on the first downstream read, when nothing else is being written;
 *    upstream bytes then wait for it); with the cluster's `filters` the upstream half writes
 *    ours when the upstream connects (the downstream is read once it is out) and drains the
 *    upstream peer's; %BYTES_RECEIVED% / %BYTES_SENT% and istio.stats count past the exchange;
 * Not implemented (refused at load): hash_policy, metadata_match, tunneling_config, on_demand,
 * backoff_options, access_log_options. An upstream's pending bytes are not flushed after the
 * downstream went away (no upstream_flush_* drainer: the counters stay 0).
 *
 * Memory and lifetime: one session per connection (malloc'd when the connection starts, ctx of
 * the filter, also wp_dconn.tcp), holding the downstream read buffer (the worker's, kept for the
 * connection's life); the session owns the downstream socket's callbacks and the connection's
 * two timers (idle, and retry / duration) until the connection closes, and is freed at the end
 * of the loop iteration in which the connection closed (net/deferred.h).
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_TCP_PROXY_H
#define WEFT_PROXY_FILTERS_NETWORK_TCP_PROXY_H

#include "proxy/stream_info/istio_peer.h"
#include "proxy/net/network_filter.h"

#define WP_TCP_PROXY_NAME "envoy.filters.network.tcp_proxy"

extern const wp_nf_ops wp_tcp_proxy_network_filter;

struct wp_dconn;
struct wp_stream_info;
struct wp_cluster;
/* What the filters before the TCP proxy read of its connection (Envoy's shared
 * Connection::streamInfo): the session's stream info (bytes, flags, upstream host, cluster and
 * the upstream TLS peer's / local URI SANs) and the cluster of its last attempt (*cluster, NULL
 * none). NULL when d has no TCP proxy session. Valid until the session's on_close ends. */
const struct wp_stream_info *wp_tcp_proxy_info(const struct wp_dconn *d,
                                               const struct wp_cluster **cluster);

/* The upstream peer's workload the cluster's istio.metadata_exchange read (Istio's filter
 * state upstream_peer), NULL none (yet). Valid until the session's on_close ends. */
const wp_istio_workload *wp_tcp_proxy_upstream_peer(const struct wp_dconn *d);

#endif
