/*
 * app_grpc.c - weft-app's gRPC server (see app_grpc.h): h2c listeners and connections on
 * libuv, one nghttp2 server session per connection (the calls are app_grpc_call.c, the
 * messages app_grpc_msg.c).
 *
 * Output: nghttp2 frames are pulled (nghttp2_session_mem_send) into one write buffer of at
 * most 64 KiB at a time, written, and pulled again when that write completed, so a slow
 * reader holds the server to one buffer per connection. The session is pumped after reads,
 * after writes and after the calls' timers, never from its own callbacks. A session that is
 * over (GOAWAY sent and nothing left to read) is followed by a FIN and up to a second of
 * reading and dropping, so the peer gets our last frames rather than a TCP reset.
 */
#include <stdlib.h>
#include <string.h>

#include "app/app_grpc_internal.h"
#include "http/h1_server.h"

#define GRPC_WRITE_MAX (64u * 1024u) /* bytes pulled from nghttp2 per write */
#define GRPC_LINGER_MS 1000u         /* reading after the end, before the close */

static void conn_close(struct gconn *c);

/* ---- connections ---------------------------------------------------------------------- */

static void conn_handle_closed(uv_handle_t *h)
{
    struct gconn *c = h->data;
    if (--c->handles > 0)
        return;
    wf_strbuf_free(&c->wbuf);
    free(c);
}

static void conn_close(struct gconn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    struct app_grpc *g = c->g;
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    while (c->calls)
        app_grpc_call_release(c->calls);
    if (c->session)
        nghttp2_session_del(c->session); /* no callbacks: the calls are gone already */
    c->session = NULL;
    uv_close((uv_handle_t *)&c->linger, conn_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

static void on_linger_end(uv_timer_t *t)
{
    conn_close(t->data);
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
    struct gconn *c = r->data;
    if (status < 0 && !c->closing)
        conn_close(c);
}

/* The session is over: the peer gets a FIN, and what it still sends is read and dropped for
 * a while, so that our last frames (a GOAWAY) are not lost to a TCP reset. */
static void conn_linger(struct gconn *c)
{
    c->lingering = true;
    c->sreq.data = c;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0 ||
        uv_timer_start(&c->linger, on_linger_end, GRPC_LINGER_MS, 0) != 0)
        conn_close(c);
}

static void on_write(uv_write_t *w, int status)
{
    struct gconn *c = w->data;
    c->writing = false;
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    app_grpc_conn_flush(c);
}

void app_grpc_conn_flush(struct gconn *c)
{
    if (c->closing || c->writing || c->lingering)
        return;
    wf_strbuf_reset(&c->wbuf);
    while (c->wbuf.len < GRPC_WRITE_MAX) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(c->session, &p);
        if (n < 0) {
            conn_close(c);
            return;
        }
        if (n == 0)
            break;
        wf_strbuf_append(&c->wbuf, (const char *)p, (size_t)n);
    }
    if (wf_strbuf_failed(&c->wbuf)) {
        conn_close(c);
        return;
    }
    if (c->wbuf.len) {
        uv_buf_t b = uv_buf_init(c->wbuf.data, (unsigned)c->wbuf.len);
        c->wreq.data = c;
        if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
            conn_close(c);
            return;
        }
        c->writing = true;
        return;
    }
    if ((c->failed || !nghttp2_session_want_read(c->session)) &&
        !nghttp2_session_want_write(c->session))
        conn_linger(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct gconn *c = h->data;
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct gconn *c = st->data;
    if (c->closing || nread == 0)
        return;
    if (nread < 0) {
        conn_close(c); /* EOF or error: the calls are dropped */
        return;
    }
    if (c->lingering || c->failed)
        return;
    ssize_t rv = nghttp2_session_mem_recv(c->session, (const uint8_t *)buf->base, (size_t)nread);
    if (rv < 0) {
        /* not HTTP/2 (an HTTP/1.1 request line fails the preface) or a connection error:
         * a GOAWAY (nghttp2 may have queued one already: then this does nothing) */
        (void)nghttp2_session_terminate_session(c->session, NGHTTP2_PROTOCOL_ERROR);
        c->failed = true;
    }
    app_grpc_conn_flush(c);
}

static void on_connection(uv_stream_t *l, int status)
{
    struct glistener *gl = l->data;
    struct app_grpc *g = gl->g;
    if (status < 0)
        return;
    struct gconn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->g = g;
    if (uv_tcp_init(g->loop, &c->tcp) != 0) {
        free(c);
        return;
    }
    c->tcp.data = c;
    c->handles = 1;
    if (uv_timer_init(g->loop, &c->linger) != 0) {
        uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
        return;
    }
    c->linger.data = c;
    c->handles = 2;
    c->next = g->conns;
    if (g->conns)
        g->conns->prev = c;
    g->conns = c;
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, APP_GRPC_MAX_STREAMS}};
    if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0 ||
        nghttp2_session_server_new(&c->session, g->cbs, c) != 0 ||
        nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, 1) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_close(c);
        return;
    }
    (void)uv_tcp_nodelay(&c->tcp, 1); /* latency only */
    app_grpc_conn_flush(c);           /* our SETTINGS: the server connection preface */
}

/* ---- the server ----------------------------------------------------------------------- */

struct app_grpc *app_grpc_new(uv_loop_t *loop, const struct app_grpc_config *cfg)
{
    struct app_grpc *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->loop = loop;
    g->cfg = *cfg;
    g->cbs = app_grpc_callbacks();
    if (!g->cbs) {
        free(g);
        return NULL;
    }
    const char *id = cfg->pod ? cfg->pod : cfg->name;
    size_t size = sizeof g->hostname;
    if (id)
        snprintf(g->hostname, sizeof g->hostname, "%s", id);
    else if (uv_os_gethostname(g->hostname, &size) != 0)
        g->hostname[0] = '\0';
    return g;
}

static void listener_closed(uv_handle_t *h)
{
    free(h->data);
}

int app_grpc_listen(struct app_grpc *g, const struct sockaddr *sa, char *bound, size_t boundlen)
{
    if (g->nlisteners >= sizeof g->listeners / sizeof g->listeners[0])
        return UV_EINVAL;
    struct glistener *gl = calloc(1, sizeof *gl);
    if (!gl)
        return UV_ENOMEM;
    gl->g = g;
    int r = uv_tcp_init(g->loop, &gl->tcp);
    if (r != 0) {
        free(gl);
        return r;
    }
    gl->tcp.data = gl;
    struct sockaddr_storage ss;
    int len = (int)sizeof ss;
    if ((r = uv_tcp_bind(&gl->tcp, sa, 0)) != 0 ||
        (r = uv_listen((uv_stream_t *)&gl->tcp, 1024, on_connection)) != 0 ||
        (r = uv_tcp_getsockname(&gl->tcp, (struct sockaddr *)&ss, &len)) != 0) {
        uv_close((uv_handle_t *)&gl->tcp, listener_closed);
        return r;
    }
    h1s_format_address((struct sockaddr *)&ss, bound, boundlen);
    g->listeners[g->nlisteners++] = gl;
    return 0;
}

void app_grpc_stop(struct app_grpc *g)
{
    for (size_t i = 0; i < g->nlisteners; i++)
        uv_close((uv_handle_t *)&g->listeners[i]->tcp, listener_closed);
    g->nlisteners = 0;
    while (g->conns)
        conn_close(g->conns);
}

void app_grpc_free(struct app_grpc *g)
{
    if (!g)
        return;
    nghttp2_session_callbacks_del(g->cbs);
    free(g);
}
