/*
 * test_pilot_eds_tls.c - pilot/eds's envoy.transport_socket_match tag, as Istio's
 * pilot/pkg/xds/endpoints/mtls_checker.go: the tlsMode label alone without a DestinationRule
 * tls mode, a DestinationRule mode deciding alone (ISTIO_MUTUAL tags, any other untags), the
 * port-level and subset lookups of the checker, the EDS memo keyed by the rule, the inline
 * endpoints of DNS clusters (CDS), and PeerAuthentication: a workload or port DISABLE untags,
 * a namespace DISABLE turns the service's auto mTLS off.
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
#include "pilot/cds.h"
#include "pilot/eds.h"

#define WEB(port, subset) "outbound|" #port "|" subset "|web.shop.svc.cluster.local"

#define POD(name, ip, version, tls)                                                                \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: shop, labels: {app: web, "   \
    "version: " version tls "}}\nspec: {containers: [{name: a, image: i}]}\nstatus: {podIP: " ip   \
    ", phase: Running}\n---\n"

/* .1 sidecar (tlsMode istio), .2 no label, .3 tlsMode disabled, .4 tlsMode custom */
static const char pods[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
    "spec: {selector: {app: web}, ports: [{name: http, port: 80}, {name: http-b, port: "
    "8080}]}\n---\n" POD("p1", "10.0.0.1", "v1", ", security.istio.io/tlsMode: istio")
        POD("p2", "10.0.0.2", "v1", "")
            POD("p3", "10.0.0.3", "v2", ", security.istio.io/tlsMode: disabled")
                POD("p4", "10.0.0.4", "v2", ", security.istio.io/tlsMode: custom");

static wf_store *load(const char *dr)
{
    static char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s%s", pods, dr ? dr : "");
    wf_store *s = wf_test_load_store(NULL, yaml, "shop");
    assert_non_null(s);
    return s;
}

/* "ip=mode" of each tagged endpoint of lb_endpoints list eps, space separated. */
static void tags_of(json_t *groups, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    json_t *eps = json_object_get(json_array_get(groups, 0), "lb_endpoints");
    size_t i;
    json_t *e;
    json_array_foreach(eps, i, e)
    {
        json_t *fm = json_object_get(json_object_get(e, "metadata"), "filter_metadata");
        const char *mode = json_string_value(
            json_object_get(json_object_get(fm, "envoy.transport_socket_match"), "tlsMode"));
        const char *ip = json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(e, "endpoint"), "address"),
                            "socket_address"),
            "address"));
        if (!mode)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s=%s", used ? " " : "", ip, mode);
        assert_true(n > 0 && (size_t)n < cap - used);
        used += (size_t)n;
    }
}

static void expect_tags(const wf_store *s, const char *cluster, const char *want)
{
    wf_cds_options o = {.proxy_ns = "shop"};
    json_t *c = wf_eds_load_assignment(s, cluster, &o);
    assert_non_null(c);
    char got[256];
    tags_of(json_object_get(c, "endpoints"), got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("%s: tagged \"%s\", want \"%s\"", cluster, got, want);
    json_decref(c);
}

#define DR_HEAD                                                                                    \
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: web, "            \
    "namespace: shop}\nspec:\n  host: web\n  subsets:\n  - {name: v1, labels: {version: v1}}\n"

static void label_only_without_rule_mode(void **state)
{
    (void)state;
    wf_store *s = load(NULL);
    /* only tlsMode istio: no label, "disabled" and other values are not tagged */
    expect_tags(s, WEB(80, ""), "10.0.0.1=istio");
    wf_store_free(s);
    s = load(DR_HEAD "  - {name: v2, labels: {version: v2}}\n"); /* a rule without tls */
    expect_tags(s, WEB(80, ""), "10.0.0.1=istio");
    expect_tags(s, WEB(80, "v2"), "");
    wf_store_free(s);
}

static void rule_mode_decides(void **state)
{
    (void)state;
    wf_store *s = load(DR_HEAD "  - name: v2\n    labels: {version: v2}\n"
                               "    trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n"
                               "  trafficPolicy:\n    tls: {mode: SIMPLE}\n"
                               "    portLevelSettings:\n    - port: {number: 8080}\n"
                               "      tls: {mode: ISTIO_MUTUAL}\n"
                               "    - port: {number: 80}\n"
                               "      loadBalancer: {simple: RANDOM}\n");
    /* port 80: the port entry has no tls, the top-level SIMPLE untags everything */
    expect_tags(s, WEB(80, ""), "");
    /* port 8080: ISTIO_MUTUAL tags every labelled endpoint with its own value */
    expect_tags(s, WEB(8080, ""), "10.0.0.1=istio 10.0.0.4=custom");
    /* subset v1 has no policy of its own: the checker does not look at the top level */
    expect_tags(s, WEB(80, "v1"), "10.0.0.1=istio");
    expect_tags(s, WEB(80, "v2"), "10.0.0.4=custom");
    wf_store_free(s);
    s = load(DR_HEAD "  trafficPolicy:\n    tls: {}\n"); /* mode absent: DISABLE */
    expect_tags(s, WEB(80, ""), "");
    expect_tags(s, WEB(8080, ""), "");
    wf_store_free(s);
}

/* Two proxies resolving different rules for one cluster name share no memo entry. */
static void memo_keyed_by_rule(void **state)
{
    (void)state;
    wf_store *s = load("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: "
                       "{name: plain, namespace: client}\nspec: {host: web.shop.svc.cluster.local, "
                       "trafficPolicy: {tls: {mode: DISABLE}}}\n");
    json_t *memo = json_object();
    wf_cds_options shop = {.proxy_ns = "shop"}, client = {.proxy_ns = "client"};
    char got[128];
    json_t *a = wf_eds_load_assignment_memo(s, WEB(80, ""), &shop, memo);
    json_t *b = wf_eds_load_assignment_memo(s, WEB(80, ""), &client, memo);
    tags_of(json_object_get(a, "endpoints"), got, sizeof got);
    assert_string_equal(got, "10.0.0.1=istio");
    tags_of(json_object_get(b, "endpoints"), got, sizeof got);
    assert_string_equal(got, "");
    json_decref(a);
    json_decref(b);
    json_decref(memo);
    wf_store_free(s);
}

/* DNS clusters carry their endpoints inline in CDS, tagged the same way. */
static void dns_inline_endpoints(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: db, "
        "namespace: shop}\nspec: {hosts: [db.internal], location: MESH_INTERNAL, resolution: DNS, "
        "ports: [{number: 5432, name: tcp, protocol: TCP}], endpoints: [{address: db1.internal, "
        "labels: {security.istio.io/tlsMode: istio}}]}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: db, "
        "namespace: shop}\nspec: {host: db.internal, subsets: [{name: plain, trafficPolicy: {tls: "
        "{mode: DISABLE}}}]}\n";
    wf_store *s = wf_test_load_store(NULL, yaml, "shop");
    wf_cds_options o = {.proxy_ns = "shop"};
    json_t *out = wf_cds_sidecar_clusters(s, &o);
    assert_non_null(out);
    char got[128];
    tags_of(wf_test_json_at(json_array_get(out, 0), "load_assignment.endpoints"), got, sizeof got);
    assert_string_equal(got, "db1.internal=istio");
    wf_test_expect_str(json_array_get(out, 1), "name", "outbound|5432|plain|db.internal");
    tags_of(wf_test_json_at(json_array_get(out, 1), "load_assignment.endpoints"), got, sizeof got);
    assert_string_equal(got, "");
    json_decref(out);
    wf_store_free(s);
}

#define PA(name, body)                                                                             \
    "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: " name           \
    ", namespace: shop}\nspec:\n" body "---\n"

/* mtls_checker.go: the endpoint's workload PeerAuthentication (pilot/authn.h) on its port;
 * DISABLE untags, a DestinationRule tls mode still decides alone. */
static void peer_authentication_disable_untags(void **state)
{
    (void)state;
    wf_store *s = load(PA("v1-off", "  selector: {matchLabels: {version: v1}}\n"
                                    "  mtls: {mode: DISABLE}\n"));
    expect_tags(s, WEB(80, ""), "");
    wf_store_free(s);
    s = load(PA("port-off", "  selector: {matchLabels: {app: web}}\n"
                            "  portLevelMtls: {80: {mode: DISABLE}}\n"));
    expect_tags(s, WEB(80, ""), "");
    expect_tags(s, WEB(8080, ""), "10.0.0.1=istio");
    wf_store_free(s);
    s = load(PA("v1-off", "  selector: {matchLabels: {version: v1}}\n"
                          "  mtls: {mode: DISABLE}\n") DR_HEAD
             "  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n");
    expect_tags(s, WEB(80, ""), "10.0.0.1=istio 10.0.0.4=custom"); /* every label */
    wf_store_free(s);
}

/* A cluster's transport_socket_matches name index i, or NULL. */
static const char *match_name(json_t *clusters, const char *cluster, size_t i)
{
    size_t k;
    json_t *c;
    json_array_foreach(clusters, k, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "name")), cluster) == 0)
            return json_string_value(json_object_get(
                json_array_get(json_object_get(c, "transport_socket_matches"), i), "name"));
    }
    fail_msg("no cluster %s", cluster);
    return NULL;
}

/* BestEffortInferServiceMTLSMode: a namespace (or mesh) DISABLE turns auto mTLS off for the
 * service's clusters; a workload DISABLE does not (its endpoints are untagged instead). */
static void namespace_disable_turns_auto_mtls_off(void **state)
{
    (void)state;
    wf_cds_options o = {.proxy_ns = "shop"};
    wf_store *s = load(PA("v1-off", "  selector: {matchLabels: {version: v1}}\n"
                                    "  mtls: {mode: DISABLE}\n"));
    json_t *out = wf_cds_sidecar_clusters(s, &o);
    assert_string_equal(match_name(out, WEB(80, ""), 0), "tlsMode-istio");
    json_decref(out);
    wf_store_free(s);
    s = load(PA("default", "  mtls: {mode: DISABLE}\n"));
    out = wf_cds_sidecar_clusters(s, &o);
    assert_null(match_name(out, WEB(80, ""), 0));
    json_decref(out);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(peer_authentication_disable_untags),
        cmocka_unit_test(namespace_disable_turns_auto_mtls_off),
        cmocka_unit_test(label_only_without_rule_mode),
        cmocka_unit_test(rule_mode_decides),
        cmocka_unit_test(memo_keyed_by_rule),
        cmocka_unit_test(dns_inline_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
