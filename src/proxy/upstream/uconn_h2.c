/*
 * uconn_h2.c - HTTP/1.1 <-> HTTP/2 translations of an upstream stream (see uconn_h2.h).
 */
#include "proxy/upstream/uconn_h2.h"

#include <stdio.h>
#include <string.h>

#include "http/h1_server.h"

static bool ieq(h1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && h1_ieq(s.p, lit, n);
}

/* Fields HTTP/2 forbids (RFC 9113 §8.2.2) or that the pseudo-fields carry. */
static bool dropped(const h1_header *h)
{
    if (ieq(h->name, "te"))
        return !ieq(h->value, "trailers");
    return ieq(h->name, "connection") || ieq(h->name, "keep-alive") ||
           ieq(h->name, "proxy-connection") || ieq(h->name, "transfer-encoding") ||
           ieq(h->name, "upgrade") || ieq(h->name, "host");
}

long wp_h2up_request_fields(const h1_message *m, bool scheme_tls, wp_h2up_field *out, size_t cap,
                            wf_strbuf *names)
{
    const h1_header *host = h1_find_header(m->headers, m->nheaders, "host");
    const h1_header *xfp = h1_find_header(m->headers, m->nheaders, "x-forwarded-proto");
    if (!host || !m->target.len || cap < 4)
        return -1;
    const char *scheme = scheme_tls ? "https" : "http";
    if (xfp && (ieq(xfp->value, "http") || ieq(xfp->value, "https")))
        scheme = ieq(xfp->value, "https") ? "https" : "http";
    size_t k = 0;
    out[k++] = (wp_h2up_field){":method", m->method.p, 7, m->method.len};
    out[k++] = (wp_h2up_field){":scheme", scheme, 7, strlen(scheme)};
    out[k++] = (wp_h2up_field){":authority", host->value.p, 10, host->value.len};
    out[k++] = (wp_h2up_field){":path", m->target.p, 5, m->target.len};
    names->len = 0;
    for (size_t i = 0; i < m->nheaders; i++)
        if (!dropped(&m->headers[i]))
            wf_strbuf_append(names, m->headers[i].name.p, m->headers[i].name.len);
    if (wf_strbuf_failed(names))
        return -1;
    size_t at = 0;
    for (size_t i = 0; i < m->nheaders; i++) {
        const h1_header *h = &m->headers[i];
        if (dropped(h))
            continue;
        if (k == cap)
            return -1;
        char *nm = names->data + at;
        for (size_t j = 0; j < h->name.len; j++)
            nm[j] = (char)h1_lower((unsigned char)nm[j]);
        out[k++] = (wp_h2up_field){nm, h->value.p, h->name.len, h->value.len};
        at += h->name.len;
    }
    return (long)k;
}

int wp_h2up_response_head(int status, const h1_header *f, size_t n, bool end_stream, bool no_body,
                          wf_strbuf *out, bool *chunked)
{
    wf_strbuf_printf(out, "HTTP/1.1 %d %s\r\n", status, h1s_reason(status));
    bool has_cl = false;
    for (size_t i = 0; i < n; i++) {
        if (ieq(f[i].name, "transfer-encoding") || ieq(f[i].name, "connection"))
            continue;
        has_cl = has_cl || ieq(f[i].name, "content-length");
        wf_strbuf_append(out, f[i].name.p, f[i].name.len);
        wf_strbuf_append(out, ": ", 2);
        wf_strbuf_append(out, f[i].value.p, f[i].value.len);
        wf_strbuf_append(out, "\r\n", 2);
    }
    bool bodiless = status == 204 || status == 304 || (status >= 100 && status < 200);
    *chunked = false;
    if (!has_cl && !bodiless && !no_body) {
        if (end_stream)
            wf_strbuf_puts(out, "content-length: 0\r\n");
        else {
            wf_strbuf_puts(out, "transfer-encoding: chunked\r\n");
            *chunked = true;
        }
    }
    wf_strbuf_append(out, "\r\n", 2);
    return wf_strbuf_failed(out) ? -1 : 0;
}

void wp_h2up_chunk(wf_strbuf *out, bool chunked, const char *data, size_t len)
{
    if (!len)
        return;
    if (chunked)
        wf_strbuf_printf(out, "%zx\r\n", len);
    wf_strbuf_append(out, data, len);
    if (chunked)
        wf_strbuf_append(out, "\r\n", 2);
}

void wp_h2up_end(wf_strbuf *out, const h1_header *t, size_t n)
{
    wf_strbuf_append(out, "0\r\n", 3);
    for (size_t i = 0; i < n; i++) {
        wf_strbuf_append(out, t[i].name.p, t[i].name.len);
        wf_strbuf_append(out, ": ", 2);
        wf_strbuf_append(out, t[i].value.p, t[i].value.len);
        wf_strbuf_append(out, "\r\n", 2);
    }
    wf_strbuf_append(out, "\r\n", 2);
}
