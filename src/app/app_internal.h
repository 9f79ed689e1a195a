/*
 * app_internal.h - what the weft-app server's files share (app.c: listeners, the request
 * cycle on the shared HTTP/1 server http/h1_server.h, streaming; app_resp.c: routing and
 * answers; app_ws.c: the WebSocket echo on a taken-over connection). Not a public interface:
 * see app.h.
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
#include "http/h1_server.h"

#define APP_HDR_CAP   100            /* Envoy's default max_headers_count */
#define APP_PIECE     (64u * 1024u)  /* streamed body piece (bytes per write) */
#define APP_CHUNK     (16u * 1024u)  /* /chunked chunk size */
#define APP_CHUNKS    4u             /* full chunks per write (<= H1S_MAX_PIECES) */
#define APP_FREE_MAX  64u            /* aux buffers kept on the free list */
#define APP_AUX_KEEP  (256u * 1024u) /* larger aux buffers are freed on release */
#define APP_LINGER_MS 2000u
#define APP_WS_GUID   "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* An aux buffer, borrowed from the app's free list for one request that needs one. */
struct app_aux {
    struct app_aux *next;
    wf_strbuf b; /* /echo body prefix, or the catalog's "METHOD PATH" + body */
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

/* Per connection (h1s_data): the request in progress, the stream or the WebSocket state. */
struct app_conn {
    struct wf_app *app;
    h1s_conn *hc;
    struct app_aux *aux;
    enum app_route route;
    uint64_t arg; /* status code, delay ms or byte count */
    uint64_t body_bytes;
    uint64_t fault_delay_ms; /* --catalog: the blowup latency for this request */
    uint64_t stream_left;
    uint64_t ws_left;
    uint32_t ws_pos;
    uint8_t ws_mask[4];
    char ws_accept[29];
    bool head_only, http10, hangup;
    bool stream_chunked;
    bool ws_in_frame, ws_closing;
    bool body_cut;    /* R_CATALOG: the body was longer than WF_CATALOG_MAX_BODY */
    bool reset_after; /* R_RESET: reset the connection once the body part is written */
};

struct wf_app {
    uv_loop_t *loop;
    struct wf_app_config cfg;
    h1s_server *servers[WF_APP_MAX_LISTEN];
    size_t nservers;
    struct app_aux *free_aux;
    size_t nfree;
    struct wf_catalog *catalog; /* --catalog, else NULL */
    struct app_grpc *grpc;      /* gRPC listeners (app_grpc.h), made by the first one */
    char *fixed; /* preformatted "x-weft-app: ..\r\nx-weft-pod: ..\r\nx-weft-version: ..\r\n" */
    size_t fixed_len;
    /* "Content-Type: <type>\r\n" + fixed, per content type (enum app_ctype) */
    char *heads[4];
    uint64_t count;    /* /count */
    uint64_t received; /* all requests, for --hangup-first */
    uint64_t rng;
    char pattern[APP_PIECE];
};

/* The content types weft-app answers with (an index into wf_app.heads). */
enum app_ctype { CT_NONE, CT_TEXT, CT_JSON, CT_OCTETS };

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

/* The request's aux buffer (taken from the free list on first use); NULL when out of memory. */
wf_strbuf *app_aux(struct app_conn *c);

/* Gives the aux buffer back to the free list. */
void app_aux_release(struct app_conn *c);

/* Starts a /bytes or /chunked body (after its head). */
void app_stream_start(struct app_conn *c, bool chunked);
/* /reset/<n>: the head of a 2n-byte answer, its first n bytes (none to HEAD), then a TCP reset
 * (h1s_conn_reset). */
void app_stream_reset(struct app_conn *c);

/* ---- app_resp.c ---- */

/* Answers the request just read (at once, or starts a stream / the WebSocket echo). */
void app_respond(struct app_conn *c);

/* A text/plain answer with the given status and body (copied). */
void app_resp_text(struct app_conn *c, uint64_t status, const char *body, size_t len);

/* The route of a request path (no query); *arg gets the status code, delay or byte count. */
enum app_route app_route_path(const char *p, size_t n, uint64_t *arg);

/* The path of a request-target: absolute-form loses scheme and authority; the query goes.
 * The result points into t. */
h1_str app_target_path(h1_str t);

/* /echo: the JSON of the request line and headers, up to "body_bytes":, into the aux buffer. */
void app_echo_prefix(struct app_conn *c, const h1_message *m);

/* ---- app_ws.c ---- */

/* Checks a WebSocket upgrade request (RFC 6455 §4.2.1) and keeps the accept value in
 * c->ws_accept. Returns false when the handshake is not valid. */
bool app_ws_handshake(struct app_conn *c, const h1_message *m);

/* The 101 answer; the connection becomes a WebSocket echo (h1s_takeover). */
void app_resp_ws(struct app_conn *c);

/* The echo on received bytes data[0..len) (unmasked in place); returns how many were used
 * (h1_callbacks.on_raw). */
size_t app_ws_input(struct app_conn *c, char *data, size_t len);

#endif
