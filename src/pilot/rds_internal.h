/*
 * rds_internal.h - shared between rds.c (route configurations, virtual hosts, domains,
 * which VirtualService applies) and rds_route.c (one VirtualService's HTTP routes).
 * Not a public interface: see rds.h.
 */
#ifndef WF_PILOT_RDS_INTERNAL_H
#define WF_PILOT_RDS_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/store.h"
#include "pilot/serviceentry.h"
#include "pilot/sidecar_scope.h"

typedef struct rds_ctx {
    const wf_store *s;
    const char *proxy_ns; /* NULL = none */
    const char *suffix;   /* cluster DNS suffix */
    const wf_kvs *proxy_labels;
    const wf_node *default_retries; /* MeshConfig defaultHttpRetryPolicy; NULL = Istio's */
    const char *gateway;            /* "ns/name" of the Gateway the routes are for; NULL = "mesh" */
    const wf_scope *scope;          /* Sidecar scope of the proxy; NULL = everything */
    const wf_svcs *svcs;            /* the services the proxy sees (sidecar route configs) */
} rds_ctx;

#define RDS_MAX_PORTS 1024

/* The distinct port numbers of svcs (the services a proxy sees, pilot/serviceentry.h) that get
 * an HTTP route configuration (see rds.h: Istio's protocol detection), ascending, into ports
 * (room for RDS_MAX_PORTS). Returns the count. Shared with lds.c so listeners and route
 * configurations agree. */
size_t rds_http_ports(const wf_svcs *svcs, int32_t *ports);

/* Istio's protocol of a Service port, reduced to "carries HTTP" (see rds.h). */
bool rds_http_service_port(const wf_service_port *sp);

/* Is VirtualService vs exported to proxy_ns (exportTo empty, "*", proxy_ns, "." from the same
 * namespace)? proxy_ns NULL = only "*" and empty exportTo. */
bool rds_vs_visible(const wf_resource *vs, const char *proxy_ns);

/* Is VirtualService vs in x->scope (Istio's selectVirtualServices: one of its hosts, resolved
 * in its namespace, is)? 1 yes (also for no scope), 0 no, -1 on OOM. */
int rds_vs_in_scope(const rds_ctx *x, const wf_resource *vs);

/* Istio's ResolveShortnameToFQDN: a host without a dot becomes host.ns.svc.suffix; anything
 * else (including "*") is kept. Returns a new heap string (free()), NULL on OOM. */
char *rds_resolve_host(const char *host, const char *ns, const char *suffix);

/* Istio's default retry policy for outbound routes (reference §4.5). NULL on OOM. */
json_t *rds_default_retry_policy(void);

/* Append the Envoy routes VirtualService vs produces for listener port `port` to the array
 * routes, in order, stopping after a catch-all route as Istio does. For a gateway
 * (x->gateway set) `port` is the Gateway server's port number and a match applies when its
 * `gateways` is empty or names x->gateway; otherwise when it is empty or names "mesh". Routes
 * without `retries` get x->default_retries (NULL: Istio's default policy). Returns 0, -1 on
 * OOM. */
int rds_vs_routes(const rds_ctx *x, const wf_resource *vs, int32_t port, json_t *routes);

/* Istio's IsCatchAllRoute: match prefix "/" (or regex "*") without header or query
 * parameter matchers. */
bool rds_catch_all_route(json_t *route);

/* ---- rds_policy.c ---- */

/* The duration at key of map m as protobuf JSON text ("0.500s"); NULL when absent,
 * unparsable or negative (also on OOM). */
json_t *rds_duration_at(const wf_node *m, const char *key);

/* Istio's ConvertPolicy of a `retries` block (NULL = absent: the default policy). Sets *out
 * to the new retry_policy, or NULL when attempts <= 0 removes it. Returns 0, -1 on OOM. */
int rds_retry_policy(const wf_node *retries, json_t **out);

/* typed_per_filter_config for a `fault` block (NULL = none) into *out (NULL when nothing to
 * inject). Returns 0, -1 on OOM. */
int rds_fault(const wf_node *fault, json_t **out);

/* request_mirror_policies for the route's mirror to `cluster`, following mirrorPercentage /
 * mirrorPercent; *out NULL when the percentage is 0. Returns 0, -1 on OOM. */
int rds_mirror_policies(const wf_node *http_route, const char *cluster, json_t **out);

/* Add request/response header operations of a `headers` block (may be NULL) to route, as
 * istiod's TranslateHeadersOperations: ":"-prefixed and Host fields are left out, and a
 * request Host or :authority becomes the route action's host_rewrite_literal (route's
 * "route" object must be set first). Returns 0, -1 on OOM. */
int rds_header_ops(json_t *route, const wf_node *headers);

#endif
