/*
 * http_fetch.h - one outgoing HTTP/1.1 GET (or a bare TCP connect) on a libuv loop, for the
 * status server's app probes and the application scrape of the merged metrics (proxy/agent/
 * status.h), and for weft-pilot's scrape of the proxies (pilot/scrape.h, scrape_failed.h).
 * Never blocks the loop: connect, write and read are libuv requests, bounded by a timer.
 *
 * The request: "GET <target> HTTP/1.1", Host, "Connection: close" (Kubernetes' prober
 * disables keep-alive, and so does pilot-agent's prober client by default), the caller's extra
 * header lines, no body. The response is parsed with http/h1_parser.h (Content-Length,
 * chunked, or read until close); at most max_body bytes of its body are kept (the rest is not
 * read: the connection is closed), and a head larger than 64 KiB is a failure.
 *
 * Inputs are copied at start. The callback runs once on the loop (never inside
 * wf_http_fetch_start), unless the fetch was cancelled first; the result and its strings are only
 * valid during the callback. The fetch frees itself after its callback or its cancellation
 * (once libuv has closed its handles, so the loop must keep running).
 */
#ifndef WF_HTTP_HTTP_FETCH_H
#define WF_HTTP_HTTP_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

typedef struct {
    const struct sockaddr *dest;   /* IPv4 or IPv6, with the port */
    const struct sockaddr *source; /* local address to bind first (port 0), or NULL */
    bool connect_only;             /* a tcpSocket probe: success once connected */
    const char *target;            /* request target ("/healthz"), GET only */
    const char *host;              /* Host header value */
    const char *headers;           /* more header lines, each ending in CRLF, or NULL */
    uint64_t timeout_ms;           /* for the whole exchange; 0 = 1000 */
    size_t max_body;               /* body bytes kept; more is "truncated" (not an error) */
    bool body_limit_fails;         /* a body beyond max_body is a failure, not a truncation */
} wf_http_fetch_req;

typedef struct {
    bool ok;                  /* connected (connect_only) or a whole response head was read */
    const char *error;        /* !ok: why ("connection refused", "timeout after 1000 ms", ...) */
    int status;               /* the response status (ok and not connect_only) */
    const char *content_type; /* its Content-Type, or "" */
    const char *location;     /* its Location, or "" */
    const char *body;         /* the body (up to max_body bytes), NUL-terminated */
    size_t body_len;
    bool truncated; /* the body was longer than max_body */
} wf_http_fetch_result;

typedef void (*wf_http_fetch_cb)(void *ud, const wf_http_fetch_result *r);

typedef struct wf_http_fetch wf_http_fetch;

/* Starts the exchange. Returns the fetch, or NULL when out of memory or when libuv refuses
 * to start (the callback is then not called). */
wf_http_fetch *wf_http_fetch_start(uv_loop_t *loop, const wf_http_fetch_req *req,
                                   wf_http_fetch_cb cb, void *ud);
/* The callback will not be called; the connection is closed. NULL is ignored. */
void wf_http_fetch_cancel(wf_http_fetch *f);

#endif
