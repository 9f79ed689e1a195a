#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(wf_strbuf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)1 << 40)) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void wf_strbuf_append_slow(wf_strbuf *b, const char *s, size_t len)
{
    if (!grow(b, len))
        return;
    if (len)
        memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void wf_strbuf_puts(wf_strbuf *b, const char *s)
{
    wf_strbuf_append(b, s, strlen(s));
}

void wf_strbuf_putc(wf_strbuf *b, char c)
{
    wf_strbuf_append(b, &c, 1);
}

void wf_strbuf_printf(wf_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *wf_strbuf_cstr(const wf_strbuf *b)
{
    return b->data ? b->data : "";
}

void wf_strbuf_reset(wf_strbuf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *wf_strbuf_take(wf_strbuf *b)
{
    if (b->failed) {
        wf_strbuf_free(b);
        return NULL;
    }
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void wf_strbuf_free(wf_strbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

int wf_strbuf_read_stream(wf_strbuf *b, FILE *f)
{
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        wf_strbuf_append(b, buf, n);
    return ferror(f) || wf_strbuf_failed(b) ? -1 : 0;
}
