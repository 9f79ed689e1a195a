/*
 * test_kube_stream.c - watch bodies: chunked decoding split anywhere, event lines, Status
 * errors (kube/stream.h, kube/event.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/event.h"
#include "kube/stream.h"

/* Two events in three chunks (the second event split across chunks), with a chunk extension
 * and a trailer, then bytes after the body that must not be consumed. */
static const char BODY[] =
    "2c;ext=1\r\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\"\r\n"
    "42\r\n:\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"5\"}}}\n{\"type\":\"BOOKMARK\",\r\n"
    "30\r\n\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\r\n\r\n"
    "0\r\nX-Trailer: 1\r\n\r\nNEXT";

static void decode_split(size_t step)
{
    wf_kube_chunked d = {0};
    wf_kube_lines l = {0};
    wf_strbuf out = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    size_t n = strlen(BODY), i = 0;
    while (i < n && !d.done) {
        size_t take = n - i < step ? n - i : step;
        wf_strbuf_reset(&out);
        long used = wf_kube_chunked_feed(&d, BODY + i, take, &out, &why);
        assert_true(used >= 0);
        i += (size_t)used;
        assert_int_equal(wf_kube_lines_push(&l, out.data ? out.data : "", out.len, &why), 0);
    }
    assert_true(d.done);
    assert_string_equal(BODY + i, "NEXT");
    const char *line;
    long len = wf_kube_lines_pop(&l, &line);
    assert_true(len > 0);
    wf_kube_event ev;
    assert_int_equal(wf_kube_event_parse(line, (size_t)len, &ev, &why), 0);
    assert_int_equal(ev.type, WF_KUBE_ADDED);
    assert_string_equal(ev.rv, "5");
    char key[64];
    assert_string_equal(wf_kube_obj_key(ev.object, key, sizeof key), "ns/a");
    wf_kube_event_clear(&ev);
    len = wf_kube_lines_pop(&l, &line); /* "\r\n" line ending and an empty line skipped */
    assert_true(len > 0);
    assert_int_equal(wf_kube_event_parse(line, (size_t)len, &ev, &why), 0);
    assert_int_equal(ev.type, WF_KUBE_BOOKMARK);
    assert_string_equal(ev.rv, "9");
    wf_kube_event_clear(&ev);
    assert_int_equal(wf_kube_lines_pop(&l, &line), -1);
    assert_int_equal(wf_kube_lines_pending(&l), 0);
    wf_kube_lines_free(&l);
    wf_strbuf_free(&out);
    wf_strbuf_free(&why);
}

static void chunked_any_split(void **state)
{
    for (size_t step = 1; step <= sizeof BODY; step++)
        decode_split(step);
}

static void chunked_errors(void **state)
{
    static const char *const bad[] = {
        "zz\r\nab\r\n", /* not hex */
        "2\r\nabXY",    /* data not followed by CRLF */
        "1 2\r\n",      /* junk after the size */
        "00000000000000000000000000000000000000000000000000000000000000000000001\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_kube_chunked d = {0};
        wf_strbuf out = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
        assert_int_equal(wf_kube_chunked_feed(&d, bad[i], strlen(bad[i]), &out, &why), -1);
        assert_non_null(strstr(wf_strbuf_cstr(&why), "chunked body: "));
        wf_strbuf_free(&out);
        wf_strbuf_free(&why);
    }
}

static void event_lines(void **state)
{
    wf_strbuf why = WF_STRBUF_INIT;
    wf_kube_event ev;
    const char *err = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                      "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
                      "version: 5 (9)\",\"reason\":\"Expired\",\"code\":410}}";
    assert_int_equal(wf_kube_event_parse(err, strlen(err), &ev, &why), 0);
    assert_int_equal(ev.type, WF_KUBE_ERROR);
    assert_true(wf_kube_status_expired(&ev.err));
    wf_kube_status_format(&ev.err, &why);
    assert_string_equal(wf_strbuf_cstr(&why), "410 Expired: too old resource version: 5 (9)");
    wf_kube_event_clear(&ev);

    const char *del = "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"n1\","
                      "\"resourceVersion\":\"12\"}}}";
    assert_int_equal(wf_kube_event_parse(del, strlen(del), &ev, &why), 0);
    assert_int_equal(ev.type, WF_KUBE_DELETED);
    char key[8];
    assert_string_equal(wf_kube_obj_key(ev.object, key, sizeof key), "n1");
    assert_null(wf_kube_obj_key(ev.object, key, 2)); /* too small */
    wf_kube_event_clear(&ev);

    static const char *const bad[][2] = {
        {"{\"type\":\"ADDED\"", "not a JSON object"},
        {"{\"type\":\"RENAMED\",\"object\":{}}", "unknown type \"RENAMED\""},
        {"{\"type\":\"ADDED\"}", "ADDED without an object"},
        {"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{}}}",
         "without metadata.resourceVersion"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_strbuf_reset(&why);
        assert_int_equal(wf_kube_event_parse(bad[i][0], strlen(bad[i][0]), &ev, &why), -1);
        assert_non_null(strstr(wf_strbuf_cstr(&why), bad[i][1]));
        assert_null(ev.object);
    }
    wf_strbuf_free(&why);
}

static void status_bodies(void **state)
{
    wf_kube_status st;
    wf_strbuf out = WF_STRBUF_INIT;
    const char *forbidden =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods is forbidden: User \\\"x\\\" cannot list resource \\\"pods\\\"\","
        "\"reason\":\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}";
    wf_kube_status_from_body(403, forbidden, strlen(forbidden), &st);
    wf_kube_status_format(&st, &out);
    assert_string_equal(
        wf_strbuf_cstr(&out),
        "403 Forbidden: pods is forbidden: User \"x\" cannot list resource \"pods\"");
    assert_false(wf_kube_status_expired(&st));
    wf_strbuf_reset(&out);
    const char *html = "<html>\nBad Gateway</html>";
    wf_kube_status_from_body(502, html, strlen(html), &st);
    wf_kube_status_format(&st, &out);
    assert_string_equal(wf_strbuf_cstr(&out), "HTTP 502 (not a Status: <html> Bad Gateway</html>)");
    wf_strbuf_free(&out);
}

static void long_line_refused(void **state)
{
    wf_kube_lines l = {0};
    wf_strbuf why = WF_STRBUF_INIT;
    size_t n = WF_KUBE_MAX_EVENT + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'x', n);
    assert_int_equal(wf_kube_lines_push(&l, big, n, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "watch event longer than"));
    free(big);
    wf_kube_lines_free(&l);
    wf_strbuf_free(&why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunked_any_split), cmocka_unit_test(chunked_errors),
        cmocka_unit_test(event_lines),       cmocka_unit_test(status_bodies),
        cmocka_unit_test(long_line_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
