/*
 * test_log_explain_proto.c - the HTTP/2, gRPC and TCP readings of `weftctl log explain`
 * (log_explain_proto.h) and where a port's protocol came from (model/protocol.h
 * wf_protocol_of_kube_port_src): gRPC status names in the three %GRPC_STATUS% forms, Envoy's
 * HTTP-to-gRPC mapping, grpc-timeout units, route timeouts from a dump's route configs, gRPC
 * and TCP line recognition, and the verdicts of B032 / B034.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/log_explain_proto.h"
#include "model/protocol.h"

static void test_grpc_codes(void **state)
{
    (void)state;
    assert_int_equal(wf_lx_grpc_code("4"), 4);
    assert_int_equal(wf_lx_grpc_code("DeadlineExceeded"), 4);
    assert_int_equal(wf_lx_grpc_code("DEADLINE_EXCEEDED"), 4);
    assert_int_equal(wf_lx_grpc_code("Canceled"), 1);
    assert_int_equal(wf_lx_grpc_code("CANCELLED"), 1);
    assert_int_equal(wf_lx_grpc_code("16"), 16);
    assert_int_equal(wf_lx_grpc_code("17"), -1);
    assert_int_equal(wf_lx_grpc_code("4x"), -1);
    assert_int_equal(wf_lx_grpc_code("Bogus"), -1);
    assert_string_equal(wf_lx_grpc_name(14), "UNAVAILABLE");
    assert_string_equal(wf_lx_grpc_name(17), "");
    for (int c = 0; c <= 16; c++)
        assert_true(strlen(wf_lx_grpc_meaning(c)) > 10);
    /* Envoy's httpToGrpcStatus */
    const int http[][2] = {{400, 13}, {401, 16}, {403, 7},  {404, 12}, {429, 14},
                           {502, 14}, {503, 14}, {504, 14}, {500, 2},  {418, 2}};
    for (size_t i = 0; i < sizeof http / sizeof http[0]; i++)
        assert_int_equal(wf_lx_grpc_from_http(http[i][0]), http[i][1]);
}

static void test_grpc_timeout_units(void **state)
{
    (void)state;
    assert_int_equal(wf_lx_grpc_timeout_ms("300m"), 300);
    assert_int_equal(wf_lx_grpc_timeout_ms("5S"), 5000);
    assert_int_equal(wf_lx_grpc_timeout_ms("2M"), 120000);
    assert_int_equal(wf_lx_grpc_timeout_ms("1H"), 3600000);
    assert_int_equal(wf_lx_grpc_timeout_ms("2500u"), 2);
    assert_int_equal(wf_lx_grpc_timeout_ms("7000000n"), 7);
    assert_int_equal(wf_lx_grpc_timeout_ms("123456789m"), -1); /* at most 8 digits */
    assert_int_equal(wf_lx_grpc_timeout_ms("5s"), -1);
    assert_int_equal(wf_lx_grpc_timeout_ms("m"), -1);
}

static void test_route_timeouts(void **state)
{
    (void)state;
    json_t *rcs = json_loads(
        "[{\"name\":\"80\",\"virtual_hosts\":[{\"routes\":["
        "{\"name\":\"a\",\"route\":{\"timeout\":\"1s\",\"max_grpc_timeout\":\"1s\"}},"
        "{\"name\":\"b\",\"route\":{\"timeout\":\"0s\",\"max_grpc_timeout\":\"0s\","
        "\"retry_policy\":{\"per_try_timeout\":\"0.250s\"}}},"
        "{\"name\":\"c\",\"route\":{}},"
        "{\"name\":\"d\",\"route\":{\"max_stream_duration\":{\"grpc_timeout_header_max\":"
        "\"2s\"}}},"
        "{\"name\":\"x\",\"redirect\":{}}]}]},"
        "{\"name\":\"81\",\"virtual_hosts\":[{\"routes\":["
        "{\"name\":\"a\",\"route\":{\"timeout\":\"1s\",\"max_grpc_timeout\":\"1s\"}},"
        "{\"name\":\"c\",\"route\":{\"timeout\":\"3s\"}}]}]}]",
        0, NULL);
    assert_non_null(rcs);
    wf_lx_routes rt = {0};
    assert_int_equal(wf_lx_routes_add(&rt, rcs), 0);
    const wf_lx_route_timeout *t = wf_lx_routes_find(&rt, "a");
    assert_non_null(t);
    assert_int_equal(t->timeout_ms, 1000);
    assert_int_equal(t->max_grpc_ms, 1000);
    t = wf_lx_routes_find(&rt, "b");
    assert_int_equal(t->timeout_ms, 0);
    assert_int_equal(t->max_grpc_ms, 0);
    assert_int_equal(t->per_try_ms, 250);
    assert_null(wf_lx_routes_find(&rt, "c")); /* same name, different timeouts */
    t = wf_lx_routes_find(&rt, "d");
    assert_int_equal(t->timeout_ms, 15000); /* Envoy's default */
    assert_int_equal(t->max_grpc_ms, 2000);
    assert_null(wf_lx_routes_find(&rt, "x")); /* not a route action */
    wf_lx_routes_free(&rt);
    json_decref(rcs);
}

static wf_lx_record rec(int code, const char *flags, const char *details)
{
    wf_lx_record r;
    memset(&r, 0, sizeof r);
    r.code = code;
    r.flags = flags ? (char *)flags : NULL;
    r.details = details ? (char *)details : NULL;
    return r;
}

static void read3(const wf_lx_record *r, const wf_lx_routes *rt, char **g, char **p, char **t)
{
    wf_strbuf b[3] = {WF_STRBUF_INIT, WF_STRBUF_INIT, WF_STRBUF_INIT};
    assert_int_equal(wf_lx_proto_read(r, rt, &b[0], &b[1], &b[2]), 0);
    *g = strdup(wf_strbuf_cstr(&b[0]));
    *p = strdup(wf_strbuf_cstr(&b[1]));
    *t = strdup(wf_strbuf_cstr(&b[2]));
    for (int i = 0; i < 3; i++)
        wf_strbuf_free(&b[i]);
}

static void test_grpc_detection(void **state)
{
    (void)state;
    wf_lx_record r = rec(200, "UH", "no_healthy_upstream");
    assert_false(wf_lx_is_grpc(&r, NULL));
    r.protocol = "HTTP/2";
    r.method = "POST";
    r.path = "/shop.Echo/Echo";
    const char *why;
    assert_true(wf_lx_is_grpc(&r, &why));
    assert_string_equal(why, "an HTTP/2 POST to a gRPC method path /package.Service/Method");
    r.path = "/api/items"; /* no package */
    assert_false(wf_lx_is_grpc(&r, NULL));
    r.content_type = "application/grpc-web+proto";
    assert_false(wf_lx_is_grpc(&r, NULL));
    r.content_type = "application/grpc+proto";
    assert_true(wf_lx_is_grpc(&r, &why));
    assert_string_equal(why, "content-type application/grpc");
    /* TCP lines */
    wf_lx_record t = rec(0, "UF,URX", NULL);
    t.cluster = "outbound|5432||db";
    assert_true(wf_lx_is_tcp(&t));
    t.cluster = NULL; /* a listener's own line */
    assert_false(wf_lx_is_tcp(&t));
}

static void test_b032_and_b034_verdicts(void **state)
{
    (void)state;
    char *g, *p, *t;
    wf_lx_record r = rec(200, "UPE", "upstream_reset_before_response_started{protocol_error}");
    r.protocol = "HTTP/2";
    r.method = "POST";
    r.path = "/shop.Echo/Echo";
    read3(&r, NULL, &g, &p, &t);
    assert_non_null(strstr(p, "the upstream may speak only HTTP/2 (gRPC): name the Service port "
                              "grpc or http2"));
    assert_non_null(strstr(g, "gRPC status 14 UNAVAILABLE"));
    assert_string_equal(t, "");
    free(g), free(p), free(t);

    /* UT with a route of timeout 1s: the route's timeout fired; with none, the client's */
    json_t *rcs = json_loads("[{\"virtual_hosts\":[{\"routes\":["
                             "{\"name\":\"r1\",\"route\":{\"timeout\":\"1s\","
                             "\"max_grpc_timeout\":\"1s\"}},"
                             "{\"name\":\"r0\",\"route\":{\"timeout\":\"0s\","
                             "\"max_grpc_timeout\":\"0s\"}}]}]}]",
                             0, NULL);
    wf_lx_routes rt = {0};
    assert_int_equal(wf_lx_routes_add(&rt, rcs), 0);
    r = rec(200, "UT", "response_timeout");
    r.protocol = "HTTP/2";
    r.method = "POST";
    r.path = "/shop.Echo/Echo";
    r.duration = "1002";
    r.route = "r1";
    read3(&r, &rt, &g, &p, &t);
    assert_non_null(strstr(g, "gRPC status 4 DEADLINE_EXCEEDED"));
    assert_non_null(strstr(g, "The route's timeout fired"));
    free(g), free(p), free(t);
    r.route = "r0";
    r.duration = "301";
    read3(&r, &rt, &g, &p, &t);
    assert_non_null(strstr(g, "The client's grpc-timeout fired (after 301 ms"));
    free(g), free(p), free(t);
    r.route = "r1";
    r.grpc_timeout = "300m"; /* shorter than the cap: the client's */
    read3(&r, &rt, &g, &p, &t);
    assert_non_null(strstr(g, "The client's grpc-timeout fired (grpc-timeout: 300m)"));
    free(g), free(p), free(t);
    r.grpc_timeout = "5S"; /* capped by max_grpc_timeout 1s: the route's */
    read3(&r, &rt, &g, &p, &t);
    assert_non_null(strstr(g, "The route's timeout fired (it caps the client's longer"));
    free(g), free(p), free(t);
    wf_lx_routes_free(&rt);
    json_decref(rcs);
}

static void test_protocol_source(void **state)
{
    (void)state;
    wf_protocol_source s;
    assert_int_equal(wf_protocol_of_kube_port_src(80, "http", "TCP", NULL, &s), WF_PROTO_HTTP);
    assert_int_equal(s, WF_PROTO_SRC_NAME);
    assert_int_equal(wf_protocol_of_kube_port_src(80, "http", "TCP", "grpc", &s), WF_PROTO_GRPC);
    assert_int_equal(s, WF_PROTO_SRC_APP_PROTOCOL);
    /* appProtocol is read like a name (ConvertProtocol): prefix before '-', grpc-web first */
    assert_int_equal(wf_protocol_of_kube_port_src(80, NULL, "TCP", "http2-x", &s), WF_PROTO_HTTP2);
    assert_int_equal(wf_protocol_of_kube_port_src(80, NULL, "TCP", "grpc-web", &s),
                     WF_PROTO_GRPC_WEB);
    assert_int_equal(wf_protocol_of_kube_port_src(80, NULL, "TCP", "kubernetes.io/h2c", &s),
                     WF_PROTO_HTTP2);
    assert_int_equal(s, WF_PROTO_SRC_APP_PROTOCOL);
    assert_int_equal(wf_protocol_of_kube_port_src(3306, NULL, "TCP", NULL, &s), WF_PROTO_TCP);
    assert_int_equal(s, WF_PROTO_SRC_WELL_KNOWN);
    assert_int_equal(wf_protocol_of_kube_port_src(8080, NULL, "TCP", NULL, &s),
                     WF_PROTO_UNSUPPORTED);
    assert_int_equal(s, WF_PROTO_SRC_NONE);
    assert_int_equal(wf_protocol_of_kube_port_src(9100, "metrics", "TCP", NULL, &s),
                     WF_PROTO_UNSUPPORTED);
    assert_int_equal(s, WF_PROTO_SRC_NONE);
    assert_int_equal(wf_protocol_of_kube_port_src(53, "dns", "UDP", NULL, &s), WF_PROTO_UDP);
    assert_int_equal(s, WF_PROTO_SRC_UDP);
    /* the plain function agrees */
    assert_int_equal(wf_protocol_of_kube_port(80, NULL, "TCP", "http2-x"), WF_PROTO_HTTP2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grpc_codes),
        cmocka_unit_test(test_grpc_timeout_units),
        cmocka_unit_test(test_route_timeouts),
        cmocka_unit_test(test_grpc_detection),
        cmocka_unit_test(test_b032_and_b034_verdicts),
        cmocka_unit_test(test_protocol_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
