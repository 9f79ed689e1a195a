/*
 * test_stats_hist.c - histograms (histogram.c, the histogram parts of stats.c and
 * stats_render.c): bucket choice, quantile estimates, Envoy's number format, shard sums,
 * the /stats text summary ("No recorded values", P0..P100 with interval and cumulative),
 * the JSON histograms element, the Prometheus _bucket/_sum/_count lines with tags,
 * usedonly and filter, intervals after a flush, and a writer racing a reader.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/stats/histogram.h"
#include "proxy/stats/stats.h"

static const char *fmt(double v)
{
    static char b[64];
    wp_fmt_double(b, sizeof b, v);
    return b;
}

static void test_number_format(void **state)
{
    (void)state;
    assert_string_equal(fmt(0), "0");
    assert_string_equal(fmt(120), "120");
    assert_string_equal(fmt(0.25), "0.25");
    assert_string_equal(fmt(119.92), "119.92");
    assert_string_equal(fmt(3600000), "3600000");
    assert_string_equal(fmt(1e16), "1e+16");
    assert_string_equal(fmt(0.0001), "0.0001");
    assert_string_equal(fmt(1e-05), "1e-05");
    assert_string_equal(fmt(NAN), "nan");
    assert_string_equal(fmt(0.1 + 0.2), "0.30000000000000004");
}

static void test_bucket_index(void **state)
{
    (void)state;
    const double b[] = {0.5, 1, 5, 10};
    assert_int_equal(wp_hist_bucket_index(b, 4, 0), 0);
    assert_int_equal(wp_hist_bucket_index(b, 4, 1), 1); /* le="1" holds 1 */
    assert_int_equal(wp_hist_bucket_index(b, 4, 2), 2);
    assert_int_equal(wp_hist_bucket_index(b, 4, 5), 2);
    assert_int_equal(wp_hist_bucket_index(b, 4, 10), 3);
    assert_int_equal(wp_hist_bucket_index(b, 4, 11), 4);
    assert_int_equal(wp_hist_bucket_index(b, 4, UINT64_MAX), 4);
}

static void test_quantiles(void **state)
{
    (void)state;
    const double b[] = {0.5, 1, 5, 10, 25, 50, 100};
    double q[WP_HIST_NQ];
    uint64_t none[8] = {0};
    wp_hist_quantiles(b, 7, none, 0, 0, NAN, true, q);
    for (int k = 0; k < WP_HIST_NQ; k++)
        assert_true(isnan(q[k]));
    /* one value, 3: every quantile is 3 (min = max) */
    uint64_t one[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    wp_hist_quantiles(b, 7, one, 1, 3, 3, true, q);
    for (int k = 0; k < WP_HIST_NQ; k++)
        assert_true(q[k] == 3);
    /* 0, 0, 30, 120: zeros stay zeros, P100 is the maximum */
    uint64_t four[8] = {2, 0, 0, 0, 0, 1, 0, 1};
    wp_hist_quantiles(b, 7, four, 4, 0, 120, true, q);
    assert_true(q[0] == 0 && q[1] == 0 && q[2] == 0);
    assert_true(q[3] > 25 && q[3] <= 50);
    assert_true(q[9] == 120);
    for (int k = 1; k < WP_HIST_NQ; k++)
        assert_true(q[k] >= q[k - 1]);
    /* not exact (an interval): P0 / P100 come from the buckets, clamped */
    wp_hist_quantiles(b, 7, one, 1, 0, NAN, false, q);
    assert_true(q[0] >= 2 && q[9] <= 5);
}

static wp_stats *sample(void)
{
    wp_stats *st = wp_stats_new(2);
    uint32_t c = wp_stats_counter(st, "cluster.x.upstream_rq_total");
    uint32_t h = wp_stats_histogram(st, "cluster.x.upstream_rq_time");
    assert_int_not_equal(h, WP_STAT_INVALID);
    assert_int_not_equal(h, WP_STAT_SCRATCH);
    assert_int_equal(wp_stats_histogram(st, "cluster.x.upstream_rq_time"), h);
    assert_int_not_equal(wp_stats_histogram(st, "http.in.downstream_rq_time"), WP_STAT_INVALID);
    wp_stat_add(wp_stats_get_shard(st, 0), c, 3);
    wp_hist_record(wp_stats_get_shard(st, 0), h, 3);
    wp_hist_record(wp_stats_get_shard(st, 1), h, 3);
    wp_hist_record(wp_stats_get_shard(st, 1), h, 40);
    return st;
}

static void test_shards_and_text(void **state)
{
    (void)state;
    wp_stats *st = sample();
    uint32_t h = wp_stats_histogram(st, "cluster.x.upstream_rq_time");
    assert_int_equal(wp_stats_hist_count(st, h), 3);
    assert_int_equal(wp_stats_hist_sum(st, h), 46);
    wp_hist_record(NULL, h, 1);                                    /* ignored */
    wp_hist_record(wp_stats_get_shard(st, 0), WP_STAT_INVALID, 1); /* ignored */
    wf_strbuf o = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, false, &o);
    assert_string_equal(wf_strbuf_cstr(&o),
                        "cluster.x.upstream_rq_total: 3\n"
                        "cluster.x.upstream_rq_time: P0(nan,3) P25(nan,3.75) P50(nan,4.5) "
                        "P75(nan,29.5) P90(nan,35.8) P95(nan,37.9) P99(nan,39.58) "
                        "P99.5(nan,39.79) P99.9(nan,39.958) P100(nan,40)\n"
                        "http.in.downstream_rq_time: No recorded values\n");
    wf_strbuf_reset(&o);
    wp_stats_render_text(st, NULL, true, &o); /* usedonly skips the unused histogram */
    assert_null(strstr(wf_strbuf_cstr(&o), "http.in.downstream_rq_time"));
    wf_strbuf_reset(&o);
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *f = pcre2_compile((PCRE2_SPTR) "rq_time", PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    wp_stats_render_text(st, f, false, &o);
    assert_non_null(strstr(wf_strbuf_cstr(&o), "http.in.downstream_rq_time: No recorded"));
    assert_null(strstr(wf_strbuf_cstr(&o), "upstream_rq_total"));
    pcre2_code_free(f);
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

static void test_json(void **state)
{
    (void)state;
    wp_stats *st = sample();
    wf_strbuf o = WF_STRBUF_INIT;
    wp_stats_render_json(st, NULL, false, &o);
    assert_string_equal(
        wf_strbuf_cstr(&o),
        "{\"stats\":[{\"name\":\"cluster.x.upstream_rq_total\",\"value\":3},"
        "{\"histograms\":{\"supported_quantiles\":[0,25,50,75,90,95,99,99.5,99.9,100],"
        "\"computed_quantiles\":[{\"name\":\"cluster.x.upstream_rq_time\",\"values\":["
        "{\"cumulative\":3,\"interval\":null},{\"cumulative\":3.75,\"interval\":null},"
        "{\"cumulative\":4.5,\"interval\":null},{\"cumulative\":29.5,\"interval\":null},"
        "{\"cumulative\":35.8,\"interval\":null},{\"cumulative\":37.9,\"interval\":null},"
        "{\"cumulative\":39.58,\"interval\":null},{\"cumulative\":39.79,\"interval\":null},"
        "{\"cumulative\":39.958,\"interval\":null},{\"cumulative\":40,\"interval\":null}]},"
        "{\"name\":\"http.in.downstream_rq_time\",\"values\":["
        "{\"cumulative\":null,\"interval\":null},{\"cumulative\":null,\"interval\":null},"
        "{\"cumulative\":null,\"interval\":null},{\"cumulative\":null,\"interval\":null},"
        "{\"cumulative\":null,\"interval\":null},{\"cumulative\":null,\"interval\":null},"
        "{\"cumulative\":null,\"interval\":null},{\"cumulative\":null,\"interval\":null},"
        "{\"cumulative\":null,\"interval\":null},{\"cumulative\":null,\"interval\":null}]}"
        "]}}]}");
    json_error_t e;
    json_t *j = json_loads(wf_strbuf_cstr(&o), 0, &e);
    assert_non_null(j);
    json_decref(j);
    /* only histograms: no leading comma */
    wf_strbuf_reset(&o);
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *f = pcre2_compile((PCRE2_SPTR) "^http", PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    wp_stats_render_json(st, f, false, &o);
    assert_true(strncmp(wf_strbuf_cstr(&o), "{\"stats\":[{\"histograms\":", 24) == 0);
    j = json_loads(wf_strbuf_cstr(&o), 0, &e);
    assert_non_null(j);
    json_decref(j);
    pcre2_code_free(f);
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

static void test_prometheus(void **state)
{
    (void)state;
    wp_stats *st = sample();
    wf_strbuf err = WF_STRBUF_INIT, o = WF_STRBUF_INIT;
    wp_stats_tags *tags = wp_stats_tags_from_config(NULL, &err);
    assert_non_null(tags);
    wp_stats_render_prometheus(st, tags, true, NULL, &o);
    const char *want =
        "# TYPE envoy_cluster_upstream_rq_total counter\n"
        "envoy_cluster_upstream_rq_total{envoy_cluster_name=\"x\"} 3\n"
        "# TYPE envoy_cluster_upstream_rq_time histogram\n"
        "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\",le=\"0.5\"} 0\n"
        "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\",le=\"1\"} 0\n"
        "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\",le=\"5\"} 2\n"
        "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\",le=\"10\"} 2\n"
        "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\",le=\"25\"} 2\n"
        "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\",le=\"50\"} 3\n";
    assert_true(strncmp(wf_strbuf_cstr(&o), want, strlen(want)) == 0);
    const char *tail = "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\","
                       "le=\"3600000\"} 3\n"
                       "envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"x\","
                       "le=\"+Inf\"} 3\n"
                       "envoy_cluster_upstream_rq_time_sum{envoy_cluster_name=\"x\"} 46\n"
                       "envoy_cluster_upstream_rq_time_count{envoy_cluster_name=\"x\"} 3\n";
    size_t ol = strlen(wf_strbuf_cstr(&o));
    assert_string_equal(wf_strbuf_cstr(&o) + ol - strlen(tail), tail);
    /* without usedonly the unused histogram is there with zeros */
    wf_strbuf_reset(&o);
    wp_stats_render_prometheus(st, tags, false, NULL, &o);
    assert_non_null(strstr(wf_strbuf_cstr(&o),
                           "# TYPE envoy_http_downstream_rq_time histogram\n"
                           "envoy_http_downstream_rq_time_bucket{envoy_http_conn_manager_prefix="
                           "\"in\",le=\"0.5\"} 0\n"));
    assert_non_null(strstr(wf_strbuf_cstr(&o), "envoy_http_downstream_rq_time_count{envoy_http_"
                                               "conn_manager_prefix=\"in\"} 0\n"));
    wp_stats_tags_free(tags);
    wf_strbuf_free(&err);
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

static void test_interval_after_flush(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    uint32_t h = wp_stats_histogram(st, "h");
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_hist_record(sh, h, 7);
    wp_stats_flush_histograms(st); /* interval 1: {7} */
    wp_hist_record(sh, h, 100);    /* in the open interval: not shown as interval yet */
    wf_strbuf o = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, false, &o);
    assert_string_equal(wf_strbuf_cstr(&o),
                        "h: P0(7,7) P25(7.75,8.5) P50(8.5,10) P75(9.25,75.5) P90(9.7,90.2) "
                        "P95(9.85,95.1) P99(9.97,99.02) P99.5(9.985,99.51) P99.9(9.997,99.902) "
                        "P100(10,100)\n");
    wp_stats_flush_histograms(st); /* interval 2: {100} */
    wp_stats_flush_histograms(st); /* interval 3: empty */
    wf_strbuf_reset(&o);
    wp_stats_render_text(st, NULL, false, &o);
    assert_non_null(strstr(wf_strbuf_cstr(&o), "h: P0(nan,7) "));
    /* a render closes the interval itself once the flush interval has passed */
    wp_hist_record(sh, h, 3);
    wp_stats_set_flush_interval(st, 0);
    wf_strbuf_reset(&o);
    wp_stats_render_text(st, NULL, false, &o);
    assert_non_null(strstr(wf_strbuf_cstr(&o), "h: P0(3,3) "));
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

#define N_RECORDS 200000

static void *writer(void *arg)
{
    wp_stats *st = arg;
    uint32_t h = wp_stats_histogram(st, "h");
    wp_stats_shard *sh = wp_stats_get_shard(st, 1);
    for (int i = 0; i < N_RECORDS; i++)
        wp_hist_record(sh, h, (uint64_t)(i % 100));
    return NULL;
}

static void test_concurrent_record_and_render(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(2);
    uint32_t h = wp_stats_histogram(st, "h");
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer, st), 0);
    wf_strbuf o = WF_STRBUF_INIT;
    uint64_t last = 0;
    for (int i = 0; i < 50; i++) {
        wf_strbuf_reset(&o);
        wp_stats_render_prometheus(st, NULL, false, NULL, &o);
        assert_false(wf_strbuf_failed(&o));
        uint64_t n = wp_stats_hist_count(st, h);
        assert_true(n >= last);
        last = n;
    }
    pthread_join(th, NULL);
    assert_int_equal(wp_stats_hist_count(st, h), N_RECORDS);
    assert_int_equal(wp_stats_hist_sum(st, h), (uint64_t)N_RECORDS / 100 * 4950);
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number_format),
        cmocka_unit_test(test_bucket_index),
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_shards_and_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_interval_after_flush),
        cmocka_unit_test(test_concurrent_record_and_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
