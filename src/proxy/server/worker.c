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
#include "proxy/access_log/alog_sink.h"
#include "proxy/http/conn.h"
#include "proxy/http/conn_h2.h"
#include "proxy/server/instance.h"
#include "proxy/filters/http/retry.h"
#include "proxy/filters/http/shadow.h"
#include "proxy/server/worker.h"
#include "proxy/server/conn_handler.h"
#include "proxy/server/listen_socket.h"
#include "proxy/http/conn.h"
#include "proxy/server/gen.h"

static void on_listener_closed(uv_handle_t *h)
{
    free(h->data);
}

static void close_listener(wp_worker *w, wp_wlistener *wl)
{
    for (wp_wlistener **pp = &w->listeners; *pp; pp = &(*pp)->next) {
        if (*pp == wl) {
            *pp = wl->next;
            break;
        }
    }
    wl->index = -1;
    uv_close((uv_handle_t *)&wl->tcp, on_listener_closed);
}

static void close_listeners(wp_worker *w)
{
    while (w->listeners)
        close_listener(w, w->listeners);
}

static wp_wlistener *find_listener(wp_worker *w, const wp_listener *l)
{
    for (wp_wlistener *wl = w->listeners; wl; wl = wl->next)
        if (strcmp(wl->name, l->name) == 0 && wl->addr.len == l->addr.len &&
            memcmp(&wl->addr.sa, &l->addr.sa, l->addr.len) == 0)
            return wl;
    return NULL;
}

/* Starts accepting on fd (taken over) for listener index i of the worker's snapshot. */
/* A listening socket's connection callback: server->data is the worker's wp_wlistener (its
 * index -1 once the listener was removed), server->loop->data the worker. */
static void on_accept(uv_stream_t *server, int status)
{
    wp_worker *w = server->loop->data;
    const wp_wlistener *wl = server->data;
    if (status < 0 || w->draining || wl->index < 0)
        return;
    wp_conn_handler_accept(w, (size_t)wl->index, server);
}

static int open_listener(wp_worker *w, int i, int fd, wf_strbuf *err)
{
    const wp_listener *l = &w->cfg->listeners[i];
    wp_wlistener *wl = calloc(1, sizeof(*wl));
    if (!wl) {
        close(fd);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    wl->w = w;
    wl->index = i;
    snprintf(wl->name, sizeof(wl->name), "%s", l->name);
    wl->addr = l->addr;
    uv_tcp_init(&w->loop, &wl->tcp);
    wl->tcp.data = wl;
    wl->next = w->listeners;
    w->listeners = wl;
    if (uv_tcp_open(&wl->tcp, fd) != 0) {
        close(fd);
        close_listener(w, wl);
        wf_strbuf_printf(err, "listener %s: cannot open the socket", l->name);
        return -1;
    }
    if (uv_listen((uv_stream_t *)&wl->tcp, 1024, on_accept) != 0) {
        close_listener(w, wl);
        wf_strbuf_printf(err, "listener %s: cannot listen on %s", l->name, l->addr.text);
        return -1;
    }
    return 0;
}

/* Closes the connections accepted by listeners the new snapshot no longer has: idle ones
 * (and TCP proxy sessions, which have no request boundary) now, busy ones after their request
 * (the listener drains). */
static void drain_removed(wp_worker *w)
{
    const wp_config *c = w->cfg;
    for (wp_dconn *d = w->conns, *next; d; d = next) {
        next = d->next;
        bool kept = false;
        for (size_t i = 0; i < c->nlisteners && !kept; i++)
            kept = strcmp(c->listeners[i].name, d->listener->name) == 0;
        if (kept)
            continue;
        wp_dconn_drain_one(d);
    }
}

/* Makes post's generation current: listeners kept by name and address, new ones opened on the
 * sockets the main thread bound, removed ones closed and drained. */
static int install(wp_worker *w, wp_gen_post *post, wf_strbuf *err)
{
    wp_gen *gen = post->gen;
    int *fds = post->fds;
    post->gen = NULL;
    post->fds = NULL;
    wp_wgen *wg = wp_wgen_new(w, gen);
    size_t n = gen->cfg->nlisteners;
    if (!wg) {
        for (size_t i = 0; fds && i < n; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        free(fds);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    wp_wgen_install(w, wg);
    for (wp_wlistener *wl = w->listeners; wl; wl = wl->next)
        wl->index = -1;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        wp_wlistener *wl = find_listener(w, &w->cfg->listeners[i]);
        if (wl && wl->index < 0) {
            wl->index = (int)i;
            if (fds && fds[i] >= 0)
                close(fds[i]);
        } else if (fds && fds[i] >= 0 && open_listener(w, (int)i, fds[i], err) != 0) {
            rc = -1;
        }
    }
    free(fds);
    for (wp_wlistener *wl = w->listeners, *next; wl; wl = next) {
        next = wl->next;
        if (wl->index < 0)
            close_listener(w, wl);
    }
    drain_removed(w);
    return rc;
}

/* WP_WORKER_DRAIN_INBOUND: the listeners with traffic_direction INBOUND (core.v3, 1) stop
 * accepting, and their connections drain as wp_dconn_drain drains them all (TCP proxy sessions
 * go on until they end or the drain time is over); the others keep serving. Sent again after each
 * new generation, so an inbound listener it adds stops too. */
static void drain_inbound(wp_worker *w)
{
    for (wp_wlistener *wl = w->listeners, *next; wl; wl = next) {
        next = wl->next;
        if (wl->index >= 0 && w->cfg->listeners[wl->index].traffic_direction == 1)
            close_listener(w, wl);
    }
    for (wp_dconn *d = w->conns, *next; d; d = next) {
        next = d->next;
        if (!d->listener || d->listener->traffic_direction != 1)
            continue;
        if (d->tcp)
            continue; /* a TCP proxy session runs until it ends or the process exits */
        wp_dconn_drain_one(d);
    }
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

static void take_post(wp_worker *w)
{
    uv_mutex_lock(&w->post_lock);
    wp_gen_post post = w->post;
    w->post.gen = NULL;
    w->post.fds = NULL;
    uv_mutex_unlock(&w->post_lock);
    if (!post.gen)
        return;
    wf_strbuf err = {0};
    if (install(w, &post, &err) != 0)
        WF_LOG(WF_LC_main, WF_LOG_ERROR, "worker %u: applying the new configuration: %s", w->id,
               wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
}

static void on_async(uv_async_t *a)
{
    wp_worker *w = a->data;
    int cmd = atomic_exchange(&w->cmd, 0);
    if (!w->draining)
        take_post(w);
    if (cmd == WP_WORKER_DRAIN && !w->draining) {
        w->draining = true;
        close_listeners(w);
        wp_dconn_drain(w);
    } else if (cmd == WP_WORKER_DRAIN_INBOUND && !w->draining) {
        drain_inbound(w);
    } else if (cmd == WP_WORKER_STOP) {
        w->draining = true;
        close_listeners(w);
        for (wp_dconn *d = w->conns, *n; d; d = n) {
            n = d->next;
            wp_dconn_close(d);
        }
        wp_pools_close_idle(w->wg);
        for (wp_wgen *wg = w->retired; wg; wg = wg->next)
            wp_pools_close_idle(wg);
        wp_shadows_close(w);
        uv_close((uv_handle_t *)&w->async, NULL);
        if (w->alog)
            wp_alog_writer_close(w->alog, alog_closed);
        else
            uv_stop(&w->loop);
    }
}

int wp_worker_init(wp_worker *w, wp_server *srv, unsigned id, wp_gen_post *post, wf_strbuf *err)
{
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->srv = srv;
    w->conn_ids = &srv->next_conn_id;
    w->stream_ids = &srv->next_stream_id;
    w->istio = srv->istio;
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
    uv_mutex_init(&w->post_lock);
    if (uv_loop_init(&w->loop) != 0) {
        wf_strbuf_puts(err, "cannot create an event loop");
        return -1;
    }
    w->loop.data = w;
    w->stats = wp_stats_get_shard(srv->stats_store, id);
    if (wp_regex_ctx_init(&w->rx) != 0) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    uv_async_init(&w->loop, &w->async, on_async);
    w->async.data = w;
    if (wp_deferred_init(&w->deferred, &w->loop) != 0) {
        wf_strbuf_puts(err, "cannot create an event loop");
        return -1;
    }
    if (wp_alog_writer_init(&w->alog_writer, &w->loop, srv->alog_files, srv->flush_interval_ms,
                            0) != 0) {
        wf_strbuf_puts(err, "cannot start the access log writer");
        return -1;
    }
    w->alog_writer.data = w;
    w->alog = &w->alog_writer;
    return install(w, post, err);
}

/* A post that replaces one the worker has not taken: sockets the old post carried for listeners
 * the new one keeps (same name and address) move over, since the main thread counted them as
 * bound already. */
static void inherit_fds(const wp_gen_post *old, wp_gen *gen, int *fds)
{
    const wp_config *oc = old->gen->cfg, *nc = gen->cfg;
    for (size_t i = 0; old->fds && fds && i < nc->nlisteners; i++) {
        const wp_listener *l = &nc->listeners[i];
        for (size_t j = 0; fds[i] < 0 && j < oc->nlisteners; j++) {
            const wp_listener *o = &oc->listeners[j];
            if (old->fds[j] >= 0 && strcmp(o->name, l->name) == 0 && o->addr.len == l->addr.len &&
                memcmp(&o->addr.sa, &l->addr.sa, l->addr.len) == 0) {
                fds[i] = old->fds[j];
                old->fds[j] = -1;
            }
        }
    }
}

void wp_worker_post(wp_worker *w, wp_gen *gen, int *fds)
{
    uv_mutex_lock(&w->post_lock);
    wp_gen_post old = w->post;
    if (old.gen)
        inherit_fds(&old, gen, fds);
    w->post.gen = gen;
    w->post.fds = fds;
    uv_mutex_unlock(&w->post_lock);
    if (old.gen) { /* superseded before the worker took it */
        for (size_t i = 0; old.fds && i < old.gen->cfg->nlisteners; i++)
            if (old.fds[i] >= 0)
                close(old.fds[i]);
        free(old.fds);
        wp_gen_unref(old.gen);
    }
    uv_async_send(&w->async);
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
    wp_deferred_close(&w->deferred); /* ended streams back to the free list */
    close_listeners(w);
    uv_walk(&w->loop, close_walk, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT); /* finish close callbacks (listeners free themselves) */
    wp_deferred_drain(&w->deferred);
    wp_wgen_free_all(w);
    if (w->post.gen) {
        for (size_t i = 0; w->post.fds && i < w->post.gen->cfg->nlisteners; i++)
            if (w->post.fds[i] >= 0)
                close(w->post.fds[i]);
        free(w->post.fds);
        wp_gen_unref(w->post.gen);
    }
    wp_buf_pool_clear(&w->bufs);
    while (w->free_streams) {
        wp_stream *s = w->free_streams;
        w->free_streams = s->next_free;
        wp_stream_destroy(s);
    }
    wp_h2c_worker_free(w);
    wp_wreq_pool_free(&w->wreqs);
    wp_regex_ctx_free(&w->rx);
    uv_loop_close(&w->loop);
    uv_mutex_destroy(&w->post_lock);
}

size_t wp_worker_connections(wp_worker *w)
{
    return atomic_load_explicit(&w->nconns, memory_order_relaxed);
}
