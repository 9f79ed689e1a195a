/*
 * upstream.c - per-worker upstream connection pools (upstream/conn_pool.h: Envoy's HTTP/1
 * connection pool, as documented in intro/arch_overview/upstream/connection_pooling and
 * circuit_breaking). Hosts are chosen by the load balancer (upstream/lb.h) before a request
 * reaches the pool; requests are answered by the router.
 *
 *  - Circuit breakers (cluster-wide, all workers): max_pending_requests overflow is reported
 *    as a pool failure (Overflow) with stat upstream_rq_pending_overflow; max_connections
 *    overflow queues the request until a connection frees (stat upstream_cx_overflow).
 *  - Keep-alive: a connection goes back to the pool after a complete exchange unless
 *    either side said close or max_requests_per_connection is reached; idle connections
 *    are watched for the server closing them and closed after the cluster's idle_timeout.
 *  - connect_timeout: the request fails with Timeout (the router's reset reason "connection
 *    timeout", UF); a refused connection gives RemoteConnectionFailure with transport
 *    failure reason "delayed connect error: <errno text>" [verify: Envoy's exact transport
 *    failure text depends on the version; the reference's example is used].
 *  - TLS clusters (UpstreamTlsContext): the connection's socket is a TLS one
 *    (net/tls_socket.h); it is connected once its handshake is done, and a failed handshake
 *    is a RemoteConnectionFailure whose transport failure reason is Envoy's
 *    "TLS_error:|...:TLS_error_end" (security.md §3.5). With transport_socket_matches the
 *    socket is the one resolved for the host at load (config.h wp_endpoint_tls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/net/address.h"
#include "proxy/net/peer_exchange.h"
#include "proxy/net/tls_socket.h"
#include "proxy/upstream/cluster_manager.h"

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
        if (!p->idle)
            return -1;
        if (cfg->clusters[i].proto != WP_UP_HTTP1 && !(p->h2 = calloc(nh ? nh : 1, sizeof(*p->h2))))
            return -1;
    }
    return 0;
}

void wp_pools_close_idle_h1(wp_wgen *wg)
{
    const wp_config *cfg = wg->gen->cfg;
    for (size_t i = 0; wg->pools && i < cfg->nclusters; i++) {
        wp_pool *p = &wg->pools[i];
        size_t nh = cfg->clusters[i].nendpoints;
        for (size_t h = 0; h < (nh ? nh : 1); h++) /* ORIGINAL_DST: host 0 without endpoints */
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
        free(wg->pools[i].h2);
    }
    free(wg->pools);
    wg->pools = NULL;
}

/* ---------- connections ---------- */

static void pending_done(wp_pool_req *rq);
static void pool_dispatch_pending(wp_pool *p);
static void pool_assign(wp_uconn *u, wp_pool_req *rq);

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
    if (u->rlen == u->rbuf->cap && !u->pinned && u->rbuf->cap < WP_UPSTREAM_HEAD_MAX) {
        wp_buf *nb = wp_buf_get(u->w, WP_UPSTREAM_HEAD_MAX);
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

int wp_uconn_shutdown(wp_uconn *u)
{
    return u->closing ? UV_ENOTCONN : wp_tsock_shutdown(u->sock);
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
        wp_wgen_release(u->w, u->pool->wg); /* may free the pool */
        free(u->mx);
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
    if (u->stream) { /* one stream of an HTTP/2 connection: no connection of its own */
        if (u->state == WP_UC_BUSY) /* not released: reset under its request */
            atomic_fetch_sub_explicit(&host_rt(u)->rq_active, 1, memory_order_relaxed);
        u->closing = true;
        u->state = WP_UC_CLOSING;
        if (u->owner) {
            void *owner = u->owner;
            u->owner = NULL;
            u->cbs->on_reset(owner, u, WP_RESET_LOCAL_RESET);
        }
        wp_tsock_close(u->sock);
        uv_close((uv_handle_t *)&u->timer, u_on_timer_closed);
        return;
    }
    if (u->state == WP_UC_IDLE)
        idle_remove(u);
    bool active_rq = u->owner != NULL || u->preq != NULL || u->peer_reset_rq;
    local = local && !u->peer_closed;
    u->closing = true;
    u->state = WP_UC_CLOSING;
    if (u->owner) {
        void *owner = u->owner;
        u->owner = NULL;
        u->cbs->on_reset(owner, u, WP_RESET_LOCAL_RESET);
    }
    if (u->preq) { /* not reached today: a connecting connection is closed by its failure */
        wp_pool_req *rq = u->preq;
        u->preq = NULL;
        rq->connecting = NULL;
        pending_done(rq);
        rq->cb->on_failure(rq->ctx, WP_POOL_LOCAL_CONNECTION_FAILURE, NULL, rq->host);
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
        pool_dispatch_pending(p);
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
        wp_pool_req *rq = u->preq;
        u->preq = NULL;
        if (rq) {
            rq->connecting = NULL;
            pending_done(rq);
            wp_uconn_close(u, true);
            rq->cb->on_failure(rq->ctx, WP_POOL_TIMEOUT, NULL, rq->host);
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
    void *owner = u->owner;
    u->owner = NULL;
    wp_uconn_close(u, false);
    if (owner)
        u->cbs->on_reset(owner, u, WP_RESET_CONNECTION_TERMINATION);
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
    if (u->owner)
        u->cbs->on_written(u->owner, u);
}

int wp_uconn_write(wp_uconn *u, uv_buf_t *bufs, unsigned n)
{
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    if (!u->stream)
        wp_cluster_stat(u->w, wp_pool_gen(u->pool), u->pool->cluster,
                        WP_S_upstream_cx_tx_bytes_total, (int64_t)total);
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
        if (u->mx && u->mx->state == WP_TCP_MX_READING) { /* an incomplete preamble: given up */
            bool hold;
            wp_tcp_mx_on_bytes(u->mx, u->rbuf ? (const uint8_t *)u->rbuf->data + u->rstart : NULL,
                               u->rbuf ? u->rlen - u->rstart : 0, true, &hold);
        }
        u->peer_closed = true; /* counted as Envoy's RemoteClose, whoever closes the handle */
        if (u->half_close && u->owner) {
            if (n == UV_EOF) { /* the owner goes on writing (half-close) */
                u->cbs->on_eof(u->owner, u);
                return;
            }
            void *o = u->owner;
            u->owner = NULL;
            wp_uconn_close(u, false);
            u->cbs->on_reset(o, u, WP_RESET_CONNECTION_TERMINATION);
            return;
        }
        if (u->owner)
            u->cbs->on_eof(u->owner, u); /* releases the connection or resets the request */
        if (!u->closing)
            wp_uconn_close(u, false);
        return;
    }
    u->rlen += (size_t)n;
    if (!u->stream)
        wp_cluster_stat(u->w, wp_pool_gen(u->pool), u->pool->cluster,
                        WP_S_upstream_cx_rx_bytes_total, n);
    if (u->mx && u->mx->state == WP_TCP_MX_READING) { /* the peer's preamble first */
        bool hold;
        u->rstart += wp_tcp_mx_on_bytes(u->mx, (const uint8_t *)u->rbuf->data + u->rstart,
                                        u->rlen - u->rstart, false, &hold);
        if (hold)
            return; /* read on: the next bytes land after these */
        if (u->rstart == u->rlen) {
            if (!u->pinned)
                u->rstart = u->rlen = 0;
            return;
        }
        if ((size_t)n > u->rlen - u->rstart)
            n = (ssize_t)(u->rlen - u->rstart);
    }
    if (!u->owner) {
        wp_uconn_close(u, false); /* data on an idle connection */
        return;
    }
    u->cbs->on_data(u->owner, u, (size_t)n);
    if (u->rbuf && u->rstart == u->rlen && !u->pinned) {
        u->rstart = u->rlen = 0;
        if (!u->owner) {
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
        char buf[96];
        snprintf(buf, sizeof(buf), "delayed connect error: %s", strerror(-status));
        /* a TLS handshake failure: Envoy's TLS_error text (valid until the socket's on_closed,
         * which comes from the loop after this call) */
        const char *tfr = wp_tsock_failure_reason(u->sock);
        tfr = tfr ? tfr : buf;
        wp_pool_req *rq = u->preq;
        u->preq = NULL;
        if (rq) {
            rq->connecting = NULL;
            pending_done(rq);
        }
        WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "connect failure: %s", tfr);
        wp_uconn_close(u, false);
        if (rq)
            rq->cb->on_failure(rq->ctx, WP_POOL_REMOTE_CONNECTION_FAILURE, tfr, rq->host);
        return;
    }
    wp_pstats_cluster_hist(w->stats, wp_pool_gen(u->pool)->pstats, c, WP_CH_upstream_cx_connect_ms,
                           uv_now(&w->loop) - u->start_ms);
    wp_tsock_address(u->sock, false, u->local, sizeof(u->local));
    const wp_cluster *cl = &wp_pool_gen(u->pool)->cfg->clusters[c];
    if (cl->mx && (u->mx = calloc(1, sizeof *u->mx))) { /* no memory: no exchange */
        u->mx->cfg = cl->mx;
        const wp_tsock_ssl *ssl = wp_tsock_ssl_info(u->sock);
        wp_tcp_mx_begin(u->mx, ssl ? ssl->alpn : NULL);
    }
    u->state = WP_UC_BUSY;
    WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "connected to %s",
                wp_uconn_host_text(u, &wp_pool_gen(u->pool)->cfg->clusters[c]));
    wp_uconn_resume_read(u);
    wp_pool_req *rq = u->preq;
    if (rq) {
        u->preq = NULL;
        rq->connecting = NULL;
        pool_assign(u, rq);
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

static void pending_push(wp_pool *p, wp_pool_req *rq)
{
    rq->next = NULL;
    if (p->pending_tail)
        p->pending_tail->next = rq;
    else
        p->pending_head = rq;
    p->pending_tail = rq;
    rq->queued = true;
}

static void pending_remove(wp_pool *p, wp_pool_req *rq)
{
    wp_pool_req **pp = &p->pending_head, *prev = NULL;
    while (*pp && *pp != rq) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = rq->next;
    if (p->pending_tail == rq)
        p->pending_tail = prev;
    rq->next = NULL;
    rq->queued = false;
}

static void pending_done(wp_pool_req *rq)
{
    if (!rq->pending)
        return;
    rq->pending = false;
    wp_pool *p = rq->pool;
    wp_cluster_stat(p->w, wp_pool_gen(p), p->cluster, WP_S_upstream_rq_pending_active, -1);
    atomic_fetch_sub_explicit(&wp_pool_gen(p)->crt[p->cluster].rq_pending, 1, memory_order_relaxed);
}

/* u (busy) goes to rq: on_ready. */
static void pool_assign(wp_uconn *u, wp_pool_req *rq)
{
    pending_done(rq);
    u->state = WP_UC_BUSY;
    u->requests++;
    if (!u->mux) {
        wp_host_rt *h = host_rt(u);
        atomic_fetch_add_explicit(&h->rq_active, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->rq_total, 1, memory_order_relaxed);
    }
    rq->host = u->host;
    rq->cb->on_ready(rq->ctx, u, u->host);
}

static void connect_new(wp_pool *p, int host, wp_pool_req *rq)
{
    wp_worker *w = p->w;
    const wp_cluster *c = &wp_pool_gen(p)->cfg->clusters[p->cluster];
    wp_uconn *u = calloc(1, sizeof(*u));
    if (!u) { /* the request stays pending: the caller's cancel counts it */
        rq->cb->on_failure(rq->ctx, WP_POOL_LOCAL_CONNECTION_FAILURE, "out of memory", host);
        return;
    }
    u->w = w;
    u->pool = p;
    wp_wgen_use(p->wg);
    u->host = host;
    u->mux = rq->mux;
    u->id = atomic_fetch_add(w->conn_ids, 1);
    u->state = WP_UC_CONNECTING;
    u->start_ms = uv_now(&w->loop);
    wp_raw_socket_init(&u->raw, &w->loop, &w->wreqs, &uconn_sock_cbs, u);
    u->sock = &u->raw.base;
    wp_tsock *tls = NULL; /* an UpstreamTlsContext: TLS over the raw socket */
    const struct sockaddr *to = NULL;
    if (rq->dst) { /* ORIGINAL_DST: no endpoints, the downstream's original destination */
        size_t n = rq->dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                  : sizeof(struct sockaddr_in);
        memcpy(&u->dst, rq->dst, n);
        u->has_dst = true;
        wp_sockaddr_text(rq->dst, u->dst_text, sizeof u->dst_text);
        to = rq->dst;
    } else {
        to = (const struct sockaddr *)&c->endpoints[host].addr.sa;
    }
    /* the host's transport_socket_matches entry or the cluster's transport_socket */
    const wp_tls_config *tc = rq->dst ? c->tls : wp_endpoint_tls(c, &c->endpoints[host]);
    if (tc) {
        wp_tls_stats st = {w->stats, wp_pool_gen(p)->pstats->clusters[p->cluster].ssl, "cluster",
                           c->alt_stat_name ? c->alt_stat_name : c->name};
        wf_tls_ctx *ctx = wp_tls_config_acquire(tc); /* NULL: SDS secrets not ready */
        if ((tls = wp_tls_socket_wrap(u->sock, &w->bufs, &w->deferred, ctx, false, tc->sni, &st)))
            u->sock = tls;
        wf_tls_ctx_free(ctx);
    }
    uv_timer_init(&w->loop, &u->timer);
    u->timer.data = u;
    h1_parser_init(&u->parser, H1_RESPONSE, u->hdrs, WP_UPSTREAM_MAX_HEADERS, 64 * 1024);
    wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_total, 1);
    wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_active, 1);
    atomic_fetch_add_explicit(&wp_pool_gen(p)->crt[p->cluster].cx_open, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&host_rt(u)->cx_active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&host_rt(u)->cx_total, 1, memory_order_relaxed);
    u->preq = rq;
    rq->connecting = u;
    WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "creating a new connection to %s",
                wp_uconn_host_text(u, c));
    int r = tc && !tls ? UV_ENOMEM : 0;
    if (r == 0 && c->bind_source) /* upstream_bind_config.source_address */
        r = uv_tcp_bind(&u->raw.tcp, (const struct sockaddr *)&c->bind_source->sa, 0);
    if (r == 0)
        r = wp_tsock_connect(u->sock, &u->connect, to);
    if (r != 0) {
        char tfr[96];
        snprintf(tfr, sizeof(tfr), "%s", uv_strerror(r));
        u->preq = NULL;
        rq->connecting = NULL;
        pending_done(rq);
        wp_cluster_stat(w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_connect_fail, 1);
        wp_uconn_close(u, true);
        rq->cb->on_failure(rq->ctx, WP_POOL_LOCAL_CONNECTION_FAILURE, tfr, host);
        return;
    }
    if (c->connect_timeout_ms)
        uv_timer_start(&u->timer, u_on_timer, c->connect_timeout_ms, 0);
}

/* rq starts waiting (rq_pending, max_pending_requests): false when it overflowed (the
 * failure callback ran). */
bool wp_pool_pending_begin(wp_pool *p, wp_pool_req *rq)
{
    wp_worker *w = p->w;
    const wp_gen *g = wp_pool_gen(p);
    wp_cluster_rt *rt = &g->crt[p->cluster];
    if (atomic_load_explicit(&rt->rq_pending, memory_order_relaxed) >=
        g->cfg->clusters[p->cluster].cb.max_pending_requests) {
        wp_cluster_stat(w, g, p->cluster, WP_S_upstream_rq_pending_overflow, 1);
        rq->cb->on_failure(rq->ctx, WP_POOL_OVERFLOW, NULL, rq->host);
        return false;
    }
    rq->pending = true;
    atomic_fetch_add_explicit(&rt->rq_pending, 1, memory_order_relaxed);
    wp_cluster_stat(w, g, p->cluster, WP_S_upstream_rq_pending_total, 1);
    wp_cluster_stat(w, g, p->cluster, WP_S_upstream_rq_pending_active, 1);
    return true;
}

void wp_pool_pending_end(wp_pool_req *rq)
{
    pending_done(rq);
}

void wp_pool_connect(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb, void *ctx)
{
    *rq = (wp_pool_req){.pool = p, .cb = cb, .ctx = ctx, .host = host, .mux = true};
    connect_new(p, host, rq);
}

void wp_pool_connect_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                         const wp_pool_callbacks *cb, void *ctx)
{
    *rq = (wp_pool_req){.pool = p, .cb = cb, .ctx = ctx, .host = 0, .mux = true, .dst = dst};
    connect_new(p, 0, rq);
}

wp_uconn *wp_uconn_stream_new(wp_pool *p, int host, const wp_uconn *session,
                              wp_tsock *(*init)(void *arg, const wp_tsock_cbs *cbs, void *owner),
                              void *arg)
{
    wp_worker *w = p->w;
    wp_uconn *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    u->w = w;
    u->pool = p;
    wp_wgen_use(p->wg);
    u->host = host;
    u->id = session->id;
    u->stream = true;
    u->state = WP_UC_BUSY;
    u->requests = 1;
    u->start_ms = uv_now(&w->loop);
    memcpy(u->local, session->local, sizeof u->local);
    if (session->has_dst) { /* a stream of a connection to an original destination */
        u->has_dst = true;
        u->dst = session->dst;
        memcpy(u->dst_text, session->dst_text, sizeof u->dst_text);
    }
    uv_timer_init(&w->loop, &u->timer);
    u->timer.data = u;
    h1_parser_init(&u->parser, H1_RESPONSE, u->hdrs, WP_UPSTREAM_MAX_HEADERS, 64 * 1024);
    u->sock = init(arg, &uconn_sock_cbs, u);
    wp_host_rt *h = host_rt(u);
    atomic_fetch_add_explicit(&h->rq_active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->rq_total, 1, memory_order_relaxed);
    u->reading = wp_tsock_read_start(u->sock) == 0;
    return u;
}

void wp_uconn_stream_reset(wp_uconn *u, int reason)
{
    void *owner = u->owner;
    u->owner = NULL;
    if (!u->closing)
        wp_uconn_close(u, false);
    if (owner)
        u->cbs->on_reset(owner, u, reason);
}

const char *wp_uconn_host_text(const wp_uconn *u, const wp_cluster *c)
{
    return u->has_dst ? u->dst_text : c->endpoints[u->host].addr.text;
}

static bool same_dst(const wp_uconn *u, const struct sockaddr *dst)
{
    if (!u->has_dst || u->dst.ss_family != dst->sa_family)
        return false;
    size_t n =
        dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    return memcmp(&u->dst, dst, n) == 0;
}

/* The idle connection to take for rq: the latest to the host, or to rq->dst. */
static wp_uconn *idle_for(wp_pool *p, int host, const struct sockaddr *dst)
{
    wp_uconn *u = p->idle[host];
    while (u && dst && !same_dst(u, dst))
        u = u->next;
    return u;
}

static bool newstream(wp_pool *p, int host, const struct sockaddr *dst, wp_pool_req *rq,
                      const wp_pool_callbacks *cb, void *ctx)
{
    wp_worker *w = p->w;
    const wp_gen *g = wp_pool_gen(p);
    const wp_cluster *c = &g->cfg->clusters[p->cluster];
    wp_cluster_rt *rt = &g->crt[p->cluster];
    *rq = (wp_pool_req){.pool = p, .cb = cb, .ctx = ctx, .host = host, .dst = dst};
    wp_uconn *u = idle_for(p, host, dst);
    if (u) {
        idle_remove(u);
        WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "using existing connection");
        pool_assign(u, rq);
        return false;
    }
    if (atomic_load_explicit(&rt->rq_pending, memory_order_relaxed) >= c->cb.max_pending_requests) {
        wp_cluster_stat(w, g, p->cluster, WP_S_upstream_rq_pending_overflow, 1);
        cb->on_failure(ctx, WP_POOL_OVERFLOW, NULL, host);
        return false;
    }
    rq->pending = true;
    atomic_fetch_add_explicit(&rt->rq_pending, 1, memory_order_relaxed);
    wp_cluster_stat(w, g, p->cluster, WP_S_upstream_rq_pending_total, 1);
    wp_cluster_stat(w, g, p->cluster, WP_S_upstream_rq_pending_active, 1);
    if (atomic_load_explicit(&rt->cx_open, memory_order_relaxed) < c->cb.max_connections) {
        connect_new(p, host, rq);
        return rq->pending;
    }
    wp_cluster_stat(w, g, p->cluster, WP_S_upstream_cx_overflow, 1);
    pending_push(p, rq);
    return true;
}

bool wp_pool_newstream(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                       void *ctx)
{
    return newstream(p, host, NULL, rq, cb, ctx);
}

bool wp_pool_newstream_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                           const wp_pool_callbacks *cb, void *ctx)
{
    return newstream(p, 0, dst, rq, cb, ctx);
}

static void pool_dispatch_pending(wp_pool *p)
{
    const wp_gen *g = wp_pool_gen(p);
    const wp_cluster *c = &g->cfg->clusters[p->cluster];
    while (p->pending_head && atomic_load_explicit(&g->crt[p->cluster].cx_open,
                                                   memory_order_relaxed) < c->cb.max_connections) {
        wp_pool_req *rq = p->pending_head;
        pending_remove(p, rq);
        connect_new(p, rq->host, rq);
    }
}

void wp_uconn_release(wp_uconn *u, bool reusable)
{
    wp_pool *p = u->pool;
    wp_worker *w = u->w;
    const wp_cluster *c = &wp_pool_gen(p)->cfg->clusters[p->cluster];
    if (u->state == WP_UC_BUSY && !u->mux)
        atomic_fetch_sub_explicit(&host_rt(u)->rq_active, 1, memory_order_relaxed);
    u->owner = NULL;
    if (u->closing)
        return;
    if (u->stream) { /* the stream ends (reset when it has not, pool_h2.c) */
        u->state = WP_UC_CLOSING;
        wp_uconn_close(u, true);
        return;
    }
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
    if (p->pending_head && !u->has_dst) { /* (an ORIGINAL_DST request wants its own dst) */
        wp_pool_req *rq = p->pending_head;
        pending_remove(p, rq);
        pool_assign(u, rq);
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

void wp_pool_cancel(wp_pool_req *rq)
{
    if (!rq->pool)
        return;
    if (rq->unwait) /* waiting in an HTTP/2 connection's queue (pool_h2.c) */
        rq->unwait(rq);
    if (rq->queued)
        pending_remove(rq->pool, rq);
    if (rq->connecting) {
        rq->connecting->preq = NULL; /* the connection joins the pool when it is up */
        rq->connecting = NULL;
    }
    if (rq->pending)
        wp_cluster_stat(rq->pool->w, wp_pool_gen(rq->pool), rq->pool->cluster,
                        WP_S_upstream_rq_cancelled, 1);
    pending_done(rq);
}
