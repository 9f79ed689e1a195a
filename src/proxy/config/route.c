/*
 * route.c - virtual host lookup, route matching, weighted picks, rewrites and redirects with
 * Envoy's semantics. See route.h for the behaviour and the Envoy sources it follows.
 */
#include "proxy/config/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------- small string helpers ---------- */

static bool name_is(const char *name, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len == n && wp_bytes_eq(name, lit, n, true);
}

/* Length of the path part of a request-target (up to the first '?' or '#'). */
static size_t path_only_len(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '?' || p[i] == '#')
            return i;
    }
    return len;
}

/* ---------- domain index ---------- */

enum { RI_EXACT = 0, RI_SUFFIX = 1, RI_PREFIX = 2 };

typedef struct {
    const char *key; /* lower-case; NULL = empty slot */
    size_t len;
    uint64_t hash;
    int kind;
    const wp_vhost *vh;
} ri_slot;

struct wp_route_index {
    ri_slot *slots;
    size_t mask;                       /* capacity - 1 (capacity is a power of two) */
    size_t nkeys;                      /* exact + wildcard domains */
    size_t *suffix_lens, nsuffix_lens; /* distinct key lengths, longest first */
    size_t *prefix_lens, nprefix_lens;
    const wp_vhost *dflt; /* the "*" virtual host */
};

/* FNV-1a over the kind and the lower-cased bytes. */
static uint64_t ri_hash(int kind, const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    h = (h ^ (uint64_t)kind) * 1099511628211ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ wp_ascii_lower((unsigned char)s[i])) * 1099511628211ull;
    return h;
}

static const ri_slot *ri_find(const struct wp_route_index *ix, int kind, const char *s, size_t len)
{
    uint64_t h = ri_hash(kind, s, len);
    for (size_t i = (size_t)h & ix->mask;; i = (i + 1) & ix->mask) {
        const ri_slot *sl = &ix->slots[i];
        if (!sl->key)
            return NULL;
        if (sl->hash == h && sl->kind == kind && sl->len == len &&
            wp_bytes_eq(sl->key, s, len, true))
            return sl;
    }
}

static const wp_vhost *ri_lookup(const struct wp_route_index *ix, int kind, const char *s,
                                 size_t len)
{
    const ri_slot *sl = ri_find(ix, kind, s, len);
    return sl ? sl->vh : NULL;
}

/* Inserts key; returns false when it is already there (a duplicate domain). */
static bool ri_insert(struct wp_route_index *ix, int kind, const char *key, size_t len,
                      const wp_vhost *vh)
{
    if (ri_find(ix, kind, key, len))
        return false;
    uint64_t h = ri_hash(kind, key, len);
    size_t i = (size_t)h & ix->mask;
    while (ix->slots[i].key)
        i = (i + 1) & ix->mask;
    ix->slots[i] = (ri_slot){key, len, h, kind, vh};
    ix->nkeys++;
    return true;
}

static void lens_add(size_t *lens, size_t *n, size_t len)
{
    for (size_t i = 0; i < *n; i++) {
        if (lens[i] == len)
            return;
    }
    size_t i = *n;
    while (i > 0 && lens[i - 1] < len) { /* keep longest first */
        lens[i] = lens[i - 1];
        i--;
    }
    lens[i] = len;
    (*n)++;
}

static const char *rc_name(const wp_route_config *rc)
{
    return rc->name ? rc->name : "";
}

/* Adds one configured domain (already lower-cased, NUL-terminated). */
static int ri_add_domain(struct wp_route_index *ix, const wp_route_config *rc, const wp_vhost *vh,
                         const char *d, wf_strbuf *err)
{
    size_t len = strlen(d);
    int kind = RI_EXACT;
    const char *key = d;
    size_t klen = len;
    if (len == 1 && d[0] == '*') {
        if (ix->dflt) {
            wf_strbuf_printf(err, "Only a single wildcard domain is permitted in route %s",
                             rc_name(rc));
            return -1;
        }
        ix->dflt = vh;
        return 0;
    }
    if (len > 0 && d[0] == '*') {
        kind = RI_SUFFIX;
        key = d + 1;
        klen = len - 1;
    } else if (len > 0 && d[len - 1] == '*') {
        kind = RI_PREFIX;
        klen = len - 1;
    }
    if (!ri_insert(ix, kind, key, klen, vh)) {
        wf_strbuf_printf(err,
                         "Only unique values for domains are permitted. Duplicate entry of "
                         "domain %s in route %s",
                         d, rc_name(rc));
        return -1;
    }
    if (kind == RI_SUFFIX)
        lens_add(ix->suffix_lens, &ix->nsuffix_lens, klen);
    else if (kind == RI_PREFIX)
        lens_add(ix->prefix_lens, &ix->nprefix_lens, klen);
    return 0;
}

static struct wp_route_index *ri_alloc(wf_arena *a, size_t ndomains)
{
    size_t cap = 8;
    while (cap < ndomains * 2)
        cap *= 2;
    struct wp_route_index *ix = wf_arena_alloc(a, sizeof(*ix));
    if (!ix)
        return NULL;
    ix->slots = wf_arena_alloc(a, cap * sizeof(ri_slot));
    ix->suffix_lens = wf_arena_alloc(a, (ndomains + 1) * sizeof(size_t));
    ix->prefix_lens = wf_arena_alloc(a, (ndomains + 1) * sizeof(size_t));
    if (!ix->slots || !ix->suffix_lens || !ix->prefix_lens)
        return NULL;
    ix->mask = cap - 1;
    return ix;
}

int wp_route_index_build(wf_arena *a, wp_route_config *rc, wf_strbuf *err)
{
    rc->index = NULL;
    size_t n = 0;
    for (size_t v = 0; v < rc->nvhosts; v++)
        n += rc->vhosts[v].ndomains;
    struct wp_route_index *ix = ri_alloc(a, n);
    if (!ix) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    for (size_t v = 0; v < rc->nvhosts; v++) {
        const wp_vhost *vh = &rc->vhosts[v];
        for (size_t i = 0; i < vh->ndomains; i++) {
            char *d = wf_arena_strdup(a, vh->domains[i] ? vh->domains[i] : "");
            if (!d) {
                wf_strbuf_puts(err, "out of memory");
                return -1;
            }
            for (char *p = d; *p; p++)
                *p = (char)wp_ascii_lower((unsigned char)*p);
            if (ri_add_domain(ix, rc, vh, d, err) != 0)
                return -1;
        }
    }
    rc->index = ix;
    return 0;
}

/* Envoy's HeaderUtility::getPortStart: the last ':' unless a ']' follows it. */
static size_t host_without_port(const char *h, size_t len)
{
    size_t colon = SIZE_MAX, bracket = SIZE_MAX;
    for (size_t i = 0; i < len; i++) {
        if (h[i] == ':')
            colon = i;
        else if (h[i] == ']')
            bracket = i;
    }
    if (colon == SIZE_MAX)
        return len;
    if (bracket == SIZE_MAX || bracket < colon)
        return colon;
    return len;
}

static const wp_vhost *find_wildcard(const struct wp_route_index *ix, int kind, const char *h,
                                     size_t len)
{
    const size_t *lens = kind == RI_SUFFIX ? ix->suffix_lens : ix->prefix_lens;
    size_t n = kind == RI_SUFFIX ? ix->nsuffix_lens : ix->nprefix_lens;
    for (size_t i = 0; i < n; i++) {
        size_t l = lens[i];
        if (l >= len) /* a wildcard never matches the empty string */
            continue;
        const char *s = kind == RI_SUFFIX ? h + (len - l) : h;
        const wp_vhost *vh = ri_lookup(ix, kind, s, l);
        if (vh)
            return vh;
    }
    return NULL;
}

const wp_vhost *wp_route_find_vhost(const wp_route_config *rc, const char *host, size_t len)
{
    if (!rc || !rc->index)
        return NULL;
    const struct wp_route_index *ix = rc->index;
    if (ix->nkeys == 0) /* only a default virtual host (or none) */
        return ix->dflt;
    if (!host)
        return NULL;
    if (rc->ignore_port_in_host_matching)
        len = host_without_port(host, len);
    const wp_vhost *vh = ri_lookup(ix, RI_EXACT, host, len);
    if (!vh)
        vh = find_wildcard(ix, RI_SUFFIX, host, len);
    if (!vh)
        vh = find_wildcard(ix, RI_PREFIX, host, len);
    return vh ? vh : ix->dflt;
}

/* ---------- regex ---------- */

/* ---------- header and query parameter matchers ---------- */

typedef struct {
    const char *p;
    size_t len;
    bool found;
    bool overflow; /* repeated header too long to join */
} hvalue;

/* Appends s to the join buffer at *used; false when it does not fit. */
static bool join_add(wp_regex_ctx *rx, size_t *used, const char *s, size_t len, bool comma)
{
    size_t need = len + (comma ? 1 : 0);
    if (need > WP_ROUTE_JOIN_MAX - *used)
        return false;
    if (comma)
        rx->join[(*used)++] = ',';
    if (len)
        memcpy(rx->join + *used, s, len);
    *used += len;
    return true;
}

/* All values of the header named name joined with ",". */
static hvalue header_values(wp_regex_ctx *rx, const wp_route_req *req, const char *name,
                            size_t nlen)
{
    hvalue v = {NULL, 0, false, false};
    size_t used = 0, count = 0;
    for (size_t i = 0; i < req->nheaders; i++) {
        const h1_header *h = &req->headers[i];
        if (h->name.len != nlen || !wp_bytes_eq(h->name.p, name, nlen, true))
            continue;
        count++;
        if (count == 1) {
            v = (hvalue){h->value.p, h->value.len, true, false};
            continue;
        }
        if ((count == 2 && !join_add(rx, &used, v.p, v.len, false)) ||
            !join_add(rx, &used, h->value.p, h->value.len, true)) {
            v.overflow = true;
            return v;
        }
        v.p = rx->join;
        v.len = used;
    }
    return v;
}

static hvalue pseudo(const char *p, size_t len)
{
    return (hvalue){p ? p : "", p ? len : 0, p != NULL, false};
}

/* The value a header matcher looks at, pseudo-headers included. */
static hvalue request_header(wp_regex_ctx *rx, const wp_route_req *req, const char *name,
                             size_t nlen)
{
    if (name_is(name, nlen, ":method"))
        return pseudo(req->method, req->method_len);
    if (name_is(name, nlen, ":path"))
        return pseudo(req->path, req->path_len);
    if (name_is(name, nlen, ":scheme"))
        return pseudo(req->scheme, req->scheme ? strlen(req->scheme) : 0);
    if (name_is(name, nlen, ":authority") || name_is(name, nlen, "host")) {
        if (req->authority)
            return pseudo(req->authority, req->authority_len);
        return header_values(rx, req, "host", 4);
    }
    return header_values(rx, req, name, nlen);
}

static bool header_matches(wp_regex_ctx *rx, const wp_route_req *req, const wp_kv_matcher *km)
{
    size_t nlen = km->name_len ? km->name_len : (km->name ? strlen(km->name) : 0);
    hvalue v = request_header(rx, req, km->name ? km->name : "", nlen);
    if (km->m.kind == WP_SM_PRESENT)
        return v.found != km->invert;
    if (v.overflow) {
        rx->join_overflows++;
        return false;
    }
    if (!v.found && !km->treat_missing_as_empty)
        return false;
    const char *s = v.found ? v.p : "";
    return wp_string_match(rx, &km->m, s, v.found ? v.len : 0) != km->invert;
}

/* First value of query parameter name in the request-target (not percent-decoded). */
static bool query_param(const char *t, size_t tlen, const char *name, size_t nlen, const char **val,
                        size_t *vlen)
{
    size_t q = path_only_len(t, tlen);
    if (q >= tlen || t[q] != '?')
        return false;
    size_t end = q + 1;
    while (end < tlen && t[end] != '#')
        end++;
    size_t pos = q + 1;
    while (pos < end) {
        size_t amp = pos;
        while (amp < end && t[amp] != '&')
            amp++;
        size_t eq = pos;
        while (eq < amp && t[eq] != '=')
            eq++;
        if (eq - pos == nlen && memcmp(t + pos, name, nlen) == 0) {
            *val = eq < amp ? t + eq + 1 : t + amp;
            *vlen = eq < amp ? amp - eq - 1 : 0;
            return true;
        }
        pos = amp + 1;
    }
    return false;
}

static bool query_matches(wp_regex_ctx *rx, const wp_route_req *req, const wp_kv_matcher *km)
{
    const char *val = NULL;
    size_t vlen = 0;
    size_t nlen = km->name_len ? km->name_len : (km->name ? strlen(km->name) : 0);
    bool found = req->path &&
                 query_param(req->path, req->path_len, km->name ? km->name : "", nlen, &val, &vlen);
    if (!found)
        return false;
    return wp_string_match(rx, &km->m, val, vlen);
}

/* ---------- route matching ---------- */

static bool path_matches(wp_regex_ctx *rx, const wp_route *r, const char *path, size_t plen)
{
    bool ci = !r->case_sensitive;
    size_t l = r->path_len;
    switch (r->path_kind) {
    case WP_PATH_PREFIX:
        return plen >= l && wp_bytes_eq(path, r->path, l, ci);
    case WP_PATH_EXACT:
        return plen == l && wp_bytes_eq(path, r->path, l, ci);
    case WP_PATH_REGEX:
        return wp_regex_full_match(rx, r->path_re, path, plen);
    case WP_PATH_SEPARATED_PREFIX:
        return plen >= l && wp_bytes_eq(path, r->path, l, ci) && (plen == l || path[l] == '/');
    }
    return false;
}

static bool route_matches(wp_regex_ctx *rx, const wp_route *r, const wp_route_req *req)
{
    const char *path = req->path ? req->path : "";
    size_t plen = req->path ? path_only_len(req->path, req->path_len) : 0;
    if (!path_matches(rx, r, path, plen))
        return false;
    for (size_t i = 0; i < r->nheaders; i++) {
        if (!header_matches(rx, req, &r->headers[i]))
            return false;
    }
    for (size_t i = 0; i < r->nquery; i++) {
        if (!query_matches(rx, req, &r->query[i]))
            return false;
    }
    return true;
}

bool wp_route_headers_match(wp_regex_ctx *rx, const wp_route_req *req, const wp_kv_matcher *m,
                            size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!header_matches(rx, req, &m[i]))
            return false;
    }
    return true;
}

const wp_route *wp_route_match(wp_regex_ctx *rx, const wp_vhost *vh, const wp_route_req *req)
{
    if (!vh || !req)
        return NULL;
    if (vh->require_tls_all && !req->https)
        return &vh->tls_redirect;
    for (size_t i = 0; i < vh->nroutes; i++) {
        if (route_matches(rx, &vh->routes[i], req))
            return &vh->routes[i];
    }
    return NULL;
}

int wp_route_pick_weighted(const wp_route *r, uint64_t random)
{
    if (!r || r->nweighted == 0)
        return -1;
    uint64_t total = 0;
    for (size_t i = 0; i < r->nweighted; i++)
        total += r->weighted[i].weight;
    if (total == 0)
        return -1;
    uint64_t v = random % total, end = 0;
    for (size_t i = 0; i < r->nweighted; i++) {
        end += r->weighted[i].weight;
        if (v < end)
            return (int)i;
    }
    return -1; /* not reached */
}

/* ---------- rewrites ---------- */

/* Output either into a fixed buffer (overflow flagged) or a strbuf. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
    bool overflow;
    wf_strbuf *sb;
} rw_sink;

static void sink_put(rw_sink *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (o->sb) {
        wf_strbuf_append(o->sb, s, n);
    } else if (o->overflow || n > o->cap - o->len) {
        o->overflow = true;
        return;
    } else {
        memcpy(o->buf + o->len, s, n);
    }
    o->len += n;
}

/* Appends an RE2-style substitution (\0..\9, \\) for the current match. */
static void put_subst(rw_sink *o, const char *subst, const char *s, const PCRE2_SIZE *ov,
                      int groups)
{
    const char *p = subst;
    while (*p) {
        const char *bs = strchr(p, '\\');
        if (!bs) {
            sink_put(o, p, strlen(p));
            return;
        }
        sink_put(o, p, (size_t)(bs - p));
        char c = bs[1];
        if (c >= '0' && c <= '9') {
            int g = c - '0';
            if (g < groups && ov[2 * g] != PCRE2_UNSET)
                sink_put(o, s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
            p = bs + 2;
        } else if (c == '\\') {
            sink_put(o, "\\", 1);
            p = bs + 2;
        } else {
            sink_put(o, "\\", 1); /* kept literally, see route.h */
            p = bs + 1;
        }
    }
}

/* RE2::GlobalReplace of s[0..len) into o. Returns the number of replacements, -1 when a regex
 * limit or error stopped it. */
static int replace_all(wp_regex_ctx *rx, const pcre2_code *re, const char *subst, const char *s,
                       size_t len, rw_sink *o)
{
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(rx->md);
    size_t p = 0, lastend = SIZE_MAX;
    int count = 0;
    while (p <= len) {
        int rc = wp_regex_match(rx, re, s, len, p, 0);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return -1;
        int groups = rc == 0 ? (int)WP_REGEX_OVECTOR_PAIRS : rc;
        size_t ms = ov[0], me = ov[1];
        if (ms > p)
            sink_put(o, s + p, ms - p);
        if (ms == lastend && ms == me) { /* empty match right after the previous one */
            if (p < len)
                sink_put(o, s + p, 1);
            p++;
            continue;
        }
        put_subst(o, subst, s, ov, groups);
        p = me;
        lastend = me;
        count++;
    }
    if (p < len)
        sink_put(o, s + p, len - p);
    return count;
}

/* Bytes of target matched by r's path matcher (what a prefix rewrite replaces); SIZE_MAX when
 * the target does not start with it. */
static size_t matched_len(const wp_route *r, const char *t, size_t len)
{
    if (r->path_kind == WP_PATH_REGEX)
        return path_only_len(t, len);
    size_t l = r->path_len;
    if (len < l || !wp_bytes_eq(t, r->path, l, !r->case_sensitive))
        return SIZE_MAX;
    return l;
}

/* Writes the rewritten target into o. Returns 1 when rewritten, 0 when no rewrite applies,
 * -1 when the regex stopped at a limit. */
static int apply_rewrite(wp_regex_ctx *rx, const wp_route *r, const char *prefix,
                         const pcre2_code *re, const char *subst, const char *t, size_t len,
                         rw_sink *o)
{
    if (prefix && *prefix) {
        size_t m = matched_len(r, t, len);
        if (m == SIZE_MAX)
            return 0;
        sink_put(o, prefix, strlen(prefix));
        sink_put(o, t + m, len - m);
        return 1;
    }
    if (!re)
        return 0;
    size_t pl = path_only_len(t, len);
    int n = replace_all(rx, re, subst ? subst : "", t, pl, o);
    if (n < 0)
        return -1;
    sink_put(o, t + pl, len - pl);
    return n > 0 ? 1 : 0;
}

size_t wp_route_rewrite_path(wp_regex_ctx *rx, const wp_route *r, const char *target, size_t len,
                             char *out, size_t cap)
{
    if (!r || !target)
        return 0;
    rw_sink o = {out, cap, 0, false, NULL};
    int rc = apply_rewrite(rx, r, r->prefix_rewrite, r->regex_rewrite, r->regex_rewrite_subst,
                           target, len, &o);
    if (rc <= 0)
        return 0;
    if (o.overflow || o.len >= cap)
        return SIZE_MAX;
    out[o.len] = '\0';
    return o.len;
}

/* ---------- redirects ---------- */

/* The protocol Envoy compares ports against: X-Forwarded-Proto, else the connection's. */
static const char *request_protocol(const wp_route_req *req, bool secure, size_t *len)
{
    for (size_t i = 0; i < req->nheaders; i++) {
        const h1_header *h = &req->headers[i];
        if (name_is(h->name.p, h->name.len, "x-forwarded-proto")) {
            *len = h->value.len;
            return h->value.p;
        }
    }
    *len = secure ? 5 : 4;
    return secure ? "https" : "http";
}

/* Envoy's processRequestHost: length of the request host to keep in the Location. */
static size_t redirect_host_len(const wp_route_req *req, const char *scheme, bool port_redirect,
                                bool secure)
{
    const char *h = req->authority;
    size_t len = req->authority_len, end = SIZE_MAX;
    if (!h || len == 0)
        return 0;
    for (size_t i = len; i-- > 0;) {
        if (h[0] == '[' ? (h[i] == ']' && i + 1 < len && h[i + 1] == ':') : h[i] == ':') {
            end = h[0] == '[' ? i + 1 : i;
            break;
        }
    }
    if (end == SIZE_MAX)
        return len;
    const char *port = h + end;
    size_t plen = len - end, prlen = 0;
    const char *proto = request_protocol(req, secure, &prlen);
    bool remove = port_redirect;
    if (!(strlen(scheme) == prlen && memcmp(scheme, proto, prlen) == 0)) {
        remove |= name_is(proto, prlen, "https") && plen == 4 && memcmp(port, ":443", 4) == 0;
        remove |= name_is(proto, prlen, "http") && plen == 3 && memcmp(port, ":80", 3) == 0;
    }
    return remove ? end : len;
}

/* The redirect's path and query (before the leading '/' and strip_query rules) into path.
 * Returns whether path_redirect carried its own query. */
static bool redirect_path(wp_regex_ctx *rx, const wp_route *r, const wp_route_req *req,
                          wf_strbuf *path)
{
    const wp_redirect *rd = &r->redirect;
    const char *t = req->path ? req->path : "";
    size_t tlen = req->path ? req->path_len : 0;
    if (rd->path && *rd->path) {
        bool has_query = strchr(rd->path, '?') != NULL;
        wf_strbuf_puts(path, rd->path);
        const char *q = has_query ? NULL : memchr(t, '?', tlen);
        if (q)
            wf_strbuf_append(path, q, tlen - (size_t)(q - t));
        return has_query;
    }
    rw_sink o = {NULL, 0, 0, false, path};
    int rc = apply_rewrite(rx, r, rd->prefix, rd->regex, rd->regex_subst, t, tlen, &o);
    if (rc <= 0) { /* no rewrite, or a regex limit: keep the request's path */
        wf_strbuf_reset(path);
        wf_strbuf_append(path, t, tlen);
    }
    return false;
}

/* scheme_redirect / https_redirect, else the request's :scheme, else the connection's. */
static const char *redirect_scheme(const wp_redirect *rd, const wp_route_req *req, bool secure)
{
    if (rd->scheme && *rd->scheme)
        return rd->scheme;
    if (req->scheme && *req->scheme)
        return req->scheme;
    return secure ? "https" : "http";
}

int wp_route_redirect(wp_regex_ctx *rx, const wp_route *r, const wp_route_req *req, bool secure,
                      wf_strbuf *location)
{
    if (!r || !req || !location || r->action != WP_ACT_REDIRECT)
        return -1;
    const wp_redirect *rd = &r->redirect;
    wf_strbuf_reset(location);
    if (rd->ssl_redirect) { /* createSslRedirectPath: the Host and path as they came */
        wf_strbuf_puts(location, "https://");
        wf_strbuf_append(location, req->authority ? req->authority : "", req->authority_len);
        wf_strbuf_append(location, req->path ? req->path : "", req->path_len);
        return wf_strbuf_failed(location) ? -1 : 301;
    }
    const char *scheme = redirect_scheme(rd, req, secure);
    wf_strbuf_puts(location, scheme);
    wf_strbuf_puts(location, "://");
    if (rd->host && *rd->host)
        wf_strbuf_puts(location, rd->host);
    else
        wf_strbuf_append(location, req->authority ? req->authority : "",
                         redirect_host_len(req, scheme, rd->port != 0, secure));
    /* Envoy's newUri leaves out a port_redirect that is the scheme's default (:80 for http,
     * :443 for https) */
    bool default_port = (rd->port == 80 && strcasecmp(scheme, "http") == 0) ||
                        (rd->port == 443 && strcasecmp(scheme, "https") == 0);
    if (rd->port && !default_port)
        wf_strbuf_printf(location, ":%u", (unsigned)rd->port);

    wf_strbuf path = WF_STRBUF_INIT;
    bool own_query = redirect_path(rx, r, req, &path);
    const char *p = wf_strbuf_cstr(&path);
    size_t plen = path.len;
    if (plen == 0 || p[0] != '/')
        wf_strbuf_putc(location, '/');
    if (rd->strip_query && !own_query) {
        const char *q = memchr(p, '?', plen);
        if (q)
            plen = (size_t)(q - p);
    }
    wf_strbuf_append(location, p, plen);
    bool failed = wf_strbuf_failed(&path) || wf_strbuf_failed(location);
    wf_strbuf_free(&path);
    if (failed)
        return -1;
    return rd->code ? rd->code : 301;
}
