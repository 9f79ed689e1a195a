/*
 * test_authz_model.c - pilot/authz_model: one AuthorizationPolicy rule to one Envoy RBAC policy
 * as Istio's authz model: every source field, operation field and `when` key; string matcher
 * forms; IP canonical forms; path templates; requestPrincipals split at the last '/'; trust
 * domain aliases; HTTP-only fields on TCP chains (ALLOW rule skipped, DENY value left out and
 * reported); unknown `when` keys (rule invalid for every action); bad values.
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
#include "pilot/authz_internal.h"

#define HEAD                                                                                       \
    "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"                                \
    "metadata: {name: p, namespace: foo}\nspec:\n  rules:\n"

typedef struct out {
    int rc;
    char *json; /* compact, sorted keys */
    char msg[256];
    int drops;
    char last_drop[256];
} out;

static void on_drop(void *arg, const char *msg)
{
    out *o = arg;
    o->drops++;
    snprintf(o->last_drop, sizeof o->last_drop, "%s", msg);
}

/* Translates rules[0] of a policy whose rules section is `rule` (indented YAML). */
static out run(const char *rule, wf_rbac_action action, bool tcp, const char *const *tds,
               size_t ntds)
{
    static const char *const def[] = {"cluster.local"};
    char yaml[4096];
    snprintf(yaml, sizeof yaml, HEAD "%s", rule);
    wf_store *s = wf_test_load_store(NULL, yaml, "default");
    assert_non_null(s);
    size_t n;
    const wf_resource *const *v = wf_store_kind(s, WF_KIND_AUTHORIZATIONPOLICY, &n);
    assert_int_equal(n, 1);
    out o = {0};
    wf_authz_gen g = {.policy_ns = "foo",
                      .for_tcp = tcp,
                      .action = action,
                      .tds = tds ? tds : def,
                      .ntds = tds ? ntds : 1,
                      .drop = on_drop,
                      .arg = &o};
    json_t *pol = NULL;
    o.rc = wf_authz_rule_policy(wf_seq_at(wf_map_get(v[0]->spec, "rules"), 0), &g, &pol, o.msg,
                                sizeof o.msg);
    o.json = pol ? json_dumps(pol, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(pol);
    wf_store_free(s);
    return o;
}

static void has(const out *o, const char *frag)
{
    assert_non_null(o->json);
    if (!strstr(o->json, frag))
        fail_msg("missing %s in %s", frag, o->json);
}

static void empty_rule_matches_everything(void **state)
{
    (void)state;
    out o = run("  - {}\n", WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    assert_string_equal(o.json, "{\"permissions\":[{\"and_rules\":{\"rules\":[{\"any\":true}]}}],"
                                "\"principals\":[{\"and_ids\":{\"ids\":[{\"any\":true}]}}]}");
    free(o.json);
}

static void principals_forms(void **state)
{
    (void)state;
    out o = run("  - from:\n    - source:\n        principals: [a/ns/b/sa/c, \"pre*\", \"*suf.x\", "
                "\"*\"]\n        notPrincipals: [bad]\n",
                WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "{\"authenticated\":{\"principal_name\":{\"exact\":\"spiffe://a/ns/b/sa/c\"}}}");
    has(&o, "{\"prefix\":\"spiffe://pre\"}");
    has(&o, "{\"safe_regex\":{\"regex\":\"spiffe://.*suf\\\\.x\"}}");
    has(&o, "{\"safe_regex\":{\"regex\":\".+\"}}");
    has(&o, "{\"not_id\":{\"or_ids\":{\"ids\":[{\"authenticated\":{\"principal_name\":{\"exact\":"
            "\"spiffe://bad\"}}}]}}}");
    free(o.json);
}

static void namespaces_service_accounts_trust_domains(void **state)
{
    (void)state;
    out o = run("  - from:\n    - source:\n        namespaces: [\"a.b\", \"x-*\"]\n"
                "        serviceAccounts: [sa1, other/sa2]\n"
                "        trustDomains: [td.one, \"bad*\"]\n",
                WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "\"regex\":\".*/ns/a\\\\.b/.*\"");
    has(&o, "\"regex\":\".*/ns/x-.*/.*\"");
    has(&o, "\"regex\":\"spiffe://.+/ns/foo/(.+/|)sa/sa1(/.+)?\"");
    has(&o, "\"regex\":\"spiffe://.+/ns/other/(.+/|)sa/sa2(/.+)?\"");
    has(&o, "{\"prefix\":\"spiffe://td.one/\"}");
    has(&o, "\"regex\":\"spiffe://bad[^/]*/.*\"");
    free(o.json);
}

static void ip_blocks_canonical(void **state)
{
    (void)state;
    out o = run("  - from:\n    - source:\n        ipBlocks: [1.2.3.4, 10.0.0.0/8]\n"
                "        remoteIpBlocks: [\"2001:db8:0::1\"]\n",
                WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "{\"direct_remote_ip\":{\"address_prefix\":\"1.2.3.4\",\"prefix_len\":32}}");
    has(&o, "{\"direct_remote_ip\":{\"address_prefix\":\"10.0.0.0\",\"prefix_len\":8}}");
    has(&o, "{\"remote_ip\":{\"address_prefix\":\"2001:db8::1\",\"prefix_len\":128}}");
    free(o.json);
}

static void request_principals_split_at_last_slash(void **state)
{
    (void)state;
    out o = run(
        "  - from:\n    - source:\n        requestPrincipals: [\"https://iss.example/a/sub1\"]\n",
        WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "\"filter\":\"envoy.filters.http.jwt_authn\",\"path\":[{\"key\":\"payload\"},{\"key\":"
            "\"iss\"}],\"value\":{\"string_match\":{\"exact\":\"https://iss.example/a\"}}");
    has(&o, "{\"key\":\"sub\"}],\"value\":{\"string_match\":{\"exact\":\"sub1\"}}");
    free(o.json);
    /* no '/': all issuer, empty subject; "" too (Istio's default case) */
    o = run("  - from:\n    - source:\n        requestPrincipals: [\"\", \"iss-*\", \"*/s\"]\n",
            WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "{\"key\":\"iss\"}],\"value\":{\"string_match\":{\"exact\":\"\"}}");
    has(&o, "{\"key\":\"iss\"}],\"value\":{\"string_match\":{\"prefix\":\"iss-\"}}");
    has(&o, "{\"key\":\"iss\"}],\"value\":{\"string_match\":{\"safe_regex\":{\"regex\":"
            "\".+\"}}}");
    has(&o, "{\"key\":\"sub\"}],\"value\":{\"string_match\":{\"exact\":\"s\"}}");
    has(&o, "\"or_ids\"");
    free(o.json);
}

static void operations(void **state)
{
    (void)state;
    out o = run("  - to:\n    - operation:\n        hosts: [\"*.Example.com\"]\n"
                "        methods: [GET]\n        paths: [\"/a/{*}\", \"/b/{**}\", \"/c*\"]\n"
                "        notPorts: [\"8080\"]\n",
                WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "{\"header\":{\"name\":\":authority\",\"string_match\":{\"ignore_case\":true,"
            "\"suffix\":\".Example.com\"}}}");
    has(&o, "{\"header\":{\"name\":\":method\",\"string_match\":{\"exact\":\"GET\"}}}");
    has(&o, "\"path_template\":\"/a/*\"");
    has(&o, "\"path_template\":\"/b/**\"");
    has(&o, "{\"url_path\":{\"path\":{\"prefix\":\"/c\"}}}");
    has(&o, "{\"not_rule\":{\"or_rules\":{\"rules\":[{\"destination_port\":8080}]}}}");
    free(o.json);
}

static void when_keys(void **state)
{
    (void)state;
    out o = run("  - when:\n"
                "    - {key: \"request.headers[x-a]\", values: [\"v*\"]}\n"
                "    - {key: source.ip, values: [1.1.1.1]}\n"
                "    - {key: remote.ip, values: [2.2.2.0/24]}\n"
                "    - {key: source.namespace, values: [ns1]}\n"
                "    - {key: source.principal, values: [\"*\"]}\n"
                "    - {key: source.serviceAccount, values: [ns2/sa]}\n"
                "    - {key: source.trustDomain, values: [\"*.corp\"]}\n"
                "    - {key: request.auth.principal, values: [iss/sub]}\n"
                "    - {key: request.auth.audiences, values: [aud1]}\n"
                "    - {key: request.auth.presenter, values: [pr]}\n"
                "    - {key: \"request.auth.claims[groups][x]\", values: [g1]}\n"
                "    - {key: destination.ip, values: [3.3.3.3]}\n"
                "    - {key: destination.port, values: [\"81\"]}\n"
                "    - {key: connection.sni, values: [a.com]}\n"
                "    - {key: \"experimental.envoy.filters.f.g[k]\", values: [\"[lv]\"]}\n",
                WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "{\"header\":{\"name\":\"x-a\",\"string_match\":{\"prefix\":\"v\"}}}");
    has(&o, "{\"direct_remote_ip\":{\"address_prefix\":\"1.1.1.1\",\"prefix_len\":32}}");
    has(&o, "{\"remote_ip\":{\"address_prefix\":\"2.2.2.0\",\"prefix_len\":24}}");
    has(&o, "\".*/ns/ns1/.*\"");
    has(&o, "\"spiffe://.+/ns/ns2/(.+/|)sa/sa(/.+)?\"");
    has(&o, "\"spiffe://[^/]*\\\\.corp/.*\"");
    has(&o, "{\"string_match\":{\"exact\":\"iss\"}}");
    /* audiences: payload.aud equal to, or a list holding, aud1 */
    has(&o, "\"path\":[{\"key\":\"payload\"},{\"key\":\"aud\"}],\"value\":{\"or_match\":{"
            "\"value_matchers\":[{\"list_match\":{\"one_of\":{\"string_match\":{\"exact\":"
            "\"aud1\"}}}},{\"string_match\":{\"exact\":\"aud1\"}}]}}");
    has(&o, "{\"key\":\"azp\"}");
    has(&o, "[{\"key\":\"payload\"},{\"key\":\"groups\"},{\"key\":\"x\"}]");
    has(&o, "{\"destination_ip\":{\"address_prefix\":\"3.3.3.3\",\"prefix_len\":32}}");
    has(&o, "{\"destination_port\":81}");
    has(&o, "{\"requested_server_name\":{\"exact\":\"a.com\"}}");
    has(&o, "{\"metadata\":{\"filter\":\"envoy.filters.f.g\",\"path\":[{\"key\":\"k\"}],"
            "\"value\":{\"list_match\":{\"one_of\":{\"string_match\":{\"exact\":\"lv\"}}}}}}");
    free(o.json);
}

static void unknown_when_key_is_invalid_for_every_action(void **state)
{
    (void)state;
    wf_rbac_action acts[] = {WF_RBAC_ALLOW, WF_RBAC_DENY, WF_RBAC_LOG};
    for (size_t i = 0; i < 3; i++) {
        out o = run("  - when:\n    - {key: request.nope, values: [x]}\n", acts[i], false, NULL, 0);
        assert_int_equal(o.rc, WF_AUTHZ_RULE_INVALID);
        assert_null(o.json);
        assert_string_equal(o.msg, "unknown attribute request.nope");
    }
}

static void http_only_on_tcp(void **state)
{
    (void)state;
    const char *rule = "  - to:\n    - operation: {methods: [GET], ports: [\"80\"]}\n";
    out a = run(rule, WF_RBAC_ALLOW, true, NULL, 0);
    assert_int_equal(a.rc, WF_AUTHZ_RULE_SKIPPED);
    assert_string_equal(a.msg, "\":method\" is HTTP only");
    out d = run(rule, WF_RBAC_DENY, true, NULL, 0);
    assert_int_equal(d.rc, WF_AUTHZ_RULE_OK);
    assert_string_equal(d.json, "{\"permissions\":[{\"and_rules\":{\"rules\":[{\"or_rules\":{"
                                "\"rules\":[{\"destination_port\":80}]}}]}}],\"principals\":[{"
                                "\"and_ids\":{\"ids\":[{\"any\":true}]}}]}");
    assert_int_equal(d.drops, 1);
    assert_string_equal(d.last_drop, "\":method\" is HTTP only");
    free(d.json);
    /* the same rule on HTTP keeps the method */
    out h = run(rule, WF_RBAC_ALLOW, false, NULL, 0);
    has(&h, "\":method\"");
    free(h.json);
}

static void bad_values(void **state)
{
    (void)state;
    out a = run("  - to:\n    - operation: {ports: [\"99999\"]}\n", WF_RBAC_ALLOW, false, NULL, 0);
    assert_int_equal(a.rc, WF_AUTHZ_RULE_SKIPPED);
    assert_string_equal(a.msg, "invalid port 99999");
    out b = run("  - from:\n    - source: {ipBlocks: [\"1.2.3.4/40\", 5.6.7.8]}\n", WF_RBAC_DENY,
                false, NULL, 0);
    assert_int_equal(b.rc, WF_AUTHZ_RULE_OK);
    assert_int_equal(b.drops, 1);
    assert_string_equal(b.last_drop, "invalid IP address or CIDR 1.2.3.4/40");
    has(&b, "\"5.6.7.8\"");
    assert_null(strstr(b.json, "1.2.3.4"));
    free(b.json);
}

static void trust_domain_aliases(void **state)
{
    (void)state;
    static const char *const tds[] = {"td1", "old-td"};
    out o = run("  - from:\n    - source:\n        principals: [cluster.local/ns/a/sa/b, "
                "other/ns/a/sa/c, \"*/ns/a/sa/d\", \"*td/ns/a/sa/e\"]\n"
                "        trustDomains: [old-td]\n",
                WF_RBAC_ALLOW, false, tds, 2);
    assert_int_equal(o.rc, WF_AUTHZ_RULE_OK);
    has(&o, "\"exact\":\"spiffe://td1/ns/a/sa/b\"");
    has(&o, "\"exact\":\"spiffe://old-td/ns/a/sa/b\"");
    /* a trust domain outside the bundle is kept as written, not expanded */
    has(&o, "\"exact\":\"spiffe://other/ns/a/sa/c\"");
    assert_null(strstr(o.json, "spiffe://td1/ns/a/sa/c"));
    /* "*" trust domain: not enforced, kept */
    has(&o, "\"regex\":\"spiffe://.*/ns/a/sa/d\"");
    /* "*td" matches old-td (kept as is) and td1 (replaced) */
    has(&o, "\"exact\":\"spiffe://td1/ns/a/sa/e\"");
    has(&o, "\"regex\":\"spiffe://.*td/ns/a/sa/e\"");
    /* trustDomains naming an alias expand to the whole bundle */
    has(&o, "{\"prefix\":\"spiffe://td1/\"}");
    has(&o, "{\"prefix\":\"spiffe://old-td/\"}");
    free(o.json);
}

static void quote_meta(void **state)
{
    (void)state;
    char b[64];
    wf_authz_quote_meta("a.b*[c]{d}(e)|f^$+?\\", b, sizeof b);
    assert_string_equal(b, "a\\.b\\*\\[c\\]\\{d\\}\\(e\\)\\|f\\^\\$\\+\\?\\\\");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_rule_matches_everything),
        cmocka_unit_test(principals_forms),
        cmocka_unit_test(namespaces_service_accounts_trust_domains),
        cmocka_unit_test(ip_blocks_canonical),
        cmocka_unit_test(request_principals_split_at_last_slash),
        cmocka_unit_test(operations),
        cmocka_unit_test(when_keys),
        cmocka_unit_test(unknown_when_key_is_invalid_for_every_action),
        cmocka_unit_test(http_only_on_tcp),
        cmocka_unit_test(bad_values),
        cmocka_unit_test(trust_domain_aliases),
        cmocka_unit_test(quote_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
