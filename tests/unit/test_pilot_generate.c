/*
 * test_pilot_generate.c - pilot/generate: proxy identity from both node id forms (weft's
 * "<pod>.<namespace>" and Istio's "sidecar~ip~pod.ns~domain"), metadata and the Pod in the
 * store, the errors; a sidecar's resources per type for the book's catalog
 * (../shared/corpus/istioinaction/) with an inline Pod: outbound plus inbound clusters and
 * listeners, the local-mesh bind addresses, RDS/EDS name filters; MeshConfig access logs (text,
 * JSON, custom), REGISTRY_ONLY and defaultHttpRetryPolicy.
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
#include "pilot/generate.h"

#define BOOK     "../shared/corpus/istioinaction/"
#define HCM_PATH "filter_chains.0.filters.0.typed_config"
#define CATALOG  "catalog.istioinaction.svc.cluster.local"

static const char *const catalog_files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};

static const char *const catalog_pod = "apiVersion: v1\n"
                                       "kind: Pod\n"
                                       "metadata:\n"
                                       "  name: catalog-v1-abc\n"
                                       "  namespace: istioinaction\n"
                                       "  labels: {app: catalog, version: v1}\n"
                                       "spec:\n"
                                       "  containers:\n"
                                       "  - name: catalog\n"
                                       "    ports: [{name: http, containerPort: 3000}]\n"
                                       "status: {podIP: 127.10.0.3, phase: Running}\n";

/* ---- helpers ---- */

static int parse(const char *id, json_t *md, const wf_store *s, wf_pilot_proxy *p, char *err,
                 size_t cap)
{
    char *idc = id ? strdup(id) : NULL;
    wf_xds_node node = {.id = idc, .metadata = md};
    int rc = wf_pilot_proxy_from_node(&node, s, p, err, cap);
    free(idc);
    json_decref(md);
    return rc;
}

static void expect_error(const char *id, json_t *md, const char *want)
{
    wf_pilot_proxy p;
    char err[256] = "";
    assert_int_equal(parse(id, md, NULL, &p, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("id %s: error \"%s\", want it to contain \"%s\"", id ? id : "(null)", err, want);
    assert_null(p.id);
    assert_null(p.pod);
    assert_null(p.labels);
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

typedef struct fixture {
    wf_store *s;
    wf_pilot_proxy p;
    wf_pilot_env env;
} fixture;

/* The catalog pod's sidecar, with the local mesh's WEFT_LOCALHOST when localhost is set. */
static fixture sidecar(const char *localhost, const wf_meshcfg *mesh)
{
    fixture f = {.s = wf_test_load_store(catalog_files, catalog_pod, "istioinaction")};
    json_t *md = localhost ? json_pack("{s:s}", "WEFT_LOCALHOST", localhost) : NULL;
    char err[256] = "";
    assert_int_equal(parse("catalog-v1-abc.istioinaction", md, f.s, &f.p, err, sizeof err), 0);
    f.env = (wf_pilot_env){.store = f.s, .mesh = mesh};
    return f;
}

static void fixture_done(fixture *f)
{
    wf_pilot_proxy_free(&f->p);
    wf_store_free(f->s);
}

static json_t *gen(fixture *f, wf_xds_type t, const wf_xds_names *names)
{
    json_t *out = wf_pilot_generate(&f->env, &f->p, t, names);
    assert_non_null(out);
    assert_true(json_is_array(out));
    return out;
}

/* ---- node parsing ---- */

static void node_weft_form(void **state)
{
    (void)state;
    wf_store *s = wf_test_load_store(catalog_files, catalog_pod, "istioinaction");
    wf_pilot_proxy p;
    char err[256] = "";
    json_t *md =
        json_pack("{s:s,s:s,s:s,s:s}", "WEFT_LOCALHOST", "127.11.0.3", "WEFT_ADMIN",
                  "127.10.0.3:15000", "ISTIO_VERSION", "1.24.0", "CLUSTER_ID", "Kubernetes");
    assert_int_equal(parse("catalog-v1-abc.istioinaction", md, s, &p, err, sizeof err), 0);
    assert_string_equal(p.id, "catalog-v1-abc.istioinaction");
    assert_string_equal(p.pod, "catalog-v1-abc");
    assert_string_equal(p.ns, "istioinaction");
    assert_int_equal(p.kind, WF_PROXY_SIDECAR);
    assert_string_equal(p.ip, "127.10.0.3"); /* from the Pod */
    assert_string_equal(p.localhost, "127.11.0.3");
    assert_string_equal(p.admin, "127.10.0.3:15000");
    assert_string_equal(p.version, "1.24.0");
    assert_string_equal(p.cluster_id, "Kubernetes");
    assert_string_equal(json_string_value(json_object_get(p.labels, "app")), "catalog");
    assert_string_equal(json_string_value(json_object_get(p.labels, "version")), "v1");
    wf_pilot_proxy_free(&p);
    assert_null(p.id);
    wf_pilot_proxy_free(NULL);
    /* no Pod in the store: no IP, no labels; pod names may hold dots */
    assert_int_equal(parse("a.b.shop", NULL, s, &p, err, sizeof err), 0);
    assert_string_equal(p.pod, "a.b");
    assert_string_equal(p.ns, "shop");
    assert_null(p.ip);
    assert_null(p.localhost);
    assert_null(p.cluster_id);
    assert_non_null(p.labels);
    assert_int_equal(json_object_size(p.labels), 0);
    wf_pilot_proxy_free(&p);
    /* metadata wins over the Pod */
    md = json_pack("{s:s,s:{s:s},s:s}", "INSTANCE_IPS", "10.0.0.7,10.0.0.8", "LABELS", "app", "x",
                   "PROXY_TYPE", "router");
    assert_int_equal(parse("catalog-v1-abc.istioinaction", md, s, &p, err, sizeof err), 0);
    assert_string_equal(p.ip, "10.0.0.7");
    assert_int_equal(p.kind, WF_PROXY_ROUTER);
    assert_int_equal(json_object_size(p.labels), 1);
    assert_string_equal(json_string_value(json_object_get(p.labels, "app")), "x");
    wf_pilot_proxy_free(&p);
    wf_store_free(s);
}

static void node_istio_form(void **state)
{
    (void)state;
    wf_pilot_proxy p;
    char err[256] = "";
    assert_int_equal(parse("sidecar~10.1.2.3~reviews-v1-xyz.default~default.svc.cluster.local",
                           NULL, NULL, &p, err, sizeof err),
                     0);
    assert_string_equal(p.pod, "reviews-v1-xyz");
    assert_string_equal(p.ns, "default");
    assert_string_equal(p.ip, "10.1.2.3");
    assert_int_equal(p.kind, WF_PROXY_SIDECAR);
    wf_pilot_proxy_free(&p);
    assert_int_equal(parse("router~10.0.0.1~istio-ingressgateway-1.istio-system~istio-system.svc."
                           "cluster.local",
                           NULL, NULL, &p, err, sizeof err),
                     0);
    assert_int_equal(p.kind, WF_PROXY_ROUTER);
    assert_string_equal(p.pod, "istio-ingressgateway-1");
    assert_string_equal(p.ns, "istio-system");
    wf_pilot_proxy_free(&p);
    /* NAME / NAMESPACE metadata, the namespace from the domain, PROXY_TYPE over the id */
    json_t *md = json_pack("{s:s,s:s,s:s}", "NAME", "p1", "PROXY_TYPE", "sidecar", "INSTANCE_IPS",
                           "fe80::1");
    assert_int_equal(parse("router~~p1~ns1.svc.cluster.local", md, NULL, &p, err, sizeof err), 0);
    assert_string_equal(p.pod, "p1");
    assert_string_equal(p.ns, "ns1");
    assert_string_equal(p.ip, "fe80::1");
    assert_int_equal(p.kind, WF_PROXY_SIDECAR);
    wf_pilot_proxy_free(&p);
    md = json_pack("{s:s}", "NAMESPACE", "other");
    assert_int_equal(
        parse("sidecar~10.1.2.3~a.b~b.svc.cluster.local", md, NULL, &p, err, sizeof err), 0);
    assert_string_equal(p.pod, "a");
    assert_string_equal(p.ns, "other");
    wf_pilot_proxy_free(&p);
}

static void node_errors(void **state)
{
    (void)state;
    wf_pilot_proxy p;
    char err[256] = "";
    assert_int_equal(wf_pilot_proxy_from_node(NULL, NULL, &p, err, sizeof err), -1);
    assert_string_equal(err, "node.id: missing");
    wf_xds_node empty = {0};
    assert_int_equal(wf_pilot_proxy_from_node(&empty, NULL, &p, err, sizeof err), -1);
    assert_int_equal(wf_pilot_proxy_from_node(&empty, NULL, NULL, NULL, 0), -1);
    expect_error("", NULL, "node.id: missing");
    expect_error("justapod", NULL, "node.id: want <pod>.<namespace>, got \"justapod\"");
    expect_error("pod.", NULL, "want <pod>.<namespace>");
    expect_error(".ns", NULL, "want <pod>.<namespace>");
    expect_error("sidecar~1.2.3.4~p.ns", NULL,
                 "node.id: want <type>~<ip>~<pod>.<namespace>~<domain>");
    expect_error("sidecar~1.2.3.4~p.ns~d~e", NULL, "want <type>~<ip>");
    expect_error("gateway~1.2.3.4~p.ns~ns.svc.cluster.local", NULL,
                 "node.id: unknown proxy type \"gateway\"");
    expect_error("sidecar~not-an-ip~p.ns~ns.svc.cluster.local", NULL,
                 "node.id: \"not-an-ip\" is not an IP address");
    expect_error("sidecar~1.2.3.4~p~", NULL, "want <pod>.<namespace>");
    expect_error("p.ns", json_pack("{s:s}", "PROXY_TYPE", "waypoint"),
                 "node.metadata.PROXY_TYPE: \"waypoint\"");
    expect_error("p.ns", json_pack("{s:s}", "LABELS", "app=x"),
                 "node.metadata.LABELS: want an object of strings");
    expect_error("p.ns", json_pack("{s:{s:i}}", "LABELS", "n", 1),
                 "node.metadata.LABELS.n: want a string");
    expect_error("p.ns", json_pack("{s:s}", "INSTANCE_IPS", "pod-ip"),
                 "node.metadata.INSTANCE_IPS: \"pod-ip\" is not an IP address");
    expect_error("p.ns", json_pack("{s:i}", "WEFT_LOCALHOST", 5),
                 "node.metadata.WEFT_LOCALHOST: want a string");
    expect_error("p.ns", json_pack("{s:s}", "WEFT_LOCALHOST", "localhost"),
                 "node.metadata.WEFT_LOCALHOST: \"localhost\" is not an IP address");
    expect_error("p.ns", json_pack("{s:b}", "NAME", 1), "node.metadata.NAME: want a string");
}

/* ---- resources ---- */

static void sidecar_clusters(void **state)
{
    (void)state;
    fixture f = sidecar(NULL, NULL);
    json_t *cds = gen(&f, WF_XDS_CDS, NULL);
    assert_non_null(by_name(cds, "outbound|80||" CATALOG));
    assert_non_null(by_name(cds, "BlackHoleCluster"));
    assert_non_null(by_name(cds, "PassthroughCluster"));
    json_t *in = by_name(cds, "inbound|3000||");
    assert_non_null(in);
    wf_test_expect_str(in, "type", "STATIC");
    wf_test_expect_str(
        in, "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
        "127.0.0.1");
    /* inbound after the outbound ones, as Istio */
    wf_test_expect_str(json_array_get(cds, json_array_size(cds) - 1), "name", "inbound|3000||");
    json_decref(cds);
    /* EDS: the EDS clusters only; a named inbound cluster gets the empty assignment */
    json_t *eds = gen(&f, WF_XDS_EDS, NULL);
    assert_int_equal(json_array_size(eds), 1);
    wf_test_expect_str(json_array_get(eds, 0), "cluster_name", "outbound|80||" CATALOG);
    wf_test_expect_str(json_array_get(eds, 0),
                       "endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
                       "127.10.0.3");
    json_decref(eds);
    char n1[] = "inbound|3000||", n2[] = "outbound|80||" CATALOG;
    char *v[] = {n1, n2};
    wf_xds_names names = {.v = v, .n = 2};
    eds = gen(&f, WF_XDS_EDS, &names);
    assert_int_equal(json_array_size(eds), 2);
    wf_test_expect_str(json_array_get(eds, 0), "cluster_name", "inbound|3000||");
    assert_int_equal(json_array_size(wf_test_json_at(json_array_get(eds, 0), "endpoints")), 0);
    wf_test_expect_str(json_array_get(eds, 1), "cluster_name", "outbound|80||" CATALOG);
    json_decref(eds);
    json_t *sds = gen(&f, WF_XDS_SDS, NULL);
    assert_int_equal(json_array_size(sds), 0);
    json_decref(sds);
    fixture_done(&f);
}

static void sidecar_listeners_and_routes(void **state)
{
    (void)state;
    fixture f = sidecar(NULL, NULL);
    json_t *lds = gen(&f, WF_XDS_LDS, NULL);
    assert_int_equal(json_array_size(lds), 2);
    wf_test_expect_str(json_array_get(lds, 0), "name", "0.0.0.0_80");
    wf_test_expect_str(json_array_get(lds, 0), "address.socket_address.address", "0.0.0.0");
    wf_test_expect_str(json_array_get(lds, 1), "name", "127.10.0.3_3000");
    wf_test_expect_str(json_array_get(lds, 1), "traffic_direction", "INBOUND");
    wf_test_expect_str(json_array_get(lds, 1),
                       HCM_PATH ".route_config.virtual_hosts.0.routes.0."
                                "route.cluster",
                       "inbound|3000||");
    json_decref(lds);
    json_t *rds = gen(&f, WF_XDS_RDS, NULL);
    assert_int_equal(json_array_size(rds), 1);
    wf_test_expect_str(json_array_get(rds, 0), "name", "80");
    json_decref(rds);
    char n80[] = "80", nope[] = "http.8080";
    char *v[] = {nope, n80};
    wf_xds_names names = {.v = v, .n = 2};
    rds = gen(&f, WF_XDS_RDS, &names);
    assert_int_equal(json_array_size(rds), 1);
    json_decref(rds);
    names.n = 1;
    rds = gen(&f, WF_XDS_RDS, &names);
    assert_int_equal(json_array_size(rds), 0);
    json_decref(rds);
    assert_null(wf_pilot_generate(NULL, &f.p, WF_XDS_CDS, NULL));
    assert_null(wf_pilot_generate(&f.env, NULL, WF_XDS_CDS, NULL));
    fixture_done(&f);
}

static void local_mesh_addresses(void **state)
{
    (void)state;
    fixture f = sidecar("127.11.0.3", NULL);
    json_t *lds = gen(&f, WF_XDS_LDS, NULL);
    json_t *out = by_name(lds, "0.0.0.0_80"), *in = by_name(lds, "127.10.0.3_3000");
    assert_non_null(out);
    assert_non_null(in);
    wf_test_expect_str(out, "address.socket_address.address", "127.11.0.3");
    wf_test_expect_int(out, "address.socket_address.port_value", 80);
    wf_test_expect_str(in, "address.socket_address.address", "127.10.0.3");
    json_decref(lds);
    json_t *cds = gen(&f, WF_XDS_CDS, NULL);
    wf_test_expect_str(
        by_name(cds, "inbound|3000||"),
        "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
        "127.11.0.3");
    json_decref(cds);
    fixture_done(&f);
}

/* A pod without a known IP: the inbound listener binds 0.0.0.0 and takes the name an outbound
 * listener on the same port would have. */
static void inbound_wins_name_clash(void **state)
{
    (void)state;
    static const char *const yaml = "apiVersion: v1\n"
                                    "kind: Service\n"
                                    "metadata: {name: web, namespace: shop}\n"
                                    "spec:\n"
                                    "  selector: {app: web}\n"
                                    "  ports: [{name: http, port: 8080}]\n";
    wf_store *s = wf_test_load_store(NULL, yaml, NULL);
    wf_pilot_proxy p;
    char err[256];
    json_t *md = json_pack("{s:{s:s}}", "LABELS", "app", "web");
    assert_int_equal(parse("web-1.shop", md, s, &p, err, sizeof err), 0);
    wf_pilot_env env = {.store = s};
    json_t *lds = wf_pilot_generate(&env, &p, WF_XDS_LDS, NULL);
    assert_int_equal(json_array_size(lds), 1);
    wf_test_expect_str(json_array_get(lds, 0), "name", "0.0.0.0_8080");
    wf_test_expect_str(json_array_get(lds, 0), "traffic_direction", "INBOUND");
    json_decref(lds);
    wf_pilot_proxy_free(&p);
    wf_store_free(s);
}

/* ---- MeshConfig ---- */

static void expect_all_hcms_log(json_t *lds, const char *path, const char *fmt_path,
                                const char *want)
{
    size_t i;
    json_t *l;
    assert_true(json_array_size(lds) > 0);
    json_array_foreach(lds, i, l)
    {
        json_t *h = wf_test_json_at(l, HCM_PATH);
        assert_int_equal(json_array_size(json_object_get(h, "access_log")), 1);
        json_t *al = wf_test_json_at(h, "access_log.0");
        wf_test_expect_str(al, "name", "envoy.access_loggers.file");
        wf_test_expect_str(
            al, "typed_config.@type",
            "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog");
        wf_test_expect_str(al, "typed_config.path", path);
        wf_test_expect_str(al, fmt_path, want);
    }
}

static void access_log_text(void **state)
{
    (void)state;
    wf_meshcfg *m = mesh_of("accessLogFile: /dev/stdout\n");
    fixture f = sidecar(NULL, m);
    json_t *lds = gen(&f, WF_XDS_LDS, NULL);
    expect_all_hcms_log(
        lds, "/dev/stdout", "typed_config.log_format.text_format_source.inline_string",
        "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "
        "%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "
        "\"%UPSTREAM_TRANSPORT_FAILURE_REASON%\" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "
        "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "
        "\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\" %UPSTREAM_CLUSTER_RAW% "
        "%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% "
        "%REQUESTED_SERVER_NAME% %ROUTE_NAME%\n");
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
    m = mesh_of("accessLogFile: /tmp/a.log\naccessLogFormat: \"%RESPONSE_CODE% %ROUTE_NAME%\"\n");
    f = sidecar(NULL, m);
    lds = gen(&f, WF_XDS_LDS, NULL);
    expect_all_hcms_log(lds, "/tmp/a.log",
                        "typed_config.log_format.text_format_source.inline_string",
                        "%RESPONSE_CODE% %ROUTE_NAME%\n");
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
}

static void access_log_json(void **state)
{
    (void)state;
    wf_meshcfg *m = mesh_of("accessLogFile: /dev/stdout\naccessLogEncoding: JSON\n");
    fixture f = sidecar(NULL, m);
    json_t *lds = gen(&f, WF_XDS_LDS, NULL);
    expect_all_hcms_log(lds, "/dev/stdout", "typed_config.log_format.json_format.upstream_cluster",
                        "%UPSTREAM_CLUSTER_RAW%");
    json_t *jf = wf_test_json_at(json_array_get(lds, 0),
                                 HCM_PATH ".access_log.0.typed_config.log_format.json_format");
    assert_int_equal(json_object_size(jf), 24);
    wf_test_expect_str(jf, "path", "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%");
    wf_test_expect_str(jf, "response_flags", "%RESPONSE_FLAGS%");
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
    m = mesh_of("accessLogFile: /dev/stdout\naccessLogEncoding: JSON\n"
                "accessLogFormat: '{\"code\": \"%RESPONSE_CODE%\"}'\n");
    f = sidecar(NULL, m);
    lds = gen(&f, WF_XDS_LDS, NULL);
    expect_all_hcms_log(lds, "/dev/stdout", "typed_config.log_format.json_format.code",
                        "%RESPONSE_CODE%");
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
}

/* Istio's listener access log (accesslog.go setListenerAccessLog / buildListenerFileAccessLog):
 * with accessLogFile set, every listener (inbound and outbound) carries the HCM's file log plus
 * {"response_flag_filter": {"flags": ["NR"]}}; disableEnvoyListenerLog: true leaves it out. */
static void listener_access_log(void **state)
{
    (void)state;
    wf_meshcfg *m = mesh_of("accessLogFile: /dev/stdout\n");
    fixture f = sidecar("127.11.0.3", m);
    json_t *lds = gen(&f, WF_XDS_LDS, NULL);
    size_t i;
    json_t *l;
    bool inbound = false, outbound = false;
    json_array_foreach(lds, i, l)
    {
        const char *dir = json_string_value(json_object_get(l, "traffic_direction"));
        inbound = inbound || (dir && !strcmp(dir, "INBOUND"));
        outbound = outbound || (dir && !strcmp(dir, "OUTBOUND"));
        json_t *lal = json_object_get(l, "access_log");
        assert_int_equal(json_array_size(lal), 1);
        json_t *want = json_deep_copy(wf_test_json_at(l, HCM_PATH ".access_log.0"));
        assert_non_null(want);
        assert_int_equal(
            json_object_set_new(want, "filter",
                                json_pack("{s:{s:[s]}}", "response_flag_filter", "flags", "NR")),
            0);
        assert_true(json_equal(json_array_get(lal, 0), want));
        json_decref(want);
    }
    assert_true(inbound && outbound);
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
    m = mesh_of("accessLogFile: /dev/stdout\ndisableEnvoyListenerLog: true\n");
    f = sidecar("127.11.0.3", m);
    lds = gen(&f, WF_XDS_LDS, NULL);
    json_array_foreach(lds, i, l)
    {
        assert_null(json_object_get(l, "access_log"));
        assert_non_null(wf_test_json_at(l, HCM_PATH ".access_log.0"));
    }
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
    m = wf_meshcfg_new_default(); /* no accessLogFile: no listener log */
    f = sidecar("127.11.0.3", m);
    lds = gen(&f, WF_XDS_LDS, NULL);
    json_array_foreach(lds, i, l) assert_null(json_object_get(l, "access_log"));
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
}

/* MeshConfig pathNormalization on every HCM (inbound and outbound), as Istio's listener
 * builder sets it (operator report B038): unset/BASE/DEFAULT normalize only; MERGE_SLASHES adds
 * merge_slashes; DECODE_AND_MERGE_SLASHES also unescapes %2F/%5C; NONE turns normalizing off. */
static void expect_path_normalization(const char *mesh_yaml, bool normalize, bool merge,
                                      const char *action)
{
    wf_meshcfg *m = mesh_yaml ? mesh_of(mesh_yaml) : wf_meshcfg_new_default();
    fixture f = sidecar("127.11.0.3", m);
    json_t *lds = gen(&f, WF_XDS_LDS, NULL), *l;
    size_t i, hcms = 0;
    assert_true(json_array_size(lds) > 1);
    json_array_foreach(lds, i, l)
    {
        json_t *h = wf_test_json_at(l, HCM_PATH);
        if (!h)
            continue;
        hcms++;
        assert_true(json_is_true(json_object_get(h, "normalize_path")) == normalize);
        assert_true(json_is_true(json_object_get(h, "merge_slashes")) == merge);
        if (!merge)
            assert_null(json_object_get(h, "merge_slashes"));
        wf_test_expect_str(h, "path_with_escaped_slashes_action", action);
    }
    assert_true(hcms > 1);
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
}

static void path_normalization(void **state)
{
    (void)state;
    expect_path_normalization(NULL, true, false, "KEEP_UNCHANGED");
    expect_path_normalization("pathNormalization: {normalization: BASE}\n", true, false,
                              "KEEP_UNCHANGED");
    expect_path_normalization("pathNormalization: {normalization: DEFAULT}\n", true, false,
                              "KEEP_UNCHANGED");
    expect_path_normalization("pathNormalization: {normalization: NONE}\n", false, false,
                              "KEEP_UNCHANGED");
    expect_path_normalization("pathNormalization: {normalization: MERGE_SLASHES}\n", true, true,
                              "KEEP_UNCHANGED");
    expect_path_normalization("pathNormalization: {normalization: DECODE_AND_MERGE_SLASHES}\n",
                              true, true, "UNESCAPE_AND_FORWARD");
}

static void registry_only_and_retries(void **state)
{
    (void)state;
    wf_meshcfg *m = mesh_of("outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n"
                            "defaultHttpRetryPolicy: {attempts: 5, retryOn: 5xx}\n");
    fixture f = sidecar(NULL, m);
    json_t *rds = gen(&f, WF_XDS_RDS, NULL);
    json_t *vhs = wf_test_json_at(json_array_get(rds, 0), "virtual_hosts");
    assert_int_equal(json_array_size(vhs), 2);
    wf_test_expect_str(json_array_get(vhs, 1), "name", "block_all");
    json_t *r = wf_test_json_at(json_array_get(vhs, 0), "routes.0");
    wf_test_expect_str(r, "route.retry_policy.retry_on", "5xx");
    wf_test_expect_int(r, "route.retry_policy.num_retries", 5);
    json_decref(rds);
    /* inbound routes keep Istio's inbound policy */
    json_t *lds = gen(&f, WF_XDS_LDS, NULL);
    wf_test_expect_str(by_name(lds, "127.10.0.3_3000"),
                       HCM_PATH ".route_config.virtual_hosts.0.routes.0.route.retry_policy."
                                "retry_on",
                       "reset-before-request");
    assert_null(wf_test_json_at(json_array_get(lds, 0), HCM_PATH ".access_log"));
    json_decref(lds);
    fixture_done(&f);
    wf_meshcfg_free(m);
    /* defaults: allow_any, Istio's retry policy */
    m = wf_meshcfg_new_default();
    f = sidecar(NULL, m);
    rds = gen(&f, WF_XDS_RDS, NULL);
    vhs = wf_test_json_at(json_array_get(rds, 0), "virtual_hosts");
    wf_test_expect_str(json_array_get(vhs, 1), "name", "allow_any");
    wf_test_expect_int(json_array_get(vhs, 0), "routes.0.route.retry_policy.num_retries", 2);
    json_decref(rds);
    fixture_done(&f);
    wf_meshcfg_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_weft_form),
        cmocka_unit_test(node_istio_form),
        cmocka_unit_test(node_errors),
        cmocka_unit_test(sidecar_clusters),
        cmocka_unit_test(sidecar_listeners_and_routes),
        cmocka_unit_test(local_mesh_addresses),
        cmocka_unit_test(inbound_wins_name_clash),
        cmocka_unit_test(access_log_text),
        cmocka_unit_test(access_log_json),
        cmocka_unit_test(listener_access_log),
        cmocka_unit_test(path_normalization),
        cmocka_unit_test(registry_only_and_retries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
