/*
 * test_http_client.c - src/cli/http_client.c against a tiny in-process server
 * (tests/unit/fake_http.h): Content-Length, chunked and close-delimited bodies, non-200
 * statuses, the request line sent, and the errors that name the address (refused, timeout,
 * closed without answer, malformed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/http_client.h"
#include "fake_http.h"

static int get(fake_http *f, const char *path, long timeout_ms, wf_http_resp *r, wf_strbuf *err)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
    return wf_http_request("GET", addr, path, timeout_ms, r, err);
}

static void test_content_length(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f,
                                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     "Content-Length: 7\r\n\r\n[1,2,3]",
                                     1),
                     0);
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(get(&f, "/debug/syncz?x=1", 2000, &r, &err), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 7);
    assert_string_equal(r.body, "[1,2,3]");
    assert_string_equal(r.content_type, "application/json");
    fake_http_stop(&f);
    assert_string_equal(f.last_request, "GET /debug/syncz?x=1 HTTP/1.1");
    wf_http_resp_free(&r);
    wf_strbuf_free(&err);
}

static void test_chunked_and_status(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f,
                                     "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                                     1),
                     0);
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(get(&f, "/x", 2000, &r, &err), 0);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.body, "hello world");
    assert_null(r.content_type);
    fake_http_stop(&f);
    wf_http_resp_free(&r);
    wf_strbuf_free(&err);
}

static void test_close_delimited_and_post(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f, "HTTP/1.0 200 OK\n\nactive loggers:\n", 1), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_http_request("POST", addr, "/logging?http=debug", 2000, &r, &err), 0);
    assert_string_equal(r.body, "active loggers:\n");
    fake_http_stop(&f);
    assert_string_equal(f.last_request, "POST /logging?http=debug HTTP/1.1");
    wf_http_resp_free(&r);
    wf_strbuf_free(&err);
}

static void test_refused(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f, "", 0), 0);
    int port = f.port;
    fake_http_stop(&f); /* nobody listens there any more */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_http_request("GET", addr, "/", 1000, &r, &err), -1);
    char want[128];
    snprintf(want, sizeof want, "cannot connect to %s: Connection refused", addr);
    assert_string_equal(wf_strbuf_cstr(&err), want);
    wf_strbuf_free(&err);
}

static void test_timeout(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f, NULL, 1), 0);
    f.stall_ms = 600;
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(get(&f, "/", 200, &r, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "did not answer within 200 ms"));
    fake_http_stop(&f);
    wf_strbuf_free(&err);
}

static void test_no_answer_and_malformed(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f, NULL, 1), 0);
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(get(&f, "/", 2000, &r, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "closed the connection without answering"));
    fake_http_stop(&f);
    wf_strbuf_reset(&err);

    assert_int_equal(fake_http_start(&f, "garbage\r\n\r\n", 1), 0);
    assert_int_equal(get(&f, "/", 2000, &r, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "malformed response from 127.0.0.1:"));
    fake_http_stop(&f);
    wf_strbuf_free(&err);
}

static void test_bad_address(void **state)
{
    (void)state;
    wf_http_resp r;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_http_request("GET", "nocolon", "/", 100, &r, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "cannot connect to nocolon"));
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_chunked_and_status),
        cmocka_unit_test(test_close_delimited_and_post),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_no_answer_and_malformed),
        cmocka_unit_test(test_bad_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
