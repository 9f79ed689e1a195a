/*
 * test_fault.c - the fault injection filter (fault.c, bootstrap_fault.c): HTTPFault parsing in
 * http_filters and typed_per_filter_config, error paths, percentage maths with every
 * denominator, the per-request decision, settings resolution (route > virtual host > filter),
 * header matching, stats registration and /config_dump.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#include "proxy/bootstrap/bootstrap.h"
#include "proxy/server/admin/config_dump.h"
#include "proxy/filters/http/fault.h"
#include "proxy/http/filter.h"
#include "proxy/config/route.h"
#include "proxy/stats/stats.h"

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define LPFX    "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
#define VPFX    LPFX ".route_config.virtual_hosts[0]"
#define FAULT_T "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault\""
#define ROUTER  "{\"name\":\"envoy.filters.http.router\"}"
/* http_filters with a fault filter whose HTTPFault body (after @type) is `body` */
#define FAULT_FILTERS(body)                                                                        \
    "\"http_filters\":[{\"name\":\"envoy.filters.http.fault\",\"typed_config\":{" FAULT_T body     \
    "}}," ROUTER "],"
#define EMPTY_FAULT FAULT_FILTERS("")
#define ROUTE_OK    "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}"

/* A bootstrap with one listener: HCM fields `filters`, a vhost with `vh_extra` fields (each
 * ending with ',') and `routes`. */
static char *boot(const char *filters, const char *vh_extra, const char *routes)
{
    char *out = NULL;
    int n = asprintf(
        &out,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"in\",%s\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\","
        "%s\"domains\":[\"*\"],\"routes\":[%s]}]}}}]}]}],\"clusters\":[{\"name\":\"c\","
        "\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
        "\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]}}",
        filters, vh_extra, routes);
    assert_true(n > 0);
    return out;
}

static wp_config *load_text(char *text, wf_strbuf *err)
{
    wp_config *c = wf_test_load_bootstrap(text, err);
    free(text);
    return c;
}

static wp_config *load_ok(char *text)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load_text(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

static void expect_error(char *text, const char *want)
{
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

static wp_fault_filter *filter0(wp_config *c)
{
    return (wp_fault_filter *)(uintptr_t)wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain,
                                                        WP_FAULT_NAME);
}

/* ---------- percentages and decisions ---------- */

static void test_percent_math(void **state)
{
    (void)state;
    assert_int_equal(wp_fault_denominator(0), 100);
    assert_int_equal(wp_fault_denominator(1), 10000);
    assert_int_equal(wp_fault_denominator(2), 1000000);
    assert_int_equal(wp_fault_denominator(3), 0);
    assert_int_equal(wp_fault_denominator(-1), 0);

    wp_fault_percent p = {50, 100};
    assert_true(wp_fault_percent_hit(p, 0));
    assert_true(wp_fault_percent_hit(p, 49));
    assert_false(wp_fault_percent_hit(p, 50));
    assert_false(wp_fault_percent_hit(p, 99));
    assert_true(wp_fault_percent_hit(p, 100)); /* 100 % 100 = 0 */
    assert_true(wp_fault_percent_hit(p, 149));
    p = (wp_fault_percent){1, 10000}; /* 0.01 % */
    assert_true(wp_fault_percent_hit(p, 10000));
    assert_false(wp_fault_percent_hit(p, 10001));
    p = (wp_fault_percent){500000, 1000000}; /* Istio: percentage.value 50 -> MILLION */
    assert_true(wp_fault_percent_hit(p, 499999));
    assert_false(wp_fault_percent_hit(p, 500000));
    assert_true(wp_fault_percent_hit(p, 1000000 + 3));
    p = (wp_fault_percent){0, 100};
    for (uint64_t r = 0; r < 300; r++)
        assert_false(wp_fault_percent_hit(p, r));
    p = (wp_fault_percent){100, 100};
    for (uint64_t r = UINT64_MAX - 300; r < UINT64_MAX; r++)
        assert_true(wp_fault_percent_hit(p, r));
    p = (wp_fault_percent){150, 100}; /* numerator > denominator: always */
    assert_true(wp_fault_percent_hit(p, 99));
    p = (wp_fault_percent){5, 0}; /* denominator 0 treated as HUNDRED */
    assert_true(wp_fault_percent_hit(p, 104));
    assert_false(wp_fault_percent_hit(p, 105));
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

/* The hit rate over many draws is the configured fraction, for every denominator. */
static void test_percent_rates(void **state)
{
    (void)state;
    const wp_fault_percent cases[] = {{25, 100}, {2500, 10000}, {250000, 1000000}, {1, 100}};
    const double want[] = {0.25, 0.25, 0.25, 0.01};
    for (size_t k = 0; k < 4; k++) {
        uint64_t x = 88172645463325252ULL, hits = 0, n = 200000;
        for (uint64_t i = 0; i < n; i++)
            hits += wp_fault_percent_hit(cases[k], xorshift(&x));
        double rate = (double)hits / (double)n;
        if (rate < want[k] * 0.95 || rate > want[k] * 1.05)
            fail_msg("case %zu: rate %f, want %f", k, rate, want[k]);
    }
}

static void test_decide(void **state)
{
    (void)state;
    wp_fault_config c = {0};
    wp_fault_decision d = wp_fault_decide(&c, 0, 0);
    assert_false(d.delay);
    assert_false(d.abort);
    d = wp_fault_decide(NULL, 0, 0);
    assert_false(d.delay || d.abort);
    c.has_delay = true;
    c.delay_ms = 300;
    c.delay_pct = (wp_fault_percent){100, 100};
    c.has_abort = true;
    c.abort_status = 503;
    c.abort_pct = (wp_fault_percent){50, 100};
    d = wp_fault_decide(&c, 7, 10);
    assert_true(d.delay);
    assert_true(d.abort);
    d = wp_fault_decide(&c, 7, 60);
    assert_true(d.delay);
    assert_false(d.abort);
    c.delay_ms = 0; /* a delay that truncated to 0 ms delays nothing (Envoy: > 0 ms only) */
    d = wp_fault_decide(&c, 7, 10);
    assert_false(d.delay);
    assert_true(d.abort);
    c.has_abort = false;
    d = wp_fault_decide(&c, 7, 10);
    assert_false(d.abort);
}

/* ---------- parsing ---------- */

static void test_parse_filter_level(void **state)
{
    (void)state;
    wp_config *c = load_ok(boot(
        FAULT_FILTERS(",\"delay\":{\"fixed_delay\":\"0.300s\",\"percentage\":{\"numerator\":50,"
                      "\"denominator\":\"TEN_THOUSAND\"}},\"abort\":{\"http_status\":503,"
                      "\"percentage\":{\"numerator\":\"25\"}},\"max_active_faults\":7,"
                      "\"headers\":[{\"name\":\"X-Fault\",\"string_match\":{\"exact\":\"yes\"}}]"),
        "", ROUTE_OK));
    wp_fault_filter *f = filter0(c);
    assert_non_null(f);
    assert_false(f->per_route);
    assert_true(f->cfg.has_delay);
    assert_int_equal(f->cfg.delay_ms, 300);
    assert_int_equal(f->cfg.delay_pct.numerator, 50);
    assert_int_equal(f->cfg.delay_pct.denominator, 10000);
    assert_true(f->cfg.has_abort);
    assert_int_equal(f->cfg.abort_status, 503);
    assert_int_equal(f->cfg.abort_pct.numerator, 25);
    assert_int_equal(f->cfg.abort_pct.denominator, 100); /* default HUNDRED */
    assert_true(f->cfg.has_max_active);
    assert_int_equal(f->cfg.max_active, 7);
    assert_int_equal(f->cfg.nheaders, 1);
    assert_string_equal(f->cfg.headers[0].name, "x-fault");
    assert_int_equal(f->cfg.headers[0].m.kind, WP_SM_EXACT);
    assert_int_equal(f->st_delays, WP_STAT_INVALID); /* until wp_fault_register_stats */
    assert_int_equal(atomic_load(&f->active), 0);
    wp_config_unref(c);

    /* Istio's listener-level filter: an empty HTTPFault; and no typed_config at all */
    c = load_ok(boot(EMPTY_FAULT, "", ROUTE_OK));
    f = filter0(c);
    assert_non_null(f);
    assert_false(f->cfg.has_delay || f->cfg.has_abort || f->cfg.has_max_active);
    assert_int_equal(f->cfg.nheaders, 0);
    wp_config_unref(c);
    c = load_ok(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.fault\"}," ROUTER "],", "",
                     ROUTE_OK));
    assert_non_null(filter0(c));
    wp_config_unref(c);
    /* no fault filter */
    c = load_ok(boot("\"http_filters\":[" ROUTER "],", "", ROUTE_OK));
    assert_null(filter0(c));
    wp_config_unref(c);
}

static void test_parse_camel_case_and_absent_percentage(void **state)
{
    (void)state;
    wp_config *c = load_ok(
        boot("\"httpFilters\":[{\"name\":\"envoy.filters.http.fault\",\"typedConfig\":{" FAULT_T
             ",\"delay\":{\"fixedDelay\":{\"seconds\":1,\"nanos\":500000000}},\"abort\":{"
             "\"httpStatus\":\"418\",\"percentage\":{\"numerator\":1,\"denominator\":\"MILLION\"}},"
             "\"maxActiveFaults\":\"3\"}}," ROUTER "],",
             "", ROUTE_OK));
    wp_fault_filter *f = filter0(c);
    assert_int_equal(f->cfg.delay_ms, 1500);
    assert_int_equal(f->cfg.delay_pct.numerator, 0); /* absent percentage: 0 % */
    assert_int_equal(f->cfg.delay_pct.denominator, 100);
    assert_int_equal(f->cfg.abort_status, 418);
    assert_int_equal(f->cfg.abort_pct.numerator, 1);
    assert_int_equal(f->cfg.abort_pct.denominator, 1000000);
    assert_int_equal(f->cfg.max_active, 3);
    wp_config_unref(c);
}

#define PF_FAULT(body)                                                                             \
    "\"typed_per_filter_config\":{\"envoy.filters.http.fault\":{" FAULT_T body "}}"

static void test_parse_per_route(void **state)
{
    (void)state;
    const char *routes = "{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"c\"}," PF_FAULT(
        ",\"abort\":{\"http_status\":500,\"percentage\":{\"numerator\":100}}") "},"
                                                                               "{\"match\":{"
                                                                               "\"prefix\":\"/"
                                                                               "b\"},\"route\":{"
                                                                               "\"cluster\":\"c\"},"
                                                                               "\"typedPerFilterCon"
                                                                               "fig\":{"
                                                                               "\"envoy.filters."
                                                                               "http.fault\":"
                                                                               "{" FAULT_T
                                                                               ",\"delay\":{"
                                                                               "\"fixedDelay\":"
                                                                               "\"2s\","
                                                                               "\"percentage\":{"
                                                                               "\"numerator\":100}}"
                                                                               "}}},"
                                                                               "{\"match\":{"
                                                                               "\"prefix\":\"/"
                                                                               "\"},\"route\":{"
                                                                               "\"cluster\":\"c\"}"
                                                                               "}";
    wp_config *c = load_ok(
        boot(EMPTY_FAULT,
             PF_FAULT(",\"abort\":{\"http_status\":404,\"percentage\":{\"numerator\":100}}") ",",
             routes));
    wp_fault_filter *f = filter0(c);
    assert_true(f->per_route);
    const wp_vhost *vh = &c->listeners[0].chains[0].hcm->route_config->vhosts[0];
    assert_non_null(vh->fault);
    assert_int_equal(vh->fault->abort_status, 404);
    assert_int_equal(vh->nroutes, 3);
    const wp_fault_config *r0 = vh->routes[0].fault, *r1 = vh->routes[1].fault;
    assert_non_null(r0);
    assert_true(r0->has_abort && !r0->has_delay);
    assert_int_equal(r0->abort_status, 500);
    assert_non_null(r1);
    assert_true(r1->has_delay && !r1->has_abort);
    assert_int_equal(r1->delay_ms, 2000);
    assert_null(vh->routes[2].fault);

    /* resolution: route, else the vhost (when a route matched), else the filter's */
    assert_ptr_equal(wp_fault_settings(f, vh, &vh->routes[0]), r0);
    assert_ptr_equal(wp_fault_settings(f, vh, &vh->routes[1]), r1);
    assert_ptr_equal(wp_fault_settings(f, vh, &vh->routes[2]), vh->fault);
    assert_ptr_equal(wp_fault_settings(f, vh, NULL), &f->cfg);
    assert_ptr_equal(wp_fault_settings(f, NULL, NULL), &f->cfg);
    wp_config_unref(c);

    /* per-route config without the filter in http_filters: parsed, and ignored at runtime */
    c = load_ok(boot("\"http_filters\":[" ROUTER "],", "", routes));
    assert_null(filter0(c));
    assert_non_null(c->listeners[0].chains[0].hcm->route_config->vhosts[0].routes[0].fault);
    wp_config_unref(c);
}

/* abort.grpc_status (FaultFilter::abortStatus): HTTP 200 carrying the gRPC status. */
static void test_parse_grpc_abort(void **state)
{
    (void)state;
    wp_config *c = load_ok(
        boot(FAULT_FILTERS(",\"abort\":{\"grpc_status\":14,\"percentage\":{\"numerator\":100}}"),
             "", ROUTE_OK));
    wp_fault_filter *f = filter0(c);
    assert_true(f->cfg.has_abort);
    assert_int_equal(f->cfg.abort_status, 200);
    assert_int_equal(f->cfg.abort_grpc_status, 14);
    wp_config_unref(c);
    c = load_ok(
        boot(FAULT_FILTERS(",\"abort\":{\"http_status\":503,\"percentage\":{\"numerator\":100}}"),
             "", ROUTE_OK));
    f = filter0(c);
    assert_int_equal(f->cfg.abort_status, 503);
    assert_int_equal(f->cfg.abort_grpc_status, -1);
    wp_config_unref(c);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error(
        boot(FAULT_FILTERS(",\"abort\":{\"grpc_status\":14,\"http_status\":503}"), "", ROUTE_OK),
        "t.json: " LPFX ".http_filters[0].typed_config.abort: only one of http_status, "
        "grpc_status may be set (oneof error_type)");
    expect_error(boot(FAULT_FILTERS(",\"abort\":{\"header_abort\":{}}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.abort.header_abort: not supported "
                 "by weft-proxy's fault filter");
    expect_error(boot(FAULT_FILTERS(",\"delay\":{\"header_delay\":{}}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.delay.header_delay: not supported "
                 "by weft-proxy's fault filter");
    expect_error(boot(FAULT_FILTERS(",\"upstreamCluster\":\"c\""), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.upstream_cluster: not supported "
                 "by weft-proxy's fault filter");
    expect_error(boot(FAULT_FILTERS(",\"bogus\":1"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.bogus: unknown field");
    expect_error(boot(FAULT_FILTERS(",\"abort\":{\"http_status\":600}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.abort.http_status: value must be "
                 "inside range [200, 600)");
    expect_error(boot(FAULT_FILTERS(",\"abort\":{\"http_status\":199}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.abort.http_status: value must be "
                 "inside range [200, 600)");
    expect_error(boot(FAULT_FILTERS(",\"abort\":{\"percentage\":{\"numerator\":1}}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.abort.http_status: missing "
                 "required field");
    expect_error(boot(FAULT_FILTERS(",\"delay\":{\"fixed_delay\":\"0s\"}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.delay.fixed_delay: value must be "
                 "greater than 0s");
    expect_error(boot(FAULT_FILTERS(",\"delay\":{\"percentage\":{\"numerator\":1}}"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.delay.fixed_delay: missing "
                 "required field");
    expect_error(
        boot(FAULT_FILTERS(",\"delay\":{\"fixed_delay\":\"1s\",\"percentage\":{\"numerator\":1,"
                           "\"denominator\":\"THOUSAND\"}}"),
             "", ROUTE_OK),
        "t.json: " LPFX ".http_filters[0].typed_config.delay.percentage.denominator: unsupported "
        "value \"THOUSAND\"");
    expect_error(boot(FAULT_FILTERS(",\"headers\":[{\"exact_match\":\"x\"}]"), "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.headers[0].name: missing "
                 "required field");
    expect_error(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.fault\",\"typed_config\":{"
                      "\"@type\":\"type.googleapis.com/x.Y\"}}," ROUTER "],",
                      "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.@type: unsupported value "
                 "\"type.googleapis.com/x.Y\" (expected \"" WP_FAULT_TYPE "\")");
}

static void test_parse_chain_errors(void **state)
{
    (void)state;
    expect_error(boot("\"http_filters\":[" ROUTER ",{\"name\":\"envoy.filters.http.fault\"}],", "",
                      ROUTE_OK),
                 "t.json: " LPFX ".http_filters[0]: Error: terminal filter named "
                 "envoy.filters.http.router of type envoy.filters.http.router must be the last "
                 "filter in a http filter chain.");
    expect_error(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.fault\"}],", "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters: the http filter chain must end with "
                 "envoy.filters.http.router");
    expect_error(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.fault\"},{\"name\":"
                      "\"envoy.filters.http.fault\"}," ROUTER "],",
                      "", ROUTE_OK),
                 "t.json: " LPFX ".http_filters[1].name: only one envoy.filters.http.fault filter "
                 "is supported");
    expect_error(
        boot("\"http_filters\":[{\"name\":\"envoy.filters.http.lua\"}," ROUTER "],", "", ROUTE_OK),
        "t.json: " LPFX ".http_filters[0].name: unsupported http filter "
        "\"envoy.filters.http.lua\" (supported: envoy.filters.http.fault, "
        "envoy.filters.http.jwt_authn, envoy.filters.http.rbac, envoy.filters.http.cors, "
        "envoy.filters.http.grpc_stats, istio.metadata_exchange, istio.stats, "
        "envoy.filters.http.router)");
    /* per-route errors name their path */
    expect_error(boot(EMPTY_FAULT, "",
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"},"
                      "\"typed_per_filter_config\":{\"envoy.filters.http.cors\":{}}}"),
                 "t.json: " VPFX ".routes[0].typed_per_filter_config.envoy.filters.http.cors: "
                 "unsupported filter \"envoy.filters.http.cors\" (only envoy.filters.http.fault "
                 "takes per-route config)");
    expect_error(boot(EMPTY_FAULT, "",
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}," PF_FAULT(
                          ",\"abort\":{\"header_abort\":{}}") "}"),
                 "t.json: " VPFX ".routes[0].typed_per_filter_config.envoy.filters.http.fault."
                 "abort.header_abort: not supported by weft-proxy's fault filter");
    expect_error(boot(EMPTY_FAULT, PF_FAULT(",\"delay\":{\"fixed_delay\":\"-1s\"}") ",", ROUTE_OK),
                 "t.json: " VPFX ".typed_per_filter_config.envoy.filters.http.fault.delay."
                 "fixed_delay: value must be a non-negative duration");
}

/* ---------- runtime pieces ---------- */

static void test_headers_match(void **state)
{
    (void)state;
    wp_config *c = load_ok(boot(
        FAULT_FILTERS(",\"abort\":{\"http_status\":503,\"percentage\":{\"numerator\":100}},"
                      "\"headers\":[{\"name\":\"x-fault\",\"string_match\":{\"prefix\":\"on\"}},"
                      "{\"name\":\"x-skip\",\"present_match\":false}]"),
        "", ROUTE_OK));
    wp_fault_filter *f = filter0(c);
    wp_regex_ctx rx = {0};
    assert_int_equal(wp_regex_ctx_init(&rx), 0);
    h1_header hs[2] = {{{"X-Fault", 7}, {"on-please", 9}}, {{"x-skip", 6}, {"1", 1}}};
    wp_route_req rq = {
        .method = "GET", .method_len = 3, .path = "/", .path_len = 1, .headers = hs, .nheaders = 1};
    assert_true(wp_route_headers_match(&rx, &rq, f->cfg.headers, f->cfg.nheaders));
    rq.nheaders = 2; /* x-skip present: the second matcher fails */
    assert_false(wp_route_headers_match(&rx, &rq, f->cfg.headers, f->cfg.nheaders));
    rq.nheaders = 0;
    assert_false(wp_route_headers_match(&rx, &rq, f->cfg.headers, f->cfg.nheaders));
    assert_true(wp_route_headers_match(&rx, &rq, NULL, 0));
    wp_regex_ctx_free(&rx);
    wp_config_unref(c);
}

static void test_register_stats(void **state)
{
    (void)state;
    wp_config *c = load_ok(boot(EMPTY_FAULT, "", ROUTE_OK));
    wp_stats *st = wp_stats_new(1);
    assert_non_null(st);
    assert_int_equal(wp_fault_register_stats(st, c), 0);
    wp_fault_filter *f = filter0(c);
    assert_int_equal(f->st_delays, wp_stats_counter(st, "http.in.fault.delays_injected"));
    assert_int_equal(f->st_aborts, wp_stats_counter(st, "http.in.fault.aborts_injected"));
    assert_int_equal(f->st_overflow, wp_stats_counter(st, "http.in.fault.faults_overflow"));
    assert_int_equal(f->st_active, wp_stats_gauge(st, "http.in.fault.active_faults"));
    assert_int_not_equal(f->st_active, WP_STAT_INVALID);
    wp_stat_add(wp_stats_get_shard(st, 0), f->st_aborts, 2);
    assert_int_equal(wp_stats_value(st, f->st_aborts), 2);
    wp_stats_free(st);
    wp_config_unref(c);
}

static void test_config_dump_shows_filter(void **state)
{
    (void)state;
    wp_config *c = load_ok(boot(
        "\"httpFilters\":[{\"name\":\"envoy.filters.http.fault\",\"typedConfig\":{" FAULT_T
        ",\"delay\":{\"fixedDelay\":\"0.3s\",\"percentage\":{\"numerator\":100}}}}," ROUTER "],",
        "", ROUTE_OK));
    wf_strbuf err = WF_STRBUF_INIT;
    json_t *d = wp_config_dump(c, "static_listeners", NULL, false, 0, &err);
    assert_non_null(d);
    json_t *l = json_object_get(json_array_get(json_object_get(d, "configs"), 0), "listener");
    json_t *hcm = json_object_get(
        json_array_get(
            json_object_get(json_array_get(json_object_get(l, "filter_chains"), 0), "filters"), 0),
        "typed_config");
    json_t *hf = json_object_get(hcm, "http_filters");
    assert_int_equal(json_array_size(hf), 2);
    json_t *ff = json_array_get(hf, 0);
    assert_string_equal(json_string_value(json_object_get(ff, "name")), WP_FAULT_NAME);
    json_t *tc = json_object_get(ff, "typed_config");
    assert_string_equal(json_string_value(json_object_get(tc, "@type")), WP_FAULT_TYPE);
    json_t *delay = json_object_get(tc, "delay");
    assert_string_equal(json_string_value(json_object_get(delay, "fixed_delay")), "0.300s");
    json_decref(d);
    wf_strbuf_free(&err);
    wp_config_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percent_math),
        cmocka_unit_test(test_percent_rates),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_parse_filter_level),
        cmocka_unit_test(test_parse_camel_case_and_absent_percentage),
        cmocka_unit_test(test_parse_per_route),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_grpc_abort),
        cmocka_unit_test(test_parse_chain_errors),
        cmocka_unit_test(test_headers_match),
        cmocka_unit_test(test_register_stats),
        cmocka_unit_test(test_config_dump_shows_filter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
