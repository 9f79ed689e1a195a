/*
 * pilot_secure.c - istiod's secure gRPC port (see pilot_secure.h).
 */
#include "pilot/pilot_secure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "pilot/pilot.h"
#include "pilot/serving_cert.h"
#include "tls/tls.h"

struct wf_pilot_secure {
    wf_ads *ads;
    wf_serving_cert cert; /* serving_cert.h: issued from the mesh CA, renewed */
};

/* h2 only; the mesh roots verify a client certificate when one is given (istiod's 15012:
 * VerifyClientCertIfGiven with the mesh roots as ClientCAs): XDS_AUTH's
 * ClientCertAuthenticator reads its identity (xds_auth.h) */
static const char *const alpn[] = {"h2"};

int wf_pilot_secure_start(wf_ads *ads, const wf_ca_server *cas, const wf_serving_names *names,
                          const char *addr, bool xds_auth, int64_t now_s, wf_pilot_secure **out,
                          char *err, size_t cap)
{
    int port;
    wf_pilot_secure *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    s->ads = ads;
    char ip[64];
    if (wf_pilot_parse_addr(addr, ip, sizeof ip, &port)) {
        snprintf(err, cap, "bad --secureGRPCAddr %s: want ip:port", addr);
        free(s);
        return -1;
    }
    wf_serving_cert_init(&s->cert, cas, names, ip, alpn, 1, true);
    char why[256];
    wf_tls_ctx *ctx = wf_serving_cert_issue(&s->cert, now_s, why, sizeof why);
    if (!ctx) {
        snprintf(err, cap, "--secureGRPCAddr %s: cannot make the serving certificate: %s", addr,
                 why);
        free(s);
        return -1;
    }
    int rc = wf_ads_listen_secure(ads, ip, port, ctx, err, cap);
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
    const char *why;
    if (!wf_serving_cert_due(&s->cert, now_s, &why))
        return;
    char err[256];
    wf_tls_ctx *ctx = wf_serving_cert_issue(&s->cert, now_s, err, sizeof err);
    if (!ctx) {
        WF_LOG(WF_LC_secret, WF_LOG_WARN,
               "cannot renew the serving certificate of the secure gRPC port: %s", err);
        return;
    }
    wf_ads_set_secure_tls(s->ads, ctx);
    wf_tls_ctx_free(ctx);
    WF_LOG(WF_LC_secret, WF_LOG_INFO, "secure gRPC port: new serving certificate (%s)", why);
}

int wf_pilot_secure_port(const wf_pilot_secure *s)
{
    return s ? wf_ads_secure_port(s->ads) : -1;
}

void wf_pilot_secure_free(wf_pilot_secure *s)
{
    free(s);
}
