/*
 * test_filter_chain.c - the HTTP filter chain (proxy/http/filter.h, http/filter_chain.c) with
 * fake filters: decode in list order and encode in reverse, StopIteration and
 * continue_decoding, local replies from a decoder filter, per-filter slots, the end-of-stream
 * hooks, the filter timer, the deadline the terminal filter takes over and the stream events
 * (wp_fchain_notify), the dispatch-done request, the terminal filter's slot and whether it has
 * the request, the router's state in its slot (set up per stream), and header operations; the
 * registry by Envoy name
 * (filters/http/filters.h) and the chain the bootstrap loader builds from http_filters.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#include "proxy/config/config.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/filters/http/router_state.h"
#include "proxy/http/filter.h"

/* ---------- a fake connection manager ---------- */

/* The test's stream: what the chain's callbacks act on. */
struct wp_stream {
    wp_fchain_state st;
    alignas(max_align_t) unsigned char slots[WP_FCHAIN_SLOTS_MAX];
    wp_stream_info si;
    char log[512]; /* "A.dh B.dh ..." */
    int local_replies, local_status;
    int timer_armed; /* 1 armed, 0 not; arm/disarm counts below */
    int arms, disarms;
    int deadline_armed; /* the stream's deadline (arm_deadline / disarm_deadline) */
    uint64_t deadline_ms;
    int deadline_disarms;
};

static void note(struct wp_stream *s, char who, const char *what)
{
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof s->log - n, "%s%c.%s", n ? " " : "", who, what);
}

static const wp_filter_callbacks fake_cbs;

/* The connection manager's sendLocalReply: the reply's head through the encoders. */
static void fake_local_reply(struct wp_stream *s, int status, const char *body, const char *details,
                             int flag)
{
    (void)body;
    (void)details;
    (void)flag;
    s->local_replies++;
    s->local_status = status;
    wp_filter_headers h = {NULL, 0, status};
    wp_fchain_local_reply(&s->st, s, &fake_cbs, &h, true);
}

static void fake_continue_decoding(struct wp_stream *s)
{
    wp_filter_headers h = {NULL, 0, 0};
    wp_fchain_continue_decoding(&s->st, s, &fake_cbs, &h);
}

static void fake_continue_encoding(struct wp_stream *s)
{
    wp_filter_headers h = {NULL, 0, 200};
    wp_fchain_continue_encoding(&s->st, s, &fake_cbs, &h);
}

static wp_stream_info *fake_stream_info(struct wp_stream *s)
{
    return &s->si;
}

static void fake_arm(struct wp_stream *s, uint64_t ms)
{
    (void)ms;
    s->timer_armed = 1;
    s->arms++;
}

static void fake_disarm(struct wp_stream *s)
{
    s->timer_armed = 0;
    s->disarms++;
}

static void fake_arm_deadline(struct wp_stream *s, uint64_t ms)
{
    s->deadline_armed = 1;
    s->deadline_ms = ms;
}

static void fake_disarm_deadline(struct wp_stream *s)
{
    s->deadline_armed = 0;
    s->deadline_disarms++;
}

static const wp_filter_callbacks fake_cbs = {
    .send_local_reply = fake_local_reply,
    .continue_decoding = fake_continue_decoding,
    .continue_encoding = fake_continue_encoding,
    .stream_info = fake_stream_info,
    .arm_timer = fake_arm,
    .disarm_timer = fake_disarm,
    .arm_deadline = fake_arm_deadline,
    .disarm_deadline = fake_disarm_deadline,
};

/* ---------- fake filters ---------- */

/* A fake filter's config: its letter and what it does. */
typedef struct {
    char name;
    wp_filter_headers_status dh, eh; /* what decode_headers / encode_headers return */
    wp_filter_data_status dd;        /* what decode_data returns */
    bool reply_in_dh;                /* decode_headers sends a local reply (then returns dh) */
    bool arm_in_dh;                  /* decode_headers arms the filter timer */
    const wp_header_ops *req_ops, *resp_ops;
} fake_cfg;

/* Its per-stream state. */
typedef struct {
    uint32_t magic; /* written by decode_headers: the filter's letter repeated */
    int inits, decodes, datas, encodes, timers, completes, logs, destroys;
    const void *seen_slot;
} fake_slot;

static const fake_cfg *cfg_of(const wp_filter *f)
{
    return f->config;
}

static void fake_init(const wp_filter *f)
{
    fake_slot *sl = f->slot;
    int inits = sl->inits; /* survives: counts the streams this memory served */
    memset(sl, 0, sizeof *sl);
    sl->inits = inits + 1;
}

static wp_filter_headers_status fake_dh(const wp_filter *f, wp_filter_headers *h, bool end)
{
    (void)h;
    (void)end;
    fake_slot *sl = f->slot;
    const fake_cfg *c = cfg_of(f);
    note(f->stream, c->name, "dh");
    sl->decodes++;
    sl->magic = 0x01010101u * (uint8_t)c->name;
    sl->seen_slot = f->slot;
    if (c->req_ops)
        wp_filter_add_request_ops(f, c->req_ops);
    if (c->arm_in_dh)
        wp_filter_arm_timer(f, 25);
    if (c->reply_in_dh)
        f->cb->send_local_reply(f->stream, 503, "", "fake", -1);
    return c->dh;
}

static wp_filter_data_status fake_dd(const wp_filter *f, const char *data, size_t len, bool end)
{
    (void)data;
    (void)len;
    fake_slot *sl = f->slot;
    note(f->stream, cfg_of(f)->name, end ? "dd!" : "dd");
    sl->datas++;
    return cfg_of(f)->dd;
}

static wp_filter_trailers_status fake_dt(const wp_filter *f, const h1_header *t, size_t n)
{
    (void)t;
    (void)n;
    note(f->stream, cfg_of(f)->name, "dt");
    return WP_FILTER_TRAILERS_CONTINUE;
}

static wp_filter_headers_status fake_eh(const wp_filter *f, wp_filter_headers *h, bool end)
{
    (void)end;
    fake_slot *sl = f->slot;
    const fake_cfg *c = cfg_of(f);
    note(f->stream, c->name, h->status == 503 ? "eh503" : "eh");
    sl->encodes++;
    if (c->resp_ops)
        wp_filter_add_response_ops(f, c->resp_ops);
    return c->eh;
}

static wp_filter_data_status fake_ed(const wp_filter *f, const char *data, size_t len, bool end)
{
    (void)data;
    (void)len;
    note(f->stream, cfg_of(f)->name, end ? "ed!" : "ed");
    return WP_FILTER_DATA_CONTINUE;
}

static void fake_timer(const wp_filter *f)
{
    fake_slot *sl = f->slot;
    note(f->stream, cfg_of(f)->name, "timer");
    sl->timers++;
    f->cb->continue_decoding(f->stream);
}

static void fake_complete(const wp_filter *f)
{
    note(f->stream, cfg_of(f)->name, "complete");
    ((fake_slot *)f->slot)->completes++;
}

static void fake_log(const wp_filter *f)
{
    note(f->stream, cfg_of(f)->name, "log");
    ((fake_slot *)f->slot)->logs++;
}

static void fake_destroy(const wp_filter *f)
{
    note(f->stream, cfg_of(f)->name, "destroy");
    ((fake_slot *)f->slot)->destroys++;
}

static const wp_http_filter_type fake_type = {
    .name = "test.fake",
    .slot_size = sizeof(fake_slot),
    .init = fake_init,
    .decode_headers = fake_dh,
    .decode_data = fake_dd,
    .decode_trailers = fake_dt,
    .encode_headers = fake_eh,
    .encode_data = fake_ed,
    .on_timer = fake_timer,
    .on_stream_complete = fake_complete,
    .on_log = fake_log,
    .on_destroy = fake_destroy,
};

/* A filter with a slot and no callbacks but init: the chain zeroes nothing for it. */
typedef struct {
    uint64_t words[3];
} plain_slot;

static const wp_http_filter_type plain_type = {.name = "test.plain",
                                               .slot_size = sizeof(plain_slot)};

/* A terminal filter (like the router): stops headers, takes the data. */
static wp_filter_headers_status term_dh(const wp_filter *f, wp_filter_headers *h, bool end)
{
    (void)h;
    (void)end;
    note(f->stream, 'R', "dh");
    return WP_FILTER_HEADERS_STOP_ITERATION;
}

static wp_filter_data_status term_dd(const wp_filter *f, const char *data, size_t len, bool end)
{
    (void)data;
    (void)len;
    note(f->stream, 'R', end ? "dd!" : "dd");
    return WP_FILTER_DATA_CONTINUE;
}

static const wp_http_filter_type term_type = {
    .name = "test.router", .terminal = true, .decode_headers = term_dh, .decode_data = term_dd};

/* A terminal filter with the router's asynchronous hooks: each notes itself. */
static void ev_timer(const wp_filter *f)
{
    note(f->stream, 'R', "timer");
}
static void ev_deadline(const wp_filter *f)
{
    note(f->stream, 'R', "deadline");
}
static void ev_local_reply(const wp_filter *f)
{
    note(f->stream, 'R', "local_reply");
}
static void ev_writable(const wp_filter *f)
{
    note(f->stream, 'R', "writable");
}
static void ev_dispatch_done(const wp_filter *f)
{
    note(f->stream, 'R', "dispatch_done");
}
static void ev_log_view(const wp_filter *f)
{
    note(f->stream, 'R', "log_view");
}
/* A decoder filter that only sees local replies. */
static void ev_a_local_reply(const wp_filter *f)
{
    note(f->stream, 'A', "local_reply");
}

static const wp_http_filter_type async_term_type = {
    .name = "test.async_router",
    .terminal = true,
    .decode_headers = term_dh,
    .on_timer = ev_timer,
    .on_deadline = ev_deadline,
    .on_local_reply = ev_local_reply,
    .on_below_write_buffer_low_watermark = ev_writable,
    .on_dispatch_done = ev_dispatch_done,
    .on_log_view = ev_log_view,
};

static const wp_http_filter_type lr_type = {.name = "test.lr", .on_local_reply = ev_a_local_reply};

static fake_cfg cont(char name)
{
    return (fake_cfg){.name = name,
                      .dh = WP_FILTER_HEADERS_CONTINUE,
                      .eh = WP_FILTER_HEADERS_CONTINUE,
                      .dd = WP_FILTER_DATA_CONTINUE};
}

static fake_slot *slot_of(struct wp_stream *s, uint8_t i)
{
    return (fake_slot *)(s->slots + s->st.fc->e[i].slot_off);
}

static struct wp_stream *new_stream(const wp_fchain *fc)
{
    struct wp_stream *s = calloc(1, sizeof *s);
    assert_non_null(s);
    wp_fchain_start(&s->st, fc, s->slots, s, &fake_cbs);
    return s;
}

/* Starts the next stream on the same memory (a reused stream). */
static void restart(struct wp_stream *s, const wp_fchain *fc)
{
    s->log[0] = 0;
    wp_fchain_start(&s->st, fc, s->slots, s, &fake_cbs);
}

static wp_fchain_result dh(struct wp_stream *s, bool end)
{
    wp_filter_headers h = {NULL, 0, 0};
    return wp_fchain_decode_headers(&s->st, s, &fake_cbs, &h, end);
}

static wp_fchain_result eh(struct wp_stream *s, int status)
{
    wp_filter_headers h = {NULL, 0, status};
    return wp_fchain_encode_headers(&s->st, s, &fake_cbs, &h, false);
}

/* ---------- tests ---------- */

static void test_order(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B'), c = cont('C');
    wp_fchain fc = {0};
    assert_int_equal(wp_fchain_add(&fc, &fake_type, &a), 0);
    assert_int_equal(wp_fchain_add(&fc, &fake_type, &b), 0);
    assert_int_equal(wp_fchain_add(&fc, &fake_type, &c), 0);
    struct wp_stream *s = new_stream(&fc);
    assert_int_equal(dh(s, false), WP_FCHAIN_DONE);
    assert_int_equal(wp_fchain_decode_data(&s->st, s, &fake_cbs, "x", 1, false), WP_FCHAIN_DONE);
    assert_int_equal(wp_fchain_decode_trailers(&s->st, s, &fake_cbs, NULL, 0), WP_FCHAIN_DONE);
    assert_int_equal(wp_fchain_decode_data(&s->st, s, &fake_cbs, NULL, 0, true), WP_FCHAIN_DONE);
    assert_string_equal(s->log, "A.dh B.dh C.dh A.dd B.dd C.dd A.dt B.dt C.dt A.dd! B.dd! C.dd!");
    s->log[0] = 0;
    assert_int_equal(eh(s, 200), WP_FCHAIN_DONE);
    assert_int_equal(wp_fchain_encode_data(&s->st, s, &fake_cbs, "y", 1, false), WP_FCHAIN_DONE);
    assert_int_equal(wp_fchain_encode_data(&s->st, s, &fake_cbs, NULL, 0, true), WP_FCHAIN_DONE);
    assert_string_equal(s->log, "C.eh B.eh A.eh C.ed B.ed A.ed C.ed! B.ed! A.ed!");
    /* request headers go through once */
    assert_int_equal(dh(s, false), WP_FCHAIN_STOPPED);
    free(s);
}

static void test_stop_then_continue(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B'), c = cont('C');
    b.dh = WP_FILTER_HEADERS_STOP_ITERATION;
    b.dd = WP_FILTER_DATA_STOP_ITERATION_AND_BUFFER;
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &fake_type, &b);
    wp_fchain_add(&fc, &fake_type, &c);
    struct wp_stream *s = new_stream(&fc);
    assert_int_equal(dh(s, false), WP_FCHAIN_STOPPED);
    assert_string_equal(s->log, "A.dh B.dh");
    /* data reaches the filters the headers reached and stops at the one that holds it */
    assert_int_equal(wp_fchain_decode_data(&s->st, s, &fake_cbs, "x", 1, false), WP_FCHAIN_STOPPED);
    assert_string_equal(s->log, "A.dh B.dh A.dd B.dd");
    assert_int_equal(slot_of(s, 2)->decodes, 0);
    /* continue_decoding resumes at the next filter: A and B are not called again */
    s->log[0] = 0;
    fake_continue_decoding(s);
    assert_string_equal(s->log, "C.dh");
    assert_int_equal(slot_of(s, 0)->decodes, 1);
    assert_int_equal(slot_of(s, 1)->decodes, 1);
    assert_int_equal(slot_of(s, 2)->decodes, 1);
    /* a second continue does nothing */
    s->log[0] = 0;
    fake_continue_decoding(s);
    assert_string_equal(s->log, "");
    /* StopAllIterationAndBuffer holds the later filters the same way */
    fake_cfg x = cont('X'), y = cont('Y');
    x.dh = WP_FILTER_HEADERS_STOP_ALL_ITERATION_AND_BUFFER;
    wp_fchain fc2 = {0};
    wp_fchain_add(&fc2, &fake_type, &x);
    wp_fchain_add(&fc2, &fake_type, &y);
    restart(s, &fc2);
    assert_int_equal(dh(s, true), WP_FCHAIN_STOPPED);
    fake_continue_decoding(s);
    assert_string_equal(s->log, "X.dh Y.dh");
    free(s);
}

/* A stopped terminal filter (the router) is the end of decoding: data passes. */
static void test_terminal(void **state)
{
    (void)state;
    fake_cfg a = cont('A');
    wp_fchain fc = {0};
    assert_int_equal(wp_fchain_add(&fc, &fake_type, &a), 0);
    assert_int_equal(wp_fchain_add(&fc, &term_type, NULL), 0);
    fake_cfg late = cont('Z');
    assert_int_equal(wp_fchain_add(&fc, &fake_type, &late), -1); /* nothing after a terminal */
    assert_int_equal(fc.n, 2);
    struct wp_stream *s = new_stream(&fc);
    assert_int_equal(dh(s, false), WP_FCHAIN_STOPPED);
    assert_int_equal(wp_fchain_decode_data(&s->st, s, &fake_cbs, "x", 1, true), WP_FCHAIN_DONE);
    assert_string_equal(s->log, "A.dh R.dh A.dd! R.dd!");
    free(s);
}

static void test_local_reply(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B');
    a.reply_in_dh = true;
    a.dh = WP_FILTER_HEADERS_STOP_ITERATION; /* Envoy's contract after sendLocalReply */
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &fake_type, &b);
    struct wp_stream *s = new_stream(&fc);
    assert_int_equal(dh(s, false), WP_FCHAIN_STOPPED);
    /* the reply went through every encoder filter, in reverse order; B never decoded */
    assert_string_equal(s->log, "A.dh B.eh503 A.eh503");
    assert_int_equal(s->local_replies, 1);
    assert_int_equal(slot_of(s, 1)->decodes, 0);
    /* decoding is over: no continue, no data */
    s->log[0] = 0;
    fake_continue_decoding(s);
    assert_int_equal(wp_fchain_decode_data(&s->st, s, &fake_cbs, "x", 1, true), WP_FCHAIN_STOPPED);
    assert_string_equal(s->log, "");

    /* a filter that answers yet says Continue still ends decoding */
    a.dh = WP_FILTER_HEADERS_CONTINUE;
    restart(s, &fc);
    assert_int_equal(dh(s, false), WP_FCHAIN_STOPPED);
    assert_string_equal(s->log, "A.dh B.eh503 A.eh503");
    assert_int_equal(slot_of(s, 1)->decodes, 0);
    free(s);
}

static void test_slots(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B');
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &plain_type, NULL);
    wp_fchain_add(&fc, &fake_type, &b);
    assert_int_equal(fc.n, 3);
    /* separate, aligned, in order, inside the block */
    for (uint8_t i = 0; i < fc.n; i++) {
        assert_int_equal(fc.e[i].slot_off % alignof(max_align_t), 0);
        if (i)
            assert_true(fc.e[i].slot_off >= fc.e[i - 1].slot_off + fc.e[i - 1].type->slot_size);
    }
    assert_true(fc.slots_size <= WP_FCHAIN_SLOTS_MAX);
    struct wp_stream *s = new_stream(&fc);
    plain_slot *p = (plain_slot *)(s->slots + fc.e[1].slot_off);
    p->words[0] = p->words[1] = p->words[2] = ~0ull;
    dh(s, true);
    assert_int_equal(slot_of(s, 0)->magic, 0x41414141u);
    assert_int_equal(slot_of(s, 2)->magic, 0x42424242u);
    assert_ptr_equal(slot_of(s, 0)->seen_slot, slot_of(s, 0));
    assert_ptr_equal(slot_of(s, 2)->seen_slot, slot_of(s, 2));
    assert_int_equal(p->words[0], ~0ull); /* the other filters did not write it */
    /* the next stream on the same memory: init ran again, the plain slot is zeroed */
    restart(s, &fc);
    assert_int_equal(slot_of(s, 0)->inits, 2);
    assert_int_equal(slot_of(s, 0)->decodes, 0);
    assert_int_equal(slot_of(s, 0)->magic, 0);
    assert_int_equal(slot_of(s, 2)->magic, 0);
    assert_int_equal(p->words[0] | p->words[1] | p->words[2], 0);
    /* the slot budget is enforced */
    static const wp_http_filter_type big = {.name = "test.big", .slot_size = WP_FCHAIN_SLOTS_MAX};
    assert_int_equal(wp_fchain_add(&fc, &big, NULL), -1);
    wp_fchain full = {0};
    fake_cfg many = cont('M');
    for (int i = 0; i < WP_FCHAIN_MAX_FILTERS; i++)
        assert_int_equal(wp_fchain_add(&full, &wp_http_filter_cors, &many), 0);
    assert_int_equal(wp_fchain_add(&full, &wp_http_filter_cors, &many), -1);
    free(s);
}

static void test_end_hooks(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B');
    b.dh = WP_FILTER_HEADERS_STOP_ITERATION;
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &fake_type, &b);
    struct wp_stream *s = new_stream(&fc);
    dh(s, true);
    s->log[0] = 0;
    for (int i = 0; i < 2; i++) { /* twice: each hook once */
        wp_fchain_stream_complete(&s->st, s, &fake_cbs);
        wp_fchain_log(&s->st, s, &fake_cbs);
        wp_fchain_destroy(&s->st, s, &fake_cbs);
    }
    assert_string_equal(s->log, "A.complete B.complete A.log B.log A.destroy B.destroy");
    for (uint8_t i = 0; i < 2; i++) {
        assert_int_equal(slot_of(s, i)->completes, 1);
        assert_int_equal(slot_of(s, i)->logs, 1);
        assert_int_equal(slot_of(s, i)->destroys, 1);
    }
    /* a destroyed chain takes no continue */
    s->log[0] = 0;
    fake_continue_decoding(s);
    assert_string_equal(s->log, "");
    /* a stream whose headers never came (a codec error) still ends every filter once */
    restart(s, &fc);
    wp_fchain_stream_complete(&s->st, s, &fake_cbs);
    wp_fchain_log(&s->st, s, &fake_cbs);
    wp_fchain_destroy(&s->st, s, &fake_cbs);
    wp_fchain_destroy(&s->st, s, &fake_cbs);
    assert_int_equal(slot_of(s, 0)->destroys, 1);
    assert_int_equal(slot_of(s, 1)->destroys, 1);
    free(s);
}

static void test_timer(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B'), c = cont('C');
    b.arm_in_dh = true;
    b.dh = WP_FILTER_HEADERS_STOP_ITERATION;
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &fake_type, &b);
    wp_fchain_add(&fc, &fake_type, &c);
    struct wp_stream *s = new_stream(&fc);
    assert_false(wp_fchain_timer_armed(&s->st));
    dh(s, false);
    assert_true(wp_fchain_timer_armed(&s->st));
    assert_int_equal(s->arms, 1);
    /* it fires for its owner, which continues decoding */
    wp_fchain_on_timer(&s->st, s, &fake_cbs);
    assert_string_equal(s->log, "A.dh B.dh B.timer C.dh");
    assert_false(wp_fchain_timer_armed(&s->st));
    assert_int_equal(slot_of(s, 1)->timers, 1);

    /* answered while it runs: the timer is dropped */
    restart(s, &fc);
    dh(s, false);
    fake_local_reply(s, 408, "", "t", -1);
    s->log[0] = 0;
    wp_fchain_on_timer(&s->st, s, &fake_cbs);
    assert_string_equal(s->log, "");
    assert_int_equal(slot_of(s, 1)->timers, 0);
    free(s);
}

/* The terminal filter's view (wp_fchain_terminal), the deadline it takes over from the
 * connection manager (arm/disarm, on_deadline once), its timer after a local reply, and the
 * stream events (wp_fchain_notify) in list order to the filters that have them. */
static void test_terminal_async(void **state)
{
    (void)state;
    wp_fchain fc = {0};
    assert_int_equal(wp_fchain_add(&fc, &lr_type, NULL), 0);
    assert_int_equal(wp_fchain_add(&fc, &async_term_type, NULL), 0);
    struct wp_stream *s = new_stream(&fc);
    wp_filter f = wp_fchain_terminal(&s->st, s);
    assert_int_equal(f.index, 1);
    assert_ptr_equal(f.cb, &fake_cbs);
    assert_ptr_equal(f.stream, s);

    /* the deadline: not armed until the terminal filter takes it over */
    assert_false(wp_fchain_deadline_armed(&s->st));
    wp_fchain_on_deadline(&s->st, s);
    assert_string_equal(s->log, "");
    wp_filter_arm_deadline(&f, 1500);
    assert_true(wp_fchain_deadline_armed(&s->st));
    assert_int_equal(s->deadline_armed, 1);
    assert_int_equal(s->deadline_ms, 1500);
    wp_fchain_on_deadline(&s->st, s);
    assert_string_equal(s->log, "R.deadline");
    assert_false(wp_fchain_deadline_armed(&s->st));
    wp_fchain_on_deadline(&s->st, s); /* once */
    assert_string_equal(s->log, "R.deadline");
    /* disarm clears the connection manager's deadline and gives it up */
    wp_filter_arm_deadline(&f, 10);
    wp_filter_disarm_deadline(&f);
    assert_false(wp_fchain_deadline_armed(&s->st));
    assert_int_equal(s->deadline_armed, 0);
    assert_int_equal(s->deadline_disarms, 1);
    wp_filter_disarm_deadline(&f); /* request_timeout too, owned or not */
    assert_int_equal(s->deadline_disarms, 2);

    /* the events, in list order, to the filters with the hook */
    s->log[0] = 0;
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_LOCAL_REPLY);
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_BELOW_LOW_WATERMARK);
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_DISPATCH_DONE);
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_LOG_VIEW);
    assert_string_equal(s->log,
                        "A.local_reply R.local_reply R.writable R.dispatch_done R.log_view");

    /* the terminal filter's timer still fires after a local reply (a non-terminal filter's
     * does not: test_timer) */
    s->log[0] = 0;
    dh(s, false);
    wp_filter_arm_timer(&f, 5);
    fake_local_reply(s, 504, "", "t", -1);
    s->log[0] = 0;
    wp_fchain_on_timer(&s->st, s, &fake_cbs);
    assert_string_equal(s->log, "R.timer");

    /* after on_destroy: no event, and the deadline is given up */
    wp_filter_arm_deadline(&f, 10);
    wp_fchain_destroy(&s->st, s, &fake_cbs);
    assert_false(wp_fchain_deadline_armed(&s->st));
    s->log[0] = 0;
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_LOCAL_REPLY);
    assert_string_equal(s->log, "");
    free(s);

    /* no chain: nothing happens */
    struct wp_stream *n = new_stream(NULL);
    wp_fchain_notify(&n->st, n, WP_FCHAIN_EV_DISPATCH_DONE);
    assert_false(wp_fchain_deadline_armed(&n->st));
    assert_string_equal(n->log, "");
    free(n);
}

/* The terminal filter's slot and whether it got the request headers (the connection manager's
 * "the router has the request", which the route's response header ops and the attempt count
 * of a local reply depend on). */
static void test_terminal_slot_and_decoding(void **state)
{
    (void)state;
    fake_cfg a = cont('A');
    a.dh = WP_FILTER_HEADERS_STOP_ITERATION; /* holds the terminal filter (a fault delay) */
    wp_fchain fc = {0};
    assert_int_equal(wp_fchain_add(&fc, &fake_type, &a), 0);
    assert_int_equal(wp_fchain_add(&fc, &wp_http_filter_router, NULL), 0);
    assert_int_equal(fc.e[1].type->slot_size, sizeof(wp_router_state));
    struct wp_stream *s = new_stream(&fc);
    assert_ptr_equal(wp_fchain_terminal_slot(&s->st), s->slots + fc.e[1].slot_off);
    wp_filter f = wp_fchain_terminal(&s->st, s);
    assert_ptr_equal(wp_fchain_terminal_slot(&s->st), f.slot);
    assert_false(wp_fchain_terminal_decoding(&s->st)); /* nothing decoded yet */
    assert_int_equal(dh(s, false), WP_FCHAIN_STOPPED);
    assert_false(wp_fchain_terminal_decoding(&s->st)); /* A stopped before the router */
    free(s);

    /* a filter that answers before the terminal filter: it never has the request */
    fake_cfg r = cont('A');
    r.reply_in_dh = true;
    r.dh = WP_FILTER_HEADERS_STOP_ITERATION;
    wp_fchain fr = {0};
    wp_fchain_add(&fr, &fake_type, &r);
    wp_fchain_add(&fr, &term_type, NULL);
    s = new_stream(&fr);
    dh(s, false);
    assert_int_equal(s->local_replies, 1);
    assert_false(wp_fchain_terminal_decoding(&s->st));
    /* the next stream on the same memory: the terminal filter gets the headers */
    restart(s, &fr);
    assert_false(wp_fchain_terminal_decoding(&s->st));
    fake_cfg c = cont('A');
    fr.e[0].config = &c;
    restart(s, &fr);
    dh(s, false);
    assert_string_equal(s->log, "A.dh R.dh");
    assert_true(wp_fchain_terminal_decoding(&s->st));
    free(s);

    /* a chain whose last filter is not terminal, and no chain: never */
    wp_fchain fp = {0};
    wp_fchain_add(&fp, &fake_type, &c);
    s = new_stream(&fp);
    assert_int_equal(dh(s, false), WP_FCHAIN_DONE);
    assert_false(wp_fchain_terminal_decoding(&s->st));
    free(s);
    s = new_stream(NULL);
    assert_false(wp_fchain_terminal_decoding(&s->st));
    free(s);
}

/* A filter that defers a write to the end of the connection manager's dispatch pass: pending
 * until WP_FCHAIN_EV_DISPATCH_DONE, which clears it; a new stream starts without it. */
static void test_dispatch_pending(void **state)
{
    (void)state;
    wp_fchain fc = {0};
    assert_int_equal(wp_fchain_add(&fc, &async_term_type, NULL), 0);
    struct wp_stream *s = new_stream(&fc);
    assert_false(wp_fchain_dispatch_pending(&s->st));
    wp_fchain_defer_to_dispatch_done(&s->st);
    assert_true(wp_fchain_dispatch_pending(&s->st));
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_LOG_VIEW); /* another event leaves it */
    assert_true(wp_fchain_dispatch_pending(&s->st));
    s->log[0] = 0;
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_DISPATCH_DONE);
    assert_string_equal(s->log, "R.dispatch_done");
    assert_false(wp_fchain_dispatch_pending(&s->st));
    wp_fchain_defer_to_dispatch_done(&s->st);
    restart(s, &fc);
    assert_false(wp_fchain_dispatch_pending(&s->st));
    /* after on_destroy no hook runs, and the request is gone all the same */
    wp_fchain_defer_to_dispatch_done(&s->st);
    wp_fchain_destroy(&s->st, s, &fake_cbs);
    s->log[0] = 0;
    wp_fchain_notify(&s->st, s, WP_FCHAIN_EV_DISPATCH_DONE);
    assert_string_equal(s->log, "");
    assert_false(wp_fchain_dispatch_pending(&s->st));
    free(s);
}

/* The router's per-stream state lives in its slot: its init sets up every per-request field
 * (no attempt, no retry state, no host) on a slot block another stream left dirty, and leaves
 * the buffers that are written before they are read. */
static void test_router_state_slot(void **state)
{
    (void)state;
    fake_cfg a = cont('A');
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    assert_int_equal(wp_fchain_add(&fc, &wp_http_filter_router, NULL), 0);
    struct wp_stream *s = calloc(1, sizeof *s);
    assert_non_null(s);
    memset(s->slots, 0xa5, sizeof(s->slots)); /* what the last stream on this memory left */
    wp_fchain_start(&s->st, &fc, s->slots, s, &fake_cbs);
    const wp_router_state *rs = wp_fchain_terminal_slot(&s->st);
    assert_int_equal(rs->host, -1);
    assert_null(rs->up);
    assert_null(rs->body);
    assert_null(rs->rp);
    assert_null(rs->rb_head);
    assert_int_equal(rs->rb_len, 0);
    assert_false(rs->routing);
    assert_false(rs->counted_cb);
    assert_false(rs->backoff_pending);
    assert_int_equal(rs->shadow_mask, 0);
    assert_int_equal(rs->ntried, 0);
    assert_int_equal(rs->timeout_ms, 0);
    assert_false(rs->timeout_alt_204);
    static const unsigned char zero[WP_ROUTER_STATE_RESET_BYTES];
    assert_memory_equal(rs, zero, offsetof(wp_router_state, host));
    assert_int_equal((unsigned char)rs->up_local[0], 0xa5); /* written before it is read */
    free(s);
}

static void test_header_ops(void **state)
{
    (void)state;
    static const wp_header_ops r1 = {0}, r2 = {0}, p1 = {0}, p2 = {0};
    fake_cfg a = cont('A'), b = cont('B');
    a.req_ops = &r1;
    b.req_ops = &r2;
    a.resp_ops = &p1;
    b.resp_ops = &p2;
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &fake_type, &b);
    struct wp_stream *s = new_stream(&fc);
    size_t n;
    wp_fchain_request_ops(&s->st, &n);
    assert_int_equal(n, 0);
    dh(s, true);
    const wp_header_ops *const *ops = wp_fchain_request_ops(&s->st, &n);
    assert_int_equal(n, 2);
    assert_ptr_equal(ops[0], &r1);
    assert_ptr_equal(ops[1], &r2);
    eh(s, 200);
    ops = wp_fchain_response_ops(&s->st, &n);
    assert_int_equal(n, 2);
    assert_ptr_equal(ops[0], &p2); /* encoders run in reverse */
    assert_ptr_equal(ops[1], &p1);
    eh(s, 200); /* a new head starts over */
    wp_fchain_response_ops(&s->st, &n);
    assert_int_equal(n, 2);
    free(s);
}

static void test_encode_stop(void **state)
{
    (void)state;
    fake_cfg a = cont('A'), b = cont('B');
    b.eh = WP_FILTER_HEADERS_STOP_ITERATION;
    wp_fchain fc = {0};
    wp_fchain_add(&fc, &fake_type, &a);
    wp_fchain_add(&fc, &fake_type, &b);
    struct wp_stream *s = new_stream(&fc);
    dh(s, true);
    s->log[0] = 0;
    assert_int_equal(eh(s, 200), WP_FCHAIN_STOPPED);
    assert_int_equal(wp_fchain_encode_data(&s->st, s, &fake_cbs, "x", 1, false), WP_FCHAIN_STOPPED);
    assert_string_equal(s->log, "B.eh");
    wp_filter_headers h = {NULL, 0, 200};
    assert_int_equal(wp_fchain_continue_encoding(&s->st, s, &fake_cbs, &h), WP_FCHAIN_DONE);
    assert_string_equal(s->log, "B.eh A.eh");
    assert_int_equal(wp_fchain_encode_data(&s->st, s, &fake_cbs, "x", 1, false), WP_FCHAIN_DONE);
    free(s);
}

/* No chain (a stream before any config): every event passes. */
static void test_no_chain(void **state)
{
    (void)state;
    struct wp_stream *s = new_stream(NULL);
    assert_int_equal(dh(s, true), WP_FCHAIN_DONE);
    assert_int_equal(eh(s, 200), WP_FCHAIN_DONE);
    assert_false(wp_fchain_timer_armed(&s->st));
    wp_fchain_destroy(&s->st, s, &fake_cbs);
    free(s);
}

/* ---------- the registry and the loader ---------- */

static void test_registry(void **state)
{
    (void)state;
    assert_ptr_equal(wp_http_filter_find("envoy.filters.http.fault"), &wp_http_filter_fault);
    assert_ptr_equal(wp_http_filter_find("envoy.filters.http.cors"), &wp_http_filter_cors);
    assert_ptr_equal(wp_http_filter_find("istio.stats"), &wp_http_filter_istio_stats);
    assert_ptr_equal(wp_http_filter_find("istio.metadata_exchange"), &wp_http_filter_istio_mx);
    assert_ptr_equal(wp_http_filter_find("envoy.filters.http.router"), &wp_http_filter_router);
    assert_null(wp_http_filter_find("envoy.filters.http.Router"));
    assert_ptr_equal(wp_http_filter_find("envoy.filters.http.rbac"), &wp_http_filter_rbac);
    assert_null(wp_http_filter_find("envoy.filters.http.ext_authz"));
    assert_true(wp_http_filter_router.terminal);
    assert_false(wp_http_filter_fault.terminal);
}

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

static char *boot(const char *filters)
{
    char *out = NULL;
    int n = asprintf(
        &out,
        "{\"static_resources\":{\"listeners\":[{\"address\":{\"socket_address\":{\"address\":"
        "\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{\"filters\":[{\"name\":"
        "\"envoy.filters.network.http_connection_manager\",\"typed_config\":{\"@type\":\"" HCM_T
        "\",\"stat_prefix\":\"in\",\"http_filters\":[%s],\"route_config\":{\"virtual_hosts\":[{"
        "\"name\":\"a\",\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{"
        "\"cluster\":\"c\"}}]}]}}}]}]}],\"clusters\":[{\"name\":\"c\",\"load_assignment\":{"
        "\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{"
        "\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]}}",
        filters);
    assert_true(n > 0);
    return out;
}

/* http_filters become the HCM's chain in their order, each with its decoded config. */
static void test_loader_builds_chain(void **state)
{
    (void)state;
    char *text = boot("{\"name\":\"istio.metadata_exchange\"},"
                      "{\"name\":\"envoy.filters.http.fault\"},"
                      "{\"name\":\"envoy.filters.http.cors\"},"
                      "{\"name\":\"istio.stats\"},"
                      "{\"name\":\"envoy.filters.http.router\"}");
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    const wp_hcm *h = c->listeners[0].chains[0].hcm;
    const wp_fchain *fc = h->filter_chain;
    assert_non_null(fc);
    assert_int_equal(fc->n, 5);
    assert_ptr_equal(fc->e[0].type, &wp_http_filter_istio_mx);
    assert_ptr_equal(fc->e[1].type, &wp_http_filter_fault);
    assert_ptr_equal(fc->e[2].type, &wp_http_filter_cors);
    assert_ptr_equal(fc->e[3].type, &wp_http_filter_istio_stats);
    assert_ptr_equal(fc->e[4].type, &wp_http_filter_router);
    assert_non_null(fc->e[0].config);
    assert_non_null(fc->e[1].config);
    assert_null(fc->e[2].config);
    assert_null(fc->e[4].config);
    /* config-time lookups by name find the same configs */
    assert_ptr_equal(wp_fchain_find(fc, "istio.metadata_exchange"), fc->e[0].config);
    assert_ptr_equal(wp_fchain_find(fc, "envoy.filters.http.fault"), fc->e[1].config);
    assert_null(wp_fchain_find(fc, "envoy.filters.http.rbac"));
    assert_null(wp_fchain_find(NULL, "istio.stats"));
    const wp_istio_stats_filter *sf = fc->e[3].config;
    assert_non_null(sf);
    assert_ptr_equal(sf->mx, fc->e[0].config); /* stats reads the exchange's peer */
    assert_true(fc->any_encode);
    assert_false(fc->any_data);
    wp_config_unref(c);

    /* the router alone */
    text = boot("{\"name\":\"envoy.filters.http.router\"}");
    err = (wf_strbuf)WF_STRBUF_INIT;
    c = wf_test_load_bootstrap(text, &err);
    free(text);
    assert_non_null(c);
    wf_strbuf_free(&err);
    fc = c->listeners[0].chains[0].hcm->filter_chain;
    assert_int_equal(fc->n, 1);
    assert_ptr_equal(fc->e[0].type, &wp_http_filter_router);
    assert_false(fc->any_encode);
    wp_config_unref(c);
}

/* Unknown names and a router that is not last stay errors (as before the chain). */
static void test_loader_errors(void **state)
{
    (void)state;
    char *text = boot("{\"name\":\"envoy.filters.http.ext_authz\"},"
                      "{\"name\":\"envoy.filters.http.router\"}");
    wf_test_expect_bootstrap_error(
        text, "t.json: static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
              ".http_filters[0].name: unsupported http filter \"envoy.filters.http.ext_authz\" "
              "(supported: envoy.filters.http.fault, envoy.filters.http.jwt_authn, "
              "envoy.filters.http.rbac, envoy.filters.http.cors, envoy.filters.http.grpc_stats, "
              "istio.metadata_exchange, istio.stats, envoy.filters.http.router)");
    free(text);
    text = boot("{\"name\":\"envoy.filters.http.router\"},"
                "{\"name\":\"envoy.filters.http.cors\"}");
    wf_test_expect_bootstrap_error(
        text, "t.json: static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
              ".http_filters[0]: Error: terminal filter named envoy.filters.http.router of type "
              "envoy.filters.http.router must be the last filter in a http filter chain.");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_stop_then_continue),
        cmocka_unit_test(test_terminal),
        cmocka_unit_test(test_local_reply),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_end_hooks),
        cmocka_unit_test(test_timer),
        cmocka_unit_test(test_terminal_async),
        cmocka_unit_test(test_terminal_slot_and_decoding),
        cmocka_unit_test(test_dispatch_pending),
        cmocka_unit_test(test_router_state_slot),
        cmocka_unit_test(test_header_ops),
        cmocka_unit_test(test_encode_stop),
        cmocka_unit_test(test_no_chain),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_loader_builds_chain),
        cmocka_unit_test(test_loader_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
