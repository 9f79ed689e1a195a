/*
 * test_pilot_rds.c - pilot/rds: a sidecar's outbound route configurations from the book's
 * manifests (../shared/corpus/istioinaction/) and small inline VirtualServices: per-port
 * configurations, virtual host names and domains, the default route and Istio's default
 * retry policy, weighted subset routes, retries/timeout mapping, fault, mirror, rewrite,
 * redirect, headers, matches.
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
#include "model/store.h"
#include "pilot/rds.h"

#define BOOK      "../shared/corpus/istioinaction/"
#define CATALOG   "catalog.istioinaction.svc.cluster.local"
#define BACKEND   "simple-backend.istioinaction.svc.cluster.local"
#define RETRY_ON  "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
#define VS_PREFIX "/apis/networking.istio.io/v1/namespaces/istioinaction/virtual-service/"

/* ---- helpers ---- */

static json_t *routes(const wf_store *s, const char *proxy_ns)
{
    wf_rds_options opt = {.proxy_ns = proxy_ns};
    json_t *out = wf_rds_sidecar_route_configs(s, &opt);
    assert_non_null(out);
    assert_true(json_is_array(out));
    return out;
}

/* The virtual host named name in route configuration rc. */
static json_t *vhost(json_t *rc, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(rc, "virtual_hosts"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    fail_msg("no virtual host %s", name);
    return NULL;
}

/* Domains of v joined with spaces. */
static const char *domains(json_t *v, char *buf, size_t len)
{
    size_t i, off = 0;
    json_t *d;
    buf[0] = 0;
    json_array_foreach(json_object_get(v, "domains"), i, d)
    {
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? " " : "", json_string_value(d));
    }
    return buf;
}

static const char *const catalog_files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
static const char *const backend_files[] = {BOOK "ch6/simple-backend.yaml", NULL};

/* ---- the book's catalog, no VirtualService ---- */

static void catalog_default_route(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, NULL, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    assert_int_equal(json_array_size(out), 1);
    json_t *rc = json_array_get(out, 0);
    wf_test_expect_str(rc, "@type", "type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
    wf_test_expect_str(rc, "name", "80");
    assert_true(json_is_false(json_object_get(rc, "validate_clusters")));
    assert_true(json_is_true(json_object_get(rc, "ignore_port_in_host_matching")));
    assert_int_equal(json_array_size(json_object_get(rc, "virtual_hosts")), 2);
    json_t *v = json_array_get(json_object_get(rc, "virtual_hosts"), 0);
    wf_test_expect_str(v, "name", CATALOG ":80");
    char buf[512];
    assert_string_equal(domains(v, buf, sizeof buf),
                        CATALOG " catalog catalog.istioinaction.svc catalog.istioinaction");
    assert_true(json_is_true(json_object_get(v, "include_request_attempt_count")));
    assert_int_equal(json_array_size(json_object_get(v, "routes")), 1);
    json_t *r = wf_test_json_at(v, "routes.0");
    wf_test_expect_str(r, "name", "default");
    wf_test_expect_str(r, "match.prefix", "/");
    assert_null(wf_test_json_at(r, "match.case_sensitive"));
    wf_test_expect_str(r, "route.cluster", "outbound|80||" CATALOG);
    wf_test_expect_str(r, "route.timeout", "0s");
    /* B034: istiod's setTimeout(nil) writes max_grpc_timeout 0s (grpc-timeout uncapped) */
    wf_test_expect_str(r, "route.max_grpc_timeout", "0s");
    wf_test_expect_str(r, "route.retry_policy.retry_on", RETRY_ON);
    wf_test_expect_int(r, "route.retry_policy.num_retries", 2);
    wf_test_expect_str(r, "route.retry_policy.retry_host_predicate.0.name",
                       "envoy.retry_host_predicates.previous_hosts");
    wf_test_expect_str(r, "route.retry_policy.host_selection_retry_max_attempts", "5");
    assert_null(
        wf_test_json_at(r, "route.retry_policy.retriable_status_codes")); /* empty since 1.24 */
    assert_null(wf_test_json_at(r, "metadata"));
    json_t *any = json_array_get(json_object_get(rc, "virtual_hosts"), 1);
    wf_test_expect_str(any, "name", "allow_any");
    wf_test_expect_str(any, "domains.0", "*");
    wf_test_expect_str(any, "routes.0.name", "allow_any");
    wf_test_expect_str(any, "routes.0.route.cluster", "PassthroughCluster");
    wf_test_expect_str(any, "routes.0.route.timeout", "0s");
    wf_test_expect_str(any, "routes.0.route.max_grpc_timeout", "0s");
    assert_null(wf_test_json_at(any, "routes.0.route.retry_policy"));
    json_decref(out);
    wf_store_free(s);
}

static void other_namespace_and_options(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, NULL, "istioinaction");
    wf_rds_options opt = {.proxy_ns = "default", .registry_only = true, .port_in_domains = true};
    json_t *out = wf_rds_sidecar_route_configs(s, &opt);
    assert_non_null(out);
    json_t *rc = json_array_get(out, 0);
    assert_null(json_object_get(rc, "ignore_port_in_host_matching"));
    char buf[512];
    assert_string_equal(domains(vhost(rc, CATALOG ":80"), buf, sizeof buf),
                        CATALOG " " CATALOG ":80 catalog.istioinaction catalog.istioinaction:80 "
                                "catalog.istioinaction.svc catalog.istioinaction.svc:80");
    json_t *block = vhost(rc, "block_all");
    wf_test_expect_int(block, "routes.0.direct_response.status", 502);
    wf_test_expect_str(block, "routes.0.name", "block_all");
    json_decref(out);
    /* NULL options: no proxy namespace, defaults */
    out = wf_rds_sidecar_route_configs(s, NULL);
    assert_non_null(out);
    assert_string_equal(domains(vhost(json_array_get(out, 0), CATALOG ":80"), buf, sizeof buf),
                        CATALOG " catalog.istioinaction catalog.istioinaction.svc");
    json_decref(out);
    assert_null(wf_rds_sidecar_route_configs(NULL, NULL));
    wf_store_free(s);
}

static const char ports_yaml[] = "apiVersion: v1\n"
                                 "kind: Service\n"
                                 "metadata: {name: reviews, namespace: default}\n"
                                 "spec:\n"
                                 "  clusterIP: 10.96.0.7\n"
                                 "  ports:\n"
                                 "  - {name: http, port: 9080}\n"
                                 "  - {name: tcp-db, port: 5432}\n"
                                 "  - {name: dns, port: 53, protocol: UDP}\n"
                                 "  - {port: 3306}\n"
                                 "  - {name: grpc-api, port: 80}\n";

static void ports_and_vip(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, ports_yaml, "istioinaction");
    json_t *out = routes(s, "default");
    assert_int_equal(json_array_size(out), 2); /* 80 and 9080; tcp, UDP, 3306 skipped */
    wf_test_expect_str(json_array_get(out, 0), "name", "80");
    wf_test_expect_str(json_array_get(out, 1), "name", "9080");
    json_t *rc80 = json_array_get(out, 0);
    assert_int_equal(json_array_size(json_object_get(rc80, "virtual_hosts")), 3);
    char buf[512];
    assert_string_equal(
        domains(vhost(rc80, "reviews.default.svc.cluster.local:80"), buf, sizeof buf),
        "reviews.default.svc.cluster.local reviews reviews.default.svc reviews.default "
        "10.96.0.7");
    wf_test_expect_str(vhost(json_array_get(out, 1), "reviews.default.svc.cluster.local:9080"),
                       "routes.0.route.cluster",
                       "outbound|9080||reviews.default.svc.cluster.local");
    json_decref(out);
    wf_store_free(s);
}

/* ---- VirtualServices ---- */

/* The book's ch10 VirtualService binds only the catalog-gateway: not the sidecar. */
static void gateway_vs_not_applied(void **state)
{
    const char *const files[] = {BOOK "services/catalog/kubernetes/catalog.yaml",
                                 BOOK "ch10/catalog-virtualservice-subsets-v1-v2.yaml", NULL};
    wf_store *s = wf_test_load_store(files, NULL, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    wf_test_expect_str(vhost(json_array_get(out, 0), CATALOG ":80"), "routes.0.name", "default");
    json_decref(out);
    wf_store_free(s);
}

static const char weighted_yaml[] = "apiVersion: networking.istio.io/v1\n"
                                    "kind: VirtualService\n"
                                    "metadata: {name: catalog-v1-v2}\n"
                                    "spec:\n"
                                    "  hosts: [catalog]\n"
                                    "  http:\n"
                                    "  - route:\n"
                                    "    - destination: {host: catalog, subset: version-v1}\n"
                                    "      weight: 20\n"
                                    "    - destination: {host: catalog, subset: version-v2}\n"
                                    "      weight: 80\n"
                                    "    - destination: {host: catalog, subset: v3}\n"
                                    "      weight: 0\n";

static void weighted_subsets(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, weighted_yaml, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    json_t *v = vhost(json_array_get(out, 0), CATALOG ":80");
    assert_int_equal(json_array_size(json_object_get(v, "routes")), 1);
    json_t *r = wf_test_json_at(v, "routes.0");
    wf_test_expect_str(r, "match.prefix", "/");
    assert_null(wf_test_json_at(r, "route.cluster"));
    json_t *wc = wf_test_json_at(r, "route.weighted_clusters.clusters");
    assert_int_equal(json_array_size(wc), 2); /* zero weight dropped */
    wf_test_expect_str(wc, "0.name", "outbound|80|version-v1|" CATALOG);
    wf_test_expect_int(wc, "0.weight", 20);
    wf_test_expect_str(wc, "1.name", "outbound|80|version-v2|" CATALOG);
    wf_test_expect_int(wc, "1.weight", 80);
    wf_test_expect_str(r, "route.timeout", "0s");
    wf_test_expect_str(r, "route.max_grpc_timeout", "0s"); /* a VS without timeout */
    wf_test_expect_str(r, "route.retry_policy.retry_on", RETRY_ON);
    wf_test_expect_str(r, "metadata.filter_metadata.istio.config", VS_PREFIX "catalog-v1-v2");
    assert_null(json_object_get(r, "name"));
    json_decref(out);
    wf_store_free(s);
}

static const char *backend_vs(const char *file)
{
    static char path[256];
    snprintf(path, sizeof path, BOOK "ch6/%s", file);
    return path;
}

static json_t *backend_route(const char *file, wf_store **sp)
{
    const char *files[] = {BOOK "ch6/simple-backend.yaml", backend_vs(file), NULL};
    *sp = wf_test_load_store(files, NULL, "istioinaction");
    json_t *out = routes(*sp, "istioinaction");
    json_t *r =
        json_incref(wf_test_json_at(vhost(json_array_get(out, 0), BACKEND ":80"), "routes.0"));
    assert_non_null(r);
    json_decref(out);
    return r;
}

static void book_retries_and_timeout(void **state)
{
    wf_store *s;
    json_t *r = backend_route("simple-backend-vs-retry-500.yaml", &s);
    wf_test_expect_str(r, "route.cluster", "outbound|80||" BACKEND);
    wf_test_expect_str(r, "route.retry_policy.retry_on", "5xx");
    wf_test_expect_int(r, "route.retry_policy.num_retries", 2);
    wf_test_expect_str(r, "route.retry_policy.host_selection_retry_max_attempts", "5");
    wf_test_expect_str(r, "metadata.filter_metadata.istio.config", VS_PREFIX "simple-backend-vs");
    json_decref(r);
    wf_store_free(s);

    r = backend_route("simple-service-disable-retry.yaml", &s); /* attempts: 0 */
    assert_non_null(json_object_get(r, "route"));
    assert_null(wf_test_json_at(r, "route.retry_policy"));
    json_decref(r);
    wf_store_free(s);

    r = backend_route("simple-backend-vs-timeout.yaml", &s);
    wf_test_expect_str(r, "route.timeout", "0.500s");
    wf_test_expect_str(r, "route.max_grpc_timeout", "0.500s"); /* = the VS timeout (B034) */
    wf_test_expect_str(r, "route.retry_policy.retry_on", RETRY_ON);
    json_decref(r);
    wf_store_free(s);
}

static const char retry_yaml[] =
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: r}\n"
    "spec:\n"
    "  hosts: [simple-backend]\n"
    "  http:\n"
    "  - route: [{destination: {host: simple-backend}}]\n"
    "    timeout: 2s\n"
    "    retries: {attempts: 3, perTryTimeout: 0.25s, retryOn: 'gateway-error, 503,409'}\n";

static void retry_on_codes(void **state)
{
    wf_store *s = wf_test_load_store(backend_files, retry_yaml, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    json_t *r = wf_test_json_at(vhost(json_array_get(out, 0), BACKEND ":80"), "routes.0");
    wf_test_expect_str(r, "route.timeout", "2s");
    wf_test_expect_str(r, "route.max_grpc_timeout", "2s");
    wf_test_expect_str(r, "route.retry_policy.retry_on", "gateway-error,retriable-status-codes");
    wf_test_expect_int(r, "route.retry_policy.num_retries", 3);
    wf_test_expect_str(r, "route.retry_policy.per_try_timeout", "0.250s");
    wf_test_expect_int(r, "route.retry_policy.retriable_status_codes.0", 503);
    wf_test_expect_int(r, "route.retry_policy.retriable_status_codes.1", 409);
    json_decref(out);
    wf_store_free(s);
}

/* Istio's translateFault: abort.grpcStatus by name (grpc.SupportedGRPCStatus) becomes Envoy's
 * abort.grpc_status, with the percentage as for httpStatus. */
static void fault_grpc_status(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: networking.istio.io/v1\n"
        "kind: VirtualService\n"
        "metadata: {name: g}\n"
        "spec:\n"
        "  hosts: [catalog.istioinaction.svc.cluster.local]\n"
        "  http:\n"
        "  - fault: {abort: {grpcStatus: UNAVAILABLE, percentage: {value: 20}}}\n"
        "    route: [{destination: {host: catalog}}]\n";
    wf_store *s = wf_test_load_store(catalog_files, yaml, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    json_t *r =
        json_array_get(json_object_get(vhost(json_array_get(out, 0), CATALOG ":80"), "routes"), 0);
    json_t *f =
        json_object_get(json_object_get(r, "typed_per_filter_config"), "envoy.filters.http.fault");
    wf_test_expect_int(f, "abort.grpc_status", 14);
    assert_null(json_object_get(json_object_get(f, "abort"), "http_status"));
    wf_test_expect_int(f, "abort.percentage.numerator", 200000);
    json_decref(out);
    wf_store_free(s);
}

static const char full_yaml[] =
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: full}\n"
    "spec:\n"
    "  hosts: [catalog.istioinaction.svc.cluster.local]\n"
    "  http:\n"
    "  - name: api\n"
    "    match:\n"
    "    - name: exact\n"
    "      uri: {exact: /items}\n"
    "      method: {exact: GET}\n"
    "      headers: {x-b: {prefix: ''}, x-a: {regex: 'v[12]'}}\n"
    "      queryParams: {q: {exact: '1'}}\n"
    "      withoutHeaders: {x-no: {exact: foo}, x-gone: {prefix: ''}}\n"
    "    - uri: {prefix: /api}\n"
    "      port: 8080\n"
    "    - uri: {regex: '/v[0-9]+/.*'}\n"
    "      ignoreUriCase: true\n"
    "    rewrite: {uri: /, authority: new.host}\n"
    "    headers:\n"
    "      request: {set: {x-z: '1', x-y: '2'}, add: {x-add: a}, remove: [x-rm]}\n"
    "      response: {remove: [server]}\n"
    "    fault:\n"
    "      delay: {fixedDelay: 5s, percentage: {value: 50}}\n"
    "      abort: {httpStatus: 500, percentage: {value: 1.5}}\n"
    "    mirror: {host: catalog, subset: version-v2}\n"
    "    mirrorPercentage: {value: 25}\n"
    "    route: [{destination: {host: catalog, port: {number: 80}}}]\n"
    "  - match: [{uri: {prefix: /old}}]\n"
    "    redirect: {uri: /new, authority: other, redirectCode: 302}\n"
    "  - route: [{destination: {host: catalog, subset: v9}}]\n"
    "    headers:\n"
    "      request: {set: {host: set.example, x-k: v}, remove: [':authority', x-r]}\n"
    "      response: {set: {host: r.example, x-s: w}}\n"
    "  - route: [{destination: {host: never}}]\n";

static void full_route(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, full_yaml, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    json_t *v = vhost(json_array_get(out, 0), CATALOG ":80");
    json_t *rs = json_object_get(v, "routes");
    assert_int_equal(json_array_size(rs), 4); /* port 8080 match skipped; stop at catch-all */
    json_t *r = json_array_get(rs, 0);
    wf_test_expect_str(r, "name", "api.exact");
    wf_test_expect_str(r, "match.path", "/items");
    assert_true(json_is_true(wf_test_json_at(r, "match.case_sensitive")));
    wf_test_expect_str(r, "match.headers.0.name", "x-a");
    wf_test_expect_str(r, "match.headers.0.string_match.safe_regex.regex", "v[12]");
    wf_test_expect_str(r, "match.headers.1.name", "x-b");
    assert_true(json_is_true(wf_test_json_at(r, "match.headers.1.present_match")));
    /* withoutHeaders (after the headers, sorted): inverted; with a value, an absent header
     * counts as "" (istiod's treat_missing_header_as_empty) */
    wf_test_expect_str(r, "match.headers.2.name", "x-gone");
    assert_true(json_is_true(wf_test_json_at(r, "match.headers.2.invert_match")));
    assert_null(wf_test_json_at(r, "match.headers.2.treat_missing_header_as_empty"));
    wf_test_expect_str(r, "match.headers.3.name", "x-no");
    assert_true(json_is_true(wf_test_json_at(r, "match.headers.3.treat_missing_header_as_empty")));
    wf_test_expect_str(r, "match.headers.4.name", ":method");
    wf_test_expect_str(r, "match.headers.4.string_match.exact", "GET");
    wf_test_expect_str(r, "match.query_parameters.0.name", "q");
    wf_test_expect_str(r, "match.query_parameters.0.string_match.exact", "1");
    wf_test_expect_str(r, "route.cluster", "outbound|80||" CATALOG);
    wf_test_expect_str(r, "route.prefix_rewrite", "/");
    wf_test_expect_str(r, "route.host_rewrite_literal", "new.host");
    wf_test_expect_str(r, "route.request_mirror_policies.0.cluster",
                       "outbound|80|version-v2|" CATALOG);
    wf_test_expect_int(
        r, "route.request_mirror_policies.0.runtime_fraction.default_value.numerator", 250000);
    wf_test_expect_str(
        r, "route.request_mirror_policies.0.runtime_fraction.default_value.denominator", "MILLION");
    wf_test_expect_str(r, "request_headers_to_add.0.header.key", "x-y");
    wf_test_expect_str(r, "request_headers_to_add.0.append_action", "OVERWRITE_IF_EXISTS_OR_ADD");
    wf_test_expect_str(r, "request_headers_to_add.1.header.key", "x-z");
    wf_test_expect_str(r, "request_headers_to_add.2.header.key", "x-add");
    assert_null(wf_test_json_at(r, "request_headers_to_add.2.append_action"));
    wf_test_expect_str(r, "request_headers_to_remove.0", "x-rm");
    wf_test_expect_str(r, "response_headers_to_remove.0", "server");
    json_t *f = wf_test_json_at(r, "typed_per_filter_config.envoy.filters.http.fault");
    assert_null(f); /* the dotted helper splits the key: look it up directly */
    f = json_object_get(json_object_get(r, "typed_per_filter_config"), "envoy.filters.http.fault");
    wf_test_expect_str(f, "@type",
                       "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault");
    wf_test_expect_str(f, "delay.fixed_delay", "5s");
    wf_test_expect_int(f, "delay.percentage.numerator", 500000);
    wf_test_expect_int(f, "abort.http_status", 500);
    wf_test_expect_int(f, "abort.percentage.numerator", 15000);
    r = json_array_get(rs, 1);
    wf_test_expect_str(r, "name", "api");
    wf_test_expect_str(r, "match.safe_regex.regex", "/v[0-9]+/.*");
    assert_true(json_is_false(wf_test_json_at(r, "match.case_sensitive")));
    r = json_array_get(rs, 2);
    assert_null(json_object_get(r, "route"));
    wf_test_expect_str(r, "redirect.host_redirect", "other");
    wf_test_expect_str(r, "redirect.path_redirect", "/new");
    wf_test_expect_str(r, "redirect.response_code", "FOUND");
    r = json_array_get(rs, 3); /* undefined subset still named: 503 NC at request time */
    wf_test_expect_str(r, "route.cluster", "outbound|80|v9|" CATALOG);
    /* a Host set is a host rewrite (istiod), never a header operation the proxy refuses */
    wf_test_expect_str(r, "route.host_rewrite_literal", "set.example");
    wf_test_expect_str(r, "request_headers_to_add.0.header.key", "x-k");
    assert_null(wf_test_json_at(r, "request_headers_to_add.1"));
    wf_test_expect_str(r, "request_headers_to_remove.0", "x-r");
    assert_null(wf_test_json_at(r, "request_headers_to_remove.1"));
    wf_test_expect_str(r, "response_headers_to_add.0.header.key", "x-s");
    assert_null(wf_test_json_at(r, "response_headers_to_add.1"));
    json_decref(out);
    wf_store_free(s);
}

static const char vs_order_yaml[] =
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: aaa, namespace: istioinaction}\n"
    "spec: {ports: [{name: http, port: 80}]}\n"
    "---\n"
    "apiVersion: networking.istio.io/v1\n"
    "kind: VirtualService\n"
    "metadata: {name: only-v1, namespace: istioinaction}\n"
    "spec:\n"
    "  hosts: ['*.istioinaction.svc.cluster.local']\n"
    "  exportTo: ['.']\n"
    "  http: [{route: [{destination: {host: catalog, subset: v1}}]}]\n";

static void vs_first_wildcard_export(void **state)
{
    wf_store *s = wf_test_load_store(catalog_files, vs_order_yaml, "istioinaction");
    json_t *out = routes(s, "istioinaction");
    json_t *vh = json_object_get(json_array_get(out, 0), "virtual_hosts");
    assert_int_equal(json_array_size(vh), 3);
    wf_test_expect_str(vh, "0.name", CATALOG ":80"); /* wildcard VS binds both, Service order */
    wf_test_expect_str(vh, "0.routes.0.route.cluster", "outbound|80|v1|" CATALOG);
    wf_test_expect_str(vh, "1.name", "aaa.istioinaction.svc.cluster.local:80");
    wf_test_expect_str(vh, "1.routes.0.route.cluster", "outbound|80|v1|" CATALOG);
    json_decref(out);
    out = routes(s, "default"); /* exportTo "." hides it from other namespaces */
    vh = json_object_get(json_array_get(out, 0), "virtual_hosts");
    wf_test_expect_str(vh, "0.routes.0.name", "default");
    wf_test_expect_str(vh, "1.routes.0.name", "default");
    json_decref(out);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_default_route), cmocka_unit_test(other_namespace_and_options),
        cmocka_unit_test(ports_and_vip),         cmocka_unit_test(gateway_vs_not_applied),
        cmocka_unit_test(weighted_subsets),      cmocka_unit_test(book_retries_and_timeout),
        cmocka_unit_test(retry_on_codes),        cmocka_unit_test(full_route),
        cmocka_unit_test(fault_grpc_status),     cmocka_unit_test(vs_first_wildcard_export),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
