/*
 * validate_common.c - the shared machinery of schema validation (the per-kind validators
 * validate_*.c and the entry point validate.c build on it; it calls none of them).
 *
 * Follows istio/istio pkg/config/validation (RegisterValidateFunc per kind) and the way the
 * analyzer calls it (pkg/config/analysis/analyzers/schema/validation.go): the config handed
 * to the validator carries only name and namespace, so annotation-driven checks (dry-run,
 * gateway semantics) never apply.
 */
#include "model/validate_internal.h"

#include "core/gofmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- path ---- */

static size_t path_append(vc *c, const char *piece)
{
    size_t old = c->plen;
    size_t n = strlen(piece);
    if (c->plen + n < sizeof(c->path)) {
        memcpy(c->path + c->plen, piece, n + 1);
        c->plen += n;
    }
    return old;
}

size_t vc_push(vc *c, const char *key)
{
    if (c->plen == 0)
        return path_append(c, key);
    size_t old = c->plen;
    path_append(c, ".");
    path_append(c, key);
    return old;
}

size_t vc_push_idx(vc *c, size_t i)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "[%zu]", i);
    return path_append(c, buf);
}

size_t vc_push_key(vc *c, const char *key)
{
    size_t old = c->plen;
    path_append(c, "[");
    path_append(c, key);
    path_append(c, "]");
    return old;
}

void vc_pop(vc *c, size_t len)
{
    if (len <= c->plen) {
        c->plen = len;
        c->path[len] = '\0';
    }
}

/* ---- reports ---- */

void vc_report(vc *c, bool warning, const char *path, const wf_node *at, const char *msg)
{
    if (!warning)
        c->errors++;
    if (!c->cb)
        return;
    wf_validation_issue issue = {
        .warning = warning,
        .path = path ? path : c->path,
        .node = at,
        .message = msg,
    };
    c->cb(c->r, &issue, c->arg);
}

static void vreport(vc *c, bool warning, const wf_node *at, const char *fmt, va_list ap)
{
    char stackbuf[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(stackbuf, sizeof(stackbuf), fmt, ap);
    char *msg = stackbuf;
    char *heap = NULL;
    if (n >= (int)sizeof(stackbuf)) {
        heap = malloc((size_t)n + 1);
        if (heap) {
            vsnprintf(heap, (size_t)n + 1, fmt, ap2);
            msg = heap;
        }
    }
    va_end(ap2);
    if (n < 0)
        msg = "(unformattable message)";
    if (!warning && c->err_prefix) {
        const char *full = vc_fmt(c, "%s%s", c->err_prefix, msg);
        vc_report(c, warning, NULL, at, *full ? full : msg);
    } else {
        vc_report(c, warning, NULL, at, msg);
    }
    free(heap);
}

void vc_err(vc *c, const wf_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(c, false, at, fmt, ap);
    va_end(ap);
}

void vc_warn(vc *c, const wf_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(c, true, at, fmt, ap);
    va_end(ap);
}

void vc_aware(vc *c, wf_validation_aware_type type, const wf_node *at, const char *p0,
              const char *p1, const char *p2)
{
    if (c->aware) {
        wf_validation_aware a = {
            .type = type, .params = {p0, p1, p2}, .nparams = p2 ? 3 : 2, .node = at};
        c->aware(c->r, &a, c->arg);
        return;
    }
    if (type == WF_VALIDATION_UNREACHABLE_RULE)
        vc_warn(c, at, "virtualService rule %s not used (%s)", p0, p1);
    else
        vc_warn(c, at,
                "virtualService rule %s match %s is not used (duplicate/overlapping match in "
                "rule %s)",
                p0, p1, p2);
}

/* ---- formatting ---- */

const char *vc_fmt(vc *c, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *out = n >= 0 ? wf_arena_alloc(&c->scratch, (size_t)n + 1) : NULL;
    if (out)
        vsnprintf(out, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return out ? out : "";
}

void vc_each(vc *c, const wf_node *seq, const char *key, void (*fn)(vc *c, const wf_node *item))
{
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *it = wf_seq_at(seq, i);
        if (!it || it->type == WF_NODE_NULL)
            continue;
        size_t mark = vc_push(c, key);
        vc_push_idx(c, i);
        fn(c, it);
        vc_pop(c, mark);
    }
}

const wf_node *vc_item(vc *c, const wf_node *seq, const char *key, size_t i, const char *null_msg,
                       size_t *mark)
{
    const wf_node *it = wf_seq_at(seq, i);
    *mark = vc_push(c, key);
    vc_push_idx(c, i);
    if (it && it->type != WF_NODE_NULL)
        return it;
    vc_err(c, it, "%s", null_msg);
    vc_pop(c, *mark);
    return NULL;
}

const char *vc_q(vc *c, const char *s)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_go_quote(&b, s ? s : "");
    const char *out =
        wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(&c->scratch, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return out ? out : "\"\"";
}

const char *vc_slice(vc *c, const wf_node *seq)
{
    size_t total = 3;
    for (size_t i = 0; i < wf_seq_len(seq); i++)
        total += strlen(vc_nstr(wf_seq_at(seq, i))) + 1;
    char *out = wf_arena_alloc(&c->scratch, total);
    if (!out)
        return "[]";
    char *o = out;
    *o++ = '[';
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *s = vc_nstr(wf_seq_at(seq, i));
        if (i)
            *o++ = ' ';
        memcpy(o, s, strlen(s));
        o += strlen(s);
    }
    *o++ = ']';
    *o = '\0';
    return out;
}

const char *vc_f(vc *c, double v)
{
    return vc_fmt(c, "%f", v);
}

/* ---- reading values ---- */

const wf_node *vc_get(const wf_node *m, const char *key)
{
    const wf_node *n = wf_map_get(m, key);
    return (n && n->type != WF_NODE_NULL) ? n : NULL;
}

bool vc_has(const wf_node *m, const char *key)
{
    return vc_get(m, key) != NULL;
}

const char *vc_nstr(const wf_node *n)
{
    return (n && n->type == WF_NODE_SCALAR) ? n->u.str : "";
}

const char *vc_str(const wf_node *m, const char *key)
{
    return vc_nstr(vc_get(m, key));
}

bool vc_nint(const wf_node *n, int64_t *out)
{
    if (!n || n->type != WF_NODE_SCALAR)
        return false;
    if (!n->quoted)
        return wf_node_int(n, out);
    const char *s = n->u.str;
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

int64_t vc_int(const wf_node *m, const char *key)
{
    int64_t v = 0;
    return vc_nint(vc_get(m, key), &v) ? v : 0;
}

bool vc_bool(const wf_node *m, const char *key)
{
    bool b = false;
    return wf_node_bool(vc_get(m, key), &b) && b;
}

double vc_double(const wf_node *m, const char *key)
{
    const wf_node *n = vc_get(m, key);
    if (!n || n->type != WF_NODE_SCALAR)
        return 0;
    char *end;
    double d = strtod(n->u.str, &end);
    return *end ? 0 : d;
}

size_t vc_len(const wf_node *m, const char *key)
{
    return wf_seq_len(vc_get(m, key));
}

size_t vc_mlen(const wf_node *m, const char *key)
{
    const wf_node *n = vc_get(m, key);
    return (n && n->type == WF_NODE_MAP) ? n->len : 0;
}

const char *vc_enum(const wf_node *m, const char *key, const char *const *names)
{
    const wf_node *n = vc_get(m, key);
    if (!n)
        return names[0];
    int64_t v;
    if (!n->quoted && vc_nint(n, &v)) {
        for (int64_t i = 0; names[i]; i++) {
            if (i == v)
                return names[i];
        }
        return "";
    }
    return vc_nstr(n);
}
