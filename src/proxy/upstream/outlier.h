/*
 * outlier.h - passive health checking: Envoy's outlier detection for weft-proxy clusters
 * (docs intro/arch_overview/upstream/outlier, API envoy.config.cluster.v3.OutlierDetection;
 * behaviour copied from source/common/upstream/outlier_detection_impl.cc, 2025-26 revision
 * with always_eject_one_host) and the load balancer's panic threshold
 * (load_balancer_impl.cc isHostSetInPanic, Cluster.common_lb_config.healthy_panic_threshold).
 *
 * What is followed:
 *  - Detectors: consecutive_5xx, consecutive_gateway_failure (502, 503, 504) and, with
 *    split_external_local_origin_errors, consecutive_local_origin_failure. A host's counter
 *    grows by one per failure and goes back to 0 on a success (any non-5xx response resets
 *    both HTTP counters; a gateway code that is not 502-504 resets the gateway one). The
 *    detection fires when a counter reaches its threshold exactly (Envoy's `++n == threshold`);
 *    the counter of that detector is then reset, whatever came of the detection.
 *  - Local-origin results (Envoy Outlier::Result): without the split a connect failure or
 *    reset counts as a 503 and a timeout as a 504 (so both are 5xx and gateway failures);
 *    with the split they only feed consecutive_local_origin_failure, and a connection handed
 *    to a request (pool ready, LocalOriginConnectSuccess) resets it.
 *  - Ejection (DetectorImpl::ejectHost): a detection on a host already ejected is dropped.
 *    Otherwise `ejections_detected_<type>` counts it; the ejection is allowed when
 *    100 * (ejected + 1) / hosts <= max_ejection_percent, or when always_eject_one_host is
 *    set and nothing is ejected. Current Envoy (>= 1.31) thus ejects NOTHING when one host
 *    is more than max_ejection_percent of the cluster (default 10 %: clusters under 10
 *    hosts) unless always_eject_one_host is true; the docs' older "will eject at least one
 *    host regardless of the value" described the pre-1.31 rule. A refused ejection counts
 *    `ejections_overflow`. An allowed one counts the deprecated `ejections_total` (5xx type
 *    only, as Envoy), then is enforced with probability enforcing_<type> percent: the host is
 *    marked ejected, `ejections_active` +1, `ejections_enforced_total` and
 *    `ejections_enforced_<type>` +1, `membership_healthy` -1 (for an EDS-healthy host), and
 *    its time multiplier grows by one unless multiplier * base >= max + base.
 *  - Every `interval` (main thread) a host ejected for at least
 *    min(base_ejection_time * multiplier, max_ejection_time) + jitter (jitter drawn at ejection
 *    in [0, max_ejection_time_jitter]) is returned to service and its counters reset; a host
 *    in service whose last un-ejection is at least one interval old has its multiplier
 *    decreased by one (to 0) per interval.
 *  - Panic: when (healthy + degraded hosts) * 100 < healthy_panic_threshold * hosts (Envoy's
 *    default threshold 50 %), the load balancer uses every host, ejected and EDS-unhealthy
 *    ones included, and counts `lb_healthy_panic`. With a threshold of 0 (what Istio sets
 *    from DestinationRule minHealthPercent, 0 by default) a cluster with no healthy host
 *    answers 503 UH no_healthy_upstream. So with Envoy's defaults, ejecting every host does
 *    NOT give UH: the cluster is in panic and all hosts get traffic.
 * Not implemented: the success-rate and failure-percentage detectors (bootstrap.c rejects
 * their settings), outlier event logging, active health checking interplay.
 *
 * Threads. Workers report results with wp_od_put on the hot path: relaxed atomic counters,
 * no lock, no allocation. The worker whose result crosses a threshold runs the ejection
 * itself (instead of Envoy's post to the main thread): it claims the host with a CAS
 * (IN -> EJECTING), so one detection per host runs at a time, reserves a slot of the
 * cluster's ejected count with a CAS loop (the max_ejection_percent check), fills the
 * ejection time and publishes EJECTED with a release store. The load balancer and the admin
 * read EJECTED with one relaxed load. Only the main thread (wp_od_sweep) moves a host from
 * EJECTED back to IN. Stats go to the calling thread's shard. Times are milliseconds of one
 * monotonic clock (libuv loop time, uv_now, which every loop derives from uv_hrtime).
 */
#ifndef WEFT_PROXY_OUTLIER_H
#define WEFT_PROXY_OUTLIER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/stats/stats.h"

/* Outlier stats (cluster.<name>.outlier_detection.*), Envoy's ALL_OUTLIER_DETECTION_STATS. */
#define WP_OD_STATS(X)                                                                             \
    X(ejections_active, G)                                                                         \
    X(ejections_total, C)                                                                          \
    X(ejections_overflow, C)                                                                       \
    X(ejections_enforced_total, C)                                                                 \
    X(ejections_consecutive_5xx, C)                                                                \
    X(ejections_detected_consecutive_5xx, C)                                                       \
    X(ejections_enforced_consecutive_5xx, C)                                                       \
    X(ejections_detected_consecutive_gateway_failure, C)                                           \
    X(ejections_enforced_consecutive_gateway_failure, C)                                           \
    X(ejections_detected_consecutive_local_origin_failure, C)                                      \
    X(ejections_enforced_consecutive_local_origin_failure, C)                                      \
    X(ejections_success_rate, C)                                                                   \
    X(ejections_detected_success_rate, C)                                                          \
    X(ejections_enforced_success_rate, C)                                                          \
    X(ejections_detected_failure_percentage, C)                                                    \
    X(ejections_enforced_failure_percentage, C)                                                    \
    X(ejections_detected_local_origin_success_rate, C)                                             \
    X(ejections_enforced_local_origin_success_rate, C)                                             \
    X(ejections_detected_local_origin_failure_percentage, C)                                       \
    X(ejections_enforced_local_origin_failure_percentage, C)

#define WP_OD_ENUM_(name, type) WP_OD_##name,
enum { WP_OD_STATS(WP_OD_ENUM_) WP_OD_NSTATS };
#undef WP_OD_ENUM_

/* A host's detection state (wp_od_host.state). */
enum { WP_OD_IN = 0, WP_OD_EJECTING = 1, WP_OD_EJECTED = 2 };

/* What one upstream attempt told about its host (Envoy's Outlier::Result + HTTP code). */
typedef enum {
    WP_OD_HTTP,            /* a response head arrived; code = its status */
    WP_OD_CONNECT_FAILED,  /* connect failure or reset (LocalOriginConnectFailed, 503) */
    WP_OD_TIMEOUT,         /* the request timed out (LocalOriginTimeout, 504) */
    WP_OD_CONNECT_SUCCESS, /* a connection was handed to the request (split mode only) */
} wp_od_result;

/* Ejection types, as data.cluster.v3.OutlierEjectionType (the consecutive ones). */
typedef enum { WP_OD_5XX, WP_OD_GATEWAY, WP_OD_LOCAL_ORIGIN } wp_od_type;

/* Per host runtime state (see "Threads" above). */
typedef struct {
    atomic_uint consecutive[3]; /* by wp_od_type */
    atomic_uint state;          /* WP_OD_IN / EJECTING / EJECTED */
    atomic_uint multiplier;     /* Envoy's ejectTimeBackoff */
    atomic_uint num_ejections;
    atomic_uint_fast64_t ejected_at;   /* ms, valid while EJECTED */
    atomic_uint_fast64_t jitter_ms;    /* drawn at ejection */
    atomic_uint_fast64_t unejected_at; /* ms of the last un-ejection, 0 = never */
} wp_od_host;

/* Per cluster runtime state; lives in the cluster runtime (wp_cluster_rt.od). */
typedef struct {
    wp_od_host *hosts; /* one per endpoint; NULL when outlier_detection is absent */
    size_t nhosts;
    atomic_uint ejected; /* hosts EJECTING or EJECTED */
    uint64_t next_sweep; /* ms; main thread only */
    uint32_t slot[WP_OD_NSTATS];
    uint32_t membership_healthy; /* slot of cluster.<name>.membership_healthy */
    uint32_t lb_healthy_panic;   /* slot of cluster.<name>.lb_healthy_panic */
} wp_od_cluster;

/* Sets up od for cluster c: registers cluster.<stat_name>.lb_healthy_panic and, when
 * c->outlier.enabled, the outlier stats and the per-host state, in store (borrowed).
 * membership_healthy is the slot of that gauge (WP_STAT_INVALID: none). now_ms starts the
 * first interval. Returns 0, or -1 on out of memory (od is then safe to wp_od_free). */
int wp_od_init(wp_od_cluster *od, const wp_cluster *c, const char *stat_name, wp_stats *store,
               uint32_t membership_healthy, uint64_t now_ms);
/* Frees what wp_od_init allocated (stats stay in the store). NULL-safe. */
void wp_od_free(wp_od_cluster *od);

/* A worker reports the result of one attempt on host `host` of cluster c (hot path; no lock,
 * no allocation). code: the HTTP status for WP_OD_HTTP (< 500 is a success), else unused. sh: the
 * caller's stats shard; now_ms: its loop time; rnd: a fresh random number (enforcement and
 * jitter draws). Does nothing when outlier detection is off for c. */
void wp_od_put(wp_od_cluster *od, const wp_cluster *c, size_t host, wp_od_result r, unsigned code,
               wp_stats_shard *sh, uint64_t now_ms, uint64_t rnd);

/* Main thread, when now_ms >= od->next_sweep: the interval sweep (un-ejection, multiplier
 * decay). Returns the time of the next sweep (ms). Stats go to sh. Does nothing and returns
 * UINT64_MAX when outlier detection is off for c. */
uint64_t wp_od_sweep(wp_od_cluster *od, const wp_cluster *c, wp_stats_shard *sh, uint64_t now_ms);

/* True while host i is ejected (relaxed load; any thread). */
static inline bool wp_od_ejected(const wp_od_cluster *od, size_t i)
{
    return od->hosts &&
           atomic_load_explicit(&od->hosts[i].state, memory_order_relaxed) == WP_OD_EJECTED;
}

/* EDS health the load balancer accepts: UNKNOWN, HEALTHY, DEGRADED. */
static inline bool wp_endpoint_healthy(const wp_endpoint *e)
{
    return e->health != WP_HEALTH_UNHEALTHY && e->health != WP_HEALTH_DRAINING &&
           e->health != WP_HEALTH_TIMEOUT;
}

/* A host the load balancer may pick outside panic: EDS-healthy and not ejected. */
static inline bool wp_od_host_usable(const wp_od_cluster *od, const wp_cluster *c, size_t i)
{
    return wp_endpoint_healthy(&c->endpoints[i]) && !wp_od_ejected(od, i);
}

/* Envoy's isHostSetInPanic for one pick: healthy = usable hosts of c. True (and one
 * lb_healthy_panic counted in sh) when healthy * 100 < threshold * hosts; the caller then
 * picks among all hosts. */
bool wp_od_lb_panic(const wp_od_cluster *od, const wp_cluster *c, size_t healthy,
                    wp_stats_shard *sh);

/* ---- glue for the proxy (outlier.c; proxy_internal.h types) ---- */

struct wp_server;
struct wp_gen;
struct wp_worker;

/* Sets up every cluster's od in g->crt (after the cluster runtime and pstats exist; freed
 * per cluster with wp_od_free). Returns 0 or -1 (out of memory). */
int wp_outlier_gen_init(struct wp_gen *g, uint64_t now_ms);
/* Main-thread timer: sweeps the clusters that are due; returns the delay in ms until the next
 * sweep (>= 1), or 0 when no cluster has outlier detection. sh: the main thread's shard. */
uint64_t wp_outlier_server_tick(struct wp_server *srv, wp_stats_shard *sh, uint64_t now_ms);
/* The router's hook: reports r/code for host `host` of cluster index `cluster` of generation
 * g, from worker w (ignored when either is -1). */
void wp_outlier_report(struct wp_worker *w, struct wp_gen *g, int cluster, int host, wp_od_result r,
                       unsigned code);

#endif
