/*
 * validate_schema_tables.c - the messages of istio.io/api as field tables.
 *
 * Field names and types follow the Istio API reference (networking v1, security v1,
 * telemetry v1, extensions v1alpha1) and the OpenAPI schemas of Istio's CRDs
 * (manifests/charts/base/files/crd-all.gen.yaml). Wrapper types (BoolValue, UInt32Value,
 * DoubleValue, Int32Value) are their plain JSON types. EnvoyFilter match/patch details,
 * Telemetry providers' sections and ProxyConfig's image are open: listed fields are typed,
 * others pass.
 */
#include "model/validate_schema.h"

#include "model/istio_enums.h"

#include <stddef.h>

#define F(n, t)                                                                                    \
    {                                                                                              \
        n, t, 0, 0, NULL                                                                           \
    }
#define FL(n, t)                                                                                   \
    {                                                                                              \
        n, t, F_LIST, 0, NULL                                                                      \
    }
#define FMAP(n, t)                                                                                 \
    {                                                                                              \
        n, t, F_MAP, 0, NULL                                                                       \
    }
#define FE(n, e)                                                                                   \
    {                                                                                              \
        n, S_ENUM, 0, 0, e                                                                         \
    }
#define FM(n, m)                                                                                   \
    {                                                                                              \
        n, S_MSG, 0, 0, &m                                                                         \
    }
#define FML(n, m)                                                                                  \
    {                                                                                              \
        n, S_MSG, F_LIST, 0, &m                                                                    \
    }
#define FMM(n, m)                                                                                  \
    {                                                                                              \
        n, S_MSG, F_MAP, 0, &m                                                                     \
    }
#define FO(n, t, g)                                                                                \
    {                                                                                              \
        n, t, 0, g, NULL                                                                           \
    }
#define FOM(n, m, g)                                                                               \
    {                                                                                              \
        n, S_MSG, 0, g, &m                                                                         \
    }
#define FOE(n, e, g)                                                                               \
    {                                                                                              \
        n, S_ENUM, 0, g, e                                                                         \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, 0, 0, 0, NULL                                                                        \
    }
#define MSG(id, open_, ...)                                                                        \
    static const vs_field id##_f[] = {__VA_ARGS__, END};                                           \
    static const vs_msg id = {id##_f, open_};

/* ---- shared ---- */

MSG(m_workload_selector, false, FMAP("matchLabels", S_STR))
MSG(m_alpha_selector, false, FMAP("labels", S_STR))
MSG(m_target_ref, false, F("group", S_STR), F("kind", S_STR), F("name", S_STR),
    F("namespace", S_STR))
MSG(m_port_selector, false, F("number", S_U32))
MSG(m_percent, false, F("value", S_DBL))
MSG(m_destination, false, F("host", S_STR), F("subset", S_STR), FM("port", m_port_selector))
MSG(m_string_match, false, FO("exact", S_STR, 1), FO("prefix", S_STR, 1), FO("regex", S_STR, 1))

/* ---- VirtualService ---- */

static const char *const e_derive_port[] = {"FROM_PROTOCOL_DEFAULT", "FROM_REQUEST_PORT", NULL};
static const char *const e_unmatched_preflights[] = {"UNSPECIFIED", "FORWARD", "IGNORE", NULL};

MSG(m_header_ops, false, FMAP("set", S_STR), FMAP("add", S_STR), FL("remove", S_STR))
MSG(m_headers, false, FM("request", m_header_ops), FM("response", m_header_ops))
MSG(m_http_match, false, F("name", S_STR), FM("uri", m_string_match), FM("scheme", m_string_match),
    FM("method", m_string_match), FM("authority", m_string_match), FMM("headers", m_string_match),
    F("port", S_U32), FMAP("sourceLabels", S_STR), FL("gateways", S_STR),
    FMM("queryParams", m_string_match), F("ignoreUriCase", S_BOOL),
    FMM("withoutHeaders", m_string_match), F("sourceNamespace", S_STR), F("statPrefix", S_STR))
MSG(m_http_route_dest, false, FM("destination", m_destination), F("weight", S_I32),
    FM("headers", m_headers))
MSG(m_route_dest, false, FM("destination", m_destination), F("weight", S_I32))
MSG(m_l4_match, false, FL("destinationSubnets", S_STR), F("port", S_U32), F("sourceSubnet", S_STR),
    FMAP("sourceLabels", S_STR), FL("gateways", S_STR), F("sourceNamespace", S_STR))
MSG(m_tls_match, false, FL("sniHosts", S_STR), FL("destinationSubnets", S_STR), F("port", S_U32),
    FMAP("sourceLabels", S_STR), FL("gateways", S_STR), F("sourceNamespace", S_STR))
MSG(m_redirect, false, F("uri", S_STR), F("authority", S_STR), FO("port", S_U32, 1),
    FOE("derivePort", e_derive_port, 1), F("scheme", S_STR), F("redirectCode", S_U32))
MSG(m_http_body, false, FO("string", S_STR, 1), FO("bytes", S_BYTES, 1))
MSG(m_direct_response, false, F("status", S_U32), FM("body", m_http_body))
MSG(m_delegate, false, F("name", S_STR), F("namespace", S_STR))
MSG(m_regex_rewrite, false, F("match", S_STR), F("rewrite", S_STR))
MSG(m_rewrite, false, F("uri", S_STR), F("authority", S_STR),
    FM("uriRegexRewrite", m_regex_rewrite))
MSG(m_retry, false, F("attempts", S_I32), F("perTryTimeout", S_DUR), F("retryOn", S_STR),
    F("retryRemoteLocalities", S_BOOL), F("retryIgnorePreviousHosts", S_BOOL), F("backoff", S_DUR))
MSG(m_cors, false, FML("allowOrigins", m_string_match), FL("allowOrigin", S_STR),
    FL("allowMethods", S_STR), FL("allowHeaders", S_STR), FL("exposeHeaders", S_STR),
    F("maxAge", S_DUR), F("allowCredentials", S_BOOL),
    FE("unmatchedPreflights", e_unmatched_preflights))
MSG(m_fault_delay, false, FO("fixedDelay", S_DUR, 1), FO("exponentialDelay", S_DUR, 1),
    FM("percentage", m_percent), F("percent", S_I32))
MSG(m_fault_abort, false, FO("httpStatus", S_I32, 1), FO("grpcStatus", S_STR, 1),
    FO("http2Error", S_STR, 1), FM("percentage", m_percent))
MSG(m_fault, false, FM("delay", m_fault_delay), FM("abort", m_fault_abort))
MSG(m_mirror_policy, false, FM("destination", m_destination), FM("percentage", m_percent))
MSG(m_http_route, false, F("name", S_STR), FML("match", m_http_match),
    FML("route", m_http_route_dest), FM("redirect", m_redirect),
    FM("directResponse", m_direct_response), FM("delegate", m_delegate), FM("rewrite", m_rewrite),
    F("timeout", S_DUR), FM("retries", m_retry), FM("fault", m_fault), FM("mirror", m_destination),
    FML("mirrors", m_mirror_policy), F("mirrorPercent", S_U32), FM("mirrorPercentage", m_percent),
    FM("corsPolicy", m_cors), FM("headers", m_headers))
MSG(m_tls_route, false, FML("match", m_tls_match), FML("route", m_route_dest))
MSG(m_tcp_route, false, FML("match", m_l4_match), FML("route", m_route_dest))
MSG(m_virtualservice, false, FL("hosts", S_STR), FL("gateways", S_STR), FML("http", m_http_route),
    FML("tls", m_tls_route), FML("tcp", m_tcp_route), FL("exportTo", S_STR))

/* ---- DestinationRule ---- */

static const char *const e_simple_lb[] = {"UNSPECIFIED", "LEAST_CONN",    "RANDOM", "PASSTHROUGH",
                                          "ROUND_ROBIN", "LEAST_REQUEST", NULL};
static const char *const e_h2_upgrade[] = {"DEFAULT", "DO_NOT_UPGRADE", "UPGRADE", NULL};
static const char *const e_client_tls_mode[] = {"DISABLE", "SIMPLE", "MUTUAL", "ISTIO_MUTUAL",
                                                NULL};
static const char *const e_proxy_protocol[] = {"V1", "V2", NULL};

MSG(m_cookie_attr, false, F("name", S_STR), F("value", S_STR))
MSG(m_http_cookie, false, F("name", S_STR), F("path", S_STR), F("ttl", S_DUR),
    FML("attributes", m_cookie_attr))
MSG(m_ring_hash, false, F("minimumRingSize", S_U64))
MSG(m_maglev, false, F("tableSize", S_U64))
MSG(m_consistent_hash, false, FO("httpHeaderName", S_STR, 1), FOM("httpCookie", m_http_cookie, 1),
    FO("useSourceIp", S_BOOL, 1), FO("httpQueryParameterName", S_STR, 1),
    FOM("ringHash", m_ring_hash, 2), FOM("maglev", m_maglev, 2), F("minimumRingSize", S_U64))
MSG(m_locality_distribute, false, F("from", S_STR), FMAP("to", S_U32))
MSG(m_locality_failover, false, F("from", S_STR), F("to", S_STR))
MSG(m_locality_lb, false, FML("distribute", m_locality_distribute),
    FML("failover", m_locality_failover), FL("failoverPriority", S_STR), F("enabled", S_BOOL))
MSG(m_warmup, false, F("duration", S_DUR), F("minimumPercent", S_DBL), F("aggression", S_DBL))
MSG(m_load_balancer, false, FOE("simple", e_simple_lb, 1),
    FOM("consistentHash", m_consistent_hash, 1), FM("localityLbSetting", m_locality_lb),
    F("warmupDurationSecs", S_DUR), FM("warmup", m_warmup))
MSG(m_tcp_keepalive, false, F("probes", S_U32), F("time", S_DUR), F("interval", S_DUR))
MSG(m_pool_tcp, false, F("maxConnections", S_I32), F("connectTimeout", S_DUR),
    FM("tcpKeepalive", m_tcp_keepalive), F("maxConnectionDuration", S_DUR), F("idleTimeout", S_DUR))
MSG(m_pool_http, false, F("http1MaxPendingRequests", S_I32), F("http2MaxRequests", S_I32),
    F("maxRequestsPerConnection", S_I32), F("maxRetries", S_I32), F("idleTimeout", S_DUR),
    FE("h2UpgradePolicy", e_h2_upgrade), F("useClientProtocol", S_BOOL),
    F("maxConcurrentStreams", S_I32))
MSG(m_connection_pool, false, FM("tcp", m_pool_tcp), FM("http", m_pool_http))
MSG(m_outlier, false, F("splitExternalLocalOriginErrors", S_BOOL),
    F("consecutiveLocalOriginFailures", S_U32), F("consecutiveGatewayErrors", S_U32),
    F("consecutive5xxErrors", S_U32), F("interval", S_DUR), F("baseEjectionTime", S_DUR),
    F("maxEjectionPercent", S_I32), F("minHealthPercent", S_I32), F("consecutiveErrors", S_I32))
MSG(m_client_tls, false, FE("mode", e_client_tls_mode), F("clientCertificate", S_STR),
    F("privateKey", S_STR), F("caCertificates", S_STR), F("credentialName", S_STR),
    FL("subjectAltNames", S_STR), F("sni", S_STR), F("insecureSkipVerify", S_BOOL),
    F("caCrl", S_STR))
MSG(m_port_traffic_policy, false, FM("port", m_port_selector), FM("loadBalancer", m_load_balancer),
    FM("connectionPool", m_connection_pool), FM("outlierDetection", m_outlier),
    FM("tls", m_client_tls))
MSG(m_tunnel, false, F("protocol", S_STR), F("targetHost", S_STR), F("targetPort", S_U32))
MSG(m_proxy_protocol, false, FE("version", e_proxy_protocol))
MSG(m_retry_budget, false, F("percent", S_DBL), F("minRetryConcurrency", S_U32))
MSG(m_traffic_policy, false, FM("loadBalancer", m_load_balancer),
    FM("connectionPool", m_connection_pool), FM("outlierDetection", m_outlier),
    FM("tls", m_client_tls), FML("portLevelSettings", m_port_traffic_policy),
    FM("tunnel", m_tunnel), FM("proxyProtocol", m_proxy_protocol),
    FM("retryBudget", m_retry_budget))
MSG(m_subset, false, F("name", S_STR), FMAP("labels", S_STR), FM("trafficPolicy", m_traffic_policy))
MSG(m_destinationrule, false, F("host", S_STR), FM("trafficPolicy", m_traffic_policy),
    FML("subsets", m_subset), FL("exportTo", S_STR), FM("workloadSelector", m_workload_selector))

/* ---- Gateway ---- */

static const char *const e_server_tls_mode[] = {
    "PASSTHROUGH", "SIMPLE", "MUTUAL", "AUTO_PASSTHROUGH", "ISTIO_MUTUAL", "OPTIONAL_MUTUAL", NULL};
static const char *const e_tls_version[] = {"TLS_AUTO", "TLSV1_0", "TLSV1_1",
                                            "TLSV1_2",  "TLSV1_3", NULL};

MSG(m_tls_cert, false, F("serverCertificate", S_STR), F("privateKey", S_STR),
    F("caCertificates", S_STR))
MSG(m_server_tls, false, F("httpsRedirect", S_BOOL), FE("mode", e_server_tls_mode),
    F("serverCertificate", S_STR), F("privateKey", S_STR), F("caCertificates", S_STR),
    F("caCrl", S_STR), F("credentialName", S_STR), FL("credentialNames", S_STR),
    FML("tlsCertificates", m_tls_cert), FL("subjectAltNames", S_STR),
    FL("verifyCertificateSpki", S_STR), FL("verifyCertificateHash", S_STR),
    FE("minProtocolVersion", e_tls_version), FE("maxProtocolVersion", e_tls_version),
    FL("cipherSuites", S_STR))
MSG(m_gw_port, false, F("number", S_U32), F("protocol", S_STR), F("name", S_STR),
    F("targetPort", S_U32))
MSG(m_server, false, FM("port", m_gw_port), F("bind", S_STR), FL("hosts", S_STR),
    FM("tls", m_server_tls), F("defaultEndpoint", S_STR), F("name", S_STR))
MSG(m_gateway, false, FML("servers", m_server), FMAP("selector", S_STR))

/* ---- ServiceEntry, WorkloadEntry, WorkloadGroup ---- */

static const char *const e_se_location[] = {"MESH_EXTERNAL", "MESH_INTERNAL", NULL};
static const char *const e_se_resolution[] = {"NONE", "STATIC", "DNS", "DNS_ROUND_ROBIN", NULL};

MSG(m_se_port, false, F("number", S_U32), F("protocol", S_STR), F("name", S_STR),
    F("targetPort", S_U32))
MSG(m_workloadentry, false, F("address", S_STR), FMAP("ports", S_U32), FMAP("labels", S_STR),
    F("network", S_STR), F("locality", S_STR), F("weight", S_U32), F("serviceAccount", S_STR))
MSG(m_serviceentry, false, FL("hosts", S_STR), FL("addresses", S_STR), FML("ports", m_se_port),
    FE("location", e_se_location), FE("resolution", e_se_resolution),
    FML("endpoints", m_workloadentry), FM("workloadSelector", m_alpha_selector),
    FL("exportTo", S_STR), FL("subjectAltNames", S_STR))
MSG(m_object_meta, false, FMAP("labels", S_STR), FMAP("annotations", S_STR))
MSG(m_http_header, false, F("name", S_STR), F("value", S_STR))
MSG(m_http_get, false, F("path", S_STR), F("port", S_U32), F("host", S_STR), F("scheme", S_STR),
    FML("httpHeaders", m_http_header))
MSG(m_tcp_socket, false, F("host", S_STR), F("port", S_U32))
MSG(m_exec, false, FL("command", S_STR))
MSG(m_grpc_probe, false, F("port", S_U32), F("service", S_STR))
MSG(m_probe, false, F("initialDelaySeconds", S_I32), F("timeoutSeconds", S_I32),
    F("periodSeconds", S_I32), F("successThreshold", S_I32), F("failureThreshold", S_I32),
    FOM("httpGet", m_http_get, 1), FOM("tcpSocket", m_tcp_socket, 1), FOM("exec", m_exec, 1),
    FOM("grpc", m_grpc_probe, 1))
MSG(m_workloadgroup, false, FM("metadata", m_object_meta), FM("template", m_workloadentry),
    FM("probe", m_probe))

/* ---- Sidecar ---- */

static const char *const e_capture_mode[] = {"DEFAULT", "IPTABLES", "NONE", NULL};
static const char *const e_outbound_mode[] = {"REGISTRY_ONLY", "ALLOW_ANY", NULL};

MSG(m_sidecar_port, false, F("number", S_U32), F("protocol", S_STR), F("name", S_STR),
    F("targetPort", S_U32))
MSG(m_ingress_listener, false, FM("port", m_sidecar_port), F("bind", S_STR),
    FE("captureMode", e_capture_mode), F("defaultEndpoint", S_STR), FM("tls", m_server_tls),
    FM("connectionPool", m_connection_pool))
MSG(m_egress_listener, false, FM("port", m_sidecar_port), F("bind", S_STR),
    FE("captureMode", e_capture_mode), FL("hosts", S_STR))
MSG(m_outbound_policy, false, FE("mode", e_outbound_mode), FM("egressProxy", m_destination))
MSG(m_sidecar, false, FM("workloadSelector", m_alpha_selector), FML("ingress", m_ingress_listener),
    FML("egress", m_egress_listener), FM("inboundConnectionPool", m_connection_pool),
    FM("outboundTrafficPolicy", m_outbound_policy))

/* ---- security ---- */

static const char *const e_mtls_mode[] = {"UNSET", "DISABLE", "PERMISSIVE", "STRICT", NULL};
static const char *const e_authz_action[] = {"ALLOW", "DENY", "AUDIT", "CUSTOM", NULL};

MSG(m_mtls, false, FE("mode", e_mtls_mode))
MSG(m_peerauthentication, false, FM("selector", m_workload_selector), FM("mtls", m_mtls),
    {"portLevelMtls", S_MSG, F_MAP | F_U32KEY, 0, &m_mtls})
MSG(m_source, false, FL("principals", S_STR), FL("notPrincipals", S_STR),
    FL("requestPrincipals", S_STR), FL("notRequestPrincipals", S_STR), FL("namespaces", S_STR),
    FL("notNamespaces", S_STR), FL("ipBlocks", S_STR), FL("notIpBlocks", S_STR),
    FL("remoteIpBlocks", S_STR), FL("notRemoteIpBlocks", S_STR), FL("serviceAccounts", S_STR),
    FL("notServiceAccounts", S_STR), FL("trustDomains", S_STR), FL("notTrustDomains", S_STR))
MSG(m_operation, false, FL("hosts", S_STR), FL("notHosts", S_STR), FL("ports", S_STR),
    FL("notPorts", S_STR), FL("methods", S_STR), FL("notMethods", S_STR), FL("paths", S_STR),
    FL("notPaths", S_STR))
MSG(m_rule_from, false, FM("source", m_source))
MSG(m_rule_to, false, FM("operation", m_operation))
MSG(m_condition, false, F("key", S_STR), FL("values", S_STR), FL("notValues", S_STR))
MSG(m_rule, false, FML("from", m_rule_from), FML("to", m_rule_to), FML("when", m_condition))
MSG(m_ext_provider, false, F("name", S_STR))
MSG(m_authorizationpolicy, false, FM("selector", m_workload_selector),
    FM("targetRef", m_target_ref), FML("targetRefs", m_target_ref), FML("rules", m_rule),
    FE("action", e_authz_action), FOM("provider", m_ext_provider, 1))
MSG(m_jwt_header, false, F("name", S_STR), F("prefix", S_STR))
MSG(m_claim_to_header, false, F("header", S_STR), F("claim", S_STR))
MSG(m_jwt_rule, false, F("issuer", S_STR), FL("audiences", S_STR), F("jwksUri", S_STR),
    F("jwks", S_STR), FML("fromHeaders", m_jwt_header), FL("fromParams", S_STR),
    F("outputPayloadToHeader", S_STR), FL("fromCookies", S_STR), F("forwardOriginalToken", S_BOOL),
    FML("outputClaimToHeaders", m_claim_to_header), F("timeout", S_DUR))
MSG(m_requestauthentication, false, FM("selector", m_workload_selector),
    FM("targetRef", m_target_ref), FML("targetRefs", m_target_ref), FML("jwtRules", m_jwt_rule))

/* ---- telemetry, extensions, EnvoyFilter, ProxyConfig ---- */

static const char *const e_workload_mode[] = {"CLIENT_AND_SERVER", "CLIENT", "SERVER", NULL};
static const char *const e_tag_op[] = {"UPSERT", "REMOVE", NULL};

MSG(m_provider_ref, false, F("name", S_STR))
MSG(m_workload_mode_selector, false, FE("mode", e_workload_mode))
MSG(m_tracing, true, FM("match", m_workload_mode_selector), FML("providers", m_provider_ref),
    F("randomSamplingPercentage", S_DBL), F("disableSpanReporting", S_BOOL),
    {"customTags", S_STRUCT, F_MAP, 0, NULL}, F("useRequestIdForTraceSampling", S_BOOL))
MSG(m_tag_override, false, FE("operation", e_tag_op), F("value", S_STR))
MSG(m_metric_selector, true, FO("metric", S_STR, 1), FO("customMetric", S_STR, 1),
    FE("mode", e_workload_mode))
MSG(m_metrics_override, true, FM("match", m_metric_selector), F("disabled", S_BOOL),
    FMM("tagOverrides", m_tag_override))
MSG(m_metrics, true, FML("providers", m_provider_ref), FML("overrides", m_metrics_override),
    F("reportingInterval", S_DUR))
MSG(m_log_filter, true, F("expression", S_STR))
MSG(m_access_logging, true, FM("match", m_workload_mode_selector), FML("providers", m_provider_ref),
    F("disabled", S_BOOL), FM("filter", m_log_filter))
MSG(m_telemetry, false, FM("selector", m_workload_selector), FM("targetRef", m_target_ref),
    FML("targetRefs", m_target_ref), FML("tracing", m_tracing), FML("metrics", m_metrics),
    FML("accessLogging", m_access_logging))

static const char *const e_fail_strategy[] = {"FAIL_CLOSE", "FAIL_OPEN", "FAIL_RELOAD", NULL};
static const char *const e_pull_policy[] = {"UNSPECIFIED_POLICY", "IfNotPresent", "Always", NULL};
static const char *const e_wasm_phase[] = {"UNSPECIFIED_PHASE", "AUTHN", "AUTHZ", "STATS", NULL};
static const char *const e_wasm_type[] = {"UNSPECIFIED_PLUGIN_TYPE", "HTTP", "NETWORK", NULL};
static const char *const e_wasm_mode[] = {"UNDEFINED", "CLIENT", "SERVER", "CLIENT_AND_SERVER",
                                          NULL};
static const char *const e_env_source[] = {"INLINE", "HOST", NULL};

MSG(m_wasm_port, false, F("number", S_U32))
MSG(m_wasm_match, false, FE("mode", e_wasm_mode), FML("ports", m_wasm_port))
MSG(m_env_var, false, F("name", S_STR), F("value", S_STR), FE("valueFrom", e_env_source))
MSG(m_vm_config, false, FML("env", m_env_var))
MSG(m_wasmplugin, false, FM("selector", m_workload_selector), FM("targetRef", m_target_ref),
    FML("targetRefs", m_target_ref), F("url", S_STR), F("sha256", S_STR),
    FE("imagePullPolicy", e_pull_policy), F("imagePullSecret", S_STR), F("verificationKey", S_STR),
    F("pluginConfig", S_STRUCT), F("pluginName", S_STR), FE("phase", e_wasm_phase),
    F("priority", S_I32), FE("failStrategy", e_fail_strategy), FM("vmConfig", m_vm_config),
    FML("match", m_wasm_match), FE("type", e_wasm_type))

static const char *const e_patch_context[] = {"ANY", "SIDECAR_INBOUND", "SIDECAR_OUTBOUND",
                                              "GATEWAY", NULL};
static const char *const e_filter_class[] = {"UNSPECIFIED", "AUTHN", "AUTHZ", "STATS", NULL};

MSG(m_ef_proxy_match, true, F("proxyVersion", S_STR), FMAP("metadata", S_STR))
MSG(m_ef_match, true, FE("context", e_patch_context), FM("proxy", m_ef_proxy_match),
    FO("listener", S_STRUCT, 1), FO("routeConfiguration", S_STRUCT, 1), FO("cluster", S_STRUCT, 1))
MSG(m_ef_patch, true, FE("operation", wf_envoyfilter_patch_op), F("value", S_ANY),
    FE("filterClass", e_filter_class))
MSG(m_ef_config_patch, true, FE("applyTo", wf_envoyfilter_apply_to), FM("match", m_ef_match),
    FM("patch", m_ef_patch))
MSG(m_envoyfilter, false, FM("workloadSelector", m_alpha_selector), FML("targetRefs", m_target_ref),
    FML("configPatches", m_ef_config_patch), F("priority", S_I32))

MSG(m_image, true, F("imageType", S_STR))
MSG(m_proxyconfig, false, FM("selector", m_workload_selector), F("concurrency", S_I32),
    FMAP("environmentVariables", S_STR), FM("image", m_image))

const vs_msg *vs_schema_for_kind(wf_kind kind)
{
    switch (kind) {
    case WF_KIND_VIRTUALSERVICE:
        return &m_virtualservice;
    case WF_KIND_DESTINATIONRULE:
        return &m_destinationrule;
    case WF_KIND_GATEWAY:
        return &m_gateway;
    case WF_KIND_SERVICEENTRY:
        return &m_serviceentry;
    case WF_KIND_WORKLOADENTRY:
        return &m_workloadentry;
    case WF_KIND_WORKLOADGROUP:
        return &m_workloadgroup;
    case WF_KIND_SIDECAR:
        return &m_sidecar;
    case WF_KIND_ENVOYFILTER:
        return &m_envoyfilter;
    case WF_KIND_PROXYCONFIG:
        return &m_proxyconfig;
    case WF_KIND_PEERAUTHENTICATION:
        return &m_peerauthentication;
    case WF_KIND_AUTHORIZATIONPOLICY:
        return &m_authorizationpolicy;
    case WF_KIND_REQUESTAUTHENTICATION:
        return &m_requestauthentication;
    case WF_KIND_TELEMETRY:
        return &m_telemetry;
    case WF_KIND_WASMPLUGIN:
        return &m_wasmplugin;
    default:
        return NULL;
    }
}
