/*
 * outlier.c - outlier detection and the panic threshold (outlier.h).
 */
#include "proxy/upstream/outlier.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/strbuf.h"
#include "proxy/proxy_internal.h"

#define NAME_(name, type)  #name,
#define GAUGE_(name, type) (#type[0] == 'G'),
static const char *const od_names[] = {WP_OD_STATS(NAME_)};
static const bool od_gauge[] = {WP_OD_STATS(GAUGE_)};
#undef NAME_
#undef GAUGE_

static const int detected_stat[] = {WP_OD_ejections_detected_consecutive_5xx,
                                    WP_OD_ejections_detected_consecutive_gateway_failure,
                                    WP_OD_ejections_detected_consecutive_local_origin_failure};
static const int enforced_stat[] = {WP_OD_ejections_enforced_consecutive_5xx,
                                    WP_OD_ejections_enforced_consecutive_gateway_failure,
                                    WP_OD_ejections_enforced_consecutive_local_origin_failure};

/* ---------- setup ---------- */

static uint32_t reg(wp_stats *st, const char *stat_name, const char *name, bool gauge)
{
    wf_strbuf b = {0};
    wf_strbuf_printf(&b, "cluster.%s.%s", stat_name, name);
    uint32_t slot = WP_STAT_INVALID;
    if (!wf_strbuf_failed(&b))
        slot = gauge ? wp_stats_gauge(st, b.data) : wp_stats_counter(st, b.data);
    wf_strbuf_free(&b);
    return slot;
}

int wp_od_init(wp_od_cluster *od, const wp_cluster *c, const char *stat_name, wp_stats *store,
               uint32_t membership_healthy, uint64_t now_ms)
{
    memset(od, 0, sizeof(*od));
    for (int i = 0; i < WP_OD_NSTATS; i++)
        od->slot[i] = WP_STAT_INVALID;
    od->membership_healthy = membership_healthy;
    od->lb_healthy_panic = reg(store, stat_name, "lb_healthy_panic", false);
    od->next_sweep = UINT64_MAX;
    if (!c->outlier.enabled)
        return 0;
    od->hosts = calloc(c->nendpoints ? c->nendpoints : 1, sizeof(*od->hosts));
    if (!od->hosts)
        return -1;
    od->nhosts = c->nendpoints;
    char name[96];
    for (int i = 0; i < WP_OD_NSTATS; i++) {
        snprintf(name, sizeof(name), "outlier_detection.%s", od_names[i]);
        od->slot[i] = reg(store, stat_name, name, od_gauge[i]);
    }
    od->next_sweep = now_ms + c->outlier.interval_ms;
    return 0;
}

void wp_od_free(wp_od_cluster *od)
{
    if (!od)
        return;
    free(od->hosts);
    od->hosts = NULL;
    od->nhosts = 0;
}

/* ---------- ejection (the worker that crossed a threshold) ---------- */

static void count(wp_stats_shard *sh, const wp_od_cluster *od, int which, int64_t delta)
{
    wp_stat_add(sh, od->slot[which], delta);
}

static uint32_t enforcing(const wp_outlier_config *cfg, wp_od_type t)
{
    return t == WP_OD_5XX       ? cfg->enforcing_consecutive_5xx
           : t == WP_OD_GATEWAY ? cfg->enforcing_consecutive_gateway_failure
                                : cfg->enforcing_consecutive_local_origin_failure;
}

/* Envoy's ejectHost percent rule for one more ejection when `ejected` hosts are out. */
static bool room_for_one(const wp_outlier_config *cfg, size_t nhosts, unsigned ejected)
{
    if (cfg->always_eject_one_host && ejected == 0)
        return true;
    return ((uint64_t)ejected + 1) * 100 <= (uint64_t)cfg->max_ejection_percent * nhosts;
}

/* Reserves one ejection slot of the cluster (CAS loop); false when the percent forbids it. */
static bool reserve(wp_od_cluster *od, const wp_outlier_config *cfg)
{
    unsigned a = atomic_load_explicit(&od->ejected, memory_order_relaxed);
    do {
        if (!room_for_one(cfg, od->nhosts, a))
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&od->ejected, &a, a + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

/* The host is claimed (EJECTING) and a slot reserved: fill its ejection and publish it. */
static void mark_ejected(wp_od_cluster *od, const wp_cluster *c, size_t i, wp_stats_shard *sh,
                         uint64_t now_ms, uint64_t rnd)
{
    const wp_outlier_config *cfg = &c->outlier;
    wp_od_host *h = &od->hosts[i];
    uint64_t m = atomic_load_explicit(&h->multiplier, memory_order_relaxed);
    if (m * cfg->base_ejection_time_ms < cfg->max_ejection_time_ms + cfg->base_ejection_time_ms)
        atomic_fetch_add_explicit(&h->multiplier, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->num_ejections, 1, memory_order_relaxed);
    atomic_store_explicit(&h->ejected_at, now_ms, memory_order_relaxed);
    atomic_store_explicit(&h->jitter_ms, (rnd >> 32) % (cfg->max_ejection_time_jitter_ms + 1),
                          memory_order_relaxed);
    atomic_store_explicit(&h->state, WP_OD_EJECTED, memory_order_release);
    count(sh, od, WP_OD_ejections_active, 1);
    count(sh, od, WP_OD_ejections_enforced_total, 1);
    if (wp_endpoint_healthy(&c->endpoints[i]))
        wp_stat_add(sh, od->membership_healthy, -1);
}

/* Envoy's ejectHost; true when the host was ejected. */
static bool try_eject(wp_od_cluster *od, const wp_cluster *c, size_t i, wp_od_type t,
                      wp_stats_shard *sh, uint64_t now_ms, uint64_t rnd)
{
    const wp_outlier_config *cfg = &c->outlier;
    if (!room_for_one(cfg, od->nhosts, atomic_load_explicit(&od->ejected, memory_order_relaxed))) {
        count(sh, od, WP_OD_ejections_overflow, 1);
        return false;
    }
    if (t == WP_OD_5XX)
        count(sh, od, WP_OD_ejections_total, 1); /* deprecated; 5xx (and success rate) only */
    if (rnd % 100 >= enforcing(cfg, t))
        return false;
    if (!reserve(od, cfg)) { /* another worker took the last slot meanwhile */
        count(sh, od, WP_OD_ejections_overflow, 1);
        return false;
    }
    count(sh, od, enforced_stat[t], 1);
    mark_ejected(od, c, i, sh, now_ms, rnd);
    WF_LOG(WF_LC_upstream, WF_LOG_DEBUG, "cluster %s: host %s ejected by outlier detection",
           c->name, c->endpoints[i].addr.text);
    return true;
}

/* A counter reached its threshold (Envoy's onConsecutiveErrorWorker). */
static void detected(wp_od_cluster *od, const wp_cluster *c, size_t i, wp_od_type t,
                     wp_stats_shard *sh, uint64_t now_ms, uint64_t rnd)
{
    wp_od_host *h = &od->hosts[i];
    unsigned st = WP_OD_IN;
    if (!atomic_compare_exchange_strong_explicit(&h->state, &st, WP_OD_EJECTING,
                                                 memory_order_acquire, memory_order_relaxed)) {
        /* ejected: dropped as Envoy does; a detection running on another worker: counting
         * restarts (Envoy would run this one right after it) */
        if (st == WP_OD_EJECTING)
            atomic_store_explicit(&h->consecutive[t], 0, memory_order_relaxed);
        return;
    }
    count(sh, od, detected_stat[t], 1);
    bool ejected = try_eject(od, c, i, t, sh, now_ms, rnd);
    if (t == WP_OD_5XX)
        count(sh, od, WP_OD_ejections_consecutive_5xx, 1); /* deprecated */
    atomic_store_explicit(&h->consecutive[t], 0, memory_order_relaxed);
    if (!ejected)
        atomic_store_explicit(&h->state, WP_OD_IN, memory_order_release);
}

/* ---------- results (hot path) ---------- */

static uint32_t threshold(const wp_outlier_config *cfg, wp_od_type t)
{
    return t == WP_OD_5XX       ? cfg->consecutive_5xx
           : t == WP_OD_GATEWAY ? cfg->consecutive_gateway_failure
                                : cfg->consecutive_local_origin_failure;
}

static void success(wp_od_host *h, wp_od_type t)
{
    if (atomic_load_explicit(&h->consecutive[t], memory_order_relaxed))
        atomic_store_explicit(&h->consecutive[t], 0, memory_order_relaxed);
}

/* One more consecutive failure; true when it reached the threshold exactly. */
static bool failure(wp_od_host *h, const wp_outlier_config *cfg, wp_od_type t)
{
    unsigned before = atomic_fetch_add_explicit(&h->consecutive[t], 1, memory_order_relaxed);
    return before + 1 == threshold(cfg, t);
}

/* Envoy's putHttpResponseCode: gateway counter first, then 5xx. */
static void put_code(wp_od_cluster *od, const wp_cluster *c, size_t i, unsigned code,
                     wp_stats_shard *sh, uint64_t now_ms, uint64_t rnd)
{
    wp_od_host *h = &od->hosts[i];
    if (code < 500 || code > 599) {
        success(h, WP_OD_5XX);
        success(h, WP_OD_GATEWAY);
        return;
    }
    if (code < 502 || code > 504)
        success(h, WP_OD_GATEWAY);
    else if (failure(h, &c->outlier, WP_OD_GATEWAY))
        detected(od, c, i, WP_OD_GATEWAY, sh, now_ms, rnd);
    if (failure(h, &c->outlier, WP_OD_5XX))
        detected(od, c, i, WP_OD_5XX, sh, now_ms, rnd);
}

void wp_od_put(wp_od_cluster *od, const wp_cluster *c, size_t host, wp_od_result r, unsigned code,
               wp_stats_shard *sh, uint64_t now_ms, uint64_t rnd)
{
    if (!od->hosts || host >= od->nhosts)
        return;
    bool split = c->outlier.split_external_local_origin_errors;
    wp_od_host *h = &od->hosts[host];
    switch (r) {
    case WP_OD_HTTP:
        put_code(od, c, host, code, sh, now_ms, rnd);
        break;
    case WP_OD_CONNECT_SUCCESS:
        if (split)
            success(h, WP_OD_LOCAL_ORIGIN);
        break;
    case WP_OD_CONNECT_FAILED:
    case WP_OD_TIMEOUT:
        if (!split)
            put_code(od, c, host, r == WP_OD_TIMEOUT ? 504 : 503, sh, now_ms, rnd);
        else if (failure(h, &c->outlier, WP_OD_LOCAL_ORIGIN))
            detected(od, c, host, WP_OD_LOCAL_ORIGIN, sh, now_ms, rnd);
        break;
    }
}

/* ---------- the interval sweep (main thread) ---------- */

static void uneject_if_due(wp_od_cluster *od, const wp_cluster *c, size_t i, wp_stats_shard *sh,
                           uint64_t now_ms)
{
    const wp_outlier_config *cfg = &c->outlier;
    wp_od_host *h = &od->hosts[i];
    if (atomic_load_explicit(&h->state, memory_order_acquire) != WP_OD_EJECTED)
        return;
    uint64_t m = atomic_load_explicit(&h->multiplier, memory_order_relaxed);
    uint64_t t = m * cfg->base_ejection_time_ms;
    if (t > cfg->max_ejection_time_ms)
        t = cfg->max_ejection_time_ms;
    t += atomic_load_explicit(&h->jitter_ms, memory_order_relaxed);
    uint64_t at = atomic_load_explicit(&h->ejected_at, memory_order_relaxed);
    if (now_ms < at || now_ms - at < t)
        return;
    for (int k = 0; k < 3; k++)
        atomic_store_explicit(&h->consecutive[k], 0, memory_order_relaxed);
    atomic_store_explicit(&h->unejected_at, now_ms ? now_ms : 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&od->ejected, 1, memory_order_relaxed);
    atomic_store_explicit(&h->state, WP_OD_IN, memory_order_release);
    count(sh, od, WP_OD_ejections_active, -1);
    if (wp_endpoint_healthy(&c->endpoints[i]))
        wp_stat_add(sh, od->membership_healthy, 1);
    WF_LOG(WF_LC_upstream, WF_LOG_DEBUG, "cluster %s: host %s back from outlier ejection", c->name,
           c->endpoints[i].addr.text);
}

/* A host in service for at least one interval since its un-ejection: multiplier - 1. */
static void decay(wp_od_host *h, uint64_t now_ms, uint64_t interval_ms)
{
    if (atomic_load_explicit(&h->state, memory_order_relaxed) != WP_OD_IN)
        return;
    uint64_t u = atomic_load_explicit(&h->unejected_at, memory_order_relaxed);
    if (u == 0 || now_ms < u || now_ms - u < interval_ms)
        return;
    unsigned m = atomic_load_explicit(&h->multiplier, memory_order_relaxed);
    while (m > 0 && !atomic_compare_exchange_weak_explicit(
                        &h->multiplier, &m, m - 1, memory_order_relaxed, memory_order_relaxed))
        ;
}

uint64_t wp_od_sweep(wp_od_cluster *od, const wp_cluster *c, wp_stats_shard *sh, uint64_t now_ms)
{
    if (!od->hosts)
        return UINT64_MAX;
    for (size_t i = 0; i < od->nhosts; i++)
        uneject_if_due(od, c, i, sh, now_ms);
    for (size_t i = 0; i < od->nhosts; i++)
        decay(&od->hosts[i], now_ms, c->outlier.interval_ms);
    od->next_sweep = now_ms + c->outlier.interval_ms;
    return od->next_sweep;
}

/* ---------- panic ---------- */

bool wp_od_lb_panic(const wp_od_cluster *od, const wp_cluster *c, size_t healthy,
                    wp_stats_shard *sh)
{
    uint64_t n = c->nendpoints;
    if (n == 0 || (uint64_t)healthy * 100 >= (uint64_t)c->healthy_panic_threshold * n)
        return false;
    wp_stat_add(sh, od->lb_healthy_panic, 1);
    return true;
}

/* ---------- proxy glue ---------- */

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

uint64_t wp_outlier_server_tick(wp_server *srv, wp_stats_shard *sh, uint64_t now_ms)
{
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < srv->gen->cfg->nclusters; i++) {
        wp_od_cluster *od = &srv->gen->crt[i].od;
        if (!od->hosts)
            continue;
        if (now_ms >= od->next_sweep)
            wp_od_sweep(od, &srv->gen->cfg->clusters[i], sh, now_ms);
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
