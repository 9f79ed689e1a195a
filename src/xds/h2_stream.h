/*
 * h2_stream.h - gRPC bidirectional streaming calls over HTTP/2 (nghttp2 on a libuv TCP
 * handle), server and client side. Payloads are opaque bytes (weft sends JSON text).
 *
 * Spec behaviour followed ("gRPC over HTTP2", grpc/grpc doc/PROTOCOL-HTTP2.md):
 *  - Request headers: :method POST, :scheme http, :path /<service>/<method>, :authority,
 *    content-type application/grpc, te: trailers. The server answers :status 200 and
 *    content-type application/grpc; a content-type that does not start with application/grpc
 *    gets HTTP 415; a :path the server does not serve gets a Trailers-Only response with
 *    grpc-status 12 (UNIMPLEMENTED). A server serves one method path or a list of them (as
 *    a gRPC server hosts several methods on one port: istiod serves StreamAggregatedResources
 *    and DeltaAggregatedResources on 15010); wf_h2_call_path says which one a call opened.
 *  - Messages are Length-Prefixed-Messages (grpc_frame.h) in DATA frames; one message may
 *    span many frames and flow-control windows.
 *  - The server ends a call with trailers grpc-status and (percent-encoded) grpc-message,
 *    then resets the stream with NO_ERROR if the client has not half-closed (as grpc servers
 *    do). A client that receives trailers resets its own side likewise.
 *  - A response without grpc-status maps to INTERNAL; a non-200 :status maps as the gRPC
 *    "HTTP to gRPC status code mapping" doc says (404 -> UNIMPLEMENTED, 503 -> UNAVAILABLE...).
 *  - Keepalive (gRPC doc/keepalive.md): every ping_interval_ms each side sends an HTTP/2
 *    PING; no PING ACK within ping_timeout_ms closes the connection and every call on it
 *    ends with WF_H2_END_KEEPALIVE. Both sides run it, so a half-open TCP connection is found
 *    by whichever side is still alive.
 *
 * Flow control and memory bounds (nghttp2 enforces HTTP/2 windows): each side advertises
 * receive windows of 1 MiB (SETTINGS_INITIAL_WINDOW_SIZE for streams, a WINDOW_UPDATE for the
 * connection), as gRPC implementations do, so that a ~1 MB xDS response is not held up by
 * WINDOW_UPDATE round trips; it costs no memory, since received bytes are consumed at once:
 *  - inbound, per call: at most one partial message, <= max_msg bytes. Window updates are
 *    sent as bytes are consumed, and bytes are consumed as soon as they arrive.
 *  - outbound, per call: queued messages <= max_send_queue bytes (prefixes included);
 *    wf_h2_call_send returns WF_H2_E_BUSY beyond that (WF_H2_E_INVAL for a message that
 *    alone exceeds it: it could never be queued). Data leaves the queue only as the
 *    peer's windows allow. Queued bytes are not copied again on their way to the socket:
 *    DATA frames are written with NGHTTP2_DATA_FLAG_NO_COPY, their payload referenced in place
 *    in the write (writev) until libuv has written it. wf_h2_call_sendv queues ranges of
 *    shared, reference-counted buffers (wf_h2_buf) without copying them at all, so one
 *    serialized response can be sent on many calls while it exists once in memory.
 *  - per connection: bytes handed to libuv but not yet written stay under about 256 KiB plus
 *    one HTTP/2 frame (DATA payloads among them are references, not copies); the 64 KiB read
 * buffer; at most max_streams concurrent calls (SETTINGS_MAX_CONCURRENT_STREAMS). So a connection
 * holds at most about max_streams * (max_msg + max_send_queue) + 320 KiB.
 *
 * Ownership and lifetime: the module owns servers, connections and calls. A call is valid
 * from its creation (wf_h2_call_open, or on_call on the server) until on_end returns; a
 * connection until on_conn_closed returns. Memory is released in libuv close callbacks, so
 * after closing, run the loop until it has no handles (uv_run(loop, UV_RUN_DEFAULT) returns)
 * before uv_loop_close. No global mutable state: everything hangs off wf_h2_server /
 * wf_h2_conn. Single-threaded: use one loop's thread only. Any function here may be called
 * from inside any handler, and none of them calls a handler before returning: output,
 * closes and the resulting on_end/on_conn_closed run from the loop (next iteration).
 */
#ifndef WF_XDS_H2_STREAM_H
#define WF_XDS_H2_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "tls/tls.h"

#define WF_XDS_ADS_PATH                                                                            \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
#define WF_XDS_DELTA_PATH                                                                          \
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"

typedef struct wf_h2_server wf_h2_server;
typedef struct wf_h2_conn wf_h2_conn;
typedef struct wf_h2_call wf_h2_call;

/* API errors (negative). */
enum {
    WF_H2_E_NOMEM = -1,
    WF_H2_E_BUSY = -2,   /* send queue full: retry after the peer reads */
    WF_H2_E_CLOSED = -3, /* call or connection already ending */
    WF_H2_E_INVAL = -4,  /* bad argument (oversize message, wrong side, bad address) */
    WF_H2_E_IO = -5,     /* libuv or nghttp2 refused; see the log of the caller */
};

/* Why a call or connection ended. */
typedef enum wf_h2_end_reason {
    WF_H2_END_STATUS = 0,  /* ended with a grpc-status: received (client) or sent (server) */
    WF_H2_END_CANCELLED,   /* cancelled locally (wf_h2_call_cancel) */
    WF_H2_END_RESET,       /* peer reset the stream (h2_error says why) */
    WF_H2_END_CONN_LOST,   /* TCP EOF, error or connect failure */
    WF_H2_END_KEEPALIVE,   /* no PING ACK within ping_timeout_ms */
    WF_H2_END_PROTOCOL,    /* bad message framing, oversize message, HTTP/2 error */
    WF_H2_END_LOCAL_CLOSE, /* wf_h2_conn_close / wf_h2_server_close */
} wf_h2_end_reason;

typedef struct wf_h2_end {
    wf_h2_end_reason reason;
    int grpc_status;          /* gRPC code, or -1 when none applies */
    const char *grpc_message; /* decoded text, never NULL ("" if none); valid during on_end */
    uint32_t h2_error;        /* RST_STREAM error code for WF_H2_END_RESET, else 0 */
} wf_h2_end;

typedef struct wf_h2_handlers {
    /* Server only: a new call passed header checks. May send at once. */
    void (*on_call)(wf_h2_call *call, void *ud);
    /* A whole message; msg valid only during the call (len may be 0). */
    void (*on_message)(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud);
    /* The call is over; it is freed when this returns. Called exactly once per call. */
    void (*on_end)(wf_h2_call *call, const wf_h2_end *end, void *ud);
    /* The connection is over (after on_end of each of its calls); freed after return. */
    void (*on_conn_closed)(wf_h2_conn *conn, wf_h2_end_reason reason, void *ud);
    void *ud;
} wf_h2_handlers;

typedef struct wf_h2_opts {
    size_t max_msg;              /* bytes per received message; 0 = 4 MiB */
    size_t max_send_queue;       /* bytes queued per call; 0 = 2 * max_msg + 5 */
    uint32_t max_streams;        /* concurrent calls per connection; 0 = 100 */
    uint64_t ping_interval_ms;   /* 0 = no keepalive pings */
    uint64_t ping_timeout_ms;    /* 0 = 20000 */
    const char *path;            /* client: requested :path; server: served :path unless paths
                                  * is set; NULL = WF_XDS_ADS_PATH */
    const char *const *paths;    /* server: the :paths served, NULL-terminated (at most
                                  * WF_H2_MAX_PATHS); NULL = just path. Ignored by clients. */
    const char *const *metadata; /* client: custom metadata sent with every call, as name,
                                  * value, name, value, ..., NULL (at most WF_H2_MAX_METADATA
                                  * pairs; lower-case names, e.g. "authorization"); the strings
                                  * must outlive the connection. Ignored by servers. */
    wf_tls_ctx *tls;             /* client: TLS to the server with this client context (src/tls;
                                  * borrowed, must outlive the connection); NULL = plaintext.
                                  * Servers: wf_h2_server_set_tls. */
    const char *tls_sni;         /* client: SNI sent with tls, NULL = none */
} wf_h2_opts;

#define WF_H2_MAX_METADATA 8

#define WF_H2_MAX_PATHS 8

/* Server: listens on ip:port (port 0 picks a free one). opts and handlers are copied (path,
 * paths and the strings they point to must outlive the server). Returns 0 and *out, or
 * WF_H2_E_* (WF_H2_E_INVAL: an empty paths list or more than WF_H2_MAX_PATHS). */
int wf_h2_server_start(uv_loop_t *loop, const char *ip, int port, const wf_h2_opts *opts,
                       const wf_h2_handlers *h, wf_h2_server **out);
/* The bound port (host order). */
int wf_h2_server_port(const wf_h2_server *s);

/* TLS for the connections the server accepts from now on (istiod's secure gRPC port): ctx is a
 * server context of src/tls (the server takes a reference; NULL = plaintext again).
 * Connections already open keep what they started with. */
void wf_h2_server_set_tls(wf_h2_server *s, wf_tls_ctx *ctx);
/* Bytes queued on all calls of the server's connections (the sum of wf_h2_call_pending). */
size_t wf_h2_server_pending(const wf_h2_server *s);
/* Stops listening and closes every connection (calls end with WF_H2_END_LOCAL_CLOSE).
 * The server is freed once all its handles have closed. */
void wf_h2_server_close(wf_h2_server *s);

/* Client: connects to ip:port. Calls may be opened at once; they are sent when connected.
 * A connect failure ends them with WF_H2_END_CONN_LOST. Returns 0 and *out, or WF_H2_E_*. */
int wf_h2_client_connect(uv_loop_t *loop, const char *ip, int port, const wf_h2_opts *opts,
                         const wf_h2_handlers *h, wf_h2_conn **out);
/* Unix domain sockets (Istio's xds-grpc `pipe`, ./etc/istio/proxy/XDS): as
 * wf_h2_client_connect / wf_h2_server_start, on the socket at path (shorter than
 * sizeof(sun_path); :authority "localhost", as gRPC's unix: targets). A connect failure (no
 * socket, refused) ends the calls with WF_H2_END_CONN_LOST. The server binds path, which must
 * not exist (it is not removed on close); wf_h2_server_port returns 0. */
int wf_h2_client_connect_pipe(uv_loop_t *loop, const char *path, const wf_h2_opts *opts,
                              const wf_h2_handlers *h, wf_h2_conn **out);
int wf_h2_server_start_pipe(uv_loop_t *loop, const char *path, const wf_h2_opts *opts,
                            const wf_h2_handlers *h, wf_h2_server **out);

/* Client: opens a call on opts.path. Returns 0 and *out, or WF_H2_E_*. */
int wf_h2_call_open(wf_h2_conn *c, wf_h2_call **out);

/* Closes the connection on the next loop iteration: pending output is dropped, calls end with
 * WF_H2_END_LOCAL_CLOSE, then on_conn_closed. Idempotent. */
void wf_h2_conn_close(wf_h2_conn *c);
/* Stops (pause=true) or resumes reading the socket. For tests that simulate a peer that
 * went silent, and for callers applying backpressure. */
void wf_h2_conn_pause_reads(wf_h2_conn *c, bool pause);

/* Queues one message (copied). Returns 0, WF_H2_E_BUSY (queue would exceed
 * max_send_queue), WF_H2_E_CLOSED (call ending or half-closed), WF_H2_E_NOMEM. */
int wf_h2_call_send(wf_h2_call *call, const void *msg, size_t len);

/* A reference-counted, immutable byte buffer that many calls can send from without copying.
 * A buffer is filled by its creator before it is first queued, and never changed afterwards.
 * Each holder owns one reference; the last wf_h2_buf_unref frees it. Single-threaded, like
 * the rest of this module. */
typedef struct wf_h2_buf wf_h2_buf;
/* A new buffer of len bytes (one reference); *data (if data is non-NULL) points at the bytes
 * to fill. NULL when out of memory. */
wf_h2_buf *wf_h2_buf_new(size_t len, uint8_t **data);
/* Wraps len bytes at data, a malloc'ed block that the buffer takes over (freed with free()
 * with the last reference; also when this fails). NULL when out of memory. */
wf_h2_buf *wf_h2_buf_take(void *data, size_t len);
/* One more reference (b may be NULL); returns b. */
wf_h2_buf *wf_h2_buf_ref(wf_h2_buf *b);
/* Drops one reference (NULL is fine). */
void wf_h2_buf_unref(wf_h2_buf *b);
const uint8_t *wf_h2_buf_data(const wf_h2_buf *b);
size_t wf_h2_buf_len(const wf_h2_buf *b); /* bytes */

/* One piece of a message: buf's bytes [off, off + len), referenced (the call takes its own
 * reference; the caller keeps its own), or, with buf NULL, len bytes at data, copied. */
typedef struct wf_h2_piece {
    wf_h2_buf *buf;
    const void *data;
    size_t off, len;
} wf_h2_piece;

/* Queues one message, the concatenation of n pieces (the 5-byte gRPC prefix is added). Copied
 * pieces and the prefix go into one new small buffer; referenced pieces are not copied.
 * Returns as wf_h2_call_send, and WF_H2_E_INVAL for a range outside its buffer. */
int wf_h2_call_sendv(wf_h2_call *call, const wf_h2_piece *pieces, size_t n);
/* Bytes queued but not yet handed to HTTP/2. */
size_t wf_h2_call_pending(const wf_h2_call *call);
/* Server: ends the call after the queued messages with grpc-status/grpc-message trailers
 * (message may be NULL). Client: half-closes (END_STREAM after the queued messages).
 * Returns 0, WF_H2_E_CLOSED or WF_H2_E_NOMEM. */
int wf_h2_call_finish(wf_h2_call *call, int grpc_status, const char *message);
/* Resets the stream (RST_STREAM CANCEL); on_end follows with WF_H2_END_CANCELLED. */
void wf_h2_call_cancel(wf_h2_call *call);

void wf_h2_call_set_data(wf_h2_call *call, void *data);
void *wf_h2_call_data(const wf_h2_call *call);
wf_h2_conn *wf_h2_call_conn(const wf_h2_call *call);
/* The :path the call was opened on: on a server, the served path it matched (the string
 * from opts.path / opts.paths, so it may be compared by pointer or with strcmp); on a
 * client, opts.path. Valid as long as the call. */
const char *wf_h2_call_path(const wf_h2_call *call);

/* Server: the first value of request metadata name (a lower-case header name such as
 * "authorization"; pseudo-headers are not kept), NULL when absent. At most 8 KiB of metadata
 * is kept per call (later entries are dropped). Valid as long as the call. */
const char *wf_h2_call_metadata(const wf_h2_call *call, const char *name);

/* The connection's peer as text into out (cap bytes, NUL-terminated): "ip:port" for TCP
 * ("[ip6]:port" for IPv6, as Go's net.JoinHostPort and istiod's adsz "address"), and
 * "unix:<socket path>" for a Unix socket (the path the server listens on). The address is
 * read when the connection is set up (server: at accept; client: at connect), so it stays
 * available until on_conn_closed. Returns 0, WF_H2_E_INVAL (cap too small: out holds the
 * truncated text) or WF_H2_E_IO (not known: a client not connected yet, or the OS refused). */
int wf_h2_conn_peer(const wf_h2_conn *conn, char *out, size_t cap);

/* The connection's TLS facts (tls/tls.h wf_tls_info: the peer's verified certificate's URI SANs,
 * ALPN, ...) into *out once its handshake is done: true; false for a plaintext connection (or
 * before). The strings are valid until on_conn_closed. */
bool wf_h2_conn_tls_info(const wf_h2_conn *conn, wf_tls_info *out);

/* Human-readable name of a reason ("keepalive timeout", ...). */
const char *wf_h2_end_reason_str(wf_h2_end_reason r);

#endif
