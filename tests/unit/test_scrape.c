/*
 * test_scrape.c - pilot's scrape loop (pilot/scrape.h) on one loop with a real xDS server
 * (pilot/ads.h) and real xDS clients (xds/h2_stream.h): the connected proxies become targets;
 * a round asks each once, at most max_inflight at a time; a status other than 200, a timeout,
 * a body over max_body and malformed text fail that target with the reason, the others are
 * read into the store; the next round counts increases; a target's history records scrape ok
 * <-> failed and its server state; a proxy that disconnects is no longer a target. The
 * proxies' answers come from one HTTP server on the loop, which tells them apart by Host (the
 * loop's --uiScrapeAddr mode, as the bench uses it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "http/h1_server.h"
#include "pilot/ads.h"
#include "pilot/scrape.h"
#include "xds/h2_stream.h"

#define NPROXY 5

/* ---- xDS: a fake generator, proxies whose address comes from the pod name ---- */

static json_t *fake_generate(const wf_pilot_env *env, const wf_pilot_proxy *p, wf_xds_type t,
                             const wf_xds_names *names)
{
    return json_array();
}

static int fake_node(const wf_xds_node *node, const wf_store *store, wf_pilot_proxy *out, char *err,
                     size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *dot = node->id ? strrchr(node->id, '.') : NULL;
    if (!dot) {
        snprintf(err, cap, "node.id: want <pod>.<namespace>");
        return -1;
    }
    out->id = strdup(node->id);
    out->pod = strndup(node->id, (size_t)(dot - node->id));
    out->ns = strdup(dot + 1);
    char ip[32];
    snprintf(ip, sizeof ip, "10.0.0.%s", out->pod + 1); /* pod "p3" is 10.0.0.3 */
    out->ip = strdup(ip);
    out->kind = WF_PROXY_SIDECAR;
    out->labels = json_object();
    return 0;
}

/* ---- the proxies' status ports: one server, answers by Host ---- */

typedef struct {
    int active, max_active, asked[NPROXY + 1];
    double requests; /* proxy 1's istio_requests_total */
    bool p2_ok;      /* proxy 2 answers 500 until this is set */
} proxies;

static const char *TEXT = "# TYPE istio_requests_total counter\n"
                          "istio_requests_total{reporter=\"destination\",source_workload=\"a\","
                          "destination_service=\"b.ns.svc.cluster.local\",destination_workload="
                          "\"b\",response_code=\"200\"} %g\n"
                          "envoy_server_state{} %d\n";

static void answer(h1s_conn *c, proxies *px, int n)
{
    char body[4096];
    if (n == 1 || (n == 2 && px->p2_ok)) {
        int len = snprintf(body, sizeof body, TEXT, n == 1 ? px->requests : 1.0, n == 2 ? 3 : 0);
        h1s_respond(c, 200, NULL, "Content-Type: text/plain\r\n", body, (size_t)len);
    } else if (n == 2) {
        h1s_respond(c, 500, NULL, NULL, "no\n", 3);
    } else if (n == 4) { /* over max_body (1024) */
        memset(body, '#', sizeof body);
        h1s_respond(c, 200, NULL, NULL, body, sizeof body);
    } else if (n == 5) {
        h1s_respond(c, 200, NULL, NULL, "istio_requests_total{oops\n", 25);
    }
    /* 3: never answers (the scrape's timeout ends it) */
}

static void on_request(void *ud, h1s_conn *c, const h1s_request *req)
{
    proxies *px = ud;
    int n = 0;
    for (size_t i = 0; i < req->nheaders; i++)
        if (req->headers[i].name.len == 4 && !strncasecmp(req->headers[i].name.p, "host", 4))
            sscanf(req->headers[i].value.p, "10.0.0.%d:15020", &n);
    assert_true(n >= 1 && n <= NPROXY);
    assert_true(req->path.len == 17 && !memcmp(req->path.p, "/stats/prometheus", 17));
    px->asked[n]++;
    if (++px->active > px->max_active)
        px->max_active = px->active;
    if (n != 3)
        px->active--;
    answer(c, px, n);
}

static void on_abort(void *ud, h1s_conn *c)
{
    ((proxies *)ud)->active--; /* the stalled one, closed by the scrape's timeout */
}

/* ---- the environment ---- */

typedef struct {
    uv_loop_t loop;
    wf_ads *ads;
    wf_snapshot *snap;
    wf_h2_conn *conn[NPROXY + 1];
    h1s_server *srv;
    proxies px;
    wf_scrape *scrape;
} env;

static void pump_until(env *e, bool (*done)(env *), int ms)
{
    for (int i = 0; i < ms && !done(e); i++) {
        uv_run(&e->loop, UV_RUN_NOWAIT);
        uv_sleep(1);
        uv_update_time(&e->loop);
    }
}

static void cli_msg(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud) {}

static void connect_proxy(env *e, int n)
{
    wf_h2_opts o = {.path = WF_XDS_ADS_PATH};
    wf_h2_handlers h = {.on_message = cli_msg, .ud = e};
    wf_h2_call *call;
    assert_int_equal(
        wf_h2_client_connect(&e->loop, "127.0.0.1", wf_ads_port(e->ads), &o, &h, &e->conn[n]), 0);
    assert_int_equal(wf_h2_call_open(e->conn[n], &call), 0);
    char req[256];
    snprintf(req, sizeof req,
             "{\"type_url\":\"%s\",\"node\":{\"id\":\"p%d.ns\"},\"resource_names\":[]}",
             WF_XDS_TYPE_CLUSTER, n);
    assert_int_equal(wf_h2_call_send(call, req, strlen(req)), 0);
}

static bool all_connected(env *e)
{
    return wf_ads_connected(e->ads) == NPROXY;
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    assert_non_null(e);
    assert_int_equal(uv_loop_init(&e->loop), 0);
    char err[256];
    wf_ads_opts o = {
        .port = 0, .retention_ms = 60000, .generate = fake_generate, .proxy_from_node = fake_node};
    assert_int_equal(wf_ads_start(&e->loop, &o, &e->ads, err, sizeof err), 0);
    e->snap = calloc(1, sizeof *e->snap);
    e->snap->refs = 1;
    wf_arena_init(&e->snap->arena);
    e->snap->store = wf_test_load_store(NULL, NULL, "default");
    e->snap->change = WF_CHANGE_FULL;
    wf_ads_push(e->ads, e->snap);
    struct sockaddr_storage sa;
    assert_int_equal(h1s_parse_address("127.0.0.1:0", &sa), 0);
    h1s_opts ho = {.body = H1S_BODY_SKIP, .idle_timeout_ms = 10000};
    h1s_callbacks cb = {.on_request = on_request, .on_abort = on_abort, .ud = &e->px};
    int rc = 0;
    e->srv = h1s_listen(&e->loop, (struct sockaddr *)&sa, &ho, &cb, &rc);
    assert_non_null(e->srv);
    for (int n = 1; n <= NPROXY; n++)
        connect_proxy(e, n);
    pump_until(e, all_connected, 3000);
    assert_int_equal(wf_ads_connected(e->ads), NPROXY);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", h1s_port(e->srv));
    wf_scrape_opts so = {.interval_ms = 3600000, /* rounds only when the test asks */
                         .max_inflight = 2,
                         .timeout_ms = 300,
                         .max_body = 1024,
                         .override_addr = addr};
    e->scrape = wf_scrape_new(&e->loop, e->ads, &so, err, sizeof err);
    assert_non_null(e->scrape);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    wf_scrape_free(e->scrape);
    for (int n = 1; n <= NPROXY; n++)
        if (e->conn[n])
            wf_h2_conn_close(e->conn[n]);
    h1s_close(e->srv);
    wf_ads_close(e->ads);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    wf_snapshot_unref(e->snap);
    free(e);
    return 0;
}

static uint64_t want_generation;

static bool round_done(env *e)
{
    return wf_scrape_generation(e->scrape) >= want_generation;
}

static void run_round(env *e)
{
    want_generation = wf_scrape_generation(e->scrape) + 1;
    wf_scrape_round_now(e->scrape);
    pump_until(e, round_done, 5000);
    assert_true(round_done(e));
}

static const wf_scrape_target *target(env *e, int n)
{
    char id[16];
    snprintf(id, sizeof id, "p%d.ns", n);
    for (size_t i = 0; i < wf_scrape_target_count(e->scrape); i++)
        if (!strcmp(wf_scrape_target_at(e->scrape, i)->proxy_id, id))
            return wf_scrape_target_at(e->scrape, i);
    return NULL;
}

static void test_round_bounds_failures_and_history(void **state)
{
    env *e = *state;
    e->px.requests = 10;
    run_round(e);
    assert_int_equal(wf_scrape_target_count(e->scrape), NPROXY);
    for (int n = 1; n <= NPROXY; n++)
        assert_int_equal(e->px.asked[n], 1);
    assert_int_equal(e->px.max_active, 2); /* max_inflight */
    const wf_scrape_target *t = target(e, 1);
    assert_true(t->scraped && t->ok);
    assert_string_equal(t->url, "http://10.0.0.1:15020/stats/prometheus");
    assert_int_equal(t->info.tuples, 1);
    assert_true(t->info.has_state);
    assert_string_equal(wf_scrape_event_at(t, 0)->event, "scrape ok");
    assert_string_equal(wf_scrape_event_at(t, 1)->event, "state LIVE");
    t = target(e, 2);
    assert_false(t->ok);
    assert_string_equal(t->error, "status 500");
    assert_string_equal(wf_scrape_event_at(t, 0)->event, "scrape failed");
    assert_string_equal(wf_scrape_event_at(t, 0)->detail, "status 500");
    assert_false(target(e, 3)->ok);
    assert_non_null(strstr(target(e, 3)->error, "timeout"));
    assert_false(target(e, 4)->ok);
    assert_false(target(e, 5)->ok);
    assert_non_null(strstr(target(e, 5)->error, "bad metrics text: line 1"));
    /* a baseline only: nothing in the store yet */
    assert_int_equal(wf_mm_tuple_count(wf_scrape_store(e->scrape)), 0);

    /* round 2: proxy 1 served 5 more; proxy 2 recovered (and is INITIALIZING) */
    e->px.requests = 15;
    e->px.p2_ok = true;
    run_round(e);
    assert_int_equal(wf_mm_tuple_count(wf_scrape_store(e->scrape)), 1);
    t = target(e, 2);
    assert_true(t->ok);
    assert_int_equal(t->history_n, 3);
    assert_string_equal(wf_scrape_event_at(t, 1)->event, "scrape ok");
    assert_string_equal(wf_scrape_event_at(t, 2)->event, "state INITIALIZING");
    assert_int_equal(target(e, 1)->history_n, 2); /* unchanged: nothing recorded */

    /* proxy 5 disconnects: no longer a target at the next round */
    wf_h2_conn_close(e->conn[5]);
    e->conn[5] = NULL;
    for (int i = 0; i < 200 && wf_ads_connected(e->ads) == NPROXY; i++) {
        uv_run(&e->loop, UV_RUN_NOWAIT);
        uv_sleep(1);
    }
    run_round(e);
    assert_int_equal(wf_scrape_target_count(e->scrape), NPROXY - 1);
    assert_null(target(e, 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_bounds_failures_and_history, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
