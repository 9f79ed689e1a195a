/*
 * eds_update.h - istiod's incremental EDS push (pilot/pkg/xds/eds.go, EdsGenerator): which
 * services an endpoint-only change touches, and which of a proxy's watched EDS clusters belong
 * to them.
 *
 * istiod: an endpoint event (EndpointSlice, Pod readiness or IP, WorkloadEntry address) becomes
 * a PushRequest with Full false and ConfigsUpdated holding ServiceEntry-kind keys named by the
 * services' hostnames; EdsGenerator.buildEndpoints then takes edsUpdatedServices =
 * ConfigNamesOfKind(ConfigsUpdated, ServiceEntry) and generates only the watched clusters whose
 * hostname is in it ("incremental EDS push"). An endpoint change that alters a service's
 * service accounts, or the endpoints of a DNS ServiceEntry (its clusters carry them inline), is
 * a full push instead.
 *
 * wf_eds_updated_services maps the changed keys of an ENDPOINTS snapshot (source.h:
 * "Pod/ns/name", "WorkloadEntry/ns/name", "Endpoints/ns/name", "EndpointSlice/ns/name") to the
 * hostnames whose endpoints they can change, looking at both the previous and the new store
 * (a Pod whose labels moved it from one Service to another changes both):
 *  - a Pod or WorkloadEntry: the Kubernetes Services of its namespace whose selector its labels
 *    carry ("name.ns.svc.<suffix>"), and every host of the ServiceEntries of its namespace
 *    whose workloadSelector its labels carry (serviceentry.h: the endpoints' sources);
 *  - Endpoints ns/name: the Service ns/name's host; an EndpointSlice: the host of the Service
 *    its label kubernetes.io/service-name names (weft reads endpoints from Pods, so these only
 *    name the service, as istiod's EndpointSlice controller does).
 * It answers "full" (WF_EDS_UPDATE_FULL) for a key of another kind, an EndpointSlice without
 * the label, or a workload a ServiceEntry of DNS / DNS_ROUND_ROBIN resolution selects.
 *
 * The SotW rule followed (ads.h): on an incremental push istiod sends a SotW stream only the
 * updated clusters, not every watched one: the xDS protocol requires the whole set in a SotW
 * response only for Listener and Cluster ("Grouping resources into responses"; envoy#13009),
 * and Envoy keeps the ClusterLoadAssignments a SotW EDS response leaves out.
 *
 * Cluster names are Istio's "outbound|<port>|<subset>|<host>" (model.ParseSubsetKey): the host
 * is what follows the third '|'. A name of another shape belongs to no updated service.
 *
 * Memory: *out is a new JSON object host -> true (caller decrefs). Single-threaded, pure.
 */
#ifndef WF_PILOT_EDS_UPDATE_H
#define WF_PILOT_EDS_UPDATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "model/store.h"
#include "xds/discovery.h"

enum {
    WF_EDS_UPDATE_OOM = -1,
    WF_EDS_UPDATE_SERVICES = 0, /* *out holds the updated hostnames */
    WF_EDS_UPDATE_FULL = 1,     /* the change needs a full push; *out NULL */
};

/* The hostnames the endpoint changes in changed[0..n) touch, from prev (may be NULL) and now.
 * Returns WF_EDS_UPDATE_SERVICES with *out (may be empty), WF_EDS_UPDATE_FULL, or
 * WF_EDS_UPDATE_OOM (*out NULL). */
int wf_eds_updated_services(const wf_store *prev, const wf_store *now, const char *const *changed,
                            size_t n, json_t **out);

/* The host of an outbound cluster name ("outbound|80||a.ns.svc.cluster.local" -> its last
 * part); NULL for another shape. Points into cluster. */
const char *wf_eds_cluster_host(const char *cluster);

/* Whether cluster's host is in services (an object host -> anything). */
bool wf_eds_cluster_updated(const char *cluster, const json_t *services);

/* The names of watch names whose cluster's host is in services, in watch order, into *out
 * (copies; wf_xds_names_free). Returns the count (0: none, *out empty), -1 on OOM. */
int wf_eds_names_updated(const wf_xds_names *names, const json_t *services, wf_xds_names *out);

#endif
