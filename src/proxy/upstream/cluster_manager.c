/*
 * cluster_manager.c - a generation's outlier detection (outlier.h over the cluster runtime of
 * cluster_manager.h): set up per cluster, swept from the main thread, and fed by the router's
 * results on the workers.
 */
#include "proxy/upstream/cluster_manager.h"

#include <stdint.h>

int wp_outlier_gen_init(wp_gen *g, uint64_t now_ms)
{
    for (size_t i = 0; i < g->cfg->nclusters; i++) {
        const wp_cluster *c = &g->cfg->clusters[i];
        if (wp_od_init(&g->crt[i].od, c, c->alt_stat_name ? c->alt_stat_name : c->name,
                       g->pstats->store, g->pstats->clusters[i].slot[WP_S_membership_healthy],
                       now_ms) != 0)
            return -1;
    }
    return 0;
}

uint64_t wp_outlier_gen_tick(wp_gen *g, wp_stats_shard *sh, uint64_t now_ms)
{
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < g->cfg->nclusters; i++) {
        wp_od_cluster *od = &g->crt[i].od;
        if (!od->hosts)
            continue;
        if (now_ms >= od->next_sweep)
            wp_od_sweep(od, &g->cfg->clusters[i], sh, now_ms);
        if (od->next_sweep < next)
            next = od->next_sweep;
    }
    if (next == UINT64_MAX)
        return 0;
    return next > now_ms ? next - now_ms : 1;
}

void wp_outlier_report(wp_worker *w, wp_gen *g, int cluster, int host, wp_od_result r,
                       unsigned code)
{
    if (cluster < 0 || host < 0)
        return;
    const wp_cluster *c = &g->cfg->clusters[cluster];
    if (!c->outlier.enabled)
        return;
    wp_od_put(&g->crt[cluster].od, c, (size_t)host, r, code, w->stats, uv_now(&w->loop),
              wp_rand(w));
}
