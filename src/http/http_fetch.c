/*
 * http_fetch.c - one outgoing HTTP/1.1 GET or TCP connect (http_fetch.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "http/http_fetch.h"

#define FETCH_MAX_HEAD    (64u * 1024u)
#define FETCH_MAX_HEADERS 64
#define FETCH_READ_CHUNK  16384u

struct wf_http_fetch {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t creq;
    uv_write_t wreq;
    wf_http_fetch_req req;
    wf_http_fetch_cb cb;
    void *ud;
    int handles; /* open libuv handles; freed at 0 */
    bool done;   /* the callback ran, or was cancelled, or is due from the timer */
    bool connected;
    char error[128]; /* a failure found before the loop reported it (reported by the timer) */
    wf_strbuf out;   /* the request */
    char *in;        /* what was read (the whole response, up to the limits) */
    size_t len, cap, off;
    h1_parser parser;
    h1_header hdrs[FETCH_MAX_HEADERS];
    bool have_head;
    int status;
    char ctype[128], location[512];
    wf_strbuf body;
    bool truncated;
};

static void on_closed(uv_handle_t *h)
{
    wf_http_fetch *f = h->data;
    if (--f->handles > 0)
        return;
    wf_strbuf_free(&f->out);
    wf_strbuf_free(&f->body);
    free(f->in);
    free(f);
}

static void finish_handles(wf_http_fetch *f)
{
    f->done = true;
    if (!uv_is_closing((uv_handle_t *)&f->tcp))
        uv_close((uv_handle_t *)&f->tcp, on_closed);
    if (!uv_is_closing((uv_handle_t *)&f->timer))
        uv_close((uv_handle_t *)&f->timer, on_closed);
}

/* Reports (once) and closes. error NULL = success. */
static void finish(wf_http_fetch *f, const char *error)
{
    if (f->done)
        return;
    wf_http_fetch_result r = {.ok = error == NULL,
                              .error = error ? error : "",
                              .status = f->status,
                              .content_type = f->ctype,
                              .location = f->location,
                              .body = f->body.data ? f->body.data : "",
                              .body_len = f->body.len,
                              .truncated = f->truncated};
    if (wf_strbuf_failed(&f->body)) {
        r.ok = false;
        r.error = "out of memory";
    }
    f->done = true;
    f->cb(f->ud, &r);
    finish_handles(f);
}

static void copy_header(const h1_message *m, const char *name, char *buf, size_t cap)
{
    const h1_header *h = h1_find_header(m->headers, m->nheaders, name);
    size_t n = h ? h->value.len : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(buf, h->value.p, n);
    buf[n] = 0;
}

/* Adds body bytes, keeping at most max_body. Returns true when the limit was passed. */
static bool add_body(wf_http_fetch *f, const char *p, size_t n)
{
    size_t room = f->req.max_body > f->body.len ? f->req.max_body - f->body.len : 0;
    wf_strbuf_append(&f->body, p, n < room ? n : room);
    if (n > room)
        f->truncated = true;
    return f->truncated;
}

/* Parses what was read since the last call; reports when the response is complete (or the
 * body limit is reached). eof: the peer closed. */
static void parse(wf_http_fetch *f, bool eof)
{
    for (;;) {
        h1_event ev;
        f->off += h1_parse(&f->parser, f->in + f->off, f->len - f->off, &ev);
        if (ev == H1_EV_NEED_MORE && eof)
            ev = h1_parse_eof(&f->parser);
        switch (ev) {
        case H1_EV_HEADERS:
            f->have_head = true;
            f->status = f->parser.msg.status;
            copy_header(&f->parser.msg, "content-type", f->ctype, sizeof f->ctype);
            copy_header(&f->parser.msg, "location", f->location, sizeof f->location);
            break;
        case H1_EV_BODY:
            if (add_body(f, f->parser.data, f->parser.data_len)) {
                finish(f, f->req.body_limit_fails ? "response body too large" : NULL);
                return;
            }
            break;
        case H1_EV_TRAILERS:
            break;
        case H1_EV_DONE:
            if (f->parser.msg.status >= 100 && f->parser.msg.status < 200) {
                f->have_head = false; /* an interim response: the final one follows */
                break;
            }
            finish(f, NULL);
            return;
        case H1_EV_NEED_MORE:
            if (!f->have_head && f->len >= FETCH_MAX_HEAD)
                finish(f, "response head too large");
            return;
        case H1_EV_UPGRADED:
            finish(f, NULL);
            return;
        default: {
            char why[96];
            snprintf(why, sizeof why, "malformed HTTP response (%s)",
                     h1_error_name(f->parser.error));
            finish(f, f->parser.error == H1_ERR_TRUNCATED ? "connection closed mid-response" : why);
            return;
        }
        }
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    wf_http_fetch *f = h->data;
    (void)suggested;
    if (f->cap - f->len < FETCH_READ_CHUNK) {
        size_t ncap = f->cap ? f->cap * 2 : 2 * FETCH_READ_CHUNK;
        char *n = realloc(f->in, ncap);
        if (!n) {
            *buf = uv_buf_init(NULL, 0);
            return;
        }
        f->in = n;
        f->cap = ncap;
    }
    *buf = uv_buf_init(f->in + f->len, (unsigned)(f->cap - f->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    wf_http_fetch *f = s->data;
    (void)buf;
    if (f->done)
        return;
    if (n == UV_ENOBUFS) {
        finish(f, "out of memory");
        return;
    }
    if (n < 0) {
        if (n == UV_EOF)
            parse(f, true);
        else
            finish(f, uv_strerror((int)n));
        return;
    }
    f->len += (size_t)n;
    parse(f, false);
}

static void on_written(uv_write_t *w, int status)
{
    wf_http_fetch *f = w->data;
    if (f->done)
        return;
    if (status < 0)
        finish(f, uv_strerror(status));
}

static void on_connect(uv_connect_t *c, int status)
{
    wf_http_fetch *f = c->data;
    if (f->done)
        return;
    if (status < 0) {
        finish(f, uv_strerror(status));
        return;
    }
    f->connected = true;
    if (f->req.connect_only) {
        finish(f, NULL);
        return;
    }
    uv_buf_t b = uv_buf_init(f->out.data, (unsigned)f->out.len);
    f->wreq.data = f;
    int r = uv_write(&f->wreq, (uv_stream_t *)&f->tcp, &b, 1, on_written);
    if (r == 0)
        r = uv_read_start((uv_stream_t *)&f->tcp, on_alloc, on_read);
    if (r != 0)
        finish(f, uv_strerror(r));
}

static void on_timer(uv_timer_t *t)
{
    wf_http_fetch *f = t->data;
    char why[64];
    if (f->error[0]) {
        finish(f, f->error);
        return;
    }
    snprintf(why, sizeof why, "timeout after %llu ms", (unsigned long long)f->req.timeout_ms);
    finish(f, why);
}

static int build_request(wf_http_fetch *f, const wf_http_fetch_req *req)
{
    if (req->connect_only)
        return 0;
    wf_strbuf_printf(&f->out, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n",
                     req->target && *req->target ? req->target : "/", req->host ? req->host : "",
                     req->headers ? req->headers : "");
    return wf_strbuf_failed(&f->out) ? -1 : 0;
}

wf_http_fetch *wf_http_fetch_start(uv_loop_t *loop, const wf_http_fetch_req *req,
                                   wf_http_fetch_cb cb, void *ud)
{
    wf_http_fetch *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->loop = loop;
    f->req = *req;
    f->req.target = f->req.host = f->req.headers = NULL; /* copied into out */
    f->cb = cb;
    f->ud = ud;
    if (!f->req.timeout_ms)
        f->req.timeout_ms = 1000;
    h1_parser_init(&f->parser, H1_RESPONSE, f->hdrs, FETCH_MAX_HEADERS, FETCH_MAX_HEAD);
    if (build_request(f, req) != 0 || uv_tcp_init(loop, &f->tcp) != 0) {
        wf_strbuf_free(&f->out);
        free(f);
        return NULL;
    }
    uv_timer_init(loop, &f->timer); /* cannot fail */
    f->tcp.data = f->timer.data = f;
    f->handles = 2;
    int r = 0;
    if (req->source)
        r = uv_tcp_bind(&f->tcp, req->source, 0);
    f->creq.data = f;
    if (r == 0)
        r = uv_tcp_connect(&f->creq, &f->tcp, req->dest, on_connect);
    if (r != 0) { /* reported from the loop, not from inside this call */
        snprintf(f->error, sizeof f->error, "%s", uv_strerror(r));
        uv_timer_start(&f->timer, on_timer, 0, 0);
        return f;
    }
    uv_timer_start(&f->timer, on_timer, f->req.timeout_ms, 0);
    return f;
}

void wf_http_fetch_cancel(wf_http_fetch *f)
{
    if (!f || f->done)
        return;
    finish_handles(f);
}
