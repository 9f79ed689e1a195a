/*
 * test_bootstrap.c - the bootstrap loader (bootstrap.c, bootstrap_route.c), snapshot
 * lifetime (config.c) and /config_dump (config_dump.c). Run from the project root: the
 * bootstrap files are in tests/data/proxy/.
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

#include "proxy/bootstrap/bootstrap.h"
#include "proxy/server/admin/config_dump.h"
#include "core/timefmt.h"
#include "proxy/stream_info/stream_info.h"

#define DATA "tests/data/proxy/"
#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define LPFX        "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
#define RPFX        LPFX ".route_config.virtual_hosts[0].routes[0]"
#define ROUTER_ONLY "\"http_filters\":[{\"name\":\"envoy.filters.http.router\"}],"
#define ROUTE_OK    "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}"
#define CLUSTER_OK                                                                                 \
    "{\"name\":\"c\",\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"       \
    "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}"

/* A bootstrap with one listener (HCM with hcm_extra fields and these routes) and clusters. */
static char *boot(const char *hcm_extra, const char *routes, const char *clusters)
{
    char *out = NULL;
    int n = asprintf(
        &out,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"in\",%s\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\","
        "\"domains\":[\"*\"],\"routes\":[%s]}]}}}]}]}],\"clusters\":[%s]}}",
        hcm_extra, routes, clusters);
    assert_true(n > 0);
    return out;
}

static wp_config *load_text(const char *text, wf_strbuf *err)
{
    return wf_test_load_bootstrap(text, err);
}

static void expect_error(char *text, const char *want)
{
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

static wp_config *load_file_ok(const char *path)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wp_bootstrap_load_file(path, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

static wp_hcm *hcm0(wp_config *c)
{
    return c->listeners[0].chains[0].hcm;
}

/* ---------- a full bootstrap ---------- */

static void check_full(wp_config *c)
{
    assert_int_equal(atomic_load(&c->refs), 1);
    assert_string_equal(c->node_id,
                        "sidecar~127.10.0.5~reviews-v1-0.default~default.svc.cluster.local");
    assert_string_equal(c->node_cluster, "reviews.default");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c->node, "metadata"), "mesh_id")),
        "cluster.local");
    assert_true(c->has_admin);
    assert_string_equal(c->admin_addr.text, "127.0.0.1:15000");
    assert_string_equal(c->admin_access_log_path, "/dev/null");
    assert_non_null(c->stats_config);

    assert_int_equal(c->nlisteners, 2);
    wp_listener *l = &c->listeners[0];
    assert_string_equal(l->name, "virtualOutbound");
    assert_string_equal(l->addr.text, "0.0.0.0:15001");
    assert_string_equal(l->stat_name, "0.0.0.0_15001");
    assert_int_equal(l->per_connection_buffer_limit_bytes, 32768);
    wp_hcm *h = l->chains[0].hcm;
    assert_string_equal(h->stat_prefix, "outbound_0.0.0.0_15001");
    assert_string_equal(h->server_name, "weft");
    assert_int_equal(h->stream_idle_timeout_ms, 30000);
    assert_int_equal(h->request_timeout_ms, 250);
    assert_int_equal(h->idle_timeout_ms, 90500);
    assert_int_equal(h->max_headers_count, 50);
    assert_int_equal(h->max_request_headers_kb, 96);
    assert_false(h->generate_request_id);
    assert_true(h->use_remote_address);
    assert_int_equal(h->xff_num_trusted_hops, 1);
    assert_int_equal(h->naccess_logs, 2);
    assert_string_equal(h->access_logs[0].path, "/tmp/access.log");
    assert_int_equal(h->access_logs[0].kind, WP_LOG_TEXT);
    assert_string_equal(h->access_logs[0].text_format, "[%START_TIME%] %RESPONSE_CODE%\n");
    assert_int_equal(h->access_logs[0].sink, -1);
    assert_null(h->access_logs[0].format);
    assert_string_equal(h->access_logs[1].path, "/dev/stdout");
    assert_int_equal(h->access_logs[1].kind, WP_LOG_JSON);
    /* json_format is a Struct: keys stay as written */
    assert_non_null(json_object_get(h->access_logs[1].json_format, "upstreamCluster"));

    wp_route_config *rc = h->route_config;
    assert_string_equal(rc->name, "80");
    assert_int_equal(rc->req.nadd, 1);
    assert_string_equal(rc->req.add[0].key, "x-weft");
    assert_int_equal(rc->req.add[0].action, WP_OVERWRITE_IF_EXISTS_OR_ADD);
    assert_int_equal(rc->resp.nremove, 1);
    assert_string_equal(rc->resp.remove[0], "x-internal");
    assert_int_equal(rc->nvhosts, 2);
    wp_vhost *v = &rc->vhosts[0];
    assert_int_equal(v->ndomains, 2);
    assert_string_equal(v->domains[0], "reviews.default.svc.cluster.local");
    assert_int_equal(v->nroutes, 5);

    wp_route *r = &v->routes[0];
    assert_string_equal(r->name, "v2-header");
    assert_int_equal(r->path_kind, WP_PATH_PREFIX);
    assert_string_equal(r->path, "/");
    assert_true(r->case_sensitive);
    assert_int_equal(r->nheaders, 1);
    assert_string_equal(r->headers[0].name, "end-user");
    assert_int_equal(r->headers[0].m.kind, WP_SM_EXACT);
    assert_string_equal(r->headers[0].m.value, "jason");
    assert_true(r->headers[0].m.ignore_case);
    assert_int_equal(r->nquery, 1);
    assert_int_equal(r->query[0].m.kind, WP_SM_PRESENT);
    assert_int_equal(r->action, WP_ACT_ROUTE);
    assert_null(r->cluster_name);
    assert_int_equal(r->nweighted, 2);
    assert_int_equal(r->total_weight, 100);
    assert_int_equal(r->weighted[0].cluster, 1); /* reviews-v2 */
    assert_int_equal(r->weighted[1].cluster, -1);
    assert_int_equal(r->weighted[1].weight, 25);
    assert_int_equal(r->timeout_ms, 2000);
    assert_true(r->has_idle_timeout);
    assert_int_equal(r->idle_timeout_ms, 10000);
    assert_non_null(r->retry);
    assert_int_equal(r->retry->num_retries, 2);

    r = &v->routes[1];
    assert_string_equal(r->name, "");
    assert_int_equal(r->path_kind, WP_PATH_REGEX);
    assert_non_null(r->path_re);
    assert_int_equal(r->cluster, 0);
    assert_non_null(r->regex_rewrite);
    assert_string_equal(r->regex_rewrite_subst, "/\\1/");
    assert_int_equal(r->timeout_ms, 15000); /* default */

    r = &v->routes[2];
    assert_int_equal(r->action, WP_ACT_REDIRECT);
    assert_string_equal(r->redirect.scheme, "https");
    assert_string_equal(r->redirect.path, "/new");
    assert_int_equal(r->redirect.code, 308);

    r = &v->routes[3];
    assert_false(r->case_sensitive);
    assert_int_equal(r->action, WP_ACT_DIRECT);
    assert_int_equal(r->direct_status, 200);
    assert_int_equal(r->direct_body_len, 2);

    r = &v->routes[4];
    assert_string_equal(r->cluster_name, "missing-cluster");
    assert_int_equal(r->cluster, -1); /* not an error: 503 NC at request time */
    assert_int_equal(r->timeout_ms, 0);

    r = &rc->vhosts[1].routes[0];
    assert_string_equal(r->prefix_rewrite, "/x");
    assert_string_equal(r->host_rewrite_literal, "example.com");

    l = &c->listeners[1];
    assert_string_equal(l->addr.text, "[::]:8080");
    assert_string_equal(l->stat_name, "[__]_8080");
    assert_string_equal(l->name, "[__]_8080");

    assert_int_equal(c->nclusters, 2);
    wp_cluster *cl = &c->clusters[0];
    assert_string_equal(cl->name, "reviews-v1");
    assert_int_equal(cl->index, 0);
    assert_int_equal(cl->type, WP_CLUSTER_STATIC);
    assert_int_equal(cl->lb_policy, WP_LB_LEAST_REQUEST);
    assert_int_equal(cl->connect_timeout_ms, 250);
    assert_int_equal(cl->cb.max_connections, 10);
    assert_int_equal(cl->cb.max_pending_requests, 1024);
    assert_int_equal(cl->cb.max_retries, 5);
    assert_int_equal(cl->idle_timeout_ms, 60000);
    assert_int_equal(cl->max_requests_per_connection, 100);
    assert_int_equal(cl->nendpoints, 3);
    assert_string_equal(cl->endpoints[0].addr.text, "127.10.0.7:9080");
    assert_int_equal(cl->endpoints[0].addr.sa.ss_family, AF_INET);
    assert_int_equal(cl->endpoints[0].weight, 3);
    assert_string_equal(cl->endpoints[1].addr.text, "[::1]:9080");
    assert_int_equal(cl->endpoints[1].health, WP_HEALTH_DRAINING);
    assert_int_equal(cl->endpoints[2].weight, 1);
    cl = &c->clusters[1];
    assert_int_equal(cl->type, WP_CLUSTER_STRICT_DNS);
    assert_string_equal(cl->alt_stat_name, "reviews_v2");
    assert_int_equal(cl->dns_refresh_rate_ms, 10000);
    assert_int_equal(cl->max_requests_per_connection, 7);
    assert_string_equal(cl->endpoints[0].hostname, "reviews-v2.local");
    assert_int_equal(cl->endpoints[0].port, 9080);
    assert_int_equal(cl->endpoints[0].addr.len, 0);
    assert_int_equal(wp_config_find_cluster(c, "reviews-v2"), 1);
    assert_int_equal(wp_config_find_cluster(c, "nope"), -1);
}

static void test_full_snake_case(void **state)
{
    wp_config *c = load_file_ok(DATA "full_snake.json");
    check_full(c);
    wp_config_unref(c);
}

static void test_camel_case_same_snapshot(void **state)
{
    wp_config *s = load_file_ok(DATA "full_snake.json");
    wp_config *c = load_file_ok(DATA "full_camel.json");
    check_full(c);
    /* the normalized bootstraps (what /config_dump prints) are identical */
    assert_true(json_equal(s->bootstrap, c->bootstrap));
    wp_config_unref(s);
    wp_config_unref(c);
}

static void test_ref_unref(void **state)
{
    wp_config *c = load_file_ok(DATA "full_snake.json");
    wp_config_ref(c);
    assert_int_equal(atomic_load(&c->refs), 2);
    wp_config_unref(c);
    assert_int_equal(c->nclusters, 2); /* still alive */
    wp_config_unref(c);
    wp_config_unref(NULL);
}

/* RouteAction max_grpc_timeout and grpc_timeout_offset (as istiod writes them, B034). */
static void test_route_max_grpc_timeout(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    char *t = boot(ROUTER_ONLY,
                   "{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"c\",\"timeout\":\"1s\","
                   "\"max_grpc_timeout\":\"1s\",\"grpc_timeout_offset\":\"0.010s\"}},"
                   "{\"match\":{\"prefix\":\"/b\"},\"route\":{\"cluster\":\"c\",\"timeout\":\"0s\","
                   "\"max_grpc_timeout\":\"0s\"}}," ROUTE_OK,
                   CLUSTER_OK);
    wp_config *c = load_text(t, &err);
    free(t);
    assert_non_null(c);
    const wp_route *r = hcm0(c)->route_config->vhosts[0].routes;
    assert_true(r[0].has_max_grpc_timeout);
    assert_int_equal(r[0].max_grpc_timeout_ms, 1000);
    assert_int_equal(r[0].grpc_timeout_offset_ms, 10);
    assert_true(r[1].has_max_grpc_timeout); /* 0s: set, no cap */
    assert_int_equal(r[1].max_grpc_timeout_ms, 0);
    assert_false(r[2].has_max_grpc_timeout); /* absent: grpc-timeout is ignored */
    assert_false(r[2].has_max_stream_duration);
    wp_config_unref(c);
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
                      "\"max_grpc_timeout\":\"soon\"}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".route.max_grpc_timeout: invalid duration (expected a string "
                 "like \"5s\" or \"0.250s\")");
    wf_strbuf_free(&err);
}

/* RouteAction max_stream_duration as Istio's inbound route has it. */
static void test_route_max_stream_duration(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    char *t = boot(ROUTER_ONLY,
                   "{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"c\",\"timeout\":\"0s\","
                   "\"max_stream_duration\":{\"max_stream_duration\":\"0s\","
                   "\"grpc_timeout_header_max\":\"0s\"}}},"
                   "{\"match\":{\"prefix\":\"/b\"},\"route\":{\"cluster\":\"c\","
                   "\"maxStreamDuration\":{\"maxStreamDuration\":\"2s\","
                   "\"grpcTimeoutHeaderOffset\":\"0.1s\"}}}",
                   CLUSTER_OK);
    wp_config *c = load_text(t, &err);
    free(t);
    assert_non_null(c);
    const wp_route *r = hcm0(c)->route_config->vhosts[0].routes;
    assert_true(r[0].has_max_stream_duration && r[0].has_msd_value);
    assert_true(r[0].has_grpc_timeout_header_max);
    assert_int_equal(r[0].msd_ms, 0);
    assert_int_equal(r[0].grpc_timeout_header_max_ms, 0);
    assert_true(r[1].has_max_stream_duration && r[1].has_msd_value);
    assert_false(r[1].has_grpc_timeout_header_max);
    assert_int_equal(r[1].msd_ms, 2000);
    assert_int_equal(r[1].grpc_timeout_header_offset_ms, 100);
    wp_config_unref(c);
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
                      "\"max_stream_duration\":{\"bogus\":1}}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".route.max_stream_duration.bogus: unknown field");
    wf_strbuf_free(&err);
}

static void test_defaults(void **state)
{
    wf_strbuf err = WF_STRBUF_INIT;
    char *t = boot(ROUTER_ONLY, ROUTE_OK, CLUSTER_OK);
    wp_config *c = load_text(t, &err);
    free(t);
    assert_non_null(c);
    wp_listener *l = &c->listeners[0];
    assert_string_equal(l->name, "127.0.0.1_8080");
    assert_int_equal(l->per_connection_buffer_limit_bytes, 1024 * 1024);
    wp_hcm *h = hcm0(c);
    assert_string_equal(h->server_name, "envoy");
    assert_int_equal(h->stream_idle_timeout_ms, 300000);
    assert_int_equal(h->request_timeout_ms, 0);
    assert_int_equal(h->idle_timeout_ms, 3600000);
    assert_int_equal(h->max_request_headers_kb, 60);
    assert_int_equal(h->max_headers_count, 100);
    assert_true(h->generate_request_id);
    assert_false(h->use_remote_address);
    assert_int_equal(h->naccess_logs, 0);
    wp_route *r = &h->route_config->vhosts[0].routes[0];
    assert_int_equal(r->timeout_ms, 15000);
    assert_false(r->has_idle_timeout);
    assert_int_equal(r->cluster, 0);
    assert_null(r->retry);
    wp_cluster *cl = &c->clusters[0];
    assert_int_equal(cl->type, WP_CLUSTER_STATIC);
    assert_int_equal(cl->lb_policy, WP_LB_ROUND_ROBIN);
    assert_int_equal(cl->connect_timeout_ms, 5000);
    assert_int_equal(cl->cb.max_connections, 1024);
    assert_int_equal(cl->cb.max_pending_requests, 1024);
    assert_int_equal(cl->cb.max_requests, 1024);
    assert_int_equal(cl->cb.max_retries, 3);
    assert_int_equal(cl->idle_timeout_ms, 3600000);
    assert_int_equal(cl->max_requests_per_connection, 0);
    assert_int_equal(cl->per_connection_buffer_limit_bytes, 1024 * 1024);
    assert_int_equal(cl->dns_refresh_rate_ms, 5000);
    assert_int_equal(cl->endpoints[0].weight, 1);
    assert_int_equal(cl->endpoints[0].health, WP_HEALTH_UNKNOWN);
    assert_false(c->has_admin);
    assert_null(c->node_id);
    assert_null(c->stats_config);
    assert_int_equal(c->version, 1);
    wp_config_unref(c);
    wf_strbuf_free(&err);
}

static void test_regex_full_match(void **state)
{
    wp_config *c = load_file_ok(DATA "full_snake.json");
    pcre2_code *re = hcm0(c)->route_config->vhosts[0].routes[1].path_re;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    assert_true(pcre2_match(re, (PCRE2_SPTR) "/api/v2/x", PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >
                0);
    assert_true(pcre2_match(re, (PCRE2_SPTR) "/x/api/v2/x", PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) <
                0);
    pcre2_match_data_free(md);
    wf_strbuf err = WF_STRBUF_INIT;
    assert_null(wp_config_add_regex(c, "(a)\\1", &err));
    assert_string_equal(wf_strbuf_cstr(&err),
                        "error parsing regexp: invalid escape sequence: `\\1`");
    wf_strbuf_reset(&err);
    assert_null(wp_config_add_regex(c, "a(?=b)", &err));
    assert_true(strstr(wf_strbuf_cstr(&err), "invalid or unsupported Perl syntax") != NULL);
    wf_strbuf_reset(&err);
    size_t before = c->nregexes;
    assert_non_null(wp_config_add_regex_search(c, "b+", &err));
    assert_int_equal(c->nregexes, before + 1);
    wf_strbuf_free(&err);
    wp_config_unref(c);
}

/* ---------- errors name the JSON path ---------- */

static void test_error_unknown_field(void **state)
{
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\",\"grpc\":{}},\"route\":{\"cluster\":\"c\"}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".match.grpc: not supported by weft-proxy (Envoy's "
                 "envoy.config.route.v3.RouteMatch.grpc)");
    expect_error(strdup("{\"static_resources\":{},\"watchdog\":{}}"),
                 "t.json: watchdog: not supported by weft-proxy (Envoy's "
                 "envoy.config.bootstrap.v3.Bootstrap.watchdog)");
    expect_error(strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"bogus\":{}}]}}"),
                 "t.json: static_resources.clusters[0].bogus: unknown field");
    expect_error(
        strdup(
            "{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"cleanup_interval\":\"5s\"}]}}"),
        "t.json: static_resources.clusters[0].cleanup_interval: not supported by weft-proxy "
        "(Envoy's envoy.config.cluster.v3.Cluster.cleanup_interval)");
}

static void test_error_wrong_type(void **state)
{
    expect_error(boot("\"server_name\":7," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".server_name: wrong type: expected a string");
    expect_error(strdup("{\"static_resources\":{\"clusters\":{}}}"),
                 "t.json: static_resources.clusters: wrong type: expected an array");
    expect_error(
        strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"connectTimeout\":5}]}}"),
        "t.json: static_resources.clusters[0].connect_timeout: wrong type: expected a "
        "duration");
    expect_error(strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\","
                        "\"per_connection_buffer_limit_bytes\":\"12x\"}]}}"),
                 "t.json: static_resources.clusters[0].per_connection_buffer_limit_bytes: wrong "
                 "type: expected an unsigned integer");
    expect_error(strdup("[]"), "t.json: wrong type: the bootstrap must be a JSON object");
}

static void test_error_bad_duration(void **state)
{
    expect_error(boot("\"stream_idle_timeout\":\"5m\"," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".stream_idle_timeout: invalid duration (expected a string like "
                 "\"5s\" or \"0.250s\")");
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
                      "\"timeout\":\"-1s\"}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".route.timeout: value must be a non-negative duration");
}

static void test_error_bad_regex(void **state)
{
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"safe_regex\":{\"regex\":\"(a+)\\\\1\"}},"
                      "\"route\":{\"cluster\":\"c\"}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".match.safe_regex.regex: error parsing regexp: invalid escape "
                 "sequence: `\\1`");
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\",\"headers\":[{\"name\":\"x\","
                      "\"string_match\":{\"safe_regex\":{\"regex\":\"(?<=a)b\"}}}]},"
                      "\"route\":{\"cluster\":\"c\"}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".match.headers[0].string_match.safe_regex.regex: error parsing "
                 "regexp: invalid or unsupported Perl syntax: `(?<`");
}

static void test_error_duplicates(void **state)
{
    expect_error(boot(ROUTER_ONLY, ROUTE_OK, CLUSTER_OK "," CLUSTER_OK),
                 "t.json: static_resources.clusters[1].name: cluster manager: duplicate cluster "
                 "'c'");
    expect_error(strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"connect_timeout\":"
                        "\"1s\",\"connectTimeout\":\"2s\"}]}}"),
                 "t.json: static_resources.clusters[0].connect_timeout: duplicate field (given in "
                 "snake_case and in lowerCamelCase)");
    /* the same listener twice: same (default) name, then same address under another name */
    char *text = boot(ROUTER_ONLY, ROUTE_OK, CLUSTER_OK);
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    json_t *ls = json_object_get(json_object_get(root, "static_resources"), "listeners");
    json_t *l0 = json_array_get(ls, 0);
    json_array_append_new(ls, json_deep_copy(l0));
    expect_error(json_dumps(root, 0), "t.json: static_resources.listeners[1]: duplicate listener "
                                      "name '127.0.0.1_8080'");
    json_object_set_new(json_array_get(ls, 1), "name", json_string("other"));
    expect_error(json_dumps(root, 0), "t.json: static_resources.listeners[1]: error adding "
                                      "listener: 'other' has duplicate address '127.0.0.1:8080' "
                                      "as existing listener");
    /* a domain twice in one route configuration */
    json_array_remove(ls, 1);
    json_t *f0 = json_array_get(
        json_object_get(json_array_get(json_object_get(l0, "filter_chains"), 0), "filters"), 0);
    json_t *vhs = json_object_get(
        json_object_get(json_object_get(f0, "typed_config"), "route_config"), "virtual_hosts");
    json_t *v2 = json_deep_copy(json_array_get(vhs, 0));
    json_object_set_new(v2, "name", json_string("b"));
    json_object_set_new(v2, "domains", json_pack("[s,s]", "x.example", "*"));
    json_array_append_new(vhs, v2);
    expect_error(json_dumps(root, 0),
                 "t.json: " LPFX ".route_config.virtual_hosts[1].domains[1]: Only unique values "
                 "for domains are permitted. Duplicate entry of domain * in route ");
    json_decref(root);
}

static void test_error_rds_and_filters(void **state)
{
    expect_error(boot("\"rds\":{\"route_config_name\":\"80\"}," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".rds: rds is supported only in listeners received over LDS "
                 "(the xDS client inlines the route configuration); use route_config");
    expect_error(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.lua\"},{\"name\":"
                      "\"envoy.filters.http.router\"}],",
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http_filters[0].name: unsupported http filter "
                 "\"envoy.filters.http.lua\" (supported: envoy.filters.http.fault, "
                 "envoy.filters.http.jwt_authn, envoy.filters.http.rbac, envoy.filters.http.cors, "
                 "envoy.filters.http.grpc_stats, istio.metadata_exchange, istio.stats, "
                 "envoy.filters.http.router)");
    expect_error(boot("", ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http_filters: the http filter chain must end with "
                 "envoy.filters.http.router");
    expect_error(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.router\"},{\"name\":"
                      "\"envoy.filters.http.router\"}],",
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http_filters[0]: Error: terminal filter named "
                 "envoy.filters.http.router of type envoy.filters.http.router must be the last "
                 "filter in a http filter chain.");
    expect_error(
        strdup("{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{"
               "\"address\":\"0.0.0.0\",\"port_value\":1}},\"filter_chains\":[{\"filters\":"
               "[{\"name\":\"envoy.filters.network.mongo_proxy\"}]}]}]}}"),
        "t.json: static_resources.listeners[0].filter_chains[0].filters[0].name: "
        "unsupported network filter \"envoy.filters.network.mongo_proxy\" (supported: "
        "envoy.filters.network.rbac, istio.metadata_exchange, istio.stats, "
        "envoy.filters.network.http_connection_manager, envoy.filters.network.tcp_proxy)");
    expect_error(strdup("{\"dynamic_resources\":{\"lds_config\":{}}}"),
                 "t.json: dynamic_resources.lds_config.ads: missing required field (weft takes "
                 "CDS and LDS from ads_config only)");
}

/* ---------- filter chains (bootstrap_listener.c) ---------- */

#define HCM_IN(prefix)                                                                             \
    "\"filters\":[{\"name\":\"envoy.filters.network.http_connection_manager\",\"typed_config\":{"  \
    "\"@type\":\"" HCM_T "\",\"stat_prefix\":\"" prefix "\",\"route_config\":{\"virtual_hosts\":"  \
    "[{\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[" ROUTE_OK "]}]}," ROUTER_ONLY_TAIL "}}]"
#define ROUTER_ONLY_TAIL "\"http_filters\":[{\"name\":\"envoy.filters.http.router\"}]"
#define LST_HEAD                                                                                   \
    "{\"static_resources\":{\"clusters\":[" CLUSTER_OK "],\"listeners\":[{\"address\":{"           \
    "\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":8080}},"
#define LST_TAIL "}]}}"

/* Listener.access_log with AccessLog.filter response_flag_filter (Istio's listener log shape) */
#define LOG_FILE                                                                                   \
    "{\"name\":\"envoy.access_loggers.file\",\"typed_config\":{\"@type\":\""                       \
    "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":"        \
    "\"/dev/null\"}"

static void test_listener_access_log(void **state)
{
    (void)state;
    const char *chain = "\"filter_chains\":[{" HCM_IN("x") "}]" LST_TAIL;
    char *text = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_true(asprintf(&text,
                         LST_HEAD "\"accessLog\":[" LOG_FILE
                                  ",\"filter\":{\"response_flag_filter\":"
                                  "{\"flags\":[\"NR\",\"UF\"]}}}," LOG_FILE ",\"filter\":{"
                                  "\"responseFlagFilter\":{}}}," LOG_FILE "}],%s",
                         chain) > 0);
    wp_config *c = load_text(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_listener *l = &c->listeners[0];
    assert_int_equal(l->naccess_logs, 3);
    assert_string_equal(l->access_logs[0].path, "/dev/null");
    assert_true(l->access_logs[0].has_flag_filter);
    assert_int_equal(l->access_logs[0].flag_filter, (1u << WP_RF_NR) | (1u << WP_RF_UF));
    assert_true(l->access_logs[1].has_flag_filter);
    assert_int_equal(l->access_logs[1].flag_filter, 0);
    assert_false(l->access_logs[2].has_flag_filter);
    wp_config_unref(c);
    wf_strbuf_free(&err);

    assert_true(asprintf(&text,
                         LST_HEAD "\"access_log\":[" LOG_FILE
                                  ",\"filter\":{\"response_flag_filter\":"
                                  "{\"flags\":[\"NR\",\"XX\"]}}}],%s",
                         chain) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].access_log[0].filter."
                       "response_flag_filter.flags[1]: value must be in the list of Envoy's "
                       "response flags (LH, UH, UT, ..., NR, ..., UDO)");
    assert_true(asprintf(&text,
                         LST_HEAD "\"access_log\":[" LOG_FILE ",\"filter\":{\"duration_filter\":"
                                  "{}}}],%s",
                         chain) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].access_log[0].filter: unsupported "
                       "access log filter (weft supports response_flag_filter)");
    assert_true(asprintf(&text,
                         LST_HEAD "\"access_log\":[" LOG_FILE ",\"filter\":{\"flagz\":{}}}],%s",
                         chain) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].access_log[0].filter.flagz: "
                       "unknown field");
}

static void test_filter_chains(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    const char *text = LST_HEAD
        "\"filter_chains\":[{\"name\":\"one\",\"filterChainMatch\":{\"destinationPort\":9080,"
        "\"prefix_ranges\":[{\"address_prefix\":\"10.1.2.3\",\"prefix_len\":8}],"
        "\"server_names\":[\"WWW.Example.com\",\"*.example.org\"],\"transport_protocol\":\"tls\","
        "\"application_protocols\":[\"h2\"],\"source_type\":\"SAME_IP_OR_LOOPBACK\","
        "\"source_prefix_ranges\":[{\"address_prefix\":\"::1\",\"prefix_len\":128}],"
        "\"source_ports\":[4000,4001]}," HCM_IN("one") "},{\"name\":\"two\"," HCM_IN(
            "two") "}],"
                   "\"default_filter_chain\":{\"name\":\"dflt\"," HCM_IN("dflt") "}" LST_TAIL;
    wp_config *c = load_text(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_listener *l = &c->listeners[0];
    assert_int_equal(l->nchains, 2);
    assert_string_equal(l->chains[0].name, "one");
    const wp_fcm *m = &l->chains[0].match;
    assert_ptr_equal(l->fcms[0], m);
    assert_int_equal(m->destination_port, 9080);
    char t[64];
    wp_cidr_text(&m->prefix_ranges[0], t, sizeof t);
    assert_string_equal(t, "10.0.0.0/8");
    assert_int_equal(m->nserver_names, 2);
    assert_string_equal(m->server_names[0], "www.example.com");
    assert_string_equal(m->server_names[1], "*.example.org");
    assert_string_equal(m->transport_protocol, "tls");
    assert_string_equal(m->application_protocols[0], "h2");
    assert_int_equal(m->source_type, WP_FCM_SOURCE_SAME_IP_OR_LOOPBACK);
    wp_cidr_text(&m->source_prefix_ranges[0], t, sizeof t);
    assert_string_equal(t, "::1/128");
    assert_int_equal(m->nsource_ports, 2);
    assert_int_equal(m->source_ports[1], 4001);
    assert_true(wp_fcm_is_empty(&l->chains[1].match));
    assert_non_null(l->default_chain);
    assert_string_equal(l->default_chain->name, "dflt");
    /* every chain's connection manager, default last, each knowing its position */
    assert_int_equal(c->nhcms, 3);
    assert_string_equal(c->hcms[0]->stat_prefix, "one");
    assert_string_equal(c->hcms[2]->stat_prefix, "dflt");
    for (size_t i = 0; i < c->nhcms; i++)
        assert_int_equal(c->hcms[i]->index, i);
    assert_ptr_equal(l->chains[1].filters[0].config, l->chains[1].hcm);
    assert_int_equal(l->chains[1].filters[0].kind, WP_NF_HTTP_CONNECTION_MANAGER);
    wp_config_unref(c);
    wf_strbuf_free(&err);
}

static void test_filter_chain_errors(void **state)
{
    (void)state;
#define FCM(match)                                                                                 \
    LST_HEAD "\"filter_chains\":[{\"filter_chain_match\":" match "," HCM_IN("x") "}]" LST_TAIL
#define FPFX "t.json: static_resources.listeners[0].filter_chains[0].filter_chain_match."
    expect_error(strdup(FCM("{\"prefix_ranges\":[{\"address_prefix\":\"ten\",\"prefix_len\":8}]}")),
                 FPFX "prefix_ranges[0]: malformed IP address: ten");
    expect_error(strdup(FCM("{\"source_prefix_ranges\":[{\"address_prefix\":\"10.0.0.0\","
                            "\"prefix_len\":33}]}")),
                 FPFX "source_prefix_ranges[0]: invalid prefix_len 33 for 10.0.0.0");
    expect_error(strdup(FCM("{\"destination_port\":0}")),
                 FPFX "destination_port: value must be inside range [1, 65535]");
    expect_error(strdup(FCM("{\"source_ports\":[80,70000]}")),
                 FPFX "source_ports[1]: value must be inside range [1, 65535]");
    expect_error(strdup(FCM("{\"source_type\":\"LOCAL\"}")),
                 FPFX "source_type: unsupported value \"LOCAL\"");
    expect_error(strdup(FCM("{\"address_suffix\":\"0.0.0.1\"}")),
                 FPFX "address_suffix: not supported by weft-proxy (Envoy's "
                      "envoy.config.listener.v3.FilterChainMatch.address_suffix)");
    expect_error(
        strdup(LST_HEAD
               "\"default_filter_chain\":{\"filter_chain_match\":{\"source_ports\":[1]}," HCM_IN(
                   "d") "}" LST_TAIL),
        "t.json: static_resources.listeners[0].default_filter_chain.filter_chain_match: "
        "filter_chain_match has no effect in default_filter_chain (the chain of connections no "
        "filter chain matches)");
    expect_error(strdup(LST_HEAD "\"listener_filters\":[{\"name\":\"my.filter\"}],"
                                 "\"filter_chains\":[{" HCM_IN("x") "}]" LST_TAIL),
                 "t.json: static_resources.listeners[0].listener_filters[0].name: unsupported "
                 "listener filter \"my.filter\" (weft-proxy implements "
                 "envoy.filters.listener.tls_inspector, envoy.filters.listener.http_inspector and "
                 "envoy.filters.listener.original_dst)");
    expect_error(strdup(LST_HEAD
                        "\"listener_filters\":[{\"name\":\"envoy.filters.listener."
                        "http_inspector\",\"typed_config\":{\"x\":1}}],\"filter_chains\":[{" HCM_IN(
                            "x") "}]" LST_TAIL),
                 "t.json: static_resources.listeners[0].listener_filters[0].typed_config.x: "
                 "unknown field");
    expect_error(strdup(LST_HEAD "\"listener_filters\":[{\"name\":\"envoy.filters.listener."
                                 "tls_inspector\",\"typed_config\":{\"max_client_hello_size\":"
                                 "70000}}],\"filter_chains\":[{" HCM_IN("x") "}]" LST_TAIL),
                 "t.json: static_resources.listeners[0].listener_filters[0].typed_config."
                 "max_client_hello_size: max_client_hello_size of 70000 is greater than maximum "
                 "of 16384.");
    expect_error(strdup(LST_HEAD "\"listener_filters\":[{\"name\":\"envoy.filters.listener."
                                 "tls_inspector\",\"typed_config\":{\"enable_ja3_fingerprinting\":"
                                 "true}}],\"filter_chains\":[{" HCM_IN("x") "}]" LST_TAIL),
                 "t.json: static_resources.listeners[0].listener_filters[0].typed_config."
                 "enable_ja3_fingerprinting: TLS fingerprinting (JA3/JA4) is not supported by "
                 "weft-proxy");
#define LFD(pred)                                                                                  \
    LST_HEAD "\"listener_filters\":[{\"name\":\"envoy.filters.listener.http_inspector\","          \
             "\"filter_disabled\":" pred "}],\"filter_chains\":[{" HCM_IN("x") "}]" LST_TAIL
#define LFDPFX "t.json: static_resources.listeners[0].listener_filters[0].filter_disabled"
    expect_error(strdup(LFD("{\"or_match\":{\"rules\":[{\"any_match\":true}]}}")),
                 LFDPFX ".or_match.rules: value must contain at least 2 item(s)");
    expect_error(strdup(LFD("{\"any_match\":false}")), LFDPFX ".any_match: value must equal true");
    expect_error(strdup(LFD("{}")), LFDPFX ": exactly one rule of or_match, and_match, not_match, "
                                           "any_match, destination_port_range is required");
    expect_error(strdup(LFD("{\"not_match\":{\"destination_port_range\":{\"start\":\"a\"}}}")),
                 LFDPFX ".not_match.destination_port_range: wrong type: start and end must be "
                        "integers");
    expect_error(strdup(LFD("{\"header\":{}}")), LFDPFX ".header: unknown field");
#undef LFDPFX
#undef FCM
#undef FPFX
}

/* A real Envoy field weft-proxy does not implement is named as such, with its Envoy message
 * (by the object's @type or its JSON path); a name that is no field of that message stays
 * "unknown field". */
#define NOT_SUPPORTED(msg_field) ": not supported by weft-proxy (Envoy's " msg_field ")"
#define CLUSTER_WITH(extra)      "{\"static_resources\":{\"clusters\":[{\"name\":\"c\"," extra "}]}}"
#define ROUTER_T                 "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"

static void test_error_not_supported_field(void **state)
{
    (void)state;
    const char *chain = "\"filter_chains\":[{" HCM_IN("x") "}]" LST_TAIL;
    char *text = NULL;
    assert_true(asprintf(&text, LST_HEAD "\"tcp_backlog_size\":8,%s", chain) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].tcp_backlog_size" NOT_SUPPORTED(
                           "envoy.config.listener.v3.Listener.tcp_backlog_size"));
    /* lowerCamelCase is the same field (protobuf JSON); the path names it in snake_case */
    assert_true(asprintf(&text, LST_HEAD "\"tcpBacklogSize\":8,%s", chain) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].tcp_backlog_size" NOT_SUPPORTED(
                           "envoy.config.listener.v3.Listener.tcp_backlog_size"));
    /* a misspelling is no field of Listener */
    assert_true(asprintf(&text, LST_HEAD "\"acessLog\":[],%s", chain) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].acess_log: unknown field");
    expect_error(
        strdup("{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{"
               "\"address\":\"::\",\"port_value\":8080,\"ipv4_compat\":true}}}]}}"),
        "t.json: static_resources.listeners[0].address.socket_address.ipv4_compat" NOT_SUPPORTED(
            "envoy.config.core.v3.SocketAddress.ipv4_compat"));
    /* a transport_socket_matches entry without its transport socket (Envoy finds no factory) */
    expect_error(strdup(CLUSTER_WITH("\"transport_socket_matches\":[{\"name\":\"m\"}]")),
                 "t.json: static_resources.clusters[0].transport_socket_matches[0]"
                 ".transport_socket: missing required field");
    expect_error(strdup(CLUSTER_WITH("\"lrs_server\":{}")),
                 "t.json: static_resources.clusters[0].lrs_server" NOT_SUPPORTED(
                     "envoy.config.cluster.v3.Cluster.lrs_server"));
    /* a JSON name with two snake_case readings is named as written, the field as Envoy's */
    expect_error(boot("\"http3ProtocolOptions\":{}," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http3ProtocolOptions" NOT_SUPPORTED(
                     "envoy.extensions.filters.network.http_connection_manager.v3."
                     "HttpConnectionManager.http3_protocol_options"));
    expect_error(strdup(CLUSTER_WITH("\"upstream_bind_confg\":{}")),
                 "t.json: static_resources.clusters[0].upstream_bind_confg: unknown field");
    /* the connection manager is known by its @type */
    expect_error(boot("\"tracing\":{}," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".tracing" NOT_SUPPORTED(
                     "envoy.extensions.filters.network.http_connection_manager.v3."
                     "HttpConnectionManager.tracing"));
    expect_error(boot("\"tracng\":{}," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".tracng: unknown field");
    expect_error(boot("\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"typed_config\":"
                      "{\"@type\":\"" ROUTER_T "\",\"start_child_span\":true}}],",
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http_filters[0].typed_config.start_child_span" NOT_SUPPORTED(
                     "envoy.extensions.filters.http.router.v3.Router.start_child_span"));
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"},"
                      "\"decorator\":{\"operation\":\"op\"}}",
                      CLUSTER_OK),
                 "t.json: " RPFX
                 ".decorator" NOT_SUPPORTED("envoy.config.route.v3.Route.decorator"));
    expect_error(boot(ROUTER_ONLY,
                      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\",\"hash_policy\":"
                      "[{\"header\":{\"header_name\":\"x-user\"}}]}}",
                      CLUSTER_OK),
                 "t.json: " RPFX ".route.hash_policy" NOT_SUPPORTED(
                     "envoy.config.route.v3.RouteAction.hash_policy"));
    /* a reserved name (Filter.config, removed from v3) is no field */
    assert_true(asprintf(&text, LST_HEAD
                         "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
                         "network.http_connection_manager\",\"config\":{}}]}]" LST_TAIL) > 0);
    expect_error(text, "t.json: static_resources.listeners[0].filter_chains[0].filters[0].config: "
                       "unknown field");
}

static void test_error_cluster_rules(void **state)
{
    expect_error(strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"type\":\"STATIC\","
                        "\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
                        "\"address\":{\"socket_address\":{\"address\":\"svc.local\",\"port_value\":"
                        "80}}}}]}]}}]}}"),
                 "t.json: static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0]"
                 ".endpoint.address.socket_address.address: malformed IP address: svc.local. "
                 "Consider setting resolver_name or setting cluster type to 'STRICT_DNS' or "
                 "'LOGICAL_DNS'");
    expect_error(
        strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"type\":\"EDS\"}]}}"),
        "t.json: static_resources.clusters[0].type: unsupported value \"EDS\"");
    expect_error(strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"circuit_breakers\":"
                        "{\"thresholds\":[{\"priority\":\"HIGH\"}]}}]}}"),
                 "t.json: static_resources.clusters[0].circuit_breakers.thresholds[0].priority: "
                 "unsupported value \"HIGH\" (only DEFAULT priority thresholds are supported)");
    expect_error(
        strdup("{\"static_resources\":{\"clusters\":[{\"name\":\"c\",\"load_assignment\":"
               "{\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
               "\"socket_address\":{\"address\":\"1.2.3.4\",\"port_value\":70000}}}}]}]}}]}}"),
        "t.json: static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0]"
        ".endpoint.address.socket_address.port_value: value must be less than or equal to "
        "65535");
}

static void test_error_route_rules(void **state)
{
    expect_error(
        boot(ROUTER_ONLY,
             "{\"match\":{\"prefix\":\"/\"},\"route\":{\"weighted_clusters\":{\"clusters\":"
             "[{\"name\":\"c\",\"weight\":10}],\"total_weight\":100}}}",
             CLUSTER_OK),
        "t.json: " RPFX ".route.weighted_clusters: Sum of weights in the weighted_cluster "
        "should add up to 100");
    expect_error(
        boot(ROUTER_ONLY,
             "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"},"
             "\"request_headers_to_add\":[{\"header\":{\"key\":\":path\",\"value\":\"/\"}}]}",
             CLUSTER_OK),
        "t.json: " RPFX ".request_headers_to_add[0].header.key: :-prefixed or host headers "
        "may not be modified");
    expect_error(boot(ROUTER_ONLY, "{\"match\":{\"prefix\":\"/\"}}", CLUSTER_OK),
                 "t.json: " RPFX ": exactly one of route, redirect, direct_response is required");
    expect_error(boot(ROUTER_ONLY,
                      ROUTE_OK ",{\"match\":{\"prefix\":\"/\"},\"route\":{"
                               "\"cluster\":\"c\",\"hash_policy\":[]}}",
                      CLUSTER_OK),
                 "t.json: " LPFX ".route_config.virtual_hosts[0].routes[1].route.hash_policy: "
                 "not supported by weft-proxy (Envoy's "
                 "envoy.config.route.v3.RouteAction.hash_policy)");
}

static void test_validate_clusters_explicit(void **state)
{
    char *t = NULL;
    assert_true(asprintf(&t,
                         "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{"
                         "\"address\":\"127.0.0.1\",\"port_value\":1}},\"filter_chains\":[{"
                         "\"filters\":[{\"name\":\"envoy.filters.network.http_connection_manager\","
                         "\"typed_config\":{\"@type\":\"%s\",\"stat_prefix\":\"s\",%s"
                         "\"route_config\":{\"validate_clusters\":true,\"virtual_hosts\":[{"
                         "\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":"
                         "\"/\"},\"route\":{\"cluster\":\"zz\"}}]}]}}}]}]}]}}",
                         HCM_T, ROUTER_ONLY) > 0);
    expect_error(t, "t.json: " RPFX ".route.cluster: route: unknown cluster 'zz'");
}

static void test_syntax_error_and_missing_file(void **state)
{
    wf_strbuf err = WF_STRBUF_INIT;
    assert_null(wp_bootstrap_load_file(DATA "bad_syntax.json", &err));
    assert_string_equal(wf_strbuf_cstr(&err),
                        DATA "bad_syntax.json:2:22: string or '}' expected near '}'");
    wf_strbuf_reset(&err);
    assert_null(wp_bootstrap_load_file(DATA "no_such_file.json", &err));
    assert_string_equal(wf_strbuf_cstr(&err),
                        DATA "no_such_file.json: cannot read: No such file or directory");
    wf_strbuf_free(&err);
}

/* ---------- config dump ---------- */

#define T_ADMIN "type.googleapis.com/envoy.admin.v3."
#define NOW     1703570229.898 /* 2023-12-26T05:57:09.898Z */

static const char *type_of(json_t *o)
{
    return json_string_value(json_object_get(o, "@type"));
}

static void test_dump_shape(void **state)
{
    wp_config *c = load_file_ok(DATA "full_camel.json");
    wf_strbuf err = WF_STRBUF_INIT;
    json_t *d = wp_config_dump(c, NULL, NULL, false, NOW, &err);
    assert_non_null(d);
    json_t *cf = json_object_get(d, "configs");
    assert_int_equal(json_array_size(cf), 4);
    assert_string_equal(type_of(json_array_get(cf, 0)), T_ADMIN "BootstrapConfigDump");
    assert_string_equal(type_of(json_array_get(cf, 1)), T_ADMIN "ClustersConfigDump");
    assert_string_equal(type_of(json_array_get(cf, 2)), T_ADMIN "ListenersConfigDump");
    assert_string_equal(type_of(json_array_get(cf, 3)), T_ADMIN "RoutesConfigDump");

    json_t *b = json_array_get(cf, 0);
    assert_string_equal(json_string_value(json_object_get(b, "last_updated")),
                        "2023-12-26T05:57:09.898Z");
    assert_true(json_equal(json_object_get(b, "bootstrap"), c->bootstrap));

    json_t *sc = json_array_get(json_object_get(json_array_get(cf, 1), "static_clusters"), 0);
    json_t *cl = json_object_get(sc, "cluster");
    assert_string_equal(type_of(cl), "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    assert_string_equal(json_string_value(json_object_get(cl, "name")), "reviews-v1");
    assert_string_equal(json_string_value(json_object_get(cl, "connect_timeout")), "0.250s");
    assert_string_equal(json_string_value(json_object_get(sc, "last_updated")),
                        "2023-12-26T05:57:09.898Z");
    assert_null(json_object_get(json_array_get(cf, 1), "dynamic_active_clusters"));

    json_t *sl = json_array_get(json_object_get(json_array_get(cf, 2), "static_listeners"), 0);
    json_t *ls = json_object_get(sl, "listener");
    assert_string_equal(type_of(ls), "type.googleapis.com/envoy.config.listener.v3.Listener");
    assert_int_equal(json_integer_value(json_object_get(ls, "per_connection_buffer_limit_bytes")),
                     32768); /* "32768" printed as a uint32, as Envoy does */
    json_t *tc = json_object_get(
        json_array_get(
            json_object_get(json_array_get(json_object_get(ls, "filter_chains"), 0), "filters"), 0),
        "typed_config");
    json_t *common = json_object_get(tc, "common_http_protocol_options");
    assert_string_equal(json_string_value(json_object_get(common, "idle_timeout")), "90.500s");

    json_t *rcs = json_object_get(json_array_get(cf, 3), "static_route_configs");
    assert_int_equal(json_array_size(rcs), 2);
    json_t *rc = json_object_get(json_array_get(rcs, 0), "route_config");
    assert_string_equal(type_of(rc),
                        "type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
    assert_string_equal(json_string_value(json_object_get(rc, "name")), "80");
    json_decref(d);

    d = wp_config_dump(c, NULL, NULL, true, NOW, &err);
    cf = json_object_get(d, "configs");
    assert_int_equal(json_array_size(cf), 5);
    json_t *eds = json_array_get(cf, 2);
    assert_string_equal(type_of(eds), T_ADMIN "EndpointsConfigDump");
    json_t *cla = json_object_get(
        json_array_get(json_object_get(eds, "static_endpoint_configs"), 0), "endpoint_config");
    assert_string_equal(type_of(cla),
                        "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    assert_string_equal(json_string_value(json_object_get(cla, "cluster_name")), "reviews-v1");
    json_t *lbs =
        json_object_get(json_array_get(json_object_get(cla, "endpoints"), 0), "lb_endpoints");
    assert_int_equal(json_array_size(lbs), 3);
    json_t *e1 = json_array_get(lbs, 1);
    json_t *sa = json_object_get(json_object_get(json_object_get(e1, "endpoint"), "address"),
                                 "socket_address");
    assert_string_equal(json_string_value(json_object_get(sa, "address")), "::1");
    assert_int_equal(json_integer_value(json_object_get(sa, "port_value")), 9080);
    assert_string_equal(json_string_value(json_object_get(e1, "health_status")), "DRAINING");
    json_t *e0 = json_array_get(lbs, 0);
    assert_string_equal(json_string_value(json_object_get(e0, "health_status")), "HEALTHY");
    assert_int_equal(json_integer_value(json_object_get(e0, "load_balancing_weight")), 3);
    json_decref(d);
    assert_int_equal(err.len, 0);
    wf_strbuf_free(&err);
    wp_config_unref(c);
}

static void test_dump_resource_and_mask(void **state)
{
    wp_config *c = load_file_ok(DATA "full_snake.json");
    wf_strbuf err = WF_STRBUF_INIT;
    int status = 0;
    json_t *d = wp_config_dump_http(c, "static_clusters", NULL, false, NOW, &err, &status);
    assert_int_equal(status, 200);
    json_t *cf = json_object_get(d, "configs");
    assert_int_equal(json_array_size(cf), 2);
    assert_string_equal(type_of(json_array_get(cf, 0)), T_ADMIN "ClustersConfigDump.StaticCluster");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(cf, 1), "cluster"), "name")),
                        "reviews-v2");
    json_decref(d);

    d = wp_config_dump(c, "static_clusters", "cluster.name,last_updated", false, NOW, &err);
    json_t *want =
        json_pack("{s:s,s:{s:s,s:s},s:s}", "@type", T_ADMIN "ClustersConfigDump.StaticCluster",
                  "cluster", "@type", "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name",
                  "reviews-v1", "last_updated", "2023-12-26T05:57:09.898Z");
    assert_true(json_equal(json_array_get(json_object_get(d, "configs"), 0), want));
    json_decref(want);
    json_decref(d);

    /* mask without resource: only the dumps it fits, trimmed */
    d = wp_config_dump(c, NULL, "static_clusters", false, NOW, &err);
    cf = json_object_get(d, "configs");
    assert_int_equal(json_array_size(cf), 1);
    assert_int_equal(json_object_size(json_array_get(cf, 0)), 2); /* @type, static_clusters */
    json_decref(d);
    d = wp_config_dump(c, NULL, "bootstrap.node.id", false, NOW, &err);
    cf = json_object_get(d, "configs");
    assert_int_equal(json_array_size(cf), 1);
    want = json_pack("{s:s,s:{s:{s:s}}}", "@type", T_ADMIN "BootstrapConfigDump", "bootstrap",
                     "node", "id", c->node_id);
    assert_true(json_equal(json_array_get(cf, 0), want));
    json_decref(want);
    json_decref(d);

    d = wp_config_dump_http(c, "dynamic_active_clusters", NULL, false, NOW, &err, &status);
    assert_int_equal(json_array_size(json_object_get(d, "configs")), 0);
    json_decref(d);
    d = wp_config_dump_http(c, "static_endpoint_configs", NULL, true, NOW, &err, &status);
    assert_int_equal(json_array_size(json_object_get(d, "configs")), 2);
    assert_string_equal(type_of(json_array_get(json_object_get(d, "configs"), 0)),
                        T_ADMIN "EndpointsConfigDump.StaticEndpointConfig");
    json_decref(d);
    assert_int_equal(err.len, 0);
    wf_strbuf_free(&err);
    wp_config_unref(c);
}

static void expect_dump_error(wp_config *c, const char *res, const char *mask, bool eds, int code,
                              const char *want)
{
    wf_strbuf err = WF_STRBUF_INIT;
    int status = 0;
    assert_null(wp_config_dump_http(c, res, mask, eds, NOW, &err, &status));
    assert_int_equal(status, code);
    assert_string_equal(wf_strbuf_cstr(&err), want);
    wf_strbuf_free(&err);
}

static void test_dump_errors(void **state)
{
    wp_config *c = load_file_ok(DATA "full_snake.json");
    expect_dump_error(c, "bogus", NULL, false, 404, "bogus not found in config dump");
    expect_dump_error(c, "static_endpoint_configs", NULL, false, 404,
                      "static_endpoint_configs not found in config dump");
    expect_dump_error(c, "version_info", NULL, false, 400,
                      "version_info is not a repeated field. Use ?mask=version_info to get only "
                      "this field");
    expect_dump_error(c, "static_clusters", "cluster.name,nope", false, 400,
                      "FieldMask paths: \"cluster.name\"\npaths: \"nope\"\n could not be "
                      "successfully used.");
    expect_dump_error(c, NULL, "nope", false, 400,
                      "FieldMask nope could not be successfully applied to any configs.");
    wp_config_unref(c);
}

/* Protobuf JSON names drop the "_" before a digit (accept_http_10 is acceptHttp10): both
 * readings of such a key are tried against the object's fields; an unknown one is reported as
 * written, a key given both ways is a duplicate. */
static void test_camel_case_digits(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    char *text = boot("\"httpProtocolOptions\":{\"acceptHttp10\":true,"
                      "\"defaultHostForHttp10\":\"svc.example\"}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK);
    wp_config *c = load_text(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    assert_true(hcm0(c)->accept_http_10);
    assert_string_equal(hcm0(c)->default_host_for_http_10, "svc.example");
    wp_config_unref(c);
    wf_strbuf_free(&err);
    expect_error(
        boot("\"httpProtocolOptions\":{\"acceptHttp10x\":true}," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
        "t.json: " LPFX ".http_protocol_options.acceptHttp10x: unknown field");
    expect_error(boot("\"http_protocol_options\":{\"acceptHttp10\":true,"
                      "\"accept_http_10\":true}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http_protocol_options.accept_http_10: duplicate field (given in "
                 "snake_case and in lowerCamelCase)");
}

/* codec_type AUTO / HTTP1 / HTTP2 (HTTP3 refused)
 * and http2_protocol_options: Envoy >= 1.36's defaults, the SETTINGS fields with Envoy's
 * ranges, the other fields of Http2ProtocolOptions refused by name. */
static void test_hcm_codec_and_h2_options(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    char *text = boot(ROUTER_ONLY, ROUTE_OK, CLUSTER_OK);
    wp_config *c = load_text(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    assert_int_equal(hcm0(c)->codec_type, WP_CODEC_AUTO);
    assert_int_equal(hcm0(c)->h2.hpack_table_size, 4096);
    assert_int_equal(hcm0(c)->h2.max_concurrent_streams, 1024);
    assert_int_equal(hcm0(c)->h2.initial_stream_window_size, 16777216);
    assert_int_equal(hcm0(c)->h2.initial_connection_window_size, 25165824);
    wp_config_unref(c);
    text = boot("\"codec_type\":\"HTTP1\",\"http2ProtocolOptions\":{\"hpackTableSize\":0,"
                "\"max_concurrent_streams\":100,\"initial_stream_window_size\":65535,"
                "\"initial_connection_window_size\":1048576}," ROUTER_ONLY,
                ROUTE_OK, CLUSTER_OK);
    c = load_text(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    assert_int_equal(hcm0(c)->codec_type, WP_CODEC_HTTP1);
    assert_int_equal(hcm0(c)->h2.hpack_table_size, 0);
    assert_int_equal(hcm0(c)->h2.max_concurrent_streams, 100);
    assert_int_equal(hcm0(c)->h2.initial_stream_window_size, 65535);
    assert_int_equal(hcm0(c)->h2.initial_connection_window_size, 1048576);
    wp_config_unref(c);
    text = boot("\"codec_type\":\"HTTP2\"," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK);
    c = load_text(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    assert_int_equal(hcm0(c)->codec_type, WP_CODEC_HTTP2);
    wp_config_unref(c);
    wf_strbuf_free(&err);
    expect_error(boot("\"codec_type\":\"HTTP3\"," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".codec_type: HTTP3 is not supported by weft-proxy (no QUIC "
                 "listeners)");
    expect_error(boot("\"codec_type\":\"SPDY\"," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".codec_type: unsupported value \"SPDY\"");
    expect_error(boot("\"http2_protocol_options\":{\"max_concurrent_streams\":0}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http2_protocol_options.max_concurrent_streams: value must be "
                 "inside range [1, 2147483647]");
    expect_error(
        boot("\"http2_protocol_options\":{\"initial_stream_window_size\":65534}," ROUTER_ONLY,
             ROUTE_OK, CLUSTER_OK),
        "t.json: " LPFX ".http2_protocol_options.initial_stream_window_size: value must "
        "be inside range [65535, 2147483647]");
    expect_error(boot("\"http2_protocol_options\":{\"initial_connection_window_size\":"
                      "2147483648}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http2_protocol_options.initial_connection_window_size: value "
                 "must be inside range [65535, 2147483647]");
    expect_error(boot("\"http2_protocol_options\":{\"connection_keepalive\":{}}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".http2_protocol_options.connection_keepalive: not supported by "
                 "weft-proxy (Envoy's envoy.config.core.v3.Http2ProtocolOptions."
                 "connection_keepalive)");
    expect_error(boot("\"http2_protocol_options\":{\"allowConnect\":true}," ROUTER_ONLY, ROUTE_OK,
                      CLUSTER_OK),
                 "t.json: " LPFX ".http2_protocol_options.allow_connect: not supported by "
                 "weft-proxy (Envoy's envoy.config.core.v3.Http2ProtocolOptions.allow_connect)");
}

static void test_dump_time(void **state)
{
    char buf[40];
    assert_string_equal(wf_timestamp_ms(0, buf, sizeof(buf)), "1970-01-01T00:00:00.000Z");
    assert_string_equal(wf_timestamp_ms(1703570229.9996, buf, sizeof(buf)),
                        "2023-12-26T05:57:10.000Z");
}

/* forward_client_cert_details / set_current_client_cert_details (http/xfcc.h). */
static void test_hcm_xfcc(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    char *text = boot("\"forwardClientCertDetails\":\"APPEND_FORWARD\","
                      "\"setCurrentClientCertDetails\":{\"subject\":true,\"dns\":true,"
                      "\"uri\":true,\"cert\":false}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK);
    wp_config *c = load_text(text, &err);
    free(text);
    assert_non_null(c);
    const wp_hcm *h = c->listeners[0].chains[0].hcm;
    assert_int_equal(h->forward_client_cert, WP_FCC_APPEND_FORWARD);
    assert_int_equal(h->client_cert_details, WP_CCD_SUBJECT | WP_CCD_DNS | WP_CCD_URI);
    wp_config_unref(c);
    text = boot(ROUTER_ONLY, ROUTE_OK, CLUSTER_OK);
    c = load_text(text, &err);
    free(text);
    assert_non_null(c);
    assert_int_equal(c->listeners[0].chains[0].hcm->forward_client_cert, WP_FCC_SANITIZE);
    wp_config_unref(c);
    expect_error(
        boot("\"forward_client_cert_details\":\"SANITISE\"," ROUTER_ONLY, ROUTE_OK, CLUSTER_OK),
        "t.json: " LPFX ".forward_client_cert_details: unsupported value \"SANITISE\"");
    expect_error(boot("\"set_current_client_cert_details\":{\"issuer\":true}," ROUTER_ONLY,
                      ROUTE_OK, CLUSTER_OK),
                 "t.json: " LPFX ".set_current_client_cert_details.issuer: unknown field");
    wf_strbuf_free(&err);
}

/* Istio's virtualInbound http_inspector: filter_disabled or_match of destination_port_range */
static void test_listener_filter_disabled(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c =
        load_text(LFD("{\"or_match\":{\"rules\":[{\"destination_port_range\":{\"start\":80,\"end\":"
                      "81}},{\"not_match\":{\"destination_port_range\":{\"start\":15006,\"end\":"
                      "15007}}}]}}"),
                  &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_lf_pred *p = c->listeners[0].listener_filters[0].disabled;
    assert_non_null(p);
    assert_int_equal(p->kind, WP_LF_PRED_OR);
    assert_int_equal(p->nkids, 2);
    assert_int_equal(p->kids[0].kind, WP_LF_PRED_PORT_RANGE);
    assert_int_equal(p->kids[0].start, 80);
    assert_int_equal(p->kids[0].end, 81);
    assert_int_equal(p->kids[1].kind, WP_LF_PRED_NOT);
    assert_int_equal(p->kids[1].kids[0].start, 15006);
    wp_config_unref(c);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listener_filter_disabled),
        cmocka_unit_test(test_full_snake_case),
        cmocka_unit_test(test_hcm_xfcc),
        cmocka_unit_test(test_camel_case_same_snapshot),
        cmocka_unit_test(test_camel_case_digits),
        cmocka_unit_test(test_hcm_codec_and_h2_options),
        cmocka_unit_test(test_ref_unref),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_route_max_grpc_timeout),
        cmocka_unit_test(test_route_max_stream_duration),
        cmocka_unit_test(test_regex_full_match),
        cmocka_unit_test(test_error_unknown_field),
        cmocka_unit_test(test_error_not_supported_field),
        cmocka_unit_test(test_error_wrong_type),
        cmocka_unit_test(test_error_bad_duration),
        cmocka_unit_test(test_error_bad_regex),
        cmocka_unit_test(test_error_duplicates),
        cmocka_unit_test(test_error_rds_and_filters),
        cmocka_unit_test(test_filter_chains),
        cmocka_unit_test(test_listener_access_log),
        cmocka_unit_test(test_filter_chain_errors),
        cmocka_unit_test(test_error_cluster_rules),
        cmocka_unit_test(test_error_route_rules),
        cmocka_unit_test(test_validate_clusters_explicit),
        cmocka_unit_test(test_syntax_error_and_missing_file),
        cmocka_unit_test(test_dump_shape),
        cmocka_unit_test(test_dump_resource_and_mask),
        cmocka_unit_test(test_dump_errors),
        cmocka_unit_test(test_dump_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
