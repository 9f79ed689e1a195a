/*
 * scrape.h - weft-pilot's scrape loop: pilot collects the proxies' Istio metrics for its web
 * view (ui_graph.h) the way Istio's Prometheus does, by pulling each proxy's merged metrics.
 *
 * Decision (issue 22: "a scrape loop with a bounded cost, or a push over the xDS stream"):
 * a pull, because it needs nothing new in the proxy or in xDS, reads exactly what Prometheus
 * reads (so the graph and a Grafana dashboard agree), and its cost is set by pilot alone.
 *
 * Targets: every proxy connected over xDS (ads.h) whose address pilot knows (wf_pilot_proxy.ip:
 * INSTANCE_IPS[0], else the Pod's status.podIP), at http://<ip>:15020/stats/prometheus: the
 * port and path of the pod annotations prometheus.io/port and prometheus.io/path that Istio's
 * injector writes (pilot-agent's merged metrics on the status port, status.h). Targets are
 * read from the xDS connections at the start of each round; a proxy gone is forgotten.
 *
 * Cost, bounded by the options:
 *  - one round every interval_ms (default 15 s, the scrape interval of Istio's Prometheus
 *    sample; `weft-pilot --uiScrapeInterval D`, 0 = off); a round still running when the next
 *    is due makes that one skipped (counted), never two rounds at once;
 *  - at most max_inflight GETs at a time (default 16), each bounded by timeout_ms (default
 *    5 s) for the whole exchange and max_body bytes (default 4 MiB; a larger body fails the
 *    scrape);
 *  - only istio_* series of mesh_metrics.h and three envoy_server_* / control-plane gauges
 *    are parsed; at most WF_MM_MAX_TARGET_TUPLES series per proxy are kept.
 *  At 1,000 proxies and 15 s: 67 GET/s on average (1,000 per round, 16 at a time), about
 *  0.5 KB of request and 10-50 KB of answer each (weft-proxy's text with its Envoy stats),
 *  parsed at a few hundred MB/s. Memory: per proxy its last values (about 300 bytes per series
 *  it reports, a few series per edge) and the store's history per series (mesh_metrics.h:
 *  about 2.3 KB per series, summed over a workload's replicas).
 *
 * Everything runs on pilot's loop: the GETs are http/http_fetch.h (one HTTP/1.1 GET
 * without blocking the loop: the client pilot-agent's status server uses for app probes and
 * the application scrape). A round ends once every GET of the round ended; its increases then
 * become one round of the store (wf_mm_round_end) and wf_scrape_generation moves on, which
 * tells the views to recompute their caches.
 *
 * Per target it keeps the last scrape (when, ok or why not, duration), the server's state,
 * days until the first certificate expires and control-plane connection from the proxy's own
 * gauges, and a ring of the last WF_SCRAPE_HISTORY state changes (scrape ok <-> failed,
 * server state changes) for /ui/api/scrape.
 *
 * For the bench only (`--uiScrapeAddr IP:PORT`): every GET goes to that address, with the
 * proxy's "<ip>:<port>" as Host, so that simulated proxies whose addresses are not local
 * (bench/xds_load.c --serve-metrics) can answer for themselves.
 *
 * Threads: none; everything on the loop given to wf_scrape_new.
 */
#ifndef WF_PILOT_SCRAPE_H
#define WF_PILOT_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "pilot/ads.h"
#include "pilot/mesh_metrics.h"

#define WF_SCRAPE_INTERVAL_MS 15000
#define WF_SCRAPE_INFLIGHT    16
#define WF_SCRAPE_TIMEOUT_MS  5000
#define WF_SCRAPE_MAX_BODY    (4u * 1024u * 1024u)
#define WF_SCRAPE_PORT        15020
#define WF_SCRAPE_PATH        "/stats/prometheus"
#define WF_SCRAPE_HISTORY     16

typedef struct {
    uint64_t interval_ms;      /* 0 = off: no round ever starts */
    unsigned max_inflight;     /* 0 = WF_SCRAPE_INFLIGHT */
    uint64_t timeout_ms;       /* 0 = WF_SCRAPE_TIMEOUT_MS */
    size_t max_body;           /* 0 = WF_SCRAPE_MAX_BODY */
    int port;                  /* 0 = WF_SCRAPE_PORT */
    const char *override_addr; /* bench only: "IP:PORT" every GET goes to; NULL = none */
} wf_scrape_opts;

typedef struct {
    int64_t t_ms;     /* wall clock */
    char event[40];   /* "scrape ok", "scrape failed", "state LIVE", ... */
    char detail[160]; /* the error of a failed scrape, else "" */
} wf_scrape_event;

/* One target, read-only for the views. */
typedef struct {
    char *proxy_id;  /* node id "<pod>.<ns>" */
    char *ns;        /* the proxy's namespace */
    char *pod;       /* its pod */
    char *workload;  /* its workload as /ui/api/proxies lists it (ui_proxies.h): WORKLOAD_NAME,
                      * else the Pod's controller (generate.h), else the pod */
    char *ip;        /* its address (the proxy's INSTANCE_IPS[0]) */
    char *url;       /* http://<ip>:<port>/stats/prometheus */
    bool router;     /* a gateway (PROXY_TYPE router) */
    bool scraped;    /* at least one scrape ended */
    int64_t last_ms; /* when the last scrape ended, wall clock */
    bool ok;
    char error[160];
    uint64_t duration_ms;
    wf_mm_scrape_info info;                     /* of the last successful scrape */
    wf_scrape_event history[WF_SCRAPE_HISTORY]; /* a ring, oldest first from history_start */
    size_t history_n; /* events recorded so far (ring holds the last ones) */
    /* private to scrape.c */
    struct sockaddr_storage addr;
    char host[80];
    wf_mm_target *mm;
    struct wf_http_fetch *fetch;
    void *owner; /* the wf_scrape */
    uint64_t started_ms;
    bool seen;
} wf_scrape_target;

typedef struct wf_scrape wf_scrape;

/* Starts the loop (the first round after one interval, or wf_scrape_round_now). ads is
 * borrowed and must outlive wf_scrape_free. Returns NULL when out of memory or when
 * override_addr is not "IP:PORT" (err says so). */
wf_scrape *wf_scrape_new(uv_loop_t *loop, wf_ads *ads, const wf_scrape_opts *o, char *err,
                         size_t cap);
/* Cancels the GETs in flight and frees everything once the timer closed (run the loop).
 * NULL ok. */
void wf_scrape_free(wf_scrape *s);

/* Starts a round now unless one is running (tests). */
void wf_scrape_round_now(wf_scrape *s);

uint64_t wf_scrape_interval_ms(const wf_scrape *s);
/* Rounds completed (each one changes what the views answer). */
uint64_t wf_scrape_generation(const wf_scrape *s);
/* Wall clock end of the last round, 0 before the first; its duration. */
int64_t wf_scrape_last_round_ms(const wf_scrape *s);
uint64_t wf_scrape_last_round_duration_ms(const wf_scrape *s);
uint64_t wf_scrape_skipped_rounds(const wf_scrape *s);
const wf_mm_store *wf_scrape_store(const wf_scrape *s);
size_t wf_scrape_target_count(const wf_scrape *s);
const wf_scrape_target *wf_scrape_target_at(const wf_scrape *s, size_t i);
/* The i-th event of t's history ring, oldest first (i < min(history_n, WF_SCRAPE_HISTORY)). */
const wf_scrape_event *wf_scrape_event_at(const wf_scrape_target *t, size_t i);
/* The address a GET to t goes to and the Host it carries (the override in the bench). */
const struct sockaddr *wf_scrape_target_addr(const wf_scrape *s, const wf_scrape_target *t,
                                             const char **host);

#endif
