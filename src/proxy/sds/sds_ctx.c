/*
 * sds_ctx.c - TLS contexts fed by SDS secrets (sds_ctx.h).
 */
#include "proxy/sds/sds_ctx.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/sds/workload_cert.h"

struct wp_sds_ctx {
    pthread_mutex_t mu;
    wp_secrets *store;
    wf_tls_ctx_opts o;      /* the template: every pointer below is owned */
    char *chain, *key, *ca; /* static parts (NUL-terminated copies) */
    char **alpn;
    wf_tls_san_matcher *sans;
    char *ciphers;
    bool want_cert, want_ca;
    char *cert_name, *ca_name; /* named secrets instead of default / ROOTCA; NULL = those */
    uint64_t gen;              /* the store generation ctx was built from (0 = none) */
    wf_tls_ctx *ctx;           /* current, NULL = not ready */
};

wp_sds_ctx *wp_sds_ctx_new(const wf_tls_ctx_opts *o, bool want_cert, bool want_ca)
{
    wp_sds_ctx *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return NULL;
    }
    s->o = *o;
    s->want_cert = want_cert;
    s->want_ca = want_ca;
    bool ok = true;
    if (o->cert_chain && !want_cert)
        ok = (s->chain = strndup(o->cert_chain, o->cert_chain_len)) &&
             (s->key = strndup(o->private_key, o->private_key_len));
    if (ok && o->trusted_ca && !want_ca)
        ok = (s->ca = strndup(o->trusted_ca, o->trusted_ca_len)) != NULL;
    if (ok && o->nalpn && (s->alpn = calloc(o->nalpn, sizeof(char *))))
        for (size_t i = 0; ok && i < o->nalpn; i++)
            ok = (s->alpn[i] = strdup(o->alpn[i])) != NULL;
    else if (ok && o->nalpn)
        ok = false;
    if (ok && o->nsans && (s->sans = calloc(o->nsans, sizeof(*s->sans))))
        for (size_t i = 0; ok && i < o->nsans; i++) {
            s->sans[i] = o->sans[i];
            ok = (s->sans[i].value = strdup(o->sans[i].value)) != NULL;
        }
    else if (ok && o->nsans)
        ok = false;
    if (ok && o->cipher_suites)
        ok = (s->ciphers = strdup(o->cipher_suites)) != NULL;
    s->o.alpn = (const char *const *)s->alpn;
    s->o.sans = s->sans;
    s->o.cipher_suites = s->ciphers;
    if (!ok) {
        wp_sds_ctx_free(s);
        return NULL;
    }
    return s;
}

void wp_sds_ctx_free(wp_sds_ctx *s)
{
    if (!s)
        return;
    wf_tls_ctx_free(s->ctx);
    free(s->chain);
    wp_wc_free_secret(s->key);
    free(s->ca);
    for (size_t i = 0; s->alpn && i < s->o.nalpn; i++)
        free(s->alpn[i]);
    free(s->alpn);
    for (size_t i = 0; s->sans && i < s->o.nsans; i++)
        free((char *)s->sans[i].value);
    free(s->sans);
    free(s->ciphers);
    free(s->cert_name);
    free(s->ca_name);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

bool wp_sds_ctx_set_names(wp_sds_ctx *s, const char *cert_name, const char *ca_name)
{
    char *c = cert_name ? strdup(cert_name) : NULL, *a = ca_name ? strdup(ca_name) : NULL;
    if ((cert_name && !c) || (ca_name && !a)) {
        free(c);
        free(a);
        return false;
    }
    free(s->cert_name);
    free(s->ca_name);
    s->cert_name = c;
    s->ca_name = a;
    return true;
}

/* The secrets this context reads: default / ROOTCA from the provider, or the named ones. */
static bool get_secrets(wp_sds_ctx *s, char **chain, char **key, char **root)
{
    uint64_t got = 0;
    char *nc = NULL, *nk = NULL, *na = NULL;
    if (!wp_secrets_get(s->store, chain, key, root, &got))
        return false;
    if (s->cert_name) {
        free(*chain);
        wp_wc_free_secret(*key);
        wp_secrets_get_named(s->store, s->cert_name, chain, key, &na);
        free(na);
    }
    if (s->ca_name) {
        free(*root);
        wp_secrets_get_named(s->store, s->ca_name, &nc, &nk, root);
        free(nc);
        wp_wc_free_secret(nk);
    }
    return true;
}

void wp_sds_ctx_attach(wp_sds_ctx *s, wp_secrets *store)
{
    s->store = store;
}

bool wp_sds_ctx_is_server(const wp_sds_ctx *s)
{
    return s->o.server;
}

bool wp_sds_ctx_uses_default(const wp_sds_ctx *s)
{
    return (s->want_cert && !s->cert_name) || (s->want_ca && !s->ca_name);
}

/* A new engine context from the template and the store's secrets (mu held). */
static void rebuild(wp_sds_ctx *s, uint64_t gen)
{
    char *chain = NULL, *key = NULL, *root = NULL;
    if (!get_secrets(s, &chain, &key, &root))
        return; /* out of memory: tried again with the next connection */
    wf_tls_ctx_opts o = s->o;
    if (s->want_cert) {
        o.cert_chain = chain;
        o.cert_chain_len = chain ? strlen(chain) : 0;
        o.private_key = key;
        o.private_key_len = key ? strlen(key) : 0;
    } else {
        o.cert_chain = s->chain;
        o.cert_chain_len = s->chain ? strlen(s->chain) : 0;
        o.private_key = s->key;
        o.private_key_len = s->key ? strlen(s->key) : 0;
    }
    o.trusted_ca = s->want_ca ? root : s->ca;
    o.trusted_ca_len = o.trusted_ca ? strlen(o.trusted_ca) : 0;
    s->gen = gen;
    if ((s->want_cert && !chain) || (s->want_ca && !root)) {
        /* not supplied yet */
    } else {
        char err[256] = "";
        wf_tls_ctx *n = wf_tls_ctx_new(&o, err, sizeof(err));
        if (n) {
            wf_tls_ctx_free(s->ctx);
            s->ctx = n;
        } else {
            WF_LOG(WF_LC_secret, WF_LOG_ERROR, "failed to update the TLS context from SDS: %s",
                   err);
        }
    }
    free(chain);
    wp_wc_free_secret(key);
    free(root);
}

wf_tls_ctx *wp_sds_ctx_acquire(wp_sds_ctx *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t gen = s->store ? wp_secrets_generation(s->store) : 0;
    if (gen != s->gen && gen != 0)
        rebuild(s, gen);
    wf_tls_ctx *c = wf_tls_ctx_ref(s->ctx);
    pthread_mutex_unlock(&s->mu);
    return c;
}

void wp_sds_ctx_secrets(const wp_sds_ctx *s, const char **cert_name, bool *want_cert,
                        const char **ca_name, bool *want_ca)
{
    *cert_name = s->cert_name;
    *ca_name = s->ca_name;
    *want_cert = s->want_cert;
    *want_ca = s->want_ca;
}
