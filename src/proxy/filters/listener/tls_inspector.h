/*
 * tls_inspector.h - envoy.filters.listener.tls_inspector (Envoy's TlsInspector listener
 * filter, source/extensions/filters/listener/tls_inspector/tls_inspector.cc; docs
 * configuration/listeners/listener_filters/tls_inspector): reads an accepted socket's first
 * bytes and, when they are a TLS ClientHello, marks the socket's transport protocol "tls"
 * and sets its requested server name (SNI) and application protocols (ALPN) for the filter
 * chain match. The bytes are not consumed.
 *
 * Envoy behaviour followed:
 *  - a ClientHello parsed: tls_found, sni_found or sni_not_found, alpn_found or
 *    alpn_not_found; transport protocol "tls";
 *  - bytes that are not a TLS handshake (plaintext): tls_not_found, the chain goes on
 *    (transport protocol stays "raw_buffer"), unless close_connection_on_client_hello_
 *    parsing_errors, which closes the connection;
 *  - a ClientHello still incomplete at max_client_hello_size bytes (default and maximum
 *    16 KiB: "max_client_hello_size of N is greater than maximum of 16384."):
 *    client_hello_too_large, the connection is closed;
 *  - the bytes looked at are recorded in the histogram tls_inspector.bytes_processed;
 *  - stats are rooted at "tls_inspector." (not per listener), as Envoy's.
 * Not implemented (refused by the bootstrap): enable_ja3_fingerprinting and
 * enable_ja4_fingerprinting set to true.
 *
 * The parser reads the TLS record layer (handshake records, a ClientHello split over several
 * records reassembled) and the ClientHello's server_name (host_name entries) and
 * application_layer_protocol_negotiation extensions; a malformed ClientHello counts as not
 * TLS, as Envoy's (BoringSSL's parse error without a ClientHello).
 *
 * Memory: the filter keeps no per-connection state (each call parses the bytes from the
 * first); its config lives in the config snapshot, its stat slots are filled in when the
 * snapshot's generation registers them (wp_tls_inspector_register_stats).
 */
#ifndef WEFT_PROXY_FILTERS_LISTENER_TLS_INSPECTOR_H
#define WEFT_PROXY_FILTERS_LISTENER_TLS_INSPECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/net/listener_filter.h"
#include "proxy/stats/stats.h"

#define WP_TLS_INSPECTOR_NAME     "envoy.filters.listener.tls_inspector"
#define WP_TLS_MAX_CLIENT_HELLO   16384u
#define WP_TLS_INSPECTOR_MAX_ALPN WP_LF_MAX_ALPN

extern const wp_listener_filter_ops wp_tls_inspector_ops;

/* The filter's config (TlsInspector) and its stat slots. */
typedef struct wp_tls_inspector {
    uint32_t max_client_hello_size; /* default WP_TLS_MAX_CLIENT_HELLO */
    bool close_on_parse_error;      /* close_connection_on_client_hello_parsing_errors */
    uint32_t st_too_large, st_tls_found, st_tls_not_found, st_alpn_found, st_alpn_not_found,
        st_sni_found, st_sni_not_found, st_bytes_processed;
} wp_tls_inspector;

/* What a ClientHello carries for the filter chain match. */
typedef struct wp_client_hello {
    char sni[WP_LF_SNI_MAX]; /* "" when none */
    char alpn_buf[WP_LF_ALPN_BUF];
    const char *alpn[WP_TLS_INSPECTOR_MAX_ALPN];
    size_t nalpn;
    bool has_alpn;   /* the extension was present and well formed */
    size_t consumed; /* bytes of the records that carried the ClientHello */
} wp_client_hello;

typedef enum {
    WP_CH_NEED_MORE, /* a TLS handshake so far: more bytes are needed */
    WP_CH_FOUND,     /* a ClientHello: *out filled */
    WP_CH_NOT_TLS,   /* not a TLS ClientHello */
} wp_client_hello_result;

/* Parses data[0, len) as the start of a TLS connection. */
wp_client_hello_result wp_client_hello_parse(const unsigned char *data, size_t len,
                                             wp_client_hello *out);

/* Registers the tls_inspector.* stats for every tls_inspector of c's listeners (slots into
 * their configs, the snapshot's mutable part). 0, or -1 out of memory. */
int wp_tls_inspector_register_stats(wp_stats *st, const wp_config *c);

#endif
