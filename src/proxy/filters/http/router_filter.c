/*
 * router_filter.c - envoy.filters.http.router as the terminal filter of the HTTP filter chain
 * (proxy/http/filter.h): Envoy's Router::Filter decodeHeaders / decodeData, its timers
 * (route timeout, per-try timeouts and retry back-offs), onLocalReply / onDestroy and its
 * downstream watermark callbacks. The router itself is router.c; its settings (dynamic_stats,
 * suppress_envoy_headers) are the connection manager's (config.h wp_hcm). The route is the
 * connection manager's cached route (proxy/http/cached_route.h).
 *
 * decode_headers starts the router (route actions, the cluster, the pool; local replies for no
 * route, no cluster and the like) and always stops iteration, as Envoy's router does: it is the
 * last filter and answers through the connection manager's callbacks (encode_headers,
 * encode_data, encode_complete, send_local_reply). decode_data hands the request body (the
 * decoding buffer's slice) and its end to the router. The connection manager reaches the router
 * only through this filter; the router's per-stream state is this filter's slot
 * (router_state.h), set up by init.
 */
#include <string.h>

#include "proxy/filters/http/filters.h"
#include "proxy/http/conn.h"
#include "proxy/filters/http/router.h"

/* A new stream: the router's state (filters/http/router_state.h) in the filter's slot. */
static void init(const wp_filter *f)
{
    wp_router_state *rs = f->slot;
    memset(rs, 0, WP_ROUTER_STATE_RESET_BYTES);
    rs->host = -1;
}

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
    (void)end_stream;
    wp_router_request_body(f->stream, data, len); /* may answer (507) */
    return WP_FILTER_DATA_STOP_ITERATION_NO_BUFFER;
}

/* The try timer: a per-try (idle) timeout or the end of a retry back-off. */
static void on_timer(const wp_filter *f)
{
    wp_router_try_timer(f->stream);
}

/* The route timeout (the stream's deadline, taken over from request_timeout). */
static void on_deadline(const wp_filter *f)
{
    wp_router_timeout(f->stream);
}

static void on_local_reply(const wp_filter *f)
{
    wp_router_cancel(f->stream);
}

static void on_below_write_buffer_low_watermark(const wp_filter *f)
{
    wp_router_downstream_writable(f->stream);
}

static void on_dispatch_done(const wp_filter *f)
{
    wp_router_flush(f->stream);
}

static void on_log_view(const wp_filter *f)
{
    wp_router_log_view(f->stream);
}

static void on_stream_complete(const wp_filter *f)
{
    wp_router_stream_complete(f->stream);
}

const wp_http_filter_type wp_http_filter_router = {
    .name = WP_ROUTER_FILTER_NAME,
    .slot_size = sizeof(wp_router_state),
    .terminal = true,
    .init = init,
    .decode_headers = decode_headers,
    .decode_data = decode_data,
    .on_timer = on_timer,
    .on_deadline = on_deadline,
    .on_local_reply = on_local_reply,
    .on_below_write_buffer_low_watermark = on_below_write_buffer_low_watermark,
    .on_dispatch_done = on_dispatch_done,
    .on_log_view = on_log_view,
    .on_stream_complete = on_stream_complete,
};
