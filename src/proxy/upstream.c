/*
 * upstream.c - per-worker upstream connection pools (Envoy's HTTP/1 connection pool and
 * cluster load balancers, as documented in intro/arch_overview/upstream/connection_pooling,
 * load_balancing/load_balancers and circuit_breaking).
 *
 *  - Hosts: endpoints whose health_status is UNHEALTHY, DRAINING or TIMEOUT, and hosts
 *    ejected by outlier detection, are not chosen; UNKNOWN, HEALTHY and DEGRADED are. Below
 *    healthy_panic_threshold (default 50 %) usable hosts, every host is (panic, outlier.h).
 *    No host left: 503 "no healthy upstream", details no_healthy_upstream, flag UH, stat
 *    upstream_cx_none_healthy. (A STRICT_DNS / LOGICAL_DNS name that did not resolve is no
 *    endpoint at all: server.c drops it.)
 *  - Load balancing: ROUND_ROBIN (weights honoured with a smooth weighted round robin),
 *    LEAST_REQUEST (two random choices, fewer active requests wins; Envoy's P2C default),
 *    RANDOM.
 *  - Circuit breakers (cluster-wide, all workers): max_requests and max_pending_requests
 *    overflow answer 503 with flag UO, "x-envoy-overloaded: true", stat
 *    upstream_rq_pending_overflow; max_connections overflow queues the request until a
 *    connection frees (stat upstream_cx_overflow).
 *  - Keep-alive: a connection goes back to the pool after a complete exchange unless
 *    either side said close or max_requests_per_connection is reached; idle connections
 *    are watched for the server closing them and closed after the cluster's idle_timeout.
 *  - connect_timeout: the attempt fails with reset reason "connection timeout" (UF);
 *    a refused connection gives "remote connection failure" with transport failure reason
 *    "delayed connect error: <errno text>" [verify: Envoy's exact transport failure text
 *    depends on the version; the reference's example is used].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/proxy_internal.h"

static wp_host_rt *host_rt(wp_uconn *u)
{
    return &wp_pool_gen(u->pool)->crt[u->pool->cluster].hosts[u->host];
}

int wp_pools_init(wp_worker *w, wp_wgen *wg)
{
    const wp_config *cfg = wg->gen->cfg;
    size_t n = cfg->nclusters;
    wg->pools = calloc(n ? n : 1, sizeof(*wg->pools));
    if (!wg->pools)
        return -1;
    for (size_t i = 0; i < n; i++) {
        wp_pool *p = &wg->pools[i];
        size_t nh = cfg->clusters[i].nendpoints;
        p->w = w;
        p->wg = wg;
        p->cluster = (int)i;
        p->idle = calloc(nh ? nh : 1, sizeof(*p->idle));
        p->host_rq = calloc(nh ? nh : 1, sizeof(*p->host_rq));
        p->cw = calloc(nh ? nh : 1, sizeof(*p->cw));
        if (!p->idle || !p->host_rq || !p->cw)
            return -1;
    }
    return 0;
}

void wp_pools_close_idle(wp_wgen *wg)
{
    const wp_config *cfg = wg->gen->cfg;
    for (size_t i = 0; wg->pools && i < cfg->nclusters; i++) {
        wp_pool *p = &wg->pools[i];
        for (size_t h = 0; h < cfg->clusters[i].nendpoints; h++)
            while (p->idle[h])
                wp_uconn_close(p->idle[h], true);
    }
}

void wp_pools_free(wp_wgen *wg)
{
    if (!wg->pools)
        return;
    for (size_t i = 0; i < wg->gen->cfg->nclusters; i++) {
        free(wg->pools[i].idle);
        free(wg->pools[i].host_rq);
        free(wg->pools[i].cw);
    }
    free(wg->pools);
    wg->pools = NULL;
}

/* EDS health and outlier ejection (outlier.h); in panic mode every host. */
static bool host_ok(const wp_pool *p, const wp_cluster *c, size_t i)
{
    return p->panic || wp_od_host_usable(&wp_pool_gen(p)->crt[p->cluster].od, c, i);
}

/* Smooth weighted round robin over healthy hosts (equal weights: plain rotation). */
static int pick_rr(wp_pool *p, const wp_cluster *c)
{
    int best = -1;
    int64_t total = 0;
    for (size_t i = 0; i < c->nendpoints; i++) {
        if (!host_ok(p, c, i))
            continue;
        int64_t wgt = c->endpoints[i].weight ? c->endpoints[i].weight : 1;
        p->cw[i] += wgt;
        total += wgt;
        if (best < 0 || p->cw[i] > p->cw[best])
            best = (int)i;
    }
    if (best >= 0)
        p->cw[best] -= total;
    return best;
}

/* Another worker may eject a host between the count and this pass: then the last usable
 * host is taken (-1 when none is left). */
static int pick_random_healthy(wp_pool *p, const wp_cluster *c, size_t healthy)
{
    uint64_t k = wp_rand(p->w) % healthy;
    int last = -1;
    for (size_t i = 0; i < c->nendpoints; i++) {
        if (!host_ok(p, c, i))
            continue;
        if (k-- == 0)
            return (int)i;
        last = (int)i;
    }
    return last;
}

static int pick_host(wp_pool *p, const wp_cluster *c)
{
    size_t healthy = 0;
    p->panic = false;
    for (size_t i = 0; i < c->nendpoints; i++)
        healthy += host_ok(p, c, i);
    p->panic = wp_od_lb_panic(&wp_pool_gen(p)->crt[p->cluster].od, c, healthy, p->w->stats);
    if (p->panic)
        healthy = c->nendpoints;
    if (healthy == 0)
        return -1;
    switch (c->lb_policy) {
    case WP_LB_RANDOM:
        return pick_random_healthy(p, c, healthy);
    case WP_LB_LEAST_REQUEST: {
        int a = pick_random_healthy(p, c, healthy), b = pick_random_healthy(p, c, healthy);
        if (a < 0 || b < 0)
            return a < 0 ? b : a;
        return p->host_rq[b] < p->host_rq[a] ? b : a;
    }
    default:
        return pick_rr(p, c);
    }
}

/* ---------- connections ---------- */

static void pending_done(wp_stream *s);

static void u_on_alloc(void *owner, uv_buf_t *buf)
{
    wp_uconn *u = owner;
    if (!u->rbuf) {
        u->rbuf = wp_buf_get(u->w, WP_BUF_SIZE);
        u->rlen = u->rstart = 0;
        if (!u->rbuf) {
            *buf = uv_buf_init(NULL, 0);
            return;
        }
    }
    if (u->rstart > 0 && !u->pinned) {
        memmove(u->rbuf->data, u->rbuf->data + u->rstart, u->rlen - u->rstart);
        u->rlen -= u->rstart;
        u->rstart = 0;
    }
    if (u->rlen == u->rbuf->cap && !u->pinned && u->rbuf->cap < 64 * 1024 + WP_HEAD_EXTRA) {
        wp_buf *nb = wp_buf_get(u->w, 64 * 1024 + WP_HEAD_EXTRA);
        if (nb) {
            memcpy(nb->data, u->rbuf->data, u->rlen);
            wp_buf_put(u->w, u->rbuf);
            u->rbuf = nb;
        }
    }
    *buf = uv_buf_init(u->rbuf->data + u->rlen, (unsigned)(u->rbuf->cap - u->rlen));
}

void wp_uconn_resume_read(wp_uconn *u)
{
    if (u->reading || u->closing || u->state == WP_UC_CONNECTING)
        return;
    if (wp_tsock_read_start(u->sock) == 0)
        u->reading = true;
}

void wp_uconn_pause_read(wp_uconn *u)
{
    if (!u || !u->reading)
        return;
    wp_tsock_read_stop(u->sock);
    u->reading = false;
}

/* Two handles (the socket and the timer): freed after the last close callback, in the
 * loop's close phase (the end of the iteration, net/deferred.h). */
static void u_closed_one(wp_uconn *u)
{
    if (++u->closed_handles == 2) {
        wp_buf_put(u->w, u->rbuf);
        wp_wgen_release(u->w, u->pool->wg);
        free(u);
    }
}

static void u_on_timer_closed(uv_handle_t *h)
{
    u_closed_one(h->data);
}

static void u_on_sock_closed(void *owner)
{
    u_closed_one(owner);
}

static void idle_remove(wp_uconn *u)
{
    wp_uconn **pp = &u->pool->idle[u->host];
    while (*pp && *pp != u)
        pp = &(*pp)->next;
    if (*pp)
        *pp = u->next;
    u->next = NULL;
}

void wp_uconn_close(wp_uconn *u, bool local)
{
    if (u->closing)
        return;
    wp_worker *w = u->w;
    int c = u->pool->cluster;
    if (u->state == WP_UC_IDLE)
        idle_remove(u);
    bool active_rq = u->stream != NULL || u->peer_reset_rq;
    local = local && !u->peer_closed;
    u->closing = true;
    u->state = WP_UC_CLOSING;
    if (u->stream) {
        wp_stream *s = u->stream;
        u->stream = NULL;
        s->up = NULL;
        wp_router_on_reset(s, WP_RESET_LOCAL_RESET, NULL);
    }
    wp_pstats_cluster_hist(w->stats, wp_pool_gen(u->pool)->pstats, c, WP_CH_upstream_cx_length_ms,
                           uv_now(&w->loop) - u->start_ms);
    wp_cluster_stat(w, wp_pool_gen(u->pool), c, WP_S_upstream_cx_destroy, 1);
    wp_cluster_stat(w, wp_pool_gen(u->pool), c,
                    local ? WP_S_upstream_cx_destroy_local : WP_S_upstream_cx_destroy_remote, 1);
    if (active_rq)
        wp_cluster_stat(w, wp_pool_gen(u->pool), c,
                        local ? WP_S_upstream_cx_destroy_local_with_active_rq
                              : WP_S_upstream_cx_destroy_remote_with_active_rq,
                        1);
    wp_cluster_stat(w, wp_pool_gen(u->pool), c, WP_S_upstream_cx_active, -1);
    atomic_fetch_sub_explicit(&wp_pool_gen(u->pool)->crt[c].cx_open, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&host_rt(u)->cx_active, 1, memory_order_relaxed);
    WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, u->id, "closing upstream connection (%s)",
                local ? "local close" : "remote close");
    wp_tsock_close(u->sock);
    uv_close((uv_handle_t *)&u->timer, u_on_timer_closed);
    /* a slot under max_connections opened: serve a waiting request */
    wp_pool *p = u->pool;
    if (p->pending_head)
        wp_pool_dispatch_pending(p);
}

static void u_on_timer(uv_timer_t *t)
{
    wp_uconn *u = t->data;
    if (u->state == WP_UC_CONNECTING) {
        wp_worker *w = u->w;
        int c = u->pool->cluster;
        wp_cluster_stat(w, wp_pool_gen(u->pool), c, WP_S_upstream_cx_connect_timeout, 1);
        wp_cluster_stat(w, wp_pool_gen(u->pool), c, WP_S_upstream_cx_connect_fail, 1);
        atomic_fetch_add_explicit(&host_rt(u)->cx_connect_fail, 1, memory_order_relaxed);
        wp_stream *s = u->stream;
        u->stream = NULL;
        if (s) {
            s->up = NULL;
            s->connecting = NULL;
            pending_done(s);
            wp_uconn_close(u, true);
            wp_router_on_reset(s, WP_RESET_CONNECTION_TIMEOUT, NULL);
            return;
        }
        wp_uconn_close(u, true);
        return;
    }
    /* idle timeout, checked lazily: the timer keeps running while the connection is busy
     * and is re-armed for what is left, so taking and returning a pooled connection costs
     * no timer operation */
    uint64_t limit = wp_pool_gen(u->pool)->cfg->clusters[u->pool->cluster].idle_timeout_ms;
    if (!limit)
        return;
    uint64_t idle = uv_now(&u->w->loop) - u->idle_since;
    if (u->state == WP_UC_IDLE && idle >= limit) {
        wp_cluster_stat(u->w, wp_pool_gen(u->pool), u->pool->cluster, WP_S_upstream_cx_idle_timeout,
                        1);
        wp_uconn_close(u, true);
        return;
    }
    uv_timer_start(&u->timer, u_on_timer, u->state == WP_UC_IDLE ? limit - idle : limit, 0);
}

/* Writing to the upstream failed: the connection closes and its request (if any) is
 * answered as a connection termination. */
static void write_failed(wp_uconn *u)
{
    wp_stream *s = u->stream;
    u->stream = NULL;
    if (s)
        s->up = NULL;
    wp_uconn_close(u, false);
    if (s)
        wp_router_on_reset(s, WP_RESET_CONNECTION_TERMINATION, NULL);
}

static void u_on_write(void *owner, int status)
{
    wp_uconn *u = owner;
    u->writing = false;
    if (u->closing)
        return;
    if (status < 0) {
        write_failed(u);
        return;
    }
    if (u->stream)
        wp_router_on_upstream_written(u->stream);
}

int wp_uconn_write(wp_uconn *u, uv_buf_t *bufs, unsigned n)
{
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    wp_cluster_stat(u->w, wp_pool_gen(u->pool), u->pool->cluster, WP_S_upstream_cx_tx_bytes_total,
                    (int64_t)total);
    if (u->stream)
        u->stream->si.upstream_wire_bytes_sent += total;
    int r = wp_tsock_write(u->sock, bufs, n);
    if (r < 0) {
        write_failed(u);
        return -1;
    }
    u->writing = r == 1;
    return r;
}

static void u_on_read(void *owner, ssize_t n)
{
    wp_uconn *u = owner;
    if (n == UV_ENOBUFS) {
        wp_uconn_pause_read(u);
        return;
    }
    if (n < 0) {
        wp_uconn_pause_read(u);
        u->peer_closed = true; /* counted as Envoy's RemoteClose, whoever closes the handle */
        if (u->stream)
            wp_router_on_upstream_eof(u); /* releases or resets the stream */
        if (!u->closing)
            wp_uconn_close(u, false);
        return;
    }
    u->rlen += (size_t)n;
    wp_cluster_stat(u->w, wp_pool_gen(u->pool), u->pool->cluster, WP_S_upstream_cx_rx_bytes_total,
                    n);
    if (u->stream)
        u->stream->si.upstream_wire_bytes_received += (uint64_t)n;
    if (!u->stream) {
        wp_uconn_close(u, false); /* data on an idle connection */
        return;
    }
    wp_router_on_upstream_data(u);
    if (u->rbuf && u->rstart == u->rlen && !u->pinned) {
        u->rstart = u->rlen = 0;
        if (!u->stream) {
            wp_buf_put(u->w, u->rbuf);
            u->rbuf = NULL;
        }
    }
}

static void u_on_connect(void *owner, int status)
{
    wp_uconn *u = owner;
    if (u->closing)
        return;
    wp_worker *w = u->w;
    int c = u->pool->cluster;
    uv_timer_stop(&u->timer);
    if (status < 0) {
        wp_cluster_stat(w, wp_pool_gen(u->pool), c, WP_S_upstream_cx_connect_fail, 1);
        atomic_fetch_add_explicit(&host_rt(u)->cx_connect_fail, 1, memory_order_relaxed);
        char tfr[96];
        snprintf(tfr, sizeof(tfr), "delayed connect error: %s", strerror(-status));
        wp_stream *s = u->stream;
        u->stream = NULL;
        if (s) {
            s->up = NULL;
            s->connecting = NULL;
            pending_done(s);
        }
        WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "connect failure: %s", tfr);
        wp_uconn_close(u, false);
        if (s)
            wp_router_on_reset(s, WP_RESET_REMOTE_CONNECTION_FAILURE, tfr);
        return;
    }
    wp_pstats_cluster_hist(w->stats, wp_pool_gen(u->pool)->pstats, c, WP_CH_upstream_cx_connect_ms,
                           uv_now(&w->loop) - u->start_ms);
    wp_tsock_address(u->sock, false, u->local, sizeof(u->local));
    u->state = WP_UC_BUSY;
    WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "connected to %s",
                wp_pool_gen(u->pool)->cfg->clusters[c].endpoints[u->host].addr.text);
    wp_uconn_resume_read(u);
    wp_stream *s = u->stream;
    if (s) {
        u->stream = NULL;
        s->connecting = NULL;
        wp_pool_assign(u, s);
    } else {
        wp_uconn_release(u, true);
    }
}

/* The transport socket's callbacks (net/transport_socket.h). */
static const wp_tsock_cbs uconn_sock_cbs = {
    .alloc = u_on_alloc,
    .on_read = u_on_read,
    .on_written = u_on_write,
    .on_connected = u_on_connect,
    .on_closed = u_on_sock_closed,
};

/* ---------- requests ---------- */

static void pending_push(wp_pool *p, wp_stream *s)
{
    s->pending_next = NULL;
    if (p->pending_tail)
        p->pending_tail->pending_next = s;
    else
        p->pending_head = s;
    p->pending_tail = s;
    s->queued = true;
}

static void pending_remove(wp_pool *p, wp_stream *s)
{
    wp_stream **pp = &p->pending_head, *prev = NULL;
    while (*pp && *pp != s) {
        prev = *pp;
        pp = &(*pp)->pending_next;
    }
    if (!*pp)
        return;
    *pp = s->pending_next;
    if (p->pending_tail == s)
        p->pending_tail = prev;
    s->pending_next = NULL;
    s->queued = false;
}

static void pending_done(wp_stream *s)
{
    if (!s->pending)
        return;
    s->pending = false;
    wp_worker *w = s->d->w;
    wp_cluster_stat(w, wp_stream_gen(s), s->cluster, WP_S_upstream_rq_pending_active, -1);
    atomic_fetch_sub_explicit(&wp_stream_gen(s)->crt[s->cluster].rq_pending, 1,
                              memory_order_relaxed);
}

void wp_pool_assign(wp_uconn *u, wp_stream *s)
{
    pending_done(s);
    u->state = WP_UC_BUSY;
    u->requests++;
    u->pool->host_rq[u->host]++;
    wp_host_rt *h = host_rt(u);
    atomic_fetch_add_explicit(&h->rq_active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->rq_total, 1, memory_order_relaxed);
    wp_outlier_report(s, WP_OD_CONNECT_SUCCESS, 0);
    wp_router_on_connected(s, u);
}

static void connect_new(wp_pool *p, int host, wp_stream *s)
{
    wp_worker *w = p->w;
    const wp_cluster *c = &wp_pool_gen(p)->cfg->clusters[p->cluster];
    wp_uconn *u = calloc(1, sizeof(*u));
    if (!u) {
        wp_router_on_reset(s, WP_RESET_LOCAL_CONNECTION_FAILURE, "out of memory");
        return;
    }
    u->w = w;
    u->pool = p;
    wp_wgen_use(p->wg);
    u->host = host;
    u->id = atomic_fetch_add(&w->srv->next_conn_id, 1);
    u->state = WP_UC_CONNECTING;
    u->start_ms = uv_now(&w->loop);
    wp_raw_socket_init(&u->raw, &w->loop, &w->wreqs, &uconn_sock_cbs, u);
    u->sock = &u->raw.base;
    uv_timer_init(&w->loop, &u->timer);
    u->timer.data = u;
    h1_parser_init(&u->parser, H1_RESPONSE, u->hdrs, WP_MAX_HEADERS, 64 * 1024);
    wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_total, 1);
    wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_active, 1);
    atomic_fetch_add_explicit(&wp_pool_gen(p)->crt[p->cluster].cx_open, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&host_rt(u)->cx_active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&host_rt(u)->cx_total, 1, memory_order_relaxed);
    u->stream = s;
    s->connecting = u;
    WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "creating a new connection to %s",
                c->endpoints[host].addr.text);
    int r = wp_tsock_connect(u->sock, &u->connect,
                             (const struct sockaddr *)&c->endpoints[host].addr.sa);
    if (r != 0) {
        char tfr[96];
        snprintf(tfr, sizeof(tfr), "%s", uv_strerror(r));
        u->stream = NULL;
        s->connecting = NULL;
        pending_done(s);
        wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_connect_fail, 1);
        wp_uconn_close(u, true);
        wp_router_on_reset(s, WP_RESET_LOCAL_CONNECTION_FAILURE, tfr);
        return;
    }
    if (c->connect_timeout_ms)
        uv_timer_start(&u->timer, u_on_timer, c->connect_timeout_ms, 0);
}

static void overflow(wp_stream *s)
{
    wp_cluster_stat(s->d->w, wp_stream_gen(s), s->cluster, WP_S_upstream_rq_pending_overflow, 1);
    wp_router_on_reset(s, WP_RESET_OVERFLOW, NULL);
}

int wp_pool_request(wp_worker *w, wp_stream *s)
{
    const wp_cluster *c = &s->cfg->clusters[s->cluster];
    wp_cluster_rt *rt = &wp_stream_gen(s)->crt[s->cluster];
    wp_pool *p = &s->d->wg->pools[s->cluster];
    int host = pick_host(p, c);
    /* retry_host_predicate previous_hosts: re-pick up to host_selection_retry_max_attempts
     * times while the choice is a host an earlier attempt used (Envoy then keeps the last) */
    uint32_t repick =
        s->route && s->route->retry ? s->route->retry->host_selection_max_attempts : 0;
    if (repick > 16 * c->nendpoints) /* bounded: enough to find an untried host, never a spin */
        repick = (uint32_t)(16 * c->nendpoints);
    for (uint32_t k = 0; host >= 0 && s->ntried && k < repick && wp_retry_host_tried(s, host); k++)
        host = pick_host(p, c);
    if (host >= 0) { /* the attempt is logged against its host even if it never connects */
        s->si.upstream_host = c->endpoints[host].addr.text;
        s->si.attempt_count++;
    }
    if (host < 0) {
        wp_cluster_stat(w, wp_stream_gen(s), s->cluster, WP_S_upstream_cx_none_healthy, 1);
        wp_code_stat_add(
            wp_stats_code_local(w->stats, wp_stream_gen(s)->pstats->clusters[s->cluster].rq_codes),
            503);
        wp_stream_local_reply(s, 503, "no healthy upstream", "no_healthy_upstream", WP_RF_UH);
        return -1;
    }
    if (atomic_load_explicit(&rt->rq_active, memory_order_relaxed) >= c->cb.max_requests) {
        overflow(s);
        return -1;
    }
    atomic_fetch_add_explicit(&rt->rq_active, 1, memory_order_relaxed);
    s->counted_cb = true;
    s->host = host;
    wp_uconn *u = p->idle[host];
    if (u) {
        idle_remove(u);
        WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "using existing connection");
        wp_pool_assign(u, s);
        return 0;
    }
    if (atomic_load_explicit(&rt->rq_pending, memory_order_relaxed) >= c->cb.max_pending_requests) {
        overflow(s);
        return -1;
    }
    s->pending = true;
    atomic_fetch_add_explicit(&rt->rq_pending, 1, memory_order_relaxed);
    wp_cluster_stat(w, wp_stream_gen(s), s->cluster, WP_S_upstream_rq_pending_total, 1);
    wp_cluster_stat(w, wp_stream_gen(s), s->cluster, WP_S_upstream_rq_pending_active, 1);
    if (atomic_load_explicit(&rt->cx_open, memory_order_relaxed) < c->cb.max_connections) {
        connect_new(p, host, s);
        return 0;
    }
    wp_cluster_stat(w, wp_stream_gen(s), s->cluster, WP_S_upstream_cx_overflow, 1);
    pending_push(p, s);
    return 0;
}

void wp_pool_dispatch_pending(wp_pool *p)
{
    const wp_gen *g = wp_pool_gen(p);
    const wp_cluster *c = &g->cfg->clusters[p->cluster];
    while (p->pending_head && atomic_load_explicit(&g->crt[p->cluster].cx_open,
                                                   memory_order_relaxed) < c->cb.max_connections) {
        wp_stream *s = p->pending_head;
        pending_remove(p, s);
        connect_new(p, s->host, s);
    }
}

void wp_uconn_release(wp_uconn *u, bool reusable)
{
    wp_pool *p = u->pool;
    wp_worker *w = u->w;
    const wp_cluster *c = &wp_pool_gen(p)->cfg->clusters[p->cluster];
    if (p->host_rq[u->host])
        p->host_rq[u->host]--;
    if (u->state == WP_UC_BUSY)
        atomic_fetch_sub_explicit(&host_rt(u)->rq_active, 1, memory_order_relaxed);
    u->stream = NULL;
    if (u->closing)
        return;
    if (c->max_requests_per_connection && u->requests >= c->max_requests_per_connection) {
        wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_max_requests, 1);
        reusable = false;
    }
    if (!reusable || w->draining || p->wg->retired || u->rstart != u->rlen) {
        wp_uconn_close(u, true);
        return;
    }
    u->rstart = u->rlen = 0;
    wp_buf_put(w, u->rbuf);
    u->rbuf = NULL;
    h1_parser_reset(&u->parser);
    if (p->pending_head) {
        wp_stream *s = p->pending_head;
        pending_remove(p, s);
        s->host = u->host;
        wp_pool_assign(u, s);
        return;
    }
    u->state = WP_UC_IDLE;
    u->next = p->idle[u->host];
    p->idle[u->host] = u;
    u->idle_since = uv_now(&w->loop);
    if (c->idle_timeout_ms && !uv_is_active((uv_handle_t *)&u->timer))
        uv_timer_start(&u->timer, u_on_timer, c->idle_timeout_ms, 0);
    wp_uconn_resume_read(u); /* notice the server closing it */
}

void wp_pool_cancel(wp_stream *s)
{
    if (s->cluster < 0)
        return;
    wp_pool *p = &s->d->wg->pools[s->cluster];
    if (s->queued)
        pending_remove(p, s);
    if (s->connecting) {
        s->connecting->stream = NULL; /* the connection joins the pool when it is up */
        s->connecting = NULL;
    }
    if (s->pending)
        wp_cluster_stat(s->d->w, wp_stream_gen(s), s->cluster, WP_S_upstream_rq_cancelled, 1);
    pending_done(s);
}

void wp_pool_stream_end(wp_stream *s)
{
    if (s->queued || s->pending)
        wp_pool_cancel(s);
    if (s->counted_cb) {
        s->counted_cb = false;
        atomic_fetch_sub_explicit(&wp_stream_gen(s)->crt[s->cluster].rq_active, 1,
                                  memory_order_relaxed);
    }
}
