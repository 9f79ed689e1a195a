/*
 * jwt.h - JSON Web Tokens and JSON Web Key Sets as Envoy's jwt_authn filter checks them
 * (Envoy uses google/jwt_verify_lib; weft's code follows its behaviour and its status strings):
 * parsing a token (RFC 7519 compact form), parsing a JWKS (RFC 7517: RSA and EC keys), checking
 * the time claims with a clock skew, the audiences, and the signature with OpenSSL 3 EVP.
 *
 * Behaviour followed (jwt_verify_lib src/jwt.cc parseFromString, src/jwks.cc, src/verify.cc,
 * src/status.cc getStatusString, check_audience.h; Envoy jwt_authn authenticator.cc):
 *  - a token is Header.Payload.Signature, exactly two dots (else "Jwt is not in the form of
 *    Header.Payload.Signature with two dots and 3 sections"); each part is base64url (padding
 *    optional); header and payload are JSON objects; the header's `alg` is required and must be
 *    one of ES256/384/512, HS256/384/512, RS256/384/512, PS256/384/512, EdDSA ("none" and
 *    anything else: "Jwt header [alg] is not supported"); `kid` must be a string when present;
 *    `iss`, `sub`, `jti` strings, `iat`, `nbf`, `exp` non-negative numbers, `aud` a string or a
 *    list of strings, each when present (else the matching "... field is not ..." status);
 *  - time: nbf > now + skew is "Jwt not yet valid", exp (when non-zero) < now - skew is
 *    "Jwt is expired" (Envoy's clock_skew_seconds, default 60);
 *  - audiences: allowed when the configured list is empty, else when one of the token's
 *    audiences equals one configured, both compared without a leading "http://" or "https://"
 *    and without a trailing '/' (CheckAudience) ; a token without `aud` is then refused;
 *  - signature: the keys are tried in order; a key whose `kid` differs from the token's (both
 *    set), or whose `alg` differs from the token's (key `alg` set), is skipped; when no key is
 *    left the status is "Jwks doesn't have key to match kid or alg from Jwt", when keys were
 *    tried and none verified "Jwt verification fails". A key verifies only tokens of its own
 *    family (RS and PS with an RSA key, ES with an EC key of the curve's size): an HS256 token
 *    is never checked against an RSA public key (no algorithm confusion), and `alg: none` never
 *    reaches this point. RS: PKCS#1 v1.5; PS: PSS with MGF1 of the same digest and a salt of
 *    the digest's length; ES: the JWS raw r||s signature (2 x the curve's field size) as an
 *    ECDSA signature;
 *  - JWKS: JSON ("Jwks is an invalid JSON"), an object with `keys` ("Jwks does not have [keys]
 *    field"), an array ("[keys] in Jwks is not an array"); each key needs `kty` (RSA: `n`, `e`;
 *    EC: `crv` P-256 / P-384 / P-521 or taken from `alg`, `x`, `y`); an invalid key is skipped
 *    and a set left without keys is "Jwks doesn't have any valid public key". kty `oct` (HMAC)
 *    and `OKP` (EdDSA) keys, `x5c` and PEM keys are not supported: such keys are skipped with
 *    "[kty] is not supported in [keys]".
 *
 * Memory: a wp_jwt owns its decoded parts (wp_jwt_free). A wp_jwks owns its keys (EVP_PKEY)
 * and is immutable after wp_jwks_parse, so it may be shared by every worker thread (OpenSSL 3
 * allows concurrent verification with one EVP_PKEY). No global state.
 */
#ifndef WEFT_PROXY_JWT_JWT_H
#define WEFT_PROXY_JWT_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* jwt_verify_lib's Status (the values weft produces). */
typedef enum {
    WP_JWT_OK,
    WP_JWT_MISSED,
    WP_JWT_NOT_YET_VALID,
    WP_JWT_EXPIRED,
    WP_JWT_BAD_FORMAT,
    WP_JWT_HEADER_BAD_BASE64,
    WP_JWT_HEADER_BAD_JSON,
    WP_JWT_HEADER_BAD_ALG,
    WP_JWT_HEADER_NOT_IMPLEMENTED_ALG,
    WP_JWT_HEADER_BAD_KID,
    WP_JWT_PAYLOAD_BAD_BASE64,
    WP_JWT_PAYLOAD_BAD_JSON,
    WP_JWT_PAYLOAD_ISS_NOT_STRING,
    WP_JWT_PAYLOAD_SUB_NOT_STRING,
    WP_JWT_PAYLOAD_IAT_NOT_INTEGER,
    WP_JWT_PAYLOAD_IAT_OUT_OF_RANGE,
    WP_JWT_PAYLOAD_NBF_NOT_INTEGER,
    WP_JWT_PAYLOAD_NBF_OUT_OF_RANGE,
    WP_JWT_PAYLOAD_EXP_NOT_INTEGER,
    WP_JWT_PAYLOAD_EXP_OUT_OF_RANGE,
    WP_JWT_PAYLOAD_JTI_NOT_STRING,
    WP_JWT_PAYLOAD_AUD_NOT_STRING,
    WP_JWT_SIGNATURE_BAD_BASE64,
    WP_JWT_UNKNOWN_ISSUER,
    WP_JWT_AUDIENCE_NOT_ALLOWED,
    WP_JWT_VERIFICATION_FAIL,
    WP_JWT_MULTIPLE_TOKENS,
    WP_JWKS_PARSE_ERROR,
    WP_JWKS_NO_KEYS,
    WP_JWKS_BAD_KEYS,
    WP_JWKS_NO_VALID_KEYS,
    WP_JWKS_KID_ALG_MISMATCH,
    WP_JWKS_RSA_PARSE_ERROR,
    WP_JWKS_EC_CREATE_KEY_FAIL,
    WP_JWKS_EC_X_OR_Y_BAD_BASE64,
    WP_JWKS_EC_PARSE_ERROR,
    WP_JWKS_FETCH_FAIL,
    WP_JWKS_MISSING_KTY,
    WP_JWKS_BAD_KTY,
    WP_JWKS_NOT_IMPLEMENTED_KTY,
    WP_JWKS_RSA_KEY_BAD_ALG,
    WP_JWKS_RSA_KEY_MISSING_N,
    WP_JWKS_RSA_KEY_BAD_N,
    WP_JWKS_RSA_KEY_MISSING_E,
    WP_JWKS_RSA_KEY_BAD_E,
    WP_JWKS_EC_KEY_BAD_ALG,
    WP_JWKS_EC_KEY_BAD_CRV,
    WP_JWKS_EC_KEY_ALG_OR_CRV_UNSUPPORTED,
    WP_JWKS_EC_KEY_ALG_NOT_COMPATIBLE_WITH_CRV,
    WP_JWKS_EC_KEY_MISSING_X,
    WP_JWKS_EC_KEY_BAD_X,
    WP_JWKS_EC_KEY_MISSING_Y,
    WP_JWKS_EC_KEY_BAD_Y,
    WP_JWT_STATUS_COUNT_
} wp_jwt_status;

/* getStatusString: "Jwt is expired", ... (static). */
const char *wp_jwt_status_str(wp_jwt_status s);

/* Envoy's response code details for a rejection: "jwt_authn_access_denied{" + the status
 * string with every space as '_' + "}" (static). */
const char *wp_jwt_status_details(wp_jwt_status s);

/* A parsed token. Strings are NUL-terminated and owned by the token. */
typedef struct wp_jwt {
    char alg[8];             /* "RS256", ... */
    const char *kid;         /* NULL when absent (owned by header) */
    const char *iss;         /* "" when absent (owned by payload) */
    const char *sub;         /* "" when absent */
    uint64_t iat, nbf, exp;  /* 0 when absent */
    json_t *header;          /* the decoded header object (owned) */
    json_t *payload;         /* the decoded payload object (owned) */
    const char *payload_b64; /* the payload part as in the token (points into the caller's
                              * token: valid while it is) */
    size_t payload_b64_len;
    size_t signed_len;  /* bytes of "header.payload" at the start of the token */
    unsigned char *sig; /* the decoded signature (owned) */
    size_t sig_len;
} wp_jwt;

/* Parses token[0..len) into *t (zeroed first). Returns WP_JWT_OK, or the status of the first
 * error (then *t holds nothing to free). token must outlive t (payload_b64). */
wp_jwt_status wp_jwt_parse(wp_jwt *t, const char *token, size_t len);
void wp_jwt_free(wp_jwt *t);

/* The time claims at now (seconds since the epoch) with skew seconds of tolerance. */
wp_jwt_status wp_jwt_check_time(const wp_jwt *t, uint64_t now, uint64_t skew);

/* Whether the token's `aud` (a string or a list) meets the configured audiences aud[0..n)
 * (n == 0: any). */
bool wp_jwt_audiences_allowed(const wp_jwt *t, const char *const *aud, size_t n);

/* A key set. */
typedef struct wp_jwks wp_jwks;

/* Parses a JWKS document (text[0..len)). Returns the set (possibly with fewer keys than the
 * document when some were invalid), or NULL with the status in *st (WP_JWKS_NO_VALID_KEYS when
 * no key was usable; *first_key_err then names the first key's error, WP_JWT_OK when the
 * document had no keys at all). *st is WP_JWT_OK on success. */
wp_jwks *wp_jwks_parse(const char *text, size_t len, wp_jwt_status *st,
                       wp_jwt_status *first_key_err);
void wp_jwks_free(wp_jwks *k);
size_t wp_jwks_count(const wp_jwks *k);

/* The signature of t (parsed from token, which must be the same bytes) against the keys of k,
 * as described above. */
wp_jwt_status wp_jwt_verify_signature(const wp_jwt *t, const char *token, const wp_jwks *k);

#endif
