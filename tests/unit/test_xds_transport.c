/*
 * test_xds_transport.c - gRPC over HTTP/2 between a server and a client in one process and
 * one uv loop on 127.0.0.1 (port 0): JSON messages both ways, server-side end with
 * grpc-status, keepalive timeout detected by either side, a 1 MiB message across flow-control
 * windows, oversize rejection and the send-queue bound; a message made of shared buffers
 * (wf_h2_call_sendv) sent twice and released by the caller at once; a server serving several method
 * paths (the call says which; an unknown path gets grpc-status 12) and the peer address of
 * both ends. Every test closes its handles and runs the loop until they are closed.
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

#include "xds/h2_stream.h"

#define GUARD_MS 5000
#define BIG      ((size_t)1024 * 1024)

typedef struct side {
    wf_h2_call *call;
    int msgs;
    char last[256];
    size_t last_len;
    uint8_t *big; /* copy of a large received message */
    int ends;
    wf_h2_end_reason reason;
    int status;
    char message[128];
    uint32_t h2_error;
    int conn_closed;
    wf_h2_end_reason conn_reason;
} side;

typedef struct env {
    uv_loop_t loop;
    uv_timer_t guard;
    bool timed_out;
    wf_h2_server *srv;
    wf_h2_conn *cli;
    side s, c;
    bool echo; /* server echoes every message */
} env;

static void record_msg(side *sd, const uint8_t *msg, size_t len)
{
    sd->msgs++;
    sd->last_len = len;
    if (len < sizeof sd->last) {
        memcpy(sd->last, msg, len);
        sd->last[len] = '\0';
    } else {
        free(sd->big);
        sd->big = malloc(len);
        assert_non_null(sd->big);
        memcpy(sd->big, msg, len);
    }
}

static void record_end(side *sd, const wf_h2_end *e)
{
    sd->ends++;
    sd->reason = e->reason;
    sd->status = e->grpc_status;
    sd->h2_error = e->h2_error;
    snprintf(sd->message, sizeof sd->message, "%s", e->grpc_message);
    sd->call = NULL;
}

static void srv_on_call(wf_h2_call *call, void *ud)
{
    env *e = ud;
    e->s.call = call;
}

static void srv_on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    env *e = ud;
    record_msg(&e->s, msg, len);
    if (e->echo)
        assert_int_equal(wf_h2_call_send(call, msg, len), 0);
}

static void srv_on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    record_end(&((env *)ud)->s, end);
}

static void srv_on_conn_closed(wf_h2_conn *c, wf_h2_end_reason r, void *ud)
{
    env *e = ud;
    e->s.conn_closed++;
    e->s.conn_reason = r;
}

static void cli_on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    record_msg(&((env *)ud)->c, msg, len);
}

static void cli_on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    record_end(&((env *)ud)->c, end);
}

static void cli_on_conn_closed(wf_h2_conn *c, wf_h2_end_reason r, void *ud)
{
    env *e = ud;
    e->c.conn_closed++;
    e->c.conn_reason = r;
}

static void on_guard(uv_timer_t *t)
{
    ((env *)t->data)->timed_out = true;
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    if (e == NULL || uv_loop_init(&e->loop) != 0 || uv_timer_init(&e->loop, &e->guard) != 0)
        return -1;
    e->guard.data = e;
    e->echo = true;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    if (e->srv)
        wf_h2_server_close(e->srv);
    if (e->cli && !e->c.conn_closed)
        wf_h2_conn_close(e->cli);
    uv_close((uv_handle_t *)&e->guard, NULL);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    int rv = uv_loop_close(&e->loop);
    free(e->s.big);
    free(e->c.big);
    free(e);
    return rv == 0 ? 0 : -1;
}

typedef bool (*pred_fn)(env *e);

/* Runs the loop until pred holds; fails the test after GUARD_MS. */
static void run_until(env *e, pred_fn pred)
{
    e->timed_out = false;
    assert_int_equal(uv_timer_start(&e->guard, on_guard, GUARD_MS, 0), 0);
    while (!pred(e) && !e->timed_out)
        uv_run(&e->loop, UV_RUN_ONCE);
    uv_timer_stop(&e->guard);
    assert_false(e->timed_out);
}

/* Runs the loop for ms milliseconds. */
static void run_for(env *e, uint64_t ms)
{
    e->timed_out = false;
    assert_int_equal(uv_timer_start(&e->guard, on_guard, ms, 0), 0);
    while (!e->timed_out)
        uv_run(&e->loop, UV_RUN_ONCE);
}

static void start(env *e, const wf_h2_opts *so, const wf_h2_opts *co)
{
    wf_h2_handlers sh = {srv_on_call, srv_on_message, srv_on_end, srv_on_conn_closed, e};
    wf_h2_handlers ch = {NULL, cli_on_message, cli_on_end, cli_on_conn_closed, e};
    assert_int_equal(wf_h2_server_start(&e->loop, "127.0.0.1", 0, so, &sh, &e->srv), 0);
    int port = wf_h2_server_port(e->srv);
    assert_true(port > 0);
    assert_int_equal(wf_h2_client_connect(&e->loop, "127.0.0.1", port, co, &ch, &e->cli), 0);
    assert_int_equal(wf_h2_call_open(e->cli, &e->c.call), 0);
}

static void send_str(wf_h2_call *call, const char *s)
{
    assert_int_equal(wf_h2_call_send(call, s, strlen(s)), 0);
}

static int want; /* target for the predicates below (set before run_until) */

static bool client_msgs(env *e)
{
    return e->c.msgs >= want;
}
static bool server_msgs(env *e)
{
    return e->s.msgs >= want;
}
static bool both_ended(env *e)
{
    return e->s.ends == 1 && e->c.ends == 1;
}

static void test_exchange(void **state)
{
    env *e = *state;
    start(e, NULL, NULL);
    send_str(e->c.call, "{\"type_url\":\"type.googleapis.com/envoy.config.cluster.v3.Cluster\"}");
    send_str(e->c.call, "");
    send_str(e->c.call, "{\"response_nonce\":\"1\",\"version_info\":\"v1\"}");
    want = 3;
    run_until(e, client_msgs);
    assert_int_equal(e->s.msgs, 3);
    assert_string_equal(e->c.last, "{\"response_nonce\":\"1\",\"version_info\":\"v1\"}");
    assert_non_null(e->s.call);

    /* The server pushes on its own; the client ACKs. */
    e->echo = false;
    send_str(e->s.call, "{\"version_info\":\"2\",\"nonce\":\"n2\",\"resources\":[]}");
    send_str(e->s.call, "{\"version_info\":\"3\",\"nonce\":\"n3\",\"resources\":[]}");
    want = 5;
    run_until(e, client_msgs);
    assert_string_equal(e->c.last, "{\"version_info\":\"3\",\"nonce\":\"n3\",\"resources\":[]}");
    send_str(e->c.call, "{\"response_nonce\":\"n3\"}");
    want = 4;
    run_until(e, server_msgs);
    assert_string_equal(e->s.last, "{\"response_nonce\":\"n3\"}");

    /* The client cancels: both sides see the end exactly once. */
    wf_h2_call_cancel(e->c.call);
    run_until(e, both_ended);
    assert_int_equal(e->c.reason, WF_H2_END_CANCELLED);
    assert_int_equal(e->s.reason, WF_H2_END_RESET);
    assert_int_equal(e->s.h2_error, 8); /* CANCEL */
    assert_int_equal(e->s.conn_closed + e->c.conn_closed, 0);
}

static void test_server_status(void **state)
{
    env *e = *state;
    start(e, NULL, NULL);
    send_str(e->c.call, "{\"node\":{\"id\":\"a.default\"}}");
    want = 1;
    run_until(e, client_msgs);
    e->echo = false;
    send_str(e->s.call, "{\"nonce\":\"last\"}");
    assert_int_equal(wf_h2_call_finish(e->s.call, 9, "draining: 100% done\n"), 0);
    assert_int_equal(wf_h2_call_send(e->s.call, "x", 1), WF_H2_E_CLOSED);
    run_until(e, both_ended);
    /* The message queued before the trailers arrives first. */
    assert_int_equal(e->c.msgs, 2);
    assert_string_equal(e->c.last, "{\"nonce\":\"last\"}");
    assert_int_equal(e->c.reason, WF_H2_END_STATUS);
    assert_int_equal(e->c.status, 9);
    assert_string_equal(e->c.message, "draining: 100% done\n");
    assert_int_equal(e->s.reason, WF_H2_END_STATUS);
    assert_int_equal(e->s.status, 9);

    /* The connection stays usable for a new call. */
    assert_int_equal(wf_h2_call_open(e->cli, &e->c.call), 0);
    e->echo = true;
    send_str(e->c.call, "{\"again\":true}");
    want = 3;
    run_until(e, client_msgs);
    assert_string_equal(e->c.last, "{\"again\":true}");
}

static bool server_conn_closed(env *e)
{
    return e->s.conn_closed == 1;
}
static bool client_conn_closed(env *e)
{
    return e->c.conn_closed == 1;
}

/* The silent side runs no keepalive of its own and stops reading, like a peer whose host
 * vanished: its socket stays open, so only the other side's pings can find out. */
static void keepalive_case(env *e, bool client_silent)
{
    wf_h2_opts on = {.ping_interval_ms = 50, .ping_timeout_ms = 300};
    wf_h2_opts off = {0};
    start(e, client_silent ? &on : &off, client_silent ? &off : &on);
    send_str(e->c.call, "{\"hello\":1}");
    want = 1;
    run_until(e, client_msgs);
    /* A healthy peer answers pings: several intervals pass without an end. */
    run_for(e, 400);
    assert_int_equal(e->s.ends + e->c.ends, 0);
    assert_int_equal(e->s.conn_closed + e->c.conn_closed, 0);

    wf_h2_conn *silent = client_silent ? e->cli : wf_h2_call_conn(e->s.call);
    side *alive = client_silent ? &e->s : &e->c;
    side *dead = client_silent ? &e->c : &e->s;
    wf_h2_conn_pause_reads(silent, true);
    run_until(e, client_silent ? server_conn_closed : client_conn_closed);
    assert_int_equal(alive->ends, 1);
    assert_int_equal(alive->reason, WF_H2_END_KEEPALIVE);
    assert_int_equal(alive->conn_reason, WF_H2_END_KEEPALIVE);
    assert_int_equal(alive->status, -1);
    assert_int_equal(dead->ends + dead->conn_closed, 0); /* half-open: it cannot know */
}

static void test_keepalive_server_detects(void **state)
{
    keepalive_case(*state, true);
}

static void test_keepalive_client_detects(void **state)
{
    keepalive_case(*state, false);
}

static void test_large_message(void **state)
{
    env *e = *state;
    start(e, NULL, NULL);
    char *big = malloc(BIG);
    assert_non_null(big);
    big[0] = '"';
    for (size_t i = 1; i + 1 < BIG; i++)
        big[i] = (char)('a' + i % 26);
    big[BIG - 1] = '"';
    assert_int_equal(wf_h2_call_send(e->c.call, big, BIG), 0);
    send_str(e->c.call, "{\"after\":true}");
    want = 2;
    run_until(e, client_msgs);
    assert_int_equal(e->s.msgs, 2);
    assert_non_null(e->s.big);
    assert_memory_equal(e->s.big, big, BIG);
    assert_non_null(e->c.big);
    assert_memory_equal(e->c.big, big, BIG);
    assert_string_equal(e->c.last, "{\"after\":true}");
    assert_int_equal(wf_h2_call_pending(e->c.call), 0);
    free(big);
}

/* The same shared 1 MiB buffer in two messages, between copied pieces: the queue keeps the
 * buffer alive after the caller's reference is gone, and the bytes arrive in order. */
static void test_sendv_shared(void **state)
{
    env *e = *state;
    e->echo = false;
    start(e, NULL, NULL);
    send_str(e->c.call, "{}");
    want = 1;
    run_until(e, server_msgs);
    uint8_t *data;
    wf_h2_buf *b = wf_h2_buf_new(BIG, &data);
    assert_non_null(b);
    for (size_t i = 0; i < BIG; i++)
        data[i] = (uint8_t)('a' + i % 26);
    char *own = malloc(6);
    assert_non_null(own);
    memcpy(own, "tail!", 6);
    wf_h2_buf *t = wf_h2_buf_take(own, 5);
    assert_non_null(t);
    wf_h2_piece pc[] = {{.data = "<", .len = 1},
                        {.buf = b, .off = 0, .len = BIG},
                        {.data = "|", .len = 1},
                        {.buf = t, .off = 0, .len = 5},
                        {.buf = b, .off = 3, .len = 4}};
    wf_h2_piece bad = {.buf = b, .off = BIG - 1, .len = 2};
    assert_int_equal(wf_h2_call_sendv(e->s.call, &bad, 1), WF_H2_E_INVAL);
    assert_int_equal(wf_h2_call_sendv(e->s.call, pc, 5), 0);
    assert_int_equal(wf_h2_call_sendv(e->s.call, pc, 5), 0);
    assert_int_equal(wf_h2_call_pending(e->s.call), 2 * (5 + 1 + BIG + 1 + 5 + 4));
    assert_int_equal(wf_h2_server_pending(e->srv), 2 * (5 + 1 + BIG + 1 + 5 + 4));
    wf_h2_buf_unref(b);
    wf_h2_buf_unref(t);
    want = 2;
    run_until(e, client_msgs);
    assert_int_equal(e->c.last_len, 1 + BIG + 1 + 5 + 4);
    assert_non_null(e->c.big);
    assert_int_equal(e->c.big[0], '<');
    for (size_t i = 0; i < BIG; i += 4099)
        assert_int_equal(e->c.big[1 + i], 'a' + i % 26);
    assert_memory_equal(e->c.big + 1 + BIG, "|tail!defg", 10);
    assert_int_equal(wf_h2_call_pending(e->s.call), 0);
    assert_int_equal(wf_h2_server_pending(e->srv), 0);
}

static void test_oversize_rejected(void **state)
{
    env *e = *state;
    wf_h2_opts so = {.max_msg = 1024};
    start(e, &so, NULL);
    char buf[2048];
    memset(buf, 'x', sizeof buf);
    assert_int_equal(wf_h2_call_send(e->c.call, buf, sizeof buf), 0);
    run_until(e, both_ended);
    assert_int_equal(e->s.msgs, 0);
    assert_int_equal(e->c.reason, WF_H2_END_STATUS);
    assert_int_equal(e->c.status, 8); /* RESOURCE_EXHAUSTED */
    assert_string_equal(e->c.message, "message larger than the maximum");
    assert_int_equal(e->s.reason, WF_H2_END_PROTOCOL);
}

static void test_send_queue_bound(void **state)
{
    env *e = *state;
    wf_h2_opts co = {.max_send_queue = 100};
    start(e, NULL, &co);
    char buf[40] = {0};
    assert_int_equal(wf_h2_call_send(e->c.call, buf, sizeof buf), 0);
    assert_int_equal(wf_h2_call_send(e->c.call, buf, sizeof buf), 0);
    assert_int_equal(wf_h2_call_send(e->c.call, buf, sizeof buf), WF_H2_E_BUSY);
    char big[96] = {0}; /* 96 + the 5-byte prefix can never fit in 100: not "retry later" */
    assert_int_equal(wf_h2_call_send(e->c.call, big, sizeof big), WF_H2_E_INVAL);
    assert_int_equal(wf_h2_call_pending(e->c.call), 90);
    want = 2;
    run_until(e, client_msgs);
    assert_int_equal(wf_h2_call_send(e->c.call, buf, sizeof buf), 0);
}

static void test_connect_refused(void **state)
{
    env *e = *state;
    wf_h2_handlers ch = {NULL, cli_on_message, cli_on_end, cli_on_conn_closed, e};
    /* Bind then close a listener to get a port nobody listens on. */
    wf_h2_server *tmp;
    wf_h2_handlers sh = {0};
    assert_int_equal(wf_h2_server_start(&e->loop, "127.0.0.1", 0, NULL, &sh, &tmp), 0);
    int port = wf_h2_server_port(tmp);
    wf_h2_server_close(tmp);
    uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(wf_h2_client_connect(&e->loop, "127.0.0.1", port, NULL, &ch, &e->cli), 0);
    assert_int_equal(wf_h2_call_open(e->cli, &e->c.call), 0);
    want = 0;
    run_until(e, client_conn_closed);
    assert_int_equal(e->c.reason, WF_H2_END_CONN_LOST);
    assert_int_equal(e->c.conn_reason, WF_H2_END_CONN_LOST);
}

/* The same exchange over a Unix domain socket (Istio's xds-grpc pipe), and a connect to a
 * socket path nobody listens on. */
static void test_pipe(void **state)
{
    env *e = *state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/weft-h2-test-%d.sock", (int)getpid());
    unlink(path);
    wf_h2_handlers sh = {srv_on_call, srv_on_message, srv_on_end, srv_on_conn_closed, e};
    wf_h2_handlers ch = {NULL, cli_on_message, cli_on_end, cli_on_conn_closed, e};
    assert_int_equal(wf_h2_server_start_pipe(&e->loop, path, NULL, &sh, &e->srv), 0);
    assert_int_equal(wf_h2_server_port(e->srv), 0);
    assert_int_equal(wf_h2_client_connect_pipe(&e->loop, path, NULL, &ch, &e->cli), 0);
    assert_int_equal(wf_h2_call_open(e->cli, &e->c.call), 0);
    send_str(e->c.call, "{\"type_url\":\"t\"}");
    want = 1;
    run_until(e, client_msgs);
    assert_string_equal(e->s.last, "{\"type_url\":\"t\"}");
    assert_string_equal(e->c.last, "{\"type_url\":\"t\"}");
    char peer[128], want_peer[80];
    snprintf(want_peer, sizeof want_peer, "unix:%s", path);
    assert_int_equal(wf_h2_conn_peer(wf_h2_call_conn(e->s.call), peer, sizeof peer), 0);
    assert_string_equal(peer, want_peer);
    assert_int_equal(wf_h2_conn_peer(e->cli, peer, sizeof peer), 0);
    assert_string_equal(peer, want_peer);
    wf_h2_call_cancel(e->c.call);
    run_until(e, both_ended);
    wf_h2_conn_close(e->cli);
    wf_h2_server_close(e->srv);
    e->srv = NULL;
    run_until(e, client_conn_closed);
    unlink(path);
    /* nobody listens: the call ends as a lost connection */
    e->c = (side){0};
    assert_int_equal(wf_h2_client_connect_pipe(&e->loop, path, NULL, &ch, &e->cli), 0);
    assert_int_equal(wf_h2_call_open(e->cli, &e->c.call), 0);
    run_until(e, client_conn_closed);
    assert_int_equal(e->c.reason, WF_H2_END_CONN_LOST);
    char longpath[200];
    memset(longpath, 'x', sizeof longpath - 1);
    longpath[sizeof longpath - 1] = '\0';
    wf_h2_conn *c2 = NULL;
    assert_int_equal(wf_h2_client_connect_pipe(&e->loop, longpath, NULL, &ch, &c2), WF_H2_E_INVAL);
}

static bool client_ended(env *e)
{
    return e->c.ends == 1;
}

/* One server, two methods (SotW and delta ADS, as istiod's 15010): each call reports its
 * path; a third path is refused with UNIMPLEMENTED; both ends know their peer. */
static void test_paths_and_peer(void **state)
{
    env *e = *state;
    static const char *const paths[] = {WF_XDS_ADS_PATH, WF_XDS_DELTA_PATH, NULL};
    wf_h2_opts so = {.paths = paths};
    wf_h2_opts co = {.path = WF_XDS_DELTA_PATH};
    start(e, &so, &co);
    assert_string_equal(wf_h2_call_path(e->c.call), WF_XDS_DELTA_PATH);
    send_str(e->c.call, "{\"delta\":1}");
    want = 1;
    run_until(e, client_msgs);
    assert_ptr_equal(wf_h2_call_path(e->s.call), paths[1]);

    char peer[64], other[64];
    assert_int_equal(wf_h2_conn_peer(wf_h2_call_conn(e->s.call), peer, sizeof peer), 0);
    assert_int_equal(strncmp(peer, "127.0.0.1:", 10), 0);
    assert_int_equal(wf_h2_conn_peer(e->cli, other, sizeof other), 0);
    char want_srv[32];
    snprintf(want_srv, sizeof want_srv, "127.0.0.1:%d", wf_h2_server_port(e->srv));
    assert_string_equal(other, want_srv);
    assert_int_equal(wf_h2_conn_peer(e->cli, other, 4), WF_H2_E_INVAL);
    assert_string_equal(other, "127");

    /* SotW on a second connection to the same server */
    wf_h2_handlers ch = {NULL, cli_on_message, cli_on_end, cli_on_conn_closed, e};
    wf_h2_opts sotw = {.path = NULL};
    wf_h2_conn *c2 = NULL;
    wf_h2_call *call2 = NULL;
    assert_int_equal(
        wf_h2_client_connect(&e->loop, "127.0.0.1", wf_h2_server_port(e->srv), &sotw, &ch, &c2), 0);
    assert_int_equal(wf_h2_call_open(c2, &call2), 0);
    send_str(call2, "{\"sotw\":1}");
    want = 2;
    run_until(e, client_msgs);
    assert_ptr_equal(wf_h2_call_path(e->s.call), paths[0]);
    char peer2[64];
    assert_int_equal(wf_h2_conn_peer(wf_h2_call_conn(e->s.call), peer2, sizeof peer2), 0);
    assert_string_not_equal(peer, peer2);
    wf_h2_conn_close(c2);
    want = 0;
    run_until(e, client_conn_closed);

    /* a path the server does not serve */
    wf_h2_opts bad = {.path = "/envoy.service.discovery.v3.AggregatedDiscoveryService/Nope"};
    wf_h2_conn *c3 = NULL;
    e->c = (side){0};
    assert_int_equal(
        wf_h2_client_connect(&e->loop, "127.0.0.1", wf_h2_server_port(e->srv), &bad, &ch, &c3), 0);
    assert_int_equal(wf_h2_call_open(c3, &e->c.call), 0);
    run_until(e, client_ended);
    assert_int_equal(e->c.reason, WF_H2_END_STATUS);
    assert_int_equal(e->c.status, 12);
    wf_h2_conn_close(c3);
    run_until(e, client_conn_closed);

    /* an empty path list is refused */
    static const char *const none[] = {NULL};
    wf_h2_opts empty = {.paths = none};
    wf_h2_handlers sh = {srv_on_call, srv_on_message, srv_on_end, srv_on_conn_closed, e};
    wf_h2_server *s2 = NULL;
    assert_int_equal(wf_h2_server_start(&e->loop, "127.0.0.1", 0, &empty, &sh, &s2), WF_H2_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exchange, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_server_detects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_client_detects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sendv_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversize_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_queue_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paths_and_peer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
