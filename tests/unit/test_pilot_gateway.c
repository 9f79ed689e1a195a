/*
 * test_pilot_gateway.c - pilot/gateway: an ingress gateway's listeners and `http.<port>` route
 * configurations from the book's catalog Gateway and VirtualService
 * (../shared/corpus/istioinaction/ch10/) behind an inline istio-ingressgateway Service, Pod and
 * Deployment: the Service's targetPort as listener port, the pod IP as bind address, virtual
 * hosts per intersecting host, the weighted subset routes, the blackhole virtual host, server
 * host namespaces, match gateways, and the proxy's CDS without the DestinationRule (no subset
 * cluster: the gateway answers 503 NC).
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

#include "analysis/meshcfg.h"
#include "harness.h"
#include "model/store.h"
#include "pilot/gateway.h"
#include "pilot/generate.h"

#define BOOK     "../shared/corpus/istioinaction/"
#define HCM_PATH "filter_chains.0.filters.0.typed_config"
#define CATALOG  "catalog.istioinaction.svc.cluster.local"

static const char *const book_no_dr[] = {
    BOOK "services/catalog/kubernetes/catalog.yaml", BOOK "ch10/catalog-deployment-v2.yaml",
    BOOK "ch10/catalog-gateway.yaml", BOOK "ch10/catalog-virtualservice-subsets-v1-v2.yaml", NULL};
static const char *const book_dr[] = {BOOK "services/catalog/kubernetes/catalog.yaml",
                                      BOOK "ch10/catalog-deployment-v2.yaml",
                                      BOOK "ch10/catalog-gateway.yaml",
                                      BOOK "ch10/catalog-virtualservice-subsets-v1-v2.yaml",
                                      BOOK "ch10/catalog-destinationrule-v1-v2.yaml",
                                      NULL};

/* The ingress gateway as istioctl install makes it, and one catalog pod per version. */
static const char *const ingress =
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: istio-ingressgateway, namespace: istio-system}\n"
    "spec:\n"
    "  selector: {istio: ingressgateway}\n"
    "  ports:\n"
    "  - {name: http2, port: 80, targetPort: 8080}\n"
    "  - {name: https, port: 443, targetPort: 8443}\n"
    "---\n"
    "apiVersion: apps/v1\n"
    "kind: Deployment\n"
    "metadata: {name: istio-ingressgateway, namespace: istio-system}\n"
    "spec:\n"
    "  selector: {matchLabels: {istio: ingressgateway}}\n"
    "  template:\n"
    "    metadata: {labels: {istio: ingressgateway, app: istio-ingressgateway}}\n"
    "    spec:\n"
    "      containers:\n"
    "      - {name: istio-proxy, ports: [{containerPort: 8080}, {containerPort: 8443}]}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: istio-ingressgateway-7d4f\n"
    "  namespace: istio-system\n"
    "  labels: {istio: ingressgateway, app: istio-ingressgateway}\n"
    "spec:\n"
    "  containers:\n"
    "  - {name: istio-proxy, ports: [{containerPort: 8080}, {containerPort: 8443}]}\n"
    "status: {podIP: 127.10.0.2, phase: Running}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: catalog-v1-abc\n"
    "  namespace: istioinaction\n"
    "  labels: {app: catalog, version: v1}\n"
    "spec:\n"
    "  containers: [{name: catalog, ports: [{name: http, containerPort: 3000}]}]\n"
    "status: {podIP: 127.10.0.3, phase: Running}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: catalog-v2-def\n"
    "  namespace: istioinaction\n"
    "  labels: {app: catalog, version: v2}\n"
    "spec:\n"
    "  containers: [{name: catalog, ports: [{name: http, containerPort: 3000}]}]\n"
    "status: {podIP: 127.10.0.4, phase: Running}\n";

/* ---- helpers ---- */

static wf_store *load(const char *const *paths, const char *extra)
{
    size_t n = strlen(ingress) + (extra ? strlen(extra) + 8 : 0) + 1;
    char *yaml = malloc(n);
    assert_non_null(yaml);
    snprintf(yaml, n, "%s%s%s", ingress, extra ? "---\n" : "", extra ? extra : "");
    wf_store *s = wf_test_load_store(paths, yaml, "istioinaction");
    free(yaml);
    return s;
}

typedef struct gw_proxy {
    wf_pilot_proxy p;
    wf_pilot_env env;
} gw_proxy;

/* The router proxy of the ingress gateway pod, as weft-proxy would introduce itself. */
static gw_proxy router(const wf_store *s)
{
    gw_proxy g = {.env = {.store = s}};
    json_t *md = json_pack("{s:s}", "PROXY_TYPE", "router");
    wf_xds_node node = {.id = "istio-ingressgateway-7d4f.istio-system", .metadata = md};
    char err[256] = "";
    assert_int_equal(wf_pilot_proxy_from_node(&node, s, &g.p, err, sizeof err), 0);
    json_decref(md);
    return g;
}

static json_t *gen(gw_proxy *g, wf_xds_type t)
{
    json_t *out = wf_pilot_generate(&g->env, &g->p, t, NULL);
    assert_non_null(out);
    return out;
}

static json_t *by_name(json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strcmp(n, name) == 0)
            return v;
    }
    return NULL;
}

/* ---- tests ---- */

static void listener_on_target_port(void **state)
{
    (void)state;
    wf_store *s = load(book_no_dr, NULL);
    gw_proxy g = router(s);
    assert_int_equal(g.p.kind, WF_PROXY_ROUTER);
    assert_string_equal(g.p.ip, "127.10.0.2");
    json_t *lds = gen(&g, WF_XDS_LDS);
    assert_int_equal(json_array_size(lds), 1);
    json_t *l = json_array_get(lds, 0);
    wf_test_expect_str(l, "@type", "type.googleapis.com/envoy.config.listener.v3.Listener");
    wf_test_expect_str(l, "name", "0.0.0.0_8080");
    wf_test_expect_str(l, "address.socket_address.address", "127.10.0.2");
    wf_test_expect_int(l, "address.socket_address.port_value", 8080);
    wf_test_expect_str(l, "traffic_direction", "OUTBOUND");
    json_t *h = wf_test_json_at(l, HCM_PATH);
    wf_test_expect_str(h, "stat_prefix", "outbound_0.0.0.0_8080");
    wf_test_expect_str(h, "rds.route_config_name", "http.8080");
    wf_test_expect_str(h, "rds.config_source.resource_api_version", "V3");
    assert_true(json_is_true(json_object_get(h, "use_remote_address")));
    static const char *const want[] = {"istio.metadata_exchange", "envoy.filters.http.fault",
                                       "envoy.filters.http.cors", "istio.stats",
                                       "envoy.filters.http.router"};
    json_t *filters = json_object_get(h, "http_filters");
    assert_int_equal(json_array_size(filters), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(filters, i), "name")),
                            want[i]);
    assert_true(json_is_true(wf_test_json_at(json_array_get(filters, 3),
                                             "typed_config.value.disable_host_header_fallback")));
    assert_null(json_object_get(h, "access_log"));
    json_decref(lds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

/* Istio puts the NR-filtered listener access log on gateway listeners too (gateway.go
 * buildGatewayListener: setListenerAccessLog with ListenerClassGateway). */
static void listener_access_log(void **state)
{
    (void)state;
    wf_meshcfg *m = wf_meshcfg_new_default();
    assert_non_null(m);
    char *path = wf_test_temp_file("accessLogFile: /dev/stdout\n");
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_file(m, path, &err), 0);
    unlink(path);
    free(path);
    wf_store *s = load(book_no_dr, NULL);
    gw_proxy g = router(s);
    g.env.mesh = m;
    json_t *lds = gen(&g, WF_XDS_LDS);
    json_t *l = json_array_get(lds, 0);
    wf_test_expect_str(l, "access_log.0.name", "envoy.access_loggers.file");
    wf_test_expect_str(l, "access_log.0.typed_config.path", "/dev/stdout");
    wf_test_expect_str(l, "access_log.0.filter.response_flag_filter.flags.0", "NR");
    assert_int_equal(json_array_size(wf_test_json_at(l, "access_log.0.filter.response_flag_filter"
                                                        ".flags")),
                     1);
    assert_non_null(wf_test_json_at(l, HCM_PATH ".access_log.0"));
    assert_null(wf_test_json_at(l, HCM_PATH ".access_log.0.filter"));
    json_decref(lds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
    wf_meshcfg_free(m);
}

static void weighted_subset_routes(void **state)
{
    (void)state;
    wf_store *s = load(book_dr, NULL);
    gw_proxy g = router(s);
    json_t *rds = gen(&g, WF_XDS_RDS);
    assert_int_equal(json_array_size(rds), 1);
    json_t *rc = json_array_get(rds, 0);
    wf_test_expect_str(rc, "@type", "type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
    wf_test_expect_str(rc, "name", "http.8080");
    assert_true(json_is_false(json_object_get(rc, "validate_clusters")));
    assert_true(json_is_true(json_object_get(rc, "ignore_port_in_host_matching")));
    assert_int_equal(json_array_size(json_object_get(rc, "virtual_hosts")), 1);
    json_t *vh = wf_test_json_at(rc, "virtual_hosts.0");
    wf_test_expect_str(vh, "name", "catalog.istioinaction.io:80");
    assert_int_equal(json_array_size(json_object_get(vh, "domains")), 1);
    wf_test_expect_str(vh, "domains.0", "catalog.istioinaction.io");
    assert_true(json_is_true(json_object_get(vh, "include_request_attempt_count")));
    assert_int_equal(json_array_size(json_object_get(vh, "routes")), 1);
    json_t *r = wf_test_json_at(vh, "routes.0");
    wf_test_expect_str(r, "match.prefix", "/");
    wf_test_expect_str(r, "route.weighted_clusters.clusters.0.name",
                       "outbound|80|version-v1|" CATALOG);
    wf_test_expect_int(r, "route.weighted_clusters.clusters.0.weight", 20);
    wf_test_expect_str(r, "route.weighted_clusters.clusters.1.name",
                       "outbound|80|version-v2|" CATALOG);
    wf_test_expect_int(r, "route.weighted_clusters.clusters.1.weight", 80);
    wf_test_expect_str(r, "route.timeout", "0s");
    wf_test_expect_int(r, "route.retry_policy.num_retries", 2);
    wf_test_expect_str(r, "metadata.filter_metadata.istio.config",
                       "/apis/networking.istio.io/v1/namespaces/istioinaction/virtual-service/"
                       "catalog-v1-v2");
    /* with the DestinationRule both subset clusters exist, with endpoints */
    json_t *cds = gen(&g, WF_XDS_CDS);
    assert_non_null(by_name(cds, "outbound|80|version-v1|" CATALOG));
    assert_non_null(by_name(cds, "outbound|80|version-v2|" CATALOG));
    assert_non_null(by_name(cds, "BlackHoleCluster"));
    assert_null(by_name(cds, "PassthroughCluster"));
    char n1[] = "outbound|80|version-v2|" CATALOG;
    char *v[] = {n1};
    wf_xds_names names = {.v = v, .n = 1};
    json_t *eds = wf_pilot_generate(&g.env, &g.p, WF_XDS_EDS, &names);
    assert_int_equal(json_array_size(eds), 1);
    wf_test_expect_str(json_array_get(eds, 0),
                       "endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
                       "127.10.0.4");
    json_decref(eds);
    json_decref(cds);
    json_decref(rds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

static void no_destinationrule_no_subset_cluster(void **state)
{
    (void)state;
    wf_store *s = load(book_no_dr, NULL);
    gw_proxy g = router(s);
    json_t *cds = gen(&g, WF_XDS_CDS);
    assert_non_null(by_name(cds, "outbound|80||" CATALOG));
    assert_null(by_name(cds, "outbound|80|version-v1|" CATALOG));
    assert_null(by_name(cds, "outbound|80|version-v2|" CATALOG));
    assert_null(by_name(cds, "PassthroughCluster"));
    /* the routes still name the subsets: the proxy finds no cluster (503 NC) */
    json_t *rds = gen(&g, WF_XDS_RDS);
    wf_test_expect_str(json_array_get(rds, 0),
                       "virtual_hosts.0.routes.0.route.weighted_clusters.clusters.0.name",
                       "outbound|80|version-v1|" CATALOG);
    json_decref(rds);
    json_decref(cds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

static void blackhole_without_virtualservice(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml",
                                        BOOK "ch10/catalog-gateway.yaml", NULL};
    wf_store *s = load(files, NULL);
    gw_proxy g = router(s);
    json_t *rds = gen(&g, WF_XDS_RDS);
    assert_int_equal(json_array_size(rds), 1);
    json_t *rc = json_array_get(rds, 0);
    wf_test_expect_str(rc, "name", "http.8080");
    assert_int_equal(json_array_size(json_object_get(rc, "virtual_hosts")), 1);
    wf_test_expect_str(rc, "virtual_hosts.0.name", "blackhole:80");
    wf_test_expect_str(rc, "virtual_hosts.0.domains.0", "*");
    assert_int_equal(json_array_size(wf_test_json_at(rc, "virtual_hosts.0.routes")), 0);
    json_decref(rds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

/* Hosts: a wildcard server host and VirtualService hosts, "ns/host" scoping, a Gateway without
 * a Service port (listener on the number itself), an HTTPS server on its own listener, match
 * gateways. */
static const char *const more =
    "apiVersion: networking.istio.io/v1\n"
    "kind: Gateway\n"
    "metadata: {name: wild, namespace: istio-system}\n"
    "spec:\n"
    "  selector: {istio: ingressgateway}\n"
    "  servers:\n"
    "  - port: {number: 9000, name: http, protocol: HTTP}\n"
    "    hosts: [\"*.example.com\", \"shop/only-shop.example.com\"]\n"
    "  - port: {number: 443, name: https, protocol: HTTPS}\n"
    "    hosts: [\"*\"]\n"
    "    tls: {mode: SIMPLE, credentialName: cert}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: Gateway\n"
    "metadata: {name: other, namespace: istio-system}\n"
    "spec:\n"
    "  selector: {istio: egressgateway}\n"
    "  servers:\n"
    "  - port: {number: 7000, name: http, protocol: HTTP}\n"
    "    hosts: [\"*\"]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: a, namespace: istioinaction}\n"
    "spec:\n"
    "  hosts: [a.example.com, b.other.com, only-shop.example.com]\n"
    "  gateways: [istio-system/wild]\n"
    "  http:\n"
    "  - match: [{uri: {prefix: /mesh}, gateways: [mesh]}]\n"
    "    route: [{destination: {host: catalog}}]\n"
    "  - match: [{uri: {prefix: /gw}, gateways: [istio-system/wild]}]\n"
    "    route: [{destination: {host: catalog}}]\n"
    "  - route: [{destination: {host: catalog, port: {number: 80}}}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: b, namespace: shop}\n"
    "spec:\n"
    "  hosts: [\"*\"]\n"
    "  gateways: [istio-system/wild]\n"
    "  http:\n"
    "  - match: [{uri: {exact: /x}}]\n"
    "    route: [{destination: {host: catalog.istioinaction.svc.cluster.local}}]\n";

static void hosts_and_scoping(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
    wf_store *s = load(files, more);
    gw_proxy g = router(s);
    json_t *lds = gen(&g, WF_XDS_LDS);
    /* 443 (HTTPS, listening on the targetPort 8443), 9000; 7000 not selected */
    assert_int_equal(json_array_size(lds), 2);
    wf_test_expect_str(json_array_get(lds, 0), "name", "0.0.0.0_8443");
    wf_test_expect_str(json_array_get(lds, 1), "name", "0.0.0.0_9000");
    json_t *rds = gen(&g, WF_XDS_RDS);
    assert_int_equal(json_array_size(rds), 2);
    wf_test_expect_str(json_array_get(rds, 0), "name", "https.443.https.wild.istio-system");
    json_t *rc = json_array_get(rds, 1);
    wf_test_expect_str(rc, "name", "http.9000");
    json_t *vhs = json_object_get(rc, "virtual_hosts");
    /* VS a (istioinaction): a.example.com and only-shop.example.com through *.example.com
     * (shop/only-shop.example.com is hidden from it; b.other.com matches nothing); VS b (shop,
     * host "*"): the server hosts themselves, *.example.com and only-shop.example.com. */
    assert_int_equal(json_array_size(vhs), 3);
    wf_test_expect_str(vhs, "0.name", "*.example.com:9000");
    wf_test_expect_str(vhs, "1.name", "a.example.com:9000");
    wf_test_expect_str(vhs, "2.name", "only-shop.example.com:9000");
    /* VS a: the mesh-only match is dropped, the /gw match and the catch-all stay */
    json_t *a = json_array_get(vhs, 1);
    assert_int_equal(json_array_size(json_object_get(a, "routes")), 2);
    wf_test_expect_str(a, "routes.0.match.prefix", "/gw");
    wf_test_expect_str(a, "routes.0.route.cluster", "outbound|80||" CATALOG);
    wf_test_expect_str(a, "routes.1.match.prefix", "/");
    /* only-shop: VS a's routes, then VS b's; the catch-all moves last */
    json_t *o = json_array_get(vhs, 2);
    assert_int_equal(json_array_size(json_object_get(o, "routes")), 3);
    wf_test_expect_str(o, "routes.0.match.prefix", "/gw");
    wf_test_expect_str(o, "routes.1.match.path", "/x");
    wf_test_expect_str(o, "routes.2.match.prefix", "/");
    json_decref(rds);
    json_decref(lds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

static const char grpc_gw[] = "apiVersion: networking.istio.io/v1\n"
                              "kind: Gateway\n"
                              "metadata: {name: g, namespace: istio-system}\n"
                              "spec:\n"
                              "  selector: {istio: ingressgateway}\n"
                              "  servers:\n"
                              "  - port: {number: 9000, name: http, protocol: HTTP}\n"
                              "    hosts: [\"*\"]\n"
                              "  - port: {number: 9100, name: grpc, protocol: grpc}\n"
                              "    hosts: [\"*\"]\n";

/* A plaintext GRPC server's port gets Istio's xdsfilters.GrpcStats before fault; HTTP's not. */
static void grpc_server_grpc_stats(void **state)
{
    (void)state;
    wf_store *s = load(NULL, grpc_gw);
    wf_kv kv = {.key = "istio", .value = "ingressgateway"};
    wf_kvs labels = {.n = 1, .items = &kv};
    const wf_gateway_options o = {.proxy_labels = &labels};
    json_t *l = wf_gateway_listeners(s, &o);
    assert_int_equal(json_array_size(l), 2);
    wf_test_expect_str(json_array_get(l, 0), "name", "0.0.0.0_9000");
    wf_test_expect_str(json_array_get(l, 0), HCM_PATH ".http_filters.1.name",
                       "envoy.filters.http.fault");
    json_t *g = json_array_get(l, 1);
    wf_test_expect_str(g, "name", "0.0.0.0_9100");
    wf_test_expect_str(g, HCM_PATH ".http_filters.1.name", "envoy.filters.http.grpc_stats");
    assert_true(json_is_true(
        wf_test_json_at(g, HCM_PATH ".http_filters.1.typed_config.emit_filter_state")));
    wf_test_expect_str(g, HCM_PATH ".http_filters.2.name", "envoy.filters.http.fault");
    json_decref(l);
    wf_store_free(s);
}

static void direct_api(void **state)
{
    (void)state;
    wf_store *s = load(book_no_dr, NULL);
    const wf_gateway_options none = {0};
    assert_null(wf_gateway_listeners(NULL, &none));
    assert_null(wf_gateway_listeners(s, NULL));
    assert_null(wf_gateway_route_configs(s, NULL));
    /* no labels: the book's Gateway (selector istio: ingressgateway) does not apply */
    json_t *l = wf_gateway_listeners(s, &none);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    /* labels but no namespace: no Service maps the port, the listener takes the number */
    wf_kv kv = {.key = "istio", .value = "ingressgateway"};
    wf_kvs labels = {.n = 1, .items = &kv};
    const wf_gateway_options o = {.proxy_labels = &labels};
    l = wf_gateway_listeners(s, &o);
    assert_int_equal(json_array_size(l), 1);
    wf_test_expect_str(json_array_get(l, 0), "name", "0.0.0.0_80");
    wf_test_expect_str(json_array_get(l, 0), "address.socket_address.address", "0.0.0.0");
    json_t *rc = wf_gateway_route_configs(s, &o);
    wf_test_expect_str(json_array_get(rc, 0), "name", "http.80");
    wf_test_expect_str(json_array_get(rc, 0), "virtual_hosts.0.name",
                       "catalog.istioinaction.io:80");
    json_decref(rc);
    json_decref(l);
    wf_store_free(s);
}

/* Gateway TLS (security.md §5.1, §5.2): SIMPLE and MUTUAL servers with credentialName on 443
 * (listening on 8443), one chain per server chosen by SNI, tls_inspector, Istio's https route
 * names, ALPN h2 and http/1.1; servers weft cannot terminate open nothing. */
static const char *const tls_gw =
    "apiVersion: networking.istio.io/v1\n"
    "kind: Gateway\n"
    "metadata: {name: catalog-gateway, namespace: istioinaction}\n"
    "spec:\n"
    "  selector: {istio: ingressgateway}\n"
    "  servers:\n"
    "  - port: {number: 443, name: https-catalog, protocol: HTTPS}\n"
    "    hosts: [\"istioinaction/catalog.istioinaction.io\"]\n"
    "    tls: {mode: SIMPLE, credentialName: catalog-credential, minProtocolVersion: TLSV1_2,\n"
    "          maxProtocolVersion: TLSV1_3, cipherSuites: [ECDHE-ECDSA-AES128-GCM-SHA256]}\n"
    "  - port: {number: 443, name: https-mtls, protocol: HTTPS}\n"
    "    hosts: [\"mtls.istioinaction.io\"]\n"
    "    tls: {mode: MUTUAL, credentialName: mtls-credential,\n"
    "          subjectAltNames: [client.istioinaction.io]}\n"
    "  - port: {number: 443, name: https-any, protocol: HTTPS}\n"
    "    hosts: [\"*\"]\n"
    "    tls: {mode: SIMPLE, credentialName: any-credential}\n"
    "  - port: {number: 443, name: https-pass, protocol: HTTPS}\n"
    "    hosts: [\"pass.istioinaction.io\"]\n"
    "    tls: {mode: PASSTHROUGH}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: catalog-vs, namespace: istioinaction}\n"
    "spec:\n"
    "  hosts: [catalog.istioinaction.io, mtls.istioinaction.io]\n"
    "  gateways: [catalog-gateway]\n"
    "  http:\n"
    "  - route: [{destination: {host: catalog}}]\n";

static void tls_servers(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
    wf_store *s = load(files, tls_gw);
    gw_proxy g = router(s);
    json_t *lds = gen(&g, WF_XDS_LDS);
    assert_int_equal(json_array_size(lds), 1);
    json_t *l = json_array_get(lds, 0);
    wf_test_expect_str(l, "name", "0.0.0.0_8443");
    wf_test_expect_int(l, "address.socket_address.port_value", 8443);
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.tls_inspector");
    json_t *chains = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(chains), 3); /* PASSTHROUGH opens nothing */
    json_t *c0 = json_array_get(chains, 0);
    wf_test_expect_str(c0, "filter_chain_match.server_names.0", "catalog.istioinaction.io");
    wf_test_expect_str(c0, "filters.0.typed_config.rds.route_config_name",
                       "https.443.https-catalog.catalog-gateway.istioinaction");
    wf_test_expect_str(c0, "transport_socket.name", "envoy.transport_sockets.tls");
    json_t *ctc = wf_test_json_at(c0, "transport_socket.typed_config.common_tls_context");
    assert_non_null(ctc);
    wf_test_expect_str(ctc, "tls_certificate_sds_secret_configs.0.name",
                       "kubernetes://catalog-credential");
    assert_non_null(wf_test_json_at(ctc, "tls_certificate_sds_secret_configs.0.sds_config.ads"));
    wf_test_expect_str(ctc, "tls_certificate_sds_secret_configs.0.sds_config.resource_api_version",
                       "V3");
    assert_int_equal(json_array_size(json_object_get(ctc, "alpn_protocols")), 2);
    wf_test_expect_str(ctc, "alpn_protocols.0", "h2");
    wf_test_expect_str(ctc, "alpn_protocols.1", "http/1.1");
    wf_test_expect_str(ctc, "tls_params.tls_minimum_protocol_version", "TLSv1_2");
    wf_test_expect_str(ctc, "tls_params.tls_maximum_protocol_version", "TLSv1_3");
    wf_test_expect_str(ctc, "tls_params.cipher_suites.0", "ECDHE-ECDSA-AES128-GCM-SHA256");
    assert_null(wf_test_json_at(c0, "transport_socket.typed_config.require_client_certificate"));
    assert_null(json_object_get(ctc, "combined_validation_context"));

    json_t *c1 = json_array_get(chains, 1);
    wf_test_expect_str(c1, "filter_chain_match.server_names.0", "mtls.istioinaction.io");
    assert_true(json_is_true(
        wf_test_json_at(c1, "transport_socket.typed_config.require_client_certificate")));
    json_t *cvc = wf_test_json_at(
        c1, "transport_socket.typed_config.common_tls_context.combined_validation_context");
    wf_test_expect_str(cvc, "validation_context_sds_secret_config.name",
                       "kubernetes://mtls-credential-cacert");
    wf_test_expect_str(cvc, "default_validation_context.match_subject_alt_names.0.exact",
                       "client.istioinaction.io");
    assert_null(wf_test_json_at(c1, "transport_socket.typed_config.common_tls_context."
                                    "tls_params"));
    json_t *c2 = json_array_get(chains, 2);
    assert_null(json_object_get(c2, "filter_chain_match")); /* "*": any SNI, or none */

    json_t *rds = gen(&g, WF_XDS_RDS);
    assert_int_equal(json_array_size(rds), 3);
    json_t *rc = by_name(rds, "https.443.https-catalog.catalog-gateway.istioinaction");
    assert_non_null(rc);
    wf_test_expect_str(rc, "virtual_hosts.0.name", "catalog.istioinaction.io:443");
    rc = by_name(rds, "https.443.https-mtls.catalog-gateway.istioinaction");
    assert_non_null(rc);
    wf_test_expect_str(rc, "virtual_hosts.0.name", "mtls.istioinaction.io:443");
    assert_int_equal(json_array_size(json_object_get(rc, "virtual_hosts")), 1);
    rc = by_name(rds, "https.443.https-any.catalog-gateway.istioinaction");
    assert_non_null(rc); /* the VirtualService binds both its hosts through "*" */
    assert_int_equal(json_array_size(json_object_get(rc, "virtual_hosts")), 2);
    json_decref(lds);
    json_decref(rds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

/* ISTIO_MUTUAL terminates with the gateway's own workload identity (SDS default / ROOTCA from
 * the agent, client certificate required, Istio's peer-exchange ALPN without h2);
 * OPTIONAL_MUTUAL is MUTUAL without requiring the client's certificate. */
static void mutual_modes(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
    wf_store *s = load(files, "apiVersion: networking.istio.io/v1\n"
                              "kind: Gateway\n"
                              "metadata: {name: gw, namespace: istioinaction}\n"
                              "spec:\n"
                              "  selector: {istio: ingressgateway}\n"
                              "  servers:\n"
                              "  - port: {number: 443, name: https-istio, protocol: HTTPS}\n"
                              "    hosts: [\"istio.istioinaction.io\"]\n"
                              "    tls: {mode: ISTIO_MUTUAL}\n"
                              "  - port: {number: 443, name: https-opt, protocol: HTTPS}\n"
                              "    hosts: [\"opt.istioinaction.io\"]\n"
                              "    tls: {mode: OPTIONAL_MUTUAL, credentialName: opt-cred}\n");
    gw_proxy g = router(s);
    json_t *lds = gen(&g, WF_XDS_LDS);
    json_t *chains = json_object_get(json_array_get(lds, 0), "filter_chains");
    assert_int_equal(json_array_size(chains), 2);
    json_t *dtc = wf_test_json_at(json_array_get(chains, 0), "transport_socket.typed_config");
    assert_true(json_is_true(json_object_get(dtc, "require_client_certificate")));
    json_t *ctc = json_object_get(dtc, "common_tls_context");
    wf_test_expect_str(ctc, "tls_certificate_sds_secret_configs.0.name", "default");
    wf_test_expect_str(ctc,
                       "tls_certificate_sds_secret_configs.0.sds_config.api_config_source."
                       "grpc_services.0.envoy_grpc.cluster_name",
                       "sds-grpc");
    wf_test_expect_str(ctc, "combined_validation_context.validation_context_sds_secret_config.name",
                       "ROOTCA");
    assert_int_equal(json_array_size(json_object_get(ctc, "alpn_protocols")), 3);
    wf_test_expect_str(ctc, "alpn_protocols.0", "istio-peer-exchange");
    wf_test_expect_str(ctc, "alpn_protocols.1", "h2");
    wf_test_expect_str(ctc, "alpn_protocols.2", "http/1.1");
    dtc = wf_test_json_at(json_array_get(chains, 1), "transport_socket.typed_config");
    assert_null(json_object_get(dtc, "require_client_certificate"));
    ctc = json_object_get(dtc, "common_tls_context");
    wf_test_expect_str(ctc, "tls_certificate_sds_secret_configs.0.name", "kubernetes://opt-cred");
    wf_test_expect_str(ctc, "combined_validation_context.validation_context_sds_secret_config.name",
                       "kubernetes://opt-cred-cacert");
    json_decref(lds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

/* tls.httpsRedirect: the server's virtual hosts get require_tls ALL. */
static void https_redirect(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
    const char *yaml = "apiVersion: networking.istio.io/v1\n"
                       "kind: Gateway\n"
                       "metadata: {name: gw, namespace: istioinaction}\n"
                       "spec:\n"
                       "  selector: {istio: ingressgateway}\n"
                       "  servers:\n"
                       "  - port: {number: 80, name: http, protocol: HTTP}\n"
                       "    hosts: [catalog.istioinaction.io]\n"
                       "    tls: {httpsRedirect: true}\n"
                       "  - port: {number: 80, name: http2, protocol: HTTP}\n"
                       "    hosts: [plain.istioinaction.io]\n"
                       "---\n"
                       "apiVersion: networking.istio.io/v1\n"
                       "kind: VirtualService\n"
                       "metadata: {name: vs, namespace: istioinaction}\n"
                       "spec:\n"
                       "  hosts: [catalog.istioinaction.io, plain.istioinaction.io]\n"
                       "  gateways: [gw]\n"
                       "  http:\n"
                       "  - route: [{destination: {host: catalog}}]\n";
    wf_store *s = load(files, yaml);
    gw_proxy g = router(s);
    json_t *rds = gen(&g, WF_XDS_RDS);
    json_t *rc = by_name(rds, "http.8080");
    assert_non_null(rc);
    json_t *vhs = json_object_get(rc, "virtual_hosts");
    assert_int_equal(json_array_size(vhs), 2);
    wf_test_expect_str(vhs, "0.name", "catalog.istioinaction.io:80");
    wf_test_expect_str(vhs, "0.require_tls", "ALL");
    wf_test_expect_str(vhs, "1.name", "plain.istioinaction.io:80");
    assert_null(wf_test_json_at(vhs, "1.require_tls"));
    json_decref(rds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

/* AuthorizationPolicies selecting the gateway pod (in its namespace or the root namespace) put
 * their RBAC filters after istio.metadata_exchange on the gateway's listeners, as Istio does for
 * gateways; a policy in the workloads' namespace does not reach the gateway. */
static void authorization_policy_on_gateway(void **state)
{
    (void)state;
    wf_store *s =
        load(book_no_dr, "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                         "metadata: {name: gw-deny, namespace: istio-system}\n"
                         "spec:\n  selector: {matchLabels: {istio: ingressgateway}}\n"
                         "  action: DENY\n  rules: [{to: [{operation: {paths: [/admin]}}]}]\n"
                         "---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                         "metadata: {name: apps-only, namespace: istioinaction}\nspec: {}\n");
    gw_proxy g = router(s);
    json_t *lds = gen(&g, WF_XDS_LDS);
    json_t *filters = wf_test_json_at(json_array_get(lds, 0), HCM_PATH ".http_filters");
    assert_int_equal(json_array_size(filters), 6);
    wf_test_expect_str(json_array_get(filters, 0), "name", "istio.metadata_exchange");
    json_t *rbac = json_array_get(filters, 1);
    wf_test_expect_str(rbac, "name", "envoy.filters.http.rbac");
    wf_test_expect_str(rbac, "typed_config.rules.action", "DENY");
    assert_non_null(wf_test_json_at(
        rbac, "typed_config.rules.policies.ns[istio-system]-policy[gw-deny]-rule[0]"));
    wf_test_expect_str(json_array_get(filters, 2), "name", "envoy.filters.http.fault");
    json_decref(lds);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(listener_on_target_port),
        cmocka_unit_test(listener_access_log),
        cmocka_unit_test(weighted_subset_routes),
        cmocka_unit_test(no_destinationrule_no_subset_cluster),
        cmocka_unit_test(blackhole_without_virtualservice),
        cmocka_unit_test(hosts_and_scoping),
        cmocka_unit_test(direct_api),
        cmocka_unit_test(grpc_server_grpc_stats),
        cmocka_unit_test(tls_servers),
        cmocka_unit_test(mutual_modes),
        cmocka_unit_test(https_redirect),
        cmocka_unit_test(authorization_policy_on_gateway),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
