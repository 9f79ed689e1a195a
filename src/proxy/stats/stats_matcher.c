/*
 * stats_matcher.c - StatsConfig.stats_matcher and histogram_bucket_settings (see
 * stats_matcher.h).
 */
#include "proxy/stats/stats_matcher.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "model/re2_check.h"
#include "proxy/regex/regex.h"

const double wp_hist_default_bounds[] = {0.5,   1,      5,      10,      25,     50,    100,
                                         250,   500,    1000,   2500,    5000,   10000, 30000,
                                         60000, 300000, 600000, 1800000, 3600000};
const uint32_t wp_hist_default_nbounds =
    sizeof wp_hist_default_bounds / sizeof wp_hist_default_bounds[0];

enum { MODE_ALL, MODE_NONE, MODE_INCLUDE, MODE_EXCLUDE };

typedef struct {
    wp_string_matcher m;
    const char *token; /* prefix without its trailing '.', or NULL */
} pattern;

typedef struct {
    pattern match;
    double *bounds;
    uint32_t n;
} bucket_setting;

struct wp_stats_matcher {
    wf_arena arena;
    int mode;
    pattern *pats;
    size_t npats;
    bucket_setting *bs;
    size_t nbs;
    pcre2_code **regexes; /* compiled, freed with the matcher */
    size_t nregexes, capregexes;
    wp_regex_ctx rx;
};

/* ---------------------------------------------------------------- errors and paths */

typedef struct {
    wp_stats_matcher *m;
    wf_strbuf *where, *why;
    char path[512];
    size_t plen;
} dec;

static size_t push(dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t push(dec *d, const char *fmt, ...)
{
    size_t mark = d->plen;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->path + d->plen, sizeof d->path - d->plen, fmt, ap);
    va_end(ap);
    if (n > 0)
        d->plen = d->plen + (size_t)n < sizeof d->path ? d->plen + (size_t)n : sizeof d->path - 1;
    return mark;
}

static void pop(dec *d, size_t mark)
{
    d->plen = mark;
    d->path[mark] = '\0';
}

static bool fail(dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(dec *d, const char *fmt, ...)
{
    if (d->where)
        wf_strbuf_puts(d->where, d->path);
    if (d->why) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        wf_strbuf_puts(d->why, msg);
    }
    return false;
}

static bool fail_at(dec *d, const char *key, const char *msg)
{
    push(d, ".%s", key);
    return fail(d, "%s", msg);
}

/* Is k one of the space-separated words of list? */
static bool word_in(const char *list, const char *k)
{
    size_t kl = strlen(k);
    for (const char *p = list; *p;) {
        size_t wl = strcspn(p, " ");
        if (wl == kl && memcmp(p, k, kl) == 0)
            return true;
        p += wl;
        p += *p == ' ';
    }
    return false;
}

/* o must be an object with keys from `allowed` (space-separated) only. */
static bool fields(dec *d, const json_t *o, const char *what, const char *allowed)
{
    if (!json_is_object(o))
        return fail(d, "%s must be an object", what);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (!word_in(allowed, k))
            return fail_at(d, k, "unknown field");
    }
    return true;
}

static const json_t *get(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_null(v) ? NULL : v;
}

/* ---------------------------------------------------------------- StringMatcher */

static bool remember_regex(wp_stats_matcher *m, pcre2_code *re)
{
    if (m->nregexes == m->capregexes) {
        size_t cap = m->capregexes ? m->capregexes * 2 : 8;
        pcre2_code **r = realloc(m->regexes, cap * sizeof *r);
        if (!r)
            return false;
        m->regexes = r;
        m->capregexes = cap;
    }
    m->regexes[m->nregexes++] = re;
    return true;
}

/* RE2 syntax first, then PCRE2 anchored at both ends (full match), as route regexes. */
static bool compile_regex(dec *d, const char *re, pcre2_code **out)
{
    char why[256];
    if (wf_re2_check(re, why, sizeof why))
        return fail(d, "%s", why);
    uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ANCHORED | PCRE2_ENDANCHORED;
    int code;
    PCRE2_SIZE off;
    pcre2_code *pc = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL);
    if (!pc) {
        PCRE2_UCHAR msg[200];
        if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
            snprintf((char *)msg, sizeof msg, "invalid regular expression");
        return fail(d, "error parsing regexp: %s: `%s`", (const char *)msg, re);
    }
    (void)pcre2_jit_compile(pc, PCRE2_JIT_COMPLETE); /* the interpreter is the fallback */
    if (!remember_regex(d->m, pc)) {
        pcre2_code_free(pc);
        return fail(d, "out of memory");
    }
    *out = pc;
    return true;
}

/* RegexMatcher {regex, google_re2 {}} at path .safe_regex. */
static bool dec_regex(dec *d, const json_t *rm, pcre2_code **out)
{
    size_t mark = push(d, ".safe_regex");
    bool ok = fields(d, rm, "safe_regex", "regex google_re2");
    const json_t *g = ok ? get(rm, "google_re2") : NULL;
    if (g && (!json_is_object(g) || json_object_size(g) != 0))
        ok = fail_at(d, "google_re2", "only an empty object is accepted");
    const json_t *re = ok ? get(rm, "regex") : NULL;
    if (ok && (!json_is_string(re) || !*json_string_value(re))) {
        push(d, ".regex");
        ok = fail(d, "value length must be at least 1 characters");
    } else if (ok) {
        push(d, ".regex");
        ok = compile_regex(d, json_string_value(re), out);
    }
    if (ok)
        pop(d, mark);
    return ok;
}

static bool set_value(dec *d, const json_t *o, const char *k, pattern *p)
{
    const json_t *v = get(o, k);
    if (!json_is_string(v))
        return fail_at(d, k, "must be a string");
    const char *s = json_string_value(v);
    if (p->m.kind != WP_SM_EXACT && !*s)
        return fail_at(d, k, "value length must be at least 1 characters");
    char *copy = wf_arena_strdup(&d->m->arena, s);
    if (!copy)
        return fail(d, "out of memory");
    for (char *q = copy; p->m.ignore_case && *q; q++)
        *q = (char)tolower((unsigned char)*q);
    p->m.value = copy;
    p->m.value_len = strlen(copy);
    size_t n = p->m.value_len;
    if (p->m.kind == WP_SM_PREFIX && !p->m.ignore_case && n > 1 && copy[n - 1] == '.') {
        p->token = wf_arena_strndup(&d->m->arena, copy, n - 1);
        if (!p->token)
            return fail(d, "out of memory");
    }
    return true;
}

/* StringMatcher {exact | prefix | suffix | contains | safe_regex, ignore_case}. */
static bool dec_string_matcher(dec *d, const json_t *o, pattern *p)
{
    static const char *const kinds[] = {"exact", "prefix", "suffix", "contains", "safe_regex"};
    if (!fields(d, o, "StringMatcher", "exact prefix suffix contains safe_regex ignore_case"))
        return false;
    const json_t *ic = get(o, "ignore_case");
    if (ic && !json_is_boolean(ic))
        return fail_at(d, "ignore_case", "must be a bool");
    p->m.ignore_case = json_is_true(ic);
    int found = -1, count = 0;
    for (int i = 0; i < 5; i++) {
        if (get(o, kinds[i])) {
            found = i;
            count++;
        }
    }
    if (count != 1)
        return fail(d, "exactly one of exact, prefix, suffix, contains, safe_regex is required");
    p->m.kind = (wp_sm_kind)found; /* kinds[] follows wp_sm_kind */
    if (found != WP_SM_REGEX)
        return set_value(d, o, kinds[found], p);
    if (p->m.ignore_case)
        return fail(d, "ignore_case has no effect for safe_regex.");
    return dec_regex(d, get(o, "safe_regex"), &p->m.re);
}

/* ---------------------------------------------------------------- stats_matcher */

/* ListStringMatcher {patterns: [StringMatcher], min 1}. */
static bool dec_list(dec *d, const json_t *o)
{
    if (!fields(d, o, "ListStringMatcher", "patterns"))
        return false;
    const json_t *pats = get(o, "patterns");
    size_t n = json_array_size(pats);
    if (pats && !json_is_array(pats))
        return fail_at(d, "patterns", "must be a list");
    if (n == 0)
        return fail_at(d, "patterns", "value must contain at least 1 item(s)");
    d->m->pats = wf_arena_alloc(&d->m->arena, n * sizeof *d->m->pats);
    if (!d->m->pats)
        return fail(d, "out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t mark = push(d, ".patterns[%zu]", i);
        if (!dec_string_matcher(d, json_array_get(pats, i), &d->m->pats[i]))
            return false;
        pop(d, mark);
        d->m->npats++;
    }
    return true;
}

static bool dec_stats_matcher(dec *d, const json_t *sm)
{
    static const char *const kinds[] = {"reject_all", "inclusion_list", "exclusion_list"};
    if (!fields(d, sm, "stats_matcher", "reject_all inclusion_list exclusion_list"))
        return false;
    int found = -1, count = 0;
    for (int i = 0; i < 3; i++) {
        if (get(sm, kinds[i])) {
            found = i;
            count++;
        }
    }
    if (count != 1)
        return fail(d, "exactly one of reject_all, inclusion_list, exclusion_list is required");
    const json_t *v = get(sm, kinds[found]);
    if (found == 0) {
        if (!json_is_boolean(v))
            return fail_at(d, "reject_all", "must be a bool");
        d->m->mode = json_is_true(v) ? MODE_NONE : MODE_ALL;
        return true;
    }
    d->m->mode = found == 1 ? MODE_INCLUDE : MODE_EXCLUDE;
    size_t mark = push(d, ".%s", kinds[found]);
    bool ok = dec_list(d, v);
    if (ok)
        pop(d, mark);
    return ok;
}

/* ---------------------------------------------------------------- histogram buckets */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool dec_buckets(dec *d, const json_t *arr, bucket_setting *s)
{
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n == 0)
        return fail_at(d, "buckets", "value must contain at least 1 item(s)");
    if (n > WP_HIST_MAX_BOUNDS) {
        push(d, ".buckets");
        return fail(d, "weft-proxy supports at most %u buckets", WP_HIST_MAX_BOUNDS);
    }
    s->bounds = wf_arena_alloc(&d->m->arena, n * sizeof *s->bounds);
    if (!s->bounds)
        return fail(d, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_number(v) || !(json_number_value(v) > 0)) {
            push(d, ".buckets[%zu]", i);
            return fail(d, "value must be greater than 0");
        }
        s->bounds[i] = json_number_value(v);
    }
    qsort(s->bounds, n, sizeof *s->bounds, cmp_double);
    s->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (s->n == 0 || s->bounds[s->n - 1] != s->bounds[i])
            s->bounds[s->n++] = s->bounds[i];
    }
    return true;
}

static bool dec_bucket_setting(dec *d, const json_t *o, bucket_setting *s)
{
    if (!fields(d, o, "HistogramBucketSettings", "match buckets"))
        return false;
    const json_t *match = get(o, "match");
    if (!match)
        return fail_at(d, "match", "value is required");
    size_t mark = push(d, ".match");
    if (!dec_string_matcher(d, match, &s->match))
        return false;
    pop(d, mark);
    return dec_buckets(d, get(o, "buckets"), s);
}

static bool dec_bucket_settings(dec *d, const json_t *arr)
{
    size_t n = json_array_size(arr);
    if (!json_is_array(arr))
        return fail(d, "must be a list");
    d->m->bs = wf_arena_alloc(&d->m->arena, (n ? n : 1) * sizeof *d->m->bs);
    if (!d->m->bs)
        return fail(d, "out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t mark = push(d, "[%zu]", i);
        if (!dec_bucket_setting(d, json_array_get(arr, i), &d->m->bs[i]))
            return false;
        pop(d, mark);
        d->m->nbs++;
    }
    return true;
}

/* ---------------------------------------------------------------- lifetime */

wp_stats_matcher *wp_stats_matcher_new(const json_t *stats_config, wf_strbuf *where, wf_strbuf *why)
{
    wp_stats_matcher *m = calloc(1, sizeof *m);
    if (!m || wp_regex_ctx_init(&m->rx) != 0) {
        free(m);
        if (why)
            wf_strbuf_puts(why, "out of memory");
        return NULL;
    }
    wf_arena_init(&m->arena);
    m->mode = MODE_ALL;
    dec d = {.m = m, .where = where, .why = why};
    const json_t *sm = stats_config ? get(stats_config, "stats_matcher") : NULL;
    const json_t *hb = stats_config ? get(stats_config, "histogram_bucket_settings") : NULL;
    bool ok = true;
    if (sm) {
        size_t mark = push(&d, "stats_matcher");
        ok = dec_stats_matcher(&d, sm);
        pop(&d, mark);
    }
    if (ok && hb) {
        push(&d, "histogram_bucket_settings");
        ok = dec_bucket_settings(&d, hb);
    }
    if (!ok) {
        wp_stats_matcher_free(m);
        return NULL;
    }
    return m;
}

void wp_stats_matcher_free(wp_stats_matcher *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nregexes; i++)
        pcre2_code_free(m->regexes[i]);
    free(m->regexes);
    wp_regex_ctx_free(&m->rx);
    wf_arena_destroy(&m->arena);
    free(m);
}

/* ---------------------------------------------------------------- matching */

static bool pattern_match(wp_stats_matcher *m, const pattern *p, const char *name, size_t len)
{
    if (p->token && strcmp(name, p->token) == 0)
        return true;
    return wp_string_match(&m->rx, &p->m, name, len);
}

bool wp_stats_matcher_accepts(wp_stats_matcher *m, const char *name)
{
    if (!m || m->mode == MODE_ALL)
        return true;
    if (m->mode == MODE_NONE)
        return false;
    size_t len = strlen(name);
    bool any = false;
    for (size_t i = 0; i < m->npats && !any; i++)
        any = pattern_match(m, &m->pats[i], name, len);
    return m->mode == MODE_INCLUDE ? any : !any;
}

bool wp_stats_matcher_accepts_all(const wp_stats_matcher *m)
{
    return !m || m->mode == MODE_ALL;
}

bool wp_stats_matcher_rejects_all(const wp_stats_matcher *m)
{
    return m && m->mode == MODE_NONE;
}

const double *wp_stats_matcher_buckets(wp_stats_matcher *m, const char *name, uint32_t *n)
{
    size_t len = name ? strlen(name) : 0;
    for (size_t i = 0; m && name && i < m->nbs; i++) {
        if (pattern_match(m, &m->bs[i].match, name, len)) {
            *n = m->bs[i].n;
            return m->bs[i].bounds;
        }
    }
    *n = wp_hist_default_nbounds;
    return wp_hist_default_bounds;
}
