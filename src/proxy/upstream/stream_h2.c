/*
 * stream_h2.c - one stream of an upstream HTTP/2 connection as the transport socket of the
 * wp_uconn a request holds (see pool_h2.h): the router's HTTP/1.1 request bytes parsed and
 * submitted (HEADERS, DATA from a queue nghttp2 pulls as the window allows, trailers), the
 * response bytes (rendered by pool_h2.c's session callbacks) delivered from the loop as the
 * router has room, the window opened as it reads, a reset reported after the bytes before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/upstream/cluster_manager.h"
#include "proxy/upstream/pool_h2_int.h"
#include "proxy/upstream/uconn_h2.h"

/* ---------- the stream's socket (transport_socket.h) ---------- */

void wp_h2s_maybe_free(ustream *s)
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
void wp_h2s_h2_closed(ustream *s)
{
    if (!s->h2_open)
        return;
    s->h2_open = false;
    if (s->c && s->c->active && --s->c->active == 0)
        s->c->idle_since = uv_now(&s->c->p->w->loop);
    if (s->c)
        s->c->ops->arm(s->c); /* a slot opened, or the connection may close */
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
        s->c->ops->flush(s->c);
    }
    if (s->reset && !s->sock_closed && s->in_off == s->in.len) {
        int reason = s->reset - 1;
        s->reset = 0;
        wp_uconn_stream_reset(s->u, reason);
    }
}

void wp_h2s_arm(ustream *s)
{
    if (!s->sock_closed)
        uv_timer_start(&s->timer, us_pump, 0, 0);
}

static int us_read_start(wp_tsock *t)
{
    ustream *s = (ustream *)t;
    s->reading = true;
    if (s->in_off < s->in.len || s->reset)
        wp_h2s_arm(s);
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
        wp_h2s_arm(s);
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
    s->c->ops->flush(s->c);
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
    wp_h2s_maybe_free(s);
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
        c->ops->flush(c);
    } else if (s->h2_open && !s->id) {
        wp_h2s_h2_closed(s); /* never submitted */
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

wp_tsock *wp_h2s_init(void *arg, const wp_tsock_cbs *cbs, void *owner)
{
    ustream *s = arg;
    s->base.ops = &us_ops;
    s->base.cbs = cbs;
    s->base.owner = owner;
    return &s->base;
}
