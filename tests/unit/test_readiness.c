/*
 * test_readiness.c - readiness policies (src/proxy/server/admin/readiness.h): Istio's default
 * (ready after the first CDS + LDS and workers, stays ready without a control plane, pilot-agent's
 * reason texts), static config, draining, and the opt-in control-plane policy with its grace period
 * and stability hysteresis (a reconnect loop must never flip it back to ready).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/server/admin/readiness.h"

#define GRACE     10000u
#define STABILITY 15000u

static wp_readiness make(wp_readiness_mode mode)
{
    wp_readiness_policy p = {.mode = mode, .grace_ms = GRACE, .stability_ms = STABILITY};
    wp_readiness r;
    wp_readiness_init(&r, &p);
    return r;
}

/* Connected, first CDS and LDS applied, workers running: ready at t = 1000. */
static wp_readiness make_ready(wp_readiness_mode mode)
{
    wp_readiness r = make(mode);
    wp_readiness_stream_up(&r, 100);
    wp_readiness_cds_update(&r, true, 200);
    wp_readiness_lds_update(&r, true, 300);
    wp_readiness_workers_started(&r, 400);
    assert_true(wp_readiness_check(&r, 1000, NULL, 0));
    return r;
}

static bool ready_at(wp_readiness *r, uint64_t t)
{
    return wp_readiness_check(r, t, NULL, 0);
}

static void expect_reason(wp_readiness *r, uint64_t t, const char *want)
{
    char reason[512];
    assert_false(wp_readiness_check(r, t, reason, sizeof(reason)));
    assert_string_equal(reason, want);
}

static void test_defaults_and_names(void **state)
{
    (void)state;
    wp_readiness_policy p;
    wp_readiness_policy_default(&p);
    assert_int_equal(p.mode, WP_READINESS_ISTIO);
    assert_int_equal(p.grace_ms, 10000);
    assert_int_equal(p.stability_ms, 15000);
    wp_readiness_mode m = WP_READINESS_ISTIO;
    assert_int_equal(wp_readiness_mode_parse("control-plane", &m), 0);
    assert_int_equal(m, WP_READINESS_CONTROL_PLANE);
    assert_int_equal(wp_readiness_mode_parse("istio", &m), 0);
    assert_int_equal(m, WP_READINESS_ISTIO);
    assert_int_equal(wp_readiness_mode_parse("Istio", &m), -1);
    assert_int_equal(wp_readiness_mode_parse(NULL, &m), -1);
    assert_string_equal(wp_readiness_mode_name(WP_READINESS_CONTROL_PLANE), "control-plane");
    assert_string_equal(wp_readiness_state_name(WP_RS_CP_RECOVERING), "CONTROL_PLANE_RECOVERING");
    wp_readiness r;
    wp_readiness_init(&r, NULL);
    assert_int_equal(r.policy.mode, WP_READINESS_ISTIO);
}

/* pilot-agent's checkConfigStatus texts, in its order. */
static void test_before_first_config(void **state)
{
    (void)state;
    wp_readiness r = make(WP_READINESS_ISTIO);
    wp_readiness_workers_started(&r, 0);
    wp_readiness_stream_up(&r, 0);
    expect_reason(&r, 10,
                  "config not received from XDS server (is Istiod running?): cds updates: "
                  "0 successful, 0 rejected; lds updates: 0 successful, 0 rejected");
    assert_int_equal(wp_readiness_state_at(&r, 10), WP_RS_NO_CONFIG);
    wp_readiness_cds_update(&r, true, 20);
    expect_reason(&r, 30,
                  "config not fully received from XDS server: cds updates: 1 successful, "
                  "0 rejected; lds updates: 0 successful, 0 rejected");
    wp_readiness_lds_update(&r, false, 40);
    expect_reason(&r, 50,
                  "config received from XDS server, but was rejected: cds updates: 1 "
                  "successful, 0 rejected; lds updates: 0 successful, 1 rejected");
    wp_readiness_lds_update(&r, true, 60);
    char reason[64] = "x";
    assert_true(wp_readiness_check(&r, 70, reason, sizeof(reason)));
    assert_string_equal(reason, "");
    assert_int_equal(wp_readiness_state_at(&r, 70), WP_RS_READY);
}

/* The reason names the type whose update was rejected, and why (weft's suffix). */
static void test_rejection_names_the_type(void **state)
{
    (void)state;
    wp_readiness r = make(WP_READINESS_ISTIO);
    wp_readiness_workers_started(&r, 0);
    wp_readiness_cds_update(&r, true, 10);
    wp_readiness_lds_update(&r, false, 20);
    wp_readiness_note_rejection(&r, "LDS",
                                "Error adding/updating listener(s) 0.0.0.0_8081: cannot bind "
                                "'10.0.0.1:8081': Address already in use");
    expect_reason(&r, 30,
                  "config received from XDS server, but was rejected: cds updates: 1 "
                  "successful, 0 rejected; lds updates: 0 successful, 1 rejected; last rejected: "
                  "LDS: Error adding/updating listener(s) 0.0.0.0_8081: cannot bind "
                  "'10.0.0.1:8081': Address already in use");
    wp_readiness_lds_update(&r, true, 40);
    assert_true(wp_readiness_check(&r, 50, NULL, 0));
}

/* The same with the opt-in policy: no config, not ready, whatever the stream does. */
static void test_before_first_config_control_plane(void **state)
{
    (void)state;
    wp_readiness r = make(WP_READINESS_CONTROL_PLANE);
    wp_readiness_workers_started(&r, 0);
    for (uint64_t t = 0; t < 60000; t += 500) {
        if (t % 1000 == 0)
            wp_readiness_stream_up(&r, t);
        else
            wp_readiness_stream_down(&r, t);
        assert_false(ready_at(&r, t + 1));
    }
    assert_int_equal(wp_readiness_state_at(&r, 60000), WP_RS_NO_CONFIG);
}

static void test_workers_not_started(void **state)
{
    (void)state;
    wp_readiness r = make(WP_READINESS_ISTIO);
    wp_readiness_cds_update(&r, true, 0);
    wp_readiness_lds_update(&r, true, 0);
    expect_reason(&r, 10, "workers have not yet started");
    assert_int_equal(wp_readiness_state_at(&r, 10), WP_RS_NO_WORKERS);
    wp_readiness_workers_started(&r, 20);
    assert_true(ready_at(&r, 20));
}

/* B015: Istio's default stays ready when the control plane goes away, for as long as it is. */
static void test_istio_stays_ready_through_outage(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_ISTIO);
    wp_readiness_stream_down(&r, 2000);
    for (uint64_t t = 2000; t < 2000 + 3600u * 1000u; t += 997)
        assert_true(ready_at(&r, t));
    assert_int_equal(wp_readiness_state_at(&r, 4000000), WP_RS_READY_NO_CP);
    assert_int_equal(wp_readiness_next_change_ms(&r, 4000000), WP_READINESS_NO_CHANGE);
    /* and through a reconnect loop */
    for (uint64_t t = 4000000; t < 4060000; t += 500) {
        wp_readiness_stream_up(&r, t);
        assert_true(ready_at(&r, t + 100));
        wp_readiness_stream_down(&r, t + 200);
        assert_true(ready_at(&r, t + 300));
    }
}

static void test_static_config_ready_once_workers_run(void **state)
{
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        wp_readiness r = make((wp_readiness_mode)mode);
        wp_readiness_set_static(&r);
        expect_reason(&r, 0, "workers have not yet started");
        wp_readiness_workers_started(&r, 5);
        assert_true(ready_at(&r, 5));
        /* no control plane to lose: stream events (none expected) change nothing */
        wp_readiness_stream_down(&r, 10);
        assert_true(ready_at(&r, 10 + 10 * GRACE));
        assert_int_equal(wp_readiness_state_at(&r, 10 + 10 * GRACE), WP_RS_READY);
        assert_int_equal(wp_readiness_next_change_ms(&r, 10), WP_READINESS_NO_CHANGE);
    }
}

static void test_draining_not_ready(void **state)
{
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        wp_readiness r = make_ready((wp_readiness_mode)mode);
        wp_readiness_draining(&r, 2000);
        expect_reason(&r, 2000, "server is not live, current state is: DRAINING");
        assert_int_equal(wp_readiness_state_at(&r, 2000), WP_RS_DRAINING);
        wp_readiness_stream_down(&r, 3000);
        wp_readiness_stream_up(&r, 4000);
        assert_false(ready_at(&r, 4000 + 2 * STABILITY));
    }
    wp_readiness r = make(WP_READINESS_ISTIO);
    wp_readiness_set_static(&r);
    wp_readiness_workers_started(&r, 0);
    wp_readiness_draining(&r, 1);
    assert_false(ready_at(&r, 1));
}

/* Opt-in: ready through the grace period, not ready from grace_ms after the stream went down. */
static void test_control_plane_grace(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&r, 5000);
    assert_true(ready_at(&r, 5000));
    assert_int_equal(wp_readiness_state_at(&r, 5000), WP_RS_READY_NO_CP);
    assert_int_equal(wp_readiness_next_change_ms(&r, 5000), GRACE);
    assert_true(ready_at(&r, 5000 + GRACE - 1));
    assert_int_equal(wp_readiness_next_change_ms(&r, 5000 + GRACE - 1), 1);
    expect_reason(&r, 5000 + GRACE,
                  "control plane unreachable for 10.0s (grace period 10.0s, readiness policy "
                  "control-plane)");
    assert_int_equal(wp_readiness_state_at(&r, 5000 + GRACE), WP_RS_CP_LOST);
    assert_int_equal(wp_readiness_next_change_ms(&r, 5000 + GRACE), WP_READINESS_NO_CHANGE);
    expect_reason(&r, 47000,
                  "control plane unreachable for 42.0s (grace period 10.0s, readiness policy "
                  "control-plane)");
}

/* Nobody looked during the outage: an up event after the grace still latches "not ready". */
static void test_control_plane_lazy_evaluation(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&r, 2000);
    wp_readiness_stream_up(&r, 2000 + GRACE + 1000);
    expect_reason(&r, 2000 + GRACE + 4000,
                  "control plane reconnected 3.0s ago; ready after 15.0s connected without "
                  "interruption (outage began 14.0s ago, readiness policy control-plane)");
    assert_int_equal(wp_readiness_state_at(&r, 2000 + GRACE + 4000), WP_RS_CP_RECOVERING);
}

/* The acceptance: streams that open for 200 ms and fail for 300 ms, for 60 s, keep it
 * not ready from the grace deadline on; then a stream that stays up for stability_ms makes it
 * ready again, and not a millisecond earlier. */
static void test_reconnect_loop_stays_not_ready(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_CONTROL_PLANE);
    const uint64_t t0 = 10000;
    wp_readiness_stream_down(&r, t0);
    uint64_t t = t0;
    for (; t < t0 + 60000; t += 500) {
        for (uint64_t p = t; p < t + 500; p += 10) {
            if (p == t + 300)
                wp_readiness_stream_up(&r, p); /* 300 ms down, then 200 ms up */
            assert_true(ready_at(&r, p) == (p < t0 + GRACE));
        }
        wp_readiness_stream_down(&r, t + 500);
    }
    assert_false(ready_at(&r, t));
    /* pilot is back for good */
    wp_readiness_stream_up(&r, t + 300);
    uint64_t up = t + 300;
    assert_int_equal(wp_readiness_next_change_ms(&r, up), STABILITY);
    assert_false(ready_at(&r, up + STABILITY - 1));
    assert_int_equal(wp_readiness_state_at(&r, up + STABILITY - 1), WP_RS_CP_RECOVERING);
    assert_true(ready_at(&r, up + STABILITY));
    assert_int_equal(wp_readiness_state_at(&r, up + STABILITY), WP_RS_READY);
    assert_int_equal(wp_readiness_next_change_ms(&r, up + STABILITY), WP_READINESS_NO_CHANGE);
    /* a new outage gets a fresh grace period */
    wp_readiness_stream_down(&r, up + STABILITY + 1000);
    assert_true(ready_at(&r, up + STABILITY + 1000 + GRACE - 1));
    assert_false(ready_at(&r, up + STABILITY + 1000 + GRACE));
}

/* A reconnect within the grace period that stays up: never leaves service. */
static void test_reconnect_within_grace_stays_ready(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&r, 2000);
    wp_readiness_stream_up(&r, 2000 + GRACE - 500);
    for (uint64_t t = 2000 + GRACE - 500; t < 2000 + GRACE + 2 * STABILITY; t += 100)
        assert_true(ready_at(&r, t));
    assert_int_equal(wp_readiness_state_at(&r, 2000 + GRACE + 2 * STABILITY), WP_RS_READY);
}

/* The outage is counted from its first down: a brief reconnect that fails again before the
 * stability period does not restart the grace period. */
static void test_brief_reconnect_does_not_reset_outage(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&r, 2000);
    wp_readiness_stream_up(&r, 8000);
    assert_int_equal(wp_readiness_next_change_ms(&r, 8000), STABILITY);
    wp_readiness_stream_down(&r, 9000);
    assert_true(ready_at(&r, 2000 + GRACE - 1));
    assert_int_equal(wp_readiness_next_change_ms(&r, 9000), 2000 + GRACE - 9000);
    assert_false(ready_at(&r, 2000 + GRACE));
    /* failing again after the grace deadline turns it not ready at once */
    wp_readiness s = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&s, 2000);
    wp_readiness_stream_up(&s, 2000 + GRACE - 100);
    assert_true(ready_at(&s, 2000 + GRACE + 5000));
    wp_readiness_stream_down(&s, 2000 + GRACE + 5000);
    assert_false(ready_at(&s, 2000 + GRACE + 5000));
    /* ...and a reconnect that lasted the stability period closes the outage: fresh grace */
    wp_readiness u = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&u, 2000);
    wp_readiness_stream_up(&u, 3000);
    wp_readiness_stream_down(&u, 3000 + STABILITY);
    assert_true(ready_at(&u, 3000 + STABILITY + GRACE - 1));
    assert_false(ready_at(&u, 3000 + STABILITY + GRACE));
}

/* Repeated events in the same state change nothing; grace 0 and stability 0 act at once. */
static void test_edges(void **state)
{
    (void)state;
    wp_readiness r = make_ready(WP_READINESS_CONTROL_PLANE);
    wp_readiness_stream_down(&r, 2000);
    wp_readiness_stream_down(&r, 5000); /* repeated: the outage still began at 2000 */
    assert_false(ready_at(&r, 2000 + GRACE));
    wp_readiness_stream_up(&r, 20000);
    wp_readiness_stream_up(&r, 30000); /* repeated: up since 20000 */
    assert_true(ready_at(&r, 20000 + STABILITY));

    wp_readiness_policy p = {WP_READINESS_CONTROL_PLANE, 0, 0};
    wp_readiness z;
    wp_readiness_init(&z, &p);
    wp_readiness_stream_up(&z, 0);
    wp_readiness_cds_update(&z, true, 0);
    wp_readiness_lds_update(&z, true, 0);
    wp_readiness_workers_started(&z, 0);
    assert_true(ready_at(&z, 0));
    wp_readiness_stream_down(&z, 10);
    assert_false(ready_at(&z, 10));
    wp_readiness_stream_up(&z, 20);
    assert_true(ready_at(&z, 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_names),
        cmocka_unit_test(test_before_first_config),
        cmocka_unit_test(test_rejection_names_the_type),
        cmocka_unit_test(test_before_first_config_control_plane),
        cmocka_unit_test(test_workers_not_started),
        cmocka_unit_test(test_istio_stays_ready_through_outage),
        cmocka_unit_test(test_static_config_ready_once_workers_run),
        cmocka_unit_test(test_draining_not_ready),
        cmocka_unit_test(test_control_plane_grace),
        cmocka_unit_test(test_control_plane_lazy_evaluation),
        cmocka_unit_test(test_reconnect_loop_stays_not_ready),
        cmocka_unit_test(test_reconnect_within_grace_stays_ready),
        cmocka_unit_test(test_brief_reconnect_does_not_reset_outage),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
