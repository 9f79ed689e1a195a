/*
 * test_debug_query.c - the monitoring server's query parameters (pilot/debug.h
 * wf_debug_query_get): decoded as Go's url.ParseQuery (%XX, '+' as a space), as istiod reads
 * them; a malformed escape leaves the value as it came (with its '%', which every validating
 * endpoint refuses); absent vs empty; truncation keeps the head.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pilot/debug.h"

static void test_percent_and_plus_decoded(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(wf_debug_query_get("window=%36%30", "window", b, sizeof b), "60");
    assert_string_equal(
        wf_debug_query_get("a=1&proxyID=catalog-v1-0.shop%2Ebar", "proxyID", b, sizeof b),
        "catalog-v1-0.shop.bar");
    assert_string_equal(wf_debug_query_get("workload=a+b%2Bc", "workload", b, sizeof b), "a b+c");
    assert_string_equal(wf_debug_query_get("x=%4a%4A", "x", b, sizeof b), "JJ");
}

static void test_malformed_escape_kept_raw(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(wf_debug_query_get("window=%6", "window", b, sizeof b), "%6");
    assert_string_equal(wf_debug_query_get("window=6%zz", "window", b, sizeof b), "6%zz");
    assert_string_equal(wf_debug_query_get("n=a%00b", "n", b, sizeof b), "a%00b");
    assert_string_equal(wf_debug_query_get("n=%", "n", b, sizeof b), "%");
}

static void test_absent_empty_truncated(void **state)
{
    (void)state;
    char b[4];
    assert_null(wf_debug_query_get("namespace=x", "name", b, sizeof b));
    assert_null(wf_debug_query_get("", "name", b, sizeof b));
    assert_string_equal(wf_debug_query_get("a&name&b=1", "name", b, sizeof b), "");
    assert_string_equal(wf_debug_query_get("name=", "name", b, sizeof b), "");
    assert_string_equal(wf_debug_query_get("name=abcdef", "name", b, sizeof b), "abc");
    assert_string_equal(wf_debug_query_get("name=%61bcdef", "name", b, sizeof b), "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percent_and_plus_decoded),
        cmocka_unit_test(test_malformed_escape_kept_raw),
        cmocka_unit_test(test_absent_empty_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
