/*
 * ads_secrets.c - credentialName secrets from the xDS stream into the secret store
 * (ads_secrets.h).
 */
#include "proxy/sds/ads_secrets.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "core/base64.h"
#include "proxy/sds/workload_cert.h"

/* A DataSource's bytes as a heap NUL-terminated string; NULL when absent or not decodable. */
static char *data_source(const json_t *ds)
{
    const char *b = json_string_value(json_object_get(ds, "inline_bytes"));
    const char *s = json_string_value(json_object_get(ds, "inline_string"));
    if (s)
        return strdup(s);
    if (!b)
        return NULL;
    size_t n = strlen(b), len = 0;
    char *out = malloc(3 * ((n + 3) / 4) + 1);
    if (!out || !wf_base64_decode(b, n, 0, (unsigned char *)out, &len)) {
        free(out);
        return NULL;
    }
    out[len] = '\0';
    return out;
}

static X509 *first_cert(const char *pem)
{
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return x;
}

/* The reason a chain and key cannot be loaded, NULL when they can. */
static const char *check_key_cert(const char *chain, const char *key)
{
    X509 *x = first_cert(chain);
    if (!x)
        return "Failed to load certificate chain from <inline>";
    BIO *b = key ? BIO_new_mem_buf(key, -1) : NULL;
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    const char *why = NULL;
    if (!k)
        why = "Failed to load private key from <inline>";
    else if (X509_check_private_key(x, k) != 1)
        why = "Failed to load private key from <inline>: the private key does not match the "
              "certificate";
    EVP_PKEY_free(k);
    X509_free(x);
    return why;
}

/* One decoded Secret. */
typedef struct dsecret {
    const char *name;
    char *chain, *key, *ca;
} dsecret;

static void dsecret_free(dsecret *d)
{
    free(d->chain);
    wp_wc_free_secret(d->key);
    free(d->ca);
    d->chain = d->key = d->ca = NULL;
}

static int decode(const char *name, const json_t *r, dsecret *d, wf_strbuf *err)
{
    const json_t *tc = json_object_get(r, "tls_certificate");
    const json_t *vc = json_object_get(r, "validation_context");
    const char *why = NULL;
    *d = (dsecret){.name = name};
    if (json_is_object(tc)) {
        d->chain = data_source(json_object_get(tc, "certificate_chain"));
        d->key = data_source(json_object_get(tc, "private_key"));
        why = check_key_cert(d->chain, d->key);
    } else if (json_is_object(vc)) {
        d->ca = data_source(json_object_get(vc, "trusted_ca"));
        X509 *x = first_cert(d->ca);
        why = x ? NULL : "Failed to load trusted CA certificates from <inline>";
        X509_free(x);
    } else {
        why = "a Secret other than tls_certificate or validation_context is not supported by "
              "weft-proxy";
    }
    ERR_clear_error();
    if (!why)
        return 0;
    wf_strbuf_printf(err, "Secret %s: %s", name, why);
    dsecret_free(d);
    return -1;
}

int wp_ads_secrets_store(wp_secrets *store, const json_t *set, const wf_xds_names *wanted,
                         double now_s, wf_strbuf *err)
{
    size_t n = json_object_size(set), i = 0;
    dsecret *ds = calloc(n ? n : 1, sizeof(*ds));
    const char *name;
    json_t *e;
    int rc = ds ? 0 : -1;
    if (!ds)
        wf_strbuf_puts(err, "out of memory");
    json_object_foreach((json_t *)set, name, e)
    {
        if (rc == 0 && i < n)
            rc = decode(name, json_object_get(e, "resource"), &ds[i++], err);
    }
    for (size_t j = 0; rc == 0 && j < i; j++) {
        const char *v =
            json_string_value(json_object_get(json_object_get(set, ds[j].name), "version_info"));
        if (wp_secrets_set_named(store, ds[j].name, ds[j].chain, ds[j].key, ds[j].ca, v, now_s) !=
            0) {
            wf_strbuf_puts(err, "out of memory");
            rc = -1;
        }
    }
    for (size_t j = 0; ds && j < i; j++)
        dsecret_free(&ds[j]);
    free(ds);
    if (rc == 0 && wanted &&
        wp_secrets_set_wanted(store, (const char *const *)wanted->v, wanted->n) != 0) {
        wf_strbuf_puts(err, "out of memory");
        rc = -1;
    }
    return rc;
}
