/*
 * ca_server.h - Istio's CSR service, istio.v1.auth.IstioCertificateService/CreateCertificate,
 * served on weft-pilot's gRPC listener (istiod serves it on 15012; weft's xDS listener, as the
 * ADS server hosts it: ads.h wf_ads_service), and its metrics.
 *
 * Istio behaviour followed (security/pkg/server/ca/server.go, monitoring.go;
 * security.md §1.6):
 *  - request IstioCertificateRequest {string csr = 1; int64 validity_duration = 2 (seconds);
 *    google.protobuf.Struct metadata = 3}; response IstioCertificateResponse {repeated string
 *    cert_chain = 1} (leaf, cert chain, root last); protobuf binary (xds/protowire.h), a unary
 *    call (the first message is answered, the call then ends with grpc-status 0).
 *  - every call counts citadel_server_csr_count. Authentication: gRPC metadata
 *    "authorization: Bearer <token>" checked by ca_token.h; the identity is
 *    spiffe://<trust domain>/ns/<ns>/sa/<sa>. A missing or bad token ends the call with
 *    UNAUTHENTICATED "request authenticate failure" (citadel_server_authentication_failure_count,
 *    log "Failed to authenticate client from <peer>: Authenticator WeftTokenAuthenticator:
 *    <why>"); metadata ImpersonatedIdentity (no CA_TRUSTED_NODE_ACCOUNTS here) ends it with
 *    UNAUTHENTICATED "request impersonation authentication failure".
 *  - signing (ca.h wf_ca_sign) errors: "CSR signing error (<detail>)", INVALID_ARGUMENT for
 *    CSR_ERROR and TTL_ERROR, INTERNAL otherwise; citadel_server_csr_sign_err_count{error=
 *    "<TYPE>"}. Success: citadel_server_success_cert_issuance_count.
 *  - an undecodable request: INTERNAL "grpc: error unmarshalling request: ..." (grpc-go's).
 *  - gauges citadel_server_root_cert_expiry_timestamp and citadel_server_cert_chain_expiry_
 *    timestamp (seconds since the epoch of the root's and the signing cert's NotAfter), and
 *    the newer citadel_server_root_cert_expiry_seconds / citadel_server_cert_chain_expiry_
 *    seconds (seconds left; negative once expired).
 *  - with a TokenReview authenticator (Kubernetes mode; weft's own counters):
 *    weft_pilot_tokenreview_requests_total, _authenticated_total, _cache_hits_total.
 *
 * Ownership: the server owns its CA (wf_ca_server_set_ca takes it) and copies the trust domain.
 * Single-threaded (pilot's loop; the TokenReview's requests run on its own threads). No globals.
 */
#ifndef WF_PILOT_CA_SERVER_H
#define WF_PILOT_CA_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "pilot/ca.h"
#include "pilot/ca_token.h"
#include "xds/h2_stream.h"

#define WF_CA_CSR_PATH            "/istio.v1.auth.IstioCertificateService/CreateCertificate"
#define WF_CA_TOKEN_AUTHENTICATOR "WeftTokenAuthenticator"

typedef struct wf_ca_server wf_ca_server;

typedef struct wf_ca_metrics {
    uint64_t csr;         /* citadel_server_csr_count */
    uint64_t authn_fail;  /* citadel_server_authentication_failure_count */
    uint64_t sign_err[6]; /* citadel_server_csr_sign_err_count, by wf_ca_err */
    uint64_t success;     /* citadel_server_success_cert_issuance_count */
} wf_ca_metrics;

/* A server with the token key (copied) and trust domain (copied; NULL = cluster.local); no CA
 * until wf_ca_server_set_ca (calls then fail with CA_NOT_READY). NULL when out of memory. */
wf_ca_server *wf_ca_server_new(const wf_ca_token_key *key, const char *trust_domain);
void wf_ca_server_free(wf_ca_server *s);
/* Replaces the CA (taken; the old one is freed). */
void wf_ca_server_set_ca(wf_ca_server *s, wf_ca *ca);
const wf_ca *wf_ca_server_ca(const wf_ca_server *s);
/* Changes the trust domain of the identities issued from now on. 0 or -1 (out of memory). */
int wf_ca_server_set_trust_domain(wf_ca_server *s, const char *td);
const char *wf_ca_server_trust_domain(const wf_ca_server *s);
const wf_ca_metrics *wf_ca_server_metrics(const wf_ca_server *s);
/* The key the server verifies tokens with (xds_auth.h uses the same tokens). */
const wf_ca_token_key *wf_ca_server_token_key(const wf_ca_server *s);

/* Kubernetes mode: service-account tokens that are not pilot's own are authenticated with a
 * TokenReview (ca_tokenreview.h; borrowed, NULL = off). The call is then answered once the
 * review comes back; the log names both authenticators ("Authenticator WeftTokenAuthenticator:
 * <why>; Authenticator KubeJWTAuthenticator: <why>"). */
struct wf_tokenreview;
void wf_ca_server_set_review(wf_ca_server *s, struct wf_tokenreview *tr);
struct wf_tokenreview *wf_ca_server_review(const wf_ca_server *s);

/* One CreateCertificate request (req, len bytes of protobuf) with the authorization metadata
 * value (NULL when absent) from peer (for the log), at now_s. Returns the gRPC status; on 0
 * *resp holds the serialized response; otherwise msg (cap bytes) the grpc-message. Pilot's
 * own tokens only (synchronous); the gRPC handlers add the TokenReview. */
int wf_ca_server_handle(wf_ca_server *s, const char *authorization, const char *peer,
                        const uint8_t *req, size_t len, int64_t now_s, wf_strbuf *resp, char *msg,
                        size_t cap);

/* The certificates issued (weft-pilot's web view, ui_proxies.h): per identity and caller IP
 * the last one, at most WF_CA_ISSUED_MAX (the oldest forgotten first). */
#define WF_CA_ISSUED_MAX 4096
typedef struct wf_ca_issued {
    char identity[256]; /* the URI SAN, spiffe://<td>/ns/<ns>/sa/<sa> */
    char ip[64];        /* the caller's IP ("" when unknown) */
    char serial[48];    /* lowercase hex */
    int64_t not_before_s, not_after_s, issued_s;
} wf_ca_issued;
/* Records one (also called by the CSR handling on success). */
void wf_ca_server_note_issued(wf_ca_server *s, const char *identity, const char *peer,
                              const wf_ca_chain *chain, int64_t now_s);
/* The last issued for identity, the one asked for from ip when there is one (ip NULL or "":
 * any); NULL when none. Valid until the next note. */
const wf_ca_issued *wf_ca_server_issued(const wf_ca_server *s, const char *identity,
                                        const char *ip);

/* The h2 handlers of the service (ud = s), for the gRPC server that hosts it. */
wf_h2_handlers wf_ca_server_handlers(wf_ca_server *s);

/* Appends the citadel_server_* metrics in Prometheus text format; now_s (wall clock) for the
 * _expiry_seconds gauges. */
void wf_ca_server_metrics_text(const wf_ca_server *s, int64_t now_s, wf_strbuf *b);

#endif
