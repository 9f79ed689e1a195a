/*
 * test_fault_filter.c - envoy.filters.http.fault as a filter of the HTTP filter chain
 * (filters/http/fault_filter.c): the chain [fault, a fake router] from a real bootstrap, run
 * over a fake connection manager. Abort (local reply, FI, the router never decodes), delay (the
 * chain stops, DI, the filter timer, the router decodes after it), delay then abort, a reply
 * during the delay, max_active_faults, the empty HTTPFault and per-route settings; the
 * active_faults gauge goes back on destroy.
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
#include "proxy/filters/http/fault.h"
#include "proxy/filters/http/filters.h"
#include "proxy/http/filter.h"
#include "proxy/stats/stats.h"

/* ---------- a fake connection manager ---------- */

struct wp_stream {
    wp_fchain_state st;
    alignas(max_align_t) unsigned char slots[WP_FCHAIN_SLOTS_MAX];
    wp_stream_info si;
    const wp_route *route;
    const wp_vhost *vhost;
    wp_regex_ctx rx;
    wp_stats_shard *sh;
    int replies, reply_status, reply_flag;
    const char *reply_body, *reply_details;
    int arms, disarms;
    uint64_t armed_ms;
    int router_decodes, router_datas;
};

static const wp_filter_callbacks cbs;

static void local_reply(struct wp_stream *s, int status, const char *body, const char *details,
                        int flag)
{
    s->replies++;
    s->reply_status = status;
    s->reply_body = body;
    s->reply_details = details;
    s->reply_flag = flag;
    if (flag >= 0)
        wp_si_set_flag(&s->si, (wp_response_flag)flag);
    wp_filter_headers h = {NULL, 0, status};
    wp_fchain_local_reply(&s->st, s, &cbs, &h, true);
}

static void continue_decoding(struct wp_stream *s)
{
    wp_filter_headers h = {NULL, 0, 0};
    wp_fchain_continue_decoding(&s->st, s, &cbs, &h);
}

static const wp_route *route(struct wp_stream *s)
{
    return s->route;
}

static const wp_vhost *vhost(struct wp_stream *s)
{
    return s->vhost;
}

static void request(struct wp_stream *s, wp_route_req *rq)
{
    (void)s;
    static h1_header hs[1] = {{{"x-fault", 7}, {"on", 2}}};
    *rq = (wp_route_req){
        .method = "GET", .method_len = 3, .path = "/", .path_len = 1, .headers = hs, .nheaders = 1};
}

static wp_stream_info *stream_info(struct wp_stream *s)
{
    return &s->si;
}

static wp_regex_ctx *regex(struct wp_stream *s)
{
    return &s->rx;
}

static uint64_t draw(struct wp_stream *s)
{
    (void)s;
    return 0; /* 0 % denominator < numerator: every non-zero percentage hits */
}

static struct wp_stats_shard *stats(struct wp_stream *s)
{
    return s->sh;
}

static uint64_t connection_id(struct wp_stream *s)
{
    (void)s;
    return 1;
}

static void arm(struct wp_stream *s, uint64_t ms)
{
    s->arms++;
    s->armed_ms = ms;
}

static void disarm(struct wp_stream *s)
{
    s->disarms++;
}

static const wp_filter_callbacks cbs = {
    .send_local_reply = local_reply,
    .continue_decoding = continue_decoding,
    .route = route,
    .vhost = vhost,
    .request = request,
    .stream_info = stream_info,
    .regex = regex,
    .random = draw,
    .stats = stats,
    .connection_id = connection_id,
    .arm_timer = arm,
    .disarm_timer = disarm,
};

/* The fake router: counts what reaches it. */
static wp_filter_headers_status router_dh(const wp_filter *f, wp_filter_headers *h, bool end)
{
    (void)h;
    (void)end;
    f->stream->router_decodes++;
    return WP_FILTER_HEADERS_STOP_ITERATION;
}

static wp_filter_data_status router_dd(const wp_filter *f, const char *d, size_t n, bool end)
{
    (void)d;
    (void)n;
    (void)end;
    f->stream->router_datas++;
    return WP_FILTER_DATA_CONTINUE;
}

static const wp_http_filter_type fake_router = {
    .name = "test.router", .terminal = true, .decode_headers = router_dh, .decode_data = router_dd};

/* ---------- fixtures ---------- */

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define FAULT_T "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault\""

typedef struct {
    wp_config *cfg;
    wp_stats *store;
    wp_fchain fc; /* [the loaded fault filter, the fake router] */
    struct wp_stream *s;
    wp_fault_filter *f;
} fixture;

/* A bootstrap whose fault filter has HTTPFault fields `body` and whose one route has `rtpf`
 * (its typed_per_filter_config value, or ""). */
static void setup(fixture *x, const char *body, const char *rtpf)
{
    char *text = NULL;
    char per_route[512] = "";
    if (rtpf[0])
        snprintf(per_route, sizeof per_route,
                 ",\"typed_per_filter_config\":{\"envoy.filters.http.fault\":{" FAULT_T "%s}}",
                 rtpf);
    int n = asprintf(
        &text,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"in\",\"http_filters\":[{\"name\":\"envoy.filters.http.fault\","
        "\"typed_config\":{" FAULT_T "%s}},{\"name\":\"envoy.filters.http.router\"}],"
        "\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[{"
        "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}%s}]}]}}}]}]}],\"clusters\":[{"
        "\"name\":\"c\",\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
        "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]"
        "}}",
        body, per_route);
    assert_true(n > 0);
    wf_strbuf err = WF_STRBUF_INIT;
    x->cfg = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!x->cfg)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    x->store = wp_stats_new(1);
    assert_non_null(x->store);
    assert_int_equal(wp_fault_register_stats(x->store, x->cfg), 0);
    const wp_hcm *h = x->cfg->listeners[0].chains[0].hcm;
    x->f = (wp_fault_filter *)(uintptr_t)h->filter_chain->e[0].config;
    /* the loaded chain's fault entry, then the fake router in place of the real one */
    assert_ptr_equal(h->filter_chain->e[0].type, &wp_http_filter_fault);
    memset(&x->fc, 0, sizeof x->fc);
    assert_int_equal(wp_fchain_add(&x->fc, &wp_http_filter_fault, h->filter_chain->e[0].config), 0);
    assert_int_equal(wp_fchain_add(&x->fc, &fake_router, NULL), 0);
    x->s = calloc(1, sizeof *x->s);
    assert_non_null(x->s);
    assert_int_equal(wp_regex_ctx_init(&x->s->rx), 0);
    x->s->sh = wp_stats_get_shard(x->store, 0);
    x->s->vhost = &h->route_config->vhosts[0];
    x->s->route = &h->route_config->vhosts[0].routes[0];
    wp_fchain_start(&x->s->st, &x->fc, x->s->slots, x->s, &cbs);
}

static void teardown(fixture *x)
{
    wp_regex_ctx_free(&x->s->rx);
    free(x->s);
    wp_stats_free(x->store);
    wp_config_unref(x->cfg);
}

static wp_fchain_result headers(fixture *x)
{
    wp_filter_headers h = {NULL, 0, 0};
    return wp_fchain_decode_headers(&x->s->st, x->s, &cbs, &h, false);
}

static void end_stream(fixture *x)
{
    wp_fchain_stream_complete(&x->s->st, x->s, &cbs);
    wp_fchain_log(&x->s->st, x->s, &cbs);
    wp_fchain_destroy(&x->s->st, x->s, &cbs);
}

static int64_t stat_of(fixture *x, uint32_t slot)
{
    return (int64_t)wp_stats_value(x->store, slot);
}

/* ---------- tests ---------- */

static void test_abort(void **state)
{
    (void)state;
    fixture x;
    setup(&x, ",\"abort\":{\"http_status\":418,\"percentage\":{\"numerator\":100}}", "");
    assert_int_equal(headers(&x), WP_FCHAIN_STOPPED);
    assert_int_equal(x.s->replies, 1);
    assert_int_equal(x.s->reply_status, 418);
    assert_string_equal(x.s->reply_body, WP_FAULT_ABORT_BODY);
    assert_string_equal(x.s->reply_details, WP_FAULT_ABORT_DETAILS);
    assert_int_equal(x.s->reply_flag, WP_RF_FI);
    assert_int_equal(x.s->router_decodes, 0);
    assert_int_equal(stat_of(&x, x.f->st_aborts), 1);
    assert_int_equal(stat_of(&x, x.f->st_active), 1);
    assert_int_equal(x.s->arms, 0);
    end_stream(&x);
    assert_int_equal(stat_of(&x, x.f->st_active), 0);
    assert_int_equal(atomic_load(&x.f->active), 0);
    teardown(&x);
}

static void test_delay(void **state)
{
    (void)state;
    fixture x;
    setup(&x, ",\"delay\":{\"fixed_delay\":\"0.3s\",\"percentage\":{\"numerator\":100}}", "");
    assert_int_equal(headers(&x), WP_FCHAIN_STOPPED);
    assert_int_equal(x.s->arms, 1);
    assert_int_equal(x.s->armed_ms, 300);
    assert_true(wp_fchain_timer_armed(&x.s->st));
    assert_true(wp_si_has_flag(&x.s->si, WP_RF_DI));
    assert_int_equal(stat_of(&x, x.f->st_delays), 1);
    assert_int_equal(stat_of(&x, x.f->st_active), 1);
    assert_int_equal(x.s->router_decodes, 0);
    /* the body waits while the delay runs */
    assert_int_equal(wp_fchain_decode_data(&x.s->st, x.s, &cbs, "b", 1, true), WP_FCHAIN_STOPPED);
    assert_int_equal(x.s->router_datas, 0);
    /* the delay ends: the router gets the request */
    wp_fchain_on_timer(&x.s->st, x.s, &cbs);
    assert_int_equal(x.s->router_decodes, 1);
    assert_int_equal(x.s->replies, 0);
    assert_false(wp_si_has_flag(&x.s->si, WP_RF_FI));
    end_stream(&x);
    assert_int_equal(x.s->disarms, 0); /* nothing left to disarm */
    assert_int_equal(stat_of(&x, x.f->st_active), 0);
    teardown(&x);
}

static void test_delay_then_abort(void **state)
{
    (void)state;
    fixture x;
    setup(&x,
          ",\"delay\":{\"fixed_delay\":\"1s\",\"percentage\":{\"numerator\":100}},"
          "\"abort\":{\"http_status\":503,\"percentage\":{\"numerator\":100}}",
          "");
    assert_int_equal(headers(&x), WP_FCHAIN_STOPPED);
    assert_int_equal(x.s->replies, 0);
    wp_fchain_on_timer(&x.s->st, x.s, &cbs);
    assert_int_equal(x.s->replies, 1);
    assert_int_equal(x.s->reply_status, 503);
    assert_true(wp_si_has_flag(&x.s->si, WP_RF_DI));
    assert_true(wp_si_has_flag(&x.s->si, WP_RF_FI));
    assert_int_equal(x.s->router_decodes, 0);
    assert_int_equal(stat_of(&x, x.f->st_delays), 1);
    assert_int_equal(stat_of(&x, x.f->st_aborts), 1);
    assert_int_equal(stat_of(&x, x.f->st_active), 1); /* one active fault per request */
    end_stream(&x);
    assert_int_equal(stat_of(&x, x.f->st_active), 0);
    teardown(&x);
}

/* A connection manager timeout answers during the delay: the timer does nothing, destroy
 * disarms it and gives the active fault back. */
static void test_reply_during_delay(void **state)
{
    (void)state;
    fixture x;
    setup(&x, ",\"delay\":{\"fixed_delay\":\"5s\",\"percentage\":{\"numerator\":100}}", "");
    headers(&x);
    local_reply(x.s, 504, "stream timeout", "stream_idle_timeout", -1);
    end_stream(&x);
    assert_int_equal(x.s->disarms, 1);
    assert_false(wp_fchain_timer_armed(&x.s->st));
    assert_int_equal(stat_of(&x, x.f->st_active), 0);
    wp_fchain_on_timer(&x.s->st, x.s, &cbs);
    assert_int_equal(x.s->router_decodes, 0);
    assert_int_equal(x.s->replies, 1);
    teardown(&x);
}

static void test_max_active_overflow(void **state)
{
    (void)state;
    fixture x;
    setup(&x,
          ",\"abort\":{\"http_status\":503,\"percentage\":{\"numerator\":100}},"
          "\"max_active_faults\":0",
          "");
    assert_int_equal(headers(&x), WP_FCHAIN_STOPPED); /* the router stops, as Envoy's does */
    assert_int_equal(x.s->replies, 0);
    assert_int_equal(x.s->router_decodes, 1);
    assert_int_equal(stat_of(&x, x.f->st_overflow), 1);
    assert_int_equal(stat_of(&x, x.f->st_active), 0);
    end_stream(&x);
    assert_int_equal(stat_of(&x, x.f->st_active), 0);
    teardown(&x);
}

/* Istio's listener-level filter (an empty HTTPFault) and a route's override. */
static void test_empty_and_per_route(void **state)
{
    (void)state;
    fixture x;
    setup(&x, "", "");
    headers(&x);
    assert_int_equal(x.s->router_decodes, 1);
    assert_int_equal(x.s->replies, 0);
    end_stream(&x);
    teardown(&x);

    setup(&x, "",
          ",\"abort\":{\"http_status\":500,\"percentage\":{\"numerator\":100}},"
          "\"headers\":[{\"name\":\"x-fault\",\"string_match\":{\"exact\":\"on\"}}]");
    headers(&x);
    assert_int_equal(x.s->replies, 1);
    assert_int_equal(x.s->reply_status, 500);
    assert_int_equal(x.s->router_decodes, 0);
    end_stream(&x);
    teardown(&x);

    /* the override's header matcher does not match: no fault */
    setup(&x, "",
          ",\"abort\":{\"http_status\":500,\"percentage\":{\"numerator\":100}},"
          "\"headers\":[{\"name\":\"x-fault\",\"string_match\":{\"exact\":\"off\"}}]");
    headers(&x);
    assert_int_equal(x.s->replies, 0);
    assert_int_equal(x.s->router_decodes, 1);
    end_stream(&x);
    teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_delay),
        cmocka_unit_test(test_delay_then_abort),
        cmocka_unit_test(test_reply_during_delay),
        cmocka_unit_test(test_max_active_overflow),
        cmocka_unit_test(test_empty_and_per_route),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
