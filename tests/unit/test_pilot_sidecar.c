/*
 * test_pilot_sidecar.c - pilot/sidecar_scope: which Sidecar applies (workloadSelector, namespace
 * default, the root namespace's default from the book's ch11/sidecar-mesh-wide.yaml), each kind
 * of egress host pattern (same namespace, any namespace, `istio-system`, `~`, a specific
 * host, `*.example.com`), the effect of a scope on CDS, RDS (services and VirtualServices), LDS and
 * EDS, and outboundTrafficPolicy from a Sidecar (REGISTRY_ONLY, ALLOW_ANY over MeshConfig)
 * through pilot/generate.
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
#include "model/store.h"
#include "pilot/cds.h"
#include "pilot/eds.h"
#include "pilot/generate.h"
#include "pilot/lds.h"
#include "pilot/rds.h"
#include "pilot/sidecar_scope.h"

#define BOOK "../shared/corpus/istioinaction/"
#define WEB  "web.a.svc.cluster.local"
#define API  "api.b.svc.cluster.local"

static const char *const mesh_yaml =
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: web, namespace: a}\n"
    "spec: {selector: {app: web}, ports: [{name: http, port: 80}]}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: web-1, namespace: a, labels: {app: web}}\n"
    "spec: {containers: [{name: web}]}\n"
    "status: {podIP: 127.10.1.1}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: api, namespace: b}\n"
    "spec:\n"
    "  selector: {app: api}\n"
    "  ports: [{name: http, port: 80}, {name: http-admin, port: 9090}]\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: api-1, namespace: b, labels: {app: api}}\n"
    "spec: {containers: [{name: api}]}\n"
    "status: {podIP: 127.10.2.1}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: istiod, namespace: istio-system}\n"
    "spec: {selector: {app: istiod}, ports: [{name: http-monitoring, port: 15014}]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: ext, namespace: b}\n"
    "spec:\n"
    "  hosts: [ext.example.com, '*.wild.example.com']\n"
    "  resolution: STATIC\n"
    "  ports: [{number: 80, name: http, protocol: HTTP}]\n"
    "  endpoints: [{address: 10.9.0.1}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: web-from-b, namespace: b}\n"
    "spec:\n"
    "  hosts: [" WEB "]\n"
    "  http: [{route: [{destination: {host: " WEB "}}], timeout: 3s}]\n";

/* The mesh above plus a Sidecar in namespace a with these egress hosts (a YAML flow list). */
static wf_store *with_sidecar(const char *hosts)
{
    char *y = NULL;
    assert_true(asprintf(&y,
                         "%s---\n"
                         "apiVersion: networking.istio.io/v1\n"
                         "kind: Sidecar\n"
                         "metadata: {name: default, namespace: a}\n"
                         "spec: {egress: [{hosts: %s}]}\n",
                         mesh_yaml, hosts) > 0);
    wf_store *s = wf_test_load_store(NULL, y, NULL);
    free(y);
    return s;
}

static wf_scope *scope_of(const wf_store *s, const char *ns, const wf_kvs *labels)
{
    wf_scope *sc = NULL;
    assert_int_equal(wf_scope_build(s, ns, labels, NULL, &sc), 0);
    return sc;
}

static json_t *by_name(json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strcmp(n, name) == 0)
            return v;
    }
    return NULL;
}

/* ---- the patterns ---- */

typedef struct vis {
    const char *ns, *host;
    bool want;
} vis;

static void expect_visible(const char *hosts, const vis *cases, size_t n)
{
    wf_store *s = with_sidecar(hosts);
    wf_scope *sc = scope_of(s, "a", NULL);
    assert_non_null(sc);
    for (size_t i = 0; i < n; i++)
        if (wf_scope_visible(sc, cases[i].ns, cases[i].host) != cases[i].want)
            fail_msg("egress %s: %s/%s should be %s", hosts, cases[i].ns, cases[i].host,
                     cases[i].want ? "visible" : "hidden");
    wf_scope_free(sc);
    wf_store_free(s);
}

static void patterns(void **state)
{
    (void)state;
    const vis same_ns[] = {{"a", WEB, true}, {"b", API, false}, {"istio-system", "x", false}};
    expect_visible("['./*']", same_ns, 3);
    const vis all[] = {{"a", WEB, true}, {"b", API, true}, {"b", "*.wild.example.com", true}};
    expect_visible("['*/*']", all, 3);
    const vis sys[] = {{"istio-system", "istiod.istio-system.svc.cluster.local", true},
                       {"a", WEB, false}};
    expect_visible("['istio-system/*']", sys, 2);
    const vis none[] = {{"a", WEB, false}, {"b", API, false}};
    expect_visible("['~/*']", none, 2);
    const vis one[] = {{"b", API, true},
                       {"a", API, false}, /* the namespace must match too */
                       {"b", "other.b.svc.cluster.local", false}};
    expect_visible("['b/" API "']", one, 3);
    const vis wild[] = {{"b", "ext.example.com", true},
                        {"b", "*.wild.example.com", true}, /* narrower wildcard */
                        {"b", "example.com", false},
                        {"b", API, false}};
    expect_visible("['*/*.example.com']", wild, 4);
    /* a wildcard service host covers a specific import (Istio narrows it) */
    const vis narrow[] = {{"b", "*.wild.example.com", true}, {"b", "ext.example.com", false}};
    expect_visible("['*/api.wild.example.com']", narrow, 2);
    assert_true(wf_scope_visible(NULL, "any", "thing")); /* no scope: everything */
}

/* ---- which Sidecar ---- */

static void selection(void **state)
{
    (void)state;
    const char *const files[] = {BOOK "ch11/sidecar-mesh-wide.yaml", NULL};
    const char *extra = "apiVersion: networking.istio.io/v1\n"
                        "kind: Sidecar\n"
                        "metadata: {name: web-only, namespace: a}\n"
                        "spec:\n"
                        "  workloadSelector: {labels: {app: web}}\n"
                        "  egress: [{hosts: ['./*']}]\n"
                        "---\n"
                        "apiVersion: networking.istio.io/v1\n"
                        "kind: Sidecar\n"
                        "metadata: {name: ns-wide, namespace: a}\n"
                        "spec: {egress: [{hosts: ['b/*']}]}\n";
    wf_store *s = wf_test_load_store(files, extra, NULL);
    wf_kvs web = {.n = 1, .items = &(wf_kv){.key = "app", .value = "web"}};
    wf_kvs other = {.n = 1, .items = &(wf_kv){.key = "app", .value = "other"}};
    wf_scope *sc = scope_of(s, "a", &web);
    assert_string_equal(wf_scope_sidecar(sc)->name, "web-only");
    assert_int_equal(wf_scope_registry_only(sc), -1);
    wf_scope_free(sc);
    sc = scope_of(s, "a", &other);
    assert_string_equal(wf_scope_sidecar(sc)->name, "ns-wide");
    wf_scope_free(sc);
    sc = scope_of(s, "c", &web); /* the root namespace's default */
    assert_string_equal(wf_scope_sidecar(sc)->ns, "istio-system");
    assert_int_equal(wf_scope_registry_only(sc), 1);
    assert_true(wf_scope_visible(sc, "istio-system", "istiod.istio-system.svc.cluster.local"));
    assert_false(wf_scope_visible(sc, "c", "x.c.svc.cluster.local"));
    wf_scope_free(sc);
    wf_store_free(s);
    s = wf_test_load_store(NULL, mesh_yaml, NULL); /* no Sidecar at all: no scope */
    assert_null(scope_of(s, "a", &web));
    wf_store_free(s);
}

/* ---- the generators shrink ---- */

static void generators(void **state)
{
    (void)state;
    wf_store *s = with_sidecar("['./*', 'istio-system/*']");
    wf_scope *sc = scope_of(s, "a", NULL);
    const wf_cds_options co = {.proxy_ns = "a", .scope = sc};
    json_t *cl = wf_cds_sidecar_clusters(s, &co);
    assert_non_null(by_name(cl, "outbound|80||" WEB));
    assert_non_null(by_name(cl, "outbound|15014||istiod.istio-system.svc.cluster.local"));
    assert_null(by_name(cl, "outbound|80||" API));
    assert_null(by_name(cl, "outbound|80||ext.example.com"));
    assert_non_null(by_name(cl, "PassthroughCluster"));
    json_decref(cl);
    /* EDS: the hidden service's assignment is empty, the visible one is not */
    json_t *c = wf_eds_load_assignment(s, "outbound|80||" API, &co);
    assert_int_equal(json_array_size(json_object_get(c, "endpoints")), 0);
    json_decref(c);
    c = wf_eds_load_assignment(s, "outbound|80||" WEB, &co);
    wf_test_expect_str(c, "endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
                       "127.10.1.1");
    json_decref(c);
    json_t *all = wf_eds_sidecar_assignments(s, &co);
    assert_int_equal(json_array_size(all), 2);
    json_decref(all);
    /* LDS: 9090 belonged to api only */
    const wf_lds_options lo = {.proxy_ns = "a", .scope = sc};
    json_t *lds = wf_lds_sidecar_outbound_listeners_opt(s, &lo);
    assert_int_equal(json_array_size(lds), 2);
    assert_non_null(by_name(lds, "0.0.0.0_80"));
    assert_non_null(by_name(lds, "0.0.0.0_15014"));
    json_decref(lds);
    /* RDS: web only, with its default route (the VirtualService in b is not imported) */
    const wf_rds_options ro = {.proxy_ns = "a", .scope = sc};
    json_t *rcs = wf_rds_sidecar_route_configs(s, &ro);
    json_t *vhs = wf_test_json_at(by_name(rcs, "80"), "virtual_hosts");
    assert_int_equal(json_array_size(vhs), 2);
    wf_test_expect_str(json_array_get(vhs, 0), "name", WEB ":80");
    wf_test_expect_str(json_array_get(vhs, 0), "routes.0.name", "default");
    wf_test_expect_str(json_array_get(vhs, 1), "name", "allow_any");
    json_decref(rcs);
    wf_scope_free(sc);
    /* without the scope the VirtualService binds web and api is routed */
    const wf_rds_options all_ro = {.proxy_ns = "a"};
    rcs = wf_rds_sidecar_route_configs(s, &all_ro);
    vhs = wf_test_json_at(by_name(rcs, "80"), "virtual_hosts");
    wf_test_expect_str(json_array_get(vhs, 0), "name", WEB ":80");
    wf_test_expect_str(json_array_get(vhs, 0), "routes.0.route.timeout", "3s");
    assert_int_equal(json_array_size(vhs), 5); /* web, api, ext, *.wild, allow_any */
    json_decref(rcs);
    wf_store_free(s);
}

static void virtual_service_imported(void **state)
{
    (void)state;
    wf_store *s = with_sidecar("['./*', 'b/" WEB "']");
    wf_scope *sc = scope_of(s, "a", NULL);
    const wf_rds_options ro = {.proxy_ns = "a", .scope = sc};
    json_t *rcs = wf_rds_sidecar_route_configs(s, &ro);
    /* b/<web host> imports the VirtualService in b for web; the api service stays hidden */
    json_t *vhs = wf_test_json_at(by_name(rcs, "80"), "virtual_hosts");
    assert_int_equal(json_array_size(vhs), 2);
    wf_test_expect_str(json_array_get(vhs, 0), "routes.0.route.timeout", "3s");
    json_decref(rcs);
    wf_scope_free(sc);
    wf_store_free(s);
}

/* ---- outboundTrafficPolicy through generate ---- */

static wf_meshcfg *mesh_of(const char *yaml)
{
    wf_meshcfg *m = wf_meshcfg_new_default();
    assert_non_null(m);
    char *path = wf_test_temp_file(yaml);
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_file(m, path, &err), 0);
    unlink(path);
    free(path);
    return m;
}

/* The name of the last virtual host of route configuration rc for web-1's sidecar. */
static void expect_catch_all(wf_store *s, const wf_meshcfg *mesh, const char *rc, const char *want,
                             size_t want_vhosts)
{
    wf_pilot_proxy p;
    char err[256] = "";
    char id[] = "web-1.a";
    wf_xds_node node = {.id = id};
    assert_int_equal(wf_pilot_proxy_from_node(&node, s, &p, err, sizeof err), 0);
    const wf_pilot_env env = {.store = s, .mesh = mesh};
    json_t *rcs = wf_pilot_generate(&env, &p, WF_XDS_RDS, NULL);
    json_t *vhs = wf_test_json_at(by_name(rcs, rc), "virtual_hosts");
    assert_int_equal(json_array_size(vhs), want_vhosts);
    wf_test_expect_str(json_array_get(vhs, want_vhosts - 1), "name", want);
    json_decref(rcs);
    json_t *cds = wf_pilot_generate(&env, &p, WF_XDS_CDS, NULL);
    assert_null(by_name(cds, "outbound|80||" API));
    json_decref(cds);
    wf_pilot_proxy_free(&p);
}

static void outbound_policy(void **state)
{
    (void)state;
    const char *const files[] = {BOOK "ch11/sidecar-mesh-wide.yaml", NULL};
    wf_store *s = wf_test_load_store(files, mesh_yaml, NULL);
    /* the root namespace's default: imports istio-system only, REGISTRY_ONLY */
    expect_catch_all(s, NULL, "15014", "block_all", 2);
    wf_store_free(s);
    s = with_sidecar("['./*']");
    char *y = NULL;
    wf_meshcfg *m = mesh_of("outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n");
    expect_catch_all(s, m, "80", "block_all", 2); /* no policy in the Sidecar: MeshConfig's */
    wf_store_free(s);
    assert_true(asprintf(&y,
                         "%s---\n"
                         "apiVersion: networking.istio.io/v1\n"
                         "kind: Sidecar\n"
                         "metadata: {name: default, namespace: a}\n"
                         "spec:\n"
                         "  egress: [{hosts: ['./*']}]\n"
                         "  outboundTrafficPolicy: {mode: ALLOW_ANY}\n",
                         mesh_yaml) > 0);
    s = wf_test_load_store(NULL, y, NULL);
    expect_catch_all(s, m, "80", "allow_any", 2); /* the Sidecar overrides MeshConfig */
    wf_store_free(s);
    wf_meshcfg_free(m);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(patterns),        cmocka_unit_test(selection),
        cmocka_unit_test(generators),      cmocka_unit_test(virtual_service_imported),
        cmocka_unit_test(outbound_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
