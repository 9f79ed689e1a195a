/*
 * test_tls_socket.c - the TLS transport socket (src/proxy/net/tls_socket.h) over a loopback
 * pair on a real libuv loop: connected only after the handshake, ssl() facts, data both ways
 * through the owners' rooms, plaintext kept while the owner has no room and delivered after
 * it reads again, shutdown as end of stream, a failed handshake as a connect failure with
 * Envoy's failure reason, TLS meeting a plaintext server (WRONG_VERSION_NUMBER), a server
 * refusing a client without certificate, and the ssl.* stats counted. The ciphertext path:
 * small buffers of one write as one record, writes the kernel cannot take at once (partial
 * writes, EAGAIN) completed in order, records left in the room while the owner does not read,
 * a peer closing mid-handshake, and no buffer of the worker's held by an idle connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "proxy/net/raw_socket.h"
#include "proxy/net/tls_socket.h"
#include "tls_testcerts.h"

typedef struct end {
    wp_raw_socket rs;
    wp_tsock *sock; /* the TLS socket, or &rs.base */
    char *buf;
    size_t cap, len;
    bool no_room;
    int allocs; /* alloc calls that gave room */
    int eof, enobufs, read_err;
    int written, write_status;
    int connected, connect_status;
    int closed;
    bool closing; /* closed by the test's own callbacks */
} end;

typedef struct env {
    uv_loop_t loop;
    wp_wreq_pool wreqs;
    wp_buf_pool bufs;
    wp_deferred dd;
    uv_tcp_t listener;
    end client, server;
    bool accepted;
    wf_tls_ctx *server_ctx;   /* NULL: a plaintext server */
    const char *plain_answer; /* a plaintext server writes this once it read something */
    bool plain_close;         /* a plaintext server closes once it read something */
    uv_connect_t creq;
    uv_timer_t guard;
    wp_stats *stats;
    uint32_t cslots[WP_SSL_COUNT_], sslots[WP_SSL_COUNT_];
} env;

static tc_cert CA, OTHER, SRV, CLI;

static void e_alloc(void *owner, uv_buf_t *b)
{
    end *e = owner;
    if (e->no_room || e->len == e->cap) {
        *b = uv_buf_init(NULL, 0);
        return;
    }
    e->allocs++;
    *b = uv_buf_init(e->buf + e->len, (unsigned)(e->cap - e->len));
}

static env *ENV; /* the plaintext server answers through it */

/* Every callback stops the loop's run (uv_run(UV_RUN_ONCE) returns without blocking on the
 * guard), so the run_until helpers look at their condition again. */
static void e_read(void *owner, ssize_t n)
{
    end *e = owner;
    uv_stop(&ENV->loop);
    if (n > 0) {
        e->len += (size_t)n;
        if (e == &ENV->server && ENV->plain_close) {
            ENV->plain_close = false;
            e->closing = true;
            wp_tsock_close(e->sock);
        }
        if (e == &ENV->server && ENV->plain_answer) {
            uv_buf_t b = uv_buf_init((char *)ENV->plain_answer, strlen(ENV->plain_answer));
            wp_tsock_write(e->sock, &b, 1);
            ENV->plain_answer = NULL;
        }
    } else if (n == UV_EOF) {
        e->eof++;
    } else if (n == UV_ENOBUFS) {
        e->enobufs++;
    } else {
        e->read_err = (int)n;
    }
}

static void e_written(void *owner, int status)
{
    end *e = owner;
    uv_stop(&ENV->loop);
    e->written++;
    e->write_status = status;
}

static void e_connected(void *owner, int status)
{
    end *e = owner;
    uv_stop(&ENV->loop);
    e->connected++;
    e->connect_status = status;
}

static void e_closed(void *owner)
{
    ((end *)owner)->closed++;
    uv_stop(&ENV->loop);
}

static const wp_tsock_cbs cbs = {e_alloc, e_read, e_written, e_connected, e_closed};

static void on_conn(uv_stream_t *l, int status)
{
    env *v = l->data;
    assert_int_equal(status, 0);
    end *s = &v->server;
    assert_int_equal(wp_raw_socket_init(&s->rs, &v->loop, &v->wreqs, &cbs, s), 0);
    assert_int_equal(wp_raw_socket_accept(&s->rs, l), 0);
    s->sock = &s->rs.base;
    if (v->server_ctx) {
        wp_tls_stats st = {wp_stats_get_shard(v->stats, 0), v->sslots, "listener", "l"};
        s->sock = wp_tls_socket_wrap(&s->rs.base, &v->bufs, &v->dd, v->server_ctx, true, NULL, &st);
        assert_non_null(s->sock);
    }
    assert_int_equal(wp_tsock_read_start(s->sock), 0);
    v->accepted = true;
}

static void on_guard(uv_timer_t *t)
{
    (void)t;
    fail_msg("the test timed out");
}

static void run_until_int(env *v, const int *n, int want)
{
    uv_timer_start(&v->guard, on_guard, 10000, 0);
    while (*n < want)
        uv_run(&v->loop, UV_RUN_ONCE);
    uv_timer_stop(&v->guard);
}

static void run_until_len(env *v, const end *e, size_t want)
{
    uv_timer_start(&v->guard, on_guard, 10000, 0);
    while (e->len < want)
        uv_run(&v->loop, UV_RUN_ONCE);
    uv_timer_stop(&v->guard);
}

static wf_tls_ctx *mkctx(bool server, const tc_cert *own, const tc_cert *ca, bool require,
                         const char *san)
{
    const char *alpn[] = {"h2", "http/1.1"};
    wf_tls_san_matcher sm = {WF_TLS_SAN_URI, WF_TLS_MATCH_EXACT, san};
    wf_tls_ctx_opts o = {.server = server, .require_client_cert = require};
    if (own) {
        o.cert_chain = own->cert_pem;
        o.cert_chain_len = strlen(own->cert_pem);
        o.private_key = own->key_pem;
        o.private_key_len = strlen(own->key_pem);
    }
    if (ca) {
        o.trusted_ca = ca->cert_pem;
        o.trusted_ca_len = strlen(ca->cert_pem);
    }
    if (san) {
        o.sans = &sm;
        o.nsans = 1;
    }
    o.alpn = server ? alpn : alpn + 1;
    o.nalpn = server ? 2 : 1;
    char err[256];
    wf_tls_ctx *c = wf_tls_ctx_new(&o, err, sizeof(err));
    if (!c)
        fail_msg("%s", err);
    return c;
}

/* Listens, connects a TLS client of cctx (its connect result in v->client). */
static void start_pair(env *v, wf_tls_ctx *cctx)
{
    struct sockaddr_storage ss;
    uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&ss);
    uv_tcp_init(&v->loop, &v->listener);
    v->listener.data = v;
    assert_int_equal(uv_tcp_bind(&v->listener, (struct sockaddr *)&ss, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&v->listener, 8, on_conn), 0);
    int len = sizeof(ss);
    uv_tcp_getsockname(&v->listener, (struct sockaddr *)&ss, &len);
    end *c = &v->client;
    assert_int_equal(wp_raw_socket_init(&c->rs, &v->loop, &v->wreqs, &cbs, c), 0);
    wp_tls_stats st = {wp_stats_get_shard(v->stats, 0), v->cslots, "cluster", "c"};
    c->sock = wp_tls_socket_wrap(&c->rs.base, &v->bufs, &v->dd, cctx, false, "server.local", &st);
    assert_non_null(c->sock);
    assert_int_equal(wp_tsock_connect(c->sock, &v->creq, (struct sockaddr *)&ss), 0);
    run_until_int(v, &c->connected, 1);
}

/* The counter's value, found by its name among the slots registered in setup. */
static int64_t cstat(env *v, const char *name)
{
    static const char *const names[] = {
        "connection_error",    "handshake",         "session_reused",  "no_certificate",
        "fail_verify_no_cert", "fail_verify_error", "fail_verify_san", "fail_verify_cert_hash"};
    bool listener = strncmp(name, "listener.l.ssl.", 15) == 0;
    const char *leaf = strrchr(name, '.') + 1;
    for (int i = 0; i < WP_SSL_COUNT_; i++)
        if (strcmp(leaf, names[i]) == 0)
            return wp_stats_value(v->stats, listener ? v->sslots[i] : v->cslots[i]);
    fail_msg("no stat %s", name);
    return -1;
}

static int group_setup(void **state)
{
    (void)state;
    CA = tc_make("root", NULL, NULL, -1, 365);
    OTHER = tc_make("other", NULL, NULL, -1, 365);
    SRV = tc_make("server", &CA, "URI:spiffe://cluster.local/ns/a/sa/server", -1, 30);
    CLI = tc_make("client", &CA, "URI:spiffe://cluster.local/ns/a/sa/client", -1, 30);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tc_free(&CA);
    tc_free(&OTHER);
    tc_free(&SRV);
    tc_free(&CLI);
    return 0;
}

static int setup(void **state)
{
    env *v = calloc(1, sizeof(*v));
    assert_non_null(v);
    assert_int_equal(uv_loop_init(&v->loop), 0);
    assert_int_equal(wp_deferred_init(&v->dd, &v->loop), 0);
    uv_timer_init(&v->loop, &v->guard);
    v->client.cap = v->server.cap = 256 * 1024;
    v->client.buf = malloc(v->client.cap);
    v->server.buf = malloc(v->server.cap);
    v->stats = wp_stats_new(1);
    assert_non_null(v->stats);
    static const char *const names[] = {
        "connection_error",    "handshake",         "session_reused",  "no_certificate",
        "fail_verify_no_cert", "fail_verify_error", "fail_verify_san", "fail_verify_cert_hash"};
    char n[96];
    for (int i = 0; i < WP_SSL_COUNT_; i++) {
        snprintf(n, sizeof(n), "cluster.c.ssl.%s", names[i]);
        v->cslots[i] = wp_stats_counter(v->stats, n);
        snprintf(n, sizeof(n), "listener.l.ssl.%s", names[i]);
        v->sslots[i] = wp_stats_counter(v->stats, n);
    }
    ENV = v;
    *state = v;
    return 0;
}

static int teardown(void **state)
{
    env *v = *state;
    if (v->client.sock && !v->client.closed)
        wp_tsock_close(v->client.sock);
    if (v->accepted && !v->server.closed && !v->server.closing)
        wp_tsock_close(v->server.sock);
    if (v->listener.loop)
        uv_close((uv_handle_t *)&v->listener, NULL);
    uv_close((uv_handle_t *)&v->guard, NULL);
    wp_deferred_close(&v->dd);
    uv_run(&v->loop, UV_RUN_DEFAULT);
    wp_deferred_drain(&v->dd);
    assert_int_equal(uv_loop_close(&v->loop), 0);
    wp_buf_pool_clear(&v->bufs);
    if (v->client.sock)
        assert_int_equal(v->client.closed, 1);
    wp_wreq_pool_free(&v->wreqs);
    wf_tls_ctx_free(v->server_ctx);
    wp_stats_free(v->stats);
    free(v->client.buf);
    free(v->server.buf);
    free(v);
    return 0;
}

static void test_mtls_exchange(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, &CA, true, NULL);
    wf_tls_ctx *cctx = mkctx(false, &CLI, &CA, false, "spiffe://cluster.local/ns/a/sa/server");
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, 0);
    const wp_tsock_ssl *ci = wp_tsock_ssl_info(v->client.sock);
    assert_string_equal(ci->version, "TLSv1.3");
    assert_string_equal(ci->alpn, "http/1.1");
    assert_string_equal(ci->peer_uri_san, "spiffe://cluster.local/ns/a/sa/server");
    assert_null(wp_tsock_failure_reason(v->client.sock));
    assert_int_equal(wp_tsock_read_start(v->client.sock), 0);
    /* a large write: several records, pending in the kernel's queue maybe */
    size_t big = 200 * 1024;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    uv_buf_t b[2] = {uv_buf_init(data, 100), uv_buf_init(data + 100, (unsigned)(big - 100))};
    int r = wp_tsock_write(v->client.sock, b, 2);
    assert_true(r == 0 || r == 1);
    memset(data, 0, 100); /* the caller's buffers are free at once */
    run_until_len(v, &v->server, big);
    assert_int_equal(v->server.buf[0], 'a');
    assert_int_equal(v->server.buf[big - 1], (char)('a' + (big - 1) % 26));
    if (r == 1)
        run_until_int(v, &v->client.written, 1);
    const wp_tsock_ssl *si = wp_tsock_ssl_info(v->server.sock);
    assert_string_equal(si->peer_uri_san, "spiffe://cluster.local/ns/a/sa/client");
    assert_string_equal(si->sni, "server.local");
    assert_string_equal(si->peer_subject, "CN=client,O=weft-test");
    assert_string_equal(si->local_uri_sans, "spiffe://cluster.local/ns/a/sa/server");
    /* the answer, then close_notify + FIN as end of stream */
    uv_buf_t a = uv_buf_init("pong", 4);
    assert_true(wp_tsock_write(v->server.sock, &a, 1) >= 0);
    assert_int_equal(wp_tsock_shutdown(v->server.sock), 0);
    run_until_int(v, &v->client.eof, 1);
    assert_int_equal(v->client.len, 4);
    assert_memory_equal(v->client.buf, "pong", 4);
    char addr[64];
    assert_int_equal(wp_tsock_address(v->client.sock, true, addr, sizeof(addr)), 0);
    assert_non_null(strstr(addr, "127.0.0.1:"));
    assert_int_equal(cstat(v, "cluster.c.ssl.handshake"), 1);
    assert_int_equal(cstat(v, "listener.l.ssl.handshake"), 1);
    assert_int_equal(cstat(v, "listener.l.ssl.no_certificate"), 0);
    /* the counters Envoy creates on first use, named after what was negotiated */
    char n[128];
    snprintf(n, sizeof(n), "cluster.c.ssl.ciphers.%s", ci->cipher);
    assert_int_equal(wp_stats_value(v->stats, wp_stats_counter(v->stats, n)), 1);
    assert_int_equal(
        wp_stats_value(v->stats, wp_stats_counter(v->stats, "listener.l.ssl.versions.TLSv1.3")), 1);
    assert_int_equal(
        wp_stats_value(v->stats, wp_stats_counter(v->stats, "cluster.c.ssl.curves.X25519")), 1);
    free(data);
    wp_tsock_close(v->client.sock);
    run_until_int(v, &v->client.closed, 1);
    wf_tls_ctx_free(cctx);
}

/* The owner has no room: reading stops (ENOBUFS); plaintext waits in the engine and comes
 * once the owner reads again, with no new bytes from the peer. */
static void test_no_room_then_resume(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, 0);
    v->server.no_room = true;
    uv_buf_t b = uv_buf_init("hello", 5);
    assert_true(wp_tsock_write(v->client.sock, &b, 1) >= 0);
    run_until_int(v, &v->server.enobufs, 1);
    assert_int_equal(v->server.len, 0);
    v->server.no_room = false;
    assert_int_equal(wp_tsock_read_start(v->server.sock), 0);
    assert_int_equal(v->server.len, 0); /* never from inside read_start */
    run_until_len(v, &v->server, 5);
    assert_memory_equal(v->server.buf, "hello", 5);
    assert_int_equal(cstat(v, "listener.l.ssl.no_certificate"), 1);
    wf_tls_ctx_free(cctx);
}

static void on_stop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

/* Session tickets (TLS 1.3, after the handshake) are processed without asking the owner for
 * room: an idle upstream connection holds no read buffer for them. */
static void test_tickets_take_no_room(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, 0);
    assert_int_equal(wp_tsock_read_start(v->client.sock), 0);
    uv_timer_t t;
    uv_timer_init(&v->loop, &t);
    uv_timer_start(&t, on_stop, 100, 0);
    uv_run(&v->loop, UV_RUN_DEFAULT); /* the tickets arrive and are read */
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&v->loop, UV_RUN_NOWAIT); /* the timer's close completes before any assert */
    assert_int_equal(v->client.allocs, 0);
    assert_int_equal(v->client.len, 0);
    uv_buf_t b = uv_buf_init("x", 1);
    assert_true(wp_tsock_write(v->server.sock, &b, 1) >= 0);
    run_until_len(v, &v->client, 1);
    assert_int_equal(v->client.allocs, 1);
    wf_tls_ctx_free(cctx);
}

/* The client does not trust the server: a connect failure with Envoy's reason. */
static void test_unknown_ca_is_connect_failure(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &OTHER, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, UV_EPROTO);
    assert_string_equal(wp_tsock_failure_reason(v->client.sock),
                        "TLS_error:|268435581:SSL routines:OPENSSL_internal:"
                        "CERTIFICATE_VERIFY_FAILED:verify cert failed: X509_verify_cert: "
                        "certificate verification error at depth 0: unable to get local issuer "
                        "certificate:TLS_error_end");
    assert_int_equal(cstat(v, "cluster.c.ssl.fail_verify_error"), 1);
    assert_int_equal(cstat(v, "cluster.c.ssl.handshake"), 0);
    /* the server reads the alert and tells its owner */
    uv_timer_start(&v->guard, on_guard, 10000, 0);
    while (v->server.read_err == 0)
        uv_run(&v->loop, UV_RUN_ONCE);
    uv_timer_stop(&v->guard);
    assert_int_equal(v->server.read_err, UV_EPROTO);
    assert_int_equal(cstat(v, "listener.l.ssl.connection_error"), 1);
    wf_tls_ctx_free(cctx);
}

static void test_san_mismatch(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, "spiffe://cluster.local/ns/a/sa/other");
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, UV_EPROTO);
    assert_non_null(strstr(wp_tsock_failure_reason(v->client.sock),
                           ":CERTIFICATE_VERIFY_FAILED:verify cert failed: SAN matcher, "
                           "certificate SANs are [spiffe://cluster.local/ns/a/sa/server]"));
    assert_int_equal(cstat(v, "cluster.c.ssl.fail_verify_san"), 1);
    wf_tls_ctx_free(cctx);
}

/* TLS to a plaintext HTTP server: WRONG_VERSION_NUMBER. */
static void test_plaintext_server(void **state)
{
    env *v = *state;
    v->plain_answer = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, UV_EPROTO);
    assert_string_equal(wp_tsock_failure_reason(v->client.sock),
                        "TLS_error:|268435703:SSL routines:OPENSSL_internal:"
                        "WRONG_VERSION_NUMBER:TLS_error_end");
    assert_int_equal(cstat(v, "cluster.c.ssl.connection_error"), 1);
    wf_tls_ctx_free(cctx);
}

/* A server requiring a client certificate refuses a client without one. */
static void test_client_cert_required(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, &CA, true, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    uv_timer_start(&v->guard, on_guard, 10000, 0);
    while (v->server.read_err == 0)
        uv_run(&v->loop, UV_RUN_ONCE);
    uv_timer_stop(&v->guard);
    assert_int_equal(v->server.read_err, UV_EPROTO);
    assert_string_equal(wp_tsock_failure_reason(v->server.sock),
                        "TLS_error:|268435648:SSL routines:OPENSSL_internal:"
                        "PEER_DID_NOT_RETURN_A_CERTIFICATE:peer did not provide required client "
                        "certificate:TLS_error_end");
    assert_int_equal(cstat(v, "listener.l.ssl.fail_verify_no_cert"), 1);
    wf_tls_ctx_free(cctx);
}

/* close() while the handshake runs: on_connected(UV_ECANCELED), then on_closed, once. */
static void test_close_while_connecting(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    struct sockaddr_storage ss;
    uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&ss);
    uv_tcp_init(&v->loop, &v->listener);
    v->listener.data = v;
    assert_int_equal(uv_tcp_bind(&v->listener, (struct sockaddr *)&ss, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&v->listener, 8, on_conn), 0);
    int len = sizeof(ss);
    uv_tcp_getsockname(&v->listener, (struct sockaddr *)&ss, &len);
    end *c = &v->client;
    assert_int_equal(wp_raw_socket_init(&c->rs, &v->loop, &v->wreqs, &cbs, c), 0);
    c->sock = wp_tls_socket_wrap(&c->rs.base, &v->bufs, &v->dd, cctx, false, NULL, NULL);
    assert_int_equal(wp_tsock_connect(c->sock, &v->creq, (struct sockaddr *)&ss), 0);
    wp_tsock_close(c->sock);
    assert_int_equal(c->closed, 0);
    run_until_int(v, &c->closed, 1);
    assert_int_equal(c->connected, 1);
    assert_int_equal(c->connect_status, UV_ECANCELED);
    wf_tls_ctx_free(cctx);
}

/* Buffers of the worker's free list both TLS sockets hold. */
static size_t held(env *v)
{
    size_t n = 0;
    if (v->client.sock && !v->client.closed)
        n += wp_tls_socket_buffers(v->client.sock);
    if (v->accepted && v->server_ctx && !v->server.closed)
        n += wp_tls_socket_buffers(v->server.sock);
    return n;
}

/* Runs the loop until nothing happens for ms milliseconds' worth of turns. */
static void settle(env *v, int ms)
{
    uv_timer_t t;
    uv_timer_init(&v->loop, &t);
    uv_timer_start(&t, on_stop, (uint64_t)ms, 0);
    uv_run(&v->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&v->loop, UV_RUN_NOWAIT);
}

/* Three small buffers of one write travel as one record: the server's owner is asked for
 * room once and reads all of them in one go. An idle pair then holds no buffer of the
 * worker's (rooms and waiting ciphertext are all back on the free list). */
static void test_small_buffers_one_record(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, 0);
    assert_int_equal(wp_tsock_read_start(v->client.sock), 0);
    settle(v, 50); /* the tickets */
    int before = v->server.allocs;
    uv_buf_t b[3] = {uv_buf_init("GET / HTTP/1.1\r\n", 16), uv_buf_init("host: a\r\n", 9),
                     uv_buf_init("\r\n", 2)};
    assert_int_equal(wp_tsock_write(v->client.sock, b, 3), 0);
    run_until_len(v, &v->server, 27);
    assert_memory_equal(v->server.buf, "GET / HTTP/1.1\r\nhost: a\r\n\r\n", 27);
    assert_int_equal(v->server.allocs - before, 1);
    settle(v, 20);
    assert_int_equal(held(v), 0);
    wf_tls_ctx_free(cctx);
}

/* The server's owner does not read while the client writes 4 MiB: the kernel takes part of
 * it (a partial write), then nothing (EAGAIN), so the rest waits and write() says pending;
 * once the server reads, everything arrives in order, on_written(0) comes, and the buffers
 * go back to the free list. */
static void test_kernel_full_then_drained(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, 0);
    settle(v, 20);
    wp_tsock_read_stop(v->server.sock);
    size_t big = 4u << 20;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)(i * 13 + i / 4096);
    free(v->server.buf);
    v->server.buf = malloc(big);
    v->server.cap = big;
    uv_buf_t b = uv_buf_init(data, (unsigned)big);
    assert_int_equal(wp_tsock_write(v->client.sock, &b, 1), 1); /* more than the kernel takes */
    assert_true(held(v) >= 1);                                  /* the ciphertext waiting */
    memset(data, 0, 64); /* the caller's buffer is free at once */
    settle(v, 50);
    assert_int_equal(v->client.written, 0);
    assert_int_equal(wp_tsock_read_start(v->server.sock), 0);
    run_until_len(v, &v->server, big);
    run_until_int(v, &v->client.written, 1);
    assert_int_equal(v->client.write_status, 0);
    for (size_t i = 64; i < big; i += 4093)
        assert_int_equal(v->server.buf[i], (char)(i * 13 + i / 4096));
    assert_int_equal(v->server.buf[big - 1], (char)((big - 1) * 13 + (big - 1) / 4096));
    /* and the other way right after: the client's pending write is over */
    uv_buf_t a = uv_buf_init("ok", 2);
    assert_int_equal(wp_tsock_read_start(v->client.sock), 0);
    assert_true(wp_tsock_write(v->server.sock, &a, 1) >= 0);
    run_until_len(v, &v->client, 2);
    settle(v, 20);
    assert_int_equal(held(v), 0);
    free(data);
    wf_tls_ctx_free(cctx);
}

/* Records that arrived in one read while the owner stops after the first stay in the room
 * (held, with the raw socket stopped); read_start delivers them from the loop with no new
 * bytes from the peer, and the room goes back once they are read. */
static void test_records_left_in_room(void **state)
{
    env *v = *state;
    v->server_ctx = mkctx(true, &SRV, NULL, false, NULL);
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_int_equal(v->client.connect_status, 0);
    settle(v, 20);
    v->server.cap = 5; /* room for the first record only */
    const char *words[] = {"hello", "world", "again"};
    for (int i = 0; i < 3; i++) {
        uv_buf_t b = uv_buf_init((char *)words[i], 5);
        assert_int_equal(wp_tsock_write(v->client.sock, &b, 1), 0);
    }
    run_until_int(v, &v->server.enobufs, 1);
    assert_int_equal(v->server.len, 5);
    assert_memory_equal(v->server.buf, "hello", 5);
    assert_int_equal(held(v), 1); /* the room, holding "world" and "again" */
    v->server.cap = 256;
    assert_int_equal(wp_tsock_read_start(v->server.sock), 0);
    assert_int_equal(v->server.len, 5); /* never from inside read_start */
    run_until_len(v, &v->server, 15);
    assert_memory_equal(v->server.buf, "helloworldagain", 15);
    assert_int_equal(held(v), 0);
    /* reading goes on with new bytes */
    uv_buf_t b = uv_buf_init("more", 4);
    assert_int_equal(wp_tsock_write(v->client.sock, &b, 1), 0);
    run_until_len(v, &v->server, 19);
    wf_tls_ctx_free(cctx);
}

/* The peer closes after the ClientHello: a connect failure, no buffer kept. */
static void test_peer_closes_mid_handshake(void **state)
{
    env *v = *state;
    v->plain_close = true;
    wf_tls_ctx *cctx = mkctx(false, NULL, &CA, false, NULL);
    start_pair(v, cctx);
    assert_true(v->client.connect_status < 0);
    assert_int_equal(cstat(v, "cluster.c.ssl.handshake"), 0);
    settle(v, 20);
    assert_int_equal(held(v), 0);
    wf_tls_ctx_free(cctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mtls_exchange, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_room_then_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tickets_take_no_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_ca_is_connect_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_san_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plaintext_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_cert_required, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_while_connecting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_buffers_one_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_full_then_drained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_left_in_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_closes_mid_handshake, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
