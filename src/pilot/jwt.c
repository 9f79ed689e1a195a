/*
 * jwt.c - RequestAuthentication selection and its jwt_authn filter (pilot/jwt.h).
 */
#include "model/node_json.h"
#include "pilot/jwt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/policy_select.h"

#define HCM_NAME         "envoy.filters.network.http_connection_manager"
#define MX_NAME          "istio.metadata_exchange"
#define FETCH_TIMEOUT_MS 5000 /* JWTRule.timeout's default */

const char WF_JWT_FAKE_JWKS[] =
    "{\"keys\":[{\"kty\":\"RSA\",\"e\":\"AQAB\",\"n\":\"tuw0CVsdF3a8Mr0SinpAOBBVuCe6SKGlbG01nZf8M1"
    "ER79Kjta_X4AXPhqAWp4Xs9uoi7IWvQvqz125ifZnkGguuabWPFo5mIW918XauME7S0OsggSgwHnbXjYaVu8136-_pq"
    "GDBsDk_GEGRmArJwAuVDT4yADPBU4N6h5pkZXt1Rp3ISkl_CX0i9FiDUBvxouoXAPEiOVIICZsNmkQUv5lvhJmDG4Jwl"
    "dHipMA1WXXfeRFngLsfq6hSuKTkdLGUwXbb3uYrWoW_xxSwKJlRPZ0RMc1bWK_ZwkAIYY9c5-wO1yL3hPmjc_Imwcz"
    "SMm76Ylvq-QGClWzAve5owLNeqQ\"}]}";

/* ---------- selection ---------- */

int wf_reqauthn_applied(const wf_store *s, const wf_reqauthn_options *o, const wf_resource ***out,
                        size_t *n)
{
    return wf_policy_select(s, WF_KIND_REQUESTAUTHENTICATION, o->ns, o->labels, o->root_ns, false,
                            out, n);
}

/* ---------- translation ---------- */

typedef struct {
    const wf_node *rule;
    const char *issuer;
} jrule;

/* Stable sort by issuer (insertion sort: policies hold a handful of rules). */
static void sort_rules(jrule *r, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        jrule x = r[i];
        size_t j = i;
        while (j > 0 && strcmp(r[j - 1].issuer, x.issuer) > 0) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
}

/* A sequence of strings at key as a JSON array (NULL when absent or empty). */
static json_t *str_seq(const wf_node *rule, const char *key)
{
    const wf_node *seq = wf_map_get(rule, key);
    return wf_seq_len(seq) ? wf_node_json_strings(seq) : NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* buildSpaceDelimitedClaims: the rule's claims plus "permission" and "scope", sorted, unique. */
static json_t *space_delimited(const wf_node *rule)
{
    const wf_node *seq = wf_map_get(rule, "spaceDelimitedClaims");
    size_t n = wf_seq_len(seq);
    const char **v = calloc(n + 2, sizeof(*v));
    if (!v)
        return NULL;
    size_t k = 0;
    v[k++] = "permission";
    v[k++] = "scope";
    for (size_t i = 0; i < n; i++) {
        const char *c = wf_node_str(wf_seq_at(seq, i));
        if (c)
            v[k++] = c;
    }
    qsort(v, k, sizeof(*v), cmp_str);
    json_t *a = json_array();
    for (size_t i = 0; a && i < k; i++)
        if ((i == 0 || strcmp(v[i], v[i - 1]) != 0) && json_array_append_new(a, json_string(v[i])))
            a = (json_decref(a), NULL);
    free(v);
    return a;
}

static json_t *from_headers(const wf_node *rule)
{
    const wf_node *seq = wf_map_get(rule, "fromHeaders");
    size_t n = wf_seq_len(seq);
    if (n == 0)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const wf_node *h = wf_seq_at(seq, i);
        const char *name = wf_map_str(h, "name"), *prefix = wf_map_str(h, "prefix");
        json_t *o = json_pack("{s:s}", "name", name ? name : "");
        if (!o ||
            (prefix && *prefix &&
             json_object_set_new(o, "value_prefix", json_string(prefix)) != 0) ||
            json_array_append_new(a, o) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

static json_t *claim_to_headers(const wf_node *rule)
{
    const wf_node *seq = wf_map_get(rule, "outputClaimToHeaders");
    size_t n = wf_seq_len(seq);
    if (n == 0)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const wf_node *h = wf_seq_at(seq, i);
        const char *hdr = wf_map_str(h, "header"), *claim = wf_map_str(h, "claim");
        if (json_array_append_new(a, json_pack("{s:s,s:s}", "header_name", hdr ? hdr : "",
                                               "claim_name", claim ? claim : "")) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* "5s", "1.5s", "500ms" -> ms (Go duration subset); default when absent or malformed. */
static long timeout_ms(const wf_node *rule)
{
    const char *t = wf_map_str(rule, "timeout");
    if (!t || !*t)
        return FETCH_TIMEOUT_MS;
    char *end = NULL;
    double v = strtod(t, &end);
    if (end == t || v <= 0)
        return FETCH_TIMEOUT_MS;
    if (strcmp(end, "ms") == 0)
        return (long)v;
    if (strcmp(end, "s") == 0)
        return (long)(v * 1000);
    if (strcmp(end, "m") == 0)
        return (long)(v * 60000);
    return FETCH_TIMEOUT_MS;
}

/* BuildLocalJwks: {"inline_string": the inline jwks, else the resolved document, else the
 * stand-in}. */
static json_t *local_jwks(const wf_node *rule, const char *issuer, const wf_reqauthn_options *o)
{
    const char *jwks = wf_map_str(rule, "jwks");
    if (jwks && *jwks)
        return json_pack("{s:s}", "inline_string", jwks);
    const char *uri = wf_map_str(rule, "jwksUri");
    char *doc =
        o->resolve ? o->resolve(o->resolve_arg, uri ? uri : "", issuer, timeout_ms(rule)) : NULL;
    json_t *out = json_pack("{s:s}", "inline_string", doc ? doc : WF_JWT_FAKE_JWKS);
    free(doc);
    return out;
}

/* Sets key to v (consumed) unless v is NULL. */
static int set_opt(json_t *o, const char *key, json_t *v)
{
    return v ? json_object_set_new(o, key, v) : 0;
}

static json_t *provider(const jrule *r, const wf_reqauthn_options *o)
{
    const wf_node *rule = r->rule;
    json_t *p = json_pack("{s:s}", "issuer", r->issuer);
    if (!p)
        return NULL;
    bool fwd = false;
    wf_node_bool(wf_map_get(rule, "forwardOriginalToken"), &fwd);
    const char *out_hdr = wf_map_str(rule, "outputPayloadToHeader");
    int err = set_opt(p, "audiences", str_seq(rule, "audiences"));
    err |= json_object_set_new(p, "local_jwks", local_jwks(rule, r->issuer, o));
    if (fwd)
        err |= json_object_set_new(p, "forward", json_true());
    err |= set_opt(p, "from_headers", from_headers(rule));
    err |= set_opt(p, "from_params", str_seq(rule, "fromParams"));
    err |= set_opt(p, "from_cookies", str_seq(rule, "fromCookies"));
    if (out_hdr && *out_hdr)
        err |= json_object_set_new(p, "forward_payload_header", json_string(out_hdr));
    err |= json_object_set_new(p, "payload_in_metadata", json_string("payload"));
    err |= json_object_set_new(p, "normalize_payload_in_metadata",
                               json_pack("{s:o}", "space_delimited_claims", space_delimited(rule)));
    err |= set_opt(p, "claim_to_headers", claim_to_headers(rule));
    if (o->gateway)
        err |= json_object_set_new(p, "clear_route_cache", json_true());
    if (err) {
        json_decref(p);
        return NULL;
    }
    return p;
}

static json_t *any_missing(const char *name)
{
    return json_pack("{s:{s:[{s:s},{s:{}}]}}", "requires_any", "requirements", "provider_name",
                     name, "allow_missing");
}

/* The requirement over n providers origins-0 .. origins-<n-1>. */
static json_t *requirement(size_t n)
{
    if (n == 1)
        return any_missing("origins-0");
    json_t *outer = json_array(), *inner = json_array();
    char name[32];
    for (size_t i = 0; outer && inner && i < n; i++) {
        snprintf(name, sizeof name, "origins-%zu", i);
        if (json_array_append_new(outer, json_pack("{s:s}", "provider_name", name)) != 0 ||
            json_array_append_new(inner, any_missing(name)) != 0) {
            json_decref(outer);
            outer = NULL;
        }
    }
    if (!outer || !inner ||
        json_array_append_new(outer, json_pack("{s:{s:o}}", "requires_all", "requirements",
                                               json_incref(inner))) != 0) {
        json_decref(outer);
        json_decref(inner);
        return NULL;
    }
    json_decref(inner);
    return json_pack("{s:{s:o}}", "requires_any", "requirements", outer);
}

static json_t *build(const jrule *rules, size_t n, const wf_reqauthn_options *o)
{
    json_t *providers = json_object();
    char name[32];
    for (size_t i = 0; providers && i < n; i++) {
        snprintf(name, sizeof name, "origins-%zu", i);
        if (json_object_set_new(providers, name, provider(&rules[i], o)) != 0) {
            json_decref(providers);
            providers = NULL;
        }
    }
    json_t *req = providers ? requirement(n) : NULL;
    if (!req) {
        json_decref(providers);
        return NULL;
    }
    return json_pack("{s:s,s:{s:s,s:o,s:[{s:{s:s},s:o}],s:b}}", "name", WF_JWT_FILTER_NAME,
                     "typed_config", "@type", WF_JWT_FILTER_TYPE, "providers", providers, "rules",
                     "match", "prefix", "/", "requires", req, "bypass_cors_preflight", 1);
}

json_t *wf_reqauthn_filter(const wf_store *s, const wf_reqauthn_options *o, int *rc)
{
    const wf_resource **ras;
    size_t nra;
    *rc = -1;
    if (wf_reqauthn_applied(s, o, &ras, &nra) != 0)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nra; i++)
        n += wf_seq_len(wf_map_get(ras[i]->spec, "jwtRules"));
    jrule *rules = n ? calloc(n, sizeof(*rules)) : NULL;
    if (n && !rules) {
        free(ras);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < nra; i++) {
        const wf_node *seq = wf_map_get(ras[i]->spec, "jwtRules");
        for (size_t j = 0; j < wf_seq_len(seq); j++) {
            const wf_node *r = wf_seq_at(seq, j);
            const char *iss = wf_map_str(r, "issuer");
            rules[k++] = (jrule){r, iss ? iss : ""};
        }
    }
    free(ras);
    sort_rules(rules, k);
    json_t *f = k ? build(rules, k, o) : NULL;
    free(rules);
    *rc = k && !f ? -1 : 0;
    return f;
}

/* ---------- placement ---------- */

static int insert_hcm(json_t *tc, const json_t *filter)
{
    json_t *hf = json_object_get(tc, "http_filters");
    if (!json_is_array(hf))
        return 0;
    size_t at = 0;
    for (size_t i = 0; i < json_array_size(hf); i++) {
        const char *n = json_string_value(json_object_get(json_array_get(hf, i), "name"));
        if (n && strcmp(n, MX_NAME) == 0)
            at = i + 1;
    }
    return json_array_insert_new(hf, at, json_deep_copy(filter));
}

int wf_reqauthn_insert(json_t *listeners, const json_t *filter)
{
    if (!filter)
        return 0;
    size_t i, j, k;
    json_t *l, *fc, *f;
    json_array_foreach(listeners, i, l)
    {
        json_array_foreach(json_object_get(l, "filter_chains"), j, fc)
        {
            json_array_foreach(json_object_get(fc, "filters"), k, f)
            {
                const char *n = json_string_value(json_object_get(f, "name"));
                if (n && strcmp(n, HCM_NAME) == 0 &&
                    insert_hcm(json_object_get(f, "typed_config"), filter) != 0)
                    return -1;
            }
        }
    }
    return 0;
}
