/*
 * xfcc.h - x-forwarded-client-cert (XFCC) of the HTTP connection manager, as Envoy's
 * ConnectionManagerUtility::mutateXfccRequestHeader (source/common/http/
 * conn_manager_utility.cc) and the HCM's forward_client_cert_details /
 * set_current_client_cert_details (Envoy docs: "x-forwarded-client-cert" in the HTTP header
 * manipulation page):
 *
 *  - ALWAYS_FORWARD_ONLY: the header is forwarded as it came, always;
 *  - SANITIZE (the default), or a connection that is not mutual TLS (no TLS, or no client
 *    certificate): the header is removed;
 *  - FORWARD_ONLY: forwarded as it came;
 *  - APPEND_FORWARD: this connection's element is appended to the header (after a ","; the
 *    header is created when absent); SANITIZE_SET: the header becomes this element.
 *
 * The element: "By=<URI SAN>" for each URI SAN of our certificate, "Hash=<hex SHA-256 of the
 * client certificate's DER>", then, as set_current_client_cert_details asks, in Envoy's
 * order: Cert="<URL-encoded PEM>", Chain="<URL-encoded PEM chain>", Subject="<RFC 2253>"
 * (present even when empty), "URI=<URI SAN>" for each URI SAN of the client certificate
 * ("URI=" when it has none), "DNS=<SAN>" for each DNS SAN; joined by ";". Repeated XFCC fields
 * are one header joined by "," (Envoy keeps it as an inline header).
 *
 * Cost: the element depends only on the connection and the HCM, so the connection manager
 * builds it once per connection (the first request that needs it) and keeps it; a request
 * points at it, or appends it to a header in the stream's reused buffer (no allocation once
 * warm).
 */
#ifndef WEFT_PROXY_XFCC_H
#define WEFT_PROXY_XFCC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/net/transport_socket.h"

/* Writes the XFCC element of the mutual TLS connection sock (its facts ssl) with the details
 * bits of set_current_client_cert_details (WP_CCD_*) into out (reset first). 0, or -1 when
 * out of memory. */
int wp_xfcc_element(const wp_tsock *sock, const wp_tsock_ssl *ssl, unsigned details,
                    wf_strbuf *out);

/* Applies mode to the x-forwarded-client-cert fields of hdrs[0..*n) (room for max fields):
 * mtls says whether the connection is mutual TLS; element[0..elen) is its element (built with
 * wp_xfcc_element; only read for APPEND_FORWARD and SANITIZE_SET). The header keeps its first
 * field's place (appended at the end when absent and *n < max); later repeats are removed.
 * buf (the stream's, reset here when used) holds an appended value. Returns 0, or -1 when out
 * of memory (buf failed; hdrs untouched). */
int wp_xfcc_mutate(wp_fcc_mode mode, bool mtls, h1_header *hdrs, size_t *n, size_t max,
                   const char *element, size_t elen, wf_strbuf *buf);

#endif
