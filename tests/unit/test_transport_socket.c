/*
 * test_transport_socket.c - the raw TCP transport socket (src/proxy/net/raw_socket.h) over a
 * loopback pair on a real libuv loop: connect, reads into the owner's room, vectored writes
 * (one left pending with its callback), shutdown seen as end of stream by the peer, the close
 * callback, peer and local addresses as "ip:port" / "[v6]:port", ssl() NULL.
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

/* One end: a raw socket and what its callbacks saw. */
typedef struct end {
    wp_raw_socket rs;
    char *buf; /* read room */
    size_t cap, len;
    bool no_room; /* alloc gives none */
    int eof, enobufs, read_err;
    int written, write_status;
    int connected, connect_status;
    int closed;
    bool in_close; /* inside wp_tsock_close: on_closed must not come from there */
} end;

typedef struct env {
    uv_loop_t loop;
    wp_wreq_pool wreqs;
    uv_tcp_t listener;
    end client, server;
    bool accepted;
    uv_connect_t creq;
    uv_timer_t guard;
    wp_deferred dd; /* for unread bytes (closed in teardown when used) */
} env;

static void e_alloc(void *owner, uv_buf_t *b)
{
    end *e = owner;
    if (e->no_room || e->len == e->cap) {
        *b = uv_buf_init(NULL, 0);
        return;
    }
    *b = uv_buf_init(e->buf + e->len, (unsigned)(e->cap - e->len));
}

static void e_read(void *owner, ssize_t n)
{
    end *e = owner;
    if (n > 0)
        e->len += (size_t)n;
    else if (n == UV_EOF)
        e->eof++;
    else if (n == UV_ENOBUFS)
        e->enobufs++;
    else
        e->read_err = (int)n;
}

static void e_written(void *owner, int status)
{
    end *e = owner;
    e->written++;
    e->write_status = status;
}

static void e_connected(void *owner, int status)
{
    end *e = owner;
    e->connected++;
    e->connect_status = status;
}

static void e_closed(void *owner)
{
    end *e = owner;
    assert_false(e->in_close);
    e->closed++;
}

static const wp_tsock_cbs cbs = {
    .alloc = e_alloc,
    .on_read = e_read,
    .on_written = e_written,
    .on_connected = e_connected,
    .on_closed = e_closed,
};

static wp_tsock *ts(end *e)
{
    return &e->rs.base;
}

static void on_conn(uv_stream_t *l, int status)
{
    env *v = l->data;
    assert_int_equal(status, 0);
    assert_int_equal(wp_raw_socket_init(&v->server.rs, &v->loop, &v->wreqs, &cbs, &v->server), 0);
    assert_int_equal(wp_raw_socket_accept(&v->server.rs, l), 0);
    v->accepted = true;
}

static void on_guard(uv_timer_t *t)
{
    (void)t;
    fail_msg("the test timed out");
}

/* Runs the loop until *flag becomes true (or the 10 s guard fails the test). */
static void run_until(env *v, const bool *flag)
{
    uv_timer_start(&v->guard, on_guard, 10000, 0);
    while (!*flag)
        uv_run(&v->loop, UV_RUN_ONCE);
    uv_timer_stop(&v->guard);
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

/* A connected pair on addr ("127.0.0.1" or "::1"); false when the family is not there. */
static bool pair(env *v, const char *ip)
{
    struct sockaddr_storage ss;
    if (strchr(ip, ':'))
        uv_ip6_addr(ip, 0, (struct sockaddr_in6 *)&ss);
    else
        uv_ip4_addr(ip, 0, (struct sockaddr_in *)&ss);
    uv_tcp_init(&v->loop, &v->listener);
    v->listener.data = v;
    if (uv_tcp_bind(&v->listener, (struct sockaddr *)&ss, 0) != 0 ||
        uv_listen((uv_stream_t *)&v->listener, 8, on_conn) != 0)
        return false;
    int len = sizeof(ss);
    uv_tcp_getsockname(&v->listener, (struct sockaddr *)&ss, &len);
    assert_int_equal(wp_raw_socket_init(&v->client.rs, &v->loop, &v->wreqs, &cbs, &v->client), 0);
    assert_int_equal(wp_tsock_connect(ts(&v->client), &v->creq, (struct sockaddr *)&ss), 0);
    run_until_int(v, &v->client.connected, 1);
    assert_int_equal(v->client.connect_status, 0);
    run_until(v, &v->accepted);
    return true;
}

static int setup(void **state)
{
    env *v = calloc(1, sizeof(*v));
    assert_non_null(v);
    assert_int_equal(uv_loop_init(&v->loop), 0);
    uv_timer_init(&v->loop, &v->guard);
    v->client.cap = v->server.cap = 64 * 1024;
    v->client.buf = malloc(v->client.cap);
    v->server.buf = malloc(v->server.cap);
    assert_non_null(v->client.buf);
    assert_non_null(v->server.buf);
    *state = v;
    return 0;
}

static void close_end(env *v, end *e)
{
    if (e->rs.base.ops && !e->rs.closing) {
        e->in_close = true;
        wp_tsock_close(ts(e));
        e->in_close = false;
    }
    (void)v;
}

static int teardown(void **state)
{
    env *v = *state;
    close_end(v, &v->client);
    if (v->accepted)
        close_end(v, &v->server);
    if (!uv_is_closing((uv_handle_t *)&v->listener) && v->listener.loop)
        uv_close((uv_handle_t *)&v->listener, NULL);
    uv_close((uv_handle_t *)&v->guard, NULL);
    wp_deferred_close(&v->dd);
    uv_run(&v->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&v->loop), 0);
    wp_wreq_pool_free(&v->wreqs);
    free(v->client.buf);
    free(v->server.buf);
    free(v);
    return 0;
}

static void test_read_and_vectored_write(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    uv_buf_t one = uv_buf_init("hello", 5);
    assert_int_equal(wp_tsock_write(ts(&v->client), &one, 1), 0); /* taken at once */
    run_until_len(v, &v->server, 5);
    assert_memory_equal(v->server.buf, "hello", 5);
    uv_buf_t vec[3] = {uv_buf_init("a", 1), uv_buf_init("bc", 2), uv_buf_init("def", 3)};
    assert_int_equal(wp_tsock_write(ts(&v->client), vec, 3), 0);
    run_until_len(v, &v->server, 11);
    assert_memory_equal(v->server.buf, "helloabcdef", 11);
    assert_int_equal(v->client.written, 0); /* nothing was pending: no callback */
    /* the other way, and a control write that queues nothing */
    assert_int_equal(wp_tsock_read_start(ts(&v->client)), 0);
    uv_buf_t c = uv_buf_init("HTTP/1.1 100 Continue\r\n\r\n", 25);
    assert_int_equal(wp_tsock_try_write(ts(&v->server), &c, 1), 25);
    run_until_len(v, &v->client, 25);
    assert_memory_equal(v->client.buf, c.base, 25);
}

static void test_pending_write_completes(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    /* far more than the socket buffers hold while the server does not read */
    size_t part = 4u * 1024 * 1024;
    char *a = malloc(part), *b = malloc(part);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < part; i++) {
        a[i] = (char)('a' + i % 26);
        b[i] = (char)('A' + i % 26);
    }
    uv_buf_t vec[2] = {uv_buf_init(a, (unsigned)part), uv_buf_init(b, (unsigned)part)};
    assert_int_equal(wp_tsock_write(ts(&v->client), vec, 2), 1);
    assert_int_equal(v->client.written, 0); /* never from inside write */
    /* the peer drains it: the callback comes once, with success */
    free(v->server.buf);
    v->server.cap = 2 * part;
    v->server.buf = malloc(v->server.cap);
    assert_non_null(v->server.buf);
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    run_until_int(v, &v->client.written, 1);
    assert_int_equal(v->client.write_status, 0);
    run_until_len(v, &v->server, 2 * part);
    assert_memory_equal(v->server.buf, a, part);
    assert_memory_equal(v->server.buf + part, b, part);
    assert_int_equal(v->client.written, 1);
    free(a);
    free(b);
}

static void test_shutdown_is_eof_and_close_callback(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    assert_int_equal(wp_tsock_read_start(ts(&v->client)), 0);
    uv_buf_t one = uv_buf_init("last", 4);
    assert_int_equal(wp_tsock_write(ts(&v->client), &one, 1), 0);
    assert_int_equal(wp_tsock_shutdown(ts(&v->client)), 0);
    run_until_int(v, &v->server.eof, 1);
    assert_int_equal(v->server.len, 4); /* the bytes before the end of stream */
    assert_int_equal(v->server.read_err, 0);
    /* the write side only: the client still reads */
    uv_buf_t back = uv_buf_init("ok", 2);
    assert_int_equal(wp_tsock_write(ts(&v->server), &back, 1), 0);
    run_until_len(v, &v->client, 2);
    assert_memory_equal(v->client.buf, "ok", 2);
    /* close: the callback comes from the loop, once */
    close_end(v, &v->server);
    assert_int_equal(v->server.closed, 0);
    assert_int_equal(wp_tsock_write(ts(&v->server), &back, 1), -1); /* closed: refused */
    run_until_int(v, &v->server.closed, 1);
    run_until_int(v, &v->client.eof, 1); /* the peer sees the close */
    close_end(v, &v->client);
    run_until_int(v, &v->client.closed, 1);
    uv_run(&v->loop, UV_RUN_NOWAIT);
    assert_int_equal(v->server.closed, 1);
    assert_int_equal(v->client.closed, 1);
}

static void test_no_room_stops_reading(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    v->server.no_room = true;
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    uv_buf_t one = uv_buf_init("x", 1);
    assert_int_equal(wp_tsock_write(ts(&v->client), &one, 1), 0);
    run_until_int(v, &v->server.enobufs, 1);
    for (int i = 0; i < 5; i++)
        uv_run(&v->loop, UV_RUN_NOWAIT);
    assert_int_equal(v->server.enobufs, 1); /* reading stopped: asked once */
    v->server.no_room = false;
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    run_until_len(v, &v->server, 1);
    assert_int_equal(v->server.buf[0], 'x');
}

static void check_addr(const char *got, const char *ip_prefix)
{
    size_t n = strlen(ip_prefix);
    assert_memory_equal(got, ip_prefix, n);
    const char *p = got + n;
    assert_true(*p >= '1' && *p <= '9');
    while (*p >= '0' && *p <= '9')
        p++;
    assert_int_equal(*p, '\0');
}

static void test_addresses_and_ssl(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    char cl[64], cp[64], sl[64], sp[64];
    assert_int_equal(wp_tsock_address(ts(&v->client), false, cl, sizeof(cl)), 0);
    assert_int_equal(wp_tsock_address(ts(&v->client), true, cp, sizeof(cp)), 0);
    assert_int_equal(wp_tsock_address(ts(&v->server), false, sl, sizeof(sl)), 0);
    assert_int_equal(wp_tsock_address(ts(&v->server), true, sp, sizeof(sp)), 0);
    check_addr(cl, "127.0.0.1:");
    check_addr(sl, "127.0.0.1:");
    assert_string_equal(cl, sp); /* each end's view of the other */
    assert_string_equal(cp, sl);
    assert_null(wp_tsock_ssl_info(ts(&v->client)));
    assert_null(wp_tsock_ssl_info(ts(&v->server)));
    const wp_tsock_ssl *s = wp_tsock_ssl_or_empty(ts(&v->server));
    assert_string_equal(s->alpn, "");
    assert_string_equal(s->sni, "");
    assert_string_equal(s->peer_uri_san, "");
    assert_string_equal(s->version, "");
    assert_string_equal(s->cipher, "");
}

static void test_addresses_v6(void **state)
{
    env *v = *state;
    if (!pair(v, "::1")) {
        skip(); /* no IPv6 loopback here */
        return;
    }
    char cl[64], sp[64];
    assert_int_equal(wp_tsock_address(ts(&v->client), false, cl, sizeof(cl)), 0);
    assert_int_equal(wp_tsock_address(ts(&v->server), true, sp, sizeof(sp)), 0);
    check_addr(cl, "[::1]:");
    assert_string_equal(cl, sp);
}

static void test_connect_refused(void **state)
{
    env *v = *state;
    /* a port nobody listens on: bind one, note it, close it */
    uv_tcp_t probe;
    struct sockaddr_storage ss;
    uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&ss);
    uv_tcp_init(&v->loop, &probe);
    assert_int_equal(uv_tcp_bind(&probe, (struct sockaddr *)&ss, 0), 0);
    int len = sizeof(ss);
    uv_tcp_getsockname(&probe, (struct sockaddr *)&ss, &len);
    uv_close((uv_handle_t *)&probe, NULL);
    uv_run(&v->loop, UV_RUN_NOWAIT);
    assert_int_equal(wp_raw_socket_init(&v->client.rs, &v->loop, &v->wreqs, &cbs, &v->client), 0);
    assert_int_equal(wp_tsock_connect(ts(&v->client), &v->creq, (struct sockaddr *)&ss), 0);
    run_until_int(v, &v->client.connected, 1);
    assert_int_equal(v->client.connect_status, UV_ECONNREFUSED);
    char a[64];
    assert_true(wp_tsock_address(ts(&v->client), true, a, sizeof(a)) < 0);
    assert_string_equal(a, "-");
}

/* Closing with a write pending: its callback comes (cancelled), then on_closed. */
static void test_close_with_pending_write(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    size_t big = 16u * 1024 * 1024;
    char *a = calloc(1, big);
    assert_non_null(a);
    uv_buf_t b = uv_buf_init(a, (unsigned)big);
    assert_int_equal(wp_tsock_write(ts(&v->client), &b, 1), 1);
    close_end(v, &v->client);
    run_until_int(v, &v->client.closed, 1);
    assert_int_equal(v->client.written, 1);
    assert_true(v->client.write_status < 0);
    free(a);
}

/* Bytes read before the owner took the socket come first, in as many reads as its room
 * allows, never from inside read_start; then the kernel's. */
static void test_unread_bytes_come_first(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    wp_deferred *dd = &v->dd;
    assert_int_equal(wp_deferred_init(dd, &v->loop), 0);
    uv_buf_t w = uv_buf_init("world", 5);
    assert_int_equal(wp_tsock_write(ts(&v->client), &w, 1), 0); /* already in the kernel */
    assert_int_equal(wp_raw_socket_unread(&v->server.rs, dd, (const unsigned char *)"hello ", 6),
                     0);
    v->server.cap = 4; /* the first room holds 4 bytes: the rest comes in a second read */
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    assert_int_equal(v->server.len, 0); /* not from inside read_start */
    run_until_len(v, &v->server, 4);
    assert_memory_equal(v->server.buf, "hell", 4);
    assert_int_equal(v->server.enobufs, 1); /* the room ran out: reading stopped */
    v->server.cap = 64 * 1024;
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0);
    run_until_len(v, &v->server, 11);
    assert_memory_equal(v->server.buf, "hello world", 11);
}

/* A socket closed while its unread bytes wait frees them (ASan's leak check). */
static void test_unread_then_close(void **state)
{
    env *v = *state;
    assert_true(pair(v, "127.0.0.1"));
    wp_deferred *dd = &v->dd;
    assert_int_equal(wp_deferred_init(dd, &v->loop), 0);
    assert_int_equal(wp_raw_socket_unread(&v->server.rs, dd, (const unsigned char *)"abc", 3), 0);
    assert_int_equal(wp_tsock_read_start(ts(&v->server)), 0); /* queued */
    close_end(v, &v->server);                                 /* before the pass */
    run_until_int(v, &v->server.closed, 1);
    assert_int_equal(v->server.len, 0);
    assert_int_equal(wp_raw_socket_unread(&v->client.rs, dd, (const unsigned char *)"x", 1), 0);
    close_end(v, &v->client); /* never queued */
    run_until_int(v, &v->client.closed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_and_vectored_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_write_completes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_is_eof_and_close_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_room_stops_reading, setup, teardown),
        cmocka_unit_test_setup_teardown(test_addresses_and_ssl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_addresses_v6, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_pending_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unread_bytes_come_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unread_then_close, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
