/*
 * test_jwt.c - JWT and JWKS (proxy/jwt/jwt.h): every supported algorithm with keys generated
 * here, tampering, kid / alg matching, algorithm confusion (none, HS256 against an RSA key, ES
 * against RSA), malformed tokens with jwt_verify_lib's statuses, time claims with the clock
 * skew, audiences, JWKS parsing errors, status strings and Envoy's details.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/hmac.h>

#include "jwt_mint.h"
#include "proxy/jwt/jwt.h"

static EVP_PKEY *rsa_key, *rsa_key2, *ec256, *ec384, *ec521;

static int setup(void **state)
{
    (void)state;
    rsa_key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa_key2 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    ec256 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ec384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    ec521 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-521");
    return rsa_key && rsa_key2 && ec256 && ec384 && ec521 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(rsa_key);
    EVP_PKEY_free(rsa_key2);
    EVP_PKEY_free(ec256);
    EVP_PKEY_free(ec384);
    EVP_PKEY_free(ec521);
    return 0;
}

static wp_jwks *jwks_of(const char *doc)
{
    wp_jwt_status st, ke;
    wp_jwks *k = wp_jwks_parse(doc, strlen(doc), &st, &ke);
    if (!k)
        fail_msg("jwks: %s (%s)", wp_jwt_status_str(st), wp_jwt_status_str(ke));
    return k;
}

static wp_jwks *jwks_for(EVP_PKEY *k, const char *kid, const char *alg)
{
    char *jwk = mint_jwk(k, kid, alg), *doc = mint_jwks1(jwk);
    wp_jwks *s = jwks_of(doc);
    free(jwk);
    free(doc);
    return s;
}

/* Parse and verify tok against k. */
static wp_jwt_status check(const char *tok, const wp_jwks *k)
{
    wp_jwt t;
    wp_jwt_status st = wp_jwt_parse(&t, tok, strlen(tok));
    if (st != WP_JWT_OK)
        return st;
    st = wp_jwt_verify_signature(&t, tok, k);
    wp_jwt_free(&t);
    return st;
}

#define PAYLOAD "{\"iss\":\"https://issuer.example\",\"sub\":\"alice\",\"exp\":4102444800}"

static void test_every_alg_verifies(void **state)
{
    (void)state;
    static const struct {
        const char *alg;
        EVP_PKEY **key;
    } cases[] = {{"RS256", &rsa_key}, {"RS384", &rsa_key}, {"RS512", &rsa_key},
                 {"PS256", &rsa_key}, {"PS384", &rsa_key}, {"PS512", &rsa_key},
                 {"ES256", &ec256},   {"ES384", &ec384},   {"ES512", &ec521}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wp_jwks *k = jwks_for(*cases[i].key, NULL, NULL);
        char *tok = mint_token(*cases[i].key, cases[i].alg, NULL, NULL, PAYLOAD);
        assert_non_null(tok);
        if (check(tok, k) != WP_JWT_OK)
            fail_msg("%s did not verify", cases[i].alg);
        /* tampered payload: the signature no longer matches */
        char *dot = strchr(tok, '.');
        dot[2] = dot[2] == 'A' ? 'B' : 'A';
        wp_jwt_status st = check(tok, k);
        if (st != WP_JWT_VERIFICATION_FAIL && st != WP_JWT_PAYLOAD_BAD_JSON)
            fail_msg("%s tampered: %s", cases[i].alg, wp_jwt_status_str(st));
        free(tok);
        /* the other key of the same family fails */
        wp_jwks *other = jwks_for(cases[i].key == &rsa_key ? rsa_key2
                                  : ec256 == *cases[i].key ? ec384
                                                           : ec256,
                                  NULL, NULL);
        tok = mint_token(*cases[i].key, cases[i].alg, NULL, NULL, PAYLOAD);
        assert_int_not_equal(check(tok, other), WP_JWT_OK);
        free(tok);
        wp_jwks_free(other);
        wp_jwks_free(k);
    }
}

static void test_kid_and_alg_matching(void **state)
{
    (void)state;
    char *j1 = mint_jwk(rsa_key2, "k2", NULL), *j2 = mint_jwk(rsa_key, "k1", NULL);
    char *doc = NULL;
    assert_true(asprintf(&doc, "{\"keys\":[%s,%s]}", j1, j2) > 0);
    wp_jwks *k = jwks_of(doc);
    assert_int_equal(wp_jwks_count(k), 2);
    char *tok = mint_token(rsa_key, "RS256", "k1", NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_OK);
    free(tok);
    /* a kid no key has */
    tok = mint_token(rsa_key, "RS256", "k9", NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWKS_KID_ALG_MISMATCH);
    free(tok);
    /* no kid in the token: every key is tried */
    tok = mint_token(rsa_key, "RS256", NULL, NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_OK);
    free(tok);
    /* right kid, wrong key behind it */
    tok = mint_token(rsa_key, "RS256", "k2", NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_VERIFICATION_FAIL);
    free(tok);
    wp_jwks_free(k);
    free(doc);
    free(j1);
    free(j2);
    /* a key with alg RS512 is not used for an RS256 token */
    k = jwks_for(rsa_key, NULL, "RS512");
    tok = mint_token(rsa_key, "RS256", NULL, NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWKS_KID_ALG_MISMATCH);
    free(tok);
    tok = mint_token(rsa_key, "RS512", NULL, NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_OK);
    free(tok);
    wp_jwks_free(k);
}

static void test_alg_confusion(void **state)
{
    (void)state;
    wp_jwks *k = jwks_for(rsa_key, NULL, NULL);
    /* alg none: refused when parsing */
    char *h = mint_b64url_str("{\"alg\":\"none\"}"), *p = mint_b64url_str(PAYLOAD);
    char *tok = NULL;
    assert_true(asprintf(&tok, "%s.%s.", h, p) > 0);
    assert_int_equal(check(tok, k), WP_JWT_HEADER_NOT_IMPLEMENTED_ALG);
    free(tok);
    /* HS256 keyed with the RSA public key's JWK text: never checked against an RSA key */
    char *jwk = mint_jwk(rsa_key, NULL, NULL);
    char *hh = mint_b64url_str("{\"alg\":\"HS256\"}"), *signing = NULL;
    assert_true(asprintf(&signing, "%s.%s", hh, p) > 0);
    unsigned char mac[64];
    unsigned int maclen = 0;
    HMAC(EVP_sha256(), jwk, (int)strlen(jwk), (unsigned char *)signing, strlen(signing), mac,
         &maclen);
    char *s = mint_b64url(mac, maclen);
    assert_true(asprintf(&tok, "%s.%s", signing, s) > 0);
    assert_int_equal(check(tok, k), WP_JWT_VERIFICATION_FAIL);
    free(tok);
    /* an ES256 token against an RSA-only set */
    tok = mint_token(ec256, "ES256", NULL, NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_VERIFICATION_FAIL);
    free(tok);
    /* an unknown alg */
    char *hx = mint_b64url_str("{\"alg\":\"XS256\"}");
    assert_true(asprintf(&tok, "%s.%s.%s", hx, p, s) > 0);
    assert_int_equal(check(tok, k), WP_JWT_HEADER_NOT_IMPLEMENTED_ALG);
    free(tok);
    free(hx);
    free(s);
    free(signing);
    free(hh);
    free(jwk);
    free(h);
    free(p);
    wp_jwks_free(k);
}

/* header and payload JSON as given, signature "c2ln" */
static wp_jwt_status parse_parts(const char *hdr, const char *payload)
{
    char *h = mint_b64url_str(hdr), *p = mint_b64url_str(payload), *tok = NULL;
    assert_true(asprintf(&tok, "%s.%s.c2ln", h, p) > 0);
    wp_jwt t;
    wp_jwt_status st = wp_jwt_parse(&t, tok, strlen(tok));
    if (st == WP_JWT_OK)
        wp_jwt_free(&t);
    free(h);
    free(p);
    free(tok);
    return st;
}

static wp_jwt_status parse_raw(const char *tok)
{
    wp_jwt t;
    wp_jwt_status st = wp_jwt_parse(&t, tok, strlen(tok));
    if (st == WP_JWT_OK)
        wp_jwt_free(&t);
    return st;
}

static void test_malformed(void **state)
{
    (void)state;
    const char *rs = "{\"alg\":\"RS256\"}";
    assert_int_equal(parse_raw("abc"), WP_JWT_BAD_FORMAT);
    assert_int_equal(parse_raw("a.b"), WP_JWT_BAD_FORMAT);
    assert_int_equal(parse_raw("a.b.c.d"), WP_JWT_BAD_FORMAT);
    assert_int_equal(parse_raw("a*b.e30.c2ln"), WP_JWT_HEADER_BAD_BASE64);
    assert_int_equal(parse_raw("eyJhbGciOiJSUzI1NiJ9.e30.c2ln"), WP_JWT_OK);
    assert_int_equal(parse_raw("eyJhbGciOiJSUzI1NiJ9.e30.c2l*"), WP_JWT_SIGNATURE_BAD_BASE64);
    assert_int_equal(parse_raw("eyJhbGciOiJSUzI1NiJ9.e3$.c2ln"), WP_JWT_PAYLOAD_BAD_BASE64);
    assert_int_equal(parse_parts("not json", "{}"), WP_JWT_HEADER_BAD_JSON);
    assert_int_equal(parse_parts("[1]", "{}"), WP_JWT_HEADER_BAD_JSON);
    assert_int_equal(parse_parts("{}", "{}"), WP_JWT_HEADER_BAD_ALG);
    assert_int_equal(parse_parts("{\"alg\":5}", "{}"), WP_JWT_HEADER_BAD_ALG);
    assert_int_equal(parse_parts("{\"alg\":\"RS256\",\"kid\":5}", "{}"), WP_JWT_HEADER_BAD_KID);
    assert_int_equal(parse_parts(rs, "nope"), WP_JWT_PAYLOAD_BAD_JSON);
    assert_int_equal(parse_parts(rs, "{\"iss\":1}"), WP_JWT_PAYLOAD_ISS_NOT_STRING);
    assert_int_equal(parse_parts(rs, "{\"sub\":[]}"), WP_JWT_PAYLOAD_SUB_NOT_STRING);
    assert_int_equal(parse_parts(rs, "{\"exp\":\"x\"}"), WP_JWT_PAYLOAD_EXP_NOT_INTEGER);
    assert_int_equal(parse_parts(rs, "{\"exp\":-5}"), WP_JWT_PAYLOAD_EXP_OUT_OF_RANGE);
    assert_int_equal(parse_parts(rs, "{\"nbf\":true}"), WP_JWT_PAYLOAD_NBF_NOT_INTEGER);
    assert_int_equal(parse_parts(rs, "{\"iat\":\"1\"}"), WP_JWT_PAYLOAD_IAT_NOT_INTEGER);
    assert_int_equal(parse_parts(rs, "{\"jti\":1}"), WP_JWT_PAYLOAD_JTI_NOT_STRING);
    assert_int_equal(parse_parts(rs, "{\"aud\":1}"), WP_JWT_PAYLOAD_AUD_NOT_STRING);
    assert_int_equal(parse_parts(rs, "{\"aud\":[\"a\",2]}"), WP_JWT_PAYLOAD_AUD_NOT_STRING);
    assert_int_equal(parse_parts(rs, "{\"aud\":[\"a\",\"b\"],\"exp\":1.5}"), WP_JWT_OK);
}

static void test_time_claims(void **state)
{
    (void)state;
    wp_jwt t;
    char *tok = mint_token(rsa_key, "RS256", NULL, NULL, "{\"exp\":1000,\"nbf\":500}");
    assert_int_equal(wp_jwt_parse(&t, tok, strlen(tok)), WP_JWT_OK);
    assert_int_equal(t.exp, 1000);
    assert_int_equal(t.nbf, 500);
    assert_int_equal(wp_jwt_check_time(&t, 900, 60), WP_JWT_OK);
    assert_int_equal(wp_jwt_check_time(&t, 1060, 60), WP_JWT_OK);      /* within the skew */
    assert_int_equal(wp_jwt_check_time(&t, 1061, 60), WP_JWT_EXPIRED); /* past it */
    assert_int_equal(wp_jwt_check_time(&t, 1001, 0), WP_JWT_EXPIRED);
    assert_int_equal(wp_jwt_check_time(&t, 440, 60), WP_JWT_OK);
    assert_int_equal(wp_jwt_check_time(&t, 439, 60), WP_JWT_NOT_YET_VALID);
    wp_jwt_free(&t);
    free(tok);
    /* no exp: never expires */
    tok = mint_token(rsa_key, "RS256", NULL, NULL, "{}");
    assert_int_equal(wp_jwt_parse(&t, tok, strlen(tok)), WP_JWT_OK);
    assert_int_equal(wp_jwt_check_time(&t, UINT32_MAX, 60), WP_JWT_OK);
    wp_jwt_free(&t);
    free(tok);
}

static bool aud_ok(const char *payload, const char *const *aud, size_t n)
{
    wp_jwt t;
    char *tok = mint_token(rsa_key, "RS256", NULL, NULL, payload);
    assert_int_equal(wp_jwt_parse(&t, tok, strlen(tok)), WP_JWT_OK);
    bool ok = wp_jwt_audiences_allowed(&t, aud, n);
    wp_jwt_free(&t);
    free(tok);
    return ok;
}

static void test_audiences(void **state)
{
    (void)state;
    const char *cfg[] = {"https://api.example/", "other"};
    assert_true(aud_ok("{}", NULL, 0));
    assert_false(aud_ok("{}", cfg, 2));
    assert_true(aud_ok("{\"aud\":\"api.example\"}", cfg, 2));
    assert_true(aud_ok("{\"aud\":\"http://api.example\"}", cfg, 2));
    assert_true(aud_ok("{\"aud\":[\"x\",\"other/\"]}", cfg, 2));
    assert_false(aud_ok("{\"aud\":[\"x\",\"y\"]}", cfg, 2));
    assert_false(aud_ok("{\"aud\":\"api.example.evil\"}", cfg, 2));
}

static wp_jwt_status jwks_err(const char *doc, wp_jwt_status *key_err)
{
    wp_jwt_status st, ke;
    wp_jwks *k = wp_jwks_parse(doc, strlen(doc), &st, &ke);
    assert_null(k);
    if (key_err)
        *key_err = ke;
    return st;
}

static void test_jwks_errors(void **state)
{
    (void)state;
    wp_jwt_status ke;
    assert_int_equal(jwks_err("{", NULL), WP_JWKS_PARSE_ERROR);
    assert_int_equal(jwks_err("[]", NULL), WP_JWKS_PARSE_ERROR);
    assert_int_equal(jwks_err("{}", NULL), WP_JWKS_NO_KEYS);
    assert_int_equal(jwks_err("{\"keys\":{}}", NULL), WP_JWKS_BAD_KEYS);
    assert_int_equal(jwks_err("{\"keys\":[]}", &ke), WP_JWKS_NO_VALID_KEYS);
    assert_int_equal(ke, WP_JWT_OK);
    static const struct {
        const char *key;
        wp_jwt_status want;
    } bad[] = {
        {"{}", WP_JWKS_MISSING_KTY},
        {"{\"kty\":1}", WP_JWKS_BAD_KTY},
        {"{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}", WP_JWKS_NOT_IMPLEMENTED_KTY},
        {"{\"kty\":\"RSA\",\"e\":\"AQAB\"}", WP_JWKS_RSA_KEY_MISSING_N},
        {"{\"kty\":\"RSA\",\"n\":1,\"e\":\"AQAB\"}", WP_JWKS_RSA_KEY_BAD_N},
        {"{\"kty\":\"RSA\",\"n\":\"AQAB\"}", WP_JWKS_RSA_KEY_MISSING_E},
        {"{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\",\"alg\":\"ES256\"}",
         WP_JWKS_RSA_KEY_BAD_ALG},
        {"{\"kty\":\"RSA\",\"n\":\"!!\",\"e\":\"AQAB\"}", WP_JWKS_RSA_PARSE_ERROR},
        {"{\"kty\":\"EC\",\"crv\":\"P-999\",\"x\":\"AA\",\"y\":\"AA\"}",
         WP_JWKS_EC_KEY_ALG_OR_CRV_UNSUPPORTED},
        {"{\"kty\":\"EC\",\"crv\":5,\"x\":\"AA\",\"y\":\"AA\"}", WP_JWKS_EC_KEY_BAD_CRV},
        {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"alg\":\"ES384\",\"x\":\"AA\",\"y\":\"AA\"}",
         WP_JWKS_EC_KEY_ALG_NOT_COMPATIBLE_WITH_CRV},
        {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"alg\":\"RS256\"}", WP_JWKS_EC_KEY_BAD_ALG},
        {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"y\":\"AA\"}", WP_JWKS_EC_KEY_MISSING_X},
        {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\"}", WP_JWKS_EC_KEY_MISSING_Y},
        {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"*\",\"y\":\"AA\"}",
         WP_JWKS_EC_X_OR_Y_BAD_BASE64},
        {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQ\",\"y\":\"AQ\"}",
         WP_JWKS_EC_CREATE_KEY_FAIL}, /* not a point of the curve */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *doc = mint_jwks1(bad[i].key);
        if (jwks_err(doc, &ke) != WP_JWKS_NO_VALID_KEYS || ke != bad[i].want)
            fail_msg("%s: %s", bad[i].key, wp_jwt_status_str(ke));
        free(doc);
    }
    /* an invalid key next to a valid one is skipped */
    char *jwk = mint_jwk(ec256, "e", NULL), *doc = NULL;
    assert_true(asprintf(&doc, "{\"keys\":[{\"kty\":\"oct\"},%s]}", jwk) > 0);
    wp_jwks *k = jwks_of(doc);
    assert_int_equal(wp_jwks_count(k), 1);
    char *tok = mint_token(ec256, "ES256", "e", NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_OK);
    free(tok);
    wp_jwks_free(k);
    free(doc);
    free(jwk);
    /* an EC key without crv takes it from alg */
    jwk = mint_jwk(ec384, NULL, "ES384");
    char *nocrv = strstr(jwk, "\"crv\":\"P-384\",");
    memmove(nocrv, nocrv + 14, strlen(nocrv + 14) + 1);
    doc = mint_jwks1(jwk);
    k = jwks_of(doc);
    tok = mint_token(ec384, "ES384", NULL, NULL, PAYLOAD);
    assert_int_equal(check(tok, k), WP_JWT_OK);
    free(tok);
    wp_jwks_free(k);
    free(doc);
    free(jwk);
}

static void test_status_strings(void **state)
{
    (void)state;
    assert_string_equal(wp_jwt_status_str(WP_JWT_EXPIRED), "Jwt is expired");
    assert_string_equal(wp_jwt_status_str(WP_JWT_MISSED), "Jwt is missing");
    assert_string_equal(wp_jwt_status_str(WP_JWT_UNKNOWN_ISSUER), "Jwt issuer is not configured");
    assert_string_equal(wp_jwt_status_str(WP_JWKS_KID_ALG_MISMATCH),
                        "Jwks doesn't have key to match kid or alg from Jwt");
    assert_string_equal(wp_jwt_status_details(WP_JWT_EXPIRED),
                        "jwt_authn_access_denied{Jwt_is_expired}");
    assert_string_equal(wp_jwt_status_details(WP_JWT_UNKNOWN_ISSUER),
                        "jwt_authn_access_denied{Jwt_issuer_is_not_configured}");
    assert_string_equal(
        wp_jwt_status_details(WP_JWKS_KID_ALG_MISMATCH),
        "jwt_authn_access_denied{Jwks_doesn't_have_key_to_match_kid_or_alg_from_Jwt}");
    assert_string_equal(
        wp_jwt_status_details(WP_JWT_BAD_FORMAT),
        "jwt_authn_access_denied{Jwt_is_not_in_the_form_of_Header.Payload.Signature_with_two_dots_"
        "and_3_sections}");
    for (int s = 0; s < WP_JWT_STATUS_COUNT_; s++) {
        assert_non_null(wp_jwt_status_str(s));
        assert_null(strchr(wp_jwt_status_details(s), ' '));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_alg_verifies), cmocka_unit_test(test_kid_and_alg_matching),
        cmocka_unit_test(test_alg_confusion),      cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_time_claims),        cmocka_unit_test(test_audiences),
        cmocka_unit_test(test_jwks_errors),        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
