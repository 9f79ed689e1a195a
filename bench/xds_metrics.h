/*
 * xds_metrics.h - weft-xds-load's simulated proxies answer GET /stats/prometheus
 * (`weft-xds-load --serve-metrics IP:PORT`), so that weft-pilot's scrape loop and its web
 * view's graph (pilot/scrape.h, pilot/ui_graph.h) are measured on the 1,000-proxy mesh.
 *
 * The simulated pods' addresses (10.10.X.Y, bench/gen_mesh.py) are not local, so one server
 * on IP:PORT answers for all of them and tells them apart by the Host header weft-pilot sends
 * ("<pod ip>:15020") when run with `--uiScrapeAddr IP:PORT` (pilot/scrape.h). An unknown Host
 * is 404.
 *
 * What a proxy i of n answers (synthetic but shaped as weft-proxy's own text, see
 * tests/data/pilot/prom-*.txt): Istio's labels for its workload ("<app>-<version>", app and
 * version labels, namespace); reporter="source" series for 3 outbound edges (to the proxies
 * i+1, i+17 and i+101 mod n: their services and workloads) and reporter="destination" series
 * for the 3 matching inbound ones; each edge 1 + i % 4 requests per second answered 200, and
 * on every tenth proxy also 5 % 503 UF; an istio_request_duration_milliseconds histogram with
 * Envoy's default buckets (half the requests within 5 ms, 90 % within 25, 99 % within 100,
 * all within 250); counters are rate x seconds since the start. Plus envoy_server_state 0,
 * envoy_control_plane_connected_state 1, envoy_server_days_until_first_cert_expiring 365 and
 * `filler` lines of envoy_cluster_* stats per answer (weft-proxy's real answers carry a few
 * hundred KB of Envoy stats that pilot must skip).
 *
 * Single-threaded (the caller's loop). The proxies' strings are copied.
 */
#ifndef WF_BENCH_XDS_METRICS_H
#define WF_BENCH_XDS_METRICS_H

#include <stddef.h>

#include <uv.h>

typedef struct {
    const char *pod, *ns, *ip, *app, *version; /* version may be "" */
} xmet_proxy;

typedef struct xmet_server xmet_server;

/* Listens on addr ("IP:PORT"). NULL with a message in err on failure. */
xmet_server *xmet_start(uv_loop_t *loop, const char *addr, const xmet_proxy *proxies, size_t n,
                        size_t filler, char *err, size_t cap);
/* Scrapes answered so far. */
size_t xmet_scrapes(const xmet_server *s);
/* Stops listening (freed once the loop closed its handles). NULL ok. */
void xmet_close(xmet_server *s);

#endif
