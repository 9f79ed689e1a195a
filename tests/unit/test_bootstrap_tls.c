/*
 * test_bootstrap_tls.c - transport_socket in the bootstrap (bootstrap_tls.c): a
 * DownstreamTlsContext on a filter chain and an UpstreamTlsContext on a cluster with
 * DataSources as inline_string, inline_bytes and filename; raw_buffer; the private key
 * redacted in the kept configuration; and every unimplemented field refused by its JSON path.
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

#include "core/base64.h"
#include "harness.h"
#include "proxy/bootstrap/xds_compose.h"
#include "proxy/config/config.h"
#include "proxy/sds/sds_ctx.h"
#include "proxy/sds/secrets.h"
#include "tls/tls.h"
#include "tls_testcerts.h"

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define DTC "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
#define UTC "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
#define TSP "static_resources.listeners[0].filter_chains[0].transport_socket"
#define CTP "static_resources.clusters[0].transport_socket"

static tc_cert CA, SRV;

static int setup(void **state)
{
    (void)state;
    CA = tc_make("root", NULL, NULL, -1, 365);
    SRV = tc_make("server", &CA, "URI:spiffe://cluster.local/ns/a/sa/s", -1, 30);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tc_free(&CA);
    tc_free(&SRV);
    return 0;
}

static json_t *inline_str(const char *s)
{
    return json_pack("{s:s}", "inline_string", s);
}

/* A DownstreamTlsContext with the server's certificate, the CA, a SAN matcher, ALPN. */
static json_t *downstream_ctx(void)
{
    return json_pack(
        "{s:s, s:b, s:{s:{s:s, s:s, s:[s]}, s:[{s:o, s:o}], s:{s:o, s:[{s:s, s:{s:s}}]}, "
        "s:[s,s]}}",
        "@type", DTC, "require_client_certificate", 1, "common_tls_context", "tls_params",
        "tls_minimum_protocol_version", "TLSv1_2", "tls_maximum_protocol_version", "TLSv1_3",
        "cipher_suites", "ECDHE-ECDSA-AES128-GCM-SHA256", "tls_certificates", "certificate_chain",
        inline_str(SRV.cert_pem), "private_key", inline_str(SRV.key_pem), "validation_context",
        "trusted_ca", inline_str(CA.cert_pem), "match_typed_subject_alt_names", "san_type", "URI",
        "matcher", "prefix", "spiffe://cluster.local/", "alpn_protocols", "h2", "http/1.1");
}

/* A bootstrap with one listener whose chain has transport socket lts (NULL none) and one
 * cluster with cts (NULL none). Takes the references. */
static char *boot(json_t *lts, json_t *cts)
{
    json_t *chain = json_pack(
        "{s:[{s:s, s:{s:s, s:s, s:[{s:s}], s:{s:[{s:s, s:[s], s:[{s:{s:s}, s:{s:s}}]}]}}}]}",
        "filters", "name", "envoy.filters.network.http_connection_manager", "typed_config", "@type",
        HCM_T, "stat_prefix", "in", "http_filters", "name", "envoy.filters.http.router",
        "route_config", "virtual_hosts", "name", "a", "domains", "*", "routes", "match", "prefix",
        "/", "route", "cluster", "c");
    if (lts)
        json_object_set_new(chain, "transport_socket", lts);
    json_t *cluster =
        json_pack("{s:s, s:{s:[{s:[{s:{s:{s:{s:s, s:i}}}}]}]}}", "name", "c", "load_assignment",
                  "endpoints", "lb_endpoints", "endpoint", "address", "socket_address", "address",
                  "127.0.0.1", "port_value", 9000);
    if (cts)
        json_object_set_new(cluster, "transport_socket", cts);
    json_t *root = json_pack("{s:{s:[{s:{s:{s:s, s:i}}, s:[o]}], s:[o]}}", "static_resources",
                             "listeners", "address", "socket_address", "address", "127.0.0.1",
                             "port_value", 8443, "filter_chains", chain, "clusters", cluster);
    assert_non_null(root);
    char *text = json_dumps(root, 0);
    json_decref(root);
    return text;
}

static json_t *tls_socket(json_t *typed)
{
    return json_pack("{s:s, s:o}", "name", "envoy.transport_sockets.tls", "typed_config", typed);
}

static void expect_error(json_t *lts, json_t *cts, const char *want)
{
    char *t = boot(lts, cts);
    wf_test_expect_bootstrap_error(t, want);
    free(t);
}

static void test_downstream_and_upstream(void **state)
{
    (void)state;
    /* the cluster's CA as inline_bytes, its client certificate from files */
    char dir[] = "/tmp/weft-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cert_path[256], key_path[256];
    snprintf(cert_path, sizeof(cert_path), "%s/cert.pem", dir);
    snprintf(key_path, sizeof(key_path), "%s/key.pem", dir);
    FILE *f = fopen(cert_path, "w");
    fputs(SRV.cert_pem, f);
    fclose(f);
    f = fopen(key_path, "w");
    fputs(SRV.key_pem, f);
    fclose(f);
    size_t cal = strlen(CA.cert_pem);
    char *b64 = malloc(4 * (cal / 3 + 1) + 1);
    wf_base64_encode((const unsigned char *)CA.cert_pem, cal, b64, 4 * (cal / 3 + 1) + 1);
    json_t *utc = json_pack(
        "{s:s, s:s, s:{s:[{s:{s:s}, s:{s:s}}], s:{s:{s:s}, s:[{s:s}]}, s:[s]}}", "@type", UTC,
        "sni", "outbound_.80_._.s.a.svc.cluster.local", "common_tls_context", "tls_certificates",
        "certificate_chain", "filename", cert_path, "private_key", "filename", key_path,
        "validation_context", "trusted_ca", "inline_bytes", b64, "match_subject_alt_names", "exact",
        "spiffe://cluster.local/ns/a/sa/s", "alpn_protocols", "istio");
    free(b64);
    char *text = boot(tls_socket(downstream_ctx()), tls_socket(utc));
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_filter_chain *fc = &c->listeners[0].chains[0];
    assert_non_null(fc->tls);
    assert_non_null(fc->tls->ctx);
    assert_true(fc->tls->require_client_certificate);
    assert_true(wf_tls_ctx_is_server(fc->tls->ctx));
    assert_string_equal(wf_tls_ctx_local_uri_sans(fc->tls->ctx),
                        "spiffe://cluster.local/ns/a/sa/s");
    assert_true(c->listeners[0].has_tls);
    const wp_cluster *cl = &c->clusters[0];
    assert_non_null(cl->tls);
    assert_false(wf_tls_ctx_is_server(cl->tls->ctx));
    assert_string_equal(cl->tls->sni, "outbound_.80_._.s.a.svc.cluster.local");
    assert_int_equal(c->ntls_ctxs, 2);
    /* the private key is not kept for /config_dump; the filename is */
    char *kept = json_dumps(c->bootstrap, 0);
    assert_null(strstr(kept, "PRIVATE KEY"));
    assert_non_null(strstr(kept, "\"private_key\": {\"inline_string\": \"[redacted]\"}"));
    assert_non_null(strstr(kept, key_path));
    free(kept);
    wp_config_unref(c);
    wf_strbuf_free(&err);
    free(text);
    unlink(cert_path);
    unlink(key_path);
    rmdir(dir);
}

static void test_raw_buffer(void **state)
{
    (void)state;
    json_t *raw = json_pack("{s:s, s:{s:s}}", "name", "envoy.transport_sockets.raw_buffer",
                            "typed_config", "@type",
                            "type.googleapis.com/"
                            "envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer");
    char *text = boot(raw, json_deep_copy(raw));
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    assert_non_null(c);
    assert_null(c->listeners[0].chains[0].tls);
    assert_false(c->listeners[0].has_tls);
    assert_null(c->clusters[0].tls);
    wp_config_unref(c);
    wf_strbuf_free(&err);
    free(text);
}

/* Each unimplemented field is refused at its path. */
static void test_not_supported(void **state)
{
    (void)state;
    json_t *d = downstream_ctx();
    json_object_set_new(json_object_get(d, "common_tls_context"),
                        "tls_certificate_sds_secret_configs",
                        json_pack("[{s:s, s:{s:{}}}]", "name", "sds://foo", "sds_config", "ads"));
    json_object_del(json_object_get(d, "common_tls_context"), "tls_certificates");
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.common_tls_context."
                 "tls_certificate_sds_secret_configs[0].name: SDS secret \"sds://foo\" is "
                 "not supported by weft-proxy here (\"default\" is, from the agent's certificate "
                 "provider, and kubernetes://... over ads)");
    /* a credentialName secret over ads is accepted, not over the agent's sds-grpc */
    d = downstream_ctx();
    json_object_set_new(json_object_get(d, "common_tls_context"),
                        "tls_certificate_sds_secret_configs",
                        json_pack("[{s:s, s:{s:{}, s:s}}]", "name", "kubernetes://foo",
                                  "sds_config", "ads", "resource_api_version", "V3"));
    json_object_del(json_object_get(d, "common_tls_context"), "tls_certificates");
    {
        wf_strbuf e2 = WF_STRBUF_INIT;
        char *t2 = boot(tls_socket(d), NULL);
        wp_config *ok = wf_test_load_bootstrap(t2, &e2);
        if (!ok)
            fail_msg("%s", wf_strbuf_cstr(&e2));
        assert_int_equal(ok->nsds_ctxs, 1);
        wp_config_unref(ok);
        wf_strbuf_free(&e2);
        free(t2);
    }
    d = downstream_ctx();
    json_object_set_new(json_object_get(d, "common_tls_context"), "combined_validation_context",
                        json_object());
    json_object_del(json_object_get(d, "common_tls_context"), "validation_context");
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.common_tls_context.combined_validation_context."
                 "validation_context_sds_secret_config: missing required field");
    d = downstream_ctx();
    json_object_set_new(d, "session_ticket_keys", json_object());
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.session_ticket_keys: not supported by weft-proxy");
    d = downstream_ctx();
    json_t *cert = json_array_get(
        json_object_get(json_object_get(d, "common_tls_context"), "tls_certificates"), 0);
    json_object_del(json_object_get(cert, "private_key"), "inline_string");
    json_object_set_new(json_object_get(cert, "private_key"), "environment_variable",
                        json_string("KEY"));
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.common_tls_context.tls_certificates[0]."
                 "private_key.environment_variable: not supported by weft-proxy");
    /* an UpstreamTlsContext on a listener, an unknown socket, SDS config on a cluster */
    json_t *u = json_pack("{s:s}", "@type", UTC);
    expect_error(tls_socket(u), NULL,
                 "t.json: " TSP ".typed_config.@type: unsupported value \"" UTC
                 "\" (expected \"" DTC "\")");
    expect_error(json_pack("{s:s}", "name", "envoy.transport_sockets.alts"), NULL,
                 "t.json: " TSP ".name: transport socket \"envoy.transport_sockets.alts\" is not "
                 "supported by weft-proxy (envoy.transport_sockets.raw_buffer and "
                 "envoy.transport_sockets.tls are)");
    u = json_pack("{s:s, s:{s:{s:s, s:{s:{}}}}}", "@type", UTC, "common_tls_context",
                  "validation_context_sds_secret_config", "name", "file-root:/etc/ca.pem",
                  "sds_config", "ads");
    expect_error(NULL, tls_socket(u),
                 "t.json: " CTP ".typed_config.common_tls_context."
                 "validation_context_sds_secret_config.name: SDS secret \"file-root:/etc/ca.pem\" "
                 "is not supported by weft-proxy here (\"ROOTCA\" is, from the agent's "
                 "certificate provider, and kubernetes://... over ads)");
    u = json_pack("{s:s, s:{s:{s:s, s:{s:{s:s}}}}}", "@type", UTC, "common_tls_context",
                  "validation_context_sds_secret_config", "name", "ROOTCA", "sds_config",
                  "api_config_source", "api_type", "REST");
    expect_error(NULL, tls_socket(u),
                 "t.json: " CTP ".typed_config.common_tls_context."
                 "validation_context_sds_secret_config.sds_config.api_config_source.api_type: "
                 "REST is not supported by weft-proxy for SDS (GRPC is)");
    /* a SAN matcher kind weft does not have */
    u = json_pack("{s:s, s:{s:{s:o, s:[{s:s}]}}}", "@type", UTC, "common_tls_context",
                  "validation_context", "trusted_ca", inline_str(CA.cert_pem),
                  "match_subject_alt_names", "suffix", ".local");
    expect_error(NULL, tls_socket(u),
                 "t.json: " CTP ".typed_config.common_tls_context.validation_context."
                 "match_subject_alt_names[0].suffix: not supported by weft-proxy");
}

/* Istio's sds_config (pilot/pkg/model/authentication.go): the agent's sds-grpc cluster. */
static json_t *istio_sds(const char *name)
{
    return json_pack("{s:s, s:{s:{s:s, s:[{s:{s:s}}], s:b, s:s}, s:s, s:s}}", "name", name,
                     "sds_config", "api_config_source", "api_type", "GRPC", "grpc_services",
                     "envoy_grpc", "cluster_name", "sds-grpc", "set_node_on_first_message_only", 1,
                     "transport_api_version", "V3", "initial_fetch_timeout", "0s",
                     "resource_api_version", "V3");
}

/* combined_validation_context as Istio writes it, with a SAN matcher of kind kind. */
static json_t *istio_combined(const char *kind, const char *san)
{
    return json_pack("{s:{s:[{s:s}]}, s:o}", "default_validation_context",
                     "match_subject_alt_names", kind, san, "validation_context_sds_secret_config",
                     istio_sds("ROOTCA"));
}

static void test_sds_istio_shapes(void **state)
{
    (void)state;
    /* inbound: require_client_certificate, SDS default, prefix spiffe://cluster.local/ */
    json_t *dtc = json_pack("{s:s, s:b, s:{s:[s,s], s:[o], s:o}}", "@type", DTC,
                            "require_client_certificate", 1, "common_tls_context", "alpn_protocols",
                            "h2", "http/1.1", "tls_certificate_sds_secret_configs",
                            istio_sds("default"), "combined_validation_context",
                            istio_combined("prefix", "spiffe://cluster.local/"));
    /* outbound: SNI, exact SAN of the destination's service account */
    json_t *utc = json_pack(
        "{s:s, s:s, s:{s:[s,s], s:[o], s:o}}", "@type", UTC, "sni",
        "outbound_.80_._.s.a.svc.cluster.local", "common_tls_context", "alpn_protocols",
        "istio-peer-exchange", "istio", "tls_certificate_sds_secret_configs", istio_sds("default"),
        "combined_validation_context", istio_combined("exact", "spiffe://cluster.local/ns/a/sa/s"));
    char *text = boot(tls_socket(dtc), tls_socket(utc));
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    assert_non_null(c);
    assert_int_equal(c->nsds_ctxs, 2);
    const wp_tls_config *lt = c->listeners[0].chains[0].tls, *ct = c->clusters[0].tls;
    assert_non_null(lt->sds);
    assert_null(lt->ctx);
    assert_true(lt->require_client_certificate);
    assert_non_null(ct->sds);
    assert_string_equal(ct->sni, "outbound_.80_._.s.a.svc.cluster.local");
    /* no store, then an empty store: not ready */
    assert_null(wp_tls_config_acquire(lt));
    wp_secrets *store = wp_secrets_new();
    for (size_t i = 0; i < c->nsds_ctxs; i++)
        wp_sds_ctx_attach(c->sds_ctxs[i], store);
    assert_null(wp_tls_config_acquire(lt));
    assert_null(wp_tls_config_acquire(ct));
    /* the secrets arrive: both contexts build */
    assert_int_equal(wp_secrets_set(store, SRV.cert_pem, SRV.key_pem, CA.cert_pem, 1e9), 0);
    wf_tls_ctx *s1 = wp_tls_config_acquire(lt), *c1 = wp_tls_config_acquire(ct);
    assert_non_null(s1);
    assert_non_null(c1);
    assert_true(wf_tls_ctx_is_server(s1));
    assert_false(wf_tls_ctx_is_server(c1));
    wf_tls_ctx *again = wp_tls_config_acquire(lt);
    assert_ptr_equal(again, s1); /* unchanged store: the same context */
    wf_tls_ctx_free(again);
    /* rotation: a new context for new connections; the old one lives on in its holders */
    assert_int_equal(wp_secrets_set(store, SRV.cert_pem, SRV.key_pem, CA.cert_pem, 2e9), 0);
    wf_tls_ctx *s2 = wp_tls_config_acquire(lt);
    assert_non_null(s2);
    assert_ptr_not_equal(s2, s1);
    wf_tls_conn *old = wf_tls_conn_new(s1, NULL);
    assert_non_null(old);
    wf_tls_ctx_free(s1); /* the connection still holds it */
    assert_true(wf_tls_ctx_is_server(s1));
    wf_tls_conn_free(old);
    wf_tls_ctx_free(s2);
    wf_tls_ctx_free(c1);
    wp_config_unref(c);
    wp_secrets_free(store);
    wf_strbuf_free(&err);
}

/* The engine's errors fail the load at the context's path. */
static void test_bad_material(void **state)
{
    (void)state;
    json_t *d = downstream_ctx();
    json_t *cert = json_array_get(
        json_object_get(json_object_get(d, "common_tls_context"), "tls_certificates"), 0);
    json_object_set_new(cert, "private_key", inline_str(CA.key_pem));
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.common_tls_context: private_key does not match "
                 "the certificate");
    d = downstream_ctx();
    json_object_set_new(json_object_get(json_object_get(d, "common_tls_context"), "tls_params"),
                        "tls_minimum_protocol_version", json_string("TLSv9"));
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.common_tls_context.tls_params."
                 "tls_minimum_protocol_version: unknown enum value \"TLSv9\"");
    /* min above max fails the load, SDS context or not (it was found only when an SDS secret
     * built the context, so an LDS update carrying it was accepted and its chain failed) */
    d = downstream_ctx();
    json_t *tp = json_object_get(json_object_get(d, "common_tls_context"), "tls_params");
    json_object_set_new(tp, "tls_minimum_protocol_version", json_string("TLSv1_3"));
    json_object_set_new(tp, "tls_maximum_protocol_version", json_string("TLSv1_2"));
    expect_error(tls_socket(d), NULL,
                 "t.json: " TSP ".typed_config.common_tls_context.tls_params."
                 "tls_minimum_protocol_version: tls_minimum_protocol_version is above "
                 "tls_maximum_protocol_version");
    json_t *u = json_pack("{s:s, s:{s:[{s:{s:s}, s:o}]}}", "@type", UTC, "common_tls_context",
                          "tls_certificates", "certificate_chain", "filename",
                          "/nonexistent/weft/cert.pem", "private_key", inline_str(SRV.key_pem));
    expect_error(NULL, tls_socket(u),
                 "t.json: " CTP ".typed_config.common_tls_context.tls_certificates[0]."
                 "certificate_chain: unable to read file: /nonexistent/weft/cert.pem");
    expect_error(NULL, json_pack("{s:[]}", "x"), "t.json: " CTP ".x: unknown field");
}

/* xDS resources are dumped with their private keys redacted, the received ones untouched. */
static void test_redacted_for_the_dump(void **state)
{
    (void)state;
    json_t *res = json_pack(
        "{s:s, s:{s:s, s:{s:{s:[{s:{s:s}, s:{s:s}}]}}}}", "name", "c", "transport_socket", "name",
        "envoy.transport_sockets.tls", "typed_config", "common_tls_context", "tls_certificates",
        "certificate_chain", "inline_string", "CERT", "private_key", "inline_bytes", "S0VZ");
    json_t *d = wp_tls_redacted(res);
    assert_ptr_not_equal(d, res);
    char *ds = json_dumps(d, JSON_SORT_KEYS), *rs = json_dumps(res, JSON_SORT_KEYS);
    assert_non_null(strstr(ds, "\"private_key\": {\"inline_bytes\": \"W3JlZGFjdGVkXQ==\"}"));
    assert_non_null(strstr(ds, "\"inline_string\": \"CERT\""));
    assert_non_null(strstr(rs, "\"inline_bytes\": \"S0VZ\""));
    free(ds);
    free(rs);
    json_decref(d);
    json_t *plain = json_pack("{s:s}", "name", "c");
    json_t *same = wp_tls_redacted(plain);
    assert_ptr_equal(same, plain);
    json_decref(same);
    json_decref(plain);
    json_decref(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_downstream_and_upstream), cmocka_unit_test(test_raw_buffer),
        cmocka_unit_test(test_not_supported),           cmocka_unit_test(test_bad_material),
        cmocka_unit_test(test_redacted_for_the_dump),   cmocka_unit_test(test_sds_istio_shapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
