/*
 * fault_filter.c - envoy.filters.http.fault as a filter of the HTTP filter chain
 * (proxy/http/filter.h): Envoy's FaultFilter (source/extensions/filters/http/fault/
 * fault_filter.cc) decodeHeaders, the delay timer (postDelayInjection), the abort
 * (abortWithStatus) and onDestroy. The settings, percentages and decision are fault.h's.
 *
 * Per-stream state: wp_fault_stream in the filter's slot. The delay runs on the stream's
 * filter timer (wp_filter_arm_timer): decoding is stopped before the router meanwhile, and the
 * connection manager's timeouts (stream_idle_timeout, request_timeout) still run; a reply or a
 * client disconnect ends the stream, and on_destroy disarms the delay and gives the active
 * fault back.
 */
#include <stdatomic.h>

#include "core/log.h"
#include "proxy/filters/http/fault.h"
#include "proxy/filters/http/filters.h"
#include "proxy/http/filter.h"

static wp_fault_filter *filter_of(const wp_filter *f)
{
    /* the filter's runtime (active-fault count) is the one mutable part of its config */
    return (wp_fault_filter *)(uintptr_t)f->config;
}

static uint64_t stream_id(const wp_filter *f)
{
    return f->cb->stream_info(f->stream)->stream_id;
}

/* FaultFilter::tryIncActiveFaults: one active fault per request, checked against max. */
static bool try_inc_active(const wp_filter *f, wp_fault_stream *fs, const wp_fault_config *c)
{
    wp_fault_filter *ff = filter_of(f);
    if (fs->active)
        return true;
    struct wp_stats_shard *sh = f->cb->stats(f->stream);
    uint64_t max = c->has_max_active ? c->max_active : UINT64_MAX;
    if (atomic_load_explicit(&ff->active, memory_order_relaxed) >= max) {
        wp_stat_add(sh, ff->st_overflow, 1);
        return false;
    }
    atomic_fetch_add_explicit(&ff->active, 1, memory_order_relaxed);
    wp_stat_add(sh, ff->st_active, 1);
    fs->active = true;
    return true;
}

/* FaultFilter::abortWithStatus: the stream is answered (with grpc_status for a gRPC
 * request when not -1) and ends. */
static void abort_stream(const wp_filter *f, int status, int grpc_status)
{
    wp_stat_add(f->cb->stats(f->stream), filter_of(f)->st_aborts, 1);
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, f->cb->connection_id(f->stream), stream_id(f),
                  "fault: aborting request with status %d", status);
    if (grpc_status >= 0 && f->cb->send_local_reply_grpc)
        f->cb->send_local_reply_grpc(f->stream, status, grpc_status, WP_FAULT_ABORT_BODY,
                                     WP_FAULT_ABORT_DETAILS, WP_RF_FI);
    else
        f->cb->send_local_reply(f->stream, status, WP_FAULT_ABORT_BODY, WP_FAULT_ABORT_DETAILS,
                                WP_RF_FI);
}

static void start_delay(const wp_filter *f, wp_fault_stream *fs, uint64_t ms)
{
    wp_filter_arm_timer(f, ms);
    fs->state = WP_FAULT_DELAYING;
    wp_stat_add(f->cb->stats(f->stream), filter_of(f)->st_delays, 1);
    wp_si_set_flag(f->cb->stream_info(f->stream), WP_RF_DI);
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, f->cb->connection_id(f->stream), stream_id(f),
                  "fault: delaying request %llums", (unsigned long long)ms);
}

/* FaultFilter::decodeHeaders, after the connection manager chose the route (per-route
 * settings come from it). */
static wp_filter_headers_status decode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    (void)h;
    (void)end_stream;
    const wp_fault_filter *ff = filter_of(f);
    wp_fault_stream *fs = f->slot;
    if (!ff->per_route && !ff->cfg.has_delay && !ff->cfg.has_abort)
        return WP_FILTER_HEADERS_CONTINUE; /* Istio's listener-level filter: an empty HTTPFault */
    const wp_fault_config *c =
        ff->per_route ? wp_fault_settings(ff, f->cb->vhost(f->stream), f->cb->route(f->stream))
                      : &ff->cfg;
    if (!c->has_delay && !c->has_abort)
        return WP_FILTER_HEADERS_CONTINUE;
    if (c->nheaders) {
        wp_route_req rq;
        f->cb->request(f->stream, &rq);
        if (!wp_route_headers_match(f->cb->regex(f->stream), &rq, c->headers, c->nheaders))
            return WP_FILTER_HEADERS_CONTINUE;
    }
    uint64_t r_delay = f->cb->random(f->stream);
    wp_fault_decision dec = wp_fault_decide(c, r_delay, f->cb->random(f->stream));
    if (dec.delay && try_inc_active(f, fs, c)) {
        fs->abort_after = dec.abort;
        fs->abort_status = (uint16_t)c->abort_status;
        fs->abort_grpc_status = (int16_t)c->abort_grpc_status;
        start_delay(f, fs, c->delay_ms);
        return WP_FILTER_HEADERS_STOP_ITERATION;
    }
    if (dec.abort && try_inc_active(f, fs, c)) {
        abort_stream(f, (int)c->abort_status, c->abort_grpc_status);
        return WP_FILTER_HEADERS_STOP_ITERATION;
    }
    return WP_FILTER_HEADERS_CONTINUE;
}

/* While the delay runs the body waits (Envoy: StopIterationAndWatermark). */
static wp_filter_data_status decode_data(const wp_filter *f, const char *data, size_t len,
                                         bool end_stream)
{
    (void)data;
    (void)len;
    (void)end_stream;
    const wp_fault_stream *fs = f->slot;
    return fs->state == WP_FAULT_DELAYING ? WP_FILTER_DATA_STOP_ITERATION_AND_BUFFER
                                          : WP_FILTER_DATA_CONTINUE;
}

/* FaultFilter::postDelayInjection: the delay is over; abort or go on to the next filter. */
static void on_timer(const wp_filter *f)
{
    wp_fault_stream *fs = f->slot;
    if (fs->state != WP_FAULT_DELAYING)
        return;
    fs->state = WP_FAULT_RESUMED;
    if (fs->abort_after) {
        abort_stream(f, fs->abort_status, fs->abort_grpc_status);
        return;
    }
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, f->cb->connection_id(f->stream), stream_id(f),
                  "fault: delay finished, continuing");
    f->cb->continue_decoding(f->stream);
}

/* FaultFilter::onDestroy: the delay stops, the active fault is given back. */
static void on_destroy(const wp_filter *f)
{
    wp_fault_stream *fs = f->slot;
    if (fs->state == WP_FAULT_DELAYING) {
        fs->state = WP_FAULT_RESUMED;
        wp_filter_disarm_timer(f);
    }
    if (fs->active) {
        wp_fault_filter *ff = filter_of(f);
        fs->active = false;
        atomic_fetch_sub_explicit(&ff->active, 1, memory_order_relaxed);
        wp_stat_add(f->cb->stats(f->stream), ff->st_active, -1);
    }
}

const wp_http_filter_type wp_http_filter_fault = {
    .name = WP_FAULT_NAME,
    .slot_size = sizeof(wp_fault_stream),
    .decode_headers = decode_headers,
    .decode_data = decode_data,
    .on_timer = on_timer,
    .on_destroy = on_destroy,
};
