/*
 * test_conn_pool.c - the upstream connection pool (proxy/upstream/conn_pool.h) on a real
 * worker loop (driven on the test's thread, never started) against loopback listeners:
 * a request gets a connection (on_ready); over max_connections a second request waits in the
 * pool and is served when the first connection is released; over max_pending_requests the
 * request fails with Overflow; a cancelled request leaves the queue; a refused connect fails
 * with RemoteConnectionFailure and its transport failure text; a connect that never completes
 * fails with Timeout after connect_timeout. Stats are the cluster's, read from the store.
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
#include <sys/socket.h>

#include "harness.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"
#include "proxy/server/gen.h"
#include "proxy/server/worker.h"

/* A loopback listener (backlog `backlog`); its port in *port. */
static int listener(int backlog, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, backlog), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A port nothing listens on. */
static int closed_port(void)
{
    int port;
    close(listener(1, &port));
    return port;
}

typedef struct {
    wp_server srv;
    wp_worker w;
    wp_pool *pool;
    int lfd;
} env;

/* What one request heard from the pool. */
typedef struct {
    int ready, failed;
    wp_uconn *u;
    int host;
    wp_pool_failure reason;
    char tfr[128];
} rq_log;

static void on_ready(void *ctx, wp_uconn *u, int host)
{
    rq_log *l = ctx;
    l->ready++;
    l->u = u;
    l->host = host;
}

static void on_failure(void *ctx, wp_pool_failure reason, const char *tfr, int host)
{
    rq_log *l = ctx;
    l->failed++;
    l->reason = reason;
    l->host = host;
    snprintf(l->tfr, sizeof(l->tfr), "%s", tfr ? tfr : "");
}

static const wp_pool_callbacks cbs = {on_ready, on_failure};

/* A worker whose one cluster "c" has endpoints at ports[0..n) with the given breakers. */
static void start(env *e, const int *ports, size_t n, unsigned max_cx, unsigned max_pending,
                  const char *connect_timeout)
{
    char eps[1024] = "";
    size_t off = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(eps + off, sizeof(eps) - off,
                                "%s{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
                                "\"127.0.0.1\",\"port_value\":%d}}}}",
                                i ? "," : "", ports[i]);
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"type\":\"STATIC\","
             "\"connect_timeout\":\"%s\",\"circuit_breakers\":{\"thresholds\":[{"
             "\"max_connections\":%u,\"max_pending_requests\":%u}]},\"load_assignment\":{"
             "\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[%s]}]}}]}}",
             connect_timeout, max_cx, max_pending, eps);
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
    assert_non_null(e->srv.stats_store);
    assert_non_null(e->srv.alog_files);
    e->lfd = -1;
    *state = e;
    return 0;
}

static void run(env *e, int rounds)
{
    for (int i = 0; i < rounds; i++)
        uv_run(&e->w.loop, UV_RUN_NOWAIT);
}

/* Runs the loop until *flag is set (or 3 s). */
static void run_until(env *e, const int *flag)
{
    uint64_t end = uv_hrtime() + 3000000000ULL;
    while (!*flag && uv_hrtime() < end) {
        uv_run(&e->w.loop, UV_RUN_ONCE);
        usleep(1000);
    }
    assert_true(*flag);
}

static int teardown(void **state)
{
    env *e = *state;
    wp_worker_command(&e->w, WP_WORKER_STOP);
    run(e, 5);
    wp_worker_free(&e->w);
    wp_alog_files_free(e->srv.alog_files);
    wp_stats_free(e->srv.stats_store);
    if (e->lfd >= 0)
        close(e->lfd);
    free(e);
    return 0;
}

static int64_t cstat(env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.%s", name);
    uint32_t slot = strstr(name, "_active") ? wp_stats_gauge(e->srv.stats_store, full)
                                            : wp_stats_counter(e->srv.stats_store, full);
    return wp_stats_value(e->srv.stats_store, slot);
}

static unsigned gauge_pending(env *e)
{
    return atomic_load(&e->w.wg->gen->crt[0].rq_pending);
}

/* A request gets a new connection, then (released) the idle one, synchronously. */
static void test_newstream_ready_then_reuse(void **state)
{
    env *e = *state;
    int port;
    e->lfd = listener(16, &port);
    start(e, &port, 1, 1024, 1024, "1s");
    wp_pool_req rq;
    rq_log a = {0};
    assert_true(wp_pool_newstream(e->pool, 0, &rq, &cbs, &a));
    assert_int_equal(a.ready + a.failed, 0);
    assert_int_equal(gauge_pending(e), 1);
    run_until(e, &a.ready);
    assert_int_equal(a.failed, 0);
    assert_int_equal(a.host, 0);
    assert_int_equal(a.u->host, 0);
    assert_int_equal(gauge_pending(e), 0);
    assert_int_equal(cstat(e, "upstream_cx_total"), 1);
    assert_int_equal(cstat(e, "upstream_rq_pending_total"), 1);
    assert_int_equal(cstat(e, "upstream_rq_pending_active"), 0);
    wp_uconn *first = a.u;
    wp_uconn_release(first, true);
    rq_log b = {0};
    assert_false(wp_pool_newstream(e->pool, 0, &rq, &cbs, &b)); /* idle: ready at once */
    assert_int_equal(b.ready, 1);
    assert_ptr_equal(b.u, first);
    assert_int_equal(cstat(e, "upstream_cx_total"), 1);
    assert_int_equal(cstat(e, "upstream_rq_pending_total"), 1);
    wp_uconn_release(b.u, false);
    run(e, 3);
    assert_int_equal(cstat(e, "upstream_cx_destroy_local"), 1);
    assert_int_equal(cstat(e, "upstream_cx_active"), 0);
}

/* max_connections 1: the second request waits (upstream_cx_overflow) and gets the first
 * request's connection when it is released; a third is cancelled while waiting. */
static void test_queued_then_served_on_release(void **state)
{
    env *e = *state;
    int port;
    e->lfd = listener(16, &port);
    start(e, &port, 1, 1, 1024, "1s");
    wp_pool_req r1, r2, r3;
    rq_log a = {0}, b = {0}, c = {0};
    wp_pool_newstream(e->pool, 0, &r1, &cbs, &a);
    run_until(e, &a.ready);
    assert_true(wp_pool_newstream(e->pool, 0, &r2, &cbs, &b));
    assert_true(wp_pool_newstream(e->pool, 0, &r3, &cbs, &c));
    assert_int_equal(cstat(e, "upstream_cx_overflow"), 2);
    assert_int_equal(gauge_pending(e), 2);
    run(e, 5);
    assert_int_equal(b.ready + b.failed + c.ready + c.failed, 0);
    wp_pool_cancel(&r3);
    assert_int_equal(cstat(e, "upstream_rq_cancelled"), 1);
    assert_int_equal(gauge_pending(e), 1);
    wp_pool_cancel(&r3); /* no longer pending: nothing */
    assert_int_equal(cstat(e, "upstream_rq_cancelled"), 1);
    wp_uconn_release(a.u, true);
    assert_int_equal(b.ready, 1);
    assert_ptr_equal(b.u, a.u);
    assert_int_equal(gauge_pending(e), 0);
    assert_int_equal(c.ready + c.failed, 0);
    wp_uconn_release(b.u, true); /* nothing waits: idle */
    assert_int_equal(c.ready, 0);
    assert_int_equal(cstat(e, "upstream_cx_total"), 1);
    assert_int_equal(cstat(e, "upstream_rq_pending_active"), 0);
}

/* max_pending_requests 1: with one request waiting, the next overflows through on_failure
 * (upstream_rq_pending_overflow) and is not counted pending. */
static void test_overflow_on_max_pending(void **state)
{
    env *e = *state;
    int port;
    e->lfd = listener(16, &port);
    start(e, &port, 1, 1, 1, "1s");
    wp_pool_req r1, r2, r3;
    rq_log a = {0}, b = {0}, c = {0};
    assert_true(wp_pool_newstream(e->pool, 0, &r1, &cbs, &a)); /* pending while connecting */
    assert_false(wp_pool_newstream(e->pool, 0, &r2, &cbs, &b));
    assert_int_equal(b.failed, 1);
    assert_int_equal(b.reason, WP_POOL_OVERFLOW);
    assert_string_equal(b.tfr, "");
    assert_int_equal(cstat(e, "upstream_rq_pending_overflow"), 1);
    run_until(e, &a.ready);
    assert_true(wp_pool_newstream(e->pool, 0, &r2, &cbs, &b)); /* queued: max_connections */
    assert_false(wp_pool_newstream(e->pool, 0, &r3, &cbs, &c));
    assert_int_equal(c.reason, WP_POOL_OVERFLOW);
    assert_int_equal(cstat(e, "upstream_rq_pending_overflow"), 2);
    assert_int_equal(cstat(e, "upstream_rq_pending_total"), 2);
    wp_pool_cancel(&r2);
    wp_uconn_release(a.u, true);
}

/* A refused connect: RemoteConnectionFailure with "delayed connect error: Connection
 * refused"; upstream_cx_connect_fail; the request is no longer pending. */
static void test_connect_refused(void **state)
{
    env *e = *state;
    int port = closed_port();
    start(e, &port, 1, 1024, 1024, "1s");
    wp_pool_req rq;
    rq_log a = {0};
    assert_true(wp_pool_newstream(e->pool, 0, &rq, &cbs, &a));
    run_until(e, &a.failed);
    assert_int_equal(a.ready, 0);
    assert_int_equal(a.reason, WP_POOL_REMOTE_CONNECTION_FAILURE);
    assert_string_equal(a.tfr, "delayed connect error: Connection refused");
    assert_int_equal(a.host, 0);
    assert_int_equal(cstat(e, "upstream_cx_connect_fail"), 1);
    assert_int_equal(cstat(e, "upstream_rq_pending_active"), 0);
    assert_int_equal(gauge_pending(e), 0);
    wp_pool_cancel(&rq); /* after the failure: nothing */
    assert_int_equal(cstat(e, "upstream_rq_cancelled"), 0);
}

/* A listener whose accept queue is full drops SYNs: the connect never completes and the
 * request fails with Timeout after connect_timeout (upstream_cx_connect_timeout). */
static void test_connect_timeout(void **state)
{
    env *e = *state;
    int port;
    e->lfd = listener(0, &port);
    int fill[8];
    for (int i = 0; i < 8; i++) { /* fill the accept queue (nobody accepts) */
        fill[i] = socket(AF_INET, SOCK_STREAM, 0);
        fcntl(fill[i], F_SETFL, O_NONBLOCK);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        (void)connect(fill[i], (struct sockaddr *)&a, sizeof(a));
    }
    usleep(50000);
    start(e, &port, 1, 1024, 1024, "0.2s");
    wp_pool_req rq;
    rq_log a = {0};
    uint64_t t0 = uv_hrtime();
    assert_true(wp_pool_newstream(e->pool, 0, &rq, &cbs, &a));
    run_until(e, &a.failed);
    assert_true(uv_hrtime() - t0 >= 150000000ULL);
    assert_int_equal(a.reason, WP_POOL_TIMEOUT);
    assert_int_equal(cstat(e, "upstream_cx_connect_timeout"), 1);
    assert_int_equal(cstat(e, "upstream_cx_connect_fail"), 1);
    assert_int_equal(gauge_pending(e), 0);
    for (int i = 0; i < 8; i++)
        close(fill[i]);
}

/* A request cancelled while its connection is being opened: no callback; the connection
 * joins the pool as idle and serves the next request without a new connect. */
static void test_cancel_while_connecting(void **state)
{
    env *e = *state;
    int port;
    e->lfd = listener(16, &port);
    start(e, &port, 1, 1024, 1024, "1s");
    wp_pool_req rq;
    rq_log a = {0}, b = {0};
    assert_true(wp_pool_newstream(e->pool, 0, &rq, &cbs, &a));
    wp_pool_cancel(&rq);
    assert_int_equal(cstat(e, "upstream_rq_cancelled"), 1);
    assert_int_equal(gauge_pending(e), 0);
    for (int i = 0; i < 50 && !e->pool->idle[0]; i++) {
        uv_run(&e->w.loop, UV_RUN_ONCE);
        usleep(1000);
    }
    assert_non_null(e->pool->idle[0]);
    assert_int_equal(a.ready + a.failed, 0);
    assert_false(wp_pool_newstream(e->pool, 0, &rq, &cbs, &b));
    assert_int_equal(b.ready, 1);
    assert_int_equal(cstat(e, "upstream_cx_total"), 1);
    wp_uconn_release(b.u, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_newstream_ready_then_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_then_served_on_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overflow_on_max_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_while_connecting, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
