/*
 * discovery_peek.c - the ACK fast path's request scan (see discovery.h, "the ACK fast path").
 *
 * A structural scan of the top-level JSON object: strings are skipped with memchr (escapes
 * honoured), nested arrays and objects by depth. It validates only what it needs to locate the
 * members; it never decides that a request is invalid: whatever it does not fully understand is
 * left to the real decoder (simple false).
 */
#include <string.h>

#include "xds/discovery.h"

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p at the opening quote: the byte after the closing quote, or NULL (unterminated). *esc is
 * set when the string holds an escape. */
static const char *skip_string(const char *p, const char *e, bool *esc)
{
    p++;
    for (;;) {
        const char *q = p < e ? memchr(p, '"', (size_t)(e - p)) : NULL;
        if (!q)
            return NULL;
        const char *bs = memchr(p, '\\', (size_t)(q - p));
        if (!bs)
            return q + 1;
        *esc = true;
        p = bs + 2; /* the escaped byte may be the quote found */
        if (p > e)
            return NULL;
    }
}

/* Skips one JSON value (not validated beyond its extent). NULL when it does not end. */
static const char *skip_value(const char *p, const char *e)
{
    bool esc = false;
    if (p >= e)
        return NULL;
    if (*p == '"')
        return skip_string(p, e, &esc);
    if (*p == '[' || *p == '{') {
        size_t depth = 0;
        while (p < e) {
            char ch = *p;
            if (ch == '"') {
                if (!(p = skip_string(p, e, &esc)))
                    return NULL;
                continue;
            }
            if (ch == '[' || ch == '{') {
                depth++;
            } else if (ch == ']' || ch == '}') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    const char *s = p;
    while (p < e && !strchr(",}] \t\r\n", *p))
        p++;
    return p > s ? p : NULL;
}

/* 64-bit hash of n bytes, 8 at a time: each step is a bijection of the state, so inputs of one
 * length that differ in a single word never collide. */
static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* A plain string value: no escapes, printable ASCII only. */
static bool plain(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e || s[i] == '\\')
            return false;
    return true;
}

static bool key_is(const char *k, size_t n, const char *snake, const char *camel)
{
    return (strlen(snake) == n && memcmp(k, snake, n) == 0) ||
           (strlen(camel) == n && memcmp(k, camel, n) == 0);
}

/* A string member: its contents into *s / *n when plain; false otherwise or when repeated. */
static bool take_str(const char *v, const char *ve, const char **s, size_t *n)
{
    if (*s || ve - v < 2 || *v != '"' || !plain(v + 1, (size_t)(ve - v - 2)))
        return false;
    *s = v + 1;
    *n = (size_t)(ve - v - 2);
    return true;
}

void wf_xds_request_peek(const char *buf, size_t len, wf_xds_req_peek *out)
{
    memset(out, 0, sizeof *out);
    const char *p = buf, *e = buf + len, *names = NULL, *names_end = NULL;
    bool simple = true;
    int n_names = 0;
    p = ws(p, e);
    if (p >= e || *p != '{')
        return;
    p = ws(p + 1, e);
    if (p < e && *p == '}') {
        p++;
    } else {
        for (;;) {
            bool esc = false;
            if (p >= e || *p != '"')
                return;
            const char *k = p + 1, *ke = skip_string(p, e, &esc);
            if (!ke)
                return;
            size_t kn = (size_t)(ke - 1 - k);
            simple &= !esc;
            p = ws(ke, e);
            if (p >= e || *p != ':')
                return;
            const char *v = ws(p + 1, e), *ve = skip_value(v, e);
            if (!ve)
                return;
            if (esc) {
                /* an escaped key: leave it to the decoder */
            } else if (key_is(k, kn, "resource_names", "resourceNames")) {
                n_names++;
                names = v;
                names_end = ve;
            } else if (key_is(k, kn, "type_url", "typeUrl")) {
                simple &= take_str(v, ve, &out->type_url, &out->type_url_len);
            } else if (key_is(k, kn, "response_nonce", "responseNonce")) {
                simple &= take_str(v, ve, &out->nonce, &out->nonce_len);
            } else if (key_is(k, kn, "version_info", "versionInfo")) {
                simple &= take_str(v, ve, &out->version, &out->version_len);
            } else {
                simple = false; /* node, error_detail, unknown fields */
            }
            p = ws(ve, e);
            if (p < e && *p == ',') {
                p = ws(p + 1, e);
                continue;
            }
            if (p < e && *p == '}') {
                p++;
                break;
            }
            return;
        }
    }
    if (ws(p, e) != e || n_names > 1)
        return;
    out->names_ok = true;
    out->names_key = names ? hash_bytes(names, (size_t)(names_end - names)) : 0x6e6f6e616d6573ull;
    out->simple = simple && out->type_url && out->nonce && out->nonce_len > 0;
}
