/*
 * ui_graph.h - the web view's traffic graph and scrape status (issue 22; the JSON contract of
 * /work/notes/ui_contract.md): GET /ui/api/graph?namespace=NS&window=S and GET /ui/api/scrape,
 * answered by weft-pilot's monitoring port from the scrape loop's store (scrape.h,
 * mesh_metrics.h). GET /ui/api/failed is scrape_failed.h.
 *
 * The graph is Kiali's versioned-app graph with service nodes (Kiali's default graph type):
 *  - nodes: a workload per (namespace, source_workload / destination_workload) with its app and
 *    version labels, grouped under an "app" compound node (parent "app:NS/APP") when both are
 *    known; a workload whose name the series do not carry (a proxy without WORKLOAD_NAME
 *    metadata: "" or "unknown") is named after its app and version ("<app>-<version>"), as
 *    Kiali's versioned-app nodes are keyed; a service node per destination_service; "unknown"
 *    for a source with neither (traffic from outside the mesh, Kiali's unknown node). A
 *    workload is is_gateway when a router proxy (a gateway) reported it as source, or its
 *    name is istio-ingressgateway or istio-egressgateway (Istio's default gateway
 *    deployments). A destination workload's "service" is the first destination_service it
 *    was seen serving.
 *  - edges: source workload -> service and service -> destination workload, from every series
 *    of istio_requests_total / _duration / istio_tcp_*; each edge carries the two views of
 *    Istio's reporter label side by side: source_view (reporter="source", the client's
 *    sidecar or gateway: it sees client-side failures, timeouts, no healthy upstream) and
 *    destination_view (reporter="destination", the server's sidecar), null when no series of
 *    that reporter; "disagree" when both exist and their success rates differ by more than
 *    1 percentage point or their request rates by more than 10 %.
 *  - a view: rps = increase of istio_requests_total / covered seconds (mesh_metrics.h
 *    wf_mm_window: Prometheus's rate() over the window); codes and flags (response_flags other
 *    than "-") as rates; error_rate = share of requests answered 5xx, or, for gRPC, with a
 *    grpc_response_status 1-16 (a request with no code, "0", is not an error: see health);
 * success_rate = 1 - error_rate; p50_ms and p99_ms = histogram_quantile(0.5 / 0.99) over
 * istio_request_duration_milliseconds' buckets (null without observations); tcp_sent_bps /
 * tcp_received_bps from the istio_tcp_*_bytes_total counters.
 *  - mtls_percent: the share of requests (TCP: of connections opened) whose
 *    connection_security_policy is "mutual_tls", from the destination reporter's series: Istio's
 *    source-reported series say "unknown" there (only the server side knows whether the
 *    connection it accepted was mutual TLS), and so do weft-proxy's (istio_stats.h); the source
 *    view's values are used only when it has known ones and no destination series exist; null
 *    when no series says.
 *  - health (edges, nodes): Kiali's default traffic health (kiali.io/docs/configuration/health,
 *    health_config.rate defaults): for http, 5xx errors degraded above 0 % and failure above
 *    10 %, 4xx degraded above 10 % and failure above 20 %; for grpc, statuses 1-16 degraded
 *    above 0 % and failure above 10 %; a request with no response code ("0", e.g. what the
 *    server's sidecar reports when the caller timed out and went away) matches none of these
 *    codes and is not an error, so a gateway timeout shows as the gateway's (source) lower
 *    success rate beside the destination's own; "idle" without requests in the window. An edge
 * takes the worse of its two views (a failure only the client sees still colours the edge); a node
 * takes the worse of its inbound edges, or of its outbound ones when it has no inbound traffic; an
 * app node the worst of its workloads.
 *  - namespace=NS keeps the edges with an end in NS (and their nodes), and also an edge to or
 *    from the unknown node (the "unknown" source, or destination_service "unknown") whose
 *    other end is a node so kept: a gateway's requests no cluster took (503 NC) carry
 *    destination_service="unknown" (Istio's gateway listener has no Host fallback), and the
 *    gateway, kept by its edges into NS, keeps its red edge to unknown; window is 10..3600 s,
 *    default 60.
 *
 * Cost: a graph is built from the store's increases (never from scraped text), once per
 * (namespace, window) per scrape round: answers are memoized until the next round
 * (wf_scrape_generation), at most WF_UI_GRAPH_CACHE entries (the cache is emptied when full).
 *
 * Threads: none (pilot's loop).
 */
#ifndef WF_PILOT_UI_GRAPH_H
#define WF_PILOT_UI_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "pilot/ads.h"
#include "pilot/debug.h"
#include "pilot/mesh_metrics.h"
#include "pilot/scrape.h"

#define WF_UI_GRAPH_CACHE        32
#define WF_UI_GRAPH_WINDOW_S     60
#define WF_UI_GRAPH_MIN_WINDOW_S 10
#define WF_UI_GRAPH_MAX_WINDOW_S 3600

/* Kiali's default tolerances (percent of requests). */
#define WF_UI_HTTP_5XX_DEGRADED 0.0
#define WF_UI_HTTP_5XX_FAILURE  10.0
#define WF_UI_HTTP_4XX_DEGRADED 10.0
#define WF_UI_HTTP_4XX_FAILURE  20.0
#define WF_UI_GRPC_DEGRADED     0.0
#define WF_UI_GRPC_FAILURE      10.0

/* "healthy", "degraded", "failure" or "idle" for requests with the given error shares
 * (percent): errors_pct = 5xx (http) or grpc statuses 1-16 (grpc); client_pct =
 * 4xx (http only). */
const char *wf_ui_health(double requests, double errors_pct, double client_pct, bool grpc);

/* The graph object of the contract (without "timestamp_ms" and "scrape", which the caller
 * adds) for the store's window of window_s seconds, restricted to namespace ns (NULL or "" =
 * all). A new object, or NULL when out of memory. */
json_t *wf_ui_graph_build(const wf_mm_store *s, unsigned window_s, const char *ns);

/* The views' state: the scrape loop and the graph cache. */
typedef struct wf_ui_graph wf_ui_graph;

/* Starts the scrape loop (scrape.h) on loop over ads' proxies. NULL with err on failure. */
wf_ui_graph *wf_ui_graph_new(uv_loop_t *loop, wf_ads *ads, const wf_scrape_opts *o, char *err,
                             size_t cap);
void wf_ui_graph_free(wf_ui_graph *g); /* NULL ok; run the loop afterwards */
wf_scrape *wf_ui_graph_scrape(const wf_ui_graph *g);

/* GET /ui/api/graph (query: namespace, window): 200 JSON, 400 for a bad window, 503 when g is
 * NULL (the view is off). */
void wf_ui_graph_serve(wf_ui_graph *g, const char *query, wf_debug_reply *r);
/* GET /ui/api/scrape: the targets (contract's shape). */
void wf_ui_scrape_serve(wf_ui_graph *g, const char *query, wf_debug_reply *r);
/* GET /ui/api/failed (scrape_failed.h; may set r->retry_ms while proxies are asked). */
void wf_ui_failed_serve(wf_ui_graph *g, const char *query, wf_debug_reply *r);

#endif
