/*
 * ca_token.c - HS256 JWTs for the CSR service of the local mesh. See ca_token.h.
 */
#include "pilot/ca_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/base64.h"
#include "model/validate.h"

/* ---- the key file ---------------------------------------------------------------------- */

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int read_key(const char *path, wf_ca_token_key *out, char *err, size_t cap)
{
    char buf[80];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    for (size_t i = 0; n >= 64 && i < 32; i++) {
        int hi = hexval(buf[2 * i]), lo = hexval(buf[2 * i + 1]);
        if (hi < 0 || lo < 0)
            break;
        out->k[i] = (unsigned char)(hi << 4 | lo);
        if (i == 31) {
            OPENSSL_cleanse(buf, sizeof buf);
            return 0;
        }
    }
    OPENSSL_cleanse(buf, sizeof buf);
    snprintf(err, cap, "%s: want 64 lower-case hex digits", path);
    return -1;
}

/* A new random key, written to a temporary file and linked to path (link fails when another
 * process made one first: then that one is used). */
static int create_key(const char *path, char *err, size_t cap)
{
    unsigned char k[32];
    char hex[66], tmp[4200];
    if (RAND_bytes(k, sizeof k) != 1) {
        snprintf(err, cap, "cannot make a random token key");
        return -1;
    }
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", k[i]);
    hex[64] = '\n';
    hex[65] = '\0';
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, hex, 65) == 65 && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (ok && link(tmp, path) != 0 && errno != EEXIST) {
        ok = false;
        e = errno;
    }
    unlink(tmp);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(hex, sizeof hex);
    if (!ok) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int wf_ca_token_key_load(const char *dir, int create, wf_ca_token_key *out, char *err, size_t cap)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, WF_CA_TOKEN_KEY_FILE);
    if (create && stat(path, &st) != 0 && create_key(path, err, cap) != 0)
        return -1;
    return read_key(path, out, err, cap);
}

/* ---- base64url --------------------------------------------------------------------------- */

static char *b64url(const void *p, size_t n)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    char *s = malloc(cap);
    if (!s || wf_base64_encode(p, n, s, cap) == 0) {
        free(s);
        return NULL;
    }
    for (char *c = s; *c; c++) {
        if (*c == '+')
            *c = '-';
        else if (*c == '/')
            *c = '_';
        else if (*c == '=')
            *c = '\0';
    }
    return s;
}

/* Decodes base64url (no padding) into a heap buffer with a NUL after it. NULL on bad input. */
static unsigned char *unb64url(const char *s, size_t len, size_t *outlen)
{
    if (len % 4 == 1 || len > WF_CA_TOKEN_MAX)
        return NULL;
    char std[WF_CA_TOKEN_MAX + 4];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (c == '+' || c == '/' || c == '=')
            return NULL;
        std[n++] = c;
    }
    while (n % 4)
        std[n++] = '=';
    unsigned char *out = malloc(3 * (n / 4) + 1);
    if (!out || !wf_base64_decode(std, n, 0, out, outlen)) {
        free(out);
        return NULL;
    }
    out[*outlen] = '\0';
    return out;
}

/* ---- minting and checking --------------------------------------------------------------- */

static void mac(const wf_ca_token_key *key, const char *data, size_t len, unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key->k, sizeof key->k, (const unsigned char *)data, len, out, &n);
}

/* A Kubernetes namespace name: a DNS-1123 label, lower case only. */
static bool is_label(const char *s)
{
    for (const char *c = s; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            return false;
    return wf_is_dns1123_label(s);
}

/* A service account name: a DNS-1123 subdomain, lower case only. */
static bool is_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    char buf[254];
    memcpy(buf, s, n + 1);
    for (char *save = NULL, *lab = strtok_r(buf, ".", &save); lab; lab = strtok_r(NULL, ".", &save))
        if (!is_label(lab))
            return false;
    return s[0] != '.' && s[n - 1] != '.' && !strstr(s, "..");
}

static const char jwt_header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

char *wf_ca_token_mint(const wf_ca_token_key *key, const char *ns, const char *sa, int64_t now_s,
                       int64_t ttl_s, char *err, size_t cap)
{
    if (!is_label(ns) || !is_subdomain(sa)) {
        snprintf(err, cap, "invalid %s \"%s\"", is_label(ns) ? "service account" : "namespace",
                 is_label(ns) ? sa : ns);
        return NULL;
    }
    char sub[600];
    snprintf(sub, sizeof sub, "system:serviceaccount:%s:%s", ns, sa);
    json_t *c =
        json_pack("{s:[s],s:I,s:I,s:s,s:{s:s,s:{s:s}},s:s}", "aud", WF_CA_TOKEN_AUDIENCE, "exp",
                  (json_int_t)(now_s + ttl_s), "iat", (json_int_t)now_s, "iss", "weft-pilot",
                  "kubernetes.io", "namespace", ns, "serviceaccount", "name", sa, "sub", sub);
    char *claims = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(c);
    char *h = b64url(jwt_header, strlen(jwt_header));
    char *p = claims ? b64url(claims, strlen(claims)) : NULL;
    free(claims);
    char *tok = NULL;
    if (h && p) {
        size_t hl = strlen(h), pl = strlen(p);
        char *signing = malloc(hl + pl + 2);
        unsigned char m[32];
        if (signing) {
            snprintf(signing, hl + pl + 2, "%s.%s", h, p);
            mac(key, signing, hl + pl + 1, m);
            char *s = b64url(m, sizeof m);
            tok = s ? malloc(hl + pl + strlen(s) + 3) : NULL;
            if (tok)
                sprintf(tok, "%s.%s", signing, s);
            free(s);
            free(signing);
        }
    }
    free(h);
    free(p);
    if (!tok)
        snprintf(err, cap, "out of memory");
    return tok;
}

static bool aud_ok(const json_t *aud)
{
    if (json_is_string(aud))
        return strcmp(json_string_value(aud), WF_CA_TOKEN_AUDIENCE) == 0;
    size_t i;
    const json_t *v;
    json_array_foreach(aud, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), WF_CA_TOKEN_AUDIENCE) == 0)
            return true;
    }
    return false;
}

/* The claims: identity into ns/sa. */
static int check_claims(const json_t *c, int64_t now_s, char *ns, char *sa, char *err, size_t cap)
{
    const char *sub = json_string_value(json_object_get(c, "sub"));
    const json_t *exp = json_object_get(c, "exp");
    if (!aud_ok(json_object_get(c, "aud"))) {
        snprintf(err, cap, "the token audience does not include %s", WF_CA_TOKEN_AUDIENCE);
        return -1;
    }
    if (!json_is_integer(exp) || json_integer_value(exp) <= now_s) {
        snprintf(err, cap, "the token has expired");
        return -1;
    }
    const char *pre = "system:serviceaccount:";
    const char *rest = sub && !strncmp(sub, pre, strlen(pre)) ? sub + strlen(pre) : NULL;
    const char *colon = rest ? strchr(rest, ':') : NULL;
    if (!colon || (size_t)(colon - rest) >= 254 || strlen(colon + 1) >= 254) {
        snprintf(err, cap, "the token subject is not system:serviceaccount:<ns>:<sa>");
        return -1;
    }
    memcpy(ns, rest, (size_t)(colon - rest));
    ns[colon - rest] = '\0';
    strcpy(sa, colon + 1);
    const json_t *k = json_object_get(c, "kubernetes.io");
    const char *kns = json_string_value(json_object_get(k, "namespace"));
    const char *ksa =
        json_string_value(json_object_get(json_object_get(k, "serviceaccount"), "name"));
    if (!is_label(ns) || !is_subdomain(sa) || (k && (!kns || strcmp(kns, ns))) ||
        (k && (!ksa || strcmp(ksa, sa)))) {
        snprintf(err, cap, "the token names an invalid service account");
        return -1;
    }
    return 0;
}

int wf_ca_token_verify(const wf_ca_token_key *key, const char *tok, size_t len, int64_t now_s,
                       char ns[254], char sa[254], char *err, size_t cap)
{
    const char *d1 = len <= WF_CA_TOKEN_MAX ? memchr(tok, '.', len) : NULL;
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok))) {
        snprintf(err, cap, "the token is not a JWT");
        return -1;
    }
    size_t hl, pl, sl;
    unsigned char *h = unb64url(tok, (size_t)(d1 - tok), &hl);
    unsigned char *p = unb64url(d1 + 1, (size_t)(d2 - d1 - 1), &pl);
    unsigned char *s = unb64url(d2 + 1, len - (size_t)(d2 + 1 - tok), &sl);
    json_t *hj = h ? json_loadb((const char *)h, hl, 0, NULL) : NULL;
    json_t *pj = p ? json_loadb((const char *)p, pl, 0, NULL) : NULL;
    unsigned char m[32];
    int rc = -1;
    const char *alg = json_string_value(json_object_get(hj, "alg"));
    if (!hj || !pj || !s) {
        snprintf(err, cap, "the token is not a JWT");
    } else if (!alg || strcmp(alg, "HS256") != 0) {
        snprintf(err, cap, "the token is not signed with HS256");
    } else if (mac(key, tok, (size_t)(d2 - tok), m), sl != 32 || CRYPTO_memcmp(m, s, 32) != 0) {
        snprintf(err, cap, "the token signature is invalid");
    } else {
        rc = check_claims(pj, now_s, ns, sa, err, cap);
    }
    json_decref(hj);
    json_decref(pj);
    free(h);
    free(p);
    free(s);
    return rc;
}
