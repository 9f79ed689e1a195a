/*
 * test_xff.c - x-forwarded-for parsing (src/proxy/http/xff.c): the entry picked from the right as
 * Envoy's getLastAddressFromXFF does (spaces trimmed, invalid entries refused), the address
 * format ("ip:0", "[v6]:0"), the peer IP as the header carries it, repeated fields joined
 * into one as Envoy's header map does, and the internal-request decision
 * (Network::Utility::isInternalAddress, ConnectionManagerUtility::mutateRequestHeaders).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/xff.h"

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

#define HDR(n, v)                                                                                  \
    (h1_header)                                                                                    \
    {                                                                                              \
        .name = {n, sizeof(n) - 1}, .value = { v, sizeof(v) - 1 }                                  \
    }

static void assert_str(h1_str s, const char *want)
{
    if (s.len != strlen(want) || memcmp(s.p, want, s.len) != 0)
        fail_msg("got '%.*s', want '%s'", (int)s.len, s.p, want);
}

static void test_join(void **state)
{
    (void)state;
    h1_header h[] = {HDR("host", "a"),
                     HDR("X-Forwarded-For", "1.1.1.1"),
                     HDR("accept", "*/*"),
                     HDR("x-forwarded-for", ""),
                     HDR("x-forwarded-for", "2.2.2.2, 3.3.3.3"),
                     HDR("user-agent", "t")};
    size_t n = 6;
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(wp_xff_join(h, &n, &b), 1);
    assert_int_equal(n, 4);
    assert_str(h[1].value, "1.1.1.1,2.2.2.2, 3.3.3.3"); /* "," as Envoy, the empty one skipped */
    assert_str(h[0].name, "host");
    assert_str(h[2].name, "accept");
    assert_str(h[3].name, "user-agent");
    /* the buffer is reused: a later request's join resets it */
    h1_header h2[] = {HDR("x-forwarded-for", ""), HDR("x-forwarded-for", "9.9.9.9")};
    n = 2;
    assert_int_equal(wp_xff_join(h2, &n, &b), 0);
    assert_int_equal(n, 1);
    assert_str(h2[0].value, "9.9.9.9");
    wf_strbuf_free(&b);
}

static void test_join_single_or_none(void **state)
{
    (void)state;
    wf_strbuf b = WF_STRBUF_INIT;
    h1_header one[] = {HDR("a", "1"), HDR("x-forwarded-for", "1.1.1.1")};
    size_t n = 2;
    assert_int_equal(wp_xff_join(one, &n, &b), 1);
    assert_int_equal(n, 2);
    assert_str(one[1].value, "1.1.1.1");
    assert_null(b.data); /* a single field is left where it is: no copy */
    h1_header none[] = {HDR("a", "1")};
    n = 1;
    assert_int_equal(wp_xff_join(none, &n, &b), -1);
    assert_int_equal(n, 1);
}

static void test_internal_address(void **state)
{
    (void)state;
    static const char *const internal[] = {"10.0.0.1",   "10.255.255.255", "172.16.0.1",
                                           "172.31.9.9", "192.168.1.1",    "127.0.0.1",
                                           "fd00::1",    "fdff:1::2",      "::1"};
    static const char *const external[] = {"8.8.8.8",   "172.15.0.1", "172.32.0.1", "192.169.0.1",
                                           "127.0.0.2", "11.0.0.1",   "fc00::1",    "2001:db8::1",
                                           "::",        "unknown",    "",           "10.0.0.1:80"};
    for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
        if (!wp_xff_is_internal(internal[i], strlen(internal[i])))
            fail_msg("%s: not internal", internal[i]);
    for (size_t i = 0; i < sizeof(external) / sizeof(external[0]); i++)
        if (wp_xff_is_internal(external[i], strlen(external[i])))
            fail_msg("%s: internal", external[i]);
}

static bool internal_rq(bool use_remote, uint32_t hops, const char *xff, const char *peer)
{
    h1_str v = {xff, xff ? strlen(xff) : 0};
    return wp_xff_internal_request(use_remote, hops, xff ? &v : NULL, peer, strlen(peer));
}

static void test_internal_request(void **state)
{
    (void)state;
    /* use_remote_address: the peer decides, and only when no x-forwarded-for arrived */
    assert_true(internal_rq(true, 0, NULL, "10.1.2.3"));
    assert_true(internal_rq(true, 1, NULL, "127.0.0.1"));
    assert_false(internal_rq(true, 0, NULL, "8.8.8.8"));
    assert_false(internal_rq(true, 0, "10.0.0.1", "10.1.2.3"));
    /* without it: exactly one x-forwarded-for entry, an internal address, no trusted hops */
    assert_true(internal_rq(false, 0, " 10.0.0.1 ", "8.8.8.8"));
    assert_true(internal_rq(false, 0, "fd00::5", "8.8.8.8"));
    assert_false(internal_rq(false, 0, NULL, "127.0.0.1")); /* Istio's sidecars: external */
    assert_false(internal_rq(false, 0, "10.0.0.1,10.0.0.2", "127.0.0.1"));
    assert_false(internal_rq(false, 1, "10.0.0.1", "127.0.0.1"));
    assert_false(internal_rq(false, 0, "8.8.8.8", "127.0.0.1"));
    assert_false(internal_rq(false, 0, "", "127.0.0.1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_pick_refused),
        cmocka_unit_test(test_peer_ip),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_join_single_or_none),
        cmocka_unit_test(test_internal_address),
        cmocka_unit_test(test_internal_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
