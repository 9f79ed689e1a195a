/*
 * test_an_policy_cluster.c - the envoyfilter, telemetry, auth/authn, conditions, webhook,
 * externalcontrolplane and meshnetworks analyzers (an_envoyfilter.c, an_telemetry.c,
 * an_auth.c, an_cluster.c) beyond the upstream corpus: enum numbers, filter names across
 * EnvoyFilters, disabled access logs, Lightstep providers, namespace globs, in-mesh pods,
 * condition decoding, webhook revisions and selectors, Go URL parsing, multi-cluster Secrets.
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

/* Referenced so that the analyzers are linked in from the static library. */
extern const wf_analyzer wf_an_envoyfilter_EnvoyPatchAnalyzer, wf_an_telemetry_SelectorAnalyzer,
    wf_an_telemetry_DefaultSelectorAnalyzer, wf_an_telemetry_ProviderAnalyzer,
    wf_an_telemetry_LightstepAnalyzer, wf_an_auth_AuthorizationPoliciesAnalyzer,
    wf_an_authn_BlockedCIDRsAnalyzer, wf_an_conditions_ConditionAnalyzer, wf_an_webhook_Analyzer,
    wf_an_externalcontrolplane_ExternalControlPlaneAnalyzer,
    wf_an_meshnetworks_MeshNetworksAnalyzer;
const wf_analyzer *const linked[] = {
    &wf_an_envoyfilter_EnvoyPatchAnalyzer,
    &wf_an_telemetry_SelectorAnalyzer,
    &wf_an_telemetry_DefaultSelectorAnalyzer,
    &wf_an_telemetry_ProviderAnalyzer,
    &wf_an_telemetry_LightstepAnalyzer,
    &wf_an_auth_AuthorizationPoliciesAnalyzer,
    &wf_an_authn_BlockedCIDRsAnalyzer,
    &wf_an_conditions_ConditionAnalyzer,
    &wf_an_webhook_Analyzer,
    &wf_an_externalcontrolplane_ExternalControlPlaneAnalyzer,
    &wf_an_meshnetworks_MeshNetworksAnalyzer,
};

/* ---- envoyfilter.EnvoyPatchAnalyzer ---- */

#define EF "envoyfilter.EnvoyPatchAnalyzer"

static void test_envoyfilter_operations(void **state)
{
    wf_test_run r = wf_test_analyze(EF, "apiVersion: networking.istio.io/v1alpha3\n"
                                        "kind: EnvoyFilter\n"
                                        "metadata: {name: nums, namespace: a}\n"
                                        "spec:\n"
                                        "  configPatches:\n"
                                        "  - applyTo: 5\n"            /* ROUTE_CONFIGURATION */
                                        "    patch: {operation: 2}\n" /* ADD */
                                        "  - applyTo: VIRTUAL_HOST\n"
                                        "    patch: {operation: REPLACE, value: {name: vh}}\n"
                                        "  - applyTo: CLUSTER\n"
                                        "    patch: {operation: MERGE}\n"
                                        "  - applyTo: HTTP_FILTER\n"
                                        "    patch: {operation: INSERT_FIRST}\n"
                                        "---\n"
                                        "apiVersion: networking.istio.io/v1alpha3\n"
                                        "kind: EnvoyFilter\n"
                                        "metadata: {name: prio, namespace: a}\n"
                                        "spec:\n"
                                        "  priority: 3\n"
                                        "  configPatches:\n"
                                        "  - applyTo: HTTP_FILTER\n"
                                        "    patch: {operation: INSERT_BEFORE}\n"
                                        "---\n"
                                        "apiVersion: networking.istio.io/v1alpha3\n"
                                        "kind: EnvoyFilter\n"
                                        "metadata: {name: stops, namespace: a}\n"
                                        "spec:\n"
                                        "  configPatches:\n"
                                        "  - applyTo: HTTP_FILTER\n"
                                        "  - applyTo: CLUSTER\n"
                                        "    patch: {operation: REPLACE}\n");
    assert_int_equal(wf_test_count(&r, "IST0153", "EnvoyFilter a/nums", NULL), 1);
    assert_int_equal(wf_test_count(&r, "IST0151", "EnvoyFilter a/nums", NULL),
                     1); /* VIRTUAL_HOST */
    assert_int_equal(wf_test_count(&r, "IST0152", "EnvoyFilter a/nums", NULL), 0);
    assert_int_equal(wf_test_count(&r, "IST0151", "EnvoyFilter a/prio", NULL), 0);
    assert_int_equal(wf_test_count(&r, "IST0152", "EnvoyFilter a/stops", NULL), 0);
    assert_int_equal(r.res->n, 2);
    wf_test_done(&r);
}

static void test_envoyfilter_proxy_version_names(void **state)
{
    /* The name set by a proxyVersion patch carries over to later EnvoyFilters; a string
     * name and a number are different Values; the filterChain filter name is used when the
     * value has no name. */
    wf_test_run r =
        wf_test_analyze(EF, "apiVersion: networking.istio.io/v1alpha3\n"
                            "kind: EnvoyFilter\n"
                            "metadata: {name: first, namespace: a}\n"
                            "spec:\n"
                            "  priority: 1\n"
                            "  configPatches:\n"
                            "  - applyTo: HTTP_FILTER\n"
                            "    match: {proxy: {proxyVersion: '^1'}}\n"
                            "    patch: {operation: INSERT_AFTER, value: {name: lua}}\n"
                            "  - applyTo: HTTP_FILTER\n"
                            "    match:\n"
                            "      proxy: {proxyVersion: '^1'}\n"
                            "      listener: {filterChain: {filter: {name: hcm}}}\n"
                            "    patch: {operation: INSERT_AFTER, value: {x: 1}}\n"
                            "---\n"
                            "apiVersion: networking.istio.io/v1alpha3\n"
                            "kind: EnvoyFilter\n"
                            "metadata: {name: same, namespace: a}\n"
                            "spec:\n"
                            "  configPatches:\n"
                            "  - applyTo: HTTP_FILTER\n"
                            "    patch: {operation: INSERT_AFTER, value: {name: \"lua\"}}\n"
                            "---\n"
                            "apiVersion: networking.istio.io/v1alpha3\n"
                            "kind: EnvoyFilter\n"
                            "metadata: {name: number, namespace: a}\n"
                            "spec:\n"
                            "  configPatches:\n"
                            "  - applyTo: HTTP_FILTER\n"
                            "    patch: {operation: INSERT_AFTER, value: {name: 7}}\n"
                            "---\n"
                            "apiVersion: networking.istio.io/v1alpha3\n"
                            "kind: EnvoyFilter\n"
                            "metadata: {name: chain, namespace: a}\n"
                            "spec:\n"
                            "  configPatches:\n"
                            "  - applyTo: NETWORK_FILTER\n"
                            "    match: {listener: {filterChain: {filter: {name: hcm}}}}\n"
                            "    patch: {operation: REMOVE, value: {}}\n");
    assert_int_equal(wf_test_count(&r, "IST0155", "EnvoyFilter a/same", NULL), 1);
    assert_int_equal(wf_test_count(&r, "IST0151", "EnvoyFilter a/number", NULL), 1);
    assert_int_equal(wf_test_count(&r, "IST0155", "EnvoyFilter a/chain", NULL), 1);
    assert_int_equal(r.res->n, 3);
    wf_test_done(&r);
}

/* ---- telemetry ---- */

static void test_telemetry_providers(void **state)
{
    const char *yaml = "apiVersion: telemetry.istio.io/v1\n"
                       "kind: Telemetry\n"
                       "metadata: {name: t, namespace: a}\n"
                       "spec:\n"
                       "  accessLogging:\n"
                       "  - disabled: true\n"
                       "  - providers: []\n"
                       "  tracing:\n"
                       "  - providers: [{name: ls}, {name: other}]\n";
    wf_test_run r = wf_test_analyze("telemetry.ProviderAnalyzer", yaml);
    assert_int_equal(
        wf_test_count(&r, "IST0157", "Telemetry a/t", "The Telemetry t in namespace \"a\""), 1);
    wf_test_done(&r);
    r = wf_test_analyze_mesh("telemetry.ProviderAnalyzer", yaml,
                             "defaultProviders:\n  accessLogging: [envoy]\n", NULL);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
    r = wf_test_analyze("telemetry.LightstepAnalyzer", yaml);
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
    r = wf_test_analyze_mesh("telemetry.LightstepAnalyzer", yaml,
                             "extensionProviders:\n- name: ls\n  lightstep: {service: x, port: 1}\n"
                             "- name: other\n  zipkin: {service: z, port: 2}\n",
                             NULL);
    assert_int_equal(wf_test_count(&r, "IST0002", "Telemetry a/t", "Lightstep provider ls is"), 1);
    assert_int_equal(r.res->n, 1);
    wf_test_done(&r);
}

static void test_telemetry_selectors(void **state)
{
    wf_test_run r = wf_test_analyze(
        "telemetry.SelectorAnalyzer",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a, labels: {app: x, "
        "v: '1'}}\n"
        "---\n"
        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\n"
        "metadata: {name: empty, namespace: a}\nspec: {selector: {}}\n"
        "---\n"
        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\n"
        "metadata: {name: miss, namespace: a}\n"
        "spec:\n  selector:\n    matchLabels:\n      v: '2'\n      app: x\n");
    assert_int_equal(wf_test_count(&r, "IST0101", "Telemetry a/miss", "\"app=x,v=2\""), 1);
    assert_int_equal(wf_test_line_of(&r, "IST0101", "Telemetry a/miss"), 17); /* the "app" label */
    assert_int_equal(r.res->n, 1);
    wf_test_done(&r);
    r = wf_test_analyze("telemetry.DefaultSelectorAnalyzer",
                        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\n"
                        "metadata: {name: b, namespace: a}\nspec: {selector: null}\n"
                        "---\n"
                        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\n"
                        "metadata: {name: a, namespace: a}\nspec: {}\n"
                        "---\n"
                        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\n"
                        "metadata: {name: c, namespace: other}\nspec: {}\n");
    assert_int_equal(wf_test_count(&r, "IST0160", "Telemetry a/b", "[a b]"), 1);
    assert_int_equal(wf_test_count(&r, "IST0160", "Telemetry a/a", "[a b]"), 1);
    assert_int_equal(r.res->n, 2);
    wf_test_done(&r);
}

/* ---- auth ---- */

#define AP "auth.AuthorizationPoliciesAnalyzer"

static void test_auth_namespaces(void **state)
{
    /* With no Namespace at all even "*" matches nothing; globs are prefix/suffix only. */
    const char *policy = "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                         "metadata: {name: p, namespace: istio-system}\n"
                         "spec:\n  rules:\n  - from:\n    - source:\n"
                         "        namespaces: ['*', 'PROD', 'pr*', '*od', 'x*y']\n";
    wf_test_run r = wf_test_analyze(AP, policy);
    assert_int_equal(wf_test_count(&r, "IST0101", "AuthorizationPolicy istio-system/p", NULL), 5);
    wf_test_done(&r);
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s---\napiVersion: v1\nkind: Namespace\nmetadata: {name: prod}\n",
             policy);
    r = wf_test_analyze(AP, buf);
    assert_int_equal(wf_test_count(&r, "IST0101", "AuthorizationPolicy istio-system/p", "\"x*y\""),
                     1);
    assert_int_equal(r.res->n, 1);
    wf_test_done(&r);
}

static void test_auth_workloads(void **state)
{
    wf_test_run r =
        wf_test_analyze(AP, "apiVersion: v1\nkind: Pod\n"
                            "metadata: {name: noimage, namespace: a, labels: {app: n}}\n"
                            "spec: {containers: [{name: istio-proxy}]}\n"
                            "---\n"
                            "apiVersion: v1\nkind: Pod\n"
                            "metadata: {name: proxy, namespace: b, labels: {app: p}}\n"
                            "spec: {initContainers: [{name: istio-proxy, image: proxyv2}]}\n"
                            "---\n"
                            "apiVersion: v1\nkind: Pod\n"
                            "metadata:\n  name: optout\n  namespace: c\n  labels: {app: o, "
                            "sidecar.istio.io/inject: 'false'}\n"
                            "---\n"
                            "apiVersion: v1\nkind: Namespace\n"
                            "metadata: {name: c, labels: {istio-injection: enabled}}\n"
                            "---\n"
                            "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                            "metadata: {name: a, namespace: a}\nspec: {}\n"
                            "---\n"
                            "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                            "metadata: {name: b, namespace: b}\nspec: {selector: {}}\n"
                            "---\n"
                            "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                            "metadata: {name: c, namespace: c}\n"
                            "spec: {selector: {matchLabels: {app: o}}}\n"
                            "---\n"
                            "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                            "metadata: {name: mesh, namespace: istio-system}\n"
                            "spec: {selector: {matchLabels: {app: p}}}\n");
    assert_int_equal(wf_test_count(&r, "IST0127", "AuthorizationPolicy a/a", NULL), 1);
    assert_int_equal(wf_test_count(&r, "IST0127", "AuthorizationPolicy c/c", "app=o"), 1);
    assert_int_equal(r.res->n, 2);
    wf_test_done(&r);
}

static void test_blocked_cidrs(void **state)
{
    char yaml[4096] = "apiVersion: apps/v1\nkind: Deployment\n"
                      "metadata: {name: istiod, namespace: istio-system, labels: {app: istiod}}\n"
                      "spec:\n  template:\n    spec:\n      containers:\n      - name: discovery\n"
                      "        env: [{name: BLOCKED_CIDRS_IN_JWKS_URIS, value: ''}]\n";
    for (int i = 0; i < 7; i++) {
        char doc[256];
        snprintf(doc, sizeof(doc),
                 "---\napiVersion: security.istio.io/v1\nkind: RequestAuthentication\n"
                 "metadata: {name: ra%d, namespace: ns}\n",
                 i);
        strcat(yaml, doc);
    }
    wf_test_run r = wf_test_analyze("authn.BlockedCIDRsAnalyzer", yaml);
    assert_int_equal(wf_test_count(&r, "IST0175", "Deployment istio-system/istiod",
                                   "but 7 RequestAuthentication resource(s) exist (ns/ra0, ns/ra1, "
                                   "ns/ra2, ns/ra3, ns/ra4, and 2 more)"),
                     1);
    wf_test_done(&r);
}

/* ---- conditions ---- */

static void test_conditions(void **state)
{
    wf_test_run r = wf_test_analyze(
        "conditions.ConditionAnalyzer",
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
        "metadata: {name: we, namespace: a}\n"
        "status:\n  conditions:\n"
        "  - {type: istio.io/WaypointBound, status: 'False', reason: R}\n"
        "  - {type: Other}\n" /* unlisted type, empty status */
        "  - {type: Other, status: 'False'}\n"
        "---\n"
        "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\n"
        "status:\n  conditions:\n"
        "  - {type: istio.io/WaypointBound, status: False}\n" /* a bool: no decode */
        "---\n"
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
        "metadata: {name: ap, namespace: a}\n"
        "status:\n  conditions:\n"
        "  - {type: WaypointAccepted, status: 'False', reason: PartiallyInvalid}\n");
    assert_int_equal(
        wf_test_count(&r, "IST0171", "WorkloadEntry a/we", "type=istio.io/WaypointBound"), 1);
    assert_int_equal(wf_test_count(&r, "IST0171", "WorkloadEntry a/we", "type=Other"), 1);
    assert_int_equal(wf_test_count(&r, "IST0171", "Service a/s", NULL), 0);
    /* reported twice upstream with the same text: deduplicated */
    assert_int_equal(wf_test_count(&r, "IST0171", "AuthorizationPolicy a/ap", NULL), 1);
    assert_int_equal(r.res->n, 3);
    wf_test_done(&r);
}

/* ---- webhook.Analyzer ---- */

static void test_webhook_revisions(void **state)
{
    /* Two revisions selected by istio.io/rev do not overlap; a webhook that is not Istio's
     * is ignored; a URL webhook has no service to check. */
    wf_test_run r = wf_test_analyze(
        "webhook.Analyzer", "apiVersion: admissionregistration.k8s.io/v1\n"
                            "kind: MutatingWebhookConfiguration\n"
                            "metadata: {name: canary, labels: {istio.io/rev: canary}}\n"
                            "webhooks:\n"
                            "- name: rev.namespace.sidecar-injector.istio.io\n"
                            "  clientConfig: {url: 'https://x'}\n"
                            "  namespaceSelector:\n"
                            "    matchExpressions:\n"
                            "    - {key: istio.io/rev, operator: In, values: [canary]}\n"
                            "---\n"
                            "apiVersion: admissionregistration.k8s.io/v1\n"
                            "kind: MutatingWebhookConfiguration\n"
                            "metadata: {name: stable}\n"
                            "webhooks:\n"
                            "- name: rev.namespace.sidecar-injector.istio.io\n"
                            "  clientConfig: {service: {name: istiod, namespace: istio-system}}\n"
                            "  namespaceSelector:\n"
                            "    matchLabels: {istio.io/rev: stable}\n"
                            "---\n"
                            "apiVersion: admissionregistration.k8s.io/v1\n"
                            "kind: MutatingWebhookConfiguration\n"
                            "metadata: {name: other}\n"
                            "webhooks:\n"
                            "- name: other.example.com\n"
                            "  clientConfig: {service: {name: nope, namespace: x}}\n");
    assert_int_equal(wf_test_count(&r, "IST0139", "MutatingWebhookConfiguration stable",
                                   "does not exist: istio-system/istiod."),
                     1);
    assert_int_equal(r.res->n, 1);
    wf_test_done(&r);
}

static void test_webhook_overlap_and_bad_selector(void **state)
{
    /* An invalid selector (In without values) matches nothing; two catch-all webhooks
     * overlap on every permutation (one message each after deduplication). */
    wf_test_run r =
        wf_test_analyze("webhook.Analyzer",
                        "apiVersion: v1\nkind: Service\nmetadata: {name: istiod, namespace: s}\n"
                        "---\n"
                        "apiVersion: admissionregistration.k8s.io/v1\n"
                        "kind: MutatingWebhookConfiguration\n"
                        "metadata: {name: one}\n"
                        "webhooks:\n"
                        "- name: a.istio.io\n"
                        "  clientConfig: {service: {name: istiod, namespace: s}}\n"
                        "- name: b.istio.io\n"
                        "  clientConfig: {service: {name: istiod, namespace: s}}\n"
                        "- name: bad.istio.io\n"
                        "  clientConfig: {service: {name: istiod, namespace: s}}\n"
                        "  objectSelector:\n"
                        "    matchExpressions: [{key: k, operator: In, values: []}]\n");
    assert_int_equal(wf_test_count(&r, "IST0139", "MutatingWebhookConfiguration one",
                                   "Webhook overlaps with others: [one/b.istio.io]."),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0139", "MutatingWebhookConfiguration one",
                                   "Webhook overlaps with others: [one/a.istio.io]."),
                     1);
    assert_int_equal(r.res->n, 2);
    wf_test_done(&r);
}

/* ---- externalcontrolplane.ExternalControlPlaneAnalyzer ---- */

static void test_external_control_plane_urls(void **state)
{
    wf_test_run r = wf_test_analyze(
        "externalcontrolplane.ExternalControlPlaneAnalyzer",
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: MutatingWebhookConfiguration\n"
        "metadata: {name: istio-sidecar-injector-x}\n"
        "webhooks:\n"
        "- {name: space, clientConfig: {url: 'https://exa mple.com/inject'}}\n"
        "- {name: opaque, clientConfig: {url: 'test.com:443'}}\n"
        "- {name: colon, clientConfig: {url: '1test.com:443/a'}}\n"
        "- {name: numeric, clientConfig: {url: 'https://1234/x'}}\n"
        "- {name: v6, clientConfig: {url: 'https://[::1]:15017/x'}}\n"
        "- {name: empty, clientConfig: {url: ''}}\n"
        "- {name: badport, clientConfig: {url: 'https://a.com:x/'}}\n"
        "- {name: escape, clientConfig: {url: 'https://a.com/%zz'}}\n"
        "- {name: fine, clientConfig: {url: 'https://u:p@istiod.example.com:15017/'}}\n"
        "- {name: svc, clientConfig: {service: {name: istiod, namespace: x}}}\n"
        "---\n"
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: ValidatingWebhookConfiguration\n"
        "metadata: {name: not-istio-validator}\n"
        "webhooks:\n"
        "- {name: v, clientConfig: {}}\n");
    const char *m = "MutatingWebhookConfiguration istio-sidecar-injector-x";
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(space) to reach the ingress gateway on the "
                                   "external control plane cluster was provided in "
                                   "an invalid format"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(opaque) to reach the ingress gateway on the "
                                   "external control plane cluster cannot be resolved"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(colon) to reach the ingress gateway on the "
                                   "external control plane cluster was provided"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(numeric) to reach the ingress gateway on the "
                                   "external control plane cluster cannot be resolved"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0164", m, "(v6)"), 1);
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(empty) to reach the ingress gateway on the "
                                   "external control plane cluster cannot be resolved"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(badport) to reach the ingress gateway on the "
                                   "external control plane cluster was provided"),
                     1);
    assert_int_equal(wf_test_count(&r, "IST0163", m,
                                   "(escape) to reach the ingress gateway on the "
                                   "external control plane cluster was provided"),
                     1);
    assert_int_equal(r.res->n, 8);
    wf_test_done(&r);
}

/* ---- meshnetworks.MeshNetworksAnalyzer ---- */

static void test_mesh_networks(void **state)
{
    const char *networks = "networks:\n"
                           "  n1:\n"
                           "    endpoints:\n"
                           "    - fromRegistry: Kubernetes\n"
                           "    - fromRegistry: remote1\n"
                           "    - fromCidr: 10.0.0.0/8\n"
                           "  n2:\n"
                           "    endpoints: [{fromRegistry: remote2}, {fromRegistry: remote3}]\n";
    wf_test_run r = wf_test_analyze_mesh("meshnetworks.MeshNetworksAnalyzer",
                                         "apiVersion: v1\nkind: Secret\n"
                                         "metadata: {name: s1, namespace: istio-system, labels: "
                                         "{istio/multiCluster: 'true'}}\n"
                                         "data: {remote1: eA==}\n"
                                         "---\n"
                                         "apiVersion: v1\nkind: Secret\n"
                                         "metadata: {name: s2, namespace: istio-system}\n"
                                         "data: {remote2: eA==}\n",
                                         NULL, networks);
    const char *o = "MeshNetworks istio-system/meshnetworks";
    assert_int_equal(
        wf_test_count(&r, "IST0126", o, "Unknown service registry remote2 in network n2"), 1);
    assert_int_equal(
        wf_test_count(&r, "IST0126", o, "Unknown service registry remote3 in network n2"), 1);
    assert_int_equal(r.res->n, 2);
    assert_null(wf_finding_reference(&r.res->arena, &r.res->findings[0]));
    wf_test_done(&r);
    r = wf_test_analyze("meshnetworks.MeshNetworksAnalyzer", "");
    assert_int_equal(r.res->n, 0);
    wf_test_done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envoyfilter_operations),
        cmocka_unit_test(test_envoyfilter_proxy_version_names),
        cmocka_unit_test(test_telemetry_providers),
        cmocka_unit_test(test_telemetry_selectors),
        cmocka_unit_test(test_auth_namespaces),
        cmocka_unit_test(test_auth_workloads),
        cmocka_unit_test(test_blocked_cidrs),
        cmocka_unit_test(test_conditions),
        cmocka_unit_test(test_webhook_revisions),
        cmocka_unit_test(test_webhook_overlap_and_bad_selector),
        cmocka_unit_test(test_external_control_plane_urls),
        cmocka_unit_test(test_mesh_networks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
