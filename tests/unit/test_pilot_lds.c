/*
 * test_pilot_lds.c - pilot/lds: a sidecar's outbound HTTP listeners from the book's catalog
 * (../shared/corpus/istioinaction/) and small inline Services: one listener per HTTP port,
 * names and addresses, the HTTP connection manager (stat prefix, RDS name, Istio's filter
 * order, envoy.filters.http.grpc_stats on gRPC ports), and agreement with the route configurations
 * of pilot/rds.
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
#include "model/store.h"
#include "pilot/lds.h"
#include "pilot/rds.h"

#define BOOK     "../shared/corpus/istioinaction/"
#define HCM_PATH "filter_chains.0.filters.0.typed_config"

static const char *const catalog_files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};

/* ---- helpers ---- */

static json_t *listeners(const wf_store *s)
{
    json_t *out = wf_lds_sidecar_outbound_listeners(s);
    assert_non_null(out);
    assert_true(json_is_array(out));
    return out;
}

/* ---- the book's catalog ---- */

static void catalog_listener(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(catalog_files, NULL, "istioinaction");
    json_t *out = listeners(s);
    assert_int_equal(json_array_size(out), 1);
    json_t *l = json_array_get(out, 0);
    wf_test_expect_str(l, "@type", "type.googleapis.com/envoy.config.listener.v3.Listener");
    wf_test_expect_str(l, "name", "0.0.0.0_80");
    wf_test_expect_str(l, "address.socket_address.address", "0.0.0.0");
    wf_test_expect_int(l, "address.socket_address.port_value", 80);
    wf_test_expect_str(l, "traffic_direction", "OUTBOUND");
    assert_int_equal(json_array_size(json_object_get(l, "filter_chains")), 1);
    assert_int_equal(json_array_size(wf_test_json_at(l, "filter_chains.0.filters")), 1);
    wf_test_expect_str(l, "filter_chains.0.filters.0.name",
                       "envoy.filters.network.http_connection_manager");
    json_t *h = wf_test_json_at(l, HCM_PATH);
    wf_test_expect_str(
        h, "@type",
        "type.googleapis.com/"
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager");
    wf_test_expect_str(h, "stat_prefix", "outbound_0.0.0.0_80");
    wf_test_expect_str(h, "rds.route_config_name", "80");
    assert_true(json_is_object(wf_test_json_at(h, "rds.config_source.ads")));
    assert_int_equal(json_object_size(wf_test_json_at(h, "rds.config_source.ads")), 0);
    wf_test_expect_str(h, "rds.config_source.resource_api_version", "V3");
    assert_null(json_object_get(h, "route_config"));
    assert_true(json_is_false(json_object_get(h, "use_remote_address")));
    assert_true(json_is_true(json_object_get(h, "normalize_path")));
    wf_test_expect_str(h, "path_with_escaped_slashes_action", "KEEP_UNCHANGED");
    wf_test_expect_str(h, "server_name", "istio-envoy");
    wf_test_expect_str(h, "stream_idle_timeout", "0s");
    assert_null(json_object_get(h, "forward_client_cert_details")); /* inbound only */
    assert_null(json_object_get(h, "access_log"));
    json_decref(out);
    wf_store_free(s);
}

static void filter_order(void **state)
{
    (void)state;
    static const char *const want[] = {"istio.metadata_exchange", "envoy.filters.http.fault",
                                       "envoy.filters.http.cors", "istio.stats",
                                       "envoy.filters.http.router"};
    wf_store *s = wf_test_load_store(catalog_files, NULL, "istioinaction");
    json_t *out = listeners(s);
    json_t *f = wf_test_json_at(json_array_get(out, 0), HCM_PATH ".http_filters");
    assert_int_equal(json_array_size(f), 5);
    for (size_t i = 0; i < 5; i++)
        wf_test_expect_str(json_array_get(f, i), "name", want[i]);
    json_t *mx = json_array_get(f, 0);
    wf_test_expect_str(mx, "typed_config.@type", "type.googleapis.com/udpa.type.v1.TypedStruct");
    wf_test_expect_str(mx, "typed_config.type_url",
                       "type.googleapis.com/io.istio.http.peer_metadata.Config");
    assert_non_null(wf_test_json_at(mx, "typed_config.value.upstream_discovery.0.istio_headers"));
    assert_non_null(
        wf_test_json_at(mx, "typed_config.value.upstream_discovery.1.workload_discovery"));
    assert_non_null(wf_test_json_at(mx, "typed_config.value.upstream_propagation.0.istio_headers"));
    assert_null(wf_test_json_at(mx, "typed_config.value.downstream_discovery"));
    wf_test_expect_str(json_array_get(f, 3), "typed_config.type_url",
                       "type.googleapis.com/stats.PluginConfig");
    assert_int_equal(json_object_size(wf_test_json_at(json_array_get(f, 3), "typed_config.value")),
                     0);
    wf_test_expect_str(json_array_get(f, 1), "typed_config.@type",
                       "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault");
    wf_test_expect_str(json_array_get(f, 4), "typed_config.@type",
                       "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router");
    json_decref(out);
    wf_store_free(s);
}

/* ---- ports ---- */

static const char shared_yaml[] = "apiVersion: v1\n"
                                  "kind: Service\n"
                                  "metadata: {name: reviews, namespace: default}\n"
                                  "spec:\n"
                                  "  ports:\n"
                                  "  - {name: http, port: 80}\n"
                                  "  - {name: http-api, port: 9080}\n"
                                  "---\n"
                                  "apiVersion: v1\n"
                                  "kind: Service\n"
                                  "metadata: {name: ratings, namespace: other}\n"
                                  "spec:\n"
                                  "  ports:\n"
                                  "  - {name: http-web, port: 9080}\n";

/* catalog:80, reviews:80 and :9080, ratings:9080 -> one listener per port, ascending. */
static void shared_port_one_listener(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(catalog_files, shared_yaml, "istioinaction");
    json_t *out = listeners(s);
    assert_int_equal(json_array_size(out), 2);
    wf_test_expect_str(json_array_get(out, 0), "name", "0.0.0.0_80");
    wf_test_expect_str(json_array_get(out, 1), "name", "0.0.0.0_9080");
    wf_test_expect_int(json_array_get(out, 1), "address.socket_address.port_value", 9080);
    wf_test_expect_str(json_array_get(out, 1), HCM_PATH ".stat_prefix", "outbound_0.0.0.0_9080");
    wf_test_expect_str(json_array_get(out, 1), HCM_PATH ".rds.route_config_name", "9080");
    json_decref(out);
    wf_store_free(s);
}

static const char tcp_yaml[] = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: db, namespace: default}\n"
                               "spec:\n"
                               "  ports:\n"
                               "  - {name: tcp-db, port: 5432}\n"
                               "  - {name: mongo, port: 27018}\n"
                               "  - {name: dns, port: 54, protocol: UDP}\n"
                               "  - {port: 3306}\n";

/* TCP ports get pilot/tcp.h's listeners (no HTTP connection manager), UDP none. */
static void tcp_ports_tcp_listeners(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, tcp_yaml, "default");
    json_t *out = listeners(s);
    assert_int_equal(json_array_size(out), 3);
    wf_test_expect_str(json_array_get(out, 0), "name", "0.0.0.0_5432");
    wf_test_expect_str(json_array_get(out, 1), "name", "0.0.0.0_27018");
    wf_test_expect_str(json_array_get(out, 2), "name", "0.0.0.0_3306");
    for (size_t i = 0; i < 3; i++)
        wf_test_expect_str(json_array_get(out, i), "filter_chains.0.filters.1.name",
                           "envoy.filters.network.tcp_proxy");
    json_decref(out);
    wf_store_free(s);
    assert_null(wf_lds_sidecar_outbound_listeners(NULL));
}

/* Every listener's RDS name is the name of one of rds.c's route configurations, in order. */
static void rds_names_match_route_configs(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(catalog_files, shared_yaml, "istioinaction");
    json_t *ls = listeners(s);
    json_t *rcs = wf_rds_sidecar_route_configs(s, NULL);
    assert_non_null(rcs);
    assert_int_equal(json_array_size(ls), json_array_size(rcs));
    for (size_t i = 0; i < json_array_size(ls); i++) {
        const char *rc = json_string_value(json_object_get(json_array_get(rcs, i), "name"));
        wf_test_expect_str(json_array_get(ls, i), HCM_PATH ".rds.route_config_name", rc);
    }
    json_decref(rcs);
    json_decref(ls);
    wf_store_free(s);
}

static const char grpc_yaml[] = "apiVersion: v1\n"
                                "kind: Service\n"
                                "metadata: {name: echo, namespace: default}\n"
                                "spec:\n"
                                "  ports:\n"
                                "  - {name: grpc, port: 7070}\n"
                                "  - {name: api, port: 7071, appProtocol: grpc}\n"
                                "  - {name: grpc-web, port: 7072}\n"
                                "  - {name: http, port: 7073}\n";

/* A gRPC port (name grpc / grpc-web, appProtocol grpc) gets Istio's xdsfilters.GrpcStats
 * before fault; an HTTP port does not. */
static void grpc_ports_grpc_stats(void **state)
{
    (void)state;
    static const char *const want[] = {"istio.metadata_exchange",
                                       "envoy.filters.http.grpc_stats",
                                       "envoy.filters.http.fault",
                                       "envoy.filters.http.cors",
                                       "istio.stats",
                                       "envoy.filters.http.router"};
    wf_store *s = wf_test_load_store(NULL, grpc_yaml, "default");
    json_t *out = listeners(s);
    assert_int_equal(json_array_size(out), 4);
    for (size_t l = 0; l < 3; l++) {
        json_t *f = wf_test_json_at(json_array_get(out, l), HCM_PATH ".http_filters");
        assert_int_equal(json_array_size(f), 6);
        for (size_t i = 0; i < 6; i++)
            wf_test_expect_str(json_array_get(f, i), "name", want[i]);
        json_t *tc = wf_test_json_at(json_array_get(f, 1), "typed_config");
        wf_test_expect_str(
            tc, "@type",
            "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig");
        assert_true(json_is_true(json_object_get(tc, "emit_filter_state")));
        assert_true(json_is_false(json_object_get(tc, "stats_for_all_methods")));
        assert_int_equal(json_object_size(tc), 3);
    }
    json_t *f = wf_test_json_at(json_array_get(out, 3), HCM_PATH ".http_filters");
    assert_int_equal(json_array_size(f), 5);
    wf_test_expect_str(json_array_get(f, 1), "name", "envoy.filters.http.fault");
    json_decref(out);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_listener),
        cmocka_unit_test(filter_order),
        cmocka_unit_test(shared_port_one_listener),
        cmocka_unit_test(tcp_ports_tcp_listeners),
        cmocka_unit_test(rds_names_match_route_configs),
        cmocka_unit_test(grpc_ports_grpc_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
