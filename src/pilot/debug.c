/*
 * debug.c - the monitoring/debug HTTP server: the shared HTTP/1 server (http/h1_server.h)
 * hands over each request head; it is routed (debug_views.c) and answered, and the connection
 * closes after the answer. See debug.h.
 *
 * Bounded, since anyone who reaches the port can connect: at most DBG_MAX_CONNS connections
 * (beyond that the oldest one still waiting for its request head is closed), and a connection
 * that has not sent its request head DBG_DEADLINE_MS after it was accepted (a slow or partial
 * request head) is closed.
 */
#include "pilot/debug.h"
#include "pilot/debug_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/log.h"
#include "http/h1_server.h"

#define DBG_MAX_HEAD    16384u
#define DBG_MAX_HDRS    64u
#define DBG_MAX_CONNS   256u
#define DBG_DEADLINE_MS 10000u

struct wf_debug {
    h1s_server *srv;
    uv_loop_t *loop;
    wf_pilot *pilot;
    wf_debug_route_fn route;
};

/* A connection's request kept while its view waits (debug.h retry_ms). */
typedef struct {
    wf_debug *d;
    char target[2048];
    uint64_t arrived_ms;
} dbg_conn;

static const char *reason(int status)
{
    const char *r = h1s_reason(status);
    return strcmp(r, "Unknown") ? r : "Internal Server Error";
}

/* Writes the reply (Connection: close: the server does not keep connections). */
static void respond(h1s_conn *c, int status, const char *ctype, wf_strbuf *body,
                    const char *location)
{
    if (wf_strbuf_failed(body)) {
        wf_strbuf_free(body);
        status = 500;
        ctype = "text/plain; charset=utf-8";
        location = NULL;
        wf_strbuf_puts(body, "out of memory\n");
    }
    char head[256];
    snprintf(head, sizeof head, "Content-Type: %s\r\n%s%s%s", ctype, location ? "Location: " : "",
             location ? location : "", location ? "\r\n" : "");
    h1s_respond(c, status, reason(status), head, body->data, body->len);
}

static void respond_text(h1s_conn *c, int status, const char *text)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, text);
    respond(c, status, "text/plain; charset=utf-8", &b, NULL);
    wf_strbuf_free(&b);
}

static void again(h1s_conn *c, void *arg);

/* Routes the kept request (target split at '?') and answers, or waits again. */
static void route_and_answer(wf_debug *d, h1s_conn *c)
{
    dbg_conn *dc = h1s_data(c);
    char target[sizeof dc->target];
    memcpy(target, dc->target, sizeof target);
    char *q = strchr(target, '?');
    if (q) {
        *q++ = '\0';
    }
    wf_debug_reply r = {.status = 200,
                        .ctype = "application/json",
                        .body = WF_STRBUF_INIT,
                        .waited_ms = uv_now(d->loop) - dc->arrived_ms};
    if (d->route)
        d->route(d->pilot, target, q ? q : "", &r);
    else
        wf_debug_reply_json(&r, 404, json_pack("{s:s}", "error", "no debug views"));
    if (r.retry_ms && h1s_defer(c, r.retry_ms, again, d) == 0) {
        wf_strbuf_free(&r.body);
        return;
    }
    WF_LOG(WF_LC_admin, WF_LOG_DEBUG, "debug: GET %s -> %d", target, r.status);
    respond(c, r.status, r.ctype, &r.body, r.location);
    wf_strbuf_free(&r.body);
}

static void again(h1s_conn *c, void *arg)
{
    route_and_answer(arg, c);
}

static void on_request(void *ud, h1s_conn *c, const h1s_request *req)
{
    wf_debug *d = ud;
    const h1_message *m = req->msg;
    bool get = m->method.len == 3 && memcmp(m->method.p, "GET", 3) == 0;
    if (!get && !req->head) {
        static const char body[] = "only GET (and HEAD) is served here\n";
        h1s_respond(c, 405, reason(405),
                    "Content-Type: text/plain; charset=utf-8\r\nAllow: GET, HEAD\r\n", body,
                    sizeof body - 1);
        return;
    }
    if (m->framing != H1_BODY_NONE && !(m->framing == H1_BODY_LENGTH && m->content_length == 0)) {
        respond_text(c, 400, "a request body is not accepted\n");
        return;
    }
    if (m->target.len >= sizeof((dbg_conn *)0)->target) {
        respond_text(c, 400, "request target too long\n");
        return;
    }
    dbg_conn *dc = h1s_data(c);
    memcpy(dc->target, m->target.p, m->target.len);
    dc->target[m->target.len] = '\0';
    dc->arrived_ms = uv_now(d->loop);
    route_and_answer(d, c);
}

/* ---- what the views answer with (debug.h, debug_internal.h) ---- */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* v (n bytes) decoded as Go's url.QueryUnescape into buf (cap bytes, truncated); false (buf
 * untouched) when an escape is malformed or decodes to NUL. */
static bool query_unescape(const char *v, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '+')
            c = ' ';
        else if (c == '%') {
            int hi = i + 2 < n ? hexval(v[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(v[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return false;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (o + 1 < cap)
            buf[o++] = c;
    }
    buf[o] = '\0';
    return true;
}

const char *wf_debug_query_get(const char *q, const char *key, char *buf, size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = q; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n >= kl && strncmp(p, key, kl) == 0 && (n == kl || p[kl] == '=')) {
            const char *v = p + (n > kl ? kl + 1 : kl);
            size_t vl = n > kl ? n - kl - 1 : 0;
            if (!query_unescape(v, vl, buf, cap)) { /* the raw value: it holds a '%' */
                vl = vl < cap - 1 ? vl : cap - 1;
                memcpy(buf, v, vl);
                buf[vl] = '\0';
            }
            return buf;
        }
        p = amp ? amp + 1 : NULL;
    }
    return NULL;
}

void wf_debug_reply_json(wf_debug_reply *r, int status, json_t *j)
{
    char *txt = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    r->status = txt ? status : 500;
    r->ctype = "application/json";
    wf_strbuf_puts(&r->body, txt ? txt : "{\"error\": \"out of memory\"}");
    wf_strbuf_putc(&r->body, '\n');
    free(txt);
}

static void on_error(void *ud, h1s_conn *c, int status, const char *details)
{
    (void)ud;
    (void)details;
    respond_text(c, status, status == 431 ? "request head too large\n" : "bad request\n");
}

static void server_closed(void *arg)
{
    free(arg);
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
    d->pilot = opts->pilot;
    d->loop = loop;
    d->route = opts->route;
    int rc = strchr(ip, ':') ? uv_ip6_addr(ip, opts->port, (struct sockaddr_in6 *)&sa)
                             : uv_ip4_addr(ip, opts->port, (struct sockaddr_in *)&sa);
    h1s_opts ho = {.body = H1S_BODY_SKIP,
                   .max_head = DBG_MAX_HEAD,
                   .max_headers = DBG_MAX_HDRS,
                   .max_connections = DBG_MAX_CONNS,
                   .limit = H1S_LIMIT_CLOSE_OLDEST,
                   .idle_timeout_ms = DBG_DEADLINE_MS,
                   .conn_data = sizeof(dbg_conn),
                   .on_closed = server_closed,
                   .closed_arg = d};
    h1s_callbacks cb = {.on_request = on_request, .on_error = on_error, .ud = d};
    if (rc == 0) {
        d->srv = h1s_listen(loop, (struct sockaddr *)&sa, &ho, &cb, &rc);
    }
    if (!d->srv) {
        snprintf(err, cap, "cannot listen for monitoring on %s:%d: %s", ip, opts->port,
                 uv_strerror(rc));
        free(d);
        return -1;
    }
    *out = d;
    return 0;
}

int wf_debug_port(const wf_debug *d)
{
    return h1s_port(d->srv);
}

void wf_debug_close(wf_debug *d)
{
    if (!d || !d->srv) {
        return;
    }
    h1s_server *srv = d->srv;
    d->srv = NULL; /* d is freed by server_closed */
    h1s_close(srv);
}
