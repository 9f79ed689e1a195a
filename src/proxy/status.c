/*
 * status.c - the status server (status.h). A small HTTP/1.1 server of its own rather than the
 * admin server's (admin.c), whose connection code is tied to wp_server and answers every
 * request with "connection: close"; both parse with h1_parser.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "http/h1_parser.h"
#include "proxy/status.h"
#include "proxy/status_fetch.h"

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
    char app_ip[64];
    wp_prom_scrape app_metrics; /* opts.app_metrics points here when set */
    wp_agent_metrics agent;
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
    /* a response waiting for an app probe or an app scrape (pend_* below) */
    bool pending;
    wp_app_probe *probe;
    wp_fetch *scrape;
    struct st_resp_ *pend;
    int pend_minor;
    void (*after_write)(void *ud); /* the quit / drain callback, once the "OK" is out */
} st_conn;

typedef struct st_resp_ {
    int status; /* 0 while pending (an op will answer) */
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
    wp_app_probe_cancel(c->probe);
    wp_fetch_cancel(c->scrape);
    c->probe = NULL;
    c->scrape = NULL;
    if (c->pend) {
        wf_strbuf_free(&c->pend->body);
        free(c->pend);
        c->pend = NULL;
    }
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

/* ---------- responses ---------- */

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
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
    default: /* the app's status of a probe: the code is what counts */
        return status >= 200 && status < 300 ? "OK" : status < 500 ? "Bad Request" : "Error";
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
    if (c->after_write) {
        void (*fn)(void *) = c->after_write;
        c->after_write = NULL;
        wp_status *s = c->s;
        linger(c);
        fn(s->cb.ud); /* may close the server and this connection */
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

static bool str_is(h1_str a, const char *b)
{
    return a.len == strlen(b) && memcmp(a.p, b, a.len) == 0;
}

static bool has_prefix(h1_str a, const char *b)
{
    return a.len >= strlen(b) && memcmp(a.p, b, strlen(b)) == 0;
}

static void set_text(st_resp *o, int status, const char *text)
{
    o->status = status;
    o->content_type = "text/plain; charset=utf-8";
    wf_strbuf_reset(&o->body);
    wf_strbuf_puts(&o->body, text);
}

/* An op finished: the pending response goes out (the connection reads again after it). */
static void send_pending(st_conn *c)
{
    st_resp *o = c->pend;
    c->pend = NULL;
    c->pending = false;
    send_response(c, o, c->pend_minor);
    wf_strbuf_free(&o->body);
    free(o);
}

/* ---- the merged metrics (status_metrics.h) ---- */

static void render_local(wp_status *s, wf_strbuf *out)
{
    wp_agent_metrics_render(&s->agent, out);
    s->cb.render_prometheus(s->cb.ud, out);
}

static void on_scraped(void *ud, const wp_fetch_result *r)
{
    st_conn *c = ud;
    wp_status *s = c->s;
    st_resp *o = c->pend;
    c->scrape = NULL;
    bool ok = r->ok && r->status == 200;
    if (!ok) {
        s->agent.failures_app++;
        if (r->ok)
            WF_LOG(WF_LC_admin, WF_LOG_ERROR,
                   "failed scraping application metrics: error scraping http://%s:%d%s, status "
                   "code: %d",
                   s->app_ip, s->app_metrics.port, s->app_metrics.path, r->status);
        else
            WF_LOG(WF_LC_admin, WF_LOG_ERROR,
                   "failed scraping application metrics: error scraping http://%s:%d%s: %s",
                   s->app_ip, s->app_metrics.port, s->app_metrics.path, r->error);
    }
    o->status = 200;
    o->content_type = wp_metrics_content_type(ok ? r->content_type : NULL);
    render_local(s, &o->body);
    if (ok) /* last: an OpenMetrics "# EOF" ends the exposition */
        wf_strbuf_append(&o->body, r->body, r->body_len);
    if (wf_strbuf_failed(&o->body))
        set_text(o, 500, "out of memory\n");
    send_pending(c);
}

/* The scraper's headers pilot-agent forwards, as header lines into b. */
static void scrape_headers(const h1_message *m, wf_strbuf *b, uint64_t *timeout_ms)
{
    static const char *const fwd[] = {"accept", "user-agent",
                                      "x-prometheus-scrape-timeout-seconds"};
    for (size_t i = 0; i < 3; i++) {
        const h1_header *h = h1_find_header(m->headers, m->nheaders, fwd[i]);
        if (!h)
            continue;
        wf_strbuf_printf(b, "%.*s: %.*s\r\n", (int)h->name.len, h->name.p, (int)h->value.len,
                         h->value.p);
        if (i == 2) {
            char v[32];
            snprintf(v, sizeof v, "%.*s", (int)(h->value.len < 31 ? h->value.len : 31), h->value.p);
            char *end;
            double sec = strtod(v, &end);
            if (end != v && !*end && sec > 0 && sec < 3600)
                *timeout_ms = (uint64_t)(sec * 1000) ? (uint64_t)(sec * 1000) : 1;
        }
    }
}

static void h_prometheus(st_conn *c, const h1_message *m, st_resp *o)
{
    wp_status *s = c->s;
    s->agent.scrapes++;
    o->content_type = wp_metrics_content_type(NULL);
    if (!s->opts.app_metrics) {
        render_local(s, &o->body);
        if (wf_strbuf_failed(&o->body))
            set_text(o, 500, "out of memory\n");
        return;
    }
    struct sockaddr_storage dest;
    if (uv_ip4_addr(s->app_ip, s->app_metrics.port, (struct sockaddr_in *)&dest) != 0 &&
        uv_ip6_addr(s->app_ip, s->app_metrics.port, (struct sockaddr_in6 *)&dest) != 0) {
        set_text(o, 500, "invalid application address\n");
        return;
    }
    wf_strbuf hdrs = WF_STRBUF_INIT;
    uint64_t timeout = s->opts.app_scrape_timeout_ms;
    scrape_headers(m, &hdrs, &timeout);
    char host[96];
    snprintf(host, sizeof host, strchr(s->app_ip, ':') ? "[%s]:%d" : "%s:%d", s->app_ip,
             s->app_metrics.port);
    wp_fetch_req req = {.dest = (struct sockaddr *)&dest,
                        .target = s->app_metrics.path,
                        .host = host,
                        .headers = wf_strbuf_cstr(&hdrs),
                        .timeout_ms = timeout,
                        .max_body = WP_STATUS_APP_METRICS_MAX,
                        .body_limit_fails = true};
    c->scrape = wf_strbuf_failed(&hdrs) ? NULL : wp_fetch_start(s->loop, &req, on_scraped, c);
    wf_strbuf_free(&hdrs);
    if (!c->scrape) {
        set_text(o, 500, "out of memory\n");
        return;
    }
    o->status = 0; /* on_scraped answers */
}

/* ---- application probes (app_probe.h) ---- */

static void on_probed(void *ud, int status, const char *body, size_t len)
{
    st_conn *c = ud;
    st_resp *o = c->pend;
    c->probe = NULL;
    o->status = status;
    o->content_type = "text/plain; charset=utf-8";
    wf_strbuf_append(&o->body, body, len);
    if (wf_strbuf_failed(&o->body))
        set_text(o, 500, "out of memory\n");
    send_pending(c);
}

static bool hop_by_hop(h1_str n)
{
    static const char *const names[] = {
        "host", "connection", "keep-alive",     "proxy-connection", "transfer-encoding",
        "te",   "upgrade",    "content-length", "trailer"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (n.len == strlen(names[i]) && strncasecmp(n.p, names[i], n.len) == 0)
            return true;
    return false;
}

static void h_app_probe(st_conn *c, const h1_message *m, h1_str path, st_resp *o)
{
    wp_status *s = c->s;
    const wp_app_prober *p = wp_app_probers_find(s->opts.probers, path.p, path.len);
    if (!p) {
        WF_LOG(WF_LC_admin, WF_LOG_ERROR, "Prober does not exists url %.*s", (int)path.len, path.p);
        set_text(o, 400, "");
        wf_strbuf_printf(&o->body, "app prober config does not exists for %.*s", (int)path.len,
                         path.p);
        return;
    }
    const char *why = wp_app_probe_unsupported(p);
    if (why) {
        WF_LOG(WF_LC_admin, WF_LOG_ERROR, "probes: %s: %s", p->path, why);
        set_text(o, 500, "");
        wf_strbuf_printf(&o->body, "%s: %s\n", why, p->path);
        return;
    }
    wf_strbuf fwd = WF_STRBUF_INIT;
    for (size_t i = 0; i < m->nheaders; i++)
        if (!hop_by_hop(m->headers[i].name))
            wf_strbuf_printf(&fwd, "%.*s: %.*s\r\n", (int)m->headers[i].name.len,
                             m->headers[i].name.p, (int)m->headers[i].value.len,
                             m->headers[i].value.p);
    const h1_header *host = h1_find_header(m->headers, m->nheaders, "host");
    char hostv[256] = "";
    if (host)
        snprintf(hostv, sizeof hostv, "%.*s", (int)host->value.len, host->value.p);
    wp_app_probe_ctx ctx = {.dest_ip = s->app_ip,
                            .host = hostv,
                            .headers = wf_strbuf_cstr(&fwd),
                            .status_port = s->port};
    c->probe = wf_strbuf_failed(&fwd) ? NULL : wp_app_probe_start(s->loop, p, &ctx, on_probed, c);
    wf_strbuf_free(&fwd);
    if (!c->probe) {
        set_text(o, 500, "out of memory\n");
        return;
    }
    o->status = 0; /* on_probed answers */
}

/* ---- /quitquitquit and /drain ---- */

static bool peer_is_loopback(st_conn *c)
{
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) != 0)
        return false;
    if (sa.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa.ss_family != AF_INET6)
        return false;
    const unsigned char *a = ((struct sockaddr_in6 *)&sa)->sin6_addr.s6_addr;
    static const unsigned char loop6[16] = {[15] = 1};
    static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
    return memcmp(a, loop6, 16) == 0 || (memcmp(a, mapped, 12) == 0 && a[12] == 127);
}

/* pilot-agent's handleQuit / handleDrain: localhost first, then POST. */
static void h_lifecycle(st_conn *c, const h1_message *m, bool quit, st_resp *o)
{
    wp_status *s = c->s;
    if (!peer_is_loopback(c)) {
        set_text(o, 403, "Only requests from localhost are allowed\n");
        return;
    }
    if (!str_is(m->method, "POST")) {
        set_text(o, 405, "Method Not Allowed\n");
        return;
    }
    set_text(o, 200, "OK");
    WF_LOG(WF_LC_admin, WF_LOG_INFO,
           quit ? "handling /quitquitquit, notifying pilot-agent to exit"
                : "handling /drain, starting drain");
    c->close_after = true;
    c->after_write = quit ? s->cb.quit : s->cb.drain; /* it may close this server */
}

static void dispatch(st_conn *c, const h1_message *m, st_resp *o)
{
    wp_status *s = c->s;
    size_t pl = m->target.len;
    const char *q = memchr(m->target.p, '?', m->target.len);
    if (q)
        pl = (size_t)(q - m->target.p);
    h1_str path = {m->target.p, pl};
    bool full = !s->opts.readiness_only;
    bool ready = str_is(path, "/healthz/ready");
    bool prom = full && s->cb.render_prometheus &&
                (str_is(path, "/stats/prometheus") || str_is(path, "/metrics"));
    bool quit = full && s->cb.quit && str_is(path, "/quitquitquit");
    bool drain = full && s->cb.drain && str_is(path, "/drain");
    bool probe = full && (has_prefix(path, "/app-health/") || has_prefix(path, "/app-lifecycle/"));
    if (quit || drain) {
        h_lifecycle(c, m, quit, o);
    } else if (probe) {
        h_app_probe(c, m, path, o);
    } else if (!ready && !prom) {
        set_text(o, 404, "404 page not found\n");
    } else if (!str_is(m->method, "GET") && !o->head_only) {
        set_text(o, 405, "method not allowed\n");
        o->extra = "allow: GET, HEAD\r\n";
    } else if (ready) {
        h_ready(s, o);
    } else {
        h_prometheus(c, m, o);
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
    dispatch(c, m, &o);
    if (o.status != 0) {
        send_response(c, &o, m->version_minor);
        wf_strbuf_free(&o.body);
        return;
    }
    /* an op answers later: not read meanwhile (its own timeout bounds the wait) */
    c->pend = malloc(sizeof(*c->pend));
    if (!c->pend) {
        wp_app_probe_cancel(c->probe);
        wp_fetch_cancel(c->scrape);
        c->probe = NULL;
        c->scrape = NULL;
        wf_strbuf_free(&o.body);
        conn_close(c);
        return;
    }
    *c->pend = o;
    c->pend_minor = m->version_minor;
    c->pending = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->timer);
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
    while (!c->writing && !c->closing && !c->pending) {
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
    if (o->app_scrape_timeout_ms == 0)
        o->app_scrape_timeout_ms = WP_STATUS_DEFAULT_APP_SCRAPE_MS;
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
    snprintf(s->app_ip, sizeof(s->app_ip), "%s", opts->app_ip ? opts->app_ip : "127.0.0.1");
    if (opts->app_metrics) {
        s->app_metrics = *opts->app_metrics;
        s->opts.app_metrics = &s->app_metrics;
    }
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

wp_agent_metrics wp_status_agent_metrics(const wp_status *s)
{
    return s->agent;
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
