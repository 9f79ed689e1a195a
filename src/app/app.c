/*
 * app.c - weft-app server: listeners and the request cycle on the shared HTTP/1 server
 * (http/h1_server.h: connections, reading, keep-alive, pipelining, timeouts, linger, writes),
 * and streamed bodies (app.h: the endpoints; app_resp.c: routing and answers; app_ws.c: the
 * WebSocket echo on a taken-over connection).
 *
 * h1_server's STREAM mode: the head is routed when it arrives (on_headers), the body is
 * counted (and kept for the catalog) as it arrives, and the answer is produced once the
 * request was read whole (on_request), at once or after a timer (h1s_defer). /bytes and
 * /chunked bodies go out from the app's pattern without copying, one piece after the other as
 * the previous one was written (h1s_resp_sendv), which is the back-pressure for slow readers.
 *
 * Memory: the server lends a connection its read buffer, header array and output buffers only
 * while it has a request in progress or bytes buffered; /echo and the catalog borrow an aux
 * buffer from the app's free list for one request.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app_grpc.h"
#include "app/app_internal.h"
#include "app/catalog.h"

/* xorshift64* */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* ---- aux buffers ---- */

wf_strbuf *app_aux(struct app_conn *c)
{
    struct wf_app *app = c->app;
    if (c->aux)
        return &c->aux->b;
    struct app_aux *x = app->free_aux;
    if (x) {
        app->free_aux = x->next;
        app->nfree--;
    } else if (!(x = calloc(1, sizeof *x))) {
        return NULL;
    }
    wf_strbuf_reset(&x->b);
    c->aux = x;
    return &x->b;
}

void app_aux_release(struct app_conn *c)
{
    struct wf_app *app = c->app;
    struct app_aux *x = c->aux;
    c->aux = NULL;
    if (!x)
        return;
    if (app->nfree >= APP_FREE_MAX || x->b.failed || x->b.cap > APP_AUX_KEEP) {
        wf_strbuf_free(&x->b);
        free(x);
        return;
    }
    x->next = app->free_aux;
    app->free_aux = x;
    app->nfree++;
}

/* --catalog, for the request whose head just arrived: routes the catalog paths and applies
 * the blowup fault (catalog.h). Returns 1 when the request was answered at once: an
 * injected 500 to a request with a body goes out before the body is read and the connection
 * then closes, as a server that fails early does (what makes a proxy's retry wait for its
 * back-off while the client is still sending). */
static int catalog_head(struct app_conn *c, const h1_message *m, h1_str path)
{
    uint64_t delay = 0;
    enum wf_catalog_action act = WF_CAT_PASS;
    c->fault_delay_ms = 0;
    c->body_cut = false;
    if (wf_catalog_match(path.p, path.len) != WF_CAT_NONE) {
        wf_strbuf fail = {.failed = true}, *aux = app_aux(c);
        if (!aux)
            aux = &fail; /* out of memory: answered 500 */
        c->route = R_CATALOG;
        wf_strbuf_append(aux, m->method.p, m->method.len);
        wf_strbuf_putc(aux, ' ');
        wf_strbuf_append(aux, path.p, path.len);
        c->arg = aux->len;
    }
    if (!wf_catalog_fault_exempt(path.p, path.len))
        act = wf_catalog_fault(c->app->catalog, &delay);
    if (act == WF_CAT_DELAY)
        c->fault_delay_ms = delay;
    else if (act == WF_CAT_DROP)
        c->hangup = true;
    else if (act == WF_CAT_FAIL)
        c->route = R_FAULT;
    if (act != WF_CAT_FAIL || m->framing == H1_BODY_NONE || c->hangup)
        return 0;
    app_respond(c); /* before the body: h1_server closes the connection after it */
    return 1;
}

/* The head arrived: route it (h1s_callbacks.on_headers). */
static void on_headers(void *ud, h1s_conn *hc, const h1s_request *r)
{
    struct wf_app *app = ud;
    struct app_conn *c = h1s_data(hc);
    const h1_message *m = r->msg;
    c->app = app;
    c->hc = hc;
    h1_str path = app_target_path(m->target);
    c->route = app_route_path(path.p, path.len, &c->arg);
    c->hangup = ++app->received <= app->cfg.hangup_first;
    if (c->route != R_COUNT && c->route != R_COUNT_RESET)
        app->count++;
    c->head_only = r->head;
    c->http10 = m->version_minor == 0;
    c->body_bytes = 0;
    if (c->route == R_WS && !app_ws_handshake(c, m))
        c->route = R_BAD_WS;
    if (c->route == R_ECHO)
        app_echo_prefix(c, m);
    if (app->catalog)
        catalog_head(c, m, path);
}

/* Keeps a catalog request's body (up to WF_CATALOG_MAX_BODY; beyond, it is cut and counted). */
static void catalog_body(struct app_conn *c, const char *data, size_t n)
{
    wf_strbuf *aux = app_aux(c);
    if (!aux || c->body_cut || aux->len - (size_t)c->arg + n > WF_CATALOG_MAX_BODY) {
        c->body_cut = true;
        return;
    }
    wf_strbuf_append(aux, data, n);
}

static void on_body(void *ud, h1s_conn *hc, const char *data, size_t len)
{
    struct app_conn *c = h1s_data(hc);
    (void)ud;
    c->body_bytes += len;
    if (c->route == R_CATALOG)
        catalog_body(c, data, len);
}

static void respond_later(h1s_conn *hc, void *arg)
{
    (void)hc;
    app_respond(arg);
}

/* The request was read whole: answer now or after the delay (/delay, latency, blowup). */
static void on_request(void *ud, h1s_conn *hc, const h1s_request *r)
{
    struct wf_app *app = ud;
    struct app_conn *c = h1s_data(hc);
    (void)r;
    uint64_t delay = (c->route == R_DELAY ? c->arg : 0) + c->fault_delay_ms;
    uint64_t lo = app->cfg.latency_min_ms, hi = app->cfg.latency_max_ms;
    if (hi > 0) {
        uint64_t span = hi - lo + 1;
        delay += lo + (span ? rng_next(&app->rng) % span : rng_next(&app->rng));
    }
    if (delay == 0)
        app_respond(c);
    else
        h1s_defer(hc, delay, respond_later, c);
}

/* A request the parser refused: h1_error_status() with the details, then closed. */
static void on_error(void *ud, h1s_conn *hc, int status, const char *details)
{
    struct app_conn *c = h1s_data(hc);
    char body[96];
    c->app = ud;
    c->hc = hc;
    c->head_only = false;
    app_aux_release(c);
    int len = snprintf(body, sizeof body, "%s\n", details);
    app_resp_text(c, (uint64_t)status, body, (size_t)len);
}

static void on_abort(void *ud, h1s_conn *hc)
{
    struct app_conn *c = h1s_data(hc);
    (void)ud;
    if (c->app)
        app_aux_release(c);
}

static size_t on_raw(void *ud, h1s_conn *hc, char *data, size_t len)
{
    (void)ud;
    return app_ws_input(h1s_data(hc), data, len);
}

/* ---- streaming ---- */

/* The next pieces of a /bytes or /chunked body, straight from the pattern; runs again from
 * h1_server once they were written. */
static void stream_more(h1s_conn *hc, void *arg)
{
    struct app_conn *c = arg;
    const char *pat = c->app->pattern;
    while (c->stream_left) {
        uv_buf_t p[APP_CHUNKS];
        unsigned n = 0;
        size_t piece = c->stream_chunked ? APP_CHUNK : APP_PIECE;
        unsigned max = c->stream_chunked ? APP_CHUNKS : 1;
        while (n < max && c->stream_left) {
            size_t k = c->stream_left < piece ? (size_t)c->stream_left : piece;
            p[n++] = uv_buf_init((char *)pat, (unsigned)k);
            c->stream_left -= k;
        }
        if (h1s_resp_sendv(hc, p, n, stream_more, c) != 0)
            return; /* pending (stream_more comes back), or closed */
    }
    if (c->reset_after)
        h1s_conn_reset(hc); /* /reset/<n>: half the announced body, then a TCP RST */
    else
        h1s_resp_end(hc);
}

void app_stream_start(struct app_conn *c, bool chunked)
{
    c->stream_chunked = chunked && !c->http10;
    c->reset_after = false;
    h1s_resp_head(c->hc, 200, NULL, c->app->heads[CT_OCTETS],
                  c->stream_chunked ? H1S_CHUNKED : (int64_t)c->arg);
    if (c->head_only) {
        h1s_resp_end(c->hc);
        return;
    }
    c->stream_left = c->arg;
    stream_more(c->hc, c);
}

void app_stream_reset(struct app_conn *c)
{
    c->stream_chunked = false;
    c->reset_after = true;
    h1s_resp_head(c->hc, 200, NULL, c->app->heads[CT_OCTETS], (int64_t)(2 * c->arg));
    c->stream_left = c->head_only ? 0 : c->arg;
    stream_more(c->hc, c);
}

/* ---- listeners and the app ---- */

int wf_app_parse_addr(const char *s, struct sockaddr_storage *out)
{
    return h1s_parse_address(s, out);
}

int wf_app_listen(struct wf_app *app, const char *addr, char *bound, size_t boundlen)
{
    struct sockaddr_storage ss;
    if (wf_app_parse_addr(addr, &ss) != 0 || app->nservers >= WF_APP_MAX_LISTEN)
        return UV_EINVAL;
    h1s_opts o = {.body = H1S_BODY_STREAM,
                  .max_headers = APP_HDR_CAP,
                  .idle_timeout_ms = app->cfg.idle_timeout_ms,
                  .linger_ms = APP_LINGER_MS,
                  .keep_alive = true,
                  .conn_data = sizeof(struct app_conn),
                  .backlog = 1024};
    h1s_callbacks cb = {.on_request = on_request,
                        .on_headers = on_headers,
                        .on_body = on_body,
                        .on_error = on_error,
                        .on_abort = on_abort,
                        .on_raw = on_raw,
                        .ud = app};
    int r = 0;
    h1s_server *s = h1s_listen(app->loop, (struct sockaddr *)&ss, &o, &cb, &r);
    if (!s)
        return r;
    snprintf(bound, boundlen, "%s", h1s_bound(s));
    app->servers[app->nservers++] = s;
    return 0;
}

int wf_app_listen_grpc(struct wf_app *app, const char *addr, char *bound, size_t boundlen)
{
    struct sockaddr_storage ss;
    if (wf_app_parse_addr(addr, &ss) != 0)
        return UV_EINVAL;
    if (!app->grpc) {
        struct app_grpc_config gc = {
            .name = app->cfg.name, .pod = app->cfg.pod, .version = app->cfg.version};
        if (!(app->grpc = app_grpc_new(app->loop, &gc)))
            return UV_ENOMEM;
    }
    return app_grpc_listen(app->grpc, (struct sockaddr *)&ss, bound, boundlen);
}

/* "x-weft-app: NAME\r\n", "x-weft-pod: POD\r\n" and "x-weft-version: VERSION\r\n", as configured.
 */
static int make_fixed(struct wf_app *app)
{
    wf_strbuf b = WF_STRBUF_INIT;
    if (app->cfg.name) {
        PUTS(&b, "x-weft-app: ");
        wf_strbuf_puts(&b, app->cfg.name);
        PUTS(&b, "\r\n");
    }
    if (app->cfg.pod) {
        PUTS(&b, "x-weft-pod: ");
        wf_strbuf_puts(&b, app->cfg.pod);
        PUTS(&b, "\r\n");
    }
    if (app->cfg.version) {
        PUTS(&b, "x-weft-version: ");
        wf_strbuf_puts(&b, app->cfg.version);
        PUTS(&b, "\r\n");
    }
    wf_strbuf_putc(&b, '\0'); /* always allocate, even when empty */
    if (wf_strbuf_failed(&b)) {
        wf_strbuf_free(&b);
        return -1;
    }
    app->fixed_len = b.len - 1;
    app->fixed = wf_strbuf_take(&b);
    if (!app->fixed)
        return -1;
    /* the head lines of every answer: the content type, then the fixed ones */
    static const char *const types[] = {NULL, "text/plain", "application/json",
                                        "application/octet-stream"};
    for (size_t i = 0; i < 4; i++) {
        wf_strbuf h = WF_STRBUF_INIT;
        if (types[i])
            wf_strbuf_printf(&h, "Content-Type: %s\r\n", types[i]);
        wf_strbuf_append(&h, app->fixed, app->fixed_len);
        wf_strbuf_putc(&h, '\0');
        app->heads[i] = wf_strbuf_failed(&h) ? NULL : wf_strbuf_take(&h);
        wf_strbuf_free(&h);
        if (!app->heads[i])
            return -1;
    }
    return 0;
}

static void free_heads(struct wf_app *app)
{
    for (size_t i = 0; i < 4; i++)
        free(app->heads[i]);
    free(app->fixed);
}

static void make_patterns(struct wf_app *app)
{
    static const char pat[] = WF_APP_PATTERN;
    for (size_t i = 0; i < APP_PIECE; i++)
        app->pattern[i] = pat[i % 64];
}

struct wf_app *wf_app_new(uv_loop_t *loop, const struct wf_app_config *cfg)
{
    struct wf_app *app = calloc(1, sizeof *app);
    if (!app)
        return NULL;
    app->loop = loop;
    app->cfg = *cfg;
    /* splitmix64 of the seed: xorshift must not start at 0 */
    uint64_t z = cfg->seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    app->rng = (z ^ (z >> 31)) | 1;
    if (cfg->catalog) {
        app->catalog = wf_catalog_new(cfg->version, cfg->seed);
        if (!app->catalog) {
            free(app);
            return NULL;
        }
    }
    if (make_fixed(app) != 0) {
        free_heads(app);
        wf_catalog_free(app->catalog);
        free(app);
        return NULL;
    }
    make_patterns(app);
    return app;
}

void wf_app_stop(struct wf_app *app)
{
    for (size_t i = 0; i < app->nservers; i++)
        h1s_close(app->servers[i]);
    app->nservers = 0;
    if (app->grpc)
        app_grpc_stop(app->grpc);
}

void wf_app_free(struct wf_app *app)
{
    if (!app)
        return;
    while (app->free_aux) {
        struct app_aux *x = app->free_aux;
        app->free_aux = x->next;
        wf_strbuf_free(&x->b);
        free(x);
    }
    wf_catalog_free(app->catalog);
    app_grpc_free(app->grpc);
    free_heads(app);
    free(app);
}

uint64_t wf_app_request_count(const struct wf_app *app)
{
    return app->count;
}
