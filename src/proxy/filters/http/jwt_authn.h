/*
 * jwt_authn.h - Envoy's JWT authentication filter (envoy.filters.http.jwt_authn, config
 * envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication) for the shapes istiod writes
 * from a RequestAuthentication (pilot/pkg/security/authn/policy_applier.go
 * convertToEnvoyJwtConfig): providers "origins-<i>" with an inline JWKS (local_jwks), one rule
 * on prefix "/" whose requirement is requires_any [provider, allow_missing] (one provider) or
 * requires_any [p0, p1, ..., requires_all [requires_any [p0, allow_missing], ...]] (several),
 * bypass_cors_preflight, payload_in_metadata "payload".
 *
 * Envoy behaviour followed (source/extensions/filters/http/jwt_authn/{filter,verifier,
 * authenticator,extractor,filter_config}.cc; the token checks are proxy/jwt/jwt.h's):
 *  - token locations of a provider: from_headers (name, value_prefix: the token starts after the
 *    first occurrence of the prefix and runs over base64url characters and '.'), from_params
 *    (query parameters), from_cookies; none given: header Authorization with prefix "Bearer "
 *    and query parameter access_token;
 *  - a provider's result: "Jwt is missing" without a token in its locations; else each token
 *    (the last found first) is parsed, its `iss` must be the provider's issuer (when the
 *    provider has one: else "Jwt issuer is not configured"), time (clock_skew_seconds, default
 *    60), audiences (the provider's), then the signature against the provider's JWKS (a JWKS
 *    that did not load: "Jwks doesn't have any valid public key"); the first token that passes
 *    makes the provider's result OK;
 *  - requirements: provider_name; requires_any (OK when a child is OK; else the last child
 *    error that is neither "missing" nor "issuer not configured", else "issuer not configured",
 *    else "missing"; allow_missing among the children turns a final "missing" into OK,
 *    allow_missing_or_failed any failure); requires_all (the first failure); no requirement
 *    (rules that match nothing, or a rule without `requires`): OK. Each provider is verified
 *    once per request;
 *  - rules are tried in order, the first whose match (prefix, path, or safe_regex-less forms
 *    only) matches the path decides; no rule matches: the request passes untouched;
 *  - a verified provider: forward_payload_header gets the token's payload part (base64url;
 *    padded when pad_forward_payload_header), claim_to_headers copy claims (string, integer,
 *    boolean; nested claims with "a.b") into headers, the token's header is removed unless
 *    `forward` (a token in a query parameter or cookie stays, as Envoy leaves it), and the
 *    payload goes into the stream's dynamic metadata under namespace
 *    "envoy.filters.http.jwt_authn", key payload_in_metadata, with the claims of
 *    normalize_payload_in_metadata.space_delimited_claims split at spaces into lists (what
 *    Istio's RBAC matches `requestPrincipals` and `request.auth.claims[...]` against);
 *  - clear_route_cache (istiod sets it on gateways): when a verified provider with it added
 *    headers, the route is chosen again (the connection manager's clearRouteCache; weft's route
 *    matchers see the request as received, so the choice changes only when the route depends on
 *    something else that changed);
 *  - the headers named by forward_payload_header and claim_to_headers are removed from every
 *    request first (the extractor's sanitizeHeaders), so a client cannot forge them;
 *  - bypass_cors_preflight: OPTIONS with Origin and Access-Control-Request-Method passes;
 *  - a failure: local reply 401 (403 for "Audiences in Jwt are not allowed"), body the status
 *    string, header `www-authenticate: Bearer realm="<scheme>://<host><path>"` plus
 *    `, error="invalid_token"` unless the status is "Jwt is missing", details
 *    `jwt_authn_access_denied{<status, spaces as '_'>}`;
 *  - stats `http.<hcm stat_prefix>.jwt_authn.<stat_prefix>{allowed,denied,
 *    cors_preflight_bypassed,jwks_fetch_success,jwks_fetch_failed,jwt_cache_hit,
 *    jwt_cache_miss}` (counters; weft has no JWKS fetch or JWT cache, so the last four stay 0
 *    except cors_preflight_bypassed).
 *
 * Not supported (the loader refuses them by JSON path): remote_jwks (istiod's default
 * PILOT_JWT_ENABLE_REMOTE_JWKS=false inlines the keys: weft-pilot does the same),
 * filter_state_rules, requirement_map and per-route configs, provider_and_audiences,
 * jwt_cache_config, header_in_metadata, failed_status_in_metadata, require_expiration,
 * max_lifetime, subject, strip_failure_response, a standalone allow_missing /
 * allow_missing_or_failed requirement (outside requires_any) and route match forms other than
 * prefix and path.
 *
 * Cost: a request without a token scans the configured header and query locations and
 * allocates nothing; only a token found costs its parsing and verification (one heap block per
 * request for the decoded token, the payload and the header values, freed when the stream ends).
 *
 * Threads: the config is immutable and shared (the JWKS keys too); the stat slots are written
 * once by wp_jwt_authn_register_stats before the workers start.
 */
#ifndef WEFT_PROXY_FILTERS_HTTP_JWT_AUTHN_H
#define WEFT_PROXY_FILTERS_HTTP_JWT_AUTHN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/jwt/jwt.h"
#include "proxy/stats/stats.h"

#define WP_JWT_AUTHN_NAME "envoy.filters.http.jwt_authn"
#define WP_JWT_AUTHN_TYPE                                                                          \
    "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication"
#define WP_JWT_DEFAULT_SKEW_S 60

typedef struct {
    const char *name; /* lower-case */
    size_t name_len;
    const char *prefix; /* value_prefix, "" none */
    size_t prefix_len;
} wp_jwt_header_loc;

typedef struct {
    const char *header; /* lower-case */
    const char *claim;
} wp_jwt_claim_header;

typedef struct wp_jwt_provider {
    const char *name;
    const char *issuer; /* "" = any issuer */
    const char *const *audiences;
    size_t naudiences;
    const wp_jwks *jwks; /* NULL: no valid key (owned by the config snapshot) */
    const wp_jwt_header_loc *headers;
    size_t nheaders;
    const char *const *params;
    size_t nparams;
    const char *const *cookies;
    size_t ncookies;
    bool forward;
    const char *forward_payload_header; /* lower-case, NULL none */
    bool pad_forward_payload_header;
    const char *payload_in_metadata; /* NULL none */
    const char *const *space_delimited;
    size_t nspace_delimited;
    const wp_jwt_claim_header *claim_headers;
    size_t nclaim_headers;
    uint64_t clock_skew_s;
    bool clear_route_cache; /* Istio sets it on gateways */
} wp_jwt_provider;

typedef enum {
    WP_JREQ_NONE, /* no requirement: allowed */
    WP_JREQ_PROVIDER,
    WP_JREQ_ANY,
    WP_JREQ_ALL,
} wp_jwt_req_kind;

typedef struct wp_jwt_req {
    wp_jwt_req_kind kind;
    uint32_t provider;             /* WP_JREQ_PROVIDER: index into providers */
    const struct wp_jwt_req *kids; /* ANY / ALL (allow_missing* are flags, not kids) */
    size_t nkids;
    bool allow_missing, allow_missing_or_failed; /* ANY */
} wp_jwt_req;

typedef struct {
    bool exact; /* path (exact, without the query) vs prefix */
    const char *value;
    size_t len;
    wp_jwt_req req;
} wp_jwt_rule;

#define WP_JWT_MAX_PROVIDERS 32

typedef struct wp_jwt_authn_filter {
    const wp_jwt_provider *providers;
    size_t nproviders;
    const wp_jwt_rule *rules;
    size_t nrules;
    bool bypass_cors_preflight;
    const char *stat_prefix; /* JwtAuthentication.stat_prefix, "" none */
    wp_header_ops sanitize;  /* removes forward_payload_header / claim_to_headers names */
    uint32_t st_allowed, st_denied, st_cors, st_fetch_ok, st_fetch_failed; /* stat slots */
} wp_jwt_authn_filter;

/* ---- the request-path logic (used by filters/http/jwt_authn_filter.c, testable alone) ---- */

/* One request as the filter sees it. */
typedef struct {
    const char *method;
    size_t method_len;
    const char *path; /* with the query */
    size_t path_len;
    const h1_header *headers;
    size_t nheaders;
} wp_jwt_request;

/* What a verification produced for the request: header changes, the payload for the dynamic
 * metadata. Allocated only when a token was found (wp_jwt_result_free). */
#define WP_JWT_MAX_ADDS 8
typedef struct wp_jwt_result {
    wp_header_ops ops; /* for the upstream request */
    wp_header_add adds[WP_JWT_MAX_ADDS];
    const char *removes[WP_JWT_MAX_ADDS + 2];
    char *strings[WP_JWT_MAX_ADDS]; /* owned values of adds */
    size_t nstrings;
    const char *md_key; /* payload_in_metadata, NULL none */
    json_t *payload;    /* owned */
    bool clear_route;   /* a verified provider with clear_route_cache added headers */
} wp_jwt_result;
void wp_jwt_result_free(wp_jwt_result *r);

/* The first token of provider p in the request (its location's header name in *hdr when it
 * came from a header, else NULL); false when none. Allocates nothing. */
bool wp_jwt_find_token(const wp_jwt_provider *p, const wp_jwt_request *rq, const char **tok,
                       size_t *tok_len, const h1_str **hdr);

/* Whether the request is a CORS preflight (OPTIONS with Origin and
 * Access-Control-Request-Method). */
bool wp_jwt_is_cors_preflight(const wp_jwt_request *rq);

/* The rule that applies to the request, NULL when none. */
const wp_jwt_rule *wp_jwt_match_rule(const wp_jwt_authn_filter *f, const wp_jwt_request *rq);

/* Verifies the request against requirement req at time now (seconds): returns the final status
 * (WP_JWT_OK = allowed). *res receives a new result when some token was verified (header
 * changes and payload to apply), else stays NULL; the caller frees it. A result that cannot be
 * allocated fails the request as "Jwt verification fails". */
wp_jwt_status wp_jwt_verify_request(const wp_jwt_authn_filter *f, const wp_jwt_req *req,
                                    const wp_jwt_request *rq, uint64_t now, wp_jwt_result **res);

/* Registers the filter's counters (see above) for every HCM that has the filter. Config time.
 * Returns 0, or -1 when a registration failed (out of memory). */
int wp_jwt_authn_register_stats(wp_stats *st, const wp_config *c);

#endif
