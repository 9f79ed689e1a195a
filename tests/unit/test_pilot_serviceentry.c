/*
 * test_pilot_serviceentry.c - pilot/serviceentry through the generators: ServiceEntry STATIC
 * with endpoints and with a workloadSelector (WorkloadEntries, Pods) as EDS clusters and
 * assignments, DestinationRule subsets of SE endpoints, DNS as STRICT_DNS (the book's
 * ch5/forum-serviceentry.yaml, loadable by weft-proxy's cluster loader), NONE as ORIGINAL_DST,
 * WorkloadEntries as endpoints of Kubernetes Services, exportTo, SE virtual hosts and listeners
 * (wildcard hosts, VirtualService binding, the book's ch9 headless SE alt names, ch8 gateway VS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/strbuf.h"
#include "harness.h"
#include "model/store.h"
#include "pilot/cds.h"
#include "pilot/eds.h"
#include "pilot/gateway.h"
#include "pilot/lds.h"
#include "pilot/rds.h"
#include "proxy/config/config.h"

#define BOOK "../shared/corpus/istioinaction/"
#define API  "api.internal.example"

/* ---- helpers ---- */

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

static json_t *must(json_t *arr, const char *name)
{
    json_t *v = by_name(arr, name);
    if (!v)
        fail_msg("no resource named %s", name);
    return v;
}

static json_t *clusters(const wf_store *s, const char *ns)
{
    const wf_cds_options o = {.proxy_ns = ns};
    json_t *out = wf_cds_sidecar_clusters(s, &o);
    assert_non_null(out);
    return out;
}

/* "addr:port/weight,..." of the assignment's endpoints, in order. */
static void expect_endpoints(json_t *endpoints, const char *want)
{
    char got[1024] = "";
    size_t len = 0, i;
    json_t *e;
    json_array_foreach(wf_test_json_at(endpoints, "0.lb_endpoints"), i, e)
    {
        int n = snprintf(
            got + len, sizeof got - len, "%s%s:%d/%d", i ? "," : "",
            json_string_value(wf_test_json_at(e, "endpoint.address.socket_address.address")),
            (int)json_integer_value(
                wf_test_json_at(e, "endpoint.address.socket_address.port_value")),
            (int)json_integer_value(json_object_get(e, "load_balancing_weight")));
        assert_true(n > 0 && (size_t)n < sizeof got - len);
        len += (size_t)n;
    }
    if (strcmp(got, want) != 0)
        fail_msg("endpoints %s, want %s", got, want);
}

static void expect_cla(const wf_store *s, const char *ns, const char *name, const char *want)
{
    const wf_cds_options o = {.proxy_ns = ns};
    json_t *c = wf_eds_load_assignment(s, name, &o);
    assert_non_null(c);
    expect_endpoints(json_object_get(c, "endpoints"), want);
    json_decref(c);
}

/* weft-proxy's cluster loader takes cluster c as it is. */
static void expect_proxy_loads(json_t *c)
{
    char *text = json_dumps(c, JSON_COMPACT);
    char *boot = NULL;
    assert_non_null(text);
    assert_true(asprintf(&boot, "{\"static_resources\":{\"clusters\":[%s]}}", text) > 0);
    wf_strbuf err = {0};
    struct wp_config *pc = wf_test_load_bootstrap(boot, &err);
    if (!pc)
        fail_msg("weft-proxy refused the cluster: %s", err.data ? err.data : "?");
    wp_config_unref(pc);
    wf_strbuf_free(&err);
    free(boot);
    free(text);
}

/* ---- STATIC with endpoints, subsets ---- */

static const char *const se_static =
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: api, namespace: shop}\n"
    "spec:\n"
    "  hosts: [" API "]\n"
    "  location: MESH_INTERNAL\n"
    "  resolution: STATIC\n"
    "  ports:\n"
    "  - {number: 8080, name: http, protocol: HTTP}\n"
    "  - {number: 9000, name: grpc, protocol: GRPC, targetPort: 9900}\n"
    "  endpoints:\n"
    "  - {address: 10.0.0.1, labels: {version: v1}}\n"
    "  - {address: 10.0.0.2, ports: {http: 18080}, labels: {version: v2}, weight: 3}\n"
    "  - {address: unix:///var/run/api.sock}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: DestinationRule\n"
    "metadata: {name: api, namespace: shop}\n"
    "spec:\n"
    "  host: " API "\n"
    "  trafficPolicy: {loadBalancer: {simple: RANDOM}}\n"
    "  subsets:\n"
    "  - {name: v1, labels: {version: v1}}\n"
    "  - {name: v2, labels: {version: v2}}\n"
    "  - {name: v3, labels: {version: v3}}\n";

static void static_endpoints(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, se_static, NULL);
    json_t *cl = clusters(s, "shop");
    json_t *c = must(cl, "outbound|8080||" API);
    wf_test_expect_str(c, "type", "EDS");
    wf_test_expect_str(c, "eds_cluster_config.service_name", "outbound|8080||" API);
    wf_test_expect_str(c, "lb_policy", "RANDOM");
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.host", API);
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.name", API);
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.namespace", "shop");
    wf_test_expect_int(c, "metadata.filter_metadata.istio.default_original_port", 8080);
    wf_test_expect_str(c, "metadata.filter_metadata.istio.config",
                       "/apis/networking.istio.io/v1/namespaces/shop/destination-rule/api");
    must(cl, "outbound|8080|v1|" API);
    must(cl, "outbound|9000|v3|" API);
    json_decref(cl);
    /* ports map by name, else targetPort, else number; weights; unix sockets skipped */
    expect_cla(s, "shop", "outbound|8080||" API, "10.0.0.1:8080/1,10.0.0.2:18080/3");
    expect_cla(s, "shop", "outbound|9000||" API, "10.0.0.1:9900/1,10.0.0.2:9900/3");
    expect_cla(s, "shop", "outbound|8080|v2|" API, "10.0.0.2:18080/3");
    expect_cla(s, "shop", "outbound|8080|v3|" API, "");
    const wf_cds_options o = {.proxy_ns = "shop"};
    json_t *c1 = wf_eds_load_assignment(s, "outbound|8080||" API, &o);
    wf_test_expect_int(c1, "endpoints.0.load_balancing_weight", 4);
    wf_test_expect_str(c1, "endpoints.0.lb_endpoints.0.metadata.filter_metadata.istio.workload",
                       ";shop;;;Kubernetes");
    wf_test_expect_str(c1, "endpoints.0.lb_endpoints.0.health_status", "HEALTHY");
    json_decref(c1);
    json_t *all = wf_eds_sidecar_assignments(s, &o);
    assert_int_equal(json_array_size(all), 8); /* 2 ports x (default + 3 subsets) */
    json_decref(all);
    wf_store_free(s);
}

/* ---- STATIC with workloadSelector; WorkloadEntries of Services ---- */

static const char *const workloads =
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: vms, namespace: shop}\n"
    "spec:\n"
    "  hosts: [vm.shop.example]\n"
    "  resolution: STATIC\n"
    "  ports: [{number: 80, name: http, protocol: HTTP, targetPort: 8080}]\n"
    "  workloadSelector: {labels: {app: vm}}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: WorkloadEntry\n"
    "metadata: {name: vm-1, namespace: shop}\n"
    "spec:\n"
    "  address: 10.1.0.1\n"
    "  ports: {http: 9090}\n"
    "  labels: {app: vm, version: v1, service.istio.io/canonical-name: vm}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: WorkloadEntry\n"
    "metadata: {name: vm-2, namespace: shop}\n"
    "spec: {address: 10.1.0.2, labels: {app: vm, version: v2}}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: WorkloadEntry\n"
    "metadata: {name: vm-elsewhere, namespace: other}\n"
    "spec: {address: 10.1.0.9, labels: {app: vm}}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: vm-pod, namespace: shop, labels: {app: vm}}\n"
    "spec: {containers: [{name: c, ports: [{name: http, containerPort: 7070}]}]}\n"
    "status: {podIP: 127.10.0.7}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: legacy, namespace: shop}\n"
    "spec:\n"
    "  selector: {app: vm}\n"
    "  ports:\n"
    "  - {name: http, port: 80, targetPort: 8081}\n"
    "  - {name: admin, port: 81, targetPort: http}\n";

static void workload_selector(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, workloads, NULL);
    /* WorkloadEntries, then Pods; ports[name], else targetPort */
    expect_cla(s, "shop", "outbound|80||vm.shop.example",
               "10.1.0.1:9090/1,10.1.0.2:8080/1,127.10.0.7:7070/1");
    const wf_cds_options o = {.proxy_ns = "shop"};
    json_t *c = wf_eds_load_assignment(s, "outbound|80||vm.shop.example", &o);
    wf_test_expect_str(c, "endpoints.0.lb_endpoints.0.metadata.filter_metadata.istio.workload",
                       "vm-1;shop;vm;;Kubernetes");
    json_decref(c);
    wf_store_free(s);
}

static void workload_entries_of_services(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, workloads, NULL);
    /* the Pod first, then the WorkloadEntries of the Service's namespace */
    expect_cla(s, "shop", "outbound|80||legacy.shop.svc.cluster.local",
               "127.10.0.7:8081/1,10.1.0.1:8081/1,10.1.0.2:8081/1");
    /* named targetPort: the Pod's container port, the WorkloadEntry's ports map */
    expect_cla(s, "shop", "outbound|81||legacy.shop.svc.cluster.local",
               "127.10.0.7:7070/1,10.1.0.1:9090/1");
    wf_store_free(s);
}

/* ---- DNS, NONE ---- */

static void dns_book(void **state)
{
    (void)state;
    const char *const files[] = {BOOK "ch5/forum-serviceentry.yaml", NULL};
    wf_store *s = wf_test_load_store(files, NULL, "istioinaction");
    json_t *cl = clusters(s, "istioinaction");
    const char *name = "outbound|80||jsonplaceholder.typicode.com";
    json_t *c = must(cl, name);
    wf_test_expect_str(c, "type", "STRICT_DNS");
    assert_null(json_object_get(c, "eds_cluster_config"));
    wf_test_expect_str(c, "dns_lookup_family", "V4_ONLY");
    wf_test_expect_str(c, "dns_refresh_rate", "60s");
    wf_test_expect_str(c, "lb_policy", "LEAST_REQUEST");
    wf_test_expect_str(c, "load_assignment.cluster_name", name);
    expect_endpoints(wf_test_json_at(c, "load_assignment.endpoints"),
                     "jsonplaceholder.typicode.com:80/1");
    assert_null(wf_test_json_at(c, "load_assignment.endpoints.0.lb_endpoints.0.health_status"));
    wf_test_expect_str(c, "metadata.filter_metadata.istio.services.0.namespace", "istioinaction");
    expect_proxy_loads(c);
    json_decref(cl);
    /* not an EDS cluster: the empty assignment */
    expect_cla(s, "istioinaction", name, "");
    wf_store_free(s);
}

static const char *const se_dns_none =
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: dns, namespace: shop}\n"
    "spec:\n"
    "  hosts: [db.example.com, '*.wild.example.com']\n"
    "  resolution: DNS\n"
    "  ports: [{number: 5432, name: tcp-pg, protocol: TCP}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: dns-eps, namespace: shop}\n"
    "spec:\n"
    "  hosts: [api.example.com]\n"
    "  resolution: DNS_ROUND_ROBIN\n"
    "  ports: [{number: 443, name: https, protocol: HTTPS}]\n"
    "  endpoints: [{address: us.api.example.com}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: passthrough, namespace: shop}\n"
    "spec:\n"
    "  hosts: [any.example.org]\n"
    "  resolution: NONE\n"
    "  ports: [{number: 80, name: http, protocol: HTTP}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: DestinationRule\n"
    "metadata: {name: any, namespace: shop}\n"
    "spec: {host: any.example.org, trafficPolicy: {loadBalancer: {simple: RANDOM}}}\n";

static void dns_and_none(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, se_dns_none, NULL);
    json_t *cl = clusters(s, "shop");
    json_t *c = must(cl, "outbound|5432||db.example.com");
    expect_endpoints(wf_test_json_at(c, "load_assignment.endpoints"), "db.example.com:5432/1");
    /* a wildcard DNS host without endpoints: nothing to resolve, no cluster (Istio) */
    assert_null(by_name(cl, "outbound|5432||*.wild.example.com"));
    c = must(cl, "outbound|443||api.example.com");
    wf_test_expect_str(c, "type", "LOGICAL_DNS");
    expect_endpoints(wf_test_json_at(c, "load_assignment.endpoints"), "us.api.example.com:443/1");
    c = must(cl, "outbound|80||any.example.org");
    wf_test_expect_str(c, "type", "ORIGINAL_DST");
    wf_test_expect_str(c, "lb_policy", "CLUSTER_PROVIDED");
    assert_null(json_object_get(c, "load_assignment"));
    assert_null(json_object_get(c, "eds_cluster_config"));
    expect_proxy_loads(c);
    expect_proxy_loads(must(cl, "outbound|443||api.example.com"));
    json_decref(cl);
    wf_store_free(s);
}

/* ---- exportTo ---- */

static const char *const exports =
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: private, namespace: a}\n"
    "spec:\n"
    "  hosts: [private.example.com]\n"
    "  exportTo: [.]\n"
    "  resolution: DNS\n"
    "  ports: [{number: 80, name: http, protocol: HTTP}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: to-b, namespace: a}\n"
    "spec:\n"
    "  hosts: [b-only.example.com]\n"
    "  exportTo: [b]\n"
    "  resolution: DNS\n"
    "  ports: [{number: 80, name: http, protocol: HTTP}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: hidden, namespace: a}\n"
    "spec:\n"
    "  hosts: [hidden.example.com]\n"
    "  exportTo: ['~']\n"
    "  resolution: DNS\n"
    "  ports: [{number: 80, name: http, protocol: HTTP}]\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata:\n"
    "  name: local\n"
    "  namespace: a\n"
    "  annotations: {networking.istio.io/exportTo: '., c'}\n"
    "spec: {selector: {app: local}, ports: [{name: http, port: 80}]}\n";

static void export_to(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, exports, NULL);
    static const struct {
        const char *ns, *cluster;
        bool want;
    } cases[] = {
        {"a", "outbound|80||private.example.com", true},
        {"b", "outbound|80||private.example.com", false},
        {"a", "outbound|80||b-only.example.com", false},
        {"b", "outbound|80||b-only.example.com", true},
        {"a", "outbound|80||hidden.example.com", false},
        {"a", "outbound|80||local.a.svc.cluster.local", true},
        {"b", "outbound|80||local.a.svc.cluster.local", false},
        {"c", "outbound|80||local.a.svc.cluster.local", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *cl = clusters(s, cases[i].ns);
        if ((by_name(cl, cases[i].cluster) != NULL) != cases[i].want)
            fail_msg("proxy in %s: %s %s", cases[i].ns, cases[i].cluster,
                     cases[i].want ? "missing" : "visible");
        json_decref(cl);
    }
    /* route configurations follow: no virtual host for what the proxy cannot see */
    const wf_rds_options ro = {.proxy_ns = "b"};
    json_t *rcs = wf_rds_sidecar_route_configs(s, &ro);
    json_t *vhs = wf_test_json_at(json_array_get(rcs, 0), "virtual_hosts");
    assert_int_equal(json_array_size(vhs), 2);
    wf_test_expect_str(json_array_get(vhs, 0), "name", "b-only.example.com:80");
    json_decref(rcs);
    wf_store_free(s);
}

/* ---- routes and listeners for ServiceEntry hosts ---- */

static const char *const se_http =
    "apiVersion: networking.istio.io/v1\n"
    "kind: ServiceEntry\n"
    "metadata: {name: ext, namespace: shop}\n"
    "spec:\n"
    "  hosts: ['*.example.com', svc.example.org]\n"
    "  addresses: [240.0.0.1, 10.2.0.0/16]\n"
    "  resolution: STATIC\n"
    "  ports:\n"
    "  - {number: 8000, name: http, protocol: HTTP}\n"
    "  - {number: 8443, name: https, protocol: HTTPS}\n"
    "  endpoints: [{address: 10.2.0.1, labels: {version: v1}}]\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: ext, namespace: shop}\n"
    "spec:\n"
    "  hosts: [svc.example.org]\n"
    "  http:\n"
    "  - route: [{destination: {host: svc.example.org, subset: v1}}]\n";

static void routes_and_listeners(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(NULL, se_http, NULL);
    const wf_rds_options ro = {.proxy_ns = "shop"};
    json_t *rcs = wf_rds_sidecar_route_configs(s, &ro);
    assert_int_equal(json_array_size(rcs), 1); /* 8443 is HTTPS: no route configuration */
    json_t *rc = json_array_get(rcs, 0);
    wf_test_expect_str(rc, "name", "8000");
    json_t *vhs = json_object_get(rc, "virtual_hosts");
    assert_int_equal(json_array_size(vhs), 3);
    json_t *bound = json_array_get(vhs, 0); /* bound by the VirtualService: first */
    wf_test_expect_str(bound, "name", "svc.example.org:8000");
    wf_test_expect_str(bound, "domains.0", "svc.example.org");
    wf_test_expect_str(bound, "domains.1", "240.0.0.1");
    assert_null(wf_test_json_at(bound, "domains.2"));
    wf_test_expect_str(bound, "routes.0.route.cluster", "outbound|8000|v1|svc.example.org");
    json_t *wild = json_array_get(vhs, 1);
    wf_test_expect_str(wild, "name", "*.example.com:8000");
    wf_test_expect_str(wild, "domains.0", "*.example.com");
    assert_null(wf_test_json_at(wild, "domains.1")); /* the address went to the first vhost */
    wf_test_expect_str(wild, "routes.0.route.cluster", "outbound|8000||*.example.com");
    wf_test_expect_str(json_array_get(vhs, 2), "name", "allow_any");
    json_decref(rcs);
    const wf_lds_options lo = {.proxy_ns = "shop"};
    json_t *lds = wf_lds_sidecar_outbound_listeners_opt(s, &lo);
    assert_int_equal(json_array_size(lds), 2);
    wf_test_expect_str(json_array_get(lds, 0), "name", "0.0.0.0_8000");
    /* the HTTPS port: a TCP listener named by the first address (pilot/tcp.h) */
    wf_test_expect_str(json_array_get(lds, 1), "name", "240.0.0.1_8443");
    json_decref(lds);
    wf_store_free(s);
}

static void headless_alt_names(void **state)
{
    (void)state;
    const char *const files[] = {BOOK "ch9/headless/httpbin-serviceentry.yaml", NULL};
    wf_store *s = wf_test_load_store(files, NULL, NULL);
    const wf_rds_options ro = {.proxy_ns = "istioinaction"};
    json_t *rcs = wf_rds_sidecar_route_configs(s, &ro);
    json_t *vh = wf_test_json_at(json_array_get(rcs, 0), "virtual_hosts.0");
    wf_test_expect_str(vh, "domains.0", "httpbin-headless.istioinaction.svc.cluster.local");
    wf_test_expect_str(vh, "domains.1", "httpbin-headless");
    wf_test_expect_str(vh, "domains.2", "httpbin-headless.istioinaction.svc");
    wf_test_expect_str(vh, "domains.3", "httpbin-headless.istioinaction");
    json_decref(rcs);
    wf_store_free(s);
}

static void gateway_to_se(void **state)
{
    (void)state;
    const char *const files[] = {BOOK "ch8/tracing/thin-httpbin-virtualservice.yaml", NULL};
    wf_store *s = wf_test_load_store(files, NULL, "istioinaction");
    wf_kvs labels = {.n = 1, .items = &(wf_kv){.key = "istio", .value = "ingressgateway"}};
    const wf_gateway_options go = {.proxy_ns = "istio-system", .proxy_labels = &labels};
    json_t *rcs = wf_gateway_route_configs(s, &go);
    json_t *vh = by_name(wf_test_json_at(json_array_get(rcs, 0), "virtual_hosts"),
                         "httpbin.istioinaction.io:80");
    assert_non_null(vh);
    wf_test_expect_str(vh, "routes.0.route.cluster", "outbound|80||httpbin.org");
    json_decref(rcs);
    json_t *cl = clusters(s, "istio-system");
    wf_test_expect_str(must(cl, "outbound|80||httpbin.org"), "type", "STRICT_DNS");
    json_decref(cl);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(static_endpoints),
        cmocka_unit_test(workload_selector),
        cmocka_unit_test(workload_entries_of_services),
        cmocka_unit_test(dns_book),
        cmocka_unit_test(dns_and_none),
        cmocka_unit_test(export_to),
        cmocka_unit_test(routes_and_listeners),
        cmocka_unit_test(headless_alt_names),
        cmocka_unit_test(gateway_to_se),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
