/*
 * router_state.h - the router's per-stream state (Envoy's Router::Filter members: the upstream
 * request of the current attempt, the retry state, the shadows chosen, the timeouts), kept in
 * the router filter's slot of the stream's HTTP filter chain (proxy/http/filter.h), not in the
 * stream: the connection manager never sees it.
 *
 * Lifetime: the slot is part of the stream's slot block; the router filter's init
 * (router_filter.c) zeroes the fields before `up_local` when a stream starts (a reused stream
 * keeps its block: no allocation per request), the rest is written before it is read. The
 * state lives until the stream is reused, so the stream info may point into it (up_local,
 * details_buf, tfr_buf) for the access logs. The retry buffer's blocks are the worker's read
 * buffers (net/buf_pool.h), given back when the stream completes (router_retry.c wp_retry_end).
 *
 * Threads: the stream's worker only.
 */
#ifndef WEFT_PROXY_FILTERS_HTTP_ROUTER_STATE_H
#define WEFT_PROXY_FILTERS_HTTP_ROUTER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/http/filter.h"
#include "proxy/net/buf_pool.h"
#include "proxy/upstream/conn_pool.h"

typedef struct wp_router_state {
    /* the request body slice the router holds (the connection manager's decoding buffer:
     * decode_data's slice, or decoding_buffer's when the router started), NULL none */
    const char *body;
    size_t body_len;
    bool routing;       /* decode_headers ran: the router has the request */
    bool timer_started; /* the route timeout took the stream's deadline over */
    bool head_sent;     /* this attempt's request head went upstream */
    bool req_end_sent;  /* this attempt's request end went upstream */
    int host;           /* the attempt's host (endpoint index of the cluster), -1 none */
    /* the upstream attempt */
    wp_uconn *up;
    wp_pool_req preq; /* the attempt's request to the pool while it waits for a connection */
    bool counted_rq;  /* counted in upstream_rq_active */
    bool counted_cb;  /* holds a max_requests circuit-breaker slot (rq_active) */
    /* retries (router_retry.c); rp NULL = no retry state (none, used up, or abandoned) */
    const wp_retry_policy *rp;
    wp_retry_policy rp_own; /* the route's policy merged with the request's retry headers */
    uint32_t rp_codes[16];  /* rp_own's status codes: the route's, then the headers' */
    uint32_t retries_left, backoffs;
    uint64_t retry_limit;   /* retry buffer limit, bytes */
    bool retry_buffering;   /* request body kept in the retry buffer for replay */
    bool backoff_pending;   /* waiting for the back-off: no attempt in flight */
    bool retry_slot;        /* holds a max_retries circuit-breaker slot */
    bool per_try_armed;     /* this attempt's per-try timeout runs (try deadline) */
    bool retries_exhausted; /* a failure matched the policy with no retry left: URX */
    uint8_t shadow_mask;    /* mirror policies chosen for this request, not yet sent */
    bool idle_armed;        /* this attempt's per_try_idle_timeout runs */
    uint64_t try_end;       /* loop ms when the per-try timeout expires (per_try_armed) */
    uint64_t up_activity;   /* loop ms of the attempt's last upstream read (idle_armed) */
    uint8_t ntried;         /* hosts of earlier attempts (previous_hosts) */
    int tried[8];
    wp_buf *rb_head, *rb_tail; /* the retry buffer: WP_BUF_SIZE blocks */
    size_t rb_len;             /* bytes kept */
    size_t rb_sent;            /* bytes of them this attempt has written */
    size_t wr_rb;              /* bytes of the buffer in the pending upstream write */
    bool wr_direct;            /* the pending upstream write holds body */
    /* the router's timeouts for this request: the route's, or what an internal request's
     * x-envoy-* headers made of them (router.c, FilterUtility::finalTimeout) */
    uint64_t timeout_ms, per_try_timeout_ms; /* 0 = none */
    bool timeout_alt_204;                    /* x-envoy-upstream-rq-timeout-alt-response */
    bool grpc_timeout;                       /* a gRPC request on a route with max_grpc_timeout:
                                                grpc-timeout upstream is the expected timeout */
    /* ---- from here on, not zeroed when a stream starts: written before they are read ---- */
    char up_local[64]; /* the last attempt's local address (uconn.local; si.upstream_local) */
    char chunk_line[24];    /* the chunk-size line of the body slices being written upstream */
    char details_buf[192];  /* si.details of an upstream reset (upstream_reset_..._started{}) */
    char up_peer_san[128];  /* the last attempt's upstream TLS peer URI SANs (si) */
    char up_local_san[128]; /* and the local ones (our certificate's) */
} wp_router_state;

#define WP_ROUTER_STATE_RESET_BYTES offsetof(wp_router_state, up_local)

#endif
