/*
 * fault.h - Envoy's HTTP fault injection filter (envoy.filters.http.fault, config
 * envoy.extensions.filters.http.fault.v3.HTTPFault) as Istio configures it from a
 * VirtualService `fault`: an empty HTTPFault in the listener's http_filters (before the router)
 * and the real settings in each route's typed_per_filter_config["envoy.filters.http.fault"].
 *
 * Envoy behaviour followed (source/extensions/filters/http/fault/fault_filter.cc,
 * source/extensions/filters/common/fault/fault_config.cc, docs
 * configuration/http/http_filters/fault_filter; reference §1 flags DI and FI):
 *  - The settings are the most specific per-filter config of the matched route (route, then
 *    virtual host), else the filter's own (Http::Utility::resolveMostSpecificPerFilterConfig);
 *    a request with no route uses the filter's.
 *  - The filter acts only when every `headers` matcher matches (HeaderUtility::matchHeaders).
 *  - Percentages are FractionalPercent: hit when random % denominator < numerator
 *    (ProtobufPercentHelper::evaluateFractionalPercent), so numerator >= denominator always
 *    hits; an absent percentage is 0 %. One 64-bit draw per fault from the worker's PRNG.
 *  - Delay (fixed_delay; a duration that truncates to 0 ms delays nothing): the stream stops
 *    before the router, a timer on the worker's loop runs for the delay, then the router starts
 *    (or the abort below happens: a delay can be followed by an abort). Flag DI and stat
 *    `http.<stat_prefix>.fault.delays_injected` when the delay starts.
 *  - Abort (http_status in [200, 600)): local reply with that status, body
 *    "fault filter abort", details fault_filter_abort, flag FI, stat fault.aborts_injected.
 *    grpc_status instead (FaultFilter::abortStatus): the local reply is a 200 carrying that
 *    gRPC status, which a gRPC request gets as grpc-status (trailers-only, conn.c); another
 *    request gets a plain 200 "fault filter abort".
 *  - max_active_faults: a request that would start a fault while `fault.active_faults` (a gauge
 *    over all workers) is at the limit counts fault.faults_overflow and gets no fault; a
 *    request counts as one active fault from the first fault it starts until it ends. Like
 *    Envoy's gauge check, the limit is not exact under concurrent starts on several workers.
 *  - While delayed the connection manager's timeouts (stream_idle_timeout, request_timeout)
 *    still run; a reply or a client disconnect cancels the delay (the filter's on_destroy).
 *
 * Not supported (the loader rejects them by JSON path): header_delay, header_abort,
 * upstream_cluster, downstream_nodes, response_rate_limit, the *_runtime keys,
 * disable_downstream_cluster_stats, filter_metadata; per-route FilterConfig wrappers.
 * Downstream-cluster stats (<downstream_cluster>.delays_injected) are not produced.
 *
 * Threads: settings are part of the immutable config snapshot. wp_fault_filter also holds the
 * filter's runtime (the active-fault count, an atomic shared by workers, and its stat slots,
 * written once by wp_fault_register_stats before workers start). The filter on the request
 * path is filters/http/fault_filter.c (an HTTP filter chain filter, proxy/http/filter.h):
 * per-request state lives in its slot (wp_fault_stream); the delay runs on the stream's filter
 * timer (the connection's request timer, free before the router starts), so a connection
 * carries no timer of its own for it. The request path never allocates and takes no lock.
 */
#ifndef WEFT_PROXY_FAULT_H
#define WEFT_PROXY_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/config/route.h"
#include "proxy/stats/stats.h"

#define WP_FAULT_NAME          "envoy.filters.http.fault"
#define WP_FAULT_TYPE          "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
#define WP_FAULT_ABORT_BODY    "fault filter abort"
#define WP_FAULT_ABORT_DETAILS "fault_filter_abort"

/* envoy.type.v3.FractionalPercent; denominator is 100, 10000 or 1000000. */
typedef struct {
    uint32_t numerator;
    uint32_t denominator;
} wp_fault_percent;

/* One HTTPFault's settings (filter level or a per-route override). */
typedef struct wp_fault_config {
    bool has_delay;
    uint64_t delay_ms; /* fixed_delay, truncated to ms */
    wp_fault_percent delay_pct;
    bool has_abort;
    uint32_t abort_status; /* abort.http_status, 200..599 (200 with grpc_status) */
    int abort_grpc_status; /* abort.grpc_status, -1 none */
    wp_fault_percent abort_pct;
    bool has_max_active;
    uint32_t max_active; /* max_active_faults */
    const wp_kv_matcher *headers;
    size_t nheaders;
} wp_fault_config;

/* The filter of one HTTP connection manager: its settings and its runtime. */
typedef struct wp_fault_filter {
    wp_fault_config cfg;
    bool per_route;              /* a route or virtual host of this HCM overrides cfg */
    atomic_uint_fast64_t active; /* active faults over all workers */
    uint32_t st_delays, st_aborts, st_overflow, st_active; /* stat slots, WP_STAT_INVALID = none */
} wp_fault_filter;

/* Per-request state: the filter's slot in the stream (filters/http/fault_filter.c; zeroed
 * when a stream starts). */
enum { WP_FAULT_IDLE, WP_FAULT_DELAYING, WP_FAULT_RESUMED };
typedef struct {
    uint8_t state;    /* WP_FAULT_* */
    bool active;      /* counted in the filter's active faults */
    bool abort_after; /* abort when the delay ends */
    uint16_t abort_status;
    int16_t abort_grpc_status; /* -1 none (0 when zeroed: set with abort_status) */
} wp_fault_stream;

/* What the percentages decided for one request. */
typedef struct {
    bool delay, abort;
} wp_fault_decision;

/* FractionalPercent.DenominatorType by enum index (0 HUNDRED, 1 TEN_THOUSAND, 2 MILLION) ->
 * 100, 10000, 1000000; 0 for any other index. */
uint32_t wp_fault_denominator(int type);

/* True when a fault at percentage p fires for the 64-bit random draw r:
 * r % denominator < numerator (denominator 0 is treated as 100). */
bool wp_fault_percent_hit(wp_fault_percent p, uint64_t r);

/* The decision for settings c with one draw per fault (r_delay, r_abort). A delay needs
 * has_delay, delay_ms > 0 and a hit; an abort needs has_abort and a hit. c NULL: nothing. */
wp_fault_decision wp_fault_decide(const wp_fault_config *c, uint64_t r_delay, uint64_t r_abort);

/* The settings that apply: r's override, else (r matched) vh's override, else f's own. r and
 * vh may be NULL (no route). f must not be NULL. */
const wp_fault_config *wp_fault_settings(const wp_fault_filter *f, const wp_vhost *vh,
                                         const wp_route *r);

/* Registers `http.<stat_prefix>.fault.{delays_injected,aborts_injected,faults_overflow}`
 * (counters) and `.active_faults` (gauge) for every listener whose HCM has the filter, and
 * stores the slots in its wp_fault_filter. Config time, before workers start. Returns 0, or
 * -1 when a registration failed (out of memory); the slots of that filter stay invalid. */
int wp_fault_register_stats(wp_stats *st, const wp_config *c);

#endif
