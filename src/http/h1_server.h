/*
 * h1_server.h - one small HTTP/1.x server on a libuv loop, shared by weft-proxy's admin
 * (admin.c), the status ports (status.c), weft-pilot's monitoring/debug port (pilot/debug.c)
 * and weft-app (app/app.c). Requests are parsed by http/h1_parser.h (its header names the RFC
 * 9112/9110 rules followed); this module owns sockets, buffers, keep-alive, pipelining,
 * timeouts, limits and response framing. It never blocks and allocates nothing per request in
 * the steady state: a connection borrows a block (read buffer, header array, output buffers)
 * from the server's free list while it has bytes buffered or a request in progress.
 *
 * Inputs: an address (IPv4 or IPv6 sockaddr; port 0 picks one, see h1s_port), options
 * (h1s_opts, copied) and callbacks (h1s_callbacks, copied; ud is borrowed).
 *
 * One request at a time per connection (RFC 9112 §9.3.2 pipelining: a later request is parsed
 * only once the answer of the earlier one ended, so answers go out in order). When on_request
 * runs depends on opts.body:
 *   H1S_BODY_SKIP    at the request head; the body is not read, so a request that has one is
 *                    answered and its connection then closed (the status and debug ports).
 *   H1S_BODY_BUFFER  once the whole request was read, its body in req->body (at most
 *                    opts.max_body bytes; beyond: 413 through on_error, then close).
 *   H1S_BODY_STREAM  on_headers at the head, on_body for each piece of (de-chunked) body, then
 *                    on_request at the end (weft-app). Answering in on_headers ends the
 *                    request early: the rest of its body is not read and the connection
 *                    closes after the answer.
 * In BUFFER and STREAM modes "Expect: 100-continue" is answered with "HTTP/1.1 100 Continue"
 * when the head arrives (RFC 9110 §10.1.1). Reading stops while an answer is being written
 * or awaited (back-pressure for pipelining clients).
 *
 * The answer: h1s_respond (whole), or h1s_resp_head + h1s_resp_write / h1s_resp_send* +
 * h1s_resp_end (streamed; chunked framing added here), now or later from any callback of the
 * same loop. The module writes the status line ("HTTP/1.1", or "HTTP/1.0" to a 1.0 request
 * with opts.echo_version), the framing field (Content-Length, or Transfer-Encoding: chunked;
 * none for 1xx, 204, 304 and H1S_NO_BODY), the caller's header lines as given, then
 * "Connection: close" when the connection closes after this answer or "Connection: keep-alive"
 * to an HTTP/1.0 keep-alive client; field names as written there, or in lower case with
 * opts.lower_case. A HEAD request gets the head only (its Content-Length is the GET's).
 * The connection closes after an answer when opts.keep_alive is false, when the request asked
 * (h1_message.keep_alive false), carried an upgrade, or (SKIP) a body, or when the answer
 * came before the whole request was read; with opts.linger_ms the write side is shut first and
 * input is read and dropped for up to that long (Envoy's delayed_close_timeout: the peer sees
 * the answer, not a reset), else the socket closes once the answer is written.
 *
 * Errors: a malformed request (h1_error_status: 400, 431, 501), a head larger than
 * opts.max_head ("request too large", 431) and a body beyond max_body ("request body too
 * large", 413) go to on_error, which answers (any status, text) before the connection closes;
 * without on_error the answer is "<details>\n" (h1_error_details) with the header lines
 * opts.error_head (default: a text/plain Content-Type). Connections
 * with no request in progress for opts.idle_timeout_ms since they were accepted or their last
 * answer ended are closed (a partly received head does not count as in progress; reading does
 * not restart the clock; Envoy's idle_timeout meaning). opts.max_connections caps open
 * connections: H1S_LIMIT_REFUSE accepts and closes the new one, H1S_LIMIT_CLOSE_OLDEST closes
 * the oldest one that has not started a request.
 *
 * Ownership and lifetime: h1s_conn is owned by the server. It stays valid from the request
 * callbacks until the handler ended its answer or, when the connection closed first, until
 * on_abort(conn) returned; after either the handler must not use it. Memory is only freed
 * from libuv close callbacks, i.e. after the callback in progress returned: closing a
 * connection or the whole server inside any callback is safe, and every function here may be
 * called on a closing connection (it does nothing and returns -1). The strings of the request
 * view point into the connection's buffer: valid until the answer ended (SKIP, BUFFER), or
 * during on_headers only (STREAM). h1s_close stops the listener and closes every connection;
 * the server frees itself once libuv closed every handle and then calls on_closed.
 *
 * Connection takeover (weft-app's WebSocket): after a 101 answer h1s_takeover makes the
 * connection raw: every received byte goes to on_raw, which returns how many it used (the
 * rest is offered again with more input or after a write completed); h1s_raw_write /
 * h1s_raw_send write, h1s_conn_close ends it. No idle timeout applies to raw connections.
 *
 * HTTPS: with opts.tls every connection is a TLS session (tls/tls.h, the engine weft-proxy
 * and weft-pilot's gRPC port use): ciphertext read is fed to it and the plaintext parsed as
 * above; answers are encrypted as they are queued. A failed handshake closes the connection.
 * weft-pilot's admission webhook port (pilot/webhook.h) serves over it.
 *
 * Thread-safety: none; everything runs on the loop given to h1s_listen.
 */
#ifndef WEFT_HTTP_H1_SERVER_H
#define WEFT_HTTP_H1_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"

#define H1S_CHUNKED    (-1) /* h1s_resp_head: Transfer-Encoding: chunked */
#define H1S_NO_BODY    (-2) /* h1s_resp_head: neither Content-Length nor Transfer-Encoding */
#define H1S_MAX_PIECES 4    /* pieces of one h1s_resp_sendv call */

typedef struct h1s_server h1s_server;
typedef struct h1s_conn h1s_conn;

typedef enum { H1S_BODY_SKIP, H1S_BODY_BUFFER, H1S_BODY_STREAM } h1s_body_mode;
typedef enum { H1S_LIMIT_REFUSE, H1S_LIMIT_CLOSE_OLDEST } h1s_limit_policy;

/* The request being answered. */
typedef struct {
    const h1_message *msg; /* the parsed head (framing, keep_alive, upgrade, ...) */
    h1_str method, target; /* as received */
    h1_str path, query;    /* target split at the first '?' (query without it, may be empty) */
    int version_minor;     /* 0 or 1 */
    bool head;             /* a HEAD request: answers carry no body */
    const h1_header *headers;
    size_t nheaders;
    const char *body; /* BUFFER: the whole body (NUL-terminated), else NULL */
    size_t body_len;
} h1s_request;

typedef struct {
    /* Required: the request is ready for its answer (see opts.body for when). */
    void (*on_request)(void *ud, h1s_conn *c, const h1s_request *req);
    /* STREAM: the head arrived (on_request comes once the body was read). */
    void (*on_headers)(void *ud, h1s_conn *c, const h1s_request *req);
    /* STREAM: body bytes (de-chunked); data valid during the call. */
    void (*on_body)(void *ud, h1s_conn *c, const char *data, size_t len);
    /* Optional: answers a request that cannot be served (see the top); must answer at once
     * (h1s_respond); the connection closes afterwards. req->msg may be incomplete. */
    void (*on_error)(void *ud, h1s_conn *c, int status, const char *details);
    /* Optional: the connection closed while the handler still owed (or was streaming) the
     * answer, or while raw: stop everything done for c; c is gone after this returns. */
    void (*on_abort)(void *ud, h1s_conn *c);
    /* Raw connections (h1s_takeover): bytes received, data[0..len) writable in place;
     * returns how many were used. */
    size_t (*on_raw)(void *ud, h1s_conn *c, char *data, size_t len);
    void *ud;
} h1s_callbacks;

typedef struct {
    h1s_body_mode body;
    size_t max_body;          /* BUFFER: 0 = 1 MiB */
    size_t max_head;          /* request head bytes = read buffer; 0 = 60 KiB, min 256 */
    size_t max_headers;       /* header fields; 0 = 100 (Envoy's max_headers_count) */
    size_t max_connections;   /* 0 = no limit */
    h1s_limit_policy limit;   /* what happens beyond max_connections */
    uint64_t idle_timeout_ms; /* 0 = never */
    uint64_t linger_ms;       /* 0 = close once the last answer is written */
    bool keep_alive;          /* false: every answer closes its connection */
    bool lower_case;          /* the module's field names in lower case */
    bool echo_version;        /* "HTTP/1.0" status line to HTTP/1.0 requests */
    size_t conn_data;         /* bytes of per-connection user data (h1s_data), zeroed */
    const char *error_head;   /* header lines of the default error answers (see above) */
    int backlog;              /* 0 = 128 */
    /* HTTPS (tls/tls.h): the server context connections use (the server takes a reference;
     * h1s_set_tls replaces it for connections accepted later); NULL = plain HTTP */
    struct wf_tls_ctx *tls;
    void (*on_closed)(void *arg); /* optional: h1s_close finished, the server is freed */
    void *closed_arg;
} h1s_opts;

/* Parses "A.B.C.D:PORT" or "[IPv6]:PORT" (numeric address, port 0..65535) into *out.
 * Returns 0, or -1 when the text is not such an address. */
int h1s_parse_address(const char *text, struct sockaddr_storage *out);
/* "IP:PORT" / "[IPv6]:PORT" of a sockaddr into buf; returns 0 or a libuv error. */
int h1s_format_address(const struct sockaddr *sa, char *buf, size_t cap);

/* Binds sa and listens on loop. Returns the server, or NULL with *uv_err set (a libuv error:
 * UV_EADDRINUSE, UV_EACCES, UV_ENOMEM, ...); nothing is left open then. */
h1s_server *h1s_listen(uv_loop_t *loop, const struct sockaddr *sa, const h1s_opts *opts,
                       const h1s_callbacks *cb, int *uv_err);
/* The bound port (the picked one when sa said 0) and address ("IP:PORT"). */
int h1s_port(const h1s_server *s);
const char *h1s_bound(const h1s_server *s);
/* HTTPS: the context of connections accepted from now on (a rotated certificate); open ones
 * keep theirs. The server takes a reference; NULL ctx or s is ignored. */
void h1s_set_tls(h1s_server *s, struct wf_tls_ctx *ctx);
/* Open connections (closing ones not counted). */
size_t h1s_connections(const h1s_server *s);
/* Stops listening and closes every connection (answers being written are cut; on_abort runs
 * for open requests). The server frees itself once the loop ran the close callbacks, then
 * calls opts.on_closed. s must not be used afterwards. NULL is ignored. */
void h1s_close(h1s_server *s);

/* ---- per connection ---- */

/* The connection's user data (opts.conn_data bytes, zeroed at accept). */
void *h1s_data(h1s_conn *c);
/* The peer's address; returns 0 or a libuv error. */
int h1s_peer(h1s_conn *c, struct sockaddr_storage *sa);
/* Closes the connection now, without an answer to a request in progress (graceful: with
 * opts.linger_ms queued output is written first, then the write side shut). */
void h1s_conn_close(h1s_conn *c);
/* Like h1s_conn_close, but once the queued output is written the connection is reset (TCP
 * RST: SO_LINGER 0, uv_tcp_close_reset) instead of closed: an upstream that fails in the
 * middle of an answer. */
void h1s_conn_reset(h1s_conn *c);
/* Runs fn(c, arg) after ms on the connection's timer (one at a time; only while a request is
 * in progress: e.g. a delayed answer). Returns 0 or -1. */
int h1s_defer(h1s_conn *c, uint64_t ms, void (*fn)(h1s_conn *c, void *arg), void *arg);

/* ---- the answer (all return 0, or -1 when the connection is closing) ---- */

/* The whole answer: status, reason (NULL = h1s_reason), header lines (each ending in CRLF,
 * or NULL), body (copied; Content-Length len). */
int h1s_respond(h1s_conn *c, int status, const char *reason, const char *headers, const char *body,
                size_t len);
/* Status line and head of a streamed answer; framing: a Content-Length, H1S_CHUNKED or
 * H1S_NO_BODY. The caller writes exactly the announced bytes. */
int h1s_resp_head(h1s_conn *c, int status, const char *reason, const char *headers,
                  int64_t framing);
/* Body bytes, copied (one chunk when chunked). */
int h1s_resp_write(h1s_conn *c, const char *data, size_t len);
/* Body bytes not copied: pieces (at most H1S_MAX_PIECES, one chunk each when chunked) must
 * stay valid until written. Returns 0 when everything went out at once, 1 when a write is
 * pending (sent(c, arg) then runs once it completed; call no send/end before), -1 closing. */
int h1s_resp_sendv(h1s_conn *c, const uv_buf_t *pieces, unsigned n,
                   void (*sent)(h1s_conn *c, void *arg), void *arg);
/* Ends the answer (the last chunk when chunked). */
int h1s_resp_end(h1s_conn *c);
/* Runs fn(arg) once the answer is completely written (not when the connection fails first);
 * fn may close the server. */
void h1s_after_answer(h1s_conn *c, void (*fn)(void *arg), void *arg);
/* Force "Connection: close" on the answer being built (call before its head). */
void h1s_close_after(h1s_conn *c);
/* Envoy's reason phrase of status (CodeUtility::toString; "Unknown" when not named); the proxy's
 * HTTP/1 codec uses the same table. */
const char *h1s_reason(int status);

/* ---- raw connections ---- */

/* After the 101 answer: the connection's bytes go to on_raw from now on. */
int h1s_takeover(h1s_conn *c);
/* Bytes to write, copied. */
int h1s_raw_write(h1s_conn *c, const char *data, size_t len);
/* Flushes what was written plus data (not copied, valid until written). Returns 0 when all
 * went out at once, 1 pending (on_raw is offered the unused input again once written), -1. */
int h1s_raw_send(h1s_conn *c, const char *data, size_t len);

#endif
