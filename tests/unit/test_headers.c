/*
 * test_headers.c - header mutations (src/proxy/http/headers.h): Envoy's level precedence and
 * append actions, and the decimal writer used on the request path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/headers.h"

static wp_header_add add(const char *k, const char *v, wp_append_action a)
{
    return (wp_header_add){k, strlen(k), v, strlen(v), a};
}

static void test_least_specific_overwrite_wins(void **state)
{
    (void)state;
    wp_header_add route[] = {add("x-level", "route", WP_OVERWRITE_IF_EXISTS_OR_ADD)};
    wp_header_add vh[] = {add("x-level", "vhost", WP_OVERWRITE_IF_EXISTS_OR_ADD)};
    wp_header_add rc[] = {add("x-level", "global", WP_OVERWRITE_IF_EXISTS_OR_ADD)};
    wp_header_ops o1 = {route, 1, NULL, 0}, o2 = {vh, 1, NULL, 0}, o3 = {rc, 1, NULL, 0};
    const wp_header_ops *ops[] = {&o1, &o2, &o3};
    wf_strbuf b = {0};
    wp_hops_emit(&b, ops, 3, NULL, 0);
    assert_string_equal(wf_strbuf_cstr(&b), "x-level: global\r\n");
    h1_str have = {"X-Level", 7};
    assert_true(wp_hops_drops(ops, 3, &have)); /* the original value is replaced */
    wf_strbuf_free(&b);
}

static void test_append_actions(void **state)
{
    (void)state;
    h1_header have[] = {{{"X-Present", 9}, {"1", 1}}};
    wp_header_add adds[] = {
        add("x-a", "1", WP_APPEND_IF_EXISTS_OR_ADD), add("x-present", "2", WP_ADD_IF_ABSENT),
        add("x-absent", "3", WP_ADD_IF_ABSENT), add("x-present", "4", WP_OVERWRITE_IF_EXISTS),
        add("x-absent2", "5", WP_OVERWRITE_IF_EXISTS)};
    const char *rm[] = {"x-gone"};
    wp_header_ops o = {adds, 5, rm, 1};
    const wp_header_ops *ops[] = {&o};
    wf_strbuf b = {0};
    wp_hops_emit(&b, ops, 1, have, 1);
    assert_string_equal(wf_strbuf_cstr(&b), "x-a: 1\r\nx-absent: 3\r\nx-present: 4\r\n");
    h1_str gone = {"X-GONE", 6}, kept = {"x-a", 3};
    assert_true(wp_hops_drops(ops, 1, &gone));
    assert_false(wp_hops_drops(ops, 1, &kept)); /* appending keeps the original */
    wf_strbuf_free(&b);
}

/* The logged view: the same adds as the serialised head, dropped fields gone, the untouched
 * ones kept in order. */
static void test_view_matches_emit(void **state)
{
    (void)state;
    h1_header hdrs[8] = {{{"X-Present", 9}, {"1", 1}},
                         {{"X-Gone", 6}, {"g", 1}},
                         {{"Content-Type", 12}, {"text/plain", 10}}};
    wp_header_add adds[] = {add("x-a", "1", WP_APPEND_IF_EXISTS_OR_ADD),
                            add("x-present", "4", WP_OVERWRITE_IF_EXISTS),
                            add("x-absent2", "5", WP_OVERWRITE_IF_EXISTS)};
    const char *rm[] = {"x-gone"};
    wp_header_ops o = {adds, 3, rm, 1};
    const wp_header_ops *ops[] = {&o};
    size_t n = wp_hops_view(hdrs, 3, 8, ops, 1);
    assert_int_equal(n, 3);
    assert_memory_equal(hdrs[0].name.p, "Content-Type", 12);
    assert_memory_equal(hdrs[1].name.p, "x-a", 3);
    assert_memory_equal(hdrs[2].name.p, "x-present", 9);
    assert_memory_equal(hdrs[2].value.p, "4", 1);
    assert_int_equal(wp_hops_view(hdrs, 3, 3, ops, 1), 3); /* cap: nothing beyond it */
}

static void test_put_num(void **state)
{
    (void)state;
    wf_strbuf b = {0};
    wp_hdr_put_num(&b, "content-length", 14, 0);
    wp_hdr_put_num(&b, "x", 1, UINT64_MAX);
    assert_string_equal(wf_strbuf_cstr(&b), "content-length: 0\r\nx: 18446744073709551615\r\n");
    wf_strbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_least_specific_overwrite_wins),
        cmocka_unit_test(test_append_actions),
        cmocka_unit_test(test_view_matches_emit),
        cmocka_unit_test(test_put_num),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
