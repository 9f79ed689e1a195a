/*
 * grpc_stats_filter.c - envoy.filters.http.grpc_stats as a filter of the HTTP filter chain
 * (proxy/http/filter.h): Envoy's GrpcStatsFilter (source/extensions/filters/http/grpc_stats/
 * grpc_stats_filter.cc) decodeHeaders, decodeData, encodeHeaders, encodeData, encodeTrailers
 * with no per-method stats; the behaviour is grpc_stats.h's. It never stops iteration.
 *
 * Per-stream state: grpc_slot in the filter's slot (two frame counters and flags).
 */
#include <string.h>

#include "http/grpc_http.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/http/grpc_stats.h"
#include "proxy/pstats/pstats.h"

typedef struct {
    bool grpc_request;  /* the request's content-type is gRPC and the route has a cluster */
    bool grpc_response; /* the response head is a gRPC response's */
    int cluster;        /* the route's cluster index (stats scope) */
    wp_grpc_frame_counter req, resp;
} grpc_slot;

static void add_stat(const wp_filter *f, int cluster, int which, uint64_t n)
{
    if (!f->cb->cluster_grpc_stat || !f->cb->stats)
        return; /* a connection manager without cluster stats (tests) */
    uint32_t slot = f->cb->cluster_grpc_stat(f->stream, cluster, which);
    wp_stat_add(f->cb->stats(f->stream), slot, (int64_t)n);
}

/* maybeWriteFilterState: the counts so far as the stream's GrpcStatsObject. */
static void write_filter_state(const wp_filter *f, const grpc_slot *g)
{
    const wp_grpc_stats_config *c = f->config;
    if (!c->emit_filter_state)
        return;
    wp_grpc_stats_object *o = &f->cb->stream_info(f->stream)->grpc_stats;
    o->present = true;
    o->request_message_count = g->req.count;
    o->response_message_count = g->resp.count;
}

/* Grpc::Context::chargeStat with a grpc-status value v (len bytes): grpc.<status>, then
 * success or failure, and total. */
static void charge_status(const wp_filter *f, int cluster, const char *v, size_t len)
{
    int code = -1;
    if (wf_grpc_status_parse(v, len, &code) && code <= WP_GRPC_STATUS_MAX &&
        len == (code < 10 ? 1u : 2u)) /* the status as sent: "0".."16" */
        add_stat(f, cluster, WP_GRPC_status0 + code, 1);
    add_stat(f, cluster, len == 1 && v[0] == '0' ? WP_GRPC_success : WP_GRPC_failure, 1);
    add_stat(f, cluster, WP_GRPC_total, 1);
}

static void init(const wp_filter *f)
{
    grpc_slot *g = f->slot;
    memset(g, 0, sizeof *g);
    g->cluster = -1;
}

static wp_filter_headers_status decode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    (void)end_stream;
    grpc_slot *g = f->slot;
    const h1_header *ct = h1_find_header(h->headers, h->nheaders, "content-type");
    if (!ct || !wf_grpc_content_type(ct->value.p, ct->value.len))
        return WP_FILTER_HEADERS_CONTINUE;
    g->cluster = f->cb->cluster(f->stream);
    g->grpc_request = g->cluster >= 0;
    return WP_FILTER_HEADERS_CONTINUE;
}

/* n bytes of one direction's body through its counter: new messages are counted. */
static void count(const wp_filter *f, grpc_slot *g, bool request, const char *data, size_t n)
{
    uint64_t delta = wp_grpc_frame_count(request ? &g->req : &g->resp, data, n);
    if (!delta)
        return;
    write_filter_state(f, g);
    add_stat(f, g->cluster,
             request ? WP_GRPC_request_message_count : WP_GRPC_response_message_count, delta);
}

static wp_filter_data_status decode_data(const wp_filter *f, const char *data, size_t len,
                                         bool end_stream)
{
    (void)end_stream;
    grpc_slot *g = f->slot;
    if (g->grpc_request)
        count(f, g, true, data, len);
    return WP_FILTER_DATA_CONTINUE;
}

static wp_filter_headers_status encode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    grpc_slot *g = f->slot;
    if (!g->grpc_request)
        return WP_FILTER_HEADERS_CONTINUE;
    const h1_header *ct = h1_find_header(h->headers, h->nheaders, "content-type");
    const h1_header *gs = h1_find_header(h->headers, h->nheaders, "grpc-status");
    g->grpc_response = wp_grpc_is_response(h->status, ct ? ct->value.p : NULL,
                                           ct ? ct->value.len : 0, gs != NULL, end_stream);
    if (gs)
        charge_status(f, g->cluster, gs->value.p, gs->value.len);
    return WP_FILTER_HEADERS_CONTINUE;
}

static wp_filter_data_status encode_data(const wp_filter *f, const char *data, size_t len,
                                         bool end_stream)
{
    (void)end_stream;
    grpc_slot *g = f->slot;
    if (g->grpc_request && g->grpc_response)
        count(f, g, false, data, len);
    return WP_FILTER_DATA_CONTINUE;
}

static wp_filter_trailers_status encode_trailers(const wp_filter *f, const h1_header *t, size_t n)
{
    const grpc_slot *g = f->slot;
    const h1_header *gs = g->grpc_request ? h1_find_header(t, n, "grpc-status") : NULL;
    if (gs)
        charge_status(f, g->cluster, gs->value.p, gs->value.len);
    return WP_FILTER_TRAILERS_CONTINUE;
}

const wp_http_filter_type wp_http_filter_grpc_stats = {
    .name = WP_GRPC_STATS_NAME,
    .slot_size = sizeof(grpc_slot),
    .init = init,
    .decode_headers = decode_headers,
    .decode_data = decode_data,
    .encode_headers = encode_headers,
    .encode_data = encode_data,
    .encode_trailers = encode_trailers,
};
