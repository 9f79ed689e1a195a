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
#include "model/store.h"

typedef struct run {
    wf_store *store;
    wf_meshcfg *mesh;
    wf_analysis_result *res;
} run;

static run analyze(const char *analyzer, const char *yaml)
{
    run r = {wf_store_new(), wf_meshcfg_new_default(), NULL};
    assert_non_null(r.store);
    assert_non_null(r.mesh);
    assert_int_equal(wf_store_load_buffer(r.store, "t.yaml", yaml, strlen(yaml), false), 0);
    assert_int_equal(wf_store_finalize(r.store, NULL, true), 0);
    const char *names[] = {analyzer};
    wf_analysis_opts o = {.analyzers = names, .nanalyzers = 1};
    r.res = wf_analyze(r.store, r.mesh, &o);
    assert_non_null(r.res);
    assert_int_equal(r.res->nran, 1);
    return r;
}

static void done(run *r)
{
    wf_analysis_result_free(r->res);
    wf_meshcfg_free(r->mesh);
    wf_store_free(r->store);
}

/* Findings with this code on this origin ("DestinationRule shop/catalog") whose text contains
 * `text` (NULL = any). */
static size_t count(run *r, const char *code, const char *origin, const char *text)
{
    size_t n = 0;
    for (size_t i = 0; i < r->res->n; i++) {
        const wf_finding *f = &r->res->findings[i];
        const char *o = wf_finding_origin(&r->res->arena, f);
        if (strcmp(wf_msg_type_get(f->id)->code, code) == 0 && o && strcmp(o, origin) == 0 &&
            (!text || strstr(f->text, text)))
            n++;
    }
    return n;
}

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
    run r = analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(count(&r, "IST0173", "DestinationRule shop/catalog",
                           "The Subset v2 defined in the DestinationRule does not select any pods"),
                     1);
    assert_int_equal(wf_msg_type_get(r.res->findings[0].id)->level, WF_LEVEL_ERROR);
    done(&r);
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
    run r = analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 0);
    done(&r);
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
    run r = analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(count(&r, "IST0173", "DestinationRule ns/a", "Subset other "), 1);
    done(&r);
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
    run r = analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(count(&r, "IST0173", "DestinationRule ns/a", "Subset empty-region "), 1);
    done(&r);
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
    run r = analyze(SUBSET, yaml);
    /* v1 needs app=a too: no pod. b overrides app: matches. */
    assert_int_equal(r.res->n, 1);
    assert_int_equal(count(&r, "IST0173", "DestinationRule ns/dr", "Subset v1 "), 1);
    done(&r);
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
    run r = analyze(SUBSET, yaml);
    assert_int_equal(r.res->n, 2);
    assert_int_equal(count(&r, "IST0174", "DestinationRule c/other-ns",
                           "The host private.a.svc.cluster.local defined"),
                     1);
    assert_int_equal(count(&r, "IST0174", "DestinationRule c/wild-c", NULL), 1);
    done(&r);
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
    run r = analyze(CA, yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(
        count(&r, "IST0129", "DestinationRule ns/nosel",
              "DestinationRule ns/nosel in namespace ns has TLS mode set to MUTUAL but "
              "no caCertificates are set to validate server identity for host: "
              "db.example.com at port number:443"),
        1);
    done(&r);
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
