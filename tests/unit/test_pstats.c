/*
 * test_pstats.c - the listener/cluster manager configuration stats (pstats.h
 * wp_pstats_config_applied) and the xDS version hash (xds_client_stats.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/bootstrap/bootstrap.h"
#include "proxy/pstats/pstats.h"
#include "proxy/xds/xds_client_state.h"

#define ADDR "{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":%d}}"

/* A bootstrap with clusters a (connect_timeout ta) and, when withb, b; listener l. */
static wp_config *load(const char *ta, int withb, int port)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"clusters\":["
             "{\"name\":\"a\",\"connect_timeout\":\"%s\",\"type\":\"STATIC\"}%s],"
             "\"listeners\":[{\"name\":\"l\",\"address\":" ADDR ",\"filter_chains\":[{"
             "\"filters\":[{\"name\":\"envoy.filters.network.http_connection_manager\","
             "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters."
             "network.http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"x\","
             "\"route_config\":{\"name\":\"r\"},\"http_filters\":[{\"name\":"
             "\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
             "envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}]}}",
             ta, withb ? ",{\"name\":\"b\",\"type\":\"STATIC\"}" : "", port);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wp_bootstrap_load(j, "test", &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    json_decref(j);
    for (size_t i = 0; i < c->nlisteners; i++)
        c->listeners[i].bound = true;
    return c;
}

static int64_t val(wp_stats *st, const char *name, int gauge)
{
    return wp_stats_value(st, gauge ? wp_stats_gauge(st, name) : wp_stats_counter(st, name));
}

static void test_config_applied(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_config *c1 = load("1s", 1, 18001);
    wp_pstats *p = wp_pstats_register(st, c1);
    assert_non_null(p);
    wp_pstats_config_applied(sh, p, NULL, c1, 2);
    assert_int_equal(val(st, "cluster_manager.cluster_added", 0), 2);
    assert_int_equal(val(st, "listener_manager.listener_added", 0), 1);
    assert_int_equal(val(st, "listener_manager.listener_create_success", 0), 2);
    /* a modified, b removed, listener unchanged */
    wp_config *c2 = load("2s", 0, 18001);
    wp_pstats_config_applied(sh, p, c1, c2, 2);
    assert_int_equal(val(st, "cluster_manager.cluster_added", 0), 2);
    assert_int_equal(val(st, "cluster_manager.cluster_modified", 0), 1);
    assert_int_equal(val(st, "cluster_manager.cluster_removed", 0), 1);
    assert_int_equal(val(st, "listener_manager.listener_modified", 0), 0);
    assert_int_equal(val(st, "listener_manager.listener_create_success", 0), 2);
    /* the listener moves: modified, created again on both workers */
    wp_config *c3 = load("2s", 0, 18002);
    wp_pstats_config_applied(sh, p, c2, c3, 2);
    assert_int_equal(val(st, "listener_manager.listener_modified", 0), 1);
    assert_int_equal(val(st, "listener_manager.listener_create_success", 0), 4);
    assert_int_equal(val(st, "listener_manager.listener_create_failure", 0), 0);
    assert_true(wp_stats_used(st, wp_stats_gauge(st, "listener_manager.total_listeners_draining")));
    wp_pstats_warming_gauges(sh, p, c3, 1);
    assert_int_equal(val(st, "cluster_manager.warming_clusters", 1), 0);
    wp_pstats_free(p);
    wp_config_unref(c1);
    wp_config_unref(c2);
    wp_config_unref(c3);
    wp_stats_free(st);
}

/* A cluster "m" with transport_socket_matches i (match tlsMode istio) and d (empty match
 * when with_default) and the endpoints eps (a JSON list). */
static wp_config *load_tsm(bool with_default, const char *eps)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"static_resources\":{\"clusters\":[{\"name\":\"m\",\"transport_socket_matches\":["
             "{\"name\":\"i\",\"match\":{\"tlsMode\":\"istio\"},\"transport_socket\":{\"name\":"
             "\"envoy.transport_sockets.raw_buffer\"}}%s],\"load_assignment\":{\"endpoints\":[{"
             "\"lb_endpoints\":%s}]}},{\"name\":\"plain\"}]}}",
             with_default ? ",{\"name\":\"d\",\"match\":{},\"transport_socket\":{\"name\":"
                            "\"envoy.transport_sockets.raw_buffer\"}}"
                          : "",
             eps);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wp_bootstrap_load(j, "test", &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    json_decref(j);
    return c;
}

#define EP(port, md)                                                                               \
    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_"            \
    "value\":" #port "}}}" md "}"
#define TAGGED                                                                                     \
    ",\"metadata\":{\"filter_metadata\":{\"envoy.transport_socket_match\":{\"tlsMode\":\"istio\"}" \
    "}}"

/* cluster.<name>.<match>.total_match_count and .default.total_match_count count the hosts
 * whose transport socket is resolved (a new host, or a new choice for one). */
static void test_tsm_match_counts(void **state)
{
    (void)state;
    wp_stats *st = wp_stats_new(1);
    wp_stats_shard *sh = wp_stats_get_shard(st, 0);
    wp_config *c1 = load_tsm(true, "[" EP(1, TAGGED) "," EP(2, "") "]");
    wp_pstats *p = wp_pstats_register(st, c1);
    assert_non_null(p);
    wp_pstats_tsm_counts(sh, p, NULL, c1);
    assert_int_equal(val(st, "cluster.m.i.total_match_count", 0), 1);
    assert_int_equal(val(st, "cluster.m.d.total_match_count", 0), 1);
    assert_int_equal(val(st, "cluster.m.default.total_match_count", 0), 0);
    assert_true(wp_stats_used(st, wp_stats_counter(st, "cluster.m.default.total_match_count")));
    /* a cluster without matches has none of them */
    assert_false(
        wp_stats_used(st, wp_stats_counter(st, "cluster.plain.default.total_match_count")));
    /* the same hosts again: nothing is resolved anew; a new host and a host whose match
     * changed (the empty match gone) are */
    wp_pstats_tsm_counts(sh, p, c1, c1);
    assert_int_equal(val(st, "cluster.m.i.total_match_count", 0), 1);
    wp_config *c2 = load_tsm(false, "[" EP(1, TAGGED) "," EP(2, "") "," EP(3, TAGGED) "]");
    wp_pstats *p2 = wp_pstats_register(st, c2);
    assert_non_null(p2);
    wp_pstats_tsm_counts(sh, p2, c1, c2);
    assert_int_equal(val(st, "cluster.m.i.total_match_count", 0), 2);
    assert_int_equal(val(st, "cluster.m.default.total_match_count", 0), 1);
    wp_pstats_free(p);
    wp_pstats_free(p2);
    wp_config_unref(c1);
    wp_config_unref(c2);
    wp_stats_free(st);
}

static void test_xxhash64(void **state)
{
    (void)state;
    assert_true(xc_xxhash64("", 0) == 0xEF46DB3751D8E999ULL);
    assert_true(xc_xxhash64("abc", 3) == 0x44BC2CF5AD770999ULL);
    const char *s = "Nobody inspects the spammish repetition";
    assert_true(xc_xxhash64(s, strlen(s)) == 0xFBCEA83C8A378BF1ULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_applied),
        cmocka_unit_test(test_tsm_match_counts),
        cmocka_unit_test(test_xxhash64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
