/*
 * status.c - the status server (status.h). A small HTTP/1.1 server of its own rather than the
 * admin server's (admin.c), whose connection code is tied to wp_server and answers every
 * request with "connection: close"; both parse with h1_parser.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "http/h1_parser.h"
#include "proxy/status.h"

#define ST_MAX_HEADERS 32
#define ST_REASON_MAX  512
/* After a last response: FIN, then read and drop what the client still sends for this long
 * before closing, so that closing with unread input does not reset the connection and destroy
 * the response (Envoy's delayed_close_timeout, default 1 s, does the same). */
#define ST_LINGER_MS 1000

struct wp_status {
    uv_loop_t *loop;
    uv_tcp_t listener;
    wp_status_callbacks cb;
    wp_status_opts opts;
    char address[80];
    struct st_conn *conns;
    size_t nconns;      /* in the list (open) */
    size_t live;        /* allocated, not yet freed (open + closing, rejected included) */
    bool closing;       /* wp_status_close was called */
    bool listener_open; /* the listener handle is not closed yet */
    int last_ready;     /* -1 no probe yet, else the last answer (for transition logs) */
    int port;
};

typedef struct st_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    wp_status *s;
    struct st_conn *prev, *next;
    char *buf;
    size_t len, off, cap;
    h1_parser parser;
    h1_header hdrs[ST_MAX_HEADERS];
    wf_strbuf out;
    int handles; /* open libuv handles (tcp, timer); freed at 0 */
    bool writing, close_after, closing, lingering;
} st_conn;

typedef struct {
    int status;
    const char *content_type;
    const char *extra; /* more header lines, each ending in CRLF, or NULL */
    wf_strbuf body;
    bool head_only;
} st_resp;

/* ---------- addresses ---------- */

static int parse_port(const char *p, int *port)
{
    if (!*p)
        return -1;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || (v = v * 10 + (*p - '0')) > 65535)
            return -1;
    }
    *port = (int)v;
    return 0;
}

int wp_status_parse_address(const char *text, struct sockaddr_storage *sa, wf_strbuf *err)
{
    char host[64];
    const char *colon = text ? strrchr(text, ':') : NULL;
    int port = 0, r = -1;
    memset(sa, 0, sizeof(*sa));
    if (colon && parse_port(colon + 1, &port) == 0) {
        const char *h = text;
        size_t hl = (size_t)(colon - text);
        bool v6 = hl >= 2 && h[0] == '[' && h[hl - 1] == ']';
        if (v6) {
            h++;
            hl -= 2;
        }
        if (hl > 0 && hl < sizeof(host)) {
            memcpy(host, h, hl);
            host[hl] = 0;
            r = v6 ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)sa)
                   : uv_ip4_addr(host, port, (struct sockaddr_in *)sa);
        }
    }
    if (r != 0 && err)
        wf_strbuf_printf(err, "invalid status address \"%s\": want IP:PORT or [IPv6]:PORT",
                         text ? text : "");
    return r != 0 ? -1 : 0;
}

/* ---------- lifetime ---------- */

static void maybe_free_server(wp_status *s)
{
    if (s->closing && !s->listener_open && s->live == 0)
        free(s);
}

static void conn_handle_closed(uv_handle_t *h)
{
    st_conn *c = h->data;
    if (--c->handles > 0)
        return;
    wp_status *s = c->s;
    wf_strbuf_free(&c->out);
    free(c->buf);
    free(c);
    s->live--;
    maybe_free_server(s);
}

static void conn_close(st_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    wp_status *s = c->s;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

/* ---------- responses ---------- */

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return "Bad Request";
    }
}

static void process(st_conn *c);
static int start_reading(st_conn *c);

static void on_idle(uv_timer_t *t)
{
    conn_close(t->data);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* the linger timer or the client's EOF closes the connection */
}

/* The last response is out: half-close, drain the client's leftovers, then close. */
static void linger(st_conn *c)
{
    c->lingering = true;
    c->len = c->off = 0;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0 || start_reading(c) != 0) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_idle, ST_LINGER_MS, 0);
}

static void on_written(uv_write_t *req, int status)
{
    st_conn *c = req->data;
    c->writing = false;
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->close_after) {
        linger(c);
        return;
    }
    wf_strbuf_reset(&c->out);
    if (start_reading(c) != 0) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_idle, c->s->opts.idle_timeout_ms, 0);
    process(c); /* a pipelined request may be buffered already */
}

static void send_response(st_conn *c, st_resp *o, int version_minor)
{
    wf_strbuf *b = &c->out;
    const char *conn_hdr = c->close_after       ? "connection: close\r\n"
                           : version_minor == 0 ? "connection: keep-alive\r\n"
                                                : "";
    wf_strbuf_printf(b,
                     "HTTP/1.%d %d %s\r\ncontent-type: %s\r\ncontent-length: %zu\r\n"
                     "cache-control: no-cache, max-age=0\r\n%s%s\r\n",
                     version_minor, o->status, status_text(o->status), o->content_type, o->body.len,
                     o->extra ? o->extra : "", conn_hdr);
    if (!o->head_only && o->body.len)
        wf_strbuf_append(b, o->body.data, o->body.len);
    if (wf_strbuf_failed(b)) {
        conn_close(c);
        return;
    }
    uv_buf_t buf = uv_buf_init(b->data, (unsigned)b->len);
    c->wreq.data = c;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->timer);
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) {
        conn_close(c);
        return;
    }
    c->writing = true;
}

/* A request that cannot be read: answered with status and what, then closed. */
static void reject(st_conn *c, int status, const char *what)
{
    st_resp o = {.status = status, .content_type = "text/plain; charset=utf-8"};
    wf_strbuf_printf(&o.body, "%s\n", what);
    c->close_after = true;
    send_response(c, &o, 1);
    wf_strbuf_free(&o.body);
}

/* ---------- endpoints ---------- */

static void log_transition(wp_status *s, bool ready, const char *reason)
{
    if (s->last_ready == (int)ready)
        return;
    s->last_ready = ready;
    if (ready)
        WF_LOG(WF_LC_admin, WF_LOG_INFO, "Envoy proxy is ready (status server %s)", s->address);
    else
        WF_LOG(WF_LC_admin, WF_LOG_WARN, "Envoy proxy is NOT ready: %s (status server %s)", reason,
               s->address);
}

static void h_ready(wp_status *s, st_resp *o)
{
    char reason[ST_REASON_MAX] = "";
    bool ready = s->cb.ready(s->cb.ud, reason, sizeof(reason));
    reason[sizeof(reason) - 1] = 0;
    log_transition(s, ready, reason);
    o->status = ready ? 200 : 503;
    if (!ready)
        wf_strbuf_printf(&o->body, "%s\n", reason);
}

static void h_prometheus(wp_status *s, st_resp *o)
{
    o->content_type = "text/plain; version=0.0.4; charset=utf-8";
    s->cb.render_prometheus(s->cb.ud, &o->body);
    if (wf_strbuf_failed(&o->body)) {
        wf_strbuf_free(&o->body);
        o->status = 500;
        o->content_type = "text/plain; charset=utf-8";
        wf_strbuf_puts(&o->body, "out of memory\n");
    }
}

static bool str_is(h1_str a, const char *b)
{
    return a.len == strlen(b) && memcmp(a.p, b, a.len) == 0;
}

static void dispatch(wp_status *s, const h1_message *m, st_resp *o)
{
    size_t pl = m->target.len;
    const char *q = memchr(m->target.p, '?', m->target.len);
    if (q)
        pl = (size_t)(q - m->target.p);
    h1_str path = {m->target.p, pl};
    bool ready = str_is(path, "/healthz/ready");
    bool prom =
        !s->opts.readiness_only && s->cb.render_prometheus && str_is(path, "/stats/prometheus");
    if (!ready && !prom) {
        o->status = 404;
        wf_strbuf_puts(&o->body, "404 page not found\n");
    } else if (!str_is(m->method, "GET") && !o->head_only) {
        o->status = 405;
        o->extra = "allow: GET, HEAD\r\n";
        wf_strbuf_puts(&o->body, "method not allowed\n");
    } else if (ready) {
        h_ready(s, o);
    } else {
        h_prometheus(s, o);
    }
}

static void handle_request(st_conn *c, const h1_message *m)
{
    st_resp o = {.status = 200, .content_type = "text/plain; charset=utf-8"};
    o.head_only = str_is(m->method, "HEAD");
    WF_LOG(WF_LC_admin, WF_LOG_DEBUG, "status request: %.*s %.*s", (int)m->method.len, m->method.p,
           (int)m->target.len, m->target.p);
    /* A body is not read: answer, then close rather than skip it. */
    c->close_after = !m->keep_alive || m->framing != H1_BODY_NONE || m->upgrade;
    dispatch(c->s, m, &o);
    send_response(c, &o, m->version_minor);
    wf_strbuf_free(&o.body);
}

/* ---------- reading ---------- */

static void compact(st_conn *c)
{
    if (c->off == 0)
        return;
    memmove(c->buf, c->buf + c->off, c->len - c->off);
    c->len -= c->off;
    c->off = 0;
}

/* Parses what is buffered until a response is being written, more input is needed or the
 * connection is done. */
static void process(st_conn *c)
{
    while (!c->writing && !c->closing) {
        h1_event ev;
        c->off += h1_parse(&c->parser, c->buf + c->off, c->len - c->off, &ev);
        switch (ev) {
        case H1_EV_HEADERS:
            handle_request(c, &c->parser.msg);
            break;
        case H1_EV_DONE:
            compact(c);
            break;
        case H1_EV_NEED_MORE:
            compact(c);
            if (c->len == c->cap)
                reject(c, 431, "request too large");
            return;
        case H1_EV_ERROR:
            reject(c, h1_error_status(c->parser.error), h1_error_details(c->parser.error));
            return;
        case H1_EV_UPGRADED:
            conn_close(c);
            return;
        default: /* BODY / TRAILERS: not reached, a request with a body closes after HEADERS */
            break;
        }
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    st_conn *c = h->data;
    (void)suggested;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    st_conn *c = st->data;
    (void)buf;
    if (n < 0) {
        conn_close(c);
        return;
    }
    if (c->lingering) {
        c->len = 0; /* dropped */
        return;
    }
    c->len += (size_t)n;
    process(c);
}

static int start_reading(st_conn *c)
{
    return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---------- accepting ---------- */

static void rejected_closed(uv_handle_t *h)
{
    wp_status *s = h->data;
    free(h);
    s->live--;
    maybe_free_server(s);
}

/* Over max_connections: accept (or libuv stops polling the listener) and close at once. */
static void refuse(wp_status *s, uv_stream_t *server)
{
    uv_tcp_t *t = malloc(sizeof(*t));
    if (!t || uv_tcp_init(s->loop, t) != 0) {
        free(t);
        return;
    }
    t->data = s;
    s->live++;
    (void)uv_accept(server, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, rejected_closed);
}

static st_conn *conn_new(wp_status *s)
{
    st_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cap = s->opts.max_request_bytes;
    c->buf = malloc(c->cap);
    if (!c->buf || uv_tcp_init(s->loop, &c->tcp) != 0) {
        free(c->buf);
        free(c);
        return NULL;
    }
    uv_timer_init(s->loop, &c->timer); /* cannot fail: no resources beyond the struct */
    c->s = s;
    c->handles = 2;
    c->tcp.data = c->timer.data = c;
    h1_parser_init(&c->parser, H1_REQUEST, c->hdrs, ST_MAX_HEADERS, c->cap);
    s->live++;
    s->nconns++;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    return c;
}

static void on_connection(uv_stream_t *server, int status)
{
    wp_status *s = server->data;
    if (status < 0 || s->closing)
        return;
    if (s->nconns >= s->opts.max_connections) {
        refuse(s, server);
        return;
    }
    st_conn *c = conn_new(s);
    if (!c) {
        refuse(s, server);
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 || start_reading(c) != 0) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_idle, s->opts.idle_timeout_ms, 0);
}

/* ---------- the server ---------- */

static void listener_closed(uv_handle_t *h)
{
    wp_status *s = h->data;
    s->listener_open = false;
    maybe_free_server(s);
}

static void apply_defaults(wp_status_opts *o)
{
    if (o->max_request_bytes == 0)
        o->max_request_bytes = WP_STATUS_DEFAULT_MAX_REQUEST_BYTES;
    if (o->max_request_bytes < 256)
        o->max_request_bytes = 256;
    if (o->max_connections == 0)
        o->max_connections = WP_STATUS_DEFAULT_MAX_CONNECTIONS;
    if (o->idle_timeout_ms == 0)
        o->idle_timeout_ms = WP_STATUS_DEFAULT_IDLE_TIMEOUT_MS;
}

static int bind_listen(wp_status *s, const struct sockaddr_storage *sa)
{
    int r = uv_tcp_bind(&s->listener, (const struct sockaddr *)sa, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
    if (r != 0)
        return r;
    struct sockaddr_storage got;
    int len = sizeof(got);
    r = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&got, &len);
    if (r != 0)
        return r;
    char ip[64] = "";
    bool v6 = got.ss_family == AF_INET6;
    s->port = ntohs(v6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                       : ((struct sockaddr_in *)&got)->sin_port);
    if (uv_ip_name((struct sockaddr *)&got, ip, sizeof(ip)) == 0) /* the picked port in logs */
        snprintf(s->address, sizeof(s->address), v6 ? "[%s]:%d" : "%s:%d", ip, s->port);
    return 0;
}

wp_status *wp_status_start(uv_loop_t *loop, const wp_status_opts *opts,
                           const wp_status_callbacks *cb, wf_strbuf *err)
{
    struct sockaddr_storage sa;
    if (!cb || !cb->ready) {
        wf_strbuf_puts(err, "status server: no readiness callback");
        return NULL;
    }
    if (wp_status_parse_address(opts->address, &sa, err) != 0)
        return NULL;
    wp_status *s = calloc(1, sizeof(*s));
    if (!s) {
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    s->loop = loop;
    s->cb = *cb;
    s->opts = *opts;
    apply_defaults(&s->opts);
    snprintf(s->address, sizeof(s->address), "%s", opts->address);
    s->opts.address = s->address;
    s->last_ready = -1;
    int r = uv_tcp_init(loop, &s->listener);
    if (r != 0) {
        wf_strbuf_printf(err, "cannot listen on status address %s: %s", s->address, uv_strerror(r));
        free(s);
        return NULL;
    }
    s->listener.data = s;
    s->listener_open = true;
    if ((r = bind_listen(s, &sa)) != 0) {
        wf_strbuf_printf(err, "cannot listen on status address %s: %s", s->address, uv_strerror(r));
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, listener_closed);
        uv_run(loop, UV_RUN_NOWAIT); /* runs listener_closed, which frees s (as admin.c) */
        return NULL;
    }
    WF_LOG(WF_LC_main, WF_LOG_INFO, "status server listening on %s%s", s->address,
           s->opts.readiness_only ? " (readiness only)" : "");
    return s;
}

int wp_status_port(const wp_status *s)
{
    return s->port;
}

size_t wp_status_connections(const wp_status *s)
{
    return s->nconns;
}

void wp_status_close(wp_status *s)
{
    if (!s || s->closing)
        return;
    s->closing = true;
    while (s->conns)
        conn_close(s->conns);
    uv_close((uv_handle_t *)&s->listener, listener_closed);
}
