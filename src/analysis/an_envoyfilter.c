/*
 * an_envoyfilter.c - EnvoyFilter analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers/envoyfilter/envoyfilter.go
 * (EnvoyPatchAnalyzer, "envoyfilter.EnvoyPatchAnalyzer"). For each config patch, in order,
 * stopping at the first patch without a `patch`:
 * - ADD or REMOVE with applyTo ROUTE_CONFIGURATION or HTTP_ROUTE: IST0153 / IST0154;
 * - REPLACE with an applyTo other than NETWORK_FILTER, HTTP_FILTER (and VIRTUAL_HOST, which
 *   Envoy filters may replace since Istio 1.22): IST0152;
 * - any other REMOVE or REPLACE, and INSERT_BEFORE / INSERT_AFTER, are relative operations:
 *   when the EnvoyFilter has no priority, IST0151, or IST0155 when an earlier patch (of this
 *   or an earlier EnvoyFilter) that set match.proxy.proxyVersion used the same filter name.
 * The "filter name" of a patch is its patch.value.name (compared as a protobuf Value, so the
 * type matters), or, when the value has no name, match.listener.filterChain.filter.name.
 * Findings carry the line of patch.value only when that is a scalar, as Istio's
 * util.ErrorLine (which only indexes scalar fields) would.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"
#include "model/istio_enums.h"

enum ef_apply_to {
    AT_INVALID = 0,
    AT_LISTENER,
    AT_FILTER_CHAIN,
    AT_NETWORK_FILTER,
    AT_HTTP_FILTER,
    AT_ROUTE_CONFIGURATION,
    AT_VIRTUAL_HOST,
    AT_HTTP_ROUTE,
    AT_CLUSTER,
    AT_EXTENSION_CONFIG,
    AT_BOOTSTRAP,
    AT_LISTENER_FILTER,
};

enum ef_operation {
    OP_INVALID = 0,
    OP_MERGE,
    OP_ADD,
    OP_REMOVE,
    OP_INSERT_BEFORE,
    OP_INSERT_AFTER,
    OP_INSERT_FIRST,
    OP_REPLACE,
};

/* A protobuf enum as protojson reads it: the value name, or its number. 0 otherwise. */
static int enum_value(const wf_node *n, const char *const *names)
{
    size_t count = wf_enum_count(names);
    const char *s = wf_node_str(n);
    if (!s)
        return 0;
    int64_t v;
    if (wf_node_int(n, &v))
        return v >= 0 && (uint64_t)v < count ? (int)v : 0;
    for (size_t i = 0; i < count; i++)
        if (strcmp(s, names[i]) == 0)
            return (int)i;
    return 0;
}

/* ---- filter names ---- */

static int cmp_entry_keys(const void *a, const void *b)
{
    const wf_map_entry *const *x = a, *const *y = b;
    return strcmp((*x)->key, (*y)->key);
}

/* Append a canonical text of a protobuf Value decoded from n: two nodes get the same text
 * exactly when protojson would decode them to equal Values (and so to equal String()s). */
static void canon_value(wf_strbuf *b, const wf_node *n)
{
    if (!n || n->type == WF_NODE_NULL) {
        wf_strbuf_putc(b, 'z');
        return;
    }
    if (n->type == WF_NODE_SEQ) {
        wf_strbuf_putc(b, '[');
        for (size_t i = 0; i < n->len; i++) {
            canon_value(b, n->u.items[i]);
            wf_strbuf_putc(b, ',');
        }
        wf_strbuf_putc(b, ']');
        return;
    }
    if (n->type == WF_NODE_MAP) {
        const wf_map_entry **es = calloc(n->len ? n->len : 1, sizeof(*es));
        if (!es) {
            b->failed = true;
            return;
        }
        for (size_t i = 0; i < n->len; i++)
            es[i] = &n->u.entries[i];
        qsort(es, n->len, sizeof(*es), cmp_entry_keys);
        wf_strbuf_putc(b, '{');
        for (size_t i = 0; i < n->len; i++) {
            if (i + 1 < n->len && strcmp(es[i]->key, es[i + 1]->key) == 0)
                continue; /* a repeated key: the last one wins */
            wf_strbuf_printf(b, "%zu:%s=", strlen(es[i]->key), es[i]->key);
            canon_value(b, es[i]->value);
            wf_strbuf_putc(b, ',');
        }
        wf_strbuf_putc(b, '}');
        free(es);
        return;
    }
    const char *kind = wf_node_kind_name(n);
    if (strcmp(kind, "string") == 0) {
        wf_strbuf_printf(b, "s%zu:", strlen(n->u.str));
        wf_strbuf_puts(b, n->u.str);
    } else if (strcmp(kind, "boolean") == 0) {
        bool v = false;
        wf_node_bool(n, &v);
        wf_strbuf_puts(b, v ? "bT" : "bF");
    } else if (strcmp(kind, "null") == 0) {
        wf_strbuf_putc(b, 'z');
    } else {
        int64_t iv;
        double d = wf_node_int(n, &iv) ? (double)iv : strtod(n->u.str, NULL);
        wf_strbuf_printf(b, "n%.17g", d);
    }
}

/* The name the analyzer uses to relate patches: "\1<value>" for patch.value.name, the plain
 * filterChain filter name otherwise, "" when neither applies. */
static const char *instance_name(wf_analysis_ctx *ctx, const wf_node *cp, const wf_node *patch)
{
    const wf_node *value = wf_map_get(patch, "value");
    if (!value || value->type != WF_NODE_MAP)
        return "";
    const wf_node *name = wf_map_get(value, "name");
    if (name) {
        wf_strbuf b = WF_STRBUF_INIT;
        wf_strbuf_putc(&b, '\1');
        canon_value(&b, name);
        const char *s = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(wf_ctx_arena(ctx), b.data);
        wf_strbuf_free(&b);
        return s ? s : "";
    }
    const wf_node *fc = wf_node_path(cp, "match.listener.filterChain");
    if (fc && fc->type != WF_NODE_NULL) {
        const char *s = wf_node_str(wf_node_path(fc, "filter.name"));
        return s ? s : "";
    }
    return "";
}

/* ---- the analyzer ---- */

typedef struct ef_state {
    wf_analysis_ctx *ctx;
    const char **names; /* filter names of earlier patches that set a proxyVersion */
    size_t n, cap;
} ef_state;

static bool names_contain(const ef_state *st, const char *name)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->names[i], name) == 0)
            return true;
    return false;
}

static void names_add(ef_state *st, const char *name)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        const char **v = wf_arena_alloc(wf_ctx_arena(st->ctx), cap * sizeof(*v));
        if (!v)
            return;
        if (st->n)
            memcpy(v, st->names, st->n * sizeof(*v));
        st->names = v;
        st->cap = cap;
    }
    st->names[st->n++] = name;
}

/* The node util.ErrorLine would find for "{.spec.configPatches[i].patch.value}". */
static const wf_node *value_line_node(const wf_node *patch)
{
    const wf_node *v = wf_map_get(patch, "value");
    return v && (v->type == WF_NODE_SCALAR || v->type == WF_NODE_NULL) ? v : NULL;
}

static void relative_op(ef_state *st, const wf_resource *r, int64_t priority, const wf_node *patch,
                        const char *name)
{
    if (priority != 0)
        return;
    wf_msg_id id = names_contain(st, name) ? WF_IST0155 : WF_IST0151;
    WF_REPORT0(st->ctx, id, r, value_line_node(patch));
}

static void check_patch(ef_state *st, const wf_resource *r, int64_t priority, int apply_to, int op,
                        const wf_node *patch, const char *name)
{
    bool route_level = apply_to == AT_ROUTE_CONFIGURATION || apply_to == AT_HTTP_ROUTE;
    switch (op) {
    case OP_ADD:
        if (route_level)
            WF_REPORT0(st->ctx, WF_IST0153, r, value_line_node(patch));
        break;
    case OP_REMOVE:
        if (route_level)
            WF_REPORT0(st->ctx, WF_IST0154, r, value_line_node(patch));
        else
            relative_op(st, r, priority, patch, name);
        break;
    case OP_REPLACE:
        if (apply_to != AT_NETWORK_FILTER && apply_to != AT_HTTP_FILTER &&
            apply_to != AT_VIRTUAL_HOST)
            WF_REPORT0(st->ctx, WF_IST0152, r, value_line_node(patch));
        else
            relative_op(st, r, priority, patch, name);
        break;
    case OP_INSERT_BEFORE:
    case OP_INSERT_AFTER:
        relative_op(st, r, priority, patch, name);
        break;
    default:
        break;
    }
}

static void analyze_envoy_filter(ef_state *st, const wf_resource *r)
{
    int64_t priority = 0;
    if (!wf_node_int(wf_map_get(r->spec, "priority"), &priority))
        priority = 0;
    const wf_node *cps = wf_map_get(r->spec, "configPatches");
    for (size_t i = 0; i < wf_seq_len(cps); i++) {
        const wf_node *cp = wf_seq_at(cps, i);
        const wf_node *patch = wf_map_get(cp, "patch");
        if (!patch || patch->type == WF_NODE_NULL)
            break;
        const char *name = instance_name(st->ctx, cp, patch);
        int apply_to = enum_value(wf_map_get(cp, "applyTo"), wf_envoyfilter_apply_to);
        int op = enum_value(wf_map_get(patch, "operation"), wf_envoyfilter_patch_op);
        check_patch(st, r, priority, apply_to, op, patch, name);
        const char *pv = wf_node_str(wf_node_path(cp, "match.proxy.proxyVersion"));
        if (pv && pv[0])
            names_add(st, name);
    }
}

static void run_envoy_patch(wf_analysis_ctx *ctx)
{
    ef_state st = {.ctx = ctx};
    size_t n;
    const wf_resource *const *efs = wf_store_kind(wf_ctx_store(ctx), WF_KIND_ENVOYFILTER, &n);
    for (size_t i = 0; i < n; i++)
        analyze_envoy_filter(&st, efs[i]);
}

const wf_analyzer wf_an_envoyfilter_EnvoyPatchAnalyzer = {
    .name = "envoyfilter.EnvoyPatchAnalyzer",
    .description = "Checks an envoyFilters ",
    .inputs = {WF_KIND_ENVOYFILTER, WF_KIND_OTHER},
    .codes = {WF_IST0151, WF_IST0152, WF_IST0153, WF_IST0154, WF_IST0155, WF_MSG_COUNT},
    .default_on = true,
    .run = run_envoy_patch,
};
