/*
 * validate_vs_match.c - unreachable rules and ineffective matches of a VirtualService.
 *
 * Follows istio/istio pkg/config/validation/validation.go: analyzeUnreachableHTTPRules,
 * analyzeUnreachableTCPRules, analyzeUnreachableTLSRules, genMatchHTTPRoutes,
 * coveredValidation, routeName, requestName. Istio compares matches by their JSON
 * serialization without the match name (asJSON); here two matches are equal when their
 * canonical forms are: map keys sorted, zero values (null, "", false, 0, empty lists and
 * maps) dropped as Go's omitempty does.
 */
#include "model/validate_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

static int cmp_entry(const void *a, const void *b)
{
    const wf_map_entry *x = *(const wf_map_entry *const *)a;
    const wf_map_entry *y = *(const wf_map_entry *const *)b;
    return strcmp(x->key, y->key);
}

static bool is_zero_scalar(const wf_node *n)
{
    if (!*n->u.str)
        return true;
    if (n->quoted)
        return false;
    int64_t v;
    bool b;
    return (wf_node_int(n, &v) && v == 0) || (wf_node_bool(n, &b) && !b);
}

/* Appends the canonical form of n; returns false when it is a zero value (nothing added). */
static bool canon(wf_strbuf *out, const wf_node *n, const char *skip_key)
{
    if (!n || n->type == WF_NODE_NULL)
        return false;
    if (n->type == WF_NODE_SCALAR) {
        if (is_zero_scalar(n))
            return false;
        int64_t v;
        if (vc_nint(n, &v)) {
            wf_strbuf_printf(out, "%lld", (long long)v);
            return true;
        }
        wf_strbuf_putc(out, '"');
        wf_strbuf_puts(out, n->u.str);
        wf_strbuf_putc(out, '"');
        return true;
    }
    size_t mark = out->len;
    bool any = false;
    if (n->type == WF_NODE_SEQ) {
        wf_strbuf_putc(out, '[');
        for (size_t i = 0; i < n->len; i++) {
            if (i)
                wf_strbuf_putc(out, ',');
            any |= canon(out, n->u.items[i], NULL) || true;
        }
        wf_strbuf_putc(out, ']');
        return any;
    }
    const wf_map_entry **sorted = malloc(n->len * sizeof(*sorted) + 1);
    if (!sorted) {
        out->failed = true;
        return false;
    }
    for (size_t i = 0; i < n->len; i++)
        sorted[i] = &n->u.entries[i];
    qsort(sorted, n->len, sizeof(*sorted), cmp_entry);
    wf_strbuf_putc(out, '{');
    for (size_t i = 0; i < n->len; i++) {
        if (skip_key && strcmp(sorted[i]->key, skip_key) == 0)
            continue;
        size_t before = out->len;
        wf_strbuf_puts(out, sorted[i]->key);
        wf_strbuf_putc(out, ':');
        if (canon(out, sorted[i]->value, NULL)) {
            wf_strbuf_putc(out, ',');
            any = true;
        } else if (!out->failed) {
            out->len = before;
            out->data[before] = '\0';
        }
    }
    wf_strbuf_putc(out, '}');
    free(sorted);
    (void)mark;
    return true;
}

static const char *match_key(vc *c, const wf_node *m, bool http)
{
    wf_strbuf b = WF_STRBUF_INIT;
    canon(&b, m, http ? "name" : NULL);
    const char *s = wf_strbuf_failed(&b) ? "" : vc_fmt(c, "%s", wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return s;
}

static const char *route_name(vc *c, const wf_node *route, size_t n, bool http)
{
    const char *name = http ? vc_str(route, "name") : "";
    return *name ? vc_q(c, name) : vc_fmt(c, "#%zu", n);
}

static const char *request_name(vc *c, const wf_node *match, size_t n, bool http)
{
    const char *name = http ? vc_str(match, "name") : "";
    return *name ? vc_q(c, name) : vc_fmt(c, "#%zu", n);
}

/* OverlappingMatchValidationForHTTPRoute */
typedef struct overlap {
    const char *route_str, *match_str, *prefix, *method, *authority;
    int64_t port;
    const wf_node *headers, *query, *without;
    const wf_node *node;
} overlap;

static const char *exact_or_prefix(vc *c, const wf_node *sm)
{
    const char *exact = vc_str(sm, "exact");
    if (*exact)
        return vc_fmt(c, "exact:%s", exact);
    const char *prefix = vc_str(sm, "prefix");
    if (*prefix)
        return vc_fmt(c, "prefix:%s", prefix);
    return "";
}

static bool gen_overlap(vc *c, const wf_node *route, size_t rn, const wf_node *m, size_t mn,
                        overlap *o)
{
    const char *prefix = vc_str(vc_get(m, "uri"), "prefix");
    if (!*prefix)
        return false;
    o->route_str = route_name(c, route, rn, true);
    o->match_str = request_name(c, m, mn, true);
    o->prefix = prefix;
    o->port = vc_int(m, "port");
    o->method = exact_or_prefix(c, vc_get(m, "method"));
    if (!*o->method)
        o->method = "exact:GET";
    o->authority = exact_or_prefix(c, vc_get(m, "authority"));
    o->headers = vc_get(m, "headers");
    o->query = vc_get(m, "queryParams");
    o->without = vc_get(m, "withoutHeaders");
    o->node = m;
    return true;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Every key of a has the same (or a prefix-covering) value in b, and sizes are equal. */
static bool maps_covered(vc *c, const wf_node *a, const wf_node *b)
{
    size_t na = a && a->type == WF_NODE_MAP ? a->len : 0;
    size_t nb = b && b->type == WF_NODE_MAP ? b->len : 0;
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        const wf_map_entry *e = &a->u.entries[i];
        const wf_map_entry *f = wf_map_entry_get(b, e->key);
        if (!f)
            return false;
        const char *va = exact_or_prefix(c, e->value), *vb = exact_or_prefix(c, f->value);
        if (strcmp(va, vb) != 0 && !starts_with(va, vb))
            return false;
    }
    return true;
}

static bool covered(vc *c, const overlap *a, const overlap *b)
{
    if (!starts_with(b->prefix, a->prefix) || a->port != b->port)
        return false;
    if (strcmp(a->method, b->method) != 0 && !starts_with(a->method, b->method))
        return false;
    if (strcmp(a->authority, b->authority) != 0 && !starts_with(a->authority, b->authority))
        return false;
    return maps_covered(c, a->headers, b->headers) && maps_covered(c, a->query, b->query) &&
           maps_covered(c, a->without, b->without);
}

static void overlaps(vc *c, const overlap *o, size_t n)
{
    for (size_t i = 0; n > 1 && i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (strcmp(o[j].prefix, o[i].prefix) == 0)
                continue;
            if (!covered(c, &o[i], &o[j]))
                continue;
            const char *a = vc_fmt(c, "%s of prefix %s", o[j].match_str, o[j].prefix);
            const char *b =
                vc_fmt(c, "%s of prefix %s on %s", o[i].match_str, o[i].prefix, o[i].route_str);
            vc_aware(c, WF_VALIDATION_INEFFECTIVE_MATCH, o[j].node, o[j].route_str, a, b);
        }
    }
}

typedef struct seen {
    const char *key;
    size_t rule;
} seen;

static void analyze(vc *c, const wf_node *routes, bool http)
{
    size_t nroutes = wf_seq_len(routes), total = 0;
    for (size_t i = 0; i < nroutes; i++)
        total += vc_len(wf_seq_at(routes, i), "match");
    seen *seen_keys = calloc(total + 1, sizeof(*seen_keys));
    overlap *ov = calloc(total + 1, sizeof(*ov));
    if (!seen_keys || !ov) {
        free(seen_keys);
        free(ov);
        return;
    }
    size_t nseen = 0, nov = 0;
    bool empty_seen = false;
    for (size_t rn = 0; rn < nroutes; rn++) {
        const wf_node *route = wf_seq_at(routes, rn);
        if (!route || route->type == WF_NODE_NULL)
            continue;
        const wf_node *matches = vc_get(route, "match");
        size_t nm = wf_seq_len(matches);
        if (nm == 0) {
            if (empty_seen)
                vc_aware(c, WF_VALIDATION_UNREACHABLE_RULE, route, route_name(c, route, rn, http),
                         "only the last rule can have no matches", NULL);
            empty_seen = true;
            continue;
        }
        size_t dups = 0;
        for (size_t mn = 0; mn < nm; mn++) {
            const wf_node *m = wf_seq_at(matches, mn);
            const char *key = match_key(c, m, http);
            size_t k = 0;
            while (k < nseen && strcmp(seen_keys[k].key, key) != 0)
                k++;
            if (k < nseen) {
                size_t dn = seen_keys[k].rule;
                vc_aware(c, WF_VALIDATION_INEFFECTIVE_MATCH, m, route_name(c, route, rn, http),
                         request_name(c, m, mn, http),
                         route_name(c, wf_seq_at(routes, dn), dn, http));
                dups++;
                continue;
            }
            seen_keys[nseen].key = key;
            seen_keys[nseen++].rule = rn;
            if (http && m && m->type == WF_NODE_MAP && gen_overlap(c, route, rn, m, mn, &ov[nov]))
                nov++;
        }
        if (dups == nm)
            vc_aware(c, WF_VALIDATION_UNREACHABLE_RULE, route, route_name(c, route, rn, http),
                     "all matches used by prior rules", NULL);
    }
    if (http)
        overlaps(c, ov, nov);
    free(seen_keys);
    free(ov);
}

void vc_vs_unreachable(vc *c, const wf_node *spec)
{
    analyze(c, vc_get(spec, "http"), true);
    analyze(c, vc_get(spec, "tcp"), false);
    analyze(c, vc_get(spec, "tls"), false);
}
