/*
 * router.h - the router (router.c) and its retry state machine (router_retry.c): Envoy's
 * Router::Filter, the terminal HTTP filter (filters/http/router_filter.c runs it). It reaches
 * the connection manager only through the stream's filter callbacks (proxy/http/filter.h) and
 * the upstream only through the load balancer and the pool (proxy/upstream/). Inputs: a
 * stream whose route the connection manager cached; outputs: the upstream attempt(s) and the
 * response encoded back through the callbacks. Streams are the connection manager's (they
 * stay valid until the end of the loop iteration, net/deferred.h).
 */
#ifndef WEFT_PROXY_FILTERS_HTTP_ROUTER_H
#define WEFT_PROXY_FILTERS_HTTP_ROUTER_H

#include "proxy/filters/http/router_retry.h"
#include "proxy/http/conn.h"

/* The connection manager reaches the router only through the HTTP filter chain (the router is
 * its terminal filter, filters/http/router_filter.c), and the router the connection manager
 * only through the chain's callbacks (proxy/http/filter.h wp_filter_callbacks), which conn.c
 * implements. The stream's cached route is proxy/http/cached_route.h. */

/* router.c, called by the router filter (filters/http/router_filter.c) */
/* decode_headers: the route's action, the cluster, the first attempt. */
void wp_router_start(wp_stream *s);
/* Access logs read the request as the router leaves it: in Envoy the router rewrites the
 * path and Host and adds and removes fields in the header map the logs read (a log shows the
 * rewritten :authority, x-envoy-original-path, x-forwarded-proto, the route's additions).
 * Called when the stream's logs are written: the last upstream head sent (or the one the
 * router would send) is parsed into the stream's log view and si.request points at it; a
 * request answered before a cluster was chosen, or a head that fails to parse, stays as
 * received. */
void wp_router_log_view(wp_stream *s);
void wp_router_on_reset(wp_stream *s, int reason, const char *transport_failure);
/* decode_data: data/len the body slice (or a tunnel's bytes; NULL, 0: none) the connection
 * manager pins until the router drains it or calls request_body_written. */
void wp_router_request_body(wp_stream *s, const char *data, size_t len);
/* A local reply, or the stream's end: its pool request is cancelled, its connection given
 * back (reset) and its max_requests slot released. */
void wp_router_cancel(wp_stream *s);
/* on_stream_complete: wp_router_cancel, the retry state's end (wp_retry_end) and URX in the
 * log when retries ran out. */
void wp_router_stream_complete(wp_stream *s);
/* on_below_write_buffer_low_watermark: the upstream response is read on. */
void wp_router_downstream_writable(wp_stream *s);
/* One upstream attempt: the load balancer chooses a host (503 UH when none), the max_requests
 * breaker is checked (503 UO), the pool is asked for a connection; the answer comes through
 * the pool's callbacks. */
void wp_router_upstream_request(wp_stream *s);
/* The attempt is over without a connection in hand: its pool request is cancelled and its
 * max_requests slot released (a retry, the stream's end). */
void wp_router_pool_done(wp_stream *s);
/* Writes what the stream has for the upstream now (deferred during parsing). */
void wp_router_flush(wp_stream *s);
/* on_deadline: the route timeout passed. */
void wp_router_timeout(wp_stream *s);
/* The try deadline passed: a per-try timeout or the end of a back-off. */
void wp_router_try_timer(wp_stream *s);
/* Ends an attempt: the upstream connection goes back (reusable) or is closed. */
void wp_router_end_upstream(wp_stream *s, bool reusable);

/* router.c: a reset reason (WP_RESET_*, upstream/conn_pool.h) as Envoy writes it. */
const char *wp_reset_reason_string(int reason);
#endif
