/*
 * regex.h - a worker's regex matching state (PCRE2 match data, match context with limits, JIT
 * stack, and a scratch buffer to join a repeated header's values) and the one full-match call
 * every matcher of the proxy uses, and Envoy's StringMatcher (exact, prefix, suffix,
 * contains, safe_regex): routes, RBAC, JWT claims, stats matchers. Envoy's safe_regex runs RE2;
 * weft checks the RE2 syntax at load (model/re2_check.h) and matches with PCRE2 within these
 * limits, a limit hit counting as no match.
 *
 * Ownership: a wp_regex_ctx belongs to one worker (not shared between threads); the compiled
 * patterns it matches belong to the config snapshot.
 */
#ifndef WEFT_PROXY_REGEX_H
#define WEFT_PROXY_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* PCRE2 limits per pcre2_match call (match_limit counts internal match() calls, depth_limit
 * backtracking depth, heap_limit KiB of backtracking memory). Generous for real routes, small
 * enough that one call stays in the low milliseconds. */
#define WP_REGEX_MATCH_LIMIT   200000u
#define WP_REGEX_DEPTH_LIMIT   10000u
#define WP_REGEX_HEAP_LIMIT_KB 8192u
/* Capture pairs in the match data (group 0 + 63 groups). */
#define WP_REGEX_OVECTOR_PAIRS 64u
/* Bytes available to join the values of a repeated header; larger joins do not match. */
#define WP_ROUTE_JOIN_MAX (64u * 1024u)

/* Per-worker regex state. Not shared between threads. */
typedef struct {
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
    char *join;              /* WP_ROUTE_JOIN_MAX bytes, for repeated headers */
    uint64_t limit_hits;     /* pcre2_match calls stopped by a limit (counted as non-match) */
    uint64_t join_overflows; /* repeated headers too long to join (header matcher failed) */
} wp_regex_ctx;

/* Allocates the match data, match context (limits above) and JIT stack. Returns 0, or -1 when
 * out of memory (rx is then left freed). */
int wp_regex_ctx_init(wp_regex_ctx *rx);
/* Frees what wp_regex_ctx_init allocated; safe on a zeroed or already freed ctx. */
void wp_regex_ctx_free(wp_regex_ctx *rx);

/* pcre2_match with the context's limits from start with opts; counts limit hits. Returns
 * pcre2_match's result. */
int wp_regex_match(wp_regex_ctx *rx, const pcre2_code *re, const char *s, size_t len, size_t start,
                   uint32_t opts);

/* Full match of s[0..len) against re (RE2 FullMatch semantics). A limit hit returns false and
 * increments rx->limit_hits. re NULL returns false. */
bool wp_regex_full_match(wp_regex_ctx *rx, const pcre2_code *re, const char *s, size_t len);

/* The ASCII lower case of c. */
static inline unsigned char wp_ascii_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* n bytes of a and b equal, ASCII case-insensitively when ci. */
static inline bool wp_bytes_eq(const char *a, const char *b, size_t n, bool ci)
{
    if (n == 0)
        return true;
    if (!ci)
        return memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; i++) {
        if (wp_ascii_lower((unsigned char)a[i]) != wp_ascii_lower((unsigned char)b[i]))
            return false;
    }
    return true;
}

/* A string matcher (envoy.type.matcher.v3.StringMatcher and route HeaderMatcher kinds). */
typedef enum {
    WP_SM_EXACT,
    WP_SM_PREFIX,
    WP_SM_SUFFIX,
    WP_SM_CONTAINS,
    WP_SM_REGEX,   /* safe_regex, full match, RE2 syntax checked at load */
    WP_SM_PRESENT, /* header/query parameter present (present_match: true) */
} wp_sm_kind;

typedef struct {
    wp_sm_kind kind;
    const char *value; /* NUL-terminated; lower-cased when ignore_case */
    size_t value_len;
    pcre2_code *re; /* WP_SM_REGEX */
    bool ignore_case;
} wp_string_matcher;

/* Applies one string matcher to s[0..len) (WP_SM_PRESENT is true for any value). */
bool wp_string_match(wp_regex_ctx *rx, const wp_string_matcher *m, const char *s, size_t len);

#endif
