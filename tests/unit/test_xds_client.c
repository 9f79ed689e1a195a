/*
 * test_xds_client.c - proxy/xds_client against a fake ADS server (h2_stream's server side)
 * in the same uv loop: the first requests (CDS then LDS, node on the first message only),
 * ACK after apply, EDS / RDS subscriptions that follow CDS / LDS, NACK naming the resource
 * when the loader refuses it, the test hook, reconnect with back-off after the server ends
 * the stream (versions kept, nonces dropped), connected_state / upstream_cx_active /
 * update_* stats, a server that accepts and closes (connected_state never 1), a Unix socket
 * (pipe) control plane, and a clean stop.
 * Delta (api_type DELTA_GRPC, DeltaAggregatedResources on the same fake server): legacy
 * wildcard CDS / LDS (empty subscribe), ACK with the nonce, EDS / RDS subscribe and
 * unsubscribe following CDS / LDS, resources updated per name and removed by
 * removed_resources, per-resource versions in the config dump, NACKs (loader error,
 * duplicate names), and initial_resource_versions on reconnect.
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

#include "harness.h"
#include "proxy/bootstrap/bootstrap.h"
#include "core/base64.h"
#include "proxy/sds/ads_secrets.h"
#include "proxy/sds/secrets.h"
#include "proxy/xds/xds_client.h"
#include "tls_testcerts.h"
#include "xds/h2_stream.h"

#define GUARD_MS 5000
#define MAXREQ   32

#define CDS_URL "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define LDS_URL "type.googleapis.com/envoy.config.listener.v3.Listener"
#define RDS_URL "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
#define EDS_URL "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

#define EDS_CLUSTER                                                                                \
    "{\"@type\":\"" CDS_URL "\",\"name\":\"outbound|80||a\",\"type\":\"EDS\","                     \
    "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}},\"service_name\":\"svc-a\"}}"
#define CLA_A                                                                                      \
    "{\"@type\":\"" EDS_URL "\",\"cluster_name\":\"svc-a\",\"endpoints\":[{\"lb_endpoints\":[{"    \
    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":"     \
    "9}}}}]}]}"
#define LISTENER(extra)                                                                            \
    "{\"@type\":\"" LDS_URL "\",\"name\":\"l80\",\"address\":{\"socket_address\":{\"address\":"    \
    "\"127.0.0.1\",\"port_value\":18080}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy."     \
    "filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"type.googleapis."     \
    "com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\","     \
    "\"stat_prefix\":\"s\"," extra "\"rds\":{\"route_config_name\":\"80\",\"config_source\":{"     \
    "\"ads\":{}}},\"http_filters\":[{\"name\":\"envoy.filters.http.router\"}]}}]}]}"
#define ROUTE_80                                                                                   \
    "{\"@type\":\"" RDS_URL "\",\"name\":\"80\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":"   \
    "[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"outbound|80||a\""  \
    "}}]}]}"

typedef struct env {
    uv_loop_t loop;
    uv_timer_t guard;
    bool timed_out;
    wf_h2_server *srv;
    wf_h2_call *scall;  /* the server side of the current stream */
    int calls;          /* streams the server saw */
    bool close_at_once; /* the server ends every stream as soon as it opens */
    json_t *req[MAXREQ];
    int nreq;
    wp_stats *store;
    wp_config *boot;
    wp_xds_client *cli;
    int applies;
    const char *fail_apply; /* apply returns this error */
    wp_config *applied;     /* last config applied */
    json_t *dump;           /* the config-dump elements of the last apply */
    bool delta;             /* start() makes a DELTA_GRPC bootstrap */
    const char *path;       /* :path of the current stream on the server */
    int ups, downs, updates;
    char sock[64];
    /* the hold callbacks: calls, the listeners and warming ones of the last call
     * ("a,b,"), outcomes, and a listener whose address "cannot be bound" */
    int holds, settled_ok, settled_bad;
    char held[256], warming[256];
    const char *hold_fail;
    wp_secrets *secrets; /* the credentialName secrets (sds/ads_secrets.h) */
} env;

/* ---- the fake server ---- */

static void srv_on_call(wf_h2_call *call, void *ud)
{
    env *e = ud;
    e->scall = call;
    e->calls++;
    e->path = wf_h2_call_path(call);
    if (e->close_at_once)
        wf_h2_call_finish(call, 14, "going away");
}

static void srv_on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    env *e = ud;
    json_error_t je;
    json_t *j = json_loadb((const char *)msg, len, 0, &je);
    assert_non_null(j);
    assert_true(e->nreq < MAXREQ);
    e->req[e->nreq++] = j;
}

static void srv_on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    env *e = ud;
    if (e->scall == call)
        e->scall = NULL;
}

static void srv_on_conn_closed(wf_h2_conn *c, wf_h2_end_reason r, void *ud) {}

/* Sends a DiscoveryResponse of type url with the resources (a JSON array text). */
static void respond(env *e, const char *url, const char *version, const char *nonce,
                    const char *resources)
{
    char *text = NULL;
    assert_true(asprintf(&text,
                         "{\"version_info\":\"%s\",\"type_url\":\"%s\",\"nonce\":\"%s\","
                         "\"resources\":%s}",
                         version, url, nonce, resources) > 0);
    assert_non_null(e->scall);
    assert_int_equal(wf_h2_call_send(e->scall, text, strlen(text)), 0);
    free(text);
}

/* ---- the client's callbacks ---- */

static int apply(void *ud, json_t *eff, const wp_xds_dynamic *dyn, wf_strbuf *err)
{
    env *e = ud;
    e->applies++;
    if (e->fail_apply) {
        wf_strbuf_puts(err, e->fail_apply);
        return -1;
    }
    wp_config *c = wp_bootstrap_load(eff, "xds", err);
    if (!c)
        return -1;
    wp_config_unref(e->applied);
    e->applied = c;
    json_decref(e->dump);
    e->dump = json_incref(dyn->dump);
    return 0;
}

static int hold(void *ud, const wp_config *cfg, size_t first, const wf_xds_names *warming,
                json_t *failed)
{
    env *e = ud;
    e->holds++;
    e->held[0] = e->warming[0] = '\0';
    for (size_t i = first; i < cfg->nlisteners; i++) {
        const char *name = cfg->listeners[i].name;
        snprintf(e->held + strlen(e->held), sizeof e->held - strlen(e->held), "%s,", name);
        if (e->hold_fail && strcmp(name, e->hold_fail) == 0)
            json_object_set_new(
                failed, name, json_string("cannot bind '127.0.0.1:18081': Address already in use"));
    }
    for (size_t i = 0; i < warming->n; i++)
        snprintf(e->warming + strlen(e->warming), sizeof e->warming - strlen(e->warming), "%s,",
                 warming->v[i]);
    return 0;
}

static void hold_settle(void *ud, bool accepted)
{
    env *e = ud;
    if (accepted)
        e->settled_ok++;
    else
        e->settled_bad++;
}

static void on_state(void *ud, bool up)
{
    env *e = ud;
    if (up)
        e->ups++;
    else
        e->downs++;
}

static int on_secrets(void *ud, const json_t *set, const wf_xds_names *wanted, wf_strbuf *err)
{
    env *e = ud;
    return wp_ads_secrets_store(e->secrets, set, wanted, 1.0, err);
}

static void on_update(void *ud, wf_xds_type t, const char *version, bool accepted)
{
    if (accepted)
        ((env *)ud)->updates++;
}

/* ---- fixture ---- */

static void on_guard(uv_timer_t *t)
{
    ((env *)t->data)->timed_out = true;
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    if (!e || uv_loop_init(&e->loop) != 0 || uv_timer_init(&e->loop, &e->guard) != 0)
        return -1;
    e->guard.data = e;
    e->store = wp_stats_new(1);
    e->secrets = wp_secrets_new();
    *state = e;
    return e->store && e->secrets ? 0 : -1;
}

static int teardown(void **state)
{
    env *e = *state;
    wp_xds_client_stop(e->cli);
    if (e->srv)
        wf_h2_server_close(e->srv);
    uv_close((uv_handle_t *)&e->guard, NULL);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    int rv = uv_loop_close(&e->loop);
    for (int i = 0; i < e->nreq; i++)
        json_decref(e->req[i]);
    wp_config_unref(e->boot);
    wp_config_unref(e->applied);
    json_decref(e->dump);
    wp_stats_free(e->store);
    wp_secrets_free(e->secrets);
    if (e->sock[0])
        unlink(e->sock);
    free(e);
    return rv == 0 ? 0 : -1;
}

typedef bool (*pred_fn)(env *e);
static int want;

static void run_until(env *e, pred_fn pred)
{
    e->timed_out = false;
    assert_int_equal(uv_timer_start(&e->guard, on_guard, GUARD_MS, 0), 0);
    while (!pred(e) && !e->timed_out)
        uv_run(&e->loop, UV_RUN_ONCE);
    uv_timer_stop(&e->guard);
    assert_false(e->timed_out);
}

static bool nreq_at_least(env *e)
{
    return e->nreq >= want;
}

static bool calls_at_least(env *e)
{
    return e->calls >= want;
}

static void wait_requests(env *e, int n)
{
    want = n;
    run_until(e, nreq_at_least);
}

static int64_t sv(env *e, const char *name, bool gauge)
{
    uint32_t s = gauge ? wp_stats_gauge(e->store, name) : wp_stats_counter(e->store, name);
    return wp_stats_value(e->store, s);
}

/* Starts the server (TCP or a Unix socket) and the client with node_once. */
static void start(env *e, bool pipe, bool node_once, const char *reject)
{
    static const char *const paths[] = {WF_XDS_ADS_PATH, WF_XDS_DELTA_PATH, NULL};
    wf_h2_opts so = {.paths = paths};
    wf_h2_handlers sh = {srv_on_call, srv_on_message, srv_on_end, srv_on_conn_closed, e};
    char addr[160];
    if (pipe) {
        snprintf(e->sock, sizeof e->sock, "/tmp/weft-xds-test-%d.sock", (int)getpid());
        unlink(e->sock);
        assert_int_equal(wf_h2_server_start_pipe(&e->loop, e->sock, &so, &sh, &e->srv), 0);
        snprintf(addr, sizeof addr, "{\"pipe\":{\"path\":\"%s\"}}", e->sock);
    } else {
        assert_int_equal(wf_h2_server_start(&e->loop, "127.0.0.1", 0, &so, &sh, &e->srv), 0);
        snprintf(addr, sizeof addr,
                 "{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":%d}}",
                 wf_h2_server_port(e->srv));
    }
    char *text = NULL;
    assert_true(
        asprintf(&text,
                 "{\"node\":{\"id\":\"catalog-1.istioinaction\",\"cluster\":\"catalog\","
                 "\"metadata\":{\"NAMESPACE\":\"istioinaction\"}},\"static_resources\":{"
                 "\"clusters\":[{\"name\":\"xds-grpc\",\"type\":\"STATIC\",\"connect_timeout\":"
                 "\"1s\",\"load_assignment\":{\"cluster_name\":\"xds-grpc\",\"endpoints\":[{"
                 "\"lb_endpoints\":[{\"endpoint\":{\"address\":%s}}]}]}}]},"
                 "\"dynamic_resources\":{\"ads_config\":{\"api_type\":\"%s\","
                 "\"set_node_on_first_message_only\":%s,\"grpc_services\":[{\"envoy_grpc\":{"
                 "\"cluster_name\":\"xds-grpc\"}}]},\"cds_config\":{\"ads\":{}},"
                 "\"lds_config\":{\"ads\":{}}}}",
                 addr, e->delta ? "DELTA_GRPC" : "GRPC", node_once ? "true" : "false") > 0);
    wf_strbuf err = WF_STRBUF_INIT;
    e->boot = wf_test_load_bootstrap(text, &err);
    if (!e->boot)
        fail_msg("bootstrap: %s", wf_strbuf_cstr(&err));
    free(text);
    wp_xds_callbacks cb = {apply, on_state, on_update, e, hold, hold_settle, on_secrets, NULL};
    wp_xds_client_opts o = {.backoff_base_ms = 20,
                            .backoff_max_ms = 80,
                            .seed = 7,
                            .reject_type = reject ? reject : ""};
    assert_int_equal(wp_xds_client_start(&e->loop, e->boot, e->store,
                                         wp_stats_get_shard(e->store, 0), &cb, &o, &e->cli, &err),
                     0);
    wf_strbuf_free(&err);
}

static const char *sval(json_t *j, const char *k)
{
    json_t *v = json_object_get(j, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

static size_t nnames(json_t *req)
{
    return json_array_size(json_object_get(req, "resource_names"));
}

static const char *name0(json_t *req)
{
    return json_string_value(json_array_get(json_object_get(req, "resource_names"), 0));
}

/* ---- tests ---- */

/* CDS then LDS with the node on the first request; CDS applied and ACKed, then EDS follows
 * the EDS cluster; LDS applied and ACKed, then RDS follows the listener. */
static void test_initial_flow(void **state)
{
    env *e = *state;
    start(e, false, true, NULL);
    /* Envoy's connected_state: 1 once the stream is opened, before any answer */
    assert_int_equal(sv(e, "control_plane.connected_state", true), 1);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_active", true), 0);
    wait_requests(e, 2);
    assert_string_equal(e->path, WF_XDS_ADS_PATH);
    assert_string_equal(sval(e->req[0], "type_url"), CDS_URL);
    assert_string_equal(sval(e->req[1], "type_url"), LDS_URL);
    wf_test_expect_str(e->req[0], "node.id", "catalog-1.istioinaction");
    wf_test_expect_str(e->req[0], "node.cluster", "catalog");
    wf_test_expect_str(e->req[0], "node.metadata.NAMESPACE", "istioinaction");
    assert_null(json_object_get(e->req[1], "node"));
    assert_int_equal(nnames(e->req[0]), 0);
    assert_null(json_object_get(e->req[0], "response_nonce"));

    respond(e, CDS_URL, "c1", "n1", "[" EDS_CLUSTER "]");
    wait_requests(e, 4);
    assert_int_equal(e->applies, 1);
    assert_string_equal(sval(e->req[2], "type_url"), CDS_URL); /* the ACK */
    assert_string_equal(sval(e->req[2], "version_info"), "c1");
    assert_string_equal(sval(e->req[2], "response_nonce"), "n1");
    assert_null(json_object_get(e->req[2], "error_detail"));
    assert_string_equal(sval(e->req[3], "type_url"), EDS_URL); /* then EDS */
    assert_int_equal(nnames(e->req[3]), 1);
    assert_string_equal(name0(e->req[3]), "svc-a");
    assert_int_equal(sv(e, "control_plane.connected_state", true), 1);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_active", true), 1);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_total", false), 1);
    assert_int_equal(sv(e, "cluster_manager.cds.update_success", false), 1);
    assert_int_equal(sv(e, "cluster_manager.cds.update_attempt", false), 1);
    assert_int_equal(e->ups, 1);
    assert_int_equal(e->applied->clusters[1].nendpoints, 0); /* EDS not yet here */

    respond(e, EDS_URL, "e1", "n2", "[" CLA_A "]");
    wait_requests(e, 5);
    assert_string_equal(sval(e->req[4], "type_url"), EDS_URL);
    assert_string_equal(sval(e->req[4], "response_nonce"), "n2");
    assert_int_equal(e->applied->clusters[1].nendpoints, 1);

    respond(e, LDS_URL, "l1", "n3", "[" LISTENER("") "]");
    wait_requests(e, 7);
    assert_string_equal(sval(e->req[5], "type_url"), LDS_URL);
    assert_string_equal(sval(e->req[5], "version_info"), "l1");
    assert_string_equal(sval(e->req[6], "type_url"), RDS_URL);
    assert_string_equal(name0(e->req[6]), "80");
    assert_int_equal(e->applied->nlisteners, 0); /* warming: no route configuration */
    assert_int_equal(sv(e, "listener_manager.lds.update_success", false), 1);

    respond(e, RDS_URL, "r1", "n4", "[" ROUTE_80 "]");
    wait_requests(e, 8);
    assert_string_equal(sval(e->req[7], "response_nonce"), "n4");
    assert_int_equal(e->applied->nlisteners, 1);
    assert_int_equal(e->updates, 4);
    wp_xds_status st;
    wp_xds_client_status(e->cli, &st);
    assert_true(st.connected && st.cds_applied && st.lds_applied);
    assert_true(st.since_update_ms >= 0);
    assert_null(st.last_nack);
    /* the same CDS again: ACKed without a new snapshot */
    respond(e, CDS_URL, "c2", "n5", "[" EDS_CLUSTER "]");
    wait_requests(e, 9);
    assert_string_equal(sval(e->req[8], "version_info"), "c2");
    assert_int_equal(e->applies, 4);
}

/* A listener the loader refuses is NACKed with Envoy's message naming it; the last good
 * version stays; a good one is then ACKed. */
static void test_nack(void **state)
{
    env *e = *state;
    start(e, false, false, NULL);
    wait_requests(e, 2);
    assert_non_null(json_object_get(e->req[1], "node")); /* node on every request */
    respond(e, LDS_URL, "l1", "n1", "[" LISTENER("\"bogus\":1,") "]");
    wait_requests(e, 3);
    json_t *nack = e->req[2];
    assert_string_equal(sval(nack, "type_url"), LDS_URL);
    assert_string_equal(sval(nack, "response_nonce"), "n1");
    assert_string_equal(sval(nack, "version_info"), "");
    wf_test_expect_int(nack, "error_detail.code", 13);
    wf_test_expect_str(nack, "error_detail.message",
                       "Error adding/updating listener(s) l80: filter_chains[0].filters[0]."
                       "typed_config.bogus: unknown field");
    assert_int_equal(sv(e, "listener_manager.lds.update_rejected", false), 1);
    assert_int_equal(sv(e, "listener_manager.lds.update_success", false), 0);
    wp_xds_status st;
    wp_xds_client_status(e->cli, &st);
    assert_false(st.lds_applied);
    assert_non_null(st.last_nack);
    /* an apply error that names no dynamic resource is passed through */
    e->fail_apply = "xds: listener manager is draining";
    respond(e, CDS_URL, "c1", "n2", "[" EDS_CLUSTER "]");
    wait_requests(e, 4);
    wf_test_expect_str(e->req[3], "error_detail.message", "listener manager is draining");
    e->fail_apply = NULL;
    respond(e, CDS_URL, "c1", "n3", "[" EDS_CLUSTER "]");
    wait_requests(e, 5);
    assert_string_equal(sval(e->req[4], "version_info"), "c1");
    assert_null(json_object_get(e->req[4], "error_detail"));
}

#define LISTENER_81                                                                                \
    "{\"@type\":\"" LDS_URL "\",\"name\":\"l81\",\"address\":{\"socket_address\":{\"address\":"    \
    "\"127.0.0.1\",\"port_value\":18081}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy."     \
    "filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"type.googleapis."     \
    "com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\","     \
    "\"stat_prefix\":\"s\",\"rds\":{\"route_config_name\":\"81\",\"config_source\":{"              \
    "\"ads\":{}}},\"http_filters\":[{\"name\":\"envoy.filters.http.router\"}]}}]}]}"

/* Each LDS update has its listeners, warming ones included (their route configurations not
 * here yet), bound through the hold callback before it is applied: one that cannot be bound
 * NACKs that LDS update naming it, is dropped (no RDS subscription for it), and the RDS
 * update that follows is ACKed; a later LDS update without the failure is ACKed. */
static void test_lds_bind_failure(void **state)
{
    env *e = *state;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    e->hold_fail = "l81";
    respond(e, LDS_URL, "l1", "n1", "[" LISTENER("") "," LISTENER_81 "]");
    wait_requests(e, 4);
    assert_int_equal(e->holds, 1);
    assert_string_equal(e->held, "l80,l81,");
    assert_string_equal(e->warming, "l80,l81,");
    assert_int_equal(e->settled_ok, 1);
    json_t *nack = e->req[2];
    assert_string_equal(sval(nack, "type_url"), LDS_URL);
    wf_test_expect_str(nack, "error_detail.message",
                       "Error adding/updating listener(s) l81: cannot bind '127.0.0.1:18081': "
                       "Address already in use");
    assert_string_equal(sval(e->req[3], "type_url"), RDS_URL);
    assert_int_equal(nnames(e->req[3]), 1);
    assert_string_equal(name0(e->req[3]), "80");
    assert_int_equal(sv(e, "listener_manager.lds.update_rejected", false), 1);
    /* the route configuration: ACKed, no bind check of its own */
    respond(e, RDS_URL, "r1", "n2", "[" ROUTE_80 "]");
    wait_requests(e, 5);
    assert_string_equal(sval(e->req[4], "type_url"), RDS_URL);
    assert_null(json_object_get(e->req[4], "error_detail"));
    assert_int_equal(e->applied->nlisteners, 1);
    assert_int_equal(e->holds, 1);
    /* the next LDS update, the address free: ACKed; l80 (route here) is not warming */
    e->hold_fail = NULL;
    respond(e, LDS_URL, "l2", "n3", "[" LISTENER("") "," LISTENER_81 "]");
    wait_requests(e, 7);
    assert_string_equal(e->held, "l80,l81,");
    assert_string_equal(e->warming, "l81,");
    assert_string_equal(sval(e->req[5], "version_info"), "l2");
    assert_null(json_object_get(e->req[5], "error_detail"));
    assert_int_equal(e->settled_ok, 2);
    /* an LDS update the loader refuses: the hold is settled as rejected */
    respond(e, LDS_URL, "l3", "n4", "[" LISTENER("\"bogus\":1,") "]");
    wait_requests(e, 8);
    assert_non_null(json_object_get(e->req[7], "error_detail"));
    assert_int_equal(e->settled_bad, 0); /* not loaded: nothing was held for it */
    assert_int_equal(e->holds, 2);
    /* held, then not applied: settled as rejected */
    e->fail_apply = "xds: listener manager is draining";
    respond(e, LDS_URL, "l4", "n5", "[" LISTENER("") "]");
    wait_requests(e, 9);
    assert_non_null(json_object_get(e->req[8], "error_detail"));
    assert_int_equal(e->holds, 3);
    assert_int_equal(e->settled_bad, 1);
    assert_int_equal(e->settled_ok, 2);
    e->fail_apply = NULL;
}

static void test_reject_hook(void **state)
{
    env *e = *state;
    start(e, false, true, "LDS");
    wait_requests(e, 2);
    respond(e, LDS_URL, "l1", "n1", "[]");
    wait_requests(e, 3);
    wf_test_expect_str(e->req[2], "error_detail.message",
                       "rejected by test hook WEFT_PROXY_TEST_REJECT_TYPE");
    assert_int_equal(e->applies, 0);
    respond(e, CDS_URL, "c1", "n2", "[]");
    wait_requests(e, 4);
    assert_null(json_object_get(e->req[3], "error_detail"));
}

/* The server ends the stream: the client reconnects after a back-off and asks again with the
 * versions it accepted, no nonce, and the node. */
static void test_reconnect(void **state)
{
    env *e = *state;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    respond(e, CDS_URL, "c1", "n1", "[" EDS_CLUSTER "]");
    wait_requests(e, 4); /* ACK + EDS */
    assert_int_equal(wf_h2_call_finish(e->scall, 14, "pilot restarting"), 0);
    want = 2;
    run_until(e, calls_at_least);
    wait_requests(e, 7); /* CDS, EDS, LDS on the new stream */
    assert_int_equal(e->downs, 1);
    assert_string_equal(sval(e->req[4], "type_url"), CDS_URL);
    assert_string_equal(sval(e->req[4], "version_info"), "c1");
    assert_null(json_object_get(e->req[4], "response_nonce"));
    assert_non_null(json_object_get(e->req[4], "node"));
    assert_string_equal(sval(e->req[5], "type_url"), EDS_URL);
    assert_string_equal(name0(e->req[5]), "svc-a");
    assert_null(json_object_get(e->req[5], "node"));
    assert_string_equal(sval(e->req[6], "type_url"), LDS_URL);
    assert_int_equal(sv(e, "cluster_manager.cds.update_failure", false), 1);
    assert_int_equal(sv(e, "listener_manager.lds.update_failure", false), 1);
    /* not answered yet on the new stream: open (Envoy's connected_state), not counted as up */
    assert_int_equal(sv(e, "control_plane.connected_state", true), 1);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_active", true), 0);
    respond(e, CDS_URL, "c1", "n9", "[" EDS_CLUSTER "]");
    wait_requests(e, 8);
    assert_int_equal(sv(e, "control_plane.connected_state", true), 1);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_total", false), 2);
    assert_int_equal(e->ups, 2);
}

/* A control plane that accepts and closes every stream: retried with back-off, never
 * counted as up (connected_state flaps 1/0 with each stream, as Envoy's; the weft gauge and
 * the readiness notion stay down). */
static void test_accept_and_close(void **state)
{
    env *e = *state;
    e->close_at_once = true;
    start(e, false, true, NULL);
    want = 4;
    run_until(e, calls_at_least);
    assert_int_equal(e->ups, 0);
    assert_int_equal(sv(e, "control_plane.weft.connected_seconds", true), 0);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_active", true), 0);
    assert_true(sv(e, "cluster.xds-grpc.upstream_cx_connect_fail", false) >= 3);
    assert_true(sv(e, "cluster_manager.cds.update_failure", false) >= 3);
    wp_xds_status st;
    wp_xds_client_status(e->cli, &st);
    assert_false(st.connected);
    assert_int_equal(st.connected_ms, 0);
    assert_int_equal(st.since_update_ms, -1);
}

static void test_pipe(void **state)
{
    env *e = *state;
    start(e, true, true, NULL);
    wait_requests(e, 2);
    respond(e, CDS_URL, "c1", "n1", "[]");
    wait_requests(e, 3);
    assert_string_equal(sval(e->req[2], "version_info"), "c1");
    assert_int_equal(sv(e, "control_plane.connected_state", true), 1);
}

/* Back-off: uniform in [0, I_n), I doubling from the base up to the max. */
static void test_stop_while_connecting(void **state)
{
    env *e = *state;
    start(e, false, true, NULL);
    wp_xds_client_stop(e->cli);
    e->cli = NULL;
    assert_int_equal(sv(e, "control_plane.connected_state", true), 0);
}

/* ---- delta ---- */

/* Sends a DeltaDiscoveryResponse: resources is a JSON array text of Resource objects
 * ({name, version, resource}), removed a JSON array text of names (or NULL). */
static void respond_delta(env *e, const char *url, const char *sysver, const char *nonce,
                          const char *resources, const char *removed)
{
    char *text = NULL;
    assert_true(asprintf(&text,
                         "{\"system_version_info\":\"%s\",\"type_url\":\"%s\",\"nonce\":\"%s\","
                         "\"resources\":%s%s%s}",
                         sysver, url, nonce, resources, removed ? ",\"removed_resources\":" : "",
                         removed ? removed : "") > 0);
    assert_non_null(e->scall);
    assert_int_equal(wf_h2_call_send(e->scall, text, strlen(text)), 0);
    free(text);
}

#define RES(name, version, body)                                                                   \
    "{\"name\":\"" name "\",\"version\":\"" version "\",\"resource\":" body "}"
#define OTHER_CLUSTER                                                                              \
    "{\"@type\":\"" CDS_URL "\",\"name\":\"outbound|80||b\",\"type\":\"STATIC\","                  \
    "\"load_assignment\":{\"cluster_name\":\"b\",\"endpoints\":[]}}"

static json_t *jget(json_t *j, const char *k)
{
    return json_object_get(j, k);
}

static const char *str_at(json_t *j, const char *k, size_t i)
{
    return json_string_value(json_array_get(json_object_get(j, k), i));
}

/* Legacy wildcard CDS / LDS, ACKs, EDS / RDS subscriptions that follow, per-resource versions
 * in the config dump, an update per name and a removal that unsubscribes EDS. */
static void test_delta_flow(void **state)
{
    env *e = *state;
    e->delta = true;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    assert_string_equal(e->path, WF_XDS_DELTA_PATH);
    assert_string_equal(sval(e->req[0], "type_url"), CDS_URL);
    wf_test_expect_str(e->req[0], "node.id", "catalog-1.istioinaction");
    assert_null(jget(e->req[0], "resource_names_subscribe")); /* legacy wildcard */
    assert_null(jget(e->req[0], "response_nonce"));
    assert_null(jget(e->req[0], "initial_resource_versions"));
    assert_string_equal(sval(e->req[1], "type_url"), LDS_URL);
    assert_null(jget(e->req[1], "node"));

    respond_delta(e, CDS_URL, "s1", "n1", "[" RES("outbound|80||a", "v1", EDS_CLUSTER) "]", NULL);
    wait_requests(e, 4);
    assert_string_equal(sval(e->req[2], "type_url"), CDS_URL); /* the ACK */
    assert_string_equal(sval(e->req[2], "response_nonce"), "n1");
    assert_null(jget(e->req[2], "error_detail"));
    assert_null(jget(e->req[2], "resource_names_subscribe"));
    assert_string_equal(sval(e->req[3], "type_url"), EDS_URL); /* EDS follows CDS */
    assert_string_equal(str_at(e->req[3], "resource_names_subscribe", 0), "svc-a");
    assert_null(jget(e->req[3], "response_nonce"));
    assert_int_equal(sv(e, "cluster_manager.cds.update_success", false), 1);
    assert_int_equal(sv(e, "cluster.xds-grpc.upstream_cx_active", true), 1);
    wf_test_expect_str(e->dump, "clusters.version_info", "s1");
    json_t *dc = json_array_get(jget(jget(e->dump, "clusters"), "dynamic_warming_clusters"), 0);
    assert_string_equal(sval(dc, "version_info"), "v1");

    respond_delta(e, EDS_URL, "s2", "n2", "[" RES("svc-a", "e1", CLA_A) "]", NULL);
    wait_requests(e, 5);
    assert_string_equal(sval(e->req[4], "response_nonce"), "n2");
    assert_int_equal(e->applied->clusters[1].nendpoints, 1);

    respond_delta(e, LDS_URL, "s3", "n3", "[" RES("l80", "lv1", LISTENER("")) "]", NULL);
    wait_requests(e, 7);
    assert_string_equal(sval(e->req[5], "response_nonce"), "n3");
    assert_string_equal(sval(e->req[6], "type_url"), RDS_URL);
    assert_string_equal(str_at(e->req[6], "resource_names_subscribe", 0), "80");
    assert_int_equal(e->applied->nlisteners, 0); /* warming */
    respond_delta(e, RDS_URL, "s4", "n4", "[" RES("80", "r1", ROUTE_80) "]", NULL);
    wait_requests(e, 8);
    assert_int_equal(e->applied->nlisteners, 1);
    assert_int_equal(e->updates, 4);

    /* a second cluster: only it is sent, the first stays */
    respond_delta(e, CDS_URL, "s5", "n5", "[" RES("outbound|80||b", "v2", OTHER_CLUSTER) "]", NULL);
    wait_requests(e, 9);
    assert_string_equal(sval(e->req[8], "response_nonce"), "n5");
    assert_int_equal(e->applied->nclusters, 3);
    /* removing the EDS cluster unsubscribes its assignment */
    respond_delta(e, CDS_URL, "s6", "n6", "[]", "[\"outbound|80||a\"]");
    wait_requests(e, 11);
    assert_string_equal(sval(e->req[9], "response_nonce"), "n6");
    assert_string_equal(sval(e->req[10], "type_url"), EDS_URL);
    assert_string_equal(str_at(e->req[10], "resource_names_unsubscribe", 0), "svc-a");
    assert_null(jget(e->req[10], "resource_names_subscribe"));
    assert_int_equal(e->applied->nclusters, 2);
    assert_string_equal(e->applied->clusters[1].name, "outbound|80||b");
    /* a heartbeat (no body, same version) changes nothing and is ACKed */
    int applies = e->applies;
    respond_delta(e, CDS_URL, "s7", "n7", "[{\"name\":\"outbound|80||b\",\"version\":\"v2\"}]",
                  NULL);
    wait_requests(e, 12);
    assert_string_equal(sval(e->req[11], "response_nonce"), "n7");
    assert_null(jget(e->req[11], "error_detail"));
    assert_int_equal(e->applies, applies);
}

/* NACKs: a listener the loader refuses (Envoy's message naming it) and duplicate names; the
 * accepted state stays. */
static void test_delta_nack(void **state)
{
    env *e = *state;
    e->delta = true;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    respond_delta(e, LDS_URL, "s1", "n1", "[" RES("l80", "x", LISTENER("\"bogus\":1,")) "]", NULL);
    wait_requests(e, 3);
    json_t *nack = e->req[2];
    assert_string_equal(sval(nack, "response_nonce"), "n1");
    wf_test_expect_int(nack, "error_detail.code", 13);
    wf_test_expect_str(nack, "error_detail.message",
                       "Error adding/updating listener(s) l80: filter_chains[0].filters[0]."
                       "typed_config.bogus: unknown field");
    assert_int_equal(sv(e, "listener_manager.lds.update_rejected", false), 1);

    respond_delta(e, CDS_URL, "s2", "n2",
                  "[" RES("outbound|80||b", "v1", OTHER_CLUSTER) "," RES("outbound|80||b", "v1",
                                                                         OTHER_CLUSTER) "]",
                  NULL);
    wait_requests(e, 4);
    wf_test_expect_str(e->req[3], "error_detail.message",
                       "duplicate name outbound|80||b found among added/updated resources");
    respond_delta(e, CDS_URL, "s3", "n3", "[" RES("outbound|80||b", "v1", OTHER_CLUSTER) "]",
                  "[\"outbound|80||b\"]");
    wait_requests(e, 5);
    wf_test_expect_str(e->req[4], "error_detail.message",
                       "duplicate name outbound|80||b found in the union of added+removed "
                       "resources");
    assert_int_equal(e->applies, 0);
    respond_delta(e, CDS_URL, "s4", "n4", "[" RES("outbound|80||b", "v1", OTHER_CLUSTER) "]", NULL);
    wait_requests(e, 6);
    assert_null(jget(e->req[5], "error_detail"));
    assert_int_equal(sv(e, "cluster_manager.cds.update_success", false), 1);
    assert_int_equal(sv(e, "cluster_manager.cds.update_rejected", false), 2);
}

/* After the server ends the stream, the new stream's first requests re-subscribe and carry
 * initial_resource_versions of what the client holds; no nonce. */
static void test_delta_reconnect(void **state)
{
    env *e = *state;
    e->delta = true;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    respond_delta(e, CDS_URL, "s1", "n1", "[" RES("outbound|80||a", "v1", EDS_CLUSTER) "]", NULL);
    wait_requests(e, 4); /* ACK + EDS subscribe */
    respond_delta(e, EDS_URL, "s2", "n2", "[" RES("svc-a", "e1", CLA_A) "]", NULL);
    wait_requests(e, 5);
    assert_int_equal(wf_h2_call_finish(e->scall, 14, "pilot restarting"), 0);
    want = 2;
    run_until(e, calls_at_least);
    wait_requests(e, 8); /* CDS, EDS, LDS */
    json_t *cds = e->req[5], *eds = e->req[6], *lds = e->req[7];
    assert_string_equal(sval(cds, "type_url"), CDS_URL);
    assert_non_null(jget(cds, "node"));
    assert_null(jget(cds, "response_nonce"));
    assert_null(jget(cds, "resource_names_subscribe"));
    wf_test_expect_str(cds, "initial_resource_versions.outbound|80||a", "v1");
    assert_string_equal(sval(eds, "type_url"), EDS_URL);
    assert_string_equal(str_at(eds, "resource_names_subscribe", 0), "svc-a");
    assert_string_equal(json_string_value(jget(jget(eds, "initial_resource_versions"), "svc-a")),
                        "e1");
    assert_null(jget(eds, "node"));
    assert_string_equal(sval(lds, "type_url"), LDS_URL);
    assert_null(jget(lds, "initial_resource_versions"));
    assert_int_equal(e->downs, 1);
    assert_int_equal(sv(e, "cluster_manager.cds.update_failure", false), 1);
    /* the new server sends nothing new for CDS: an empty response is ACKed */
    respond_delta(e, CDS_URL, "s9", "n9", "[]", NULL);
    wait_requests(e, 9);
    assert_string_equal(sval(e->req[8], "response_nonce"), "n9");
    assert_int_equal(e->ups, 2);
}

/* ---- SDS: credentialName secrets over ADS ---- */

#define SDS_URL "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
#define DTC_URL "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
#define TLS_LISTENER(timeout)                                                                      \
    "{\"@type\":\"" LDS_URL "\",\"name\":\"l443\",\"address\":{\"socket_address\":{\"address\":"   \
    "\"127.0.0.1\",\"port_value\":18443}},\"filter_chains\":[{\"filter_chain_match\":{"            \
    "\"server_names\":[\"a.example\"]},\"transport_socket\":{\"name\":\"envoy.transport_sockets."  \
    "tls\",\"typed_config\":{\"@type\":\"" DTC_URL "\",\"common_tls_context\":{\"alpn_protocols\"" \
    ":[\"http/1.1\"],\"tls_certificate_sds_secret_configs\":[{\"name\":\"kubernetes://cred\","     \
    "\"sds_config\":{\"ads\":{},\"resource_api_version\":\"V3\"" timeout "}}]}}},\"filters\":[{"   \
    "\"name\":\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":"      \
    "\"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."           \
    "HttpConnectionManager\",\"stat_prefix\":\"s\",\"route_config\":{\"name\":\"r\"},"             \
    "\"http_filters\":[{\"name\":\"envoy.filters.http.router\"}]}}]}]}"

static char *b64_of(const char *s)
{
    size_t cap = 4 * (strlen(s) / 3 + 1) + 1;
    char *o = malloc(cap);
    assert_non_null(o);
    wf_base64_encode((const unsigned char *)s, strlen(s), o, cap);
    return o;
}

/* A Secret resource array with kubernetes://cred = chain + key. */
static char *secret_json(const char *chain, const char *key)
{
    char *c = b64_of(chain), *k = b64_of(key), *out = NULL;
    assert_true(asprintf(&out,
                         "[{\"@type\":\"" SDS_URL "\",\"name\":\"kubernetes://cred\","
                         "\"tls_certificate\":{\"certificate_chain\":{\"inline_bytes\":\"%s\"},"
                         "\"private_key\":{\"inline_bytes\":\"%s\"}}}]",
                         c, k) > 0);
    free(c);
    free(k);
    return out;
}

static const char *secret_state(env *e, const char *which)
{
    json_t *d = wp_secrets_dump(e->secrets, false);
    json_t *arr = json_object_get(d, which);
    const char *n = json_string_value(json_object_get(json_array_get(arr, 0), "name"));
    static char buf[128];
    snprintf(buf, sizeof buf, "%s", n ? n : "");
    json_decref(d);
    return buf;
}

/* LDS names a kubernetes:// secret: the listener waits (warming), SDS is subscribed with that
 * name; the Secret arrives: ACK, stored, the listener serves. A Secret whose PEM does not load
 * is NACKed and the previous one stays. */
static void test_sds_secret_flow(void **state)
{
    env *e = *state;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    respond(e, LDS_URL, "l1", "n1", "[" TLS_LISTENER("") "]");
    wait_requests(e, 4);
    assert_string_equal(sval(e->req[2], "type_url"), LDS_URL); /* the ACK */
    assert_string_equal(sval(e->req[3], "type_url"), SDS_URL);
    assert_int_equal(nnames(e->req[3]), 1);
    assert_string_equal(name0(e->req[3]), "kubernetes://cred");
    assert_int_equal(e->applied->nlisteners, 0); /* warming: no secret yet */
    assert_string_equal(secret_state(e, "dynamic_warming_secrets"), "kubernetes://cred");

    tc_cert c = tc_make("a.example", NULL, "DNS:a.example", -1, 30);
    char *res = secret_json(c.cert_pem, c.key_pem);
    respond(e, SDS_URL, "s1", "n2", res);
    free(res);
    wait_requests(e, 5);
    assert_string_equal(sval(e->req[4], "type_url"), SDS_URL);
    assert_string_equal(sval(e->req[4], "response_nonce"), "n2");
    assert_null(json_object_get(e->req[4], "error_detail"));
    assert_int_equal(e->applied->nlisteners, 1);
    assert_string_equal(secret_state(e, "dynamic_active_secrets"), "kubernetes://cred");
    assert_string_equal(secret_state(e, "dynamic_warming_secrets"), "");
    char *chain = NULL, *key = NULL, *ca = NULL;
    assert_true(wp_secrets_get_named(e->secrets, "kubernetes://cred", &chain, &key, &ca));
    assert_string_equal(chain, c.cert_pem);
    free(chain);
    free(key);
    free(ca);

    /* bad PEM: NACK, the previous secret stays */
    res = secret_json("not a certificate", c.key_pem);
    respond(e, SDS_URL, "s2", "n3", res);
    free(res);
    wait_requests(e, 6);
    assert_string_equal(sval(e->req[5], "response_nonce"), "n3");
    assert_string_equal(sval(e->req[5], "version_info"), "s1");
    wf_test_expect_str(e->req[5], "error_detail.message",
                       "Secret kubernetes://cred: Failed to load certificate chain from <inline>");
    assert_true(wp_secrets_get_named(e->secrets, "kubernetes://cred", &chain, &key, &ca));
    assert_string_equal(chain, c.cert_pem);
    free(chain);
    free(key);
    free(ca);
    /* a key that is not the certificate's */
    tc_cert other = tc_make("b.example", NULL, NULL, -1, 30);
    res = secret_json(c.cert_pem, other.key_pem);
    respond(e, SDS_URL, "s3", "n4", res);
    free(res);
    wait_requests(e, 7);
    wf_test_expect_str(e->req[6], "error_detail.message",
                       "Secret kubernetes://cred: Failed to load private key from <inline>: the "
                       "private key does not match the certificate");
    tc_free(&c);
    tc_free(&other);
}

static bool one_listener(env *e)
{
    return e->applied && e->applied->nlisteners == 1;
}

/* No Secret within initial_fetch_timeout: the listener serves anyway (its handshakes fail:
 * NotReadySslSocket) and the secret stays warming. */
static void test_sds_initial_fetch_timeout(void **state)
{
    env *e = *state;
    start(e, false, true, NULL);
    wait_requests(e, 2);
    respond(e, LDS_URL, "l1", "n1", "[" TLS_LISTENER(",\"initial_fetch_timeout\":\"0.2s\"") "]");
    wait_requests(e, 4);
    assert_string_equal(sval(e->req[3], "type_url"), SDS_URL);
    respond(e, SDS_URL, "s1", "n2", "[]"); /* pilot omits a Secret it cannot find */
    wait_requests(e, 5);
    assert_int_equal(e->applied->nlisteners, 0);
    uint64_t t0 = uv_now(&e->loop);
    run_until(e, one_listener);
    assert_true(uv_now(&e->loop) - t0 >= 100);
    assert_string_equal(secret_state(e, "dynamic_warming_secrets"), "kubernetes://cred");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initial_flow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reject_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lds_bind_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_and_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_while_connecting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_flow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_nack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sds_secret_flow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sds_initial_fetch_timeout, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
