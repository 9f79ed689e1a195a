/*
 * test_pilot_cds.c - pilot/cds and pilot/naming: a sidecar's clusters from the book's catalog
 * manifests (../shared/corpus/istioinaction/) and from small inline DestinationRules: Istio's
 * names (subset clusters only for defined subsets), defaults, trafficPolicy mapping, merge
 * order (portLevelSettings, subsets) and which DestinationRule applies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "model/store.h"
#include "pilot/cds.h"
#include "pilot/naming.h"

#define BOOK      "../shared/corpus/istioinaction/"
#define CATALOG   "catalog.istioinaction.svc.cluster.local"
#define DR_CONFIG "/apis/networking.istio.io/v1/namespaces/istioinaction/destination-rule/catalog"

/* ---- helpers ---- */

static json_t *clusters(const wf_store *s, const char *proxy_ns)
{
    wf_cds_options opt = {.proxy_ns = proxy_ns};
    json_t *out = wf_cds_sidecar_clusters(s, &opt);
    assert_non_null(out);
    assert_true(json_is_array(out));
    return out;
}

static json_t *find(json_t *arr, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    }
    return NULL;
}

static json_t *must(json_t *arr, const char *name)
{
    json_t *c = find(arr, name);
    if (!c)
        fail_msg("no cluster %s", name);
    return c;
}

static const char *const catalog_files[] = {BOOK "services/catalog/kubernetes/catalog.yaml",
                                            BOOK "ch10/catalog-deployment-v2.yaml", NULL};
static const char *const catalog_dr_files[] = {
    BOOK "services/catalog/kubernetes/catalog.yaml", BOOK "ch10/catalog-deployment-v2.yaml",
    BOOK "ch10/catalog-destinationrule-v1-v2.yaml", NULL};

/* ---- the book's catalog ---- */

static void catalog_without_dr(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, NULL, "istioinaction");
    json_t *out = clusters(s, "istioinaction");
    assert_int_equal(json_array_size(out), 3);
    wf_test_expect_str(json_array_get(out, 0), "name", "outbound|80||" CATALOG);
    wf_test_expect_str(json_array_get(out, 1), "name", "BlackHoleCluster");
    wf_test_expect_str(json_array_get(out, 2), "name", "PassthroughCluster");
    assert_null(find(out, "outbound|80|version-v1|" CATALOG));
    assert_null(find(out, "outbound|80|version-v2|" CATALOG));
    assert_null(wf_test_json_at(json_array_get(out, 0), "metadata.filter_metadata.istio.config"));
    /* applyMetadataExchange: the upstream istio.metadata_exchange (TCPClusterMx) */
    json_t *mx = wf_test_json_at(json_array_get(out, 0), "filters");
    assert_int_equal(json_array_size(mx), 1);
    wf_test_expect_str(mx, "0.name", "istio.metadata_exchange");
    wf_test_expect_str(mx, "0.typed_config.type_url",
                       "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange");
    wf_test_expect_str(mx, "0.typed_config.value.protocol", "istio-peer-exchange");
    json_decref(out);
    wf_store_free(s);
}

static void catalog_with_dr(void **state)
{
    wf_store *s = wf_test_load_store(catalog_dr_files, NULL, "istioinaction");
    json_t *out = clusters(s, "istioinaction");
    assert_int_equal(json_array_size(out), 5);
    wf_test_expect_str(json_array_get(out, 0), "name", "outbound|80||" CATALOG);
    wf_test_expect_str(json_array_get(out, 1), "name", "outbound|80|version-v1|" CATALOG);
    wf_test_expect_str(json_array_get(out, 2), "name", "outbound|80|version-v2|" CATALOG);
    json_t *v2 = json_array_get(out, 2);
    wf_test_expect_str(v2, "eds_cluster_config.service_name", "outbound|80|version-v2|" CATALOG);
    wf_test_expect_str(v2, "metadata.filter_metadata.istio.config", DR_CONFIG);
    wf_test_expect_str(v2, "metadata.filter_metadata.istio.subset", "version-v2");
    wf_test_expect_str(json_array_get(out, 0), "metadata.filter_metadata.istio.config", DR_CONFIG);
    assert_null(wf_test_json_at(json_array_get(out, 0), "metadata.filter_metadata.istio.subset"));
    assert_null(find(out, "outbound|80|v1|" CATALOG)); /* undefined subset: NC later */
    json_decref(out);
    wf_store_free(s);
}

static void defaults(void **state)
{
    wf_store *s = wf_test_load_store(catalog_dr_files, NULL, "istioinaction");
    json_t *out = clusters(s, "istioinaction");
    json_t *c = must(out, "outbound|80|version-v1|" CATALOG);
    wf_test_expect_str(c, "@type", "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    wf_test_expect_str(c, "type", "EDS");
    wf_test_expect_str(c, "alt_stat_name", "outbound|80|version-v1|" CATALOG ";");
    wf_test_expect_str(c, "eds_cluster_config.eds_config.resource_api_version", "V3");
    wf_test_expect_str(c, "eds_cluster_config.eds_config.initial_fetch_timeout", "0s");
    assert_true(json_is_object(wf_test_json_at(c, "eds_cluster_config.eds_config.ads")));
    wf_test_expect_str(c, "connect_timeout", "10s");
    wf_test_expect_str(c, "lb_policy", "LEAST_REQUEST");
    const char *th[] = {"max_connections", "max_pending_requests", "max_requests", "max_retries"};
    for (size_t i = 0; i < 4; i++) {
        char path[96];
        snprintf(path, sizeof path, "circuit_breakers.thresholds.0.%s", th[i]);
        wf_test_expect_int(c, path, 4294967295LL);
    }
    assert_true(json_is_true(wf_test_json_at(c, "circuit_breakers.thresholds.0.track_remaining")));
    assert_null(json_object_get(c, "outlier_detection"));
    assert_null(json_object_get(c, "common_lb_config"));
    assert_null(json_object_get(c, "typed_extension_protocol_options"));
    wf_test_expect_int(c, "metadata.filter_metadata.istio.default_original_port", 80);
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.host", CATALOG);
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.name", "catalog");
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.namespace", "istioinaction");
    json_decref(out);
    wf_store_free(s);
}

static void blackhole_passthrough(void **state)
{
    wf_store *s = wf_test_load_store(NULL, "", "default");
    json_t *out = clusters(s, NULL);
    assert_int_equal(json_array_size(out), 2);
    json_t *bh = must(out, "BlackHoleCluster"), *pt = must(out, "PassthroughCluster");
    wf_test_expect_str(bh, "type", "STATIC");
    wf_test_expect_str(bh, "connect_timeout", "10s");
    assert_null(json_object_get(bh, "load_assignment"));
    assert_null(json_object_get(bh, "filters"));
    wf_test_expect_str(pt, "filters.0.name", "istio.metadata_exchange");
    wf_test_expect_str(pt, "type", "ORIGINAL_DST");
    wf_test_expect_str(pt, "lb_policy", "CLUSTER_PROVIDED");
    wf_test_expect_int(pt, "circuit_breakers.thresholds.0.max_requests", 4294967295LL);
    json_decref(out);
    wf_store_free(s);
}

/* ---- trafficPolicy ---- */

static const char svc_yaml[] = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: web, namespace: shop}\n"
                               "spec:\n"
                               "  selector: {app: web}\n"
                               "  ports:\n"
                               "  - {name: http, port: 80}\n"
                               "  - {name: http-alt, port: 8080}\n"
                               "  - {name: dns, port: 53, protocol: UDP}\n"
                               "---\n";

static const char policy_yaml[] = "apiVersion: networking.istio.io/v1\n"
                                  "kind: DestinationRule\n"
                                  "metadata: {name: web-dr, namespace: shop}\n"
                                  "spec:\n"
                                  "  host: web\n"
                                  "  trafficPolicy:\n"
                                  "    loadBalancer: {simple: RANDOM}\n"
                                  "    connectionPool:\n"
                                  "      tcp: {maxConnections: 100, connectTimeout: 30ms}\n"
                                  "      http:\n"
                                  "        http1MaxPendingRequests: 7\n"
                                  "        http2MaxRequests: 50\n"
                                  "        maxRequestsPerConnection: 3\n"
                                  "        maxRetries: 2\n"
                                  "        idleTimeout: 1m\n"
                                  "    outlierDetection:\n"
                                  "      consecutive5xxErrors: 4\n"
                                  "      consecutiveGatewayErrors: 0\n"
                                  "      interval: 1.5s\n"
                                  "      baseEjectionTime: 3m\n"
                                  "      maxEjectionPercent: 60\n"
                                  "      minHealthPercent: 25\n"
                                  "    portLevelSettings:\n"
                                  "    - port: {number: 8080}\n"
                                  "      loadBalancer: {simple: ROUND_ROBIN}\n"
                                  "  subsets:\n"
                                  "  - name: v1\n"
                                  "    labels: {version: v1}\n"
                                  "  - name: v2\n"
                                  "    labels: {version: v2}\n"
                                  "    trafficPolicy:\n"
                                  "      loadBalancer: {simple: LEAST_CONN}\n"
                                  "      outlierDetection: {consecutive5xxErrors: 1}\n"
                                  "      portLevelSettings:\n"
                                  "      - port: {number: 8080}\n"
                                  "        connectionPool: {tcp: {maxConnections: 9}}\n";

#define WEB(port, subset) "outbound|" #port "|" subset "|web.shop.svc.cluster.local"

static json_t *policy_clusters(wf_store **s)
{
    static char yaml[sizeof svc_yaml + sizeof policy_yaml];
    snprintf(yaml, sizeof yaml, "%s%s", svc_yaml, policy_yaml);
    *s = wf_test_load_store(NULL, yaml, NULL);
    return clusters(*s, "shop");
}

static void policy_names(void **state)
{
    wf_store *s;
    json_t *out = policy_clusters(&s);
    const char *want[] = {WEB(80, ""),        WEB(80, "v1"),       WEB(80, "v2"),
                          WEB(8080, ""),      WEB(8080, "v1"),     WEB(8080, "v2"),
                          "BlackHoleCluster", "PassthroughCluster"};
    assert_int_equal(json_array_size(out), 8); /* the UDP port has no cluster */
    for (size_t i = 0; i < 8; i++)
        wf_test_expect_str(json_array_get(out, i), "name", want[i]);
    wf_test_expect_str(json_array_get(out, 0), "metadata.filter_metadata.istio.config",
                       "/apis/networking.istio.io/v1/namespaces/shop/destination-rule/web-dr");
    json_decref(out);
    wf_store_free(s);
}

static void policy_top_level(void **state)
{
    wf_store *s;
    json_t *out = policy_clusters(&s);
    json_t *c = must(out, WEB(80, ""));
    wf_test_expect_str(c, "lb_policy", "RANDOM");
    wf_test_expect_str(c, "connect_timeout", "0.030s");
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_connections", 100);
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_pending_requests", 7);
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_requests", 50);
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_retries", 2);
    json_t *h = json_object_get(json_object_get(c, "typed_extension_protocol_options"),
                                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
    assert_non_null(h);
    wf_test_expect_str(
        h, "@type", "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
    wf_test_expect_int(h, "common_http_protocol_options.max_requests_per_connection", 3);
    wf_test_expect_str(h, "common_http_protocol_options.idle_timeout", "60s");
    wf_test_expect_int(c, "outlier_detection.consecutive_5xx", 4);
    wf_test_expect_int(c, "outlier_detection.enforcing_consecutive_5xx", 100);
    wf_test_expect_int(c, "outlier_detection.consecutive_gateway_failure", 0);
    wf_test_expect_int(c, "outlier_detection.enforcing_consecutive_gateway_failure", 0);
    wf_test_expect_int(c, "outlier_detection.enforcing_success_rate", 0);
    wf_test_expect_str(c, "outlier_detection.interval", "1.500s");
    wf_test_expect_str(c, "outlier_detection.base_ejection_time", "180s");
    wf_test_expect_int(c, "outlier_detection.max_ejection_percent", 60);
    wf_test_expect_int(c, "common_lb_config.healthy_panic_threshold.value", 25);
    /* subset v1 has no policy of its own: the top-level one applies */
    json_t *v1 = must(out, WEB(80, "v1"));
    wf_test_expect_str(v1, "lb_policy", "RANDOM");
    wf_test_expect_int(v1, "outlier_detection.consecutive_5xx", 4);
    json_decref(out);
    wf_store_free(s);
}

/* portLevelSettings replace connectionPool, loadBalancer and outlierDetection as a whole. */
static void policy_port_level(void **state)
{
    wf_store *s;
    json_t *out = policy_clusters(&s);
    json_t *c = must(out, WEB(8080, ""));
    assert_null(json_object_get(c, "lb_policy")); /* ROUND_ROBIN, Envoy's default */
    assert_null(json_object_get(c, "outlier_detection"));
    assert_null(json_object_get(c, "typed_extension_protocol_options"));
    wf_test_expect_str(c, "connect_timeout", "10s");
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_connections", 4294967295LL);
    json_decref(out);
    wf_store_free(s);
}

/* A subset's sections override the merged top-level ones; its portLevelSettings win last. */
static void policy_subset(void **state)
{
    wf_store *s;
    json_t *out = policy_clusters(&s);
    json_t *c = must(out, WEB(80, "v2"));
    wf_test_expect_str(c, "lb_policy", "LEAST_REQUEST");
    wf_test_expect_int(c, "outlier_detection.consecutive_5xx", 1);
    assert_null(wf_test_json_at(c, "outlier_detection.interval"));
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_connections",
                       100); /* top-level pool */
    assert_true(json_is_object(wf_test_json_at(c, "common_lb_config.healthy_panic_threshold")));
    assert_null(wf_test_json_at(c, "common_lb_config.healthy_panic_threshold.value")); /* 0 %: {} */
    json_t *p = must(out, WEB(8080, "v2"));
    wf_test_expect_int(p, "circuit_breakers.thresholds.0.max_connections", 9);
    wf_test_expect_int(p, "circuit_breakers.thresholds.0.max_requests", 4294967295LL);
    assert_null(json_object_get(p, "outlier_detection"));
    /* the subset's port entry has no loadBalancer: Istio's default, not LEAST_CONN or the
     * top-level port's ROUND_ROBIN */
    wf_test_expect_str(p, "lb_policy", "LEAST_REQUEST");
    json_decref(out);
    wf_store_free(s);
}

/* ---- which DestinationRule applies ---- */

static const char lookup_yaml[] = "apiVersion: v1\n"
                                  "kind: Service\n"
                                  "metadata: {name: api, namespace: backend}\n"
                                  "spec: {ports: [{port: 9080}]}\n"
                                  "---\n"
                                  "apiVersion: networking.istio.io/v1\n"
                                  "kind: DestinationRule\n"
                                  "metadata: {name: wild, namespace: backend}\n"
                                  "spec:\n"
                                  "  host: '*.backend.svc.cluster.local'\n"
                                  "  subsets: [{name: w, labels: {a: b}}]\n"
                                  "---\n"
                                  "apiVersion: networking.istio.io/v1\n"
                                  "kind: DestinationRule\n"
                                  "metadata: {name: exact, namespace: backend}\n"
                                  "spec:\n"
                                  "  host: api\n"
                                  "  subsets: [{name: e, labels: {a: b}}]\n"
                                  "---\n"
                                  "apiVersion: networking.istio.io/v1\n"
                                  "kind: DestinationRule\n"
                                  "metadata: {name: client-side, namespace: front}\n"
                                  "spec:\n"
                                  "  host: api.backend.svc.cluster.local\n"
                                  "  subsets: [{name: f, labels: {a: b}}]\n"
                                  "---\n"
                                  "apiVersion: networking.istio.io/v1\n"
                                  "kind: DestinationRule\n"
                                  "metadata: {name: selected, namespace: other}\n"
                                  "spec:\n"
                                  "  host: api.backend.svc.cluster.local\n"
                                  "  workloadSelector: {matchLabels: {app: x}}\n"
                                  "  subsets: [{name: s, labels: {a: b}}]\n";

static const char *dr_for(const wf_store *s, const char *proxy_ns)
{
    const wf_resource *r = wf_cds_find_destinationrule(s, "api.backend.svc.cluster.local",
                                                       "backend", proxy_ns, NULL, NULL);
    return r ? r->name : "(none)";
}

static void dr_lookup(void **state)
{
    wf_store *s = wf_test_load_store(NULL, lookup_yaml, NULL);
    assert_string_equal(dr_for(s, "front"), "client-side"); /* proxy namespace first */
    assert_string_equal(dr_for(s, "backend"), "exact");     /* exact beats the wildcard */
    assert_string_equal(dr_for(s, "other"), "exact");       /* selector rules skipped */
    assert_string_equal(dr_for(s, NULL), "exact");
    assert_null(wf_cds_find_destinationrule(s, "x.elsewhere.svc.cluster.local", "elsewhere",
                                            "front", NULL, NULL));
    json_t *out = clusters(s, "front");
    must(out, "outbound|9080|f|api.backend.svc.cluster.local");
    assert_null(find(out, "outbound|9080|e|api.backend.svc.cluster.local"));
    json_decref(out);
    wf_store_free(s);
}

static void dr_export_and_root(void **state)
{
    const char *yaml = "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: api, namespace: backend}\n"
                       "spec: {ports: [{port: 9080}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: private, namespace: backend}\n"
                       "spec: {host: api, exportTo: ['.']}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: mesh, namespace: istio-system}\n"
                       "spec: {host: '*.cluster.local'}\n";
    wf_store *s = wf_test_load_store(NULL, yaml, NULL);
    assert_string_equal(dr_for(s, "backend"), "private");
    assert_string_equal(dr_for(s, "front"), "mesh");
    wf_store_free(s);
}

static void domain_suffix_option(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, NULL, "istioinaction");
    wf_cds_options opt = {.proxy_ns = "istioinaction", .domain_suffix = "corp.example"};
    json_t *out = wf_cds_sidecar_clusters(s, &opt);
    assert_non_null(out);
    must(out, "outbound|80||catalog.istioinaction.svc.corp.example");
    json_decref(out);
    assert_null(wf_cds_sidecar_clusters(NULL, NULL));
    wf_store_free(s);
}

/* ---- naming ---- */

static void naming(void **state)
{
    char *n = wf_cluster_name("outbound", 80, "v1", "reviews.default.svc.cluster.local");
    assert_non_null(n);
    assert_string_equal(n, "outbound|80|v1|reviews.default.svc.cluster.local");
    wf_cluster_key k;
    assert_true(wf_cluster_name_parse(n, &k));
    assert_int_equal(k.port, 80);
    assert_int_equal(k.subset_len, 2);
    assert_memory_equal(k.subset, "v1", 2);
    assert_int_equal(k.host_len, strlen("reviews.default.svc.cluster.local"));
    assert_memory_equal(k.direction, "outbound", k.direction_len);
    free(n);
    n = wf_cluster_name("inbound", 9080, NULL, NULL);
    assert_non_null(n);
    assert_string_equal(n, "inbound|9080||");
    assert_true(wf_cluster_name_parse(n, &k));
    assert_int_equal(k.subset_len, 0);
    assert_int_equal(k.host_len, 0);
    free(n);
    assert_false(wf_cluster_name_parse("BlackHoleCluster", &k));
    assert_false(wf_cluster_name_parse("a|b|c", &k));
    assert_true(wf_cluster_name_parse("outbound|x||h", &k));
    assert_int_equal(k.port, 0);
    assert_null(wf_cluster_name(NULL, 1, NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_without_dr),
        cmocka_unit_test(catalog_with_dr),
        cmocka_unit_test(defaults),
        cmocka_unit_test(blackhole_passthrough),
        cmocka_unit_test(policy_names),
        cmocka_unit_test(policy_top_level),
        cmocka_unit_test(policy_port_level),
        cmocka_unit_test(policy_subset),
        cmocka_unit_test(dr_lookup),
        cmocka_unit_test(dr_export_and_root),
        cmocka_unit_test(domain_suffix_option),
        cmocka_unit_test(naming),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
