/*
 * test_headers.c - header mutations (src/proxy/http/headers.h): Envoy's level precedence and
 * append actions (the adds as header-list entries), and the decimal writer used on the request
 * path.
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

static bool field_is(const h1_header *h, const char *name, const char *value)
{
    return h->name.len == strlen(name) && memcmp(h->name.p, name, h->name.len) == 0 &&
           h->value.len == strlen(value) && memcmp(h->value.p, value, h->value.len) == 0;
}

static void test_least_specific_overwrite_wins(void **state)
{
    (void)state;
    wp_header_add route[] = {add("x-level", "route", WP_OVERWRITE_IF_EXISTS_OR_ADD)};
    wp_header_add vh[] = {add("x-level", "vhost", WP_OVERWRITE_IF_EXISTS_OR_ADD)};
    wp_header_add rc[] = {add("x-level", "global", WP_OVERWRITE_IF_EXISTS_OR_ADD)};
    wp_header_ops o1 = {route, 1, NULL, 0}, o2 = {vh, 1, NULL, 0}, o3 = {rc, 1, NULL, 0};
    const wp_header_ops *ops[] = {&o1, &o2, &o3};
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    wp_hops_add(&l, ops, 3, NULL, 0);
    assert_int_equal(l.n, 1);
    assert_true(field_is(&l.e[0], "x-level", "global"));
    h1_str have = {"X-Level", 7};
    assert_true(wp_hops_drops(ops, 3, &have)); /* the original value is replaced */
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
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    WP_HDR_LIST_ADD_LIT(&l, "x-first", "0", 1); /* adds go after what the list holds */
    wp_hops_add(&l, ops, 1, have, 1);
    assert_int_equal(l.n, 4);
    assert_true(field_is(&l.e[0], "x-first", "0"));
    assert_true(field_is(&l.e[1], "x-a", "1"));
    assert_true(field_is(&l.e[2], "x-absent", "3"));
    assert_true(field_is(&l.e[3], "x-present", "4"));
    assert_ptr_equal(l.e[1].value.p, adds[0].value); /* the configuration's bytes */
    h1_str gone = {"X-GONE", 6}, kept = {"x-a", 3};
    assert_true(wp_hops_drops(ops, 1, &gone));
    assert_false(wp_hops_drops(ops, 1, &kept)); /* appending keeps the original */
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

/* Adds beyond a list's capacity mark it overflowed (the codec then encodes nothing). */
static void test_adds_past_capacity(void **state)
{
    (void)state;
    wp_header_add adds[] = {add("x-a", "1", WP_APPEND_IF_EXISTS_OR_ADD),
                            add("x-b", "2", WP_APPEND_IF_EXISTS_OR_ADD)};
    wp_header_ops o = {adds, 2, NULL, 0};
    const wp_header_ops *ops[] = {&o};
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    while (l.n < WP_HDR_LIST_MAX - 1)
        WP_HDR_LIST_ADD_LIT(&l, "f", "v", 1);
    wp_hops_add(&l, ops, 1, NULL, 0);
    assert_int_equal(l.n, WP_HDR_LIST_MAX);
    assert_true(field_is(&l.e[WP_HDR_LIST_MAX - 1], "x-a", "1"));
    assert_true(l.overflow);
}

static void test_u64_str(void **state)
{
    (void)state;
    char out[WP_U64_STR_MAX];
    assert_int_equal(wp_u64_str(out, 0), 1);
    assert_string_equal(out, "0");
    assert_int_equal(wp_u64_str(out, UINT64_MAX), 20);
    assert_string_equal(out, "18446744073709551615");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_least_specific_overwrite_wins),
        cmocka_unit_test(test_append_actions),
        cmocka_unit_test(test_view_matches_emit),
        cmocka_unit_test(test_adds_past_capacity),
        cmocka_unit_test(test_u64_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
