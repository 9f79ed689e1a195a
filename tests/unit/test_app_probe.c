/*
 * test_app_probe.c - pilot-agent's KubeAppProbers parsing (src/proxy/agent/app_probe.h) and the
 * merged scrape's configuration, agent metrics and format (src/proxy/agent/status_metrics.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/agent/app_probe.h"
#include "proxy/agent/status_metrics.h"

static void expect_error(const char *json, const char *want)
{
    wp_app_probers p;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wp_app_probers_parse(json, &p, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), want));
    assert_int_equal(p.n, 0);
    wf_strbuf_free(&err);
}

static void test_parse(void **state)
{
    (void)state;
    wp_app_probers p;
    wf_strbuf err = WF_STRBUF_INIT;
    const char *json =
        "{\"/app-health/web/livez\": {\"httpGet\": {\"path\": \"healthz\", \"port\": 8080, "
        "\"scheme\": \"HTTP\", \"httpHeaders\": [{\"name\": \"X-A\", \"value\": \"1\"}]}, "
        "\"timeoutSeconds\": 3},"
        "\"/app-health/web/readyz\": {\"tcpSocket\": {\"port\": 9090}},"
        "\"/app-health/web/startupz\": {\"grpc\": {\"port\": 7070, \"service\": \"svc\"}}}";
    assert_int_equal(wp_app_probers_parse(json, &p, &err), 0);
    assert_int_equal(p.n, 3);
    const wp_app_prober *l = wp_app_probers_find(&p, "/app-health/web/livez", 21);
    assert_non_null(l);
    assert_int_equal(l->kind, WP_PROBE_HTTP);
    assert_int_equal(l->port, 8080);
    assert_string_equal(l->http_path, "/healthz"); /* a leading "/" added, as pilot-agent */
    assert_string_equal(l->http_headers, "X-A: 1\r\n");
    assert_int_equal(l->timeout_ms, 3000);
    assert_null(wp_app_probe_unsupported(l));
    const wp_app_prober *r = wp_app_probers_find(&p, "/app-health/web/readyz", 22);
    assert_int_equal(r->kind, WP_PROBE_TCP);
    assert_int_equal(r->timeout_ms, 1000); /* Kubernetes' default */
    const wp_app_prober *s = wp_app_probers_find(&p, "/app-health/web/startupz", 24);
    assert_int_equal(s->kind, WP_PROBE_GRPC);
    assert_string_equal(s->grpc_service, "svc");
    assert_non_null(strstr(wp_app_probe_unsupported(s), "grpc probes are not implemented"));
    assert_null(wp_app_probers_find(&p, "/app-health/web/livez/", 22));
    assert_null(wp_app_probers_find(&p, "/app-health/other/livez", 23));
    wp_app_probers_free(&p);
    wf_strbuf_free(&err);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("[1]", "failed to decode app prober");
    expect_error("{not json", "failed to decode app prober");
    expect_error("{\"/app-health/web/alive\": {\"tcpSocket\": {\"port\": 1}}}",
                 "invalid path, must be in form of regex pattern");
    expect_error("{\"/app-health//livez\": {\"tcpSocket\": {\"port\": 1}}}", "invalid path");
    expect_error("{\"/healthz/web/livez\": {\"tcpSocket\": {\"port\": 1}}}", "invalid path");
    expect_error("{\"/app-health/web/livez\": {}}",
                 "invalid prober type, must be one of type httpGet, tcpSocket or gRPC");
    expect_error("{\"/app-health/web/livez\": {\"tcpSocket\": {\"port\": 1}, \"httpGet\": "
                 "{\"port\": 1}}}",
                 "invalid prober type");
    expect_error("{\"/app-health/web/livez\": {\"httpGet\": {\"port\": \"http\"}}}",
                 "invalid prober config for /app-health/web/livez, the port must be int type");
    expect_error("{\"/app-health/web/livez\": {\"tcpSocket\": {\"port\": 70000}}}",
                 "is not 1..65535");
    /* pilot-agent's other keys are accepted too */
    wp_app_probers p;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(
        wp_app_probers_parse("{\"/app-lifecycle/web/prestopz\": {\"tcpSocket\": {\"port\": 1}}}",
                             &p, &err),
        0);
    wp_app_probers_free(&p);
    wf_strbuf_free(&err);
}

static void test_scrape_config(void **state)
{
    (void)state;
    wp_prom_scrape s;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wp_prom_scrape_parse("{\"scrape\":\"true\",\"path\":\"/m\",\"port\":\"9080\"}",
                                          15020, &s, &err),
                     1);
    assert_int_equal(s.port, 9080);
    assert_string_equal(s.path, "/m");
    assert_int_equal(wp_prom_scrape_parse("{\"scrape\":\"true\"}", 15020, &s, &err), 1);
    assert_int_equal(s.port, 80); /* pilot-agent's defaults */
    assert_string_equal(s.path, "/metrics");
    assert_int_equal(wp_prom_scrape_parse("{\"scrape\":\"false\",\"port\":\"1\"}", 15020, &s, &err),
                     0);
    assert_int_equal(wp_prom_scrape_parse("{\"port\":\"15020\"}", 15020, &s, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "application port is the same as agent port"));
    wf_strbuf_reset(&err);
    assert_int_equal(wp_prom_scrape_parse("{\"port\":\"x\"}", 15020, &s, &err), -1);
    assert_int_equal(wp_prom_scrape_parse("nope", 15020, &s, &err), -1);
    wf_strbuf_free(&err);
}

static void test_agent_metrics_and_format(void **state)
{
    (void)state;
    wf_strbuf b = WF_STRBUF_INIT;
    wp_agent_metrics m = {0};
    wp_agent_metrics_render(&m, &b);
    assert_int_equal(b.len, 0); /* no series, no family (Go's Gather) */
    m.scrapes = 3;
    m.failures_app = 1;
    wp_agent_metrics_render(&m, &b);
    assert_string_equal(
        wf_strbuf_cstr(&b),
        "# HELP istio_agent_scrape_failures_total The total number of failed scrapes.\n"
        "# TYPE istio_agent_scrape_failures_total counter\n"
        "istio_agent_scrape_failures_total{type=\"application\"} 1\n"
        "# HELP istio_agent_scrapes_total The total number of scrapes.\n"
        "# TYPE istio_agent_scrapes_total counter\n"
        "istio_agent_scrapes_total 3\n");
    wf_strbuf_free(&b);
    assert_string_equal(wp_metrics_content_type(NULL), "text/plain; version=0.0.4; charset=utf-8");
    assert_string_equal(wp_metrics_content_type("text/plain"),
                        "text/plain; version=0.0.4; charset=utf-8");
    assert_string_equal(wp_metrics_content_type("application/openmetrics-text; version=1.0.0"),
                        "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert_string_equal(wp_metrics_content_type("application/openmetrics-text"),
                        "application/openmetrics-text; version=0.0.1; charset=utf-8");
    assert_string_equal(wp_metrics_content_type("application/openmetrics-textx"),
                        "text/plain; version=0.0.4; charset=utf-8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_scrape_config),
        cmocka_unit_test(test_agent_metrics_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
