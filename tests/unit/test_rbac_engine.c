/*
 * test_rbac_engine.c - the RBAC engine (filters/rbac/engine.h) as the loader compiles it from
 * Envoy's JSON (bootstrap/bootstrap_rbac.c): every permission and principal kind, and/or/not,
 * ignore_case, the path after normalization and without its query, URI templates, metadata
 * matchers (the JWT payload shape Istio's requestPrincipals use), Envoy's policy order and
 * actions, shadow rules (counted, published as dynamic metadata, never enforced), the HTTP
 * filter's 403 (body, details, stats) and the loader's errors naming the field.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"

#include "proxy/config/config.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/rbac/engine.h"
#include "proxy/filters/rbac/rbac.h"
#include "proxy/http/filter.h"
#include "proxy/stats/stats.h"

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define RBAC_T "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
#define LPFX   "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"

/* A bootstrap whose HCM (stat_prefix "inbound_0.0.0.0_80") has http_filters
 * [rbac {tc}, router]; net: network filters ahead of the HCM ("" none, else "{...},"). */
static char *boot(const char *tc, const char *net)
{
    char *text = NULL;
    int n = asprintf(
        &text,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[%s{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"inbound_0.0.0.0_80\",\"http_filters\":[{\"name\":"
        "\"envoy.filters.http.rbac\",\"typed_config\":{\"@type\":\"" RBAC_T "\"%s%s}},"
        "{\"name\":\"envoy.filters.http.router\"}],"
        "\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[{"
        "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]}}}]}]}],\"clusters\":[{"
        "\"name\":\"c\",\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
        "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]"
        "}}",
        net, *tc ? "," : "", tc);
    assert_true(n > 0);
    return text;
}

typedef struct {
    wp_config *cfg;
    wp_rbac_config *rc;
    wp_regex_ctx rx;
    wp_stats *store;
    wp_stats_shard *sh;
} fixture;

static void load(fixture *x, const char *tc)
{
    char *text = boot(tc, "");
    wf_strbuf err = WF_STRBUF_INIT;
    x->cfg = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!x->cfg)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    const wp_hcm *h = x->cfg->listeners[0].chains[0].hcm;
    assert_ptr_equal(h->filter_chain->e[0].type, &wp_http_filter_rbac);
    x->rc = (wp_rbac_config *)(uintptr_t)h->filter_chain->e[0].config;
    assert_int_equal(wp_regex_ctx_init(&x->rx), 0);
    x->store = wp_stats_new(1);
    assert_non_null(x->store);
    assert_int_equal(wp_rbac_register_all_stats(x->store, x->cfg), 0);
    x->sh = wp_stats_get_shard(x->store, 0);
}

static void unload(fixture *x)
{
    wp_regex_ctx_free(&x->rx);
    wp_stats_free(x->store);
    wp_config_unref(x->cfg);
}

static int64_t counter(fixture *x, const char *name)
{
    uint32_t slot = wp_stats_counter(x->store, name);
    assert_int_not_equal(slot, WP_STAT_INVALID);
    return wp_stats_value(x->store, slot);
}

/* A request: method, target (path with query), authority and up to 4 headers "name: value". */
typedef struct {
    h1_header h[4];
    wp_route_req rq;
    wp_stream_info si;
    wp_rbac_input in;
} req;

static void mkreq(req *r, fixture *x, const char *method, const char *target, const char *host,
                  const char *const *hdrs)
{
    memset(r, 0, sizeof(*r));
    size_t n = 0;
    for (; hdrs && hdrs[n]; n++) {
        const char *colon = strchr(hdrs[n], ':');
        r->h[n].name = (h1_str){hdrs[n], (size_t)(colon - hdrs[n])};
        r->h[n].value = (h1_str){colon + 2, strlen(colon + 2)};
    }
    r->rq = (wp_route_req){.method = method,
                           .method_len = strlen(method),
                           .path = target,
                           .path_len = strlen(target),
                           .authority = host,
                           .authority_len = host ? strlen(host) : 0,
                           .scheme = "http",
                           .headers = r->h,
                           .nheaders = n};
    r->in = (wp_rbac_input){.rx = &x->rx,
                            .req = &r->rq,
                            .local = "10.1.2.3:8080",
                            .direct_remote = "10.9.9.9:5555",
                            .remote = "10.9.9.9:5555",
                            .md = &r->si.dynamic_metadata};
}

/* The rules' verdict for one policy whose single permission or principal is json. */
static bool perm(fixture *x, const char *permission, req *r)
{
    (void)x;
    (void)permission;
    return wp_rbac_allowed(x->rc->rules, &r->in, NULL);
}

#define ALLOW_PERM(p)                                                                              \
    "\"rules\":{\"action\":\"ALLOW\",\"policies\":{\"p\":{\"permissions\":[" p                     \
    "],\"principals\":[{\"any\":true}]}}}"
#define ALLOW_PRIN(p)                                                                              \
    "\"rules\":{\"action\":\"ALLOW\",\"policies\":{\"p\":{\"permissions\":[{\"any\":true}],"       \
    "\"principals\":[" p "]}}}"

/* ---------- permissions ---------- */

static void test_header_pseudo_and_ignore_case(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PERM("{\"andRules\":{\"rules\":[{\"header\":{\"name\":\":authority\","
                        "\"stringMatch\":{\"suffix\":\".EXAMPLE.com\",\"ignoreCase\":true}}},"
                        "{\"header\":{\"name\":\":method\",\"stringMatch\":{\"exact\":\"GET\"}}},"
                        "{\"header\":{\"name\":\"x-env\",\"presentMatch\":true}}]}}"));
    req r;
    const char *h1[] = {"x-env: prod", NULL};
    mkreq(&r, &x, "GET", "/", "api.Example.COM", h1);
    assert_true(perm(&x, NULL, &r));
    mkreq(&r, &x, "POST", "/", "api.example.com", h1);
    assert_false(perm(&x, NULL, &r)); /* :method is case-sensitive */
    mkreq(&r, &x, "GET", "/", "api.example.com", NULL);
    assert_false(perm(&x, NULL, &r)); /* x-env absent */
    mkreq(&r, &x, "GET", "/", "example.org", h1);
    assert_false(perm(&x, NULL, &r));
    unload(&x);
    /* :path as a header matcher sees the query (url_path does not); invert_match holds for the
     * pseudo-headers read straight from the request too */
    load(&x, ALLOW_PERM(
                 "{\"andRules\":{\"rules\":[{\"header\":{\"name\":\":path\","
                 "\"stringMatch\":{\"suffix\":\"?debug=1\"}}},{\"header\":{\"name\":"
                 "\":method\",\"stringMatch\":{\"exact\":\"DELETE\"},\"invertMatch\":true}}]}}"));
    mkreq(&r, &x, "GET", "/a?debug=1", "h", NULL);
    assert_true(perm(&x, NULL, &r));
    mkreq(&r, &x, "DELETE", "/a?debug=1", "h", NULL);
    assert_false(perm(&x, NULL, &r));
    mkreq(&r, &x, "GET", "/a", "h", NULL);
    assert_false(perm(&x, NULL, &r));
    unload(&x);
}

static void test_url_path_kinds_without_query(void **state)
{
    (void)state;
    static const struct {
        const char *matcher, *path;
        bool want;
    } cases[] = {
        {"{\"exact\":\"/a/b\"}", "/a/b?x=1", true},
        {"{\"exact\":\"/a/b\"}", "/a/b/", false},
        {"{\"prefix\":\"/api/\"}", "/api/v1#frag", true},
        {"{\"prefix\":\"/API/\",\"ignoreCase\":true}", "/api/v1", true},
        {"{\"prefix\":\"/API/\"}", "/api/v1", false},
        {"{\"suffix\":\".png\"}", "/i/x.png?size=2", true},
        {"{\"suffix\":\".png\"}", "/i/x.png2", false},
        {"{\"contains\":\"/admin/\"}", "/x/admin/y", true},
        {"{\"safeRegex\":{\"regex\":\"/v[0-9]+/.*\"}}", "/v12/items?q=/v1/", true},
        {"{\"safeRegex\":{\"regex\":\"/v[0-9]+\"}}", "/v12/items", false}, /* full match */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tc[512];
        snprintf(tc, sizeof tc, ALLOW_PERM("{\"urlPath\":{\"path\":%s}}"), cases[i].matcher);
        fixture x;
        load(&x, tc);
        req r;
        mkreq(&r, &x, "GET", cases[i].path, "h", NULL);
        if (perm(&x, NULL, &r) != cases[i].want)
            fail_msg("case %zu: %s on %s", i, cases[i].matcher, cases[i].path);
        unload(&x);
    }
}

static void test_uri_template(void **state)
{
    (void)state;
    fixture x;
    load(&x,
         ALLOW_PERM("{\"orRules\":{\"rules\":[{\"uriTemplate\":{\"name\":\"uri-template\","
                    "\"typedConfig\":{\"@type\":\"type.googleapis.com/envoy.extensions.path.match."
                    "uri_template.v3.UriTemplateMatchConfig\",\"pathTemplate\":\"/foo/*\"}}},"
                    "{\"uriTemplate\":{\"name\":\"uri-template\",\"typedConfig\":{\"@type\":"
                    "\"type.googleapis.com/envoy.extensions.path.match.uri_template.v3."
                    "UriTemplateMatchConfig\",\"pathTemplate\":\"/**/bar.txt\"}}}]}}"));
    static const struct {
        const char *path;
        bool want;
    } cases[] = {{"/foo/a", true},    {"/foo/a?x=/y", true},  {"/foo/a/b", false},
                 {"/foo/", false},    {"/a/b/bar.txt", true}, {"/a/bar.txt", true},
                 {"/bar.txt", false}, {"/a/barXtxt", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        req r;
        mkreq(&r, &x, "GET", cases[i].path, "h", NULL);
        if (perm(&x, NULL, &r) != cases[i].want)
            fail_msg("%s", cases[i].path);
    }
    unload(&x);
    char re[256];
    const char *why = NULL;
    assert_int_equal(wp_rbac_uri_template_regex("/{name}/x/{rest=**}", re, sizeof re, &why), 0);
    assert_int_equal(wp_rbac_uri_template_regex("/**/a/*", re, sizeof re, &why), -1);
    assert_string_equal(why, "Implicit variable path glob after text glob.");
    assert_int_equal(wp_rbac_uri_template_regex("foo/*", re, sizeof re, &why), -1);
    assert_int_equal(wp_rbac_uri_template_regex("/a//b", re, sizeof re, &why), -1);
    assert_int_equal(wp_rbac_uri_template_regex("/a/b?c", re, sizeof re, &why), -1);
}

static void test_destination_ip_port_sni(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PERM("{\"andRules\":{\"rules\":[{\"destinationIp\":{\"addressPrefix\":"
                        "\"10.1.0.0\",\"prefixLen\":16}},{\"orRules\":{\"rules\":["
                        "{\"destinationPort\":8080},{\"destinationPortRange\":{\"start\":9000,"
                        "\"end\":9100}}]}},{\"notRule\":{\"requestedServerName\":{\"exact\":"
                        "\"evil.com\"}}}]}}"));
    req r;
    mkreq(&r, &x, "GET", "/", "h", NULL);
    assert_true(perm(&x, NULL, &r));
    mkreq(&r, &x, "GET", "/", "h", NULL);
    r.in.local = "10.1.2.3:9099";
    assert_true(perm(&x, NULL, &r));
    r.in = (wp_rbac_input){.rx = &x.rx, .req = &r.rq, .local = "10.1.2.3:9100"};
    assert_false(perm(&x, NULL, &r)); /* the range's end is exclusive */
    r.in = (wp_rbac_input){.rx = &x.rx, .req = &r.rq, .local = "10.2.2.3:8080"};
    assert_false(perm(&x, NULL, &r));
    r.in = (wp_rbac_input){.rx = &x.rx, .req = &r.rq, .local = "10.1.2.3:8080", .sni = "evil.com"};
    assert_false(perm(&x, NULL, &r));
    r.in = (wp_rbac_input){.rx = &x.rx, .req = &r.rq, .local = "10.1.2.3:8080", .sni = "ok.com"};
    assert_true(perm(&x, NULL, &r));
    unload(&x);
}

/* A connection (network RBAC) has no request: header and path permissions never match. */
static void test_no_request_matches_no_path(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PERM("{\"urlPath\":{\"path\":{\"prefix\":\"/\"}}},{\"header\":{\"name\":"
                        "\":method\",\"presentMatch\":true}}"));
    wp_rbac_input in = {.rx = &x.rx, .local = "1.2.3.4:80"};
    assert_false(wp_rbac_allowed(x.rc->rules, &in, NULL));
    unload(&x);
}

/* ---------- principals ---------- */

static void test_authenticated(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PRIN("{\"authenticated\":{\"principalName\":{\"safeRegex\":{\"regex\":"
                        "\".*/ns/foo/.*\"}}}}"));
    req r;
    mkreq(&r, &x, "GET", "/", "h", NULL);
    r.in.tls = true;
    r.in.peer_uri_sans = "spiffe://other/x,spiffe://cluster.local/ns/foo/sa/a";
    assert_true(perm(&x, NULL, &r)); /* any URI SAN */
    r.in.peer_uri_sans = "spiffe://cluster.local/ns/bar/sa/a";
    assert_false(perm(&x, NULL, &r));
    r.in.peer_uri_sans = NULL;
    r.in.peer_subject = "CN=x/ns/foo/y"; /* then the subject */
    assert_true(perm(&x, NULL, &r));
    r.in.tls = false; /* plaintext: never authenticated */
    r.in.peer_uri_sans = "spiffe://cluster.local/ns/foo/sa/a";
    assert_false(perm(&x, NULL, &r));
    unload(&x);
    load(&x, ALLOW_PRIN("{\"authenticated\":{}}"));
    mkreq(&r, &x, "GET", "/", "h", NULL);
    assert_false(perm(&x, NULL, &r));
    r.in.tls = true;
    assert_true(perm(&x, NULL, &r));
    unload(&x);
}

static void test_remote_vs_direct_remote(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PRIN("{\"remoteIp\":{\"addressPrefix\":\"203.0.113.0\",\"prefixLen\":24}},"
                        "{\"sourceIp\":{\"addressPrefix\":\"fd00::\",\"prefixLen\":8}}"));
    req r;
    mkreq(&r, &x, "GET", "/", "h", NULL);
    r.in.remote = "203.0.113.7"; /* from x-forwarded-for */
    assert_true(perm(&x, NULL, &r));
    mkreq(&r, &x, "GET", "/", "h", NULL);
    r.in.direct_remote = "203.0.113.7:1000"; /* the peer is not the remote */
    assert_false(perm(&x, NULL, &r));
    r.in.direct_remote = "[fd12::1]:1000";
    r.in.parsed = r.in.parsed_ok = 0; /* addresses are parsed once per input */
    assert_true(perm(&x, NULL, &r));  /* source_ip is the peer */
    unload(&x);
}

/* requestPrincipals as Istio writes them: metadata on the JWT filter's payload. */
static void test_metadata_payload(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PRIN(
                 "{\"andIds\":{\"ids\":[{\"metadata\":{\"filter\":\"envoy.filters.http.jwt_authn\","
                 "\"path\":[{\"key\":\"payload\"},{\"key\":\"iss\"}],\"value\":{\"stringMatch\":"
                 "{\"exact\":\"https://issuer\"}}}},{\"metadata\":{\"filter\":\"envoy.filters.http."
                 "jwt_authn\",\"path\":[{\"key\":\"payload\"},{\"key\":\"aud\"}],\"value\":{"
                 "\"orMatch\":{\"valueMatchers\":[{\"listMatch\":{\"oneOf\":{\"stringMatch\":{"
                 "\"prefix\":\"svc-\"}}}},{\"stringMatch\":{\"prefix\":\"svc-\"}}]}}}},"
                 "{\"metadata\":{\"filter\":\"envoy.filters.http.jwt_authn\",\"path\":[{\"key\":"
                 "\"payload\"},{\"key\":\"banned\"}],\"value\":{\"presentMatch\":true},"
                 "\"invert\":true}}]}}"));
    req r;
    mkreq(&r, &x, "GET", "/", "h", NULL);
    assert_false(perm(&x, NULL, &r)); /* no token: no payload */
    json_t *pl = json_pack("{s:s, s:[s,s]}", "iss", "https://issuer", "aud", "x", "svc-a");
    wp_si_set_metadata(&r.si, "envoy.filters.http.jwt_authn", "payload", NULL, pl);
    assert_true(perm(&x, NULL, &r)); /* a list audience */
    json_object_set_new(pl, "aud", json_string("svc-b"));
    assert_true(perm(&x, NULL, &r)); /* a string audience */
    json_object_set_new(pl, "banned", json_true());
    assert_false(perm(&x, NULL, &r)); /* invert */
    json_object_del(pl, "banned");
    json_object_set_new(pl, "iss", json_string("https://other"));
    assert_false(perm(&x, NULL, &r));
    json_decref(pl);
    unload(&x);
}

/* A string entry of the dynamic metadata (an authn filter's principal, the way Istio's
 * istio_authn published request.auth.principal) and a header principal. */
static void test_metadata_string_entry_and_header_principal(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PRIN("{\"metadata\":{\"filter\":\"istio_authn\",\"path\":[{\"key\":"
                        "\"request.auth.principal\"}],\"value\":{\"stringMatch\":{\"prefix\":"
                        "\"https://issuer/\"}}}},{\"header\":{\"name\":\"x-id\",\"stringMatch\":"
                        "{\"exact\":\"7\"}}}"));
    req r;
    const char *h[] = {"x-id: 7", NULL};
    mkreq(&r, &x, "GET", "/", "h", h);
    assert_true(perm(&x, NULL, &r)); /* the header principal */
    mkreq(&r, &x, "GET", "/", "h", NULL);
    assert_false(perm(&x, NULL, &r));
    wp_si_set_metadata(&r.si, "istio_authn", "request.auth.principal", "https://issuer/alice",
                       NULL);
    assert_true(perm(&x, NULL, &r));
    wp_si_set_metadata(&r.si, "istio_authn", "request.auth.principal", "https://other/alice", NULL);
    assert_false(perm(&x, NULL, &r)); /* replaced, not added */
    assert_int_equal(r.si.dynamic_metadata.n, 1);
    unload(&x);
}

/* ---------- engines ---------- */

static void test_actions_and_policy_order(void **state)
{
    (void)state;
    fixture x;
    /* two DENY policies matching the same request: the effective one is the first by name */
    load(&x, "\"rules\":{\"action\":\"DENY\",\"policies\":{"
             "\"z-last\":{\"permissions\":[{\"any\":true}],\"principals\":[{\"any\":true}]},"
             "\"a first\":{\"permissions\":[{\"urlPath\":{\"path\":{\"prefix\":\"/x\"}}}],"
             "\"principals\":[{\"any\":true}]}}}");
    req r;
    mkreq(&r, &x, "GET", "/x", "h", NULL);
    wp_rbac_verdict v = wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1);
    assert_false(v.allowed);
    assert_string_equal(v.details, "rbac_access_denied_matched_policy[a_first]");
    mkreq(&r, &x, "GET", "/y", "h", NULL);
    v = wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1);
    assert_string_equal(v.details, "rbac_access_denied_matched_policy[z-last]");
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.denied"), 2);
    unload(&x);
    /* an ALLOW engine with no policy denies everything, details [none] */
    load(&x, "\"rules\":{}");
    mkreq(&r, &x, "GET", "/", "h", NULL);
    v = wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1);
    assert_false(v.allowed);
    assert_string_equal(v.details, "rbac_access_denied_matched_policy[none]");
    unload(&x);
    /* LOG: always allowed (counted as allowed, as current Envoy); envoy.common access_log_hint
     * tells whether a policy matched */
    load(&x, "\"rules\":{\"action\":\"LOG\",\"policies\":{\"p\":{\"permissions\":[{\"urlPath\":"
             "{\"path\":{\"exact\":\"/audit\"}}}],\"principals\":[{\"any\":true}]}}}");
    mkreq(&r, &x, "GET", "/audit", "h", NULL);
    assert_true(wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1).allowed);
    assert_string_equal(wp_si_metadata(&r.si, "envoy.common", "access_log_hint")->str, "true");
    mkreq(&r, &x, "GET", "/other", "h", NULL);
    assert_true(wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1).allowed);
    assert_string_equal(wp_si_metadata(&r.si, "envoy.common", "access_log_hint")->str, "false");
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.allowed"), 2);
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.denied"), 0);
    unload(&x);
}

/* No rules at all: allowed, nothing counted (Envoy: "no engine, allowed by default"). */
static void test_no_rules(void **state)
{
    (void)state;
    fixture x;
    load(&x, "");
    req r;
    mkreq(&r, &x, "GET", "/", "h", NULL);
    assert_true(wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1).allowed);
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.allowed"), 0);
    unload(&x);
}

static void test_shadow_never_denies(void **state)
{
    (void)state;
    fixture x;
    load(&x,
         "\"shadowRules\":{\"action\":\"DENY\",\"policies\":{\"ns[foo]-policy[dry]-rule[0]\":"
         "{\"permissions\":[{\"urlPath\":{\"path\":{\"prefix\":\"/admin\"}}}],"
         "\"principals\":[{\"any\":true}]}}},\"shadowRulesStatPrefix\":\"istio_dry_run_deny_\"");
    req r;
    mkreq(&r, &x, "GET", "/admin/x", "h", NULL);
    assert_true(wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1).allowed);
    const wp_dyn_md_entry *e =
        wp_si_metadata(&r.si, "envoy.filters.http.rbac", "istio_dry_run_deny_shadow_engine_result");
    assert_non_null(e);
    assert_string_equal(e->str, "denied");
    e = wp_si_metadata(&r.si, "envoy.filters.http.rbac",
                       "istio_dry_run_deny_shadow_effective_policy_id");
    assert_non_null(e);
    assert_string_equal(e->str, "ns[foo]-policy[dry]-rule[0]");
    mkreq(&r, &x, "GET", "/ok", "h", NULL);
    assert_true(wp_rbac_check(x.rc, &r.in, x.sh, &r.si, 1, 1).allowed);
    assert_string_equal(
        wp_si_metadata(&r.si, "envoy.filters.http.rbac", "istio_dry_run_deny_shadow_engine_result")
            ->str,
        "allowed");
    assert_null(wp_si_metadata(&r.si, "envoy.filters.http.rbac",
                               "istio_dry_run_deny_shadow_effective_policy_id"));
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.istio_dry_run_deny_.shadow_denied"),
                     1);
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.istio_dry_run_deny_.shadow_allowed"),
                     1);
    unload(&x);
}

/* ---------- the HTTP filter ---------- */

struct wp_stream {
    wp_stream_info si;
    wp_route_req rq;
    wp_regex_ctx *rx;
    wp_stats_shard *sh;
    int replies, status;
    const char *body, *details;
    int flag;
};

static void local_reply(struct wp_stream *s, int status, const char *body, const char *details,
                        int flag)
{
    s->replies++;
    s->status = status;
    s->body = body;
    s->details = details;
    s->flag = flag;
}

static void request(struct wp_stream *s, wp_route_req *rq)
{
    *rq = s->rq;
}

static wp_stream_info *stream_info(struct wp_stream *s)
{
    return &s->si;
}

static wp_regex_ctx *regex(struct wp_stream *s)
{
    return s->rx;
}

static struct wp_stats_shard *stats(struct wp_stream *s)
{
    return s->sh;
}

static const wp_filter_callbacks cbs = {
    .send_local_reply = local_reply,
    .request = request,
    .stream_info = stream_info,
    .regex = regex,
    .stats = stats,
};

static void test_filter_denies_with_403(void **state)
{
    (void)state;
    fixture x;
    load(&x, ALLOW_PRIN("{\"directRemoteIp\":{\"addressPrefix\":\"10.0.0.0\",\"prefixLen\":8}}"));
    struct wp_stream s = {.rx = &x.rx, .sh = x.sh};
    s.rq = (wp_route_req){.method = "GET", .method_len = 3, .path = "/", .path_len = 1};
    s.si.downstream_local = "127.0.0.1:80";
    s.si.downstream_direct_remote = s.si.downstream_remote = "192.168.1.1:3000";
    wp_filter f = {.stream = &s, .cb = &cbs, .config = x.rc};
    wp_filter_headers h = {NULL, 0, 0};
    assert_int_equal(wp_http_filter_rbac.decode_headers(&f, &h, true),
                     WP_FILTER_HEADERS_STOP_ITERATION);
    assert_int_equal(s.replies, 1);
    assert_int_equal(s.status, 403);
    assert_string_equal(s.body, "RBAC: access denied");
    assert_string_equal(s.details, "rbac_access_denied_matched_policy[none]");
    assert_int_equal(s.flag, -1); /* no response flag */
    s.si.downstream_direct_remote = "10.3.3.3:3000";
    assert_int_equal(wp_http_filter_rbac.decode_headers(&f, &h, true), WP_FILTER_HEADERS_CONTINUE);
    assert_int_equal(s.replies, 1);
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.denied"), 1);
    assert_int_equal(counter(&x, "http.inbound_0.0.0.0_80.rbac.allowed"), 1);
    unload(&x);
}

/* ---------- loader errors ---------- */

static void expect_error(const char *tc, const char *net, const char *want)
{
    char *text = boot(tc, net);
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

#define HPFX "t.json: " LPFX ".http_filters[0].typed_config."

static void test_loader_errors(void **state)
{
    (void)state;
    expect_error("\"rules\":{\"policies\":{\"p\":{\"permissions\":[{\"any\":true}]}}}", "",
                 HPFX "rules.policies.p.principals: value must contain at least 1 item(s)");
    expect_error(ALLOW_PERM("{\"urlPath\":{\"path\":{\"exact\":\"/\"}},\"any\":true}"), "",
                 HPFX "rules.policies.p.permissions[0]: exactly one permission rule kind is "
                      "required");
    expect_error(ALLOW_PERM("{\"any\":false}"), "",
                 HPFX "rules.policies.p.permissions[0].any: value must equal true");
    expect_error(ALLOW_PERM("{\"andRules\":{\"rules\":[]}}"), "",
                 HPFX "rules.policies.p.permissions[0].and_rules.rules: value must contain at "
                      "least 1 item(s)");
    expect_error(ALLOW_PERM("{\"destinationPortRange\":{\"start\":90,\"end\":90}}"), "",
                 HPFX "rules.policies.p.permissions[0].destination_port_range: range start 90 "
                      "cannot be greater or equal than range end 90");
    expect_error(ALLOW_PERM("{\"destinationPort\":70000}"), "",
                 HPFX "rules.policies.p.permissions[0].destination_port: value must be less "
                      "than or equal to 65535");
    expect_error(ALLOW_PERM("{\"destinatonPort\":80}"), "",
                 HPFX "rules.policies.p.permissions[0].destinaton_port: unknown field");
    expect_error(ALLOW_PRIN("{\"filterState\":{\"key\":\"k\"}}"), "",
                 HPFX "rules.policies.p.principals[0].filter_state: not supported by weft-proxy "
                      "(Envoy's envoy.config.rbac.v3.Principal.filter_state)");
    expect_error("\"rules\":{\"policies\":{\"p\":{\"permissions\":[{\"any\":true}],"
                 "\"principals\":[{\"any\":true}],\"condition\":{}}}}",
                 "",
                 HPFX "rules.policies.p.condition: not supported by weft-proxy (Envoy's "
                      "envoy.config.rbac.v3.Policy.condition)");
    expect_error("\"rules\":{\"action\":\"MAYBE\"}", "",
                 HPFX "rules.action: unsupported value \"MAYBE\"");
    expect_error(
        ALLOW_PRIN("{\"directRemoteIp\":{\"addressPrefix\":\"10.0.0.x\",\"prefixLen\":8}}"), "",
        HPFX "rules.policies.p.principals[0].direct_remote_ip: malformed IP address: "
             "10.0.0.x");
    expect_error(ALLOW_PERM("{\"uriTemplate\":{\"name\":\"t\",\"typedConfig\":{\"@type\":"
                            "\"type.googleapis.com/envoy.extensions.path.match.uri_template.v3."
                            "UriTemplateMatchConfig\",\"pathTemplate\":\"/**/a/*\"}}}"),
                 "",
                 HPFX "rules.policies.p.permissions[0].uri_template.typed_config.path_template: "
                      "Implicit variable path glob after text glob.");
    /* network filters: stat_prefix required, the connection manager last */
    expect_error("",
                 "{\"name\":\"envoy.filters.network.rbac\",\"typed_config\":{\"@type\":"
                 "\"type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC\"}},",
                 "t.json: static_resources.listeners[0].filter_chains[0].filters[0]."
                 "typed_config.stat_prefix: missing required field");
}

static void test_network_filter_loaded_before_hcm(void **state)
{
    (void)state;
    char *text = boot("", "{\"name\":\"envoy.filters.network.rbac\",\"typed_config\":{\"@type\":"
                          "\"type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC\","
                          "\"statPrefix\":\"tcp.\",\"enforcementType\":\"CONTINUOUS\","
                          "\"rules\":{\"action\":\"DENY\",\"policies\":{}}}},");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    const wp_filter_chain *fc = &c->listeners[0].chains[0];
    assert_int_equal(fc->nfilters, 2);
    assert_int_equal(fc->filters[0].kind, WP_NF_RBAC);
    assert_int_equal(fc->filters[1].kind, WP_NF_HTTP_CONNECTION_MANAGER);
    const wp_rbac_config *rc = fc->filters[0].config;
    assert_true(rc->continuous);
    assert_string_equal(rc->stat_prefix, "tcp.");
    wp_stats *st = wp_stats_new(1);
    assert_int_equal(wp_rbac_register_all_stats(st, c), 0);
    assert_int_not_equal(wp_stats_counter(st, "tcp.rbac.denied"), WP_STAT_INVALID);
    assert_int_equal(wp_stats_counter(st, "tcp.rbac.denied"), rc->st[WP_RBAC_ST_DENIED]);
    wp_stats_free(st);
    wp_config_unref(c);
    char *bad = boot("", "");
    /* the HCM before an RBAC filter: the terminal filter must be last */
    char *p = strstr(bad, "{\"name\":\"envoy.filters.network.http_connection_manager\"");
    assert_non_null(p);
    wf_strbuf_free(&err);
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_pseudo_and_ignore_case),
        cmocka_unit_test(test_url_path_kinds_without_query),
        cmocka_unit_test(test_uri_template),
        cmocka_unit_test(test_destination_ip_port_sni),
        cmocka_unit_test(test_no_request_matches_no_path),
        cmocka_unit_test(test_authenticated),
        cmocka_unit_test(test_remote_vs_direct_remote),
        cmocka_unit_test(test_metadata_payload),
        cmocka_unit_test(test_metadata_string_entry_and_header_principal),
        cmocka_unit_test(test_actions_and_policy_order),
        cmocka_unit_test(test_no_rules),
        cmocka_unit_test(test_shadow_never_denies),
        cmocka_unit_test(test_filter_denies_with_403),
        cmocka_unit_test(test_loader_errors),
        cmocka_unit_test(test_network_filter_loaded_before_hcm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
