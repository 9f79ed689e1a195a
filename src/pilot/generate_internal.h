/*
 * generate_internal.h - the pieces of one proxy's generation (generate.c), for the generation
 * cache (gen_cache.c), which shares the pieces that do not depend on the pod between proxies.
 * Not a public interface: see generate.h for what is generated and gen_cache.h for the cache.
 *
 * Which pieces depend on what (the cache key, gen_cache.h):
 *  - wf_gen_outbound_clusters, wf_gen_sidecar_route_configs, wf_gen_outbound_listeners (with
 *    bind NULL) and wf_gen_endpoints: the proxy's kind, namespace, Sidecar scope, MeshConfig
 *    and, for route configurations only, its labels read by VirtualService sourceLabels;
 *  - wf_gen_inbound and the bind address of outbound listeners: the pod (labels, Pod object,
 *    IP, WEFT_LOCALHOST).
 */
#ifndef WF_PILOT_GENERATE_INTERNAL_H
#define WF_PILOT_GENERATE_INTERNAL_H

#include <stdbool.h>

#include <jansson.h>

#include "pilot/cds.h"
#include "pilot/generate.h"
#include "pilot/sidecar_scope.h"

/* Everything one generation reads, resolved once (wf_gen_init). */
typedef struct wf_gen {
    const wf_store *s;
    const wf_meshcfg *mesh;
    const wf_pilot_proxy *p;
    const wf_resource *pod; /* the proxy's Pod object, NULL when not in the store */
    wf_kvs labels;          /* view of p->labels (items heap-allocated, strings borrowed) */
    wf_cds_options cds;
    wf_scope *scope; /* the sidecar's Sidecar scope (owned); NULL = none, and for routers */
    bool registry_only;
    const wf_node *default_retries;
    char *(*jwks_resolve)(void *, const char *, const char *, long); /* env's */
    void *jwks_arg;
} wf_gen;

/* Resolves what generation for p reads from env (both borrowed; they must outlive g).
 * Returns 0, or -1 on out of memory (g needs no fini then). */
int wf_gen_init(wf_gen *g, const wf_pilot_env *env, const wf_pilot_proxy *p);
void wf_gen_fini(wf_gen *g);

/* A sidecar's outbound clusters (wf_cds_sidecar_clusters: outbound, BlackHole, Passthrough). */
json_t *wf_gen_outbound_clusters(const wf_gen *g);
/* A sidecar's inbound clusters (listeners false) or listeners (true): pilot/inbound.h. */
json_t *wf_gen_inbound(const wf_gen *g, bool listeners);
/* A sidecar's outbound route configurations, all of them (no name filter). */
json_t *wf_gen_sidecar_route_configs(const wf_gen *g);
/* A sidecar's outbound listeners bound on bind (NULL = 0.0.0.0), without access logs. */
json_t *wf_gen_outbound_listeners(const wf_gen *g, const char *bind);
/* The assignments named in names (NULL or empty: every EDS cluster), memo as
 * wf_eds_load_assignment_memo (NULL = none). */
json_t *wf_gen_endpoints(const wf_gen *g, const wf_xds_names *names, json_t *memo);

/* Keeps only the resources of arr named in names (NULL or empty: all); arr is changed in place
 * and returned, NULL (arr released) on OOM. */
json_t *wf_gen_filter_names(json_t *arr, const wf_xds_names *names);
/* out (outbound listeners) without those whose name a listener of in took, then in; both
 * released; NULL on OOM. */
json_t *wf_gen_merge_listeners(json_t *out, json_t *in);
/* MeshConfig's access log on every HTTP connection manager and TCP proxy of listeners, their
 * default_filter_chain's too (Istio writes the same format for both, protocols.md §4.4;
 * changed in place).
 * 0, -1 on OOM. */
int wf_gen_access_logs(json_t *listeners, const wf_meshcfg *mesh);
/* MeshConfig pathNormalization on every HTTP connection manager of listeners (changed in
 * place): normalize_path, merge_slashes, path_with_escaped_slashes_action as Istio sets them
 * (generate.c says how). 0, -1 on OOM. */
int wf_gen_path_normalization(json_t *listeners, const wf_meshcfg *mesh);

/* Istio's buildHTTPConnectionManager for a proxy whose metadata sets HTTP10 "1": every HCM
 * gets http_protocol_options.accept_http_10 true, and a sniffed chain matching "http/1.1" also
 * matches "http/1.0", first (protocols.md §1.2; Istio's PILOT_HTTP10). Takes listeners (released)
 * and returns a deep copy with the field set, NULL on out of memory or when listeners is NULL. */
json_t *wf_gen_accept_http10(json_t *listeners);
/* Istio's capture layout (pilot/capture.h) from the outbound listeners (bound on 0.0.0.0) and
 * the per-port inbound ones (both references taken): [virtualOutbound, outbound with
 * bind_to_port false..., virtualInbound]; NULL on out of memory (or a NULL input). */
json_t *wf_gen_capture_listeners(json_t *outbound, json_t *inbound, const wf_gen *g);

#endif
