/*
 * test_an_injection_misc.c - injection.*, annotations.*, applicationUID.Analyzer,
 * deprecation.DeprecationAnalyzer and sidecar.SelectorAnalyzer beyond the upstream corpus:
 * synthetic pods from Deployments (never reported on, but selector targets), the effective
 * ProxyConfig image type, webhook selectors, annotation value validation and the annotation
 * table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/istio_annotations.h"
#include "analysis/an_annotations_util.h"
#include "analysis/analysis.h"
#include "harness.h"
#include "model/store.h"

/* Referenced so that the analyzers' objects are linked from the static library. */
extern const wf_analyzer wf_an_injection_Analyzer, wf_an_injection_ImageAnalyzer,
    wf_an_injection_ImageAutoAnalyzer, wf_an_annotations_K8sAnalyzer,
    wf_an_annotations_AlphaAnalyzer, wf_an_applicationUID_Analyzer,
    wf_an_deprecation_DeprecationAnalyzer, wf_an_sidecar_SelectorAnalyzer;
const wf_analyzer *const linked[] = {
    &wf_an_injection_Analyzer,
    &wf_an_injection_ImageAnalyzer,
    &wf_an_injection_ImageAutoAnalyzer,
    &wf_an_annotations_K8sAnalyzer,
    &wf_an_annotations_AlphaAnalyzer,
    &wf_an_applicationUID_Analyzer,
    &wf_an_deprecation_DeprecationAnalyzer,
    &wf_an_sidecar_SelectorAnalyzer,
};

static const char deployment_in_injected_ns[] = "apiVersion: v1\n"
                                                "kind: Namespace\n"
                                                "metadata:\n"
                                                "  name: shop\n"
                                                "  labels:\n"
                                                "    istio-injection: enabled\n"
                                                "---\n"
                                                "apiVersion: apps/v1\n"
                                                "kind: Deployment\n"
                                                "metadata:\n"
                                                "  name: web\n"
                                                "  namespace: shop\n"
                                                "spec:\n"
                                                "  selector:\n"
                                                "    matchLabels: {app: web}\n"
                                                "  template:\n"
                                                "    metadata:\n"
                                                "      labels: {app: web}\n"
                                                "    spec:\n"
                                                "      securityContext:\n"
                                                "        runAsUser: 1337\n"
                                                "      containers:\n"
                                                "      - name: web\n"
                                                "        image: nginx\n"
                                                "      - name: istio-proxy\n"
                                                "        image: auto\n";

/* A Deployment's synthetic pod is not a real pod: no IST0103, IST0147 or IST0144 on it. */
static void test_synthetic_pods_not_reported(void **state)
{
    wf_test_run r = wf_test_analyze("injection.Analyzer", deployment_in_injected_ns);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
    r = wf_test_analyze("injection.ImageAutoAnalyzer", deployment_in_injected_ns);
    assert_int_equal(wf_test_count(&r, "IST0147", NULL, NULL), 0);
    /* the Deployment matches no webhook (there is none): IST0146 on the Deployment only */
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0146", "Deployment shop/web", NULL), 1);
    wf_test_done(&r);
    r = wf_test_analyze("applicationUID.Analyzer", deployment_in_injected_ns);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0144", "Deployment shop/web", NULL), 1);
    wf_test_done(&r);
}

/* Synthetic pods are selector targets: two Sidecars on a Deployment's pods conflict, and a
 * Sidecar selecting them is not "not found". */
static void test_sidecar_selects_synthetic_pods(void **state)
{
    char yaml[4096];
    snprintf(yaml, sizeof(yaml),
             "%s---\n"
             "apiVersion: networking.istio.io/v1\n"
             "kind: Sidecar\n"
             "metadata: {name: a, namespace: shop}\n"
             "spec:\n"
             "  workloadSelector:\n"
             "    labels: {app: web}\n"
             "---\n"
             "apiVersion: networking.istio.io/v1\n"
             "kind: Sidecar\n"
             "metadata: {name: b, namespace: shop}\n"
             "spec:\n"
             "  workloadSelector:\n"
             "    labels: {app: web}\n",
             deployment_in_injected_ns);
    wf_test_run r = wf_test_analyze("sidecar.SelectorAnalyzer", yaml);
    assert_int_equal(wf_test_count(&r, "IST0101", "Sidecar shop/a", NULL), 0);
    assert_int_equal(wf_test_count(&r, "IST0110", "Sidecar shop/a", "[a b]"), 1);
    assert_int_equal(wf_test_count(&r, "IST0110", "Sidecar shop/b", "[a b]"), 1);
    wf_test_done(&r);
}

/* IST0101 names the selector with sorted keys; a selector-less Sidecar alone is fine. */
static void test_sidecar_selector_string(void **state)
{
    wf_test_run r =
        wf_test_analyze("sidecar.SelectorAnalyzer", "apiVersion: networking.istio.io/v1\n"
                                                    "kind: Sidecar\n"
                                                    "metadata: {name: s, namespace: ns}\n"
                                                    "spec:\n"
                                                    "  workloadSelector:\n"
                                                    "    labels: {zone: a, app: x}\n"
                                                    "---\n"
                                                    "apiVersion: networking.istio.io/v1\n"
                                                    "kind: Sidecar\n"
                                                    "metadata: {name: d, namespace: ns}\n"
                                                    "spec: {}\n");
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0101", "Sidecar ns/s", "\"app=x,zone=a\""), 1);
    wf_test_done(&r);
}

static const char injector_cm[] =
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: istio-sidecar-injector, namespace: istio-system}\n"
    "data:\n"
    "  values: '{\"global\":{\"hub\":\"reg/istio\",\"tag\":\"1.0\",\"proxy\":{\"image\":"
    "\"proxyv2\"}}}'\n";

/* The image type comes from the mesh, ProxyConfigs and the pod's proxy.istio.io/config. */
static void test_image_variants(void **state)
{
    char yaml[4096];
    snprintf(yaml, sizeof(yaml),
             "%s---\n"
             "apiVersion: v1\n"
             "kind: Namespace\n"
             "metadata: {name: ns, labels: {istio.io/rev: default}}\n"
             "---\n"
             "apiVersion: networking.istio.io/v1beta1\n"
             "kind: ProxyConfig\n"
             "metadata: {name: pc, namespace: ns}\n"
             "spec: {image: {imageType: debug}}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Pod\n"
             "metadata: {name: ok, namespace: ns}\n"
             "spec: {containers: [{name: istio-proxy, image: reg/istio/proxyv2:1.0-debug}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Pod\n"
             "metadata:\n"
             "  name: ok-anno\n"
             "  namespace: ns\n"
             "  annotations: {proxy.istio.io/config: 'image: {imageType: default}'}\n"
             "spec: {containers: [{name: istio-proxy, image: reg/istio/proxyv2:1.0}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Pod\n"
             "metadata: {name: old, namespace: ns}\n"
             "spec: {containers: [{name: istio-proxy, image: reg/istio/proxyv2:0.9}]}\n"
             "---\n"
             "apiVersion: v1\n"
             "kind: Pod\n"
             "metadata:\n"
             "  name: custom\n"
             "  namespace: ns\n"
             "  annotations: {sidecar.istio.io/proxyImage: mine}\n"
             "spec: {containers: [{name: istio-proxy, image: mine}]}\n",
             injector_cm);
    wf_test_run r = wf_test_analyze("injection.ImageAnalyzer", yaml);
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0158", "Namespace ns", "(pod names: [old])"), 1);
    wf_test_done(&r);
}

/* Webhook selectors: a namespace selector matching the namespace's labels injects. */
static void test_image_auto_webhooks(void **state)
{
    wf_test_run r =
        wf_test_analyze("injection.ImageAutoAnalyzer",
                        "apiVersion: v1\n"
                        "kind: Namespace\n"
                        "metadata: {name: \"on\", labels: {istio-injection: enabled}}\n"
                        "---\n"
                        "apiVersion: admissionregistration.k8s.io/v1\n"
                        "kind: MutatingWebhookConfiguration\n"
                        "metadata: {name: inj}\n"
                        "webhooks:\n"
                        "- name: ns.sidecar-injector.istio.io\n"
                        "  namespaceSelector: {matchLabels: {istio-injection: enabled}}\n"
                        "- name: other.example.com\n"
                        "---\n"
                        "apiVersion: apps/v1\n"
                        "kind: Deployment\n"
                        "metadata: {name: gw, namespace: \"on\"}\n"
                        "spec:\n"
                        "  selector: {matchLabels: {app: gw}}\n"
                        "  template:\n"
                        "    metadata: {labels: {app: gw}}\n"
                        "    spec: {containers: [{name: istio-proxy, image: auto}]}\n"
                        "---\n"
                        "apiVersion: apps/v1\n"
                        "kind: Deployment\n"
                        "metadata: {name: gw, namespace: \"off\"}\n"
                        "spec:\n"
                        "  selector: {matchLabels: {app: gw}}\n"
                        "  template:\n"
                        "    metadata: {labels: {app: gw}}\n"
                        "    spec: {containers: [{name: istio-proxy, image: auto}]}\n");
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0146", "Deployment off/gw", NULL), 1);
    wf_test_done(&r);
}

/* The injector's enableNamespacesByDefault turns IST0102 into IST0148; rev-only and
 * ambient namespaces are neither. */
static void test_namespaces_by_default(void **state)
{
    wf_test_run r = wf_test_analyze(
        "injection.Analyzer",
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata: {name: istio-sidecar-injector, namespace: istio-system}\n"
        "data:\n"
        "  values: '{\"sidecarInjectorWebhook\":{\"enableNamespacesByDefault\":true}}'\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: Namespace\n"
        "metadata: {name: plain}\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: Namespace\n"
        "metadata: {name: amb, labels: {istio.io/dataplane-mode: ambient}}\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: Namespace\n"
        "metadata: {name: istio-system}\n");
    assert_int_equal(r.res->n, 1);
    assert_int_equal(wf_test_count(&r, "IST0148", "Namespace plain", NULL), 1);
    wf_test_done(&r);
}

/* The deprecated inject annotation is not reported when the label is there too; the Any
 * annotations attach everywhere; misplacement names every resource type. */
static void test_k8s_annotations(void **state)
{
    wf_test_run r =
        wf_test_analyze("annotations.K8sAnalyzer",
                        "apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata:\n"
                        "  name: both\n"
                        "  labels: {sidecar.istio.io/inject: 'false'}\n"
                        "  annotations:\n"
                        "    sidecar.istio.io/inject: 'false'\n"
                        "    galley.istio.io/analyze-suppress: IST0103\n"
                        "    networking.istio.io/traffic-distribution: PreferClose\n"
                        "---\n"
                        "apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata:\n"
                        "  name: anno-only\n"
                        "  annotations: {sidecar.istio.io/inject: 'false', foo.io/x: y}\n");
    assert_int_equal(wf_test_count(&r, "IST0135", "Pod both", NULL), 0);
    assert_int_equal(wf_test_count(&r, "IST0107", "Pod both", "Service, ServiceEntry"), 1);
    assert_int_equal(wf_test_count(&r, "IST0135", "Pod anno-only", "in favor of"), 1);
    assert_int_equal(r.res->n, 2);
    wf_test_done(&r);
}

static void test_annotation_table(void **state)
{
    const wf_annotation_def *d = wf_annotation_lookup("sidecar.istio.io/inject");
    assert_non_null(d);
    assert_true(d->deprecated);
    assert_int_equal(d->status, WF_ANN_BETA);
    d = wf_annotation_lookup("ambient.istio.io/waypoint-inbound-binding");
    assert_non_null(d);
    assert_string_equal(wf_annotation_resource_name(d->resources[0]), "GatewayClass");
    assert_null(wf_annotation_lookup("networking.istio.io/exportThree"));
    assert_string_equal(wf_annotation_resource_name(0), "Unknown");
}

static bool invalid(const char *name, const char *value, const char **problem)
{
    wf_arena a;
    wf_arena_init(&a);
    static char buf[512];
    const char *p = NULL;
    bool bad = wf_inject_annotation_invalid(&a, name, value, &p);
    buf[0] = '\0';
    if (bad)
        snprintf(buf, sizeof(buf), "%s", p);
    wf_arena_destroy(&a);
    *problem = buf;
    return bad;
}

static void test_annotation_values(void **state)
{
    const char *p;
    assert_false(invalid("readiness.status.sidecar.istio.io/periodSeconds", "10", &p));
    assert_true(invalid("readiness.status.sidecar.istio.io/periodSeconds", "-1", &p));
    assert_string_equal(p, "strconv.ParseUint: parsing \"-1\": invalid syntax");
    assert_true(invalid("readiness.status.sidecar.istio.io/failureThreshold", "4294967296", &p));
    assert_string_equal(p, "strconv.ParseUint: parsing \"4294967296\": value out of range");
    assert_false(invalid("traffic.sidecar.istio.io/excludeInboundPorts", " 80, 443 ", &p));
    assert_false(invalid("traffic.sidecar.istio.io/excludeInboundPorts", "", &p));
    assert_true(invalid("traffic.sidecar.istio.io/excludeOutboundPorts", "80,", &p));
    assert_false(invalid("traffic.sidecar.istio.io/includeInboundPorts", "*", &p));
    assert_false(invalid("traffic.sidecar.istio.io/includeOutboundIPRanges", "*", &p));
    assert_false(
        invalid("traffic.sidecar.istio.io/excludeOutboundIPRanges", "10.0.0.0/8,fd00::/8", &p));
    assert_true(invalid("traffic.sidecar.istio.io/excludeOutboundIPRanges", "10.0.0.0/33", &p));
    assert_true(invalid("traffic.sidecar.istio.io/excludeOutboundIPRanges", "10.0.0.0/08", &p));
    assert_true(invalid("traffic.sidecar.istio.io/includeOutboundIPRanges", "10.0.0.0/8, 1.0.0.0/8",
                        &p)); /* no trimming around commas */
    assert_false(invalid("prometheus.istio.io/merge-metrics", "True", &p));
    assert_true(invalid("prometheus.istio.io/merge-metrics", "yes", &p));
    assert_false(invalid("sidecar.istio.io/interceptionMode", "TPROXY", &p));
    assert_false(invalid("proxy.istio.io/config", "{}", &p));
    assert_false(invalid("proxy.istio.io/config",
                         "concurrency: 2\nholdApplicationUntilProxyStarts: true", &p));
    assert_true(invalid("proxy.istio.io/config", "discoveryAddress: istiod", &p));
    assert_true(invalid("proxy.istio.io/config", "statusPort: 0", &p));
    assert_true(invalid("proxy.istio.io/config", "- a", &p));
    assert_false(invalid("sidecar.istio.io/proxyCPU", "garbage", &p)); /* no validator */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_pods_not_reported),
        cmocka_unit_test(test_sidecar_selects_synthetic_pods),
        cmocka_unit_test(test_sidecar_selector_string),
        cmocka_unit_test(test_image_variants),
        cmocka_unit_test(test_image_auto_webhooks),
        cmocka_unit_test(test_namespaces_by_default),
        cmocka_unit_test(test_k8s_annotations),
        cmocka_unit_test(test_annotation_table),
        cmocka_unit_test(test_annotation_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
