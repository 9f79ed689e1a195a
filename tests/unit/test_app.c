/*
 * test_app.c - weft-app pieces a user relies on: address and number parsing of the command
 * line, the RFC 6455 accept value, and one in-process server round trip (keep-alive,
 * pipelining, /count) with a clean stop. The full endpoint suite runs against the binary in
 * tests/integration/test_app.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "app/app.h"

static void test_parse_addr(void **state)
{
    struct sockaddr_storage ss;
    assert_int_equal(wf_app_parse_addr("127.0.0.1:8080", &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 8080);
    assert_int_equal(wf_app_parse_addr("[::1]:0", &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(wf_app_parse_addr("0.0.0.0:65535", &ss), 0);
    const char *bad[] = {"127.0.0.1",  "127.0.0.1:",  "127.0.0.1:65536", ":80",
                         "::1:80",     "[::1]80",     "[::1]:x",         "localhost:80",
                         "1.2.3.4:-1", "1.2.3.4:8 0", "[]:80",           "1.2.3:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(wf_app_parse_addr(bad[i], &ss), -1);
}

static void test_parse_u64(void **state)
{
    uint64_t v = 7;
    assert_true(wf_app_parse_u64("0", 1, 10, &v));
    assert_int_equal(v, 0);
    assert_true(wf_app_parse_u64("599", 3, 599, &v));
    assert_int_equal(v, 599);
    assert_false(wf_app_parse_u64("600", 3, 599, &v));
    assert_false(wf_app_parse_u64("", 0, 10, &v));
    assert_false(wf_app_parse_u64("-1", 2, 10, &v));
    assert_false(wf_app_parse_u64("1a", 2, 100, &v));
    assert_false(wf_app_parse_u64("18446744073709551616", 20, UINT64_MAX, &v));
    assert_true(wf_app_parse_u64("18446744073709551615", 20, UINT64_MAX, &v));
    assert_true(v == UINT64_MAX);
}

static void test_ws_accept_rfc6455_example(void **state)
{
    char out[29];
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    assert_int_equal(wf_app_ws_accept(key, strlen(key), out), 0);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="); /* RFC 6455 §1.3 */
}

/* ---- in-process round trip: the server runs on this thread's loop, a client thread
 * talks to it with blocking sockets and stops it through a uv_async. ---- */

struct round_trip {
    int port;
    uv_async_t done;
    struct wf_app *app;
    char reply[4096];
    size_t reply_len;
};

static void *client_main(void *arg)
{
    struct round_trip *rt = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)rt->port)};
    struct timeval tv = {.tv_sec = 10};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        static const char req[] = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /count HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
        if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
            ssize_t n;
            while (rt->reply_len < sizeof rt->reply - 1 &&
                   (n = read(fd, rt->reply + rt->reply_len, sizeof rt->reply - 1 - rt->reply_len)) >
                       0)
                rt->reply_len += (size_t)n;
        }
    }
    if (fd >= 0)
        close(fd);
    uv_async_send(&rt->done);
    return NULL;
}

static void on_done(uv_async_t *a)
{
    struct round_trip *rt = a->data;
    wf_app_stop(rt->app);
    uv_close((uv_handle_t *)a, NULL);
}

static void test_round_trip_pipelined(void **state)
{
    uv_loop_t loop;
    struct round_trip rt = {0};
    struct wf_app_config cfg = {.name = "unit", .seed = 1};
    char bound[96];
    pthread_t th;
    assert_int_equal(uv_loop_init(&loop), 0);
    rt.app = wf_app_new(&loop, &cfg);
    assert_non_null(rt.app);
    assert_int_equal(wf_app_listen(rt.app, "127.0.0.1:0", bound, sizeof bound), 0);
    assert_int_equal(strncmp(bound, "127.0.0.1:", 10), 0);
    rt.port = atoi(bound + 10);
    assert_true(rt.port > 0);
    assert_int_equal(wf_app_listen(rt.app, "not an address", bound, sizeof bound), UV_EINVAL);
    rt.done.data = &rt;
    assert_int_equal(uv_async_init(&loop, &rt.done, on_done), 0);
    assert_int_equal(pthread_create(&th, NULL, client_main, &rt), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    assert_int_equal(uv_loop_close(&loop), 0); /* every handle was closed */

    rt.reply[rt.reply_len] = '\0';
    const char *ok = strstr(rt.reply, "HTTP/1.1 200 OK\r\n");
    const char *nf = strstr(rt.reply, "HTTP/1.1 404 Not Found\r\n");
    const char *cnt = strstr(rt.reply, "{\"requests\":2}");
    assert_non_null(ok);
    assert_non_null(nf);
    assert_non_null(cnt);
    assert_true(ok < nf && nf < cnt); /* answered in order */
    assert_non_null(strstr(rt.reply, "x-weft-app: unit\r\n"));
    assert_non_null(strstr(rt.reply, "Connection: close\r\n"));
    assert_int_equal(wf_app_request_count(rt.app), 2); /* /count does not count itself */
    wf_app_free(rt.app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_addr),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_ws_accept_rfc6455_example),
        cmocka_unit_test(test_round_trip_pipelined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
