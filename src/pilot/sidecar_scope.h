/*
 * sidecar_scope.h - Sidecar egress scoping: which services and VirtualServices a sidecar proxy
 * sees, from the networking.istio.io Sidecar resource that applies to it.
 *
 * Follows Istio's pilot/pkg/model/sidecar.go (ConvertToSidecarScope, matchingService,
 * selectVirtualServices) and push_context.go getSidecarScope:
 *  - which Sidecar applies to a proxy in namespace ns with labels L: the first (load order)
 *    Sidecar in ns whose workloadSelector.labels are all in L; else the first Sidecar in ns
 *    without a workloadSelector; else the first Sidecar without a workloadSelector in the root
 *    namespace (MeshConfig rootNamespace, default istio-system). None: no scope (everything
 *    exported to the proxy is visible).
 *  - the egress hosts of all `egress` entries together, each "ns/host": ns "*" any namespace,
 *    "." the proxy's namespace (for the root namespace's default too, as Istio converts it per
 *    namespace), "~" no namespace (imports nothing), else that namespace; host "*" any host,
 *    "*.example.com" the hosts it covers, else the exact host. A Sidecar without egress imports
 *    every host of every namespace (Istio's default egress listener). An entry without "/" imports
 * nothing (validation rejects it).
 *  - a service or VirtualService host H in namespace N is visible when some import's namespace
 *    matches N and its host covers H, or H (a wildcard ServiceEntry host) covers the import's
 *    host (Istio then narrows the service to the imported host; weft keeps the service's own
 *    host). DestinationRules follow the visible services (Istio looks them up per visible
 *    service), so they need no predicate of their own.
 *  - outboundTrafficPolicy.mode of the Sidecar (REGISTRY_ONLY / ALLOW_ANY) overrides
 *    MeshConfig's.
 *
 * Not translated: the egress listeners' `port`, `bind` and `captureMode` (weft uses the union of
 * their hosts for every port, as Istio's catch-all egress listener does), `ingress` listeners
 * (weft's inbound listeners stay those of pilot/inbound.h), outboundTrafficPolicy.egressProxy,
 * and Sidecars for gateways (Istio applies them to sidecars only; so does generate.c).
 *
 * Memory: a wf_scope is heap-allocated by wf_scope_build and released by wf_scope_free; it
 * copies what it needs from the store. Errors: -1 only on out of memory.
 */
#ifndef WF_PILOT_SIDECAR_SCOPE_H
#define WF_PILOT_SIDECAR_SCOPE_H

#include <stdbool.h>

#include "model/store.h"

typedef struct wf_scope wf_scope;

/* The scope of a sidecar in proxy_ns with labels (may be NULL: none) under root_ns (NULL =
 * istio-system). Sets *out to a new scope, or to NULL when no Sidecar applies (everything
 * visible). Returns 0, -1 on OOM or NULL arguments (*out NULL). */
int wf_scope_build(const wf_store *s, const char *proxy_ns, const wf_kvs *labels,
                   const char *root_ns, wf_scope **out);
void wf_scope_free(wf_scope *s);

/* Is host (a service hostname, or a VirtualService host as an FQDN) of a resource in namespace
 * ns visible? Always true for a NULL scope. */
bool wf_scope_visible(const wf_scope *s, const char *ns, const char *host);

/* The Sidecar the scope comes from (NULL for a NULL scope). */
const wf_resource *wf_scope_sidecar(const wf_scope *s);

/* The Sidecar's outboundTrafficPolicy.mode: 1 REGISTRY_ONLY, 0 ALLOW_ANY, -1 unset (MeshConfig
 * decides; also for a NULL scope). */
int wf_scope_registry_only(const wf_scope *s);

#endif
