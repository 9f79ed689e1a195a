/*
 * test_bootstrap_tcp_proxy.c - envoy.filters.network.tcp_proxy in a listener's chain
 * (bootstrap_tcp_proxy.c, bootstrap_listener.c): Envoy's defaults (idle_timeout 1 h,
 * max_connect_attempts 1), cluster vs weighted_clusters, the chain's terminal filter and its
 * stat index, and errors that name the field (unimplemented ones refused by name).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "proxy/config/config.h"
#include "proxy/filters/network/metadata_exchange.h"

#define TP_TYPE "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
#define FPATH   "t.json: static_resources.listeners[0].filter_chains[0].filters[0].typed_config"

/* A bootstrap with one listener whose chain is [extra filters..., tcp_proxy {tc}] and clusters
 * "a" and "b". */
static char *bs_text(const char *tc, const char *before)
{
    char *out = NULL;
    int n = asprintf(
        &out,
        "{\"static_resources\": {\"clusters\": ["
        "{\"name\": \"a\", \"type\": \"STATIC\", \"load_assignment\": {\"cluster_name\": \"a\"}},"
        "{\"name\": \"b\", \"type\": \"STATIC\", \"load_assignment\": {\"cluster_name\": \"b\"}}],"
        "\"listeners\": [{\"address\": {\"socket_address\": {\"address\": \"127.0.0.1\", "
        "\"port_value\": 1}}, \"filter_chains\": [{\"filters\": [%s{\"name\": "
        "\"envoy.filters.network.tcp_proxy\", \"typed_config\": {\"@type\": \"" TP_TYPE
        "\", %s}}]}]}]}}",
        before, tc);
    assert_true(n > 0);
    return out;
}

static wp_config *load(const char *tc)
{
    char *text = bs_text(tc, "");
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    free(text);
    return c;
}

static void expect_error(const char *tc, const char *want)
{
    char *text = bs_text(tc, "");
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

static void test_defaults_and_cluster(void **state)
{
    (void)state;
    wp_config *c = load("\"stat_prefix\": \"in\", \"cluster\": \"b\"");
    const wp_filter_chain *fc = &c->listeners[0].chains[0];
    assert_null(fc->hcm);
    assert_non_null(fc->tcp);
    assert_int_equal(fc->nfilters, 1);
    assert_int_equal(fc->filters[0].kind, WP_NF_TCP_PROXY);
    assert_ptr_equal(fc->filters[0].config, fc->tcp);
    assert_string_equal(fc->tcp->stat_prefix, "in");
    assert_int_equal(fc->tcp->cluster, 1);
    assert_int_equal(fc->tcp->idle_timeout_ms, 3600000); /* Envoy's 1 h */
    assert_int_equal(fc->tcp->max_connect_attempts, 1);
    assert_int_equal(fc->tcp->max_downstream_connection_duration_ms, 0);
    assert_int_equal(c->ntcps, 1);
    assert_int_equal(c->nhcms, 0);
    assert_ptr_equal(c->tcps[0], fc->tcp);
    wp_config_unref(c);
}

static void test_fields(void **state)
{
    (void)state;
    wp_config *c =
        load("\"statPrefix\": \"w\", \"weightedClusters\": {\"clusters\": ["
             "{\"name\": \"a\", \"weight\": 3}, {\"name\": \"missing\", \"weight\": 1}]}, "
             "\"idleTimeout\": \"0s\", \"maxConnectAttempts\": 3, "
             "\"maxDownstreamConnectionDuration\": \"2.5s\"");
    const wp_tcp_proxy *t = c->listeners[0].chains[0].tcp;
    assert_null(t->cluster_name);
    assert_int_equal(t->nweighted, 2);
    assert_int_equal(t->weighted[0].cluster, 0);
    assert_int_equal(t->weighted[1].cluster, -1); /* kept: NC when picked */
    assert_int_equal(t->total_weight, 4);
    assert_int_equal(t->idle_timeout_ms, 0); /* 0s disables */
    assert_int_equal(t->max_connect_attempts, 3);
    assert_int_equal(t->max_downstream_connection_duration_ms, 2500);
    wp_config_unref(c);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("\"cluster\": \"a\"",
                 FPATH ".stat_prefix: value length must be at least 1 characters");
    expect_error("\"stat_prefix\": \"x\"",
                 FPATH ": cluster_specifier: one of cluster or weighted_clusters is required");
    expect_error("\"stat_prefix\": \"x\", \"cluster\": \"a\", \"weighted_clusters\": "
                 "{\"clusters\": [{\"name\": \"a\", \"weight\": 1}]}",
                 FPATH ": only one of cluster and weighted_clusters may be set");
    expect_error("\"stat_prefix\": \"x\", \"weighted_clusters\": {\"clusters\": [{\"name\": "
                 "\"a\", \"weight\": 0}]}",
                 FPATH ".weighted_clusters.clusters[0].weight: value must be greater than or "
                       "equal to 1");
    expect_error("\"stat_prefix\": \"x\", \"weighted_clusters\": {\"clusters\": [{\"name\": "
                 "\"a\", \"weight\": 1, \"metadata_match\": {}}]}",
                 FPATH ".weighted_clusters.clusters[0].metadata_match: not supported by "
                       "weft-proxy (subset load balancing is not implemented)");
    expect_error("\"stat_prefix\": \"x\", \"cluster\": \"a\", \"hash_policy\": [{\"source_ip\": "
                 "{}}]",
                 FPATH ".hash_policy: not supported by weft-proxy (no hash-based load balancer "
                       "(ring hash, Maglev))");
    expect_error("\"stat_prefix\": \"x\", \"cluster\": \"a\", \"max_connect_attempts\": 0",
                 FPATH ".max_connect_attempts: value must be greater than or equal to 1");
    expect_error("\"stat_prefix\": \"x\", \"cluster\": \"a\", \"idle_timeout\": \"soon\"",
                 FPATH ".idle_timeout: invalid duration (expected a string like \"5s\" or "
                       "\"0.250s\")");
}

static void test_terminal_position(void **state)
{
    (void)state;
    char *text = bs_text("\"stat_prefix\": \"x\", \"cluster\": \"a\"",
                         "{\"name\": \"envoy.filters.network.tcp_proxy\", \"typed_config\": "
                         "{\"@type\": \"" TP_TYPE "\", \"stat_prefix\": \"y\", \"cluster\": "
                         "\"a\"}}, ");
    wf_test_expect_bootstrap_error(
        text, "t.json: static_resources.listeners[0].filter_chains[0].filters[0].name: Error: "
              "terminal filter named envoy.filters.network.tcp_proxy of type "
              "envoy.filters.network.tcp_proxy must be the last filter in a network filter "
              "chain.");
    free(text);
}

/* istio.stats goes ahead of the TCP proxy as a network filter; the TCP metadata exchange is
 * istio.metadata_exchange (TCP) before them. */
static void test_istio_network_filters(void **state)
{
    (void)state;
    char *text = bs_text("\"stat_prefix\": \"x\", \"cluster\": \"a\"",
                         "{\"name\": \"istio.stats\", \"typed_config\": {\"@type\": "
                         "\"type.googleapis.com/stats.PluginConfig\"}}, ");
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_filter_chain *fc = &c->listeners[0].chains[0];
    assert_int_equal(fc->nfilters, 2);
    assert_int_equal(fc->filters[0].kind, WP_NF_ISTIO_STATS);
    assert_non_null(fc->filters[0].config);
    assert_int_equal(fc->filters[1].kind, WP_NF_TCP_PROXY);
    wp_config_unref(c);
    wf_strbuf_free(&err);
    free(text);
    /* the TCP metadata exchange as istiod writes it (TCPListenerMx: a TypedStruct) */
    text = bs_text("\"stat_prefix\": \"x\", \"cluster\": \"a\"",
                   "{\"name\": \"istio.metadata_exchange\", \"typed_config\": {\"@type\": "
                   "\"type.googleapis.com/udpa.type.v1.TypedStruct\", \"type_url\": "
                   "\"type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange\", "
                   "\"value\": {\"protocol\": \"istio-peer-exchange\", \"enable_discovery\": "
                   "true}}}, ");
    c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    fc = &c->listeners[0].chains[0];
    assert_int_equal(fc->nfilters, 2);
    assert_int_equal(fc->filters[0].kind, WP_NF_METADATA_EXCHANGE);
    const wp_tcp_mx_config *mc = fc->filters[0].config;
    assert_string_equal(mc->protocol, "istio-peer-exchange");
    assert_true(mc->preamble_len > 8); /* this node's header and Any */
    assert_int_equal(mc->preamble[0], 0x3D);
    wp_config_unref(c);
    free(text);
    text = bs_text("\"stat_prefix\": \"x\", \"cluster\": \"a\"",
                   "{\"name\": \"istio.metadata_exchange\"}, ");
    wf_test_expect_bootstrap_error(
        text, "t.json: static_resources.listeners[0].filter_chains[0].filters[0].typed_config: "
              "missing required field");
    free(text);
    text =
        bs_text("\"stat_prefix\": \"x\", \"cluster\": \"a\"",
                "{\"name\": \"istio.metadata_exchange\", \"typed_config\": {\"@type\": "
                "\"type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange\"}}, ");
    wf_test_expect_bootstrap_error(
        text, "t.json: static_resources.listeners[0].filter_chains[0].filters[0].typed_config."
              "protocol: value length must be at least 1 characters");
    free(text);
    wf_strbuf_free(&err);
}

/* A cluster's filters: its upstream istio.metadata_exchange (istiod's TCPClusterMx). */
static void test_cluster_mx(void **state)
{
    (void)state;
    const char *text =
        "{\"static_resources\": {\"clusters\": [{\"name\": \"a\", \"type\": \"STATIC\", "
        "\"load_assignment\": {\"cluster_name\": \"a\"}, \"filters\": [{\"name\": "
        "\"istio.metadata_exchange\", \"typed_config\": {\"@type\": "
        "\"type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange\", "
        "\"protocol\": \"istio-peer-exchange\"}}]}]}}";
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    assert_non_null(c->clusters[0].mx);
    assert_string_equal(c->clusters[0].mx->protocol, "istio-peer-exchange");
    wp_config_unref(c);
    wf_strbuf_free(&err);
    wf_test_expect_bootstrap_error(
        "{\"static_resources\": {\"clusters\": [{\"name\": \"a\", \"type\": \"STATIC\", "
        "\"load_assignment\": {\"cluster_name\": \"a\"}, \"filters\": [{\"name\": "
        "\"envoy.filters.network.rbac\"}]}]}}",
        "t.json: static_resources.clusters[0].filters[0].name: unsupported upstream network "
        "filter \"envoy.filters.network.rbac\" (supported: istio.metadata_exchange, "
        "envoy.filters.network.upstream.metadata_exchange)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_cluster),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_terminal_position),
        cmocka_unit_test(test_istio_network_filters),
        cmocka_unit_test(test_cluster_mx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
