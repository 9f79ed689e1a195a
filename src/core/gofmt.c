/*
 * gofmt.c - Go's strconv.Quote and time.ParseDuration (see gofmt.h).
 */
#include "core/gofmt.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Decode one UTF-8 sequence at s; returns its length (1 for an invalid byte, *cp = -1). */
static size_t utf8_next(const unsigned char *s, long *cp)
{
    unsigned c = s[0];
    size_t n = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (n == 0) {
        *cp = -1;
        return 1;
    }
    long v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

void wf_go_quote(wf_strbuf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    wf_strbuf_putc(out, '"');
    while (*p) {
        long cp;
        size_t n = utf8_next(p, &cp);
        if (cp < 0) {
            wf_strbuf_printf(out, "\\x%02x", *p);
        } else if (cp == '"' || cp == '\\') {
            wf_strbuf_putc(out, '\\');
            wf_strbuf_putc(out, (char)cp);
        } else if (cp == '\n') {
            wf_strbuf_puts(out, "\\n");
        } else if (cp == '\t') {
            wf_strbuf_puts(out, "\\t");
        } else if (cp == '\r') {
            wf_strbuf_puts(out, "\\r");
        } else if (cp == '\a') {
            wf_strbuf_puts(out, "\\a");
        } else if (cp == '\b') {
            wf_strbuf_puts(out, "\\b");
        } else if (cp == '\f') {
            wf_strbuf_puts(out, "\\f");
        } else if (cp == '\v') {
            wf_strbuf_puts(out, "\\v");
        } else if (cp < 0x20 || cp == 0x7F) {
            wf_strbuf_printf(out, "\\x%02lx", cp);
        } else {
            wf_strbuf_append(out, (const char *)p, n);
        }
        p += n;
    }
    wf_strbuf_putc(out, '"');
}

/* ---- time.ParseDuration ---- */

typedef struct dur_unit {
    const char *name;
    uint64_t ns;
} dur_unit;

static const dur_unit units[] = {
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"\xc2\xb5s", 1000ULL}, /* U+00B5 */
    {"\xce\xbcs", 1000ULL}, /* U+03BC */
    {"ms", 1000000ULL},
    {"s", 1000000000ULL},
    {"m", 60ULL * 1000000000ULL},
    {"h", 3600ULL * 1000000000ULL},
};

static int dur_fail(wf_strbuf *err, const char *fmt, const char *a, const char *b)
{
    if (!err)
        return -1;
    /* fmt holds one or two "%q" markers, filled with a and b Go-quoted */
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '%' && p[1] == 'q') {
            wf_go_quote(err, a);
            a = b;
            p++;
        } else {
            wf_strbuf_putc(err, *p);
        }
    }
    return -1;
}

static bool dur_unit_lookup(const char *u, size_t n, uint64_t *ns)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0) {
            *ns = units[i].ns;
            return true;
        }
    }
    return false;
}

int wf_go_duration(const char *orig, int64_t *out, wf_strbuf *err)
{
    const char *s = orig;
    bool neg = false;
    if (*s == '-' || *s == '+') {
        neg = *s == '-';
        s++;
    }
    if (strcmp(s, "0") == 0) {
        if (out)
            *out = 0;
        return 0;
    }
    if (!*s)
        return dur_fail(err, "time: invalid duration %q", orig, NULL);
    const uint64_t max = 1ULL << 63;
    uint64_t d = 0;
    while (*s) {
        if (!(*s == '.' || isdigit((unsigned char)*s)))
            return dur_fail(err, "time: invalid duration %q", orig, NULL);
        uint64_t v = 0, f = 0;
        double scale = 1;
        const char *start = s;
        for (; isdigit((unsigned char)*s); s++) {
            if (v > (max - 1) / 10)
                return dur_fail(err, "time: invalid duration %q", orig, NULL);
            v = v * 10 + (uint64_t)(*s - '0');
            if (v > max)
                return dur_fail(err, "time: invalid duration %q", orig, NULL);
        }
        bool pre = s != start, post = false;
        if (*s == '.') {
            s++;
            const char *fs = s;
            bool overflow = false;
            for (; isdigit((unsigned char)*s); s++) {
                if (overflow)
                    continue;
                if (f > (max - 1) / 10) {
                    overflow = true;
                    continue;
                }
                f = f * 10 + (uint64_t)(*s - '0');
                scale *= 10;
            }
            post = s != fs;
        }
        if (!pre && !post)
            return dur_fail(err, "time: invalid duration %q", orig, NULL);
        const char *u = s;
        while (*s && *s != '.' && !isdigit((unsigned char)*s))
            s++;
        if (s == u) {
            return dur_fail(err, "time: missing unit in duration %q", orig, NULL);
        }
        uint64_t unit;
        if (!dur_unit_lookup(u, (size_t)(s - u), &unit)) {
            char uname[64];
            snprintf(uname, sizeof(uname), "%.*s", (int)(s - u), u);
            return dur_fail(err, "time: unknown unit %q in duration %q", uname, orig);
        }
        if (v > max / unit)
            return dur_fail(err, "time: invalid duration %q", orig, NULL);
        v *= unit;
        if (f > 0) {
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > max)
                return dur_fail(err, "time: invalid duration %q", orig, NULL);
        }
        d += v;
        if (d > max)
            return dur_fail(err, "time: invalid duration %q", orig, NULL);
    }
    if (neg) {
        if (out)
            *out = d == max ? INT64_MIN : -(int64_t)d;
        return 0;
    }
    if (d > max - 1)
        return dur_fail(err, "time: invalid duration %q", orig, NULL);
    if (out)
        *out = (int64_t)d;
    return 0;
}
