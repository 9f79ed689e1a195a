/*
 * app_internal.h - what the weft-app server's files share (app.c: connections, reading,
 * writing; app_resp.c: routing and answers; app_ws.c: the WebSocket echo). Not a public
 * interface: see app.h.
 */
#ifndef WEFT_APP_INTERNAL_H
#define WEFT_APP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "app/app.h"
#include "core/strbuf.h"
#include "http/h1_parser.h"

#define APP_HDR_CAP    100           /* Envoy's default max_headers_count */
#define APP_RBUF       (64u * 1024u) /* read buffer: one whole head fits */
#define APP_PIECE      (64u * 1024u) /* streamed body piece (bytes per write) */
#define APP_CHUNK      (16u * 1024u) /* /chunked chunk size */
#define APP_CHUNK_LINE 6u            /* "4000\r\n" */
#define APP_CHUNK_FULL (APP_CHUNK_LINE + APP_CHUNK + 2u)
#define APP_CHUNKS     4u             /* full chunks per write */
#define APP_FREE_MAX   64u            /* blocks kept on the free list (about 4.4 MB) */
#define APP_OUT_KEEP   (256u * 1024u) /* larger output buffers are freed on release */
#define APP_LINGER_MS  2000u
#define APP_WS_GUID    "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct app_block {
    struct app_block *next;
    wf_strbuf out; /* answer bytes not yet written */
    wf_strbuf aux; /* /echo body prefix or the WebSocket accept value */
    h1_header hdrs[APP_HDR_CAP];
    char rbuf[APP_RBUF];
};

enum app_route {
    R_NOT_FOUND,
    R_HEALTHZ,
    R_STATUS,
    R_BAD_STATUS,
    R_DELAY,
    R_HANGUP,
    R_UPLOAD,
    R_BYTES,
    R_CHUNKED,
    R_RESET, /* /reset/<n>: n body bytes of 2n, then a TCP reset */
    R_ECHO,
    R_WS,
    R_BAD_WS,
    R_COUNT,
    R_COUNT_RESET,
    R_CATALOG, /* --catalog: /items, /items/{id}, /blowup (catalog.h) */
    R_FAULT,   /* --catalog: the blowup fault answers 500 */
};

enum app_phase {
    PH_HEAD,   /* between requests or reading a head */
    PH_BODY,   /* reading the body of the current request */
    PH_WAIT,   /* request read; answer delayed by the timer */
    PH_STREAM, /* streaming a /bytes or /chunked body */
    PH_WS,     /* WebSocket echo */
    PH_LINGER, /* write side shut; discarding input until EOF or the timer */
};

enum app_timer { T_NONE, T_IDLE, T_DELAY, T_LINGER };

struct app_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    union {
        uv_write_t write;
        uv_shutdown_t shutdown;
    } req;
    struct wf_app *app;
    struct app_conn *prev, *next;
    struct app_block *blk;
    size_t roff, rlen; /* unconsumed bytes: blk->rbuf[roff..rlen) */
    h1_parser parser;
    /* current request */
    enum app_route route;
    uint64_t arg; /* status code, delay ms or byte count */
    uint64_t body_bytes;
    uint64_t fault_delay_ms; /* --catalog: the blowup latency for this request */
    uint64_t idle_since;     /* loop time (ms) the last answer ended */
    uint64_t stream_left;
    uint64_t ws_left;
    uint32_t ws_pos;
    uint8_t ws_mask[4];
    enum app_phase phase;
    enum app_timer timer_mode;
    int pending_closes;
    bool head_only, keep_alive, http10, upgrade, hangup;
    bool stream_chunked, stream_tail_crlf, stream_tail_sent;
    bool ws_in_frame;
    bool body_cut; /* R_CATALOG: the body was longer than WF_CATALOG_MAX_BODY */
    bool writing, reading, close_after, closing;
    bool reset_after; /* /reset/<n>: reset the connection once the answer is written */
};

struct wf_app {
    uv_loop_t *loop;
    struct wf_app_config cfg;
    uv_tcp_t *listeners[WF_APP_MAX_LISTEN];
    size_t nlisteners;
    struct app_conn *conns;
    struct app_block *free_blocks;
    size_t nfree;
    struct wf_catalog *catalog; /* --catalog, else NULL */
    char *fixed; /* preformatted "x-weft-app: ..\r\nx-weft-pod: ..\r\nx-weft-version: ..\r\n" */
    size_t fixed_len;
    uint64_t count;    /* /count */
    uint64_t received; /* all requests, for --hangup-first */
    uint64_t rng;
    char pattern[APP_PIECE];
    char chunks[APP_CHUNKS * APP_CHUNK_FULL]; /* preformatted full chunks */
};

/* Appends a string literal (never a pointer: sizeof must see the array). */
#define PUTS(b, lit) wf_strbuf_append((b), "" lit, sizeof(lit) - 1)

static inline bool str_eq(h1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.p, lit, n) == 0;
}

static inline bool str_ieq(h1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && strncasecmp(s.p, lit, n) == 0;
}

/* ---- app.c ---- */

/* Writes c->blk->out then extra[0..elen) (extra must stay valid until the write completes).
 * Returns 0 when everything went out at once, 1 when a write is pending (c->writing), -1
 * when the connection was closed (c must not be used further). */
int app_conn_flush(struct app_conn *c, const char *extra, size_t elen);

/* ---- app_resp.c ---- */

/* Produces the answer of the request just read into c->blk->out (or starts a stream / the
 * WebSocket echo: c->phase says which). */
void app_respond(struct app_conn *c);

/* A text/plain answer with the given status and body (copied). */
void app_resp_text(struct app_conn *c, uint64_t status, const char *body, size_t len);

/* The route of a request path (no query); *arg gets the status code, delay or byte count. */
enum app_route app_route_path(const char *p, size_t n, uint64_t *arg);

/* The path of a request-target: absolute-form loses scheme and authority; the query goes.
 * The result points into t. */
h1_str app_target_path(h1_str t);

/* /echo: the JSON of the request line and headers, up to "body_bytes":, into c->blk->aux. */
void app_echo_prefix(struct app_conn *c, const h1_message *m);

/* ---- app_ws.c ---- */

/* Checks a WebSocket upgrade request (RFC 6455 §4.2.1) and keeps the accept value in
 * c->blk->aux. Returns false when the handshake is not valid. */
bool app_ws_handshake(struct app_conn *c, const h1_message *m);

/* The 101 answer; the connection becomes a WebSocket echo (PH_WS). */
void app_resp_ws(struct app_conn *c);

/* One step of the echo: a frame header or a piece of payload. Returns false when nothing
 * more can be done until more bytes arrive or a write completes. */
bool app_ws_step(struct app_conn *c);

#endif
