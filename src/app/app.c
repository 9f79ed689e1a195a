/*
 * app.c - weft-app server (see app.h for the endpoints and their behaviour).
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
#include "app/app.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "app/catalog.h"
#include "core/strbuf.h"
#include "http/h1_parser.h"

#define APP_HDR_CAP    100           /* Envoy's default max_headers_count */
#define APP_RBUF       (64u * 1024u) /* read buffer: one whole head fits */
#define APP_PIECE      (64u * 1024u) /* streamed body piece (bytes per write) */
#define APP_CHUNK      (16u * 1024u) /* /chunked chunk size */
#define APP_CHUNK_LINE 6u            /* "4000\r\n" */
#define APP_CHUNK_FULL (APP_CHUNK_LINE + APP_CHUNK + 2u)
#define APP_CHUNKS     4u             /* full chunks per write */
#define APP_FREE_MAX   64u            /* blocks kept on the free list (about 4.4 MB) */
#define APP_OUT_KEEP   (256u * 1024u) /* larger output buffers are freed on release */
#define APP_LINGER_MS  2000u
#define APP_WS_GUID    "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct app_block {
    struct app_block *next;
    wf_strbuf out; /* answer bytes not yet written */
    wf_strbuf aux; /* /echo body prefix or the WebSocket accept value */
    h1_header hdrs[APP_HDR_CAP];
    char rbuf[APP_RBUF];
};

enum app_route {
    R_NOT_FOUND,
    R_HEALTHZ,
    R_STATUS,
    R_BAD_STATUS,
    R_DELAY,
    R_HANGUP,
    R_UPLOAD,
    R_BYTES,
    R_CHUNKED,
    R_ECHO,
    R_WS,
    R_BAD_WS,
    R_COUNT,
    R_COUNT_RESET,
    R_CATALOG, /* --catalog: /items, /items/{id}, /blowup (catalog.h) */
    R_FAULT,   /* --catalog: the blowup fault answers 500 */
};

enum app_phase {
    PH_HEAD,   /* between requests or reading a head */
    PH_BODY,   /* reading the body of the current request */
    PH_WAIT,   /* request read; answer delayed by the timer */
    PH_STREAM, /* streaming a /bytes or /chunked body */
    PH_WS,     /* WebSocket echo */
    PH_LINGER, /* write side shut; discarding input until EOF or the timer */
};

enum app_timer { T_NONE, T_IDLE, T_DELAY, T_LINGER };

struct app_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    union {
        uv_write_t write;
        uv_shutdown_t shutdown;
    } req;
    struct wf_app *app;
    struct app_conn *prev, *next;
    struct app_block *blk;
    size_t roff, rlen; /* unconsumed bytes: blk->rbuf[roff..rlen) */
    h1_parser parser;
    /* current request */
    enum app_route route;
    uint64_t arg; /* status code, delay ms or byte count */
    uint64_t body_bytes;
    uint64_t fault_delay_ms; /* --catalog: the blowup latency for this request */
    uint64_t idle_since;     /* loop time (ms) the last answer ended */
    uint64_t stream_left;
    uint64_t ws_left;
    uint32_t ws_pos;
    uint8_t ws_mask[4];
    enum app_phase phase;
    enum app_timer timer_mode;
    int pending_closes;
    bool head_only, keep_alive, http10, upgrade, hangup;
    bool stream_chunked, stream_tail_crlf, stream_tail_sent;
    bool ws_in_frame;
    bool body_cut; /* R_CATALOG: the body was longer than WF_CATALOG_MAX_BODY */
    bool writing, reading, close_after, closing;
};

struct wf_app {
    uv_loop_t *loop;
    struct wf_app_config cfg;
    uv_tcp_t *listeners[WF_APP_MAX_LISTEN];
    size_t nlisteners;
    struct app_conn *conns;
    struct app_block *free_blocks;
    size_t nfree;
    struct wf_catalog *catalog; /* --catalog, else NULL */
    char *fixed; /* preformatted "x-weft-app: ..\r\nx-weft-pod: ..\r\nx-weft-version: ..\r\n" */
    size_t fixed_len;
    uint64_t count;    /* /count */
    uint64_t received; /* all requests, for --hangup-first */
    uint64_t rng;
    char pattern[APP_PIECE];
    char chunks[APP_CHUNKS * APP_CHUNK_FULL]; /* preformatted full chunks */
};

static void conn_pump(struct app_conn *c);
static void conn_close(struct app_conn *c);
static void timer_arm(struct app_conn *c, enum app_timer mode, uint64_t ms);

/* ---- small helpers ---- */

static void put_u64(wf_strbuf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    wf_strbuf_append(b, tmp + i, sizeof tmp - i);
}

/* Appends a string literal (never a pointer: sizeof must see the array). */
#define PUTS(b, lit) wf_strbuf_append((b), "" lit, sizeof(lit) - 1)

static bool str_eq(h1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.p, lit, n) == 0;
}

static bool str_ieq(h1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && strncasecmp(s.p, lit, n) == 0;
}

bool wf_app_parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

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

static const char *reason_phrase(uint64_t code)
{
    static const struct {
        uint16_t code;
        const char *text;
    } tab[] = {
        {100, "Continue"},
        {101, "Switching Protocols"},
        {200, "OK"},
        {201, "Created"},
        {202, "Accepted"},
        {204, "No Content"},
        {206, "Partial Content"},
        {301, "Moved Permanently"},
        {302, "Found"},
        {304, "Not Modified"},
        {307, "Temporary Redirect"},
        {308, "Permanent Redirect"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {413, "Content Too Large"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].code == code)
            return tab[i].text;
    return "Unknown";
}

static void json_str(wf_strbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = 0;
    wf_strbuf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\')
            continue;
        wf_strbuf_append(b, s + start, i - start);
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            wf_strbuf_append(b, esc, 2);
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
            wf_strbuf_append(b, esc, 6);
        }
        start = i + 1;
    }
    wf_strbuf_append(b, s + start, n - start);
    wf_strbuf_putc(b, '"');
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
static int conn_flush(struct app_conn *c, const char *extra, size_t elen)
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

/* Status line and headers. clen: body length, or -1 for chunked, -2 for none. */
static void resp_head(struct app_conn *c, uint64_t status, const char *ctype, int64_t clen)
{
    wf_strbuf *o = &c->blk->out;
    PUTS(o, "HTTP/1.1 ");
    put_u64(o, status);
    wf_strbuf_putc(o, ' ');
    wf_strbuf_puts(o, reason_phrase(status));
    PUTS(o, "\r\n");
    if (clen >= 0) {
        PUTS(o, "Content-Length: ");
        put_u64(o, (uint64_t)clen);
        PUTS(o, "\r\n");
    } else if (clen == -1) {
        PUTS(o, "Transfer-Encoding: chunked\r\n");
    }
    if (ctype) {
        PUTS(o, "Content-Type: ");
        wf_strbuf_puts(o, ctype);
        PUTS(o, "\r\n");
    }
    wf_strbuf_append(o, c->app->fixed, c->app->fixed_len);
    if (c->close_after)
        PUTS(o, "Connection: close\r\n");
    else if (c->http10)
        PUTS(o, "Connection: keep-alive\r\n");
    PUTS(o, "\r\n");
}

static void resp_text(struct app_conn *c, uint64_t status, const char *body, size_t len)
{
    resp_head(c, status, "text/plain", (int64_t)len);
    if (!c->head_only)
        wf_strbuf_append(&c->blk->out, body, len);
}

static void resp_count(struct app_conn *c, uint64_t n)
{
    char body[48];
    int len = snprintf(body, sizeof body, "{\"requests\":%" PRIu64 "}", n);
    resp_head(c, 200, "application/json", len);
    if (!c->head_only)
        wf_strbuf_append(&c->blk->out, body, (size_t)len);
}

static void resp_status(struct app_conn *c)
{
    uint64_t code = c->arg;
    if (code < 200 || code == 204 || code == 304) {
        if (code == 101)
            c->close_after = true;
        resp_head(c, code, NULL, -2);
        return;
    }
    char body[32];
    int len = snprintf(body, sizeof body, "status %" PRIu64 "\n", code);
    resp_text(c, code, body, (size_t)len);
}

static void resp_echo(struct app_conn *c)
{
    wf_strbuf *aux = &c->blk->aux, *o = &c->blk->out;
    char num[24];
    int len = snprintf(num, sizeof num, "%" PRIu64 "}", c->body_bytes);
    if (wf_strbuf_failed(aux))
        o->failed = true; /* out of memory: conn_flush closes the connection */
    resp_head(c, 200, "application/json", (int64_t)(aux->len + (size_t)len));
    if (c->head_only)
        return;
    wf_strbuf_append(o, aux->data ? aux->data : "", aux->len);
    wf_strbuf_append(o, num, (size_t)len);
}

static void resp_ws(struct app_conn *c)
{
    wf_strbuf *o = &c->blk->out;
    if (wf_strbuf_failed(&c->blk->aux))
        o->failed = true;
    PUTS(o, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: ");
    wf_strbuf_append(o, c->blk->aux.data, c->blk->aux.len);
    PUTS(o, "\r\n");
    wf_strbuf_append(o, c->app->fixed, c->app->fixed_len);
    PUTS(o, "\r\n");
    c->phase = PH_WS;
    c->ws_in_frame = false;
}

static void stream_start(struct app_conn *c, bool chunked)
{
    bool use_chunked = chunked && !c->http10;
    resp_head(c, 200, "application/octet-stream", use_chunked ? -1 : (int64_t)c->arg);
    if (c->head_only)
        return;
    c->phase = PH_STREAM;
    c->stream_left = c->arg;
    c->stream_chunked = use_chunked;
    c->stream_tail_crlf = false;
    c->stream_tail_sent = false;
}

/* A JSON answer whose body is in *body (freed here); out of memory closes the connection. */
static void resp_json(struct app_conn *c, uint64_t status, wf_strbuf *body)
{
    if (wf_strbuf_failed(body))
        c->blk->out.failed = true; /* conn_flush closes the connection */
    resp_head(c, status, "application/json", (int64_t)body->len);
    if (!c->head_only)
        wf_strbuf_append(&c->blk->out, body->data ? body->data : "", body->len);
    wf_strbuf_free(body);
}

/* aux holds "METHOD PATH" (c->arg bytes, kept at head time: the head's bytes in the read
 * buffer may be gone once the body was read) followed by the body. */
static void resp_catalog(struct app_conn *c)
{
    wf_strbuf body = WF_STRBUF_INIT;
    wf_strbuf *aux = &c->blk->aux;
    const char *a = aux->data ? aux->data : "";
    size_t head = (size_t)c->arg, mlen = strcspn(a, " ");
    int status = mlen < head && !wf_strbuf_failed(aux)
                     ? wf_catalog_serve(c->app->catalog, a, mlen, a + mlen + 1, head - mlen - 1,
                                        a + head, aux->len - head, c->body_cut, &body)
                     : -1;
    if (status < 0)
        body.failed = true;
    resp_json(c, status < 0 ? 500 : (uint64_t)status, &body);
}

/* Produces the answer of the request just read. */
static void respond(struct app_conn *c)
{
    c->phase = PH_HEAD;
    /* the parser reports no keep-alive for any upgrade request: the connection becomes ours */
    if (c->route == R_WS ? c->hangup
                         : (!c->keep_alive || c->hangup || c->upgrade || c->route == R_HANGUP))
        c->close_after = true;
    if (c->hangup || c->route == R_HANGUP)
        return;
    switch (c->route) {
    case R_HEALTHZ:
        resp_text(c, 200, "ok", 2);
        break;
    case R_STATUS:
        resp_status(c);
        break;
    case R_BAD_STATUS:
        resp_text(c, 400, "bad status code\n", 16);
        break;
    case R_BAD_WS:
        resp_text(c, 400, "bad websocket handshake\n", 24);
        break;
    case R_WS:
        resp_ws(c);
        break;
    case R_ECHO:
        resp_echo(c);
        break;
    case R_COUNT:
        resp_count(c, c->app->count);
        break;
    case R_COUNT_RESET:
        resp_count(c, c->app->count);
        c->app->count = 0;
        break;
    case R_DELAY:
    case R_UPLOAD: {
        char body[48];
        int len = c->route == R_DELAY
                      ? snprintf(body, sizeof body, "delayed %" PRIu64 "\n", c->arg)
                      : snprintf(body, sizeof body, "received=%" PRIu64 "\n", c->body_bytes);
        resp_text(c, 200, body, (size_t)len);
        break;
    }
    case R_CATALOG:
        resp_catalog(c);
        break;
    case R_FAULT: {
        wf_strbuf body = WF_STRBUF_INIT;
        wf_catalog_fault_body(&body);
        resp_json(c, 500, &body);
        break;
    }
    case R_BYTES:
        stream_start(c, false);
        break;
    case R_CHUNKED:
        stream_start(c, true);
        break;
    default:
        resp_text(c, 404, "not found\n", 10);
        break;
    }
    if (c->phase == PH_HEAD)
        c->idle_since = uv_now(c->app->loop);
}

/* ---- routing ---- */

static enum app_route route_num(const char *rest, size_t n, uint64_t max, enum app_route ok,
                                enum app_route bad, uint64_t *arg)
{
    return wf_app_parse_u64(rest, n, max, arg) ? ok : bad;
}

static enum app_route route_path(const char *p, size_t n, uint64_t *arg)
{
#define IS(lit)     (n == sizeof(lit) - 1 && memcmp(p, lit, n) == 0)
#define PREFIX(lit) (n >= sizeof(lit) - 1 && memcmp(p, lit, sizeof(lit) - 1) == 0)
#define REST(lit)   p + sizeof(lit) - 1, n - (sizeof(lit) - 1)
    if (IS("/healthz"))
        return R_HEALTHZ;
    if (IS("/hangup"))
        return R_HANGUP;
    if (IS("/upload"))
        return R_UPLOAD;
    if (IS("/echo") || PREFIX("/echo/"))
        return R_ECHO;
    if (IS("/ws"))
        return R_WS;
    if (IS("/count"))
        return R_COUNT;
    if (IS("/count/reset"))
        return R_COUNT_RESET;
    if (PREFIX("/status/")) {
        enum app_route r = route_num(REST("/status/"), 599, R_STATUS, R_BAD_STATUS, arg);
        return r == R_STATUS && (*arg < 100 || (*arg < 200 && *arg != 101)) ? R_BAD_STATUS : r;
    }
    if (PREFIX("/delay/"))
        return route_num(REST("/delay/"), 1000000000ull, R_DELAY, R_NOT_FOUND, arg);
    if (PREFIX("/bytes/"))
        return route_num(REST("/bytes/"), 1ull << 50, R_BYTES, R_NOT_FOUND, arg);
    if (PREFIX("/chunked/"))
        return route_num(REST("/chunked/"), 1ull << 50, R_CHUNKED, R_NOT_FOUND, arg);
    return R_NOT_FOUND;
#undef IS
#undef PREFIX
#undef REST
}

/* The path of a request-target: absolute-form loses scheme and authority; the query goes. */
static h1_str target_path(h1_str t)
{
    const char *sep = memchr(t.p, ':', t.len);
    if (t.len && t.p[0] != '/' && sep && (size_t)(sep - t.p) + 2 < t.len && sep[1] == '/' &&
        sep[2] == '/') {
        const char *auth = sep + 3, *end = t.p + t.len;
        const char *slash = memchr(auth, '/', (size_t)(end - auth));
        t.p = slash ? slash : end;
        t.len = (size_t)(end - t.p);
    }
    const char *q = memchr(t.p, '?', t.len);
    if (q)
        t.len = (size_t)(q - t.p);
    return t;
}

static bool ws_handshake(struct app_conn *c, const h1_message *m)
{
    const h1_header *up = h1_find_header(m->headers, m->nheaders, "upgrade");
    const h1_header *key = h1_find_header(m->headers, m->nheaders, "sec-websocket-key");
    const h1_header *ver = h1_find_header(m->headers, m->nheaders, "sec-websocket-version");
    char accept[29];
    if (!m->upgrade || !str_eq(m->method, "GET") || !up || !str_ieq(up->value, "websocket") ||
        !key || key->value.len == 0 || key->value.len > 64 || !ver || !str_eq(ver->value, "13"))
        return false;
    if (wf_app_ws_accept(key->value.p, key->value.len, accept) != 0)
        return false;
    wf_strbuf_reset(&c->blk->aux);
    wf_strbuf_append(&c->blk->aux, accept, 28);
    return true;
}

static void echo_prefix(struct app_conn *c, const h1_message *m)
{
    wf_strbuf *a = &c->blk->aux;
    wf_strbuf_reset(a);
    PUTS(a, "{\"method\":");
    json_str(a, m->method.p, m->method.len);
    PUTS(a, ",\"path\":");
    json_str(a, m->target.p, m->target.len);
    wf_strbuf_puts(a, m->version_minor ? ",\"version\":\"HTTP/1.1\",\"headers\":["
                                       : ",\"version\":\"HTTP/1.0\",\"headers\":[");
    for (size_t i = 0; i < m->nheaders; i++) {
        wf_strbuf_puts(a, i ? ",[" : "[");
        json_str(a, m->headers[i].name.p, m->headers[i].name.len);
        wf_strbuf_putc(a, ',');
        json_str(a, m->headers[i].value.p, m->headers[i].value.len);
        wf_strbuf_putc(a, ']');
    }
    PUTS(a, "],\"body_bytes\":");
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
    respond(c);
    return 1;
}

static void on_headers(struct app_conn *c)
{
    struct wf_app *app = c->app;
    const h1_message *m = &c->parser.msg;
    h1_str path = target_path(m->target);
    c->route = route_path(path.p, path.len, &c->arg);
    c->hangup = ++app->received <= app->cfg.hangup_first;
    if (c->route != R_COUNT && c->route != R_COUNT_RESET)
        app->count++;
    c->head_only = str_eq(m->method, "HEAD");
    c->keep_alive = m->keep_alive;
    c->http10 = m->version_minor == 0;
    c->upgrade = m->upgrade;
    c->body_bytes = 0;
    if (c->route == R_WS && !ws_handshake(c, m))
        c->route = R_BAD_WS;
    if (c->route == R_ECHO)
        echo_prefix(c, m);
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
        respond(c);
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
    resp_text(c, (uint64_t)h1_error_status(e), body, (size_t)len);
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
    if (c->close_after || !c->blk)
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
        return conn_flush(c, app->pattern, n) >= 0;
    }
    if (c->stream_chunked && left >= APP_CHUNK) {
        uint64_t k = left / APP_CHUNK < APP_CHUNKS ? left / APP_CHUNK : APP_CHUNKS;
        c->stream_left -= k * APP_CHUNK;
        return conn_flush(c, app->chunks, (size_t)k * APP_CHUNK_FULL) >= 0;
    }
    if (c->stream_chunked && left) {
        wf_strbuf_printf(&c->blk->out, "%" PRIx64 "\r\n", left);
        c->stream_left = 0;
        c->stream_tail_crlf = true;
        return conn_flush(c, app->pattern, (size_t)left) >= 0;
    }
    if (c->stream_chunked && !c->stream_tail_sent) {
        if (c->stream_tail_crlf)
            PUTS(&c->blk->out, "\r\n");
        PUTS(&c->blk->out, "0\r\n\r\n");
        c->stream_tail_sent = true;
        return conn_flush(c, NULL, 0) >= 0;
    }
    c->phase = PH_HEAD;
    c->idle_since = uv_now(app->loop);
    return true;
}

/* ---- WebSocket (RFC 6455 §5) ---- */

static void ws_frame_head(wf_strbuf *o, uint8_t b0, uint64_t len)
{
    uint8_t h[10];
    size_t n = 2;
    h[0] = b0;
    if (len < 126) {
        h[1] = (uint8_t)len;
    } else if (len <= 0xffff) {
        h[1] = 126;
        h[2] = (uint8_t)(len >> 8);
        h[3] = (uint8_t)len;
        n = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    wf_strbuf_append(o, (const char *)h, n);
}

static void ws_fail(struct app_conn *c)
{
    static const char close1002[] = {(char)0x88, 2, 0x03, (char)0xea};
    wf_strbuf_append(&c->blk->out, close1002, sizeof close1002);
    c->close_after = true;
}

static void ws_unmask(struct app_conn *c, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= c->ws_mask[(c->ws_pos + i) & 3];
    c->ws_pos += (uint32_t)n;
}

/* Control frame (whole, payload p[0..n) unmasked): ping -> pong, close -> close. */
static void ws_control(struct app_conn *c, uint8_t op, uint8_t *p, size_t n)
{
    if (op == 0x9 || op == 0x8) {
        ws_frame_head(&c->blk->out, (uint8_t)(0x80 | (op == 0x9 ? 0xA : 0x8)), n);
        wf_strbuf_append(&c->blk->out, (const char *)p, n);
    }
    if (op == 0x8)
        c->close_after = true;
}

/* Parses a frame header at the read position; returns false when more bytes are needed. */
static bool ws_frame_start(struct app_conn *c)
{
    uint8_t *p = (uint8_t *)c->blk->rbuf + c->roff;
    size_t avail = c->rlen - c->roff, hl = 2;
    if (avail < 2)
        return false;
    uint8_t op = p[0] & 0x0f, len7 = p[1] & 0x7f;
    bool control = op >= 0x8;
    /* RSV bits unset (no extension negotiated), client frames masked, known opcodes,
     * control frames final and short (RFC 6455 §5.2, §5.5) */
    if ((p[0] & 0x70) || !(p[1] & 0x80) || (op > 0x2 && op < 0x8) || op > 0xA ||
        (control && (!(p[0] & 0x80) || len7 > 125))) {
        ws_fail(c);
        return true;
    }
    hl += (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4;
    if (avail < hl)
        return false;
    uint64_t len = hl > 6 ? 0 : len7; /* extended lengths replace the 7 bits */
    for (size_t i = 2; i < hl - 4; i++)
        len = (len << 8) | p[i];
    if (len >> 63) {
        ws_fail(c);
        return true;
    }
    if (control && avail < hl + len)
        return false;
    memcpy(c->ws_mask, p + hl - 4, 4);
    c->ws_pos = 0;
    c->roff += hl;
    if (control) {
        ws_unmask(c, p + hl, (size_t)len);
        c->roff += (size_t)len;
        ws_control(c, op, p + hl, (size_t)len);
        return true;
    }
    ws_frame_head(&c->blk->out, p[0], len);
    c->ws_in_frame = true;
    c->ws_left = len;
    return true;
}

static bool ws_step(struct app_conn *c)
{
    if (c->close_after || !c->blk)
        return false;
    if (!c->ws_in_frame)
        return ws_frame_start(c);
    size_t avail = c->rlen - c->roff;
    size_t n = c->ws_left < avail ? (size_t)c->ws_left : avail;
    if (n == 0 && c->ws_left)
        return false;
    char *p = c->blk->rbuf + c->roff;
    ws_unmask(c, (uint8_t *)p, n);
    c->roff += n;
    c->ws_left -= n;
    c->ws_in_frame = c->ws_left > 0;
    return conn_flush(c, p, n) >= 0;
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

static void conn_close(struct app_conn *c)
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
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
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
        respond(c);
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
            progress = ws_step(c);
        else if (c->phase == PH_STREAM)
            progress = stream_step(c);
        else if (c->phase == PH_HEAD || c->phase == PH_BODY)
            progress = http_step(c);
        else
            progress = false;
        if (!progress)
            break;
    }
    if (c->closing || (!c->writing && conn_flush(c, NULL, 0) < 0))
        return;
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

int wf_app_ws_accept(const char *key, size_t key_len, char out[29])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char buf[64 + sizeof APP_WS_GUID];
    if (key_len > 64)
        return -1;
    memcpy(buf, key, key_len);
    memcpy(buf + key_len, APP_WS_GUID, sizeof APP_WS_GUID - 1);
    if (!EVP_Digest(buf, key_len + sizeof APP_WS_GUID - 1, md, &mdlen, EVP_sha1(), NULL) ||
        mdlen != 20)
        return -1;
    return EVP_EncodeBlock((unsigned char *)out, md, 20) == 28 ? 0 : -1;
}
