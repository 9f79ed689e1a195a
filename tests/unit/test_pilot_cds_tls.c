/*
 * test_pilot_cds_tls.c - the upstream TLS of pilot/cds (cds_tls.c): auto mTLS
 * transport_socket_matches compared with a real Istio dump
 * (../shared/corpus/istioctl-golden, describe/http_config.json), which clusters get none,
 * the destination service accounts, MeshConfig trustDomain / enableAutoMtls, and
 * DestinationRule trafficPolicy.tls (DISABLE, ISTIO_MUTUAL, SIMPLE, MUTUAL, credentialName) with
 * Istio's merge order; and that weft-proxy's loader accepts every socket pilot writes.
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
#include <jansson.h>

#include "harness.h"
#include "model/store.h"
#include "pilot/cds.h"
#include "proxy/config/config.h"
#include "tls_testcerts.h"

#define GOLDEN                                                                                     \
    "../shared/corpus/istioctl-golden/upstream/istioctl/pkg/describe/testdata/describe/"           \
    "http_config.json"
#define PP     "productpage.default.svc.cluster.local"
#define PP_V1  "outbound|9080|v1|" PP
#define SA_PP  "spiffe://cluster.local/ns/default/sa/bookinfo-productpage"
#define SA_DEF "spiffe://cluster.local/ns/default/sa/default"
#define UTC    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
#define CTX    "transport_socket.typed_config.common_tls_context"
#define M0     "transport_socket_matches.0.transport_socket.typed_config"

/* productpage as in the golden dump: two service accounts behind it (one pod without
 * serviceAccountName: Kubernetes' "default"), subset v1. */
static const char pp_yaml[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: productpage, namespace: default}\n"
    "spec: {selector: {app: productpage}, ports: [{name: http, port: 9080}]}\n---\n"
    "apiVersion: v1\nkind: Pod\nmetadata: {name: pp-1, namespace: default, labels: {app: "
    "productpage, version: v1, security.istio.io/tlsMode: istio}}\n"
    "spec: {serviceAccountName: bookinfo-productpage, containers: [{name: a, image: i}]}\n"
    "status: {podIP: 10.0.0.1, phase: Running}\n---\n"
    "apiVersion: v1\nkind: Pod\nmetadata: {name: pp-2, namespace: default, labels: {app: "
    "productpage, version: v2}}\nspec: {containers: [{name: a, image: i}]}\n"
    "status: {podIP: 10.0.0.2, phase: Running}\n---\n"
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: productpage, "
    "namespace: default}\nspec: {host: productpage, subsets: [{name: v1, labels: {version: "
    "v1}}]}\n";

static json_t *gen(const char *yaml, const wf_cds_options *opt, wf_store **s)
{
    *s = wf_test_load_store(NULL, yaml, "default");
    assert_non_null(*s);
    json_t *out = wf_cds_sidecar_clusters(*s, opt);
    assert_non_null(out);
    return out;
}

static json_t *must(json_t *arr, const char *name)
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

/* The first object under v with "name" == name and the key want. */
static json_t *find_named(json_t *v, const char *name, const char *want)
{
    if (json_is_object(v)) {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && !strcmp(n, name) && json_object_get(v, want))
            return v;
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e)
        {
            json_t *r = find_named(e, name, want);
            if (r)
                return r;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
        {
            json_t *r = find_named(e, name, want);
            if (r)
                return r;
        }
    }
    return NULL;
}

static void expect_no_tls(json_t *c)
{
    if (json_object_get(c, "transport_socket") || json_object_get(c, "transport_socket_matches"))
        fail_msg("%s: unexpected TLS", json_string_value(json_object_get(c, "name")));
}

/* ---- auto mTLS ---- */

static void auto_mtls_matches_istio_dump(void **state)
{
    (void)state;
    json_error_t e;
    json_t *golden = json_load_file(GOLDEN, 0, &e);
    if (!golden)
        fail_msg("%s: %s", GOLDEN, e.text);
    json_t *want = json_object_get(find_named(golden, PP_V1, "transport_socket_matches"),
                                   "transport_socket_matches");
    assert_non_null(want);
    wf_store *s;
    json_t *out = gen(pp_yaml, NULL, &s);
    json_t *got = json_object_get(must(out, PP_V1), "transport_socket_matches");
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_INDENT(1));
        fail_msg("transport_socket_matches differ from Istio's:\n%s", g);
    }
    json_t *def = must(out, "outbound|9080||" PP);
    assert_null(json_object_get(def, "transport_socket"));
    wf_test_expect_str(def, M0 ".sni", "outbound_.9080_._." PP);
    wf_test_expect_str(def, "transport_socket_matches.1.name", "tlsMode-disabled");
    expect_no_tls(must(out, "BlackHoleCluster"));
    expect_no_tls(must(out, "PassthroughCluster"));
    json_decref(out);
    json_decref(golden);
    wf_store_free(s);
}

static void auto_mtls_mesh_options(void **state)
{
    (void)state;
    wf_store *s;
    wf_cds_options o = {.trust_domain = "example.org"};
    json_t *out = gen(pp_yaml, &o, &s);
    json_t *c = must(out, "outbound|9080||" PP);
    const char *p = M0 ".common_tls_context.combined_validation_context.default_validation_context."
                       "match_subject_alt_names.%d.exact";
    char path[256];
    snprintf(path, sizeof path, p, 0);
    wf_test_expect_str(c, path, "spiffe://example.org/ns/default/sa/bookinfo-productpage");
    snprintf(path, sizeof path, p, 1);
    wf_test_expect_str(c, path, "spiffe://example.org/ns/default/sa/default");
    json_decref(out);
    wf_store_free(s);
    o = (wf_cds_options){.disable_auto_mtls = true};
    out = gen(pp_yaml, &o, &s);
    expect_no_tls(must(out, "outbound|9080||" PP));
    expect_no_tls(must(out, PP_V1));
    json_decref(out);
    wf_store_free(s);
}

/* ServiceEntries: MESH_EXTERNAL (the default) and resolution NONE (ORIGINAL_DST) get no
 * matches; a MESH_INTERNAL one does, its accounts from subjectAltNames and WorkloadEntries. */
static void auto_mtls_service_entries(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: ext}\n"
        "spec: {hosts: [api.example.com], resolution: DNS, ports: [{number: 80, name: http, "
        "protocol: HTTP}]}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: pt}\n"
        "spec: {hosts: [pt.example.com], location: MESH_INTERNAL, resolution: NONE, ports: "
        "[{number: 81, name: http, protocol: HTTP}]}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: vm}\n"
        "spec: {hosts: [vm.internal], location: MESH_INTERNAL, resolution: STATIC, "
        "subjectAltNames: ['spiffe://cluster.local/ns/x/sa/extra'], workloadSelector: "
        "{labels: {app: vm}}, ports: [{number: 82, name: http, protocol: HTTP}]}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: vm1}\n"
        "spec: {address: 10.1.0.1, serviceAccount: vm-sa, labels: {app: vm}}\n";
    wf_store *s;
    json_t *out = gen(yaml, NULL, &s);
    expect_no_tls(must(out, "outbound|80||api.example.com"));
    expect_no_tls(must(out, "outbound|81||pt.example.com"));
    json_t *c = must(out, "outbound|82||vm.internal");
    json_t *sans = wf_test_json_at(c, M0 ".common_tls_context.combined_validation_context."
                                         "default_validation_context.match_subject_alt_names");
    json_t *want = json_pack("[{s:s},{s:s}]", "exact", "spiffe://cluster.local/ns/default/sa/vm-sa",
                             "exact", "spiffe://cluster.local/ns/x/sa/extra");
    assert_true(json_equal(sans, want));
    json_decref(want);
    json_decref(out);
    wf_store_free(s);
}

/* ---- DestinationRule tls ---- */

static const char web_yaml[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
    "spec: {selector: {app: web}, ports: [{name: http, port: 80}, {name: http-alt, port: "
    "8080}]}\n---\n"
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop, labels: {app: web, "
    "version: v1}}\nspec: {serviceAccountName: web, containers: [{name: a, image: i}]}\n"
    "status: {podIP: 10.0.0.3, phase: Running}\n---\n";

#define WEB(port, subset) "outbound|" #port "|" subset "|web.shop.svc.cluster.local"

static json_t *web(const char *dr, wf_store **s)
{
    static char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "%sapiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
             "metadata: {name: web, namespace: shop}\nspec:\n  host: web\n%s",
             web_yaml, dr);
    *s = wf_test_load_store(NULL, yaml, "shop");
    wf_cds_options o = {.proxy_ns = "shop"};
    json_t *out = wf_cds_sidecar_clusters(*s, &o);
    assert_non_null(out);
    return out;
}

/* DISABLE beats auto mTLS; a port-level entry replaces tls as a whole (its absence = none,
 * auto mTLS again); a subset's tls overrides; ISTIO_MUTUAL is the transport_socket. */
static void dr_merge_order(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = web("  trafficPolicy:\n    tls: {mode: DISABLE}\n    portLevelSettings:\n"
                      "    - port: {number: 8080}\n      loadBalancer: {simple: RANDOM}\n"
                      "  subsets:\n  - name: v1\n    labels: {version: v1}\n"
                      "    trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n"
                      "  - name: v2\n    labels: {version: v2}\n",
                      &s);
    expect_no_tls(must(out, WEB(80, "")));
    expect_no_tls(must(out, WEB(80, "v2")));
    json_t *c = must(out, WEB(8080, ""));
    assert_null(json_object_get(c, "transport_socket"));
    wf_test_expect_str(c, "transport_socket_matches.0.name", "tlsMode-istio");
    json_t *v1 = must(out, WEB(80, "v1"));
    assert_null(json_object_get(v1, "transport_socket_matches"));
    wf_test_expect_str(v1, "transport_socket.name", "envoy.transport_sockets.tls");
    wf_test_expect_str(v1, "transport_socket.typed_config.@type", UTC);
    wf_test_expect_str(v1, "transport_socket.typed_config.sni",
                       "outbound_.80_.v1_.web.shop.svc.cluster.local");
    wf_test_expect_str(v1, CTX ".alpn_protocols.0", "istio-peer-exchange");
    wf_test_expect_str(v1, CTX ".tls_certificate_sds_secret_configs.0.name", "default");
    wf_test_expect_str(v1,
                       CTX ".combined_validation_context.default_validation_context."
                           "match_subject_alt_names.0.exact",
                       "spiffe://cluster.local/ns/shop/sa/web");
    wf_test_expect_str(
        v1, CTX ".combined_validation_context.validation_context_sds_secret_config.name", "ROOTCA");
    /* subset v1 on 8080: the top-level port entry has no tls, the subset's applies */
    wf_test_expect_str(must(out, WEB(8080, "v1")), "transport_socket.typed_config.sni",
                       "outbound_.8080_.v1_.web.shop.svc.cluster.local");
    json_decref(out);
    wf_store_free(s);
}

static void dr_istio_mutual_overrides(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = web("  trafficPolicy:\n    tls: {mode: ISTIO_MUTUAL, sni: web.example, "
                      "subjectAltNames: ['spiffe://td/ns/a/sa/b']}\n",
                      &s);
    json_t *c = must(out, WEB(80, ""));
    wf_test_expect_str(c, "transport_socket.typed_config.sni", "web.example");
    wf_test_expect_str(c,
                       CTX ".combined_validation_context.default_validation_context."
                           "match_subject_alt_names.0.exact",
                       "spiffe://td/ns/a/sa/b");
    json_decref(out);
    wf_store_free(s);
}

static void dr_simple(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = web("  trafficPolicy:\n    tls: {mode: SIMPLE, caCertificates: /etc/ca.pem, "
                      "sni: web.example, subjectAltNames: [web.example]}\n"
                      "    portLevelSettings:\n    - port: {number: 8080}\n"
                      "      tls: {mode: SIMPLE}\n"
                      "  subsets:\n  - name: v1\n    labels: {version: v1}\n"
                      "    trafficPolicy: {tls: {mode: SIMPLE, insecureSkipVerify: true}}\n",
                      &s);
    json_t *c = must(out, WEB(80, ""));
    assert_null(json_object_get(c, "transport_socket_matches"));
    wf_test_expect_str(c, "transport_socket.typed_config.sni", "web.example");
    wf_test_expect_str(c, CTX ".tls_params.tls_minimum_protocol_version", "TLSv1_2");
    wf_test_expect_str(c, CTX ".tls_params.tls_maximum_protocol_version", "TLSv1_3");
    wf_test_expect_str(c, CTX ".validation_context.trusted_ca.filename", "/etc/ca.pem");
    wf_test_expect_str(c, CTX ".validation_context.match_subject_alt_names.0.exact", "web.example");
    assert_null(wf_test_json_at(c, CTX ".alpn_protocols"));
    assert_null(wf_test_json_at(c, CTX ".tls_certificates"));
    /* no caCertificates: Istio's file-root:system, the OS bundle; no sni, no SAN matcher */
    json_t *p = must(out, WEB(8080, ""));
    wf_test_expect_str(p, CTX ".validation_context.trusted_ca.filename",
                       "/etc/ssl/certs/ca-certificates.crt");
    assert_null(wf_test_json_at(p, "transport_socket.typed_config.sni"));
    assert_null(wf_test_json_at(p, CTX ".validation_context.match_subject_alt_names"));
    /* insecureSkipVerify: an empty validation context */
    json_t *v = wf_test_json_at(must(out, WEB(80, "v1")), CTX ".validation_context");
    assert_true(json_is_object(v) && json_object_size(v) == 0);
    json_decref(out);
    wf_store_free(s);
}

static void dr_mutual_and_credential_name(void **state)
{
    (void)state;
    wf_store *s;
    json_t *out = web("  trafficPolicy:\n    tls: {mode: MUTUAL, clientCertificate: /c.pem, "
                      "privateKey: /k.pem, caCertificates: /ca.pem}\n"
                      "  subsets:\n  - name: v1\n    labels: {version: v1}\n"
                      "    trafficPolicy: {tls: {mode: SIMPLE, credentialName: web-cred}}\n",
                      &s);
    json_t *c = must(out, WEB(80, ""));
    wf_test_expect_str(c, CTX ".tls_certificates.0.certificate_chain.filename", "/c.pem");
    wf_test_expect_str(c, CTX ".tls_certificates.0.private_key.filename", "/k.pem");
    wf_test_expect_str(c, CTX ".validation_context.trusted_ca.filename", "/ca.pem");
    /* credentialName on a sidecar rule without workloadSelector: no TLS context, as Istio */
    expect_no_tls(must(out, WEB(80, "v1")));
    json_decref(out);
    wf_store_free(s);
}

/* A MESH_EXTERNAL ServiceEntry with SIMPLE and no subjectAltNames in the rule: the entry's. */
static void dr_simple_service_entry_sans(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: ext}\n"
        "spec: {hosts: [api.example.com], resolution: DNS, subjectAltNames: [api.example.com], "
        "ports: [{number: 443, name: tls, protocol: TLS}]}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: ext}\n"
        "spec: {host: api.example.com, trafficPolicy: {tls: {mode: SIMPLE}}}\n";
    wf_store *s;
    json_t *out = gen(yaml, NULL, &s);
    wf_test_expect_str(must(out, "outbound|443||api.example.com"),
                       CTX ".validation_context.match_subject_alt_names.0.exact",
                       "api.example.com");
    json_decref(out);
    wf_store_free(s);
}

/* ---- weft-proxy accepts what pilot writes ---- */

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *p = malloc(512);
    assert_non_null(p);
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

/* A bootstrap with one static cluster carrying transport socket ts (borrowed). */
static void expect_proxy_accepts(json_t *ts)
{
    json_t *root = json_pack("{s:{s:[{s:s,s:{s:[{s:[{s:{s:{s:{s:s,s:i}}}}]}]},s:O}]}}",
                             "static_resources", "clusters", "name", "c", "load_assignment",
                             "endpoints", "lb_endpoints", "endpoint", "address", "socket_address",
                             "address", "127.0.0.1", "port_value", 9000, "transport_socket", ts);
    assert_non_null(root);
    char *text = json_dumps(root, 0);
    json_decref(root);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("weft-proxy refuses %s: %s", text, wf_strbuf_cstr(&err));
    wp_config_unref(c);
    wf_strbuf_free(&err);
    free(text);
}

static void proxy_loads_pilot_sockets(void **state)
{
    (void)state;
    tc_cert ca = tc_make("root", NULL, NULL, -1, 365);
    tc_cert cl = tc_make("client", &ca, "URI:spiffe://cluster.local/ns/a/sa/c", -1, 30);
    char dir[] = "/tmp/weft-cds-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *cap = write_file(dir, "ca.pem", ca.cert_pem);
    char *cp = write_file(dir, "c.pem", cl.cert_pem);
    char *kp = write_file(dir, "k.pem", cl.key_pem);
    char dr[1024];
    snprintf(dr, sizeof dr,
             "  trafficPolicy:\n    tls: {mode: MUTUAL, clientCertificate: %s, privateKey: %s, "
             "caCertificates: %s, subjectAltNames: [a]}\n"
             "    portLevelSettings:\n    - port: {number: 8080}\n      tls: {mode: SIMPLE}\n"
             "  subsets:\n  - name: v1\n    labels: {version: v1}\n"
             "    trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n"
             "  - name: v2\n    labels: {version: v2}\n"
             "    trafficPolicy: {tls: {mode: SIMPLE, insecureSkipVerify: true}}\n",
             cp, kp, cap);
    wf_store *s;
    json_t *out = web(dr, &s);
    expect_proxy_accepts(json_object_get(must(out, WEB(80, "")), "transport_socket"));
    expect_proxy_accepts(json_object_get(must(out, WEB(8080, "")), "transport_socket"));
    expect_proxy_accepts(json_object_get(must(out, WEB(80, "v1")), "transport_socket"));
    expect_proxy_accepts(json_object_get(must(out, WEB(80, "v2")), "transport_socket"));
    json_decref(out);
    wf_store_free(s);
    /* the auto mTLS socket of the tlsMode-istio match (the matches themselves wait for
     * weft-proxy's transport_socket_matches) */
    out = gen(pp_yaml, NULL, &s);
    expect_proxy_accepts(
        wf_test_json_at(must(out, PP_V1), "transport_socket_matches.0.transport_socket"));
    expect_proxy_accepts(
        wf_test_json_at(must(out, PP_V1), "transport_socket_matches.1.transport_socket"));
    json_decref(out);
    wf_store_free(s);
    unlink(cap);
    unlink(cp);
    unlink(kp);
    rmdir(dir);
    free(cap);
    free(cp);
    free(kp);
    tc_free(&ca);
    tc_free(&cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_mtls_matches_istio_dump),
        cmocka_unit_test(auto_mtls_mesh_options),
        cmocka_unit_test(auto_mtls_service_entries),
        cmocka_unit_test(dr_merge_order),
        cmocka_unit_test(dr_istio_mutual_overrides),
        cmocka_unit_test(dr_simple),
        cmocka_unit_test(dr_mutual_and_credential_name),
        cmocka_unit_test(dr_simple_service_entry_sans),
        cmocka_unit_test(proxy_loads_pilot_sockets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
