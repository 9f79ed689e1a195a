/*
 * test_pilot_jwt.c - RequestAuthentication in weft-pilot (pilot/jwt.h): which policies apply
 * (namespace, root namespace, selector, targetRefs), the jwt_authn filter compared whole with
 * the shape istiod's convertToEnvoyJwtConfig writes (one provider; several sorted by issuer with
 * the requires_any / requires_all requirement; every JWTRule field), jwksUri through the
 * resolver or the fail-closed stand-in, placement after istio.metadata_exchange, and that the
 * filter loads in weft-proxy's bootstrap loader.
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
#include "model/store.h"
#include "pilot/jwt.h"
#include "proxy/config/config.h"
#include "proxy/filters/http/jwt_authn.h"
#include "proxy/http/filter.h"

#define RA_HEAD "apiVersion: security.istio.io/v1\nkind: RequestAuthentication\n"
#define JWKS1   "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"}]}"

static const wf_kv web_kv[] = {{.key = "app", .value = "web"}};
static const wf_kvs web = {.n = 1, .items = (wf_kv *)web_kv};

static wf_store *store(const char *yaml)
{
    wf_store *s = wf_test_load_store(NULL, yaml, "default");
    assert_non_null(s);
    return s;
}

static json_t *filter(wf_store *s, const wf_reqauthn_options *o)
{
    int rc = 1;
    json_t *f = wf_reqauthn_filter(s, o, &rc);
    assert_int_equal(rc, 0);
    return f;
}

static void expect_json(json_t *got, const char *want)
{
    json_error_t e;
    json_t *w = json_loads(want, 0, &e);
    if (!w)
        fail_msg("bad expectation: %s", e.text);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_INDENT(1) | JSON_SORT_KEYS);
        char *x = json_dumps(w, JSON_INDENT(1) | JSON_SORT_KEYS);
        fail_msg("got %s\nwant %s", g, x);
    }
    json_decref(w);
}

static void test_selection(void **state)
{
    (void)state;
    wf_store *s = store(
        RA_HEAD "metadata: {name: ns-wide, namespace: shop}\n"
                "spec: {jwtRules: [{issuer: a}]}\n"
                "---\n" RA_HEAD "metadata: {name: web-only, namespace: shop}\n"
                "spec: {selector: {matchLabels: {app: web}}}\n"
                "---\n" RA_HEAD "metadata: {name: api-only, namespace: shop}\n"
                "spec: {selector: {matchLabels: {app: api}}}\n"
                "---\n" RA_HEAD "metadata: {name: mesh, namespace: istio-system}\n"
                "spec: {}\n"
                "---\n" RA_HEAD "metadata: {name: root-web, namespace: istio-system}\n"
                "spec: {selector: {matchLabels: {app: web}}}\n"
                "---\n" RA_HEAD "metadata: {name: gw, namespace: shop}\n"
                "spec: {targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: g}]}\n"
                "---\n" RA_HEAD "metadata: {name: elsewhere, namespace: other}\n"
                "spec: {}\n");
    const wf_resource **v;
    size_t n;
    wf_reqauthn_options o = {.ns = "shop", .labels = &web};
    assert_int_equal(wf_reqauthn_applied(s, &o, &v, &n), 0);
    const char *want[] = {"ns-wide", "web-only", "mesh", "root-web"};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i]->name, want[i]);
    free(v);
    /* no labels: only the policies without selector */
    o.labels = NULL;
    assert_int_equal(wf_reqauthn_applied(s, &o, &v, &n), 0);
    assert_int_equal(n, 2);
    free(v);
    /* a root namespace of our own: istio-system is an ordinary namespace then */
    o = (wf_reqauthn_options){.ns = "shop", .labels = &web, .root_ns = "other"};
    assert_int_equal(wf_reqauthn_applied(s, &o, &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[2]->name, "elsewhere");
    free(v);
    wf_store_free(s);
}

static void test_one_rule_every_field(void **state)
{
    (void)state;
    wf_store *s =
        store(RA_HEAD "metadata: {name: jwt, namespace: shop}\n"
                      "spec:\n"
                      "  selector: {matchLabels: {app: web}}\n"
                      "  jwtRules:\n"
                      "  - issuer: https://idp.example.com\n"
                      "    audiences: [web, api]\n"
                      "    jwks: '" JWKS1 "'\n"
                      "    fromHeaders: [{name: x-token, prefix: 'Bearer '}, {name: x-raw}]\n"
                      "    fromParams: [tok]\n"
                      "    fromCookies: [session]\n"
                      "    outputPayloadToHeader: x-jwt-payload\n"
                      "    forwardOriginalToken: true\n"
                      "    outputClaimToHeaders: [{header: x-sub, claim: sub}]\n"
                      "    spaceDelimitedClaims: [roles, scope]\n");
    wf_reqauthn_options o = {.ns = "shop", .labels = &web};
    json_t *f = filter(s, &o);
    expect_json(
        f, "{\"name\":\"envoy.filters.http.jwt_authn\",\"typed_config\":{\"@type\":\"type."
           "googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication\","
           "\"providers\":{\"origins-0\":{\"issuer\":\"https://idp.example.com\",\"audiences\":"
           "[\"web\",\"api\"],\"local_jwks\":{\"inline_string\":\"{\\\"keys\\\":[{\\\"kty\\\":"
           "\\\"EC\\\",\\\"crv\\\":\\\"P-256\\\",\\\"x\\\":\\\"AA\\\",\\\"y\\\":\\\"AA\\\"}]}\"},"
           "\"forward\":true,\"from_headers\":[{\"name\":\"x-token\",\"value_prefix\":\"Bearer "
           "\"},{\"name\":\"x-raw\"}],\"from_params\":[\"tok\"],\"from_cookies\":[\"session\"],"
           "\"forward_payload_header\":\"x-jwt-payload\",\"payload_in_metadata\":\"payload\","
           "\"normalize_payload_in_metadata\":{\"space_delimited_claims\":[\"permission\","
           "\"roles\",\"scope\"]},\"claim_to_headers\":[{\"header_name\":\"x-sub\","
           "\"claim_name\":\"sub\"}]}},\"rules\":[{\"match\":{\"prefix\":\"/\"},\"requires\":{"
           "\"requires_any\":{\"requirements\":[{\"provider_name\":\"origins-0\"},"
           "{\"allow_missing\":{}}]}}}],\"bypass_cors_preflight\":true}}");
    json_decref(f);
    /* a gateway's providers clear the route cache (Istio: JwtFilter(not a sidecar)) */
    o.gateway = true;
    f = filter(s, &o);
    json_t *p0 = json_object_get(json_object_get(json_object_get(f, "typed_config"), "providers"),
                                 "origins-0");
    assert_true(json_is_true(json_object_get(p0, "clear_route_cache")));
    json_decref(f);
    /* a workload no policy selects gets no filter */
    wf_reqauthn_options other = {.ns = "shop", .labels = NULL};
    assert_null(filter(s, &other));
    wf_store_free(s);
}

static void test_several_rules_sorted_by_issuer(void **state)
{
    (void)state;
    wf_store *s = store(RA_HEAD "metadata: {name: b, namespace: shop}\n"
                                "spec: {jwtRules: [{issuer: zeta, jwks: '" JWKS1 "'}]}\n"
                                "---\n" RA_HEAD "metadata: {name: a, namespace: istio-system}\n"
                                "spec: {jwtRules: [{issuer: alpha, jwks: '" JWKS1 "'}]}\n");
    wf_reqauthn_options o = {.ns = "shop"};
    json_t *f = filter(s, &o);
    json_t *tc = json_object_get(f, "typed_config");
    json_t *providers = json_object_get(tc, "providers");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(providers, "origins-0"), "issuer")),
        "alpha");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(providers, "origins-1"), "issuer")),
        "zeta");
    expect_json(json_object_get(json_array_get(json_object_get(tc, "rules"), 0), "requires"),
                "{\"requires_any\":{\"requirements\":[{\"provider_name\":\"origins-0\"},"
                "{\"provider_name\":\"origins-1\"},{\"requires_all\":{\"requirements\":["
                "{\"requires_any\":{\"requirements\":[{\"provider_name\":\"origins-0\"},"
                "{\"allow_missing\":{}}]}},{\"requires_any\":{\"requirements\":["
                "{\"provider_name\":\"origins-1\"},{\"allow_missing\":{}}]}}]}}]}}");
    json_decref(f);
    wf_store_free(s);
}

typedef struct {
    int calls;
    char uri[128], issuer[128];
    long timeout;
    const char *answer;
} resolver;

static char *resolve(void *arg, const char *uri, const char *issuer, long timeout_ms)
{
    resolver *r = arg;
    r->calls++;
    snprintf(r->uri, sizeof r->uri, "%s", uri);
    snprintf(r->issuer, sizeof r->issuer, "%s", issuer);
    r->timeout = timeout_ms;
    return r->answer ? strdup(r->answer) : NULL;
}

static const char *inline_jwks(json_t *f)
{
    json_t *p = json_object_get(json_object_get(json_object_get(f, "typed_config"), "providers"),
                                "origins-0");
    return json_string_value(json_object_get(json_object_get(p, "local_jwks"), "inline_string"));
}

static void test_jwks_uri(void **state)
{
    (void)state;
    wf_store *s = store(RA_HEAD "metadata: {name: r, namespace: shop}\n"
                                "spec: {jwtRules: [{issuer: https://idp, jwksUri: "
                                "'https://idp/keys', timeout: 2s}]}\n");
    wf_reqauthn_options o = {.ns = "shop"};
    json_t *f = filter(s, &o);
    assert_string_equal(inline_jwks(f), WF_JWT_FAKE_JWKS); /* no resolver: fail closed */
    json_decref(f);
    resolver r = {.answer = JWKS1};
    o.resolve = resolve;
    o.resolve_arg = &r;
    f = filter(s, &o);
    assert_int_equal(r.calls, 1);
    assert_string_equal(r.uri, "https://idp/keys");
    assert_string_equal(r.issuer, "https://idp");
    assert_int_equal(r.timeout, 2000);
    assert_string_equal(inline_jwks(f), JWKS1);
    json_decref(f);
    r.answer = NULL; /* not fetched (yet) */
    f = filter(s, &o);
    assert_string_equal(inline_jwks(f), WF_JWT_FAKE_JWKS);
    json_decref(f);
    wf_store_free(s);
    /* inline jwks wins over jwksUri: the resolver is not asked */
    s = store(RA_HEAD "metadata: {name: r, namespace: shop}\n"
                      "spec: {jwtRules: [{issuer: i, jwksUri: 'https://idp/keys', jwks: '" JWKS1
                      "'}]}\n");
    r.calls = 0;
    f = filter(s, &o);
    assert_int_equal(r.calls, 0);
    assert_string_equal(inline_jwks(f), JWKS1);
    json_decref(f);
    wf_store_free(s);
}

static void test_insert_after_metadata_exchange(void **state)
{
    (void)state;
    json_t *ls = json_loads(
        "[{\"name\":\"l\",\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network."
        "http_connection_manager\",\"typed_config\":{\"http_filters\":[{\"name\":\"istio."
        "metadata_exchange\"},{\"name\":\"envoy.filters.http.rbac\"},{\"name\":\"envoy.filters."
        "http.router\"}]}}]},{\"filters\":[{\"name\":\"envoy.filters.network.http_connection_"
        "manager\",\"typed_config\":{\"http_filters\":[{\"name\":\"envoy.filters.http."
        "router\"}]}}]}]}]",
        0, NULL);
    json_t *f = json_pack("{s:s}", "name", "envoy.filters.http.jwt_authn");
    assert_int_equal(wf_reqauthn_insert(ls, f), 0);
    assert_int_equal(wf_reqauthn_insert(ls, NULL), 0);
    json_t *fc = json_object_get(json_array_get(ls, 0), "filter_chains");
    json_t *hf0 = json_object_get(
        json_object_get(json_array_get(json_object_get(json_array_get(fc, 0), "filters"), 0),
                        "typed_config"),
        "http_filters");
    json_t *hf1 = json_object_get(
        json_object_get(json_array_get(json_object_get(json_array_get(fc, 1), "filters"), 0),
                        "typed_config"),
        "http_filters");
    assert_int_equal(json_array_size(hf0), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hf0, 1), "name")),
                        "envoy.filters.http.jwt_authn");
    assert_string_equal(json_string_value(json_object_get(json_array_get(hf0, 2), "name")),
                        "envoy.filters.http.rbac");
    assert_string_equal(json_string_value(json_object_get(json_array_get(hf1, 0), "name")),
                        "envoy.filters.http.jwt_authn");
    json_decref(f);
    json_decref(ls);
}

/* What pilot writes, weft-proxy loads. */
static void test_proxy_loads_it(void **state)
{
    (void)state;
    wf_store *s = store(RA_HEAD "metadata: {name: a, namespace: shop}\n"
                                "spec: {jwtRules: [{issuer: one, jwksUri: 'http://x/k'}, "
                                "{issuer: two, fromHeaders: [{name: x-t, prefix: 'T '}], "
                                "outputPayloadToHeader: x-p}]}\n");
    wf_reqauthn_options o = {.ns = "shop"};
    json_t *f = filter(s, &o);
    char *fs = json_dumps(f, JSON_COMPACT);
    char *text = NULL;
    assert_true(
        asprintf(&text,
                 "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{"
                 "\"address\":\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":"
                 "[{\"name\":\"envoy.filters.network.http_connection_manager\",\"typed_config\":{"
                 "\"@type\":\"type.googleapis.com/envoy.extensions.filters.network.http_"
                 "connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"in\","
                 "\"http_filters\":[%s,{\"name\":\"envoy.filters.http.router\"}],"
                 "\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\",\"domains\":[\"*\"],"
                 "\"routes\":[]}]}}}]}]}]}}",
                 fs) > 0);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_jwt_authn_filter *jf =
        wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_JWT_AUTHN_NAME);
    assert_non_null(jf);
    assert_int_equal(jf->nproviders, 2);
    assert_int_equal(jf->nrules, 1);
    assert_int_equal(jf->rules[0].req.kind, WP_JREQ_ANY);
    assert_non_null(jf->providers[0].jwks); /* the stand-in parses */
    assert_int_equal(jf->sanitize.nremove, 1);
    wp_config_unref(c);
    wf_strbuf_free(&err);
    free(text);
    free(fs);
    json_decref(f);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_one_rule_every_field),
        cmocka_unit_test(test_several_rules_sorted_by_issuer),
        cmocka_unit_test(test_jwks_uri),
        cmocka_unit_test(test_insert_after_metadata_exchange),
        cmocka_unit_test(test_proxy_loads_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
