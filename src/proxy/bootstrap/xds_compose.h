/*
 * xds_compose.h - turn the xDS resources a proxy has accepted into one effective bootstrap
 * that the loader (bootstrap.h) decodes into a snapshot. Pure: no I/O, no clock, no global
 * state.
 *
 * weft applies every accepted xDS update by loading a whole new snapshot (config.h): the base
 * bootstrap plus the dynamic resources, written as static ones:
 *  - static_resources.clusters += the CDS clusters, in the order given. A `type: EDS` cluster
 *    becomes a STATIC cluster whose load_assignment is the ClusterLoadAssignment named by its
 *    eds_cluster_config.service_name (else the cluster name); eds_cluster_config.eds_config
 *    must say `ads`. Without that assignment yet, the cluster is kept with no endpoints and
 *    listed as warming (Envoy keeps such a cluster warming, out of the active set, until EDS
 *    answers; weft makes it active at once with no endpoints: a request to it gets 503 UH
 *    instead of 503 NC).
 *  - static_resources.listeners += the LDS listeners, each HTTP connection manager's
 *    `rds {route_config_name, config_source {ads}}` replaced by the inline `route_config` of
 *    that name. A listener with a route configuration not received yet is left out and listed
 *    as warming (Envoy keeps it warming: not serving until RDS answers).
 *  - "@type" is kept on top-level resources (the loader accepts the right one) and dropped
 *    from the assignments and route configurations written inline.
 * Keys compose looks at are read in snake_case or lowerCamelCase (protobuf JSON accepts both);
 * everything else is passed through for the loader to check.
 *
 * Resources are Envoy v3 JSON objects as received (with "@type"). Each type's accepted set is
 * a JSON object name -> entry, the entry being
 *   {"resource": {...}, "version_info": "<version of the response that last changed it>",
 *    "last_updated": "<RFC 3339 UTC, e.g. 2024-05-01T10:00:00.123Z>"}
 * (the client keeps these, xds_client.h). Names: Cluster.name, Listener.name,
 * RouteConfiguration.name, ClusterLoadAssignment.cluster_name.
 *
 * Ownership: inputs are borrowed and not modified; outputs are new (json_decref /
 * wp_xds_dynamic_free). The effective bootstrap shares unmodified sub-objects with the inputs
 * (references), so callers must not modify inputs while they keep it.
 */
#ifndef WEFT_PROXY_XDS_COMPOSE_H
#define WEFT_PROXY_XDS_COMPOSE_H

#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "xds/discovery.h"

/* The accepted state, per wf_xds_type (CDS, LDS, RDS, EDS are used; others ignored). */
typedef struct wp_xds_resources {
    json_t *set[WF_XDS_NTYPES];         /* name -> entry (see above); NULL = none received */
    const char *version[WF_XDS_NTYPES]; /* version_info last accepted per type; NULL = none */
    /* Validation only: a missing route configuration is replaced by an empty one
     * ({"name"}), so that warming listeners are loaded (checked) too. Envoy validates a
     * listener when it arrives, before its RDS answers (and binds its address then). The
     * listeners so composed are still listed in warming_listeners. */
    bool placeholder_routes;
    /* SDS (WF_XDS_SDS): set[WF_XDS_SDS] holds the credentialName secrets accepted so far;
     * sds_expired (an object name -> true, may be NULL) the names whose initial fetch timed
     * out. A listener whose transport sockets name a `kubernetes://...` secret over ads {} that
     * is neither held nor expired is left out and listed warming, as Envoy keeps it warming
     * until the secret arrives or initial_fetch_timeout passes (then it serves, and the chain
     * fails its handshakes: NotReadySslSocket, sds/sds_ctx.h). */
    const json_t *sds_expired;
    uint64_t sds_default_fetch_ms; /* for an sds_config without initial_fetch_timeout; 0 =
                                    * Envoy's 15 s */
    /* Listener updates (Envoy's ListenerManagerImpl): lds_active (name -> entry, may be NULL)
     * holds the version of each listener that served last (wp_xds_dynamic.lds_served of the
     * compose applied last). When a listener's new version is warming (a route configuration
     * or a secret missing) and lds_active holds another version of it, that older version is
     * composed in its place, so it keeps serving until the update warms; the name is listed
     * both in warming_listeners and in updating_listeners, and its dump element carries
     * active_state (the older version) and warming_state (the update). */
    const json_t *lds_active;
} wp_xds_resources;

/* What compose tells the caller and /config_dump. */
typedef struct wp_xds_dynamic {
    /* Envoy's config-dump elements of the dynamic resources:
     *  {"clusters": {"version_info", "dynamic_active_clusters": [DynamicCluster],
     *                "dynamic_warming_clusters": [DynamicCluster]},
     *   "listeners": {"version_info", "dynamic_listeners": [DynamicListener
     *                 {name, active_state | warming_state {version_info, listener,
     *                  last_updated}}]},
     *   "routes": {"dynamic_route_configs": [{version_info, route_config, last_updated}]},
     *   "endpoints": {"dynamic_endpoint_configs": [{version_info, endpoint_config,
     *                  last_updated}]}}
     * with each embedded resource as received ("@type" first). Empty arrays and absent
     * versions are omitted, as protobuf JSON does. Owned. The xDS client then adds
     * "listener_errors": its live array of listener error states (xds_client_state.h
     * lds_errors), which config_dump.h merges into dynamic_listeners. */
    json_t *dump;
    wf_xds_names eds_names;          /* ClusterLoadAssignments the EDS clusters need (EDS
                                      * subscription), in cluster order, no duplicates */
    wf_xds_names rds_names;          /* route configurations the listeners need (RDS) */
    wf_xds_names sds_names;          /* credentialName secrets the listeners need (SDS, in
                                      * listener order, no duplicates) */
    uint64_t sds_fetch_ms;           /* their longest sds_config.initial_fetch_timeout
                                      * (Envoy's default 15 s when absent; 0 = wait forever) */
    wf_xds_names warming_clusters;   /* EDS clusters without their assignment */
    wf_xds_names warming_listeners;  /* listeners left out: route configuration missing
                                      * (with placeholder_routes: composed with placeholders) */
    wf_xds_names updating_listeners; /* warming ones whose older version serves meanwhile
                                      * (placeholder_routes: whose older version exists) */
    json_t *lds_served; /* name -> entry of the version each dynamic listener serves (for
                         * lds_active next time); NULL with placeholder_routes or none */
    /* Layout of the effective bootstrap: static_resources.clusters[0..n_static_clusters) come
     * from the base, then the dynamic clusters named by dyn_clusters in order; likewise
     * listeners (warming listeners are not among them, unless placeholder_routes). */
    size_t n_static_clusters, n_static_listeners;
    wf_xds_names dyn_clusters, dyn_listeners;
    wf_xds_names dyn_cluster_eds; /* per dyn_clusters entry: its assignment name, "" if not EDS */
} wp_xds_dynamic;

/* Builds the effective bootstrap from base (a bootstrap as wp_config.bootstrap holds it:
 * normalized, snake_case) and res. Returns 0 with *effective (new reference) and *dyn filled
 * (caller frees both), or -1 with *effective NULL, *dyn zeroed, and one message appended to
 * err naming the resource at fault:
 *   "cluster 'outbound|80||a.ns.svc.cluster.local': eds_cluster_config.eds_config: only ads
 *    is supported"
 *   "listener '0.0.0.0_80': a static listener with that name exists"
 *   "out of memory"
 * *bad_type / *bad_name (may be NULL) receive the type and name of that resource (-1 / "" when
 * none); bad_name must hold 256 bytes. */
int wp_xds_compose(const json_t *base, const wp_xds_resources *res, json_t **effective,
                   wp_xds_dynamic *dyn, wf_strbuf *err, int *bad_type, char *bad_name);

void wp_xds_dynamic_free(wp_xds_dynamic *d);

/* Finds the dynamic resource a loader error is about. error is wp_bootstrap_load's message
 * for the effective bootstrap loaded with source `source` ("<source>: <path>: <message>").
 * When the path falls in a dynamic cluster or listener, returns its type (WF_XDS_CDS,
 * WF_XDS_LDS; WF_XDS_EDS for a path in an EDS cluster's load_assignment, WF_XDS_RDS for one
 * in a listener's inlined route_config), copies its name into name (cap bytes) and the rest
 * ("<path inside the resource>: <message>", or "<message>") into reason. Otherwise returns -1
 * and reason gets the error without the source. effective is the bootstrap compose built. */
int wp_xds_locate_error(const wp_xds_dynamic *dyn, const json_t *effective, const char *source,
                        const char *error, char *name, size_t cap, wf_strbuf *reason);

/* The NACK text for a rejected resource, in Envoy's shape (CdsApiHelper / LdsApiImpl):
 *   CDS "Error adding/updating cluster(s) <name>: <reason>"
 *   LDS "Error adding/updating listener(s) <name>: <reason>"
 *   RDS "Error adding/updating route configuration(s) <name>: <reason>" (weft's wording)
 *   EDS "Error adding/updating cluster load assignment(s) <name>: <reason>" (weft's wording)
 * type < 0: reason alone. Appended to out. */
void wp_xds_nack_text(int type, const char *name, const char *reason, wf_strbuf *out);

/* The name of resource r of type t (Cluster/Listener/RouteConfiguration/Secret "name",
 * ClusterLoadAssignment "cluster_name"); NULL when absent, not a non-empty string, or t is
 * another type. Borrowed from r. */
const char *wp_xds_resource_name(int t, const json_t *r);

/* resource, or a copy of it whose inline private keys (TLS contexts' private_key
 * DataSources) read "[redacted]" as Envoy's config dump shows them: a new reference, NULL on
 * out of memory; bootstrap_tls.c. */
json_t *wp_tls_redacted(json_t *resource);

#endif
