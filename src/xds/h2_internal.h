/*
 * h2_internal.h - what the files of the h2_stream module share (not a public header; the API
 * is h2_stream.h): the limits, the buffer, call, connection, server and write structures, and
 * the functions one file calls in another.
 *
 *  - h2_stream.c:  calls (creation, end, freeing) and the call API other than sending
 *  - h2_conn.c:    connections: re-entrancy, output pump and reads, keepalive, setup,
 *                  teardown, peer address, option defaults
 *  - h2_session.c: the nghttp2 session and its input callbacks
 *  - h2_send.c:    shared buffers, send queues, the NO_COPY data provider, sendv
 *  - h2_server.c:  listening, accepting, the server's connections and totals
 *  - h2_client.c:  connecting and opening calls
 *
 * Re-entrancy: every entry from libuv (read, write, timer, connect) and every public call
 * brackets its work with wf_h2_enter()/wf_h2_leave(). Only the outermost leave() drives
 * nghttp2 output (nghttp2 forbids session_send/recv from inside its callbacks) and tears a
 * connection down, so user callbacks may call any public function.
 */
#ifndef WF_XDS_H2_INTERNAL_H
#define WF_XDS_H2_INTERNAL_H

#include "xds/h2_stream.h"

#include <nghttp2/nghttp2.h>
#include <string.h>
#include <sys/socket.h>

#include "tls/tls.h"
#include "xds/grpc_frame.h"

#define WRITE_HIGH     ((size_t)256 * 1024) /* bytes handed to libuv and not yet written */
#define RECV_WINDOW    ((int32_t)1 << 20)   /* our HTTP/2 receive windows, stream and connection */
#define READ_BUF       ((size_t)64 * 1024)
#define NO_CLOSE       (-1)
#define WF_H2_MAX_META ((size_t)8 * 1024) /* bytes of request metadata kept per call */

struct wf_h2_buf {
    size_t refs;
    size_t len;
    uint8_t *data; /* inline (after the struct) or taken over (freed with free) */
    bool owned;    /* data is a separate allocation */
};

/* A range of a buffer waiting in a call's send queue (one reference each). */
typedef struct seg {
    wf_h2_buf *buf;
    size_t off, len;
} seg;

struct wf_h2_call {
    wf_h2_conn *conn;
    wf_h2_call *prev, *next;
    int32_t stream_id;
    void *data;
    wf_grpc_decoder dec;
    seg *q; /* send queue: q[q_head..q_n), ring-less (compacted when full) */
    size_t q_head, q_n, q_cap;
    size_t queued;   /* bytes in the queue not yet framed by nghttp2 */
    bool deferred;   /* data provider returned NGHTTP2_ERR_DEFERRED */
    bool finishing;  /* end the stream once the queue drains */
    bool local_done; /* no more sends */
    bool trailers_sent;
    bool cancelled;
    bool accepted; /* server: on_call was called; client: always */
    bool proto_err;
    bool got_status;   /* client: grpc-status received */
    bool remote_ended; /* client: END_STREAM received */
    bool bad_method, bad_path, good_ctype;
    int http_status;
    int status;
    char *message;    /* plain text: to send (server) or received (client) */
    const char *path; /* the :path served (server: from opts.paths) or requested (client) */
    char *meta;       /* server: request metadata, "name\0value\0" pairs (WF_H2_MAX_META) */
    size_t meta_len;
};

struct wf_h2_conn {
    uv_loop_t *loop;
    union { /* both begin with the uv_stream_t fields, so tcp names either */
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    };
    uv_timer_t ping_timer, ping_deadline;
    uv_idle_t flush; /* runs deferred work on the next loop iteration */
    uv_connect_t connect_req;
    nghttp2_session *session;
    wf_h2_server *server;
    wf_h2_opts opts;
    wf_h2_handlers h;
    wf_h2_call *calls;
    char authority[64];
    int depth;
    int pending_close; /* wf_h2_end_reason or NO_CLOSE */
    int open_handles;
    bool connected, closing, ping_outstanding, is_pipe, has_peer;
    char peer[128]; /* "ip:port", "[ip6]:port" or "unix:path" (has_peer) */
    size_t write_inflight;
    struct wreq *batch; /* the write being collected (send_data_cb appends to it) */
    uint8_t *own_rbuf;  /* a client's read buffer (READ_BUF bytes, lazily); server connections
                         * share their server's */
    wf_tls_conn *tls;   /* TLS under HTTP/2 (h2_tls.c), NULL = plaintext */
};

struct wf_h2_server {
    union {
        uv_tcp_t listener;
        uv_pipe_t pipe_listener;
    };
    bool is_pipe;
    uv_loop_t *loop;
    wf_h2_opts opts;
    const char *pathv[WF_H2_MAX_PATHS + 1]; /* served paths, NULL-terminated (opts.paths) */
    wf_h2_handlers h;
    wf_h2_conn **conns; /* open (not torn down) connections */
    size_t nconns, capconns;
    size_t live; /* connections not yet freed */
    int port;
    size_t queued; /* bytes in the send queues of every call of every connection */
    bool closing, listener_closed;
    /* One read buffer for every connection of the server: libuv runs one read callback at a
     * time and nghttp2_session_mem_recv consumes the bytes before it returns, so nothing
     * refers to them afterwards (1,000 proxies would otherwise hold 64 MiB of it). */
    uint8_t rbuf[READ_BUF];
    wf_tls_ctx *tls; /* new connections terminate TLS with it (a reference); NULL = plaintext */
};

/* One part of a write: a range of a shared buffer, or (buf NULL) of the write's scratch. */
typedef struct wpart {
    wf_h2_buf *buf;
    size_t off, len;
} wpart;

/* One uv_write: the frames nghttp2 serialized (copied into scratch: headers, control frames,
 * DATA frame headers) and DATA payloads referenced in place (NGHTTP2_DATA_FLAG_NO_COPY). */
typedef struct wreq {
    uv_write_t req;
    wf_h2_conn *c;
    size_t len; /* bytes in all parts */
    uint8_t *scratch;
    size_t s_len, s_cap;
    wpart *parts;
    size_t n, cap;
} wreq;

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE             \
    }

/* ---- h2_conn.c ---------------------------------------------------------------------------- */

/* Re-entrancy brackets (see above); leave() of the outermost one pumps output and closes. */
void wf_h2_enter(wf_h2_conn *c);
void wf_h2_leave(wf_h2_conn *c);
/* Marks the connection for closing with r (the first reason wins). */
void wf_h2_fail(wf_h2_conn *c, wf_h2_end_reason r);
/* Schedules output and pending closes for the next loop iteration. */
void wf_h2_kick(wf_h2_conn *c);
/* A negative nghttp2 return fails the connection (WF_H2_END_PROTOCOL). */
void wf_h2_check_rv(wf_h2_conn *c, int rv);
/* Copies src (NULL: all defaults) into dst and fills in the defaults. */
void wf_h2_opts_fill(wf_h2_opts *dst, const wf_h2_opts *src);
/* The socket is connected: starts reading and the keepalive timer. 0 or a libuv error. */
int wf_h2_start_io(wf_h2_conn *c);
/* A new connection with its handles initialised (TCP, or a pipe when pipe). NULL on error. */
wf_h2_conn *wf_h2_conn_new(uv_loop_t *loop, const wf_h2_opts *o, const wf_h2_handlers *h,
                           bool pipe);
/* Frees a connection the user never saw (setup failure): no callbacks. */
void wf_h2_conn_discard(wf_h2_conn *c);
/* Records the peer's address text (wf_h2_conn_peer); leaves has_peer false on failure. */
void wf_h2_read_peer(wf_h2_conn *c);
/* ip ("a.b.c.d" or an IPv6 address) and port into ss. 0 or a libuv error. */
int wf_h2_parse_addr(const char *ip, int port, struct sockaddr_storage *ss);

/* ---- h2_session.c ------------------------------------------------------------------------- */

/* Creates c->session (server or client as c->server says) and submits our SETTINGS. */
int wf_h2_session_new(wf_h2_conn *c);

/* ---- h2_send.c ---------------------------------------------------------------------------- */

/* Empties the call's send queue (dropping its references and byte counts). */
void wf_h2_queue_drop(wf_h2_call *call);
/* Appends a copy of len bytes to the write. 0 or -1 (out of memory). */
/* ---- TLS (h2_tls.c) ---- */
/* Makes c's TLS connection from ctx (server side). 0 or WF_H2_E_NOMEM. */
int wf_h2_tls_start(wf_h2_conn *c, wf_tls_ctx *ctx);
/* The same for a client (sni: the name sent, NULL = none). */
int wf_h2_tls_start_client(wf_h2_conn *c, wf_tls_ctx *ctx, const char *sni);
/* Goes on with the handshake where it waits for nothing (a client's first flight). 0, or -1
 * when it failed. */
int wf_h2_tls_step(wf_h2_conn *c);
/* true when c is plaintext or its handshake is done (application data may be written). */
bool wf_h2_tls_ready(const wf_h2_conn *c);
/* Ciphertext read from the socket: feeds it, goes on with the handshake, hands the plaintext
 * to nghttp2. 0, or -1 when the connection must end (TLS failure, close_notify, a protocol
 * error). */
int wf_h2_tls_on_read(wf_h2_conn *c, const uint8_t *p, size_t n);
/* The engine's pending ciphertext (handshake messages, alerts) as a new write; NULL when none
 * or on out of memory. */
struct wreq *wf_h2_tls_pending(wf_h2_conn *c);
/* Encrypts the plaintext write (consumed) and returns the ciphertext write; NULL on failure or
 * when nothing came out. */
struct wreq *wf_h2_tls_encrypt(wf_h2_conn *c, struct wreq *plain);

int wf_h2_batch_copy(wreq *w, const uint8_t *p, size_t len);
void wf_h2_wreq_free(wreq *w);
/* nghttp2 data provider read callback of every call (NO_COPY; trailers on a server). */
ssize_t wf_h2_data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *ud);
/* nghttp2 send_data callback: moves the queued payload into c->batch by reference. */
int wf_h2_send_data_cb(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                       size_t length, nghttp2_data_source *src, void *ud);
/* Resumes the call's deferred data provider. */
void wf_h2_resume(wf_h2_call *call);

/* ---- h2_server.c -------------------------------------------------------------------------- */

/* Frees the server once it is closing, its listener closed and no connection is left. */
void wf_h2_server_maybe_free(wf_h2_server *s);

/* ---- h2_stream.c -------------------------------------------------------------------------- */

/* A new call on c (linked into c->calls). NULL when out of memory. */
wf_h2_call *wf_h2_call_new(wf_h2_conn *c);
/* Unlinks and frees the call; no callback. */
void wf_h2_call_free(wf_h2_call *call);
/* Reports the end (for calls the user knows about) and frees the call. */
void wf_h2_call_end(wf_h2_call *call, wf_h2_end_reason r, int status, uint32_t h2_error);
/* Sets the call's grpc message to a copy of len bytes of text. 0 or WF_H2_E_NOMEM. */
int wf_h2_set_message(wf_h2_call *call, const char *text, size_t len);
/* No more sends: the call is done locally, or its connection is closing. */
bool wf_h2_call_closed(const wf_h2_call *call);

#endif
