/*
 * serving_cert.c - weft-pilot's own serving certificates (see serving_cert.h).
 */
#include "pilot/serving_cert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "pilot/ca.h"

static const char *const dns_names[] = {"istiod.istio-system.svc", "istio-pilot.istio-system.svc"};

static bool unspecified(const char *ip)
{
    return !*ip || strcmp(ip, "0.0.0.0") == 0 || strcmp(ip, "::") == 0;
}

void wf_serving_cert_init(wf_serving_cert *sc, const wf_ca_server *cas, const char *ip,
                          const char *const *alpn, size_t nalpn, bool verify_clients)
{
    memset(sc, 0, sizeof *sc);
    sc->cas = cas;
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
    if (wf_ca_issue_server(ca, dns_names, sizeof dns_names / sizeof dns_names[0], ips,
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
