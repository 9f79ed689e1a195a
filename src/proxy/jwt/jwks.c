/*
 * jwks.c - JSON Web Key Sets (RSA and EC public keys built with OSSL_PARAM_BLD and
 * EVP_PKEY_fromdata) and signature verification with OpenSSL 3 EVP (jwt.h).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "core/base64.h"
#include "proxy/jwt/jwt.h"

typedef enum { KEY_RSA, KEY_EC } key_type;

typedef struct {
    key_type type;
    char *kid;       /* NULL none */
    char *alg;       /* NULL none */
    size_t ec_field; /* EC: bytes of a coordinate (32, 48, 66) */
    EVP_PKEY *pkey;
} jwk;

struct wp_jwks {
    jwk *keys;
    size_t n;
};

static bool b64url_dec(const char *s, unsigned char **out, size_t *n)
{
    size_t len = strlen(s);
    unsigned char *buf = malloc(len / 4 * 3 + 4);
    if (!buf)
        return false;
    if (!wf_base64_decode(s, len, WF_B64_URL | WF_B64_PAD_OPTIONAL, buf, n) || *n == 0) {
        free(buf);
        return false;
    }
    *out = buf;
    return true;
}

/* A string member k of key o: WP_JWT_OK with *out, missing / bad statuses otherwise. */
static wp_jwt_status member(json_t *o, const char *k, const char **out, wp_jwt_status missing,
                            wp_jwt_status bad)
{
    json_t *v = json_object_get(o, k);
    if (!v)
        return missing;
    if (!json_is_string(v))
        return bad;
    *out = json_string_value(v);
    return WP_JWT_OK;
}

static EVP_PKEY *fromdata(const char *type, OSSL_PARAM_BLD *bld)
{
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    ERR_clear_error();
    return pkey;
}

static wp_jwt_status rsa_key(json_t *o, jwk *k)
{
    const char *n64 = NULL, *e64 = NULL;
    wp_jwt_status st;
    if ((st = member(o, "n", &n64, WP_JWKS_RSA_KEY_MISSING_N, WP_JWKS_RSA_KEY_BAD_N)) !=
            WP_JWT_OK ||
        (st = member(o, "e", &e64, WP_JWKS_RSA_KEY_MISSING_E, WP_JWKS_RSA_KEY_BAD_E)) != WP_JWT_OK)
        return st;
    if (k->alg && strncmp(k->alg, "RS", 2) != 0 && strncmp(k->alg, "PS", 2) != 0)
        return WP_JWKS_RSA_KEY_BAD_ALG;
    unsigned char *nb = NULL, *eb = NULL;
    size_t nl = 0, el = 0;
    BIGNUM *n = NULL, *e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    st = WP_JWKS_RSA_PARSE_ERROR;
    if (!b64url_dec(n64, &nb, &nl) || !b64url_dec(e64, &eb, &el))
        goto out;
    n = BN_bin2bn(nb, (int)nl, NULL);
    e = BN_bin2bn(eb, (int)el, NULL);
    bld = OSSL_PARAM_BLD_new();
    if (!n || !e || !bld || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
        goto out;
    k->pkey = fromdata("RSA", bld);
    k->type = KEY_RSA;
    if (k->pkey)
        st = WP_JWT_OK;
out:
    OSSL_PARAM_BLD_free(bld);
    BN_free(n);
    BN_free(e);
    free(nb);
    free(eb);
    return st;
}

/* The curve of crv (or, without crv, of alg): OpenSSL group name and field bytes. */
static wp_jwt_status ec_curve(const char *crv, const char *alg, const char **group, size_t *field)
{
    static const struct {
        const char *crv, *alg, *group;
        size_t field;
    } curves[] = {{"P-256", "ES256", "P-256", 32},
                  {"P-384", "ES384", "P-384", 48},
                  {"P-521", "ES512", "P-521", 66}};
    for (size_t i = 0; i < 3; i++) {
        bool by_crv = crv && strcmp(crv, curves[i].crv) == 0;
        bool by_alg = !crv && alg && strcmp(alg, curves[i].alg) == 0;
        if (!by_crv && !by_alg)
            continue;
        if (alg && strcmp(alg, curves[i].alg) != 0)
            return WP_JWKS_EC_KEY_ALG_NOT_COMPATIBLE_WITH_CRV;
        *group = curves[i].group;
        *field = curves[i].field;
        return WP_JWT_OK;
    }
    if (!crv && !alg) { /* jwt_verify_lib's default curve */
        *group = "P-256";
        *field = 32;
        return WP_JWT_OK;
    }
    return WP_JWKS_EC_KEY_ALG_OR_CRV_UNSUPPORTED;
}

static wp_jwt_status ec_key(json_t *o, jwk *k)
{
    const char *crv = NULL, *x64 = NULL, *y64 = NULL, *group = NULL;
    wp_jwt_status st;
    if (k->alg && strncmp(k->alg, "ES", 2) != 0)
        return WP_JWKS_EC_KEY_BAD_ALG;
    json_t *c = json_object_get(o, "crv");
    if (c && !json_is_string(c))
        return WP_JWKS_EC_KEY_BAD_CRV;
    crv = c ? json_string_value(c) : NULL;
    if ((st = ec_curve(crv, k->alg, &group, &k->ec_field)) != WP_JWT_OK ||
        (st = member(o, "x", &x64, WP_JWKS_EC_KEY_MISSING_X, WP_JWKS_EC_KEY_BAD_X)) != WP_JWT_OK ||
        (st = member(o, "y", &y64, WP_JWKS_EC_KEY_MISSING_Y, WP_JWKS_EC_KEY_BAD_Y)) != WP_JWT_OK)
        return st;
    unsigned char *xb = NULL, *yb = NULL, pt[1 + 2 * 66];
    size_t xl = 0, yl = 0, f = k->ec_field;
    OSSL_PARAM_BLD *bld = NULL;
    if (!b64url_dec(x64, &xb, &xl) || !b64url_dec(y64, &yb, &yl)) {
        st = WP_JWKS_EC_X_OR_Y_BAD_BASE64;
        goto out;
    }
    st = WP_JWKS_EC_PARSE_ERROR;
    if (xl > f || yl > f)
        goto out;
    /* the uncompressed point 04 || x || y, coordinates left-padded to the field size */
    memset(pt, 0, sizeof pt);
    pt[0] = 0x04;
    memcpy(pt + 1 + (f - xl), xb, xl);
    memcpy(pt + 1 + f + (f - yl), yb, yl);
    bld = OSSL_PARAM_BLD_new();
    if (!bld || !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ||
        !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * f))
        goto out;
    k->pkey = fromdata("EC", bld);
    k->type = KEY_EC;
    st = k->pkey ? WP_JWT_OK : WP_JWKS_EC_CREATE_KEY_FAIL;
out:
    OSSL_PARAM_BLD_free(bld);
    free(xb);
    free(yb);
    return st;
}

static void jwk_free(jwk *k)
{
    free(k->kid);
    free(k->alg);
    EVP_PKEY_free(k->pkey);
}

/* One element of keys into *k. */
static wp_jwt_status parse_key(json_t *o, jwk *k)
{
    memset(k, 0, sizeof(*k));
    if (!json_is_object(o))
        return WP_JWKS_BAD_KTY;
    json_t *kty = json_object_get(o, "kty");
    if (!kty)
        return WP_JWKS_MISSING_KTY;
    if (!json_is_string(kty))
        return WP_JWKS_BAD_KTY;
    json_t *kid = json_object_get(o, "kid"), *alg = json_object_get(o, "alg");
    if ((json_is_string(kid) && !(k->kid = strdup(json_string_value(kid)))) ||
        (json_is_string(alg) && !(k->alg = strdup(json_string_value(alg))))) {
        jwk_free(k);
        return WP_JWKS_PARSE_ERROR;
    }
    const char *t = json_string_value(kty);
    wp_jwt_status st = strcmp(t, "RSA") == 0  ? rsa_key(o, k)
                       : strcmp(t, "EC") == 0 ? ec_key(o, k)
                                              : WP_JWKS_NOT_IMPLEMENTED_KTY;
    if (st != WP_JWT_OK)
        jwk_free(k);
    return st;
}

wp_jwks *wp_jwks_parse(const char *text, size_t len, wp_jwt_status *st,
                       wp_jwt_status *first_key_err)
{
    *first_key_err = WP_JWT_OK;
    json_t *doc = json_loadb(text, len, 0, NULL);
    if (!doc || !json_is_object(doc)) {
        json_decref(doc);
        *st = WP_JWKS_PARSE_ERROR;
        return NULL;
    }
    json_t *keys = json_object_get(doc, "keys");
    wp_jwks *k = NULL;
    *st = !keys ? WP_JWKS_NO_KEYS : !json_is_array(keys) ? WP_JWKS_BAD_KEYS : WP_JWT_OK;
    size_t n = keys ? json_array_size(keys) : 0;
    if (*st == WP_JWT_OK) {
        k = calloc(1, sizeof(*k));
        if (k && n)
            k->keys = calloc(n, sizeof(jwk));
        if (!k || (n && !k->keys)) {
            wp_jwks_free(k);
            k = NULL;
            *st = WP_JWKS_PARSE_ERROR;
        }
    }
    for (size_t i = 0; k && i < n; i++) {
        wp_jwt_status ks = parse_key(json_array_get(keys, i), &k->keys[k->n]);
        if (ks == WP_JWT_OK)
            k->n++;
        else if (*first_key_err == WP_JWT_OK)
            *first_key_err = ks;
    }
    json_decref(doc);
    if (k && k->n == 0) {
        wp_jwks_free(k);
        k = NULL;
        *st = WP_JWKS_NO_VALID_KEYS;
    }
    return k;
}

void wp_jwks_free(wp_jwks *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++)
        jwk_free(&k->keys[i]);
    free(k->keys);
    free(k);
}

size_t wp_jwks_count(const wp_jwks *k)
{
    return k ? k->n : 0;
}

/* ---------- verification ---------- */

static const EVP_MD *alg_md(const char *alg)
{
    const char *bits = alg + 2;
    return strcmp(bits, "384") == 0   ? EVP_sha384()
           : strcmp(bits, "512") == 0 ? EVP_sha512()
                                      : EVP_sha256();
}

static bool digest_verify(EVP_PKEY *pkey, const EVP_MD *md, bool pss, const unsigned char *sig,
                          size_t sig_len, const char *data, size_t len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    bool ok = ctx && EVP_DigestVerifyInit(ctx, &pctx, md, NULL, pkey) == 1;
    if (ok && pss)
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 &&
             EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, md) == 1;
    ok = ok && EVP_DigestVerify(ctx, sig, sig_len, (const unsigned char *)data, len) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* ES: the JWS r || s (two field-size halves) as a DER ECDSA-Sig-Value, then EVP. */
static bool ec_verify(const jwk *k, const wp_jwt *t, const char *token)
{
    size_t f = k->ec_field;
    if (t->sig_len != 2 * f)
        return false;
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(t->sig, (int)f, NULL), *s = BN_bin2bn(t->sig + f, (int)f, NULL);
    unsigned char *der = NULL;
    int dlen = -1;
    if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
        r = s = NULL; /* owned by es */
        dlen = i2d_ECDSA_SIG(es, &der);
    }
    bool ok = dlen > 0 && digest_verify(k->pkey, alg_md(t->alg), false, der, (size_t)dlen, token,
                                        t->signed_len);
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
    BN_free(r);
    BN_free(s);
    return ok;
}

/* Whether key k (of the token's family) verifies t. */
static bool key_verifies(const jwk *k, const wp_jwt *t, const char *token)
{
    bool rs = strncmp(t->alg, "RS", 2) == 0, ps = strncmp(t->alg, "PS", 2) == 0;
    if (k->type == KEY_RSA && (rs || ps))
        return digest_verify(k->pkey, alg_md(t->alg), ps, t->sig, t->sig_len, token, t->signed_len);
    if (k->type == KEY_EC && strncmp(t->alg, "ES", 2) == 0)
        return ec_verify(k, t, token);
    return false; /* HS / EdDSA tokens: no key of theirs (oct / OKP keys are not supported) */
}

wp_jwt_status wp_jwt_verify_signature(const wp_jwt *t, const char *token, const wp_jwks *k)
{
    bool matched = false;
    for (size_t i = 0; k && i < k->n; i++) {
        const jwk *key = &k->keys[i];
        if (t->kid && key->kid && strcmp(t->kid, key->kid) != 0)
            continue;
        if (key->alg && strcmp(key->alg, t->alg) != 0)
            continue;
        matched = true;
        if (key_verifies(key, t, token))
            return WP_JWT_OK;
    }
    return matched ? WP_JWT_VERIFICATION_FAIL : WP_JWKS_KID_ALG_MISMATCH;
}
