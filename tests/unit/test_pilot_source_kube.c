/*
 * test_pilot_source_kube.c - pilot/source_kube_conv: reflector caches become documents named
 * kube:Kind/ns/name (kind and apiVersion set, bookkeeping and Istio status left out, sorted),
 * the istio ConfigMap becomes the MeshConfig text, EndpointSlice conditions decide which Pods
 * are endpoints (ready nil/true, false, a ready slice wins, ignored slices, Pods without a
 * slice, terminating Pods, addresses naming no Pod), discoverySelectors filter namespaced
 * objects; and wf_source_build on those documents:
 * validation errors name the document (no line), the last good version keeps serving, the
 * MeshConfig comes from the ConfigMap, an endpoint-only change is ENDPOINTS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pilot/source.h"
#include "pilot/source_kube_conv.h"

static json_t *parse(const char *txt)
{
    json_error_t e;
    json_t *j = json_loads(txt, 0, &e);
    if (!j)
        fail_msg("bad test JSON: %s at %d: %s", e.text, e.position, txt);
    return j;
}

/* {"Kind": {"ns/name": obj}} from a JSON text with single quotes for double. */
static json_t *input(const char *sq)
{
    char *t = strdup(sq);
    assert_non_null(t);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_t *j = parse(t);
    free(t);
    return j;
}

static const wf_source_doc *doc(const wf_kube_docs *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->docs[i].name, name) == 0)
            return &d->docs[i];
    return NULL;
}

static json_t *doc_json(const wf_kube_docs *d, const char *name)
{
    const wf_source_doc *x = doc(d, name);
    if (!x)
        fail_msg("no document %s", name);
    return json_loadb(x->json, x->len, 0, NULL);
}

/* status.podIP of the served Pod, or NULL (strdup'ed). */
static char *pod_ip(const wf_kube_docs *d, const char *name)
{
    json_t *p = doc_json(d, name);
    const char *ip = json_string_value(json_object_get(json_object_get(p, "status"), "podIP"));
    char *r = ip ? strdup(ip) : NULL;
    json_decref(p);
    return r;
}

#define POD(name, ip, extra)                                                                       \
    "'shop/" name "':{'metadata':{'name':'" name "','namespace':'shop','labels':{'app':'c'}" extra \
    "},'status':{'phase':'Running','podIP':'" ip "'}}"

static void test_documents(void **state)
{
    (void)state;
    json_t *in = input(
        "{'Service':{'shop/c':{'metadata':{'name':'c','namespace':'shop','resourceVersion':'7',"
        "'managedFields':[{'manager':'kubectl'}]},'spec':{'ports':[{'port':80}]}},"
        "'shop/a':{'kind':'Service','apiVersion':'v1','metadata':{'name':'a','namespace':'shop'}}},"
        "'Namespace':{'shop':{'metadata':{'name':'shop'}}},"
        "'VirtualService':{'shop/v':{'metadata':{'name':'v','namespace':'shop'},'spec':{'hosts':"
        "['c']},'status':{'observedGeneration':3}}},"
        "'ConfigMap':{'istio-system/istio':{'metadata':{'name':'istio','namespace':"
        "'istio-system','resourceVersion':'9'},'data':{'mesh':'rootNamespace: root\\n'}},"
        "'istio-system/other':{'metadata':{'name':'other','namespace':'istio-system'}}}}");
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    assert_int_equal(d.n, 4);
    /* kind table order (Namespace, Service, ..., Istio kinds), then keys sorted */
    assert_string_equal(d.docs[0].name, "kube:Namespace/shop");
    assert_string_equal(d.docs[1].name, "kube:Service/shop/a");
    assert_string_equal(d.docs[2].name, "kube:Service/shop/c");
    assert_string_equal(d.docs[3].name, "kube:VirtualService/shop/v");
    json_t *c = doc_json(&d, "kube:Service/shop/c");
    assert_string_equal(json_string_value(json_object_get(c, "kind")), "Service");
    assert_string_equal(json_string_value(json_object_get(c, "apiVersion")), "v1");
    assert_null(json_object_get(json_object_get(c, "metadata"), "resourceVersion"));
    assert_null(json_object_get(json_object_get(c, "metadata"), "managedFields"));
    json_decref(c);
    json_t *v = doc_json(&d, "kube:VirtualService/shop/v");
    assert_string_equal(json_string_value(json_object_get(v, "apiVersion")),
                        "networking.istio.io/v1");
    assert_null(json_object_get(v, "status"));
    assert_non_null(json_object_get(v, "spec"));
    json_decref(v);
    /* the istio ConfigMap is the MeshConfig, not a document; other ConfigMaps are dropped */
    assert_string_equal(d.mesh_name, "kube:ConfigMap/istio-system/istio");
    assert_non_null(strstr(d.mesh_text, "rootNamespace: root"));
    assert_null(strstr(d.mesh_text, "resourceVersion"));
    wf_kube_docs_free(&d);
    /* another system namespace */
    assert_int_equal(wf_kube_docs_make(in, "mesh-system", &d), 0);
    assert_null(d.mesh_text);
    wf_kube_docs_free(&d);
    json_decref(in);
}

#define SLICE(name, labels, at, eps)                                                               \
    "'shop/" name "':{'metadata':{'name':'" name "','namespace':'shop','labels':{" labels "}},"    \
    "'addressType':'" at "','endpoints':[" eps "]}"
#define EP(ip, conds, pod)                                                                         \
    "{'addresses':['" ip "'],'conditions':{" conds "},'targetRef':{'kind':'Pod','name':'" pod      \
    "','namespace':'shop'}}"
#define SVCNAME "'kubernetes.io/service-name':'c'"

static void test_endpoint_slices(void **state)
{
    (void)state;
    json_t *in = input("{'Pod':{" POD("p1", "10.0.0.1", "") "," POD("p2", "10.0.0.2", "") "," POD(
        "p3", "10.0.0.3",
        "") "," POD("p4", "10.0.0.4",
                    "") "," POD("p5", "10.0.0.5",
                                "") "},"
                                    "'EndpointSlice':{" SLICE(
                                        "c-a", SVCNAME, "IPv4",
                                        EP("10.0.0.1", "", "p1") "," EP(
                                            "10.0.0.2",
                                            "'ready':false,'serving':true,'terminating':true",
                                            "p2") "," EP("10.0.0.3", "'ready':false",
                                                         "p3") "," EP("10.0.0.4", "'ready':false",
                                                                      "p4") "," EP("10.0.0.9", "",
                                                                                   "gone")) ","
                       /* p3 is ready in another slice of the same service: ready wins */
                       SLICE("c-b", SVCNAME, "IPv4", EP("10.0.0.3", "'ready':true", "p3")) ","
                       /* ignored: another cluster's slice, an FQDN slice, a slice of no Service */
                       SLICE("c-mc", SVCNAME ",'multicluster.kubernetes.io/service-name':'c'",
                             "IPv4",
                             EP("10.0.0.5", "'ready':false",
                                "p5")) "," SLICE("c-fqdn", SVCNAME, "FQDN",
                                                 EP("10.0.0.5", "'ready':false",
                                                    "p5")) "," SLICE("c-none", "", "IPv4",
                                                                     EP("10.0.0.5",
                                                                        "'ready':"
                                                                        "false",
                                                                        "p5")) "}}");
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    char *ip;
    assert_string_equal(ip = pod_ip(&d, "kube:Pod/shop/p1"), "10.0.0.1"); /* ready nil */
    free(ip);
    assert_null(pod_ip(&d, "kube:Pod/shop/p2")); /* terminating, serving: not an endpoint */
    assert_string_equal(ip = pod_ip(&d, "kube:Pod/shop/p3"), "10.0.0.3");
    free(ip);
    assert_null(pod_ip(&d, "kube:Pod/shop/p4"));
    assert_string_equal(ip = pod_ip(&d, "kube:Pod/shop/p5"), "10.0.0.5");
    free(ip);
    assert_int_equal(json_object_size(d.not_ready), 2);
    assert_string_equal(json_string_value(json_object_get(d.not_ready, "shop/p2")),
                        "EndpointSlice shop/c-a: 10.0.0.2 ready=false serving=true "
                        "terminating=true");
    /* the target Pod not seen yet: skipped (istiod), nothing ignored either */
    assert_int_equal(json_array_size(d.ignored), 0);
    assert_null(doc(&d, "kube:EndpointSlice/shop/c-a")); /* applied to the Pods */
    wf_kube_docs_free(&d);
    json_decref(in);
}

static void test_pods_without_slices(void **state)
{
    (void)state;
    json_t *in = input("{'Pod':{" POD(
        "bare", "10.0.1.1",
        "") ","
            "'shop/notready':{'metadata':{'name':'notready','namespace':'shop'},'status':{'phase':"
            "'Running','podIP':'10.0.1.2','conditions':[{'type':'Ready','status':'False'}]}},"
            "'shop/"
            "ready':{'metadata':{'name':'ready','namespace':'shop'},'status':{'phase':'Running',"
            "'podIP':'10.0.1.3','conditions':[{'type':'Ready','status':'True'}]}},"
            "'shop/going':{'metadata':{'name':'going','namespace':'shop','deletionTimestamp':"
            "'2026-01-01T00:00:00Z'},'status':{'phase':'Running','podIP':'10.0.1.4'}},"
            "'shop/"
            "done':{'metadata':{'name':'done','namespace':'shop'},'status':{'phase':'Succeeded',"
            "'podIP':'10.0.1.5'}}},"
            /* an address no Pod has, without targetRef: reported, not served */
            "'EndpointSlice':{'shop/ext':{'metadata':{'name':'ext','namespace':'shop','labels':{"
            "'kubernetes.io/service-name':'ext'}},'addressType':'IPv4','endpoints':[{'addresses':["
            "'192.0.2.7']}]}}}");
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    char *ip;
    assert_string_equal(ip = pod_ip(&d, "kube:Pod/shop/bare"), "10.0.1.1");
    free(ip);
    assert_string_equal(ip = pod_ip(&d, "kube:Pod/shop/ready"), "10.0.1.3");
    free(ip);
    assert_null(pod_ip(&d, "kube:Pod/shop/notready"));
    assert_null(pod_ip(&d, "kube:Pod/shop/going"));
    assert_null(pod_ip(&d, "kube:Pod/shop/done"));
    assert_string_equal(json_string_value(json_object_get(d.not_ready, "shop/notready")),
                        "condition Ready is not True");
    assert_string_equal(json_string_value(json_object_get(d.not_ready, "shop/done")),
                        "phase Succeeded");
    assert_int_equal(json_array_size(d.ignored), 1);
    assert_non_null(strstr(json_string_value(json_array_get(d.ignored, 0)),
                           "EndpointSlice shop/ext: address 192.0.2.7 names no Pod"));
    wf_kube_docs_free(&d);
    json_decref(in);
}

static void test_discovery_selectors(void **state)
{
    (void)state;
    json_t *in = input(
        "{'Namespace':{'a':{'metadata':{'name':'a','labels':{'mesh':'weft'}}},"
        "'b':{'metadata':{'name':'b'}},'c':{'metadata':{'name':'c','labels':{'team':'x'}}}},"
        "'Service':{'a/s':{'metadata':{'name':'s','namespace':'a'}},"
        "'b/s':{'metadata':{'name':'s','namespace':'b'}},"
        "'c/s':{'metadata':{'name':'s','namespace':'c'}}},"
        "'Pod':{'b/p':{'metadata':{'name':'p','namespace':'b'},'status':{'podIP':'10.0.0.1'}}},"
        "'Secret':{'b/cred':{'metadata':{'name':'cred','namespace':'b'}}},"
        "'ConfigMap':{'istio-system/istio':{'metadata':{'name':'istio','namespace':"
        "'istio-system'},'data':{'mesh':'discoverySelectors:\\n- matchLabels: {mesh: weft}\\n"
        "- matchExpressions: [{key: team, operator: Exists}]\\n'}}}}");
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    assert_non_null(d.discovery);
    assert_int_equal(json_object_size(d.discovery), 2); /* a (matchLabels) or c (Exists) */
    assert_non_null(doc(&d, "kube:Service/a/s"));
    assert_non_null(doc(&d, "kube:Service/c/s"));
    assert_null(doc(&d, "kube:Service/b/s"));
    assert_null(doc(&d, "kube:Pod/b/p"));
    assert_non_null(doc(&d, "kube:Secret/b/cred")); /* Secrets are read regardless */
    assert_non_null(doc(&d, "kube:Namespace/b"));   /* cluster-scoped */
    wf_kube_docs_free(&d);
    json_decref(in);
    /* no selectors: every namespace */
    in = input(
        "{'Namespace':{'b':{'metadata':{'name':'b'}}},'Service':{'b/s':{'metadata':{"
        "'name':'s','namespace':'b'}}},'ConfigMap':{'istio-system/istio':{'metadata':{"
        "'name':'istio','namespace':'istio-system'},'data':{'mesh':'rootNamespace: x\\n'}}}}");
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    assert_null(d.discovery);
    assert_non_null(doc(&d, "kube:Service/b/s"));
    wf_kube_docs_free(&d);
    json_decref(in);
}

/* ---- wf_source_build on the documents ---------------------------------------------------- */

static const char *const CAT =
    "{'Service':{'shop/c':{'metadata':{'name':'c','namespace':'shop'},'spec':{'selector':{'app':"
    "'c'},'ports':[{'name':'http','port':80,'targetPort':3000}]}}},"
    "'Pod':{" POD("p1", "%s",
                  "") "},"
                      "'ConfigMap':{'istio-system/"
                      "istio':{'metadata':{'name':'istio','namespace':'istio-system'},"
                      "'data':{'mesh':'outboundTrafficPolicy: {mode: REGISTRY_ONLY}\\n'}}},"
                      "'VirtualService':{'shop/"
                      "v':{'metadata':{'name':'v','namespace':'shop'},'spec':{'hosts':["
                      "'c'],'http':[{'route':[{'destination':{'host':'c'},'weight':%s}]}]}}}}";

/* The MeshConfig's discoverySelectors: a WFT0001 warning unless the source applies them. */
static void test_discovery_selectors_warning(void **state)
{
    (void)state;
    json_t *in = input("{'ConfigMap':{'istio-system/istio':{'metadata':{'name':'istio',"
                       "'namespace':'istio-system'},'data':{'mesh':'discoverySelectors:\\n- "
                       "matchLabels: {a: b}\\n'}}}}");
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    for (int applied = 0; applied < 2; applied++) {
        wf_dir_source_opts o = {.mesh_text = d.mesh_text,
                                .mesh_len = d.mesh_len,
                                .mesh_name = d.mesh_name,
                                .discovery_selectors = applied};
        wf_snapshot *s = wf_source_build(&o, NULL, 0);
        assert_non_null(s);
        size_t hits = 0;
        for (size_t i = 0; i < s->n_warnings; i++)
            if (strcmp(s->warnings[i].field, "discoverySelectors") == 0) {
                hits++;
                assert_string_equal(s->warnings[i].file, "kube:ConfigMap/istio-system/istio");
                assert_string_equal(s->warnings[i].code, "WFT0001");
            }
        assert_int_equal(hits, applied ? 0 : 1);
        wf_snapshot_unref(s);
    }
    wf_kube_docs_free(&d);
    json_decref(in);
}

/* Kubernetes: the ProxyConfig fields the injected `weft-proxy proxy` reads and the annotations
 * the injector implements have effect; the local mesh's WFT0001 rows about them are not
 * reported, the others are. */
static void test_kubernetes_not_implemented(void **state)
{
    (void)state;
    json_t *in =
        input("{'ConfigMap':{'istio-system/istio':{'metadata':{'name':'istio','namespace':"
              "'istio-system'},'data':{'mesh':'defaultConfig:\\n  discoveryAddress: "
              "istiod.istio-system.svc:15012\\n  concurrency: 2\\n  terminationDrainDuration: "
              "5s\\n'}}},'Pod':{" POD("p1", "10.0.0.1",
                                      ",'annotations':{'sidecar.istio.io/proxyCPU':'100m',"
                                      "'sidecar.istio.io/bootstrapOverride':'x'}") "}}");
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    for (int kube = 0; kube < 2; kube++) {
        wf_dir_source_opts o = {.docs = d.docs,
                                .n_docs = d.n,
                                .mesh_text = d.mesh_text,
                                .mesh_len = d.mesh_len,
                                .mesh_name = d.mesh_name,
                                .kubernetes = kube};
        wf_snapshot *s = wf_source_build(&o, NULL, 0);
        assert_non_null(s);
        int seen[5] = {0};
        static const char *const fields[] = {
            "defaultConfig.discoveryAddress", "defaultConfig.concurrency",
            "defaultConfig.terminationDrainDuration",
            "metadata.annotations[sidecar.istio.io/proxyCPU]",
            "metadata.annotations[sidecar.istio.io/bootstrapOverride]"};
        for (size_t i = 0; i < s->n_warnings; i++)
            for (size_t f = 0; f < 5; f++)
                if (s->warnings[i].field && strcmp(s->warnings[i].field, fields[f]) == 0)
                    seen[f]++;
        assert_int_equal(seen[0], !kube);
        assert_int_equal(seen[1], !kube);
        assert_int_equal(seen[2], 1);
        assert_int_equal(seen[3], !kube);
        assert_int_equal(seen[4], 1);
        wf_snapshot_unref(s);
    }
    wf_kube_docs_free(&d);
    json_decref(in);
}

static wf_snapshot *build(const char *ip, const char *weight, const wf_snapshot *prev)
{
    char txt[4096];
    snprintf(txt, sizeof txt, CAT, ip, weight);
    json_t *in = input(txt);
    wf_kube_docs d;
    assert_int_equal(wf_kube_docs_make(in, NULL, &d), 0);
    wf_dir_source_opts o = {.docs = d.docs,
                            .n_docs = d.n,
                            .mesh_text = d.mesh_text,
                            .mesh_len = d.mesh_len,
                            .mesh_name = d.mesh_name};
    wf_snapshot *s = wf_source_build(&o, prev, 0);
    assert_non_null(s);
    wf_kube_docs_free(&d);
    json_decref(in);
    return s;
}

static void test_build_from_documents(void **state)
{
    (void)state;
    wf_snapshot *s1 = build("10.0.0.1", "100", NULL);
    assert_int_equal(s1->n_errors, 0);
    assert_int_equal(s1->change, WF_CHANGE_FULL);
    assert_string_equal(wf_meshcfg_str(s1->mesh, "outboundTrafficPolicy.mode"), "REGISTRY_ONLY");
    wf_snap_res *r = *wf_strmap_slot(s1->res, "VirtualService/shop/v", false);
    assert_string_equal(r->file, "kube:VirtualService/shop/v");
    /* a bad VirtualService: an error naming the document, no line; the last good serves */
    wf_snapshot *s2 = build("10.0.0.1", "'eighty'", s1);
    assert_int_equal(s2->n_errors, 1);
    assert_string_equal(s2->errors[0].file, "kube:VirtualService/shop/v");
    assert_int_equal(s2->errors[0].line, 0);
    assert_string_equal(s2->errors[0].field, "spec.http[0].route[0].weight");
    assert_true(s2->errors[0].kept_last_good);
    r = *wf_strmap_slot(s2->res, "VirtualService/shop/v", false);
    assert_true(r->stale);
    assert_non_null(strstr(r->json, "\"weight\":100"));
    assert_int_equal(s2->change, WF_CHANGE_NONE);
    assert_false(s2->mesh_changed);
    /* the Pod's IP changed: endpoints only */
    wf_snapshot *s3 = build("10.0.0.2", "'eighty'", s2);
    assert_int_equal(s3->change, WF_CHANGE_ENDPOINTS);
    assert_true(wf_snapshot_changed(s3, "Pod/shop/p1"));
    wf_snapshot_unref(s1);
    wf_snapshot_unref(s2);
    wf_snapshot_unref(s3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_endpoint_slices),
        cmocka_unit_test(test_pods_without_slices),
        cmocka_unit_test(test_discovery_selectors),
        cmocka_unit_test(test_discovery_selectors_warning),
        cmocka_unit_test(test_kubernetes_not_implemented),
        cmocka_unit_test(test_build_from_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
