/*
 * test_status.c - the status server (src/proxy/agent/status.h) on a real libuv loop running in a
 * second thread, probed by plain blocking sockets from the test thread: /healthz/ready 200 and
 * 503 with the reason, /stats/prometheus, 404, 405, HEAD, keep-alive and pipelining, oversize
 * and malformed requests (answered, then closed), the idle timeout, the connection cap, many
 * probe connections without leaks, and address parsing / bind errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/h1_parser.h"
#include "proxy/agent/status.h"

/* ---------- the server side, on its own thread ---------- */

typedef struct {
    uv_loop_t loop;
    uv_async_t stop;
    pthread_t thread;
    wp_status *srv;
    int port;
    atomic_int ready;
    atomic_int probes;
    atomic_size_t conns_at_probe; /* wp_status_connections() seen by the last probe */
} fixture;

static bool cb_ready(void *ud, char *reason, size_t cap)
{
    fixture *f = ud;
    atomic_fetch_add(&f->probes, 1);
    atomic_store(&f->conns_at_probe, wp_status_connections(f->srv));
    if (atomic_load(&f->ready))
        return true;
    snprintf(reason, cap,
             "config not received from XDS server (is Istiod running?): cds "
             "updates: 0 successful, 0 rejected; lds updates: 0 successful, 0 "
             "rejected");
    return false;
}

static void cb_prom(void *ud, wf_strbuf *out)
{
    (void)ud;
    wf_strbuf_puts(out, "# TYPE envoy_control_plane_connected_state gauge\n"
                        "envoy_control_plane_connected_state{} 1\n");
}

static void on_stop(uv_async_t *a)
{
    fixture *f = a->data;
    wp_status_close(f->srv);
    uv_close((uv_handle_t *)a, NULL);
}

static void *loop_main(void *arg)
{
    fixture *f = arg;
    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

static fixture *start_with(wp_status_opts o, bool prom)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(uv_async_init(&f->loop, &f->stop, on_stop), 0);
    f->stop.data = f;
    wp_status_callbacks cb = {
        .ready = cb_ready, .render_prometheus = prom ? cb_prom : NULL, .ud = f};
    wf_strbuf err = {0};
    if (!o.address)
        o.address = "127.0.0.1:0";
    f->srv = wp_status_start(&f->loop, &o, &cb, &err);
    if (!f->srv)
        fail_msg("start: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    f->port = wp_status_port(f->srv);
    assert_true(f->port > 0);
    assert_int_equal(pthread_create(&f->thread, NULL, loop_main, f), 0);
    return f;
}

static fixture *start(void)
{
    wp_status_opts o = {0};
    return start_with(o, true);
}

/* Closes the server from its loop; the loop must then end by itself (nothing left open)
 * and the loop close must succeed: every handle was closed, so nothing leaked. */
static void stop(fixture *f)
{
    uv_async_send(&f->stop);
    pthread_join(f->thread, NULL);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
}

/* ---------- the client side ---------- */

/* Bytes received and not yet parsed. Responses are read whole, one connection at a time, so
 * one buffer serves every connection; dial() empties it. */
static char rbuf[65536];
static size_t rlen;

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    rlen = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the server may have closed (oversize tests) */
        s += w;
        n -= (size_t)w;
    }
}

typedef struct {
    int status;
    char body[4096];
    size_t body_len;
    char head[2048];
    bool keep_alive;
} response;

/* Reads one response (HEAD: no body) with the project's parser in response mode. */
static response read_response(int fd, bool head)
{
    char *buf = rbuf;
    size_t len = rlen;
    response r = {0};
    h1_header hdrs[32];
    h1_parser p;
    h1_parser_init(&p, H1_RESPONSE, hdrs, 32, 0);
    if (head)
        h1_parser_set_answers(&p, H1_ANSWERS_HEAD);
    for (;;) {
        h1_event ev;
        size_t used = h1_parse(&p, buf, len, &ev);
        if (ev == H1_EV_HEADERS) {
            r.status = p.msg.status;
            r.keep_alive = p.msg.keep_alive;
            snprintf(r.head, sizeof(r.head), "%.*s", (int)p.msg.head_len, buf);
        } else if (ev == H1_EV_BODY) {
            assert_true(r.body_len + p.data_len < sizeof(r.body));
            memcpy(r.body + r.body_len, p.data, p.data_len);
            r.body_len += p.data_len;
        }
        memmove(buf, buf + used, len - used);
        len -= used;
        rlen = len;
        if (ev == H1_EV_DONE)
            return r;
        if (ev == H1_EV_ERROR)
            fail_msg("bad response (%s): %.*s", h1_error_name(p.error), (int)len, buf);
        if (ev != H1_EV_NEED_MORE)
            continue;
        ssize_t n = recv(fd, buf + len, sizeof(rbuf) - len, 0);
        if (n <= 0) {
            ev = h1_parse_eof(&p);
            assert_int_equal(ev, H1_EV_DONE);
            return r;
        }
        len += (size_t)n;
        rlen = len;
    }
}

/* True when the server closes the connection (EOF or reset) within 5 s with no more bytes. */
static bool closed_by_server(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static response exchange(int port, const char *req, bool head)
{
    int fd = dial(port);
    send_all(fd, req, strlen(req));
    response r = read_response(fd, head);
    close(fd);
    return r;
}

static bool has_header(const response *r, const char *line)
{
    return strstr(r->head, line) != NULL;
}

/* ---------- tests ---------- */

static void test_ready_200_and_503(void **state)
{
    (void)state;
    fixture *f = start();
    response r = exchange(f->port, "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 503);
    r.body[r.body_len] = 0;
    assert_string_equal(r.body, "config not received from XDS server (is Istiod running?): cds "
                                "updates: 0 successful, 0 rejected; lds updates: 0 successful, "
                                "0 rejected\n");
    atomic_store(&f->ready, 1);
    r = exchange(f->port, "GET /healthz/ready?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    assert_true(has_header(&r, "content-length: 0\r\n"));
    stop(f);
}

static void test_prometheus_and_404(void **state)
{
    (void)state;
    fixture *f = start();
    response r = exchange(f->port, "GET /stats/prometheus HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 200);
    r.body[r.body_len] = 0;
    assert_non_null(strstr(r.body, "envoy_control_plane_connected_state{} 1\n"));
    assert_true(has_header(&r, "content-type: text/plain; version=0.0.4"));
    r = exchange(f->port, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 404);
    r = exchange(f->port, "GET /healthz/readyX HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 404);
    r = exchange(f->port, "POST /healthz/ready HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\nab",
                 false);
    assert_int_equal(r.status, 405);
    assert_true(has_header(&r, "allow: GET, HEAD\r\n"));
    stop(f);

    /* the gateway port (15021) serves readiness only; no callback -> no metrics either */
    wp_status_opts o = {.readiness_only = true};
    f = start_with(o, true);
    r = exchange(f->port, "GET /stats/prometheus HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 404);
    stop(f);
    o.readiness_only = false;
    f = start_with(o, false);
    r = exchange(f->port, "GET /stats/prometheus HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 404);
    r = exchange(f->port, "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n", false);
    assert_int_equal(r.status, 503);
    stop(f);
}

/* HEAD: the GET's status and content-length, no body bytes on the wire. */
static void test_head(void **state)
{
    (void)state;
    fixture *f = start();
    int fd = dial(f->port);
    const char *req = "HEAD /healthz/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    send_all(fd, req, strlen(req));
    response r = read_response(fd, true);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.body_len, 0);
    assert_null(strstr(r.head, "content-length: 0\r\n"));
    assert_true(has_header(&r, "connection: close\r\n"));
    assert_true(closed_by_server(fd));
    close(fd);
    stop(f);
}

/* HTTP/1.1 keeps the connection; two pipelined requests get two answers in order. */
static void test_keep_alive_and_pipelining(void **state)
{
    (void)state;
    fixture *f = start();
    int fd = dial(f->port);
    const char *one = "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, one, strlen(one));
    response r = read_response(fd, false);
    assert_int_equal(r.status, 503);
    assert_true(r.keep_alive);
    atomic_store(&f->ready, 1);
    const char *two = "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                      "HEAD /healthz/ready HTTP/1.0\r\n\r\n";
    send_all(fd, two, strlen(two));
    assert_int_equal(read_response(fd, false).status, 200);
    assert_int_equal(read_response(fd, false).status, 404);
    r = read_response(fd, true);
    assert_int_equal(r.status, 200);
    assert_true(has_header(&r, "HTTP/1.0 200 OK\r\n"));
    assert_true(closed_by_server(fd)); /* HTTP/1.0 without keep-alive */
    close(fd);
    stop(f);
}

/* A head larger than the limit: 431, then closed. A malformed request: 400, then closed. */
static void test_oversize_and_malformed(void **state)
{
    (void)state;
    fixture *f = start();
    size_t n = 3 * WP_STATUS_DEFAULT_MAX_REQUEST_BYTES;
    char *big = malloc(n + 64);
    assert_non_null(big);
    int off = snprintf(big, n + 64, "GET /healthz/ready HTTP/1.1\r\nX-Big: ");
    memset(big + off, 'a', n - (size_t)off);
    strcpy(big + n, "\r\n\r\n");
    int fd = dial(f->port);
    send_all(fd, big, strlen(big));
    response r = read_response(fd, false);
    assert_int_equal(r.status, 431);
    assert_true(has_header(&r, "connection: close\r\n"));
    assert_true(closed_by_server(fd));
    close(fd);
    free(big);

    fd = dial(f->port);
    const char *bad = "GET /healthz/ready HTTP/1.1\r\nHost : x\r\n\r\n";
    send_all(fd, bad, strlen(bad));
    r = read_response(fd, false);
    assert_int_equal(r.status, 400);
    assert_true(closed_by_server(fd));
    close(fd);
    stop(f);
}

/* A client that connects and sends nothing (or half a head) is closed after the idle timeout. */
static void test_idle_timeout(void **state)
{
    (void)state;
    wp_status_opts o = {.idle_timeout_ms = 100};
    fixture *f = start_with(o, true);
    int fd = dial(f->port);
    send_all(fd, "GET /healthz/re", 15);
    assert_true(closed_by_server(fd));
    close(fd);
    stop(f);
}

/* Beyond max_connections, new connections are closed at once; the old ones still work. */
static void test_connection_cap(void **state)
{
    (void)state;
    wp_status_opts o = {.max_connections = 2};
    fixture *f = start_with(o, true);
    const char *req = "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n";
    int a = dial(f->port), b = dial(f->port);
    send_all(a, req, strlen(req));
    assert_int_equal(read_response(a, false).status, 503);
    send_all(b, req, strlen(req));
    assert_int_equal(read_response(b, false).status, 503);
    int c = dial(f->port);
    assert_true(closed_by_server(c));
    close(c);
    send_all(a, req, strlen(req));
    assert_int_equal(read_response(a, false).status, 503);
    close(a);
    close(b);
    stop(f);
}

/* Many probes, many of them abandoned half-way: every connection is released. */
static void test_many_probes_no_leak(void **state)
{
    (void)state;
    fixture *f = start();
    enum { N = 200 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        fds[i] = dial(f->port);
        const char *req = i % 3 == 0   ? "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n"
                          : i % 3 == 1 ? "GET /healthz/ready HTTP/1.1\r\nConnection: close\r\n\r\n"
                                       : "GET /healthz/re";
        send_all(fds[i], req, strlen(req));
    }
    for (int i = 0; i < N; i++) {
        if (i % 3 != 2)
            assert_int_equal(read_response(fds[i], false).status, 503);
        close(fds[i]);
    }
    /* The server sees the closes asynchronously; probe until only the probe itself is open. */
    size_t open = N;
    for (int tries = 0; tries < 200 && open != 1; tries++) {
        exchange(f->port, "GET /healthz/ready HTTP/1.1\r\nHost: x\r\n\r\n", false);
        open = atomic_load(&f->conns_at_probe);
        if (open != 1)
            usleep(10000);
    }
    assert_int_equal(open, 1);
    assert_true(atomic_load(&f->probes) >= 2 * N / 3);
    stop(f);
}

static void test_addresses_and_bind_errors(void **state)
{
    (void)state;
    struct sockaddr_storage sa;
    wf_strbuf err = {0};
    assert_int_equal(wp_status_parse_address("127.0.0.1:15020", &sa, NULL), 0);
    assert_int_equal(sa.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 15020);
    assert_int_equal(wp_status_parse_address("[::1]:0", &sa, NULL), 0);
    assert_int_equal(sa.ss_family, AF_INET6);
    assert_int_equal(wp_status_parse_address("0.0.0.0:15021", &sa, NULL), 0);
    const char *bad[] = {
        "localhost:1", "1.2.3.4", "1.2.3.4:", "1.2.3.4:70000", "1.2.3.4:-1", "[::1:80",
        ":80",         "",        NULL};
    for (size_t i = 0; bad[i]; i++)
        assert_int_equal(wp_status_parse_address(bad[i], &sa, NULL), -1);
    assert_int_equal(wp_status_parse_address(NULL, &sa, &err), -1);
    wf_strbuf_reset(&err);
    assert_int_equal(wp_status_parse_address("nope", &sa, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "invalid status address \"nope\": want IP:PORT or [IPv6]:PORT");
    wf_strbuf_reset(&err);
    assert_int_equal(wp_status_parse_address("[::1:80", &sa, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "invalid status address \"[::1:80\": want IP:PORT or [IPv6]:PORT");
    wf_strbuf_free(&err);

    /* a port in use: NULL and a message; the loop is left clean */
    fixture *f = start();
    uv_loop_t loop;
    uv_loop_init(&loop);
    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
    wp_status_opts o = {.address = addr};
    wp_status_callbacks cb = {.ready = cb_ready, .ud = f};
    wf_strbuf e2 = {0};
    assert_null(wp_status_start(&loop, &o, &cb, &e2));
    assert_non_null(strstr(wf_strbuf_cstr(&e2), "cannot listen on status address 127.0.0.1:"));
    assert_non_null(strstr(wf_strbuf_cstr(&e2), "address already in use"));
    wf_strbuf_free(&e2);
    wp_status_callbacks none = {0};
    assert_null(wp_status_start(&loop, &o, &none, &e2));
    wf_strbuf_free(&e2);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    stop(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_200_and_503),
        cmocka_unit_test(test_prometheus_and_404),
        cmocka_unit_test(test_head),
        cmocka_unit_test(test_keep_alive_and_pipelining),
        cmocka_unit_test(test_oversize_and_malformed),
        cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_connection_cap),
        cmocka_unit_test(test_many_probes_no_leak),
        cmocka_unit_test(test_addresses_and_bind_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
