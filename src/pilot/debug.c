/*
 * debug.c - the monitoring/debug HTTP server: accept, parse one request head with
 * http/h1_parser.h, route (debug_views.c), write the reply, close. See debug.h.
 *
 * Bounded, since anyone who reaches the port can connect: at most DBG_MAX_CONNS connections
 * (beyond that the oldest one still waiting for its request head is closed), and a connection
 * that has not been answered DBG_DEADLINE_MS after it was accepted (a slow or partial request
 * head) is closed by a sweep every second.
 */
#include "pilot/debug.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "http/h1_parser.h"

#define DBG_MAX_HEAD    16384u
#define DBG_MAX_HDRS    64u
#define DBG_MAX_CONNS   256u
#define DBG_DEADLINE_MS 10000u

typedef struct dbg_conn dbg_conn;

struct wf_debug {
    uv_loop_t *loop;
    uv_tcp_t listener;
    wf_pilot *pilot;
    dbg_conn *conns; /* open connections (doubly linked) */
    size_t nconns;
    uv_timer_t sweep; /* closes connections past their deadline */
    int open;         /* handles not yet closed (listener, sweep timer, connections) */
    bool closing;
};

struct dbg_conn {
    uv_tcp_t tcp;
    wf_debug *d;
    dbg_conn *prev, *next;
    uint64_t accepted_ms; /* loop time of the accept */
    h1_parser parser;
    h1_header hdrs[DBG_MAX_HDRS];
    char buf[DBG_MAX_HEAD];
    size_t len;
    bool answered;
    uv_write_t wr;
    uv_buf_t out[2];
    char head[256];
    wf_strbuf body;
};

static void maybe_free(wf_debug *d)
{
    if (d->closing && d->open == 0) {
        free(d);
    }
}

static void on_conn_closed(uv_handle_t *h)
{
    dbg_conn *c = h->data;
    wf_debug *d = c->d;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        d->conns = c->next;
    }
    if (c->next) {
        c->next->prev = c->prev;
    }
    wf_strbuf_free(&c->body);
    free(c);
    d->nconns--;
    d->open--;
    maybe_free(d);
}

static void conn_close(dbg_conn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp)) {
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    }
}

static void on_written(uv_write_t *w, int status)
{
    conn_close(w->data);
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

/* Writes the reply (c->body already filled) and closes after it. */
static void respond(dbg_conn *c, int status, const char *ctype, bool head_only)
{
    c->answered = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (wf_strbuf_failed(&c->body)) {
        wf_strbuf_free(&c->body);
        status = 500;
        wf_strbuf_puts(&c->body, "out of memory\n");
    }
    int n = snprintf(c->head, sizeof c->head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, reason(status), ctype, c->body.len);
    c->out[0] = uv_buf_init(c->head, (unsigned)n);
    c->out[1] = uv_buf_init(c->body.data ? c->body.data : "", (unsigned)c->body.len);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, c->out, head_only ? 1 : 2, on_written) != 0) {
        conn_close(c);
    }
}

static void respond_text(dbg_conn *c, int status, const char *text)
{
    wf_strbuf_reset(&c->body);
    wf_strbuf_puts(&c->body, text);
    respond(c, status, "text/plain; charset=utf-8", false);
}

static void handle_request(dbg_conn *c, const h1_message *m)
{
    char target[2048];
    bool head = m->method.len == 4 && memcmp(m->method.p, "HEAD", 4) == 0;
    bool get = m->method.len == 3 && memcmp(m->method.p, "GET", 3) == 0;
    if (!get && !head) {
        respond_text(c, 405, "only GET is served here\n");
        return;
    }
    if (m->framing != H1_BODY_NONE && !(m->framing == H1_BODY_LENGTH && m->content_length == 0)) {
        respond_text(c, 400, "a request body is not accepted\n");
        return;
    }
    if (m->target.len >= sizeof target) {
        respond_text(c, 400, "request target too long\n");
        return;
    }
    memcpy(target, m->target.p, m->target.len);
    target[m->target.len] = '\0';
    char *q = strchr(target, '?');
    if (q) {
        *q++ = '\0';
    }
    wf_debug_reply r = {.status = 200, .ctype = "application/json", .body = WF_STRBUF_INIT};
    wf_debug_route(c->d->pilot, target, q ? q : "", &r);
    wf_strbuf_free(&c->body);
    c->body = r.body;
    WF_LOG(WF_LC_admin, WF_LOG_DEBUG, "debug: GET %s -> %d", target, r.status);
    respond(c, r.status, r.ctype, head);
}

static void parse_more(dbg_conn *c)
{
    h1_event ev;
    size_t used = h1_parse(&c->parser, c->buf, c->len, &ev);
    (void)used;
    if (ev == H1_EV_HEADERS) {
        handle_request(c, &c->parser.msg);
    } else if (ev == H1_EV_ERROR) {
        int st = h1_error_status(c->parser.error);
        respond_text(c, st, st == 431 ? "request head too large\n" : "bad request\n");
    } else if (ev == H1_EV_NEED_MORE && c->len == sizeof c->buf) {
        respond_text(c, 431, "request head too large\n");
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    dbg_conn *c = h->data;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof c->buf - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    dbg_conn *c = s->data;
    if (n < 0) {
        conn_close(c);
        return;
    }
    c->len += (size_t)n;
    if (!c->answered && n > 0) {
        parse_more(c);
    }
}

/* Over the limit: the oldest connection still waiting for its request head goes, so a flood
 * of idle connections cannot keep new requests out. */
static void close_oldest(wf_debug *d)
{
    dbg_conn *oldest = NULL;
    for (dbg_conn *c = d->conns; c; c = c->next)
        if (!c->answered && !uv_is_closing((uv_handle_t *)&c->tcp))
            oldest = c; /* the list is newest first */
    if (oldest)
        conn_close(oldest);
}

static void on_accept(uv_stream_t *server, int status)
{
    wf_debug *d = server->data;
    if (status < 0 || d->closing) {
        return;
    }
    dbg_conn *c = calloc(1, sizeof *c);
    if (!c) {
        return;
    }
    c->d = d;
    c->accepted_ms = uv_now(d->loop);
    uv_tcp_init(d->loop, &c->tcp);
    c->tcp.data = c;
    d->open++;
    d->nconns++;
    c->next = d->conns;
    if (d->conns) {
        d->conns->prev = c;
    }
    d->conns = c;
    h1_parser_init(&c->parser, H1_REQUEST, c->hdrs, DBG_MAX_HDRS, DBG_MAX_HEAD);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_close(c);
        return;
    }
    if (d->nconns > DBG_MAX_CONNS)
        close_oldest(d);
}

static void on_sweep(uv_timer_t *t)
{
    wf_debug *d = t->data;
    uint64_t now = uv_now(d->loop);
    for (dbg_conn *c = d->conns; c; c = c->next)
        if (!c->answered && now - c->accepted_ms >= DBG_DEADLINE_MS)
            conn_close(c);
}

static void on_listener_closed(uv_handle_t *h)
{
    wf_debug *d = h->data;
    d->open--;
    maybe_free(d);
}

int wf_debug_start(uv_loop_t *loop, const wf_debug_opts *opts, wf_debug **out, char *err,
                   size_t cap)
{
    struct sockaddr_storage sa;
    const char *ip = opts->ip ? opts->ip : "127.0.0.1";
    wf_debug *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    d->loop = loop;
    d->pilot = opts->pilot;
    uv_tcp_init(loop, &d->listener);
    d->listener.data = d;
    uv_timer_init(loop, &d->sweep);
    d->sweep.data = d;
    uv_timer_start(&d->sweep, on_sweep, 1000, 1000);
    uv_unref((uv_handle_t *)&d->sweep);
    d->open = 2;
    int rc = strchr(ip, ':') ? uv_ip6_addr(ip, opts->port, (struct sockaddr_in6 *)&sa)
                             : uv_ip4_addr(ip, opts->port, (struct sockaddr_in *)&sa);
    if (rc == 0) {
        rc = uv_tcp_bind(&d->listener, (const struct sockaddr *)&sa, 0);
    }
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *)&d->listener, 128, on_accept);
    }
    if (rc != 0) {
        snprintf(err, cap, "cannot listen for monitoring on %s:%d: %s", ip, opts->port,
                 uv_strerror(rc));
        wf_debug_close(d);
        return -1;
    }
    *out = d;
    return 0;
}

int wf_debug_port(const wf_debug *d)
{
    struct sockaddr_storage sa;
    int len = sizeof sa;
    if (uv_tcp_getsockname(&d->listener, (struct sockaddr *)&sa, &len) != 0) {
        return -1;
    }
    return sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
                                    : ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

void wf_debug_close(wf_debug *d)
{
    if (!d || d->closing) {
        return;
    }
    d->closing = true;
    for (dbg_conn *c = d->conns; c; c = c->next) {
        conn_close(c);
    }
    uv_close((uv_handle_t *)&d->sweep, on_listener_closed);
    uv_close((uv_handle_t *)&d->listener, on_listener_closed);
}
