/*
 * test_scrape_failed.c - the explanation /ui/api/failed gives each failed request
 * (pilot/scrape_failed.h wf_failed_explain): a flag among several ("UF,URX"), a details value
 * (RBAC's prefix), a flag before the generic via_upstream, and an unknown signature reported
 * as such, never guessed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pilot/scrape_failed.h"

static const char *field(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    assert_non_null(v);
    return v;
}

static void test_explain(void **state)
{
    (void)state;
    json_t *e = wf_failed_explain("NC", 503, "cluster_not_found");
    assert_non_null(strstr(field(e, "summary"), "NC NoClusterFound"));
    assert_non_null(strstr(field(e, "causes"), "DestinationRule"));
    assert_true(field(e, "next")[0] != '\0');
    json_decref(e);
    e = wf_failed_explain("UF,URX", 503,
                          "upstream_reset_before_response_started{connection_failure}");
    /* the cause (UF) rather than its consequence (URX: the retries of it ran out) */
    assert_non_null(strstr(field(e, "summary"), "UF UpstreamConnectionFailure"));
    json_decref(e);
    e = wf_failed_explain("-", 403,
                          "rbac_access_denied_matched_policy[ns[foo]-policy[deny]-rule[0]]");
    assert_non_null(strstr(field(e, "summary"), "AuthorizationPolicy"));
    json_decref(e);
    e = wf_failed_explain("-", 500, "via_upstream");
    assert_non_null(strstr(field(e, "summary"), "application"));
    json_decref(e);
    e = wf_failed_explain("XYZ", 418, "something_new");
    assert_string_equal(field(e, "summary"), "418 XYZ something_new");
    assert_non_null(strstr(field(e, "meaning"), "not in weft's table"));
    json_decref(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_explain)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
