/*
 * test_agent_bootstrap.c - `weft-proxy proxy sidecar|router` (proxy/agent/agent_config.h,
 * agent_bootstrap.h): Istio's injected environment and pod files -> the bootstrap: node id for
 * sidecars and routers, node metadata, the discovery address, PROXY_CONFIG overrides, the
 * pilot-agent flags, and the errors that name the variable. Every bootstrap built is also
 * loaded by weft-proxy's own bootstrap loader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "proxy/agent/agent_config.h"
#include "proxy/bootstrap/bootstrap.h"

static char g_old[4096], g_dir[64];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A pod's root: Istio's relative paths under a fresh directory we chdir into. */
static int setup(void **state)
{
    (void)state;
    assert_non_null(getcwd(g_old, sizeof g_old));
    snprintf(g_dir, sizeof g_dir, "/tmp/wf-agent-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    assert_int_equal(chdir(g_dir), 0);
    assert_int_equal(system("mkdir -p var/run/secrets/istio etc/istio/pod"), 0);
    /* a real root: weft-proxy's loader reads trusted_ca */
    assert_int_equal(system("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                            "-nodes -keyout root.key -out var/run/secrets/istio/root-cert.pem "
                            "-days 1 -subj /O=cluster.local 2>/dev/null"),
                     0);
    write_file("etc/istio/pod/labels", "app=\"web\"\nversion=\"v1\"\n");
    write_file("etc/istio/pod/annotations",
               "sidecar.istio.io/statsInclusionPrefixes=\"upstream_rq\"\n"
               "note=\"a \\\"quoted\\\" \\u00e9 value\"\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(chdir(g_old), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Istio's injected environment (kubernetes.md §3.4) with discoveryAddress on an IP and
 * ISTIOD_SAN, so no name has to resolve; extra entries are added before it. */
#define BASE_ENV                                                                                   \
    "PILOT_CERT_PROVIDER=istiod", "CA_ADDR=istiod.istio-system.svc:15012", "POD_NAME=web-1",       \
        "POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2.3", "SERVICE_ACCOUNT=web",                       \
        "HOST_IP=192.168.0.1", "ISTIO_META_CLUSTER_ID=Kubernetes",                                 \
        "ISTIO_META_MESH_ID=cluster.local", "ISTIO_META_WORKLOAD_NAME=web",                        \
        "ISTIO_META_INTERCEPTION_MODE=REDIRECT",                                                   \
        "ISTIO_META_OWNER=kubernetes://apis/apps/v1/namespaces/shop/deployments/web",              \
        "ISTIOD_SAN=istiod.istio-system.svc"

#define PC_IP "PROXY_CONFIG={\"discoveryAddress\":\"10.96.0.10:15012\"}"

static wp_agent_flags flags(wp_agent_type t)
{
    return (wp_agent_flags){.type = t,
                            .proxy_log_level = "warning",
                            .proxy_component_log_level = "misc:error",
                            .concurrency = -1};
}

/* Builds; the bootstrap must load in weft-proxy's loader. */
static void build_ok(const wp_agent_flags *f, char *const *envp, wp_agent_config *c)
{
    wf_strbuf err = {0};
    int rc = wp_agent_config_build(f, envp, c, &err);
    if (rc != 0)
        fail_msg("build failed: %s", wf_strbuf_cstr(&err));
    wp_config *cfg = wp_bootstrap_load(c->bootstrap, "agent", &err);
    if (!cfg)
        fail_msg("the loader refused the bootstrap: %s", wf_strbuf_cstr(&err));
    wp_config_unref(cfg);
    wf_strbuf_free(&err);
}

static void build_err(const wp_agent_flags *f, char *const *envp, const char *want)
{
    wp_agent_config c;
    wf_strbuf err = {0};
    assert_int_equal(wp_agent_config_build(f, envp, &c, &err), -1);
    if (!strstr(wf_strbuf_cstr(&err), want))
        fail_msg("error \"%s\" lacks \"%s\"", wf_strbuf_cstr(&err), want);
    assert_null(c.bootstrap);
    wf_strbuf_free(&err);
}

static void sidecar_node_and_metadata(void **state)
{
    (void)state;
    char *env[] = {BASE_ENV, PC_IP, NULL};
    wp_agent_flags f = flags(WP_AGENT_SIDECAR);
    wp_agent_config c;
    build_ok(&f, env, &c);
    json_t *b = c.bootstrap;
    wf_test_expect_str(b, "node.id", "sidecar~10.1.2.3~web-1.shop~shop.svc.cluster.local");
    assert_string_equal(c.node_id, "sidecar~10.1.2.3~web-1.shop~shop.svc.cluster.local");
    wf_test_expect_str(b, "node.cluster", "web.shop"); /* the app label */
    wf_test_expect_str(b, "node.metadata.NAME", "web-1");
    wf_test_expect_str(b, "node.metadata.NAMESPACE", "shop");
    wf_test_expect_str(b, "node.metadata.SERVICE_ACCOUNT", "web");
    wf_test_expect_str(b, "node.metadata.INSTANCE_IPS", "10.1.2.3");
    wf_test_expect_str(b, "node.metadata.LABELS.app", "web");
    wf_test_expect_str(b, "node.metadata.LABELS.version", "v1");
    wf_test_expect_str(b, "node.metadata.ANNOTATIONS.note", "a \"quoted\" \xc3\xa9 value");
    wf_test_expect_str(b, "node.metadata.CLUSTER_ID", "Kubernetes");
    wf_test_expect_str(b, "node.metadata.MESH_ID", "cluster.local");
    wf_test_expect_str(b, "node.metadata.WORKLOAD_NAME", "web");
    wf_test_expect_str(b, "node.metadata.INTERCEPTION_MODE", "REDIRECT");
    wf_test_expect_str(b, "node.metadata.OWNER",
                       "kubernetes://apis/apps/v1/namespaces/shop/deployments/web");
    wf_test_expect_str(b, "node.metadata.PROXY_CONFIG.discoveryAddress", "10.96.0.10:15012");
    wf_test_expect_str(b, "node.metadata.PILOT_SAN.0", "istiod.istio-system.svc");
    wf_test_expect_int(b, "node.metadata.ENVOY_STATUS_PORT", 15021);
    assert_non_null(wf_test_json_at(b, "node.metadata.ISTIO_VERSION"));
    assert_null(wf_test_json_at(b, "node.metadata.HOST_IP")); /* not ISTIO_META_ */
    /* ports and addresses: Istio's */
    wf_test_expect_str(b, "admin.address.socket_address.address", "127.0.0.1");
    wf_test_expect_int(b, "admin.address.socket_address.port_value", 15000);
    wf_test_expect_str(b, "static_resources.listeners.0.address.socket_address.address", "0.0.0.0");
    wf_test_expect_int(b, "static_resources.listeners.0.address.socket_address.port_value", 15090);
    assert_string_equal(c.status_addr, "0.0.0.0:15020");
    assert_string_equal(c.health_addr, "0.0.0.0:15021");
    assert_int_equal(c.concurrency, 2);
    assert_int_equal(c.drain_s, 45);
    /* the annotation's stats inclusion prefix is in the matcher */
    char *sc = json_dumps(json_object_get(b, "stats_config"), 0);
    assert_non_null(strstr(sc, "\"prefix\": \"upstream_rq\""));
    free(sc);
    assert_int_equal(c.warnings.len, 0);
    wp_agent_config_free(&c);
}

static void router_node_domain_and_cluster(void **state)
{
    (void)state;
    unlink("etc/istio/pod/labels"); /* no app label: the workload name */
    char *env[] = {BASE_ENV, PC_IP, NULL};
    wp_agent_flags f = flags(WP_AGENT_ROUTER);
    f.domain = "istio-system.svc.example.org";
    wp_agent_config c;
    build_ok(&f, env, &c);
    wf_test_expect_str(c.bootstrap, "node.id",
                       "router~10.1.2.3~web-1.shop~istio-system.svc.example.org");
    wf_test_expect_str(c.bootstrap, "node.cluster", "web.shop");
    assert_null(wf_test_json_at(c.bootstrap, "node.metadata.LABELS"));
    wp_agent_config_free(&c);
    /* no workload name either: istio-proxy.<ns>; --serviceCluster wins over everything */
    char *bare[] = {"POD_NAME=gw-1",
                    "POD_NAMESPACE=istio-system",
                    "INSTANCE_IP=10.1.2.4",
                    "ISTIOD_SAN=istiod.istio-system.svc",
                    PC_IP,
                    NULL};
    build_ok(&f, bare, &c);
    wf_test_expect_str(c.bootstrap, "node.cluster", "istio-proxy.istio-system");
    wf_test_expect_str(c.bootstrap, "node.metadata.CLUSTER_ID", "Kubernetes"); /* default */
    wp_agent_config_free(&c);
    f.service_cluster = "ingress";
    build_ok(&f, bare, &c);
    wf_test_expect_str(c.bootstrap, "node.cluster", "ingress");
    wp_agent_config_free(&c);
}

#define XDS "static_resources.clusters.0."
#define TLS XDS "transport_socket.typed_config."

static void discovery_address(void **state)
{
    (void)state;
    wp_agent_flags f = flags(WP_AGENT_SIDECAR);
    wp_agent_config c;
    char *env[] = {BASE_ENV, PC_IP, NULL};
    build_ok(&f, env, &c);
    wf_test_expect_str(c.bootstrap, XDS "name", "xds-grpc");
    wf_test_expect_str(c.bootstrap, XDS "alt_stat_name", "xds-grpc;");
    wf_test_expect_str(
        c.bootstrap,
        XDS "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
        "10.96.0.10");
    wf_test_expect_int(
        c.bootstrap,
        XDS "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.port_value",
        15012);
    wf_test_expect_str(c.bootstrap, TLS "sni", "istiod.istio-system.svc");
    wf_test_expect_str(c.bootstrap, TLS "common_tls_context.validation_context.trusted_ca.filename",
                       "./var/run/secrets/istio/root-cert.pem");
    wf_test_expect_str(
        c.bootstrap,
        TLS "common_tls_context.validation_context.match_typed_subject_alt_names.0.matcher.exact",
        "istiod.istio-system.svc");
    wf_test_expect_str(c.bootstrap, TLS "common_tls_context.alpn_protocols.0", "h2");
    assert_string_equal(c.xds_san, "istiod.istio-system.svc");
    wp_agent_config_free(&c);
    /* an IPv6 address, XDS_ROOT_CA */
    assert_int_equal(system("cp var/run/secrets/istio/root-cert.pem other-root.pem"), 0);
    char *v6[] = {BASE_ENV, "XDS_ROOT_CA=other-root.pem",
                  "PROXY_CONFIG={\"discoveryAddress\":\"[fd00::10]:15012\"}", NULL};
    build_ok(&f, v6, &c);
    wf_test_expect_str(
        c.bootstrap,
        XDS "load_assignment.endpoints.0.lb_endpoints.0.endpoint.address.socket_address.address",
        "fd00::10");
    wf_test_expect_str(c.bootstrap, TLS "common_tls_context.validation_context.trusted_ca.filename",
                       "other-root.pem");
    wp_agent_config_free(&c);
    /* controlPlaneAuthPolicy NONE: plaintext, no root file needed */
    unlink("var/run/secrets/istio/root-cert.pem");
    char *plain[] = {"POD_NAME=web-1", "POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2.3",
                     "PROXY_CONFIG={\"discoveryAddress\":\"10.96.0.10:15010\","
                     "\"controlPlaneAuthPolicy\":\"NONE\"}",
                     NULL};
    build_ok(&f, plain, &c);
    assert_null(wf_test_json_at(c.bootstrap, XDS "transport_socket"));
    wp_agent_config_free(&c);
    /* with TLS the root must exist: pilot-agent's message */
    build_err(&f, env, "root CA file for XDS does not exist ./var/run/secrets/istio/root-cert.pem");
    /* the default address is a name that must resolve */
    char *dflt[] = {"POD_NAME=web-1", "POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2.3",
                    "PROXY_CONFIG={\"discoveryAddress\":\"istiod.nosuch.invalid:15012\"}", NULL};
    build_err(&f, dflt, "discoveryAddress \"istiod.nosuch.invalid:15012\": cannot resolve");
    char *bad[] = {"POD_NAME=web-1", "POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2.3",
                   "PROXY_CONFIG={\"discoveryAddress\":\"istiod\"}", NULL};
    build_err(&f, bad, "discoveryAddress \"istiod\": want HOST:PORT");
    char *nosan[] = {"POD_NAME=web-1", "POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2.3", PC_IP, NULL};
    build_err(&f, nosan, "an IP address needs ISTIOD_SAN");
}

static bool has_warning(const wp_agent_config *c, const char *what)
{
    return strstr(wf_strbuf_cstr(&c->warnings), what) != NULL;
}

static void proxy_config_overrides(void **state)
{
    (void)state;
    char *env[] = {BASE_ENV, "ISTIO_META_DNS_CAPTURE=false", "ISTIO_CPU_LIMIT=3",
                   "PROXY_CONFIG={\"discoveryAddress\":\"10.96.0.10:15012\",\"proxyAdminPort\":"
                   "15100,\"statusPort\":\"15120\",\"drainDuration\":\"1.5s\",\"serviceCluster\":"
                   "\"istio-proxy\",\"tracing\":{\"zipkin\":{\"address\":\"z:9411\"}},"
                   "\"proxyStatsMatcher\":{\"inclusionSuffixes\":[\"upstream_rq_retry\"]},"
                   "\"proxyMetadata\":{\"ISTIO_META_DNS_CAPTURE\":\"true\",\"SECRET_TTL\":\"1h\"}}",
                   NULL};
    wp_agent_flags f = flags(WP_AGENT_SIDECAR);
    wp_agent_config c;
    build_ok(&f, env, &c);
    wf_test_expect_int(c.bootstrap, "admin.address.socket_address.port_value", 15100);
    wf_test_expect_int(
        c.bootstrap,
        "static_resources.clusters.1.load_assignment.endpoints.0.lb_endpoints.0.endpoint.address."
        "socket_address.port_value",
        15100); /* prometheus_stats goes to the admin port */
    assert_string_equal(c.status_addr, "0.0.0.0:15120");
    assert_int_equal(c.drain_s, 2);                              /* rounded up */
    assert_int_equal(c.concurrency, 3);                          /* ISTIO_CPU_LIMIT */
    wf_test_expect_str(c.bootstrap, "node.cluster", "web.shop"); /* istio-proxy = unset */
    /* proxyMetadata overrides the environment, and is handed back for setenv */
    wf_test_expect_str(c.bootstrap, "node.metadata.DNS_CAPTURE", "true");
    wf_test_expect_str(c.proxy_metadata, "SECRET_TTL", "1h");
    char *sc = json_dumps(json_object_get(c.bootstrap, "stats_config"), 0);
    assert_non_null(strstr(sc, "\"suffix\": \"upstream_rq_retry\""));
    free(sc);
    assert_true(has_warning(&c, "PROXY_CONFIG: tracing: not implemented"));
    assert_false(has_warning(&c, "drainDuration"));
    wp_agent_config_free(&c);
    /* ProxyConfig concurrency over ISTIO_CPU_LIMIT, the flag over both */
    char *conc[] = {BASE_ENV, "ISTIO_CPU_LIMIT=3",
                    "PROXY_CONFIG={\"discoveryAddress\":\"10.96.0.10:15012\",\"concurrency\":0}",
                    NULL};
    build_ok(&f, conc, &c);
    assert_int_equal(c.concurrency, 0);
    wp_agent_config_free(&c);
    f.concurrency = 5;
    build_ok(&f, conc, &c);
    assert_int_equal(c.concurrency, 5);
    wp_agent_config_free(&c);
}

static void errors_name_the_variable(void **state)
{
    (void)state;
    wp_agent_flags f = flags(WP_AGENT_SIDECAR);
    char *no_name[] = {"POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2.3", PC_IP, NULL};
    build_err(&f, no_name, "POD_NAME: not set");
    char *no_ns[] = {"POD_NAME=web-1", "INSTANCE_IP=10.1.2.3", PC_IP, NULL};
    build_err(&f, no_ns, "POD_NAMESPACE: not set");
    char *no_ip[] = {"POD_NAME=web-1", "POD_NAMESPACE=shop", PC_IP, NULL};
    build_err(&f, no_ip, "INSTANCE_IP: not set");
    char *bad_ip[] = {"POD_NAME=web-1", "POD_NAMESPACE=shop", "INSTANCE_IP=10.1.2", PC_IP, NULL};
    build_err(&f, bad_ip, "INSTANCE_IP: \"10.1.2\" is not an IP address");
    char *bad_json[] = {BASE_ENV, "PROXY_CONFIG={\"discoveryAddress\":", NULL};
    build_err(&f, bad_json, "PROXY_CONFIG: invalid JSON");
    char *bad_port[] = {BASE_ENV, "PROXY_CONFIG={\"statusPort\":70000}", NULL};
    build_err(&f, bad_port, "PROXY_CONFIG: statusPort: want an integer 1..65535");
    char *bad_drain[] = {BASE_ENV, "PROXY_CONFIG={\"drainDuration\":\"soon\"}", NULL};
    build_err(&f, bad_drain, "PROXY_CONFIG: drainDuration");
    char *bad_auth[] = {BASE_ENV, "PROXY_CONFIG={\"controlPlaneAuthPolicy\":\"SOMETIMES\"}", NULL};
    build_err(&f, bad_auth, "PROXY_CONFIG: controlPlaneAuthPolicy");
    char *prov[] = {BASE_ENV, "PILOT_CERT_PROVIDER=custom", PC_IP, NULL};
    prov[0] = "POD_NAME=web-1"; /* BASE_ENV's first entry is PILOT_CERT_PROVIDER=istiod */
    build_err(&f, prov, "PILOT_CERT_PROVIDER: \"custom\" is not implemented");
    char *md[] = {BASE_ENV, "PROXY_CONFIG={\"proxyMetadata\":{\"A\":1}}", NULL};
    build_err(&f, md, "PROXY_CONFIG: proxyMetadata.A: want a string");
    /* a malformed labels file is warned about by name, not fatal */
    write_file("etc/istio/pod/labels", "app=web\n");
    char *env[] = {BASE_ENV, PC_IP, NULL};
    wp_agent_config c;
    build_ok(&f, env, &c);
    assert_true(has_warning(&c, "./etc/istio/pod/labels: line 1"));
    assert_null(wf_test_json_at(c.bootstrap, "node.metadata.LABELS"));
    wp_agent_config_free(&c);
}

static void downward_api_format(void **state)
{
    (void)state;
    json_t *o = json_object();
    wf_strbuf err = {0};
    assert_int_equal(
        wp_agent_parse_downward("a=\"x\\ny\"\nb=\"\\x41\\U0001F600\"\n\nc=\"\"", o, &err), 0);
    wf_test_expect_str(o, "a", "x\ny");
    wf_test_expect_str(o, "b", "A\xf0\x9f\x98\x80");
    wf_test_expect_str(o, "c", "");
    assert_int_equal(wp_agent_parse_downward("ok=\"1\"\nbad=\"open\n", o, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "line 2"));
    wf_strbuf_free(&err);
    json_decref(o);
}

static void pilot_agent_flags(void **state)
{
    (void)state;
    wp_agent_flags f;
    wf_strbuf err = {0};
    /* the injector's arguments (kubelet expanded $(POD_NAMESPACE)) */
    char *inj[] = {"proxy",
                   "sidecar",
                   "--domain",
                   "shop.svc.cluster.local",
                   "--proxyLogLevel=warning",
                   "--proxyComponentLogLevel=misc:error",
                   "--log_output_level=default:info",
                   "--stsPort=15463",
                   "--log_as_json",
                   NULL};
    assert_int_equal(wp_agent_parse_flags(9, inj, &f, &err), 0);
    assert_int_equal(f.type, WP_AGENT_SIDECAR);
    assert_string_equal(f.domain, "shop.svc.cluster.local");
    assert_string_equal(f.proxy_log_level, "warning");
    assert_string_equal(f.proxy_component_log_level, "misc:error");
    assert_string_equal(f.log_output_level, "default:info");
    assert_int_equal(f.nunimplemented, 2);
    assert_string_equal(f.unimplemented[0], "--stsPort=15463");
    assert_string_equal(f.unimplemented[1], "--log_as_json");
    char *rt[] = {"proxy", "router", "--concurrency", "4", "--serviceCluster", "gw", NULL};
    assert_int_equal(wp_agent_parse_flags(6, rt, &f, &err), 0);
    assert_int_equal(f.type, WP_AGENT_ROUTER);
    assert_int_equal(f.concurrency, 4);
    assert_string_equal(f.service_cluster, "gw");
    char *bad_type[] = {"proxy", "gateway", NULL};
    assert_int_equal(wp_agent_parse_flags(2, bad_type, &f, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "\"gateway\""));
    wf_strbuf_reset(&err);
    char *unknown[] = {"proxy", "sidecar", "--bogus", NULL};
    assert_int_equal(wp_agent_parse_flags(3, unknown, &f, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "unknown flag --bogus"));
    wf_strbuf_reset(&err);
    char *lvl[] = {"proxy", "sidecar", "--proxyLogLevel", "loud", NULL};
    assert_int_equal(wp_agent_parse_flags(4, lvl, &f, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "--proxyLogLevel"));
    wf_strbuf_reset(&err);
    /* --log_output_level: the agent's scopes onto weft's loggers */
    wf_strbuf spec = {0}, unmapped = {0};
    assert_int_equal(wp_agent_log_output_level("default:info,dns:debug,xdsproxy:warn,klog:none",
                                               &spec, &unmapped, &err),
                     0);
    assert_string_equal(wf_strbuf_cstr(&spec), "secret:info,dns:info,dns:debug,config:warning");
    assert_string_equal(wf_strbuf_cstr(&unmapped), "klog");
    assert_int_equal(wp_agent_log_output_level("default:loud", &spec, &unmapped, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "default:loud"));
    wf_strbuf_free(&spec);
    wf_strbuf_free(&unmapped);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sidecar_node_and_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(router_node_domain_and_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(discovery_address, setup, teardown),
        cmocka_unit_test_setup_teardown(proxy_config_overrides, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_name_the_variable, setup, teardown),
        cmocka_unit_test(downward_api_format),
        cmocka_unit_test(pilot_agent_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
