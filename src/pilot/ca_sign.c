/*
 * ca_sign.c - workload certificates for a CSR (istiod's IstioCA.sign and util.GenCertFromCSR):
 * TTL rules, the certificate's properties of security.md §1.2, and the chain returned. See
 * ca.h.
 */
#include "pilot/ca_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/timefmt.h"

void wf_ca_chain_free(wf_ca_chain *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->pem[i]);
    c->n = 0;
}

static X509_REQ *parse_csr(const char *pem, size_t len, char *err, size_t cap)
{
    BIO *b = len ? BIO_new_mem_buf(pem, (int)len) : NULL;
    X509_REQ *req = b ? PEM_read_bio_X509_REQ(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    if (!req)
        snprintf(err, cap, "certificate signing request is not properly encoded");
    return req;
}

/* The names a certificate is issued for. */
typedef struct leaf_names {
    const char *uri;        /* a workload's SPIFFE ID, or NULL */
    const char *const *dns; /* a server's DNS names */
    size_t ndns;
    const char *const *ips; /* and IP addresses (text) */
    size_t nips;
} leaf_names;

static int push_name(GENERAL_NAMES *gens, int type, const char *v)
{
    GENERAL_NAME *gn = GENERAL_NAME_new();
    if (!gn)
        return -1;
    if (type == GEN_IPADD) {
        ASN1_OCTET_STRING *ip = a2i_IPADDRESS(v);
        if (!ip) {
            GENERAL_NAME_free(gn);
            return -1;
        }
        GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);
    } else {
        ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();
        if (!ia5 || ASN1_STRING_set(ia5, v, (int)strlen(v)) != 1) {
            ASN1_IA5STRING_free(ia5);
            GENERAL_NAME_free(gn);
            return -1;
        }
        GENERAL_NAME_set0_value(gn, type, ia5);
    }
    if (!sk_GENERAL_NAME_push(gens, gn)) {
        GENERAL_NAME_free(gn);
        return -1;
    }
    return 0;
}

/* The SAN extension, critical (the subject is empty). */
static int add_san(X509 *x, const leaf_names *n)
{
    GENERAL_NAMES *gens = GENERAL_NAMES_new();
    int rc = gens && (!n->uri || push_name(gens, GEN_URI, n->uri) == 0) ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n->ndns; i++)
        rc = push_name(gens, GEN_DNS, n->dns[i]);
    for (size_t i = 0; rc == 0 && i < n->nips; i++)
        rc = push_name(gens, GEN_IPADD, n->ips[i]);
    if (rc == 0)
        rc = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 1, X509V3_ADD_DEFAULT) == 1 ? 0 : -1;
    GENERAL_NAMES_free(gens);
    return rc;
}

static int add_leaf_exts(X509 *x, X509 *issuer, const leaf_names *n)
{
    bool has_skid = X509_get0_subject_key_id(issuer) != NULL;
    return wf_ca_add_ext(x, issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
                   wf_ca_add_ext(x, issuer, NID_ext_key_usage, "serverAuth,clientAuth") ||
                   wf_ca_add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE") ||
                   (has_skid &&
                    wf_ca_add_ext(x, issuer, NID_authority_key_identifier, "keyid:always")) ||
                   add_san(x, n)
               ? -1
               : 0;
}

static X509 *make_leaf(const wf_ca *ca, EVP_PKEY *pub, const leaf_names *n, int64_t nb, int64_t na)
{
    X509 *x = X509_new();
    X509_NAME *empty = X509_NAME_new();
    bool ok = x && empty && X509_set_version(x, 2) == 1 && wf_ca_set_serial(x) == 0 &&
              X509_set_subject_name(x, empty) == 1 &&
              X509_set_issuer_name(x, X509_get_subject_name(ca->signing)) == 1 &&
              ASN1_TIME_set(X509_getm_notBefore(x), (time_t)nb) &&
              ASN1_TIME_set(X509_getm_notAfter(x), (time_t)na) && X509_set_pubkey(x, pub) == 1 &&
              add_leaf_exts(x, ca->signing, n) == 0 && wf_ca_x509_sign(x, ca->key) == 0;
    X509_NAME_free(empty);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* TTL rules: the lifetime in seconds, or a wf_ca_err with err. */
static int lifetime(const wf_ca *ca, const wf_ca_sign_req *r, int64_t *ttl, char *err, size_t cap)
{
    int64_t def = r->default_ttl_s > 0 ? r->default_ttl_s : WF_CA_DEFAULT_TTL_S;
    int64_t max = r->max_ttl_s > 0 ? r->max_ttl_s : WF_CA_MAX_TTL_S;
    char a[32], b[32];
    if (r->ttl_s > max) {
        snprintf(err, cap, "requested TTL %s is greater than the max allowed TTL %s",
                 wf_ca_go_duration(r->ttl_s, a, sizeof a), wf_ca_go_duration(max, b, sizeof b));
        return WF_CA_E_TTL;
    }
    if (ca->chain_not_after <= r->now_s) {
        char ts[40];
        snprintf(err, cap, "signing certificate has expired at %s",
                 wf_timestamp_s(ca->chain_not_after, ts, sizeof ts));
        return WF_CA_E_CERT_GEN;
    }
    *ttl = r->ttl_s > 0 ? r->ttl_s : def;
    return WF_CA_OK;
}

static int fill_chain(const wf_ca *ca, X509 *leaf, wf_ca_chain *out, char *err, size_t cap)
{
    out->n = 0;
    out->pem[out->n++] = wf_ca_x509_pem(leaf);
    if (ca->chain_pem[0])
        out->pem[out->n++] = strdup(ca->chain_pem);
    out->pem[out->n++] = strdup(ca->root_pem);
    for (size_t i = 0; i < out->n; i++) {
        if (!out->pem[i]) {
            wf_ca_chain_free(out);
            snprintf(err, cap, "out of memory");
            return WF_CA_E_CERT_GEN;
        }
    }
    return WF_CA_OK;
}

/* The leaf's serial (lowercase hex) and validity into out. */
static void leaf_facts(X509 *leaf, int64_t nb, int64_t na, wf_ca_chain *out)
{
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    size_t i = 0;
    for (; hex && hex[i] && i < sizeof out->serial - 1; i++)
        out->serial[i] = (char)(hex[i] >= 'A' && hex[i] <= 'F' ? hex[i] + 32 : hex[i]);
    out->serial[i] = '\0';
    OPENSSL_free(hex);
    BN_free(bn);
    out->not_before_s = nb;
    out->not_after_s = na;
}

int wf_ca_sign(const wf_ca *ca, const wf_ca_sign_req *r, wf_ca_chain *out, char *err, size_t cap)
{
    int64_t ttl = 0;
    out->n = 0;
    out->serial[0] = '\0';
    out->not_before_s = out->not_after_s = 0;
    if (!ca) {
        snprintf(err, cap, "CA is not ready");
        return WF_CA_E_NOT_READY;
    }
    X509_REQ *req = parse_csr(r->csr_pem, r->csr_len, err, cap);
    if (!req)
        return WF_CA_E_CSR;
    EVP_PKEY *pub = X509_REQ_get0_pubkey(req);
    if (!pub || X509_REQ_verify(req, pub) != 1) {
        ERR_clear_error();
        snprintf(err, cap, "failed to check the CSR signature: %s",
                 pub ? "signature verification failure" : "no public key");
        X509_REQ_free(req);
        return WF_CA_E_CSR;
    }
    int rc = lifetime(ca, r, &ttl, err, cap);
    if (rc != WF_CA_OK) {
        X509_REQ_free(req);
        return rc;
    }
    int64_t na = r->now_s + ttl;
    if (na > ca->chain_not_after)
        na = ca->chain_not_after; /* clamped to the signing cert and its chain */
    leaf_names names = {.uri = r->san};
    X509 *leaf = make_leaf(ca, pub, &names, r->now_s - WF_CA_CLOCK_SKEW_S, na);
    X509_REQ_free(req);
    if (!leaf) {
        wf_ca_ssl_err(err, cap, "failed to create the certificate");
        return WF_CA_E_CERT_GEN;
    }
    rc = fill_chain(ca, leaf, out, err, cap);
    if (rc == WF_CA_OK)
        leaf_facts(leaf, r->now_s - WF_CA_CLOCK_SKEW_S, na, out);
    X509_free(leaf);
    return rc;
}

int wf_ca_issue_server(const wf_ca *ca, const char *const *dns, size_t ndns, const char *const *ips,
                       size_t nips, int64_t now_s, int64_t ttl_s, char **chain_pem, char **key_pem,
                       char *err, size_t cap)
{
    *chain_pem = *key_pem = NULL;
    if (!ca) {
        snprintf(err, cap, "CA is not ready");
        return WF_CA_E_NOT_READY;
    }
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    int64_t na = now_s + ttl_s;
    if (na > ca->chain_not_after)
        na = ca->chain_not_after;
    leaf_names names = {.dns = dns, .ndns = ndns, .ips = ips, .nips = nips};
    X509 *leaf = key ? make_leaf(ca, key, &names, now_s - WF_CA_CLOCK_SKEW_S, na) : NULL;
    char *leaf_pem = leaf ? wf_ca_x509_pem(leaf) : NULL;
    BIO *b = BIO_new(BIO_s_mem());
    if (b && key && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1)
        *key_pem = wf_ca_bio_text(b);
    BIO_free(b);
    size_t n = leaf_pem ? strlen(leaf_pem) + strlen(ca->chain_pem) + 1 : 0;
    if (n && *key_pem && (*chain_pem = malloc(n)) != NULL)
        snprintf(*chain_pem, n, "%s%s", leaf_pem, ca->chain_pem);
    free(leaf_pem);
    X509_free(leaf);
    EVP_PKEY_free(key);
    if (!*chain_pem || !*key_pem) {
        free(*chain_pem);
        if (*key_pem)
            OPENSSL_clear_free(*key_pem, strlen(*key_pem));
        *chain_pem = *key_pem = NULL;
        wf_ca_ssl_err(err, cap, "failed to create the server certificate");
        ERR_clear_error();
        return WF_CA_E_CERT_GEN;
    }
    return WF_CA_OK;
}
