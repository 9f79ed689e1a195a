/*
 * test_unimplemented.c - the table of Istio fields weft does not implement
 * (model/unimplemented.h) and Istio's port protocol selection (model/protocol.h).
 *
 * The first test walks the whole table: every row, given its own example at its own path in
 * an otherwise empty resource, must report exactly there (field path and line), and no row
 * with a path may report on the bare resource. A row added without a working example fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/strbuf.h"
#include "harness.h"
#include "core/arena.h"
#include "model/parse.h"
#include "model/protocol.h"
#include "model/unimplemented.h"

static const char *api_version(wf_kind k)
{
    switch (k) {
    case WF_KIND_SERVICE:
    case WF_KIND_POD:
    case WF_KIND_NAMESPACE:
        return "v1";
    case WF_KIND_DEPLOYMENT:
    case WF_KIND_STATEFULSET:
    case WF_KIND_DAEMONSET:
    case WF_KIND_REPLICASET:
        return "apps/v1";
    case WF_KIND_PEERAUTHENTICATION:
    case WF_KIND_AUTHORIZATIONPOLICY:
    case WF_KIND_REQUESTAUTHENTICATION:
        return "security.istio.io/v1";
    case WF_KIND_TELEMETRY:
        return "telemetry.istio.io/v1";
    case WF_KIND_WASMPLUGIN:
        return "extensions.istio.io/v1alpha1";
    case WF_KIND_K8S_GATEWAY:
    case WF_KIND_HTTPROUTE:
    case WF_KIND_GRPCROUTE:
        return "gateway.networking.k8s.io/v1";
    default:
        return "networking.istio.io/v1";
    }
}

/* The map key a row's "*" step gets in its example: an annotation weft ignores for annotation
 * rows, a port otherwise. */
static const char *star_key(const wf_unimpl_entry *e)
{
    if (e->when != WF_UNIMPL_ISTIO_KEY_NOT_IN)
        return "8080";
    return e->kind == WF_KIND_SERVICE     ? "traffic.istio.io/nodeSelector"
           : e->kind == WF_KIND_NAMESPACE ? "topology.istio.io/controlPlaneClusters"
           : e->where == WF_UNIMPL_KUBE_ONLY ? "sidecar.istio.io/bootstrapOverride"
                                              : "sidecar.istio.io/logLevel";
}

/* "{a: {b: [X]}}" for the path steps after the first, X the example. */
static void nest(wf_strbuf *b, const char *path, const char *example, const char *key)
{
    if (!*path) {
        wf_strbuf_puts(b, example);
        return;
    }
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    bool each = n > 2 && path[n - 2] == '[';
    if (n == 1 && path[0] == '*')
        wf_strbuf_printf(b, "{'%s': ", key);
    else
        wf_strbuf_printf(b, "{%.*s: %s", (int)(each ? n - 2 : n), path, each ? "[" : "");
    nest(b, dot ? dot + 1 : "", example, key);
    wf_strbuf_puts(b, each ? "]}" : "}");
}

/* A resource of e's kind with e's example at e's path (example NULL: the bare resource). The
 * path starts at metadata (merged with the name) or spec. */
static char *doc_for(const wf_unimpl_entry *e, const char *example)
{
    wf_strbuf b = WF_STRBUF_INIT;
    char path[256];
    snprintf(path, sizeof path, "%s", e->path);
    if (strncmp(path, "{tp}.", 5) == 0)
        snprintf(path, sizeof path, "spec.trafficPolicy.%s", e->path + 5);
    bool meta = example && strncmp(path, "metadata.", 9) == 0;
    if (e->kind == WF_UNIMPL_MESHCONFIG) { /* the fields at the document's top level */
        wf_strbuf_puts(&b, "apiVersion: example.com/v1\nkind: MeshDoc\nmetadata: {name: m}\n");
        if (example) {
            const char *dot = strchr(path, '.');
            size_t n = dot ? (size_t)(dot - path) : strlen(path);
            wf_strbuf_printf(&b, "%.*s: ", (int)n, path);
            nest(&b, dot ? dot + 1 : "", example, star_key(e));
            wf_strbuf_puts(&b, "\n");
        }
        return wf_strbuf_take(&b);
    }
    if (e->kind == WF_KIND_OTHER) { /* the example is "apiVersion Kind"; bare: an unknown kind
                                     * outside Istio's groups */
        const char *sp = strchr(e->example, ' ');
        assert_non_null(sp);
        if (example)
            wf_strbuf_printf(&b, "apiVersion: %.*s\nkind: %s\n", (int)(sp - e->example), e->example,
                             sp + 1);
        else
            wf_strbuf_puts(&b, "apiVersion: example.com/v1\nkind: Widget\n");
        wf_strbuf_puts(&b, "metadata:\n  name: t\n  namespace: ns\nspec: {}\n");
        return wf_strbuf_take(&b);
    }
    wf_strbuf_printf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: t\n", api_version(e->kind),
                     wf_kind_name(e->kind));
    if (e->kind != WF_KIND_NAMESPACE)
        wf_strbuf_puts(&b, "  namespace: ns\n");
    if (meta) {
        const char *rest = path + 9, *dot = strchr(rest, '.');
        assert_non_null(dot);
        wf_strbuf_printf(&b, "  %.*s: ", (int)(dot - rest), rest);
        nest(&b, dot + 1, example, star_key(e));
        wf_strbuf_puts(&b, "\nspec: {}\n");
    } else if (!example || !*e->path) {
        wf_strbuf_puts(&b, "spec: {}\n");
    } else {
        assert_true(strncmp(path, "spec.", 5) == 0);
        wf_strbuf_puts(&b, "spec: ");
        nest(&b, path + 5, example, star_key(e));
        wf_strbuf_puts(&b, "\n");
    }
    return wf_strbuf_take(&b);
}

/* The field a row reports for its example: [] -> [0], .* -> [key], {tp} -> spec.trafficPolicy. */
static void want_field(const wf_unimpl_entry *e, char *out, size_t cap)
{
    wf_strbuf b = WF_STRBUF_INIT;
    const char *p = e->path;
    if (strncmp(p, "{tp}.", 5) == 0) {
        wf_strbuf_puts(&b, "spec.trafficPolicy.");
        p += 5;
    }
    for (; *p; p++) {
        if (p[0] == '[' && p[1] == ']') {
            wf_strbuf_puts(&b, "[0]");
            p++;
        } else if (p[0] == '.' && p[1] == '*') {
            wf_strbuf_printf(&b, "[%s]", star_key(e));
            p++;
        } else {
            wf_strbuf_putc(&b, *p);
        }
    }
    snprintf(out, cap, "%s", b.len ? wf_strbuf_cstr(&b) : "");
    wf_strbuf_free(&b);
}

static int first_root(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    (void)line, (void)col;
    if (!*(wf_node **)arg)
        *(wf_node **)arg = root;
    return 0;
}

typedef struct hits {
    const wf_unimpl_entry *want; /* count only this row's hits (NULL: all) */
    size_t n;
    char field[512];
    uint32_t line;
    bool security;
    char message[1024];
} hits;

static bool collect(const wf_unimpl_hit *h, void *arg)
{
    hits *x = arg;
    if (x->want && h->entry != x->want)
        return true;
    if (x->n++ == 0) {
        snprintf(x->field, sizeof x->field, "%s", h->field);
        x->line = h->line;
        x->security = h->entry->security;
        wf_strbuf m = WF_STRBUF_INIT;
        wf_unimpl_message(h, &m);
        snprintf(x->message, sizeof x->message, "%s", wf_strbuf_cstr(&m));
        wf_strbuf_free(&m);
    }
    return true;
}

/* Scans the first resource of yaml for target t, counting the hits of row `only` (NULL: every
 * row). */
static hits scan_yaml_in(const char *yaml, const wf_unimpl_entry *only, wf_unimpl_target t)
{
    wf_store *s = wf_test_load_store(NULL, yaml, "default");
    assert_non_null(s);
    assert_int_equal(wf_store_error_count(s), 0);
    assert_true(wf_store_count(s) >= 1);
    hits x = {.want = only};
    const wf_resource *r = wf_store_at(s, 0);
    if (only && only->kind == WF_UNIMPL_MESHCONFIG)
        assert_true(wf_unimpl_scan_mesh(r->root, r->file, t, collect, &x) >= 0);
    else
        assert_true(wf_unimpl_scan(r, t, collect, &x) >= 0);
    wf_store_free(s);
    return x;
}

/* ... in the local mesh */
static hits scan_yaml(const char *yaml, const wf_unimpl_entry *only)
{
    return scan_yaml_in(yaml, only, WF_UNIMPL_LOCAL_MESH);
}

/* The target a row holds for (the local mesh when both). */
static wf_unimpl_target row_target(const wf_unimpl_entry *e)
{
    return e->where == WF_UNIMPL_KUBE_ONLY ? WF_UNIMPL_KUBERNETES : WF_UNIMPL_LOCAL_MESH;
}

static void test_every_row_reports_its_example(void **state)
{
    (void)state;
    size_t n;
    const wf_unimpl_entry *t = wf_unimpl_table(&n);
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        const wf_unimpl_entry *e = &t[i];
        assert_non_null(e->feature);
        assert_non_null(e->effect);
        assert_non_null(e->example);
        char *yaml = doc_for(e, e->example);
        hits x = scan_yaml_in(yaml, e, row_target(e));
        char want[512];
        want_field(e, want, sizeof want);
        if (x.n != 1 || strcmp(x.field, want) != 0)
            fail_msg("row %zu (%s %s): %zu hits, field '%s', want '%s' in:\n%s", i,
                     e->kind == WF_UNIMPL_MESHCONFIG ? "MeshConfig" : wf_kind_name(e->kind),
                     e->path, x.n, x.field, want, yaml);
        assert_true(x.line > 0);
        assert_int_equal(x.security, e->security);
        assert_non_null(strstr(x.message, e->security ? "is not enforced by weft: "
                                                      : "has no effect in weft: "));
        free(yaml);
        /* the bare resource: only whole-resource rows report */
        yaml = doc_for(e, NULL);
        x = scan_yaml_in(yaml, e, row_target(e));
        if (x.n != (*e->path || e->kind == WF_KIND_OTHER ? 0u : 1u))
            fail_msg("row %zu (%s %s): %zu hits on the bare resource", i, wf_kind_name(e->kind),
                     e->path, x.n);
        free(yaml);
    }
}

#define PA(mode)                                                                                   \
    "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: d, "             \
    "namespace: istio-system}\nspec:\n  mtls:\n    mode: " mode "\n"

static void test_peer_authentication(void **state)
{
    (void)state;
    /* STRICT, PERMISSIVE and DISABLE are enforced on sidecars' inbound chains (pilot/inbound.h):
     * nothing to report about the resource itself */
    assert_int_equal(scan_yaml(PA("STRICT"), NULL).n, 0);
    assert_int_equal(scan_yaml(PA("PERMISSIVE"), NULL).n, 0);
    assert_int_equal(scan_yaml(PA("DISABLE"), NULL).n, 0);
    assert_int_equal(
        scan_yaml("apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: "
                  "d, namespace: ns}\nspec:\n  portLevelMtls:\n    8080: {mode: STRICT}\n",
                  NULL)
            .n,
        0);
}

static void test_authorization_policy_actions(void **state)
{
    (void)state;
    static const char *const ap = "apiVersion: security.istio.io/v1\nkind: "
                                  "AuthorizationPolicy\nmetadata: {name: a, namespace: ns}\n";
    char buf[512];
    /* ALLOW and DENY are enforced by the RBAC filters pilot generates (pilot/authz.h):
     * nothing to report about the resource, whatever its rules */
    const char *enforced[] = {"",           /* ALLOW nothing: deny all */
                              "spec: {}\n", /* the same */
                              "spec: {action: DENY, rules: [{to: [{operation: {methods: "
                              "[POST]}}]}]}\n",
                              "spec: {action: DENY, rules: [{}]}\n", /* deny all */
                              "spec: {rules: [{from: [{source: {namespaces: [a]}}]}]}\n",
                              "spec: {rules: [{}]}\n",
                              "spec: {action: DENY}\n"};
    for (size_t i = 0; i < sizeof enforced / sizeof enforced[0]; i++) {
        snprintf(buf, sizeof buf, "%s%s", ap, enforced[i]);
        if (scan_yaml(buf, NULL).n != 0)
            fail_msg("enforced case %zu reported", i);
    }
    /* CUSTOM: no ext_authz; it fails closed, and is a security control not applied as written */
    snprintf(buf, sizeof buf, "%sspec: {action: CUSTOM, provider: {name: x}, rules: [{}]}\n", ap);
    hits c = scan_yaml(buf, NULL);
    assert_int_equal(c.n, 1);
    assert_true(c.security);
    assert_string_equal(c.field, "spec.action");
    assert_non_null(strstr(c.message, "spec.action is not enforced by weft: CUSTOM authorization"));
    snprintf(buf, sizeof buf, "%sspec: {action: AUDIT}\n", ap);
    hits x = scan_yaml(buf, NULL);
    assert_int_equal(x.n, 1);
    assert_false(x.security);
    assert_string_equal(x.field, "spec.action");
}

#define SVC_PORT(p)                                                                                \
    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns}\nspec:\n  ports:\n  - " p   \
    "\n"

static void test_service_ports(void **state)
{
    (void)state;
    assert_int_equal(scan_yaml(SVC_PORT("{name: http, port: 80}"), NULL).n, 0);
    assert_int_equal(scan_yaml(SVC_PORT("{name: http-web, port: 80}"), NULL).n, 0);
    assert_int_equal(scan_yaml(SVC_PORT("{name: dns, port: 53, protocol: UDP}"), NULL).n, 0);
    /* appProtocol wins over the name */
    assert_int_equal(scan_yaml(SVC_PORT("{name: tcp-x, port: 80, appProtocol: http}"), NULL).n, 0);
    /* TCP ports are proxied (pilot/tcp.h): unnamed 3306 is TCP, as in Istio */
    assert_int_equal(scan_yaml(SVC_PORT("{port: 3306}"), NULL).n, 0);
    assert_int_equal(scan_yaml(SVC_PORT("{name: tcp-db, port: 5432}"), NULL).n, 0);
    assert_int_equal(scan_yaml(SVC_PORT("{name: tls, port: 443}"), NULL).n, 0);
    /* Mongo: plain TCP without Istio's mongo_proxy filter (unnamed 27017 is TCP, not Mongo) */
    assert_int_equal(scan_yaml(SVC_PORT("{port: 27017}"), NULL).n, 0);
    hits x = scan_yaml(SVC_PORT("{name: mongo-db, port: 27017}"), NULL);
    assert_int_equal(x.n, 1);
    assert_non_null(
        strstr(x.message, "spec.ports[0] (mongo-db) has no effect in weft: Istio's Mongo filter"));
    /* what weft writes itself (weftctl up's gateway Service) is not the user's config */
    x = scan_yaml("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns, annotations: "
                  "{weft.io/generated-by: weftctl up}}\nspec:\n  ports:\n  - {name: https, port: "
                  "443}\n",
                  NULL);
    assert_int_equal(x.n, 0);
    /* HTTP/2 ports and undeclared ones are generated as istiod does (pilot/cds.h, sniff.h) */
    assert_int_equal(
        scan_yaml(SVC_PORT("{name: x, port: 80, appProtocol: kubernetes.io/h2c}"), NULL).n, 0);
    assert_int_equal(scan_yaml(SVC_PORT("{name: grpc-api, port: 9090}"), NULL).n, 0);
    assert_int_equal(scan_yaml(SVC_PORT("{name: web, port: 8080}"), NULL).n, 0);
    /* gRPC-Web: no envoy.filters.http.grpc_web in weft-proxy, by name or appProtocol */
    x = scan_yaml(SVC_PORT("{name: grpc-web, port: 80}"), NULL);
    assert_int_equal(x.n, 1);
    assert_non_null(strstr(x.message, "gRPC-Web translation"));
    assert_int_equal(scan_yaml(SVC_PORT("{name: web, port: 80, appProtocol: grpc-web}"), NULL).n,
                     1);
}

/* A TLS server that terminates TLS for TCP traffic opens no listener: reported. */
static void test_gateway_tls_for_tcp(void **state)
{
    (void)state;
    hits x = scan_yaml("apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, "
                       "namespace: ns}\nspec: {servers: [{port: {number: 31443, name: tls, "
                       "protocol: TLS}, hosts: ['*'], tls: {mode: SIMPLE, credentialName: c}}]}\n",
                       NULL);
    assert_int_equal(x.n, 1);
    assert_non_null(strstr(x.message, "TLS terminated for TCP"));
}

static void test_values_that_are_implemented_are_quiet(void **state)
{
    (void)state;
    static const char *const quiet[] = {
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d, "
        "namespace: ns}\nspec: {host: a, trafficPolicy: {tls: {mode: DISABLE}, loadBalancer: "
        "{simple: ROUND_ROBIN}, connectionPool: {http: {h2UpgradePolicy: UPGRADE, "
        "useClientProtocol: true, maxConcurrentStreams: 9, http1MaxPendingRequests: 1}}}}\n",
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: "
        "ns}\nspec: {servers: [{port: {number: 80, name: http, protocol: http}, hosts: ['*'], "
        "tls: {httpsRedirect: false}}]}\n",
        /* TCP and TLS passthrough servers, tcp and tls routes (pilot/tcp.h, gateway_tcp.h) */
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: "
        "ns}\nspec: {servers: [{port: {number: 31400, name: tcp, protocol: TCP}, hosts: ['*']}, "
        "{port: {number: 443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: PASSTHROUGH}}, "
        "{port: {number: 15443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: "
        "AUTO_PASSTHROUGH}}]}\n",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v, "
        "namespace: ns}\nspec: {hosts: [a], tcp: [{route: [{destination: {host: a}}]}], tls: "
        "[{match: [{sniHosts: [a.example]}], route: [{destination: {host: a}}]}]}\n",
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d, "
        "namespace: ns}\nspec: {host: a, trafficPolicy: {connectionPool: {tcp: {idleTimeout: "
        "1h}}}}\n",
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: e, "
        "namespace: ns}\nspec: {hosts: [a.example], resolution: DNS, ports: [{number: 80, "
        "name: http, protocol: HTTP}]}\n",
        "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: s, namespace: "
        "ns}\nspec: {egress: [{hosts: ['./*'], captureMode: DEFAULT}], outboundTrafficPolicy: "
        "{mode: REGISTRY_ONLY}}\n",
        "apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\nmetadata: {name: w, "
        "namespace: ns}\nspec: {phase: AUTHZ}\n",
    };
    const size_t n = sizeof quiet / sizeof quiet[0];
    for (size_t i = 0; i < n; i++) {
        hits x = scan_yaml(quiet[i], NULL);
        if (i < n - 1 && x.n != 0)
            fail_msg("case %zu: unexpected %s", i, x.message);
        if (i == n - 1) { /* an AUTHZ-phase plugin is one security finding, not also a warning */
            assert_int_equal(x.n, 1);
            assert_true(x.security);
        }
    }
}

/* Annotations: one Istio defines but weft ignores is WFT0001; a typo (IST0108) or one on a
 * kind it does not belong to (IST0107) is analyze's, not a missing feature. */
static void test_annotations(void **state)
{
    (void)state;
    static const char *const fmt = "apiVersion: v1\nkind: %s\nmetadata:\n  name: a\n"
                                   "  annotations: {'%s': x}\nspec: {}\n";
    char buf[512];
    snprintf(buf, sizeof buf, fmt, "Pod", "sidecar.istio.io/logLevel");
    assert_int_equal(scan_yaml(buf, NULL).n, 1);
    snprintf(buf, sizeof buf, fmt, "Pod", "sidecar.istio.io/injet");
    assert_int_equal(scan_yaml(buf, NULL).n, 0);
    snprintf(buf, sizeof buf, fmt, "Namespace", "networking.istio.io/exportTo");
    assert_int_equal(scan_yaml(buf, NULL).n, 0);
    snprintf(buf, sizeof buf, fmt, "Pod", "sidecar.istio.io/inject");
    assert_int_equal(scan_yaml(buf, NULL).n, 0);
    /* istio-init's arguments, which the local mesh's capture applies; not the interfaces */
    snprintf(buf, sizeof buf, fmt, "Pod", "traffic.sidecar.istio.io/excludeOutboundPorts");
    assert_int_equal(scan_yaml(buf, NULL).n, 0);
    snprintf(buf, sizeof buf, fmt, "Pod", "traffic.sidecar.istio.io/includeOutboundIPRanges");
    assert_int_equal(scan_yaml(buf, NULL).n, 0);
    snprintf(buf, sizeof buf, fmt, "Pod", "traffic.sidecar.istio.io/excludeInterfaces");
    assert_int_equal(scan_yaml(buf, NULL).n, 1);
}

/* Kubernetes: what weft's injector implements (docs/kubernetes.md) has effect there; the local
 * mesh still reports what it does not honour. */
static void test_annotations_kubernetes(void **state)
{
    (void)state;
    static const char *const fmt = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n"
                                   "spec:\n  template:\n    metadata:\n      annotations: "
                                   "{'%s': x}\n";
    static const char *const honoured[] = {"sidecar.istio.io/proxyCPU",
                                           "sidecar.istio.io/proxyMemory",
                                           "sidecar.istio.io/proxyCPULimit",
                                           "sidecar.istio.io/proxyMemoryLimit",
                                           "sidecar.istio.io/logLevel",
                                           "sidecar.istio.io/componentLogLevel",
                                           "sidecar.istio.io/userVolume",
                                           "traffic.sidecar.istio.io/excludeInterfaces",
                                           "sidecar.istio.io/statsInclusionPrefixes"};
    char buf[512];
    for (size_t i = 0; i < sizeof honoured / sizeof honoured[0]; i++) {
        snprintf(buf, sizeof buf, fmt, honoured[i]);
        if (scan_yaml_in(buf, NULL, WF_UNIMPL_KUBERNETES).n != 0)
            fail_msg("%s reported in Kubernetes", honoured[i]);
        if (strcmp(honoured[i], "sidecar.istio.io/statsInclusionPrefixes") != 0)
            assert_int_equal(scan_yaml_in(buf, NULL, WF_UNIMPL_LOCAL_MESH).n, 1);
    }
    /* an Istio annotation the injector does not implement is still reported there */
    snprintf(buf, sizeof buf, fmt, "sidecar.istio.io/bootstrapOverride");
    assert_int_equal(scan_yaml_in(buf, NULL, WF_UNIMPL_KUBERNETES).n, 1);
    /* the injector's list is the table's */
    const char *const *inj = wf_unimpl_injector_annotations();
    size_t n = 0;
    for (; inj[n]; n++) {
        snprintf(buf, sizeof buf, fmt, inj[n]);
        assert_int_equal(scan_yaml_in(buf, NULL, WF_UNIMPL_KUBERNETES).n, 0);
    }
    assert_true(n >= 25);
}

/* The ProxyConfig fields `weft-proxy proxy sidecar` reads from PROXY_CONFIG (agent_config.h)
 * have effect on injected pods: reported in the local mesh only. */
static void test_proxyconfig_kubernetes(void **state)
{
    (void)state;
    static const char *const mesh =
        "defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  concurrency: 2\n"
        "  drainDuration: 45s\n  statusPort: 15020\n  proxyAdminPort: 15000\n"
        "  holdApplicationUntilProxyStarts: true\n  terminationDrainDuration: 5s\n";
    wf_arena a;
    wf_arena_init(&a);
    wf_node *root = NULL;
    wf_parse_error pe = {0};
    assert_int_equal(wf_parse_yaml(&a, mesh, strlen(mesh), first_root, &root, &pe), 0);
    hits k = {0}, l = {0};
    assert_int_equal(wf_unimpl_scan_mesh(root, "m.yaml", WF_UNIMPL_KUBERNETES, collect, &k), 1);
    assert_string_equal(k.field, "defaultConfig.terminationDrainDuration");
    assert_int_equal(wf_unimpl_scan_mesh(root, "m.yaml", WF_UNIMPL_LOCAL_MESH, collect, &l), 7);
    const wf_node *dc = wf_map_get(root, "defaultConfig");
    hits pk = {0};
    assert_int_equal(wf_unimpl_scan_proxyconfig(dc, "a", WF_UNIMPL_KUBERNETES, collect, &pk), 1);
    assert_string_equal(pk.field, "terminationDrainDuration");
    wf_arena_destroy(&a);
}

static void test_protocol_selection(void **state)
{
    (void)state;
    assert_int_equal(wf_protocol_of_kube_port(80, "http", NULL, NULL), WF_PROTO_HTTP);
    assert_int_equal(wf_protocol_of_kube_port(80, "HTTP2-x", NULL, NULL), WF_PROTO_HTTP2);
    assert_int_equal(wf_protocol_of_kube_port(80, "grpc-web-x", NULL, NULL), WF_PROTO_GRPC_WEB);
    assert_int_equal(wf_protocol_of_kube_port(80, "web", NULL, NULL), WF_PROTO_UNSUPPORTED);
    assert_int_equal(wf_protocol_of_kube_port(27017, NULL, NULL, NULL), WF_PROTO_TCP);
    assert_int_equal(wf_protocol_of_kube_port(80, "http", "UDP", NULL), WF_PROTO_UDP);
    assert_int_equal(wf_protocol_of_kube_port(80, "tcp", NULL, "https"), WF_PROTO_HTTPS);
    assert_int_equal(wf_protocol_of_kube_port(80, "tcp", NULL, "kubernetes.io/ws"), WF_PROTO_HTTP);
    assert_string_equal(wf_protocol_name(WF_PROTO_GRPC_WEB), "GRPC-Web");
    assert_true(wf_protocol_is_http(WF_PROTO_GRPC));
    assert_false(wf_protocol_is_http(WF_PROTO_TLS));
}

/* docs/analyze.md lists every row (kind and field, or "the resource") in its WFT table. */
static void test_docs_list_every_row(void **state)
{
    (void)state;
    FILE *f = fopen("docs/analyze.md", "r");
    assert_non_null(f);
    static char doc[1 << 17];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[len] = '\0';
    size_t n;
    const wf_unimpl_entry *t = wf_unimpl_table(&n);
    for (size_t i = 0; i < n; i++) {
        char want[300];
        const char *p = t[i].path;
        if (strncmp(p, "{tp}.", 5) == 0)
            p += 5;
        snprintf(want, sizeof want, *p ? "`%s`" : "the resource", p);
        const char *kname =
            t[i].kind == WF_UNIMPL_MESHCONFIG ? "MeshConfig" : wf_kind_name(t[i].kind);
        if (t[i].kind == WF_KIND_OTHER) /* "apiVersion Kind": the docs name the kind */
            kname = strchr(t[i].example, ' ') + 1;
        bool found = false;
        for (const char *line = doc; line && *line && !found;) {
            const char *end = strchr(line, '\n');
            size_t l = end ? (size_t)(end - line) : strlen(line);
            char buf[2048];
            snprintf(buf, sizeof buf, "%.*s", (int)(l < sizeof buf ? l : sizeof buf - 1), line);
            found = strncmp(buf, "| ", 2) == 0 && strstr(buf, kname) && strstr(buf, want);
            line = end ? end + 1 : NULL;
        }
        if (!found)
            fail_msg("docs/analyze.md has no table line naming %s and %s", kname, want);
    }
}

/* DestinationRule tls: the modes weft translates are quiet; what weft-proxy lacks is reported,
 * credentialName and the missing server-name check as security findings. */
static void test_destinationrule_tls(void **state)
{
    (void)state;
#define DR_TLS(tls)                                                                                \
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d, namespace: "   \
    "ns}\nspec: {host: a, trafficPolicy: {tls: " tls "}}\n"
    static const char *const quiet[] = {
        DR_TLS("{mode: ISTIO_MUTUAL}"),
        DR_TLS("{mode: DISABLE}"),
        DR_TLS("{mode: SIMPLE, sni: a.example, subjectAltNames: [a.example], caCertificates: "
               "/ca.pem}"),
        DR_TLS("{mode: MUTUAL, sni: a.example, clientCertificate: /c.pem, privateKey: /k.pem}"),
    };
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        hits x = scan_yaml(quiet[i], NULL);
        if (x.n != 0)
            fail_msg("case %zu: unexpected %s", i, x.message);
    }
    hits x = scan_yaml(DR_TLS("{mode: SIMPLE, sni: a.example, credentialName: c}"), NULL);
    assert_int_equal(x.n, 1);
    assert_true(x.security);
    assert_string_equal(x.field, "spec.trafficPolicy.tls.credentialName");
    /* no sni, no SANs: no SNI (a warning) and no name check (an error) */
    x = scan_yaml(DR_TLS("{mode: SIMPLE}"), NULL);
    assert_int_equal(x.n, 2);
    /* with SANs only the SNI is missing */
    x = scan_yaml(DR_TLS("{mode: SIMPLE, subjectAltNames: [a.example]}"), NULL);
    assert_int_equal(x.n, 1);
    assert_false(x.security);
    assert_non_null(strstr(x.message, "auto_sni"));
#undef DR_TLS
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_reports_its_example),
        cmocka_unit_test(test_peer_authentication),
        cmocka_unit_test(test_authorization_policy_actions),
        cmocka_unit_test(test_service_ports),
        cmocka_unit_test(test_values_that_are_implemented_are_quiet),
        cmocka_unit_test(test_gateway_tls_for_tcp),
        cmocka_unit_test(test_destinationrule_tls),
        cmocka_unit_test(test_annotations),
        cmocka_unit_test(test_annotations_kubernetes),
        cmocka_unit_test(test_proxyconfig_kubernetes),
        cmocka_unit_test(test_protocol_selection),
        cmocka_unit_test(test_docs_list_every_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
