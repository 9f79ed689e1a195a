/*
 * h1_server.c - the shared HTTP/1.x server (h1_server.h): accept, per-connection buffers and
 * the request cycle, answer framing and writes, timers, limits, shutdown.
 *
 * The request cycle of a connection is one loop, pump(): flush what is queued; once the answer
 * of the request in progress ended and is written, run its after-answer callback and go on
 * (close, or parse the next pipelined request); otherwise parse one more event. Callbacks into
 * the handler run with c->in_cb raised, so the answer functions called from them only queue
 * bytes and pump() carries on when the callback returned; called from elsewhere (a timer, a
 * fetch), they run pump() themselves. Handles are freed only from libuv close callbacks.
 */
#include "http/h1_server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls/tls.h"

#define H1S_FREE_MAX 64u           /* blocks kept on a server's free list */
#define H1S_OUT_KEEP (256u * 1024) /* larger output buffers are freed on release */
#define H1S_TLS_READ (16u * 1024)  /* TLS: ciphertext read per libuv read (one record) */

enum { T_NONE, T_IDLE, T_DEFER, T_LINGER };

typedef struct blk {
    struct blk *next;
    wf_strbuf out[2]; /* out[c->cur] is filled; the other may be in flight */
    wf_strbuf body;   /* BUFFER: the request body */
    char lines[H1S_MAX_PIECES][20];
    h1_header *hdrs; /* opts.max_headers, after the struct */
    char *rbuf;      /* opts.max_head bytes, after the headers */
} blk;

struct h1s_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    h1s_opts o;
    h1s_callbacks cb;
    h1s_conn *conns; /* open connections, newest first */
    size_t nconns;   /* in the list */
    size_t live;     /* allocated and not yet freed (closing and refused included) */
    blk *free_blocks;
    size_t nfree;
    bool closing, listener_open;
    wf_tls_ctx *tls; /* HTTPS: the context new connections use (a reference), NULL = plain */
    int port;
    char bound[80];
};

struct h1s_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    h1s_server *s;
    h1s_conn *prev, *next;
    blk *b;
    size_t roff, rlen, keep; /* unconsumed bytes rbuf[roff..rlen); rbuf[0..keep) stays */
    h1_parser parser;
    h1s_request req;
    uint64_t idle_since;
    int timer_mode, handles, cur, in_cb;
    void (*defer_fn)(h1s_conn *c, void *arg);
    void *defer_arg;
    void (*sent_fn)(h1s_conn *c, void *arg);
    void *sent_arg;
    void (*after_fn)(void *arg);
    void *after_arg;
    bool in_req;     /* a request was handed over and its answer has not ended */
    bool dispatched; /* SKIP: on_request ran at the head; its DONE is still to come */
    bool complete;   /* the request was read whole */
    bool started, ended, chunked, head_only;
    bool close_after, writing, reading, closing, lingering, raw, listed;
    bool reset_after;   /* h1s_conn_reset: a TCP RST once the queued output is written */
    wf_tls_conn *tls;   /* HTTPS: the connection's TLS session, else NULL */
    char *cbuf;         /* HTTPS: ciphertext read (H1S_TLS_READ bytes) */
    wf_strbuf tout;     /* HTTPS: ciphertext made and not yet queued for writing */
    max_align_t data[]; /* opts.conn_data bytes */
};

static void pump(h1s_conn *c);
static void close_now(h1s_conn *c);

/* ---------- addresses ---------- */

int h1s_parse_address(const char *s, struct sockaddr_storage *out)
{
    char host[64];
    if (!s)
        return -1;
    const char *colon = strrchr(s, ':');
    bool v6 = s[0] == '[';
    if (!colon || !colon[1] || strlen(colon + 1) > 5)
        return -1;
    long port = 0;
    for (const char *p = colon + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        port = port * 10 + (*p - '0');
    }
    const char *h = s + v6;
    size_t hl = (size_t)(colon - h);
    if (port > 65535 || (v6 && (hl < 2 || h[hl - 1] != ']')))
        return -1;
    hl -= v6;
    if (hl == 0 || hl >= sizeof host)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    memset(out, 0, sizeof *out);
    if (v6)
        return uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)out) ? -1 : 0;
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)out) ? -1 : 0;
}

int h1s_format_address(const struct sockaddr *sa, char *buf, size_t cap)
{
    char ip[64];
    int r = uv_ip_name(sa, ip, sizeof ip);
    if (r)
        return r;
    if (sa->sa_family == AF_INET6)
        snprintf(buf, cap, "[%s]:%d", ip, ntohs(((const struct sockaddr_in6 *)sa)->sin6_port));
    else
        snprintf(buf, cap, "%s:%d", ip, ntohs(((const struct sockaddr_in *)sa)->sin_port));
    return 0;
}

/* ---------- blocks ---------- */

static blk *block_get(h1s_server *s)
{
    blk *b = s->free_blocks;
    if (b) {
        s->free_blocks = b->next;
        s->nfree--;
        return b;
    }
    size_t hdr = s->o.max_headers * sizeof(h1_header);
    b = calloc(1, sizeof *b + hdr + s->o.max_head);
    if (!b)
        return NULL;
    b->hdrs = (h1_header *)(b + 1);
    b->rbuf = (char *)b->hdrs + hdr;
    return b;
}

static void block_free(blk *b)
{
    wf_strbuf_free(&b->out[0]);
    wf_strbuf_free(&b->out[1]);
    wf_strbuf_free(&b->body);
    free(b);
}

static void recycle(wf_strbuf *sb)
{
    if (sb->failed || sb->cap > H1S_OUT_KEEP)
        wf_strbuf_free(sb);
    wf_strbuf_reset(sb);
}

static void block_put(h1s_server *s, blk *b)
{
    if (s->nfree >= H1S_FREE_MAX || s->closing) {
        block_free(b);
        return;
    }
    recycle(&b->out[0]);
    recycle(&b->out[1]);
    recycle(&b->body);
    b->next = s->free_blocks;
    s->free_blocks = b;
    s->nfree++;
}

/* ---------- server lifetime ---------- */

static void maybe_free_server(h1s_server *s)
{
    if (!s->closing || s->listener_open || s->live)
        return;
    while (s->free_blocks) {
        blk *b = s->free_blocks;
        s->free_blocks = b->next;
        block_free(b);
    }
    void (*fn)(void *) = s->o.on_closed;
    void *arg = s->o.closed_arg;
    wf_tls_ctx_free(s->tls);
    free(s);
    if (fn)
        fn(arg);
}

static void conn_handle_closed(uv_handle_t *h)
{
    h1s_conn *c = h->data;
    if (--c->handles > 0)
        return;
    h1s_server *s = c->s;
    if (c->b)
        block_put(s, c->b);
    wf_tls_conn_free(c->tls);
    free(c->cbuf);
    wf_strbuf_free(&c->tout);
    free(c);
    s->live--;
    maybe_free_server(s);
}

static void unlink_conn(h1s_conn *c)
{
    h1s_server *s = c->s;
    if (!c->listed)
        return;
    c->listed = false;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
}

/* Closes both handles; the handler hears of an answer it still owed (on_abort). */
static void close_now(h1s_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    unlink_conn(c);
    bool owed = (c->in_req && !c->ended) || c->raw;
    if (owed && c->s->cb.on_abort) {
        c->in_cb++;
        c->s->cb.on_abort(c->s->cb.ud, c);
        c->in_cb--;
    }
    if (!c->reset_after || uv_tcp_close_reset(&c->tcp, conn_handle_closed) != 0)
        uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

/* ---------- writing ---------- */

static void on_write(uv_write_t *req, int status);

/* HTTPS: OpenSSL's records go to c->tout as they are made. */
static int tls_sink(void *arg, const void *data, size_t len)
{
    h1s_conn *c = arg;
    wf_strbuf_append(&c->tout, data, len);
    return wf_strbuf_failed(&c->tout) ? -1 : 0;
}

/* HTTPS: encrypts the plaintext of o and extra (once the handshake is done; before, it waits
 * in o) and leaves in o the ciphertext to write (handshake records first). Returns 0, or -1
 * when the engine failed or memory ran out. */
static int tls_seal(h1s_conn *c, wf_strbuf *o, const uv_buf_t *extra, unsigned ne)
{
    if (!wf_tls_conn_handshake_done(c->tls)) {
        for (unsigned i = 0; i < ne; i++)
            wf_strbuf_append(o, extra[i].base, extra[i].len);
        if (!c->tout.len)
            return 0;
        if (o->len) /* plaintext before the handshake ended: nothing writes it yet */
            return -1;
    } else {
        if (o->len && wf_tls_conn_write(c->tls, o->data, o->len) != WF_TLS_OK)
            return -1;
        for (unsigned i = 0; i < ne; i++)
            if (extra[i].len && wf_tls_conn_write(c->tls, extra[i].base, extra[i].len) != WF_TLS_OK)
                return -1;
    }
    wf_strbuf_reset(o);
    wf_strbuf t = *o; /* the buffers swap: o takes the ciphertext, tout o's memory */
    *o = c->tout;
    c->tout = t;
    return wf_strbuf_failed(o) ? -1 : 0;
}

/* Writes out[cur] then extra; while a write is in flight extra is copied behind it. Returns
 * 0 when everything went out at once, 1 when a write is pending, -1 when the connection was
 * closed. */
static int write_out(h1s_conn *c, const uv_buf_t *extra, unsigned ne)
{
    if (c->closing)
        return -1;
    if (!c->b)
        return ne ? -1 : 0;
    wf_strbuf *o = &c->b->out[c->cur];
    if (c->writing) {
        for (unsigned i = 0; i < ne; i++)
            wf_strbuf_append(o, extra[i].base, extra[i].len);
        return 1;
    }
    if (c->tls) {
        if (tls_seal(c, o, extra, ne) != 0) {
            close_now(c);
            return -1;
        }
        ne = 0; /* o holds the ciphertext of everything now */
    }
    if (wf_strbuf_failed(o)) {
        close_now(c);
        return -1;
    }
    uv_buf_t v[1 + 3 * H1S_MAX_PIECES];
    unsigned n = 0, i = 0;
    if (o->len)
        v[n++] = uv_buf_init(o->data, (unsigned)o->len);
    for (unsigned k = 0; k < ne && n < sizeof v / sizeof v[0]; k++)
        if (extra[k].len)
            v[n++] = extra[k];
    if (!n)
        return 0;
    int r = uv_try_write((uv_stream_t *)&c->tcp, v, n);
    if (r == UV_EAGAIN || r == UV_ENOSYS)
        r = 0;
    if (r < 0) {
        close_now(c);
        return -1;
    }
    size_t w = (size_t)r;
    while (i < n && w >= v[i].len)
        w -= v[i++].len;
    if (i == n) {
        wf_strbuf_reset(o);
        return 0;
    }
    v[i].base += w;
    v[i].len -= w;
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, v + i, n - i, on_write) < 0) {
        close_now(c);
        return -1;
    }
    c->writing = true;
    c->cur ^= 1; /* out[cur] stays untouched until on_write */
    return 1;
}

static void on_write(uv_write_t *req, int status)
{
    h1s_conn *c = req->data;
    if (c->closing)
        return;
    c->writing = false;
    wf_strbuf_reset(&c->b->out[c->cur ^ 1]);
    if (status < 0) {
        close_now(c);
        return;
    }
    if ((c->b->out[c->cur].len || c->tout.len) && write_out(c, NULL, 0) != 0)
        return; /* more queued meanwhile: sent_fn waits for it */
    if (c->sent_fn) {
        void (*fn)(h1s_conn *, void *) = c->sent_fn;
        c->sent_fn = NULL;
        c->in_cb++;
        fn(c, c->sent_arg);
        c->in_cb--;
    }
    pump(c);
}

/* The answer functions' tail: from a handler callback pump() follows; else run it now. */
static int kick(h1s_conn *c)
{
    if (c->closing)
        return -1;
    if (!c->in_cb)
        pump(c);
    return 0;
}

/* ---------- timers ---------- */

static void on_timer(uv_timer_t *t)
{
    h1s_conn *c = t->data;
    int mode = c->timer_mode;
    c->timer_mode = T_NONE;
    if (c->closing)
        return;
    if (mode == T_LINGER || (mode == T_IDLE && !c->in_req && !c->raw)) {
        close_now(c);
    } else if (mode == T_DEFER && c->defer_fn) {
        void (*fn)(h1s_conn *, void *) = c->defer_fn;
        c->defer_fn = NULL;
        c->in_cb++;
        fn(c, c->defer_arg);
        c->in_cb--;
        pump(c);
    }
}

static void timer_arm(h1s_conn *c, int mode, uint64_t ms)
{
    c->timer_mode = mode;
    if (uv_timer_start(&c->timer, on_timer, ms, 0) < 0)
        close_now(c);
}

static void timer_stop(h1s_conn *c)
{
    c->timer_mode = T_NONE;
    uv_timer_stop(&c->timer);
}

/* ---------- reading ---------- */

static void compact(h1s_conn *c)
{
    if (c->roff <= c->keep)
        return;
    memmove(c->b->rbuf + c->keep, c->b->rbuf + c->roff, c->rlen - c->roff);
    c->rlen -= c->roff - c->keep;
    c->roff = c->keep;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    h1s_conn *c = h->data;
    h1s_server *s = c->s;
    (void)suggested;
    *buf = uv_buf_init(NULL, 0);
    if (!c->b) {
        if (!(c->b = block_get(s)))
            return; /* read_cb gets UV_ENOBUFS */
        c->parser.hdr_array = c->b->hdrs;
        c->roff = c->rlen = c->keep = 0;
    }
    if (c->lingering)
        c->roff = c->rlen = 0;
    if (c->tls) { /* ciphertext first; tls_pull decrypts it into rbuf */
        if (!c->cbuf && !(c->cbuf = malloc(H1S_TLS_READ)))
            return;
        *buf = uv_buf_init(c->cbuf, H1S_TLS_READ);
        return;
    }
    compact(c);
    if (c->rlen < s->o.max_head)
        *buf = uv_buf_init(c->b->rbuf + c->rlen, (unsigned)(s->o.max_head - c->rlen));
}

/* HTTPS: drives the handshake, then decrypts what fits into rbuf. Returns 0, or -1 when the
 * session failed. */
static int tls_pull(h1s_conn *c)
{
    if (!wf_tls_conn_handshake_done(c->tls)) {
        int hs = wf_tls_conn_handshake(c->tls);
        if (hs == WF_TLS_FAIL || hs == WF_TLS_NOMEM)
            return -1;
        if (hs != WF_TLS_OK)
            return 0;
    }
    if (!c->b)
        return 0;
    compact(c);
    size_t cap = c->s->o.max_head;
    while (c->rlen < cap) {
        ssize_t r = wf_tls_conn_read(c->tls, c->b->rbuf + c->rlen, cap - c->rlen);
        if (r > 0)
            c->rlen += (size_t)r;
        else if (r == WF_TLS_WANT || r == WF_TLS_EOF) /* EOF: the TCP close follows */
            return 0;
        else
            return -1;
    }
    return 0;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    h1s_conn *c = st->data;
    (void)buf;
    if (c->closing)
        return;
    if (n < 0) {
        close_now(c); /* EOF, reset, or no buffer */
        return;
    }
    if (c->lingering) {
        c->roff = c->rlen = 0; /* dropped */
        return;
    }
    if (c->tls) {
        if (n > 0 &&
            (wf_tls_conn_feed(c->tls, c->cbuf, (size_t)n) != WF_TLS_OK || tls_pull(c) != 0)) {
            close_now(c);
            return;
        }
        if (n > 0)
            pump(c);
        return;
    }
    c->rlen += (size_t)n;
    if (n > 0)
        pump(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* the linger timer or the peer's EOF closes the connection */
}

/* The last answer is out: shut the write side and drop input for linger_ms, or close. */
static void finish(h1s_conn *c)
{
    uint64_t linger = c->s->o.linger_ms;
    if (!linger) {
        close_now(c);
        return;
    }
    if (c->lingering)
        return;
    c->lingering = true;
    c->roff = c->rlen = c->keep = 0;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        close_now(c);
        return;
    }
    timer_arm(c, T_LINGER, linger);
}

/* ---------- the request cycle ---------- */

static void request_view(h1s_conn *c)
{
    const h1_message *m = &c->parser.msg;
    h1s_request *r = &c->req;
    memset(r, 0, sizeof *r);
    r->msg = m;
    r->method = m->method;
    r->target = m->target;
    r->version_minor = m->version_minor;
    r->head = m->method.len == 4 && memcmp(m->method.p, "HEAD", 4) == 0;
    r->headers = m->headers;
    r->nheaders = m->nheaders;
    r->path = m->target;
    const char *q = m->target.p ? memchr(m->target.p, '?', m->target.len) : NULL;
    if (q) {
        r->path.len = (size_t)(q - m->target.p);
        r->query.p = q + 1;
        r->query.len = m->target.len - r->path.len - 1;
    } else {
        r->query.p = "";
    }
}

static void begin_request(h1s_conn *c)
{
    c->in_req = true;
    c->complete = c->started = c->ended = c->chunked = false;
    c->after_fn = NULL;
    c->sent_fn = NULL;
    if (c->timer_mode == T_IDLE)
        timer_stop(c);
}

/* A request that cannot be served: on_error (or the default text) answers, then close. */
static void fail(h1s_conn *c, int status, const char *details)
{
    h1s_server *s = c->s;
    if (c->in_req && c->started) { /* an answer is under way: only closing is left */
        close_now(c);
        return;
    }
    begin_request(c);
    c->req.head = c->head_only = false;
    c->req.version_minor = 1;
    c->close_after = true;
    if (s->cb.on_error) {
        c->in_cb++;
        s->cb.on_error(s->cb.ud, c, status, details);
        c->in_cb--;
    }
    if (!c->closing && !c->ended) {
        char body[128];
        int n = snprintf(body, sizeof body, "%s\n", details);
        h1s_respond(c, status, NULL, s->o.error_head, body, (size_t)n);
    }
}

static void call_request(h1s_conn *c, void (*fn)(void *, h1s_conn *, const h1s_request *))
{
    c->in_cb++;
    fn(c->s->cb.ud, c, &c->req);
    c->in_cb--;
}

static void on_head(h1s_conn *c)
{
    h1s_server *s = c->s;
    begin_request(c);
    request_view(c);
    c->head_only = c->req.head;
    c->close_after = false;
    c->keep = s->o.body == H1S_BODY_STREAM ? 0 : c->roff; /* the head stays until the answer */
    if (s->o.body == H1S_BODY_SKIP) {
        c->dispatched = true;
        call_request(c, s->cb.on_request);
        return;
    }
    if (s->o.body == H1S_BODY_BUFFER)
        wf_strbuf_reset(&c->b->body);
    else if (s->cb.on_headers)
        call_request(c, s->cb.on_headers);
    if (c->parser.msg.expect_continue && !c->closing && !c->started)
        wf_strbuf_append(&c->b->out[c->cur], "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void on_body(h1s_conn *c)
{
    h1s_server *s = c->s;
    const char *d = c->parser.data;
    size_t n = c->parser.data_len;
    if (s->o.body == H1S_BODY_STREAM) {
        if (s->cb.on_body && !c->ended) {
            c->in_cb++;
            s->cb.on_body(s->cb.ud, c, d, n);
            c->in_cb--;
        }
        return;
    }
    if (c->b->body.len + n > s->o.max_body) {
        fail(c, 413, "request body too large");
        return;
    }
    wf_strbuf_append(&c->b->body, d, n);
}

static void on_done(h1s_conn *c)
{
    h1s_server *s = c->s;
    if (c->dispatched) { /* SKIP: answered at the head already */
        c->dispatched = false;
        return;
    }
    c->complete = true;
    if (c->ended)
        return; /* answered early */
    if (s->o.body == H1S_BODY_BUFFER) {
        c->req.body = c->b->body.data ? c->b->body.data : "";
        c->req.body_len = c->b->body.len;
        if (wf_strbuf_failed(&c->b->body)) {
            fail(c, 500, "out of memory");
            return;
        }
    }
    call_request(c, s->cb.on_request);
}

/* One parser event; false when nothing more can be done until input, a write or the answer. */
static bool parse_step(h1s_conn *c)
{
    h1s_server *s = c->s;
    if (!c->b || c->raw || c->lingering || c->close_after)
        return false;
    if (c->in_req && (c->complete || c->ended || s->o.body == H1S_BODY_SKIP))
        return false; /* waiting for the answer */
    h1_event ev;
    c->roff += h1_parse(&c->parser, c->b->rbuf + c->roff, c->rlen - c->roff, &ev);
    switch (ev) {
    case H1_EV_HEADERS:
        on_head(c);
        return true;
    case H1_EV_BODY:
        on_body(c);
        return true;
    case H1_EV_TRAILERS:
        return true;
    case H1_EV_DONE:
        on_done(c);
        return true;
    case H1_EV_NEED_MORE:
        compact(c);
        if (c->tls && wf_tls_conn_readable(c->tls)) { /* decrypted bytes left in the engine */
            size_t had = c->rlen;
            if (tls_pull(c) != 0) {
                close_now(c);
                return false;
            }
            if (c->rlen > had)
                return true;
        }
        if (c->rlen == s->o.max_head)
            fail(c, 431, "request too large");
        return false;
    case H1_EV_ERROR:
        fail(c, h1_error_status(c->parser.error), h1_error_details(c->parser.error));
        return false;
    case H1_EV_UPGRADED:
    default:
        close_now(c); /* bytes of a tunnel nobody took over */
        return false;
    }
}

/* Raw connections: offers the buffered input to on_raw. */
static bool raw_step(h1s_conn *c)
{
    h1s_server *s = c->s;
    if (!c->b || c->roff == c->rlen || !s->cb.on_raw)
        return false;
    c->in_cb++;
    size_t used = s->cb.on_raw(s->cb.ud, c, c->b->rbuf + c->roff, c->rlen - c->roff);
    c->in_cb--;
    if (used > c->rlen - c->roff)
        used = c->rlen - c->roff;
    c->roff += used;
    return used > 0 || c->writing;
}

/* The answer ended and is written: after-answer callback, then the next request or close. */
static void answer_done(h1s_conn *c)
{
    c->in_req = false;
    c->keep = 0;
    if (c->timer_mode == T_DEFER)
        timer_stop(c);
    c->idle_since = uv_now(c->s->loop);
    if (c->after_fn) {
        void (*fn)(void *) = c->after_fn;
        c->after_fn = NULL;
        c->in_cb++;
        fn(c->after_arg); /* may close the server, and so this connection */
        c->in_cb--;
    }
}

/* Reading on or off, the idle timer, and the block back to the free list when at rest. */
static void settle(h1s_conn *c)
{
    h1s_server *s = c->s;
    if (c->closing)
        return;
    bool waiting = c->in_req && (c->complete || c->ended || s->o.body == H1S_BODY_SKIP);
    if (c->b && !c->in_req && !c->writing && !c->raw && c->roff == c->rlen && c->keep == 0 &&
        c->b->out[0].len == 0 && c->b->out[1].len == 0 &&
        (!c->tls || (!c->tout.len && !wf_tls_conn_readable(c->tls)))) {
        block_put(s, c->b);
        c->b = NULL;
        c->parser.hdr_array = NULL;
        c->roff = c->rlen = 0;
    }
    bool want = c->lingering || (!c->writing && !c->close_after && !waiting);
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
            close_now(c);
            return;
        }
        c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    uint64_t limit = s->o.idle_timeout_ms;
    if (limit && c->timer_mode == T_NONE && !c->in_req && !c->raw && !c->lingering &&
        !c->close_after) {
        uint64_t idle = uv_now(s->loop) - c->idle_since;
        timer_arm(c, T_IDLE, idle < limit ? limit - idle : 1);
    }
}

static void pump(h1s_conn *c)
{
    c->in_cb++; /* the answer functions only queue while the cycle runs */
    while (!c->closing) {
        if (write_out(c, NULL, 0) != 0)
            break; /* a write is pending (on_write comes back here) or closed */
        if (c->in_req && c->ended) {
            answer_done(c);
            continue;
        }
        if (c->lingering)
            break;
        if (!c->in_req && c->close_after) {
            if (c->reset_after)
                close_now(c); /* everything queued is written: the RST */
            else
                finish(c);
            break;
        }
        bool progress = c->raw ? raw_step(c) : parse_step(c);
        if (!progress && (c->closing || !c->b || !c->b->out[c->cur].len))
            break;
    }
    c->in_cb--;
    settle(c);
}

/* ---------- accepting ---------- */

static void refused_closed(uv_handle_t *h)
{
    h1s_server *s = h->data;
    free(h);
    s->live--;
    maybe_free_server(s);
}

/* Over the limit with H1S_LIMIT_REFUSE: accept (or libuv stops polling) and close at once. */
static void refuse(h1s_server *s, uv_stream_t *server)
{
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t || uv_tcp_init(s->loop, t) != 0) {
        free(t);
        return;
    }
    t->data = s;
    s->live++;
    (void)uv_accept(server, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, refused_closed);
}

/* H1S_LIMIT_CLOSE_OLDEST: the oldest connection that has no request in progress goes. */
static void close_oldest(h1s_server *s)
{
    h1s_conn *oldest = NULL;
    for (h1s_conn *c = s->conns; c; c = c->next)
        if (!c->in_req && !c->raw && !c->lingering && !c->close_after)
            oldest = c; /* the list is newest first */
    if (oldest)
        close_now(oldest);
}

static h1s_conn *conn_new(h1s_server *s)
{
    h1s_conn *c = calloc(1, sizeof *c + s->o.conn_data);
    if (!c)
        return NULL;
    if (uv_tcp_init(s->loop, &c->tcp) != 0) {
        free(c);
        return NULL;
    }
    uv_timer_init(s->loop, &c->timer); /* cannot fail */
    c->s = s;
    c->handles = 2;
    c->tcp.data = c->timer.data = c;
    h1_parser_init(&c->parser, H1_REQUEST, NULL, s->o.max_headers, s->o.max_head);
    c->idle_since = uv_now(s->loop);
    s->live++;
    s->nconns++;
    c->listed = true;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    return c;
}

static void on_connection(uv_stream_t *server, int status)
{
    h1s_server *s = server->data;
    if (status < 0 || s->closing)
        return;
    if (s->o.max_connections && s->nconns >= s->o.max_connections) {
        if (s->o.limit == H1S_LIMIT_REFUSE) {
            refuse(s, server);
            return;
        }
        close_oldest(s);
    }
    h1s_conn *c = conn_new(s);
    if (!c) {
        refuse(s, server);
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        close_now(c);
        return;
    }
    if (s->tls) {
        if (!(c->tls = wf_tls_conn_new(s->tls, NULL))) {
            close_now(c);
            return;
        }
        wf_tls_conn_set_sink(c->tls, tls_sink, c);
    }
    uv_tcp_nodelay(&c->tcp, 1);
    settle(c);
}

/* ---------- the server ---------- */

static void listener_closed(uv_handle_t *h)
{
    h1s_server *s = h->data;
    s->listener_open = false;
    maybe_free_server(s);
}

static void apply_defaults(h1s_opts *o)
{
    if (!o->max_body)
        o->max_body = 1024u * 1024u;
    if (!o->max_head)
        o->max_head = H1_DEFAULT_MAX_HEAD_BYTES;
    if (o->max_head < 256)
        o->max_head = 256;
    if (!o->max_headers)
        o->max_headers = 100;
    if (!o->backlog)
        o->backlog = 128;
    if (!o->error_head)
        o->error_head =
            o->lower_case ? "content-type: text/plain\r\n" : "Content-Type: text/plain\r\n";
}

h1s_server *h1s_listen(uv_loop_t *loop, const struct sockaddr *sa, const h1s_opts *opts,
                       const h1s_callbacks *cb, int *uv_err)
{
    h1s_server *s = calloc(1, sizeof *s);
    int r = s ? 0 : UV_ENOMEM;
    if (s && (!cb || !cb->on_request))
        r = UV_EINVAL;
    if (r == 0 && (r = uv_tcp_init(loop, &s->listener)) == 0) {
        s->loop = loop;
        s->o = *opts;
        s->cb = *cb;
        s->tls = wf_tls_ctx_ref(opts->tls);
        apply_defaults(&s->o);
        s->listener.data = s;
        s->listener_open = true;
        r = uv_tcp_bind(&s->listener, sa, 0);
        if (r == 0)
            r = uv_listen((uv_stream_t *)&s->listener, s->o.backlog, on_connection);
        struct sockaddr_storage got;
        int len = sizeof got;
        if (r == 0)
            r = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&got, &len);
        if (r == 0)
            r = h1s_format_address((struct sockaddr *)&got, s->bound, sizeof s->bound);
        if (r == 0) {
            s->port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                      : ((struct sockaddr_in *)&got)->sin_port);
            return s;
        }
        s->closing = true;
        s->o.on_closed = NULL;
        /* listener_closed frees s when the caller's loop next runs: running the loop here
         * would also run the caller's other pending callbacks (a signal) under it */
        uv_close((uv_handle_t *)&s->listener, listener_closed);
        s = NULL;
    }
    free(s);
    if (uv_err)
        *uv_err = r;
    return NULL;
}

int h1s_port(const h1s_server *s)
{
    return s->port;
}

const char *h1s_bound(const h1s_server *s)
{
    return s->bound;
}

void h1s_set_tls(h1s_server *s, wf_tls_ctx *ctx)
{
    if (!s || !ctx)
        return;
    wf_tls_ctx *old = s->tls;
    s->tls = wf_tls_ctx_ref(ctx);
    wf_tls_ctx_free(old);
}

size_t h1s_connections(const h1s_server *s)
{
    return s->nconns;
}

void h1s_close(h1s_server *s)
{
    if (!s || s->closing)
        return;
    s->closing = true;
    while (s->conns)
        close_now(s->conns);
    uv_close((uv_handle_t *)&s->listener, listener_closed);
}

/* ---------- per connection ---------- */

void *h1s_data(h1s_conn *c)
{
    return c->data;
}

int h1s_peer(h1s_conn *c, struct sockaddr_storage *sa)
{
    int len = sizeof *sa;
    return uv_tcp_getpeername(&c->tcp, (struct sockaddr *)sa, &len);
}

void h1s_conn_close(h1s_conn *c)
{
    if (c->closing)
        return;
    c->in_req = false; /* abandoned by the handler itself: no on_abort */
    c->raw = false;
    c->close_after = true;
    kick(c);
}

void h1s_conn_reset(h1s_conn *c)
{
    if (c->closing)
        return;
    c->reset_after = true;
    h1s_conn_close(c);
}

int h1s_defer(h1s_conn *c, uint64_t ms, void (*fn)(h1s_conn *c, void *arg), void *arg)
{
    if (c->closing || !c->in_req)
        return -1;
    c->defer_fn = fn;
    c->defer_arg = arg;
    timer_arm(c, T_DEFER, ms);
    return c->closing ? -1 : 0;
}

void h1s_after_answer(h1s_conn *c, void (*fn)(void *arg), void *arg)
{
    c->after_fn = fn;
    c->after_arg = arg;
}

void h1s_close_after(h1s_conn *c)
{
    c->close_after = true;
}

/* ---------- the answer ---------- */

/* Envoy's names (CodeUtility::toString) of the codes weft answers or relays: the one table for
 * the proxy's HTTP/1 codec and every weft server. */
const char *h1s_reason(int code)
{
    static const struct {
        int code;
        const char *text;
    } tab[] = {
        {100, "Continue"},
        {101, "Switching Protocols"},
        {200, "OK"},
        {201, "Created"},
        {202, "Accepted"},
        {204, "No Content"},
        {206, "Partial Content"},
        {301, "Moved Permanently"},
        {302, "Found"},
        {303, "See Other"},
        {304, "Not Modified"},
        {307, "Temporary Redirect"},
        {308, "Permanent Redirect"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {411, "Length Required"},
        {413, "Payload Too Large"},
        {414, "URI Too Long"},
        {426, "Upgrade Required"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {507, "Insufficient Storage"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].code == code)
            return tab[i].text;
    return "Unknown";
}

static int head_(h1s_conn *c, int status, const char *reason, const char *headers, int64_t framing)
{
    h1s_server *s = c->s;
    if (c->closing || !c->in_req || c->started || !c->b)
        return -1;
    const h1_message *m = &c->parser.msg;
    c->started = true;
    if (status != 101)
        c->close_after = c->close_after || !s->o.keep_alive || !m->keep_alive || m->upgrade ||
                         (s->o.body == H1S_BODY_SKIP && m->framing != H1_BODY_NONE) ||
                         (s->o.body != H1S_BODY_SKIP && !c->complete);
    bool lc = s->o.lower_case;
    int minor = s->o.echo_version ? c->req.version_minor : 1;
    wf_strbuf *o = &c->b->out[c->cur];
    wf_strbuf_printf(o, "HTTP/1.%d %d %s\r\n", minor, status, reason ? reason : h1s_reason(status));
    bool bodiless = status < 200 || status == 204 || status == 304;
    if (framing >= 0 && !bodiless)
        wf_strbuf_printf(o, "%s: %" PRId64 "\r\n", lc ? "content-length" : "Content-Length",
                         framing);
    else if (framing == H1S_CHUNKED && !bodiless)
        wf_strbuf_puts(o, lc ? "transfer-encoding: chunked\r\n" : "Transfer-Encoding: chunked\r\n");
    c->chunked = framing == H1S_CHUNKED && !bodiless && !c->head_only;
    if (headers)
        wf_strbuf_puts(o, headers);
    if (c->close_after)
        wf_strbuf_puts(o, lc ? "connection: close\r\n" : "Connection: close\r\n");
    else if (c->req.version_minor == 0)
        wf_strbuf_puts(o, lc ? "connection: keep-alive\r\n" : "Connection: keep-alive\r\n");
    wf_strbuf_append(o, "\r\n", 2);
    if (bodiless)
        c->head_only = true;
    return 0;
}

static int write_(h1s_conn *c, const char *data, size_t len)
{
    if (c->closing || !c->started || c->ended)
        return -1;
    if (c->head_only || len == 0)
        return 0;
    wf_strbuf *o = &c->b->out[c->cur];
    if (c->chunked)
        wf_strbuf_printf(o, "%zx\r\n", len);
    wf_strbuf_append(o, data, len);
    if (c->chunked)
        wf_strbuf_append(o, "\r\n", 2);
    return 0;
}

static int end_(h1s_conn *c)
{
    if (c->closing || !c->started || c->ended)
        return -1;
    if (c->chunked)
        wf_strbuf_append(&c->b->out[c->cur], "0\r\n\r\n", 5);
    c->ended = true;
    return 0;
}

int h1s_respond(h1s_conn *c, int status, const char *reason, const char *headers, const char *body,
                size_t len)
{
    if (head_(c, status, reason, headers, (int64_t)len) != 0 || write_(c, body, len) != 0 ||
        end_(c) != 0)
        return -1;
    return kick(c);
}

int h1s_resp_head(h1s_conn *c, int status, const char *reason, const char *headers, int64_t framing)
{
    if (head_(c, status, reason, headers, framing) != 0)
        return -1;
    return kick(c);
}

int h1s_resp_write(h1s_conn *c, const char *data, size_t len)
{
    if (write_(c, data, len) != 0)
        return -1;
    return kick(c);
}

int h1s_resp_end(h1s_conn *c)
{
    if (end_(c) != 0)
        return -1;
    return kick(c);
}

int h1s_resp_sendv(h1s_conn *c, const uv_buf_t *pieces, unsigned n,
                   void (*sent)(h1s_conn *c, void *arg), void *arg)
{
    static char crlf[] = "\r\n";
    if (c->closing || !c->started || c->ended || n > H1S_MAX_PIECES)
        return -1;
    if (c->head_only)
        return 0;
    if (c->writing) { /* queued behind the write in flight: copied (lines[] may be in it) */
        for (unsigned i = 0; i < n; i++)
            write_(c, pieces[i].base, pieces[i].len);
        c->sent_fn = sent;
        c->sent_arg = arg;
        return 1;
    }
    uv_buf_t v[3 * H1S_MAX_PIECES];
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!pieces[i].len)
            continue;
        if (c->chunked) {
            int l =
                snprintf(c->b->lines[i], sizeof c->b->lines[i], "%zx\r\n", (size_t)pieces[i].len);
            v[k++] = uv_buf_init(c->b->lines[i], (unsigned)l);
        }
        v[k++] = pieces[i];
        if (c->chunked)
            v[k++] = uv_buf_init(crlf, 2);
    }
    int r = write_out(c, v, k);
    if (r == 1) {
        c->sent_fn = sent;
        c->sent_arg = arg;
    }
    return r;
}

/* ---------- raw connections ---------- */

int h1s_takeover(h1s_conn *c)
{
    if (c->closing)
        return -1;
    c->raw = true;
    c->close_after = false;
    if (c->timer_mode == T_IDLE)
        timer_stop(c);
    return kick(c);
}

int h1s_raw_write(h1s_conn *c, const char *data, size_t len)
{
    if (c->closing || !c->b)
        return -1;
    wf_strbuf_append(&c->b->out[c->cur], data, len);
    return 0;
}

int h1s_raw_send(h1s_conn *c, const char *data, size_t len)
{
    uv_buf_t v = uv_buf_init((char *)data, (unsigned)len);
    return write_out(c, &v, len ? 1 : 0);
}
