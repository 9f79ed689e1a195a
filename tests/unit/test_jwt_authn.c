/*
 * test_jwt_authn.c - envoy.filters.http.jwt_authn (filters/http/jwt_authn.c,
 * bootstrap/bootstrap_jwt.c): istiod's one- and multi-provider shapes loaded from a bootstrap
 * and run on requests (no token passes, a valid token passes with its header removed and its
 * payload for the metadata, expired / wrong issuer / bad signature / audience fail with Envoy's
 * statuses), token locations (Authorization Bearer, access_token, from_headers with a prefix,
 * from_params, from_cookies), forward, forward_payload_header, claim_to_headers and the
 * sanitizing of their headers, space-delimited claims, CORS preflight, rules, a JWKS that does
 * not load (fail closed), loader errors by JSON path and the stats names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "jwt_mint.h"

#include "proxy/config/config.h"
#include "proxy/filters/http/jwt_authn.h"
#include "proxy/http/filter.h"
#include "proxy/stats/stats.h"

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define TC_PATH "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
#define ISS1    "https://issuer-1.example"
#define ISS2    "issuer-2"
#define NOW     1700000000u

static EVP_PKEY *key1, *key2;
static char *jwks1, *jwks2;

static int setup(void **state)
{
    (void)state;
    key1 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    key2 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    char *j1 = mint_jwk(key1, NULL, NULL), *j2 = mint_jwk(key2, NULL, NULL);
    jwks1 = mint_jwks1(j1);
    jwks2 = mint_jwks1(j2);
    free(j1);
    free(j2);
    return key1 && key2 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(key1);
    EVP_PKEY_free(key2);
    free(jwks1);
    free(jwks2);
    return 0;
}

/* A bootstrap whose HCM has http_filters [jwt_authn with typed_config tc, router]. */
static char *boot(json_t *tc)
{
    char *tcs = json_dumps(tc, JSON_COMPACT);
    json_decref(tc);
    char *out = NULL;
    int n = asprintf(
        &out,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"inbound_0.0.0.0_80\",\"http_filters\":[{\"name\":"
        "\"envoy.filters.http.jwt_authn\",\"typed_config\":%s},{\"name\":"
        "\"envoy.filters.http.router\"}],\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\","
        "\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":"
        "\"c\"}}]}]}}}]}]}],\"clusters\":[{\"name\":\"c\",\"load_assignment\":{\"endpoints\":[{"
        "\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]}}",
        tcs);
    assert_true(n > 0);
    free(tcs);
    return out;
}

/* istiod's provider for an issuer with inline keys (policy_applier.go). */
static json_t *provider(const char *iss, const char *jwks)
{
    return json_pack("{s:s, s:{s:s}, s:s, s:{s:[s,s]}}", "issuer", iss, "local_jwks",
                     "inline_string", jwks, "payload_in_metadata", "payload",
                     "normalize_payload_in_metadata", "space_delimited_claims", "permission",
                     "scope");
}

/* requires_any [p, allow_missing] on prefix "/": istiod's one-provider rule. */
static json_t *one_rule(const char *p)
{
    return json_pack("[{s:{s:s}, s:{s:{s:[{s:s},{s:{}}]}}}]", "match", "prefix", "/", "requires",
                     "requires_any", "requirements", "provider_name", p, "allow_missing");
}

static json_t *jwt_tc(json_t *providers, json_t *rules)
{
    return json_pack("{s:s, s:o, s:o, s:b}", "@type", WP_JWT_AUTHN_TYPE, "providers", providers,
                     "rules", rules, "bypass_cors_preflight", 1);
}

static wp_config *load(json_t *tc)
{
    char *text = boot(tc);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    free(text);
    return c;
}

static const wp_jwt_authn_filter *filter_of(const wp_config *c)
{
    const wp_jwt_authn_filter *f =
        wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_JWT_AUTHN_NAME);
    assert_non_null(f);
    return f;
}

typedef struct {
    h1_header h[4];
    wp_jwt_request rq;
    char auth[4096];
} req;

static void req_init(req *r, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->rq = (wp_jwt_request){"GET", 3, path, strlen(path), r->h, 0};
}

static void req_header(req *r, const char *name, const char *value)
{
    r->h[r->rq.nheaders++] = (h1_header){{name, strlen(name)}, {value, strlen(value)}};
}

static void req_bearer(req *r, const char *tok)
{
    snprintf(r->auth, sizeof r->auth, "Bearer %s", tok);
    req_header(r, "Authorization", r->auth);
}

/* The status for the request under the filter's first rule; *res kept when out is non-NULL. */
static wp_jwt_status run(const wp_jwt_authn_filter *f, req *r, wp_jwt_result **out)
{
    const wp_jwt_rule *rule = wp_jwt_match_rule(f, &r->rq);
    assert_non_null(rule);
    wp_jwt_result *res = NULL;
    wp_jwt_status st = wp_jwt_verify_request(f, &rule->req, &r->rq, NOW, &res);
    if (out)
        *out = res;
    else
        wp_jwt_result_free(res);
    return st;
}

static char *tok1(const char *claims)
{
    char payload[512];
    snprintf(payload, sizeof payload, "{\"iss\":\"" ISS1 "\",\"sub\":\"alice\"%s}", claims);
    return mint_token(key1, "RS256", NULL, NULL, payload);
}

static bool removes(const wp_jwt_result *r, const char *name)
{
    for (size_t i = 0; i < r->ops.nremove; i++)
        if (strcmp(r->ops.remove[i], name) == 0)
            return true;
    return false;
}

static const char *added(const wp_jwt_result *r, const char *name)
{
    for (size_t i = 0; i < r->ops.nadd; i++)
        if (strcmp(r->ops.add[i].key, name) == 0)
            return r->ops.add[i].value;
    return NULL;
}

static void test_istio_one_provider(void **state)
{
    (void)state;
    wp_config *c =
        load(jwt_tc(json_pack("{s:o}", "origins-0", provider(ISS1, jwks1)), one_rule("origins-0")));
    const wp_jwt_authn_filter *f = filter_of(c);
    assert_true(f->bypass_cors_preflight);
    req r;
    /* no token: allowed, nothing allocated */
    req_init(&r, "/x");
    wp_jwt_result *res = (wp_jwt_result *)1;
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_null(res);
    /* a valid token: allowed, the Authorization header removed, the payload kept */
    char *t = tok1(",\"scope\":\"read write\",\"exp\":1700000100");
    req_init(&r, "/x");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_non_null(res);
    assert_true(removes(res, "authorization"));
    assert_false(res->clear_route);
    assert_string_equal(res->md_key, "payload");
    assert_string_equal(json_string_value(json_object_get(res->payload, "sub")), "alice");
    json_t *scope = json_object_get(res->payload, "scope");
    assert_true(json_is_array(scope));
    assert_int_equal(json_array_size(scope), 2);
    assert_string_equal(json_string_value(json_array_get(scope, 1)), "write");
    wp_jwt_result_free(res);
    free(t);
    /* expired (beyond the 60 s skew) */
    t = tok1(",\"exp\":1699999900");
    req_init(&r, "/x");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_EXPIRED);
    free(t);
    /* expired by less than the skew: allowed */
    t = tok1(",\"exp\":1699999950");
    req_init(&r, "/x");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK);
    free(t);
    /* another issuer */
    t = mint_token(key1, "RS256", NULL, NULL, "{\"iss\":\"evil\",\"sub\":\"a\"}");
    req_init(&r, "/x");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_UNKNOWN_ISSUER);
    free(t);
    /* signed by a key the JWKS does not have */
    t = mint_token(key2, "ES256", NULL, NULL, "{\"iss\":\"" ISS1 "\"}");
    req_init(&r, "/x");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_VERIFICATION_FAIL);
    free(t);
    /* garbage */
    req_init(&r, "/x");
    req_bearer(&r, "abc.def");
    assert_int_equal(run(f, &r, NULL), WP_JWT_BAD_FORMAT);
    /* the default query parameter access_token */
    t = tok1("");
    char path[2048];
    snprintf(path, sizeof path, "/x?a=1&access_token=%s", t);
    req_init(&r, path);
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_false(removes(res, "authorization")); /* a parameter stays, as Envoy leaves it */
    wp_jwt_result_free(res);
    free(t);
    /* "Bearer" needs its exact case and space */
    req_init(&r, "/x");
    req_header(&r, "authorization", "bearer abc");
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK);
    wp_config_unref(c);
}

static void test_istio_two_providers(void **state)
{
    (void)state;
    /* requires_any [p0, p1, requires_all [any(p0, allow_missing), any(p1, allow_missing)]] */
    json_t *rules = json_pack(
        "[{s:{s:s}, s:{s:{s:[{s:s},{s:s},{s:{s:[{s:{s:[{s:s},{s:{}}]}},{s:{s:[{s:s},{s:{}}]}}]}}"
        "]}}}]",
        "match", "prefix", "/", "requires", "requires_any", "requirements", "provider_name",
        "origins-0", "provider_name", "origins-1", "requires_all", "requirements", "requires_any",
        "requirements", "provider_name", "origins-0", "allow_missing", "requires_any",
        "requirements", "provider_name", "origins-1", "allow_missing");
    wp_config *c = load(jwt_tc(json_pack("{s:o, s:o}", "origins-0", provider(ISS1, jwks1),
                                         "origins-1", provider(ISS2, jwks2)),
                               rules));
    const wp_jwt_authn_filter *f = filter_of(c);
    req r;
    req_init(&r, "/");
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK);
    char *t = mint_token(key2, "ES256", NULL, NULL, "{\"iss\":\"" ISS2 "\",\"sub\":\"bob\"}");
    req_init(&r, "/");
    req_bearer(&r, t);
    wp_jwt_result *res;
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_string_equal(json_string_value(json_object_get(res->payload, "iss")), ISS2);
    wp_jwt_result_free(res);
    free(t);
    /* a token of issuer 2 signed by issuer 1's key */
    t = mint_token(key1, "RS256", NULL, NULL, "{\"iss\":\"" ISS2 "\"}");
    req_init(&r, "/");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_VERIFICATION_FAIL);
    free(t);
    t = mint_token(key1, "RS256", NULL, NULL, "{\"iss\":\"nobody\"}");
    req_init(&r, "/");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_UNKNOWN_ISSUER);
    free(t);
    wp_config_unref(c);
}

static void test_locations_and_outputs(void **state)
{
    (void)state;
    json_t *p = provider(ISS1, jwks1);
    json_object_set_new(p, "from_headers",
                        json_pack("[{s:s, s:s}]", "name", "X-Jwt", "value_prefix", "Tok "));
    json_object_set_new(p, "from_params", json_pack("[s]", "jwt"));
    json_object_set_new(p, "from_cookies", json_pack("[s]", "session"));
    json_object_set_new(p, "forward_payload_header", json_string("X-Jwt-Payload"));
    json_object_set_new(p, "clear_route_cache", json_true());
    json_object_set_new(p, "claim_to_headers",
                        json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "header_name", "x-sub",
                                  "claim_name", "sub", "header_name", "x-n", "claim_name", "n",
                                  "header_name", "x-deep", "claim_name", "a.b"));
    wp_config *c = load(jwt_tc(json_pack("{s:o}", "p", p), one_rule("p")));
    const wp_jwt_authn_filter *f = filter_of(c);
    /* every request has the output headers removed (sanitizeHeaders) */
    assert_int_equal(f->sanitize.nremove, 4);
    assert_string_equal(f->sanitize.remove[0], "x-jwt-payload");
    char *t = tok1(",\"n\":42,\"a\":{\"b\":\"deep\"}");
    char hv[4096];
    snprintf(hv, sizeof hv, "xx Tok %s, trailing", t);
    req r;
    req_init(&r, "/");
    req_header(&r, "x-jwt", hv);
    wp_jwt_result *res;
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_true(removes(res, "x-jwt"));
    assert_true(removes(res, "x-sub")); /* a forged x-sub from the client goes */
    const char *dot = strchr(t, '.');
    size_t plen = (size_t)(strchr(dot + 1, '.') - dot - 1);
    assert_int_equal(strlen(added(res, "x-jwt-payload")), plen);
    assert_memory_equal(added(res, "x-jwt-payload"), dot + 1, plen);
    assert_string_equal(added(res, "x-sub"), "alice");
    assert_string_equal(added(res, "x-n"), "42");
    assert_string_equal(added(res, "x-deep"), "deep");
    assert_true(f->providers[0].clear_route_cache);
    assert_true(res->clear_route); /* headers were added: the route is chosen again */
    wp_jwt_result_free(res);
    /* the token ends at the first character that is not base64url or '.' (extractJWT) */
    snprintf(hv, sizeof hv, "Tok %s=+/junk", t);
    req_init(&r, "/");
    req_header(&r, "x-jwt", hv);
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK);
    /* Authorization is not a location of this provider any more */
    req_init(&r, "/");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK);
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_null(res);
    /* from_params and from_cookies */
    char path[2048];
    snprintf(path, sizeof path, "/p?jwt=%s", t);
    req_init(&r, path);
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK);
    snprintf(hv, sizeof hv, "a=b; session=%s; c=d", t);
    req_init(&r, "/");
    req_header(&r, "Cookie", hv);
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_non_null(res);
    wp_jwt_result_free(res);
    req_init(&r, "/");
    req_header(&r, "Cookie", "session=bad.token");
    assert_int_equal(run(f, &r, NULL), WP_JWT_BAD_FORMAT);
    free(t);
    wp_config_unref(c);
}

static void test_forward_and_audiences(void **state)
{
    (void)state;
    json_t *p = provider(ISS1, jwks1);
    json_object_set_new(p, "forward", json_true());
    json_object_set_new(p, "audiences", json_pack("[s]", "api"));
    wp_config *c = load(jwt_tc(json_pack("{s:o}", "p", p), one_rule("p")));
    const wp_jwt_authn_filter *f = filter_of(c);
    char *t = tok1(",\"aud\":[\"x\",\"https://api/\"]");
    req r;
    req_init(&r, "/");
    req_bearer(&r, t);
    wp_jwt_result *res;
    assert_int_equal(run(f, &r, &res), WP_JWT_OK);
    assert_false(removes(res, "authorization"));
    wp_jwt_result_free(res);
    free(t);
    t = tok1(",\"aud\":\"web\"");
    req_init(&r, "/");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWT_AUDIENCE_NOT_ALLOWED);
    free(t);
    wp_config_unref(c);
}

static void test_cors_and_rules(void **state)
{
    (void)state;
    json_t *rules = json_pack("[{s:{s:s}, s:{s:s}}, {s:{s:s}}]", "match", "path", "/secure",
                              "requires", "provider_name", "p", "match", "prefix", "/");
    wp_config *c = load(jwt_tc(json_pack("{s:o}", "p", provider(ISS1, jwks1)), rules));
    const wp_jwt_authn_filter *f = filter_of(c);
    req r;
    req_init(&r, "/secure?x=1");
    const wp_jwt_rule *rule = wp_jwt_match_rule(f, &r.rq);
    assert_ptr_equal(rule, &f->rules[0]);
    wp_jwt_result *res;
    /* provider_name alone: a missing token fails */
    assert_int_equal(wp_jwt_verify_request(f, &rule->req, &r.rq, NOW, &res), WP_JWT_MISSED);
    req_init(&r, "/secure/more");
    rule = wp_jwt_match_rule(f, &r.rq);
    assert_ptr_equal(rule, &f->rules[1]); /* no requirement */
    assert_int_equal(wp_jwt_verify_request(f, &rule->req, &r.rq, NOW, &res), WP_JWT_OK);
    /* CORS preflight */
    req_init(&r, "/secure");
    r.rq.method = "OPTIONS";
    r.rq.method_len = 7;
    assert_false(wp_jwt_is_cors_preflight(&r.rq));
    req_header(&r, "Origin", "https://a");
    assert_false(wp_jwt_is_cors_preflight(&r.rq));
    req_header(&r, "Access-Control-Request-Method", "POST");
    assert_true(wp_jwt_is_cors_preflight(&r.rq));
    r.rq.method = "GET";
    r.rq.method_len = 3;
    assert_false(wp_jwt_is_cors_preflight(&r.rq));
    wp_config_unref(c);
}

static void test_bad_jwks_fails_closed(void **state)
{
    (void)state;
    wp_config *c =
        load(jwt_tc(json_pack("{s:o}", "p", provider(ISS1, "{\"keys\":[]}")), one_rule("p")));
    const wp_jwt_authn_filter *f = filter_of(c);
    assert_null(f->providers[0].jwks);
    char *t = tok1("");
    req r;
    req_init(&r, "/");
    req_bearer(&r, t);
    assert_int_equal(run(f, &r, NULL), WP_JWKS_NO_VALID_KEYS);
    req_init(&r, "/");
    assert_int_equal(run(f, &r, NULL), WP_JWT_OK); /* no token still passes */
    free(t);
    wp_config_unref(c);
}

static void expect_error(json_t *tc, const char *want)
{
    char *text = boot(tc);
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

static void test_loader_errors(void **state)
{
    (void)state;
    json_t *p = provider(ISS1, jwks1);
    json_object_del(p, "local_jwks");
    json_object_set_new(p, "remote_jwks",
                        json_pack("{s:{s:s,s:s}}", "http_uri", "uri", "https://x/jwks", "cluster",
                                  "outbound|443||x"));
    expect_error(jwt_tc(json_pack("{s:o}", "p", p), one_rule("p")),
                 "t.json: " TC_PATH ".http_filters[0].typed_config.providers.p.remote_jwks: "
                 "not supported by weft-proxy's jwt_authn filter");
    expect_error(jwt_tc(json_pack("{s:o}", "p", provider(ISS1, jwks1)), one_rule("q")),
                 "t.json: " TC_PATH
                 ".http_filters[0].typed_config.rules[0].requires.requires_any.requirements[0]"
                 ".provider_name: Required provider ['q'] is not configured.");
    p = provider(ISS1, jwks1);
    json_object_del(p, "local_jwks");
    expect_error(jwt_tc(json_pack("{s:o}", "p", p), one_rule("p")),
                 "t.json: " TC_PATH ".http_filters[0].typed_config.providers.p: one of "
                 "local_jwks or remote_jwks is required (weft-proxy supports local_jwks)");
    expect_error(
        jwt_tc(json_pack("{s:o}", "p", provider(ISS1, jwks1)),
               json_pack("[{s:{s:s}, s:{s:{s:[{s:s}]}}}]", "match", "prefix", "/", "requires",
                         "requires_any", "requirements", "provider_name", "p")),
        "t.json: " TC_PATH ".http_filters[0].typed_config.rules[0].requires"
        ".requires_any.requirements: value must contain at least 2 item(s)");
    json_t *tc = jwt_tc(json_pack("{s:o}", "p", provider(ISS1, jwks1)), one_rule("p"));
    json_object_set_new(tc, "requirement_map", json_object());
    expect_error(tc, "t.json: " TC_PATH ".http_filters[0].typed_config.requirement_map: not "
                     "supported by weft-proxy's jwt_authn filter");
}

static void test_stats_names(void **state)
{
    (void)state;
    wp_config *c =
        load(jwt_tc(json_pack("{s:o}", "origins-0", provider(ISS1, jwks1)), one_rule("origins-0")));
    wp_stats *st = wp_stats_new(1);
    assert_int_equal(wp_jwt_authn_register_stats(st, c), 0);
    const wp_jwt_authn_filter *f = filter_of(c);
    assert_int_not_equal(f->st_allowed, WP_STAT_INVALID);
    assert_int_equal(f->st_allowed,
                     wp_stats_counter(st, "http.inbound_0.0.0.0_80.jwt_authn.allowed"));
    assert_int_equal(f->st_denied,
                     wp_stats_counter(st, "http.inbound_0.0.0.0_80.jwt_authn.denied"));
    assert_int_equal(f->st_fetch_failed,
                     wp_stats_counter(st, "http.inbound_0.0.0.0_80.jwt_authn.jwks_fetch_failed"));
    wp_stats_free(st);
    wp_config_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_istio_one_provider),    cmocka_unit_test(test_istio_two_providers),
        cmocka_unit_test(test_locations_and_outputs), cmocka_unit_test(test_forward_and_audiences),
        cmocka_unit_test(test_cors_and_rules),        cmocka_unit_test(test_bad_jwks_fails_closed),
        cmocka_unit_test(test_loader_errors),         cmocka_unit_test(test_stats_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
