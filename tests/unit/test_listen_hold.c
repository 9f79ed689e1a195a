/*
 * test_listen_hold.c - proxy/listen_hold: a warming listener's sockets are bound by the LDS
 * update that adds it and held (bound, not listening: a connection is refused; another
 * process's SO_REUSEADDR socket cannot bind the address meanwhile) until they are taken for
 * the snapshot that serves it; an accepted update closes those of listeners it no longer has,
 * a rejected one those it bound; an address held elsewhere is reported per listener with
 * Envoy's reason; serving listeners keep the workers' sockets unless they go warming.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "harness.h"
#include "proxy/bootstrap/bootstrap.h"
#include "proxy/server/listen_hold.h"

/* A free loopback port (bound and released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* An application's socket on 127.0.0.1:port, SO_REUSEADDR only (as Python's http.server):
 * the fd when it could bind (and listen, when listen_too), else -errno. */
static int app_socket(int port, bool listen_too)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || (listen_too && listen(fd, 4) != 0)) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* connect() to 127.0.0.1:port: 0 or -errno. */
static int try_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

#define LISTENER_FMT                                                                               \
    "{\"name\":\"%s\",\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\","                 \
    "\"port_value\":%d}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network."      \
    "http_connection_manager\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy."           \
    "extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\","               \
    "\"stat_prefix\":\"s\",\"route_config\":{\"name\":\"r\"},\"http_filters\":[{\"name\":"         \
    "\"envoy.filters.http.router\"}]}}]}]}"

/* A config whose listeners are n (name, port) pairs. */
static wp_config *config(int n, const char *const *names, const int *ports)
{
    char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text, "{\"static_resources\":{\"listeners\":[");
    for (int i = 0; i < n; i++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "%s" LISTENER_FMT, i ? "," : "",
                                names[i], ports[i]);
    }
    snprintf(text + len, sizeof text - len, "]}}");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("bootstrap: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

/* Held from the LDS update: refused, not bindable by an application; taken: served. */
static void test_hold_then_take(void **state)
{
    (void)state;
    int pa = free_port(), pb = free_port();
    const char *names[] = {"0.0.0.0_a", "0.0.0.0_b"};
    int ports[] = {pa, pb};
    wp_config *cfg = config(2, names, ports);
    wp_listen_hold *h = wp_listen_hold_new(2);
    json_t *failed = json_object();
    assert_int_equal(wp_listen_hold_add(h, cfg, 0, NULL, NULL, failed), 0);
    wp_listen_hold_settle(h, true);
    assert_int_equal(json_object_size(failed), 0);
    assert_int_equal(wp_listen_hold_count(h), 2);
    /* bound, not listening: refused; an application cannot take the address meanwhile */
    assert_int_equal(try_connect(pa), -ECONNREFUSED);
    assert_int_equal(app_socket(pa, false), -EADDRINUSE);
    assert_int_equal(app_socket(pb, true), -EADDRINUSE);
    /* the next LDS update still has both: kept, not bound again */
    assert_int_equal(wp_listen_hold_add(h, cfg, 0, NULL, NULL, failed), 0);
    wp_listen_hold_settle(h, true);
    assert_int_equal(wp_listen_hold_count(h), 2);
    /* the listener serves: its sockets are taken, SO_REUSEADDR on again, and listen */
    int fds[2] = {-1, -1};
    assert_true(wp_listen_hold_take(h, &cfg->listeners[0], fds));
    assert_false(wp_listen_hold_take(h, &cfg->listeners[0], fds));
    assert_int_equal(wp_listen_hold_count(h), 1);
    for (int k = 0; k < 2; k++) {
        int on = 0;
        socklen_t len = sizeof on;
        assert_true(fds[k] >= 0);
        assert_int_equal(getsockopt(fds[k], SOL_SOCKET, SO_REUSEADDR, &on, &len), 0);
        assert_int_equal(on, 1);
        assert_int_equal(listen(fds[k], 4), 0);
    }
    assert_int_equal(try_connect(pa), 0);
    close(fds[0]);
    close(fds[1]);
    wp_listen_hold_free(h); /* closes b */
    int fd = app_socket(pb, true);
    assert_true(fd >= 0);
    close(fd);
    json_decref(failed);
    wp_config_unref(cfg);
}

/* An address in use fails that listener only, with Envoy's reason; accepted updates drop the
 * sockets of listeners they no longer have, rejected ones the sockets they bound. */
static void test_fail_and_settle(void **state)
{
    (void)state;
    int pa = free_port(), pb = free_port(), pc = free_port();
    int app = app_socket(pb, true);
    assert_true(app >= 0);
    const char *names[] = {"0.0.0.0_a", "0.0.0.0_b", "0.0.0.0_c"};
    int ports[] = {pa, pb, pc};
    wp_config *cfg = config(3, names, ports);
    wp_listen_hold *h = wp_listen_hold_new(1);
    json_t *failed = json_object();
    assert_int_equal(wp_listen_hold_add(h, cfg, 0, NULL, NULL, failed), 0);
    assert_int_equal(json_object_size(failed), 1);
    char want[128];
    snprintf(want, sizeof want, "cannot bind '127.0.0.1:%d': Address already in use", pb);
    assert_string_equal(json_string_value(json_object_get(failed, "0.0.0.0_b")), want);
    wp_listen_hold_settle(h, true);
    assert_int_equal(wp_listen_hold_count(h), 2);
    close(app);

    /* an update with a only, rejected: nothing changes */
    json_object_clear(failed);
    wp_config *only_a = config(1, names, ports);
    assert_int_equal(wp_listen_hold_add(h, only_a, 0, NULL, NULL, failed), 0);
    wp_listen_hold_settle(h, false);
    assert_int_equal(wp_listen_hold_count(h), 2);
    /* accepted: c is closed */
    assert_int_equal(wp_listen_hold_add(h, only_a, 0, NULL, NULL, failed), 0);
    wp_listen_hold_settle(h, true);
    assert_int_equal(wp_listen_hold_count(h), 1);
    int fd = app_socket(pc, true);
    assert_true(fd >= 0);
    close(fd);
    /* an update adding b (free now), rejected: b's new sockets are closed, a is kept */
    assert_int_equal(wp_listen_hold_add(h, cfg, 0, NULL, NULL, failed), 0);
    assert_int_equal(json_object_size(failed), 0);
    assert_int_equal(wp_listen_hold_count(h), 3);
    wp_listen_hold_settle(h, false);
    assert_int_equal(wp_listen_hold_count(h), 1);
    fd = app_socket(pb, true);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(app_socket(pa, true), -EADDRINUSE);
    wp_listen_hold_free(h);
    json_decref(failed);
    wp_config_unref(only_a);
    wp_config_unref(cfg);
}

/* A listener the serving snapshot has keeps the workers' sockets, unless it goes warming. */
static void test_serving(void **state)
{
    (void)state;
    int pa = free_port(), pb = free_port();
    const char *names[] = {"0.0.0.0_a", "0.0.0.0_b"};
    int ports[] = {pa, pb};
    wp_config *cfg = config(2, names, ports);
    wp_config *serving = config(2, names, ports);
    serving->listeners[0].bound = serving->listeners[1].bound = true;
    wp_listen_hold *h = wp_listen_hold_new(1);
    json_t *failed = json_object();
    assert_int_equal(wp_listen_hold_add(h, cfg, 0, NULL, serving, failed), 0);
    wp_listen_hold_settle(h, true);
    assert_int_equal(wp_listen_hold_count(h), 0);
    wf_xds_names warming = {0};
    char *w[] = {"0.0.0.0_b"};
    warming.v = w;
    warming.n = 1;
    assert_int_equal(wp_listen_hold_add(h, cfg, 0, &warming, serving, failed), 0);
    wp_listen_hold_settle(h, true);
    assert_int_equal(wp_listen_hold_count(h), 1);
    int fd = -1;
    assert_false(wp_listen_hold_take(h, &cfg->listeners[0], &fd));
    assert_true(wp_listen_hold_take(h, &cfg->listeners[1], &fd));
    close(fd);
    wp_listen_hold_free(h);
    json_decref(failed);
    wp_config_unref(serving);
    wp_config_unref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hold_then_take),
        cmocka_unit_test(test_fail_and_settle),
        cmocka_unit_test(test_serving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
