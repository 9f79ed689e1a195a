/*
 * status.h - the status server: pilot-agent's status port (15020) and the gateway health port
 * (15021), both serving GET /healthz/ready as Istio does (reference §8.1). weft has no agent
 * hop: the proxy answers the probe itself, from the readiness callback (readiness.h).
 *
 * Endpoints (GET and HEAD; a HEAD gets the GET's status and headers without the body):
 *   /healthz/ready     200, empty body, when ready; 503 with the reason text and "\n" when not.
 *                      (pilot-agent answers 503 with an empty body and only logs the reason;
 *                      weft puts it in the body too, so `curl` shows why.) The query string is
 *                      ignored.
 *   /stats/prometheus  the merged Prometheus text (15020 in Istio), from render_prometheus;
 *                      404 when that callback is NULL or opts.readiness_only is set (Istio's
 *                      15021 listener routes only /healthz/ready).
 *   anything else      404; other methods 405 (Allow: GET, HEAD).
 * Requests are parsed by the project's HTTP/1.1 parser (h1_parser.h). Keep-alive is honoured
 * (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive); a request with a body
 * is answered and its connection closed. A request head larger than max_request_bytes gets
 * 431 and the connection is closed; a malformed one gets the parser's status (400/431/501) and
 * is closed. Connections idle (or sending a head slowly) for idle_timeout_ms are closed.
 * Beyond max_connections, new connections are accepted and closed at once.
 *
 * Transitions of the readiness answer are logged on the admin logger, with pilot-agent's
 * texts: "Envoy proxy is NOT ready: <reason>" (warn) and "Envoy proxy is ready" (info); the
 * first probe logs too.
 *
 * Thread-safety: runs on the loop given to wp_status_start (the proxy's main loop); the
 * callbacks are called on that loop's thread.
 */
#ifndef WEFT_PROXY_STATUS_H
#define WEFT_PROXY_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "core/strbuf.h"

#define WP_STATUS_DEFAULT_MAX_REQUEST_BYTES 8192u
#define WP_STATUS_DEFAULT_MAX_CONNECTIONS   1024u
#define WP_STATUS_DEFAULT_IDLE_TIMEOUT_MS   10000u

typedef struct {
    /* Required. Returns true when ready; when not, writes a NUL-terminated reason (at most cap
     * bytes) into reason. Typically wp_readiness_check(r, uv_now(loop), reason, cap). */
    bool (*ready)(void *ud, char *reason, size_t cap);
    /* Optional. Appends the Prometheus text exposition to out (borrowed; the server sends
     * and frees it). A failed strbuf answers 500. */
    void (*render_prometheus)(void *ud, wf_strbuf *out);
    void *ud; /* handed to both callbacks, borrowed */
} wp_status_callbacks;

typedef struct {
    const char *address;      /* "IP:PORT" or "[IPv6]:PORT"; port 0 = pick one (wp_status_port) */
    bool readiness_only;      /* serve only /healthz/ready (the 15021 gateway port) */
    size_t max_request_bytes; /* 0 = WP_STATUS_DEFAULT_MAX_REQUEST_BYTES (min 256) */
    size_t max_connections;   /* 0 = WP_STATUS_DEFAULT_MAX_CONNECTIONS */
    uint64_t idle_timeout_ms; /* 0 = WP_STATUS_DEFAULT_IDLE_TIMEOUT_MS */
} wp_status_opts;

typedef struct wp_status wp_status;

/* Parses "IP:PORT" / "[IPv6]:PORT" (numeric IP, port 0-65535) into *sa. Returns 0, or -1 with
 * a message in err (may be NULL). For checking command-line flags before starting. */
int wp_status_parse_address(const char *text, struct sockaddr_storage *sa, wf_strbuf *err);

/* Binds and listens on opts->address on loop. cb and opts are copied (opts->address too).
 * Returns the server, or NULL with a message in err ("cannot listen on status address
 * 127.0.0.1:15020: address already in use"). */
wp_status *wp_status_start(uv_loop_t *loop, const wp_status_opts *opts,
                           const wp_status_callbacks *cb, wf_strbuf *err);
/* The bound port (the picked one when the address said 0). */
int wp_status_port(const wp_status *s);
/* Open connections right now (for tests and debugging). */
size_t wp_status_connections(const wp_status *s);
/* Stops listening and closes every connection (responses being written are cut). The server
 * frees itself once the loop has run the close callbacks, so the loop must run afterwards
 * (uv_run until it returns); s must not be used after this call. NULL is ignored. */
void wp_status_close(wp_status *s);

#endif
