/*
 * test_network_filter.c - a connection's network filter chain (src/proxy/net/network_filter.c),
 * as Envoy's FilterManagerImpl: on_new_connection and on_data run the filters in order until
 * one stops; continue resumes after the filter that stopped; a full chain refuses more.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/net/network_filter.h"

typedef struct {
    char log[64];
    bool stop_data;
} flt;

static char trace[256];

static wp_nf_status on_new(void *self)
{
    flt *f = self;
    strcat(trace, f->log);
    strcat(trace, "+");
    return WP_NF_CONTINUE;
}

static wp_nf_status on_data(void *self, bool end)
{
    flt *f = self;
    strcat(trace, f->log);
    strcat(trace, end ? "!" : ".");
    return f->stop_data ? WP_NF_STOP_ITERATION : WP_NF_CONTINUE;
}

static const wp_nf_ops OPS = {"fake", on_new, on_data};

static void test_order_and_stop(void **state)
{
    (void)state;
    flt a = {"a", false}, b = {"b", true}, c = {"c", false};
    wp_nf_chain ch;
    wp_nf_chain_init(&ch);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &a), 0);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &b), 0);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &c), 0);
    trace[0] = '\0';
    assert_int_equal(wp_nf_chain_on_new_connection(&ch), WP_NF_CONTINUE);
    assert_string_equal(trace, "a+b+c+");
    trace[0] = '\0';
    assert_int_equal(wp_nf_chain_on_data(&ch, false), WP_NF_STOP_ITERATION);
    assert_string_equal(trace, "a.b."); /* c does not see the bytes b stopped */
    trace[0] = '\0';
    assert_int_equal(wp_nf_chain_continue(&ch, true), WP_NF_CONTINUE);
    assert_string_equal(trace, "c!");
    trace[0] = '\0';
    assert_int_equal(wp_nf_chain_continue(&ch, true), WP_NF_CONTINUE); /* nothing stopped */
    assert_string_equal(trace, "");
}

static void test_full_chain(void **state)
{
    (void)state;
    flt a = {"a", false};
    wp_nf_chain ch;
    wp_nf_chain_init(&ch);
    for (int i = 0; i < WP_NF_MAX; i++)
        assert_int_equal(wp_nf_chain_add(&ch, &OPS, &a), 0);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &a), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_stop),
        cmocka_unit_test(test_full_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
