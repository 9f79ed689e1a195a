/*
 * uconn_h2.h - the translations of an upstream HTTP/2 stream (upstream/pool_h2.h carries a
 * request's stream as a wp_uconn whose transport socket is the stream): the HTTP/1.1 request
 * head the router wrote becomes HTTP/2 header fields, and the response's HEADERS, DATA and
 * trailers become HTTP/1.1 response bytes the router's parser reads. Pure functions.
 *
 * Envoy behaviour followed (protocols.md §2.8; Envoy's HTTP/2 codec and
 * conn_manager_utility): Host becomes :authority; :method, :path (the target), :scheme;
 * connection-specific fields (connection, keep-alive, proxy-connection, transfer-encoding,
 * upgrade, host) are not sent; te only as "te: trailers" (what gRPC needs); names lowercased.
 * Responses: the status line with Envoy's reason phrase, the fields as received; the body is
 * framed by the upstream's content-length when it sent one, else chunked (so the response's
 * trailers survive as chunked trailers: gRPC's grpc-status), "content-length: 0" when the
 * HEADERS ended the stream (a trailers-only gRPC answer).
 *
 * Inputs are borrowed; outputs go to the caller's buffers. Errors: -1 when a buffer failed
 * (out of memory) or the input cannot be a request.
 */
#ifndef WEFT_PROXY_UPSTREAM_UCONN_H2_H
#define WEFT_PROXY_UPSTREAM_UCONN_H2_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"

/* One HTTP/2 field (pointers into the request head or into names). */
typedef struct wp_h2up_field {
    const char *name, *value;
    size_t nlen, vlen;
} wp_h2up_field;

/* The request head m (parsed from the router's HTTP/1.1 bytes) as HTTP/2 fields in
 * out[0, cap): pseudo-fields first; lowercased names are written into names (out points
 * there and into m: both must outlive out). scheme_tls: the upstream is TLS ("https" unless
 * x-forwarded-proto says otherwise). Returns the count, or -1 (no Host/target, too many
 * fields, out of memory). */
long wp_h2up_request_fields(const h1_message *m, bool scheme_tls, wp_h2up_field *out, size_t cap,
                            wf_strbuf *names);

/* The response head: status and fields f[0, n) (no pseudo-fields) as HTTP/1.1 text appended to
 * out. end_stream: the HEADERS ended the stream; no_body: the request was HEAD (the body's
 * framing is the upstream's, none follows). *chunked: the body that follows must be written
 * chunked (wp_h2up_chunk, wp_h2up_end). 0 or -1. */
int wp_h2up_response_head(int status, const h1_header *f, size_t n, bool end_stream, bool no_body,
                          wf_strbuf *out, bool *chunked);
/* A body slice in the framing chosen (chunked: a chunk). */
void wp_h2up_chunk(wf_strbuf *out, bool chunked, const char *data, size_t len);
/* The end of a chunked body: the last chunk, the trailers t[0, n), the final CRLF. */
void wp_h2up_end(wf_strbuf *out, const h1_header *t, size_t n);

#endif
