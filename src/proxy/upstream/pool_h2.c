/*
 * pool_h2.c - HTTP/2 upstream connections and their streams (see pool_h2.h): the session
 * (nghttp2 client) over a pooled connection, the streams handed to requests as wp_uconn
 * whose transport socket is the stream, GOAWAY, resets and flow control.
 */
#include "proxy/upstream/pool_h2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "proxy/upstream/cluster_manager.h"
#include "proxy/upstream/uconn_h2.h"

#define H2UP_MAX_FIELDS  128u
#define H2UP_MAX_HEAD    (64u * 1024u)
#define H2UP_REQ_HEADERS WP_UPSTREAM_MAX_HEADERS

/* cluster.<name>.http2.* counters weft counts (Envoy's Http2::CodecStats) */
#define H2UP_COUNTERS(X) X(rx_reset) X(tx_reset) X(trailers) X(stream_refused_errors)

enum {
#define H2UP_IDX_(n) H2UP_##n,
    H2UP_COUNTERS(H2UP_IDX_)
#undef H2UP_IDX_
        H2UP_NCOUNTERS
};

typedef struct ustream ustream;

struct wp_h2conn {
    wp_pool *p;
    int host;
    wp_uconn *u; /* the connection: NULL until it is up, and once it closed */
    wp_pool_req creq;
    nghttp2_session *ss;
    uv_timer_t timer; /* work from the loop (waiting requests, close when idle); frees c */
    struct wp_h2conn *next;
    wp_pool_req *wait_head, *wait_tail;
    ustream *streams;
    uint32_t active, opened;
    uint64_t idle_since; /* uv_now when its last stream ended (idle_timeout) */
    bool up, draining, closed, writing, flushing, proto_error;
    wf_strbuf out;
};

/* One stream: its transport socket (the stream wp_uconn's), the request parser and body
 * queue, the response rendered as HTTP/1.1 bytes. */
struct ustream {
    wp_tsock base;
    uv_timer_t timer; /* deliveries from the loop; its close ends the socket */
    wp_h2conn *c;     /* NULL once the connection is gone */
    ustream *prev, *next;
    wp_uconn *u;
    int32_t id; /* 0 until the HEADERS were submitted */
    bool reading, sock_closed, timer_closed, h2_open, notify_written, write_pending;
    /* request */
    h1_parser qp;
    h1_header qh[H2UP_REQ_HEADERS];
    wf_strbuf win, odata, otrl;
    size_t ooff, ntrl;
    bool req_end, head_req;
    /* response */
    wf_strbuf blk; /* the header block being read: name\0value\0 */
    size_t nblk;
    int status;
    bool head_done, chunked, resp_end, rst_rx;
    wf_strbuf in;
    size_t in_off, unconsumed;
    int reset; /* a WP_RESET_* + 1 to report once the bytes before it were read; 0 none */
};

static void conn_flush(wp_h2conn *c);
static void conn_fail(wp_h2conn *c, int reason);
static void conn_arm(wp_h2conn *c);
static void us_arm(ustream *s);

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

/* ---------- the stream's socket (transport_socket.h) ---------- */

static void us_maybe_free(ustream *s)
{
    if (!s->timer_closed || s->h2_open)
        return;
    if (s->c) {
        if (s->prev)
            s->prev->next = s->next;
        else
            s->c->streams = s->next;
        if (s->next)
            s->next->prev = s->prev;
    }
    wf_strbuf_free(&s->win);
    wf_strbuf_free(&s->odata);
    wf_strbuf_free(&s->otrl);
    wf_strbuf_free(&s->blk);
    wf_strbuf_free(&s->in);
    free(s);
}

/* The stream ended on the HTTP/2 side (closed, reset or its connection gone). */
static void us_h2_closed(ustream *s)
{
    if (!s->h2_open)
        return;
    s->h2_open = false;
    if (s->c && s->c->active && --s->c->active == 0)
        s->c->idle_since = uv_now(&s->c->p->w->loop);
    if (s->c)
        conn_arm(s->c); /* a slot opened, or the connection may close */
}

/* From the loop: the write completion, the response bytes the router has room for, then a
 * reset the stream ended with. */
static void us_pump(uv_timer_t *t)
{
    ustream *s = t->data;
    if (s->sock_closed)
        return;
    void *owner = s->base.owner;
    const wp_tsock_cbs *cbs = s->base.cbs;
    if (s->notify_written) {
        s->notify_written = false;
        cbs->on_written(owner, 0);
        if (s->sock_closed)
            return;
    }
    size_t consumed = 0;
    while (s->reading && s->in_off < s->in.len) {
        uv_buf_t room;
        cbs->alloc(owner, &room);
        if (room.len == 0) {
            s->reading = false;
            cbs->on_read(owner, UV_ENOBUFS);
            break;
        }
        size_t n = s->in.len - s->in_off < room.len ? s->in.len - s->in_off : room.len;
        memcpy(room.base, s->in.data + s->in_off, n);
        s->in_off += n;
        size_t body = n < s->unconsumed ? n : s->unconsumed;
        s->unconsumed -= body;
        consumed += body;
        cbs->on_read(owner, (ssize_t)n);
        if (s->sock_closed)
            break;
    }
    if (s->in_off == s->in.len)
        s->in.len = s->in_off = 0;
    if (consumed && s->c && s->c->ss) { /* the upstream may send more */
        if (s->h2_open)
            nghttp2_session_consume(s->c->ss, s->id, consumed);
        else
            nghttp2_session_consume_connection(s->c->ss, consumed);
        conn_flush(s->c);
    }
    if (s->reset && !s->sock_closed && s->in_off == s->in.len) {
        int reason = s->reset - 1;
        s->reset = 0;
        wp_uconn_stream_reset(s->u, reason);
    }
}

static void us_arm(ustream *s)
{
    if (!s->sock_closed)
        uv_timer_start(&s->timer, us_pump, 0, 0);
}

static int us_read_start(wp_tsock *t)
{
    ustream *s = (ustream *)t;
    s->reading = true;
    if (s->in_off < s->in.len || s->reset)
        us_arm(s);
    return 0;
}

static void us_read_stop(wp_tsock *t)
{
    ((ustream *)t)->reading = false;
}

static size_t us_queued(const ustream *s)
{
    return s->odata.len - s->ooff;
}

/* nghttp2's data source: the request body as it comes, the end with trailers. */
static ssize_t req_read(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    (void)id;
    (void)ud;
    ustream *s = src->ptr;
    size_t avail = us_queued(s);
    if (!avail && !s->req_end)
        return NGHTTP2_ERR_DEFERRED;
    size_t n = avail < length ? avail : length;
    memcpy(buf, s->odata.data + s->ooff, n);
    s->ooff += n;
    if (s->ooff == s->odata.len)
        s->odata.len = s->ooff = 0;
    if (s->req_end && !us_queued(s)) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (s->ntrl) {
            nghttp2_nv nv[H2UP_MAX_FIELDS];
            const char *q = s->otrl.data;
            size_t k = 0;
            for (size_t i = 0; i < s->ntrl && k < H2UP_MAX_FIELDS; i++) {
                size_t nl = strlen(q);
                const char *v = q + nl + 1;
                size_t vl = strlen(v);
                nv[k++] = (nghttp2_nv){(uint8_t *)q, (uint8_t *)v, nl, vl, NGHTTP2_NV_FLAG_NONE};
                q = v + vl + 1;
            }
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            if (nghttp2_submit_trailer(ss, s->id, nv, k) != 0)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
    }
    if (s->write_pending && us_queued(s) <= WP_H2UP_BUFFER) {
        s->write_pending = false;
        s->notify_written = true;
        us_arm(s);
    }
    return (ssize_t)n;
}

/* The request head: HEADERS (with END_STREAM when no body follows). */
static int submit_head(ustream *s, const h1_message *m)
{
    wp_h2conn *c = s->c;
    wp_h2up_field f[H2UP_MAX_FIELDS];
    wf_strbuf names = WF_STRBUF_INIT;
    const wp_tsock_ssl *ssl = c->u ? wp_tsock_ssl_info(c->u->sock) : NULL;
    long n = wp_h2up_request_fields(m, ssl != NULL, f, H2UP_MAX_FIELDS, &names);
    if (n < 0) {
        wf_strbuf_free(&names);
        return -1;
    }
    nghttp2_nv nv[H2UP_MAX_FIELDS];
    for (long i = 0; i < n; i++)
        nv[i] = (nghttp2_nv){(uint8_t *)f[i].name, (uint8_t *)f[i].value, f[i].nlen, f[i].vlen,
                             NGHTTP2_NV_FLAG_NONE};
    s->head_req = m->method.len == 4 && memcmp(m->method.p, "HEAD", 4) == 0;
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = req_read};
    int32_t id = nghttp2_submit_request(c->ss, NULL, nv, (size_t)n,
                                        m->framing == H1_BODY_NONE ? NULL : &prd, s);
    wf_strbuf_free(&names); /* nghttp2 copied the pairs */
    if (id < 0)
        return -1;
    s->id = id;
    if (m->framing == H1_BODY_NONE)
        s->req_end = true;
    return 0;
}

static void keep_trailers(ustream *s, const h1_message *m)
{
    for (size_t i = 0; i < m->ntrailers; i++) {
        const h1_header *h = &m->trailers[i];
        if (h->name.len == 0)
            continue;
        size_t at = s->otrl.len;
        wf_strbuf_append(&s->otrl, h->name.p, h->name.len);
        for (size_t j = at; j < s->otrl.len && !wf_strbuf_failed(&s->otrl); j++)
            s->otrl.data[j] = (char)h1_lower((unsigned char)s->otrl.data[j]);
        wf_strbuf_putc(&s->otrl, '\0');
        wf_strbuf_append(&s->otrl, h->value.p, h->value.len);
        wf_strbuf_putc(&s->otrl, '\0');
        s->ntrl++;
    }
}

/* The router's HTTP/1.1 request bytes: parsed, the head submitted, the body queued. */
static int us_write(wp_tsock *t, uv_buf_t *bufs, unsigned n)
{
    ustream *s = (ustream *)t;
    if (s->reset || (s->id && !s->h2_open))
        return 0; /* the stream ended: what follows goes nowhere (the reset is reported) */
    if (!s->c || !s->c->ss || s->c->closed)
        return -1;
    for (unsigned i = 0; i < n; i++)
        wf_strbuf_append(&s->win, bufs[i].base, bufs[i].len);
    if (wf_strbuf_failed(&s->win))
        return -1;
    size_t off = 0;
    bool more = false;
    for (int guard = 0; !s->req_end && guard < 1000000; guard++) {
        h1_event ev; /* on to the end event even when every byte is consumed */
        size_t used = h1_parse(&s->qp, s->win.data + off, s->win.len - off, &ev);
        off += used;
        if (ev == H1_EV_NEED_MORE || (ev == H1_EV_BODY && !used && !s->qp.data_len))
            break;
        if (ev == H1_EV_ERROR || ev == H1_EV_UPGRADED)
            return -1;
        if (ev == H1_EV_HEADERS) {
            if (submit_head(s, &s->qp.msg) != 0)
                return -1;
        } else if (ev == H1_EV_BODY) {
            wf_strbuf_append(&s->odata, s->qp.data, s->qp.data_len);
            more = true;
        } else if (ev == H1_EV_TRAILERS) {
            keep_trailers(s, &s->qp.msg);
        } else if (ev == H1_EV_DONE) {
            s->req_end = true;
            more = true;
        }
    }
    if (off) {
        memmove(s->win.data, s->win.data + off, s->win.len - off);
        s->win.len -= off;
    }
    if (wf_strbuf_failed(&s->odata) || wf_strbuf_failed(&s->otrl))
        return -1;
    if (more && s->id && s->h2_open)
        nghttp2_session_resume_data(s->c->ss, s->id);
    conn_flush(s->c);
    if (us_queued(s) <= WP_H2UP_BUFFER)
        return 0;
    s->write_pending = true; /* on_written once nghttp2 framed enough */
    return 1;
}

static int us_try_write(wp_tsock *t, const uv_buf_t *bufs, unsigned n)
{
    (void)t;
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    return (int)total;
}

static int us_shutdown(wp_tsock *t)
{
    (void)t;
    return 0;
}

static void us_timer_closed(uv_handle_t *h)
{
    ustream *s = h->data;
    s->timer_closed = true;
    s->base.cbs->on_closed(s->base.owner);
    us_maybe_free(s);
}

/* The request is done with the stream: a stream still open is reset (CANCEL). */
static void us_close(wp_tsock *t)
{
    ustream *s = (ustream *)t;
    s->sock_closed = true;
    s->reading = false;
    wp_h2conn *c = s->c;
    if (c && c->ss && s->unconsumed) /* never read: the connection's window opens again */
        nghttp2_session_consume_connection(c->ss, s->unconsumed);
    s->unconsumed = 0;
    if (c && c->ss && s->h2_open && s->id) {
        nghttp2_submit_rst_stream(c->ss, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
        conn_flush(c);
    } else if (s->h2_open && !s->id) {
        us_h2_closed(s); /* never submitted */
    }
    uv_close((uv_handle_t *)&s->timer, us_timer_closed);
}

static int us_connect(wp_tsock *t, uv_connect_t *req, const struct sockaddr *addr)
{
    (void)t;
    (void)req;
    (void)addr;
    return UV_ENOTSUP;
}

static int us_address(const wp_tsock *t, bool peer, char *out, size_t cap)
{
    const ustream *s = (const ustream *)t;
    if (s->c && s->c->u)
        return wp_tsock_address(s->c->u->sock, peer, out, cap);
    snprintf(out, cap, "-");
    return 0;
}

static const wp_tsock_ssl *us_ssl(const wp_tsock *t)
{
    const ustream *s = (const ustream *)t;
    return s->c && s->c->u ? wp_tsock_ssl_info(s->c->u->sock) : NULL;
}

static const wp_tsock_ops us_ops = {
    .read_start = us_read_start,
    .read_stop = us_read_stop,
    .write = us_write,
    .try_write = us_try_write,
    .shutdown = us_shutdown,
    .close = us_close,
    .connect = us_connect,
    .address = us_address,
    .ssl = us_ssl,
    .failure_reason = NULL,
    .peer_cert = NULL,
};

static wp_tsock *us_init(void *arg, const wp_tsock_cbs *cbs, void *owner)
{
    ustream *s = arg;
    s->base.ops = &us_ops;
    s->base.cbs = cbs;
    s->base.owner = owner;
    return &s->base;
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
    us_arm(s);
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
        us_arm(s);
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
    us_arm(s);
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
            us_arm(s);
        }
    }
    us_h2_closed(s);
    if (s->sock_closed)
        us_maybe_free(s);
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
            us_arm(s);
        }
        us_h2_closed(s);
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
        u = wp_uconn_stream_new(p, c->host, c->u->id, c->u->local, us_init, s);
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
            us_arm(s);
        }
        s->h2_open = false;
        s->c = NULL;
        s->prev = s->next = NULL;
        us_maybe_free(s);
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

bool wp_h2pool_newstream(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                         void *ctx)
{
    *rq = (wp_pool_req){.pool = p, .cb = cb, .ctx = ctx, .host = host};
    wp_h2conn *c = p->h2[host];
    while (c && !has_room(c))
        c = c->next;
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
        for (c = p->h2[host]; c && (c->closed || c->draining); c = c->next)
            ;
        if (c) { /* max_connections: the request waits for a stream of this one */
            wp_cluster_stat(p->w, g, p->cluster, WP_S_upstream_cx_overflow, 1);
            wait_push(c, rq);
            return true;
        }
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        wp_pool_pending_end(rq);
        cb->on_failure(ctx, WP_POOL_LOCAL_CONNECTION_FAILURE, "out of memory", host);
        return false;
    }
    register_slots(p);
    c->p = p;
    c->host = host;
    uv_timer_init(&p->w->loop, &c->timer);
    c->timer.data = c;
    c->next = p->h2[host];
    p->h2[host] = c;
    wait_push(c, rq);
    wp_pool_connect(p, host, &c->creq, &conn_pool_cbs, c); /* may fail at once */
    return rq->pending;
}

void wp_h2pool_close_idle(wp_pool *p)
{
    size_t nh = wp_pool_gen(p)->cfg->clusters[p->cluster].nendpoints;
    for (size_t h = 0; h < nh; h++) {
        for (wp_h2conn *c = p->h2[h], *next; c; c = next) {
            next = c->next;
            c->draining = true;
            if (c->up && c->active == 0 && !c->wait_head)
                conn_fail(c, WP_RESET_CONNECTION_TERMINATION);
        }
    }
}
