/*
 * test_mesh_metrics.c - pilot's Prometheus text parser (mesh_metrics_text.h) and the Istio
 * metrics store (mesh_metrics.h): labels with escapes, comments, timestamps, malformed lines
 * named by line; weft-proxy's real /stats/prometheus text (tests/data/pilot/prom-*.txt,
 * captured from a gateway and a catalog sidecar of tests/integration/meshfix.py) read into
 * tuples; increases between scrapes, counter resets, new series, the baseline; rates over
 * fine and coarse windows; histogram_quantile as Prometheus computes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/strbuf.h"
#include "pilot/mesh_metrics.h"
#include "pilot/mesh_metrics_text.h"

/* ---- the parser ---- */

typedef struct {
    int n;
    char name[8][128];
    char labels[8][512]; /* "k=v;k=v" */
    double value[8];
} collected;

static int collect(void *ud, const wf_prom_sample *s)
{
    collected *c = ud;
    if (c->n == 8)
        return 1;
    snprintf(c->name[c->n], sizeof c->name[0], "%s", s->name);
    size_t o = 0;
    for (size_t i = 0; i < s->n_labels; i++)
        o += (size_t)snprintf(c->labels[c->n] + o, sizeof c->labels[0] - o, "%s%s=%s", i ? ";" : "",
                              s->label_name[i], s->label_value[i]);
    c->value[c->n++] = s->value;
    return 0;
}

static void test_parse_lines(void **state)
{
    (void)state;
    const char *text = "# HELP x_total a counter\n"
                       "# TYPE x_total counter\n"
                       "\n"
                       "x_total{a=\"1\",b=\"q\\\"uote\\\\back\\nline\"} 42\n"
                       "  y { a = \"\" , } 1.5e3 1700000000000\r\n"
                       "z NaN\n"
                       "w{} +Inf\n"
                       "v -Inf";
    collected c = {0};
    char err[128] = "";
    assert_int_equal(wf_prom_parse(text, strlen(text), NULL, collect, &c, err, sizeof err), 0);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.name[0], "x_total");
    assert_string_equal(c.labels[0], "a=1;b=q\"uote\\back\nline");
    assert_true(c.value[0] == 42);
    assert_string_equal(c.name[1], "y");
    assert_string_equal(c.labels[1], "a=");
    assert_true(c.value[1] == 1500);
    assert_true(isnan(c.value[2]));
    assert_true(isinf(c.value[3]) && c.value[3] > 0);
    assert_true(isinf(c.value[4]) && c.value[4] < 0);
}

static bool only_b(void *ud, const char *name, size_t len)
{
    (void)ud;
    return len == 1 && name[0] == 'b';
}

static void test_parse_skips_unwanted_unparsed(void **state)
{
    (void)state;
    /* the unwanted line is malformed after its name: never looked at */
    const char *text = "a{oops 1\nb{k=\"v\"} 2\n";
    collected c = {0};
    char err[128] = "";
    assert_int_equal(wf_prom_parse(text, strlen(text), only_b, collect, &c, err, sizeof err), 0);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.labels[0], "k=v");
}

static void expect_error(const char *text, const char *why)
{
    collected c = {0};
    char err[128] = "";
    assert_int_equal(wf_prom_parse(text, strlen(text), NULL, collect, &c, err, sizeof err), -1);
    if (!strstr(err, why))
        fail_msg("\"%s\": got \"%s\", want \"%s\"", text, err, why);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("ok 1\n{a=\"b\"} 1\n", "line 2: expected a metric name");
    expect_error("m{a=\"b} 1\n", "line 1: unterminated label value");
    expect_error("m{a=b} 1\n", "expected '\"'");
    expect_error("m{a=\"b\" c=\"d\"} 1\n", "expected ',' or '}'");
    expect_error("m 1x\n", "value is not a number");
    expect_error("m\n", "expected a value");
    expect_error("m 1 2 3\n", "unexpected text after the value");
    /* too many labels */
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, "m{");
    for (int i = 0; i <= WF_PROM_MAX_LABELS; i++)
        wf_strbuf_printf(&b, "l%d=\"v\",", i);
    wf_strbuf_puts(&b, "} 1\n");
    expect_error(wf_strbuf_cstr(&b), "too many labels");
    /* a label value longer than the line buffer */
    wf_strbuf_reset(&b);
    wf_strbuf_puts(&b, "m{a=\"");
    for (int i = 0; i < WF_PROM_MAX_LINE; i++)
        wf_strbuf_putc(&b, 'x');
    wf_strbuf_puts(&b, "\"} 1\n");
    expect_error(wf_strbuf_cstr(&b), "line too long");
    wf_strbuf_free(&b);
}

/* ---- the store ---- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(wf_strbuf_read_stream(&b, f), 0);
    fclose(f);
    *len = b.len;
    return wf_strbuf_take(&b);
}

typedef struct {
    const char *match[WF_MM_NLABELS]; /* NULL = any */
    wf_mm_values sum;
    int n;
    bool gateway;
} finder;

static void find_cb(void *ud, const wf_mm_series_view *v)
{
    finder *f = ud;
    for (int i = 0; i < WF_MM_NLABELS; i++)
        if (f->match[i] && strcmp(f->match[i], v->labels[i]) != 0)
            return;
    for (int k = 0; k < WF_MM_NV; k++)
        f->sum.v[k] += v->inc->v[k];
    f->gateway |= v->gateway_source;
    f->n++;
}

static const char *SERIES = "istio_requests_total{reporter=\"%s\",source_workload=\"gw\","
                            "destination_service=\"svc.ns.svc.cluster.local\","
                            "response_code=\"%s\",request_protocol=\"http\"} %g\n";

static int ingest_text(wf_mm_store *s, wf_mm_target *t, const char *text)
{
    wf_mm_scrape_info info;
    char err[128];
    return wf_mm_ingest(s, t, false, text, strlen(text), &info, err, sizeof err);
}

static void test_fixture_tuples(void **state)
{
    (void)state;
    size_t len;
    char *gw = read_file("tests/data/pilot/prom-gateway.txt", &len);
    wf_mm_store *s = wf_mm_store_new();
    wf_mm_target *t = wf_mm_target_new();
    wf_mm_scrape_info info;
    char err[128] = "";
    assert_int_equal(wf_mm_ingest(s, t, true, gw, len, &info, err, sizeof err), 0);
    /* the gateway's four series (404 to v1, 200 and 404 to v2, 503 NC to "unknown") */
    assert_int_equal(info.tuples, 4);
    assert_int_equal(info.dropped, 0);
    assert_int_equal(info.ignored_buckets, 0);
    assert_true(info.has_state && info.server_state == 0);
    assert_string_equal(wf_mm_server_state_name(info.server_state), "LIVE");
    assert_true(info.has_cp && info.cp_connected == 1);
    assert_true(info.has_cert_days);
    /* first scrape: a baseline, nothing in the store yet */
    wf_mm_round_end(s, 1000000);
    assert_int_equal(wf_mm_tuple_count(s), 0);
    /* a second scrape with the NC series 3 higher */
    char *p = strstr(gw, "response_flags=\"NC\"");
    assert_non_null(p);
    char *nl = strchr(p, '\n'), *sp = nl;
    while (sp[-1] != ' ')
        sp--;
    int nc = atoi(sp);
    char *next = NULL;
    assert_true(asprintf(&next, "%.*s%d%s", (int)(sp - gw), gw, nc + 3, nl) > 0);
    assert_int_equal(wf_mm_ingest(s, t, true, next, strlen(next), &info, err, sizeof err), 0);
    wf_mm_round_end(s, 1015000);
    assert_int_equal(wf_mm_tuple_count(s), 1);
    finder f = {.match = {[WF_MM_RESPONSE_FLAGS] = "NC", [WF_MM_REPORTER] = "source"}};
    /* 3 requests in the second round, 15 s (the first round has no duration) */
    double covered = wf_mm_window(s, 60, find_cb, &f);
    assert_true(covered == 15.0);
    assert_int_equal(f.n, 1);
    assert_true(f.sum.v[WF_MM_V_REQUESTS] == 3);
    assert_true(f.gateway);
    free(next);
    free(gw);
    wf_mm_target_free(t);
    wf_mm_store_free(s);
}

static void test_catalog_histogram(void **state)
{
    (void)state;
    size_t len;
    char *cat = read_file("tests/data/pilot/prom-catalog-v1.txt", &len);
    wf_mm_store *s = wf_mm_store_new();
    wf_mm_target *t = wf_mm_target_new();
    wf_mm_scrape_info info;
    char err[128] = "";
    /* an empty first scrape (the proxy had served nothing): then everything is new */
    assert_int_equal(ingest_text(s, t, "# nothing yet\n"), 0);
    wf_mm_round_end(s, 1000);
    assert_int_equal(wf_mm_ingest(s, t, false, cat, len, &info, err, sizeof err), 0);
    /* the proxy has no WORKLOAD_NAME: named after its app and version, as the graph does */
    assert_string_equal(info.workload, "catalog-v1");
    assert_string_equal(info.workload_ns, "istioinaction");
    wf_mm_round_end(s, 16000);
    finder f = {.match = {[WF_MM_REPORTER] = "destination", [WF_MM_DESTINATION_VERSION] = "v1"}};
    assert_true(wf_mm_window(s, 60, find_cb, &f) == 15.0);
    assert_true(f.n >= 1);
    double req = f.sum.v[WF_MM_V_REQUESTS];
    assert_true(req > 0);
    /* every request is in the histogram, and the buckets are cumulative */
    assert_true(f.sum.v[WF_MM_V_DUR_COUNT] == req);
    for (int i = 1; i < WF_MM_NBOUNDS; i++)
        assert_true(f.sum.v[WF_MM_V_BUCKET0 + i] >= f.sum.v[WF_MM_V_BUCKET0 + i - 1]);
    assert_true(f.sum.v[WF_MM_V_BUCKET0 + WF_MM_NBOUNDS - 1] == req);
    free(cat);
    wf_mm_target_free(t);
    wf_mm_store_free(s);
}

static void scrape(wf_mm_store *s, wf_mm_target *t, double ok, double err)
{
    char text[1024];
    int n = snprintf(text, sizeof text, SERIES, "source", "200", ok);
    snprintf(text + n, sizeof text - (size_t)n, SERIES, "source", "503", err);
    assert_int_equal(ingest_text(s, t, text), 0);
}

static double window_requests(const wf_mm_store *s, unsigned w, const char *code, double *cov)
{
    finder f = {.match = {[WF_MM_RESPONSE_CODE] = code}};
    *cov = wf_mm_window(s, w, find_cb, &f);
    return f.sum.v[WF_MM_V_REQUESTS];
}

static void test_rates_and_resets(void **state)
{
    (void)state;
    wf_mm_store *s = wf_mm_store_new();
    wf_mm_target *a = wf_mm_target_new(), *b = wf_mm_target_new();
    double cov;
    int64_t t0 = 1700000000000;
    scrape(s, a, 100, 10); /* baselines */
    scrape(s, b, 50, 0);
    wf_mm_round_end(s, t0);
    /* a +30 ok; b restarted: 20 (a reset counts its whole value) */
    scrape(s, a, 130, 10);
    scrape(s, b, 20, 0);
    wf_mm_round_end(s, t0 + 15000);
    assert_true(window_requests(s, 60, "200", &cov) == 50);
    assert_true(cov == 15);
    assert_true(window_requests(s, 60, "503", &cov) == 0);
    /* the next round: a +15 ok +5 errors */
    scrape(s, a, 145, 15);
    scrape(s, b, 20, 0);
    wf_mm_round_end(s, t0 + 30000);
    assert_true(window_requests(s, 60, "200", &cov) == 65);
    assert_true(cov == 30);
    assert_true(window_requests(s, 60, "503", &cov) == 5);
    /* a 10 s window holds the last round only (it ended within it) */
    assert_true(window_requests(s, 10, "200", &cov) == 15);
    assert_true(cov == 15);
    /* many quiet rounds: the tuples leave the fine ring, then the store once every slot is 0 */
    for (int i = 3; i < 3 + WF_MM_FINE_SLOTS; i++) {
        scrape(s, a, 145, 15);
        scrape(s, b, 20, 0);
        wf_mm_round_end(s, t0 + 15000 * i);
    }
    assert_true(window_requests(s, 60, "200", &cov) == 0);
    assert_true(cov == 60);
    /* the hour window reads the coarse slots: the early increases are still there */
    assert_true(window_requests(s, 3600, "200", &cov) == 65);
    assert_true(cov > 60 && cov <= 15 * (3 + WF_MM_FINE_SLOTS));
    assert_int_equal(wf_mm_tuple_count(s), 2);
    /* two hours later every slot is quiet: the tuples are dropped */
    for (int i = 0; i < 2 * WF_MM_COARSE_SLOTS; i++)
        wf_mm_round_end(s, t0 + 15000 * 20 + (int64_t)WF_MM_COARSE_MS * i);
    assert_int_equal(wf_mm_tuple_count(s), 0);
    wf_mm_target_free(a);
    wf_mm_target_free(b);
    wf_mm_store_free(s);
}

static void test_bad_scrape_keeps_previous(void **state)
{
    (void)state;
    wf_mm_store *s = wf_mm_store_new();
    wf_mm_target *a = wf_mm_target_new();
    wf_mm_scrape_info info;
    char err[128] = "";
    scrape(s, a, 100, 0);
    wf_mm_round_end(s, 1000);
    const char *bad = "istio_requests_total{reporter=\"source\",response_code=\"200\"} 500\n"
                      "istio_requests_total{oops\n";
    assert_int_equal(wf_mm_ingest(s, a, false, bad, strlen(bad), &info, err, sizeof err), -1);
    assert_string_equal(err, "line 2: expected '=' after a label name");
    scrape(s, a, 110, 0); /* compared with 100, not with the bad scrape's 500 */
    wf_mm_round_end(s, 2000);
    double cov;
    assert_true(window_requests(s, 60, "200", &cov) == 10);
    wf_mm_target_free(a);
    wf_mm_store_free(s);
}

static void test_series_cap(void **state)
{
    (void)state;
    wf_mm_store *s = wf_mm_store_new();
    wf_mm_target *a = wf_mm_target_new();
    wf_strbuf b = WF_STRBUF_INIT;
    for (int i = 0; i < WF_MM_MAX_TARGET_TUPLES + 10; i++)
        wf_strbuf_printf(&b, "istio_requests_total{reporter=\"source\",response_code=\"%d\"} 1\n",
                         i);
    wf_mm_scrape_info info;
    char err[128];
    assert_int_equal(wf_mm_ingest(s, a, false, b.data, b.len, &info, err, sizeof err), 0);
    assert_int_equal(info.tuples, WF_MM_MAX_TARGET_TUPLES);
    assert_int_equal(info.dropped, 10);
    wf_strbuf_free(&b);
    wf_mm_target_free(a);
    wf_mm_store_free(s);
}

static void test_quantile(void **state)
{
    (void)state;
    const double bounds[] = {1, 5, 10};
    /* 10 observations: 2 <= 1 ms, 8 <= 5 ms, 10 <= 10 ms */
    const double cum[] = {2, 8, 10};
    /* rank 5 is in (1, 5]: 1 + 4 * (5 - 2) / 6 = 3 */
    assert_true(fabs(wf_mm_quantile(0.5, bounds, cum, 3, 10) - 3.0) < 1e-9);
    /* rank 1 in the first bucket, which starts at 0: 1 * 1/2 */
    assert_true(fabs(wf_mm_quantile(0.1, bounds, cum, 3, 10) - 0.5) < 1e-9);
    /* rank 9.9 in (5, 10]: 5 + 5 * 1.9 / 2 */
    assert_true(fabs(wf_mm_quantile(0.99, bounds, cum, 3, 10) - 9.75) < 1e-9);
    /* beyond the last finite bucket (+Inf holds 2 more): the last bound */
    assert_true(wf_mm_quantile(0.99, bounds, cum, 3, 12) == 10);
    assert_true(isnan(wf_mm_quantile(0.5, bounds, cum, 3, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lines),
        cmocka_unit_test(test_parse_skips_unwanted_unparsed),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_fixture_tuples),
        cmocka_unit_test(test_catalog_histogram),
        cmocka_unit_test(test_rates_and_resets),
        cmocka_unit_test(test_bad_scrape_keeps_previous),
        cmocka_unit_test(test_series_cap),
        cmocka_unit_test(test_quantile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
