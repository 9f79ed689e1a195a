/*
 * validate_regex.c - accept exactly the regular expressions RE2 (Go's regexp) accepts.
 *
 * Istio checks match regexes with Go's regexp.Compile (validateStringRegexp in
 * pkg/config/validation/validation.go) and Envoy runs them with RE2. PCRE2 accepts a
 * superset, so a scan first rejects what RE2 lacks, with Go's error wording: backreferences
 * and unknown escapes ("invalid escape sequence"), lookahead/lookbehind, atomic groups,
 * comments, conditionals, recursion and flags other than imsU ("invalid or unsupported Perl
 * syntax"), possessive and stacked quantifiers ("invalid nested repetition operator"),
 * counts over 1000 ("invalid repeat count") and PCRE verbs. PCRE2 then compiles the pattern
 * to catch the remaining structural errors (parentheses, brackets, ranges).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "model/validate_internal.h"

#include <ctype.h>
#include <string.h>

typedef struct rescan {
    vc *c;
    const char *re;
    const char *err;
} rescan;

static const char *go_err(vc *c, const char *code, const char *expr, size_t n)
{
    return vc_fmt(c, "error parsing regexp: %s: `%.*s`", code, (int)n, expr);
}

static bool is_octal(char ch)
{
    return ch >= '0' && ch <= '7';
}

/* Length of the escape at p (p[0] == '\\'), or 0 after setting s->err. */
static size_t scan_escape(rescan *s, const char *p, bool in_class)
{
    char e = p[1];
    if (!e) {
        s->err = go_err(s->c, "trailing backslash at end of expression", "", 0);
        return 0;
    }
    if (e >= '1' && e <= '7' && !is_octal(p[2]))
        goto bad;
    if (is_octal(e)) {
        size_t n = 2;
        while (n < 4 && is_octal(p[n]))
            n++;
        return n;
    }
    if (e == 'x') {
        if (p[2] == '{') {
            const char *close = strchr(p + 3, '}');
            if (!close || close == p + 3)
                goto bad;
            for (const char *q = p + 3; q < close; q++) {
                if (!isxdigit((unsigned char)*q))
                    goto bad;
            }
            return (size_t)(close - p) + 1;
        }
        if (isxdigit((unsigned char)p[2]) && isxdigit((unsigned char)p[3]))
            return 4;
        goto bad;
    }
    if (e == 'p' || e == 'P') {
        if (p[2] == '{') {
            const char *close = strchr(p + 3, '}');
            if (!close)
                goto bad_class;
            return (size_t)(close - p) + 1;
        }
        if (!p[2])
            goto bad_class;
        return 3;
    }
    if (!in_class && strchr("AzbB", e))
        return 2;
    if (strchr("aftnrvdDsSwW", e))
        return 2;
    if ((unsigned char)e < 0x80 && !isalnum((unsigned char)e))
        return 2;
bad:
    s->err = go_err(s->c, "invalid escape sequence", p, e && (unsigned char)e < 0x80 ? 2 : 1);
    return 0;
bad_class:
    s->err = go_err(s->c, "invalid character class range", p, strlen(p));
    return 0;
}

/* Length of the character class at p (p[0] == '['), or 0 on error (s->err set) or when
 * unterminated (left to PCRE2, which reports it). */
static size_t scan_class(rescan *s, const char *p)
{
    const char *q = p + 1;
    if (*q == '^')
        q++;
    if (*q == ']')
        q++;
    while (*q && *q != ']') {
        if (q[0] == '[' && q[1] == ':') {
            const char *end = strstr(q + 2, ":]");
            if (end) {
                q = end + 2;
                continue;
            }
        }
        if (*q == '\\') {
            size_t n = scan_escape(s, q, true);
            if (!n)
                return 0;
            q += n;
            continue;
        }
        q++;
    }
    return *q == ']' ? (size_t)(q - p) + 1 : 0;
}

/* "(?" groups: named captures and flag groups only. Returns the length consumed. */
static size_t scan_group(rescan *s, const char *p)
{
    const char *q = p + 2;
    if ((q[0] == 'P' && q[1] == '<') || (q[0] == '<' && q[1] != '=' && q[1] != '!')) {
        const char *name = q[0] == 'P' ? q + 2 : q + 1;
        const char *end = strchr(name, '>');
        bool ok = end && end > name;
        for (const char *n = name; ok && n < end; n++)
            ok = isalnum((unsigned char)*n) || *n == '_';
        if (!ok) {
            s->err =
                go_err(s->c, "invalid named capture", p, end ? (size_t)(end - p) + 1 : strlen(p));
            return 0;
        }
        return (size_t)(end - p) + 1;
    }
    bool neg = false, any = false;
    for (;; q++) {
        char ch = *q;
        if (ch == 'i' || ch == 'm' || ch == 's' || ch == 'U') {
            any = true;
            continue;
        }
        if (ch == '-' && !neg) {
            neg = true;
            any = false;
            continue;
        }
        if ((ch == ':' || ch == ')') && (any || !neg))
            return (size_t)(q - p) + 1;
        break;
    }
    size_t n = (size_t)(q - p) + (*q ? 1 : 0);
    if (p[2] == '<' && (p[3] == '=' || p[3] == '!'))
        n = 3;
    s->err = go_err(s->c, "invalid or unsupported Perl syntax", p, n);
    return 0;
}

static bool is_repeat_count(const char *p, size_t *len, long *lo, long *hi)
{
    const char *q = p + 1;
    if (!isdigit((unsigned char)*q))
        return false;
    *lo = 0;
    while (isdigit((unsigned char)*q) && *lo <= 100000)
        *lo = *lo * 10 + (*q++ - '0');
    *hi = *lo;
    if (*q == ',') {
        q++;
        *hi = -1;
        if (isdigit((unsigned char)*q)) {
            *hi = 0;
            while (isdigit((unsigned char)*q) && *hi <= 100000)
                *hi = *hi * 10 + (*q++ - '0');
        }
    }
    if (*q != '}')
        return false;
    *len = (size_t)(q - p) + 1;
    return true;
}

/* Length of a repetition operator at p (without a trailing '?'), 0 when none; sets s->err
 * for an invalid count. */
static size_t repeat_op(rescan *s, const char *p)
{
    if (*p == '*' || *p == '+' || *p == '?')
        return 1;
    size_t len;
    long lo, hi;
    if (*p == '{' && is_repeat_count(p, &len, &lo, &hi)) {
        if (lo > 1000 || hi > 1000 || (hi >= 0 && hi < lo)) {
            s->err = go_err(s->c, "invalid repeat count", p, len);
            return 0;
        }
        return len;
    }
    return 0;
}

static const char *scan(rescan *s)
{
    const char *p = s->re;
    const char *last_op = NULL; /* start of the previous repetition operator */
    while (*p && !s->err) {
        size_t n = 0;
        const char *op_start = p;
        if (*p == '\\') {
            if (p[1] == 'Q') {
                const char *end = strstr(p + 2, "\\E");
                p = end ? end + 2 : p + strlen(p);
                last_op = NULL;
                continue;
            }
            n = scan_escape(s, p, false);
        } else if (*p == '[') {
            n = scan_class(s, p);
            if (!n && !s->err)
                return NULL; /* unterminated: PCRE2 reports it */
        } else if (p[0] == '(' && p[1] == '?') {
            n = scan_group(s, p);
        } else if (p[0] == '(' && p[1] == '*') {
            s->err = go_err(s->c, "missing argument to repetition operator", "*", 1);
        } else if ((n = repeat_op(s, p)) > 0) {
            if (p[n] == '?')
                n++;
            if (last_op) {
                s->err = go_err(s->c, "invalid nested repetition operator", last_op,
                                (size_t)(p - last_op) + n);
                break;
            }
            last_op = op_start;
            p += n;
            continue;
        } else if (!s->err) {
            n = 1;
        }
        if (s->err)
            break;
        last_op = NULL;
        p += n;
    }
    return s->err;
}

static const char *pcre_error(vc *c, const char *re)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *compiled =
        pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
    if (compiled) {
        pcre2_code_free(compiled);
        return NULL;
    }
    switch (code) {
    case PCRE2_ERROR_MISSING_CLOSING_PARENTHESIS:
        return go_err(c, "missing closing )", re, strlen(re));
    case PCRE2_ERROR_UNMATCHED_CLOSING_PARENTHESIS:
        return go_err(c, "unexpected )", re, strlen(re));
    case PCRE2_ERROR_MISSING_SQUARE_BRACKET: {
        const char *br = strchr(re, '[');
        return go_err(c, "missing closing ]", br ? br : re, strlen(br ? br : re));
    }
    case PCRE2_ERROR_QUANTIFIER_TOO_BIG:
    case PCRE2_ERROR_QUANTIFIER_OUT_OF_ORDER:
        return go_err(c, "invalid repeat count", re, strlen(re));
    case PCRE2_ERROR_QUANTIFIER_INVALID:
        return go_err(c, "missing argument to repetition operator", off > 0 ? re + off - 1 : re, 1);
    case PCRE2_ERROR_CLASS_RANGE_ORDER:
        return go_err(c, "invalid character class range", re, strlen(re));
    default:
        break;
    }
    PCRE2_UCHAR buf[256];
    if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0)
        return go_err(c, "invalid regular expression", re, strlen(re));
    return go_err(c, (const char *)buf, re, strlen(re));
}

const char *vc_regex_error(vc *c, const char *re)
{
    rescan s = {.c = c, .re = re, .err = NULL};
    const char *e = scan(&s);
    return e ? e : pcre_error(c, re);
}
