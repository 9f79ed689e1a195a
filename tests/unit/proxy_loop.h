/*
 * proxy_loop.h - a weft-proxy worker loop for unit tests of the request path (header-only,
 * static inline functions; test_router.c and test_conn_manager.c use it). The worker's loop is
 * driven on the test's thread, never started: one listener on a loopback port the kernel
 * picks (pl_start) routes to cluster "c", whose one endpoint is a loopback listening socket
 * the test serves itself with scripted HTTP/1.1 answers (pl_upstream_start), or a bound
 * socket that refuses connections (pl_refusing_port). A client socket writes raw bytes; the
 * test reads back whole responses (Content-Length framed) byte-exact, with the values of date
 * and x-envoy-upstream-service-time masked as "*" (pl_expect_response), whether the proxy
 * closed the connection, stats counters, and the lines of a file access log (pl_access_log).
 *
 * Every wait is bounded (5 s), so a bug fails the test instead of hanging it. Failures abort
 * the test through cmocka's asserts. pl_setup / pl_teardown are the cmocka fixtures: the
 * state is a pl_env, and teardown stops the worker and frees and closes everything,
 * including the access log file.
 */
#ifndef WF_TEST_PROXY_LOOP_H
#define WF_TEST_PROXY_LOOP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

enum { PL_MAX_UP = 8, PL_MAX_RQ = 8, PL_BUF = 96 * 1024 };

/* The test's upstream: a listening socket, the connections it accepted, and the scripted
 * answers, one per complete request in order (NULL: never answer). */
typedef struct pl_upstream {
    int lfd;
    int fds[PL_MAX_UP];
    char *in[PL_MAX_UP];
    size_t inlen[PL_MAX_UP];
    size_t nfds;
    const char *const *answers;
    size_t nanswers;
    size_t requests;            /* complete requests heard */
    char lines[PL_MAX_RQ][128]; /* their request lines */
    size_t body_len[PL_MAX_RQ]; /* and body lengths */
    char first[1024];           /* the head of the first request */
} pl_upstream;

typedef struct pl_env {
    wp_server srv;
    wp_worker w;
    bool started;
    int port; /* the proxy's */
    pl_upstream up;
    int refuse_fd; /* pl_refusing_port's socket, -1 none */
    int client;
    char *rx; /* every byte the client read */
    size_t rxlen, consumed;
    bool eof; /* the proxy closed the client's connection */
    char log_path[64];
    char log_field[1024]; /* pl_access_log's HCM field */
} pl_env;

static inline void pl_nonblock(int fd)
{
    assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/* A TCP socket bound to a loopback port the kernel picks (its address in *a). */
static inline int pl_loopback_socket(struct sockaddr_in *a)
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
static inline int pl_upstream_start(pl_env *e, const char *const *answers, size_t n)
{
    struct sockaddr_in a;
    e->up.lfd = pl_loopback_socket(&a);
    assert_int_equal(listen(e->up.lfd, 16), 0);
    pl_nonblock(e->up.lfd);
    e->up.answers = answers;
    e->up.nanswers = n;
    return ntohs(a.sin_port);
}

/* A port that refuses connections for the test's life: bound (so no other process can take
 * it) but not listening, so a connect gets a reset (ECONNREFUSED). */
static inline int pl_refusing_port(pl_env *e)
{
    struct sockaddr_in a;
    e->refuse_fd = pl_loopback_socket(&a);
    return ntohs(a.sin_port);
}

/* The value of header name (with ": ") in head [p, end), or NULL. */
static inline const char *pl_header_value(const char *p, const char *end, const char *name)
{
    size_t n = strlen(name);
    for (p = strstr(p, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':')
            return p + 2 + n + 1;
    return NULL;
}

/* Answers each complete request (head and Content-Length bytes of body) buffered on
 * upstream connection i. */
static inline void pl_serve_requests(pl_upstream *u, size_t i)
{
    for (;;) {
        char *end = strstr(u->in[i], "\r\n\r\n");
        if (!end)
            return;
        const char *cl = pl_header_value(u->in[i], end, "content-length");
        size_t body = cl ? strtoul(cl, NULL, 10) : 0;
        size_t used = (size_t)(end + 4 - u->in[i]) + body;
        if (u->inlen[i] < used)
            return;
        assert_true(u->requests < u->nanswers);
        if (u->requests == 0)
            snprintf(u->first, sizeof(u->first), "%.*s", (int)(end + 4 - u->in[i]), u->in[i]);
        if (u->requests < PL_MAX_RQ) {
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
static inline void pl_serve(pl_upstream *u)
{
    int fd;
    while (u->lfd >= 0 && u->nfds < PL_MAX_UP && (fd = accept(u->lfd, NULL, NULL)) >= 0) {
        pl_nonblock(fd);
        u->in[u->nfds] = calloc(1, PL_BUF);
        assert_non_null(u->in[u->nfds]);
        u->fds[u->nfds++] = fd;
    }
    for (size_t i = 0; i < u->nfds; i++) {
        if (u->fds[i] < 0)
            continue;
        assert_true(u->inlen[i] < PL_BUF - 1);
        ssize_t n = read(u->fds[i], u->in[i] + u->inlen[i], PL_BUF - 1 - u->inlen[i]);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            close(u->fds[i]);
            u->fds[i] = -1;
            continue;
        }
        if (n < 0)
            continue;
        u->inlen[i] += (size_t)n;
        u->in[i][u->inlen[i]] = '\0';
        pl_serve_requests(u, i);
    }
}

/* Reads what the client has; a close (FIN or reset) sets e->eof. */
static inline void pl_client_read(pl_env *e)
{
    while (!e->eof && e->client >= 0) {
        assert_true(e->rxlen < PL_BUF - 1);
        ssize_t n = read(e->client, e->rx + e->rxlen, PL_BUF - 1 - e->rxlen);
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

/* One round: the worker loop once (no wait), the upstream, the client's reads. */
static inline void pl_step(pl_env *e)
{
    uv_run(&e->w.loop, UV_RUN_NOWAIT);
    pl_serve(&e->up);
    pl_client_read(e);
    usleep(500);
}

typedef bool (*pl_cond_fn)(pl_env *e, const void *arg);

/* Runs the worker loop, the upstream and the client until cond holds; fails after 5 s. */
static inline void pl_pump_until(pl_env *e, pl_cond_fn cond, const void *arg, const char *what)
{
    uint64_t end = uv_hrtime() + 5000000000ULL;
    while (!cond(e, arg)) {
        if (uv_hrtime() > end)
            fail_msg("not within 5 s: %s; the client read %zu bytes: %s", what, e->rxlen, e->rx);
        pl_step(e);
    }
}

/* Runs everything for ms milliseconds. */
static inline void pl_pump_for(pl_env *e, unsigned ms)
{
    uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000ULL;
    while (uv_hrtime() < end)
        pl_step(e);
}

/* The length of the whole response at e->rx + e->consumed (head and Content-Length bytes of
 * body), 0 while incomplete. */
static inline size_t pl_response_len(const pl_env *e)
{
    const char *p = e->rx + e->consumed;
    const char *end = strstr(p, "\r\n\r\n");
    if (!end)
        return 0;
    const char *cl = pl_header_value(p, end, "content-length");
    if (!cl)
        fail_msg("a response without content-length: %s", p);
    size_t len = (size_t)(end + 4 - p) + strtoul(cl, NULL, 10);
    return e->rxlen - e->consumed >= len ? len : 0;
}

static inline bool pl_has_response(pl_env *e, const void *arg)
{
    (void)arg;
    return pl_response_len(e) > 0;
}

static inline bool pl_closed(pl_env *e, const void *arg)
{
    (void)arg;
    return e->eof;
}

/* Takes the next whole response off the client's bytes, with the values of date and
 * x-envoy-upstream-service-time replaced by "*", and asserts it is want. */
static inline void pl_expect_response(pl_env *e, const char *want)
{
    pl_pump_until(e, pl_has_response, NULL, "a whole response");
    size_t len = pl_response_len(e);
    char got[PL_BUF];
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
static inline void pl_expect_closed(pl_env *e)
{
    pl_pump_until(e, pl_closed, NULL, "the proxy closes the client's connection");
    assert_string_equal(e->rx + e->consumed, "");
}

/* The connection stays open for ms milliseconds with nothing more written. */
static inline void pl_expect_open(pl_env *e, unsigned ms)
{
    pl_pump_for(e, ms);
    assert_false(e->eof);
    assert_string_equal(e->rx + e->consumed, "");
}

/* A worker with one listener on a loopback port the kernel picks (e->port): its HCM has the
 * fields `hcm` (JSON members ending in a comma, or "") and the routes `routes` (a JSON
 * array); one cluster "c" with one endpoint at upstream_port. */
static inline void pl_start(pl_env *e, const char *hcm, const char *routes, int upstream_port)
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
static inline void pl_client_connect(pl_env *e)
{
    e->client = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(e->client >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)e->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(e->client, (struct sockaddr *)&a, sizeof(a)), 0);
    pl_nonblock(e->client);
}

/* Writes len bytes of p from the client, running the loop while the socket is full; stops
 * early when the proxy closed the connection (it may answer before reading everything). */
static inline void pl_client_send(pl_env *e, const char *p, size_t len)
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
            pl_step(e);
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
}

static inline void pl_client_puts(pl_env *e, const char *s)
{
    pl_client_send(e, s, strlen(s));
}

/* Counter http.ingress_http.<name> (pl_hgauge: the gauge), cluster.c.<name> (pl_cstat). */
static inline int64_t pl_hstat(pl_env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "http.ingress_http.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_counter(e->srv.stats_store, full));
}

static inline int64_t pl_hgauge(pl_env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "http.ingress_http.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_gauge(e->srv.stats_store, full));
}

static inline int64_t pl_cstat(pl_env *e, const char *name)
{
    char full[160];
    snprintf(full, sizeof(full), "cluster.c.%s", name);
    return wp_stats_value(e->srv.stats_store, wp_stats_counter(e->srv.stats_store, full));
}

/* A pl_pump_until condition: counter cluster.c.<name> reached at_least. */
typedef struct pl_stat_want {
    const char *name;
    int64_t at_least;
} pl_stat_want;

static inline bool pl_cstat_reached(pl_env *e, const void *arg)
{
    const pl_stat_want *w = arg;
    return pl_cstat(e, w->name) >= w->at_least;
}

/* A file access log "<method> <path> <protocol> <code> <flags> <details>" per request, in a
 * new file (e->log_path, removed by pl_teardown): returns the HCM's access_log field for
 * pl_start's hcm (kept in e). */
static inline const char *pl_access_log(pl_env *e)
{
    char *field = e->log_field;
    snprintf(e->log_path, sizeof(e->log_path), "/tmp/wf-test-alog-XXXXXX");
    int fd = mkstemp(e->log_path);
    assert_true(fd >= 0);
    close(fd);
    snprintf(field, sizeof(e->log_field),
             "\"access_log\":[{\"name\":\"envoy.access_loggers.file\",\"typed_config\":{"
             "\"@type\":\"type.googleapis.com/envoy.extensions.access_loggers.file.v3."
             "FileAccessLog\",\"path\":\"%s\",\"log_format\":{\"text_format_source\":{"
             "\"inline_string\":\"%%REQ(:METHOD)%% %%REQ(:PATH)%% %%PROTOCOL%% "
             "%%RESPONSE_CODE%% %%RESPONSE_FLAGS%% %%RESPONSE_CODE_DETAILS%%\\n\"}}}}],",
             e->log_path);
    return field;
}

/* Reads the access log file into out (at most cap - 1 bytes, NUL-terminated). */
static inline size_t pl_log_read(pl_env *e, char *out, size_t cap)
{
    FILE *f = fopen(e->log_path, "rb");
    assert_non_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
    return n;
}

static inline bool pl_log_has_lines(pl_env *e, const void *arg)
{
    char text[4096];
    size_t n = pl_log_read(e, text, sizeof(text)), lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    return lines >= *(const size_t *)arg;
}

/* Waits for the access log to hold nlines lines (the writer flushes every 10 ms) and asserts
 * that the file is exactly want; then waits 50 ms more and asserts that no line followed. */
static inline void pl_expect_log(pl_env *e, size_t nlines, const char *want)
{
    char text[4096];
    pl_pump_until(e, pl_log_has_lines, &nlines, "the access log lines");
    pl_pump_for(e, 50);
    pl_log_read(e, text, sizeof(text));
    assert_string_equal(text, want);
}

/* The cmocka fixtures: *state is a pl_env. */
static inline int pl_setup(void **state)
{
    pl_env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    e->srv.nworkers = 1;
    e->srv.flush_interval_ms = 10; /* access log lines reach the file soon */
    e->srv.stats_store = wp_stats_new(2);
    e->srv.alog_files = wp_alog_files_new();
    assert_non_null(e->srv.stats_store);
    assert_non_null(e->srv.alog_files);
    e->rx = calloc(1, PL_BUF);
    assert_non_null(e->rx);
    e->up.lfd = -1;
    e->client = -1;
    e->refuse_fd = -1;
    *state = e;
    return 0;
}

static inline int pl_teardown(void **state)
{
    pl_env *e = *state;
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

/* Closes the client's connection and forgets what it read (a new pl_client_connect follows). */
static inline void pl_client_close(pl_env *e)
{
    if (e->client >= 0)
        close(e->client);
    e->client = -1;
    e->rxlen = e->consumed = 0;
    e->rx[0] = '\0';
    e->eof = false;
}

/* The count of status code `code` in the code scope scope_name: "cluster.c.upstream_rq" gives
 * cluster.c.upstream_rq_<code> (status-code counters live in code scopes). */
static inline int64_t pl_code_stat(pl_env *e, const char *scope_name, unsigned code)
{
    uint32_t scope = wp_stats_code_scope(e->srv.stats_store, scope_name);
    return wp_stats_code_value(e->srv.stats_store, scope, code);
}

/* Takes the next whole response off the client's bytes and asserts its status line (without
 * CRLF) and body, whatever its fields. */
static inline void pl_expect_status_body(pl_env *e, const char *status_line, const char *body)
{
    pl_pump_until(e, pl_has_response, NULL, "a whole response");
    size_t len = pl_response_len(e), sl = strlen(status_line);
    const char *p = e->rx + e->consumed;
    if (strncmp(p, status_line, sl) != 0 || strncmp(p + sl, "\r\n", 2) != 0)
        fail_msg("want status line \"%s\", got: %s", status_line, p);
    const char *b = strstr(p, "\r\n\r\n") + 4;
    assert_int_equal((size_t)(p + len - b), strlen(body));
    assert_memory_equal(b, body, strlen(body));
    e->consumed += len;
}

#endif
