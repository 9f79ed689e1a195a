/*
 * pool_h2.h - the HTTP/2 side of a cluster's connection pool (upstream/conn_pool.h) on one
 * worker: Envoy's Http2 ConnPoolImpl / MultiplexedActiveClientBase (source/common/http/
 * http2/conn_pool.cc, conn_pool_base.cc; docs intro/arch_overview/upstream/
 * connection_pooling) with an nghttp2 client session per connection.
 *
 * Inputs: requests of a cluster whose upstream protocol is HTTP/2 (wp_pool_newstream_http:
 * explicit http2_protocol_options, or use_downstream_protocol_config for an HTTP/2
 * downstream request). Outputs: each request gets, through the pool callbacks, a wp_uconn
 * whose transport socket is one stream of a shared connection (u->stream): the HTTP/1.1
 * request bytes the router writes are parsed and sent as HEADERS, DATA and trailers, the
 * response frames are read back as HTTP/1.1 bytes (upstream/uconn_h2.h). So the router
 * stays the same for both protocols and HTTP/1 clusters pay nothing.
 *
 * Envoy behaviour followed (protocols.md §2.2, §2.4, §2.5, §2.7):
 *  - one connection per (worker, cluster, host), or per original destination on an
 *    ORIGINAL_DST cluster (PassthroughCluster with use-downstream protocol options, the
 *    inbound clusters of a captured sidecar), carries streams up to the lower of the
 *    cluster's max_concurrent_streams and the peer's SETTINGS_MAX_CONCURRENT_STREAMS; when
 *    every connection is full another opens (a request over max_connections waits for a
 *    stream of an existing one, stat upstream_cx_overflow); prior knowledge (h2c) on plain
 *    TCP, ALPN h2 through the cluster's TLS transport socket; SETTINGS and the connection
 *    window from the cluster's http2_protocol_options (Envoy >= 1.36 defaults);
 *  - max_requests_per_connection (common_http_protocol_options) drains a connection after
 *    that many streams (stat upstream_cx_max_requests); a draining connection takes no new
 *    stream and closes when its last stream ends;
 *  - a GOAWAY from the upstream drains the connection (stat upstream_cx_close_notify); its
 *    streams above last_stream_id fail as remote_refused_stream_reset (so refused-stream
 *    retries them); RST_STREAM REFUSED_STREAM -> remote_refused_stream_reset, any other
 *    RST_STREAM -> remote_reset; a protocol error of the upstream (bad frames, an HTTP/1
 *    answer) -> protocol_error (502 UPE); the connection closing -> connection_termination;
 *  - stats: cluster.<name>.upstream_cx_http2_total, and the codec's cluster.<name>.http2.
 *    rx_reset, tx_reset, goaway... counters (the ones weft counts: rx_reset, tx_reset,
 *    trailers, stream_refused_errors), registered on the pool's first HTTP/2 connection.
 *
 * Flow control (bounded both ways): response DATA is framed into the stream's HTTP/1.1
 * bytes and its window (and the connection's) opens only as the router reads them, so a
 * slow downstream stops the upstream after initial_stream_window_size bytes; request bytes
 * wait in the stream until nghttp2 frames them as the peer's window allows, and the router's
 * write stays pending while more than WP_H2UP_BUFFER wait (the downstream read pauses).
 *
 * Implemented in pool_h2.c (the nghttp2 session, connections, waiting requests) and
 * stream_h2.c (a stream's transport socket); pool_h2_int.h is what they share.
 *
 * Ownership: connections and streams belong to the pool's worker; a stream's memory lives
 * until both its socket closed and nghttp2 forgot it. Errors: out of memory fails a request
 * as a LocalConnectionFailure ("out of memory") or resets its stream (local reset).
 */
#ifndef WEFT_PROXY_UPSTREAM_POOL_H2_H
#define WEFT_PROXY_UPSTREAM_POOL_H2_H

#include <stdbool.h>

#include "proxy/upstream/conn_pool.h"

#define WP_H2UP_BUFFER (64u * 1024u) /* request bytes a stream holds before it pushes back */

typedef struct wp_h2conn wp_h2conn;

/* A stream for rq on host (see above); the contract of wp_pool_newstream. */
bool wp_h2pool_newstream(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                         void *ctx);
/* The same on an ORIGINAL_DST cluster: a stream of a connection to dst (host 0; dst is
 * borrowed for the call, a new connection keeps its own copy). */
bool wp_h2pool_newstream_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                             const wp_pool_callbacks *cb, void *ctx);
/* rq (waiting for an HTTP/2 connection, rq->h2wait) is cancelled. */
void wp_h2pool_cancel(wp_pool_req *rq);
/* The generation retires: idle HTTP/2 connections close, busy ones drain. */
void wp_h2pool_close_idle(wp_pool *p);

#endif
