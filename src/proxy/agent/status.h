/*
 * status.h - the status server: pilot-agent's status port (15020) and the gateway health port
 * (15021), both serving GET /healthz/ready as Istio does (reference §8.1). weft has no agent
 * hop: the proxy answers the probe itself, from the readiness callback (readiness.h), and
 * serves the rest of pilot-agent's status port (Istio pilot/cmd/pilot-agent/status/server.go,
 * istioctl-troubleshooting.md §6.2) itself too.
 *
 * Endpoints:
 *   /healthz/ready     GET/HEAD. 200, empty body, when ready; 503 with the reason text and
 *                      "\n" when not. (pilot-agent answers 503 with an empty body and only logs
 *                      the reason; weft puts it in the body too, so `curl` shows why.) The
 *                      query string is ignored.
 *   /stats/prometheus, /metrics
 *                      GET/HEAD. pilot-agent's merged scrape (status_metrics.h): the agent's
 *                      scrape counters, Envoy's metrics (render_prometheus), then, when
 *                      opts.app_metrics is set, the application's own, fetched from
 *                      http://<app_ip>:<port><path> without blocking the loop (Accept,
 *                      User-Agent and X-Prometheus-Scrape-Timeout-Seconds forwarded; bounded by
 *                      that header's seconds, else app_scrape_timeout_ms, and by
 *                      WP_STATUS_APP_METRICS_MAX bytes). A failed app scrape (connection, status
 *                      other than 200, timeout, size) still answers 200 with the rest, counts
 *                      istio_agent_scrape_failures_total{type="application"} and logs "failed
 *                      scraping application metrics: ...", as pilot-agent. The Content-Type
 *                      follows the app's format (OpenMetrics or text 0.0.4). 404 when
 *                      render_prometheus is NULL or opts.readiness_only is set (Istio's 15021
 *                      listener routes only /healthz/ready).
 *   /app-health/<container>/livez|readyz|startupz (and pilot-agent's /app-lifecycle/... keys)
 *                      any method, as pilot-agent: the application probe of opts.probers
 *                      (app_probe.h), run without blocking the loop; the answer is the probe's
 *                      (the app's status and first 10 KiB of body for httpGet, 200/500 for
 *                      tcpSocket; 500 naming the probe for what weft does not implement).
 *                      A path with no prober: 400 "app prober config does not exists for
 *                      <path>" (pilot-agent's answer, a 400 and not a 404).
 *   /quitquitquit, /drain
 *                      pilot-agent's: from a loopback peer only (else 403 "Only requests from
 *                      localhost are allowed"), POST only (else 405 "Method Not Allowed"); 200
 *                      "OK", then the quit / drain callback runs. 404 when the callback is NULL
 *                      or opts.readiness_only is set.
 *   /debug/ndsz        pilot-agent's handleNdsz: from a loopback peer only (else 403 "Only
 *                      requests from localhost are allowed"); 200 application/json with the
 *                      DNS proxy's NameTable ({"table": {...}}, dns.h) when it has one, else
 *                      404 "{}". 404 "404 page not found" when name_table is NULL or
 *                      readiness_only is set.
 *   /failed_requests[?limit=N]
 *                      GET/HEAD (weft): the proxy's admin GET /failed_requests (its recent
 *                      failed requests, server/admin/admin.h) relayed, from any peer: as in
 *                      Istio the admin port binds loopback, so the status port is where the
 *                      control plane reads a proxy (weft-pilot's web view, pilot/scrape_failed.h).
 *                      ?limit=N as the admin's (400 "usage: /failed_requests?limit=N" for a bad
 *                      value). 404 when failed_requests is NULL or readiness_only is set.
 *   anything else      404 "404 page not found"; on GET-only paths other methods are 405
 *                      (Allow: GET, HEAD). A HEAD gets the GET's status and headers only.
 * Served by the shared HTTP/1 server (http/h1_server.h, SKIP mode) with the project's parser
 * (h1_parser.h); answers carry lower-case field names. Keep-alive is honoured
 * (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive); a request with a body
 * is answered and its connection closed. A request head larger than max_request_bytes gets
 * 431 and the connection is closed; a malformed one gets the parser's status (400/431/501) and
 * is closed. Connections idle (or sending a head slowly) for idle_timeout_ms are closed; while
 * a probe or an app scrape runs the connection is not read (the op's own timeout bounds it).
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
#include <jansson.h>
#include <uv.h>

#include "core/strbuf.h"
#include "proxy/agent/app_probe.h"
#include "proxy/agent/status_metrics.h"

#define WP_STATUS_DEFAULT_MAX_REQUEST_BYTES 8192u
#define WP_STATUS_DEFAULT_MAX_CONNECTIONS   1024u
#define WP_STATUS_DEFAULT_IDLE_TIMEOUT_MS   10000u
#define WP_STATUS_DEFAULT_APP_SCRAPE_MS     10000u
#define WP_STATUS_APP_METRICS_MAX           (10u * 1024u * 1024u) /* bytes of app metrics */

typedef struct {
    /* Required. Returns true when ready; when not, writes a NUL-terminated reason (at most cap
     * bytes) into reason. Typically wp_readiness_check(r, uv_now(loop), reason, cap). */
    bool (*ready)(void *ud, char *reason, size_t cap);
    /* Optional. Appends the Prometheus text exposition to out (borrowed; the server sends
     * and frees it). A failed strbuf answers 500. */
    void (*render_prometheus)(void *ud, wf_strbuf *out);
    /* Optional. POST /quitquitquit and POST /drain (loopback peers): called once the 200 "OK"
     * is queued. */
    void (*quit)(void *ud);
    void (*drain)(void *ud);
    /* Optional. pilot-agent's /debug/ndsz: the DNS proxy's NameTable (borrowed), NULL when it
     * has none (no DNS capture, or no NDS push yet). */
    const json_t *(*name_table)(void *ud);
    /* Optional. /failed_requests: the admin's answer for at most limit entries (SIZE_MAX =
     * all), appended to out as JSON text; returns 0, or -1 when out of memory (500). */
    int (*failed_requests)(void *ud, size_t limit, wf_strbuf *out);
    void *ud; /* handed to every callback, borrowed */
} wp_status_callbacks;

typedef struct {
    const char *address;      /* "IP:PORT" or "[IPv6]:PORT"; port 0 = pick one (wp_status_port) */
    bool readiness_only;      /* serve only /healthz/ready (the 15021 gateway port) */
    size_t max_request_bytes; /* 0 = WP_STATUS_DEFAULT_MAX_REQUEST_BYTES (min 256) */
    size_t max_connections;   /* 0 = WP_STATUS_DEFAULT_MAX_CONNECTIONS */
    uint64_t idle_timeout_ms; /* 0 = WP_STATUS_DEFAULT_IDLE_TIMEOUT_MS */
    /* pilot-agent's application endpoints (not served with readiness_only): */
    const wp_app_probers *probers;     /* /app-health/...; borrowed (outlives the server) */
    const char *app_ip;                /* the app's address (INSTANCE_IP); NULL = 127.0.0.1 */
    const wp_prom_scrape *app_metrics; /* the app's metrics to merge; copied; NULL = none */
    uint64_t app_scrape_timeout_ms;    /* 0 = WP_STATUS_DEFAULT_APP_SCRAPE_MS */
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
/* The agent's scrape counters so far (for tests). */
wp_agent_metrics wp_status_agent_metrics(const wp_status *s);
/* Open connections right now (for tests and debugging). */
size_t wp_status_connections(const wp_status *s);
/* Stops listening and closes every connection (responses being written are cut). The server
 * frees itself once the loop has run the close callbacks, so the loop must run afterwards
 * (uv_run until it returns); s must not be used after this call. NULL is ignored. */
void wp_status_close(wp_status *s);

#endif
