/*
 * authn.h - the effective PeerAuthentication of a workload: Istio's ComposePeerAuthentication
 * (pilot/pkg/security/authn/policy_applier.go) over the PeerAuthentications that apply to it
 * (reference security.md §4.1). One composition for weft-pilot (the inbound filter chains of
 * pilot/inbound.h; the client-side tagging of outbound clusters) and `weftctl describe pod`
 * (istioctl's describePeerAuthentication calls the same Istio function), so both agree.
 *
 * Input: a finalized wf_store (model/store.h), the root namespace (MeshConfig rootNamespace;
 * NULL or "" = "istio-system"), the workload's namespace and labels.
 *
 * Which policies, as istiod and istioctl pick them:
 *  - candidates ("applied", istioctl's findMatchedConfigs): the PeerAuthentications of the
 *    root namespace and of the workload's namespace whose spec.selector.matchLabels is empty or
 *    a subset of the labels; root namespace first, then the workload's, each in store order.
 *  - scope: no selector (or empty matchLabels) in the root namespace = mesh; no selector
 *    elsewhere = namespace; a selector = workload, except in the root namespace, where a
 *    selector policy is ignored for the mode (Istio: "workload-level configs should not be in
 *    root namespace").
 *  - within a scope the oldest wins: metadata.creationTimestamp (RFC 3339; absent = the zero
 *    time, older than any), then name, then namespace (Istio's sortConfigByCreationTime order,
 *    then ComposePeerAuthentication's strict Before).
 *  - mode: PERMISSIVE when nothing applies; then mesh, namespace, workload in turn replace it
 *    unless their spec.mtls.mode is absent or UNSET (inherit).
 *  - port level: the workload policy's spec.portLevelMtls (keys are the workload's container
 *    ports); a port whose mode is absent or UNSET inherits the workload mode. Mesh and
 *    namespace policies' portLevelMtls are ignored (Istio's validation refuses them).
 * Mode names are matched case-insensitively (the loader keeps what was written); an unknown
 * mode counts as UNSET.
 *
 * Ownership: the result borrows the store's resources and nodes (valid while the store lives);
 * wf_peer_authn_free releases the arrays it allocated. No global state.
 */
#ifndef WF_PILOT_AUTHN_H
#define WF_PILOT_AUTHN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "model/store.h"

/* Istio's model.MutualTLSMode. */
typedef enum wf_mtls_mode {
    WF_MTLS_UNSET = 0, /* inherit (only inside a policy; never a composed result) */
    WF_MTLS_DISABLE,
    WF_MTLS_PERMISSIVE,
    WF_MTLS_STRICT,
} wf_mtls_mode;

/* One spec.portLevelMtls entry of the workload policy, its mode already resolved. */
typedef struct wf_mtls_port {
    uint32_t port; /* container port, 1..65535 */
    wf_mtls_mode mode;
} wf_mtls_port;

typedef struct wf_peer_authn {
    wf_mtls_mode mode;                 /* the workload's mode (never UNSET) */
    const wf_resource *mesh, *ns, *wl; /* the policy chosen per scope; NULL = none */
    wf_mtls_port *ports;               /* the workload policy's port-level modes, key order */
    size_t nports;                     /* keys that are not ports 1..65535 are left out */
    const wf_resource **applied;       /* every candidate (see above) */
    size_t napplied;
} wf_peer_authn;

/* Composes the effective PeerAuthentication for a workload in namespace ns with labels (NULL =
 * none: only policies without selector match). Returns 0, or -1 on out of memory or a NULL
 * store / out (*out is then empty: PERMISSIVE, nothing applied, nothing to free). */
int wf_peer_authn_compose(const wf_store *store, const char *root_ns, const char *ns,
                          const wf_kvs *labels, wf_peer_authn *out);

/* The mode on a workload (container) port: the port-level mode when the workload policy
 * names the port, else the workload mode (Istio's GetMutualTLSModeForPort). */
wf_mtls_mode wf_peer_authn_port_mode(const wf_peer_authn *pa, uint32_t port);

void wf_peer_authn_free(wf_peer_authn *pa);

/* "DISABLE", "PERMISSIVE", "STRICT", "UNSET" (Istio's spelling). */
const char *wf_mtls_mode_name(wf_mtls_mode m);

/* A spec.mtls / portLevelMtls value's mode ({mode: X}); UNSET when absent or unknown. */
wf_mtls_mode wf_mtls_mode_of(const wf_node *mtls);

/* ---- the inbound mTLS transport socket ----
 *
 * Istio's authn_utils.BuildInboundTLS for an ISTIO_MUTUAL HTTP chain (security.md §3.3, §3.4;
 * the shape of the istioctl golden dumps' virtualInbound chains):
 *   {"name": "envoy.transport_sockets.tls", "typed_config": {"@type": ...DownstreamTlsContext,
 *    "common_tls_context": {
 *      "tls_params": {"tls_minimum_protocol_version": MIN, "tls_maximum_protocol_version":
 *                     "TLSv1_3", "cipher_suites": [Istio's six, or meshMTLS.cipherSuites]},
 *      "alpn_protocols": ["http/1.1"],
 *      "tls_certificate_sds_secret_configs": [SDS("default")],
 *      "combined_validation_context": {
 *        "default_validation_context": {"match_subject_alt_names": [{"prefix":
 *            "spiffe://<trustDomain>/"}, one per trustDomainAliases entry]},
 *        "validation_context_sds_secret_config": SDS("ROOTCA")}},
 *    "require_client_certificate": true}}
 * MIN: "TLSv1_3" when MeshConfig meshMTLS.minProtocolVersion is TLSV1_3, else "TLSv1_2"
 * (GetMinTLSVersion). ALPN: Istio advertises ["h2", "http/1.1"] on HTTP chains; weft-proxy has
 * no HTTP/2 codec yet (issue 19), so only "http/1.1" is offered (a client that negotiated h2
 * would then speak a protocol the chain cannot serve). SDS(name) is Istio's SdsSecretConfig:
 *   {"name": name, "sds_config": {"api_config_source": {"api_type": "GRPC",
 *    "grpc_services": [{"envoy_grpc": {"cluster_name": "sds-grpc"}}],
 *    "set_node_on_first_message_only": true, "transport_api_version": "V3"},
 *    "initial_fetch_timeout": "0s", "resource_api_version": "V3"}}
 * mesh NULL = MeshConfig defaults (trust domain cluster.local). Returns a new object (caller
 * json_decrefs), NULL on out of memory. */
json_t *wf_authn_inbound_tls(const wf_meshcfg *mesh);

/* Istio's SdsSecretConfig for secret name (above). New object, NULL on out of memory. */
json_t *wf_authn_sds_secret(const char *name);

#endif
