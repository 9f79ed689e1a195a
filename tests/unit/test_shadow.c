/*
 * test_shadow.c - the shadow Host of request mirroring (src/proxy/filters/http/shadow.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/filters/http/shadow.h"

static void check(const char *in, const char *want)
{
    char out[64];
    size_t n = wp_shadow_host(in, strlen(in), out, sizeof(out));
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
}

static void test_suffix_before_port(void **state)
{
    (void)state;
    check("catalog", "catalog-shadow");
    check("catalog:8080", "catalog-shadow:8080");
    check("catalog.shop.svc.cluster.local:80", "catalog.shop.svc.cluster.local-shadow:80");
    check("[::1]:8080", "[::1]-shadow:8080");
    check("", "-shadow");
}

static void test_too_long(void **state)
{
    (void)state;
    char out[10];
    assert_int_equal(wp_shadow_host("abcdef", 6, out, sizeof(out)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_suffix_before_port),
                                       cmocka_unit_test(test_too_long)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
