/*
 * test_xff.c - x-forwarded-for parsing (src/proxy/xff.c): the entry picked from the right as
 * Envoy's getLastAddressFromXFF does (spaces trimmed, invalid entries refused), the address
 * format ("ip:0", "[v6]:0"), and the peer IP as the header carries it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/xff.h"

static void pick_ok(const char *xff, uint32_t skip, const char *want)
{
    char out[WP_XFF_ADDR_MAX];
    if (wp_xff_pick(xff, strlen(xff), skip, out) != 0)
        fail_msg("'%s' skip %u: refused, want %s", xff, skip, want);
    assert_string_equal(out, want);
}

static void pick_fails(const char *xff, uint32_t skip)
{
    char out[WP_XFF_ADDR_MAX] = "untouched";
    assert_int_equal(wp_xff_pick(xff, strlen(xff), skip, out), -1);
    assert_string_equal(out, "untouched");
}

static void test_pick(void **state)
{
    (void)state;
    pick_ok("1.2.3.4", 0, "1.2.3.4:0");
    pick_ok("1.2.3.4, 5.6.7.8", 0, "5.6.7.8:0");
    pick_ok("1.2.3.4,5.6.7.8", 1, "1.2.3.4:0");
    pick_ok(" 1.2.3.4 ,\t5.6.7.8 ", 1, "1.2.3.4:0");
    pick_ok("10.0.0.1, 2001:db8::1", 0, "[2001:db8::1]:0");
    pick_ok("a, b, 192.168.1.1, 10.1.1.1", 1, "192.168.1.1:0"); /* the left part is not read */
}

static void test_pick_refused(void **state)
{
    (void)state;
    pick_fails("", 0);
    pick_fails("1.2.3.4", 1);          /* not enough entries */
    pick_fails("1.2.3.4, unknown", 0); /* not an IP */
    pick_fails("1.2.3.4,", 0);         /* empty last entry */
    pick_fails("1.2.3.4:80", 0);       /* a port is not an IP */
    pick_fails("[2001:db8::1]", 0);    /* brackets are not part of the IP */
}

static void test_peer_ip(void **state)
{
    (void)state;
    const char *ip;
    size_t n;
    wp_xff_peer_ip("127.0.0.1:5000", &ip, &n);
    assert_int_equal(n, 9);
    assert_memory_equal(ip, "127.0.0.1", 9);
    wp_xff_peer_ip("[::1]:8080", &ip, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(ip, "::1", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_pick_refused),
        cmocka_unit_test(test_peer_ip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
