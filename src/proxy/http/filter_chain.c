/*
 * filter_chain.c - the HTTP filter chain (see filter.h for the Envoy behaviour followed):
 * building a chain at config load and running its filters over one stream.
 */
#include "proxy/http/filter.h"

#include <stdalign.h>
#include <string.h>

int wp_fchain_add(wp_fchain *fc, const wp_http_filter_type *t, const void *config)
{
    if (fc->n >= WP_FCHAIN_MAX_FILTERS || (fc->n && fc->e[fc->n - 1].type->terminal))
        return -1;
    const size_t align = alignof(max_align_t);
    size_t room = (t->slot_size + align - 1) / align * align;
    if (fc->slots_size + room > WP_FCHAIN_SLOTS_MAX)
        return -1;
    wp_fchain_entry *e = &fc->e[fc->n++];
    e->type = t;
    e->config = config;
    e->slot_off = fc->slots_size;
    fc->slots_size += room;
    fc->any_encode = fc->any_encode || t->encode_headers;
    fc->any_data = fc->any_data || t->encode_data || t->encode_trailers;
    return 0;
}

const void *wp_fchain_find(const wp_fchain *fc, const char *name)
{
    for (uint8_t i = 0; fc && i < fc->n; i++)
        if (strcmp(fc->e[i].type->name, name) == 0)
            return fc->e[i].config;
    return NULL;
}

/* Filter i of st's chain as one call sees it. */
static wp_filter filter_at(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb,
                           uint8_t i)
{
    const wp_fchain_entry *e = &st->fc->e[i];
    return (wp_filter){.stream = s,
                       .cb = cb,
                       .config = e->config,
                       .slot = e->type->slot_size ? (char *)st->slots + e->slot_off : NULL,
                       .st = st,
                       .index = i};
}

void wp_fchain_start(wp_fchain_state *st, const wp_fchain *fc, void *slots, struct wp_stream *s,
                     const wp_filter_callbacks *cb)
{
    memset(st, 0, sizeof(*st));
    st->timer_owner = -1;
    st->deadline_owner = -1;
    st->cb = cb;
    st->fc = fc;
    st->slots = slots;
    if (!fc)
        return;
    st->enc_next = fc->n;
    for (uint8_t i = 0; i < fc->n; i++) {
        const wp_http_filter_type *t = fc->e[i].type;
        wp_filter f = filter_at(st, s, cb, i);
        if (t->init)
            t->init(&f);
        else if (t->slot_size)
            memset(f.slot, 0, t->slot_size);
    }
}

/* ---------- decoding (list order) ---------- */

/* Runs the request headers from st->dec_next on. */
static wp_fchain_result decode_headers_from(wp_fchain_state *st, struct wp_stream *s,
                                            const wp_filter_callbacks *cb, wp_filter_headers *h,
                                            bool end_stream)
{
    const wp_fchain *fc = st->fc;
    while (st->dec_next < fc->n) {
        uint8_t i = st->dec_next++;
        const wp_http_filter_type *t = fc->e[i].type;
        if (!t->decode_headers)
            continue;
        wp_filter f = filter_at(st, s, cb, i);
        st->dec_stopped = true; /* set before the call: after a stop nothing is touched */
        if (t->decode_headers(&f, h, end_stream) != WP_FILTER_HEADERS_CONTINUE)
            return WP_FCHAIN_STOPPED;
        st->dec_stopped = false;
        if (st->dec_ended) /* answered, yet it said continue: decoding is over all the same */
            return WP_FCHAIN_STOPPED;
    }
    return WP_FCHAIN_DONE;
}

wp_fchain_result wp_fchain_decode_headers(wp_fchain_state *st, struct wp_stream *s,
                                          const wp_filter_callbacks *cb, wp_filter_headers *h,
                                          bool end_stream)
{
    if (!st->fc)
        return WP_FCHAIN_DONE;
    if (st->dec_started || st->dec_ended)
        return WP_FCHAIN_STOPPED;
    st->dec_started = true;
    return decode_headers_from(st, s, cb, h, end_stream);
}

wp_fchain_result wp_fchain_continue_decoding(wp_fchain_state *st, struct wp_stream *s,
                                             const wp_filter_callbacks *cb, wp_filter_headers *h)
{
    if (!st->fc || !st->dec_stopped || st->dec_ended || st->dec_next >= st->fc->n)
        return WP_FCHAIN_STOPPED;
    st->dec_stopped = false;
    return decode_headers_from(st, s, cb, h, false);
}

/* Whether decode events stop before the end: decoding ended, or the headers have not passed
 * every filter (a stopped terminal filter - the router - has them). */
static bool decode_held(const wp_fchain_state *st)
{
    const wp_fchain *fc = st->fc;
    if (st->dec_ended || !st->dec_started)
        return true;
    return st->dec_next < fc->n || (st->dec_stopped && !fc->e[fc->n - 1].type->terminal);
}

wp_fchain_result wp_fchain_decode_data(wp_fchain_state *st, struct wp_stream *s,
                                       const wp_filter_callbacks *cb, const char *data, size_t len,
                                       bool end_stream)
{
    if (!st->fc)
        return WP_FCHAIN_DONE;
    if (st->dec_ended)
        return WP_FCHAIN_STOPPED;
    bool held = decode_held(st);
    /* the filters the headers reached get the data (the one that stopped them too) */
    for (uint8_t i = 0; i < st->dec_next; i++) {
        const wp_http_filter_type *t = st->fc->e[i].type;
        if (!t->decode_data)
            continue;
        wp_filter f = filter_at(st, s, cb, i);
        if (t->decode_data(&f, data, len, end_stream) != WP_FILTER_DATA_CONTINUE)
            return WP_FCHAIN_STOPPED;
        if (st->dec_ended)
            return WP_FCHAIN_STOPPED;
    }
    return held ? WP_FCHAIN_STOPPED : WP_FCHAIN_DONE;
}

wp_fchain_result wp_fchain_decode_trailers(wp_fchain_state *st, struct wp_stream *s,
                                           const wp_filter_callbacks *cb, const h1_header *t,
                                           size_t n)
{
    if (!st->fc)
        return WP_FCHAIN_DONE;
    if (st->dec_ended)
        return WP_FCHAIN_STOPPED;
    bool held = decode_held(st);
    for (uint8_t i = 0; i < st->dec_next; i++) {
        const wp_http_filter_type *ft = st->fc->e[i].type;
        if (!ft->decode_trailers)
            continue;
        wp_filter f = filter_at(st, s, cb, i);
        if (ft->decode_trailers(&f, t, n) != WP_FILTER_TRAILERS_CONTINUE)
            return WP_FCHAIN_STOPPED;
        if (st->dec_ended)
            return WP_FCHAIN_STOPPED;
    }
    return held ? WP_FCHAIN_STOPPED : WP_FCHAIN_DONE;
}

/* ---------- encoding (reverse order) ---------- */

static wp_fchain_result encode_headers_from(wp_fchain_state *st, struct wp_stream *s,
                                            const wp_filter_callbacks *cb, wp_filter_headers *h,
                                            bool end_stream)
{
    while (st->enc_next > 0) {
        uint8_t i = --st->enc_next;
        const wp_http_filter_type *t = st->fc->e[i].type;
        if (!t->encode_headers)
            continue;
        wp_filter f = filter_at(st, s, cb, i);
        st->enc_stopped = true;
        if (t->encode_headers(&f, h, end_stream) != WP_FILTER_HEADERS_CONTINUE)
            return WP_FCHAIN_STOPPED;
        st->enc_stopped = false;
    }
    return WP_FCHAIN_DONE;
}

wp_fchain_result wp_fchain_encode_headers(wp_fchain_state *st, struct wp_stream *s,
                                          const wp_filter_callbacks *cb, wp_filter_headers *h,
                                          bool end_stream)
{
    if (!st->fc)
        return WP_FCHAIN_DONE;
    st->enc_stopped = false;
    st->enc_next = st->fc->n;
    st->nresp_ops = 0;
    if (!st->fc->any_encode)
        return WP_FCHAIN_DONE;
    return encode_headers_from(st, s, cb, h, end_stream);
}

wp_fchain_result wp_fchain_local_reply(wp_fchain_state *st, struct wp_stream *s,
                                       const wp_filter_callbacks *cb, wp_filter_headers *h,
                                       bool end_stream)
{
    st->dec_ended = true;
    return wp_fchain_encode_headers(st, s, cb, h, end_stream);
}

wp_fchain_result wp_fchain_continue_encoding(wp_fchain_state *st, struct wp_stream *s,
                                             const wp_filter_callbacks *cb, wp_filter_headers *h)
{
    if (!st->fc || !st->enc_stopped)
        return WP_FCHAIN_STOPPED;
    st->enc_stopped = false;
    return encode_headers_from(st, s, cb, h, false);
}

/* What encode_data and encode_trailers return when no encoder runs: no chain (DONE), no
 * filter with encode_data or encode_trailers, or a head a filter stopped (STOPPED). */
static wp_fchain_result encode_skipped(const wp_fchain_state *st)
{
    return st->fc && st->enc_stopped ? WP_FCHAIN_STOPPED : WP_FCHAIN_DONE;
}

wp_fchain_result wp_fchain_encode_data(wp_fchain_state *st, struct wp_stream *s,
                                       const wp_filter_callbacks *cb, const char *data, size_t len,
                                       bool end_stream)
{
    if (!st->fc || !st->fc->any_data || st->enc_stopped)
        return encode_skipped(st);
    for (uint8_t i = st->fc->n; i-- > 0;) {
        const wp_http_filter_type *t = st->fc->e[i].type;
        if (!t->encode_data)
            continue;
        wp_filter f = filter_at(st, s, cb, i);
        if (t->encode_data(&f, data, len, end_stream) != WP_FILTER_DATA_CONTINUE)
            return WP_FCHAIN_STOPPED;
    }
    return WP_FCHAIN_DONE;
}

wp_fchain_result wp_fchain_encode_trailers(wp_fchain_state *st, struct wp_stream *s,
                                           const wp_filter_callbacks *cb, const h1_header *t,
                                           size_t n)
{
    if (!st->fc || !st->fc->any_data || st->enc_stopped)
        return encode_skipped(st);
    for (uint8_t i = st->fc->n; i-- > 0;) {
        const wp_http_filter_type *ft = st->fc->e[i].type;
        if (!ft->encode_trailers)
            continue;
        wp_filter f = filter_at(st, s, cb, i);
        if (ft->encode_trailers(&f, t, n) != WP_FILTER_TRAILERS_CONTINUE)
            return WP_FCHAIN_STOPPED;
    }
    return WP_FCHAIN_DONE;
}

/* ---------- timers and the end of the stream ---------- */

void wp_fchain_on_timer(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb)
{
    if (!wp_fchain_timer_armed(st))
        return;
    uint8_t i = (uint8_t)st->timer_owner;
    st->timer_owner = -1;
    const wp_http_filter_type *t = st->fc->e[i].type;
    if (st->dec_ended && !t->terminal) /* answered meanwhile: decoding is over (the router's
                                        * timers run until the stream ends) */
        return;
    if (t->on_timer) {
        wp_filter f = filter_at(st, s, cb, i);
        t->on_timer(&f);
    }
}

void wp_fchain_on_deadline(wp_fchain_state *st, struct wp_stream *s)
{
    if (!wp_fchain_deadline_armed(st))
        return;
    uint8_t i = (uint8_t)st->deadline_owner;
    st->deadline_owner = -1;
    const wp_http_filter_type *t = st->fc->e[i].type;
    if (t->on_deadline) {
        wp_filter f = filter_at(st, s, st->cb, i);
        t->on_deadline(&f);
    }
}

void wp_fchain_notify(wp_fchain_state *st, struct wp_stream *s, wp_fchain_event ev)
{
    if (ev == WP_FCHAIN_EV_DISPATCH_DONE)
        st->dispatch_pending = false;
    if (!st->fc || st->destroyed)
        return;
    for (uint8_t i = 0; i < st->fc->n; i++) {
        const wp_http_filter_type *t = st->fc->e[i].type;
        void (*fn)(const wp_filter *) = ev == WP_FCHAIN_EV_LOCAL_REPLY ? t->on_local_reply
                                        : ev == WP_FCHAIN_EV_BELOW_LOW_WATERMARK
                                            ? t->on_below_write_buffer_low_watermark
                                        : ev == WP_FCHAIN_EV_DISPATCH_DONE ? t->on_dispatch_done
                                                                           : t->on_log_view;
        if (fn) {
            wp_filter f = filter_at(st, s, st->cb, i);
            fn(&f);
        }
    }
}

wp_filter wp_fchain_terminal(wp_fchain_state *st, struct wp_stream *s)
{
    return filter_at(st, s, st->cb, (uint8_t)(st->fc->n - 1));
}

enum { HOOK_COMPLETE, HOOK_LOG, HOOK_DESTROY };

/* Calls one end-of-stream hook of every filter, in list order. */
static void each(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb, int hook)
{
    for (uint8_t i = 0; i < st->fc->n; i++) {
        const wp_http_filter_type *t = st->fc->e[i].type;
        void (*fn)(const wp_filter *) = hook == HOOK_COMPLETE ? t->on_stream_complete
                                        : hook == HOOK_LOG    ? t->on_log
                                                              : t->on_destroy;
        if (fn) {
            wp_filter f = filter_at(st, s, cb, i);
            fn(&f);
        }
    }
}

void wp_fchain_stream_complete(wp_fchain_state *st, struct wp_stream *s,
                               const wp_filter_callbacks *cb)
{
    if (!st->fc || st->completed)
        return;
    st->completed = true;
    each(st, s, cb, HOOK_COMPLETE);
}

void wp_fchain_log(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb)
{
    if (!st->fc || st->logged)
        return;
    st->logged = true;
    each(st, s, cb, HOOK_LOG);
}

void wp_fchain_destroy(wp_fchain_state *st, struct wp_stream *s, const wp_filter_callbacks *cb)
{
    if (!st->fc || st->destroyed)
        return;
    st->destroyed = true;
    st->dec_ended = true;
    each(st, s, cb, HOOK_DESTROY);
    st->timer_owner = -1;
    st->deadline_owner = -1;
}

/* ---------- for filters ---------- */

void wp_filter_add_request_ops(const wp_filter *f, const wp_header_ops *ops)
{
    wp_fchain_state *st = f->st;
    if (ops && st->nreq_ops < WP_FILTER_MAX_OPS)
        st->req_ops[st->nreq_ops++] = ops;
}

void wp_filter_add_response_ops(const wp_filter *f, const wp_header_ops *ops)
{
    wp_fchain_state *st = f->st;
    if (ops && st->nresp_ops < WP_FILTER_MAX_OPS)
        st->resp_ops[st->nresp_ops++] = ops;
}

void wp_filter_arm_timer(const wp_filter *f, uint64_t ms)
{
    f->st->timer_owner = (int8_t)f->index;
    f->cb->arm_timer(f->stream, ms);
}

void wp_filter_disarm_timer(const wp_filter *f)
{
    if (f->st->timer_owner != (int8_t)f->index)
        return;
    f->st->timer_owner = -1;
    f->cb->disarm_timer(f->stream);
}

void wp_filter_arm_deadline(const wp_filter *f, uint64_t ms)
{
    f->st->deadline_owner = (int8_t)f->index;
    f->cb->arm_deadline(f->stream, ms);
}

void wp_filter_disarm_deadline(const wp_filter *f)
{
    f->st->deadline_owner = -1;
    f->cb->disarm_deadline(f->stream);
}
