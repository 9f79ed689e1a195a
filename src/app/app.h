/*
 * app.h - weft-app, the test backend and sample application: a small single-threaded
 * HTTP/1.1 server on one libuv loop, on the shared server module (http/h1_server.h) and our
 * own pull parser (http/h1_parser.h).
 *
 * It is the upstream of weft-proxy's integration tests and benchmarks, so it is built to be
 * fast and frugal: no allocation per request in the steady state (a connection borrows a
 * read/output block from the server's free list only while it has a request in progress or
 * bytes buffered; an idle keep-alive connection holds only its uv handles and parser state),
 * responses go out with uv_try_write/writev, large bodies are streamed with back-pressure.
 *
 * Endpoints (the path is the request-target up to '?'; an absolute-form target
 * "http://host/p" is routed on "/p"). Responses are always "HTTP/1.1"; every response carries
 * Content-Length or Transfer-Encoding: chunked (except 1xx and 204, which RFC 9110 §8.6
 * forbids, and 304), "x-weft-app: NAME" / "x-weft-pod: POD" when configured, and
 * "Connection: close" when the server closes afterwards ("Connection: keep-alive" to an
 * HTTP/1.0 keep-alive client). HEAD requests get the headers of the GET answer, no body.
 *   /healthz          200 "ok"
 *   /status/<code>    that status, body "status <code>\n" (no body for 1xx, 204, 304); a code
 *                     outside 100..599 or a 1xx other than 101 -> 400 "bad status code\n";
 *                     101 is answered without Upgrade and the connection is then closed
 *   /delay/<ms>       200 "delayed <ms>\n" after <ms> milliseconds (a uv timer)
 *   /hangup           the request is read whole, then the connection closes, no response
 *   /upload           200 "received=<N>\n", N = request body bytes (counted, never stored)
 *   /bytes/<n>        200, Content-Length n, body byte i = WF_APP_PATTERN[i % 64]
 *   /chunked/<n>      same bytes with Transfer-Encoding: chunked (chunks of 16 KiB, the last
 *                     one shorter); to an HTTP/1.0 client it is sent with Content-Length
 *   /reset/<n>        an upstream that fails mid-response: 200 with Content-Length 2n, the
 *                     first n body bytes of /bytes/<2n> (none to HEAD), then the connection
 *                     is reset (TCP RST, uv_tcp_close_reset) instead of finishing the body
 *   /echo, /echo/...  200 application/json {"method":..,"path":..,"version":"HTTP/1.x",
 *                     "headers":[[name,value],...],"body_bytes":N}: "path" is the
 *                     request-target as received (query included), headers in received
 *                     order and case; bytes >= 0x80 are written as \u00XX (Latin-1 reading)
 *   /ws               RFC 6455 WebSocket echo (GET + Upgrade: websocket + Connection: upgrade
 *                     + Sec-WebSocket-Key + Sec-WebSocket-Version: 13, else 400): 101 with
 *                     Sec-WebSocket-Accept, then every data frame is echoed frame by frame
 *                     (same opcode and FIN, unmasked), ping -> pong, close -> close (same
 *                     payload) and the connection closes; an unmasked or malformed client
 *                     frame gets close 1002 and the connection closes
 *   /count            200 {"requests":N}: requests seen since start or the last reset,
 *                     hung-up ones included, /count and /count/reset themselves excluded
 *   /count/reset      answers like /count with the value before the reset, then sets it to 0
 *   anything else     404 "not found\n"
 * Requests are answered in order after the whole request was read (pipelining: the next
 * request is parsed only once the previous answer is out). A parser error is answered with
 * h1_error_status() (400/431/501), body h1_error_details() + "\n", and the connection closes.
 * "Expect: 100-continue" is answered with "100 Continue" when the head arrives. A request
 * carrying Upgrade (or CONNECT) that is not a WebSocket handshake on /ws is answered and the
 * connection closed.
 *
 * --catalog (catalog.h) adds the book's catalog API: GET|POST /items, GET /items/{id},
 * GET|POST /blowup (fault controls: latency, 500 with a percentage, drop), answered in JSON.
 * An active blowup applies to every request except /blowup and /healthz: latency adds to the
 * answer's delay; "500" answers 500 (a request with a body at once, before its body is read,
 * then "Connection: close"); "drop" reads the request and closes without an answer.
 * --version-label V sends "x-weft-version: V" on every response (weftctl up's pods pass their
 * "version" label; "v2" also adds imageUrl to the catalog's items, as the book's v2 does).
 *
 * Options: --hangup-first N closes without a response the first N requests of the process
 * (whatever the path, after reading them whole); --latency-ms A-B delays every answer
 * (hang-ups included) by a uniform draw in [A,B] ms from a xorshift64* generator seeded by
 * --seed (default 1), added to /delay's own delay; --idle-timeout-ms N closes a connection
 * that has had no request in progress for N ms (Envoy's idle_timeout meaning: no active
 * stream; a partly received head does not count as active; WebSocket connections are never
 * idle).
 *
 * gRPC (app_grpc.h): listeners opened with wf_app_listen_grpc serve HTTP/2 with prior
 * knowledge only, the shop.Echo service (Echo, EchoStream: delays and status codes on request)
 * and grpc.health.v1.Health/Check; --hangup-first, --latency-ms, --idle-timeout-ms, /count and
 * the catalog apply to the HTTP/1.1 listeners only.
 *
 * An answer that ends the connection is followed by shutdown of the write side and up to
 * 2 s of reading and discarding (so the peer sees the answer or a clean EOF, not a reset).
 * Memory: an idle connection holds about 1 KiB; a busy one borrows a ~64 KiB block (read
 * buffer, header array, output) from its listener's free list that keeps up to 64 blocks;
 * /echo and the catalog also borrow an aux buffer from the app's list of up to 64.
 */
#ifndef WF_APP_APP_H
#define WF_APP_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#define WF_APP_VERSION    "0.1.0"
#define WF_APP_MAX_LISTEN 16
/* The 64-byte repeating pattern of /bytes and /chunked bodies. */
#define WF_APP_PATTERN "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"

/* Process settings (main_app.c fills them from the command line); strings are borrowed and
 * must outlive the app. */
struct wf_app_config {
    const char *listen[WF_APP_MAX_LISTEN]; /* "ADDR:PORT" or "[IPv6]:PORT" */
    size_t nlisten;
    const char *grpc_listen[WF_APP_MAX_LISTEN]; /* --grpc-listen: gRPC listeners */
    size_t ngrpc_listen;
    uint16_t grpc_port[WF_APP_MAX_LISTEN]; /* --grpc-port: a --listen on it serves gRPC */
    size_t ngrpc_port;
    const char *name;         /* x-weft-app value (no CR, LF or other CTL), NULL: header not sent */
    const char *pod;          /* x-weft-pod value, NULL: header not sent */
    const char *version;      /* x-weft-version value, NULL: header not sent */
    bool catalog;             /* serve the catalog API (catalog.h) */
    uint64_t idle_timeout_ms; /* 0: never */
    uint64_t hangup_first;    /* requests to hang up at start */
    uint64_t latency_min_ms, latency_max_ms; /* both 0: no added latency */
    uint64_t seed;
};

/* Parses n decimal digits at s (no sign, no spaces) into *out if the value is <= max.
 * Returns true on success, false otherwise (*out untouched). */
bool wf_app_parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out);

/* Parses "A.B.C.D:PORT" or "[IPv6]:PORT" (port 0..65535) into *out (sockaddr_in or
 * sockaddr_in6). Returns 0, or -1 when the text is not such an address. */
int wf_app_parse_addr(const char *s, struct sockaddr_storage *out);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 §4.2.2: base64 of the SHA-1 of the
 * key followed by the GUID). out receives 28 characters and a NUL. Returns 0, -1 if libcrypto
 * fails. */
int wf_app_ws_accept(const char *key, size_t key_len, char out[29]);

struct wf_app;

/* Creates the server on loop (borrowed; it must outlive the app); the caller owns the app. Copies
 * what it needs from cfg except the strings (see wf_app_config). Returns NULL when out of memory.
 * Free with wf_app_free. */
struct wf_app *wf_app_new(uv_loop_t *loop, const struct wf_app_config *cfg);

/* Binds and listens on addr ("ADDR:PORT", see wf_app_parse_addr; port 0 picks a free one).
 * On success returns 0 and writes the bound address as "ADDR:PORT" ("[v6]:PORT") to
 * bound[boundlen]. On failure returns a negative libuv error (UV_EINVAL for bad text,
 * UV_EADDRINUSE, UV_EACCES, ...; UV_ENOMEM) and closes what it opened. */
int wf_app_listen(struct wf_app *app, const char *addr, char *bound, size_t boundlen);

/* Binds and listens for gRPC (app_grpc.h: h2c, shop.Echo and grpc.health.v1.Health) on addr, as
 * wf_app_listen does for HTTP/1.1 (same address text, bound text and errors). */
int wf_app_listen_grpc(struct wf_app *app, const char *addr, char *bound, size_t boundlen);

/* Closes listeners and every connection (pending responses are dropped). The loop's uv_run
 * returns once the close callbacks have run, unless other handles keep it alive. */
void wf_app_stop(struct wf_app *app);

/* Frees the app. Call only after wf_app_stop and after the loop ran the close callbacks
 * (uv_run returned). NULL is accepted. */
void wf_app_free(struct wf_app *app);

/* Requests counted by /count (see above). */
uint64_t wf_app_request_count(const struct wf_app *app);

#endif
