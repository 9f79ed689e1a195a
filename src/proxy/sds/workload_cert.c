/*
 * workload_cert.c - the workload key, CSR, CreateCertificate messages and rotation timing of
 * weft-proxy's certificate provider (workload_cert.h).
 */
#include "proxy/sds/workload_cert.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "xds/protowire.h"

static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && cap)
        vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    ERR_clear_error();
    return -1;
}

/* A BIO's contents as a heap string. */
static char *bio_text(BIO *b)
{
    char *p = NULL;
    long n = BIO_get_mem_data(b, &p);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) {
        if (n > 0)
            memcpy(s, p, (size_t)n);
        s[n] = '\0';
    }
    return s;
}

void wp_wc_free_secret(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

static EVP_PKEY *new_key(bool ecdsa)
{
    return ecdsa ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                 : EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
}

/* The URI SAN extension (critical: the subject is empty). */
static int add_san(X509_REQ *req, const char *spiffe_id)
{
    char val[600];
    snprintf(val, sizeof(val), "critical,URI:%s", spiffe_id);
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, val);
    int ok = exts && e && sk_X509_EXTENSION_push(exts, e) > 0;
    if (!ok)
        X509_EXTENSION_free(e);
    ok = ok && X509_REQ_add_extensions(req, exts) == 1;
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    return ok ? 0 : -1;
}

int wp_wc_make_csr(bool ecdsa, const char *spiffe_id, char **key_pem, char **csr_pem, char *err,
                   size_t cap)
{
    *key_pem = *csr_pem = NULL;
    EVP_PKEY *k = new_key(ecdsa);
    if (!k)
        return fail(err, cap, "cannot generate the %s key", ecdsa ? "ECDSA P-256" : "RSA 2048");
    X509_REQ *req = X509_REQ_new();
    BIO *kb = BIO_new(BIO_s_mem()), *cb = BIO_new(BIO_s_mem());
    bool ok = req && kb && cb && X509_REQ_set_version(req, 0) == 1 &&
              X509_REQ_set_pubkey(req, k) == 1 &&
              (!spiffe_id || !*spiffe_id || add_san(req, spiffe_id) == 0) &&
              X509_REQ_sign(req, k, EVP_sha256()) > 0 && PEM_write_bio_X509_REQ(cb, req) == 1 &&
              PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL) == 1;
    if (ok) {
        *key_pem = bio_text(kb);
        *csr_pem = bio_text(cb);
        ok = *key_pem && *csr_pem;
    }
    if (kb) {
        char *p = NULL;
        long n = BIO_get_mem_data(kb, &p);
        if (n > 0)
            OPENSSL_cleanse(p, (size_t)n);
    }
    BIO_free(kb);
    BIO_free(cb);
    X509_REQ_free(req);
    EVP_PKEY_free(k);
    if (!ok) {
        wp_wc_free_secret(*key_pem);
        free(*csr_pem);
        *key_pem = *csr_pem = NULL;
        return fail(err, cap, "cannot build the CSR");
    }
    return 0;
}

void wp_wc_encode_request(const char *csr_pem, int64_t ttl_s, wf_strbuf *out)
{
    wf_pb_put_bytes(out, 1, csr_pem, strlen(csr_pem));
    if (ttl_s)
        wf_pb_put_uint(out, 2, (uint64_t)ttl_s);
}

int wp_wc_decode_response(const uint8_t *msg, size_t len, char **chain, char **root, char *err,
                          size_t cap)
{
    *chain = *root = NULL;
    wf_pb_reader r;
    wf_pb_reader_init(&r, msg, len);
    wf_pb_field f;
    wf_strbuf b = {0};
    const uint8_t *last = NULL;
    size_t last_len = 0;
    int rc;
    while ((rc = wf_pb_next(&r, &f)) == 1) {
        if (f.num != 1 || f.wire != WF_PB_LEN || f.len == 0)
            continue;
        wf_strbuf_append(&b, (const char *)f.p, f.len);
        if (f.p[f.len - 1] != '\n')
            wf_strbuf_putc(&b, '\n');
        last = f.p;
        last_len = f.len;
    }
    if (rc < 0 || !last) {
        wf_strbuf_free(&b);
        return fail(err, cap,
                    rc < 0 ? "malformed IstioCertificateResponse"
                           : "IstioCertificateResponse has no cert_chain");
    }
    *root = malloc(last_len + 2);
    if (wf_strbuf_failed(&b) || !*root) {
        wf_strbuf_free(&b);
        free(*root);
        *root = NULL;
        return fail(err, cap, "out of memory");
    }
    memcpy(*root, last, last_len);
    size_t n = last_len;
    if ((*root)[n - 1] != '\n')
        (*root)[n++] = '\n';
    (*root)[n] = '\0';
    *chain = wf_strbuf_take(&b);
    return 0;
}

static int64_t asn1_time_s(const ASN1_TIME *t)
{
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

int wp_wc_cert_facts(const char *pem, size_t len, int64_t *not_before, int64_t *not_after,
                     char *serial, size_t scap)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!x)
        return fail(NULL, 0, "no certificate");
    *not_before = asn1_time_s(X509_get0_notBefore(x));
    *not_after = asn1_time_s(X509_get0_notAfter(x));
    if (serial && scap) {
        BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
        char *hex = bn ? BN_bn2hex(bn) : NULL;
        serial[0] = '\0';
        if (hex) {
            const char *h = hex; /* BN_bn2hex: two digits a byte, as Envoy prints it */
            size_t i = 0;
            for (; h[i] && i + 1 < scap; i++)
                serial[i] = (char)(h[i] >= 'A' && h[i] <= 'F' ? h[i] - 'A' + 'a' : h[i]);
            serial[i] = '\0';
        }
        OPENSSL_free(hex);
        BN_free(bn);
    }
    X509_free(x);
    return 0;
}

uint64_t wp_wc_rotate_delay_ms(int64_t created_ms, int64_t expire_ms, int64_t now_ms, double ratio,
                               double jitter_draw)
{
    double life = (double)(expire_ms - created_ms);
    double grace = life * (ratio + jitter_draw);
    double delay = (double)expire_ms - grace - (double)now_ms;
    return delay > 0 ? (uint64_t)delay : 0;
}
