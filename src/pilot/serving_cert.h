/*
 * serving_cert.h - a serving certificate weft-pilot issues itself from the mesh CA, as istiod
 * does when it is the CA (pilot/pkg/bootstrap/istio_ca.go, certcontroller.go: the istiod
 * certificate), shared by the ports that serve it: the secure gRPC port 15012 (pilot_secure.h)
 * and the admission webhook port 15017 (webhook.h).
 *
 * The DNS names are istiod's (pilot/pkg/bootstrap/server.go getDNSNames): the hosts of
 * ISTIOD_CUSTOM_HOST (comma-separated), then istiod.<ns>.svc, istiod-remote.<ns>.svc,
 * istio-pilot.<ns>.svc and, for a revision other than "default", istiod-<rev>.<ns>.svc, where
 * <ns> is istiod's namespace (POD_NAMESPACE, default istio-system); sorted, without duplicates
 * (wf_serving_names_make).
 *
 * The certificate: ECDSA P-256, SANs those DNS names
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

/* istiod's serving DNS names; owned (wf_serving_names_free). */
typedef struct wf_serving_names {
    char **v;
    size_t n;
} wf_serving_names;

#define WF_SERVING_NS_DEFAULT "istio-system"

/* The names for namespace ns (NULL/"" = WF_SERVING_NS_DEFAULT), revision rev (NULL, "" or
 * "default" = none) and custom_hosts (ISTIOD_CUSTOM_HOST's value, NULL = none; empty items
 * skipped). Returns 0, or -1 out of memory (*out then empty). */
int wf_serving_names_make(const char *ns, const char *rev, const char *custom_hosts,
                          wf_serving_names *out);
void wf_serving_names_free(wf_serving_names *n); /* NULL ok; leaves it empty */

typedef struct wf_serving_cert {
    const wf_ca_server *cas;
    const wf_serving_names *names; /* borrowed; must outlive the struct */
    const struct wf_ca *issued_by; /* the CA of the current certificate, NULL before the first */
    int64_t issued_at, not_after;
    char ip[64];
    bool ip_san;
    const char *const *alpn; /* static strings */
    size_t nalpn;
    bool verify_clients; /* ask for a client certificate and check it against the mesh roots
                          * when given (istiod's VerifyClientCertIfGiven on 15012) */
} wf_serving_cert;

/* Sets up sc for a port bound to ip (text; "" / 0.0.0.0 / :: add no IP SAN) with the DNS
 * names names (borrowed). */
void wf_serving_cert_init(wf_serving_cert *sc, const wf_ca_server *cas,
                          const wf_serving_names *names, const char *ip, const char *const *alpn,
                          size_t nalpn, bool verify_clients);

/* A server context with a fresh certificate; NULL with err (the CA cannot issue, out of
 * memory). */
wf_tls_ctx *wf_serving_cert_issue(wf_serving_cert *sc, int64_t now_s, char *err, size_t cap);

/* The certificate is due again: the CA changed or half its life passed. why (may be NULL) is
 * set to a static text saying which. */
bool wf_serving_cert_due(const wf_serving_cert *sc, int64_t now_s, const char **why);

#endif
