/*
 * pool_h2.c - HTTP/2 upstream connections and their streams (see pool_h2.h): the session
 * (nghttp2 client) over a pooled connection, its events rendered into the streams
 * (stream_h2.c is a stream's socket), GOAWAY, resets, waiting requests and the pool.
 */
#include "proxy/upstream/pool_h2_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "proxy/upstream/cluster_manager.h"
#include "proxy/upstream/uconn_h2.h"

static void conn_fail(wp_h2conn *c, int reason);
static void conn_arm(wp_h2conn *c);
static void conn_flush(wp_h2conn *c);

_Static_assert(H2UP_NCOUNTERS <= sizeof(((wp_pool *)0)->h2_slots) / sizeof(uint32_t),
               "wp_pool.h2_slots holds the cluster's http2.* counters");

static void count(wp_h2conn *c, int which)
{
    wp_pool *p = c->p;
    if (!p->h2_slots_set)
        return;
    wp_stat_add(p->w->stats, p->h2_slots[which], 1);
}

/* The http2.* counters of the pool's cluster, registered by name once per pool (worker and
 * generation): no lookup per connection. */
static void register_slots(wp_pool *p)
{
    if (p->h2_slots_set)
        return;
    const wp_cluster *cl = &wp_pool_gen(p)->cfg->clusters[p->cluster];
    const char *nm = cl->alt_stat_name ? cl->alt_stat_name : cl->name;
    char buf[512];
    wp_stats *store = p->w->stats->store;
#define H2UP_REG_(n)                                                                               \
    snprintf(buf, sizeof(buf), "cluster.%s.http2." #n, nm);                                        \
    p->h2_slots[H2UP_##n] = wp_stats_counter(store, buf);
    H2UP_COUNTERS(H2UP_REG_)
#undef H2UP_REG_
    p->h2_slots_set = true;
}

/* ---------- the session's events ---------- */

static ustream *stream_of(wp_h2conn *c, int32_t id)
{
    return id > 0 ? nghttp2_session_get_stream_user_data(c->ss, id) : NULL;
}

static void block_fields(ustream *s, h1_header *f, size_t *n)
{
    const char *p = s->blk.data;
    size_t k = 0;
    for (size_t i = 0; i < s->nblk && k < H2UP_MAX_FIELDS; i++) {
        size_t nl = strlen(p);
        const char *v = p + nl + 1;
        size_t vl = strlen(v);
        if (!(nl && p[0] == ':'))
            f[k++] = (h1_header){{p, nl}, {v, vl}};
        p = v + vl + 1;
    }
    *n = k;
}

static int on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    (void)ss;
    (void)flags;
    ustream *s = stream_of(ud, f->hd.stream_id);
    if (!s)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        s->status = 0;
        for (size_t i = 0; i < valuelen && i < 3; i++)
            s->status = s->status * 10 + (value[i] - '0');
        return 0;
    }
    if (s->blk.len + namelen + valuelen > H2UP_MAX_HEAD || s->nblk == H2UP_MAX_FIELDS)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* reset (protocol error) */
    wf_strbuf_append(&s->blk, (const char *)name, namelen);
    wf_strbuf_putc(&s->blk, '\0');
    wf_strbuf_append(&s->blk, (const char *)value, valuelen);
    wf_strbuf_putc(&s->blk, '\0');
    s->nblk++;
    return wf_strbuf_failed(&s->blk) ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

/* A header block ended: the response head (1xx dropped) or the trailers. */
static void on_block(wp_h2conn *c, ustream *s, bool end)
{
    h1_header f[H2UP_MAX_FIELDS];
    size_t n;
    block_fields(s, f, &n);
    if (!s->head_done) {
        if (s->status >= 100 && s->status < 200) {
            s->blk.len = s->nblk = 0; /* interim: the router does not want it */
            return;
        }
        s->head_done = true;
        if (wp_h2up_response_head(s->status, f, n, end, s->head_req, &s->in, &s->chunked) != 0)
            nghttp2_submit_rst_stream(c->ss, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    } else {
        count(c, H2UP_trailers);
        if (s->chunked)
            wp_h2up_end(&s->in, f, n);
        s->chunked = false;
    }
    s->blk.len = s->nblk = 0;
    wp_h2s_arm(s);
}

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *ud)
{
    (void)ss;
    wp_h2conn *c = ud;
    ustream *s = stream_of(c, f->hd.stream_id);
    bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        if (s)
            on_block(c, s, end);
        break;
    case NGHTTP2_DATA:
        break;
    case NGHTTP2_RST_STREAM:
        count(c, H2UP_rx_reset);
        if (f->rst_stream.error_code == NGHTTP2_REFUSED_STREAM)
            count(c, H2UP_stream_refused_errors);
        if (s)
            s->rst_rx = true;
        return 0;
    case NGHTTP2_GOAWAY:
        if (!c->draining)
            wp_cluster_stat(c->p->w, wp_pool_gen(c->p), c->p->cluster,
                            WP_S_upstream_cx_close_notify, 1);
        c->draining = true; /* streams above last_stream_id close as REFUSED_STREAM */
        conn_arm(c);
        return 0;
    case NGHTTP2_SETTINGS:
        conn_arm(c); /* the peer's limit may let waiting requests in */
        return 0;
    default:
        return 0;
    }
    if (s && end && s->head_done) {
        s->resp_end = true;
        if (s->chunked)
            wp_h2up_end(&s->in, NULL, 0);
        s->chunked = false;
        wp_h2s_arm(s);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud)
{
    (void)flags;
    ustream *s = stream_of(ud, id);
    if (!s || s->sock_closed || s->head_req || !s->head_done) {
        nghttp2_session_consume(ss, id, len); /* nobody reads it */
        return 0;
    }
    wp_h2up_chunk(&s->in, s->chunked, (const char *)data, len);
    s->unconsumed += len;
    wp_h2s_arm(s);
    return 0;
}

/* Envoy's mapping of a stream's end (protocols.md §2.5). */
static int on_stream_close(nghttp2_session *ss, int32_t id, uint32_t code, void *ud)
{
    wp_h2conn *c = ud;
    ustream *s = stream_of(c, id);
    if (!s)
        return 0;
    nghttp2_session_set_stream_user_data(ss, id, NULL);
    if (code != NGHTTP2_NO_ERROR || !s->resp_end) {
        int reason = code == NGHTTP2_REFUSED_STREAM ? WP_RESET_REMOTE_REFUSED_STREAM_RESET
                     : s->rst_rx                    ? WP_RESET_REMOTE_RESET
                     : c->proto_error || code       ? WP_RESET_PROTOCOL_ERROR
                                                    : WP_RESET_REMOTE_RESET;
        if (!s->sock_closed && !s->reset) {
            s->reset = reason + 1;
            wp_h2s_arm(s);
        }
    }
    wp_h2s_h2_closed(s);
    if (s->sock_closed)
        wp_h2s_maybe_free(s);
    return 0;
}

/* A request HEADERS nghttp2 could not send (the upstream's GOAWAY came first): refused. */
static int on_frame_not_send(nghttp2_session *ss, const nghttp2_frame *f, int err, void *ud)
{
    (void)err;
    wp_h2conn *c = ud;
    if (f->hd.type != NGHTTP2_HEADERS)
        return 0;
    for (ustream *s = c->streams; s; s = s->next) {
        if (s->id != f->hd.stream_id || !s->h2_open)
            continue;
        nghttp2_session_set_stream_user_data(ss, s->id, NULL);
        if (!s->sock_closed && !s->reset) {
            s->reset = WP_RESET_REMOTE_REFUSED_STREAM_RESET + 1;
            wp_h2s_arm(s);
        }
        wp_h2s_h2_closed(s);
        break;
    }
    return 0;
}

static int on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *ud)
{
    (void)ss;
    wp_h2conn *c = ud;
    if (f->hd.type == NGHTTP2_RST_STREAM)
        count(c, H2UP_tx_reset);
    else if (f->hd.type == NGHTTP2_GOAWAY && f->goaway.error_code != NGHTTP2_NO_ERROR)
        c->proto_error = true;
    return 0;
}

static int session_new(wp_h2conn *c)
{
    const wp_h2_options *o = &wp_pool_gen(c->p)->cfg->clusters[c->p->cluster].h2;
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_option *opt = NULL;
    int rc = -1;
    if (nghttp2_session_callbacks_new(&cbs) != 0 || nghttp2_option_new(&opt) != 0)
        goto out;
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, on_frame_not_send);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, o->hpack_table_size);
    if (nghttp2_session_client_new2(&c->ss, cbs, c, opt) != 0)
        goto out;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, o->max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o->initial_stream_window_size},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, o->hpack_table_size},
    };
    if (nghttp2_submit_settings(c->ss, NGHTTP2_FLAG_NONE, iv, 4) != 0 ||
        nghttp2_session_set_local_window_size(c->ss, NGHTTP2_FLAG_NONE, 0,
                                              (int32_t)o->initial_connection_window_size) != 0)
        goto out;
    rc = 0;
out:
    if (cbs)
        nghttp2_session_callbacks_del(cbs);
    if (opt)
        nghttp2_option_del(opt);
    return rc;
}

/* ---------- connections ---------- */

static uint32_t conn_limit(const wp_h2conn *c)
{
    uint32_t lim = wp_pool_gen(c->p)->cfg->clusters[c->p->cluster].h2.max_concurrent_streams;
    if (c->ss) {
        uint32_t peer =
            nghttp2_session_get_remote_settings(c->ss, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
        lim = peer < lim ? peer : lim;
    }
    return lim;
}

static size_t conn_waiting(const wp_h2conn *c)
{
    size_t n = 0;
    for (const wp_pool_req *r = c->wait_head; r; r = r->next)
        n++;
    return n;
}

static void wait_push(wp_h2conn *c, wp_pool_req *rq)
{
    rq->next = NULL;
    rq->h2wait = c;
    rq->unwait = wp_h2pool_cancel;
    if (c->wait_tail)
        c->wait_tail->next = rq;
    else
        c->wait_head = rq;
    c->wait_tail = rq;
}

static wp_pool_req *wait_pop(wp_h2conn *c)
{
    wp_pool_req *rq = c->wait_head;
    if (!rq)
        return NULL;
    c->wait_head = rq->next;
    if (!c->wait_head)
        c->wait_tail = NULL;
    rq->next = NULL;
    rq->h2wait = NULL;
    rq->unwait = NULL;
    return rq;
}

void wp_h2pool_cancel(wp_pool_req *rq)
{
    wp_h2conn *c = rq->h2wait;
    wp_pool_req **pp = &c->wait_head, *prev = NULL;
    while (*pp && *pp != rq) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = rq->next;
        if (c->wait_tail == rq)
            c->wait_tail = prev;
    }
    rq->next = NULL;
    rq->h2wait = NULL;
    rq->unwait = NULL;
}

static void free_data(uv_handle_t *h)
{
    free(h->data);
}

/* A stream of c for rq (c is up): on_ready. */
static void assign_stream(wp_h2conn *c, wp_pool_req *rq)
{
    wp_pool *p = c->p;
    ustream *s = calloc(1, sizeof(*s));
    wp_uconn *u = NULL;
    if (s) {
        s->c = c;
        s->h2_open = true;
        h1_parser_init(&s->qp, H1_REQUEST, s->qh, H2UP_REQ_HEADERS, H2UP_MAX_HEAD);
        uv_timer_init(&p->w->loop, &s->timer);
        s->timer.data = s;
        u = wp_uconn_stream_new(p, c->host, c->u, wp_h2s_init, s);
        if (!u)
            uv_close((uv_handle_t *)&s->timer, free_data);
    }
    wp_pool_pending_end(rq);
    if (!u) {
        rq->cb->on_failure(rq->ctx, WP_POOL_LOCAL_CONNECTION_FAILURE, "out of memory", c->host);
        return;
    }
    s->u = u;
    s->next = c->streams;
    if (c->streams)
        c->streams->prev = s;
    c->streams = s;
    c->active++;
    c->opened++;
    const wp_cluster *cl = &wp_pool_gen(p)->cfg->clusters[p->cluster];
    if (cl->max_requests_per_connection && c->opened >= cl->max_requests_per_connection &&
        !c->draining) {
        c->draining = true;
        wp_cluster_stat(p->w, wp_pool_gen(p), p->cluster, WP_S_upstream_cx_max_requests, 1);
    }
    rq->host = c->host;
    WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, c->u->id, "new HTTP/2 stream (%u active)", c->active);
    rq->cb->on_ready(rq->ctx, u, c->host);
}

static bool has_room(const wp_h2conn *c)
{
    if (c->closed || c->draining)
        return false;
    if (!c->up)
        return conn_waiting(c) < conn_limit(c);
    return c->active < conn_limit(c) && !c->wait_head;
}

static void conn_unlink(wp_h2conn *c)
{
    wp_h2conn **pp = &c->p->h2[c->host];
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    c->next = NULL;
}

static void conn_free_cb(uv_handle_t *h)
{
    wp_h2conn *c = h->data;
    wf_strbuf_free(&c->out);
    free(c);
}

/* Waiting requests go to this connection while it has room, or elsewhere when it closes or
 * drains. */
static void conn_dispatch(wp_h2conn *c)
{
    while (c->wait_head && c->up && !c->closed && !c->draining && c->active < conn_limit(c))
        assign_stream(c, wait_pop(c));
    if (c->wait_head && (c->closed || c->draining)) {
        wp_pool_req *rq;
        while ((rq = wait_pop(c))) { /* to another connection (counted pending again) */
            wp_pool_pending_end(rq);
            wp_h2pool_newstream(rq->pool, rq->host, rq, rq->cb, rq->ctx);
        }
    }
}

static void conn_pump(uv_timer_t *t)
{
    wp_h2conn *c = t->data;
    if (c->closed)
        return;
    conn_dispatch(c);
    if (!c->closed && c->draining && c->active == 0 && !c->wait_head) {
        conn_fail(c, WP_RESET_CONNECTION_TERMINATION); /* drained: closes (no stream left) */
        return;
    }
    conn_flush(c);
    /* the cluster's idle_timeout (common_http_protocol_options) once no stream is open */
    uint64_t limit = wp_pool_gen(c->p)->cfg->clusters[c->p->cluster].idle_timeout_ms;
    if (c->closed || !c->up || c->active || c->wait_head || !limit)
        return;
    uint64_t idle = uv_now(&c->p->w->loop) - c->idle_since;
    if (idle >= limit) {
        wp_cluster_stat(c->p->w, wp_pool_gen(c->p), c->p->cluster, WP_S_upstream_cx_idle_timeout,
                        1);
        conn_fail(c, WP_RESET_CONNECTION_TERMINATION);
        return;
    }
    uv_timer_start(&c->timer, conn_pump, limit - idle, 0);
}

static void conn_arm(wp_h2conn *c)
{
    if (!c->closed)
        uv_timer_start(&c->timer, conn_pump, 0, 0);
}

/* c ends: its waiting requests go elsewhere, its streams fail with reason, its connection
 * closes; its memory goes from the loop. */
static void conn_fail(wp_h2conn *c, int reason)
{
    if (c->closed)
        return;
    c->closed = true;
    conn_unlink(c);
    for (ustream *s = c->streams, *next; s; s = next) {
        next = s->next;
        if (s->h2_open && !s->sock_closed && !s->reset) {
            s->reset = reason + 1;
            wp_h2s_arm(s);
        }
        s->h2_open = false;
        s->c = NULL;
        s->prev = s->next = NULL;
        wp_h2s_maybe_free(s);
    }
    c->streams = NULL;
    c->active = 0;
    if (c->ss) {
        nghttp2_session_del(c->ss);
        c->ss = NULL;
    }
    wp_uconn *u = c->u;
    c->u = NULL;
    if (u && !u->closing) {
        wp_uconn_detach(u);
        wp_uconn_close(u, true);
    }
    wp_pool_req *rq;
    while ((rq = wait_pop(c))) {
        wp_pool_pending_end(rq);
        wp_h2pool_newstream(rq->pool, rq->host, rq, rq->cb, rq->ctx);
    }
    uv_close((uv_handle_t *)&c->timer, conn_free_cb);
}

/* Frames out while no write is pending (a pending one holds them in nghttp2: the
 * back-pressure of a slow upstream). */
static void conn_flush(wp_h2conn *c)
{
    while (!c->closed && c->u && c->ss && !c->writing && !c->flushing) {
        c->flushing = true;
        c->out.len = 0;
        const uint8_t *d;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(c->ss, &d)) > 0) {
            wf_strbuf_append(&c->out, (const char *)d, (size_t)n);
            if (c->out.len >= 64 * 1024)
                break;
        }
        c->flushing = false;
        if (n < 0 || wf_strbuf_failed(&c->out)) {
            conn_fail(c, WP_RESET_LOCAL_RESET);
            return;
        }
        if (!c->out.len)
            break;
        uv_buf_t buf = uv_buf_init(c->out.data, (unsigned)c->out.len);
        c->writing = true;
        int r = wp_uconn_write(c->u, &buf, 1);
        if (r < 0)
            return; /* the connection reported its reset */
        c->writing = r == 1;
    }
    if (!c->closed && c->ss && !nghttp2_session_want_read(c->ss) &&
        !nghttp2_session_want_write(c->ss) && !c->writing)
        conn_fail(c, c->proto_error ? WP_RESET_PROTOCOL_ERROR : WP_RESET_CONNECTION_TERMINATION);
}

/* ---- the connection's callbacks (conn_pool.h wp_uconn_callbacks) ---- */

static void cu_data(void *owner, wp_uconn *u, size_t n)
{
    (void)n;
    wp_h2conn *c = owner;
    const char *d = u->rbuf->data + u->rstart;
    size_t len = u->rlen - u->rstart;
    u->rstart = u->rlen;
    ssize_t rv = nghttp2_session_mem_recv(c->ss, (const uint8_t *)d, len);
    if (rv < 0) {
        WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "HTTP/2 protocol error: %s",
                    nghttp2_strerror((int)rv));
        c->proto_error = true;
        conn_fail(c, WP_RESET_PROTOCOL_ERROR);
        return;
    }
    conn_flush(c);
}

static void cu_eof(void *owner, wp_uconn *u)
{
    (void)u;
    conn_fail(owner, WP_RESET_CONNECTION_TERMINATION);
}

static void cu_written(void *owner, wp_uconn *u)
{
    (void)u;
    wp_h2conn *c = owner;
    c->writing = false;
    conn_flush(c);
}

static void cu_reset(void *owner, wp_uconn *u, int reason)
{
    (void)u;
    wp_h2conn *c = owner;
    c->u = NULL; /* gone */
    c->writing = false;
    conn_fail(c, reason == WP_RESET_LOCAL_RESET ? WP_RESET_CONNECTION_TERMINATION : reason);
}

static const wp_uconn_callbacks conn_ucbs = {cu_data, cu_eof, cu_written, cu_reset};

/* ---- the pool's answer for the connection ---- */

static void cp_ready(void *ctx, wp_uconn *u, int host)
{
    (void)host;
    wp_h2conn *c = ctx;
    c->u = u;
    wp_uconn_attach(u, &conn_ucbs, c);
    if (session_new(c) != 0) {
        conn_fail(c, WP_RESET_LOCAL_CONNECTION_FAILURE);
        return;
    }
    c->up = true;
    c->idle_since = uv_now(&c->p->w->loop);
    wp_cluster_stat(c->p->w, wp_pool_gen(c->p), c->p->cluster, WP_S_upstream_cx_http2_total, 1);
    WF_CONN_LOG(WF_LC_pool, WF_LOG_DEBUG, u->id, "HTTP/2 connection up");
    conn_dispatch(c);
    conn_flush(c);
}

static void cp_failure(void *ctx, wp_pool_failure reason, const char *tfr, int host)
{
    wp_h2conn *c = ctx;
    c->closed = true;
    conn_unlink(c);
    wp_pool_req *rq;
    while ((rq = wait_pop(c))) {
        wp_pool_pending_end(rq);
        rq->cb->on_failure(rq->ctx, reason, tfr, host);
    }
    uv_close((uv_handle_t *)&c->timer, conn_free_cb);
}

static const wp_pool_callbacks conn_pool_cbs = {cp_ready, cp_failure};
static const wp_h2conn_ops conn_ops = {conn_flush, conn_arm};

static size_t dst_len(const struct sockaddr *dst)
{
    return dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Is c a connection for host (or, on an ORIGINAL_DST cluster, for dst)? */
static bool conn_for(const wp_h2conn *c, const struct sockaddr *dst)
{
    if (!dst)
        return !c->has_dst;
    return c->has_dst && c->dst.ss_family == dst->sa_family &&
           memcmp(&c->dst, dst, dst_len(dst)) == 0;
}

/* A connection with room for one more stream, or NULL. */
static wp_h2conn *find_conn(wp_pool *p, int host, const struct sockaddr *dst)
{
    wp_h2conn *c = p->h2[host];
    while (c && (!conn_for(c, dst) || !has_room(c)))
        c = c->next;
    return c;
}

/* A new connection for rq (rq waits on it), or false when out of memory (rq failed). */
static bool open_conn(wp_pool *p, int host, const struct sockaddr *dst, wp_pool_req *rq)
{
    wp_h2conn *c = calloc(1, sizeof(*c));
    if (!c) {
        wp_pool_pending_end(rq);
        rq->cb->on_failure(rq->ctx, WP_POOL_LOCAL_CONNECTION_FAILURE, "out of memory", host);
        return false;
    }
    c->ops = &conn_ops;
    register_slots(p);
    c->p = p;
    c->host = host;
    if (dst) {
        c->has_dst = true;
        memcpy(&c->dst, dst, dst_len(dst));
    }
    uv_timer_init(&p->w->loop, &c->timer);
    c->timer.data = c;
    c->next = p->h2[host];
    p->h2[host] = c;
    wait_push(c, rq);
    if (dst) /* may fail at once */
        wp_pool_connect_dst(p, (const struct sockaddr *)&c->dst, &c->creq, &conn_pool_cbs, c);
    else
        wp_pool_connect(p, host, &c->creq, &conn_pool_cbs, c);
    return true;
}

static bool newstream(wp_pool *p, int host, const struct sockaddr *dst, wp_pool_req *rq,
                      const wp_pool_callbacks *cb, void *ctx)
{
    *rq = (wp_pool_req){.pool = p, .cb = cb, .ctx = ctx, .host = host};
    wp_h2conn *c = find_conn(p, host, dst);
    if (c && c->up) {
        rq->pending = false;
        assign_stream(c, rq);
        return false;
    }
    if (!wp_pool_pending_begin(p, rq))
        return false;
    if (c) {
        wait_push(c, rq);
        return true;
    }
    const wp_gen *g = wp_pool_gen(p);
    const wp_cluster *cl = &g->cfg->clusters[p->cluster];
    if (atomic_load_explicit(&g->crt[p->cluster].cx_open, memory_order_relaxed) >=
        cl->cb.max_connections) {
        for (c = p->h2[host]; c && (c->closed || c->draining || !conn_for(c, dst)); c = c->next)
            ;
        if (c) { /* max_connections: the request waits for a stream of this one */
            wp_cluster_stat(p->w, g, p->cluster, WP_S_upstream_cx_overflow, 1);
            wait_push(c, rq);
            return true;
        }
    }
    return open_conn(p, host, dst, rq) && rq->pending;
}

bool wp_h2pool_newstream(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                         void *ctx)
{
    return newstream(p, host, NULL, rq, cb, ctx);
}

bool wp_h2pool_newstream_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                             const wp_pool_callbacks *cb, void *ctx)
{
    return newstream(p, 0, dst, rq, cb, ctx);
}

void wp_h2pool_close_idle(wp_pool *p)
{
    size_t nh = wp_pool_gen(p)->cfg->clusters[p->cluster].nendpoints;
    for (size_t h = 0; h < (nh ? nh : 1); h++) { /* ORIGINAL_DST: host 0 without endpoints */
        for (wp_h2conn *c = p->h2[h], *next; c; c = next) {
            next = c->next;
            c->draining = true;
            if (c->up && c->active == 0 && !c->wait_head)
                conn_fail(c, WP_RESET_CONNECTION_TERMINATION);
        }
    }
}
