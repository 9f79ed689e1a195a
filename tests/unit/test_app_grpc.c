/*
 * test_app_grpc.c - weft-app's gRPC service pieces (src/app/app_grpc.h): the hand-written
 * protobuf of shop.EchoRequest / EchoResponse and grpc.health.v1, their Length-Prefixed-Message
 * framing, what an Echo call does from its request and headers, grpc-go's UNIMPLEMENTED texts,
 * the content-type check, and one in-process server that answers an HTTP/1.1 request line
 * with SETTINGS + GOAWAY PROTOCOL_ERROR (operator report B032). Calls over the wire with
 * grpcio, curl and h2 are in tests/integration/test_app_grpc.py.
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
#include "app/app_grpc.h"

#define BYTES(...) ((const uint8_t[]){__VA_ARGS__})
#define LEN(...)   sizeof((const uint8_t[]){__VA_ARGS__})

static void decode_ok(const uint8_t *p, size_t n, struct app_echo_request *rq)
{
    assert_int_equal(app_echo_request_decode(p, n, rq), 0);
}

static void test_echo_request_all_fields(void **state)
{
    /* {message:"hi", delay_ms:300, status:14, status_message:"x", count:3} */
    static const uint8_t m[] = {0x0a, 0x02, 'h',  'i',  0x10, 0xac, 0x02,
                                0x18, 0x0e, 0x22, 0x01, 'x',  0x28, 0x03};
    struct app_echo_request rq;
    decode_ok(m, sizeof m, &rq);
    assert_int_equal(rq.message_len, 2);
    assert_memory_equal(rq.message, "hi", 2);
    assert_int_equal(rq.delay_ms, 300);
    assert_int_equal(rq.status, 14);
    assert_int_equal(rq.status_message_len, 1);
    assert_memory_equal(rq.status_message, "x", 1);
    assert_int_equal(rq.count, 3);
}

static void test_echo_request_empty_and_defaults(void **state)
{
    struct app_echo_request rq;
    decode_ok((const uint8_t *)"", 0, &rq);
    assert_null(rq.message);
    assert_int_equal(rq.message_len, 0);
    assert_int_equal(rq.delay_ms, 0);
    assert_int_equal(rq.status, 0);
    assert_int_equal(rq.count, 0);
}

static void test_echo_request_protobuf_rules(void **state)
{
    struct app_echo_request rq;
    /* a negative int32 is a 10-byte varint (sign-extended to 64 bits) */
    decode_ok(BYTES(0x10, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
              LEN(0x10, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), &rq);
    assert_int_equal(rq.delay_ms, -5);
    /* unknown fields of every wire type are skipped; a known field with another wire type
     * too; a repeated scalar keeps its last value */
    static const uint8_t m[] = {0x30, 0x07,                                   /* 6 */
                                0x39, 1,    2,    3,    4,    5,    6,  7, 8, /* 7 */
                                0x45, 1,    2,    3,    4,                    /* 8 */
                                0x4a, 0x02, 'a',  'b',                        /* 9 */
                                0x08, 0x05,                                   /* 1 */
                                0x18, 0x01, 0x18, 0x02, 0x0a, 0x01, 'z'};
    decode_ok(m, sizeof m, &rq);
    assert_int_equal(rq.status, 2);
    assert_int_equal(rq.message_len, 1);
    assert_memory_equal(rq.message, "z", 1);
}

static void test_echo_request_malformed(void **state)
{
    struct app_echo_request rq;
    static const struct {
        uint8_t b[16];
        size_t n;
    } bad[] = {
        {{0x0a, 0x05, 'a'}, 3}, /* length past the end */
        {{0x10, 0x80}, 2},      /* truncated varint */
        {{0x00, 0x01}, 2},      /* field number 0 */
        {{0x0b}, 1},            /* a group (wire type 3) */
        {{0x0f, 0x00}, 2},      /* wire type 7 */
        {{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 12},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(app_echo_request_decode(bad[i].b, bad[i].n, &rq), -1);
}

static void test_echo_response_framing(void **state)
{
    wf_strbuf b = WF_STRBUF_INIT;
    app_echo_response_put(&b, "hi", 2, "pod-1", 0);
    static const uint8_t want[] = {0x00, 0x00, 0x00, 0x00, 0x0b, 0x0a, 0x02, 'h',
                                   'i',  0x12, 0x05, 'p',  'o',  'd',  '-',  '1'};
    assert_false(wf_strbuf_failed(&b));
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    /* a second message appended after the first, with its index */
    app_echo_response_put(&b, NULL, 0, NULL, 3);
    static const uint8_t want2[] = {0x00, 0x00, 0x00, 0x00, 0x02, 0x18, 0x03};
    assert_int_equal(b.len, sizeof want + sizeof want2);
    assert_memory_equal(b.data + sizeof want, want2, sizeof want2);
    /* everything default: an empty message, still framed */
    wf_strbuf_reset(&b);
    app_echo_response_put(&b, NULL, 0, "", 0);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.data, "\0\0\0\0\0", 5);
    /* a 300-byte message: two-byte length varint, big-endian frame length */
    char big[300];
    memset(big, 'a', sizeof big);
    wf_strbuf_reset(&b);
    app_echo_response_put(&b, big, sizeof big, NULL, 0);
    static const uint8_t hdr[] = {0x00, 0x00, 0x00, 0x01, 0x2f, 0x0a, 0xac, 0x02};
    assert_int_equal(b.len, 5 + 3 + 300);
    assert_memory_equal(b.data, hdr, sizeof hdr);
    wf_strbuf_free(&b);
}

static void test_health_messages(void **state)
{
    const uint8_t *svc;
    size_t len;
    static const uint8_t rq[] = {0x0a, 0x09, 's', 'h', 'o', 'p', '.', 'E', 'c', 'h', 'o'};
    assert_int_equal(app_health_request_decode(rq, sizeof rq, &svc, &len), 0);
    assert_int_equal(len, 9);
    assert_memory_equal(svc, "shop.Echo", 9);
    assert_int_equal(app_health_request_decode((const uint8_t *)"", 0, &svc, &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(app_health_request_decode(BYTES(0x0a, 0x09, 's'), 3, &svc, &len), -1);

    wf_strbuf b = WF_STRBUF_INIT;
    app_health_response_put(&b, APP_HEALTH_SERVING);
    assert_int_equal(b.len, 7);
    assert_memory_equal(b.data, "\0\0\0\0\x02\x08\x01", 7);
    wf_strbuf_free(&b);
}

static void test_echo_plan(void **state)
{
    struct app_echo_request rq = {0};
    struct app_echo_plan pl;
    const char *err = NULL;
    /* defaults: no delay, OK, one message */
    assert_int_equal(app_echo_plan_make(&rq, NULL, NULL, NULL, &pl, &err), 0);
    assert_int_equal(pl.delay_ms, 0);
    assert_int_equal(pl.status, 0);
    assert_int_equal(pl.count, 1);
    assert_null(pl.status_msg);
    /* the headers stand in for zero fields */
    assert_int_equal(app_echo_plan_make(&rq, "250", "14", "down", &pl, &err), 0);
    assert_int_equal(pl.delay_ms, 250);
    assert_int_equal(pl.status, 14);
    assert_int_equal(pl.status_msg_len, 4);
    assert_memory_equal(pl.status_msg, "down", 4);
    /* the message wins over the headers */
    rq.delay_ms = 5;
    rq.status = 7;
    rq.count = 4;
    rq.status_message = (const uint8_t *)"denied";
    rq.status_message_len = 6;
    assert_int_equal(app_echo_plan_make(&rq, "250", "14", "down", &pl, &err), 0);
    assert_int_equal(pl.delay_ms, 5);
    assert_int_equal(pl.status, 7);
    assert_int_equal(pl.count, 4);
    assert_memory_equal(pl.status_msg, "denied", 6);
    /* out of range: INVALID_ARGUMENT naming the field */
    struct app_echo_request bad[] = {{.delay_ms = -1}, {.delay_ms = 86400001}, {.status = 17},
                                     {.status = -2},   {.count = -1},          {.count = 100001}};
    const char *field[] = {"delay_ms", "delay_ms", "status", "status", "count", "count"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        assert_int_equal(app_echo_plan_make(&bad[i], NULL, NULL, NULL, &pl, &err), 3);
        assert_non_null(err);
        assert_int_equal(strncmp(err, field[i], strlen(field[i])), 0);
    }
    memset(&rq, 0, sizeof rq);
    assert_int_equal(app_echo_plan_make(&rq, "1x", NULL, NULL, &pl, &err), 3);
    assert_non_null(strstr(err, "x-delay-ms"));
    assert_int_equal(app_echo_plan_make(&rq, NULL, "17", NULL, &pl, &err), 3);
    assert_non_null(strstr(err, "x-grpc-status"));
    assert_int_equal(app_echo_plan_make(&rq, NULL, "", NULL, &pl, &err), 3);
}

static void test_unknown_method_texts(void **state)
{
    char out[256];
    const char *p;
    assert_null(app_grpc_unknown_text(APP_GRPC_PATH_ECHO, strlen(APP_GRPC_PATH_ECHO), out, 256));
    assert_null(
        app_grpc_unknown_text(APP_GRPC_PATH_HEALTH, strlen(APP_GRPC_PATH_HEALTH), out, sizeof out));
    p = "/shop.Echo/Nope";
    assert_string_equal(app_grpc_unknown_text(p, strlen(p), out, sizeof out),
                        "unknown method Nope for service shop.Echo");
    p = "/grpc.health.v1.Health/Watch";
    assert_string_equal(app_grpc_unknown_text(p, strlen(p), out, sizeof out),
                        "unknown method Watch for service grpc.health.v1.Health");
    p = "/shop.Other/Echo";
    assert_string_equal(app_grpc_unknown_text(p, strlen(p), out, sizeof out),
                        "unknown service shop.Other");
    p = "/nomethod";
    assert_string_equal(app_grpc_unknown_text(p, strlen(p), out, sizeof out),
                        "malformed method name: \"/nomethod\"");
    /* a prefix of a served path is not served */
    p = "/shop.Echo/Ech";
    assert_non_null(app_grpc_unknown_text(p, strlen(p), out, sizeof out));
}

static void test_content_type(void **state)
{
    const char *ok[] = {"application/grpc", "application/grpc+proto", "application/grpc;x=1"};
    const char *no[] = {"application/grpc-web", "application/json", "application/grp", "",
                        "application/grpcx"};
    for (size_t i = 0; i < 3; i++)
        assert_true(app_grpc_content_type_ok(ok[i], strlen(ok[i])));
    for (size_t i = 0; i < 5; i++)
        assert_false(app_grpc_content_type_ok(no[i], strlen(no[i])));
}

/* ---- in-process: an HTTP/1.1 request to the gRPC listener ---- */

struct h1_probe {
    int port;
    uv_async_t done;
    struct wf_app *app;
    uint8_t reply[512];
    size_t reply_len;
    bool eof;
};

static void *probe_main(void *arg)
{
    struct h1_probe *pr = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)pr->port)};
    struct timeval tv = {.tv_sec = 10};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        static const char req[] = "GET /shop.Echo/Echo HTTP/1.1\r\nHost: a\r\n\r\n";
        if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
            ssize_t n = -1;
            while (pr->reply_len < sizeof pr->reply &&
                   (n = read(fd, pr->reply + pr->reply_len, sizeof pr->reply - pr->reply_len)) > 0)
                pr->reply_len += (size_t)n;
            pr->eof = n == 0;
        }
    }
    if (fd >= 0)
        close(fd);
    uv_async_send(&pr->done);
    return NULL;
}

static void on_probe_done(uv_async_t *a)
{
    struct h1_probe *pr = a->data;
    wf_app_stop(pr->app);
    uv_close((uv_handle_t *)a, NULL);
}

static void test_http1_request_gets_goaway(void **state)
{
    uv_loop_t loop;
    struct h1_probe pr = {0};
    struct wf_app_config cfg = {.name = "unit", .seed = 1};
    char bound[96];
    pthread_t th;
    assert_int_equal(uv_loop_init(&loop), 0);
    pr.app = wf_app_new(&loop, &cfg);
    assert_non_null(pr.app);
    assert_int_equal(wf_app_listen_grpc(pr.app, "127.0.0.1:0", bound, sizeof bound), 0);
    assert_int_equal(strncmp(bound, "127.0.0.1:", 10), 0);
    pr.port = atoi(bound + 10);
    assert_true(pr.port > 0);
    assert_int_equal(wf_app_listen_grpc(pr.app, "nope", bound, sizeof bound), UV_EINVAL);
    pr.done.data = &pr;
    assert_int_equal(uv_async_init(&loop, &pr.done, on_probe_done), 0);
    assert_int_equal(pthread_create(&th, NULL, probe_main, &pr), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    assert_int_equal(uv_loop_close(&loop), 0); /* every handle closed */
    wf_app_free(pr.app);

    /* the server preface (a SETTINGS frame), then GOAWAY (type 7) on stream 0, last stream 0,
     * PROTOCOL_ERROR (1), then the server closes */
    assert_true(pr.eof);
    size_t at = 0;
    bool settings = false, goaway = false;
    while (at + 9 <= pr.reply_len) {
        const uint8_t *f = pr.reply + at;
        size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
        assert_true(at + 9 + len <= pr.reply_len);
        if (f[3] == 4 && !(f[4] & 1))
            settings = !goaway;
        if (f[3] == 7) {
            static const uint8_t want[] = {0, 0, 0, 0, 0, 0, 0, 1};
            assert_int_equal(len, 8);
            assert_memory_equal(f + 9, want, 8);
            goaway = true;
        }
        at += 9 + len;
    }
    assert_int_equal(at, pr.reply_len);
    assert_true(settings);
    assert_true(goaway);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_request_all_fields),
        cmocka_unit_test(test_echo_request_empty_and_defaults),
        cmocka_unit_test(test_echo_request_protobuf_rules),
        cmocka_unit_test(test_echo_request_malformed),
        cmocka_unit_test(test_echo_response_framing),
        cmocka_unit_test(test_health_messages),
        cmocka_unit_test(test_echo_plan),
        cmocka_unit_test(test_unknown_method_texts),
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_http1_request_gets_goaway),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
