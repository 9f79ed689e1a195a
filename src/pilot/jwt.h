/*
 * jwt.h - RequestAuthentication in weft-pilot: which policies apply to a workload and their
 * translation into Envoy's JWT filter (envoy.filters.http.jwt_authn), as istiod builds it
 * (pilot/pkg/model/authentication.go getConfigsForWorkload, pilot/pkg/security/authn/
 * policy_applier.go convertToEnvoyJwtConfig, pilot/pkg/model/jwks_resolver.go BuildLocalJwks;
 * reference security.md §7). The proxy's side is proxy/filters/http/jwt_authn.h.
 *
 * Which policies: the RequestAuthentications of the workload's namespace, then of the root
 * namespace (MeshConfig rootNamespace, default istio-system; once when they are the same), each
 * in store order, whose spec.selector.matchLabels is absent, empty or a subset of the
 * workload's labels. A policy with spec.targetRef / targetRefs attaches to gateways and
 * waypoints only (Istio's ShouldAttachPolicy), so no sidecar takes it.
 *
 * Translation: every jwtRules entry of every policy, sorted by issuer (stable), becomes
 * provider "origins-<i>":
 *   {"issuer", "audiences" (when any), "local_jwks": {"inline_string": JWKS},
 *    "forward": true (forwardOriginalToken; absent when false),
 *    "from_headers": [{"name", "value_prefix" (prefix, when set)}], "from_params",
 *    "from_cookies", "forward_payload_header" (outputPayloadToHeader),
 *    "payload_in_metadata": "payload",
 *    "normalize_payload_in_metadata": {"space_delimited_claims": spaceDelimitedClaims with
 *        "permission" and "scope" added, sorted, deduplicated},
 *    "claim_to_headers": [{"header_name", "claim_name"}] (outputClaimToHeaders),
 *    "clear_route_cache": true on gateways only (Istio's JwtFilter(proxy is not a sidecar))}
 * JWKS: the rule's `jwks` when set; else the document at `jwksUri` (else at the `jwks_uri` of
 * <issuer>/.well-known/openid-configuration) as the resolver gives it (pilot/jwks_fetch.h:
 * istiod's default PILOT_JWT_ENABLE_REMOTE_JWKS=false, istiod fetches and inlines); a JWKS
 * not fetched (yet) is Istio's fail-closed stand-in: a public key whose private key was thrown
 * away (WF_JWT_FAKE_JWKS), so every token of that issuer is rejected while a request without a
 * token still passes.
 * The filter: {"name": "envoy.filters.http.jwt_authn", "typed_config": {"@type":
 *   ...JwtAuthentication, "providers": {...}, "rules": [{"match": {"prefix": "/"}, "requires":
 *   R}], "bypass_cors_preflight": true}} with R = {"requires_any": {"requirements":
 *   [{"provider_name": "origins-0"}, {"allow_missing": {}}]}} for one provider, and
 *   {"requires_any": {"requirements": [{"provider_name": "origins-0"}, ..., {"requires_all":
 *   {"requirements": [{"requires_any": {"requirements": [{"provider_name": "origins-<i>"},
 *   {"allow_missing": {}}]}} ...]}}]}} for several.
 * Placement (Istio's listener builder: metadata exchange, [ext_authz], authn, authz, ...): in
 * every HTTP connection manager of the inbound listeners, right after
 * istio.metadata_exchange (so before the RBAC filters). A workload no policy selects gets no
 * filter.
 *
 * jwtRules[].timeout is the resolver's fetch timeout. Not offered: the proxy-side fetch
 * (remote_jwks, PILOT_JWT_ENABLE_REMOTE_JWKS=envoy/hybrid).
 *
 * Ownership: results are new JSON the caller json_decrefs; the store is borrowed. No global
 * state.
 */
#ifndef WF_PILOT_JWT_H
#define WF_PILOT_JWT_H

#include <stddef.h>

#include <jansson.h>

#include "model/store.h"

#define WF_JWT_FILTER_NAME "envoy.filters.http.jwt_authn"
#define WF_JWT_FILTER_TYPE                                                                         \
    "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication"

/* A JWKS document that verifies no token: one RSA public key whose private key was discarded
 * (Istio's FakeJwks idea; this key is weft's own). */
extern const char WF_JWT_FAKE_JWKS[];

/* The JWKS text for a rule without inline keys: jwks_uri (may be "" = OpenID discovery from
 * issuer), timeout_ms. Returns a malloc'ed copy of the document (the caller frees it), or NULL
 * when it is not available (the caller inlines WF_JWT_FAKE_JWKS). pilot/jwks_fetch.h
 * wf_jwks_resolve is weft-pilot's. */
typedef char *(*wf_jwks_resolve_fn)(void *arg, const char *jwks_uri, const char *issuer,
                                    long timeout_ms);

typedef struct wf_reqauthn_options {
    const char *ns;             /* the workload's namespace */
    const wf_kvs *labels;       /* its labels (NULL = none) */
    const char *root_ns;        /* NULL or "" = istio-system */
    bool gateway;               /* a gateway: providers get clear_route_cache true */
    wf_jwks_resolve_fn resolve; /* NULL: every jwksUri gets the stand-in */
    void *resolve_arg;
} wf_reqauthn_options;

/* The RequestAuthentications that apply (above), in order: a new array in *out (caller frees;
 * NULL when none) of *n entries. Returns 0, -1 on out of memory. */
int wf_reqauthn_applied(const wf_store *s, const wf_reqauthn_options *o, const wf_resource ***out,
                        size_t *n);

/* The jwt_authn filter for the workload: a new object, or NULL with *rc 0 when no jwtRules
 * apply, NULL with *rc -1 on out of memory. */
json_t *wf_reqauthn_filter(const wf_store *s, const wf_reqauthn_options *o, int *rc);

/* Inserts filter (borrowed; NULL = nothing) into the http_filters of every HTTP connection
 * manager of listeners (a JSON array, changed in place), right after istio.metadata_exchange
 * (at the front without it). Returns 0, -1 on out of memory. */
int wf_reqauthn_insert(json_t *listeners, const json_t *filter);

#endif
