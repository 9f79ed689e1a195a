/*
 * headers.h - request/response header mutations of routes, virtual hosts and route
 * configurations (request_headers_to_add/remove, response_headers_to_add/remove), applied
 * while a head is serialised.
 *
 * Envoy semantics (envoy.config.core.v3.HeaderValueOption, and RouteConfiguration
 * most_specific_header_mutations_wins = false, the default): levels are applied from the
 * most specific (weighted cluster, route) to the least specific (route configuration), so
 * for the same header an overwriting add at a less specific level wins over every add at a
 * more specific one; APPEND_IF_EXISTS_OR_ADD adds another line; ADD_IF_ABSENT adds only when
 * the original head lacks the header; OVERWRITE_IF_EXISTS replaces only a header the
 * original head has. Names are compared case-insensitively.
 */
#ifndef WEFT_PROXY_HEADERS_H
#define WEFT_PROXY_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/config/config.h"

/* Drops the levels of ops[0..n) that neither add nor remove anything (keeping the order);
 * returns the new count. Most requests then have no level at all, and the per-field checks
 * below cost nothing. */
size_t wp_hops_compact(const wp_header_ops **ops, size_t n);

/* True when a header of the original head named name must not be copied: removed by some
 * level, or replaced by an overwriting add. ops[0..n) most specific first. */
bool wp_hops_drops(const wp_header_ops *const *ops, size_t n, const h1_str *name);

/* Appends "name: value\r\n" lines for the adds of ops[0..n) (most specific first) to b,
 * following the precedence above. have/nhave: the original head's fields (for
 * ADD_IF_ABSENT and OVERWRITE_IF_EXISTS). */
void wp_hops_emit(wf_strbuf *b, const wp_header_ops *const *ops, size_t n, const h1_header *have,
                  size_t nhave);

/* The fields hdrs[0..n) as the serialised head has them after ops[0..nops): the dropped ones
 * removed, the added ones appended (at most WP_HOPS_VIEW_ADDS of them, while fewer than cap
 * fields). Rewrites hdrs in place; the added fields point into the ops' configuration, which
 * must outlive their use. Returns the new count. What Envoy's access log sees of a response. */
#define WP_HOPS_VIEW_ADDS 32
size_t wp_hops_view(h1_header *hdrs, size_t n, size_t cap, const wp_header_ops *const *ops,
                    size_t nops);

/* Case-insensitive comparison of a field name (h1_str *) with a lower-case literal. */
#define WP_NAME_IS(n, lit)                                                                         \
    ((n)->len == sizeof(lit) - 1 && strncasecmp((n)->p, lit, sizeof(lit) - 1) == 0)

/* Writes the decimal digits of v and a NUL into out (at least 21 bytes); returns the
 * number of digits. No printf on the request path. */
size_t wp_u64_str(char *out, uint64_t v);
/* Appends the decimal digits of v (no printf on the request path). */
void wp_hdr_put_u64(wf_strbuf *b, uint64_t v);
/* Appends "name: value\r\n" / "name: <v>\r\n". */
void wp_hdr_put(wf_strbuf *b, const char *name, size_t nlen, const char *value, size_t vlen);
void wp_hdr_put_num(wf_strbuf *b, const char *name, size_t nlen, uint64_t v);

#endif
