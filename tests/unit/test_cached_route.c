/*
 * test_cached_route.c - the connection manager's cached route (proxy/http/cached_route.h): the
 * virtual host by Host (or default_host_for_http_10), the route, the cluster and the stream
 * info's names, chosen once until cleared; an unknown cluster leaves the route but no cluster;
 * the request as route matchers see it.
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

#include "proxy/http/cached_route.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

static const char config_json[] =
    "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
    "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
    "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
    "\",\"stat_prefix\":\"in\",\"http_protocol_options\":{\"accept_http_10\":true,"
    "\"default_host_for_http_10\":\"a.example\"},\"http_filters\":[{\"name\":"
    "\"envoy.filters.http.router\"}],\"route_config\":{\"virtual_hosts\":[{\"name\":\"a\","
    "\"domains\":[\"a.example\"],\"routes\":[{\"name\":\"r1\",\"match\":{\"prefix\":\"/x\"},"
    "\"route\":{\"cluster\":\"c2\"}},{\"name\":\"gone\",\"match\":{\"prefix\":\"/\"},"
    "\"route\":{\"cluster\":\"nowhere\"}}]},{\"name\":\"any\",\"domains\":[\"*\"],\"routes\":[{"
    "\"match\":{\"prefix\":\"/\"},\"direct_response\":{\"status\":200}}]}]}}}]}]}],"
    "\"clusters\":[{\"name\":\"c1\",\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{"
    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":"
    "9000}}}}]}]}},{\"name\":\"c2\",\"load_assignment\":{\"endpoints\":[{\"lb_endpoints\":[{"
    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":"
    "9001}}}}]}]}}]}}";

typedef struct {
    wp_config *cfg;
    wp_worker w;
    wp_dconn d;
    wp_stream *s;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    wf_strbuf err = WF_STRBUF_INIT;
    f->cfg = wf_test_load_bootstrap(config_json, &err);
    if (!f->cfg)
        fail_msg("%s", wf_strbuf_cstr(&err));
    /* the domain index, as the server builds it when it applies a snapshot */
    wp_route_config *rc = f->cfg->listeners[0].chains[0].hcm->route_config;
    assert_int_equal(wp_route_index_build(&f->cfg->arena, rc, &err), 0);
    wf_strbuf_free(&err);
    assert_int_equal(wp_regex_ctx_init(&f->w.rx), 0);
    f->w.rng = 0x9e3779b97f4a7c15ULL;
    f->d.w = &f->w;
    f->d.listener = &f->cfg->listeners[0];
    f->d.chain = &f->cfg->listeners[0].chains[0];
    f->d.hcm = f->d.chain->hcm;
    f->s = calloc(1, sizeof *f->s);
    assert_non_null(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    wp_regex_ctx_free(&f->w.rx);
    wp_config_unref(f->cfg);
    free(f->s);
    free(f);
    return 0;
}

/* A new request on the fixture's stream: method, target, HTTP/1.<minor>, Host (NULL: none). */
static wp_stream *request(fixture *f, const char *target, int minor, const char *host)
{
    wp_stream *s = f->s;
    memset(s, 0, offsetof(wp_stream, next_free));
    s->d = &f->d;
    s->cfg = f->cfg;
    s->cluster = -1;
    s->req.method = (h1_str){"GET", 3};
    s->req.target = (h1_str){target, strlen(target)};
    s->req.version_minor = minor;
    s->req.headers = s->hdrs;
    if (host) {
        s->hdrs[0] = (h1_header){{"Host", 4}, {host, strlen(host)}};
        s->req.nheaders = 1;
    }
    return s;
}

static int cluster_index(const wp_config *c, const char *name)
{
    for (size_t i = 0; i < c->nclusters; i++)
        if (strcmp(c->clusters[i].name, name) == 0)
            return (int)i;
    return -1;
}

static void test_route_and_cluster(void **state)
{
    fixture *f = *state;
    wp_stream *s = request(f, "/x/1", 1, "a.example");
    wp_cached_route_refresh(s);
    assert_true(s->resolved);
    assert_non_null(s->vhost);
    assert_string_equal(s->vhost->name, "a");
    assert_non_null(s->route);
    assert_string_equal(s->si.route_name, "r1");
    assert_int_equal(s->cluster, cluster_index(f->cfg, "c2"));
    assert_string_equal(s->si.upstream_cluster, "c2");
    assert_string_equal(s->si.upstream_cluster_stat, "c2");
    assert_int_equal(s->weighted, -1);

    /* cached: a changed request does not choose again until the cache is cleared */
    s->req.target = (h1_str){"/other", 6};
    wp_cached_route_refresh(s);
    assert_string_equal(s->si.route_name, "r1");
    wp_cached_route_clear(s);
    assert_false(s->resolved);
    assert_null(s->route);
    assert_null(s->vhost);
    assert_int_equal(s->cluster, -1);
    assert_null(s->si.route_name);
    assert_null(s->si.upstream_cluster);
    assert_null(s->si.upstream_cluster_stat);

    /* a route to a cluster that does not exist: the route, no cluster (the router's 503 NC) */
    wp_cached_route_refresh(s);
    assert_string_equal(s->si.route_name, "gone");
    assert_int_equal(s->cluster, -1);
    assert_null(s->si.upstream_cluster);
}

static void test_vhost_by_host(void **state)
{
    fixture *f = *state;
    /* another Host: the "*" virtual host's direct response, no cluster */
    wp_stream *s = request(f, "/x", 1, "b.example");
    wp_cached_route_refresh(s);
    assert_string_equal(s->vhost->name, "any");
    assert_int_equal(s->route->action, WP_ACT_DIRECT);
    assert_null(s->si.route_name); /* unnamed */
    assert_int_equal(s->cluster, -1);
    assert_null(wp_cached_route_default_host(s));

    /* HTTP/1.0 without Host: default_host_for_http_10 chooses the virtual host */
    s = request(f, "/x", 0, NULL);
    assert_string_equal(wp_cached_route_default_host(s), "a.example");
    wp_cached_route_refresh(s);
    assert_string_equal(s->vhost->name, "a");
    assert_string_equal(s->si.route_name, "r1");
    /* with a Host it is the Host's */
    s = request(f, "/x", 0, "b.example");
    assert_null(wp_cached_route_default_host(s));
    wp_cached_route_refresh(s);
    assert_string_equal(s->vhost->name, "any");
}

static void test_request_view(void **state)
{
    fixture *f = *state;
    wp_stream *s = request(f, "/x?q=1", 1, "a.example:8080");
    wp_route_req rq;
    wp_cached_route_request(s, &rq);
    assert_int_equal(rq.method_len, 3);
    assert_memory_equal(rq.method, "GET", 3);
    assert_int_equal(rq.path_len, 6);
    assert_memory_equal(rq.path, "/x?q=1", 6);
    assert_int_equal(rq.authority_len, 14);
    assert_memory_equal(rq.authority, "a.example:8080", 14);
    assert_string_equal(rq.scheme, "http");
    assert_ptr_equal(rq.headers, s->hdrs);
    assert_int_equal(rq.nheaders, 1);
    s = request(f, "/", 1, NULL); /* HTTP/1.1 without Host: an empty authority */
    wp_cached_route_request(s, &rq);
    assert_int_equal(rq.authority_len, 0);
    assert_non_null(rq.authority);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_route_and_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vhost_by_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_view, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
