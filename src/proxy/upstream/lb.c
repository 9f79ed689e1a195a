/*
 * upstream/lb.c - round robin, least request and random host selection with the panic
 * threshold and the previous_hosts re-pick (lb.h).
 */
#include "proxy/upstream/lb.h"

#include <stdlib.h>

int wp_lb_init(wp_lb *lb, const wp_cluster *c, const wp_od_cluster *od, wp_stats_shard *sh,
               uint64_t *rng)
{
    size_t n = c->nendpoints ? c->nendpoints : 1;
    *lb = (wp_lb){.c = c, .od = od, .sh = sh, .rng = rng};
    lb->cw = calloc(n, sizeof(*lb->cw));
    lb->active = calloc(n, sizeof(*lb->active));
    return lb->cw && lb->active ? 0 : -1;
}

void wp_lb_free(wp_lb *lb)
{
    if (!lb)
        return;
    free(lb->cw);
    free(lb->active);
    lb->cw = NULL;
    lb->active = NULL;
}

/* EDS health and outlier ejection (outlier.h); in panic mode every host. */
static bool host_ok(const wp_lb *lb, size_t i)
{
    return lb->panic || wp_od_host_usable(lb->od, lb->c, i);
}

/* Smooth weighted round robin over the candidates (equal weights: plain rotation). */
static int pick_rr(wp_lb *lb)
{
    const wp_cluster *c = lb->c;
    int best = -1;
    int64_t total = 0;
    for (size_t i = 0; i < c->nendpoints; i++) {
        if (!host_ok(lb, i))
            continue;
        int64_t wgt = c->endpoints[i].weight ? c->endpoints[i].weight : 1;
        lb->cw[i] += wgt;
        total += wgt;
        if (best < 0 || lb->cw[i] > lb->cw[best])
            best = (int)i;
    }
    if (best >= 0)
        lb->cw[best] -= total;
    return best;
}

/* Another worker may eject a host between the count and this pass: then the last usable
 * host is taken (-1 when none is left). */
static int pick_random(wp_lb *lb, size_t candidates)
{
    uint64_t k = wp_rng_next(lb->rng) % candidates;
    int last = -1;
    for (size_t i = 0; i < lb->c->nendpoints; i++) {
        if (!host_ok(lb, i))
            continue;
        if (k-- == 0)
            return (int)i;
        last = (int)i;
    }
    return last;
}

static int pick(wp_lb *lb)
{
    const wp_cluster *c = lb->c;
    size_t healthy = 0;
    lb->panic = false;
    for (size_t i = 0; i < c->nendpoints; i++)
        healthy += host_ok(lb, i);
    lb->panic = wp_od_lb_panic(lb->od, c, healthy, lb->sh);
    if (lb->panic)
        healthy = c->nendpoints;
    if (healthy == 0)
        return -1;
    switch (c->lb_policy) {
    case WP_LB_RANDOM:
        return pick_random(lb, healthy);
    case WP_LB_LEAST_REQUEST: {
        int a = pick_random(lb, healthy), b = pick_random(lb, healthy);
        if (a < 0 || b < 0)
            return a < 0 ? b : a;
        return lb->active[b] < lb->active[a] ? b : a;
    }
    default:
        return pick_rr(lb);
    }
}

int wp_lb_choose_host(wp_lb *lb, const wp_lb_context *ctx)
{
    int host = pick(lb);
    if (!ctx || !ctx->should_select_another_host)
        return host;
    uint32_t repick = ctx->host_selection_retry_max;
    if (repick > 16 * lb->c->nendpoints) /* enough to find another host, never a spin */
        repick = (uint32_t)(16 * lb->c->nendpoints);
    for (uint32_t k = 0;
         host >= 0 && k < repick && ctx->should_select_another_host(ctx->owner, host); k++)
        host = pick(lb);
    return host;
}
