/*
 * test_log_explain_rbac.c - what `weftctl log explain` says about an RBAC denial
 * (log_explain_rbac.h; reference security.md §6.5): the policy and rule behind a named id,
 * CUSTOM and fail-closed CUSTOM ids, `[none]` with and without the proxy's policy table (its
 * ALLOW policies listed), ids Istio does not generate, and details that are no RBAC denial.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/log_explain_rbac.h"

/* A proxy with an HTTP RBAC DENY filter (shop/no-admin rule 0) and an ALLOW filter
 * (shop/catalog-readers rules 0 and 1, root/mesh-allow rule 0), as istiod writes them. */
static const char *LISTENERS =
    "[{\"name\": \"virtualInbound\", \"filter_chains\": [{\"filters\": [{\"name\": "
    "\"envoy.filters.network.http_connection_manager\", \"typed_config\": {\"@type\": "
    "\"type.googleapis.com/"
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\", "
    "\"http_filters\": ["
    "{\"name\": \"envoy.filters.http.rbac\", \"typed_config\": {\"@type\": "
    "\"type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC\", \"rules\": {\"action\": "
    "\"DENY\", \"policies\": {\"ns[shop]-policy[no-admin]-rule[0]\": {}}}}},"
    "{\"name\": \"envoy.filters.http.rbac\", \"typed_config\": {\"@type\": "
    "\"type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC\", \"rules\": {\"policies\": "
    "{\"ns[shop]-policy[catalog-readers]-rule[0]\": {}, "
    "\"ns[shop]-policy[catalog-readers]-rule[1]\": {}, "
    "\"ns[istio-system]-policy[mesh-allow]-rule[0]\": {}}}}}]}}]}]}]";

typedef struct fx {
    wf_authz_table t;
    wf_strbuf out;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    json_error_t je;
    json_t *ls = json_loads(LISTENERS, 0, &je);
    wf_strbuf warn = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
    assert_non_null(ls);
    assert_int_equal(wf_authz_build(ls, &f->t, &warn, &err), 0);
    assert_int_equal(warn.len, 0);
    json_decref(ls);
    wf_strbuf_free(&warn);
    wf_strbuf_free(&err);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    wf_authz_table_free(&f->t);
    wf_strbuf_free(&f->out);
    free(f);
    return 0;
}

static const char *describe(fx *f, const char *details, bool with_table)
{
    wf_strbuf_reset(&f->out);
    int rc = wf_lx_rbac_describe(details, with_table ? &f->t : NULL,
                                 with_table ? "catalog-v1-1.shop" : NULL, &f->out);
    assert_int_equal(rc, 1);
    return wf_strbuf_cstr(&f->out);
}

static void named_policy(void **state)
{
    fx *f = *state;
    assert_string_equal(
        describe(f, "rbac_access_denied_matched_policy[ns[shop]-policy[no-admin]-rule[0]]", false),
        "AuthorizationPolicy no-admin in namespace shop, rule 0 (its spec.rules[0])");
    assert_string_equal(
        describe(f, "rbac_access_denied_matched_policy[ns[shop]-policy[no-admin]-rule[0]]", true),
        "AuthorizationPolicy no-admin in namespace shop, rule 0 (its spec.rules[0])\n"
        "catalog-v1-1.shop enforces it as DENY");
    /* a policy the proxy no longer has */
    assert_non_null(strstr(
        describe(f, "rbac_access_denied_matched_policy[ns[shop]-policy[gone]-rule[2]]", true),
        "catalog-v1-1.shop no longer has this policy"));
}

static void none_lists_allow_policies(void **state)
{
    fx *f = *state;
    const char *s = describe(f, "rbac_access_denied_matched_policy[none]", false);
    assert_non_null(strstr(s, "ALLOW policies apply to this workload and no rule of them"));
    assert_non_null(strstr(s, "weftctl x authz check <pod>"));
    s = describe(f, "rbac_access_denied_matched_policy[none]", true);
    assert_non_null(strstr(s,
                           "\nALLOW policies on catalog-v1-1.shop: shop/catalog-readers (2 rules), "
                           "istio-system/mesh-allow (1 rule)"));
    assert_null(strstr(s, "no-admin")); /* a DENY policy is no ALLOW policy */
}

static void custom_ids(void **state)
{
    fx *f = *state;
    const char *s = describe(f,
                             "rbac_access_denied_matched_policy[istio-ext-authz-default-ns[foo]-"
                             "policy[httpbin-1]-rule[0]-deny-due-to-bad-CUSTOM-action]",
                             false);
    assert_non_null(strstr(s, "AuthorizationPolicy httpbin-1 in namespace foo, rule 0"));
    assert_non_null(strstr(s, "fail closed"));
}

static void not_istio_or_not_rbac(void **state)
{
    fx *f = *state;
    assert_non_null(strstr(describe(f, "rbac_access_denied_matched_policy[my-own-rule]", false),
                           "\"my-own-rule\" is not one Istio generates"));
    wf_strbuf_reset(&f->out);
    assert_int_equal(wf_lx_rbac_describe("cluster_not_found", &f->t, NULL, &f->out), 0);
    assert_int_equal(wf_lx_rbac_describe(NULL, NULL, NULL, &f->out), 0);
    assert_int_equal(f->out.len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(named_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(none_lists_allow_policies, setup, teardown),
        cmocka_unit_test_setup_teardown(custom_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(not_istio_or_not_rbac, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
