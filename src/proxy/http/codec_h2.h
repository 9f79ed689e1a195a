/*
 * codec_h2.h - the HTTP/2 server codec (nghttp2) of a downstream connection, next to the
 * HTTP/1 one (http/codec.h): Envoy's Http2::ServerConnectionImpl (source/common/http/http2/
 * codec_impl.cc) as far as weft goes. It turns a connection's bytes into the events of
 * several concurrent streams, each request head translated to the shape the HTTP/1 codec
 * gives (method, origin-form target, HTTP/1.1 fields), and responses (status, fields, DATA,
 * trailers) into frames. The caller owns the socket: it feeds read bytes (wp_h2_server_recv)
 * and writes what wp_h2_server_flush appends.
 *
 * Envoy behaviour followed (protocols.md §2.1, §2.2, §2.5, §2.8):
 *  - the SETTINGS sent first: max_concurrent_streams, initial_stream_window_size,
 *    hpack_table_size of http2_protocol_options, and the connection window raised to
 *    initial_connection_window_size with a WINDOW_UPDATE;
 *  - request translation (HTTP/2 -> HTTP/1.1, wp_h2_request_head): :authority becomes Host
 *    (an explicit host field is dropped when :authority is there, as Envoy's header map
 *    keeps one :authority), :path is the target, :scheme is kept for x-forwarded-proto,
 *    several cookie fields are joined with "; "; connection-specific fields and a te other
 *    than "trailers" are refused by nghttp2's HTTP messaging checks (a stream error with
 *    details http2.invalid.header.field / http2.violation.of.messaging.rule, stat
 *    rx_messaging_error);
 *  - a request head (or trailers) over max_request_headers_kb or max_headers_count (both
 *    counting the pseudo-fields, as Envoy's header map does) resets the stream (details
 *    http2.too_many_headers, stat header_overflow);
 *  - a peer's RST_STREAM closes the stream with details http2.remote_reset (http2.remote_refuse
 *    for REFUSED_STREAM); a protocol error of the connection sends GOAWAY PROTOCOL_ERROR and
 *    the caller closes after flushing (details http2.unknown.nghttp2.error unless a more
 *    precise one is known);
 *  - response fields: names lowercased, the connection-specific ones (connection, keep-alive,
 *    proxy-connection, transfer-encoding, upgrade) dropped;
 *  - a response that ends (END_STREAM sent) while the request has not ended is followed by
 *    RST_STREAM NO_ERROR (Envoy's ConnectionManagerImpl::doEndStream resets such a stream,
 *    LocalReset being NO_ERROR in its HTTP/2 codec; RFC 9113 §8.1), so the client stops
 *    sending a body nobody reads (counted in tx_reset);
 *  - drain: wp_h2_server_goaway(graceful) sends the shutdown notice (last stream id
 *    2^31-1), then the final GOAWAY with the last stream id processed.
 *
 * Flow control: nghttp2's automatic window updates are off. Received DATA is handed out as
 * slices of the caller's read bytes; the stream's window opens again only when the caller says
 * it consumed them (wp_h2_server_consume, after the upstream write completed), so a slow
 * upstream stops the client. Response DATA is taken one slice at a time (wp_h2_server_data,
 * framed as the peer's window allows: each DATA frame's header and bytes are appended to
 * wp_h2_server_flush's output straight from the slice, nghttp2's NGHTTP2_DATA_FLAG_NO_COPY);
 * on_data_sent says when the slice has been framed, so a slow client stops the upstream read.
 *
 * Memory: one state per stream (its header bytes grow in a strbuf, capped by
 * max_request_headers_kb; its field arrays grow with the fields, up to WP_H2_MAX_FIELDS); an
 * ended stream's state is kept for the next stream of the connection (at most 16, none
 * holding more than 8 KiB of header bytes), so the steady state allocates no stream state;
 * the nghttp2 session. Errors: functions return 0 or -1 (out of memory,
 * or the stream or session is gone). Threads: a codec belongs to its connection's worker.
 */
#ifndef WEFT_PROXY_HTTP_CODEC_H2_H
#define WEFT_PROXY_HTTP_CODEC_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/http/header_list.h"

/* The client connection preface's fixed bytes (RFC 9113 §3.4). */
#define WP_H2_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define WP_H2_PREFACE_LEN 24u

/* codec_type AUTO without ALPN (Envoy's prior-knowledge detection): 1 when data[0, len) starts
 * with the preface, 0 when it is a prefix of it (more bytes needed), -1 when it is not HTTP/2. */
int wp_h2_preface_check(const char *data, size_t len);

/* Envoy's HTTP/2 codec stats (Http2::CodecStats, rooted at "http2.") the codec counts:
 * RST_STREAM received / sent, heads over the limits, HTTP messaging errors, header blocks for
 * no stream, GOAWAYs sent, request trailers received. */
typedef struct wp_h2_stats {
    uint64_t rx_reset, tx_reset, header_overflow, rx_messaging_error, headers_cb_no_stream,
        goaway_sent, trailers;
} wp_h2_stats;

/* A request head's limit (the HCM's max_request_headers_kb and max_headers_count). */
typedef struct wp_h2_limits {
    uint32_t max_request_headers_kb;
    uint32_t max_headers_count;
} wp_h2_limits;

/* ---------- request translation (HTTP/2 -> HTTP/1.1) ---------- */

#define WP_H2_MAX_FIELDS 128u /* fields of one request head kept (cookies joined first) */

/* Translates a request's header block in[0, n) (pseudo-fields first, as nghttp2 has checked
 * them) into m: method, target (:path, "*" or the authority for CONNECT), version 1.1, fields
 * in out[0, cap) with Host from :authority first, cookies joined with "; " into cookie (the
 * joined value points there: cookie must outlive m), framing H1_BODY_NONE / H1_BODY_CHUNKED
 * (end_stream: no body) or H1_BODY_LENGTH with content-length. *scheme gets :scheme. Returns 0,
 * or -1 with *details (Envoy's) when the head cannot be a request (no :method, no :path,
 * more fields than cap, a content-length that is not a number, out of memory). */
int wp_h2_request_head(const h1_header *in, size_t n, bool end_stream, h1_message *m,
                       h1_header *out, size_t cap, wf_strbuf *cookie, h1_str *scheme,
                       const char **details);

/* ---------- the server codec ---------- */

typedef struct wp_h2_server wp_h2_server;

/* Events of the streams (Envoy's RequestDecoder per stream). ctx is the connection's, sctx the
 * one on_request returned for the stream. */
typedef struct wp_h2_server_callbacks {
    /* A new stream's request head (m's bytes live until the stream closes). Returns the
     * stream's context, or NULL to reset it with REFUSED_STREAM. */
    void *(*on_request)(void *ctx, int32_t id, const h1_message *m, h1_str scheme);
    /* A body slice (inside the bytes given to wp_h2_server_recv). */
    void (*on_data)(void *sctx, const char *data, size_t len);
    void (*on_trailers)(void *sctx, const h1_header *t, size_t n);
    /* The request's END_STREAM was read. */
    void (*on_complete)(void *sctx);
    /* The response slice given to wp_h2_server_data was framed: the next one may come. */
    void (*on_data_sent)(void *sctx);
    /* The stream closed: error_code 0 when both sides ended, else the RST_STREAM's code;
     * details (Envoy's, static) NULL for a normal close. The stream is gone after this. */
    void (*on_close)(void *sctx, uint32_t error_code, const char *details);
} wp_h2_server_callbacks;

/* A server codec with opts's SETTINGS and lim's request head limits, counting into st
 * (the caller's, may be NULL); the SETTINGS are queued. NULL when out of memory. */
wp_h2_server *wp_h2_server_new(const wp_h2_options *opts, const wp_h2_limits *lim,
                               const wp_h2_server_callbacks *cb, void *ctx, wp_h2_stats *st);
void wp_h2_server_free(wp_h2_server *h);

/* Reads data[0, len) (events are delivered from inside). Returns 0, or -1 on a connection
 * error: a GOAWAY is queued (flush it, then close); *details says which (Envoy's). */
int wp_h2_server_recv(wp_h2_server *h, const char *data, size_t len, const char **details);

/* Appends the frames waiting to go out to out. Returns the bytes appended, -1 on error. */
long wp_h2_server_flush(wp_h2_server *h, wf_strbuf *out);

/* Whether the connection is finished (both sides closed after GOAWAY, or an error): the
 * caller closes it once flushed. */
bool wp_h2_server_done(const wp_h2_server *h);

/* n bytes of stream id's body (given by on_data) were consumed: its window and the
 * connection's open again by n. */
void wp_h2_server_consume(wp_h2_server *h, int32_t id, size_t n);

/* Response of stream id: the status and fields of l (lowercased; connection-specific ones
 * dropped); end_stream: no body follows. */
int wp_h2_server_respond(wp_h2_server *h, int32_t id, int status, const wp_hdr_list *l,
                         bool end_stream);
/* A response body slice (the caller keeps data[0, len) until on_data_sent); end: the last
 * one (END_STREAM unless trailers follow). len may be 0 with end. */
int wp_h2_server_data(wp_h2_server *h, int32_t id, const char *data, size_t len, bool end);
/* Response trailers: they end the body (the slice being framed, if any, is the last; the
 * last DATA goes without END_STREAM and the trailers HEADERS carry it). Copied. */
int wp_h2_server_trailers(wp_h2_server *h, int32_t id, const wp_hdr_list *l);
/* Resets stream id with error code (RST_STREAM; counted in tx_reset). */
int wp_h2_server_reset(wp_h2_server *h, int32_t id, uint32_t code);

/* Drain: graceful sends the shutdown notice (new streams still accepted), otherwise the final
 * GOAWAY (NO_ERROR, last stream id processed): streams above it are not processed, the ones
 * in flight finish, then wp_h2_server_done. */
int wp_h2_server_goaway(wp_h2_server *h, bool graceful);

/* Open streams. */
size_t wp_h2_server_streams(const wp_h2_server *h);

#endif
