/*
 * pilot_secure.c - istiod's secure gRPC port (see pilot_secure.h).
 */
#include "pilot/pilot_secure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/log.h"
#include "pilot/ca.h"
#include "pilot/pilot.h"
#include "tls/tls.h"

struct wf_pilot_secure {
    wf_ads *ads;
    const wf_ca_server *cas;
    const wf_ca *issued_by; /* the CA of the current certificate */
    int64_t issued_at, not_after;
    char ip[64];
    bool ip_san;
};

static const char *const dns_names[] = {"istiod.istio-system.svc", "istio-pilot.istio-system.svc"};

/* A server context with a fresh certificate; NULL with err. */
static wf_tls_ctx *issue(wf_pilot_secure *s, int64_t now_s, char *err, size_t cap)
{
    const wf_ca *ca = wf_ca_server_ca(s->cas);
    char *chain = NULL, *key = NULL;
    const char *ips[] = {s->ip};
    if (wf_ca_issue_server(ca, dns_names, sizeof dns_names / sizeof dns_names[0], ips,
                           s->ip_san ? 1 : 0, now_s, WF_PILOT_SECURE_TTL_S, &chain, &key, err,
                           cap) != WF_CA_OK)
        return NULL;
    static const char *const alpn[] = {"h2"};
    /* the mesh roots verify a client certificate when one is given (istiod's 15012:
     * VerifyClientCertIfGiven with the mesh roots as ClientCAs): XDS_AUTH's
     * ClientCertAuthenticator reads its identity (xds_auth.h) */
    const char *roots = wf_ca_root_pem(ca);
    wf_tls_ctx_opts o = {.server = true,
                         .cert_chain = chain,
                         .cert_chain_len = strlen(chain),
                         .private_key = key,
                         .private_key_len = strlen(key),
                         .trusted_ca = roots,
                         .trusted_ca_len = roots ? strlen(roots) : 0,
                         .alpn = alpn,
                         .nalpn = 1,
                         .min_version = WF_TLS_V1_2};
    wf_tls_ctx *ctx = wf_tls_ctx_new(&o, err, cap);
    OPENSSL_clear_free(key, strlen(key));
    free(chain);
    if (ctx) {
        s->issued_by = ca;
        s->issued_at = now_s;
        s->not_after = now_s + WF_PILOT_SECURE_TTL_S;
    }
    return ctx;
}

static bool unspecified(const char *ip)
{
    return !*ip || strcmp(ip, "0.0.0.0") == 0 || strcmp(ip, "::") == 0;
}

int wf_pilot_secure_start(wf_ads *ads, const wf_ca_server *cas, const char *addr, bool xds_auth,
                          int64_t now_s, wf_pilot_secure **out, char *err, size_t cap)
{
    int port;
    wf_pilot_secure *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    s->ads = ads;
    s->cas = cas;
    if (wf_pilot_parse_addr(addr, s->ip, sizeof s->ip, &port)) {
        snprintf(err, cap, "bad --secureGRPCAddr %s: want ip:port", addr);
        free(s);
        return -1;
    }
    s->ip_san = !unspecified(s->ip);
    char why[256];
    wf_tls_ctx *ctx = issue(s, now_s, why, sizeof why);
    if (!ctx) {
        snprintf(err, cap, "--secureGRPCAddr %s: cannot make the serving certificate: %s", addr,
                 why);
        free(s);
        return -1;
    }
    int rc = wf_ads_listen_secure(ads, s->ip, port, ctx, err, cap);
    wf_tls_ctx_free(ctx); /* the listener holds its reference */
    if (rc != 0) {
        free(s);
        return -1;
    }
    wf_ads_set_secure_auth(ads, xds_auth ? cas : NULL);
    *out = s;
    return 0;
}

void wf_pilot_secure_refresh(wf_pilot_secure *s, int64_t now_s)
{
    if (!s)
        return;
    bool ca_changed = wf_ca_server_ca(s->cas) != s->issued_by;
    bool aging = now_s >= s->issued_at + (s->not_after - s->issued_at) / 2;
    if (!ca_changed && !aging)
        return;
    char err[256];
    wf_tls_ctx *ctx = issue(s, now_s, err, sizeof err);
    if (!ctx) {
        WF_LOG(WF_LC_secret, WF_LOG_WARN,
               "cannot renew the serving certificate of the secure gRPC port: %s", err);
        return;
    }
    wf_ads_set_secure_tls(s->ads, ctx);
    wf_tls_ctx_free(ctx);
    WF_LOG(WF_LC_secret, WF_LOG_INFO, "secure gRPC port: new serving certificate (%s)",
           ca_changed ? "the CA changed" : "half of its life passed");
}

int wf_pilot_secure_port(const wf_pilot_secure *s)
{
    return s ? wf_ads_secure_port(s->ads) : -1;
}

void wf_pilot_secure_free(wf_pilot_secure *s)
{
    free(s);
}
