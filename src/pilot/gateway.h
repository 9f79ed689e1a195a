/*
 * gateway.h - the listeners and route configurations of a router proxy (an ingress gateway),
 * translated from Istio Gateways and the VirtualServices bound to them.
 *
 * Input: a finalized wf_store (model/store.h) holding Gateways, VirtualServices and the
 * Kubernetes Services that select the gateway pod, and the gateway pod itself (namespace,
 * labels, optionally its Pod object). Output: Envoy v3 JSON objects with "@type" and the
 * snake_case names of /config_dump. The gateway's clusters are not built here: Istio gives a
 * gateway the same outbound clusters a sidecar in its namespace gets (pilot/cds.h), without
 * PassthroughCluster (pilot/generate.c does that).
 *
 * Follows Istio's pilot/pkg/networking/core/gateway.go (buildGatewayListeners,
 * buildGatewayHTTPRouteConfig) and pilot/pkg/model/gateway.go (MergeGateways), checked against
 * the route dumps in ../shared/corpus/istioctl-golden/upstream/istioctl/pkg/writer/envoy/
 * configdump/testdata/routes/istio-gateway-http-route-prefix/ and describe/testdata/describe/
 * http_config.json:
 *  - Gateways (any namespace; Istio's PILOT_SCOPE_GATEWAY_TO_NAMESPACE is off by default)
 *    whose spec.selector matches the pod's labels; a Gateway without a selector applies to
 *    every gateway workload, as Istio documents.
 *  - servers with protocol HTTP, HTTP2 or GRPC (case-insensitive), and HTTPS servers that
 *    terminate TLS with a credentialName (tls.mode SIMPLE or MUTUAL: pilot/gateway_tls.h). TLS,
 *    TCP, other TLS modes and other servers are skipped (model/unimplemented.c reports them):
 *    weft-proxy has no TCP proxying yet.
 *  - a listener port with TLS servers gets the listener of gateway_tls.h (tls_inspector, one
 *    filter chain per TLS server chosen by SNI, each with its own HCM and RDS name
 *    "https.<port>.<portName>.<gatewayName>.<gatewayNamespace>"); plain HTTP servers on the
 *    same port are left out there. Each TLS server's route configuration holds the virtual
 *    hosts of that server alone, built as below.
 *  - the listener port of a server: the targetPort of the port numbered server.port.number on a
 *    Service in the pod's namespace that selects the pod (named targetPorts resolved against the
 *    Pod's container ports), so Gateway port 80 listens on 8080 behind istio-ingressgateway's
 *    `port: 80, targetPort: 8080`; without such a Service, the number itself.
 *  - one Listener per listener port P, ascending: name "0.0.0.0_P", address bind:P (the pod IP
 *    in the local mesh, else 0.0.0.0; Istio binds 0.0.0.0), traffic_direction OUTBOUND, one
 *    filter chain with Istio's gateway HTTP connection manager (lds.h WF_LDS_GATEWAY:
 *    stat_prefix "outbound_0.0.0.0_P", rds route_config_name "http.P", http_filters
 *    istio.metadata_exchange, envoy.filters.http.grpc_stats when the port's first server has
 *    protocol GRPC (Istio's IsGRPC; lds.h), envoy.filters.http.fault, envoy.filters.http.cors,
 *    istio.stats, envoy.filters.http.router, use_remote_address true).
 *  - one RouteConfiguration "http.P" per listener port, merging every selected server on it:
 *    for each server (Gateway load order) and each VirtualService (load order) exported to the
 *    pod's namespace whose `gateways` names the Gateway ("ns/name", or "name" in the
 *    VirtualService's namespace), the hosts in both the server's hosts (a "ns/host" entry counts
 *    only for VirtualServices in ns; "*" any, "." the Gateway's namespace) and the
 *    VirtualService's hosts (short names resolved in its namespace), as Istio's
 *    Names.Intersection: the more specific of two hosts when one covers the other. Each such
 *    host is one virtual host {"name": "<host>:<server port number>", "domains": [host],
 *    "routes": ..., "include_request_attempt_count": true}; a host met again (another server or
 *    VirtualService) gets the new routes appended. Routes are the VirtualService's HTTP routes
 *    as pilot/rds.h translates them (rds_route.c) for the server's port number with the
 *    Gateway as the match context; a VirtualService giving no route adds nothing. Then
 *    catch-all routes move to the end of each virtual host (SortVHostRoutes) and virtual hosts
 *    are sorted by name. validate_clusters false, ignore_port_in_host_matching true, as in the
 *    goldens (the domain is the host alone since Istio ignores the port in host matching).
 *  - a port with no virtual host gets Istio's 404 virtual host {"name": "blackhole:<server
 *    port number>", "domains": ["*"], "routes": []} (every request: 404 NR).
 *
 *  - a server with tls.httpsRedirect true gives its virtual hosts require_tls "ALL" (Istio's
 *    VirtualHost_ALL: weft-proxy answers a plaintext request 301 https://<host><path>).
 *
 * AuthorizationPolicies whose selector matches the gateway pod (root namespace or its own,
 * pilot/authz.h) put their RBAC filters after istio.metadata_exchange in every listener's HTTP
 * connection manager, as Istio does for gateways.
 *
 * Left out (Istio emits them): tracing, request_id_extension,
 * upgrade_configs, forward_client_cert_details, xff_num_trusted_hops from ProxyConfig, route
 * decorators (as rds.h), Gateway API (K8S_GATEWAY) resources, delegate
 * VirtualServices.
 */
#ifndef WF_PILOT_GATEWAY_H
#define WF_PILOT_GATEWAY_H

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "model/store.h"

typedef struct wf_gateway_options {
    const char *proxy_ns;           /* the gateway pod's namespace; NULL or "" = none */
    const wf_kvs *proxy_labels;     /* the gateway pod's labels; NULL = none */
    const wf_resource *pod;         /* the Pod object (named targetPorts); NULL = none */
    const char *bind;               /* listener address: the pod IP; NULL = "0.0.0.0" */
    const char *domain_suffix;      /* NULL = wf_store_domain_suffix(store) */
    const wf_node *default_retries; /* MeshConfig defaultHttpRetryPolicy; NULL = Istio's */
    const wf_meshcfg *mesh;         /* rootNamespace, trust domains (authz); NULL = defaults */
} wf_gateway_options;

/* The gateway's listeners, ascending by listener port: a new JSON array the caller
 * json_decrefs (empty when no Gateway selects the pod). NULL when store or opt is NULL, or on
 * out of memory. */
json_t *wf_gateway_listeners(const wf_store *store, const wf_gateway_options *opt);

/* The gateway's route configurations "http.<port>", one per listener, in the same order: a new
 * JSON array the caller json_decrefs. NULL when store or opt is NULL, or on out of memory. */
json_t *wf_gateway_route_configs(const wf_store *store, const wf_gateway_options *opt);

#endif
