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
 * Every wait is bounded (5 s), so a bug fails the test instead of hanging it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/config/route.h"
#include "proxy/server/listen_socket.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"
#include "proxy/server/gen.h"
#include "proxy/server/worker.h"

enum { MAX_UP = 8, BUF = 8192 };

/* The test's upstream: a listening socket, the connections it accepted, and the scripted
 * answers, one per request in order (NULL: never answer). */
typedef struct {
    int lfd;
    int fds[MAX_UP];
    char in[MAX_UP][BUF];
    size_t inlen[MAX_UP];
    size_t nfds;
    const char *const *answers;
    size_t nanswers;
    size_t requests; /* complete requests heard */
    char first[BUF]; /* the head of the first one */
} upstream;

typedef struct {
    wp_server srv;
    wp_worker w;
    bool started;
    upstream up;
    int client;
    char resp[BUF];
    size_t resplen;
    int refuse_fd; /* refusing_port's socket, -1 none */
} env;

static void nonblock(int fd)
{
    assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/* A nonblocking loopback listener; its port in *port. */
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
    nonblock(fd);
    return fd;
}

/* A port that refuses connections for the test's life: bound (so no other process can take
 * it) but not listening, so a connect gets a reset (ECONNREFUSED). */
static int refusing_port(env *e)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    e->refuse_fd = fd;
    return ntohs(a.sin_port);
}

/* The upstream's side of one pump step: accept, read, answer each complete request. */
static void serve(upstream *u)
{
    if (u->lfd < 0)
        return;
    int fd;
    while (u->nfds < MAX_UP && (fd = accept(u->lfd, NULL, NULL)) >= 0) {
        nonblock(fd);
        u->fds[u->nfds++] = fd;
    }
    for (size_t i = 0; i < u->nfds; i++) {
        if (u->fds[i] < 0)
            continue;
        ssize_t n = read(u->fds[i], u->in[i] + u->inlen[i], BUF - 1 - u->inlen[i]);
        if (n == 0) {
            close(u->fds[i]);
            u->fds[i] = -1;
            continue;
        }
        if (n < 0)
            continue;
        u->inlen[i] += (size_t)n;
        u->in[i][u->inlen[i]] = '\0';
        char *end = strstr(u->in[i], "\r\n\r\n"); /* requests here carry no body */
        if (!end)
            continue;
        size_t used = (size_t)(end + 4 - u->in[i]);
        if (u->requests == 0)
            snprintf(u->first, sizeof(u->first), "%.*s", (int)used, u->in[i]);
        memmove(u->in[i], u->in[i] + used, u->inlen[i] - used + 1);
        u->inlen[i] -= used;
        assert_true(u->requests < u->nanswers);
        const char *a = u->answers[u->requests++];
        if (a)
            assert_int_equal(write(u->fds[i], a, strlen(a)), (ssize_t)strlen(a));
    }
}

/* Reads what the client has; true once a whole response (headers and Content-Length bytes
 * of body) is in e->resp. */
static bool response_complete(env *e)
{
    ssize_t n;
    while ((n = read(e->client, e->resp + e->resplen, BUF - 1 - e->resplen)) > 0)
        e->resplen += (size_t)n;
    e->resp[e->resplen] = '\0';
    char *end = strstr(e->resp, "\r\n\r\n");
    if (!end)
        return false;
    const char *cl = NULL;
    for (char *p = strstr(e->resp, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, "content-length:", 15) == 0)
            cl = p + 17;
    assert_non_null(cl);
    return e->resplen >= (size_t)(end + 4 - e->resp) + strtoul(cl, NULL, 10);
}

/* Runs the worker loop and the upstream until the client has a whole response; fails after
 * 5 s. */
static void pump(env *e)
{
    uint64_t end = uv_hrtime() + 5000000000ULL;
    while (!response_complete(e)) {
        if (uv_hrtime() > end)
            fail_msg("no whole response within 5 s; got %zu bytes: %s", e->resplen, e->resp);
        uv_run(&e->w.loop, UV_RUN_NOWAIT);
        serve(&e->up);
        usleep(500);
    }
}

/* A worker with one listener on a loopback port the kernel picks (returned) whose route
 * config has the
 * routes `routes` (a JSON array) and one cluster "c" with one endpoint at upstream_port. */
static int start(env *e, const char *routes, int upstream_port)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"listeners\":[{\"name\":\"l\",\"address\":{"
             "\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":%d}},"
             "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.http_"
             "connection_manager\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy."
             "extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\","
             "\"stat_prefix\":\"ingress_http\",\"route_config\":{\"virtual_hosts\":[{\"name\":"
             "\"v\",\"domains\":[\"*\"],\"routes\":%s}]},\"http_filters\":[{\"name\":\"envoy."
             "filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy."
             "extensions.filters.http.router.v3.Router\"}}]}}]}]}],\"clusters\":[{\"name\":"
             "\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\",\"load_assignment\":{"
             "\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
             "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":%d}}}"
             "}]}]}}]}}",
             0, routes, upstream_port);
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("bootstrap: %s", wf_strbuf_cstr(&err));
    assert_int_equal(c->nlisteners, 1);
    assert_int_equal(
        wp_route_index_build(&c->arena, c->listeners[0].chains[0].hcm->route_config, &err), 0);
    int *fds = malloc(sizeof(int));
    assert_non_null(fds);
    fds[0] = wp_listen_socket(&c->listeners[0], &err);
    if (fds[0] < 0)
        fail_msg("listen: %s", wf_strbuf_cstr(&err));
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    assert_int_equal(getsockname(fds[0], (struct sockaddr *)&a, &alen), 0);
    int port = ntohs(a.sin_port);
    wp_gen *g = wp_gen_new(&e->srv, c, &err);
    assert_non_null(g);
    wp_gen_post post = {.gen = g, .fds = fds};
    assert_int_equal(wp_worker_init(&e->w, &e->srv, 0, &post, &err), 0);
    e->started = true;
    wf_strbuf_free(&err);
    return port;
}

/* Connects the client to the proxy's port and sends a GET of path. */
static void get(env *e, int port, const char *path)
{
    e->client = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(e->client >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(e->client, (struct sockaddr *)&a, sizeof(a)), 0);
    char rq[256];
    int n = snprintf(rq, sizeof(rq), "GET %s HTTP/1.1\r\nHost: example.com\r\n\r\n", path);
    assert_int_equal(write(e->client, rq, (size_t)n), n);
    nonblock(e->client);
}

/* The response's status line (without CRLF) and body. */
static void expect_response(env *e, const char *status_line, const char *body)
{
    size_t sl = strlen(status_line);
    if (strncmp(e->resp, status_line, sl) != 0 || strncmp(e->resp + sl, "\r\n", 2) != 0)
        fail_msg("want status line \"%s\", got: %s", status_line, e->resp);
    const char *b = strstr(e->resp, "\r\n\r\n") + 4;
    assert_string_equal(b, body);
}

static int64_t cstat(env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_counter(e->srv.stats_store, full));
}

/* "cluster.c.<scope>_<code>" (status-code counters live in a code scope). */
static int64_t scope_code_stat(env *e, const char *scope_name, unsigned code)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.%s", scope_name);
    uint32_t scope = wp_stats_code_scope(e->srv.stats_store, full);
    return wp_stats_code_value(e->srv.stats_store, scope, code);
}

static int64_t code_stat(env *e, unsigned code)
{
    return scope_code_stat(e, "upstream_rq", code);
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
    e->up.lfd = -1;
    e->client = -1;
    e->refuse_fd = -1;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    if (e->client >= 0)
        close(e->client);
    for (size_t i = 0; i < e->up.nfds; i++)
        if (e->up.fds[i] >= 0)
            close(e->up.fds[i]);
    if (e->up.lfd >= 0)
        close(e->up.lfd);
    if (e->refuse_fd >= 0)
        close(e->refuse_fd);
    if (e->started) {
        wp_worker_command(&e->w, WP_WORKER_STOP);
        for (int i = 0; i < 5; i++)
            uv_run(&e->w.loop, UV_RUN_NOWAIT);
        wp_worker_free(&e->w);
    }
    wp_alog_files_free(e->srv.alog_files);
    wp_stats_free(e->srv.stats_store);
    free(e);
    return 0;
}

static const char ROUTE_ALL[] = "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]";

/* Starts the upstream with its answers; returns its port. */
static int upstream_start(env *e, const char *const *answers, size_t n)
{
    int port;
    e->up.lfd = listener(&port);
    e->up.answers = answers;
    e->up.nanswers = n;
    return port;
}

/* A GET goes upstream; the upstream's status line and body reach the client unchanged. */
static void test_get_routed_and_relayed(void **state)
{
    env *e = *state;
    static const char *const answers[] = {
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world"};
    int up = upstream_start(e, answers, 1);
    get(e, start(e, ROUTE_ALL, up), "/hello");
    pump(e);
    expect_response(e, "HTTP/1.1 200 OK", "hello world");
    assert_int_equal(e->up.requests, 1);
    assert_int_equal(strncmp(e->up.first, "GET /hello HTTP/1.1\r\n", 21), 0);
    assert_non_null(strcasestr(e->up.first, "\r\nhost: example.com\r\n"));
    assert_int_equal(cstat(e, "upstream_rq_total"), 1);
    assert_int_equal(code_stat(e, 200), 1);
}

/* Nothing listens at the endpoint: 503 with Envoy's reset text (UF). */
static void test_connect_refused_503(void **state)
{
    env *e = *state;
    get(e, start(e, ROUTE_ALL, refusing_port(e)), "/");
    pump(e);
    expect_response(e, "HTTP/1.1 503 Service Unavailable",
                    "upstream connect error or disconnect/reset before headers. reset reason: "
                    "remote connection failure, transport failure reason: delayed connect "
                    "error: Connection refused");
    assert_int_equal(cstat(e, "upstream_cx_connect_fail"), 1);
    assert_int_equal(code_stat(e, 503), 1);
}

/* The upstream never answers: after the route timeout (0.2 s) 504 "upstream request
 * timeout" (UT), not before. */
static void test_route_timeout_504(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    int up = upstream_start(e, answers, 1);
    int port = start(e,
                     "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
                     "\"timeout\":\"0.2s\"}}]",
                     up);
    uint64_t t0 = uv_hrtime();
    get(e, port, "/slow");
    pump(e);
    uint64_t took = uv_hrtime() - t0;
    expect_response(e, "HTTP/1.1 504 Gateway Timeout", "upstream request timeout");
    assert_true(took >= 150000000ULL);
    assert_int_equal(e->up.requests, 1);
    assert_int_equal(cstat(e, "upstream_rq_timeout"), 1);
    assert_int_equal(code_stat(e, 504), 1);
}

/* retry_on 5xx, num_retries 1: the first try answers 503, the retry 200; the client sees
 * only the 200 and the cluster counts one retry (the 503 under retry.upstream_rq_503). */
static void test_retry_5xx_then_200(void **state)
{
    env *e = *state;
    static const char *const answers[] = {
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
    int up = upstream_start(e, answers, 2);
    int port = start(e,
                     "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
                     "\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":1}}}]",
                     up);
    get(e, port, "/");
    pump(e);
    expect_response(e, "HTTP/1.1 200 OK", "ok");
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(cstat(e, "upstream_rq_retry"), 1);
    assert_int_equal(cstat(e, "upstream_rq_retry_success"), 1);
    /* the retried try counts as retry.upstream_rq_503, not upstream_rq_503 */
    assert_int_equal(scope_code_stat(e, "retry.upstream_rq", 503), 1);
    assert_int_equal(code_stat(e, 503), 0);
    assert_int_equal(code_stat(e, 200), 1);
    assert_int_equal(cstat(e, "upstream_rq_total"), 2);
}

/* No route matches the path: 404 with an empty body, nothing sent upstream (NR). */
static void test_no_route_404(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    int up = upstream_start(e, answers, 1);
    int port = start(e, "[{\"match\":{\"prefix\":\"/api\"},\"route\":{\"cluster\":\"c\"}}]", up);
    get(e, port, "/other");
    pump(e);
    expect_response(e, "HTTP/1.1 404 Not Found", "");
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(cstat(e, "upstream_rq_total"), 0);
    assert_int_equal(
        wp_stats_value(e->srv.stats_store,
                       wp_stats_counter(e->srv.stats_store, "http.ingress_http.no_route")),
        1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_routed_and_relayed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused_503, setup, teardown),
        cmocka_unit_test_setup_teardown(test_route_timeout_504, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_5xx_then_200, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_route_404, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
