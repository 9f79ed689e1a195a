/*
 * generate.h - the xDS resources of one proxy: who the proxy is (from its node) and what
 * weft-pilot sends it for each type, from one immutable config store and MeshConfig.
 *
 * Proxy identity follows Istio's node conventions (pilot/pkg/model/context.go
 * ParseServiceNodeWithMetadata, NodeMetadata field names):
 *  - node.id is "<pod>.<namespace>" (weft) or Istio's "<type>~<ip>~<pod>.<namespace>~<domain>"
 *    with type "sidecar" or "router";
 *  - node.metadata keys (Istio's names): NAME, NAMESPACE, LABELS (object of strings),
 *    INSTANCE_IPS ("ip1,ip2"), WORKLOAD_NAME, ISTIO_VERSION, CLUSTER_ID; and weft's own:
 *    PROXY_TYPE ("sidecar" | "router"; overrides the id's type; default sidecar),
 *    WEFT_LOCALHOST (the pod's own loopback address in the local mesh, where the application
 *    listens and where outbound listeners bind; default absent = Istio's shapes: inbound
 *    clusters send to 127.0.0.1 and outbound listeners are 0.0.0.0),
 *    WEFT_ADMIN ("ip:port" of the proxy's admin server, for weftctl),
 *    DNS_CAPTURE / DNS_AUTO_ALLOCATE ("true": Istio's ISTIO_META_DNS_CAPTURE /
 *    ISTIO_META_DNS_AUTO_ALLOCATE, pilot/nds.h).
 *    A Pod object NAME/NAMESPACE in the store fills labels and the IP when metadata lacks them.
 *  - precedence: the pod and namespace come from metadata NAME / NAMESPACE, else the id's
 *    "<pod>.<namespace>" (split at the last dot), else (namespace only) the first label of the
 *    Istio id's domain ("<ns>.svc.cluster.local"); the IP from INSTANCE_IPS, else the Istio id's
 *    ip part, else the Pod; the labels from LABELS, else the Pod, else none.
 *  - errors (message in err): missing id; an Istio id without exactly four parts, with a type
 *    other than sidecar/router or an ip part that is not an IP address; no pod or namespace;
 *    PROXY_TYPE other than sidecar/router; a known metadata key of the wrong JSON type; an
 *    INSTANCE_IPS entry or WEFT_LOCALHOST that is not an IP address.
 *
 * Resources are Envoy v3 JSON objects with "@type", as pilot/cds.h, rds.h, eds.h, lds.h build
 * them. Sidecars get the outbound clusters, route configurations and listeners of those
 * modules plus inbound listeners and clusters (pilot/inbound.h; outbound listeners first, then
 * inbound; outbound clusters, BlackHoleCluster, PassthroughCluster, then inbound clusters, as
 * Istio's BuildClusters); routers (gateways) get the gateway listeners and `http.<port>` route
 * configurations (pilot/gateway.h) and the outbound clusters of a sidecar in their namespace
 * without PassthroughCluster (Istio: gateways have no original-dst listener). EDS covers the
 * EDS clusters only: inbound clusters are STATIC with their endpoint inline.
 *
 * MeshConfig read (Istio's mesh.v1alpha1 fields, pilot/pkg/networking/core):
 *  - outboundTrafficPolicy.mode REGISTRY_ONLY: sidecar route configurations end in block_all
 *    (rds.h), unless the Sidecar that applies says otherwise; rootNamespace: DestinationRule
 *    lookup (cds.h) and the mesh-wide default Sidecar.
 *
 * Sidecar egress scoping (pilot/sidecar_scope.h): for a sidecar proxy, the scope of the Sidecar
 * that applies (by its labels and namespace) is built once per generation and passed to CDS,
 * EDS, RDS and LDS, which then cover only the services (Kubernetes Services and ServiceEntry
 * hosts, pilot/serviceentry.h) and VirtualServices it imports; its outboundTrafficPolicy
 * overrides MeshConfig's. Routers get no scope (Istio applies Sidecars to sidecars only).
 *  - defaultHttpRetryPolicy (an HTTPRetry map): the retry policy of outbound and gateway routes
 *    without VirtualService `retries`, converted as `retries` would be (rds.h); inbound routes
 *    keep Istio's inbound policy.
 *  - accessLogFile non-empty: every HTTP connection manager (outbound, inbound, gateway) gets
 *    access_log [{"name": "envoy.access_loggers.file", "typed_config": {"@type":
 *    ".../envoy.extensions.access_loggers.file.v3.FileAccessLog", "path": FILE, "log_format":
 *    F}}] (accesslog.go). F for accessLogEncoding JSON: {"json_format": accessLogFormat parsed
 *    as a JSON object, else Istio's default map (reference envoy-istio-behaviour.md §5.3)};
 *    otherwise {"text_format_source": {"inline_string": accessLogFormat with "
" appended
 *    when missing, else Istio's default text format (§5.2, %UPSTREAM_CLUSTER_RAW% as 1.24)}}.
 *    Every listener (sidecar inbound and outbound, gateway) also gets Istio's listener access
 *    log (setListenerAccessLog / buildListenerFileAccessLog): that entry plus "filter":
 *    {"response_flag_filter": {"flags": ["NR"]}}, unless disableEnvoyListenerLog is true.
 *
 * Local-mesh deviations from Istio's shapes (DESIGN.md "The local mesh": no iptables, every pod
 * its own loopback address):
 *  - with WEFT_LOCALHOST, sidecar outbound listeners bind WEFT_LOCALHOST:<port> (names stay
 *    "0.0.0.0_<port>") and inbound clusters send to WEFT_LOCALHOST:<port> instead of 127.0.0.1;
 *  - inbound listeners are one per port, "<ip>_<port>" bound to ip:<port>, instead of
 *    virtualInbound:15006 (inbound.h), and gateway listeners bind ip:<port>, with ip the pod IP
 *    when known, else 0.0.0.0 (an outbound listener that would share an inbound listener's
 *    name is then left out).
 *  - no virtualOutbound (15001) listener: the application sends to the outbound listeners
 *    itself.
 *
 * The xDS server does not call wf_pilot_generate per push: it goes through the snapshot's
 * generation cache (gen_cache.h, istiod's XdsCache), whose output is byte-identical.
 *
 * Ownership: wf_pilot_proxy owns its strings; wf_pilot_generate returns a new JSON array the
 * caller json_decrefs. env is only read; it must outlive the call only.
 */
#ifndef WF_PILOT_GENERATE_H
#define WF_PILOT_GENERATE_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "analysis/meshcfg.h"
#include "model/store.h"
#include "xds/discovery.h"

typedef enum wf_proxy_kind {
    WF_PROXY_SIDECAR = 0,
    WF_PROXY_ROUTER,
} wf_proxy_kind;

typedef struct wf_pilot_proxy {
    char *id;  /* node.id as sent */
    char *pod; /* pod name */
    char *ns;  /* namespace */
    wf_proxy_kind kind;
    char *ip;              /* first INSTANCE_IPS entry, else the Istio id's ip, else the Pod's
                            * status.podIP; NULL = unknown */
    char *localhost;       /* WEFT_LOCALHOST; NULL = absent */
    char *admin;           /* WEFT_ADMIN; NULL = absent */
    char *version;         /* ISTIO_VERSION; NULL = absent */
    char *cluster_id;      /* CLUSTER_ID; NULL = "Kubernetes" */
    char *service_account; /* SERVICE_ACCOUNT; NULL = absent (xds_auth.h checks it) */
    char *workload;        /* WORKLOAD_NAME (the pod's Deployment, ...), else the Pod object's
                            * controller (eds.h wf_eds_pod_workload_name); NULL = neither */
    json_t *labels;        /* object of string labels (own reference); never NULL */
    bool http10;      /* metadata HTTP10 "1" (Istio's ISTIO_META_HTTP10): HCMs accept HTTP/1.0 */
    bool dns_capture; /* metadata DNS_CAPTURE "true" (ISTIO_META_DNS_CAPTURE): NDS */
    bool dns_auto_allocate; /* metadata DNS_AUTO_ALLOCATE "true": ServiceEntry addresses
                             * allocated for NDS (pilot/nds.h) */
    /* Istio's capture layout (pilot/capture.h): metadata INTERCEPTION_MODE "REDIRECT" (Istio's
     * ISTIO_META_INTERCEPTION_MODE) and no WEFT_LOCALHOST (the local mesh's explicit mode) */
    bool captured;
} wf_pilot_proxy;

/* Fills *out from node (store may be NULL: no Pod lookup). Returns 0, or -1 with a message
 * in err (cap bytes) when the node has no id, or the id/metadata name no pod and namespace
 * ("node.id: want <pod>.<namespace>"), or out of memory. *out is zeroed on failure. */
int wf_pilot_proxy_from_node(const wf_xds_node *node, const wf_store *store, wf_pilot_proxy *out,
                             char *err, size_t cap);
void wf_pilot_proxy_free(wf_pilot_proxy *p);

/* What generation reads: a finalized store and MeshConfig (mesh may be NULL: defaults). */
typedef struct wf_pilot_env {
    const wf_store *store;
    const wf_meshcfg *mesh;
    /* RequestAuthentication key sets behind jwksUri (pilot/jwt.h wf_jwks_resolve_fn; NULL =
     * none: the fail-closed stand-in is inlined) and its argument */
    char *(*jwks_resolve)(void *arg, const char *jwks_uri, const char *issuer, long timeout_ms);
    void *jwks_arg;
} wf_pilot_env;

/* The resources of type t for proxy p: a new JSON array of resource objects (caller
 * json_decrefs), or NULL on out of memory or when env, env->store or p is NULL.
 *  - WF_XDS_CDS, WF_XDS_LDS: every resource of the type (names ignored: wildcard).
 *  - WF_XDS_RDS: the route configurations named in names (names NULL or empty = all the
 *    proxy's listeners reference); names no listener references are left out.
 *  - WF_XDS_EDS: one ClusterLoadAssignment per name (names NULL or empty = every EDS cluster
 *    of the proxy), empty assignments for unknown names (as istiod).
 *  - WF_XDS_SDS: the credentialName Secrets named in names (pilot/sds.h; none without
 *    names), without log lines or counts.
 *  - WF_XDS_NDS: Istio's NameTable for a sidecar with DNS capture (pilot/nds.h), one
 *    resource; an empty array for other proxies.
 *  - other types: an empty array. */
json_t *wf_pilot_generate(const wf_pilot_env *env, const wf_pilot_proxy *p, wf_xds_type t,
                          const wf_xds_names *names);

/* Istio's access-log builder (pilot/pkg/networking/core/accesslog.go): with accessLogFile
 * set, accessLogEncoding JSON and an accessLogFormat that is not a JSON object, the default
 * JSON map is used instead. Returns 1 in that case (why gets the parse error, NUL-terminated,
 * at most cap bytes), else 0. The caller logs Istio's message once per MeshConfig. */
int wf_gen_log_format_error(const wf_meshcfg *mesh, char *why, size_t cap);

#endif
