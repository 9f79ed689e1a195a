/*
 * upstream/conn_pool.h - the HTTP/1 connection pool of one cluster on one worker (Envoy's
 * ConnectionPool::Instance, source/common/http/http1/conn_pool.cc and
 * source/common/conn_pool/conn_pool_base.cc; docs intro/arch_overview/upstream/
 * connection_pooling and circuit_breaking). Implemented in upstream.c; the choice between
 * it and the HTTP/2 pool (wp_pool_newstream_http, wp_pools_close_idle) in pools.c.
 *
 * The pool hands connections to requests; it never sees a stream and never answers a
 * client. A caller (the router) has chosen a host with the load balancer (lb.h) and asks
 * with wp_pool_newstream, giving a request handle it owns and a callbacks table:
 *  - on_ready(ctx, u, host): u is the caller's until it gives it back with
 *    wp_uconn_release (or closes it); host is the connection's host, which may differ from
 *    the one asked for when a queued request is served by a connection another request
 *    released (any host of the cluster, as before);
 *  - on_failure(ctx, reason, transport_failure, host): the request got no connection.
 *    Overflow: max_pending_requests was reached (stat upstream_rq_pending_overflow counted
 *    here); the caller answers 503 UO. LocalConnectionFailure (the connect could not start;
 *    transport_failure = the libuv error text), RemoteConnectionFailure (refused or reset
 *    while connecting; "delayed connect error: <errno text>"), Timeout (connect_timeout,
 *    stats upstream_cx_connect_timeout and upstream_cx_connect_fail). transport_failure
 *    is NULL or valid during the call only.
 * Either callback may run inside wp_pool_newstream (an idle connection, an overflow, a
 * connect that fails at once) or later from the loop. After it ran the handle is inert.
 *
 * Circuit breakers kept here (cluster-wide, all workers): max_pending_requests
 * (rq_pending: from newstream until the request has a connection or is cancelled; stats
 * upstream_rq_pending_total, upstream_rq_pending_active) and max_connections (cx_open; a
 * request over it waits in the pool's queue, stat upstream_cx_overflow, until a connection
 * closes or is released). max_requests and max_retries belong to the request and are
 * counted by the router.
 *
 * Connections (wp_uconn): keep-alive after a complete exchange unless either side said close
 * or max_requests_per_connection is reached (upstream_cx_max_requests); an idle connection
 * is read to notice the server closing it and is closed after the cluster's idle_timeout
 * (upstream_cx_idle_timeout). While a request holds a connection, the connection reports to
 * the owner the caller attached (wp_uconn_attach) through a callbacks table: bytes read, end
 * of stream, write completion, and a reset when the connection fails or closes under it.
 *
 * Ownership: the pool and its connections belong to one worker thread. The request handle
 * (wp_pool_req) is the caller's memory (no allocation per request); it must stay valid while
 * it is pending (until a callback ran or wp_pool_cancel). Errors: out of memory for a new
 * connection is a LocalConnectionFailure "out of memory".
 */
#ifndef WEFT_PROXY_UPSTREAM_CONN_POOL_H
#define WEFT_PROXY_UPSTREAM_CONN_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "http/h1_parser.h"
#include "proxy/net/raw_socket.h"

#define WP_UPSTREAM_MAX_HEADERS 104u /* response header lines parsed per connection */
/* the largest response head a connection buffers: 64 KiB of headers, 4 KiB of status line */
#define WP_UPSTREAM_HEAD_MAX (68u * 1024u)

typedef struct wp_buf wp_buf;
typedef struct wp_worker wp_worker;
typedef struct wp_wgen wp_wgen;
typedef struct wp_uconn wp_uconn;
typedef struct wp_pool wp_pool;
typedef struct wp_pool_req wp_pool_req;
struct wp_cluster;

/* Why a request got no connection (Envoy's ConnectionPool::PoolFailureReason). */
typedef enum {
    WP_POOL_OVERFLOW,
    WP_POOL_LOCAL_CONNECTION_FAILURE,
    WP_POOL_REMOTE_CONNECTION_FAILURE,
    WP_POOL_TIMEOUT,
} wp_pool_failure;

/* Reset reasons, as Envoy's Http::StreamResetReason (resetReasonToString): what a
 * connection reports to its owner (wp_uconn_callbacks.on_reset) and the router logs. */
enum {
    WP_RESET_LOCAL_CONNECTION_FAILURE,
    WP_RESET_REMOTE_CONNECTION_FAILURE,
    WP_RESET_CONNECTION_TIMEOUT,
    WP_RESET_CONNECTION_TERMINATION,
    WP_RESET_LOCAL_RESET,
    WP_RESET_OVERFLOW,
    WP_RESET_PROTOCOL_ERROR,
    /* HTTP/2 upstreams (upstream/pool_h2.h): RST_STREAM(REFUSED_STREAM) or a stream above a
     * GOAWAY's last stream id; any other RST_STREAM from the upstream */
    WP_RESET_REMOTE_REFUSED_STREAM_RESET,
    WP_RESET_REMOTE_RESET,
    WP_RESET_COUNT_ /* the number of reasons (tests iterate them) */
};

/* The pool's answer to one request (Envoy's ConnectionPool::Callbacks). */
typedef struct wp_pool_callbacks {
    void (*on_ready)(void *ctx, wp_uconn *u, int host);
    void (*on_failure)(void *ctx, wp_pool_failure reason, const char *transport_failure, int host);
} wp_pool_callbacks;

/* One request of a pool (Envoy's Cancellable): caller-owned, filled by wp_pool_newstream. */
struct wp_pool_req {
    wp_pool *pool; /* NULL: never asked */
    const wp_pool_callbacks *cb;
    void *ctx;
    struct wp_pool_req *next; /* in the pool's queue */
    wp_uconn *connecting;     /* connection being opened for it */
    int host;
    bool pending; /* counted in rq_pending (no connection yet) */
    bool queued;  /* waiting in the pool's queue for a max_connections slot */
    bool mux;     /* the connection is for an HTTP/2 connection (pool_h2.c), not a request */
    /* ORIGINAL_DST clusters (config.h original_dst): the address to connect to, the downstream
     * connection's original destination (borrowed: valid while the request is pending) */
    const struct sockaddr *dst;
    struct wp_h2conn *h2wait; /* waiting for a stream of this HTTP/2 connection */
    /* takes rq out of that connection's queue (set with h2wait by pool_h2.c, which is above
     * this file: wp_pool_cancel calls it without naming it) */
    void (*unwait)(struct wp_pool_req *rq);
};

/* What a connection tells the owner of the request on it (set with wp_uconn_attach). */
typedef struct wp_uconn_callbacks {
    /* n new bytes were read into u->rbuf (after u->rstart..u->rlen) */
    void (*on_data)(void *owner, wp_uconn *u, size_t n);
    /* the upstream closed (or reset) its side; the connection closes after the call unless
     * the owner closed or released it */
    void (*on_eof)(void *owner, wp_uconn *u);
    /* a write that was pending (wp_uconn_write returned 1) completed */
    void (*on_written)(void *owner, wp_uconn *u);
    /* the connection failed or closed under the request (WP_RESET_*); it is no longer the
     * owner's (detached, do not release it) */
    void (*on_reset)(void *owner, wp_uconn *u, int reason);
} wp_uconn_callbacks;

typedef enum { WP_UC_CONNECTING, WP_UC_IDLE, WP_UC_BUSY, WP_UC_CLOSING } wp_uc_state;

struct wp_uconn {
    wp_raw_socket raw; /* the TCP socket under sock */
    wp_tsock *sock;    /* the transport socket (net/transport_socket.h): &raw.base */
    uv_connect_t connect;
    uv_timer_t timer; /* connect timeout, then idle timeout */
    wp_pool *pool;
    wp_worker *w;
    int host;
    uint64_t id;
    wp_uc_state state;
    void *owner; /* the request in flight (wp_uconn_attach), NULL none */
    const wp_uconn_callbacks *cbs;
    wp_pool_req *preq;     /* the request this connection is being opened for */
    struct wp_uconn *next; /* idle list */
    wp_buf *rbuf;
    size_t rlen, rstart;
    h1_parser parser;
    h1_header hdrs[WP_UPSTREAM_MAX_HEADERS];
    uint32_t requests;   /* requests sent on this connection */
    uint64_t idle_since; /* uv_now when it last went back to the pool */
    uint64_t start_ms;   /* uv_now when the connect began (cx_connect_ms, cx_length_ms) */
    bool writing, reading, pinned, closing, response_seen;
    bool peer_closed;   /* the upstream closed (or reset) its side: a remote destroy */
    bool peer_reset_rq; /* ... in the middle of a request (destroy_remote_with_active_rq) */
    /* the owner takes the upstream's end of stream as a half-close (the TCP proxy, Envoy's
     * enableHalfClose): on_eof comes and the connection stays open for writing; a read error
     * (a reset) detaches the owner, closes the connection and comes as on_reset
     * (WP_RESET_CONNECTION_TERMINATION). Set by the owner after on_ready. */
    bool half_close;
    /* HTTP/2 (upstream/pool_h2.h): mux, the connection carries an HTTP/2 session (its owner
     * is the session, never a request); stream, this is one stream of such a session handed
     * to a request (its socket is the stream: no connection stats, never pooled) */
    bool mux, stream;
    int closed_handles;
    /* the cluster's istio.metadata_exchange (net/peer_exchange.h: Envoy's
     * upstream network filter on this connection), malloc'd on connect when the cluster has
     * one: on its ALPN the peer's preamble is drained here before the owner sees any byte
     * (the TCP proxy also writes ours); NULL none */
    struct wp_tcp_mx *mx;
    char local[64];
    /* ORIGINAL_DST: the address this connection went to (its host is the cluster's single
     * placeholder host 0); dst_text "ip:port" as the access log prints upstream hosts */
    bool has_dst;
    struct sockaddr_storage dst;
    char dst_text[64];
};

/* Per worker and cluster: idle connections and waiting requests. */
struct wp_pool {
    wp_worker *w;
    wp_wgen *wg; /* the generation whose cluster index `cluster` is */
    int cluster;
    wp_uconn **idle;                          /* per host: LIFO list of idle connections */
    wp_pool_req *pending_head, *pending_tail; /* waiting for a max_connections slot */
    struct wp_h2conn **h2; /* per host: HTTP/2 connections (pool_h2.c), NULL for HTTP/1 */
    uint32_t h2_slots[4];  /* cluster.<name>.http2.* (pool_h2.c), once h2_slots_set */
    bool h2_slots_set;
};

/* The pools of wg's clusters (wg->pools); each connection of them is a user of wg
 * (upstream/cluster_manager.h wp_wgen_use / wp_wgen_release). -1 on out of memory. */
int wp_pools_init(wp_worker *w, wp_wgen *wg);
/* Closes the idle connections of wg's pools, HTTP/1 and HTTP/2 (the generation is retired;
 * pools.c). */
void wp_pools_close_idle(wp_wgen *wg);
/* The same for the HTTP/1 connections only (upstream.c). */
void wp_pools_close_idle_h1(wp_wgen *wg);
void wp_pools_free(wp_wgen *wg);

/* Asks p for a connection to host for one request (see above). rq: the caller's handle,
 * (re)initialised here. Returns true while rq is pending (a callback comes later), false
 * when a callback already ran. */
bool wp_pool_newstream(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                       void *ctx);
/* The same for an ORIGINAL_DST cluster (Envoy's OriginalDstCluster, protocols.md §5.3): the
 * connection goes to dst (the downstream's original destination; borrowed while pending),
 * host is 0; only an idle connection to the same dst is reused. The cluster's
 * upstream_bind_config source address, when set, is bound first (InboundPassthroughCluster's
 * 127.0.0.6). A connection of its own (HTTP/1, TCP). */
bool wp_pool_newstream_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                           const wp_pool_callbacks *cb, void *ctx);
/* The router's: an HTTP request to dst on an ORIGINAL_DST cluster, as wp_pool_newstream_http
 * (an HTTP/2 upstream gets a stream of a shared connection to the same dst, pools.c). */
bool wp_pool_newstream_http_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                                const wp_pool_callbacks *cb, void *ctx, bool downstream_h2);
/* The upstream host text of connection u of cluster c: its original destination on an
 * ORIGINAL_DST cluster, else the host's address. */
const char *wp_uconn_host_text(const wp_uconn *u, const struct wp_cluster *c);
/* The same for an HTTP request (the router): on a cluster whose upstream protocol is HTTP/2
 * (explicit, or use_downstream_protocol_config with downstream_h2) the request gets a stream
 * of a shared HTTP/2 connection (upstream/pool_h2.h), handed over as a wp_uconn like an
 * HTTP/1 connection (u->stream). wp_pool_newstream always gives a connection of its own
 * (the TCP proxy's). pools.c. */
bool wp_pool_newstream_http(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                            void *ctx, bool downstream_h2);
/* Cancels a pending request (stat upstream_rq_cancelled when it was waiting): no callback
 * comes; a connection being opened for it joins the pool when it is up. No-op when rq is
 * not pending. */
void wp_pool_cancel(wp_pool_req *rq);

/* The request on u is owner's: u reports to cbs until wp_uconn_detach. */
static inline void wp_uconn_attach(wp_uconn *u, const wp_uconn_callbacks *cbs, void *owner)
{
    u->cbs = cbs;
    u->owner = owner;
}
static inline void wp_uconn_detach(wp_uconn *u)
{
    u->owner = NULL;
}
/* The caller is done with u (detached): back to the pool when reusable, else closed. */
void wp_uconn_release(wp_uconn *u, bool reusable);
/* Closes u (local: counted as a local destroy unless the peer closed first). */
void wp_uconn_close(wp_uconn *u, bool local);
/* Writes bufs (0 written now, 1 pending: on_written follows, -1 failed: on_reset came). */
int wp_uconn_write(wp_uconn *u, uv_buf_t *bufs, unsigned n);
void wp_uconn_pause_read(wp_uconn *u);
void wp_uconn_resume_read(wp_uconn *u);
/* For pool_h2.c. wp_pool_connect: opens a connection for an HTTP/2 session (rq->mux; no
 * pending request is counted; the callbacks answer as for a request); wp_pool_connect_dst
 * the same to dst on an ORIGINAL_DST cluster (host 0; dst copied). wp_uconn_stream_new:
 * a wp_uconn for one stream of a session on pool p's host, whose transport socket init
 * makes from arg (the socket reports to the connection's callbacks); counted as a request of
 * the host; its id, local address and original destination are the session connection's
 * (session). NULL when out of memory.
 * wp_uconn_stream_reset: the stream failed (reason WP_RESET_*): its owner is detached and
 * told (on_reset), the stream closes. wp_pool_pending_end: rq, waiting for a session, got a
 * stream or a failure (its pending count ends). */
void wp_pool_connect(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb, void *ctx);
void wp_pool_connect_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                         const wp_pool_callbacks *cb, void *ctx);
wp_uconn *wp_uconn_stream_new(wp_pool *p, int host, const wp_uconn *session,
                              wp_tsock *(*init)(void *arg, const wp_tsock_cbs *cbs, void *owner),
                              void *arg);
void wp_uconn_stream_reset(wp_uconn *u, int reason);
void wp_pool_pending_end(wp_pool_req *rq);
bool wp_pool_pending_begin(wp_pool *p, wp_pool_req *rq);

/* Shuts u's write side once its pending write is done (the upstream reads end of stream);
 * reading goes on. 0 or UV_E*. */
int wp_uconn_shutdown(wp_uconn *u);

#endif
