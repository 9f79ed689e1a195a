/*
 * authz_model.c - one AuthorizationPolicy rule to one Envoy RBAC Policy, as Istio's
 * pilot/pkg/security/authz/model does (see authz_internal.h).
 */
#include "pilot/authz_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JWT_FILTER "envoy.filters.http.jwt_authn"
#define SPIFFE     "spiffe://"
#define URI_TPL_TYPE                                                                               \
    "type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig"
#define CLUSTER_LOCAL "cluster.local"

/* Istio's generators (generator.go), by the attribute they serve. */
typedef enum gen_kind {
    G_DEST_IP,
    G_DEST_PORT,
    G_SNI,
    G_ENVOY_FILTER, /* extended */
    G_SRC_IP,
    G_REMOTE_IP,
    G_SRC_NS,
    G_SRC_SA,
    G_SRC_PRINCIPAL,
    G_SRC_TD,
    G_REQ_PRINCIPAL, /* extended */
    G_REQ_AUD,       /* extended */
    G_REQ_PRESENTER, /* extended */
    G_REQ_HEADER,
    G_REQ_CLAIMS, /* extended */
    G_HOST,
    G_PATH,
    G_METHOD,
} gen_kind;

typedef struct cond {
    gen_kind g;
    const char *key;             /* the attribute as written (when) or Istio's internal name */
    json_t *values, *not_values; /* arrays of strings (owned) */
} cond;

enum { R_OK = 0, R_ERR = 1, R_OOM = -1 };

static bool extended(gen_kind g)
{
    return g == G_ENVOY_FILTER || g == G_REQ_PRINCIPAL || g == G_REQ_AUD || g == G_REQ_PRESENTER ||
           g == G_REQ_CLAIMS;
}

static bool is_permission(gen_kind g)
{
    return g == G_DEST_IP || g == G_DEST_PORT || g == G_SNI || g == G_ENVOY_FILTER || g == G_HOST ||
           g == G_PATH || g == G_METHOD;
}

static bool http_only(gen_kind g)
{
    return g == G_REQ_PRINCIPAL || g == G_REQ_AUD || g == G_REQ_PRESENTER || g == G_REQ_HEADER ||
           g == G_REQ_CLAIMS || g == G_HOST || g == G_PATH || g == G_METHOD;
}

void wf_authz_quote_meta(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    if (!cap)
        return;
    for (; *s && o + 2 < cap; s++) {
        if (strchr("\\.+*?()|[]{}^$", *s))
            out[o++] = '\\';
        out[o++] = *s;
    }
    out[o] = '\0';
}

/* ---------- Envoy matchers (Istio matcher/ package) ---------- */

static json_t *sm_regex(const char *re)
{
    return json_pack("{s:{s:s}}", "safe_regex", "regex", re);
}

static json_t *sm_kind(const char *kind, const char *v, bool ignore_case)
{
    json_t *m = json_pack("{s:s}", kind, v);
    if (m && ignore_case && json_object_set_new(m, "ignore_case", json_true()) != 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* StringMatcherWithPrefix(v, prefix): "*" any non-empty; "*x" suffix (a regex under a prefix);
 * "x*" prefix; else exact. */
static json_t *string_matcher(const char *v, const char *prefix)
{
    size_t n = strlen(v), pn = strlen(prefix);
    char *buf = malloc(2 * n + pn + 8);
    if (!buf)
        return NULL;
    json_t *m;
    if (strcmp(v, "*") == 0) {
        m = sm_regex(".+");
    } else if (v[0] == '*') {
        if (!*prefix) {
            m = sm_kind("suffix", v + 1, false);
        } else {
            int k = snprintf(buf, 2 * n + pn + 8, "%s.*", prefix);
            wf_authz_quote_meta(v + 1, buf + k, 2 * n + pn + 8 - (size_t)k);
            m = sm_regex(buf);
        }
    } else if (n && v[n - 1] == '*') {
        snprintf(buf, 2 * n + pn + 8, "%s%.*s", prefix, (int)(n - 1), v);
        m = sm_kind("prefix", buf, false);
    } else {
        snprintf(buf, 2 * n + pn + 8, "%s%s", prefix, v);
        m = sm_kind("exact", buf, false);
    }
    free(buf);
    return m;
}

/* HeaderMatcher / HostMatcher: "*" present; "*x" suffix; "x*" prefix; else exact (hosts case-
 * insensitively). */
static json_t *header_matcher(const char *name, const char *v, bool host)
{
    size_t n = strlen(v);
    if (strcmp(v, "*") == 0)
        return json_pack("{s:s,s:b}", "name", name, "present_match", 1);
    json_t *sm;
    if (v[0] == '*') {
        sm = sm_kind("suffix", v + 1, host);
    } else if (n && v[n - 1] == '*') {
        char *p = strndup(v, n - 1);
        sm = p ? sm_kind("prefix", p, host) : NULL;
        free(p);
    } else {
        sm = sm_kind("exact", v, host);
    }
    return sm ? json_pack("{s:s,s:o}", "name", name, "string_match", sm) : NULL;
}

/* OrMatcher: one value matcher stands alone; several are an or_match. Consumes list. */
static json_t *or_value_matcher(json_t *list)
{
    if (!list)
        return NULL;
    if (json_array_size(list) == 1) {
        json_t *one = json_incref(json_array_get(list, 0));
        json_decref(list);
        return one;
    }
    return json_pack("{s:{s:o}}", "or_match", "value_matchers", list);
}

/* StringOrMatcher(values): the string matchers of values as one value matcher. */
static json_t *string_or_matcher(json_t *values)
{
    json_t *list = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v)
    {
        if (json_array_append_new(list, json_pack("{s:o}", "string_match",
                                                  string_matcher(json_string_value(v), ""))) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return or_value_matcher(list);
}

/* A metadata matcher on filter with path keys (array of strings, consumed) and value (consumed). */
static json_t *metadata(const char *filter, json_t *path, json_t *value)
{
    json_t *p = json_array();
    size_t i;
    json_t *k;
    json_array_foreach(path, i, k)
    {
        if (json_array_append_new(p, json_pack("{s:O}", "key", k)) != 0) {
            json_decref(p);
            p = NULL;
            break;
        }
    }
    json_decref(path);
    if (!p || !value) {
        json_decref(p);
        json_decref(value);
        return NULL;
    }
    return json_pack("{s:{s:s,s:o,s:o}}", "metadata", "filter", filter, "path", p, "value", value);
}

/* MetadataListValueMatcherForJWTClaims: payload.<claims...> equal to, or a list holding, m. */
static json_t *jwt_claims_list(json_t *claims, json_t *m)
{
    if (!claims || !m) {
        json_decref(claims);
        json_decref(m);
        return NULL;
    }
    json_t *path = json_pack("[s]", "payload");
    if (path && json_array_extend(path, claims) != 0) {
        json_decref(path);
        path = NULL;
    }
    json_decref(claims);
    json_t *v = json_pack("{s:{s:[{s:{s:O}},O]}}", "or_match", "value_matchers", "list_match",
                          "one_of", m, m);
    json_decref(m);
    return path && v ? metadata(JWT_FILTER, path, v) : (json_decref(path), json_decref(v), NULL);
}

/* MetadataStringMatcherForJWTClaim: payload.<claim> matched by sm (consumed). */
static json_t *jwt_claim_string(const char *claim, json_t *sm)
{
    if (!sm)
        return NULL;
    return metadata(JWT_FILTER, json_pack("[s,s]", "payload", claim),
                    json_pack("{s:o}", "string_match", sm));
}

/* ---------- value parsing (util.go, networking/util AddrStrToCidrRange) ---------- */

static int cidr(const char *v, json_t **out)
{
    char addr[64], canon[INET6_ADDRSTRLEN];
    unsigned char buf[16];
    const char *slash = strchr(v, '/');
    size_t n = slash ? (size_t)(slash - v) : strlen(v);
    if (!*v || n >= sizeof addr)
        return R_ERR;
    memcpy(addr, v, n);
    addr[n] = '\0';
    int af = strchr(addr, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(af, addr, buf) != 1 || !inet_ntop(af, buf, canon, sizeof canon))
        return R_ERR;
    long bits = af == AF_INET ? 32 : 128;
    if (slash) {
        const char *b = slash + 1;
        char *end;
        if (!*b || strspn(b, "0123456789") != strlen(b) || (b[0] == '0' && b[1]))
            return R_ERR;
        long want = strtol(b, &end, 10);
        if (want > bits)
            return R_ERR;
        bits = want;
    }
    *out = json_pack("{s:s,s:i}", "address_prefix", canon, "prefix_len", (json_int_t)bits);
    return *out ? R_OK : R_OOM;
}

static int port(const char *v, long *out)
{
    char *end;
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 10)
        return R_ERR;
    long p = strtol(v, &end, 10);
    if (p > 65535)
        return R_ERR;
    *out = p;
    return R_OK;
}

/* "[name]" → name (extractNameInBrackets). */
static char *in_brackets(const char *s)
{
    size_t n = strlen(s);
    if (n < 2 || s[0] != '[' || s[n - 1] != ']')
        return NULL;
    return strndup(s + 1, n - 2);
}

/* "[a][b]" → ["a", "b"]; otherwise one bracketed name (extractNameInNestedBrackets). */
static json_t *nested_brackets(const char *s)
{
    json_t *out = json_array();
    size_t n = strlen(s), b = 0;
    while (out && b < n) {
        size_t e = b + 1;
        if (s[b] != '[')
            break;
        while (e < n && s[e] != '[' && s[e] != ']')
            e++;
        if (e >= n || s[e] != ']')
            break;
        if (json_array_append_new(out, json_stringn(s + b + 1, e - b - 1)) != 0) {
            json_decref(out);
            return NULL;
        }
        b = e + 1;
    }
    if (out && b >= n && n > 0)
        return out;
    json_decref(out);
    char *one = in_brackets(s);
    json_t *r = one ? json_pack("[s]", one) : NULL;
    free(one);
    return r;
}

/* ---------- generators (generator.go) ---------- */

static json_t *authenticated(json_t *sm)
{
    return sm ? json_pack("{s:{s:o}}", "authenticated", "principal_name", sm) : NULL;
}

static json_t *regex_principal(const char *re)
{
    return authenticated(sm_regex(re));
}

/* serviceAccountRegex: "<ns>/<sa>", or "<sa>" in the policy's namespace. */
static json_t *sa_principal(const char *v, const char *policy_ns)
{
    const char *slash = strchr(v, '/');
    size_t cap = strlen(v) + strlen(policy_ns) + 64;
    char *re = malloc(cap);
    if (!re)
        return NULL;
    if (slash)
        snprintf(re, cap, "spiffe://.+/ns/%.*s/(.+/|)sa/%s(/.+)?", (int)(slash - v), v, slash + 1);
    else
        snprintf(re, cap, "spiffe://.+/ns/%s/(.+/|)sa/%s(/.+)?", policy_ns, v);
    json_t *p = regex_principal(re);
    free(re);
    return p;
}

/* source.namespace: ".*\/ns/<quoted, * as .*>/.*". */
static json_t *ns_principal(const char *v)
{
    size_t n = strlen(v);
    char *q = malloc(2 * n + 1), *re = malloc(4 * n + 16);
    json_t *p = NULL;
    if (q && re) {
        wf_authz_quote_meta(v, q, 2 * n + 1);
        size_t o = (size_t)sprintf(re, ".*/ns/");
        for (const char *c = q; *c; c++) {
            if (c[0] == '\\' && c[1] == '*') {
                o += (size_t)sprintf(re + o, ".*");
                c++;
            } else {
                re[o++] = *c;
            }
        }
        strcpy(re + o, "/.*");
        p = regex_principal(re);
    }
    free(q);
    free(re);
    return p;
}

/* source trustDomains: "td" prefix spiffe://td/; "x*" / "*x" / "*" as regexes over the trust
 * domain segment ([^/]*), as the trust-domains-field golden shows for "bad*". */
static json_t *td_principal(const char *v)
{
    size_t n = strlen(v);
    char *q = malloc(2 * n + 1), *buf = malloc(2 * n + 48);
    json_t *p = NULL;
    if (q && buf) {
        if (strcmp(v, "*") == 0) {
            p = regex_principal("spiffe://[^/]+/.*");
        } else if (n && v[n - 1] == '*') {
            char *pre = strndup(v, n - 1);
            if (pre) {
                wf_authz_quote_meta(pre, q, 2 * n + 1);
                snprintf(buf, 2 * n + 48, "spiffe://%s[^/]*/.*", q);
                p = regex_principal(buf);
            }
            free(pre);
        } else if (v[0] == '*') {
            wf_authz_quote_meta(v + 1, q, 2 * n + 1);
            snprintf(buf, 2 * n + 48, "spiffe://[^/]*%s/.*", q);
            p = regex_principal(buf);
        } else {
            snprintf(buf, 2 * n + 48, "spiffe://%s/", v);
            p = authenticated(sm_kind("prefix", buf, false));
        }
    }
    free(q);
    free(buf);
    return p;
}

static int http_only_err(const cond *c, char *msg, size_t cap)
{
    snprintf(msg, cap, "\"%s\" is HTTP only", c->key);
    return R_ERR;
}

/* A non-extended generator's permission or principal for one value. */
static int gen_one(const cond *c, const char *v, const wf_authz_gen *g, json_t **out, char *msg,
                   size_t cap)
{
    json_t *x = NULL;
    long pv;
    int rc;
    if (g->for_tcp && http_only(c->g))
        return http_only_err(c, msg, cap);
    switch (c->g) {
    case G_DEST_IP:
    case G_SRC_IP:
    case G_REMOTE_IP:
        if ((rc = cidr(v, &x)) != R_OK) {
            if (rc == R_ERR)
                snprintf(msg, cap, "invalid IP address or CIDR %s", v);
            return rc;
        }
        *out = json_pack("{s:o}",
                         c->g == G_DEST_IP  ? "destination_ip"
                         : c->g == G_SRC_IP ? "direct_remote_ip"
                                            : "remote_ip",
                         x);
        break;
    case G_DEST_PORT:
        if (port(v, &pv) != R_OK) {
            snprintf(msg, cap, "invalid port %s", v);
            return R_ERR;
        }
        *out = json_pack("{s:i}", "destination_port", (json_int_t)pv);
        break;
    case G_SNI:
        *out = json_pack("{s:o}", "requested_server_name", string_matcher(v, ""));
        break;
    case G_SRC_NS:
        *out = ns_principal(v);
        break;
    case G_SRC_SA:
        *out = sa_principal(v, g->policy_ns ? g->policy_ns : "");
        break;
    case G_SRC_PRINCIPAL:
        *out = authenticated(string_matcher(v, SPIFFE));
        break;
    case G_SRC_TD:
        *out = td_principal(v);
        break;
    case G_REQ_HEADER: {
        char *h = in_brackets(c->key + strlen("request.headers"));
        if (!h) {
            snprintf(msg, cap, "expecting format [<NAME>], but found %s",
                     c->key + strlen("request.headers"));
            return R_ERR;
        }
        *out = json_pack("{s:o}", "header", header_matcher(h, v, false));
        free(h);
        break;
    }
    case G_HOST:
        *out = json_pack("{s:o}", "header", header_matcher(":authority", v, true));
        break;
    case G_METHOD:
        *out = json_pack("{s:o}", "header", header_matcher(":method", v, false));
        break;
    case G_PATH:
        if (strstr(v, "{*}") || strstr(v, "{**}")) {
            /* Istio's PathTemplateMatcher: {**} → **, {*} → * */
            char *t = malloc(strlen(v) + 1);
            if (!t)
                return R_OOM;
            size_t o = 0;
            for (const char *p = v; *p;) {
                if (strncmp(p, "{**}", 4) == 0) {
                    t[o++] = '*';
                    t[o++] = '*';
                    p += 4;
                } else if (strncmp(p, "{*}", 3) == 0) {
                    t[o++] = '*';
                    p += 3;
                } else {
                    t[o++] = *p++;
                }
            }
            t[o] = '\0';
            *out = json_pack("{s:{s:s,s:{s:s,s:s}}}", "uri_template", "name", "uri-template",
                             "typed_config", "@type", URI_TPL_TYPE, "path_template", t);
            free(t);
        } else {
            *out = json_pack("{s:{s:o}}", "url_path", "path", string_matcher(v, ""));
        }
        break;
    default:
        return R_ERR;
    }
    return *out ? R_OK : R_OOM;
}

/* requestPrincipals / request.auth.principal: "<iss>/<sub>" split at the last '/'. */
static json_t *req_principal_one(const char *v)
{
    const char *slash = strrchr(v, '/');
    char *iss = slash ? strndup(v, (size_t)(slash - v)) : strdup(v);
    const char *sub = slash ? slash + 1 : "";
    json_t *mi = NULL, *ms = NULL;
    if (!iss)
        return NULL;
    if (strcmp(v, "*") == 0) {
        mi = sm_regex(".+");
        ms = sm_regex(".+");
    } else if (v[0] == '*') {
        if (slash) {
            mi = strcmp(iss, "*") == 0 ? sm_regex(".+") : sm_kind("suffix", iss + 1, false);
            ms = sm_kind("exact", sub, false);
        } else {
            mi = sm_regex(".+");
            ms = sm_kind("suffix", v + 1, false);
        }
    } else if (*v && v[strlen(v) - 1] == '*') {
        if (slash) {
            mi = sm_kind("exact", iss, false);
            if (strcmp(sub, "*") == 0) {
                ms = sm_regex(".+");
            } else {
                char *s = strndup(sub, strlen(sub) - 1);
                ms = s ? sm_kind("prefix", s, false) : NULL;
                free(s);
            }
        } else {
            char *s = strndup(v, strlen(v) - 1);
            mi = s ? sm_kind("prefix", s, false) : NULL;
            free(s);
            ms = sm_regex(".+");
        }
    } else {
        mi = sm_kind("exact", iss, false);
        ms = sm_kind("exact", sub, false);
    }
    free(iss);
    json_t *a = jwt_claim_string("iss", mi), *b = jwt_claim_string("sub", ms);
    if (!a || !b) {
        json_decref(a);
        json_decref(b);
        return NULL;
    }
    return json_pack("{s:{s:[o,o]}}", "and_ids", "ids", a, b);
}

/* An extended generator over all values at once. */
static int gen_ext(const cond *c, json_t *values, const wf_authz_gen *g, json_t **out, char *msg,
                   size_t cap)
{
    if (g->for_tcp && http_only(c->g))
        return http_only_err(c, msg, cap);
    size_t i;
    json_t *v;
    switch (c->g) {
    case G_REQ_PRINCIPAL: {
        json_t * or = json_array();
        json_array_foreach(values, i, v)
        {
            if (json_array_append_new(or, req_principal_one(json_string_value(v))) != 0) {
                json_decref(or);
                return R_OOM;
            }
        }
        if (json_array_size(or) == 1) {
            *out = json_incref(json_array_get(or, 0));
            json_decref(or);
        } else {
            *out = json_pack("{s:{s:o}}", "or_ids", "ids", or);
        }
        break;
    }
    case G_REQ_AUD:
    case G_REQ_PRESENTER:
        *out = jwt_claims_list(json_pack("[s]", c->g == G_REQ_AUD ? "aud" : "azp"),
                               string_or_matcher(values));
        break;
    case G_REQ_CLAIMS: {
        json_t *claims = nested_brackets(c->key + strlen("request.auth.claims"));
        if (!claims) {
            snprintf(msg, cap, "expecting format [<NAME>], but found %s",
                     c->key + strlen("request.auth.claims"));
            return R_ERR;
        }
        *out = jwt_claims_list(claims, string_or_matcher(values));
        break;
    }
    case G_ENVOY_FILTER: {
        /* "experimental.envoy.filters.a.b[c]" → filter "envoy.filters.a.b", key "c" */
        const char *k = c->key + strlen("experimental.");
        const char *br = strchr(k, '[');
        size_t n = strlen(k);
        if (!br) {
            snprintf(msg, cap, "invalid key: %s", c->key);
            return R_ERR;
        }
        char *filter = strndup(k, (size_t)(br - k));
        size_t kl = n - (size_t)(br - k) - 1;
        if (kl && k[n - 1] == ']')
            kl--;
        json_t *list = json_array();
        json_array_foreach(values, i, v)
        {
            const char *s = json_string_value(v);
            size_t sl = strlen(s);
            json_t *m;
            if (sl >= 2 && s[0] == '[' && s[sl - 1] == ']') {
                /* strings.Trim(value, "[]") */
                size_t b = 0, e = sl;
                while (b < e && (s[b] == '[' || s[b] == ']'))
                    b++;
                while (e > b && (s[e - 1] == '[' || s[e - 1] == ']'))
                    e--;
                char *t = strndup(s + b, e - b);
                m = t ? json_pack("{s:{s:{s:o}}}", "list_match", "one_of", "string_match",
                                  string_matcher(t, ""))
                      : NULL;
                free(t);
            } else {
                m = json_pack("{s:o}", "string_match", string_matcher(s, ""));
            }
            if (json_array_append_new(list, m) != 0) {
                json_decref(list);
                list = NULL;
                break;
            }
        }
        *out = filter ? metadata(filter, json_pack("[s%]", br + 1, kl), or_value_matcher(list))
                      : (json_decref(list), NULL);
        free(filter);
        break;
    }
    default:
        return R_ERR;
    }
    return *out ? R_OK : R_OOM;
}

/* ---------- conditions to permissions / principals (model.go) ---------- */

static json_t *wrap_set(bool perm, json_t *list)
{
    return json_pack("{s:{s:o}}", perm ? "or_rules" : "or_ids", perm ? "rules" : "ids", list);
}

static json_t *wrap_not(bool perm, json_t *x)
{
    return x ? json_pack("{s:o}", perm ? "not_rule" : "not_id", x) : NULL;
}

/* A value could not be generated: the whole rule for ALLOW, else only the value (reported). */
static int on_error(const wf_authz_gen *g, char *msg)
{
    if (g->action == WF_RBAC_ALLOW)
        return R_ERR;
    if (g->drop)
        g->drop(g->arg, msg);
    return R_OK;
}

/* One side (values or notValues) of a condition, appended to and (NOT-wrapped for negative). */
static int cond_side(const cond *c, json_t *vals, bool negative, const wf_authz_gen *g, json_t *and,
                     char *msg, size_t cap)
{
    bool perm = is_permission(c->g);
    if (!json_array_size(vals))
        return R_OK;
    json_t *x = NULL;
    if (extended(c->g)) {
        int rc = gen_ext(c, vals, g, &x, msg, cap);
        if (rc != R_OK)
            return rc == R_OOM ? R_OOM : on_error(g, msg);
    } else {
        json_t * or = json_array();
        size_t i;
        json_t *v;
        if (! or)
            return R_OOM;
        json_array_foreach(vals, i, v)
        {
            json_t *one = NULL;
            int rc = gen_one(c, json_string_value(v), g, &one, msg, cap);
            if (rc == R_OK)
                rc = json_array_append_new(or, one) == 0 ? R_OK : R_OOM;
            else if (rc == R_ERR)
                rc = on_error(g, msg);
            if (rc != R_OK) {
                json_decref(or);
                return rc;
            }
        }
        if (!json_array_size(or)) {
            json_decref(or);
            return R_OK;
        }
        x = wrap_set(perm, or);
    }
    if (negative)
        x = wrap_not(perm, x);
    return x && json_array_append_new(and, x) == 0 ? R_OK : R_OOM;
}

/* and_rules / and_ids over conds (any when empty). */
static int generate(cond *const *cs, size_t n, bool perm, const wf_authz_gen *g, json_t **out,
                    char *msg, size_t cap)
{
    json_t *and = json_array();
    if (!and)
        return R_OOM;
    for (size_t i = 0; i < n; i++) {
        int rc = cond_side(cs[i], cs[i]->values, false, g, and, msg, cap);
        if (rc == R_OK)
            rc = cond_side(cs[i], cs[i]->not_values, true, g, and, msg, cap);
        if (rc != R_OK) {
            json_decref(and);
            return rc;
        }
    }
    if (!json_array_size(and) && json_array_append_new(and, json_pack("{s:b}", "any", 1)) != 0) {
        json_decref(and);
        return R_OOM;
    }
    *out = json_pack("{s:{s:o}}", perm ? "and_rules" : "and_ids", perm ? "rules" : "ids", and);
    return *out ? R_OK : R_OOM;
}

/* ---------- trust domains (trustdomain/bundle.go) ---------- */

static bool suffix_match(const char *a, const char *pattern)
{
    if (pattern[0] != '*')
        return false;
    size_t an = strlen(a), pn = strlen(pattern + 1);
    return an >= pn && strcmp(a + an - pn, pattern + 1) == 0;
}

/* The principal's trust domain when it has Istio's 5-part form and is not "*". */
static bool enforced_td(const char *p, char *td, size_t cap)
{
    int slashes = 0;
    for (const char *c = p; *c; c++)
        slashes += *c == '/';
    const char *s = strchr(p, '/');
    if (slashes != 4 || !s || (size_t)(s - p) >= cap)
        return false;
    memcpy(td, p, (size_t)(s - p));
    td[s - p] = '\0';
    return strcmp(td, "*") != 0;
}

static bool has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

static int append_unique(json_t *arr, const char *s)
{
    return has_string(arr, s) ? 0 : json_array_append_new(arr, json_string(s));
}

/* ReplaceTrustDomainAliases. New array, NULL on out of memory. */
static json_t *replace_tds(json_t *in, const wf_authz_gen *g)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(in, i, v)
    {
        const char *p = json_string_value(v);
        char td[256];
        bool known = false;
        if (enforced_td(p, td, sizeof td)) {
            for (size_t k = 0; k < g->ntds; k++)
                known |= strcmp(td, g->tds[k]) == 0 || suffix_match(g->tds[k], td);
            known |= strcmp(td, CLUSTER_LOCAL) == 0;
        }
        if (!known) {
            if (!out || json_array_append(out, v) != 0)
                goto oom;
            continue;
        }
        json_t *mine = json_array();
        const char *rest = strchr(p, '/');
        for (size_t k = 0; mine && k < g->ntds; k++) {
            char *np = malloc(strlen(g->tds[k]) + strlen(rest) + 1);
            if (!np) {
                json_decref(mine);
                goto oom;
            }
            if (suffix_match(g->tds[k], td))
                strcpy(np, p);
            else
                sprintf(np, "%s%s", g->tds[k], rest);
            int rc = append_unique(mine, np);
            free(np);
            if (rc != 0) {
                json_decref(mine);
                goto oom;
            }
        }
        int rc = out && mine ? json_array_extend(out, mine) : -1;
        json_decref(mine);
        if (rc != 0)
            goto oom;
    }
    return out;
oom:
    json_decref(out);
    return NULL;
}

/* ExpandTrustDomainAliases. New array, NULL on out of memory. */
static json_t *expand_tds(json_t *in, const wf_authz_gen *g)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(in, i, v)
    {
        bool known = false;
        for (size_t k = 0; k < g->ntds; k++)
            known |= strcmp(json_string_value(v), g->tds[k]) == 0;
        for (size_t k = 0; out && k < (known ? g->ntds : 1); k++)
            if (append_unique(out, known ? g->tds[k] : json_string_value(v)) != 0) {
                json_decref(out);
                out = NULL;
            }
    }
    return out;
}

static int migrate(cond *c, const wf_authz_gen *g)
{
    if (c->g != G_SRC_PRINCIPAL && c->g != G_SRC_TD)
        return 0;
    json_t *(*f)(json_t *, const wf_authz_gen *) = c->g == G_SRC_TD ? expand_tds : replace_tds;
    json_t *a = f(c->values, g), *b = f(c->not_values, g);
    if (!a || !b) {
        json_decref(a);
        json_decref(b);
        return -1;
    }
    json_decref(c->values);
    json_decref(c->not_values);
    c->values = a;
    c->not_values = b;
    return 0;
}

/* ---------- the rule (model.go New) ---------- */

typedef struct conds {
    cond *v;
    size_t n, cap;
} conds;

static void conds_free(conds *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        json_decref(cs->v[i].values);
        json_decref(cs->v[i].not_values);
    }
    free(cs->v);
}

/* The strings of a sequence node (scalars; anything else is left out). */
static json_t *strings(const wf_node *seq)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < wf_seq_len(seq); i++) {
        const char *s = wf_node_str(wf_seq_at(seq, i));
        if (s && json_array_append_new(a, json_string(s)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Adds a condition when it has values or notValues (Istio's appendLast / insertFront skip empty
 * ones). Returns its index, -2 when empty, -1 on out of memory. */
static long add(conds *cs, gen_kind g, const char *key, const wf_node *vals, const wf_node *nvals,
                const wf_authz_gen *ctx)
{
    if (!wf_seq_len(vals) && !wf_seq_len(nvals))
        return -2;
    if (cs->n == cs->cap) {
        size_t nc = cs->cap ? 2 * cs->cap : 16;
        cond *nv = realloc(cs->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        cs->v = nv;
        cs->cap = nc;
    }
    cond *c = &cs->v[cs->n];
    *c = (cond){.g = g, .key = key, .values = strings(vals), .not_values = strings(nvals)};
    if (!c->values || !c->not_values || migrate(c, ctx) != 0) {
        json_decref(c->values);
        json_decref(c->not_values);
        return -1;
    }
    return (long)cs->n++;
}

static bool when_kind(const char *k, gen_kind *g)
{
    static const struct {
        const char *key;
        gen_kind g;
    } exact[] = {
        {"destination.ip", G_DEST_IP},
        {"destination.port", G_DEST_PORT},
        {"connection.sni", G_SNI},
        {"source.ip", G_SRC_IP},
        {"remote.ip", G_REMOTE_IP},
        {"source.namespace", G_SRC_NS},
        {"source.serviceAccount", G_SRC_SA},
        {"source.principal", G_SRC_PRINCIPAL},
        {"source.trustDomain", G_SRC_TD},
        {"request.auth.principal", G_REQ_PRINCIPAL},
        {"request.auth.audiences", G_REQ_AUD},
        {"request.auth.presenter", G_REQ_PRESENTER},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(k, exact[i].key) == 0) {
            *g = exact[i].g;
            return true;
        }
    if (strncmp(k, "experimental.envoy.filters.", 27) == 0)
        *g = G_ENVOY_FILTER;
    else if (strncmp(k, "request.headers", 15) == 0)
        *g = G_REQ_HEADER;
    else if (strncmp(k, "request.auth.claims", 19) == 0)
        *g = G_REQ_CLAIMS;
    else
        return false;
    return true;
}

/* The source fields in Istio's final order (insertFront reversed). */
static const struct {
    const char *field, *not_field;
    gen_kind g;
    const char *key;
} source_fields[] = {
    {"trustDomains", "notTrustDomains", G_SRC_TD, "source.trustDomain"},
    {"principals", "notPrincipals", G_SRC_PRINCIPAL, "source.principal"},
    {"requestPrincipals", "notRequestPrincipals", G_REQ_PRINCIPAL, "request.auth.principal"},
    {"serviceAccounts", "notServiceAccounts", G_SRC_SA, "source.serviceAccount"},
    {"namespaces", "notNamespaces", G_SRC_NS, "source.namespace"},
    {"remoteIpBlocks", "notRemoteIpBlocks", G_REMOTE_IP, "remote.ip"},
    {"ipBlocks", "notIpBlocks", G_SRC_IP, "source.ip"},
};

static const struct {
    const char *field, *not_field;
    gen_kind g;
    const char *key;
} op_fields[] = {
    {"hosts", "notHosts", G_HOST, ":authority"},
    {"methods", "notMethods", G_METHOD, ":method"},
    {"paths", "notPaths", G_PATH, "path-matcher"},
    {"ports", "notPorts", G_DEST_PORT, "destination.port"},
};

/* Builds one permission / principal from the indexes of its conditions. */
static int build_one(conds *pool, const long *idx, size_t n, bool perm, const wf_authz_gen *g,
                     json_t *into, char *msg, size_t cap)
{
    cond **cs = calloc(n ? n : 1, sizeof *cs);
    if (!cs)
        return R_OOM;
    for (size_t i = 0; i < n; i++)
        cs[i] = &pool->v[idx[i]];
    json_t *x = NULL;
    int rc = generate(cs, n, perm, g, &x, msg, cap);
    free(cs);
    if (rc == R_OK && json_array_append_new(into, x) != 0)
        rc = R_OOM;
    return rc;
}

typedef struct rule_build {
    conds pool;
    long base_perm[32], base_princ[32]; /* when conditions by side */
    size_t nbp, nbq;
} rule_build;

static int parse_when(rule_build *b, const wf_node *when, const wf_authz_gen *g, char *msg,
                      size_t cap)
{
    for (size_t i = 0; i < wf_seq_len(when); i++) {
        const wf_node *w = wf_seq_at(when, i);
        const char *k = wf_map_str(w, "key");
        gen_kind kind;
        if (!k || !when_kind(k, &kind)) {
            snprintf(msg, cap, "unknown attribute %s", k ? k : "");
            return R_ERR;
        }
        long ix = add(&b->pool, kind, k, wf_map_get(w, "values"), wf_map_get(w, "notValues"), g);
        if (ix == -1)
            return R_OOM;
        if (ix < 0)
            continue;
        bool perm = is_permission(kind);
        size_t *n = perm ? &b->nbp : &b->nbq;
        if (*n >= 32) {
            snprintf(msg, cap, "more than 32 when conditions");
            return R_ERR;
        }
        (perm ? b->base_perm : b->base_princ)[(*n)++] = ix;
    }
    return R_OK;
}

/* Permissions (to) or principals (from) of the rule into arr. */
static int build_side(rule_build *b, const wf_node *list, bool perm, const wf_authz_gen *g,
                      json_t *arr, char *msg, size_t cap)
{
    const long *base = perm ? b->base_perm : b->base_princ;
    size_t nbase = perm ? b->nbp : b->nbq;
    size_t nitems = wf_seq_len(list);
    for (size_t i = 0; i < (nitems ? nitems : 1); i++) {
        long idx[48];
        size_t n = 0;
        const wf_node *sub =
            nitems ? wf_map_get(wf_seq_at(list, i), perm ? "operation" : "source") : NULL;
        size_t nf = perm ? sizeof op_fields / sizeof op_fields[0]
                         : sizeof source_fields / sizeof source_fields[0];
        for (size_t f = 0; sub && f < nf; f++) {
            const char *fld = perm ? op_fields[f].field : source_fields[f].field;
            const char *nfld = perm ? op_fields[f].not_field : source_fields[f].not_field;
            long ix = add(&b->pool, perm ? op_fields[f].g : source_fields[f].g,
                          perm ? op_fields[f].key : source_fields[f].key, wf_map_get(sub, fld),
                          wf_map_get(sub, nfld), g);
            if (ix == -1)
                return R_OOM;
            if (ix >= 0)
                idx[n++] = ix;
        }
        for (size_t k = 0; k < nbase; k++)
            idx[n++] = base[k];
        int rc = build_one(&b->pool, idx, n, perm, g, arr, msg, cap);
        if (rc != R_OK)
            return rc;
    }
    return R_OK;
}

int wf_authz_rule_policy(const wf_node *rule, const wf_authz_gen *g, json_t **policy, char *msg,
                         size_t cap)
{
    *policy = NULL;
    if (!rule || rule->type == WF_NODE_SEQ || rule->type == WF_NODE_SCALAR) {
        snprintf(msg, cap, "the rule is not an object");
        return WF_AUTHZ_RULE_INVALID;
    }
    rule_build b = {0};
    json_t *perms = json_array(), *princs = json_array();
    int rc = perms && princs ? parse_when(&b, wf_map_get(rule, "when"), g, msg, cap) : R_OOM;
    if (rc == R_ERR) {
        conds_free(&b.pool);
        json_decref(perms);
        json_decref(princs);
        return WF_AUTHZ_RULE_INVALID;
    }
    if (rc == R_OK)
        rc = build_side(&b, wf_map_get(rule, "to"), true, g, perms, msg, cap);
    if (rc == R_OK)
        rc = build_side(&b, wf_map_get(rule, "from"), false, g, princs, msg, cap);
    conds_free(&b.pool);
    if (rc != R_OK) {
        json_decref(perms);
        json_decref(princs);
        return rc == R_ERR ? WF_AUTHZ_RULE_SKIPPED : WF_AUTHZ_RULE_OOM;
    }
    *policy = json_pack("{s:o,s:o}", "permissions", perms, "principals", princs);
    return *policy ? WF_AUTHZ_RULE_OK : WF_AUTHZ_RULE_OOM;
}

json_t *wf_authz_policy_never(void)
{
    return json_pack("{s:[{s:{s:b}}],s:[{s:{s:b}}]}", "permissions", "not_rule", "any", 1,
                     "principals", "not_id", "any", 1);
}
