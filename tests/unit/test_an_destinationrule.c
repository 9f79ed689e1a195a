/*
 * test_an_destinationrule.c - destinationrule.SubsetSelectPodAnalyzer and
 * destinationrule.CaCertificateAnalyzer beyond the upstream corpus: synthetic pods from
 * Deployments (operator report B023), node topology labels, ServiceEntry workloadSelector,
 * exportTo scopes, wildcard ServiceEntry hosts, credentialName with a workloadSelector.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "harness.h"
#include "model/store.h"

#define SUBSET "destinationrule.SubsetSelectPodAnalyzer"
#define CA     "destinationrule.CaCertificateAnalyzer"

static const char catalog[] = "apiVersion: v1\n"
                              "kind: Service\n"
                              "metadata: {name: catalog, namespace: shop}\n"
                              "spec:\n"
                              "  selector: {app: catalog}\n"
                              "  ports: [{name: http, port: 80, targetPort: 8080}]\n"
                              "---\n"
                              "apiVersion: apps/v1\n"
                              "kind: Deployment\n"
                              "metadata: {name: catalog-v1, namespace: shop}\n"
                              "spec:\n"
                              "  selector: {matchLabels: {app: catalog, version: v1}}\n"
                              "  template:\n"
                              "    metadata: {labels: {app: catalog, version: v1}}\n"
                              "    spec: {containers: [{name: app, image: test/echo}]}\n"
                              "---\n"
                              "apiVersion: apps/v1\n"
                              "kind: Deployment\n"
                              "metadata: {name: catalog-v2, namespace: shop}\n"
                              "spec:\n"
                              "  selector: {matchLabels: {app: catalog, version: v2}}\n"
                              "  template:\n"
                              "    metadata: {labels: {app: catalog, version: v2}}\n"
                              "    spec: {containers: [{name: app, image: test/echo}]}\n"
                              "---\n";

/* B023: a subset whose labels no pod has is IST0173; Deployment templates count as pods. */
static void test_b023_subset_selects_no_pod(void **state)
{
    (void)state;
    char yaml[4096];
    snprintf(yaml, sizeof(yaml), "%s%s", catalog,
             "apiVersion: networking.istio.io/v1\n"
             "kind: DestinationRule\n"
             "metadata: {name: catalog, namespace: shop}\n"
             "spec:\n"
             "  host: catalog\n"
             "  subsets:\n"
             "  - {name: v1, labels: {version: v1}}\n"
             "  - {name: v2, labels: {version: v2, traffic: enabled}}\n");
    wf_test_run r = wf_test_analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(
        wf_test_count(&r, "IST0173", "DestinationRule shop/catalog",
                      "The Subset v2 defined in the DestinationRule does not select any pods"),
        1);
    assert_int_equal(wf_msg_type_get(r.res->findings[0].id)->level, WF_LEVEL_ERROR);
    wf_test_done(&r);
}

/* After relabelling the v2 template the analysis is clean. */
static void test_b023_fixed(void **state)
{
    (void)state;
    char yaml[4096];
    snprintf(yaml, sizeof(yaml), "%s%s", catalog,
             "apiVersion: networking.istio.io/v1\n"
             "kind: DestinationRule\n"
             "metadata: {name: catalog, namespace: shop}\n"
             "spec:\n"
             "  host: catalog.shop.svc.cluster.local\n"
             "  subsets:\n"
             "  - {name: v1, labels: {version: v1}}\n"
             "  - {name: v2, labels: {version: v2}}\n");
    wf_test_run r = wf_test_analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
}

/* Pods match on the topology labels of their Node, and on kubernetes.io/hostname. */
static void test_node_topology_labels(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: v1\n"
                       "kind: Node\n"
                       "metadata: {name: n1, labels: {topology.kubernetes.io/zone: z1}}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Pod\n"
                       "metadata: {name: p, namespace: ns, labels: {app: a}}\n"
                       "spec: {nodeName: n1, containers: [{name: c, image: i}]}\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata: {name: a, namespace: ns}\n"
                       "spec: {selector: {app: a}, ports: [{name: http, port: 80}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: a, namespace: ns}\n"
                       "spec:\n"
                       "  host: a\n"
                       "  subsets:\n"
                       "  - {name: zone, labels: {topology.kubernetes.io/zone: z1}}\n"
                       "  - {name: host, labels: {kubernetes.io/hostname: n1}}\n"
                       "  - {name: other, labels: {topology.kubernetes.io/zone: z2}}\n";
    wf_test_run r = wf_test_analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0173", "DestinationRule ns/a", "Subset other "), 1);
    wf_test_done(&r);
}

/* Node locality labels with an empty value are not added to the pod's labels; a pod's own
 * label is then what counts. */
static void test_empty_node_topology_label(void **state)
{
    (void)state;
    const char *yaml =
        "apiVersion: v1\n"
        "kind: Node\n"
        "metadata:\n"
        "  name: n1\n"
        "  labels: {topology.kubernetes.io/region: '', topology.kubernetes.io/zone: ''}\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: p\n"
        "  namespace: ns\n"
        "  labels: {app: a, topology.kubernetes.io/zone: own}\n"
        "spec: {nodeName: n1, containers: [{name: c, image: i}]}\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: Service\n"
        "metadata: {name: a, namespace: ns}\n"
        "spec: {selector: {app: a}, ports: [{name: http, port: 80}]}\n"
        "---\n"
        "apiVersion: networking.istio.io/v1\n"
        "kind: DestinationRule\n"
        "metadata: {name: a, namespace: ns}\n"
        "spec:\n"
        "  host: a\n"
        "  subsets:\n"
        "  - {name: empty-region, labels: {topology.kubernetes.io/region: ''}}\n"
        "  - {name: own-zone, labels: {topology.kubernetes.io/zone: own}}\n"
        "  - {name: app, labels: {app: a}}\n";
    wf_test_run r = wf_test_analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0173", "DestinationRule ns/a", "Subset empty-region "),
                     1);
    wf_test_done(&r);
}

/* A ServiceEntry's workloadSelector labels are merged with the subset labels. */
static void test_serviceentry_workload_selector(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: v1\n"
                       "kind: Pod\n"
                       "metadata: {name: p, namespace: ns, labels: {app: b, version: v1}}\n"
                       "spec: {containers: [{name: c, image: i}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: se, namespace: ns}\n"
                       "spec:\n"
                       "  hosts: [svc.example.com]\n"
                       "  workloadSelector: {labels: {app: a}}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: dr, namespace: ns}\n"
                       "spec:\n"
                       "  host: svc.example.com\n"
                       "  subsets:\n"
                       "  - {name: v1, labels: {version: v1}}\n"
                       "  - {name: b, labels: {app: b}}\n";
    wf_test_run r = wf_test_analyze(SUBSET, yaml);
    /* v1 needs app=a too: no pod. b overrides app: matches. */
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0173", "DestinationRule ns/dr", "Subset v1 "), 1);
    wf_test_done(&r);
}

/* Host lookup: exportTo of Service annotation and ServiceEntry, wildcard hosts, unknown. */
static void test_host_resolution(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: v1\n"
                       "kind: Service\n"
                       "metadata:\n"
                       "  name: private\n"
                       "  namespace: a\n"
                       "  annotations: {networking.istio.io/exportTo: .}\n"
                       "spec: {ports: [{name: http, port: 80}]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: ServiceEntry\n"
                       "metadata: {name: wild, namespace: a}\n"
                       "spec: {hosts: ['*.example.com'], exportTo: [b]}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: own-ns, namespace: a}\n"
                       "spec: {host: private}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: other-ns, namespace: c}\n"
                       "spec: {host: private.a.svc.cluster.local}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: wild-b, namespace: b}\n"
                       "spec: {host: api.example.com}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: wild-c, namespace: c}\n"
                       "spec: {host: api.example.com}\n";
    wf_test_run r = wf_test_analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 2);
    assert_int_equal(wf_test_count(&r, "IST0174", "DestinationRule c/other-ns",
                                   "The host private.a.svc.cluster.local defined"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0174", "DestinationRule c/wild-c", NULL), 1);
    wf_test_done(&r);
}

/* A credentialName only stands in for caCertificates when the DR has a workloadSelector. */
static void test_ca_credential_name(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: sel, namespace: ns}\n"
                       "spec:\n"
                       "  host: db.example.com\n"
                       "  workloadSelector: {matchLabels: {app: x}}\n"
                       "  trafficPolicy:\n"
                       "    tls: {mode: SIMPLE, credentialName: c}\n"
                       "    portLevelSettings:\n"
                       "    - port: {number: 443}\n"
                       "      tls: {mode: MUTUAL, credentialName: c}\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: DestinationRule\n"
                       "metadata: {name: nosel, namespace: ns}\n"
                       "spec:\n"
                       "  host: db.example.com\n"
                       "  trafficPolicy:\n"
                       "    tls: {mode: ISTIO_MUTUAL}\n"
                       "    portLevelSettings:\n"
                       "    - port: {number: 443}\n"
                       "      tls: {mode: MUTUAL, credentialName: c}\n";
    wf_test_run r = wf_test_analyze(CA, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(
        wf_test_count(&r, "IST0129", "DestinationRule ns/nosel",
                      "DestinationRule ns/nosel in namespace ns has TLS mode set to MUTUAL but "
                      "no caCertificates are set to validate server identity for host: "
                      "db.example.com at port number:443"),
        1);
    wf_test_done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b023_subset_selects_no_pod),
        cmocka_unit_test(test_b023_fixed),
        cmocka_unit_test(test_node_topology_labels),
        cmocka_unit_test(test_empty_node_topology_label),
        cmocka_unit_test(test_serviceentry_workload_selector),
        cmocka_unit_test(test_host_resolution),
        cmocka_unit_test(test_ca_credential_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
