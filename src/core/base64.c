/*
 * base64.c - standard base64 (base64.h).
 */
#include "core/base64.h"

#include <stdint.h>
#include <string.h>

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t wf_base64_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
    size_t need = (n + 2) / 3 * 4;
    if (cap < need + 1)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = ALPHABET[(v >> 18) & 63];
        out[o++] = ALPHABET[(v >> 12) & 63];
        out[o++] = i + 1 < n ? ALPHABET[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? ALPHABET[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

static int value_of(unsigned char c, unsigned flags)
{
    if (flags & WF_B64_URL) {
        if (c == '-')
            return 62;
        if (c == '_')
            return 63;
        if (c == '+' || c == '/')
            return -1;
    }
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static bool skippable(unsigned char c, unsigned flags)
{
    return c == '\r' || c == '\n' || ((flags & WF_B64_SKIP_BLANKS) && (c == ' ' || c == '\t'));
}

/* After a '=' at quantum position j (2 or 3): check the rest of the padding and that only
 * skippable bytes follow. *i indexes the byte after the first '='. */
static bool padding_ok(const char *in, size_t len, size_t *i, int j, unsigned flags)
{
    if (j < 2)
        return false;
    if (j == 2) {
        while (*i < len && skippable((unsigned char)in[*i], flags))
            (*i)++;
        if (*i == len || in[*i] != '=')
            return false;
        (*i)++;
    }
    while (*i < len && skippable((unsigned char)in[*i], flags))
        (*i)++;
    return *i == len;
}

static size_t flush(unsigned char *out, const int *q, int j)
{
    uint32_t v =
        ((uint32_t)q[0] << 18) | ((uint32_t)q[1] << 12) | ((uint32_t)q[2] << 6) | (uint32_t)q[3];
    out[0] = (unsigned char)(v >> 16);
    if (j > 2)
        out[1] = (unsigned char)(v >> 8);
    if (j > 3)
        out[2] = (unsigned char)v;
    return (size_t)j - 1;
}

bool wf_base64_decode_at(const char *in, size_t len, unsigned flags, unsigned char *out,
                         size_t *outlen, size_t *bad_at)
{
    size_t n = 0, i = 0, qstart = 0, bad = 0;
    int q[4] = {0, 0, 0, 0};
    int j = 0;
    bool ok = true, padded = false;
    while (i < len) {
        unsigned char c = (unsigned char)in[i++];
        if (skippable(c, flags))
            continue;
        if (j == 0)
            qstart = i - 1;
        if (c == '=') {
            bad = i - 1;
            ok = padding_ok(in, len, &i, j, flags);
            if (ok)
                n += flush(out + n, q, j);
            padded = true;
            break;
        }
        int v = value_of(c, flags);
        if (v < 0) {
            bad = i - 1;
            ok = false;
            break;
        }
        q[j++] = v;
        if (j == 4) {
            n += flush(out + n, q, 4);
            memset(q, 0, sizeof(q));
            j = 0;
        }
    }
    if (ok && !padded && (j == 1 || (j != 0 && !(flags & WF_B64_PAD_OPTIONAL)))) {
        bad = qstart; /* a dangling sextet, or padding required */
        ok = false;
    } else if (ok && !padded && j != 0) {
        n += flush(out + n, q, j);
    }
    if (ok)
        *outlen = n;
    else if (bad_at)
        *bad_at = bad;
    return ok;
}

bool wf_base64_decode(const char *in, size_t len, unsigned flags, unsigned char *out,
                      size_t *outlen)
{
    return wf_base64_decode_at(in, len, flags, out, outlen, NULL);
}
