/*
 * regex.c - a worker's regex matching state (see regex.h).
 */
#include "proxy/regex/regex.h"

#include <stdlib.h>
#include <string.h>

int wp_regex_ctx_init(wp_regex_ctx *rx)
{
    memset(rx, 0, sizeof(*rx));
    rx->md = pcre2_match_data_create(WP_REGEX_OVECTOR_PAIRS, NULL);
    rx->mctx = pcre2_match_context_create(NULL);
    rx->join = malloc(WP_ROUTE_JOIN_MAX);
    if (!rx->md || !rx->mctx || !rx->join) {
        wp_regex_ctx_free(rx);
        return -1;
    }
    uint32_t jit = 0;
    if (pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit) {
        rx->jit_stack = pcre2_jit_stack_create(32 * 1024, 512 * 1024, NULL);
        if (!rx->jit_stack) {
            wp_regex_ctx_free(rx);
            return -1;
        }
        pcre2_jit_stack_assign(rx->mctx, NULL, rx->jit_stack);
    }
    if (pcre2_set_match_limit(rx->mctx, WP_REGEX_MATCH_LIMIT) != 0 ||
        pcre2_set_depth_limit(rx->mctx, WP_REGEX_DEPTH_LIMIT) != 0 ||
        pcre2_set_heap_limit(rx->mctx, WP_REGEX_HEAP_LIMIT_KB) != 0) {
        wp_regex_ctx_free(rx);
        return -1;
    }
    return 0;
}

void wp_regex_ctx_free(wp_regex_ctx *rx)
{
    if (!rx)
        return;
    pcre2_match_data_free(rx->md);
    pcre2_match_context_free(rx->mctx);
    pcre2_jit_stack_free(rx->jit_stack);
    free(rx->join);
    rx->md = NULL;
    rx->mctx = NULL;
    rx->jit_stack = NULL;
    rx->join = NULL;
}

static bool is_limit_error(int rc)
{
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
           rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
}

int wp_regex_match(wp_regex_ctx *rx, const pcre2_code *re, const char *s, size_t len, size_t start,
                   uint32_t opts)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)(s ? s : ""), len, start, opts, rx->md, rx->mctx);
    if (rc < 0 && is_limit_error(rc))
        rx->limit_hits++;
    return rc;
}

bool wp_regex_full_match(wp_regex_ctx *rx, const pcre2_code *re, const char *s, size_t len)
{
    if (!re)
        return false;
    uint32_t all = 0;
    if (pcre2_pattern_info(re, PCRE2_INFO_ALLOPTIONS, &all) != 0)
        all = 0;
    uint32_t opts = 0;
    if (!(all & PCRE2_ANCHORED))
        opts |= PCRE2_ANCHORED;
    if (!(all & PCRE2_ENDANCHORED))
        opts |= PCRE2_ENDANCHORED;
    return wp_regex_match(rx, re, s, len, 0, opts) >= 0; /* 0: matched, ovector too small */
}

/* Position of needle in hay, or SIZE_MAX. */
static size_t find_sub(const char *hay, size_t hlen, const char *needle, size_t nlen, bool ci)
{
    if (nlen == 0)
        return 0;
    if (nlen > hlen)
        return SIZE_MAX;
    if (!ci) {
        const char *p = memmem(hay, hlen, needle, nlen);
        return p ? (size_t)(p - hay) : SIZE_MAX;
    }
    unsigned char first = wp_ascii_lower((unsigned char)needle[0]);
    for (size_t i = 0; i + nlen <= hlen; i++) {
        if (wp_ascii_lower((unsigned char)hay[i]) == first &&
            wp_bytes_eq(hay + i, needle, nlen, true))
            return i;
    }
    return SIZE_MAX;
}

bool wp_string_match(wp_regex_ctx *rx, const wp_string_matcher *m, const char *s, size_t len)
{
    bool ci = m->ignore_case;
    size_t vl = m->value_len;
    switch (m->kind) {
    case WP_SM_EXACT:
        return len == vl && wp_bytes_eq(s, m->value, vl, ci);
    case WP_SM_PREFIX:
        return len >= vl && wp_bytes_eq(s, m->value, vl, ci);
    case WP_SM_SUFFIX:
        return len >= vl && wp_bytes_eq(s + (len - vl), m->value, vl, ci);
    case WP_SM_CONTAINS:
        return find_sub(s, len, m->value, vl, ci) != SIZE_MAX;
    case WP_SM_REGEX:
        return wp_regex_full_match(rx, m->re, s, len);
    case WP_SM_PRESENT:
        return true;
    }
    return false;
}
