/*
 * jwt_mint.h - test helpers: keys generated with OpenSSL, JWKS documents for them and tokens
 * signed with them (RS*, PS*, ES*), for test_jwt.c and test_jwt_authn.c. Header-only (static
 * functions); every returned string is malloc'ed and freed by the caller.
 */
#ifndef WEFT_TESTS_JWT_MINT_H
#define WEFT_TESTS_JWT_MINT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "core/base64.h"

/* base64url without padding of n bytes. */
static char *mint_b64url(const unsigned char *in, size_t n)
{
    size_t cap = (n + 2) / 3 * 4 + 1;
    char *out = malloc(cap);
    if (!out || !wf_base64_encode(in, n, out, cap)) {
        free(out);
        return NULL;
    }
    size_t len = strlen(out);
    while (len && out[len - 1] == '=')
        out[--len] = '\0';
    for (char *c = out; *c; c++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
    return out;
}

static char *mint_b64url_str(const char *s)
{
    return mint_b64url((const unsigned char *)s, strlen(s));
}

static char *mint_bn(const EVP_PKEY *k, const char *param, size_t pad)
{
    BIGNUM *bn = NULL;
    if (EVP_PKEY_get_bn_param(k, param, &bn) != 1)
        return NULL;
    size_t n = (size_t)BN_num_bytes(bn);
    if (pad > n)
        n = pad;
    unsigned char *buf = malloc(n);
    BN_bn2binpad(bn, buf, (int)n);
    char *s = mint_b64url(buf, n);
    free(buf);
    BN_free(bn);
    return s;
}

/* A JWK (JSON object text) for the public part of k; kid / alg NULL to leave them out. */
static char *mint_jwk(const EVP_PKEY *k, const char *kid, const char *alg)
{
    char extra[256] = "";
    int off = 0;
    if (kid)
        off += snprintf(extra + off, sizeof extra - (size_t)off, ",\"kid\":\"%s\"", kid);
    if (alg)
        snprintf(extra + off, sizeof extra - (size_t)off, ",\"alg\":\"%s\"", alg);
    char *out = NULL;
    if (EVP_PKEY_is_a(k, "RSA")) {
        char *n = mint_bn(k, OSSL_PKEY_PARAM_RSA_N, 0), *e = mint_bn(k, OSSL_PKEY_PARAM_RSA_E, 0);
        if (asprintf(&out, "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\"%s}", n, e, extra) < 0)
            out = NULL;
        free(n);
        free(e);
    } else {
        char grp[32];
        size_t gl;
        EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, grp, sizeof grp, &gl);
        const char *crv = strcmp(grp, "prime256v1") == 0 || strcmp(grp, "P-256") == 0  ? "P-256"
                          : strcmp(grp, "secp384r1") == 0 || strcmp(grp, "P-384") == 0 ? "P-384"
                                                                                       : "P-521";
        size_t f = crv[2] == '2' ? 32 : crv[2] == '3' ? 48 : 66;
        char *x = mint_bn(k, OSSL_PKEY_PARAM_EC_PUB_X, f),
             *y = mint_bn(k, OSSL_PKEY_PARAM_EC_PUB_Y, f);
        if (asprintf(&out, "{\"kty\":\"EC\",\"crv\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"%s}", crv, x, y,
                     extra) < 0)
            out = NULL;
        free(x);
        free(y);
    }
    return out;
}

/* {"keys":[jwk]} */
static char *mint_jwks1(const char *jwk)
{
    char *out = NULL;
    if (asprintf(&out, "{\"keys\":[%s]}", jwk) < 0)
        return NULL;
    return out;
}

static const EVP_MD *mint_md(const char *alg)
{
    return strcmp(alg + 2, "384") == 0   ? EVP_sha384()
           : strcmp(alg + 2, "512") == 0 ? EVP_sha512()
                                         : EVP_sha256();
}

/* header.payload signed with k as alg (RS*, PS*, ES*); header_json NULL: {"alg":alg,
 * "typ":"JWT"} plus "kid" when kid is set. */
static char *mint_token(EVP_PKEY *k, const char *alg, const char *kid, const char *header_json,
                        const char *payload_json)
{
    char hdr[256];
    if (!header_json) {
        if (kid)
            snprintf(hdr, sizeof hdr, "{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}", alg, kid);
        else
            snprintf(hdr, sizeof hdr, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
        header_json = hdr;
    }
    char *h = mint_b64url_str(header_json), *p = mint_b64url_str(payload_json);
    char *signing = NULL;
    if (asprintf(&signing, "%s.%s", h, p) < 0)
        return NULL;
    free(h);
    free(p);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    size_t slen = 0;
    EVP_DigestSignInit(ctx, &pctx, mint_md(alg), NULL, k);
    if (alg[0] == 'P') {
        EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
    }
    EVP_DigestSign(ctx, NULL, &slen, (unsigned char *)signing, strlen(signing));
    unsigned char *sig = malloc(slen);
    EVP_DigestSign(ctx, sig, &slen, (unsigned char *)signing, strlen(signing));
    EVP_MD_CTX_free(ctx);
    if (alg[0] == 'E') { /* DER -> r || s */
        const unsigned char *q = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &q, (long)slen);
        size_t f = strcmp(alg, "ES256") == 0 ? 32 : strcmp(alg, "ES384") == 0 ? 48 : 66;
        unsigned char *raw = malloc(2 * f);
        BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, (int)f);
        BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + f, (int)f);
        ECDSA_SIG_free(es);
        free(sig);
        sig = raw;
        slen = 2 * f;
    }
    char *s = mint_b64url(sig, slen);
    free(sig);
    char *tok = NULL;
    if (asprintf(&tok, "%s.%s", signing, s) < 0)
        tok = NULL;
    free(signing);
    free(s);
    return tok;
}

#endif
