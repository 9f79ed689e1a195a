/*
 * test_pilot_eds.c - pilot/eds: ClusterLoadAssignments from an inline Service, Pods and a
 * DestinationRule: endpoints per cluster, subset filtering, an empty subset (B023), pods
 * without an IP or terminated skipped, numeric and named targetPort, Istio's metadata.
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
#include "pilot/eds.h"

#define HOST "catalog.shop.svc.cluster.local"

static const char *const mesh = "apiVersion: v1\n"
                                "kind: Service\n"
                                "metadata: {name: catalog, namespace: shop}\n"
                                "spec:\n"
                                "  selector: {app: catalog}\n"
                                "  ports:\n"
                                "  - {name: http, port: 80, targetPort: 3000}\n"
                                "  - {name: http-metrics, port: 8080, targetPort: metrics}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Service\n"
                                "metadata: {name: manual, namespace: shop}\n"
                                "spec:\n"
                                "  ports: [{port: 80}]\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: catalog-v1-5d9f-abcde\n"
                                "  namespace: shop\n"
                                "  labels:\n"
                                "    app: catalog\n"
                                "    version: v1\n"
                                "    pod-template-hash: 5d9f\n"
                                "    service.istio.io/canonical-name: catalog\n"
                                "    service.istio.io/canonical-revision: v1\n"
                                "    security.istio.io/tlsMode: istio\n"
                                "  ownerReferences:\n"
                                "  - {kind: ReplicaSet, name: catalog-v1-5d9f, controller: true}\n"
                                "spec:\n"
                                "  containers:\n"
                                "  - name: catalog\n"
                                "    ports: [{name: metrics, containerPort: 9090}]\n"
                                "status: {podIP: 127.10.0.1, phase: Running}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: catalog-v2-a\n"
                                "  namespace: shop\n"
                                "  labels: {app: catalog, version: v2}\n"
                                "spec:\n"
                                "  containers:\n"
                                "  - name: catalog\n"
                                "    ports: [{name: metrics, containerPort: 9191}]\n"
                                "status: {podIP: 127.10.0.2}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: catalog-v2-pending\n"
                                "  namespace: shop\n"
                                "  labels: {app: catalog, version: v2}\n"
                                "spec: {containers: [{name: catalog}]}\n"
                                "status: {phase: Pending}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: catalog-v1-noport\n"
                                "  namespace: shop\n"
                                "  labels: {app: catalog, version: v1}\n"
                                "spec: {containers: [{name: catalog}]}\n"
                                "status: {podIP: 127.10.0.4}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: catalog-v1-done\n"
                                "  namespace: shop\n"
                                "  labels: {app: catalog, version: v1}\n"
                                "spec: {containers: [{name: catalog}]}\n"
                                "status: {podIP: 127.10.0.5, phase: Succeeded}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata: {name: other, namespace: shop, labels: {app: other}}\n"
                                "spec: {containers: [{name: other}]}\n"
                                "status: {podIP: 127.10.0.9}\n"
                                "---\n"
                                "apiVersion: v1\n"
                                "kind: Pod\n"
                                "metadata:\n"
                                "  name: catalog-elsewhere\n"
                                "  namespace: elsewhere\n"
                                "  labels: {app: catalog, version: v1}\n"
                                "spec: {containers: [{name: catalog}]}\n"
                                "status: {podIP: 127.10.0.8}\n"
                                "---\n"
                                "apiVersion: networking.istio.io/v1\n"
                                "kind: DestinationRule\n"
                                "metadata: {name: catalog, namespace: shop}\n"
                                "spec:\n"
                                "  host: catalog\n"
                                "  subsets:\n"
                                "  - {name: v1, labels: {version: v1}}\n"
                                "  - {name: v2, labels: {version: v2}}\n"
                                "  - {name: v3, labels: {version: v2, traffic: enabled}}\n";

/* ---- helpers ---- */

static wf_store *load(void)
{
    wf_store *s = wf_test_load_store(NULL, mesh, NULL);
    assert_non_null(s);
    return s;
}

static json_t *cla(const wf_store *s, const char *name)
{
    wf_cds_options opt = {.proxy_ns = "shop"};
    json_t *c = wf_eds_load_assignment(s, name, &opt);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "cluster_name")), name);
    assert_string_equal(json_string_value(json_object_get(c, "@type")),
                        "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    return c;
}

static json_t *lb_endpoints(json_t *c)
{
    json_t *eps = json_object_get(c, "endpoints");
    assert_true(json_is_array(eps));
    assert_int_equal(json_array_size(eps), 1);
    return json_object_get(json_array_get(eps, 0), "lb_endpoints");
}

/* "ip:port" of every lb_endpoint, joined with spaces ("" for an empty assignment). */
static void addresses(json_t *c, char *buf, size_t size)
{
    buf[0] = '\0';
    json_t *eps = json_object_get(c, "endpoints");
    if (json_array_size(eps) == 0)
        return;
    size_t i, used = 0;
    json_t *e;
    json_array_foreach(lb_endpoints(c), i, e)
    {
        json_t *sa = json_object_get(json_object_get(json_object_get(e, "endpoint"), "address"),
                                     "socket_address");
        int n = snprintf(buf + used, size - used, "%s%s:%lld", i ? " " : "",
                         json_string_value(json_object_get(sa, "address")),
                         (long long)json_integer_value(json_object_get(sa, "port_value")));
        assert_true(n > 0 && (size_t)n < size - used);
        used += (size_t)n;
    }
}

static void expect_addresses(const wf_store *s, const char *name, const char *want)
{
    char got[512];
    json_t *c = cla(s, name);
    addresses(c, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", name, got, want);
    json_decref(c);
}

static const char *istio_workload(json_t *e)
{
    json_t *fm = json_object_get(json_object_get(e, "metadata"), "filter_metadata");
    return json_string_value(json_object_get(json_object_get(fm, "istio"), "workload"));
}

/* ---- tests ---- */

static void default_cluster(void **state)
{
    (void)state;
    wf_store *s = load();
    expect_addresses(s, "outbound|80||" HOST, "127.10.0.1:3000 127.10.0.2:3000 127.10.0.4:3000");
    json_t *c = cla(s, "outbound|80||" HOST);
    json_t *grp = json_array_get(json_object_get(c, "endpoints"), 0);
    assert_true(json_is_object(json_object_get(grp, "locality")));
    assert_int_equal(json_object_size(json_object_get(grp, "locality")), 0);
    assert_int_equal(json_integer_value(json_object_get(grp, "load_balancing_weight")), 3);
    json_t *e = json_array_get(lb_endpoints(c), 0);
    assert_string_equal(json_string_value(json_object_get(e, "health_status")), "HEALTHY");
    assert_int_equal(json_integer_value(json_object_get(e, "load_balancing_weight")), 1);
    assert_true(
        json_is_object(json_object_get(json_object_get(e, "endpoint"), "health_check_config")));
    json_t *pol = json_object_get(c, "policy");
    assert_int_equal(json_integer_value(json_object_get(pol, "overprovisioning_factor")), 140);
    json_decref(c);
    wf_store_free(s);
}

static void subsets(void **state)
{
    (void)state;
    wf_store *s = load();
    expect_addresses(s, "outbound|80|v1|" HOST, "127.10.0.1:3000 127.10.0.4:3000");
    expect_addresses(s, "outbound|80|v2|" HOST, "127.10.0.2:3000");
    expect_addresses(s, "outbound|8080|v2|" HOST, "127.10.0.2:9191");
    wf_store_free(s);
}

/* B023: the cluster exists but has no endpoint, so requests get 503 UH, not NC. */
static void subset_without_pods(void **state)
{
    (void)state;
    wf_store *s = load();
    json_t *c = cla(s, "outbound|80|v3|" HOST);
    assert_true(json_is_array(json_object_get(c, "endpoints")));
    assert_int_equal(json_array_size(json_object_get(c, "endpoints")), 0);
    assert_null(json_object_get(c, "policy"));
    json_decref(c);
    wf_store_free(s);
}

static void named_target_port(void **state)
{
    (void)state;
    wf_store *s = load();
    /* catalog-v1-noport has no container port "metrics": not an endpoint of 8080. */
    expect_addresses(s, "outbound|8080||" HOST, "127.10.0.1:9090 127.10.0.2:9191");
    expect_addresses(s, "outbound|8080|v1|" HOST, "127.10.0.1:9090");
    wf_store_free(s);
}

static void metadata(void **state)
{
    (void)state;
    wf_store *s = load();
    json_t *c = cla(s, "outbound|80|v1|" HOST);
    json_t *e0 = json_array_get(lb_endpoints(c), 0);
    json_t *e1 = json_array_get(lb_endpoints(c), 1);
    assert_string_equal(istio_workload(e0), "catalog-v1;shop;catalog;v1;Kubernetes");
    json_t *fm = json_object_get(json_object_get(e0, "metadata"), "filter_metadata");
    json_t *tsm = json_object_get(fm, "envoy.transport_socket_match");
    assert_string_equal(json_string_value(json_object_get(tsm, "tlsMode")), "istio");
    assert_string_equal(istio_workload(e1), "catalog-v1-noport;shop;;;Kubernetes");
    fm = json_object_get(json_object_get(e1, "metadata"), "filter_metadata");
    assert_null(json_object_get(fm, "envoy.transport_socket_match"));
    json_decref(c);
    wf_store_free(s);
}

static void all_clusters(void **state)
{
    (void)state;
    wf_store *s = load();
    wf_cds_options opt = {.proxy_ns = "shop"};
    json_t *all = wf_eds_sidecar_assignments(s, &opt);
    assert_non_null(all);
    const char *want[] = {"outbound|80||" HOST,
                          "outbound|80|v1|" HOST,
                          "outbound|80|v2|" HOST,
                          "outbound|80|v3|" HOST,
                          "outbound|8080||" HOST,
                          "outbound|8080|v1|" HOST,
                          "outbound|8080|v2|" HOST,
                          "outbound|8080|v3|" HOST,
                          "outbound|80||manual.shop.svc.cluster.local"};
    assert_int_equal(json_array_size(all), sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *c = json_array_get(all, i);
        assert_string_equal(json_string_value(json_object_get(c, "cluster_name")), want[i]);
    }
    /* A Service without a selector has no endpoints. */
    assert_int_equal(json_array_size(json_object_get(json_array_get(all, 8), "endpoints")), 0);
    json_decref(all);
    wf_store_free(s);
}

static void unknown_names(void **state)
{
    (void)state;
    wf_store *s = load();
    expect_addresses(s, "outbound|80|v9|" HOST, ""); /* subset not defined */
    expect_addresses(s, "outbound|81||" HOST, "");   /* no such port */
    expect_addresses(s, "outbound|80||nope.shop.svc.cluster.local", "");
    expect_addresses(s, "inbound|3000||", "");
    expect_addresses(s, "BlackHoleCluster", "");
    assert_null(wf_eds_load_assignment(NULL, "x", NULL));
    assert_null(wf_eds_load_assignment(s, NULL, NULL));
    assert_null(wf_eds_sidecar_assignments(NULL, NULL));
    json_t *c = wf_eds_load_assignment(s, "outbound|80||" HOST, NULL); /* opt NULL */
    assert_non_null(c);
    json_decref(c);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_cluster),
        cmocka_unit_test(subsets),
        cmocka_unit_test(subset_without_pods),
        cmocka_unit_test(named_target_port),
        cmocka_unit_test(metadata),
        cmocka_unit_test(all_clusters),
        cmocka_unit_test(unknown_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
