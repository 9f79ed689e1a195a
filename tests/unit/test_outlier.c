/*
 * test_outlier.c - outlier detection (proxy/upstream/outlier.h) with injected time and random
 * draws: consecutive counters and thresholds, gateway failures, local-origin mapping with and
 * without the split, max_ejection_percent (Envoy >= 1.31 rule, always_eject_one_host),
 * enforcement, the ejection time multiplier, its cap and decay, jitter, the panic threshold,
 * concurrent reporters, and the bootstrap fields (defaults, aliases, rejections).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#include "proxy/bootstrap/bootstrap.h"
#include "proxy/upstream/outlier.h"

#define NHOSTS_MAX  16
#define RND_ENFORCE 0 /* rnd % 100 == 0: enforced whenever enforcing > 0 */

typedef struct {
    wp_stats *st;
    wp_stats_shard *sh;
    uint32_t membership;
    wp_endpoint eps[NHOSTS_MAX];
    wp_cluster c;
    wp_od_cluster od;
} fx;

static wp_outlier_config defaults(void)
{
    return (wp_outlier_config){.enabled = true,
                               .consecutive_5xx = 5,
                               .consecutive_gateway_failure = 5,
                               .consecutive_local_origin_failure = 5,
                               .enforcing_consecutive_5xx = 100,
                               .enforcing_consecutive_local_origin_failure = 100,
                               .max_ejection_percent = 100,
                               .interval_ms = 100,
                               .base_ejection_time_ms = 1000,
                               .max_ejection_time_ms = 3000};
}

static void setup(fx *f, size_t nhosts, wp_outlier_config oc)
{
    memset(f, 0, sizeof(*f));
    f->st = wp_stats_new(4);
    assert_non_null(f->st);
    f->sh = wp_stats_get_shard(f->st, 0);
    f->membership = wp_stats_gauge(f->st, "cluster.c.membership_healthy");
    wp_stat_add(f->sh, f->membership, (int64_t)nhosts);
    f->c.name = "c";
    f->c.endpoints = f->eps;
    f->c.nendpoints = nhosts;
    f->c.healthy_panic_threshold = 50;
    f->c.outlier = oc;
    for (size_t i = 0; i < nhosts; i++)
        snprintf(f->eps[i].addr.text, sizeof(f->eps[i].addr.text), "127.0.0.1:%zu", 8000 + i);
    assert_int_equal(wp_od_init(&f->od, &f->c, "c", f->st, f->membership, 0), 0);
}

static void teardown_fx(fx *f)
{
    wp_od_free(&f->od);
    wp_stats_free(f->st);
}

static int64_t stat(fx *f, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.outlier_detection.%s", name);
    uint32_t slot = strcmp(name, "ejections_active") == 0 ? wp_stats_gauge(f->st, full)
                                                          : wp_stats_counter(f->st, full);
    return wp_stats_value(f->st, slot);
}

static void put(fx *f, size_t host, unsigned code, uint64_t now)
{
    wp_od_put(&f->od, &f->c, host, WP_OD_HTTP, code, f->sh, now, RND_ENFORCE);
}

static void put_n(fx *f, size_t host, unsigned code, int n, uint64_t now)
{
    for (int i = 0; i < n; i++)
        put(f, host, code, now);
}

static void test_consecutive_5xx_threshold_and_reset(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = defaults();
    oc.consecutive_5xx = 3;
    setup(&f, 3, oc);
    put_n(&f, 1, 500, 2, 0);
    put(&f, 1, 200, 0); /* a success resets the count */
    put_n(&f, 1, 500, 2, 0);
    assert_false(wp_od_ejected(&f.od, 1));
    put(&f, 1, 404, 0); /* any non-5xx is a success */
    put_n(&f, 1, 500, 2, 0);
    assert_false(wp_od_ejected(&f.od, 1));
    put(&f, 1, 500, 0);
    assert_true(wp_od_ejected(&f.od, 1));
    assert_false(wp_od_host_usable(&f.od, &f.c, 1));
    assert_true(wp_od_host_usable(&f.od, &f.c, 0));
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 1);
    assert_int_equal(stat(&f, "ejections_enforced_consecutive_5xx"), 1);
    assert_int_equal(stat(&f, "ejections_enforced_total"), 1);
    assert_int_equal(stat(&f, "ejections_total"), 1);
    assert_int_equal(stat(&f, "ejections_consecutive_5xx"), 1);
    assert_int_equal(stat(&f, "ejections_active"), 1);
    assert_int_equal(wp_stats_value(f.st, f.membership), 2);
    /* more failures on an ejected host detect nothing */
    put_n(&f, 1, 500, 10, 0);
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 1);
    teardown_fx(&f);
}

static void test_gateway_failures(void **state)
{
    (void)state;
    fx f;
    setup(&f, 2, defaults()); /* enforcing_consecutive_gateway_failure 0 (Envoy's default) */
    put_n(&f, 0, 502, 2, 0);
    put(&f, 0, 500, 0); /* 500 is 5xx but not a gateway error: resets the gateway count */
    put_n(&f, 0, 503, 4, 0);
    assert_int_equal(stat(&f, "ejections_detected_consecutive_gateway_failure"), 0);
    /* the 5xx count reached 5 at the second 503: ejected by consecutive_5xx first */
    assert_true(wp_od_ejected(&f.od, 0));
    teardown_fx(&f);

    wp_outlier_config oc = defaults();
    oc.consecutive_5xx = 10;
    oc.enforcing_consecutive_gateway_failure = 100;
    setup(&f, 2, oc);
    put_n(&f, 0, 504, 4, 0);
    assert_false(wp_od_ejected(&f.od, 0));
    put(&f, 0, 503, 0);
    assert_true(wp_od_ejected(&f.od, 0));
    assert_int_equal(stat(&f, "ejections_detected_consecutive_gateway_failure"), 1);
    assert_int_equal(stat(&f, "ejections_enforced_consecutive_gateway_failure"), 1);
    assert_int_equal(stat(&f, "ejections_total"), 0); /* deprecated counter: 5xx type only */
    teardown_fx(&f);
}

static void test_enforcement_zero_counts_detection_only(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = defaults();
    oc.enforcing_consecutive_5xx = 0;
    setup(&f, 2, oc);
    put_n(&f, 0, 500, 5, 0);
    assert_false(wp_od_ejected(&f.od, 0));
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 1);
    assert_int_equal(stat(&f, "ejections_total"), 1);
    assert_int_equal(stat(&f, "ejections_enforced_total"), 0);
    put_n(&f, 0, 500, 4, 0); /* the count restarted at the detection */
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 1);
    put(&f, 0, 500, 0);
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 2);
    teardown_fx(&f);

    /* enforcing 50: rnd % 100 < 50 ejects */
    oc.enforcing_consecutive_5xx = 50;
    setup(&f, 2, oc);
    for (int i = 0; i < 5; i++)
        wp_od_put(&f.od, &f.c, 0, WP_OD_HTTP, 500, f.sh, 0, 50);
    assert_false(wp_od_ejected(&f.od, 0));
    for (int i = 0; i < 5; i++)
        wp_od_put(&f.od, &f.c, 0, WP_OD_HTTP, 500, f.sh, 0, 149); /* 149 % 100 = 49 */
    assert_true(wp_od_ejected(&f.od, 0));
    teardown_fx(&f);
}

static void test_max_ejection_percent(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = defaults();
    oc.max_ejection_percent = 10; /* Envoy's default: 1 host of 3 is 33 % > 10 % */
    setup(&f, 3, oc);
    put_n(&f, 0, 500, 5, 0);
    assert_false(wp_od_ejected(&f.od, 0));
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 1);
    assert_int_equal(stat(&f, "ejections_overflow"), 1);
    assert_int_equal(stat(&f, "ejections_total"), 0);
    teardown_fx(&f);

    oc.always_eject_one_host = true; /* the first one is always allowed */
    setup(&f, 3, oc);
    put_n(&f, 0, 500, 5, 0);
    put_n(&f, 1, 500, 5, 0);
    assert_true(wp_od_ejected(&f.od, 0));
    assert_false(wp_od_ejected(&f.od, 1));
    assert_int_equal(stat(&f, "ejections_overflow"), 1);
    assert_int_equal(stat(&f, "ejections_active"), 1);
    teardown_fx(&f);

    oc.always_eject_one_host = false;
    oc.max_ejection_percent = 66; /* 2 of 3 = 66.7 % > 66: one only */
    setup(&f, 3, oc);
    for (size_t h = 0; h < 3; h++)
        put_n(&f, h, 500, 5, 0);
    assert_int_equal(stat(&f, "ejections_active"), 1);
    assert_int_equal(stat(&f, "ejections_overflow"), 2);
    teardown_fx(&f);

    oc.max_ejection_percent = 67; /* 2 of 3 allowed, not 3 */
    setup(&f, 3, oc);
    for (size_t h = 0; h < 3; h++)
        put_n(&f, h, 500, 5, 0);
    assert_int_equal(stat(&f, "ejections_active"), 2);
    assert_int_equal(stat(&f, "ejections_overflow"), 1);
    assert_int_equal(wp_stats_value(f.st, f.membership), 1);
    teardown_fx(&f);
}

static void test_multiplier_uneject_cap_and_decay(void **state)
{
    (void)state;
    fx f;
    setup(&f, 2, defaults()); /* interval 100, base 1000, max 3000 */
    put_n(&f, 0, 500, 5, 0);
    assert_true(wp_od_ejected(&f.od, 0));
    assert_int_equal(f.od.hosts[0].multiplier, 1);
    assert_int_equal(wp_od_sweep(&f.od, &f.c, f.sh, 999), 1099);
    assert_true(wp_od_ejected(&f.od, 0));
    wp_od_sweep(&f.od, &f.c, f.sh, 1000);
    assert_false(wp_od_ejected(&f.od, 0));
    assert_int_equal(stat(&f, "ejections_active"), 0);
    assert_int_equal(wp_stats_value(f.st, f.membership), 2);
    assert_int_equal(f.od.hosts[0].consecutive[WP_OD_5XX], 0);

    /* ejected again before an interval passed: no decay, multiplier 2, 2 s */
    put_n(&f, 0, 500, 5, 1050);
    assert_int_equal(f.od.hosts[0].multiplier, 2);
    wp_od_sweep(&f.od, &f.c, f.sh, 3049);
    assert_true(wp_od_ejected(&f.od, 0));
    wp_od_sweep(&f.od, &f.c, f.sh, 3050);
    assert_false(wp_od_ejected(&f.od, 0));

    /* 3 then capped: 3 * 1000 < 3000 + 1000 -> 4; 4 * 1000 is not -> stays 4; time capped */
    put_n(&f, 0, 500, 5, 3060);
    assert_int_equal(f.od.hosts[0].multiplier, 3);
    wp_od_sweep(&f.od, &f.c, f.sh, 6060);
    put_n(&f, 0, 500, 5, 6070);
    assert_int_equal(f.od.hosts[0].multiplier, 4);
    wp_od_sweep(&f.od, &f.c, f.sh, 9069);
    assert_true(wp_od_ejected(&f.od, 0));
    wp_od_sweep(&f.od, &f.c, f.sh, 9070); /* min(4 * 1000, 3000) */
    assert_false(wp_od_ejected(&f.od, 0));
    put_n(&f, 0, 500, 5, 9071);
    assert_int_equal(f.od.hosts[0].multiplier, 4);
    wp_od_sweep(&f.od, &f.c, f.sh, 12071);
    assert_false(wp_od_ejected(&f.od, 0));
    assert_int_equal(f.od.hosts[0].num_ejections, 5);
    put_n(&f, 1, 500, 5, 12071); /* another host: its own multiplier */
    assert_int_equal(f.od.hosts[1].multiplier, 1);

    /* decay: one per sweep once an interval has passed since the un-ejection */
    wp_od_sweep(&f.od, &f.c, f.sh, 12170);
    assert_int_equal(f.od.hosts[0].multiplier, 4);
    wp_od_sweep(&f.od, &f.c, f.sh, 12171);
    assert_int_equal(f.od.hosts[0].multiplier, 3);
    for (int i = 0; i < 5; i++)
        wp_od_sweep(&f.od, &f.c, f.sh, 12300 + 100 * (uint64_t)i);
    assert_int_equal(f.od.hosts[0].multiplier, 0);
    /* host 1 (still ejected) never decays */
    assert_int_equal(f.od.hosts[1].multiplier, 1);
    teardown_fx(&f);
}

static void test_jitter(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = defaults();
    oc.max_ejection_time_jitter_ms = 500;
    setup(&f, 2, oc);
    uint64_t rnd = (uint64_t)1123 << 32; /* jitter 1123 % 501 = 121; rnd % 100 = 8: enforced */
    for (int i = 0; i < 5; i++)
        wp_od_put(&f.od, &f.c, 0, WP_OD_HTTP, 500, f.sh, 0, rnd);
    assert_int_equal(f.od.hosts[0].jitter_ms, 121);
    wp_od_sweep(&f.od, &f.c, f.sh, 1120);
    assert_true(wp_od_ejected(&f.od, 0));
    wp_od_sweep(&f.od, &f.c, f.sh, 1121);
    assert_false(wp_od_ejected(&f.od, 0));
    teardown_fx(&f);
}

static void local(fx *f, size_t h, wp_od_result r, int n)
{
    for (int i = 0; i < n; i++)
        wp_od_put(&f->od, &f->c, h, r, 0, f->sh, 0, RND_ENFORCE);
}

static void test_local_origin_mapping(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = defaults();
    oc.enforcing_consecutive_gateway_failure = 100;
    oc.consecutive_5xx = 10;
    setup(&f, 2, oc);
    /* no split: a connect failure is a 503, a timeout a 504: gateway failures */
    local(&f, 0, WP_OD_CONNECT_FAILED, 3);
    local(&f, 0, WP_OD_CONNECT_SUCCESS, 1); /* ignored without the split */
    local(&f, 0, WP_OD_TIMEOUT, 2);
    assert_true(wp_od_ejected(&f.od, 0));
    assert_int_equal(stat(&f, "ejections_enforced_consecutive_gateway_failure"), 1);
    teardown_fx(&f);

    oc = defaults();
    oc.split_external_local_origin_errors = true;
    oc.consecutive_local_origin_failure = 3;
    setup(&f, 2, oc);
    local(&f, 0, WP_OD_CONNECT_FAILED, 2);
    local(&f, 0, WP_OD_CONNECT_SUCCESS, 1); /* resets the local-origin count */
    local(&f, 0, WP_OD_CONNECT_FAILED, 2);
    put_n(&f, 0, 500, 4, 0); /* external 5xx: another counter */
    assert_false(wp_od_ejected(&f.od, 0));
    local(&f, 0, WP_OD_TIMEOUT, 1);
    assert_true(wp_od_ejected(&f.od, 0));
    assert_int_equal(stat(&f, "ejections_detected_consecutive_local_origin_failure"), 1);
    assert_int_equal(stat(&f, "ejections_enforced_consecutive_local_origin_failure"), 1);
    assert_int_equal(stat(&f, "ejections_detected_consecutive_5xx"), 0);
    teardown_fx(&f);
}

static void test_panic_threshold(void **state)
{
    (void)state;
    fx f;
    setup(&f, 4, defaults());
    uint32_t panic = wp_stats_counter(f.st, "cluster.c.lb_healthy_panic");
    assert_false(wp_od_lb_panic(&f.od, &f.c, 2, f.sh)); /* 50 % is not below 50 % */
    assert_true(wp_od_lb_panic(&f.od, &f.c, 1, f.sh));
    assert_true(wp_od_lb_panic(&f.od, &f.c, 0, f.sh));
    assert_int_equal(wp_stats_value(f.st, panic), 2);
    f.c.healthy_panic_threshold = 0; /* Istio's minHealthPercent default: never */
    assert_false(wp_od_lb_panic(&f.od, &f.c, 0, f.sh));
    f.c.healthy_panic_threshold = 100;
    assert_true(wp_od_lb_panic(&f.od, &f.c, 3, f.sh));
    /* EDS health counts: an UNHEALTHY host is not usable, a DEGRADED one is */
    f.eps[2].health = WP_HEALTH_UNHEALTHY;
    f.eps[3].health = WP_HEALTH_DEGRADED;
    assert_false(wp_od_host_usable(&f.od, &f.c, 2));
    assert_true(wp_od_host_usable(&f.od, &f.c, 3));
    teardown_fx(&f);
}

static void test_disabled(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = {0};
    setup(&f, 2, oc);
    put_n(&f, 0, 500, 50, 0);
    assert_false(wp_od_ejected(&f.od, 0));
    assert_int_equal(wp_od_sweep(&f.od, &f.c, f.sh, 5), UINT64_MAX);
    assert_true(wp_od_host_usable(&f.od, &f.c, 0));
    teardown_fx(&f);
}

typedef struct {
    fx *f;
    unsigned shard;
} worker_arg;

static void *hammer(void *p)
{
    worker_arg *a = p;
    wp_stats_shard *sh = wp_stats_get_shard(a->f->st, a->shard);
    for (int round = 0; round < 2000; round++)
        for (size_t h = 0; h < 10; h++)
            wp_od_put(&a->f->od, &a->f->c, h, WP_OD_HTTP, 500, sh, 0, RND_ENFORCE);
    return NULL;
}

static void test_concurrent_reporters_respect_max_percent(void **state)
{
    (void)state;
    fx f;
    wp_outlier_config oc = defaults();
    oc.max_ejection_percent = 30;
    setup(&f, 10, oc);
    pthread_t t[3];
    worker_arg args[3];
    for (unsigned i = 0; i < 3; i++) {
        args[i] = (worker_arg){&f, i + 1};
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    for (unsigned i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    size_t ejected = 0;
    for (size_t h = 0; h < 10; h++)
        ejected += wp_od_ejected(&f.od, h);
    assert_int_equal(ejected, 3);
    assert_int_equal(f.od.ejected, 3);
    assert_int_equal(stat(&f, "ejections_active"), 3);
    assert_int_equal(stat(&f, "ejections_enforced_total"), 3);
    teardown_fx(&f);
}

/* ---------- bootstrap ---------- */

static wp_config *load(const char *od_json, wf_strbuf *err)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"clusters\":[{\"name\":\"b\",\"type\":\"STATIC\","
             "\"outlier_detection\":%s,\"load_assignment\":{\"cluster_name\":\"b\","
             "\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":"
             "{\"address\":\"127.0.0.1\",\"port_value\":1}}}}]}]}}]}}",
             od_json);
    return wf_test_load_bootstrap(text, err);
}

static void test_bootstrap_defaults_and_values(void **state)
{
    (void)state;
    wf_strbuf err = {0};
    wp_config *c = load("{}", &err);
    assert_non_null(c);
    const wp_outlier_config *o = &c->clusters[0].outlier;
    assert_true(o->enabled);
    assert_int_equal(o->consecutive_5xx, 5);
    assert_int_equal(o->consecutive_gateway_failure, 5);
    assert_int_equal(o->enforcing_consecutive_5xx, 100);
    assert_int_equal(o->enforcing_consecutive_gateway_failure, 0);
    assert_int_equal(o->interval_ms, 10000);
    assert_int_equal(o->base_ejection_time_ms, 30000);
    assert_int_equal(o->max_ejection_time_ms, 300000);
    assert_int_equal(o->max_ejection_percent, 10);
    assert_false(o->split_external_local_origin_errors);
    assert_int_equal(c->clusters[0].healthy_panic_threshold, 50);
    wp_config_unref(c);

    /* Istio's shape: camelCase JSON names, enforcingSuccessRate 0 */
    c = load("{\"consecutive5xx\":3,\"enforcingConsecutive5xx\":100,\"interval\":\"0.2s\","
             "\"baseEjectionTime\":\"400s\",\"maxEjectionPercent\":50,"
             "\"enforcingSuccessRate\":0,\"consecutiveGatewayErrors\":null}",
             &err);
    assert_null(c); /* consecutiveGatewayErrors is Istio's name, not Envoy's */
    assert_non_null(strstr(wf_strbuf_cstr(&err), "outlier_detection.consecutive_gateway_errors"));
    wf_strbuf_reset(&err);
    c = load("{\"consecutive5xx\":3,\"enforcingConsecutive5xx\":100,\"interval\":\"0.2s\","
             "\"baseEjectionTime\":\"400s\",\"maxEjectionPercent\":50,"
             "\"enforcingSuccessRate\":0}",
             &err);
    assert_non_null(c);
    o = &c->clusters[0].outlier;
    assert_int_equal(o->consecutive_5xx, 3);
    assert_int_equal(o->interval_ms, 200);
    assert_int_equal(o->base_ejection_time_ms, 400000);
    assert_int_equal(o->max_ejection_time_ms, 400000); /* max(300 s, base) when absent */
    assert_int_equal(o->max_ejection_percent, 50);
    wp_config_unref(c);
    wf_strbuf_free(&err);
}

static void expect_error(const char *od, const char *text)
{
    wf_strbuf err = {0};
    assert_null(load(od, &err));
    if (!strstr(wf_strbuf_cstr(&err), text))
        fail_msg("error \"%s\" lacks \"%s\"", wf_strbuf_cstr(&err), text);
    wf_strbuf_free(&err);
}

static void test_bootstrap_rejections(void **state)
{
    (void)state;
    expect_error("{\"success_rate_minimum_hosts\":5}",
                 "clusters[0].outlier_detection.success_rate_minimum_hosts: unsupported field");
    expect_error("{\"failure_percentage_threshold\":85}",
                 "outlier_detection.failure_percentage_threshold: unsupported field");
    expect_error("{\"enforcing_success_rate\":100}",
                 "outlier_detection.enforcing_success_rate: unsupported value");
    expect_error("{\"enforcing_failure_percentage\":1}",
                 "outlier_detection.enforcing_failure_percentage: unsupported value");
    expect_error("{\"max_ejection_percent\":101}",
                 "outlier_detection.max_ejection_percent: value must be less than or equal to 100");
    expect_error("{\"interval\":\"0s\"}",
                 "outlier_detection.interval: value must be greater than 0s");
    expect_error("{\"base_ejection_time\":\"10s\",\"max_ejection_time\":\"5s\"}",
                 "outlier_detection: outlier detector's max_ejection_time cannot be smaller "
                 "than base_ejection_time");
    expect_error("{\"consecutive5xx\":1,\"consecutive_5xx\":2}", "duplicate field");
    expect_error("{\"bogus\":1}", "outlier_detection.bogus: unknown field");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consecutive_5xx_threshold_and_reset),
        cmocka_unit_test(test_gateway_failures),
        cmocka_unit_test(test_enforcement_zero_counts_detection_only),
        cmocka_unit_test(test_max_ejection_percent),
        cmocka_unit_test(test_multiplier_uneject_cap_and_decay),
        cmocka_unit_test(test_jitter),
        cmocka_unit_test(test_local_origin_mapping),
        cmocka_unit_test(test_panic_threshold),
        cmocka_unit_test(test_disabled),
        cmocka_unit_test(test_concurrent_reporters_respect_max_percent),
        cmocka_unit_test(test_bootstrap_defaults_and_values),
        cmocka_unit_test(test_bootstrap_rejections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
