/*
 * unimplemented.c - the table of Istio resources and fields weft does not implement, and the
 * scanner. See unimplemented.h.
 *
 * When a feature lands, its rows leave this table (and tests/unit/test_unimplemented.c, which
 * walks the table, needs no change). Field names follow the Istio API reference
 * (networking v1, security v1, telemetry v1, extensions v1alpha1) and Kubernetes'
 * core/v1 Service; protocols follow Istio's protocol selection (model/protocol.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model/istio_annotations.h"
#include "model/protocol.h"
#include "model/unimplemented.h"

/* ---- predicates ------------------------------------------------------------------------- */

/* The Istio protocol of a port node of a Service or ServiceEntry. */
static wf_protocol port_protocol(const wf_resource *r, const wf_node *port)
{
    const char *name = wf_map_str(port, "name");
    if (r->kind == WF_KIND_SERVICEENTRY) {
        const char *p = wf_map_str(port, "protocol");
        return p ? wf_protocol_parse(p, strlen(p)) : WF_PROTO_UNSUPPORTED;
    }
    int64_t num = 0;
    wf_node_int(wf_map_get(port, "port"), &num);
    const wf_node *app = wf_map_get(port, "appProtocol");
    return wf_protocol_of_kube_port(num, name, wf_map_str(port, "protocol"),
                                    app && app->type == WF_NODE_SCALAR ? wf_node_str(app) : NULL);
}

/* A Mongo port: Istio adds envoy.filters.network.mongo_proxy before tcp_proxy
 * (PILOT_ENABLE_MONGO_FILTER, on by default); weft proxies it as plain TCP (pilot/tcp.h). MySQL
 * and Redis filters are off by default in Istio: plain TCP there too. */
static bool port_is_mongo(const wf_resource *r, const wf_node *port)
{
    return port_protocol(r, port) == WF_PROTO_MONGO;
}

/* A gRPC-Web port (name prefix or appProtocol grpc-web): Istio gives it the
 * envoy.filters.http.grpc_web filter, which weft-proxy does not have; the port is served as
 * HTTP/2 gRPC (pilot/cds.c) and a browser's gRPC-Web request reaches the server untranslated. */
static bool port_is_grpc_web(const wf_resource *r, const wf_node *port)
{
    return port_protocol(r, port) == WF_PROTO_GRPC_WEB;
}

static bool se_resolution_absent(const wf_resource *r, const wf_node *at)
{
    (void)at;
    const wf_node *res = wf_map_get(r->spec, "resolution");
    return r->spec && (!res || res->type == WF_NODE_NULL);
}

/* A DestinationRule tls block of mode SIMPLE or MUTUAL without sni and without
 * credentialName (its own row): Istio's setAutoSniAndAutoSanValidation sets Envoy's auto_sni
 * (the SNI from the request's Host); weft-proxy has none. */
static bool tls_auto_sni(const wf_resource *r, const wf_node *at)
{
    (void)r;
    const char *mode = wf_map_str(at, "mode");
    const char *sni = wf_map_str(at, "sni"), *cred = wf_map_str(at, "credentialName");
    if (!mode || (strcmp(mode, "SIMPLE") != 0 && strcmp(mode, "MUTUAL") != 0))
        return false;
    return !(sni && *sni) && !(cred && *cred);
}

/* ... and, with neither subjectAltNames nor insecureSkipVerify true, auto_san_validation (the
 * server certificate checked against the Host): a check weft-proxy does not make. */
static bool tls_auto_san(const wf_resource *r, const wf_node *at)
{
    bool skip = false;
    if (!tls_auto_sni(r, at) || wf_seq_len(wf_map_get(at, "subjectAltNames")) > 0)
        return false;
    return !(wf_node_bool(wf_map_get(at, "insecureSkipVerify"), &skip) && skip);
}

static bool wasm_not_auth(const wf_resource *r, const wf_node *at)
{
    (void)at;
    const char *p = wf_map_str(r->spec, "phase");
    return !p || (strcasecmp(p, "AUTHN") != 0 && strcasecmp(p, "AUTHZ") != 0);
}

/* r's apiVersion is in an API group whose name ends with suffix ("istio.io"). */
static bool group_ends_with(const wf_resource *r, const char *suffix)
{
    const char *av = r->api_version ? r->api_version : "", *slash = strchr(av, '/');
    size_t n = slash ? (size_t)(slash - av) : 0, k = strlen(suffix);
    return n >= k && memcmp(av + n - k, suffix, k) == 0;
}

static bool is_security_kind(const char *kind)
{
    return kind &&
           (strcmp(kind, "PeerAuthentication") == 0 || strcmp(kind, "AuthorizationPolicy") == 0 ||
            strcmp(kind, "RequestAuthentication") == 0);
}

/* An Istio API group with a kind or version Istio does not serve (a typo, a wrong group):
 * kubectl apply would refuse it; weft's loader keeps it as an unknown kind. */
static bool istio_unknown_kind(const wf_resource *r, const wf_node *at)
{
    (void)at;
    return group_ends_with(r, "istio.io") && !is_security_kind(r->kind_name);
}

static bool istio_unknown_security_kind(const wf_resource *r, const wf_node *at)
{
    (void)at;
    return group_ends_with(r, "istio.io") && is_security_kind(r->kind_name);
}

/* A Kubernetes Ingress: istiod translates those of its ingress class into gateway config. */
static bool kube_ingress(const wf_resource *r, const wf_node *at)
{
    (void)at;
    return group_ends_with(r, "networking.k8s.io") && r->kind_name &&
           strcmp(r->kind_name, "Ingress") == 0;
}

/* Gateway API kinds weft does not model (TCPRoute, TLSRoute, UDPRoute, ReferenceGrant, ...). */
static bool gateway_api_other(const wf_resource *r, const wf_node *at)
{
    (void)at;
    return group_ends_with(r, "gateway.networking.k8s.io") ||
           group_ends_with(r, "gateway.networking.x-k8s.io");
}

/* A Gateway server weft opens no listener for by its protocol: TLS other than passthrough (TLS
 * terminated for TCP), UDP, an unknown protocol (HTTP, HTTP2, GRPC and HTTPS are served; TCP,
 * MONGO, REDIS, MYSQL and TLS with tls.mode PASSTHROUGH or AUTO_PASSTHROUGH too:
 * pilot/gateway_tcp.h; an HTTPS server's TLS settings have rows of their own). */
static bool gw_server_protocol_unserved(const wf_resource *r, const wf_node *server)
{
    (void)r;
    static const char *const served[] = {"HTTP", "HTTP2", "GRPC",  "HTTPS",
                                         "TCP",  "MONGO", "REDIS", "MYSQL"};
    const char *p = wf_map_str(wf_map_get(server, "port"), "protocol");
    const char *mode = wf_map_str(wf_map_get(server, "tls"), "mode");
    if (!p)
        return false;
    if (!strcasecmp(p, "TLS") && mode &&
        (!strcmp(mode, "PASSTHROUGH") || !strcmp(mode, "AUTO_PASSTHROUGH")))
        return false;
    for (size_t i = 0; i < sizeof served / sizeof served[0]; i++)
        if (!strcasecmp(p, served[i]))
            return false;
    return true;
}

/* ---- the table -------------------------------------------------------------------------- */

static const char *const v_audit[] = {"AUDIT", NULL};
static const char *const v_custom[] = {"CUSTOM", NULL};
static const char *const v_auth_phase[] = {"AUTHN", "AUTHZ", NULL};
static const char *const v_none[] = {"NONE", NULL};
static const char *const v_true[] = {"true", NULL};
static const char *const v_passthrough[] = {"PASSTHROUGH", NULL};
static const char *const v_gw_h2[] = {"HTTP2", "GRPC", NULL};
static const char *const v_external_name[] = {"ExternalName", NULL};
static const char *const v_capture_default[] = {"DEFAULT", NULL};
/* The Istio annotations weft honours everywhere: the analyzer's suppressions, the revision. */
#define HONOURED_ANY "galley.istio.io/analyze-suppress", "istio.io/rev"
/* The pod annotations weft-proxy's agent reads from the pod (its stats inclusions), in the
 * local mesh and in Kubernetes alike. */
#define HONOURED_AGENT                                                                             \
    "sidecar.istio.io/statsInclusionPrefixes", "sidecar.istio.io/statsInclusionSuffixes",          \
        "sidecar.istio.io/statsInclusionRegexps", "prometheus.istio.io/merge-metrics"
/* What weft's Kubernetes injector implements (kube/inject_annotations.c, docs/kubernetes.md). */
#define INJECTOR_ANN                                                                               \
    "sidecar.istio.io/inject", "sidecar.istio.io/status",                                          \
        "sidecar.istio.io/rewriteAppHTTPProbers", "sidecar.istio.io/proxyImage",                   \
        "sidecar.istio.io/proxyCPU", "sidecar.istio.io/proxyMemory",                               \
        "sidecar.istio.io/proxyCPULimit", "sidecar.istio.io/proxyMemoryLimit",                     \
        "sidecar.istio.io/logLevel", "sidecar.istio.io/componentLogLevel",                         \
        "sidecar.istio.io/agentLogLevel", "sidecar.istio.io/nativeSidecar",                        \
        "sidecar.istio.io/userVolume", "sidecar.istio.io/userVolumeMount",                         \
        "sidecar.istio.io/interceptionMode", "traffic.sidecar.istio.io/includeOutboundIPRanges",   \
        "traffic.sidecar.istio.io/excludeOutboundIPRanges",                                        \
        "traffic.sidecar.istio.io/includeInboundPorts",                                            \
        "traffic.sidecar.istio.io/excludeInboundPorts",                                            \
        "traffic.sidecar.istio.io/includeOutboundPorts",                                           \
        "traffic.sidecar.istio.io/excludeOutboundPorts",                                           \
        "traffic.sidecar.istio.io/kubevirtInterfaces",                                             \
        "traffic.sidecar.istio.io/excludeInterfaces", "status.sidecar.istio.io/port",              \
        "readiness.status.sidecar.istio.io/initialDelaySeconds",                                   \
        "readiness.status.sidecar.istio.io/periodSeconds",                                         \
        "readiness.status.sidecar.istio.io/failureThreshold", "proxy.istio.io/config",             \
        "prometheus.istio.io/merge-metrics"
static const char *const v_injector_ann[] = {INJECTOR_ANN, NULL};
static const char *const v_any_ann[] = {HONOURED_ANY, NULL};
/* The local mesh: its injector (docs/local-mesh.md; the traffic.sidecar.istio.io ones become
 * istio-init's arguments wherever it installs capture, `weftctl up --capture`). */
static const char *const v_pod_ann[] = {HONOURED_ANY,
                                        HONOURED_AGENT,
                                        "sidecar.istio.io/inject",
                                        "sidecar.istio.io/status",
                                        "sidecar.istio.io/rewriteAppHTTPProbers",
                                        "proxy.istio.io/config",
                                        "traffic.sidecar.istio.io/includeOutboundIPRanges",
                                        "traffic.sidecar.istio.io/excludeOutboundIPRanges",
                                        "traffic.sidecar.istio.io/includeInboundPorts",
                                        "traffic.sidecar.istio.io/excludeInboundPorts",
                                        "traffic.sidecar.istio.io/excludeOutboundPorts",
                                        "traffic.sidecar.istio.io/includeOutboundPorts",
                                        NULL};
/* Kubernetes: the injector's, and the agent's. */
static const char *const v_pod_ann_kube[] = {HONOURED_ANY, HONOURED_AGENT, INJECTOR_ANN, NULL};
static const char *const v_service_ann[] = {HONOURED_ANY, "networking.istio.io/exportTo", NULL};

#define ROW(k, p, w, v, f, e, x)                                                                   \
    {                                                                                              \
        WF_KIND_##k, p, WF_UNIMPL_##w, v, NULL, false, f, e, x, WF_UNIMPL_BOTH                     \
    }
#define SEC(k, p, w, v, f, e, x)                                                                   \
    {                                                                                              \
        WF_KIND_##k, p, WF_UNIMPL_##w, v, NULL, true, f, e, x, WF_UNIMPL_BOTH                      \
    }
/* An annotation map: Istio annotations other than those weft honours (where: BOTH,
 * LOCAL_ONLY, KUBE_ONLY). */
#define KEYS(k, p, honoured, where)                                                                \
    {                                                                                              \
        WF_KIND_##k, p, WF_UNIMPL_ISTIO_KEY_NOT_IN, honoured, NULL, false, "this annotation",      \
            "it is ignored", "x", WF_UNIMPL_##where                                                \
    }
#define MESH(p, w, v, f, e, x)                                                                     \
    {                                                                                              \
        WF_UNIMPL_MESHCONFIG, p, WF_UNIMPL_##w, v, NULL, false, f, e, x, WF_UNIMPL_BOTH            \
    }
/* A ProxyConfig field `weft-proxy proxy` (the injected istio-proxy, agent_config.h) or the
 * injector honours: without effect in the local mesh only. */
#define MESH_LOCAL(p, w, v, f, e, x)                                                               \
    {                                                                                              \
        WF_UNIMPL_MESHCONFIG, p, WF_UNIMPL_##w, v, NULL, false, f, e, x, WF_UNIMPL_LOCAL_ONLY      \
    }
#define FN(k, p, fn, sec, f, e, x)                                                                 \
    {                                                                                              \
        WF_KIND_##k, p, WF_UNIMPL_CUSTOM, NULL, fn, sec, f, e, x, WF_UNIMPL_BOTH                   \
    }

#define SAME         "the traffic is handled as if the field were absent"
#define NO_MONGO     "Istio's Mongo filter (envoy.filters.network.mongo_proxy, Mongo statistics)"
#define MONGO_EFFECT "the port is proxied as plain TCP, without Mongo statistics"
#define NO_GRPC_WEB  "gRPC-Web translation (envoy.filters.http.grpc_web)"
#define GRPC_WEB_EFFECT                                                                            \
    "the port is served as gRPC over HTTP/2; a browser's gRPC-Web request reaches the server "     \
    "untranslated"
#define NO_H2 "HTTP/2"

static const wf_unimpl_entry table[] = {
    /* ---- MeshConfig (the --meshConfig file, or the istio ConfigMap's mesh key) ---- */
    MESH("enableTracing", VALUE_IN, v_true, "tracing", "no spans are reported", "true"),
    MESH("defaultConfig.tracing", PRESENT, NULL, "tracing", "no spans are reported",
         "{sampling: 100}"),
    MESH("extensionProviders", PRESENT, NULL,
         "extension providers (tracers, access-log services, external authorizers)",
         "nothing is sent to them", "[{name: zipkin, zipkin: {service: z, port: 9411}}]"),
    MESH("defaultProviders", PRESENT, NULL, "default extension providers",
         "nothing is sent to them", "{tracing: [zipkin]}"),
    MESH("localityLbSetting", PRESENT, NULL, "locality load balancing and failover",
         "endpoints are used regardless of locality", "{enabled: true}"),
    /* meshMTLS minProtocolVersion and cipherSuites are read (pilot/authn.h); ecdhCurves: */
    MESH("meshMTLS.ecdhCurves", PRESENT, NULL, "ECDH curve settings for mutual TLS",
         "the TLS library's default curves are offered", "[P-256]"),
    MESH("connectTimeout", PRESENT, NULL, "the mesh-wide connect timeout",
         "clusters keep Istio's default 10s unless a DestinationRule sets one", "5s"),
    MESH("tcpKeepalive", PRESENT, NULL, "TCP keepalive on upstream connections", SAME,
         "{time: 7200s}"),
    MESH("outboundClusterStatName", PRESENT, NULL, "cluster stat name patterns",
         "stats keep the cluster names", "'%SERVICE%'"),
    MESH("inboundClusterStatName", PRESENT, NULL, "cluster stat name patterns",
         "stats keep the cluster names", "'%SERVICE%'"),
    MESH("defaultServiceExportTo", PRESENT, NULL, "mesh-wide exportTo defaults",
         "resources without exportTo are exported to every namespace", "['.']"),
    MESH("defaultVirtualServiceExportTo", PRESENT, NULL, "mesh-wide exportTo defaults",
         "resources without exportTo are exported to every namespace", "['.']"),
    MESH("defaultDestinationRuleExportTo", PRESENT, NULL, "mesh-wide exportTo defaults",
         "resources without exportTo are exported to every namespace", "['.']"),
    MESH("discoverySelectors", PRESENT, NULL, "discovery selectors",
         "every namespace of the config folders is used", "[{matchLabels: {env: prod}}]"),
    MESH("serviceSettings", PRESENT, NULL, "service settings (clusterLocal hosts)", SAME,
         "[{settings: {clusterLocal: true}, hosts: ['*']}]"),
    MESH("inboundTrafficPolicy", PRESENT, NULL, "the inbound traffic policy", SAME,
         "{mode: LOCALHOST}"),
    MESH("dnsRefreshRate", PRESENT, NULL, "DNS re-resolution (DNS clusters are resolved once)",
         SAME, "60s"),
    MESH("enableEnvoyAccessLogService", VALUE_IN, v_true, "the Envoy access-log service",
         "no access log is streamed", "true"),
    MESH("tlsDefaults", PRESENT, NULL, "TLS (mesh-wide TLS defaults)", "no TLS settings apply",
         "{minProtocolVersion: TLSV1_3}"),
    MESH("caCertificates", PRESENT, NULL, "TLS (extra trusted CA certificates)",
         "no certificate is trusted or checked", "[{pem: x}]"),
    MESH("verifyCertificateAtClient", VALUE_IN, v_true, "TLS (client-side verification)",
         "no certificate is checked", "true"),
    MESH("proxyListenPort", PRESENT, NULL, "traffic capture (the outbound capture port)", SAME,
         "15001"),
    MESH("proxyInboundListenPort", PRESENT, NULL, "traffic capture (the inbound capture port)",
         SAME, "15006"),
    MESH("proxyHttpPort", PRESENT, NULL, "the HTTP proxy port", SAME, "15080"),
    MESH_LOCAL("defaultConfig.concurrency", PRESENT, NULL, "ProxyConfig concurrency",
               "sidecars run one worker thread, gateways two", "2"),
    MESH_LOCAL("defaultConfig.drainDuration", PRESENT, NULL, "ProxyConfig drain durations",
               "proxies drain for weft's default", "45s"),
    MESH("defaultConfig.terminationDrainDuration", PRESENT, NULL, "ProxyConfig drain durations",
         "proxies drain for weft's default", "5s"),
    MESH_LOCAL("defaultConfig.discoveryAddress", PRESENT, NULL, "ProxyConfig discoveryAddress",
               "proxies use the local mesh's pilot", "istiod.istio-system.svc:15012"),
    MESH_LOCAL("defaultConfig.statusPort", PRESENT, NULL, "ProxyConfig statusPort",
               "the status port stays 15020", "15021"),
    MESH_LOCAL("defaultConfig.proxyAdminPort", PRESENT, NULL, "ProxyConfig proxyAdminPort",
               "the admin port stays 15000", "15001"),
    MESH("defaultConfig.envoyAccessLogService", PRESENT, NULL, "the Envoy access-log service",
         "no access log is streamed", "{address: als:9000}"),
    MESH("defaultConfig.envoyMetricsService", PRESENT, NULL, "the Envoy metrics service",
         "no metrics are streamed", "{address: ms:9000}"),
    MESH("defaultConfig.proxyBootstrapTemplatePath", PRESENT, NULL, "bootstrap templates",
         "proxies get weft's bootstrap", "/etc/b.json"),
    MESH_LOCAL("defaultConfig.holdApplicationUntilProxyStarts", VALUE_IN, v_true,
               "holding applications until the proxy starts", "apps start beside their proxy",
               "true"),
    /* ---- security.istio.io ---- */
    SEC(AUTHORIZATIONPOLICY, "spec.action", VALUE_IN, v_custom,
        "CUSTOM authorization (the ext_authz filter)",
        "the external authorizer is never asked: what the policy's rules match is denied (fail "
        "closed)",
        "CUSTOM"),
    ROW(AUTHORIZATIONPOLICY, "spec.action", VALUE_IN, v_audit, "authorization audit logging",
        "requests are not marked for audit", "AUDIT"),
    /* RequestAuthentication: the jwt_authn filter (pilot/jwt.h); what it leaves out */
    SEC(REQUESTAUTHENTICATION, "spec.targetRef", PRESENT, NULL,
        "RequestAuthentication attached by targetRef (gateways, waypoints)",
        "the policy validates no token", "{kind: Gateway, name: gw}"),
    SEC(REQUESTAUTHENTICATION, "spec.targetRefs", PRESENT, NULL,
        "RequestAuthentication attached by targetRefs (gateways, waypoints)",
        "the policy validates no token", "[{kind: Gateway, name: gw}]"),
    /* ---- telemetry.istio.io, extensions.istio.io, EnvoyFilter ---- */
    ROW(TELEMETRY, "", PRESENT, NULL, "the Telemetry API",
        "metrics, access logs and tracing keep their defaults", ""),
    ROW(ENVOYFILTER, "", PRESENT, NULL, "EnvoyFilter patching", "no patch is applied", ""),
    FN(WASMPLUGIN, "", wasm_not_auth, false, "the Wasm plugin runtime", "the plugin does not run",
       ""),
    SEC(WASMPLUGIN, "spec.phase", VALUE_IN, v_auth_phase, "the Wasm plugin runtime",
        "the authentication or authorization plugin does not run", "AUTHZ"),
    ROW(PROXYCONFIG, "", PRESENT, NULL, "the ProxyConfig resource",
        "proxies keep their defaults (the proxy.istio.io/config annotation is read)", ""),
    ROW(WORKLOADGROUP, "", PRESENT, NULL, "WorkloadGroup (VM auto-registration)",
        "no WorkloadEntry is created", ""),
    ROW(K8S_GATEWAY, "", PRESENT, NULL, "the Kubernetes Gateway API",
        "no gateway is deployed or programmed (use networking.istio.io Gateway)", ""),
    ROW(HTTPROUTE, "", PRESENT, NULL, "the Kubernetes Gateway API",
        "the route is not programmed (use a VirtualService)", ""),
    ROW(GRPCROUTE, "", PRESENT, NULL, "the Kubernetes Gateway API",
        "the route is not programmed (use a VirtualService)", ""),
    /* ---- kinds weft does not know, in Istio's and the Gateway API's groups ---- */
    FN(OTHER, "", istio_unknown_kind, false,
       "this kind (no such Istio resource type: a misspelled kind, or an API version Istio does "
       "not serve)",
       "it is ignored; kubectl apply would refuse it", "networking.istio.io/v1 VirtualServce"),
    FN(OTHER, "", istio_unknown_security_kind, true,
       "this kind (a security policy under an API group or version Istio does not serve)",
       "the policy is ignored; kubectl apply would refuse it",
       "security.istio.io/v1beta2 AuthorizationPolicy"),
    FN(OTHER, "", kube_ingress, false, "Kubernetes Ingress translation",
       "the ingress gateway does not serve it (use a Gateway and a VirtualService)",
       "networking.k8s.io/v1 Ingress"),
    FN(OTHER, "", gateway_api_other, false, "this Gateway API kind",
       "the route or policy is not programmed", "gateway.networking.k8s.io/v1alpha2 TCPRoute"),
    /* ---- DestinationRule ---- */
    SEC(DESTINATIONRULE, "{tp}.tls.credentialName", PRESENT, NULL,
        "client TLS from a credentialName Secret (kubernetes:// SDS in weft-proxy)",
        "the cluster gets no TLS context: requests go upstream in plaintext (as Istio does on a "
        "sidecar for a rule without workloadSelector)",
        "web-cred"),
    SEC(DESTINATIONRULE, "{tp}.tls.caCrl", PRESENT, NULL, "certificate revocation lists (caCrl)",
        "revoked server certificates are accepted", "/etc/crl.pem"),
    FN(DESTINATIONRULE, "{tp}.tls", tls_auto_sni, false,
       "SNI from the request's Host (Envoy's auto_sni, which Istio sets for SIMPLE and MUTUAL "
       "without sni)",
       "no SNI is sent", "{mode: SIMPLE, subjectAltNames: [a.example]}"),
    FN(DESTINATIONRULE, "{tp}.tls", tls_auto_san, true,
       "server certificate checks against the request's Host (Envoy's auto_san_validation, "
       "which Istio sets for SIMPLE and MUTUAL without sni and subjectAltNames)",
       "only the server certificate's chain is checked, not its name", "{mode: SIMPLE}"),
    ROW(DESTINATIONRULE, "{tp}.loadBalancer.consistentHash", PRESENT, NULL,
        "consistent-hash load balancing (sticky sessions)",
        "requests are balanced as without it (LEAST_REQUEST)", "{httpHeaderName: x-user}"),
    ROW(DESTINATIONRULE, "{tp}.loadBalancer.localityLbSetting", PRESENT, NULL,
        "locality load balancing and failover", "endpoints are used regardless of locality",
        "{enabled: true}"),
    ROW(DESTINATIONRULE, "{tp}.loadBalancer.simple", VALUE_IN, v_passthrough,
        "PASSTHROUGH load balancing (original destination)", "the default balancer is used",
        "PASSTHROUGH"),
    ROW(DESTINATIONRULE, "{tp}.loadBalancer.warmupDurationSecs", PRESENT, NULL,
        "slow-start warm-up", "new endpoints get their full share at once", "60s"),
    ROW(DESTINATIONRULE, "{tp}.loadBalancer.warmup", PRESENT, NULL, "slow-start warm-up",
        "new endpoints get their full share at once", "{duration: 60s}"),
    ROW(DESTINATIONRULE, "{tp}.connectionPool.tcp.tcpKeepalive", PRESENT, NULL,
        "TCP keepalive on upstream connections", SAME, "{time: 7200s}"),
    ROW(DESTINATIONRULE, "{tp}.connectionPool.tcp.maxConnectionDuration", PRESENT, NULL,
        "the maximum connection duration of HTTP clusters (TCP proxying applies it)",
        "HTTP upstream connections are not closed for age", "3600s"),
    ROW(DESTINATIONRULE, "{tp}.outlierDetection.splitExternalLocalOriginErrors", VALUE_IN, v_true,
        "local-origin outlier detection", "local-origin failures count as 5xx", "true"),
    ROW(DESTINATIONRULE, "{tp}.outlierDetection.consecutiveLocalOriginFailures", PRESENT, NULL,
        "local-origin outlier detection", SAME, "5"),
    ROW(DESTINATIONRULE, "{tp}.outlierDetection.consecutiveErrors", PRESENT, NULL,
        "the deprecated consecutiveErrors (use consecutive5xxErrors)", "no host is ejected for it",
        "5"),
    ROW(DESTINATIONRULE, "{tp}.tunnel", PRESENT, NULL, "HTTP CONNECT tunnelling",
        "requests are not tunnelled", "{protocol: CONNECT, targetHost: a.example, targetPort: 80}"),
    ROW(DESTINATIONRULE, "{tp}.proxyProtocol", PRESENT, NULL, "the PROXY protocol upstream",
        "no PROXY header is sent", "{version: V1}"),
    ROW(DESTINATIONRULE, "{tp}.retryBudget", PRESENT, NULL, "the retry budget",
        "only the retry circuit breaker (maxRetries) limits retries", "{percent: 20}"),
    ROW(DESTINATIONRULE, "spec.workloadSelector", PRESENT, NULL, "DestinationRule workloadSelector",
        "the rule applies to every workload it is exported to", "{matchLabels: {app: a}}"),
    /* ---- VirtualService ---- */
    ROW(VIRTUALSERVICE, "spec.http[].delegate", PRESENT, NULL, "VirtualService delegation",
        "the route has no destination", "{name: a}"),
    ROW(VIRTUALSERVICE, "spec.http[].mirrors", PRESENT, NULL,
        "the mirrors list (mirror and mirrorPercentage are implemented)",
        "requests are not mirrored", "[{destination: {host: a}}]"),
    ROW(VIRTUALSERVICE, "spec.http[].corsPolicy", PRESENT, NULL, "CORS (the cors filter)",
        "no CORS headers are added and preflight requests are routed as any request",
        "{allowOrigins: [{exact: 'https://a.example'}]}"),
    ROW(VIRTUALSERVICE, "spec.http[].route[].headers", PRESENT, NULL,
        "per-destination header manipulation (route-level headers are implemented)",
        "the headers are not changed", "{request: {set: {x-a: b}}}"),
    ROW(VIRTUALSERVICE, "spec.http[].retries.retryRemoteLocalities", PRESENT, NULL,
        "retryRemoteLocalities", SAME, "true"),
    ROW(VIRTUALSERVICE, "spec.http[].fault.abort.http2Error", PRESENT, NULL,
        "HTTP/2 fault injection", "no request is aborted", "REFUSED_STREAM"),
    ROW(VIRTUALSERVICE, "spec.http[].fault.delay.exponentialDelay", PRESENT, NULL,
        "exponential fault delays", "no request is delayed", "1s"),
    ROW(VIRTUALSERVICE, "spec.http[].directResponse.body.bytes", PRESENT, NULL,
        "binary direct-response bodies (body.string is implemented)", "the response has no body",
        "aGVsbG8="),
    ROW(VIRTUALSERVICE, "spec.http[].match[].statPrefix", PRESENT, NULL, "the route stat prefix",
        "no per-route stats are kept", "a"),
    /* ---- Gateway ---- */
    FN(GATEWAY, "spec.servers[]", gw_server_protocol_unserved, false,
       "serving TLS other than passthrough (TLS terminated for TCP) on a gateway (HTTP, HTTPS "
       "with credentialName, TCP and TLS PASSTHROUGH / AUTO_PASSTHROUGH are implemented)",
       "the gateway opens no listener for the server",
       "{port: {number: 31443, name: tls, protocol: TLS}, hosts: ['*'], tls: {mode: SIMPLE, "
       "credentialName: c}}"),
    ROW(GATEWAY, "spec.servers[].tls.serverCertificate", PRESENT, NULL,
        "certificates from files on a gateway (credentialName is implemented)",
        "the gateway opens no listener for the server", "/etc/certs/server.pem"),
    ROW(GATEWAY, "spec.servers[].tls.caCertificates", PRESENT, NULL,
        "a client CA from a file on a gateway (the <credentialName>-cacert Secret is implemented)",
        "the CA comes from the credentialName Secrets", "/etc/certs/ca.pem"),
    ROW(GATEWAY, "spec.servers[].tls.credentialNames", PRESENT, NULL,
        "several certificates per server (credentialNames)",
        "the gateway opens no listener for the server", "[a, b]"),
    ROW(GATEWAY, "spec.servers[].tls.tlsCertificates", PRESENT, NULL,
        "several certificates per server (tlsCertificates)",
        "the gateway opens no listener for the server", "[{serverCertificate: /a.pem}]"),
    ROW(GATEWAY, "spec.servers[].tls.caCertCredentialName", PRESENT, NULL,
        "a separate client CA credential (caCertCredentialName)",
        "the CA comes from <credentialName>-cacert, else the credentialName Secret's ca.crt",
        "ca-cred"),
    ROW(GATEWAY, "spec.servers[].tls.caCrl", PRESENT, NULL, "certificate revocation lists",
        "revoked client certificates are accepted", "/etc/certs/crl.pem"),
    ROW(GATEWAY, "spec.servers[].tls.verifyCertificateSpki", PRESENT, NULL,
        "client certificate SPKI pinning", "any client certificate the CA signed is accepted",
        "[abc]"),
    ROW(GATEWAY, "spec.servers[].tls.verifyCertificateHash", PRESENT, NULL,
        "client certificate hash pinning", "any client certificate the CA signed is accepted",
        "[abc]"),
    ROW(GATEWAY, "spec.servers[].port.protocol", VALUE_IN, v_gw_h2, NO_H2,
        "the server speaks HTTP/1.1 only; HTTP/2 and gRPC clients fail", "GRPC"),
    ROW(GATEWAY, "spec.servers[].bind", PRESENT, NULL, "the Gateway server bind address",
        "the server listens on the gateway pod's address", "127.0.0.1"),
    ROW(GATEWAY, "spec.servers[].defaultEndpoint", PRESENT, NULL,
        "the Gateway server defaultEndpoint", SAME, "127.0.0.1:8080"),
    /* ---- Sidecar ---- */
    ROW(SIDECAR, "spec.ingress", PRESENT, NULL, "the Sidecar ingress listener",
        "inbound listeners follow the workload's ports", "[{port: {number: 80}}]"),
    ROW(SIDECAR, "spec.egress[].port", PRESENT, NULL, "the Sidecar egress listener port",
        "the hosts apply to every port", "{number: 80}"),
    ROW(SIDECAR, "spec.egress[].bind", PRESENT, NULL, "the Sidecar egress bind address", SAME,
        "127.0.0.1"),
    ROW(SIDECAR, "spec.egress[].captureMode", VALUE_NOT_IN, v_capture_default, "traffic capture",
        SAME, "NONE"),
    ROW(SIDECAR, "spec.inboundConnectionPool", PRESENT, NULL, "the inbound connection pool", SAME,
        "{http: {http1MaxPendingRequests: 10}}"),
    ROW(SIDECAR, "spec.outboundTrafficPolicy.egressProxy", PRESENT, NULL, "the egress proxy",
        "unknown destinations are not sent to the egress proxy", "{host: egress.example}"),
    /* ---- annotations Istio's injector or istiod read ---- */
    KEYS(POD, "metadata.annotations.*", v_pod_ann, LOCAL_ONLY),
    KEYS(DEPLOYMENT, "spec.template.metadata.annotations.*", v_pod_ann, LOCAL_ONLY),
    KEYS(STATEFULSET, "spec.template.metadata.annotations.*", v_pod_ann, LOCAL_ONLY),
    KEYS(DAEMONSET, "spec.template.metadata.annotations.*", v_pod_ann, LOCAL_ONLY),
    KEYS(REPLICASET, "spec.template.metadata.annotations.*", v_pod_ann, LOCAL_ONLY),
    KEYS(POD, "metadata.annotations.*", v_pod_ann_kube, KUBE_ONLY),
    KEYS(DEPLOYMENT, "spec.template.metadata.annotations.*", v_pod_ann_kube, KUBE_ONLY),
    KEYS(STATEFULSET, "spec.template.metadata.annotations.*", v_pod_ann_kube, KUBE_ONLY),
    KEYS(DAEMONSET, "spec.template.metadata.annotations.*", v_pod_ann_kube, KUBE_ONLY),
    KEYS(REPLICASET, "spec.template.metadata.annotations.*", v_pod_ann_kube, KUBE_ONLY),
    KEYS(SERVICE, "metadata.annotations.*", v_service_ann, BOTH),
    KEYS(NAMESPACE, "metadata.annotations.*", v_any_ann, BOTH),
    /* ---- Service, ServiceEntry, WorkloadEntry ---- */
    FN(SERVICE, "spec.ports[]", port_is_mongo, false, NO_MONGO, MONGO_EFFECT,
       "{name: mongo-db, port: 27017}"),
    FN(SERVICE, "spec.ports[]", port_is_grpc_web, false, NO_GRPC_WEB, GRPC_WEB_EFFECT,
       "{name: grpc-web, port: 8080}"),
    ROW(SERVICE, "spec.type", VALUE_IN, v_external_name, "the ExternalName Service type",
        "the service gets no endpoints", "ExternalName"),
    ROW(SERVICE, "spec.clusterIP", VALUE_IN, v_none, "headless Service routing",
        "explicit-mode sidecars balance requests over the pods as for a ClusterIP Service; "
        "captured ones have no listener for it (the DNS proxy answers the pod IPs: the "
        "passthrough chains take the connections)",
        "None"),
    FN(SERVICEENTRY, "spec.ports[]", port_is_mongo, false, NO_MONGO, MONGO_EFFECT,
       "{name: db, number: 27017, protocol: MONGO}"),
    FN(SERVICEENTRY, "spec.ports[]", port_is_grpc_web, false, NO_GRPC_WEB, GRPC_WEB_EFFECT,
       "{name: web, number: 8080, protocol: GRPC-WEB}"),
    ROW(SERVICEENTRY, "spec.resolution", VALUE_IN, v_none,
        "resolution NONE (original-destination forwarding) without traffic capture",
        "explicit-mode requests get 503 UH (no original destination); captured sidecars "
        "forward them to it",
        "NONE"),
    FN(SERVICEENTRY, "", se_resolution_absent, false,
       "resolution NONE, the default when spec.resolution is absent (original-destination "
       "forwarding) without traffic capture",
       "explicit-mode requests get 503 UH (no original destination); captured sidecars "
       "forward them to it",
       ""),
    ROW(SERVICEENTRY, "spec.endpoints[].locality", PRESENT, NULL, "endpoint locality", SAME, "r/z"),
    ROW(SERVICEENTRY, "spec.endpoints[].network", PRESENT, NULL, "multi-network routing", SAME,
        "n1"),
    ROW(SERVICEENTRY, "spec.subjectAltNames", PRESENT, NULL,
        "upstream certificate verification (subjectAltNames)", "no certificate is checked",
        "[spiffe://a]"),
    ROW(WORKLOADENTRY, "spec.weight", PRESENT, NULL, "WorkloadEntry weight",
        "the endpoint has weight 1", "5"),
    ROW(WORKLOADENTRY, "spec.locality", PRESENT, NULL, "endpoint locality", SAME, "r/z"),
    ROW(WORKLOADENTRY, "spec.network", PRESENT, NULL, "multi-network routing", SAME, "n1"),
};

const wf_unimpl_entry *wf_unimpl_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

bool wf_unimpl_holds(const wf_unimpl_entry *e, wf_unimpl_target t)
{
    return e->where == WF_UNIMPL_BOTH ||
           (e->where == WF_UNIMPL_LOCAL_ONLY) == (t == WF_UNIMPL_LOCAL_MESH);
}

const char *const *wf_unimpl_injector_annotations(void)
{
    return v_injector_ann;
}

const char *wf_unimpl_code(const wf_unimpl_entry *e)
{
    return e->security ? "WFT0002" : "WFT0001";
}

/* ---- the scanner ------------------------------------------------------------------------ */

#define FIELD_MAX 512

typedef struct scan {
    const wf_resource *r;
    const wf_unimpl_entry *e;
    wf_unimpl_cb cb;
    void *arg;
    char field[FIELD_MAX];
    const char *key; /* the map key of the last "*" step */
    int hits;
    bool stop;
} scan;

static bool value_in(const wf_node *n, const char *const *values)
{
    const char *s = wf_node_str(n);
    for (size_t i = 0; s && values && values[i]; i++)
        if (strcasecmp(s, values[i]) == 0)
            return true;
    return false;
}

/* An annotation Istio defines for this kind of resource ("sidecar.istio.io/logLevel" on a
 * Pod or a workload's template): an unknown one (a typo) or one on the wrong kind is
 * analyze's IST0108 / IST0107, not something weft lacks. */
static bool istio_key(const char *key, wf_kind kind)
{
    const wf_annotation_def *d = wf_annotation_lookup(key);
    unsigned want = kind == WF_KIND_SERVICE     ? WF_ANN_RES_SERVICE
                    : kind == WF_KIND_NAMESPACE ? WF_ANN_RES_NAMESPACE
                                                : WF_ANN_RES_POD; /* pods and templates */
    for (size_t i = 0; d && i < WF_ANN_MAX_RESOURCES && d->resources[i]; i++)
        if (d->resources[i] == WF_ANN_RES_ANY || d->resources[i] == want)
            return true;
    return false;
}

static bool key_in(const char *key, const char *const *values)
{
    for (size_t i = 0; values && values[i]; i++)
        if (strcmp(key, values[i]) == 0)
            return true;
    return false;
}

static bool applies(const scan *sc, const wf_node *n)
{
    if (!n || n->type == WF_NODE_NULL)
        return false;
    switch (sc->e->when) {
    case WF_UNIMPL_PRESENT:
        return true;
    case WF_UNIMPL_VALUE_IN:
        return n->type == WF_NODE_SCALAR && value_in(n, sc->e->values);
    case WF_UNIMPL_VALUE_NOT_IN:
        return n->type == WF_NODE_SCALAR && !value_in(n, sc->e->values);
    case WF_UNIMPL_CUSTOM:
        return sc->e->pred(sc->r, n);
    case WF_UNIMPL_ISTIO_KEY_NOT_IN:
        return sc->key && istio_key(sc->key, sc->r->kind) && !key_in(sc->key, sc->e->values);
    }
    return false;
}

static void report(scan *sc, const wf_node *at, uint32_t line, uint32_t col)
{
    const wf_unimpl_hit h = {sc->e, sc->r, at, sc->field, line, col};
    sc->hits++;
    if (!sc->cb(&h, sc->arg))
        sc->stop = true;
}

/* Append ".key" (no dot at the start) or "[idx]" to sc->field at offset len. Return the new
 * length, or 0 when it would not fit. No printf: this runs for every field of every resource. */
static size_t put_key(scan *sc, size_t len, const char *key, size_t klen)
{
    size_t need = len + (len ? 1 : 0) + klen;
    if (need >= FIELD_MAX)
        return 0;
    if (len)
        sc->field[len++] = '.';
    memcpy(sc->field + len, key, klen);
    sc->field[need] = '\0';
    return need;
}

/* "[key]", for a map key (an annotation name, a port) */
static size_t put_bracket(scan *sc, size_t len, const char *key)
{
    size_t klen = strlen(key);
    if (len + klen + 2 >= FIELD_MAX)
        return 0;
    sc->field[len++] = '[';
    memcpy(sc->field + len, key, klen);
    len += klen;
    sc->field[len++] = ']';
    sc->field[len] = '\0';
    return len;
}

static size_t put_idx(scan *sc, size_t len, size_t idx)
{
    char digits[24];
    size_t n = 0;
    do
        digits[n++] = (char)('0' + idx % 10);
    while ((idx /= 10) && n < sizeof digits);
    if (len + n + 2 >= FIELD_MAX)
        return 0;
    sc->field[len++] = '[';
    while (n)
        sc->field[len++] = digits[--n];
    sc->field[len++] = ']';
    sc->field[len] = '\0';
    return len;
}

/* Walks path, then tail (a second path, "" for none), from n; len is the length of the field
 * path so far in sc->field; line/col are n's key's position. */
static void walk(scan *sc, const wf_node *n, const char *path, const char *tail, size_t len,
                 uint32_t line, uint32_t col);

static void walk_key(scan *sc, const wf_node *n, const char *seg, size_t slen, const char *rest,
                     const char *tail, size_t len)
{
    bool each = slen > 2 && seg[slen - 2] == '[' && seg[slen - 1] == ']';
    size_t klen = each ? slen - 2 : slen;
    for (size_t i = n->len; i-- > 0;) { /* the last of repeated keys wins, as wf_map_get */
        const wf_map_entry *me = &n->u.entries[i];
        if (strncmp(me->key, seg, klen) != 0 || me->key[klen] != '\0')
            continue;
        size_t l2 = put_key(sc, len, me->key, klen);
        if (!l2)
            return;
        if (!each) {
            walk(sc, me->value, rest, tail, l2, me->key_line, me->key_col);
            return;
        }
        for (size_t j = 0; j < wf_seq_len(me->value) && !sc->stop; j++) {
            const wf_node *item = wf_seq_at(me->value, j);
            size_t l3 = put_idx(sc, l2, j);
            if (l3)
                walk(sc, item, rest, tail, l3, item->line, item->col);
        }
        return;
    }
}

static void walk(scan *sc, const wf_node *n, const char *path, const char *tail, size_t len,
                 uint32_t line, uint32_t col)
{
    sc->field[len] = '\0';
    if (!n || sc->stop)
        return;
    if (*path == '\0' && *tail != '\0') {
        path = tail;
        tail = "";
    }
    if (*path == '\0') {
        if (applies(sc, n))
            report(sc, n, line, col);
        return;
    }
    if (n->type != WF_NODE_MAP)
        return;
    const char *dot = strchr(path, '.');
    size_t slen = dot ? (size_t)(dot - path) : strlen(path);
    const char *rest = dot ? dot + 1 : "";
    if (slen == 1 && path[0] == '*') {
        for (size_t i = 0; i < n->len && !sc->stop; i++) {
            const wf_map_entry *me = &n->u.entries[i];
            size_t l2 = put_bracket(sc, len, me->key);
            sc->key = me->key;
            if (l2)
                walk(sc, me->value, rest, tail, l2, me->key_line, me->key_col);
            sc->key = NULL;
        }
        return;
    }
    walk_key(sc, n, path, slen, rest, tail, len);
}

/* The places of a DestinationRule that hold a TrafficPolicy. */
static const char *const tp_places[] = {
    "spec.trafficPolicy",
    "spec.trafficPolicy.portLevelSettings[]",
    "spec.subsets[].trafficPolicy",
    "spec.subsets[].trafficPolicy.portLevelSettings[]",
};

static void scan_row(scan *sc)
{
    const char *path = sc->e->path;
    if (*path == '\0') {
        sc->field[0] = '\0';
        if (sc->e->when == WF_UNIMPL_PRESENT || sc->e->pred(sc->r, NULL))
            report(sc, NULL, sc->r->line, sc->r->col);
        return;
    }
    if (strncmp(path, "{tp}.", 5) != 0) {
        walk(sc, sc->r->root, path, "", 0, sc->r->line, sc->r->col);
        return;
    }
    for (size_t i = 0; i < sizeof tp_places / sizeof tp_places[0] && !sc->stop; i++)
        walk(sc, sc->r->root, tp_places[i], path + 5, 0, sc->r->line, sc->r->col);
}

int wf_unimpl_scan(const wf_resource *r, wf_unimpl_target t, wf_unimpl_cb cb, void *arg)
{
    scan sc = {.r = r, .cb = cb, .arg = arg};
    if (wf_kvs_get(&r->annotations, WF_UNIMPL_GENERATED_ANNOTATION))
        return 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0] && !sc.stop; i++) {
        if (table[i].kind != r->kind || !wf_unimpl_holds(&table[i], t))
            continue;
        sc.e = &table[i];
        scan_row(&sc);
    }
    return sc.hits;
}

/* A MeshConfig or ProxyConfig document as a resource of the WF_UNIMPL_MESHCONFIG rows. */
static wf_resource config_doc(const char *kind_name, const wf_node *root, const char *file)
{
    return (wf_resource){.kind = WF_UNIMPL_MESHCONFIG,
                         .kind_name = kind_name,
                         .name = "",
                         .ns = "",
                         .root = root,
                         .spec = root,
                         .file = file,
                         .line = root->line,
                         .col = root->col};
}

int wf_unimpl_scan_mesh(const wf_node *root, const char *file, wf_unimpl_target t, wf_unimpl_cb cb,
                        void *arg)
{
    if (!root || root->type != WF_NODE_MAP)
        return 0;
    wf_resource r = config_doc("MeshConfig", root, file);
    return wf_unimpl_scan(&r, t, cb, arg);
}

int wf_unimpl_scan_proxyconfig(const wf_node *root, const char *file, wf_unimpl_target t,
                               wf_unimpl_cb cb, void *arg)
{
    if (!root || root->type != WF_NODE_MAP)
        return 0;
    wf_resource r = config_doc("ProxyConfig", root, file);
    scan sc = {.r = &r, .cb = cb, .arg = arg};
    for (size_t i = 0; i < sizeof table / sizeof table[0] && !sc.stop; i++) {
        if (table[i].kind != WF_UNIMPL_MESHCONFIG || !wf_unimpl_holds(&table[i], t) ||
            strncmp(table[i].path, "defaultConfig.", 14))
            continue;
        sc.e = &table[i];
        walk(&sc, root, table[i].path + 14, "", 0, r.line, r.col);
    }
    return sc.hits;
}

/* ---- messages --------------------------------------------------------------------------- */

const char *wf_unimpl_subject(const wf_unimpl_hit *hit, char *buf, size_t cap)
{
    if (!hit->field || !*hit->field) /* the kind as written (also for kinds weft does not know) */
        return hit->res->kind_name && *hit->res->kind_name ? hit->res->kind_name
                                                           : wf_kind_name(hit->entry->kind);
    /* a list item (a port, a server) is easier to find by its name or number */
    const char *id = NULL;
    if (hit->at && hit->at->type == WF_NODE_MAP) {
        id = wf_map_str(hit->at, "name");
        if (!id)
            id = wf_map_str(hit->at, "port") ? wf_map_str(hit->at, "port")
                                             : wf_map_str(hit->at, "number");
    }
    if (!id || snprintf(buf, cap, "%s (%s)", hit->field, id) >= (int)cap)
        return hit->field;
    return buf;
}

void wf_unimpl_detail(const wf_unimpl_hit *hit, wf_strbuf *out)
{
    wf_strbuf_printf(out, "%s is not implemented; %s", hit->entry->feature, hit->entry->effect);
}

void wf_unimpl_message(const wf_unimpl_hit *hit, wf_strbuf *out)
{
    char buf[600];
    wf_strbuf_printf(out, "%s %s: ", wf_unimpl_subject(hit, buf, sizeof buf),
                     hit->entry->security ? "is not enforced by weft" : "has no effect in weft");
    wf_unimpl_detail(hit, out);
}
