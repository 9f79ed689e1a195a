/*
 * test_grpc_frame.c - gRPC length-prefixed framing: split input, zero-length messages,
 * oversize and compressed rejection, grpc-message percent-encoding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xds/grpc_frame.h"

typedef struct got {
    int n;
    char msgs[8][64];
    size_t lens[8];
    int stop_after; /* 0 = never */
} got;

static int collect(void *ud, const uint8_t *msg, size_t len)
{
    got *g = ud;
    assert_non_null(msg);
    assert_true(g->n < 8 && len < 64);
    memcpy(g->msgs[g->n], msg, len);
    g->msgs[g->n][len] = '\0';
    g->lens[g->n] = len;
    g->n++;
    return g->stop_after && g->n >= g->stop_after;
}

/* Appends one framed message to buf at *off. */
static void frame(uint8_t *buf, size_t *off, const char *s)
{
    size_t len = strlen(s);
    assert_int_equal(wf_grpc_frame_header(buf + *off, len), 0);
    memcpy(buf + *off + WF_GRPC_HDR_LEN, s, len);
    *off += WF_GRPC_HDR_LEN + len;
}

static void test_header_layout(void **state)
{
    uint8_t h[5];
    assert_int_equal(wf_grpc_frame_header(h, 0x01020304), 0);
    const uint8_t want[5] = {0, 1, 2, 3, 4};
    assert_memory_equal(h, want, 5);
}

static void test_whole_and_split(void **state)
{
    uint8_t buf[256];
    size_t len = 0;
    frame(buf, &len, "{\"type_url\":\"a\"}");
    frame(buf, &len, "");
    frame(buf, &len, "{\"nonce\":\"7\"}");
    for (size_t step = 1; step <= len; step++) {
        wf_grpc_decoder d;
        got g = {0};
        wf_grpc_decoder_init(&d, 0);
        for (size_t off = 0; off < len; off += step) {
            size_t n = len - off < step ? len - off : step;
            assert_int_equal(wf_grpc_decoder_feed(&d, buf + off, n, collect, &g), 0);
        }
        assert_int_equal(g.n, 3);
        assert_string_equal(g.msgs[0], "{\"type_url\":\"a\"}");
        assert_int_equal(g.lens[1], 0);
        assert_string_equal(g.msgs[2], "{\"nonce\":\"7\"}");
        assert_true(wf_grpc_decoder_idle(&d));
        wf_grpc_decoder_free(&d);
    }
}

static void test_partial_not_idle(void **state)
{
    uint8_t buf[64];
    size_t len = 0;
    frame(buf, &len, "hello");
    wf_grpc_decoder d;
    got g = {0};
    wf_grpc_decoder_init(&d, 16);
    assert_int_equal(wf_grpc_decoder_feed(&d, buf, 3, collect, &g), 0);
    assert_false(wf_grpc_decoder_idle(&d));
    assert_int_equal(wf_grpc_decoder_feed(&d, buf + 3, 4, collect, &g), 0);
    assert_false(wf_grpc_decoder_idle(&d));
    assert_int_equal(g.n, 0);
    assert_int_equal(wf_grpc_decoder_feed(&d, buf + 7, len - 7, collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.msgs[0], "hello");
    wf_grpc_decoder_free(&d);
}

static void test_oversize(void **state)
{
    const uint8_t hdr[5] = {0, 0, 0, 0, 17}; /* 17 > max 16 */
    const uint8_t ok[5 + 16] = {0, 0, 0, 0, 16};
    wf_grpc_decoder d;
    got g = {0};
    wf_grpc_decoder_init(&d, 16);
    assert_int_equal(wf_grpc_decoder_feed(&d, ok, sizeof ok, collect, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(wf_grpc_decoder_feed(&d, hdr, 5, collect, &g), WF_GRPC_E_TOO_LARGE);
    /* sticky */
    assert_int_equal(wf_grpc_decoder_feed(&d, ok, sizeof ok, collect, &g), WF_GRPC_E_TOO_LARGE);
    assert_int_equal(g.n, 1);
    assert_int_equal(wf_grpc_err_status(WF_GRPC_E_TOO_LARGE), WF_GRPC_RESOURCE_EXHAUSTED);
    wf_grpc_decoder_free(&d);

    /* The default maximum is 4 MiB: a 4 MiB + 1 header is refused before allocating. */
    const uint8_t big[5] = {0, 0, 0x40, 0, 1};
    wf_grpc_decoder_init(&d, 0);
    assert_int_equal(wf_grpc_decoder_feed(&d, big, 5, collect, &g), WF_GRPC_E_TOO_LARGE);
    wf_grpc_decoder_free(&d);
}

static void test_compressed_and_bad_flag(void **state)
{
    const uint8_t comp[7] = {1, 0, 0, 0, 2, 'h', 'i'};
    const uint8_t bad[7] = {2, 0, 0, 0, 2, 'h', 'i'};
    wf_grpc_decoder d;
    got g = {0};
    wf_grpc_decoder_init(&d, 0);
    assert_int_equal(wf_grpc_decoder_feed(&d, comp, 1, collect, &g), 0);
    assert_int_equal(wf_grpc_decoder_feed(&d, comp + 1, 6, collect, &g), WF_GRPC_E_COMPRESSED);
    assert_int_equal(wf_grpc_err_status(WF_GRPC_E_COMPRESSED), WF_GRPC_INTERNAL);
    wf_grpc_decoder_free(&d);
    wf_grpc_decoder_init(&d, 0);
    assert_int_equal(wf_grpc_decoder_feed(&d, bad, 7, collect, &g), WF_GRPC_E_BAD_FLAG);
    wf_grpc_decoder_free(&d);
    assert_int_equal(g.n, 0);
    assert_string_equal(wf_grpc_strerror(WF_GRPC_E_COMPRESSED),
                        "compressed message but no grpc-encoding negotiated");
}

static void test_stop(void **state)
{
    uint8_t buf[64];
    size_t len = 0;
    frame(buf, &len, "a");
    frame(buf, &len, "b");
    wf_grpc_decoder d;
    got g = {.stop_after = 1};
    wf_grpc_decoder_init(&d, 0);
    assert_int_equal(wf_grpc_decoder_feed(&d, buf, len, collect, &g), WF_GRPC_E_STOPPED);
    assert_int_equal(g.n, 1);
    wf_grpc_decoder_free(&d);
}

static void test_message_encoding(void **state)
{
    char *e = wf_grpc_message_encode("100% bad\nnonce \xc3\xa9");
    assert_non_null(e);
    assert_string_equal(e, "100%25 bad%0Anonce %C3%A9");
    char *d = wf_grpc_message_decode(e, strlen(e));
    assert_non_null(d);
    assert_string_equal(d, "100% bad\nnonce \xc3\xa9");
    free(e);
    free(d);
    d = wf_grpc_message_decode("50%zz%4", 7); /* invalid escapes stay literal */
    assert_string_equal(d, "50%zz%4");
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_layout),           cmocka_unit_test(test_whole_and_split),
        cmocka_unit_test(test_partial_not_idle),        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_compressed_and_bad_flag), cmocka_unit_test(test_stop),
        cmocka_unit_test(test_message_encoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
