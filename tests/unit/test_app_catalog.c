/*
 * test_app_catalog.c - the catalog API of weft-app --catalog (app/catalog.h) without sockets:
 * path matching, the seeded items, GET/POST /items with their errors and bounds, the blowup
 * fault state and its draws. The socket side runs in tests/integration/test_app_catalog.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/catalog.h"

/* Serves one request; returns the status and leaves the body in *out (caller frees). */
static int serve(struct wf_catalog *cat, const char *method, const char *path, const char *body,
                 wf_strbuf *out)
{
    wf_strbuf_reset(out);
    return wf_catalog_serve(cat, method, strlen(method), path, strlen(path), body ? body : "",
                            body ? strlen(body) : 0, false, out);
}

static bool has(const wf_strbuf *b, const char *needle)
{
    return b->data && strstr(b->data, needle) != NULL;
}

static void test_match(void **state)
{
    struct {
        const char *path;
        enum wf_catalog_path want;
    } cases[] = {
        {"/items", WF_CAT_ITEMS},  {"/items/", WF_CAT_ITEMS},  {"/items/1", WF_CAT_ITEM},
        {"/items/x", WF_CAT_ITEM}, {"/blowup", WF_CAT_BLOWUP}, {"/blowup/", WF_CAT_NONE},
        {"/itemsx", WF_CAT_NONE},  {"/", WF_CAT_NONE},         {"/healthz", WF_CAT_NONE},
        {"/upload", WF_CAT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(wf_catalog_match(cases[i].path, strlen(cases[i].path)), cases[i].want);
    assert_true(wf_catalog_fault_exempt("/blowup", 7));
    assert_true(wf_catalog_fault_exempt("/healthz", 8));
    assert_false(wf_catalog_fault_exempt("/items", 6));
    assert_false(wf_catalog_fault_exempt("/upload", 7));
}

static void test_seeded_items_and_lookup(void **state)
{
    struct wf_catalog *cat = wf_catalog_new(NULL, 1);
    wf_strbuf out = WF_STRBUF_INIT;
    assert_non_null(cat);
    assert_int_equal(serve(cat, "GET", "/items", NULL, &out), 200);
    assert_true(has(&out, "\"name\": \"Elinor Glasses\""));
    assert_true(has(&out, "\"name\": \"Red Dragon Watch\""));
    assert_false(has(&out, "imageUrl"));
    assert_int_equal(serve(cat, "GET", "/items/2", NULL, &out), 200);
    assert_true(has(&out, "\"id\": 2"));
    assert_true(has(&out, "\"color\": \"cyan\""));
    assert_true(has(&out, "\"price\": \"127.00\""));
    assert_int_equal(serve(cat, "HEAD", "/items/3", NULL, &out), 200);
    assert_int_equal(serve(cat, "GET", "/items/99", NULL, &out), 404);
    assert_string_equal(out.data, "{\"error\":\"item 99 not found\"}\n");
    assert_int_equal(serve(cat, "GET", "/items/abc", NULL, &out), 404);
    assert_int_equal(serve(cat, "GET", "/items/0", NULL, &out), 404);
    assert_int_equal(serve(cat, "GET", "/items/99999999999999999999", NULL, &out), 404);
    assert_int_equal(serve(cat, "DELETE", "/items/1", NULL, &out), 405);
    assert_int_equal(serve(cat, "PUT", "/items", NULL, &out), 405);
    wf_strbuf_free(&out);
    wf_catalog_free(cat);
}

static void test_v2_items_have_an_image(void **state)
{
    struct wf_catalog *cat = wf_catalog_new("v2", 1);
    wf_strbuf out = WF_STRBUF_INIT;
    assert_int_equal(serve(cat, "GET", "/items/1", NULL, &out), 200);
    assert_true(has(&out, "\"imageUrl\": \"http://lorempixel.com/640/480\""));
    wf_strbuf_free(&out);
    wf_catalog_free(cat);
}

static void test_post_items(void **state)
{
    struct wf_catalog *cat = wf_catalog_new("v1", 1);
    wf_strbuf out = WF_STRBUF_INIT;
    assert_int_equal(serve(cat, "POST", "/items",
                           "{\"name\":\"Blue Hat\",\"color\":\"blue\",\"price\":9.5}", &out),
                     201);
    /* the next free id, id first, the fields in the order sent */
    assert_string_equal(out.data, "{\n  \"id\": 5,\n  \"name\": \"Blue Hat\",\n  \"color\": "
                                  "\"blue\",\n  \"price\": 9.5\n}\n");
    assert_int_equal(serve(cat, "GET", "/items/5", NULL, &out), 200);
    assert_int_equal(serve(cat, "POST", "/items", "{\"id\":42,\"name\":\"x\"}", &out), 201);
    assert_int_equal(serve(cat, "POST", "/items", "{\"id\":42}", &out), 409);
    assert_int_equal(serve(cat, "POST", "/items", "{\"name\":\"y\"}", &out), 201);
    assert_true(has(&out, "\"id\": 43"));
    const char *bad[] = {"",
                         "[]",
                         "{\"id\":0}",
                         "{\"id\":\"7\"}",
                         "{\"id\":1.5}",
                         "{\"a\":{\"b\":1}}",
                         "{\"a\":[1]}",
                         "{\"a\":1,\"a\":2}",
                         "{\"a\":",
                         "{\"a\":\"\xff\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(serve(cat, "POST", "/items", bad[i], &out), 400);
        assert_true(has(&out, "\"error\""));
    }
    wf_strbuf_reset(&out);
    assert_int_equal(wf_catalog_serve(cat, "POST", 4, "/items", 6, "{}", 2, true, &out), 413);
    wf_strbuf_free(&out);
    wf_catalog_free(cat);
}

static void test_items_are_bounded(void **state)
{
    struct wf_catalog *cat = wf_catalog_new(NULL, 1);
    wf_strbuf out = WF_STRBUF_INIT;
    for (unsigned i = 4; i < WF_CATALOG_MAX_ITEMS; i++)
        assert_int_equal(serve(cat, "POST", "/items", "{\"name\":\"n\"}", &out), 201);
    assert_int_equal(serve(cat, "POST", "/items", "{\"name\":\"n\"}", &out), 507);
    assert_int_equal(serve(cat, "POST", "/items", "{\"id\":1000000000}", &out), 507);
    wf_strbuf_free(&out);
    wf_catalog_free(cat);
}

static void test_blowup_state(void **state)
{
    struct wf_catalog *cat = wf_catalog_new(NULL, 1);
    wf_strbuf out = WF_STRBUF_INIT;
    uint64_t ms = 7;
    assert_int_equal(serve(cat, "GET", "/blowup", NULL, &out), 200);
    assert_string_equal(out.data, "{\"active\":false}\n");
    assert_int_equal(wf_catalog_fault(cat, &ms), WF_CAT_PASS);
    assert_int_equal(ms, 0);
    /* the book's body */
    assert_int_equal(serve(cat, "POST", "/blowup",
                           "{\"active\":true,\"type\":\"latency\",\"latencyMs\":1000,"
                           "\"volatile\":true}",
                           &out),
                     200);
    assert_string_equal(out.data, "{\"active\":true,\"type\":\"latency\",\"latencyMs\":1000,"
                                  "\"percentage\":100,\"volatile\":true}\n");
    for (int i = 0; i < 50; i++) {
        assert_int_equal(wf_catalog_fault(cat, &ms), WF_CAT_DELAY);
        assert_int_equal(ms, 1000);
    }
    assert_int_equal(serve(cat, "POST", "/blowup", "{\"active\":true,\"type\":\"drop\"}", &out),
                     200);
    assert_int_equal(wf_catalog_fault(cat, &ms), WF_CAT_DROP);
    assert_int_equal(serve(cat, "POST", "/blowup", "{\"active\":false}", &out), 200);
    assert_string_equal(out.data, "{\"active\":false}\n");
    assert_int_equal(wf_catalog_fault(cat, &ms), WF_CAT_PASS);
    const char *bad[] = {"{}",
                         "{\"active\":1}",
                         "{\"active\":true}",
                         "{\"active\":true,\"type\":\"boom\"}",
                         "{\"active\":true,\"type\":500}",
                         "{\"active\":true,\"type\":\"latency\",\"latencyMs\":-1}",
                         "{\"active\":true,\"type\":\"latency\",\"latencyMs\":600001}",
                         "{\"active\":true,\"type\":\"500\",\"percentage\":101}",
                         "{\"active\":true,\"type\":\"500\",\"percentage\":\"50\"}",
                         "{\"active\":true,\"type\":\"500\",\"volatile\":\"yes\"}",
                         "not json"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(serve(cat, "POST", "/blowup", bad[i], &out), 400);
        /* a rejected body leaves the state alone */
        assert_int_equal(wf_catalog_fault(cat, &ms), WF_CAT_PASS);
    }
    assert_int_equal(serve(cat, "PUT", "/blowup", NULL, &out), 405);
    wf_strbuf_free(&out);
    wf_catalog_free(cat);
}

static void test_500_percentage_is_a_share(void **state)
{
    struct wf_catalog *cat = wf_catalog_new(NULL, 42);
    wf_strbuf out = WF_STRBUF_INIT;
    uint64_t ms;
    unsigned fail = 0;
    assert_int_equal(
        serve(cat, "POST", "/blowup", "{\"active\":true,\"type\":\"500\",\"percentage\":25}", &out),
        200);
    assert_string_equal(out.data, "{\"active\":true,\"type\":\"500\",\"percentage\":25,"
                                  "\"volatile\":false}\n");
    for (int i = 0; i < 10000; i++)
        fail += wf_catalog_fault(cat, &ms) == WF_CAT_FAIL;
    assert_in_range(fail, 2200, 2800);
    assert_int_equal(
        serve(cat, "POST", "/blowup", "{\"active\":true,\"type\":\"500\",\"percentage\":0}", &out),
        200);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(wf_catalog_fault(cat, &ms), WF_CAT_PASS);
    wf_strbuf_reset(&out);
    wf_catalog_fault_body(&out);
    assert_true(has(&out, "\"error\""));
    wf_strbuf_free(&out);
    wf_catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_seeded_items_and_lookup),
        cmocka_unit_test(test_v2_items_have_an_image),
        cmocka_unit_test(test_post_items),
        cmocka_unit_test(test_items_are_bounded),
        cmocka_unit_test(test_blowup_state),
        cmocka_unit_test(test_500_percentage_is_a_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
