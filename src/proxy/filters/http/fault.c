/*
 * fault.c - the HTTP fault injection filter's settings (see fault.h for the Envoy behaviour
 * followed): percentage maths, the per-request decision, settings resolution and stats. The
 * filter itself (delay, abort) is filters/http/fault_filter.c.
 */
#include "proxy/filters/http/fault.h"

#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"
#include "proxy/http/filter.h"

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
    for (size_t i = 0; i < c->nhcms; i++) {
        const wp_hcm *h = c->hcms[i];
        /* the filter's runtime (stat slots) is the mutable part of its config */
        wp_fault_filter *f =
            (wp_fault_filter *)(uintptr_t)wp_fchain_find(h->filter_chain, WP_FAULT_NAME);
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
