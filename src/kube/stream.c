/*
 * stream.c - incremental chunked decoding and line splitting of watch bodies (stream.h).
 */
#include "kube/stream.h"

#include <string.h>

enum { CH_SIZE = 0, CH_DATA, CH_DATA_CRLF, CH_TRAILER, CH_DONE };

/* Appends c to the size/trailer line; returns 1 when the line is complete (LF seen). */
static int line_byte(wf_kube_chunked *d, char c, wf_strbuf *why)
{
    if (c == '\n') {
        if (d->line_len > 0 && d->line[d->line_len - 1] == '\r')
            d->line_len--;
        d->line[d->line_len] = '\0';
        return 1;
    }
    if (d->line_len + 2 >= sizeof d->line) {
        if (d->state == CH_TRAILER) /* a long trailer line: skip its bytes */
            return 0;
        wf_strbuf_puts(why, "chunked body: chunk-size line too long");
        return -1;
    }
    d->line[d->line_len++] = c;
    return 0;
}

static int size_line(wf_kube_chunked *d, wf_strbuf *why)
{
    size_t v = 0, i = 0;
    for (; d->line[i]; i++) {
        char c = d->line[i];
        int x = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (x < 0)
            break;
        if (v > (WF_KUBE_MAX_EVENT * 4u)) {
            wf_strbuf_puts(why, "chunked body: chunk too large");
            return -1;
        }
        v = v * 16 + (size_t)x;
    }
    size_t j = i;
    while (d->line[j] == ' ' || d->line[j] == '\t') /* BWS before a chunk extension */
        j++;
    if (i == 0 || (d->line[j] && d->line[j] != ';')) {
        wf_strbuf_printf(why, "chunked body: bad chunk-size line \"%s\"", d->line);
        return -1;
    }
    d->left = v;
    d->state = v ? CH_DATA : CH_TRAILER;
    return 0;
}

long wf_kube_chunked_feed(wf_kube_chunked *d, const char *in, size_t n, wf_strbuf *out,
                          wf_strbuf *why)
{
    size_t i = 0;
    while (i < n && d->state != CH_DONE) {
        if (d->state == CH_DATA) {
            size_t take = n - i < d->left ? n - i : d->left;
            wf_strbuf_append(out, in + i, take);
            if (wf_strbuf_failed(out)) {
                wf_strbuf_puts(why, "out of memory");
                return -1;
            }
            i += take;
            d->left -= take;
            if (d->left == 0) {
                d->state = CH_DATA_CRLF;
                d->line_len = 0;
            }
            continue;
        }
        if (d->state == CH_DATA_CRLF && in[i] != '\r' && in[i] != '\n') {
            wf_strbuf_puts(why, "chunked body: chunk data not followed by CRLF");
            return -1;
        }
        int r = line_byte(d, in[i++], why);
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        if (d->state == CH_SIZE) {
            if (size_line(d, why) != 0)
                return -1;
        } else if (d->state == CH_DATA_CRLF) {
            if (d->line_len != 0) {
                wf_strbuf_puts(why, "chunked body: chunk data not followed by CRLF");
                return -1;
            }
            d->state = CH_SIZE;
        } else if (d->state == CH_TRAILER && d->line_len == 0) {
            d->state = CH_DONE;
            d->done = true;
        }
        d->line_len = 0;
    }
    return (long)i;
}

int wf_kube_lines_push(wf_kube_lines *l, const char *p, size_t n, wf_strbuf *why)
{
    if (l->pos > 0 && l->pos == l->buf.len) {
        wf_strbuf_reset(&l->buf);
        l->pos = 0;
    } else if (l->pos > 65536 && l->pos * 2 > l->buf.len) {
        memmove(l->buf.data, l->buf.data + l->pos, l->buf.len - l->pos);
        l->buf.len -= l->pos;
        l->buf.data[l->buf.len] = '\0';
        l->pos = 0;
    }
    wf_strbuf_append(&l->buf, p, n);
    if (wf_strbuf_failed(&l->buf)) {
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    if (l->buf.len - l->pos > WF_KUBE_MAX_EVENT &&
        !memchr(l->buf.data + l->pos, '\n', l->buf.len - l->pos)) {
        wf_strbuf_printf(why, "watch event longer than %u bytes", WF_KUBE_MAX_EVENT);
        return -1;
    }
    return 0;
}

long wf_kube_lines_pop(wf_kube_lines *l, const char **line)
{
    while (l->pos < l->buf.len) {
        char *s = l->buf.data + l->pos;
        char *nl = memchr(s, '\n', l->buf.len - l->pos);
        if (!nl)
            return -1;
        size_t n = (size_t)(nl - s);
        l->pos += n + 1;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        s[n] = '\0';
        *line = s;
        return (long)n;
    }
    return -1;
}

size_t wf_kube_lines_pending(const wf_kube_lines *l)
{
    return l->buf.len - l->pos;
}

void wf_kube_lines_free(wf_kube_lines *l)
{
    wf_strbuf_free(&l->buf);
    l->pos = 0;
}
