/*
 * pilot_secure.h - istiod's secure gRPC port (15012): the xDS methods and the CA's
 * CreateCertificate over TLS, with a serving certificate weft-pilot issues itself from the
 * mesh CA, as istiod does when it is the CA (pilot/pkg/bootstrap/istio_ca.go,
 * certcontroller.go). Proxies verify it against the mesh root (the istio-ca-root-cert ConfigMap).
 *
 * The certificate (serving_cert.h, shared with the webhook port): ECDSA P-256, SANs istiod's
 * DNS names (istiod.<ns>.svc, istiod-<rev>.<ns>.svc, ...: wf_serving_names_make) and, when the port
 * is bound to an IP address other than 0.0.0.0 / ::, that address (so a client that dials the IP,
 * as the local mesh's proxies do, can verify it); 24 h; ALPN h2; TLS 1.2-1.3. It is issued again
 * when the CA changes (a plug-in cacerts Secret, a new root) or half of its life has passed
 * (wf_pilot_secure_refresh); connections keep the one they started with. A client certificate is
 * asked for and, when given, must chain to the mesh roots (istiod's VerifyClientCertIfGiven); with
 * XDS_AUTH the xDS streams are authenticated by it or by a token and authorized for their node
 * (xds_auth.h), the plaintext port never is.
 *
 * Ownership: the listener belongs to ads (closed with it); the rest to the returned object.
 */
#ifndef WF_PILOT_PILOT_SECURE_H
#define WF_PILOT_PILOT_SECURE_H

#include <stdbool.h>
#include <stdint.h>

#include "pilot/ads.h"
#include "pilot/ca_server.h"
#include "pilot/serving_cert.h"

#define WF_PILOT_SECURE_TTL_S WF_SERVING_CERT_TTL_S

typedef struct wf_pilot_secure wf_pilot_secure;

/* Issues the certificate (DNS names: names, borrowed, must outlive it) from the CA of cas and
 * listens on addr ("ip:port") over TLS through ads; xds_auth: istiod's XDS_AUTH (tokens of
 * cas). Returns 0 and *out, or -1 with err naming the address (or why the certificate could
 * not be made). */
int wf_pilot_secure_start(wf_ads *ads, const wf_ca_server *cas, const wf_serving_names *names,
                          const char *addr, bool xds_auth, int64_t now_s, wf_pilot_secure **out,
                          char *err, size_t cap);

/* Issues a new certificate when the CA changed or half of the current one's life has passed.
 * A failure is logged; the current certificate stays. */
void wf_pilot_secure_refresh(wf_pilot_secure *s, int64_t now_s);

int wf_pilot_secure_port(const wf_pilot_secure *s);
void wf_pilot_secure_free(wf_pilot_secure *s); /* NULL ok */

#endif
