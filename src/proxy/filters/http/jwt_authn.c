/*
 * jwt_authn.c - the jwt_authn filter's request-path logic (jwt_authn.h): token extraction,
 * rule matching, requirement evaluation, the result (header changes, payload) of verified
 * providers, and the filter's stats. The filter itself is filters/http/jwt_authn_filter.c.
 */
#include "proxy/filters/http/jwt_authn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/strbuf.h"
#include "proxy/http/filter.h"
#include "proxy/http/headers.h"

#define MAX_TOKENS 4 /* tokens of one provider tried per request */

/* ---------- extraction ---------- */

/* Envoy's extractJWT: the token runs over base64url characters and '.'
 * (ConstantBase64UrlEncodingCharsPlusDot). */
static bool jwt_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

static const char *find_sub(const char *s, size_t n, const char *sub, size_t m)
{
    if (m == 0)
        return s;
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(s + i, sub, m) == 0)
            return s + i;
    return NULL;
}

typedef struct {
    const char *p[MAX_TOKENS];
    size_t len[MAX_TOKENS];
    const h1_str *hdr[MAX_TOKENS]; /* the header it came from, NULL otherwise */
    size_t n;
} tokens;

static void add_token(tokens *t, const char *p, size_t len, const h1_str *hdr)
{
    if (len == 0)
        return;
    for (size_t i = 0; i < t->n; i++) /* the same token in two locations counts once */
        if (t->len[i] == len && memcmp(t->p[i], p, len) == 0)
            return;
    if (t->n < MAX_TOKENS) {
        t->p[t->n] = p;
        t->len[t->n] = len;
        t->hdr[t->n++] = hdr;
    }
}

/* JwtHeaderLocation: the value after the prefix, over the token's characters. */
static void from_header(tokens *t, const wp_jwt_header_loc *loc, const wp_jwt_request *rq)
{
    for (size_t i = 0; i < rq->nheaders; i++) {
        const h1_header *h = &rq->headers[i];
        if (h->name.len != loc->name_len || !h1_ieq(h->name.p, loc->name, loc->name_len))
            continue;
        const char *v = h->value.p;
        size_t n = h->value.len;
        if (loc->prefix_len) {
            const char *at = find_sub(v, n, loc->prefix, loc->prefix_len);
            if (!at)
                continue;
            size_t off = (size_t)(at - v) + loc->prefix_len, end = off;
            while (end < n && jwt_char((unsigned char)v[end]))
                end++;
            add_token(t, v + off, end - off, &h->name);
        } else {
            add_token(t, v, n, &h->name);
        }
    }
}

/* The value of query parameter name in path (NULL none). */
static const char *query_param(const wp_jwt_request *rq, const char *name, size_t *len)
{
    const char *q = memchr(rq->path, '?', rq->path_len);
    if (!q)
        return NULL;
    const char *end = rq->path + rq->path_len, *p = q + 1;
    const char *hash = memchr(p, '#', (size_t)(end - p));
    if (hash)
        end = hash;
    size_t nl = strlen(name);
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (eq && (size_t)(eq - p) == nl && memcmp(p, name, nl) == 0) {
            *len = (size_t)(e - eq - 1);
            return eq + 1;
        }
        p = e + 1;
    }
    return NULL;
}

/* The value of cookie name in the request's Cookie headers (NULL none). */
static const char *cookie(const wp_jwt_request *rq, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < rq->nheaders; i++) {
        const h1_header *h = &rq->headers[i];
        if (!WP_NAME_IS(&h->name, "cookie"))
            continue;
        const char *p = h->value.p, *end = p + h->value.len;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == ';'))
                p++;
            const char *semi = memchr(p, ';', (size_t)(end - p));
            const char *e = semi ? semi : end;
            const char *eq = memchr(p, '=', (size_t)(e - p));
            if (eq && (size_t)(eq - p) == nl && memcmp(p, name, nl) == 0) {
                const char *v = eq + 1;
                size_t vl = (size_t)(e - v);
                if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
                    v++;
                    vl -= 2;
                }
                *len = vl;
                return v;
            }
            p = e;
        }
    }
    return NULL;
}

static const wp_jwt_header_loc DEFAULT_HEADER = {"authorization", 13, "Bearer ", 7};

static void collect(const wp_jwt_provider *p, const wp_jwt_request *rq, tokens *t)
{
    t->n = 0;
    bool dflt = !p->nheaders && !p->nparams && !p->ncookies;
    if (dflt)
        from_header(t, &DEFAULT_HEADER, rq);
    for (size_t i = 0; i < p->nheaders; i++)
        from_header(t, &p->headers[i], rq);
    size_t len = 0;
    const char *v;
    if (dflt && (v = query_param(rq, "access_token", &len)))
        add_token(t, v, len, NULL);
    for (size_t i = 0; i < p->nparams; i++)
        if ((v = query_param(rq, p->params[i], &len)))
            add_token(t, v, len, NULL);
    for (size_t i = 0; i < p->ncookies; i++)
        if ((v = cookie(rq, p->cookies[i], &len)))
            add_token(t, v, len, NULL);
}

bool wp_jwt_find_token(const wp_jwt_provider *p, const wp_jwt_request *rq, const char **tok,
                       size_t *tok_len, const h1_str **hdr)
{
    tokens t;
    collect(p, rq, &t);
    if (!t.n)
        return false;
    *tok = t.p[0];
    *tok_len = t.len[0];
    *hdr = t.hdr[0];
    return true;
}

bool wp_jwt_is_cors_preflight(const wp_jwt_request *rq)
{
    if (rq->method_len != 7 || memcmp(rq->method, "OPTIONS", 7) != 0)
        return false;
    bool origin = false, acrm = false;
    for (size_t i = 0; i < rq->nheaders; i++) {
        const h1_header *h = &rq->headers[i];
        if (h->value.len && WP_NAME_IS(&h->name, "origin"))
            origin = true;
        else if (h->value.len && WP_NAME_IS(&h->name, "access-control-request-method"))
            acrm = true;
    }
    return origin && acrm;
}

const wp_jwt_rule *wp_jwt_match_rule(const wp_jwt_authn_filter *f, const wp_jwt_request *rq)
{
    const char *q = memchr(rq->path, '?', rq->path_len);
    size_t plen = q ? (size_t)(q - rq->path) : rq->path_len;
    for (size_t i = 0; i < f->nrules; i++) {
        const wp_jwt_rule *r = &f->rules[i];
        if (r->exact ? (plen == r->len && memcmp(rq->path, r->value, plen) == 0)
                     : (rq->path_len >= r->len && memcmp(rq->path, r->value, r->len) == 0))
            return r;
    }
    return NULL;
}

/* ---------- results ---------- */

void wp_jwt_result_free(wp_jwt_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nstrings; i++)
        free(r->strings[i]);
    json_decref(r->payload);
    free(r);
}

/* A new result whose ops start with the filter's sanitizing removals. */
static wp_jwt_result *result_new(const wp_jwt_authn_filter *f)
{
    wp_jwt_result *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->ops.add = r->adds;
    r->ops.remove = r->removes;
    for (size_t i = 0; i < f->sanitize.nremove && i < WP_JWT_MAX_ADDS; i++)
        r->removes[r->ops.nremove++] = f->sanitize.remove[i];
    return r;
}

/* An overwriting add of name: value (value owned by r). */
static bool result_add(wp_jwt_result *r, const char *name, char *value)
{
    if (!value)
        return false;
    if (r->ops.nadd >= WP_JWT_MAX_ADDS || r->nstrings >= WP_JWT_MAX_ADDS) {
        free(value);
        return true; /* more headers than weft keeps: dropped */
    }
    r->strings[r->nstrings++] = value;
    r->adds[r->ops.nadd++] =
        (wp_header_add){name, strlen(name), value, strlen(value), WP_OVERWRITE_IF_EXISTS_OR_ADD};
    return true;
}

static char *strndup_or_null(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* The payload part, padded with '=' to a multiple of 4 when pad. */
static char *payload_value(const wp_jwt *t, bool pad)
{
    size_t n = t->payload_b64_len, padn = pad ? (4 - n % 4) % 4 : 0;
    char *v = malloc(n + padn + 1);
    if (!v)
        return NULL;
    memcpy(v, t->payload_b64, n);
    memset(v + n, '=', padn);
    v[n + padn] = '\0';
    return v;
}

/* A claim ("a.b" nested) as a header value: strings, integers, booleans (NULL otherwise or on
 * out of memory; *skip tells which). */
static char *claim_value(json_t *payload, const char *claim, bool *skip)
{
    json_t *v = json_object_get(payload, claim);
    if (!v && strchr(claim, '.')) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", claim);
        v = payload;
        for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v;
             k = strtok_r(NULL, ".", &save))
            v = json_is_object(v) ? json_object_get(v, k) : NULL;
    }
    *skip = false;
    char num[32];
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return strdup(num);
    }
    if (json_is_boolean(v))
        return strdup(json_is_true(v) ? "true" : "false");
    *skip = true;
    return NULL;
}

/* The payload for the dynamic metadata: a copy with the space-delimited claims split. */
static json_t *metadata_payload(const wp_jwt_provider *p, const wp_jwt *t)
{
    json_t *c = json_deep_copy(t->payload);
    for (size_t i = 0; c && i < p->nspace_delimited; i++) {
        json_t *v = json_object_get(c, p->space_delimited[i]);
        if (!json_is_string(v))
            continue;
        json_t *list = json_array();
        const char *s = json_string_value(v);
        while (list && *s) {
            while (*s == ' ')
                s++;
            size_t n = strcspn(s, " ");
            if (n && json_array_append_new(list, json_stringn(s, n)) != 0) {
                json_decref(list);
                list = NULL;
            }
            s += n;
        }
        if (!list || json_object_set_new(c, p->space_delimited[i], list) != 0) {
            json_decref(c);
            return NULL;
        }
    }
    return c;
}

/* AuthenticatorImpl::verifyKey's aftermath for a verified token of p: headers and payload. */
static bool apply(const wp_jwt_authn_filter *f, const wp_jwt_provider *p, const wp_jwt *t,
                  const h1_str *hdr, wp_jwt_result **res)
{
    if (!*res && !(*res = result_new(f)))
        return false;
    wp_jwt_result *r = *res;
    if (p->forward_payload_header &&
        !result_add(r, p->forward_payload_header, payload_value(t, p->pad_forward_payload_header)))
        return false;
    for (size_t i = 0; i < p->nclaim_headers; i++) {
        bool skip;
        char *v = claim_value(t->payload, p->claim_headers[i].claim, &skip);
        if (!skip && !result_add(r, p->claim_headers[i].header, v))
            return false;
    }
    if (!p->forward && hdr && r->ops.nremove < WP_JWT_MAX_ADDS + 2) {
        char *name = strndup_or_null(hdr->p, hdr->len);
        if (!name || r->nstrings >= WP_JWT_MAX_ADDS) {
            free(name);
            return name != NULL;
        }
        for (char *c = name; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        r->strings[r->nstrings++] = name;
        r->removes[r->ops.nremove++] = name;
    }
    if (p->clear_route_cache && (p->forward_payload_header || p->nclaim_headers))
        r->clear_route = true;
    if (p->payload_in_metadata) {
        json_t *md = metadata_payload(p, t);
        if (!md)
            return false;
        json_decref(r->payload);
        r->payload = md;
        r->md_key = p->payload_in_metadata;
    }
    return true;
}

/* ---------- verification ---------- */

static wp_jwt_status check_token(const wp_jwt_provider *p, const char *tok, size_t len,
                                 uint64_t now, wp_jwt *t)
{
    wp_jwt_status st = wp_jwt_parse(t, tok, len);
    if (st != WP_JWT_OK)
        return st;
    if (p->issuer[0] && strcmp(t->iss, p->issuer) != 0)
        st = WP_JWT_UNKNOWN_ISSUER;
    else if ((st = wp_jwt_check_time(t, now, p->clock_skew_s)) != WP_JWT_OK)
        ;
    else if (!wp_jwt_audiences_allowed(t, p->audiences, p->naudiences))
        st = WP_JWT_AUDIENCE_NOT_ALLOWED;
    else if (!p->jwks)
        st = WP_JWKS_NO_VALID_KEYS;
    else
        st = wp_jwt_verify_signature(t, tok, p->jwks);
    if (st != WP_JWT_OK)
        wp_jwt_free(t);
    return st;
}

typedef struct {
    const wp_jwt_authn_filter *f;
    const wp_jwt_request *rq;
    uint64_t now;
    wp_jwt_result **res;
    int8_t done[WP_JWT_MAX_PROVIDERS]; /* 0 not yet, 1 done */
    wp_jwt_status st[WP_JWT_MAX_PROVIDERS];
    bool oom;
} vctx;

/* ProviderVerifierImpl + AuthenticatorImpl: the provider's tokens, the last found first. */
static wp_jwt_status verify_provider(vctx *c, uint32_t i)
{
    if (i < WP_JWT_MAX_PROVIDERS && c->done[i])
        return c->st[i];
    const wp_jwt_provider *p = &c->f->providers[i];
    tokens t;
    collect(p, c->rq, &t);
    wp_jwt_status st = WP_JWT_MISSED;
    for (size_t k = t.n; k-- > 0;) {
        wp_jwt jwt;
        st = check_token(p, t.p[k], t.len[k], c->now, &jwt);
        if (st != WP_JWT_OK)
            continue;
        if (!apply(c->f, p, &jwt, t.hdr[k], c->res)) {
            c->oom = true;
            st = WP_JWT_VERIFICATION_FAIL;
        }
        wp_jwt_free(&jwt);
        break;
    }
    if (i < WP_JWT_MAX_PROVIDERS) {
        c->done[i] = 1;
        c->st[i] = st;
    }
    return st;
}

static wp_jwt_status eval(vctx *c, const wp_jwt_req *r)
{
    switch (r->kind) {
    case WP_JREQ_NONE:
        return WP_JWT_OK;
    case WP_JREQ_PROVIDER:
        return verify_provider(c, r->provider);
    case WP_JREQ_ALL:
        for (size_t i = 0; i < r->nkids; i++) {
            wp_jwt_status s = eval(c, &r->kids[i]);
            if (s != WP_JWT_OK)
                return s;
        }
        return WP_JWT_OK;
    case WP_JREQ_ANY: {
        /* AnyVerifierImpl::onComplete */
        wp_jwt_status fin = WP_JWT_MISSED;
        for (size_t i = 0; i < r->nkids; i++) {
            wp_jwt_status s = eval(c, &r->kids[i]);
            if (s == WP_JWT_OK)
                return WP_JWT_OK;
            if ((s != WP_JWT_MISSED && s != WP_JWT_UNKNOWN_ISSUER) || fin == WP_JWT_MISSED)
                fin = s;
        }
        if (r->allow_missing_or_failed || (r->allow_missing && fin == WP_JWT_MISSED))
            return WP_JWT_OK;
        return fin;
    }
    }
    return WP_JWT_OK;
}

wp_jwt_status wp_jwt_verify_request(const wp_jwt_authn_filter *f, const wp_jwt_req *req,
                                    const wp_jwt_request *rq, uint64_t now, wp_jwt_result **res)
{
    vctx c = {.f = f, .rq = rq, .now = now, .res = res};
    *res = NULL;
    wp_jwt_status st = eval(&c, req);
    return c.oom ? WP_JWT_VERIFICATION_FAIL : st;
}

/* ---------- stats ---------- */

static uint32_t reg(wp_stats *st, const char *hcm_prefix, const char *prefix, const char *name)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_printf(&b, "http.%s.jwt_authn.%s%s", hcm_prefix, prefix, name);
    uint32_t slot = wf_strbuf_failed(&b) ? WP_STAT_INVALID : wp_stats_counter(st, b.data);
    wf_strbuf_free(&b);
    return slot;
}

int wp_jwt_authn_register_stats(wp_stats *st, const wp_config *c)
{
    int rc = 0;
    for (size_t i = 0; i < c->nhcms; i++) {
        const wp_hcm *h = c->hcms[i];
        /* the stat slots are the filter's one mutable part, written before workers start */
        wp_jwt_authn_filter *f =
            (wp_jwt_authn_filter *)(uintptr_t)wp_fchain_find(h->filter_chain, WP_JWT_AUTHN_NAME);
        if (!f)
            continue;
        const char *p = f->stat_prefix ? f->stat_prefix : "";
        f->st_allowed = reg(st, h->stat_prefix, p, "allowed");
        f->st_denied = reg(st, h->stat_prefix, p, "denied");
        f->st_cors = reg(st, h->stat_prefix, p, "cors_preflight_bypassed");
        f->st_fetch_ok = reg(st, h->stat_prefix, p, "jwks_fetch_success");
        f->st_fetch_failed = reg(st, h->stat_prefix, p, "jwks_fetch_failed");
        if (f->st_allowed == WP_STAT_INVALID || f->st_denied == WP_STAT_INVALID ||
            f->st_cors == WP_STAT_INVALID || f->st_fetch_ok == WP_STAT_INVALID ||
            f->st_fetch_failed == WP_STAT_INVALID)
            rc = -1;
    }
    return rc;
}
