/*
 * proxy_internal.h - the data plane's shared structures: the server (process), its workers,
 * the generations, downstream connections and their streams. Their functions are in their
 * modules' headers: server/gen.h, http/conn.h (the connection manager), filters/http/router.h
 * (the router and its retries), upstream/conn_pool.h. Not a public API: only the proxy's own
 * sources include it (docs/architecture.md says what is still to leave it).
 *
 * Threading (DESIGN.md): one libuv loop per worker; a worker owns its connections, its
 * pools, its stats shard and its access-log writer, and reads the config snapshot it holds
 * a reference to. Nothing here is shared between workers except the cluster runtime
 * counters (circuit breakers and per-host counters, relaxed atomics) and the stats store.
 *
 * Memory: an idle downstream connection holds only wp_dconn (no read buffer, no stream);
 * read buffers come from a per-worker free list while bytes are pending and go back when
 * the buffer empties. Bodies are not copied: a body slice is written from the buffer it was
 * read into, and the reading side stops reading until the write completes (that is the
 * back-pressure: at most one buffer per direction per connection is held). The one
 * exception is the retry/shadow buffer (router_retry.c): while a request may still be
 * retried or mirrored, its body is also copied once into blocks of the worker's free list,
 * up to the route's buffer limit (1 MiB by default).
 *
 * Lifetimes (net/deferred.h, Envoy's deferred delete): a stream that ends (conn.c
 * stream_finish) is put on its worker's deferred-delete list and goes back to free_streams
 * at the end of the loop iteration; a connection that closes closes its socket and timers
 * at once and is freed from their close callbacks, also at the end of the iteration. A
 * stream or connection therefore stays valid for the rest of the callback that ended it:
 * callers may look at it after any call (s->d->stream != s: the stream ended; d->closing,
 * u->closing: the connection closed).
 */
#ifndef WEFT_PROXY_INTERNAL_H
#define WEFT_PROXY_INTERNAL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/http/xff.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/config/config.h"
#include "proxy/http/filter.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/net/buf_pool.h"
#include "proxy/net/deferred.h"
#include "proxy/net/raw_socket.h"
#include "proxy/upstream/outlier.h"
#include "proxy/stats/pstats.h"
#include "proxy/config/route.h"
#include "proxy/http/stream_info.h"
#include "proxy/upstream/conn_pool.h"

#define WP_MAX_TRAILERS 16           /* response trailers kept per stream for %TRAILER()% */
#define WP_HEAD_EXTRA   (4u * 1024u) /* room past max_request_headers_kb for the request line */
#define WP_MAX_HEADERS  103u         /* 99 parsed (conn.c), +4 added by the proxy */
_Static_assert(WP_MAX_HEADERS == WP_UPSTREAM_MAX_HEADERS, "one header limit both ways");
/* header-ops levels of one head: weighted cluster, route, virtual host, route configuration
 * and the HTTP filters' (proxy/http/filter.h) */
#define WP_HOPS_LEVELS (4 + WP_FILTER_MAX_OPS)

typedef struct wp_server wp_server;
typedef struct wp_worker wp_worker;
typedef struct wp_dconn wp_dconn;
typedef struct wp_stream wp_stream;
typedef struct wp_gen wp_gen;
typedef struct wp_wgen wp_wgen;
typedef struct wp_lb wp_lb; /* upstream/lb.h */

/* ---------- read buffers: the worker's free list (net/buf_pool.h) ---------- */

static inline wp_buf *wp_buf_get(wp_worker *w, size_t cap);
static inline void wp_buf_put(wp_worker *w, wp_buf *b);

/* ---------- cluster runtime (process-wide, shared by workers) ---------- */

typedef struct {
    atomic_uint_fast64_t cx_active, cx_total, cx_connect_fail, rq_active, rq_total, rq_error,
        rq_success, rq_timeout;
} wp_host_rt;

typedef struct {
    atomic_uint cx_open, rq_pending, rq_active, retries_active; /* circuit breaker gauges */
    wp_host_rt *hosts;                                          /* per endpoint */
    wp_cstats st;                                               /* stat slots */
    wp_od_cluster od;                                           /* outlier detection (outlier.h) */
} wp_cluster_rt;

/* ---------- downstream ---------- */

struct wp_dconn {
    wp_raw_socket raw;     /* the TCP socket under sock */
    wp_tsock *sock;        /* the transport socket (net/transport_socket.h): &raw.base */
    uv_timer_t idle_timer; /* connection idle / stream idle */
    uv_timer_t rq_timer;   /* route timeout (or request_timeout) */
    wp_worker *w;
    wp_wgen *wg; /* the generation of listener, hs, ls (one use of it) */
    const wp_listener *listener;
    /* The filter chain the connection matched (net/filter_chain_match.h) and its HTTP
     * connection manager; NULL while listener filters run and for a connection no chain
     * matched (closed, counted in no_filter_chain_match). */
    const wp_filter_chain *chain;
    const wp_hcm *hcm;
    const wp_hstats *hs; /* its connection manager's stat slots */
    const wp_lstats *ls; /* its listener's stat slots */
    uint64_t id;
    wp_buf *rbuf;
    size_t rlen;   /* bytes in rbuf */
    size_t rstart; /* bytes before rstart are consumed */
    wp_stream *stream;
    struct wp_dconn *prev, *next; /* worker's connection list */
    char remote[48], local[48];   /* "ip:port", "[v6]:port" */
    uint64_t last_activity;       /* loop time (ms) of the last read or write */
    uint64_t start_ms;            /* loop time (ms) of the accept (downstream_cx_length_ms) */
    uint64_t rq_deadline;         /* loop time (ms) of the route/request timeout, 0 = none */
    uint64_t try_deadline;        /* loop time (ms) of the per-try timeout or back-off, 0 = none */
    bool writing, reading, peer_closed, closing, close_after;
    bool tunnel;
    bool in_process; /* parsing: upstream writes wait until the pass ends */
    int closed_handles;
    /* the listener filters' state: the accepted socket as they annotate it and their run;
     * malloc'd only on a listener that has listener filters, NULL otherwise */
    struct wp_dconn_lf {
        wp_lf_socket sock;
        wp_lf_callbacks cb;
    } * lf;
    wp_nf_chain nf; /* the chain's network filters (the HCM: this connection) */
};

typedef enum {
    WP_ST_HEADERS,  /* request head parsed, upstream being chosen */
    WP_ST_UPSTREAM, /* waiting for / talking to an upstream */
    WP_ST_DONE,     /* response complete */
} wp_stream_state;

struct wp_stream {
    wp_dconn *d;
    wp_config *cfg; /* d->wg's snapshot (the connection holds it for the stream's life) */
    wp_stream_info si;
    h1_parser parser; /* request parser (the connection's, while this stream lives) */
    h1_message req;   /* rebased into head */
    char *head;       /* copy of the request head (head_inline or malloc'd) */
    size_t head_len;
    const wp_route *route;
    const wp_vhost *vhost;
    int weighted; /* index of the weighted cluster chosen, -1 none */
    int cluster;  /* -1 none */
    /* request body flow */
    const char *body_ptr; /* slice of d->rbuf waiting to be written upstream */
    size_t body_len;
    bool req_complete, req_chunked, upgrade;
    bool charged;  /* counted in downstream_rq_completed and _<N>xx (count_response) */
    bool resolved; /* wp_cached_route_refresh ran: route, vhost, weighted, cluster are set */
    char request_id[40];
    char remote_buf[WP_XFF_ADDR_MAX]; /* downstream remote taken from x-forwarded-for (xff.h) */
    char ust_buf[24];
    char chunk_out[24];
    const char *extra_resp_header; /* e.g. "location: ...\r\n" for redirects */
    /* response */
    size_t nresp_hdrs;
    char *resp_copy; /* copy of the upstream response head (resp_inline or malloc'd) */
    bool resp_started, resp_chunked, resp_close, resp_done;
    bool head_unsent;     /* response head built, not yet written */
    bool upstream_failed; /* the upstream failed after the response started (not DC) */
    bool local_reply;
    wp_fchain_state fcs; /* the HTTP filter chain's state (proxy/http/filter.h) */
    wp_deferred_item dd; /* on the worker's deferred-delete list once ended (stream_finish) */
    /* ---- from here on, kept when a stream is reused (not zeroed per request): buffers that
     * are written before they are read ---- */
    struct wp_stream *next_free;
    /* the filters' per-stream slots (fcs.slots): each filter's init sets its slot up */
    alignas(max_align_t) unsigned char fslots[WP_FCHAIN_SLOTS_MAX];
    wf_strbuf extra;
    wf_strbuf xff; /* x-forwarded-for with the peer appended (use_remote_address) */
    wf_strbuf trl; /* bytes of the upstream response's trailers (resp_trl points here) */
    h1_header resp_trl[WP_MAX_TRAILERS]; /* the response trailers kept for the access log */
    wf_strbuf up_head;                   /* upstream request head */
    wf_strbuf resp_head;                 /* head sent downstream */
    char *path_buf;  /* the normalized :path when normalization changed it (conn.c) */
    size_t path_cap; /* bytes of path_buf; grown, never shrunk, while the stream is reused */
    char head_inline[2048];
    char resp_inline[1024];
    h1_header hdrs[WP_MAX_HEADERS];
    h1_header resp_hdrs[WP_MAX_HEADERS];
    /* what access logs see of the request once the router changed it (router.c log_view) */
    wf_strbuf log_head;
    h1_message log_req;
    h1_header log_hdrs[WP_MAX_HEADERS];
};

#define WP_STREAM_RESET_BYTES offsetof(wp_stream, next_free)

/* ---------- generations (gen.c) ----------
 * A generation is one applied config snapshot with everything indexed by its cluster and
 * listener numbers: the process-wide cluster runtime (circuit breakers, per-host counters,
 * outlier detection) and stat slots (wp_gen), and per worker the connection pools (wp_wgen).
 * A config update makes a new generation; requests already running finish on the one they
 * started with, so a cluster index never meets another snapshot's arrays. Nothing is carried
 * across generations yet: breaker counts and outlier ejections of a cluster start afresh
 * (Envoy keeps a cluster's state when only its endpoints change).
 *
 * Lifetimes: wp_gen is reference counted (atomic; the server holds the current one, each
 * worker generation one). A wp_wgen belongs to its worker thread; `users` counts the
 * downstream connections, upstream connections and shadows that point into it (a plain
 * integer: worker-local). A worker's current generation lives until the next one is
 * installed; a retired one is freed when its last user goes. */
struct wp_gen {
    atomic_uint refs;
    wp_config *cfg;     /* one reference */
    wp_cluster_rt *crt; /* per cluster of cfg */
    wp_pstats *pstats;  /* stat slots of cfg (registration is by name: same name, same slot) */
};

struct wp_wgen {
    wp_gen *gen;
    wp_pool *pools; /* per cluster of gen->cfg */
    wp_lb *lbs;     /* per cluster of gen->cfg: the worker's load balancers */
    size_t users;
    bool retired;
    struct wp_wgen *next; /* the worker's retired generations */
};

/* One more user of wg (wp_wgen_release, server/gen.h, is the other half). */
static inline void wp_wgen_use(wp_wgen *wg)
{
    wg->users++;
}

/* A listening socket of a worker, named after its listener. */
typedef struct wp_wlistener {
    uv_tcp_t tcp;
    wp_worker *w;
    int index; /* listener index in the worker's current snapshot; -1 once removed */
    char name[160];
    wp_addr addr;
    struct wp_wlistener *next;
} wp_wlistener;

/* What the main thread hands a worker with a new generation: the generation (one
 * reference, taken over) and a bound socket per listener that needs a new one (fds[i] for
 * listener i of gen->cfg; -1 = keep the worker's socket of that name and address). */
typedef struct wp_gen_post {
    wp_gen *gen;
    int *fds; /* malloc'd, taken over */
} wp_gen_post;

/* ---------- worker ---------- */

struct wp_worker {
    unsigned id;
    wp_server *srv;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t async; /* stop / drain / new generation */
    wp_wlistener *listeners;
    wp_wgen *wg;      /* current generation */
    wp_wgen *retired; /* earlier generations still in use */
    wp_config *cfg;   /* wg->gen->cfg */
    uv_mutex_t post_lock;
    wp_gen_post post; /* the next generation from the main thread (under post_lock) */
    wp_pstats_shard *stats;
    wp_regex_ctx rx;
    wp_alog_writer alog_writer;
    wp_alog_writer *alog;    /* &alog_writer once started */
    wp_buf_pool bufs;        /* free read buffers (net/buf_pool.h) */
    char date_line[64];      /* cached "date: ...\r\n" */
    int64_t wall_base_us;    /* wall clock at wall_base_loop (wp_wall_us) */
    uint64_t wall_base_loop; /* uv_now when wall_base_us was read */
    size_t date_len;
    time_t date_sec;
    wp_stream *free_streams; /* reused streams (their buffers keep their capacity) */
    size_t nfree_streams;
    wp_wreq_pool wreqs;   /* write requests, held only while a write is pending */
    wp_deferred deferred; /* ended streams, destroyed at the end of the loop iteration */
    wp_dconn *conns;
    struct wp_shadow *shadows; /* mirrored requests in flight (shadow.c) */
    uint64_t rng;
    int backoff_jitter;   /* wp_jitter_mode (retry.h); a test hook, uniform by default */
    atomic_int cmd;       /* 0 none, 1 drain, 2 stop */
    atomic_size_t nconns; /* open downstream connections (read by the main thread) */
    bool draining;
};

/* ---------- server ---------- */

struct wp_server {
    wp_gen *gen; /* current generation (main thread only: workers use their own) */
    unsigned nworkers;
    wp_worker *workers;
    wp_stats *stats_store; /* process-wide; shard nworkers is the main thread's */
    wp_istio_rt *istio;    /* Istio standard metrics (istio_stats.h), NULL when unused */
    struct wp_alog_files *alog_files;
    atomic_uint_fast64_t next_conn_id;
    atomic_uint_fast64_t next_stream_id;
    uint64_t flush_interval_ms;
    atomic_int state; /* 0 LIVE, 1 DRAINING, 2 PRE_INITIALIZING, 3 INITIALIZING */
    atomic_int workers_started;
    int64_t start_time; /* uv_now of the main loop at start, ms */
    double loaded_unix; /* when the snapshot was applied, seconds since the epoch */
};

/* server.c */
struct wp_listen_hold;
/* Applies a new snapshot (one reference of cfg, taken over) on the main thread: builds its
 * generation, binds the sockets of new listeners for every worker (taking those hold has
 * held since their LDS update, listen_hold.h; hold may be NULL) and posts it to them; the
 * previous generation serves the requests already running. Returns 0; 1 when it was applied
 * but some listeners could not bind (they stay without sockets and are tried again with the
 * next update; err holds Envoy's "Error adding/updating listener(s) NAME: cannot bind ..."
 * lines); or -1 with the reason appended to err (a route index or access log that does not
 * compile, out of memory): the current snapshot then stays. */
int wp_server_apply(wp_server *srv, wp_config *cfg, struct wp_listen_hold *hold, wf_strbuf *err);

/* Wall clock in microseconds since the epoch, from the loop clock (re-read every second). */
int64_t wp_wall_us(wp_worker *w);

static inline wp_buf *wp_buf_get(wp_worker *w, size_t cap)
{
    return wp_buf_pool_get(&w->bufs, cap);
}

static inline void wp_buf_put(wp_worker *w, wp_buf *b)
{
    wp_buf_pool_put(&w->bufs, b);
}

static inline uint64_t wp_rand(wp_worker *w)
{
    /* xorshift64*: per worker, no lock (the step of upstream/lb.h wp_rng_next) */
    uint64_t x = w->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Whether s's request is a HEAD (its answer has no body). */
static inline bool wp_stream_is_head(const wp_stream *s)
{
    return s->req.method.len == 4 && memcmp(s->req.method.p, "HEAD", 4) == 0;
}

/* ---------- stats (per-worker shard; no lock) ---------- */

/* A stat of the connection's HTTP connection manager (http.<stat_prefix>.*). */
static inline void wp_hcm_stat(wp_dconn *d, int which, int64_t delta)
{
    wp_stat_add(d->w->stats, d->hs->slot[which], delta);
}

/* A stat of cluster index c of generation g (cluster.<name>.*). */
static inline void wp_cluster_stat(wp_worker *w, const wp_gen *g, int c, int which, int64_t delta)
{
    wp_stat_add(w->stats, g->pstats->clusters[c].slot[which], delta);
}

/* The generation of a stream / a pool. */
static inline wp_gen *wp_stream_gen(const wp_stream *s)
{
    return s->d->wg->gen;
}
static inline wp_gen *wp_pool_gen(const wp_pool *p)
{
    return p->wg->gen;
}

#endif
