/* alog_emit.c: AccessLogFilter response_flag_filter (Envoy's ResponseFlagFilter::evaluate) and
 * the flag names it accepts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proxy/access_log/alog_emit.h"

static void no_filter_passes_everything(void **state)
{
    (void)state;
    wp_access_log al = {.sink = -1};
    wp_stream_info si = {0};
    assert_true(wp_alog_filter_pass(&al, &si));
    wp_si_set_flag(&si, WP_RF_NR);
    assert_true(wp_alog_filter_pass(&al, &si));
}

static void empty_flags_pass_any_flag(void **state)
{
    (void)state;
    wp_access_log al = {.has_flag_filter = true};
    wp_stream_info si = {0};
    assert_false(wp_alog_filter_pass(&al, &si));
    wp_si_set_flag(&si, WP_RF_UF);
    assert_true(wp_alog_filter_pass(&al, &si));
}

static void listed_flags_only(void **state)
{
    (void)state;
    wp_access_log al = {.has_flag_filter = true, .flag_filter = 1u << WP_RF_NR};
    wp_stream_info si = {0};
    assert_false(wp_alog_filter_pass(&al, &si));
    wp_si_set_flag(&si, WP_RF_UF);
    assert_false(wp_alog_filter_pass(&al, &si));
    wp_si_set_flag(&si, WP_RF_NR); /* second of two flags */
    assert_true(wp_alog_filter_pass(&al, &si));
}

static void flag_names(void **state)
{
    (void)state;
    assert_int_equal(wp_alog_flag_by_short_name("NR"), WP_RF_NR);
    assert_int_equal(wp_alog_flag_by_short_name("UDO"), WP_RF_UDO);
    assert_int_equal(wp_alog_flag_by_short_name("LH"), WP_RF_LH);
    assert_int_equal(wp_alog_flag_by_short_name("nr"), -1);
    assert_int_equal(wp_alog_flag_by_short_name("NoRouteFound"), -1);
    assert_int_equal(wp_alog_flag_by_short_name(""), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_filter_passes_everything),
        cmocka_unit_test(empty_flags_pass_any_flag),
        cmocka_unit_test(listed_flags_only),
        cmocka_unit_test(flag_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
