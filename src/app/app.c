/*
 * app.c - weft-app server: connections, reading, writing and the request cycle (app.h: the
 * endpoints; app_resp.c: routing and answers; app_ws.c: the WebSocket echo).
 *
 * One connection handles one request at a time: the parser is pumped until a request is
 * complete, its answer is produced (at once, after a timer, or streamed piece by piece), and
 * only then is the next (pipelined) request parsed. Reading stops while an answer is being
 * written, delayed or streamed, which is the back-pressure for pipelining clients and keeps
 * at most one read buffer and one 64 KiB piece per connection.
 *
 * Memory: struct app_conn is small (uv handles, parser, request state). The read buffer, the
 * header array and the output buffers live in a struct app_block taken from the app's free
 * list when bytes arrive (libuv alloc_cb) and given back when the connection is between
 * requests with nothing buffered or unwritten.
 *
 * Closing: an answer that ends the connection (Connection: close, hang-ups, errors) is
 * followed by shutdown(SHUT_WR) and a short linger that discards what the peer still sends,
 * so the peer reads our answer (or a clean EOF) instead of a reset.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app_internal.h"
#include "app/catalog.h"

static void conn_pump(struct app_conn *c);
static void conn_close(struct app_conn *c);
static void timer_arm(struct app_conn *c, enum app_timer mode, uint64_t ms);

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

/* ---- blocks ---- */

static struct app_block *block_get(struct wf_app *app)
{
    struct app_block *b = app->free_blocks;
    if (b) {
        app->free_blocks = b->next;
        app->nfree--;
        return b;
    }
    b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->next = NULL;
    b->out = (wf_strbuf)WF_STRBUF_INIT;
    b->aux = (wf_strbuf)WF_STRBUF_INIT;
    return b;
}

static void block_free(struct app_block *b)
{
    wf_strbuf_free(&b->out);
    wf_strbuf_free(&b->aux);
    free(b);
}

static void strbuf_recycle(wf_strbuf *s)
{
    if (s->failed || s->cap > APP_OUT_KEEP) {
        wf_strbuf_free(s);
        *s = (wf_strbuf)WF_STRBUF_INIT;
    }
    wf_strbuf_reset(s);
}

static void block_put(struct wf_app *app, struct app_block *b)
{
    if (app->nfree >= APP_FREE_MAX) {
        block_free(b);
        return;
    }
    strbuf_recycle(&b->out);
    strbuf_recycle(&b->aux);
    b->next = app->free_blocks;
    app->free_blocks = b;
    app->nfree++;
}

/* ---- output ---- */

static void on_write(uv_write_t *req, int status)
{
    struct app_conn *c = req->data;
    if (c->closing)
        return;
    c->writing = false;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->blk)
        wf_strbuf_reset(&c->blk->out);
    conn_pump(c);
}

/* Writes blk->out then extra[0..elen) (which must stay valid until the write completes).
 * Returns 0 when everything went out at once, 1 when a write is pending (c->writing), -1
 * when the connection was closed. */
int app_conn_flush(struct app_conn *c, const char *extra, size_t elen)
{
    uv_buf_t b[2];
    unsigned n = 0, i = 0;
    wf_strbuf *o = c->blk ? &c->blk->out : NULL;
    if (o && wf_strbuf_failed(o)) {
        conn_close(c);
        return -1;
    }
    if (o && o->len)
        b[n++] = uv_buf_init(o->data, (unsigned)o->len);
    if (elen)
        b[n++] = uv_buf_init((char *)extra, (unsigned)elen);
    if (!n)
        return 0;
    int r = uv_try_write((uv_stream_t *)&c->tcp, b, n);
    if (r == UV_EAGAIN || r == UV_ENOSYS)
        r = 0;
    if (r < 0) {
        conn_close(c);
        return -1;
    }
    size_t w = (size_t)r;
    while (i < n && w >= b[i].len)
        w -= b[i++].len;
    if (i == n) {
        if (o)
            wf_strbuf_reset(o);
        return 0;
    }
    b[i].base += w;
    b[i].len -= w;
    c->req.write.data = c;
    if (uv_write(&c->req.write, (uv_stream_t *)&c->tcp, b + i, n - i, on_write) < 0) {
        conn_close(c);
        return -1;
    }
    c->writing = true;
    return 1;
}

/* --catalog, for the request whose head just arrived: routes the catalog paths and applies
 * the blowup fault (catalog.h). Returns 1 when the request was answered at once: an
 * injected 500 to a request with a body goes out before the body is read and the connection
 * then closes, as a server that fails early does (what makes a proxy's retry wait for its
 * back-off while the client is still sending). */
static int catalog_head(struct app_conn *c, h1_str path)
{
    uint64_t delay = 0;
    enum wf_catalog_action act = WF_CAT_PASS;
    c->fault_delay_ms = 0;
    c->body_cut = false;
    if (wf_catalog_match(path.p, path.len) != WF_CAT_NONE) {
        const h1_message *m = &c->parser.msg;
        wf_strbuf *aux = &c->blk->aux;
        c->route = R_CATALOG;
        wf_strbuf_reset(aux);
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
    if (act != WF_CAT_FAIL || c->parser.msg.framing == H1_BODY_NONE || c->hangup)
        return 0;
    c->close_after = true;
    app_respond(c);
    return 1;
}

static void on_headers(struct app_conn *c)
{
    struct wf_app *app = c->app;
    const h1_message *m = &c->parser.msg;
    h1_str path = app_target_path(m->target);
    c->route = app_route_path(path.p, path.len, &c->arg);
    c->hangup = ++app->received <= app->cfg.hangup_first;
    if (c->route != R_COUNT && c->route != R_COUNT_RESET)
        app->count++;
    c->head_only = str_eq(m->method, "HEAD");
    c->keep_alive = m->keep_alive;
    c->http10 = m->version_minor == 0;
    c->upgrade = m->upgrade;
    c->body_bytes = 0;
    if (c->route == R_WS && !app_ws_handshake(c, m))
        c->route = R_BAD_WS;
    if (c->route == R_ECHO)
        app_echo_prefix(c, m);
    if (app->catalog && catalog_head(c, path) != 0)
        return; /* answered at once */
    if (m->expect_continue)
        PUTS(&c->blk->out, "HTTP/1.1 100 Continue\r\n\r\n");
    c->phase = PH_BODY;
}

static void on_done(struct app_conn *c)
{
    struct wf_app *app = c->app;
    uint64_t delay = (c->route == R_DELAY ? c->arg : 0) + c->fault_delay_ms;
    uint64_t lo = app->cfg.latency_min_ms, hi = app->cfg.latency_max_ms;
    if (hi > 0) {
        uint64_t span = hi - lo + 1;
        delay += lo + (span ? rng_next(&app->rng) % span : rng_next(&app->rng));
    }
    if (delay == 0) {
        app_respond(c);
        return;
    }
    c->phase = PH_WAIT;
    timer_arm(c, T_DELAY, delay);
}

static void on_parse_error(struct app_conn *c)
{
    h1_error e = c->parser.error;
    const char *d = h1_error_details(e);
    char body[96];
    int len = snprintf(body, sizeof body, "%s\n", d);
    c->close_after = true;
    c->head_only = false;
    c->http10 = false;
    app_resp_text(c, (uint64_t)h1_error_status(e), body, (size_t)len);
    c->phase = PH_HEAD;
}

/* Keeps a catalog request's body (up to WF_CATALOG_MAX_BODY; beyond, it is cut and counted). */
static void catalog_body(struct app_conn *c)
{
    wf_strbuf *aux = &c->blk->aux;
    size_t n = c->parser.data_len;
    if (c->body_cut || aux->len - (size_t)c->arg + n > WF_CATALOG_MAX_BODY) {
        c->body_cut = true;
        return;
    }
    wf_strbuf_append(aux, c->parser.data, n);
}

/* One parser event; returns false when nothing more can be done now. */
static bool http_step(struct app_conn *c)
{
    h1_event ev;
    if (c->close_after || c->reset_after || !c->blk)
        return false;
    size_t n = h1_parse(&c->parser, c->blk->rbuf + c->roff, c->rlen - c->roff, &ev);
    c->roff += n;
    switch (ev) {
    case H1_EV_HEADERS:
        on_headers(c);
        return true;
    case H1_EV_BODY:
        c->body_bytes += c->parser.data_len;
        if (c->route == R_CATALOG)
            catalog_body(c);
        return true;
    case H1_EV_TRAILERS:
        return true;
    case H1_EV_DONE:
        on_done(c);
        return true;
    case H1_EV_ERROR:
        on_parse_error(c);
        return false;
    case H1_EV_UPGRADED:
        c->close_after = true;
        return false;
    case H1_EV_NEED_MORE:
    default:
        return false;
    }
}

/* ---- streaming ---- */

static bool stream_step(struct app_conn *c)
{
    struct wf_app *app = c->app;
    uint64_t left = c->stream_left;
    if (!c->stream_chunked && left) {
        size_t n = left < APP_PIECE ? (size_t)left : APP_PIECE;
        c->stream_left -= n;
        return app_conn_flush(c, app->pattern, n) >= 0;
    }
    if (c->stream_chunked && left >= APP_CHUNK) {
        uint64_t k = left / APP_CHUNK < APP_CHUNKS ? left / APP_CHUNK : APP_CHUNKS;
        c->stream_left -= k * APP_CHUNK;
        return app_conn_flush(c, app->chunks, (size_t)k * APP_CHUNK_FULL) >= 0;
    }
    if (c->stream_chunked && left) {
        wf_strbuf_printf(&c->blk->out, "%" PRIx64 "\r\n", left);
        c->stream_left = 0;
        c->stream_tail_crlf = true;
        return app_conn_flush(c, app->pattern, (size_t)left) >= 0;
    }
    if (c->stream_chunked && !c->stream_tail_sent) {
        if (c->stream_tail_crlf)
            PUTS(&c->blk->out, "\r\n");
        PUTS(&c->blk->out, "0\r\n\r\n");
        c->stream_tail_sent = true;
        return app_conn_flush(c, NULL, 0) >= 0;
    }
    c->phase = PH_HEAD;
    c->idle_since = uv_now(app->loop);
    return !c->reset_after; /* /reset: stop here, conn_pump resets */
}

/* ---- connection lifecycle ---- */

static void on_conn_closed(uv_handle_t *h)
{
    struct app_conn *c = h->data;
    if (--c->pending_closes > 0)
        return;
    if (c->blk)
        block_put(c->app, c->blk);
    free(c);
}

/* Closes the connection; with reset, the peer gets a TCP RST (SO_LINGER 0) instead of a FIN. */
static void conn_close_how(struct app_conn *c, bool reset)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->app->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->pending_closes = 2;
    if (!reset || uv_tcp_close_reset(&c->tcp, on_conn_closed) != 0)
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void conn_close(struct app_conn *c)
{
    conn_close_how(c, false);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct app_conn *c = h->data;
    *buf = uv_buf_init(NULL, 0);
    if (!c->blk) {
        c->blk = block_get(c->app);
        if (!c->blk)
            return; /* read_cb gets UV_ENOBUFS */
        c->parser.hdr_array = c->blk->hdrs;
        c->roff = c->rlen = 0;
    }
    if (c->phase == PH_LINGER)
        c->roff = c->rlen = 0;
    if (c->roff) {
        memmove(c->blk->rbuf, c->blk->rbuf + c->roff, c->rlen - c->roff);
        c->rlen -= c->roff;
        c->roff = 0;
    }
    if (c->rlen < APP_RBUF)
        *buf = uv_buf_init(c->blk->rbuf + c->rlen, (unsigned)(APP_RBUF - c->rlen));
}

static void conn_settle(struct app_conn *c);

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct app_conn *c = s->data;
    if (nread > 0) {
        c->rlen += (size_t)nread;
        if (c->phase == PH_LINGER)
            c->roff = c->rlen;
        conn_pump(c);
    } else if (nread < 0) {
        conn_close(c); /* EOF between or inside requests, reset, or no buffer */
    } else {
        conn_settle(c);
    }
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct app_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    c->writing = false;
    c->phase = PH_LINGER;
    timer_arm(c, T_LINGER, APP_LINGER_MS);
    if (!c->closing)
        conn_settle(c);
}

/* The answer that ends the connection is out: shut the write side, then linger. */
static void conn_finish(struct app_conn *c)
{
    c->req.shutdown.data = c;
    c->writing = true; /* no reads until the shutdown completes */
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    if (uv_shutdown(&c->req.shutdown, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        conn_close(c);
}

static void on_timer(uv_timer_t *t);

/* Starts the connection's single timer (idle, delay or linger); closes on failure. */
static void timer_arm(struct app_conn *c, enum app_timer mode, uint64_t ms)
{
    c->timer_mode = mode;
    if (uv_timer_start(&c->timer, on_timer, ms, 0) < 0)
        conn_close(c);
}

static void on_timer(uv_timer_t *t)
{
    struct app_conn *c = t->data;
    enum app_timer mode = c->timer_mode;
    uint64_t limit = c->app->cfg.idle_timeout_ms;
    c->timer_mode = T_NONE;
    if (mode == T_DELAY) {
        app_respond(c);
        conn_pump(c);
    } else if (mode == T_LINGER) {
        conn_close(c);
    } else if (mode == T_IDLE && c->phase == PH_HEAD && !c->writing) {
        uint64_t idle = uv_now(c->app->loop) - c->idle_since;
        if (idle >= limit)
            conn_close(c);
        else
            timer_arm(c, T_IDLE, limit - idle);
    } else if (mode == T_IDLE) {
        conn_settle(c);
    }
}

/* Gives back the block when idle, starts or stops reading, arms the idle timer. */
static void conn_settle(struct app_conn *c)
{
    bool at_rest = !c->writing && (c->phase == PH_HEAD || c->phase == PH_WS) &&
                   c->roff == c->rlen && !c->ws_in_frame;
    if (c->blk && at_rest && c->blk->out.len == 0) {
        block_put(c->app, c->blk);
        c->blk = NULL;
        c->parser.hdr_array = NULL;
        c->roff = c->rlen = 0;
    }
    bool want =
        !c->writing && (!c->close_after || c->phase == PH_LINGER) &&
        (c->phase == PH_HEAD || c->phase == PH_BODY || c->phase == PH_WS || c->phase == PH_LINGER);
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
            conn_close(c);
            return;
        }
        c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    uint64_t limit = c->app->cfg.idle_timeout_ms;
    if (limit && c->timer_mode == T_NONE && c->phase == PH_HEAD)
        timer_arm(c, T_IDLE, limit);
}

static void conn_pump(struct app_conn *c)
{
    while (!c->closing && !c->writing) {
        bool progress;
        if (c->phase == PH_WS)
            progress = app_ws_step(c);
        else if (c->phase == PH_STREAM)
            progress = stream_step(c);
        else if (c->phase == PH_HEAD || c->phase == PH_BODY)
            progress = http_step(c);
        else
            progress = false;
        if (!progress)
            break;
    }
    if (c->closing || (!c->writing && app_conn_flush(c, NULL, 0) < 0))
        return;
    if (!c->writing && c->reset_after && c->phase == PH_HEAD) {
        conn_close_how(c, true);
        return;
    }
    if (!c->writing && c->close_after && (c->phase == PH_HEAD || c->phase == PH_WS)) {
        conn_finish(c);
        return;
    }
    conn_settle(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct wf_app *app = server->data;
    if (status < 0)
        return;
    struct app_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->app = app;
    uv_tcp_init(app->loop, &c->tcp);
    uv_timer_init(app->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->next = app->conns;
    if (app->conns)
        app->conns->prev = c;
    app->conns = c;
    h1_parser_init(&c->parser, H1_REQUEST, NULL, APP_HDR_CAP, H1_DEFAULT_MAX_HEAD_BYTES);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->idle_since = uv_now(app->loop);
    conn_settle(c);
}

/* ---- listeners and the app ---- */

static void on_listener_closed(uv_handle_t *h)
{
    free(h);
}

int wf_app_parse_addr(const char *s, struct sockaddr_storage *out)
{
    char host[64];
    const char *colon;
    uint64_t port;
    bool v6 = s[0] == '[';
    if (v6) {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -1;
        colon = rb + 1;
        s++;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
    }
    size_t hl = (size_t)(colon - s) - (v6 ? 1 : 0);
    if (hl == 0 || hl >= sizeof host ||
        !wf_app_parse_u64(colon + 1, strlen(colon + 1), 65535, &port))
        return -1;
    memcpy(host, s, hl);
    host[hl] = '\0';
    memset(out, 0, sizeof *out);
    if (v6)
        return uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)out) ? -1 : 0;
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)out) ? -1 : 0;
}

static int format_bound(uv_tcp_t *t, char *bound, size_t boundlen)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[64];
    int r = uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len);
    if (r == 0)
        r = uv_ip_name((struct sockaddr *)&ss, ip, sizeof ip);
    if (r)
        return r;
    if (ss.ss_family == AF_INET6)
        snprintf(bound, boundlen, "[%s]:%d", ip, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
    else
        snprintf(bound, boundlen, "%s:%d", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    return 0;
}

int wf_app_listen(struct wf_app *app, const char *addr, char *bound, size_t boundlen)
{
    struct sockaddr_storage ss;
    if (wf_app_parse_addr(addr, &ss) != 0 || app->nlisteners >= WF_APP_MAX_LISTEN)
        return UV_EINVAL;
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t)
        return UV_ENOMEM;
    int r = uv_tcp_init(app->loop, t);
    if (r) {
        free(t);
        return r;
    }
    t->data = app;
    r = uv_tcp_bind(t, (const struct sockaddr *)&ss, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)t, 1024, on_connection);
    if (r == 0)
        r = format_bound(t, bound, boundlen);
    if (r) {
        uv_close((uv_handle_t *)t, on_listener_closed);
        return r;
    }
    app->listeners[app->nlisteners++] = t;
    return 0;
}

/* "x-weft-app: NAME\r\n" and "x-weft-pod: POD\r\n", as configured. */
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
    return app->fixed ? 0 : -1;
}

static void make_patterns(struct wf_app *app)
{
    static const char pat[] = WF_APP_PATTERN;
    for (size_t i = 0; i < APP_PIECE; i++)
        app->pattern[i] = pat[i % 64];
    for (size_t k = 0; k < APP_CHUNKS; k++) {
        char *p = app->chunks + k * APP_CHUNK_FULL;
        memcpy(p, "4000\r\n", APP_CHUNK_LINE);
        memcpy(p + APP_CHUNK_LINE, app->pattern, APP_CHUNK);
        memcpy(p + APP_CHUNK_LINE + APP_CHUNK, "\r\n", 2);
    }
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
        wf_catalog_free(app->catalog);
        free(app);
        return NULL;
    }
    make_patterns(app);
    return app;
}

void wf_app_stop(struct wf_app *app)
{
    for (size_t i = 0; i < app->nlisteners; i++)
        uv_close((uv_handle_t *)app->listeners[i], on_listener_closed);
    app->nlisteners = 0;
    while (app->conns)
        conn_close(app->conns);
}

void wf_app_free(struct wf_app *app)
{
    if (!app)
        return;
    while (app->free_blocks) {
        struct app_block *b = app->free_blocks;
        app->free_blocks = b->next;
        block_free(b);
    }
    wf_catalog_free(app->catalog);
    free(app->fixed);
    free(app);
}

uint64_t wf_app_request_count(const struct wf_app *app)
{
    return app->count;
}
