/*
 * test_xds_compose.c - proxy/xds_compose (EDS clusters made static with their assignment,
 * RDS inlined, warming listeners and clusters, errors naming the resource, loader errors
 * traced back to a resource), weft-pilot's output loading through compose and the bootstrap
 * loader, and the loader's dynamic_resources / pipe handling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "harness.h"
#include "pilot/cds.h"
#include "pilot/eds.h"
#include "pilot/generate.h"
#include "pilot/lds.h"
#include "pilot/rds.h"
#include "proxy/bootstrap/bootstrap.h"
#include "proxy/config/config.h"
#include "proxy/bootstrap/xds_compose.h"

#define BOOK "../shared/corpus/istioinaction/"

#define XDS_CLUSTER                                                                                \
    "{\"name\":\"xds-grpc\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","                       \
    "\"load_assignment\":{\"cluster_name\":\"xds-grpc\",\"endpoints\":[{\"lb_endpoints\":[{"       \
    "\"endpoint\":{\"address\":%s}}]}]}}"
#define TCP_ADDR  "{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":15010}}"
#define PIPE_ADDR "{\"pipe\":{\"path\":\"./etc/istio/proxy/XDS\"}}"
#define ADS_DYN                                                                                    \
    "\"dynamic_resources\":{\"ads_config\":{\"api_type\":\"%s\",\"transport_api_version\":"        \
    "\"V3\",\"set_node_on_first_message_only\":true,\"grpc_services\":[{\"envoy_grpc\":{"          \
    "\"cluster_name\":\"xds-grpc\"}}]},\"cds_config\":{\"ads\":{},\"initial_fetch_timeout\":"      \
    "\"0s\",\"resource_api_version\":\"V3\"},\"lds_config\":{\"ads\":{},"                          \
    "\"resource_api_version\":\"V3\"}}"

#define EDS_CLUSTER(name, svc)                                                                     \
    "{\"@type\":\"type.googleapis.com/envoy.config.cluster.v3.Cluster\",\"name\":\"" name          \
    "\",\"type\":\"EDS\",\"eds_cluster_config\":{\"eds_config\":{\"ads\":{},"                      \
    "\"resource_api_version\":\"V3\"},\"service_name\":\"" svc "\"},\"connect_timeout\":\"1s\"}"
#define CLA(name, ip)                                                                              \
    "{\"@type\":\"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment\","           \
    "\"cluster_name\":\"" name "\",\"endpoints\":[{\"locality\":{},\"lb_endpoints\":[{"            \
    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"" ip "\",\"port_value\":"        \
    "8080}},\"health_check_config\":{}},\"health_status\":\"HEALTHY\",\"load_balancing_weight\":"  \
    "1}],\"load_balancing_weight\":1}],\"policy\":{\"overprovisioning_factor\":140}}"
#define RDS_LISTENER(name, port, rc)                                                               \
    "{\"@type\":\"type.googleapis.com/envoy.config.listener.v3.Listener\",\"name\":\"" name        \
    "\",\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":" port "}},"     \
    "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.http_connection_"          \
    "manager\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters."        \
    "network.http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"s\","            \
    "\"rds\":{\"route_config_name\":\"" rc "\",\"config_source\":{\"ads\":{},"                     \
    "\"resource_api_version\":\"V3\"}},\"http_filters\":[{\"name\":\"envoy.filters.http."          \
    "router\"}]}}]}]}"
#define ROUTE(name, cluster)                                                                       \
    "{\"@type\":\"type.googleapis.com/envoy.config.route.v3.RouteConfiguration\",\"name\":\"" name \
    "\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{\"match\":{"           \
    "\"prefix\":\"/\"},\"route\":{\"cluster\":\"" cluster "\"}}]}]}"

/* ---- helpers ---- */

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!j)
        fail_msg("bad test JSON: %s: %s", e.text, text);
    return j;
}

static json_t *base_bootstrap(void)
{
    char buf[4096];
    char cl[1024];
    snprintf(cl, sizeof(cl), XDS_CLUSTER, TCP_ADDR);
    char dyn[1024];
    snprintf(dyn, sizeof(dyn), ADS_DYN, "GRPC");
    snprintf(buf, sizeof(buf),
             "{\"node\":{\"id\":\"p.ns\"},\"static_resources\":{\"clusters\":[%s]},%s}", cl, dyn);
    return parse(buf);
}

/* Adds resource (JSON text) to the set of type t, version ver. */
static void put(wp_xds_resources *r, int t, const char *text, const char *ver)
{
    json_t *res = parse(text);
    const char *name = wp_xds_resource_name(t, res);
    assert_non_null(name);
    if (!r->set[t])
        r->set[t] = json_object();
    json_t *e = json_pack("{s:o,s:s,s:s}", "resource", res, "version_info", ver, "last_updated",
                          "2024-05-01T10:00:00.000Z");
    assert_int_equal(json_object_set_new(r->set[t], name, e), 0);
    r->version[t] = ver;
}

static void res_free(wp_xds_resources *r)
{
    for (int i = 0; i < WF_XDS_NTYPES; i++)
        json_decref(r->set[i]);
}

static wp_config *load(json_t *eff, wf_strbuf *err)
{
    wp_config *c = wp_bootstrap_load(eff, "xds", err);
    if (!c)
        print_message("loader: %s\n", wf_strbuf_cstr(err));
    return c;
}

static json_t *compose_ok(json_t *base, wp_xds_resources *r, wp_xds_dynamic *dyn)
{
    json_t *eff = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = wp_xds_compose(base, r, &eff, dyn, &err, NULL, NULL);
    if (rc != 0)
        fail_msg("compose: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return eff;
}

/* ---- compose ---- */

static void eds_merge(void **state)
{
    (void)state;
    json_t *base = base_bootstrap();
    wp_xds_resources r = {0};
    put(&r, WF_XDS_CDS, EDS_CLUSTER("outbound|80||a", "svc-a"), "c1");
    put(&r, WF_XDS_CDS, EDS_CLUSTER("outbound|80||b", "svc-b"), "c1");
    put(&r, WF_XDS_EDS, CLA("svc-a", "127.10.0.5"), "e1");
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.n_static_clusters, 1);
    assert_int_equal(dyn.eds_names.n, 2);
    assert_string_equal(dyn.eds_names.v[0], "svc-a");
    assert_string_equal(dyn.eds_names.v[1], "svc-b");
    assert_int_equal(dyn.warming_clusters.n, 1);
    assert_string_equal(dyn.warming_clusters.v[0], "outbound|80||b");
    json_t *a = wf_test_json_at(eff, "static_resources.clusters.1");
    wf_test_expect_str(a, "type", "STATIC");
    wf_test_expect_str(a, "load_assignment.cluster_name", "outbound|80||a");
    assert_null(json_object_get(a, "eds_cluster_config"));
    assert_null(wf_test_json_at(a, "load_assignment.@type"));
    /* the input is untouched */
    wf_test_expect_str(wf_test_json_at(r.set[WF_XDS_CDS], "outbound|80||a.resource"), "type",
                       "EDS");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load(eff, &err);
    if (!c)
        fail_msg("weft-proxy refused pilot's resources: %s", wf_strbuf_cstr(&err));
    assert_int_equal(c->nclusters, 3);
    assert_int_equal(c->clusters[1].nendpoints, 1);
    assert_string_equal(c->clusters[1].endpoints[0].addr.text, "127.10.0.5:8080");
    assert_int_equal(c->clusters[2].nendpoints, 0);
    assert_non_null(c->ads);
    /* config dump: active and warming clusters, the endpoint config, CDS version */
    wf_test_expect_str(dyn.dump, "clusters.version_info", "c1");
    wf_test_expect_str(dyn.dump, "clusters.dynamic_active_clusters.0.cluster.name",
                       "outbound|80||a");
    wf_test_expect_str(dyn.dump, "clusters.dynamic_active_clusters.0.cluster.type", "EDS");
    wf_test_expect_str(dyn.dump, "clusters.dynamic_warming_clusters.0.cluster.name",
                       "outbound|80||b");
    wf_test_expect_str(
        dyn.dump, "endpoints.dynamic_endpoint_configs.0.endpoint_config.cluster_name", "svc-a");
    wf_test_expect_str(dyn.dump, "endpoints.dynamic_endpoint_configs.0.version_info", "e1");
    wp_config_unref(c);
    wf_strbuf_free(&err);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    res_free(&r);
    json_decref(base);
}

static void rds_inline_and_warming(void **state)
{
    (void)state;
    json_t *base = base_bootstrap();
    wp_xds_resources r = {0};
    put(&r, WF_XDS_CDS, EDS_CLUSTER("outbound|80||a", "outbound|80||a"), "c1");
    put(&r, WF_XDS_LDS, RDS_LISTENER("l80", "18080", "80"), "l1");
    put(&r, WF_XDS_LDS, RDS_LISTENER("l81", "18081", "81"), "l1");
    put(&r, WF_XDS_RDS, ROUTE("80", "outbound|80||a"), "r1");
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.rds_names.n, 2);
    assert_string_equal(dyn.rds_names.v[0], "80");
    assert_string_equal(dyn.rds_names.v[1], "81");
    assert_int_equal(dyn.warming_listeners.n, 1);
    assert_string_equal(dyn.warming_listeners.v[0], "l81");
    assert_int_equal(dyn.dyn_listeners.n, 1);
    json_t *ls = wf_test_json_at(eff, "static_resources.listeners");
    assert_int_equal(json_array_size(ls), 1);
    json_t *tc = wf_test_json_at(json_array_get(ls, 0), "filter_chains.0.filters.0.typed_config");
    assert_null(json_object_get(tc, "rds"));
    wf_test_expect_str(tc, "route_config.name", "80");
    assert_null(wf_test_json_at(tc, "route_config.@type"));
    /* the received listener still has its rds */
    assert_non_null(wf_test_json_at(r.set[WF_XDS_LDS], "l80.resource.filter_chains.0.filters.0."
                                                       "typed_config.rds"));
    wf_test_expect_str(dyn.dump, "listeners.dynamic_listeners.0.name", "l80");
    assert_non_null(wf_test_json_at(dyn.dump, "listeners.dynamic_listeners.0.active_state"));
    wf_test_expect_str(dyn.dump, "listeners.dynamic_listeners.1.name", "l81");
    wf_test_expect_str(dyn.dump, "listeners.dynamic_listeners.1.warming_state.version_info", "l1");
    wf_test_expect_str(dyn.dump, "routes.dynamic_route_configs.0.route_config.name", "80");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load(eff, &err);
    assert_non_null(c);
    assert_int_equal(c->nlisteners, 1);
    assert_int_equal(c->listeners[0].chains[0].hcm->route_config->vhosts[0].routes[0].cluster, 1);
    wp_config_unref(c);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    /* with placeholder routes (an LDS update's check and bind): l81 is composed with an
     * empty route configuration, and still listed as warming */
    r.placeholder_routes = true;
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 1);
    assert_string_equal(dyn.warming_listeners.v[0], "l81");
    assert_int_equal(dyn.dyn_listeners.n, 2);
    assert_string_equal(dyn.dyn_listeners.v[1], "l81");
    c = load(eff, &err);
    assert_non_null(c);
    assert_int_equal(c->nlisteners, 2);
    assert_string_equal(c->listeners[1].addr.text, "127.0.0.1:18081");
    wp_config_unref(c);
    wf_strbuf_free(&err);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    res_free(&r);
    json_decref(base);
}

static void expect_compose_error(wp_xds_resources *r, int type, const char *name, const char *want)
{
    json_t *base = base_bootstrap();
    json_t *eff = NULL;
    wp_xds_dynamic dyn;
    wf_strbuf err = WF_STRBUF_INIT;
    int bad_type = 99;
    char bad_name[256];
    assert_int_equal(wp_xds_compose(base, r, &eff, &dyn, &err, &bad_type, bad_name), -1);
    assert_null(eff);
    assert_null(dyn.dump);
    assert_string_equal(wf_strbuf_cstr(&err), want);
    assert_int_equal(bad_type, type);
    assert_string_equal(bad_name, name);
    wf_strbuf_free(&err);
    json_decref(base);
}

static void compose_errors(void **state)
{
    (void)state;
    wp_xds_resources r = {0};
    put(&r, WF_XDS_CDS,
        "{\"name\":\"e\",\"type\":\"EDS\",\"eds_cluster_config\":{\"eds_config\":{\"path\":"
        "\"/x\"}}}",
        "1");
    expect_compose_error(&r, WF_XDS_CDS, "e",
                         "cluster 'e': eds_cluster_config.eds_config: only ads is supported "
                         "(weft takes EDS from the aggregated stream)");
    res_free(&r);
    memset(&r, 0, sizeof(r));
    put(&r, WF_XDS_CDS, "{\"name\":\"xds-grpc\",\"type\":\"STATIC\"}", "1");
    expect_compose_error(&r, WF_XDS_CDS, "xds-grpc",
                         "cluster 'xds-grpc': a static cluster with that name exists");
    res_free(&r);
    memset(&r, 0, sizeof(r));
    put(&r, WF_XDS_LDS,
        "{\"name\":\"l\",\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network."
        "http_connection_manager\",\"typed_config\":{\"rds\":{\"route_config_name\":\"80\"}}}]}]}",
        "1");
    expect_compose_error(&r, WF_XDS_LDS, "l",
                         "listener 'l': rds.config_source: only ads is supported (weft takes RDS "
                         "from the aggregated stream)");
    res_free(&r);
}

/* A listener's default_filter_chain takes its route configuration over RDS like the other
 * chains: inlined when it arrived, the listener warming until then; a loader error in it
 * names the route configuration. */
#define RDS_HCM(rc)                                                                                \
    "\"filters\":[{\"name\":\"envoy.filters.network.http_connection_manager\",\"typed_config\":{"  \
    "\"@type\":\"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager."    \
    "v3.HttpConnectionManager\",\"stat_prefix\":\"s_" rc "\",\"rds\":{\"route_config_name\":\"" rc \
    "\",\"config_source\":{\"ads\":{}}},\"http_filters\":[{\"name\":\"envoy.filters.http."         \
    "router\"}]}}]"
#define TWO_CHAIN_LISTENER                                                                         \
    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":"   \
    "18090}},\"filter_chains\":[{\"filter_chain_match\":{\"source_ports\":[1]}," RDS_HCM(          \
        "a") "}],\"default_filter_chain\":{" RDS_HCM("b") "}}"
static void default_chain_rds(void **state)
{
    (void)state;
    json_t *base = base_bootstrap();
    wp_xds_resources r = {0};
    put(&r, WF_XDS_LDS, TWO_CHAIN_LISTENER, "l1");
    put(&r, WF_XDS_RDS, ROUTE("a", "x"), "r1");
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 1); /* "b" has not arrived */
    json_decref(eff);
    wp_xds_dynamic_free(&dyn);
    put(&r, WF_XDS_RDS, ROUTE("b", "y"), "r2");
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 0);
    wf_strbuf err = WF_STRBUF_INIT, reason = WF_STRBUF_INIT;
    wp_config *c = load(eff, &err);
    assert_non_null(c);
    const wp_listener *l = &c->listeners[c->nlisteners - 1];
    assert_int_equal(l->nchains, 1);
    assert_string_equal(l->chains[0].hcm->route_config->name, "a");
    assert_non_null(l->default_chain);
    assert_string_equal(l->default_chain->hcm->route_config->name, "b");
    assert_string_equal(l->default_chain->hcm->route_config->vhosts[0].routes[0].cluster_name, "y");
    wp_config_unref(c);
    json_decref(eff);
    wp_xds_dynamic_free(&dyn);
    /* a bad route configuration in the default chain is named in the NACK */
    put(&r, WF_XDS_RDS,
        "{\"name\":\"b\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"
        "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"x\"},\"decorator\":{}}]}]}",
        "r3");
    eff = compose_ok(base, &r, &dyn);
    wf_strbuf_reset(&err);
    assert_null(load(eff, &err));
    char name[256];
    int t =
        wp_xds_locate_error(&dyn, eff, "xds", wf_strbuf_cstr(&err), name, sizeof(name), &reason);
    assert_int_equal(t, WF_XDS_RDS);
    assert_string_equal(name, "b");
    assert_string_equal(wf_strbuf_cstr(&reason),
                        "virtual_hosts[0].routes[0].decorator: not supported by weft-proxy "
                        "(Envoy's envoy.config.route.v3.Route.decorator)");
    wf_strbuf_free(&err);
    wf_strbuf_free(&reason);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    json_decref(base);
    res_free(&r);
}

/* A loader error in an inlined route configuration names the route configuration; one in an
 * EDS cluster's assignment names the assignment. */
static void locate_errors(void **state)
{
    (void)state;
    json_t *base = base_bootstrap();
    wp_xds_resources r = {0};
    put(&r, WF_XDS_CDS, EDS_CLUSTER("outbound|80||a", "svc-a"), "c1");
    put(&r, WF_XDS_EDS, CLA("svc-a", "not-an-ip"), "e1");
    put(&r, WF_XDS_LDS, RDS_LISTENER("l80", "18080", "80"), "l1");
    put(&r, WF_XDS_RDS,
        "{\"name\":\"80\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"
        "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"x\"},\"decorator\":{}}]}]}",
        "r1");
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    wf_strbuf err = WF_STRBUF_INIT, reason = WF_STRBUF_INIT, msg = WF_STRBUF_INIT;
    assert_null(load(eff, &err));
    char name[256];
    int t =
        wp_xds_locate_error(&dyn, eff, "xds", wf_strbuf_cstr(&err), name, sizeof(name), &reason);
    assert_int_equal(t, WF_XDS_EDS);
    assert_string_equal(name, "svc-a");
    wp_xds_nack_text(t, name, wf_strbuf_cstr(&reason), &msg);
    assert_string_equal(wf_strbuf_cstr(&msg),
                        "Error adding/updating cluster load assignment(s) svc-a: "
                        "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: "
                        "malformed IP address: not-an-ip. Consider setting resolver_name or "
                        "setting cluster type to 'STRICT_DNS' or 'LOGICAL_DNS'");
    /* fix the endpoint: now the route configuration fails */
    json_decref(eff);
    wp_xds_dynamic_free(&dyn);
    put(&r, WF_XDS_EDS, CLA("svc-a", "10.0.0.1"), "e2");
    eff = compose_ok(base, &r, &dyn);
    wf_strbuf_reset(&err);
    wf_strbuf_reset(&reason);
    wf_strbuf_reset(&msg);
    assert_null(load(eff, &err));
    t = wp_xds_locate_error(&dyn, eff, "xds", wf_strbuf_cstr(&err), name, sizeof(name), &reason);
    assert_int_equal(t, WF_XDS_RDS);
    assert_string_equal(name, "80");
    assert_string_equal(wf_strbuf_cstr(&reason),
                        "virtual_hosts[0].routes[0].decorator: not supported by weft-proxy "
                        "(Envoy's envoy.config.route.v3.Route.decorator)");
    wp_xds_nack_text(WF_XDS_LDS, "0.0.0.0_80", "boom", &msg);
    assert_string_equal(wf_strbuf_cstr(&msg), "Error adding/updating listener(s) 0.0.0.0_80: boom");
    wf_strbuf_free(&err);
    wf_strbuf_free(&reason);
    wf_strbuf_free(&msg);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    res_free(&r);
    json_decref(base);
}

/* ---- weft-pilot's resources through compose and the loader ---- */

static void add_all(wp_xds_resources *r, int t, json_t *arr)
{
    assert_non_null(arr);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char *text = json_dumps(json_array_get(arr, i), 0);
        put(r, t, text, "2024-05-01T10:00:00Z/1");
        free(text);
    }
    json_decref(arr);
}

static void pilot_resources_load(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml",
                                        BOOK "ch10/catalog-deployment-v2.yaml",
                                        BOOK "ch10/catalog-virtualservice-subsets-v1-v2.yaml",
                                        BOOK "ch10/catalog-destinationrule-v1-v2.yaml", NULL};
    const char *pods = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: catalog-1\n"
                       "  namespace: istioinaction\n  labels:\n    app: catalog\n"
                       "    version: v1\nstatus:\n  podIP: 127.10.0.5\n  phase: Running\n"
                       "spec:\n  containers:\n  - name: catalog\n    image: x\n";
    wf_store *s = wf_test_load_store(files, pods, "istioinaction");
    wf_cds_options co = {.proxy_ns = "istioinaction"};
    wf_rds_options ro = {.proxy_ns = "istioinaction"};
    wp_xds_resources r = {0};
    add_all(&r, WF_XDS_CDS, wf_cds_sidecar_clusters(s, &co));
    add_all(&r, WF_XDS_LDS, wf_lds_sidecar_outbound_listeners(s));
    add_all(&r, WF_XDS_RDS, wf_rds_sidecar_route_configs(s, &ro));
    add_all(&r, WF_XDS_EDS, wf_eds_sidecar_assignments(s, &co));
    json_t *base = base_bootstrap();
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 0);
    assert_int_equal(dyn.warming_clusters.n, 0);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load(eff, &err);
    assert_non_null(c);
    int pt = wp_config_find_cluster(c, "PassthroughCluster");
    assert_true(pt >= 0);
    assert_true(c->clusters[pt].original_dst);
    assert_true(c->nlisteners >= 1);
    assert_true(c->listeners[0].chains[0].hcm->normalize_path);
    int v1 = wp_config_find_cluster(c, "outbound|80|version-v1|catalog.istioinaction.svc.cluster."
                                       "local");
    assert_true(v1 >= 0);
    assert_int_equal(c->clusters[v1].nendpoints, 1);
    wp_config_unref(c);
    wf_strbuf_free(&err);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    json_decref(base);
    res_free(&r);
    wf_store_free(s);
}

/* ---- the loader: dynamic_resources ---- */

static char *ads_bootstrap(const char *addr, const char *api, const char *extra_cluster)
{
    char cl[1024], dyn[1024];
    snprintf(cl, sizeof(cl), XDS_CLUSTER, addr);
    snprintf(dyn, sizeof(dyn), ADS_DYN, api);
    char *out = NULL;
    assert_true(asprintf(&out, "{\"static_resources\":{\"clusters\":[%s%s%s]},%s}", cl,
                         extra_cluster ? "," : "", extra_cluster ? extra_cluster : "", dyn) > 0);
    return out;
}

static void loader_ads_config(void **state)
{
    (void)state;
    wf_strbuf err = WF_STRBUF_INIT;
    char *text = ads_bootstrap(TCP_ADDR, "GRPC", NULL);
    wp_config *c = wf_test_load_bootstrap(text, &err);
    assert_non_null(c);
    assert_non_null(c->ads);
    assert_int_equal(c->ads->api_type, WP_ADS_GRPC);
    assert_true(c->ads->set_node_on_first_message_only);
    assert_string_equal(c->ads->cluster_name, "xds-grpc");
    assert_int_equal(c->ads->cluster, 0);
    assert_string_equal(c->ads->addr.text, "127.0.0.1:15010");
    assert_null(c->ads->pipe_path);
    assert_int_equal(c->ads->connect_timeout_ms, 1000);
    assert_true(c->ads->cds && c->ads->lds);
    assert_int_equal(c->ads->cds_initial_fetch_timeout_ms, 0);
    assert_int_equal(c->ads->lds_initial_fetch_timeout_ms, 15000);
    wp_config_unref(c);
    free(text);
    text = ads_bootstrap(PIPE_ADDR, "GRPC", NULL);
    c = wf_test_load_bootstrap(text, &err);
    assert_non_null(c);
    assert_string_equal(c->ads->pipe_path, "./etc/istio/proxy/XDS");
    assert_int_equal(c->ads->addr.sa.ss_family, AF_UNIX);
    assert_string_equal(((struct sockaddr_un *)&c->ads->addr.sa)->sun_path,
                        "./etc/istio/proxy/XDS");
    wp_config_unref(c);
    free(text);
    /* no dynamic_resources / an empty one: no ads */
    c = wf_test_load_bootstrap("{\"dynamic_resources\":{}}", &err);
    assert_non_null(c);
    assert_null(c->ads);
    wp_config_unref(c);
    wf_strbuf_free(&err);
}

static void loader_ads_errors(void **state)
{
    (void)state;
    /* DELTA_GRPC (Istio's default) loads: the client speaks DeltaAggregatedResources */
    wf_strbuf derr = WF_STRBUF_INIT;
    char *text = ads_bootstrap(TCP_ADDR, "DELTA_GRPC", NULL);
    wp_config *dc = wf_test_load_bootstrap(text, &derr);
    assert_non_null(dc);
    assert_int_equal(dc->ads->api_type, WP_ADS_DELTA_GRPC);
    wp_config_unref(dc);
    wf_strbuf_free(&derr);
    free(text);
    text = ads_bootstrap(TCP_ADDR, "REST", NULL);
    wf_test_expect_bootstrap_error(
        text, "t.json: dynamic_resources.ads_config.api_type: unsupported value \"REST\"");
    free(text);
    /* a pipe outside the ADS cluster */
    char other[512];
    snprintf(other, sizeof(other), XDS_CLUSTER, PIPE_ADDR);
    memcpy(strstr(other, "xds-grpc"), "app-grpc", 8);
    text = ads_bootstrap(TCP_ADDR, "GRPC", other);
    wf_test_expect_bootstrap_error(
        text, "t.json: static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0]."
              "endpoint.address.pipe: pipe addresses are only supported for the cluster named "
              "by dynamic_resources.ads_config (the xDS connection)");
    free(text);
    wf_test_expect_bootstrap_error(
        "{\"dynamic_resources\":{\"ads_config\":{\"api_type\":\"GRPC\",\"grpc_services\":[{"
        "\"envoy_grpc\":{\"cluster_name\":\"nope\"}}]}}}",
        "t.json: dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name: "
        "envoy.service.discovery.v3.AggregatedDiscoveryService must have a statically defined "
        "non-EDS cluster: 'nope' does not exist, was added via api, or is an EDS cluster");
    wf_test_expect_bootstrap_error(
        "{\"dynamic_resources\":{\"cds_config\":{\"ads\":{}}}}",
        "t.json: dynamic_resources.ads_config: missing required field (cds_config / lds_config "
        "name ads)");
    wf_test_expect_bootstrap_error("{\"dynamic_resources\":{\"cds_config\":{\"path\":\"/x\"}}}",
                                   "t.json: dynamic_resources.cds_config.path: not supported by "
                                   "weft-proxy (Envoy's envoy.config.core.v3.ConfigSource.path)");
    wf_test_expect_bootstrap_error(
        "{\"dynamic_resources\":{\"ads_config\":{\"api_type\":\"GRPC\",\"grpc_services\":[]}}}",
        "t.json: dynamic_resources.ads_config.grpc_services: API configs must have a single gRPC "
        "service specified");
}

/* A listener with two TLS chains (a gateway's HTTPS servers): every chain's route configuration
 * is noted even while the first is missing (one RDS subscription for all); its credentialName
 * secrets are noted, and it waits for them until they are held or expired. */
#define TLS_CHAIN(sni, rc, secret, timeout)                                                        \
    "{\"filter_chain_match\":{\"server_names\":[\"" sni "\"]},\"transport_socket\":{\"name\":"     \
    "\"envoy.transport_sockets.tls\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy."     \
    "extensions.transport_sockets.tls.v3.DownstreamTlsContext\",\"common_tls_context\":{"          \
    "\"tls_certificate_sds_secret_configs\":[{\"name\":\"" secret "\",\"sds_config\":{\"ads\":"    \
    "{}" timeout "}}]}}},\"filters\":[{\"name\":\"envoy.filters.network.http_connection_"          \
    "manager\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters."        \
    "network.http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"s\","            \
    "\"rds\":{\"route_config_name\":\"" rc "\",\"config_source\":{\"ads\":{}}},"                   \
    "\"http_filters\":[{\"name\":\"envoy.filters.http.router\"}]}}]}"

static void tls_chains_rds_and_secrets(void **state)
{
    (void)state;
    json_t *base = base_bootstrap();
    wp_xds_resources r = {0};
    put(&r, WF_XDS_CDS, EDS_CLUSTER("outbound|80||a", "outbound|80||a"), "c1");
    put(&r, WF_XDS_LDS,
        "{\"@type\":\"type.googleapis.com/envoy.config.listener.v3.Listener\",\"name\":\"l443\","
        "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":18443}},"
        "\"filter_chains\":[" TLS_CHAIN("a.example", "https.a", "kubernetes://a", "") "," TLS_CHAIN(
            "b.example", "https.b", "kubernetes://b", ",\"initial_fetch_timeout\":\"2.5s\"") "]}",
        "l1");
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.rds_names.n, 2);
    assert_string_equal(dyn.rds_names.v[0], "https.a");
    assert_string_equal(dyn.rds_names.v[1], "https.b");
    assert_int_equal(dyn.sds_names.n, 2);
    assert_string_equal(dyn.sds_names.v[0], "kubernetes://a");
    assert_string_equal(dyn.sds_names.v[1], "kubernetes://b");
    assert_int_equal(dyn.sds_fetch_ms, 15000); /* the longest: Envoy's default for "a" */
    assert_int_equal(dyn.warming_listeners.n, 1);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    /* routes here, secrets not: still warming */
    put(&r, WF_XDS_RDS, ROUTE("https.a", "outbound|80||a"), "r1");
    put(&r, WF_XDS_RDS, ROUTE("https.b", "outbound|80||a"), "r1");
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 1);
    assert_int_equal(dyn.dyn_listeners.n, 0);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    /* "a" held, "b" expired: the listener serves */
    put(&r, WF_XDS_SDS,
        "{\"name\":\"kubernetes://a\",\"tls_certificate\":{\"certificate_chain\":{"
        "\"inline_string\":\"x\"}}}",
        "s1");
    json_t *expired = json_pack("{s:b}", "kubernetes://b", 1);
    r.sds_expired = expired;
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 0);
    assert_int_equal(dyn.dyn_listeners.n, 1);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    json_decref(expired);
    res_free(&r);
    json_decref(base);
}

#define L443(chains)                                                                               \
    "{\"@type\":\"type.googleapis.com/envoy.config.listener.v3.Listener\",\"name\":\"l443\","      \
    "\"address\":{\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":18443}},"           \
    "\"filter_chains\":[" chains "]}"

/* Envoy's listener manager keeps a listener's serving version active while its update warms:
 * compose puts the older version (lds_active) in its place, lists the name warming and
 * updating, dumps both states, and serves the update once its secret is there. */
static void update_warming_keeps_older(void **state)
{
    (void)state;
    json_t *base = base_bootstrap();
    wp_xds_resources r = {0};
    put(&r, WF_XDS_CDS, EDS_CLUSTER("outbound|80||a", "outbound|80||a"), "c1");
    put(&r, WF_XDS_RDS, ROUTE("https.a", "outbound|80||a"), "r1");
    put(&r, WF_XDS_RDS, ROUTE("https.b", "outbound|80||a"), "r1");
    put(&r, WF_XDS_SDS,
        "{\"name\":\"kubernetes://a\",\"tls_certificate\":{\"certificate_chain\":{"
        "\"inline_string\":\"x\"}}}",
        "s1");
    put(&r, WF_XDS_LDS, L443(TLS_CHAIN("a.example", "https.a", "kubernetes://a", "")), "l1");
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 0);
    assert_int_equal(dyn.dyn_listeners.n, 1);
    assert_non_null(dyn.lds_served);
    json_t *active = json_incref(dyn.lds_served); /* what the client keeps */
    json_t *v1 = json_incref(json_object_get(json_object_get(active, "l443"), "resource"));
    assert_non_null(v1);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);

    /* the update adds a chain whose secret has not come: the older version keeps serving */
    put(&r, WF_XDS_LDS,
        L443(TLS_CHAIN("a.example", "https.a", "kubernetes://a",
                       "") "," TLS_CHAIN("b.example", "https.b", "kubernetes://b", "")),
        "l2");
    r.lds_active = active;
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 1);
    assert_int_equal(dyn.updating_listeners.n, 1);
    assert_string_equal(dyn.updating_listeners.v[0], "l443");
    assert_int_equal(dyn.dyn_listeners.n, 1);
    assert_int_equal(dyn.sds_names.n, 2); /* the update's secret is still subscribed */
    json_t *served = json_object_get(json_object_get(dyn.lds_served, "l443"), "resource");
    assert_true(json_equal(served, v1)); /* the older version, one chain */
    json_t *l =
        json_array_get(json_object_get(json_object_get(eff, "static_resources"), "listeners"),
                       dyn.n_static_listeners);
    assert_int_equal(json_array_size(json_object_get(l, "filter_chains")), 1);
    json_t *dl = json_array_get(
        json_object_get(json_object_get(dyn.dump, "listeners"), "dynamic_listeners"), 0);
    assert_non_null(json_object_get(dl, "active_state"));
    assert_non_null(json_object_get(dl, "warming_state"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(dl, "active_state"), "version_info")),
        "l1");
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);

    /* placeholder mode (the socket hold): updating, composed with placeholders */
    r.placeholder_routes = true;
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.updating_listeners.n, 1);
    assert_null(dyn.lds_served);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    r.placeholder_routes = false;

    /* without an older version (a new listener) nothing serves meanwhile */
    r.lds_active = NULL;
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 1);
    assert_int_equal(dyn.updating_listeners.n, 0);
    assert_int_equal(dyn.dyn_listeners.n, 0);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);

    /* the secret arrives: the update serves, two chains */
    r.lds_active = active;
    put(&r, WF_XDS_SDS,
        "{\"name\":\"kubernetes://b\",\"tls_certificate\":{\"certificate_chain\":{"
        "\"inline_string\":\"x\"}}}",
        "s2");
    eff = compose_ok(base, &r, &dyn);
    assert_int_equal(dyn.warming_listeners.n, 0);
    assert_int_equal(dyn.updating_listeners.n, 0);
    l = json_array_get(json_object_get(json_object_get(eff, "static_resources"), "listeners"),
                       dyn.n_static_listeners);
    assert_int_equal(json_array_size(json_object_get(l, "filter_chains")), 2);
    assert_false(
        json_equal(json_object_get(json_object_get(dyn.lds_served, "l443"), "resource"), v1));
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    json_decref(v1);
    json_decref(active);
    res_free(&r);
    json_decref(base);
}

/* A captured sidecar's resources (pilot/capture.h: virtualOutbound, bind_to_port false,
 * virtualInbound, ORIGINAL_DST inbound clusters) load into weft-proxy. */
static void pilot_capture_resources_load(void **state)
{
    (void)state;
    static const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
    const char *pods = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: catalog-1\n"
                       "  namespace: istioinaction\n  labels:\n    app: catalog\n"
                       "status:\n  podIP: 10.10.0.5\n  phase: Running\n"
                       "spec:\n  containers:\n  - name: catalog\n    image: x\n"
                       "    ports: [{name: http, containerPort: 3000}]\n";
    wf_store *s = wf_test_load_store(files, pods, "istioinaction");
    json_t *md = json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT");
    char id[] = "catalog-1.istioinaction", perr[256] = "";
    wf_xds_node node = {.id = id, .metadata = md};
    wf_pilot_proxy p;
    assert_int_equal(wf_pilot_proxy_from_node(&node, s, &p, perr, sizeof perr), 0);
    json_decref(md);
    assert_true(p.captured);
    wf_pilot_env env = {.store = s};
    wp_xds_resources r = {0};
    add_all(&r, WF_XDS_CDS, wf_pilot_generate(&env, &p, WF_XDS_CDS, NULL));
    add_all(&r, WF_XDS_LDS, wf_pilot_generate(&env, &p, WF_XDS_LDS, NULL));
    add_all(&r, WF_XDS_RDS, wf_pilot_generate(&env, &p, WF_XDS_RDS, NULL));
    add_all(&r, WF_XDS_EDS, wf_pilot_generate(&env, &p, WF_XDS_EDS, NULL));
    json_t *base = base_bootstrap();
    wp_xds_dynamic dyn;
    json_t *eff = compose_ok(base, &r, &dyn);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = load(eff, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    const wp_listener *vo = NULL, *vi = NULL, *l80 = NULL;
    for (size_t i = 0; i < c->nlisteners; i++) {
        const wp_listener *l = &c->listeners[i];
        if (!strcmp(l->name, "virtualOutbound"))
            vo = l;
        else if (!strcmp(l->name, "virtualInbound"))
            vi = l;
        else if (!strcmp(l->name, "0.0.0.0_80"))
            l80 = l;
    }
    assert_non_null(vo);
    assert_non_null(vi);
    assert_non_null(l80);
    assert_true(vo->use_original_dst && vo->bind_to_port);
    assert_false(l80->bind_to_port);
    assert_true(vi->nlistener_filters >= 1);
    int in = wp_config_find_cluster(c, "inbound|3000||");
    int ip = wp_config_find_cluster(c, "InboundPassthroughCluster");
    assert_true(in >= 0 && ip >= 0);
    assert_true(c->clusters[in].original_dst && c->clusters[ip].original_dst);
    assert_string_equal(c->clusters[ip].bind_source->text, "127.0.0.6:0");
    wp_config_unref(c);
    wf_strbuf_free(&err);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    json_decref(base);
    res_free(&r);
    wf_pilot_proxy_free(&p);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eds_merge),
        cmocka_unit_test(rds_inline_and_warming),
        cmocka_unit_test(compose_errors),
        cmocka_unit_test(locate_errors),
        cmocka_unit_test(default_chain_rds),
        cmocka_unit_test(pilot_resources_load),
        cmocka_unit_test(pilot_capture_resources_load),
        cmocka_unit_test(loader_ads_config),
        cmocka_unit_test(loader_ads_errors),
        cmocka_unit_test(tls_chains_rds_and_secrets),
        cmocka_unit_test(update_warming_keeps_older),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
