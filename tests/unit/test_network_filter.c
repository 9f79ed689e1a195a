/*
 * test_network_filter.c - a connection's network filter chain (src/proxy/net/network_filter.c),
 * as Envoy's FilterManagerImpl: on_new_connection and on_data run the filters in order until
 * one stops; continue resumes after the filter that stopped; a full chain refuses more; and
 * on_close runs every filter's hook once; the network filter registry
 * (src/proxy/filters/network/registry.c) has ops for every kind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/filters/network/filters.h"
#include "proxy/net/network_filter.h"

typedef struct {
    char log[64];
    bool stop_data;
} flt;

static char trace[256];

static wp_nf_status on_new(wp_nf_filter *nf)
{
    const flt *f = nf->config;
    strcat(trace, f->log);
    strcat(trace, "+");
    return WP_NF_CONTINUE;
}

static wp_nf_status on_data(wp_nf_filter *nf, bool end)
{
    const flt *f = nf->config;
    strcat(trace, f->log);
    strcat(trace, end ? "!" : ".");
    return f->stop_data ? WP_NF_STOP_ITERATION : WP_NF_CONTINUE;
}

static void on_close(wp_nf_filter *nf)
{
    const flt *f = nf->config;
    strcat(trace, f->log);
    strcat(trace, "x");
}

static const wp_nf_ops OPS = {"fake", on_new, on_data, NULL};
static const wp_nf_ops CLOSING = {"closing", on_new, on_data, on_close};

/* on_close runs every filter's hook in order (none for a filter without one), once: the chain
 * is empty afterwards, so a close from inside a hook finds no filter to run. */
static void test_on_close(void **state)
{
    (void)state;
    flt a = {"a", false}, b = {"b", false}, c = {"c", false};
    wp_nf_chain ch;
    wp_nf_chain_init(&ch);
    wp_nf_chain_add(&ch, &CLOSING, &ch, &a);
    wp_nf_chain_add(&ch, &OPS, &ch, &b);
    wp_nf_chain_add(&ch, &CLOSING, &ch, &c);
    trace[0] = '\0';
    wp_nf_chain_on_close(&ch);
    assert_string_equal(trace, "axcx");
    trace[0] = '\0';
    wp_nf_chain_on_close(&ch);
    assert_int_equal(wp_nf_chain_on_data(&ch, false), WP_NF_CONTINUE);
    assert_string_equal(trace, "");
}

/* A filter's ctx is stored in the chain at once: a close its own on_new_connection causes
 * (a connect that fails at once) finds it in on_close, which frees it. */
static wp_nf_status on_new_closing(wp_nf_filter *nf)
{
    static int session;
    *nf->ctx = &session;
    *nf->state = 7;
    wp_nf_chain_on_close(nf->self);
    return WP_NF_STOP_ITERATION;
}

static void on_close_ctx(wp_nf_filter *nf)
{
    assert_non_null(*nf->ctx);
    assert_int_equal(*nf->state, 7);
    assert_ptr_equal(((wp_nf_chain *)nf->self)->self, nf->self);
    *nf->ctx = NULL;
    strcat(trace, "freed");
}

static void test_ctx_seen_by_a_nested_close(void **state)
{
    (void)state;
    static const wp_nf_ops SESSION = {"session", on_new_closing, NULL, on_close_ctx};
    wp_nf_chain ch;
    wp_nf_chain_init(&ch);
    wp_nf_chain_add(&ch, &SESSION, &ch, NULL);
    trace[0] = '\0';
    assert_int_equal(wp_nf_chain_on_new_connection(&ch), WP_NF_STOP_ITERATION);
    assert_string_equal(trace, "freed");
    assert_null(ch.ctx[0]);
}

static void test_order_and_stop(void **state)
{
    (void)state;
    flt a = {"a", false}, b = {"b", true}, c = {"c", false};
    wp_nf_chain ch;
    wp_nf_chain_init(&ch);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &ch, &a), 0);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &ch, &b), 0);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &ch, &c), 0);
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
        assert_int_equal(wp_nf_chain_add(&ch, &OPS, &ch, &a), 0);
    assert_int_equal(wp_nf_chain_add(&ch, &OPS, &ch, &a), -1);
}

/* Every kind the bootstrap can decode has its ops, under Envoy's filter name; an unknown
 * kind has none. */
static void test_registry(void **state)
{
    (void)state;
    for (int k = 0; k < WP_NF_KIND_COUNT_; k++) {
        const wp_nf_ops *o = wp_network_filter_ops((wp_nf_kind)k);
        assert_non_null(o);
        assert_non_null(o->on_new_connection);
        assert_non_null(o->on_data);
    }
    assert_string_equal(wp_network_filter_ops(WP_NF_HTTP_CONNECTION_MANAGER)->name,
                        "envoy.filters.network.http_connection_manager");
    assert_string_equal(wp_network_filter_ops(WP_NF_TCP_PROXY)->name,
                        "envoy.filters.network.tcp_proxy");
    assert_non_null(wp_network_filter_ops(WP_NF_TCP_PROXY)->on_close);
    assert_null(wp_network_filter_ops(WP_NF_KIND_COUNT_));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_stop),
        cmocka_unit_test(test_full_chain),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_on_close),
        cmocka_unit_test(test_ctx_seen_by_a_nested_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
