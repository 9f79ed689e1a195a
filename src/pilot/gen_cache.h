/*
 * gen_cache.h - the generation cache of one config snapshot: what wf_pilot_generate (generate.h)
 * would return, with the parts that do not depend on the pod generated (and serialized) once
 * for every proxy that shares them.
 *
 * Follows istiod's XdsCache (pilot/pkg/model/typed_xds_cache.go, xds/cache.go): generated
 * resources are cached by a key built from everything they depend on, and the whole cache is
 * dropped when the config changes: one cache belongs to one immutable snapshot and is freed
 * with it; wf_gen_cache_carry moves to the next snapshot's cache only the entries the change
 * cannot have touched (istiod clears entries by the configs a push updated).
 *
 * The key of a sidecar (wf_gen_cache_key): "sidecar", the proxy's namespace, the Sidecar that
 * applies to it (pilot/sidecar_scope.h; chosen by namespace and workloadSelector labels), and
 * the values of the proxy labels that some VirtualService match (http, tcp or tls) reads as
 * sourceLabels (only those: other labels change nothing outbound). MeshConfig is the snapshot's, so
 * it is the same for every key of a cache. What is cached per key:
 *  - CDS: the outbound clusters (including BlackHoleCluster and PassthroughCluster), as text;
 *  - RDS: the route configurations (json), and their text per requested name list;
 *  - EDS: the text per requested name list; ClusterLoadAssignments themselves are memoized
 *    across keys by the cluster name and what it resolves to (eds.h
 *    wf_eds_load_assignment_memo), so an endpoint-only push computes each once;
 *  - LDS: the outbound listeners bound on 0.0.0.0 with MeshConfig's access log.
 * Generated per proxy, never cached: inbound clusters and listeners (pilot/inbound.h: the pod's
 * labels, Pod object and IP) and the bind address of outbound listeners (WEFT_LOCALHOST).
 * Routers (gateways) are not cached (their listeners depend on the pod): they are generated
 * whole per request, apart from the memoized assignments.
 * The output is byte-identical to wf_pilot_generate's (tests/unit/test_pilot_gen_cache.c).
 *
 * Requested name lists are told apart by a 64-bit FNV-1a hash of the names (and their count):
 * xds/discovery.h wf_xds_names_hash.
 *
 * Memory: the cache borrows store and mesh (the snapshot owns them and must outlive the cache);
 * cached JSON is shared (json_incref): callers must not modify what wf_gen_cache_json returns.
 * Single-threaded. Errors: NULL / -1 on out of memory only.
 */
#ifndef WF_PILOT_GEN_CACHE_H
#define WF_PILOT_GEN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "pilot/generate.h"
#include "xds/h2_stream.h" /* wf_h2_buf */

typedef struct wf_gen_cache wf_gen_cache;

/* A new, empty cache for env (env->store and env->mesh borrowed). NULL on OOM or a NULL store. */
wf_gen_cache *wf_gen_cache_new(const wf_pilot_env *env);
/* A new cache for env (the next snapshot) that takes over from prev what the change leaves
 * alone, as istiod clears only the cache entries a push's ConfigsUpdated touch: changed holds
 * the snapshot's changed keys "Kind/ns/name" (source.h). A VirtualService change drops RDS
 * and LDS (its tcp and tls routes are listener chains, pilot/tcp.h), a Gateway change RDS; a
 * DestinationRule change CDS, EDS and LDS (tcp_proxy's TCP settings); a Pod, WorkloadEntry,
 * Endpoints or EndpointSlice change EDS (and CDS when a ServiceEntry selects workloads: its DNS
 * clusters carry them inline; or when a workload identity is new, serviceentry.h
 * wf_svc_identities_added: clusters carry service accounts as SANs); any other kind, or
 * mesh_changed (another MeshConfig), drops everything. The entries taken over are moved out of prev
 * (free it afterwards). NULL on OOM. */
wf_gen_cache *wf_gen_cache_carry(wf_gen_cache *prev, const wf_pilot_env *env,
                                 const char *const *changed, size_t n_changed, bool mesh_changed);
/* Frees the cache and everything cached (NULL is fine). */
void wf_gen_cache_free(wf_gen_cache *c);

/* The resources of one response as JSON text: the array is "[" shared "," own "]" (the comma
 * only when both are non-empty); shared and own hold the array's elements without brackets. */
typedef struct wf_gen_text {
    const char *shared; /* borrowed from the cache (valid until wf_gen_cache_free); never NULL */
    size_t shared_len;
    wf_h2_buf *shared_buf; /* the buffer shared points into (borrowed: wf_h2_buf_ref it to keep
                            * it past the cache, e.g. to send it without a copy); NULL when
                            * shared is "" and not from the cache */
    char *own;             /* owned by the caller (wf_gen_text_free); NULL = none */
    size_t own_len;
    uint64_t hash; /* of the whole: equal resources give an equal hash */
} wf_gen_text;

/* The resources of type t for p (names as wf_pilot_generate) as text into *out. Returns 0, -1
 * on OOM (*out zeroed). */
int wf_gen_cache_text(wf_gen_cache *c, const wf_pilot_proxy *p, wf_xds_type t,
                      const wf_xds_names *names, wf_gen_text *out);
/* The same, with names_hash = wf_xds_names_hash(names) already known (a server's watch keeps
 * it), so that a push does not hash ~100 KB of EDS names per proxy. */
int wf_gen_cache_text_hashed(wf_gen_cache *c, const wf_pilot_proxy *p, wf_xds_type t,
                             const wf_xds_names *names, uint64_t names_hash, wf_gen_text *out);
void wf_gen_text_free(wf_gen_text *t);

/* The same as a new JSON array (its elements may be shared with the cache: read only). NULL on
 * OOM. */
json_t *wf_gen_cache_json(wf_gen_cache *c, const wf_pilot_proxy *p, wf_xds_type t,
                          const wf_xds_names *names);

/* The cache key of p into buf (cap bytes): "" for a proxy that is not cached (a router).
 * Returns 0, -1 on OOM or when the key does not fit. */
int wf_gen_cache_key(wf_gen_cache *c, const wf_pilot_proxy *p, char *buf, size_t cap);

/* Number of keys with cached entries (tests, /debug). */
size_t wf_gen_cache_keys(const wf_gen_cache *c);

#endif
