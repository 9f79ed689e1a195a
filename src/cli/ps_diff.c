/*
 * ps_diff.c - `proxy-status <pod>`: what the control plane would send against what the proxy
 * holds, as istioctl's compare.Comparator does (reference §3.4):
 *  - only dynamic active clusters, dynamic listeners' active state and dynamic route configs;
 *    version_info and last_updated stripped, the listener wrapper's name cleared, entries sorted
 *    by name (route virtual hosts too);
 *  - both sides printed as 4-space-indented JSON (keys sorted, snake_case: camelCase dumps are
 *    converted first, so either spelling compares equal) and compared with a unified diff of 7
 *    context lines (go-difflib's format, headers "--- Istiod Clusters" / "+++ Envoy Clusters");
 *  - "Clusters Match" / "Clusters Don't Match" + diff, likewise Listeners and Routes; the Routes
 *    line carries " (RDS last loaded at <RFC1123 local time>)" from the Envoy side.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/proxy_status.h"

#define DIFF_CONTEXT   7
#define DIFF_MAX_CELLS (16u * 1024u * 1024u)

#define T_CLUSTERS  "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"
#define T_LISTENERS "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
#define T_ROUTES    "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"

/* ---- normalising ---------------------------------------------------------------------------- */

static bool is_lower_camel(const char *k)
{
    if (!islower((unsigned char)k[0]))
        return false;
    bool upper = false;
    for (const char *p = k; *p; p++) {
        if (!isalnum((unsigned char)*p))
            return false;
        upper |= isupper((unsigned char)*p) != 0;
    }
    return upper;
}

/* A deep copy with lowerCamelCase keys turned into snake_case. NULL when out of memory. */
static json_t *snake_copy(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < json_array_size(v); i++)
            if (json_array_append_new(a, snake_copy(json_array_get(v, i))) != 0)
                return json_decref(a), NULL;
        return a;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    json_t *o = json_object();
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m)
    {
        char buf[256];
        const char *key = k;
        if (is_lower_camel(k) && strlen(k) < sizeof buf / 2) {
            size_t n = 0;
            for (const char *p = k; *p; p++) {
                if (isupper((unsigned char)*p))
                    buf[n++] = '_';
                buf[n++] = (char)tolower((unsigned char)*p);
            }
            buf[n] = '\0';
            key = buf;
        }
        if (!o || json_object_set_new(o, key, snake_copy(m)) != 0)
            return json_decref(o), NULL;
    }
    return o;
}

/* The last section of type url in dump.configs (borrowed), or NULL. */
static json_t *section(const json_t *dump, const char *url)
{
    json_t *found = NULL, *c;
    size_t i;
    json_array_foreach(json_object_get(dump, "configs"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "@type"));
        if (t && strcmp(t, url) == 0)
            found = c;
    }
    return found;
}

static const char *name_at(const json_t *o, const char *wrapper)
{
    const json_t *w = wrapper ? json_object_get(o, wrapper) : o;
    const char *s = json_string_value(json_object_get(w, "name"));
    return s ? s : "";
}

/* qsort context-free comparators for the three kinds of entries. */
static int cmp_cluster(const void *a, const void *b)
{
    return strcmp(name_at(*(json_t *const *)a, "cluster"), name_at(*(json_t *const *)b, "cluster"));
}
static int cmp_route(const void *a, const void *b)
{
    return strcmp(name_at(*(json_t *const *)a, "route_config"),
                  name_at(*(json_t *const *)b, "route_config"));
}
static int cmp_listener(const void *a, const void *b)
{
    const json_t *x = json_object_get(*(json_t *const *)a, "active_state");
    const json_t *y = json_object_get(*(json_t *const *)b, "active_state");
    return strcmp(name_at(x, "listener"), name_at(y, "listener"));
}
static int cmp_named(const void *a, const void *b)
{
    return strcmp(name_at(*(json_t *const *)a, NULL), name_at(*(json_t *const *)b, NULL));
}

/* Sorts the array arr in place. Returns 0 or -1. */
static int sort_array(json_t *arr, int (*cmp)(const void *, const void *))
{
    size_t n = json_array_size(arr);
    if (n < 2)
        return 0;
    json_t **v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof *v, cmp);
    json_array_clear(arr);
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        rc |= json_array_append_new(arr, v[i]);
    free(v);
    return rc;
}

/* {"<key>": [stripped, sorted entries]} of one dump; NULL when out of memory. */
static json_t *normalized(const json_t *dump, const char *url, const char *key)
{
    json_t *items = json_array();
    json_t *e, *sec = section(dump, url);
    size_t i;
    json_array_foreach(json_object_get(sec, key), i, e)
    {
        json_t *c = json_deep_copy(e);
        if (!c || !items)
            return json_decref(c), json_decref(items), NULL;
        json_t *strip =
            strcmp(key, "dynamic_listeners") == 0 ? json_object_get(c, "active_state") : c;
        if (strcmp(key, "dynamic_listeners") == 0) {
            if (!strip) {
                json_decref(c);
                continue; /* warming or draining only: istioctl compares active state */
            }
            json_object_del(c, "name");
            json_object_del(c, "warming_state");
            json_object_del(c, "draining_state");
            json_object_del(c, "error_state");
        }
        json_object_del(strip, "version_info");
        json_object_del(strip, "last_updated");
        json_object_del(c, "@type"); /* a wrapper's own type (not a field of the message) */
        json_object_del(strip, "@type");
        sort_array(json_object_get(json_object_get(c, "route_config"), "virtual_hosts"), cmp_named);
        json_array_append_new(items, c);
    }
    int (*cmp)(const void *, const void *) =
        strcmp(key, "dynamic_active_clusters") == 0
            ? cmp_cluster
            : (strcmp(key, "dynamic_listeners") == 0 ? cmp_listener : cmp_route);
    if (!items || sort_array(items, cmp) != 0)
        return json_decref(items), NULL;
    json_t *doc = json_object();
    if (!doc || json_object_set_new(doc, key, items) != 0)
        return json_decref(doc), NULL;
    return doc;
}

/* ---- unified diff (go-difflib / Python difflib format) ------------------------------------- */

typedef struct lines {
    const char **v; /* line starts */
    size_t *len;
    size_t n;
} lines;

static int split_lines(const char *s, lines *out)
{
    size_t n = 1;
    for (const char *p = s; *p; p++)
        n += *p == '\n';
    out->v = malloc(n * sizeof *out->v);
    out->len = malloc(n * sizeof *out->len);
    if (!out->v || !out->len)
        return -1;
    out->n = 0;
    for (const char *p = s; *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        out->v[out->n] = p;
        out->len[out->n++] = l;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

static bool line_eq(const lines *a, size_t i, const lines *b, size_t j)
{
    return a->len[i] == b->len[j] && memcmp(a->v[i], b->v[j], a->len[i]) == 0;
}

/* match[i] = index in b matched with a's line i, or SIZE_MAX; an LCS of the middle part after
 * the common prefix and suffix (a whole replacement when the middle is too large). */
static int match_lines(const lines *a, const lines *b, size_t *match)
{
    for (size_t i = 0; i < a->n; i++)
        match[i] = SIZE_MAX;
    size_t p = 0;
    while (p < a->n && p < b->n && line_eq(a, p, b, p)) {
        match[p] = p;
        p++;
    }
    size_t s = 0;
    while (s < a->n - p && s < b->n - p && line_eq(a, a->n - 1 - s, b, b->n - 1 - s)) {
        match[a->n - 1 - s] = b->n - 1 - s;
        s++;
    }
    size_t n = a->n - p - s, m = b->n - p - s;
    if (n == 0 || m == 0 || (n + 1) * (m + 1) > DIFF_MAX_CELLS)
        return 0;
    unsigned *t = calloc((n + 1) * (m + 1), sizeof *t);
    if (!t)
        return -1;
#define T(i, j) t[(i) * (m + 1) + (j)]
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            T(i, j) = line_eq(a, p + i, b, p + j)
                          ? T(i + 1, j + 1) + 1
                          : (T(i + 1, j) > T(i, j + 1) ? T(i + 1, j) : T(i, j + 1));
    for (size_t i = 0, j = 0; i < n && j < m;) {
        if (line_eq(a, p + i, b, p + j)) {
            match[p + i] = p + j;
            i++, j++;
        } else if (T(i + 1, j) >= T(i, j + 1)) {
            i++;
        } else {
            j++;
        }
    }
#undef T
    free(t);
    return 0;
}

typedef struct opcode {
    char tag; /* 'e'qual, 'r'eplace, 'd'elete, 'i'nsert */
    size_t i1, i2, j1, j2;
} opcode;

/* Opcodes from the matching; *n gets their count. The array has room for a->n + b->n + 1. */
static size_t opcodes(const lines *a, const lines *b, const size_t *match, opcode *ops)
{
    size_t n = 0, i = 0, j = 0;
    while (i < a->n || j < b->n) {
        size_t i0 = i, j0 = j;
        while (i < a->n && match[i] == SIZE_MAX)
            i++;
        size_t jend = i < a->n ? match[i] : b->n;
        j = jend;
        if (i > i0 || j > j0)
            ops[n++] = (opcode){i > i0 ? (j > j0 ? 'r' : 'd') : 'i', i0, i, j0, j};
        i0 = i, j0 = j;
        while (i < a->n && j < b->n && match[i] == j)
            i++, j++;
        if (i > i0)
            ops[n++] = (opcode){'e', i0, i, j0, j};
    }
    return n;
}

static void range(wf_strbuf *o, size_t start, size_t stop)
{
    size_t len = stop - start;
    if (len == 1)
        wf_strbuf_printf(o, "%zu", start + 1);
    else if (len == 0)
        wf_strbuf_printf(o, "%zu,0", start);
    else
        wf_strbuf_printf(o, "%zu,%zu", start + 1, len);
}

static void emit_lines(wf_strbuf *o, char c, const lines *l, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++) {
        wf_strbuf_putc(o, c);
        wf_strbuf_append(o, l->v[k], l->len[k]);
        wf_strbuf_putc(o, '\n');
    }
}

static void emit_group(wf_strbuf *o, const opcode *g, size_t n, const lines *a, const lines *b)
{
    wf_strbuf_puts(o, "@@ -");
    range(o, g[0].i1, g[n - 1].i2);
    wf_strbuf_puts(o, " +");
    range(o, g[0].j1, g[n - 1].j2);
    wf_strbuf_puts(o, " @@\n");
    for (size_t k = 0; k < n; k++) {
        if (g[k].tag == 'e') {
            emit_lines(o, ' ', a, g[k].i1, g[k].i2);
            continue;
        }
        emit_lines(o, '-', a, g[k].i1, g[k].i2);
        emit_lines(o, '+', b, g[k].j1, g[k].j2);
    }
}

/* difflib get_grouped_opcodes(n) + unified_diff into o ("" when equal). */
static void grouped(wf_strbuf *o, opcode *ops, size_t n, const lines *a, const lines *b)
{
    const size_t c = DIFF_CONTEXT;
    if (n == 0 || (n == 1 && ops[0].tag == 'e'))
        return;
    if (ops[0].tag == 'e') {
        ops[0].i1 = ops[0].i2 > ops[0].i1 + c ? ops[0].i2 - c : ops[0].i1;
        ops[0].j1 = ops[0].j2 > ops[0].j1 + c ? ops[0].j2 - c : ops[0].j1;
    }
    if (ops[n - 1].tag == 'e') {
        ops[n - 1].i2 = ops[n - 1].i1 + c < ops[n - 1].i2 ? ops[n - 1].i1 + c : ops[n - 1].i2;
        ops[n - 1].j2 = ops[n - 1].j1 + c < ops[n - 1].j2 ? ops[n - 1].j1 + c : ops[n - 1].j2;
    }
    opcode *g = malloc((2 * n + 1) * sizeof *g);
    if (!g) {
        o->failed = true;
        return;
    }
    size_t gn = 0;
    for (size_t k = 0; k < n; k++) {
        opcode op = ops[k];
        if (op.tag == 'e' && op.i2 - op.i1 > 2 * c) {
            g[gn++] = (opcode){'e', op.i1, op.i1 + c, op.j1, op.j1 + c};
            emit_group(o, g, gn, a, b);
            gn = 0;
            op.i1 = op.i2 - c;
            op.j1 = op.j2 - c;
        }
        g[gn++] = op;
    }
    if (gn > 0 && !(gn == 1 && g[0].tag == 'e'))
        emit_group(o, g, gn, a, b);
    free(g);
}

/* The unified diff text of a against b (empty when equal). Returns 0 or -1. */
static int unified_diff(const char *a_text, const char *b_text, const char *from, const char *to,
                        wf_strbuf *out)
{
    lines a = {0}, b = {0};
    size_t *match = NULL;
    opcode *ops = NULL;
    int rc = -1;
    if (split_lines(a_text, &a) == 0 && split_lines(b_text, &b) == 0 &&
        (match = malloc((a.n + 1) * sizeof *match)) &&
        (ops = malloc((a.n + b.n + 1) * sizeof *ops)) && match_lines(&a, &b, match) == 0) {
        size_t n = opcodes(&a, &b, match, ops);
        wf_strbuf body = WF_STRBUF_INIT;
        grouped(&body, ops, n, &a, &b);
        if (body.len > 0)
            wf_strbuf_printf(out, "--- %s\n+++ %s\n%s", from, to, wf_strbuf_cstr(&body));
        rc = wf_strbuf_failed(&body) || wf_strbuf_failed(out) ? -1 : 0;
        wf_strbuf_free(&body);
    }
    free(a.v);
    free(a.len);
    free(b.v);
    free(b.len);
    free(match);
    free(ops);
    return rc;
}

/* ---- the comparison ----------------------------------------------------------------------- */

/* The newest last_updated of the Envoy side's dynamic route configs, formatted as Go's
 * time.RFC1123 in local time; "" when none. */
static void rds_loaded(const json_t *envoy, char *buf, size_t cap)
{
    buf[0] = '\0';
    const char *best = NULL;
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(section(envoy, T_ROUTES), "dynamic_route_configs"), i, e)
    {
        const char *lu = json_string_value(json_object_get(e, "last_updated"));
        if (lu && (!best || strcmp(lu, best) > 0))
            best = lu;
    }
    struct tm tm = {0};
    if (!best || !strptime(best, "%Y-%m-%dT%H:%M:%S", &tm))
        return;
    time_t t = timegm(&tm);
    struct tm lt;
    localtime_r(&t, &lt);
    strftime(buf, cap, "%a, %d %b %Y %H:%M:%S %Z", &lt);
}

static int compare_one(const json_t *pilot, const json_t *envoy, const char *url, const char *key,
                       const char *what, FILE *out, wf_strbuf *err)
{
    if (!section(envoy, url) || !section(pilot, url)) {
        wf_strbuf_printf(err, "%s config dump has no configuration type %s",
                         section(envoy, url) ? "the control plane's" : "the proxy's", url);
        return -1;
    }
    json_t *a = normalized(pilot, url, key), *b = normalized(envoy, url, key);
    char *as = a ? json_dumps(a, JSON_INDENT(4) | JSON_SORT_KEYS) : NULL;
    char *bs = b ? json_dumps(b, JSON_INDENT(4) | JSON_SORT_KEYS) : NULL;
    wf_strbuf diff = WF_STRBUF_INIT;
    char from[64], to[64];
    snprintf(from, sizeof from, "Istiod %s", what);
    snprintf(to, sizeof to, "Envoy %s", what);
    int rc = as && bs ? unified_diff(as, bs, from, to, &diff) : -1;
    if (rc != 0) {
        wf_strbuf_puts(err, "out of memory comparing config dumps");
    } else if (diff.len > 0) {
        fprintf(out, "%s Don't Match\n%s\n", what, wf_strbuf_cstr(&diff));
    } else if (strcmp(what, "Routes") == 0) {
        char when[96];
        rds_loaded(envoy, when, sizeof when);
        fprintf(out, when[0] ? "Routes Match (RDS last loaded at %s)\n" : "Routes Match%s\n", when);
    } else {
        fprintf(out, "%s Match\n", what);
    }
    wf_strbuf_free(&diff);
    free(as);
    free(bs);
    json_decref(a);
    json_decref(b);
    return rc;
}

int ps_compare_dumps(const json_t *pilot_dump, const json_t *envoy_dump, FILE *out, wf_strbuf *err)
{
    json_t *p = snake_copy(pilot_dump), *e = snake_copy(envoy_dump);
    int rc = p && e ? 0 : -1;
    if (rc != 0)
        wf_strbuf_puts(err, "out of memory");
    if (rc == 0)
        rc = compare_one(p, e, T_CLUSTERS, "dynamic_active_clusters", "Clusters", out, err);
    if (rc == 0)
        rc = compare_one(p, e, T_LISTENERS, "dynamic_listeners", "Listeners", out, err);
    if (rc == 0)
        rc = compare_one(p, e, T_ROUTES, "dynamic_route_configs", "Routes", out, err);
    json_decref(p);
    json_decref(e);
    return rc;
}
