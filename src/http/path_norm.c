/*
 * path_norm.c - Envoy's path normalization (path_norm.h). The canonicalizer follows the
 * structure of Chromium's DoPartialPath as forked by Envoy (source/common/chromium_url/
 * url_canon_path.cc): a per-byte class table, dot-segment classification with a bounded
 * look-ahead, and an output that is backed up on "..".
 */
#include "http/path_norm.h"

#include <errno.h>
#include <string.h>

#include "core/hex.h"

/* Byte classes of Chromium's kPathCharLookup (Envoy's fork). */
enum {
    PASS = 0,    /* copied as is, escaped or not */
    SPECIAL = 1, /* needs a look: '.', and every class below that sets it */
    ESC_BIT = 2,
    ESC = ESC_BIT | SPECIAL, /* percent-encoded in the output */
    UNESC = 4,               /* decoded when it arrives escaped (unreserved characters) */
    INV_BIT = 8,
    INV = INV_BIT | SPECIAL, /* makes the path invalid (NUL) */
};

#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
#define U10    UNESC, UNESC, UNESC, UNESC, UNESC, UNESC, UNESC, UNESC, UNESC, UNESC

static const unsigned char cls[256] = {
    /* 0x00 NUL, controls */
    INV, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC, ESC,
    /* 0x10 controls */
    R16(ESC),
    /* ' ' ! " # $ % & ' ( ) * + , - . / */
    ESC, PASS, ESC, ESC, PASS, ESC, PASS, PASS, PASS, PASS, PASS, PASS, PASS, UNESC, SPECIAL, PASS,
    /* 0-9 : ; < = > ? */
    U10, PASS, PASS, ESC, PASS, ESC, ESC,
    /* @ A-O */
    PASS, U10, UNESC, UNESC, UNESC, UNESC, UNESC,
    /* P-Z [ \ ] ^ _ */
    U10, UNESC, PASS, ESC, PASS, ESC, UNESC,
    /* ` a-o */
    ESC, U10, UNESC, UNESC, UNESC, UNESC, UNESC,
    /* p-z { | } ~ DEL */
    U10, UNESC, ESC, ESC, ESC, UNESC, ESC,
    /* 0x80-0xff */
    R16(ESC), R16(ESC), R16(ESC), R16(ESC), R16(ESC), R16(ESC), R16(ESC), R16(ESC)};

/* The output being written: bytes [0, len) of p; full once a byte did not fit. */
typedef struct {
    char *p;
    size_t len, cap;
    bool full;
} pn_out;

static bool put(pn_out *o, char c)
{
    if (o->len >= o->cap) {
        o->full = true;
        return false;
    }
    o->p[o->len++] = c;
    return true;
}

static void put_escaped(pn_out *o, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    put(o, '%');
    put(o, hex[c >> 4]);
    put(o, hex[c & 15]);
}

static size_t path_part_len(const char *p, size_t len)
{
    const char *q = memchr(p, '?', len);
    return q ? (size_t)(q - p) : len;
}

/* Chromium DecodeEscaped: s[i] is '%'; true with the byte when s[i+1..i+2] are hex. */
static bool decode_escaped(const char *s, size_t i, size_t end, unsigned char *v)
{
    if (i + 3 > end)
        return false;
    int hi = wf_hex_value((unsigned char)s[i + 1]), lo = wf_hex_value((unsigned char)s[i + 2]);
    if (hi < 0 || lo < 0)
        return false;
    *v = (unsigned char)(hi << 4 | lo);
    return true;
}

/* Chromium IsDot: 1 for '.', 3 for "%2e"/"%2E", else 0. */
static size_t is_dot(const char *s, size_t i, size_t end)
{
    if (s[i] == '.')
        return 1;
    if (s[i] == '%' && i + 3 <= end && s[i + 1] == '2' && (s[i + 2] == 'e' || s[i + 2] == 'E'))
        return 3;
    return 0;
}

static bool is_slash(char c)
{
    return c == '/' || c == '\\';
}

enum { NOT_DIR, DIR_CUR, DIR_UP };

/* Chromium ClassifyAfterDot: what the dot ending at `after` is; *consumed = input bytes
 * after it that belong to the segment (the second dot, the slash). */
static int classify_after_dot(const char *s, size_t after, size_t end, size_t *consumed)
{
    *consumed = 0;
    if (after == end)
        return DIR_CUR;
    if (is_slash(s[after])) {
        *consumed = 1;
        return DIR_CUR;
    }
    size_t d2 = is_dot(s, after, end);
    if (d2) {
        size_t a2 = after + d2;
        if (a2 == end) {
            *consumed = d2;
            return DIR_UP;
        }
        if (is_slash(s[a2])) {
            *consumed = d2 + 1;
            return DIR_UP;
        }
    }
    return NOT_DIR;
}

/* Chromium BackUpToPreviousSlash: the output ends in '/'; drop the last segment. */
static void back_up(pn_out *o)
{
    size_t i = o->len - 1;
    if (i == 0)
        return;
    i--;
    while (o->p[i] != '/' && i > 0)
        i--;
    o->len = i + 1;
}

/* PathUtil::stripParametersFromDotSegments, folded in: a segment that starts at s[i] (after
 * a '/', before strip_end) with "..;" or ".;" is read as ".." or "." (its parameters are
 * dropped). Returns DIR_UP / DIR_CUR with *last = the index of the segment's last byte (its
 * '/' when it has one); NOT_DIR when the segment has no such parameters; DOTS_1 / DOTS_2
 * when the segment ends at a '#' (strip_end < end): the dots are then a file name. */
enum { DOTS_1 = 3, DOTS_2 = 4 };

static int dot_params(const char *s, size_t i, size_t end, size_t strip_end, size_t *last)
{
    if (i >= strip_end || (i > 0 && s[i - 1] != '/'))
        return NOT_DIR;
    bool up = i + 3 <= strip_end && memcmp(s + i, "..;", 3) == 0;
    if (!up && !(i + 2 <= strip_end && memcmp(s + i, ".;", 2) == 0))
        return NOT_DIR;
    size_t e = i;
    while (e < strip_end && s[e] != '/')
        e++;
    if (e < strip_end) {
        *last = e; /* the '/' */
        return up ? DIR_UP : DIR_CUR;
    }
    *last = e - 1;
    if (e == end)
        return up ? DIR_UP : DIR_CUR;
    return up ? DOTS_2 : DOTS_1;
}

/* A dot (dl bytes) at s[i] that follows a '/' in the output (a segment start). Returns the
 * index of the last input byte consumed. */
static size_t on_dot_segment(const char *s, size_t i, size_t dl, size_t end, size_t strip_end,
                             pn_out *o)
{
    size_t last, consumed;
    int kind = dot_params(s, i, end, strip_end, &last);
    if (kind == DOTS_1 || kind == DOTS_2) {
        put(o, '.');
        if (kind == DOTS_2)
            put(o, '.');
        return last;
    }
    if (kind == NOT_DIR) {
        kind = classify_after_dot(s, i + dl, end, &consumed);
        last = i + dl + consumed - 1;
    }
    if (kind == NOT_DIR) {
        put(o, '.');
        return i + dl - 1;
    }
    if (kind == DIR_UP)
        back_up(o);
    return last;
}

/* A dot (dl bytes) at s[i]: a dot segment, or part of a name. Returns as on_dot_segment. */
static size_t on_dot(const char *s, size_t i, size_t dl, size_t end, size_t strip_end, pn_out *o)
{
    if (o->p[o->len - 1] == '/')
        return on_dot_segment(s, i, dl, end, strip_end, o);
    put(o, '.');
    return i + dl - 1;
}

/* Chromium CheckForNestedEscapes: a byte was just decoded within two output bytes of a '%'
 * (at lip) that began no valid escape; if output and input now spell a valid escape, the
 * '%' becomes "%25" so the result is not decoded twice. */
static void nested_escapes(const char *s, size_t next, size_t end, size_t lip, pn_out *o)
{
    size_t len = o->len;
    char last = o->p[len - 1];
    bool append_next = lip == len - 2;
    if (append_next) {
        if (next == end || (unsigned char)s[next] >= 0x80)
            return;
        if (!put(o, s[next]))
            return;
    }
    unsigned char v;
    if (decode_escaped(o->p, lip, o->len, &v)) {
        if (!append_next && !put(o, o->p[lip + 1]))
            return;
        o->p[lip + 1] = '2';
        o->p[lip + 2] = '5';
        put(o, last);
    } else if (append_next) {
        o->len = len;
    }
}

/* A '%' at s[i]: decode, keep or flag it. Returns the index of its last byte. */
static size_t on_percent(const char *s, size_t i, size_t end, long *lip, bool *ok, pn_out *o)
{
    unsigned char v;
    if (!decode_escaped(s, i, end, &v)) {
        *lip = (long)o->len; /* kept as is (Chromium's permissive choice) */
        put(o, '%');
        return i;
    }
    if (cls[v] & UNESC) {
        put(o, (char)v);
        if (*lip >= 0 && *lip >= (long)o->len - 3 && !o->full)
            nested_escapes(s, i + 3, end, (size_t)*lip, o);
    } else {
        put(o, '%');
        put(o, s[i + 1]);
        put(o, s[i + 2]);
        if (cls[v] & INV_BIT)
            *ok = false;
    }
    return i + 2;
}

/* Chromium DoPartialPath over s[0..end); the output already holds the leading '/'. */
static bool partial_path(const char *s, size_t end, size_t strip_end, pn_out *o)
{
    bool ok = true;
    long lip = -1; /* output index of the last '%' that began no valid escape */
    for (size_t i = 0; i < end && !o->full; i++) {
        unsigned char c = (unsigned char)s[i];
        unsigned char f = cls[c];
        size_t dl;
        if (!(f & SPECIAL))
            put(o, (char)c);
        else if ((dl = is_dot(s, i, end)) > 0)
            i = on_dot(s, i, dl, end, strip_end, o);
        else if (c == '\\')
            put(o, '/');
        else if (c == '%')
            i = on_percent(s, i, end, &lip, &ok, o);
        else {
            put_escaped(o, c);
            if (f & INV_BIT)
                ok = false;
        }
    }
    return ok;
}

int wf_path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *out_len)
{
    size_t plen = path_part_len(in, len);
    const char *hash = memchr(in, '#', plen);
    size_t strip_end = hash ? (size_t)(hash - in) : plen;
    pn_out o = {out, 0, cap, false};
    bool ok = true;
    if (plen == 0 || !is_slash(in[0]))
        put(&o, '/');
    if (plen > 0 && !o.full)
        ok = partial_path(in, plen, strip_end, &o);
    if (!o.full && len - plen > o.cap - o.len)
        o.full = true;
    if (o.full)
        return -ENOSPC;
    if (!ok)
        return -EINVAL;
    memcpy(o.p + o.len, in + plen, len - plen);
    *out_len = o.len + (len - plen);
    return 0;
}

size_t wf_path_merge_slashes(char *p, size_t len)
{
    size_t plen = path_part_len(p, len);
    if (plen < 2 || !memmem(p, plen, "//", 2))
        return len;
    size_t w = 0;
    for (size_t r = 0; r < plen; r++)
        if (p[r] != '/' || w == 0 || p[w - 1] != '/')
            p[w++] = p[r];
    if (w == 1 && p[0] == '/') /* only slashes: Envoy joins no segment between "/" and "/" */
        p[w++] = '/';
    memmove(p + w, p + plen, len - plen);
    return w + (len - plen);
}

/* The byte %2F/%2f/%5C/%5c at s[i] stands for, or 0. */
static char escaped_slash(const char *s, size_t i, size_t end)
{
    if (s[i] != '%' || i + 3 > end)
        return 0;
    if (s[i + 1] == '2' && (s[i + 2] == 'F' || s[i + 2] == 'f'))
        return '/';
    if (s[i + 1] == '5' && (s[i + 2] == 'C' || s[i + 2] == 'c'))
        return '\\';
    return 0;
}

bool wf_path_unescape_slashes(char *p, size_t *len)
{
    size_t plen = path_part_len(p, *len);
    if (!memchr(p, '%', plen))
        return false;
    size_t w = 0;
    for (size_t r = 0; r < plen; r++) {
        char c = escaped_slash(p, r, plen);
        if (c)
            r += 2;
        p[w++] = c ? c : p[r];
    }
    if (w == plen)
        return false;
    memmove(p + w, p + plen, *len - plen);
    *len = w + (*len - plen);
    return true;
}

static bool esc_active(const wf_path_opts *o)
{
    return o->escaped_slashes != WF_ESC_SLASH_DEFAULT && o->escaped_slashes != WF_ESC_SLASH_KEEP;
}

bool wf_path_needs_sanitize(const wf_path_opts *o, const char *p, size_t len)
{
    if (memchr(p, '#', len))
        return true;
    size_t plen = path_part_len(p, len);
    if (o->normalize && (plen == 0 || p[0] != '/'))
        return true;
    bool esc = esc_active(o);
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)p[i];
        bool after_slash = i > 0 && p[i - 1] == '/';
        if (c == '%' && (esc || o->normalize))
            return true;
        if (c == '/' && after_slash && o->merge_slashes)
            return true;
        /* a '.' matters only where a segment starts ("/index.html" is left alone) */
        if (o->normalize && (cls[c] & SPECIAL) && (c != '.' || after_slash))
            return true;
    }
    return false;
}

int wf_path_sanitize(const wf_path_opts *o, const char *in, size_t len, char *out, size_t cap,
                     size_t *out_len)
{
    if (cap < WF_PATH_SANITIZE_CAP(len))
        return -ENOSPC;
    char *stage = out + cap - len; /* out[0, cap - len) takes the result: >= 3 * len + 8 */
    size_t slen = len, n;
    memcpy(stage, in, len);
    int act = WF_PATH_CONTINUE;
    if (memchr(stage, '#', len))
        act = WF_PATH_REJECT;
    else if (esc_active(o) && wf_path_unescape_slashes(stage, &slen))
        act = o->escaped_slashes == WF_ESC_SLASH_REJECT     ? WF_PATH_REJECT
              : o->escaped_slashes == WF_ESC_SLASH_REDIRECT ? WF_PATH_REDIRECT
                                                            : WF_PATH_CONTINUE;
    if (act != WF_PATH_REJECT && o->normalize) {
        int rc = wf_path_normalize(stage, slen, out, cap - len, &n);
        if (rc == -ENOSPC)
            return rc; /* cannot happen with cap - len >= 3 * len + 1 */
        if (rc != 0)
            act = WF_PATH_REJECT;
    }
    if (act == WF_PATH_REJECT || !o->normalize) {
        memmove(out, stage, slen);
        n = slen;
    }
    if (act != WF_PATH_REJECT && o->merge_slashes)
        n = wf_path_merge_slashes(out, n);
    *out_len = n;
    return act;
}
