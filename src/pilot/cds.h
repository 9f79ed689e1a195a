/*
 * cds.h - the clusters (CDS) of a sidecar proxy, translated from the config store.
 *
 * Input: a finalized wf_store (model/store.h) holding Kubernetes Services, ServiceEntries,
 * WorkloadEntries and Pods (DNS clusters' inline endpoints), Sidecars (through opt->scope) and
 * Istio DestinationRules. Output: one jansson object per cluster, in Envoy v3 JSON shape with the
 * snake_case names Envoy's /config_dump prints ("@type", "name", "type",
 * "eds_cluster_config", "connect_timeout", "lb_policy", "circuit_breakers",
 * "outlier_detection", "common_lb_config", "typed_extension_protocol_options", "metadata").
 * Durations are protobuf JSON text ("10s", "0.030s"); integers are JSON numbers.
 *
 * What is built, following Istio (pilot/pkg/networking/core/cluster.go, cluster_builder.go,
 * cluster_traffic_policy.go) and checked against the dumps in
 * ../shared/corpus/istioctl-golden/upstream/ (describe/testdata/describe/http_config.json):
 *  - for every port of every service the proxy sees (pilot/serviceentry.h: Kubernetes Services
 *    and ServiceEntry hosts, exportTo, Sidecar scope; UDP ports skipped, as Istio drops them):
 *    `outbound|<port>||<host>` and, only for the subsets the applicable DestinationRule
 *    defines, `outbound|<port>|<subset>|<host>` (a route to any other subset finds no
 *    cluster: 503 NC). The host of a Service is `name.namespace.svc.<domain suffix>`, of a
 *    ServiceEntry the host as written.
 *    Kubernetes Services and STATIC ServiceEntries: type EDS, eds_cluster_config {eds_config {ads
 * {}, initial_fetch_timeout "0s", resource_api_version "V3"}, service_name = the cluster name};
 * connect_timeout "10s" (MeshConfig default); circuit_breakers.thresholds[0] = 4294967295 for
 * max_connections, max_pending_requests, max_requests, max_retries with track_remaining true
 *    (getDefaultCircuitBreakerThresholds); alt_stat_name "<name>;" (Istio's delimited stat
 *    prefix, reference envoy-istio-behaviour.md §6.4); metadata.filter_metadata.istio with
 *    default_original_port, services [{host, name, namespace}] (for a ServiceEntry name = the
 *    host, namespace = the ServiceEntry's, as Istio), subset (subset clusters) and
 *    config "/apis/networking.istio.io/v1/namespaces/<ns>/destination-rule/<name>" when a
 *    DestinationRule applies.
 *  - ServiceEntry resolution DNS / DNS_ROUND_ROBIN (Istio's convertResolution, cluster_builder.go
 *    buildCluster): type STRICT_DNS / LOGICAL_DNS without eds_cluster_config, the same
 *    defaults and metadata, then load_assignment {"cluster_name", "endpoints": [one locality
 *    group of the endpoints (eds.h wf_eds_locality_endpoints without health fields): the SE's
 *    endpoints, or the host itself at the port's targetPort/number]}, dns_refresh_rate "60s"
 *    (MeshConfig dnsRefreshRate default) and dns_lookup_family "V4_ONLY" (Istio's choice for a
 *    proxy whose addresses are all IPv4, as every local-mesh pod's are). A DNS cluster without
 *    endpoints (a wildcard host without endpoints, a subset matching none) is not built, as
 *    Istio returns no cluster then. Istio's respect_dns_ttl true is left out: weft-proxy's
 *    cluster loader rejects the field (unknown fields NACK the whole CDS update).
 *  - ServiceEntry resolution NONE (and unset): Istio's passthrough service cluster, type
 *    ORIGINAL_DST with lb_policy CLUSTER_PROVIDED (whatever the DestinationRule says) and no
 *    endpoints. weft-proxy loads it as a cluster without endpoints (it has no original
 *    destination to use without iptables capture), so requests routed to it fail with no
 *    healthy upstream, as PassthroughCluster does in the local mesh; it is emitted because
 *    operators compare it with Istio's dumps and because routes name it.
 *  - lb_policy: Istio's default since 1.14 is LEAST_REQUEST (applySimpleDefaultLoadBalancer
 *    for an unset or UNSPECIFIED `simple`), so LEAST_REQUEST is written for clusters without
 *    a loadBalancer; ROUND_ROBIN is Envoy's proto default and, as in a config dump, is
 *    written by omitting lb_policy; RANDOM; LEAST_CONN is LEAST_REQUEST. PASSTHROUGH and
 *    consistentHash are not translated (the default applies).
 *  - DestinationRule trafficPolicy, merged as Istio's MergeTrafficPolicy: the top-level
 *    policy, then a matching portLevelSettings entry replaces connectionPool, loadBalancer
 *    and outlierDetection as a whole (no inheritance, as Istio documents); for a subset the
 *    subset's sections override the top-level result one by one and the subset's own
 *    portLevelSettings entry replaces them again.
 *    connectionPool: tcp.maxConnections -> max_connections, tcp.connectTimeout ->
 *    connect_timeout, http.http1MaxPendingRequests -> max_pending_requests,
 *    http.http2MaxRequests -> max_requests, http.maxRetries -> max_retries (each only when
 *    > 0); http.maxRequestsPerConnection (> 0) and http.idleTimeout -> the
 *    envoy.extensions.upstreams.http.v3.HttpProtocolOptions common_http_protocol_options;
 *    http.maxConcurrentStreams (> 0) -> http2_protocol_options.max_concurrent_streams of a
 *    cluster already explicit HTTP/2 (and an empty common_http_protocol_options);
 *    http.useClientProtocol true -> use_downstream_protocol_config.
 *  - Upstream protocol (Istio's setUpstreamProtocol, applyH2Upgrade and clusterWrapper.build;
 *    reference protocols.md §1.5, §2.6), in that order around the connectionPool above:
 *    a port of protocol HTTP2, GRPC or GRPC-Web (model/protocol.h) gets "typed_extension_
 *    protocol_options" {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {"@type",
 *    "explicit_http_config": {"http2_protocol_options": {}}}}; a sniffed port (no declared
 *    protocol) on a sidecar "use_downstream_protocol_config": {"http_protocol_options": {},
 *    "http2_protocol_options": {}} (gateways, opt->router: nothing); then the upgrade to
 *    explicit HTTP/2: never with useClientProtocol true; with h2UpgradePolicy UPGRADE on any
 *    port, DO_NOT_UPGRADE never; else HTTP-class ports follow MeshConfig h2UpgradePolicy
 *    (opt->mesh_h2_upgrade); last, options without a protocol choice (idleTimeout alone) get
 *    "explicit_http_config": {"http_protocol_options": {}}, as Envoy requires one. Istio's own
 *    quirk is kept: an upgrade rewrites the h2 options, dropping a maxConcurrentStreams.
 *    outlierDetection: enforcing_success_rate 0; consecutive5xxErrors -> consecutive_5xx with
 *    enforcing_consecutive_5xx 100 (0 when the value is 0); consecutiveGatewayErrors ->
 *    consecutive_gateway_failure with enforcing_consecutive_gateway_failure likewise;
 *    interval, baseEjectionTime; maxEjectionPercent (> 0); minHealthPercent ->
 *    common_lb_config.healthy_panic_threshold, always set when outlierDetection is (Istio
 *    cannot tell 0 from unset: an unset value writes {} = 0 %, which disables panic mode).
 *  - Upstream TLS (cds_tls.c), following Istio's cluster_tls.go (buildUpstreamTLSSettings,
 *    applyUpstreamTLSSettings, buildUpstreamClusterTLSContext), reference security.md §3.2,
 *    §4.2; the trafficPolicy tls merges as the other sections (a matching portLevelSettings
 *    entry replaces it, present or not; a subset's tls overrides). The ISTIO_MUTUAL socket
 *    is envoy.transport_sockets.tls with an UpstreamTlsContext {common_tls_context {tls_params
 *    {TLSv1_2, TLSv1_3}, alpn_protocols [istio-peer-exchange, istio] (plus h2 on an explicit
 *    HTTP/2 cluster, Istio's ALPNInMeshH2WithMxc), tls_certificate_sds_secret_configs [default],
 *    combined_validation_context {default_validation_context {match_subject_alt_names: exact
 *    SANs}, validation_context_sds_secret_config ROOTCA}}, sni}, both SDS configs Istio's
 *    (api_config_source GRPC to cluster sds-grpc, set_node_on_first_message_only,
 *    initial_fetch_timeout 0s: weft-proxy's bootstrap_tls.c takes them from its in-process
 *    agent and does not need the sds-grpc cluster). SANs = the rule's subjectAltNames, else the
 *    destination service accounts (cds_internal.h cds_service_accounts, MeshConfig
 *    trustDomain via opt->trust_domain); SNI = the rule's sni, else
 *    outbound_.<port>_.<subset>_.<host>.
 *     - no tls in the merged policy: auto mTLS (MeshConfig enableAutoMtls, opt->
 *       disable_auto_mtls) for a Kubernetes Service or a MESH_INTERNAL ServiceEntry whose
 *       namespace's PeerAuthentication (namespace, else mesh level; pilot/authn.h) is not
 *       DISABLE (Istio's BestEffortInferServiceMTLSMode):
 *       transport_socket_matches [{name tlsMode-istio, match {tlsMode: istio}, the ISTIO_MUTUAL
 *       socket}, {name tlsMode-disabled, match {}, raw_buffer}]. None for MESH_EXTERNAL
 *       ServiceEntries (the default location) and ORIGINAL_DST clusters (resolution NONE;
 *       Istio would give one of them an ISTIO_MUTUAL transport_socket when every endpoint
 *       has a sidecar), nor BlackHoleCluster and PassthroughCluster. Endpoints carry the
 *       tlsMode tag as eds.h says.
 *     - DISABLE (also a tls block without mode): nothing, even where auto mTLS would apply.
 *     - ISTIO_MUTUAL: the socket above as transport_socket, on any cluster type.
 *     - SIMPLE / MUTUAL (constructUpstreamTLS): tls_params TLSv1_2..TLSv1_3; sni only when
 *       the rule sets one; validation_context {trusted_ca {filename: caCertificates, else
 *       /etc/ssl/certs/ca-certificates.crt}, match_subject_alt_names: exact subjectAltNames
 *       (a ServiceEntry without them: its service accounts)}, or an empty validation_context
 *       with insecureSkipVerify; MUTUAL adds tls_certificates [{certificate_chain {filename},
 *       private_key {filename}}]. Istio writes these files as SDS secrets `file-root:<path>`
 *       (`file-root:system` = the OS roots) and `file-cert:<cert>~<key>`, which weft-proxy
 *       does not serve, so weft writes the files inline: weft-proxy reads them at load. MUTUAL
 *       without both files (refused by validation) and SIMPLE / MUTUAL with credentialName
 *       get no TLS, as Istio on a sidecar for a rule without workloadSelector (weft-proxy
 *       has no kubernetes:// SDS; model/unimplemented.c reports it). Not written: Istio's
 *       upstream_http_protocol_options auto_sni / auto_san_validation (weft-proxy refuses
 *       them; reported), MeshConfig tlsDefaults, caCrl (reported). SIMPLE / MUTUAL on an explicit
 * HTTP/2 cluster advertise alpn_protocols [h2] (ALPNH2Only).
 *  - BlackHoleCluster (type STATIC written explicitly, connect_timeout 10s, no endpoints)
 *    and PassthroughCluster (ORIGINAL_DST, CLUSTER_PROVIDED, default circuit breakers,
 *    use_downstream_protocol_config), always, whatever outboundTrafficPolicy says: it only
 *    chooses which of them the listeners use.
 *
 * Which DestinationRule applies to a service, as Istio's PushContext.destinationRule: the
 * most specific host match (exact, then the longest `*.` wildcard; a short host is resolved in
 * the rule's namespace) among rules in the proxy's namespace, else rules in the service's
 * namespace exported to the proxy (exportTo empty, "*", the proxy namespace, or "." from the
 * same namespace), else exported rules in the root namespace. Within a namespace the first
 * loaded rule wins (Istio merges several rules for one host; weft does not yet). Rules with
 * a workloadSelector are skipped (they apply only to selected workloads).
 *
 * Every outbound cluster (subsets too) and the PassthroughCluster carry Istio's cluster
 * `filters` [istio.metadata_exchange] (xdsfilters.TCPClusterMx, pilot/tcp.h: the upstream half
 * of the TCP metadata exchange; BlackHoleCluster and inbound clusters have none).
 *
 * Not translated here: headless (clusterIP None) and ExternalName Services, inbound clusters
 * (pilot/inbound.h), several ServiceEntries for one host merged
 * (the first visible one wins, serviceentry.h), Sidecar-narrowed wildcard hosts.
 *
 * Input is expected to have passed validation; a field of the wrong type or an unparsable
 * duration is ignored (the default stays), never an error.
 */
#ifndef WF_PILOT_CDS_H
#define WF_PILOT_CDS_H

#include <jansson.h>
#include <stdbool.h>

#include "model/store.h"
#include "pilot/sidecar_scope.h"

#define WF_CDS_ROOT_NAMESPACE "istio-system"

typedef struct wf_cds_options {
    const char *proxy_ns;       /* namespace of the proxy; NULL or "" = none */
    const char *domain_suffix;  /* NULL = wf_store_domain_suffix(store) */
    const char *root_namespace; /* MeshConfig rootNamespace; NULL = "istio-system" */
    const wf_scope *scope;      /* the proxy's Sidecar scope; NULL = everything visible */
    const char *trust_domain;   /* MeshConfig trustDomain; NULL or "" = "cluster.local" */
    bool disable_auto_mtls;     /* MeshConfig enableAutoMtls false (the default is true) */
    bool mesh_h2_upgrade;       /* MeshConfig h2UpgradePolicy UPGRADE (default DO_NOT_UPGRADE) */
    bool router;                /* clusters for a gateway (no use_downstream on sniffed ports) */
} wf_cds_options;

/* The clusters of a sidecar in proxy_ns: a new JSON array (the caller owns it and releases it
 * with json_decref) of cluster objects, the outbound clusters in Service load order (per
 * port: the default cluster, then the subsets in DestinationRule order), then
 * BlackHoleCluster and PassthroughCluster. opt may be NULL (all defaults). store is only
 * read. Returns NULL on out of memory or when store is NULL. */
json_t *wf_cds_sidecar_clusters(const wf_store *store, const wf_cds_options *opt);

/* The DestinationRule that applies to the Service host fqdn (namespace svc_ns) for a proxy in
 * proxy_ns (may be NULL), as described above; NULL when none. root_ns NULL = istio-system. */
const wf_resource *wf_cds_find_destinationrule(const wf_store *store, const char *fqdn,
                                               const char *svc_ns, const char *proxy_ns,
                                               const char *root_ns, const char *domain_suffix);

#endif
