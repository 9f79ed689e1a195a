/*
 * route.h - route selection with Envoy's semantics: virtual host by Host/:authority, then the
 * first matching route of that virtual host, weighted cluster choice, path rewrites and the
 * Location of redirect routes.
 *
 * Envoy behaviour followed (envoy.config.route.v3 docs; source/common/router/config_impl.cc
 * RouteMatcher, *RouteEntryImpl; source/common/http/header_utility.cc;
 * source/common/router/config_utility.cc; source/common/http/utility.cc newUri):
 *
 *  - Virtual host (RouteMatcher::findVirtualHost): the host is lower-cased, then looked up as
 *    an exact domain (hash), then among suffix wildcards "*.foo.com" / "*-bar.foo.com"
 *    (longest suffix first; the wildcard never matches the empty string, so "*.foo.com" does
 *    not match ".foo.com"), then prefix wildcards "foo.*" (longest first), then "*".
 *    Config errors are Envoy's strings: "Only unique values for domains are permitted.
 *    Duplicate entry of domain X in route Y" (a domain repeated in the same category across
 *    the whole route configuration, compared lower-cased) and "Only a single wildcard domain
 *    is permitted in route Y" (a second "*").
 *  - Port in Host: with RouteConfiguration.ignore_port_in_host_matching (Istio sets it; see
 *    operator report B002) the port is removed before the lookup exactly as Envoy's
 *    HeaderUtility::getPortStart does: everything from the last ':' is dropped unless a ']'
 *    comes after it ("[::1]" keeps its colons, "[::1]:80" loses ":80"). Note that Envoy does not
 *    check that the port is made of digits, and neither do we. Without the flag the whole
 *    value, port included, must match a domain (Envoy does not retry without the port). The
 *    HCM options strip_matching_host_port / strip_any_host_port (and strip_trailing_host_dot)
 *    rewrite the Host header itself before routing; they belong to the connection manager,
 *    which must apply them before calling wp_route_find_vhost.
 *  - Routes are tried in order, the first match wins. Path matching uses the request-target
 *    up to the first '?' or '#' (Http::PathUtil::removeQueryAndFragment). prefix and path
 *    honour case_sensitive (default true); safe_regex is a full match on the path without the
 *    query and ignores case_sensitive; path_separated_prefix matches when the path equals the
 *    prefix or continues with '/' (a query after the prefix is fine: it is not part of the path).
 *  - Header matchers (HeaderUtility::matchHeaders): all values of a header are joined with ","
 *    before matching; ":method", ":path" (request-target with its query), ":authority" (also
 *    reached as "host", as Envoy aliases them) and ":scheme" match the request's pseudo-headers.
 *    A missing header never matches (with or without invert_match) unless
 *    treat_missing_header_as_empty, which matches "" instead; present_match is
 *    (present == is_present) XOR invert. A loader maps present_match: false to WP_SM_PRESENT with
 *    invert = true (same result). Exact matching of "" is strict (string_match semantics; the
 *    deprecated exact_match: "" that matched any value is not reproduced).
 *  - Query parameter matchers (ConfigUtility::QueryParameterMatcher with
 *    QueryParamsMulti::parseQueryString): the query is split on '&', a parameter without '='
 *    has the value "", names compare case-sensitively, only the first occurrence of a name
 *    counts, and neither names nor values are percent-decoded (parseQueryString passes
 *    decode_params = false in current Envoy). present_match: true means "the parameter exists".
 *    The query ends at '#' (Envoy's :path never carries a fragment).
 *  - String matchers (Matchers::StringMatcherImpl): exact / prefix / suffix / contains, each
 *    with ignore_case (ASCII); safe_regex is a full match (RE2 FullMatch) and ignores
 *    ignore_case (Envoy rejects the combination at load).
 *  - Weighted clusters (WeightedClusterSpecifierPlugin::pickWeightedCluster): value = random %
 *    sum of weights, walked over the cumulative weights in configuration order.
 *  - Rewrites (RouteEntryImplBase::currentUrlPathAfterRewriteWithMatchedPath): prefix_rewrite
 *    replaces the part matched by a prefix / path_separated_prefix / path route (the whole
 *    path for a safe_regex route) and keeps the rest, query included; regex_rewrite replaces
 *    every match in the path without the query (RE2::GlobalReplace) and keeps the query. The
 *    substitution uses RE2 syntax: \0..\9 insert a capture group (empty when it did not take
 *    part), "\\" is a backslash; any other backslash is copied literally [verify: RE2 rejects
 *    such a rewrite string; we keep it rather than fail the request]. An empty prefix_rewrite
 *    means "none", as in Envoy.
 *  - Redirects (Http::Utility::newUri after the router's rewritePathHeader): scheme =
 *    scheme_redirect / https_redirect, else the request's scheme. Port: port_redirect gives
 *    ":N" and drops the request's port; otherwise the request's port is dropped only when the
 *    scheme changes and the port is the default of the request's protocol (":80" for http,
 *    ":443" for https; the protocol is X-Forwarded-Proto when present, else the connection's).
 *    host_redirect replaces the host (and its port). path_redirect replaces the path and keeps
 *    the request's query unless path_redirect has its own ('?'), in which case strip_query is
 *    ignored; otherwise prefix_rewrite / regex_rewrite rewrite the path as above. A path not
 *    starting with '/' gets one. strip_query drops everything from '?'.
 *
 * Regular expressions are compiled by the loader (RE2 syntax checked there) and matched with
 * PCRE2 under the limits below; hitting a limit is a non-match and counts in limit_hits
 * (DESIGN.md, "Regular expressions"). Full matches pass PCRE2_ANCHORED|PCRE2_ENDANCHORED at
 * match time unless the pattern was compiled with them; since match-time anchoring disables
 * the JIT, the loader should compile full-match patterns (path, header, query safe_regex) with
 * both flags and regex_rewrite patterns without them.
 *
 * Threads: everything here only reads the config; a wp_regex_ctx belongs to one worker. The
 * request path (find_vhost, match, string_match, pick_weighted, rewrite_path) never allocates.
 */
#ifndef WEFT_PROXY_ROUTE_H
#define WEFT_PROXY_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/regex/regex.h"

/* The request as the router sees it. Strings are not NUL-terminated; they stay owned by the
 * caller. path is the origin-form request-target ("/a/b?x=1"); for an absolute-form request
 * the caller passes its path and its authority. authority may be NULL (no Host), scheme may be
 * NULL (then "https" when the connection is secure, else "http", is used for redirects). */
typedef struct {
    const char *method;
    size_t method_len;
    const char *path; /* request-target incl. query */
    size_t path_len;
    const char *authority;
    size_t authority_len;
    const char *scheme; /* NUL-terminated, e.g. "http" */
    const h1_header *headers;
    size_t nheaders;
    bool https; /* the request's forwarded protocol is https (a virtual host's require_tls) */
} wp_route_req;

/* Builds rc->index (the domain lookup) with memory from a. Returns 0, or -1 with a message in
 * err (Envoy's strings above, or "out of memory") when a domain is duplicated, "*" appears
 * twice, or an allocation fails; rc->index is left NULL on error. Config time only. */
int wp_route_index_build(wf_arena *a, wp_route_config *rc, wf_strbuf *err);

/* The virtual host for a Host/:authority value of len bytes (host may be NULL: no Host
 * header, which only finds a route configuration whose sole domain is "*"). Returns NULL when
 * nothing matches or rc->index was not built. No allocation. */
const wp_vhost *wp_route_find_vhost(const wp_route_config *rc, const char *host, size_t len);

/* The first route of vh matching req, or NULL (404 NR for the caller). vh NULL returns NULL. */
/* The first route of vh matching req; with vh->require_tls_all and req->https false, the
 * virtual host's TLS redirect instead (Envoy's RouteEntryImplBase for SslRequirements::All).
 * NULL when none matches. */
const wp_route *wp_route_match(wp_regex_ctx *rx, const wp_vhost *vh, const wp_route_req *req);

/* True when every header matcher of m[0..n) matches req, with the route matcher's rules above
 * (Envoy's HeaderUtility::matchHeaders); n == 0 is true. Used by filters that carry header
 * matchers of their own (the fault filter's `headers`). No allocation. */
bool wp_route_headers_match(wp_regex_ctx *rx, const wp_route_req *req, const wp_kv_matcher *m,
                            size_t n);

/* Index into r->weighted chosen by random, or -1 when the route has no weighted clusters or
 * all weights are 0. Uses r->total_weight when non-zero, else the sum of the weights. */
int wp_route_pick_weighted(const wp_route *r, uint64_t random);

/* Rewrites the request-target target[0..len) with r's prefix_rewrite or regex_rewrite into
 * out (cap bytes; the result is NUL-terminated). Returns the new length; 0 when r has no
 * rewrite, the target does not start with the matched prefix, or a regex limit was hit (the
 * caller keeps the original); SIZE_MAX when out is too small for the result and its NUL. */
size_t wp_route_rewrite_path(wp_regex_ctx *rx, const wp_route *r, const char *target, size_t len,
                             char *out, size_t cap);

/* For a WP_ACT_REDIRECT route: writes the Location value into location (reset first) and
 * returns the status code (redirect.code, 301 when 0). secure: the downstream connection is
 * TLS. Returns -1 when location failed to allocate or r is not a redirect route. */
int wp_route_redirect(wp_regex_ctx *rx, const wp_route *r, const wp_route_req *req, bool secure,
                      wf_strbuf *location);

#endif
