/*
 * tls_testcerts.h - certificates made in the test with OpenSSL's API (ECDSA P-256): a CA
 * and leaves it signs with URI / DNS SANs, as PEM strings (malloc'd; free with free()).
 * Header-only, for the TLS unit tests.
 */
#ifndef WF_TEST_TLS_TESTCERTS_H
#define WF_TEST_TLS_TESTCERTS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

typedef struct tc_cert {
    EVP_PKEY *key;
    X509 *cert;
    char *cert_pem, *key_pem;
} tc_cert;

static char *tc_pem_of(int (*wr)(BIO *, void *), void *obj)
{
    BIO *b = BIO_new(BIO_s_mem());
    wr(b, obj);
    char *p = NULL;
    long n = BIO_get_mem_data(b, &p);
    char *s = malloc((size_t)n + 1);
    memcpy(s, p, (size_t)n);
    s[n] = '\0';
    BIO_free(b);
    return s;
}

static int tc_wr_cert(BIO *b, void *x)
{
    return PEM_write_bio_X509(b, x);
}

static int tc_wr_key(BIO *b, void *k)
{
    return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

static void tc_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v;
    X509V3_set_ctx(&v, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v, nid, value);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
}

/* A certificate for cn signed by ca (NULL: self-signed CA). san: "URI:spiffe://...,DNS:x"
 * or NULL. days_from / days_to: validity relative to now. */
static tc_cert tc_make(const char *cn, const tc_cert *ca, const char *san, long days_from,
                       long days_to)
{
    static long serial = 1;
    tc_cert c = {0};
    c.key = EVP_EC_gen("P-256");
    c.cert = X509_new();
    X509_set_version(c.cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c.cert), serial++);
    X509_gmtime_adj(X509_getm_notBefore(c.cert), days_from * 86400L);
    X509_gmtime_adj(X509_getm_notAfter(c.cert), days_to * 86400L);
    X509_NAME *n = X509_get_subject_name(c.cert);
    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"weft-test", -1, -1, 0);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(c.cert, ca ? X509_get_subject_name(ca->cert) : n);
    X509_set_pubkey(c.cert, c.key);
    X509 *issuer = ca ? ca->cert : c.cert;
    if (!ca) {
        tc_ext(c.cert, issuer, NID_basic_constraints, "critical,CA:TRUE");
        tc_ext(c.cert, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        tc_ext(c.cert, issuer, NID_basic_constraints, "critical,CA:FALSE");
        tc_ext(c.cert, issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
        tc_ext(c.cert, issuer, NID_ext_key_usage, "serverAuth,clientAuth");
    }
    if (san)
        tc_ext(c.cert, issuer, NID_subject_alt_name, san);
    X509_sign(c.cert, ca ? ca->key : c.key, EVP_sha256());
    c.cert_pem = tc_pem_of(tc_wr_cert, c.cert);
    c.key_pem = tc_pem_of(tc_wr_key, c.key);
    return c;
}

static void tc_free(tc_cert *c)
{
    EVP_PKEY_free(c->key);
    X509_free(c->cert);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof(*c));
}

#endif
