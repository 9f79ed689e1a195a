/*
 * test_base64.c - standard base64 (src/core/base64.h): encoding with padding, Go's strict
 * StdEncoding decoding, and the padding-optional mode the proxy uses for peer metadata.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/base64.h"

static bool dec(const char *in, unsigned flags, const char *want)
{
    unsigned char out[64];
    size_t n = 0;
    if (!wf_base64_decode(in, strlen(in), flags, out, &n))
        return false;
    return n == strlen(want) && memcmp(out, want, n) == 0;
}

static void test_encode(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(wf_base64_encode((const unsigned char *)"foobar", 6, out, sizeof out), 8);
    assert_string_equal(out, "Zm9vYmFy");
    assert_int_equal(wf_base64_encode((const unsigned char *)"fo", 2, out, sizeof out), 4);
    assert_string_equal(out, "Zm8=");
    assert_int_equal(wf_base64_encode((const unsigned char *)"f", 1, out, 4), 0); /* no NUL room */
    assert_int_equal(wf_base64_encode((const unsigned char *)"", 0, out, sizeof out), 0);
    assert_string_equal(out, "");
}

static void test_decode_modes(void **state)
{
    (void)state;
    assert_true(dec("Zm8=", 0, "fo"));
    assert_true(dec("Zm9vYmFy", 0, "foobar"));
    assert_true(dec("", 0, ""));
    assert_false(dec("Zm8", 0, "fo")); /* StdEncoding requires padding */
    assert_true(dec("Zm8", WF_B64_PAD_OPTIONAL, "fo"));
    assert_true(dec("Zg", WF_B64_PAD_OPTIONAL, "f"));
    assert_false(dec("Z", WF_B64_PAD_OPTIONAL, "")); /* a dangling sextet */
    assert_false(dec("Zm9v!mFy", WF_B64_PAD_OPTIONAL, ""));
    assert_false(dec("Zm8=x", 0, "fo")); /* data after the padding */
    assert_true(dec("Zm9v\r\nYmFy", 0, "foobar"));
    assert_false(dec("Zm9v YmFy", 0, "foobar"));
    assert_true(dec("Zm9v YmFy", WF_B64_SKIP_BLANKS, "foobar"));
}

/* Where malformed input went wrong, as Go's CorruptInputError offsets name it (a Secret's
 * "illegal base64 data at input byte N"). */
static size_t bad_at(const char *in)
{
    unsigned char out[64];
    size_t n = 0, at = 999;
    assert_false(wf_base64_decode_at(in, strlen(in), 0, out, &n, &at));
    return at;
}

static void test_decode_error_offset(void **state)
{
    (void)state;
    assert_int_equal(bad_at("%%%x"), 0); /* the first bad byte */
    assert_int_equal(bad_at("Zm9v!mFy"), 4);
    assert_int_equal(bad_at("Zm9vYmF"), 4);    /* the incomplete last quantum */
    assert_int_equal(bad_at("Zm9v\r\nYm"), 6); /* skipped bytes count as input */
    assert_int_equal(bad_at("Zm8=x"), 3);      /* the padding that is wrong */
    unsigned char out[8];
    size_t n = 0, at = 7;
    assert_true(wf_base64_decode_at("Zm8=", 4, 0, out, &n, &at));
    assert_int_equal(n, 2);
    assert_int_equal(at, 7); /* untouched on success */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_encode),
                                       cmocka_unit_test(test_decode_modes),
                                       cmocka_unit_test(test_decode_error_offset)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
