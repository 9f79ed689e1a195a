/*
 * http_inspector.c - envoy.filters.listener.http_inspector (http_inspector.h): the request-line
 * classifier and the filter.
 */
#include "proxy/filters/listener/http_inspector.h"

#include <stdbool.h>
#include <string.h>

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; /* 24 bytes */
#define PREFACE_LEN (sizeof(PREFACE) - 1)

/* RFC 9110 tchar (Balsa's kValidCharacters). */
static bool tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* http-parser's path and query characters. */
static bool path_char(unsigned char c)
{
    return c == 9 || c == 12 || (c >= '!' && c <= 126);
}

static bool host_char(unsigned char c)
{
    return alpha(c) || digit(c) || (c && strchr("!$%&'()*+,-.:;=@[]_~", c));
}

/* Balsa's isUrlValid: never empty; "/..." or "*..." (path chars after the first); else, unless
 * CONNECT, a scheme "alpha *(alpha / digit / + - .)" and "://"; then host chars (no "@@") up to
 * the first '/' or '?', path chars after. */
static bool url_valid(const unsigned char *u, size_t n, bool connect)
{
    if (n == 0)
        return false;
    size_t i = 0;
    if (u[0] == '/' || u[0] == '*') {
        for (i = 1; i < n; i++)
            if (!path_char(u[i]))
                return false;
        return true;
    }
    if (!connect) {
        if (!alpha(u[0]))
            return false;
        for (i = 1; i < n && (alpha(u[i]) || digit(u[i]) || strchr("+-.", u[i])); i++)
            ;
        if (n - i < 3 || memcmp(u + i, "://", 3) != 0)
            return false;
        i += 3;
    }
    for (; i < n && u[i] != '/' && u[i] != '?'; i++)
        if (!host_char(u[i]) || (u[i] == '@' && i + 1 < n && u[i + 1] == '@'))
            return false;
    for (; i < n; i++)
        if (!path_char(u[i]))
            return false;
    return true;
}

/* Balsa's isVersionValid: empty (HTTP/0.9) or "HTTP/d.d". */
static bool version_valid(const unsigned char *v, size_t n)
{
    return n == 0 ||
           (n == 8 && memcmp(v, "HTTP/", 5) == 0 && digit(v[5]) && v[6] == '.' && digit(v[7]));
}

/* One island: skips bytes <= ' ', then takes the bytes > ' '. */
static size_t island(const unsigned char *l, size_t n, size_t *at, size_t *len)
{
    size_t i = *at;
    while (i < n && l[i] <= ' ')
        i++;
    size_t start = i;
    while (i < n && l[i] > ' ')
        i++;
    *len = i - start;
    *at = i;
    return start;
}

/* The request line l[0, n) (without its '\n'). */
static wp_http_inspect_result request_line(const unsigned char *l, size_t n)
{
    while (n > 0 && l[n - 1] <= ' ') /* Balsa trims what follows the last island */
        n--;
    size_t at = 0, mlen, ulen;
    size_t m = island(l, n, &at, &mlen);
    size_t u = island(l, n, &at, &ulen);
    while (at < n && l[at] <= ' ')
        at++;
    const unsigned char *v = l + at; /* the rest of the line: the version */
    size_t vlen = n - at;
    if (mlen == 0)
        return WP_HI_NOT_HTTP;
    for (size_t i = 0; i < mlen; i++)
        if (!tchar(l[m + i]))
            return WP_HI_NOT_HTTP;
    bool connect = mlen == 7 && memcmp(l + m, "CONNECT", 7) == 0;
    if (!url_valid(l + u, ulen, connect) || !version_valid(v, vlen))
        return WP_HI_NOT_HTTP;
    return n >= 8 && memcmp(l + n - 8, "HTTP/1.1", 8) == 0 ? WP_HI_HTTP11 : WP_HI_HTTP10;
}

wp_http_inspect_result wp_http_inspect(const unsigned char *data, size_t len)
{
    if (len == 0)
        return WP_HI_NEED_MORE;
    size_t k = len < PREFACE_LEN ? len : PREFACE_LEN;
    if (memcmp(data, PREFACE, k) == 0)
        return len < PREFACE_LEN ? WP_HI_NEED_MORE : WP_HI_HTTP2;
    if (data[0] == '\r' || data[0] == '\n')
        return WP_HI_NOT_HTTP;
    const unsigned char *nl = memchr(data, '\n', len);
    if (!nl)
        return WP_HI_NEED_MORE;
    return request_line(data, (size_t)(nl - data));
}

/* ---------- the filter ---------- */

static wp_lf_status on_accept(const void *self, wp_lf_callbacks *cb)
{
    (void)self;
    const char *tp = wp_lf_transport_protocol(cb->socket);
    if (tp[0] && strcmp(tp, "raw_buffer") != 0)
        return WP_LF_CONTINUE; /* "cannot inspect http protocol with transport socket" */
    return WP_LF_STOP_ITERATION;
}

static void count(const wp_lf_callbacks *cb, uint32_t slot)
{
    if (cb->stats)
        wp_stat_add((wp_stats_shard *)cb->stats, slot, 1);
}

static wp_lf_status on_data(const void *self, wp_lf_callbacks *cb, const unsigned char *data,
                            size_t len)
{
    const wp_http_inspector *f = self;
    const char *proto = NULL;
    switch (wp_http_inspect(data, len)) {
    case WP_HI_NEED_MORE:
        if (len < WP_HTTP_INSPECTOR_MAX)
            return WP_LF_STOP_ITERATION;
        count(cb, f->st_read_error);
        return WP_LF_FAILED;
    case WP_HI_NOT_HTTP:
        count(cb, f->st_http_not_found);
        return WP_LF_CONTINUE;
    case WP_HI_HTTP2:
        count(cb, f->st_http2_found);
        proto = "h2c";
        break;
    case WP_HI_HTTP11:
        count(cb, f->st_http11_found);
        proto = "http/1.1";
        break;
    case WP_HI_HTTP10:
        count(cb, f->st_http10_found);
        proto = "http/1.0";
        break;
    }
    const char *const protos[] = {proto};
    if (wp_lf_set_application_protocols(cb->socket, protos, 1) != 0)
        return WP_LF_FAILED; /* out of memory */
    return WP_LF_CONTINUE;
}

static size_t max_read_bytes(const void *self)
{
    (void)self;
    return WP_HTTP_INSPECTOR_MAX;
}

const wp_listener_filter_ops wp_http_inspector_ops = {
    .name = WP_HTTP_INSPECTOR_NAME,
    .on_accept = on_accept,
    .on_data = on_data,
    .max_read_bytes = max_read_bytes,
};

int wp_http_inspector_register_stats(wp_stats *st, const wp_config *c)
{
    for (size_t i = 0; i < c->nlisteners; i++) {
        const wp_listener *l = &c->listeners[i];
        for (size_t k = 0; k < l->nlistener_filters; k++) {
            if (l->listener_filters[k].ops != &wp_http_inspector_ops)
                continue;
            /* the filter's stat slots are the mutable part of its config */
            wp_http_inspector *f = (wp_http_inspector *)(uintptr_t)l->listener_filters[k].config;
            f->st_read_error = wp_stats_counter(st, "http_inspector.read_error");
            f->st_http10_found = wp_stats_counter(st, "http_inspector.http10_found");
            f->st_http11_found = wp_stats_counter(st, "http_inspector.http11_found");
            f->st_http2_found = wp_stats_counter(st, "http_inspector.http2_found");
            f->st_http_not_found = wp_stats_counter(st, "http_inspector.http_not_found");
            if (f->st_read_error == WP_STAT_INVALID || f->st_http10_found == WP_STAT_INVALID ||
                f->st_http11_found == WP_STAT_INVALID || f->st_http2_found == WP_STAT_INVALID ||
                f->st_http_not_found == WP_STAT_INVALID)
                return -1;
        }
    }
    return 0;
}
