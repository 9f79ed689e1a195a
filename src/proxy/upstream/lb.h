/*
 * upstream/lb.h - load balancers of one cluster on one worker (Envoy's
 * source/common/upstream/load_balancer_impl.cc; docs intro/arch_overview/upstream/
 * load_balancing/load_balancers, panic_threshold; API Cluster.lb_policy,
 * common_lb_config.healthy_panic_threshold, RouteAction.RetryPolicy.retry_host_predicate
 * previous_hosts and host_selection_retry_max_attempts).
 *
 * Input: the cluster's host set as the config and outlier detection show it (endpoints with
 * their load_balancing_weight and EDS health, ejections), and a load-balancer context per
 * pick. Output: an endpoint index of the cluster, or -1 when no host can be chosen. The load
 * balancer knows no request, stream or connection; it is asked by the router (its
 * LoadBalancerContext) and its answer goes to a connection pool.
 *
 * What is followed:
 *  - Hosts: EDS UNKNOWN, HEALTHY and DEGRADED hosts that outlier detection has not ejected
 *    are usable (outlier.h wp_od_host_usable). Below healthy_panic_threshold percent usable
 *    hosts the pick is in panic and every host is a candidate, each panic pick counting
 *    cluster.<name>.lb_healthy_panic (outlier.h wp_od_lb_panic). No candidate: -1 (the
 *    caller answers 503 UH no_healthy_upstream).
 *  - ROUND_ROBIN: smooth weighted round robin (nginx's; equal weights give a plain
 *    rotation); weights are load_balancing_weight, 0 counting as 1.
 *  - LEAST_REQUEST: Envoy's default power of two choices: two random candidates, the one
 *    with fewer requests in flight on this worker wins (ties: the first).
 *  - RANDOM: a uniform random candidate.
 *  - Context: while the pick is a host the context wants avoided
 *    (should_select_another_host, Envoy's LoadBalancerContext::shouldSelectAnotherHost, the
 *    previous_hosts predicate) the pick is made again, at most host_selection_retry_max more
 *    times (hostSelectionRetryCount), bounded by 16 picks per host so it never spins; the
 *    last pick is kept.
 * Ring hash and Maglev go here as further policies (a hash key in the context).
 *
 * Threads and ownership: a wp_lb belongs to one worker (its round-robin and request-count
 * state is that worker's); the cluster and outlier state it reads are borrowed and outlive
 * it (the generation). Random draws come from the worker's generator (rng, borrowed), so a
 * seeded worker draws the same sequence as before. No allocation per pick.
 */
#ifndef WEFT_PROXY_UPSTREAM_LB_H
#define WEFT_PROXY_UPSTREAM_LB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/config/config.h"
#include "proxy/upstream/outlier.h"
#include "proxy/stats/stats.h"

/* A worker's random generator step (xorshift64*, state never 0): the same step as the
 * worker's wp_rand, on the same state, so a seeded worker's draws do not change. */
static inline uint64_t wp_rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* One cluster's load balancer on one worker. */
typedef struct wp_lb {
    const wp_cluster *c;     /* hosts, weights, EDS health, policy, panic threshold (borrowed) */
    const wp_od_cluster *od; /* ejections and the lb_healthy_panic slot (borrowed) */
    wp_stats_shard *sh;      /* the worker's stats shard (lb_healthy_panic) */
    uint64_t *rng;           /* the worker's generator state */
    int64_t *cw;             /* smooth weighted round robin: current weight per host */
    uint32_t *active;        /* requests in flight per host on this worker (least request) */
    bool panic;              /* the current pick is in panic mode */
} wp_lb;

/* What the caller of one pick wants (Envoy's LoadBalancerContext). NULL: nothing. */
typedef struct wp_lb_context {
    /* true when host should not be taken if another pick may find a better one */
    bool (*should_select_another_host)(void *owner, int host);
    void *owner;                       /* passed back to the callback */
    uint32_t host_selection_retry_max; /* further picks allowed while the callback says so */
} wp_lb_context;

/* Sets lb up for cluster c (c, od, sh and rng borrowed; they outlive lb). 0, or -1 on out of
 * memory (lb is then safe to wp_lb_free). */
int wp_lb_init(wp_lb *lb, const wp_cluster *c, const wp_od_cluster *od, wp_stats_shard *sh,
               uint64_t *rng);
/* Frees what wp_lb_init allocated. NULL-safe, idempotent. */
void wp_lb_free(wp_lb *lb);

/* Chooses a host of the cluster for one request: its endpoint index, or -1 when there is no
 * usable host (and no panic). ctx may be NULL. */
int wp_lb_choose_host(wp_lb *lb, const wp_lb_context *ctx);

/* A request started / finished on host (least request's count; the caller pairs them). */
static inline void wp_lb_request_started(wp_lb *lb, int host)
{
    lb->active[host]++;
}
static inline void wp_lb_request_finished(wp_lb *lb, int host)
{
    if (lb->active[host])
        lb->active[host]--;
}

#endif
