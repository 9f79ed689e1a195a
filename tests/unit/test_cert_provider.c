/*
 * test_cert_provider.c - weft-proxy's workload certificate provider (proxy/sds/): Istio's
 * rotation delay, the key and CSR it builds, the CreateCertificate messages, and the provider
 * end to end against weft-pilot's CA service (pilot/ca_server.h) over loopback gRPC, with its
 * back-off after a refused token.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "pilot/ca_server.h"
#include "proxy/sds/cert_provider.h"
#include "proxy/sds/secrets.h"
#include "proxy/sds/workload_cert.h"
#include "xds/protowire.h"

static const wf_ca_token_key KEY = {{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6,
                                     7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2}};

#define H (3600 * 1000LL)

static void test_rotate_delay(void **state)
{
    (void)state;
    /* a 24 h certificate received now is replaced after 12 h (ratio 0.5) */
    assert_int_equal(wp_wc_rotate_delay_ms(0, 24 * H, 0, 0.5, 0), 12 * H);
    /* jitter moves the grace period by life * jitter: +0.01 -> 14.4 min earlier */
    assert_int_equal(wp_wc_rotate_delay_ms(0, 24 * H, 0, 0.5, 0.01), 12 * H - 864000);
    assert_int_equal(wp_wc_rotate_delay_ms(0, 24 * H, 0, 0.5, -0.01), 12 * H + 864000);
    /* later: what remains of the delay */
    assert_int_equal(wp_wc_rotate_delay_ms(0, 24 * H, 5 * H, 0.5, 0), 7 * H);
    /* past the rotation point: at once */
    assert_int_equal(wp_wc_rotate_delay_ms(0, 24 * H, 13 * H, 0.5, 0), 0);
    assert_int_equal(wp_wc_rotate_delay_ms(0, 24 * H, 30 * H, 0.5, 0), 0);
    /* a 4 s certificate: 2 s */
    assert_int_equal(wp_wc_rotate_delay_ms(1000, 5000, 1000, 0.5, 0), 2000);
}

static X509_REQ *parse_csr(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509_REQ *r = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
    BIO_free(b);
    return r;
}

static void check_csr(bool ecdsa, const char *id)
{
    char *key = NULL, *csr = NULL, err[256];
    assert_int_equal(wp_wc_make_csr(ecdsa, id, &key, &csr, err, sizeof err), 0);
    assert_non_null(strstr(key, "-----BEGIN PRIVATE KEY-----"));
    assert_non_null(strstr(csr, "-----BEGIN CERTIFICATE REQUEST-----"));
    X509_REQ *r = parse_csr(csr);
    assert_non_null(r);
    EVP_PKEY *pub = X509_REQ_get0_pubkey(r);
    assert_int_equal(X509_REQ_verify(r, pub), 1); /* self-signed by the key */
    assert_int_equal(EVP_PKEY_get_base_id(pub), ecdsa ? EVP_PKEY_EC : EVP_PKEY_RSA);
    assert_int_equal(EVP_PKEY_get_bits(pub), ecdsa ? 256 : 2048);
    /* the key is the CSR's */
    BIO *kb = BIO_new_mem_buf(key, -1);
    EVP_PKEY *priv = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
    assert_non_null(priv);
    assert_int_equal(EVP_PKEY_eq(priv, pub), 1);
    /* empty subject; the SPIFFE ID as a critical URI SAN */
    assert_int_equal(X509_NAME_entry_count(X509_REQ_get_subject_name(r)), 0);
    STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(r);
    if (id) {
        assert_int_equal(sk_X509_EXTENSION_num(exts), 1);
        X509_EXTENSION *e = sk_X509_EXTENSION_value(exts, 0);
        assert_int_equal(OBJ_obj2nid(X509_EXTENSION_get_object(e)), NID_subject_alt_name);
        assert_int_equal(X509_EXTENSION_get_critical(e), 1);
        GENERAL_NAMES *g = X509V3_EXT_d2i(e);
        assert_int_equal(sk_GENERAL_NAME_num(g), 1);
        GENERAL_NAME *n = sk_GENERAL_NAME_value(g, 0);
        assert_int_equal(n->type, GEN_URI);
        assert_string_equal((const char *)ASN1_STRING_get0_data(n->d.uniformResourceIdentifier),
                            id);
        GENERAL_NAMES_free(g);
    } else {
        assert_int_equal(sk_X509_EXTENSION_num(exts), 0);
    }
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    EVP_PKEY_free(priv);
    BIO_free(kb);
    X509_REQ_free(r);
    wp_wc_free_secret(key);
    free(csr);
}

static void test_csr(void **state)
{
    (void)state;
    check_csr(false, "spiffe://cluster.local/ns/default/sa/bookinfo-productpage");
    check_csr(true, "spiffe://cluster.local/ns/shop/sa/cart");
    check_csr(true, NULL);
}

static void test_messages(void **state)
{
    (void)state;
    wf_strbuf b = {0};
    wp_wc_encode_request("CSR", 86400, &b);
    wf_pb_reader r;
    wf_pb_field f;
    wf_pb_reader_init(&r, (const uint8_t *)b.data, b.len);
    assert_int_equal(wf_pb_next(&r, &f), 1);
    assert_int_equal(f.num, 1);
    assert_int_equal(f.len, 3);
    assert_memory_equal(f.p, "CSR", 3);
    assert_int_equal(wf_pb_next(&r, &f), 1);
    assert_int_equal(f.num, 2);
    assert_int_equal(f.u, 86400);
    assert_int_equal(wf_pb_next(&r, &f), 0);
    wf_strbuf_free(&b);
    /* response: leaf, intermediate, root; the chain keeps all, ROOTCA is the last */
    wf_strbuf resp = {0};
    wf_pb_put_bytes(&resp, 1, "LEAF\n", 5);
    wf_pb_put_bytes(&resp, 1, "INTER", 5);
    wf_pb_put_bytes(&resp, 1, "ROOT\n", 5);
    char *chain, *root, err[128];
    assert_int_equal(
        wp_wc_decode_response((const uint8_t *)resp.data, resp.len, &chain, &root, err, sizeof err),
        0);
    assert_string_equal(chain, "LEAF\nINTER\nROOT\n");
    assert_string_equal(root, "ROOT\n");
    free(chain);
    free(root);
    assert_int_equal(wp_wc_decode_response((const uint8_t *)"", 0, &chain, &root, err, sizeof err),
                     -1);
    assert_string_equal(err, "IstioCertificateResponse has no cert_chain");
    assert_int_equal(
        wp_wc_decode_response((const uint8_t *)"\x0a\x09x", 3, &chain, &root, err, sizeof err), -1);
    assert_string_equal(err, "malformed IstioCertificateResponse");
    wf_strbuf_free(&resp);
}

/* ---- the provider against pilot's CA service -------------------------------------------- */

typedef struct rig {
    uv_loop_t loop;
    wf_ca_server *ca;
    wf_h2_server *srv;
    wp_secrets *store;
    wp_cert_provider *p;
    uv_timer_t poll, deadline;
    uint64_t want_gen;
    unsigned updates; /* on_update calls */
} rig;

static void on_update(void *ud)
{
    ((rig *)ud)->updates++;
}

static void on_poll(uv_timer_t *t)
{
    rig *r = t->data;
    if (wp_secrets_generation(r->store) >= r->want_gen)
        uv_stop(&r->loop);
}

static void on_deadline(uv_timer_t *t)
{
    uv_stop(&((rig *)t->data)->loop);
}

/* Runs the loop until the store reaches generation gen or ms pass. */
static void run_until(rig *r, uint64_t gen, uint64_t ms)
{
    r->want_gen = gen;
    uv_timer_start(&r->poll, on_poll, 10, 10);
    uv_timer_start(&r->deadline, on_deadline, ms, 0);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    uv_timer_stop(&r->poll);
    uv_timer_stop(&r->deadline);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_provider_end_to_end(void **state)
{
    (void)state;
    rig r = {0};
    char err[256], tokpath[] = "/tmp/weft-test-token-XXXXXX";
    int64_t now = (int64_t)time(NULL);
    assert_int_equal(uv_loop_init(&r.loop), 0);
    r.ca = wf_ca_server_new(&KEY, NULL);
    wf_ca *ca = NULL;
    assert_int_equal(
        wf_ca_new_self_signed("cluster.local", now - 60, now + 86400 * 30, &ca, err, sizeof err),
        WF_CA_OK);
    wf_ca_server_set_ca(r.ca, ca);
    wf_h2_opts so = {.path = WF_CA_CSR_PATH};
    wf_h2_handlers sh = wf_ca_server_handlers(r.ca);
    assert_int_equal(wf_h2_server_start(&r.loop, "127.0.0.1", 0, &so, &sh, &r.srv), 0);
    int fd = mkstemp(tokpath);
    assert_true(fd >= 0);
    close(fd);
    write_file(tokpath, "not-a-token\n");
    r.store = wp_secrets_new();
    uv_timer_init(&r.loop, &r.poll);
    uv_timer_init(&r.loop, &r.deadline);
    r.poll.data = r.deadline.data = &r;
    wp_cert_provider_opts o = {.ca_port = wf_h2_server_port(r.srv),
                               .token_path = tokpath,
                               .ecdsa = true,
                               .ttl_s = 4,
                               .grace_ratio = 0.5,
                               .grace_jitter = 0.01,
                               .on_update = on_update,
                               .ud = &r};
    snprintf(o.ca_host, sizeof o.ca_host, "127.0.0.1");
    r.p = wp_cert_provider_start(&r.loop, &o, r.store);
    assert_non_null(r.p);
    /* a refused token: nothing stored; the provider backs off (1 s) and tries again */
    for (int i = 0; i < 100 && wf_ca_server_metrics(r.ca)->authn_fail == 0; i++)
        run_until(&r, 1, 50); /* the refusal, however slow the machine */
    assert_int_equal(wp_secrets_generation(r.store), 0);
    assert_int_equal(wf_ca_server_metrics(r.ca)->authn_fail, 1);
    char *tok = wf_ca_token_mint(&KEY, "shop", "cart", now, 600, err, sizeof err);
    write_file(tokpath, tok);
    run_until(&r, 1, 5000);
    assert_int_equal(wp_secrets_generation(r.store), 1);
    char *chain, *key, *root;
    uint64_t gen;
    assert_true(wp_secrets_get(r.store, &chain, &key, &root, &gen));
    assert_string_equal(root, wf_ca_root_pem(ca));
    int64_t nb, na;
    char serial1[80], serial2[80];
    assert_int_equal(wp_wc_cert_facts(chain, strlen(chain), &nb, &na, serial1, sizeof serial1), 0);
    assert_true(na - now <= 10 && na - now >= 3); /* SECRET_TTL 4 s asked for */
    assert_non_null(strstr(key, "PRIVATE KEY"));
    free(chain);
    wp_wc_free_secret(key);
    free(root);
    /* rotation: about half of the 4 s life later, a new certificate */
    uint64_t t0 = uv_now(&r.loop);
    run_until(&r, 2, 10000);
    assert_int_equal(wp_secrets_generation(r.store), 2);
    assert_int_equal(r.updates, 2);
    uint64_t took = uv_now(&r.loop) - t0; /* 2 s +- 0.04 s, and a slow machine's latency */
    assert_true(took >= 1000 && took <= 6000);
    assert_true(wp_secrets_get(r.store, &chain, &key, &root, &gen));
    assert_int_equal(wp_wc_cert_facts(chain, strlen(chain), &nb, &na, serial2, sizeof serial2), 0);
    assert_string_not_equal(serial1, serial2);
    free(chain);
    wp_wc_free_secret(key);
    free(root);
    wp_cert_provider_close(r.p);
    wf_h2_server_close(r.srv);
    uv_close((uv_handle_t *)&r.poll, NULL);
    uv_close((uv_handle_t *)&r.deadline, NULL);
    uv_run(&r.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&r.loop), 0);
    wp_secrets_free(r.store);
    wf_ca_server_free(r.ca);
    free(tok);
    unlink(tokpath);
}

static void test_secrets_dump(void **state)
{
    (void)state;
    wp_secrets *s = wp_secrets_new();
    json_t *d = wp_secrets_dump(s, false);
    assert_string_equal(json_string_value(json_object_get(d, "@type")),
                        "type.googleapis.com/envoy.admin.v3.SecretsConfigDump");
    assert_int_equal(json_object_size(d), 1); /* empty lists left out */
    json_decref(d);
    /* TLS contexts wait: both secrets warming */
    d = wp_secrets_dump(s, true);
    json_t *w = json_object_get(d, "dynamic_warming_secrets");
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(w, 1), "name")), "ROOTCA");
    assert_null(json_object_get(d, "dynamic_active_secrets"));
    json_decref(d);
    assert_int_equal(wp_secrets_first_expiry(s), 0);
    /* a real chain: active, key redacted, ROOTCA base64 */
    char *key = NULL, *csr = NULL, err[256];
    assert_int_equal(wp_wc_make_csr(true, NULL, &key, &csr, err, sizeof err), 0);
    int64_t now = (int64_t)time(NULL);
    wf_ca *ca = NULL;
    assert_int_equal(
        wf_ca_new_self_signed("cluster.local", now - 60, now + 86400 * 30, &ca, err, sizeof err),
        WF_CA_OK);
    const char *root = wf_ca_root_pem(ca);
    assert_int_equal(wp_secrets_set(s, root, key, root, 1700000000.25), 0);
    d = wp_secrets_dump(s, true);
    json_t *a = json_object_get(d, "dynamic_active_secrets");
    assert_int_equal(json_array_size(a), 2);
    assert_null(json_object_get(d, "dynamic_warming_secrets"));
    json_t *def = json_array_get(a, 0);
    assert_string_equal(json_string_value(json_object_get(def, "version_info")),
                        "2023-11-14T22:13:20Z/1");
    assert_string_equal(json_string_value(json_object_get(def, "last_updated")),
                        "2023-11-14T22:13:20.250Z");
    char *text = json_dumps(d, JSON_COMPACT);
    assert_null(strstr(text, "PRIVATE"));
    assert_non_null(strstr(text, "\"private_key\":{\"inline_bytes\":\"W3JlZGFjdGVkXQ==\"}"));
    free(text);
    json_decref(d);
    assert_int_equal(wp_secrets_first_expiry(s), now + 86400 * 30);
    json_t *e = wp_secrets_cert_entry(s, NULL, true, NULL, true, now);
    json_t *leaf = json_array_get(json_object_get(e, "cert_chain"), 0);
    assert_string_equal(json_string_value(json_object_get(leaf, "days_until_expiration")), "30");
    assert_string_equal(json_string_value(json_object_get(leaf, "path")), "<inline>");
    assert_int_equal(json_array_size(json_object_get(e, "ca_cert")), 1);
    json_decref(e);
    /* a gateway's context: its named certificate, its -cacert not held (an empty list) */
    assert_null(wp_secrets_cert_entry(s, "kubernetes://gw", true, "kubernetes://gw-cacert", true,
                                      now)); /* nothing held yet: not listed */
    assert_int_equal(wp_secrets_set_named(s, "kubernetes://gw", root, key, NULL, "v1", now), 0);
    e = wp_secrets_cert_entry(s, "kubernetes://gw", true, "kubernetes://gw-cacert", true, now);
    assert_int_equal(json_array_size(json_object_get(e, "cert_chain")), 1);
    assert_int_equal(json_array_size(json_object_get(e, "ca_cert")), 0);
    json_decref(e);
    wp_wc_free_secret(key);
    free(csr);
    wf_ca_free(ca);
    wp_secrets_free(s);
}

/* CA_ADDR may be a DNS name (resolved at start, kept as the name to verify); without CA_ADDR
 * the default address is verified as ISTIOD_SAN, else the caller's name, else its IP. */
static void test_ca_addr_names(void **state)
{
    (void)state;
    wp_cert_provider_opts o;
    char spiffe[256];
    wf_strbuf err = {0};
    unsetenv("ISTIOD_SAN");
    setenv("CA_ADDR", "localhost:15012", 1);
    assert_int_equal(
        wp_cert_provider_opts_from_env(&o, NULL, NULL, NULL, spiffe, sizeof spiffe, &err), 0);
    assert_true(!strcmp(o.ca_host, "127.0.0.1") || !strcmp(o.ca_host, "::1"));
    assert_string_equal(o.ca_name, "localhost");
    assert_int_equal(o.ca_port, 15012);
    assert_string_equal(o.ca_root_path, "./var/run/secrets/istio/root-cert.pem");
    setenv("CA_ADDR", "istiod.nosuch.invalid:15012", 1);
    assert_int_equal(
        wp_cert_provider_opts_from_env(&o, NULL, NULL, NULL, spiffe, sizeof spiffe, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "CA_ADDR: invalid address"));
    assert_non_null(strstr(wf_strbuf_cstr(&err), "cannot resolve"));
    wf_strbuf_reset(&err);
    unsetenv("CA_ADDR");
    assert_int_equal(wp_cert_provider_opts_from_env(&o, "10.1.2.3:15012", NULL, NULL, spiffe,
                                                    sizeof spiffe, &err),
                     0);
    assert_string_equal(o.ca_host, "10.1.2.3");
    assert_string_equal(o.ca_name, "10.1.2.3");
    assert_int_equal(wp_cert_provider_opts_from_env(&o, "10.1.2.3:15012", "istiod.istio-system.svc",
                                                    NULL, spiffe, sizeof spiffe, &err),
                     0);
    assert_string_equal(o.ca_name, "istiod.istio-system.svc");
    setenv("ISTIOD_SAN", "istiod.other.svc", 1);
    assert_int_equal(wp_cert_provider_opts_from_env(&o, "10.1.2.3:15012", "istiod.istio-system.svc",
                                                    NULL, spiffe, sizeof spiffe, &err),
                     0);
    assert_string_equal(o.ca_name, "istiod.other.svc");
    unsetenv("ISTIOD_SAN");
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rotate_delay), cmocka_unit_test(test_ca_addr_names),
        cmocka_unit_test(test_csr),          cmocka_unit_test(test_messages),
        cmocka_unit_test(test_secrets_dump), cmocka_unit_test(test_provider_end_to_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
