/*
 * istio_filters.c - istio.metadata_exchange and istio.stats as filters of the HTTP filter
 * chain (proxy/http/filter.h), as Istio's proxy runs them (istio/proxy
 * source/extensions/filters/http/peer_metadata/filter.cc, istio_stats/istio_stats.cc; the
 * behaviour is istio_stats.h's):
 *  - istio.metadata_exchange: decode_headers adds the exchange's upstream request header
 *    operations (downstream discovery removes the exchange headers, upstream propagation sets
 *    this workload's), encode_headers its downstream response operations (upstream discovery
 *    removes them, downstream propagation answers with this workload's); both are applied as
 *    the least specific level, after the route's;
 *  - istio.stats: encode_headers keeps the upstream peer that discovery finds in the
 *    response and its grpc-status (in its slot), on_log records the metrics once the access
 *    logs are written.
 * Neither stops iteration. The order of the two in http_filters does not matter.
 */
#include <string.h>

#include "http/grpc_http.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/http/istio_stats.h"

/* ---------- istio.metadata_exchange ---------- */

static wp_filter_headers_status mx_decode_headers(const wp_filter *f, wp_filter_headers *h,
                                                  bool end_stream)
{
    (void)h;
    (void)end_stream;
    const wp_istio_mx_filter *mx = f->config;
    wp_filter_add_request_ops(f, &mx->req);
    return WP_FILTER_HEADERS_CONTINUE;
}

static wp_filter_headers_status mx_encode_headers(const wp_filter *f, wp_filter_headers *h,
                                                  bool end_stream)
{
    (void)h;
    (void)end_stream;
    const wp_istio_mx_filter *mx = f->config;
    wp_filter_add_response_ops(f, wp_istio_mx_resp_ops(mx, f->cb->stream_info(f->stream)->request));
    return WP_FILTER_HEADERS_CONTINUE;
}

const wp_http_filter_type wp_http_filter_istio_mx = {
    .name = WP_ISTIO_MX_NAME,
    .decode_headers = mx_decode_headers,
    .encode_headers = mx_encode_headers,
};

/* ---------- istio.stats ---------- */

typedef struct {
    bool has_peer;        /* peer holds the upstream peer */
    int grpc_status;      /* grpc-status of the response headers, -1 none */
    wp_istio_stream peer; /* written before it is read: not zeroed per stream */
} stats_slot;

static void stats_init(const wp_filter *f)
{
    stats_slot *st = f->slot;
    st->has_peer = false;
    st->grpc_status = -1;
}

static wp_filter_headers_status stats_encode_headers(const wp_filter *f, wp_filter_headers *h,
                                                     bool end_stream)
{
    (void)end_stream;
    stats_slot *st = f->slot;
    st->has_peer = wp_istio_upstream_peer(f->config, h->headers, h->nheaders, &st->peer);
    const h1_header *g = h1_find_header(h->headers, h->nheaders, "grpc-status");
    if (!g || !wf_grpc_status_parse(g->value.p, g->value.len, &st->grpc_status))
        st->grpc_status = -1;
    return WP_FILTER_HEADERS_CONTINUE;
}

static void stats_on_log(const wp_filter *f)
{
    const stats_slot *st = f->slot;
    wp_istio_stream_done(f->stream, f->config, st->has_peer ? &st->peer.peer : NULL,
                         st->grpc_status);
}

const wp_http_filter_type wp_http_filter_istio_stats = {
    .name = WP_ISTIO_STATS_NAME,
    .slot_size = sizeof(stats_slot),
    .init = stats_init,
    .encode_headers = stats_encode_headers,
    .on_log = stats_on_log,
};
