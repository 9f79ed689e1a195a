/*
 * serving_cert.h - a serving certificate weft-pilot issues itself from the mesh CA, as istiod
 * does when it is the CA (pilot/pkg/bootstrap/istio_ca.go, certcontroller.go: the istiod
 * certificate with the DNS names istiod.<ns>.svc and istio-pilot.<ns>.svc), shared by the
 * ports that serve it: the secure gRPC port 15012 (pilot_secure.h) and the admission webhook
 * port 15017 (webhook.h).
 *
 * The certificate: ECDSA P-256, SANs DNS istiod.istio-system.svc, istio-pilot.istio-system.svc
 * and, when the port is bound to an IP address other than 0.0.0.0 / ::, that address (so a
 * client that dials the IP can verify it); WF_SERVING_CERT_TTL_S; TLS 1.2-1.3 with the
 * caller's ALPN list. A certificate is due again when the CA changed (a plug-in cacerts
 * Secret, a new root) or half of its life has passed.
 *
 * Ownership: the caller owns the struct (usually inside its own); the CA server is borrowed and
 * must outlive it. Contexts returned are the caller's (wf_tls_ctx_free).
 */
#ifndef WF_PILOT_SERVING_CERT_H
#define WF_PILOT_SERVING_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pilot/ca_server.h"
#include "tls/tls.h"

#define WF_SERVING_CERT_TTL_S (24 * 3600)

typedef struct wf_serving_cert {
    const wf_ca_server *cas;
    const struct wf_ca *issued_by; /* the CA of the current certificate, NULL before the first */
    int64_t issued_at, not_after;
    char ip[64];
    bool ip_san;
    const char *const *alpn; /* static strings */
    size_t nalpn;
    bool verify_clients; /* ask for a client certificate and check it against the mesh roots
                          * when given (istiod's VerifyClientCertIfGiven on 15012) */
} wf_serving_cert;

/* Sets up sc for a port bound to ip (text; "" / 0.0.0.0 / :: add no IP SAN). */
void wf_serving_cert_init(wf_serving_cert *sc, const wf_ca_server *cas, const char *ip,
                          const char *const *alpn, size_t nalpn, bool verify_clients);

/* A server context with a fresh certificate; NULL with err (the CA cannot issue, out of
 * memory). */
wf_tls_ctx *wf_serving_cert_issue(wf_serving_cert *sc, int64_t now_s, char *err, size_t cap);

/* The certificate is due again: the CA changed or half its life passed. why (may be NULL) is
 * set to a static text saying which. */
bool wf_serving_cert_due(const wf_serving_cert *sc, int64_t now_s, const char **why);

#endif
