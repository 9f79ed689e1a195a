/*
 * test_ui_graph.c - the web view's graph (pilot/ui_graph.h) built from the metrics store:
 * Kiali's default health thresholds; nodes (workloads grouped under their app, services, the
 * gateway, "unknown", workloads named after app and version without WORKLOAD_NAME); edges
 * source workload -> service -> destination workload with both reporters' views, rates,
 * codes, flags, p50/p99, mTLS share from the destination reporter, "disagree" when the client
 * sees failures the server does not (a gateway timeout); the namespace filter; TCP bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/strbuf.h"
#include "pilot/mesh_metrics.h"
#include "pilot/ui_graph.h"

static void test_kiali_default_health(void **state)
{
    (void)state;
    assert_string_equal(wf_ui_health(0, 0, 0, false), "idle");
    assert_string_equal(wf_ui_health(10, 0, 0, false), "healthy");
    /* 5xx: degraded above 0 %, failure above 10 % */
    assert_string_equal(wf_ui_health(1000, 0.1, 0, false), "degraded");
    assert_string_equal(wf_ui_health(100, 10, 0, false), "degraded");
    assert_string_equal(wf_ui_health(100, 10.5, 0, false), "failure");
    /* 4xx: degraded above 10 %, failure above 20 % */
    assert_string_equal(wf_ui_health(100, 0, 10, false), "healthy");
    assert_string_equal(wf_ui_health(100, 0, 15, false), "degraded");
    assert_string_equal(wf_ui_health(100, 0, 21, false), "failure");
    /* grpc: statuses 1-16 as errors; a 4xx share does not apply */
    assert_string_equal(wf_ui_health(100, 5, 50, true), "degraded");
    assert_string_equal(wf_ui_health(100, 11, 0, true), "failure");
}

/* One series line of istio_requests_total (and its duration histogram with every
 * observation at le=bucket_ms) with the labels given as "k=v,k=v". */
static void series(wf_strbuf *b, const char *labels, double n, double bucket_ms)
{
    char lab[1024] = "";
    size_t o = 0;
    char *copy = strdup(labels), *save = NULL;
    for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        *eq = '\0';
        o += (size_t)snprintf(lab + o, sizeof lab - o, "%s%s=\"%s\"", o ? "," : "", kv, eq + 1);
    }
    free(copy);
    wf_strbuf_printf(b, "istio_requests_total{%s} %g\n", lab, n);
    if (bucket_ms > 0) {
        for (int i = 0; i < WF_MM_NBOUNDS; i++)
            wf_strbuf_printf(b, "istio_request_duration_milliseconds_bucket{%s,le=\"%g\"} %g\n",
                             lab, wf_mm_bounds[i], wf_mm_bounds[i] >= bucket_ms ? n : 0);
        wf_strbuf_printf(b, "istio_request_duration_milliseconds_bucket{%s,le=\"+Inf\"} %g\n", lab,
                         n);
        wf_strbuf_printf(b, "istio_request_duration_milliseconds_count{%s} %g\n", lab, n);
        wf_strbuf_printf(b, "istio_request_duration_milliseconds_sum{%s} %g\n", lab, n * bucket_ms);
    }
}

#define GW_SRC                                                                                     \
    "reporter=source,source_workload=istio-ingressgateway,source_workload_namespace=istio-system," \
    "source_app=istio-ingressgateway,destination_service=catalog.shop.svc.cluster.local,"          \
    "destination_workload=catalog-v1,destination_workload_namespace=shop,destination_app=catalog," \
    "destination_version=v1,request_protocol=http,connection_security_policy=unknown"
#define CAT_DST                                                                                    \
    "reporter=destination,source_workload=istio-ingressgateway,"                                   \
    "source_workload_namespace=istio-system,source_app=istio-ingressgateway,"                      \
    "destination_service=catalog.shop.svc.cluster.local,destination_workload=catalog-v1,"          \
    "destination_workload_namespace=shop,destination_app=catalog,destination_version=v1,"          \
    "request_protocol=http,connection_security_policy=mutual_tls"

typedef struct {
    wf_mm_store *s;
    wf_mm_target *gw, *cat, *ext;
} mesh;

/* Round 1 at t=1000: baselines; round 2 at t=31000 with the texts' values (30 s). */
static void two_rounds(mesh *m, const char *gw, const char *cat, const char *ext)
{
    wf_mm_scrape_info info;
    char err[128];
    m->s = wf_mm_store_new();
    m->gw = wf_mm_target_new();
    m->cat = wf_mm_target_new();
    m->ext = wf_mm_target_new();
    assert_int_equal(wf_mm_ingest(m->s, m->gw, true, "", 0, &info, err, sizeof err), 0);
    assert_int_equal(wf_mm_ingest(m->s, m->cat, false, "", 0, &info, err, sizeof err), 0);
    assert_int_equal(wf_mm_ingest(m->s, m->ext, false, "", 0, &info, err, sizeof err), 0);
    wf_mm_round_end(m->s, 1000);
    assert_int_equal(wf_mm_ingest(m->s, m->gw, true, gw, strlen(gw), &info, err, sizeof err), 0);
    assert_int_equal(wf_mm_ingest(m->s, m->cat, false, cat, strlen(cat), &info, err, sizeof err),
                     0);
    assert_int_equal(wf_mm_ingest(m->s, m->ext, false, ext, strlen(ext), &info, err, sizeof err),
                     0);
    wf_mm_round_end(m->s, 31000);
}

static void mesh_free(mesh *m)
{
    wf_mm_target_free(m->gw);
    wf_mm_target_free(m->cat);
    wf_mm_target_free(m->ext);
    wf_mm_store_free(m->s);
}

static json_t *find(json_t *arr, const char *id)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) if (strcmp(json_string_value(json_object_get(x, "id")), id) ==
                                      0) return x;
    return NULL;
}

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

#define GW_NODE  "wl:istio-system/istio-ingressgateway"
#define SVC_NODE "svc:catalog.shop.svc.cluster.local"
#define V1_NODE  "wl:shop/catalog-v1"

/* The book's timeout step: the gateway sees 30 % 504 UT, catalog itself answers all 200. */
static void test_gateway_timeout_disagree(void **state)
{
    (void)state;
    wf_strbuf gw = WF_STRBUF_INIT, cat = WF_STRBUF_INIT, ext = WF_STRBUF_INIT;
    series(&gw, GW_SRC ",response_code=200,response_flags=-", 210, 5);
    series(&gw, GW_SRC ",response_code=504,response_flags=UT", 90, 1000);
    series(&cat, CAT_DST ",response_code=200,response_flags=-", 210, 500);
    /* the 90 the gateway timed out: catalog's sidecar saw the caller go away (no code, DC) */
    series(&cat, CAT_DST ",response_code=0,response_flags=DC", 90, 1000);
    mesh m;
    two_rounds(&m, wf_strbuf_cstr(&gw), wf_strbuf_cstr(&cat), "");
    json_t *g = wf_ui_graph_build(m.s, 60, NULL);
    assert_non_null(g);
    assert_true(num(g, "covered_s") == 30);
    json_t *nodes = json_object_get(g, "nodes"), *edges = json_object_get(g, "edges");
    json_t *gwn = find(nodes, GW_NODE), *v1 = find(nodes, V1_NODE), *svc = find(nodes, SVC_NODE);
    assert_non_null(gwn);
    assert_non_null(v1);
    assert_non_null(svc);
    assert_true(json_is_true(json_object_get(gwn, "is_gateway")));
    assert_string_equal(json_string_value(json_object_get(v1, "parent")), "app:shop/catalog");
    assert_string_equal(json_string_value(json_object_get(v1, "service")),
                        "catalog.shop.svc.cluster.local");
    assert_string_equal(json_string_value(json_object_get(svc, "kind")), "service");
    assert_string_equal(json_string_value(json_object_get(svc, "namespace")), "shop");
    json_t *app = find(nodes, "app:shop/catalog");
    assert_non_null(app);
    assert_string_equal(json_string_value(json_object_get(app, "kind")), "app");

    json_t *e = find(edges, "e:" GW_NODE "->" SVC_NODE);
    assert_non_null(e);
    json_t *sv = json_object_get(e, "source_view"), *dv = json_object_get(e, "destination_view");
    assert_true(fabs(num(sv, "rps") - 10.0) < 1e-9); /* 300 requests / 30 s */
    assert_true(fabs(num(sv, "success_rate") - 0.7) < 1e-9);
    assert_true(fabs(num(sv, "error_rate") - 0.3) < 1e-9);
    assert_true(fabs(num(json_object_get(sv, "codes"), "504") - 3.0) < 1e-9);
    assert_true(fabs(num(json_object_get(sv, "flags"), "UT") - 3.0) < 1e-9);
    assert_null(json_object_get(json_object_get(sv, "flags"), "-"));
    /* p50 in the (1, 5] bucket: rank 150 of 210 there; p99 in (500, 1000] */
    assert_true(num(sv, "p50_ms") > 1 && num(sv, "p50_ms") <= 5);
    assert_true(num(sv, "p99_ms") > 500 && num(sv, "p99_ms") <= 1000);
    /* no code is not an error (Kiali's default tolerances): catalog's own view stays 100 % */
    assert_true(fabs(num(json_object_get(dv, "codes"), "0") - 3.0) < 1e-9);
    assert_true(fabs(num(dv, "success_rate") - 1.0) < 1e-9);
    assert_true(json_is_true(json_object_get(e, "disagree")));
    /* the gateway's own series say "unknown": the share comes from catalog's */
    assert_true(num(e, "mtls_percent") == 100.0);
    /* 30 % of 5xx: failure, though catalog's own view is healthy */
    assert_string_equal(json_string_value(json_object_get(e, "health")), "failure");
    assert_string_equal(json_string_value(json_object_get(svc, "health")), "failure");
    json_t *e2 = find(edges, "e:" SVC_NODE "->" V1_NODE);
    assert_non_null(e2);
    assert_string_equal(json_string_value(json_object_get(e2, "protocol")), "http");
    json_decref(g);

    /* the namespace filter: shop keeps both edges; another namespace none */
    g = wf_ui_graph_build(m.s, 60, "shop");
    assert_int_equal(json_array_size(json_object_get(g, "edges")), 2);
    json_decref(g);
    g = wf_ui_graph_build(m.s, 60, "other");
    assert_int_equal(json_array_size(json_object_get(g, "edges")), 0);
    assert_int_equal(json_array_size(json_object_get(g, "nodes")), 0);
    json_decref(g);
    mesh_free(&m);
    wf_strbuf_free(&gw);
    wf_strbuf_free(&cat);
    wf_strbuf_free(&ext);
}

/* No WORKLOAD_NAME (meshfix proxies): the workload is named after app and version; a source
 * outside the mesh is "unknown"; a TCP edge carries bytes per second and its mTLS share by
 * connections; a view with no series is null. */
static void test_unknown_fallback_and_tcp(void **state)
{
    (void)state;
    wf_strbuf cat = WF_STRBUF_INIT, ext = WF_STRBUF_INIT;
    series(&cat,
           "reporter=destination,source_workload=unknown,destination_service=catalog.shop.svc."
           "cluster.local,destination_workload=,destination_workload_namespace=shop,"
           "destination_app=catalog,destination_version=v2,request_protocol=http,"
           "response_code=404,response_flags=-,connection_security_policy=none",
           60, 1);
    const char *tcp_lab = "reporter=\"destination\",source_workload=\"client\","
                          "source_workload_namespace=\"shop\",destination_service=\"db.shop.svc."
                          "cluster.local\",destination_workload=\"db\","
                          "destination_workload_namespace=\"shop\",request_protocol=\"tcp\","
                          "connection_security_policy=\"mutual_tls\"";
    wf_strbuf_printf(&ext, "istio_tcp_sent_bytes_total{%s} 3000\n", tcp_lab);
    wf_strbuf_printf(&ext, "istio_tcp_received_bytes_total{%s} 600\n", tcp_lab);
    wf_strbuf_printf(&ext, "istio_tcp_connections_opened_total{%s} 3\n", tcp_lab);
    mesh m;
    two_rounds(&m, "", wf_strbuf_cstr(&cat), wf_strbuf_cstr(&ext));
    json_t *g = wf_ui_graph_build(m.s, 60, NULL);
    json_t *nodes = json_object_get(g, "nodes"), *edges = json_object_get(g, "edges");
    assert_non_null(find(nodes, "unknown"));
    json_t *v2 = find(nodes, "wl:shop/catalog-v2");
    assert_non_null(v2);
    assert_string_equal(json_string_value(json_object_get(v2, "version")), "v2");
    json_t *e = find(edges, "e:unknown->" SVC_NODE);
    assert_non_null(e);
    assert_true(json_is_null(json_object_get(e, "source_view")));
    json_t *dv = json_object_get(e, "destination_view");
    assert_true(fabs(num(dv, "rps") - 2.0) < 1e-9);
    /* 100 % 4xx: failure by Kiali's 4xx tolerance, though success_rate counts only 5xx */
    assert_true(num(dv, "success_rate") == 1.0);
    assert_string_equal(json_string_value(json_object_get(e, "health")), "failure");
    assert_true(num(e, "mtls_percent") == 0.0); /* "none" is known: plaintext */
    assert_false(json_is_true(json_object_get(e, "disagree")));
    json_t *t = find(edges, "e:wl:shop/client->svc:db.shop.svc.cluster.local");
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "protocol")), "tcp");
    json_t *tv = json_object_get(t, "destination_view");
    assert_true(fabs(num(tv, "tcp_sent_bps") - 100.0) < 1e-9);
    assert_true(fabs(num(tv, "tcp_received_bps") - 20.0) < 1e-9);
    assert_true(json_is_null(json_object_get(tv, "p50_ms")));
    assert_true(num(t, "mtls_percent") == 100.0);
    assert_string_equal(json_string_value(json_object_get(t, "health")), "idle");
    json_decref(g);
    mesh_free(&m);
    wf_strbuf_free(&cat);
    wf_strbuf_free(&ext);
}

/* A gateway in istio-system sends 200s to a service in shop and 503 NC (no cluster took the
 * request: destination_service "unknown") to the unknown node: namespace=shop keeps both
 * edges (the unknown one because its other end, the gateway, is kept), the unknown one red. */
static void test_namespace_keeps_unknown_of_kept(void **state)
{
    (void)state;
    wf_strbuf gw = WF_STRBUF_INIT;
    series(&gw, GW_SRC ",response_code=200,response_flags=-", 300, 5);
    series(&gw,
           "reporter=source,source_workload=istio-ingressgateway,"
           "source_workload_namespace=istio-system,source_app=istio-ingressgateway,"
           "destination_service=unknown,destination_workload=unknown,"
           "destination_workload_namespace=unknown,request_protocol=http,"
           "connection_security_policy=unknown,response_code=503,response_flags=NC",
           60, 1);
    mesh m;
    two_rounds(&m, wf_strbuf_cstr(&gw), "", "");
    json_t *g = wf_ui_graph_build(m.s, 60, "shop");
    assert_non_null(g);
    json_t *edges = json_object_get(g, "edges"), *nodes = json_object_get(g, "nodes");
    assert_int_equal(json_array_size(edges), 3); /* gw -> svc -> catalog-v1, gw -> unknown */
    assert_non_null(find(edges, "e:" GW_NODE "->" SVC_NODE));
    json_t *u = find(edges, "e:" GW_NODE "->svc:unknown");
    assert_non_null(u);
    assert_string_equal(json_string_value(json_object_get(u, "health")), "failure");
    assert_non_null(find(nodes, "svc:unknown"));
    json_decref(g);
    /* a namespace none of whose nodes sends there: nothing */
    g = wf_ui_graph_build(m.s, 60, "other");
    assert_int_equal(json_array_size(json_object_get(g, "edges")), 0);
    json_decref(g);
    mesh_free(&m);
    wf_strbuf_free(&gw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kiali_default_health),
        cmocka_unit_test(test_gateway_timeout_disagree),
        cmocka_unit_test(test_unknown_fallback_and_tcp),
        cmocka_unit_test(test_namespace_keeps_unknown_of_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
