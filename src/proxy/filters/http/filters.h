/*
 * filters.h - the HTTP filters weft-proxy has, by Envoy name (Envoy's filter factory
 * registry, Registry::FactoryRegistry<NamedHttpFilterConfigFactory>): the bootstrap loader
 * resolves each http_filters entry's name here once, and the connection manager's chain
 * (proxy/http/filter.h) calls the types it found.
 *
 * Filters (each file says which Envoy/Istio filter it follows), name: file (config):
 *  - envoy.filters.http.fault: fault_filter.c (wp_fault_filter, proxy/filters/http/fault.h)
 *  - envoy.filters.http.rbac: rbac_filter.c (wp_rbac_config, proxy/filters/rbac/rbac.h; one
 *    or more per HCM, as Istio's AUDIT / DENY / ALLOW filters)
 *  - envoy.filters.http.jwt_authn: jwt_authn_filter.c (wp_jwt_authn_filter,
 *    proxy/filters/http/jwt_authn.h)
 *  - envoy.filters.http.cors: registry.c (no policy: a no-op, as bootstrap.c says)
 *  - envoy.filters.http.grpc_stats: grpc_stats_filter.c (wp_grpc_stats_config,
 *    proxy/filters/http/grpc_stats.h)
 *  - istio.metadata_exchange: istio_filters.c (wp_istio_mx_filter)
 *  - istio.stats: istio_filters.c (wp_istio_stats_filter)
 *  - envoy.filters.http.router: router_filter.c (terminal; none, the HCM's)
 *
 * The types are immutable and shared by every thread.
 */
#ifndef WEFT_PROXY_FILTERS_HTTP_FILTERS_H
#define WEFT_PROXY_FILTERS_HTTP_FILTERS_H

#include "proxy/http/filter.h"

#define WP_ROUTER_FILTER_NAME "envoy.filters.http.router"
#define WP_CORS_FILTER_NAME   "envoy.filters.http.cors"

extern const wp_http_filter_type wp_http_filter_fault;
extern const wp_http_filter_type wp_http_filter_rbac;
extern const wp_http_filter_type wp_http_filter_cors;
extern const wp_http_filter_type wp_http_filter_grpc_stats;
extern const wp_http_filter_type wp_http_filter_istio_mx;
extern const wp_http_filter_type wp_http_filter_istio_stats;
extern const wp_http_filter_type wp_http_filter_jwt_authn;
extern const wp_http_filter_type wp_http_filter_router;

/* The filter type registered under name (exact, case-sensitive as Envoy), NULL when weft has
 * none. */
const wp_http_filter_type *wp_http_filter_find(const char *name);

/* "a, b, c": the registered names, for error messages (static). */
const char *wp_http_filter_names(void);

#endif
