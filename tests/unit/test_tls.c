/*
 * test_tls.c - the TLS engine (src/tls/tls.h) through memory: handshakes both ways, ALPN,
 * SNI, versions, SAN matchers, and Envoy's failure reasons with BoringSSL's codes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "tls/tls.h"
#include "tls_testcerts.h"

static wf_tls_info info_of(const wf_tls_conn *c)
{
    wf_tls_info i;
    wf_tls_conn_info(c, &i);
    return i;
}

typedef struct {
    tc_cert ca, other_ca, server, client, expired;
} certs;

static certs C;

static int setup(void **state)
{
    (void)state;
    C.ca = tc_make("root", NULL, NULL, -1, 365);
    C.other_ca = tc_make("other-root", NULL, NULL, -1, 365);
    C.server = tc_make("server", &C.ca,
                       "URI:spiffe://cluster.local/ns/default/sa/server,DNS:server.local", -1, 30);
    C.client = tc_make("client", &C.ca, "URI:spiffe://cluster.local/ns/default/sa/client", -1, 30);
    C.expired = tc_make("old", &C.ca, "URI:spiffe://cluster.local/ns/default/sa/old", -30, -1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tc_free(&C.ca);
    tc_free(&C.other_ca);
    tc_free(&C.server);
    tc_free(&C.client);
    tc_free(&C.expired);
    return 0;
}

static wf_tls_ctx *ctx_of(bool server, const tc_cert *own, const tc_cert *ca,
                          const wf_tls_ctx_opts *extra)
{
    wf_tls_ctx_opts o = extra ? *extra : (wf_tls_ctx_opts){0};
    o.server = server;
    if (own) {
        o.cert_chain = own->cert_pem;
        o.cert_chain_len = strlen(own->cert_pem);
        o.private_key = own->key_pem;
        o.private_key_len = strlen(own->key_pem);
    }
    if (ca) {
        o.trusted_ca = ca->cert_pem;
        o.trusted_ca_len = strlen(ca->cert_pem);
    }
    char err[256] = "";
    wf_tls_ctx *c = wf_tls_ctx_new(&o, err, sizeof(err));
    if (!c)
        fail_msg("context: %s", err);
    return c;
}

/* Moves ciphertext from one side to the other; returns the bytes moved. */
static size_t pump(wf_tls_conn *from, wf_tls_conn *to)
{
    char buf[32768];
    size_t total = 0, n;
    while ((n = wf_tls_conn_out_take(from, buf, sizeof(buf))) > 0) {
        assert_int_equal(wf_tls_conn_feed(to, buf, n), WF_TLS_OK);
        total += n;
    }
    return total;
}

/* Runs both handshakes until neither moves; results in *rc, *rs. */
static void handshake(wf_tls_conn *cl, wf_tls_conn *sv, int *rc, int *rs)
{
    *rc = *rs = WF_TLS_WANT;
    for (int i = 0; i < 20; i++) {
        *rc = wf_tls_conn_handshake(cl);
        size_t a = pump(cl, sv);
        *rs = wf_tls_conn_handshake(sv);
        size_t b = pump(sv, cl);
        if (a == 0 && b == 0 && *rc != WF_TLS_WANT && *rs != WF_TLS_WANT)
            break;
        if (a == 0 && b == 0 && i > 3)
            break;
    }
}

static void test_mutual_handshake_and_data(void **state)
{
    (void)state;
    const char *alpn_s[] = {"h2", "http/1.1"};
    const char *alpn_c[] = {"istio", "http/1.1"};
    wf_tls_san_matcher sm = {WF_TLS_SAN_URI, WF_TLS_MATCH_PREFIX, "spiffe://cluster.local/"};
    wf_tls_ctx_opts so = {
        .alpn = alpn_s, .nalpn = 2, .require_client_cert = true, .sans = &sm, .nsans = 1};
    wf_tls_ctx_opts co = {.alpn = alpn_c, .nalpn = 2};
    wf_tls_ctx *sctx = ctx_of(true, &C.server, &C.ca, &so);
    wf_tls_ctx *cctx = ctx_of(false, &C.client, &C.ca, &co);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, "outbound_.80_._.server.default.svc.cluster.local");
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rc, WF_TLS_OK);
    assert_int_equal(rs, WF_TLS_OK);
    assert_true(wf_tls_conn_handshake_done(sv));
    wf_tls_info sinfo, cinfo;
    wf_tls_conn_info(sv, &sinfo);
    wf_tls_conn_info(cl, &cinfo);
    const wf_tls_info *si = &sinfo, *ci = &cinfo;
    assert_string_equal(si->alpn, "http/1.1");
    assert_string_equal(ci->alpn, "http/1.1");
    assert_string_equal(si->sni, "outbound_.80_._.server.default.svc.cluster.local");
    assert_string_equal(si->peer_uri_san, "spiffe://cluster.local/ns/default/sa/client");
    assert_string_equal(si->local_uri_sans, "spiffe://cluster.local/ns/default/sa/server");
    assert_string_equal(ci->peer_uri_san, "spiffe://cluster.local/ns/default/sa/server");
    assert_string_equal(si->peer_subject, "CN=client,O=weft-test");
    assert_string_equal(si->version, "TLSv1.3");
    assert_string_equal(si->cipher, ci->cipher);
    assert_int_equal(wf_tls_conn_outcome(sv), WF_TLS_STAT_HANDSHAKE);
    assert_false(wf_tls_conn_no_peer_cert(sv));
    /* data both ways */
    assert_int_equal(wf_tls_conn_write(cl, "GET / HTTP/1.1\r\n\r\n", 18), WF_TLS_OK);
    pump(cl, sv);
    char buf[64];
    assert_true(wf_tls_conn_readable(sv));
    ssize_t n = wf_tls_conn_read(sv, buf, sizeof(buf));
    assert_int_equal(n, 18);
    assert_memory_equal(buf, "GET / HTTP/1.1\r\n\r\n", 18);
    assert_int_equal(wf_tls_conn_read(sv, buf, sizeof(buf)), WF_TLS_WANT);
    assert_int_equal(wf_tls_conn_write(sv, "ok", 2), WF_TLS_OK);
    pump(sv, cl);
    n = wf_tls_conn_read(cl, buf, sizeof(buf));
    while (n == WF_TLS_WANT && wf_tls_conn_readable(cl)) /* session tickets first */
        n = wf_tls_conn_read(cl, buf, sizeof(buf));
    assert_int_equal(n, 2);
    /* close_notify reads as end of stream */
    wf_tls_conn_shutdown(cl);
    pump(cl, sv);
    assert_int_equal(wf_tls_conn_read(sv, buf, sizeof(buf)), WF_TLS_EOF);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* The peer certificate's XFCC facts: SHA-256 of the DER, DNS SANs, URL-encoded PEM. */
static void test_peer_facts(void **state)
{
    (void)state;
    /* roles swapped: the server serves C.server and asks for no client certificate */
    wf_tls_ctx *sctx = ctx_of(true, &C.server, NULL, NULL);
    wf_tls_ctx *cctx = ctx_of(false, &C.client, &C.ca, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(wf_tls_conn_peer_sha256(cl, &b), -1); /* before the handshake */
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rc, WF_TLS_OK);
    unsigned char md[32];
    unsigned len = 0;
    assert_int_equal(X509_digest(C.server.cert, EVP_sha256(), md, &len), 1);
    char want[65];
    for (unsigned i = 0; i < len; i++)
        snprintf(want + 2 * i, 3, "%02x", md[i]);
    assert_int_equal(wf_tls_conn_peer_sha256(cl, &b), 0);
    assert_string_equal(wf_strbuf_cstr(&b), want);
    wf_strbuf_reset(&b);
    assert_int_equal(wf_tls_conn_peer_sans(cl, WF_TLS_SAN_DNS, ";", &b), 0);
    assert_string_equal(wf_strbuf_cstr(&b), "server.local");
    wf_strbuf_reset(&b);
    assert_int_equal(wf_tls_conn_peer_pem(cl, false, &b), 0);
    const char *pem = wf_strbuf_cstr(&b);
    assert_true(strncmp(pem, "-----BEGIN%20CERTIFICATE-----%0A", 32) == 0);
    assert_null(strpbrk(pem, "\n +/="));
    size_t leaf = b.len;
    wf_strbuf_reset(&b);
    assert_int_equal(wf_tls_conn_peer_pem(cl, true, &b), 0); /* one certificate was sent */
    assert_int_equal(b.len, leaf);
    /* the server's client sent no certificate: none of it */
    wf_strbuf_reset(&b);
    assert_int_equal(wf_tls_conn_peer_sha256(sv, &b), -1);
    assert_int_equal(wf_tls_conn_peer_pem(sv, false, &b), -1);
    wf_strbuf_free(&b);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* The client does not trust the server's CA: CERTIFICATE_VERIFY_FAILED with the X509 detail
 * on the client, TLSV1_ALERT_UNKNOWN_CA on the server. */
static void test_unknown_ca(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = ctx_of(true, &C.server, NULL, NULL);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.other_ca, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, "server.local");
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rc, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(cl),
                        "TLS_error:|268435581:SSL routines:OPENSSL_internal:"
                        "CERTIFICATE_VERIFY_FAILED:verify cert failed: X509_verify_cert: "
                        "certificate verification error at depth 0: unable to get local issuer "
                        "certificate:TLS_error_end");
    assert_int_equal(wf_tls_conn_outcome(cl), WF_TLS_STAT_FAIL_VERIFY_ERROR);
    assert_int_equal(rs, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(sv), "TLS_error:|268436504:SSL routines:"
                                                 "OPENSSL_internal:TLSV1_ALERT_UNKNOWN_CA:"
                                                 "TLS_error_end");
    assert_int_equal(wf_tls_conn_outcome(sv), WF_TLS_STAT_CONNECTION_ERROR);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

static void san_case(wf_tls_san_type type, wf_tls_match_kind kind, const char *value, bool pass)
{
    wf_tls_san_matcher sm = {type, kind, value};
    wf_tls_ctx_opts co = {.sans = &sm, .nsans = 1};
    wf_tls_ctx *sctx = ctx_of(true, &C.server, NULL, NULL);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.ca, &co);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    if (pass) {
        assert_int_equal(rc, WF_TLS_OK);
    } else {
        assert_int_equal(rc, WF_TLS_FAIL);
        assert_string_equal(wf_tls_conn_failure(cl),
                            "TLS_error:|268435581:SSL routines:OPENSSL_internal:"
                            "CERTIFICATE_VERIFY_FAILED:verify cert failed: SAN matcher, "
                            "certificate SANs are [spiffe://cluster.local/ns/default/sa/server, "
                            "server.local]:TLS_error_end");
        assert_int_equal(wf_tls_conn_outcome(cl), WF_TLS_STAT_FAIL_VERIFY_SAN);
    }
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

static void test_san_matchers(void **state)
{
    (void)state;
    san_case(WF_TLS_SAN_URI, WF_TLS_MATCH_EXACT, "spiffe://cluster.local/ns/default/sa/server",
             true);
    san_case(WF_TLS_SAN_URI, WF_TLS_MATCH_EXACT, "spiffe://cluster.local/ns/default/sa/other",
             false);
    san_case(WF_TLS_SAN_URI, WF_TLS_MATCH_PREFIX, "spiffe://cluster.local/", true);
    san_case(WF_TLS_SAN_URI, WF_TLS_MATCH_PREFIX, "spiffe://other.domain/", false);
    san_case(WF_TLS_SAN_DNS, WF_TLS_MATCH_EXACT, "server.local", true);
    /* a DNS matcher does not look at URI SANs, the untyped one looks at all */
    san_case(WF_TLS_SAN_DNS, WF_TLS_MATCH_PREFIX, "spiffe://", false);
    san_case(WF_TLS_SAN_ANY, WF_TLS_MATCH_EXACT, "server.local", true);
}

/* require_client_certificate with a client that has none. */
static void test_client_cert_required(void **state)
{
    (void)state;
    wf_tls_ctx_opts so = {.require_client_cert = true};
    wf_tls_ctx *sctx = ctx_of(true, &C.server, &C.ca, &so);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.ca, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rs, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(sv),
                        "TLS_error:|268435648:SSL routines:OPENSSL_internal:"
                        "PEER_DID_NOT_RETURN_A_CERTIFICATE:peer did not provide required client "
                        "certificate:TLS_error_end");
    assert_int_equal(wf_tls_conn_outcome(sv), WF_TLS_STAT_FAIL_VERIFY_NO_CERT);
    /* TLS 1.3: the client finished first and reads the server's alert */
    char buf[16];
    ssize_t n = wf_tls_conn_read(cl, buf, sizeof(buf));
    assert_int_equal(n, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(cl),
                        "TLS_error:|268436572:SSL routines:OPENSSL_internal:"
                        "TLSV1_ALERT_CERTIFICATE_REQUIRED:TLS_error_end");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* Without require_client_certificate a client without a certificate is let in
 * (ssl.no_certificate). */
static void test_no_client_cert_optional(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = ctx_of(true, &C.server, &C.ca, NULL);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.ca, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rs, WF_TLS_OK);
    assert_true(wf_tls_conn_no_peer_cert(sv));
    assert_string_equal(info_of(sv).peer_uri_san, "");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* The server's certificate expired: the client's detail says so. */
static void test_expired(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = ctx_of(true, &C.expired, NULL, NULL);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.ca, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rc, WF_TLS_FAIL);
    assert_non_null(strstr(wf_tls_conn_failure(cl), "at depth 0: certificate has expired"));
    /* the server reads the client's alert: Envoy's SSLV3_ALERT_CERTIFICATE_EXPIRED */
    assert_string_equal(wf_tls_conn_failure(sv), "TLS_error:|268436501:SSL routines:"
                                                 "OPENSSL_internal:SSLV3_ALERT_CERTIFICATE_"
                                                 "EXPIRED:TLS_error_end");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* TLS meets plaintext: a client reading an HTTP answer, a server reading an HTTP request. */
static void test_plaintext_peer(void **state)
{
    (void)state;
    wf_tls_ctx *cctx = ctx_of(false, NULL, NULL, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    assert_int_equal(wf_tls_conn_handshake(cl), WF_TLS_WANT);
    assert_true(wf_tls_conn_out_pending(cl) > 0);
    const char *resp = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
    wf_tls_conn_feed(cl, resp, strlen(resp));
    assert_int_equal(wf_tls_conn_handshake(cl), WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(cl), "TLS_error:|268435703:SSL routines:"
                                                 "OPENSSL_internal:WRONG_VERSION_NUMBER:"
                                                 "TLS_error_end");
    assert_int_equal(wf_tls_conn_outcome(cl), WF_TLS_STAT_CONNECTION_ERROR);
    wf_tls_ctx *sctx = ctx_of(true, &C.server, NULL, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    const char *req = "GET / HTTP/1.1\r\nhost: a\r\n\r\n";
    wf_tls_conn_feed(sv, req, strlen(req));
    assert_int_equal(wf_tls_conn_handshake(sv), WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(sv), "TLS_error:|268435612:SSL routines:"
                                                 "OPENSSL_internal:HTTP_REQUEST:TLS_error_end");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(cctx);
    wf_tls_ctx_free(sctx);
}

/* tls_params: versions negotiated, and no common version fails. */
static void test_versions(void **state)
{
    (void)state;
    wf_tls_ctx_opts s12 = {.max_version = WF_TLS_V1_2};
    wf_tls_ctx *sctx = ctx_of(true, &C.server, NULL, &s12);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.ca, NULL);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rc, WF_TLS_OK);
    assert_string_equal(info_of(cl).version, "TLSv1.2");
    assert_string_equal(info_of(cl).cipher, "ECDHE-ECDSA-AES128-GCM-SHA256");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(cctx);
    wf_tls_ctx_opts c13 = {.min_version = WF_TLS_V1_3};
    cctx = ctx_of(false, NULL, &C.ca, &c13);
    cl = wf_tls_conn_new(cctx, NULL);
    sv = wf_tls_conn_new(sctx, NULL);
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rs, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(sv), "TLS_error:|268435696:SSL routines:"
                                                 "OPENSSL_internal:UNSUPPORTED_PROTOCOL:"
                                                 "TLS_error_end");
    assert_int_equal(rc, WF_TLS_FAIL);
    assert_non_null(strstr(wf_tls_conn_failure(cl), "TLSV1_ALERT_PROTOCOL_VERSION"));
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(cctx);
    wf_tls_ctx_free(sctx);
    assert_int_equal(wf_tls_version_from_name("TLSv1_3"), WF_TLS_V1_3);
    assert_int_equal(wf_tls_version_from_name("TLS_AUTO"), 0);
    assert_int_equal(wf_tls_version_from_name("TLSv9"), -1);
}

static void test_ctx_errors(void **state)
{
    (void)state;
    char err[256];
    wf_tls_ctx_opts o = {.server = true};
    assert_null(wf_tls_ctx_new(&o, err, sizeof(err)));
    assert_string_equal(err, "a server needs a certificate_chain and a private_key");
    o = (wf_tls_ctx_opts){.cert_chain = C.server.cert_pem,
                          .cert_chain_len = strlen(C.server.cert_pem),
                          .private_key = C.client.key_pem,
                          .private_key_len = strlen(C.client.key_pem)};
    assert_null(wf_tls_ctx_new(&o, err, sizeof(err)));
    assert_string_equal(err, "private_key does not match the certificate");
    o = (wf_tls_ctx_opts){
        .cert_chain = "junk", .cert_chain_len = 4, .private_key = "x", .private_key_len = 1};
    assert_null(wf_tls_ctx_new(&o, err, sizeof(err)));
    assert_string_equal(err, "certificate_chain: no certificate found in PEM");
    wf_tls_san_matcher sm = {WF_TLS_SAN_URI, WF_TLS_MATCH_EXACT, "a"};
    o = (wf_tls_ctx_opts){.sans = &sm, .nsans = 1};
    assert_null(wf_tls_ctx_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "without trusted CA is insecure"));
    o = (wf_tls_ctx_opts){.cipher_suites = "NOT-A-CIPHER"};
    assert_null(wf_tls_ctx_new(&o, err, sizeof(err)));
    assert_string_equal(err, "Failed to initialize cipher suites NOT-A-CIPHER");
}

/* No common cipher: NO_SHARED_CIPHER on the server, its SSLV3_ALERT_HANDSHAKE_FAILURE on the
 * client; a server rejecting a client's SANs: the client reads certificate_unknown. */
static void test_alert_names(void **state)
{
    (void)state;
    wf_tls_ctx_opts c12 = {.max_version = WF_TLS_V1_2,
                           .cipher_suites = "ECDHE-RSA-AES256-GCM-SHA384"};
    wf_tls_ctx *sctx = ctx_of(true, &C.server, NULL, NULL);
    wf_tls_ctx *cctx = ctx_of(false, NULL, &C.ca, &c12);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    int rc, rs;
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rs, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(sv), "TLS_error:|268435640:SSL routines:"
                                                 "OPENSSL_internal:NO_SHARED_CIPHER:TLS_error_end");
    assert_int_equal(rc, WF_TLS_FAIL);
    assert_string_equal(wf_tls_conn_failure(cl),
                        "TLS_error:|268436496:SSL routines:OPENSSL_internal:"
                        "SSLV3_ALERT_HANDSHAKE_FAILURE:TLS_error_end");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
    /* the server's SAN matcher refuses the client (TLS 1.2: the client waits for Finished) */
    wf_tls_san_matcher sm = {WF_TLS_SAN_URI, WF_TLS_MATCH_EXACT, "spiffe://x/other"};
    wf_tls_ctx_opts so = {.require_client_cert = true, .sans = &sm, .nsans = 1};
    wf_tls_ctx_opts co = {.max_version = WF_TLS_V1_2};
    sctx = ctx_of(true, &C.server, &C.ca, &so);
    cctx = ctx_of(false, &C.client, &C.ca, &co);
    cl = wf_tls_conn_new(cctx, NULL);
    sv = wf_tls_conn_new(sctx, NULL);
    handshake(cl, sv, &rc, &rs);
    assert_int_equal(rs, WF_TLS_FAIL);
    assert_int_equal(wf_tls_conn_outcome(sv), WF_TLS_STAT_FAIL_VERIFY_SAN);
    assert_int_equal(rc, WF_TLS_FAIL);
    /* Envoy's validator answers a SAN mismatch with certificate_unknown */
    assert_string_equal(wf_tls_conn_failure(cl),
                        "TLS_error:|268436502:SSL routines:OPENSSL_internal:"
                        "SSLV3_ALERT_CERTIFICATE_UNKNOWN:TLS_error_end");
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* Garbage and truncated ClientHellos fail or wait, never more (run under ASan too). */
static void test_garbage_input(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = ctx_of(true, &C.server, &C.ca, NULL);
    wf_tls_ctx *cctx = ctx_of(false, NULL, NULL, NULL);
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        unsigned char buf[2048];
        size_t n = 1 + (size_t)(round * 37 % (int)sizeof(buf));
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = (unsigned char)(seed >> 16);
        }
        if (round % 3 == 0) { /* a real ClientHello, cut or corrupted */
            wf_tls_conn *cl = wf_tls_conn_new(cctx, "x");
            wf_tls_conn_handshake(cl);
            size_t got = wf_tls_conn_out_take(cl, buf, sizeof(buf));
            n = got ? 1 + (size_t)round % got : 1;
            if (round % 2 && n > 10)
                buf[n / 2] ^= 0x5a;
            wf_tls_conn_free(cl);
        }
        wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
        assert_int_equal(wf_tls_conn_feed(sv, buf, n), WF_TLS_OK);
        int r = wf_tls_conn_handshake(sv);
        assert_true(r == WF_TLS_WANT || r == WF_TLS_FAIL);
        if (r == WF_TLS_FAIL)
            assert_non_null(strstr(wf_tls_conn_failure(sv), ":TLS_error_end"));
        char out[64];
        assert_true(wf_tls_conn_read(sv, out, sizeof(out)) < 0);
        wf_tls_conn_free(sv);
    }
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutual_handshake_and_data),
        cmocka_unit_test(test_peer_facts),
        cmocka_unit_test(test_unknown_ca),
        cmocka_unit_test(test_san_matchers),
        cmocka_unit_test(test_client_cert_required),
        cmocka_unit_test(test_no_client_cert_optional),
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_plaintext_peer),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_ctx_errors),
        cmocka_unit_test(test_garbage_input),
        cmocka_unit_test(test_alert_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
