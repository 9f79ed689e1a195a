/*
 * test_router.c - the request path through the HTTP connection manager (proxy/http/conn.c)
 * and the router (proxy/filters/http/router.c, router_retry.c) on a real worker loop (driven
 * on the test's thread, never started): one listener on a loopback port routes "/" to cluster
 * "c", whose one endpoint is a loopback listening socket the test serves itself with scripted
 * HTTP/1.1 answers. A client socket sends the request; the test checks what it reads back,
 * byte-exact status line and body, as Envoy answers (envoy-istio-behaviour.md):
 *  - a GET is routed upstream and the response relayed;
 *  - a refused upstream connect is 503 "upstream connect error or disconnect/reset before
 *    headers. reset reason: remote connection failure, transport failure reason: delayed
 *    connect error: Connection refused";
 *  - an upstream silent past the route timeout is 504 "upstream request timeout";
 *  - retry_on 5xx: a 503 then a 200 gives the client the 200, upstream_rq_retry 1;
 *  - a path no route matches is 404 with no body (NR).
 * The loop, the upstream and the client are proxy_loop.h's (shared with test_conn_manager.c);
 * every wait is bounded (5 s), so a bug fails the test instead of hanging it.
 */
#include "proxy_loop.h"

static const char ROUTE_ALL[] = "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]";

/* Connects the client to the proxy and sends a GET of path. */
static void get(pl_env *e, const char *path)
{
    char rq[256];
    int n = snprintf(rq, sizeof(rq), "GET %s HTTP/1.1\r\nHost: example.com\r\n\r\n", path);
    assert_true(n > 0 && (size_t)n < sizeof(rq));
    pl_client_connect(e);
    pl_client_puts(e, rq);
}

/* cluster.c.upstream_rq_<code> */
static int64_t code_stat(pl_env *e, unsigned code)
{
    return pl_code_stat(e, "cluster.c.upstream_rq", code);
}

/* A GET goes upstream; the upstream's status line and body reach the client unchanged. */
static void test_get_routed_and_relayed(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world"};
    pl_start(e, "", ROUTE_ALL, pl_upstream_start(e, answers, 1));
    get(e, "/hello");
    pl_expect_status_body(e, "HTTP/1.1 200 OK", "hello world");
    assert_int_equal(e->up.requests, 1);
    assert_int_equal(strncmp(e->up.first, "GET /hello HTTP/1.1\r\n", 21), 0);
    assert_non_null(strcasestr(e->up.first, "\r\nhost: example.com\r\n"));
    assert_int_equal(pl_cstat(e, "upstream_rq_total"), 1);
    assert_int_equal(code_stat(e, 200), 1);
}

/* Nothing listens at the endpoint: 503 with Envoy's reset text (UF). */
static void test_connect_refused_503(void **state)
{
    pl_env *e = *state;
    pl_start(e, "", ROUTE_ALL, pl_refusing_port(e));
    get(e, "/");
    pl_expect_status_body(
        e, "HTTP/1.1 503 Service Unavailable",
        "upstream connect error or disconnect/reset before headers. reset reason: "
        "remote connection failure, transport failure reason: delayed connect "
        "error: Connection refused");
    assert_int_equal(pl_cstat(e, "upstream_cx_connect_fail"), 1);
    assert_int_equal(code_stat(e, 503), 1);
}

/* The upstream never answers: after the route timeout (0.2 s) 504 "upstream request
 * timeout" (UT), not before. */
static void test_route_timeout_504(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    pl_start(e, "",
             "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
             "\"timeout\":\"0.2s\"}}]",
             pl_upstream_start(e, answers, 1));
    uint64_t t0 = uv_hrtime();
    get(e, "/slow");
    pl_expect_status_body(e, "HTTP/1.1 504 Gateway Timeout", "upstream request timeout");
    uint64_t took = uv_hrtime() - t0;
    assert_true(took >= 150000000ULL);
    assert_int_equal(e->up.requests, 1);
    assert_int_equal(pl_cstat(e, "upstream_rq_timeout"), 1);
    assert_int_equal(code_stat(e, 504), 1);
}

/* retry_on 5xx, num_retries 1: the first try answers 503, the retry 200; the client sees
 * only the 200 and the cluster counts one retry (the 503 under retry.upstream_rq_503). */
static void test_retry_5xx_then_200(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
    pl_start(e, "",
             "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
             "\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":1}}}]",
             pl_upstream_start(e, answers, 2));
    get(e, "/");
    pl_expect_status_body(e, "HTTP/1.1 200 OK", "ok");
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(pl_cstat(e, "upstream_rq_retry"), 1);
    assert_int_equal(pl_cstat(e, "upstream_rq_retry_success"), 1);
    /* the retried try counts as retry.upstream_rq_503, not upstream_rq_503 */
    assert_int_equal(pl_code_stat(e, "cluster.c.retry.upstream_rq", 503), 1);
    assert_int_equal(code_stat(e, 503), 0);
    assert_int_equal(code_stat(e, 200), 1);
    assert_int_equal(pl_cstat(e, "upstream_rq_total"), 2);
}

/* No route matches the path: 404 with an empty body, nothing sent upstream (NR). */
static void test_no_route_404(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    pl_start(e, "", "[{\"match\":{\"prefix\":\"/api\"},\"route\":{\"cluster\":\"c\"}}]",
             pl_upstream_start(e, answers, 1));
    get(e, "/other");
    pl_expect_status_body(e, "HTTP/1.1 404 Not Found", "");
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_cstat(e, "upstream_rq_total"), 0);
    assert_int_equal(pl_hstat(e, "no_route"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_routed_and_relayed, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused_503, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_route_timeout_504, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_retry_5xx_then_200, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_no_route_404, pl_setup, pl_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
