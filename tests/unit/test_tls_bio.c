/*
 * test_tls_bio.c - how ciphertext moves through the TLS engine's own BIO (src/tls/tls.h):
 * bytes lent by the caller and read in place (in pieces as small as one byte: short reads),
 * what is left of a window after a read carried over into the next, fed copies after lent
 * bytes, records handed to a sink one by one (a sink that fails fails the write), the
 * engine's own outgoing buffer taken in short pieces, and the strings the connection's facts
 * point at (the context's ALPN names, a first URI SAN of any length).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tls/tls.h"
#include "tls_testcerts.h"

static wf_tls_info info_of(const wf_tls_conn *c)
{
    wf_tls_info i;
    wf_tls_conn_info(c, &i);
    return i;
}

static tc_cert CA, SRV, CLI, LONG;

static int group_setup(void **state)
{
    (void)state;
    CA = tc_make("root", NULL, NULL, -1, 365);
    SRV = tc_make("server", &CA, "URI:spiffe://cluster.local/ns/a/sa/server,DNS:server.local", -1,
                  30);
    CLI = tc_make("client", &CA, "URI:spiffe://cluster.local/ns/a/sa/client", -1, 30);
    /* two URI SANs, the first longer than 256 bytes */
    char san[700];
    char path[301];
    memset(path, 'p', 300);
    path[300] = '\0';
    snprintf(san, sizeof(san), "URI:spiffe://cluster.local/ns/a/sa/%s,URI:spiffe://x/y", path);
    LONG = tc_make("long", &CA, san, -1, 30);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tc_free(&CA);
    tc_free(&SRV);
    tc_free(&CLI);
    tc_free(&LONG);
    return 0;
}

static wf_tls_ctx *mkctx(bool server, const tc_cert *own, bool verify, const char *const *alpn,
                         size_t nalpn)
{
    wf_tls_ctx_opts o = {.server = server, .alpn = alpn, .nalpn = nalpn};
    if (own) {
        o.cert_chain = own->cert_pem;
        o.cert_chain_len = strlen(own->cert_pem);
        o.private_key = own->key_pem;
        o.private_key_len = strlen(own->key_pem);
    }
    if (verify) {
        o.trusted_ca = CA.cert_pem;
        o.trusted_ca_len = strlen(CA.cert_pem);
    }
    char err[256] = "";
    wf_tls_ctx *c = wf_tls_ctx_new(&o, err, sizeof(err));
    if (!c)
        fail_msg("context: %s", err);
    return c;
}

/* A wire: what a sink was given, one entry per call. */
typedef struct wire {
    unsigned char *data;
    size_t len, cap;
    size_t calls;
    size_t records_whole; /* calls that were whole TLS records (header length matches) */
    bool fail;            /* the sink refuses */
} wire;

static int sink(void *arg, const void *data, size_t len)
{
    wire *w = arg;
    if (w->fail)
        return -1;
    const unsigned char *p = data;
    w->calls++;
    if (len >= 5 && (size_t)((p[3] << 8) | p[4]) + 5 == len)
        w->records_whole++;
    if (w->len + len > w->cap) {
        w->cap = (w->len + len) * 2;
        w->data = realloc(w->data, w->cap);
        assert_non_null(w->data);
    }
    memcpy(w->data + w->len, data, len);
    w->len += len;
    return 0;
}

/* A reader's buffer: what is lent to one connection. The bytes not consumed yet stay at its
 * end and move to its front before new ones are added (the caller's duty in tls.h). */
typedef struct lender {
    unsigned char buf[65536];
    size_t len;
} lender;

static void give(wf_tls_conn *to, lender *l, const unsigned char *data, size_t n)
{
    size_t left = wf_tls_conn_input_left(to);
    assert_true(left <= l->len);
    memmove(l->buf, l->buf + l->len - left, left);
    assert_true(left + n <= sizeof(l->buf));
    memcpy(l->buf + left, data, n);
    l->len = left + n;
    wf_tls_conn_lend(to, l->buf, l->len);
}

/* Moves a wire's bytes to a connection in pieces of `piece` bytes, running step after each;
 * every piece is consumed before the next (OpenSSL reads all it is given while it needs
 * more). */
static void move(wire *w, wf_tls_conn *to, lender *l, size_t piece, int (*step)(wf_tls_conn *))
{
    for (size_t off = 0; off < w->len; off += piece) {
        size_t n = w->len - off < piece ? w->len - off : piece;
        give(to, l, w->data + off, n);
        if (step)
            step(to);
    }
    w->len = 0;
}

/* The handshake, then what follows it (session tickets: read without taking plaintext). */
static int hs(wf_tls_conn *c)
{
    if (!wf_tls_conn_handshake_done(c))
        return wf_tls_conn_handshake(c);
    return (int)wf_tls_conn_peek(c);
}

/* Handshake of a client and a server with sinks, the ciphertext lent in pieces. */
static void handshake(wf_tls_conn *cl, wire *cw, lender *cl_in, wf_tls_conn *sv, wire *sw,
                      lender *sv_in, size_t piece)
{
    for (int i = 0; i < 10 && !(wf_tls_conn_handshake_done(cl) && wf_tls_conn_handshake_done(sv) &&
                                cw->len == 0 && sw->len == 0);
         i++) {
        int r = wf_tls_conn_handshake(cl);
        assert_true(r == WF_TLS_OK || r == WF_TLS_WANT);
        move(cw, sv, sv_in, piece, hs);
        assert_int_equal(wf_tls_conn_input_left(sv), 0);
        move(sw, cl, cl_in, piece, hs);
        assert_int_equal(wf_tls_conn_input_left(cl), 0);
    }
    assert_true(wf_tls_conn_handshake_done(cl));
    assert_true(wf_tls_conn_handshake_done(sv));
}

/* Short reads: every byte of the handshake and of 100 KiB of data lent one at a time (and in
 * 7-byte pieces the other way); plaintext read through a 100-byte buffer, what is left of a
 * window carried over. Nothing ever waits in the engine with a sink. */
static void test_lend_short_pieces(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = mkctx(true, &SRV, true, NULL, 0);
    wf_tls_ctx *cctx = mkctx(false, &CLI, true, NULL, 0);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, "server.local");
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    wire cw = {0}, sw = {0};
    static lender cl_in, sv_in;
    wf_tls_conn_set_sink(cl, sink, &cw);
    wf_tls_conn_set_sink(sv, sink, &sw);
    handshake(cl, &cw, &cl_in, sv, &sw, &sv_in, 1);
    assert_int_equal(wf_tls_conn_out_pending(cl), 0);
    assert_int_equal(wf_tls_conn_out_pending(sv), 0);
    assert_string_equal(info_of(sv).peer_uri_san, "spiffe://cluster.local/ns/a/sa/client");

    size_t big = 100 * 1024;
    unsigned char *data = malloc(big), *got = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (unsigned char)(i * 7 + 3);
    cw.calls = cw.records_whole = 0;
    assert_int_equal(wf_tls_conn_write(cl, data, big), WF_TLS_OK);
    assert_true(cw.calls >= 7); /* records of at most 16 KiB */
    assert_int_equal(cw.records_whole, cw.calls);
    size_t have = 0;
    for (size_t off = 0; off < cw.len; off += 7) {
        size_t n = cw.len - off < 7 ? cw.len - off : 7;
        give(sv, &sv_in, cw.data + off, n);
        ssize_t r;
        while ((r = wf_tls_conn_read(sv, got + have, 100)) > 0)
            have += (size_t)r;
        assert_int_equal(r, WF_TLS_WANT);
        assert_int_equal(wf_tls_conn_input_left(sv), 0);
    }
    cw.len = 0;
    assert_int_equal(have, big);
    assert_memory_equal(got, data, big);

    /* the other way: records lent whole, plaintext read 100 bytes at a time: the window's
     * rest waits, counted by input_left, and is read in place on the next call */
    assert_int_equal(wf_tls_conn_write(sv, data, 3000), WF_TLS_OK);
    assert_int_equal(wf_tls_conn_write(sv, data + 3000, 3000), WF_TLS_OK);
    give(cl, &cl_in, sw.data, sw.len);
    sw.len = 0;
    have = 0;
    ssize_t r = wf_tls_conn_read(cl, got, 100);
    assert_int_equal(r, 100);
    have += 100;
    assert_true(wf_tls_conn_input_left(cl) > 0); /* the second record, not read yet */
    assert_true(wf_tls_conn_readable(cl));
    while ((r = wf_tls_conn_read(cl, got + have, 100)) > 0)
        have += (size_t)r;
    assert_int_equal(r, WF_TLS_WANT);
    assert_int_equal(have, 6000);
    assert_memory_equal(got, data, 6000);
    assert_int_equal(wf_tls_conn_input_left(cl), 0);
    assert_false(wf_tls_conn_readable(cl));

    /* close_notify through the sink: the peer reads end of stream */
    wf_tls_conn_shutdown(cl);
    assert_true(cw.len > 0);
    give(sv, &sv_in, cw.data, cw.len);
    cw.len = 0;
    assert_int_equal(wf_tls_conn_read(sv, got, 100), WF_TLS_EOF);
    free(data);
    free(got);
    free(cw.data);
    free(sw.data);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* Fed bytes go after the lent bytes not consumed yet, in order; lending again drops a fed
 * copy's rest. Without a sink, ciphertext waits in the engine and is taken in short pieces. */
static void test_feed_after_lend_and_out_take(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = mkctx(true, &SRV, false, NULL, 0);
    wf_tls_ctx *cctx = mkctx(false, NULL, false, NULL, 0);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    wire sw = {0};
    static lender cl_in;
    wf_tls_conn_set_sink(sv, sink, &sw);
    /* the client keeps its ciphertext: taken 3 bytes at a time */
    for (int i = 0; i < 10 && !(wf_tls_conn_handshake_done(cl) && wf_tls_conn_handshake_done(sv));
         i++) {
        wf_tls_conn_handshake(cl);
        unsigned char b[3];
        size_t n, pending = wf_tls_conn_out_pending(cl), taken = 0;
        while ((n = wf_tls_conn_out_take(cl, b, sizeof(b))) > 0) {
            assert_int_equal(wf_tls_conn_feed(sv, b, n), WF_TLS_OK);
            taken += n;
        }
        assert_int_equal(taken, pending);
        assert_int_equal(wf_tls_conn_out_pending(cl), 0);
        wf_tls_conn_handshake(sv);
        give(cl, &cl_in, sw.data, sw.len);
        sw.len = 0;
    }
    assert_true(wf_tls_conn_handshake_done(cl) && wf_tls_conn_handshake_done(sv));
    /* three records from the server: two lent, one fed after them */
    assert_int_equal(wf_tls_conn_write(sv, "one", 3), WF_TLS_OK);
    size_t first = sw.len;
    assert_int_equal(wf_tls_conn_write(sv, "two", 3), WF_TLS_OK);
    size_t second = sw.len;
    assert_int_equal(wf_tls_conn_write(sv, "three", 5), WF_TLS_OK);
    give(cl, &cl_in, sw.data, second);
    char got[16];
    assert_int_equal(wf_tls_conn_read(cl, got, 3), 3); /* stops after "one" */
    assert_memory_equal(got, "one", 3);
    assert_int_equal(wf_tls_conn_input_left(cl), second - first);
    assert_int_equal(wf_tls_conn_feed(cl, sw.data + second, sw.len - second), WF_TLS_OK);
    assert_int_equal(wf_tls_conn_input_left(cl), sw.len - first);
    memset(cl_in.buf, 0, sizeof(cl_in.buf)); /* fed: the engine's copy, not the lender's */
    assert_int_equal(wf_tls_conn_read(cl, got, 3), 3);
    assert_memory_equal(got, "two", 3);
    assert_int_equal(wf_tls_conn_read(cl, got, sizeof(got)), 5);
    assert_memory_equal(got, "three", 5);
    assert_int_equal(wf_tls_conn_read(cl, got, sizeof(got)), WF_TLS_WANT);
    /* a fed copy's rest is dropped by a new lend */
    assert_int_equal(wf_tls_conn_feed(cl, "\x17\x03\x03", 3), WF_TLS_OK);
    assert_int_equal(wf_tls_conn_input_left(cl), 3);
    wf_tls_conn_lend(cl, NULL, 0);
    assert_int_equal(wf_tls_conn_input_left(cl), 0);
    free(sw.data);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* A sink that cannot take a record fails the write (WF_TLS_FAIL), and the handshake that
 * cannot send its flight fails too. */
static void test_sink_failure(void **state)
{
    (void)state;
    wf_tls_ctx *sctx = mkctx(true, &SRV, false, NULL, 0);
    wf_tls_ctx *cctx = mkctx(false, NULL, false, NULL, 0);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, NULL);
    wire cw = {.fail = true};
    wf_tls_conn_set_sink(cl, sink, &cw);
    assert_int_equal(wf_tls_conn_handshake(cl), WF_TLS_FAIL);
    assert_non_null(strstr(wf_tls_conn_failure(cl), "TLS_error:"));
    wf_tls_conn_free(cl);

    cl = wf_tls_conn_new(cctx, NULL);
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    wire sw = {0};
    cw.fail = false;
    static lender cl_in, sv_in;
    wf_tls_conn_set_sink(cl, sink, &cw);
    wf_tls_conn_set_sink(sv, sink, &sw);
    handshake(cl, &cw, &cl_in, sv, &sw, &sv_in, 4096);
    cw.fail = true;
    assert_int_equal(wf_tls_conn_write(cl, "x", 1), WF_TLS_FAIL);
    free(sw.data);
    free(cw.data);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

/* The negotiated ALPN is the context's own string (no per-connection copy) on both sides;
 * the first URI SAN is the peer's whole first one, however long, and all of them joined. */
static void test_facts_strings(void **state)
{
    (void)state;
    const char *salpn[] = {"h2", "http/1.1"}, *calpn[] = {"http/1.1"};
    wf_tls_ctx *sctx = mkctx(true, &SRV, true, salpn, 2);
    wf_tls_ctx *cctx = mkctx(false, &LONG, true, calpn, 1);
    wf_tls_conn *cl = wf_tls_conn_new(cctx, "server.local");
    wf_tls_conn *sv = wf_tls_conn_new(sctx, NULL);
    wire cw = {0}, sw = {0};
    static lender cl_in, sv_in;
    wf_tls_conn_set_sink(cl, sink, &cw);
    wf_tls_conn_set_sink(sv, sink, &sw);
    handshake(cl, &cw, &cl_in, sv, &sw, &sv_in, 4096);
    wf_tls_info sinfo, cinfo;
    wf_tls_conn_info(sv, &sinfo);
    wf_tls_conn_info(cl, &cinfo);
    const wf_tls_info *si = &sinfo, *ci = &cinfo;
    assert_string_equal(si->alpn, "http/1.1");
    assert_string_equal(ci->alpn, "http/1.1");
    assert_string_equal(si->sni, "server.local");
    assert_int_equal(strlen(si->peer_uri_san), strlen("spiffe://cluster.local/ns/a/sa/") + 300);
    assert_non_null(strstr(si->peer_uri_sans, ",spiffe://x/y"));
    assert_int_equal(strncmp(si->peer_uri_sans, si->peer_uri_san, strlen(si->peer_uri_san)), 0);
    assert_string_equal(ci->peer_uri_san, "spiffe://cluster.local/ns/a/sa/server");
    assert_string_equal(ci->peer_uri_sans, "spiffe://cluster.local/ns/a/sa/server");
    free(cw.data);
    free(sw.data);
    wf_tls_conn_free(cl);
    wf_tls_conn_free(sv);
    wf_tls_ctx_free(sctx);
    wf_tls_ctx_free(cctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lend_short_pieces),
        cmocka_unit_test(test_feed_after_lend_and_out_take),
        cmocka_unit_test(test_sink_failure),
        cmocka_unit_test(test_facts_strings),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
