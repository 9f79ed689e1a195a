/*
 * test_conn_manager.c - the HTTP connection manager (proxy/http/conn.c: stream lifecycle,
 * keep-alive, local replies, timeouts, access-log and stats hand-off) on a real worker loop
 * driven on the test's thread, as test_router.c drives it: one listener on a loopback port the
 * kernel picks routes to cluster "c", whose one endpoint is a loopback socket the test serves
 * itself with scripted HTTP/1.1 answers (or a bound socket that refuses connections). Client
 * sockets write raw bytes; the test checks what they read back byte-exact (the date and
 * x-envoy-upstream-service-time values masked as "*"), whether the proxy closed the connection,
 * the http.ingress_http.* counters, and the access log file's lines, as Envoy answers
 * (envoy-istio-behaviour.md):
 *  - keep-alive: requests on one connection are answered on it, one downstream connection
 *    counted; "Connection: close" closes after the answer; pipelined requests are answered in
 *    order;
 *  - HTTP/1.0 (accept_http_10): closed after the answer unless "Connection: keep-alive";
 *    without accept_http_10 426 Upgrade Required (low_version);
 *  - codec errors: a head over max_request_headers_kb is 431, a malformed request 400, a
 *    non-chunked Transfer-Encoding 501, the reason phrase as body, flag DPE, http1.* details,
 *    the connection closed;
 *  - per_try_timeout: a silent try is retried, the second try's answer reaches the client;
 *    with no retry left 504 "upstream request timeout" (UT,URX upstream_per_try_timeout);
 *  - the retry buffer: a body over per_request_buffer_limit_bytes arriving during a back-off
 *    is 507 (request_payload_exceeded_retry_buffer_limit); arriving while an attempt is in
 *    flight it streams on unprotected (the upstream's 503 is not retried);
 *  - stream_idle_timeout (408 / 504 "stream timeout", SI), request_timeout (408 "request
 *    timeout", request_overall_timeout), the connection idle_timeout (closed, no bytes);
 *  - the file access log: one line per request with the response flags (NR for no route).
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
#include "proxy/net/listen_socket.h"
#include "proxy/proxy_internal.h"
#include "proxy/server/gen.h"
#include "proxy/server/worker.h"

enum { MAX_UP = 8, MAX_RQ = 8, BUF = 96 * 1024 };

/* The test's upstream: a listening socket, the connections it accepted, and the scripted
 * answers, one per complete request in order (NULL: never answer). */
typedef struct {
    int lfd;
    int fds[MAX_UP];
    char *in[MAX_UP];
    size_t inlen[MAX_UP];
    size_t nfds;
    const char *const *answers;
    size_t nanswers;
    size_t requests;         /* complete requests heard */
    char lines[MAX_RQ][128]; /* their request lines */
    size_t body_len[MAX_RQ]; /* and body lengths */
} upstream;

typedef struct {
    wp_server srv;
    wp_worker w;
    bool started;
    int port; /* the proxy's */
    upstream up;
    int refuse_fd; /* refusing_port's socket, -1 none */
    int client;
    char *rx; /* every byte the client read */
    size_t rxlen, consumed;
    bool eof; /* the proxy closed the client's connection */
    char log_path[64];
} env;

static void nonblock(int fd)
{
    assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

static int loopback_socket(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof(*a);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)a, &len), 0);
    return fd;
}

/* Starts the upstream with its answers; returns its port. */
static int upstream_start(env *e, const char *const *answers, size_t n)
{
    struct sockaddr_in a;
    e->up.lfd = loopback_socket(&a);
    assert_int_equal(listen(e->up.lfd, 16), 0);
    nonblock(e->up.lfd);
    e->up.answers = answers;
    e->up.nanswers = n;
    return ntohs(a.sin_port);
}

/* A port that refuses connections for the test's life: bound, never listening. */
static int refusing_port(env *e)
{
    struct sockaddr_in a;
    e->refuse_fd = loopback_socket(&a);
    return ntohs(a.sin_port);
}

/* The value of header name (with ": ") in head [p, end), or NULL. */
static const char *header_value(const char *p, const char *end, const char *name)
{
    size_t n = strlen(name);
    for (p = strstr(p, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':')
            return p + 2 + n + 1;
    return NULL;
}

/* Answers each complete request (head and Content-Length bytes of body) buffered on
 * upstream connection i. */
static void serve_requests(upstream *u, size_t i)
{
    for (;;) {
        char *end = strstr(u->in[i], "\r\n\r\n");
        if (!end)
            return;
        const char *cl = header_value(u->in[i], end, "content-length");
        size_t body = cl ? strtoul(cl, NULL, 10) : 0;
        size_t used = (size_t)(end + 4 - u->in[i]) + body;
        if (u->inlen[i] < used)
            return;
        assert_true(u->requests < u->nanswers);
        if (u->requests < MAX_RQ) {
            snprintf(u->lines[u->requests], sizeof(u->lines[0]), "%.*s",
                     (int)strcspn(u->in[i], "\r"), u->in[i]);
            u->body_len[u->requests] = body;
        }
        memmove(u->in[i], u->in[i] + used, u->inlen[i] - used + 1);
        u->inlen[i] -= used;
        const char *a = u->answers[u->requests++];
        if (a)
            assert_int_equal(write(u->fds[i], a, strlen(a)), (ssize_t)strlen(a));
    }
}

/* The upstream's side of one pump step: accept, read, answer. */
static void serve(upstream *u)
{
    int fd;
    while (u->lfd >= 0 && u->nfds < MAX_UP && (fd = accept(u->lfd, NULL, NULL)) >= 0) {
        nonblock(fd);
        u->in[u->nfds] = calloc(1, BUF);
        assert_non_null(u->in[u->nfds]);
        u->fds[u->nfds++] = fd;
    }
    for (size_t i = 0; i < u->nfds; i++) {
        if (u->fds[i] < 0)
            continue;
        assert_true(u->inlen[i] < BUF - 1);
        ssize_t n = read(u->fds[i], u->in[i] + u->inlen[i], BUF - 1 - u->inlen[i]);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            close(u->fds[i]);
            u->fds[i] = -1;
            continue;
        }
        if (n < 0)
            continue;
        u->inlen[i] += (size_t)n;
        u->in[i][u->inlen[i]] = '\0';
        serve_requests(u, i);
    }
}

/* Reads what the client has; a close (FIN or reset) sets e->eof. */
static void client_read(env *e)
{
    while (!e->eof && e->client >= 0) {
        assert_true(e->rxlen < BUF - 1);
        ssize_t n = read(e->client, e->rx + e->rxlen, BUF - 1 - e->rxlen);
        if (n > 0) {
            e->rxlen += (size_t)n;
            e->rx[e->rxlen] = '\0';
        } else if (n == 0 || errno == ECONNRESET) {
            e->eof = true;
        } else {
            break;
        }
    }
}

static void step(env *e)
{
    uv_run(&e->w.loop, UV_RUN_NOWAIT);
    serve(&e->up);
    client_read(e);
    usleep(500);
}

typedef bool (*cond_fn)(env *e, const void *arg);

/* Runs the worker loop, the upstream and the client until cond holds; fails after 5 s. */
static void pump_until(env *e, cond_fn cond, const void *arg, const char *what)
{
    uint64_t end = uv_hrtime() + 5000000000ULL;
    while (!cond(e, arg)) {
        if (uv_hrtime() > end)
            fail_msg("not within 5 s: %s; the client read %zu bytes: %s", what, e->rxlen, e->rx);
        step(e);
    }
}

/* Runs everything for ms milliseconds. */
static void pump_for(env *e, unsigned ms)
{
    uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000ULL;
    while (uv_hrtime() < end)
        step(e);
}

/* The length of the whole response at e->rx + e->consumed (head and Content-Length bytes of
 * body), 0 while incomplete. */
static size_t response_len(const env *e)
{
    const char *p = e->rx + e->consumed;
    const char *end = strstr(p, "\r\n\r\n");
    if (!end)
        return 0;
    const char *cl = header_value(p, end, "content-length");
    if (!cl)
        fail_msg("a response without content-length: %s", p);
    size_t len = (size_t)(end + 4 - p) + strtoul(cl, NULL, 10);
    return e->rxlen - e->consumed >= len ? len : 0;
}

static bool has_response(env *e, const void *arg)
{
    (void)arg;
    return response_len(e) > 0;
}

static bool closed(env *e, const void *arg)
{
    (void)arg;
    return e->eof;
}

/* Takes the next whole response off the client's bytes, with the values of date and
 * x-envoy-upstream-service-time replaced by "*", and asserts it is want. */
static void expect_response(env *e, const char *want)
{
    pump_until(e, has_response, NULL, "a whole response");
    size_t len = response_len(e);
    char got[BUF];
    size_t n = 0;
    const char *p = e->rx + e->consumed, *end = p + len;
    const char *body = strstr(p, "\r\n\r\n") + 2;
    while (p < end) {
        const char *eol = p < body ? strstr(p, "\r\n") + 2 : end;
        if (strncmp(p, "date: ", 6) == 0 ||
            strncmp(p, "x-envoy-upstream-service-time: ", 31) == 0) {
            size_t name = (size_t)(strchr(p, ':') + 2 - p);
            n += (size_t)snprintf(got + n, sizeof(got) - n, "%.*s*\r\n", (int)name, p);
        } else {
            memcpy(got + n, p, (size_t)(eol - p));
            n += (size_t)(eol - p);
        }
        p = eol;
    }
    got[n] = '\0';
    e->consumed += len;
    assert_string_equal(got, want);
}

/* The proxy closes the connection with nothing more written. */
static void expect_closed(env *e)
{
    pump_until(e, closed, NULL, "the proxy closes the client's connection");
    assert_string_equal(e->rx + e->consumed, "");
}

/* The connection stays open for ms milliseconds with nothing more written. */
static void expect_open(env *e, unsigned ms)
{
    pump_for(e, ms);
    assert_false(e->eof);
    assert_string_equal(e->rx + e->consumed, "");
}

/* A worker with one listener on a loopback port the kernel picks (e->port): its HCM has the
 * fields `hcm` (JSON members ending in a comma, or "") and the routes `routes` (a JSON
 * array); one cluster "c" with one endpoint at upstream_port. */
static void start(env *e, const char *hcm, const char *routes, int upstream_port)
{
    char text[8192];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"listeners\":[{\"name\":\"l\",\"address\":{"
             "\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":0}},"
             "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.http_"
             "connection_manager\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy."
             "extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\","
             "%s\"stat_prefix\":\"ingress_http\",\"route_config\":{\"virtual_hosts\":[{\"name\":"
             "\"v\",\"domains\":[\"*\"],\"routes\":%s}]},\"http_filters\":[{\"name\":\"envoy."
             "filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy."
             "extensions.filters.http.router.v3.Router\"}}]}}]}]}],\"clusters\":[{\"name\":"
             "\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\",\"load_assignment\":{"
             "\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
             "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":%d}}}"
             "}]}]}}]}}",
             hcm, routes, upstream_port);
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
    e->port = ntohs(a.sin_port);
    wp_gen *g = wp_gen_new(&e->srv, c, &err);
    if (!g)
        fail_msg("gen: %s", wf_strbuf_cstr(&err));
    wp_gen_post post = {.gen = g, .fds = fds};
    assert_int_equal(wp_worker_init(&e->w, &e->srv, 0, &post, &err), 0);
    e->started = true;
    wf_strbuf_free(&err);
}

/* Connects the client to the proxy. */
static void client_connect(env *e)
{
    e->client = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(e->client >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)e->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(e->client, (struct sockaddr *)&a, sizeof(a)), 0);
    nonblock(e->client);
}

/* Writes len bytes of p from the client, running the loop while the socket is full; stops
 * early when the proxy closed the connection (it may answer before reading everything). */
static void client_send(env *e, const char *p, size_t len)
{
    uint64_t end = uv_hrtime() + 5000000000ULL;
    while (len) {
        ssize_t n = send(e->client, p, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
            return;
        if (n < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            if (uv_hrtime() > end)
                fail_msg("could not send %zu bytes within 5 s", len);
            step(e);
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void client_puts(env *e, const char *s)
{
    client_send(e, s, strlen(s));
}

/* http.ingress_http.<name>: a counter, or a gauge. */
static int64_t hstat(env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "http.ingress_http.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_counter(e->srv.stats_store, full));
}

static int64_t hgauge(env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "http.ingress_http.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_gauge(e->srv.stats_store, full));
}

static int64_t cstat(env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_counter(e->srv.stats_store, full));
}

typedef struct {
    const char *name;
    int64_t at_least;
} stat_want;

static bool cstat_reached(env *e, const void *arg)
{
    const stat_want *w = arg;
    return cstat(e, w->name) >= w->at_least;
}

/* The access log: "<method> <path> <protocol> <code> <flags> <details>" per request, in a new
 * file (e->log_path); returns the HCM field for start(). */
static const char *access_log(env *e)
{
    static char field[1024];
    snprintf(e->log_path, sizeof(e->log_path), "/tmp/wf-test-cm-XXXXXX");
    int fd = mkstemp(e->log_path);
    assert_true(fd >= 0);
    close(fd);
    snprintf(field, sizeof(field),
             "\"access_log\":[{\"name\":\"envoy.access_loggers.file\",\"typed_config\":{"
             "\"@type\":\"type.googleapis.com/envoy.extensions.access_loggers.file.v3."
             "FileAccessLog\",\"path\":\"%s\",\"log_format\":{\"text_format_source\":{"
             "\"inline_string\":\"%%REQ(:METHOD)%% %%REQ(:PATH)%% %%PROTOCOL%% "
             "%%RESPONSE_CODE%% %%RESPONSE_FLAGS%% %%RESPONSE_CODE_DETAILS%%\\n\"}}}}],",
             e->log_path);
    return field;
}

static size_t log_size(env *e, char *out, size_t cap)
{
    FILE *f = fopen(e->log_path, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
    return n;
}

static bool log_has_lines(env *e, const void *arg)
{
    char text[4096];
    size_t n = log_size(e, text, sizeof(text)), lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    return lines >= *(const size_t *)arg;
}

/* Waits for the access log to hold nlines lines (the writer flushes every 10 ms) and asserts
 * that the file is exactly want; then waits 50 ms more and asserts that no line followed. */
static void expect_log(env *e, size_t nlines, const char *want)
{
    char text[4096];
    pump_until(e, log_has_lines, &nlines, "the access log lines");
    pump_for(e, 50);
    log_size(e, text, sizeof(text));
    assert_string_equal(text, want);
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    e->srv.nworkers = 1;
    e->srv.flush_interval_ms = 10; /* access log lines reach the file soon */
    e->srv.stats_store = wp_stats_new(2);
    e->srv.alog_files = wp_alog_files_new();
    assert_non_null(e->srv.stats_store);
    assert_non_null(e->srv.alog_files);
    e->rx = calloc(1, BUF);
    assert_non_null(e->rx);
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
    for (size_t i = 0; i < e->up.nfds; i++) {
        if (e->up.fds[i] >= 0)
            close(e->up.fds[i]);
        free(e->up.in[i]);
    }
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
    if (e->log_path[0])
        unlink(e->log_path);
    free(e->rx);
    free(e);
    return 0;
}

static const char ROUTE_ALL[] = "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]";

#define GET(path) "GET " path " HTTP/1.1\r\nHost: example.com\r\n\r\n"

/* What the proxy writes for an upstream answer "HTTP/1.1 200 OK", "content-length: <n>", body
 * (conn_hdr: "" or a "connection: ...\r\n" line). */
#define RELAYED_200(n, conn_hdr, body)                                                             \
    "HTTP/1.1 200 OK\r\ncontent-length: " n "\r\nx-envoy-upstream-service-time: *\r\n"             \
    "date: *\r\nserver: envoy\r\n" conn_hdr "\r\n" body
#define UP_200(n, body) "HTTP/1.1 200 OK\r\ncontent-length: " n "\r\n\r\n" body

/* A local reply with a text/plain body (conn_hdr as above). */
#define LOCAL_REPLY(status, n, conn_hdr, body)                                                     \
    "HTTP/1.1 " status "\r\ncontent-type: text/plain\r\ncontent-length: " n "\r\n"                 \
    "date: *\r\nserver: envoy\r\n" conn_hdr "\r\n" body
#define CLOSE "connection: close\r\n"

/* ---------- keep-alive, pipelining, HTTP/1.0 ---------- */

/* Two requests one after the other on one connection: both answered on it, one downstream
 * connection counted and still open; "Connection: close" on a third closes after its answer
 * (connection: close in the answer, a local close). */
static void test_keep_alive_then_connection_close(void **state)
{
    env *e = *state;
    static const char *const answers[] = {UP_200("5", "first"), UP_200("6", "second"),
                                          UP_200("4", "last")};
    start(e, "", ROUTE_ALL, upstream_start(e, answers, 3));
    client_connect(e);
    client_puts(e, GET("/one"));
    expect_response(e, RELAYED_200("5", "", "first"));
    client_puts(e, GET("/two"));
    expect_response(e, RELAYED_200("6", "", "second"));
    expect_open(e, 50);
    assert_int_equal(hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(hgauge(e, "downstream_cx_active"), 1);
    assert_int_equal(hstat(e, "downstream_rq_total"), 2);
    assert_int_equal(hstat(e, "downstream_rq_completed"), 2);
    assert_int_equal(hstat(e, "downstream_rq_2xx"), 2);
    assert_int_equal(hgauge(e, "downstream_rq_active"), 0);
    client_puts(e, "GET /three HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    expect_response(e, RELAYED_200("4", CLOSE, "last"));
    expect_closed(e);
    assert_int_equal(e->up.requests, 3);
    assert_string_equal(e->up.lines[0], "GET /one HTTP/1.1");
    assert_string_equal(e->up.lines[1], "GET /two HTTP/1.1");
    assert_string_equal(e->up.lines[2], "GET /three HTTP/1.1");
    assert_int_equal(hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(hstat(e, "downstream_rq_total"), 3);
    assert_int_equal(hstat(e, "downstream_cx_destroy"), 1);
    assert_int_equal(hstat(e, "downstream_cx_destroy_local"), 1);
    assert_int_equal(hstat(e, "downstream_cx_destroy_remote"), 0);
    assert_int_equal(hgauge(e, "downstream_cx_active"), 0);
}

/* Two requests in one write: answered in order, the second only after the first. */
static void test_pipelined_answered_in_order(void **state)
{
    env *e = *state;
    static const char *const answers[] = {UP_200("1", "a"), UP_200("2", "bb")};
    start(e, "", ROUTE_ALL, upstream_start(e, answers, 2));
    client_connect(e);
    client_puts(e, GET("/a") GET("/b"));
    expect_response(e, RELAYED_200("1", "", "a"));
    expect_response(e, RELAYED_200("2", "", "bb"));
    expect_open(e, 50);
    assert_int_equal(e->up.requests, 2);
    assert_string_equal(e->up.lines[0], "GET /a HTTP/1.1");
    assert_string_equal(e->up.lines[1], "GET /b HTTP/1.1");
    assert_int_equal(hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(hstat(e, "downstream_rq_total"), 2);
    assert_int_equal(hstat(e, "downstream_rq_2xx"), 2);
}

static const char HTTP10[] = "\"http_protocol_options\":{\"accept_http_10\":true},";

/* HTTP/1.0 without keep-alive: answered (HTTP/1.1 status line, as Envoy's codec writes it,
 * connection: close) and closed; the upstream request is HTTP/1.1. */
static void test_http10_closes_after_answer(void **state)
{
    env *e = *state;
    static const char *const answers[] = {UP_200("2", "ok")};
    start(e, HTTP10, ROUTE_ALL, upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, "GET /old HTTP/1.0\r\nHost: example.com\r\n\r\n");
    expect_response(e, RELAYED_200("2", CLOSE, "ok"));
    expect_closed(e);
    assert_string_equal(e->up.lines[0], "GET /old HTTP/1.1");
    assert_int_equal(hstat(e, "downstream_cx_destroy_local"), 1);
}

/* HTTP/1.0 with "Connection: keep-alive": the answer says keep-alive and the connection
 * carries a second request. */
static void test_http10_keep_alive(void **state)
{
    env *e = *state;
    static const char *const answers[] = {UP_200("1", "x"), UP_200("1", "y")};
    start(e, HTTP10, ROUTE_ALL, upstream_start(e, answers, 2));
    client_connect(e);
    client_puts(e, "GET /1 HTTP/1.0\r\nHost: example.com\r\nConnection: keep-alive\r\n\r\n");
    expect_response(e, RELAYED_200("1", "connection: keep-alive\r\n", "x"));
    client_puts(e, "GET /2 HTTP/1.0\r\nHost: example.com\r\nConnection: keep-alive\r\n\r\n");
    expect_response(e, RELAYED_200("1", "connection: keep-alive\r\n", "y"));
    expect_open(e, 50);
    assert_int_equal(hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(hstat(e, "downstream_rq_total"), 2);
}

/* Without accept_http_10 HTTP/1.0 is 426 Upgrade Required, empty body, details low_version,
 * and the connection closes; nothing goes upstream. */
static void test_http10_not_accepted_426(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    start(e, access_log(e), ROUTE_ALL, upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, "GET /old HTTP/1.0\r\nHost: example.com\r\n\r\n");
    expect_response(e, "HTTP/1.1 426 Upgrade Required\r\ncontent-length: 0\r\ndate: *\r\n"
                       "server: envoy\r\nconnection: close\r\n\r\n");
    expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(hstat(e, "downstream_rq_4xx"), 1);
    expect_log(e, 1, "GET /old HTTP/1.0 426 - low_version\n");
}

/* ---------- codec errors ---------- */

/* A head over max_request_headers_kb (1 KiB here): 431 with the reason phrase as body, DPE
 * http1.headers_too_large, downstream_cx_protocol_error, closed; nothing goes upstream. */
static void test_head_over_limit_431(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    char field[2048];
    start(e, "\"max_request_headers_kb\":1,", ROUTE_ALL, upstream_start(e, answers, 1));
    memset(field, 'a', sizeof(field) - 1);
    field[sizeof(field) - 1] = '\0';
    client_connect(e);
    client_puts(e, "GET / HTTP/1.1\r\nHost: example.com\r\nx-big: ");
    client_puts(e, field);
    client_puts(e, "\r\n\r\n");
    expect_response(e, LOCAL_REPLY("431 Request Header Fields Too Large", "31", CLOSE,
                                   "Request Header Fields Too Large"));
    expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(hstat(e, "downstream_cx_protocol_error"), 1);
    assert_int_equal(hstat(e, "downstream_rq_4xx"), 1);
}

/* The default limit (60 KiB) with a 70 KiB head: the read buffer grows to the limit, then
 * 431 as above; the access log shows DPE http1.headers_too_large (the request line was never
 * parsed: no method, path or protocol). */
static void test_head_over_default_limit_431(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    start(e, access_log(e), ROUTE_ALL, upstream_start(e, answers, 1));
    size_t n = 70 * 1024;
    char *field = malloc(n + 1);
    assert_non_null(field);
    memset(field, 'a', n);
    field[n] = '\0';
    client_connect(e);
    client_puts(e, "GET /big HTTP/1.1\r\nHost: example.com\r\nx-big: ");
    client_puts(e, field);
    free(field);
    expect_response(e, LOCAL_REPLY("431 Request Header Fields Too Large", "31", CLOSE,
                                   "Request Header Fields Too Large"));
    expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(hstat(e, "downstream_cx_protocol_error"), 1);
    expect_log(e, 1, "- - - 431 DPE http1.headers_too_large\n");
}

/* A malformed field line (no colon): 400 "Bad Request", DPE http1.codec_error, closed. */
static void test_malformed_request_400(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    start(e, access_log(e), ROUTE_ALL, upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, "GET /x HTTP/1.1\r\nHost: example.com\r\nno colon here\r\n\r\n");
    expect_response(e, LOCAL_REPLY("400 Bad Request", "11", CLOSE, "Bad Request"));
    expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(hstat(e, "downstream_cx_protocol_error"), 1);
    assert_int_equal(hstat(e, "downstream_rq_4xx"), 1);
    expect_log(e, 1, "- - - 400 DPE http1.codec_error\n");
}

/* Content-Length with Transfer-Encoding: chunked: 400, DPE
 * http1.content_length_and_chunked_not_allowed; a Transfer-Encoding other than chunked on a
 * second connection: 501 Not Implemented, http1.invalid_transfer_encoding. */
static void test_bad_framing_400_501(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    start(e, access_log(e), ROUTE_ALL, upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, "POST /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    expect_response(e, LOCAL_REPLY("400 Bad Request", "11", CLOSE, "Bad Request"));
    expect_closed(e);
    close(e->client);
    e->rxlen = e->consumed = 0;
    e->rx[0] = '\0';
    e->eof = false;
    client_connect(e);
    client_puts(e, "POST /y HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip\r\n\r\n");
    expect_response(e, LOCAL_REPLY("501 Not Implemented", "15", CLOSE, "Not Implemented"));
    expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(hstat(e, "downstream_cx_protocol_error"), 2);
    assert_int_equal(hstat(e, "downstream_rq_4xx"), 1);
    assert_int_equal(hstat(e, "downstream_rq_5xx"), 1);
    expect_log(e, 2,
               "- - - 400 DPE http1.content_length_and_chunked_not_allowed\n"
               "- - - 501 DPE http1.invalid_transfer_encoding\n");
}

/* A 400 local reply of the connection manager itself (path_with_escaped_slashes_action
 * REJECT_REQUEST on "%2F"): empty body, details path_normalization_failed,
 * downstream_rq_failed_path_normalization; on HTTP/1 Envoy closes the connection after any 400
 * local reply (ActiveStream::onLocalReply: saw_connection_close_ unless
 * stream_error_on_invalid_http_message), so the answer says connection: close. The log shows
 * the path as unescaped before the rejection (Envoy's PathUtil::unescapeSlashes rewrites it in
 * place). */
static void test_rejected_path_400_closes(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"path_with_escaped_slashes_action\":\"REJECT_REQUEST\",%s",
             access_log(e));
    start(e, hcm, ROUTE_ALL, upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, GET("/a%2Fb"));
    expect_response(e, "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: *\r\n"
                       "server: envoy\r\nconnection: close\r\n\r\n");
    expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(hstat(e, "downstream_rq_failed_path_normalization"), 1);
    expect_log(e, 1, "GET /a/b HTTP/1.1 400 - path_normalization_failed\n");
}

/* ---------- per-try timeouts ---------- */

static const char PER_TRY_ROUTE[] =
    "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\",\"retry_policy\":{"
    "\"retry_on\":\"5xx\",\"num_retries\":1,\"per_try_timeout\":\"0.2s\"}}}]";

/* The first try is silent past per_try_timeout (0.2 s): it is reset and retried; the
 * second try's 200 reaches the client. */
static void test_per_try_timeout_retried(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL, UP_200("6", "second")};
    start(e, access_log(e), PER_TRY_ROUTE, upstream_start(e, answers, 2));
    uint64_t t0 = uv_hrtime();
    client_connect(e);
    client_puts(e, GET("/try"));
    expect_response(e, RELAYED_200("6", "", "second"));
    assert_true(uv_hrtime() - t0 >= 190000000ULL);
    expect_open(e, 20);
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(cstat(e, "upstream_rq_per_try_timeout"), 1);
    assert_int_equal(cstat(e, "upstream_rq_retry"), 1);
    assert_int_equal(hstat(e, "downstream_rq_2xx"), 1);
    expect_log(e, 1, "GET /try HTTP/1.1 200 - via_upstream\n");
}

/* Both tries silent: after the second per-try timeout no retry is left: 504 "upstream
 * request timeout", UT,URX upstream_per_try_timeout; the connection stays open. */
static void test_per_try_timeout_no_retry_left_504(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL, NULL};
    start(e, access_log(e), PER_TRY_ROUTE, upstream_start(e, answers, 2));
    uint64_t t0 = uv_hrtime();
    client_connect(e);
    client_puts(e, GET("/slow"));
    expect_response(e, LOCAL_REPLY("504 Gateway Timeout", "24", "", "upstream request timeout"));
    assert_true(uv_hrtime() - t0 >= 390000000ULL);
    expect_open(e, 20);
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(cstat(e, "upstream_rq_per_try_timeout"), 2);
    assert_int_equal(cstat(e, "upstream_rq_retry"), 1);
    assert_int_equal(cstat(e, "upstream_rq_retry_limit_exceeded"), 1);
    assert_int_equal(hstat(e, "downstream_rq_5xx"), 1);
    expect_log(e, 1, "GET /slow HTTP/1.1 504 UT,URX upstream_per_try_timeout\n");
}

/* ---------- the retry buffer ---------- */

/* A 4 KiB body, a 1 KiB per_request_buffer_limit_bytes, retry_on connect-failure with a 1 s
 * back-off (at the top of its interval: WEFT_PROXY_TEST_BACKOFF_JITTER=max): the first 512
 * bytes are buffered, the connect is refused and a retry waits; the rest of the body then
 * overflows the buffer with no attempt in flight: 507 "exceeded request buffer limit while
 * retrying upstream", details request_payload_exceeded_retry_buffer_limit, retry abandoned
 * (retry_or_shadow_abandoned), the connection closed (the request was not read whole). */
static void test_retry_buffer_overflow_in_backoff_507(void **state)
{
    env *e = *state;
    char body[4096];
    memset(body, 'b', sizeof(body));
    setenv("WEFT_PROXY_TEST_BACKOFF_JITTER", "max", 1);
    start(e, access_log(e),
          "[{\"match\":{\"prefix\":\"/\"},\"per_request_buffer_limit_bytes\":1024,\"route\":{"
          "\"cluster\":\"c\",\"retry_policy\":{\"retry_on\":\"connect-failure\",\"num_retries\":"
          "1,\"retry_back_off\":{\"base_interval\":\"1s\"}}}}]",
          refusing_port(e));
    unsetenv("WEFT_PROXY_TEST_BACKOFF_JITTER");
    client_connect(e);
    client_puts(e, "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 4096\r\n\r\n");
    client_send(e, body, 512);
    stat_want retried = {"upstream_rq_retry", 1};
    pump_until(e, cstat_reached, &retried, "a retry waiting after the refused connect");
    assert_int_equal(cstat(e, "upstream_cx_connect_fail"), 1);
    assert_int_equal(e->rxlen, 0);
    client_send(e, body + 512, sizeof(body) - 512);
    expect_response(e, LOCAL_REPLY("507 Insufficient Storage", "53", CLOSE,
                                   "exceeded request buffer limit while retrying upstream"));
    expect_closed(e);
    assert_int_equal(cstat(e, "retry_or_shadow_abandoned"), 1);
    assert_int_equal(cstat(e, "upstream_cx_connect_fail"), 1); /* no second try */
    expect_log(e, 1, "POST /upload HTTP/1.1 507 - request_payload_exceeded_retry_buffer_limit\n");
}

/* The same limit with the attempt in flight (the upstream reads the whole 4 KiB body): the
 * body streams on to it unprotected and its 503 is relayed, not retried (retry_on 5xx). */
static void test_retry_buffer_overflow_in_flight_streams_on(void **state)
{
    env *e = *state;
    static const char *const answers[] = {
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy", UP_200("2", "ok")};
    char body[4096];
    memset(body, 'b', sizeof(body));
    start(e, access_log(e),
          "[{\"match\":{\"prefix\":\"/\"},\"per_request_buffer_limit_bytes\":1024,\"route\":{"
          "\"cluster\":\"c\",\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":1}}}]",
          upstream_start(e, answers, 2));
    client_connect(e);
    client_puts(e, "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 4096\r\n\r\n");
    client_send(e, body, sizeof(body));
    expect_response(e, "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n"
                       "x-envoy-upstream-service-time: *\r\ndate: *\r\nserver: envoy\r\n\r\nbusy");
    expect_open(e, 20);
    assert_int_equal(e->up.requests, 1);
    assert_int_equal(e->up.body_len[0], 4096);
    assert_int_equal(cstat(e, "retry_or_shadow_abandoned"), 1);
    assert_int_equal(cstat(e, "upstream_rq_retry"), 0);
    expect_log(e, 1, "POST /upload HTTP/1.1 503 - via_upstream\n");
}

/* ---------- connection manager timeouts ---------- */

/* stream_idle_timeout 0.2 s, the request body never completes: 408 "stream timeout", SI
 * stream_idle_timeout, downstream_rq_idle_timeout, closed. */
static void test_stream_idle_timeout_408(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"stream_idle_timeout\":\"0.2s\",%s", access_log(e));
    start(e, hcm, ROUTE_ALL, upstream_start(e, answers, 1));
    uint64_t t0 = uv_hrtime();
    client_connect(e);
    client_puts(e, "POST /in HTTP/1.1\r\nHost: example.com\r\nContent-Length: 10\r\n\r\nabc");
    expect_response(e, LOCAL_REPLY("408 Request Timeout", "14", CLOSE, "stream timeout"));
    assert_true(uv_hrtime() - t0 >= 190000000ULL);
    expect_closed(e);
    assert_int_equal(hstat(e, "downstream_rq_idle_timeout"), 1);
    expect_log(e, 1, "POST /in HTTP/1.1 408 SI stream_idle_timeout\n");
}

/* stream_idle_timeout 0.2 s, the request complete and the upstream silent (route timeout
 * 15 s): 504 "stream timeout", SI. The request was read whole, so the connection stays open
 * (Envoy's onIdleTimeout only sends the local reply; the HTTP/1 connection closes after a
 * local reply only when the request was incomplete or the status is 400) and carries the
 * next request. */
static void test_stream_idle_timeout_504(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL, UP_200("4", "next")};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"stream_idle_timeout\":\"0.2s\",%s", access_log(e));
    start(e, hcm, ROUTE_ALL, upstream_start(e, answers, 2));
    client_connect(e);
    client_puts(e, GET("/wait"));
    expect_response(e, LOCAL_REPLY("504 Gateway Timeout", "14", "", "stream timeout"));
    expect_open(e, 20);
    client_puts(e, GET("/next"));
    expect_response(e, RELAYED_200("4", "", "next"));
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(hstat(e, "downstream_rq_idle_timeout"), 1);
    assert_int_equal(hstat(e, "downstream_cx_total"), 1);
    expect_log(e, 2,
               "GET /wait HTTP/1.1 504 SI stream_idle_timeout\n"
               "GET /next HTTP/1.1 200 - via_upstream\n");
}

/* request_timeout 0.3 s with bytes still trickling in (so the stream is never idle): 408
 * "request timeout", request_overall_timeout, downstream_rq_timeout, closed. */
static void test_request_timeout_408(void **state)
{
    env *e = *state;
    static const char *const answers[] = {NULL};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"request_timeout\":\"0.3s\",\"stream_idle_timeout\":\"0.2s\",%s",
             access_log(e));
    start(e, hcm, ROUTE_ALL, upstream_start(e, answers, 1));
    uint64_t t0 = uv_hrtime();
    client_connect(e);
    client_puts(e, "POST /in HTTP/1.1\r\nHost: example.com\r\nContent-Length: 100\r\n\r\n");
    while (!response_len(e) && uv_hrtime() - t0 < 2000000000ULL) {
        client_puts(e, "x"); /* a byte every 50 ms: the stream idle timer never fires */
        pump_for(e, 50);
    }
    expect_response(e, LOCAL_REPLY("408 Request Timeout", "15", CLOSE, "request timeout"));
    assert_true(uv_hrtime() - t0 >= 290000000ULL);
    expect_closed(e);
    assert_int_equal(hstat(e, "downstream_rq_timeout"), 1);
    assert_int_equal(hstat(e, "downstream_rq_idle_timeout"), 0);
    expect_log(e, 1, "POST /in HTTP/1.1 408 - request_overall_timeout\n");
}

/* The connection's idle_timeout (common_http_protocol_options, 0.2 s) after an answered
 * request: closed with nothing written, downstream_cx_idle_timeout. */
static void test_connection_idle_timeout(void **state)
{
    env *e = *state;
    static const char *const answers[] = {UP_200("2", "ok")};
    start(e, "\"common_http_protocol_options\":{\"idle_timeout\":\"0.2s\"},", ROUTE_ALL,
          upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, GET("/"));
    expect_response(e, RELAYED_200("2", "", "ok"));
    uint64_t t0 = uv_hrtime();
    expect_closed(e);
    assert_true(uv_hrtime() - t0 >= 150000000ULL);
    assert_int_equal(hstat(e, "downstream_cx_idle_timeout"), 1);
    assert_int_equal(hstat(e, "downstream_cx_destroy_local"), 1);
}

/* ---------- access log hand-off ---------- */

/* One line per request, in order, on one connection: a routed 200 (no flags, via_upstream)
 * and a path no route matches (404 NR route_not_found, empty body). */
static void test_access_log_line_per_request(void **state)
{
    env *e = *state;
    static const char *const answers[] = {UP_200("2", "ok")};
    start(e, access_log(e), "[{\"match\":{\"prefix\":\"/api\"},\"route\":{\"cluster\":\"c\"}}]",
          upstream_start(e, answers, 1));
    client_connect(e);
    client_puts(e, GET("/api/items"));
    expect_response(e, RELAYED_200("2", "", "ok"));
    client_puts(e, GET("/nowhere"));
    expect_response(e, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\ndate: *\r\n"
                       "server: envoy\r\n\r\n");
    expect_open(e, 20);
    assert_int_equal(hstat(e, "no_route"), 1);
    expect_log(e, 2,
               "GET /api/items HTTP/1.1 200 - via_upstream\n"
               "GET /nowhere HTTP/1.1 404 NR route_not_found\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keep_alive_then_connection_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_answered_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10_closes_after_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10_keep_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10_not_accepted_426, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_over_limit_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_over_default_limit_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_request_400, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_framing_400_501, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejected_path_400_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_try_timeout_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_try_timeout_no_retry_left_504, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_buffer_overflow_in_backoff_507, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_buffer_overflow_in_flight_streams_on, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stream_idle_timeout_408, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_idle_timeout_504, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_timeout_408, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_access_log_line_per_request, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
