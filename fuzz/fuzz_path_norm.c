/*
 * fuzz_path_norm.c - libFuzzer target for Envoy's path normalization (src/http/path_norm.h).
 * The first byte picks the options of wf_path_sanitize (bit 0 normalize_path, bit 1
 * merge_slashes, bits 2-4 the escaped-slashes action) and a small output capacity (bits
 * 5-7); the rest is the path. Checked, besides memory safety:
 *  - wf_path_normalize with cap 3 * len + 1 never runs out of room, and with a smaller cap
 *    either fails with -ENOSPC or gives the same result; nothing is written past cap;
 *  - its output path part starts with '/', holds no "." or ".." segment ("/./", "/../", or
 *    at the end) and no byte Chromium escapes, and the query is kept byte for byte;
 *  - normalizing the output again gives the output (idempotence). Envoy's canonicalPath is
 *    not idempotent when canonicalization itself makes a dot segment with parameters
 *    ("\..;x" -> "/..;x", "%2e%2e;x" -> "..;x": parameters are stripped only before it);
 *    for those the second result must be a fixed point instead;
 *  - merge_slashes leaves no "//" in the path part (but Envoy's "//" for slashes only) and
 *    is idempotent; unescape_slashes finds nothing the second time;
 *  - wf_path_sanitize returns an action and at most cap bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/path_norm.h"

#define MAX_IN 4096
#define CANARY 0xA5

static size_t path_len(const char *p, size_t n)
{
    const char *q = memchr(p, '?', n);
    return q ? (size_t)(q - p) : n;
}

static void check(int ok)
{
    if (!ok)
        abort();
}

static int is_dot_seg(const char *p, size_t i, size_t n)
{
    /* p[i] == '/': a "." or ".." segment follows */
    size_t d = 0;
    while (i + 1 + d < n && p[i + 1 + d] == '.' && d < 3)
        d++;
    return (d == 1 || d == 2) && (i + 1 + d == n || p[i + 1 + d] == '/');
}

static int has_param_dot_seg(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/' && ((i + 2 < n && memcmp(p + i + 1, ".;", 2) == 0) ||
                            (i + 3 < n && memcmp(p + i + 1, "..;", 3) == 0)))
            return 1;
    return 0;
}

static void check_canonical(const char *in, size_t len, const char *out, size_t n)
{
    size_t pin = path_len(in, len), pout = path_len(out, n);
    check(pout >= 1 && out[0] == '/');
    check(n - pout == len - pin && memcmp(out + pout, in + pin, len - pin) == 0);
    for (size_t i = 0; i < pout; i++) {
        unsigned char c = (unsigned char)out[i];
        check(c > 0x20 && c < 0x7f && !strchr("\"#<>\\^`{|}", c));
        if (c == '/')
            check(!is_dot_seg(out, i, pout));
    }
}

static int same(const char *a, size_t an, const char *b, size_t bn)
{
    return an == bn && memcmp(a, b, an) == 0;
}

static void check_normalize(const char *in, size_t len, unsigned small)
{
    static char out[3 * MAX_IN + 16], again[3 * (3 * MAX_IN + 16) + 16], third[sizeof(again)];
    size_t cap = 3 * len + 1, n = 0, n2 = 0, n3 = 0;
    memset(out, CANARY, cap + 8);
    int rc = wf_path_normalize(in, len, out, cap, &n);
    check(rc == 0 || rc == -EINVAL);
    for (size_t i = cap; i < cap + 8; i++)
        check((unsigned char)out[i] == CANARY);
    if (rc != 0)
        return;
    check(n <= cap);
    check_canonical(in, len, out, n);
    size_t scap = small < cap ? small : cap;
    int src = wf_path_normalize(in, len, again, scap, &n2);
    check(src == -ENOSPC || (src == 0 && same(out, n, again, n2)));
    check(wf_path_normalize(out, n, again, sizeof(again), &n2) == 0);
    if (has_param_dot_seg(out, path_len(out, n))) {
        check(wf_path_normalize(again, n2, third, sizeof(third), &n3) == 0);
        check(same(again, n2, third, n3));
    } else {
        check(same(out, n, again, n2));
    }
}

static void check_merge_unescape(const char *in, size_t len)
{
    static char buf[MAX_IN];
    memcpy(buf, in, len);
    size_t n = wf_path_merge_slashes(buf, len), p = path_len(buf, n);
    check(n <= len);
    check(!memmem(buf, p, "//", 2) || (p == 2 && buf[0] == '/' && buf[1] == '/'));
    check(wf_path_merge_slashes(buf, n) == n);
    memcpy(buf, in, len);
    n = len;
    bool found = wf_path_unescape_slashes(buf, &n);
    check(found ? n < len : n == len);
    check(!wf_path_unescape_slashes(buf, &n));
}

static void check_sanitize(unsigned sel, const char *in, size_t len)
{
    static char out[WF_PATH_SANITIZE_CAP(MAX_IN)];
    wf_path_opts o = {sel & 1, (sel >> 1) & 1, (wf_esc_slash_action)((sel >> 2) % 5)};
    size_t n = 0, cap = WF_PATH_SANITIZE_CAP(len);
    int act = wf_path_sanitize(&o, in, len, out, cap, &n);
    check(act == WF_PATH_CONTINUE || act == WF_PATH_REJECT || act == WF_PATH_REDIRECT);
    check(n <= cap);
    if (!wf_path_needs_sanitize(&o, in, len))
        check(act == WF_PATH_CONTINUE && same(in, len, out, n));
    if (act != WF_PATH_REJECT && o.normalize && !has_param_dot_seg(out, path_len(out, n))) {
        size_t pout = path_len(out, n);
        for (size_t i = 0; i < pout; i++)
            check(out[i] != '/' || !is_dot_seg(out, i, pout));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size - 1 > MAX_IN)
        return 0;
    unsigned sel = data[0];
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    check_normalize(in, len, (sel >> 5) * 7);
    check_merge_unescape(in, len);
    check_sanitize(sel, in, len);
    return 0;
}
