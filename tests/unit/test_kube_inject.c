/*
 * test_kube_inject.c - Istio's sidecar injector (kube/inject.h, ../shared/reference/
 * kubernetes.md §3.2-3.5): the decision table, the injected pod (containers, environment,
 * volumes, status annotation, probe rewriting, Prometheus merge, native sidecar,
 * holdApplicationUntilProxyStarts), the config files and their errors, the RFC 6902 patch
 * (kube/jsonpatch.h, checked by applying it) and the AdmissionReview responses.
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
#include <jansson.h>

#include "core/base64.h"
#include "kube/inject.h"
#include "kube/jsonpatch.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad JSON in test: %s: %s", e.text, text);
    return v;
}

/* A pod named hello in ns "default" with the given metadata/spec fragments. */
static json_t *pod_with(const char *labels, const char *annotations, const char *spec_extra)
{
    char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"hello\","
             "\"namespace\":\"default\",\"labels\":%s,\"annotations\":%s},"
             "\"spec\":{\"containers\":[{\"name\":\"hello\",\"image\":\"app:1\","
             "\"ports\":[{\"name\":\"http\",\"containerPort\":80}]}]%s%s}}",
             labels ? labels : "{\"app\":\"hello\"}", annotations ? annotations : "{}",
             spec_extra ? "," : "", spec_extra ? spec_extra : "");
    return J(buf);
}

static int inject(const wf_inject_config *c, const json_t *pod, const char *ns, json_t **out,
                  json_t *warnings, wf_strbuf *why)
{
    wf_strbuf_reset(why);
    return wf_inject_pod(c, pod, ns, NULL, out, warnings, why);
}

static json_t *container(const json_t *pod, const char *list, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), list), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    }
    return NULL;
}

static const char *env(const json_t *c, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
            return json_string_value(json_object_get(e, "value"))
                       ? json_string_value(json_object_get(e, "value"))
                       : "(valueFrom)";
    }
    return NULL;
}

static const char *annotation(const json_t *pod, const char *k)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"), k));
}

static const char *label(const json_t *pod, const char *k)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"), k));
}

static char *args_line(const json_t *c)
{
    wf_strbuf b = WF_STRBUF_INIT;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(c, "args"), i, a)
        wf_strbuf_printf(&b, "%s%s", i ? " " : "", json_string_value(a));
    wf_strbuf_puts(&b, "");
    return wf_strbuf_take(&b);
}

static bool has_warning(const json_t *w, const char *text)
{
    size_t i;
    json_t *s;
    json_array_foreach(w, i, s)
    {
        if (strstr(json_string_value(s), text))
            return true;
    }
    return false;
}

static char tmpdir[64];

static const char *write_tmp(const char *name, const char *text)
{
    static char paths[4][256];
    static unsigned next;
    char *path = paths[next++ % 4];
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/wf_inject_XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
    }
    snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- decision ------------------------------------------------------------------------------- */

typedef struct decision_case {
    const char *labels, *annotations, *spec, *ns;
    bool policy_enabled;
    int want; /* 1 injected, 0 skipped */
    const char *why;
} decision_case;

static void test_decision_table(void **state)
{
    (void)state;
    const decision_case cases[] = {
        {NULL, NULL, NULL, "default", true, 1, NULL},
        {NULL, NULL, "\"hostNetwork\":true", "default", true, 0, "host network"},
        {NULL, NULL, NULL, "kube-system", true, 0, "system namespace"},
        {NULL, NULL, NULL, "kube-public", true, 0, "system namespace"},
        {NULL, NULL, NULL, "kube-node-lease", true, 0, "system namespace"},
        {NULL, NULL, NULL, "local-path-storage", true, 0, "system namespace"},
        {"{\"sidecar.istio.io/inject\":\"false\"}", NULL, NULL, "default", true, 0, "label"},
        {NULL, "{\"sidecar.istio.io/inject\":\"false\"}", NULL, "default", true, 0, "annotation"},
        {"{\"sidecar.istio.io/inject\":\"true\"}", NULL, NULL, "default", false, 1, NULL},
        {NULL, "{\"sidecar.istio.io/inject\":\"true\"}", NULL, "default", false, 1, NULL},
        /* the label wins over the annotation */
        {"{\"sidecar.istio.io/inject\":\"true\"}", "{\"sidecar.istio.io/inject\":\"false\"}", NULL,
         "default", true, 1, NULL},
        {"{\"sidecar.istio.io/inject\":\"false\"}", "{\"sidecar.istio.io/inject\":\"true\"}", NULL,
         "default", true, 0, "label"},
        /* any other value: the defaults */
        {"{\"sidecar.istio.io/inject\":\"yes\"}", NULL, NULL, "default", true, 1, NULL},
        {"{\"sidecar.istio.io/inject\":\"yes\"}", NULL, NULL, "default", false, 0, "policy"},
        {NULL, NULL, NULL, "default", false, 0, "policy is disabled"},
        {NULL, "{\"sidecar.istio.io/status\":\"{}\"}", NULL, "default", true, 0, "already"},
    };
    wf_inject_config *en = NULL, *dis = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(
        wf_inject_config_load_files(write_tmp("en", "policy: enabled\n"), NULL, NULL, &en, &why),
        0);
    assert_int_equal(
        wf_inject_config_load_files(write_tmp("dis", "policy: disabled\n"), NULL, NULL, &dis, &why),
        0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const decision_case *c = &cases[i];
        json_t *pod = pod_with(c->labels, c->annotations, c->spec), *out = NULL;
        json_t *w = json_array();
        int rc = inject(c->policy_enabled ? en : dis, pod, c->ns, &out, w, &why);
        if (rc != c->want)
            fail_msg("case %zu: got %d (%s), want %d", i, rc, wf_strbuf_cstr(&why), c->want);
        if (c->why && !strstr(wf_strbuf_cstr(&why), c->why))
            fail_msg("case %zu: why \"%s\" lacks \"%s\"", i, wf_strbuf_cstr(&why), c->why);
        if (c->labels && strstr(c->labels, "\"yes\""))
            assert_true(has_warning(w, "only 'true' and 'false'"));
        json_decref(out);
        json_decref(pod);
        json_decref(w);
    }
    wf_inject_config_free(en);
    wf_inject_config_free(dis);
    wf_strbuf_free(&why);
}

static void test_decision_selectors(void **state)
{
    (void)state;
    wf_inject_config *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    const char *cfg = "policy: disabled\n"
                      "alwaysInjectSelector:\n"
                      "- matchLabels: {tier: web}\n"
                      "- matchExpressions: [{key: team, operator: In, values: [a, b]}]\n"
                      "neverInjectSelector:\n"
                      "- matchExpressions: [{key: legacy, operator: Exists}]\n";
    assert_int_equal(wf_inject_config_load_files(write_tmp("sel", cfg), NULL, NULL, &c, &why), 0);
    static const struct {
        const char *labels;
        int want;
    } cases[] = {
        {"{\"tier\":\"web\"}", 1},
        {"{\"team\":\"b\"}", 1},
        {"{\"team\":\"c\"}", 0},
        {"{\"tier\":\"web\",\"legacy\":\"1\"}", 0},                     /* never wins over always */
        {"{\"legacy\":\"1\",\"sidecar.istio.io/inject\":\"true\"}", 1}, /* explicit wins */
        {"{\"tier\":\"web\",\"sidecar.istio.io/inject\":\"false\"}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *pod = pod_with(cases[i].labels, NULL, NULL), *out = NULL;
        int rc = inject(c, pod, NULL, &out, NULL, &why);
        if (rc != cases[i].want)
            fail_msg("case %zu: got %d (%s)", i, rc, wf_strbuf_cstr(&why));
        json_decref(out);
        json_decref(pod);
    }
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* ---- the injected pod ----------------------------------------------------------------------- */

static void test_injected_pod(void **state)
{
    (void)state;
    wf_inject_config *c = wf_inject_config_default();
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *pod = pod_with(NULL, NULL, "\"initContainers\":[{\"name\":\"setup\",\"image\":\"x\"}]");
    json_t *out = NULL;
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    /* containers: the app, then istio-proxy; init: istio-init, then the pod's */
    json_t *cs = json_object_get(json_object_get(out, "spec"), "containers");
    json_t *is = json_object_get(json_object_get(out, "spec"), "initContainers");
    assert_int_equal(json_array_size(cs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cs, 1), "name")),
                        "istio-proxy");
    assert_string_equal(json_string_value(json_object_get(json_array_get(is, 0), "name")),
                        "istio-init");
    assert_string_equal(json_string_value(json_object_get(json_array_get(is, 1), "name")), "setup");
    json_t *proxy = json_array_get(cs, 1), *init = json_array_get(is, 0);
    assert_string_equal(json_string_value(json_object_get(proxy, "image")),
                        "localhost/weft/weft:" WEFT_VERSION);
    char *a = args_line(proxy);
    assert_string_equal(a, "proxy sidecar --domain $(POD_NAMESPACE).svc.cluster.local "
                           "--proxyLogLevel=warning --proxyComponentLogLevel=misc:error "
                           "--log_output_level=default:info");
    free(a);
    a = args_line(init);
    assert_string_equal(a, "istio-iptables -p 15001 -z 15006 -u 1337 -m REDIRECT -i * -x  -b * -d "
                           "15090,15021,15020 --log_output_level=default:info");
    free(a);
    assert_string_equal(json_string_value(json_array_get(json_object_get(init, "command"), 0)),
                        "weft-proxy");
    /* Istio's environment, in the template's order */
    static const char *const names[] = {"PILOT_CERT_PROVIDER",
                                        "CA_ADDR",
                                        "POD_NAME",
                                        "POD_NAMESPACE",
                                        "INSTANCE_IP",
                                        "SERVICE_ACCOUNT",
                                        "HOST_IP",
                                        "ISTIO_CPU_LIMIT",
                                        "PROXY_CONFIG",
                                        "ISTIO_META_POD_PORTS",
                                        "ISTIO_META_APP_CONTAINERS",
                                        "GOMEMLIMIT",
                                        "ISTIO_META_CLUSTER_ID",
                                        "ISTIO_META_NODE_NAME",
                                        "ISTIO_META_INTERCEPTION_MODE",
                                        "ISTIO_META_WORKLOAD_NAME",
                                        "ISTIO_META_OWNER",
                                        "ISTIO_META_MESH_ID",
                                        "TRUST_DOMAIN"};
    json_t *e = json_object_get(proxy, "env");
    assert_int_equal(json_array_size(e), sizeof names / sizeof names[0]);
    for (size_t i = 0; i < json_array_size(e); i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(e, i), "name")),
                            names[i]);
    assert_string_equal(env(proxy, "CA_ADDR"), "istiod.istio-system.svc:15012");
    assert_string_equal(env(proxy, "PROXY_CONFIG"), "{}\n");
    assert_string_equal(env(proxy, "ISTIO_META_POD_PORTS"),
                        "[\n    {\"name\":\"http\",\"containerPort\":80}\n]");
    assert_string_equal(env(proxy, "ISTIO_META_APP_CONTAINERS"), "hello");
    assert_string_equal(env(proxy, "ISTIO_META_OWNER"),
                        "kubernetes://apis/v1/namespaces/default/pods/hello");
    assert_string_equal(env(proxy, "ISTIO_META_MESH_ID"), "cluster.local");
    /* volumes and mounts */
    static const char *const vols[] = {"workload-socket", "credential-socket", "workload-certs",
                                       "istio-envoy",     "istio-data",        "istio-podinfo",
                                       "istio-token",     "istiod-ca-cert",    "istio-ca-crl"};
    json_t *v = json_object_get(json_object_get(out, "spec"), "volumes");
    assert_int_equal(json_array_size(v), 9);
    for (size_t i = 0; i < 9; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(v, i), "name")),
                            vols[i]);
    assert_int_equal(json_array_size(json_object_get(proxy, "volumeMounts")), 9);
    /* labels, annotations, status */
    assert_string_equal(label(out, "security.istio.io/tlsMode"), "istio");
    assert_string_equal(label(out, "service.istio.io/canonical-name"), "hello");
    assert_string_equal(label(out, "service.istio.io/canonical-revision"), "latest");
    assert_string_equal(annotation(out, "istio.io/rev"), "default");
    assert_string_equal(annotation(out, "kubectl.kubernetes.io/default-container"), "hello");
    assert_string_equal(annotation(out, "kubectl.kubernetes.io/default-logs-container"), "hello");
    assert_string_equal(annotation(out, "prometheus.io/port"), "15020");
    assert_string_equal(annotation(out, "prometheus.io/path"), "/stats/prometheus");
    assert_string_equal(
        annotation(out, "sidecar.istio.io/status"),
        "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":["
        "\"workload-socket\",\"credential-socket\",\"workload-certs\",\"istio-envoy\","
        "\"istio-data\",\"istio-podinfo\",\"istio-token\",\"istiod-ca-cert\",\"istio-ca-crl\"],"
        "\"imagePullSecrets\":null,\"revision\":\"default\"}");
    /* security contexts */
    json_t *sc = json_object_get(init, "securityContext");
    assert_true(json_is_false(json_object_get(sc, "runAsNonRoot")));
    assert_int_equal(json_integer_value(json_object_get(sc, "runAsUser")), 0);
    sc = json_object_get(proxy, "securityContext");
    assert_int_equal(json_integer_value(json_object_get(sc, "runAsUser")), 1337);
    assert_true(json_is_true(json_object_get(sc, "readOnlyRootFilesystem")));
    /* injecting the result again does nothing */
    json_t *again = NULL;
    assert_int_equal(inject(c, out, NULL, &again, NULL, &why), 0);
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

static void test_annotations_and_values(void **state)
{
    (void)state;
    wf_inject_config *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    const char *values = "{\"global\":{\"hub\":\"reg.example/mesh\",\"tag\":\"1.2\","
                         "\"proxy\":{\"image\":\"weft-proxy\"},\"meshID\":\"m1\","
                         "\"multiCluster\":{\"clusterName\":\"c9\"}},\"revision\":\"canary\"}";
    const char *mesh = "trustDomain: example.org\n"
                       "defaultConfig:\n  proxyMetadata: {FOO: bar}\n";
    assert_int_equal(wf_inject_config_load_files(NULL, write_tmp("values", values),
                                                 write_tmp("mesh", mesh), &c, &why),
                     0);
    json_t *pod = pod_with(
        NULL,
        "{\"traffic.sidecar.istio.io/excludeOutboundPorts\":\"3306\","
        "\"traffic.sidecar.istio.io/includeOutboundPorts\":\"80\","
        "\"traffic.sidecar.istio.io/excludeInboundPorts\":\"9000\","
        "\"traffic.sidecar.istio.io/includeOutboundIPRanges\":\"10.0.0.0/8\","
        "\"sidecar.istio.io/proxyCPU\":\"50m\",\"sidecar.istio.io/proxyMemoryLimit\":\"256Mi\","
        "\"sidecar.istio.io/logLevel\":\"debug\",\"sidecar.istio.io/bootstrapOverride\":\"x\","
        "\"proxy.istio.io/config\":\"concurrency: 2\\nholdApplicationUntilProxyStarts: true\\n\"}",
        NULL);
    json_t *out = NULL, *w = json_array();
    assert_int_equal(inject(c, pod, NULL, &out, w, &why), 1);
    json_t *proxy = container(out, "containers", "istio-proxy");
    json_t *init = container(out, "initContainers", "istio-init");
    assert_string_equal(json_string_value(json_object_get(proxy, "image")),
                        "reg.example/mesh/weft-proxy:1.2");
    char *a = args_line(init);
    assert_string_equal(a, "istio-iptables -p 15001 -z 15006 -u 1337 -m REDIRECT -i 10.0.0.0/8 -x  "
                           "-b * -d 15090,15021,15020,9000 -q 80 -o 3306 "
                           "--log_output_level=default:info");
    free(a);
    a = args_line(proxy);
    assert_non_null(strstr(a, "--proxyLogLevel=debug"));
    free(a);
    json_t *res = json_object_get(proxy, "resources");
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"), "cpu")),
                        "50m");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "limits"), "memory")), "256Mi");
    assert_string_equal(env(proxy, "CA_ADDR"), "istiod-canary.istio-system.svc:15012");
    assert_string_equal(env(proxy, "TRUST_DOMAIN"), "example.org");
    assert_string_equal(env(proxy, "ISTIO_META_MESH_ID"), "m1");
    assert_string_equal(env(proxy, "ISTIO_META_CLUSTER_ID"), "c9");
    assert_string_equal(env(proxy, "FOO"), "bar");
    assert_string_equal(annotation(out, "istio.io/rev"), "canary");
    json_t *pc = J(env(proxy, "PROXY_CONFIG"));
    assert_int_equal(json_integer_value(json_object_get(pc, "concurrency")), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(pc, "proxyMetadata"), "FOO")), "bar");
    json_decref(pc);
    /* holdApplicationUntilProxyStarts: the proxy first, waiting in postStart */
    json_t *cs = json_object_get(json_object_get(out, "spec"), "containers");
    assert_ptr_equal(json_array_get(cs, 0), proxy);
    assert_non_null(json_object_get(json_object_get(proxy, "lifecycle"), "postStart"));
    /* not implemented: reported */
    assert_true(has_warning(w, "sidecar.istio.io/bootstrapOverride is not implemented"));
    /* `weft-proxy wait` exists (pilot-agent wait): the hook is no longer reported */
    assert_false(has_warning(w, "`weft-proxy wait`"));
    json_t *cmd = json_object_get(
        json_object_get(json_object_get(json_object_get(proxy, "lifecycle"), "postStart"), "exec"),
        "command");
    assert_string_equal(json_string_value(json_array_get(cmd, 0)), "weft-proxy");
    assert_string_equal(json_string_value(json_array_get(cmd, 1)), "wait");
    json_decref(out);
    json_decref(pod);
    json_decref(w);
    /* an invalid traffic annotation refuses the pod */
    pod = pod_with(NULL, "{\"traffic.sidecar.istio.io/excludeInboundPorts\":\"99999\"}", NULL);
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "traffic.sidecar.istio.io/excludeInboundPorts"));
    json_decref(pod);
    pod = pod_with(NULL, "{\"proxy.istio.io/config\":\"[1, 2]\"}", NULL);
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "proxy.istio.io/config"));
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* The ProxyConfig fields `weft-proxy proxy sidecar` reads (discoveryAddress, concurrency, ...)
 * have effect on injected pods: not reported from the mesh file nor the annotation; one it
 * does not read is. global.sds.token.aud is the istio-token volume's audience (Istio's
 * template). */
static void test_kubernetes_effect(void **state)
{
    (void)state;
    wf_inject_config *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    const char *mesh = "defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n"
                       "  concurrency: 2\n  drainDuration: 45s\n  statusPort: 15020\n"
                       "  proxyAdminPort: 15000\n  terminationDrainDuration: 5s\n";
    const char *values = "{\"global\":{\"sds\":{\"token\":{\"aud\":\"my-aud\"}}}}";
    assert_int_equal(wf_inject_config_load_files(NULL, write_tmp("values", values),
                                                 write_tmp("mesh", mesh), &c, &why),
                     0);
    const json_t *u = wf_inject_config_unimplemented(c);
    assert_false(has_warning(u, "discoveryAddress"));
    assert_false(has_warning(u, "concurrency"));
    assert_false(has_warning(u, "statusPort"));
    assert_false(has_warning(u, "global.sds"));
    assert_true(has_warning(u, "defaultConfig.terminationDrainDuration has no effect in weft"));
    json_t *pod = pod_with(NULL,
                           "{\"proxy.istio.io/config\":\"concurrency: 4\\nproxyAdminPort: "
                           "15001\\n\",\"sidecar.istio.io/proxyCPU\":\"100m\"}",
                           NULL);
    json_t *out = NULL, *w = json_array();
    assert_int_equal(inject(c, pod, NULL, &out, w, &why), 1);
    assert_int_equal(json_array_size(w), 0);
    size_t i;
    json_t *v, *aud = NULL;
    json_array_foreach(json_object_get(json_object_get(out, "spec"), "volumes"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), "istio-token") == 0)
            aud = json_object_get(
                json_object_get(
                    json_array_get(json_object_get(json_object_get(v, "projected"), "sources"), 0),
                    "serviceAccountToken"),
                "audience");
    }
    assert_string_equal(json_string_value(aud), "my-aud");
    json_decref(out);
    json_decref(pod);
    json_decref(w);
    wf_inject_config_free(c);
    /* the chart's default audience */
    assert_int_equal(wf_inject_config_load_files(NULL, NULL, NULL, &c, &why), 0);
    pod = pod_with(NULL, NULL, NULL);
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    char *d = json_dumps(out, JSON_COMPACT);
    assert_non_null(strstr(d, "\"audience\":\"istio-ca\""));
    free(d);
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* Bad values refuse the pod: a resource annotation that is not a Kubernetes quantity (the
 * rendered pod would not decode), a ProxyConfig value of the wrong type (protomarshal.ApplyYAML
 * fails); an unknown ProxyConfig field is ignored as Istio does, and said. */
static void test_bad_annotation_values(void **state)
{
    (void)state;
    wf_inject_config *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_inject_config_load_files(NULL, NULL, NULL, &c, &why), 0);
    static const struct {
        const char *ann, *want;
    } bad[] = {
        {"{\"sidecar.istio.io/proxyCPU\":\"lots\"}",
         "invalid annotation sidecar.istio.io/proxyCPU=\"lots\": quantities must match the "
         "regular expression"},
        {"{\"sidecar.istio.io/proxyMemoryLimit\":\"1.2.3Gi\"}", "quantities must match"},
        {"{\"sidecar.istio.io/proxyMemory\":\"10mi\"}", "unable to parse quantity's suffix"},
        {"{\"proxy.istio.io/config\":\"concurrency: abc\"}",
         "failed to convert to apply proxy config: concurrency: \"abc\" is not an integer"},
        {"{\"proxy.istio.io/config\":\"holdApplicationUntilProxyStarts: maybe\"}",
         "holdApplicationUntilProxyStarts: \"maybe\" is not true or false"},
        {"{\"proxy.istio.io/config\":\"proxyMetadata: {A: [1]}\"}",
         "proxyMetadata: an object is not a map of strings"},
        {"{\"proxy.istio.io/config\":\"terminationDrainDuration: 1m\"}",
         "terminationDrainDuration: \"1m\" is not a duration"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *pod = pod_with(NULL, bad[i].ann, NULL), *out = NULL;
        assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), -1);
        if (!strstr(wf_strbuf_cstr(&why), bad[i].want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, wf_strbuf_cstr(&why), bad[i].want);
        json_decref(pod);
    }
    static const char *const good[] = {
        "{\"sidecar.istio.io/proxyCPU\":\"100m\",\"sidecar.istio.io/proxyMemory\":\"1.5Gi\","
        "\"sidecar.istio.io/proxyCPULimit\":\"2\",\"sidecar.istio.io/proxyMemoryLimit\":\"1e9\"}",
        "{\"proxy.istio.io/config\":\"concurrency: '4'\\nholdApplicationUntilProxyStarts: "
        "true\\ndrainDuration: 1.5s\\ncontrolPlaneAuthPolicy: NONE\"}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *pod = pod_with(NULL, good[i], NULL), *out = NULL;
        if (inject(c, pod, NULL, &out, NULL, &why) != 1)
            fail_msg("good %zu refused: %s", i, wf_strbuf_cstr(&why));
        json_decref(out);
        json_decref(pod);
    }
    /* unknown field: Istio's ApplyYAML retries with AllowUnknownFields; weft says so */
    json_t *pod = pod_with(NULL, "{\"proxy.istio.io/config\":\"{bogusField: 1}\"}", NULL);
    json_t *out = NULL, *w = json_array();
    assert_int_equal(inject(c, pod, NULL, &out, w, &why), 1);
    assert_true(has_warning(w, "annotation proxy.istio.io/config: unknown field \"bogusField\""));
    json_decref(out);
    json_decref(pod);
    json_decref(w);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* A pod that already has istio-proxy and istio-init (no status annotation): Istio applies them
 * as overrides of the template's (strategic merge: env by name); never two of one name. */
static void test_existing_sidecar_overrides(void **state)
{
    (void)state;
    wf_inject_config *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_inject_config_load_files(NULL, NULL, NULL, &c, &why), 0);
    json_t *pod = J("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"h\","
                    "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"app\","
                    "\"image\":\"app:1\"},{\"name\":\"istio-proxy\",\"image\":\"mine:1\","
                    "\"env\":[{\"name\":\"TRUST_DOMAIN\",\"value\":\"x.org\"},{\"name\":"
                    "\"EXTRA\",\"value\":\"1\"}]}],\"initContainers\":[{\"name\":"
                    "\"istio-init\",\"image\":\"init:1\"}]}}");
    json_t *out = NULL, *w = json_array();
    assert_int_equal(inject(c, pod, NULL, &out, w, &why), 1);
    const json_t *spec = json_object_get(out, "spec");
    const char *lists[] = {"containers", "initContainers"};
    int proxies = 0, inits = 0;
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *ct;
        json_array_foreach(json_object_get(spec, lists[l]), i, ct)
        {
            const char *n = json_string_value(json_object_get(ct, "name"));
            proxies += strcmp(n, "istio-proxy") == 0;
            inits += strcmp(n, "istio-init") == 0;
        }
    }
    assert_int_equal(proxies, 1);
    assert_int_equal(inits, 1);
    json_t *proxy = container(out, "containers", "istio-proxy");
    assert_string_equal(json_string_value(json_object_get(proxy, "image")), "mine:1");
    assert_string_equal(env(proxy, "TRUST_DOMAIN"), "x.org");
    assert_string_equal(env(proxy, "EXTRA"), "1");
    assert_non_null(env(proxy, "PROXY_CONFIG")); /* the template's, kept */
    assert_string_equal(env(proxy, "ISTIO_META_APP_CONTAINERS"), "app");
    /* the template's position: last */
    json_t *cs = json_object_get(spec, "containers");
    assert_ptr_equal(json_array_get(cs, json_array_size(cs) - 1), proxy);
    json_t *init = container(out, "initContainers", "istio-init");
    assert_string_equal(json_string_value(json_object_get(init, "image")), "init:1");
    assert_non_null(json_object_get(init, "args"));
    assert_true(has_warning(w, "the pod already has a container istio-proxy"));
    json_decref(out);
    json_decref(pod);
    json_decref(w);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

static void test_capture_interfaces_and_status_port(void **state)
{
    (void)state;
    wf_inject_config *c = wf_inject_config_default();
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *pod = pod_with(NULL,
                           "{\"traffic.sidecar.istio.io/kubevirtInterfaces\":\"net1\","
                           "\"traffic.sidecar.istio.io/excludeInterfaces\":\"eth9\","
                           "\"traffic.sidecar.istio.io/excludeInboundPorts\":\"15021,8443\","
                           "\"status.sidecar.istio.io/port\":\"15999\"}",
                           NULL),
           *out = NULL;
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    char *a = args_line(container(out, "initContainers", "istio-init"));
    assert_string_equal(a, "istio-iptables -p 15001 -z 15006 -u 1337 -m REDIRECT -i * -x  -b * -d "
                           "15090,15021,15999,15021,8443 -k net1 -c eth9 "
                           "--log_output_level=default:info");
    free(a);
    /* the agent's status port moved: the probes and the Prometheus merge follow */
    json_decref(out);
    json_decref(pod);
    pod = J("{\"metadata\":{\"name\":\"p\",\"annotations\":{\"status.sidecar.istio.io/port\":"
            "\"0\",\"istio.io/reroute-virtual-interfaces\":\"v0\","
            "\"traffic.sidecar.istio.io/kubevirtInterfaces\":\"net1\"}},\"spec\":{"
            "\"containers\":[{\"name\":\"web\"}]}}");
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    a = args_line(container(out, "initContainers", "istio-init"));
    assert_non_null(strstr(a, "-d 15090,15021 -k v0 --log"));
    free(a);
    /* status port 0: no readiness probe on the proxy */
    assert_null(json_object_get(container(out, "containers", "istio-proxy"), "readinessProbe"));
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

static void test_native_sidecar(void **state)
{
    (void)state;
    wf_inject_config *c = wf_inject_config_default();
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *pod = pod_with(NULL, "{\"sidecar.istio.io/nativeSidecar\":\"true\"}", NULL), *out;
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    json_t *is = json_object_get(json_object_get(out, "spec"), "initContainers");
    json_t *proxy = json_array_get(is, 1);
    assert_string_equal(json_string_value(json_object_get(proxy, "name")), "istio-proxy");
    assert_string_equal(json_string_value(json_object_get(proxy, "restartPolicy")), "Always");
    assert_non_null(json_object_get(json_object_get(proxy, "lifecycle"), "preStop"));
    assert_null(container(out, "containers", "istio-proxy"));
    assert_non_null(strstr(annotation(out, "sidecar.istio.io/status"),
                           "\"initContainers\":[\"istio-init\",\"istio-proxy\"],"
                           "\"containers\":null"));
    json_decref(out);
    json_decref(pod);
    /* values pilot.env.ENABLE_NATIVE_SIDECARS */
    wf_inject_config_free(c);
    assert_int_equal(
        wf_inject_config_load_files(
            NULL, write_tmp("vn", "{\"pilot\":{\"env\":{\"ENABLE_NATIVE_SIDECARS\":\"true\"}}}"),
            NULL, &c, &why),
        0);
    pod = pod_with(NULL, NULL, NULL);
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    assert_non_null(container(out, "initContainers", "istio-proxy"));
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* ---- probes -----------------------------------------------------------------------------------
 */

static void test_probe_rewriting(void **state)
{
    (void)state;
    wf_inject_config *c = wf_inject_config_default();
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *pod =
        J("{\"metadata\":{\"name\":\"p\",\"annotations\":{\"prometheus.io/scrape\":\"true\","
          "\"prometheus.io/port\":\"9090\"}},\"spec\":{\"containers\":["
          "{\"name\":\"web\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080}],"
          "\"livenessProbe\":{\"httpGet\":{\"path\":\"/"
          "live\",\"port\":\"http\",\"scheme\":\"HTTPS\"},"
          "\"timeoutSeconds\":5},"
          "\"readinessProbe\":{\"tcpSocket\":{\"port\":8081}},"
          "\"startupProbe\":{\"exec\":{\"command\":[\"true\"]}},"
          "\"lifecycle\":{\"preStop\":{\"httpGet\":{\"path\":\"/stop\",\"port\":8080}}}},"
          "{\"name\":\"rpc\",\"readinessProbe\":{\"grpc\":{\"port\":9000}}}]}}");
    json_t *out = NULL;
    assert_int_equal(inject(c, pod, "apps", &out, NULL, &why), 1);
    json_t *proxy = container(out, "containers", "istio-proxy");
    assert_string_equal(
        env(proxy, "ISTIO_KUBE_APP_PROBERS"),
        "{\"/app-health/rpc/readyz\":{\"grpc\":{\"port\":9000}},"
        "\"/app-health/web/livez\":{\"httpGet\":{\"path\":\"/live\",\"port\":8080,\"scheme\":"
        "\"HTTPS\"},\"timeoutSeconds\":5},"
        "\"/app-health/web/readyz\":{\"tcpSocket\":{\"port\":8081}},"
        "\"/app-lifecycle/web/prestopz\":{\"httpGet\":{\"path\":\"/stop\",\"port\":8080}}}");
    json_t *web = container(out, "containers", "web");
    json_t *lp = json_object_get(json_object_get(web, "livenessProbe"), "httpGet");
    assert_string_equal(json_string_value(json_object_get(lp, "path")), "/app-health/web/livez");
    assert_int_equal(json_integer_value(json_object_get(lp, "port")), 15020);
    assert_string_equal(json_string_value(json_object_get(lp, "scheme")), "HTTP");
    json_t *rp = json_object_get(web, "readinessProbe");
    assert_null(json_object_get(rp, "tcpSocket"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(rp, "httpGet"), "path")),
                        "/app-health/web/readyz");
    assert_non_null(json_object_get(json_object_get(web, "startupProbe"), "exec"));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(web, "lifecycle"), "preStop"),
                            "httpGet"),
            "path")),
        "/app-lifecycle/web/prestopz");
    json_t *rpc = container(out, "containers", "rpc");
    assert_null(json_object_get(json_object_get(rpc, "readinessProbe"), "grpc"));
    /* Prometheus merge: the originals in ISTIO_PROMETHEUS_ANNOTATIONS */
    assert_string_equal(env(proxy, "ISTIO_PROMETHEUS_ANNOTATIONS"),
                        "{\"scrape\":\"true\",\"path\":\"\",\"port\":\"9090\"}");
    assert_string_equal(annotation(out, "prometheus.io/port"), "15020");
    assert_string_equal(env(proxy, "ISTIO_META_OWNER"),
                        "kubernetes://apis/v1/namespaces/apps/pods/p");
    json_decref(out);
    json_decref(pod);
    /* rewriting off: probes kept, no ISTIO_KUBE_APP_PROBERS */
    pod = J("{\"metadata\":{\"name\":\"p\",\"annotations\":{"
            "\"sidecar.istio.io/rewriteAppHTTPProbers\":\"false\","
            "\"prometheus.istio.io/merge-metrics\":\"false\"}},\"spec\":{\"containers\":["
            "{\"name\":\"web\",\"readinessProbe\":{\"httpGet\":{\"port\":8080}}}]}}");
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    proxy = container(out, "containers", "istio-proxy");
    assert_null(env(proxy, "ISTIO_KUBE_APP_PROBERS"));
    assert_null(env(proxy, "ISTIO_PROMETHEUS_ANNOTATIONS"));
    assert_null(annotation(out, "prometheus.io/port"));
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(container(out, "containers", "web"), "readinessProbe"),
                            "httpGet"),
            "port")),
        8080);
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* ---- config ------------------------------------------------------------------------------------
 */

static void test_config_errors(void **state)
{
    (void)state;
    wf_inject_config *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    static const struct {
        const char *file, *text, *want;
    } bad[] = {
        {"config", "neverInjectSelector: []\npolicy: maybe\n", "config:2: policy: want enabled"},
        {"config", "alwaysInjectSelector:\n- matchLabel: {a: b}\n",
         "config:2: alwaysInjectSelector[0].matchLabel: unknown field"},
        {"config", "policy: [enabled\n", "config:1:17: yaml"},
        {"values", "{\"global\": {\"hub\": [1]}}", "values:1: global.hub: want a string"},
        {"values", "{\n\"global\": 3}", "values:2: global: want an object"},
        {"mesh", "trustDomain: {a: 1}\n", "mesh:1: trustDomain: want a string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *path = write_tmp(bad[i].file, bad[i].text);
        char want[512];
        snprintf(want, sizeof want, "%s/%s", tmpdir, bad[i].want);
        wf_strbuf_reset(&why);
        int rc =
            wf_inject_config_load_files(strcmp(bad[i].file, "config") == 0 ? path : NULL,
                                        strcmp(bad[i].file, "values") == 0 ? path : NULL,
                                        strcmp(bad[i].file, "mesh") == 0 ? path : NULL, &c, &why);
        assert_int_equal(rc, -1);
        if (!strstr(wf_strbuf_cstr(&why), want))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, wf_strbuf_cstr(&why), want);
    }
    wf_strbuf_reset(&why);
    assert_int_equal(
        wf_inject_config_load_files(NULL, write_tmp("none", "{}"), "/nonexistent/m", &c, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "/nonexistent/m"));
    /* templates and unknown values: loaded, reported */
    const char *cfg = "policy: enabled\ntemplates:\n  custom: |\n    spec: {}\n"
                      "defaultTemplates: [sidecar, custom]\n";
    assert_int_equal(wf_inject_config_load_files(
                         write_tmp("cfg2", cfg),
                         write_tmp("val2", "{\"global\":{\"proxy\":{\"enableCoreDump\":true,"
                                           "\"logLevel\":\"info\"}}}"),
                         NULL, &c, &why),
                     0);
    const json_t *u = wf_inject_config_unimplemented(c);
    assert_true(has_warning(u, "cfg2:2: templates: custom injection templates"));
    assert_true(has_warning(u, "defaultTemplates: only the built-in \"sidecar\""));
    assert_true(has_warning(u, "global.proxy.enableCoreDump: not implemented"));
    assert_false(has_warning(u, "logLevel"));
    wf_inject_config_free(c);
    /* a folder as istiod mounts the ConfigMap */
    write_tmp("config", "policy: disabled\n");
    write_tmp("values", "{}");
    assert_int_equal(wf_inject_config_load(tmpdir, NULL, &c, &why), 0);
    json_t *pod = pod_with(NULL, NULL, NULL), *out = NULL;
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 0);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* ---- JSON Patch ---------------------------------------------------------------------------------
 */

static void check_round_trip(const char *from, const char *to)
{
    json_t *a = J(from), *b = J(to);
    json_t *patch = wf_jsonpatch_create(a, b);
    assert_non_null(patch);
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *doc = json_deep_copy(a);
    if (wf_jsonpatch_apply(&doc, patch, &why) != 0)
        fail_msg("apply: %s", wf_strbuf_cstr(&why));
    if (!json_equal(doc, b)) {
        char *p = json_dumps(patch, JSON_COMPACT), *d = json_dumps(doc, JSON_COMPACT);
        fail_msg("patch %s gave %s, want %s", p, d, to);
    }
    json_decref(doc);
    json_decref(patch);
    json_decref(a);
    json_decref(b);
    wf_strbuf_free(&why);
}

static void test_jsonpatch(void **state)
{
    (void)state;
    json_t *a = J("{\"metadata\":{\"annotations\":{\"a/b\":\"1\",\"c~d\":\"2\"}},\"x\":[1,2,3]}");
    json_t *b = J("{\"metadata\":{\"annotations\":{\"a/b\":\"9\",\"e\":\"3\"}},\"x\":[1]}");
    json_t *patch = wf_jsonpatch_create(a, b);
    char *text = json_dumps(patch, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text,
                        "[{\"op\":\"replace\",\"path\":\"/metadata/annotations/a~1b\","
                        "\"value\":\"9\"},{\"op\":\"add\",\"path\":\"/metadata/annotations/e\","
                        "\"value\":\"3\"},{\"op\":\"remove\",\"path\":\"/metadata/"
                        "annotations/c~0d\"},{\"op\":\"remove\",\"path\":\"/x/2\"},{\"op\":"
                        "\"remove\",\"path\":\"/x/1\"}]");
    free(text);
    json_decref(patch);
    patch = wf_jsonpatch_create(a, a);
    assert_int_equal(json_array_size(patch), 0);
    json_decref(patch);
    json_decref(a);
    json_decref(b);
    check_round_trip("{\"a\":[{\"n\":1},{\"n\":2}]}",
                     "{\"a\":[{\"n\":1,\"m\":true},{\"n\":3},{}]}");
    check_round_trip("{\"a\":1}", "{\"a\":{\"b\":[1,\"x\"]}}");
    check_round_trip("{\"a\":[1,2,3,4]}", "{\"a\":[4]}");
    check_round_trip("[1,2]", "{\"k\":null}");
    /* apply's errors */
    json_t *doc = J("{\"a\":1}");
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *bad = J("[{\"op\":\"remove\",\"path\":\"/b\"}]");
    assert_int_equal(wf_jsonpatch_apply(&doc, bad, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "operation 0 (remove /b)"));
    json_decref(bad);
    json_decref(doc);
    wf_strbuf_free(&why);
}

/* The injection as a patch of the pod: applying it gives the injected pod. */
static void test_patch_round_trip(void **state)
{
    (void)state;
    wf_inject_config *c = wf_inject_config_default();
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *pod =
        pod_with("{\"app\":\"hello\",\"a/b~c\":\"x\"}", "{\"prometheus.io/scrape\":\"true\"}",
                 "\"initContainers\":[{\"name\":\"setup\"}],\"volumes\":[{\"name\":"
                 "\"data\",\"emptyDir\":{}}]");
    json_t *out = NULL;
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    json_t *patch = wf_jsonpatch_create(pod, out);
    json_t *doc = json_deep_copy(pod);
    assert_int_equal(wf_jsonpatch_apply(&doc, patch, &why), 0);
    assert_true(json_equal(doc, out));
    json_decref(doc);
    json_decref(patch);
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    wf_strbuf_free(&why);
}

/* ---- AdmissionReview
 * ------------------------------------------------------------------------------ */

static json_t *review(const wf_inject_config *c, const char *path, const json_t *pod,
                      const char *req_ns, bool dry_run, int *code)
{
    json_t *ar =
        json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s},s:s,s:s,s:O,s:b}}", "apiVersion",
                  "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", "u-123",
                  "kind", "group", "", "version", "v1", "kind", "Pod", "namespace", req_ns,
                  "operation", "CREATE", "object", pod, "dryRun", dry_run);
    char *body = json_dumps(ar, JSON_COMPACT);
    wf_strbuf out = WF_STRBUF_INIT;
    *code = wf_inject_review(c, path, "application/json", body, strlen(body), &out);
    json_t *resp = *code == 200 ? J(wf_strbuf_cstr(&out)) : NULL;
    free(body);
    json_decref(ar);
    wf_strbuf_free(&out);
    return resp;
}

static json_t *apply_response(const json_t *pod, const json_t *resp)
{
    const char *b64 =
        json_string_value(json_object_get(json_object_get(resp, "response"), "patch"));
    assert_non_null(b64);
    size_t len = strlen(b64), n = 0;
    unsigned char *raw = malloc(len + 4);
    assert_true(wf_base64_decode(b64, len, 0, raw, &n));
    json_t *patch = json_loadb((const char *)raw, n, 0, NULL);
    free(raw);
    json_t *doc = json_deep_copy(pod);
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_jsonpatch_apply(&doc, patch, &why), 0);
    json_decref(patch);
    wf_strbuf_free(&why);
    return doc;
}

static void test_review(void **state)
{
    (void)state;
    wf_inject_config *c = wf_inject_config_default();
    wf_strbuf out = WF_STRBUF_INIT;
    assert_int_equal(wf_inject_review(c, "/inject", "application/json", "", 0, &out), 400);
    assert_string_equal(wf_strbuf_cstr(&out), "no body found\n");
    wf_strbuf_reset(&out);
    assert_int_equal(wf_inject_review(c, "/inject", "text/plain", "{}", 2, &out), 415);
    assert_string_equal(wf_strbuf_cstr(&out), "invalid Content-Type, want `application/json`\n");
    wf_strbuf_reset(&out);
    /* Istio compares the header exactly */
    assert_int_equal(
        wf_inject_review(c, "/inject", "application/json; charset=utf-8", "{}", 2, &out), 415);
    wf_strbuf_reset(&out);
    assert_int_equal(wf_inject_review(c, "/inject", NULL, "{}", 2, &out), 415);
    wf_strbuf_reset(&out);
    assert_int_equal(wf_inject_review(c, "/inject", "application/json", "{nope", 5, &out), 400);
    assert_non_null(strstr(wf_strbuf_cstr(&out), "could not decode body"));
    wf_strbuf_free(&out);

    /* a controller's pod: generateName, no namespace in the object, a ReplicaSet owner,
     * managedFields */
    json_t *pod = J("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":"
                    "\"web-7d4b9-\",\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"7d4b9\"},"
                    "\"annotations\":{\"sidecar.istio.io/enableCoreDump\":\"true\"},"
                    "\"managedFields\":[{\"manager\":\"kube-controller-manager\"}],"
                    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                    "\"name\":\"web-7d4b9\",\"controller\":true}]},"
                    "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"web:1\"}]}}");
    int code = 0;
    json_t *resp = review(c, "/inject/cluster/c1/net/n--slash--1", pod, "shop", true, &code);
    assert_int_equal(code, 200);
    assert_string_equal(json_string_value(json_object_get(resp, "apiVersion")),
                        "admission.k8s.io/v1");
    assert_string_equal(json_string_value(json_object_get(resp, "kind")), "AdmissionReview");
    json_t *r = json_object_get(resp, "response");
    assert_string_equal(json_string_value(json_object_get(r, "uid")), "u-123");
    assert_true(json_is_true(json_object_get(r, "allowed")));
    assert_string_equal(json_string_value(json_object_get(r, "patchType")), "JSONPatch");
    assert_true(has_warning(json_object_get(r, "warnings"), "sidecar.istio.io/enableCoreDump"));
    /* the patch applies to what the API server holds (with the namespace it will set) */
    json_t *base = json_deep_copy(pod);
    json_object_del(json_object_get(base, "metadata"), "managedFields");
    json_object_set_new(json_object_get(base, "metadata"), "namespace", json_string("shop"));
    json_t *patched = apply_response(base, resp);
    json_t *proxy = container(patched, "containers", "istio-proxy");
    assert_non_null(proxy);
    assert_string_equal(env(proxy, "ISTIO_META_OWNER"),
                        "kubernetes://apis/apps/v1/namespaces/shop/deployments/web");
    assert_string_equal(env(proxy, "ISTIO_META_WORKLOAD_NAME"), "web");
    assert_string_equal(env(proxy, "ISTIO_META_CLUSTER_ID"), "c1");
    assert_string_equal(env(proxy, "ISTIO_META_NETWORK"), "n/1");
    json_decref(patched);
    json_decref(base);
    json_decref(resp);

    /* skipped: allowed without a patch */
    json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "labels"),
                        "sidecar.istio.io/inject", json_string("false"));
    resp = review(c, "/inject/", pod, "shop", false, &code);
    r = json_object_get(resp, "response");
    assert_true(json_is_true(json_object_get(r, "allowed")));
    assert_null(json_object_get(r, "patch"));
    assert_null(json_object_get(r, "patchType"));
    json_decref(resp);
    json_decref(pod);

    /* the deprecated :ENV: form, and a last key without value ignored */
    pod = pod_with(NULL, NULL, NULL);
    resp =
        review(c, "/inject/:ENV:cluster=c2:ENV:FOO_BAR=x--slash--y", pod, "default", false, &code);
    patched = apply_response(pod, resp);
    proxy = container(patched, "containers", "istio-proxy");
    assert_string_equal(env(proxy, "ISTIO_META_CLUSTER_ID"), "c2");
    assert_string_equal(env(proxy, "FOO_BAR"), "x--slash--y"); /* :ENV: values are not decoded */
    json_decref(patched);
    json_decref(resp);
    resp = review(c, "/inject/net/n2/odd", pod, "default", false, &code);
    patched = apply_response(pod, resp);
    proxy = container(patched, "containers", "istio-proxy");
    assert_string_equal(env(proxy, "ISTIO_META_NETWORK"), "n2");
    assert_null(env(proxy, "ODD"));
    json_decref(patched);
    json_decref(resp);
    json_decref(pod);

    /* refused: allowed false with the reason */
    pod = pod_with(NULL, "{\"status.sidecar.istio.io/port\":\"abc\"}", NULL);
    resp = review(c, "/inject", pod, "default", false, &code);
    r = json_object_get(resp, "response");
    assert_true(json_is_false(json_object_get(r, "allowed")));
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(r, "status"), "message")),
               "status.sidecar.istio.io/port"));
    json_decref(resp);
    json_decref(pod);
    wf_inject_config_free(c);
}

/* weft-pilot's injector follows the watched MeshConfig: a copy of the loaded config with
 * another mesh (wf_inject_config_with_mesh) injects that mesh's trust domain and defaultConfig;
 * the loaded one is unchanged; a mesh of the wrong shape is refused naming the field. */
static void test_with_mesh(void **state)
{
    (void)state;
    wf_inject_config *base = NULL, *c = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_inject_config_load_files(NULL, NULL, NULL, &base, &why), 0);
    json_t *mesh = J("{\"trustDomain\":\"td.example\","
                     "\"defaultConfig\":{\"proxyMetadata\":{\"FOO\":\"bar\"}}}");
    assert_int_equal(wf_inject_config_with_mesh(base, mesh, "m", &c, &why), 0);
    json_decref(mesh);
    json_t *pod = pod_with(NULL, NULL, NULL), *out = NULL;
    assert_int_equal(inject(c, pod, NULL, &out, NULL, &why), 1);
    json_t *proxy = container(out, "containers", "istio-proxy");
    assert_string_equal(env(proxy, "TRUST_DOMAIN"), "td.example");
    assert_string_equal(env(proxy, "FOO"), "bar");
    json_t *pc = J(env(proxy, "PROXY_CONFIG"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(pc, "proxyMetadata"), "FOO")), "bar");
    json_decref(pc);
    json_decref(out);
    out = NULL;
    assert_int_equal(inject(base, pod, NULL, &out, NULL, &why), 1);
    proxy = container(out, "containers", "istio-proxy");
    assert_string_equal(env(proxy, "TRUST_DOMAIN"), "cluster.local");
    assert_null(env(proxy, "FOO"));
    json_decref(out);
    json_decref(pod);
    wf_inject_config_free(c);
    static const char *const bad[][2] = {
        {"[]", "m: mesh: want a MeshConfig mapping"},
        {"{\"trustDomain\":1}", "m: trustDomain: want a string"},
        {"{\"defaultConfig\":\"x\"}", "m: defaultConfig: want a ProxyConfig mapping"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *m = J(bad[i][0]);
        wf_strbuf_reset(&why);
        c = NULL;
        assert_int_equal(wf_inject_config_with_mesh(base, m, "m", &c, &why), -1);
        assert_null(c);
        assert_string_equal(wf_strbuf_cstr(&why), bad[i][1]);
        json_decref(m);
    }
    wf_strbuf_free(&why);
    wf_inject_config_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decision_table),
        cmocka_unit_test(test_decision_selectors),
        cmocka_unit_test(test_injected_pod),
        cmocka_unit_test(test_annotations_and_values),
        cmocka_unit_test(test_kubernetes_effect),
        cmocka_unit_test(test_bad_annotation_values),
        cmocka_unit_test(test_existing_sidecar_overrides),
        cmocka_unit_test(test_capture_interfaces_and_status_port),
        cmocka_unit_test(test_native_sidecar),
        cmocka_unit_test(test_probe_rewriting),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_jsonpatch),
        cmocka_unit_test(test_patch_round_trip),
        cmocka_unit_test(test_review),
        cmocka_unit_test(test_with_mesh),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (tmpdir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
        if (system(cmd) != 0)
            rc = rc ? rc : 1;
    }
    return rc;
}
