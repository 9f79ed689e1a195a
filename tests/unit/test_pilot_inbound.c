/*
 * test_pilot_inbound.c - pilot/inbound: a sidecar's inbound clusters and listeners from the
 * book's catalog Service (../shared/corpus/istioinaction/) and inline Services and Pods:
 * `inbound|3000||` with its inline endpoint and services metadata, the per-port inbound
 * listener with Istio's inbound HTTP connection manager and route, named targetPorts, TCP
 * ports (cluster, no listener), gRPC ports (no inbound retry), pods no Service selects.
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

#include "harness.h"
#include "model/store.h"
#include "pilot/inbound.h"
#include "proxy/config/config.h"

#define BOOK     "../shared/corpus/istioinaction/"
#define HCM_PATH "filter_chains.0.filters.0.typed_config"

static const char *const catalog_files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};

static const char *const catalog_pod = "apiVersion: v1\n"
                                       "kind: Pod\n"
                                       "metadata:\n"
                                       "  name: catalog-v1-abc\n"
                                       "  namespace: istioinaction\n"
                                       "  labels: {app: catalog, version: v1}\n"
                                       "spec:\n"
                                       "  containers:\n"
                                       "  - name: catalog\n"
                                       "    ports: [{name: http, containerPort: 3000}]\n"
                                       "status: {podIP: 127.10.0.3, phase: Running}\n";

/* A pod behind three Services: a named targetPort, a TCP port, a gRPC port, and a second
 * Service on the same target port (both in the cluster's services metadata). */
static const char *const multi = "apiVersion: v1\n"
                                 "kind: Service\n"
                                 "metadata: {name: web, namespace: shop}\n"
                                 "spec:\n"
                                 "  selector: {app: web}\n"
                                 "  ports:\n"
                                 "  - {name: http, port: 80, targetPort: web}\n"
                                 "  - {name: tcp-db, port: 5432, targetPort: 5432}\n"
                                 "  - {name: grpc-api, port: 9000}\n"
                                 "  - {name: http-missing, port: 81, targetPort: nosuchport}\n"
                                 "  - {name: dns, port: 53, protocol: UDP}\n"
                                 "---\n"
                                 "apiVersion: v1\n"
                                 "kind: Service\n"
                                 "metadata: {name: web-alias, namespace: shop}\n"
                                 "spec:\n"
                                 "  selector: {app: web}\n"
                                 "  ports: [{name: http-alt, port: 8080, targetPort: 8081}]\n"
                                 "---\n"
                                 "apiVersion: v1\n"
                                 "kind: Service\n"
                                 "metadata: {name: elsewhere, namespace: other}\n"
                                 "spec:\n"
                                 "  selector: {app: web}\n"
                                 "  ports: [{name: http, port: 80, targetPort: 7777}]\n"
                                 "---\n"
                                 "apiVersion: v1\n"
                                 "kind: Pod\n"
                                 "metadata: {name: web-1, namespace: shop, labels: {app: web}}\n"
                                 "spec:\n"
                                 "  containers:\n"
                                 "  - name: web\n"
                                 "    ports: [{name: web, containerPort: 8081}]\n"
                                 "status: {podIP: 127.10.0.9}\n";

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

static void catalog_cluster(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(catalog_files, catalog_pod, "istioinaction");
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "istioinaction", "catalog-v1-abc");
    assert_non_null(pod);
    const wf_inbound_options o = {.ns = "istioinaction", .labels = &pod->labels, .pod = pod};
    json_t *cl = wf_inbound_clusters(s, &o);
    assert_non_null(cl);
    assert_int_equal(json_array_size(cl), 1);
    json_t *c = json_array_get(cl, 0);
    wf_test_expect_str(c, "@type", "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    wf_test_expect_str(c, "name", "inbound|3000||");
    wf_test_expect_str(c, "type", "STATIC");
    wf_test_expect_str(c, "connect_timeout", "10s");
    wf_test_expect_str(c, "load_assignment.cluster_name", "inbound|3000||");
    wf_test_expect_str(c,
                       "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address."
                       "socket_address.address",
                       "127.0.0.1");
    wf_test_expect_int(c,
                       "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address."
                       "socket_address.port_value",
                       3000);
    wf_test_expect_int(c, "circuit_breakers.thresholds.0.max_connections", 4294967295LL);
    assert_true(json_is_object(json_object_get(c, "common_lb_config")));
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.host",
                       "catalog.istioinaction.svc.cluster.local");
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.name", "catalog");
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.namespace", "istioinaction");
    assert_null(json_object_get(c, "alt_stat_name"));
    assert_null(json_object_get(c, "lb_policy"));
    assert_null(json_object_get(c, "eds_cluster_config"));
    json_decref(cl);
    /* the local mesh: the application's own loopback address */
    const wf_inbound_options local = {
        .ns = "istioinaction", .labels = &pod->labels, .pod = pod, .app_address = "127.11.0.3"};
    cl = wf_inbound_clusters(s, &local);
    wf_test_expect_str(json_array_get(cl, 0),
                       "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address."
                       "socket_address.address",
                       "127.11.0.3");
    json_decref(cl);
    wf_store_free(s);
}

static void catalog_listener(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(catalog_files, catalog_pod, "istioinaction");
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "istioinaction", "catalog-v1-abc");
    const wf_inbound_options o = {
        .ns = "istioinaction", .labels = &pod->labels, .pod = pod, .bind = "127.10.0.3"};
    json_t *ls = wf_inbound_listeners(s, &o);
    assert_non_null(ls);
    assert_int_equal(json_array_size(ls), 1);
    json_t *l = json_array_get(ls, 0);
    wf_test_expect_str(l, "@type", "type.googleapis.com/envoy.config.listener.v3.Listener");
    wf_test_expect_str(l, "name", "127.10.0.3_3000");
    wf_test_expect_str(l, "address.socket_address.address", "127.10.0.3");
    wf_test_expect_int(l, "address.socket_address.port_value", 3000);
    wf_test_expect_str(l, "traffic_direction", "INBOUND");
    json_t *h = wf_test_json_at(l, HCM_PATH);
    wf_test_expect_str(h, "stat_prefix", "inbound_0.0.0.0_3000");
    assert_null(json_object_get(h, "rds"));
    assert_true(json_is_false(json_object_get(h, "use_remote_address")));
    wf_test_expect_str(h, "forward_client_cert_details", "APPEND_FORWARD");
    assert_true(json_is_true(wf_test_json_at(h, "set_current_client_cert_details.subject")));
    assert_true(json_is_true(wf_test_json_at(h, "set_current_client_cert_details.dns")));
    assert_true(json_is_true(wf_test_json_at(h, "set_current_client_cert_details.uri")));
    wf_test_expect_str(h, "http_filters.0.name", "istio.metadata_exchange");
    assert_non_null(wf_test_json_at(h, "http_filters.0.typed_config.value.downstream_discovery"));
    wf_test_expect_str(h, "http_filters.1.name", "envoy.filters.http.fault");
    wf_test_expect_str(h, "http_filters.2.name", "envoy.filters.http.cors");
    wf_test_expect_str(h, "http_filters.3.name", "istio.stats");
    wf_test_expect_str(h, "http_filters.4.name", "envoy.filters.http.router");
    json_t *rc = json_object_get(h, "route_config");
    wf_test_expect_str(rc, "name", "inbound|3000||");
    assert_true(json_is_false(json_object_get(rc, "validate_clusters")));
    assert_int_equal(json_array_size(json_object_get(rc, "virtual_hosts")), 1);
    wf_test_expect_str(rc, "virtual_hosts.0.name", "inbound|http|3000");
    wf_test_expect_str(rc, "virtual_hosts.0.domains.0", "*");
    json_t *r = wf_test_json_at(rc, "virtual_hosts.0.routes.0");
    wf_test_expect_str(r, "name", "default");
    wf_test_expect_str(r, "match.prefix", "/");
    wf_test_expect_str(r, "route.cluster", "inbound|3000||");
    wf_test_expect_str(r, "route.timeout", "0s");
    wf_test_expect_str(r, "route.retry_policy.retry_on", "reset-before-request");
    wf_test_expect_int(r, "route.retry_policy.num_retries", 2);
    assert_null(json_object_get(r, "decorator"));
    json_decref(ls);
    /* unknown pod IP: 0.0.0.0 */
    const wf_inbound_options any = {.ns = "istioinaction", .labels = &pod->labels, .pod = pod};
    ls = wf_inbound_listeners(s, &any);
    wf_test_expect_str(json_array_get(ls, 0), "name", "0.0.0.0_3000");
    wf_test_expect_str(json_array_get(ls, 0), "address.socket_address.address", "0.0.0.0");
    json_decref(ls);
    wf_store_free(s);
}

static void ports_and_protocols(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, multi, NULL);
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "shop", "web-1");
    assert_non_null(pod);
    const wf_inbound_options o = {.ns = "shop", .labels = &pod->labels, .pod = pod};
    json_t *cl = wf_inbound_clusters(s, &o);
    /* 5432 (tcp), 8081 (named "web" and web-alias), 9000 (grpc); nosuchport and UDP left out;
     * the Service in namespace other does not select pods in shop */
    assert_int_equal(json_array_size(cl), 3);
    wf_test_expect_str(json_array_get(cl, 0), "name", "inbound|5432||");
    wf_test_expect_str(json_array_get(cl, 1), "name", "inbound|8081||");
    wf_test_expect_str(json_array_get(cl, 2), "name", "inbound|9000||");
    json_t *svcs =
        wf_test_json_at(json_array_get(cl, 1), "metadata.filter_metadata.istio.services");
    assert_int_equal(json_array_size(svcs), 2);
    wf_test_expect_str(svcs, "0.name", "web");
    wf_test_expect_str(svcs, "1.name", "web-alias");
    json_decref(cl);
    json_t *ls = wf_inbound_listeners(s, &o);
    assert_int_equal(json_array_size(ls), 3); /* the TCP port's is pilot/tcp.h's */
    wf_test_expect_str(by_name(ls, "0.0.0.0_5432"), "filter_chains.0.filters.2.name",
                       "envoy.filters.network.tcp_proxy");
    json_t *web = by_name(ls, "0.0.0.0_8081");
    json_t *grpc = by_name(ls, "0.0.0.0_9000");
    assert_non_null(web);
    assert_non_null(grpc);
    assert_non_null(
        wf_test_json_at(web, HCM_PATH ".route_config.virtual_hosts.0.routes.0.route.retry_policy"));
    assert_null(wf_test_json_at(grpc, HCM_PATH
                                ".route_config.virtual_hosts.0.routes.0.route.retry_policy"));
    /* Istio's xdsfilters.GrpcStats on the gRPC port only, before fault */
    json_t *gf = wf_test_json_at(grpc, HCM_PATH ".http_filters");
    json_t *gs = by_name(gf, "envoy.filters.http.grpc_stats");
    assert_non_null(gs);
    assert_true(json_is_true(wf_test_json_at(gs, "typed_config.emit_filter_state")));
    assert_true(json_is_false(wf_test_json_at(gs, "typed_config.stats_for_all_methods")));
    for (size_t i = 0; i < json_array_size(gf); i++)
        if (json_array_get(gf, i) == gs)
            wf_test_expect_str(json_array_get(gf, i + 1), "name", "envoy.filters.http.fault");
    assert_null(
        by_name(wf_test_json_at(web, HCM_PATH ".http_filters"), "envoy.filters.http.grpc_stats"));
    json_decref(ls);
    /* without the Pod object the named targetPort cannot be resolved: 8081 is web-alias's */
    const wf_inbound_options nopod = {.ns = "shop", .labels = &pod->labels};
    cl = wf_inbound_clusters(s, &nopod);
    assert_int_equal(json_array_size(cl), 3);
    svcs =
        wf_test_json_at(by_name(cl, "inbound|8081||"), "metadata.filter_metadata.istio.services");
    assert_int_equal(json_array_size(svcs), 1);
    wf_test_expect_str(svcs, "0.name", "web-alias");
    json_decref(cl);
    wf_store_free(s);
}

static void nothing_selects(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, multi, NULL);
    wf_kv kv = {.key = "app", .value = "other"};
    wf_kvs labels = {.n = 1, .items = &kv};
    const wf_inbound_options o = {.ns = "shop", .labels = &labels};
    json_t *cl = wf_inbound_clusters(s, &o), *ls = wf_inbound_listeners(s, &o);
    assert_int_equal(json_array_size(cl), 0);
    assert_int_equal(json_array_size(ls), 0);
    json_decref(cl);
    json_decref(ls);
    const wf_inbound_options nolabels = {.ns = "shop"};
    cl = wf_inbound_clusters(s, &nolabels);
    assert_int_equal(json_array_size(cl), 0);
    json_decref(cl);
    assert_null(wf_inbound_clusters(NULL, &o));
    assert_null(wf_inbound_clusters(s, NULL));
    assert_null(wf_inbound_listeners(NULL, &o));
    assert_null(wf_inbound_listeners(s, NULL));
    wf_store_free(s);
}

/* ---------- PeerAuthentication modes (security.md §3.3, §4.1) ---------- */

#define PA_NS(mode)                                                                                \
    "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"                            \
    "metadata: {name: default, namespace: istioinaction}\nspec: {mtls: {mode: " mode "}}\n"

/* The listeners for the catalog pod with extra config (PeerAuthentications) and mesh (NULL =
 * defaults). */
static json_t *catalog_with(const char *extra, const wf_meshcfg *mesh, wf_store **out)
{
    char *yaml = malloc(strlen(catalog_pod) + strlen(extra) + 1);
    assert_non_null(yaml);
    strcpy(yaml, catalog_pod);
    strcat(yaml, extra);
    wf_store *s = wf_test_load_store(catalog_files, yaml, "istioinaction");
    free(yaml);
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "istioinaction", "catalog-v1-abc");
    assert_non_null(pod);
    const wf_inbound_options o = {.ns = "istioinaction",
                                  .labels = &pod->labels,
                                  .pod = pod,
                                  .bind = "127.10.0.3",
                                  .mesh = mesh};
    json_t *ls = wf_inbound_listeners(s, &o);
    assert_non_null(ls);
    assert_int_equal(json_array_size(ls), 1);
    *out = s;
    return ls;
}

/* Istio's inbound DownstreamTlsContext, field by field (the golden dumps' virtualInbound). */
static void expect_mtls(json_t *ts, const char *min, const char *td)
{
    char want[128];
    wf_test_expect_str(ts, "name", "envoy.transport_sockets.tls");
    json_t *d = json_object_get(ts, "typed_config");
    wf_test_expect_str(
        d, "@type",
        "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext");
    assert_true(json_is_true(json_object_get(d, "require_client_certificate")));
    json_t *c = json_object_get(d, "common_tls_context");
    wf_test_expect_str(c, "tls_params.tls_minimum_protocol_version", min);
    wf_test_expect_str(c, "tls_params.tls_maximum_protocol_version", "TLSv1_3");
    static const char *const ciphers[] = {"ECDHE-ECDSA-AES256-GCM-SHA384",
                                          "ECDHE-RSA-AES256-GCM-SHA384",
                                          "ECDHE-ECDSA-AES128-GCM-SHA256",
                                          "ECDHE-RSA-AES128-GCM-SHA256",
                                          "AES256-GCM-SHA384",
                                          "AES128-GCM-SHA256"};
    json_t *cs = wf_test_json_at(c, "tls_params.cipher_suites");
    assert_int_equal(json_array_size(cs), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(json_string_value(json_array_get(cs, i)), ciphers[i]);
    /* Istio's ALPNHttp: clients that offer h2 get HTTP/2 */
    assert_int_equal(json_array_size(json_object_get(c, "alpn_protocols")), 2);
    wf_test_expect_str(c, "alpn_protocols.0", "h2");
    wf_test_expect_str(c, "alpn_protocols.1", "http/1.1");
    assert_int_equal(json_array_size(json_object_get(c, "tls_certificate_sds_secret_configs")), 1);
    json_t *sds = wf_test_json_at(c, "tls_certificate_sds_secret_configs.0");
    wf_test_expect_str(sds, "name", "default");
    wf_test_expect_str(sds, "sds_config.api_config_source.api_type", "GRPC");
    wf_test_expect_str(sds, "sds_config.api_config_source.grpc_services.0.envoy_grpc.cluster_name",
                       "sds-grpc");
    assert_true(json_is_true(
        wf_test_json_at(sds, "sds_config.api_config_source.set_node_on_first_message_only")));
    wf_test_expect_str(sds, "sds_config.api_config_source.transport_api_version", "V3");
    wf_test_expect_str(sds, "sds_config.initial_fetch_timeout", "0s");
    wf_test_expect_str(sds, "sds_config.resource_api_version", "V3");
    snprintf(want, sizeof want, "spiffe://%s/", td);
    wf_test_expect_str(
        c,
        "combined_validation_context.default_validation_context.match_subject_alt_names.0.prefix",
        want);
    json_t *root =
        wf_test_json_at(c, "combined_validation_context.validation_context_sds_secret_config");
    wf_test_expect_str(root, "name", "ROOTCA");
    wf_test_expect_str(root, "sds_config.api_config_source.grpc_services.0.envoy_grpc.cluster_name",
                       "sds-grpc");
}

static void expect_inspector(json_t *l)
{
    json_t *lf = json_object_get(l, "listener_filters");
    assert_int_equal(json_array_size(lf), 1);
    wf_test_expect_str(lf, "0.name", "envoy.filters.listener.tls_inspector");
    wf_test_expect_str(
        lf, "0.typed_config.@type",
        "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector");
}

/* weft-proxy's loader takes the listener as it is (what LDS would ACK). */
static void expect_proxy_accepts(json_t *l)
{
    json_t *boot = json_pack(
        "{s:{s:[O],s:[{s:s,s:s,s:s,s:{s:s,s:[{s:[{s:{s:{s:{s:s,s:i}}}}]}]}}]}}", "static_resources",
        "listeners", l, "clusters", "name", "inbound|3000||", "type", "STATIC", "connect_timeout",
        "1s", "load_assignment", "cluster_name", "inbound|3000||", "endpoints", "lb_endpoints",
        "endpoint", "address", "socket_address", "address", "127.0.0.1", "port_value", 3000);
    assert_non_null(boot);
    char *text = json_dumps(boot, 0);
    json_decref(boot);
    wf_strbuf err = WF_STRBUF_INIT;
    struct wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("weft-proxy refuses the listener: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    wp_config_unref(c);
}

static void permissive_by_default(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = catalog_with("", NULL, &s);
    json_t *l = json_array_get(ls, 0);
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 2);
    /* mTLS: tls + the five Istio ALPNs of an HTTP-only port */
    json_t *t = json_array_get(fcs, 0);
    wf_test_expect_str(t, "name", "127.10.0.3_3000");
    wf_test_expect_str(t, "filter_chain_match.transport_protocol", "tls");
    static const char *const alpns[] = {"istio", "istio-peer-exchange", "istio-http/1.0",
                                        "istio-http/1.1", "istio-h2"};
    json_t *ap = wf_test_json_at(t, "filter_chain_match.application_protocols");
    assert_int_equal(json_array_size(ap), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_array_get(ap, i)), alpns[i]);
    expect_mtls(json_object_get(t, "transport_socket"), "TLSv1_2", "cluster.local");
    wf_test_expect_str(t, "filters.0.name", "envoy.filters.network.http_connection_manager");
    /* plaintext: raw_buffer, the same HCM, no transport socket */
    json_t *p = json_array_get(fcs, 1);
    wf_test_expect_str(p, "name", "127.10.0.3_3000");
    wf_test_expect_str(p, "filter_chain_match.transport_protocol", "raw_buffer");
    assert_null(wf_test_json_at(p, "filter_chain_match.application_protocols"));
    assert_null(json_object_get(p, "transport_socket"));
    assert_true(json_equal(json_object_get(t, "filters"), json_object_get(p, "filters")));
    expect_inspector(l);
    wf_test_expect_str(l, "traffic_direction", "INBOUND");
    expect_proxy_accepts(l);
    json_decref(ls);
    wf_store_free(s);
}

static void strict_namespace(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = catalog_with(PA_NS("STRICT"), NULL, &s);
    json_t *l = json_array_get(ls, 0);
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    json_t *t = json_array_get(fcs, 0);
    json_t *m = json_object_get(t, "filter_chain_match");
    assert_int_equal(json_object_size(m), 1);
    wf_test_expect_str(m, "transport_protocol", "tls");
    expect_mtls(json_object_get(t, "transport_socket"), "TLSv1_2", "cluster.local");
    expect_inspector(l);
    expect_proxy_accepts(l);
    json_decref(ls);
    wf_store_free(s);
}

static void disable_plaintext_only(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = catalog_with(PA_NS("DISABLE"), NULL, &s);
    json_t *l = json_array_get(ls, 0);
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    assert_null(json_object_get(json_array_get(fcs, 0), "filter_chain_match"));
    assert_null(json_object_get(json_array_get(fcs, 0), "transport_socket"));
    assert_null(json_object_get(l, "listener_filters"));
    expect_proxy_accepts(l);
    json_decref(ls);
    wf_store_free(s);
}

/* Port level: the workload DISABLEs, its port 3000 (the container port) is STRICT; a
 * PeerAuthentication selecting another workload changes nothing. */
static void port_level_mode(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls =
        catalog_with("---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                     "metadata: {name: catalog, namespace: istioinaction}\n"
                     "spec:\n  selector: {matchLabels: {app: catalog}}\n  mtls: {mode: DISABLE}\n"
                     "  portLevelMtls: {3000: {mode: STRICT}}\n"
                     "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                     "metadata: {name: other, namespace: istioinaction}\n"
                     "spec:\n  selector: {matchLabels: {app: webapp}}\n  mtls: {mode: DISABLE}\n",
                     NULL, &s);
    json_t *fcs = json_object_get(json_array_get(ls, 0), "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    wf_test_expect_str(json_array_get(fcs, 0), "filter_chain_match.transport_protocol", "tls");
    json_decref(ls);
    wf_store_free(s);
}

/* MeshConfig: meshMTLS.minProtocolVersion TLSV1_3, trustDomain and its aliases. */
static void mesh_tls_settings(void **state)
{
    (void)state;
    char *path = wf_test_temp_file("trustDomain: example.org\n"
                                   "trustDomainAliases: [old.example, cluster.local]\n"
                                   "meshMTLS: {minProtocolVersion: TLSV1_3}\n");
    wf_meshcfg *mesh = wf_meshcfg_new_default();
    const char *err = NULL;
    assert_non_null(mesh);
    assert_int_equal(wf_meshcfg_load_file(mesh, path, &err), 0);
    unlink(path);
    free(path);
    wf_store *s;
    json_t *ls = catalog_with(PA_NS("STRICT"), mesh, &s);
    json_t *ts = wf_test_json_at(json_array_get(ls, 0), "filter_chains.0.transport_socket");
    expect_mtls(ts, "TLSv1_3", "example.org");
    json_t *sans =
        wf_test_json_at(ts, "typed_config.common_tls_context.combined_validation_"
                            "context.default_validation_context.match_subject_alt_names");
    assert_int_equal(json_array_size(sans), 3);
    wf_test_expect_str(sans, "1.prefix", "spiffe://old.example/");
    wf_test_expect_str(sans, "2.prefix", "spiffe://cluster.local/");
    expect_proxy_accepts(json_array_get(ls, 0));
    json_decref(ls);
    wf_store_free(s);
    wf_meshcfg_free(mesh);
}

/* ---------- gaps: modes no inbound chain carries ---------- */

typedef struct gaps {
    char text[8][160];
    size_t n;
} gaps;

static bool on_gap(const wf_inbound_gap *g, void *arg)
{
    gaps *x = arg;
    if (x->n < 8)
        snprintf(x->text[x->n++], sizeof x->text[0], "%s/%s %s %u %s%s", g->policy->ns,
                 g->policy->name, g->pod->name, (unsigned)g->port, wf_mtls_mode_name(g->mode),
                 g->port_level ? " port" : "");
    return true;
}

/* multi's web-1 has HTTP target ports 8081 (and 9000, gRPC) and a TCP one (5432). */
static void authn_gaps(void **state)
{
    (void)state;
    static const char *const extra =
        "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
        "metadata: {name: web, namespace: shop}\n"
        "spec:\n  selector: {matchLabels: {app: web}}\n"
        "  portLevelMtls: {8081: {mode: DISABLE}, 5432: {mode: PERMISSIVE}, 7000: {mode: STRICT}}\n"
        "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
        "metadata: {name: default, namespace: shop}\nspec: {mtls: {mode: STRICT}}\n"
        "---\napiVersion: v1\nkind: Pod\n"
        "metadata: {name: gw-1, namespace: shop, labels: {app: web, istio: ingressgateway}}\n"
        "spec: {containers: [{name: gw}]}\n";
    char *yaml = malloc(strlen(multi) + strlen(extra) + 1);
    assert_non_null(yaml);
    strcpy(yaml, multi);
    strcat(yaml, extra);
    wf_store *s = wf_test_load_store(NULL, yaml, "default");
    free(yaml);
    gaps x = {0};
    assert_int_equal(wf_inbound_authn_gaps(s, NULL, on_gap, &x), 1);
    /* 8081 (HTTP) and 5432 (TCP) are target ports: they have their chains; the gateway pod is
     * not a sidecar */
    assert_string_equal(x.text[0], "shop/web web-1 7000 STRICT port");
    wf_store_free(s);

    /* no port level: the namespace's STRICT reaches the TCP port 5432, which has its chains */
    char *ns_only = malloc(strlen(multi) + 200);
    assert_non_null(ns_only);
    strcpy(ns_only, multi);
    strcat(ns_only, "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                    "metadata: {name: default, namespace: shop}\nspec: {mtls: {mode: STRICT}}\n");
    s = wf_test_load_store(NULL, ns_only, "default");
    free(ns_only);
    x = (gaps){0};
    assert_int_equal(wf_inbound_authn_gaps(s, NULL, on_gap, &x), 0); /* 5432 has TCP chains */
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_cluster),        cmocka_unit_test(catalog_listener),
        cmocka_unit_test(ports_and_protocols),    cmocka_unit_test(nothing_selects),
        cmocka_unit_test(permissive_by_default),  cmocka_unit_test(strict_namespace),
        cmocka_unit_test(disable_plaintext_only), cmocka_unit_test(port_level_mode),
        cmocka_unit_test(mesh_tls_settings),      cmocka_unit_test(authn_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
