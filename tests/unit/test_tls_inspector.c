/*
 * test_tls_inspector.c - envoy.filters.listener.tls_inspector (src/proxy/filters/listener/
 * tls_inspector.c) over real ClientHellos written by OpenSSL's client (SSL_connect into a
 * memory BIO): the SNI (lower-cased) and ALPN list are found, every shorter prefix asks for
 * more, a ClientHello split over two records is reassembled, plaintext is not TLS, and the
 * filter sets the socket's transport protocol / server name / ALPN, counts Envoy's
 * tls_inspector.* stats, fails at max_client_hello_size and, with
 * close_connection_on_client_hello_parsing_errors, on plaintext.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "proxy/filters/listener/tls_inspector.h"
#include "proxy/stats/stats.h"

/* The bytes an OpenSSL client sends first: its ClientHello record(s). */
static size_t client_hello(const char *sni, const char *alpn_wire, size_t alpn_len, int max_ver,
                           unsigned char *out, size_t cap)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    if (max_ver)
        SSL_CTX_set_max_proto_version(ctx, max_ver);
    SSL *ssl = SSL_new(ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rb, wb);
    if (sni)
        SSL_set_tlsext_host_name(ssl, sni);
    if (alpn_wire)
        SSL_set_alpn_protos(ssl, (const unsigned char *)alpn_wire, (unsigned)alpn_len);
    SSL_set_connect_state(ssl);
    assert_true(SSL_do_handshake(ssl) <= 0); /* waits for the server */
    int n = BIO_read(wb, out, (int)cap);
    assert_true(n > 5);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return (size_t)n;
}

#define ALPN_H2_H11 "\x02h2\x08http/1.1"

static void test_parse_sni_alpn(void **state)
{
    (void)state;
    unsigned char buf[8192];
    size_t n = client_hello("Catalog.IstioInAction.IO", ALPN_H2_H11, 12, 0, buf, sizeof buf);
    wp_client_hello ch;
    assert_int_equal(wp_client_hello_parse(buf, n, &ch), WP_CH_FOUND);
    assert_string_equal(ch.sni, "catalog.istioinaction.io");
    assert_true(ch.has_alpn);
    assert_int_equal(ch.nalpn, 2);
    assert_string_equal(ch.alpn[0], "h2");
    assert_string_equal(ch.alpn[1], "http/1.1");
    assert_int_equal(ch.consumed, n);
    for (size_t k = 0; k < n; k++) /* every prefix: more is needed */
        assert_int_equal(wp_client_hello_parse(buf, k, &ch), WP_CH_NEED_MORE);
}

static void test_parse_tls12_no_extensions_of_interest(void **state)
{
    (void)state;
    unsigned char buf[8192];
    size_t n = client_hello(NULL, NULL, 0, TLS1_2_VERSION, buf, sizeof buf);
    wp_client_hello ch;
    assert_int_equal(wp_client_hello_parse(buf, n, &ch), WP_CH_FOUND);
    assert_string_equal(ch.sni, "");
    assert_false(ch.has_alpn);
    assert_int_equal(ch.nalpn, 0);
}

/* The same ClientHello carried by two handshake records. */
static void test_parse_two_records(void **state)
{
    (void)state;
    unsigned char one[8192], two[8192 + 5];
    size_t n = client_hello("a.example", NULL, 0, 0, one, sizeof one);
    size_t body = n - 5, first = body / 2;
    memcpy(two, one, 5);
    two[3] = (unsigned char)(first >> 8);
    two[4] = (unsigned char)first;
    memcpy(two + 5, one + 5, first);
    memcpy(two + 5 + first, one, 5);
    two[5 + first + 3] = (unsigned char)((body - first) >> 8);
    two[5 + first + 4] = (unsigned char)(body - first);
    memcpy(two + 10 + first, one + 5 + first, body - first);
    wp_client_hello ch;
    assert_int_equal(wp_client_hello_parse(two, 5 + first, &ch), WP_CH_NEED_MORE);
    assert_int_equal(wp_client_hello_parse(two, n + 5, &ch), WP_CH_FOUND);
    assert_string_equal(ch.sni, "a.example");
}

static void test_parse_not_tls(void **state)
{
    (void)state;
    wp_client_hello ch;
    const char *get = "GET / HTTP/1.1\r\nhost: x\r\n\r\n";
    assert_int_equal(wp_client_hello_parse((const unsigned char *)get, strlen(get), &ch),
                     WP_CH_NOT_TLS);
    assert_int_equal(wp_client_hello_parse((const unsigned char *)"G", 1, &ch), WP_CH_NOT_TLS);
    /* a handshake record that is not a ClientHello (a ServerHello, type 2) */
    const unsigned char sh[] = {22, 3, 3, 0, 4, 2, 0, 0, 0};
    assert_int_equal(wp_client_hello_parse(sh, sizeof sh, &ch), WP_CH_NOT_TLS);
    /* an SSL 2 style first byte, and a bad record version */
    const unsigned char v2[] = {0x80, 0x2e, 1, 3, 1};
    assert_int_equal(wp_client_hello_parse(v2, sizeof v2, &ch), WP_CH_NOT_TLS);
    const unsigned char bad[] = {22, 2, 0, 0, 4};
    assert_int_equal(wp_client_hello_parse(bad, sizeof bad, &ch), WP_CH_NOT_TLS);
    /* a truncated ClientHello body inside a complete record */
    const unsigned char cut[] = {22, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3};
    assert_int_equal(wp_client_hello_parse(cut, sizeof cut, &ch), WP_CH_NOT_TLS);
}

/* ---------- the filter ---------- */

typedef struct {
    wp_stats *st;
    wp_tls_inspector f;
    wp_lf_socket sock;
    wp_lf_callbacks cb;
} fx;

static void done_cb(wp_lf_callbacks *cb, bool ok)
{
    (void)cb;
    (void)ok;
}

static int setup(void **state)
{
    fx *x = calloc(1, sizeof(*x));
    x->st = wp_stats_new(1);
    x->f.max_client_hello_size = WP_TLS_MAX_CLIENT_HELLO;
    x->f.st_too_large = wp_stats_counter(x->st, "tls_inspector.client_hello_too_large");
    x->f.st_tls_found = wp_stats_counter(x->st, "tls_inspector.tls_found");
    x->f.st_tls_not_found = wp_stats_counter(x->st, "tls_inspector.tls_not_found");
    x->f.st_alpn_found = wp_stats_counter(x->st, "tls_inspector.alpn_found");
    x->f.st_alpn_not_found = wp_stats_counter(x->st, "tls_inspector.alpn_not_found");
    x->f.st_sni_found = wp_stats_counter(x->st, "tls_inspector.sni_found");
    x->f.st_sni_not_found = wp_stats_counter(x->st, "tls_inspector.sni_not_found");
    x->f.st_bytes_processed = wp_stats_histogram(x->st, "tls_inspector.bytes_processed");
    wp_lf_socket_init(&x->sock, NULL, NULL);
    static wp_listener_filter lf;
    lf = (wp_listener_filter){&wp_tls_inspector_ops, &x->f, NULL};
    wp_lf_callbacks_init(&x->cb, &x->sock, &lf, 1, done_cb, x);
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

static void test_filter_tls(void **state)
{
    fx *x = *state;
    unsigned char buf[8192];
    size_t n = client_hello("a.example", ALPN_H2_H11, 12, 0, buf, sizeof buf);
    assert_int_equal(wp_lf_run(&x->cb), WP_LF_STOP_ITERATION);
    assert_true(wp_lf_wants_data(&x->cb));
    assert_int_equal(wp_lf_max_read_bytes(&x->cb), WP_TLS_MAX_CLIENT_HELLO);
    assert_int_equal(wp_tls_inspector_ops.on_data(&x->f, &x->cb, buf, 7), WP_LF_STOP_ITERATION);
    assert_int_equal(wp_tls_inspector_ops.on_data(&x->f, &x->cb, buf, n), WP_LF_CONTINUE);
    assert_string_equal(wp_lf_transport_protocol(&x->sock), "tls");
    assert_string_equal(wp_lf_server_name(&x->sock), "a.example");
    assert_int_equal(x->sock.det->nalpn, 2);
    assert_string_equal(x->sock.det->alpn[0], "h2");
    assert_int_equal(stat(x, "tls_inspector.tls_found"), 1);
    assert_int_equal(stat(x, "tls_inspector.sni_found"), 1);
    assert_int_equal(stat(x, "tls_inspector.alpn_found"), 1);
    assert_int_equal(stat(x, "tls_inspector.tls_not_found"), 0);
    assert_int_equal(wp_stats_hist_count(x->st, x->f.st_bytes_processed), 1);
    assert_int_equal(wp_stats_hist_sum(x->st, x->f.st_bytes_processed), n);
}

static void test_filter_plaintext(void **state)
{
    fx *x = *state;
    const char *get = "GET / HTTP/1.1\r\n";
    assert_int_equal(
        wp_tls_inspector_ops.on_data(&x->f, &x->cb, (const unsigned char *)get, strlen(get)),
        WP_LF_CONTINUE);
    assert_string_equal(wp_lf_transport_protocol(&x->sock), "raw_buffer");
    assert_int_equal(stat(x, "tls_inspector.tls_not_found"), 1);
    assert_int_equal(stat(x, "tls_inspector.tls_found"), 0);
    x->f.close_on_parse_error = true;
    assert_int_equal(
        wp_tls_inspector_ops.on_data(&x->f, &x->cb, (const unsigned char *)get, strlen(get)),
        WP_LF_FAILED);
    assert_int_equal(stat(x, "tls_inspector.tls_not_found"), 1);
}

static void test_filter_too_large(void **state)
{
    fx *x = *state;
    unsigned char buf[8192];
    assert_true(client_hello("a.example", NULL, 0, 0, buf, sizeof buf) > 64);
    x->f.max_client_hello_size = 64; /* smaller than the ClientHello */
    assert_int_equal(wp_tls_inspector_ops.on_data(&x->f, &x->cb, buf, 63), WP_LF_STOP_ITERATION);
    assert_int_equal(wp_tls_inspector_ops.on_data(&x->f, &x->cb, buf, 64), WP_LF_FAILED);
    assert_int_equal(stat(x, "tls_inspector.client_hello_too_large"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_sni_alpn),
        cmocka_unit_test(test_parse_tls12_no_extensions_of_interest),
        cmocka_unit_test(test_parse_two_records),
        cmocka_unit_test(test_parse_not_tls),
        cmocka_unit_test_setup_teardown(test_filter_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_plaintext, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filter_too_large, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
