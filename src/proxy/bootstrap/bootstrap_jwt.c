/*
 * bootstrap_jwt.c - decode the jwt_authn filter's config
 * (envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication, see
 * filters/http/jwt_authn.h for the behaviour and what is not supported).
 *
 * Supported: providers (map of JwtProvider {issuer, audiences, local_jwks {inline_string |
 * filename}, forward, from_headers {name, value_prefix}, from_params, from_cookies,
 * forward_payload_header, pad_forward_payload_header, payload_in_metadata,
 * normalize_payload_in_metadata {space_delimited_claims}, claim_to_headers {header_name,
 * claim_name}, clock_skew_seconds, clear_route_cache}), rules ({match {prefix | path},
 * requires}), JwtRequirement {provider_name, requires_any, requires_all, and allow_missing /
 * allow_missing_or_failed inside requires_any}, bypass_cors_preflight, stat_prefix.
 * A local JWKS that does not parse is logged (Envoy's "Invalid inline jwks for issuer") and
 * leaves the provider without keys: tokens for it fail closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/http/jwt_authn.h"

#define UNSUPPORTED_MSG "not supported by weft-proxy's jwt_authn filter"
#define JWKS_FILE_MAX   (1u << 20)

typedef struct {
    wp_jwt_authn_filter *f;
    const char *const *names; /* provider names by index */
} jctx;

static bool reject_unsupported(bs *b, json_t *o, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (bs_get(o, names[i]))
            return bs_fail_at(b, names[i], UNSUPPORTED_MSG);
    return true;
}

/* An array of strings o[k] into a new arena array. */
static bool str_list(bs *b, json_t *o, const char *k, const char *const **out, size_t *n)
{
    json_t *v = bs_get(o, k);
    *n = 0;
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, k, "an array");
    size_t len = json_array_size(v);
    const char **arr = bs_alloc(b, sizeof(char *) * (len ? len : 1));
    if (!arr)
        return false;
    size_t m = bs_push(b, k);
    for (size_t i = 0; i < len && !b->failed; i++) {
        json_t *e = json_array_get(v, i);
        size_t mi = bs_push_i(b, i);
        if (!json_is_string(e))
            bs_fail(b, "wrong type: expected a string");
        else
            arr[i] = bs_strdup(b, json_string_value(e));
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    *out = arr;
    *n = len;
    return !b->failed;
}

static char *lower_dup(bs *b, const char *s)
{
    char *d = (char *)bs_strdup(b, s);
    for (char *c = d; c && *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    return d;
}

static bool dec_header_loc(bs *b, json_t *o, void *arg)
{
    wp_jwt_header_loc *l = arg;
    const char *name = NULL, *prefix = "";
    if (!bs_fields(b, o, "name value_prefix") || !bs_req_str(b, o, "name", &name) ||
        !bs_str(b, o, "value_prefix", &prefix))
        return false;
    l->name = lower_dup(b, name);
    l->name_len = strlen(name);
    l->prefix = bs_strdup(b, prefix ? prefix : "");
    l->prefix_len = l->prefix ? strlen(l->prefix) : 0;
    return l->name && l->prefix;
}

static bool dec_claim_header(bs *b, json_t *o, void *arg)
{
    wp_jwt_claim_header *c = arg;
    const char *h = NULL, *claim = NULL;
    if (!bs_fields(b, o, "header_name claim_name") || !bs_req_str(b, o, "header_name", &h) ||
        !bs_req_str(b, o, "claim_name", &claim))
        return false;
    c->header = lower_dup(b, h);
    c->claim = bs_strdup(b, claim);
    return c->header && c->claim;
}

/* The JWKS text of local_jwks (DataSource): inline_string or filename. */
static bool jwks_text(bs *b, json_t *o, char **text, size_t *len)
{
    const char *s = NULL, *file = NULL;
    if (!bs_fields(b, o, "inline_string filename") || !bs_str(b, o, "inline_string", &s) ||
        !bs_str(b, o, "filename", &file))
        return false;
    if (s) {
        *text = strdup(s);
        *len = strlen(s);
        return *text ? true : bs_fail(b, "out of memory");
    }
    if (!file)
        return bs_fail(b, "one of inline_string or filename is required");
    FILE *fp = fopen(file, "rb");
    if (!fp)
        return bs_fail_atf(b, "filename", "cannot read %s", file);
    *text = malloc(JWKS_FILE_MAX + 1);
    *len = *text ? fread(*text, 1, JWKS_FILE_MAX + 1, fp) : 0;
    fclose(fp);
    if (!*text || *len > JWKS_FILE_MAX) {
        free(*text);
        return bs_fail_at(b, "filename", *text ? "larger than 1 MiB" : "out of memory");
    }
    return true;
}

static void jwks_free_fn(void *p)
{
    wp_jwks_free(p);
}

static bool dec_local_jwks(bs *b, json_t *o, void *arg)
{
    wp_jwt_provider *p = arg;
    char *text = NULL;
    size_t len = 0;
    if (!jwks_text(b, o, &text, &len))
        return false;
    wp_jwt_status st, key_err;
    wp_jwks *k = wp_jwks_parse(text, len, &st, &key_err);
    free(text);
    if (!k) {
        WF_LOG(WF_LC_jwt, WF_LOG_WARN, "Invalid inline jwks for issuer: %s (%s: %s%s%s)", p->issuer,
               b->path, wp_jwt_status_str(st), key_err ? ": " : "",
               key_err ? wp_jwt_status_str(key_err) : "");
        return true;
    }
    p->jwks = k;
    return wp_config_own(b->c, k, jwks_free_fn) ? true : bs_fail(b, "out of memory");
}

static bool dec_normalize(bs *b, json_t *o, void *arg)
{
    wp_jwt_provider *p = arg;
    return bs_fields(b, o, "space_delimited_claims") &&
           str_list(b, o, "space_delimited_claims", &p->space_delimited, &p->nspace_delimited);
}

static bool dec_provider(bs *b, json_t *o, wp_jwt_provider *p)
{
    static const char *const unsupported[] = {"remote_jwks",
                                              "subject",
                                              "require_expiration",
                                              "max_lifetime",
                                              "jwt_cache_config",
                                              "header_in_metadata",
                                              "failed_status_in_metadata",
                                              NULL};
    const char *fph = NULL;
    uint64_t skew = WP_JWT_DEFAULT_SKEW_S;
    void *arr = NULL;
    size_t n = 0;
    if (!bs_fields(b, o,
                   "issuer audiences local_jwks remote_jwks forward from_headers from_params "
                   "from_cookies forward_payload_header pad_forward_payload_header "
                   "payload_in_metadata normalize_payload_in_metadata claim_to_headers "
                   "clock_skew_seconds clear_route_cache subject require_expiration "
                   "max_lifetime jwt_cache_config header_in_metadata "
                   "failed_status_in_metadata") ||
        !reject_unsupported(b, o, unsupported) || !bs_str(b, o, "issuer", &p->issuer) ||
        !str_list(b, o, "audiences", &p->audiences, &p->naudiences) ||
        !bs_bool(b, o, "forward", &p->forward) || !bs_str(b, o, "forward_payload_header", &fph) ||
        !bs_bool(b, o, "pad_forward_payload_header", &p->pad_forward_payload_header) ||
        !bs_str(b, o, "payload_in_metadata", &p->payload_in_metadata) ||
        !bs_u64(b, o, "clock_skew_seconds", UINT32_MAX, &skew) ||
        !bs_bool(b, o, "clear_route_cache", &p->clear_route_cache))
        return false;
    if (!p->issuer)
        p->issuer = "";
    p->clock_skew_s = skew;
    if (fph && *fph && !(p->forward_payload_header = lower_dup(b, fph)))
        return false;
    if (p->payload_in_metadata && !*p->payload_in_metadata)
        p->payload_in_metadata = NULL;
    if (!bs_each(b, o, "from_headers", sizeof(wp_jwt_header_loc), &arr, &n, dec_header_loc))
        return false;
    p->headers = arr;
    p->nheaders = n;
    arr = NULL;
    n = 0;
    if (!str_list(b, o, "from_params", &p->params, &p->nparams) ||
        !str_list(b, o, "from_cookies", &p->cookies, &p->ncookies) ||
        !bs_sub(b, o, "normalize_payload_in_metadata", dec_normalize, p) ||
        !bs_each(b, o, "claim_to_headers", sizeof(wp_jwt_claim_header), &arr, &n, dec_claim_header))
        return false;
    p->claim_headers = arr;
    p->nclaim_headers = n;
    if (!bs_get(o, "local_jwks"))
        return bs_fail(b, "one of local_jwks or remote_jwks is required (weft-proxy supports "
                          "local_jwks)");
    return bs_sub(b, o, "local_jwks", dec_local_jwks, p);
}

static bool dec_providers(bs *b, json_t *tc, jctx *j)
{
    json_t *map = bs_get(tc, "providers");
    if (!map)
        return true;
    if (!json_is_object(map))
        return bs_wrong_type(b, "providers", "an object");
    size_t n = json_object_size(map);
    if (n > WP_JWT_MAX_PROVIDERS)
        return bs_fail_at(b, "providers", "more than 32 providers");
    wp_jwt_provider *ps = bs_alloc(b, sizeof(*ps) * (n ? n : 1));
    const char **names = bs_alloc(b, sizeof(char *) * (n ? n : 1));
    if (!ps || !names)
        return false;
    size_t m = bs_push(b, "providers"), i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v)
    {
        size_t mk = bs_push(b, k);
        names[i] = ps[i].name = bs_strdup(b, k);
        if (!json_is_object(v))
            bs_fail(b, "wrong type: expected an object");
        else
            dec_provider(b, v, &ps[i]);
        bs_pop(b, mk);
        if (b->failed)
            break;
        i++;
    }
    bs_pop(b, m);
    j->f->providers = ps;
    j->f->nproviders = n;
    j->names = names;
    return !b->failed;
}

static bool dec_requirement(bs *b, json_t *o, jctx *j, wp_jwt_req *r);

/* requires_any / requires_all {requirements: [...]}. */
static bool dec_group(bs *b, json_t *o, jctx *j, wp_jwt_req *r, bool any)
{
    if (!bs_fields(b, o, "requirements"))
        return false;
    json_t *list = bs_get(o, "requirements");
    if (!json_is_array(list) || json_array_size(list) < 2)
        return bs_fail_at(b, "requirements", "value must contain at least 2 item(s)");
    size_t n = json_array_size(list);
    wp_jwt_req *kids = bs_alloc(b, sizeof(*kids) * n);
    if (!kids)
        return false;
    r->kind = any ? WP_JREQ_ANY : WP_JREQ_ALL;
    r->kids = kids;
    size_t m = bs_push(b, "requirements");
    for (size_t i = 0; i < n && !b->failed; i++) {
        json_t *e = json_array_get(list, i);
        size_t mi = bs_push_i(b, i);
        bool am = json_is_object(e) && bs_get(e, "allow_missing");
        bool amf = json_is_object(e) && bs_get(e, "allow_missing_or_failed");
        if (any && (am || amf) && json_object_size(e) == 1) {
            r->allow_missing |= am;
            r->allow_missing_or_failed |= amf;
        } else if (json_is_object(e)) {
            dec_requirement(b, e, j, &kids[r->nkids++]);
        } else {
            bs_fail(b, "wrong type: expected an object");
        }
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    return !b->failed;
}

static bool dec_any(bs *b, json_t *o, void *arg)
{
    void **a = arg;
    return dec_group(b, o, a[0], a[1], true);
}

static bool dec_all(bs *b, json_t *o, void *arg)
{
    void **a = arg;
    return dec_group(b, o, a[0], a[1], false);
}

/* JwtRequirement. */
static bool dec_requirement(bs *b, json_t *o, jctx *j, wp_jwt_req *r)
{
    static const char *const unsupported[] = {"provider_and_audiences", NULL};
    if (!bs_fields(b, o,
                   "provider_name provider_and_audiences requires_any requires_all allow_missing "
                   "allow_missing_or_failed") ||
        !reject_unsupported(b, o, unsupported))
        return false;
    if (json_object_size(o) > 1)
        return bs_fail(b, "only one of provider_name, requires_any, requires_all, allow_missing, "
                          "allow_missing_or_failed may be set");
    const char *name = NULL;
    void *arg[2] = {j, r};
    r->kind = WP_JREQ_NONE;
    if (!bs_str(b, o, "provider_name", &name) || !bs_sub(b, o, "requires_any", dec_any, arg) ||
        !bs_sub(b, o, "requires_all", dec_all, arg))
        return false;
    if (bs_get(o, "allow_missing") || bs_get(o, "allow_missing_or_failed"))
        return bs_fail(b, "allow_missing / allow_missing_or_failed are " UNSUPPORTED_MSG
                          " outside requires_any");
    if (!name)
        return true;
    for (size_t i = 0; i < j->f->nproviders; i++) {
        if (strcmp(j->names[i], name) == 0) {
            r->kind = WP_JREQ_PROVIDER;
            r->provider = (uint32_t)i;
            return true;
        }
    }
    return bs_fail_atf(b, "provider_name", "Required provider ['%s'] is not configured.", name);
}

static bool dec_req_cb(bs *b, json_t *o, void *arg)
{
    void **a = arg;
    return dec_requirement(b, o, a[0], a[1]);
}

static bool dec_match(bs *b, json_t *o, void *arg)
{
    wp_jwt_rule *r = arg;
    const char *prefix = NULL, *path = NULL;
    if (!bs_fields(b, o, "prefix path") || !bs_str(b, o, "prefix", &prefix) ||
        !bs_str(b, o, "path", &path))
        return false;
    if (!!prefix == !!path)
        return bs_fail(b, "exactly one of prefix or path is required (weft-proxy's jwt_authn "
                          "rules match on those)");
    r->exact = path != NULL;
    r->value = prefix ? prefix : path;
    r->len = strlen(r->value);
    return true;
}

static bool dec_rule(bs *b, json_t *o, void *arg)
{
    void **a = arg;
    jctx *j = a[0];
    wp_jwt_rule *r = a[1];
    void *ra[2] = {j, &r->req};
    if (!bs_fields(b, o, "match requires requirement_name"))
        return false;
    if (bs_get(o, "requirement_name"))
        return bs_fail_at(b, "requirement_name", UNSUPPORTED_MSG);
    if (!bs_get(o, "match"))
        return bs_fail_at(b, "match", "missing required field");
    return bs_sub(b, o, "match", dec_match, r) && bs_sub(b, o, "requires", dec_req_cb, ra);
}

static bool dec_rules(bs *b, json_t *tc, jctx *j)
{
    json_t *v = bs_get(tc, "rules");
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, "rules", "an array");
    size_t n = json_array_size(v);
    wp_jwt_rule *rules = bs_alloc(b, sizeof(*rules) * (n ? n : 1));
    if (!rules)
        return false;
    size_t m = bs_push(b, "rules");
    for (size_t i = 0; i < n && !b->failed; i++) {
        size_t mi = bs_push_i(b, i);
        json_t *o = json_array_get(v, i);
        void *a[2] = {j, &rules[i]};
        if (!json_is_object(o))
            bs_fail(b, "wrong type: expected an object");
        else
            dec_rule(b, o, a);
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    j->f->rules = rules;
    j->f->nrules = n;
    return !b->failed;
}

/* The names the extractors remove from every request (sanitizeHeaders). */
static bool build_sanitize(bs *b, wp_jwt_authn_filter *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nproviders; i++)
        n += (f->providers[i].forward_payload_header ? 1 : 0) + f->providers[i].nclaim_headers;
    if (n == 0)
        return true;
    if (n > WP_JWT_MAX_ADDS)
        return bs_fail_at(b, "providers",
                          "more than 8 forward_payload_header / claim_to_headers headers");
    const char **rm = bs_alloc(b, sizeof(char *) * n);
    if (!rm)
        return false;
    for (size_t i = 0; i < f->nproviders; i++) {
        const wp_jwt_provider *p = &f->providers[i];
        if (p->forward_payload_header)
            rm[f->sanitize.nremove++] = p->forward_payload_header;
        for (size_t k = 0; k < p->nclaim_headers; k++)
            rm[f->sanitize.nremove++] = p->claim_headers[k].header;
    }
    f->sanitize.remove = rm;
    return true;
}

bool bs_jwt_authn_filter(bs *b, json_t *tc, const void **config)
{
    static const char *const unsupported[] = {"filter_state_rules", "requirement_map",
                                              "strip_failure_response", NULL};
    wp_jwt_authn_filter *f = bs_alloc(b, sizeof(*f));
    if (!f)
        return false;
    f->st_allowed = f->st_denied = f->st_cors = f->st_fetch_ok = f->st_fetch_failed =
        WP_STAT_INVALID;
    f->stat_prefix = "";
    *config = f;
    if (!tc)
        return true;
    jctx j = {f, NULL};
    size_t m = bs_push(b, "typed_config");
    bool ok = bs_fields(b, tc,
                        "@type providers rules bypass_cors_preflight stat_prefix "
                        "filter_state_rules requirement_map strip_failure_response") &&
              bs_type_is(b, tc, WP_JWT_AUTHN_TYPE) && reject_unsupported(b, tc, unsupported) &&
              bs_bool(b, tc, "bypass_cors_preflight", &f->bypass_cors_preflight) &&
              bs_str(b, tc, "stat_prefix", &f->stat_prefix) && dec_providers(b, tc, &j) &&
              dec_rules(b, tc, &j) && build_sanitize(b, f);
    if (!f->stat_prefix)
        f->stat_prefix = "";
    bs_pop(b, m);
    return ok;
}
