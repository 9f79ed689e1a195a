/*
 * cds_internal.h - shared between cds.c (clusters), cds_policy.c (DestinationRule lookup
 * and trafficPolicy) and cds_tls.c (upstream TLS). Not a public interface: see cds.h.
 */
#ifndef WF_PILOT_CDS_INTERNAL_H
#define WF_PILOT_CDS_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/node.h"
#include "model/store.h"
#include "pilot/serviceentry.h"

/* The sections of a trafficPolicy that apply to one cluster after Istio's merge; each NULL
 * when absent. */
typedef struct cds_policy {
    const wf_node *pool, *lb, *outlier, *tls;
} cds_policy;

/* MergeTrafficPolicy(top for port, subset_tp, port); either node may be NULL. */
cds_policy cds_policy_resolve(const wf_node *top, const wf_node *subset_tp, int32_t port);

/* Write the policy into cluster c (which already holds Istio's defaults, including
 * circuit_breakers.thresholds[0]). Returns 0, or -1 on out of memory. */
int cds_policy_apply(json_t *c, const cds_policy *p);

/* ---------- upstream protocol (Istio's cluster_builder.go setUpstreamProtocol, setH2Options,
 * setUseDownstreamProtocol, clusterWrapper.build; cluster_traffic_policy.go shouldH2Upgrade;
 * reference protocols.md §1.5, §2.6) ----------
 * All write typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.
 * HttpProtocolOptions"] (created on first use) and return 0, or -1 on out of memory. */

/* setH2Options: explicit_http_config {http2_protocol_options {}} (replaces a
 * use_downstream_protocol_config). */
int cds_set_h2(json_t *c);

/* setUseDownstreamProtocol: use_downstream_protocol_config {http_protocol_options (the explicit
 * HTTP/1 options, else {}), http2_protocol_options {}} (replaces explicit_http_config). */
int cds_set_use_downstream(json_t *c);

/* isHttp2Cluster: explicit_http_config.http2_protocol_options is set. */
bool cds_is_h2(const json_t *c);

/* clusterWrapper.build: options without a protocol choice get explicit_http_config
 * {http_protocol_options {}} (Envoy requires one); fields put in Envoy's order. */
int cds_finish_protocol(json_t *c);

/* shouldH2Upgrade for an outbound cluster: the merged connectionPool (NULL = none) says
 * useClientProtocol true -> no; h2UpgradePolicy UPGRADE -> yes (any port), DO_NOT_UPGRADE -> no;
 * else only an HTTP-class port (http_port) follows MeshConfig h2UpgradePolicy UPGRADE
 * (mesh_upgrade). */
bool cds_should_h2_upgrade(const wf_node *pool, bool http_port, bool mesh_upgrade);

/* Istio's getDefaultCircuitBreakerThresholds: {"thresholds": [{max_connections,
 * max_pending_requests, max_requests, max_retries = 4294967295, track_remaining true}]}. A new
 * object, NULL on OOM. Shared with pilot/inbound.c. */
json_t *cds_default_circuit_breakers(void);

/* ---------- TLS (cds_tls.c) ---------- */

/* What the transport socket of one outbound cluster depends on (Istio's buildClusterOpts
 * fields read by applyUpstreamTLSSettings / buildUpstreamTLSSettings). */
typedef struct cds_tls_in {
    const wf_node *tls; /* the merged DestinationRule tls (cds_policy.tls); NULL = none */
    const char *name;   /* the cluster's name (error messages) */
    const char *sni;    /* Istio's outbound_.<port>_.<subset>_.<host> */
    const json_t *sans; /* the destination service accounts, an array of strings (borrowed) */
    bool auto_mtls;     /* MeshConfig enableAutoMtls */
    bool mesh_external; /* a ServiceEntry with location MESH_EXTERNAL (or unset) */
    bool original_dst;  /* an ORIGINAL_DST cluster: never transport_socket_matches */
    bool se_registry;   /* a ServiceEntry host: SIMPLE / MUTUAL without SANs use sans */
    bool mtls_disabled; /* cds_service_mtls_disabled() said DISABLE: no auto mTLS */
    bool h2;            /* the cluster is explicit HTTP/2 (Istio's isHttp2Cluster): ALPN h2 */
} cds_tls_in;

/* Writes transport_socket or transport_socket_matches into cluster c as described in cds.h.
 * Returns 0 (also when nothing is written), -1 on out of memory. */
int cds_tls_apply(json_t *c, const cds_tls_in *in);

/* Istio's ServiceAccounts(host, ns) for svc: the SPIFFE IDs
 * spiffe://<trust_domain>/ns/<ns>/sa/<sa> of the workloads behind every port of svc (a Pod's
 * spec.serviceAccountName, "default" when unset as Kubernetes defaults it; a WorkloadEntry's
 * serviceAccount when set), a Service's alpha.istio.io/kubernetes-serviceaccounts (names in
 * its namespace) and alpha.istio.io/canonical-serviceaccounts (as written), a ServiceEntry's
 * subjectAltNames; sorted, without duplicates. A new array, NULL on OOM. */
json_t *cds_service_accounts(const wf_store *s, const wf_svc *svc, const char *trust_domain);

/* BestEffortInferServiceMTLSMode's PeerAuthentication part (namespace, then mesh level; no
 * workload policy) for a service in namespace ns, composed by pilot/authn.h with root_ns the
 * MeshConfig rootNamespace (NULL = istio-system): true when that mode is DISABLE (no auto
 * mTLS). Out of memory answers false (PERMISSIVE, Istio's fallback). */
bool cds_service_mtls_disabled(const wf_store *s, const char *root_ns, const char *ns);

/* Protobuf JSON text of a duration in nanoseconds ("10s", "0.030s"); NULL on OOM. */
json_t *cds_duration(int64_t ns);

#endif
