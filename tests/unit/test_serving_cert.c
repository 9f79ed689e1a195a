/*
 * test_serving_cert.c - weft-pilot's serving certificate DNS names (pilot/serving_cert.h):
 * istiod's getDNSNames for the default install, a revision, another namespace and
 * ISTIOD_CUSTOM_HOST.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pilot/serving_cert.h"

static void expect_names(const char *ns, const char *rev, const char *custom,
                         const char *const *want, size_t nwant)
{
    wf_serving_names n;
    assert_int_equal(wf_serving_names_make(ns, rev, custom, &n), 0);
    assert_int_equal(n.n, nwant);
    for (size_t i = 0; i < nwant; i++)
        assert_string_equal(n.v[i], want[i]);
    wf_serving_names_free(&n);
    assert_null(n.v);
    assert_int_equal(n.n, 0);
}

static void test_default(void **state)
{
    (void)state;
    static const char *const want[] = {"istio-pilot.istio-system.svc",
                                       "istiod-remote.istio-system.svc", "istiod.istio-system.svc"};
    expect_names(NULL, NULL, NULL, want, 3);
    expect_names("", "default", "", want, 3); /* "default" is no revision */
    expect_names("istio-system", "", NULL, want, 3);
}

static void test_revision(void **state)
{
    (void)state;
    static const char *const want[] = {"istio-pilot.istio-system.svc",
                                       "istiod-canary.istio-system.svc",
                                       "istiod-remote.istio-system.svc", "istiod.istio-system.svc"};
    expect_names(NULL, "canary", NULL, want, 4);
}

static void test_namespace(void **state)
{
    (void)state;
    static const char *const want[] = {"istio-pilot.mesh-cp.svc", "istiod-1-20.mesh-cp.svc",
                                       "istiod-remote.mesh-cp.svc", "istiod.mesh-cp.svc"};
    expect_names("mesh-cp", "1-20", NULL, want, 4);
}

static void test_custom_hosts(void **state)
{
    (void)state;
    /* comma-separated, empty items skipped, duplicates once, sorted with the known names */
    static const char *const want[] = {"a.example.com", "istio-pilot.istio-system.svc",
                                       "istiod-remote.istio-system.svc", "istiod.istio-system.svc",
                                       "z.example.com"};
    expect_names(NULL, NULL, "z.example.com,,a.example.com,istiod.istio-system.svc,", want, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_revision),
        cmocka_unit_test(test_namespace),
        cmocka_unit_test(test_custom_hosts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
