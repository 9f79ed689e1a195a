/*
 * types.h - typed views of the Kubernetes and Istio resources weft models.
 *
 * Field names and meaning follow the Kubernetes API (core/v1, apps/v1) and Istio's API
 * reference (networking.istio.io v1alpha3/v1beta1/v1, security.istio.io v1beta1/v1).
 * Every struct is decoded from the resource's node tree by wf_decode() and lives in the
 * store's arena. Strings are NULL when the field is absent. Each element keeps the node it
 * came from (`node`) so that a finding can name its line. Fields that weft does not need
 * in typed form stay reachable as nodes (`wf_resource.spec`).
 *
 * Integer fields that are absent are 0 (ports) or -1 where 0 is meaningful (replicas,
 * runAsUser, weight).
 */
#ifndef WF_MODEL_TYPES_H
#define WF_MODEL_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/node.h"

typedef struct wf_kv {
    const char *key, *value;
    const wf_node *node; /* the value node */
} wf_kv;

typedef struct wf_kvs {
    size_t n;
    wf_kv *items;
} wf_kvs;

typedef struct wf_strs {
    size_t n;
    const char **v;
    const wf_node **nodes;
} wf_strs;

/* Decode a YAML map of strings (labels, selectors) into kvs, in document order, allocated in
 * the arena; a non-map gives an empty kvs. Returns 0, or -1 on out of memory. */
struct wf_arena;
int wf_decode_kvs(struct wf_arena *a, const wf_node *map, wf_kvs *out);

/* Value for key, or NULL. */
const char *wf_kvs_get(const wf_kvs *kvs, const char *key);

/* True when every selector pair is present with the same value in labels. An empty selector
 * matches everything (callers that need "empty matches nothing" check n first). */
bool wf_kvs_subset(const wf_kvs *selector, const wf_kvs *labels);

/* Does a Kubernetes LabelSelector (matchLabels + matchExpressions with In, NotIn, Exists,
 * DoesNotExist) match labels? sel may be NULL (matches nothing). */
bool wf_label_selector_matches(const wf_node *sel, const wf_kvs *labels);

/* ---- core/v1, apps/v1 ---- */

typedef struct wf_service_port {
    const char *name;        /* may be NULL */
    int32_t port;            /* 0 when absent */
    const char *protocol;    /* "TCP" when absent */
    int32_t target_port;     /* numeric targetPort; defaults to port when absent */
    const char *target_name; /* named targetPort ("http"), else NULL */
    int32_t node_port;
    const char *app_protocol;
    const wf_node *node;
} wf_service_port;

typedef struct wf_service {
    const char *type; /* "ClusterIP" when absent */
    const char *external_name;
    const char *cluster_ip;
    wf_kvs selector;
    bool has_selector;
    size_t nports;
    wf_service_port *ports;
} wf_service;

typedef struct wf_container_port {
    const char *name;
    int32_t container_port;
    const char *protocol;
} wf_container_port;

typedef struct wf_container {
    const char *name, *image;
    int64_t run_as_user; /* securityContext.runAsUser, -1 when absent */
    size_t nports;
    wf_container_port *ports;
    const wf_node *node;
} wf_container;

typedef struct wf_pod_spec {
    const char *service_account; /* serviceAccountName (or serviceAccount) */
    const char *node_name;
    int64_t run_as_user; /* spec.securityContext.runAsUser, -1 when absent */
    size_t ncontainers;
    wf_container *containers;
    size_t ninit;
    wf_container *init_containers;
    const wf_node *node;
} wf_pod_spec;

typedef struct wf_pod {
    wf_pod_spec spec;
    const char *pod_ip; /* status.podIP */
    const char *phase;  /* status.phase */
} wf_pod;

/* Deployment, ReplicaSet, StatefulSet, DaemonSet. */
typedef struct wf_workload {
    int32_t replicas;        /* -1 when absent (Kubernetes then means 1) */
    const wf_node *selector; /* spec.selector (LabelSelector) */
    wf_kvs template_labels;
    wf_kvs template_annotations;
    wf_pod_spec spec;
} wf_workload;

typedef struct wf_namespace_t {
    int unused; /* labels and annotations are on wf_resource */
} wf_namespace_t;

/* ---- networking.istio.io ---- */

typedef struct wf_gateway_server {
    int32_t port; /* port.number */
    const char *port_name, *protocol;
    int32_t target_port; /* port.targetPort, 0 when absent */
    wf_strs hosts;
    const char *tls_mode, *credential_name;
    const wf_node *tls; /* the tls block, or NULL */
    const wf_node *node;
} wf_gateway_server;

typedef struct wf_gateway {
    wf_kvs selector;
    bool has_selector;
    size_t nservers;
    wf_gateway_server *servers;
} wf_gateway;

typedef struct wf_destination {
    const char *host, *subset;
    int32_t port;        /* port.number, 0 when absent */
    const wf_node *node; /* the `destination` (or `mirror`) node */
} wf_destination;

typedef struct wf_route_destination {
    wf_destination dest;
    int32_t weight; /* -1 when absent */
    const wf_node *node;
} wf_route_destination;

typedef enum wf_route_type { WF_ROUTE_HTTP, WF_ROUTE_TCP, WF_ROUTE_TLS } wf_route_type;

typedef struct wf_route {
    wf_route_type type;
    const char *name;
    const wf_node *match; /* sequence or NULL */
    size_t ndest;
    wf_route_destination *dests;
    wf_destination mirror; /* host NULL when absent (`mirror:`) */
    size_t nmirrors;       /* `mirrors:` list */
    wf_destination *mirrors;
    const char *timeout;
    const wf_node *node;
} wf_route;

typedef struct wf_virtualservice {
    wf_strs hosts, gateways, export_to;
    size_t nhttp, ntcp, ntls;
    wf_route *http, *tcp, *tls;
    const wf_node *delegate;
} wf_virtualservice;

typedef struct wf_subset {
    const char *name;
    wf_kvs labels;
    const wf_node *traffic_policy;
    const wf_node *node;
} wf_subset;

typedef struct wf_destinationrule {
    const char *host;
    size_t nsubsets;
    wf_subset *subsets;
    wf_strs export_to;
    wf_kvs workload_selector; /* spec.workloadSelector.matchLabels */
    bool has_workload_selector;
    const wf_node *traffic_policy;
} wf_destinationrule;

typedef struct wf_se_port {
    int32_t number;
    const char *name, *protocol;
    int32_t target_port;
    const wf_node *node;
} wf_se_port;

typedef struct wf_serviceentry {
    wf_strs hosts, addresses, export_to;
    size_t nports;
    wf_se_port *ports;
    const char *location, *resolution;
    wf_kvs workload_selector;
    bool has_workload_selector;
    const wf_node *endpoints;
} wf_serviceentry;

typedef struct wf_workloadentry {
    const char *address, *network, *service_account;
    wf_kvs labels;
    const wf_node *ports;
} wf_workloadentry;

typedef struct wf_sidecar {
    wf_kvs workload_selector;
    bool has_workload_selector;
    const wf_node *ingress, *egress, *outbound_traffic_policy;
} wf_sidecar;

/* PeerAuthentication, AuthorizationPolicy, RequestAuthentication, Telemetry, WasmPlugin,
 * EnvoyFilter, ProxyConfig: the selector is the common part. */
typedef struct wf_policy {
    wf_kvs selector; /* spec.selector.matchLabels (or workloadSelector.labels) */
    bool has_selector;
    const wf_node *target_refs; /* targetRef / targetRefs */
} wf_policy;

#endif
