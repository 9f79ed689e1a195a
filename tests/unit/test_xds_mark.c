/*
 * test_xds_mark.c - weft-xds-load's marked changes (bench/xds_mark.h): a client converges on a
 * mark at the first EDS body containing the marker (later ones do not move its time, bodies
 * without it do nothing, closed marks take no more), overlapping marks each keep their own t0,
 * the MARK line's counts and percentiles; the HTTP request reaches a server on 127.0.0.1 with
 * its method, path, content type and body and the status comes back, and a refused connection
 * reports -1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xds_mark.h"

#define MS 1000000ull

static char *report(xm_marks *m, size_t i, size_t live, bool timed_out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    xm_report(m, i, live, timed_out, f);
    fclose(f);
    return buf;
}

static void first_body_with_marker_counts(void **state)
{
    (void)state;
    xm_marks m = {.n_clients = 3};
    assert_int_equal(xm_add(&m, "m0", "\"10.0.0.7\"", 1000 * MS), 0);
    const char *without = "{\"address\":\"10.0.0.70\"}", *with = "{\"address\":\"10.0.0.7\"}";
    xm_on_eds(&m, 0, without, strlen(without), 1100 * MS); /* a prefix, not the marker */
    assert_int_equal(m.v[0].n_conv, 0);
    xm_on_eds(&m, 0, with, strlen(with), 1200 * MS);
    xm_on_eds(&m, 0, with, strlen(with), 1900 * MS); /* the first ACK counts */
    xm_on_eds(&m, 2, with, strlen(with), 1400 * MS);
    xm_on_eds(&m, 7, with, strlen(with), 1400 * MS); /* no such client */
    assert_int_equal(m.v[0].n_conv, 2);
    assert_int_equal(m.v[0].conv[0], 1200 * MS);
    assert_int_equal(m.v[0].first_ns, 1200 * MS);
    assert_int_equal(m.open, 1);
    char *line = report(&m, 0, 3, true);
    assert_non_null(strstr(line, "MARK {\"label\":\"m0\",\"clients\":3,\"live\":3,"
                                 "\"converged\":2,\"timed_out\":true,\"http_status\":0,"
                                 "\"first_ms\":200.0,\"conv_p50_ms\":200.0,"
                                 "\"conv_p99_ms\":400.0,\"conv_max_ms\":400.0}\n"));
    free(line);
    assert_int_equal(m.open, 0);
    assert_true(m.v[0].done);
    xm_on_eds(&m, 1, with, strlen(with), 2000 * MS); /* reported: nothing more */
    assert_int_equal(m.v[0].n_conv, 2);
    xm_marks_free(&m);
}

static void overlapping_marks_keep_their_t0(void **state)
{
    (void)state;
    xm_marks m = {.n_clients = 2};
    for (int i = 0; i < 70; i++) { /* beyond the first allocation */
        char label[16], marker[32];
        snprintf(label, sizeof label, "m%d", i);
        snprintf(marker, sizeof marker, "\"10.1.0.%d\"", i);
        assert_int_equal(xm_add(&m, label, marker, (uint64_t)(1000 + 100 * i) * MS), i);
    }
    const char *both = "[\"10.1.0.0\",\"10.1.0.69\"]";
    xm_on_eds(&m, 1, both, strlen(both), 8000 * MS);
    assert_int_equal(m.v[0].conv[1] - m.v[0].t0, 7000 * MS);
    assert_int_equal(m.v[69].conv[1] - m.v[69].t0, 100 * MS);
    assert_int_equal(m.v[1].n_conv, 0);
    char *line = report(&m, 69, 2, false);
    assert_non_null(strstr(line, "\"label\":\"m69\",\"clients\":2,\"live\":2,\"converged\":1,"
                                 "\"timed_out\":false"));
    free(line);
    assert_int_equal(m.open, 69);
    assert_int_equal(xm_add(&m, "empty", "", 0), -1); /* an empty marker would match anything */
    xm_marks_free(&m);
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

typedef struct srv {
    uv_tcp_t listener, conn;
    bool accepted;
    char req[4096];
    size_t req_len;
    uv_write_t wr;
    int status; /* from the callback; 0 = not called */
    long tag;
} srv;

static void on_done(void *ud, long tag, int status)
{
    srv *s = ud;
    s->status = status;
    s->tag = tag;
}

static void srv_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    srv *s = h->data;
    (void)hint;
    b->base = s->req + s->req_len;
    b->len = sizeof s->req - 1 - s->req_len;
}

static void srv_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    srv *s = st->data;
    (void)b;
    if (n <= 0)
        return;
    s->req_len += (size_t)n;
    s->req[s->req_len] = '\0';
    const char *body = strstr(s->req, "\r\n\r\n");
    if (body && strlen(body + 4) == strlen("{\"endpoints\":[]}")) {
        static const char resp[] = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        uv_buf_t out = uv_buf_init((char *)resp, sizeof resp - 1);
        uv_write(&s->wr, st, &out, 1, NULL);
        uv_read_stop(st);
    }
}

static void srv_accept(uv_stream_t *l, int status)
{
    srv *s = l->data;
    assert_int_equal(status, 0);
    uv_tcp_init(l->loop, &s->conn);
    s->conn.data = s;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&s->conn), 0);
    s->accepted = true;
    uv_read_start((uv_stream_t *)&s->conn, srv_alloc, srv_read);
}

static int listen_port(uv_loop_t *loop, srv *s)
{
    struct sockaddr_in sa;
    struct sockaddr_storage got;
    int len = sizeof got;
    uv_ip4_addr("127.0.0.1", 0, &sa);
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    assert_int_equal(uv_tcp_bind(&s->listener, (const struct sockaddr *)&sa, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&s->listener, 8, srv_accept), 0);
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&got, &len);
    return ntohs(((struct sockaddr_in *)&got)->sin_port);
}

static void run_until(uv_loop_t *loop, const int *flag)
{
    for (int i = 0; i < 500 && !*flag; i++)
        uv_run(loop, UV_RUN_NOWAIT), usleep(10000);
}

static void http_request_and_status(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv s = {0};
    int port = listen_port(&loop, &s);
    const char *body = "{\"endpoints\":[]}";
    assert_int_equal(xm_http_send(&loop, "127.0.0.1", port, "PATCH",
                                  "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices/b",
                                  "application/merge-patch+json", body, strlen(body), on_done, &s,
                                  42),
                     0);
    run_until(&loop, &s.status);
    assert_int_equal(s.status, 201);
    assert_int_equal(s.tag, 42);
    assert_non_null(strstr(s.req, "PATCH /apis/discovery.k8s.io/v1/namespaces/a/endpointslices/b "
                                  "HTTP/1.1\r\n"));
    assert_non_null(strstr(s.req, "Content-Type: application/merge-patch+json\r\n"));
    assert_non_null(strstr(s.req, "Content-Length: 16\r\n"));
    assert_non_null(strstr(s.req, "\r\n\r\n{\"endpoints\":[]}"));
    uv_close((uv_handle_t *)&s.conn, NULL);
    uv_close((uv_handle_t *)&s.listener, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);

    /* nobody listens on the port any more: the callback says -1 */
    srv r = {0};
    assert_int_equal(
        xm_http_send(&loop, "127.0.0.1", port, "PATCH", "/x", "text/plain", "x", 1, on_done, &r, 7),
        0);
    run_until(&loop, &r.status);
    assert_int_equal(r.status, -1);
    assert_int_equal(r.tag, 7);
    assert_int_equal(xm_http_send(&loop, "not-an-ip", 1, "GET", "/", "a/b", "", 0, on_done, &r, 0),
                     -1);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_body_with_marker_counts),
        cmocka_unit_test(overlapping_marks_keep_their_t0),
        cmocka_unit_test(http_request_and_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
