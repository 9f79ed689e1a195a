/*
 * test_pilot_ads.c - pilot/ads: a real xds/h2_stream client against the xDS server in one
 * loop on 127.0.0.1 (port 0). The generator is a fake that derives resources from the
 * snapshot's store (one cluster per Service), so snapshots drive the pushes.
 * SotW: INITIAL -> response; ACK -> SYNCED; a push; NACK -> ERROR with the message, acked
 * version kept, reject counted; a stale nonce ignored; a bad node -> INVALID_ARGUMENT;
 * endpoint-only change -> EDS only; unchanged resources not resent; reconnect replaces the
 * retained entry. Delta: wildcard CDS with per-resource versions, only changes sent,
 * removed_resources, EDS subscribe/unsubscribe, NACK. Both methods on the one xDS port (as
 * istiod's 15010) at once, each stream with its peer address and its own sync state.
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
#include "pilot/ads.h"
#include "pilot/debug.h"
#include "pilot/pilot.h"
#include "xds/grpc_frame.h"
#include "xds/h2_stream.h"

/* ---- fakes ---------------------------------------------------------------------------------- */

static json_t *fake_generate(const wf_pilot_env *env, const wf_pilot_proxy *p, wf_xds_type t,
                             const wf_xds_names *names)
{
    json_t *arr = json_array();
    size_t n;
    const wf_resource *const *svcs = wf_store_kind(env->store, WF_KIND_SERVICE, &n);
    if (t == WF_XDS_CDS) {
        for (size_t i = 0; i < n; i++)
            json_array_append_new(
                arr, json_pack("{s:s, s:s}", "@type", WF_XDS_TYPE_CLUSTER, "name", svcs[i]->name));
    } else if (t == WF_XDS_LDS) {
        json_array_append_new(
            arr, json_pack("{s:s, s:s}", "@type", WF_XDS_TYPE_LISTENER, "name", "0.0.0.0_80"));
    } else if (t == WF_XDS_EDS) {
        size_t pods;
        wf_store_kind(env->store, WF_KIND_POD, &pods);
        for (size_t i = 0; names && i < names->n; i++)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:i}", "@type", WF_XDS_TYPE_ENDPOINT,
                                                 "cluster_name", names->v[i], "pods", (int)pods));
    }
    return arr;
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
    out->labels = json_object();
    return 0;
}

/* ---- a client ------------------------------------------------------------------------------ */

typedef struct client {
    wf_h2_conn *conn;
    wf_h2_call *call;
    json_t *msgs; /* every message received, parsed */
    int ends;
    int status;
    char message[256];
    int closed;
} client;

typedef struct env {
    uv_loop_t loop;
    wf_ads *ads;
    client c;
    wf_snapshot *snaps[8];
    int n_snaps;
} env;

static void cli_msg(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    client *c = ud;
    json_t *j = json_loadb((const char *)msg, len, 0, NULL);
    assert_non_null(j);
    json_array_append_new(c->msgs, j);
}

static void cli_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    client *c = ud;
    c->ends++;
    c->status = end->grpc_status;
    snprintf(c->message, sizeof c->message, "%s", end->grpc_message);
    c->call = NULL;
}

static void cli_closed(wf_h2_conn *conn, wf_h2_end_reason r, void *ud)
{
    ((client *)ud)->closed++;
}

static void pump(env *e, int ms)
{
    uint64_t end = uv_now(&e->loop) + (uint64_t)ms;
    while (uv_now(&e->loop) < end) {
        uv_run(&e->loop, UV_RUN_NOWAIT);
        uv_sleep(1);
        uv_update_time(&e->loop);
    }
}

/* Runs the loop until the client has n messages (or 3 s). */
static void wait_msgs(env *e, size_t n)
{
    for (int i = 0; i < 3000 && json_array_size(e->c.msgs) < n && !e->c.ends; i++)
        pump(e, 1);
    assert_int_equal(json_array_size(e->c.msgs), n);
}

static void connect_client(env *e, bool delta)
{
    wf_h2_opts o = {.path = delta ? WF_XDS_DELTA_PATH : WF_XDS_ADS_PATH};
    wf_h2_handlers h = {
        .on_message = cli_msg, .on_end = cli_end, .on_conn_closed = cli_closed, .ud = &e->c};
    json_decref(e->c.msgs);
    memset(&e->c, 0, sizeof e->c);
    e->c.msgs = json_array();
    int port = wf_ads_port(e->ads);
    assert_int_equal(wf_h2_client_connect(&e->loop, "127.0.0.1", port, &o, &h, &e->c.conn), 0);
    assert_int_equal(wf_h2_call_open(e->c.conn, &e->c.call), 0);
}

static void send_json(env *e, json_t *j)
{
    char *txt = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_int_equal(wf_h2_call_send(e->c.call, txt, strlen(txt)), 0);
    free(txt);
}

static json_t *msg_at(env *e, size_t i)
{
    return json_array_get(e->c.msgs, i);
}

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* A snapshot of yaml (services "a b c" etc). */
static wf_snapshot *snap_of(env *e, const char *yaml, wf_change_kind change)
{
    wf_snapshot *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->refs = 1;
    wf_arena_init(&s->arena);
    s->store = wf_test_load_store(NULL, yaml, "default");
    s->change = change;
    s->changed_at_ms = 1;
    e->snaps[e->n_snaps++] = s;
    return s;
}

static const char *services(const char *names)
{
    static char buf[4096];
    size_t o = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", names);
    for (char *t = strtok(copy, " "); t; t = strtok(NULL, " "))
        o += (size_t)snprintf(buf + o, sizeof buf - o,
                              "---\napiVersion: v1\nkind: Service\nmetadata: {name: %s}\n"
                              "spec:\n  ports: [{port: 80}]\n",
                              t);
    return buf;
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
    wf_ads_push(e->ads, snap_of(e, services("a b"), WF_CHANGE_FULL));
    e->c.msgs = json_array();
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    if (e->c.conn)
        wf_h2_conn_close(e->c.conn);
    wf_ads_close(e->ads);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    for (int i = 0; i < e->n_snaps; i++)
        wf_snapshot_unref(e->snaps[i]);
    json_decref(e->c.msgs);
    free(e);
    return 0;
}

static json_t *request(const char *type, const char *version, const char *nonce, json_t *names,
                       bool node)
{
    json_t *r = json_pack("{s:s}", "type_url", type);
    if (node)
        json_object_set_new(r, "node", json_pack("{s:s}", "id", "catalog-1.shop"));
    if (version)
        json_object_set_new(r, "version_info", json_string(version));
    if (nonce)
        json_object_set_new(r, "response_nonce", json_string(nonce));
    if (names)
        json_object_set_new(r, "resource_names", names);
    return r;
}

static const wf_ads_type *type_state(env *e, wf_xds_type t)
{
    assert_true(wf_ads_conn_count(e->ads) >= 1);
    return &wf_ads_conn_at(e->ads, wf_ads_conn_count(e->ads) - 1)->types[t];
}

/* ---- SotW ------------------------------------------------------------------------------------ */

static void test_sotw_initial_ack_nack(void **state)
{
    env *e = *state;
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    json_t *r1 = msg_at(e, 0);
    assert_string_equal(jstr(r1, "type_url"), WF_XDS_TYPE_CLUSTER);
    assert_int_equal(json_array_size(json_object_get(r1, "resources")), 2);
    assert_string_equal(jstr(r1, "version_info"), wf_ads_version(e->ads));
    const wf_ads_conn *c = wf_ads_conn_at(e->ads, 0);
    assert_string_equal(c->id, "catalog-1.shop-1");
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_CDS)->w), WF_XDS_SYNC_STALE);

    send_json(
        e, request(WF_XDS_TYPE_CLUSTER, jstr(r1, "version_info"), jstr(r1, "nonce"), NULL, false));
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 1); /* no response to an ACK */
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_CDS)->w), WF_XDS_SYNC_SYNCED);

    /* a push with one more service */
    wf_ads_push(e->ads, snap_of(e, services("a b c"), WF_CHANGE_FULL));
    wait_msgs(e, 2);
    json_t *r2 = msg_at(e, 1);
    assert_int_equal(json_array_size(json_object_get(r2, "resources")), 3);
    assert_string_not_equal(jstr(r2, "nonce"), jstr(r1, "nonce"));
    assert_string_not_equal(jstr(r2, "version_info"), jstr(r1, "version_info"));

    /* NACK it */
    json_t *nack =
        request(WF_XDS_TYPE_CLUSTER, jstr(r1, "version_info"), jstr(r2, "nonce"), NULL, false);
    json_object_set_new(nack, "error_detail",
                        json_pack("{s:i, s:s}", "code", 13, "message", "cluster c: bad lb_policy"));
    send_json(e, nack);
    pump(e, 50);
    const wf_ads_type *ty = type_state(e, WF_XDS_CDS);
    assert_int_equal(wf_xds_watch_sync(&ty->w), WF_XDS_SYNC_ERROR);
    assert_string_equal(ty->w.error_message, "cluster c: bad lb_policy");
    assert_string_equal(ty->w.version_acked, jstr(r1, "version_info"));
    assert_int_equal(wf_ads_get_metrics(e->ads)->rejects[WF_XDS_CDS], 1);
    assert_int_equal(wf_ads_get_metrics(e->ads)->pushes[WF_XDS_CDS], 2);

    /* a stale nonce changes nothing and gets no answer */
    send_json(e,
              request(WF_XDS_TYPE_CLUSTER, jstr(r1, "version_info"), "bogus-nonce", NULL, false));
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 2);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_CDS)->w), WF_XDS_SYNC_ERROR);

    /* an unchanged push is not resent; the next real change is */
    wf_ads_push(e->ads, snap_of(e, services("a b c"), WF_CHANGE_FULL));
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 2);
    wf_ads_push(e->ads, snap_of(e, services("a"), WF_CHANGE_FULL));
    wait_msgs(e, 3);
    assert_int_equal(json_array_size(json_object_get(msg_at(e, 2), "resources")), 1);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, jstr(msg_at(e, 2), "version_info"),
                         jstr(msg_at(e, 2), "nonce"), NULL, false));
    pump(e, 50);
    ty = type_state(e, WF_XDS_CDS);
    assert_int_equal(wf_xds_watch_sync(&ty->w), WF_XDS_SYNC_SYNCED);
    assert_null(ty->w.error_message);
}

static void test_sotw_eds_only_push(void **state)
{
    env *e = *state;
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, NULL, NULL, json_pack("[s]", "a"), false));
    wait_msgs(e, 2);
    assert_string_equal(jstr(msg_at(e, 1), "type_url"), WF_XDS_TYPE_ENDPOINT);
    /* RESOURCE_CHANGE: an ACK with other names gets a response */
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, jstr(msg_at(e, 1), "version_info"),
                         jstr(msg_at(e, 1), "nonce"), json_pack("[s, s]", "a", "b"), false));
    wait_msgs(e, 3);
    assert_int_equal(json_array_size(json_object_get(msg_at(e, 2), "resources")), 2);
    /* its ACK (the same names: the fast path) and one with the names reordered (decoded):
     * SYNCED, no response */
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, jstr(msg_at(e, 2), "version_info"),
                         jstr(msg_at(e, 2), "nonce"), json_pack("[s, s]", "a", "b"), false));
    pump(e, 50);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_EDS)->w), WF_XDS_SYNC_SYNCED);
    assert_true(type_state(e, WF_XDS_EDS)->w.has_names_key);
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, jstr(msg_at(e, 2), "version_info"),
                         jstr(msg_at(e, 2), "nonce"), json_pack("[s, s]", "b", "a"), false));
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 3);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_EDS)->w), WF_XDS_SYNC_SYNCED);
    assert_string_equal(type_state(e, WF_XDS_EDS)->w.names.v[0], "b");

    const char *pod = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n"
                      "status: {podIP: 127.10.0.9}\n";
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s%s", services("a b"), pod);
    wf_snapshot *s = snap_of(e, yaml, WF_CHANGE_ENDPOINTS);
    wf_ads_push(e->ads, s);
    wait_msgs(e, 4);
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 4); /* EDS only */
    assert_string_equal(jstr(msg_at(e, 3), "type_url"), WF_XDS_TYPE_ENDPOINT);
    assert_int_equal(wf_ads_get_metrics(e->ads)->eds_pushes, 1);
}

/* A snapshot whose only changes are VirtualServices pushes RDS only to a sidecar: CDS is not
 * even generated (the fake generator's CDS would differ here); any other change pushes all. */
static void test_sotw_vs_only_push(void **state)
{
    env *e = *state;
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, jstr(msg_at(e, 0), "version_info"),
                         jstr(msg_at(e, 0), "nonce"), NULL, false));
    pump(e, 50);
    const char *vs_key = "VirtualService/default/reviews";
    wf_snapshot *s = snap_of(e, services("a b c"), WF_CHANGE_FULL);
    s->changed = &vs_key;
    s->n_changed = 1;
    wf_ads_push(e->ads, s);
    pump(e, 100);
    assert_int_equal(json_array_size(e->c.msgs), 1);
    const char *keys[] = {"VirtualService/default/reviews", "Service/default/c"};
    s = snap_of(e, services("a b c"), WF_CHANGE_FULL);
    s->changed = keys;
    s->n_changed = 2;
    wf_ads_push(e->ads, s);
    wait_msgs(e, 2);
    assert_string_equal(jstr(msg_at(e, 1), "type_url"), WF_XDS_TYPE_CLUSTER);
    assert_int_equal(json_array_size(json_object_get(msg_at(e, 1), "resources")), 3);
    for (int i = e->n_snaps - 2; i < e->n_snaps; i++) { /* not the arena's: do not free them */
        e->snaps[i]->changed = NULL;
        e->snaps[i]->n_changed = 0;
    }
}

static void test_bad_node_invalid_argument(void **state)
{
    env *e = *state;
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, false));
    for (int i = 0; i < 2000 && !e->c.ends; i++)
        pump(e, 1);
    assert_int_equal(e->c.ends, 1);
    assert_int_equal(e->c.status, WF_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(e->c.message, "node"));
    assert_int_equal(wf_ads_conn_count(e->ads), 0);
    /* the refusal is kept for /debug/adsz, with the peer and what the proxy was told */
    assert_int_equal(wf_ads_rejected_count(e->ads), 1);
    const wf_ads_rejected *x = wf_ads_rejected_at(e->ads, 0);
    assert_string_equal(x->reason, e->c.message);
    assert_non_null(strstr(x->address, "127.0.0.1:"));
}

static void test_reconnect_replaces_retained(void **state)
{
    env *e = *state;
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    wf_h2_conn_close(e->c.conn);
    for (int i = 0; i < 2000 && wf_ads_connected(e->ads) != 0; i++)
        pump(e, 1);
    assert_int_equal(wf_ads_conn_count(e->ads), 1);
    assert_false(wf_ads_conn_at(e->ads, 0)->connected);
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, "old-version", "old-nonce", NULL, true));
    wait_msgs(e, 1); /* first request on the new stream: INITIAL, answered */
    assert_int_equal(wf_ads_conn_count(e->ads), 1);
    const wf_ads_conn *c = wf_ads_conn_at(e->ads, 0);
    assert_true(c->connected);
    assert_string_equal(c->id, "catalog-1.shop-2");
}

/* ---- delta ------------------------------------------------------------------------------------
 */

static json_t *delta_req(const char *type, const char *nonce, json_t *sub, json_t *unsub, bool node)
{
    json_t *r = json_pack("{s:s}", "type_url", type);
    if (node)
        json_object_set_new(r, "node", json_pack("{s:s}", "id", "catalog-1.shop"));
    if (nonce)
        json_object_set_new(r, "response_nonce", json_string(nonce));
    if (sub)
        json_object_set_new(r, "resource_names_subscribe", sub);
    if (unsub)
        json_object_set_new(r, "resource_names_unsubscribe", unsub);
    return r;
}

static size_t n_res(json_t *m)
{
    return json_array_size(json_object_get(m, "resources"));
}

static void test_delta_wildcard_cds(void **state)
{
    env *e = *state;
    connect_client(e, true);
    send_json(e, delta_req(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    json_t *m = msg_at(e, 0);
    assert_int_equal(n_res(m), 2);
    json_t *first = json_array_get(json_object_get(m, "resources"), 0);
    assert_string_equal(jstr(first, "name"), "a");
    assert_int_equal(strlen(jstr(first, "version")), 16);
    assert_non_null(json_object_get(first, "resource"));
    assert_true(wf_ads_conn_at(e->ads, 0)->delta);
    send_json(e, delta_req(WF_XDS_TYPE_CLUSTER, jstr(m, "nonce"), NULL, NULL, false));
    pump(e, 30);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_CDS)->w), WF_XDS_SYNC_SYNCED);

    /* a new service: only it is sent */
    wf_ads_push(e->ads, snap_of(e, services("a b c"), WF_CHANGE_FULL));
    wait_msgs(e, 2);
    m = msg_at(e, 1);
    assert_int_equal(n_res(m), 1);
    assert_string_equal(jstr(json_array_get(json_object_get(m, "resources"), 0), "name"), "c");
    assert_null(json_object_get(m, "removed_resources"));
    send_json(e, delta_req(WF_XDS_TYPE_CLUSTER, jstr(m, "nonce"), NULL, NULL, false));

    /* two removed */
    wf_ads_push(e->ads, snap_of(e, services("b"), WF_CHANGE_FULL));
    wait_msgs(e, 3);
    m = msg_at(e, 2);
    assert_int_equal(n_res(m), 0);
    json_t *removed = json_object_get(m, "removed_resources");
    assert_int_equal(json_array_size(removed), 2);
    assert_string_equal(json_string_value(json_array_get(removed, 0)), "a");
    assert_string_equal(json_string_value(json_array_get(removed, 1)), "c");

    /* NACK */
    json_t *nack = delta_req(WF_XDS_TYPE_CLUSTER, jstr(m, "nonce"), NULL, NULL, false);
    json_object_set_new(nack, "error_detail", json_pack("{s:i, s:s}", "code", 13, "message", "no"));
    send_json(e, nack);
    pump(e, 30);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_CDS)->w), WF_XDS_SYNC_ERROR);
    assert_string_equal(type_state(e, WF_XDS_CDS)->w.error_message, "no");
}

static void test_delta_eds_subscriptions(void **state)
{
    env *e = *state;
    connect_client(e, true);
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, NULL, json_pack("[s, s]", "x", "y"), NULL, true));
    wait_msgs(e, 1);
    json_t *m = msg_at(e, 0);
    assert_int_equal(n_res(m), 2);
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, jstr(m, "nonce"), NULL, NULL, false));
    pump(e, 30);
    /* subscribe z: only z is sent */
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, NULL, json_pack("[s]", "z"), NULL, false));
    wait_msgs(e, 2);
    m = msg_at(e, 1);
    assert_int_equal(n_res(m), 1);
    assert_string_equal(jstr(json_array_get(json_object_get(m, "resources"), 0), "name"), "z");
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, jstr(m, "nonce"), NULL, NULL, false));
    /* unsubscribe x: no response; then an endpoint change sends y and z only */
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, NULL, NULL, json_pack("[s]", "x"), false));
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 2);
    const wf_ads_type *ty = type_state(e, WF_XDS_EDS);
    assert_int_equal(ty->w.names.n, 2);
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1}\n",
             services("a b"));
    wf_ads_push(e->ads, snap_of(e, yaml, WF_CHANGE_ENDPOINTS));
    wait_msgs(e, 3);
    m = msg_at(e, 2);
    assert_int_equal(n_res(m), 2);
    assert_null(json_object_get(m, "removed_resources"));
}

/* ---- incremental EDS (istiod's edsUpdatedServices, pilot/eds_update.h) ---- */

#define HA "a.default.svc.cluster.local"
#define HB "b.default.svc.cluster.local"
#define CA "outbound|80||" HA
#define CB "outbound|80||" HB

/* An ENDPOINTS snapshot with npods pods whose updated services are hosts (NULL-terminated). */
static wf_snapshot *eds_snap(env *e, int npods, const char *h1, const char *h2)
{
    char yaml[4096];
    size_t o = (size_t)snprintf(yaml, sizeof yaml, "%s", services("a b"));
    for (int i = 0; i < npods; i++)
        o += (size_t)snprintf(yaml + o, sizeof yaml - o,
                              "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\n", i);
    wf_snapshot *s = snap_of(e, yaml, WF_CHANGE_ENDPOINTS);
    s->eds_services = json_object();
    if (h1)
        json_object_set_new(s->eds_services, h1, json_true());
    if (h2)
        json_object_set_new(s->eds_services, h2, json_true());
    return s;
}

static const char *res_cluster(json_t *m, size_t i)
{
    json_t *r = json_array_get(json_object_get(m, "resources"), i);
    json_t *inner = json_object_get(r, "resource"); /* delta wraps it */
    return jstr(inner ? inner : r, "cluster_name");
}

/* SotW: only a proxy watching an updated service's cluster is pushed, with those clusters only;
 * no CDS; merged pushes merge their services; the next full push sends the whole watch. */
static void test_sotw_incremental_eds(void **state)
{
    env *e = *state;
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, jstr(msg_at(e, 0), "version_info"),
                         jstr(msg_at(e, 0), "nonce"), NULL, false));
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, NULL, NULL, json_pack("[s, s]", CA, CB), false));
    wait_msgs(e, 2);
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, jstr(msg_at(e, 1), "version_info"),
                         jstr(msg_at(e, 1), "nonce"), json_pack("[s, s]", CA, CB), false));
    pump(e, 30);
    const wf_ads_metrics *m = wf_ads_get_metrics(e->ads);
    uint64_t cds = m->pushes[WF_XDS_CDS], eds = m->pushes[WF_XDS_EDS];

    /* a service the proxy does not watch: nothing queued, nothing sent */
    wf_ads_push(e->ads, eds_snap(e, 1, "c.default.svc.cluster.local", NULL));
    assert_int_equal(m->last_push_proxies, 0);
    pump(e, 50);
    assert_int_equal(json_array_size(e->c.msgs), 2);

    /* service a: EDS with a's cluster only */
    wf_ads_push(e->ads, eds_snap(e, 2, HA, NULL));
    assert_int_equal(m->last_push_proxies, 1);
    wait_msgs(e, 3);
    pump(e, 30);
    assert_int_equal(json_array_size(e->c.msgs), 3);
    json_t *r = msg_at(e, 2);
    assert_string_equal(jstr(r, "type_url"), WF_XDS_TYPE_ENDPOINT);
    assert_int_equal(json_array_size(json_object_get(r, "resources")), 1);
    assert_string_equal(res_cluster(r, 0), CA);
    assert_int_equal(m->pushes[WF_XDS_CDS], cds);
    assert_int_equal(m->pushes[WF_XDS_EDS], eds + 1);
    /* the ACK keeps the watch's names (both clusters) and syncs it */
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, jstr(r, "version_info"), jstr(r, "nonce"),
                         json_pack("[s, s]", CA, CB), false));
    pump(e, 30);
    assert_int_equal(json_array_size(e->c.msgs), 3);
    assert_int_equal(type_state(e, WF_XDS_EDS)->w.names.n, 2);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_EDS)->w), WF_XDS_SYNC_SYNCED);

    /* two pushes while the proxy waits: one response with both services */
    wf_ads_push(e->ads, eds_snap(e, 3, HA, NULL));
    wf_ads_push(e->ads, eds_snap(e, 4, HB, NULL));
    wait_msgs(e, 4);
    pump(e, 30);
    assert_int_equal(json_array_size(e->c.msgs), 4);
    assert_int_equal(json_array_size(json_object_get(msg_at(e, 3), "resources")), 2);
    send_json(e, request(WF_XDS_TYPE_ENDPOINT, jstr(msg_at(e, 3), "version_info"),
                         jstr(msg_at(e, 3), "nonce"), json_pack("[s, s]", CA, CB), false));
    pump(e, 30);

    /* an incremental push then a full one before the proxy is served: the whole watch */
    wf_ads_push(e->ads, eds_snap(e, 5, HA, NULL));
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s", services("a b"));
    wf_ads_push(e->ads, snap_of(e, yaml, WF_CHANGE_FULL));
    wait_msgs(e, 5);
    pump(e, 30);
    assert_int_equal(json_array_size(e->c.msgs), 5); /* CDS unchanged: not resent */
    assert_string_equal(jstr(msg_at(e, 4), "type_url"), WF_XDS_TYPE_ENDPOINT);
    assert_int_equal(json_array_size(json_object_get(msg_at(e, 4), "resources")), 2);
}

/* Delta: the changed ClusterLoadAssignments of the updated services only, nothing removed. */
static void test_delta_incremental_eds(void **state)
{
    env *e = *state;
    connect_client(e, true);
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, NULL, json_pack("[s, s]", CA, CB), NULL, true));
    wait_msgs(e, 1);
    assert_int_equal(n_res(msg_at(e, 0)), 2);
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, jstr(msg_at(e, 0), "nonce"), NULL, NULL, false));
    pump(e, 30);
    wf_ads_push(e->ads, eds_snap(e, 1, HB, "c.default.svc.cluster.local"));
    wait_msgs(e, 2);
    pump(e, 30);
    json_t *m = msg_at(e, 1);
    assert_int_equal(n_res(m), 1);
    assert_string_equal(res_cluster(m, 0), CB);
    assert_null(json_object_get(m, "removed_resources"));
    /* b unchanged (same pods): nothing to send */
    send_json(e, delta_req(WF_XDS_TYPE_ENDPOINT, jstr(m, "nonce"), NULL, NULL, false));
    pump(e, 30);
    wf_ads_push(e->ads, eds_snap(e, 1, HB, NULL));
    pump(e, 60);
    assert_int_equal(json_array_size(e->c.msgs), 2);
}

/* SotW and delta streams side by side on the one xDS port: each is classified by its :path,
 * listed with its peer address, and tracked (SYNCED) on its own. */
static void test_both_methods_one_port(void **state)
{
    env *e = *state;
    client d = {.msgs = json_array()};
    wf_h2_opts o = {.path = WF_XDS_DELTA_PATH};
    wf_h2_handlers h = {
        .on_message = cli_msg, .on_end = cli_end, .on_conn_closed = cli_closed, .ud = &d};
    connect_client(e, false);
    send_json(e, request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, true));
    wait_msgs(e, 1);
    assert_int_equal(
        wf_h2_client_connect(&e->loop, "127.0.0.1", wf_ads_port(e->ads), &o, &h, &d.conn), 0);
    assert_int_equal(wf_h2_call_open(d.conn, &d.call), 0);
    json_t *dreq = delta_req(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, false);
    json_object_set_new(dreq, "node", json_pack("{s:s}", "id", "catalog-2.shop"));
    char *txt = json_dumps(dreq, JSON_COMPACT);
    json_decref(dreq);
    assert_int_equal(wf_h2_call_send(d.call, txt, strlen(txt)), 0);
    free(txt);
    for (int i = 0; i < 3000 && json_array_size(d.msgs) < 1; i++)
        pump(e, 1);
    assert_int_equal(json_array_size(d.msgs), 1);
    json_t *dm = json_array_get(d.msgs, 0);
    assert_int_equal(n_res(dm), 2);
    assert_non_null(json_object_get(dm, "nonce"));
    assert_null(json_object_get(dm, "version_info")); /* a delta response, not SotW */

    /* both ACK */
    json_t *r1 = msg_at(e, 0);
    send_json(
        e, request(WF_XDS_TYPE_CLUSTER, jstr(r1, "version_info"), jstr(r1, "nonce"), NULL, false));
    dreq = delta_req(WF_XDS_TYPE_CLUSTER, jstr(dm, "nonce"), NULL, NULL, false);
    txt = json_dumps(dreq, JSON_COMPACT);
    json_decref(dreq);
    assert_int_equal(wf_h2_call_send(d.call, txt, strlen(txt)), 0);
    free(txt);
    pump(e, 50);
    assert_int_equal(wf_ads_conn_count(e->ads), 2);
    assert_int_equal(wf_ads_connected(e->ads), 2);
    const wf_ads_conn *s0 = wf_ads_conn_at(e->ads, 0), *d0 = wf_ads_conn_at(e->ads, 1);
    assert_false(s0->delta);
    assert_true(d0->delta);
    assert_string_equal(d0->proxy.id, "catalog-2.shop");
    assert_int_equal(strncmp(s0->address, "127.0.0.1:", 10), 0);
    assert_int_equal(strncmp(d0->address, "127.0.0.1:", 10), 0);
    assert_string_not_equal(s0->address, d0->address);
    assert_int_equal(wf_xds_watch_sync(&s0->types[WF_XDS_CDS].w), WF_XDS_SYNC_SYNCED);
    assert_int_equal(wf_xds_watch_sync(&d0->types[WF_XDS_CDS].w), WF_XDS_SYNC_SYNCED);

    /* a push reaches both, each in its protocol */
    wf_ads_push(e->ads, snap_of(e, services("a b c"), WF_CHANGE_FULL));
    wait_msgs(e, 2);
    for (int i = 0; i < 3000 && json_array_size(d.msgs) < 2; i++)
        pump(e, 1);
    assert_int_equal(json_array_size(json_object_get(msg_at(e, 1), "resources")), 3);
    assert_int_equal(n_res(json_array_get(d.msgs, 1)), 1);
    assert_int_equal(wf_xds_watch_sync(&d0->types[WF_XDS_CDS].w), WF_XDS_SYNC_STALE);
    wf_h2_conn_close(d.conn);
    for (int i = 0; i < 3000 && !d.closed; i++)
        pump(e, 1);
    json_decref(d.msgs);
}

/* ---- wired: wf_pilot with the real generator, sync state through the debug views ---------- */

static char *route(wf_pilot *p, const char *path, const char *query, int *status)
{
    wf_debug_reply r = {.body = WF_STRBUF_INIT};
    wf_debug_route(p, path, query, &r);
    *status = r.status;
    return wf_strbuf_take(&r.body);
}

static void test_pilot_syncz_shows_nack(void **state)
{
    env *e = *state;
    char dir[] = "/tmp/wf-pilot-XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/svc.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(services("catalog"), f);
    fclose(f);
    const char *dirs[] = {dir};
    wf_pilot_opts o = {.config_dirs = dirs,
                       .n_dirs = 1,
                       .grpc_addr = "127.0.0.1:0",
                       .monitoring_addr = "127.0.0.1:0",
                       .keepalive_interval_ms = 30000,
                       .debug_route = wf_debug_route};
    wf_pilot *p;
    assert_int_equal(wf_pilot_start(&e->loop, &o, &p, err, sizeof err), 0);
    int status;
    char *body = route(p, "/ready", "", &status);
    assert_int_equal(status, 200);
    free(body);
    wf_ads *saved = e->ads;
    e->ads = wf_pilot_ads(p);
    connect_client(e, false);
    json_t *req = request(WF_XDS_TYPE_CLUSTER, NULL, NULL, NULL, false);
    json_object_set_new(req, "node",
                        json_pack("{s:s, s:{s:s, s:s}}", "id", "catalog-1.default", "metadata",
                                  "ISTIO_VERSION", "1.24.0", "WEFT_ADMIN", "127.10.0.1:15000"));
    send_json(e, req);
    wait_msgs(e, 1);
    json_t *m = msg_at(e, 0);
    assert_true(n_res(m) >= 1); /* the real CDS: at least the catalog cluster */
    json_t *nack = request(WF_XDS_TYPE_CLUSTER, NULL, jstr(m, "nonce"), NULL, false);
    json_object_set_new(nack, "error_detail",
                        json_pack("{s:i, s:s}", "code", 13, "message", "rejected by test"));
    send_json(e, nack);
    pump(e, 50);
    body = route(p, "/debug/syncz", "", &status);
    assert_int_equal(status, 200);
    json_t *sz = json_loads(body, 0, NULL);
    free(body);
    assert_int_equal(json_array_size(sz), 1);
    json_t *x = json_array_get(sz, 0);
    assert_string_equal(jstr(x, "proxy"), "catalog-1.default");
    assert_string_equal(jstr(x, "proxy_type"), "sidecar");
    assert_string_equal(jstr(x, "istio_version"), "1.24.0");
    assert_string_equal(jstr(x, "admin"), "127.10.0.1:15000");
    assert_string_equal(jstr(x, "cluster_status"), "ERROR");
    assert_string_equal(jstr(x, "cluster_error"), "rejected by test");
    assert_string_equal(jstr(x, "cluster_sent"), jstr(m, "nonce"));
    assert_string_equal(jstr(x, "listener_status"), "IGNORED");
    assert_true(json_is_true(json_object_get(x, "connected")));
    json_t *rs = json_object_get(json_object_get(x, "resources"), WF_XDS_TYPE_CLUSTER);
    assert_string_equal(jstr(rs, "lastError"), "rejected by test");
    assert_string_equal(jstr(x, "extensionconfig_status"), "IGNORED"); /* not watched */
    assert_string_equal(jstr(x, "secret_status"), "IGNORED");
    json_decref(sz);
    /* a watched ECDS is reported (issue 15 item 7: never IGNORED once watched): sent and not
     * yet acknowledged is STALE, with the version sent; the ACK makes it SYNCED */
    send_json(e, request(WF_XDS_TYPE_EXTENSION, NULL, NULL, NULL, false));
    wait_msgs(e, 2);
    json_t *ecds = msg_at(e, 1);
    assert_string_equal(jstr(ecds, "type_url"), WF_XDS_TYPE_EXTENSION);
    body = route(p, "/debug/syncz", "", &status);
    sz = json_loads(body, 0, NULL);
    free(body);
    x = json_array_get(sz, 0);
    assert_string_equal(jstr(x, "extensionconfig_status"), "STALE");
    assert_string_equal(jstr(x, "extensionconfig_sent"), jstr(ecds, "nonce"));
    rs = json_object_get(json_object_get(x, "resources"), WF_XDS_TYPE_EXTENSION);
    assert_string_equal(jstr(rs, "versionSent"), jstr(ecds, "version_info"));
    json_decref(sz);
    send_json(e, request(WF_XDS_TYPE_EXTENSION, jstr(ecds, "version_info"), jstr(ecds, "nonce"),
                         NULL, false));
    pump(e, 50);
    body = route(p, "/debug/syncz", "", &status);
    sz = json_loads(body, 0, NULL);
    free(body);
    x = json_array_get(sz, 0);
    assert_string_equal(jstr(x, "extensionconfig_status"), "SYNCED");
    rs = json_object_get(json_object_get(x, "resources"), WF_XDS_TYPE_EXTENSION);
    assert_string_equal(jstr(rs, "versionAcked"), jstr(ecds, "version_info"));
    json_decref(sz);
    body = route(p, "/metrics", "", &status);
    assert_non_null(strstr(body, "pilot_total_xds_rejects{type=\"cds\"} 1\n"));
    assert_non_null(strstr(body, "pilot_xds{version=\"1.24.0\"} 1\n"));
    assert_non_null(strstr(body, "pilot_xds_pushes{type=\"cds\"} 1\n"));
    free(body);
    body = route(p, "/debug/config_dump", "proxyID=catalog-1", &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "dynamic_active_clusters"));
    free(body);
    body = route(p, "/debug/adsz", "", &status);
    assert_non_null(strstr(body, "\"totalClients\": 1"));
    free(body);
    wf_h2_conn_close(e->c.conn);
    e->c.conn = NULL;
    wf_pilot_stop(p);
    e->ads = saved;
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
}

/* ---- SDS with the real generator (pilot/sds.h) ---------------------------------------------- */

static int setup_real(void **state)
{
    env *e = calloc(1, sizeof *e);
    assert_non_null(e);
    assert_int_equal(uv_loop_init(&e->loop), 0);
    char err[256];
    wf_ads_opts o = {.port = 0, .retention_ms = 60000};
    assert_int_equal(wf_ads_start(&e->loop, &o, &e->ads, err, sizeof err), 0);
    e->c.msgs = json_array();
    *state = e;
    return 0;
}

static const char *secret_yaml(const char *crt)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "apiVersion: v1\nkind: Secret\nmetadata: {name: cred, namespace: istio-system}\n"
             "stringData: {tls.crt: %s, tls.key: k}\n"
             "---\napiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: istio-system}\n"
             "spec:\n  ports: [{port: 80}]\n",
             crt);
    return buf;
}

static json_t *sds_req(const char *version, const char *nonce, bool node)
{
    json_t *r = json_pack("{s:s,s:[s,s]}", "type_url", WF_XDS_TYPE_SECRET, "resource_names",
                          "kubernetes://cred", "kubernetes://missing");
    if (node)
        json_object_set_new(r, "node",
                            json_pack("{s:s,s:{s:s}}", "id", "gw-1.istio-system", "metadata",
                                      "PROXY_TYPE", "router"));
    if (version)
        json_object_set_new(r, "version_info", json_string(version));
    if (nonce)
        json_object_set_new(r, "response_nonce", json_string(nonce));
    return r;
}

static const char *sds_chain(json_t *m)
{
    json_t *r = json_array_get(json_object_get(m, "resources"), 0);
    return json_string_value(wf_test_json_at(r, "tls_certificate.certificate_chain.inline_bytes"));
}

/* Only the subscribed names that resolve are sent, the failure is counted; a change of the
 * Secret pushes SDS again, a change of anything else does not even generate it. */
static void test_sds_subscribed_and_pushed_on_secret_change(void **state)
{
    env *e = *state;
    const char *k1 = "Secret/istio-system/cred", *k2 = "Service/istio-system/a";
    wf_snapshot *s = snap_of(e, secret_yaml("one"), WF_CHANGE_FULL);
    wf_ads_push(e->ads, s);
    connect_client(e, false);
    send_json(e, sds_req(NULL, NULL, true));
    wait_msgs(e, 1);
    json_t *m = msg_at(e, 0);
    assert_string_equal(jstr(m, "type_url"), WF_XDS_TYPE_SECRET);
    assert_int_equal(json_array_size(json_object_get(m, "resources")), 1);
    assert_string_equal(jstr(json_array_get(json_object_get(m, "resources"), 0), "name"),
                        "kubernetes://cred");
    assert_string_equal(sds_chain(m), "b25l"); /* "one" */
    /* missing + "one" is not PEM */
    assert_int_equal(wf_ads_get_metrics(e->ads)->sds_cert_errors, 2);
    send_json(e, sds_req(jstr(m, "version_info"), jstr(m, "nonce"), false));
    pump(e, 30);
    assert_int_equal(wf_xds_watch_sync(&type_state(e, WF_XDS_SDS)->w), WF_XDS_SYNC_SYNCED);

    s = snap_of(e, secret_yaml("two"), WF_CHANGE_FULL);
    s->changed = &k1;
    s->n_changed = 1;
    wf_ads_push(e->ads, s);
    wait_msgs(e, 2);
    assert_string_equal(sds_chain(msg_at(e, 1)), "dHdv"); /* "two" */
    assert_int_equal(wf_ads_get_metrics(e->ads)->sds_cert_errors, 4);

    s = snap_of(e, secret_yaml("three"), WF_CHANGE_FULL); /* a Service change only */
    s->changed = &k2;
    s->n_changed = 1;
    wf_ads_push(e->ads, s);
    pump(e, 100);
    assert_int_equal(json_array_size(e->c.msgs), 2);
    assert_int_equal(wf_ads_get_metrics(e->ads)->sds_cert_errors, 4);
    for (int i = e->n_snaps - 2; i < e->n_snaps; i++) {
        e->snaps[i]->changed = NULL;
        e->snaps[i]->n_changed = 0;
    }
}

/* Delta: the subscribed secret only. */
static void test_sds_delta(void **state)
{
    env *e = *state;
    wf_ads_push(e->ads, snap_of(e, secret_yaml("one"), WF_CHANGE_FULL));
    connect_client(e, true);
    json_t *r = json_pack("{s:s,s:[s],s:{s:s,s:{s:s}}}", "type_url", WF_XDS_TYPE_SECRET,
                          "resource_names_subscribe", "kubernetes://cred", "node", "id",
                          "gw-1.istio-system", "metadata", "PROXY_TYPE", "router");
    send_json(e, r);
    wait_msgs(e, 1);
    json_t *m = msg_at(e, 0);
    assert_int_equal(n_res(m), 1);
    json_t *res = json_array_get(json_object_get(m, "resources"), 0);
    assert_string_equal(jstr(res, "name"), "kubernetes://cred");
    assert_string_equal(json_string_value(wf_test_json_at(
                            res, "resource.tls_certificate.certificate_chain.inline_bytes")),
                        "b25l");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sotw_initial_ack_nack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sotw_eds_only_push, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sotw_vs_only_push, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_node_invalid_argument, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_replaces_retained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_wildcard_cds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_eds_subscriptions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sotw_incremental_eds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_incremental_eds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_both_methods_one_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pilot_syncz_shows_nack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sds_subscribed_and_pushed_on_secret_change, setup_real,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sds_delta, setup_real, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
