/*
 * test_authz_pilot.c - pilot/authz: which AuthorizationPolicies apply to a proxy (root
 * namespace, namespace, selector, targetRefs), the filters in Istio's order (CUSTOM fail-closed,
 * AUDIT, DENY, ALLOW), dry run (shadow rules and their stat prefix), empty spec and null rules,
 * TCP chains, notes for skipped rules; the problems reported per policy; /debug/authorizationz;
 * and the filters' place in a pod's inbound HTTP connection manager (pilot/inbound.h, lds.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "model/store.h"
#include "pilot/authz.h"
#include "pilot/inbound.h"

#define AP(ns, name)                                                                               \
    "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: " name          \
    ", namespace: " ns "}\n"

static const wf_kv web_kv[] = {{.key = "app", .value = "web"}, {.key = "v", .value = "1"}};
static const wf_kvs web = {.n = 2, .items = (wf_kv *)web_kv};

typedef struct notes {
    int n[3];
    char last[3][512];
    char field[3][64];
    unsigned line[3];
} notes;

static void on_note(void *arg, const wf_authz_note *n)
{
    notes *ns = arg;
    ns->n[n->level]++;
    snprintf(ns->last[n->level], sizeof ns->last[n->level], "%s/%s: %s", n->policy->ns,
             n->policy->name, n->msg);
    snprintf(ns->field[n->level], sizeof ns->field[n->level], "%s", n->field);
    ns->line[n->level] = n->at ? wf_node_report_line(n->at) : 0;
}

static json_t *http(wf_store *s, const char *ns, const wf_kvs *labels, const wf_meshcfg *m,
                    notes *nt)
{
    wf_authz_options o = {.ns = ns, .labels = labels, .mesh = m, .note = on_note, .arg = nt};
    json_t *f = wf_authz_http_filters(s, &o);
    assert_non_null(f);
    return f;
}

static const char *policy_key(json_t *filter, const char *part, size_t i)
{
    json_t *pol = wf_test_json_at(filter, part);
    void *it = json_object_iter(json_object_get(pol, "policies"));
    for (size_t k = 0; it && k < i; k++)
        it = json_object_iter_next(json_object_get(pol, "policies"), it);
    return it ? json_object_iter_key(it) : NULL;
}

static void selection(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(
        NULL,
        AP("istio-system", "mesh-wide") "spec: {action: DENY, rules: [{}]}\n---\n" AP(
            "istio-system",
            "root-selector") "spec: {selector: {matchLabels: {app: web}}, "
                             "action: AUDIT, rules: [{}]}\n---\n" AP(
                                 "shop",
                                 "mine") "spec: {selector: {matchLabels: {app: web, v: \"1\"}}, "
                                         "rules: [{}]}\n---\n" AP("shop",
                                                                  "other-labels") "spec: "
                                                                                  "{selector: "
                                                                                  "{matchLabels: "
                                                                                  "{app: "
                                                                                  "db}}}\n---\n" AP(
                                                                                      "other",
                                                                                      "other-"
                                                                                      "ns") "s"
                                                                                            "p"
                                                                                            "e"
                                                                                            "c"
                                                                                            ":"
                                                                                            " "
                                                                                            "{"
                                                                                            "}"
                                                                                            "\n---"
                                                                                            "\n" AP(
                                                                                                "sh"
                                                                                                "o"
                                                                                                "p",
                                                                                                "gw"
                                                                                                "-r"
                                                                                                "e"
                                                                                                "f") "spec: {targetRefs: [{kind: Gateway, "
                                                                                                     "group: gateway.networking.k8s.io, name: "
                                                                                                     "g}]}\n",
        "default");
    assert_non_null(s);
    notes nt = {0};
    wf_authz_options o = {.ns = "shop", .labels = &web, .note = on_note, .arg = &nt};
    const wf_resource **sel;
    long n = wf_authz_select(s, &o, &sel);
    assert_int_equal(n, 3);
    assert_string_equal(sel[0]->name, "mesh-wide");
    assert_string_equal(sel[1]->name, "root-selector");
    assert_string_equal(sel[2]->name, "mine");
    free(sel);
    /* gw-ref (targetRefs) is not selected; wf_authz_policy_problems reports it once, for the
     * policy, not once per proxy */
    /* no labels: only policies without selector */
    o.labels = NULL;
    n = wf_authz_select(s, &o, &sel);
    assert_int_equal(n, 1);
    free(sel);
    /* filters in Istio's order: AUDIT (LOG), DENY, ALLOW */
    json_t *f = http(s, "shop", &web, NULL, &nt);
    assert_int_equal(json_array_size(f), 3);
    wf_test_expect_str(json_array_get(f, 0), "typed_config.rules.action", "LOG");
    wf_test_expect_str(json_array_get(f, 1), "typed_config.rules.action", "DENY");
    wf_test_expect_str(json_array_get(f, 2), "typed_config.rules.action", "ALLOW");
    assert_string_equal(policy_key(json_array_get(f, 1), "typed_config.rules", 0),
                        "ns[istio-system]-policy[mesh-wide]-rule[0]");
    wf_test_expect_str(json_array_get(f, 2), "name", "envoy.filters.http.rbac");
    wf_test_expect_str(json_array_get(f, 2), "typed_config.@type",
                       "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC");
    wf_test_expect_str(json_array_get(f, 2), "typed_config.shadow_rules_stat_prefix",
                       "istio_dry_run_allow_");
    json_decref(f);
    wf_store_free(s);
}

static void root_namespace_from_mesh(void **state)
{
    (void)state;
    char path[] = "/tmp/weft-authz-mesh-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *y = "rootNamespace: mesh-root\ntrustDomain: td1\ntrustDomainAliases: [old]\n";
    assert_int_equal(write(fd, y, strlen(y)), (ssize_t)strlen(y));
    close(fd);
    wf_meshcfg *m = wf_meshcfg_new_default();
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_file(m, path, &err), 0);
    unlink(path);
    wf_store *s = wf_test_load_store(
        NULL,
        AP("mesh-root", "r") "spec: {rules: [{from: [{source: {principals: "
                             "[cluster.local/ns/a/sa/b]}}]}]}\n---\n" AP(
                                 "istio-system", "not-root") "spec: {action: DENY, rules: [{}]}\n",
        "default");
    notes nt = {0};
    json_t *f = http(s, "shop", &web, m, &nt);
    assert_int_equal(json_array_size(f), 1); /* istio-system is not the root namespace here */
    char *txt = json_dumps(f, JSON_COMPACT);
    assert_non_null(strstr(txt, "spiffe://td1/ns/a/sa/b"));
    assert_non_null(strstr(txt, "spiffe://old/ns/a/sa/b"));
    free(txt);
    json_t *dbg = wf_authz_debug(s, m);
    wf_test_expect_str(dbg, "authorization_policies.root_namespace", "mesh-root");
    wf_test_expect_str(dbg, "authorization_policies.namespace_to_policies.mesh-root.0.name", "r");
    wf_test_expect_str(
        dbg, "authorization_policies.namespace_to_policies.istio-system.0.spec.action", "DENY");
    json_decref(dbg);
    json_decref(f);
    wf_store_free(s);
    wf_meshcfg_free(m);
}

static void dry_run_and_empty(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(
        NULL,
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: dry, "
        "namespace: shop, annotations: {istio.io/dry-run: \"true\"}}\nspec: {action: DENY, "
        "rules: [{}]}\n---\n"
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: bad-dry, "
        "namespace: shop, annotations: {istio.io/dry-run: \"yes\"}}\nspec: {}\n---\n" AP(
            "shop", "nil-rule") "spec:\n  rules:\n  - ~\n",
        "default");
    notes nt = {0};
    json_t *f = http(s, "shop", &web, NULL, &nt);
    assert_int_equal(json_array_size(f), 2);
    json_t *deny = json_array_get(f, 0), *allow = json_array_get(f, 1);
    assert_null(wf_test_json_at(deny, "typed_config.rules"));
    wf_test_expect_str(deny, "typed_config.shadow_rules.action", "DENY");
    wf_test_expect_str(deny, "typed_config.shadow_rules_stat_prefix", "istio_dry_run_deny_");
    /* "yes" is not a Go bool: enforced; spec {} is one never-matching policy */
    json_t *never = wf_test_json_at(allow, "typed_config.rules.policies.ns[shop]-policy[bad-dry]-"
                                           "rule[0]");
    assert_non_null(never);
    char *txt = json_dumps(never, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(txt, "{\"permissions\":[{\"not_rule\":{\"any\":true}}],\"principals\":[{"
                             "\"not_id\":{\"any\":true}}]}");
    free(txt);
    /* the null rule is skipped, named */
    assert_null(wf_test_json_at(allow, "typed_config.rules.policies.ns[shop]-policy[nil-rule]-"
                                       "rule[0]"));
    assert_int_equal(nt.n[WF_AUTHZ_NOTE_ERROR], 1);
    assert_string_equal(nt.last[WF_AUTHZ_NOTE_ERROR],
                        "shop/nil-rule: skipped nil rule ns[shop]-policy[nil-rule]-rule[0]");
    assert_string_equal(nt.field[WF_AUTHZ_NOTE_ERROR], "spec.rules[0]");
    assert_int_equal(nt.line[WF_AUTHZ_NOTE_ERROR], 16); /* the "- ~" line */
    json_decref(f);
    /* the problems reported without a proxy */
    size_t n;
    const wf_resource *const *v = wf_store_kind(s, WF_KIND_AUTHORIZATIONPOLICY, &n);
    notes pn = {0};
    assert_int_equal(wf_authz_policy_problems(v[1], NULL, on_note, &pn), 1);
    assert_non_null(strstr(pn.last[WF_AUTHZ_NOTE_ERROR], "istio.io/dry-run: yes"));
    assert_string_equal(pn.field[WF_AUTHZ_NOTE_ERROR], "metadata.annotations[istio.io/dry-run]");
    wf_store_free(s);
}

static void custom_fails_closed(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(
        NULL,
        AP("shop", "z") "spec: {action: CUSTOM, provider: {name: zeta}, rules: [{to: "
                        "[{operation: {paths: [/z]}}]}]}\n---\n" AP(
                            "shop", "a") "spec: {action: CUSTOM, provider: {name: alpha}, rules: "
                                         "[{to: [{operation: "
                                         "{methods: [POST], ports: [\"81\"]}}]}]}\n---\n" AP(
                                             "shop", "allow") "spec: {rules: [{}]}\n",
        "default");
    notes nt = {0};
    json_t *f = http(s, "shop", &web, NULL, &nt);
    assert_int_equal(json_array_size(f), 3);
    /* providers sorted: alpha, zeta; then the ALLOW filter */
    assert_string_equal(policy_key(json_array_get(f, 0), "typed_config.rules", 0),
                        "istio-ext-authz-alpha-ns[shop]-policy[a]-rule[0]-deny-due-to-bad-CUSTOM-"
                        "action");
    assert_string_equal(policy_key(json_array_get(f, 1), "typed_config.rules", 0),
                        "istio-ext-authz-zeta-ns[shop]-policy[z]-rule[0]-deny-due-to-bad-CUSTOM-"
                        "action");
    wf_test_expect_str(json_array_get(f, 0), "typed_config.rules.action", "DENY");
    assert_null(wf_test_json_at(json_array_get(f, 0), "typed_config.shadow_rules_stat_prefix"));
    wf_test_expect_str(json_array_get(f, 2), "typed_config.rules.action", "ALLOW");
    assert_int_equal(nt.n[WF_AUTHZ_NOTE_WARNING], 2);
    assert_non_null(strstr(nt.last[WF_AUTHZ_NOTE_WARNING], "action CUSTOM (provider \"alpha\") is "
                                                           "not supported by weft"));
    json_decref(f);
    /* TCP: the HTTP-only method is left out of the fail-closed DENY (it denies more) */
    wf_authz_options o = {.ns = "shop", .labels = &web, .note = on_note, .arg = &nt};
    f = wf_authz_tcp_filters(s, &o);
    assert_int_equal(json_array_size(f), 3);
    wf_test_expect_str(json_array_get(f, 0), "name", "envoy.filters.network.rbac");
    wf_test_expect_str(json_array_get(f, 0), "typed_config.stat_prefix", "tcp.");
    char *txt = json_dumps(json_array_get(f, 0), JSON_COMPACT);
    assert_non_null(strstr(txt, "{\"destination_port\":81}"));
    assert_null(strstr(txt, ":method"));
    free(txt);
    json_decref(f);
    wf_store_free(s);
}

static void tcp_allow_rules_dropped(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(
        NULL,
        AP("shop", "http-only") "spec: {rules: [{to: [{operation: {methods: [GET]}}]}]}\n---\n" AP(
            "shop", "bad-key") "spec: {action: DENY, rules: [{when: [{key: a.b, values: [x]}]}]}\n",
        "default");
    notes nt = {0};
    wf_authz_options o = {.ns = "shop", .labels = &web, .note = on_note, .arg = &nt};
    json_t *f = wf_authz_tcp_filters(s, &o);
    assert_int_equal(json_array_size(f), 2);
    /* DENY whose only rule is invalid: rules present with no policy (denies nothing) */
    json_t *deny = json_array_get(f, 0);
    wf_test_expect_str(deny, "typed_config.rules.action", "DENY");
    assert_int_equal(json_object_size(wf_test_json_at(deny, "typed_config.rules.policies")), 0);
    /* ALLOW whose only rule is HTTP-only: rules {} (denies every connection) */
    json_t *allow = json_array_get(f, 1);
    assert_int_equal(json_object_size(wf_test_json_at(allow, "typed_config.rules.policies")), 0);
    assert_non_null(wf_test_json_at(allow, "typed_config.rules"));
    assert_int_equal(nt.n[WF_AUTHZ_NOTE_ERROR], 1);
    assert_string_equal(nt.last[WF_AUTHZ_NOTE_ERROR],
                        "shop/bad-key: skipped invalid rule ns[shop]-policy[bad-key]-rule[0]: "
                        "unknown attribute a.b");
    assert_non_null(strstr(nt.last[WF_AUTHZ_NOTE_DEBUG], "skipped rule "
                                                         "ns[shop]-policy[http-only]-rule[0] on "
                                                         "TCP filter chain: \":method\" is HTTP "
                                                         "only"));
    json_decref(f);
    wf_store_free(s);
}

static void inbound_listener_places_rbac_after_mx(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(
        NULL,
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  "
        "selector: {app: web}\n  ports: [{name: http, port: 80, targetPort: 8080}]\n---\n" AP(
            "shop", "deny") "spec: {action: DENY, rules: [{to: [{operation: {paths: [/x]}}]}]}\n",
        "default");
    wf_inbound_options o = {.ns = "shop", .labels = &web};
    json_t *ls = wf_inbound_listeners(s, &o);
    assert_int_equal(json_array_size(ls), 1);
    json_t *chains = json_object_get(json_array_get(ls, 0), "filter_chains");
    assert_int_equal(json_array_size(chains), 2); /* PERMISSIVE: both get the filter */
    for (size_t c = 0; c < 2; c++) {
        json_t *hf = wf_test_json_at(json_array_get(chains, c), "filters.0.typed_config."
                                                                "http_filters");
        const char *want[] = {"istio.metadata_exchange",
                              "envoy.filters.http.rbac",
                              "envoy.filters.http.fault",
                              "envoy.filters.http.cors",
                              "istio.stats",
                              "envoy.filters.http.router"};
        assert_int_equal(json_array_size(hf), 6);
        for (size_t i = 0; i < 6; i++)
            wf_test_expect_str(json_array_get(hf, i), "name", want[i]);
    }
    json_decref(ls);
    /* another pod of the namespace that the policy does not select: no RBAC filter */
    static const wf_kv other_kv[] = {{.key = "app", .value = "web"}};
    static const wf_kvs other = {.n = 1, .items = (wf_kv *)other_kv};
    wf_store *s2 = wf_test_load_store(
        NULL,
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  "
        "selector: {app: web}\n  ports: [{name: http, port: 80, targetPort: 8080}]\n---\n" AP(
            "shop", "deny") "spec: {selector: {matchLabels: {v: \"2\"}}, action: DENY, rules: "
                            "[{}]}\n",
        "default");
    o.labels = &other;
    ls = wf_inbound_listeners(s2, &o);
    json_t *hf = wf_test_json_at(json_array_get(ls, 0), "filter_chains.0.filters.0.typed_config."
                                                        "http_filters");
    assert_int_equal(json_array_size(hf), 5);
    json_decref(ls);
    wf_store_free(s2);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(selection),
        cmocka_unit_test(root_namespace_from_mesh),
        cmocka_unit_test(dry_run_and_empty),
        cmocka_unit_test(custom_fails_closed),
        cmocka_unit_test(tcp_allow_rules_dropped),
        cmocka_unit_test(inbound_listener_places_rbac_after_mx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
