/*
 * test_log_explain_capture.c - capture outcomes of `weftctl log explain`
 * (log_explain_capture.h; operator report B039): block_all, BlackHoleCluster with the original
 * destination and SNI, the loop guard, PassthroughCluster / allow_any, InboundPassthroughCluster,
 * from Istio TEXT and JSON lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/log_explain.h"
#include "cli/log_explain_capture.h"

/* Istio's TEXT format: ... "%UPSTREAM_HOST%" CLUSTER UPSTREAM_LOCAL DOWNSTREAM_LOCAL
 * DOWNSTREAM_REMOTE SNI ROUTE */
static const char TCP_BLACKHOLE[] =
    "[2026-12-06T02:00:00.000Z] \"- - -\" 0 UH - - \"-\" 517 0 0 - \"-\" \"-\" \"-\" \"-\" "
    "\"-\" BlackHoleCluster - 10.1.2.50:443 10.1.2.1:40000 api.partner.example.internal -";
static const char HTTP_BLOCKED[] =
    "[2026-12-06T02:00:01.000Z] \"GET / HTTP/1.1\" 502 - direct_response - \"-\" 0 0 0 - "
    "\"-\" \"curl/8\" \"abc\" \"plain.partner.example.internal\" \"-\" - - 10.1.2.50:80 "
    "10.1.2.1:40002 - block_all";
static const char HTTP_ALLOW_ANY[] =
    "[2026-12-06T02:00:02.000Z] \"GET / HTTP/1.1\" 200 - via_upstream - \"-\" 0 10 1 1 \"-\" "
    "\"curl/8\" \"abd\" \"plain.partner.example.internal:8080\" \"10.1.2.50:8080\" "
    "PassthroughCluster 10.1.2.1:40004 10.1.2.50:8080 10.1.2.1:40003 - allow_any";
static const char TCP_INBOUND[] =
    "[2026-12-06T02:00:03.000Z] \"- - -\" 0 UF - - \"-\" 0 0 3 - \"-\" \"-\" \"-\" \"-\" "
    "\"10.1.2.1:9999\" InboundPassthroughCluster 127.0.0.6:4000 10.1.2.1:9999 10.1.2.50:5000 "
    "- -";
static const char TCP_LOOP[] =
    "[2026-12-06T02:00:04.000Z] \"- - -\" 0 UH - - \"-\" 0 0 0 - \"-\" \"-\" \"-\" \"-\" \"-\" "
    "BlackHoleCluster - 10.1.2.1:15001 10.1.2.1:40000 - -";
static const char TCP_CATALOG[] =
    "[2026-12-06T02:00:05.000Z] \"- - -\" 0 UH - - \"-\" 0 0 0 - \"-\" \"-\" \"-\" \"-\" \"-\" "
    "outbound|9090||db.shop.svc.cluster.local - 10.96.0.9:9090 10.1.2.1:40000 - -";

static char *reading(const char *line, wf_lx_capture want)
{
    wf_lx_record r;
    assert_int_equal(wf_lx_parse_line(NULL, line, &r), 0);
    assert_int_equal(wf_lx_capture_of(&r), want);
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(wf_lx_capture_read(&r, &b), 0);
    wf_lx_record_free(&r);
    char *s = wf_strbuf_take(&b);
    assert_non_null(s);
    return s;
}

static void test_tcp_blackhole_names_destination_and_sni(void **state)
{
    (void)state;
    wf_lx_record r;
    assert_int_equal(wf_lx_parse_line(NULL, TCP_BLACKHOLE, &r), 0);
    assert_string_equal(r.downstream_local, "10.1.2.50:443");
    assert_string_equal(r.sni, "api.partner.example.internal");
    assert_string_equal(wf_lx_original_destination(&r), "10.1.2.50:443");
    assert_string_equal(wf_lx_capture_name(wf_lx_capture_of(&r)), "blackhole");
    wf_lx_record_free(&r);
    char *s = reading(TCP_BLACKHOLE, WF_LX_CAP_BLACKHOLE);
    assert_non_null(strstr(s, "10.1.2.50:443 (SNI api.partner.example.internal)"));
    assert_non_null(strstr(s, "outboundTrafficPolicy is REGISTRY_ONLY"));
    assert_non_null(strstr(s, "add a ServiceEntry for api.partner.example.internal"));
    assert_non_null(strstr(s, "number: 443, name: tls, protocol: TLS"));
    assert_non_null(strstr(s, "proxy-config listener <pod> --port 443"));
    free(s);
    assert_string_equal(wf_lx_capture_uh_blackhole()->key, "UH");
}

static void test_loop_guard_is_not_policy(void **state)
{
    (void)state;
    char *s = reading(TCP_LOOP, WF_LX_CAP_BLACKHOLE);
    assert_non_null(strstr(s, "loop guard"));
    assert_non_null(strstr(s, "virtualOutbound-blackhole"));
    assert_null(strstr(s, "REGISTRY_ONLY"));
    free(s);
}

static void test_http_block_all(void **state)
{
    (void)state;
    char *s = reading(HTTP_BLOCKED, WF_LX_CAP_BLOCKED);
    assert_non_null(strstr(s, "REGISTRY_ONLY blocked an unknown host"));
    assert_non_null(strstr(s, "Host plain.partner.example.internal (original destination "
                              "10.1.2.50:80)"));
    assert_non_null(strstr(s, "block_all"));
    assert_non_null(strstr(s, "add a ServiceEntry for plain.partner.example.internal"));
    assert_non_null(strstr(s, "number: 80, name: http"));
    free(s);
}

static void test_http_allow_any(void **state)
{
    (void)state;
    char *s = reading(HTTP_ALLOW_ANY, WF_LX_CAP_PASSTHROUGH);
    assert_non_null(strstr(s, "ALLOW_ANY"));
    assert_non_null(strstr(s, "original destination 10.1.2.50:8080"));
    assert_non_null(strstr(s, "allow_any"));
    assert_null(strstr(s, "failure is"));
    free(s);
}

static void test_inbound_passthrough(void **state)
{
    (void)state;
    char *s = reading(TCP_INBOUND, WF_LX_CAP_INBOUND_PASSTHROUGH);
    assert_non_null(strstr(s, "port 9999 of this pod (10.1.2.1:9999)"));
    assert_non_null(strstr(s, "no Service"));
    assert_non_null(strstr(s, "Not outboundTrafficPolicy"));
    assert_non_null(strstr(s, "failure is the application's port"));
    free(s);
}

static void test_not_capture(void **state)
{
    (void)state;
    char *s = reading(TCP_CATALOG, WF_LX_CAP_NONE);
    assert_string_equal(s, "");
    free(s);
    assert_string_equal(wf_lx_capture_name(WF_LX_CAP_NONE), "");
}

static void test_json_keys(void **state)
{
    (void)state;
    wf_lx_record r;
    assert_int_equal(
        wf_lx_parse_line(NULL,
                         "{\"response_code\":0,\"response_flags\":\"UH\",\"upstream_cluster\":"
                         "\"BlackHoleCluster\",\"downstream_local_address\":\"10.1.2.50:443\","
                         "\"requested_server_name\":\"api.partner.example.internal\"}",
                         &r),
        0);
    assert_int_equal(wf_lx_capture_of(&r), WF_LX_CAP_BLACKHOLE);
    assert_string_equal(wf_lx_original_destination(&r), "10.1.2.50:443");
    wf_lx_record_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_blackhole_names_destination_and_sni),
        cmocka_unit_test(test_loop_guard_is_not_policy),
        cmocka_unit_test(test_http_block_all),
        cmocka_unit_test(test_http_allow_any),
        cmocka_unit_test(test_inbound_passthrough),
        cmocka_unit_test(test_not_capture),
        cmocka_unit_test(test_json_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
