/*
 * test_path_norm.c - Envoy's path normalization (src/http/path_norm.h). The tables carry
 * Envoy's expected input/output pairs from test/common/http/path_utility_test.cc
 * (canonicalPath, mergeSlashes, unescapeSlashes), then weft's own edge cases: empty path,
 * "*", queries, escapes Chromium decodes or keeps, buffer capacity, and the order of
 * ConnectionManagerUtility::maybeNormalizePath.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/path_norm.h"

typedef struct {
    const char *in, *want;
} pair;

/* NULL want = invalid (-EINVAL). */
static void expect_norm(const char *in, const char *want)
{
    char out[1024];
    size_t n = 0;
    int rc = wf_path_normalize(in, strlen(in), out, sizeof(out), &n);
    if (!want) {
        if (rc != -EINVAL)
            fail_msg("%s: want invalid, got rc %d", in, rc);
        return;
    }
    if (rc != 0 || n != strlen(want) || memcmp(out, want, n) != 0)
        fail_msg("%s: want \"%s\", got rc %d \"%.*s\"", in, want, rc, (int)n, out);
}

static void run_pairs(const pair *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_norm(t[i].in, t[i].want);
}

#define RUN(t) run_pairs(t, sizeof(t) / sizeof(t[0]))

/* PathUtilityTest.AlreadyNormalPaths, InvalidPaths, NormalizeValidPaths, NormalizeCasePath */
static void test_envoy_canonical(void **state)
{
    static const pair t[] = {
        {"/xyz", "/xyz"},
        {"/x/y/z", "/x/y/z"},
        {"/xyz/.%00../abc", NULL},
        {"/xyz/%00.%00./abc", NULL},
        {"/xyz/AAAAA%%0000/abc", NULL},
        {"/a/b/../c", "/a/c"},
        {"/a/b/./c", "/a/b/c"},
        {"a/b/../c", "/a/c"},
        {"/a/b/../../../../c", "/c"},
        {"/a/..\\c", "/c"},
        {"/%c0%af", "/%c0%af"},
        {"/%5c%25", "/%5c%25"},
        {"/a/b/%2E%2E/c", "/a/c"},
        {"/a/b/%2E./c", "/a/c"},
        {"/a/b/%2E/c", "/a/b/c"},
        {"..", "/"},
        {"/../a/b", "/a/b"},
        {"/./a/b", "/a/b"},
        {"/A/B/C", "/A/B/C"},
        {"/a/b/%2e%2e/c", "/a/c"},
        {"/a/%2F%2f/c", "/a/%2F%2f/c"},
    };
    RUN(t);
}

/* PathUtilityTest.NormalizeValidPaths, dot segments with parameters (current Envoy) */
static void test_envoy_dot_params(void **state)
{
    static const pair t[] = {
        {"/xyz/..;foo=bar/abc", "/abc"},
        {"/..;foo=bar/abc", "/abc"},
        {"/xyz/..;foo=bar", "/"},
        {"/xyz/.;foo=bar/abc", "/xyz/abc"},
        {"/.;foo=bar/abc", "/abc"},
        {"/xyz/.;foo=bar", "/xyz/"},
        {"/xyz/..;foo=bar/.;v1=2,v2=3/abc", "/abc"},
        {"/..;foo=bar/abc/.;mmm", "/abc/"},
        {"/.;aaa/..;foo=bar/abc/.;mmm", "/abc/"},
        {"/xyz/..;foo=bar/.;fff=zzz", "/"},
        {"/xyz/..;foo=bar/.;fff=zzz?blah=woops", "/?blah=woops"},
        {"/xyz/..;foo=bar/.;fff=zzz/remain;blah-bluh?query", "/remain;blah-bluh?query"},
        /* stripParametersFromDotSegments cases, then canonicalized */
        {"/a/..;foo/b/..;bar/c", "/c"},
        {"/a/..;param1;param2/b", "/b"},
        {"/xyz/..foo", "/xyz/..foo"},
        {"/xyz/...;foo", "/xyz/...;foo"},
        {"/xyz/remove/..;foo?param=/.;foo", "/xyz/?param=/.;foo"},
        {"/xyz?param=/..;foo", "/xyz?param=/..;foo"},
        {"/xyz/.foo", "/xyz/.foo"},
        {"/a/%2e;x/b", "/a/.;x/b"},  /* only literal dots carry parameters */
        {"/a\\..;x/b", "/a/..;x/b"}, /* only '/' separates segments for the strip */
        /* parameters are dropped before canonicalization only, so Envoy's canonicalPath is
         * not idempotent here: a second pass would remove these segments */
        {"/\\..;x", "//..;x"},
        {"/%2e%2e;x/y", "/..;x/y"},
        {"/xyz/..;x#f", "/xyz/..%23f"}, /* the strip stops at '#' */
    };
    RUN(t);
}

/* Chromium's table: what is decoded, kept, escaped; queries untouched. */
static void test_escapes(void **state)
{
    static const pair t[] = {
        {"/%41%62%7e%5F%2d%30", "/Ab~_-0"},
        {"/a%2eb", "/a.b"},
        {"/%3A%3b%40%21", "/%3A%3b%40%21"},
        {"/%zz/%4", "/%zz/%4"},
        {"/%", "/%"},
        {"/a\"b<c>d`e{f}g|h^i", "/a%22b%3Cc%3Ed%60e%7Bf%7Dg%7Ch%5Ei"},
        {"/a b\x01\x7f\xc3\xa9", "/a%20b%01%7F%C3%A9"},
        {"/a#b", "/a%23b"},
        {"/%%32e", "/%252e"},
        {"/%%30%30", "/%2500"},
        {"/?a=../b/./c%41#x", "/?a=../b/./c%41#x"},
        {"/a/../b?x=/../..", "/b?x=/../.."},
        {"?q", "/?q"},
        {"", "/"},
        {"*", "/*"},
        {"/a/b/..", "/a/"},
        {"/a/b/.", "/a/b/"},
        {"/a/b/%2e%2E", "/a/"},
        {"//a/../b", "//b"},
        {"/a//..//b", "/a//b"},
        {"\\\\a", "//a"},
        {"/.../a", "/.../a"},
        {"/a/.b/..c/c..", "/a/.b/..c/c.."},
    };
    /* NUL inside the string literal cuts it: test it with an explicit length */
    char out[16];
    size_t n;
    assert_int_equal(wf_path_normalize("/a/\0b", 5, out, sizeof(out), &n), -EINVAL);
    RUN(t);
}

static void test_capacity(void **state)
{
    char in[600], out[2048];
    size_t n;
    memset(in, 'a', sizeof(in));
    in[0] = '/';
    assert_int_equal(wf_path_normalize(in, 600, out, 600, &n), 0);
    assert_int_equal(n, 600);
    assert_int_equal(wf_path_normalize(in, 600, out, 599, &n), -ENOSPC);
    assert_int_equal(wf_path_normalize("/a b", 4, out, 6, &n), 0);
    assert_int_equal(wf_path_normalize("/a b", 4, out, 5, &n), -ENOSPC);
    assert_int_equal(wf_path_normalize("a", 1, out, 1, &n), -ENOSPC);
    assert_int_equal(wf_path_normalize("", 0, out, 0, &n), -ENOSPC);
    assert_int_equal(wf_path_normalize("/a?xy", 5, out, 4, &n), -ENOSPC);
    assert_int_equal(wf_path_normalize("/a?xy", 5, out, 5, &n), 0);
    /* the worst case, every byte escaped, fits in 3 * len + 1 */
    memset(in, '"', sizeof(in));
    assert_int_equal(wf_path_normalize(in, 600, out, 1801, &n), 0);
    assert_int_equal(n, 1801);
    assert_int_equal(wf_path_normalize(in, 600, out, 1800, &n), -ENOSPC);
    /* a long path whose ".." removes most of it */
    memset(in, 'b', sizeof(in));
    in[0] = '/';
    memcpy(in + 597, "/..", 3);
    assert_int_equal(wf_path_normalize(in, 600, out, sizeof(out), &n), 0);
    assert_int_equal(n, 1);
}

static void test_envoy_merge_slashes(void **state)
{
    static const pair t[] = {
        {"", ""},
        {"a//b/c", "a/b/c"},
        {"/a//b/c/", "/a/b/c/"},
        {"a//b/c/", "a/b/c/"},
        {"/a", "/a"},
        {"//a/b/c", "/a/b/c"},
        {"/a//b/c", "/a/b/c"},
        {"/a/b/c//", "/a/b/c/"},
        {"/a///b/c", "/a/b/c"},
        {"/a////b/c", "/a/b/c"},
        {"/a//b?a=///c", "/a/b?a=///c"},
        {"/a//b?", "/a/b?"},
        {"//a/?b", "/a/?b"},
        {"//", "//"},
        {"///?x", "//?x"},
        {"/", "/"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char buf[64];
        size_t len = strlen(t[i].in);
        memcpy(buf, t[i].in, len);
        size_t n = wf_path_merge_slashes(buf, len);
        if (n != strlen(t[i].want) || memcmp(buf, t[i].want, n) != 0)
            fail_msg("%s: want \"%s\", got \"%.*s\"", t[i].in, t[i].want, (int)n, buf);
    }
}

static void expect_unescape(const char *in, const char *want, bool found)
{
    char buf[64];
    size_t len = strlen(in);
    memcpy(buf, in, len);
    bool f = wf_path_unescape_slashes(buf, &len);
    if (f != found || len != strlen(want) || memcmp(buf, want, len) != 0)
        fail_msg("%s: want \"%s\" %d, got \"%.*s\" %d", in, want, found, (int)len, buf, f);
}

/* PathUtilityTest.UnescapeSlashes */
static void test_envoy_unescape_slashes(void **state)
{
    expect_unescape("", "", false);
    expect_unescape("%2f%2F", "//", true);
    expect_unescape("/a%2Fb%2fc/", "/a/b/c/", true);
    expect_unescape("%2b", "%2b", false);
    expect_unescape("/a/b/c", "/a/b/c", false);
    expect_unescape("%2", "%2", false);
    expect_unescape("%", "%", false);
    expect_unescape("/abc%2", "/abc%2", false);
    expect_unescape("foo%", "foo%", false);
    expect_unescape("/a%2F", "/a/", true);
    expect_unescape("%2fa/", "/a/", true);
    expect_unescape("%%2fa/", "%/a/", true);
    expect_unescape("%2%2fa/", "%2/a/", true);
    expect_unescape("%5c%5C", "\\\\", true);
    expect_unescape("/a%5Cb%5cc/", "/a\\b\\c/", true);
    expect_unescape("/a%5C", "/a\\", true);
    expect_unescape("%5ca/", "\\a/", true);
    expect_unescape("/x/%2E%2e/z%2f%2Fabc%5C../def", "/x/%2E%2e/z//abc\\../def", true);
    expect_unescape("%2fa%5Cb%2fc%5c", "/a\\b/c\\", true);
    expect_unescape("%2fa%5Cb%2fc%5c?%2fabcd%5C%%2f%", "/a\\b/c\\?%2fabcd%5C%%2f%", true);
    expect_unescape("/a?%2f", "/a?%2f", false);
}

/* maybeNormalizePath: want NULL = the action only. */
static void expect_sanitize(const wf_path_opts *o, const char *in, int act, const char *want)
{
    char out[WF_PATH_SANITIZE_CAP(64)];
    size_t len = strlen(in), n = 0;
    assert_true(len <= 64);
    assert_true(wf_path_needs_sanitize(o, in, len) || act == WF_PATH_CONTINUE);
    int rc = wf_path_sanitize(o, in, len, out, WF_PATH_SANITIZE_CAP(len), &n);
    if (rc != act || (want && (n != strlen(want) || memcmp(out, want, n) != 0)))
        fail_msg("%s: want %d \"%s\", got %d \"%.*s\"", in, act, want ? want : "", rc, (int)n, out);
}

static void test_sanitize_order(void **state)
{
    wf_path_opts o = {true, false, WF_ESC_SLASH_KEEP};
    expect_sanitize(&o, "/api/../admin", WF_PATH_CONTINUE, "/admin");
    expect_sanitize(&o, "/api/%2e%2e/admin?x=1", WF_PATH_CONTINUE, "/admin?x=1");
    expect_sanitize(&o, "/api//admin", WF_PATH_CONTINUE, "/api//admin");
    expect_sanitize(&o, "/a%2f..%2fb", WF_PATH_CONTINUE, "/a%2f..%2fb");
    expect_sanitize(&o, "/a/%00", WF_PATH_REJECT, "/a/%00");
    expect_sanitize(&o, "/a#frag", WF_PATH_REJECT, "/a#frag");
    o.merge_slashes = true;
    expect_sanitize(&o, "//api/.//admin/", WF_PATH_CONTINUE, "/api/admin/");
    /* escaped slashes are decoded before normalization: "%2F.." becomes a dot segment */
    o.escaped_slashes = WF_ESC_SLASH_FORWARD;
    expect_sanitize(&o, "/a/b%2F..%2Fc", WF_PATH_CONTINUE, "/a/c");
    expect_sanitize(&o, "/a%5cb", WF_PATH_CONTINUE, "/a/b");
    expect_sanitize(&o, "/a%2F%2Fb?q=%2F", WF_PATH_CONTINUE, "/a/b?q=%2F");
    o.escaped_slashes = WF_ESC_SLASH_REDIRECT;
    expect_sanitize(&o, "/a/b%2F..%2Fc", WF_PATH_REDIRECT, "/a/c");
    expect_sanitize(&o, "/a/b/../c", WF_PATH_CONTINUE, "/a/c");
    expect_sanitize(&o, "/a%2F%00", WF_PATH_REJECT, "/a/%00");
    o.escaped_slashes = WF_ESC_SLASH_REJECT;
    expect_sanitize(&o, "/a%2fb", WF_PATH_REJECT, "/a/b");
    expect_sanitize(&o, "/a%2bb", WF_PATH_CONTINUE, "/a%2bb");
    o.normalize = false;
    o.merge_slashes = false;
    o.escaped_slashes = WF_ESC_SLASH_DEFAULT;
    expect_sanitize(&o, "/api/../admin", WF_PATH_CONTINUE, "/api/../admin");
    expect_sanitize(&o, "/a%2Fb", WF_PATH_CONTINUE, "/a%2Fb");
    expect_sanitize(&o, "/a#b", WF_PATH_REJECT, "/a#b");
    o.escaped_slashes = WF_ESC_SLASH_FORWARD;
    expect_sanitize(&o, "/a%2F..", WF_PATH_CONTINUE, "/a/..");
    char out[8];
    size_t n;
    assert_int_equal(wf_path_sanitize(&o, "/ab", 3, out, sizeof(out), &n), -ENOSPC);
}

static void test_needs_sanitize(void **state)
{
    wf_path_opts o = {true, true, WF_ESC_SLASH_KEEP};
    static const char *const clean[] = {
        "/", "/index.html", "/v1.2/x.y?a=../b", "/a-b_c~d/e;f=g", "/a/b/", "/a/b?x=//"};
    for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++)
        if (wf_path_needs_sanitize(&o, clean[i], strlen(clean[i])))
            fail_msg("%s: needs no work", clean[i]);
    static const char *const dirty[] = {"/a/../b", "/.x", "/a%41", "/a\\b", "/a//b",
                                        "/a{b",    "a",   "",      "/a?#"};
    for (size_t i = 0; i < sizeof(dirty) / sizeof(dirty[0]); i++)
        if (!wf_path_needs_sanitize(&o, dirty[i], strlen(dirty[i])))
            fail_msg("%s: needs work", dirty[i]);
    o = (wf_path_opts){false, false, WF_ESC_SLASH_KEEP};
    assert_false(wf_path_needs_sanitize(&o, "/a/../%2f//b", 12));
    assert_true(wf_path_needs_sanitize(&o, "/a#", 3));
    o.escaped_slashes = WF_ESC_SLASH_FORWARD;
    assert_true(wf_path_needs_sanitize(&o, "/a%2f", 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envoy_canonical),
        cmocka_unit_test(test_envoy_dot_params),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_envoy_merge_slashes),
        cmocka_unit_test(test_envoy_unescape_slashes),
        cmocka_unit_test(test_sanitize_order),
        cmocka_unit_test(test_needs_sanitize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
