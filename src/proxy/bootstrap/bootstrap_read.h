/*
 * bootstrap_read.h - the bootstrap decoder's shared machinery (the readers live in
 * bootstrap_read.c; bootstrap.c and bootstrap_*.c use them; not a public API).
 *
 * A decode run keeps the snapshot being built, the JSON path of the value being decoded
 * ("static_resources.clusters[0].name") and the first error. Readers take the normalized
 * (snake_case) JSON, which they may rewrite in place to the form Envoy prints (canonical
 * durations, uint32 as numbers). Every reader returns false after recording an error; an
 * absent or null field leaves *out untouched.
 */
#ifndef WEFT_PROXY_BOOTSTRAP_READ_H
#define WEFT_PROXY_BOOTSTRAP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/config/config.h"

typedef struct bs {
    wp_config *c;
    wf_arena *a;
    wf_strbuf *err;
    const char *src;
    bool failed;
    const char *ip_msg;     /* endpoint address error format (STATIC clusters), NULL = DNS */
    bool validate_clusters; /* current route config: unknown clusters are errors */
    const char *rc_name;    /* current route config name, for messages */
    wp_hcm *hcm;            /* current HTTP connection manager (router options) */
    /* the current HCM's filters decoded so far (one of each), NULL = none yet */
    struct wp_fault_filter *fault;
    struct wp_istio_stats_filter *istio_stats;
    struct wp_istio_mx_filter *istio_mx;
    int direction;  /* current listener's traffic_direction (0, 1 INBOUND, 2 OUTBOUND) */
    bool tcp_chain; /* the current chain's terminal filter is envoy.filters.network.tcp_proxy */
    struct wp_istio_local *istio_local; /* node metadata for the Istio filters, built once */
    wp_cluster *cur_cluster;            /* the cluster being decoded */
    json_t *tsm_json; /* its transport_socket_matches (for the hosts' choice), NULL = none */
    wp_cluster *pipe_cluster; /* first cluster with a `pipe` endpoint, NULL = none */
    const char *pipe_at;      /* JSON path of that pipe (arena), for the error */
    size_t plen;
    char path[1024];
} bs;

/* path: push ".key" (or "key" at the root) / "[i]"; both return the mark for bs_pop */
size_t bs_push(bs *b, const char *key);
size_t bs_push_i(bs *b, size_t i);
void bs_pop(bs *b, size_t mark);

/* Record "<src>: <path>: <message>" (first error only); returns false. */
bool bs_fail(bs *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same at path.key. */
bool bs_fail_at(bs *b, const char *key, const char *msg);
/* bs_fail_at with a printf message. */
bool bs_fail_atf(bs *b, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void *bs_alloc(bs *b, size_t n); /* zeroed arena memory; NULL after "out of memory" */
const char *bs_strdup(bs *b, const char *s);

/* o[k], NULL when absent or null */
json_t *bs_get(json_t *o, const char *k);
/* o must be an object whose keys are all in allowed (space-separated names). Another key
 * fails as "not supported by weft-proxy (Envoy's <message>.<field>)" when it is a field of the
 * Envoy message o is (envoy_fields.h, by o's "@type" or the current path), else as
 * "unknown field". */
bool bs_fields(bs *b, json_t *o, const char *allowed);
/* Fails with "<path>.k: wrong type: expected <what>"; returns false. */
bool bs_wrong_type(bs *b, const char *k, const char *what);
bool bs_str(bs *b, json_t *o, const char *k, const char **out);
/* present and non-empty */
bool bs_req_str(bs *b, json_t *o, const char *k, const char **out);
bool bs_bool(bs *b, json_t *o, const char *k, bool *out);
bool bs_u32(bs *b, json_t *o, const char *k, uint32_t *out);
bool bs_u64(bs *b, json_t *o, const char *k, uint64_t max, uint64_t *out);
/* Duration in milliseconds; *present set to true when given (present may be NULL). */
bool bs_dur(bs *b, json_t *o, const char *k, uint64_t *ms, bool *present);
/* Enum by name: *out = index in names (NULL-terminated). */
bool bs_enum(bs *b, json_t *o, const char *k, const char *const *names, int *out);
/* o["@type"] must equal type. */
bool bs_type_is(bs *b, json_t *o, const char *type);
/* Decode the object o[k] with fn (path .k), when present. */
bool bs_sub(bs *b, json_t *o, const char *k, bool (*fn)(bs *, json_t *, void *), void *arg);
/* Decode the array of objects o[k] into a new zeroed arena array of *n elements of elem
 * bytes, one fn call per element (path .k[i]). */
bool bs_each(bs *b, json_t *o, const char *k, size_t elem, void **out, size_t *n,
             bool (*fn)(bs *, json_t *, void *));

/* o.metadata (core.v3.Metadata), shape only: filter_metadata must be an object;
 * bootstrap_route.c. */
bool bs_metadata(bs *b, json_t *o);
/* StringMatcher into the wp_string_matcher arg (bs_sub callback); bootstrap_route.c. */
bool bs_string_matcher(bs *b, json_t *o, void *arg);
/* HeaderMatcher into the wp_kv_matcher arg (bs_each callback); bootstrap_route.c. */
bool bs_header_matcher(bs *b, json_t *o, void *arg);
/* o.retry_policy (RetryPolicy) into a new arena policy in *out, left alone when absent;
 * bootstrap_retry.c. */
bool bs_retry_policy(bs *b, json_t *o, const wp_retry_policy **out);
/* o.request_body_buffer_limit / o.per_request_buffer_limit_bytes into *l (only the fields
 * present are set); bootstrap_retry.c. */
bool bs_buffer_limits(bs *b, json_t *o, wp_buffer_limits *l);
/* o.request_mirror_policies into r->mirrors / r->nmirrors (clusters resolved; an unknown
 * one fails the load only when the route configuration validates clusters);
 * bootstrap_retry.c. */
bool bs_mirror_policies(bs *b, json_t *o, wp_route *r);

/* The fault filter (bootstrap_fault.c). bs_http_fault: an HTTPFault object into *c.
 * bs_fault_filter: a new arena filter from http_filters[i].typed_config tc (NULL = empty
 * HTTPFault), NULL after an error. bs_per_filter_config: o.typed_per_filter_config (only
 * "envoy.filters.http.fault" is accepted) into *out, left alone when absent; marks the current
 * HCM's filter as having per-route settings. */
bool bs_http_fault(bs *b, json_t *o, struct wp_fault_config *c);
struct wp_fault_filter *bs_fault_filter(bs *b, json_t *tc);
bool bs_per_filter_config(bs *b, json_t *o, const struct wp_fault_config **out);

/* Istio's filters and metadata (bootstrap_istio.c). bs_istio_stats_filter /
 * bs_istio_mx_filter: http_filters[i].typed_config tc (NULL = empty config) of istio.stats /
 * istio.metadata_exchange into the current HCM (one each). bs_cluster_metadata: o.metadata
 * (filter_metadata; istio.services[0] is kept for Istio's destination_service). */
bool bs_istio_stats_filter(bs *b, json_t *tc);
/* istio.stats as a network filter (filters[i].typed_config tc, NULL = empty) into a new arena
 * config in *out. */
struct wp_istio_stats_filter;
bool bs_istio_network_stats(bs *b, json_t *tc, struct wp_istio_stats_filter **out);
bool bs_istio_mx_filter(bs *b, json_t *tc);
/* Istio's TCP metadata exchange (filters/network/metadata_exchange.h): the typed_config tc
 * of a listener's istio.metadata_exchange network filter into a new arena config in *out;
 * bs_cluster_filters: a cluster's `filters` (its upstream istio.metadata_exchange) into
 * cl->mx. */
struct wp_tcp_mx_config;
bool bs_tcp_mx_config(bs *b, json_t *tc, const struct wp_tcp_mx_config **out);
bool bs_cluster_filters(bs *b, json_t *o, wp_cluster *cl);
bool bs_cluster_metadata(bs *b, json_t *o, wp_cluster *cl);

/* The RBAC filters (bootstrap_rbac.c): http_filters[i].typed_config tc (NULL = an empty RBAC:
 * no rules) of envoy.filters.http.rbac, and filters[i].typed_config of
 * envoy.filters.network.rbac (stat_prefix required), each into a new arena wp_rbac_config
 * (filters/rbac/rbac.h) in *out. */
struct wp_rbac_config;
bool bs_rbac_http_filter(bs *b, json_t *tc, struct wp_rbac_config **out);
bool bs_rbac_network_filter(bs *b, json_t *tc, struct wp_rbac_config **out);

/* The jwt_authn filter (bootstrap_jwt.c): http_filters[i].typed_config tc (NULL = empty
 * JwtAuthentication) into a new arena wp_jwt_authn_filter in *config. */
bool bs_jwt_authn_filter(bs *b, json_t *tc, const void **config);

/* The gRPC statistics filter (bootstrap_grpc_stats.c): http_filters[i].typed_config tc (NULL =
 * empty FilterConfig) of envoy.filters.http.grpc_stats into a new arena wp_grpc_stats_config in
 * *config. */
bool bs_grpc_stats_filter(bs *b, json_t *tc, const void **config);

/* A copy of root with every key in snake_case (protobuf JSON accepts lowerCamelCase too);
 * google.protobuf.Struct and map fields keep their keys. NULL after an error (recorded). */
json_t *bs_normalize(bs *b, json_t *root);

/* o["@type"], when present, must equal type (an xDS resource carries its Any type URL). */
bool bs_opt_type(bs *b, json_t *o, const char *type);

/* dynamic_resources (ads_config, cds_config, lds_config) into c->ads, after static_resources
 * were decoded (the ADS cluster must be one of them); also refuses a `pipe` endpoint in any
 * other cluster. bootstrap_dynamic.c. */
bool bs_dynamic_resources(bs *b, json_t *o);

/* An HttpConnectionManager typed_config o into h (defaults set first), and one access_log
 * entry (bs_each callback, arg the wp_access_log; also admin's); bootstrap_hcm.c. */
bool bs_hcm(bs *b, json_t *o, wp_hcm *h);
bool bs_access_log(bs *b, json_t *o, void *arg);

/* A TcpProxy typed_config o into t (defaults set first); bootstrap_tcp_proxy.c. */
bool bs_tcp_proxy(bs *b, json_t *o, wp_tcp_proxy *t);

/* One element of static_resources.listeners (bs_each callback, arg the wp_listener: filter
 * chains, their matches and connection managers, default_filter_chain) and the checks over
 * all of them (unique names and addresses; builds wp_config.hcms); bootstrap_listener.c. */
bool bs_dec_listener(bs *b, json_t *o, void *arg);
bool bs_check_listeners(bs *b);

/* route_config (RouteConfiguration) into rc; bootstrap_route.c. */
bool bs_route_config(bs *b, json_t *o, wp_route_config *rc);

/* o.address, required: {socket_address {address, port_value}} decoded into *out (host
 * and port, when non-NULL, receive the address as written and the port); ip_msg is the
 * printf message (one %s: the address) for an address that is not an IP. */
bool bs_req_address(bs *b, json_t *o, wp_addr *out, const char **host, uint32_t *port,
                    const char *ip_msg);

/* o.transport_socket (raw_buffer, or tls with a DownstreamTlsContext when downstream, else an
 * UpstreamTlsContext) into *out: NULL for none or raw_buffer, else a new arena wp_tls_config
 * whose engine context the snapshot owns; bootstrap_tls.c. */
bool bs_transport_socket(bs *b, json_t *o, bool downstream, const wp_tls_config **out);

/* One element of static_resources.clusters (bs_each callback, arg the wp_cluster) and the
 * checks over all of them (unique names); bootstrap_cluster.c. */
bool bs_dec_cluster(bs *b, json_t *o, void *arg);
/* http2_protocol_options (HCM and cluster): the SETTINGS fields into arg (a wp_h2_options
 * holding the defaults), Envoy's ranges; the other fields of Http2ProtocolOptions refused. */
bool bs_h2_options(bs *b, json_t *o, void *arg);
bool bs_check_clusters(bs *b);

#endif
