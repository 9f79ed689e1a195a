/*
 * jwt_token.c - status strings, token parsing, time and audience checks (jwt.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "proxy/jwt/jwt.h"

/* ---------- status ---------- */

static const char *const STATUS[WP_JWT_STATUS_COUNT_] = {
    [WP_JWT_OK] = "OK",
    [WP_JWT_MISSED] = "Jwt is missing",
    [WP_JWT_NOT_YET_VALID] = "Jwt not yet valid",
    [WP_JWT_EXPIRED] = "Jwt is expired",
    [WP_JWT_BAD_FORMAT] = ("Jwt is not in the form of Header.Payload.Signature with two dots and 3 "
                           "sections"),
    [WP_JWT_HEADER_BAD_BASE64] = "Jwt header is an invalid Base64url encoded",
    [WP_JWT_HEADER_BAD_JSON] = "Jwt header is an invalid JSON",
    [WP_JWT_HEADER_BAD_ALG] = "Jwt header [alg] field is required and must be a string",
    [WP_JWT_HEADER_NOT_IMPLEMENTED_ALG] = "Jwt header [alg] is not supported",
    [WP_JWT_HEADER_BAD_KID] = "Jwt header [kid] field is not a string",
    [WP_JWT_PAYLOAD_BAD_BASE64] = "Jwt payload is an invalid Base64url encoded",
    [WP_JWT_PAYLOAD_BAD_JSON] = "Jwt payload is an invalid JSON",
    [WP_JWT_PAYLOAD_ISS_NOT_STRING] = "Jwt payload [iss] field is not a string",
    [WP_JWT_PAYLOAD_SUB_NOT_STRING] = "Jwt payload [sub] field is not a string",
    [WP_JWT_PAYLOAD_IAT_NOT_INTEGER] = "Jwt payload [iat] field is not an integer",
    [WP_JWT_PAYLOAD_IAT_OUT_OF_RANGE] = "Jwt payload [iat] field is not a positive 64 bit integer",
    [WP_JWT_PAYLOAD_NBF_NOT_INTEGER] = "Jwt payload [nbf] field is not an integer",
    [WP_JWT_PAYLOAD_NBF_OUT_OF_RANGE] = "Jwt payload [nbf] field is not a positive 64 bit integer",
    [WP_JWT_PAYLOAD_EXP_NOT_INTEGER] = "Jwt payload [exp] field is not an integer",
    [WP_JWT_PAYLOAD_EXP_OUT_OF_RANGE] = "Jwt payload [exp] field is not a positive 64 bit integer",
    [WP_JWT_PAYLOAD_JTI_NOT_STRING] = "Jwt payload [jti] field is not a string",
    [WP_JWT_PAYLOAD_AUD_NOT_STRING] = "Jwt payload [aud] field is not a string or string list",
    [WP_JWT_SIGNATURE_BAD_BASE64] = "Jwt signature is an invalid Base64url encoded",
    [WP_JWT_UNKNOWN_ISSUER] = "Jwt issuer is not configured",
    [WP_JWT_AUDIENCE_NOT_ALLOWED] = "Audiences in Jwt are not allowed",
    [WP_JWT_VERIFICATION_FAIL] = "Jwt verification fails",
    [WP_JWT_MULTIPLE_TOKENS] = "Found multiple Jwt tokens",
    [WP_JWKS_PARSE_ERROR] = "Jwks is an invalid JSON",
    [WP_JWKS_NO_KEYS] = "Jwks does not have [keys] field",
    [WP_JWKS_BAD_KEYS] = "[keys] in Jwks is not an array",
    [WP_JWKS_NO_VALID_KEYS] = "Jwks doesn't have any valid public key",
    [WP_JWKS_KID_ALG_MISMATCH] = "Jwks doesn't have key to match kid or alg from Jwt",
    [WP_JWKS_RSA_PARSE_ERROR] = "Jwks RSA [n] or [e] field is missing or has a parse error",
    [WP_JWKS_EC_CREATE_KEY_FAIL] = "Jwks EC create key fail",
    [WP_JWKS_EC_X_OR_Y_BAD_BASE64] = "Jwks EC [x] or [y] field is an invalid Base64.",
    [WP_JWKS_EC_PARSE_ERROR] = "Jwks EC [x] and [y] fields have a parse error.",
    [WP_JWKS_FETCH_FAIL] = "Jwks remote fetch is failed",
    [WP_JWKS_MISSING_KTY] = "[kty] is missing in [keys]",
    [WP_JWKS_BAD_KTY] = "[kty] is bad in [keys]",
    [WP_JWKS_NOT_IMPLEMENTED_KTY] = "[kty] is not supported in [keys]",
    [WP_JWKS_RSA_KEY_BAD_ALG] = "[alg] is not started with [RS] or [PS] for an RSA key",
    [WP_JWKS_RSA_KEY_MISSING_N] = "[n] field is missing for a RSA key",
    [WP_JWKS_RSA_KEY_BAD_N] = "[n] field is not string for a RSA key",
    [WP_JWKS_RSA_KEY_MISSING_E] = "[e] field is missing for a RSA key",
    [WP_JWKS_RSA_KEY_BAD_E] = "[e] field is not string for a RSA key",
    [WP_JWKS_EC_KEY_BAD_ALG] = "[alg] is not started with [ES] for an EC key",
    [WP_JWKS_EC_KEY_BAD_CRV] = "[crv] field is not string for an EC key",
    [WP_JWKS_EC_KEY_ALG_OR_CRV_UNSUPPORTED] = "[crv] or [alg] field is not supported for an EC key",
    [WP_JWKS_EC_KEY_ALG_NOT_COMPATIBLE_WITH_CRV] =
        "[crv] field specified is not compatible with [alg] for an EC key",
    [WP_JWKS_EC_KEY_MISSING_X] = "[x] field is missing for an EC key",
    [WP_JWKS_EC_KEY_BAD_X] = "[x] field is not string for an EC key",
    [WP_JWKS_EC_KEY_MISSING_Y] = "[y] field is missing for an EC key",
    [WP_JWKS_EC_KEY_BAD_Y] = "[y] field is not string for an EC key",
};

const char *wp_jwt_status_str(wp_jwt_status s)
{
    return (unsigned)s < WP_JWT_STATUS_COUNT_ && STATUS[s] ? STATUS[s] : "Unknown status";
}

/* Envoy's generateRcDetails: "jwt_authn_access_denied{" + the status string with every space
 * as '_' + "}" (StringUtil::replaceAllEmptySpace), one literal per status. */
static const char *const DETAILS[WP_JWT_STATUS_COUNT_] = {
    [WP_JWT_OK] = "jwt_authn_access_denied{OK}",
    [WP_JWT_MISSED] = "jwt_authn_access_denied{Jwt_is_missing}",
    [WP_JWT_NOT_YET_VALID] = "jwt_authn_access_denied{Jwt_not_yet_valid}",
    [WP_JWT_EXPIRED] = "jwt_authn_access_denied{Jwt_is_expired}",
    [WP_JWT_BAD_FORMAT] = ("jwt_authn_access_denied{Jwt_is_not_in_the_form_of_Header.Payload."
                           "Signature_with_two_dots_and_3_sections}"),
    [WP_JWT_HEADER_BAD_BASE64] =
        "jwt_authn_access_denied{Jwt_header_is_an_invalid_Base64url_encoded}",
    [WP_JWT_HEADER_BAD_JSON] = "jwt_authn_access_denied{Jwt_header_is_an_invalid_JSON}",
    [WP_JWT_HEADER_BAD_ALG] =
        "jwt_authn_access_denied{Jwt_header_[alg]_field_is_required_and_must_be_a_string}",
    [WP_JWT_HEADER_NOT_IMPLEMENTED_ALG] =
        "jwt_authn_access_denied{Jwt_header_[alg]_is_not_supported}",
    [WP_JWT_HEADER_BAD_KID] = "jwt_authn_access_denied{Jwt_header_[kid]_field_is_not_a_string}",
    [WP_JWT_PAYLOAD_BAD_BASE64] =
        "jwt_authn_access_denied{Jwt_payload_is_an_invalid_Base64url_encoded}",
    [WP_JWT_PAYLOAD_BAD_JSON] = "jwt_authn_access_denied{Jwt_payload_is_an_invalid_JSON}",
    [WP_JWT_PAYLOAD_ISS_NOT_STRING] =
        "jwt_authn_access_denied{Jwt_payload_[iss]_field_is_not_a_string}",
    [WP_JWT_PAYLOAD_SUB_NOT_STRING] =
        "jwt_authn_access_denied{Jwt_payload_[sub]_field_is_not_a_string}",
    [WP_JWT_PAYLOAD_IAT_NOT_INTEGER] =
        "jwt_authn_access_denied{Jwt_payload_[iat]_field_is_not_an_integer}",
    [WP_JWT_PAYLOAD_IAT_OUT_OF_RANGE] =
        "jwt_authn_access_denied{Jwt_payload_[iat]_field_is_not_a_positive_64_bit_integer}",
    [WP_JWT_PAYLOAD_NBF_NOT_INTEGER] =
        "jwt_authn_access_denied{Jwt_payload_[nbf]_field_is_not_an_integer}",
    [WP_JWT_PAYLOAD_NBF_OUT_OF_RANGE] =
        "jwt_authn_access_denied{Jwt_payload_[nbf]_field_is_not_a_positive_64_bit_integer}",
    [WP_JWT_PAYLOAD_EXP_NOT_INTEGER] =
        "jwt_authn_access_denied{Jwt_payload_[exp]_field_is_not_an_integer}",
    [WP_JWT_PAYLOAD_EXP_OUT_OF_RANGE] =
        "jwt_authn_access_denied{Jwt_payload_[exp]_field_is_not_a_positive_64_bit_integer}",
    [WP_JWT_PAYLOAD_JTI_NOT_STRING] =
        "jwt_authn_access_denied{Jwt_payload_[jti]_field_is_not_a_string}",
    [WP_JWT_PAYLOAD_AUD_NOT_STRING] =
        "jwt_authn_access_denied{Jwt_payload_[aud]_field_is_not_a_string_or_string_list}",
    [WP_JWT_SIGNATURE_BAD_BASE64] =
        "jwt_authn_access_denied{Jwt_signature_is_an_invalid_Base64url_encoded}",
    [WP_JWT_UNKNOWN_ISSUER] = "jwt_authn_access_denied{Jwt_issuer_is_not_configured}",
    [WP_JWT_AUDIENCE_NOT_ALLOWED] = "jwt_authn_access_denied{Audiences_in_Jwt_are_not_allowed}",
    [WP_JWT_VERIFICATION_FAIL] = "jwt_authn_access_denied{Jwt_verification_fails}",
    [WP_JWT_MULTIPLE_TOKENS] = "jwt_authn_access_denied{Found_multiple_Jwt_tokens}",
    [WP_JWKS_PARSE_ERROR] = "jwt_authn_access_denied{Jwks_is_an_invalid_JSON}",
    [WP_JWKS_NO_KEYS] = "jwt_authn_access_denied{Jwks_does_not_have_[keys]_field}",
    [WP_JWKS_BAD_KEYS] = "jwt_authn_access_denied{[keys]_in_Jwks_is_not_an_array}",
    [WP_JWKS_NO_VALID_KEYS] = "jwt_authn_access_denied{Jwks_doesn't_have_any_valid_public_key}",
    [WP_JWKS_KID_ALG_MISMATCH] =
        "jwt_authn_access_denied{Jwks_doesn't_have_key_to_match_kid_or_alg_from_Jwt}",
    [WP_JWKS_RSA_PARSE_ERROR] =
        "jwt_authn_access_denied{Jwks_RSA_[n]_or_[e]_field_is_missing_or_has_a_parse_error}",
    [WP_JWKS_EC_CREATE_KEY_FAIL] = "jwt_authn_access_denied{Jwks_EC_create_key_fail}",
    [WP_JWKS_EC_X_OR_Y_BAD_BASE64] =
        "jwt_authn_access_denied{Jwks_EC_[x]_or_[y]_field_is_an_invalid_Base64.}",
    [WP_JWKS_EC_PARSE_ERROR] =
        "jwt_authn_access_denied{Jwks_EC_[x]_and_[y]_fields_have_a_parse_error.}",
    [WP_JWKS_FETCH_FAIL] = "jwt_authn_access_denied{Jwks_remote_fetch_is_failed}",
    [WP_JWKS_MISSING_KTY] = "jwt_authn_access_denied{[kty]_is_missing_in_[keys]}",
    [WP_JWKS_BAD_KTY] = "jwt_authn_access_denied{[kty]_is_bad_in_[keys]}",
    [WP_JWKS_NOT_IMPLEMENTED_KTY] = "jwt_authn_access_denied{[kty]_is_not_supported_in_[keys]}",
    [WP_JWKS_RSA_KEY_BAD_ALG] =
        "jwt_authn_access_denied{[alg]_is_not_started_with_[RS]_or_[PS]_for_an_RSA_key}",
    [WP_JWKS_RSA_KEY_MISSING_N] = "jwt_authn_access_denied{[n]_field_is_missing_for_a_RSA_key}",
    [WP_JWKS_RSA_KEY_BAD_N] = "jwt_authn_access_denied{[n]_field_is_not_string_for_a_RSA_key}",
    [WP_JWKS_RSA_KEY_MISSING_E] = "jwt_authn_access_denied{[e]_field_is_missing_for_a_RSA_key}",
    [WP_JWKS_RSA_KEY_BAD_E] = "jwt_authn_access_denied{[e]_field_is_not_string_for_a_RSA_key}",
    [WP_JWKS_EC_KEY_BAD_ALG] =
        "jwt_authn_access_denied{[alg]_is_not_started_with_[ES]_for_an_EC_key}",
    [WP_JWKS_EC_KEY_BAD_CRV] = "jwt_authn_access_denied{[crv]_field_is_not_string_for_an_EC_key}",
    [WP_JWKS_EC_KEY_ALG_OR_CRV_UNSUPPORTED] =
        "jwt_authn_access_denied{[crv]_or_[alg]_field_is_not_supported_for_an_EC_key}",
    [WP_JWKS_EC_KEY_ALG_NOT_COMPATIBLE_WITH_CRV] =
        "jwt_authn_access_denied{[crv]_field_specified_is_not_compatible_with_[alg]_for_an_EC_key}",
    [WP_JWKS_EC_KEY_MISSING_X] = "jwt_authn_access_denied{[x]_field_is_missing_for_an_EC_key}",
    [WP_JWKS_EC_KEY_BAD_X] = "jwt_authn_access_denied{[x]_field_is_not_string_for_an_EC_key}",
    [WP_JWKS_EC_KEY_MISSING_Y] = "jwt_authn_access_denied{[y]_field_is_missing_for_an_EC_key}",
    [WP_JWKS_EC_KEY_BAD_Y] = "jwt_authn_access_denied{[y]_field_is_not_string_for_an_EC_key}",
};

const char *wp_jwt_status_details(wp_jwt_status s)
{
    if ((unsigned)s >= WP_JWT_STATUS_COUNT_ || !DETAILS[s])
        s = WP_JWT_VERIFICATION_FAIL;
    return DETAILS[s];
}

/* ---------- parsing ---------- */

/* base64url (padding optional) of in[0..len) into a new buffer (*out, *outlen). */
static bool b64url(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    unsigned char *buf = malloc(len / 4 * 3 + 4);
    if (!buf)
        return false;
    if (!wf_base64_decode(in, len, WF_B64_URL | WF_B64_PAD_OPTIONAL, buf, outlen)) {
        free(buf);
        return false;
    }
    *out = buf;
    return true;
}

/* A base64url JSON object part; NULL with *st set (bad_b64 / bad_json) on failure. */
static json_t *json_part(const char *in, size_t len, wp_jwt_status bad_b64, wp_jwt_status bad_json,
                         wp_jwt_status *st)
{
    unsigned char *buf;
    size_t n;
    if (!b64url(in, len, &buf, &n)) {
        *st = bad_b64;
        return NULL;
    }
    json_t *j = json_loadb((const char *)buf, n, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        *st = bad_json;
        return NULL;
    }
    return j;
}

static bool alg_supported(const char *a)
{
    static const char *const algs[] = {"ES256", "ES384", "ES512", "HS256", "HS384",
                                       "HS512", "RS256", "RS384", "RS512", "PS256",
                                       "PS384", "PS512", "EdDSA"};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++)
        if (strcmp(a, algs[i]) == 0)
            return true;
    return false;
}

static wp_jwt_status parse_header(wp_jwt *t)
{
    json_t *alg = json_object_get(t->header, "alg");
    if (!json_is_string(alg))
        return WP_JWT_HEADER_BAD_ALG;
    const char *a = json_string_value(alg);
    if (!alg_supported(a))
        return WP_JWT_HEADER_NOT_IMPLEMENTED_ALG;
    memcpy(t->alg, a, strlen(a) + 1);
    json_t *kid = json_object_get(t->header, "kid");
    if (kid && !json_is_null(kid)) {
        if (!json_is_string(kid))
            return WP_JWT_HEADER_BAD_KID;
        t->kid = json_string_value(kid);
    }
    return WP_JWT_OK;
}

/* An optional string claim into *out ("" when absent). */
static bool str_claim(json_t *p, const char *k, const char **out)
{
    json_t *v = json_object_get(p, k);
    *out = "";
    if (!v)
        return true;
    if (!json_is_string(v))
        return false;
    *out = json_string_value(v);
    return true;
}

/* An optional time claim (a number, StructUtils::GetUInt64: truncated). */
static wp_jwt_status num_claim(json_t *p, const char *k, uint64_t *out, wp_jwt_status not_int,
                               wp_jwt_status range)
{
    json_t *v = json_object_get(p, k);
    *out = 0;
    if (!v)
        return WP_JWT_OK;
    if (!json_is_number(v))
        return not_int;
    double d = json_number_value(v);
    if (!(d >= 0) || d >= 18446744073709551616.0 || isnan(d))
        return range;
    if (json_is_integer(v))
        *out = (uint64_t)json_integer_value(v);
    else
        *out = (uint64_t)d;
    return WP_JWT_OK;
}

static wp_jwt_status parse_payload(wp_jwt *t)
{
    json_t *p = t->payload;
    const char *jti;
    if (!str_claim(p, "iss", &t->iss))
        return WP_JWT_PAYLOAD_ISS_NOT_STRING;
    if (!str_claim(p, "sub", &t->sub))
        return WP_JWT_PAYLOAD_SUB_NOT_STRING;
    wp_jwt_status st;
    if ((st = num_claim(p, "iat", &t->iat, WP_JWT_PAYLOAD_IAT_NOT_INTEGER,
                        WP_JWT_PAYLOAD_IAT_OUT_OF_RANGE)) != WP_JWT_OK ||
        (st = num_claim(p, "nbf", &t->nbf, WP_JWT_PAYLOAD_NBF_NOT_INTEGER,
                        WP_JWT_PAYLOAD_NBF_OUT_OF_RANGE)) != WP_JWT_OK ||
        (st = num_claim(p, "exp", &t->exp, WP_JWT_PAYLOAD_EXP_NOT_INTEGER,
                        WP_JWT_PAYLOAD_EXP_OUT_OF_RANGE)) != WP_JWT_OK)
        return st;
    if (!str_claim(p, "jti", &jti))
        return WP_JWT_PAYLOAD_JTI_NOT_STRING;
    json_t *aud = json_object_get(p, "aud");
    if (aud && !json_is_string(aud)) {
        if (!json_is_array(aud))
            return WP_JWT_PAYLOAD_AUD_NOT_STRING;
        size_t i;
        json_t *e;
        json_array_foreach(aud, i, e)
        {
            if (!json_is_string(e))
                return WP_JWT_PAYLOAD_AUD_NOT_STRING;
        }
    }
    return WP_JWT_OK;
}

wp_jwt_status wp_jwt_parse(wp_jwt *t, const char *token, size_t len)
{
    memset(t, 0, sizeof(*t));
    const char *d1 = memchr(token, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)))
        return WP_JWT_BAD_FORMAT;
    wp_jwt_status st = WP_JWT_OK;
    t->header = json_part(token, (size_t)(d1 - token), WP_JWT_HEADER_BAD_BASE64,
                          WP_JWT_HEADER_BAD_JSON, &st);
    if (!t->header)
        return st;
    if ((st = parse_header(t)) != WP_JWT_OK)
        goto fail;
    t->payload_b64 = d1 + 1;
    t->payload_b64_len = (size_t)(d2 - d1 - 1);
    t->payload = json_part(t->payload_b64, t->payload_b64_len, WP_JWT_PAYLOAD_BAD_BASE64,
                           WP_JWT_PAYLOAD_BAD_JSON, &st);
    if (!t->payload)
        goto fail;
    if ((st = parse_payload(t)) != WP_JWT_OK)
        goto fail;
    t->signed_len = (size_t)(d2 - token);
    if (!b64url(d2 + 1, len - t->signed_len - 1, &t->sig, &t->sig_len)) {
        st = WP_JWT_SIGNATURE_BAD_BASE64;
        goto fail;
    }
    return WP_JWT_OK;
fail:
    wp_jwt_free(t);
    return st;
}

void wp_jwt_free(wp_jwt *t)
{
    json_decref(t->header);
    json_decref(t->payload);
    free(t->sig);
    memset(t, 0, sizeof(*t));
}

/* ---------- time and audiences ---------- */

wp_jwt_status wp_jwt_check_time(const wp_jwt *t, uint64_t now, uint64_t skew)
{
    if (t->nbf > now + skew)
        return WP_JWT_NOT_YET_VALID;
    if (t->exp && t->exp + skew < now)
        return WP_JWT_EXPIRED;
    return WP_JWT_OK;
}

/* CheckAudience's sanitizing: no "http://" / "https://" prefix, no trailing '/'. */
static void aud_norm(const char *a, const char **p, size_t *n)
{
    if (strncmp(a, "http://", 7) == 0)
        a += 7;
    else if (strncmp(a, "https://", 8) == 0)
        a += 8;
    size_t len = strlen(a);
    if (len && a[len - 1] == '/')
        len--;
    *p = a;
    *n = len;
}

static bool aud_in(const char *a, const char *const *aud, size_t n)
{
    const char *p;
    size_t len;
    aud_norm(a, &p, &len);
    for (size_t i = 0; i < n; i++) {
        const char *q;
        size_t qlen;
        aud_norm(aud[i], &q, &qlen);
        if (qlen == len && memcmp(p, q, len) == 0)
            return true;
    }
    return false;
}

bool wp_jwt_audiences_allowed(const wp_jwt *t, const char *const *aud, size_t n)
{
    if (n == 0)
        return true;
    json_t *v = json_object_get(t->payload, "aud");
    if (json_is_string(v))
        return aud_in(json_string_value(v), aud, n);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (json_is_string(e) && aud_in(json_string_value(e), aud, n))
            return true;
    }
    return false;
}
