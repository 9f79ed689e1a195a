/*
 * mesh_metrics.h - the proxies' Istio metrics as weft-pilot keeps them for the web view
 * (ui_graph.h): what the scrape loop (scrape.h) reads from each proxy's GET /stats/prometheus
 * (mesh_metrics_text.h), turned into increases per scrape round and kept as a bounded history,
 * so that rates over a window are answered the way Prometheus's rate() / increase() and
 * histogram_quantile() answer them over Istio's standard metrics, without keeping raw samples.
 *
 * Metrics read (Istio's standard metrics, istio.io/latest/docs/reference/config/metrics/):
 *   istio_requests_total, istio_request_duration_milliseconds (histogram: _bucket{le}, _sum,
 *   _count), istio_tcp_sent_bytes_total, istio_tcp_received_bytes_total,
 *   istio_tcp_connections_opened_total, istio_tcp_connections_closed_total (counters);
 *   plus the gauges envoy_server_state, envoy_server_days_until_first_cert_expiring and
 *   envoy_control_plane_connected_state of the scrape (wf_mm_scrape_info). Every other line is
 *   skipped unparsed.
 * Series key (a "tuple"): the values of the WF_MM_NLABELS labels below (absent = ""); other
 * labels (destination_service_name, ..._principal, ..._canonical_*) are summed over.
 *
 * Increases (Prometheus's counter semantics): per target (one proxy) the last scrape's values
 * are kept; a new scrape's increase is value - previous, or the value itself when it went down
 * (a counter reset: the proxy restarted). A target's first scrape only sets its baseline (as
 * rate() needs two samples); a tuple that appears on a target already scraped counts from 0
 * (the series did not exist: its whole value is new; Prometheus would miss that first
 * increase). The increases of every target are summed per tuple into the current round;
 * wf_mm_round_end closes the round.
 *
 * History (bounded, per tuple): the last WF_MM_FINE_SLOTS rounds one by one, and
 * WF_MM_COARSE_SLOTS slots of WF_MM_COARSE_MS wall-clock time each (every round is added to
 * both). A window that the fine rounds cover is answered from them (rounds whose end falls in
 * the window); a longer one (up to 3600 s) from the coarse slots it touches, so it is resolved
 * to WF_MM_COARSE_MS. The rate is increase / the time the chosen rounds or slots cover
 * (covered_s), never the nominal window, so the first minutes after pilot starts are not
 * diluted. A tuple without increase in any slot is dropped at round end.
 *
 * Histogram: the bucket bounds are Envoy's default histogram buckets (what istio-proxy and
 * weft-proxy expose unless stats_config.histogram_bucket_settings changes them): a bucket
 * whose le is not one of them is ignored (counted in wf_mm_scrape_info.ignored_buckets).
 * wf_mm_quantile is Prometheus's histogram_quantile (promql/quantile.go bucketQuantile).
 *
 * Bounds: at most WF_MM_MAX_TARGET_TUPLES tuples per scrape (more are dropped and counted),
 * WF_MM_MAX_TUPLES in the store. Memory per tuple: about 2.3 KB (the rings as floats) plus twice
 * its key; per target: its last values (about 300 bytes per tuple). Threads: none; one loop thread
 * owns a store and its targets.
 */
#ifndef WF_PILOT_MESH_METRICS_H
#define WF_PILOT_MESH_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The series key's labels, in Istio's order. */
typedef enum {
    WF_MM_REPORTER,
    WF_MM_SOURCE_WORKLOAD,
    WF_MM_SOURCE_WORKLOAD_NAMESPACE,
    WF_MM_SOURCE_APP,
    WF_MM_SOURCE_VERSION,
    WF_MM_DESTINATION_SERVICE,
    WF_MM_DESTINATION_WORKLOAD,
    WF_MM_DESTINATION_WORKLOAD_NAMESPACE,
    WF_MM_DESTINATION_APP,
    WF_MM_DESTINATION_VERSION,
    WF_MM_REQUEST_PROTOCOL,
    WF_MM_RESPONSE_CODE,
    WF_MM_RESPONSE_FLAGS,
    WF_MM_CONNECTION_SECURITY_POLICY,
    WF_MM_GRPC_RESPONSE_STATUS,
    WF_MM_NLABELS
} wf_mm_label;

extern const char *const wf_mm_label_names[WF_MM_NLABELS];

/* The values of a tuple: cumulative (a scrape) or increases (a round, a window). */
enum {
    WF_MM_V_REQUESTS,  /* istio_requests_total */
    WF_MM_V_DUR_COUNT, /* istio_request_duration_milliseconds_count (the +Inf bucket) */
    WF_MM_V_DUR_SUM,   /* ..._sum, milliseconds */
    WF_MM_V_TCP_SENT,  /* istio_tcp_sent_bytes_total */
    WF_MM_V_TCP_RECEIVED,
    WF_MM_V_TCP_OPENED,
    WF_MM_V_TCP_CLOSED,
    WF_MM_V_BUCKET0 /* then one cumulative count per bound of wf_mm_bounds */
};
#define WF_MM_NBOUNDS 19
#define WF_MM_NV      (WF_MM_V_BUCKET0 + WF_MM_NBOUNDS)

#define WF_MM_FINE_SLOTS        12
#define WF_MM_COARSE_SLOTS      7
#define WF_MM_COARSE_MS         600000
#define WF_MM_MAX_WINDOW_S      3600
#define WF_MM_MAX_TARGET_TUPLES 512
#define WF_MM_MAX_TUPLES        200000

/* Envoy's default histogram bucket bounds (milliseconds here), ascending. */
extern const double wf_mm_bounds[WF_MM_NBOUNDS];

typedef struct {
    double v[WF_MM_NV];
} wf_mm_values;

/* What a scrape held besides the tuples. */
typedef struct {
    bool has_state; /* envoy_server_state: 0 LIVE, 1 DRAINING, 2 PRE_INITIALIZING, 3 INITIALIZING */
    double server_state;
    bool has_cert_days; /* envoy_server_days_until_first_cert_expiring */
    double cert_days;
    bool has_cp; /* envoy_control_plane_connected_state (1 = connected) */
    double cp_connected;
    size_t tuples;          /* tuples read */
    size_t dropped;         /* tuples beyond WF_MM_MAX_TARGET_TUPLES (or the store's cap) */
    size_t ignored_buckets; /* bucket lines whose le is not one of wf_mm_bounds */
    /* the target's own workload and namespace as its metrics name it (source_workload of a
     * tuple it reports as source, else destination_workload of one it reports as
     * destination; without one, "<app>-<version>" as ui_graph.h names such workloads); ""
     * when it reported none */
    char workload[128], workload_ns[64];
} wf_mm_scrape_info;

/* Envoy's server.state names (LIVE, DRAINING, PRE_INITIALIZING, INITIALIZING), else
 * "UNKNOWN". */
const char *wf_mm_server_state_name(double state);

typedef struct wf_mm_store wf_mm_store;
typedef struct wf_mm_target wf_mm_target; /* one proxy's last values */

/* NULL when out of memory. */
wf_mm_store *wf_mm_store_new(void);
void wf_mm_store_free(wf_mm_store *s); /* NULL ok */

/* A target's state, owned by the caller (the scrape loop), freed with wf_mm_target_free; a
 * target outlives nothing: it may be freed any time (what it added to rounds stays). */
wf_mm_target *wf_mm_target_new(void);
void wf_mm_target_free(wf_mm_target *t); /* NULL ok */

/* Reads one scrape (len bytes of Prometheus text) of target t. router: t is a gateway (router
 * proxy): the tuples it reports as source carry gateway_source. Returns 0 with *info filled,
 * or -1 with why in err (a malformed line, out of memory): the scrape is then ignored and t
 * keeps its previous values. */
int wf_mm_ingest(wf_mm_store *s, wf_mm_target *t, bool router, const char *text, size_t len,
                 wf_mm_scrape_info *info, char *err, size_t cap);

/* Closes the current round at now_ms (the scrape round's end). */
void wf_mm_round_end(wf_mm_store *s, int64_t now_ms);
/* Rounds closed so far, and the end time of the last one (0 = none). */
uint64_t wf_mm_rounds(const wf_mm_store *s);
int64_t wf_mm_last_round_ms(const wf_mm_store *s);
size_t wf_mm_tuple_count(const wf_mm_store *s);
/* Bytes the store holds (tuples, keys, tables), for /ui/api/scrape and the bench. */
size_t wf_mm_memory(const wf_mm_store *s);

/* One tuple's increase over a window (wf_mm_window). */
typedef struct {
    const char *const *labels; /* WF_MM_NLABELS values, never NULL */
    const wf_mm_values *inc;
    bool gateway_source; /* a router proxy reported it as source */
} wf_mm_series_view;

/* Calls fn for every tuple with a non-zero increase over the window_s seconds that end at the
 * last round (window_s clamped to 1..WF_MM_MAX_WINDOW_S). Returns the seconds those increases
 * cover (the rates' denominator; 0 when no round is closed yet). */
double wf_mm_window(const wf_mm_store *s, unsigned window_s,
                    void (*fn)(void *ud, const wf_mm_series_view *v), void *ud);

/* Prometheus's histogram_quantile(q) over cumulative bucket counts cum[0..n-1] for the
 * ascending bounds (upper, inclusive), total = the +Inf bucket's count: NaN when total is 0;
 * linear interpolation inside the bucket holding rank q*total (the first bucket starts at 0);
 * a rank in the +Inf bucket answers the last finite bound. */
double wf_mm_quantile(double q, const double *bounds, const double *cum, size_t n, double total);

#endif
