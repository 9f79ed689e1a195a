/*
 * app_resp.c - weft-app: routing a request path and producing the answers (app.h lists the
 * endpoints and what each answers).
 */
#include <inttypes.h>
#include <stdio.h>

#include "app/app_internal.h"
#include "app/catalog.h"

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

void app_resp_text(struct app_conn *c, uint64_t status, const char *body, size_t len)
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
    app_resp_text(c, code, body, (size_t)len);
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

/* /reset/<n>: the head of a 2n-byte answer and n bytes of it; app.c resets the connection
 * once they are written (c->reset_after). */
static void resp_reset(struct app_conn *c)
{
    resp_head(c, 200, "application/octet-stream", (int64_t)(2 * c->arg));
    c->reset_after = true;
    if (c->head_only)
        return;
    c->phase = PH_STREAM;
    c->stream_left = c->arg;
    c->stream_chunked = false;
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
void app_respond(struct app_conn *c)
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
        app_resp_text(c, 200, "ok", 2);
        break;
    case R_STATUS:
        resp_status(c);
        break;
    case R_BAD_STATUS:
        app_resp_text(c, 400, "bad status code\n", 16);
        break;
    case R_BAD_WS:
        app_resp_text(c, 400, "bad websocket handshake\n", 24);
        break;
    case R_WS:
        app_resp_ws(c);
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
        app_resp_text(c, 200, body, (size_t)len);
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
    case R_RESET:
        resp_reset(c);
        break;
    default:
        app_resp_text(c, 404, "not found\n", 10);
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

enum app_route app_route_path(const char *p, size_t n, uint64_t *arg)
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
    if (PREFIX("/reset/"))
        return route_num(REST("/reset/"), 1ull << 40, R_RESET, R_NOT_FOUND, arg);
    return R_NOT_FOUND;
#undef IS
#undef PREFIX
#undef REST
}

/* The path of a request-target: absolute-form loses scheme and authority; the query goes. */
h1_str app_target_path(h1_str t)
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

void app_echo_prefix(struct app_conn *c, const h1_message *m)
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
