/*
 * test_pilot_tcp.c - pilot/tcp: outbound TCP listeners of the Service ports Istio treats as TCP
 * (names, the istio.stats + tcp_proxy chain, VirtualService tcp routes with weights, subsets,
 * subnets and static predicates, tls routes by SNI), the wildcard listener shared by TLS
 * ServiceEntries, and the inbound TCP chains per PeerAuthentication mode with network RBAC.
 * Shapes as istiod's (protocols.md §4.2, §4.6; the istioctl authz testdata config dump's
 * `10.102.11.148_15021` listener: istio.stats, then tcp_proxy with stat_prefix = cluster).
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
#include "pilot/generate_internal.h"
#include "pilot/inbound.h"
#include "pilot/lds.h"
#include "pilot/tcp.h"
#include "proxy/config/config.h"

#define TCP_TYPE "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"

static json_t *by_name(json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && !strcmp(n, name))
            return v;
    }
    return NULL;
}

static json_t *outbound(const wf_store *s, const char *ns, const wf_kvs *labels)
{
    const wf_lds_options o = {.bind = "127.11.0.2", .proxy_ns = ns, .proxy_labels = labels};
    json_t *out = wf_lds_sidecar_outbound_listeners_opt(s, &o);
    assert_non_null(out);
    return out;
}

/* The chain's tcp_proxy typed_config, after checking the chain is [istio.stats, tcp_proxy]. */
static json_t *tcp_proxy_of(json_t *chain)
{
    json_t *fs = json_object_get(chain, "filters");
    assert_int_equal(json_array_size(fs), 2);
    wf_test_expect_str(fs, "0.name", "istio.stats");
    wf_test_expect_str(fs, "0.typed_config.type_url", "type.googleapis.com/stats.PluginConfig");
    wf_test_expect_str(fs, "1.name", "envoy.filters.network.tcp_proxy");
    wf_test_expect_str(fs, "1.typed_config.@type", TCP_TYPE);
    return wf_test_json_at(fs, "1.typed_config");
}

static void expect_cluster(json_t *chain, const char *cluster)
{
    json_t *tp = tcp_proxy_of(chain);
    wf_test_expect_str(tp, "cluster", cluster);
    wf_test_expect_str(tp, "stat_prefix", cluster);
}

/* ---------- outbound: which ports, names, the default chain ---------- */

static const char db_yaml[] = "apiVersion: v1\n"
                              "kind: Service\n"
                              "metadata: {name: db, namespace: default}\n"
                              "spec:\n"
                              "  clusterIP: 10.96.0.5\n"
                              "  ports:\n"
                              "  - {name: tcp-db, port: 5432}\n"
                              "  - {name: mongo, port: 27018}\n"
                              "  - {name: dns, port: 54, protocol: UDP}\n"
                              "  - {port: 3306}\n"
                              "  - {name: http-admin, port: 8080}\n"
                              "  - {name: web, port: 8081}\n"
                              "  - {name: x, port: 9000, appProtocol: tcp}\n"
                              "---\n"
                              "apiVersion: v1\n"
                              "kind: Service\n"
                              "metadata: {name: cache, namespace: default}\n"
                              "spec:\n"
                              "  ports:\n"
                              "  - {name: redis, port: 6379}\n"
                              "  - {name: tcp-clash, port: 8080}\n"
                              "  - {name: tcp-second, port: 5432}\n";

static void outbound_ports_and_names(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, db_yaml, "default");
    json_t *out = outbound(s, "default", NULL);
    /* HTTP: 8080 (http-admin) and 8081 (unnamed-ish "web": sniffed, HTTP in weft); TCP: 5432,
     * 27018 (mongo), 3306 (well-known), 9000 (appProtocol), 6379 (redis). 54 is UDP; cache's
     * 8080 and 5432 are ports already taken. */
    assert_int_equal(json_array_size(out), 7);
    assert_non_null(by_name(out, "0.0.0.0_8080"));
    assert_non_null(by_name(out, "0.0.0.0_8081"));
    json_t *l = by_name(out, "10.96.0.5_5432");
    assert_non_null(l);
    wf_test_expect_str(l, "@type", "type.googleapis.com/envoy.config.listener.v3.Listener");
    wf_test_expect_str(l, "address.socket_address.address", "127.11.0.2");
    wf_test_expect_int(l, "address.socket_address.port_value", 5432);
    wf_test_expect_str(l, "traffic_direction", "OUTBOUND");
    assert_null(json_object_get(l, "listener_filters"));
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    assert_null(json_object_get(json_array_get(fcs, 0), "filter_chain_match"));
    assert_null(json_object_get(json_array_get(fcs, 0), "name"));
    expect_cluster(json_array_get(fcs, 0), "outbound|5432||db.default.svc.cluster.local");
    json_t *stats = wf_test_json_at(json_array_get(fcs, 0), "filters.0.typed_config.value");
    assert_int_equal(json_object_size(stats), 0); /* outbound: no host header setting */
    assert_non_null(by_name(out, "10.96.0.5_27018"));
    assert_non_null(by_name(out, "10.96.0.5_3306"));
    assert_non_null(by_name(out, "10.96.0.5_9000"));
    l = by_name(out, "0.0.0.0_6379"); /* no clusterIP: the wildcard name */
    assert_non_null(l);
    expect_cluster(wf_test_json_at(l, "filter_chains.0"),
                   "outbound|6379||cache.default.svc.cluster.local");
    assert_null(by_name(out, "10.96.0.5_54"));
    json_decref(out);
    wf_store_free(s);
}

static void tcp_class(void **state)
{
    (void)state;
    static const struct {
        const char *name, *app;
        int32_t port;
        bool tcp;
    } cases[] = {
        {"tcp", NULL, 1, true},     {"tls-x", NULL, 1, true},    {"https", NULL, 1, true},
        {"mongo-a", NULL, 1, true}, {"mysql", NULL, 1, true},    {"redis", NULL, 1, true},
        {"http", NULL, 1, false},   {"grpc", NULL, 1, false},    {NULL, NULL, 25, true},
        {NULL, NULL, 53, true},     {NULL, NULL, 27017, true},   {NULL, NULL, 80, false},
        {"http", "tcp", 1, true},   {"tcp", "http", 1, false},   {"foo", NULL, 1, false},
        {"tcp", NULL, 0, false},    {"tcp", NULL, 70000, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const wf_service_port sp = {
            .name = cases[i].name, .port = cases[i].port, .app_protocol = cases[i].app};
        if (wf_tcp_service_port(&sp) != cases[i].tcp)
            fail_msg("case %zu (%s/%s:%d)", i, cases[i].name ? cases[i].name : "-",
                     cases[i].app ? cases[i].app : "-", (int)cases[i].port);
    }
    const wf_service_port udp = {.name = "tcp", .port = 1, .protocol = "UDP"};
    assert_false(wf_tcp_service_port(&udp));
}

/* ---------- VirtualService tcp routes ---------- */

static const char tcp_vs_yaml[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: default}\n"
    "spec: {clusterIP: 10.96.0.5, ports: [{name: tcp-db, port: 5432}]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\nkind: VirtualService\n"
    "metadata: {name: db-split, namespace: default}\n"
    "spec:\n"
    "  hosts: [db]\n"
    "  tcp:\n"
    "  - match: [{port: 9999}]\n" /* another port: skipped */
    "    route: [{destination: {host: other}}]\n"
    "  - match: [{sourceLabels: {app: nobody}}]\n" /* not this proxy: skipped */
    "    route: [{destination: {host: other}}]\n"
    "  - route: []\n" /* no destination: skipped */
    "  - match: [{destinationSubnets: [10.1.0.0/16]}, {destinationSubnets: [10.2.0.1]}]\n"
    "    route: [{destination: {host: db, subset: canary}}]\n"
    "  - match: [{port: 5432, sourceLabels: {app: client}, sourceNamespace: default}]\n"
    "    route:\n"
    "    - {destination: {host: db, subset: v1}, weight: 80}\n"
    "    - {destination: {host: db, subset: v2, port: {number: 5433}}, weight: 20}\n"
    "    - {destination: {host: db, subset: v3}, weight: 0}\n"
    "  - route: [{destination: {host: fallback}}]\n"; /* catch-all when the match above fails */

static void tcp_routes(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, tcp_vs_yaml, "default");
    wf_kv item = {.key = "app", .value = "client"};
    const wf_kvs labels = {.items = &item, .n = 1};
    json_t *out = outbound(s, "default", &labels);
    json_t *l = by_name(out, "10.96.0.5_5432");
    assert_non_null(l);
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 2);
    json_t *sub = json_array_get(fcs, 0);
    json_t *pr = wf_test_json_at(sub, "filter_chain_match.prefix_ranges");
    assert_int_equal(json_array_size(pr), 2);
    wf_test_expect_str(pr, "0.address_prefix", "10.1.0.0");
    wf_test_expect_int(pr, "0.prefix_len", 16);
    wf_test_expect_str(pr, "1.address_prefix", "10.2.0.1");
    wf_test_expect_int(pr, "1.prefix_len", 32);
    expect_cluster(sub, "outbound|5432|canary|db.default.svc.cluster.local");
    json_t *w = json_array_get(fcs, 1);
    assert_null(json_object_get(w, "filter_chain_match"));
    json_t *tp = tcp_proxy_of(w);
    wf_test_expect_str(tp, "stat_prefix", "db-split.default");
    assert_null(json_object_get(tp, "cluster"));
    json_t *cl = wf_test_json_at(tp, "weighted_clusters.clusters");
    assert_int_equal(json_array_size(cl), 2); /* weight 0 left out */
    wf_test_expect_str(cl, "0.name", "outbound|5432|v1|db.default.svc.cluster.local");
    wf_test_expect_int(cl, "0.weight", 80);
    wf_test_expect_str(cl, "1.name", "outbound|5433|v2|db.default.svc.cluster.local");
    wf_test_expect_int(cl, "1.weight", 20);
    json_decref(out);

    /* another proxy (no labels): the weighted route's match fails, the last route is the
     * catch-all (and no default chain follows it) */
    out = outbound(s, "default", NULL);
    fcs = wf_test_json_at(by_name(out, "10.96.0.5_5432"), "filter_chains");
    assert_int_equal(json_array_size(fcs), 2);
    assert_null(json_object_get(json_array_get(fcs, 1), "filter_chain_match"));
    expect_cluster(json_array_get(fcs, 1), "outbound|5432||fallback.default.svc.cluster.local");
    json_decref(out);

    /* a proxy in another namespace: sourceNamespace fails too */
    out = outbound(s, "other", &labels);
    fcs = wf_test_json_at(by_name(out, "10.96.0.5_5432"), "filter_chains");
    assert_int_equal(json_array_size(fcs), 2);
    expect_cluster(json_array_get(fcs, 1), "outbound|5432||fallback.default.svc.cluster.local");
    json_decref(out);
    wf_store_free(s);
}

/* DestinationRule connectionPool.tcp on the tcp_proxy: the default chain takes the top-level
 * policy, port-level settings win for their port, a subset's connectionPool replaces the
 * whole connectionPool (Istio's MergeTrafficPolicy). */
static const char dr_yaml[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: default}\n"
    "spec: {ports: [{name: tcp-db, port: 5432}, {name: tcp-v2, port: 5433}, {name: tcp-x, port: "
    "5434}]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
    "metadata: {name: db, namespace: default}\n"
    "spec:\n  host: db\n"
    "  trafficPolicy:\n"
    "    connectionPool: {tcp: {idleTimeout: 30s}}\n"
    "    portLevelSettings: [{port: {number: 5434}, connectionPool: {tcp: {idleTimeout: 0s}}}]\n"
    "  subsets:\n"
    "  - name: v2\n    labels: {version: v2}\n"
    "    trafficPolicy: {connectionPool: {tcp: {maxConnectionDuration: 1h}}}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\nkind: VirtualService\n"
    "metadata: {name: db, namespace: default}\n"
    "spec:\n  hosts: [db]\n"
    "  tcp: [{match: [{port: 5433}], route: [{destination: {host: db, subset: v2, port: "
    "{number: 5433}}}]}]\n";

static void destination_rule_tcp_settings(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, dr_yaml, "default");
    json_t *out = outbound(s, "default", NULL);
    json_t *tp = tcp_proxy_of(wf_test_json_at(by_name(out, "0.0.0.0_5432"), "filter_chains.0"));
    wf_test_expect_str(tp, "idle_timeout", "30s");
    assert_null(json_object_get(tp, "max_downstream_connection_duration"));
    tp = tcp_proxy_of(wf_test_json_at(by_name(out, "0.0.0.0_5433"), "filter_chains.0"));
    wf_test_expect_str(tp, "cluster", "outbound|5433|v2|db.default.svc.cluster.local");
    assert_null(json_object_get(tp, "idle_timeout"));
    wf_test_expect_str(tp, "max_downstream_connection_duration", "3600s");
    tp = tcp_proxy_of(wf_test_json_at(by_name(out, "0.0.0.0_5434"), "filter_chains.0"));
    wf_test_expect_str(tp, "idle_timeout", "0s");
    json_decref(out);
    wf_store_free(s);
}

/* ---------- VirtualService tls routes and TLS ports ---------- */

static const char tls_vs_yaml[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: front, namespace: default}\n"
    "spec: {clusterIP: 10.96.0.9, ports: [{name: tls, port: 443}]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\nkind: VirtualService\n"
    "metadata: {name: front, namespace: default}\n"
    "spec:\n"
    "  hosts: [front.default.svc.cluster.local]\n"
    "  tls:\n"
    "  - match: [{sniHosts: [a.example.com], port: 443}, {sniHosts: [b.example.com], gateways: "
    "[gw]}]\n"
    "    route: [{destination: {host: a-backend}}]\n"
    "  - match: [{sniHosts: [a.example.com]}]\n" /* the same SNI again: skipped */
    "    route: [{destination: {host: other}}]\n"
    "  - match: [{sniHosts: [c.example.com], destinationSubnets: [10.3.0.0/24]}]\n"
    "    route: [{destination: {host: c-backend, port: {number: 8443}}}]\n";

static void tls_routes(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, tls_vs_yaml, "default");
    json_t *out = outbound(s, "default", NULL);
    json_t *l = by_name(out, "10.96.0.9_443");
    assert_non_null(l);
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.tls_inspector");
    wf_test_expect_int(l, "listener_filters.0.typed_config.initial_read_buffer_size", 512);
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 3); /* a, c, then the default TCP chain */
    json_t *a = json_array_get(fcs, 0);
    wf_test_expect_str(a, "filter_chain_match.server_names.0", "a.example.com");
    assert_null(wf_test_json_at(a, "filter_chain_match.server_names.1"));
    assert_null(wf_test_json_at(a, "filter_chain_match.prefix_ranges"));
    expect_cluster(a, "outbound|443||a-backend.default.svc.cluster.local");
    json_t *c = json_array_get(fcs, 1);
    wf_test_expect_str(c, "filter_chain_match.server_names.0", "c.example.com");
    wf_test_expect_str(c, "filter_chain_match.prefix_ranges.0.address_prefix", "10.3.0.0");
    wf_test_expect_int(c, "filter_chain_match.prefix_ranges.0.prefix_len", 24);
    expect_cluster(c, "outbound|8443||c-backend.default.svc.cluster.local");
    assert_null(json_object_get(json_array_get(fcs, 2), "filter_chain_match"));
    expect_cluster(json_array_get(fcs, 2), "outbound|443||front.default.svc.cluster.local");
    json_decref(out);
    wf_store_free(s);
}

/* Two TLS ServiceEntries on 443 without addresses share the wildcard listener, one SNI chain
 * each (Istio's default TLS chain names the host when the listener has no VIP). */
static const char se_tls_yaml[] = "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\n"
                                  "metadata: {name: a, namespace: default}\n"
                                  "spec:\n  hosts: [api.a.example]\n  resolution: DNS\n"
                                  "  ports: [{number: 443, name: tls, protocol: TLS}]\n"
                                  "---\n"
                                  "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\n"
                                  "metadata: {name: b, namespace: default}\n"
                                  "spec:\n  hosts: [api.b.example]\n  resolution: DNS\n"
                                  "  ports: [{number: 443, name: https, protocol: HTTPS}]\n";

static void se_tls_wildcard(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, se_tls_yaml, "default");
    json_t *out = outbound(s, "default", NULL);
    assert_int_equal(json_array_size(out), 1);
    json_t *l = by_name(out, "0.0.0.0_443");
    assert_non_null(l);
    assert_non_null(json_object_get(l, "listener_filters"));
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 3);
    wf_test_expect_str(json_array_get(fcs, 0), "filter_chain_match.server_names.0",
                       "api.a.example");
    expect_cluster(json_array_get(fcs, 0), "outbound|443||api.a.example");
    /* the first service's catch-all; the second's would duplicate it */
    assert_null(json_object_get(json_array_get(fcs, 1), "filter_chain_match"));
    expect_cluster(json_array_get(fcs, 1), "outbound|443||api.a.example");
    wf_test_expect_str(json_array_get(fcs, 2), "filter_chain_match.server_names.0",
                       "api.b.example");
    expect_cluster(json_array_get(fcs, 2), "outbound|443||api.b.example");
    json_decref(out);
    wf_store_free(s);
}

static void cidr_ranges(void **state)
{
    (void)state;
    json_t *r = wf_tcp_cidr_range("192.168.0.0/16");
    wf_test_expect_str(r, "address_prefix", "192.168.0.0");
    wf_test_expect_int(r, "prefix_len", 16);
    json_decref(r);
    r = wf_tcp_cidr_range("2001:db8::1");
    wf_test_expect_int(r, "prefix_len", 128);
    json_decref(r);
    assert_null(wf_tcp_cidr_range("10.0.0.0/33"));
    assert_null(wf_tcp_cidr_range("10.0.0.0/"));
    assert_null(wf_tcp_cidr_range("db.example"));
    assert_null(wf_tcp_cidr_range(NULL));
}

/* ---------- inbound ---------- */

static const char pod_yaml[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: shop}\n"
    "spec:\n  selector: {app: db}\n"
    "  ports: [{name: tcp-db, port: 5432, targetPort: 15432}, {name: http, port: 80}]\n"
    "---\n"
    "apiVersion: v1\nkind: Pod\nmetadata: {name: db-1, namespace: shop, labels: {app: db}}\n"
    "spec: {containers: [{name: db}]}\n";

static json_t *inbound_with(const char *extra, wf_store **sp)
{
    wf_store *s = wf_test_load_store_cat(pod_yaml, extra, "shop");
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "shop", "db-1");
    assert_non_null(pod);
    const wf_inbound_options o = {
        .ns = "shop", .labels = &pod->labels, .pod = pod, .bind = "127.10.0.3"};
    json_t *ls = wf_inbound_listeners(s, &o);
    assert_non_null(ls);
    assert_int_equal(json_array_size(ls), 2); /* 80 (HTTP) and 15432 (TCP) */
    *sp = s;
    return ls;
}

static void expect_inbound_filters(json_t *chain, size_t nrbac)
{
    json_t *fs = json_object_get(chain, "filters");
    assert_int_equal(json_array_size(fs), nrbac + 3);
    /* Istio's TCPListenerMx first (buildCompleteNetworkFilters) */
    json_t *mx = json_array_get(fs, 0);
    wf_test_expect_str(mx, "name", "istio.metadata_exchange");
    wf_test_expect_str(mx, "typed_config.@type", "type.googleapis.com/udpa.type.v1.TypedStruct");
    wf_test_expect_str(mx, "typed_config.type_url",
                       "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange");
    wf_test_expect_str(mx, "typed_config.value.protocol", "istio-peer-exchange");
    assert_true(json_is_true(wf_test_json_at(mx, "typed_config.value.enable_discovery")));
    for (size_t i = 1; i <= nrbac; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(fs, i), "name")),
                            "envoy.filters.network.rbac");
    json_t *st = json_array_get(fs, nrbac + 1);
    wf_test_expect_str(st, "name", "istio.stats");
    assert_true(
        json_is_true(wf_test_json_at(st, "typed_config.value.disable_host_header_fallback")));
    json_t *tp = json_array_get(fs, nrbac + 2);
    wf_test_expect_str(tp, "name", "envoy.filters.network.tcp_proxy");
    wf_test_expect_str(tp, "typed_config.cluster", "inbound|15432||");
    wf_test_expect_str(tp, "typed_config.stat_prefix", "inbound|15432||");
    wf_test_expect_str(chain, "name", "127.10.0.3_15432");
}

static void expect_tcp_mtls(json_t *chain)
{
    json_t *ctx = wf_test_json_at(chain, "transport_socket.typed_config");
    assert_non_null(ctx);
    assert_true(json_is_true(json_object_get(ctx, "require_client_certificate")));
    json_t *alpn = wf_test_json_at(ctx, "common_tls_context.alpn_protocols");
    assert_int_equal(json_array_size(alpn), 3);
    wf_test_expect_str(alpn, "0", "istio-peer-exchange");
    wf_test_expect_str(alpn, "1", "h2");
    wf_test_expect_str(alpn, "2", "http/1.1");
}

static void inbound_permissive(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = inbound_with("", &s);
    json_t *l = by_name(ls, "127.10.0.3_15432");
    assert_non_null(l);
    wf_test_expect_str(l, "address.socket_address.address", "127.10.0.3");
    wf_test_expect_int(l, "address.socket_address.port_value", 15432);
    wf_test_expect_str(l, "traffic_direction", "INBOUND");
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.tls_inspector");
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 3);
    json_t *m = json_array_get(fcs, 0);
    wf_test_expect_str(m, "filter_chain_match.transport_protocol", "tls");
    assert_int_equal(
        json_array_size(wf_test_json_at(m, "filter_chain_match.application_protocols")), 5);
    wf_test_expect_str(m, "filter_chain_match.application_protocols.0", "istio");
    expect_tcp_mtls(m);
    expect_inbound_filters(m, 0);
    json_t *own_tls = json_array_get(fcs, 1);
    wf_test_expect_str(own_tls, "filter_chain_match.transport_protocol", "tls");
    assert_null(wf_test_json_at(own_tls, "filter_chain_match.application_protocols"));
    assert_null(json_object_get(own_tls, "transport_socket"));
    expect_inbound_filters(own_tls, 0);
    json_t *raw = json_array_get(fcs, 2);
    wf_test_expect_str(raw, "filter_chain_match.transport_protocol", "raw_buffer");
    assert_null(json_object_get(raw, "transport_socket"));
    expect_inbound_filters(raw, 0);
    json_decref(ls);
    wf_store_free(s);
}

static void inbound_strict_with_rbac(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = inbound_with("---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                              "metadata: {name: default, namespace: shop}\n"
                              "spec: {mtls: {mode: STRICT}}\n"
                              "---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                              "metadata: {name: deny-db, namespace: shop}\n"
                              "spec:\n  selector: {matchLabels: {app: db}}\n  action: DENY\n"
                              "  rules: [{to: [{operation: {ports: ['15432']}}]}]\n",
                              &s);
    json_t *l = by_name(ls, "127.10.0.3_15432");
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    json_t *c = json_array_get(fcs, 0);
    wf_test_expect_str(c, "filter_chain_match.transport_protocol", "tls");
    assert_null(wf_test_json_at(c, "filter_chain_match.application_protocols"));
    expect_tcp_mtls(c);
    expect_inbound_filters(c, 1);
    json_t *rbac = wf_test_json_at(c, "filters.1.typed_config");
    wf_test_expect_str(rbac, "stat_prefix", "tcp.");
    wf_test_expect_str(rbac, "rules.action", "DENY");
    assert_non_null(wf_test_json_at(rbac, "rules.policies.ns[shop]-policy[deny-db]-rule[0]"));
    json_decref(ls);
    wf_store_free(s);
}

static void inbound_disable_port_level(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = inbound_with("---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
                              "metadata: {name: db, namespace: shop}\n"
                              "spec:\n  selector: {matchLabels: {app: db}}\n"
                              "  mtls: {mode: STRICT}\n"
                              "  portLevelMtls: {15432: {mode: DISABLE}}\n",
                              &s);
    json_t *l = by_name(ls, "127.10.0.3_15432");
    assert_null(json_object_get(l, "listener_filters"));
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    assert_null(json_object_get(json_array_get(fcs, 0), "filter_chain_match"));
    assert_null(json_object_get(json_array_get(fcs, 0), "transport_socket"));
    expect_inbound_filters(json_array_get(fcs, 0), 0);
    /* the HTTP port keeps the workload's STRICT */
    json_t *http = by_name(ls, "127.10.0.3_80");
    assert_int_equal(json_array_size(json_object_get(http, "filter_chains")), 1);
    json_decref(ls);
    wf_store_free(s);
}

/* MeshConfig's access log goes on tcp_proxy as on the HCM (the same Istio format). */
static void access_log_on_tcp_proxy(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, db_yaml, "default");
    char *path = wf_test_temp_file("accessLogFile: /dev/stdout\n");
    wf_meshcfg *mesh = wf_meshcfg_new_default();
    const char *err = NULL;
    assert_non_null(mesh);
    assert_int_equal(wf_meshcfg_load_file(mesh, path, &err), 0);
    unlink(path);
    free(path);
    json_t *out = outbound(s, "default", NULL);
    assert_int_equal(wf_gen_access_logs(out, mesh), 0);
    json_t *tp = wf_test_json_at(by_name(out, "10.96.0.5_5432"), "filter_chains.0.filters.1");
    wf_test_expect_str(tp, "typed_config.access_log.0.name", "envoy.access_loggers.file");
    wf_test_expect_str(tp, "typed_config.access_log.0.typed_config.path", "/dev/stdout");
    json_t *hcm = wf_test_json_at(by_name(out, "0.0.0.0_8080"), "filter_chains.0.filters.0");
    assert_non_null(wf_test_json_at(hcm, "typed_config.access_log.0"));
    json_decref(out);
    wf_meshcfg_free(mesh);
    wf_store_free(s);
}

/* ---------- ports several services share ---------- */

typedef struct clashes {
    char text[8][160];
    size_t n;
} clashes;

static void on_clash(const wf_tcp_clash *c, void *arg)
{
    clashes *x = arg;
    if (x->n < 8)
        snprintf(x->text[x->n++], sizeof x->text[0], "%s[%zu] %d %s %s", c->res->name, c->index,
                 (int)c->port->port, c->taker_host, c->http ? "HTTP" : "TCP");
}

static void port_clashes(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, db_yaml, "default");
    clashes x = {0};
    assert_int_equal(wf_tcp_port_clashes(s, NULL, on_clash, &x), 2);
    /* cache's 8080 goes to db's HTTP listener, its 5432 to db's VIP listener; 6379 is its own */
    assert_string_equal(x.text[0], "cache[1] 8080 db.default.svc.cluster.local HTTP");
    assert_string_equal(x.text[1], "cache[2] 5432 db.default.svc.cluster.local TCP");
    wf_store_free(s);
    /* TLS ServiceEntries without addresses share 443 by SNI: no clash */
    s = wf_test_load_store(NULL, se_tls_yaml, "default");
    x = (clashes){0};
    assert_int_equal(wf_tcp_port_clashes(s, NULL, on_clash, &x), 0);
    wf_store_free(s);
    /* one plain TCP ServiceEntry with two hosts: the second host's catch-all is the first's;
     * reported once */
    s = wf_test_load_store(NULL,
                           "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\n"
                           "metadata: {name: dbs, namespace: default}\n"
                           "spec:\n  hosts: [a.db.example, b.db.example, c.db.example]\n"
                           "  resolution: DNS\n"
                           "  ports: [{number: 3306, name: tcp, protocol: TCP}]\n",
                           "default");
    x = (clashes){0};
    assert_int_equal(wf_tcp_port_clashes(s, NULL, on_clash, &x), 1);
    assert_string_equal(x.text[0], "dbs[0] 3306 a.db.example TCP");
    wf_store_free(s);
    assert_int_equal(wf_tcp_port_clashes(NULL, NULL, on_clash, &x), -1);
}

/* weft-proxy's loader takes every listener generated here (the tcp_proxy and istio.stats
 * network filters, network RBAC, SNI and prefix_ranges matches). */
static void expect_proxy_accepts(json_t *listeners)
{
    json_t *boot = json_pack("{s:{s:O}}", "static_resources", "listeners", listeners);
    assert_non_null(boot);
    char *text = json_dumps(boot, 0);
    json_decref(boot);
    wf_strbuf err = WF_STRBUF_INIT;
    struct wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("weft-proxy refuses the listeners: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    wp_config_unref(c);
}

static void proxy_accepts(void **state)
{
    (void)state;
    static const char *const yamls[] = {db_yaml, tcp_vs_yaml, dr_yaml, tls_vs_yaml, se_tls_yaml};
    for (size_t i = 0; i < sizeof yamls / sizeof yamls[0]; i++) {
        wf_store *s = wf_test_load_store(NULL, yamls[i], "default");
        wf_kv item = {.key = "app", .value = "client"};
        const wf_kvs labels = {.items = &item, .n = 1};
        json_t *out = outbound(s, "default", &labels);
        json_t *tcp = json_array();
        for (size_t j = 0; j < json_array_size(out); j++) { /* HCM listeners need RDS */
            json_t *l = json_array_get(out, j);
            if (!wf_test_json_at(l, "filter_chains.0.filters.0.typed_config.rds"))
                json_array_append(tcp, l);
        }
        expect_proxy_accepts(tcp);
        json_decref(tcp);
        json_decref(out);
        wf_store_free(s);
    }
    static const char *const inbound_extra[] = {
        "",
        "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
        "metadata: {name: default, namespace: shop}\nspec: {mtls: {mode: STRICT}}\n"
        "---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
        "metadata: {name: deny-db, namespace: shop}\n"
        "spec: {action: DENY, rules: [{from: [{source: {principals: [a]}}]}]}\n",
        "---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
        "metadata: {name: default, namespace: shop}\nspec: {mtls: {mode: DISABLE}}\n"};
    for (size_t i = 0; i < 3; i++) {
        wf_store *s;
        json_t *ls = inbound_with(inbound_extra[i], &s);
        json_t *one = json_pack("[O]", by_name(ls, "127.10.0.3_15432"));
        expect_proxy_accepts(one);
        json_decref(one);
        json_decref(ls);
        wf_store_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(outbound_ports_and_names),
        cmocka_unit_test(tcp_class),
        cmocka_unit_test(tcp_routes),
        cmocka_unit_test(destination_rule_tcp_settings),
        cmocka_unit_test(tls_routes),
        cmocka_unit_test(se_tls_wildcard),
        cmocka_unit_test(cidr_ranges),
        cmocka_unit_test(inbound_permissive),
        cmocka_unit_test(inbound_strict_with_rbac),
        cmocka_unit_test(inbound_disable_port_level),
        cmocka_unit_test(access_log_on_tcp_proxy),
        cmocka_unit_test(proxy_accepts),
        cmocka_unit_test(port_clashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
