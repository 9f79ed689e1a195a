/*
 * router_retry.c - retries for one stream: the retry state (Envoy's RetryStateImpl), the
 * retry buffer that keeps the request body for replay (the router's retry/shadow buffer)
 * and the 507 of an overflow during back-off. Decisions are retry.c's; router.c calls in
 * when an attempt ends.
 *
 * Envoy behaviour followed (reference §3.1–§3.2 and §4.1–§4.4; router.cc decodeData,
 * onUpstreamReset, onUpstreamHeaders, onPerTryTimeout; retry_state_impl.cc shouldRetry):
 *  - a stream has retry state when its route (or virtual host) has a retry policy with a
 *    retry_on condition, and it is not an upgrade; num_retries 0 still has state (a
 *    matching failure then gets URX); an internal request's x-envoy-retry-on,
 *    x-envoy-retry-grpc-on, x-envoy-max-retries and x-envoy-retriable-status-codes are
 *    merged into a per-stream copy of that policy, or of the defaults when there is none
 *    (retry.c wp_retry_request_policy; external requests lost them in conn.c);
 *  - while the state exists every request body byte is also kept for replay, up to the
 *    limit: request_body_buffer_limit, else min(per_request_buffer_limit_bytes, the
 *    listener's per_connection_buffer_limit_bytes), else the latter (1 MiB default);
 *    crossing it logs "The request payload has at least N bytes data which exceeds buffer
 *    limit L. Give up on the retry/shadow.", counts retry_or_shadow_abandoned and drops the
 *    retry state; when that happens during a back-off (no attempt in flight) the answer is
 *    507 "exceeded request buffer limit while retrying upstream", details
 *    request_payload_exceeded_retry_buffer_limit, no flag; otherwise the body streams on
 *    to the attempt in flight, unprotected;
 *  - a retry needs retries left (else upstream_rq_retry_limit_exceeded and URX, which the
 *    log shows after the failure's own flag: "UF,URX", "UT,URX", as operators read it) and a
 *    max_retries circuit-breaker slot (else upstream_rq_retry_overflow and UO); it counts
 *    upstream_rq_retry and upstream_rq_retry_backoff_exponential and waits the back-off;
 *    the route timeout keeps running through all attempts and back-offs;
 *  - per_try_timeout (ignored when not below a non-zero route timeout) runs from the moment
 *    the attempt has a connection and the request is complete until the response starts;
 *    per_try_idle_timeout starts at the same moment, restarts with every upstream read and
 *    goes on while the response streams (Envoy's RetryPolicy docs).
 */
#include <string.h>

#include "core/log.h"
#include "proxy/http/conn.h"
#include "proxy/filters/http/retry.h"
#include "proxy/filters/http/router_retry.h"

/* The try timer (per-try timeouts and the back-off) is the router's filter timer: the
 * connection manager calls the router's on_timer when it fires (proxy/http/filter.h). */
static void set_try_timer(wp_stream *s, uint64_t ms)
{
    wp_filter f = wp_fchain_terminal(&s->fcs, s);
    wp_filter_arm_timer(&f, ms);
}

static void clear_try_timer(wp_stream *s)
{
    wp_filter f = wp_fchain_terminal(&s->fcs, s);
    wp_filter_disarm_timer(&f);
}

static void cstat(wp_stream *s, int which)
{
    if (s->cluster >= 0)
        wp_cluster_stat(s->d->w, wp_stream_gen(s), s->cluster, which, 1);
}

static uint64_t buffer_limit(const wp_stream *s)
{
    const wp_buffer_limits *l = &s->route->limits;
    uint64_t conn = s->d->listener->per_connection_buffer_limit_bytes;
    if (conn == 0)
        conn = UINT64_MAX;
    if (l->has_request_body_buffer_limit)
        return l->request_body_buffer_limit;
    if (l->has_per_request_buffer_limit && l->per_request_buffer_limit_bytes < conn)
        return l->per_request_buffer_limit_bytes;
    return conn;
}

/* Which mirror policies shadow this request (runtime_fraction drawn per policy). */
static void choose_shadows(wp_stream *s)
{
    const wp_route *r = s->route;
    for (size_t i = 0; i < r->nmirrors && i < 8; i++) {
        const wp_mirror_policy *m = &r->mirrors[i];
        uint32_t den = m->denominator ? m->denominator : 100;
        if (m->cluster >= 0 && wp_rand(s->d->w) % den < m->numerator)
            wp_rs(s)->shadow_mask |= (uint8_t)(1u << i);
    }
}

void wp_retry_begin(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    const wp_retry_policy *p = s->route ? s->route->retry : NULL;
    if (s->route && !s->upgrade) /* the retry headers reach here only on internal requests */
        p = wp_retry_request_policy(p, s->hdrs, s->req.nheaders, &rs->rp_own, rs->rp_codes,
                                    sizeof(rs->rp_codes) / sizeof(rs->rp_codes[0]));
    if (s->route && s->route->nmirrors && !s->upgrade)
        choose_shadows(s);
    if (p && p->retry_on && !s->upgrade) {
        rs->rp = p;
        rs->retries_left = p->num_retries;
    }
    if (rs->rp || rs->shadow_mask) { /* the body is kept for a retry or a shadow */
        rs->retry_limit = buffer_limit(s);
        rs->retry_buffering = true;
    }
}

/* ---------- the retry buffer ---------- */

static bool keep(wp_stream *s, const char *p, size_t len)
{
    wp_router_state *rs = wp_rs(s);
    while (len) {
        size_t used = rs->rb_len % WP_BUF_SIZE;
        if (!rs->rb_tail || (used == 0 && rs->rb_len > 0)) {
            wp_buf *b = wp_buf_get(s->d->w, WP_BUF_SIZE);
            if (!b)
                return false;
            b->next_free = NULL;
            if (rs->rb_tail)
                rs->rb_tail->next_free = b;
            else
                rs->rb_head = b;
            rs->rb_tail = b;
            used = 0;
        }
        size_t n = WP_BUF_SIZE - used < len ? WP_BUF_SIZE - used : len;
        memcpy(rs->rb_tail->data + used, p, n);
        rs->rb_len += n;
        p += n;
        len -= n;
    }
    return true;
}

static void release_buffer(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    for (wp_buf *b = rs->rb_head, *next; b; b = next) {
        next = b->next_free;
        wp_buf_put(s->d->w, b);
    }
    rs->rb_head = rs->rb_tail = NULL;
    rs->rb_len = rs->rb_sent = 0;
}

size_t wp_retry_slices(wp_stream *s, uv_buf_t *bufs, unsigned *n, unsigned max)
{
    return wp_retry_slices_from(s, wp_rs(s)->rb_sent, bufs, n, max);
}

size_t wp_retry_slices_from(wp_stream *s, size_t off, uv_buf_t *bufs, unsigned *n, unsigned max)
{
    wp_router_state *rs = wp_rs(s);
    size_t total = 0;
    wp_buf *b = rs->rb_head;
    for (size_t skip = off / WP_BUF_SIZE; b && skip; skip--)
        b = b->next_free;
    for (; b && off < rs->rb_len && max; b = b->next_free, max--) {
        size_t in = off % WP_BUF_SIZE;
        size_t end = rs->rb_len - (off - in) < WP_BUF_SIZE ? rs->rb_len - (off - in) : WP_BUF_SIZE;
        bufs[(*n)++] = uv_buf_init(b->data + in, (unsigned)(end - in));
        total += end - in;
        off += end - in;
    }
    return total;
}

static void release_slot(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    if (!rs->retry_slot)
        return;
    rs->retry_slot = false;
    atomic_fetch_sub_explicit(&wp_stream_gen(s)->crt[s->cluster].retries_active, 1,
                              memory_order_relaxed);
}

int wp_retry_body(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    if (!rs->retry_buffering || !rs->body || !rs->body_len)
        return 0;
    if (rs->rb_len + rs->body_len <= rs->retry_limit && keep(s, rs->body, rs->body_len)) {
        rs->body = NULL; /* copied: the connection manager forgets the slice */
        rs->body_len = 0;
        wp_router_cm(s)->drain_decoding_buffer(s);
        return 0;
    }
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "The request payload has at least %zu bytes data which exceeds buffer limit "
                  "%llu. Give up on the retry/shadow.",
                  rs->rb_len + rs->body_len, (unsigned long long)rs->retry_limit);
    cstat(s, WP_S_retry_or_shadow_abandoned);
    rs->retry_buffering = false;
    rs->rp = NULL;
    rs->shadow_mask = 0;
    if (!rs->backoff_pending)
        return 0; /* the attempt in flight gets the rest of the body, unprotected */
    rs->backoff_pending = false;
    clear_try_timer(s);
    release_slot(s);
    release_buffer(s);
    wp_router_local_reply(s, 507, "exceeded request buffer limit while retrying upstream",
                          "request_payload_exceeded_retry_buffer_limit", -1);
    return 1;
}

/* ---------- decisions ---------- */

static void remember_host(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    if (rs->host >= 0 && rs->ntried < sizeof(rs->tried) / sizeof(rs->tried[0]))
        rs->tried[rs->ntried++] = rs->host;
}

bool wp_retry_host_tried(const wp_stream *s, int host)
{
    wp_router_state *rs = wp_rs(s);
    const wp_retry_policy *p = s->route ? s->route->retry : NULL;
    if (!p || !p->previous_hosts)
        return false;
    for (unsigned i = 0; i < rs->ntried; i++)
        if (rs->tried[i] == host)
            return true;
    return false;
}

/* The failure matched the policy: schedule a retry, or say why not (URX / UO). */
static bool schedule(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    wp_worker *w = s->d->w;
    if (rs->retries_left == 0) {
        cstat(s, WP_S_upstream_rq_retry_limit_exceeded);
        rs->retries_exhausted = true; /* URX, logged after the failure's own flag */
        return false;
    }
    rs->retries_left--;
    wp_cluster_rt *rt = &wp_stream_gen(s)->crt[s->cluster];
    if (atomic_load_explicit(&rt->retries_active, memory_order_relaxed) >=
        s->cfg->clusters[s->cluster].cb.max_retries) {
        cstat(s, WP_S_upstream_rq_retry_overflow);
        wp_si_set_flag(&s->si, WP_RF_UO);
        return false;
    }
    atomic_fetch_add_explicit(&rt->retries_active, 1, memory_order_relaxed);
    rs->retry_slot = true;
    cstat(s, WP_S_upstream_rq_retry);
    cstat(s, WP_S_upstream_rq_retry_backoff_exponential);
    remember_host(s); /* the router ends the attempt (router.c end_attempt) */
    rs->per_try_armed = rs->idle_armed = false;
    rs->backoffs++;
    uint64_t ms = wp_retry_backoff_ms(rs->rp, rs->backoffs, wp_rand(w), w->backoff_jitter);
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "performing retry %u in %llu ms", rs->backoffs, (unsigned long long)ms);
    rs->backoff_pending = true;
    set_try_timer(s, ms);
    return true;
}

bool wp_retry_after_reset(wp_stream *s, int reason)
{
    wp_router_state *rs = wp_rs(s);
    release_slot(s);
    if (!rs->rp || s->resp_started || !wp_retry_on_reset(rs->rp, reason, rs->head_sent))
        return false;
    return schedule(s);
}

bool wp_retry_after_response(wp_stream *s, const h1_message *m)
{
    wp_router_state *rs = wp_rs(s);
    release_slot(s);
    if (!rs->rp)
        return false;
    if (!wp_retry_on_response(rs->rp, &s->d->w->rx, m->status, m->headers, m->nheaders)) {
        if (rs->backoffs)
            cstat(s, WP_S_upstream_rq_retry_success);
        return false;
    }
    if (!schedule(s))
        return false;
    /* a retried response counts as retry.upstream_rq_<code>, not upstream_rq_<code> */
    wp_worker *w = s->d->w;
    if (s->d->hcm->dynamic_stats)
        wp_code_stat_add(wp_stats_code_local(
                             w->stats, wp_stream_gen(s)->pstats->clusters[s->cluster].retry_codes),
                         (unsigned)m->status);
    return true;
}

bool wp_retry_after_per_try_timeout(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    release_slot(s);
    if (!rs->rp || !wp_retry_on_per_try_timeout(rs->rp))
        return false;
    return schedule(s);
}

static void arm_next(wp_stream *s, uint64_t now)
{
    wp_router_state *rs = wp_rs(s);
    uint64_t next = 0;
    if (rs->per_try_armed)
        next = rs->try_end;
    if (rs->idle_armed) {
        uint64_t idle = rs->up_activity + s->route->retry->per_try_idle_timeout_ms;
        next = next && next < idle ? next : idle;
    }
    if (next)
        set_try_timer(s, next > now ? next - now : 0);
    else
        clear_try_timer(s);
}

void wp_retry_arm_per_try(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    const wp_retry_policy *p = s->route ? s->route->retry : NULL;
    if (rs->per_try_armed || rs->idle_armed || !rs->up || !s->req_complete || s->resp_started)
        return;
    /* the per-try timeout is the router's (route's or x-envoy-upstream-rq-per-try-timeout-ms,
     * router.c final_timeout), already dropped when not below the route timeout */
    uint64_t now = uv_now(&s->d->w->loop);
    if (rs->per_try_timeout_ms) {
        rs->per_try_armed = true;
        rs->try_end = now + rs->per_try_timeout_ms;
    }
    if (p && p->per_try_idle_timeout_ms) {
        rs->idle_armed = true;
        rs->up_activity = now;
    }
    if (rs->per_try_armed || rs->idle_armed)
        arm_next(s, now);
}

int wp_retry_try_due(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    uint64_t now = uv_now(&s->d->w->loop);
    if (rs->per_try_armed && now >= rs->try_end && !s->resp_started)
        return 1;
    if (rs->idle_armed && now - rs->up_activity >= s->route->retry->per_try_idle_timeout_ms)
        return 2;
    arm_next(s, now);
    return 0;
}

void wp_retry_response_started(wp_stream *s)
{
    wp_rs(s)->per_try_armed = false;
    arm_next(s, uv_now(&s->d->w->loop));
}

void wp_retry_disarm(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    rs->per_try_armed = rs->idle_armed = false;
    if (!rs->backoff_pending)
        clear_try_timer(s);
}

void wp_retry_fire(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    rs->backoff_pending = false;
    rs->head_sent = rs->req_end_sent = rs->wr_direct = false;
    rs->rb_sent = rs->wr_rb = 0;
    rs->host = -1; /* the router starts the next attempt (router.c wp_router_try_timer) */
}

void wp_retry_end(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    release_slot(s);
    release_buffer(s);
    rs->backoff_pending = rs->per_try_armed = rs->idle_armed = false;
    clear_try_timer(s);
}
