/*
 * worker.c - worker threads: each runs its own libuv loop, accepts on every listener
 * through its own SO_REUSEPORT socket (the kernel spreads connections across workers, as
 * Envoy does with enable_reuse_port), and owns its connections, pools, stats shard and
 * access-log writer. The main thread talks to a worker only through its async handle
 * (drain, stop).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "proxy/alog_sink.h"
#include "proxy/proxy_internal.h"
#include "proxy/retry.h"
#include "proxy/shadow.h"
#include "proxy/worker.h"

static int listen_socket(const wp_listener *l, wf_strbuf *err)
{
    int fd = socket(l->addr.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        wf_strbuf_printf(err, "listener %s: socket: %s", l->name, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&l->addr.sa, l->addr.len) != 0) {
        wf_strbuf_printf(err, "listener %s: cannot bind %s: %s", l->name, l->addr.text,
                         strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static void on_listener_closed(uv_handle_t *h)
{
    (void)h;
}

static void close_listeners(wp_worker *w)
{
    for (size_t i = 0; i < w->nlisteners; i++)
        if (!uv_is_closing((uv_handle_t *)&w->listeners[i]))
            uv_close((uv_handle_t *)&w->listeners[i], on_listener_closed);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void alog_closed(wp_alog_writer *a)
{
    wp_worker *w = a->data;
    uv_stop(&w->loop); /* every line is written; what is left is closed by wp_worker_free */
}

static void on_async(uv_async_t *a)
{
    wp_worker *w = a->data;
    int cmd = atomic_exchange(&w->cmd, 0);
    if (cmd == WP_WORKER_DRAIN && !w->draining) {
        w->draining = true;
        close_listeners(w);
        wp_dconn_drain(w);
    } else if (cmd == WP_WORKER_STOP) {
        w->draining = true;
        close_listeners(w);
        for (wp_dconn *d = w->conns, *n; d; d = n) {
            n = d->next;
            wp_dconn_close(d);
        }
        for (size_t i = 0; i < w->cfg->nclusters; i++) {
            wp_pool *p = &w->pools[i];
            for (size_t h = 0; h < w->cfg->clusters[i].nendpoints; h++)
                while (p->idle[h])
                    wp_uconn_close(p->idle[h], true);
        }
        wp_shadows_close(w);
        uv_close((uv_handle_t *)&w->async, NULL);
        if (w->alog)
            wp_alog_writer_close(w->alog, alog_closed);
        else
            uv_stop(&w->loop);
    }
}

int wp_worker_init(wp_worker *w, wp_server *srv, unsigned id, wf_strbuf *err)
{
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->srv = srv;
    w->rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)id * 0xBF58476D1CE4E5B9ULL) ^ uv_hrtime();
    const char *seed = getenv("WEFT_PROXY_TEST_SEED"); /* test hook: reproducible draws */
    if (seed && *seed)
        w->rng = (strtoull(seed, NULL, 10) + id + 1) * 0x9E3779B97F4A7C15ULL;
    if (w->rng == 0)
        w->rng = 1;
    /* test hook: back-offs at the top or bottom of their interval instead of uniform */
    const char *jitter = getenv("WEFT_PROXY_TEST_BACKOFF_JITTER");
    w->backoff_jitter = !jitter                       ? WP_JITTER_UNIFORM
                        : strcmp(jitter, "max") == 0  ? WP_JITTER_MAX
                        : strcmp(jitter, "zero") == 0 ? WP_JITTER_ZERO
                                                      : WP_JITTER_UNIFORM;
    if (uv_loop_init(&w->loop) != 0) {
        wf_strbuf_puts(err, "cannot create an event loop");
        return -1;
    }
    w->loop.data = w;
    w->cfg = srv->cfg;
    wp_config_ref(w->cfg);
    w->stats = wp_stats_get_shard(srv->pstats->store, id);
    if (wp_regex_ctx_init(&w->rx) != 0 || wp_pools_init(w) != 0) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    uv_async_init(&w->loop, &w->async, on_async);
    w->async.data = w;
    if (wp_alog_writer_init(&w->alog_writer, &w->loop, srv->alog_files, srv->flush_interval_ms,
                            0) != 0) {
        wf_strbuf_puts(err, "cannot start the access log writer");
        return -1;
    }
    w->alog_writer.data = w;
    w->alog = &w->alog_writer;
    w->nlisteners = w->cfg->nlisteners;
    w->listeners = calloc(w->nlisteners ? w->nlisteners : 1, sizeof(*w->listeners));
    if (!w->listeners)
        return -1;
    for (size_t i = 0; i < w->nlisteners; i++) {
        const wp_listener *l = &w->cfg->listeners[i];
        int fd = listen_socket(l, err);
        if (fd < 0)
            return -1;
        uv_tcp_init(&w->loop, &w->listeners[i]);
        w->listeners[i].data = (void *)l;
        if (uv_tcp_open(&w->listeners[i], fd) != 0 ||
            uv_listen((uv_stream_t *)&w->listeners[i], 1024, wp_dconn_on_accept) != 0) {
            wf_strbuf_printf(err, "listener %s: cannot listen on %s", l->name, l->addr.text);
            return -1;
        }
    }
    return 0;
}

static void worker_main(void *arg)
{
    wp_worker *w = arg;
    WF_LOG(WF_LC_main, WF_LOG_DEBUG, "worker %u started", w->id);
    uv_run(&w->loop, UV_RUN_DEFAULT);
}

int wp_worker_start(wp_worker *w)
{
    return uv_thread_create(&w->thread, worker_main, w);
}

void wp_worker_command(wp_worker *w, int cmd)
{
    atomic_store(&w->cmd, cmd);
    uv_async_send(&w->async);
}

void wp_worker_join(wp_worker *w)
{
    uv_thread_join(&w->thread);
}

void wp_worker_free(wp_worker *w)
{
    uv_walk(&w->loop, close_walk, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT); /* finish close callbacks */
    wp_pools_free(w);
    while (w->free_bufs) {
        wp_buf *b = w->free_bufs;
        w->free_bufs = b->next_free;
        free(b);
    }
    while (w->free_streams) {
        wp_stream *s = w->free_streams;
        w->free_streams = s->next_free;
        wp_stream_destroy(s);
    }
    while (w->free_wreqs) {
        void **r = w->free_wreqs;
        w->free_wreqs = *r;
        free(r);
    }
    wp_regex_ctx_free(&w->rx);
    uv_loop_close(&w->loop);
    free(w->listeners);
    wp_config_unref(w->cfg);
}

size_t wp_worker_connections(wp_worker *w)
{
    return atomic_load_explicit(&w->nconns, memory_order_relaxed);
}
