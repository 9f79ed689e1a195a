/*
 * ca_root.c - the self-signed root (istiod's NewSelfSignedIstioCAOptions with
 * GenCertKeyFromOptions): RSA 2048, subject O=<trust domain>, CA:TRUE, key usage
 * digitalSignature + keyEncipherment + keyCertSign (critical, as Go writes it), subject key
 * id, random serial. See ca.h.
 */
#include "pilot/ca_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

/* A root for key named name (self-issued), valid nb..na. */
static X509 *make_named_root(EVP_PKEY *key, const X509_NAME *name, int64_t nb, int64_t na)
{
    X509 *x = X509_new();
    bool ok = x && X509_set_version(x, 2) == 1 && wf_ca_set_serial(x) == 0 &&
              X509_set_subject_name(x, name) == 1 && X509_set_issuer_name(x, name) == 1 &&
              ASN1_TIME_set(X509_getm_notBefore(x), (time_t)nb) &&
              ASN1_TIME_set(X509_getm_notAfter(x), (time_t)na) && X509_set_pubkey(x, key) == 1 &&
              wf_ca_add_ext(x, NULL, NID_basic_constraints, "critical,CA:TRUE") == 0 &&
              wf_ca_add_ext(x, NULL, NID_key_usage,
                            "critical,digitalSignature,keyEncipherment,keyCertSign") == 0 &&
              wf_ca_add_ext(x, NULL, NID_subject_key_identifier, "hash") == 0 &&
              wf_ca_x509_sign(x, key) == 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static X509 *make_root(EVP_PKEY *key, const char *trust_domain, int64_t nb, int64_t na)
{
    X509_NAME *name = X509_NAME_new();
    X509 *x =
        name && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                           (const unsigned char *)trust_domain, -1, -1, 0) == 1
            ? make_named_root(key, name, nb, na)
            : NULL;
    X509_NAME_free(name);
    return x;
}

char *wf_ca_reissue_root(const wf_ca *ca, int64_t nb, int64_t na)
{
    X509 *x = make_named_root(ca->key, X509_get_subject_name(ca->root), nb, na);
    char *pem = x ? wf_ca_x509_pem(x) : NULL;
    X509_free(x);
    return pem;
}

static char *key_pem(EVP_PKEY *key)
{
    BIO *b = BIO_new(BIO_s_mem());
    /* "RSA PRIVATE KEY" (PKCS#1), as istiod writes ca-key.pem */
    char *out = b && PEM_write_bio_PrivateKey_traditional(b, key, NULL, NULL, 0, NULL, NULL) == 1
                    ? wf_ca_bio_text(b)
                    : NULL;
    BIO_free(b);
    return out;
}

int wf_ca_root_pems(const char *trust_domain, int64_t nb, int64_t na, char **cert_pem, char **kpem,
                    char *err, size_t cap)
{
    EVP_PKEY *key = EVP_RSA_gen(WF_CA_ROOT_RSA_BITS);
    X509 *x = key ? make_root(key, trust_domain, nb, na) : NULL;
    *cert_pem = x ? wf_ca_x509_pem(x) : NULL;
    *kpem = x ? key_pem(key) : NULL;
    X509_free(x);
    EVP_PKEY_free(key);
    if (!*cert_pem || !*kpem) {
        free(*cert_pem);
        free(*kpem);
        *cert_pem = *kpem = NULL;
        wf_ca_ssl_err(err, cap, "cannot create the self-signed root");
        return -1;
    }
    return 0;
}

int wf_ca_new_self_signed(const char *trust_domain, int64_t not_before_s, int64_t not_after_s,
                          wf_ca **out, char *err, size_t cap)
{
    char *cert, *key;
    if (wf_ca_root_pems(trust_domain, not_before_s, not_after_s, &cert, &key, err, cap) != 0)
        return WF_CA_E_CONFIG;
    wf_ca_bundle b = {.ca_cert = cert,
                      .ca_cert_len = strlen(cert),
                      .ca_key = key,
                      .ca_key_len = strlen(key),
                      .root_cert = cert,
                      .root_cert_len = strlen(cert)};
    int rc = wf_ca_from_bundle(&b, "self-signed root", out, err, cap);
    OPENSSL_cleanse(key, strlen(key));
    free(cert);
    free(key);
    return rc;
}
