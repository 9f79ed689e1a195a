/*
 * an_virtualservice_util.h - helpers of the virtualservice analyzers (an_virtualservice.c).
 *
 * Follows Istio's pkg/config/analysis/analyzers/virtualservice/util.go (AnnotatedDestination,
 * getRouteDestinations, getHTTPMirrorDestinations), analyzers/util/service_lookup.go
 * (InitServiceEntryHostMap, GetDestinationHost), analyzers/util/hosts.go
 * (GetResourceNameFromHost, ScopedFqdn) and pkg/config/host (Name.Matches).
 * Everything returned lives in the analysis context's arena.
 */
#ifndef WF_ANALYSIS_AN_VIRTUALSERVICE_UTIL_H
#define WF_ANALYSIS_AN_VIRTUALSERVICE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analyzer.h"
#include "core/strmap.h"

/* One destination of a VirtualService with where it sits (Istio's AnnotatedDestination). */
typedef struct wf_vsu_dest {
    const char *rule;  /* "tcp", "tls", "http", "http.mirror" or "http.mirrors" */
    size_t rule_index; /* index of the tcp/tls/http rule (ServiceIndex) */
    size_t dest_index; /* index in route or mirrors (DestinationIndex) */
    const char *host;  /* "" when absent (also for a route entry without destination) */
    const char *subset;
    bool has_port; /* destination.port present */
    int32_t port;  /* port.number (0 when absent) */
} wf_vsu_dest;

/* getRouteDestinations: tcp, then tls, then http route destinations. Returns an arena array
 * (NULL with *n = 0 when there are none or on out of memory). */
const wf_vsu_dest *wf_vsu_route_dests(wf_analysis_ctx *ctx, const wf_resource *vs, size_t *n);

/* getHTTPMirrorDestinations: each http rule's `mirror`, then its `mirrors` entries. */
const wf_vsu_dest *wf_vsu_mirror_dests(wf_analysis_ctx *ctx, const wf_resource *vs, size_t *n);

/* Node of spec.<rule>[i].route[j].destination.host (util.DestinationHost), or NULL when the
 * path does not exist (then the finding carries the document line, as istioctl does). */
const wf_node *wf_vsu_dest_host_node(const wf_resource *vs, const char *rule, size_t i, size_t j);

/* Node of spec.http[i].mirror.host (util.MirrorHost), or NULL. */
const wf_node *wf_vsu_mirror_host_node(const wf_resource *vs, size_t i);

/* util.ConvertHostToFQDN: a host that has no dot and does not start with '*' becomes
 * "<host>.<ns>.svc.<domain suffix>"; anything else is returned unchanged. */
const char *wf_vsu_fqdn(wf_analysis_ctx *ctx, const char *ns, const char *host);

/* util.GetResourceNameFromHost as one key "<ns>/<name>": a "<name>.<ns>.svc.<suffix>" host
 * gives its namespace and name, any other host is taken as a name in default_ns. */
const char *wf_vsu_resource_key(wf_analysis_ctx *ctx, const char *default_ns, const char *host);

/* resource.NewShortOrFullName: "ns/name" or "name" (in default_ns). */
void wf_vsu_short_or_full(wf_analysis_ctx *ctx, const char *default_ns, const char *ref,
                          const char **ns, const char **name);

/* resource.FullName.String(): "ns/name", or "name" when ns is empty. */
const char *wf_vsu_full_name_str(wf_analysis_ctx *ctx, const char *ns, const char *name);

/* host.Name(a).Matches(host.Name(b)): exact match, or wildcard ("*.foo.com", "*") overlap
 * in either direction. */
bool wf_vsu_host_matches(const char *a, const char *b);

/* ---- util.InitServiceEntryHostMap / util.GetDestinationHost ---- */

/* Scoped hosts ("<scope>/<fqdn>") of every ServiceEntry host and Service, scoped by their
 * exportTo (spec.exportTo, or the networking.istio.io/exportTo annotation of a Service);
 * each maps to the ServiceEntry or Service resource (the last one loaded wins). */
wf_strmap *wf_vsu_service_hosts(wf_analysis_ctx *ctx);

/* The ServiceEntry or Service a destination host of a VirtualService in source_ns with the
 * given exportTo resolves to, or NULL when none is visible. */
const wf_resource *wf_vsu_dest_service(wf_analysis_ctx *ctx, const wf_strmap *hosts,
                                       const char *source_ns, const wf_strs *export_to,
                                       const char *host);

/* Port numbers of a ServiceEntry or Service found above. */
size_t wf_vsu_service_nports(const wf_resource *svc);
int32_t wf_vsu_service_port(const wf_resource *svc, size_t i);

#endif
