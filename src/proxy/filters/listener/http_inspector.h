/*
 * http_inspector.h - envoy.filters.listener.http_inspector (Envoy's HttpInspector listener
 * filter, source/extensions/filters/listener/http_inspector/http_inspector.cc; docs
 * configuration/listeners/listener_filters/http_inspector; reference protocols.md §1.3): peeks
 * at an accepted plaintext socket's first bytes and, when they start an HTTP request, sets the
 * socket's requested application protocol for the filter chain match: "h2c" for HTTP/2 with
 * prior knowledge, "http/1.1" or "http/1.0". The bytes are not consumed.
 *
 * Envoy behaviour followed (the Balsa request-line parser Envoy uses, with custom methods
 * allowed, source/common/http/http1/balsa_parser.cc):
 *  - a socket whose transport protocol a filter already detected (other than "raw_buffer",
 *    e.g. "tls" by tls_inspector) is not inspected: the chain goes on at once;
 *  - bytes that are a prefix of the 24-byte preface "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" wait for
 *    all 24, which give "h2c" (http2_found);
 *  - otherwise a first byte CR or LF is not HTTP; else the request line up to the first '\n' is
 *    parsed (Balsa's three islands: method, request-target, version; bytes <= ' ' separate
 *    them): a method of token characters (RFC 9110), a request-target as http-parser accepts it
 *    (origin "/..." or "*", absolute "scheme://host/...", or authority for CONNECT; never
 *    empty), a version empty (HTTP/0.9) or "HTTP/d.d". A line that fails is not HTTP
 *    (http_not_found); one ending in "HTTP/1.1" gives "http/1.1" (http11_found), any other
 *    valid one "http/1.0" (http10_found). Before the '\n' arrives more is awaited;
 *  - 64 KiB without a verdict: read_error (Envoy's warning "reached max buffer without
 *    determining HTTP version, dropping connection") and the connection is closed;
 *  - "not HTTP" leaves the application protocols empty and the chain goes on;
 *  - stats rooted at "http_inspector." (not per listener): read_error, http10_found,
 *    http11_found, http2_found, http_not_found.
 * A client that sends nothing (a server-first protocol) waits for the listener's
 * listener_filters_timeout; with continue_on_listener_filters_timeout the chain goes on without
 * an application protocol (server/conn_handler.c), so a TCP chain takes it.
 *
 * Memory: no per-connection state (each call parses from the first byte); the config (the stat
 * slots) lives in the config snapshot and is filled in by wp_http_inspector_register_stats.
 */
#ifndef WEFT_PROXY_FILTERS_LISTENER_HTTP_INSPECTOR_H
#define WEFT_PROXY_FILTERS_LISTENER_HTTP_INSPECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/net/listener_filter.h"
#include "proxy/stats/stats.h"

#define WP_HTTP_INSPECTOR_NAME "envoy.filters.listener.http_inspector"
#define WP_HTTP_INSPECTOR_TYPE                                                                     \
    "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector"
#define WP_HTTP_INSPECTOR_MAX 65536u /* Envoy's Config::MAX_INSPECT_SIZE */

extern const wp_listener_filter_ops wp_http_inspector_ops;

/* The filter's config (HttpInspector has no fields) and its stat slots. */
typedef struct wp_http_inspector {
    uint32_t st_read_error, st_http10_found, st_http11_found, st_http2_found, st_http_not_found;
} wp_http_inspector;

typedef enum {
    WP_HI_NEED_MORE, /* no verdict yet */
    WP_HI_HTTP2,     /* the h2 prior-knowledge preface: "h2c" */
    WP_HI_HTTP11,    /* "http/1.1" */
    WP_HI_HTTP10,    /* any other valid request line: "http/1.0" */
    WP_HI_NOT_HTTP,
} wp_http_inspect_result;

/* Classifies data[0, len) as above. */
wp_http_inspect_result wp_http_inspect(const unsigned char *data, size_t len);

/* Registers the http_inspector.* stats for every http_inspector of c's listeners. 0, or -1 out
 * of memory. */
int wp_http_inspector_register_stats(wp_stats *st, const wp_config *c);

#endif
