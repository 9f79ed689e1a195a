/*
 * test_authz_check.c - `weftctl x authz check` rows (authz_check.h, istioctl
 * istioctl/pkg/authz/listener.go): policy-id parsing as Go's greedy unanchored regexp, HTTP and
 * network RBAC filters, DENY/ALLOW/LOG actions (names and enum numbers), CUSTOM from
 * istio-ext-authz- shadow rules, _anonymous_match_nothing_ for filters without policies,
 * distinct rule counting, ordering, and the tabwriter table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/authz_check.h"

/* ---- policy ids ---- */

static void expect_id(const char *id, const char *name, const char *rule)
{
    wf_strbuf n = WF_STRBUF_INIT, r = WF_STRBUF_INIT;
    assert_int_equal(wf_authz_parse_policy_id(id, &n, &r), 0);
    assert_string_equal(wf_strbuf_cstr(&n), name);
    assert_string_equal(wf_strbuf_cstr(&r), rule);
    wf_strbuf_free(&n);
    wf_strbuf_free(&r);
}

static void expect_no_id(const char *id)
{
    wf_strbuf n = WF_STRBUF_INIT, r = WF_STRBUF_INIT;
    assert_int_equal(wf_authz_parse_policy_id(id, &n, &r), -1);
    assert_int_equal(n.len, 0);
    assert_int_equal(r.len, 0);
    wf_strbuf_free(&n);
    wf_strbuf_free(&r);
}

static void test_parse_plain(void **state)
{
    (void)state;
    expect_id("ns[default]-policy[httpbin]-rule[0]", "httpbin.default", "0");
    expect_id("ns[foo]-policy[deny-all]-rule[12]", "deny-all.foo", "12");
}

static void test_parse_ext_authz_and_unanchored(void **state)
{
    (void)state;
    expect_id("istio-ext-authz-ns[default]-policy[ext-authz]-rule[0]", "ext-authz.default", "0");
    /* unanchored: text around the match is ignored (bad-CUSTOM keys end with a suffix) */
    expect_id("ns[foo]-policy[p]-rule[0]-deny-due-to-bad-CUSTOM-action", "p.foo", "0");
    expect_id("xx-ns[a]-policy[b]-rule[3]", "b.a", "3");
}

static void test_parse_greedy(void **state)
{
    (void)state;
    /* Go's leftmost-first backtracking: group 1 takes as much as it can, then group 2, 3 */
    expect_id("ns[a]b]-policy[p]-rule[1]", "p.a]b", "1");
    expect_id("ns[x]-policy[a]-rule[0]-policy[b]-rule[1]", "b.x]-policy[a]-rule[0", "1");
    expect_id("ns[x]-policy[a]-rule[0]-rule[9]", "a]-rule[0.x", "9");
    expect_id("ns[x]-policy[a]-rule[0]]", "a.x", "0]");
    /* "ns[" inside group 1 belongs to the first match ... */
    expect_id("ns[only]ns[n]-policy[p]-rule[2]", "p.only]ns[n", "2");
    /* ... and an earlier "ns[" that cannot match gives way to a later one */
    expect_id("ns[a]\nns[n]-policy[p]-rule[2]", "p.n", "2");
}

static void test_parse_no_match(void **state)
{
    (void)state;
    expect_no_id("");
    expect_no_id("httpbin");
    expect_no_id("ns[]-policy[p]-rule[0]");              /* (.+) needs a character */
    expect_no_id("ns[a]-policy[p]-rule[]");              /* likewise */
    expect_no_id("ns[a\n]-policy[p]-rule[0]");           /* '.' does not match a newline */
    expect_no_id("NS[a]-policy[p]-rule[0]");             /* case matters */
    expect_id("x\nns[a]-policy[p]-rule[0]", "p.a", "0"); /* within a later line */
}

/* ---- rows ---- */

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: line %d: %s", je.line, je.text);
    return j;
}

typedef struct built {
    wf_authz_table t;
    wf_strbuf warn;
} built;

static built build(const char *listeners_json)
{
    json_t *ls = load(listeners_json);
    built b = {.warn = WF_STRBUF_INIT};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_authz_build(ls, &b.t, &b.warn, &err), 0);
    assert_int_equal(err.len, 0);
    json_decref(ls);
    wf_strbuf_free(&err);
    return b;
}

static void done(built *b)
{
    wf_authz_table_free(&b->t);
    wf_strbuf_free(&b->warn);
}

static void expect_row(const built *b, size_t i, wf_authz_action a, const char *name, size_t rules)
{
    assert_true(i < b->t.n);
    assert_string_equal(wf_authz_action_name(b->t.rows[i].action), wf_authz_action_name(a));
    assert_string_equal(b->t.rows[i].name, name);
    assert_int_equal(b->t.rows[i].rules, rules);
}

#define HCM(filters)                                                                               \
    "{\"name\":\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":"     \
    "\"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."           \
    "HttpConnectionManager\",\"http_filters\":[" filters                                           \
    ",{\"name\":\"envoy.filters.http.router\"}]}}"
#define HTTP_RBAC(cfg)                                                                             \
    "{\"name\":\"envoy.filters.http.rbac\",\"typed_config\":{\"@type\":\"type.googleapis.com/"     \
    "envoy.extensions.filters.http.rbac.v3.RBAC\"," cfg "}}"
#define TCP_RBAC(cfg)                                                                              \
    "{\"name\":\"envoy.filters.network.rbac\",\"typed_config\":{\"@type\":\"type.googleapis.com/"  \
    "envoy.extensions.filters.network.rbac.v3.RBAC\",\"stat_prefix\":\"tcp.\"," cfg "}}"
#define POL(id)                "\"" id "\":{\"permissions\":[{\"any\":true}],\"principals\":[{\"any\":true}]}"
#define LISTENER(name, chains) "{\"name\":\"" name "\",\"filter_chains\":[" chains "]}"
#define CHAIN(filters)         "{\"filters\":[" filters "]}"

static void test_http_and_network_actions(void **state)
{
    (void)state;
    built b =
        build("[" LISTENER(
            "virtualInbound", CHAIN(HCM(HTTP_RBAC("\"rules\":{\"action\":\"DENY\",\"policies\":"
                                                  "{" POL("ns[foo]-policy[deny-b]-"
                                                          "rule[0]") "," POL("ns["
                                                                             "foo]-"
                                                                             "polic"
                                                                             "y["
                                                                             "deny-"
                                                                             "a]-"
                                                                             "rule["
                                                                             "0]") "}}") "," HTTP_RBAC("\"rules\":{\"policies\":{" POL("ns[foo]-policy[allow]-rule[0]") "}}") "," HTTP_RBAC("\"rules\":{\"action\":\"LOG\",\"policies\":{" POL("ns[foo]-policy[audit]-rule[0]") "}}"))) "," CHAIN(TCP_RBAC("\"rules\":{"
                                                                                                                                                                                                                                                                                                           "\"action\":1,"
                                                                                                                                                                                                                                                                                                           "\"policies\":"
                                                                                                                                                                                                                                                                                                           "{" POL(
                                                                                                                                                                                                                                                                                                               "ns[bar]-"
                                                                                                                                                                                                                                                                                                               "policy["
                                                                                                                                                                                                                                                                                                               "tcp-deny]-"
                                                                                                                                                                                                                                                                                                               "rule[0]") "}}")) "," CHAIN(TCP_RBAC("\"rules\":{\"action\":\"ALLOW\",\"policies\":{" POL("ns[bar]-policy[tcp-allow]-rule[0]") "}}"))) "]");
    assert_int_equal(b.t.listeners, 1);
    assert_int_equal(b.t.n, 6);
    expect_row(&b, 0, WF_AUTHZ_DENY, "deny-a.foo", 1);
    expect_row(&b, 1, WF_AUTHZ_DENY, "deny-b.foo", 1);
    expect_row(&b, 2, WF_AUTHZ_DENY, "tcp-deny.bar", 1);
    expect_row(&b, 3, WF_AUTHZ_ALLOW, "allow.foo", 1);
    expect_row(&b, 4, WF_AUTHZ_ALLOW, "tcp-allow.bar", 1);
    expect_row(&b, 5, WF_AUTHZ_LOG, "audit.foo", 1);
    assert_int_equal(b.warn.len, 0);
    done(&b);
}

static void test_custom_from_shadow_rules(void **state)
{
    (void)state;
    /* CUSTOM: shadow rules with istio-ext-authz- ids; dry-run shadow ids are not shown; a
     * filter with shadow rules only still has no `rules` policy: anonymous ALLOW */
    built b = build("[" LISTENER(
        "l1", CHAIN(HCM(HTTP_RBAC(
                  "\"shadow_rules\":{\"action\":\"DENY\",\"policies\":"
                  "{" POL(
                      "istio-ext-authz-ns[default]-policy[ext-authz]"
                      "-rule[0]") "," POL("istio-ext-authz-ns["
                                          "default]-policy[ext-"
                                          "authz]-rule[1]") "}},"
                                                            "\"shado"
                                                            "w_"
                                                            "rules_"
                                                            "stat_"
                                                            "prefix"
                                                            "\":"
                                                            "\"istio"
                                                            "_ext_"
                                                            "authz_"
                                                            "\"") "," HTTP_RBAC("\"shadow_rules\":{"
                                                                                "\"policies\":"
                                                                                "{" POL("ns["
                                                                                        "default]-"
                                                                                        "policy["
                                                                                        "dry]-rule["
                                                                                        "0]") "}},"
                                                                                              "\"sh"
                                                                                              "adow"
                                                                                              "_rul"
                                                                                              "es_"
                                                                                              "stat"
                                                                                              "_"
                                                                                              "pref"
                                                                                              "ix\""
                                                                                              ":\"i"
                                                                                              "stio"
                                                                                              "_dry"
                                                                                              "_run"
                                                                                              "_"
                                                                                              "allo"
                                                                                              "w_"
                                                                                              "\"")))) "]");
    assert_int_equal(b.t.n, 2);
    expect_row(&b, 0, WF_AUTHZ_ALLOW, WF_AUTHZ_ANONYMOUS, 1);
    expect_row(&b, 1, WF_AUTHZ_CUSTOM, "ext-authz.default", 2);
    done(&b);
}

static void test_anonymous_match_nothing(void **state)
{
    (void)state;
    /* rules {} (Istio's "allow nothing"), rules absent, typed_config absent, DENY without
     * policies: each counts the anonymous name under its action, one rule ("0") */
    built b =
        build(
            "[" LISTENER("l1",
                         CHAIN(TCP_RBAC("\"rules\":{}")) "," CHAIN(
                             "{\"name\":\"envoy.filters.network."
                             "rbac\"}") "," CHAIN(HCM(HTTP_RBAC("\"shadow_rules_stat_prefix\":"
                                                                "\"x\""))) "," CHAIN(TCP_RBAC("\"ru"
                                                                                              "les"
                                                                                              "\":{"
                                                                                              "\"ac"
                                                                                              "tion"
                                                                                              "\":"
                                                                                              "\"DE"
                                                                                              "NY\""
                                                                                              ","
                                                                                              "\"po"
                                                                                              "lici"
                                                                                              "es\""
                                                                                              ":{}"
                                                                                              "}"))) "]");
    assert_int_equal(b.t.n, 2);
    expect_row(&b, 0, WF_AUTHZ_DENY, WF_AUTHZ_ANONYMOUS, 1);
    expect_row(&b, 1, WF_AUTHZ_ALLOW, WF_AUTHZ_ANONYMOUS, 1);
    done(&b);
}

static void test_distinct_rules(void **state)
{
    (void)state;
    /* the same rule in several filter chains and listeners counts once; rules 0..2 count 3;
     * the count is per name over all actions (istioctl's one name -> rules map) */
    built b =
        build(
            "[" LISTENER(
                "a",
                CHAIN(
                    HCM(
                        HTTP_RBAC(
                            "\"rules\":{\"policies\":{" POL("ns[ns1]-policy[p]-rule[0]") "," POL(
                                "n"
                                "s"
                                "["
                                "n"
                                "s"
                                "1"
                                "]"
                                "-"
                                "p"
                                "o"
                                "l"
                                "i"
                                "c"
                                "y"
                                "["
                                "p"
                                "]"
                                "-"
                                "r"
                                "u"
                                "l"
                                "e"
                                "["
                                "1"
                                "]") "}}"))) "," CHAIN(HCM(HTTP_RBAC("\"rules\":{\"policies\":"
                                                                     "{" POL("ns[ns1]-policy[p]-"
                                                                             "rule[0]") "}}")))) "," LISTENER("b",
                                                                                                              CHAIN(TCP_RBAC(
                                                                                                                  "\"rules\":{"
                                                                                                                  "\"policies\":"
                                                                                                                  "{" POL(
                                                                                                                      "ns[ns1]-"
                                                                                                                      "policy["
                                                                                                                      "p]-rule["
                                                                                                                      "2]") "," POL("ns[ns1]-policy[q]-rule[0]") "}}")) "," CHAIN(TCP_RBAC("\"rules\":{\"action\":"
                                                                                                                                                                                           "\"DENY\",\"policies\":"
                                                                                                                                                                                           "{" POL(
                                                                                                                                                                                               "ns[ns1]-policy[q]-"
                                                                                                                                                                                               "rule[7]") "}}"))) "]");
    assert_int_equal(b.t.n, 3);
    expect_row(&b, 0, WF_AUTHZ_DENY, "q.ns1", 2);
    expect_row(&b, 1, WF_AUTHZ_ALLOW, "p.ns1", 3);
    expect_row(&b, 2, WF_AUTHZ_ALLOW, "q.ns1", 2);
    done(&b);
}

static void test_ordering_bytes(void **state)
{
    (void)state;
    /* names in byte order (Go sort.Strings): upper case and '_' before lower case */
    built b =
        build("[" LISTENER(
            "l", CHAIN(TCP_RBAC("\"rules\":{\"policies\":{" POL("ns[z]-policy[b]-rule[0]") "," POL(
                     "ns[a]-policy[b]-"
                     "rule[0]") "," POL("ns[a]-policy[B]-rule[0]") "," POL("ns[a]-policy[_x]-rule["
                                                                           "0]") "}}"))) "]");
    assert_int_equal(b.t.n, 4);
    expect_row(&b, 0, WF_AUTHZ_ALLOW, "B.a", 1);
    expect_row(&b, 1, WF_AUTHZ_ALLOW, "_x.a", 1);
    expect_row(&b, 2, WF_AUTHZ_ALLOW, "b.a", 1);
    expect_row(&b, 3, WF_AUTHZ_ALLOW, "b.z", 1);
    done(&b);
}

static void test_unparsable_and_skipped(void **state)
{
    (void)state;
    /* an id that does not parse is the name "" (istioctl logs and goes on); a filter whose
     * typed_config is another type, or whose action is unknown, is skipped with a warning;
     * filters with other names and default_filter_chain are not read */
    built b = build("[" LISTENER(
        "in",
        CHAIN(TCP_RBAC("\"rules\":{\"policies\":{" POL("my-own-policy") "}}")) "," CHAIN(
            "{\"name\":\"envoy.filters.network.rbac\",\"typed_config\":{\"@type\":\"type."
            "googleapis.com/udpa.type.v1.TypedStruct\"}}") "," CHAIN(TCP_RBAC("\"rules\":{"
                                                                              "\"action\":"
                                                                              "\"MAYBE\","
                                                                              "\"policies\":"
                                                                              "{" POL(
                                                                                  "ns[a]-"
                                                                                  "policy["
                                                                                  "m]-rule["
                                                                                  "0]") "}"
                                                                                        "}")) "," CHAIN("{\"name\":\"envoy.filters.network.tcp_proxy\",\"typed_config\":{\"rules\":{}}}")) "]");
    assert_int_equal(b.t.n, 1);
    expect_row(&b, 0, WF_AUTHZ_ALLOW, "", 1);
    const char *w = wf_strbuf_cstr(&b.warn);
    assert_non_null(strstr(w, "listener in: failed to parse policy name: my-own-policy\n"));
    assert_non_null(strstr(w, "found RBAC network filter but failed to parse: typed_config is "
                              "type.googleapis.com/udpa.type.v1.TypedStruct"));
    assert_non_null(strstr(w, "unknown action"));
    done(&b);
}

/* ---- printing ---- */

static void test_table(void **state)
{
    (void)state;
    built b =
        build(
            "[" LISTENER("l", CHAIN(TCP_RBAC("\"rules\":{}")) "," CHAIN(
                                  HCM(HTTP_RBAC("\"rules\":{\"policies\":{" POL(
                                      "ns[default]-policy[httpbin]-rule["
                                      "0]") "}}") "," HTTP_RBAC("\"shadow_rules\":{\"policies\":"
                                                                "{" POL("istio-ext-authz-ns["
                                                                        "default]-policy[ext-authz]"
                                                                        "-rule[0]") "}}")))) "]");
    wf_strbuf out = WF_STRBUF_INIT;
    assert_int_equal(wf_authz_print_table(&b.t, &out), 0);
    assert_string_equal(wf_strbuf_cstr(&out), "ACTION   AuthorizationPolicy         RULES\n"
                                              "ALLOW    _anonymous_match_nothing_   1\n"
                                              "ALLOW    httpbin.default             1\n"
                                              "CUSTOM   ext-authz.default           1\n");
    wf_strbuf_reset(&out);
    assert_int_equal(wf_authz_print_json(&b.t, &out), 0);
    json_t *j = load(wf_strbuf_cstr(&out));
    assert_int_equal(json_array_size(j), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 2), "action")),
                        "CUSTOM");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(j, 2), "authorizationPolicy")),
        "ext-authz.default");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 2), "rules")), 1);
    json_decref(j);
    wf_strbuf_free(&out);
    done(&b);
}

static void test_header_only_and_nothing(void **state)
{
    (void)state;
    /* listeners without RBAC filters: the header only; no listener at all: nothing */
    built b = build("[" LISTENER("l", CHAIN(HCM("{\"name\":\"envoy.filters.http.fault\"}"))) "]");
    wf_strbuf out = WF_STRBUF_INIT;
    assert_int_equal(wf_authz_print_table(&b.t, &out), 0);
    assert_string_equal(wf_strbuf_cstr(&out), "ACTION   AuthorizationPolicy   RULES\n");
    done(&b);
    b = build("[]");
    wf_strbuf_reset(&out);
    assert_int_equal(wf_authz_print_table(&b.t, &out), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(wf_authz_print_json(&b.t, &out), 0);
    assert_string_equal(wf_strbuf_cstr(&out), "[]\n");
    wf_strbuf_free(&out);
    done(&b);
}

static void test_not_an_array(void **state)
{
    (void)state;
    json_t *o = json_object();
    wf_authz_table t;
    wf_strbuf warn = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
    assert_int_equal(wf_authz_build(o, &t, &warn, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "listeners: expected an array");
    json_decref(o);
    wf_strbuf_free(&warn);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_plain),
        cmocka_unit_test(test_parse_ext_authz_and_unanchored),
        cmocka_unit_test(test_parse_greedy),
        cmocka_unit_test(test_parse_no_match),
        cmocka_unit_test(test_http_and_network_actions),
        cmocka_unit_test(test_custom_from_shadow_rules),
        cmocka_unit_test(test_anonymous_match_nothing),
        cmocka_unit_test(test_distinct_rules),
        cmocka_unit_test(test_ordering_bytes),
        cmocka_unit_test(test_unparsable_and_skipped),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_header_only_and_nothing),
        cmocka_unit_test(test_not_an_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
