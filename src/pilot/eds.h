/*
 * eds.h - the endpoints (EDS) of a sidecar proxy: one ClusterLoadAssignment per EDS cluster
 * that pilot/cds.h builds, translated from the config store.
 *
 * Input: a finalized wf_store (model/store.h) holding Kubernetes Services, Pods (in the local
 * mesh pods arrive as Pod objects with labels and status.podIP, DESIGN.md "The local mesh")
 * and Istio DestinationRules. Output: jansson objects in Envoy v3 JSON shape with the
 * snake_case names Envoy's /config_dump prints, copied from
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
 *        "load_balancing_weight": 1}, ...],
 *      "load_balancing_weight": <number of lb_endpoints>}],
 *    "policy": {"overprovisioning_factor": 140}}
 *
 * Which endpoints, following Kubernetes' endpoints controller and Istio's EDS
 * (pilot/pkg/xds/endpoints/endpoint_builder.go):
 *  - cluster `outbound|<port>||<fqdn>`: the Pods in the Service's namespace whose labels
 *    match the Service selector (a Service without a selector has no endpoints), in load
 *    order; `outbound|<port>|<subset>|<fqdn>`: of those, only the Pods whose labels also
 *    match the subset's labels in the DestinationRule that applies (wf_cds_find_destinationrule,
 *    the same lookup as CDS).
 *  - a Pod counts when it is ready: status.podIP set and status.phase not Succeeded/Failed.
 *    Pods without an IP (including the synthetic pods the store makes from templates) are
 *    skipped.
 *  - port_value: the Service port's numeric targetPort (the port itself when absent); a named
 *    targetPort is resolved against the Pod's container ports by name, and a Pod that has no
 *    container port of that name is not an endpoint of that port (as in Kubernetes).
 *  - workload metadata as Istio writes it: the workload name (the controller of a synthetic
 *    pod; else the controlling ownerReference, a ReplicaSet's name without its
 *    `-<pod-template-hash>`; else the pod name), the namespace, the pod's labels
 *    service.istio.io/canonical-name and service.istio.io/canonical-revision (empty when
 *    absent, as in the dump for istiod) and the cluster id "Kubernetes".
 *    envoy.transport_socket_match.tlsMode is written when the pod carries the label
 *    security.istio.io/tlsMode with a value other than "disabled".
 *  - no endpoints (a subset whose labels match no pod, a Service without ready pods, an
 *    unknown cluster name) gives {"@type", "cluster_name", "endpoints": []}: Istio's
 *    buildEmptyClusterLoadAssignment. The cluster still exists, so a request to it is
 *    503 UH no_healthy_upstream, not NC (operator report B023).
 *
 * Not done here (later parts of issue 5): ServiceEntry and WorkloadEntry endpoints, headless
 * Services, localities and priorities, endpoints of other clusters (multi-network), health
 * from readiness probes / conditions (every listed endpoint is HEALTHY), inbound clusters.
 */
#ifndef WF_PILOT_EDS_H
#define WF_PILOT_EDS_H

#include <jansson.h>

#include "model/store.h"
#include "pilot/cds.h"

/* The ClusterLoadAssignment of one cluster name, for a proxy described by opt (may be NULL:
 * all defaults, as in cds.h). Returns a new object the caller releases with json_decref; a
 * name that is not an outbound cluster of a known Service, or names a subset no applicable
 * DestinationRule defines, gives the empty assignment. Returns NULL only when store or
 * cluster_name is NULL, or on out of memory. store is only read. */
json_t *wf_eds_load_assignment(const wf_store *store, const char *cluster_name,
                               const wf_cds_options *opt);

/* The ClusterLoadAssignments of every EDS cluster wf_cds_sidecar_clusters(store, opt) builds,
 * in the same order: a new JSON array the caller releases with json_decref. Returns NULL when
 * store is NULL or on out of memory. */
json_t *wf_eds_sidecar_assignments(const wf_store *store, const wf_cds_options *opt);

#endif
