/*
 * pstats.h - the proxy's stats with Envoy's names, registered once per snapshot on top of
 * the stats store (stats.h): per cluster (`cluster.<alt_stat_name or name>.`), per listener
 * (`listener.<address>.`), per HTTP connection manager (`http.<stat_prefix>.`) and
 * `server.` / `listener_manager.` / `cluster_manager.`. Names follow Envoy's docs:
 * configuration/upstream/cluster_manager/cluster_stats, configuration/listeners/stats,
 * configuration/http/http_conn_man/stats and the router filter's stats.
 *
 * Workers increment through their shard (wp_pstat_inc / wp_pstat_add): no lock, no
 * allocation after the first use of a status code.
 */
#ifndef WEFT_PROXY_PSTATS_H
#define WEFT_PROXY_PSTATS_H

#include <stdint.h>

#include "proxy/config.h"
#include "proxy/stats.h"

#define WP_CLUSTER_STATS(X)                                                                        \
    X(upstream_cx_total, C)                                                                        \
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
    X(retry_or_shadow_abandoned, C)                                                                \
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
    X(downstream_rq_active, G)                                                                     \
    X(downstream_rq_completed, C)                                                                  \
    X(downstream_rq_1xx, C)                                                                        \
    X(downstream_rq_2xx, C)                                                                        \
    X(downstream_rq_3xx, C)                                                                        \
    X(downstream_rq_4xx, C)                                                                        \
    X(downstream_rq_5xx, C)                                                                        \
    X(downstream_rq_rx_reset, C)                                                                   \
    X(downstream_rq_tx_reset, C)                                                                   \
    X(downstream_rq_timeout, C)                                                                    \
    X(downstream_rq_idle_timeout, C)                                                               \
    X(downstream_rq_too_large, C)                                                                  \
    X(no_route, C)                                                                                 \
    X(no_cluster, C)                                                                               \
    X(rq_redirect, C)                                                                              \
    X(rq_direct_response, C)                                                                       \
    X(rq_total, C)                                                                                 \
    X(rq_reset_after_downstream_response_started, C)

#define WP_LISTENER_STATS(X)                                                                       \
    X(downstream_cx_total, C)                                                                      \
    X(downstream_cx_active, G)                                                                     \
    X(downstream_cx_destroy, C)                                                                    \
    X(no_filter_chain_match, C)

#define WP_ENUM_(name, type)  WP_S_##name,
#define WP_LENUM_(name, type) WP_LS_##name,
enum { WP_CLUSTER_STATS(WP_ENUM_) WP_CS_COUNT_ };
enum { WP_HCM_STATS(WP_ENUM_) WP_HS_COUNT_ };
enum { WP_LISTENER_STATS(WP_LENUM_) WP_LS_COUNT_ };
#undef WP_ENUM_
#undef WP_LENUM_
/* Cluster and HCM constants are WP_S_<name>, listener ones WP_LS_<name>; each table is
 * indexed through its own struct below. */

typedef struct {
    uint32_t slot[WP_CS_COUNT_];
    uint32_t rq_codes; /* code scope "cluster.<name>.upstream_rq" */
} wp_cstats;

typedef struct {
    uint32_t slot[WP_HS_COUNT_];
} wp_hstats;

typedef struct {
    uint32_t slot[WP_LS_COUNT_];
} wp_lstats;

/* Every stat of one snapshot; built by wp_pstats_register. */
typedef struct wp_pstats {
    wp_stats *store;
    wp_cstats *clusters; /* per config cluster */
    wp_hstats *hcms;     /* per listener (its HCM) */
    wp_lstats *listeners;
    uint32_t server_live, server_state, server_uptime, server_concurrency, server_total_connections,
        server_memory_allocated, workers_started, total_listeners_active, cm_active_clusters,
        lm_listener_added, cm_cluster_added, server_version;
} wp_pstats;

typedef wp_stats_shard wp_pstats_shard;

/* Registers the stats of cfg in store (store borrowed). Returns NULL on out of memory. The
 * result is freed with wp_pstats_free (not the store). */
wp_pstats *wp_pstats_register(wp_stats *store, const wp_config *cfg);
void wp_pstats_free(wp_pstats *p);

#endif
