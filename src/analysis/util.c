/*
 * util.c - analyzer helpers (see util.h).
 */
#include "analysis/util.h"

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

const char *wf_fqdn(wf_analysis_ctx *ctx, const char *ns, const char *host)
{
    if (!host)
        return "";
    if (strchr(host, '.') || host[0] == '*')
        return host;
    const char *s = wf_arena_printf(wf_ctx_arena(ctx), "%s.%s.svc.%s", host, ns ? ns : "",
                                    wf_store_domain_suffix(wf_ctx_store(ctx)));
    return s ? s : host;
}

bool wf_export_visible(const wf_strs *export_to, const char *owner_ns, const char *from_ns)
{
    if (!export_to || export_to->n == 0)
        return true;
    for (size_t i = 0; i < export_to->n; i++) {
        const char *e = export_to->v[i];
        if (strcmp(e, "*") == 0)
            return true;
        if (strcmp(e, ".") == 0 && strcmp(owner_ns, from_ns) == 0)
            return true;
        if (strcmp(e, from_ns) == 0)
            return true;
    }
    return false;
}

const char *wf_full_name(wf_analysis_ctx *ctx, const wf_resource *r)
{
    wf_arena *a = wf_ctx_arena(ctx);
    return r->ns[0] ? wf_arena_printf(a, "%s/%s", r->ns, r->name) : r->name;
}

const char *wf_go_slice(wf_analysis_ctx *ctx, const char *const *v, size_t n)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            wf_strbuf_putc(&b, ' ');
        wf_strbuf_puts(&b, v[i]);
    }
    wf_strbuf_putc(&b, ']');
    const char *s = wf_strbuf_failed(&b) ? "[]" : wf_arena_strdup(wf_ctx_arena(ctx), b.data);
    wf_strbuf_free(&b);
    return s ? s : "[]";
}

static int cmp_kv_key(const void *a, const void *b)
{
    return strcmp(((const wf_kv *)a)->key, ((const wf_kv *)b)->key);
}

bool wf_kvs_go_map(wf_arena *a, const wf_kvs *set, wf_kvs *out)
{
    out->n = 0;
    out->items = NULL;
    if (!set || set->n == 0)
        return true;
    out->items = wf_arena_alloc(a, set->n * sizeof(*out->items));
    if (!out->items)
        return false;
    for (size_t i = 0; i < set->n; i++) {
        size_t j = 0;
        while (j < out->n && strcmp(out->items[j].key, set->items[i].key) != 0)
            j++;
        out->items[j] = set->items[i];
        if (j == out->n)
            out->n++;
    }
    qsort(out->items, out->n, sizeof(*out->items), cmp_kv_key);
    return true;
}

const char *wf_selector_string(wf_arena *a, const wf_kvs *set)
{
    wf_kvs m;
    if (!wf_kvs_go_map(a, set, &m))
        return NULL;
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < m.n; i++)
        wf_strbuf_printf(&b, "%s%s=%s", i ? "," : "", m.items[i].key,
                         m.items[i].value ? m.items[i].value : "");
    const char *s = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(a, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return s;
}
