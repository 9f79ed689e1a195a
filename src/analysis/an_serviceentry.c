/*
 * an_serviceentry.c - ServiceEntry analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers/serviceentry:
 * - protocoladdresses.go (ProtocolAddressesAnalyzer, "serviceentry.Analyzer"): IST0134 for
 *   each port with no protocol or TCP (any case) on a ServiceEntry without `addresses`,
 *   unless the status holds allocated addresses or MeshConfig turns on DNS capture together
 *   with ISTIO_META_DNS_AUTO_ALLOCATE or PILOT_ENABLE_IP_AUTOALLOCATE.
 * - conflictingserviceentries.go (ConflictingServiceEntryProtocolAnalyzer): IST0177, once
 *   per ServiceEntry, when ServiceEntries visible in the same exportTo scope (or in "*")
 *   give one host and port different protocols (compared upper-cased; unset counts as "").
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"

/* ---- serviceentry.Analyzer ---- */

static bool proxy_metadata_true(const wf_meshcfg *m, const char *key)
{
    char path[128];
    snprintf(path, sizeof(path), "defaultConfig.proxyMetadata.%s", key);
    const char *v = wf_meshcfg_str(m, path);
    return v && strcmp(v, "true") == 0;
}

static bool auto_allocated(const wf_meshcfg *m)
{
    if (!m || !proxy_metadata_true(m, "ISTIO_META_DNS_CAPTURE"))
        return false;
    return proxy_metadata_true(m, "ISTIO_META_DNS_AUTO_ALLOCATE") ||
           proxy_metadata_true(m, "PILOT_ENABLE_IP_AUTOALLOCATE");
}

static void analyze_protocol_addresses(wf_analysis_ctx *ctx, const wf_resource *r)
{
    if (wf_seq_len(wf_map_get(r->spec, "addresses")) > 0)
        return;
    if (wf_seq_len(wf_map_get(r->status, "addresses")) > 0)
        return;
    const wf_node *ports = wf_map_get(r->spec, "ports");
    for (size_t i = 0; i < wf_seq_len(ports); i++) {
        const wf_node *p = wf_seq_at(ports, i);
        const char *proto = wf_map_str(p, "protocol");
        if (!proto || !proto[0] || strcasecmp(proto, "TCP") == 0)
            WF_REPORT0(ctx, WF_IST0134, r, wf_map_get(p, "name"));
    }
}

static void run_protocol_addresses(wf_analysis_ctx *ctx)
{
    if (auto_allocated(wf_ctx_mesh(ctx)))
        return;
    size_t n;
    const wf_resource *const *ses = wf_store_kind(wf_ctx_store(ctx), WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n; i++)
        analyze_protocol_addresses(ctx, ses[i]);
}

const wf_analyzer wf_an_serviceentry_Analyzer = {
    .name = "serviceentry.Analyzer",
    .description = "Checks the validity of ServiceEntry",
    .inputs = {WF_KIND_SERVICEENTRY, WF_KIND_OTHER},
    .codes = {WF_IST0134, WF_MSG_COUNT},
    .default_on = true,
    .run = run_protocol_addresses,
};

/* ---- serviceentry.ConflictingServiceEntryProtocolAnalyzer ---- */

/* One (scope, host, port) occurrence of a ServiceEntry port. */
typedef struct hp_rec {
    const char *scope, *host, *protocol; /* protocol upper-cased */
    int64_t port;
    const wf_resource *se;
    size_t seq; /* insertion order, for a stable sort */
} hp_rec;

typedef struct hp_vec {
    wf_arena *arena;
    hp_rec *v;
    size_t n, cap;
    bool oom;
} hp_vec;

static void hp_push(hp_vec *vec, hp_rec rec)
{
    if (vec->n == vec->cap) {
        size_t cap = vec->cap ? vec->cap * 2 : 64;
        hp_rec *v = wf_arena_alloc(vec->arena, cap * sizeof(*v));
        if (!v) {
            vec->oom = true;
            return;
        }
        if (vec->n)
            memcpy(v, vec->v, vec->n * sizeof(*v));
        vec->v = v;
        vec->cap = cap;
    }
    rec.seq = vec->n;
    vec->v[vec->n++] = rec;
}

static const char *upper_dup(wf_arena *a, const char *s)
{
    char *u = wf_arena_strdup(a, s ? s : "");
    for (char *p = u; p && *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return u;
}

static bool strs_contain(const wf_strs *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] && strcmp(s->v[i], x) == 0)
            return true;
    return false;
}

/* exportToScopes: {"*"} for an empty list or one holding "*", else the listed namespaces
 * with "." as the ServiceEntry's own (duplicates kept once). */
static size_t export_scopes(const wf_resource *r, const char **out)
{
    const wf_strs *ex = &r->t.se->export_to;
    if (ex->n == 0 || strs_contain(ex, "*")) {
        out[0] = "*";
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < ex->n; i++) {
        const char *s = ex->v[i] ? ex->v[i] : "";
        if (strcmp(s, ".") == 0)
            s = r->ns;
        bool dup = false;
        for (size_t k = 0; k < n && !dup; k++)
            dup = strcmp(out[k], s) == 0;
        if (!dup)
            out[n++] = s;
    }
    return n;
}

static void index_serviceentry(hp_vec *vec, const wf_resource *r)
{
    const char **scopes = wf_arena_alloc(vec->arena, (r->t.se->export_to.n + 1) * sizeof(char *));
    if (!scopes) {
        vec->oom = true;
        return;
    }
    size_t ns = export_scopes(r, scopes);
    const wf_node *ports = wf_map_get(r->spec, "ports");
    for (size_t s = 0; s < ns; s++) {
        for (size_t h = 0; h < r->t.se->hosts.n; h++) {
            for (size_t p = 0; p < wf_seq_len(ports); p++) {
                const wf_node *pn = wf_seq_at(ports, p);
                int64_t num = 0;
                if (!wf_node_int(wf_map_get(pn, "number"), &num))
                    num = 0;
                const char *proto = upper_dup(vec->arena, wf_map_str(pn, "protocol"));
                const char *host = r->t.se->hosts.v[h] ? r->t.se->hosts.v[h] : "";
                if (!proto) {
                    vec->oom = true;
                    return;
                }
                hp_push(vec, (hp_rec){scopes[s], host, proto, num, r, 0});
            }
        }
    }
}

static int cmp_rec(const void *a, const void *b)
{
    const hp_rec *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    if (c)
        return c;
    if (x->port != y->port)
        return x->port < y->port ? -1 : 1;
    if ((c = strcmp(x->scope, y->scope)))
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool same_hostport(const hp_rec *a, const hp_rec *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* A group: its own records [g0, g1) plus, for a scope other than "*", the "*" records of the
 * same host and port [s0, s1). */
typedef struct hp_group {
    const hp_rec *v;
    size_t g0, g1, s0, s1;
} hp_group;

static size_t group_items(const hp_group *g, const hp_rec **out)
{
    size_t n = 0;
    for (size_t i = g->g0; i < g->g1; i++)
        out[n++] = &g->v[i];
    for (size_t i = g->s0; i < g->s1; i++)
        out[n++] = &g->v[i];
    return n;
}

/* Sorted unique values, joined with ", "; NULL on out of memory. */
static const char *join_unique(wf_arena *a, const char **v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_str);
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(v[i], v[i - 1]) == 0)
            continue;
        if (b.len)
            wf_strbuf_puts(&b, ", ");
        wf_strbuf_puts(&b, v[i]);
    }
    const char *out = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(a, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return out;
}

static size_t count_unique(const char **v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        u += i == 0 || strcmp(v[i], v[i - 1]) != 0;
    return u;
}

typedef struct reported_set {
    const char **names;
    size_t n;
} reported_set;

static bool mark_reported(reported_set *rs, const char *name)
{
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->names[i], name) == 0)
            return false;
    rs->names[rs->n++] = name;
    return true;
}

static void report_group(wf_analysis_ctx *ctx, const hp_group *g, reported_set *rs,
                         const hp_rec **items, const char **strs)
{
    wf_arena *a = wf_ctx_arena(ctx);
    size_t n = group_items(g, items);
    for (size_t i = 0; i < n; i++)
        strs[i] = items[i]->protocol;
    if (count_unique(strs, n) < 2)
        return;
    const char *protocols = join_unique(a, strs, n);
    for (size_t i = 0; i < n; i++)
        strs[i] = wf_full_name(ctx, items[i]->se);
    for (size_t i = 0; i < n; i++)
        if (!strs[i])
            return;
    const char *names = join_unique(a, strs, n);
    const char *port = wf_arena_printf(a, "%lld", (long long)items[0]->port);
    if (!protocols || !names || !port)
        return;
    for (size_t i = 0; i < n; i++) {
        const wf_resource *se = items[i]->se;
        const char *full = wf_full_name(ctx, se);
        if (full && mark_reported(rs, full))
            WF_REPORT(ctx, WF_IST0177, se, wf_map_get(se->metadata, "name"), names, items[i]->host,
                      port, protocols);
    }
}

/* Walk runs of one host and port; in each, every scope group (with "*" added). */
static void report_conflicts(wf_analysis_ctx *ctx, const hp_vec *vec)
{
    wf_arena *a = wf_ctx_arena(ctx);
    const hp_rec **items = wf_arena_alloc(a, (vec->n + 1) * sizeof(*items));
    const char **strs = wf_arena_alloc(a, (vec->n + 1) * sizeof(*strs));
    reported_set rs = {wf_arena_alloc(a, (vec->n + 1) * sizeof(char *)), 0};
    if (!items || !strs || !rs.names)
        return;
    for (size_t r0 = 0, r1; r0 < vec->n; r0 = r1) {
        size_t s0 = SIZE_MAX, s1 = SIZE_MAX;
        for (r1 = r0; r1 < vec->n && same_hostport(&vec->v[r0], &vec->v[r1]); r1++) {
            bool star = strcmp(vec->v[r1].scope, "*") == 0;
            if (star && s0 == SIZE_MAX)
                s0 = r1;
            if (star)
                s1 = r1 + 1;
        }
        for (size_t g0 = r0, g1; g0 < r1; g0 = g1) {
            for (g1 = g0; g1 < r1 && strcmp(vec->v[g1].scope, vec->v[g0].scope) == 0; g1++)
                ;
            bool star = strcmp(vec->v[g0].scope, "*") == 0;
            hp_group g = {vec->v, g0, g1, star ? 0 : s0, star ? 0 : s1};
            if (g.s0 == SIZE_MAX)
                g.s0 = g.s1 = 0;
            report_group(ctx, &g, &rs, items, strs);
        }
    }
}

static void run_conflicting_protocol(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *ses = wf_store_kind(wf_ctx_store(ctx), WF_KIND_SERVICEENTRY, &n);
    hp_vec vec = {.arena = wf_ctx_arena(ctx)};
    for (size_t i = 0; i < n && !vec.oom; i++)
        if (ses[i]->t.se)
            index_serviceentry(&vec, ses[i]);
    if (vec.oom || vec.n == 0)
        return;
    qsort(vec.v, vec.n, sizeof(*vec.v), cmp_rec);
    report_conflicts(ctx, &vec);
}

const wf_analyzer wf_an_serviceentry_ConflictingServiceEntryProtocolAnalyzer = {
    .name = "serviceentry.ConflictingServiceEntryProtocolAnalyzer",
    .description =
        "Checks if multiple ServiceEntries define the same host and port with different protocols",
    .inputs = {WF_KIND_SERVICEENTRY, WF_KIND_OTHER},
    .codes = {WF_IST0177, WF_MSG_COUNT},
    .default_on = true,
    .run = run_conflicting_protocol,
};
