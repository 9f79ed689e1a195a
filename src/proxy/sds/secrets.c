/*
 * secrets.c - the SDS secrets `default` and `ROOTCA` (secrets.h): storage, Envoy's
 * SecretsConfigDump and /certs views.
 */
#include "proxy/sds/secrets.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/base64.h"
#include "core/timefmt.h"
#include "proxy/sds/workload_cert.h"

#define TLS_T      "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
#define DUMP_T     "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"
#define REDACT_B64 "W3JlZGFjdGVkXQ==" /* "[redacted]", as Envoy's MessageUtil::redact */

typedef struct named {
    char *name, *chain, *key, *ca;
    char version[64];
    double updated_s;
} named;

struct wp_secrets {
    pthread_mutex_t mu;
    atomic_uint_fast64_t gen;
    char *chain, *key, *root;
    char version[64];
    double updated_s;
    named *named; /* credentialName secrets */
    size_t n_named, cap_named;
    char **wanted;
    size_t n_wanted;
};

wp_secrets *wp_secrets_new(void)
{
    wp_secrets *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return NULL;
    }
    atomic_init(&s->gen, 0);
    return s;
}

void wp_secrets_free(wp_secrets *s)
{
    if (!s)
        return;
    free(s->chain);
    wp_wc_free_secret(s->key);
    free(s->root);
    for (size_t i = 0; i < s->n_named; i++) {
        free(s->named[i].name);
        free(s->named[i].chain);
        wp_wc_free_secret(s->named[i].key);
        free(s->named[i].ca);
    }
    free(s->named);
    for (size_t i = 0; i < s->n_wanted; i++)
        free(s->wanted[i]);
    free(s->wanted);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int wp_secrets_set(wp_secrets *s, const char *chain, const char *key, const char *root,
                   double now_s)
{
    char *c = strdup(chain), *k = strdup(key), *r = strdup(root);
    if (!c || !k || !r) {
        free(c);
        wp_wc_free_secret(k);
        free(r);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    free(s->chain);
    wp_wc_free_secret(s->key);
    free(s->root);
    s->chain = c;
    s->key = k;
    s->root = r;
    s->updated_s = now_s;
    uint64_t g = atomic_load(&s->gen) + 1;
    /* Istio's SDS server: "<RFC3339>/<counter>" */
    char ts[32];
    wf_timestamp_s((int64_t)now_s, ts, sizeof ts);
    snprintf(s->version, sizeof(s->version), "%s/%llu", ts, (unsigned long long)g);
    atomic_store(&s->gen, g);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

uint64_t wp_secrets_generation(const wp_secrets *s)
{
    return atomic_load(&((wp_secrets *)s)->gen);
}

bool wp_secrets_has_workload(wp_secrets *s)
{
    pthread_mutex_lock(&s->mu);
    bool have = s->chain && s->key && s->root;
    pthread_mutex_unlock(&s->mu);
    return have;
}

bool wp_secrets_get(wp_secrets *s, char **chain, char **key, char **root, uint64_t *gen)
{
    pthread_mutex_lock(&s->mu);
    *chain = s->chain ? strdup(s->chain) : NULL;
    *key = s->key ? strdup(s->key) : NULL;
    *root = s->root ? strdup(s->root) : NULL;
    *gen = atomic_load(&s->gen);
    bool ok = (!s->chain || *chain) && (!s->key || *key) && (!s->root || *root);
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        free(*chain);
        wp_wc_free_secret(*key);
        free(*root);
        *chain = *key = *root = NULL;
    }
    return ok;
}

/* ---- named secrets ---- */

static named *find_named(wp_secrets *s, const char *name)
{
    for (size_t i = 0; i < s->n_named; i++)
        if (strcmp(s->named[i].name, name) == 0)
            return &s->named[i];
    return NULL;
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static char *dup_or_null(const char *v, bool *ok)
{
    char *d = v ? strdup(v) : NULL;
    if (v && !d)
        *ok = false;
    return d;
}

int wp_secrets_set_named(wp_secrets *s, const char *name, const char *chain, const char *key,
                         const char *ca, const char *version, double now_s)
{
    bool ok = true;
    char *c = dup_or_null(chain, &ok), *k = dup_or_null(key, &ok), *a = dup_or_null(ca, &ok);
    pthread_mutex_lock(&s->mu);
    named *e = find_named(s, name);
    if (ok && e && same(e->chain, chain) && same(e->key, key) && same(e->ca, ca)) {
        pthread_mutex_unlock(&s->mu); /* unchanged: no rebuild of the TLS contexts */
        free(c);
        wp_wc_free_secret(k);
        free(a);
        return 0;
    }
    if (ok && !e && s->n_named == s->cap_named) {
        size_t cap = s->cap_named ? 2 * s->cap_named : 4;
        named *n = realloc(s->named, cap * sizeof(*n));
        ok = n != NULL;
        if (n) {
            s->named = n;
            s->cap_named = cap;
        }
    }
    if (ok && !e) {
        e = &s->named[s->n_named];
        *e = (named){.name = strdup(name)};
        ok = e->name != NULL;
        s->n_named += ok;
    }
    if (!ok) {
        pthread_mutex_unlock(&s->mu);
        free(c);
        wp_wc_free_secret(k);
        free(a);
        return -1;
    }
    free(e->chain);
    wp_wc_free_secret(e->key);
    free(e->ca);
    e->chain = c;
    e->key = k;
    e->ca = a;
    snprintf(e->version, sizeof(e->version), "%s", version ? version : "");
    e->updated_s = now_s;
    atomic_store(&s->gen, atomic_load(&s->gen) + 1);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

bool wp_secrets_get_named(wp_secrets *s, const char *name, char **chain, char **key, char **ca)
{
    bool ok = true;
    pthread_mutex_lock(&s->mu);
    named *e = find_named(s, name);
    *chain = e ? dup_or_null(e->chain, &ok) : NULL;
    *key = e ? dup_or_null(e->key, &ok) : NULL;
    *ca = e ? dup_or_null(e->ca, &ok) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (!ok || !e) {
        free(*chain);
        wp_wc_free_secret(*key);
        free(*ca);
        *chain = *key = *ca = NULL;
    }
    return ok && e;
}

int wp_secrets_set_wanted(wp_secrets *s, const char *const *names, size_t n)
{
    char **w = calloc(n ? n : 1, sizeof(*w));
    bool ok = w != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = (w[i] = strdup(names[i])) != NULL;
    if (!ok) {
        for (size_t i = 0; w && i < n; i++)
            free(w[i]);
        free(w);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_wanted; i++)
        free(s->wanted[i]);
    free(s->wanted);
    s->wanted = w;
    s->n_wanted = n;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

size_t wp_secrets_n_wanted(wp_secrets *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_wanted;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* {"inline_bytes": base64(s)} */
static json_t *inline_bytes(const char *s)
{
    size_t n = strlen(s), cap = 4 * (n / 3 + 1) + 1;
    char *b = malloc(cap);
    if (!b || !wf_base64_encode((const unsigned char *)s, n, b, cap)) {
        free(b);
        return NULL;
    }
    json_t *o = json_pack("{s:s}", "inline_bytes", b);
    free(b);
    return o;
}

static json_t *dump_entry(const char *name, const char *version, double updated, json_t *body,
                          const char *body_key)
{
    char ts[40];
    json_t *secret = json_pack("{s:s,s:s,s:o}", "@type", TLS_T, "name", name, body_key, body);
    return json_pack("{s:s,s:s,s:s,s:o}", "name", name, "version_info", version, "last_updated",
                     wf_timestamp_ms(updated, ts, sizeof(ts)), "secret", secret);
}

/* A secret not supplied yet: {name, secret: {"@type", name}} */
static bool add_warming(json_t *out, const char *name)
{
    json_t *arr = json_object_get(out, "dynamic_warming_secrets");
    if (!arr &&
        (!(arr = json_array()) || json_object_set_new(out, "dynamic_warming_secrets", arr) != 0))
        return false;
    json_t *e =
        json_pack("{s:s,s:{s:s,s:s}}", "name", name, "secret", "@type", TLS_T, "name", name);
    return e && json_array_append_new(arr, e) == 0;
}

static bool add_active(json_t *out, json_t *e)
{
    json_t *arr = json_object_get(out, "dynamic_active_secrets");
    if (!e)
        return false;
    if (!arr &&
        (!(arr = json_array()) || json_object_set_new(out, "dynamic_active_secrets", arr) != 0)) {
        json_decref(e);
        return false;
    }
    return json_array_append_new(arr, e) == 0;
}

json_t *wp_secrets_dump(wp_secrets *s, bool in_use)
{
    json_t *out = json_pack("{s:s}", "@type", DUMP_T);
    if (!out)
        return NULL;
    pthread_mutex_lock(&s->mu);
    bool ok = true;
    if (s->chain) {
        json_t *tc = json_pack("{s:o,s:{s:s}}", "certificate_chain", inline_bytes(s->chain),
                               "private_key", "inline_bytes", REDACT_B64);
        ok = tc && add_active(out, dump_entry(WP_SDS_DEFAULT, s->version, s->updated_s, tc,
                                              "tls_certificate"));
    } else if (in_use) {
        ok = add_warming(out, WP_SDS_DEFAULT);
    }
    if (ok && s->root) {
        json_t *vc = json_pack("{s:o}", "trusted_ca", inline_bytes(s->root));
        ok = vc && add_active(out, dump_entry(WP_SDS_ROOTCA, s->version, s->updated_s, vc,
                                              "validation_context"));
    } else if (ok && in_use) {
        ok = add_warming(out, WP_SDS_ROOTCA);
    }
    for (size_t i = 0; ok && i < s->n_named; i++) {
        const named *e = &s->named[i];
        json_t *body = e->chain
                           ? json_pack("{s:o,s:{s:s}}", "certificate_chain", inline_bytes(e->chain),
                                       "private_key", "inline_bytes", REDACT_B64)
                           : json_pack("{s:o}", "trusted_ca", inline_bytes(e->ca ? e->ca : ""));
        ok = body &&
             add_active(out, dump_entry(e->name, e->version, e->updated_s, body,
                                        e->chain ? "tls_certificate" : "validation_context"));
    }
    for (size_t i = 0; ok && i < s->n_wanted; i++)
        if (!find_named(s, s->wanted[i]))
            ok = add_warming(out, s->wanted[i]);
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static void earliest(const char *pem, int64_t *first)
{
    int64_t nb, na;
    if (pem && wp_wc_cert_facts(pem, strlen(pem), &nb, &na, NULL, 0) == 0 &&
        (*first == 0 || na < *first))
        *first = na;
}

int64_t wp_secrets_first_expiry(wp_secrets *s)
{
    int64_t first = 0;
    pthread_mutex_lock(&s->mu);
    earliest(s->chain, &first);
    earliest(s->root, &first);
    for (size_t i = 0; i < s->n_named; i++) {
        earliest(s->named[i].chain, &first);
        earliest(s->named[i].ca, &first);
    }
    pthread_mutex_unlock(&s->mu);
    return first;
}

/* Envoy's CertificateDetails of x (admin/v3/certs.proto, Utility::certificateDetails). */
static json_t *cert_details(X509 *x, int64_t now_s)
{
    char ts[40], serial[80];
    int64_t nb = 0, na = 0;
    BIO *b = BIO_new(BIO_s_mem());
    char *pem = NULL;
    long n = b && PEM_write_bio_X509(b, x) == 1 ? BIO_get_mem_data(b, &pem) : 0;
    if (n <= 0 || wp_wc_cert_facts(pem, (size_t)n, &nb, &na, serial, sizeof(serial)) != 0) {
        BIO_free(b);
        return NULL;
    }
    BIO_free(b);
    json_t *sans = json_array();
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(gens); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_URI || g->type == GEN_DNS) {
            const ASN1_IA5STRING *v =
                g->type == GEN_URI ? g->d.uniformResourceIdentifier : g->d.dNSName;
            json_array_append_new(sans, json_pack("{s:s%}", g->type == GEN_URI ? "uri" : "dns",
                                                  (const char *)ASN1_STRING_get0_data(v),
                                                  (size_t)ASN1_STRING_length(v)));
        }
    }
    GENERAL_NAMES_free(gens);
    char days[32];
    snprintf(days, sizeof(days), "%lld",
             (long long)(na > now_s ? (na - now_s) / 86400 : 0)); /* uint64: a JSON string */
    char from[40];
    return json_pack("{s:s,s:s,s:o,s:s,s:s,s:s}", "path", "<inline>", "serial_number", serial,
                     "subject_alt_names", sans, "days_until_expiration", days, "valid_from",
                     wf_timestamp_ms((double)nb, from, sizeof(from)), "expiration_time",
                     wf_timestamp_ms((double)na, ts, sizeof(ts)));
}

/* Every certificate of a PEM text as CertificateDetails (first only when first_only). */
static json_t *details_list(const char *pem, int64_t now_s, bool first_only)
{
    json_t *arr = json_array();
    BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
    X509 *x;
    while (arr && b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        json_t *d = cert_details(x, now_s);
        X509_free(x);
        if (d)
            json_array_append_new(arr, d);
        if (first_only)
            break;
    }
    BIO_free(b);
    return arr;
}

json_t *wp_secrets_cert_entry(wp_secrets *s, const char *cert_name, bool want_cert,
                              const char *ca_name, bool want_ca, int64_t now_s)
{
    pthread_mutex_lock(&s->mu);
    const named *cn = want_cert && cert_name ? find_named(s, cert_name) : NULL;
    const named *an = want_ca && ca_name ? find_named(s, ca_name) : NULL;
    const char *chain = !want_cert ? NULL : cert_name ? (cn ? cn->chain : NULL) : s->chain;
    const char *ca = !want_ca ? NULL : ca_name ? (an ? an->ca : NULL) : s->root;
    json_t *e = NULL;
    if (chain || ca) /* Envoy lists the leaf of each certificate chain and the CA certificates */
        e = json_pack("{s:o,s:o}", "ca_cert", details_list(ca, now_s, false), "cert_chain",
                      details_list(chain, now_s, true));
    pthread_mutex_unlock(&s->mu);
    return e;
}
