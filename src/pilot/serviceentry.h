/*
 * serviceentry.h - the service registry the sidecar generators share: Kubernetes Services and
 * ServiceEntry hosts as one kind of service, and their endpoints (Pods, WorkloadEntries,
 * ServiceEntry endpoints).
 *
 * Follows Istio's pilot/pkg/serviceregistry/serviceentry (conversion.go convertServices,
 * convertEndpoint, convertWorkloadEntryToWorkloadInstance) and kube/controller (Services, Pods,
 * and WorkloadEntries selected by a Service):
 *
 * Services (wf_svc):
 *  - a Kubernetes Service is one service with host `name.ns.svc.<suffix>`, name and namespace
 *    its own, its ports, resolution EDS (ClientSideLB) and its clusterIP. Headless (clusterIP
 *    None) and ExternalName Services are not services here (not translated yet).
 *  - a ServiceEntry gives one service per `hosts` entry (the host as written, wildcards
 *    included), name = the host and namespace = the ServiceEntry's (what Istio writes into
 *    cluster metadata `services`), ports = spec.ports (number, name, protocol as the port's
 *    appProtocol so that pilot/rds_internal.h's protocol rule applies, targetPort), and
 *    resolution: STATIC -> EDS, DNS -> STRICT_DNS, DNS_ROUND_ROBIN -> LOGICAL_DNS, NONE (and
 *    unset, Istio's default) -> ORIGINAL_DST. Addresses that are plain IPs (no CIDR) are the
 *    service's addresses (extra virtual host domains).
 *  - visibility for a proxy in proxy_ns: exportTo (ServiceEntry spec.exportTo; a Service's
 *    `networking.istio.io/exportTo` annotation, comma separated): empty or "*" everywhere, "."
 *    the resource's namespace, "~" nowhere, else the named namespaces; then the Sidecar scope
 *    (pilot/sidecar_scope.h). A host already taken by an earlier visible service is skipped
 *    (Kubernetes Services first, then ServiceEntries, each in load order): Istio keeps one
 *    service per hostname for a proxy; it merges several ServiceEntries for one host, weft
 *    takes the first.
 *
 * Endpoints (wf_svc_endpoints), for one service port and optionally a subset's labels (all of
 * which the endpoint's labels must carry):
 *  - Kubernetes Service with a selector: ready Pods of its namespace that it selects (status.podIP
 *    set, phase not Succeeded/Failed), port = targetPort, a named targetPort resolved against the
 *    Pod's container ports (absent: not an endpoint); then WorkloadEntries of its namespace whose
 *    labels it selects (Istio's WorkloadEntry support for Kubernetes Services), port = numeric
 *    targetPort, a named targetPort looked up in the entry's `ports` map (absent: not an endpoint).
 *  - ServiceEntry with workloadSelector: WorkloadEntries, then ready Pods, of its namespace whose
 *    labels match; port = the entry's `ports[<SE port name>]` (for a Pod: the container port of
 *    that name), else the SE port's targetPort, else its number.
 *  - ServiceEntry with spec.endpoints: each endpoint with an address that is not `unix://`, port
 *    = `ports[<SE port name>]`, else targetPort, else number; labels; weight (0 or absent = 1).
 *  - ServiceEntry DNS / DNS_ROUND_ROBIN without endpoints or selector: one endpoint, the host
 *    itself at targetPort, else the port number (none for a wildcard host: nothing to resolve).
 *
 * Memory: wf_svc and wf_svcs own what they allocate (hosts, port copies); everything else points
 * into the store, which must outlive them. Errors: -1 only on out of memory.
 */
#ifndef WF_PILOT_SERVICEENTRY_H
#define WF_PILOT_SERVICEENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/store.h"
#include "pilot/sidecar_scope.h"

typedef enum wf_svc_resolution {
    WF_SVC_EDS = 0, /* Kubernetes Service, SE STATIC: EDS cluster */
    WF_SVC_DNS,     /* SE DNS: STRICT_DNS cluster */
    WF_SVC_DNS_RR,  /* SE DNS_ROUND_ROBIN: LOGICAL_DNS cluster */
    WF_SVC_NONE,    /* SE NONE: ORIGINAL_DST cluster */
} wf_svc_resolution;

typedef struct wf_svc {
    const wf_resource *res; /* the Service or ServiceEntry */
    bool is_se;
    char *host;       /* owned: FQDN of a Service, the SE host */
    const char *name; /* metadata name: the Service's name, the SE host */
    const char *ns;   /* the resource's namespace */
    const char *vip;  /* clusterIP (Service); NULL when none */
    wf_svc_resolution resolution;
    size_t nports;
    wf_service_port *ports; /* owned copy */
} wf_svc;

typedef struct wf_svcs {
    size_t n;
    wf_svc *v;
} wf_svcs;

/* Who is looking: the proxy's namespace (NULL = none: only services exported everywhere), the
 * DNS suffix (NULL = the store's) and the Sidecar scope (NULL = everything). */
typedef struct wf_svc_view {
    const char *proxy_ns;
    const char *suffix;
    const wf_scope *scope;
} wf_svc_view;

/* The service of Kubernetes Service r (host built with suffix) into *out. Returns 1, 0 when r
 * is not a service here (headless, ExternalName, no name; *out zeroed), -1 on OOM. */
int wf_svc_from_service(const wf_resource *r, const char *suffix, wf_svc *out);

/* The service of host i of ServiceEntry r. Returns 1, 0 for an empty host, -1 on OOM. */
int wf_svc_from_se(const wf_resource *r, size_t i, wf_svc *out);

void wf_svc_clear(wf_svc *s);

/* exportTo and Sidecar scope, as above. */
bool wf_svc_visible(const wf_svc *s, const wf_svc_view *v);

/* The SE's plain-IP addresses (NULL when s is a Service), for virtual host domains. */
const wf_strs *wf_svc_addresses(const wf_svc *s);

/* Every service visible to v, Services then ServiceEntries in load order, one per host. Returns
 * 0 (free with wf_svcs_free), -1 on OOM (*out empty). */
int wf_svcs_collect(const wf_store *s, const wf_svc_view *v, wf_svcs *out);
void wf_svcs_free(wf_svcs *l);

/* The visible service with this host (the same one wf_svcs_collect keeps). Returns 1 and fills
 * *out, 0 when none, -1 on OOM. */
int wf_svc_find(const wf_store *s, const char *host, const wf_svc_view *v, wf_svc *out);

/* The port numbered port (UDP ports are never ports here); NULL when none. */
const wf_service_port *wf_svc_port(const wf_svc *s, int32_t port);

/* One endpoint. Strings and nodes point into the store. */
typedef struct wf_endpoint {
    const char *address;
    int32_t port;
    uint32_t weight;          /* >= 1 */
    const wf_resource *src;   /* the Pod, WorkloadEntry or ServiceEntry; NULL for a DNS host */
    const wf_kvs *labels;     /* Pod / WorkloadEntry labels; NULL otherwise */
    const wf_node *label_map; /* a ServiceEntry endpoint's labels map; NULL otherwise */
} wf_endpoint;

/* A label of ep (from labels or label_map); NULL when absent. */
const char *wf_endpoint_label(const wf_endpoint *ep, const char *key);

/* Calls cb for each endpoint of port sp of svc (sp from wf_svc_port), in the order above,
 * keeping those whose labels carry every pair of subset (NULL = all); stops when cb returns
 * false. */
void wf_svc_endpoints(const wf_store *s, const wf_svc *svc, const wf_service_port *sp,
                      const wf_kvs *subset, bool (*cb)(const wf_endpoint *ep, void *arg),
                      void *arg);

/* Whether now has a workload identity prev has not: an identity is (kind, namespace, service
 * account, labels other than pod-template-hash) of a Pod (service account "default" when
 * unset) or a WorkloadEntry. Replicas, IPs and phases are not identities; a new service
 * account, or a workload with other labels (another Service may select it), is. Clusters carry
 * the destination service accounts as SAN matchers (cds.h), so, as Istio's
 * EndpointIndex.UpdateServiceEndpoints turns an endpoint update that changes a service's
 * accounts into a full push, such a Pod or WorkloadEntry change is a full one
 * (source_build.c) and drops the cached clusters (gen_cache.c). Identities that go away do
 * not (Istio: a service left without endpoints is an incremental push; weft also keeps a
 * shrunk account list until the next full push: extra SANs, never a refused peer). True
 * also on out of memory, or when only one store is NULL. */
bool wf_svc_identities_added(const wf_store *prev, const wf_store *now);

#endif
