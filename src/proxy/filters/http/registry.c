/*
 * registry.c - the HTTP filter types by Envoy name (filters.h), and envoy.filters.http.cors.
 */
#include <string.h>

#include "proxy/filters/http/filters.h"

/* envoy.filters.http.cors without a policy: Envoy's CORS filter does nothing when no route or
 * virtual host has a CorsPolicy (weft refuses those), so it has no callbacks. */
const wp_http_filter_type wp_http_filter_cors = {.name = WP_CORS_FILTER_NAME};

static const wp_http_filter_type *const registry[] = {
    &wp_http_filter_fault,       &wp_http_filter_jwt_authn,  &wp_http_filter_rbac,
    &wp_http_filter_cors,        &wp_http_filter_grpc_stats, &wp_http_filter_istio_mx,
    &wp_http_filter_istio_stats, &wp_http_filter_router,
};

const wp_http_filter_type *wp_http_filter_find(const char *name)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

const char *wp_http_filter_names(void)
{
    return "envoy.filters.http.fault, envoy.filters.http.jwt_authn, envoy.filters.http.rbac, "
           "envoy.filters.http.cors, envoy.filters.http.grpc_stats, istio.metadata_exchange, "
           "istio.stats, "
           "envoy.filters.http.router";
}
