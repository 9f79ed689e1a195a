/*
 * ads_conn.c - the xDS server's connections as data (ads_internal.h): their list, the push
 * queue's links, the refused-stream ring, sending and failing a call, nonces, the metrics
 * helpers. The lowest layer of the xDS server: the protocol handlers (ads_sotw.c, delta.c),
 * the identity checks (ads_auth.c), generation (ads_gen.c), the push queue (ads_push.c) and
 * the server (ads.c) build on it; it calls none of them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/ca_tokenreview.h"
#include "xds/grpc_frame.h"

int64_t wf_ads_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t wf_ads_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void wf_ads_hist_observe(wf_ads_hist *h, double v)
{
    size_t i = 0;
    while (i < h->n_bounds && v > h->bounds[i]) {
        i++;
    }
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

static uint64_t rng_next(wf_ads *a)
{
    uint64_t s1 = a->rng[0];
    const uint64_t s0 = a->rng[1];
    a->rng[0] = s0;
    s1 ^= s1 << 23;
    a->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return a->rng[1] + s0;
}

void wf_ads_nonce(wf_ads *a, char *buf)
{
    uint64_t hi = rng_next(a), lo = rng_next(a);
    hi = (hi & ~0xf000ull) | 0x4000ull;                        /* version 4 */
    lo = (lo & 0x3fffffffffffffffull) | 0x8000000000000000ull; /* variant */
    snprintf(buf, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(hi >> 32),
             (unsigned)((hi >> 16) & 0xffff), (unsigned)(hi & 0xffff), (unsigned)(lo >> 48),
             (unsigned long long)(lo & 0xffffffffffffull));
}

/* ---- connections ---------------------------------------------------------------------------- */

static void type_free(wf_ads_type *t)
{
    wf_xds_watch_free(&t->w);
    json_decref(t->subscribed); /* delta.c's bookkeeping */
    json_decref(t->versions);
    t->subscribed = t->versions = NULL;
    t->wildcard = false;
}

static void history_free(wf_ads_history *h)
{
    for (size_t i = 0; i < WF_ADS_HISTORY; i++)
        free(h->ev[i].detail);
    memset(h, 0, sizeof *h);
}

void wf_ads_conn_free(wf_ads_conn *c)
{
    wf_ads_dequeue(c);
    json_decref(c->q_eds_services);
    history_free(&c->history);
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        type_free(&c->types[t]);
    }
    if (c->has_proxy) {
        wf_pilot_proxy_free(&c->proxy);
    }
    wf_xds_caller_free(&c->caller);
    wf_tokenreview_cancel(c->review); /* the stream went before its review answered */
    for (wf_ads_held *h = c->held, *n; h; h = n) {
        n = h->next;
        free(h);
    }
    free(c->id);
    free(c);
}

void wf_ads_list_remove(wf_ads *a, size_t i)
{
    memmove(&a->conns[i], &a->conns[i + 1], (a->n_conns - i - 1) * sizeof *a->conns);
    a->n_conns--;
}

int wf_ads_list_add(wf_ads *a, wf_ads_conn *c)
{
    if (a->n_conns == a->cap_conns) {
        size_t cap = a->cap_conns ? 2 * a->cap_conns : 16;
        wf_ads_conn **v = realloc(a->conns, cap * sizeof *v);
        if (!v) {
            return -1;
        }
        a->conns = v;
        a->cap_conns = cap;
    }
    a->conns[a->n_conns++] = c;
    return 0;
}

/* ---- the control-plane history ----------------------------------------------------------------
 */

void wf_ads_history_add(wf_ads_conn *c, wf_ads_event_kind k, const char *fmt, ...)
{
    wf_ads_history *h = &c->history;
    wf_ads_event *e = &h->ev[h->next];
    free(e->detail);
    e->detail = NULL;
    if (fmt) {
        char buf[WF_ADS_HISTORY_DETAIL];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        e->detail = strdup(buf);
    }
    e->t_ms = wf_ads_now_ms();
    e->kind = k;
    h->next = (uint8_t)((h->next + 1) % WF_ADS_HISTORY);
    if (h->n < WF_ADS_HISTORY)
        h->n++;
}

size_t wf_ads_history_count(const wf_ads_conn *c)
{
    return c->history.n;
}

const wf_ads_event *wf_ads_history_at(const wf_ads_conn *c, size_t i)
{
    const wf_ads_history *h = &c->history;
    if (i >= h->n)
        return NULL;
    return &h->ev[(h->next + WF_ADS_HISTORY - h->n + i) % WF_ADS_HISTORY];
}

const char *wf_ads_event_name(wf_ads_event_kind k)
{
    static const char *const n[] = {"connected", "disconnected", "nack", "ack"};
    return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "unknown";
}

void wf_ads_note_ack(wf_ads_conn *c, wf_xds_type t)
{
    if (c->acked_once & (1u << t))
        return;
    c->acked_once |= 1u << t;
    const char *v = c->types[t].w.version_acked;
    wf_ads_history_add(c, WF_ADS_EV_ACK, "%s%s%s", wf_xds_type_short(t), v ? " " : "", v ? v : "");
}

void wf_ads_history_inherit(wf_ads *a, wf_ads_conn *c)
{
    for (size_t i = a->n_conns; i-- > 0;) {
        wf_ads_conn *o = a->conns[i];
        if (o != c && !o->connected && strcmp(o->proxy.id, c->proxy.id) == 0) {
            history_free(&c->history);
            c->history = o->history; /* moved: o is freed without it */
            memset(&o->history, 0, sizeof o->history);
            return;
        }
    }
}

const char *wf_ads_type_status(const wf_ads_conn *c, wf_xds_type t)
{
    const wf_xds_watch *w = &c->types[t].w;
    return w->watched ? wf_xds_sync_name(wf_xds_watch_sync(w)) : "IGNORED";
}

/* A reconnecting proxy replaces its retained (disconnected) entries. */
void wf_ads_drop_retained(wf_ads *a, const char *proxy_id)
{
    for (size_t i = a->n_conns; i-- > 0;) {
        wf_ads_conn *o = a->conns[i];
        if (!o->connected && strcmp(o->proxy.id, proxy_id) == 0) {
            wf_ads_list_remove(a, i);
            wf_ads_conn_free(o);
        }
    }
}

void wf_ads_fail(wf_ads_conn *c, int code, const char *msg)
{
    WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS: closing %s: %d %s", c->id ? c->id : "(no node)", code,
           msg);
    if (c->call) {
        wf_h2_call_finish(c->call, code, msg);
    }
}

void wf_ads_note_rejected(wf_ads *a, const char *node, const char *address, const char *reason)
{
    wf_ads_rejected *r = &a->rejected[a->next_rejected];
    a->next_rejected = (a->next_rejected + 1) % WF_ADS_MAX_REJECTED;
    if (a->n_rejected < WF_ADS_MAX_REJECTED)
        a->n_rejected++;
    r->at_ms = wf_ads_now_ms();
    snprintf(r->node, sizeof r->node, "%s", node);
    snprintf(r->address, sizeof r->address, "%s", address);
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

size_t wf_ads_rejected_count(const wf_ads *a)
{
    return a->n_rejected;
}

const wf_ads_rejected *wf_ads_rejected_at(const wf_ads *a, size_t i)
{
    if (i >= a->n_rejected)
        return NULL;
    size_t k = (a->next_rejected + WF_ADS_MAX_REJECTED - 1 - i) % WF_ADS_MAX_REJECTED;
    return &a->rejected[k];
}

/* ---- sending ----------------------------------------------------------------------------------
 */

int wf_ads_send(wf_ads_conn *c, const char *text, size_t len)
{
    int rc = c->call ? wf_h2_call_send(c->call, text, len) : WF_H2_E_CLOSED;
    if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS: send to %s failed (%d, %zu bytes)", c->id, rc, len);
        return -1;
    }
    return 0;
}

void wf_ads_log_nack(wf_ads_conn *c, wf_xds_type t, int code, const char *msg)
{
    c->ads->metrics.rejects[t]++;
    wf_ads_history_add(c, WF_ADS_EV_NACK, "%s: %d: %s", wf_xds_type_short(t), code, msg ? msg : "");
    WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS:%s: ACK ERROR %s %d:%s", wf_xds_type_short(t), c->id,
           code, msg ? msg : "");
}

size_t wf_ads_connected(const wf_ads *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n_conns; i++) {
        n += a->conns[i]->connected;
    }
    return n;
}

/* ---- the push queue's links (served by ads_push.c) ---- */

void wf_ads_dequeue(wf_ads_conn *c)
{
    wf_ads *a = c->ads;
    if (!c->q_in)
        return;
    if (c->q_prev)
        c->q_prev->q_next = c->q_next;
    else
        a->q_head = c->q_next;
    if (c->q_next)
        c->q_next->q_prev = c->q_prev;
    else
        a->q_tail = c->q_prev;
    c->q_next = c->q_prev = NULL;
    c->q_in = false;
}

void wf_ads_kick(wf_ads *a)
{
    if (!a->closing && !uv_is_active((uv_handle_t *)&a->q_timer))
        uv_idle_start(&a->q_idle, a->q_turn);
}

static void link_in(wf_ads_conn *c, unsigned push, unsigned force, int64_t changed_at_ms);

void wf_ads_enqueue(wf_ads_conn *c, unsigned push, unsigned force, int64_t changed_at_ms)
{
    if ((push | force) & (1u << WF_XDS_EDS)) { /* the whole watch */
        json_decref(c->q_eds_services);
        c->q_eds_services = NULL;
    }
    link_in(c, push, force, changed_at_ms);
}

void wf_ads_enqueue_eds(wf_ads_conn *c, const json_t *services, int64_t changed_at_ms)
{
    unsigned bit = 1u << WF_XDS_EDS;
    bool whole = ((c->q_push | c->q_force) & bit) && !c->q_eds_services;
    if (!whole) {
        json_t *s = c->q_eds_services ? c->q_eds_services : json_object();
        if (!s || json_object_update(s, (json_t *)services) != 0) {
            json_decref(s); /* out of memory: the whole watch instead */
            c->q_eds_services = NULL;
            link_in(c, bit, 0, changed_at_ms);
            return;
        }
        c->q_eds_services = s;
    }
    link_in(c, bit, 0, changed_at_ms);
}

static void link_in(wf_ads_conn *c, unsigned push, unsigned force, int64_t changed_at_ms)
{
    wf_ads *a = c->ads;
    c->q_push |= push;
    c->q_force |= force;
    if (changed_at_ms && (!c->q_changed_at_ms || changed_at_ms < c->q_changed_at_ms))
        c->q_changed_at_ms = changed_at_ms;
    if (!c->q_in) {
        c->q_prev = a->q_tail;
        c->q_next = NULL;
        if (a->q_tail)
            a->q_tail->q_next = c;
        else
            a->q_head = c;
        a->q_tail = c;
        c->q_in = true;
    }
    wf_ads_kick(a);
}
