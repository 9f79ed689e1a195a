/*
 * test_log_explain.c - `weftctl log explain` knowledge and parsing (log_explain.h):
 * every response flag and every response code details string of
 * ../shared/reference/envoy-istio-behaviour.md §1.2 / §2.1 has an entry with a meaning, causes
 * and a next step; the seed explanations say what the brief asks; unknown values are not
 * guessed; lines in Istio's TEXT format, Envoy's default format, a custom --format and JSON
 * (Istio's keys and a custom JSON format) parse into the same fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/log_explain.h"
#include "xds/istio_log.h"

/* §1.2, in the reference's order. */
static const char *const flags[] = {"LH", "UH", "UT",  "LR",    "UR",   "UF",   "UC", "UO",
                                    "NR", "DI", "FI",  "RL",    "UAEX", "RLSE", "DC", "URX",
                                    "SI", "IH", "DPE", "UMSDR", "RFCF", "NFCF", "DT", "UPE",
                                    "NC", "OM", "DF",  "DO",    "DR",   "UDO"};

/* §2.1 (parametrised ones with an example parameter), plus upstream_response_timeout (older
 * Envoy, operator report B008). */
static const char *const details[] = {
    "via_upstream", "request_payload_too_large", "response_payload_too_large",
    "request_payload_exceeded_retry_buffer_limit", "stream_idle_timeout", "request_overall_timeout",
    "request_header_timeout", "max_duration_timeout", "overload", "low_version",
    "missing_host_header", "missing_path_rejected", "invalid_path", "absolute_path_rejected",
    "path_normalization_failed", "upgrade_failed", "websocket_handshake_unsuccessful",
    "route_configuration_not_found", "route_not_found", "direct_response", "cluster_not_found",
    "maintenance_mode", "drop_overload", "unconditional_drop_overload", "no_healthy_upstream",
    "response_timeout", "upstream_per_try_timeout", "upstream_per_try_idle_timeout",
    "upstream_max_stream_duration_reached",
    "upstream_reset_before_response_started{connection_termination}",
    "upstream_reset_after_response_started{remote_reset}", "filter_chain_not_found",
    "downstream_remote_disconnect", "downstream_local_disconnect(codec_error)", "duration_timeout",
    "downstream_header_timeout", "admin_filter_response", "internal_redirect",
    "filter_removed_required_request_headers", "filter_removed_required_response_headers",
    "rejecting_because_detection_failed", "filter_added_invalid_request_data",
    "filter_added_invalid_response_data",
    "rbac_access_denied_matched_policy[ns[default]-policy[deny-all]-rule[0]]",
    "upstream_response_timeout",
    /* extension and codec details weft-proxy logs (test_log_explain_coverage.c walks them) */
    "fault_filter_abort", "http1.codec_error", "http1.invalid_characters", "http1.invalid_url",
    "http1.headers_too_large", "http1.too_many_headers", "http2.remote_reset",
    "http2.remote_refuse", "http2.too_many_headers", "http2.invalid.header.field",
    "http2.violation.of.messaging.rule", "http2.unknown.nghttp2.error",
    "http1.content_length_and_chunked_not_allowed", "http1.invalid_transfer_encoding",
    /* %CONNECTION_TERMINATION_DETAILS% of a listener's TLS handshake timeout */
    "transport socket timeout"};

/* §2.2 reset reasons, with underscores as they appear inside details. */
static const char *const resets[] = {"local_connection_failure",
                                     "remote_connection_failure",
                                     "connection_timeout",
                                     "connection_termination",
                                     "local_reset",
                                     "local_refused_stream_reset",
                                     "overflow",
                                     "remote_reset",
                                     "remote_refused_stream_reset",
                                     "remote_error_with_CONNECT_request",
                                     "protocol_error",
                                     "overload_manager_reset",
                                     "connection_failure"};

static void complete(const wf_lx_entry *e, const char *what)
{
    if (!e)
        fail_msg("no entry for %s", what);
    assert_true(e->meaning && strlen(e->meaning) > 10);
    assert_true(e->causes && *e->causes);
    assert_true(e->next && *e->next);
    assert_non_null(e->status);
}

static void test_every_flag_has_an_entry(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const wf_lx_entry *e = wf_lx_find_flag(flags[i]);
        complete(e, flags[i]);
        assert_int_equal(e->kind, WF_LX_FLAG);
        assert_true(*e->name); /* Envoy's long name */
    }
}

static void test_every_detail_has_an_entry(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof details / sizeof details[0]; i++) {
        const wf_lx_entry *e = wf_lx_find_detail(details[i]);
        complete(e, details[i]);
        assert_int_equal(e->kind, WF_LX_DETAIL);
    }
    for (size_t i = 0; i < sizeof resets / sizeof resets[0]; i++)
        complete(wf_lx_find_reset(resets[i]), resets[i]);
}

static void test_every_table_entry_is_tested(void **state)
{
    (void)state;
    size_t want = sizeof flags / sizeof flags[0] + sizeof details / sizeof details[0] +
                  sizeof resets / sizeof resets[0] + 1; /* + the brace-less reset detail */
    size_t n = 0; /* the TLS signatures are tested in test_log_explain_tls.c */
    for (size_t i = 0; i < wf_lx_table_count(); i++)
        n += wf_lx_table_at(i)->kind != WF_LX_TLS;
    assert_int_equal(n, want);
    assert_non_null(wf_lx_find_detail("upstream_reset_before_response_started"));
}

static void contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("%s\n  does not contain: %s", hay, needle);
}

static void test_seed_texts(void **state)
{
    (void)state;
    const wf_lx_entry *e = wf_lx_find_detail("request_payload_exceeded_retry_buffer_limit");
    contains(e->status, "507");
    contains(e->meaning, "needed a retry and its body was larger than the retry buffer");
    contains(e->next, "Raise the buffer limit for the route or listener");
    contains(e->next, "turn proxy retries off for large uploads and retry in the client with "
                      "an idempotency key");
    e = wf_lx_find_flag("NC");
    contains(e->meaning, "route names a cluster that does not exist");
    contains(e->causes, "a subset without a DestinationRule");
    contains(e->next, "weftctl analyze");
    contains(wf_lx_find_flag("NR")->meaning, "No route matched");
    contains(wf_lx_find_flag("UT")->meaning, "timeout");
    contains(wf_lx_find_flag("UT")->next, "perTryTimeout");
    contains(wf_lx_find_flag("UF")->meaning, "could not open a connection");
    contains(wf_lx_find_flag("UH")->meaning, "no healthy endpoint");
    contains(wf_lx_find_flag("URX")->meaning, "retries were used up");
    contains(wf_lx_find_flag("UC")->meaning, "closed the connection");
    contains(wf_lx_find_flag("UC")->next, "idleTimeout");
    contains(wf_lx_find_flag("DC")->meaning, "client closed its connection");
    assert_string_equal(wf_lx_find_flag("NC")->name, "NoClusterFound");
}

static void test_unknown_values_are_not_guessed(void **state)
{
    (void)state;
    assert_null(wf_lx_find_flag("ZZ"));
    assert_null(wf_lx_find_flag("nc"));
    assert_null(wf_lx_find_detail("some_new_detail"));
    assert_null(wf_lx_find_detail("cluster_not_found_extra"));
    assert_null(wf_lx_find_reset("cosmic_ray"));
    /* parametrised prefixes match only with their opening bracket */
    assert_non_null(wf_lx_find_detail("rbac_access_denied_matched_policy[none]"));
    assert_null(wf_lx_find_detail("rbac_access_denied"));
}

/* ---- parsing ------------------------------------------------------------------------------ */

static void parse(const char *fmt, const char *line, wf_lx_record *r)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wf_lx_format *f = fmt ? wf_lx_format_new(fmt, &err) : NULL;
    if (fmt && !f)
        fail_msg("format: %s", wf_strbuf_cstr(&err));
    if (wf_lx_parse_line(f, line, r) != 0)
        fail_msg("did not parse: %s", line);
    wf_lx_format_free(f);
    wf_strbuf_free(&err);
}

static void test_istio_text_line(void **state)
{
    (void)state;
    wf_lx_record r;
    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"GET /items HTTP/1.1\" 503 NC cluster_not_found - \"-\" 0 "
          "0 0 - \"-\" \"curl/8.0\" \"abc-123\" \"catalog.istioinaction.io\" \"-\" "
          "outbound|80|version-v1|catalog.istioinaction.svc.cluster.local - 10.10.0.5:8080 "
          "10.10.0.1:5555 - -\n",
          &r);
    assert_int_equal(r.code, 503);
    assert_string_equal(r.flags, "NC");
    assert_string_equal(r.details, "cluster_not_found");
    assert_string_equal(r.cluster,
                        "outbound|80|version-v1|catalog.istioinaction.svc.cluster.local");
    assert_string_equal(r.authority, "catalog.istioinaction.io");
    assert_string_equal(r.request_id, "abc-123");
    assert_string_equal(r.path, "/items");
    assert_null(r.host);
    assert_null(r.route);
    assert_true(wf_lx_failed(&r));
    wf_lx_record_free(&r);

    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"POST /upload HTTP/1.1\" 503 URX,UF "
          "upstream_reset_before_response_started{remote_connection_failure|delayed_connect_error:_"
          "Connection_refused} - \"delayed connect error: Connection refused\" 10 91 3 - \"-\" "
          "\"python\" \"id\" \"inventory\" \"127.0.0.21:8080\" outbound|80||inventory.shop.svc."
          "cluster.local - 127.0.0.1:80 127.0.0.1:4444 - default\n",
          &r);
    assert_string_equal(r.flags, "URX,UF");
    assert_string_equal(r.tfr, "delayed connect error: Connection refused");
    assert_string_equal(r.route, "default");
    assert_string_equal(r.host, "127.0.0.21:8080");
    wf_lx_record_free(&r);
}

/* The lines weft-proxy's listener access log writes (Istio's text and JSON formats) for a
 * plaintext client on a STRICT inbound port: code 0, NR, filter_chain_not_found, read as a
 * failure, and NR explained as the listener's (no request), not as a route miss. */
static void test_listener_nr_lines(void **state)
{
    (void)state;
    wf_lx_record r;
    parse(NULL,
          "[2026-12-05T18:54:44.143Z] \"- - -\" 0 NR filter_chain_not_found - \"-\" 0 0 0 - \"-\" "
          "\"-\" \"-\" \"-\" \"-\" - - 10.10.0.5:8080 10.10.0.7:51614 - -\n",
          &r);
    assert_int_equal(r.code, 0);
    assert_string_equal(r.flags, "NR");
    assert_string_equal(r.details, "filter_chain_not_found");
    assert_null(r.method);
    assert_null(r.path);
    assert_null(r.cluster);
    assert_true(wf_lx_failed(&r));
    wf_lx_record_free(&r);
    parse(NULL,
          "{\"authority\":null,\"bytes_received\":0,\"bytes_sent\":0,"
          "\"connection_termination_details\":null,\"downstream_local_address\":"
          "\"10.10.0.5:8080\",\"downstream_remote_address\":\"10.10.0.7:51614\",\"duration\":0,"
          "\"method\":null,\"path\":null,\"protocol\":null,\"request_id\":null,"
          "\"requested_server_name\":null,\"response_code\":0,\"response_code_details\":"
          "\"filter_chain_not_found\",\"response_flags\":\"NR\",\"route_name\":null,"
          "\"start_time\":\"2026-12-05T18:54:44.143Z\",\"upstream_cluster\":null,"
          "\"upstream_host\":null,\"upstream_local_address\":null,\"upstream_service_time\":null,"
          "\"upstream_transport_failure_reason\":null,\"user_agent\":null,"
          "\"x_forwarded_for\":null}",
          &r);
    assert_int_equal(r.code, 0);
    assert_string_equal(r.flags, "NR");
    assert_string_equal(r.details, "filter_chain_not_found");
    assert_true(wf_lx_failed(&r));
    wf_lx_record_free(&r);
    const wf_lx_entry *e = wf_lx_find_flag_in_context("NR", "filter_chain_not_found");
    assert_non_null(e);
    assert_string_equal(e->name, "NoRouteFound");
    assert_non_null(strstr(e->status, "response code 0"));
    assert_non_null(strstr(e->meaning, "No filter chain of the listener matched"));
    assert_null(wf_lx_find_flag_in_context("NR", "route_not_found"));
    assert_null(wf_lx_find_flag_in_context("NR", NULL));
    assert_null(wf_lx_find_flag_in_context("UF", "filter_chain_not_found"));
}

static void test_envoy_default_line(void **state)
{
    (void)state;
    wf_lx_record r;
    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"GET /x HTTP/1.1\" 404 NR 0 0 0 - \"-\" \"curl/8.0\" "
          "\"rid\" \"admin.example.internal\" \"-\"\n",
          &r);
    assert_int_equal(r.code, 404);
    assert_string_equal(r.flags, "NR");
    assert_null(r.details);
    assert_string_equal(r.authority, "admin.example.internal");
    wf_lx_record_free(&r);
    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"GET / HTTP/1.1\" 200 - 0 12 3 2 \"-\" \"curl\" \"r\" "
          "\"catalog\" \"10.0.0.1:3000\"",
          &r);
    assert_false(wf_lx_failed(&r));
    wf_lx_record_free(&r);
}

/* A 507 in Envoy's default format (no details field) is explained from the status and the
 * missing upstream host; an upstream's own 507 (a host is logged) and a line with details
 * are not guessed at. */
static void test_507_without_details_is_inferred(void **state)
{
    (void)state;
    wf_lx_record r;
    const char *why = NULL;
    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"POST /upload HTTP/1.1\" 507 - 1048576 0 12 - \"-\" "
          "\"curl/8.0\" \"rid\" \"upload.example\" \"-\"",
          &r);
    assert_null(r.details);
    const wf_lx_entry *e = wf_lx_infer_details(&r, &why);
    assert_non_null(e);
    assert_string_equal(e->key, "request_payload_exceeded_retry_buffer_limit");
    assert_non_null(strstr(why, "no upstream host"));
    wf_lx_record_free(&r);
    /* the upstream answered (x-envoy-upstream-service-time 3): its own 507 */
    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"POST /dav HTTP/1.1\" 507 - 10 0 12 3 \"-\" \"curl\" "
          "\"rid\" \"dav.example\" \"10.0.0.1:80\"",
          &r);
    assert_string_equal(r.upstream_service_time, "3");
    assert_null(wf_lx_infer_details(&r, &why));
    wf_lx_record_free(&r);
    /* an attempt in flight (upstream host) that never answered (no service time): the retry
     * buffer overflowed, as weft-proxy logs it */
    parse(NULL,
          "[2026-12-05T10:00:00.000Z] \"POST /upload HTTP/1.1\" 507 - 0 0 3 - \"-\" \"curl\" "
          "\"abc\" \"catalog.istioinaction.io\" \"127.10.0.5:3000\"",
          &r);
    e = wf_lx_infer_details(&r, &why);
    assert_non_null(e);
    assert_string_equal(e->key, "request_payload_exceeded_retry_buffer_limit");
    assert_non_null(strstr(why, "the upstream did not answer"));
    wf_lx_record_free(&r);
    /* a GET has no body to buffer: no guess, with or without an upstream host */
    parse(NULL,
          "[2026-12-05T12:00:00.000Z] \"GET /x HTTP/1.1\" 507 - 0 0 1 - \"-\" \"curl\" "
          "\"abc\" \"h\" \"-\"",
          &r);
    assert_null(wf_lx_infer_details(&r, &why));
    wf_lx_record_free(&r);
    parse(NULL,
          "[2026-12-05T10:00:00.000Z] \"GET /x HTTP/1.1\" 507 - 0 0 3 - \"-\" \"curl\" "
          "\"abc\" \"a\" \"127.10.0.5:3000\"",
          &r);
    assert_null(wf_lx_infer_details(&r, &why));
    wf_lx_record_free(&r);
    parse(NULL,
          "[2026-08-22T19:00:53.123Z] \"GET /x HTTP/1.1\" 503 - 0 0 0 - \"-\" \"curl\" \"r\" "
          "\"a\" \"-\"",
          &r);
    assert_null(wf_lx_infer_details(&r, &why)); /* nothing is known about a bare 503 */
    wf_lx_record_free(&r);
}

static void test_custom_format_line(void **state)
{
    (void)state;
    wf_lx_record r;
    parse("%START_TIME% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% "
          "%UPSTREAM_CLUSTER% \"%REQ(:AUTHORITY)%\" %DURATION%\n",
          "2026-08-22T19:00:53Z 504 UT response_timeout outbound|80||catalog.shop.svc."
          "cluster.local; \"catalog\" 2001",
          &r);
    assert_int_equal(r.code, 504);
    assert_string_equal(r.flags, "UT");
    assert_string_equal(r.details, "response_timeout");
    assert_string_equal(r.cluster, "outbound|80||catalog.shop.svc.cluster.local"); /* no ';' */
    assert_string_equal(r.duration, "2001");
    wf_lx_record_free(&r);
    /* a line that does not fit the format is not an access log line */
    wf_strbuf err = WF_STRBUF_INIT;
    wf_lx_format *f = wf_lx_format_new("%RESPONSE_CODE% %RESPONSE_FLAGS%", &err);
    assert_non_null(f);
    assert_int_equal(wf_lx_parse_line(f, "hello world from the app", &r), -1);
    assert_int_equal(wf_lx_parse_line(f, "0 DC", &r), 0);
    assert_int_equal(r.code, 0);
    assert_true(wf_lx_failed(&r));
    wf_lx_record_free(&r);
    wf_lx_format_free(f);
    assert_null(wf_lx_format_new("no operators here", &err));
    wf_strbuf_free(&err);
}

static void test_json_lines(void **state)
{
    (void)state;
    wf_lx_record r;
    parse(NULL,
          "{\"authority\":\"catalog\",\"bytes_received\":0,\"response_code\":507,"
          "\"response_code_details\":\"request_payload_exceeded_retry_buffer_limit\","
          "\"response_flags\":\"-\",\"upstream_cluster\":\"outbound|80||catalog.shop.svc.cluster."
          "local\",\"route_name\":null,\"upstream_host\":null,\"duration\":12}",
          &r);
    assert_int_equal(r.code, 507);
    assert_null(r.flags);
    assert_null(r.route);
    assert_string_equal(r.details, "request_payload_exceeded_retry_buffer_limit");
    assert_string_equal(r.duration, "12");
    assert_true(wf_lx_failed(&r));
    wf_lx_record_free(&r);
    parse("{\"status\": \"%RESPONSE_CODE%\", \"why\": \"%RESPONSE_FLAGS%\", \"c\": "
          "\"%UPSTREAM_CLUSTER_RAW%\"}",
          "{\"status\": 503, \"why\": \"UH\", \"c\": \"outbound|80|v2|catalog.shop.svc.cluster."
          "local\"}",
          &r);
    assert_int_equal(r.code, 503);
    assert_string_equal(r.flags, "UH");
    assert_string_equal(r.cluster, "outbound|80|v2|catalog.shop.svc.cluster.local");
    wf_lx_record_free(&r);
    assert_int_equal(wf_lx_parse_line(NULL, "{\"level\":\"info\",\"msg\":\"app log\"}", &r), -1);
}

/* A --format with an operator Envoy does not know is refused, naming it (never guessed). */
static void test_unknown_operator_is_refused(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_null(wf_lx_format_new("%BOGUS_OP% %RESPONSE_CODE%", &err));
    assert_non_null(strstr(wf_strbuf_cstr(&err), "BOGUS_OP"));
    wf_strbuf_free(&err);
    wf_lx_format *f = wf_lx_format_new("%START_TIME% %RESPONSE_FLAGS%", &err);
    assert_non_null(f);
    wf_lx_record r;
    assert_int_equal(wf_lx_parse_line(f, "2026-11-30T00:00:00Z UH", &r), 0);
    assert_int_equal(r.code, -1); /* no code in this format: shown as "-" */
    wf_lx_record_free(&r);
    wf_lx_format_free(f);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_operator_is_refused),
        cmocka_unit_test(test_every_flag_has_an_entry),
        cmocka_unit_test(test_every_detail_has_an_entry),
        cmocka_unit_test(test_every_table_entry_is_tested),
        cmocka_unit_test(test_seed_texts),
        cmocka_unit_test(test_unknown_values_are_not_guessed),
        cmocka_unit_test(test_istio_text_line),
        cmocka_unit_test(test_envoy_default_line),
        cmocka_unit_test(test_507_without_details_is_inferred),
        cmocka_unit_test(test_custom_format_line),
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_listener_nr_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
