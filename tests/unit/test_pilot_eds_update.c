/*
 * test_pilot_eds_update.c - pilot/eds_update (istiod's edsUpdatedServices): which services an
 * endpoint-only change touches, and the classification of snapshots (source.h) built from
 * in-memory documents: a Pod's readiness or labels, a WorkloadEntry's address, an
 * EndpointSlice, are ENDPOINTS with the touched hosts; a DNS ServiceEntry's workload, an
 * unknown EndpointSlice, a DestinationRule or a Service's ports are FULL.
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
#include "pilot/eds_update.h"
#include "pilot/source.h"

#define HOST_A  "a.shop.svc.cluster.local"
#define HOST_B  "b.shop.svc.cluster.local"
#define CL_A    "outbound|80||" HOST_A
#define CL_A_V1 "outbound|80|v1|" HOST_A
#define CL_B    "outbound|80||" HOST_B

/* ---- classification of changed keys against two stores ---- */

static const char *SVCS =
    "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: shop}\n"
    "spec: {selector: {app: a}, ports: [{port: 80}]}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: shop}\n"
    "spec: {selector: {app: b}, ports: [{port: 80}]}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: c, namespace: other}\n"
    "spec: {selector: {app: a}, ports: [{port: 80}]}\n";

static wf_store *store_with(const char *extra)
{
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s%s%s", SVCS, *extra ? "---\n" : "", extra);
    wf_store *s = wf_test_load_store(NULL, yaml, "shop");
    assert_non_null(s);
    return s;
}

static void pod_yaml(char *buf, size_t cap, const char *app, const char *ip)
{
    snprintf(buf, cap,
             "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: shop, labels: {app: %s}}\n"
             "status: {phase: Running, podIP: %s}\n",
             app, ip);
}

static void assert_hosts(json_t *hosts, const char *const *want, size_t n)
{
    assert_non_null(hosts);
    assert_int_equal(json_object_size(hosts), n);
    for (size_t i = 0; i < n; i++)
        assert_non_null(json_object_get(hosts, want[i]));
}

static void test_pod_change_touches_its_services(void **state)
{
    (void)state;
    char y1[512], y2[512];
    pod_yaml(y1, sizeof y1, "a", "10.0.0.1");
    pod_yaml(y2, sizeof y2, "a", "10.0.0.2");
    wf_store *prev = store_with(y1), *now = store_with(y2);
    const char *changed[] = {"Pod/shop/p1"};
    json_t *hosts = NULL;
    assert_int_equal(wf_eds_updated_services(prev, now, changed, 1, &hosts),
                     WF_EDS_UPDATE_SERVICES);
    /* only a: b selects other labels, c is in another namespace */
    assert_hosts(hosts, (const char *[]){HOST_A}, 1);
    json_decref(hosts);

    /* the Pod's labels move it from a to b: both change */
    wf_store *moved = store_with((pod_yaml(y2, sizeof y2, "b", "10.0.0.1"), y2));
    assert_int_equal(wf_eds_updated_services(prev, moved, changed, 1, &hosts),
                     WF_EDS_UPDATE_SERVICES);
    assert_hosts(hosts, (const char *[]){HOST_A, HOST_B}, 2);
    json_decref(hosts);

    /* a Pod that goes away (in prev only) still names its service */
    wf_store *gone = store_with("");
    assert_int_equal(wf_eds_updated_services(prev, gone, changed, 1, &hosts),
                     WF_EDS_UPDATE_SERVICES);
    assert_hosts(hosts, (const char *[]){HOST_A}, 1);
    json_decref(hosts);
    wf_store_free(prev);
    wf_store_free(now);
    wf_store_free(moved);
    wf_store_free(gone);
}

static const char *SE_STATIC =
    "apiVersion: networking.istio.io/v1beta1\nkind: ServiceEntry\n"
    "metadata: {name: vms, namespace: shop}\n"
    "spec: {hosts: [vm.example.com], resolution: %s, workloadSelector: {labels: {app: vm}},\n"
    "       ports: [{number: 80, name: http, protocol: HTTP}]}\n"
    "---\napiVersion: networking.istio.io/v1beta1\nkind: WorkloadEntry\n"
    "metadata: {name: vm1, namespace: shop}\nspec: {address: %s, labels: {app: vm}}\n";

static void test_workload_entry_and_serviceentry(void **state)
{
    (void)state;
    char y1[1024], y2[1024];
    snprintf(y1, sizeof y1, SE_STATIC, "STATIC", "10.1.0.1");
    snprintf(y2, sizeof y2, SE_STATIC, "STATIC", "10.1.0.2");
    wf_store *prev = store_with(y1), *now = store_with(y2);
    const char *changed[] = {"WorkloadEntry/shop/vm1"};
    json_t *hosts = NULL;
    assert_int_equal(wf_eds_updated_services(prev, now, changed, 1, &hosts),
                     WF_EDS_UPDATE_SERVICES);
    assert_hosts(hosts, (const char *[]){"vm.example.com"}, 1);
    json_decref(hosts);
    wf_store_free(prev);
    wf_store_free(now);

    /* a DNS ServiceEntry carries its endpoints in CDS: a full push */
    snprintf(y1, sizeof y1, SE_STATIC, "DNS", "10.1.0.1");
    snprintf(y2, sizeof y2, SE_STATIC, "DNS", "10.1.0.2");
    prev = store_with(y1);
    now = store_with(y2);
    assert_int_equal(wf_eds_updated_services(prev, now, changed, 1, &hosts), WF_EDS_UPDATE_FULL);
    assert_null(hosts);
    wf_store_free(prev);
    wf_store_free(now);
}

static void test_slices_endpoints_and_other_kinds(void **state)
{
    (void)state;
    const char *slice = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
                        "metadata: {name: b-xyz, namespace: shop,\n"
                        "           labels: {kubernetes.io/service-name: b}}\n"
                        "addressType: IPv4\nendpoints: []\n";
    const char *bare = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
                       "metadata: {name: b-xyz, namespace: shop}\naddressType: IPv4\n";
    wf_store *prev = store_with(""), *now = store_with(slice), *unlabelled = store_with(bare);
    json_t *hosts = NULL;
    const char *sl[] = {"EndpointSlice/shop/b-xyz"};
    assert_int_equal(wf_eds_updated_services(prev, now, sl, 1, &hosts), WF_EDS_UPDATE_SERVICES);
    assert_hosts(hosts, (const char *[]){HOST_B}, 1);
    json_decref(hosts);
    assert_int_equal(wf_eds_updated_services(prev, unlabelled, sl, 1, &hosts), WF_EDS_UPDATE_FULL);
    const char *ep[] = {"Endpoints/shop/a"};
    assert_int_equal(wf_eds_updated_services(prev, now, ep, 1, &hosts), WF_EDS_UPDATE_SERVICES);
    assert_hosts(hosts, (const char *[]){HOST_A}, 1);
    json_decref(hosts);
    const char *dr[] = {"Endpoints/shop/a", "DestinationRule/shop/a"};
    assert_int_equal(wf_eds_updated_services(prev, now, dr, 2, &hosts), WF_EDS_UPDATE_FULL);
    const char *bad[] = {"Pod/no-name"};
    assert_int_equal(wf_eds_updated_services(prev, now, bad, 1, &hosts), WF_EDS_UPDATE_FULL);
    wf_store_free(prev);
    wf_store_free(now);
    wf_store_free(unlabelled);
}

/* ---- cluster names ---- */

static void test_cluster_names(void **state)
{
    (void)state;
    assert_string_equal(wf_eds_cluster_host(CL_A_V1), HOST_A);
    assert_string_equal(wf_eds_cluster_host(CL_B), HOST_B);
    assert_null(wf_eds_cluster_host("inbound|80||"));
    assert_null(wf_eds_cluster_host("outbound|80|"));
    assert_null(wf_eds_cluster_host("BlackHoleCluster"));
    json_t *svc = json_pack("{s:b}", HOST_A, 1);
    assert_true(wf_eds_cluster_updated(CL_A, svc));
    assert_true(wf_eds_cluster_updated(CL_A_V1, svc));
    assert_false(wf_eds_cluster_updated(CL_B, svc));
    char *v[] = {CL_B, CL_A, "x", CL_A_V1};
    wf_xds_names names = {.v = v, .n = 4}, sub;
    assert_int_equal(wf_eds_names_updated(&names, svc, &sub), 2);
    assert_string_equal(sub.v[0], CL_A);
    assert_string_equal(sub.v[1], CL_A_V1);
    wf_xds_names_free(&sub);
    json_t *none = json_object();
    assert_int_equal(wf_eds_names_updated(&names, none, &sub), 0);
    assert_int_equal(sub.n, 0);
    json_decref(none);
    json_decref(svc);
}

/* ---- snapshots (source.h classify) ---- */

static const char *SVC_JSON =
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
    "\"shop\"},\"spec\":{\"selector\":{\"app\":\"%s\"},\"ports\":[{\"port\":%d}]}}";
static const char *POD_JSON =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
    "\"shop\",\"labels\":{\"app\":\"%s\"}},\"spec\":{\"serviceAccountName\":\"default\"},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"%s\"}}";
static const char *DR_JSON =
    "{\"apiVersion\":\"networking.istio.io/v1beta1\",\"kind\":\"DestinationRule\",\"metadata\":{"
    "\"name\":\"a\",\"namespace\":\"shop\"},\"spec\":{\"host\":\"a\",\"trafficPolicy\":{"
    "\"connectionPool\":{\"tcp\":{\"maxConnections\":%d}}}}}";

typedef struct docs {
    char text[6][1024];
    wf_source_doc d[6];
    size_t n;
} docs;

static docs mesh(int a_port, const char *p1_ip, const char *p2_ip, int dr_max)
{
    docs m = {0};
    snprintf(m.text[m.n++], 1024, SVC_JSON, "a", "a", a_port);
    snprintf(m.text[m.n++], 1024, SVC_JSON, "b", "b", 80);
    snprintf(m.text[m.n++], 1024, POD_JSON, "a-1", "a", p1_ip);
    snprintf(m.text[m.n++], 1024, POD_JSON, "b-1", "b", p2_ip);
    if (dr_max)
        snprintf(m.text[m.n++], 1024, DR_JSON, dr_max);
    return m;
}

static wf_snapshot *build(docs *m, const wf_snapshot *prev)
{
    for (size_t i = 0; i < m->n; i++)
        m->d[i] =
            (wf_source_doc){.name = "kube:doc", .json = m->text[i], .len = strlen(m->text[i])};
    wf_dir_source_opts o = {.docs = m->d, .n_docs = m->n, .kubernetes = true};
    wf_snapshot *s = wf_source_build(&o, prev, 0);
    assert_non_null(s);
    return s;
}

static void test_snapshot_classification(void **state)
{
    (void)state;
    docs m1 = mesh(80, "10.0.0.1", "10.0.0.2", 10);
    wf_snapshot *s1 = build(&m1, NULL);
    assert_int_equal(s1->change, WF_CHANGE_FULL);
    assert_null(s1->eds_services);

    /* a's Pod moves: endpoints only, service a */
    docs m2 = mesh(80, "10.0.0.9", "10.0.0.2", 10);
    wf_snapshot *s2 = build(&m2, s1);
    assert_int_equal(s2->change, WF_CHANGE_ENDPOINTS);
    assert_hosts(s2->eds_services, (const char *[]){HOST_A}, 1);

    /* a's Pod loses its IP (not ready) and b's moves: both */
    docs m3 = mesh(80, "", "10.0.0.3", 10);
    wf_snapshot *s3 = build(&m3, s2);
    assert_int_equal(s3->change, WF_CHANGE_ENDPOINTS);
    assert_hosts(s3->eds_services, (const char *[]){HOST_A, HOST_B}, 2);

    /* a DestinationRule: full */
    docs m4 = mesh(80, "", "10.0.0.3", 20);
    wf_snapshot *s4 = build(&m4, s3);
    assert_int_equal(s4->change, WF_CHANGE_FULL);
    assert_null(s4->eds_services);

    /* a Service's ports: full */
    docs m5 = mesh(8080, "", "10.0.0.3", 20);
    wf_snapshot *s5 = build(&m5, s4);
    assert_int_equal(s5->change, WF_CHANGE_FULL);

    /* nothing: none */
    wf_snapshot *s6 = build(&m5, s5);
    assert_int_equal(s6->change, WF_CHANGE_NONE);
    assert_null(s6->eds_services);
    wf_snapshot *all[] = {s1, s2, s3, s4, s5, s6};
    for (size_t i = 0; i < 6; i++)
        wf_snapshot_unref(all[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_change_touches_its_services),
        cmocka_unit_test(test_workload_entry_and_serviceentry),
        cmocka_unit_test(test_slices_endpoints_and_other_kinds),
        cmocka_unit_test(test_cluster_names),
        cmocka_unit_test(test_snapshot_classification),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
