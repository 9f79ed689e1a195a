/*
 * fault.c - the HTTP fault injection filter (see fault.h for the Envoy behaviour followed):
 * percentage maths, the per-request decision, the delay timer and the abort reply.
 */
#include "proxy/fault.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/strbuf.h"
#include "proxy/proxy_internal.h"

/* ---------- percentages and decisions ---------- */

uint32_t wp_fault_denominator(int type)
{
    static const uint32_t values[] = {100u, 10000u, 1000000u};
    return type >= 0 && type < 3 ? values[type] : 0u;
}

bool wp_fault_percent_hit(wp_fault_percent p, uint64_t r)
{
    uint64_t den = p.denominator ? p.denominator : 100u;
    return r % den < p.numerator;
}

wp_fault_decision wp_fault_decide(const wp_fault_config *c, uint64_t r_delay, uint64_t r_abort)
{
    wp_fault_decision d = {false, false};
    if (!c)
        return d;
    d.delay = c->has_delay && c->delay_ms > 0 && wp_fault_percent_hit(c->delay_pct, r_delay);
    d.abort = c->has_abort && wp_fault_percent_hit(c->abort_pct, r_abort);
    return d;
}

const wp_fault_config *wp_fault_settings(const wp_fault_filter *f, const wp_vhost *vh,
                                         const wp_route *r)
{
    if (r && r->fault)
        return r->fault;
    if (r && vh && vh->fault)
        return vh->fault;
    return &f->cfg;
}

/* ---------- stats ---------- */

static uint32_t reg(wp_stats *st, const char *prefix, const char *name, bool gauge)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_printf(&b, "http.%s.fault.%s", prefix, name);
    uint32_t slot = WP_STAT_INVALID;
    if (!wf_strbuf_failed(&b))
        slot = gauge ? wp_stats_gauge(st, b.data) : wp_stats_counter(st, b.data);
    wf_strbuf_free(&b);
    return slot;
}

int wp_fault_register_stats(wp_stats *st, const wp_config *c)
{
    int rc = 0;
    for (size_t i = 0; i < c->nlisteners; i++) {
        const wp_hcm *h = &c->listeners[i].hcm;
        wp_fault_filter *f = h->fault;
        if (!f)
            continue;
        f->st_delays = reg(st, h->stat_prefix, "delays_injected", false);
        f->st_aborts = reg(st, h->stat_prefix, "aborts_injected", false);
        f->st_overflow = reg(st, h->stat_prefix, "faults_overflow", false);
        f->st_active = reg(st, h->stat_prefix, "active_faults", true);
        if (f->st_delays == WP_STAT_INVALID || f->st_aborts == WP_STAT_INVALID ||
            f->st_overflow == WP_STAT_INVALID || f->st_active == WP_STAT_INVALID)
            rc = -1;
    }
    return rc;
}

/* ---------- the request path ---------- */

/* The settings for s: the route's or virtual host's override when the HCM has any (the
 * route the connection manager chose, wp_router_resolve). */
static const wp_fault_config *settings_of(const wp_stream *s, const wp_fault_filter *f)
{
    return f->per_route ? wp_fault_settings(f, s->vhost, s->route) : &f->cfg;
}

/* FaultFilter::tryIncActiveFaults: one active fault per request, checked against max. */
static bool try_inc_active(wp_stream *s, wp_fault_filter *f, const wp_fault_config *c)
{
    if (s->fault.active)
        return true;
    wp_worker *w = s->d->w;
    uint64_t max = c->has_max_active ? c->max_active : UINT64_MAX;
    if (atomic_load_explicit(&f->active, memory_order_relaxed) >= max) {
        wp_stat_add(w->stats, f->st_overflow, 1);
        return false;
    }
    atomic_fetch_add_explicit(&f->active, 1, memory_order_relaxed);
    wp_stat_add(w->stats, f->st_active, 1);
    s->fault.active = true;
    return true;
}

/* FaultFilter::abortWithStatus: the stream is answered and ends. */
static void abort_stream(wp_stream *s, wp_fault_filter *f, int status)
{
    wp_stat_add(s->d->w->stats, f->st_aborts, 1);
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "fault: aborting request with status %d", status);
    wp_stream_local_reply(s, status, WP_FAULT_ABORT_BODY, WP_FAULT_ABORT_DETAILS, WP_RF_FI);
}

/* FaultFilter::postDelayInjection: the delay is over; abort or go on to the router. */
void wp_fault_delay_done(wp_stream *s)
{
    wp_dconn *d = s->d;
    if (d->closing || s->fault.state != WP_FAULT_DELAYING)
        return;
    s->fault.state = WP_FAULT_RESUMED;
    if (s->resp_started)
        return; /* answered meanwhile (a connection manager timeout) */
    if (s->fault.abort_after) {
        abort_stream(s, d->listener->hcm.fault, s->fault.abort_status);
        return;
    }
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, s->si.stream_id,
                  "fault: delay finished, continuing");
    wp_router_start(s);
}

static bool start_delay(wp_stream *s, wp_fault_filter *f, uint64_t ms)
{
    wp_dconn *d = s->d;
    wp_dconn_set_try_deadline(d, ms); /* the stream's try timer: no router attempt yet */
    s->fault.state = WP_FAULT_DELAYING;
    wp_stat_add(d->w->stats, f->st_delays, 1);
    wp_si_set_flag(&s->si, WP_RF_DI);
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, s->si.stream_id,
                  "fault: delaying request %llums", (unsigned long long)ms);
    return true;
}

bool wp_fault_on_request_headers(wp_stream *s)
{
    wp_fault_filter *f = s->d->listener->hcm.fault;
    if (!f || (!f->per_route && !f->cfg.has_delay && !f->cfg.has_abort))
        return true; /* Istio's listener-level filter is an empty HTTPFault */
    const wp_fault_config *c = settings_of(s, f);
    if (!c->has_delay && !c->has_abort)
        return true;
    wp_worker *w = s->d->w;
    wp_route_req rq;
    wp_router_route_req(s, &rq);
    if (c->nheaders && !wp_route_headers_match(&w->rx, &rq, c->headers, c->nheaders))
        return true;
    uint64_t r_delay = wp_rand(w);
    wp_fault_decision dec = wp_fault_decide(c, r_delay, wp_rand(w));
    if (dec.delay && try_inc_active(s, f, c) && start_delay(s, f, c->delay_ms)) {
        s->fault.abort_after = dec.abort;
        s->fault.abort_status = (uint16_t)c->abort_status;
        return false;
    }
    if (dec.abort && try_inc_active(s, f, c)) {
        abort_stream(s, f, (int)c->abort_status);
        return false;
    }
    return true;
}

void wp_fault_stream_end(wp_stream *s)
{
    wp_dconn *d = s->d;
    if (s->fault.state == WP_FAULT_DELAYING) {
        s->fault.state = WP_FAULT_RESUMED;
        wp_dconn_clear_try_deadline(d);
    }
    if (s->fault.active) {
        wp_fault_filter *f = d->listener->hcm.fault;
        s->fault.active = false;
        if (f) {
            atomic_fetch_sub_explicit(&f->active, 1, memory_order_relaxed);
            wp_stat_add(d->w->stats, f->st_active, -1);
        }
    }
}
