/*
 * test_access_log.c - access logs: response flag names and order, header lookups
 * (stream_info.c), text and typed-JSON formats with every operator, Envoy's default and
 * Istio's text/JSON formats, missing values, truncation, JSON escaping, compile errors
 * (access_log.c), and the non-blocking file writer on a real libuv loop (alog_sink.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/access_log/access_log.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/stream_info/stream_info.h"
#include "xds/istio_log.h"

/* 2026-11-29T21:30:00.123456Z */
#define START_US 1795987800123456LL
#define START_NS 1000000000ULL
#define MS(x)    ((uint64_t)((x)*1000000.0))

/* ---------------------------------------------------------------- fixtures ---------- */

typedef struct {
    h1_header req_h[8];
    h1_message req;
    h1_header resp_h[4];
    h1_header trl_h[2];
    wp_stream_info si;
} fixture;

static h1_str S(const char *s)
{
    return (h1_str){s, strlen(s)};
}

static void add_req(fixture *fx, const char *name, const char *value)
{
    fx->req_h[fx->req.nheaders++] = (h1_header){S(name), S(value)};
}

static void base_request(fixture *fx, const char *method, const char *target)
{
    memset(fx, 0, sizeof *fx);
    fx->req.method = S(method);
    fx->req.target = S(target);
    fx->req.version_minor = 1;
    fx->req.headers = fx->req_h;
    fx->si.request = &fx->req;
    fx->si.protocol = "HTTP/1.1";
    fx->si.start_time_us = START_US;
    fx->si.start_ns = START_NS;
}

/* A request that went upstream and got a 200. */
static void make_full(fixture *fx)
{
    base_request(fx, "GET", "/items?x=1");
    add_req(fx, "Host", "catalog");
    add_req(fx, "User-Agent", "curl/8");
    add_req(fx, "X-Request-Id", "id-1");
    add_req(fx, "X-Forwarded-For", "10.0.0.1");
    fx->resp_h[0] = (h1_header){S("X-Envoy-Upstream-Service-Time"), S("7")};
    fx->resp_h[1] = (h1_header){S("Content-Type"), S("text/plain")};
    wp_stream_info *si = &fx->si;
    si->response_headers = fx->resp_h;
    si->nresponse_headers = 2;
    si->connection_id = 7;
    si->stream_id = 99;
    si->last_rx_ns = START_NS + MS(1.5);
    si->first_upstream_tx_ns = START_NS + MS(2);
    si->last_upstream_tx_ns = START_NS + MS(3.9);
    si->first_upstream_rx_ns = START_NS + MS(10.2);
    si->last_upstream_rx_ns = START_NS + MS(12);
    si->first_downstream_tx_ns = START_NS + MS(10.5);
    si->last_downstream_tx_ns = START_NS + MS(13.7);
    si->end_ns = START_NS + MS(14.9);
    si->response_code = 200;
    si->details = "via_upstream";
    si->termination_details = "closed";
    si->transport_failure_reason = "tls_error";
    si->bytes_received = 5;
    si->bytes_sent = 11;
    si->wire_bytes_received = 120;
    si->wire_bytes_sent = 230;
    si->route_name = "default";
    si->upstream_cluster = "outbound|80||catalog.default.svc.cluster.local";
    si->upstream_cluster_stat = "outbound|80||catalog.default.svc.cluster.local;";
    si->upstream_host = "10.9.9.9:9080";
    si->upstream_local = "10.1.2.4:51000";
    si->downstream_local = "10.1.2.4:8080";
    si->downstream_remote = "[fd00::1]:45678";
    si->downstream_direct_remote = "[fd00::1]:45678";
    si->requested_server_name = "catalog.example";
    si->attempt_count = 2;
    si->upstream_connection_id = 12;
}

/* The 503 NC request of the brief: no cluster, nothing sent upstream. */
static void make_nc(fixture *fx)
{
    base_request(fx, "GET", "/items");
    add_req(fx, "host", "catalog");
    add_req(fx, "user-agent", "curl/8");
    add_req(fx, "x-request-id", "id");
    wp_stream_info *si = &fx->si;
    si->last_rx_ns = START_NS + MS(0.1);
    si->end_ns = START_NS + MS(0.4);
    si->response_code = 503;
    si->details = "cluster_not_found";
    wp_si_set_flag(si, WP_RF_NC);
    si->downstream_local = "127.0.0.1:80";
    si->downstream_remote = "127.0.0.1:5000";
    si->downstream_direct_remote = "127.0.0.1:5000";
}

static char *render(const wp_access_log_format *f, const wp_stream_info *si)
{
    wf_strbuf out = WF_STRBUF_INIT;
    wp_alf_render(f, si, &out);
    assert_false(wf_strbuf_failed(&out));
    char *s = wf_strbuf_take(&out);
    assert_non_null(s);
    return s;
}

static void check_text(const char *fmt, const wp_stream_info *si, const char *want)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_access_log_format *f = wp_alf_compile_text(fmt, &err);
    if (!f)
        fail_msg("compile '%s': %s", fmt, wf_strbuf_cstr(&err));
    char *got = render(f, si);
    assert_string_equal(got, want);
    free(got);
    wp_alf_free(f);
    wf_strbuf_free(&err);
}

static void check_json(const char *json_fmt, const wp_stream_info *si, const char *want)
{
    json_error_t jerr;
    json_t *j = json_loads(json_fmt, 0, &jerr);
    assert_non_null(j);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_access_log_format *f = wp_alf_compile_json(j, &err);
    json_decref(j);
    if (!f)
        fail_msg("compile '%s': %s", json_fmt, wf_strbuf_cstr(&err));
    assert_true(wp_alf_is_json(f));
    char *got = render(f, si);
    assert_string_equal(got, want);
    /* whatever the input, the line is one valid JSON object */
    json_t *back = json_loads(got, JSON_DISABLE_EOF_CHECK, &jerr);
    if (!back)
        fail_msg("invalid JSON %s: %s", got, jerr.text);
    json_decref(back);
    free(got);
    wp_alf_free(f);
    wf_strbuf_free(&err);
}

static void check_error(const char *fmt, const char *want)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_access_log_format *f = wp_alf_compile_text(fmt, &err);
    assert_null(f);
    assert_string_equal(wf_strbuf_cstr(&err), want);
    wf_strbuf_free(&err);
}

/* ---------------------------------------------------------------- stream_info ------- */

static void test_flag_names(void **state)
{
    (void)state;
    assert_string_equal(wp_flag_short(WP_RF_UH), "UH");
    assert_string_equal(wp_flag_long(WP_RF_UH), "NoHealthyUpstream");
    assert_string_equal(wp_flag_short(WP_RF_URX), "URX");
    assert_string_equal(wp_flag_long(WP_RF_URX), "UpstreamRetryLimitExceeded");
    assert_string_equal(wp_flag_short(WP_RF_NC), "NC");
    assert_string_equal(wp_flag_long(WP_RF_NC), "NoClusterFound");
    assert_string_equal(wp_flag_long(WP_RF_OM), "OverloadManagerTerminated");
    assert_string_equal(wp_flag_long(WP_RF_DF), "DnsResolutionFailed");
    assert_string_equal(wp_flag_short(WP_RF_UMSDR), "UMSDR");
    assert_string_equal(wp_flag_long(WP_RF_DC), "DownstreamConnectionTermination");
    for (int i = 0; i < WP_RF_COUNT_; i++) {
        assert_non_null(wp_flag_short((wp_response_flag)i));
        assert_true(strlen(wp_flag_short((wp_response_flag)i)) >= 2);
        assert_true(strlen(wp_flag_long((wp_response_flag)i)) > 4);
    }
}

static void test_flags_set_order(void **state)
{
    (void)state;
    wp_stream_info si;
    memset(&si, 0, sizeof si);
    char buf[64];
    assert_int_equal(wp_si_flags_string(&si, buf, sizeof buf), 1);
    assert_string_equal(buf, "-");
    wp_si_set_flag(&si, WP_RF_URX);
    wp_si_set_flag(&si, WP_RF_UF);
    wp_si_set_flag(&si, WP_RF_URX); /* twice: kept once */
    assert_true(wp_si_has_flag(&si, WP_RF_UF));
    assert_false(wp_si_has_flag(&si, WP_RF_UH));
    assert_int_equal(wp_si_flags_string(&si, buf, sizeof buf), 6);
    assert_string_equal(buf, "URX,UF");
    /* a full set still fits in 64 bytes */
    wp_response_flag many[] = {WP_RF_UMSDR, WP_RF_UAEX, WP_RF_RLSE, WP_RF_RFCF,
                               WP_RF_NFCF,  WP_RF_UPE,  WP_RF_DPE,  WP_RF_UDO};
    for (size_t i = 0; i < 8; i++)
        wp_si_set_flag(&si, many[i]);
    assert_int_equal(si.nflags, WP_MAX_FLAGS);
    wp_si_flags_string(&si, buf, sizeof buf);
    assert_string_equal(buf, "URX,UF,UMSDR,UAEX,RLSE,RFCF,NFCF,UPE");
    check_text("%RESPONSE_FLAGS_LONG%", &si,
               "UpstreamRetryLimitExceeded,UpstreamConnectionFailure,"
               "UpstreamMaxStreamDurationReached,UnauthorizedExternalService,"
               "RateLimitServiceError,ResponseFromCacheFilter,NoFilterConfigFound,"
               "UpstreamProtocolError");
}

/* Operators an Istio accessLogFormat may use that once made the whole format fail (and the
 * listener be NACKed): upstream protocol and wire bytes, gRPC status, and the sources weft
 * never sets (virtual clusters, dynamic metadata, filter state), unset as in Envoy. */
static void test_more_operators(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    fx.si.upstream_wire_bytes_sent = 180;
    fx.si.upstream_wire_bytes_received = 260;
    check_text("%UPSTREAM_PROTOCOL% %UPSTREAM_WIRE_BYTES_SENT% %UPSTREAM_WIRE_BYTES_RECEIVED% "
               "%VIRTUAL_CLUSTER_NAME% %DYNAMIC_METADATA(istio.mixer:status)% "
               "%FILTER_STATE(istio.peer):10% %CLUSTER_METADATA(istio:config)% %GRPC_STATUS%",
               &fx.si, "HTTP/1.1 180 260 - - - - -");
    check_json("{\"up\":\"%UPSTREAM_PROTOCOL%\",\"tx\":\"%UPSTREAM_WIRE_BYTES_SENT%\","
               "\"vc\":\"%VIRTUAL_CLUSTER_NAME%\",\"md\":\"%DYNAMIC_METADATA(a:b)%\"}",
               &fx.si, "{\"md\":null,\"tx\":180,\"up\":\"HTTP/1.1\",\"vc\":null}\n");
    fx.si.upstream_protocol = "HTTP/2"; /* the attempt went to an HTTP/2 upstream */
    check_text("%UPSTREAM_PROTOCOL%", &fx.si, "HTTP/2");
    fx.si.upstream_protocol = NULL;
    add_req(&fx, "content-type", "application/grpc"); /* GRPC_STATUS: gRPC requests only */
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("14")};
    fx.si.nresponse_headers = 3;
    check_text("%GRPC_STATUS% %GRPC_STATUS(SNAKE_STRING)% %GRPC_STATUS(NUMBER)% "
               "%GRPC_STATUS_NUMBER%",
               &fx.si, "Unavailable UNAVAILABLE 14 14");
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("42")};
    check_text("%GRPC_STATUS%", &fx.si, "42");
    make_nc(&fx); /* no upstream: no upstream protocol, no bytes */
    check_text("%UPSTREAM_PROTOCOL% %UPSTREAM_WIRE_BYTES_SENT%", &fx.si, "- 0");
    wf_strbuf err = WF_STRBUF_INIT;
    assert_null(wp_alf_compile_text("%GRPC_STATUS(CAMEL)%", &err));
    assert_non_null(strstr(wf_strbuf_cstr(&err), "GrpcStatusFormatter only supports"));
    wf_strbuf_free(&err);
}

#define GRPC_ALL "%GRPC_STATUS% %GRPC_STATUS(SNAKE_STRING)% %GRPC_STATUS_NUMBER%"

/* Envoy's GrpcStatusFormatter: a request that is not gRPC logs "-" even with a grpc-status
 * header; a gRPC one without grpc-status gets the status mapped from the response code
 * (httpToGrpcStatus), so a 503 NC logs Unavailable and a 200 Unknown. */
static void test_grpc_status_of_grpc_requests_only(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx); /* a plain request answered 200 */
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("14")};
    fx.si.nresponse_headers = 3;
    check_text(GRPC_ALL, &fx.si, "- - -");
    check_json("{\"g\":\"%GRPC_STATUS_NUMBER%\"}", &fx.si, "{\"g\":null}\n");
    make_nc(&fx); /* a gRPC request answered 503 NC: no header, mapped from the code */
    add_req(&fx, "content-type", "application/grpc");
    check_text(GRPC_ALL, &fx.si, "Unavailable UNAVAILABLE 14");
    check_json("{\"c\":\"%GRPC_STATUS%\",\"n\":\"%GRPC_STATUS_NUMBER%\"}", &fx.si,
               "{\"c\":\"Unavailable\",\"n\":14}\n");
    static const struct {
        int code;
        const char *want;
    } map[] = {{400, "Internal"},      {401, "Unauthenticated"}, {403, "PermissionDenied"},
               {404, "Unimplemented"}, {429, "Unavailable"},     {502, "Unavailable"},
               {504, "Unavailable"},   {200, "Unknown"},         {500, "Unknown"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        fx.si.response_code = map[i].code;
        check_text("%GRPC_STATUS%", &fx.si, map[i].want);
    }
    fx.si.response_code = 0; /* no response at all: nothing to map */
    check_text(GRPC_ALL, &fx.si, "- - -");
}

/* isGrpcRequestHeaders: exactly application/grpc or application/grpc+...; grpc-web and
 * parameters after ';' are not gRPC. */
static void test_grpc_status_content_types(void **state)
{
    (void)state;
    static const struct {
        const char *ct, *want;
    } cases[] = {{"application/grpc", "Unavailable"}, {"application/grpc+proto", "Unavailable"},
                 {"application/grpc-web", "-"},       {"application/grpc;charset=utf-8", "-"},
                 {"Application/gRPC", "-"},           {"text/plain", "-"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture fx;
        make_nc(&fx);
        add_req(&fx, "content-type", cases[i].ct);
        check_text("%GRPC_STATUS%", &fx.si, cases[i].want);
    }
}

/* getGrpcStatus: trailers first, then headers, then the code; an empty value counts as
 * absent, a non-number is InvalidCode (-1); codes without a name print their number. */
static void test_grpc_status_trailers_first(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    add_req(&fx, "content-type", "application/grpc+proto");
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("14")};
    fx.si.nresponse_headers = 3;
    fx.trl_h[0] = (h1_header){S("grpc-status"), S("0")};
    fx.trl_h[1] = (h1_header){S("grpc-message"), S("fine")};
    fx.si.response_trailers = fx.trl_h;
    fx.si.nresponse_trailers = 2;
    check_text(GRPC_ALL " %TRAILER(GRPC-MESSAGE)% %TRAILER(X?grpc-status)%", &fx.si,
               "OK OK 0 fine 0");
    fx.trl_h[0] = (h1_header){S("grpc-status"), S("")}; /* empty: the header's */
    check_text(GRPC_ALL, &fx.si, "Unavailable UNAVAILABLE 14");
    fx.si.nresponse_trailers = 0;
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("abc")};
    check_text(GRPC_ALL, &fx.si, "-1 -1 -1");
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("42")};
    check_text(GRPC_ALL, &fx.si, "42 42 42");
    check_json("{\"c\":\"%GRPC_STATUS%\",\"s\":\"%GRPC_STATUS(SNAKE_STRING)%\","
               "\"n\":\"%GRPC_STATUS(NUMBER)%\"}",
               &fx.si, "{\"c\":\"42\",\"n\":42,\"s\":\"42\"}\n");
    fx.resp_h[2] = (h1_header){S("grpc-status"), S("1")};
    check_text(GRPC_ALL, &fx.si, "Canceled CANCELLED 1");
}

/* FilterStateFormatter::create's checks (weft has no filter state: valid ones print "-"). */
static void test_filter_state_args(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    check_text("%FILTER_STATE(k)% %FILTER_STATE(k:PLAIN)% %FILTER_STATE(k:TYPED):5% "
               "%UPSTREAM_FILTER_STATE(k:FIELD:f)% %FILTER_STATE(k:TYPED:)%",
               &fx.si, "- - - - -");
    check_error("%FILTER_STATE(k:BOGUS)%", "Invalid filter state serialize type, only support "
                                           "PLAIN/TYPED/FIELD. (column 1)");
    check_error("x %UPSTREAM_FILTER_STATE(k:plain)%", "Invalid filter state serialize type, "
                                                      "only support PLAIN/TYPED/FIELD. (column 3)");
    check_error("%FILTER_STATE(k:FIELD)%", "Invalid filter state serialize type, FIELD should "
                                           "be used with the field name. (column 1)");
    check_error("%FILTER_STATE(k:PLAIN:f)%", "Invalid filter state serialize type, FIELD should "
                                             "be used with the field name. (column 1)");
    check_error("%FILTER_STATE%",
                "Invalid filter state configuration, key cannot be empty. (column 1)");
    check_error("%FILTER_STATE(:PLAIN)%",
                "Invalid filter state configuration, key cannot be empty. (column 1)");
}

/* The *_at compilers name the format's JSON path in the configuration. */
static void test_compile_errors_at(void **state)
{
    (void)state;
    const char *at = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config."
                     "access_log[0].typed_config.log_format.text_format_source.inline_string";
    wf_strbuf err = WF_STRBUF_INIT, want = WF_STRBUF_INIT;
    assert_null(wp_alf_compile_text_at("%GRPC_STATUS(X)%", at, &err));
    wf_strbuf_printf(&want,
                     "%s: GrpcStatusFormatter only supports CAMEL_STRING, SNAKE_STRING or "
                     "NUMBER. (column 1)",
                     at);
    assert_string_equal(wf_strbuf_cstr(&err), wf_strbuf_cstr(&want));
    wf_strbuf_reset(&err);
    json_t *j = json_loads("{\"a\":{\"b\":\"x %NOPE%\"}}", 0, NULL);
    assert_non_null(j);
    assert_null(wp_alf_compile_json_at(j, "l.json_format", &err));
    assert_string_equal(wf_strbuf_cstr(&err),
                        "l.json_format.a.b: Not supported field in StreamInfo: NOPE (column 3)");
    json_decref(j);
    wf_strbuf_reset(&err);
    wp_access_log_format *f = wp_alf_compile_text_at("%PROTOCOL%", at, &err);
    assert_non_null(f);
    wp_alf_free(f);
    assert_null(wp_alf_compile_text_at("%NOPE%", "", &err)); /* "" = no prefix */
    assert_string_equal(wf_strbuf_cstr(&err), "Not supported field in StreamInfo: NOPE (column 1)");
    wf_strbuf_free(&err);
    wf_strbuf_free(&want);
}

static void test_header_lookup(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    size_t len = 0;
    const char *v = wp_si_req_header(&fx.si, ":authority", &len);
    assert_non_null(v);
    assert_int_equal(len, 7);
    assert_memory_equal(v, "catalog", 7);
    v = wp_si_req_header(&fx.si, ":method", &len);
    assert_memory_equal(v, "GET", len);
    v = wp_si_req_header(&fx.si, ":path", &len);
    assert_int_equal(len, 10);
    assert_memory_equal(v, "/items?x=1", len);
    v = wp_si_req_header(&fx.si, ":scheme", &len);
    assert_memory_equal(v, "http", len);
    v = wp_si_req_header(&fx.si, "user-agent", &len);
    assert_memory_equal(v, "curl/8", len);
    assert_null(wp_si_req_header(&fx.si, "x-missing", &len));
    assert_null(wp_si_req_header(&fx.si, ":status", &len));
    v = wp_si_resp_header(&fx.si, "content-type", &len);
    assert_memory_equal(v, "text/plain", len);
    assert_null(wp_si_resp_header(&fx.si, ":status", &len));
    fx.si.request = NULL;
    fx.si.response_headers = NULL;
    assert_null(wp_si_req_header(&fx.si, ":method", &len));
    assert_null(wp_si_resp_header(&fx.si, "content-type", &len));
}

/* ---------------------------------------------------------------- text formats ------ */

#define ALL_OPS                                                                                    \
    "%START_TIME%|%PROTOCOL%|%RESPONSE_CODE%|%RESPONSE_CODE_DETAILS%|"                             \
    "%CONNECTION_TERMINATION_DETAILS%|%RESPONSE_FLAGS%|%RESPONSE_FLAGS_LONG%|%BYTES_RECEIVED%|"    \
    "%BYTES_SENT%|%DOWNSTREAM_WIRE_BYTES_SENT%|%DOWNSTREAM_WIRE_BYTES_RECEIVED%|%DURATION%|"       \
    "%REQUEST_DURATION%|%REQUEST_TX_DURATION%|%RESPONSE_DURATION%|%RESPONSE_TX_DURATION%|"         \
    "%UPSTREAM_REQUEST_ATTEMPT_COUNT%|%ROUTE_NAME%|%UPSTREAM_HOST%|%UPSTREAM_CLUSTER%|"            \
    "%UPSTREAM_CLUSTER_RAW%|%UPSTREAM_LOCAL_ADDRESS%|%UPSTREAM_TRANSPORT_FAILURE_REASON%|"         \
    "%DOWNSTREAM_REMOTE_ADDRESS%|%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%|"                        \
    "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS%|%DOWNSTREAM_LOCAL_ADDRESS%|"                               \
    "%DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT%|%REQUESTED_SERVER_NAME%|%CONNECTION_ID%|"             \
    "%UPSTREAM_CONNECTION_ID%|%STREAM_ID%|%REQ(:METHOD)%|%REQ(:PATH)%|%REQ(:AUTHORITY)%|"          \
    "%REQ(:SCHEME)%|%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%|%TRAILER(GRPC-STATUS)%|100%%"

static void test_text_every_operator(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    wp_si_set_flag(&fx.si, WP_RF_URX);
    wp_si_set_flag(&fx.si, WP_RF_UF);
    check_text(ALL_OPS, &fx.si,
               "2026-11-29T21:30:00.123Z|HTTP/1.1|200|via_upstream|closed|URX,UF|"
               "UpstreamRetryLimitExceeded,UpstreamConnectionFailure|5|11|230|120|14|1|3|10|3|2|"
               "default|10.9.9.9:9080|outbound|80||catalog.default.svc.cluster.local;|"
               "outbound|80||catalog.default.svc.cluster.local|10.1.2.4:51000|tls_error|"
               "[fd00::1]:45678|fd00::1|[fd00::1]:45678|10.1.2.4:8080|10.1.2.4|catalog.example|"
               "7|12|99|GET|/items?x=1|catalog|http|7|-|100%");
    check_text(
        "%UPSTREAM_REMOTE_ADDRESS%|%UPSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%|"
        "%UPSTREAM_LOCAL_ADDRESS_WITHOUT_PORT%|%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT%",
        &fx.si, "10.9.9.9:9080|10.9.9.9|10.1.2.4|fd00::1");
    /* UPSTREAM_CLUSTER falls back to the name when there is no alt_stat_name */
    fx.si.upstream_cluster_stat = NULL;
    check_text("%UPSTREAM_CLUSTER%", &fx.si, "outbound|80||catalog.default.svc.cluster.local");
}

/* The TLS operators (unset on plaintext) and the failure reason with spaces as '_' (Envoy's
 * stream_info_formatter.cc; security.md §3.5). */
static void test_text_tls_operators(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    const char *ops = "%DOWNSTREAM_PEER_URI_SAN%|%DOWNSTREAM_LOCAL_URI_SAN%|"
                      "%DOWNSTREAM_TLS_VERSION%|%DOWNSTREAM_TLS_CIPHER%|"
                      "%DOWNSTREAM_PEER_SUBJECT%|%UPSTREAM_PEER_URI_SAN%|%UPSTREAM_TLS_VERSION%|"
                      "%DOWNSTREAM_TRANSPORT_FAILURE_REASON%";
    check_text(ops, &fx.si, "-|-|-|-|-|-|-|-");
    fx.si.downstream_peer_uri_san = "spiffe://cluster.local/ns/a/sa/client";
    fx.si.downstream_local_uri_san = "spiffe://cluster.local/ns/b/sa/server";
    fx.si.downstream_tls_version = "TLSv1.3";
    fx.si.downstream_tls_cipher = "TLS_AES_128_GCM_SHA256";
    fx.si.downstream_peer_subject = "CN=client,O=weft";
    fx.si.upstream_peer_uri_san = "spiffe://cluster.local/ns/c/sa/up";
    fx.si.upstream_tls_version = "TLSv1.2";
    check_text(ops, &fx.si,
               "spiffe://cluster.local/ns/a/sa/client|spiffe://cluster.local/ns/b/sa/server|"
               "TLSv1.3|TLS_AES_128_GCM_SHA256|CN=client,O=weft|spiffe://cluster.local/ns/c/sa/up|"
               "TLSv1.2|-");
    fx.si.transport_failure_reason = "TLS_error:|268435581:SSL routines:OPENSSL_internal:"
                                     "CERTIFICATE_VERIFY_FAILED:TLS_error_end";
    check_text("%UPSTREAM_TRANSPORT_FAILURE_REASON%", &fx.si,
               "TLS_error:|268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:"
               "TLS_error_end");
}

static void test_text_missing_values(void **state)
{
    (void)state;
    wp_stream_info si;
    memset(&si, 0, sizeof si); /* nothing known: request never parsed, no response */
    check_text(ALL_OPS, &si,
               "-|-|0|-|-|-|-|0|0|0|0|-|-|-|-|-|0|-|-|-|-|-|-|-|-|-|-|-|-|0|0|-|-|-|-|-|-|-|100%");
    /* a request that is still open: DURATION counts up to now, the rest stays unset */
    fixture fx;
    base_request(&fx, "GET", "/");
    fx.si.start_ns = uv_hrtime() - MS(5);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_access_log_format *f = wp_alf_compile_text("%DURATION% %REQUEST_DURATION%", &err);
    assert_non_null(f);
    char *got = render(f, &fx.si);
    long d = strtol(got, NULL, 10);
    assert_true(d >= 5 && d < 60000);
    assert_non_null(strstr(got, " -"));
    free(got);
    wp_alf_free(f);
    wf_strbuf_free(&err);
}

static void test_envoy_default_format(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    const char *want = "[2026-11-29T21:30:00.123Z] \"GET /items?x=1 HTTP/1.1\" 200 - 5 11 14 7 "
                       "\"10.0.0.1\" \"curl/8\" \"id-1\" \"catalog\" \"10.9.9.9:9080\"\n";
    check_text(WP_ENVOY_DEFAULT_FORMAT, &fx.si, want);
    check_text(NULL, &fx.si, want); /* NULL = Envoy's default */
    /* X-ENVOY-ORIGINAL-PATH wins over :PATH when present */
    add_req(&fx, "x-envoy-original-path", "/orig");
    check_text(WP_ENVOY_DEFAULT_FORMAT, &fx.si,
               "[2026-11-29T21:30:00.123Z] \"GET /orig HTTP/1.1\" 200 - 5 11 14 7 "
               "\"10.0.0.1\" \"curl/8\" \"id-1\" \"catalog\" \"10.9.9.9:9080\"\n");
}

static void test_istio_text_503_nc(void **state)
{
    (void)state;
    fixture fx;
    make_nc(&fx);
    check_text(WF_ISTIO_TEXT_FORMAT, &fx.si,
               "[2026-11-29T21:30:00.123Z] \"GET /items HTTP/1.1\" 503 NC cluster_not_found - "
               "\"-\" 0 0 0 - \"-\" \"curl/8\" \"id\" \"catalog\" \"-\" - - 127.0.0.1:80 "
               "127.0.0.1:5000 - -\n");
}

static void test_start_time_formats(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    check_text("%START_TIME%", &fx.si, "2026-11-29T21:30:00.123Z");
    check_text("%START_TIME(%s)%", &fx.si, "1795987800");
    check_text("%START_TIME(%s.%3f)%", &fx.si, "1795987800.123");
    check_text("%START_TIME(%f)%", &fx.si, "123456000");
    check_text("%START_TIME(%6f)%", &fx.si, "123456");
    check_text("%START_TIME(%1f|%9f)%", &fx.si, "1|123456000");
    check_text("%START_TIME(%Y/%m/%dT%H:%M:%S%z %s)%", &fx.si,
               "2026/11/29T21:30:00+0000 1795987800");
    check_text("%START_TIME(%E3S|%E*S|%E6f|%Z)%", &fx.si, "00.123|00.123456|123456|UTC");
    check_text("%START_TIME(%a %b %e %j)%", &fx.si, "Sun Nov 29 333");
    fx.si.start_time_us = 1795987800000000LL; /* whole second */
    check_text("%START_TIME%|%START_TIME(%E*S)%", &fx.si, "2026-11-29T21:30:00.000Z|00");
}

static void test_req_truncation_and_fallback(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    add_req(&fx, "x-utf8", "\xc3\xa9-x");
    add_req(&fx, "x-empty", "");
    check_text("%REQ(USER-AGENT):4%|%REQ(USER-AGENT):0%|%REQ(USER-AGENT):100%", &fx.si,
               "curl||curl/8");
    check_text("%REQ(X-MISSING?USER-AGENT)%|%REQ(X-MISSING)%|%REQ(X-MISSING?X-ALSO):3%", &fx.si,
               "curl/8|-|-");
    /* present but empty header: printed empty, and it is not replaced by the fallback */
    check_text("[%REQ(X-EMPTY?USER-AGENT)%]", &fx.si, "[]");
    /* the length counts bytes: a cut inside a UTF-8 sequence keeps the first byte */
    check_text("%REQ(X-UTF8):1%|%REQ(X-UTF8):2%", &fx.si, "\xc3|\xc3\xa9");
    check_text("%RESP(CONTENT-TYPE):4%|%RESP(X-NOPE?CONTENT-TYPE)%", &fx.si, "text|text/plain");
    check_json("{\"cut\":\"%REQ(X-UTF8):1%\",\"ok\":\"%REQ(X-UTF8):2%\"}", &fx.si,
               "{\"cut\":\"\\u00c3\",\"ok\":\"\xc3\xa9\"}\n");
}

static void test_hostname(void **state)
{
    (void)state;
    char name[256];
    assert_int_equal(gethostname(name, sizeof name), 0);
    wp_stream_info si;
    memset(&si, 0, sizeof si);
    check_text("%HOSTNAME%", &si, name);
}

/* ---------------------------------------------------------------- JSON formats ------ */

static void test_json_typed_every_operator(void **state)
{
    (void)state;
    fixture fx;
    make_full(&fx);
    wp_si_set_flag(&fx.si, WP_RF_UT);
    check_json("{\"start\":\"%START_TIME%\",\"proto\":\"%PROTOCOL%\",\"code\":\"%RESPONSE_CODE%\","
               "\"details\":\"%RESPONSE_CODE_DETAILS%\","
               "\"term\":\"%CONNECTION_TERMINATION_DETAILS%\",\"flags\":\"%RESPONSE_FLAGS%\","
               "\"flags_long\":\"%RESPONSE_FLAGS_LONG%\",\"rx\":\"%BYTES_RECEIVED%\","
               "\"tx\":\"%BYTES_SENT%\",\"wtx\":\"%DOWNSTREAM_WIRE_BYTES_SENT%\","
               "\"wrx\":\"%DOWNSTREAM_WIRE_BYTES_RECEIVED%\",\"d\":\"%DURATION%\","
               "\"d_rq\":\"%REQUEST_DURATION%\",\"d_rqtx\":\"%REQUEST_TX_DURATION%\","
               "\"d_rs\":\"%RESPONSE_DURATION%\",\"d_rstx\":\"%RESPONSE_TX_DURATION%\","
               "\"attempts\":\"%UPSTREAM_REQUEST_ATTEMPT_COUNT%\",\"route\":\"%ROUTE_NAME%\","
               "\"uh\":\"%UPSTREAM_HOST%\",\"uc\":\"%UPSTREAM_CLUSTER%\","
               "\"ucr\":\"%UPSTREAM_CLUSTER_RAW%\",\"ul\":\"%UPSTREAM_LOCAL_ADDRESS%\","
               "\"utfr\":\"%UPSTREAM_TRANSPORT_FAILURE_REASON%\","
               "\"dr\":\"%DOWNSTREAM_REMOTE_ADDRESS%\","
               "\"drnp\":\"%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%\","
               "\"ddr\":\"%DOWNSTREAM_DIRECT_REMOTE_ADDRESS%\","
               "\"dl\":\"%DOWNSTREAM_LOCAL_ADDRESS%\","
               "\"dlnp\":\"%DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT%\","
               "\"sni\":\"%REQUESTED_SERVER_NAME%\",\"cid\":\"%CONNECTION_ID%\","
               "\"ucid\":\"%UPSTREAM_CONNECTION_ID%\",\"sid\":\"%STREAM_ID%\","
               "\"m\":\"%REQ(:METHOD)%\",\"st\":\"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%\","
               "\"tr\":\"%TRAILER(GRPC-STATUS)%\"}",
               &fx.si,
               "{\"attempts\":2,\"cid\":7,\"code\":200,\"d\":14,\"d_rq\":1,\"d_rqtx\":3,"
               "\"d_rs\":10,\"d_rstx\":3,\"ddr\":\"[fd00::1]:45678\",\"details\":\"via_upstream\","
               "\"dl\":\"10.1.2.4:8080\",\"dlnp\":\"10.1.2.4\",\"dr\":\"[fd00::1]:45678\","
               "\"drnp\":\"fd00::1\",\"flags\":\"UT\",\"flags_long\":\"UpstreamRequestTimeout\","
               "\"m\":\"GET\",\"proto\":\"HTTP/1.1\",\"route\":\"default\",\"rx\":5,"
               "\"sid\":\"99\",\"sni\":\"catalog.example\",\"st\":\"7\","
               "\"start\":\"2026-11-29T21:30:00.123Z\",\"term\":\"closed\",\"tr\":null,\"tx\":11,"
               "\"uc\":\"outbound|80||catalog.default.svc.cluster.local;\",\"ucid\":12,"
               "\"ucr\":\"outbound|80||catalog.default.svc.cluster.local\","
               "\"uh\":\"10.9.9.9:9080\",\"ul\":\"10.1.2.4:51000\",\"utfr\":\"tls_error\","
               "\"wrx\":120,\"wtx\":230}\n");
}

static void test_json_missing_values(void **state)
{
    (void)state;
    wp_stream_info si;
    memset(&si, 0, sizeof si);
    check_json("{\"start\":\"%START_TIME%\",\"code\":\"%RESPONSE_CODE%\",\"flags\":"
               "\"%RESPONSE_FLAGS%\",\"d\":\"%DURATION%\",\"rx\":\"%BYTES_RECEIVED%\","
               "\"route\":\"%ROUTE_NAME%\",\"ua\":\"%REQ(USER-AGENT)%\",\"uh\":\"%UPSTREAM_HOST%\","
               "\"attempts\":\"%UPSTREAM_REQUEST_ATTEMPT_COUNT%\",\"cid\":\"%CONNECTION_ID%\"}",
               &si,
               "{\"attempts\":0,\"cid\":0,\"code\":0,\"d\":null,\"flags\":\"-\",\"route\":null,"
               "\"rx\":0,\"start\":null,\"ua\":null,\"uh\":null}\n");
}

static void test_json_mixed_and_constants(void **state)
{
    (void)state;
    fixture fx;
    make_nc(&fx);
    check_json("{\"line\":\"%REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %ROUTE_NAME%\","
               "\"code_text\":\"code: %RESPONSE_CODE%\",\"n\":2,\"r\":2.5,\"t\":true,"
               "\"f\":false,\"z\":null,\"arr\":[1,\"%RESPONSE_CODE%\",\"x\"],"
               "\"nested\":{\"b\":\"%BYTES_SENT%\",\"a\":\"lit\"},\"pct\":\"100%%\","
               "\"plain\":\"no operators\",\"empty\":{}}",
               &fx.si,
               "{\"arr\":[1,503,\"x\"],\"code_text\":\"code: 503\",\"empty\":{},\"f\":false,"
               "\"line\":\"GET /items 503 -\",\"n\":2,\"nested\":{\"a\":\"lit\",\"b\":0},"
               "\"pct\":\"100%\",\"plain\":\"no operators\",\"r\":2.5,\"t\":true,\"z\":null}\n");
}

static void test_istio_json_format(void **state)
{
    (void)state;
    fixture fx;
    make_nc(&fx);
    json_t *j = wf_istio_json_format();
    assert_non_null(j);
    assert_int_equal(json_object_size(j), 24);
    assert_string_equal(json_string_value(json_object_get(j, "upstream_cluster")),
                        "%UPSTREAM_CLUSTER_RAW%");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_access_log_format *f = wp_alf_compile_json(j, &err);
    json_decref(j);
    assert_non_null(f);
    char *got = render(f, &fx.si);
    assert_string_equal(
        got, "{\"authority\":\"catalog\",\"bytes_received\":0,\"bytes_sent\":0,"
             "\"connection_termination_details\":null,\"downstream_local_address\":"
             "\"127.0.0.1:80\",\"downstream_remote_address\":\"127.0.0.1:5000\",\"duration\":0,"
             "\"method\":\"GET\",\"path\":\"/items\",\"protocol\":\"HTTP/1.1\",\"request_id\":"
             "\"id\",\"requested_server_name\":null,\"response_code\":503,"
             "\"response_code_details\":\"cluster_not_found\",\"response_flags\":\"NC\","
             "\"route_name\":null,\"start_time\":\"2026-11-29T21:30:00.123Z\","
             "\"upstream_cluster\":null,\"upstream_host\":null,\"upstream_local_address\":null,"
             "\"upstream_service_time\":null,\"upstream_transport_failure_reason\":null,"
             "\"user_agent\":\"curl/8\",\"x_forwarded_for\":null}\n");
    free(got);
    wp_alf_free(f);
    wf_strbuf_free(&err);
}

static void test_json_escaping(void **state)
{
    (void)state;
    fixture fx;
    make_nc(&fx);
    add_req(&fx, "x-q", "a\"b\\c\x01\x1f\b\f\n\r\t\x7f/<");
    add_req(&fx, "x-u", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");            /* é € 😀: kept */
    add_req(&fx, "x-bad", "\xff\xc3(\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf"); /* invalid */
    check_json("{\"q\":\"%REQ(X-Q)%\",\"u\":\"%REQ(X-U)%\",\"bad\":\"%REQ(X-BAD)%\","
               "\"mix\":\"<%REQ(X-Q)%>\",\"k\\\"ey\\n\":\"v\\u0001\"}",
               &fx.si,
               "{\"bad\":\"\\u00ff\\u00c3(\\u00ed\\u00a0\\u0080\\u00f4\\u0090\\u0080\\u0080"
               "\\u00c0\\u00af\",\"k\\\"ey\\n\":\"v\\u0001\","
               "\"mix\":\"<a\\\"b\\\\c\\u0001\\u001f\\b\\f\\n\\r\\t\x7f/<>\","
               "\"q\":\"a\\\"b\\\\c\\u0001\\u001f\\b\\f\\n\\r\\t\x7f/<\","
               "\"u\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}\n");
    /* text formats copy bytes as they are */
    check_text("%REQ(X-U)%", &fx.si, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

/* ---------------------------------------------------------------- compile errors ---- */

static void test_compile_errors(void **state)
{
    (void)state;
    check_error("%FOO%", "Not supported field in StreamInfo: FOO (column 1)");
    check_error("abc %START_TIME% %BOGUS_OP(x)%",
                "Not supported field in StreamInfo: BOGUS_OP (column 18)");
    check_error("%PROTOCOL(x)%", "PROTOCOL does not take any parameters or length (column 1)");
    check_error("x %DURATION:3%", "DURATION does not take any parameters or length (column 3)");
    check_error("%REQ%", "REQ requires parameters (column 1)");
    check_error("%START_TIME:10%", "START_TIME does not allow length to be specified. (column 1)");
    check_error("%REQ(A?B?C)%", "More than 1 alternative header specified in token: A?B?C "
                                "(column 1)");
    check_error("%START_TIME(%n)%",
                "Invalid header configuration. Format string contains newline. (column 1)");
    check_error("50% off",
                "Incorrect configuration: 50% off. Couldn't find valid command at position 2");
    check_error("%lower%",
                "Incorrect configuration: %lower%. Couldn't find valid command at position 0");
    check_error("%REQ(X):%", "Incorrect configuration: %REQ(X):%. Couldn't find valid command at "
                             "position 0");
    check_error("tail %", "Incorrect configuration: tail %. Couldn't find valid command at "
                          "position 5");

    wf_strbuf err = WF_STRBUF_INIT;
    json_t *j = json_loads("{\"a\":{\"b\":\"x %NOPE%\"}}", 0, NULL);
    assert_null(wp_alf_compile_json(j, &err));
    assert_string_equal(wf_strbuf_cstr(&err),
                        "json_format key \"a.b\": Not supported field in StreamInfo: NOPE "
                        "(column 3)");
    json_decref(j);
    wf_strbuf_reset(&err);
    j = json_loads("[\"%START_TIME%\"]", 0, NULL);
    assert_null(wp_alf_compile_json(j, &err));
    assert_string_equal(wf_strbuf_cstr(&err), "json_format must be a JSON object");
    json_decref(j);
    wf_strbuf_free(&err);
    assert_null(wp_alf_compile_text("%NOPE%", NULL)); /* err is optional */
}

static void test_literals(void **state)
{
    (void)state;
    wp_stream_info si;
    memset(&si, 0, sizeof si);
    si.response_code = 404;
    check_text("", &si, "");
    check_text("%%", &si, "%");
    check_text("100%% %RESPONSE_CODE%%%\n", &si, "100% 404%\n");
    /* the argument is the shortest text that lets the rest of the operator match */
    check_text("%REQ(A)B)%", &si, "-");
}

/* ---------------------------------------------------------------- writer ------------ */

typedef struct {
    char dir[64];
    char path[128];
} tmpdir;

static void tmp_init(tmpdir *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/h3alogXXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/access.log", t->dir);
}

static void tmp_done(tmpdir *t)
{
    char p[160];
    unlink(t->path);
    snprintf(p, sizeof p, "%s.1", t->path);
    unlink(p);
    rmdir(t->dir);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    if (len)
        *len = (size_t)n;
    return buf;
}

static int done_calls;
static void on_done(wp_alog_writer *w)
{
    (void)w;
    done_calls++;
}

static void close_and_run(wp_alog_writer *w, uv_loop_t *loop)
{
    done_calls = 0;
    wp_alog_writer_close(w, on_done);
    assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(done_calls, 1);
}

static void test_files_open(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    wp_alog_files *files = wp_alog_files_new();
    assert_non_null(files);
    wf_strbuf err = WF_STRBUF_INIT;
    int a = wp_alog_files_open(files, t.path, &err);
    int o = wp_alog_files_open(files, "/dev/stdout", &err);
    int e = wp_alog_files_open(files, "/dev/stderr", &err);
    assert_true(a >= 0);
    assert_int_equal(wp_alog_files_open(files, t.path, &err), a);
    assert_int_equal(wp_alog_files_open(files, "/dev/stdout", &err), o);
    assert_int_equal(wp_alog_files_fd(files, o), 1);
    assert_int_equal(wp_alog_files_fd(files, e), 2);
    assert_int_equal(wp_alog_files_count(files), 3);
    assert_int_equal(wp_alog_files_fd(files, 3), -1);
    struct stat st;
    assert_int_equal(stat(t.path, &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(st.st_mode & 0777, 0644 & ~mask);
    int fd = wp_alog_files_fd(files, a);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(fd, F_GETFL) & O_APPEND);
    assert_string_equal(wf_strbuf_cstr(&err), "");

    assert_int_equal(wp_alog_files_open(files, "/nonexistent-h3-dir/x.log", &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "cannot open access log file "
                                              "'/nonexistent-h3-dir/x.log': No such file or "
                                              "directory");
    assert_int_equal(wp_alog_files_count(files), 3);
    wp_alog_files_free(files);
    assert_true(fcntl(1, F_GETFD) != -1); /* stdout and stderr stay open */
    assert_true(fcntl(2, F_GETFD) != -1);
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    wf_strbuf_free(&err);
    tmp_done(&t);
}

static void test_writer_lines_and_close(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    wp_alog_writer w;
    assert_int_equal(wp_alog_writer_init(&w, &loop, files, 0, 0), 0);
    wp_alog_write(&w, idx, "one\n", 4);
    wp_alog_write(&w, idx, "two\n", 4);
    size_t len;
    char *got = slurp(t.path, &len);
    assert_int_equal(len, 0); /* buffered: no syscall on the write path */
    free(got);
    wp_alog_write(&w, 7, "bad index\n", 10);
    assert_int_equal(w.dropped_lines, 1);
    close_and_run(&w, &loop); /* flush on close: nothing lost */
    got = slurp(t.path, NULL);
    assert_string_equal(got, "one\ntwo\n");
    free(got);
    assert_int_equal(w.bytes_written, 8);
    wp_alog_write(&w, idx, "late\n", 5); /* after close: dropped and counted */
    assert_int_equal(w.dropped_lines, 2);
    assert_int_equal(uv_loop_close(&loop), 0);
    wp_alog_files_free(files);
    tmp_done(&t);
}

static void stop_loop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

static void test_writer_timer_flush(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    wp_alog_writer w;
    assert_int_equal(wp_alog_writer_init(&w, &loop, files, 5, 0), 0);
    wp_alog_write(&w, idx, "tick\n", 5);
    uv_timer_t stopper;
    uv_timer_init(&loop, &stopper);
    uv_timer_start(&stopper, stop_loop, 200, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    char *got = slurp(t.path, NULL);
    assert_string_equal(got, "tick\n"); /* written by the flush timer, before close */
    free(got);
    uv_close((uv_handle_t *)&stopper, NULL);
    close_and_run(&w, &loop);
    assert_int_equal(uv_loop_close(&loop), 0);
    wp_alog_files_free(files);
    tmp_done(&t);
}

static size_t make_line(char *buf, size_t cap, const char *tag, int i)
{
    int pad = 40 + (i * 37) % 150; /* varying lengths */
    int n = snprintf(buf, cap, "%s %06d %.*s|\n", tag, i, pad,
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    return (size_t)n;
}

/* Checks that the file holds exactly `count` whole lines per tag, each intact and in order. */
static void verify_lines(const char *data, size_t len, const char **tags, size_t ntags, int count)
{
    int next[4] = {0, 0, 0, 0};
    char want[256];
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        assert_non_null(nl);
        size_t n = (size_t)(nl - p) + 1;
        size_t t = 0;
        while (t < ntags && strncmp(p, tags[t], strlen(tags[t])) != 0)
            t++;
        assert_true(t < ntags);
        size_t wl = make_line(want, sizeof want, tags[t], next[t]);
        if (wl != n || memcmp(want, p, n) != 0)
            fail_msg("bad line at %zu: %.*s", (size_t)(p - data), (int)n, p);
        next[t]++;
        p = nl + 1;
    }
    for (size_t t = 0; t < ntags; t++)
        assert_int_equal(next[t], count);
}

static void test_writer_volume_double_buffering(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    wp_alog_writer w;
    assert_int_equal(wp_alog_writer_init(&w, &loop, files, 0, 0), 0);
    char line[256];
    size_t total = 0;
    const int N = 20000;
    for (int i = 0; i < N; i++) {
        size_t n = make_line(line, sizeof line, "A", i);
        wp_alog_write(&w, idx, line, n);
        total += n;
        if (i % 700 == 0)
            uv_run(&loop, UV_RUN_NOWAIT); /* let some writes complete meanwhile */
    }
    assert_true(total > 10 * WP_ALOG_FLUSH_BYTES);
    close_and_run(&w, &loop);
    assert_int_equal(w.dropped_lines, 0);
    assert_int_equal(w.write_errors, 0);
    assert_int_equal(w.bytes_written, total);
    size_t len;
    char *got = slurp(t.path, &len);
    assert_int_equal(len, total);
    const char *tags[] = {"A"};
    verify_lines(got, len, tags, 1, N);
    free(got);
    assert_int_equal(uv_loop_close(&loop), 0);
    wp_alog_files_free(files);
    tmp_done(&t);
}

static void test_writer_drops_over_limit(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    wp_alog_writer w;
    assert_int_equal(wp_alog_writer_init(&w, &loop, files, 0, 100), 0);
    char line[64];
    for (int i = 0; i < 10; i++) {
        int n = snprintf(line, sizeof line, "line %024d\n", i); /* 30 bytes */
        assert_int_equal(n, 30);
        wp_alog_write(&w, idx, line, (size_t)n);
    }
    assert_int_equal(w.dropped_lines, 7);       /* 3 x 30 bytes fit under 100 */
    wp_alog_write(&w, idx, "two\nlines\n", 10); /* 90 + 10 = 100 still fits */
    wp_alog_write(&w, idx, "x\ny\n", 4);
    assert_int_equal(w.dropped_lines, 9); /* a dropped buffer counts each of its lines */
    close_and_run(&w, &loop);
    char *got = slurp(t.path, NULL);
    assert_string_equal(got, "line 000000000000000000000000\nline 000000000000000000000001\n"
                             "line 000000000000000000000002\ntwo\nlines\n");
    free(got);
    assert_int_equal(uv_loop_close(&loop), 0);
    wp_alog_files_free(files);
    tmp_done(&t);
}

static void test_writer_reopen(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    int fd = wp_alog_files_fd(files, idx);
    wp_alog_writer w;
    assert_int_equal(wp_alog_writer_init(&w, &loop, files, 0, 0), 0);
    wp_alog_write(&w, idx, "before\n", 7);
    wp_alog_writer_flush(&w);
    uv_run(&loop, UV_RUN_DEFAULT); /* returns once the write completed */
    char rotated[160];
    snprintf(rotated, sizeof rotated, "%s.1", t.path);
    assert_int_equal(rename(t.path, rotated), 0);
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wp_alog_files_reopen(files, &err), 0);
    assert_int_equal(wp_alog_files_fd(files, idx), fd); /* same descriptor number */
    wp_alog_write(&w, idx, "after\n", 6);
    close_and_run(&w, &loop);
    char *got = slurp(rotated, NULL);
    assert_string_equal(got, "before\n");
    free(got);
    got = slurp(t.path, NULL);
    assert_string_equal(got, "after\n");
    free(got);
    wf_strbuf_free(&err);
    assert_int_equal(uv_loop_close(&loop), 0);
    wp_alog_files_free(files);
    tmp_done(&t);
}

typedef struct {
    wp_alog_files *files;
    int idx;
    const char *tag;
    int count;
    uint64_t dropped;
} worker_arg;

static void *worker_main(void *p)
{
    worker_arg *a = p;
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return NULL;
    wp_alog_writer w;
    if (wp_alog_writer_init(&w, &loop, a->files, 1, 0) != 0)
        return NULL;
    char line[256];
    for (int i = 0; i < a->count; i++) {
        size_t n = make_line(line, sizeof line, a->tag, i);
        wp_alog_write(&w, a->idx, line, n);
        if (i % 500 == 0)
            uv_run(&loop, UV_RUN_NOWAIT);
    }
    wp_alog_writer_close(&w, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    a->dropped = w.dropped_lines;
    uv_loop_close(&loop);
    return p;
}

static void test_two_workers_one_file(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    worker_arg a[2] = {{files, idx, "W1", 8000, 0}, {files, idx, "W2", 8000, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &a[i]), 0);
    for (int i = 0; i < 2; i++) {
        void *r = NULL;
        assert_int_equal(pthread_join(th[i], &r), 0);
        assert_non_null(r);
        assert_int_equal(a[i].dropped, 0);
    }
    size_t len;
    char *got = slurp(t.path, &len);
    const char *tags[] = {"W1", "W2"};
    verify_lines(got, len, tags, 2, 8000); /* no line split or interleaved */
    free(got);
    wp_alog_files_free(files);
    tmp_done(&t);
}

/* An access log line end to end: render with Istio's format, write, read back. */
static void test_render_and_write(void **state)
{
    (void)state;
    tmpdir t;
    tmp_init(&t);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wp_alog_files *files = wp_alog_files_new();
    int idx = wp_alog_files_open(files, t.path, NULL);
    wp_alog_writer w;
    assert_int_equal(wp_alog_writer_init(&w, &loop, files, 0, 0), 0);
    wp_access_log_format *f = wp_alf_compile_text(WF_ISTIO_TEXT_FORMAT, NULL);
    assert_non_null(f);
    fixture fx;
    make_nc(&fx);
    wf_strbuf out = WF_STRBUF_INIT;
    wp_alf_render(f, &fx.si, &out);
    wp_alog_write(&w, idx, out.data, out.len);
    close_and_run(&w, &loop);
    char *got = slurp(t.path, NULL);
    assert_string_equal(got, out.data);
    free(got);
    wf_strbuf_free(&out);
    wp_alf_free(f);
    assert_int_equal(uv_loop_close(&loop), 0);
    wp_alog_files_free(files);
    tmp_done(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flag_names),
        cmocka_unit_test(test_flags_set_order),
        cmocka_unit_test(test_header_lookup),
        cmocka_unit_test(test_more_operators),
        cmocka_unit_test(test_grpc_status_of_grpc_requests_only),
        cmocka_unit_test(test_grpc_status_content_types),
        cmocka_unit_test(test_grpc_status_trailers_first),
        cmocka_unit_test(test_filter_state_args),
        cmocka_unit_test(test_compile_errors_at),
        cmocka_unit_test(test_text_every_operator),
        cmocka_unit_test(test_text_missing_values),
        cmocka_unit_test(test_text_tls_operators),
        cmocka_unit_test(test_envoy_default_format),
        cmocka_unit_test(test_istio_text_503_nc),
        cmocka_unit_test(test_start_time_formats),
        cmocka_unit_test(test_req_truncation_and_fallback),
        cmocka_unit_test(test_hostname),
        cmocka_unit_test(test_json_typed_every_operator),
        cmocka_unit_test(test_json_missing_values),
        cmocka_unit_test(test_json_mixed_and_constants),
        cmocka_unit_test(test_istio_json_format),
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_files_open),
        cmocka_unit_test(test_writer_lines_and_close),
        cmocka_unit_test(test_writer_timer_flush),
        cmocka_unit_test(test_writer_volume_double_buffering),
        cmocka_unit_test(test_writer_drops_over_limit),
        cmocka_unit_test(test_writer_reopen),
        cmocka_unit_test(test_two_workers_one_file),
        cmocka_unit_test(test_render_and_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
