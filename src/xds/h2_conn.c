/*
 * h2_conn.c - the connection core of h2_stream (see h2_internal.h): the enter()/leave()
 * re-entrancy brackets and deferred work, option defaults, nghttp2 output pumped into libuv
 * writes, reads into nghttp2, keepalive PINGs, connection setup and teardown, and the peer's
 * address.
 */
#include "xds/h2_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

void wf_h2_enter(wf_h2_conn *c)
{
    c->depth++;
}

void wf_h2_fail(wf_h2_conn *c, wf_h2_end_reason r)
{
    if (!c->closing && c->pending_close == NO_CLOSE)
        c->pending_close = (int)r;
}

static void on_flush(uv_idle_t *h)
{
    wf_h2_conn *c = h->data;
    (void)uv_idle_stop(h); /* cannot fail */
    wf_h2_enter(c);
    wf_h2_leave(c);
}

/* Schedules output and pending closes for the next loop iteration, so public functions
 * never call handlers before they return. Inside an entry point the outer leave() does it. */
void wf_h2_kick(wf_h2_conn *c)
{
    if (c->depth > 0 || c->closing || uv_is_active((uv_handle_t *)&c->flush))
        return;
    if (uv_idle_start(&c->flush, on_flush) != 0) {
        wf_h2_enter(c);
        wf_h2_leave(c);
    }
}

void wf_h2_check_rv(wf_h2_conn *c, int rv)
{
    if (rv < 0)
        wf_h2_fail(c, WF_H2_END_PROTOCOL);
}

/* ---- options ------------------------------------------------------------------------- */

void wf_h2_opts_fill(wf_h2_opts *dst, const wf_h2_opts *src)
{
    if (src)
        *dst = *src;
    else
        memset(dst, 0, sizeof *dst);
    if (dst->max_msg == 0)
        dst->max_msg = WF_GRPC_DEFAULT_MAX_MSG;
    if (dst->max_send_queue == 0)
        dst->max_send_queue = 2 * dst->max_msg + WF_GRPC_HDR_LEN;
    if (dst->max_streams == 0)
        dst->max_streams = 100;
    if (dst->ping_timeout_ms == 0)
        dst->ping_timeout_ms = 20000;
    if (dst->path == NULL)
        dst->path = WF_XDS_ADS_PATH;
}

/* ---- libuv I/O ----------------------------------------------------------------------- */

static void on_write(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    wf_h2_conn *c = w->c;
    c->write_inflight -= w->len;
    wf_h2_wreq_free(w);
    if (c->closing)
        return;
    wf_h2_enter(c);
    if (status < 0)
        wf_h2_fail(c, WF_H2_END_CONN_LOST);
    wf_h2_leave(c);
}

/* Collects about WRITE_HIGH bytes of nghttp2 output into a new write. Returns it (NULL when
 * nothing is pending, or after fail()). */
static wreq *collect(wf_h2_conn *c)
{
    wreq *w = calloc(1, sizeof *w);
    if (w == NULL) {
        wf_h2_fail(c, WF_H2_END_PROTOCOL);
        return NULL;
    }
    w->c = c;
    c->batch = w;
    while (w->len < WRITE_HIGH && c->pending_close == NO_CLOSE) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(c->session, &p);
        if (n <= 0) {
            wf_h2_check_rv(c, (int)n);
            break;
        }
        if (wf_h2_batch_copy(w, p, (size_t)n) != 0) {
            wf_h2_fail(c, WF_H2_END_PROTOCOL);
            break;
        }
    }
    c->batch = NULL;
    if (w->len == 0 || c->pending_close != NO_CLOSE) {
        wf_h2_wreq_free(w);
        return NULL;
    }
    return w;
}

static int submit(wf_h2_conn *c, wreq *w);

static void pump(wf_h2_conn *c)
{
    if (c->tls) { /* handshake messages first; application data once it is done */
        if (c->connected && wf_h2_tls_step(c) != 0) {
            wf_h2_fail(c, WF_H2_END_CONN_LOST);
            return;
        }
        wreq *hs = c->connected ? wf_h2_tls_pending(c) : NULL;
        if (hs && submit(c, hs) != 0)
            return;
        if (!wf_h2_tls_ready(c))
            return;
    }
    while (c->connected && c->write_inflight < WRITE_HIGH && c->pending_close == NO_CLOSE) {
        wreq *w = collect(c);
        if (w == NULL)
            return;
        if (c->tls && (w = wf_h2_tls_encrypt(c, w)) == NULL) {
            wf_h2_fail(c, WF_H2_END_PROTOCOL);
            return;
        }
        if (submit(c, w) != 0)
            return;
    }
}

/* Hands write w to libuv. 0, or -1 after failing the connection (w freed). */
static int submit(wf_h2_conn *c, wreq *w)
{
    uv_buf_t small[16] = {{0}};
    uv_buf_t *bufs = w->n <= 16 ? small : malloc(w->n * sizeof *bufs);
    if (bufs == NULL) {
        wf_h2_wreq_free(w);
        wf_h2_fail(c, WF_H2_END_PROTOCOL);
        return -1;
    }
    for (size_t i = 0; i < w->n; i++) {
        const wpart *pt = &w->parts[i];
        const uint8_t *base = pt->buf ? pt->buf->data : w->scratch;
        bufs[i] = uv_buf_init((char *)(base + pt->off), (unsigned)pt->len);
    }
    /* libuv copies the uv_buf_t array; the bytes stay referenced until on_write */
    int rv = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, (unsigned)w->n, on_write);
    if (bufs != small)
        free(bufs);
    if (rv != 0) {
        wf_h2_wreq_free(w);
        wf_h2_fail(c, WF_H2_END_CONN_LOST);
        return -1;
    }
    c->write_inflight += w->len;
    return 0;
}

static void on_handle_closed(uv_handle_t *h);

static void teardown(wf_h2_conn *c, wf_h2_end_reason r)
{
    c->closing = true;
    while (c->calls) {
        wf_h2_call *call = c->calls;
        if (call->stream_id > 0)
            (void)nghttp2_session_set_stream_user_data(c->session, call->stream_id, NULL);
        wf_h2_call_end(call, r, -1, 0);
    }
    if (c->h.on_conn_closed)
        c->h.on_conn_closed(c, r, c->h.ud);
    wf_h2_server *s = c->server;
    for (size_t i = 0; s && i < s->nconns; i++) {
        if (s->conns[i] == c) {
            s->conns[i] = s->conns[--s->nconns];
            break;
        }
    }
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->ping_timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->ping_deadline, on_handle_closed);
    uv_close((uv_handle_t *)&c->flush, on_handle_closed);
}

static bool session_done(wf_h2_conn *c)
{
    return c->connected && c->write_inflight == 0 && !nghttp2_session_want_read(c->session) &&
           !nghttp2_session_want_write(c->session);
}

void wf_h2_leave(wf_h2_conn *c)
{
    if (c->depth > 1 || c->closing) {
        c->depth--;
        return;
    }
    if (c->pending_close == NO_CLOSE)
        pump(c);
    c->depth = 0;
    if (c->pending_close != NO_CLOSE)
        teardown(c, (wf_h2_end_reason)c->pending_close);
    else if (session_done(c))
        teardown(c, WF_H2_END_CONN_LOST);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    wf_h2_conn *c = h->data;
    if (c->server) {
        *buf = uv_buf_init((char *)c->server->rbuf, (unsigned)sizeof c->server->rbuf);
        return;
    }
    if (!c->own_rbuf)
        c->own_rbuf = malloc(READ_BUF);
    /* out of memory: a zero-length buffer makes libuv report UV_ENOBUFS to on_read */
    *buf = uv_buf_init((char *)c->own_rbuf, c->own_rbuf ? (unsigned)READ_BUF : 0);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    wf_h2_conn *c = st->data;
    if (nread == 0 || c->closing)
        return;
    wf_h2_enter(c);
    if (nread < 0) {
        wf_h2_fail(c, WF_H2_END_CONN_LOST);
    } else {
        ssize_t rv = c->tls ? wf_h2_tls_on_read(c, (const uint8_t *)buf->base, (size_t)nread)
                            : nghttp2_session_mem_recv(c->session, (const uint8_t *)buf->base,
                                                       (size_t)nread);
        if (rv < 0)
            wf_h2_fail(c, WF_H2_END_PROTOCOL);
    }
    wf_h2_leave(c);
}

/* ---- keepalive ----------------------------------------------------------------------- */

static void on_ping_deadline(uv_timer_t *t)
{
    wf_h2_conn *c = t->data;
    wf_h2_enter(c);
    wf_h2_fail(c, WF_H2_END_KEEPALIVE);
    wf_h2_leave(c);
}

static void on_ping_timer(uv_timer_t *t)
{
    wf_h2_conn *c = t->data;
    if (c->ping_outstanding)
        return;
    wf_h2_enter(c);
    wf_h2_check_rv(c, nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL));
    c->ping_outstanding = true;
    if (uv_timer_start(&c->ping_deadline, on_ping_deadline, c->opts.ping_timeout_ms, 0) != 0)
        wf_h2_fail(c, WF_H2_END_PROTOCOL);
    wf_h2_leave(c);
}

int wf_h2_start_io(wf_h2_conn *c)
{
    c->connected = true;
    int rv = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    uint64_t iv = c->opts.ping_interval_ms;
    if (rv == 0 && iv > 0)
        rv = uv_timer_start(&c->ping_timer, on_ping_timer, iv, iv);
    return rv;
}

/* ---- connections --------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    wf_h2_conn *c = h->data;
    if (--c->open_handles > 0)
        return;
    wf_h2_server *s = c->server;
    nghttp2_session_del(c->session);
    wf_tls_conn_free(c->tls);
    free(c->own_rbuf);
    free(c);
    if (s) {
        s->live--;
        wf_h2_server_maybe_free(s);
    }
}

wf_h2_conn *wf_h2_conn_new(uv_loop_t *loop, const wf_h2_opts *o, const wf_h2_handlers *h, bool pipe)
{
    wf_h2_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->loop = loop;
    c->opts = *o;
    c->h = *h;
    c->pending_close = NO_CLOSE;
    c->is_pipe = pipe;
    if ((pipe ? uv_pipe_init(loop, &c->pipe, 0) : uv_tcp_init(loop, &c->tcp)) != 0) {
        free(c);
        return NULL;
    }
    /* uv_timer_init and uv_idle_init cannot fail (it only initialises the struct). */
    (void)uv_timer_init(loop, &c->ping_timer);
    (void)uv_timer_init(loop, &c->ping_deadline);
    (void)uv_idle_init(loop, &c->flush);
    c->tcp.data = c->ping_timer.data = c->ping_deadline.data = c->flush.data = c;
    c->open_handles = 4;
    return c;
}

/* Frees a connection the user never saw (setup failure): no callbacks. */
void wf_h2_conn_discard(wf_h2_conn *c)
{
    c->h = (wf_h2_handlers){0};
    c->depth = 0;
    c->pending_close = NO_CLOSE;
    teardown(c, WF_H2_END_LOCAL_CLOSE);
}

void wf_h2_conn_close(wf_h2_conn *c)
{
    if (c->closing)
        return;
    wf_h2_fail(c, WF_H2_END_LOCAL_CLOSE);
    wf_h2_kick(c);
}

void wf_h2_conn_pause_reads(wf_h2_conn *c, bool pause)
{
    if (c->closing || !c->connected)
        return;
    int rv = pause ? uv_read_stop((uv_stream_t *)&c->tcp)
                   : uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rv != 0) {
        wf_h2_fail(c, WF_H2_END_CONN_LOST);
        wf_h2_kick(c);
    }
}

/* ---- peer address -------------------------------------------------------------------- */

static void pipe_peer(wf_h2_conn *c)
{
    char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
    size_t len = sizeof path;
    /* The server end knows the path it listens on; the client end knows its peer's. */
    int rv = c->server ? uv_pipe_getsockname(&c->pipe, path, &len)
                       : uv_pipe_getpeername(&c->pipe, path, &len);
    if (rv != 0 || len >= sizeof path)
        return;
    path[len] = '\0';
    snprintf(c->peer, sizeof c->peer, "unix:%s", path);
    c->has_peer = true;
}

/* Records the peer's address text (wf_h2_conn_peer); leaves has_peer false on failure. */
void wf_h2_read_peer(wf_h2_conn *c)
{
    struct sockaddr_storage ss;
    int len = (int)sizeof ss;
    char ip[INET6_ADDRSTRLEN];
    if (c->is_pipe) {
        pipe_peer(c);
        return;
    }
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    bool v6 = ss.ss_family == AF_INET6;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
    int rv = v6 ? uv_ip6_name(s6, ip, sizeof ip) : uv_ip4_name(s4, ip, sizeof ip);
    if (rv != 0)
        return;
    snprintf(c->peer, sizeof c->peer, v6 ? "[%s]:%d" : "%s:%d", ip,
             ntohs(v6 ? s6->sin6_port : s4->sin_port));
    c->has_peer = true;
}

int wf_h2_conn_peer(const wf_h2_conn *conn, char *out, size_t cap)
{
    if (cap == 0)
        return WF_H2_E_INVAL;
    out[0] = '\0';
    if (!conn->has_peer)
        return WF_H2_E_IO;
    int n = snprintf(out, cap, "%s", conn->peer);
    return n >= 0 && (size_t)n < cap ? 0 : WF_H2_E_INVAL;
}

int wf_h2_parse_addr(const char *ip, int port, struct sockaddr_storage *ss)
{
    if (strchr(ip, ':'))
        return uv_ip6_addr(ip, port, (struct sockaddr_in6 *)ss);
    return uv_ip4_addr(ip, port, (struct sockaddr_in *)ss);
}
