/*
 * debug.h - weft-pilot's monitoring/debug HTTP server (istiod's port 15014; reference
 * istioctl-troubleshooting.md §5). HTTP/1.1 on the shared server http/h1_server.h: GET only (other
 * methods 405), one request per connection (Connection: close), request heads bounded to
 * 16 KiB (431 beyond), a request body is refused (400). Loopback is the expected bind; there is
 * no authentication (istiod leaves loopback callers unrestricted).
 *
 * Endpoints (JSON is indented with 2 spaces; see debug_views.c for every field):
 *   /ready                     200 "ready" once the first config is served and xDS listens,
 *                              else 503 "not ready"
 *   /metrics                   Prometheus text: pilot_xds_pushes{type}, pilot_xds_push_time{type}
 *                              (histogram), pilot_proxy_convergence_time (histogram),
 *                              pilot_xds{version} (gauge), pilot_total_xds_rejects{type},
 *                              pilot_services, pilot_sds_certificate_errors_total (pilot/sds.h),
 *                              plus weft_pilot_config_errors and _not_implemented
 *   /debug/syncz[?namespace=]  per proxy sync state (istiod's fields + weft's per-type status)
 *   /debug/adsz[?proxyID=]     connections and their watches (istiod's adsz shape)
 *   /debug/configz             resources served, config errors, last good versions kept
 *   /debug/config_errors       the errors, then the not-implemented warnings (WFT codes)
 *   /debug/registryz           services (Kubernetes Services and ServiceEntries)
 *   /debug/endpointz           endpoints per service port (istiod's old endpointz name)
 *   /debug/config_dump?proxyID=ID[&include_eds]  Envoy-style ConfigDump of what pilot would
 *                              send the proxy now (a connected one, matched as a substring of
 *                              the connection id as istiod does; or, when none is connected, a
 *                              Pod "<pod>.<ns>" of the store, so a dump exists before its
 *                              proxy connects). 400 without proxyID, 404 when unknown, with
 *                              istiod's messages.
 *   /debug/push_status         the last push: version, change kind, changed resources, counts
 *   /debug, /debug/            istiod's index of the /debug endpoints (HTML table; JSON rows
 *                              with ?format=json), /debug/list their names (JSON), both
 *                              built from the routing table in debug_views.c
 *   /debug/mesh                the active MeshConfig, defaults filled (debug_mesh.c)
 *   /debug/istio-ca-root-cert[?namespace=NS]  the root distribution (pilot_ca.h): a List of
 *                              the istio-ca-root-cert ConfigMaps (data root-cert.pem) of every
 *                              namespace, or the one of NS (404 "namespace not found")
 *   /metrics also carries the CA's citadel_server_* metrics (ca_server.h)
 *   /ui, /ui/, /ui/<path>      the web view's files (ui_static.h); not in the /debug index
 *   /ui/api/validations, /ui/api/proxies  its JSON (ui_validations.h, ui_proxies.h)
 *   /ui/api/graph, /ui/api/scrape   the web view's traffic graph and scrape targets
 *                              (ui_graph.h), /ui/api/failed the proxies' failed requests
 *                              (scrape_failed.h: answered later, see retry_ms below)
 */
#ifndef WF_PILOT_DEBUG_H
#define WF_PILOT_DEBUG_H

#include <stdbool.h>

#include <uv.h>

#include "core/strbuf.h"

typedef struct wf_pilot wf_pilot;
typedef struct wf_debug wf_debug;

typedef struct wf_debug_reply wf_debug_reply;
/* What answers a GET: the views (wf_debug_route below); the server never names them itself. */
typedef void (*wf_debug_route_fn)(wf_pilot *p, const char *path, const char *query,
                                  wf_debug_reply *r);

typedef struct wf_debug_opts {
    const char *ip;          /* NULL = 127.0.0.1 */
    int port;                /* 0 = pick */
    wf_pilot *pilot;         /* where the views read from; must outlive wf_debug_close */
    wf_debug_route_fn route; /* NULL: every path answers 404 */
} wf_debug_opts;

/* Returns 0 and *out, or -1 with a message naming the address in err. */
int wf_debug_start(uv_loop_t *loop, const wf_debug_opts *opts, wf_debug **out, char *err,
                   size_t cap);
int wf_debug_port(const wf_debug *d);
/* Stops listening, closes open connections; freed once handles closed. NULL is fine. */
void wf_debug_close(wf_debug *d);

/* A response: status, content type (static string) and body; location (a static string, NULL =
 * none) becomes a Location header (a redirect).
 * A view that waits for something (GET /ui/api/failed fetches from proxies: scrape_failed.h)
 * may set retry_ms instead of answering: the server then answers nothing yet and routes the
 * same request again after retry_ms with a fresh reply whose waited_ms says how long the
 * request has waited so far (0 the first time); the view bounds its own wait with it. */
struct wf_debug_reply {
    int status;
    const char *ctype;
    wf_strbuf body;
    uint64_t retry_ms;  /* set by the view: route again after this long (0 = answer now) */
    uint64_t waited_ms; /* set by the server: time since the request arrived */
    const char *location;
};

/* Answers one GET (path without query; query without '?', may be ""). Used by the server and
 * by tests. r->body must be initialised by the caller. */
void wf_debug_route(wf_pilot *p, const char *path, const char *query, wf_debug_reply *r);

/* The value of query parameter key copied into buf (cap bytes, truncated), decoded as Go's
 * url.ParseQuery (istiod's r.URL.Query()): %XX and '+' as a space; "" when the key is present
 * without a value, NULL when absent. A malformed escape ("%6", "%zz", or %00) leaves the value
 * as it came: it then holds a '%', which no valid value (window, limit, proxyID, namespace,
 * format) holds, so the endpoint refuses it as any invalid value (400 where it validates). The
 * key is matched as it came (not decoded). */
const char *wf_debug_query_get(const char *q, const char *key, char *buf, size_t cap);

#endif
