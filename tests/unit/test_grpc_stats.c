/*
 * test_grpc_stats.c - envoy.filters.http.grpc_stats (filters/http/grpc_stats.h,
 * grpc_stats.c, grpc_stats_filter.c; bootstrap/bootstrap_grpc_stats.c): the frame counter
 * over messages split anywhere across DATA chunks (0-length messages, the compressed flag,
 * lengths larger than any chunk), the filter on a stream (the cluster's grpc.* counters, the
 * GrpcStatsObject filter state, requests that are not gRPC left alone, trailers-only
 * failures) and the typed_config the loader accepts (Istio's) and rejects by JSON path.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#include "proxy/config/config.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/http/grpc_stats.h"
#include "proxy/http/filter.h"
#include "proxy/pstats/pstats.h"
#include "proxy/stats/stats.h"

/* ---------- frame counter ---------- */

/* Three messages: "abc" uncompressed, "xy" with the compressed flag, then an empty one. */
static const unsigned char MSGS[] = {0, 0, 0, 0,   3,   'a', 'b', 'c', 1, 0,
                                     0, 0, 2, 'x', 'y', 0,   0,   0,   0, 0};

static void test_frames_one_chunk(void **state)
{
    (void)state;
    wp_grpc_frame_counter fc = {0};
    assert_int_equal(wp_grpc_frame_count(&fc, (const char *)MSGS, sizeof MSGS), 3);
    assert_int_equal(fc.count, 3);
    assert_int_equal(wp_grpc_frame_count(&fc, NULL, 0), 0);
    assert_int_equal(fc.count, 3);
    /* the next message starts cleanly after the empty one */
    assert_int_equal(wp_grpc_frame_count(&fc, (const char *)MSGS, 5), 1);
    assert_int_equal(fc.count, 4);
}

static void test_frames_split_anywhere(void **state)
{
    (void)state;
    for (size_t cut = 0; cut <= sizeof MSGS; cut++) {
        wp_grpc_frame_counter fc = {0};
        uint64_t a = wp_grpc_frame_count(&fc, (const char *)MSGS, cut);
        uint64_t b = wp_grpc_frame_count(&fc, (const char *)MSGS + cut, sizeof MSGS - cut);
        assert_int_equal(a + b, 3);
        assert_int_equal(fc.count, 3);
        /* a message counts in the chunk that holds its flag byte */
        uint64_t want_a = (cut > 0) + (cut > 8) + (cut > 15);
        assert_int_equal(a, want_a);
    }
    wp_grpc_frame_counter fc = {0};
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof MSGS; i++) /* one byte per chunk */
        sum += wp_grpc_frame_count(&fc, (const char *)MSGS + i, 1);
    assert_int_equal(sum, 3);
    assert_int_equal(fc.state, 0); /* waiting for the next flag byte */
}

static void test_frames_long_message(void **state)
{
    (void)state;
    /* a 16 MiB + 1 message whose bytes never fit one chunk: skipped without being held */
    static char chunk[65536];
    const unsigned char head[5] = {0, 0x01, 0x00, 0x00, 0x01};
    wp_grpc_frame_counter fc = {0};
    assert_int_equal(wp_grpc_frame_count(&fc, (const char *)head, 5), 1);
    uint64_t left = 0x01000001u;
    while (left > sizeof chunk) {
        assert_int_equal(wp_grpc_frame_count(&fc, chunk, sizeof chunk), 0);
        left -= sizeof chunk;
    }
    /* the last bytes of it and the flag byte of the next one in one chunk */
    memset(chunk, 0, left + 1);
    assert_int_equal(wp_grpc_frame_count(&fc, chunk, left + 1), 1);
    assert_int_equal(fc.count, 2);
}

static void test_is_response(void **state)
{
    (void)state;
    assert_true(wp_grpc_is_response(200, "application/grpc", 16, false, false));
    assert_true(wp_grpc_is_response(200, "application/grpc+proto", 22, false, false));
    assert_false(wp_grpc_is_response(200, "application/grpc-web", 20, false, false));
    assert_false(wp_grpc_is_response(503, "application/grpc", 16, false, false));
    assert_false(wp_grpc_is_response(200, NULL, 0, false, false));
    assert_true(wp_grpc_is_response(200, NULL, 0, true, true)); /* trailers-only */
    assert_false(wp_grpc_is_response(200, "application/grpc", 16, false, true));
}

/* ---------- the filter on a stream ---------- */

struct wp_stream {
    wp_fchain_state st;
    alignas(max_align_t) unsigned char slots[WP_FCHAIN_SLOTS_MAX];
    wp_stream_info si;
    int cluster;
    wp_stats *store;
    uint32_t slot[WP_GRPC_COUNT_];
};

static wp_stream_info *stream_info(struct wp_stream *s)
{
    return &s->si;
}

static int cluster_of(struct wp_stream *s)
{
    return s->cluster;
}

static struct wp_stats_shard *stats_of(struct wp_stream *s)
{
    return wp_stats_get_shard(s->store, 0);
}

static uint32_t grpc_stat(struct wp_stream *s, int cluster, int which)
{
    assert_int_equal(cluster, s->cluster);
    return s->slot[which];
}

static const wp_filter_callbacks cbs = {.stream_info = stream_info,
                                        .cluster = cluster_of,
                                        .stats = stats_of,
                                        .cluster_grpc_stat = grpc_stat};

#define LPFX "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

/* A bootstrap whose HCM has the filter with typed_config tc ("" = none), the filters extra
 * ("" or ",{...}..."), then the router. */
static char *boot_with(const char *tc, const char *extra)
{
    char *text = NULL;
    int n = asprintf(
        &text,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"in\",\"http_filters\":[{\"name\":\"envoy.filters.http.grpc_stats\""
        "%s%s}%s,{\"name\":\"envoy.filters.http.router\"}],\"route_config\":{\"virtual_hosts\":[{"
        "\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{"
        "\"cluster\":\"c\"}}]}]}}}]}]}],\"clusters\":[{\"name\":\"c\",\"load_assignment\":{"
        "\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{"
        "\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]}}",
        *tc ? ",\"typed_config\":" : "", tc, extra);
    assert_true(n > 0);
    return text;
}

static char *boot(const char *tc)
{
    return boot_with(tc, "");
}

#define ISTIO_TC                                                                                   \
    "{\"@type\":\"" WP_GRPC_STATS_TYPE "\",\"emit_filter_state\":true,"                            \
    "\"stats_for_all_methods\":false}"

static wp_config *load(const char *tc)
{
    char *text = boot(tc);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

typedef struct {
    wp_config *c;
    wp_fchain fc; /* the HCM's chain without the router */
    struct wp_stream *s;
} fixture;

static void start(fixture *fx, const char *tc)
{
    fx->c = load(tc);
    fx->fc = *fx->c->listeners[0].chains[0].hcm->filter_chain;
    assert_int_equal(fx->fc.n, 2);
    fx->fc.n--;
    struct wp_stream *s = fx->s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->store = wp_stats_new(1);
    assert_non_null(s->store);
    for (int i = 0; i < WP_GRPC_COUNT_; i++) {
        char name[32];
        snprintf(name, sizeof name, "g.%d", i);
        s->slot[i] = wp_stats_counter(s->store, name);
    }
    wp_fchain_start(&s->st, &fx->fc, s->slots, s, &cbs);
}

static void finish(fixture *fx)
{
    wp_stats_free(fx->s->store);
    free(fx->s);
    wp_config_unref(fx->c);
}

static int64_t stat_of(const fixture *fx, int which)
{
    return wp_stats_value(fx->s->store, fx->s->slot[which]);
}

static void request(fixture *fx, const char *ct)
{
    h1_header h[2] = {{{":path", 5}, {"/shop.Echo/Echo", 15}},
                      {{"content-type", 12}, {ct, strlen(ct)}}};
    wp_filter_headers fh = {h, 2, 0};
    assert_int_equal(wp_fchain_decode_headers(&fx->s->st, fx->s, &cbs, &fh, false), WP_FCHAIN_DONE);
}

static void data(fixture *fx, bool req, const void *p, size_t n)
{
    wp_fchain_result r = req ? wp_fchain_decode_data(&fx->s->st, fx->s, &cbs, p, n, false)
                             : wp_fchain_encode_data(&fx->s->st, fx->s, &cbs, p, n, false);
    assert_int_equal(r, WP_FCHAIN_DONE);
}

static void response(fixture *fx, int status, const char *ct, const char *grpc_status, bool end)
{
    h1_header h[2];
    size_t n = 0;
    if (ct)
        h[n++] = (h1_header){{"content-type", 12}, {ct, strlen(ct)}};
    if (grpc_status)
        h[n++] = (h1_header){{"grpc-status", 11}, {grpc_status, strlen(grpc_status)}};
    wp_filter_headers fh = {h, n, status};
    assert_int_equal(wp_fchain_encode_headers(&fx->s->st, fx->s, &cbs, &fh, end), WP_FCHAIN_DONE);
}

static void trailers(fixture *fx, const char *grpc_status)
{
    h1_header t[1] = {{{"grpc-status", 11}, {grpc_status, strlen(grpc_status)}}};
    assert_int_equal(wp_fchain_encode_trailers(&fx->s->st, fx->s, &cbs, t, 1), WP_FCHAIN_DONE);
}

static void test_filter_streaming_call(void **state)
{
    (void)state;
    fixture fx;
    start(&fx, ISTIO_TC);
    request(&fx, "application/grpc+proto");
    assert_false(fx.s->si.grpc_stats.present); /* no message yet: no filter state */
    data(&fx, true, MSGS, 7);                  /* the first message split over two chunks */
    assert_true(fx.s->si.grpc_stats.present);
    assert_int_equal(fx.s->si.grpc_stats.request_message_count, 1);
    data(&fx, true, MSGS + 7, sizeof MSGS - 7);
    response(&fx, 200, "application/grpc", NULL, false);
    for (int i = 0; i < 4; i++) /* server streaming: four messages, one chunk each */
        data(&fx, false, MSGS, 8);
    data(&fx, false, MSGS + 15, 5); /* and an empty one */
    trailers(&fx, "0");
    assert_int_equal(stat_of(&fx, WP_GRPC_request_message_count), 3);
    assert_int_equal(stat_of(&fx, WP_GRPC_response_message_count), 5);
    assert_int_equal(stat_of(&fx, WP_GRPC_success), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_failure), 0);
    assert_int_equal(stat_of(&fx, WP_GRPC_total), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_status0), 1);
    assert_int_equal(fx.s->si.grpc_stats.request_message_count, 3);
    assert_int_equal(fx.s->si.grpc_stats.response_message_count, 5);
    finish(&fx);
}

static void test_filter_trailers_only_failure(void **state)
{
    (void)state;
    fixture fx;
    start(&fx, ISTIO_TC);
    request(&fx, "application/grpc");
    data(&fx, true, MSGS, 8);
    response(&fx, 200, "application/grpc", "14", true);
    assert_int_equal(stat_of(&fx, WP_GRPC_failure), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_success), 0);
    assert_int_equal(stat_of(&fx, WP_GRPC_total), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_status0 + 14), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_request_message_count), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_response_message_count), 0);
    finish(&fx);

    /* a status outside 0..16 still counts as a failure; no grpc-status charges nothing */
    start(&fx, ISTIO_TC);
    request(&fx, "application/grpc");
    response(&fx, 200, "application/grpc", NULL, false);
    trailers(&fx, "42");
    assert_int_equal(stat_of(&fx, WP_GRPC_failure), 1);
    assert_int_equal(stat_of(&fx, WP_GRPC_total), 1);
    finish(&fx);
    start(&fx, ISTIO_TC);
    request(&fx, "application/grpc");
    response(&fx, 200, "application/grpc", NULL, false);
    assert_int_equal(stat_of(&fx, WP_GRPC_total), 0);
    finish(&fx);
}

static void test_filter_not_grpc(void **state)
{
    (void)state;
    static const char *const cts[] = {"application/json", "application/grpc-web",
                                      "application/grpcx"};
    for (size_t i = 0; i < sizeof cts / sizeof cts[0]; i++) {
        fixture fx;
        start(&fx, ISTIO_TC);
        request(&fx, cts[i]);
        data(&fx, true, MSGS, sizeof MSGS);
        response(&fx, 200, "application/grpc", NULL, false);
        data(&fx, false, MSGS, sizeof MSGS);
        trailers(&fx, "0");
        for (int w = 0; w < WP_GRPC_COUNT_; w++)
            assert_int_equal(stat_of(&fx, w), 0);
        assert_false(fx.s->si.grpc_stats.present);
        finish(&fx);
    }
    /* a gRPC request whose response is not gRPC (a 503 page): its body is not counted */
    fixture fx;
    start(&fx, ISTIO_TC);
    request(&fx, "application/grpc");
    response(&fx, 503, "text/plain", NULL, false);
    data(&fx, false, MSGS, sizeof MSGS);
    assert_int_equal(stat_of(&fx, WP_GRPC_response_message_count), 0);
    finish(&fx);
    /* no cluster (no route): nothing */
    start(&fx, ISTIO_TC);
    fx.s->cluster = -1;
    request(&fx, "application/grpc");
    data(&fx, true, MSGS, sizeof MSGS);
    assert_false(fx.s->si.grpc_stats.present);
    fx.s->cluster = 0;
    assert_int_equal(stat_of(&fx, WP_GRPC_request_message_count), 0);
    finish(&fx);
}

static void test_filter_no_filter_state(void **state)
{
    (void)state;
    fixture fx;
    start(&fx, ""); /* no typed_config: emit_filter_state false */
    request(&fx, "application/grpc");
    data(&fx, true, MSGS, sizeof MSGS);
    assert_int_equal(stat_of(&fx, WP_GRPC_request_message_count), 3);
    assert_false(fx.s->si.grpc_stats.present);
    finish(&fx);
}

/* ---------- config ---------- */

static void expect_rejected(const char *tc, const char *want)
{
    char *text = boot(tc);
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

#define TC(rest) "{\"@type\":\"" WP_GRPC_STATS_TYPE "\"" rest "}"
#define AT       "t.json: " LPFX ".http_filters[0].typed_config."

static void test_config(void **state)
{
    (void)state;
    wp_config *c = load(ISTIO_TC);
    const wp_grpc_stats_config *g =
        wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_GRPC_STATS_NAME);
    assert_non_null(g);
    assert_true(g->emit_filter_state);
    wp_config_unref(c);
    c = load(TC(",\"enable_upstream_stats\":false,\"replace_dots_in_grpc_service_name\":false"));
    g = wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_GRPC_STATS_NAME);
    assert_false(g->emit_filter_state);
    wp_config_unref(c);

    /* Istio's filters of a gRPC port fit one stream's slots with the router */
    char *text = boot_with(ISTIO_TC, ",{\"name\":\"envoy.filters.http.fault\"},{\"name\":"
                                     "\"envoy.filters.http.cors\"},{\"name\":\"istio.stats\"}");
    wf_strbuf err = WF_STRBUF_INIT;
    c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    assert_int_equal(c->listeners[0].chains[0].hcm->filter_chain->n, 5);
    wp_config_unref(c);

    expect_rejected(TC(",\"stats_for_all_methods\":true"),
                    AT "stats_for_all_methods: per-method stats (true) is not supported by "
                       "weft-proxy's envoy.filters.http.grpc_stats");
    expect_rejected(TC(",\"individual_method_stats_allowlist\":{\"services\":[]}"),
                    AT "individual_method_stats_allowlist: per-method stats are not supported "
                       "by weft-proxy's envoy.filters.http.grpc_stats");
    expect_rejected(TC(",\"enable_upstream_stats\":true"),
                    AT "enable_upstream_stats: upstream_rq_time (true) is not supported by "
                       "weft-proxy's envoy.filters.http.grpc_stats");
    expect_rejected(TC(",\"replace_dots_in_grpc_service_name\":true"),
                    AT "replace_dots_in_grpc_service_name: renaming services (true) is not "
                       "supported by weft-proxy's envoy.filters.http.grpc_stats");
    expect_rejected(TC(",\"emit_filter_state\":\"yes\""),
                    AT "emit_filter_state: wrong type: expected a boolean");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_one_chunk),
        cmocka_unit_test(test_frames_split_anywhere),
        cmocka_unit_test(test_frames_long_message),
        cmocka_unit_test(test_is_response),
        cmocka_unit_test(test_filter_streaming_call),
        cmocka_unit_test(test_filter_trailers_only_failure),
        cmocka_unit_test(test_filter_not_grpc),
        cmocka_unit_test(test_filter_no_filter_state),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
