/*
 * an_gateway_util.c - Go-compatible helpers of the gateway analyzers (see an_gateway_util.h).
 *
 * Behaviour follows the Go sources: k8s.io/apimachinery/pkg/labels (SelectorFromSet, String),
 * encoding/base64 (decodeQuantum), encoding/pem (Decode, getLine), istio pilot/pkg/xds
 * (ValidateCertificate) and github.com/Masterminds/semver/v3 (coerceNewVersion, Compare).
 */
#include "analysis/an_gateway_util.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/strbuf.h"

/* ---- encoding/pem Decode ---- */

typedef struct span {
    const unsigned char *p;
    size_t n;
} span;

static bool has_prefix(span s, const char *pfx)
{
    size_t k = strlen(pfx);
    return s.n >= k && memcmp(s.p, pfx, k) == 0;
}

static bool has_suffix(span s, const char *sfx)
{
    size_t k = strlen(sfx);
    return s.n >= k && memcmp(s.p + s.n - k, sfx, k) == 0;
}

/* Index of needle in s, or SIZE_MAX. */
static size_t span_index(span s, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; k <= s.n && i + k <= s.n; i++)
        if (memcmp(s.p + i, needle, k) == 0)
            return i;
    return SIZE_MAX;
}

static span span_from(span s, size_t off)
{
    return (span){s.p + off, s.n - off};
}

/* Go pem.getLine: the line without its terminator (CRLF or LF) and trailing blanks. */
static span get_line(span data, span *rest)
{
    size_t i = 0;
    while (i < data.n && data.p[i] != '\n')
        i++;
    size_t j = i < data.n ? i + 1 : i;
    if (i < data.n && i > 0 && data.p[i - 1] == '\r')
        i--;
    while (i > 0 && (data.p[i - 1] == ' ' || data.p[i - 1] == '\t'))
        i--;
    *rest = span_from(data, j);
    return (span){data.p, i};
}

/* Skip "Key: value" header lines; false when the data ends inside them. */
static bool skip_headers(span *rest, bool *had_headers)
{
    *had_headers = false;
    for (;;) {
        if (rest->n == 0)
            return false;
        span next;
        span line = get_line(*rest, &next);
        if (!memchr(line.p, ':', line.n))
            return true;
        *had_headers = true;
        *rest = next;
    }
}

/* The END line of a block of type `type` in rest: sets *body_len. False when missing. */
static bool find_end(span rest, span type, bool had_headers, size_t *body_len)
{
    size_t end_index, trailer_index;
    if (!had_headers && has_prefix(rest, "-----END ")) {
        end_index = 0;
        trailer_index = 9;
    } else {
        end_index = span_index(rest, "\n-----END ");
        if (end_index == SIZE_MAX)
            return false;
        trailer_index = end_index + 10;
    }
    span trailer = span_from(rest, trailer_index);
    size_t tlen = type.n + 5;
    if (trailer.n < tlen)
        return false;
    span head = {trailer.p, tlen};
    if (memcmp(head.p, type.p, type.n) != 0 || !has_suffix(head, "-----"))
        return false;
    span after;
    if (get_line(span_from(trailer, tlen), &after).n != 0)
        return false;
    *body_len = end_index;
    return true;
}

bool wf_gw_pem_decode(const unsigned char *data, size_t len, unsigned char *out, size_t *outlen,
                      const unsigned char **type, size_t *type_len)
{
    span rest = {data, len};
    for (;;) {
        if (has_prefix(rest, "-----BEGIN ")) {
            rest = span_from(rest, 11);
        } else {
            size_t at = span_index(rest, "\n-----BEGIN ");
            if (at == SIZE_MAX)
                return false;
            rest = span_from(rest, at + 12);
        }
        span type_line = get_line(rest, &rest);
        if (!has_suffix(type_line, "-----"))
            continue;
        type_line.n -= 5;
        bool had_headers;
        if (!skip_headers(&rest, &had_headers))
            return false;
        size_t body_len;
        if (!find_end(rest, type_line, had_headers, &body_len))
            continue;
        if (!wf_base64_decode((const char *)rest.p, body_len, WF_B64_SKIP_BLANKS, out, outlen))
            continue;
        *type = type_line.p;
        *type_len = type_line.n;
        return true;
    }
}

/* ---- pilot/pkg/xds ValidateCertificate ---- */

static bool asn1_time_to_epoch(const ASN1_TIME *t, time_t *out)
{
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return false;
    *out = timegm(&tm);
    return true;
}

/* x509.ParseCertificates: consecutive DER certificates; each must parse and be current.
 * *first_na: the earliest NotAfter among those parsed (0 when none). */
static bool der_certs_valid(const unsigned char *der, size_t len, time_t now, time_t *first_na)
{
    const unsigned char *p = der;
    size_t left = len;
    bool ok = true;
    *first_na = 0;
    while (left > 0) {
        const unsigned char *start = p;
        X509 *x = d2i_X509(NULL, &p, (long)left);
        time_t nb, na;
        if (!x || p <= start)
            ok = false;
        else if (!asn1_time_to_epoch(X509_get0_notBefore(x), &nb) ||
                 !asn1_time_to_epoch(X509_get0_notAfter(x), &na))
            ok = false;
        else {
            if (!*first_na || na < *first_na)
                *first_na = na;
            ok = ok && now <= na && now >= nb;
        }
        X509_free(x);
        if (!x || p <= start)
            return false;
        left -= (size_t)(p - start);
    }
    return ok;
}

bool wf_gw_cert_check(const unsigned char *data, size_t len, time_t now, time_t *first_not_after)
{
    time_t na = 0;
    unsigned char *der = malloc(len ? len : 1);
    if (first_not_after)
        *first_not_after = 0;
    if (!der)
        return false;
    size_t der_len;
    const unsigned char *type;
    size_t type_len;
    bool ok = wf_gw_pem_decode(data, len, der, &der_len, &type, &type_len) &&
              der_certs_valid(der, der_len, now, &na);
    free(der);
    ERR_clear_error();
    if (first_not_after)
        *first_not_after = na;
    return ok;
}

bool wf_gw_cert_valid(const unsigned char *data, size_t len, time_t now)
{
    return wf_gw_cert_check(data, len, now, NULL);
}

/* ---- Masterminds semver/v3 ---- */

static bool is_ident_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

static bool parse_uint(const char **s, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false; /* strconv.ParseUint range error */
        v = v * 10 + d;
    }
    *s = p;
    *out = v;
    return true;
}

/* Dot-separated non-empty identifiers of [0-9A-Za-z-]; returns the length consumed. */
static size_t ident_list_len(const char *s)
{
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (is_ident_char(s[i]))
            i++;
        if (i == start)
            return 0;
        if (s[i] != '.')
            return i;
        i++;
    }
}

/* validatePrerelease: a numeric part longer than one digit must not start with 0. */
static bool prerelease_ok(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        bool numeric = true;
        for (; i < n && p[i] != '.'; i++)
            numeric = numeric && p[i] >= '0' && p[i] <= '9';
        if (numeric && i - start > 1 && p[start] == '0')
            return false;
        i++;
    }
    return true;
}

static bool parse_extras(const char *p, wf_semver *v)
{
    if (*p == '-') {
        size_t n = ident_list_len(p + 1);
        if (n == 0)
            return false;
        v->pre = p + 1;
        v->pre_len = n;
        p += 1 + n;
    }
    if (*p == '+') {
        size_t n = ident_list_len(p + 1);
        if (n == 0)
            return false;
        v->meta = p + 1;
        v->meta_len = n;
        p += 1 + n;
    }
    return *p == '\0' && prerelease_ok(v->pre, v->pre_len);
}

bool wf_semver_parse(const char *s, wf_semver *v)
{
    memset(v, 0, sizeof(*v));
    v->pre = v->meta = "";
    if (!s || strlen(s) > 256) /* MaxVersionLen */
        return false;
    const char *p = s;
    if (*p == 'v')
        p++;
    if (!parse_uint(&p, &v->major))
        return false;
    if (*p == '.') {
        p++;
        if (!parse_uint(&p, &v->minor))
            return false;
        if (*p == '.') {
            p++;
            if (!parse_uint(&p, &v->patch))
                return false;
        }
    }
    return parse_extras(p, v);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

/* comparePrePart: numbers compare numerically and sort before strings. */
static int compare_pre_part(const char *s, size_t sn, const char *o, size_t on)
{
    if (sn == on && memcmp(s, o, sn) == 0)
        return 0;
    if (sn == 0)
        return -1;
    if (on == 0)
        return 1;
    char sb[257], ob[257];
    snprintf(sb, sizeof(sb), "%.*s", (int)sn, s);
    snprintf(ob, sizeof(ob), "%.*s", (int)on, o);
    uint64_t si = 0, oi = 0;
    const char *sp = sb, *op = ob;
    bool snum = parse_uint(&sp, &si) && *sp == '\0';
    bool onum = parse_uint(&op, &oi) && *op == '\0';
    if (!snum && !onum)
        return strcmp(sb, ob) > 0 ? 1 : -1;
    if (!snum)
        return 1;
    if (!onum)
        return -1;
    return si > oi ? 1 : -1;
}

static size_t part_len(const char *p, size_t n)
{
    const char *dot = memchr(p, '.', n);
    return dot ? (size_t)(dot - p) : n;
}

static int compare_prerelease(const char *s, size_t sn, const char *o, size_t on)
{
    size_t si = 0, oi = 0;
    while (si < sn || oi < on) {
        size_t sl = si < sn ? part_len(s + si, sn - si) : 0;
        size_t ol = oi < on ? part_len(o + oi, on - oi) : 0;
        int d = compare_pre_part(s + si, sl, o + oi, ol);
        if (d != 0)
            return d;
        si = si < sn ? si + sl + 1 : si;
        oi = oi < on ? oi + ol + 1 : oi;
    }
    return 0;
}

int wf_semver_compare(const wf_semver *a, const wf_semver *b)
{
    int d = cmp_u64(a->major, b->major);
    if (d == 0)
        d = cmp_u64(a->minor, b->minor);
    if (d == 0)
        d = cmp_u64(a->patch, b->patch);
    if (d != 0)
        return d;
    if (a->pre_len == 0 && b->pre_len == 0)
        return 0;
    if (a->pre_len == 0)
        return 1;
    if (b->pre_len == 0)
        return -1;
    return compare_prerelease(a->pre, a->pre_len, b->pre, b->pre_len);
}

const char *wf_semver_string(wf_arena *a, const wf_semver *v)
{
    return wf_arena_printf(a, "%llu.%llu.%llu%s%.*s%s%.*s", (unsigned long long)v->major,
                           (unsigned long long)v->minor, (unsigned long long)v->patch,
                           v->pre_len ? "-" : "", (int)v->pre_len, v->pre, v->meta_len ? "+" : "",
                           (int)v->meta_len, v->meta);
}
