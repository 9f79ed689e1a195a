/*
 * test_an_service_deployment_se.c - service.PortNameAnalyzer,
 * services.MultiClusterServiceAnalyzer, deployment.MultiServiceAnalyzer,
 * serviceentry.Analyzer and serviceentry.ConflictingServiceEntryProtocolAnalyzer beyond the
 * upstream corpus: appProtocol, well-known ports, gateway-managed Services, message texts,
 * exportTo scopes of conflicting ServiceEntries, MeshConfig auto-allocation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "harness.h"
#include "model/store.h"

/* appProtocol wins over the name; the kubernetes.io/h2c, ws and wss values are known; ports 25, 53,
 * 3306 and 27017 default to TCP; UDP is never flagged; gateway-managed Services are skipped. */
static void test_port_name(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: s, namespace: ns}\n"
                       "spec:\n"
                       "  ports:\n"
                       "  - {name: foo, port: 80, appProtocol: http}\n"
                       "  - {name: http, port: 81, appProtocol: custom}\n"
                       "  - {name: web, port: 82, appProtocol: kubernetes.io/h2c}\n"
                       "  - {name: grpc-web-x, port: 83}\n"
                       "  - {name: HTTP2-x, port: 84}\n"
                       "  - {port: 3306}\n"
                       "  - {name: dns, port: 5353, protocol: UDP}\n"
                       "  - {name: foo, port: 85, targetPort: web}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata:\n"
                       "  name: waypoint\n"
                       "  namespace: ns\n"
                       "  labels: {gateway.istio.io/managed: istio.io-mesh-controller}\n"
                       "spec: {ports: [{name: mesh, port: 15008}]}\n";
    wf_test_run r = wf_test_analyze("service.PortNameAnalyzer", yaml);
    assert_int_equal(r.res->n, 2);
    assert_int_equal(wf_test_count(&r, "IST0118", "Service ns/s",
                                   "Port name http (port: 81, targetPort: 0) doesn't follow"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0118", "Service ns/s", "(port: 85, targetPort: web)"),
                     1);
    wf_test_done(&r);
}

/* Services read from files carry no cluster: the multi-cluster analyzer reports nothing even
 * for two differing copies of one Service. */
static void test_multicluster_single_cluster(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: s, namespace: ns}\n"
                       "spec: {type: ClusterIP, ports: [{name: http, port: 80}]}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: s, namespace: ns}\n"
                       "spec: {type: LoadBalancer, ports: [{name: tcp, port: 81}]}\n";
    wf_test_run r = wf_test_analyze("services.MultiClusterServiceAnalyzer", yaml);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
}

static const char bookinfo_ns[] = "apiVersion: v1\n"
                                  "kind: Namespace\n"
                                  "metadata: {name: bk, labels: {istio-injection: enabled}}\n"
                                  "---\n";

/* IST0116 and IST0137 texts: sorted services, Go %v slices, %q targetPort (which Service
 * upstream names for port 9080 depends on Go map order, so it is not checked); a named
 * targetPort is its own key; a Service in another namespace or with an empty selector does
 * not count. */
static void test_multi_service_texts(void **state)
{
    (void)state;
    char yaml[4096];
    snprintf(yaml, sizeof(yaml), "%s%s", bookinfo_ns,
             "apiVersion: apps/v1\n"
             "kind: Deployment\n"
             "metadata: {name: d, namespace: bk}\n"
             "spec:\n"
             "  selector: {matchLabels: {app: d}}\n"
             "  template:\n"
             "    metadata: {labels: {app: d}}\n"
             "    spec: {containers: [{name: c, image: i}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Service\n"
             "metadata: {name: z-http, namespace: bk}\n"
             "spec: {selector: {app: d}, ports: [{name: http, port: 9080, protocol: HTTP}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Service\n"
             "metadata: {name: a-tcp, namespace: bk}\n"
             "spec: {selector: {app: d}, ports: [{name: tcp, port: 9080}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Service\n"
             "metadata: {name: m-alt, namespace: bk}\n"
             "spec: {selector: {app: d}, ports: [{name: http, port: 9090, targetPort: 9080}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Service\n"
             "metadata: {name: named, namespace: bk}\n"
             "spec: {selector: {app: d}, ports: [{name: http, port: 7000, targetPort: web}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Service\n"
             "metadata: {name: all, namespace: bk}\n"
             "spec: {ports: [{name: http, port: 9080, protocol: UDP}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Service\n"
             "metadata: {name: other, namespace: elsewhere}\n"
             "spec: {selector: {app: d}, ports: [{name: http, port: 9080, protocol: UDP}]}\n");
    wf_test_run r = wf_test_analyze("deployment.MultiServiceAnalyzer", yaml);
    assert_int_equal(r.res->n, 2);
    assert_int_equal(
        wf_test_count(&r, "IST0116", "Deployment bk/d",
                      "This deployment d is associated with multiple services using port "
                      "9080 but different protocols: [bk/a-tcp bk/z-http]"),
        1);
    assert_int_equal(wf_test_count(&r, "IST0137", "Deployment bk/d",
                                   "using targetPort \"9080\" but different ports: [9080 9090]."),
                     1);
    wf_test_done(&r);
}

/* Deployments out of the mesh (no injection) and waypoints are not analyzed. */
static void test_multi_service_out_of_mesh(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: apps/v1\n"
                       "kind: Deployment\n"
                       "metadata: {name: d, namespace: plain}\n"
                       "spec:\n"
                       "  selector: {matchLabels: {app: d}}\n"
                       "  template:\n"
                       "    metadata: {labels: {app: d}}\n"
                       "    spec: {containers: [{name: c, image: i}]}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: a, namespace: plain}\n"
                       "spec: {selector: {app: d}, ports: [{name: tcp, port: 80}]}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: b, namespace: plain}\n"
                       "spec: {selector: {app: d}, ports: [{name: http, port: 80, protocol: "
                       "UDP}]}\n";
    wf_test_run r = wf_test_analyze("deployment.MultiServiceAnalyzer", yaml);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
}

static const char se_tcp[] = "apiVersion: networking.istio.io/v1\n"
                             "kind: ServiceEntry\n"
                             "metadata: {name: se, namespace: ns}\n"
                             "spec:\n"
                             "  hosts: [db.example.com]\n"
                             "  ports: [{name: tcp, number: 5432}, {name: pg, number: 5433, "
                             "protocol: Tcp}, {name: h, number: 80, protocol: HTTP}]\n";

static void test_addresses_required(void **state)
{
    (void)state;
    wf_test_run r = wf_test_analyze("serviceentry.Analyzer", se_tcp);
    assert_int_equal(wf_test_count(&r, "IST0134", "ServiceEntry ns/se", NULL),
                     1); /* deduplicated text */
    wf_test_done(&r);
    /* DNS capture alone does not allocate; with PILOT_ENABLE_IP_AUTOALLOCATE it does. */
    r = wf_test_analyze_mesh(
        "serviceentry.Analyzer", se_tcp,
        "defaultConfig:\n  proxyMetadata:\n    ISTIO_META_DNS_CAPTURE: \"true\"\n", NULL);
    assert_int_equal(r.res->n, 1);
    wf_test_done(&r);
    r = wf_test_analyze_mesh(
        "serviceentry.Analyzer", se_tcp,
        "defaultConfig:\n  proxyMetadata:\n    ISTIO_META_DNS_CAPTURE: \"true\"\n"
        "    PILOT_ENABLE_IP_AUTOALLOCATE: \"true\"\n",
        NULL);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
}

/* Conflicts are per exportTo scope; "*" conflicts with every scope; protocols compare
 * upper-cased; each ServiceEntry is reported once. */
static void test_conflicting_protocols_scopes(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: a-local, namespace: a}\n"
                       "spec: {hosts: [x.com], exportTo: [.], ports: [{name: h, number: 80, "
                       "protocol: HTTP}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: b-local, namespace: b}\n"
                       "spec: {hosts: [x.com], exportTo: [.], ports: [{name: t, number: 80, "
                       "protocol: TCP}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: a-lower, namespace: a}\n"
                       "spec: {hosts: [x.com], exportTo: [a], ports: [{name: h, number: 80, "
                       "protocol: http}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: all, namespace: c}\n"
                       "spec: {hosts: [y.com], ports: [{name: h, number: 81, protocol: HTTPS}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: d-local, namespace: d}\n"
                       "spec: {hosts: [y.com], exportTo: [d, e], ports: [{name: h, number: 81, "
                       "protocol: TLS}]}\n";
    wf_test_run r = wf_test_analyze("serviceentry.ConflictingServiceEntryProtocolAnalyzer", yaml);
    assert_int_equal(r.res->n, 2);
    assert_int_equal(
        wf_test_count(&r, "IST0177", "ServiceEntry c/all",
                      "Multiple ServiceEntries (c/all, d/d-local) define the same host "
                      "\"y.com\" and port 81 with conflicting protocols (HTTPS, TLS)."),
        1);
    assert_int_equal(wf_test_count(&r, "IST0177", "ServiceEntry d/d-local", NULL), 1);
    wf_test_done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_port_name),
        cmocka_unit_test(test_multicluster_single_cluster),
        cmocka_unit_test(test_multi_service_texts),
        cmocka_unit_test(test_multi_service_out_of_mesh),
        cmocka_unit_test(test_addresses_required),
        cmocka_unit_test(test_conflicting_protocols_scopes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
