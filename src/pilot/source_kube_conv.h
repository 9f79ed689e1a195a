/*
 * source_kube_conv.h - the Kubernetes source's conversion (pure): the reflectors' caches (kube/
 * reflector.h) become the in-memory documents source_build.c loads (source.h wf_source_doc), the
 * way istiod's Kubernetes registry and CRD client read them (../shared/reference/kubernetes.md
 * §2.1-2.6):
 *
 *  - every object becomes one JSON document named "kube:Kind/ns/name" ("kube:Kind/name" for
 *    cluster-scoped kinds), with kind and apiVersion set from the kind table (list items carry
 *    none), metadata.managedFields and metadata.resourceVersion left out (bookkeeping, not
 *    config: they would make every write look like a change), and, for the Istio kinds, status
 *    left out (istiod reads spec; status is what it writes);
 *  - the `istio` ConfigMap in the system namespace is the MeshConfig (its data.mesh), not a
 *    document; other ConfigMaps are not watched;
 *  - EndpointSlices (§2.3) decide which Pods are endpoints: weft's registry makes endpoints from
 *    the Pods a Service selects (pilot/serviceentry.h), so the slices are applied to the Pods.
 *    Slices labelled multicluster.kubernetes.io/service-name and addressType FQDN are ignored
 *    (as istiod). A slice address with conditions.ready nil or true makes the Pod with that
 *    IP (targetRef Pod, else status.podIP) an endpoint; ready false (serving/terminating
 *    included: Istio sends draining endpoints only for persistent sessions, which weft does not
 *    model, and leaves unhealthy ones out by default) makes it not one. A Pod no slice names
 *    follows its own Ready condition (what the EndpointSlice controller would write), and a Pod
 *    without status.conditions counts as ready (the test API server runs no kubelet). Pods
 *    with a deletionTimestamp or a terminal phase are not endpoints (§2.4). A Pod that is not
 *    an endpoint is served without status.podIP (so no Service lists it) and reported in
 *    out->not_ready. Slice addresses that name no Pod are not served (weft builds Kubernetes
 *    endpoints from Pods only) and are reported in out->ignored.
 *  - MeshConfig discoverySelectors (§2.5: LabelSelectors on Namespaces, OR-ed; none = every
 *    namespace): the namespaced objects of Services, EndpointSlices, Pods and the Istio kinds
 *    pass only when their namespace is selected (out->discovery); Namespaces, Nodes, Secrets
 *    and the mesh ConfigMap always pass. A selector with an unknown operator selects nothing.
 *
 * Input: a JSON object {"Kind": {"ns/name": object}} (the reflectors' snapshots; borrowed).
 * Output: owned by out; free with wf_kube_docs_free. Documents are ordered by kind (the order of
 * kinds, a fixed list below) then by key, so two equal inputs give equal outputs.
 */
#ifndef WF_PILOT_SOURCE_KUBE_CONV_H
#define WF_PILOT_SOURCE_KUBE_CONV_H

#include <stddef.h>

#include <jansson.h>

#include "pilot/source.h"

typedef struct wf_kube_docs {
    wf_source_doc *docs; /* names and JSON text malloc'ed */
    size_t n;
    char *mesh_text; /* the istio ConfigMap as JSON, or NULL when there is none */
    size_t mesh_len;
    char *mesh_name;   /* "kube:ConfigMap/istio-system/istio", or NULL */
    json_t *discovery; /* {"ns": true} the discoverySelectors select; NULL = no selectors */
    json_t *not_ready; /* {"ns/name": "why"}: Pods served without their IP */
    json_t *ignored;   /* ["EndpointSlice ns/name: endpoints[0].addresses[0] 10.0.0.9: why"] */
} wf_kube_docs;

/* system_ns: where the `istio` ConfigMap is (NULL = "istio-system"). Returns 0, or -1 when out
 * of memory (out is then cleared). */
int wf_kube_docs_make(const json_t *in, const char *system_ns, wf_kube_docs *out);
void wf_kube_docs_free(wf_kube_docs *d);

#endif
