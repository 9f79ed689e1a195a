/*
 * test_stats.c - the stats store: registration, shards, concurrency, usedonly, reset,
 * status-code stats, /stats text and JSON, Prometheus with Envoy's default tags and with
 * Istio's stats_tags.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/stats/stats.h"

static pcre2_code *re(const char *pattern)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    assert_non_null(c);
    return c;
}

static void test_registration_idempotent(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(2);
    assert_non_null(st);
    uint32_t a = wp_stats_counter(st, "cluster.x.upstream_rq_total");
    uint32_t b = wp_stats_counter(st, "cluster.x.upstream_cx_total");
    uint32_t g = wp_stats_gauge(st, "cluster.x.upstream_rq_active");
    assert_int_not_equal(a, WP_STAT_INVALID);
    assert_int_not_equal(a, b);
    assert_int_equal(wp_stats_counter(st, "cluster.x.upstream_rq_total"), a);
    assert_int_equal(wp_stats_gauge(st, "cluster.x.upstream_rq_active"), g);
    assert_int_equal(wp_stats_gauge(st, "cluster.x.upstream_rq_total"), WP_STAT_INVALID);
    assert_int_equal(wp_stats_counter(st, ""), WP_STAT_INVALID);
    assert_null(wp_stats_get_shard(st, 2));
    wp_stat_add(wp_stats_get_shard(st, 0), WP_STAT_INVALID, 1); /* ignored, no crash */
    assert_null(wp_stats_new(0));
    wp_stats_free(st);
}

static void test_shard_sums_and_growth(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(3);
    uint32_t c = wp_stats_counter(st, "c");
    uint32_t g = wp_stats_gauge(st, "g");
    wp_stat_add(wp_stats_get_shard(st, 0), c, 5);
    wp_stat_add(wp_stats_get_shard(st, 1), c, 7);
    wp_stat_add(wp_stats_get_shard(st, 2), c, 1);
    wp_stat_add(wp_stats_get_shard(st, 0), g, 3);
    wp_stat_add(wp_stats_get_shard(st, 1), g, -5); /* a connection opened on 0, closed on 1 */
    assert_int_equal(wp_stats_value(st, c), 13);
    assert_int_equal(wp_stats_value(st, g), -2);

    /* registering thousands more (new chunks) keeps existing values and slots */
    char name[64];
    uint32_t last = 0;
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "cluster.c%d.upstream_rq_total", i);
        last = wp_stats_counter(st, name);
        assert_int_not_equal(last, WP_STAT_INVALID);
    }
    wp_stat_add(wp_stats_get_shard(st, 2), last, 4);
    assert_int_equal(wp_stats_value(st, c), 13);
    assert_int_equal(wp_stats_value(st, last), 4);
    assert_int_equal(wp_stats_counter(st, "c"), c);
    wp_stats_free(st);
}

#define N_INCS 200000

typedef struct {
    wp_stats *st;
    uint32_t slot;
    wp_code_stats *codes;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *a = p;
    wp_stats_shard *sh = wp_stats_get_shard(a->st, 1);
    for (int i = 0; i < N_INCS; i++) {
        wp_stat_add(sh, a->slot, 1);
        wp_code_stat_add(a->codes, 200);
    }
    return NULL;
}

/* One worker increments while the admin side sums and the main side registers new stats. */
static void test_concurrent_writer_and_reader(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(2);
    uint32_t slot = wp_stats_counter(st, "http.in.downstream_rq_total");
    uint32_t scope = wp_stats_code_scope(st, "http.in.downstream_rq");
    writer_arg a = {st, slot, wp_stats_code_local(wp_stats_get_shard(st, 1), scope)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer, &a), 0);
    int64_t prev = 0;
    char name[64];
    for (int i = 0; i < 2000; i++) {
        int64_t v = wp_stats_value(st, slot);
        assert_true(v >= prev && v <= N_INCS);
        prev = v;
        snprintf(name, sizeof name, "cluster.n%d.upstream_rq_total", i);
        assert_int_not_equal(wp_stats_counter(st, name), WP_STAT_INVALID);
        int64_t c = wp_stats_code_value(st, scope, 200);
        assert_true(c >= 0 && c <= N_INCS);
    }
    pthread_join(th, NULL);
    assert_int_equal(wp_stats_value(st, slot), N_INCS);
    assert_int_equal(wp_stats_code_value(st, scope, 200), N_INCS);
    assert_int_equal(wp_stats_code_value(st, scope, 2), N_INCS);
    wp_stats_free(st);
}

static void test_usedonly(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_stats_counter(st, "b.never");
    uint32_t g = wp_stats_gauge(st, "a.gauge");
    uint32_t c = wp_stats_counter(st, "c.counter");
    wp_stat_add(sh, g, 1);
    wp_stat_add(sh, g, -1); /* back to 0 but used */
    wp_stat_add(sh, c, 2);
    assert_false(wp_stats_used(st, wp_stats_counter(st, "b.never")));
    assert_true(wp_stats_used(st, g));
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, true, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "a.gauge: 0\nc.counter: 2\n");
    wf_strbuf_reset(&out);
    wp_stats_render_text(st, NULL, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "a.gauge: 0\nb.never: 0\nc.counter: 2\n");
    wf_strbuf_free(&out);
    wp_stats_free(st);
}

static void test_reset_counters(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(2);
    uint32_t c = wp_stats_counter(st, "cluster.x.upstream_rq_total");
    uint32_t g = wp_stats_gauge(st, "cluster.x.upstream_rq_active");
    uint32_t scope = wp_stats_code_scope(st, "cluster.x.upstream_rq");
    wp_code_stats *cs = wp_stats_code_local(wp_stats_get_shard(st, 0), scope);
    wp_stat_add(wp_stats_get_shard(st, 0), c, 5);
    wp_stat_add(wp_stats_get_shard(st, 1), c, 2);
    wp_stat_add(wp_stats_get_shard(st, 1), g, 3);
    wp_code_stat_add(cs, 503);
    wp_stats_reset_counters(st);
    assert_int_equal(wp_stats_value(st, c), 0);
    assert_int_equal(wp_stats_value(st, g), 3); /* gauges are not reset */
    assert_int_equal(wp_stats_code_value(st, scope, 503), 0);
    wp_stat_add(wp_stats_get_shard(st, 0), c, 2);
    wp_code_stat_add(cs, 503);
    assert_int_equal(wp_stats_value(st, c), 2);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, true, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "cluster.x.upstream_rq_503: 1\n"
                                              "cluster.x.upstream_rq_5xx: 1\n"
                                              "cluster.x.upstream_rq_active: 3\n"
                                              "cluster.x.upstream_rq_total: 2\n");
    wf_strbuf_free(&out);
    wp_stats_free(st);
}

static void test_code_stats(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(2);
    uint32_t scope = wp_stats_code_scope(st, "cluster.x.upstream_rq");
    assert_int_equal(wp_stats_code_scope(st, "cluster.x.upstream_rq"), scope);
    wp_code_stats *c0 = wp_stats_code_local(wp_stats_get_shard(st, 0), scope);
    wp_code_stats *c1 = wp_stats_code_local(wp_stats_get_shard(st, 1), scope);
    assert_non_null(c0);
    assert_ptr_not_equal(c0, c1);

    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out), ""); /* nothing before the first response */

    assert_null(atomic_load(&c0->counts));
    wp_code_stat_add(c0, 503);
    wp_code_counts *first = atomic_load(&c0->counts);
    assert_non_null(first);
    wp_code_stat_add(c0, 503);
    wp_code_stat_add(c0, 200);
    wp_code_stat_add(c1, 201);
    wp_code_stat_add(c1, 600); /* ignored */
    wp_code_stat_add(c1, 99);  /* ignored */
    wp_code_stat_add(NULL, 200);
    assert_ptr_equal(atomic_load(&c0->counts), first); /* later adds never allocate */

    wp_stats_render_text(st, NULL, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "cluster.x.upstream_rq_200: 1\n"
                                              "cluster.x.upstream_rq_201: 1\n"
                                              "cluster.x.upstream_rq_2xx: 2\n"
                                              "cluster.x.upstream_rq_503: 2\n"
                                              "cluster.x.upstream_rq_5xx: 2\n");
    assert_int_equal(wp_stats_code_value(st, scope, 4), 0);
    wf_strbuf_free(&out);
    wp_stats_free(st);
}

static wp_stats *sample_store(void)
{
    wp_stats *st = wp_stats_new(2);
    wp_stats_shard *s0 = wp_stats_get_shard(st, 0), *s1 = wp_stats_get_shard(st, 1);
    wp_stat_add(s0, wp_stats_counter(st, "cluster.x.upstream_rq_total"), 3);
    wp_stat_add(s1, wp_stats_gauge(st, "server.live"), 1);
    wp_stat_add(s1, wp_stats_counter(st, "listener.0.0.0.0_15006.downstream_cx_total"), 4);
    wp_stat_add(
        s0, wp_stats_counter(st, "cluster.outbound|80||x.ns.svc.cluster.local.upstream_rq_total"),
        6);
    wp_code_stats *cx = wp_stats_code_local(s0, wp_stats_code_scope(st, "cluster.x.upstream_rq"));
    wp_code_stat_add(cx, 200);
    wp_code_stat_add(cx, 200);
    wp_code_stat_add(cx, 503);
    wp_code_stats *hx =
        wp_stats_code_local(s1, wp_stats_code_scope(st, "http.ingress.downstream_rq"));
    wp_code_stat_add(hx, 404);
    return st;
}

static void test_text_sorted_and_filter(void **state)
{
    (void)state;
    wp_stats *st = sample_store();
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_text(st, NULL, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out),
                        "cluster.outbound|80||x.ns.svc.cluster.local.upstream_rq_total: 6\n"
                        "cluster.x.upstream_rq_200: 2\n"
                        "cluster.x.upstream_rq_2xx: 2\n"
                        "cluster.x.upstream_rq_503: 1\n"
                        "cluster.x.upstream_rq_5xx: 1\n"
                        "cluster.x.upstream_rq_total: 3\n"
                        "http.ingress.downstream_rq_404: 1\n"
                        "http.ingress.downstream_rq_4xx: 1\n"
                        "listener.0.0.0.0_15006.downstream_cx_total: 4\n"
                        "server.live: 1\n");
    pcre2_code *f = re("rq_5|^server");
    wf_strbuf_reset(&out);
    wp_stats_render_text(st, f, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "cluster.x.upstream_rq_503: 1\n"
                                              "cluster.x.upstream_rq_5xx: 1\n"
                                              "server.live: 1\n");
    pcre2_code_free(f);
    wf_strbuf_free(&out);
    wp_stats_free(st);
}

static void test_json(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    wp_stat_add(wp_stats_get_shard(st, 0), wp_stats_counter(st, "b.q\"uote"), 2);
    wp_stat_add(wp_stats_get_shard(st, 0), wp_stats_gauge(st, "a.g"), -1);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_json(st, NULL, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "{\"stats\":[{\"name\":\"a.g\",\"value\":-1},"
                                              "{\"name\":\"b.q\\\"uote\",\"value\":2}]}");
    json_error_t jerr;
    json_t *j = json_loads(wf_strbuf_cstr(&out), 0, &jerr);
    assert_non_null(j);
    json_decref(j);
    wf_strbuf_reset(&out);
    wp_stats *empty = wp_stats_new(1);
    wp_stats_render_json(empty, NULL, false, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "{\"stats\":[]}");
    wp_stats_free(empty);
    wf_strbuf_free(&out);
    wp_stats_free(st);
}

static void test_prometheus_default_tags(void **state)
{
    (void)state;
    wp_stats *st = sample_store();
    wf_strbuf err = WF_STRBUF_INIT;
    wp_stats_tags *tags = wp_stats_tags_from_config(NULL, &err);
    assert_non_null(tags);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_prometheus(st, tags, false, NULL, &out);
    assert_string_equal(
        wf_strbuf_cstr(&out),
        "# TYPE envoy_cluster_ns_svc_cluster_local_upstream_rq_total counter\n"
        "envoy_cluster_ns_svc_cluster_local_upstream_rq_total{envoy_cluster_name=\"outbound|80||"
        "x\"} 6\n"
        "# TYPE envoy_cluster_upstream_rq counter\n"
        "envoy_cluster_upstream_rq{envoy_response_code=\"200\",envoy_cluster_name=\"x\"} 2\n"
        "envoy_cluster_upstream_rq{envoy_response_code=\"503\",envoy_cluster_name=\"x\"} 1\n"
        "# TYPE envoy_cluster_upstream_rq_total counter\n"
        "envoy_cluster_upstream_rq_total{envoy_cluster_name=\"x\"} 3\n"
        "# TYPE envoy_cluster_upstream_rq_xx counter\n"
        "envoy_cluster_upstream_rq_xx{envoy_response_code_class=\"2\",envoy_cluster_name=\"x\"} 2\n"
        "envoy_cluster_upstream_rq_xx{envoy_response_code_class=\"5\",envoy_cluster_name=\"x\"} 1\n"
        "# TYPE envoy_http_downstream_rq counter\n"
        "envoy_http_downstream_rq{envoy_response_code=\"404\",envoy_http_conn_manager_prefix="
        "\"ingress\"} 1\n"
        "# TYPE envoy_http_downstream_rq_xx counter\n"
        "envoy_http_downstream_rq_xx{envoy_response_code_class=\"4\",envoy_http_conn_manager_"
        "prefix=\"ingress\"} 1\n"
        "# TYPE envoy_listener_downstream_cx_total counter\n"
        "envoy_listener_downstream_cx_total{envoy_listener_address=\"0.0.0.0_15006\"} 4\n"
        "# TYPE envoy_server_live gauge\n"
        "envoy_server_live{} 1\n");

    /* filter on the full name, no tags at all */
    pcre2_code *f = re("^server\\.");
    wf_strbuf_reset(&out);
    wp_stats_render_prometheus(st, NULL, false, f, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "# TYPE envoy_server_live gauge\n"
                                              "envoy_server_live{} 1\n");
    pcre2_code_free(f);
    wp_stats_tags_free(tags);
    wf_strbuf_free(&out);
    wf_strbuf_free(&err);
    wp_stats_free(st);
}

/* Istio's bootstrap stats_config (the tags that matter here, in Istio's order). */
static const char *istio_stats_config =
    "{\"use_all_default_tags\": false, \"stats_tags\": ["
    "{\"tag_name\": \"cluster_name\", \"regex\": \"^cluster(\\\\.(.+);)\"},"
    "{\"tag_name\": \"http_conn_manager_prefix\", \"regex\": "
    "\"^http\\\\.(((?:[_.[:digit:]\\\\w]*|[_\\\\[\\\\]aAbBcCdDeEfF[:digit:]\\\\w\\\\:]*));\\\\.)\"}"
    ","
    "{\"tag_name\": \"thread_name\", \"regex\": \"^server(\\\\.(.+))\\\\.watchdog\"},"
    "{\"tag_name\": \"tcp_prefix\", \"regex\": \"^tcp\\\\.((.*?)\\\\.)\\\\w+?$\"},"
    "{\"regex\": \"_rq(_(\\\\d{3}))$\", \"tag_name\": \"response_code\"},"
    "{\"tag_name\": \"response_code_class\", \"regex\": \"_rq(_(\\\\dxx))$\"},"
    "{\"tag_name\": \"listener_address\", \"regex\": "
    "\"^listener\\\\.(((?:[_.[:digit:]]*|[_\\\\[\\\\]aAbBcCdDeEfF[:digit:]]*))\\\\.)\"},"
    "{\"tag_name\": \"mesh\", \"fixed_value\": \"m\\\"1\"}"
    "]}";

static void test_prometheus_istio_tags(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *cfg = json_loads(istio_stats_config, 0, &jerr);
    assert_non_null(cfg);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_stats_tags *tags = wp_stats_tags_from_config(cfg, &err);
    if (!tags)
        fail_msg("%s", wf_strbuf_cstr(&err));
    json_decref(cfg);

    wp_stats *st = wp_stats_new(1);
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_code_stats *cs = wp_stats_code_local(
        sh, wp_stats_code_scope(st, "cluster.outbound|80||x.ns.svc.cluster.local;.upstream_rq"));
    wp_code_stat_add(cs, 200);
    wp_code_stat_add(cs, 503);
    wp_stat_add(sh, wp_stats_counter(st, "cluster.xds-grpc;.upstream_cx_total"), 2);
    wp_stat_add(sh, wp_stats_gauge(st, "listener.0.0.0.0_15006.downstream_cx_active"), 1);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_prometheus(st, tags, false, NULL, &out);
    assert_string_equal(
        wf_strbuf_cstr(&out),
        "# TYPE envoy_cluster_upstream_cx_total counter\n"
        "envoy_cluster_upstream_cx_total{mesh=\"m\\\"1\",cluster_name=\"xds-grpc\"} 2\n"
        "# TYPE envoy_cluster_upstream_rq counter\n"
        "envoy_cluster_upstream_rq{mesh=\"m\\\"1\",cluster_name=\"outbound|80||x.ns.svc.cluster."
        "local\",response_code=\"200\"} 1\n"
        "envoy_cluster_upstream_rq{mesh=\"m\\\"1\",cluster_name=\"outbound|80||x.ns.svc.cluster."
        "local\",response_code_class=\"2xx\"} 1\n"
        "envoy_cluster_upstream_rq{mesh=\"m\\\"1\",cluster_name=\"outbound|80||x.ns.svc.cluster."
        "local\",response_code=\"503\"} 1\n"
        "envoy_cluster_upstream_rq{mesh=\"m\\\"1\",cluster_name=\"outbound|80||x.ns.svc.cluster."
        "local\",response_code_class=\"5xx\"} 1\n"
        "# TYPE envoy_listener_downstream_cx_active gauge\n"
        "envoy_listener_downstream_cx_active{mesh=\"m\\\"1\",listener_address=\"0.0.0.0_15006\"} "
        "1\n");

    wf_strbuf name = WF_STRBUF_INIT, tl = WF_STRBUF_INIT;
    assert_int_equal(wp_stats_tags_extract(tags, "server.main_thread.watchdog_miss", &name, &tl),
                     2);
    assert_string_equal(wf_strbuf_cstr(&name), "server.watchdog_miss");
    assert_string_equal(wf_strbuf_cstr(&tl), "mesh=m\"1,thread_name=main_thread");
    wf_strbuf_free(&name);
    wf_strbuf_free(&tl);
    wp_stats_tags_free(tags);
    wf_strbuf_free(&out);
    wf_strbuf_free(&err);
    wp_stats_free(st);
}

static void expect_tags_error(const char *json, const char *msg)
{
    json_error_t jerr;
    json_t *cfg = json_loads(json, 0, &jerr);
    assert_non_null(cfg);
    wf_strbuf err = WF_STRBUF_INIT;
    assert_null(wp_stats_tags_from_config(cfg, &err));
    assert_non_null(strstr(wf_strbuf_cstr(&err), msg));
    wf_strbuf_free(&err);
    json_decref(cfg);
}

static void test_tags_config(void **state)
{
    (void)state;
    expect_tags_error("{\"stats_tags\":[{\"tag_name\":\"envoy.cluster_name\",\"regex\":\"(x)\"}]}",
                      "Tag name 'envoy.cluster_name' specified twice.");
    expect_tags_error("{\"use_all_default_tags\":false,\"stats_tags\":[{\"tag_name\":\"a\","
                      "\"regex\":\"(x)\"},{\"tag_name\":\"a\",\"fixed_value\":\"1\"}]}",
                      "Tag name 'a' specified twice.");
    expect_tags_error("{\"use_all_default_tags\":false,\"stats_tags\":[{\"tag_name\":\"nope\"}]}",
                      "No regex specified for tag specifier and no default regex for name: "
                      "'nope'");
    expect_tags_error("{\"stats_tags\":[{\"tag_name\":\"t\",\"regex\":\"(unclosed\"}]}",
                      "tag 't': invalid regex '(unclosed'");
    expect_tags_error("{\"stats_tags\":[{\"tag_name\":\"t\",\"regex\":\"x\"}]}",
                      "has no capture group");
    expect_tags_error("{\"use_all_default_tags\":\"yes\"}", "use_all_default_tags");

    /* picking one default extractor by name, defaults off */
    json_error_t jerr;
    json_t *cfg = json_loads("{\"use_all_default_tags\":false,\"stats_tags\":"
                             "[{\"tag_name\":\"envoy.cluster_name\"}]}",
                             0, &jerr);
    wp_stats_tags *t = wp_stats_tags_from_config(cfg, NULL);
    assert_non_null(t);
    wf_strbuf name = WF_STRBUF_INIT, tl = WF_STRBUF_INIT;
    assert_int_equal(wp_stats_tags_extract(t, "cluster.x.upstream_rq_200", &name, &tl), 1);
    assert_string_equal(wf_strbuf_cstr(&name), "cluster.upstream_rq_200");
    assert_string_equal(wf_strbuf_cstr(&tl), "envoy.cluster_name=x");
    wf_strbuf_free(&name);
    wf_strbuf_free(&tl);
    wp_stats_tags_free(t);
    json_decref(cfg);
}

static void test_default_extractors_misc(void **state)
{
    (void)state;
    wp_stats_tags *t = wp_stats_tags_from_config(NULL, NULL);
    assert_non_null(t);
    wf_strbuf name = WF_STRBUF_INIT, tl = WF_STRBUF_INIT;
    /* "admin" is not a listener address (negative match) */
    assert_int_equal(wp_stats_tags_extract(t, "listener.admin.downstream_cx_total", &name, &tl), 0);
    assert_string_equal(wf_strbuf_cstr(&name), "listener.admin.downstream_cx_total");
    wf_strbuf_reset(&name);
    wf_strbuf_reset(&tl);
    wp_stats_tags_extract(t, "listener_manager.worker_3.dispatcher.loop_duration_us", &name, &tl);
    /* Envoy removes only "3." (worker_((\d+)\.)): the family keeps "worker_" */
    assert_string_equal(wf_strbuf_cstr(&name),
                        "listener_manager.worker_dispatcher.loop_duration_us");
    assert_string_equal(wf_strbuf_cstr(&tl), "envoy.worker_id=3");
    wf_strbuf_reset(&name);
    wf_strbuf_reset(&tl);
    wp_stats_tags_extract(t, "vhost.backend.route.r1.upstream_rq_200", &name, &tl);
    assert_string_equal(wf_strbuf_cstr(&name), "vhost.route.upstream_rq");
    assert_string_equal(wf_strbuf_cstr(&tl),
                        "envoy.response_code=200,envoy.virtual_host=backend,envoy.route=r1");
    wf_strbuf_free(&name);
    wf_strbuf_free(&tl);
    wp_stats_tags_free(t);
}

static void test_render_type(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_stat_add(sh, wp_stats_counter(st, "c.one"), 3);
    wp_stat_add(sh, wp_stats_gauge(st, "g.one"), 4);
    wp_hist_record(sh, wp_stats_histogram(st, "h.one"), 7);
    wp_stats_type t;
    assert_int_equal(wp_stats_type_parse("Counters", &t), 0);
    assert_int_equal(t, WP_STATS_TYPE_COUNTERS);
    assert_int_equal(wp_stats_type_parse("counters", &t), -1);
    assert_int_equal(wp_stats_type_parse("TextReadouts", &t), 0);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_stats_render_text_type(st, NULL, false, WP_STATS_TYPE_COUNTERS, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "c.one: 3\n");
    wf_strbuf_reset(&out);
    wp_stats_render_text_type(st, NULL, false, WP_STATS_TYPE_GAUGES, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "g.one: 4\n");
    wf_strbuf_reset(&out);
    wp_stats_render_text_type(st, NULL, false, WP_STATS_TYPE_HISTOGRAMS, &out);
    assert_non_null(strstr(wf_strbuf_cstr(&out), "h.one: P0("));
    assert_null(strstr(wf_strbuf_cstr(&out), "c.one"));
    wf_strbuf_reset(&out);
    wp_stats_render_text_type(st, NULL, false, WP_STATS_TYPE_TEXT_READOUTS, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "");
    wf_strbuf_reset(&out);
    wp_stats_render_json_type(st, NULL, false, WP_STATS_TYPE_GAUGES, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "{\"stats\":[{\"name\":\"g.one\",\"value\":4}]}");
    wf_strbuf_reset(&out);
    wp_stats_render_json_type(st, NULL, false, WP_STATS_TYPE_HISTOGRAMS, &out);
    assert_non_null(strstr(wf_strbuf_cstr(&out), "\"computed_quantiles\""));
    assert_null(strstr(wf_strbuf_cstr(&out), "g.one"));
    wf_strbuf_free(&out);
    wp_stats_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registration_idempotent),
        cmocka_unit_test(test_shard_sums_and_growth),
        cmocka_unit_test(test_concurrent_writer_and_reader),
        cmocka_unit_test(test_usedonly),
        cmocka_unit_test(test_reset_counters),
        cmocka_unit_test(test_code_stats),
        cmocka_unit_test(test_text_sorted_and_filter),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_render_type),
        cmocka_unit_test(test_prometheus_default_tags),
        cmocka_unit_test(test_prometheus_istio_tags),
        cmocka_unit_test(test_tags_config),
        cmocka_unit_test(test_default_extractors_misc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
