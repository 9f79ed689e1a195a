/*
 * test_pilot_cds_protocol.c - the upstream protocol of pilot's clusters (pilot/cds.h "Upstream
 * protocol", pilot/inbound.h; Istio's setUpstreamProtocol, applyH2Upgrade, shouldH2Upgrade,
 * clusterWrapper.build; reference protocols.md §1.5, §2.6): HTTP/2 options for ports named grpc,
 * http2, grpc-web or with appProtocol grpc / kubernetes.io/h2c, none for http, the downstream's
 * protocol for unnamed ports (not on gateways), DestinationRule h2UpgradePolicy UPGRADE /
 * DO_NOT_UPGRADE against MeshConfig h2UpgradePolicy, useClientProtocol, maxConcurrentStreams,
 * the h2 ALPN of ISTIO_MUTUAL, and the inbound clusters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "model/store.h"
#include "pilot/cds.h"
#include "pilot/inbound.h"

static const char svc_yaml[] = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: api, namespace: shop}\n"
                               "spec:\n"
                               "  selector: {app: api}\n"
                               "  ports:\n"
                               "  - {name: grpc, port: 9000}\n"
                               "  - {name: http2-x, port: 9001}\n"
                               "  - {name: grpc-web, port: 9002}\n"
                               "  - {name: x, port: 9003, appProtocol: grpc}\n"
                               "  - {name: y, port: 9004, appProtocol: kubernetes.io/h2c}\n"
                               "  - {name: http, port: 80}\n"
                               "  - {port: 8080}\n"
                               "  - {name: tcp-db, port: 5432}\n"
                               "  - {port: 3306}\n"
                               "---\n";

#define API(port, subset) "outbound|" #port "|" subset "|api.shop.svc.cluster.local"

static json_t *find(json_t *arr, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    }
    fail_msg("no cluster %s", name);
    return NULL;
}

/* The cluster's HttpProtocolOptions, NULL when it has none. */
static json_t *hpo(json_t *c)
{
    return json_object_get(json_object_get(c, "typed_extension_protocol_options"),
                           "envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
}

static bool is_h2(json_t *c)
{
    json_t *h = hpo(c);
    json_t *e =
        json_object_get(json_object_get(h, "explicit_http_config"), "http2_protocol_options");
    return h && json_is_object(e) &&
           json_object_size(json_object_get(h, "explicit_http_config")) == 1 &&
           !json_object_get(h, "use_downstream_protocol_config");
}

static bool is_downstream(json_t *c)
{
    json_t *h = hpo(c);
    json_t *want = json_pack("{s:{},s:{}}", "http_protocol_options", "http2_protocol_options");
    bool ok = h && json_equal(json_object_get(h, "use_downstream_protocol_config"), want) &&
              !json_object_get(h, "explicit_http_config");
    json_decref(want);
    return ok;
}

static json_t *build(const char *extra, wf_cds_options opt, wf_store **s)
{
    static char yaml[8192];
    snprintf(yaml, sizeof yaml, "%s%s", svc_yaml, extra ? extra : "");
    *s = wf_test_load_store(NULL, yaml, NULL);
    json_t *out = wf_cds_sidecar_clusters(*s, &opt);
    assert_non_null(out);
    return out;
}

static void by_port_protocol(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = build(NULL, (wf_cds_options){.proxy_ns = "shop"}, &s);
    assert_true(is_h2(find(out, API(9000, ""))));
    assert_true(is_h2(find(out, API(9001, ""))));
    assert_true(is_h2(find(out, API(9002, "")))); /* GRPC-Web: Istio's IsHTTP2 */
    assert_true(is_h2(find(out, API(9003, ""))));
    assert_true(is_h2(find(out, API(9004, ""))));
    json_t *h = hpo(find(out, API(9000, "")));
    wf_test_expect_str(
        h, "@type", "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions");
    assert_null(hpo(find(out, API(80, ""))));             /* http: HTTP/1.1 */
    assert_true(is_downstream(find(out, API(8080, "")))); /* sniffed */
    assert_null(hpo(find(out, API(5432, ""))));           /* TCP */
    assert_null(hpo(find(out, API(3306, ""))));           /* unnamed 3306 is TCP */
    json_decref(out);
    wf_store_free(s);
    /* a gateway does not copy the downstream protocol: HTTP/1.1 */
    out = build(NULL, (wf_cds_options){.proxy_ns = "shop", .router = true}, &s);
    assert_null(hpo(find(out, API(8080, ""))));
    assert_true(is_h2(find(out, API(9000, ""))));
    json_decref(out);
    wf_store_free(s);
}

static void mesh_h2_upgrade(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = build(NULL, (wf_cds_options){.proxy_ns = "shop", .mesh_h2_upgrade = true}, &s);
    assert_true(is_h2(find(out, API(80, ""))));           /* HTTP follows the mesh */
    assert_true(is_downstream(find(out, API(8080, "")))); /* not a declared HTTP port */
    assert_null(hpo(find(out, API(5432, ""))));
    json_decref(out);
    wf_store_free(s);
}

static const char dr_yaml[] =
    "apiVersion: networking.istio.io/v1\n"
    "kind: DestinationRule\n"
    "metadata: {name: api, namespace: shop}\n"
    "spec:\n"
    "  host: api\n"
    "  trafficPolicy:\n"
    "    connectionPool: {http: {h2UpgradePolicy: UPGRADE}}\n"
    "    portLevelSettings:\n"
    "    - port: {number: 9000}\n"
    "      connectionPool: {http: {useClientProtocol: true, maxRequestsPerConnection: 5}}\n"
    "    - port: {number: 9001}\n"
    "      connectionPool: {http: {maxConcurrentStreams: 77, idleTimeout: 30s}}\n"
    "    - port: {number: 9003}\n"
    "      connectionPool: {http: {h2UpgradePolicy: DO_NOT_UPGRADE}}\n"
    "  subsets:\n"
    "  - name: v1\n"
    "    labels: {version: v1}\n"
    "    trafficPolicy: {connectionPool: {http: {h2UpgradePolicy: DO_NOT_UPGRADE}}}\n";

static void destination_rule(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = build(dr_yaml, (wf_cds_options){.proxy_ns = "shop"}, &s);
    /* UPGRADE: HTTP, sniffed and even TCP ports become explicit HTTP/2 */
    assert_true(is_h2(find(out, API(80, ""))));
    assert_true(is_h2(find(out, API(8080, ""))));
    assert_true(is_h2(find(out, API(5432, ""))));
    /* the subset's DO_NOT_UPGRADE: http stays HTTP/1.1, the sniffed port copies downstream */
    assert_null(hpo(find(out, API(80, "v1"))));
    assert_true(is_downstream(find(out, API(8080, "v1"))));
    /* DO_NOT_UPGRADE on a gRPC port keeps its HTTP/2 (only upgrades are decided here) */
    assert_true(is_h2(find(out, API(9003, ""))));
    /* useClientProtocol beats the port's HTTP/2 and the upgrade */
    json_t *c = find(out, API(9000, ""));
    assert_true(is_downstream(c));
    wf_test_expect_int(hpo(c), "common_http_protocol_options.max_requests_per_connection", 5);
    /* the port-level pool replaces the rule's (no UPGRADE there): maxConcurrentStreams stays in
     * the port's HTTP/2 options */
    c = find(out, API(9001, ""));
    assert_true(is_h2(c));
    wf_test_expect_int(hpo(c), "explicit_http_config.http2_protocol_options.max_concurrent_streams",
                       77);
    wf_test_expect_str(hpo(c), "common_http_protocol_options.idle_timeout", "30s");
    json_decref(out);
    wf_store_free(s);
}

static const char streams_yaml[] =
    "apiVersion: networking.istio.io/v1\n"
    "kind: DestinationRule\n"
    "metadata: {name: api, namespace: shop}\n"
    "spec:\n"
    "  host: api\n"
    "  trafficPolicy:\n"
    "    connectionPool: {http: {maxConcurrentStreams: 77, idleTimeout: 30s}}\n";

static void max_concurrent_streams_and_finish(void **state)
{
    (void)state;
    wf_store *s;
    /* MeshConfig UPGRADE upgrades every HTTP-class port, gRPC included, and the upgrade
     * rewrites the HTTP/2 options: maxConcurrentStreams is lost (Istio's setH2Options) */
    json_t *out =
        build(streams_yaml, (wf_cds_options){.proxy_ns = "shop", .mesh_h2_upgrade = true}, &s);
    assert_true(is_h2(find(out, API(9000, ""))));
    assert_null(
        wf_test_json_at(hpo(find(out, API(9000, ""))),
                        "explicit_http_config.http2_protocol_options.max_concurrent_streams"));
    assert_true(is_h2(find(out, API(80, ""))));
    json_decref(out);
    wf_store_free(s);
    out = build(streams_yaml, (wf_cds_options){.proxy_ns = "shop"}, &s);
    json_t *h = hpo(find(out, API(9000, "")));
    wf_test_expect_int(h, "explicit_http_config.http2_protocol_options.max_concurrent_streams", 77);
    /* common_http_protocol_options before the protocol choice, as Envoy prints */
    const char *first = NULL;
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v)
    {
        if (k++ == 1)
            first = key;
    }
    assert_string_equal(first, "common_http_protocol_options");
    /* HTTP/1.1 port with options but no protocol: explicit http_protocol_options {} */
    h = hpo(find(out, API(80, "")));
    json_t *want = json_pack("{s:{}}", "http_protocol_options");
    assert_true(json_equal(json_object_get(h, "explicit_http_config"), want));
    json_decref(want);
    assert_null(wf_test_json_at(h, "explicit_http_config.http2_protocol_options"));
    json_decref(out);
    wf_store_free(s);
}

static void istio_mutual_alpn(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = build(NULL, (wf_cds_options){.proxy_ns = "shop"}, &s);
    json_t *alpn = wf_test_json_at(
        find(out, API(9000, "")),
        "transport_socket_matches.0.transport_socket.typed_config.common_tls_context."
        "alpn_protocols");
    json_t *want = json_pack("[s,s,s]", "istio-peer-exchange", "istio", "h2");
    assert_true(json_equal(alpn, want));
    json_decref(want);
    alpn = wf_test_json_at(find(out, API(80, "")),
                           "transport_socket_matches.0.transport_socket.typed_config."
                           "common_tls_context.alpn_protocols");
    want = json_pack("[s,s]", "istio-peer-exchange", "istio");
    assert_true(json_equal(alpn, want));
    json_decref(want);
    json_decref(out);
    wf_store_free(s);
}

static void inbound_clusters(void **state)
{
    (void)state;
    static char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s%s", svc_yaml,
             "apiVersion: v1\nkind: Pod\nmetadata: {name: api-1, namespace: shop, labels: {app: "
             "api}}\nspec: {containers: [{name: a}]}\nstatus: {podIP: 127.10.0.9}\n");
    wf_store *s = wf_test_load_store(NULL, yaml, NULL);
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "shop", "api-1");
    assert_non_null(pod);
    const wf_inbound_options o = {.ns = "shop", .labels = &pod->labels, .pod = pod};
    json_t *out = wf_inbound_clusters(s, &o);
    assert_non_null(out);
    assert_true(is_h2(find(out, "inbound|9000||")));
    assert_true(is_h2(find(out, "inbound|9002||")));
    assert_null(hpo(find(out, "inbound|80||")));
    assert_true(is_downstream(find(out, "inbound|8080||")));
    assert_null(hpo(find(out, "inbound|5432||")));
    json_decref(out);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(by_port_protocol),  cmocka_unit_test(mesh_h2_upgrade),
        cmocka_unit_test(destination_rule),  cmocka_unit_test(max_concurrent_streams_and_finish),
        cmocka_unit_test(istio_mutual_alpn), cmocka_unit_test(inbound_clusters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
