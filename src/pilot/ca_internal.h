/*
 * ca_internal.h - what the files of the CA module share (not a public header; the API is
 * ca.h): the wf_ca structure and the OpenSSL helpers one file calls in another.
 *
 *  - ca_bundle.c: bundles (parse, check), accessors, freeing, Go durations
 *  - ca_root.c:   the self-signed root
 *  - ca_dir.c:    the CA directory (load or create, file modes, lock)
 *  - ca_sign.c:   workload certificates for a CSR
 */
#ifndef WF_PILOT_CA_INTERNAL_H
#define WF_PILOT_CA_INTERNAL_H

#include "pilot/ca.h"

#include <openssl/evp.h>
#include <openssl/x509.h>

struct wf_ca {
    X509 *signing;          /* signs workload certificates */
    EVP_PKEY *key;          /* its private key */
    X509 *root;             /* the trust anchor */
    STACK_OF(X509) * chain; /* cert-chain.pem parsed (may be empty) */
    char *root_pem;         /* NUL-terminated */
    char *chain_pem;        /* "" for a self-signed root */
    char *where;            /* where the material came from */
    bool self_signed;       /* signing cert == root */
    int64_t root_not_after; /* seconds since the epoch */
    int64_t signing_not_after;
    int64_t chain_not_after; /* earliest NotAfter of the signing cert and its chain */
};

/* An ASN1_TIME as seconds since the epoch (0 when unreadable). */
int64_t wf_ca_asn1_time(const ASN1_TIME *t);
/* The bytes written into memory BIO b as a heap string (NUL-terminated), NULL when out of
 * memory. */
char *wf_ca_bio_text(BIO *b);
/* x as PEM text (heap, NUL-terminated) or NULL when out of memory. */
char *wf_ca_x509_pem(X509 *x);
/* A random positive 128-bit serial into x. 0 or -1. */
int wf_ca_set_serial(X509 *x);
/* Adds one extension given in OpenSSL's config syntax ("critical,CA:TRUE"), with issuer as
 * the issuing cert (NULL = x itself). 0 or -1. */
int wf_ca_add_ext(X509 *x, X509 *issuer, int nid, const char *value);
/* Signs x with key (SHA-256; none for Ed25519/Ed448 keys). 0 or -1. */
int wf_ca_x509_sign(X509 *x, EVP_PKEY *key);
/* A new self-signed root's PEM texts (heap): certificate and RSA key (ca_root.c). 0 or -1. */
int wf_ca_root_pems(const char *trust_domain, int64_t nb, int64_t na, char **cert_pem, char **kpem,
                    char *err, size_t cap);
/* The self-signed root of ca re-issued with the same key and subject, valid nb..na: PEM text
 * (heap) or NULL (ca_root.c). */
char *wf_ca_reissue_root(const wf_ca *ca, int64_t nb, int64_t na);
/* Writes the OpenSSL error queue's first entry (or "unknown error") into err after prefix,
 * and clears the queue. */
void wf_ca_ssl_err(char *err, size_t cap, const char *prefix);

#endif
