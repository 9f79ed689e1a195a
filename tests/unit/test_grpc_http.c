/*
 * test_grpc_http.c - http/grpc_http.c: gRPC content types, Envoy's httpToGrpcStatus, the
 * grpc-timeout header both ways (Grpc::Common::getGrpcTimeout / toGrpcTimeout) and the
 * grpc-message percent-encoding of a local reply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/grpc_http.h"

#define CT(s) wf_grpc_content_type(s, strlen(s))

static void test_content_type(void **state)
{
    (void)state;
    assert_true(CT("application/grpc"));
    assert_true(CT("application/grpc+proto"));
    assert_true(CT("application/grpc+json"));
    assert_false(CT("application/grpc-web"));
    assert_false(CT("application/grpc-web-text"));
    assert_false(CT("application/grp"));
    assert_false(CT("application/json"));
    assert_false(CT(""));
    assert_false(wf_grpc_content_type(NULL, 0));
}

/* Envoy's test/common/grpc/utility_test.cc HttpToGrpcStatus table. */
static void test_http_to_status(void **state)
{
    (void)state;
    static const int t[][2] = {{400, 13}, {401, 16}, {403, 7},  {404, 12}, {429, 14},
                               {502, 14}, {503, 14}, {504, 14}, {500, 2},  {200, 2},
                               {418, 2},  {501, 2},  {307, 2},  {408, 2},  {505, 2}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        assert_int_equal(wf_grpc_http_to_status(t[i][0]), t[i][1]);
}

static void expect_timeout(const char *v, int ok, uint64_t want)
{
    uint64_t ms = 12345;
    bool r = wf_grpc_timeout_parse(v, strlen(v), &ms);
    if (r != (bool)ok)
        fail_msg("%s: want %s", v, ok ? "valid" : "invalid");
    assert_int_equal(ms, ok ? want : 12345);
}

/* Envoy's GrpcCommonTest.GetGrpcTimeout cases. */
static void test_timeout_parse(void **state)
{
    (void)state;
    expect_timeout("0n", 1, 0);
    expect_timeout("1n", 1, 1); /* rounded up */
    expect_timeout("1000000n", 1, 1);
    expect_timeout("1000001n", 1, 2);
    expect_timeout("0u", 1, 0);
    expect_timeout("1u", 1, 1);
    expect_timeout("1000u", 1, 1);
    expect_timeout("1001u", 1, 2);
    expect_timeout("300m", 1, 300);
    expect_timeout("5S", 1, 5000);
    expect_timeout("2M", 1, 120000);
    expect_timeout("1H", 1, 3600000);
    expect_timeout("99999999H", 1, 99999999ull * 3600000ull);
    expect_timeout("123456789H", 0, 0); /* more than 8 digits */
    expect_timeout("6666666666666666666666666666666S", 0, 0);
    expect_timeout("", 0, 0);
    expect_timeout("m", 0, 0);
    expect_timeout("1", 0, 0);
    expect_timeout("1x", 0, 0);
    expect_timeout("-1S", 0, 0);
    expect_timeout("1 S", 0, 0);
    expect_timeout("1.5S", 0, 0);
}

static void expect_format(uint64_t ms, const char *want)
{
    char out[WF_GRPC_TIMEOUT_STR_MAX];
    size_t n = wf_grpc_timeout_format(ms, out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

/* Envoy's GrpcCommonTest.ToGrpcTimeout cases. */
static void test_timeout_format(void **state)
{
    (void)state;
    expect_format(0, "0m");
    expect_format(1, "1m");
    expect_format(1000, "1000m");
    expect_format(99999999, "99999999m");
    expect_format(100000000, "100000S");
    expect_format(99999999999ull, "99999999S");
    expect_format(100000000000ull, "1666666M");
    expect_format(5999999999999ull, "99999999M");
    expect_format(6000000000000ull, "1666666H");
    expect_format(359999999999999ull, "99999999H");
    expect_format(UINT64_MAX, "99999999H"); /* clipped */
    /* what the proxy writes parses back to at least the same deadline */
    uint64_t ms;
    char out[WF_GRPC_TIMEOUT_STR_MAX];
    wf_grpc_timeout_format(1234, out);
    assert_true(wf_grpc_timeout_parse(out, strlen(out), &ms));
    assert_int_equal(ms, 1234);
}

static void expect_msg(const char *in, const char *want)
{
    char out[128];
    size_t n = wf_grpc_message_percent(in, strlen(in), out, sizeof out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void test_message_percent(void **state)
{
    (void)state;
    expect_msg("no healthy upstream", "no healthy upstream");
    expect_msg("RBAC: access denied", "RBAC: access denied");
    expect_msg("upstream connect error or disconnect/reset before headers. reset reason: "
               "connection termination",
               "upstream connect error or disconnect/reset before headers. reset reason: "
               "connection termination");
    expect_msg("100%", "100%25");
    expect_msg("a\nb\tc", "a%0Ab%09c");
    expect_msg("~}", "%7E}"); /* Envoy encodes from '~' up */
    expect_msg("\xc3\xa9\x7f", "%C3%A9%7F");
    expect_msg("", "");
    char small[4];
    assert_int_equal(wf_grpc_message_percent("%%", 2, small, sizeof small), (size_t)-1);
    assert_string_equal(small, "");
    assert_int_equal(wf_grpc_message_percent("abc", 3, small, sizeof small), 3);
}

static void test_status_parse(void **state)
{
    (void)state;
    int c = -1;
    assert_true(wf_grpc_status_parse("0", 1, &c));
    assert_int_equal(c, 0);
    assert_true(wf_grpc_status_parse("14", 2, &c));
    assert_int_equal(c, 14);
    c = 99;
    assert_false(wf_grpc_status_parse("", 0, &c));
    assert_false(wf_grpc_status_parse(NULL, 0, &c));
    assert_false(wf_grpc_status_parse("1a", 2, &c));
    assert_false(wf_grpc_status_parse("-1", 2, &c));
    assert_int_equal(c, 99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_type),    cmocka_unit_test(test_http_to_status),
        cmocka_unit_test(test_timeout_parse),   cmocka_unit_test(test_timeout_format),
        cmocka_unit_test(test_message_percent), cmocka_unit_test(test_status_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
