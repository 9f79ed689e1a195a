/*
 * authz_gen.c - Istio's authz generators (pilot/pkg/security/authz/model/generator.go) and
 * matchers (its matcher/ package): one attribute value to an Envoy RBAC permission or
 * principal (see authz_internal.h).
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

bool wf_authz_kind_extended(wf_authz_kind g)
{
    return g == WF_AZ_ENVOY_FILTER || g == WF_AZ_REQ_PRINCIPAL || g == WF_AZ_REQ_AUD ||
           g == WF_AZ_REQ_PRESENTER || g == WF_AZ_REQ_CLAIMS;
}

bool wf_authz_kind_permission(wf_authz_kind g)
{
    return g == WF_AZ_DEST_IP || g == WF_AZ_DEST_PORT || g == WF_AZ_SNI ||
           g == WF_AZ_ENVOY_FILTER || g == WF_AZ_HOST || g == WF_AZ_PATH || g == WF_AZ_METHOD;
}

static bool http_only(wf_authz_kind g)
{
    return g == WF_AZ_REQ_PRINCIPAL || g == WF_AZ_REQ_AUD || g == WF_AZ_REQ_PRESENTER ||
           g == WF_AZ_REQ_HEADER || g == WF_AZ_REQ_CLAIMS || g == WF_AZ_HOST || g == WF_AZ_PATH ||
           g == WF_AZ_METHOD;
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
        return WF_AZ_ERR;
    memcpy(addr, v, n);
    addr[n] = '\0';
    int af = strchr(addr, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(af, addr, buf) != 1 || !inet_ntop(af, buf, canon, sizeof canon))
        return WF_AZ_ERR;
    long bits = af == AF_INET ? 32 : 128;
    if (slash) {
        const char *b = slash + 1;
        char *end;
        if (!*b || strspn(b, "0123456789") != strlen(b) || (b[0] == '0' && b[1]))
            return WF_AZ_ERR;
        long want = strtol(b, &end, 10);
        if (want > bits)
            return WF_AZ_ERR;
        bits = want;
    }
    *out = json_pack("{s:s,s:i}", "address_prefix", canon, "prefix_len", (json_int_t)bits);
    return *out ? WF_AZ_OK : WF_AZ_OOM;
}

static int port(const char *v, long *out)
{
    char *end;
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 10)
        return WF_AZ_ERR;
    long p = strtol(v, &end, 10);
    if (p > 65535)
        return WF_AZ_ERR;
    *out = p;
    return WF_AZ_OK;
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

static int http_only_err(const wf_authz_cond *c, char *msg, size_t cap)
{
    snprintf(msg, cap, "\"%s\" is HTTP only", c->key);
    return WF_AZ_ERR;
}

/* A non-extended generator's permission or principal for one value. */
int wf_authz_gen_one(const wf_authz_cond *c, const char *v, const wf_authz_gen *g, json_t **out,
                     char *msg, size_t cap)
{
    json_t *x = NULL;
    long pv;
    int rc;
    if (g->for_tcp && http_only(c->g))
        return http_only_err(c, msg, cap);
    switch (c->g) {
    case WF_AZ_DEST_IP:
    case WF_AZ_SRC_IP:
    case WF_AZ_REMOTE_IP:
        if ((rc = cidr(v, &x)) != WF_AZ_OK) {
            if (rc == WF_AZ_ERR)
                snprintf(msg, cap, "invalid IP address or CIDR %s", v);
            return rc;
        }
        *out = json_pack("{s:o}",
                         c->g == WF_AZ_DEST_IP  ? "destination_ip"
                         : c->g == WF_AZ_SRC_IP ? "direct_remote_ip"
                                                : "remote_ip",
                         x);
        break;
    case WF_AZ_DEST_PORT:
        if (port(v, &pv) != WF_AZ_OK) {
            snprintf(msg, cap, "invalid port %s", v);
            return WF_AZ_ERR;
        }
        *out = json_pack("{s:i}", "destination_port", (json_int_t)pv);
        break;
    case WF_AZ_SNI:
        *out = json_pack("{s:o}", "requested_server_name", string_matcher(v, ""));
        break;
    case WF_AZ_SRC_NS:
        *out = ns_principal(v);
        break;
    case WF_AZ_SRC_SA:
        *out = sa_principal(v, g->policy_ns ? g->policy_ns : "");
        break;
    case WF_AZ_SRC_PRINCIPAL:
        *out = authenticated(string_matcher(v, SPIFFE));
        break;
    case WF_AZ_SRC_TD:
        *out = td_principal(v);
        break;
    case WF_AZ_REQ_HEADER: {
        char *h = in_brackets(c->key + strlen("request.headers"));
        if (!h) {
            snprintf(msg, cap, "expecting format [<NAME>], but found %s",
                     c->key + strlen("request.headers"));
            return WF_AZ_ERR;
        }
        *out = json_pack("{s:o}", "header", header_matcher(h, v, false));
        free(h);
        break;
    }
    case WF_AZ_HOST:
        *out = json_pack("{s:o}", "header", header_matcher(":authority", v, true));
        break;
    case WF_AZ_METHOD:
        *out = json_pack("{s:o}", "header", header_matcher(":method", v, false));
        break;
    case WF_AZ_PATH:
        if (strstr(v, "{*}") || strstr(v, "{**}")) {
            /* Istio's PathTemplateMatcher: {**} → **, {*} → * */
            char *t = malloc(strlen(v) + 1);
            if (!t)
                return WF_AZ_OOM;
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
        return WF_AZ_ERR;
    }
    return *out ? WF_AZ_OK : WF_AZ_OOM;
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
int wf_authz_gen_ext(const wf_authz_cond *c, json_t *values, const wf_authz_gen *g, json_t **out,
                     char *msg, size_t cap)
{
    if (g->for_tcp && http_only(c->g))
        return http_only_err(c, msg, cap);
    size_t i;
    json_t *v;
    switch (c->g) {
    case WF_AZ_REQ_PRINCIPAL: {
        json_t * or = json_array();
        json_array_foreach(values, i, v)
        {
            if (json_array_append_new(or, req_principal_one(json_string_value(v))) != 0) {
                json_decref(or);
                return WF_AZ_OOM;
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
    case WF_AZ_REQ_AUD:
    case WF_AZ_REQ_PRESENTER:
        *out = jwt_claims_list(json_pack("[s]", c->g == WF_AZ_REQ_AUD ? "aud" : "azp"),
                               string_or_matcher(values));
        break;
    case WF_AZ_REQ_CLAIMS: {
        json_t *claims = nested_brackets(c->key + strlen("request.auth.claims"));
        if (!claims) {
            snprintf(msg, cap, "expecting format [<NAME>], but found %s",
                     c->key + strlen("request.auth.claims"));
            return WF_AZ_ERR;
        }
        *out = jwt_claims_list(claims, string_or_matcher(values));
        break;
    }
    case WF_AZ_ENVOY_FILTER: {
        /* "experimental.envoy.filters.a.b[c]" → filter "envoy.filters.a.b", key "c" */
        const char *k = c->key + strlen("experimental.");
        const char *br = strchr(k, '[');
        size_t n = strlen(k);
        if (!br) {
            snprintf(msg, cap, "invalid key: %s", c->key);
            return WF_AZ_ERR;
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
        return WF_AZ_ERR;
    }
    return *out ? WF_AZ_OK : WF_AZ_OOM;
}
