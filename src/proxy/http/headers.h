/*
 * headers.h - request/response header mutations of routes, virtual hosts and route
 * configurations (request_headers_to_add/remove, response_headers_to_add/remove), applied
 * while a head's header list is built.
 *
 * Envoy semantics (envoy.config.core.v3.HeaderValueOption, and RouteConfiguration
 * most_specific_header_mutations_wins = false, the default): levels are applied from the
 * most specific (weighted cluster, route) to the least specific (route configuration), so
 * for the same header an overwriting add at a less specific level wins over every add at a
 * more specific one; APPEND_IF_EXISTS_OR_ADD adds another line; ADD_IF_ABSENT adds only when
 * the original head lacks the header; OVERWRITE_IF_EXISTS replaces only a header the
 * original head has. Names are compared case-insensitively.
 *
 * The adds become entries of a header list (http/header_list.h) that a codec encodes; nothing
 * here writes wire text.
 */
#ifndef WEFT_PROXY_HEADERS_H
#define WEFT_PROXY_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/http/header_list.h"

/* Drops the levels of ops[0..n) that neither add nor remove anything (keeping the order);
 * returns the new count. Most requests then have no level at all, and the per-field checks
 * below cost nothing. */
size_t wp_hops_compact(const wp_header_ops **ops, size_t n);

/* True when a header of the original head named name must not be copied: removed by some
 * level, or replaced by an overwriting add. ops[0..n) most specific first. */
bool wp_hops_drops(const wp_header_ops *const *ops, size_t n, const h1_str *name);

/* Appends the adds of ops[0..n) (most specific first) that go out to l, following the
 * precedence above; the entries point into the ops' configuration. have/nhave: the original
 * head's fields (for ADD_IF_ABSENT and OVERWRITE_IF_EXISTS). An add beyond l's capacity marks
 * it overflowed (header_list.h). */
void wp_hops_add(wp_hdr_list *l, const wp_header_ops *const *ops, size_t n, const h1_header *have,
                 size_t nhave);

/* The fields hdrs[0..n) as the serialised head has them after ops[0..nops): the dropped ones
 * removed, the added ones appended (at most WP_HOPS_VIEW_ADDS of them, while fewer than cap
 * fields). Rewrites hdrs in place; the added fields point into the ops' configuration, which
 * must outlive their use. Returns the new count. What Envoy's access log sees of a response. */
#define WP_HOPS_VIEW_ADDS 32
size_t wp_hops_view(h1_header *hdrs, size_t n, size_t cap, const wp_header_ops *const *ops,
                    size_t nops);

/* Case-insensitive comparison of a field name (h1_str *) with a lower-case literal. */
#define WP_NAME_IS(n, lit) ((n)->len == sizeof(lit) - 1 && h1_ieq((n)->p, lit, sizeof(lit) - 1))

/* Writes the decimal digits of v and a NUL into out (at least WP_U64_STR_MAX bytes); returns
 * the number of digits. No printf on the request path: a header value the proxy formats
 * (content-length, x-envoy-attempt-count, ...) goes into a buffer of the caller's this way. */
#define WP_U64_STR_MAX 21
size_t wp_u64_str(char *out, uint64_t v);

#endif
