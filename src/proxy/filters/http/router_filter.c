/*
 * router_filter.c - envoy.filters.http.router as the terminal filter of the HTTP filter chain
 * (proxy/http/filter.h): Envoy's Router::Filter decodeHeaders / decodeData. The router itself
 * is router.c; its settings (dynamic_stats, suppress_envoy_headers) are the connection
 * manager's (config.h wp_hcm). The route is the connection manager's cached route.
 *
 * decode_headers starts the router (route actions, the cluster, the pool; local replies for no
 * route, no cluster and the like) and always stops iteration, as Envoy's router does: it is the
 * last filter and answers through the connection manager. decode_data hands the request body
 * (the stream's pending slice) and its end to the router.
 */
#include "proxy/filters/http/filters.h"
#include "proxy/proxy_internal.h"

static wp_filter_headers_status decode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    (void)h;
    (void)end_stream;
    wp_router_start(f->stream); /* the stream may have ended (valid until the iteration ends) */
    return WP_FILTER_HEADERS_STOP_ITERATION;
}

static wp_filter_data_status decode_data(const wp_filter *f, const char *data, size_t len,
                                         bool end_stream)
{
    (void)data;
    (void)len;
    (void)end_stream;
    wp_router_request_body(f->stream); /* reads the stream's slice; may answer (507) */
    return WP_FILTER_DATA_STOP_ITERATION_NO_BUFFER;
}

const wp_http_filter_type wp_http_filter_router = {
    .name = WP_ROUTER_FILTER_NAME,
    .terminal = true,
    .decode_headers = decode_headers,
    .decode_data = decode_data,
};
