/*
 * test_buf_pool.c - a worker's read buffers (src/proxy/net/buf_pool.h): buffers reused from
 * the free list, bigger ones freed when put back, the list's bound, and the count of buffers
 * handed out and not back (what connections hold: an idle TLS connection holds none).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proxy/net/buf_pool.h"

static void test_reuse_and_count(void **state)
{
    (void)state;
    wp_buf_pool p = {0};
    wp_buf *a = wp_buf_pool_get(&p, 10);
    wp_buf *b = wp_buf_pool_get(&p, WP_BUF_SIZE);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->cap, WP_BUF_SIZE);
    assert_int_equal(p.nout, 2);
    wp_buf_pool_put(&p, a);
    assert_int_equal(p.nout, 1);
    assert_int_equal(p.nfree, 1);
    assert_ptr_equal(wp_buf_pool_get(&p, 100), a); /* from the free list */
    assert_int_equal(p.nout, 2);
    wp_buf *big = wp_buf_pool_get(&p, 3 * WP_BUF_SIZE); /* bigger: a new one */
    assert_non_null(big);
    assert_int_equal(big->cap, 3 * WP_BUF_SIZE);
    assert_int_equal(p.nout, 3);
    wp_buf_pool_put(&p, big); /* freed, not kept */
    assert_int_equal(p.nfree, 0);
    wp_buf_pool_put(&p, NULL);
    wp_buf_pool_put(&p, a);
    wp_buf_pool_put(&p, b);
    assert_int_equal(p.nout, 0);
    assert_int_equal(p.nfree, 2);
    wp_buf_pool_clear(&p);
    assert_int_equal(p.nfree, 0);
    assert_null(p.free);
}

static void test_free_list_bound(void **state)
{
    (void)state;
    wp_buf_pool p = {0};
    wp_buf *held[WP_BUF_POOL_MAX + 3];
    for (size_t i = 0; i < WP_BUF_POOL_MAX + 3; i++)
        assert_non_null(held[i] = wp_buf_pool_get(&p, 1));
    for (size_t i = 0; i < WP_BUF_POOL_MAX + 3; i++)
        wp_buf_pool_put(&p, held[i]);
    assert_int_equal(p.nfree, WP_BUF_POOL_MAX);
    assert_int_equal(p.nout, 0);
    wp_buf_pool_clear(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_count),
        cmocka_unit_test(test_free_list_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
