/*
 * inbound.h - a sidecar's inbound side: the clusters `inbound|<port>||` and the listeners that
 * take traffic addressed to the pod and hand it to the application.
 *
 * Input: a finalized wf_store (model/store.h) holding Kubernetes Services, and the pod the
 * sidecar runs in (namespace, labels, optionally its Pod object). Output: Envoy v3 JSON objects
 * with "@type" and the snake_case names of /config_dump, as pilot/cds.h and lds.h build them.
 *
 * Which ports, following Istio's ServiceTargets (pilot/pkg/serviceregistry/kube/controller,
 * pilot/pkg/networking/core/listener_builder.go buildInboundListeners):
 *  - the Services in the pod's namespace whose non-empty selector matches the pod's labels
 *    (ExternalName Services skipped); for every port of them (UDP skipped) the target port: the
 *    numeric targetPort (the port itself when absent), or a named targetPort resolved against
 *    the Pod's container ports as pilot/eds.c does (no Pod, or no container port of that
 *    name: the port is left out, as Kubernetes gives it no endpoint). Distinct target ports,
 *    ascending.
 *
 * Clusters (cluster_builder.go buildInboundCluster with an endpoint, the shape of Istio's
 * Sidecar ingress `defaultEndpoint` and of pre-1.10 inbound clusters; the current default is an
 * ORIGINAL_DST cluster that needs iptables capture, which weft does not do):
 *   {"@type": Cluster, "name": "inbound|<port>||", "type": "STATIC", "connect_timeout": "10s",
 *    "load_assignment": {"cluster_name": NAME, "endpoints": [{"lb_endpoints": [{"endpoint":
 *        {"address": {"socket_address": {"address": APP, "port_value": <port>}}}}]}]},
 *    "circuit_breakers": Istio's defaults (as cds.h), "common_lb_config": {},
 *    "metadata": {"filter_metadata": {"istio": {"services": [{host, name, namespace}, ...]}}}}
 *  with APP = 127.0.0.1 (Istio) or, in the local mesh, the pod's WEFT_LOCALHOST. As in Istio,
 *  no alt_stat_name and no lb_policy (ROUND_ROBIN) on inbound clusters; the services list
 *  holds every selecting Service with a port targeting <port> (addTelemetryMetadata), deduplicated
 *  by host. One cluster per target port whatever its protocol (Istio builds TCP ones too).
 *  Nothing in EDS: the endpoint is inline (istioctl's `pc endpoint` drops these, reference
 *  istioctl-troubleshooting.md §2.6).
 *
 * Listeners. Istio has one `virtualInbound` listener on 15006 fed by iptables, with one filter
 * chain per port selected by filter_chain_match.destination_port. weft-proxy cannot capture
 * traffic, so each HTTP target port gets its own listener, the shape Istio itself used before
 * virtualInbound (1.0-1.4: one inbound listener per port named `<podIP>_<port>` bound to
 * podIP:port) and the filter chain Istio puts on virtualInbound today for that port:
 *   name "<bind>_<port>", address bind:<port> (bind = the pod IP, else 0.0.0.0),
 *   traffic_direction INBOUND, one filter chain with Istio's inbound HTTP connection manager
 *   (lds.h WF_LDS_SIDECAR_INBOUND: stat_prefix "inbound_0.0.0.0_<port>", filters
 *   istio.metadata_exchange (downstream), the pod's AuthorizationPolicy RBAC filters
 *   (pilot/authz.h, Istio's place for them; none when no policy applies),
 *   envoy.filters.http.fault, envoy.filters.http.cors,
 *   istio.stats, envoy.filters.http.router; forward_client_cert_details APPEND_FORWARD and
 *   set_current_client_cert_details {subject, dns, uri} after use_remote_address, so the app
 *   gets x-forwarded-client-cert naming its mTLS caller) and an inline route_config as Istio's
 *   buildSidecarInboundHTTPRouteConfig / BuildDefaultHTTPInboundRoute (compare the waypoint's
 *   inbound chain in ../shared/corpus/istioctl-golden/upstream/istioctl/pkg/writer/compare/
 *   testdata/configdump.json):
 *     {"name": "inbound|<port>||", "virtual_hosts": [{"name": "inbound|http|<port>",
 *      "domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster":
 *      "inbound|<port>||", "timeout": "0s", "retry_policy": {"retry_on":
 *      "reset-before-request", "num_retries": 2}}, "name": "default"}]}],
 *      "validate_clusters": false}
 *   The inbound retry policy is Istio 1.24's (reference envoy-istio-behaviour.md §4.5), left
 *   out on gRPC ports as Istio does.
 *
 * mTLS (reference security.md §3.3, §4.1; Istio's filterchain_options.go "HTTP" options): the
 * port's PeerAuthentication mode (pilot/authn.h wf_peer_authn_port_mode, the target port being
 * the container port; root namespace, trust domain and meshMTLS from opt->mesh) picks the chains,
 * all named like the listener and holding the same connection manager:
 *   STRICT:     [{"filter_chain_match": {"transport_protocol": "tls"}, ..., "transport_socket":
 *                 MTLS}]
 *   PERMISSIVE: [{"filter_chain_match": {"transport_protocol": "tls", "application_protocols":
 *                 ["istio", "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1",
 *                 "istio-h2"]}, ..., "transport_socket": MTLS},
 *                {"filter_chain_match": {"transport_protocol": "raw_buffer"}, ...}]
 *   DISABLE:    [{...}] (plaintext, no filter_chain_match)
 *  and, for STRICT and PERMISSIVE, "listener_filters": [{"name":
 *  "envoy.filters.listener.tls_inspector", "typed_config": {"@type": ...TlsInspector,
 *  "initial_read_buffer_size": 512}}] before traffic_direction. MTLS is pilot/authn.h
 *  wf_authn_inbound_tls: Istio's DownstreamTlsContext except ALPN, which is "http/1.1" only
 *  (Istio: "h2", "http/1.1"; weft-proxy has no HTTP/2 codec yet, issue 19, and must never offer
 *  h2 until it has one). The five ALPNs are Istio's for a port known to be HTTP only.
 *
 * Access logs: with MeshConfig accessLogFile set, pilot/generate.c (wf_gen_access_logs) adds the
 * HCM's access_log and, on each listener, Istio's listener access log (the same file logger with
 * {"response_flag_filter": {"flags": ["NR"]}}, accesslog.go buildListenerFileAccessLog), so the
 * sidecar logs a plaintext connection a STRICT port refuses: response code 0, NR,
 * filter_chain_not_found (reference security.md §3.3).
 *
 * TCP target ports (pilot/tcp.h wf_tcp_service_port; a port both an HTTP and a TCP Service port
 * target is HTTP) get pilot/tcp.h's inbound listener: the same name and address, chains per
 * mode with network RBAC (wf_authz_tcp_filters), istio.stats and tcp_proxy to
 * "inbound|<port>||".
 *
 * Sniffed target ports (only Service ports without a declared protocol target them, Istio's
 * ListenerProtocolAuto; a declared HTTP protocol wins, sniffing beats TCP) get the same listener
 * with Istio's auto chains (filterchain_options.go; protocols.md §1.2), each named like the
 * listener, HCM chains holding the connection manager above and TCP chains the network RBAC,
 * istio.stats and tcp_proxy to "inbound|<port>||":
 *   PERMISSIVE: tls + [istio-http/1.0, istio-http/1.1, istio-h2] -> HCM (mTLS);
 *               raw_buffer + [http/1.1, h2c] -> HCM; tls + [istio-peer-exchange, istio] -> TCP
 *               (mTLS, pilot/tcp.h wf_tcp_inbound_tls); raw_buffer -> TCP; tls -> TCP (the
 *               client's own TLS, passed through)
 *   STRICT:     tls + [istio-http/1.0, istio-http/1.1, istio-h2] -> HCM (mTLS); tls -> TCP (mTLS)
 *   DISABLE:    raw_buffer + [http/1.1, h2c] -> HCM; raw_buffer -> TCP
 * and listener_filters tls_inspector (not DISABLE) then http_inspector (not STRICT),
 * listener_filters_timeout MeshConfig protocolDetectionTimeout ("0s" = none: a server-first
 * protocol waits for its client forever, as in Istio), continue_on_listener_filters_timeout
 * true (pilot/sniff.h).
 *
 * Inbound clusters speak HTTP/2 to the app on ports whose HTTP Service ports are all HTTP2, GRPC
 * or GRPC-Web, and the downstream's protocol on sniffed ones (cds_internal.h; Istio's
 * setUpstreamProtocol, never an h2 upgrade).
 *
 * Left out (Istio emits them): the route `decorator` and max_stream_duration (weft-proxy's route
 * loader does not accept them yet), tracing, request_id_extension, upgrade_configs; Sidecar
 * `ingress` listeners. (The capture layout, pilot/capture.h, adds original_dst, the
 * inspectors, the passthrough chains and upstream_bind_config 127.0.0.6.)
 */
#ifndef WF_PILOT_INBOUND_H
#define WF_PILOT_INBOUND_H

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "model/store.h"
#include "pilot/authn.h"

typedef struct wf_inbound_options {
    const char *ns;            /* the pod's namespace; NULL or "" = no Service selects it */
    const wf_kvs *labels;      /* the pod's labels; NULL = none (no Service selects it) */
    const wf_resource *pod;    /* the Pod object (named targetPorts); NULL = none */
    const char *bind;          /* listener address: the pod IP; NULL = "0.0.0.0" */
    const char *app_address;   /* where the application listens; NULL = "127.0.0.1" */
    const char *domain_suffix; /* NULL = wf_store_domain_suffix(store) */
    const wf_meshcfg *mesh;    /* rootNamespace, trustDomain(Aliases), meshMTLS; NULL = defaults */
    bool capture;              /* Istio's capture layout: the passthrough listener (below) too */
} wf_inbound_options;

/* The inbound clusters, ascending by port: a new JSON array the caller json_decrefs (empty when
 * no Service selects the pod). NULL when store or opt is NULL, or on out of memory. */
json_t *wf_inbound_clusters(const wf_store *store, const wf_inbound_options *opt);

/* The inbound listeners of the HTTP and TCP target ports, ascending by port: a new JSON array the
 * caller json_decrefs. NULL when store or opt is NULL, or on out of memory.
 * With opt->capture, last, the listener that carries virtualInbound's passthrough chains
 * (pilot/capture.h; Istio's buildInboundPassthroughChains without the blackhole), which
 * pilot/capture.c folds into virtualInbound: {"@type": Listener, "name": "virtualInbound",
 * "address": 0.0.0.0:15006, "filter_chains": [...], "listener_filters_timeout":
 * protocolDetectionTimeout, "continue_on_listener_filters_timeout": true, "traffic_direction":
 * "INBOUND"}. Its chains are the sniffed ones above for the workload's mode (wf_peer_authn mode)
 * on any port, then for each spec.portLevelMtls port of the workload policy that no Service
 * targets, ascending, that port's mode matching destination_port: HCM chains named
 * "virtualInbound-catchall-http" (the inbound connection manager above with stat_prefix
 * "InboundPassthroughCluster" and route_config {"name": "InboundPassthroughCluster",
 * "virtual_hosts": [{"name": "inbound|http|0", "domains": ["*"], "routes": [{..., "route":
 * {"cluster": "InboundPassthroughCluster", "timeout": "0s", retry_policy}, "name":
 * "default"}]}]}, the workload's RBAC filters), TCP chains named "virtualInbound" (metadata
 * exchange, network RBAC, istio.stats, tcp_proxy InboundPassthroughCluster). Being a listener of
 * the array, it gets the access logs, RequestAuthentication and path normalization that
 * pilot/generate.c gives every inbound listener. */
json_t *wf_inbound_listeners(const wf_store *store, const wf_inbound_options *opt);

/* ---- PeerAuthentication modes no inbound chain carries ("never accept silently") ----
 *
 * HTTP target ports get the inbound listener above and TCP ones pilot/tcp.h's, so a
 * PeerAuthentication mode meant for another port changes nothing. For every sidecar pod of the
 * store (Pods and the pods the store makes from workload templates; not gateway pods: label
 * istio=ingressgateway/egressgateway or selected by a Gateway, nor pods with
 * sidecar.istio.io/inject "false" as a label or annotation) a gap is:
 *  - a spec.portLevelMtls key of its workload policy that is not one of its HTTP or TCP target
 *    ports (no Service targets it), whatever the mode (port_level true);
 *  - a target port that is neither HTTP nor TCP whose effective mode is STRICT through the
 *    policy's spec.mtls (port_level false; policy = the narrowest one that set the mode; none
 *    today: every target port collected is one or the other, kept for new protocols).
 * Each (policy, port) is reported once, with the first pod found, in store order of pods.
 * cb returns false to stop. Returns the number of gaps reported, -1 on out of memory or a NULL
 * store. */
typedef struct wf_inbound_gap {
    const wf_resource *policy; /* the PeerAuthentication */
    const wf_resource *pod;
    uint32_t port; /* container port */
    wf_mtls_mode mode;
    bool port_level;
} wf_inbound_gap;

typedef bool (*wf_inbound_gap_cb)(const wf_inbound_gap *gap, void *arg);

int wf_inbound_authn_gaps(const wf_store *store, const char *root_ns, wf_inbound_gap_cb cb,
                          void *arg);

/* How a gap is reported (weft-pilot's /debug/config_errors, `weftctl analyze`): the field
 * ("spec.mtls.mode", "spec.portLevelMtls[<port>].mode") and the node it names in the policy
 * (NULL when absent); whether it is a security control not enforced (STRICT: WFT0002) or a
 * mode without effect (WFT0001); and the detail after "<field> is not enforced by weft: " /
 * "<field> has no effect in weft: " ("on port P of pod NS/NAME: it is not a Service target
 * port of the pod, ..."). Into field (fcap) and detail (dcap) bytes. */
const wf_node *wf_inbound_gap_describe(const wf_inbound_gap *g, char *field, size_t fcap,
                                       char *detail, size_t dcap, bool *security);

#endif
