/*
 * router_retry.h - the retry state machine of one stream (router_retry.c): Envoy's
 * RetryStateImpl plus the router's retry/shadow buffer (reference §3 and §4). The router
 * (router.h) drives it; it calls nothing of the router.
 */
#ifndef WEFT_PROXY_FILTERS_HTTP_ROUTER_RETRY_H
#define WEFT_PROXY_FILTERS_HTTP_ROUTER_RETRY_H

#include "proxy/filters/http/router_state.h"
#include "proxy/http/conn.h"

/* router.c and router_retry.c: the router's state of s, in the router filter's slot (the
 * terminal filter of s's chain; router_state.h). */
static inline wp_router_state *wp_rs(const wp_stream *s)
{
    return wp_fchain_terminal_slot(&s->fcs);
}

/* router.c and router_retry.c: the connection manager's callbacks of s's chain. */
static inline const wp_filter_callbacks *wp_router_cm(const wp_stream *s)
{
    return s->fcs.cb;
}
/* Envoy's sendLocalReply from the router: status, body (may be ""), details (static), flag
 * (wp_response_flag) or -1. */
static inline void wp_router_local_reply(wp_stream *s, int status, const char *body,
                                         const char *details, int flag)
{
    s->fcs.cb->send_local_reply(s, status, body, details, flag);
}
/* The same for the router's own timeouts: a gRPC request gets grpc-status 4
 * DEADLINE_EXCEEDED instead of the status mapped from the 504 (Envoy PR #44479, runtime guard
 * envoy.reloadable_features.grpc_timeout_returns_deadline_exceeded, on by default; an older
 * Envoy answers 14 UNAVAILABLE). */
static inline void wp_router_timeout_reply(wp_stream *s, int status, const char *body,
                                           const char *details, int flag)
{
    if (s->fcs.cb->send_local_reply_grpc)
        s->fcs.cb->send_local_reply_grpc(s, status, status == 504 ? 4 : -1, body, details, flag);
    else
        s->fcs.cb->send_local_reply(s, status, body, details, flag);
}

/* Sets up the retry state when the route has a policy (call once the cluster is known). */
void wp_retry_begin(wp_stream *s);
/* A request body slice arrived (the router state's body): keep it for replay (body cleared,
 * the connection manager's decoding buffer drained), or
 * give retries up when the buffer limit is crossed (507 when no attempt is in flight).
 * Returns 1 when the stream was answered (507), else 0. */
int wp_retry_body(wp_stream *s);
/* Up to max buffers of the retry buffer from byte off on, appended at bufs[*n] (*n grows);
 * returns the bytes in them. wp_retry_slices starts at this attempt's rb_sent. */
size_t wp_retry_slices_from(wp_stream *s, size_t off, uv_buf_t *bufs, unsigned *n, unsigned max);
size_t wp_retry_slices(wp_stream *s, uv_buf_t *bufs, unsigned *n, unsigned max);
/* The attempt ended by a reset / a response / a per-try timeout: true when a retry was
 * scheduled (the caller ends the attempt and stops), false when the failure goes downstream (URX
 * set when retries ran out). */
bool wp_retry_after_reset(wp_stream *s, int reason);
bool wp_retry_after_response(wp_stream *s, const h1_message *m);
bool wp_retry_after_per_try_timeout(wp_stream *s);
/* Arms the per-try (and per-try idle) timeout when the attempt is connected and the
 * request complete. */
void wp_retry_arm_per_try(wp_stream *s);
/* The try deadline passed with no back-off pending: 1 when the per-try timeout expired,
 * 2 when the per-try idle timeout did, 0 when neither (the deadline is re-armed). */
int wp_retry_try_due(wp_stream *s);
/* The response started: the per-try timeout stops, the idle timeout goes on. */
void wp_retry_response_started(wp_stream *s);
/* Both per-try timers stop (the attempt ended). */
void wp_retry_disarm(wp_stream *s);
/* The back-off ended: the attempt's state is reset (the router then starts the next). */
void wp_retry_fire(wp_stream *s);
/* The stream ends: release the buffer, the breaker slot, the timers. */
void wp_retry_end(wp_stream *s);
/* previous_hosts: whether host must be skipped for this attempt. */
bool wp_retry_host_tried(const wp_stream *s, int host);

#endif
