/*
 * status.c - the status server (status.h): pilot-agent's endpoints on the shared HTTP/1
 * server (http/h1_server.h: connections, keep-alive, pipelining, limits, timeouts, linger).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <strings.h>

#include "core/log.h"
#include "http/h1_server.h"
#include "proxy/agent/status.h"
#include "http/http_fetch.h"

#define ST_MAX_HEADERS 32
#define ST_REASON_MAX  512
/* After a last response: FIN, then read and drop what the client still sends for this long
 * before closing, so that closing with unread input does not reset the connection and destroy
 * the response (Envoy's delayed_close_timeout, default 1 s, does the same). */
#define ST_LINGER_MS 1000

struct wp_status {
    uv_loop_t *loop;
    h1s_server *srv;
    wp_status_callbacks cb;
    wp_status_opts opts;
    char address[80];
    int last_ready; /* -1 no probe yet, else the last answer (for transition logs) */
    int port;
    char app_ip[64];
    wp_prom_scrape app_metrics; /* opts.app_metrics points here when set */
    wp_agent_metrics agent;
};

/* Per connection (h1s_data): the app probe or app scrape its answer waits for. */
typedef struct {
    wp_status *s;
    wp_app_probe *probe;
    wf_http_fetch *scrape;
} st_conn;

typedef struct {
    int status; /* 0 while pending (an op will answer) */
    const char *content_type;
    const char *extra; /* more header lines, each ending in CRLF, or NULL */
    wf_strbuf body;
} st_resp;

int wp_status_parse_address(const char *text, struct sockaddr_storage *sa, wf_strbuf *err)
{
    memset(sa, 0, sizeof(*sa));
    if (h1s_parse_address(text, sa) == 0)
        return 0;
    if (err)
        wf_strbuf_printf(err, "invalid status address \"%s\": want IP:PORT or [IPv6]:PORT",
                         text ? text : "");
    return -1;
}

/* ---------- responses ---------- */

static const char *status_text(int status)
{
    const char *r = h1s_reason(status);
    if (strcmp(r, "Unknown") != 0)
        return r;
    /* the app's status of a probe: the code is what counts */
    return status >= 200 && status < 300 ? "OK" : status < 500 ? "Bad Request" : "Error";
}

static void send_response(h1s_conn *c, st_resp *o)
{
    char head[256];
    snprintf(head, sizeof head, "content-type: %s\r\ncache-control: no-cache, max-age=0\r\n%s",
             o->content_type, o->extra ? o->extra : "");
    if (wf_strbuf_failed(&o->body)) {
        h1s_conn_close(c);
        return;
    }
    h1s_respond(c, o->status, status_text(o->status), head, o->body.data, o->body.len);
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

/* An op finished: its answer goes out (the connection reads again after it). */
static void send_pending(h1s_conn *c, st_resp *o)
{
    send_response(c, o);
    wf_strbuf_free(&o->body);
}

/* ---- the merged metrics (status_metrics.h) ---- */

static void render_local(wp_status *s, wf_strbuf *out)
{
    wp_agent_metrics_render(&s->agent, out);
    s->cb.render_prometheus(s->cb.ud, out);
}

static void on_scraped(void *ud, const wf_http_fetch_result *r)
{
    h1s_conn *c = ud;
    st_conn *sc = h1s_data(c);
    wp_status *s = sc->s;
    st_resp o_ = {0}, *o = &o_;
    sc->scrape = NULL;
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
    send_pending(c, o);
}

/* The scraper's headers pilot-agent forwards, as header lines into b. */
static void scrape_headers(const h1s_request *m, wf_strbuf *b, uint64_t *timeout_ms)
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

static void h_prometheus(h1s_conn *c, const h1s_request *m, st_resp *o)
{
    st_conn *sc = h1s_data(c);
    wp_status *s = sc->s;
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
    wf_http_fetch_req req = {.dest = (struct sockaddr *)&dest,
                             .target = s->app_metrics.path,
                             .host = host,
                             .headers = wf_strbuf_cstr(&hdrs),
                             .timeout_ms = timeout,
                             .max_body = WP_STATUS_APP_METRICS_MAX,
                             .body_limit_fails = true};
    sc->scrape = wf_strbuf_failed(&hdrs) ? NULL : wf_http_fetch_start(s->loop, &req, on_scraped, c);
    wf_strbuf_free(&hdrs);
    if (!sc->scrape) {
        set_text(o, 500, "out of memory\n");
        return;
    }
    o->status = 0; /* on_scraped answers */
}

/* ---- application probes (app_probe.h) ---- */

static void on_probed(void *ud, int status, const char *body, size_t len)
{
    h1s_conn *c = ud;
    st_conn *sc = h1s_data(c);
    st_resp o_ = {0}, *o = &o_;
    sc->probe = NULL;
    o->status = status;
    o->content_type = "text/plain; charset=utf-8";
    wf_strbuf_append(&o->body, body, len);
    if (wf_strbuf_failed(&o->body))
        set_text(o, 500, "out of memory\n");
    send_pending(c, o);
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

static void h_app_probe(h1s_conn *c, const h1s_request *m, h1_str path, st_resp *o)
{
    st_conn *sc = h1s_data(c);
    wp_status *s = sc->s;
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
    sc->probe = wf_strbuf_failed(&fwd) ? NULL : wp_app_probe_start(s->loop, p, &ctx, on_probed, c);
    wf_strbuf_free(&fwd);
    if (!sc->probe) {
        set_text(o, 500, "out of memory\n");
        return;
    }
    o->status = 0; /* on_probed answers */
}

/* ---- /quitquitquit and /drain ---- */

static bool peer_is_loopback(h1s_conn *c)
{
    struct sockaddr_storage sa;
    if (h1s_peer(c, &sa) != 0)
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
static void h_lifecycle(h1s_conn *c, const h1s_request *m, bool quit, st_resp *o)
{
    wp_status *s = ((st_conn *)h1s_data(c))->s;
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
    h1s_close_after(c);
    h1s_after_answer(c, quit ? s->cb.quit : s->cb.drain, s->cb.ud); /* may close this server */
}

/* pilot-agent's handleNdsz: the DNS proxy's NameTable as JSON (writeJSONProto, no @type). */
static void h_ndsz(h1s_conn *c, st_resp *o)
{
    wp_status *s = ((st_conn *)h1s_data(c))->s;
    if (!peer_is_loopback(c)) {
        set_text(o, 403, "Only requests from localhost are allowed\n");
        return;
    }
    const json_t *nt = s->cb.name_table(s->cb.ud);
    json_t *copy = nt ? json_deep_copy(nt) : NULL;
    if (copy)
        json_object_del(copy, "@type");
    char *txt = copy ? json_dumps(copy, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(copy);
    set_text(o, txt ? 200 : 404, txt ? txt : "{}");
    o->content_type = "application/json";
    free(txt);
}

/* The admin's /failed_requests relayed (status.h): ?limit=N as the admin reads it. */
static void h_failed_requests(wp_status *s, const h1s_request *m, st_resp *o)
{
    size_t limit = SIZE_MAX;
    const char *q = m->query.p, *end = m->query.p + m->query.len;
    while (q && q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *e = amp ? amp : end;
        if ((size_t)(e - q) >= 6 && memcmp(q, "limit=", 6) == 0) {
            char v[24];
            size_t n = (size_t)(e - q - 6);
            char *stop = NULL;
            if (n == 0 || n >= sizeof v || q[6] == '-' || q[6] == '+') {
                set_text(o, 400, "usage: /failed_requests?limit=N\n");
                return;
            }
            memcpy(v, q + 6, n);
            v[n] = '\0';
            unsigned long long x = strtoull(v, &stop, 10);
            if (*stop) {
                set_text(o, 400, "usage: /failed_requests?limit=N\n");
                return;
            }
            limit = (size_t)x;
        }
        q = amp ? amp + 1 : NULL;
    }
    o->content_type = "application/json";
    if (s->cb.failed_requests(s->cb.ud, limit, &o->body) != 0 || wf_strbuf_failed(&o->body))
        set_text(o, 500, "out of memory\n");
}

static void dispatch(h1s_conn *c, const h1s_request *m, st_resp *o)
{
    wp_status *s = ((st_conn *)h1s_data(c))->s;
    h1_str path = m->path;
    bool full = !s->opts.readiness_only;
    bool ready = str_is(path, "/healthz/ready");
    bool prom = full && s->cb.render_prometheus &&
                (str_is(path, "/stats/prometheus") || str_is(path, "/metrics"));
    bool quit = full && s->cb.quit && str_is(path, "/quitquitquit");
    bool drain = full && s->cb.drain && str_is(path, "/drain");
    bool probe = full && (has_prefix(path, "/app-health/") || has_prefix(path, "/app-lifecycle/"));
    bool ndsz = full && s->cb.name_table && str_is(path, "/debug/ndsz");
    bool failed = full && s->cb.failed_requests && str_is(path, "/failed_requests");
    if (ndsz) {
        h_ndsz(c, o);
    } else if (quit || drain) {
        h_lifecycle(c, m, quit, o);
    } else if (probe) {
        h_app_probe(c, m, path, o);
    } else if (!ready && !prom && !failed) {
        set_text(o, 404, "404 page not found\n");
    } else if (!str_is(m->method, "GET") && !m->head) {
        set_text(o, 405, "method not allowed\n");
        o->extra = "allow: GET, HEAD\r\n";
    } else if (ready) {
        h_ready(s, o);
    } else if (failed) {
        h_failed_requests(s, m, o);
    } else {
        h_prometheus(c, m, o);
    }
}

/* At the request head (h1_server's SKIP mode: a body is not read, its connection closes after
 * the answer); an app probe or scrape answers later, the connection is not read meanwhile. */
static void on_request(void *ud, h1s_conn *c, const h1s_request *m)
{
    st_conn *sc = h1s_data(c);
    st_resp o = {.status = 200, .content_type = "text/plain; charset=utf-8"};
    sc->s = ud;
    WF_LOG(WF_LC_admin, WF_LOG_DEBUG, "status request: %.*s %.*s", (int)m->method.len, m->method.p,
           (int)m->target.len, m->target.p);
    dispatch(c, m, &o);
    if (o.status != 0)
        send_response(c, &o);
    wf_strbuf_free(&o.body);
}

/* The connection closed while a probe or scrape ran for it. */
static void on_abort(void *ud, h1s_conn *c)
{
    st_conn *sc = h1s_data(c);
    (void)ud;
    wp_app_probe_cancel(sc->probe);
    wf_http_fetch_cancel(sc->scrape);
    sc->probe = NULL;
    sc->scrape = NULL;
}

/* ---------- the server ---------- */

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

static void server_closed(void *arg)
{
    free(arg);
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
    h1s_opts ho = {.body = H1S_BODY_SKIP,
                   .max_head = s->opts.max_request_bytes,
                   .max_headers = ST_MAX_HEADERS,
                   .max_connections = s->opts.max_connections,
                   .limit = H1S_LIMIT_REFUSE,
                   .idle_timeout_ms = s->opts.idle_timeout_ms,
                   .linger_ms = ST_LINGER_MS,
                   .keep_alive = true,
                   .lower_case = true,
                   .echo_version = true,
                   .conn_data = sizeof(st_conn),
                   /* a request that cannot be read: status and details, then closed */
                   .error_head = "content-type: text/plain; charset=utf-8\r\n"
                                 "cache-control: no-cache, max-age=0\r\n",
                   .on_closed = server_closed,
                   .closed_arg = s};
    h1s_callbacks hc = {.on_request = on_request, .on_abort = on_abort, .ud = s};
    int r = 0;
    s->srv = h1s_listen(loop, (struct sockaddr *)&sa, &ho, &hc, &r);
    if (!s->srv) {
        wf_strbuf_printf(err, "cannot listen on status address %s: %s", s->address, uv_strerror(r));
        free(s);
        return NULL;
    }
    s->port = h1s_port(s->srv);
    snprintf(s->address, sizeof(s->address), "%s", h1s_bound(s->srv)); /* the picked port */
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
    return h1s_connections(s->srv);
}

void wp_status_close(wp_status *s)
{
    if (!s || !s->srv)
        return;
    h1s_server *srv = s->srv;
    s->srv = NULL; /* freed by server_closed once every connection closed */
    h1s_close(srv);
}
