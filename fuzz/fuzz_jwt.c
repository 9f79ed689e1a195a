/*
 * fuzz_jwt.c - libFuzzer target for the JWT and JWKS parsers (proxy/jwt/jwt.h): tokens come
 * from any client (Authorization headers, query parameters, cookies), key sets from any
 * jwksUri weft-pilot fetches. Byte 0 bit 0 set: the rest is a JWKS document, parsed, and when
 * it yields keys a fixed token is verified against them; clear: the rest is a token, parsed
 * and, when it parses, checked for time, audiences and its signature against a key set
 * without matching keys. Checked, besides memory safety:
 *  - a parse either succeeds or names a status with a non-empty string and Envoy details
 *    without spaces;
 *  - a token that parses has a known alg, iss and sub strings, and signed_len + 1 + the
 *    signature's text is the whole token;
 *  - verification never succeeds with keys the fuzzer could not have signed with (the stand-in
 *    set's private key is gone).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/jwt/jwt.h"

/* one RSA public key whose private key was thrown away */
static const char STANDIN[] =
    "{\"keys\":[{\"kty\":\"RSA\",\"e\":\"AQAB\",\"n\":\"tuw0CVsdF3a8Mr0SinpAOBBVuCe6SKGlbG01nZf8M1"
    "ER79Kjta_X4AXPhqAWp4Xs9uoi7IWvQvqz125ifZnkGguuabWPFo5mIW918XauME7S0OsggSgwHnbXjYaVu8136-_pq"
    "GDBsDk_GEGRmArJwAuVDT4yADPBU4N6h5pkZXt1Rp3ISkl_CX0i9FiDUBvxouoXAPEiOVIICZsNmkQUv5lvhJmDG4Jwl"
    "dHipMA1WXXfeRFngLsfq6hSuKTkdLGUwXbb3uYrWoW_xxSwKJlRPZ0RMc1bWK_ZwkAIYY9c5-wO1yL3hPmjc_Imwcz"
    "SMm76Ylvq-QGClWzAve5owLNeqQ\"}]}";
static const char TOKEN[] = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhIn0.c2ln";

static void check(int ok)
{
    if (!ok)
        abort();
}

static void status_ok(wp_jwt_status st)
{
    const char *s = wp_jwt_status_str(st), *d = wp_jwt_status_details(st);
    check(s && *s && d && !strchr(d, ' '));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] & 1) {
        wp_jwt_status st, ke;
        wp_jwks *k = wp_jwks_parse(in, n, &st, &ke);
        status_ok(st);
        status_ok(ke);
        check((k != NULL) == (st == WP_JWT_OK));
        if (k) {
            wp_jwt t;
            check(wp_jwt_parse(&t, TOKEN, sizeof TOKEN - 1) == WP_JWT_OK);
            check(wp_jwt_verify_signature(&t, TOKEN, k) != WP_JWT_OK);
            wp_jwt_free(&t);
            wp_jwks_free(k);
        }
        return 0;
    }
    char *tok = malloc(n + 1);
    if (!tok)
        return 0;
    memcpy(tok, in, n);
    tok[n] = '\0';
    wp_jwt t;
    wp_jwt_status st = wp_jwt_parse(&t, tok, n);
    status_ok(st);
    if (st == WP_JWT_OK) {
        check(t.alg[0] && t.iss && t.sub && t.signed_len < n && tok[t.signed_len] == '.');
        (void)wp_jwt_check_time(&t, 1700000000u, 60);
        const char *aud[] = {"a"};
        (void)wp_jwt_audiences_allowed(&t, aud, 1);
        wp_jwt_status vs, ke;
        wp_jwks *k = wp_jwks_parse(STANDIN, sizeof STANDIN - 1, &vs, &ke);
        check(k != NULL);
        check(wp_jwt_verify_signature(&t, tok, k) != WP_JWT_OK);
        wp_jwks_free(k);
        wp_jwt_free(&t);
    }
    free(tok);
    return 0;
}
