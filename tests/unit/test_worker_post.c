/*
 * test_worker_post.c - handing new config generations to a worker (worker.c wp_worker_post):
 * listener sockets follow the listener by name, and a generation that replaces one the
 * worker has not taken yet keeps the sockets the main thread bound for the first one.
 *
 * The worker is driven on the test's thread (its loop run with UV_RUN_NOWAIT), never started.
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
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"
#include "proxy/server/worker.h"
#include "proxy/server/listen_socket.h"
#include "proxy/server/gen.h"

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A bootstrap with a listener per port (names "l<port>"), each routing "/" to a cluster. */
static wp_config *config(const int *ports, size_t n)
{
    char text[4096];
    size_t off = (size_t)snprintf(text, sizeof(text), "{\"static_resources\":{\"listeners\":[");
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(
            text + off, sizeof(text) - off,
            "%s{\"name\":\"l%d\",\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\","
            "\"port_value\":%d}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
            "network.http_connection_manager\",\"typed_config\":{\"@type\":\"type.googleapis."
            "com/envoy.extensions.filters.network.http_connection_manager.v3."
            "HttpConnectionManager\",\"stat_prefix\":\"s%d\",\"route_config\":{\"virtual_hosts\""
            ":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},"
            "\"route\":{\"cluster\":\"c\"}}]}]},\"http_filters\":[{\"name\":\"envoy.filters."
            "http.router\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."
            "filters.http.router.v3.Router\"}}]}}]}]}",
            i ? "," : "", ports[i], ports[i], ports[i]);
    snprintf(text + off, sizeof(text) - off,
             "],\"clusters\":[{\"name\":\"c\",\"type\":\"STATIC\",\"load_assignment\":{"
             "\"cluster_name\":\"c\",\"endpoints\":[]}}]}}");
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    assert_non_null(c);
    wf_strbuf_free(&err);
    for (size_t i = 0; i < c->nlisteners; i++)
        assert_int_equal(
            wp_route_index_build(&c->arena, c->listeners[i].chains[0].hcm->route_config, &err), 0);
    return c;
}

typedef struct {
    wp_server srv;
    wp_worker w;
} env;

static wp_gen *gen_of(env *e, wp_config *c)
{
    wf_strbuf err = {0};
    wp_gen *g = wp_gen_new(&e->srv, c, &err);
    assert_non_null(g);
    wf_strbuf_free(&err);
    return g;
}

/* fds for c's listeners: a bound socket for those in `fresh`, -1 for the others. */
static int *sockets(const wp_config *c, const bool *fresh)
{
    int *fds = malloc(c->nlisteners * sizeof(int));
    assert_non_null(fds);
    wf_strbuf err = {0};
    for (size_t i = 0; i < c->nlisteners; i++) {
        fds[i] = fresh[i] ? wp_listen_socket(&c->listeners[i], &err) : -1;
        if (fresh[i])
            assert_true(fds[i] >= 0);
    }
    wf_strbuf_free(&err);
    return fds;
}

static bool accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

static void run_worker(env *e)
{
    for (int i = 0; i < 5; i++)
        uv_run(&e->w.loop, UV_RUN_NOWAIT);
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
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    wp_worker_command(&e->w, WP_WORKER_STOP);
    run_worker(e);
    wp_worker_free(&e->w);
    wp_alog_files_free(e->srv.alog_files);
    wp_stats_free(e->srv.stats_store);
    free(e);
    return 0;
}

static void start(env *e, int port)
{
    wp_config *c = config(&port, 1);
    wp_gen_post post = {.gen = gen_of(e, c), .fds = sockets(c, (bool[]){true})};
    wf_strbuf err = {0};
    assert_int_equal(wp_worker_init(&e->w, &e->srv, 0, &post, &err), 0);
    wf_strbuf_free(&err);
    assert_true(accepts(port));
}

/* Generation B adds listener 2 (its socket bound by the main thread); generation C, posted
 * before the worker took B, keeps both listeners and so carries no socket: the worker must
 * still listen on port 2. */
static void test_superseded_post_keeps_new_sockets(void **state)
{
    env *e = *state;
    int p1 = free_port(), p2 = free_port();
    start(e, p1);
    int both[] = {p1, p2};
    wp_config *b = config(both, 2), *c = config(both, 2);
    wp_worker_post(&e->w, gen_of(e, b), sockets(b, (bool[]){false, true}));
    wp_worker_post(&e->w, gen_of(e, c), sockets(c, (bool[]){false, false}));
    run_worker(e);
    assert_ptr_equal(e->w.cfg, c);
    assert_true(accepts(p1));
    assert_true(accepts(p2));
}

/* A listener that is no longer in the new generation stops accepting. */
static void test_removed_listener_closes(void **state)
{
    env *e = *state;
    int p1 = free_port(), p2 = free_port();
    start(e, p1);
    int both[] = {p1, p2};
    wp_config *b = config(both, 2);
    wp_worker_post(&e->w, gen_of(e, b), sockets(b, (bool[]){false, true}));
    run_worker(e);
    assert_true(accepts(p2));
    wp_config *c = config(&p2, 1);
    wp_worker_post(&e->w, gen_of(e, c), sockets(c, (bool[]){false}));
    run_worker(e);
    assert_false(accepts(p1));
    assert_true(accepts(p2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_superseded_post_keeps_new_sockets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_listener_closes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
