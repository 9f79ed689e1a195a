/*
 * test_pilot_gateway_tcp.c - pilot/gateway_tcp: TLS passthrough on a gateway. PASSTHROUGH:
 * one SNI chain per VirtualService tls match bound to the Gateway (duplicate SNI skipped,
 * matches for other ports, gateways or labels skipped), tls_inspector, no HCM and no http.<port>
 * route configuration; AUTO_PASSTHROUGH: outbound_.<port>_.<subset>_.<host> chains per service
 * port and subset; a port mixing a terminating HTTPS server and a passthrough one; the gateway's
 * network RBAC first (protocols.md §4.7).
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
#include "model/store.h"
#include "pilot/gateway.h"
#include "pilot/gateway_tcp.h"
#include "proxy/config/config.h"

static const char base[] =
    "apiVersion: v1\nkind: Pod\n"
    "metadata: {name: gw-1, namespace: istio-system, labels: {istio: ingressgateway}}\n"
    "spec: {containers: [{name: istio-proxy}]}\n"
    "---\n"
    "apiVersion: v1\nkind: Service\nmetadata: {name: nginx, namespace: shop}\n"
    "spec: {selector: {app: nginx}, ports: [{name: https, port: 443}]}\n"
    "---\n"
    "apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: shop}\n"
    "spec: {selector: {app: db}, ports: [{name: tcp, port: 5432}, {name: http, port: 8080}]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
    "metadata: {name: db, namespace: shop}\n"
    "spec: {host: db, subsets: [{name: v1, labels: {version: v1}}]}\n";

static json_t *listeners(const char *extra, wf_store **sp)
{
    wf_store *s = wf_test_load_store_cat(base, extra, "shop");
    const wf_resource *pod = wf_store_find(s, WF_KIND_POD, "istio-system", "gw-1");
    assert_non_null(pod);
    const wf_gateway_options o = {
        .proxy_ns = "istio-system", .proxy_labels = &pod->labels, .pod = pod, .bind = "127.10.0.4"};
    json_t *ls = wf_gateway_listeners(s, &o);
    assert_non_null(ls);
    json_t *rcs = wf_gateway_route_configs(s, &o);
    assert_non_null(rcs);
    for (size_t i = 0; i < json_array_size(rcs); i++) /* no HCM route config for passthrough */
        assert_string_not_equal(json_string_value(json_object_get(json_array_get(rcs, i), "name")),
                                "http.443");
    json_decref(rcs);
    *sp = s;
    return ls;
}

/* weft-proxy's loader takes the passthrough listeners. */
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

static const char passthrough_yaml[] =
    "---\napiVersion: networking.istio.io/v1\nkind: Gateway\n"
    "metadata: {name: pass, namespace: istio-system}\n"
    "spec:\n  selector: {istio: ingressgateway}\n"
    "  servers:\n"
    "  - port: {number: 443, name: tls, protocol: TLS}\n"
    "    hosts: ['shop/*.example.com']\n"
    "    tls: {mode: PASSTHROUGH}\n"
    "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\n"
    "metadata: {name: nginx, namespace: shop}\n"
    "spec:\n  hosts: [nginx.example.com]\n  gateways: [istio-system/pass]\n"
    "  tls:\n"
    "  - match: [{port: 443, sniHosts: [nginx.example.com]}, {port: 8443, sniHosts: "
    "[x.example.com]}]\n"
    "    route: [{destination: {host: nginx}}]\n"
    "  - match: [{sniHosts: [nginx.example.com]}]\n" /* duplicate SNI: skipped */
    "    route: [{destination: {host: db}}]\n"
    "  - match: [{sniHosts: [two.example.com], sourceLabels: {istio: ingressgateway}}]\n"
    "    route:\n"
    "    - {destination: {host: nginx}, weight: 50}\n"
    "    - {destination: {host: db, port: {number: 5432}}, weight: 50}\n"
    "  - match: [{sniHosts: [other.example.com], gateways: [elsewhere]}]\n"
    "    route: [{destination: {host: db}}]\n"
    "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\n"
    "metadata: {name: unbound, namespace: shop}\n"
    "spec:\n  hosts: [u.example.com]\n  gateways: [other-gw]\n"
    "  tls: [{match: [{sniHosts: [u.example.com]}], route: [{destination: {host: db}}]}]\n";

static void passthrough_chains(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = listeners(passthrough_yaml, &s);
    assert_int_equal(json_array_size(ls), 1);
    json_t *l = json_array_get(ls, 0);
    wf_test_expect_str(l, "name", "0.0.0.0_443");
    wf_test_expect_str(l, "address.socket_address.address", "127.10.0.4");
    wf_test_expect_str(l, "listener_filters.0.name", "envoy.filters.listener.tls_inspector");
    wf_test_expect_str(l, "traffic_direction", "OUTBOUND");
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 2);
    json_t *a = json_array_get(fcs, 0);
    wf_test_expect_str(a, "filter_chain_match.server_names.0", "nginx.example.com");
    assert_null(json_object_get(a, "transport_socket"));
    wf_test_expect_str(a, "filters.0.name", "istio.stats");
    wf_test_expect_str(a, "filters.1.name", "envoy.filters.network.tcp_proxy");
    /* nginx has one port: the destination without port goes there */
    wf_test_expect_str(a, "filters.1.typed_config.cluster",
                       "outbound|443||nginx.shop.svc.cluster.local");
    json_t *b = json_array_get(fcs, 1);
    wf_test_expect_str(b, "filter_chain_match.server_names.0", "two.example.com");
    wf_test_expect_str(b, "filters.1.typed_config.stat_prefix", "nginx.shop");
    wf_test_expect_str(b, "filters.1.typed_config.weighted_clusters.clusters.1.name",
                       "outbound|5432||db.shop.svc.cluster.local");
    expect_proxy_accepts(ls);
    json_decref(ls);
    wf_store_free(s);
}

static const char auto_yaml[] = "---\napiVersion: networking.istio.io/v1\nkind: Gateway\n"
                                "metadata: {name: cross, namespace: istio-system}\n"
                                "spec:\n  selector: {istio: ingressgateway}\n"
                                "  servers:\n"
                                "  - port: {number: 15443, name: tls, protocol: TLS}\n"
                                "    hosts: ['*.shop.svc.cluster.local']\n"
                                "    tls: {mode: AUTO_PASSTHROUGH}\n";

static void auto_passthrough_chains(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = listeners(auto_yaml, &s);
    json_t *l = json_array_get(ls, 0);
    wf_test_expect_str(l, "name", "0.0.0.0_15443");
    json_t *fcs = json_object_get(l, "filter_chains");
    /* nginx:443; db:5432 and :8080, each with subset v1 */
    assert_int_equal(json_array_size(fcs), 5);
    json_t *c = json_array_get(fcs, 0);
    wf_test_expect_str(c, "filter_chain_match.server_names.0",
                       "outbound_.443_._.nginx.shop.svc.cluster.local");
    wf_test_expect_str(c, "filter_chain_match.application_protocols.0", "istio-peer-exchange");
    wf_test_expect_str(c, "filter_chain_match.application_protocols.1", "istio");
    wf_test_expect_str(c, "filters.1.typed_config.cluster",
                       "outbound|443||nginx.shop.svc.cluster.local");
    c = json_array_get(fcs, 2);
    wf_test_expect_str(c, "filter_chain_match.server_names.0",
                       "outbound_.5432_.v1_.db.shop.svc.cluster.local");
    wf_test_expect_str(c, "filters.1.typed_config.cluster",
                       "outbound|5432|v1|db.shop.svc.cluster.local");
    wf_test_expect_str(json_array_get(fcs, 4), "filter_chain_match.server_names.0",
                       "outbound_.8080_.v1_.db.shop.svc.cluster.local");
    expect_proxy_accepts(ls);
    json_decref(ls);
    wf_store_free(s);
}

/* A terminating HTTPS server and a passthrough one on 443: the HCM chain first, then SNI. */
static const char mixed_yaml[] =
    "---\napiVersion: networking.istio.io/v1\nkind: Gateway\n"
    "metadata: {name: mixed, namespace: istio-system}\n"
    "spec:\n  selector: {istio: ingressgateway}\n"
    "  servers:\n"
    "  - port: {number: 443, name: https, protocol: HTTPS}\n"
    "    hosts: ['web.example.com']\n"
    "    tls: {mode: SIMPLE, credentialName: web-cert}\n"
    "  - port: {number: 443, name: tls, protocol: TLS}\n"
    "    hosts: ['nginx.example.com']\n"
    "    tls: {mode: PASSTHROUGH}\n"
    "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\n"
    "metadata: {name: nginx, namespace: shop}\n"
    "spec:\n  hosts: [nginx.example.com]\n  gateways: [istio-system/mixed]\n"
    "  tls: [{match: [{sniHosts: [nginx.example.com]}], route: [{destination: {host: nginx}}]}]\n"
    "---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
    "metadata: {name: deny-all, namespace: istio-system}\n"
    "spec:\n  selector: {matchLabels: {istio: ingressgateway}}\n  action: DENY\n"
    "  rules: [{from: [{source: {namespaces: [evil]}}]}]\n";

static void mixed_port_with_rbac(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = listeners(mixed_yaml, &s);
    json_t *fcs = wf_test_json_at(json_array_get(ls, 0), "filter_chains");
    assert_int_equal(json_array_size(fcs), 2);
    wf_test_expect_str(json_array_get(fcs, 0), "filter_chain_match.server_names.0",
                       "web.example.com");
    wf_test_expect_str(json_array_get(fcs, 0), "filters.0.name",
                       "envoy.filters.network.http_connection_manager");
    json_t *p = json_array_get(fcs, 1);
    wf_test_expect_str(p, "filter_chain_match.server_names.0", "nginx.example.com");
    wf_test_expect_str(p, "filters.0.name", "envoy.filters.network.rbac");
    wf_test_expect_str(p, "filters.0.typed_config.rules.action", "DENY");
    wf_test_expect_str(p, "filters.1.name", "istio.stats");
    wf_test_expect_str(p, "filters.2.name", "envoy.filters.network.tcp_proxy");
    json_decref(ls);
    wf_store_free(s);
}

/* A TCP server: the first tcp route that applies is its one chain, no SNI and no inspector. */
static const char tcp_yaml[] = "---\napiVersion: networking.istio.io/v1\nkind: Gateway\n"
                               "metadata: {name: tcp, namespace: istio-system}\n"
                               "spec:\n  selector: {istio: ingressgateway}\n"
                               "  servers:\n"
                               "  - port: {number: 31400, name: tcp, protocol: TCP}\n"
                               "    hosts: ['*']\n"
                               "  - port: {number: 31401, name: tcp-none, protocol: TCP}\n"
                               "    hosts: ['*']\n"
                               "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\n"
                               "metadata: {name: db, namespace: shop}\n"
                               "spec:\n  hosts: ['*']\n  gateways: [istio-system/tcp]\n"
                               "  tcp:\n"
                               "  - match: [{port: 9999}]\n"
                               "    route: [{destination: {host: nginx}}]\n"
                               "  - match: [{port: 31400}]\n"
                               "    route: [{destination: {host: db, port: {number: 5432}}}]\n"
                               "  - route: [{destination: {host: nginx}}]\n";

static void tcp_server_chain(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = listeners(tcp_yaml, &s);
    /* 31401: the catch-all route (no match) applies to it too */
    assert_int_equal(json_array_size(ls), 2);
    json_t *l = json_array_get(ls, 0);
    wf_test_expect_str(l, "name", "0.0.0.0_31400");
    assert_null(json_object_get(l, "listener_filters"));
    json_t *fcs = json_object_get(l, "filter_chains");
    assert_int_equal(json_array_size(fcs), 1);
    assert_null(json_object_get(json_array_get(fcs, 0), "filter_chain_match"));
    wf_test_expect_str(json_array_get(fcs, 0), "filters.1.typed_config.cluster",
                       "outbound|5432||db.shop.svc.cluster.local");
    wf_test_expect_str(json_array_get(ls, 1), "filter_chains.0.filters.1.typed_config.cluster",
                       "outbound|443||nginx.shop.svc.cluster.local");
    expect_proxy_accepts(ls);
    json_decref(ls);
    wf_store_free(s);
}

/* A server no route binds to gets no listener (Envoy refuses one without chains). */
static void no_route_no_listener(void **state)
{
    (void)state;
    wf_store *s;
    json_t *ls = listeners("---\napiVersion: networking.istio.io/v1\nkind: Gateway\n"
                           "metadata: {name: lonely, namespace: istio-system}\n"
                           "spec:\n  selector: {istio: ingressgateway}\n  servers:\n"
                           "  - {port: {number: 31400, name: tcp, protocol: TCP}, hosts: ['*']}\n"
                           "  - {port: {number: 443, name: tls, protocol: TLS}, hosts: ['*'], "
                           "tls: {mode: PASSTHROUGH}}\n",
                           &s);
    assert_int_equal(json_array_size(ls), 0);
    json_decref(ls);
    wf_store_free(s);
}

static void which_servers(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(
        NULL,
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: n}\n"
        "spec:\n  servers:\n"
        "  - {port: {number: 1, name: a, protocol: TLS}, hosts: ['*'], tls: {mode: PASSTHROUGH}}\n"
        "  - {port: {number: 2, name: b, protocol: https}, hosts: ['*'], tls: {mode: "
        "AUTO_PASSTHROUGH}}\n"
        "  - {port: {number: 3, name: c, protocol: TLS}, hosts: ['*'], tls: {mode: SIMPLE}}\n"
        "  - {port: {number: 4, name: d, protocol: TCP}, hosts: ['*']}\n"
        "  - {port: {number: 5, name: e, protocol: HTTP}, hosts: ['*'], tls: {mode: "
        "PASSTHROUGH}}\n",
        "n");
    const wf_resource *gw = wf_store_find(s, WF_KIND_GATEWAY, "n", "g");
    assert_non_null(gw);
    const bool want[] = {true, true, false, false, false};
    const bool tcp[] = {false, false, false, true, false};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(wf_gw_passthrough_server(&gw->t.gateway->servers[i]), want[i]);
        assert_int_equal(wf_gw_tcp_server(&gw->t.gateway->servers[i]), tcp[i]);
    }
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(passthrough_chains),   cmocka_unit_test(auto_passthrough_chains),
        cmocka_unit_test(mixed_port_with_rbac), cmocka_unit_test(tcp_server_chain),
        cmocka_unit_test(no_route_no_listener), cmocka_unit_test(which_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
