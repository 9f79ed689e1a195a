/*
 * test_pilot_sniff.c - Istio's protocol sniffing in pilot's listeners (pilot/sniff.h, lds.h,
 * inbound.h; reference protocols.md §1.2, §1.4): an unnamed Service port gets an outbound
 * listener with the HTTP inspector, the HCM chain under {raw_buffer, [http/1.1, h2c]} and the
 * service's TCP chain as default_filter_chain; an http port gets Istio's PassthroughFilterChain
 * (BlackHoleCluster under REGISTRY_ONLY); ports 25/53/3306/27017 unnamed are TCP (no
 * inspector); MeshConfig protocolDetectionTimeout sets listener_filters_timeout; the inbound
 * listener of a sniffed target port carries Istio's chains per PeerAuthentication mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/meshcfg.h"
#include "harness.h"
#include "model/store.h"
#include "pilot/generate_internal.h"
#include "pilot/inbound.h"
#include "pilot/lds.h"

#define HOST "db.shop.svc.cluster.local"

static const char svc_yaml[] = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: db, namespace: shop}\n"
                               "spec:\n"
                               "  clusterIP: 10.0.0.7\n"
                               "  selector: {app: db}\n"
                               "  ports:\n"
                               "  - {port: 7000}\n"
                               "  - {name: http, port: 80}\n"
                               "  - {port: 25}\n"
                               "  - {port: 53}\n"
                               "  - {port: 3306}\n"
                               "  - {port: 27017}\n"
                               "---\n"
                               "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata: {name: db-1, namespace: shop, labels: {app: db}}\n"
                               "spec: {containers: [{name: db}]}\n"
                               "status: {podIP: 127.10.0.9}\n"
                               "---\n";

static json_t *by_name(json_t *arr, const char *name)
{
    size_t i;
    json_t *l;
    json_array_foreach(arr, i, l)
    {
        if (strcmp(json_string_value(json_object_get(l, "name")), name) == 0)
            return l;
    }
    fail_msg("no listener %s", name);
    return NULL;
}

static json_t *load_json(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad JSON in test: %s", e.text);
    return j;
}

static void expect_json(json_t *got, const char *want_text)
{
    json_t *want = load_json(want_text);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT);
        fail_msg("got %s\nwant %s", g, want_text);
    }
    json_decref(want);
}

static json_t *outbound(const char *extra, const wf_lds_options *opt, wf_store **s)
{
    static char yaml[8192];
    snprintf(yaml, sizeof yaml, "%s%s", svc_yaml, extra ? extra : "");
    *s = wf_test_load_store(NULL, yaml, NULL);
    json_t *out = wf_lds_sidecar_outbound_listeners_opt(*s, opt);
    assert_non_null(out);
    return out;
}

#define HTTP_MATCH                                                                                 \
    "{\"transport_protocol\":\"raw_buffer\",\"application_protocols\":[\"http/1.1\",\"h2c\"]}"
#define HI_FILTER                                                                                  \
    "{\"name\":\"envoy.filters.listener.http_inspector\",\"typed_config\":{\"@type\":"             \
    "\"type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector\"}}"
#define STATS_OUT                                                                                  \
    "{\"name\":\"istio.stats\",\"typed_config\":{\"@type\":\"type.googleapis.com/udpa.type.v1."    \
    "TypedStruct\",\"type_url\":\"type.googleapis.com/stats.PluginConfig\",\"value\":{}}}"
#define TCP_PROXY(c)                                                                               \
    "{\"name\":\"envoy.filters.network.tcp_proxy\",\"typed_config\":{\"@type\":\"type."            \
    "googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy\",\"stat_prefix\":\"" c \
    "\",\"cluster\":\"" c "\"}}"

static void unnamed_port_outbound(void **state)
{
    (void)state;
    wf_store *s;
    const wf_lds_options o = {.proxy_ns = "shop"};
    json_t *out = outbound(NULL, &o, &s);
    json_t *l = by_name(out, "0.0.0.0_7000");
    expect_json(json_object_get(l, "listener_filters"), "[" HI_FILTER "]");
    wf_test_expect_str(l, "listener_filters_timeout", "0s");
    assert_true(json_is_true(json_object_get(l, "continue_on_listener_filters_timeout")));
    json_t *chains = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(chains), 1);
    expect_json(json_object_get(json_array_get(chains, 0), "filter_chain_match"), HTTP_MATCH);
    wf_test_expect_str(json_array_get(chains, 0), "filters.0.name",
                       "envoy.filters.network.http_connection_manager");
    wf_test_expect_str(json_array_get(chains, 0), "filters.0.typed_config.rds.route_config_name",
                       "7000");
    expect_json(json_object_get(l, "default_filter_chain"),
                "{\"filters\":[" STATS_OUT "," TCP_PROXY("outbound|7000||" HOST) "]}");
    /* Envoy's field order: the sniffing fields after the chains, the direction last */
    const char *key, *prev = NULL;
    json_t *v;
    json_object_foreach(l, key, v) prev = key;
    assert_string_equal(prev, "traffic_direction");
    /* ports Istio treats as TCP when unnamed: TCP listeners, no inspector */
    const char *tcp_ports[] = {"10.0.0.7_25", "10.0.0.7_53", "10.0.0.7_3306", "10.0.0.7_27017"};
    for (size_t i = 0; i < 4; i++) {
        json_t *t = by_name(out, tcp_ports[i]);
        assert_null(json_object_get(t, "listener_filters"));
        assert_null(json_object_get(t, "default_filter_chain"));
        wf_test_expect_str(t, "listener_filters_timeout", "0s");
        assert_true(json_is_true(json_object_get(t, "continue_on_listener_filters_timeout")));
        wf_test_expect_str(t, "filter_chains.0.filters.1.name", "envoy.filters.network.tcp_proxy");
    }
    json_decref(out);
    wf_store_free(s);
}

static void http_port_passthrough(void **state)
{
    (void)state;
    wf_store *s;
    wf_lds_options o = {.proxy_ns = "shop"};
    json_t *out = outbound(NULL, &o, &s);
    json_t *l = by_name(out, "0.0.0.0_80");
    expect_json(json_object_get(l, "listener_filters"), "[" HI_FILTER "]");
    expect_json(json_object_get(json_array_get(json_object_get(l, "filter_chains"), 0),
                                "filter_chain_match"),
                HTTP_MATCH);
    expect_json(
        json_object_get(l, "default_filter_chain"),
        "{\"filter_chain_match\":{},\"name\":\"PassthroughFilterChain\",\"filters\":[" STATS_OUT
        "," TCP_PROXY("PassthroughCluster") "]}");
    json_decref(out);
    wf_store_free(s);
    o.registry_only = true;
    out = outbound(NULL, &o, &s);
    wf_test_expect_str(by_name(out, "0.0.0.0_80"),
                       "default_filter_chain.filters.1.typed_config.cluster", "BlackHoleCluster");
    json_decref(out);
    wf_store_free(s);
}

/* A VirtualService tcp route of the sniffed service drives its default chain. */
static void vs_tcp_route(void **state)
{
    (void)state;
    wf_store *s;
    const wf_lds_options o = {.proxy_ns = "shop"};
    json_t *out = outbound("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: "
                           "{name: db, namespace: shop}\nspec:\n  hosts: [db]\n  tcp:\n  - route: "
                           "[{destination: {host: db, subset: v2, port: {number: 7000}}}]\n",
                           &o, &s);
    wf_test_expect_str(by_name(out, "0.0.0.0_7000"),
                       "default_filter_chain.filters.1.typed_config.cluster",
                       "outbound|7000|v2|" HOST);
    json_decref(out);
    wf_store_free(s);
}

static void detection_timeout(void **state)
{
    (void)state;
    wf_meshcfg *mesh = wf_meshcfg_new_default();
    assert_non_null(mesh);
    char *path = wf_test_temp_file("protocolDetectionTimeout: 250ms\n");
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_file(mesh, path, &err), 0);
    free(path);
    wf_store *s;
    const wf_lds_options o = {.proxy_ns = "shop", .mesh = mesh};
    json_t *out = outbound(NULL, &o, &s);
    wf_test_expect_str(by_name(out, "0.0.0.0_7000"), "listener_filters_timeout", "0.250s");
    wf_test_expect_str(by_name(out, "10.0.0.7_3306"), "listener_filters_timeout", "0s");
    json_decref(out);
    wf_store_free(s);
    wf_meshcfg_free(mesh);
}

/* An HTTP/1.0 proxy's sniffed chains also match "http/1.0" (first); MeshConfig access logs
 * reach the TCP proxy of the default chain. */
static void http10_and_access_log(void **state)
{
    (void)state;
    wf_store *s;
    const wf_lds_options o = {.proxy_ns = "shop"};
    json_t *out = wf_gen_accept_http10(outbound(NULL, &o, &s));
    assert_non_null(out);
    json_t *l = by_name(out, "0.0.0.0_7000");
    expect_json(wf_test_json_at(l, "filter_chains.0.filter_chain_match.application_protocols"),
                "[\"http/1.0\",\"http/1.1\",\"h2c\"]");
    wf_meshcfg *mesh = wf_meshcfg_new_default();
    char *path = wf_test_temp_file("accessLogFile: /dev/stdout\n");
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_file(mesh, path, &err), 0);
    free(path);
    assert_int_equal(wf_gen_access_logs(out, mesh), 0);
    wf_test_expect_str(l, "default_filter_chain.filters.1.typed_config.access_log.0.name",
                       "envoy.access_loggers.file");
    wf_test_expect_str(by_name(out, "0.0.0.0_80"),
                       "default_filter_chain.filters.1.typed_config.access_log.0.name",
                       "envoy.access_loggers.file");
    json_decref(out);
    wf_store_free(s);
    wf_meshcfg_free(mesh);
}

/* ---- inbound ---- */

static json_t *inbound_7000(const char *extra, wf_store **s)
{
    static char yaml[8192];
    snprintf(yaml, sizeof yaml, "%s%s", svc_yaml, extra ? extra : "");
    *s = wf_test_load_store(NULL, yaml, NULL);
    const wf_resource *pod = wf_store_find(*s, WF_KIND_POD, "shop", "db-1");
    assert_non_null(pod);
    const wf_inbound_options o = {
        .ns = "shop", .labels = &pod->labels, .pod = pod, .bind = "127.10.0.9"};
    json_t *out = wf_inbound_listeners(*s, &o);
    assert_non_null(out);
    json_t *l = json_incref(by_name(out, "127.10.0.9_7000"));
    json_decref(out);
    return l;
}

/* Each chain as "<transport>|<alpn,...>|<hcm or tcp>|<tls or ->". */
static void expect_chains(json_t *l, const char *const *want, size_t n)
{
    json_t *chains = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(chains), n);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(chains, i);
        json_t *m = json_object_get(c, "filter_chain_match");
        char buf[256];
        size_t k = (size_t)snprintf(buf, sizeof buf, "%s|",
                                    json_string_value(json_object_get(m, "transport_protocol")));
        json_t *a = json_object_get(m, "application_protocols");
        for (size_t j = 0; j < json_array_size(a); j++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", j ? "," : "",
                                  json_string_value(json_array_get(a, j)));
        json_t *fs = json_object_get(c, "filters");
        const char *last =
            json_string_value(json_object_get(json_array_get(fs, json_array_size(fs) - 1), "name"));
        snprintf(buf + k, sizeof buf - k, "|%s|%s",
                 strstr(last, "http_connection_manager") ? "hcm" : "tcp",
                 json_object_get(c, "transport_socket") ? "tls" : "-");
        assert_string_equal(buf, want[i]);
    }
}

static void inbound_permissive(void **state)
{
    (void)state;
    wf_store *s;
    json_t *l = inbound_7000(NULL, &s);
    static const char *const want[] = {
        "tls|istio-http/1.0,istio-http/1.1,istio-h2|hcm|tls",
        "raw_buffer|http/1.1,h2c|hcm|-",
        "tls|istio-peer-exchange,istio|tcp|tls",
        "raw_buffer||tcp|-",
        "tls||tcp|-",
    };
    expect_chains(l, want, 5);
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.tls_inspector");
    wf_test_expect_str(l, "listener_filters.1.name", "envoy.filters.listener.http_inspector");
    wf_test_expect_str(l, "listener_filters_timeout", "0s");
    assert_true(json_is_true(json_object_get(l, "continue_on_listener_filters_timeout")));
    wf_test_expect_str(l, "filter_chains.3.filters.0.name", "istio.metadata_exchange");
    wf_test_expect_str(l, "filter_chains.3.filters.2.typed_config.cluster", "inbound|7000||");
    json_decref(l);
    wf_store_free(s);
}

static void inbound_strict_and_disable(void **state)
{
    (void)state;
    wf_store *s;
    json_t *l = inbound_7000("apiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                             "metadata: {name: p, namespace: shop}\nspec: {mtls: {mode: STRICT}}\n",
                             &s);
    static const char *const strict[] = {
        "tls|istio-http/1.0,istio-http/1.1,istio-h2|hcm|tls",
        "tls||tcp|tls",
    };
    expect_chains(l, strict, 2);
    assert_int_equal(json_array_size(json_object_get(l, "listener_filters")), 1);
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.tls_inspector");
    json_decref(l);
    wf_store_free(s);
    l = inbound_7000("apiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                     "metadata: {name: p, namespace: shop}\nspec: {mtls: {mode: DISABLE}}\n",
                     &s);
    static const char *const disable[] = {
        "raw_buffer|http/1.1,h2c|hcm|-",
        "raw_buffer||tcp|-",
    };
    expect_chains(l, disable, 2);
    assert_int_equal(json_array_size(json_object_get(l, "listener_filters")), 1);
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.http_inspector");
    json_decref(l);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unnamed_port_outbound),
        cmocka_unit_test(http_port_passthrough),
        cmocka_unit_test(vs_tcp_route),
        cmocka_unit_test(detection_timeout),
        cmocka_unit_test(inbound_permissive),
        cmocka_unit_test(http10_and_access_log),
        cmocka_unit_test(inbound_strict_and_disable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
