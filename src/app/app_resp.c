/*
 * app_resp.c - weft-app: routing a request path and producing the answers (app.h lists the
 * endpoints and what each answers).
 */
#include <inttypes.h>
#include <stdio.h>

#include "app/app_internal.h"
#include "app/catalog.h"

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

/* The head lines of a content type (then x-weft-app/pod/version). */
static const char *heads(struct app_conn *c, enum app_ctype t)
{
    return c->app->heads[t];
}

void app_resp_text(struct app_conn *c, uint64_t status, const char *body, size_t len)
{
    h1s_respond(c->hc, (int)status, NULL, heads(c, CT_TEXT), body, len);
}

static void resp_count(struct app_conn *c, uint64_t n)
{
    char body[48];
    int len = snprintf(body, sizeof body, "{\"requests\":%" PRIu64 "}", n);
    h1s_respond(c->hc, 200, NULL, heads(c, CT_JSON), body, (size_t)len);
}

static void resp_status(struct app_conn *c)
{
    uint64_t code = c->arg;
    if (code < 200 || code == 204 || code == 304) {
        if (code == 101)
            h1s_close_after(c->hc);
        h1s_respond(c->hc, (int)code, NULL, heads(c, CT_NONE), NULL, 0);
        return;
    }
    char body[32];
    int len = snprintf(body, sizeof body, "status %" PRIu64 "\n", code);
    app_resp_text(c, code, body, (size_t)len);
}

static void resp_echo(struct app_conn *c)
{
    wf_strbuf *aux = app_aux(c);
    char num[24];
    int len = snprintf(num, sizeof num, "%" PRIu64 "}", c->body_bytes);
    if (!aux || wf_strbuf_failed(aux)) {
        h1s_conn_close(c->hc); /* out of memory */
        return;
    }
    h1s_resp_head(c->hc, 200, NULL, heads(c, CT_JSON), (int64_t)(aux->len + (size_t)len));
    h1s_resp_write(c->hc, aux->data ? aux->data : "", aux->len);
    h1s_resp_write(c->hc, num, (size_t)len);
    h1s_resp_end(c->hc);
}

/* A JSON answer whose body is in *body (freed here); out of memory closes the connection. */
static void resp_json(struct app_conn *c, uint64_t status, wf_strbuf *body)
{
    if (wf_strbuf_failed(body))
        h1s_conn_close(c->hc);
    else
        h1s_respond(c->hc, (int)status, NULL, heads(c, CT_JSON), body->data ? body->data : "",
                    body->len);
    wf_strbuf_free(body);
}

/* aux holds "METHOD PATH" (c->arg bytes, kept at head time: the head's bytes in the read
 * buffer may be gone once the body was read) followed by the body. */
static void resp_catalog(struct app_conn *c)
{
    wf_strbuf body = WF_STRBUF_INIT;
    wf_strbuf fail = {.failed = true}, *aux = app_aux(c);
    if (!aux)
        aux = &fail;
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
    /* h1_server closes after answers to requests without keep-alive or with an upgrade
     * (except the 101 of /ws, which takes the connection over) */
    if (c->hangup || c->route == R_HANGUP) {
        app_aux_release(c);
        h1s_conn_close(c->hc);
        return;
    }
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
        app_stream_start(c, false);
        break;
    case R_CHUNKED:
        app_stream_start(c, true);
        break;
    case R_RESET:
        app_stream_reset(c);
        break;
    default:
        app_resp_text(c, 404, "not found\n", 10);
        break;
    }
    app_aux_release(c);
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
    wf_strbuf *a = app_aux(c);
    if (!a)
        return; /* answered by closing (resp_echo) */
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
