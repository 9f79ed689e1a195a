/*
 * test_pilot_ca_server.c - the CSR service without a socket (src/pilot/ca_server.h): the
 * protobuf request and response (xds/protowire.h), Bearer-token authentication (ca_token.h:
 * minting, verification, tampering, another key, expiry, audience, alg), Istio's gRPC statuses
 * and messages, the identity's trust domain, and the citadel_server_* counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/base64.h"
#include "pilot/ca_server.h"
#include "xds/grpc_frame.h"
#include "xds/protowire.h"

static const wf_ca_token_key KEY = {{1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                     12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                     23, 24, 25, 26, 27, 28, 29, 30, 31, 32}};

/* ---- protowire ---------------------------------------------------------------------------- */

static void test_protowire_roundtrip(void **state)
{
    (void)state;
    wf_strbuf b = WF_STRBUF_INIT;
    wf_pb_put_bytes(&b, 1, "abc", 3);
    wf_pb_put_uint(&b, 2, 300);
    wf_pb_put_uint(&b, 2, (uint64_t)-1);
    wf_pb_put_bytes(&b, 1000, "", 0);
    /* 0x0a 03 'abc' | 0x10 0xac 0x02 | 0x10 ff x9 01 | field 1000 wire 2: 0xc2 0x3e 00 */
    assert_int_equal(b.len, 5 + 3 + 11 + 3);
    assert_memory_equal(b.data,
                        "\x0a\x03"
                        "abc\x10\xac\x02",
                        8);
    wf_pb_reader r;
    wf_pb_field f;
    wf_pb_reader_init(&r, (const uint8_t *)b.data, b.len);
    assert_int_equal(wf_pb_next(&r, &f), 1);
    assert_true(f.num == 1 && f.wire == WF_PB_LEN && f.len == 3 && !memcmp(f.p, "abc", 3));
    assert_int_equal(wf_pb_next(&r, &f), 1);
    assert_true(f.num == 2 && f.wire == WF_PB_VARINT && f.u == 300);
    assert_int_equal(wf_pb_next(&r, &f), 1);
    assert_true(f.u == UINT64_MAX);
    assert_int_equal(wf_pb_next(&r, &f), 1);
    assert_true(f.num == 1000 && f.len == 0);
    assert_int_equal(wf_pb_next(&r, &f), 0);
    wf_strbuf_free(&b);
}

static int first(const char *bytes, size_t n)
{
    wf_pb_reader r;
    wf_pb_field f;
    wf_pb_reader_init(&r, (const uint8_t *)bytes, n);
    return wf_pb_next(&r, &f);
}

static void test_protowire_malformed(void **state)
{
    (void)state;
    assert_int_equal(first("\x0a\x05"
                           "ab",
                           4),
                     -1);                       /* length past the end */
    assert_int_equal(first("\x10\x80", 2), -1); /* truncated varint */
    assert_int_equal(first("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11), -1); /* > 64 bit */
    assert_int_equal(first("\x0b", 1), -1);         /* group start */
    assert_int_equal(first("\x02\x00", 2), -1);     /* field number 0 */
    assert_int_equal(first("\x0f", 1), -1);         /* wire type 7 */
    assert_int_equal(first("\x0d\x01\x02", 3), -1); /* truncated fixed32 */
    assert_int_equal(first("\x0d\x01\x02\x03\x04", 5), 1);
}

/* ---- tokens ---------------------------------------------------------------------------- */

static char *b64url(const void *p, size_t n)
{
    char *s = malloc(4 * ((n + 2) / 3) + 1);
    wf_base64_encode(p, n, s, 4 * ((n + 2) / 3) + 1);
    for (char *c = s; *c; c++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c == '=' ? '\0' : *c;
    return s;
}

/* An HS256 token over any header and claims text, as a third party would make one. */
static char *forge(const wf_ca_token_key *k, const char *header, const char *claims)
{
    char *h = b64url(header, strlen(header)), *c = b64url(claims, strlen(claims));
    char signing[4096], *out = malloc(8192);
    snprintf(signing, sizeof signing, "%s.%s", h, c);
    unsigned char mac[32];
    unsigned int n = 32;
    HMAC(EVP_sha256(), k->k, 32, (const unsigned char *)signing, strlen(signing), mac, &n);
    char *s = b64url(mac, 32);
    snprintf(out, 8192, "%s.%s", signing, s);
    free(h);
    free(c);
    free(s);
    return out;
}

static int verify(const char *tok, int64_t now, char *ns, char *sa, char *err)
{
    return wf_ca_token_verify(&KEY, tok, strlen(tok), now, ns, sa, err, 256);
}

static void test_token_mint_verify(void **state)
{
    (void)state;
    char ns[254], sa[254], err[256];
    int64_t now = 1700000000;
    char *tok = wf_ca_token_mint(&KEY, "shop", "cart.v1", now, 600, err, sizeof err);
    assert_non_null(tok);
    assert_int_equal(verify(tok, now + 10, ns, sa, err), 0);
    assert_string_equal(ns, "shop");
    assert_string_equal(sa, "cart.v1");
    /* expired */
    assert_int_equal(verify(tok, now + 600, ns, sa, err), -1);
    assert_string_equal(err, "the token has expired");
    /* another key */
    wf_ca_token_key other = KEY;
    other.k[0] ^= 1;
    assert_int_equal(wf_ca_token_verify(&other, tok, strlen(tok), now, ns, sa, err, sizeof err),
                     -1);
    assert_string_equal(err, "the token signature is invalid");
    /* a changed payload keeps the signature: refused */
    char *forged = forge(&other, "{\"alg\":\"HS256\"}",
                         "{\"aud\":\"istio-ca\",\"exp\":1800000000,"
                         "\"sub\":\"system:serviceaccount:kube-system:admin\"}");
    char *dot = strrchr(tok, '.'), *fdot = strrchr(forged, '.');
    char mixed[8192];
    snprintf(mixed, sizeof mixed, "%.*s%s", (int)(fdot - forged), forged, dot);
    assert_int_equal(verify(mixed, now, ns, sa, err), -1);
    assert_string_equal(err, "the token signature is invalid");
    free(forged);
    free(tok);
    /* names are checked when minting */
    assert_null(wf_ca_token_mint(&KEY, "Bad_NS", "sa", now, 600, err, sizeof err));
    assert_string_equal(err, "invalid namespace \"Bad_NS\"");
    assert_null(wf_ca_token_mint(&KEY, "ns", "a..b", now, 600, err, sizeof err));
}

static void test_token_claims_checked(void **state)
{
    (void)state;
    char ns[254], sa[254], err[256];
    int64_t now = 1700000000;
    const char *hs = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    struct {
        const char *header, *claims, *why;
    } cases[] = {
        {hs, "{\"aud\":\"istio-ca\",\"exp\":1800000000,\"sub\":\"system:serviceaccount:a:b\"}",
         NULL},
        {hs,
         "{\"aud\":[\"x\",\"istio-ca\"],\"exp\":1800000000,\"sub\":\"system:serviceaccount:a:b\"}",
         NULL},
        {hs, "{\"aud\":[\"kubernetes\"],\"exp\":1800000000,\"sub\":\"system:serviceaccount:a:b\"}",
         "the token audience does not include istio-ca"},
        {hs, "{\"aud\":[\"istio-ca\"],\"sub\":\"system:serviceaccount:a:b\"}",
         "the token has expired"},
        {hs, "{\"aud\":[\"istio-ca\"],\"exp\":1800000000,\"sub\":\"system:node:a\"}",
         "the token subject is not system:serviceaccount:<ns>:<sa>"},
        {hs, "{\"aud\":[\"istio-ca\"],\"exp\":1800000000,\"sub\":\"system:serviceaccount:A:b\"}",
         "the token names an invalid service account"},
        {hs,
         "{\"aud\":[\"istio-ca\"],\"exp\":1800000000,\"sub\":\"system:serviceaccount:a:b\","
         "\"kubernetes.io\":{\"namespace\":\"c\",\"serviceaccount\":{\"name\":\"b\"}}}",
         "the token names an invalid service account"},
        {"{\"alg\":\"none\"}",
         "{\"aud\":[\"istio-ca\"],\"exp\":1800000000,\"sub\":\"system:serviceaccount:a:b\"}",
         "the token is not signed with HS256"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = forge(&KEY, cases[i].header, cases[i].claims);
        int rc = verify(t, now, ns, sa, err);
        if (cases[i].why) {
            if (rc != -1)
                print_message("case %zu accepted\n", i);
            assert_int_equal(rc, -1);
            assert_string_equal(err, cases[i].why);
        } else {
            if (rc != 0)
                print_message("case %zu: %s\n", i, err);
            assert_int_equal(rc, 0);
            assert_string_equal(ns, "a");
            assert_string_equal(sa, "b");
        }
        free(t);
    }
    assert_int_equal(verify("a.b", now, ns, sa, err), -1);
    assert_int_equal(verify("a.b.c.d", now, ns, sa, err), -1);
    assert_int_equal(verify("!!.??.**", now, ns, sa, err), -1);
    assert_string_equal(err, "the token is not a JWT");
}

/* ---- the service ------------------------------------------------------------------------ */

static char *make_csr(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509_REQ *r = X509_REQ_new();
    X509_REQ_set_pubkey(r, k);
    X509_REQ_sign(r, k, EVP_sha256());
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509_REQ(b, r);
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = strndup(data, (size_t)n);
    BIO_free(b);
    X509_REQ_free(r);
    EVP_PKEY_free(k);
    return s;
}

/* IstioCertificateRequest{csr, validity_duration, metadata{ImpersonatedIdentity: imp}} */
static void request(wf_strbuf *b, const char *csr, int64_t ttl, const char *imp)
{
    wf_pb_put_bytes(b, 1, csr, strlen(csr));
    if (ttl)
        wf_pb_put_uint(b, 2, (uint64_t)ttl);
    if (imp) {
        wf_strbuf value = WF_STRBUF_INIT, entry = WF_STRBUF_INIT, st = WF_STRBUF_INIT;
        wf_pb_put_bytes(&value, 3, imp, strlen(imp));
        wf_pb_put_bytes(&entry, 1, "ImpersonatedIdentity", 20);
        wf_pb_put_bytes(&entry, 2, value.data, value.len);
        wf_pb_put_bytes(&st, 1, entry.data, entry.len);
        wf_pb_put_bytes(b, 3, st.data, st.len);
        wf_strbuf_free(&value);
        wf_strbuf_free(&entry);
        wf_strbuf_free(&st);
    }
}

typedef struct csr_call {
    int status;
    char msg[768];
    char *chain[4];
    size_t n;
} csr_call;

static csr_call do_call(wf_ca_server *s, const char *auth, const char *csr, int64_t ttl,
                        const char *imp)
{
    csr_call c = {0};
    wf_strbuf req = WF_STRBUF_INIT, resp = WF_STRBUF_INIT;
    request(&req, csr, ttl, imp);
    c.status = wf_ca_server_handle(s, auth, "127.0.0.1:1", (const uint8_t *)req.data, req.len,
                                   (int64_t)time(NULL), &resp, c.msg, sizeof c.msg);
    wf_pb_reader r;
    wf_pb_field f;
    wf_pb_reader_init(&r, (const uint8_t *)resp.data, resp.len);
    while (wf_pb_next(&r, &f) == 1) {
        assert_int_equal(f.num, 1);
        assert_true(c.n < 4);
        c.chain[c.n++] = strndup((const char *)f.p, f.len);
    }
    wf_strbuf_free(&req);
    wf_strbuf_free(&resp);
    return c;
}

static void call_free(csr_call *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->chain[i]);
}

static char *san_of(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    char *s = strdup((const char *)ASN1_STRING_get0_data(
        sk_GENERAL_NAME_value(g, 0)->d.uniformResourceIdentifier));
    GENERAL_NAMES_free(g);
    X509_free(x);
    BIO_free(b);
    return s;
}

static void test_service(void **state)
{
    (void)state;
    char err[256], auth[4200];
    int64_t now = (int64_t)time(NULL);
    wf_ca_server *s = wf_ca_server_new(&KEY, "corp@example");
    assert_non_null(s);
    char *csr = make_csr(), *tok = wf_ca_token_mint(&KEY, "foo", "bar", now, 600, err, sizeof err);
    snprintf(auth, sizeof auth, "Bearer %s", tok);
    /* no CA yet */
    csr_call c = do_call(s, auth, csr, 0, NULL);
    assert_int_equal(c.status, WF_GRPC_INTERNAL);
    assert_string_equal(c.msg, "CSR signing error (CA is not ready)");
    wf_ca *ca = NULL;
    assert_int_equal(
        wf_ca_new_self_signed("corp.example", now - 60, now + 86400 * 200, &ca, err, sizeof err),
        WF_CA_OK);
    wf_ca_server_set_ca(s, ca);
    /* success: leaf, root; the identity in the trust domain ('@' becomes '.') */
    c = do_call(s, auth, csr, 3600, NULL);
    assert_int_equal(c.status, WF_GRPC_OK);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.chain[1], wf_ca_root_pem(ca));
    char *san = san_of(c.chain[0]);
    assert_string_equal(san, "spiffe://corp.example/ns/foo/sa/bar");
    free(san);
    call_free(&c);
    /* authentication */
    const char *bad[] = {NULL, "", "Bearer ", "Basic abc", "bearer x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = do_call(s, bad[i], csr, 0, NULL);
        assert_int_equal(c.status, WF_GRPC_UNAUTHENTICATED);
        assert_string_equal(c.msg, "request authenticate failure");
        assert_int_equal(c.n, 0);
    }
    c = do_call(s, auth, csr, 0, "spiffe://corp.example/ns/x/sa/y");
    assert_int_equal(c.status, WF_GRPC_UNAUTHENTICATED);
    assert_string_equal(c.msg, "request impersonation authentication failure");
    /* signing errors */
    c = do_call(s, auth, csr, 100 * 86400, NULL);
    assert_int_equal(c.status, WF_GRPC_INVALID_ARGUMENT);
    assert_string_equal(c.msg, "CSR signing error (requested TTL 2400h0m0s is greater than the "
                               "max allowed TTL 2160h0m0s)");
    c = do_call(s, auth, "junk", 0, NULL);
    assert_int_equal(c.status, WF_GRPC_INVALID_ARGUMENT);
    /* an undecodable request */
    wf_strbuf resp = WF_STRBUF_INIT;
    char msg[256];
    assert_int_equal(wf_ca_server_handle(s, auth, "", (const uint8_t *)"\x0a\x09x", 3, now, &resp,
                                         msg, sizeof msg),
                     WF_GRPC_INTERNAL);
    assert_non_null(strstr(msg, "grpc: error unmarshalling request"));
    /* the counters and their exposition */
    const wf_ca_metrics *m = wf_ca_server_metrics(s);
    assert_int_equal(m->csr, 11);
    assert_int_equal(m->success, 1);
    assert_int_equal(m->authn_fail, 6);
    assert_int_equal(m->sign_err[WF_CA_E_NOT_READY], 1);
    assert_int_equal(m->sign_err[WF_CA_E_TTL], 1);
    assert_int_equal(m->sign_err[WF_CA_E_CSR], 1);
    wf_strbuf text = WF_STRBUF_INIT;
    wf_ca_server_metrics_text(s, now + 100, &text);
    wf_strbuf_putc(&text, '\0');
    assert_non_null(strstr(text.data, "\ncitadel_server_csr_count 11\n"));
    assert_non_null(strstr(text.data, "\ncitadel_server_authentication_failure_count 6\n"));
    assert_non_null(strstr(text.data, "\ncitadel_server_success_cert_issuance_count 1\n"));
    assert_non_null(
        strstr(text.data, "citadel_server_csr_sign_err_count{error=\"TTL_ERROR\"} 1\n"));
    assert_non_null(
        strstr(text.data, "citadel_server_csr_sign_err_count{error=\"CSR_ERROR\"} 1\n"));
    char want[96];
    snprintf(want, sizeof want, "\ncitadel_server_root_cert_expiry_timestamp %lld\n",
             (long long)(now + 86400 * 200));
    assert_non_null(strstr(text.data, want));
    snprintf(want, sizeof want, "\ncitadel_server_root_cert_expiry_seconds %lld\n",
             (long long)(86400 * 200 - 100));
    assert_non_null(strstr(text.data, want));
    wf_strbuf_free(&text);
    wf_strbuf_free(&resp);
    free(csr);
    free(tok);
    wf_ca_server_free(s);
}

/* ---- over gRPC: weft's h2 server and client, metadata both ways ------------------------- */

typedef struct round_trip {
    wf_h2_server *srv;
    wf_h2_conn *conn;
    wf_strbuf resp;
    int status;
    char msg[256];
    int ended;
} round_trip;

static void rt_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    (void)call;
    round_trip *rt = ud;
    wf_strbuf_append(&rt->resp, (const char *)msg, len);
}

static void rt_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    (void)call;
    round_trip *rt = ud;
    rt->status = end->grpc_status;
    snprintf(rt->msg, sizeof rt->msg, "%s", end->grpc_message);
    rt->ended++;
    wf_h2_conn_close(rt->conn);
    wf_h2_server_close(rt->srv);
}

/* One CreateCertificate call over loopback with the metadata md (NULL-terminated pairs). */
static void grpc_call(wf_ca_server *s, const char *const *md, const wf_strbuf *req, round_trip *rt)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wf_h2_opts so = {.path = WF_CA_CSR_PATH};
    wf_h2_handlers sh = wf_ca_server_handlers(s);
    assert_int_equal(wf_h2_server_start(&loop, "127.0.0.1", 0, &so, &sh, &rt->srv), 0);
    wf_h2_opts co = {.path = WF_CA_CSR_PATH, .metadata = md};
    wf_h2_handlers ch = {.on_message = rt_message, .on_end = rt_end, .ud = rt};
    assert_int_equal(
        wf_h2_client_connect(&loop, "127.0.0.1", wf_h2_server_port(rt->srv), &co, &ch, &rt->conn),
        0);
    wf_h2_call *call;
    assert_int_equal(wf_h2_call_open(rt->conn, &call), 0);
    assert_int_equal(wf_h2_call_send(call, req->data, req->len), 0);
    assert_int_equal(wf_h2_call_finish(call, 0, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(rt->ended, 1);
}

static void test_over_grpc(void **state)
{
    (void)state;
    char err[256], auth[4200];
    int64_t now = (int64_t)time(NULL);
    wf_ca_server *s = wf_ca_server_new(&KEY, NULL);
    wf_ca *ca = NULL;
    assert_int_equal(
        wf_ca_new_self_signed("cluster.local", now - 60, now + 86400 * 30, &ca, err, sizeof err),
        WF_CA_OK);
    wf_ca_server_set_ca(s, ca);
    char *csr = make_csr(),
         *tok = wf_ca_token_mint(&KEY, "web", "frontend", now, 600, err, sizeof err);
    snprintf(auth, sizeof auth, "Bearer %s", tok);
    wf_strbuf req = WF_STRBUF_INIT;
    request(&req, csr, 0, NULL);
    const char *const md[] = {"x-other", "1", "authorization", auth, NULL};
    round_trip ok = {.resp = WF_STRBUF_INIT};
    grpc_call(s, md, &req, &ok);
    assert_int_equal(ok.status, WF_GRPC_OK);
    assert_true(ok.resp.len > 0);
    wf_pb_reader r;
    wf_pb_field f;
    size_t n = 0;
    wf_pb_reader_init(&r, (const uint8_t *)ok.resp.data, ok.resp.len);
    while (wf_pb_next(&r, &f) == 1) {
        if (n++ == 0) {
            char *leaf = strndup((const char *)f.p, f.len), *san = san_of(leaf);
            assert_string_equal(san, "spiffe://cluster.local/ns/web/sa/frontend");
            free(san);
            free(leaf);
        }
    }
    assert_int_equal(n, 2);
    round_trip bad = {.resp = WF_STRBUF_INIT};
    grpc_call(s, NULL, &req, &bad); /* no authorization metadata */
    assert_int_equal(bad.status, WF_GRPC_UNAUTHENTICATED);
    assert_string_equal(bad.msg, "request authenticate failure");
    assert_int_equal(bad.resp.len, 0);
    wf_strbuf_free(&ok.resp);
    wf_strbuf_free(&bad.resp);
    wf_strbuf_free(&req);
    free(csr);
    free(tok);
    wf_ca_server_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protowire_roundtrip),
        cmocka_unit_test(test_protowire_malformed),
        cmocka_unit_test(test_token_mint_verify),
        cmocka_unit_test(test_token_claims_checked),
        cmocka_unit_test(test_service),
        cmocka_unit_test(test_over_grpc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
