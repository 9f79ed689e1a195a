/*
 * test_dns_refresh.c - proxy/server/dns_refresh.h: dns_lookup_family's choice among
 * getaddrinfo's answers (Envoy's AUTO, V4_PREFERRED, V4_ONLY), the cache of a snapshot's names
 * (kept while used, dropped when a snapshot no longer uses them, a failed name not looked up
 * again on the next snapshot), and the refresh rounds on a loop (lookups run, an unchanged
 * answer is no change, close frees with lookups and the timer still out). Numeric names only:
 * getaddrinfo answers them without DNS. The refresh of a name whose address changes is
 * tests/integration/test_proxy_dns_refresh.py.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/server/dns_refresh.h"

static struct sockaddr_in v4;
static struct sockaddr_in6 v6;

static void lists(struct addrinfo *a4, struct addrinfo *a6)
{
    memset(&v4, 0, sizeof(v4));
    v4.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.2", &v4.sin_addr);
    memset(&v6, 0, sizeof(v6));
    v6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::1", &v6.sin6_addr);
    *a4 = (struct addrinfo){
        .ai_family = AF_INET, .ai_addr = (struct sockaddr *)&v4, .ai_addrlen = sizeof(v4)};
    *a6 = (struct addrinfo){
        .ai_family = AF_INET6, .ai_addr = (struct sockaddr *)&v6, .ai_addrlen = sizeof(v6)};
}

static void test_family_choice(void **state)
{
    (void)state;
    struct addrinfo a4, a6;
    lists(&a4, &a6);
    /* IPv4 first, then IPv6 */
    a4.ai_next = &a6;
    assert_ptr_equal(wp_dns_pick(&a4, WP_DNS_AUTO), &a6); /* AUTO prefers IPv6 */
    assert_ptr_equal(wp_dns_pick(&a4, WP_DNS_V4_PREFERRED), &a4);
    assert_ptr_equal(wp_dns_pick(&a4, WP_DNS_V4_ONLY), &a4);
    /* IPv6 first, then IPv4 */
    a4.ai_next = NULL;
    a6.ai_next = &a4;
    assert_ptr_equal(wp_dns_pick(&a6, WP_DNS_AUTO), &a6);
    assert_ptr_equal(wp_dns_pick(&a6, WP_DNS_V4_PREFERRED), &a4);
    /* one family only */
    a6.ai_next = NULL;
    assert_ptr_equal(wp_dns_pick(&a6, WP_DNS_V4_PREFERRED), &a6); /* falls back */
    assert_null(wp_dns_pick(&a6, WP_DNS_V4_ONLY));                /* never IPv6 */
    assert_ptr_equal(wp_dns_pick(&a4, WP_DNS_AUTO), &a4);         /* falls back */
    assert_null(wp_dns_pick(NULL, WP_DNS_AUTO));
}

static int changes;
static void on_changed(void *ud)
{
    (void)ud;
    changes++;
}

static void test_snapshot_cache(void **state)
{
    (void)state;
    wp_dns_refresh *r = wp_dns_refresh_new(on_changed, NULL);
    assert_non_null(r);
    const wp_addr *a;
    wp_dns_refresh_begin(r);
    assert_int_equal(wp_dns_refresh_resolve(r, "127.0.0.7", 8080, WP_DNS_AUTO, &a), 1);
    assert_string_equal(a[0].text, "127.0.0.7:8080");
    assert_int_equal(wp_dns_refresh_resolve(r, "::1", 9, WP_DNS_V4_ONLY, &a), 0); /* no IPv4 */
    assert_int_equal(wp_dns_refresh_resolve(r, "::1", 9, WP_DNS_AUTO, &a), 1);
    assert_string_equal(a[0].text, "[::1]:9");
    wp_dns_refresh_end(r, 5000);
    assert_int_equal(wp_dns_refresh_stats(r).names, 3);
    /* the next snapshot uses one of them: the others go */
    wp_dns_refresh_begin(r);
    assert_int_equal(wp_dns_refresh_resolve(r, "127.0.0.7", 8080, WP_DNS_AUTO, &a), 1);
    assert_string_equal(a[0].text, "127.0.0.7:8080"); /* the cached answer */
    wp_dns_refresh_end(r, 5000);
    assert_int_equal(wp_dns_refresh_stats(r).names, 1);
    assert_int_equal(wp_dns_refresh_stats(r).lookups, 0); /* no loop: no refresh */
    wp_dns_refresh_close(r);                               /* no loop: freed at once */
}

static void on_stop(uv_timer_t *t)
{
    wp_dns_refresh_close(t->data);
    uv_close((uv_handle_t *)t, NULL);
}

static void test_refresh_rounds(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_dns_refresh *r = wp_dns_refresh_new(on_changed, NULL);
    assert_non_null(r);
    const wp_addr *a;
    wp_dns_refresh_begin(r);
    assert_int_equal(wp_dns_refresh_resolve(r, "127.0.0.9", 80, WP_DNS_V4_PREFERRED, &a), 1);
    wp_dns_refresh_end(r, 10);
    assert_int_equal(wp_dns_refresh_set_loop(r, &loop), 0);
    changes = 0;
    uv_timer_t stop;
    uv_timer_init(&loop, &stop);
    stop.data = r;
    uv_timer_start(&stop, on_stop, 200, 0);
    wp_dns_refresh_counts before_close = {0};
    /* run until the stop timer closed everything: every handle and request finished */
    while (uv_run(&loop, UV_RUN_ONCE) != 0)
        if (uv_is_active((uv_handle_t *)&stop))
            before_close = wp_dns_refresh_stats(r);
    assert_true(before_close.lookups >= 3); /* a round every 10 ms for 200 ms */
    assert_int_equal(before_close.changes, 0);
    assert_int_equal(changes, 0); /* the same answer is no change */
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_choice),
        cmocka_unit_test(test_snapshot_cache),
        cmocka_unit_test(test_refresh_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
