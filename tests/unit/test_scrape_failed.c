/*
 * test_scrape_failed.c - the explanation /ui/api/failed gives each failed request
 * (pilot/scrape_failed.h wf_failed_explain): read from a proxy's /failed_requests entry and
 * worded exactly as `weftctl log explain` words the same request (explain/explain.h): a flag
 * among several ("UF,URX": the cause, not the retries), RBAC's details prefix, an upstream's
 * own answer, and an unknown signature reported as such, never guessed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "explain/explain.h"
#include "pilot/scrape_failed.h"

static const char *field(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    assert_non_null(v);
    return v;
}

/* The entry as weft-proxy's admin answers it, explained by pilot; the same fields through
 * the CLI's function must give the same object. */
static json_t *explain(int code, const char *flags, const char *details)
{
    json_t *entry = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "response_code", code,
                              "response_flags", flags, "response_code_details", details,
                              "route_name", "default", "upstream_cluster",
                              "outbound|80|version-v1|catalog.istioinaction.svc.cluster.local",
                              "method", "GET", "authority", "catalog", "path", "/items");
    assert_non_null(entry);
    json_t *e = wf_failed_explain(entry);
    assert_non_null(e);
    wf_explain_input in = {
        .response_code = code,
        .response_flags = flags,
        .response_code_details = details,
        .route_name = "default",
        .upstream_cluster = "outbound|80|version-v1|catalog.istioinaction.svc.cluster.local",
        .method = "GET",
        .authority = "catalog",
        .path = "/items",
    };
    json_t *cli = wf_explain_failed_json(&in);
    assert_true(json_equal(e, cli));
    json_decref(cli);
    json_decref(entry);
    return e;
}

static void test_explain(void **state)
{
    (void)state;
    json_t *e = explain(503, "NC", "cluster_not_found");
    assert_non_null(strstr(field(e, "summary"), "NC"));
    assert_non_null(strstr(field(e, "causes"), "DestinationRule"));
    assert_true(field(e, "next")[0] != '\0');
    json_decref(e);
    e = explain(503, "UF,URX", "upstream_reset_before_response_started{connection_failure}");
    assert_non_null(strstr(field(e, "text"), "UF"));
    json_decref(e);
    e = explain(403, "-", "rbac_access_denied_matched_policy[ns[foo]-policy[deny]-rule[0]]");
    assert_non_null(strstr(field(e, "text"), "AuthorizationPolicy"));
    json_decref(e);
    e = explain(500, "-", "via_upstream");
    assert_true(field(e, "summary")[0] != '\0');
    json_decref(e);
    e = explain(418, "XYZ", "something_new");
    assert_true(field(e, "summary")[0] != '\0');
    json_decref(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_explain)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
