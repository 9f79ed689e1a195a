/*
 * mesh_metrics_text.c - the Prometheus text format parser (mesh_metrics_text.h).
 */
#include "pilot/mesh_metrics_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *end; /* the line, without its "\n" */
    char buf[WF_PROM_MAX_LINE];
    size_t used;
    const char *why;
} line_cur;

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

static void skip_space(line_cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

/* Copies n bytes into the line buffer, NUL-terminated; NULL when it is full. */
static char *keep(line_cur *c, const char *s, size_t n)
{
    if (n + 1 > sizeof c->buf - c->used) {
        c->why = "line too long";
        return NULL;
    }
    char *d = c->buf + c->used;
    memcpy(d, s, n);
    d[n] = '\0';
    c->used += n + 1;
    return d;
}

/* A metric or label name at c->p: its length (0 = none). Label names may not hold ':', but
 * accepting it costs nothing and rejects nothing a real exporter writes. */
static size_t name_len(const line_cur *c)
{
    const char *q = c->p;
    if (q >= c->end || !name_start(*q))
        return 0;
    while (q < c->end && name_char(*q))
        q++;
    return (size_t)(q - c->p);
}

/* '"' value '"' with escapes, unescaped into the buffer. */
static const char *quoted(line_cur *c)
{
    if (c->p >= c->end || *c->p != '"') {
        c->why = "expected '\"' to open a label value";
        return NULL;
    }
    c->p++;
    char *d = c->buf + c->used, *lim = c->buf + sizeof c->buf - 1;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            if (c->p >= c->end)
                break;
            char e = *c->p++;
            ch = e == 'n' ? '\n' : e; /* \\ and \" stand for themselves; so does any other */
        }
        if (d >= lim) {
            c->why = "line too long";
            return NULL;
        }
        *d++ = ch;
    }
    if (c->p >= c->end) {
        c->why = "unterminated label value";
        return NULL;
    }
    c->p++; /* the closing quote */
    *d = '\0';
    const char *v = c->buf + c->used;
    c->used = (size_t)(d - c->buf) + 1;
    return v;
}

static bool labels(line_cur *c, wf_prom_sample *s)
{
    c->p++; /* '{' */
    for (;;) {
        skip_space(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return true;
        }
        size_t n = name_len(c);
        if (!n) {
            c->why = "expected a label name";
            return false;
        }
        if (s->n_labels == WF_PROM_MAX_LABELS) {
            c->why = "too many labels";
            return false;
        }
        const char *ln = keep(c, c->p, n);
        if (!ln)
            return false;
        c->p += n;
        skip_space(c);
        if (c->p >= c->end || *c->p != '=') {
            c->why = "expected '=' after a label name";
            return false;
        }
        c->p++;
        skip_space(c);
        const char *lv = quoted(c);
        if (!lv)
            return false;
        s->label_name[s->n_labels] = ln;
        s->label_value[s->n_labels++] = lv;
        skip_space(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return true;
        }
        c->why = "expected ',' or '}' after a label";
        return false;
    }
}

static bool value(line_cur *c, double *out)
{
    skip_space(c);
    const char *q = c->p;
    while (q < c->end && *q != ' ' && *q != '\t')
        q++;
    size_t n = (size_t)(q - c->p);
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) {
        c->why = n ? "value too long" : "expected a value";
        return false;
    }
    memcpy(tmp, c->p, n);
    tmp[n] = '\0';
    char *e = NULL;
    errno = 0;
    double v = strtod(tmp, &e);
    /* strtod also reads hex floats and "infinity"; Go's ParseFloat reads those too */
    if (e != tmp + n || (errno == ERANGE && v == 0)) {
        c->why = "value is not a number";
        return false;
    }
    *out = v;
    c->p = q;
    skip_space(c);
    if (c->p < c->end) { /* an optional integer timestamp, ignored */
        const char *t = c->p;
        if (*t == '-' || *t == '+')
            t++;
        const char *d0 = t;
        while (t < c->end && *t >= '0' && *t <= '9')
            t++;
        c->p = t;
        skip_space(c);
        if (t == d0 || c->p < c->end) {
            c->why = "unexpected text after the value";
            return false;
        }
    }
    return true;
}

/* 1 = a sample in *s, 0 = a line to skip, -1 = malformed (c->why). */
static int parse_line(line_cur *c, wf_prom_want_fn want, void *ud, wf_prom_sample *s)
{
    skip_space(c);
    if (c->p >= c->end || *c->p == '#')
        return 0;
    size_t n = name_len(c);
    if (!n) {
        c->why = "expected a metric name";
        return -1;
    }
    if (want && !want(ud, c->p, n))
        return 0;
    s->n_labels = 0;
    c->used = 0;
    s->name = keep(c, c->p, n);
    if (!s->name)
        return -1;
    c->p += n;
    skip_space(c);
    if (c->p < c->end && *c->p == '{' && !labels(c, s))
        return -1;
    return value(c, &s->value) ? 1 : -1;
}

int wf_prom_parse(const char *text, size_t len, wf_prom_want_fn want, wf_prom_sample_fn fn,
                  void *ud, char *err, size_t cap)
{
    line_cur *c = malloc(sizeof *c); /* 8 KiB: kept off the loop thread's stack */
    wf_prom_sample *s = malloc(sizeof *s);
    if (!c || !s) {
        free(c);
        free(s);
        if (err && cap)
            snprintf(err, cap, "out of memory");
        return -1;
    }
    const char *p = text, *end = text + len;
    size_t lineno = 0;
    int rc = 0;
    while (p < end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        c->p = p;
        c->end = le > p && le[-1] == '\r' ? le - 1 : le;
        c->why = NULL;
        int r = parse_line(c, want, ud, s);
        if (r < 0) {
            if (err && cap)
                snprintf(err, cap, "line %zu: %s", lineno, c->why ? c->why : "malformed");
            rc = -1;
        } else if (r > 0) {
            rc = fn(ud, s);
        }
        p = nl ? nl + 1 : end;
    }
    free(c);
    free(s);
    return rc;
}

const char *wf_prom_label(const wf_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->n_labels; i++)
        if (strcmp(s->label_name[i], name) == 0)
            return s->label_value[i];
    return NULL;
}
