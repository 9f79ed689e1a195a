/*
 * stats_render.c - the admin renderings of the stats store (stats.h): /stats text,
 * /stats?format=json and /stats/prometheus, counters, gauges, status-code stats and
 * histograms (Envoy source/server/admin/stats_render.cc, prometheus_stats.cc).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/stats/stats_internal.h"

/* ------------------------------------------------------------------ collecting */

typedef struct {
    const double *bounds;
    uint32_t nb;
    const uint64_t *cum;  /* nb + 3: disjoint buckets, count, sum */
    const uint64_t *ival; /* the last completed interval, same layout */
    uint64_t min1, max1;  /* observed minimum / maximum + 1 (0: none) */
} hist_snap;

typedef struct {
    const char *name;
    int64_t value;
    uint8_t kind;       /* KIND_COUNTER, KIND_GAUGE, KIND_HIST */
    const hist_snap *h; /* KIND_HIST */
    const char *family; /* Prometheus only */
    const char *labels; /* Prometheus only */
} entry;

typedef struct {
    entry *v;
    size_t n, cap, nhist;
    bool failed;
    wf_arena arena; /* generated names, labels and histogram snapshots */
    pcre2_match_data *md;
    pcre2_match_context *mctx;
} entry_list;

static entry *list_push(entry_list *l, const char *name, int64_t value, uint8_t kind)
{
    if (!name) {
        l->failed = true;
        return NULL;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        entry *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = true;
            return NULL;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = (entry){name, value, kind, NULL, NULL, NULL};
    return &l->v[l->n++];
}

static bool filter_passes(entry_list *l, const pcre2_code *filter, const char *name)
{
    if (!filter)
        return true;
    if (!l->md)
        l->md = pcre2_match_data_create_from_pattern(filter, NULL);
    if (!l->md)
        return false;
    return pcre2_match(filter, (PCRE2_SPTR)name, strlen(name), 0, 0, l->md, l->mctx) >= 0;
}

static bool included(const code_scope *cs, unsigned i)
{
    return (cs->incl[i / 64] >> (i % 64)) & 1u;
}

static void collect_codes(wp_stats *st, uint32_t id, const pcre2_code *filter, entry_list *l)
{
    code_scope *cs = wp_stats_scope_of(st, id);
    if (!cs)
        return;
    int64_t sums[WP_NCODES], cls[6] = {0};
    bool seen[6] = {false};
    wp_stats_code_sums(st, id, sums);
    for (unsigned i = 0; i < WP_NCODES; i++) {
        if (sums[i] <= 0)
            continue;
        unsigned code = i + WP_CODE_MIN;
        int64_t v = sums[i] - atomic_load_explicit(&cs->baseline[i], memory_order_relaxed);
        seen[code / 100] = true;
        cls[code / 100] += v;
        if (!included(cs, i))
            continue;
        char *name = wf_arena_printf(&l->arena, "%s_%u", cs->scope, code);
        if (!name || filter_passes(l, filter, name))
            list_push(l, name, v, KIND_COUNTER);
    }
    for (unsigned k = 1; k <= 5; k++) {
        if (!seen[k] || !included(cs, WP_NCODES + k - 1))
            continue;
        char *name = wf_arena_printf(&l->arena, "%s_%uxx", cs->scope, k);
        if (!name || filter_passes(l, filter, name))
            list_push(l, name, cls[k], KIND_COUNTER);
    }
}

/* Snapshot of histogram id into the list's arena; NULL when skipped or out of memory. */
static void collect_hist(wp_stats *st, uint32_t id, const pcre2_code *filter, bool usedonly,
                         entry_list *l)
{
    hist_meta *m = wp_stats_hist_meta(st, id);
    if (!m || !m->name || !filter_passes(l, filter, m->name))
        return;
    hist_snap *h = wf_arena_alloc(&l->arena, sizeof *h);
    uint64_t *cum = wf_arena_alloc(&l->arena, 2 * (m->nb + 3) * sizeof *cum);
    if (!h || !cum) {
        l->failed = true;
        return;
    }
    wp_stats_hist_sums(st, m, cum, &h->min1, &h->max1);
    if (usedonly && cum[m->nb + 1] == 0)
        return;
    memcpy(cum + m->nb + 3, m->interval, (m->nb + 3) * sizeof *cum);
    *h = (hist_snap){m->bounds, m->nb, cum, cum + m->nb + 3, h->min1, h->max1};
    entry *e = list_push(l, m->name, 0, KIND_HIST);
    if (e) {
        e->h = h;
        e->family = m->prom_family; /* custom stat namespace, else NULL */
        e->labels = m->prom_labels;
        l->nhist++;
    }
}

static void collect_hists(wp_stats *st, const pcre2_code *filter, bool usedonly, entry_list *l)
{
    pthread_mutex_lock(&st->render_lock);
    wp_stats_maybe_flush_locked(st);
    uint32_t n = atomic_load_explicit(&st->nhists, memory_order_acquire);
    for (uint32_t id = 1; id < n && !l->failed; id++)
        collect_hist(st, id, filter, usedonly, l);
    pthread_mutex_unlock(&st->render_lock);
}

/* Bit of kind k in a rendering's kinds mask. */
#define KIND_BIT(k) (1u << (k))
#define ALL_KINDS   (KIND_BIT(KIND_COUNTER) | KIND_BIT(KIND_GAUGE) | KIND_BIT(KIND_HIST))

static void collect(wp_stats *st, const pcre2_code *filter, bool usedonly, unsigned kinds,
                    entry_list *l)
{
    memset(l, 0, sizeof *l);
    wf_arena_init(&l->arena);
    l->mctx = pcre2_match_context_create(NULL);
    if (!l->mctx) {
        l->failed = true;
        return;
    }
    pcre2_set_match_limit(l->mctx, WP_STATS_REGEX_MATCH_LIMIT);
    uint32_t n = atomic_load_explicit(&st->nslots, memory_order_acquire);
    for (uint32_t slot = 1; slot < n; slot++) {
        stat_meta *sm = wp_stats_meta_of(st, slot);
        if (!sm || sm->kind == KIND_SCRATCH || !(kinds & KIND_BIT(sm->kind)))
            continue;
        bool used;
        int64_t v = wp_stats_value_of(st, slot, sm, &used);
        if ((usedonly && !used) || !filter_passes(l, filter, sm->name))
            continue;
        entry *e = list_push(l, sm->name, v, sm->kind);
        if (e && sm->prom_family) {
            e->family = sm->prom_family;
            e->labels = sm->prom_labels;
        }
    }
    uint32_t ns = atomic_load_explicit(&st->nscopes, memory_order_acquire);
    for (uint32_t id = 1; (kinds & KIND_BIT(KIND_COUNTER)) && id < ns; id++)
        collect_codes(st, id, filter, l);
    if (kinds & KIND_BIT(KIND_HIST))
        collect_hists(st, filter, usedonly, l);
}

static void list_free(entry_list *l)
{
    free(l->v);
    pcre2_match_data_free(l->md);
    pcre2_match_context_free(l->mctx);
    wf_arena_destroy(&l->arena);
}

/* Counters and gauges by name, then histograms by name (Envoy's phases). */
static int by_name(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    bool hx = x->kind == KIND_HIST, hy = y->kind == KIND_HIST;
    if (hx != hy)
        return hx ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void sorted(wp_stats *st, const pcre2_code *filter, bool usedonly, unsigned kinds,
                   entry_list *l)
{
    collect(st, filter, usedonly, kinds, l);
    if (l->n)
        qsort(l->v, l->n, sizeof *l->v, by_name);
}

/* ------------------------------------------------------------------ histogram quantiles */

static void quantiles(const hist_snap *h, double cum[WP_HIST_NQ], double ival[WP_HIST_NQ])
{
    uint32_t nb = h->nb;
    double lo = h->min1 ? (double)(h->min1 - 1) : 0;
    double hi = h->max1 ? (double)(h->max1 - 1) : NAN;
    wp_hist_quantiles(h->bounds, nb, h->cum, h->cum[nb + 1], lo, hi, true, cum);
    wp_hist_quantiles(h->bounds, nb, h->ival, h->ival[nb + 1], lo, hi, false, ival);
}

/* ------------------------------------------------------------------ text */

static void text_hist(wf_strbuf *out, const entry *e)
{
    if (e->h->cum[e->h->nb + 1] == 0) {
        wf_strbuf_printf(out, "%s: No recorded values\n", e->name);
        return;
    }
    double cum[WP_HIST_NQ], ival[WP_HIST_NQ];
    quantiles(e->h, cum, ival);
    wf_strbuf_printf(out, "%s:", e->name);
    for (int k = 0; k < WP_HIST_NQ; k++) {
        char a[40], b[40];
        wp_fmt_double(a, sizeof a, ival[k]);
        wp_fmt_double(b, sizeof b, cum[k]);
        wf_strbuf_printf(out, " P%s(%s,%s)", wp_hist_quantile_labels[k], a, b);
    }
    wf_strbuf_putc(out, '\n');
}

/* Kinds mask of a /stats?type= value (TextReadouts: none, weft has no text readouts). */
static unsigned type_kinds(wp_stats_type type)
{
    switch (type) {
    case WP_STATS_TYPE_COUNTERS:
        return KIND_BIT(KIND_COUNTER);
    case WP_STATS_TYPE_GAUGES:
        return KIND_BIT(KIND_GAUGE);
    case WP_STATS_TYPE_HISTOGRAMS:
        return KIND_BIT(KIND_HIST);
    case WP_STATS_TYPE_TEXT_READOUTS:
        return 0;
    default:
        return ALL_KINDS;
    }
}

int wp_stats_type_parse(const char *s, wp_stats_type *out)
{
    static const char *const names[] = {"All", "Counters", "Gauges", "Histograms", "TextReadouts"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (wp_stats_type)i;
            return 0;
        }
    }
    return -1;
}

static void put_value(wf_strbuf *out, const entry *e)
{
    wf_strbuf_printf(out, "%" PRId64, e->value);
}

void wp_stats_render_text(wp_stats *st, const pcre2_code *filter, bool usedonly, wf_strbuf *out)
{
    wp_stats_render_text_type(st, filter, usedonly, WP_STATS_TYPE_ALL, out);
}

void wp_stats_render_text_type(wp_stats *st, const pcre2_code *filter, bool usedonly,
                               wp_stats_type type, wf_strbuf *out)
{
    entry_list l;
    sorted(st, filter, usedonly, type_kinds(type), &l);
    if (l.failed)
        out->failed = true;
    for (size_t i = 0; i < l.n; i++) {
        if (l.v[i].kind == KIND_HIST)
            text_hist(out, &l.v[i]);
        else {
            wf_strbuf_printf(out, "%s: ", l.v[i].name);
            put_value(out, &l.v[i]);
            wf_strbuf_putc(out, '\n');
        }
    }
    list_free(&l);
}

/* ------------------------------------------------------------------ JSON */

static void put_json_string(wf_strbuf *out, const char *s)
{
    wf_strbuf_putc(out, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            wf_strbuf_putc(out, '\\');
            wf_strbuf_putc(out, (char)c);
        } else if (c < 0x20) {
            wf_strbuf_printf(out, "\\u%04x", c);
        } else {
            wf_strbuf_putc(out, (char)c);
        }
    }
    wf_strbuf_putc(out, '"');
}

static void put_json_number(wf_strbuf *out, double v)
{
    char b[40];
    if (!isfinite(v)) {
        wf_strbuf_puts(out, "null");
        return;
    }
    wp_fmt_double(b, sizeof b, v);
    wf_strbuf_puts(out, b);
}

static void json_hist(wf_strbuf *out, const entry *e, bool first)
{
    double cum[WP_HIST_NQ], ival[WP_HIST_NQ];
    quantiles(e->h, cum, ival);
    wf_strbuf_puts(out, first ? "{\"name\":" : ",{\"name\":");
    put_json_string(out, e->name);
    wf_strbuf_puts(out, ",\"values\":[");
    for (int k = 0; k < WP_HIST_NQ; k++) {
        wf_strbuf_puts(out, k ? ",{\"cumulative\":" : "{\"cumulative\":");
        put_json_number(out, cum[k]);
        wf_strbuf_puts(out, ",\"interval\":");
        put_json_number(out, ival[k]);
        wf_strbuf_putc(out, '}');
    }
    wf_strbuf_puts(out, "]}");
}

void wp_stats_render_json(wp_stats *st, const pcre2_code *filter, bool usedonly, wf_strbuf *out)
{
    wp_stats_render_json_type(st, filter, usedonly, WP_STATS_TYPE_ALL, out);
}

void wp_stats_render_json_type(wp_stats *st, const pcre2_code *filter, bool usedonly,
                               wp_stats_type type, wf_strbuf *out)
{
    entry_list l;
    sorted(st, filter, usedonly, type_kinds(type), &l);
    if (l.failed)
        out->failed = true;
    size_t nscalar = l.n - l.nhist;
    wf_strbuf_puts(out, "{\"stats\":[");
    for (size_t i = 0; i < nscalar; i++) {
        wf_strbuf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        put_json_string(out, l.v[i].name);
        wf_strbuf_puts(out, ",\"value\":");
        put_value(out, &l.v[i]);
        wf_strbuf_putc(out, '}');
    }
    if (l.nhist) {
        wf_strbuf_puts(out, nscalar ? ",{\"histograms\":" : "{\"histograms\":");
        wf_strbuf_puts(out, "{\"supported_quantiles\":[");
        for (int k = 0; k < WP_HIST_NQ; k++)
            wf_strbuf_printf(out, "%s%s", k ? "," : "", wp_hist_quantile_labels[k]);
        wf_strbuf_puts(out, "],\"computed_quantiles\":[");
        for (size_t i = nscalar; i < l.n; i++)
            json_hist(out, &l.v[i], i == nscalar);
        wf_strbuf_puts(out, "]}}");
    }
    wf_strbuf_puts(out, "]}");
    list_free(&l);
}

/* ------------------------------------------------------------------ Prometheus */

static void prom_sanitize(wf_strbuf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        wf_strbuf_putc(out, ok ? c : '_');
    }
}

static void prom_escape_value(wf_strbuf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\')
            wf_strbuf_puts(out, "\\\\");
        else if (s[i] == '\n')
            wf_strbuf_puts(out, "\\n");
        else if (s[i] == '"')
            wf_strbuf_puts(out, "\\\"");
        else
            wf_strbuf_putc(out, s[i]);
    }
}

typedef struct {
    const wp_stats_tags *tags;
    wp_tag_scratch ts;
    wf_strbuf fam, lab;
} prom_ctx;

/* Fill e->family and e->labels (in the list's arena). */
static int prom_describe(prom_ctx *pc, entry_list *l, entry *e)
{
    if (e->family)
        return 0; /* custom stat namespace: registered with its family and labels */
    size_t len = strlen(e->name);
    int n = 0;
    wf_strbuf_reset(&pc->fam);
    wf_strbuf_reset(&pc->lab);
    wf_strbuf_puts(&pc->fam, "envoy_");
    if (pc->tags) {
        if ((n = wp_tags_extract_into(pc->tags, e->name, &pc->ts)) < 0)
            return -1;
        for (size_t i = 0; i < len; i++) {
            if (!pc->ts.removed[i])
                prom_sanitize(&pc->fam, e->name + i, 1);
        }
    } else {
        prom_sanitize(&pc->fam, e->name, len);
    }
    for (int i = 0; i < n; i++) {
        const wp_tag_hit *h = &pc->ts.hits[i];
        if (i)
            wf_strbuf_putc(&pc->lab, ',');
        prom_sanitize(&pc->lab, h->name, strlen(h->name));
        wf_strbuf_puts(&pc->lab, "=\"");
        prom_escape_value(&pc->lab, h->value, h->vlen);
        wf_strbuf_putc(&pc->lab, '"');
    }
    if (wf_strbuf_failed(&pc->fam) || wf_strbuf_failed(&pc->lab))
        return -1;
    e->family = wf_arena_strdup(&l->arena, wf_strbuf_cstr(&pc->fam));
    e->labels = wf_arena_strdup(&l->arena, wf_strbuf_cstr(&pc->lab));
    return e->family && e->labels ? 0 : -1;
}

/* Counters, then gauges, then histograms (as Envoy); by family, then by full name. */
static int by_family(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = strcmp(x->family, y->family);
    return c ? c : strcmp(x->name, y->name);
}

static int prom_describe_all(const wp_stats_tags *tags, entry_list *l)
{
    prom_ctx pc = {.tags = tags, .fam = WF_STRBUF_INIT, .lab = WF_STRBUF_INIT};
    int rc = wp_tag_scratch_init(&pc.ts, tags);
    for (size_t i = 0; rc == 0 && i < l->n; i++)
        rc = prom_describe(&pc, l, &l->v[i]);
    wp_tag_scratch_free(&pc.ts);
    wf_strbuf_free(&pc.fam);
    wf_strbuf_free(&pc.lab);
    return rc;
}

/* One histogram: cumulative buckets, +Inf, sum and count (prometheus_stats.cc). */
static void prom_hist(wf_strbuf *out, const entry *e)
{
    const hist_snap *h = e->h;
    const char *sep = e->labels[0] ? "," : "";
    uint64_t cum = 0;
    for (uint32_t b = 0; b < h->nb; b++) {
        cum += h->cum[b];
        wf_strbuf_printf(out, "%s_bucket{%s%sle=\"%.32g\"} %" PRIu64 "\n", e->family, e->labels,
                         sep, h->bounds[b], cum);
    }
    uint64_t count = h->cum[h->nb + 1];
    wf_strbuf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", e->family, e->labels, sep,
                     count);
    wf_strbuf_printf(out, "%s_sum{%s} %" PRIu64 "\n", e->family, e->labels, h->cum[h->nb + 2]);
    wf_strbuf_printf(out, "%s_count{%s} %" PRIu64 "\n", e->family, e->labels, count);
}

void wp_stats_render_prometheus(wp_stats *st, const wp_stats_tags *tags, bool usedonly,
                                const pcre2_code *filter, wf_strbuf *out)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    entry_list l;
    collect(st, filter, usedonly, ALL_KINDS, &l);
    if (l.failed || prom_describe_all(tags, &l) != 0) {
        out->failed = true;
        list_free(&l);
        return;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, by_family);
    for (size_t i = 0; i < l.n; i++) {
        const entry *e = &l.v[i];
        if (i == 0 || e->kind != l.v[i - 1].kind || strcmp(e->family, l.v[i - 1].family) != 0)
            wf_strbuf_printf(out, "# TYPE %s %s\n", e->family, types[e->kind]);
        if (e->kind == KIND_HIST)
            prom_hist(out, e);
        else {
            wf_strbuf_printf(out, "%s{%s} ", e->family, e->labels);
            put_value(out, e);
            wf_strbuf_putc(out, '\n');
        }
    }
    list_free(&l);
}
