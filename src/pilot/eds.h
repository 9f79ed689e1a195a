/*
 * eds.h - the endpoints (EDS) of a sidecar proxy: one ClusterLoadAssignment per EDS cluster
 * that pilot/cds.h builds, translated from the config store.
 *
 * Input: a finalized wf_store (model/store.h) holding Kubernetes Services, Pods (in the local
 * mesh pods arrive as Pod objects with labels and status.podIP, DESIGN.md "The local mesh"),
 * ServiceEntries, WorkloadEntries, Sidecars (through opt->scope) and Istio DestinationRules.
 * Output: jansson objects in Envoy v3 JSON shape with the snake_case names Envoy's /config_dump
 * prints, copied from
 * ../shared/corpus/istioctl-golden/upstream/istioctl/pkg/writer/envoy/configdump/testdata/
 * endpoint/configdump.json:
 *
 *   {"@type": ".../envoy.config.endpoint.v3.ClusterLoadAssignment", "cluster_name": NAME,
 *    "endpoints": [{"locality": {}, "lb_endpoints": [
 *       {"endpoint": {"address": {"socket_address": {"address": podIP,
 *                                                    "port_value": targetPort}},
 *                     "health_check_config": {}},
 *        "health_status": "HEALTHY",
 *        "metadata": {"filter_metadata": {
 *            "istio": {"workload": "<workload>;<ns>;<canonical-name>;<canonical-revision>;
 *                                   Kubernetes"},
 *            "envoy.transport_socket_match": {"tlsMode": "istio"}}},   (only when labelled)
 *        "load_balancing_weight": <endpoint weight, 1 unless a ServiceEntry says>}, ...],
 *      "load_balancing_weight": <sum of the endpoint weights>}],
 *    "policy": {"overprovisioning_factor": 140}}
 *
 * Which endpoints (pilot/serviceentry.h wf_svc_endpoints, following Kubernetes' endpoints
 * controller and Istio's EDS, pilot/pkg/xds/endpoints/endpoint_builder.go):
 *  - cluster `outbound|<port>||<host>` of a visible (exportTo, Sidecar scope) service with EDS
 *    resolution, a Kubernetes Service or a STATIC ServiceEntry: the Service's ready Pods, then
 *    the WorkloadEntries its selector matches; a ServiceEntry's spec.endpoints, or the
 *    WorkloadEntries and Pods its workloadSelector matches (ports, weights: serviceentry.h).
 *    `outbound|<port>|<subset>|<host>`: of those, only the endpoints whose labels also carry
 *    the subset's labels in the DestinationRule that applies (wf_cds_find_destinationrule,
 *    the same lookup as CDS). Clusters of DNS and NONE resolution are not EDS clusters (their
 *    names get the empty assignment; DNS endpoints are inline in CDS, see cds.h).
 *  - load_balancing_weight: the endpoint's weight (ServiceEntry `weight`, else 1); the
 *    locality group's weight is their sum.
 *  - workload metadata as Istio writes it: for a Pod the workload name (the controller of a
 *    synthetic pod; else the controlling ownerReference, a ReplicaSet's name without its
 *    `-<pod-template-hash>`; else the pod name), for a WorkloadEntry its name, for a
 *    ServiceEntry endpoint empty; then the namespace, the labels
 *    service.istio.io/canonical-name and service.istio.io/canonical-revision (empty when
 *    absent, as in the dump for istiod) and the cluster id "Kubernetes".
 *  - envoy.transport_socket_match {tlsMode: <label>} (the tag auto mTLS's
 *    transport_socket_matches select, cds.h), as Istio's mtls_checker.go checkMtlsEnabled and
 *    AppendLbEndpointMetadata: never when the endpoint's label security.istio.io/tlsMode is
 *    absent, empty or "disabled"; else, when the DestinationRule that applies sets a tls mode
 *    for the cluster (the default cluster: trafficPolicy.tls, then a portLevelSettings entry
 *    for the service port that has tls; a subset cluster: the same inside the subset's own
 *    trafficPolicy only, not merged with the top level, as Istio's checker), tagged only if
 *    that mode is ISTIO_MUTUAL; without one, tagged only if the label is "istio" and the
 *    workload's effective PeerAuthentication mode on the endpoint port is not DISABLE (the
 *    composition of pilot/authn.h, workload policies and port-level modes included, as
 *    Istio's mtls_checker.go: a workload DISABLE reaches its clients, who send plaintext).
 *  - no endpoints (a subset whose labels match no pod, a Service without ready pods, an
 *    unknown cluster name) gives {"@type", "cluster_name", "endpoints": []}: Istio's
 *    buildEmptyClusterLoadAssignment. The cluster still exists, so a request to it is
 *    503 UH no_healthy_upstream, not NC (operator report B023).
 *
 * Not done here: headless Services, ServiceEntry endpoint `locality` / `network` (every
 * endpoint is in the one empty locality), priorities, endpoints of other clusters (multi-network),
 * health from readiness probes / conditions (every listed endpoint is HEALTHY), inbound clusters.
 */
#ifndef WF_PILOT_EDS_H
#define WF_PILOT_EDS_H

#include <jansson.h>

#include "model/store.h"
#include "pilot/cds.h"
#include "pilot/serviceentry.h"

/* The ClusterLoadAssignment of one cluster name, for a proxy described by opt (may be NULL:
 * all defaults, as in cds.h). Returns a new object the caller releases with json_decref; a
 * name that is not an outbound cluster of a known Service, or names a subset no applicable
 * DestinationRule defines, gives the empty assignment. Returns NULL only when store or
 * cluster_name is NULL, or on out of memory. store is only read. */
/* A Pod's workload name as Istio's kube.GetDeployMetaFromPod names it (what the injector puts
 * in ISTIO_META_WORKLOAD_NAME): its controller (a ReplicaSet named <deployment>-<pod-template-
 * hash> gives the Deployment's name; a synthetic pod its owner's), else the pod's name. The
 * result is r's, or written into buf (size bytes). */
const char *wf_eds_pod_workload_name(const wf_resource *r, char *buf, size_t size);

json_t *wf_eds_load_assignment(const wf_store *store, const char *cluster_name,
                               const wf_cds_options *opt);

/* wf_eds_load_assignment with a memo (Istio's EDS cache, one per config snapshot): memo is a
 * JSON object the caller owns and drops with the store it was filled from; assignments are
 * kept in it by what they are built from (the cluster name, the Service or ServiceEntry the
 * name resolves to for this proxy, and the DestinationRule subset), so proxies whose view
 * resolves a name alike share one assignment. Returns a new reference (the object may be
 * shared: do not modify it), NULL as wf_eds_load_assignment. memo NULL = no memo. */
json_t *wf_eds_load_assignment_memo(const wf_store *store, const char *cluster_name,
                                    const wf_cds_options *opt, json_t *memo);

/* The ClusterLoadAssignments of every EDS cluster wf_cds_sidecar_clusters(store, opt) builds,
 * in the same order: a new JSON array the caller releases with json_decref. Returns NULL when
 * store is NULL or on out of memory. */
json_t *wf_eds_sidecar_assignments(const wf_store *store, const wf_cds_options *opt);

/* The "endpoints" list of a ClusterLoadAssignment for port sp of svc, keeping the endpoints
 * whose labels carry every label of subset (NULL = all endpoints, the default cluster): a new
 * array (caller json_decrefs) with one locality group {"locality": {}, "lb_endpoints": [...],
 * "load_balancing_weight": sum}, or empty when there is no endpoint. dr is the
 * DestinationRule that applies (NULL when none; its tls mode tags endpoints, see above).
 * for_cds leaves out health_check_config and health_status (the inline load_assignment of
 * Istio's DNS clusters). root_ns: MeshConfig rootNamespace (NULL = istio-system), the mesh
 * scope of the PeerAuthentications that untag a DISABLE endpoint. NULL on OOM. */
json_t *wf_eds_locality_endpoints(const wf_store *store, const char *root_ns, const wf_svc *svc,
                                  const wf_service_port *sp, const wf_resource *dr,
                                  const wf_subset *subset, bool for_cds);

#endif
