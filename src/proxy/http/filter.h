/*
 * filter.h - the HTTP filter chain of a connection manager: the filter interface (Envoy's
 * Http::StreamDecoderFilter / StreamEncoderFilter), the callbacks a filter gets from its
 * connection manager (Envoy's StreamDecoderFilterCallbacks / StreamEncoderFilterCallbacks) and
 * the chain that runs the filters of one HTTP connection manager over one stream
 * (source/common/http/filter_manager.cc).
 *
 * Envoy behaviour followed:
 *  - the chain is the HCM's http_filters in list order, resolved when the config is loaded
 *    (filters/http/filters.h names the factories); the router is the last, terminal filter;
 *  - request events (headers, data, trailers) go through the filters in list order, response
 *    events in reverse order; a filter's FilterHeadersStatus / FilterDataStatus /
 *    FilterTrailersStatus decides whether the next filter gets the event now;
 *  - a filter that returns StopIteration (or StopAllIterationAndBuffer) from decode_headers
 *    holds the later filters until it calls continue_decoding (e.g. the fault filter's delay);
 *    the same for encode_headers and continue_encoding;
 *  - a local reply (send_local_reply) ends decoding: no later decoder filter gets the request
 *    and a continue_decoding afterwards does nothing; the reply's headers go through every
 *    encoder filter (Envoy's sendLocalReply encodes through the whole encoder chain);
 *  - when the stream ends every filter gets on_stream_complete, then (after the connection
 *    manager wrote the access logs) on_log - the access-log hand-off that filters such as
 *    istio.stats use - then on_destroy, each exactly once per stream (Envoy's
 *    doDeferredStreamDestroy: onStreamComplete, log, destroyFilters).
 *
 * Where weft differs (HTTP/1, zero-copy bodies):
 *  - a request body is not copied into filter buffers. While decoding is stopped, body bytes
 *    and the end of the request stay where they are (the slice pinned in the connection's read
 *    buffer, back-pressure: nothing more is read) and no filter after the stopped one gets a
 *    data event for them; when decoding continues, the later filters see the stream as it
 *    stands in their decode_headers (the router picks up a pending body and a complete request
 *    when it starts). StopIterationAndBuffer from decode_data likewise keeps the slice pinned.
 *    Data events are delivered only to filters whose headers iteration has reached them.
 *  - filters change headers through header operations (proxy/http/headers.h) they add to the
 *    stream (wp_filter_add_request_ops / wp_filter_add_response_ops), applied as the least
 *    specific level when the head is serialised, instead of editing a header map in place.
 *  - a filter has one timer per stream (wp_filter_arm_timer), kept on the connection's request
 *    timer: it may only be used while decoding is stopped before the router (the router's
 *    per-try timeouts and back-offs use it once it runs); the stream's deadline (the HCM's
 *    request_timeout) can be taken over by one filter (wp_filter_arm_deadline: the router's
 *    route timeout, Envoy's HCM disarms request_timeout when the request is complete);
 *  - the router (terminal filter) reaches the connection manager only through the callbacks
 *    (encode_headers / encode_data / encode_complete for the upstream response, flow control,
 *    reset_stream), and the connection manager the router only through the chain
 *    (wp_fchain_notify's events, on_deadline, on_timer, on_stream_complete).
 *
 * Memory and cost: a chain (wp_fchain) is built once per HCM when the config is loaded and is
 * read-only afterwards. Each stream holds one wp_fchain_state and one block of slots (the
 * filters' per-stream state, laid out by the chain, kept with the reused stream: no allocation
 * per request). Per event: one indirect call per filter that implements it, no string
 * compares; events no filter implements cost one flag test.
 *
 * Re-entrancy: a filter that sends a local reply, or otherwise may end the stream, must return
 * StopIteration from that call (Envoy's contract): the stream may have ended (its memory stays
 * valid until the end of the loop iteration, net/deferred.h), and the chain touches nothing
 * after a stop.
 *
 * Threads: a chain is shared read-only by every worker; a state belongs to its stream's worker.
 */
#ifndef WEFT_PROXY_HTTP_FILTER_H
#define WEFT_PROXY_HTTP_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/config/route.h"
#include "proxy/stream_info/stream_info.h"

/* bytes of a stream's slot block (inside the stream): the router's state (952 bytes),
 * istio.stats (544), grpc_stats (64) and fault (16), each rounded up to max_align_t, and room
 * for more */
#define WP_FCHAIN_SLOTS_MAX   2048
#define WP_FCHAIN_MAX_FILTERS 16 /* http_filters entries of one HCM */
#define WP_FILTER_MAX_OPS     2  /* header-ops levels filters may add per direction */

/* Envoy's Http::FilterHeadersStatus (the values weft's filters use). */
typedef enum {
    WP_FILTER_HEADERS_CONTINUE,
    WP_FILTER_HEADERS_STOP_ITERATION,
    WP_FILTER_HEADERS_STOP_ALL_ITERATION_AND_BUFFER,
} wp_filter_headers_status;

/* Envoy's Http::FilterDataStatus. */
typedef enum {
    WP_FILTER_DATA_CONTINUE,
    WP_FILTER_DATA_STOP_ITERATION_AND_BUFFER,
    WP_FILTER_DATA_STOP_ITERATION_NO_BUFFER,
} wp_filter_data_status;

/* Envoy's Http::FilterTrailersStatus. */
typedef enum {
    WP_FILTER_TRAILERS_CONTINUE,
    WP_FILTER_TRAILERS_STOP_ITERATION,
} wp_filter_trailers_status;

/* What the chain tells its caller after an event. */
typedef enum {
    WP_FCHAIN_DONE,    /* every filter let the event pass (to the router / the codec) */
    WP_FCHAIN_STOPPED, /* a filter stopped it (or answered): the caller waits */
} wp_fchain_result;

struct wp_stream; /* the connection manager's stream: opaque to the chain */

/* The connection manager's side, given to every filter (Envoy's StreamDecoderFilterCallbacks
 * and StreamEncoderFilterCallbacks). All take the stream of the call (wp_filter.stream). */
typedef struct wp_filter_callbacks {
    /* sendLocalReply: status, body (may be ""), details (static), response flag
     * (wp_response_flag) or -1. The stream has ended afterwards: return StopIteration. */
    void (*send_local_reply)(struct wp_stream *s, int status, const char *body, const char *details,
                             int flag);
    /* The same with an explicit gRPC status (Envoy's sendLocalReply grpc_status argument): a
     * gRPC request's trailers-only answer carries grpc_status instead of the one mapped from
     * status (the router's timeouts: 4 DEADLINE_EXCEEDED); -1 = mapped. Every local reply to a
     * gRPC request (content-type application/grpc[+...]) is sent as gRPC: :status 200,
     * content-type application/grpc, grpc-status, grpc-message = the body percent-encoded, no
     * body (conn.c local_reply; Envoy's Utility::prepareLocalReply). */
    void (*send_local_reply_grpc)(struct wp_stream *s, int status, int grpc_status,
                                  const char *body, const char *details, int flag);
    /* continueDecoding / continueEncoding: resume after the filter that stopped. The stream
     * may have ended afterwards (still valid memory until the end of the loop iteration). */
    void (*continue_decoding)(struct wp_stream *s);
    void (*continue_encoding)(struct wp_stream *s);
    /* The cached route (chosen before any filter ran), its virtual host and the cluster index
     * in the stream's config snapshot (-1 none); clear_route_cache makes the next lookup choose
     * again. */
    const wp_route *(*route)(struct wp_stream *s);
    const wp_vhost *(*vhost)(struct wp_stream *s);
    int (*cluster)(struct wp_stream *s);
    void (*clear_route_cache)(struct wp_stream *s);
    /* The request as route matchers see it (method, path, authority, headers). */
    void (*request)(struct wp_stream *s, wp_route_req *rq);
    wp_stream_info *(*stream_info)(struct wp_stream *s);
    /* The worker's loop (Envoy's dispatcher), its regex state, random generator and stats
     * shard (the factory context of Envoy's filters), and the downstream connection's id. */
    uv_loop_t *(*dispatcher)(struct wp_stream *s);
    wp_regex_ctx *(*regex)(struct wp_stream *s);
    uint64_t (*random)(struct wp_stream *s);
    struct wp_stats_shard *(*stats)(struct wp_stream *s);
    /* The slot of cluster index cluster's counter cluster.<name>.grpc.<which> (pstats.h
     * WP_GRPC_*, registered on first use), to add to in the stats shard; WP_STAT_INVALID when
     * there is none (the gRPC statistics filter's cluster scope). */
    uint32_t (*cluster_grpc_stat)(struct wp_stream *s, int cluster, int which);
    uint64_t (*connection_id)(struct wp_stream *s);
    /* The stream's filter timer (see wp_filter_arm_timer): arm for ms milliseconds / disarm. */
    void (*arm_timer)(struct wp_stream *s, uint64_t ms);
    void (*disarm_timer)(struct wp_stream *s);
    /* The stream's deadline (see wp_filter_arm_deadline): the connection manager's
     * request_timeout until a filter takes it over (the router's route timeout) for ms
     * milliseconds; disarm clears it, whoever armed it (the request_timeout included). */
    void (*arm_deadline)(struct wp_stream *s, uint64_t ms);
    void (*disarm_deadline)(struct wp_stream *s);

    /* ---- the terminal filter's side (the router): the upstream response, flow control ----
     * encodeHeaders: the upstream response head (the upstream codec's parsed message; raw:
     * its raw_len bytes) goes downstream through the encoder filters. Returns 1 when the head
     * of an upgrade's answer is written and its write is pending (the caller pauses its
     * upstream read until on_below_write_buffer_low_watermark), else 0. */
    int (*encode_headers)(struct wp_stream *s, const h1_message *m, const char *raw,
                          size_t raw_len);
    /* encodeData: len response body bytes (not copied: they stay where they are until the
     * write completes). Returns 1 when the write is pending (the caller pauses its upstream
     * read until on_below_write_buffer_low_watermark), else 0. */
    int (*encode_data)(struct wp_stream *s, const char *data, size_t len);
    /* A response head still waiting for body bytes is written now (the end of what the
     * upstream sent so far). Returns 1 when the write is pending, else 0. */
    int (*encode_flush_head)(struct wp_stream *s);
    /* The upstream response is complete (encodeData with end_stream, or encodeTrailers:
     * the response trailers are the stream info's): the stream ends once it is written. */
    void (*encode_complete)(struct wp_stream *s);
    /* decodingBuffer: the request body slice the connection manager holds for the stream
     * (pinned in its read buffer; *len its bytes), NULL when none. The terminal filter reads it
     * when it starts: a slice that arrived while an earlier filter held decoding (a fault
     * delay) reached no decode_data of it. */
    const char *(*decoding_buffer)(struct wp_stream *s, size_t *len);
    /* The slice handed to decode_data (or decoding_buffer's) is taken: copied, or written
     * upstream at once. The connection manager drops it and nothing else happens now (it
     * parses on when its dispatch pass, or the caller's request_body_written, goes on). */
    void (*drain_decoding_buffer)(struct wp_stream *s);
    /* The request body slice handed to decode_data has been written upstream: the connection
     * manager consumes it and reads on (the end of its back-pressure; Envoy's
     * onDecoderFilterBelowWriteBufferLowWatermark: readDisable(false)). */
    void (*request_body_written)(struct wp_stream *s);
    /* Parse what the connection has buffered and read again (an upgrade's tunnel opened). */
    void (*continue_reading)(struct wp_stream *s);
    /* resetStream: the downstream is reset (HTTP/1: the connection is closed). The stream
     * has ended afterwards (valid memory until the end of the loop iteration). */
    void (*reset_stream)(struct wp_stream *s);
} wp_filter_callbacks;

struct wp_fchain_state;

/* One filter as one call sees it: built by the chain on the stack for each call. */
typedef struct wp_filter {
    struct wp_stream *stream;
    const wp_filter_callbacks *cb;
    const void *config; /* the filter's config in the chain (wp_fchain_entry.config) */
    void *slot;         /* its per-stream state (type->slot_size bytes, max_align_t aligned) */
    struct wp_fchain_state *st;
    uint8_t index; /* position in the chain */
} wp_filter;

/* A header section as filters see it: the fields (the request's as the connection manager
 * left them; the upstream response's or the local reply's) and the status (0 for a
 * request). Filters read them; they change them with header operations (below). */
typedef struct wp_filter_headers {
    h1_header *headers;
    size_t nheaders;
    int status;
} wp_filter_headers;

/* A filter type (Envoy's filter factory product): name and callbacks. NULL callbacks are
 * skipped (a decoder-only filter has no encode_*). */
typedef struct wp_http_filter_type {
    const char *name; /* Envoy's filter name, e.g. "envoy.filters.http.fault" */
    size_t slot_size; /* per-stream state bytes; 0 = none */
    bool terminal;    /* must be the last filter (the router) */
    /* A new stream: set up the slot (NULL: the slot is zeroed). */
    void (*init)(const wp_filter *f);
    wp_filter_headers_status (*decode_headers)(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream);
    wp_filter_data_status (*decode_data)(const wp_filter *f, const char *data, size_t len,
                                         bool end_stream);
    wp_filter_trailers_status (*decode_trailers)(const wp_filter *f, const h1_header *t, size_t n);
    wp_filter_headers_status (*encode_headers)(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream);
    wp_filter_data_status (*encode_data)(const wp_filter *f, const char *data, size_t len,
                                         bool end_stream);
    wp_filter_trailers_status (*encode_trailers)(const wp_filter *f, const h1_header *t, size_t n);
    /* The filter's timer fired (wp_filter_arm_timer). */
    void (*on_timer)(const wp_filter *f);
    /* The stream's deadline the filter took over (wp_filter_arm_deadline) passed. */
    void (*on_deadline)(const wp_filter *f);
    /* Envoy's StreamFilterBase::onLocalReply: a local reply is being sent on the stream (the
     * router gives its upstream request up), before its head goes through the encoders. */
    void (*on_local_reply)(const wp_filter *f);
    /* The downstream took what was written (Envoy's DownstreamWatermarkCallbacks::
     * onBelowWriteBufferLowWatermark): the router reads its upstream again. */
    void (*on_below_write_buffer_low_watermark)(const wp_filter *f);
    /* The connection manager's dispatch of what it read is over: writes a filter deferred
     * while it ran go out now (Envoy flushes upstream writes after the codec's dispatch).
     * Called only when a filter asked for it (wp_fchain_defer_to_dispatch_done). */
    void (*on_dispatch_done)(const wp_filter *f);
    /* The access logs are about to be written (only when some are): a filter that changed
     * what they see of the request (the router's rewritten head) points the stream info at
     * it now. */
    void (*on_log_view)(const wp_filter *f);
    void (*on_stream_complete)(const wp_filter *f);
    void (*on_log)(const wp_filter *f);
    void (*on_destroy)(const wp_filter *f);
} wp_http_filter_type;

/* One entry of a chain. */
typedef struct wp_fchain_entry {
    const wp_http_filter_type *type;
    const void *config; /* the filter's decoded typed_config (owned by the config snapshot) */
    size_t slot_off;    /* its slot in the stream's slot block */
} wp_fchain_entry;

/* The filter chain of one HCM (in the config snapshot's arena). */
typedef struct wp_fchain {
    wp_fchain_entry e[WP_FCHAIN_MAX_FILTERS];
    uint8_t n;
    size_t slots_size; /* bytes of a stream's slot block */
    bool any_encode;   /* some filter has encode_headers */
    bool any_data;     /* some filter has encode_data or encode_trailers */
} wp_fchain;

/* The chain's state in one stream (inside the stream, zeroed with it). */
typedef struct wp_fchain_state {
    const wp_fchain *fc; /* NULL: no chain (the stream has no filters yet) */
    void *slots;         /* fc->slots_size bytes, the caller's */
    uint8_t dec_next;    /* next filter to get the request headers; fc->n: all had them */
    uint8_t enc_next;    /* filters (counting down from fc->n) still to get the response head */
    bool dec_started, dec_stopped, dec_ended; /* ended: a local reply, decoding is over */
    bool enc_stopped;
    bool completed, logged, destroyed; /* on_stream_complete, on_log, on_destroy ran */
    bool dispatch_pending;             /* a filter waits for on_dispatch_done */
    int8_t timer_owner;                /* filter index whose timer is armed, -1 none */
    int8_t deadline_owner;             /* filter index that took the deadline over, -1 none */
    const wp_filter_callbacks *cb;     /* the connection manager's (wp_fchain_start) */
    uint8_t nreq_ops, nresp_ops;
    const wp_header_ops *req_ops[WP_FILTER_MAX_OPS];
    const wp_header_ops *resp_ops[WP_FILTER_MAX_OPS];
} wp_fchain_state;

/* ---- building (config load) ---- */

/* Appends a filter of type t with config to fc. Returns 0, or -1 when the chain is full (its
 * filters or their slots, WP_FCHAIN_SLOTS_MAX) or a terminal filter is already in it (the
 * caller reports the config error). */
int wp_fchain_add(wp_fchain *fc, const wp_http_filter_type *t, const void *config);

/* The config of fc's first filter named name (Envoy's filter name), NULL when fc (which may be
 * NULL) has none. A string compare per filter: for config-time work (stats registration), not
 * for the request path. */
const void *wp_fchain_find(const wp_fchain *fc, const char *name);

/* ---- one stream (its worker thread) ---- */

/* Starts the chain for a new stream: st is reset, slots (fc->slots_size bytes, aligned for
 * max_align_t) are set up by each filter's init. fc may be NULL (no filters). */
void wp_fchain_start(wp_fchain_state *st, const wp_fchain *fc, void *slots, struct wp_stream *s,
                     const wp_filter_callbacks *cb);

/* Request headers: through the filters in order from the first (or from where decoding
 * stopped). DONE when the last filter had them; STOPPED when a filter stopped (or answered;
 * the stream may have ended then). */
wp_fchain_result wp_fchain_decode_headers(wp_fchain_state *st, struct wp_stream *s,
                                          const wp_filter_callbacks *cb, wp_filter_headers *h,
                                          bool end_stream);
/* continueDecoding: the headers go on from the filter after the one that stopped. Nothing
 * when decoding is not stopped or has ended. */
wp_fchain_result wp_fchain_continue_decoding(wp_fchain_state *st, struct wp_stream *s,
                                             const wp_filter_callbacks *cb, wp_filter_headers *h);
/* A request body slice (data, len; end_stream: the request ends with it; len may be 0) or the
 * request trailers: to the filters the headers reached, in order. DONE when every filter let
 * it pass; STOPPED when decoding is stopped or a filter stopped the data (the caller keeps the
 * bytes: back-pressure). */
wp_fchain_result wp_fchain_decode_data(wp_fchain_state *st, struct wp_stream *s,
                                       const wp_filter_callbacks *cb, const char *data, size_t len,
                                       bool end_stream);
wp_fchain_result wp_fchain_decode_trailers(wp_fchain_state *st, struct wp_stream *s,
                                           const wp_filter_callbacks *cb, const h1_header *t,
                                           size_t n);

/* A local reply is being sent: decoding ends (no later decode event, continue_decoding does
 * nothing) and the encoder filters get the reply's head (wp_fchain_encode_headers). */
wp_fchain_result wp_fchain_local_reply(wp_fchain_state *st, struct wp_stream *s,
                                       const wp_filter_callbacks *cb, wp_filter_headers *h,
                                       bool end_stream);

/* Response headers / body / trailers through the filters in reverse order. DONE when the
 * codec may write them; STOPPED when an encoder filter stopped. The response's header-ops
 * levels restart with each head. */
wp_fchain_result wp_fchain_encode_headers(wp_fchain_state *st, struct wp_stream *s,
                                          const wp_filter_callbacks *cb, wp_filter_headers *h,
                                          bool end_stream);
wp_fchain_result wp_fchain_continue_encoding(wp_fchain_state *st, struct wp_stream *s,
                                             const wp_filter_callbacks *cb, wp_filter_headers *h);
wp_fchain_result wp_fchain_encode_data(wp_fchain_state *st, struct wp_stream *s,
                                       const wp_filter_callbacks *cb, const char *data, size_t len,
                                       bool end_stream);
wp_fchain_result wp_fchain_encode_trailers(wp_fchain_state *st, struct wp_stream *s,
                                           const wp_filter_callbacks *cb, const h1_header *t,
                                           size_t n);

/* Whether a filter's timer is armed; the timer fired: the owner's on_timer (the stream may
 * be gone afterwards). */
static inline bool wp_fchain_timer_armed(const wp_fchain_state *st)
{
    return st->fc && st->timer_owner >= 0;
}
void wp_fchain_on_timer(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb);

/* Whether a filter took the stream's deadline over; the deadline passed: the owner's
 * on_deadline (the stream may be gone afterwards). */
static inline bool wp_fchain_deadline_armed(const wp_fchain_state *st)
{
    return st->fc && st->deadline_owner >= 0;
}
void wp_fchain_on_deadline(wp_fchain_state *st, struct wp_stream *s);

/* Events of the stream every filter that has the hook gets, in list order: a local reply is
 * being sent (on_local_reply), the downstream is writable again
 * (on_below_write_buffer_low_watermark), a dispatch pass ended (on_dispatch_done), the access
 * logs are about to be written (on_log_view). Nothing for a stream without a chain or after
 * on_destroy. */
typedef enum {
    WP_FCHAIN_EV_LOCAL_REPLY,
    WP_FCHAIN_EV_BELOW_LOW_WATERMARK,
    WP_FCHAIN_EV_DISPATCH_DONE,
    WP_FCHAIN_EV_LOG_VIEW,
} wp_fchain_event;
void wp_fchain_notify(wp_fchain_state *st, struct wp_stream *s, wp_fchain_event ev);

/* A filter deferred a write until the connection manager's dispatch pass ends: the connection
 * manager asks wp_fchain_dispatch_pending after each pass and then notifies
 * WP_FCHAIN_EV_DISPATCH_DONE (which clears it). */
static inline void wp_fchain_defer_to_dispatch_done(wp_fchain_state *st)
{
    st->dispatch_pending = true;
}
static inline bool wp_fchain_dispatch_pending(const wp_fchain_state *st)
{
    return st->dispatch_pending;
}

/* The terminal filter (the router) of st's chain as a call sees it, for its asynchronous work
 * (upstream callbacks, timers): f->cb is the chain's callbacks. st must have a chain. */
wp_filter wp_fchain_terminal(wp_fchain_state *st, struct wp_stream *s);

/* The terminal filter's per-stream slot (the router's state, filters/http/router_state.h),
 * for its asynchronous work. st must have a chain. */
static inline void *wp_fchain_terminal_slot(const wp_fchain_state *st)
{
    return (char *)st->slots + st->fc->e[st->fc->n - 1].slot_off;
}

/* Whether the terminal filter (the router) got the request headers: decoding reached the end
 * of the chain (false without a chain). */
static inline bool wp_fchain_terminal_decoding(const wp_fchain_state *st)
{
    return st->fc && st->fc->n && st->dec_next >= st->fc->n &&
           st->fc->e[st->fc->n - 1].type->terminal;
}

/* The stream ends: on_stream_complete of every filter; on_log (after the access logs); then
 * on_destroy. Each runs at most once per stream, and only for a started chain. */
void wp_fchain_stream_complete(wp_fchain_state *st, struct wp_stream *s,
                               const wp_filter_callbacks *cb);
void wp_fchain_log(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb);
void wp_fchain_destroy(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb);

/* The header-ops levels filters added for the upstream request / the downstream response:
 * *n levels, the order the filters added them. */
static inline const wp_header_ops *const *wp_fchain_request_ops(const wp_fchain_state *st,
                                                                size_t *n)
{
    *n = st->nreq_ops;
    return st->req_ops;
}
static inline const wp_header_ops *const *wp_fchain_response_ops(const wp_fchain_state *st,
                                                                 size_t *n)
{
    *n = st->nresp_ops;
    return st->resp_ops;
}

/* ---- for filters ---- */

/* Adds a header-ops level (least specific so far) to the upstream request / the downstream
 * response of f's stream. ops must outlive the stream (config snapshot). Ignored past
 * WP_FILTER_MAX_OPS levels. */
void wp_filter_add_request_ops(const wp_filter *f, const wp_header_ops *ops);
void wp_filter_add_response_ops(const wp_filter *f, const wp_header_ops *ops);

/* The stream's filter timer for f: on_timer runs after ms milliseconds unless disarmed (one
 * timer per stream; arming it takes it over). */
void wp_filter_arm_timer(const wp_filter *f, uint64_t ms);
void wp_filter_disarm_timer(const wp_filter *f);

/* The stream's deadline for f: f takes it over from the connection manager's request_timeout
 * (Envoy's router replaces request_timeout with the route timeout once the request is
 * complete) and its on_deadline runs after ms milliseconds; disarm clears the deadline (the
 * request_timeout too) and gives it up. */
void wp_filter_arm_deadline(const wp_filter *f, uint64_t ms);
void wp_filter_disarm_deadline(const wp_filter *f);

#endif
