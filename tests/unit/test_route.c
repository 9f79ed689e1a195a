/*
 * test_route.c - route selection (src/proxy/config/route.c): virtual host precedence and port
 * handling (operator report B002), path/header/query matchers, regex limits, weighted picks,
 * rewrites and redirects, against Envoy's documented behaviour. The route structs are built
 * by hand here (the JSON loader is tested on its own).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/config/route.h"

/* ---------- test-only builders ---------- */

#define MAX_RE 32

typedef struct {
    wf_arena arena;
    wp_regex_ctx rx;
    pcre2_code *re[MAX_RE];
    size_t nre;
} tctx;

static int setup(void **state)
{
    tctx *t = calloc(1, sizeof(*t));
    if (!t)
        return -1;
    wf_arena_init(&t->arena);
    if (wp_regex_ctx_init(&t->rx) != 0) {
        free(t);
        return -1;
    }
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    tctx *t = *state;
    for (size_t i = 0; i < t->nre; i++)
        pcre2_code_free(t->re[i]);
    wp_regex_ctx_free(&t->rx);
    wf_arena_destroy(&t->arena);
    free(t);
    return 0;
}

/* Compiles pat (freed at teardown); full-match patterns may pass anchoring flags + jit. */
static pcre2_code *compile(tctx *t, const char *pat, uint32_t flags, bool jit)
{
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, flags, &err, &off, NULL);
    assert_non_null(c);
    assert_true(t->nre < MAX_RE);
    t->re[t->nre++] = c;
    if (jit)
        pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
    return c;
}

static wp_route prefix_route(const char *prefix)
{
    wp_route r = {0};
    r.name = "";
    r.path_kind = WP_PATH_PREFIX;
    r.path = prefix;
    r.path_len = strlen(prefix);
    r.case_sensitive = true;
    r.action = WP_ACT_ROUTE;
    r.cluster = 0;
    return r;
}

static wp_route kind_route(wp_path_kind kind, const char *path)
{
    wp_route r = prefix_route(path);
    r.path_kind = kind;
    return r;
}

static wp_vhost vhost(const char *name, const char **domains, size_t n)
{
    wp_vhost v = {0};
    v.name = name;
    v.domains = domains;
    v.ndomains = n;
    return v;
}

static wp_string_matcher sm(wp_sm_kind kind, const char *value, bool ic)
{
    wp_string_matcher m = {0};
    m.kind = kind;
    m.value = value ? value : "";
    m.value_len = value ? strlen(value) : 0;
    m.ignore_case = ic;
    return m;
}

static wp_kv_matcher kv(const char *name, wp_string_matcher m)
{
    wp_kv_matcher k = {0};
    k.name = name;
    k.name_len = strlen(name);
    k.m = m;
    return k;
}

static h1_header hdr(const char *name, const char *value)
{
    h1_header h = {{name, strlen(name)}, {value, strlen(value)}};
    return h;
}

static wp_route_req request(const char *method, const char *path, const char *authority,
                            const h1_header *headers, size_t n)
{
    wp_route_req q = {0};
    q.method = method;
    q.method_len = strlen(method);
    q.path = path;
    q.path_len = strlen(path);
    q.authority = authority;
    q.authority_len = authority ? strlen(authority) : 0;
    q.scheme = "http";
    q.headers = headers;
    q.nheaders = n;
    return q;
}

/* Does route r match a GET of path with these headers? */
static bool matches(tctx *t, wp_route *r, const char *path, const h1_header *h, size_t n)
{
    wp_vhost v = vhost("v", NULL, 0);
    v.routes = r;
    v.nroutes = 1;
    wp_route_req q = request("GET", path, "a.com", h, n);
    return wp_route_match(&t->rx, &v, &q) == r;
}

static const char *vh_name(const wp_route_config *rc, const char *host)
{
    const wp_vhost *v = wp_route_find_vhost(rc, host, host ? strlen(host) : 0);
    return v ? v->name : NULL;
}

/* ---------- virtual hosts ---------- */

static void test_domain_precedence(void **state)
{
    tctx *t = *state;
    static const char *da[] = {"api.x.com"}, *db[] = {"*.x.com"}, *dc[] = {"*.com"},
                      *dd[] = {"api.*"}, *de[] = {"*"}, *df[] = {"*-bar.x.com"},
                      *dg[] = {"api.v1.*"}, *dh[] = {"Shop.Example.COM"};
    wp_vhost vh[] = {vhost("A", da, 1), vhost("B", db, 1), vhost("C", dc, 1), vhost("D", dd, 1),
                     vhost("E", de, 1), vhost("F", df, 1), vhost("G", dg, 1), vhost("H", dh, 1)};
    wp_route_config rc = {.name = "80", .vhosts = vh, .nvhosts = 8};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wp_route_index_build(&t->arena, &rc, &err), 0);
    assert_non_null(rc.index);

    assert_string_equal(vh_name(&rc, "api.x.com"), "A"); /* exact beats *.x.com and api.* */
    assert_string_equal(vh_name(&rc, "API.X.Com"), "A"); /* case-insensitive */
    assert_string_equal(vh_name(&rc, "www.x.com"), "B");
    assert_string_equal(vh_name(&rc, "foo-bar.x.com"), "F"); /* longest suffix wins */
    assert_string_equal(vh_name(&rc, "www.y.com"), "C");
    assert_string_equal(vh_name(&rc, "api.z.com"), "C"); /* suffix before prefix */
    assert_string_equal(vh_name(&rc, ".x.com"), "C");    /* *.x.com needs a non-empty label */
    assert_string_equal(vh_name(&rc, "-bar.x.com"), "B");
    assert_string_equal(vh_name(&rc, "api.y.org"), "D");
    assert_string_equal(vh_name(&rc, "api.v1.org"), "G"); /* longest prefix wins */
    assert_string_equal(vh_name(&rc, "api."), "E");       /* api.* needs something after */
    assert_string_equal(vh_name(&rc, "other.org"), "E");
    assert_string_equal(vh_name(&rc, "shop.example.com"), "H"); /* domain lower-cased */
    assert_null(vh_name(&rc, NULL));                            /* no Host at all */
    wf_strbuf_free(&err);
}

static void test_no_default_vhost(void **state)
{
    tctx *t = *state;
    static const char *da[] = {"a.com", "b.com"}, *dd[] = {"*"};
    wp_vhost vh[] = {vhost("A", da, 2)};
    wp_route_config rc = {.name = "r", .vhosts = vh, .nvhosts = 1};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wp_route_index_build(&t->arena, &rc, &err), 0);
    assert_string_equal(vh_name(&rc, "b.com"), "A");
    assert_null(vh_name(&rc, "c.com"));
    assert_null(vh_name(&rc, "a.com:80")); /* port kept without ignore_port */

    /* Only "*": every request, even without a Host, goes to it (Envoy's fast path). */
    wp_vhost only[] = {vhost("D", dd, 1)};
    wp_route_config rd = {.name = "r", .vhosts = only, .nvhosts = 1};
    assert_int_equal(wp_route_index_build(&t->arena, &rd, &err), 0);
    assert_string_equal(vh_name(&rd, NULL), "D");
    assert_string_equal(vh_name(&rd, "x"), "D");

    wp_route_config unbuilt = {.name = "r", .vhosts = vh, .nvhosts = 1};
    assert_null(vh_name(&unbuilt, "a.com"));
    wf_strbuf_free(&err);
}

static void test_port_stripping_b002(void **state)
{
    tctx *t = *state;
    static const char *ds[] = {"shop.example.internal"}, *d6[] = {"[::1]"};
    wp_vhost vh[] = {vhost("shop", ds, 1), vhost("v6", d6, 1)};
    wp_route_config rc = {
        .name = "http.80", .vhosts = vh, .nvhosts = 2, .ignore_port_in_host_matching = true};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wp_route_index_build(&t->arena, &rc, &err), 0);
    assert_string_equal(vh_name(&rc, "shop.example.internal"), "shop");
    assert_string_equal(vh_name(&rc, "shop.example.internal:80"), "shop");
    assert_string_equal(vh_name(&rc, "shop.example.internal:31380"), "shop");
    assert_string_equal(vh_name(&rc, "SHOP.example.internal:31380"), "shop");
    assert_null(vh_name(&rc, "other.example.internal:80"));
    assert_string_equal(vh_name(&rc, "[::1]:8080"), "v6");
    assert_string_equal(vh_name(&rc, "[::1]"), "v6"); /* colons inside brackets stay */

    rc.ignore_port_in_host_matching = false;
    assert_string_equal(vh_name(&rc, "shop.example.internal"), "shop");
    assert_null(vh_name(&rc, "shop.example.internal:80"));
    assert_null(vh_name(&rc, "[::1]:8080"));
    wf_strbuf_free(&err);
}

static void test_duplicate_domains(void **state)
{
    tctx *t = *state;
    static const char *d1[] = {"a.com", "*.a.com"}, *d2[] = {"A.com"}, *d3[] = {"*"},
                      *d4[] = {"b.com", "*"}, *d5[] = {"*.A.com"}, *d6[] = {"a.*"};
    wf_strbuf err = WF_STRBUF_INIT;

    wp_vhost v1[] = {vhost("x", d1, 2), vhost("y", d2, 1)};
    wp_route_config r1 = {.name = "r1", .vhosts = v1, .nvhosts = 2};
    assert_int_equal(wp_route_index_build(&t->arena, &r1, &err), -1);
    assert_null(r1.index);
    assert_string_equal(wf_strbuf_cstr(&err), "Only unique values for domains are permitted. "
                                              "Duplicate entry of domain a.com in route r1");

    wf_strbuf_reset(&err);
    wp_vhost v2[] = {vhost("x", d3, 1), vhost("y", d4, 2)};
    wp_route_config r2 = {.name = "r2", .vhosts = v2, .nvhosts = 2};
    assert_int_equal(wp_route_index_build(&t->arena, &r2, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "Only a single wildcard domain is permitted in "
                                              "route r2");

    wf_strbuf_reset(&err);
    wp_vhost v3[] = {vhost("x", d1, 2), vhost("y", d5, 1)};
    wp_route_config r3 = {.name = "r3", .vhosts = v3, .nvhosts = 2};
    assert_int_equal(wp_route_index_build(&t->arena, &r3, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "Only unique values for domains are permitted. "
                                              "Duplicate entry of domain *.a.com in route r3");

    /* The same text in different categories is not a duplicate. */
    wf_strbuf_reset(&err);
    wp_vhost v4[] = {vhost("x", d1, 2), vhost("y", d6, 1)};
    wp_route_config r4 = {.name = "r4", .vhosts = v4, .nvhosts = 2};
    assert_int_equal(wp_route_index_build(&t->arena, &r4, &err), 0);
    assert_string_equal(wf_strbuf_cstr(&err), "");
    wf_strbuf_free(&err);
}

/* ---------- paths ---------- */

static void test_path_prefix(void **state)
{
    tctx *t = *state;
    wp_route r = prefix_route("/api");
    assert_true(matches(t, &r, "/api", NULL, 0));
    assert_true(matches(t, &r, "/api/v1", NULL, 0));
    assert_true(matches(t, &r, "/apix", NULL, 0));
    assert_true(matches(t, &r, "/api?x=1", NULL, 0));
    assert_false(matches(t, &r, "/API/v1", NULL, 0));
    assert_false(matches(t, &r, "/ap", NULL, 0));
    assert_false(matches(t, &r, "/a?api", NULL, 0)); /* the query is not part of the path */
    r.case_sensitive = false;
    assert_true(matches(t, &r, "/API/v1", NULL, 0));
    wp_route all = prefix_route("");
    assert_true(matches(t, &all, "/anything", NULL, 0));
}

static void test_path_exact(void **state)
{
    tctx *t = *state;
    wp_route r = kind_route(WP_PATH_EXACT, "/health");
    assert_true(matches(t, &r, "/health", NULL, 0));
    assert_true(matches(t, &r, "/health?verbose=1", NULL, 0));
    assert_true(matches(t, &r, "/health#top", NULL, 0));
    assert_false(matches(t, &r, "/health/", NULL, 0));
    assert_false(matches(t, &r, "/healthz", NULL, 0));
    assert_false(matches(t, &r, "/HEALTH", NULL, 0));
    r.case_sensitive = false;
    assert_true(matches(t, &r, "/HEALTH?x", NULL, 0));
}

static void test_path_regex(void **state)
{
    tctx *t = *state;
    wp_route r = kind_route(WP_PATH_REGEX, "");
    r.path_re = compile(t, "/v[0-9]+/items", 0, false);
    assert_true(matches(t, &r, "/v12/items", NULL, 0));
    assert_true(matches(t, &r, "/v12/items?q=/x", NULL, 0));
    assert_false(matches(t, &r, "/v12/items/x", NULL, 0)); /* full match */
    assert_false(matches(t, &r, "x/v1/items", NULL, 0));
    /* case_sensitive does not apply to safe_regex */
    r.case_sensitive = false;
    assert_false(matches(t, &r, "/V1/ITEMS", NULL, 0));
    /* full match even when leftmost-first alternation would stop early */
    wp_route alt = kind_route(WP_PATH_REGEX, "");
    alt.path_re = compile(t, "/a|/ab", 0, false);
    assert_true(matches(t, &alt, "/ab", NULL, 0));
    /* a pattern compiled with the anchors and JIT behaves the same */
    alt.path_re = compile(t, "/a|/ab", PCRE2_ANCHORED | PCRE2_ENDANCHORED, true);
    assert_true(matches(t, &alt, "/ab", NULL, 0));
    assert_false(matches(t, &alt, "/abc", NULL, 0));
}

static void test_path_separated_prefix(void **state)
{
    tctx *t = *state;
    wp_route r = kind_route(WP_PATH_SEPARATED_PREFIX, "/api");
    assert_true(matches(t, &r, "/api", NULL, 0));
    assert_true(matches(t, &r, "/api/", NULL, 0));
    assert_true(matches(t, &r, "/api/x", NULL, 0));
    assert_true(matches(t, &r, "/api?q=1", NULL, 0));
    assert_true(matches(t, &r, "/api#f", NULL, 0));
    assert_false(matches(t, &r, "/apix", NULL, 0));
    assert_false(matches(t, &r, "/Api/x", NULL, 0));
    r.case_sensitive = false;
    assert_true(matches(t, &r, "/Api/x", NULL, 0));
}

static void test_first_match_wins(void **state)
{
    tctx *t = *state;
    wp_route routes[] = {kind_route(WP_PATH_EXACT, "/a"), prefix_route("/a"), prefix_route("/")};
    wp_vhost v = vhost("v", NULL, 0);
    v.routes = routes;
    v.nroutes = 3;
    wp_route_req q1 = request("GET", "/a", "h", NULL, 0);
    wp_route_req q2 = request("GET", "/a/b", "h", NULL, 0);
    wp_route_req q3 = request("GET", "/b", "h", NULL, 0);
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q1), &routes[0]);
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q2), &routes[1]);
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q3), &routes[2]);
    v.nroutes = 1;
    assert_null(wp_route_match(&t->rx, &v, &q3));
    assert_null(wp_route_match(&t->rx, NULL, &q3));
}

/* ---------- headers ---------- */

/* Does a route with the single header matcher k match these headers? */
static bool hmatch(tctx *t, wp_kv_matcher k, const h1_header *h, size_t n)
{
    wp_route r = prefix_route("/");
    r.headers = &k;
    r.nheaders = 1;
    return matches(t, &r, "/p?q=1", h, n);
}

static void test_header_kinds(void **state)
{
    tctx *t = *state;
    h1_header h[] = {hdr("X-Env", "Canary-West"), hdr("user-agent", "curl/8.1")};
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_EXACT, "Canary-West", false)), h, 2));
    assert_false(hmatch(t, kv("x-env", sm(WP_SM_EXACT, "canary-west", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_EXACT, "canary-west", true)), h, 2));
    assert_false(hmatch(t, kv("x-env", sm(WP_SM_EXACT, "Canary", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_PREFIX, "Canary", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_PREFIX, "canary", true)), h, 2));
    assert_false(hmatch(t, kv("x-env", sm(WP_SM_PREFIX, "canary", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_SUFFIX, "-West", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_SUFFIX, "-west", true)), h, 2));
    assert_false(hmatch(t, kv("x-env", sm(WP_SM_SUFFIX, "-west", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_CONTAINS, "ry-W", false)), h, 2));
    assert_true(hmatch(t, kv("x-env", sm(WP_SM_CONTAINS, "ry-w", true)), h, 2));
    assert_false(hmatch(t, kv("x-env", sm(WP_SM_CONTAINS, "ry-w", false)), h, 2));
    assert_true(hmatch(t, kv("user-agent", sm(WP_SM_PRESENT, NULL, false)), h, 2));
    assert_false(hmatch(t, kv("x-missing", sm(WP_SM_PRESENT, NULL, false)), h, 2));

    wp_string_matcher re = sm(WP_SM_REGEX, NULL, false);
    re.re = compile(t, "curl/[0-9.]+", 0, false);
    assert_true(hmatch(t, kv("user-agent", re), h, 2));
    re.re = compile(t, "curl", 0, false); /* full match, not search */
    assert_false(hmatch(t, kv("user-agent", re), h, 2));
}

static void test_header_invert_missing(void **state)
{
    tctx *t = *state;
    h1_header h[] = {hdr("x-env", "prod")};
    wp_kv_matcher k = kv("x-env", sm(WP_SM_EXACT, "canary", false));
    k.invert = true;
    assert_true(hmatch(t, k, h, 1)); /* prod != canary */
    k.m = sm(WP_SM_EXACT, "prod", false);
    assert_false(hmatch(t, k, h, 1));

    /* A missing header does not match, inverted or not. */
    wp_kv_matcher miss = kv("x-missing", sm(WP_SM_EXACT, "canary", false));
    assert_false(hmatch(t, miss, h, 1));
    miss.invert = true;
    assert_false(hmatch(t, miss, h, 1));

    /* treat_missing_header_as_empty matches "" instead. */
    wp_kv_matcher empty = kv("x-missing", sm(WP_SM_EXACT, "", false));
    assert_false(hmatch(t, empty, h, 1));
    empty.treat_missing_as_empty = true;
    assert_true(hmatch(t, empty, h, 1));
    empty.m = sm(WP_SM_EXACT, "canary", false);
    empty.invert = true;
    assert_true(hmatch(t, empty, h, 1)); /* "" != canary, inverted */

    /* present_match with invert: matches when absent. */
    wp_kv_matcher absent = kv("x-missing", sm(WP_SM_PRESENT, NULL, false));
    absent.invert = true;
    assert_true(hmatch(t, absent, h, 1));
    absent.name = "x-env";
    absent.name_len = 5;
    assert_false(hmatch(t, absent, h, 1));
}

static void test_header_multiple_values(void **state)
{
    tctx *t = *state;
    h1_header h[] = {hdr("x-tag", "a"), hdr("other", "z"), hdr("X-Tag", "b"), hdr("x-tag", "")};
    assert_true(hmatch(t, kv("x-tag", sm(WP_SM_EXACT, "a,b,", false)), h, 4));
    assert_false(hmatch(t, kv("x-tag", sm(WP_SM_EXACT, "a", false)), h, 4));
    assert_true(hmatch(t, kv("x-tag", sm(WP_SM_CONTAINS, "a,b", false)), h, 4));
    wp_string_matcher re = sm(WP_SM_REGEX, NULL, false);
    re.re = compile(t, "a,b,", 0, false);
    assert_true(hmatch(t, kv("x-tag", re), h, 4));
    assert_int_equal(t->rx.join_overflows, 0);

    /* Too long to join: the matcher fails (and is counted), even inverted. */
    size_t n = WP_ROUTE_JOIN_MAX / 2 + 10;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'v', n);
    big[n] = '\0';
    h1_header hb[] = {hdr("x-big", big), hdr("x-big", big)};
    wp_kv_matcher k = kv("x-big", sm(WP_SM_PREFIX, "v", false));
    assert_false(hmatch(t, k, hb, 2));
    k.invert = true;
    assert_false(hmatch(t, k, hb, 2));
    assert_int_equal(t->rx.join_overflows, 2);
    free(big);
}

static void test_header_pseudo(void **state)
{
    tctx *t = *state;
    h1_header h[] = {hdr("host", "ignored.example")};
    wp_route r = prefix_route("/");
    wp_kv_matcher k = kv(":method", sm(WP_SM_EXACT, "POST", false));
    r.headers = &k;
    r.nheaders = 1;
    wp_vhost v = vhost("v", NULL, 0);
    v.routes = &r;
    v.nroutes = 1;
    wp_route_req q = request("POST", "/cart/items?id=7", "shop.example:8080", h, 1);
    q.scheme = "https";
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &r);
    q.method = "GET";
    q.method_len = 3;
    assert_null(wp_route_match(&t->rx, &v, &q));

    k = kv(":path", sm(WP_SM_EXACT, "/cart/items?id=7", false)); /* :path keeps the query */
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &r);
    k = kv(":authority", sm(WP_SM_SUFFIX, ":8080", false));
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &r);
    k = kv("host", sm(WP_SM_PREFIX, "shop.", false)); /* host is :authority */
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &r);
    k = kv(":scheme", sm(WP_SM_EXACT, "https", false));
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &r);
    k = kv(":scheme", sm(WP_SM_EXACT, "http", false));
    assert_null(wp_route_match(&t->rx, &v, &q));

    /* Without an authority, the Host header is used. */
    q.authority = NULL;
    k = kv(":authority", sm(WP_SM_EXACT, "ignored.example", false));
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &r);
}

/* ---------- query parameters ---------- */

static bool qmatch(tctx *t, wp_kv_matcher k, const char *path)
{
    wp_route r = prefix_route("/");
    r.query = &k;
    r.nquery = 1;
    return matches(t, &r, path, NULL, 0);
}

static void test_query_params(void **state)
{
    tctx *t = *state;
    wp_kv_matcher ex = kv("user", sm(WP_SM_EXACT, "alice", false));
    assert_true(qmatch(t, ex, "/p?user=alice"));
    assert_true(qmatch(t, ex, "/p?a=1&user=alice&b"));
    assert_false(qmatch(t, ex, "/p?user=bob&user=alice")); /* first value only */
    assert_false(qmatch(t, ex, "/p?User=alice"));          /* names are case-sensitive */
    assert_false(qmatch(t, ex, "/p"));
    assert_false(qmatch(t, ex, "/p?xuser=alice"));
    assert_false(qmatch(t, ex, "/user=alice"));
    assert_true(qmatch(t, ex, "/p?user=alice#frag"));

    /* Values are not percent-decoded. */
    wp_kv_matcher enc = kv("q", sm(WP_SM_EXACT, "a%20b", false));
    assert_true(qmatch(t, enc, "/s?q=a%20b"));
    enc.m = sm(WP_SM_EXACT, "a b", false);
    assert_false(qmatch(t, enc, "/s?q=a%20b"));

    wp_kv_matcher pres = kv("debug", sm(WP_SM_PRESENT, NULL, false));
    assert_true(qmatch(t, pres, "/p?debug"));
    assert_true(qmatch(t, pres, "/p?x=1&debug="));
    assert_false(qmatch(t, pres, "/p?x=debug"));

    wp_kv_matcher empty = kv("debug", sm(WP_SM_EXACT, "", false));
    assert_true(qmatch(t, empty, "/p?debug"));

    wp_string_matcher re = sm(WP_SM_REGEX, NULL, false);
    re.re = compile(t, "[0-9]+", 0, false);
    assert_true(qmatch(t, kv("id", re), "/p?id=42"));
    assert_false(qmatch(t, kv("id", re), "/p?id=42x"));
    wp_kv_matcher ic = kv("mode", sm(WP_SM_PREFIX, "fast", true));
    assert_true(qmatch(t, ic, "/p?mode=FASTER"));
}

/* ---------- regex limits ---------- */

static void test_regex_limit(void **state)
{
    tctx *t = *state;
    char subject[64];
    memset(subject, 'a', 40);
    memcpy(subject + 40, "bc", 3); /* "(a|a)*b" matches a prefix, never the whole */
    pcre2_code *plain = compile(t, "(a|a)*b", 0, false);
    assert_false(wp_regex_full_match(&t->rx, plain, subject, strlen(subject)));
    assert_int_equal(t->rx.limit_hits, 1);

    pcre2_code *jit = compile(t, "(a|a)*b", PCRE2_ANCHORED | PCRE2_ENDANCHORED, true);
    assert_false(wp_regex_full_match(&t->rx, jit, subject, strlen(subject)));
    assert_int_equal(t->rx.limit_hits, 2);

    /* A short input still matches and costs no limit hit. */
    assert_true(wp_regex_full_match(&t->rx, plain, "aab", 3));
    assert_false(wp_regex_full_match(&t->rx, plain, "aac", 3));
    assert_int_equal(t->rx.limit_hits, 2);

    /* Through a route: non-match, the next route is taken. */
    wp_route routes[] = {kind_route(WP_PATH_REGEX, ""), prefix_route("/")};
    routes[0].path_re = compile(t, "/(a|a)*b", 0, false);
    wp_vhost v = vhost("v", NULL, 0);
    v.routes = routes;
    v.nroutes = 2;
    char path[64] = "/";
    memcpy(path + 1, subject, strlen(subject) + 1);
    wp_route_req q = request("GET", path, "h", NULL, 0);
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &routes[1]);
    assert_int_equal(t->rx.limit_hits, 3);
    assert_false(wp_regex_full_match(&t->rx, NULL, "x", 1));
}

/* ---------- weighted clusters ---------- */

static void test_weighted_pick(void **state)
{
    (void)state;
    wp_weighted_cluster w[] = {{.name = "a", .weight = 10},
                               {.name = "zero", .weight = 0},
                               {.name = "b", .weight = 30},
                               {.name = "c", .weight = 60}};
    wp_route r = prefix_route("/");
    r.weighted = w;
    r.nweighted = 4;
    r.total_weight = 100;
    size_t counts[4] = {0};
    for (uint64_t rnd = 0; rnd < 1000; rnd++) {
        int i = wp_route_pick_weighted(&r, rnd);
        assert_true(i >= 0 && i < 4);
        counts[i]++;
    }
    assert_int_equal(counts[0], 100);
    assert_int_equal(counts[1], 0);
    assert_int_equal(counts[2], 300);
    assert_int_equal(counts[3], 600);
    assert_int_equal(wp_route_pick_weighted(&r, 9), 0);
    assert_int_equal(wp_route_pick_weighted(&r, 10), 2);
    assert_int_equal(wp_route_pick_weighted(&r, 39), 2);
    assert_int_equal(wp_route_pick_weighted(&r, 40), 3);
    assert_int_equal(wp_route_pick_weighted(&r, 99), 3);
    assert_int_equal(wp_route_pick_weighted(&r, 100), 0);
    assert_int_equal(wp_route_pick_weighted(&r, UINT64_MAX), 2); /* (2^64-1) % 100 = 15 */
    w[0].weight = w[2].weight = w[3].weight = 0;
    assert_int_equal(wp_route_pick_weighted(&r, 5), -1);
    r.nweighted = 0;
    assert_int_equal(wp_route_pick_weighted(&r, 5), -1);
}

/* ---------- rewrites ---------- */

static void test_rewrite_prefix(void **state)
{
    tctx *t = *state;
    char out[64];
    wp_route r = prefix_route("/api/");
    const char *tg = "/api/users?x=1";
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, sizeof(out)), 0);
    r.prefix_rewrite = "/v2/";
    size_t n = wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, sizeof(out));
    assert_int_equal(n, strlen("/v2/users?x=1"));
    assert_string_equal(out, "/v2/users?x=1");

    /* Exactly room for the result and its NUL, then one byte less. */
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, n + 1), n);
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, n), SIZE_MAX);
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, "/other", 6, out, sizeof(out)), 0);

    wp_route ci = prefix_route("/API");
    ci.case_sensitive = false;
    ci.prefix_rewrite = "/x";
    n = wp_route_rewrite_path(&t->rx, &ci, "/api/y", 6, out, sizeof(out));
    assert_string_equal(out, "/x/y");

    wp_route sep = kind_route(WP_PATH_SEPARATED_PREFIX, "/old");
    sep.prefix_rewrite = "/new";
    wp_route_rewrite_path(&t->rx, &sep, "/old/a", 6, out, sizeof(out));
    assert_string_equal(out, "/new/a");
    wp_route_rewrite_path(&t->rx, &sep, "/old?x=1", 8, out, sizeof(out));
    assert_string_equal(out, "/new?x=1");

    wp_route ex = kind_route(WP_PATH_EXACT, "/health");
    ex.prefix_rewrite = "/status";
    wp_route_rewrite_path(&t->rx, &ex, "/health?v=1", 11, out, sizeof(out));
    assert_string_equal(out, "/status?v=1");

    /* A safe_regex route's prefix_rewrite replaces the whole path, keeping the query. */
    wp_route rx = kind_route(WP_PATH_REGEX, "");
    rx.path_re = compile(t, "/v[0-9]/.*", 0, false);
    rx.prefix_rewrite = "/r";
    wp_route_rewrite_path(&t->rx, &rx, "/v1/a/b?q=2", 11, out, sizeof(out));
    assert_string_equal(out, "/r?q=2");

    wp_route empty = prefix_route("/a");
    empty.prefix_rewrite = ""; /* Envoy: an empty prefix_rewrite is no rewrite */
    assert_int_equal(wp_route_rewrite_path(&t->rx, &empty, "/a/b", 4, out, sizeof(out)), 0);
}

static void test_rewrite_regex(void **state)
{
    tctx *t = *state;
    char out[128];
    wp_route r = prefix_route("/");
    /* The two examples of Envoy's RouteAction.regex_rewrite documentation. */
    r.regex_rewrite = compile(t, "^/service/([^/]+)(/.*)$", 0, false);
    r.regex_rewrite_subst = "\\2/instance/\\1";
    const char *tg = "/service/foo/v1/api?x=1";
    size_t n = wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, sizeof(out));
    assert_int_equal(n, strlen("/v1/api/instance/foo?x=1"));
    assert_string_equal(out, "/v1/api/instance/foo?x=1");

    r.regex_rewrite = compile(t, "one", 0, false);
    r.regex_rewrite_subst = "two";
    tg = "/xxx/one/yyy/one/zzz";
    wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, sizeof(out));
    assert_string_equal(out, "/xxx/two/yyy/two/zzz");
    tg = "/one?one=1"; /* the query is not rewritten */
    wp_route_rewrite_path(&t->rx, &r, tg, strlen(tg), out, sizeof(out));
    assert_string_equal(out, "/two?one=1");
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, "/zzz", 4, out, sizeof(out)), 0);
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, "/one", 4, out, 4), SIZE_MAX);

    /* \0 is the whole match, \\ a backslash, $ is literal, an unset group is empty. */
    r.regex_rewrite = compile(t, "/(x)?(b)", 0, false);
    r.regex_rewrite_subst = "[\\0|\\1|\\2|\\\\|$1]";
    wp_route_rewrite_path(&t->rx, &r, "/a/b", 4, out, sizeof(out));
    assert_string_equal(out, "/a[/b||b|\\|$1]");

    /* Empty matches: RE2::GlobalReplace inserts at every position once. */
    r.regex_rewrite = compile(t, "x*", 0, false);
    r.regex_rewrite_subst = "-";
    wp_route_rewrite_path(&t->rx, &r, "/ab", 3, out, sizeof(out));
    assert_string_equal(out, "-/-a-b-");

    /* A limit hit leaves the path alone: "(a|a)*bc" backtracks over the a's before "bd". */
    char path[64] = "/";
    memset(path + 1, 'a', 40);
    memcpy(path + 41, "bdc", 4);
    r.regex_rewrite = compile(t, "(a|a)*bc", 0, false);
    r.regex_rewrite_subst = "z";
    uint64_t before = t->rx.limit_hits;
    assert_int_equal(wp_route_rewrite_path(&t->rx, &r, path, strlen(path), out, sizeof(out)), 0);
    assert_int_equal(t->rx.limit_hits, before + 1);
}

/* ---------- redirects ---------- */

static const char *redirect(tctx *t, wp_route *r, const char *path, const char *host,
                            const char *scheme, bool secure, int *code, wf_strbuf *loc)
{
    wp_route_req q = request("GET", path, host, NULL, 0);
    q.scheme = scheme;
    *code = wp_route_redirect(&t->rx, r, &q, secure, loc);
    return wf_strbuf_cstr(loc);
}

static wp_route redirect_route(const char *prefix)
{
    wp_route r = prefix_route(prefix);
    r.action = WP_ACT_REDIRECT;
    return r;
}

static void test_redirect_scheme_host_port(void **state)
{
    tctx *t = *state;
    wf_strbuf loc = WF_STRBUF_INIT;
    int code = 0;
    wp_route r = redirect_route("/");
    r.redirect.scheme = "https"; /* https_redirect */
    assert_string_equal(redirect(t, &r, "/p?x=1", "shop.com:80", "http", false, &code, &loc),
                        "https://shop.com/p?x=1");
    assert_int_equal(code, 301);
    assert_string_equal(redirect(t, &r, "/p", "shop.com:8080", "http", false, &code, &loc),
                        "https://shop.com:8080/p");
    assert_string_equal(redirect(t, &r, "/p", "[::1]:80", "http", false, &code, &loc),
                        "https://[::1]/p");
    assert_string_equal(redirect(t, &r, "/p", "[::1]", "http", false, &code, &loc),
                        "https://[::1]/p");
    /* same scheme: the port stays */
    assert_string_equal(redirect(t, &r, "/", "a.com:443", NULL, true, &code, &loc),
                        "https://a.com:443/");

    wp_route h = redirect_route("/");
    h.redirect.host = "new.example";
    h.redirect.code = 302;
    assert_string_equal(redirect(t, &h, "/p?q", "old.example:8080", "http", false, &code, &loc),
                        "http://new.example/p?q");
    assert_int_equal(code, 302);

    wp_route p = redirect_route("/");
    p.redirect.port = 8443;
    assert_string_equal(redirect(t, &p, "/p", "a.com:80", "http", false, &code, &loc),
                        "http://a.com:8443/p");
    assert_string_equal(redirect(t, &p, "/p", "a.com", NULL, true, &code, &loc),
                        "https://a.com:8443/p");
    /* a port_redirect that is the scheme's default is left out (Envoy's newUri) */
    p.redirect.port = 80;
    assert_string_equal(redirect(t, &p, "/p", "a.com:8080", "http", false, &code, &loc),
                        "http://a.com/p");
    p.redirect.port = 443;
    p.redirect.scheme = "https";
    assert_string_equal(redirect(t, &p, "/p", "a.com:8080", "http", false, &code, &loc),
                        "https://a.com/p");
    p.redirect.scheme = "http";
    assert_string_equal(redirect(t, &p, "/p", "a.com", "http", false, &code, &loc),
                        "http://a.com:443/p");

    /* X-Forwarded-Proto decides which default port is dropped. */
    h1_header xfp[] = {hdr("x-forwarded-proto", "https")};
    wp_route_req q = request("GET", "/p", "a.com:443", xfp, 1);
    r.redirect.scheme = "http";
    assert_int_equal(wp_route_redirect(&t->rx, &r, &q, false, &loc), 301);
    assert_string_equal(wf_strbuf_cstr(&loc), "http://a.com/p");

    wp_route not_redirect = prefix_route("/");
    assert_int_equal(wp_route_redirect(&t->rx, &not_redirect, &q, false, &loc), -1);
    wf_strbuf_free(&loc);
}

static void test_redirect_paths(void **state)
{
    tctx *t = *state;
    wf_strbuf loc = WF_STRBUF_INIT;
    int code = 0;
    wp_route r = redirect_route("/old");
    r.redirect.path = "/new";
    assert_string_equal(redirect(t, &r, "/old?x=1", "a.com", "http", false, &code, &loc),
                        "http://a.com/new?x=1");
    r.redirect.strip_query = true;
    assert_string_equal(redirect(t, &r, "/old?x=1", "a.com", "http", false, &code, &loc),
                        "http://a.com/new");
    r.redirect.path = "/new?y=2"; /* its own query wins and is never stripped */
    assert_string_equal(redirect(t, &r, "/old?x=1", "a.com", "http", false, &code, &loc),
                        "http://a.com/new?y=2");
    r.redirect.path = "new";
    r.redirect.strip_query = false;
    assert_string_equal(redirect(t, &r, "/old", "a.com", "http", false, &code, &loc),
                        "http://a.com/new");

    wp_route pr = redirect_route("/v1");
    pr.redirect.prefix = "/v2";
    assert_string_equal(redirect(t, &pr, "/v1/a?b=c", "a.com", "http", false, &code, &loc),
                        "http://a.com/v2/a?b=c");
    pr.redirect.strip_query = true;
    assert_string_equal(redirect(t, &pr, "/v1/a?b=c", "a.com", "http", false, &code, &loc),
                        "http://a.com/v2/a");

    wp_route rr = redirect_route("/");
    rr.redirect.regex = compile(t, "^/service/([^/]+)(/.*)$", 0, false);
    rr.redirect.regex_subst = "\\2/instance/\\1";
    assert_string_equal(
        redirect(t, &rr, "/service/foo/v1/api?k=v", "a.com", "http", false, &code, &loc),
        "http://a.com/v1/api/instance/foo?k=v");

    wp_route plain = redirect_route("/");
    plain.redirect.code = 308;
    assert_string_equal(redirect(t, &plain, "/keep?me", "a.com:9000", "http", false, &code, &loc),
                        "http://a.com:9000/keep?me");
    assert_int_equal(code, 308);
    wf_strbuf_free(&loc);
}

/* require_tls ALL (Envoy's SslRedirectRoute): a request not forwarded as https gets a 301 to
 * https://<Host><path> with the Host and path as they came; an https one takes the routes. */
static void test_require_tls_all(void **state)
{
    tctx *t = *state;
    static const char *doms[] = {"a.com"};
    wp_vhost v = vhost("a", doms, 1);
    wp_route routes[] = {prefix_route("/")};
    v.routes = routes;
    v.nroutes = 1;
    v.require_tls_all = true;
    v.tls_redirect = (wp_route){.name = "", .action = WP_ACT_REDIRECT, .cluster = -1};
    v.tls_redirect.redirect = (wp_redirect){.scheme = "https", .code = 301, .ssl_redirect = true};
    wp_route_req q = request("GET", "/p?x=1", "a.com:8080", NULL, 0);
    const wp_route *r = wp_route_match(&t->rx, &v, &q);
    assert_ptr_equal(r, &v.tls_redirect);
    wf_strbuf loc = WF_STRBUF_INIT;
    assert_int_equal(wp_route_redirect(&t->rx, r, &q, false, &loc), 301);
    assert_string_equal(wf_strbuf_cstr(&loc), "https://a.com:8080/p?x=1");
    q.https = true;
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &routes[0]);
    v.require_tls_all = false;
    q.https = false;
    assert_ptr_equal(wp_route_match(&t->rx, &v, &q), &routes[0]);
    wf_strbuf_free(&loc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_domain_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_default_vhost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port_stripping_b002, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_domains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_regex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_separated_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_match_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_invert_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_multiple_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_pseudo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_query_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regex_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weighted_pick, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_regex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirect_scheme_host_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirect_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_require_tls_all, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
