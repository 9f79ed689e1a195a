/*
 * test_envoy_fields.c - the Envoy message of a bootstrap/xDS object and its field names
 * (src/proxy/bootstrap/envoy_fields.c): the message by "@type" first, else by the JSON path
 * with array indexes dropped and its longest known ending; fields as Envoy's v3 protos name
 * them (oneof members and deprecated fields count, reserved names do not).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/bootstrap/envoy_fields.h"

#define HCM     "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define FILTER0 "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
#define ROUTE2  FILTER0 ".route_config.virtual_hosts[0].routes[2]"

static void expect_message(const char *path, const char *type_url, const char *want)
{
    const char *got = wp_envoy_message_at(path, type_url);
    if (!want) {
        if (got)
            fail_msg("%s: got %s, want none", path, got);
        return;
    }
    if (!got || strcmp(got, want) != 0)
        fail_msg("%s (@type %s): got %s, want %s", path, type_url ? type_url : "-",
                 got ? got : "none", want);
}

static void test_message_by_path(void **state)
{
    (void)state;
    expect_message("", NULL, "envoy.config.bootstrap.v3.Bootstrap");
    expect_message("static_resources", NULL, "envoy.config.bootstrap.v3.Bootstrap.StaticResources");
    expect_message("static_resources.listeners[3]", NULL, "envoy.config.listener.v3.Listener");
    expect_message("static_resources.listeners[0].address.socket_address", NULL,
                   "envoy.config.core.v3.SocketAddress");
    expect_message("admin.address", NULL, "envoy.config.core.v3.Address");
    expect_message(ROUTE2, NULL, "envoy.config.route.v3.Route");
    expect_message(ROUTE2 ".route", NULL, "envoy.config.route.v3.RouteAction");
    expect_message(ROUTE2 ".match", NULL, "envoy.config.route.v3.RouteMatch");
    expect_message(ROUTE2 ".match.headers[1].string_match", NULL,
                   "envoy.type.matcher.v3.StringMatcher");
    expect_message(ROUTE2 ".route.weighted_clusters.clusters[1]", NULL,
                   "envoy.config.route.v3.WeightedCluster.ClusterWeight");
    expect_message("static_resources.clusters[2]", NULL, "envoy.config.cluster.v3.Cluster");
    expect_message("static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[1]"
                   ".endpoint.address",
                   NULL, "envoy.config.core.v3.Address");
    expect_message("static_resources.clusters[0].circuit_breakers.thresholds[0]", NULL,
                   "envoy.config.cluster.v3.CircuitBreakers.Thresholds");
    /* a typed_config is known by its @type only */
    expect_message(FILTER0, NULL, NULL);
    expect_message("static_resources.listeners[0].something_else", NULL, NULL);
}

static void test_message_by_type(void **state)
{
    (void)state;
    expect_message(FILTER0, "type.googleapis.com/" HCM, HCM);
    expect_message(FILTER0 ".http_filters[0].typed_config",
                   "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
                   "envoy.extensions.filters.http.router.v3.Router");
    /* an xDS resource's @type wins over its place */
    expect_message("static_resources.clusters[0]",
                   "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                   "envoy.config.cluster.v3.Cluster");
    /* a type the table does not know falls back to the path */
    expect_message("static_resources.clusters[0]", "type.googleapis.com/udpa.type.v1.TypedStruct",
                   "envoy.config.cluster.v3.Cluster");
    expect_message(FILTER0, "type.googleapis.com/udpa.type.v1.TypedStruct", NULL);
}

static void test_fields(void **state)
{
    (void)state;
    assert_true(wp_envoy_message_has("envoy.config.listener.v3.Listener", "access_log"));
    assert_true(wp_envoy_message_has("envoy.config.core.v3.SocketAddress", "ipv4_compat"));
    assert_true(wp_envoy_message_has(HCM, "tracing"));
    assert_true(wp_envoy_message_has("envoy.config.route.v3.Route", "decorator"));
    assert_true(wp_envoy_message_has("envoy.config.route.v3.RouteAction", "hash_policy"));
    /* oneof members and deprecated fields count */
    assert_true(wp_envoy_message_has("envoy.config.core.v3.SocketAddress", "named_port"));
    assert_true(wp_envoy_message_has("envoy.config.cluster.v3.Cluster", "protocol_selection"));
    assert_true(wp_envoy_message_has("envoy.config.listener.v3.Listener", "deprecated_v1"));
    /* reserved names, misspellings, parts of names, other messages' fields do not */
    assert_false(wp_envoy_message_has("envoy.config.listener.v3.Filter", "config"));
    assert_false(wp_envoy_message_has("envoy.config.cluster.v3.Cluster", "hosts"));
    assert_false(wp_envoy_message_has("envoy.config.listener.v3.Listener", "acces_log"));
    assert_false(wp_envoy_message_has("envoy.config.listener.v3.Listener", "access"));
    assert_false(wp_envoy_message_has("envoy.config.listener.v3.Listener", "log"));
    assert_false(wp_envoy_message_has("envoy.config.listener.v3.Listener", ""));
    assert_false(wp_envoy_message_has("envoy.config.listener.v3.Listener", "hash_policy"));
    assert_false(wp_envoy_message_has("envoy.config.nothing.v3.Nothing", "name"));
    assert_false(wp_envoy_message_has(NULL, "name"));
}

/* Each path ending names a message the table lists: a field of it is known there, a made-up
 * name is not. */
static void test_every_message_listed(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"node", "user_agent_build_version"},
        {"node.locality", "sub_zone"},
        {"admin", "socket_options"},
        {"dynamic_resources", "lds_resources_locator"},
        {"dynamic_resources.cds_config", "api_config_source"},
        {"dynamic_resources.ads_config", "rate_limit_settings"},
        {"dynamic_resources.ads_config.grpc_services[0]", "google_grpc"},
        {"dynamic_resources.ads_config.grpc_services[0].envoy_grpc", "authority"},
        {"stats_config", "histogram_settings"},
        {FILTER0 ".access_log[0]", "filter"},
        {FILTER0 ".access_log[0].typed_config.log_format", "omit_empty_values"},
        {FILTER0 ".access_log[0].typed_config.log_format.text_format_source", "filename"},
        {FILTER0 ".common_http_protocol_options", "max_connection_duration"},
        {FILTER0 ".http_protocol_options", "header_key_format"},
        {FILTER0 ".set_current_client_cert_details", "chain"},
        {FILTER0 ".http_filters[1]", "is_optional"},
        {FILTER0 ".route_config", "vhds"},
        {FILTER0 ".route_config.virtual_hosts[0]", "rate_limits"},
        {ROUTE2 ".redirect", "strip_query"},
        {ROUTE2 ".direct_response", "status"},
        {ROUTE2 ".direct_response.body", "inline_bytes"},
        {ROUTE2 ".route.weighted_clusters", "runtime_key_prefix"},
        {ROUTE2 ".route.retry_policy", "retry_priority"},
        {ROUTE2 ".route.retry_policy.retry_back_off", "base_interval"},
        {ROUTE2 ".route.retry_policy.retry_host_predicate[0]", "typed_config"},
        {ROUTE2 ".route.retry_policy.retriable_headers[0]", "range_match"},
        {ROUTE2 ".route.request_mirror_policies[0]", "trace_sampled"},
        {ROUTE2 ".route.request_mirror_policies[0].runtime_fraction", "runtime_key"},
        {ROUTE2 ".route.request_mirror_policies[0].runtime_fraction.default_value", "numerator"},
        {ROUTE2 ".match.query_parameters[0]", "present_match"},
        {ROUTE2 ".match.safe_regex", "regex"},
        {ROUTE2 ".match.safe_regex.google_re2", "max_program_size"},
        {ROUTE2 ".route.regex_rewrite", "substitution"},
        {ROUTE2 ".route.regex_rewrite.pattern", "google_re2"},
        {ROUTE2 ".request_headers_to_add[0]", "append"},
        {ROUTE2 ".request_headers_to_add[0].header", "key"},
        {ROUTE2 ".metadata", "filter_metadata"},
        {"static_resources.clusters[0].outlier_detection", "success_rate_stdev_factor"},
        {"static_resources.clusters[0].common_lb_config", "update_merge_window"},
        {"static_resources.clusters[0].common_lb_config.healthy_panic_threshold", "value"},
        {"static_resources.clusters[0].circuit_breakers", "per_host_thresholds"},
        {"static_resources.clusters[0].load_assignment", "named_endpoints"},
        {"static_resources.clusters[0].load_assignment.policy", "drop_overloads"},
        {"static_resources.clusters[0].load_assignment.endpoints[0]", "proximity"},
        {"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0]",
         "endpoint_name"},
        {"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint",
         "hostname"},
        {"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint"
         ".health_check_config",
         "disable_active_health_check"},
        {"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint"
         ".address.pipe",
         "mode"},
        {"static_resources.clusters[0].typed_extension_protocol_options.x.explicit_http_config",
         "http3_protocol_options"},
        {"static_resources.clusters[0].typed_extension_protocol_options.x"
         ".use_downstream_protocol_config.http2_protocol_options",
         "hpack_table_size"},
        {"static_resources.clusters[0].transport_socket", "name"},
        {"static_resources.clusters[0].transport_socket_matches[0]", "match"},
        {"static_resources.clusters[0].transport_socket.typed_config.common_tls_context",
         "alpn_protocols"},
        {"static_resources.clusters[0].transport_socket.typed_config.common_tls_context"
         ".tls_params",
         "cipher_suites"},
        {"static_resources.clusters[0].transport_socket.typed_config.common_tls_context"
         ".tls_certificates[0]",
         "private_key"},
        {"static_resources.clusters[0].transport_socket.typed_config.common_tls_context"
         ".validation_context",
         "trusted_ca"},
        {"static_resources.clusters[0].transport_socket.typed_config.common_tls_context"
         ".validation_context.match_typed_subject_alt_names[0]",
         "san_type"},
        {"static_resources.listeners[0].listener_filters[0]", "filter_disabled"},
        {"static_resources.listeners[0].filter_chains[0]", "transport_socket_connect_timeout"},
        {"static_resources.listeners[0].default_filter_chain.filters[0]", "config_discovery"},
        {"static_resources.listeners[0].filter_chains[0].filter_chain_match", "suffix_len"},
        {"static_resources.listeners[0].filter_chains[0].filter_chain_match.prefix_ranges[0]",
         "prefix_len"},
        {"typed_per_filter_config.envoy.filters.http.fault.delay", "header_delay"},
        {"typed_per_filter_config.envoy.filters.http.fault.abort", "grpc_status"},
        {"typed_per_filter_config.envoy.filters.http.fault.abort.percentage", "denominator"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *m = wp_envoy_message_at(cases[i][0], NULL);
        if (!m || !wp_envoy_message_has(m, cases[i][1]))
            fail_msg("%s: message %s, field %s not known", cases[i][0], m ? m : "none",
                     cases[i][1]);
        assert_false(wp_envoy_message_has(m, "no_such_field_anywhere"));
    }
    static const char *const types[][2] = {
        {"envoy.extensions.filters.http.fault.v3.HTTPFault", "response_rate_limit"},
        {"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
         "enable_ja3_fingerprinting"},
        {"envoy.extensions.access_loggers.file.v3.FileAccessLog", "udp_proxy"},
        {"envoy.extensions.access_loggers.stream.v3.StdoutAccessLog", "log_format"},
        {"envoy.extensions.access_loggers.stream.v3.StderrAccessLog", "log_format"},
        {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "auto_config"},
        {"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext", "sni"},
        {"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
         "require_client_certificate"},
        {"envoy.config.endpoint.v3.ClusterLoadAssignment", "cluster_name"},
        {"envoy.config.route.v3.RouteConfiguration", "internal_only_headers"},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        char url[256];
        snprintf(url, sizeof(url), "type.googleapis.com/%s", types[i][0]);
        const char *m = wp_envoy_message_at("x.typed_config", url);
        if (!m || strcmp(m, types[i][0]) != 0 || !wp_envoy_message_has(m, types[i][1]))
            fail_msg("%s: message %s, field %s not known", url, m ? m : "none", types[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_by_path),
        cmocka_unit_test(test_message_by_type),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_every_message_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
