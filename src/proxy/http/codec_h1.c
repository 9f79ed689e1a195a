/*
 * codec_h1.c - the HTTP/1 codec (see codec.h for the Envoy behaviour followed): the server
 * side's dispatch over the request parser (http/h1_parser.h) and absolute-form targets, the
 * response and upstream request heads from header lists (status / request line, "name: value"
 * lines, framing fields), chunked bodies. All of the proxy's HTTP/1 wire text is here.
 */
#include "proxy/http/codec.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/h1_server.h"
#include "proxy/http/headers.h"

/* ---------- server side: decoding ---------- */

/* Both directions: the parser knows whether it reads requests or responses. */
static wp_codec_status dispatch(h1_parser *p, const char *data, size_t len,
                                const wp_codec_server_callbacks *cb, void *ctx)
{
    size_t off = 0;
    for (bool first = true;; first = false) {
        if (!first && !cb->should_continue(ctx))
            return WP_CODEC_PAUSED;
        h1_event ev;
        const char *base = data + off;
        size_t used = h1_parse(p, base, len - off, &ev);
        off += used;
        cb->on_consumed(ctx, used);
        switch (ev) {
        case H1_EV_NEED_MORE:
            return WP_CODEC_NEED_MORE;
        case H1_EV_HEADERS:
            cb->on_headers(ctx, &p->msg, base, used);
            break;
        case H1_EV_BODY:
            cb->on_data(ctx, p->data, p->data_len);
            break;
        case H1_EV_TRAILERS:
            cb->on_trailers(ctx, p->msg.trailers, p->msg.ntrailers);
            break;
        case H1_EV_DONE:
            cb->on_complete(ctx);
            break;
        case H1_EV_UPGRADED:
            cb->on_upgraded(ctx);
            return WP_CODEC_UPGRADED;
        case H1_EV_ERROR:
            cb->on_error(ctx, p->error);
            return WP_CODEC_ERROR;
        }
    }
}

wp_codec_status wp_h1_server_dispatch(h1_parser *p, const char *data, size_t len,
                                      const wp_codec_server_callbacks *cb, void *ctx)
{
    return dispatch(p, data, len, cb, ctx);
}

wp_codec_status wp_h1_client_dispatch(h1_parser *p, const char *data, size_t len,
                                      const wp_codec_client_callbacks *cb, void *ctx)
{
    return dispatch(p, data, len, cb, ctx);
}

void wp_h1_server_reserve_fields(h1_parser *p, size_t n_now)
{
    if (p->msg.nheaders < n_now) {
        p->hdr_cap += n_now - p->msg.nheaders;
        p->msg.nheaders = n_now;
    }
}

void wp_h1_rebase(h1_message *m, ptrdiff_t off)
{
    m->method.p += off;
    m->target.p += off;
    for (size_t i = 0; i < m->nheaders; i++) {
        m->headers[i].name.p += off;
        m->headers[i].value.p += off;
    }
}

int wp_h1_server_origin_form(h1_message *m, size_t cap)
{
    h1_str t = m->target;
    if (t.len && t.p[0] == '/')
        return 0; /* origin-form, nearly every request */
    size_t skip = 0;
    if (t.len >= 7 && strncasecmp(t.p, "http://", 7) == 0)
        skip = 7;
    else if (t.len >= 8 && strncasecmp(t.p, "https://", 8) == 0)
        skip = 8;
    if (!skip) {
        if (t.len && t.p[0] == '/')
            return 0;
        bool options_star = t.len == 1 && t.p[0] == '*' && m->method.len == 7 &&
                            memcmp(m->method.p, "OPTIONS", 7) == 0;
        return options_star ? 0 : -1;
    }
    const char *a = t.p + skip, *end = t.p + t.len, *q = a;
    while (q < end && *q != '/' && *q != '?' && *q != '#')
        q++;
    if (q == a || memchr(a, '@', (size_t)(q - a)))
        return -1; /* no authority, or userinfo (RFC 9110 §4.2.4) */
    h1_str authority = {a, (size_t)(q - a)};
    m->target = q < end && *q == '/' ? (h1_str){q, (size_t)(end - q)} : (h1_str){"/", 1};
    if (q < end && *q == '?') /* "http://a?x" -> "/?x" is not representable in place */
        return -1;
    h1_header *host = NULL;
    for (size_t i = 0; i < m->nheaders; i++)
        if (WP_NAME_IS(&m->headers[i].name, "host"))
            host = &m->headers[i];
    if (!host) {
        if (m->nheaders >= cap)
            return -1;
        host = &m->headers[m->nheaders++];
        host->name = (h1_str){"host", 4};
    }
    host->value = authority;
    return 0;
}

/* ---------- server side: encoding ---------- */

wp_h1_framing wp_h1_response_framing(int status, h1_framing framing, bool head_request,
                                     int version_minor)
{
    wp_h1_framing f = {0};
    f.upgrade = status == 101;
    f.bodiless = head_request || status == 204 || status == 304 || f.upgrade;
    if (!f.bodiless && framing != H1_BODY_LENGTH && framing != H1_BODY_NONE) {
        if (version_minor >= 1)
            f.chunked = true;
        else
            f.close = true;
    }
    return f;
}

#define PUT_LIT(b, s) wf_strbuf_append((b), (s), sizeof(s) - 1)

static void put_u64(wf_strbuf *b, uint64_t v)
{
    char tmp[WP_U64_STR_MAX];
    wf_strbuf_append(b, tmp, wp_u64_str(tmp, v));
}

static void put_field(wf_strbuf *b, const h1_header *h)
{
    wf_strbuf_append(b, h->name.p, h->name.len);
    PUT_LIT(b, ": ");
    wf_strbuf_append(b, h->value.p, h->value.len);
    PUT_LIT(b, "\r\n");
}

/* The "name: value" lines of l->e[from, to). The common case, room for all of them already
 * in b (a reused stream's buffer), checks the room once and writes the bytes in place. */
static void put_fields(wf_strbuf *b, const wp_hdr_list *l, size_t from, size_t to)
{
    size_t need = 0;
    for (size_t i = from; i < to; i++)
        need += l->e[i].name.len + l->e[i].value.len + 4;
    if (b->failed || b->len + need >= b->cap) {
        for (size_t i = from; i < to; i++)
            put_field(b, &l->e[i]);
        return;
    }
    char *p = b->data + b->len;
    for (size_t i = from; i < to; i++) {
        const h1_header *h = &l->e[i];
        memcpy(p, h->name.p, h->name.len);
        p += h->name.len;
        *p++ = ':';
        *p++ = ' ';
        memcpy(p, h->value.p, h->value.len);
        p += h->value.len;
        *p++ = '\r';
        *p++ = '\n';
    }
    *p = '\0';
    b->len = (size_t)(p - b->data);
}

/* Sorted by length first: most fields fail at the switch. */
bool wp_h1_response_field_replaced(const h1_str *n, bool upgrade)
{
    switch (n->len) {
    case 4:
        return WP_NAME_IS(n, "date");
    case 6:
        return WP_NAME_IS(n, "server");
    case 7:
        return !upgrade && WP_NAME_IS(n, "upgrade");
    case 10:
        return WP_NAME_IS(n, "connection") || WP_NAME_IS(n, "keep-alive");
    case 16:
        return WP_NAME_IS(n, "proxy-connection");
    case 17:
        return WP_NAME_IS(n, "transfer-encoding");
    case 29:
        return WP_NAME_IS(n, "x-envoy-upstream-service-time");
    default:
        return false;
    }
}

int wp_h1_encode_response_head(wf_strbuf *b, const wp_codec_response_head *h)
{
    const wp_hdr_list *l = h->hdrs;
    if (l->overflow || h->framing_at > l->n)
        return -1;
    PUT_LIT(b, "HTTP/1.1 ");
    put_u64(b, (uint64_t)h->status);
    wf_strbuf_putc(b, ' ');
    wf_strbuf_puts(b, h1s_reason(h->status));
    PUT_LIT(b, "\r\n");
    put_fields(b, l, 0, h->framing_at);
    if (h->framing.upgrade)
        PUT_LIT(b, "connection: upgrade\r\n");
    if (h->framing.chunked)
        PUT_LIT(b, "transfer-encoding: chunked\r\n");
    put_fields(b, l, h->framing_at, l->n);
    if (!h->framing.upgrade) {
        if (h->framing.close)
            PUT_LIT(b, "connection: close\r\n");
        else if (h->version_minor == 0)
            PUT_LIT(b, "connection: keep-alive\r\n");
    }
    PUT_LIT(b, "\r\n");
    return wf_strbuf_failed(b) ? -1 : 0;
}

/* ---------- client side: encoding ---------- */

bool wp_h1_request_field_hop_by_hop(const h1_str *n, bool upgrade)
{
    if (WP_NAME_IS(n, "connection") || WP_NAME_IS(n, "keep-alive") ||
        WP_NAME_IS(n, "proxy-connection") || WP_NAME_IS(n, "transfer-encoding") ||
        WP_NAME_IS(n, "content-length") || WP_NAME_IS(n, "expect") || WP_NAME_IS(n, "te"))
        return true;
    return !upgrade && WP_NAME_IS(n, "upgrade");
}

int wp_h1_encode_request_head(wf_strbuf *b, const wp_codec_request_head *h)
{
    if (h->hdrs->overflow)
        return -1;
    wf_strbuf_append(b, h->method.p, h->method.len);
    wf_strbuf_putc(b, ' ');
    wf_strbuf_append(b, h->path.p, h->path.len);
    PUT_LIT(b, " HTTP/1.1\r\n");
    put_fields(b, h->hdrs, 0, h->hdrs->n);
    if (h->framing == H1_BODY_LENGTH) {
        PUT_LIT(b, "content-length: ");
        put_u64(b, h->content_length);
        PUT_LIT(b, "\r\n");
    } else if (h->chunked) {
        PUT_LIT(b, "transfer-encoding: chunked\r\n");
    }
    if (h->upgrade)
        PUT_LIT(b, "connection: upgrade\r\n");
    PUT_LIT(b, "\r\n");
    return wf_strbuf_failed(b) ? -1 : 0;
}

bool wp_h1_request_head_view(const char *bytes, size_t len, h1_header *hdrs, size_t cap,
                             h1_message *m)
{
    h1_parser p;
    h1_parser_init(&p, H1_REQUEST, hdrs, cap, len + 1);
    h1_event ev;
    h1_parse(&p, bytes, len, &ev);
    if (ev != H1_EV_HEADERS)
        return false;
    *m = p.msg;
    return true;
}

/* ---------- chunked bodies ---------- */

size_t wp_h1_chunk_line(char line[WP_H1_CHUNK_LINE_MAX], size_t len)
{
    int n = snprintf(line, WP_H1_CHUNK_LINE_MAX, "%zx\r\n", len);
    return n > 0 ? (size_t)n : 0;
}

unsigned wp_h1_encode_data(uv_buf_t *bufs, bool chunked, char line[WP_H1_CHUNK_LINE_MAX],
                           const char *data, size_t len)
{
    if (!chunked) {
        bufs[0] = uv_buf_init((char *)data, (unsigned)len);
        return 1;
    }
    bufs[0] = uv_buf_init(line, (unsigned)wp_h1_chunk_line(line, len));
    bufs[1] = uv_buf_init((char *)data, (unsigned)len);
    bufs[2] = uv_buf_init("\r\n", 2);
    return 3;
}

unsigned wp_h1_encode_body(uv_buf_t *bufs, unsigned first, unsigned n, bool chunked, bool end,
                           char line[WP_H1_CHUNK_LINE_MAX])
{
    if (!chunked)
        return n;
    size_t len = 0;
    for (unsigned i = first; i < n; i++)
        len += bufs[i].len;
    if (len) {
        memmove(bufs + first + 1, bufs + first, (n - first) * sizeof(*bufs));
        bufs[first] = uv_buf_init(line, (unsigned)wp_h1_chunk_line(line, len));
        n++;
        bufs[n++] = uv_buf_init("\r\n", 2);
    }
    if (end)
        bufs[n++] = uv_buf_init(WP_H1_LAST_CHUNK, WP_H1_LAST_CHUNK_LEN);
    return n;
}

unsigned wp_h1_encode_end(uv_buf_t *bufs, bool chunked)
{
    if (!chunked)
        return 0;
    bufs[0] = uv_buf_init(WP_H1_LAST_CHUNK, WP_H1_LAST_CHUNK_LEN);
    return 1;
}
