/*
 * test_tcp_metadata_exchange.c - Istio's TCP metadata exchange preamble
 * (filters/network/metadata_exchange.h): encode / decode round trips, the bytes as Istio
 * writes them (header, Any type_url, the two Struct keys), truncated input at every length,
 * a wrong magic, an oversized length, a malformed Any, and one connection side's state
 * machine (ALPN gate, preamble once, bytes after the preamble left for the application).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/filters/network/metadata_exchange.h"

static wp_istio_str S(const char *s)
{
    return (wp_istio_str){s, strlen(s)};
}

static wp_istio_workload client_pod(void)
{
    wp_istio_workload w;
    memset(&w, 0, sizeof w);
    w.f[WP_WL_NAME] = S("sleep-7d9c-abcde");
    w.f[WP_WL_NAMESPACE] = S("default");
    w.f[WP_WL_WORKLOAD] = S("sleep");
    w.f[WP_WL_CLUSTER] = S("Kubernetes");
    w.f[WP_WL_OWNER] = S("kubernetes://apis/apps/v1/namespaces/default/deployments/sleep");
    w.f[WP_WL_APP] = S("sleep");
    w.f[WP_WL_VERSION] = S("v1");
    w.f[WP_WL_CANONICAL_NAME] = S("sleep");
    w.f[WP_WL_CANONICAL_REVISION] = S("v1");
    return w;
}

static void assert_field(const wp_istio_workload *w, int i, const char *want)
{
    assert_int_equal(w->f[i].len, strlen(want));
    assert_memory_equal(w->f[i].p, want, strlen(want));
}

static void encode(const wp_istio_workload *w, const char *id, wf_strbuf *out)
{
    wp_tcp_mx_encode(w, id, out);
    assert_false(wf_strbuf_failed(out));
}

static void test_round_trip(void **state)
{
    (void)state;
    wp_istio_workload w = client_pod();
    wf_strbuf b = WF_STRBUF_INIT;
    encode(&w, "sidecar~10.0.0.1~sleep-7d9c-abcde.default~default.svc.cluster.local", &b);
    const uint8_t *p = (const uint8_t *)b.data;
    /* magic and length, big-endian */
    assert_int_equal(p[0], 0x3D);
    assert_int_equal(p[1], 0x23);
    assert_int_equal(p[2], 0x04);
    assert_int_equal(p[3], 0x67);
    uint32_t n = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
    assert_int_equal(n, b.len - 8);
    /* Any.type_url first, then the Struct with both keys, metadata before its id */
    assert_int_equal(p[8], 0x0a);
    assert_memory_equal(p + 10, WP_TCP_MX_STRUCT_URL, strlen(WP_TCP_MX_STRUCT_URL));
    const char *md = memmem(b.data, b.len, "x-envoy-peer-metadata", 21);
    const char *id = memmem(b.data, b.len, "x-envoy-peer-metadata-id", 24);
    assert_non_null(md);
    assert_non_null(id);
    assert_true(md < id);

    wp_tcp_mx_peer peer;
    size_t used = 99;
    assert_int_equal(wp_tcp_mx_decode(p, b.len, &peer, &used), WP_TCP_MX_DONE);
    assert_int_equal(used, b.len);
    for (int i = 0; i < WP_WL_COUNT_; i++)
        assert_field(&peer.w, i, w.f[i].p);
    wf_strbuf_free(&b);
}

static void test_round_trip_empty_workload(void **state)
{
    (void)state;
    wp_istio_workload w;
    memset(&w, 0, sizeof w);
    wf_strbuf b = WF_STRBUF_INIT;
    encode(&w, "", &b);
    assert_null(memmem(b.data, b.len, "x-envoy-peer-metadata-id", 24));
    wp_tcp_mx_peer peer;
    size_t used;
    assert_int_equal(wp_tcp_mx_decode((const uint8_t *)b.data, b.len, &peer, &used),
                     WP_TCP_MX_DONE);
    assert_int_equal(used, b.len);
    for (int i = 0; i < WP_WL_COUNT_; i++)
        assert_int_equal(peer.w.f[i].len, 0);
    wf_strbuf_free(&b);
}

static void test_truncated(void **state)
{
    (void)state;
    wp_istio_workload w = client_pod();
    wf_strbuf b = WF_STRBUF_INIT;
    encode(&w, "id", &b);
    wp_tcp_mx_peer peer;
    for (size_t n = 0; n < b.len; n++) {
        size_t used = 99;
        assert_int_equal(wp_tcp_mx_decode((const uint8_t *)b.data, n, &peer, &used),
                         WP_TCP_MX_MORE);
        assert_int_equal(used, 0);
    }
    wf_strbuf_free(&b);
}

static void test_wrong_magic(void **state)
{
    (void)state;
    const uint8_t line[] = "GET / HTTP/1.1\r\n";
    wp_tcp_mx_peer peer;
    size_t used = 99;
    assert_int_equal(wp_tcp_mx_decode(line, sizeof line - 1, &peer, &used), WP_TCP_MX_INVALID);
    assert_int_equal(used, 0); /* nothing drained: the bytes are the application's */
}

static void test_oversized(void **state)
{
    (void)state;
    uint8_t h[8] = {0x3D, 0x23, 0x04, 0x67, 0x00, 0x00, 0x20, 0x01}; /* 8193 bytes */
    wp_tcp_mx_peer peer;
    size_t used = 99;
    assert_int_equal(wp_tcp_mx_decode(h, sizeof h, &peer, &used), WP_TCP_MX_INVALID);
    assert_int_equal(used, 8);
    uint8_t big[8] = {0x3D, 0x23, 0x04, 0x67, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(wp_tcp_mx_decode(big, sizeof big, &peer, &used), WP_TCP_MX_INVALID);
}

static void test_malformed_any(void **state)
{
    (void)state;
    /* a length-delimited field running past the data */
    uint8_t bad[] = {0x3D, 0x23, 0x04, 0x67, 0, 0, 0, 3, 0x0a, 0x10, 'x'};
    wp_tcp_mx_peer peer;
    size_t used = 0;
    assert_int_equal(wp_tcp_mx_decode(bad, sizeof bad, &peer, &used), WP_TCP_MX_INVALID);
    assert_int_equal(used, 8);
    /* a well-formed Any of another type */
    uint8_t other[] = {0x3D, 0x23, 0x04, 0x67, 0, 0, 0, 5, 0x0a, 0x03, 'a', '/', 'b'};
    assert_int_equal(wp_tcp_mx_decode(other, sizeof other, &peer, &used), WP_TCP_MX_INVALID);
    /* a Struct Any without its value (fuzz_tcp_mx): the empty Struct, no peer fields */
    uint8_t novalue[8 + 2 + 42];
    memcpy(novalue, "\x3d\x23\x04\x67\x00\x00\x00\x2c\x0a\x2a", 10);
    memcpy(novalue + 10, WP_TCP_MX_STRUCT_URL, 42);
    assert_int_equal(wp_tcp_mx_decode(novalue, sizeof novalue, &peer, &used), WP_TCP_MX_DONE);
    assert_int_equal(used, sizeof novalue);
    for (int i = 0; i < WP_WL_COUNT_; i++)
        assert_int_equal(peer.w.f[i].len, 0);
}

static void test_connection_side(void **state)
{
    (void)state;
    wp_istio_workload w = client_pod();
    wf_strbuf pre = WF_STRBUF_INIT;
    encode(&w, "id", &pre);
    wp_tcp_mx_config cfg = {WP_TCP_MX_PROTOCOL, (const uint8_t *)pre.data, pre.len};

    /* another ALPN: off, nothing written, bytes untouched */
    wp_tcp_mx off = {.cfg = &cfg};
    assert_false(wp_tcp_mx_begin(&off, "istio"));
    const uint8_t *p;
    size_t n;
    bool hold;
    assert_false(wp_tcp_mx_take_preamble(&off, &p, &n));
    assert_int_equal(wp_tcp_mx_on_bytes(&off, (const uint8_t *)"abc", 3, false, &hold), 0);
    assert_false(hold);
    assert_null(wp_tcp_mx_peer_workload(&off));

    /* istio-peer-exchange: the preamble once; the peer's in two pieces, then app bytes */
    wp_tcp_mx m = {.cfg = &cfg};
    assert_true(wp_tcp_mx_begin(&m, WP_TCP_MX_PROTOCOL));
    assert_true(wp_tcp_mx_take_preamble(&m, &p, &n));
    assert_int_equal(n, pre.len);
    assert_false(wp_tcp_mx_take_preamble(&m, &p, &n));
    wf_strbuf wire = WF_STRBUF_INIT;
    wf_strbuf_append(&wire, pre.data, pre.len);
    wf_strbuf_append(&wire, "hello\n", 6);
    assert_int_equal(wp_tcp_mx_on_bytes(&m, (const uint8_t *)wire.data, 5, false, &hold), 0);
    assert_true(hold);
    assert_null(wp_tcp_mx_peer_workload(&m));
    size_t k = wp_tcp_mx_on_bytes(&m, (const uint8_t *)wire.data, wire.len, false, &hold);
    assert_false(hold);
    assert_int_equal(k, pre.len);
    assert_memory_equal(wire.data + k, "hello\n", 6);
    const wp_istio_workload *peer = wp_tcp_mx_peer_workload(&m);
    assert_non_null(peer);
    assert_field(peer, WP_WL_WORKLOAD, "sleep");
    assert_field(peer, WP_WL_CANONICAL_NAME, "sleep");
    /* later bytes are the application's */
    assert_int_equal(wp_tcp_mx_on_bytes(&m, (const uint8_t *)wire.data, wire.len, false, &hold), 0);

    /* the peer ends its stream inside the preamble: given up, bytes pass */
    wp_tcp_mx early = {.cfg = &cfg};
    assert_true(wp_tcp_mx_begin(&early, WP_TCP_MX_PROTOCOL));
    assert_int_equal(wp_tcp_mx_on_bytes(&early, (const uint8_t *)wire.data, 6, true, &hold), 0);
    assert_false(hold);
    assert_int_equal(early.state, WP_TCP_MX_OFF);
    wf_strbuf_free(&wire);
    wf_strbuf_free(&pre);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_round_trip_empty_workload),
        cmocka_unit_test(test_truncated),       cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_oversized),       cmocka_unit_test(test_malformed_any),
        cmocka_unit_test(test_connection_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
