/*
 * test_strbuf_stream.c - wf_strbuf_read_stream (core/strbuf.h): a stream read to its end,
 * appended after what the buffer held, larger than one read; an empty stream; a read error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/strbuf.h"

static void reads_to_the_end(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    for (int i = 0; i < 3000; i++) /* 30,000 bytes: several reads */
        fputs("0123456789", f);
    rewind(f);
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, "head:");
    assert_int_equal(wf_strbuf_read_stream(&b, f), 0);
    assert_int_equal(b.len, 5 + 30000);
    assert_memory_equal(b.data, "head:0123", 9);
    assert_memory_equal(b.data + b.len - 3, "789", 3);
    /* at its end already: nothing more, still fine */
    assert_int_equal(wf_strbuf_read_stream(&b, f), 0);
    assert_int_equal(b.len, 5 + 30000);
    fclose(f);
    wf_strbuf_free(&b);
}

static void read_error(void **state)
{
    (void)state;
    FILE *f = fopen("/", "r"); /* a folder: fopen works, fread fails with EISDIR */
    assert_non_null(f);
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(wf_strbuf_read_stream(&b, f), -1);
    fclose(f);
    wf_strbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_to_the_end),
        cmocka_unit_test(read_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
