/*
 * test_uconn_h2.c - the translations of an upstream HTTP/2 stream (upstream/uconn_h2.h,
 * protocols.md §2.8): the router's HTTP/1.1 request head to HTTP/2 fields (Host ->
 * :authority, connection-specific fields dropped, te only as trailers, names lowercased) and
 * the response's frames to HTTP/1.1 bytes (framing, trailers as chunked trailers,
 * trailers-only answers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/upstream/uconn_h2.h"

#define S(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }

static h1_message head(const char *method, const char *target, h1_header *f, size_t n)
{
    h1_message m;
    memset(&m, 0, sizeof(m));
    m.method = (h1_str){method, strlen(method)};
    m.target = (h1_str){target, strlen(target)};
    m.headers = f;
    m.nheaders = n;
    m.version_minor = 1;
    return m;
}

static bool field_is(const wp_h2up_field *f, const char *n, const char *v)
{
    return f->nlen == strlen(n) && memcmp(f->name, n, f->nlen) == 0 && f->vlen == strlen(v) &&
           memcmp(f->value, v, f->vlen) == 0;
}

static void test_request_fields(void **state)
{
    (void)state;
    h1_header f[] = {
        {S("Host"), S("svc.ns:8080")},
        {S("Connection"), S("keep-alive")},
        {S("TE"), S("trailers")},
        {S("Content-Type"), S("application/grpc")},
        {S("Transfer-Encoding"), S("chunked")},
        {S("Keep-Alive"), S("5")},
        {S("Upgrade"), S("h2c")},
        {S("X-Custom"), S("Mixed Case")},
    };
    h1_message m = head("POST", "/pkg.Svc/Call?x=1", f, 8);
    wp_h2up_field out[16];
    wf_strbuf names = WF_STRBUF_INIT;
    long n = wp_h2up_request_fields(&m, false, out, 16, &names);
    assert_int_equal(n, 7);
    assert_true(field_is(&out[0], ":method", "POST"));
    assert_true(field_is(&out[1], ":scheme", "http"));
    assert_true(field_is(&out[2], ":authority", "svc.ns:8080"));
    assert_true(field_is(&out[3], ":path", "/pkg.Svc/Call?x=1"));
    assert_true(field_is(&out[4], "te", "trailers"));
    assert_true(field_is(&out[5], "content-type", "application/grpc"));
    assert_true(field_is(&out[6], "x-custom", "Mixed Case"));
    wf_strbuf_free(&names);
}

static void test_request_scheme_and_te(void **state)
{
    (void)state;
    h1_header f[] = {
        {S("host"), S("a")}, {S("te"), S("gzip")}, {S("x-forwarded-proto"), S("https")}};
    h1_message m = head("GET", "/", f, 3);
    wp_h2up_field out[8];
    wf_strbuf names = WF_STRBUF_INIT;
    long n = wp_h2up_request_fields(&m, false, out, 8, &names);
    assert_int_equal(n, 5); /* te: gzip dropped */
    assert_true(field_is(&out[1], ":scheme", "https"));
    assert_true(field_is(&out[4], "x-forwarded-proto", "https"));
    /* TLS upstream without x-forwarded-proto */
    m = head("GET", "/", f, 1);
    n = wp_h2up_request_fields(&m, true, out, 8, &names);
    assert_int_equal(n, 4);
    assert_true(field_is(&out[1], ":scheme", "https"));
    /* no Host, or no room: refused */
    m = head("GET", "/", f + 1, 1);
    assert_int_equal(wp_h2up_request_fields(&m, false, out, 8, &names), -1);
    m = head("GET", "/", f, 3);
    assert_int_equal(wp_h2up_request_fields(&m, false, out, 4, &names), -1);
    wf_strbuf_free(&names);
}

static void test_response_chunked_with_trailers(void **state)
{
    (void)state;
    h1_header f[] = {{S("content-type"), S("application/grpc")}};
    wf_strbuf o = WF_STRBUF_INIT;
    bool chunked;
    assert_int_equal(wp_h2up_response_head(200, f, 1, false, false, &o, &chunked), 0);
    assert_true(chunked);
    wp_h2up_chunk(&o, chunked, "hello", 5);
    h1_header t[] = {{S("grpc-status"), S("0")}, {S("grpc-message"), S("ok")}};
    wp_h2up_end(&o, t, 2);
    const char *want = "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\n"
                       "transfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                       "grpc-status: 0\r\ngrpc-message: ok\r\n\r\n";
    assert_int_equal(o.len, strlen(want));
    assert_memory_equal(o.data, want, o.len);
    wf_strbuf_free(&o);
}

static void test_response_framing(void **state)
{
    (void)state;
    wf_strbuf o = WF_STRBUF_INIT;
    bool chunked;
    /* content-length kept, body raw */
    h1_header f[] = {{S("content-length"), S("3")}};
    wp_h2up_response_head(404, f, 1, false, false, &o, &chunked);
    assert_false(chunked);
    wp_h2up_chunk(&o, chunked, "abc", 3);
    const char *w1 = "HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\n\r\nabc";
    assert_int_equal(o.len, strlen(w1));
    assert_memory_equal(o.data, w1, o.len);
    /* trailers-only (gRPC): the HEADERS ended the stream */
    o.len = 0;
    h1_header g[] = {{S("grpc-status"), S("14")}};
    wp_h2up_response_head(200, g, 1, true, false, &o, &chunked);
    const char *w2 = "HTTP/1.1 200 OK\r\ngrpc-status: 14\r\ncontent-length: 0\r\n\r\n";
    assert_false(chunked);
    assert_int_equal(o.len, strlen(w2));
    assert_memory_equal(o.data, w2, o.len);
    /* 204 and HEAD answers get no framing of their own */
    o.len = 0;
    wp_h2up_response_head(204, NULL, 0, false, false, &o, &chunked);
    assert_false(chunked);
    assert_string_equal(wf_strbuf_cstr(&o), "HTTP/1.1 204 No Content\r\n\r\n");
    o.len = 0;
    wp_h2up_response_head(200, NULL, 0, false, true, &o, &chunked);
    assert_false(chunked);
    assert_string_equal(wf_strbuf_cstr(&o), "HTTP/1.1 200 OK\r\n\r\n");
    wf_strbuf_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_fields),
        cmocka_unit_test(test_request_scheme_and_te),
        cmocka_unit_test(test_response_chunked_with_trailers),
        cmocka_unit_test(test_response_framing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
