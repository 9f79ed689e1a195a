/*
 * app_grpc_internal.h - what the files of weft-app's gRPC server share (app_grpc.c: listeners,
 * connections, the nghttp2 session's input and output; app_grpc_call.c: the calls, from the
 * request HEADERS to the trailers). Not a public interface: see app_grpc.h.
 *
 * Ownership: the server (struct app_grpc) lists its connections, a connection its calls.
 * A call is created by its request HEADERS and released when its stream closes, or with its
 * connection; its memory goes in its timer's close callback. A connection is freed once its
 * two handles (socket, linger timer) closed. nghttp2 is never entered from its own callbacks:
 * the calls only submit; app_grpc_conn_flush pumps the session from the loop's callbacks.
 */
#ifndef WF_APP_GRPC_INTERNAL_H
#define WF_APP_GRPC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "app/app_grpc.h"
#include "core/strbuf.h"
#include "xds/grpc_frame.h"

#define GRPC_READ_BUF  (64u * 1024u) /* bytes read per read callback */
#define GRPC_HDR_SMALL 32u

enum grpc_method { M_NONE, M_ECHO, M_STREAM, M_HEALTH };

struct gconn;

/* One call (HTTP/2 stream). */
struct gcall {
    struct gconn *conn;
    struct gcall *prev, *next;
    uv_timer_t timer; /* delay_ms; its close callback frees the call */
    int32_t id;
    enum grpc_method method;
    bool post, accepted, ended; /* ended: the request stream ended (END_STREAM) */
    bool headers_sent, deferred, done, lazy;
    bool path_long;
    char path[128];
    char http_method[GRPC_HDR_SMALL];
    char ctype[96];
    char encoding[GRPC_HDR_SMALL];
    char x_delay[GRPC_HDR_SMALL], x_status[GRPC_HDR_SMALL];
    char *x_message; /* heap */
    wf_grpc_decoder dec;
    unsigned nmsgs;
    wf_strbuf req; /* the first request message */
    struct app_echo_plan plan;
    uint32_t next_index;
    wf_strbuf out; /* response bytes not yet taken by nghttp2 */
    size_t out_off;
    int status;
    char *status_msg; /* percent-encoded grpc-message, heap; NULL: none */
};

/* One connection. */
struct gconn {
    struct app_grpc *g;
    struct gconn *prev, *next;
    uv_tcp_t tcp;
    uv_timer_t linger;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    nghttp2_session *session;
    struct gcall *calls;
    wf_strbuf wbuf;
    bool writing, lingering, closing;
    bool failed; /* the session refused input: flush what it has, then end */
    int handles; /* open uv handles; the connection is freed when the last one closed */
    char rbuf[GRPC_READ_BUF];
};

struct glistener {
    uv_tcp_t tcp;
    struct app_grpc *g;
};

struct app_grpc {
    uv_loop_t *loop;
    struct app_grpc_config cfg;
    char hostname[256];
    nghttp2_session_callbacks *cbs;
    struct glistener *listeners[16];
    size_t nlisteners;
    struct gconn *conns;
};

/* ---- app_grpc.c ---- */

/* Pulls nghttp2's output and writes it (when no write is in flight); ends the connection when
 * the session is over. Never call it from an nghttp2 callback. */
void app_grpc_conn_flush(struct gconn *c);

/* ---- app_grpc_call.c ---- */

/* The nghttp2 callbacks of a server session (user data: the struct gconn); NULL when out of
 * memory. The caller frees them with nghttp2_session_callbacks_del. */
nghttp2_session_callbacks *app_grpc_callbacks(void);

/* Unlinks the call from its connection and stops its timer; it is freed in the timer's close
 * callback. */
void app_grpc_call_release(struct gcall *call);

#endif
