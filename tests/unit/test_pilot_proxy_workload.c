/*
 * test_pilot_proxy_workload.c - a proxy's workload name (pilot/generate.h wf_pilot_proxy
 * .workload, what /ui/api/proxies lists and /ui/api/failed groups by): WORKLOAD_NAME when the
 * node sends it, else the Pod object's controller as Istio's kube.GetDeployMetaFromPod names it
 * (a ReplicaSet <deployment>-<pod-template-hash> gives the Deployment, another kind its own
 * name), else none (the views fall back to the pod).
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
#include "pilot/generate.h"

static const char *PODS =
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: catalog-6cf4b97d-abcde\n"
    "  namespace: shop\n  labels: {app: catalog, pod-template-hash: 6cf4b97d}\n"
    "  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: catalog-6cf4b97d,"
    " controller: true}\nspec: {containers: [{name: app, image: x}]}\n"
    "status: {podIP: 10.0.0.7}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: db-0\n  namespace: shop\n"
    "  ownerReferences:\n  - {apiVersion: apps/v1, kind: StatefulSet, name: db, controller: true}\n"
    "spec: {containers: [{name: app, image: x}]}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: lone, namespace: shop}\n"
    "spec: {containers: [{name: app, image: x}]}\n";

static char *workload_of(wf_store *s, const char *id, const char *wl_meta)
{
    json_t *md = wl_meta ? json_pack("{s:s}", "WORKLOAD_NAME", wl_meta) : json_object();
    wf_xds_node node = {.id = (char *)id, .metadata = md};
    wf_pilot_proxy p;
    char err[256];
    assert_int_equal(wf_pilot_proxy_from_node(&node, s, &p, err, sizeof err), 0);
    char *w = p.workload ? strdup(p.workload) : NULL;
    wf_pilot_proxy_free(&p);
    json_decref(md);
    return w;
}

static void test_workload_name(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, PODS, "shop");
    assert_non_null(s);
    char *w = workload_of(s, "catalog-6cf4b97d-abcde.shop", NULL);
    assert_string_equal(w, "catalog"); /* the ReplicaSet's Deployment */
    free(w);
    w = workload_of(s, "catalog-6cf4b97d-abcde.shop", "catalog-meta");
    assert_string_equal(w, "catalog-meta"); /* the node's WORKLOAD_NAME first */
    free(w);
    w = workload_of(s, "db-0.shop", NULL);
    assert_string_equal(w, "db");
    free(w);
    w = workload_of(s, "lone.shop", NULL);
    assert_string_equal(w, "lone"); /* no controller: the pod's name, as Istio */
    free(w);
    assert_null(workload_of(s, "nopod.shop", NULL)); /* no Pod object: none */
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
