/*
 * test_pilot_ca.c - weft-pilot's CA (src/pilot/ca.h), checked with the OpenSSL API: workload
 * certificates for an RSA and an ECDSA P-256 CSR with every property of security.md §1.2 (empty
 * subject, one critical URI SAN from the caller not the CSR, key usages, CA:FALSE, NotBefore
 * now - 2 min, issuer, chain order), the TTL default / max / clamp rules with Istio's messages,
 * an expired signing cert, CSR errors, a plug-in bundle with an intermediate (chain order and
 * verification, a key that does not match, a chain that does not reach the root), and the CA
 * directory: created once with its file modes, the same root after a reload, a partial bundle
 * refused, the kubernetes.io/tls layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "pilot/ca.h"

#define SAN "spiffe://cluster.local/ns/foo/sa/bar"

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* ---- helpers: keys, CSRs, CA certificates made with OpenSSL directly ---------------------- */

static EVP_PKEY *new_key(bool ec)
{
    EVP_PKEY *k = ec ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048);
    assert_non_null(k);
    return k;
}

static char *bio_text(BIO *b)
{
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    BIO_free(b);
    return s;
}

static char *cert_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_X509(b, x), 1);
    return bio_text(b);
}

static char *key_pem(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL), 1);
    return bio_text(b);
}

/* A CSR for key with its own subject and SAN (both must be ignored by the CA). */
static char *make_csr(EVP_PKEY *key)
{
    X509_REQ *r = X509_REQ_new();
    X509_NAME *n = X509_NAME_new();
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"evil", -1, -1, 0);
    X509_REQ_set_subject_name(r, n);
    X509_REQ_set_pubkey(r, key);
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    sk_X509_EXTENSION_push(
        exts, X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, "URI:spiffe://evil/ns/x/sa/y"));
    X509_REQ_add_extensions(r, exts);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    assert_true(X509_REQ_sign(r, key, EVP_sha256()) > 0);
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509_REQ(b, r);
    X509_NAME_free(n);
    X509_REQ_free(r);
    return bio_text(b);
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *v)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, v);
    assert_non_null(e);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
}

/* A CA certificate for key, named cn, issued by issuer/ikey (NULL: self-signed). */
static X509 *make_ca_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, int64_t nb,
                          int64_t na)
{
    X509 *x = X509_new();
    X509_NAME *n = X509_NAME_new();
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(nb & 0xffff) + (issuer ? 2 : 1));
    X509_set_subject_name(x, n);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    ASN1_TIME_set(X509_getm_notBefore(x), (time_t)nb);
    ASN1_TIME_set(X509_getm_notAfter(x), (time_t)na);
    X509_set_pubkey(x, key);
    add_ext(x, issuer ? issuer : x, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x, issuer ? issuer : x, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(x, issuer ? issuer : x, NID_subject_key_identifier, "hash");
    assert_true(X509_sign(x, ikey ? ikey : key, EVP_sha256()) > 0);
    X509_NAME_free(n);
    return x;
}

static X509 *parse_pem(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(x);
    return x;
}

static int64_t t64(const ASN1_TIME *t)
{
    struct tm tm;
    assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
    return (int64_t)timegm(&tm);
}

static wf_ca *self_signed(int64_t nb, int64_t na)
{
    wf_ca *ca = NULL;
    char err[512];
    assert_int_equal(wf_ca_new_self_signed("cluster.local", nb, na, &ca, err, sizeof err),
                     WF_CA_OK);
    return ca;
}

static int sign(const wf_ca *ca, const char *csr, int64_t ttl, int64_t now, wf_ca_chain *out,
                char *err, size_t cap)
{
    wf_ca_sign_req r = {
        .csr_pem = csr, .csr_len = strlen(csr), .san = SAN, .ttl_s = ttl, .now_s = now};
    return wf_ca_sign(ca, &r, out, err, cap);
}

/* ---- every property of §1.2 ---------------------------------------------------------------- */

static void check_leaf(X509 *leaf, EVP_PKEY *csr_key, X509 *signer)
{
    /* subject empty */
    assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(leaf)), 0);
    assert_int_equal(X509_get_version(leaf), 2);
    /* one URI SAN = the caller's identity, critical */
    int i = X509_get_ext_by_NID(leaf, NID_subject_alt_name, -1);
    assert_true(i >= 0);
    assert_int_equal(X509_EXTENSION_get_critical(X509_get_ext(leaf, i)), 1);
    GENERAL_NAMES *gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
    assert_int_equal(sk_GENERAL_NAME_num(gens), 1);
    GENERAL_NAME *gn = sk_GENERAL_NAME_value(gens, 0);
    assert_int_equal(gn->type, GEN_URI);
    assert_string_equal((const char *)ASN1_STRING_get0_data(gn->d.uniformResourceIdentifier), SAN);
    GENERAL_NAMES_free(gens);
    /* key usage: digitalSignature + keyEncipherment, critical */
    assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT);
    i = X509_get_ext_by_NID(leaf, NID_key_usage, -1);
    assert_int_equal(X509_EXTENSION_get_critical(X509_get_ext(leaf, i)), 1);
    /* ext key usage: serverAuth + clientAuth */
    assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER | XKU_SSL_CLIENT);
    /* CA:FALSE, critical basic constraints */
    uint32_t flags = X509_get_extension_flags(leaf);
    assert_true(flags & EXFLAG_BCONS);
    assert_false(flags & EXFLAG_CA);
    i = X509_get_ext_by_NID(leaf, NID_basic_constraints, -1);
    assert_int_equal(X509_EXTENSION_get_critical(X509_get_ext(leaf, i)), 1);
    /* the CSR's key, signed by the signing cert */
    assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(leaf), csr_key), 1);
    assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(signer)), 0);
    assert_int_equal(X509_verify(leaf, X509_get0_pubkey(signer)), 1);
    const ASN1_OCTET_STRING *akid = X509_get0_authority_key_id(leaf);
    assert_non_null(akid);
    assert_int_equal(ASN1_OCTET_STRING_cmp(akid, X509_get0_subject_key_id(signer)), 0);
    /* a positive serial of about 128 bits */
    const ASN1_INTEGER *serial = X509_get0_serialNumber(leaf);
    assert_true(serial->length >= 15 && serial->length <= 16);
    assert_false(serial->type & V_ASN1_NEG);
}

static void issue_for(bool ec)
{
    int64_t now = now_s();
    wf_ca *ca = self_signed(now - 3600, now + 10 * 86400);
    EVP_PKEY *key = new_key(ec);
    char *csr = make_csr(key), err[512];
    wf_ca_chain chain;
    assert_int_equal(sign(ca, csr, 3600, now, &chain, err, sizeof err), WF_CA_OK);
    assert_int_equal(chain.n, 2); /* leaf, root (no cert chain for a self-signed root) */
    assert_string_equal(chain.pem[1], wf_ca_root_pem(ca));
    X509 *leaf = parse_pem(chain.pem[0]), *root = parse_pem(chain.pem[1]);
    check_leaf(leaf, key, root);
    assert_int_equal(t64(X509_get0_notBefore(leaf)), now - 120);
    assert_int_equal(t64(X509_get0_notAfter(leaf)), now + 3600);
    /* the leaf's serial and validity come back with the chain (the web view's record) */
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
    char *hex = BN_bn2hex(bn);
    for (char *h = hex; *h; h++)
        *h = (char)(*h >= 'A' && *h <= 'F' ? *h + 32 : *h);
    assert_string_equal(chain.serial, hex);
    OPENSSL_free(hex);
    BN_free(bn);
    assert_int_equal(chain.not_before_s, now - 120);
    assert_int_equal(chain.not_after_s, now + 3600);
    assert_int_equal(EVP_PKEY_get_base_id(X509_get0_pubkey(leaf)), ec ? EVP_PKEY_EC : EVP_PKEY_RSA);
    X509_free(leaf);
    X509_free(root);
    wf_ca_chain_free(&chain);
    free(csr);
    EVP_PKEY_free(key);
    wf_ca_free(ca);
}

static void test_issue_rsa_csr(void **state)
{
    (void)state;
    issue_for(false);
}

static void test_issue_ecdsa_csr(void **state)
{
    (void)state;
    issue_for(true);
}

/* ---- TTL rules -------------------------------------------------------------------------- */

static int64_t not_after_for(const wf_ca *ca, int64_t ttl, int64_t now, int *rc, char *err)
{
    EVP_PKEY *key = new_key(true);
    char *csr = make_csr(key);
    wf_ca_chain chain;
    int64_t na = 0;
    *rc = sign(ca, csr, ttl, now, &chain, err, 512);
    if (*rc == WF_CA_OK) {
        X509 *leaf = parse_pem(chain.pem[0]);
        na = t64(X509_get0_notAfter(leaf));
        X509_free(leaf);
        wf_ca_chain_free(&chain);
    }
    free(csr);
    EVP_PKEY_free(key);
    return na;
}

static void test_ttl_default_max_clamp(void **state)
{
    (void)state;
    int64_t now = now_s();
    int rc;
    char err[512];
    wf_ca *ca = self_signed(now - 60, now + 200 * 86400);
    assert_int_equal(not_after_for(ca, 0, now, &rc, err), now + 24 * 3600); /* default */
    assert_int_equal(rc, WF_CA_OK);
    assert_int_equal(not_after_for(ca, -5, now, &rc, err), now + 24 * 3600);
    assert_int_equal(not_after_for(ca, 90 * 86400, now, &rc, err), now + 90 * 86400); /* max */
    not_after_for(ca, 90 * 86400 + 1, now, &rc, err);
    assert_int_equal(rc, WF_CA_E_TTL);
    assert_string_equal(err, "requested TTL 2160h0m1s is greater than the max allowed TTL "
                             "2160h0m0s");
    assert_string_equal(wf_ca_err_name(WF_CA_E_TTL), "TTL_ERROR");
    wf_ca_free(ca);
    /* clamped to the signing cert's NotAfter */
    ca = self_signed(now - 60, now + 3600);
    assert_int_equal(not_after_for(ca, 0, now, &rc, err), now + 3600);
    assert_int_equal(wf_ca_signing_not_after(ca), now + 3600);
    wf_ca_free(ca);
}

static void test_expired_signer_refuses(void **state)
{
    (void)state;
    int64_t now = now_s();
    int rc;
    char err[512];
    wf_ca *ca = self_signed(now - 7200, now - 10);
    not_after_for(ca, 0, now, &rc, err);
    assert_int_equal(rc, WF_CA_E_CERT_GEN);
    char want[64];
    time_t t = (time_t)(now - 10);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(want, sizeof want, "signing certificate has expired at %Y-%m-%dT%H:%M:%SZ", &tm);
    assert_string_equal(err, want);
    wf_ca_free(ca);
}

static void test_bad_csr(void **state)
{
    (void)state;
    int64_t now = now_s();
    char err[512];
    wf_ca_chain chain;
    wf_ca *ca = self_signed(now - 60, now + 86400 * 30);
    assert_int_equal(sign(ca, "not a csr", 0, now, &chain, err, sizeof err), WF_CA_E_CSR);
    assert_string_equal(err, "certificate signing request is not properly encoded");
    /* a CSR whose signature does not match: signed by another key */
    EVP_PKEY *k1 = new_key(true), *k2 = new_key(true);
    X509_REQ *r = X509_REQ_new();
    X509_REQ_set_pubkey(r, k1);
    X509_REQ_sign(r, k2, EVP_sha256());
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509_REQ(b, r);
    char *pem = bio_text(b);
    assert_int_equal(sign(ca, pem, 0, now, &chain, err, sizeof err), WF_CA_E_CSR);
    assert_non_null(strstr(err, "signature"));
    assert_int_equal(
        wf_ca_sign(
            NULL,
            &(wf_ca_sign_req){.csr_pem = pem, .csr_len = strlen(pem), .san = SAN, .now_s = now},
            &chain, err, sizeof err),
        WF_CA_E_NOT_READY);
    free(pem);
    X509_REQ_free(r);
    EVP_PKEY_free(k1);
    EVP_PKEY_free(k2);
    wf_ca_free(ca);
}

/* ---- plug-in bundle -------------------------------------------------------------------- */

typedef struct plugin {
    EVP_PKEY *root_key, *int_key;
    X509 *root, *inter;
    char *root_pem, *int_pem, *int_key_pem, *chain_pem;
} plugin;

static void make_plugin_named(plugin *p, int64_t now, const char *root_cn)
{
    p->root_key = new_key(false);
    p->int_key = new_key(true);
    p->root = make_ca_cert(p->root_key, root_cn, NULL, NULL, now - 60, now + 365 * 86400);
    p->inter = make_ca_cert(p->int_key, "Intermediate CA", p->root, p->root_key, now - 60,
                            now + 30 * 86400);
    p->root_pem = cert_pem(p->root);
    p->int_pem = cert_pem(p->inter);
    p->int_key_pem = key_pem(p->int_key);
    size_t n = strlen(p->int_pem) + strlen(p->root_pem) + 1;
    p->chain_pem = malloc(n);
    snprintf(p->chain_pem, n, "%s%s", p->int_pem, p->root_pem);
}

static void make_plugin(plugin *p, int64_t now)
{
    make_plugin_named(p, now, "Root CA");
}

static void free_plugin(plugin *p)
{
    EVP_PKEY_free(p->root_key);
    EVP_PKEY_free(p->int_key);
    X509_free(p->root);
    X509_free(p->inter);
    free(p->root_pem);
    free(p->int_pem);
    free(p->int_key_pem);
    free(p->chain_pem);
}

static wf_ca_bundle bundle_of(const plugin *p)
{
    wf_ca_bundle b = {.ca_cert = p->int_pem,
                      .ca_cert_len = strlen(p->int_pem),
                      .ca_key = p->int_key_pem,
                      .ca_key_len = strlen(p->int_key_pem),
                      .root_cert = p->root_pem,
                      .root_cert_len = strlen(p->root_pem),
                      .cert_chain = p->chain_pem,
                      .cert_chain_len = strlen(p->chain_pem)};
    return b;
}

static void test_plugin_chain_order(void **state)
{
    (void)state;
    int64_t now = now_s();
    plugin p;
    make_plugin(&p, now);
    wf_ca_bundle b = bundle_of(&p);
    wf_ca *ca = NULL;
    char err[512];
    assert_int_equal(wf_ca_from_bundle(&b, "Secret istio-system/cacerts", &ca, err, sizeof err),
                     WF_CA_OK);
    assert_false(wf_ca_self_signed(ca));
    assert_string_equal(wf_ca_cert_chain_pem(ca), p.chain_pem);
    EVP_PKEY *key = new_key(false);
    char *csr = make_csr(key);
    wf_ca_chain chain;
    assert_int_equal(sign(ca, csr, 0, now, &chain, err, sizeof err), WF_CA_OK);
    assert_int_equal(chain.n, 3); /* leaf, cert-chain.pem, root last */
    assert_string_equal(chain.pem[1], p.chain_pem);
    assert_string_equal(chain.pem[2], p.root_pem);
    X509 *leaf = parse_pem(chain.pem[0]);
    check_leaf(leaf, key, p.inter);
    /* the leaf verifies with the root as the only anchor and the chain as untrusted certs */
    X509_STORE *st = X509_STORE_new();
    X509_STORE_add_cert(st, p.root);
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    sk_X509_push(untrusted, p.inter);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, st, leaf, untrusted);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
    assert_int_equal(X509_verify_cert(ctx), 1);
    X509_STORE_CTX_free(ctx);
    sk_X509_free(untrusted);
    X509_STORE_free(st);
    X509_free(leaf);
    wf_ca_chain_free(&chain);
    free(csr);
    EVP_PKEY_free(key);
    wf_ca_free(ca);
    free_plugin(&p);
}

static void test_plugin_bad_bundles(void **state)
{
    (void)state;
    int64_t now = now_s();
    plugin p, q;
    make_plugin(&p, now);
    make_plugin(&q, now);
    wf_ca *ca = NULL;
    char err[512];
    wf_ca_bundle b = bundle_of(&p);
    b.ca_key = q.int_key_pem; /* another key */
    b.ca_key_len = strlen(q.int_key_pem);
    assert_int_equal(wf_ca_from_bundle(&b, "X", &ca, err, sizeof err), WF_CA_E_CONFIG);
    assert_non_null(strstr(err, "does not match"));
    b = bundle_of(&p);
    b.root_cert = q.root_pem; /* a root the chain does not reach */
    b.root_cert_len = strlen(q.root_pem);
    assert_int_equal(wf_ca_from_bundle(&b, "X", &ca, err, sizeof err), WF_CA_E_CONFIG);
    assert_non_null(strstr(err, "cannot verify the cert with the provided root chain"));
    b = bundle_of(&p);
    b.root_cert = "garbage";
    b.root_cert_len = 7;
    assert_int_equal(wf_ca_from_bundle(&b, "X", &ca, err, sizeof err), WF_CA_E_CONFIG);
    assert_non_null(strstr(err, "root-cert.pem"));
    assert_null(ca);
    free_plugin(&p);
    free_plugin(&q);
}

/* A root transition (Istio's plug-in CA rotation): root-cert.pem holds the old root A first
 * and the new root B, the signing intermediate chains to B. The bundle is accepted (istiod
 * verifies against a pool of every root) and the workload's ROOTCA is the whole file. */
static void test_plugin_two_roots(void **state)
{
    (void)state;
    int64_t now = now_s();
    plugin a, b;
    make_plugin_named(&a, now, "Root A");
    make_plugin_named(&b, now, "Root B");
    size_t n = strlen(a.root_pem) + strlen(b.root_pem) + 1;
    char *both = malloc(n);
    assert_non_null(both);
    snprintf(both, n, "%s%s", a.root_pem, b.root_pem);
    wf_ca_bundle bb = bundle_of(&b);
    bb.root_cert = both;
    bb.root_cert_len = strlen(both);
    wf_ca *ca = NULL;
    char err[512];
    if (wf_ca_from_bundle(&bb, "X", &ca, err, sizeof err) != WF_CA_OK)
        fail_msg("%s", err);
    EVP_PKEY *key = new_key(true);
    char *csr = make_csr(key);
    wf_ca_chain chain;
    assert_int_equal(sign(ca, csr, 0, now, &chain, err, sizeof err), WF_CA_OK);
    assert_string_equal(chain.pem[chain.n - 1], both);
    wf_ca_chain_free(&chain);
    free(csr);
    EVP_PKEY_free(key);
    wf_ca_free(ca);
    /* a root file holding neither of the chain's roots is still refused */
    plugin c;
    make_plugin_named(&c, now, "Root C");
    bb.root_cert = c.root_pem;
    bb.root_cert_len = strlen(c.root_pem);
    ca = NULL;
    assert_int_equal(wf_ca_from_bundle(&bb, "X", &ca, err, sizeof err), WF_CA_E_CONFIG);
    free(both);
    free_plugin(&a);
    free_plugin(&b);
    free_plugin(&c);
}

/* istiod's serving certificate: the DNS and IP SANs asked for, serverAuth, chained to the CA,
 * clamped to the signing chain, and a matching private key. */
static void test_issue_server(void **state)
{
    (void)state;
    int64_t now = now_s();
    plugin p;
    make_plugin(&p, now);
    wf_ca_bundle b = bundle_of(&p);
    wf_ca *ca = NULL;
    char err[512], *chain = NULL, *key = NULL;
    assert_int_equal(wf_ca_from_bundle(&b, "X", &ca, err, sizeof err), WF_CA_OK);
    static const char *const dns[] = {"istiod.istio-system.svc"};
    static const char *const ips[] = {"127.0.0.1"};
    assert_int_equal(
        wf_ca_issue_server(ca, dns, 1, ips, 1, now, 86400 * 365, &chain, &key, err, sizeof err),
        WF_CA_OK);
    X509 *leaf = parse_pem(chain);
    assert_non_null(leaf);
    assert_int_equal(X509_check_host(leaf, "istiod.istio-system.svc", 0, 0, NULL), 1);
    assert_int_equal(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_host(leaf, "other.svc", 0, 0, NULL), 0);
    /* clamped to the intermediate's 30 days */
    assert_true(ASN1_TIME_cmp_time_t(X509_get0_notAfter(leaf), now + 31 * 86400) < 0);
    assert_non_null(strstr(chain, p.int_pem)); /* the leaf, then the CA's chain */
    BIO *kb = BIO_new_mem_buf(key, -1);
    EVP_PKEY *k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
    assert_non_null(k);
    assert_int_equal(X509_check_private_key(leaf, k), 1);
    EVP_PKEY_free(k);
    BIO_free(kb);
    X509_free(leaf);
    free(chain);
    free(key);
    wf_ca_free(ca);
    free_plugin(&p);
}

/* ---- the CA directory -------------------------------------------------------------------- */

static char *read_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 65536);
    fread(buf, 1, 65535, f);
    fclose(f);
    return buf;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static mode_t mode_of(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 0777;
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_dir_root_kept_across_reload(void **state)
{
    (void)state;
    char base[] = "/tmp/weft-ca-test-XXXXXX", dir[256], err[512];
    assert_non_null(mkdtemp(base));
    snprintf(dir, sizeof dir, "%s/state/ca", base); /* parents are made */
    int64_t now = now_s();
    wf_ca *a = NULL, *b = NULL;
    assert_int_equal(wf_ca_load_dir(dir, "example.org", now, &a, err, sizeof err), WF_CA_OK);
    assert_true(wf_ca_self_signed(a));
    assert_int_equal(mode_of(dir, "ca-key.pem"), 0600);
    assert_int_equal(mode_of(dir, "root-cert.pem"), 0644);
    assert_int_equal(mode_of(dir, "."), 0700);
    char *root = read_file(dir, "root-cert.pem"), *cert = read_file(dir, "ca-cert.pem");
    char *chain = read_file(dir, "cert-chain.pem");
    assert_string_equal(root, cert);
    assert_string_equal(chain, "");
    assert_string_equal(wf_ca_root_pem(a), root);
    assert_int_equal(wf_ca_root_not_after(a), now + 3650LL * 86400);
    X509 *x = parse_pem(root);
    char name[128];
    X509_NAME_oneline(X509_get_subject_name(x), name, sizeof name);
    assert_string_equal(name, "/O=example.org");
    EVP_PKEY *pk = X509_get0_pubkey(x);
    assert_int_equal(EVP_PKEY_get_base_id(pk), EVP_PKEY_RSA);
    assert_int_equal(EVP_PKEY_get_bits(pk), 2048);
    assert_true(X509_check_ca(x) >= 1);
    X509_free(x);
    /* reloaded (another trust domain now): the same root, not a new one */
    assert_int_equal(wf_ca_load_dir(dir, "other.org", now + 5, &b, err, sizeof err), WF_CA_OK);
    assert_string_equal(wf_ca_root_pem(b), root);
    /* a leaf of the first load verifies with the second's root */
    EVP_PKEY *key = new_key(true);
    char *csr = make_csr(key);
    wf_ca_chain ch;
    assert_int_equal(sign(a, csr, 0, now, &ch, err, sizeof err), WF_CA_OK);
    X509 *leaf = parse_pem(ch.pem[0]), *root_b = parse_pem(wf_ca_root_pem(b));
    assert_int_equal(X509_verify(leaf, X509_get0_pubkey(root_b)), 1);
    X509_free(leaf);
    X509_free(root_b);
    wf_ca_chain_free(&ch);
    free(csr);
    EVP_PKEY_free(key);
    wf_ca_free(a);
    wf_ca_free(b);
    /* a partial bundle is refused with Istio's message */
    char path[512];
    snprintf(path, sizeof path, "%s/cert-chain.pem", dir);
    unlink(path);
    b = NULL;
    assert_int_equal(wf_ca_load_dir(dir, "example.org", now, &b, err, sizeof err), WF_CA_E_CONFIG);
    char want[600];
    snprintf(want, sizeof want, "incomplete signing CA bundle detected at %s", dir);
    assert_string_equal(err, want);
    assert_null(b);
    free(root);
    free(cert);
    free(chain);
    rm_rf(base);
}

static void test_dir_kubernetes_tls_layout(void **state)
{
    (void)state;
    char dir[] = "/tmp/weft-ca-test-XXXXXX", err[512];
    assert_non_null(mkdtemp(dir));
    int64_t now = now_s();
    plugin p;
    make_plugin(&p, now);
    write_file(dir, "tls.crt", p.int_pem);
    write_file(dir, "tls.key", p.int_key_pem);
    write_file(dir, "ca.crt", p.root_pem);
    wf_ca *ca = NULL;
    assert_int_equal(wf_ca_load_dir(dir, "cluster.local", now, &ca, err, sizeof err), WF_CA_OK);
    assert_false(wf_ca_self_signed(ca));
    assert_string_equal(wf_ca_cert_chain_pem(ca), p.int_pem); /* tls.crt is the chain */
    assert_string_equal(wf_ca_root_pem(ca), p.root_pem);
    wf_ca_free(ca);
    char path[512];
    snprintf(path, sizeof path, "%s/ca.crt", dir);
    unlink(path);
    ca = NULL;
    assert_int_equal(wf_ca_load_dir(dir, "cluster.local", now, &ca, err, sizeof err),
                     WF_CA_E_CONFIG);
    assert_non_null(strstr(err, "incomplete signing CA bundle detected at"));
    free_plugin(&p);
    rm_rf(dir);
}

/* A self-signed root of the directory with under 20 % of its life left is re-issued with the
 * same key and subject (istiod's root cert rotator); one with more is left alone. */
static void test_dir_root_rotated_near_expiry(void **state)
{
    (void)state;
    char dir[] = "/tmp/weft-ca-test-XXXXXX", err[512];
    assert_non_null(mkdtemp(dir));
    int64_t now = now_s();
    EVP_PKEY *key = new_key(false);
    /* 100 days of life, 50 left: kept */
    X509 *half = make_ca_cert(key, "cluster.local", NULL, NULL, now - 50 * 86400, now + 50 * 86400);
    char *half_pem = cert_pem(half), *kpem = key_pem(key);
    write_file(dir, "ca-cert.pem", half_pem);
    write_file(dir, "root-cert.pem", half_pem);
    write_file(dir, "ca-key.pem", kpem);
    write_file(dir, "cert-chain.pem", "");
    wf_ca *ca = NULL;
    assert_int_equal(wf_ca_load_dir(dir, "cluster.local", now, &ca, err, sizeof err), WF_CA_OK);
    assert_string_equal(wf_ca_root_pem(ca), half_pem);
    /* a leaf of the old root, then 10 days of 100 left: re-issued */
    EVP_PKEY *lk = new_key(true);
    char *csr = make_csr(lk);
    wf_ca_chain ch;
    assert_int_equal(sign(ca, csr, 0, now, &ch, err, sizeof err), WF_CA_OK);
    wf_ca_free(ca);
    X509 *old = make_ca_cert(key, "cluster.local", NULL, NULL, now - 90 * 86400, now + 10 * 86400);
    char *old_pem = cert_pem(old);
    write_file(dir, "ca-cert.pem", old_pem);
    write_file(dir, "root-cert.pem", old_pem);
    ca = NULL;
    assert_int_equal(wf_ca_load_dir(dir, "other.org", now, &ca, err, sizeof err), WF_CA_OK);
    assert_string_not_equal(wf_ca_root_pem(ca), old_pem);
    char *file = read_file(dir, "root-cert.pem"), *cert = read_file(dir, "ca-cert.pem");
    assert_string_equal(file, wf_ca_root_pem(ca));
    assert_string_equal(cert, file);
    assert_int_equal(mode_of(dir, "root-cert.pem"), 0644);
    X509 *root = parse_pem(file);
    assert_int_equal(X509_NAME_cmp(X509_get_subject_name(root), X509_get_subject_name(old)), 0);
    assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(root), key), 1);
    assert_int_equal(t64(X509_get0_notAfter(root)), now + 3650LL * 86400);
    assert_true(X509_check_ca(root) >= 1);
    /* the leaf issued under the old root verifies with the new one */
    X509 *leaf = parse_pem(ch.pem[0]);
    X509_STORE *st = X509_STORE_new();
    X509_STORE_add_cert(st, root);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, st, leaf, NULL);
    assert_int_equal(X509_verify_cert(ctx), 1);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(st);
    X509_free(leaf);
    X509_free(root);
    X509_free(old);
    X509_free(half);
    wf_ca_chain_free(&ch);
    free(csr);
    free(file);
    free(cert);
    free(old_pem);
    free(half_pem);
    free(kpem);
    EVP_PKEY_free(lk);
    EVP_PKEY_free(key);
    wf_ca_free(ca);
    rm_rf(dir);
}

/* Two processes on one empty directory at once: the lock makes one root, both load it. */
static void test_dir_concurrent_creation(void **state)
{
    (void)state;
    char dir[] = "/tmp/weft-ca-test-XXXXXX", err[512];
    assert_non_null(mkdtemp(dir));
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    wf_ca *ca = NULL;
    int rc = wf_ca_load_dir(dir, "cluster.local", now_s(), &ca, err, sizeof err);
    if (pid == 0) {
        const char *pem = rc == WF_CA_OK ? wf_ca_root_pem(ca) : "";
        ssize_t w = write(fds[1], pem, strlen(pem));
        _exit(w == (ssize_t)strlen(pem) && rc == WF_CA_OK ? 0 : 1);
    }
    close(fds[1]);
    assert_int_equal(rc, WF_CA_OK);
    char child[8192] = "";
    size_t n = 0;
    ssize_t r;
    while ((r = read(fds[0], child + n, sizeof child - 1 - n)) > 0)
        n += (size_t)r;
    child[n] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_string_equal(child, wf_ca_root_pem(ca));
    char *file = read_file(dir, "root-cert.pem");
    assert_string_equal(file, child);
    free(file);
    wf_ca_free(ca);
    rm_rf(dir);
}

static void test_go_duration(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(wf_ca_go_duration(86400, b, sizeof b), "24h0m0s");
    assert_string_equal(wf_ca_go_duration(90 * 86400, b, sizeof b), "2160h0m0s");
    assert_string_equal(wf_ca_go_duration(90, b, sizeof b), "1m30s");
    assert_string_equal(wf_ca_go_duration(45, b, sizeof b), "45s");
    assert_string_equal(wf_ca_go_duration(0, b, sizeof b), "0s");
    assert_string_equal(wf_ca_go_duration(3601, b, sizeof b), "1h0m1s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_rsa_csr),
        cmocka_unit_test(test_issue_ecdsa_csr),
        cmocka_unit_test(test_ttl_default_max_clamp),
        cmocka_unit_test(test_expired_signer_refuses),
        cmocka_unit_test(test_bad_csr),
        cmocka_unit_test(test_plugin_chain_order),
        cmocka_unit_test(test_plugin_bad_bundles),
        cmocka_unit_test(test_plugin_two_roots),
        cmocka_unit_test(test_issue_server),
        cmocka_unit_test(test_dir_root_kept_across_reload),
        cmocka_unit_test(test_dir_kubernetes_tls_layout),
        cmocka_unit_test(test_dir_concurrent_creation),
        cmocka_unit_test(test_dir_root_rotated_near_expiry),
        cmocka_unit_test(test_go_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
