/*
 * test_kube_target.c - src/cli/kube_target.c and the cluster-mode rule of src/cli/mesh_access.c:
 * istioctl's pod names (POD, POD.NS, pod/NAME, deploy/NAME[.NS], other workload kinds, unknown
 * types), workload selectors written as label selectors (matchLabels, matchExpressions, map
 * selectors), the pods query with escaped selectors, kubectl's ByLogging pod choice, istiod's
 * monitoring port, the pod proxy path, and when weftctl picks the cluster over the local mesh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/kube_target.h"
#include "cli/mesh_access.h"

static void parse_ok(const char *arg, const char *dflt, const char *type, const char *name,
                     const char *ns, const char *path)
{
    wf_kube_target t;
    wf_strbuf err = WF_STRBUF_INIT, p = WF_STRBUF_INIT;
    assert_int_equal(wf_kube_target_parse(arg, dflt, &t, &err), 0);
    if (type)
        assert_string_equal(t.type, type);
    else
        assert_null(t.type);
    assert_string_equal(t.name, name);
    assert_string_equal(t.ns, ns);
    wf_kube_target_path(&t, &p);
    assert_string_equal(wf_strbuf_cstr(&p), path);
    wf_kube_target_free(&t);
    wf_strbuf_free(&err);
    wf_strbuf_free(&p);
}

static void test_parse(void **state)
{
    (void)state;
    parse_ok("catalog-6cf4b97d-abcde", "istioinaction", NULL, "catalog-6cf4b97d-abcde",
             "istioinaction", "/api/v1/namespaces/istioinaction/pods/catalog-6cf4b97d-abcde");
    parse_ok("catalog-x.other", "istioinaction", NULL, "catalog-x", "other",
             "/api/v1/namespaces/other/pods/catalog-x");
    parse_ok("pod/web-1", NULL, "pod", "web-1", "default", "/api/v1/namespaces/default/pods/web-1");
    parse_ok("deploy/catalog", "ns1", "deploy", "catalog", "ns1",
             "/apis/apps/v1/namespaces/ns1/deployments/catalog");
    /* the namespace is after the last '.' past the '/': a type may hold dots */
    parse_ok("deployments.apps/reviews-v1.default", "x", "deployments.apps", "reviews-v1",
             "default", "/apis/apps/v1/namespaces/default/deployments/reviews-v1");
    parse_ok("sts/db", "d", "sts", "db", "d", "/apis/apps/v1/namespaces/d/statefulsets/db");
    parse_ok("job/migrate", "d", "job", "migrate", "d", "/apis/batch/v1/namespaces/d/jobs/migrate");
    parse_ok("svc/catalog.ns2", "d", "svc", "catalog", "ns2",
             "/api/v1/namespaces/ns2/services/catalog");

    wf_kube_target t;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_kube_target_parse("cronjob/x", "d", &t, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "the server doesn't have a resource type \"cronjob\"");
    wf_strbuf_reset(&err);
    assert_int_equal(wf_kube_target_parse("name.", "d", &t, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "invalid pod name \"name.\""));
    wf_strbuf_free(&err);
}

static void selector(const char *obj_json, bool map, const char *want)
{
    json_t *o = json_loads(obj_json, 0, NULL);
    assert_non_null(o);
    wf_strbuf out = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
    int rc = wf_kube_workload_selector(o, map, &out, &err);
    if (want) {
        assert_int_equal(rc, 0);
        assert_string_equal(wf_strbuf_cstr(&out), want);
    } else {
        assert_int_equal(rc, -1);
        assert_true(err.len > 0);
    }
    json_decref(o);
    wf_strbuf_free(&out);
    wf_strbuf_free(&err);
}

static void test_selectors(void **state)
{
    (void)state;
    selector("{\"spec\":{\"selector\":{\"matchLabels\":{\"version\":\"v1\",\"app\":\"catalog\"}}}}",
             false, "app=catalog,version=v1");
    selector("{\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"a\"},\"matchExpressions\":["
             "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"web\",\"api\"]},"
             "{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"b\"]},"
             "{\"key\":\"canary\",\"operator\":\"DoesNotExist\"},"
             "{\"key\":\"owner\",\"operator\":\"Exists\"}]}}}",
             false, "app=a,!canary,owner,tier in (api,web),zone notin (b)");
    selector("{\"spec\":{\"selector\":{\"app\":\"catalog\"}}}", true, "app=catalog");
    selector("{\"metadata\":{\"name\":\"x\"},\"spec\":{}}", false, NULL);
    selector(
        "{\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\"}]}}}",
        false, NULL);
}

static void test_pods_query_and_paths(void **state)
{
    (void)state;
    wf_strbuf q = WF_STRBUF_INIT;
    wf_kube_pods_query("istio-system", "app=istiod", "status.phase=Running", &q);
    assert_string_equal(wf_strbuf_cstr(&q), "/api/v1/namespaces/istio-system/pods?labelSelector="
                                            "app%3Distiod&fieldSelector=status.phase%3DRunning");
    wf_strbuf_reset(&q);
    wf_kube_pods_query(NULL, "tier in (a,b)", NULL, &q);
    assert_string_equal(wf_strbuf_cstr(&q), "/api/v1/pods?labelSelector=tier%20in%20%28a%2Cb%29");
    wf_strbuf_reset(&q);
    wf_kube_pod_proxy_path("ns", "p-1", 15000, "/config_dump?mask=bootstrap", &q);
    assert_string_equal(wf_strbuf_cstr(&q),
                        "/api/v1/namespaces/ns/pods/p-1:15000/proxy/config_dump?mask=bootstrap");
    wf_strbuf_free(&q);

    json_t *p =
        json_loads("{\"metadata\":{\"annotations\":{\"prometheus.io/port\":\"18014\"}}}", 0, NULL);
    assert_int_equal(wf_kube_monitoring_port(p), 18014);
    json_decref(p);
    p = json_loads("{\"metadata\":{\"annotations\":{\"prometheus.io/port\":\"x\"}}}", 0, NULL);
    assert_int_equal(wf_kube_monitoring_port(p), 15014);
    json_decref(p);
}

#define POD(name, node, phase, ready, since, restarts, created)                                    \
    "{\"metadata\":{\"name\":\"" name "\",\"creationTimestamp\":\"" created "\"},"                 \
    "\"spec\":{\"nodeName\":\"" node "\"},\"status\":{\"phase\":\"" phase "\","                    \
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\",\"lastTransitionTime\":\"" since \
    "\"}],\"containerStatuses\":[{\"restartCount\":" restarts "}]}}"

static const char *first(const char *items_json)
{
    static char name[64];
    json_t *items = json_loads(items_json, 0, NULL);
    assert_non_null(items);
    long i = wf_kube_first_pod(items);
    snprintf(name, sizeof name, "%s",
             i < 0 ? "-"
                   : json_string_value(json_object_get(
                         json_object_get(json_array_get(items, (size_t)i), "metadata"), "name")));
    json_decref(items);
    return name;
}

static void test_by_logging(void **state)
{
    (void)state;
    assert_string_equal(first("[]"), "-");
    /* assigned to a node first */
    assert_string_equal(
        first("[" POD("a", "", "Running", "True", "2026-01-01T00:00:00Z", "0",
                      "2026-01-01T00:00:00Z") "," POD("b", "n1", "Pending", "False", "", "0",
                                                      "2026-01-02T00:00:00Z") "]"),
        "b");
    /* Running before Pending, ready before not ready */
    assert_string_equal(
        first("[" POD("a", "n", "Pending", "True", "", "0", "2026-01-01T00:00:00Z") "," POD(
            "b", "n", "Running", "False", "", "0",
            "2026-01-02T00:00:00Z") "," POD("c", "n", "Running", "True", "2026-01-05T00:00:00Z",
                                            "0", "2026-01-03T00:00:00Z") "]"),
        "c");
    /* ready longer first, then more restarts, then older */
    assert_string_equal(first("[" POD("a", "n", "Running", "True", "2026-01-05T00:00:00Z", "0",
                                      "2026-01-01T00:00:00Z") "," POD("b", "n", "Running", "True",
                                                                      "2026-01-04T00:00:00Z", "0",
                                                                      "2026-01-02T00:00:00Z") "]"),
                        "b");
    assert_string_equal(
        first("[" POD("a", "n", "Running", "False", "", "1", "2026-01-01T00:00:00Z") "," POD(
            "b", "n", "Running", "False", "", "3", "2026-01-02T00:00:00Z") "]"),
        "b");
    assert_string_equal(
        first("[" POD("a", "n", "Running", "False", "", "0", "2026-01-03T00:00:00Z") "," POD(
            "b", "n", "Running", "False", "", "0", "2026-01-02T00:00:00Z") "]"),
        "b");
}

static void test_mode_rule(void **state)
{
    (void)state;
    /* nothing given: the local mesh, also when ~/.kube/config exists */
    assert_int_equal(wf_mesh_choose(NULL, NULL, NULL, NULL), WF_MESH_LOCAL);
    assert_int_equal(wf_mesh_choose(NULL, NULL, NULL, ""), WF_MESH_LOCAL);
    /* --kubeconfig, --context or $KUBECONFIG: the cluster */
    assert_int_equal(wf_mesh_choose(NULL, "/k", NULL, NULL), WF_MESH_CLUSTER);
    assert_int_equal(wf_mesh_choose(NULL, NULL, "kind-x", NULL), WF_MESH_CLUSTER);
    assert_int_equal(wf_mesh_choose(NULL, NULL, NULL, "/home/u/.kube/config"), WF_MESH_CLUSTER);
    /* --pilot wins: that weft-pilot, directly */
    assert_int_equal(wf_mesh_choose("127.0.0.1:15014", "/k", "c", "/k2"), WF_MESH_LOCAL);

    /* opening the cluster without a usable kubeconfig says which file */
    wf_mesh *m = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    wf_mesh_opts o = {.kubeconfig = "/nonexistent/kubeconfig"};
    assert_int_equal(wf_mesh_open(&o, &m, &err), -1);
    assert_null(m);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "/nonexistent/kubeconfig"));
    wf_strbuf_reset(&err);
    o = (wf_mesh_opts){.kubeconfig = "/nonexistent/kubeconfig", .admin_port = "0"};
    assert_int_equal(wf_mesh_open(&o, &m, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "invalid argument \"0\" for \"--proxy-admin-port\" flag");
    wf_strbuf_free(&err);
    /* local: nothing is contacted at open */
    o = (wf_mesh_opts){.pilot = "127.0.0.1:1"};
    wf_strbuf err2 = WF_STRBUF_INIT;
    assert_int_equal(wf_mesh_open(&o, &m, &err2), 0);
    assert_int_equal(m->mode, WF_MESH_LOCAL);
    assert_string_equal(m->default_ns, "default");
    wf_proxy_ref *refs = NULL;
    size_t n = 0;
    assert_int_equal(wf_mesh_select_proxies(m, "app=x", NULL, &refs, &n, &err2), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err2), "--kubeconfig or --context"));
    wf_mesh_free(m);
    wf_strbuf_free(&err2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_pods_query_and_paths),
        cmocka_unit_test(test_by_logging),
        cmocka_unit_test(test_mode_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
