/*
 * router.c - the router filter for one stream (Envoy's Router::Filter, router.cc): picks
 * the virtual host and route, answers direct responses and redirects, resolves the
 * cluster (503 NC when it does not exist), asks the pool for a connection, writes the
 * request upstream, parses the response and hands it to the connection manager, and turns
 * timeouts and upstream resets into Envoy's local replies.
 *
 * Envoy behaviour followed (reference §1, §2 and §4.4; router.cc onUpstreamReset,
 * onResponseTimeout, decodeHeaders; docs configuration/http/http_filters/router_filter):
 *  - no route: 404, empty body, details route_not_found, flag NR, stat no_route;
 *  - unknown cluster: 503, empty body, details cluster_not_found, flag NC, stat no_cluster;
 *  - the cluster's load balancer (upstream/lb.h) finds no host: 503 "no healthy upstream",
 *    details no_healthy_upstream, flag UH, stat upstream_cx_none_healthy (a STRICT_DNS /
 *    LOGICAL_DNS name that did not resolve is no endpoint at all: server.c drops it);
 *  - max_requests (checked here, the request's breaker) or the pool's max_pending_requests
 *    (a pool Overflow) reached: the overflow reset below (503 UO, "x-envoy-overloaded: true"),
 *    stat upstream_rq_pending_overflow; pool failures become resets as Envoy's onPoolFailure
 *    does (LocalConnectionFailure, RemoteConnectionFailure, Timeout: connection timeout);
 *  - route timeout (default 15 s, 0 = off) starts when the request is complete and
 *    answers 504 "upstream request timeout", details response_timeout, flag UT, stat
 *    upstream_rq_timeout; after the response started, the downstream is reset instead;
 *  - a reset before the response started answers 503 (502 for protocol errors) with body
 *    "upstream connect error or disconnect/reset before headers. reset reason: <reason>"
 *    (", transport failure reason: <tfr>" when known) and details
 *    upstream_reset_before_response_started{<reason with '_' for spaces>[|<tfr>]};
 *    flags UF (connection failure, connect timeout), UC (termination), LR (local reset),
 *    UO (overflow), UPE (protocol error);
 *  - upstream request headers: hop-by-hop removed, x-forwarded-proto, x-request-id,
 *    x-forwarded-for as the connection manager left it (conn.c, xff.h),
 *    x-envoy-expected-rq-timeout-ms when a timeout applies, x-envoy-original-path when the
 *    path was rewritten, Expect removed (the connection manager answered 100-continue);
 *  - internal requests (the connection manager strips these from external ones, conn.c):
 *    x-envoy-upstream-rq-timeout-ms / -per-try-timeout-ms override the route's timeouts
 *    (FilterUtility::finalTimeout) and x-envoy-upstream-rq-timeout-alt-response turns the
 *    route timeout's 504 into a 204 (router.cc decodeHeaders); they are not forwarded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "http/grpc_http.h"
#include "proxy/http/headers.h"
#include "proxy/http/cached_route.h"
#include "proxy/http/codec.h"
#include "proxy/http/conn.h"
#include "proxy/filters/http/retry.h"
#include "proxy/filters/http/shadow.h"
#include "proxy/upstream/lb.h"
#include "proxy/filters/http/router.h"

const char *wp_reset_reason_string(int reason)
{
    switch (reason) {
    case WP_RESET_LOCAL_CONNECTION_FAILURE:
        return "local connection failure";
    case WP_RESET_REMOTE_CONNECTION_FAILURE:
        return "remote connection failure";
    case WP_RESET_CONNECTION_TIMEOUT:
        return "connection timeout";
    case WP_RESET_CONNECTION_TERMINATION:
        return "connection termination";
    case WP_RESET_LOCAL_RESET:
        return "local reset";
    case WP_RESET_OVERFLOW:
        return "overflow";
    case WP_RESET_PROTOCOL_ERROR:
        return "protocol error";
    case WP_RESET_REMOTE_REFUSED_STREAM_RESET:
        return "remote refused stream reset";
    case WP_RESET_REMOTE_RESET:
        return "remote reset";
    default:
        return "local reset";
    }
}

static void launch_shadows(wp_stream *s);

static void on_upstream_data(wp_uconn *u);
static void on_upstream_eof(wp_uconn *u);
static void on_upstream_written(wp_stream *s);

/* What the upstream connection of an attempt tells its stream (upstream/conn_pool.h). */
static void uc_data(void *owner, wp_uconn *u, size_t n)
{
    wp_stream *s = owner;
    s->si.upstream_wire_bytes_received += n;
    on_upstream_data(u);
}

static void uc_eof(void *owner, wp_uconn *u)
{
    (void)owner;
    on_upstream_eof(u);
}

static void uc_written(void *owner, wp_uconn *u)
{
    (void)u;
    on_upstream_written(owner);
}

/* The connection failed or closed under the attempt: it is gone, not given back. */
static void uc_reset(void *owner, wp_uconn *u, int reason)
{
    wp_stream *s = owner;
    wp_rs(s)->up = NULL;
    wp_router_on_reset(s, reason, wp_tsock_failure_reason(u->sock));
}

static const wp_uconn_callbacks uconn_cbs = {uc_data, uc_eof, uc_written, uc_reset};

static void cstat(wp_stream *s, int which, int64_t delta)
{
    if (s->cluster >= 0)
        wp_cluster_stat(s->d->w, wp_stream_gen(s), s->cluster, which, delta);
}

/* Outlier detection hears of the attempt's host (upstream/outlier.h). */
static void od_report(wp_stream *s, wp_od_result r, unsigned code)
{
    wp_outlier_report(s->d->w, wp_stream_gen(s), s->cluster, wp_rs(s)->host, r, code);
}

static void count_code(wp_stream *s, int code)
{
    if (s->cluster < 0 || !s->d->hcm->dynamic_stats)
        return;
    wp_worker *w = s->d->w;
    wp_code_stat_add(
        wp_stats_code_local(w->stats, wp_stream_gen(s)->pstats->clusters[s->cluster].rq_codes),
        (unsigned)code);
}

static void start_timeout(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    if (rs->timer_started || !rs->routing || !s->route || s->route->action != WP_ACT_ROUTE)
        return; /* not before the router has the request (a fault delay keeps request_timeout) */
    rs->timer_started = true;
    /* the request is complete: the connection manager's request_timeout is disarmed (Envoy
     * HCM docs) and the route timeout, if any, starts (the router's on_deadline) */
    wp_filter f = wp_fchain_terminal(&s->fcs, s);
    if (rs->timeout_ms)
        wp_filter_arm_deadline(&f, rs->timeout_ms);
    else
        wp_filter_disarm_deadline(&f);
}

/* A header's milliseconds as absl::SimpleAtoi reads them (digits; anything else leaves *out). */
static void header_ms(const h1_str *v, uint64_t *out)
{
    uint64_t n = 0;
    if (v->len == 0 || v->len > 19)
        return;
    for (size_t i = 0; i < v->len; i++) {
        if (v->p[i] < '0' || v->p[i] > '9')
            return;
        n = n * 10 + (uint64_t)(v->p[i] - '0');
    }
    *out = n;
}

/* Grpc::Common::isGrpcRequestHeaders (http/grpc_http.h). */
static bool grpc_request(const wp_stream *s)
{
    const h1_header *h = h1_find_header(s->req.headers, s->req.nheaders, "content-type");
    return h && wf_grpc_content_type(h->value.p, h->value.len);
}

/* FilterUtility::finalTimeout for a gRPC request on a route with max_grpc_timeout: the
 * request's grpc-timeout (0 when absent or not valid), less grpc_timeout_offset when that
 * leaves more than 0, capped by max_grpc_timeout unless that is 0 (0 = no timeout). */
static uint64_t grpc_timeout_ms(const wp_stream *s)
{
    const wp_route *r = s->route;
    uint64_t t = 0;
    const h1_header *h = h1_find_header(s->req.headers, s->req.nheaders, "grpc-timeout");
    if (h && !wf_grpc_timeout_parse(h->value.p, h->value.len, &t))
        t = 0;
    if (r->grpc_timeout_offset_ms && r->grpc_timeout_offset_ms < t)
        t -= r->grpc_timeout_offset_ms;
    if (r->max_grpc_timeout_ms && (t == 0 || t > r->max_grpc_timeout_ms))
        t = r->max_grpc_timeout_ms;
    return t;
}

/* Envoy's FilterUtility::finalTimeout and the router's alternate timeout response: the
 * route's timeout and per-try timeout, which x-envoy-upstream-rq-timeout-ms and
 * x-envoy-upstream-rq-per-try-timeout-ms override (a value that is not a number is ignored),
 * and x-envoy-upstream-rq-timeout-alt-response (any value: 204 instead of 504 on a route
 * timeout). A gRPC request on a route with max_grpc_timeout takes grpc_timeout_ms instead of
 * the route's timeout. A per-try timeout not below a non-zero route timeout is dropped. The
 * connection manager removed these headers from external requests (conn.c); they are never
 * forwarded. */
static void final_timeout(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    const wp_route *r = s->route;
    /* usingNewTimeouts (a max_stream_duration on the route): no route timeout here, the
     * connection manager times the stream (conn.c) */
    rs->grpc_timeout = !r->has_max_stream_duration && grpc_request(s) && r->has_max_grpc_timeout;
    rs->timeout_ms = r->has_max_stream_duration ? 0
                     : rs->grpc_timeout         ? grpc_timeout_ms(s)
                                                : r->timeout_ms;
    rs->per_try_timeout_ms = r->retry ? r->retry->per_try_timeout_ms : 0;
    for (size_t i = 0; i < s->req.nheaders; i++) {
        const h1_header *h = &s->req.headers[i];
        if (h->name.len < 30 || strncasecmp(h->name.p, "x-envoy-upstream-rq-", 20) != 0)
            continue;
        if (WP_NAME_IS(&h->name, "x-envoy-upstream-rq-timeout-ms"))
            header_ms(&h->value, &rs->timeout_ms);
        else if (WP_NAME_IS(&h->name, "x-envoy-upstream-rq-per-try-timeout-ms"))
            header_ms(&h->value, &rs->per_try_timeout_ms);
        else if (WP_NAME_IS(&h->name, "x-envoy-upstream-rq-timeout-alt-response"))
            rs->timeout_alt_204 = true;
    }
    if (rs->timeout_ms && rs->per_try_timeout_ms >= rs->timeout_ms)
        rs->per_try_timeout_ms = 0;
}

static void redirect(wp_stream *s, const wp_route_req *rq)
{
    /* the location value is kept with the stream until the reply is encoded */
    int code = wp_route_redirect(&s->d->w->rx, s->route, rq, false, &s->extra);
    const char *v = wf_strbuf_cstr(&s->extra);
    s->extra_resp = (h1_header){{"location", 8}, {v, strlen(v)}};
    wp_hcm_stat(s->d, WP_S_rq_redirect, 1);
    wp_router_local_reply(s, code, "", "direct_response", -1);
}

void wp_router_start(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    const wp_route *r = wp_router_cm(s)->route(s); /* the connection manager's cached route */
    rs->routing = true;
    /* a body slice that arrived while an earlier filter held decoding (a fault delay) */
    rs->body = wp_router_cm(s)->decoding_buffer(s, &rs->body_len);
    wp_hcm_stat(s->d, WP_S_rq_total, 1); /* Envoy's router counts every request it decodes */
    if (!r) {
        WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                      "no route match for URL '%.*s'", (int)s->req.target.len, s->req.target.p);
        wp_hcm_stat(s->d, WP_S_no_route, 1);
        wp_router_local_reply(s, 404, "", "route_not_found", WP_RF_NR);
        return;
    }
    if (r->action == WP_ACT_DIRECT) {
        wp_hcm_stat(s->d, WP_S_rq_direct_response, 1);
        wp_router_local_reply(s, r->direct_status, r->direct_body ? r->direct_body : "",
                              "direct_response", -1);
        return;
    }
    if (r->action == WP_ACT_REDIRECT) {
        wp_route_req rq;
        wp_router_cm(s)->request(s, &rq);
        redirect(s, &rq);
        return;
    }
    if (s->cluster < 0) {
        WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id, "unknown cluster '%s'",
                      r->nweighted ? r->weighted[s->weighted].name : r->cluster_name);
        wp_hcm_stat(s->d, WP_S_no_cluster, 1);
        wp_router_local_reply(s, 503, "", "cluster_not_found", WP_RF_NC);
        return;
    }
    const wp_cluster *c = &s->cfg->clusters[s->cluster];
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "cluster '%s' match for URL '%.*s'", c->name, (int)s->req.target.len,
                  s->req.target.p);
    final_timeout(s);
    if (s->req_complete)
        start_timeout(s);
    wp_retry_begin(s);
    if (rs->shadow_mask && s->req_complete)
        launch_shadows(s);
    wp_router_upstream_request(s);
}

/* ---------- the upstream request ---------- */

/* Request header ops, most specific first (route, weighted cluster, vhost, route config, then
 * what the HTTP filters added). */
static size_t req_ops(const wp_stream *s, const wp_header_ops *ops[WP_HOPS_LEVELS])
{
    size_t n = 0;
    if (s->weighted >= 0)
        ops[n++] = &s->route->weighted[s->weighted].req;
    ops[n++] = &s->route->req;
    if (s->vhost)
        ops[n++] = &s->vhost->req;
    ops[n++] = &s->d->hcm->route_config->req;
    size_t nf; /* the filters' levels, least specific (e.g. Istio's metadata exchange) */
    const wp_header_ops *const *fops = wp_fchain_request_ops(&s->fcs, &nf);
    for (size_t i = 0; i < nf; i++)
        ops[n++] = fops[i];
    return wp_hops_compact(ops, n);
}

static uint64_t expected_timeout_ms(const wp_stream *s);

static bool skip_request_header(const wp_stream *s, const h1_str *n)
{
    if (wp_h1_request_field_hop_by_hop(n, s->upgrade)) /* the codec's own (codec.h) */
        return true;
    if (WP_NAME_IS(n, "x-envoy-upstream-rq-timeout-ms") ||
        WP_NAME_IS(n, "x-envoy-upstream-rq-timeout-alt-response") ||
        WP_NAME_IS(n, "x-envoy-expected-rq-timeout-ms") || WP_NAME_IS(n, "x-envoy-original-path"))
        return true;
    if (n->len > 8 && strncasecmp(n->p, "x-envoy-", 8) == 0 &&
        (WP_NAME_IS(n, "x-envoy-retry-on") || WP_NAME_IS(n, "x-envoy-retry-grpc-on") ||
         WP_NAME_IS(n, "x-envoy-max-retries") ||
         WP_NAME_IS(n, "x-envoy-hedge-on-per-try-timeout") ||
         WP_NAME_IS(n, "x-envoy-retriable-header-names") ||
         WP_NAME_IS(n, "x-envoy-retriable-status-codes") ||
         WP_NAME_IS(n, "x-envoy-upstream-rq-per-try-timeout-ms")))
        return true; /* consumed by the router, never forwarded (Envoy) */
    if (WP_NAME_IS(n, "x-envoy-attempt-count"))
        return s->vhost && s->vhost->include_request_attempt_count;
    if (WP_NAME_IS(n, "host"))
        return s->route->host_rewrite_literal != NULL;
    if (wp_rs(s)->grpc_timeout && WP_NAME_IS(n, "grpc-timeout"))
        return expected_timeout_ms(s) != 0; /* upstream_head writes the expected timeout */
    return false;
}

/* x-envoy-expected-rq-timeout-ms as Envoy's FilterUtility::setTimeoutHeaders computes it:
 * the per-try timeout when one applies (it is ignored when not below a non-zero route
 * timeout), else the route timeout; bounded by what is left of the route timeout since the
 * request was complete (a retry), at least 1; 0 = no header (no timeout). */
static uint64_t expected_timeout_ms(const wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    uint64_t global = rs->timeout_ms, per_try = rs->per_try_timeout_ms;
    uint64_t expected = per_try ? per_try : global;
    if (!expected || !global || s->si.attempt_count <= 1 || !s->si.last_rx_ns)
        return expected;
    uint64_t now = uv_now(&s->d->w->loop) * 1000000ULL;
    uint64_t elapsed = now > s->si.last_rx_ns ? (now - s->si.last_rx_ns) / 1000000ULL : 0;
    if (elapsed >= global)
        return 1;
    return expected < global - elapsed ? expected : global - elapsed;
}

/* The upstream request head as the router hands it to the codec: the request line's parts,
 * the header fields in order and the framing, with the bytes the router formats itself (the
 * rewritten path, numbers) kept beside them until it is encoded. */
typedef struct up_head {
    wp_codec_request_head req;
    wp_hdr_list l;
    char expected[WP_U64_STR_MAX], attempts[WP_U64_STR_MAX];
    char grpc_timeout[WF_GRPC_TIMEOUT_STR_MAX];
    char path[8192];
} up_head;

/* Envoy's router: the downstream request's fields minus the hop-by-hop ones, the ones it
 * consumes and the routes' removals; then host, x-forwarded-proto, its x-envoy-* fields and
 * the routes' additions. */
static void upstream_head(wp_stream *s, up_head *u)
{
    const wp_hcm *h = s->d->hcm;
    const wp_header_ops *ops[WP_HOPS_LEVELS];
    size_t nops = req_ops(s, ops);
    wp_hdr_list *l = &u->l;
    wp_hdr_list_init(l);
    u->req = (wp_codec_request_head){.method = s->req.method,
                                     .path = s->req.target,
                                     .hdrs = l,
                                     .framing = s->req.framing,
                                     .content_length = s->req.content_length,
                                     .chunked = s->req_chunked,
                                     .upgrade = s->upgrade};
    size_t n = wp_route_rewrite_path(&s->d->w->rx, s->route, s->req.target.p, s->req.target.len,
                                     u->path, sizeof(u->path));
    if (n > 0 && n != (size_t)-1) {
        u->req.path = (h1_str){u->path, n};
        WP_HDR_LIST_ADD_LIT(l, "x-envoy-original-path", s->req.target.p, s->req.target.len);
    }
    bool has_xfp = false;
    for (size_t i = 0; i < s->req.nheaders; i++) {
        const h1_header *hd = &s->req.headers[i];
        /* "te: trailers" goes to an HTTP/2 upstream (gRPC needs it; Envoy's sanitizeTEHeader
         * keeps the trailers token) */
        bool te_trailers = WP_NAME_IS(&hd->name, "te") && hd->value.len == 8 &&
                           strncasecmp(hd->value.p, "trailers", 8) == 0 && wp_rs(s)->up &&
                           wp_rs(s)->up->stream;
        if ((skip_request_header(s, &hd->name) && !te_trailers) ||
            wp_hops_drops(ops, nops, &hd->name))
            continue;
        if (WP_NAME_IS(&hd->name, "x-forwarded-proto"))
            has_xfp = true;
        wp_hdr_list_add_field(l, hd);
    }
    const char *host = s->route->host_rewrite_literal ? s->route->host_rewrite_literal
                                                      : wp_cached_route_default_host(s);
    if (host)
        WP_HDR_LIST_ADD_LIT(l, "host", host, strlen(host));
    if (!has_xfp) { /* the downstream connection's scheme */
        bool tls = wp_tsock_ssl_info(s->d->sock) != NULL;
        WP_HDR_LIST_ADD_LIT(l, "x-forwarded-proto", tls ? "https" : "http", tls ? 5 : 4);
    }
    uint64_t expected = expected_timeout_ms(s);
    if (expected && !h->suppress_envoy_headers)
        WP_HDR_LIST_ADD_LIT(l, "x-envoy-expected-rq-timeout-ms", u->expected,
                            wp_u64_str(u->expected, expected));
    /* Envoy's finalTimeout with max_grpc_timeout: grpc-timeout becomes the expected timeout
     * (the per-try timeout shows), so the server knows the real deadline */
    if (wp_rs(s)->grpc_timeout && expected)
        WP_HDR_LIST_ADD_LIT(l, "grpc-timeout", u->grpc_timeout,
                            wf_grpc_timeout_format(expected, u->grpc_timeout));
    if (s->vhost && s->vhost->include_request_attempt_count)
        WP_HDR_LIST_ADD_LIT(l, "x-envoy-attempt-count", u->attempts,
                            wp_u64_str(u->attempts, s->si.attempt_count ? s->si.attempt_count : 1));
    wp_hops_add(l, ops, nops, s->req.headers, s->req.nheaders);
}

/* The upstream head encoded into b (reset first); -1 when it cannot be (out of memory, too
 * many fields). */
static int build_upstream_head(wp_stream *s, wf_strbuf *b)
{
    up_head u;
    upstream_head(s, &u);
    wf_strbuf_reset(b);
    return wp_h1_encode_request_head(b, &u.req);
}

void wp_router_log_view(wp_stream *s)
{
    if (!wp_rs(s)->routing || !s->route || s->route->action != WP_ACT_ROUTE || s->cluster < 0)
        return; /* answered before the router chose a cluster: logged as received */
    const wf_strbuf *b = &s->up_head; /* the last attempt's head, as sent */
    if (b->len == 0) {                /* no attempt was sent (UH, UO, ...): the one it would be */
        if (build_upstream_head(s, &s->log_head) != 0)
            return;
        b = &s->log_head;
    }
    if (wf_strbuf_failed(b))
        return;
    /* what the codec's encoding of the head reads as (the fields as sent, framing included) */
    if (wp_h1_request_head_view(b->data, b->len, s->log_hdrs, WP_MAX_HEADERS, &s->log_req))
        s->si.request = &s->log_req;
}

/* The request head for a shadow: the upstream head with "-shadow" added to the Host
 * (Envoy's shadow writer, shadow.h wp_shadow_host). */
static int shadow_head(wp_stream *s, const wp_mirror_policy *m, wf_strbuf *out)
{
    up_head *u = malloc(sizeof(*u)); /* mirrors are rare: off the stack, not per request */
    if (!u)
        return -1;
    upstream_head(s, u);
    char host[1024];
    for (size_t i = 0; i < u->l.n && !m->disable_host_suffix; i++) {
        h1_header *h = &u->l.e[i];
        if (!WP_NAME_IS(&h->name, "host"))
            continue;
        h1_str v = h->value;
        while (v.len && (*v.p == ' ' || *v.p == '\t')) {
            v.p++;
            v.len--;
        }
        size_t n = wp_shadow_host(v.p, v.len, host, sizeof(host));
        if (n)
            h->value = (h1_str){host, n};
        break;
    }
    int r = wp_h1_encode_request_head(out, &u->req);
    free(u);
    return r;
}

/* The request is complete: each chosen mirror policy gets its shadow (shadow.h). */
static void launch_shadows(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    uint8_t mask = rs->shadow_mask;
    rs->shadow_mask = 0;
    /* the whole kept body, one buffer per block (request_body_buffer_limit may exceed 1 MiB),
     * plus the chunk-size line and the chunked end; mirrors are rare, so this allocates */
    unsigned blocks = (unsigned)(rs->rb_len / WP_BUF_SIZE) + 1;
    uv_buf_t *bufs = malloc((blocks + 3) * sizeof(*bufs));
    if (!bufs)
        return;
    unsigned n = 0;
    wp_retry_slices_from(s, 0, bufs, &n, blocks);
    char line[WP_H1_CHUNK_LINE_MAX];
    n = wp_h1_encode_body(bufs, 0, n, s->req_chunked, true, line); /* the whole body */
    for (size_t i = 0; i < s->route->nmirrors && i < 8; i++) {
        if (!(mask & (1u << i)))
            continue;
        const wp_mirror_policy *m = &s->route->mirrors[i];
        wf_strbuf head = {0};
        if (shadow_head(s, m, &head) == 0)
            wp_shadow_send(s->d->w, s->d->wg, m->cluster, head.data, head.len, bufs, n,
                           rs->timeout_ms, wp_stream_is_head(s));
        wf_strbuf_free(&head);
    }
    free(bufs);
}

/* Writes what is ready for the upstream: head (once), the retry buffer from where this
 * attempt is, the pending body slice (only once the buffer is all out), the end of a
 * chunked body. Completion is synchronous or comes through wp_router_on_upstream_written. */
static void flush_upstream(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    wp_uconn *u = rs->up;
    if (!u || u->writing || s->resp_done)
        return;
    if (s->d->in_process) {
        /* the connection manager is still parsing this read: write when it is done, so a
         * request found malformed later in the same bytes never reaches the upstream (as
         * Envoy, whose upstream writes are flushed after the dispatch) */
        wp_fchain_defer_to_dispatch_done(&s->fcs);
        return;
    }
    uv_buf_t bufs[16];
    unsigned n = 0;
    if (!rs->head_sent) {
        bufs[n++] = uv_buf_init(s->up_head.data, (unsigned)s->up_head.len);
        rs->head_sent = true;
        s->si.first_upstream_tx_ns = uv_now(&s->d->w->loop) * 1000000ULL;
    }
    unsigned first = n;
    size_t rb = wp_retry_slices(s, bufs, &n, 8);
    bool direct = rs->body && rs->body_len && rs->rb_sent + rb == rs->rb_len;
    if (direct)
        bufs[n++] = uv_buf_init((char *)rs->body, (unsigned)rs->body_len);
    bool all_out = rs->rb_sent + rb == rs->rb_len && (!rs->body || direct);
    bool end = s->req_complete && !rs->req_end_sent && !s->d->tunnel && all_out;
    if (end)
        rs->req_end_sent = true;
    /* the client codec's framing of the slices (a chunk, the last chunk at the end) */
    n = wp_h1_encode_body(bufs, first, n, s->req_chunked && !s->d->tunnel, end, rs->chunk_line);
    if (n == 0)
        return;
    for (unsigned i = 0; i < n; i++)
        s->si.upstream_wire_bytes_sent += bufs[i].len;
    int r = wp_uconn_write(u, bufs, n);
    if (r < 0)
        return; /* the connection reports the reset */
    if (r == 1) {
        rs->wr_rb = rb;
        rs->wr_direct = direct;
        return;
    }
    s->si.last_upstream_tx_ns = uv_now(&s->d->w->loop) * 1000000ULL;
    rs->rb_sent += rb;
    if (direct) { /* taken: the connection manager forgets the slice (the caller parses on) */
        rs->body = NULL;
        rs->body_len = 0;
        wp_router_cm(s)->drain_decoding_buffer(s);
    }
    if ((rb || direct) && s->req_complete && !rs->req_end_sent)
        flush_upstream(s);
    else if (rb && !direct && rs->body)
        flush_upstream(s); /* the buffer is out: the direct slice follows */
}

void wp_router_flush(wp_stream *s)
{
    flush_upstream(s);
}

static void on_upstream_written(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    s->si.last_upstream_tx_ns = uv_now(&s->d->w->loop) * 1000000ULL;
    rs->rb_sent += rs->wr_rb;
    rs->wr_rb = 0;
    if (rs->wr_direct) {
        rs->wr_direct = false;
        rs->body = NULL; /* written: the connection manager consumes it */
        rs->body_len = 0;
        /* continues parsing the downstream buffer; what follows (more body, the end of a
         * chunked body) is flushed from there */
        wp_router_cm(s)->request_body_written(s);
        return;
    }
    flush_upstream(s);
}

static void on_connected(wp_stream *s, wp_uconn *u)
{
    wp_router_state *rs = wp_rs(s);
    rs->up = u;
    wp_uconn_attach(u, &uconn_cbs, s);
    /* the snapshot outlives the stream (it holds a reference) */
    const wp_cluster *uc = &s->cfg->clusters[s->cluster];
    if (u->has_dst) /* ORIGINAL_DST: the connection's restored local address (conn_handler) */
        s->si.upstream_host = s->d->local;
    else
        s->si.upstream_host = uc->endpoints[u->host].addr.text;
    s->si.upstream_protocol = u->stream ? "HTTP/2" : "HTTP/1.1"; /* a stream of pool_h2.c */
    /* copied: an attempt's connection may be gone before the access log is written */
    memcpy(rs->up_local, u->local, sizeof(rs->up_local));
    s->si.upstream_local = rs->up_local;
    s->si.upstream_connection_id = u->id; /* attempt_count was counted by wp_pool_request */
    /* TLS: the version is OpenSSL's static text; the peer's URI SANs are copied */
    const wp_tsock_ssl *ussl = wp_tsock_ssl_info(u->sock);
    s->si.upstream_tls_version = ussl ? ussl->version : NULL;
    s->si.upstream_peer_uri_san = s->si.upstream_local_uri_san = NULL;
    if (ussl) {
        snprintf(rs->up_peer_san, sizeof(rs->up_peer_san), "%s", ussl->peer_uri_sans);
        s->si.upstream_peer_uri_san = rs->up_peer_san;
        snprintf(rs->up_local_san, sizeof(rs->up_local_san), "%s", ussl->local_uri_sans);
        s->si.upstream_local_uri_san = rs->up_local_san;
    }
    rs->host = u->host;
    cstat(s, WP_S_upstream_rq_total, 1);
    cstat(s, WP_S_upstream_rq_active, 1);
    rs->counted_rq = true;
    h1_parser_set_answers(&u->parser, wp_stream_is_head(s) ? H1_ANSWERS_HEAD : H1_ANSWERS_OTHER);
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "pool ready: upstream connection %llu to %s", (unsigned long long)u->id,
                  s->si.upstream_host);
    if (build_upstream_head(s, &s->up_head) != 0) {
        wp_router_on_reset(s, WP_RESET_LOCAL_RESET, NULL);
        return;
    }
    wp_retry_arm_per_try(s);
    bool had_body = rs->body != NULL;
    flush_upstream(s);
    if (had_body && !rs->body) /* written at once: parse on */
        wp_router_cm(s)->request_body_written(s);
}

/* ---------- the load balancer and the pool ---------- */

/* previous_hosts (Envoy's LoadBalancerContext::shouldSelectAnotherHost). */
static bool lb_tried_host(void *owner, int host)
{
    return wp_retry_host_tried(owner, host);
}

static void on_pool_ready(void *ctx, wp_uconn *u, int host)
{
    wp_stream *s = ctx;
    wp_rs(s)->host = host;
    wp_lb_request_started(&s->d->wg->lbs[s->cluster], host);
    od_report(s, WP_OD_CONNECT_SUCCESS, 0);
    on_connected(s, u);
}

/* Envoy's Router::Filter::onPoolFailure: the reason as a stream reset. */
static void on_pool_failure(void *ctx, wp_pool_failure reason, const char *tfr, int host)
{
    (void)host;
    int r = reason == WP_POOL_OVERFLOW                    ? WP_RESET_OVERFLOW
            : reason == WP_POOL_REMOTE_CONNECTION_FAILURE ? WP_RESET_REMOTE_CONNECTION_FAILURE
            : reason == WP_POOL_TIMEOUT                   ? WP_RESET_CONNECTION_TIMEOUT
                                                          : WP_RESET_LOCAL_CONNECTION_FAILURE;
    wp_router_on_reset(ctx, r, tfr);
}

static const wp_pool_callbacks pool_cbs = {on_pool_ready, on_pool_failure};

void wp_router_upstream_request(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    wp_worker *w = s->d->w;
    const wp_cluster *c = &s->cfg->clusters[s->cluster];
    wp_cluster_rt *rt = &wp_stream_gen(s)->crt[s->cluster];
    /* retry_host_predicate previous_hosts: re-pick up to host_selection_retry_max_attempts
     * times while the choice is a host an earlier attempt used (Envoy then keeps the last) */
    wp_lb_context lbc = {
        .should_select_another_host = lb_tried_host,
        .owner = s,
        .host_selection_retry_max = rs->ntried && s->route && s->route->retry
                                        ? s->route->retry->host_selection_max_attempts
                                        : 0,
    };
    /* ORIGINAL_DST: the host is the downstream connection's original destination (Envoy's
     * OriginalDstCluster load balancer, the connection's restored local address) */
    const struct sockaddr *dst = NULL;
    if (c->original_dst)
        dst = wp_lf_conn_original_dst(s->d->parent ? s->d->parent->lf : s->d->lf);
    int host =
        c->original_dst ? (dst ? 0 : -1) : wp_lb_choose_host(&s->d->wg->lbs[s->cluster], &lbc);
    if (host < 0) {
        cstat(s, WP_S_upstream_cx_none_healthy, 1);
        wp_code_stat_add(
            wp_stats_code_local(w->stats, wp_stream_gen(s)->pstats->clusters[s->cluster].rq_codes),
            503);
        wp_router_local_reply(s, 503, "no healthy upstream", "no_healthy_upstream", WP_RF_UH);
        return;
    }
    /* the attempt is logged against its host even if it never connects */
    if (dst) { /* the downstream local address, restored to dst (server/conn_handler.c) */
        s->si.upstream_host = s->d->local;
    } else {
        s->si.upstream_host = c->endpoints[host].addr.text;
    }
    s->si.attempt_count++;
    if (atomic_load_explicit(&rt->rq_active, memory_order_relaxed) >= c->cb.max_requests) {
        cstat(s, WP_S_upstream_rq_pending_overflow, 1); /* Envoy counts max_requests here too */
        wp_router_on_reset(s, WP_RESET_OVERFLOW, NULL);
        return;
    }
    atomic_fetch_add_explicit(&rt->rq_active, 1, memory_order_relaxed);
    rs->counted_cb = true;
    rs->host = host;
    /* an HTTP/2 downstream (a stream's child connection) may get an HTTP/2 upstream */
    if (dst)
        wp_pool_newstream_http_dst(&s->d->wg->pools[s->cluster], dst, &rs->preq, &pool_cbs, s,
                                   s->d->parent != NULL);
    else
        wp_pool_newstream_http(&s->d->wg->pools[s->cluster], host, &rs->preq, &pool_cbs, s,
                               s->d->parent != NULL);
}

void wp_router_pool_done(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    wp_pool_cancel(&rs->preq);
    if (rs->counted_cb) {
        rs->counted_cb = false;
        atomic_fetch_sub_explicit(&wp_stream_gen(s)->crt[s->cluster].rq_active, 1,
                                  memory_order_relaxed);
    }
}

void wp_router_request_body(wp_stream *s, const char *data, size_t len)
{
    wp_router_state *rs = wp_rs(s);
    /* the pending slice (a body slice, or a tunnel's bytes; NULL none) is the connection
     * manager's, pinned in its read buffer until drained or request_body_written */
    rs->body = data;
    rs->body_len = len;
    if (wp_retry_body(s) != 0)
        return; /* answered 507 */
    if (s->req_complete) {
        start_timeout(s);
        wp_retry_arm_per_try(s);
        if (rs->shadow_mask)
            launch_shadows(s);
    }
    flush_upstream(s);
}

/* ---------- responses, resets, timeouts ---------- */

void wp_router_end_upstream(wp_stream *s, bool reusable)
{
    wp_router_state *rs = wp_rs(s);
    wp_uconn *u = rs->up;
    if (!u)
        return;
    rs->up = NULL;
    wp_uconn_detach(u);
    wp_lb_request_finished(&s->d->wg->lbs[s->cluster], u->host);
    if (rs->counted_rq) {
        cstat(s, WP_S_upstream_rq_active, -1);
        rs->counted_rq = false;
    }
    wp_uconn_release(u, reusable);
}

/* A retry was scheduled (router_retry.c): this attempt ends (its connection closed, its pool
 * request and max_requests slot given up); the next starts when the back-off ends
 * (wp_router_try_timer). */
static void end_attempt(wp_stream *s)
{
    wp_router_end_upstream(s, false);
    wp_router_pool_done(s);
}

/* The response already went downstream when the upstream failed: the client's connection
 * is reset, and the log says why as Envoy does (flag UC or UPE, details
 * upstream_reset_after_response_started{<reason>}), not DC. */
static void reset_after_response_started(wp_stream *s, int reason)
{
    const char *rs = wp_reset_reason_string(reason);
    char *details = wp_rs(s)->details_buf;
    size_t cap = sizeof(wp_rs(s)->details_buf);
    int n = snprintf(details, cap, "upstream_reset_after_response_started{%s}", rs);
    for (int i = 0; i < n && (size_t)i < cap; i++)
        if (details[i] == ' ')
            details[i] = '_';
    s->si.details = details;
    wp_si_set_flag(&s->si, reason == WP_RESET_PROTOCOL_ERROR           ? WP_RF_UPE
                           : reason == WP_RESET_CONNECTION_TERMINATION ? WP_RF_UC
                           : reason == WP_RESET_REMOTE_RESET ||
                                   reason == WP_RESET_REMOTE_REFUSED_STREAM_RESET
                               ? WP_RF_UR
                               : WP_RF_LR);
    s->upstream_failed = true;
    wp_router_cm(s)->reset_stream(s);
}

void wp_router_on_reset(wp_stream *s, int reason, const char *tfr)
{
    wp_router_end_upstream(s, false);
    if (reason != WP_RESET_OVERFLOW) /* a cluster-wide overflow is not the host's fault */
        od_report(s, WP_OD_CONNECT_FAILED, 0);
    if (s->resp_started) {
        reset_after_response_started(s, reason);
        return;
    }
    wp_retry_disarm(s);
    if (s->cluster >= 0 && wp_retry_after_reset(s, reason)) {
        end_attempt(s);
        return;
    }
    int flag = WP_RF_LR, status = 503;
    switch (reason) {
    case WP_RESET_LOCAL_CONNECTION_FAILURE:
    case WP_RESET_REMOTE_CONNECTION_FAILURE:
    case WP_RESET_CONNECTION_TIMEOUT:
        flag = WP_RF_UF;
        break;
    case WP_RESET_CONNECTION_TERMINATION:
        flag = WP_RF_UC;
        break;
    case WP_RESET_OVERFLOW:
        flag = WP_RF_UO;
        break;
    case WP_RESET_PROTOCOL_ERROR:
        flag = WP_RF_UPE;
        status = 502;
        break;
    case WP_RESET_REMOTE_REFUSED_STREAM_RESET: /* an HTTP/2 upstream's RST_STREAM / GOAWAY */
    case WP_RESET_REMOTE_RESET:
        flag = WP_RF_UR;
        break;
    default:
        break;
    }
    const char *rs = wp_reset_reason_string(reason);
    /* The body, the details and the transport failure reason live in the stream's extra
     * buffer ("body\0details"; the reason is the body's tail): a TLS failure reason is longer
     * than a fixed buffer. Without "retried and the latest " after retries, which current
     * Envoy inserts (reference §2.2): operator report B013 expects the body of a UF,URX reply
     * to start "... before headers. reset reason:", as the Envoy of that report wrote it. */
    wf_strbuf *x = &s->extra;
    wf_strbuf_reset(x);
    wf_strbuf_printf(x,
                     "upstream connect error or disconnect/reset before headers. reset reason: "
                     "%s%s%s",
                     rs, tfr ? ", transport failure reason: " : "", tfr ? tfr : "");
    size_t tfr_at = tfr ? x->len - strlen(tfr) : 0;
    wf_strbuf_append(x, "", 1);
    size_t det_at = x->len;
    wf_strbuf_printf(x, "upstream_reset_before_response_started{%s%s%s}", rs, tfr ? "|" : "",
                     tfr ? tfr : "");
    const char *body = "";
    char *p = wp_rs(s)->details_buf;
    s->si.transport_failure_reason = NULL;
    if (wf_strbuf_failed(x)) {
        snprintf(p, sizeof(wp_rs(s)->details_buf), "upstream_reset_before_response_started{%s}",
                 rs);
    } else {
        body = x->data;
        p = x->data + det_at;
        s->si.transport_failure_reason = tfr ? x->data + tfr_at : NULL;
    }
    /* details: whitespace replaced by '_' (Envoy's StringUtil::replaceAllEmptySpace) */
    for (char *q = p; *q; q++)
        if (*q == ' ' || *q == '\t')
            *q = '_';
    if (reason == WP_RESET_OVERFLOW)
        s->extra_resp = (h1_header){{"x-envoy-overloaded", 18}, {"true", 4}};
    count_code(s, status);
    cstat(s, WP_S_upstream_rq_completed, 1);
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "upstream reset: reset reason: %s, transport failure reason: %s", rs,
                  tfr ? tfr : "");
    wp_router_local_reply(s, status, body, p, flag);
}

void wp_router_timeout(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    cstat(s, WP_S_upstream_rq_timeout, 1);
    rs->backoff_pending = false; /* the route timeout ends every try and back-off */
    wp_retry_disarm(s);
    if (rs->host >= 0)
        atomic_fetch_add_explicit(&wp_stream_gen(s)->crt[s->cluster].hosts[rs->host].rq_timeout, 1,
                                  memory_order_relaxed);
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id, "upstream timeout");
    if (rs->up) {
        cstat(s, WP_S_upstream_rq_tx_reset, 1);
        od_report(s, WP_OD_TIMEOUT, 0); /* Envoy: a host the pool handed over */
        wp_router_end_upstream(s, false);
    } else {
        wp_pool_cancel(&rs->preq);
    }
    if (s->resp_started) { /* the client's stream is reset; the log shows UT response_timeout */
        s->upstream_failed = true;
        wp_router_local_reply(s, 504, "", "response_timeout", WP_RF_UT);
        return;
    }
    /* x-envoy-upstream-rq-timeout-alt-response: 204 (a 204 carries no body) */
    int code = rs->timeout_alt_204 ? 204 : 504;
    count_code(s, code);
    cstat(s, WP_S_upstream_rq_completed, 1);
    wp_router_timeout_reply(s, code, code == 204 ? "" : "upstream request timeout",
                            "response_timeout", WP_RF_UT);
}

/* A per-try (idle) timeout expired (Envoy onPerTryTimeout / onPerTryIdleTimeout): the try
 * is reset and retried when the policy retries resets, else 504 UT with
 * upstream_per_try_timeout / upstream_per_try_idle_timeout; after the response started the
 * client's connection is reset. */
static void per_try_timeout(wp_stream *s, bool idle)
{
    wp_router_state *rs = wp_rs(s);
    wp_retry_disarm(s);
    cstat(s, idle ? WP_S_upstream_rq_per_try_idle_timeout : WP_S_upstream_rq_per_try_timeout, 1);
    if (rs->host >= 0)
        atomic_fetch_add_explicit(&wp_stream_gen(s)->crt[s->cluster].hosts[rs->host].rq_timeout, 1,
                                  memory_order_relaxed);
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id, "upstream per try %s",
                  idle ? "idle timeout" : "timeout");
    if (rs->up) {
        cstat(s, WP_S_upstream_rq_tx_reset, 1);
        wp_router_end_upstream(s, false);
    } else {
        wp_pool_cancel(&rs->preq);
    }
    if (s->resp_started) {
        wp_si_set_flag(&s->si, WP_RF_UT);
        s->si.details = "upstream_per_try_idle_timeout";
        s->upstream_failed = true;
        wp_router_cm(s)->reset_stream(s);
        return;
    }
    if (wp_retry_after_per_try_timeout(s)) {
        end_attempt(s);
        return;
    }
    count_code(s, 504);
    cstat(s, WP_S_upstream_rq_completed, 1);
    wp_router_timeout_reply(s, 504, "upstream request timeout",
                            idle ? "upstream_per_try_idle_timeout" : "upstream_per_try_timeout",
                            WP_RF_UT);
}

void wp_router_try_timer(wp_stream *s)
{
    if (wp_rs(s)->backoff_pending) {
        wp_retry_fire(s);
        wp_router_upstream_request(s);
        return;
    }
    int due = wp_retry_try_due(s);
    if (due)
        per_try_timeout(s, due == 2);
}

void wp_router_cancel(wp_stream *s)
{
    wp_router_state *rs = wp_rs(s);
    wp_pool_cancel(&rs->preq);
    if (rs->up) {
        bool done = s->resp_done && rs->req_end_sent;
        if (!done)
            cstat(s, WP_S_upstream_rq_tx_reset, 1);
        wp_router_end_upstream(s, false);
    }
    wp_router_pool_done(s);
}

void wp_router_stream_complete(wp_stream *s)
{
    wp_router_cancel(s);
    wp_retry_end(s);
    if (wp_rs(s)->retries_exhausted)
        wp_si_set_flag(&s->si, WP_RF_URX);
}

/* The upstream's response head arrived. Returns false when the response is dropped for a
 * retry (the attempt ended; u is no longer the stream's). */
static bool on_response_headers(wp_stream *s, wp_uconn *u, const char *base, size_t used)
{
    const h1_message *m = &u->parser.msg;
    od_report(s, WP_OD_HTTP, m->status); /* before the retry decision, as Envoy */
    if (wp_retry_after_response(s, m)) {
        end_attempt(s);
        WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                      "upstream response %d: retrying", m->status);
        return false;
    }
    wp_retry_response_started(s);
    /* The route timeout runs on until the response is complete (Envoy's router disables it
     * in onUpstreamComplete); a response that starts before the request is complete disarms
     * the connection manager's request_timeout, and the route timeout starts when the
     * request completes. An upgrade's tunnel has no route timeout after its 101 (Envoy
     * applies the route timeout to the upgrade request only). */
    if (!wp_rs(s)->timer_started || m->upgrade) {
        wp_filter f = wp_fchain_terminal(&s->fcs, s);
        wp_filter_disarm_deadline(&f);
    }
    count_code(s, m->status); /* with upstream_rq_completed, as Envoy's chargeUpstreamCode */
    cstat(s, WP_S_upstream_rq_completed, 1);
    if (m->close_asked) /* Envoy's HTTP/1 pool: the connection closes after this response */
        cstat(s, WP_S_upstream_cx_close_notify, 1);
    u->response_seen = true;
    if (wp_router_cm(s)->encode_headers(s, m, base, used) == 1)
        wp_uconn_pause_read(u); /* an upgrade's head waits for the downstream */
    return true;
}

static void on_response_done(wp_stream *s, wp_uconn *u)
{
    wp_router_state *rs = wp_rs(s);
    bool reusable = u->parser.msg.keep_alive && rs->req_end_sent && !s->d->tunnel;
    if (rs->host >= 0) {
        wp_host_rt *h = &wp_stream_gen(s)->crt[s->cluster].hosts[rs->host];
        atomic_fetch_add_explicit(s->si.response_code >= 500 ? &h->rq_error : &h->rq_success, 1,
                                  memory_order_relaxed);
    }
    wp_router_end_upstream(s, reusable);
    wp_router_cm(s)->encode_complete(s);
}

/* Parses what the upstream sent; stops while a downstream write is pending. */
/* The upstream response's trailers, copied into the stream (the parser's buffer moves on) so
 * the access log sees them (%TRAILER()%, GRPC_STATUS). At most WP_MAX_TRAILERS; out of memory:
 * none are kept. */
static void keep_trailers(wp_stream *s, const h1_message *m)
{
    size_t n = m->ntrailers < WP_MAX_TRAILERS ? m->ntrailers : WP_MAX_TRAILERS;
    wf_strbuf *b = &s->trl;
    if (wf_strbuf_failed(b)) {
        wf_strbuf_free(b);
        *b = (wf_strbuf)WF_STRBUF_INIT;
    }
    wf_strbuf_reset(b);
    for (size_t i = 0; i < n; i++) {
        wf_strbuf_append(b, m->trailers[i].name.p, m->trailers[i].name.len);
        wf_strbuf_append(b, m->trailers[i].value.p, m->trailers[i].value.len);
    }
    if (n == 0 || wf_strbuf_failed(b))
        return;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        h1_header *h = &s->resp_trl[i];
        h->name = (h1_str){b->data + off, m->trailers[i].name.len};
        off += m->trailers[i].name.len;
        h->value = (h1_str){b->data + off, m->trailers[i].value.len};
        off += m->trailers[i].value.len;
    }
    s->si.response_trailers = s->resp_trl;
    s->si.nresponse_trailers = n;
}

/* ---------- the upstream codec's response events (http/codec.h) ---------- */

/* One step over an upstream connection's bytes; stop: the loop ends (paused, answered). */
typedef struct {
    wp_stream *s;
    wp_uconn *u;
    bool stop;
} upstream_ctx;

static void rc_consumed(void *ctx, size_t n)
{
    ((upstream_ctx *)ctx)->u->rstart += n;
}

static void rc_headers(void *ctx, const h1_message *m, const char *raw, size_t raw_len)
{
    upstream_ctx *c = ctx;
    wp_stream *s = c->s;
    if (m->status >= 100 && m->status < 200 && m->status != 101) {
        wp_rs(s)->rp = NULL; /* no retry after a 1xx (Envoy's router), though it is dropped */
        return;              /* 1xx: dropped (the connection manager answered 100-continue) */
    }
    c->stop = true;
    if (m->status == 101 && !s->upgrade) {
        /* a 101 nobody asked for: a protocol error (502 UPE), never a tunnel */
        wp_router_on_reset(s, WP_RESET_PROTOCOL_ERROR, NULL);
        return;
    }
    if (!on_response_headers(s, c->u, raw, raw_len))
        return;
    c->stop = false;
    if (s->d->tunnel)
        wp_router_cm(s)->continue_reading(s);
}

static void rc_data(void *ctx, const char *data, size_t len)
{
    upstream_ctx *c = ctx;
    if (wp_router_cm(c->s)->encode_data(c->s, data, len) == 1) {
        c->u->pinned = true;
        wp_uconn_pause_read(c->u);
        c->stop = true;
    }
}

static void rc_trailers(void *ctx, const h1_header *t, size_t n)
{
    (void)t;
    (void)n;
    upstream_ctx *c = ctx;
    keep_trailers(c->s, &c->u->parser.msg);
}

static void rc_complete(void *ctx)
{
    upstream_ctx *c = ctx;
    if (!c->s->resp_started)
        return; /* end of a 1xx */
    c->stop = true;
    on_response_done(c->s, c->u);
}

static void rc_upgraded(void *ctx)
{
    (void)ctx;
}

static void rc_error(void *ctx, h1_error e)
{
    upstream_ctx *c = ctx;
    wp_stream *s = c->s;
    WF_STREAM_LOG(WF_LC_router, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "upstream protocol error: %s", h1_error_name(e));
    wp_router_on_reset(s, WP_RESET_PROTOCOL_ERROR, NULL);
}

/* One event per step: the router's loop checks the stream and the connection in between. */
static bool rc_should_continue(void *ctx)
{
    (void)ctx;
    return false;
}

static const wp_codec_client_callbacks resp_cbs = {
    .on_consumed = rc_consumed,
    .on_headers = rc_headers,
    .on_data = rc_data,
    .on_trailers = rc_trailers,
    .on_complete = rc_complete,
    .on_upgraded = rc_upgraded,
    .on_error = rc_error,
    .should_continue = rc_should_continue,
};

static void on_upstream_data(wp_uconn *u)
{
    while (u->rbuf && !u->closing) {
        wp_stream *s = u->owner; /* the router attached its stream (on_connected) */
        size_t avail = u->rlen - u->rstart;
        if (s && wp_rs(s)->idle_armed)
            wp_rs(s)->up_activity = uv_now(&u->w->loop); /* per_try_idle_timeout: progress */
        if (!s) {
            if (avail)
                wp_uconn_close(u, true); /* bytes nobody asked for */
            return;
        }
        if (s->d->writing || s->d->closing) {
            wp_uconn_pause_read(u);
            return;
        }
        const char *base = u->rbuf->data + u->rstart;
        if (s->d->tunnel) {
            if (avail == 0)
                return;
            u->rstart = u->rlen;
            if (wp_router_cm(s)->encode_data(s, base, avail) == 1) {
                u->pinned = true;
                wp_uconn_pause_read(u);
            }
            continue;
        }
        /* one event of the upstream codec per step: the checks above run between events */
        upstream_ctx c = {s, u, false};
        wp_codec_status st = wp_h1_client_dispatch(&u->parser, base, avail, &resp_cbs, &c);
        if (st == WP_CODEC_NEED_MORE) {
            /* end of what arrived: a head still waiting for body bytes goes out now (it
             * lives in the stream, so the read buffer stays movable) */
            if (wp_router_cm(s)->encode_flush_head(s) == 1)
                wp_uconn_pause_read(u);
            return;
        }
        if (st != WP_CODEC_PAUSED || c.stop)
            return;
    }
}

/* The upstream closed its side. */
static void on_upstream_eof(wp_uconn *u)
{
    wp_stream *s = u->owner;
    if (!s)
        return;
    if (s->d->tunnel) {
        wp_router_end_upstream(s, false);
        s->resp_done = true;
        wp_router_cm(s)->reset_stream(s);
        return;
    }
    h1_event ev = h1_parse_eof(&u->parser);
    if (ev == H1_EV_DONE && s->resp_started) {
        s->resp_close = true;
        on_response_done(s, u);
        return;
    }
    cstat(s, WP_S_upstream_rq_rx_reset, 1);
    u->peer_reset_rq = true; /* the connection is destroyed remotely with a request on it */
    /* Envoy passes the connection's transport failure reason with every reset (a TLS alert
     * read after the handshake: TLS_error:|...) */
    wp_router_on_reset(s, WP_RESET_CONNECTION_TERMINATION, wp_tsock_failure_reason(u->sock));
}

void wp_router_downstream_writable(wp_stream *s)
{
    wp_uconn *u = wp_rs(s)->up;
    if (!u)
        return;
    u->pinned = false;
    on_upstream_data(u); /* may end s (and close u): both stay valid memory */
    if (!u->closing && u->owner && !((wp_stream *)u->owner)->d->writing)
        wp_uconn_resume_read(u);
}
