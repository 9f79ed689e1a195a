/*
 * test_istio_stats.c - Istio's standard metrics (istio_peer.c, istio_stats.c,
 * bootstrap_istio.c): base64, the peer-metadata Struct encoding and decoding, node metadata,
 * label building for both reporters, destination_service derivation, /stats and Prometheus
 * label text, the per-worker series table, series counting through the stats store, and the
 * bootstrap's acceptance and rejection of the filters.
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

#include "proxy/bootstrap/bootstrap.h"
#include "proxy/stream_info/istio_peer.h"
#include "proxy/http/filter.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/stats/stats.h"

static wp_istio_str S(const char *s)
{
    return (wp_istio_str){s, s ? strlen(s) : 0};
}

static bool eq(wp_istio_str v, const char *s)
{
    return v.len == strlen(s) && (v.len == 0 || memcmp(v.p, s, v.len) == 0);
}

static wp_istio_workload sample(void)
{
    wp_istio_workload w = {0};
    w.f[WP_WL_NAME] = S("catalog-v1-abc");
    w.f[WP_WL_NAMESPACE] = S("shop");
    w.f[WP_WL_WORKLOAD] = S("catalog-v1");
    w.f[WP_WL_CLUSTER] = S("Kubernetes");
    w.f[WP_WL_OWNER] = S("kubernetes://apis/apps/v1/namespaces/shop/deployments/catalog-v1");
    w.f[WP_WL_APP] = S("catalog");
    w.f[WP_WL_VERSION] = S("v1");
    w.f[WP_WL_CANONICAL_NAME] = S("catalog");
    w.f[WP_WL_CANONICAL_REVISION] = S("v1");
    return w;
}

/* ------------------------------------------------------------------ Struct */

static void test_struct_exact_bytes(void **state)
{
    (void)state;
    wp_istio_workload w = {0};
    w.f[WP_WL_NAMESPACE] = S("ns");
    wf_strbuf b = WF_STRBUF_INIT;
    wp_istio_struct_encode(&w, &b);
    /* {LABELS: {}, NAMESPACE: "ns"}, entries sorted by key */
    static const uint8_t want[] = {0x0a, 0x0c, 0x0a, 0x06, 'L',  'A',  'B',  'E',  'L',  'S', 0x12,
                                   0x02, 0x2a, 0x00, 0x0a, 0x11, 0x0a, 0x09, 'N',  'A',  'M', 'E',
                                   'S',  'P',  'A',  'C',  'E',  0x12, 0x04, 0x1a, 0x02, 'n', 's'};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    wf_strbuf_free(&b);
}

static void test_struct_roundtrip(void **state)
{
    (void)state;
    wp_istio_workload w = sample(), r;
    wf_strbuf b = WF_STRBUF_INIT;
    wp_istio_struct_encode(&w, &b);
    assert_false(wf_strbuf_failed(&b));
    assert_int_equal(wp_istio_struct_decode((const uint8_t *)b.data, b.len, &r), 0);
    for (int i = 0; i < WP_WL_COUNT_; i++) {
        assert_int_equal(r.f[i].len, w.f[i].len);
        assert_memory_equal(r.f[i].p, w.f[i].p, w.f[i].len);
    }
    /* truncated input is an error and leaves nothing behind */
    assert_int_equal(wp_istio_struct_decode((const uint8_t *)b.data, b.len - 3, &r), -1);
    assert_true(r.f[WP_WL_NAMESPACE].len == 0);
    wf_strbuf_free(&b);
}

static void test_peer_value_roundtrip(void **state)
{
    (void)state;
    wp_istio_workload w = sample(), r;
    wf_strbuf v = WF_STRBUF_INIT;
    wp_istio_peer_value(&w, &v);
    assert_false(wf_strbuf_failed(&v));
    uint8_t scratch[1024];
    assert_int_equal(wp_istio_peer_decode(v.data, v.len, scratch, sizeof scratch, &r), 0);
    assert_true(eq(r.f[WP_WL_WORKLOAD], "catalog-v1"));
    assert_true(eq(r.f[WP_WL_CANONICAL_REVISION], "v1"));
    assert_true(eq(r.f[WP_WL_CLUSTER], "Kubernetes"));
    assert_int_equal(wp_istio_peer_decode(v.data, v.len, scratch, 10, &r), -1); /* too long */
    assert_int_equal(wp_istio_peer_decode("%%%", 3, scratch, sizeof scratch, &r), -1);
    wf_strbuf_free(&v);
}

/* Keys it does not know, non-string values and lists are skipped. */
static void test_struct_decode_skips_unknown(void **state)
{
    (void)state;
    /* {"A": 1.0 (number), "NAMESPACE": "x", "L": [..] } written by hand */
    static const uint8_t in[] = {0x0a, 0x0e, 0x0a, 0x01, 'A',  0x12, 0x09, 0x11, 0,    0,
                                 0,    0,    0,    0,    0xf0, 0x3f, 0x0a, 0x10, 0x0a, 0x09,
                                 'N',  'A',  'M',  'E',  'S',  'P',  'A',  'C',  'E',  0x12,
                                 0x03, 0x1a, 0x01, 'x',  0x0a, 0x0b, 0x0a, 0x01, 'L',  0x12,
                                 0x06, 0x32, 0x04, 0x0a, 0x02, 0x20, 0x01};
    wp_istio_workload r;
    assert_int_equal(wp_istio_struct_decode(in, sizeof in, &r), 0);
    assert_true(eq(r.f[WP_WL_NAMESPACE], "x"));
    assert_int_equal(r.f[WP_WL_NAME].len, 0);
    static const uint8_t bad[] = {0x0b}; /* wire type 3 */
    assert_int_equal(wp_istio_struct_decode(bad, sizeof bad, &r), -1);
}

static void test_workload_from_node(void **state)
{
    (void)state;
    json_t *md = json_pack("{s:s,s:s,s:s,s:{s:s,s:s},s:i}", "NAMESPACE", "shop", "WORKLOAD_NAME",
                           "catalog-v1", "CLUSTER_ID", "c1", "LABELS", "app", "catalog",
                           "service.istio.io/canonical-revision", "v3", "NAME", 5);
    assert_non_null(md);
    wp_istio_workload w;
    wp_istio_workload_from_node(md, &w);
    assert_true(eq(w.f[WP_WL_NAMESPACE], "shop"));
    assert_true(eq(w.f[WP_WL_APP], "catalog"));
    assert_true(eq(w.f[WP_WL_CANONICAL_REVISION], "v3"));
    assert_int_equal(w.f[WP_WL_NAME].len, 0); /* not a string */
    assert_int_equal(w.f[WP_WL_VERSION].len, 0);
    json_decref(md);
    wp_istio_workload_from_node(NULL, &w);
    assert_int_equal(w.f[WP_WL_NAMESPACE].len, 0);
}

/* ------------------------------------------------------------------ labels */

static wp_istio_local local_frontend(void)
{
    wp_istio_local l = {0};
    l.w.f[WP_WL_NAMESPACE] = S("shop");
    l.w.f[WP_WL_WORKLOAD] = S("frontend-v1");
    l.w.f[WP_WL_CLUSTER] = S("Kubernetes");
    l.w.f[WP_WL_APP] = S("frontend");
    l.w.f[WP_WL_VERSION] = S("v2");
    l.w.f[WP_WL_CANONICAL_NAME] = S("frontend");
    l.w.f[WP_WL_CANONICAL_REVISION] = S("v2");
    return l;
}

static int idx(const char *name)
{
    for (int i = 0; i < WP_ISTIO_NLABELS; i++)
        if (strcmp(wp_istio_label_names[i], name) == 0)
            return i;
    fail_msg("no label %s", name);
    return -1;
}

static void test_labels_source(void **state)
{
    (void)state;
    wp_istio_local loc = local_frontend();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_SOURCE, false, &loc, NULL, 0};
    wp_istio_workload peer = sample();
    wp_istio_labels l;
    wp_istio_labels_build(&f, &peer, NULL, S("catalog.shop.svc.cluster.local"), S("catalog"), "200",
                          "-", &l);
    assert_true(eq(l.v[0], "source"));
    assert_true(eq(l.v[idx("source_workload")], "frontend-v1"));
    assert_true(eq(l.v[idx("destination_workload")], "catalog-v1"));
    assert_true(eq(l.v[idx("destination_service_namespace")], "shop"));
    assert_true(eq(l.v[idx("connection_security_policy")], "unknown"));
    assert_true(eq(l.v[idx("grpc_response_status")], ""));
    /* no peer: unknown, and latest for the canonical revision */
    wp_istio_labels_build(&f, NULL, NULL, S(NULL), S(NULL), "504", "UT", &l);
    assert_true(eq(l.v[idx("destination_workload")], "unknown"));
    assert_true(eq(l.v[idx("destination_canonical_revision")], "latest"));
    assert_true(eq(l.v[idx("destination_service")], "unknown"));
    assert_true(eq(l.v[idx("destination_service_name")], "unknown"));
    assert_true(eq(l.v[idx("response_flags")], "UT"));
}

static void test_labels_destination(void **state)
{
    (void)state;
    wp_istio_local loc = {0};
    loc.w = sample();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_DESTINATION, true, &loc, NULL, 0};
    wp_istio_labels l;
    wp_istio_labels_build(&f, NULL, NULL, S(NULL), S(NULL), "0", "DC", &l);
    assert_true(eq(l.v[0], "destination"));
    assert_true(eq(l.v[idx("source_workload")], "unknown"));
    assert_true(eq(l.v[idx("source_canonical_revision")], "latest"));
    assert_true(eq(l.v[idx("destination_workload")], "catalog-v1"));
    /* no service: the local canonical name, as istio_stats.cc */
    assert_true(eq(l.v[idx("destination_service")], "catalog"));
    assert_true(eq(l.v[idx("destination_service_name")], "catalog"));
    assert_true(eq(l.v[idx("destination_service_namespace")], "shop"));
    assert_true(eq(l.v[idx("response_code")], "0"));
    assert_true(eq(l.v[idx("connection_security_policy")], "none"));
}

/* Istio's TCP metrics: the same labels less response_code and grpc_response_status,
 * request_protocol "tcp", in the /stats suffix and the Prometheus labels alike. */
static void test_labels_tcp(void **state)
{
    (void)state;
    wp_istio_local loc = {0};
    loc.w = sample();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_DESTINATION, true, &loc, NULL, 0};
    wp_istio_sans sans = {S("spiffe://cluster.local/ns/web/sa/frontend"),
                          S("spiffe://cluster.local/ns/shop/sa/catalog")};
    wp_istio_labels l;
    wp_istio_labels_build(&f, NULL, &sans, S(NULL), S(NULL), "", "UF,URX", &l);
    wp_istio_labels_tcp(&l);
    wf_strbuf suffix = WF_STRBUF_INIT, prom = WF_STRBUF_INIT;
    wp_istio_stats_suffix(&l, &suffix);
    wp_istio_prom_labels(&l, &prom);
    const char *sx = wf_strbuf_cstr(&suffix), *px = wf_strbuf_cstr(&prom);
    assert_null(strstr(sx, "response_code"));
    assert_null(strstr(sx, "grpc_response_status"));
    assert_non_null(strstr(sx, ".request_protocol.tcp.response_flags.UF,URX."));
    assert_null(strstr(px, "response_code="));
    assert_null(strstr(px, "grpc_response_status"));
    assert_non_null(strstr(px, "request_protocol=\"tcp\",response_flags=\"UF,URX\","
                               "connection_security_policy=\"mutual_tls\""));
    assert_non_null(strstr(px, "source_workload_namespace=\"web\""));
    assert_int_equal(strncmp(px, "reporter=\"destination\",", strlen("reporter=\"destination\",")),
                     0);
    wf_strbuf_free(&suffix);
    wf_strbuf_free(&prom);
}

/* A gRPC request (istio_stats.cc): request_protocol "grpc" and its grpc_response_status. */
static void test_labels_grpc(void **state)
{
    (void)state;
    wp_istio_local loc = local_frontend();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_SOURCE, false, &loc, NULL, 0};
    wp_istio_labels l;
    wp_istio_labels_build(&f, NULL, NULL, S("h.x"), S("h"), "200", "UT", &l);
    wp_istio_labels_grpc(&l, "4");
    wf_strbuf b = WF_STRBUF_INIT;
    wp_istio_stats_suffix(&l, &b);
    assert_non_null(strstr(b.data, ".request_protocol.grpc.response_code.200."
                                   "grpc_response_status.4.response_flags.UT."));
    wf_strbuf_reset(&b);
    wp_istio_prom_labels(&l, &b);
    assert_non_null(strstr(b.data, "request_protocol=\"grpc\",response_code=\"200\","
                                   "grpc_response_status=\"4\",response_flags=\"UT\""));
    wf_strbuf_free(&b);
}

/* mTLS (istio_stats.cc populatePeerInfo): the connection's first URI SANs give the
 * principals, the destination's connection_security_policy and the peer's namespace. */
static void test_labels_mtls(void **state)
{
    (void)state;
    wp_istio_local loc = {0};
    loc.w = sample();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_DESTINATION, false, &loc, NULL, 0};
    wp_istio_labels l;
    const char *peer_sans = "spiffe://cluster.local/ns/web/sa/frontend,spiffe://x/y";
    wp_istio_sans sans = {wp_istio_first_san(peer_sans),
                          wp_istio_first_san("spiffe://cluster.local/ns/shop/sa/catalog")};
    assert_true(eq(sans.peer_san, "spiffe://cluster.local/ns/web/sa/frontend"));
    wp_istio_workload peer = sample(); /* metadata says namespace shop: the SAN wins */
    wp_istio_labels_build(&f, &peer, &sans, S(NULL), S(NULL), "200", "-", &l);
    assert_true(eq(l.v[idx("connection_security_policy")], "mutual_tls"));
    assert_true(eq(l.v[idx("source_principal")], "spiffe://cluster.local/ns/web/sa/frontend"));
    assert_true(eq(l.v[idx("destination_principal")], "spiffe://cluster.local/ns/shop/sa/catalog"));
    assert_true(eq(l.v[idx("source_workload_namespace")], "web"));
    /* TLS without a client certificate: no peer SAN, so none; the local SAN still shows */
    sans.peer_san = wp_istio_first_san("");
    wp_istio_labels_build(&f, NULL, &sans, S(NULL), S(NULL), "200", "-", &l);
    assert_true(eq(l.v[idx("connection_security_policy")], "none"));
    assert_true(eq(l.v[idx("source_principal")], "unknown"));
    assert_true(eq(l.v[idx("destination_principal")], "spiffe://cluster.local/ns/shop/sa/catalog"));
    assert_true(eq(l.v[idx("source_workload_namespace")], "unknown"));
    /* a peer SAN without /ns/: the namespace from the metadata */
    sans.peer_san = S("spiffe://cluster.local/other");
    wp_istio_labels_build(&f, &peer, &sans, S(NULL), S(NULL), "200", "-", &l);
    assert_true(eq(l.v[idx("source_workload_namespace")], "shop"));
    assert_true(eq(l.v[idx("connection_security_policy")], "mutual_tls"));
    /* the source: principals from the upstream connection, the policy always unknown */
    wp_istio_local fl = local_frontend();
    wp_istio_stats_filter src = {WP_ISTIO_REPORTER_SOURCE, false, &fl, NULL, 0};
    wp_istio_sans up = {S("spiffe://cluster.local/ns/shop/sa/catalog"),
                        S("spiffe://cluster.local/ns/web/sa/frontend")};
    wp_istio_labels_build(&src, NULL, &up, S("h"), S("h"), "200", "-", &l);
    assert_true(eq(l.v[idx("source_principal")], "spiffe://cluster.local/ns/web/sa/frontend"));
    assert_true(eq(l.v[idx("destination_principal")], "spiffe://cluster.local/ns/shop/sa/catalog"));
    assert_true(eq(l.v[idx("destination_workload_namespace")], "shop"));
    assert_true(eq(l.v[idx("destination_service_namespace")], "shop"));
    assert_true(eq(l.v[idx("connection_security_policy")], "unknown"));
    assert_int_equal(wp_istio_first_san(NULL).len, 0);
}

static void test_service(void **state)
{
    (void)state;
    wp_cluster c = {.name = "outbound|80||catalog.shop.svc.cluster.local"};
    wp_istio_str host, name;
    wp_istio_service(NULL, &c, S("catalog:80"), false, &host, &name);
    assert_true(eq(host, "catalog:80") && eq(name, "catalog:80")); /* Host fallback */
    wp_istio_service(NULL, &c, S("catalog:80"), true, &host, &name);
    assert_true(host.len == 0 && name.len == 0);
    c.istio_services = true;
    c.istio_svc_host = "catalog.shop.svc.cluster.local";
    wp_istio_service(NULL, &c, S("x"), false, &host, &name);
    assert_true(eq(host, "catalog.shop.svc.cluster.local") && eq(name, "catalog"));
    c.istio_svc_name = "catalog-svc";
    wp_istio_service(NULL, &c, S("x"), true, &host, &name);
    assert_true(eq(name, "catalog-svc"));
    wp_cluster pt = {.name = "PassthroughCluster"};
    wp_istio_service(NULL, &pt, S("example.com"), false, &host, &name);
    assert_true(eq(host, "example.com") && eq(name, "PassthroughCluster"));
    wp_istio_service("block_all", NULL, S("example.com"), false, &host, &name);
    assert_true(eq(name, "BlackHoleCluster"));
}

static void test_suffix_and_prom_labels(void **state)
{
    (void)state;
    wp_istio_local loc = local_frontend();
    loc.w.f[WP_WL_APP] = S("a\"b\\c");
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_SOURCE, false, &loc, NULL, 0};
    wp_istio_labels l;
    wp_istio_labels_build(&f, NULL, NULL, S("h.x"), S("h"), "200", "-", &l);
    wf_strbuf b = WF_STRBUF_INIT;
    wp_istio_stats_suffix(&l, &b);
    assert_non_null(strstr(b.data, ".reporter.source.source_workload.frontend-v1."));
    assert_non_null(strstr(b.data, ".destination_service.h.x.destination_canonical_service."));
    assert_non_null(strstr(b.data, ".grpc_response_status.response_flags.-."));
    wf_strbuf_reset(&b);
    wp_istio_prom_labels(&l, &b);
    assert_true(strncmp(b.data, "reporter=\"source\",source_workload=\"frontend-v1\",", 47) == 0);
    assert_non_null(strstr(b.data, "source_app=\"a\\\"b\\\\c\""));
    assert_non_null(strstr(b.data, ",grpc_response_status=\"\","));
    assert_non_null(strstr(b.data, "response_flags=\"-\",connection_security_policy=\"unknown\""));
    wf_strbuf_free(&b);
}

/* ------------------------------------------------------------------ series */

static void test_table(void **state)
{
    (void)state;
    wp_istio_table t = {0};
    char key[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        uint64_t h = wp_istio_hash(key, (size_t)n);
        assert_null(wp_istio_table_find(&t, key, (size_t)n, h));
        wp_istio_series *e = wp_istio_table_insert(&t, key, (size_t)n, h);
        assert_non_null(e);
        e->id[0] = (uint32_t)i;
    }
    assert_int_equal(t.n, 1000);
    assert_true(t.cap >= 1334);
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        wp_istio_series *e = wp_istio_table_find(&t, key, (size_t)n, wp_istio_hash(key, (size_t)n));
        assert_non_null(e);
        assert_int_equal(e->id[0], (uint32_t)i);
    }
    wp_istio_table_free(&t);
}

/* Two workers count the same label tuple: the store sums their shards; a new tuple is a new
 * series; /stats/prometheus prints the family and labels. */
static void test_record_and_render(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(3);
    assert_non_null(st);
    wp_istio_rt *rt = wp_istio_rt_new(st, 2);
    assert_non_null(rt);
    wp_istio_local loc = local_frontend();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_SOURCE, false, &loc, NULL, 0};
    wp_istio_labels ok, to;
    wp_istio_labels_build(&f, NULL, NULL, S("h"), S("h"), "200", "-", &ok);
    wp_istio_labels_build(&f, NULL, NULL, S("h"), S("h"), "504", "UT", &to);
    for (int i = 0; i < 3; i++)
        assert_int_equal(wp_istio_record(rt, 0, wp_stats_get_shard(st, 0), &ok, 12, 100, 200), 0);
    assert_int_equal(wp_istio_record(rt, 1, wp_stats_get_shard(st, 1), &ok, 7, 100, 200), 0);
    assert_int_equal(wp_istio_record(rt, 1, wp_stats_get_shard(st, 1), &to, 500, 90, 150), 0);
    assert_int_equal(wp_istio_record(rt, 2, wp_stats_get_shard(st, 1), &to, 1, 1, 1), -1);
    wf_strbuf name = WF_STRBUF_INIT;
    wf_strbuf_puts(&name, "istiocustom.istio_requests_total");
    wp_istio_stats_suffix(&ok, &name);
    uint32_t slot = wp_stats_counter(st, name.data);
    assert_int_equal(wp_stats_value(st, slot), 4);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_prometheus(st, NULL, false, NULL, &out);
    assert_non_null(strstr(out.data, "# TYPE istio_requests_total counter\n"
                                     "istio_requests_total{reporter=\"source\","));
    assert_non_null(strstr(out.data, "response_code=\"504\",grpc_response_status=\"\","
                                     "response_flags=\"UT\",connection_security_policy="
                                     "\"unknown\"} 1\n"));
    assert_non_null(strstr(out.data, "# TYPE istio_request_duration_milliseconds histogram\n"));
    assert_null(strstr(out.data, "envoy_istiocustom"));
    wf_strbuf_reset(&out);
    wp_stats_render_text(st, NULL, false, &out);
    assert_non_null(strstr(out.data, name.data));
    wf_strbuf_free(&out);
    wf_strbuf_free(&name);
    wp_istio_rt_free(rt);
    wp_stats_free(st);
}

/* Istio's gRPC message counters (istio_stats.cc reportHelper): the labels up to
 * destination_cluster, two counters per series, the HTTP series untouched. */
static void test_record_messages(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    assert_non_null(st);
    wp_istio_rt *rt = wp_istio_rt_new(st, 1);
    assert_non_null(rt);
    wp_istio_local loc = local_frontend();
    wp_istio_stats_filter f = {WP_ISTIO_REPORTER_SOURCE, false, &loc, NULL, 0};
    wp_istio_labels l;
    wp_istio_labels_build(&f, NULL, NULL, S("h.x"), S("h"), "200", "-", &l);
    wp_istio_labels_grpc(&l, "0");
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    assert_int_equal(wp_istio_record(rt, 0, sh, &l, 1, 10, 20), 0);
    wp_istio_labels m = l;
    wp_istio_labels_messages(&m);
    /* not a message label set: refused */
    assert_int_equal(wp_istio_record_messages(rt, 0, sh, &l, 1, 1), -1);
    assert_int_equal(wp_istio_record_messages(rt, 0, sh, &m, 3, 5), 0);
    assert_int_equal(wp_istio_record_messages(rt, 0, sh, &m, 1, 0), 0);
    wf_strbuf b = WF_STRBUF_INIT;
    wp_istio_stats_suffix(&m, &b);
    const char *end = ".destination_cluster.unknown";
    assert_int_equal(strcmp(b.data + b.len - strlen(end), end), 0);
    assert_null(strstr(b.data, "request_protocol"));
    wf_strbuf name = WF_STRBUF_INIT;
    wf_strbuf_printf(&name, "istiocustom.istio_request_messages_total%s", b.data);
    assert_int_equal(wp_stats_value(st, wp_stats_counter(st, name.data)), 4);
    wf_strbuf_reset(&name);
    wf_strbuf_printf(&name, "istiocustom.istio_response_messages_total%s", b.data);
    assert_int_equal(wp_stats_value(st, wp_stats_counter(st, name.data)), 5);
    wf_strbuf_reset(&b);
    wp_stats_render_prometheus(st, NULL, false, NULL, &b);
    assert_non_null(strstr(b.data, "# TYPE istio_request_messages_total counter\n"
                                   "istio_request_messages_total{reporter=\"source\","));
    assert_non_null(strstr(b.data, "destination_cluster=\"unknown\"} 4\n"));
    assert_non_null(strstr(b.data, "destination_cluster=\"unknown\"} 5\n"));
    assert_non_null(strstr(b.data, "request_protocol=\"grpc\",response_code=\"200\","
                                   "grpc_response_status=\"0\""));
    wf_strbuf_free(&b);
    wf_strbuf_free(&name);
    wp_istio_rt_free(rt);
    wp_stats_free(st);
}

/* ------------------------------------------------------------------ bootstrap */

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define MX_OUT                                                                                     \
    "{\"name\":\"istio.metadata_exchange\",\"typed_config\":{\"@type\":\"type.googleapis.com/"     \
    "udpa.type.v1.TypedStruct\",\"type_url\":\"type.googleapis.com/"                               \
    "io.istio.http.peer_metadata.Config\",\"value\":{\"upstream_discovery\":[{\"istio_headers\":"  \
    "{}},{\"workload_discovery\":{}}],\"upstream_propagation\":[{\"istio_headers\":{}}]}}}"

static char *boot(const char *direction, const char *stats_value, const char *cluster_md)
{
    char *out = NULL;
    int n = asprintf(
        &out,
        "{\"node\":{\"id\":\"sidecar~1\",\"metadata\":{\"NAMESPACE\":\"shop\",\"ISTIO_VERSION\":"
        "\"1.24.0\",\"LABELS\":{\"app\":\"a\"}}},\"static_resources\":{\"listeners\":[{"
        "\"traffic_direction\":\"%s\",\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\","
        "\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"in\",\"http_filters\":[" MX_OUT ",{\"name\":\"istio.stats\","
        "\"typed_config\":{\"@type\":\"type.googleapis.com/udpa.type.v1.TypedStruct\","
        "\"type_url\":\"type.googleapis.com/stats.PluginConfig\",\"value\":{%s}}},"
        "{\"name\":\"envoy.filters.http.router\"}],\"route_config\":{\"virtual_hosts\":[{"
        "\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":"
        "{\"cluster\":\"c\"}}]}]}}}]}]}],\"clusters\":[{\"name\":\"c\",%s\"load_assignment\":{"
        "\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{"
        "\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]}}",
        direction, stats_value, cluster_md);
    assert_true(n > 0);
    return out;
}

static wp_config *load(const char *text, wf_strbuf *err)
{
    return wf_test_load_bootstrap(text, err);
}

static void test_bootstrap_accepts(void **state)
{
    (void)state;
    char *t =
        boot("INBOUND", "\"disable_host_header_fallback\":true",
             "\"metadata\":{\"filter_metadata\":{\"istio\":{\"services\":[{\"host\":\"c.ns"
             ".svc.cluster.local\",\"name\":\"c\",\"namespace\":\"ns\"}],\"config\":\"x\"}}},");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load(t, &err);
    assert_non_null(c);
    const wp_hcm *h = c->listeners[0].chains[0].hcm;
    const wp_istio_stats_filter *hs = wp_fchain_find(h->filter_chain, WP_ISTIO_STATS_NAME);
    const wp_istio_mx_filter *hm = wp_fchain_find(h->filter_chain, WP_ISTIO_MX_NAME);
    assert_non_null(hs);
    assert_int_equal(hs->reporter, WP_ISTIO_REPORTER_DESTINATION);
    assert_true(hs->disable_host_header_fallback);
    assert_string_equal(hs->local->istio_version, "1.24.0");
    assert_non_null(hm);
    assert_true(hm->upstream_discovery && hm->upstream_propagation);
    assert_false(hm->downstream_discovery);
    assert_int_equal(hm->req.nadd, 2);
    assert_int_equal(hm->resp[3].nremove, 2);
    assert_int_equal(hm->resp[3].nadd, 0);
    assert_true(c->clusters[0].istio_services);
    assert_string_equal(c->clusters[0].istio_svc_host, "c.ns.svc.cluster.local");
    wp_config_unref(c);
    free(t);
    t = boot("OUTBOUND", "", "");
    c = load(t, &err);
    assert_non_null(c);
    const wp_istio_stats_filter *sf =
        wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_ISTIO_STATS_NAME);
    assert_non_null(sf);
    assert_int_equal(sf->reporter, WP_ISTIO_REPORTER_SOURCE);
    wp_config_unref(c);
    free(t);
    wf_strbuf_free(&err);
}

static void expect_error(const char *dir, const char *value, const char *md, const char *where)
{
    char *t = boot(dir, value, md);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load(t, &err);
    assert_null(c);
    if (!strstr(wf_strbuf_cstr(&err), where))
        fail_msg("want %s in: %s", where, wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    free(t);
}

static void test_bootstrap_rejects(void **state)
{
    (void)state;
    expect_error("OUTBOUND", "\"reporter\":\"SERVER_GATEWAY\"", "",
                 "http_filters[1].typed_config.value.reporter: SERVER_GATEWAY");
    expect_error("OUTBOUND", "\"definitions\":[{\"name\":\"x\"}]", "",
                 "typed_config.value.definitions: custom metric definitions");
    expect_error("OUTBOUND", "\"disable_host_header_fallback\":1", "",
                 "value.disable_host_header_fallback: wrong type");
    expect_error("SIDEWAYS", "", "", "traffic_direction: unsupported value");
    expect_error("OUTBOUND", "",
                 "\"metadata\":{\"filter_metadata\":{\"istio\":{\"services\":[{"
                 "\"host\":1}]}}},",
                 "clusters[0].metadata.filter_metadata.istio.services[0].host: wrong type");
    expect_error("OUTBOUND", "", "\"metadata\":{\"typed_filter_metadata\":{}},",
                 "clusters[0].metadata.typed_filter_metadata: not supported by weft-proxy (Envoy's "
                 "envoy.config.core.v3.Metadata.typed_filter_metadata)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {

        cmocka_unit_test(test_struct_exact_bytes),
        cmocka_unit_test(test_struct_roundtrip),
        cmocka_unit_test(test_peer_value_roundtrip),
        cmocka_unit_test(test_struct_decode_skips_unknown),
        cmocka_unit_test(test_workload_from_node),
        cmocka_unit_test(test_labels_source),
        cmocka_unit_test(test_labels_destination),
        cmocka_unit_test(test_labels_mtls),
        cmocka_unit_test(test_service),
        cmocka_unit_test(test_suffix_and_prom_labels),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_record_and_render),
        cmocka_unit_test(test_record_messages),
        cmocka_unit_test(test_labels_tcp),
        cmocka_unit_test(test_labels_grpc),
        cmocka_unit_test(test_bootstrap_accepts),
        cmocka_unit_test(test_bootstrap_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
