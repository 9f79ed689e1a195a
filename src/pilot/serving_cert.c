/*
 * serving_cert.c - weft-pilot's own serving certificates (see serving_cert.h).
 */
#include "pilot/serving_cert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "pilot/ca.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds a copy of s[0..len) unless present. Returns 0, -1 out of memory. */
static int add_name(wf_serving_names *n, const char *s, size_t len)
{
    for (size_t i = 0; i < n->n; i++)
        if (strlen(n->v[i]) == len && strncmp(n->v[i], s, len) == 0)
            return 0;
    char **v = realloc(n->v, (n->n + 1) * sizeof *v);
    if (!v)
        return -1;
    n->v = v;
    v[n->n] = strndup(s, len);
    if (!v[n->n])
        return -1;
    n->n++;
    return 0;
}

static int add_svc(wf_serving_names *n, const char *host, const char *rev, const char *ns)
{
    char buf[512];
    int len = snprintf(buf, sizeof buf, "%s%s%s.%s.svc", host, rev ? "-" : "", rev ? rev : "", ns);
    return len < 0 || (size_t)len >= sizeof buf ? -1 : add_name(n, buf, (size_t)len);
}

int wf_serving_names_make(const char *ns, const char *rev, const char *custom_hosts,
                          wf_serving_names *out)
{
    memset(out, 0, sizeof *out);
    if (!ns || !*ns)
        ns = WF_SERVING_NS_DEFAULT;
    if (rev && (!*rev || strcmp(rev, "default") == 0))
        rev = NULL;
    int rc = 0;
    for (const char *c = custom_hosts; rc == 0 && c && *c;) {
        size_t len = strcspn(c, ",");
        if (len)
            rc = add_name(out, c, len);
        c += len + (c[len] == ',');
    }
    static const char *const known[] = {"istiod", "istiod-remote", "istio-pilot"};
    for (size_t i = 0; rc == 0 && i < sizeof known / sizeof known[0]; i++)
        rc = add_svc(out, known[i], NULL, ns);
    if (rc == 0 && rev)
        rc = add_svc(out, "istiod", rev, ns);
    if (rc != 0) {
        wf_serving_names_free(out);
        return -1;
    }
    qsort(out->v, out->n, sizeof *out->v, cmp_str);
    return 0;
}

void wf_serving_names_free(wf_serving_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        free(n->v[i]);
    free(n->v);
    n->v = NULL;
    n->n = 0;
}

static bool unspecified(const char *ip)
{
    return !*ip || strcmp(ip, "0.0.0.0") == 0 || strcmp(ip, "::") == 0;
}

void wf_serving_cert_init(wf_serving_cert *sc, const wf_ca_server *cas,
                          const wf_serving_names *names, const char *ip, const char *const *alpn,
                          size_t nalpn, bool verify_clients)
{
    memset(sc, 0, sizeof *sc);
    sc->cas = cas;
    sc->names = names;
    snprintf(sc->ip, sizeof sc->ip, "%s", ip ? ip : "");
    sc->ip_san = !unspecified(sc->ip);
    sc->alpn = alpn;
    sc->nalpn = nalpn;
    sc->verify_clients = verify_clients;
}

wf_tls_ctx *wf_serving_cert_issue(wf_serving_cert *sc, int64_t now_s, char *err, size_t cap)
{
    const wf_ca *ca = wf_ca_server_ca(sc->cas);
    if (!ca) {
        snprintf(err, cap, "no CA");
        return NULL;
    }
    char *chain = NULL, *key = NULL;
    const char *ips[] = {sc->ip};
    if (wf_ca_issue_server(ca, (const char *const *)sc->names->v, sc->names->n, ips,
                           sc->ip_san ? 1 : 0, now_s, WF_SERVING_CERT_TTL_S, &chain, &key, err,
                           cap) != WF_CA_OK)
        return NULL;
    const char *roots = sc->verify_clients ? wf_ca_root_pem(ca) : NULL;
    wf_tls_ctx_opts o = {.server = true,
                         .cert_chain = chain,
                         .cert_chain_len = strlen(chain),
                         .private_key = key,
                         .private_key_len = strlen(key),
                         .trusted_ca = roots,
                         .trusted_ca_len = roots ? strlen(roots) : 0,
                         .alpn = sc->alpn,
                         .nalpn = sc->nalpn,
                         .min_version = WF_TLS_V1_2};
    wf_tls_ctx *ctx = wf_tls_ctx_new(&o, err, cap);
    OPENSSL_clear_free(key, strlen(key));
    free(chain);
    if (ctx) {
        sc->issued_by = ca;
        sc->issued_at = now_s;
        sc->not_after = now_s + WF_SERVING_CERT_TTL_S;
    }
    return ctx;
}

bool wf_serving_cert_due(const wf_serving_cert *sc, int64_t now_s, const char **why)
{
    bool ca_changed = wf_ca_server_ca(sc->cas) != sc->issued_by;
    bool aging = now_s >= sc->issued_at + (sc->not_after - sc->issued_at) / 2;
    if (why)
        *why = ca_changed ? "the CA changed" : "half of its life passed";
    return ca_changed || aging;
}
