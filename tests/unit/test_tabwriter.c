/*
 * test_tabwriter.c - Go text/tabwriter corner cases (reference istioctl-troubleshooting.md
 * §1.2): trailing cells unpadded, column blocks end at lines with fewer cells, empty cells
 * padded (rows ending in spaces), rune widths, partial last line, several flushes. Expected
 * strings were produced with Go's tabwriter.NewWriter(w, 0, 8, pad, ' ', 0).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/tabwriter.h"

static void expect(size_t padding, const char *in, const char *want)
{
    wf_tw tw;
    wf_tw_init(&tw, padding);
    wf_tw_puts(&tw, in);
    wf_strbuf sb = WF_STRBUF_INIT;
    assert_int_equal(wf_tw_flush(&tw, NULL, &sb), 0);
    assert_string_equal(wf_strbuf_cstr(&sb), want);
    wf_strbuf_free(&sb);
    wf_tw_free(&tw);
}

static void test_basic_table(void **state)
{
    (void)state;
    expect(5, "NAME\tCDS\tVERSION\nproxy1\tSYNCED\t1.20\n",
           "NAME       CDS        VERSION\n"
           "proxy1     SYNCED     1.20\n");
}

static void test_header_width(void **state)
{
    (void)state;
    /* NAME over proxy1: 6 + 5 = 11 columns */
    expect(5, "NAME\tX\nproxy1\ty\n", "NAME       X\nproxy1     y\n");
}

static void test_trailing_cell_not_padded(void **state)
{
    (void)state;
    expect(1, "a\tlonglonglong\nbb\tc\n", "a  longlonglong\nbb c\n");
}

static void test_empty_cells_padded(void **state)
{
    (void)state;
    /* a row whose last tab-terminated cell is empty ends in spaces */
    expect(5, "NAME\tTYPE\tDR\t\nx\tEDS\t\t\n",
           "NAME     TYPE     DR     \n"
           "x        EDS      "
           "       \n");
}

static void test_blocks_break_on_short_lines(void **state)
{
    (void)state;
    /* the banner and blank line end the column block; each section aligns on its own */
    expect(1, "a\tb\nlonger\tc\n\n--- X ---\nz\ty\n", "a      b\nlonger c\n\n--- X ---\nz y\n");
}

static void test_nested_blocks(void **state)
{
    (void)state;
    /* column 0 spans both lines; column 1 only the first (the second has no cell 1 tab) */
    expect(1, "a\tbbbb\tc\naaa\td\n", "a   bbbb c\naaa d\n");
    expect(1, "x\ty\nxx\tyyy\tz\nx\ty\tz\n", "x  y\nxx yyy z\nx  y   z\n");
}

static void test_runes(void **state)
{
    (void)state;
    expect(1, "\xc3\xa9\xc3\xa9\tx\nab\ty\nabc\tz\n", "\xc3\xa9\xc3\xa9  x\nab  y\nabc z\n");
}

static void test_partial_last_line(void **state)
{
    (void)state;
    expect(1, "a\tb\ncc\td", "a  b\ncc d");
    expect(5, "", "");
    expect(5, "\n", "\n");
    expect(5, "no tabs\nat all\n", "no tabs\nat all\n");
}

static void test_flush_twice_and_file(void **state)
{
    (void)state;
    wf_tw tw;
    wf_tw_init(&tw, 2);
    wf_tw_printf(&tw, "%s\t%d\n", "abc", 1);
    wf_strbuf sb = WF_STRBUF_INIT;
    assert_int_equal(wf_tw_flush(&tw, NULL, &sb), 0);
    wf_tw_printf(&tw, "%s\t%d\n", "a", 22);
    assert_int_equal(wf_tw_flush(&tw, NULL, &sb), 0);
    assert_string_equal(wf_strbuf_cstr(&sb), "abc  1\na  22\n");
    wf_strbuf_free(&sb);

    FILE *f = tmpfile();
    assert_non_null(f);
    wf_tw_puts(&tw, "k\tv\nkey\tv\n");
    assert_int_equal(wf_tw_flush(&tw, f, NULL), 0);
    rewind(f);
    char buf[64] = {0};
    assert_int_equal(fread(buf, 1, sizeof buf - 1, f), strlen("k    v\nkey  v\n"));
    assert_string_equal(buf, "k    v\nkey  v\n");
    fclose(f);
    wf_tw_free(&tw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_table),
        cmocka_unit_test(test_header_width),
        cmocka_unit_test(test_trailing_cell_not_padded),
        cmocka_unit_test(test_empty_cells_padded),
        cmocka_unit_test(test_blocks_break_on_short_lines),
        cmocka_unit_test(test_nested_blocks),
        cmocka_unit_test(test_runes),
        cmocka_unit_test(test_partial_last_line),
        cmocka_unit_test(test_flush_twice_and_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
