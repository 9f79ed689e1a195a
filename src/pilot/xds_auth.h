/*
 * xds_auth.h - who an xDS client on istiod's secure port (15012) is, and whether it may speak
 * for the proxy its node names: istiod's xDS authenticators and authorization, as decisions
 * without a socket (ads_auth.c applies them to a stream).
 *
 * Istio behaviour followed (pkg/security/authentication.go Authenticate, pilot/pkg/xds/auth.go
 * authenticate / authorize / checkConnectionIdentity, security/pkg/server/ca/authenticate/
 * cert_authenticator.go, kubeauth/kube_jwt.go, pkg/security/security.go ExtractBearerToken;
 * pilot/pkg/features XDS_AUTH, default true):
 *  - Only TLS streams are authenticated; plaintext (15010) ones are not (istiod's "TODO: add a
 *    flag to prevent unauthenticated requests"). XDS_AUTH=false turns it off on 15012 too.
 *  - The authenticators run in order, the first that succeeds gives the caller's identities:
 *    ClientCertAuthenticator - the URI SANs of the client certificate the TLS handshake
 *    verified against the mesh roots ("no verified chain is found" without one);
 *    then the token authenticator (istiod's KubeJWTAuthenticator; weft's tokens, ca_token.h,
 *    named WeftTokenAuthenticator as the CSR service names it): gRPC metadata
 *    "authorization: Bearer <token>", identity spiffe://<trust domain>/ns/<ns>/sa/<sa>
 *    ("target JWT extraction error: no HTTP authorization header exists" / "... no bearer token
 *    exists in HTTP authorization header", "failed to validate the JWT: <why>"); in Kubernetes
 *    mode then KubeJWTAuthenticator, a TokenReview (ca_tokenreview.h; ads_auth.c runs it and
 *    the stream's requests wait for its answer).
 *  - All failing: the stream ends with UNAUTHENTICATED "authentication failure"; istiod logs
 *    "Failed to authenticate client from <peer>: Authenticator ClientCertAuthenticator: <err>;
 *    Authenticator WeftTokenAuthenticator: <err>" (wf_xds_authn's fail text is the part after
 *    the colon).
 *  - Authorization, at the stream's first request (its node): one identity must be a SPIFFE ID
 *    whose namespace is the proxy's (ConfigNamespace: metadata NAMESPACE, else the node id's)
 *    and, when the node metadata carries SERVICE_ACCOUNT, whose service account is that one.
 *    Otherwise PERMISSION_DENIED "authorization failed: no identities ([<id> <id>]) matched
 *    <ns>/<sa>" (Go's %v of the list), logged "Unauthorized XDS: <peer> with identity [<ids>]:
 *    <err>".
 *
 * Ownership: a caller owns its identity strings (wf_xds_caller_free). No globals.
 */
#ifndef WF_PILOT_XDS_AUTH_H
#define WF_PILOT_XDS_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "pilot/ca_token.h"

#define WF_XDS_AUTH_FAILURE       "authentication failure"
#define WF_XDS_MAX_IDS            4
#define WF_XDS_CERT_AUTHENTICATOR "ClientCertAuthenticator"
#define WF_XDS_JWT_AUTHENTICATOR  "WeftTokenAuthenticator"

/* An authenticated caller: its identities (SPIFFE IDs as text, heap). */
typedef struct wf_xds_caller {
    char *ids[WF_XDS_MAX_IDS];
    size_t n;
    const char *source; /* the authenticator that succeeded (a static string) */
} wf_xds_caller;

/* What the stream brings. */
typedef struct wf_xds_authn_in {
    const char *peer_uri_sans;  /* the verified client certificate's URI SANs joined by ","
                                 * ("" or NULL: no certificate) */
    const char *authorization;  /* the "authorization" metadata, NULL when absent */
    const wf_ca_token_key *key; /* the token key (ca_token.h) */
    const char *trust_domain;   /* NULL = cluster.local */
    int64_t now_s;              /* wall clock, for the token's exp */
} wf_xds_authn_in;

/* Runs the authenticators. 0 with *out filled (wf_xds_caller_free it), or -1 with the
 * authenticators' messages in fail (cap bytes, "Authenticator X: ...; Authenticator Y: ...").
 * Out of memory counts as a failure of the authenticator it hit. */
int wf_xds_authn(const wf_xds_authn_in *in, wf_xds_caller *out, char *fail, size_t cap);
void wf_xds_caller_free(wf_xds_caller *c);
/* Makes c (emptied first) the caller spiffe://<td>/ns/<ns>/sa/<sa> (td NULL = cluster.local)
 * authenticated by source (a static string). 0, or -1 (out of memory; c is empty). */
int wf_xds_caller_set_sa(wf_xds_caller *c, const char *td, const char *ns, const char *sa,
                         const char *source);

/* The caller's identities as Go prints a []string: "[a b]", into buf (cap bytes). */
void wf_xds_caller_ids_text(const wf_xds_caller *c, char *buf, size_t cap);

/* Whether caller may speak for the proxy of namespace ns (NULL or "" = any) and service
 * account sa (NULL or "" = any). 0, or -1 with checkConnectionIdentity's error in err
 * ("no identities ([...]) matched ns/sa"). */
int wf_xds_authz(const wf_xds_caller *c, const char *ns, const char *sa, char *err, size_t cap);

#endif
