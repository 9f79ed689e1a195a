/*
 * worker.h - a worker's context: the libuv loop of one worker thread and what every layer
 * running on it shares (Envoy's Event::Dispatcher and the thread-local parts the layers
 * reach through it): read buffers, write requests, the deferred-delete list, random numbers,
 * the wall clock, the stats shard, the regex scratch, the access-log writer, the ring of
 * recent failed requests and the
 * process-wide id counters. The thread, its listening sockets and the hand-over of
 * generations are server/worker.h's.
 *
 * Threading (DESIGN.md): one loop per worker; a worker owns its connections, its pools, its
 * stats shard and its access-log writer, and reads the config snapshot it holds a reference
 * to. Nothing here is shared between workers except what the pointers marked "process-wide"
 * point at (atomics).
 *
 * Layers: this header sits below upstream/, http/ and the filters, and knows none of them.
 * The members typed `struct wp_x *` are slots the layers above keep per worker (their
 * current generation, connections, reused streams, mirrored requests, listening sockets):
 * this layer only holds them, never looks into them.
 *
 * Memory: read buffers come from the worker's free list while bytes are pending and go back
 * when the buffer empties (net/buf_pool.h); write requests from wreqs, held only while a
 * write is pending (net/raw_socket.h). Objects ended in a callback go on `deferred` and are
 * freed at the end of the loop iteration (net/deferred.h).
 */
#ifndef WEFT_PROXY_EVENT_WORKER_H
#define WEFT_PROXY_EVENT_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

#include "proxy/access_log/alog_sink.h"
#include "proxy/config/config.h"
#include "proxy/config/route.h"
#include "proxy/net/buf_pool.h"
#include "proxy/net/deferred.h"
#include "proxy/net/raw_socket.h"
#include "proxy/pstats/pstats.h"
#include "proxy/stream_info/failed_ring.h"

typedef struct wp_worker wp_worker;

/* What the main thread hands a worker with a new generation: the generation (one
 * reference, taken over) and a bound socket per listener that needs a new one (fds[i] for
 * listener i of gen->cfg; -1 = keep the worker's socket of that name and address). */
typedef struct wp_gen_post {
    struct wp_gen *gen;
    int *fds; /* malloc'd, taken over */
} wp_gen_post;

struct wp_worker {
    unsigned id;
    struct wp_server *srv; /* the process (server/instance.h): only server/ looks into it */
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t async;               /* stop / drain / new generation */
    struct wp_wlistener *listeners; /* listening sockets (server/worker.h) */
    struct wp_wgen *wg;             /* current generation (upstream/cluster_manager.h) */
    struct wp_wgen *retired;        /* earlier generations still in use */
    wp_config *cfg;                 /* wg->gen->cfg */
    uv_mutex_t post_lock;
    wp_gen_post post; /* the next generation from the main thread (under post_lock) */
    wp_pstats_shard *stats;
    wp_regex_ctx rx;
    wp_alog_writer alog_writer;
    wp_alog_writer *alog;    /* &alog_writer once started */
    wp_buf_pool bufs;        /* free read buffers (net/buf_pool.h) */
    char date_line[64];      /* cached date field value ("Sat, 05 Dec 2026 15:52:16 GMT") */
    int64_t wall_base_us;    /* wall clock at wall_base_loop (wp_wall_us) */
    uint64_t wall_base_loop; /* uv_now when wall_base_us was read */
    size_t date_len;
    time_t date_sec;
    struct wp_stream *free_streams; /* reused streams (http/conn.h; buffers keep capacity) */
    size_t nfree_streams;
    struct wp_h2_bstream *free_h2_streams; /* reused HTTP/2 stream states (http/conn_h2.c) */
    size_t nfree_h2_streams;
    wp_wreq_pool wreqs;             /* write requests, held only while a write is pending */
    wp_deferred deferred;           /* ended streams, destroyed at the end of the loop iteration */
    struct wp_dconn *conns;         /* downstream connections (http/conn.h) */
    struct wp_shadow *shadows;      /* mirrored requests in flight (filters/http/shadow.h) */
    struct wp_istio_rt *istio;      /* Istio's standard metrics, process-wide; NULL = unused */
    atomic_uint_fast64_t *conn_ids; /* process-wide: the next connection id */
    atomic_uint_fast64_t *stream_ids; /* process-wide: the next stream id */
    uint64_t rng;
    int backoff_jitter;   /* wp_jitter_mode (retry.h); a test hook, uniform by default */
    atomic_int cmd;       /* 0 none, 1 drain, 2 stop */
    atomic_size_t nconns; /* open downstream connections (read by the main thread) */
    /* the last failed HTTP requests (written on this thread only, read by the admin's:
     * stream_info/failed_ring.h); fixed size, zeroed = empty */
    wp_failed_ring failed;
    bool draining;
};

/* Wall clock in microseconds since the epoch, from the loop clock (re-read every second). */
int64_t wp_wall_us(wp_worker *w);

/* A read buffer of at least cap bytes from the worker's free list; NULL on out of memory. */
static inline wp_buf *wp_buf_get(wp_worker *w, size_t cap)
{
    return wp_buf_pool_get(&w->bufs, cap);
}

/* Gives b (may be NULL) back to the worker's free list. */
static inline void wp_buf_put(wp_worker *w, wp_buf *b)
{
    wp_buf_pool_put(&w->bufs, b);
}

/* A random number from the worker's generator. */
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

#endif
