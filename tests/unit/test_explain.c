/*
 * test_explain.c - the explanation of one failed request below the CLI (explain/explain.h):
 * wf_explain_failed's summary is the first line `weftctl log explain` prints under the same
 * request (checked against the CLI's own reading of the request as an access log line), its
 * meaning/causes/next are the most specific known value's (a TLS signature before the flag),
 * its text is everything log explain prints under it; the shared "failed" rule; the JSON
 * variant's keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/log_explain.h"
#include "explain/explain.h"

#define TLS_SAN                                                                                    \
    "TLS_error:|268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:"                \
    "verify_cert_failed:_SAN_matcher:TLS_error_end"

/* What `weftctl log explain` prints under the request in as a JSON access log line (Istio's
 * keys), without its header lines: the items, each line unindented by 3; without weftctl's
 * own hook (the "authorization:" lines of an RBAC denial, explain.h). */
static char *cli_text(const wf_explain_input *in)
{
    json_t *o = json_pack("{s:i}", "response_code", in->response_code);
    const char *keys[][2] = {
        {"response_flags", in->response_flags},
        {"response_code_details", in->response_code_details},
        {"upstream_transport_failure_reason", in->upstream_transport_failure_reason},
        {"route_name", in->route_name},
        {"upstream_cluster", in->upstream_cluster},
        {"grpc_status", in->grpc_status},
        {"method", in->method},
        {"upstream_host", in->upstream_host}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i][1])
            json_object_set_new(o, keys[i][0], json_string(keys[i][1]));
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    wf_lx_record r;
    assert_int_equal(wf_lx_parse_line(NULL, line, &r), 0);
    free(line);
    assert_true(wf_lx_failed(&r));
    wf_explain_items its = {0};
    assert_int_equal(wf_explain_record(&r, NULL, NULL, NULL, &its), 0);
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < its.n; i++)
        wf_explain_item_print(&its.v[i], 0, &b);
    wf_explain_items_free(&its);
    wf_lx_record_free(&r);
    if (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    return wf_strbuf_take(&b);
}

/* Explains in, checks summary and text against the CLI's reading, returns the out. */
static void explain(const wf_explain_input *in, wf_explain_out *out)
{
    assert_int_equal(wf_explain_failed(in, out), 0);
    char *cli = cli_text(in);
    assert_non_null(cli);
    assert_string_equal(out->text, cli);
    assert_int_equal(strlen(out->summary), strcspn(cli, "\n"));
    assert_memory_equal(out->summary, cli, strlen(out->summary));
    free(cli);
    assert_null(strchr(out->summary, '\n'));
}

static void test_nc_cluster_not_found(void **state)
{
    (void)state;
    wf_explain_input in = {.response_code = 503,
                           .response_flags = "NC",
                           .response_code_details = "cluster_not_found",
                           .route_name = "catalog.istioinaction.svc.cluster.local:80",
                           .upstream_cluster = "outbound|80|version-v1|catalog.istioinaction"
                                               ".svc.cluster.local"};
    wf_explain_out out;
    explain(&in, &out);
    assert_string_equal(out.summary, "NC (NoClusterFound): The route names a cluster that does not "
                                     "exist in this proxy.");
    assert_string_equal(out.meaning, wf_lx_find_flag("NC")->meaning);
    assert_non_null(strstr(out.causes, "IST0101"));
    assert_non_null(strstr(out.next, "weftctl analyze"));
    assert_non_null(strstr(out.text, "cluster_not_found: The route's cluster does not exist"));
    wf_explain_out_free(&out);
}

static void test_ut(void **state)
{
    (void)state;
    wf_explain_input in = {.response_code = 504,
                           .response_flags = "UT",
                           .response_code_details = "response_timeout",
                           .upstream_host = "10.10.0.7:3000"};
    wf_explain_out out;
    explain(&in, &out);
    assert_string_equal(out.summary,
                        "UT (UpstreamRequestTimeout): The route timeout (or the last try's "
                        "perTryTimeout) fired before the upstream answered, or before it finished "
                        "a response it had started (then the status is the upstream's and the "
                        "connection is reset).");
    assert_string_equal(out.next, wf_lx_find_flag("UT")->next);
    wf_explain_out_free(&out);
}

static void test_uf_with_tls_reason(void **state)
{
    (void)state;
    wf_explain_input in = {.response_code = 503,
                           .response_flags = "UF,URX",
                           .response_code_details = "upstream_reset_before_response_started{"
                                                    "remote_connection_failure|" TLS_SAN "}",
                           .upstream_transport_failure_reason = TLS_SAN,
                           .upstream_host = "10.10.0.9:8080"};
    wf_explain_out out;
    explain(&in, &out);
    assert_true(strncmp(out.summary, "UF (UpstreamConnectionFailure): ", 32) == 0);
    /* the TLS signature is the most specific: its meaning, causes and next */
    const wf_lx_entry *tls = wf_lx_find_tls(TLS_SAN);
    assert_non_null(tls);
    assert_string_equal(tls->key, "CERTIFICATE_VERIFY_FAILED*SAN_matcher");
    assert_string_equal(out.meaning, tls->meaning);
    assert_string_equal(out.causes, tls->causes);
    assert_string_equal(out.next, tls->next);
    assert_non_null(strstr(out.text, "\nURX (UpstreamRetryLimitExceeded): "));
    assert_non_null(strstr(out.text, "\nreset reason remote_connection_failure: "));
    assert_non_null(strstr(out.text, "\ntransport failure reason: " TLS_SAN "\n"));
    wf_explain_out_free(&out);
}

static void test_rbac_none(void **state)
{
    (void)state;
    wf_explain_input in = {.response_code = 403,
                           .response_flags = "-",
                           .response_code_details = "rbac_access_denied_matched_policy[none]"};
    assert_true(wf_explain_input_failed(&in));
    wf_explain_out out;
    explain(&in, &out);
    assert_true(strncmp(out.summary,
                        "rbac_access_denied_matched_policy[none]: An AuthorizationPolicy denied "
                        "the request",
                        80) == 0);
    assert_non_null(strstr(out.causes, "ALLOW policies exist and none allows"));
    wf_explain_out_free(&out);
    /* a gRPC denial logs 200 and no flag: still a failure, still explained */
    in.response_code = 200;
    assert_true(wf_explain_input_failed(&in));
}

static void test_urx_alone(void **state)
{
    (void)state;
    wf_explain_input in = {.response_code = 503, .response_flags = "URX"};
    wf_explain_out out;
    explain(&in, &out);
    assert_string_equal(out.summary, "URX (UpstreamRetryLimitExceeded): The request was retried "
                                     "and the retries were used up; the last attempt's result was "
                                     "returned.");
    assert_string_equal(out.causes, wf_lx_find_flag("URX")->causes);
    wf_explain_out_free(&out);
}

static void test_nothing_flagged_and_unknown(void **state)
{
    (void)state;
    wf_explain_input in = {
        .response_code = 500, .response_flags = "", .response_code_details = "-"};
    wf_explain_out out;
    assert_int_equal(wf_explain_failed(&in, &out), 0);
    assert_string_equal(out.summary, WF_EXPLAIN_NOTHING_FLAGGED);
    assert_string_equal(out.text, WF_EXPLAIN_NOTHING_FLAGGED);
    assert_string_equal(out.causes, "");
    assert_string_equal(out.next, "");
    wf_explain_out_free(&out);
    /* unknown values are said to be unknown, never guessed */
    wf_explain_input unk = {.response_code = 503, .response_flags = "ZZ"};
    explain(&unk, &out);
    assert_string_equal(out.summary, "ZZ: unknown response flag (weft's table does not describe "
                                     "it; see docs/log-explain.md)");
    assert_string_equal(out.meaning, out.summary);
    assert_string_equal(out.causes, "");
    wf_explain_out_free(&out);
}

static void test_failed_rule(void **state)
{
    (void)state;
    wf_explain_input in = {.response_code = 200};
    assert_false(wf_explain_input_failed(&in));
    in.response_flags = "-";
    assert_false(wf_explain_input_failed(&in));
    in.response_flags = "DC";
    assert_true(wf_explain_input_failed(&in));
    in.response_flags = NULL;
    in.grpc_status = "14";
    assert_true(wf_explain_input_failed(&in));
    in.grpc_status = "OK";
    assert_false(wf_explain_input_failed(&in));
    in.grpc_status = "0";
    assert_false(wf_explain_input_failed(&in));
    in.grpc_status = NULL;
    in.response_code = 0;
    assert_true(wf_explain_input_failed(&in));
    in.response_code = 404;
    assert_true(wf_explain_input_failed(&in));
    in.response_code = 302;
    assert_false(wf_explain_input_failed(&in));
}

static void test_json(void **state)
{
    (void)state;
    wf_explain_input in = {
        .response_code = 503, .response_flags = "NC", .response_code_details = "cluster_not_found"};
    json_t *o = wf_explain_failed_json(&in);
    assert_non_null(o);
    assert_int_equal(json_object_size(o), 5);
    wf_explain_out out;
    assert_int_equal(wf_explain_failed(&in, &out), 0);
    assert_string_equal(json_string_value(json_object_get(o, "summary")), out.summary);
    assert_string_equal(json_string_value(json_object_get(o, "meaning")), out.meaning);
    assert_string_equal(json_string_value(json_object_get(o, "causes")), out.causes);
    assert_string_equal(json_string_value(json_object_get(o, "next")), out.next);
    assert_string_equal(json_string_value(json_object_get(o, "text")), out.text);
    wf_explain_out_free(&out);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nc_cluster_not_found),
        cmocka_unit_test(test_ut),
        cmocka_unit_test(test_uf_with_tls_reason),
        cmocka_unit_test(test_rbac_none),
        cmocka_unit_test(test_urx_alone),
        cmocka_unit_test(test_nothing_flagged_and_unknown),
        cmocka_unit_test(test_failed_rule),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
