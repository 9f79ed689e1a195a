/*
 * test_stats_matcher.c - StatsConfig.stats_matcher and histogram_bucket_settings
 * (stats_matcher.c): reject_all, inclusion and exclusion lists, every StringMatcher kind with
 * ignore_case, full-match regexes on Envoy's dotted names (operator report B016), Istio's
 * default inclusion list, bucket selection, and the errors with their JSON paths; then the
 * matcher inside the stats store (rejected names are never rendered, status-code scopes are
 * filtered per full name).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/stats/stats.h"
#include "proxy/stats/stats_matcher.h"

static wp_stats_matcher *from(const char *json)
{
    json_error_t e;
    json_t *j = json_loads(json, 0, &e);
    assert_non_null(j);
    wf_strbuf where = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wp_stats_matcher *m = wp_stats_matcher_new(j, &where, &why);
    if (!m)
        fail_msg("unexpected error at %s: %s", wf_strbuf_cstr(&where), wf_strbuf_cstr(&why));
    json_decref(j);
    wf_strbuf_free(&where);
    wf_strbuf_free(&why);
    return m;
}

/* Expects an error: "<where>: <why>" must equal want. */
static void bad(const char *json, const char *want)
{
    json_error_t e;
    json_t *j = json_loads(json, 0, &e);
    assert_non_null(j);
    wf_strbuf where = WF_STRBUF_INIT, why = WF_STRBUF_INIT, got = WF_STRBUF_INIT;
    wp_stats_matcher *m = wp_stats_matcher_new(j, &where, &why);
    assert_null(m);
    wf_strbuf_printf(&got, "%s: %s", wf_strbuf_cstr(&where), wf_strbuf_cstr(&why));
    if (strncmp(wf_strbuf_cstr(&got), want, strlen(want)) != 0)
        fail_msg("got '%s', want '%s...'", wf_strbuf_cstr(&got), want);
    json_decref(j);
    wf_strbuf_free(&where);
    wf_strbuf_free(&why);
    wf_strbuf_free(&got);
}

static void test_default_accepts_everything(void **state)
{
    (void)state;
    assert_true(wp_stats_matcher_accepts(NULL, "server.state"));
    assert_true(wp_stats_matcher_accepts_all(NULL));
    wp_stats_matcher *m = from("{}");
    assert_true(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_total"));
    assert_false(wp_stats_matcher_rejects_all(m));
    uint32_t n;
    const double *b = wp_stats_matcher_buckets(m, "cluster.x.upstream_rq_time", &n);
    assert_int_equal(n, 19);
    assert_true(b[0] == 0.5 && b[18] == 3600000);
    wp_stats_matcher_free(m);
    m = wp_stats_matcher_new(NULL, NULL, NULL);
    assert_non_null(m);
    assert_true(wp_stats_matcher_accepts(m, "anything"));
    wp_stats_matcher_free(m);
}

static void test_reject_all(void **state)
{
    (void)state;
    wp_stats_matcher *m = from("{\"stats_matcher\":{\"reject_all\":true}}");
    assert_false(wp_stats_matcher_accepts(m, "server.live"));
    assert_true(wp_stats_matcher_rejects_all(m));
    wp_stats_matcher_free(m);
    m = from("{\"stats_matcher\":{\"reject_all\":false}}");
    assert_true(wp_stats_matcher_accepts(m, "server.live"));
    assert_true(wp_stats_matcher_accepts_all(m));
    wp_stats_matcher_free(m);
}

static void test_inclusion_kinds(void **state)
{
    (void)state;
    wp_stats_matcher *m = from("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
                               "{\"exact\":\"server.state\"},"
                               "{\"prefix\":\"cluster.xds-grpc.\"},"
                               "{\"suffix\":\"rbac.allowed\"},"
                               "{\"contains\":\"retry\"},"
                               "{\"suffix\":\".UPSTREAM_CX_ACTIVE\",\"ignore_case\":true},"
                               "{\"safe_regex\":{\"regex\":\"vhost\\\\..*\\\\.route\\\\..*\"}}"
                               "]}}}");
    assert_true(wp_stats_matcher_accepts(m, "server.state"));
    assert_false(wp_stats_matcher_accepts(m, "server.state2"));
    assert_false(wp_stats_matcher_accepts(m, "server.live"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.xds-grpc.upstream_cx_total"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.xds-grpc")); /* token prefix */
    assert_false(wp_stats_matcher_accepts(m, "cluster.xds-grpc2.upstream_cx_total"));
    assert_true(wp_stats_matcher_accepts(m, "http.in.rbac.allowed"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_retry_overflow"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.x.upstream_cx_active"));
    assert_true(wp_stats_matcher_accepts(m, "vhost.v.route.r.upstream_rq_total"));
    assert_false(wp_stats_matcher_accepts(m, "vhost.v.upstream_rq_total"));
    assert_false(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_total"));
    assert_false(wp_stats_matcher_accepts_all(m));
    assert_false(wp_stats_matcher_rejects_all(m));
    wp_stats_matcher_free(m);

    /* ignore_case on exact, prefix, contains; case-sensitive by default */
    m = from("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
             "{\"exact\":\"Server.Live\",\"ignore_case\":true},"
             "{\"prefix\":\"HTTP.\",\"ignore_case\":true},"
             "{\"contains\":\"Retry\"}]}}}");
    assert_true(wp_stats_matcher_accepts(m, "server.live"));
    assert_true(wp_stats_matcher_accepts(m, "SERVER.LIVE"));
    assert_true(wp_stats_matcher_accepts(m, "http.in.downstream_rq_total"));
    assert_false(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_retry"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_Retry"));
    wp_stats_matcher_free(m);
}

/* B016: regexes are full matches on Envoy's dotted names, never the Prometheus names. */
static void test_b016_regex_full_match_on_dotted_names(void **state)
{
    (void)state;
    wp_stats_matcher *m =
        from("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
             "{\"safe_regex\":{\"regex\":\"envoy_control_plane_connected_state\"}},"
             "{\"safe_regex\":{\"regex\":\"envoy_cluster_upstream_rq_total\"}}]}}}");
    assert_false(wp_stats_matcher_accepts(m, "control_plane.connected_state"));
    assert_false(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_total"));
    assert_false(wp_stats_matcher_accepts(m, "cluster.outbound|80||x.svc.cluster.local."
                                             "upstream_rq_total"));
    wp_stats_matcher_free(m);

    m = from("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
             "{\"safe_regex\":{\"regex\":\"control_plane\\\\.connected_state\"}},"
             "{\"safe_regex\":{\"regex\":\"cluster\\\\..*\\\\.upstream_rq_total\"}},"
             "{\"safe_regex\":{\"regex\":\"upstream_rq_retry\"}}]}}}");
    assert_true(wp_stats_matcher_accepts(m, "control_plane.connected_state"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.outbound|80||x.svc.cluster.local."
                                            "upstream_rq_total"));
    /* full match: a bare stat suffix does not match a full name */
    assert_false(wp_stats_matcher_accepts(m, "cluster.x.upstream_rq_retry"));
    assert_false(wp_stats_matcher_accepts(m, "control_plane.connected_state_x"));
    wp_stats_matcher_free(m);
}

static void test_exclusion_list(void **state)
{
    (void)state;
    wp_stats_matcher *m = from("{\"stats_matcher\":{\"exclusion_list\":{\"patterns\":["
                               "{\"prefix\":\"listener.\"},{\"exact\":\"server.live\"}]}}}");
    assert_false(wp_stats_matcher_accepts(m, "listener.0.0.0.0_80.downstream_cx_total"));
    assert_false(wp_stats_matcher_accepts(m, "server.live"));
    assert_true(wp_stats_matcher_accepts(m, "server.state"));
    assert_true(wp_stats_matcher_accepts(m, "listener_manager.workers_started"));
    wp_stats_matcher_free(m);
}

/* Istio's default sidecar inclusion list (reference §6.5), as pilot will emit it. */
static void test_istio_default_inclusions(void **state)
{
    (void)state;
    wp_stats_matcher *m =
        from("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
             "{\"prefix\":\"reporter=\"},{\"prefix\":\"cluster_manager\"},"
             "{\"prefix\":\"listener_manager\"},{\"prefix\":\"server\"},"
             "{\"prefix\":\"cluster.xds-grpc\"},{\"prefix\":\"wasm\"},{\"prefix\":\"component\"},"
             "{\"prefix\":\"istio\"},{\"suffix\":\"rbac.allowed\"},{\"suffix\":\"rbac.denied\"},"
             "{\"suffix\":\"shadow_allowed\"},{\"suffix\":\"shadow_denied\"},"
             "{\"safe_regex\":{\"regex\":\"vhost\\\\..*\\\\.route\\\\..*\"}}]}}}");
    assert_true(wp_stats_matcher_accepts(m, "server.state"));
    assert_true(wp_stats_matcher_accepts(m, "cluster.xds-grpc.upstream_cx_active"));
    assert_true(wp_stats_matcher_accepts(m, "listener_manager.workers_started"));
    assert_false(wp_stats_matcher_accepts(m, "control_plane.connected_state"));
    assert_false(wp_stats_matcher_accepts(m, "cluster.outbound|80||foo.ns.svc.cluster.local."
                                             "upstream_rq_retry"));
    assert_false(wp_stats_matcher_accepts(m, "http.inbound_0.0.0.0_8080.downstream_rq_total"));
    assert_false(wp_stats_matcher_accepts(m, "listener.0.0.0.0_15006.downstream_cx_total"));
    wp_stats_matcher_free(m);
}

static void test_regex_limit_is_a_non_match(void **state)
{
    (void)state;
    wp_stats_matcher *m = from("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
                               "{\"safe_regex\":{\"regex\":\"(a+)+b\"}}]}}}");
    char name[200];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_false(wp_stats_matcher_accepts(m, name)); /* returns: limits bound the work */
    assert_true(wp_stats_matcher_accepts(m, "aab"));
    wp_stats_matcher_free(m);
}

static void test_bucket_settings(void **state)
{
    (void)state;
    wp_stats_matcher *m = from("{\"histogram_bucket_settings\":["
                               "{\"match\":{\"prefix\":\"cluster.a.\"},\"buckets\":[10,1,5,5]},"
                               "{\"match\":{\"suffix\":\"_ms\"},\"buckets\":[0.25]},"
                               "{\"match\":{\"prefix\":\"cluster.\"},\"buckets\":[7]}]}");
    uint32_t n;
    const double *b = wp_stats_matcher_buckets(m, "cluster.a.upstream_cx_length_ms", &n);
    assert_int_equal(n, 3); /* first match wins; sorted, duplicates dropped */
    assert_true(b[0] == 1 && b[1] == 5 && b[2] == 10);
    b = wp_stats_matcher_buckets(m, "cluster.b.upstream_cx_length_ms", &n);
    assert_true(n == 1 && b[0] == 0.25);
    b = wp_stats_matcher_buckets(m, "cluster.b.upstream_rq_time", &n);
    assert_true(n == 1 && b[0] == 7);
    b = wp_stats_matcher_buckets(m, "http.in.downstream_rq_time", &n);
    assert_true(n == 19 && b[0] == 0.5);
    assert_true(wp_stats_matcher_accepts(m, "http.in.downstream_rq_time"));
    wp_stats_matcher_free(m);
}

static void test_errors_name_the_path(void **state)
{
    (void)state;
    bad("{\"stats_matcher\":{}}",
        "stats_matcher: exactly one of reject_all, inclusion_list, exclusion_list is required");
    bad("{\"stats_matcher\":{\"reject_all\":true,\"exclusion_list\":{\"patterns\":[{\"exact\":"
        "\"a\"}]}}}",
        "stats_matcher: exactly one of");
    bad("{\"stats_matcher\":{\"reject_all\":1}}", "stats_matcher.reject_all: must be a bool");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[]}}}",
        "stats_matcher.inclusion_list.patterns: value must contain at least 1 item(s)");
    bad("{\"stats_matcher\":{\"inclusion_list\":{}}}",
        "stats_matcher.inclusion_list.patterns: value must contain at least 1 item(s)");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"exact\":\"a\"},"
        "{\"safe_regex\":{\"regex\":\"(a\"}}]}}}",
        "stats_matcher.inclusion_list.patterns[1].safe_regex.regex: error parsing regexp: "
        "missing closing ): `(a`");
    bad("{\"stats_matcher\":{\"exclusion_list\":{\"patterns\":[{\"safe_regex\":{\"regex\":"
        "\"(?=x)y\"}}]}}}",
        "stats_matcher.exclusion_list.patterns[0].safe_regex.regex: error parsing regexp");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"safe_regex\":{\"regex\":"
        "\"\"}}]}}}",
        "stats_matcher.inclusion_list.patterns[0].safe_regex.regex: value length must be at "
        "least 1 characters");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"safe_regex\":{\"regex\":"
        "\"a\"},\"ignore_case\":true}]}}}",
        "stats_matcher.inclusion_list.patterns[0]: ignore_case has no effect for safe_regex.");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"suffix\":\"\"}]}}}",
        "stats_matcher.inclusion_list.patterns[0].suffix: value length must be at least 1 "
        "characters");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"prefix\":\"a\","
        "\"contains\":\"b\"}]}}}",
        "stats_matcher.inclusion_list.patterns[0]: exactly one of exact, prefix, suffix, "
        "contains, safe_regex is required");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"prefx\":\"a\"}]}}}",
        "stats_matcher.inclusion_list.patterns[0].prefx: unknown field");
    bad("{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":[{\"safe_regex\":{\"regex\":"
        "\"a\",\"google_re2\":{\"max_program_size\":1}}}]}}}",
        "stats_matcher.inclusion_list.patterns[0].safe_regex.google_re2: only an empty object");
    bad("{\"histogram_bucket_settings\":{}}", "histogram_bucket_settings: must be a list");
    bad("{\"histogram_bucket_settings\":[{\"match\":{\"exact\":\"a\"},\"buckets\":[]}]}",
        "histogram_bucket_settings[0].buckets: value must contain at least 1 item(s)");
    bad("{\"histogram_bucket_settings\":[{\"match\":{\"exact\":\"a\"},\"buckets\":[1,-2]}]}",
        "histogram_bucket_settings[0].buckets[1]: value must be greater than 0");
    bad("{\"histogram_bucket_settings\":[{\"buckets\":[1]}]}",
        "histogram_bucket_settings[0].match: value is required");
    bad("{\"histogram_bucket_settings\":[{\"match\":{\"prefix\":\"\"},\"buckets\":[1]}]}",
        "histogram_bucket_settings[0].match.prefix: value length must be at least 1");
}

/* ---------------------------------------------------------------- inside the store */

static void use_matcher(wp_stats *st, const char *json)
{
    wp_stats_set_matcher(st, from(json));
}

static void test_store_rejected_stats_are_never_rendered(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(2);
    use_matcher(st, "{\"stats_matcher\":{\"inclusion_list\":{\"patterns\":["
                    "{\"safe_regex\":{\"regex\":\"cluster\\\\..*\\\\.upstream_rq_total\"}},"
                    "{\"prefix\":\"server.\"}]}}}");
    uint32_t in = wp_stats_counter(st, "cluster.x.upstream_rq_total");
    uint32_t out = wp_stats_counter(st, "cluster.x.upstream_cx_total");
    uint32_t g = wp_stats_gauge(st, "cluster.x.upstream_cx_active");
    uint32_t h = wp_stats_histogram(st, "cluster.x.upstream_rq_time");
    uint32_t live = wp_stats_gauge(st, "server.live");
    assert_int_equal(out, WP_STAT_SCRATCH);
    assert_int_equal(g, WP_STAT_SCRATCH);
    assert_int_equal(h, WP_STAT_SCRATCH);
    assert_int_not_equal(in, WP_STAT_SCRATCH);
    assert_int_not_equal(in, WP_STAT_INVALID);
    /* a rejected name of another kind is not a conflict */
    assert_int_equal(wp_stats_gauge(st, "cluster.x.upstream_cx_total"), WP_STAT_SCRATCH);
    for (unsigned s = 0; s < 2; s++) {
        wp_stats_shard *sh = wp_stats_get_shard(st, s);
        wp_stat_add(sh, in, 2);
        wp_stat_add(sh, out, 5);
        wp_stat_add(sh, g, 1);
        wp_stat_add(sh, live, 1);
        wp_hist_record(sh, h, 7);
    }
    assert_int_equal(wp_stats_value(st, in), 4);
    assert_int_equal(wp_stats_value(st, out), 0);
    assert_false(wp_stats_used(st, out));
    assert_int_equal(wp_stats_hist_count(st, h), 0);
    wf_strbuf o = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, false, &o);
    assert_string_equal(wf_strbuf_cstr(&o), "cluster.x.upstream_rq_total: 4\nserver.live: 2\n");
    wf_strbuf_reset(&o);
    wp_stats_render_json(st, NULL, false, &o);
    assert_string_equal(wf_strbuf_cstr(&o),
                        "{\"stats\":[{\"name\":\"cluster.x.upstream_rq_total\",\"value\":4},"
                        "{\"name\":\"server.live\",\"value\":2}]}");
    wf_strbuf_reset(&o);
    wp_stats_render_prometheus(st, NULL, false, NULL, &o);
    assert_string_equal(wf_strbuf_cstr(&o), "# TYPE envoy_cluster_x_upstream_rq_total counter\n"
                                            "envoy_cluster_x_upstream_rq_total{} 4\n"
                                            "# TYPE envoy_server_live gauge\n"
                                            "envoy_server_live{} 2\n");
    wp_stats_reset_counters(st); /* skips the scratch slot */
    assert_int_equal(wp_stats_value(st, in), 0);
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

static void test_store_code_scopes_filtered_per_name(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    use_matcher(st, "{\"stats_matcher\":{\"exclusion_list\":{\"patterns\":["
                    "{\"exact\":\"cluster.x.upstream_rq_200\"},{\"suffix\":\"_4xx\"},"
                    "{\"prefix\":\"cluster.y.\"}]}}}");
    uint32_t x = wp_stats_code_scope(st, "cluster.x.upstream_rq");
    uint32_t y = wp_stats_code_scope(st, "cluster.y.upstream_rq");
    assert_int_not_equal(x, WP_STAT_SCRATCH);
    assert_int_equal(y, WP_STAT_SCRATCH); /* none of its names exists */
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_code_stats *cx = wp_stats_code_local(sh, x), *cy = wp_stats_code_local(sh, y);
    assert_non_null(cy);
    wp_code_stat_add(cx, 200);
    wp_code_stat_add(cx, 201);
    wp_code_stat_add(cx, 404);
    wp_code_stat_add(cy, 503); /* no allocation, never rendered */
    wf_strbuf o = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, false, &o);
    assert_string_equal(wf_strbuf_cstr(&o), "cluster.x.upstream_rq_201: 1\n"
                                            "cluster.x.upstream_rq_2xx: 2\n"
                                            "cluster.x.upstream_rq_404: 1\n");
    assert_int_equal(wp_stats_code_value(st, y, 503), 0);
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

static void test_store_histogram_bucket_settings(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    use_matcher(st, "{\"histogram_bucket_settings\":[{\"match\":{\"exact\":\"h\"},"
                    "\"buckets\":[10,1]}]}");
    uint32_t h = wp_stats_histogram(st, "h");
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_hist_record(sh, h, 1);
    wp_hist_record(sh, h, 2);
    wp_hist_record(sh, h, 11);
    wf_strbuf o = WF_STRBUF_INIT;
    wp_stats_render_prometheus(st, NULL, false, NULL, &o);
    assert_string_equal(wf_strbuf_cstr(&o), "# TYPE envoy_h histogram\n"
                                            "envoy_h_bucket{le=\"1\"} 1\n"
                                            "envoy_h_bucket{le=\"10\"} 2\n"
                                            "envoy_h_bucket{le=\"+Inf\"} 3\n"
                                            "envoy_h_sum{} 14\n"
                                            "envoy_h_count{} 3\n");
    wf_strbuf_free(&o);
    wp_stats_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_accepts_everything),
        cmocka_unit_test(test_reject_all),
        cmocka_unit_test(test_inclusion_kinds),
        cmocka_unit_test(test_b016_regex_full_match_on_dotted_names),
        cmocka_unit_test(test_exclusion_list),
        cmocka_unit_test(test_istio_default_inclusions),
        cmocka_unit_test(test_regex_limit_is_a_non_match),
        cmocka_unit_test(test_bucket_settings),
        cmocka_unit_test(test_errors_name_the_path),
        cmocka_unit_test(test_store_rejected_stats_are_never_rendered),
        cmocka_unit_test(test_store_code_scopes_filtered_per_name),
        cmocka_unit_test(test_store_histogram_bucket_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
