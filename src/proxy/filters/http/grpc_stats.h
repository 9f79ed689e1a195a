/*
 * grpc_stats.h - Envoy's gRPC statistics filter, envoy.filters.http.grpc_stats (typed_config
 * type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig): it counts the
 * length-prefixed messages of gRPC requests and responses and the calls' outcomes per route
 * cluster, and hands the message counts to later filters (istio.stats) as the stream's
 * GrpcStatsObject filter state.
 *
 * Followed: Envoy docs configuration/http/http_filters/grpc_stats_filter (the stats table,
 * the filter state object "request_message_count,response_message_count"),
 * api/envoy/extensions/filters/http/grpc_stats/v3/config.proto, and the source
 * source/extensions/filters/http/grpc_stats/grpc_stats_filter.cc, source/common/grpc/
 * codec.cc (FrameInspector) and source/common/grpc/context_impl.cc (chargeStat); gRPC's
 * doc/PROTOCOL-HTTP2.md (Length-Prefixed-Message: 1 byte Compressed-Flag, 4 bytes big-endian
 * Message-Length, the message); ../shared/reference/protocols.md §3.5.
 *
 * Configuration (what Istio sends: {"emit_filter_state": true, "stats_for_all_methods":
 * false}): emit_filter_state, stats_for_all_methods false or absent. Rejected by JSON path as
 * not supported by weft-proxy: stats_for_all_methods true and individual_method_stats_allowlist
 * (per-method stats), enable_upstream_stats true (upstream_rq_time),
 * replace_dots_in_grpc_service_name true (only matters for per-method names).
 *
 * Behaviour, per stream (Envoy's GrpcStatsFilter with no per-method stats):
 *  - a request is gRPC when its content-type is (wf_grpc_content_type: application/grpc or
 *    application/grpc+...); only those are looked at, and only when the route has a cluster
 *    (Envoy: decoder_callbacks_->clusterInfo());
 *  - request body bytes and, when the response is gRPC (:status 200 with a gRPC content-type,
 *    or trailers-only: grpc-status in the head; Grpc::Common::isGrpcResponseHeaders), response
 *    body bytes go through a frame counter per direction (wp_grpc_frame_counter: FrameInspector:
 *    a message counts when its flag byte is seen, whatever the flag - compressed or not - and
 *    however its bytes are split over DATA chunks; a 0-length message counts);
 *  - each new message adds to cluster.<stat name>.grpc.request_message_count /
 *    response_message_count;
 *  - a grpc-status in the response head (trailers-only) or trailers charges the call:
 *    cluster.<stat name>.grpc.<status> (the status as sent, for 0..16; other values only
 *    count in success/failure/total), then .success when the status is "0" else .failure,
 *    and .total. A call without grpc-status (a reset) charges nothing;
 *  - with emit_filter_state the stream info's grpc_stats object (stream_info.h) holds the
 *    counts so far, set from the first message on (Envoy's maybeWriteFilterState).
 * <stat name> is the cluster's alt_stat_name or name. The counters are registered on first
 * use (Envoy creates them when first charged, so they are absent from /stats until then).
 *
 * Memory and threads: the config is part of the immutable snapshot. Per stream the filter
 * keeps its slot (two frame counters, a few flags): no allocation per body byte, no copy.
 * The counter slots of a cluster are cached in its process-wide runtime (pstats.h
 * wp_grpc_cstats, atomic): the first use registers the name in the store (under the store's
 * mutex), later uses are one atomic load.
 */
#ifndef WEFT_PROXY_FILTERS_HTTP_GRPC_STATS_H
#define WEFT_PROXY_FILTERS_HTTP_GRPC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WP_GRPC_STATS_NAME "envoy.filters.http.grpc_stats"
#define WP_GRPC_STATS_TYPE                                                                         \
    "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig"

/* envoy.filters.http.grpc_stats of one HTTP connection manager (snapshot arena). */
typedef struct wp_grpc_stats_config {
    bool emit_filter_state;
} wp_grpc_stats_config;

/* The message boundaries of one direction of a gRPC stream (Envoy's Grpc::FrameInspector):
 * a zeroed counter expects a message's flag byte. */
typedef struct wp_grpc_frame_counter {
    uint64_t count;     /* messages started so far */
    uint32_t remaining; /* bytes of the current message still to skip */
    uint8_t state;      /* 0 flag byte, 1..4 the length bytes, 5 message bytes */
    uint8_t len_bytes[4];
} wp_grpc_frame_counter;

/* Feeds len bytes (data may be NULL when len is 0) to fc: returns how many messages started in
 * them (fc->count grows by as much). Never allocates or copies the data. */
uint64_t wp_grpc_frame_count(wp_grpc_frame_counter *fc, const char *data, size_t len);

/* Whether a response head makes a gRPC response (Grpc::Common::isGrpcResponseHeaders): a
 * trailers-only answer (end_stream and grpc-status present), or :status 200 with a gRPC
 * content-type (ct: its value, NULL = absent). */
bool wp_grpc_is_response(int status, const char *ct, size_t ct_len, bool has_grpc_status,
                         bool end_stream);

#endif
