/*
 * test_lb.c - the load balancer (proxy/upstream/lb.h): smooth weighted round robin and its
 * distribution, least request's two choices, random, EDS health and outlier ejections, the
 * panic threshold (and its stat), previous_hosts re-picks bounded by the retry maximum, and
 * -1 when no host can be chosen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/conn.h"
#include "proxy/server/server.h"
#include "proxy/upstream/lb.h"

#define NMAX 8

typedef struct {
    wp_stats *st;
    wp_stats_shard *sh;
    wp_endpoint eps[NMAX];
    wp_cluster c;
    wp_od_cluster od;
    uint64_t rng;
    wp_lb lb;
} fx;

/* n hosts of weight 1, HEALTHY; outlier detection on (nothing ejected); threshold 50 %. */
static void setup(fx *f, size_t n, wp_lb_policy policy)
{
    memset(f, 0, sizeof(*f));
    f->st = wp_stats_new(2);
    assert_non_null(f->st);
    f->sh = wp_stats_get_shard(f->st, 0);
    f->c.name = "c";
    f->c.endpoints = f->eps;
    f->c.nendpoints = n;
    f->c.lb_policy = policy;
    f->c.healthy_panic_threshold = 50;
    f->c.outlier = (wp_outlier_config){.enabled = true, .max_ejection_percent = 100};
    for (size_t i = 0; i < n; i++) {
        f->eps[i].weight = 1;
        f->eps[i].health = WP_HEALTH_HEALTHY;
    }
    assert_int_equal(wp_od_init(&f->od, &f->c, "c", f->st, WP_STAT_INVALID, 0), 0);
    f->rng = 0x9E3779B97F4A7C15ULL;
    assert_int_equal(wp_lb_init(&f->lb, &f->c, &f->od, f->sh, &f->rng), 0);
}

static void teardown_fx(fx *f)
{
    wp_lb_free(&f->lb);
    wp_lb_free(&f->lb); /* idempotent */
    wp_od_free(&f->od);
    wp_stats_free(f->st);
}

static int64_t panics(fx *f)
{
    return wp_stats_value(f->st, wp_stats_counter(f->st, "cluster.c.lb_healthy_panic"));
}

static void eject(fx *f, size_t i)
{
    atomic_store(&f->od.hosts[i].state, WP_OD_EJECTED);
}

/* picks hosts `times` times with ctx, counting each host in counts[] (-1 asserted absent) */
static void pick_n(fx *f, const wp_lb_context *ctx, int times, int counts[NMAX])
{
    memset(counts, 0, NMAX * sizeof(int));
    for (int k = 0; k < times; k++) {
        int h = wp_lb_choose_host(&f->lb, ctx);
        assert_true(h >= 0 && h < (int)f->c.nendpoints);
        counts[h]++;
    }
}

static void test_rr_equal_weights_rotate(void **state)
{
    (void)state;
    fx f;
    setup(&f, 3, WP_LB_ROUND_ROBIN);
    int seq[9];
    for (int k = 0; k < 9; k++)
        seq[k] = wp_lb_choose_host(&f.lb, NULL);
    for (int k = 3; k < 9; k++)
        assert_int_equal(seq[k], seq[k - 3]); /* period 3 */
    assert_true(seq[0] != seq[1] && seq[1] != seq[2] && seq[0] != seq[2]);
    assert_int_equal(panics(&f), 0);
    teardown_fx(&f);
}

/* Weights 1, 2, 3 (and 0, read as 1): over whole periods each host gets exactly its share,
 * and the smooth order never gives the heaviest host three times in a row. */
static void test_rr_weights_distribution(void **state)
{
    (void)state;
    fx f;
    setup(&f, 4, WP_LB_ROUND_ROBIN);
    f.eps[0].weight = 1;
    f.eps[1].weight = 2;
    f.eps[2].weight = 3;
    f.eps[3].weight = 0;
    int counts[NMAX], run = 0, last = -1;
    memset(counts, 0, sizeof(counts));
    for (int k = 0; k < 700; k++) { /* 100 periods of 1+2+3+1 */
        int h = wp_lb_choose_host(&f.lb, NULL);
        counts[h]++;
        run = h == last ? run + 1 : 1;
        last = h;
        assert_true(run <= 2);
    }
    assert_int_equal(counts[0], 100);
    assert_int_equal(counts[1], 200);
    assert_int_equal(counts[2], 300);
    assert_int_equal(counts[3], 100);
    teardown_fx(&f);
}

/* Two random choices, fewer requests in flight wins: a loaded host is taken only when both
 * draws land on it (about 1 in 4 with two hosts); once the load is gone both get half. */
static void test_least_request_prefers_fewer_active(void **state)
{
    (void)state;
    fx f;
    setup(&f, 2, WP_LB_LEAST_REQUEST);
    for (int i = 0; i < 10; i++)
        wp_lb_request_started(&f.lb, 0);
    int counts[NMAX];
    pick_n(&f, NULL, 4000, counts);
    assert_in_range(counts[0], 800, 1200); /* both draws on host 0: 1/4 */
    assert_in_range(counts[1], 2800, 3200);
    for (int i = 0; i < 10; i++)
        wp_lb_request_finished(&f.lb, 0);
    wp_lb_request_finished(&f.lb, 0); /* never below 0 */
    assert_int_equal(f.lb.active[0], 0);
    pick_n(&f, NULL, 4000, counts); /* ties go to the first draw: uniform */
    assert_in_range(counts[0], 1800, 2200);
    assert_in_range(counts[1], 1800, 2200);
    teardown_fx(&f);
}

/* Three hosts, the middle one loaded: it is chosen only when both draws are it (1/9). */
static void test_least_request_three_hosts(void **state)
{
    (void)state;
    fx f;
    setup(&f, 3, WP_LB_LEAST_REQUEST);
    wp_lb_request_started(&f.lb, 1);
    int counts[NMAX];
    pick_n(&f, NULL, 9000, counts);
    assert_in_range(counts[1], 800, 1200);
    assert_in_range(counts[0], 3600, 4400);
    assert_in_range(counts[2], 3600, 4400);
    teardown_fx(&f);
}

static void test_random_uniform_over_usable(void **state)
{
    (void)state;
    fx f;
    setup(&f, 4, WP_LB_RANDOM);
    f.eps[3].health = WP_HEALTH_DRAINING; /* 3 of 4 usable: no panic */
    int counts[NMAX];
    pick_n(&f, NULL, 6000, counts);
    assert_int_equal(counts[3], 0);
    for (int i = 0; i < 3; i++)
        assert_in_range(counts[i], 1800, 2200);
    assert_int_equal(panics(&f), 0);
    teardown_fx(&f);
}

/* EDS UNHEALTHY / TIMEOUT and ejected hosts are skipped; DEGRADED and UNKNOWN are used. */
static void test_health_and_ejection(void **state)
{
    (void)state;
    fx f;
    setup(&f, 6, WP_LB_ROUND_ROBIN);
    f.eps[0].health = WP_HEALTH_UNHEALTHY;
    f.eps[1].health = WP_HEALTH_TIMEOUT;
    f.eps[2].health = WP_HEALTH_DEGRADED;
    f.eps[3].health = WP_HEALTH_UNKNOWN;
    eject(&f, 4); /* usable: 2, 3, 5 = 50 %: not in panic */
    int counts[NMAX];
    pick_n(&f, NULL, 300, counts);
    assert_int_equal(counts[0] + counts[1] + counts[4], 0);
    assert_int_equal(counts[2], 100);
    assert_int_equal(counts[3], 100);
    assert_int_equal(counts[5], 100);
    assert_int_equal(panics(&f), 0);
    teardown_fx(&f);
}

/* 1 usable host of 4 (25 % < 50 %): panic, every host gets traffic and each pick counts
 * lb_healthy_panic; with the threshold at 0 only the usable host is chosen. */
static void test_panic_when_too_few_healthy(void **state)
{
    (void)state;
    fx f;
    setup(&f, 4, WP_LB_ROUND_ROBIN);
    f.eps[0].health = WP_HEALTH_UNHEALTHY;
    f.eps[1].health = WP_HEALTH_UNHEALTHY;
    eject(&f, 2);
    int counts[NMAX];
    pick_n(&f, NULL, 40, counts);
    for (int i = 0; i < 4; i++)
        assert_int_equal(counts[i], 10);
    assert_int_equal(panics(&f), 40);
    assert_true(f.lb.panic);
    f.c.healthy_panic_threshold = 0;
    pick_n(&f, NULL, 8, counts);
    assert_int_equal(counts[3], 8);
    assert_int_equal(panics(&f), 40);
    assert_false(f.lb.panic);
    teardown_fx(&f);
}

/* No usable host and no panic (threshold 0, Istio's default): -1; so with no host at all. */
static void test_no_healthy_host(void **state)
{
    (void)state;
    fx f;
    setup(&f, 3, WP_LB_LEAST_REQUEST);
    f.c.healthy_panic_threshold = 0;
    for (int i = 0; i < 3; i++)
        f.eps[i].health = WP_HEALTH_UNHEALTHY;
    assert_int_equal(wp_lb_choose_host(&f.lb, NULL), -1);
    f.c.lb_policy = WP_LB_ROUND_ROBIN;
    assert_int_equal(wp_lb_choose_host(&f.lb, NULL), -1);
    f.c.lb_policy = WP_LB_RANDOM;
    assert_int_equal(wp_lb_choose_host(&f.lb, NULL), -1);
    f.c.nendpoints = 0;
    f.c.healthy_panic_threshold = 50;
    assert_int_equal(wp_lb_choose_host(&f.lb, NULL), -1);
    assert_int_equal(panics(&f), 0);
    teardown_fx(&f);
}

typedef struct {
    bool tried[NMAX];
    int calls;
} tried_set;

static bool skip_tried(void *owner, int host)
{
    tried_set *t = owner;
    t->calls++;
    return t->tried[host];
}

/* previous_hosts: with retries left, a tried host is picked again until an untried one comes;
 * with no re-pick allowed the first choice stays; when every host was tried the re-picks stop
 * at the maximum (bounded by 16 per host) and the last pick is kept. */
static void test_previous_hosts_retry_max(void **state)
{
    (void)state;
    fx f;
    setup(&f, 3, WP_LB_ROUND_ROBIN);
    tried_set t = {.tried = {true, true, false}};
    wp_lb_context ctx = {
        .should_select_another_host = skip_tried, .owner = &t, .host_selection_retry_max = 5};
    for (int k = 0; k < 10; k++)
        assert_int_equal(wp_lb_choose_host(&f.lb, &ctx), 2);
    ctx.host_selection_retry_max = 0;
    int counts[NMAX];
    pick_n(&f, &ctx, 30, counts);
    assert_int_equal(counts[0], 10); /* plain round robin: no re-pick */
    assert_int_equal(counts[2], 10);
    assert_int_equal(t.calls, 10 * 3); /* 0, 1, 2 asked each time; never when max is 0 */
    t.tried[2] = true;
    t.calls = 0;
    ctx.host_selection_retry_max = 1000;
    int h = wp_lb_choose_host(&f.lb, &ctx);
    assert_true(h >= 0);
    assert_int_equal(t.calls, 16 * 3);
    teardown_fx(&f);
}

/* The seeded generator is the worker's: the same state gives the same picks. */
static void test_random_draws_follow_generator(void **state)
{
    (void)state;
    fx a, b;
    setup(&a, 5, WP_LB_RANDOM);
    setup(&b, 5, WP_LB_RANDOM);
    for (int k = 0; k < 50; k++)
        assert_int_equal(wp_lb_choose_host(&a.lb, NULL), wp_lb_choose_host(&b.lb, NULL));
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int k = 0; k < 50; k++)
        wp_rng_next(&s);
    assert_true(s == a.rng);
    /* ... which is the worker's wp_rand step */
    wp_worker *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->rng = s = 12345;
    for (int k = 0; k < 50; k++)
        assert_true(wp_rand(w) == wp_rng_next(&s));
    free(w);
    teardown_fx(&a);
    teardown_fx(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rr_equal_weights_rotate),
        cmocka_unit_test(test_rr_weights_distribution),
        cmocka_unit_test(test_least_request_prefers_fewer_active),
        cmocka_unit_test(test_least_request_three_hosts),
        cmocka_unit_test(test_random_uniform_over_usable),
        cmocka_unit_test(test_health_and_ejection),
        cmocka_unit_test(test_panic_when_too_few_healthy),
        cmocka_unit_test(test_no_healthy_host),
        cmocka_unit_test(test_previous_hosts_retry_max),
        cmocka_unit_test(test_random_draws_follow_generator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
