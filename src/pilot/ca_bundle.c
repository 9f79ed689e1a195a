/*
 * ca_bundle.c - CA bundles: parsing and checking a bundle of PEM texts (istiod's
 * NewVerifiedKeyCertBundleFromPem), the accessors, freeing, and the OpenSSL helpers of the
 * module (ca_internal.h). See ca.h.
 */
#include "pilot/ca_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

const char *wf_ca_err_name(wf_ca_err e)
{
    switch (e) {
    case WF_CA_E_NOT_READY:
        return "CA_NOT_READY";
    case WF_CA_E_CSR:
        return "CSR_ERROR";
    case WF_CA_E_TTL:
        return "TTL_ERROR";
    case WF_CA_E_CERT_GEN:
        return "CERT_GEN_ERROR";
    case WF_CA_E_CONFIG:
        return "CA_ILLEGAL_CONFIG";
    default:
        return "";
    }
}

const char *wf_ca_go_duration(int64_t s, char *buf, size_t cap)
{
    const char *sign = s < 0 ? "-" : "";
    uint64_t u = s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
    uint64_t h = u / 3600, m = u / 60 % 60, sec = u % 60;
    if (h)
        snprintf(buf, cap, "%s%lluh%llum%llus", sign, (unsigned long long)h, (unsigned long long)m,
                 (unsigned long long)sec);
    else if (m)
        snprintf(buf, cap, "%s%llum%llus", sign, (unsigned long long)m, (unsigned long long)sec);
    else
        snprintf(buf, cap, "%s%llus", sign, (unsigned long long)sec);
    return buf;
}

/* ---- OpenSSL helpers ----------------------------------------------------------------------- */

void wf_ca_ssl_err(char *err, size_t cap, const char *prefix)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "unknown error";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    snprintf(err, cap, "%s: %s", prefix, buf);
    ERR_clear_error();
}

int64_t wf_ca_asn1_time(const ASN1_TIME *t)
{
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

char *wf_ca_bio_text(BIO *b)
{
    char *data;
    long n = b ? BIO_get_mem_data(b, &data) : -1;
    return n >= 0 ? strndup(data, (size_t)n) : NULL;
}

char *wf_ca_x509_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = b && PEM_write_bio_X509(b, x) == 1 ? wf_ca_bio_text(b) : NULL;
    BIO_free(b);
    return out;
}

int wf_ca_set_serial(X509 *x)
{
    unsigned char r[16];
    if (RAND_bytes(r, sizeof r) != 1)
        return -1;
    r[0] &= 0x7f; /* positive, below 2^127 */
    r[0] |= 0x01; /* and never short */
    BIGNUM *bn = BN_bin2bn(r, sizeof r, NULL);
    ASN1_INTEGER *ai = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
    int rc = ai && X509_set_serialNumber(x, ai) == 1 ? 0 : -1;
    ASN1_INTEGER_free(ai);
    BN_free(bn);
    return rc;
}

int wf_ca_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int rc = e && X509_add_ext(x, e, -1) == 1 ? 0 : -1;
    X509_EXTENSION_free(e);
    return rc;
}

int wf_ca_x509_sign(X509 *x, EVP_PKEY *key)
{
    int id = EVP_PKEY_get_base_id(key);
    const EVP_MD *md = id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? NULL : EVP_sha256();
    return X509_sign(x, key, md) > 0 ? 0 : -1;
}

/* ---- bundles -------------------------------------------------------------------------------- */

static BIO *mem_bio(const char *p, size_t len)
{
    return BIO_new_mem_buf(p, (int)len);
}

/* The first certificate of a PEM text, NULL when none parses. */
static X509 *read_cert(const char *p, size_t len)
{
    BIO *b = len ? mem_bio(p, len) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return x;
}

/* Every certificate of a PEM text into *out (may be empty). 0, or -1 when a block that looks
 * like a certificate does not parse or memory runs out. */
static int read_certs(const char *p, size_t len, STACK_OF(X509) * *out)
{
    STACK_OF(X509) *st = sk_X509_new_null();
    BIO *b = len ? mem_bio(p, len) : NULL;
    if (!st || (len && !b)) {
        sk_X509_free(st);
        BIO_free(b);
        return -1;
    }
    X509 *x;
    while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (!sk_X509_push(st, x)) {
            X509_free(x);
            sk_X509_pop_free(st, X509_free);
            BIO_free(b);
            return -1;
        }
    }
    BIO_free(b);
    ERR_clear_error(); /* the end of the text */
    bool has_block = len && memmem(p, len, "-----BEGIN", 10) != NULL;
    if (has_block && sk_X509_num(st) == 0) {
        sk_X509_free(st);
        return -1;
    }
    *out = st;
    return 0;
}

static EVP_PKEY *read_key(const char *p, size_t len)
{
    BIO *b = len ? mem_bio(p, len) : NULL;
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return k;
}

/* Signing cert + chain verify up to the root (times are not checked here: an expired signing
 * cert is refused when signing, with Istio's message). */
/* Adds every certificate of root-cert.pem to st: during a root transition the file holds the
 * old and the new root, and the signing certificate may chain to either (istiod verifies
 * against a pool of all of them). 0, or -1. */
static int add_roots(X509_STORE *st, const wf_ca_bundle *b)
{
    STACK_OF(X509) *roots = NULL;
    if (read_certs(b->root_cert, b->root_cert_len, &roots) != 0)
        return -1;
    int rc = sk_X509_num(roots) > 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < sk_X509_num(roots); i++)
        if (X509_STORE_add_cert(st, sk_X509_value(roots, i)) != 1)
            rc = -1;
    sk_X509_pop_free(roots, X509_free);
    return rc;
}

static int verify_chain(wf_ca *ca, const wf_ca_bundle *b, const char *where, char *err, size_t cap)
{
    X509_STORE *st = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = -1;
    if (st && ctx && add_roots(st, b) == 0 &&
        X509_STORE_CTX_init(ctx, st, ca->signing, ca->chain) == 1) {
        X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_NO_CHECK_TIME);
        if (X509_verify_cert(ctx) == 1) {
            ok = 0;
        } else {
            snprintf(err, cap,
                     "%s: cannot verify the cert with the provided root chain and cert pool: %s",
                     where, X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        }
    } else {
        snprintf(err, cap, "out of memory");
    }
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(st);
    ERR_clear_error();
    return ok;
}

static void set_times(wf_ca *ca)
{
    ca->root_not_after = wf_ca_asn1_time(X509_get0_notAfter(ca->root));
    ca->signing_not_after = wf_ca_asn1_time(X509_get0_notAfter(ca->signing));
    ca->chain_not_after = ca->signing_not_after;
    for (int i = 0; i < sk_X509_num(ca->chain); i++) {
        int64_t t = wf_ca_asn1_time(X509_get0_notAfter(sk_X509_value(ca->chain, i)));
        if (t < ca->chain_not_after)
            ca->chain_not_after = t;
    }
}

/* Parses the bundle's PEM texts into ca. */
static int parse_bundle(wf_ca *ca, const wf_ca_bundle *b, const char *where, char *err, size_t cap)
{
    if (!(ca->signing = read_cert(b->ca_cert, b->ca_cert_len))) {
        snprintf(err, cap, "%s: failed to parse the signing certificate (ca-cert.pem)", where);
        return -1;
    }
    if (!(ca->key = read_key(b->ca_key, b->ca_key_len))) {
        snprintf(err, cap, "%s: failed to parse the signing key (ca-key.pem)", where);
        return -1;
    }
    if (!(ca->root = read_cert(b->root_cert, b->root_cert_len))) {
        snprintf(err, cap, "%s: failed to parse the root certificate (root-cert.pem)", where);
        return -1;
    }
    if (read_certs(b->cert_chain, b->cert_chain_len, &ca->chain) != 0) {
        snprintf(err, cap, "%s: failed to parse the cert chain (cert-chain.pem)", where);
        return -1;
    }
    return 0;
}

static int check_bundle(wf_ca *ca, const wf_ca_bundle *b, const char *where, char *err, size_t cap)
{
    if (X509_check_private_key(ca->signing, ca->key) != 1) {
        snprintf(err, cap,
                 "%s: the signing key (ca-key.pem) does not match the signing "
                 "certificate (ca-cert.pem)",
                 where);
        return -1;
    }
    if (X509_check_ca(ca->signing) < 1) {
        snprintf(err, cap, "%s: the signing certificate (ca-cert.pem) is not a CA", where);
        return -1;
    }
    return verify_chain(ca, b, where, err, cap);
}

int wf_ca_from_bundle(const wf_ca_bundle *b, const char *where, wf_ca **out, char *err, size_t cap)
{
    wf_ca *ca = calloc(1, sizeof *ca);
    if (!ca) {
        snprintf(err, cap, "out of memory");
        return WF_CA_E_CONFIG;
    }
    ERR_clear_error();
    int rc = parse_bundle(ca, b, where, err, cap) || check_bundle(ca, b, where, err, cap);
    ERR_clear_error();
    if (!rc) {
        ca->self_signed = X509_cmp(ca->signing, ca->root) == 0;
        ca->root_pem = strndup(b->root_cert, b->root_cert_len);
        ca->chain_pem = strndup(b->cert_chain ? b->cert_chain : "", b->cert_chain_len);
        ca->where = strdup(where);
        rc = !ca->root_pem || !ca->chain_pem || !ca->where;
        if (rc)
            snprintf(err, cap, "out of memory");
    }
    if (rc) {
        wf_ca_free(ca);
        return WF_CA_E_CONFIG;
    }
    set_times(ca);
    *out = ca;
    return WF_CA_OK;
}

/* ---- accessors --------------------------------------------------------------------------- */

const char *wf_ca_root_pem(const wf_ca *ca)
{
    return ca->root_pem;
}

int64_t wf_ca_root_not_after(const wf_ca *ca)
{
    return ca->root_not_after;
}

int64_t wf_ca_signing_not_after(const wf_ca *ca)
{
    return ca->signing_not_after;
}

int64_t wf_ca_root_not_before(const wf_ca *ca)
{
    return wf_ca_asn1_time(X509_get0_notBefore(ca->root));
}

int64_t wf_ca_signing_not_before(const wf_ca *ca)
{
    return wf_ca_asn1_time(X509_get0_notBefore(ca->signing));
}

const char *wf_ca_cert_chain_pem(const wf_ca *ca)
{
    return ca->chain_pem;
}

bool wf_ca_self_signed(const wf_ca *ca)
{
    return ca->self_signed;
}

const char *wf_ca_where(const wf_ca *ca)
{
    return ca->where;
}

void wf_ca_free(wf_ca *ca)
{
    if (!ca)
        return;
    X509_free(ca->signing);
    EVP_PKEY_free(ca->key);
    X509_free(ca->root);
    sk_X509_pop_free(ca->chain, X509_free);
    free(ca->root_pem);
    free(ca->chain_pem);
    free(ca->where);
    free(ca);
}
