/*
 * codec.h - the HTTP codec between a connection's bytes and its streams' events (Envoy's
 * Http::ServerConnection / Http::ClientConnection, source/common/http/http1/codec_impl.cc):
 * the server side turns a downstream connection's bytes into request events (headers, data,
 * trailers, end, upgrade, protocol errors with Envoy's details) and response events into
 * bytes; the client side turns the upstream request's head and body into bytes. Heads come in
 * as a status or a method and path, a header list (http/header_list.h, Envoy's HeaderMap) and
 * the framing: the layers above write no wire text. HTTP/1 is codec_h1.c, which holds all of
 * HTTP/1's wire text; an HTTP/2 codec (nghttp2) is to sit behind the same calls.
 *
 * Envoy behaviour followed (HTTP/1 codec):
 *  - requests are parsed one at a time (pipelined ones wait in the buffer); the codec's
 *    protocol errors carry Envoy's details (http1.codec_error, http1.headers_too_large,
 *    http1.invalid_url ..., h1_parser.h) and the status a server answers with (400, 431, 501);
 *  - "Expect: 100-continue" is answered by the connection manager with "HTTP/1.1 100
 *    Continue" (WP_H1_100_CONTINUE) and Expect is not forwarded;
 *  - a response's framing: a body without content-length goes chunked to an HTTP/1.1
 *    client and until close to an HTTP/1.0 one; 1xx and 204 answers lose content-length;
 *    HEAD, 204, 304 and 101 answers have no body; hop-by-hop fields (connection, keep-alive,
 *    proxy-connection, transfer-encoding, upgrade unless 101) and the fields the proxy writes
 *    itself (date, server, x-envoy-upstream-service-time) are not copied from the upstream;
 *  - "connection: close" when the connection closes after the response, "connection:
 *    keep-alive" to a keep-alive HTTP/1.0 client, "connection: upgrade" with a 101;
 *  - the reason phrase of a status is Envoy's (CodeUtility::toString, h1s_reason in
 *    http/h1_server.h); unknown codes "Unknown".
 *
 * Zero copy: body bytes are never copied. Encoding a body slice fills I/O vectors that point at
 * the caller's bytes and at a small per-stream buffer for the chunk-size line; decoding hands
 * out slices of the buffer that was read into. Memory: the server codec's per-stream state is
 * the request parser (h1_parser, inside the stream); no allocation here.
 *
 * Threads: a codec state belongs to its connection's worker.
 */
#ifndef WEFT_PROXY_HTTP_CODEC_H
#define WEFT_PROXY_HTTP_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/http/header_list.h"

/* ---------- server side: decoding requests ---------- */

/* What the connection manager does with the events of one request (Envoy's RequestDecoder
 * plus the connection's dispatch loop). ctx is the caller's. Each event may end the stream or
 * close the connection: the codec then stops (should_continue says so). */
typedef struct wp_codec_server_callbacks {
    /* n bytes of the input were consumed (before the event they make is delivered; the
     * request's wire bytes, head included). */
    void (*on_consumed)(void *ctx, size_t n);
    /* The request head: m's fields point into raw[0, raw_len) (the dispatched bytes). */
    void (*on_headers)(void *ctx, const h1_message *m, const char *raw, size_t raw_len);
    /* A body slice (de-chunked), pointing into the dispatched bytes. */
    void (*on_data)(void *ctx, const char *data, size_t len);
    void (*on_trailers)(void *ctx, const h1_header *t, size_t n);
    /* The request is complete (its end was read). */
    void (*on_complete)(void *ctx);
    /* An Upgrade / CONNECT request's head was read: the following bytes are the tunnel's. */
    void (*on_upgraded)(void *ctx);
    /* A protocol error (h1_error_details, h1_error_status); the connection must close. */
    void (*on_error)(void *ctx, h1_error e);
    /* Before each parse step after the first: whether the connection manager takes more events
     * now (false: the stream waits - for an upstream write, for its response - or ended). */
    bool (*should_continue)(void *ctx);
} wp_codec_server_callbacks;

typedef enum {
    WP_CODEC_NEED_MORE, /* every byte given was consumed, or a partial section waits for more */
    WP_CODEC_PAUSED,    /* should_continue said no: the rest waits */
    WP_CODEC_UPGRADED,  /* the rest belongs to the tunnel */
    WP_CODEC_ERROR,     /* a protocol error was reported */
} wp_codec_status;

/* Envoy's ServerConnection::dispatch for one request stream over HTTP/1: parses data[0, len)
 * with p (the stream's request parser) and delivers the events until it needs more, the
 * connection manager pauses, the request upgrades or an error. Returns the status. */
wp_codec_status wp_h1_server_dispatch(h1_parser *p, const char *data, size_t len,
                                      const wp_codec_server_callbacks *cb, void *ctx);

/* ---------- client side: decoding responses ---------- */

/* The router's side of an upstream response (Envoy's ResponseDecoder): the same events, for
 * the response parser of an upstream connection (1xx heads come as headers too). */
typedef wp_codec_server_callbacks wp_codec_client_callbacks;

/* Envoy's ClientConnection::dispatch over HTTP/1: parses data[0, len) with p (the upstream
 * connection's response parser, h1_parser_set_answers set for the request) and delivers the
 * events as wp_h1_server_dispatch does. */
wp_codec_status wp_h1_client_dispatch(h1_parser *p, const char *data, size_t len,
                                      const wp_codec_client_callbacks *cb, void *ctx);

/* The connection manager appended fields (x-request-id, x-forwarded-for, ...) after the
 * n_parsed ones the parser gave it, up to n_now: the request's trailers are stored after them,
 * with the same room (the parser's field array is shared with the head). */
void wp_h1_server_reserve_fields(h1_parser *p, size_t n_now);

/* The request head's bytes were copied (the connection manager keeps them past the read
 * buffer) off bytes away from where m's slices point: moves m's method, target and fields
 * (m->headers[0, nheaders), rewritten in place) onto the copy. */
void wp_h1_rebase(h1_message *m, ptrdiff_t off);

/* RFC 9112 §3.2.2 absolute-form ("GET http://catalog/items HTTP/1.1", what HTTP_PROXY
 * clients send), as Envoy's HTTP/1 codec handles it (ServerConnectionImpl::handlePath): the
 * request is routed and forwarded in origin-form with the URI's authority as Host (the Host
 * field is ignored; one is appended to m->headers, within cap fields, when there is none).
 * Origin-form targets must start with '/' ("OPTIONS *" aside). Returns 0, or -1 for a target
 * no route can take (answered 400 http1.invalid_url). Rewrites m in place; the slices stay
 * inside the head's bytes. */
int wp_h1_server_origin_form(h1_message *m, size_t cap);

/* ---------- server side: encoding responses ---------- */

/* The interim answer to "Expect: 100-continue" (written before the request body is read). */
#define WP_H1_100_CONTINUE     "HTTP/1.1 100 Continue\r\n\r\n"
#define WP_H1_100_CONTINUE_LEN 25

/* How a response is framed on the wire (Envoy's HTTP/1 response encoder). */
typedef struct wp_h1_framing {
    bool chunked;  /* transfer-encoding: chunked is added and the body chunk-framed */
    bool close;    /* the connection closes after the response (its end marks the body's) */
    bool bodiless; /* HEAD, 204, 304, 101: no body goes out */
    bool upgrade;  /* 101: the connection becomes a tunnel */
} wp_h1_framing;

/* The framing of a response with status, the upstream's body framing, for a request that is
 * a HEAD (or not) of HTTP/1.<version_minor>. close is false here (the connection manager
 * adds its own reasons). */
wp_h1_framing wp_h1_response_framing(int status, h1_framing framing, bool head_request,
                                     int version_minor);

/* Whether an upstream response field is dropped (written by the proxy itself or hop by hop);
 * upgrade: a 101 (its upgrade field is kept). content-length of a 1xx or 204 is dropped too
 * (wp_h1_drops_content_length). */
bool wp_h1_response_field_replaced(const h1_str *name, bool upgrade);
static inline bool wp_h1_drops_content_length(int status)
{
    return status < 200 || status == 204;
}

/* A response head as the connection manager hands it over (Envoy's encodeHeaders with a
 * ResponseHeaderMap): the status, the header fields in order and the codec's framing. */
typedef struct wp_codec_response_head {
    int status;
    const wp_hdr_list *hdrs;
    /* The HTTP/1 codec writes its framing fields ("connection: upgrade", "transfer-encoding:
     * chunked") before hdrs->e[framing_at] (framing_at <= hdrs->n): the proxy's own fields
     * after the upstream's (x-envoy-upstream-service-time, date, server) follow them. */
    size_t framing_at;
    wp_h1_framing framing; /* chunked, upgrade; close: the connection closes after it */
    int version_minor;     /* the client's HTTP/1.<minor> (keep-alive is said to 1.0) */
} wp_codec_response_head;

/* Envoy's HTTP/1 ResponseEncoder::encodeHeaders: appends to b "HTTP/1.1 <status> <reason>",
 * the fields of h->hdrs as "name: value" lines with the framing fields at h->framing_at, the
 * connection field the client needs ("connection: close" when framing.close, "connection:
 * keep-alive" to an HTTP/1.0 client kept alive, none with an upgrade) and the blank line.
 * Returns 0, or -1 when the list overflowed (b unchanged) or b failed (out of memory). */
int wp_h1_encode_response_head(wf_strbuf *b, const wp_codec_response_head *h);

/* ---------- client side: encoding requests ---------- */

/* Whether a downstream request field is the HTTP/1 codec's own, not forwarded as received:
 * connection, keep-alive, proxy-connection, transfer-encoding, content-length (the codec
 * writes the framing again), expect (the connection manager answered 100-continue), te, and
 * upgrade unless the request upgrades. */
bool wp_h1_request_field_hop_by_hop(const h1_str *name, bool upgrade);

/* An upstream request head as the router hands it over (Envoy's RequestEncoder::encodeHeaders
 * with a RequestHeaderMap): method, path, the header fields in order, the request's framing. */
typedef struct wp_codec_request_head {
    h1_str method, path;
    const wp_hdr_list *hdrs;
    h1_framing framing;      /* the downstream request's body framing */
    uint64_t content_length; /* H1_BODY_LENGTH */
    bool chunked;            /* the body goes chunked (any length not known upfront) */
    bool upgrade;            /* an Upgrade / CONNECT request */
} wp_codec_request_head;

/* Appends to b "<method> <path> HTTP/1.1" (weft speaks HTTP/1.1 upstream), the fields as
 * "name: value" lines, the framing fields ("content-length: N" for a body of known length,
 * else "transfer-encoding: chunked" when chunked; "connection: upgrade" for an upgrade) and
 * the blank line. Returns 0, or -1 when the list overflowed (b unchanged) or b failed. */
int wp_h1_encode_request_head(wf_strbuf *b, const wp_codec_request_head *h);

/* What a request head encoded by wp_h1_encode_request_head reads as (Envoy's access log sees
 * the request header map the router sent): parses bytes[0, len) into *m with its fields in
 * hdrs[0, cap), pointing into bytes. Returns false when they do not read as one head (more
 * than cap fields). */
bool wp_h1_request_head_view(const char *bytes, size_t len, h1_header *hdrs, size_t cap,
                             h1_message *m);

/* ---------- both sides: chunked bodies ---------- */

#define WP_H1_CHUNK_LINE_MAX 24 /* bytes of a chunk-size line buffer */
#define WP_H1_LAST_CHUNK     "0\r\n\r\n"
#define WP_H1_LAST_CHUNK_LEN 5

/* A body slice as I/O vectors: chunked: the chunk-size line (written into line, which must
 * stay untouched until the write completes), data, "\r\n" - 3 vectors; else data alone - 1.
 * Returns the vectors filled (bufs has room for 3). len > 0. */
unsigned wp_h1_encode_data(uv_buf_t *bufs, bool chunked, char line[WP_H1_CHUNK_LINE_MAX],
                           const char *data, size_t len);

/* The chunk-size line of a chunk of len bytes ("<hex>\r\n") into line; returns its length. */
size_t wp_h1_chunk_line(char line[WP_H1_CHUNK_LINE_MAX], size_t len);

/* Frames body slices as one write (the client side's request body, a mirrored request's):
 * bufs[first, n) hold the slices (none is empty, or none at all). Chunked: they become one
 * chunk - the chunk-size line (written into line, which must stay untouched until the write
 * completes) in front of them, "\r\n" after them - and end (the body's last bytes are in
 * them) adds the last chunk; not chunked: they go as they are. bufs has room for n + 3
 * vectors. Returns the new count. */
unsigned wp_h1_encode_body(uv_buf_t *bufs, unsigned first, unsigned n, bool chunked, bool end,
                           char line[WP_H1_CHUNK_LINE_MAX]);

/* The end of a response body (after its last slice): the last chunk when chunked, into
 * bufs[0]. Returns the vectors filled (0 or 1). */
unsigned wp_h1_encode_end(uv_buf_t *bufs, bool chunked);

#endif
