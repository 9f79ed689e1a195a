/*
 * pstats.h - the proxy's stats with Envoy's names, registered once per snapshot on top of
 * the stats store (stats.h): per cluster (`cluster.<alt_stat_name or name>.`), per listener
 * (`listener.<address>.`), per HTTP connection manager (`http.<stat_prefix>.`) and
 * `server.` / `listener_manager.` / `cluster_manager.`. Names follow Envoy's docs:
 * configuration/upstream/cluster_manager/cluster_stats, configuration/listeners/stats,
 * configuration/http/http_conn_man/stats and the router filter's stats.
 *
 * Histograms (milliseconds, Envoy's names): cluster.<name>.upstream_rq_time,
 * upstream_cx_connect_ms, upstream_cx_length_ms; http.<stat_prefix>.downstream_rq_time,
 * downstream_cx_length_ms; listener.<address>.downstream_cx_length_ms.
 *
 * The snapshot's stats_config (stats_matcher, histogram_bucket_settings) is installed in the
 * store before anything is registered, so rejected names are never created.
 *
 * Workers increment through their shard (wp_stat_add, wp_hist_record): no lock, no
 * allocation after the first use of a status code.
 */
#ifndef WEFT_PROXY_PSTATS_H
#define WEFT_PROXY_PSTATS_H

#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/net/tls_socket.h"
#include "proxy/stats/stats.h"
#include "proxy/stream_info/stream_info.h"

#define WP_CLUSTER_STATS(X)                                                                        \
    X(upstream_cx_total, C)                                                                        \
    X(upstream_cx_http2_total, C)                                                                  \
    X(upstream_cx_active, G)                                                                       \
    X(upstream_cx_connect_fail, C)                                                                 \
    X(upstream_cx_connect_timeout, C)                                                              \
    X(upstream_cx_overflow, C)                                                                     \
    X(upstream_cx_destroy, C)                                                                      \
    X(upstream_cx_destroy_local, C)                                                                \
    X(upstream_cx_destroy_remote, C)                                                               \
    X(upstream_cx_destroy_local_with_active_rq, C)                                                 \
    X(upstream_cx_destroy_remote_with_active_rq, C)                                                \
    X(upstream_cx_none_healthy, C)                                                                 \
    X(upstream_cx_connect_attempts_exceeded, C)                                                    \
    X(upstream_flow_control_paused_reading_total, C)                                               \
    X(upstream_flow_control_resumed_reading_total, C)                                              \
    X(upstream_cx_idle_timeout, C)                                                                 \
    X(upstream_cx_max_requests, C)                                                                 \
    X(upstream_cx_rx_bytes_total, C)                                                               \
    X(upstream_cx_tx_bytes_total, C)                                                               \
    X(upstream_rq_total, C)                                                                        \
    X(upstream_rq_active, G)                                                                       \
    X(upstream_rq_completed, C)                                                                    \
    X(upstream_rq_pending_total, C)                                                                \
    X(upstream_rq_pending_active, G)                                                               \
    X(upstream_rq_pending_overflow, C)                                                             \
    X(upstream_rq_cancelled, C)                                                                    \
    X(upstream_rq_timeout, C)                                                                      \
    X(upstream_rq_rx_reset, C)                                                                     \
    X(upstream_rq_tx_reset, C)                                                                     \
    X(upstream_rq_retry, C)                                                                        \
    X(upstream_rq_retry_success, C)                                                                \
    X(upstream_rq_retry_limit_exceeded, C)                                                         \
    X(upstream_rq_retry_overflow, C)                                                               \
    X(upstream_rq_retry_backoff_exponential, C)                                                    \
    X(upstream_rq_per_try_timeout, C)                                                              \
    X(upstream_rq_per_try_idle_timeout, C)                                                         \
    X(retry_or_shadow_abandoned, C)                                                                \
    X(upstream_cx_close_notify, C)                                                                 \
    X(membership_healthy, G)                                                                       \
    X(membership_total, G)                                                                         \
    X(membership_degraded, G)                                                                      \
    X(membership_excluded, G)                                                                      \
    X(circuit_breakers_default_cx_open, G)                                                         \
    X(circuit_breakers_default_rq_pending_open, G)                                                 \
    X(circuit_breakers_default_rq_open, G)                                                         \
    X(circuit_breakers_default_rq_retry_open, G)

#define WP_HCM_STATS(X)                                                                            \
    X(downstream_cx_total, C)                                                                      \
    X(downstream_cx_active, G)                                                                     \
    X(downstream_cx_http1_total, C)                                                                \
    X(downstream_cx_http1_active, G)                                                               \
    X(downstream_cx_http2_total, C)                                                                \
    X(downstream_cx_http2_active, G)                                                               \
    X(downstream_cx_destroy, C)                                                                    \
    X(downstream_cx_destroy_remote, C)                                                             \
    X(downstream_cx_destroy_local, C)                                                              \
    X(downstream_cx_idle_timeout, C)                                                               \
    X(downstream_cx_protocol_error, C)                                                             \
    X(downstream_cx_rx_bytes_total, C)                                                             \
    X(downstream_cx_tx_bytes_total, C)                                                             \
    X(downstream_cx_upgrades_total, C)                                                             \
    X(downstream_cx_upgrades_active, G)                                                            \
    X(downstream_rq_total, C)                                                                      \
    X(downstream_rq_http1_total, C)                                                                \
    X(downstream_rq_http2_total, C)                                                                \
    X(downstream_rq_active, G)                                                                     \
    X(downstream_rq_completed, C)                                                                  \
    X(downstream_rq_1xx, C)                                                                        \
    X(downstream_rq_2xx, C)                                                                        \
    X(downstream_rq_3xx, C)                                                                        \
    X(downstream_rq_4xx, C)                                                                        \
    X(downstream_rq_5xx, C)                                                                        \
    X(downstream_rq_rx_reset, C)                                                                   \
    X(downstream_rq_tx_reset, C)                                                                   \
    X(downstream_rq_response_before_rq_complete, C)                                                \
    X(downstream_rq_timeout, C)                                                                    \
    X(downstream_rq_max_duration_reached, C)                                                       \
    X(downstream_rq_idle_timeout, C)                                                               \
    X(downstream_rq_too_large, C)                                                                  \
    X(downstream_rq_failed_path_normalization, C)                                                  \
    X(downstream_rq_redirected_with_normalized_path, C)                                            \
    X(no_route, C)                                                                                 \
    X(no_cluster, C)                                                                               \
    X(rq_redirect, C)                                                                              \
    X(rq_direct_response, C)                                                                       \
    X(rq_total, C)                                                                                 \
    X(rq_reset_after_downstream_response_started, C)

/* tcp.<stat_prefix>.* (Envoy's ALL_TCP_PROXY_STATS, source/common/tcp_proxy/tcp_proxy.h) */
#define WP_TCP_STATS(X)                                                                            \
    X(downstream_cx_total, C)                                                                      \
    X(downstream_cx_no_route, C)                                                                   \
    X(downstream_cx_tx_bytes_total, C)                                                             \
    X(downstream_cx_tx_bytes_buffered, G)                                                          \
    X(downstream_cx_rx_bytes_total, C)                                                             \
    X(downstream_cx_rx_bytes_buffered, G)                                                          \
    X(downstream_flow_control_paused_reading_total, C)                                             \
    X(downstream_flow_control_resumed_reading_total, C)                                            \
    X(idle_timeout, C)                                                                             \
    X(max_downstream_connection_duration, C)                                                       \
    X(upstream_flush_total, C)                                                                     \
    X(upstream_flush_active, G)

#define WP_LISTENER_STATS(X)                                                                       \
    X(downstream_cx_total, C)                                                                      \
    X(downstream_cx_active, G)                                                                     \
    X(downstream_cx_destroy, C)                                                                    \
    X(downstream_pre_cx_active, G)                                                                 \
    X(downstream_pre_cx_timeout, C)                                                                \
    X(downstream_listener_filter_remote_close, C)                                                  \
    X(downstream_listener_filter_error, C)                                                         \
    X(no_filter_chain_match, C)

#define WP_CLUSTER_HISTS(X)                                                                        \
    X(upstream_rq_time)                                                                            \
    X(upstream_cx_connect_ms)                                                                      \
    X(upstream_cx_length_ms)

#define WP_HCM_HISTS(X)                                                                            \
    X(downstream_rq_time)                                                                          \
    X(downstream_cx_length_ms)

#define WP_LISTENER_HISTS(X) X(downstream_cx_length_ms)

#define WP_ENUM_(name, type)  WP_S_##name,
#define WP_LENUM_(name, type) WP_LS_##name,
enum { WP_CLUSTER_STATS(WP_ENUM_) WP_CS_COUNT_ };
enum { WP_HCM_STATS(WP_ENUM_) WP_HS_COUNT_ };
enum { WP_LISTENER_STATS(WP_LENUM_) WP_LS_COUNT_ };
#define WP_TENUM_(name, type) WP_TS_##name,
enum { WP_TCP_STATS(WP_TENUM_) WP_TS_COUNT_ };
#undef WP_TENUM_
#define WP_CHENUM_(name) WP_CH_##name,
#define WP_HHENUM_(name) WP_HH_##name,
#define WP_LHENUM_(name) WP_LH_##name,
enum { WP_CLUSTER_HISTS(WP_CHENUM_) WP_CH_COUNT_ };
enum { WP_HCM_HISTS(WP_HHENUM_) WP_HH_COUNT_ };
enum { WP_LISTENER_HISTS(WP_LHENUM_) WP_LH_COUNT_ };
#undef WP_ENUM_
#undef WP_LENUM_
#undef WP_CHENUM_
#undef WP_HHENUM_
#undef WP_LHENUM_
/* Cluster and HCM constants are WP_S_<name>, listener ones WP_LS_<name>; histograms are
 * WP_CH_ / WP_HH_ / WP_LH_<name>; each table is indexed through its own struct below. */

/* cluster.<name>.grpc.* of envoy.filters.http.grpc_stats (filters/http/grpc_stats.h): the
 * outcome counters, the message counters, then grpc.<status> for the statuses 0..16. */
#define WP_GRPC_STATUS_MAX 16
enum {
    WP_GRPC_success,
    WP_GRPC_failure,
    WP_GRPC_total,
    WP_GRPC_request_message_count,
    WP_GRPC_response_message_count,
    WP_GRPC_status0,
    WP_GRPC_COUNT_ = WP_GRPC_status0 + WP_GRPC_STATUS_MAX + 1
};

/* A cluster's grpc.* slots, registered on first use (Envoy creates them when first charged):
 * 0 = not yet, else the slot + 1. Written by whichever worker registers first. */
typedef struct {
    _Atomic uint64_t id[WP_GRPC_COUNT_];
} wp_grpc_cstats;

typedef struct {
    uint32_t slot[WP_CS_COUNT_];
    uint32_t rq_codes;    /* code scope "cluster.<name>.upstream_rq" */
    uint32_t retry_codes; /* "cluster.<name>.retry.upstream_rq": responses that were retried */
    uint32_t hist[WP_CH_COUNT_];
    /* cluster.<name>.ssl.* (net/tls_socket.h WP_SSL_*), registered for a TLS cluster only
     * (WP_STAT_INVALID otherwise), as Envoy's upstream SslSocketFactory scope */
    uint32_t ssl[WP_SSL_COUNT_];
    /* cluster.<name>.default.total_match_count then cluster.<name>.<match>.total_match_count
     * per transport_socket_matches entry (Envoy's TransportSocketMatchStats): ntsms + 1 slots,
     * malloc'd; NULL for a cluster without transport_socket_matches */
    uint32_t *tsm_match;
    wp_grpc_cstats grpc; /* cluster.<name>.grpc.*, lazily (wp_pstats_grpc_slot) */
} wp_cstats;

typedef struct {
    uint32_t slot[WP_HS_COUNT_];
    uint32_t hist[WP_HH_COUNT_];
} wp_hstats;

/* A TCP proxy's tcp.<stat_prefix>.* slots (WP_TS_*). */
typedef struct {
    uint32_t slot[WP_TS_COUNT_];
} wp_tstats;

typedef struct {
    uint32_t slot[WP_LS_COUNT_];
    uint32_t hist[WP_LH_COUNT_];
    /* listener.<address>.ssl.* for a listener with a TLS filter chain, else WP_STAT_INVALID */
    uint32_t ssl[WP_SSL_COUNT_];
} wp_lstats;

/* Every stat of one snapshot; built by wp_pstats_register. */
typedef struct wp_pstats {
    wp_stats *store;
    wp_cstats *clusters; /* per config cluster */
    size_t nclusters;
    wp_hstats *hcms; /* per HTTP connection manager (wp_config.hcms, wp_hcm.index) */
    wp_tstats *tcps; /* per TCP proxy (wp_config.tcps, wp_tcp_proxy.index) */
    wp_lstats *listeners;
    uint32_t server_live, server_state, server_uptime, server_concurrency, server_total_connections,
        server_memory_allocated, server_memory_heap_size, workers_started, total_listeners_active,
        cm_active_clusters, lm_listener_added, cm_cluster_added, server_version;
    /* listener_manager.* / cluster_manager.* counted by wp_pstats_config_applied */
    uint32_t lm_listener_modified, lm_listener_removed, lm_create_success, lm_create_failure,
        lm_total_warming, lm_total_draining, cm_cluster_modified, cm_cluster_removed,
        cm_warming_clusters;
} wp_pstats;

typedef wp_stats_shard wp_pstats_shard;

/* Installs cfg->stats_config's matcher in store (stats_matcher.h), then registers the stats
 * of cfg in it (store borrowed). Returns NULL on out of memory (or a stats_config the loader
 * should have refused). The result is freed with wp_pstats_free (not the store). */
wp_pstats *wp_pstats_register(wp_stats *store, const wp_config *cfg);
void wp_pstats_free(wp_pstats *p);

/* Adds (sign 1) or takes back (sign -1) the warming gauges of cfg into sh:
 * cluster_manager.warming_clusters = its EDS clusters still waiting for their assignment, and
 * listener_manager.total_listeners_warming = its listeners waiting for their route
 * configuration (both as /config_dump lists them warming; weft serves such a cluster at once,
 * with no endpoints, so it is also in active_clusters). Static configs have none. */
void wp_pstats_warming_gauges(wp_stats_shard *sh, const wp_pstats *p, const wp_config *cfg,
                              int sign);

/* Counts a configuration change from old (NULL at start) to cur in sh, as Envoy's listener
 * and cluster managers do (docs configuration/listeners/stats#listener-manager,
 * configuration/upstream/cluster_manager/cluster_stats#cluster-manager). Resources are
 * identified by name and compared as configured (bootstrap static_resources entries, or the
 * xDS resource as received: an EDS or RDS update changes neither cluster nor listener):
 *   cluster_manager.cluster_added / cluster_modified / cluster_removed
 *   listener_manager.listener_added / listener_modified / listener_removed (warming
 *     listeners included, as Envoy counts a listener when it is added, before it warms)
 *   listener_manager.listener_create_success: nworkers per listener handed to the workers
 *     with its sockets (new, modified, or bound again after a failed bind), Envoy counting
 *     one per worker.
 * Not counted, always 0 (registered so dashboards find them): listener_create_failure
 * (weft binds on the main thread before posting, so a bind failure is a NACK as in Envoy,
 * and workers report no failure) and total_listeners_draining (weft does not keep removed
 * or replaced listeners draining: their sockets close when the workers install the new
 * generation; connections finish on the old one). */
void wp_pstats_config_applied(wp_stats_shard *sh, const wp_pstats *p, const wp_config *old,
                              const wp_config *cur, unsigned nworkers);
/* The same step for the transport socket choices (pstats_config.c): each host of cur whose
 * transport socket was resolved anew (a cluster or host that old did not have, or whose
 * choice changed) counts in its match's total_match_count, as Envoy counts when it makes a
 * host (HostDescriptionImplBase::resolveTransportSocketFactory). */
void wp_pstats_tsm_counts(wp_stats_shard *sh, const wp_pstats *p, const wp_config *old,
                          const wp_config *cur);

/* The slot of cluster c's grpc stat `which` (WP_GRPC_*) in p's store, registering
 * "cluster.<alt_stat_name or name>.grpc.<suffix>" on first use (from any worker: the store
 * serialises registration). WP_STAT_INVALID when c is out of range or the registration failed
 * (tried again next time). */
uint32_t wp_pstats_grpc_slot(wp_pstats *p, const wp_config *cfg, int c, int which);

/* ---- recording helpers (the worker's shard; no lock, no allocation) ---- */

/* A stream ended: http.<prefix>.downstream_rq_time (start to end) and, when the upstream
 * response completed after the request was fully received and the router's dynamic_stats is
 * on, cluster.<name>.upstream_rq_time (request complete to response complete), as Envoy's
 * HCM and router (Router::Filter::onUpstreamComplete). Times in si are ns; recorded in ms. */
static inline void wp_pstats_stream_done(wp_stats_shard *sh, const wp_pstats *p,
                                         const wp_hstats *hs, int cluster, bool dynamic_stats,
                                         const wp_stream_info *si)
{
    if (si->end_ns >= si->start_ns)
        wp_hist_record(sh, hs->hist[WP_HH_downstream_rq_time],
                       (si->end_ns - si->start_ns) / 1000000u);
    if (cluster >= 0 && dynamic_stats && si->last_rx_ns &&
        si->last_upstream_rx_ns >= si->last_rx_ns)
        wp_hist_record(sh, p->clusters[cluster].hist[WP_CH_upstream_rq_time],
                       (si->last_upstream_rx_ns - si->last_rx_ns) / 1000000u);
}

/* A downstream connection closed after ms milliseconds: downstream_cx_length_ms of its HCM
 * and of its listener. */
static inline void wp_pstats_dconn_closed(wp_stats_shard *sh, const wp_hstats *hs,
                                          const wp_lstats *ls, uint64_t ms)
{
    if (hs) /* NULL: a chain without an HTTP connection manager (the TCP proxy's) */
        wp_hist_record(sh, hs->hist[WP_HH_downstream_cx_length_ms], ms);
    wp_hist_record(sh, ls->hist[WP_LH_downstream_cx_length_ms], ms);
}

/* Histogram `which` (WP_CH_*) of cluster index c. */
static inline void wp_pstats_cluster_hist(wp_stats_shard *sh, const wp_pstats *p, int c, int which,
                                          uint64_t value)
{
    if (c >= 0)
        wp_hist_record(sh, p->clusters[c].hist[which], value);
}

#endif
