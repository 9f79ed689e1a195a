/*
 * cluster_manager.h - the clusters of one applied config snapshot, as the request path uses
 * them (Envoy's ClusterManager and its thread-local part): a generation (wp_gen) holds the
 * process-wide cluster runtime (circuit-breaker gauges, per-host counters, outlier
 * detection) and the stat slots of its snapshot; a worker generation (wp_wgen) holds that
 * worker's connection pools and load balancers, per cluster index of the snapshot.
 *
 * A config update makes a new generation (server/gen.h builds, posts and retires them);
 * requests already running finish on the one they started with, so a cluster index never
 * meets another snapshot's arrays. Nothing is carried across generations yet: breaker
 * counts and outlier ejections of a cluster start afresh (Envoy keeps a cluster's state when
 * only its endpoints change). Envoy keeps the same split: a config update builds new cluster
 * and listener objects on the main thread and posts them to the workers (docs
 * intro/arch_overview/operations/draining, "Listener and cluster updates").
 *
 * Lifetimes: wp_gen is reference counted (atomic; the server holds the current one, each
 * worker generation one). A wp_wgen belongs to its worker thread; `users` counts the
 * downstream connections, upstream connections and shadows that point into it (a plain
 * integer: worker-local): wp_wgen_use / wp_wgen_release. A worker's current generation lives
 * until the next one is installed; a retired one is freed (free_retired, set by its maker)
 * when its last user goes.
 */
#ifndef WEFT_PROXY_UPSTREAM_CLUSTER_MANAGER_H
#define WEFT_PROXY_UPSTREAM_CLUSTER_MANAGER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/event/worker.h"
#include "proxy/pstats/pstats.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/outlier.h"

typedef struct wp_gen wp_gen;
typedef struct wp_wgen wp_wgen;
typedef struct wp_lb wp_lb; /* upstream/lb.h */

/* ---------- cluster runtime (process-wide, shared by workers) ---------- */

typedef struct {
    atomic_uint_fast64_t cx_active, cx_total, cx_connect_fail, rq_active, rq_total, rq_error,
        rq_success, rq_timeout;
} wp_host_rt;

typedef struct {
    atomic_uint cx_open, rq_pending, rq_active, retries_active; /* circuit breaker gauges */
    wp_host_rt *hosts;                                          /* per endpoint */
    wp_cstats st;                                               /* stat slots */
    wp_od_cluster od;                                           /* outlier detection (outlier.h) */
} wp_cluster_rt;

struct wp_gen {
    atomic_uint refs;
    wp_config *cfg;     /* one reference */
    wp_cluster_rt *crt; /* per cluster of cfg */
    wp_pstats *pstats;  /* stat slots of cfg (registration is by name: same name, same slot) */
};

struct wp_wgen {
    wp_gen *gen;
    wp_pool *pools; /* per cluster of gen->cfg */
    wp_lb *lbs;     /* per cluster of gen->cfg: the worker's load balancers */
    size_t users;
    bool retired;
    /* the downstream http2.* stat slots (http/conn_h2.c), registered by name once per
     * worker and generation, not per connection */
    uint32_t h2c_slots[8];
    bool h2c_slots_set;
    struct wp_wgen *next; /* the worker's retired generations */
    /* frees a retired generation once its last user is gone (its maker's, server/gen.c) */
    void (*free_retired)(wp_worker *w, wp_wgen *wg);
};

/* One more user of wg. */
static inline void wp_wgen_use(wp_wgen *wg)
{
    wg->users++;
}

/* One less user of wg; the last user of a retired generation frees it. */
static inline void wp_wgen_release(wp_worker *w, wp_wgen *wg)
{
    if (--wg->users == 0 && wg->retired)
        wg->free_retired(w, wg);
}

/* The generation of a pool. */
static inline wp_gen *wp_pool_gen(const wp_pool *p)
{
    return p->wg->gen;
}

/* A stat of cluster index c of generation g (cluster.<name>.*), on the worker's shard. */
static inline void wp_cluster_stat(wp_worker *w, const wp_gen *g, int c, int which, int64_t delta)
{
    wp_stat_add(w->stats, g->pstats->clusters[c].slot[which], delta);
}

/* ---------- a generation's outlier detection (cluster_manager.c) ---------- */

/* Sets up every cluster's od in g->crt (after the cluster runtime and pstats exist; freed
 * per cluster with wp_od_free). Returns 0 or -1 (out of memory). */
int wp_outlier_gen_init(wp_gen *g, uint64_t now_ms);
/* Main-thread timer over g (the current generation): sweeps the clusters that are due;
 * returns the delay in ms until the next sweep (>= 1), or 0 when no cluster has outlier
 * detection. sh: the main thread's shard. */
uint64_t wp_outlier_gen_tick(wp_gen *g, wp_stats_shard *sh, uint64_t now_ms);
/* The router's report of one result r/code for host of cluster index cluster of g, on
 * worker w (ignored when cluster or host is < 0 or the cluster has no outlier detection). */
void wp_outlier_report(wp_worker *w, wp_gen *g, int cluster, int host, wp_od_result r,
                       unsigned code);

#endif
