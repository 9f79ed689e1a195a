/*
 * conn_h2.c - HTTP/2 downstream connections (see conn_h2.h): the codec's events to child
 * connections (one per stream, over a transport socket that is the stream), the children's
 * HTTP/1.1 responses to frames, writes, drain and close.
 */
#include "proxy/http/conn_h2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "proxy/http/codec.h"
#include "proxy/http/codec_h2.h"

/* Envoy's http2.* stats weft counts (Http2::CodecStats, registered on the first HTTP/2
 * connection as Envoy does on its first HTTP/2 codec) */
#define H2C_COUNTERS(X)                                                                            \
    X(rx_reset)                                                                                    \
    X(tx_reset)                                                                                    \
    X(header_overflow) X(rx_messaging_error) X(headers_cb_no_stream) X(goaway_sent) X(trailers)

struct wp_h2c {
    wp_dconn *d;
    wp_h2_server *codec;
    wp_h2_stats st, synced; /* counted by the codec; added to the store so far */
#define H2C_SLOT_(n) uint32_t slot_##n;
    H2C_COUNTERS(H2C_SLOT_)
#undef H2C_SLOT_
    uint32_t slot_streams_active;
    size_t streams_synced;
    wf_strbuf out; /* frames being written (d->writing) */
    struct wp_h2_bstream *streams;
    wp_deferred_item flush_item; /* on the worker's deferred list while a flush is wanted */
    bool flushing, closed, draining, free_on_flush;
};

/* One stream: its transport socket (the child connection's), the request bytes for the
 * child, the response parser and body buffers. Lives until both the socket closed (its
 * close reported, from the worker's deferred list) and the codec forgot the stream; then it goes
 * back to the worker's free ones (w->free_h2_streams, its buffers' room kept) or is freed. */
typedef struct wp_h2_bstream {
    wp_tsock base;
    /* deliveries to the child from the loop (the worker's deferred list, net/deferred.h: the
     * end of this loop iteration); after the socket's close, its on_closed */
    wp_deferred_item pump;
    wp_h2c *c; /* NULL once the connection closed */
    wp_worker *w;
    struct wp_h2_bstream *prev, *next;
    wp_dconn *child;
    int32_t id;
    bool reading, sock_closed, closed_told, h2_open;
    bool req_chunked, notify_written, write_pending, pending_close;
    const char *reset_details; /* the client reset the stream (pending_close) */
    wf_strbuf in;              /* request bytes (HTTP/1.1) not yet read by the child */
    size_t in_off, unconsumed; /* unconsumed: body bytes whose window is still closed */
    /* response */
    h1_parser rp; /* fields in rh */
    wf_strbuf rin;
    size_t roff;
    wf_strbuf body[2];
    int acc, framing; /* buffer filling, buffer given to the codec (-1 none) */
    wf_strbuf trl;    /* trailers: name\0value\0 pairs */
    size_t ntrl;
    bool resp_complete, end_submitted, resp_error;
    struct wp_h2_bstream *next_free;
    h1_header rh[WP_MAX_HEADERS]; /* last: not zeroed (the parser fills what it uses) */
} bstream;

#define BS_FREE_MAX 64u    /* stream states a worker keeps (as its HTTP/1 streams) */
#define BS_KEEP     16384u /* buffer room a kept state may hold on to */

static bool bst_keepable(const wf_strbuf *b)
{
    return !b->failed && b->cap <= BS_KEEP;
}

static void bst_destroy(bstream *b)
{
    wf_strbuf_free(&b->in);
    wf_strbuf_free(&b->rin);
    wf_strbuf_free(&b->body[0]);
    wf_strbuf_free(&b->body[1]);
    wf_strbuf_free(&b->trl);
    free(b);
}

/* A stream state with everything before rh zeroed: one of the worker's free ones (its
 * buffers emptied, their room kept) or new. NULL when out of memory. */
static bstream *bst_get(wp_worker *w)
{
    bstream *b = w->free_h2_streams;
    if (!b) {
        b = malloc(sizeof(*b));
        if (b)
            memset(b, 0, offsetof(bstream, rh));
        return b;
    }
    w->free_h2_streams = b->next_free;
    w->nfree_h2_streams--;
    wf_strbuf keep[5] = {b->in, b->rin, b->body[0], b->body[1], b->trl};
    memset(b, 0, offsetof(bstream, rh));
    b->in = keep[0];
    b->rin = keep[1];
    b->body[0] = keep[2];
    b->body[1] = keep[3];
    b->trl = keep[4];
    b->in.len = b->rin.len = b->body[0].len = b->body[1].len = b->trl.len = 0;
    return b;
}

static void bst_put(wp_worker *w, bstream *b)
{
    if (w->nfree_h2_streams >= BS_FREE_MAX || !bst_keepable(&b->in) || !bst_keepable(&b->rin) ||
        !bst_keepable(&b->body[0]) || !bst_keepable(&b->body[1]) || !bst_keepable(&b->trl)) {
        bst_destroy(b);
        return;
    }
    b->next_free = w->free_h2_streams;
    w->free_h2_streams = b;
    w->nfree_h2_streams++;
}

void wp_h2c_worker_free(wp_worker *w)
{
    while (w->free_h2_streams) {
        bstream *b = w->free_h2_streams;
        w->free_h2_streams = b->next_free;
        bst_destroy(b);
    }
    w->nfree_h2_streams = 0;
}

static void h2c_flush(wp_h2c *c);
static void h2c_want_flush(wp_h2c *c);
static void h2c_maybe_finish(wp_h2c *c);

/* ---------- the socket a child connection reads and writes (transport_socket.h) ---------- */

static void bst_maybe_free(bstream *b)
{
    if (!b->closed_told || b->h2_open)
        return;
    if (b->c) {
        if (b->prev)
            b->prev->next = b->next;
        else
            b->c->streams = b->next;
        if (b->next)
            b->next->prev = b->prev;
    }
    bst_put(b->w, b);
}

static void bst_arm(bstream *b);

/* From the loop: the pending write's completion, the request bytes the child has room for,
 * then the end the codec reported. */
static void bst_pump(wp_deferred_item *it)
{
    bstream *b = (bstream *)(void *)((char *)it - offsetof(bstream, pump));
    if (b->sock_closed) { /* closed since: the owner hears it now, after bst_close returned */
        if (!b->closed_told) {
            b->closed_told = true;
            b->base.cbs->on_closed(b->base.owner);
            bst_maybe_free(b);
        }
        return;
    }
    void *owner = b->base.owner;
    const wp_tsock_cbs *cbs = b->base.cbs;
    if (b->notify_written) {
        b->notify_written = false;
        cbs->on_written(owner, 0);
        if (b->sock_closed)
            return;
    }
    size_t consumed = 0;
    while (b->reading && b->in_off < b->in.len) {
        uv_buf_t room;
        cbs->alloc(owner, &room);
        if (room.len == 0) {
            b->reading = false;
            cbs->on_read(owner, UV_ENOBUFS);
            break;
        }
        size_t n = b->in.len - b->in_off < room.len ? b->in.len - b->in_off : room.len;
        memcpy(room.base, b->in.data + b->in_off, n);
        b->in_off += n;
        size_t body = n < b->unconsumed ? n : b->unconsumed;
        b->unconsumed -= body;
        consumed += body;
        cbs->on_read(owner, (ssize_t)n);
        if (b->sock_closed)
            break;
    }
    if (b->in_off == b->in.len)
        b->in.len = b->in_off = 0;
    if (consumed && b->c && !b->c->closed) {
        wp_h2_server_consume(b->c->codec, b->id, consumed); /* the client may send more */
        h2c_want_flush(b->c);
    }
    if (b->pending_close && !b->sock_closed) {
        b->pending_close = false;
        if (b->reset_details)
            wp_dconn_peer_reset(b->child, b->reset_details);
        else
            wp_dconn_close(b->child);
    }
}

static void bst_arm(bstream *b)
{
    if (!b->sock_closed)
        wp_deferred_delete(&b->w->deferred, &b->pump, bst_pump);
}

static int bst_read_start(wp_tsock *t)
{
    bstream *b = (bstream *)t;
    b->reading = true;
    if (b->in_off < b->in.len)
        bst_arm(b);
    return 0;
}

static void bst_read_stop(wp_tsock *t)
{
    ((bstream *)t)->reading = false;
}

/* ---- the child's response (HTTP/1.1 bytes) to frames ---- */

static size_t bst_buffered(const bstream *b)
{
    return b->body[0].len + b->body[1].len;
}

static void trailers_list(const bstream *b, wp_hdr_list *l)
{
    wp_hdr_list_init(l);
    const char *p = b->trl.data;
    for (size_t i = 0; i < b->ntrl; i++) {
        size_t nl = strlen(p);
        const char *v = p + nl + 1;
        size_t vl = strlen(v);
        wp_hdr_list_add(l, p, nl, v, vl);
        p = v + vl + 1;
    }
}

/* Gives the codec the filled body buffer (when none is being framed) and the end. */
static void bst_submit(bstream *b)
{
    if (!b->c || b->c->closed || !b->h2_open || b->framing >= 0 || b->end_submitted)
        return;
    wp_h2_server *h = b->c->codec;
    wf_strbuf *body = &b->body[b->acc];
    bool end = b->resp_complete;
    int rc = 0;
    if (body->len) {
        rc = wp_h2_server_data(h, b->id, body->data, body->len, end && !b->ntrl);
        b->framing = b->acc;
        b->acc ^= 1;
    } else if (end && !b->ntrl) {
        rc = wp_h2_server_data(h, b->id, "", 0, true);
    }
    if (rc == 0 && end && b->ntrl) {
        wp_hdr_list l;
        trailers_list(b, &l);
        rc = wp_h2_server_trailers(h, b->id, &l);
    }
    if (end)
        b->end_submitted = true;
    if (rc != 0)
        wp_h2_server_reset(h, b->id, 2 /* INTERNAL_ERROR */);
}

static void rc_consumed(void *ctx, size_t n)
{
    ((bstream *)ctx)->roff += n;
}

static void rc_headers(void *ctx, const h1_message *m, const char *raw, size_t raw_len)
{
    (void)raw;
    (void)raw_len;
    bstream *b = ctx;
    if (m->status < 200)
        return; /* 1xx: not relayed */
    bool end = m->framing == H1_BODY_NONE;
    /* a trailers-only gRPC reply is one HEADERS frame without the content-length: 0 that the
     * child's HTTP/1.1 codec added (Envoy's HTTP/2 codec has none: protocols.md §3.2) */
    bool trailers_only = end && h1_find_header(m->headers, m->nheaders, "grpc-status");
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    for (size_t i = 0; i < m->nheaders; i++) {
        const h1_header *f = &m->headers[i];
        if (trailers_only && f->name.len == 14 && strncasecmp(f->name.p, "content-length", 14) == 0)
            continue;
        wp_hdr_list_add_field(&l, f);
    }
    if (wp_h2_server_respond(b->c->codec, b->id, m->status, &l, end) != 0)
        b->resp_error = true;
    b->resp_complete = b->end_submitted = end;
}

static void rc_data(void *ctx, const char *data, size_t len)
{
    bstream *b = ctx;
    wf_strbuf_append(&b->body[b->acc], data, len);
    if (wf_strbuf_failed(&b->body[b->acc]))
        b->resp_error = true;
}

static void rc_trailers(void *ctx, const h1_header *t, size_t n)
{
    bstream *b = ctx;
    for (size_t i = 0; i < n; i++) {
        wf_strbuf_append(&b->trl, t[i].name.p, t[i].name.len);
        wf_strbuf_putc(&b->trl, '\0');
        wf_strbuf_append(&b->trl, t[i].value.p, t[i].value.len);
        wf_strbuf_putc(&b->trl, '\0');
    }
    b->ntrl += n;
    if (wf_strbuf_failed(&b->trl))
        b->resp_error = true;
}

/* The response ended. An HTTP/1.1 client gets no trailers (Envoy's HTTP/1 codec drops them
 * unless enable_trailers), so the child wrote none: the upstream's, as its stream kept them,
 * go to the HTTP/2 client (gRPC's grpc-status). */
static void rc_complete(void *ctx)
{
    bstream *b = ctx;
    b->resp_complete = true;
    const wp_stream *s = b->child ? b->child->stream : NULL;
    if (!b->ntrl && s && s->si.nresponse_trailers)
        rc_trailers(b, s->si.response_trailers, s->si.nresponse_trailers);
}

static void rc_upgraded(void *ctx)
{
    ((bstream *)ctx)->resp_error = true; /* no upgrades over HTTP/2 */
}

static void rc_error(void *ctx, h1_error e)
{
    (void)e;
    ((bstream *)ctx)->resp_error = true;
}

static bool rc_continue(void *ctx)
{
    const bstream *b = ctx;
    return !b->resp_error && !b->end_submitted;
}

static const wp_codec_client_callbacks resp_cbs = {
    rc_consumed, rc_headers, rc_data, rc_trailers, rc_complete, rc_upgraded, rc_error, rc_continue,
};

static int bst_write(wp_tsock *t, uv_buf_t *bufs, unsigned n)
{
    bstream *b = (bstream *)t;
    if (!b->c || b->c->closed || !b->h2_open)
        return -1;
    unsigned i = 0;
    /* parsed where the child wrote them while nothing waits; what the parser leaves (a part
     * of a head or of a chunk line) and what follows goes through rin */
    for (; i < n && b->rin.len == 0 && !b->resp_error && !b->end_submitted; i++) {
        b->roff = 0;
        wp_h1_client_dispatch(&b->rp, bufs[i].base, bufs[i].len, &resp_cbs, b);
        if (b->roff < bufs[i].len)
            wf_strbuf_append(&b->rin, bufs[i].base + b->roff, bufs[i].len - b->roff);
        b->roff = 0;
    }
    for (; i < n; i++)
        wf_strbuf_append(&b->rin, bufs[i].base, bufs[i].len);
    if (wf_strbuf_failed(&b->rin))
        return -1;
    if (b->roff < b->rin.len && !b->resp_error && !b->end_submitted)
        wp_h1_client_dispatch(&b->rp, b->rin.data + b->roff, b->rin.len - b->roff, &resp_cbs, b);
    if (b->roff == b->rin.len)
        b->rin.len = b->roff = 0;
    if (b->resp_error) {
        wp_h2_server_reset(b->c->codec, b->id, 2 /* INTERNAL_ERROR */);
        h2c_want_flush(b->c);
        return -1;
    }
    bst_submit(b);
    h2c_want_flush(b->c);
    if (bst_buffered(b) <= WP_H2C_BUFFER || !b->h2_open)
        return 0;
    b->write_pending = true; /* on_written once the client took enough */
    return 1;
}

static int bst_try_write(wp_tsock *t, const uv_buf_t *bufs, unsigned n)
{
    (void)t;
    size_t total = 0; /* "100 Continue": HTTP/2 clients are not told */
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    return (int)total;
}

static int bst_shutdown(wp_tsock *t)
{
    (void)t;
    return 0;
}

static void bst_close(wp_tsock *t)
{
    bstream *b = (bstream *)t;
    b->sock_closed = true;
    b->reading = false;
    if (b->c && !b->c->closed && b->unconsumed) { /* never read: the connection's window */
        wp_h2_server_consume(b->c->codec, b->id, b->unconsumed);
        b->unconsumed = 0;
        h2c_want_flush(b->c);
    }
    if (b->c && !b->c->closed && b->h2_open && !b->end_submitted) {
        /* the child ended before its response did: the client sees the stream reset */
        wp_h2_server_reset(b->c->codec, b->id, 2 /* INTERNAL_ERROR */);
        h2c_want_flush(b->c);
    }
    wp_deferred_delete(&b->w->deferred, &b->pump, bst_pump); /* on_closed from there */
    if (b->c)
        h2c_maybe_finish(b->c);
}

static int bst_connect(wp_tsock *t, uv_connect_t *req, const struct sockaddr *addr)
{
    (void)t;
    (void)req;
    (void)addr;
    return UV_ENOTSUP;
}

static int bst_address(const wp_tsock *t, bool peer, char *out, size_t cap)
{
    const bstream *b = (const bstream *)t;
    if (b->c)
        return wp_tsock_address(b->c->d->sock, peer, out, cap);
    snprintf(out, cap, "-");
    return 0;
}

static const wp_tsock_ssl *bst_ssl(const wp_tsock *t)
{
    const bstream *b = (const bstream *)t;
    return b->c ? wp_tsock_ssl_info(b->c->d->sock) : NULL;
}

static int bst_peer_cert(const wp_tsock *t, wp_peer_fact what, const char *sep, wf_strbuf *out)
{
    const bstream *b = (const bstream *)t;
    return b->c ? wp_tsock_peer_cert(b->c->d->sock, what, sep, out) : -1;
}

static const wp_tsock_ops bst_ops = {
    .read_start = bst_read_start,
    .read_stop = bst_read_stop,
    .write = bst_write,
    .try_write = bst_try_write,
    .shutdown = bst_shutdown,
    .close = bst_close,
    .connect = bst_connect,
    .address = bst_address,
    .ssl = bst_ssl,
    .failure_reason = NULL,
    .peer_cert = bst_peer_cert,
};

static wp_tsock *bst_init(void *arg, const wp_tsock_cbs *cbs, void *owner)
{
    bstream *b = arg;
    b->base.ops = &bst_ops;
    b->base.cbs = cbs;
    b->base.owner = owner;
    return &b->base;
}

/* ---------- the codec's events ---------- */

static void put_field(wf_strbuf *o, const h1_header *h)
{
    wf_strbuf_append(o, h->name.p, h->name.len);
    wf_strbuf_append(o, ": ", 2);
    wf_strbuf_append(o, h->value.p, h->value.len);
    wf_strbuf_append(o, "\r\n", 2);
}

/* The request as the child reads it: "<method> <target> HTTP/1.1", the translated fields,
 * transfer-encoding: chunked for a body of unknown length. */
static void request_text(bstream *b, const h1_message *m)
{
    wf_strbuf *o = &b->in;
    wf_strbuf_append(o, m->method.p, m->method.len);
    wf_strbuf_putc(o, ' ');
    wf_strbuf_append(o, m->target.p, m->target.len);
    wf_strbuf_append(o, " HTTP/1.1\r\n", 11);
    for (size_t i = 0; i < m->nheaders; i++)
        put_field(o, &m->headers[i]);
    b->req_chunked = m->framing == H1_BODY_CHUNKED;
    if (b->req_chunked)
        wf_strbuf_puts(o, "transfer-encoding: chunked\r\n");
    wf_strbuf_append(o, "\r\n", 2);
}

static void *on_request(void *ctx, int32_t id, const h1_message *m, h1_str scheme)
{
    (void)scheme;
    wp_h2c *c = ctx;
    bstream *b = bst_get(c->d->w);
    if (!b)
        return NULL;
    b->w = c->d->w;
    b->c = c;
    b->id = id;
    b->h2_open = true;
    b->framing = -1;
    h1_parser_init(&b->rp, H1_RESPONSE, b->rh, WP_MAX_HEADERS, 1u << 20);
    if (m->method.len == 4 && memcmp(m->method.p, "HEAD", 4) == 0)
        h1_parser_set_answers(&b->rp, H1_ANSWERS_HEAD);
    request_text(b, m);
    if (wf_strbuf_failed(&b->in)) {
        bst_destroy(b);
        return NULL;
    }
    b->next = c->streams;
    if (c->streams)
        c->streams->prev = b;
    c->streams = b;
    b->child = wp_dconn_child(c->d, bst_init, b);
    if (!b->child) { /* the codec refuses the stream; the socket never opened */
        if (b->prev)
            b->prev->next = b->next;
        else
            c->streams = b->next;
        if (b->next)
            b->next->prev = b->prev;
        bst_destroy(b);
        return NULL;
    }
    return b;
}

static void on_data(void *sctx, const char *data, size_t len)
{
    bstream *b = sctx;
    if (b->sock_closed) {
        wp_h2_server_consume(b->c->codec, b->id, len);
        return;
    }
    if (b->req_chunked) {
        char line[WP_H1_CHUNK_LINE_MAX];
        wf_strbuf_append(&b->in, line, wp_h1_chunk_line(line, len));
    }
    wf_strbuf_append(&b->in, data, len);
    if (b->req_chunked)
        wf_strbuf_append(&b->in, "\r\n", 2);
    b->unconsumed += len;
    if (b->reading)
        bst_arm(b);
}

static void on_trailers(void *sctx, const h1_header *t, size_t n)
{
    bstream *b = sctx;
    if (!b->req_chunked || b->sock_closed)
        return; /* a body of known length carries no trailers in HTTP/1.1 */
    wf_strbuf_append(&b->in, "0\r\n", 3);
    for (size_t i = 0; i < n; i++)
        put_field(&b->in, &t[i]);
    wf_strbuf_append(&b->in, "\r\n", 2);
    b->req_chunked = false; /* ended */
    if (b->reading)
        bst_arm(b);
}

static void on_complete(void *sctx)
{
    bstream *b = sctx;
    if (b->req_chunked && !b->sock_closed) {
        wf_strbuf_append(&b->in, WP_H1_LAST_CHUNK, WP_H1_LAST_CHUNK_LEN);
        b->req_chunked = false;
        if (b->reading)
            bst_arm(b);
    }
}

static void on_data_sent(void *sctx)
{
    bstream *b = sctx;
    if (b->framing >= 0) {
        b->body[b->framing].len = 0;
        b->framing = -1;
    }
    bst_submit(b);
    if (b->write_pending && bst_buffered(b) <= WP_H2C_BUFFER) {
        b->write_pending = false;
        b->notify_written = true;
        bst_arm(b);
    }
}

static void on_close(void *sctx, uint32_t code, const char *details)
{
    bstream *b = sctx;
    b->h2_open = false;
    if (b->sock_closed) {
        bst_maybe_free(b);
        return;
    }
    if (b->write_pending) { /* what the child wrote will never go out: it ends anyway */
        b->write_pending = false;
        b->notify_written = true;
    }
    b->pending_close = true; /* the child finishes from the loop (what it still had to read
                              * of the request is not wanted: the response is complete) */
    b->reset_details = code ? details : NULL;
    bst_arm(b);
}

static const wp_h2_server_callbacks codec_cbs = {
    on_request, on_data, on_trailers, on_complete, on_data_sent, on_close,
};

/* ---------- the connection ---------- */

/* The codec's counts since the last sync go to the worker's shard. */
static void h2c_stats_sync(wp_h2c *c)
{
    wp_stats_shard *sh = c->d->w->stats;
#define H2C_SYNC_(n)                                                                               \
    if (c->st.n != c->synced.n)                                                                    \
        wp_stat_add(sh, c->slot_##n, (int64_t)(c->st.n - c->synced.n));
    H2C_COUNTERS(H2C_SYNC_)
#undef H2C_SYNC_
    c->synced = c->st;
    size_t n = c->closed ? 0 : wp_h2_server_streams(c->codec);
    if (n != c->streams_synced)
        wp_stat_add(sh, c->slot_streams_active, (int64_t)n - (int64_t)c->streams_synced);
    c->streams_synced = n;
}

/* The connection closes once the codec is done (GOAWAY, or an error, flushed) and the child
 * connections of the streams that ended closed (from the loop: a child finishes its request
 * first); the ones of streams an error left open close with it (DC). */
static void h2c_maybe_finish(wp_h2c *c)
{
    if (c->closed || c->d->closing || c->d->writing || !wp_h2_server_done(c->codec))
        return;
    for (const bstream *b = c->streams; b; b = b->next)
        if (!b->sock_closed && !b->h2_open) /* its stream ended: the child finishes it */
            return;
    wp_dconn_close(c->d);
}

/* Frames out while no write is pending (a pending one holds them in the codec: the
 * back-pressure of a slow client); closes d once the codec is done. */
static void h2c_flush(wp_h2c *c)
{
    wp_dconn *d = c->d;
    if (c->flushing || c->closed || d->closing || d->writing)
        return;
    c->flushing = true;
    c->out.len = 0;
    long n = wp_h2_server_flush(c->codec, &c->out);
    c->flushing = false;
    if (n < 0) {
        wp_dconn_close(d);
        return;
    }
    if (n > 0) {
        uv_buf_t buf = uv_buf_init(c->out.data, (unsigned)c->out.len);
        if (wp_dconn_write(d, &buf, 1) < 0)
            return;
        if (d->writing)
            return;
    }
    h2c_stats_sync(c);
    h2c_maybe_finish(c);
}

static void h2c_deferred_flush(wp_deferred_item *it)
{
    wp_h2c *c = (wp_h2c *)(void *)((char *)it - offsetof(wp_h2c, flush_item));
    if (c->free_on_flush) {
        wp_h2c_free(c);
        return;
    }
    h2c_flush(c);
}

/* The frames of every stream go out together, once per loop iteration (nghttp2's
 * session_send once per turn, as Envoy's dispatcher does): the flush runs from the worker's
 * deferred list (net/deferred.h), after the iteration's timer and I/O callbacks, so the
 * responses that the upstream reads of one poll phase produced share one write. */
static void h2c_want_flush(wp_h2c *c)
{
    if (!c->closed)
        wp_deferred_delete(&c->d->w->deferred, &c->flush_item, h2c_deferred_flush);
}

static const wp_dconn_mux_ops h2c_ops;

/* The http2.* slots: looked up by name on the worker's first HTTP/2 connection of a
 * generation, cached in it (wg->h2c_slots, in H2C_COUNTERS order then streams_active). */
#define H2C_ONE_(n) +1
_Static_assert(0 H2C_COUNTERS(H2C_ONE_) + 1 <= sizeof(((wp_wgen *)0)->h2c_slots) / sizeof(uint32_t),
               "wp_wgen.h2c_slots holds the http2.* counters and streams_active");
#undef H2C_ONE_

static void h2c_slots(wp_h2c *c, wp_wgen *wg)
{
    uint32_t *sl = wg->h2c_slots;
    if (!wg->h2c_slots_set) {
        wp_stats *store = c->d->w->stats->store;
        size_t i = 0;
#define H2C_REG_(n) sl[i++] = wp_stats_counter(store, "http2." #n);
        H2C_COUNTERS(H2C_REG_)
#undef H2C_REG_
        sl[i] = wp_stats_gauge(store, "http2.streams_active");
        wg->h2c_slots_set = true;
    }
    size_t i = 0;
#define H2C_SET_(n) c->slot_##n = sl[i++];
    H2C_COUNTERS(H2C_SET_)
#undef H2C_SET_
    c->slot_streams_active = sl[i];
}

int wp_h2c_start(wp_dconn *d)
{
    wp_h2c *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->d = d;
    h2c_slots(c, d->wg);
    wp_h2_limits lim = {d->hcm->max_request_headers_kb, d->hcm->max_headers_count};
    c->codec = wp_h2_server_new(&d->hcm->h2, &lim, &codec_cbs, c, &c->st);
    if (!c->codec) {
        free(c);
        return -1;
    }
    wp_dconn_set_mux(d, &h2c_ops, c);
    return 0;
}

void wp_h2c_on_data(wp_dconn *d)
{
    wp_h2c *c = d->h2;
    if (!d->rbuf || c->closed)
        return;
    const char *details = NULL;
    int rc = wp_h2_server_recv(c->codec, d->rbuf->data + d->rstart, d->rlen - d->rstart, &details);
    if (!d->closing) {
        wp_buf_put(d->w, d->rbuf); /* the streams copied what they need */
        d->rbuf = NULL;
        d->rlen = d->rstart = 0;
    }
    if (rc != 0) {
        wp_hcm_stat(d, WP_S_downstream_cx_protocol_error, 1);
        WF_CONN_LOG(WF_LC_http2, WF_LOG_DEBUG, d->id, "protocol error: %s", details);
    }
    h2c_want_flush(c);
}

void wp_h2c_on_written(wp_dconn *d)
{
    h2c_want_flush(d->h2);
}

void wp_h2c_close(wp_dconn *d)
{
    wp_h2c *c = d->h2;
    if (c->closed)
        return;
    c->closed = true;
    for (bstream *b = c->streams, *next; b; b = next) {
        next = b->next;
        b->h2_open = false;
        if (!b->sock_closed) {
            b->child->peer_closed = true;
            wp_dconn_close(b->child); /* DC for an unfinished request */
        }
        b->c = NULL;
        b->prev = b->next = NULL;
        bst_maybe_free(b);
    }
    c->streams = NULL;
    h2c_stats_sync(c); /* closed: its streams leave streams_active */
    wp_h2_server_free(c->codec);
    c->codec = NULL;
}

void wp_h2c_free(wp_h2c *c)
{
    if (c->flush_item.destroy) { /* queued: the deferred list still points at it */
        c->free_on_flush = true;
        return;
    }
    wf_strbuf_free(&c->out);
    free(c);
}

void wp_h2c_drain(wp_dconn *d)
{
    wp_h2c *c = d->h2;
    if (c->closed || c->draining)
        return;
    c->draining = true;
    wp_h2_server_goaway(c->codec, true);
    wp_h2_server_goaway(c->codec, false);
    h2c_want_flush(c);
}

size_t wp_h2c_streams(const wp_dconn *d)
{
    const wp_h2c *c = d->h2;
    return c->closed ? 0 : wp_h2_server_streams(c->codec);
}

static const wp_dconn_mux_ops h2c_ops = {
    wp_h2c_on_data, wp_h2c_on_written, wp_h2c_close, wp_h2c_free, wp_h2c_drain, wp_h2c_streams,
};
