/*
 * test_pool_h2.c - the HTTP/2 side of the connection pool (proxy/upstream/pool_h2.h) on a
 * real worker loop (driven on the test's thread) against a loopback listener whose accepted
 * connections the test serves with an nghttp2 server session: streams of one connection up
 * to max_concurrent_streams, then a second connection; the router's HTTP/1.1 request bytes
 * go out as HEADERS (Host -> :authority) and the response's HEADERS, DATA and trailers come
 * back as HTTP/1.1 bytes with chunked trailers; RST_STREAM REFUSED_STREAM and others reach
 * the request's owner as WP_RESET_REMOTE_REFUSED_STREAM_RESET / WP_RESET_REMOTE_RESET.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>

#include "harness.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/http/conn.h"
#include "proxy/server/gen.h"
#include "proxy/server/server.h"
#include "proxy/server/worker.h"

static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

/* The test's server side of one connection. */
typedef struct {
    int fd;
    nghttp2_session *ss;
    int32_t last_stream;
    char authority[64];
} peer;

typedef struct {
    wp_server srv;
    wp_worker w;
    wp_pool *pool;
    int lfd;
    peer peers[4];
    int npeers;
} env;

typedef struct {
    int ready, failed, resets, reason;
    wp_uconn *u;
    char got[4096];
    size_t ngot;
} rq_log;

static void on_ready(void *ctx, wp_uconn *u, int host)
{
    (void)host;
    rq_log *l = ctx;
    l->ready++;
    l->u = u;
}

static void on_failure(void *ctx, wp_pool_failure reason, const char *tfr, int host)
{
    (void)reason;
    (void)tfr;
    (void)host;
    ((rq_log *)ctx)->failed++;
}

static const wp_pool_callbacks cbs = {on_ready, on_failure};

/* The request's owner (what the router is to a wp_uconn). */
static void uc_data(void *owner, wp_uconn *u, size_t n)
{
    (void)n;
    rq_log *l = owner;
    size_t avail = u->rlen - u->rstart;
    if (avail > sizeof(l->got) - l->ngot - 1)
        avail = sizeof(l->got) - l->ngot - 1;
    memcpy(l->got + l->ngot, u->rbuf->data + u->rstart, avail);
    l->ngot += avail;
    u->rstart = u->rlen;
}

static void uc_eof(void *owner, wp_uconn *u)
{
    (void)owner;
    (void)u;
}

static void uc_written(void *owner, wp_uconn *u)
{
    (void)owner;
    (void)u;
}

static void uc_reset(void *owner, wp_uconn *u, int reason)
{
    (void)u;
    rq_log *l = owner;
    l->resets++;
    l->reason = reason;
}

static const wp_uconn_callbacks ucbs = {uc_data, uc_eof, uc_written, uc_reset};

static ssize_t peer_send(nghttp2_session *ss, const uint8_t *d, size_t n, int flags, void *ud)
{
    (void)ss;
    (void)flags;
    peer *p = ud;
    ssize_t w = write(p->fd, d, n);
    return w < 0 ? NGHTTP2_ERR_WOULDBLOCK : w;
}

static int peer_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                       const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
    (void)ss;
    (void)flags;
    peer *p = ud;
    p->last_stream = f->hd.stream_id;
    if (nl == 10 && memcmp(name, ":authority", 10) == 0 && vl < sizeof(p->authority)) {
        memcpy(p->authority, value, vl);
        p->authority[vl] = 0;
    }
    return 0;
}

static void peer_new(env *e, int fd)
{
    peer *p = &e->peers[e->npeers++];
    memset(p, 0, sizeof(*p));
    p->fd = fd;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    nghttp2_session_callbacks *cb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_send_callback(cb, peer_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, peer_header);
    assert_int_equal(nghttp2_session_server_new(&p->ss, cb, p), 0);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    nghttp2_submit_settings(p->ss, NGHTTP2_FLAG_NONE, iv, 1);
}

/* One round: the loop, new connections accepted, each peer's bytes read and answered. */
static void step(env *e)
{
    uv_run(&e->w.loop, UV_RUN_NOWAIT);
    int fd;
    while (e->npeers < 4 && (fd = accept(e->lfd, NULL, NULL)) >= 0)
        peer_new(e, fd);
    for (int i = 0; i < e->npeers; i++) {
        peer *p = &e->peers[i];
        uint8_t buf[16384];
        ssize_t n;
        while ((n = read(p->fd, buf, sizeof(buf))) > 0)
            assert_true(nghttp2_session_mem_recv(p->ss, buf, (size_t)n) >= 0);
        nghttp2_session_send(p->ss);
    }
    usleep(1000);
}

static void run_until(env *e, const int *flag, int want)
{
    for (int i = 0; i < 3000 && *flag < want; i++)
        step(e);
    assert_int_equal(*flag, want);
}

static void start(env *e, unsigned max_streams)
{
    int port;
    e->lfd = listener(&port);
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"type\":\"STATIC\","
             "\"typed_extension_protocol_options\":{\"envoy.extensions.upstreams.http.v3."
             "HttpProtocolOptions\":{\"@type\":\"type.googleapis.com/envoy.extensions."
             "upstreams.http.v3.HttpProtocolOptions\",\"explicit_http_config\":{"
             "\"http2_protocol_options\":{\"max_concurrent_streams\":%u}}}},"
             "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[{"
             "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\","
             "\"port_value\":%d}}}}]}]}}]}}",
             max_streams, port);
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("bootstrap: %s", wf_strbuf_cstr(&err));
    wp_gen *g = wp_gen_new(&e->srv, c, &err);
    assert_non_null(g);
    wp_gen_post post = {.gen = g, .fds = NULL};
    assert_int_equal(wp_worker_init(&e->w, &e->srv, 0, &post, &err), 0);
    wf_strbuf_free(&err);
    e->pool = &e->w.wg->pools[0];
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    e->srv.nworkers = 1;
    e->srv.stats_store = wp_stats_new(2);
    e->srv.alog_files = wp_alog_files_new();
    e->lfd = -1;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    wp_worker_command(&e->w, WP_WORKER_STOP);
    for (int i = 0; i < 5; i++)
        uv_run(&e->w.loop, UV_RUN_NOWAIT);
    wp_worker_free(&e->w);
    wp_alog_files_free(e->srv.alog_files);
    wp_stats_free(e->srv.stats_store);
    for (int i = 0; i < e->npeers; i++) {
        nghttp2_session_del(e->peers[i].ss);
        close(e->peers[i].fd);
    }
    if (e->lfd >= 0)
        close(e->lfd);
    free(e);
    return 0;
}

static int64_t cstat(env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_counter(e->srv.stats_store, full));
}

static void send_request(rq_log *l, const char *req)
{
    wp_uconn_attach(l->u, &ucbs, l);
    uv_buf_t b = uv_buf_init((char *)req, (unsigned)strlen(req));
    assert_true(wp_uconn_write(l->u, &b, 1) >= 0);
}

/* Two streams share a connection (max_concurrent_streams 2); the third request opens
 * another; a response with trailers comes back as chunked HTTP/1.1. */
static void test_streams_and_translation(void **state)
{
    env *e = *state;
    start(e, 2);
    wp_pool_req rq[3];
    rq_log l[3] = {0};
    for (int i = 0; i < 3; i++)
        wp_pool_newstream_http(e->pool, 0, &rq[i], &cbs, &l[i], false);
    run_until(e, &l[0].ready, 1);
    run_until(e, &l[2].ready, 1);
    assert_int_equal(l[1].ready, 1);
    assert_true(l[0].u->stream && l[1].u->stream && l[2].u->stream);
    assert_int_equal(l[0].u->id, l[1].u->id); /* one connection */
    assert_int_not_equal(l[0].u->id, l[2].u->id);
    assert_int_equal(cstat(e, "upstream_cx_total"), 2);
    assert_int_equal(cstat(e, "upstream_cx_http2_total"), 2);

    send_request(&l[0], "GET /p HTTP/1.1\r\nHost: svc.ns:80\r\nConnection: keep-alive\r\n\r\n");
    peer *p = NULL;
    for (int i = 0; i < 500 && !p; i++) {
        step(e);
        for (int k = 0; k < e->npeers; k++)
            if (e->peers[k].last_stream)
                p = &e->peers[k];
    }
    assert_non_null(p);
    assert_string_equal(p->authority, "svc.ns:80");
    nghttp2_nv hdr[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
    nghttp2_nv trl[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0}};
    /* the response head, then the trailers (no DATA): chunked with an empty body */
    nghttp2_submit_headers(p->ss, NGHTTP2_FLAG_NONE, p->last_stream, NULL, hdr, 1, NULL);
    nghttp2_submit_headers(p->ss, NGHTTP2_FLAG_END_STREAM, p->last_stream, NULL, trl, 1, NULL);
    const char *want = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n"
                       "grpc-status: 0\r\n\r\n";
    for (int i = 0; i < 1000 && l[0].ngot < strlen(want); i++)
        step(e);
    assert_string_equal(l[0].got, want);
    wp_uconn_release(l[0].u, true);
    wp_uconn_release(l[1].u, false);
    wp_uconn_release(l[2].u, false);
    for (int i = 0; i < 20; i++)
        step(e);
}

/* RST_STREAM REFUSED_STREAM and INTERNAL_ERROR reach the owner as Envoy's reasons. */
static void test_resets(void **state)
{
    env *e = *state;
    start(e, 10);
    wp_pool_req rq[2];
    rq_log l[2] = {0};
    for (int i = 0; i < 2; i++)
        wp_pool_newstream_http(e->pool, 0, &rq[i], &cbs, &l[i], false);
    run_until(e, &l[1].ready, 1);
    send_request(&l[0], "GET /a HTTP/1.1\r\nhost: a\r\n\r\n");
    send_request(&l[1], "GET /b HTTP/1.1\r\nhost: a\r\n\r\n");
    for (int i = 0; i < 500 && (!e->npeers || e->peers[0].last_stream < 3); i++)
        step(e);
    peer *p = &e->peers[0];
    assert_int_equal(p->last_stream, 3);
    nghttp2_submit_rst_stream(p->ss, NGHTTP2_FLAG_NONE, 1, NGHTTP2_REFUSED_STREAM);
    nghttp2_submit_rst_stream(p->ss, NGHTTP2_FLAG_NONE, 3, NGHTTP2_INTERNAL_ERROR);
    run_until(e, &l[1].resets, 1);
    run_until(e, &l[0].resets, 1);
    assert_int_equal(l[0].reason, WP_RESET_REMOTE_REFUSED_STREAM_RESET);
    assert_int_equal(l[1].reason, WP_RESET_REMOTE_RESET);
    assert_int_equal(cstat(e, "http2.rx_reset"), 2);
    assert_int_equal(cstat(e, "http2.stream_refused_errors"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_streams_and_translation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
