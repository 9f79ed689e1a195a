/*
 * test_http_inspector.c - envoy.filters.listener.http_inspector (src/proxy/filters/listener/
 * http_inspector.c): each classification of Envoy's algorithm (reference protocols.md §1.3):
 * the h2 preface (also split over reads), HTTP/1.1, HTTP/1.0 and 0.9 request lines, custom
 * methods, lines that are not HTTP (empty target, bad version, CR/LF first, binary), partial
 * request lines waiting for their '\n', the 64 KiB limit (read_error), a TLS socket skipped,
 * and the filter's application protocol and http_inspector.* stats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/filters/listener/http_inspector.h"
#include "proxy/stats/stats.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

static wp_http_inspect_result inspect(const char *s)
{
    return wp_http_inspect((const unsigned char *)s, strlen(s));
}

static void test_classify(void **state)
{
    (void)state;
    assert_int_equal(inspect("GET / HTTP/1.1\r\n"), WP_HI_HTTP11);
    assert_int_equal(inspect("GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n"), WP_HI_HTTP11);
    assert_int_equal(inspect("POST http://a.b:80/x HTTP/1.1\n"), WP_HI_HTTP11);
    assert_int_equal(inspect("CONNECT a.b:443 HTTP/1.1\r\n"), WP_HI_HTTP11);
    assert_int_equal(inspect("OPTIONS * HTTP/1.1\r\n"), WP_HI_HTTP11);
    assert_int_equal(inspect("MYMETHOD / HTTP/1.1\r\n"), WP_HI_HTTP11); /* custom methods */
    assert_int_equal(inspect("GET / HTTP/1.0\r\n"), WP_HI_HTTP10);
    assert_int_equal(inspect("GET / HTTP/2.0\r\n"), WP_HI_HTTP10);
    assert_int_equal(inspect("GET /\r\n"), WP_HI_HTTP10); /* HTTP/0.9 */
    assert_int_equal(inspect(PREFACE), WP_HI_HTTP2);
    assert_int_equal(inspect(PREFACE "\x00\x00\x12\x04"), WP_HI_HTTP2);
}

static void test_not_http(void **state)
{
    (void)state;
    assert_int_equal(inspect("PING\r\n"), WP_HI_NOT_HTTP);        /* no request-target */
    assert_int_equal(inspect("HELLO world\r\n"), WP_HI_NOT_HTTP); /* not a target */
    assert_int_equal(inspect("\r\nGET / HTTP/1.1\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("GET / HTTP/1.1 x\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("GET / HTTP/11\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("GET / FTP/1.1\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("G(T / HTTP/1.1\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("GET a@@b HTTP/1.1\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("GET 1http://a/ HTTP/1.1\r\n"), WP_HI_NOT_HTTP);
    assert_int_equal(inspect("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"), WP_HI_HTTP10); /* as Envoy */
}

/* Every prefix of a request line before its '\n', and of the preface, asks for more. */
static void test_need_more(void **state)
{
    (void)state;
    const char *req = "GET /index.html HTTP/1.1\r\n";
    for (size_t k = 0; k < strlen(req); k++)
        assert_int_equal(wp_http_inspect((const unsigned char *)req, k), WP_HI_NEED_MORE);
    assert_int_equal(wp_http_inspect((const unsigned char *)req, strlen(req)), WP_HI_HTTP11);
    for (size_t k = 0; k < 24; k++)
        assert_int_equal(wp_http_inspect((const unsigned char *)PREFACE, k), WP_HI_NEED_MORE);
    /* binary without a newline (a TLS record, a server-first client's silence) waits */
    assert_int_equal(wp_http_inspect((const unsigned char *)"\x16\x03\x01\x02\x00", 5),
                     WP_HI_NEED_MORE);
}

/* ---------- the filter ---------- */

typedef struct {
    wp_stats *st;
    wp_http_inspector f;
    wp_lf_socket sock;
    wp_lf_callbacks cb;
    wp_listener_filter lf;
    int done;
    bool ok;
} fx;

static void done_cb(wp_lf_callbacks *cb, bool ok)
{
    fx *x = cb->owner;
    x->done++;
    x->ok = ok;
}

static int setup(void **state)
{
    fx *x = calloc(1, sizeof(*x));
    x->st = wp_stats_new(1);
    x->f.st_read_error = wp_stats_counter(x->st, "http_inspector.read_error");
    x->f.st_http10_found = wp_stats_counter(x->st, "http_inspector.http10_found");
    x->f.st_http11_found = wp_stats_counter(x->st, "http_inspector.http11_found");
    x->f.st_http2_found = wp_stats_counter(x->st, "http_inspector.http2_found");
    x->f.st_http_not_found = wp_stats_counter(x->st, "http_inspector.http_not_found");
    wp_lf_socket_init(&x->sock, NULL, NULL);
    x->lf = (wp_listener_filter){&wp_http_inspector_ops, &x->f, NULL};
    wp_lf_callbacks_init(&x->cb, &x->sock, &x->lf, 1, done_cb, x);
    x->cb.stats = (struct wp_stats_shard *)wp_stats_get_shard(x->st, 0);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx *x = *state;
    wp_lf_socket_release(&x->sock);
    wp_stats_free(x->st);
    free(x);
    return 0;
}

static int64_t stat(fx *x, const char *name)
{
    return wp_stats_value(x->st, wp_stats_counter(x->st, name));
}

static const char *alpn(fx *x)
{
    return x->sock.det && x->sock.det->nalpn ? x->sock.det->alpn[0] : "";
}

/* The preface split over three reads: the filter waits, then sets h2c and the run ends. */
static void test_filter_h2c_split(void **state)
{
    fx *x = *state;
    const unsigned char *p = (const unsigned char *)PREFACE;
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_STOP_ITERATION);
    assert_true(wp_lf_wants_data(&x->cb));
    assert_int_equal(wp_lf_max_read_bytes(&x->cb), 65536);
    wp_lf_on_data(&x->cb, p, 3);
    wp_lf_on_data(&x->cb, p, 16);
    assert_int_equal(x->done, 0);
    wp_lf_on_data(&x->cb, p, 24);
    assert_int_equal(x->done, 1);
    assert_true(x->ok);
    assert_string_equal(alpn(x), "h2c");
    assert_int_equal(stat(x, "http_inspector.http2_found"), 1);
    assert_int_equal(stat(x, "http_inspector.http_not_found"), 0);
}

static void test_filter_http11_partial(void **state)
{
    fx *x = *state;
    const unsigned char *r = (const unsigned char *)"GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_STOP_ITERATION);
    wp_lf_on_data(&x->cb, r, 9);
    assert_int_equal(x->done, 0);
    wp_lf_on_data(&x->cb, r, 17);
    assert_int_equal(x->done, 1);
    assert_true(x->ok);
    assert_string_equal(alpn(x), "http/1.1");
    assert_int_equal(stat(x, "http_inspector.http11_found"), 1);
}

static void test_filter_http10(void **state)
{
    fx *x = *state;
    const char *r = "GET / HTTP/1.0\r\n\r\n";
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_STOP_ITERATION);
    wp_lf_on_data(&x->cb, (const unsigned char *)r, strlen(r));
    assert_string_equal(alpn(x), "http/1.0");
    assert_int_equal(stat(x, "http_inspector.http10_found"), 1);
}

static void test_filter_not_http(void **state)
{
    fx *x = *state;
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_STOP_ITERATION);
    wp_lf_on_data(&x->cb, (const unsigned char *)"PING\r\n", 6);
    assert_int_equal(x->done, 1);
    assert_true(x->ok); /* the chain goes on, without an application protocol */
    assert_null(x->sock.det);
    assert_int_equal(stat(x, "http_inspector.http_not_found"), 1);
}

static void test_filter_read_error_at_limit(void **state)
{
    fx *x = *state;
    unsigned char *big = malloc(65536);
    memset(big, 'A', 65536);
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_STOP_ITERATION);
    wp_lf_on_data(&x->cb, big, 65535);
    assert_int_equal(x->done, 0);
    wp_lf_on_data(&x->cb, big, 65536);
    assert_int_equal(x->done, 1);
    assert_false(x->ok); /* closed */
    assert_int_equal(stat(x, "http_inspector.read_error"), 1);
    free(big);
}

/* After tls_inspector found TLS there is nothing to inspect. */
static void test_filter_skips_tls(void **state)
{
    fx *x = *state;
    assert_int_equal(wp_lf_set_transport_protocol(&x->sock, "tls"), 0);
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_CONTINUE);
    assert_int_equal(stat(x, "http_inspector.http_not_found"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_not_http),
        cmocka_unit_test(test_need_more),
        cmocka_unit_test_setup_teardown(test_filter_h2c_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_http11_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_http10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_not_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_read_error_at_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_skips_tls, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
