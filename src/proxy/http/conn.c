/*
 * conn.c - downstream connections and the HTTP connection manager (Envoy's
 * ConnectionManagerImpl for HTTP/1.1): reads requests through the HTTP/1 codec's dispatch
 * (proxy/http/codec.h; one stream at a time, pipelined requests wait in the buffer and are
 * answered in order), runs each stream through the HCM's HTTP filter chain
 * (proxy/http/filter.h: the filters of http_filters, the router last; this file implements the
 * filters' callbacks, and reaches the router only through the chain), writes responses (framed
 * by the codec) and local replies, logs and counts each stream when it ends. The cached route
 * is proxy/http/cached_route.h.
 *
 * Envoy behaviour followed (source/common/http/conn_manager_impl.cc, the HTTP/1 codec and
 * docs configuration/http/http_conn_man/headers):
 *  - x-request-id is generated (UUID v4) when absent and generate_request_id is on;
 *  - x-forwarded-proto is set to "https" (a TLS connection) or "http" when absent (the
 *    router writes it);
 *  - with use_remote_address the peer address is appended to x-forwarded-for;
 *  - the Server header is overwritten with server_name (default "envoy");
 *  - local replies are text/plain with content-length, no body for 404 NR and 503 NC;
 *  - a codec error answers 400/431/501 with the codec's details and closes (flag DPE);
 *  - after a 400 local reply the connection closes (ActiveStream::onLocalReply on HTTP/1), as
 *    after a local reply sent before the request was read whole;
 *  - a client that disconnects before the response completed is logged with DC and
 *    response code 0 when nothing was sent;
 *  - connection idle_timeout closes idle connections; stream_idle_timeout answers 408
 *    (request incomplete; the connection then closes) or 504 (it stays open) with body
 *    "stream timeout", flag SI;
 *  - request_timeout answers 408/504 "request timeout" (details request_overall_timeout).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "http/grpc_http.h"
#include "http/h1_server.h"
#include "proxy/access_log/access_log.h"
#include "proxy/access_log/alog_emit.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/http/headers.h"
#include "proxy/http/cached_route.h"
#include "proxy/http/codec.h"
#include "proxy/http/conn.h"
#include "proxy/http/codec_h2.h"
#include "proxy/http/header_list.h"

static void on_read(void *owner, ssize_t n);
static void process(wp_dconn *d);
static void stream_finish(wp_stream *s);
static void stream_local_reply(wp_stream *s, int status, const char *body, const char *details,
                               int flag);
static void stream_local_reply_grpc(wp_stream *s, int status, int grpc_status, const char *body,
                                    const char *details, int flag);
static void dconn_kick(wp_dconn *d);
static void refresh_duration(wp_stream *s);
static const wp_filter_callbacks filter_cbs;

/* ---------- small helpers ---------- */

/* Request timestamps come from the loop's clock (milliseconds, read once per loop
 * iteration by libuv): access logs and x-envoy-upstream-service-time are in milliseconds,
 * and a clock_gettime per timestamp costs more than the rest of the timing. */
static uint64_t now_ns(const wp_dconn *d)
{
    return uv_now(&d->w->loop) * 1000000ULL;
}

/* A random UUID v4 (36 characters + NUL) from the worker's generator: x-request-id. */
static void uuid4(wp_worker *w, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t a = wp_rand(w), b = wp_rand(w);
    unsigned char u[16];
    memcpy(u, &a, 8);
    memcpy(u + 8, &b, 8);
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    int j = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[j++] = '-';
        out[j++] = hex[u[i] >> 4];
        out[j++] = hex[u[i] & 15];
    }
    out[j] = 0;
}

/* ---------- connection lifecycle ---------- */

static uint64_t idle_ms(const wp_dconn *d)
{
    const wp_hcm *h = d->hcm;
    if (!d->stream)
        return h->idle_timeout_ms;
    const wp_route *r = d->stream->route;
    return r && r->has_idle_timeout ? r->idle_timeout_ms : h->stream_idle_timeout_ms;
}

/* (Re)starts the idle timer for the connection's current phase. Activity in between only
 * records a time (d->last_activity); the timer re-arms itself for the rest of the period,
 * so no timer operation happens per read or write. */
static void arm_idle(wp_dconn *d)
{
    uint64_t ms = idle_ms(d);
    d->last_activity = uv_now(&d->w->loop);
    if (ms == 0)
        return; /* no timeout in this phase: a running timer finds nothing due */
    /* Armed for the shorter of the connection and stream periods, the timer needs no
     * restart when a request starts or ends; it re-arms itself for what is left. */
    const wp_hcm *h = d->hcm;
    uint64_t p = ms;
    if (h->stream_idle_timeout_ms && h->stream_idle_timeout_ms < p)
        p = h->stream_idle_timeout_ms;
    if (h->idle_timeout_ms && h->idle_timeout_ms < p)
        p = h->idle_timeout_ms;
    if (!uv_is_active((uv_handle_t *)&d->idle_timer) || uv_timer_get_due_in(&d->idle_timer) > ms)
        uv_timer_start(&d->idle_timer, d->idle_timer.timer_cb, p, 0);
}

static void on_idle_timeout(uv_timer_t *t)
{
    wp_dconn *d = t->data;
    wp_stream *s = d->stream;
    uint64_t ms = idle_ms(d), idle = uv_now(&d->w->loop) - d->last_activity;
    if (ms == 0)
        return; /* this phase has no timeout; arm_idle restarts the timer when one has */
    if (idle < ms) {
        uv_timer_start(&d->idle_timer, d->idle_timer.timer_cb, ms - idle, 0);
        return;
    }
    if (!s && d->mux && d->mux->streams(d)) { /* its streams have their own timers */
        uv_timer_start(&d->idle_timer, d->idle_timer.timer_cb, ms, 0);
        return;
    }
    if (!s) {
        WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id, "idle timeout");
        wp_hcm_stat(d, WP_S_downstream_cx_idle_timeout, 1);
        if (d->mux) /* Envoy: GOAWAY, then the close */
            d->mux->drain(d);
        else
            wp_dconn_close(d);
        return;
    }
    wp_hcm_stat(s->d, WP_S_downstream_rq_idle_timeout, 1);
    if (s->resp_started) {
        wp_dconn_close(d);
        return;
    }
    /* Envoy's onIdleTimeout only answers: the connection closes after a 408 (the request was
     * not read whole: stream_local_reply), not after a 504 */
    wp_si_set_flag(&s->si, WP_RF_SI);
    stream_local_reply(s, s->req_complete ? 504 : 408, "stream timeout", "stream_idle_timeout", -1);
}

/* The HCM's request_timeout passed (the router had not taken the deadline over: the request
 * was not complete yet): 408, or 504 when the request was complete. */
static void request_timeout(wp_stream *s)
{
    wp_dconn *d = s->d;
    wp_hcm_stat(d, WP_S_downstream_rq_timeout, 1);
    d->close_after = true;
    stream_local_reply(s, s->req_complete ? 504 : 408, "request timeout", "request_overall_timeout",
                       -1);
}

/* Envoy's onStreamMaxDurationReached: 504 (408 while the request is not read whole)
 * "downstream duration timeout", gRPC status 4 DEADLINE_EXCEEDED, details
 * max_duration_timeout; after the response started the stream is reset. */
static void duration_reached(wp_stream *s)
{
    WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "Stream max duration time reached");
    wp_hcm_stat(s->d, WP_S_downstream_rq_max_duration_reached, 1);
    stream_local_reply_grpc(s, s->req_complete ? 504 : 408, WF_GRPC_STATUS_DEADLINE_EXCEEDED,
                            "downstream duration timeout", "max_duration_timeout", -1);
}

/* One timer serves three deadlines: the stream's deadline (the HCM's request_timeout, or the
 * route timeout of the filter that took it over: the router), the stream's max duration
 * (refresh_duration) and the stream's filter timer (a fault delay, the router's per-try
 * timeout or back-off). It fires at the earliest; when several are due, in that order. */
static void on_rq_timeout(uv_timer_t *t)
{
    wp_dconn *d = t->data;
    uint64_t now = uv_now(&d->w->loop);
    if (d->dur_deadline && now >= d->dur_deadline && !(d->rq_deadline && now >= d->rq_deadline)) {
        d->dur_deadline = 0;
        if (d->stream)
            duration_reached(d->stream);
    } else if (d->rq_deadline && now >= d->rq_deadline) {
        d->rq_deadline = 0;
        wp_stream *s = d->stream;
        if (s && wp_fchain_deadline_armed(&s->fcs))
            wp_fchain_on_deadline(&s->fcs, s); /* the router's route timeout */
        else if (s)
            request_timeout(s);
    } else if (d->try_deadline && now >= d->try_deadline) {
        d->try_deadline = 0;
        if (d->stream && wp_fchain_timer_armed(&d->stream->fcs))
            wp_fchain_on_timer(&d->stream->fcs, d->stream, &filter_cbs); /* a filter's timer */
    }
    if (d->closing || uv_is_active((uv_handle_t *)&d->rq_timer))
        return;
    uint64_t next = d->rq_deadline;
    if (d->try_deadline && (!next || d->try_deadline < next))
        next = d->try_deadline;
    if (d->dur_deadline && (!next || d->dur_deadline < next))
        next = d->dur_deadline;
    if (next) /* a deadline still ahead (cleared ones are 0) */
        uv_timer_start(&d->rq_timer, d->rq_timer.timer_cb, next > now ? next - now : 0, 0);
}

static void arm_deadline(wp_dconn *d, uint64_t ms)
{
    /* the timer only moves when the new deadline is earlier than where it is armed: a
     * cleared or later deadline is noticed when it fires (no timer work per request) */
    if (!uv_is_active((uv_handle_t *)&d->rq_timer) || uv_timer_get_due_in(&d->rq_timer) > ms)
        uv_timer_start(&d->rq_timer, d->rq_timer.timer_cb, ms, 0);
}

static void wp_dconn_set_deadline(wp_dconn *d, uint64_t ms)
{
    d->rq_deadline = uv_now(&d->w->loop) + ms;
    arm_deadline(d, ms);
}

static void wp_dconn_set_try_deadline(wp_dconn *d, uint64_t ms)
{
    d->try_deadline = uv_now(&d->w->loop) + ms;
    arm_deadline(d, ms);
}

static void wp_dconn_clear_try_deadline(wp_dconn *d)
{
    d->try_deadline = 0;
}

static void wp_dconn_clear_deadline(wp_dconn *d)
{
    d->rq_deadline = 0;
}

/* Three handles (the socket, idle_timer, rq_timer): the connection is freed after the last
 * close callback, in the loop's close phase (the end of the iteration, net/deferred.h). */
static void closed_one(wp_dconn *d)
{
    if (++d->closed_handles == 3) {
        if (d->mux)
            d->mux->free(d->h2);
        wp_wgen_release(d->w, d->wg);
        if (d->sock_wg)
            wp_wgen_release(d->w, d->sock_wg);
        free(d->lf); /* released when the connection closed */
        wf_strbuf_free(&d->xfcc);
        free(d);
    }
}

static void on_timer_closed(uv_handle_t *h)
{
    closed_one(h->data);
}

static void on_sock_closed(void *owner)
{
    closed_one(owner);
}

void wp_dconn_log_close(wp_dconn *d, const char *details)
{
    const wp_listener *l = d->listener;
    if (!l || !l->naccess_logs || !d->w->alog)
        return;
    wp_stream_info si;
    memset(&si, 0, sizeof si);
    uint64_t now_ms = uv_now(&d->w->loop);
    si.connection_id = d->id;
    si.start_time_us = wp_wall_us(d->w) - (int64_t)(now_ms - d->start_ms) * 1000;
    si.start_ns = d->start_ms * 1000000ULL;
    si.end_ns = now_ms * 1000000ULL;
    si.downstream_local = d->local;
    si.downstream_remote = d->remote;
    si.downstream_direct_remote = d->remote;
    const wp_tsock_ssl *ssl = d->sock ? wp_tsock_ssl_info(d->sock) : NULL;
    if (ssl) {
        si.requested_server_name = ssl->sni;
        si.downstream_peer_uri_san = ssl->peer_uri_sans;
    }
    si.termination_details = details;
    wp_alog_emit(l->access_logs, l->naccess_logs, &si, d->w->alog);
}

void wp_dconn_close(wp_dconn *d)
{
    if (d->closing)
        return;
    d->closing = true;
    wp_worker *w = d->w;
    wp_nf_chain_on_close(&d->nf); /* a TCP proxy logs and closes its upstream here */
    if (d->stream) {
        wp_stream *s = d->stream;
        if (!s->resp_done && !d->tunnel && !s->upstream_failed && !d->reset_by_peer) {
            wp_si_set_flag(&s->si, WP_RF_DC);
            if (!s->si.details && d->peer_closed)
                s->si.details = "downstream_remote_disconnect";
        }
        stream_finish(s);
    }
    if (d->mux)
        d->mux->close(d); /* its streams (child connections) end */
    if (d->parent) {      /* a stream of an HTTP/2 connection: no connection of its own */
        wp_tsock_close(d->sock);
        uv_close((uv_handle_t *)&d->idle_timer, on_timer_closed);
        uv_close((uv_handle_t *)&d->rq_timer, on_timer_closed);
        wp_buf_put(w, d->rbuf);
        d->rbuf = NULL;
        return;
    }
    if (d->hcm) {
        wp_hcm_stat(d, WP_S_downstream_cx_destroy, 1);
        wp_hcm_stat(d,
                    d->peer_closed ? WP_S_downstream_cx_destroy_remote
                                   : WP_S_downstream_cx_destroy_local,
                    1);
        wp_hcm_stat(d, WP_S_downstream_cx_active, -1);
        wp_hcm_stat(d, d->h2 ? WP_S_downstream_cx_http2_active : WP_S_downstream_cx_http1_active,
                    -1);
    }
    if (d->chain) { /* a connection without a filter chain was never counted */
        wp_pstats_dconn_closed(w->stats, d->hs, d->ls, uv_now(&w->loop) - d->start_ms);
        wp_listener_stat(d, WP_LS_downstream_cx_destroy, 1);
        wp_listener_stat(d, WP_LS_downstream_cx_active, -1);
    }
    WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id, "closing connection (%s)",
                d->peer_closed ? "remote close" : "local close");
    atomic_fetch_sub_explicit(&w->nconns, 1, memory_order_relaxed);
    if (d->prev)
        d->prev->next = d->next;
    else
        w->conns = d->next;
    if (d->next)
        d->next->prev = d->prev;
    wp_buf_put(w, d->rbuf);
    d->rbuf = NULL;
    if (d->lf) {
        if (d->lf->reading) /* closed while its listener filters read (drain, shutdown) */
            wp_listener_stat(d, WP_LS_downstream_pre_cx_active, -1);
        wp_lf_conn_release(d->lf);
    }
    wp_tsock_close(d->sock);
    uv_close((uv_handle_t *)&d->idle_timer, on_timer_closed);
    uv_close((uv_handle_t *)&d->rq_timer, on_timer_closed);
}

static void start_reading(wp_dconn *d)
{
    if (d->reading || d->closing || d->peer_closed)
        return;
    if (wp_tsock_read_start(d->sock) == 0)
        d->reading = true;
}

static void stop_reading(wp_dconn *d)
{
    if (!d->reading)
        return;
    wp_tsock_read_stop(d->sock);
    d->reading = false;
}

/* The socket asks for room: hand out the free tail of the connection's buffer. */
static void on_alloc(void *owner, uv_buf_t *buf)
{
    wp_dconn *d = owner;
    if (!d->rbuf) {
        d->rbuf = wp_buf_get(d->w, WP_BUF_SIZE);
        d->rlen = d->rstart = 0;
        if (!d->rbuf) {
            buf->base = NULL;
            buf->len = 0;
            return;
        }
    }
    bool pinned = d->stream && d->stream->body_ptr;
    if (d->rstart > 0 && !pinned) {
        memmove(d->rbuf->data, d->rbuf->data + d->rstart, d->rlen - d->rstart);
        d->rlen -= d->rstart;
        d->rstart = 0;
    }
    if (d->rlen == d->rbuf->cap && !pinned) {
        /* a head larger than the buffer: grow up to the header limit */
        size_t limit = (size_t)d->hcm->max_request_headers_kb * 1024 + WP_HEAD_EXTRA;
        if (d->rbuf->cap < limit) {
            wp_buf *nb = wp_buf_get(d->w, limit);
            if (nb) {
                memcpy(nb->data, d->rbuf->data, d->rlen);
                wp_buf_put(d->w, d->rbuf);
                d->rbuf = nb;
            }
        }
    }
    buf->base = d->rbuf->data + d->rlen;
    buf->len = d->rbuf->cap - d->rlen;
}

static void on_dwrite(void *owner, int status);

/* The transport socket's callbacks (net/transport_socket.h). */
static const wp_tsock_cbs dconn_sock_cbs = {
    .alloc = on_alloc,
    .on_read = on_read,
    .on_written = on_dwrite,
    .on_closed = on_sock_closed,
};

/* ---------- the HTTP connection manager as a network filter ---------- */

wp_nf_status wp_hcm_on_new_connection(wp_dconn *d)
{
    wp_hcm_stat(d, WP_S_downstream_cx_total, 1);
    wp_hcm_stat(d, WP_S_downstream_cx_active, 1);
    wp_hcm_stat(d, WP_S_downstream_cx_http1_total, 1);
    wp_hcm_stat(d, WP_S_downstream_cx_http1_active, 1);
    arm_idle(d);
    start_reading(d);
    return WP_NF_STOP_ITERATION; /* the terminal filter */
}

wp_dconn_codec wp_hcm_choose_codec(wp_dconn *d)
{
    bool h2 = d->hcm->codec_type == WP_CODEC_HTTP2;
    if (d->hcm->codec_type == WP_CODEC_AUTO) {
        const wp_tsock_ssl *ssl = wp_tsock_ssl_info(d->sock);
        if (ssl && ssl->alpn[0])
            h2 = strcmp(ssl->alpn, "h2") == 0;
        else if (d->rbuf) {
            int p = wp_h2_preface_check(d->rbuf->data + d->rstart, d->rlen - d->rstart);
            if (p == 0)
                return WP_DCONN_CODEC_WAIT;
            h2 = p == 1;
        }
    }
    d->proto_known = true;
    return h2 ? WP_DCONN_CODEC_H2 : WP_DCONN_CODEC_H1;
}

void wp_dconn_set_mux(wp_dconn *d, const wp_dconn_mux_ops *ops, struct wp_h2c *state)
{
    d->mux = ops;
    d->h2 = state;
    wp_hcm_stat(d, WP_S_downstream_cx_http1_total, -1);
    wp_hcm_stat(d, WP_S_downstream_cx_http1_active, -1);
    wp_hcm_stat(d, WP_S_downstream_cx_http2_total, 1);
    wp_hcm_stat(d, WP_S_downstream_cx_http2_active, 1);
}

wp_nf_status wp_hcm_on_data(wp_dconn *d, bool end_stream)
{
    (void)end_stream;
    if (d->mux)
        d->mux->on_data(d);
    else
        process(d);
    return WP_NF_STOP_ITERATION;
}

/* ---------- accepting (the listener filters and the chain match are the worker's:
 * server/conn_handler.c) ---------- */

void wp_dconn_use_chain(wp_dconn *d, const wp_filter_chain *fc)
{
    d->chain = fc;
    d->hcm = fc->hcm;
    d->hs = fc->hcm ? &d->wg->gen->pstats->hcms[fc->hcm->index] : NULL;
}

/* The connection's socket as the listener filters left it (d->lf), or as accepted: the
 * addresses read again from the socket (a listener without listener filters keeps no copy:
 * only a chain match after a config update needs them again). */
static void read_addresses(wp_dconn *d, struct sockaddr_storage *local,
                           struct sockaddr_storage *peer)
{
    int llen = sizeof(*local), plen = sizeof(*peer);
    if (uv_tcp_getsockname(&d->raw.tcp, (struct sockaddr *)local, &llen) != 0)
        local->ss_family = AF_UNSPEC;
    if (uv_tcp_getpeername(&d->raw.tcp, (struct sockaddr *)peer, &plen) != 0)
        peer->ss_family = AF_UNSPEC;
}

static const wp_lf_socket *conn_socket(wp_dconn *d, wp_lf_socket *tmp)
{
    if (d->lf)
        return &d->lf->sock;
    struct sockaddr_storage local, peer;
    read_addresses(d, &local, &peer);
    wp_lf_socket_init(tmp, (struct sockaddr *)&local, (struct sockaddr *)&peer);
    return tmp;
}

/* The accepted TCP socket's local and peer addresses (read before any transport socket of
 * a chain exists, as Envoy's listener does): into *sock for the listener filters and the
 * match, and as text for logs. */
static void socket_addresses(wp_dconn *d, wp_lf_socket *sock)
{
    struct sockaddr_storage local, peer;
    read_addresses(d, &local, &peer);
    wp_lf_socket_init(sock, (struct sockaddr *)&local, (struct sockaddr *)&peer);
    wp_sockaddr_text((struct sockaddr *)&peer, d->remote, sizeof(d->remote));
    wp_sockaddr_text((struct sockaddr *)&local, d->local, sizeof(d->local));
}

wp_dconn *wp_dconn_accept(wp_worker *w, size_t listener, uv_stream_t *server, wp_lf_socket *sock)
{
    const wp_listener *l = &w->cfg->listeners[listener];
    wp_dconn *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->w = w;
    d->wg = w->wg;
    wp_wgen_use(d->wg);
    d->listener = l;
    d->start_ms = uv_now(&w->loop);
    d->ls = &w->wg->gen->pstats->listeners[l - w->cfg->listeners];
    if (wp_raw_socket_init(&d->raw, &w->loop, &w->wreqs, &dconn_sock_cbs, d) != 0) {
        wp_wgen_release(w, d->wg);
        free(d);
        return NULL;
    }
    d->sock = &d->raw.base;
    if (wp_raw_socket_accept(&d->raw, server) != 0) {
        d->closed_handles = 2; /* timers never initialised */
        d->closing = true;
        wp_tsock_close(d->sock);
        return NULL;
    }
    uv_timer_init(&w->loop, &d->idle_timer);
    uv_timer_init(&w->loop, &d->rq_timer);
    d->idle_timer.data = d->rq_timer.data = d;
    d->idle_timer.timer_cb = on_idle_timeout;
    d->rq_timer.timer_cb = on_rq_timeout;
    d->id = atomic_fetch_add(w->conn_ids, 1);
    socket_addresses(d, sock);
    atomic_fetch_add_explicit(&w->nconns, 1, memory_order_relaxed);
    d->next = w->conns;
    if (w->conns)
        w->conns->prev = d;
    w->conns = d;
    WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id, "new connection from %s", d->remote);
    return d;
}

/* ---------- the HTTP filter chain's callbacks (proxy/http/filter.h) ---------- */

/* The request's fields as the filters see them. */
static wp_filter_headers request_headers(wp_stream *s)
{
    return (wp_filter_headers){s->hdrs, s->req.nheaders, 0};
}

static void fcb_continue_decoding(wp_stream *s)
{
    wp_filter_headers h = request_headers(s);
    wp_fchain_continue_decoding(&s->fcs, s, &filter_cbs, &h);
}

/* The connection manager never holds a response for an encoder filter (encode_stopped): there
 * is nothing to resume but the chain's own position. */
static void fcb_continue_encoding(wp_stream *s)
{
    wp_filter_headers h = {s->resp_hdrs, s->nresp_hdrs, s->si.response_code};
    wp_fchain_continue_encoding(&s->fcs, s, &filter_cbs, &h);
}

static const wp_route *fcb_route(wp_stream *s)
{
    wp_cached_route_refresh(s);
    return s->route;
}

static const wp_vhost *fcb_vhost(wp_stream *s)
{
    wp_cached_route_refresh(s);
    return s->vhost;
}

static int fcb_cluster(wp_stream *s)
{
    wp_cached_route_refresh(s);
    return s->cluster;
}

/* clearRouteCache: the next lookup (or the router) chooses the route again. */
static void fcb_clear_route_cache(wp_stream *s)
{
    wp_cached_route_clear(s);
}

static void fcb_request(wp_stream *s, wp_route_req *rq)
{
    wp_cached_route_request(s, rq);
}

static wp_stream_info *fcb_stream_info(wp_stream *s)
{
    return &s->si;
}

static uv_loop_t *fcb_dispatcher(wp_stream *s)
{
    return &s->d->w->loop;
}

static wp_regex_ctx *fcb_regex(wp_stream *s)
{
    return &s->d->w->rx;
}

static uint64_t fcb_random(wp_stream *s)
{
    return wp_rand(s->d->w);
}

static struct wp_stats_shard *fcb_stats(wp_stream *s)
{
    return s->d->w->stats;
}

static uint32_t fcb_cluster_grpc_stat(wp_stream *s, int cluster, int which)
{
    return wp_pstats_grpc_slot(wp_stream_gen(s)->pstats, s->cfg, cluster, which);
}

static uint64_t fcb_connection_id(wp_stream *s)
{
    return s->d->id;
}

/* A filter's timer is the stream's try deadline: free while decoding is stopped before the
 * router (filter.h). */
static void fcb_arm_timer(wp_stream *s, uint64_t ms)
{
    wp_dconn_set_try_deadline(s->d, ms);
}

static void fcb_disarm_timer(wp_stream *s)
{
    wp_dconn_clear_try_deadline(s->d);
}

/* The stream's deadline: request_timeout until a filter (the router) takes it over. */
static void fcb_arm_deadline(wp_stream *s, uint64_t ms)
{
    wp_dconn_set_deadline(s->d, ms);
}

static void fcb_disarm_deadline(wp_stream *s)
{
    wp_dconn_clear_deadline(s->d);
}

static void fcb_continue_reading(wp_stream *s)
{
    dconn_kick(s->d);
}

static void fcb_reset_stream(wp_stream *s)
{
    wp_dconn_close(s->d);
}

static int resp_headers(wp_stream *s, const h1_message *m, const char *raw, size_t raw_len);
static int resp_body(wp_stream *s, const char *data, size_t len);
static int resp_flush_head(wp_stream *s);
static void resp_done(wp_stream *s);
static void body_written(wp_stream *s);
static const char *fcb_decoding_buffer(wp_stream *s, size_t *len);
static void fcb_drain_decoding_buffer(wp_stream *s);

static const wp_filter_callbacks filter_cbs = {
    .send_local_reply = stream_local_reply,
    .send_local_reply_grpc = stream_local_reply_grpc,
    .continue_decoding = fcb_continue_decoding,
    .continue_encoding = fcb_continue_encoding,
    .route = fcb_route,
    .vhost = fcb_vhost,
    .cluster = fcb_cluster,
    .clear_route_cache = fcb_clear_route_cache,
    .request = fcb_request,
    .stream_info = fcb_stream_info,
    .dispatcher = fcb_dispatcher,
    .regex = fcb_regex,
    .random = fcb_random,
    .stats = fcb_stats,
    .cluster_grpc_stat = fcb_cluster_grpc_stat,
    .connection_id = fcb_connection_id,
    .arm_timer = fcb_arm_timer,
    .disarm_timer = fcb_disarm_timer,
    .arm_deadline = fcb_arm_deadline,
    .disarm_deadline = fcb_disarm_deadline,
    .encode_headers = resp_headers,
    .encode_data = resp_body,
    .encode_flush_head = resp_flush_head,
    .encode_complete = resp_done,
    .decoding_buffer = fcb_decoding_buffer,
    .drain_decoding_buffer = fcb_drain_decoding_buffer,
    .request_body_written = body_written,
    .continue_reading = fcb_continue_reading,
    .reset_stream = fcb_reset_stream,
};

/* An encoder filter stopped the response: weft's connection manager does not hold a response
 * for a filter (none of its filters stops encoding), so the stream is reset. */
static void encode_stopped(wp_stream *s)
{
    WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "an encoder filter stopped the response: resetting the stream");
    wp_dconn_close(s->d);
}

/* The gRPC form of a local reply (Envoy's Utility::prepareLocalReply for a gRPC request,
 * http/grpc_http.h): content-type, grpc-status and grpc-message (n fields, their bytes in
 * the stream's buffers, which outlive the reply for the access log); n = 0 for a request
 * that is not gRPC. */
typedef struct lr_grpc {
    h1_header f[3];
    size_t n;
} lr_grpc;

/* Whether s's request is gRPC (Grpc::Common::isGrpcRequestHeaders: its head was parsed and
 * its content-type is application/grpc[+...]). */
static bool is_grpc(const wp_stream *s)
{
    if (!s->si.request)
        return false;
    const h1_header *h = h1_find_header(s->req.headers, s->req.nheaders, "content-type");
    return h && wf_grpc_content_type(h->value.p, h->value.len);
}

/* Fills g for s's local reply (status, explicit grpc_status or -1, body of blen bytes);
 * returns -1 when out of memory. grpc-message: the body percent-encoded without one trailing
 * '\n', only when it is not empty and the request is not a HEAD. */
static int lr_grpc_fields(wp_stream *s, int status, int grpc_status, const char *body, size_t blen,
                          lr_grpc *g)
{
    g->n = 0;
    if (!is_grpc(s))
        return 0;
    int code = grpc_status >= 0 ? grpc_status : wf_grpc_http_to_status(status);
    int len = snprintf(s->grpc_status_buf, sizeof s->grpc_status_buf, "%d", code);
    g->f[g->n++] = (h1_header){{"content-type", 12}, {"application/grpc", 16}};
    g->f[g->n++] = (h1_header){{"grpc-status", 11}, {s->grpc_status_buf, (size_t)len}};
    if (blen && body[blen - 1] == '\n')
        blen--;
    if (!blen || wp_stream_is_head(s))
        return 0;
    wf_strbuf_reset(&s->grpc_msg);
    char chunk[3 * 256 + 1];
    for (size_t off = 0; off < blen; off += 256) {
        size_t n = blen - off < 256 ? blen - off : 256;
        size_t e = wf_grpc_message_percent(body + off, n, chunk, sizeof chunk);
        wf_strbuf_append(&s->grpc_msg, chunk, e);
    }
    if (wf_strbuf_failed(&s->grpc_msg))
        return -1;
    g->f[g->n++] = (h1_header){{"grpc-message", 12}, {s->grpc_msg.data, s->grpc_msg.len}};
    return 0;
}

/* A local reply's head through the encoder filters (Envoy's sendLocalReply encodes through the
 * whole encoder chain): they see its content-type and content-length, or a gRPC reply's
 * fields (g) with :status 200 and the end of the stream. Returns -1 when one stopped (the
 * connection is closed). */
static int local_reply_encode(wp_stream *s, int status, size_t blen, const lr_grpc *g)
{
    char clen[24];
    h1_header h[3];
    size_t n = 0;
    if (g->n) {
        memcpy(h, g->f, g->n * sizeof(h[0]));
        n = g->n;
    } else {
        if (blen)
            h[n++] = (h1_header){{"content-type", 12}, {"text/plain", 10}};
        h[n++] = (h1_header){{"content-length", 14}, {clen, wp_u64_str(clen, blen)}};
    }
    wp_filter_headers fh = {h, n, status};
    if (wp_fchain_local_reply(&s->fcs, s, &filter_cbs, &fh, blen == 0) == WP_FCHAIN_DONE)
        return 0;
    encode_stopped(s);
    return -1;
}

/* ---------- streams ---------- */

/* Moves a gauge of this connection from one stat slot to another (a listener's stat prefix
 * changed with a config update). */
static void move_gauge(wp_dconn *d, uint32_t from, uint32_t to)
{
    if (from != to) {
        wp_stat_add(d->w->stats, from, -1);
        wp_stat_add(d->w->stats, to, 1);
    }
}

/* A new config was applied since the connection's last request: its next request uses the
 * listener of the same name in the new snapshot, and the chain the connection matches there
 * (route, cluster, endpoint and connection manager updates reach open connections, as RDS,
 * CDS and EDS updates do in Envoy). The transport socket (a TLS session, its stats slots) and
 * the network filters keep the snapshot they were made from: the connection holds it
 * (sock_wg) until it closes. When the listener is gone, or no chain of it matches the
 * connection any more (or one whose transport differs: plaintext against TLS), the
 * connection stays on its old snapshot and closes after this request (it drains). */
static void dconn_follow_config(wp_dconn *d)
{
    wp_worker *w = d->w;
    const wp_config *c = w->cfg;
    for (size_t i = 0; i < c->nlisteners; i++) {
        if (strcmp(c->listeners[i].name, d->listener->name) != 0)
            continue;
        wp_lf_socket tmp;
        const wp_filter_chain *fc = wp_listener_find_chain(&c->listeners[i], conn_socket(d, &tmp));
        if (!fc || !fc->hcm || (fc->tls != NULL) != (d->chain->tls != NULL))
            break; /* the connection's transport no longer fits a chain: it drains */
        const wp_hstats *hs = &w->wg->gen->pstats->hcms[fc->hcm->index];
        const wp_lstats *ls = &w->wg->gen->pstats->listeners[i];
        int active = d->h2 ? WP_S_downstream_cx_http2_active : WP_S_downstream_cx_http1_active;
        move_gauge(d, d->hs->slot[WP_S_downstream_cx_active], hs->slot[WP_S_downstream_cx_active]);
        move_gauge(d, d->hs->slot[active], hs->slot[active]);
        move_gauge(d, d->ls->slot[WP_LS_downstream_cx_active],
                   ls->slot[WP_LS_downstream_cx_active]);
        d->listener = &c->listeners[i];
        d->chain = fc;
        d->hcm = fc->hcm;
        d->hs = hs;
        d->ls = ls;
        wp_wgen *old = d->wg;
        d->wg = w->wg;
        wp_wgen_use(d->wg);
        if (!d->sock_wg)
            d->sock_wg = old; /* the transport's generation: its reference is kept */
        else
            wp_wgen_release(w, old);
        return;
    }
    d->close_after = true;
}

static wp_stream *stream_new(wp_dconn *d)
{
    wp_worker *w = d->w;
    wp_stream *s = w->free_streams;
    if (s) {
        w->free_streams = s->next_free;
        w->nfree_streams--;
        wf_strbuf_reset(&s->extra);
        wf_strbuf_reset(&s->grpc_msg);
        wf_strbuf_reset(&s->xff);
        wf_strbuf_reset(&s->xfcc);
        wf_strbuf_reset(&s->trl);
        wf_strbuf_reset(&s->up_head);
        wf_strbuf_reset(&s->resp_head);
        wf_strbuf_reset(&s->log_head);
    } else if (!(s = malloc(sizeof(*s)))) {
        return NULL;
    } else {
        memset(&s->extra, 0, sizeof(s->extra));
        memset(&s->grpc_msg, 0, sizeof(s->grpc_msg));
        memset(&s->xff, 0, sizeof(s->xff));
        memset(&s->xfcc, 0, sizeof(s->xfcc));
        memset(&s->trl, 0, sizeof(s->trl));
        memset(&s->up_head, 0, sizeof(s->up_head));
        memset(&s->resp_head, 0, sizeof(s->resp_head));
        memset(&s->log_head, 0, sizeof(s->log_head));
        s->path_buf = NULL;
        s->path_cap = 0;
    }
    memset(s, 0, WP_STREAM_RESET_BYTES); /* the header arrays and buffers need no zeroing */
    if (d->wg != w->wg)
        dconn_follow_config(d);
    s->d = d;
    s->cfg = d->wg->gen->cfg;
    s->cluster = -1;
    s->si.connection_id = d->id;
    s->si.stream_id = atomic_fetch_add(w->stream_ids, 1);
    s->si.start_time_us = wp_wall_us(w);
    s->si.start_ns = now_ns(d);
    s->si.downstream_local = d->local;
    s->si.downstream_remote = d->remote;
    s->si.downstream_direct_remote = d->remote;
    /* the codec's protocol until the request line says which (Envoy's stream info takes the
     * codec's when the stream is created, so a codec error's log line shows HTTP/1.1) */
    s->si.protocol = d->parent ? "HTTP/2" : "HTTP/1.1";
    const wp_tsock_ssl *ssl = wp_tsock_ssl_info(d->sock);
    if (ssl) { /* TLS: its facts for the access log (the socket outlives the stream) */
        s->si.requested_server_name = ssl->sni;
        s->si.downstream_peer_uri_san = ssl->peer_uri_sans;
        s->si.downstream_local_uri_san = ssl->local_uri_sans;
        s->si.downstream_tls_version = ssl->version;
        s->si.downstream_tls_cipher = ssl->cipher;
        s->si.downstream_peer_subject = ssl->peer_subject;
    }
    /* the parser lives with the stream: an idle connection holds none */
    /* five spare slots: a generated x-request-id, the Host of an absolute-form target, an
     * x-forwarded-for, an x-envoy-internal and an x-forwarded-client-cert the connection
     * manager adds */
    h1_parser_init(&s->parser, H1_REQUEST, s->hdrs,
                   d->hcm->max_headers_count < WP_MAX_HEADERS - 5 ? d->hcm->max_headers_count
                                                                  : WP_MAX_HEADERS - 5,
                   (size_t)d->hcm->max_request_headers_kb * 1024);
    /* the HCM's filters, with their slots in the stream (Envoy creates them with the stream) */
    wp_fchain_start(&s->fcs, d->hcm->filter_chain, s->fslots, s, &filter_cbs);
    d->stream = s;
    /* the request begins with its first byte: Envoy's codec creates the stream then, and the
     * connection manager counts it and arms request_timeout (HCM docs: "activated when the
     * request is initiated") */
    wp_hcm_stat(d, WP_S_downstream_rq_total, 1);
    wp_hcm_stat(d, d->parent ? WP_S_downstream_rq_http2_total : WP_S_downstream_rq_http1_total, 1);
    wp_hcm_stat(d, WP_S_downstream_rq_active, 1);
    if (d->hcm->request_timeout_ms)
        wp_dconn_set_deadline(d, d->hcm->request_timeout_ms);
    arm_idle(d);
    return s;
}

static void stream_free(wp_stream *s)
{
    wp_worker *w = s->d->w;
    if (s->head != s->head_inline)
        free(s->head);
    if (s->resp_copy != s->resp_inline)
        free(s->resp_copy);
    if (w->nfree_streams < 64 && s->up_head.cap <= 16384 && s->resp_head.cap <= 16384 &&
        s->log_head.cap <= 16384 && s->path_cap <= 16384) {
        s->next_free = w->free_streams;
        w->free_streams = s;
        w->nfree_streams++;
        return;
    }
    wp_stream_destroy(s);
}

/* The end of the loop iteration in which the stream ended (net/deferred.h). */
static void stream_release(wp_deferred_item *it)
{
    stream_free((wp_stream *)(void *)((char *)it - offsetof(wp_stream, dd)));
}

void wp_stream_destroy(wp_stream *s)
{
    wf_strbuf_free(&s->up_head);
    wf_strbuf_free(&s->resp_head);
    wf_strbuf_free(&s->log_head);
    wf_strbuf_free(&s->extra);
    wf_strbuf_free(&s->grpc_msg);
    wf_strbuf_free(&s->xff);
    wf_strbuf_free(&s->xfcc);
    wf_strbuf_free(&s->trl);
    free(s->path_buf);
    free(s);
}

/* Whether the whole request has been read: its end was parsed, or it has no body (Envoy's
 * codec ends such a stream with its headers), so the connection can carry the next one. */
static bool request_received(const wp_stream *s)
{
    return s->req_complete || (s->si.request && s->req.framing == H1_BODY_NONE && !s->req.upgrade);
}

/* The response head goes downstream: counted then, as Envoy's connection manager counts
 * it when it encodes the headers (chargeStats), so a response cut short is counted too; a
 * response to a request not read whole also counts downstream_rq_response_before_rq_complete
 * (ActiveStream::encodeHeaders). */
static void count_response(wp_stream *s)
{
    int c = s->si.response_code;
    if (s->charged)
        return;
    s->charged = true;
    wp_hcm_stat(s->d, WP_S_downstream_rq_completed, 1);
    if (c >= 100 && c < 600)
        wp_hcm_stat(s->d, WP_S_downstream_rq_1xx + (c / 100 - 1), 1);
    if (!request_received(s))
        wp_hcm_stat(s->d, WP_S_downstream_rq_response_before_rq_complete, 1);
}

static void write_access_logs(wp_stream *s)
{
    const wp_hcm *h = s->d->hcm;
    if (h->naccess_logs == 0 || !s->d->w->alog)
        return;
    /* the request as the router left it (rewritten path and Host, added fields) */
    wp_fchain_notify(&s->fcs, s, WP_FCHAIN_EV_LOG_VIEW);
    wp_alog_emit(h->access_logs, h->naccess_logs, &s->si, s->d->w->alog);
}

/* The stream ends: cancel what is left upstream, log, count; it is released (to the free
 * list) at the end of the loop iteration, so callers up the stack may still look at it. */
static void stream_finish(wp_stream *s)
{
    wp_dconn *d = s->d;
    s->si.end_ns = now_ns(d);
    wp_pstats_stream_done(d->w->stats, d->wg->gen->pstats, d->hs, s->cluster, d->hcm->dynamic_stats,
                          &s->si);
    wp_dconn_clear_deadline(d);
    wp_dconn_clear_try_deadline(d);
    d->dur_deadline = 0;
    /* the router (last) gives its upstream request up, ends its retry state, logs URX */
    wp_fchain_stream_complete(&s->fcs, s, &filter_cbs);
    wp_hcm_stat(s->d, WP_S_downstream_rq_active, -1);
    if (s->si.request || s->si.response_code) {
        write_access_logs(s);
        if (wp_fring_failed(&s->si)) /* admin /failed_requests; a success reads no clock */
            wp_fring_record(&d->w->failed, &s->si, wp_wall_us(d->w));
    }
    wp_fchain_log(&s->fcs, s, &filter_cbs); /* the filters' access-log hand-off (istio.stats) */
    wp_fchain_destroy(&s->fcs, s, &filter_cbs);
    WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, d->id, s->si.stream_id, "stream complete (%d)",
                  s->si.response_code);
    d->stream = NULL;
    wp_deferred_delete(&d->w->deferred, &s->dd, stream_release);
}

/* Response complete and written: end the stream and go on with the connection. */
static void stream_complete(wp_stream *s)
{
    wp_dconn *d = s->d;
    bool close = d->close_after || s->resp_close || !s->req.keep_alive || !request_received(s);
    stream_finish(s);
    if (close || d->w->draining) {
        wp_dconn_close(d);
        return;
    }
    arm_idle(d);
    if (!d->in_process) /* else the parsing pass that answered goes on with the next request */
        process(d);
    start_reading(d);
}

static void on_dwrite(void *owner, int status)
{
    wp_dconn *d = owner;
    d->writing = false;
    if (d->closing)
        return;
    if (status < 0) {
        wp_dconn_close(d);
        return;
    }
    if (d->mux) {
        d->mux->on_written(d);
        return;
    }
    wp_stream *s = d->stream;
    if (!s)
        return;
    s->si.last_downstream_tx_ns = now_ns(d);
    if (s->resp_done) {
        stream_complete(s);
        return;
    }
    /* the router reads its upstream again */
    wp_fchain_notify(&s->fcs, s, WP_FCHAIN_EV_BELOW_LOW_WATERMARK);
}

/* Writes bufs downstream. Returns 0 written, 1 pending, -1 failed (connection closed). */
static int dwrite(wp_dconn *d, uv_buf_t *bufs, unsigned n)
{
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    if (d->stream) {
        if (!d->stream->si.first_downstream_tx_ns)
            d->stream->si.first_downstream_tx_ns = now_ns(d);
        d->stream->si.wire_bytes_sent += total;
    }
    if (!d->parent)
        wp_hcm_stat(d, WP_S_downstream_cx_tx_bytes_total, (int64_t)total);
    d->last_activity = uv_now(&d->w->loop);
    int r = wp_tsock_write(d->sock, bufs, n);
    if (r < 0) {
        wp_dconn_close(d);
        return -1;
    }
    d->writing = r == 1;
    if (r == 0 && d->stream)
        d->stream->si.last_downstream_tx_ns = now_ns(d);
    return r;
}

/* ---------- responses ---------- */

/* The date field (Envoy's HCM sets it on every response), formatted once per second per
 * worker. */
static void add_date(wp_worker *w, wp_hdr_list *l)
{
    time_t t = time(NULL);
    if (t != w->date_sec || !w->date_len) {
        struct tm tm;
        gmtime_r(&t, &tm);
        w->date_len =
            strftime(w->date_line, sizeof(w->date_line), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        w->date_sec = t;
    }
    WP_HDR_LIST_ADD_LIT(l, "date", w->date_line, w->date_len);
}

/* The header ops that apply to s's response, most specific first; what the HTTP filters'
 * encode_headers added (e.g. Istio's metadata exchange) last. */
static void resp_ops(const wp_stream *s, const wp_header_ops *out[WP_HOPS_LEVELS], size_t *n)
{
    *n = 0;
    /* the router's (a fault filter's reply has none) */
    if (s->route && wp_fchain_terminal_decoding(&s->fcs)) {
        const wp_route_config *rc = s->d->hcm->route_config;
        if (s->weighted >= 0)
            out[(*n)++] = &s->route->weighted[s->weighted].resp;
        out[(*n)++] = &s->route->resp;
        if (s->vhost)
            out[(*n)++] = &s->vhost->resp;
        out[(*n)++] = &rc->resp;
    }
    size_t nf;
    const wp_header_ops *const *fops = wp_fchain_response_ops(&s->fcs, &nf);
    for (size_t i = 0; i < nf; i++)
        out[(*n)++] = fops[i];
    *n = wp_hops_compact(out, *n);
}

/* Ends a response head's list with date and server and encodes it into s->resp_head: status,
 * the fields (the codec's framing fields before l->e[framing_at]), framing (close: the
 * connection closes after the response). Returns -1 (connection closed) when the head cannot be
 * encoded (out of memory, a list overflowed). */
static int encode_head(wp_stream *s, int status, wp_hdr_list *l, size_t framing_at,
                       wp_h1_framing framing)
{
    wp_dconn *d = s->d;
    add_date(d->w, l);
    WP_HDR_LIST_ADD_LIT(l, "server", d->hcm->server_name, strlen(d->hcm->server_name));
    s->si.server_name = d->hcm->server_name;
    wp_codec_response_head h = {status, l, framing_at, framing, s->req.version_minor};
    wf_strbuf_reset(&s->resp_head);
    if (wp_h1_encode_response_head(&s->resp_head, &h) != 0) {
        wp_dconn_close(d);
        return -1;
    }
    return 0;
}

/* Envoy's sendLocalReply on stream s: status, explicit gRPC status (-1: mapped from status),
 * body (may be ""), details (static), flag (wp_response_flag) or -1. A gRPC request gets the
 * trailers-only gRPC form (lr_grpc_fields): :status 200 (also the access log's response_code,
 * as in Envoy), no body. */
static void local_reply(wp_stream *s, int status, int grpc_status, const char *body,
                        const char *details, int flag)
{
    wp_dconn *d = s->d;
    if (flag >= 0)
        wp_si_set_flag(&s->si, (wp_response_flag)flag);
    s->si.details = details;
    if (s->resp_started) {
        /* Envoy resets the stream when the response already started */
        wp_hcm_stat(s->d, WP_S_rq_reset_after_downstream_response_started, 1);
        wp_dconn_close(d);
        return;
    }
    wp_fchain_notify(&s->fcs, s, WP_FCHAIN_EV_LOCAL_REPLY); /* the router cancels upstream */
    s->local_reply = true;
    s->resp_started = true;
    /* the connection closes after the answer when the request was not read whole, and after
     * any 400 (Envoy's ActiveStream::onLocalReply on HTTP/1: saw_connection_close_, since
     * stream_error_on_invalid_http_message is off) */
    if (!request_received(s) || d->peer_closed || status == 400)
        d->close_after = true;
    size_t blen = body ? strlen(body) : 0;
    lr_grpc g;
    if (lr_grpc_fields(s, status, grpc_status, body, blen, &g) != 0) {
        wp_dconn_close(d);
        return;
    }
    if (g.n) { /* trailers-only: the body went into grpc-message */
        status = 200;
        blen = 0;
    }
    s->si.response_code = status;
    if (local_reply_encode(s, status, blen, &g) != 0)
        return;
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    for (size_t i = 0; i < g.n; i++)
        wp_hdr_list_add_field(&l, &g.f[i]);
    if (blen)
        WP_HDR_LIST_ADD_LIT(&l, "content-type", "text/plain", 10);
    /* a gRPC reply too: Envoy's HTTP/1 codec adds content-length: 0 to a headers-only
     * response (the HTTP/2 side turns it into one HEADERS frame with END_STREAM) */
    char clen[WP_U64_STR_MAX], attempts[WP_U64_STR_MAX];
    WP_HDR_LIST_ADD_LIT(&l, "content-length", clen, wp_u64_str(clen, blen));
    if (s->extra_resp.name.p)
        wp_hdr_list_add_field(&l, &s->extra_resp);
    /* the router's local replies carry the attempt count too (Envoy's router adds it in
     * the modify-headers hook of every local reply it sends for a route entry; its count
     * starts at 1 even when no upstream was tried) */
    if (wp_fchain_terminal_decoding(&s->fcs) && s->route && s->route->action == WP_ACT_ROUTE &&
        s->vhost && s->vhost->include_attempt_count_in_response)
        WP_HDR_LIST_ADD_LIT(&l, "x-envoy-attempt-count", attempts,
                            wp_u64_str(attempts, s->si.attempt_count ? s->si.attempt_count : 1));
    const wp_header_ops *ops[WP_HOPS_LEVELS];
    size_t nops;
    resp_ops(s, ops, &nops);
    wp_hops_add(&l, ops, nops, NULL, 0);
    if ((nops || g.n) && d->hcm->naccess_logs) { /* %RESP()%, %GRPC_STATUS% see them too */
        memcpy(s->resp_hdrs, g.f, g.n * sizeof(g.f[0]));
        s->nresp_hdrs = wp_hops_view(s->resp_hdrs, g.n, WP_MAX_HEADERS, ops, nops);
        s->si.response_headers = s->resp_hdrs;
        s->si.nresponse_headers = s->nresp_hdrs;
    }
    wp_h1_framing fr = {.close = d->close_after || !s->req.keep_alive};
    if (encode_head(s, status, &l, l.n, fr) != 0)
        return;
    s->si.bytes_sent = blen;
    s->resp_done = true;
    count_response(s);
    WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, d->id, s->si.stream_id,
                  "Sending local reply with details %s", details ? details : "-");
    uv_buf_t bufs[2] = {uv_buf_init(s->resp_head.data, (unsigned)s->resp_head.len),
                        uv_buf_init((char *)(body ? body : ""), (unsigned)blen)};
    int r = dwrite(d, bufs, blen ? 2 : 1);
    if (r == 0)
        stream_complete(s);
}

static void stream_local_reply(wp_stream *s, int status, const char *body, const char *details,
                               int flag)
{
    local_reply(s, status, -1, body, details, flag);
}

static void stream_local_reply_grpc(wp_stream *s, int status, int grpc_status, const char *body,
                                    const char *details, int flag)
{
    local_reply(s, status, grpc_status, body, details, flag);
}

static int resp_headers(wp_stream *s, const h1_message *m, const char *raw, size_t raw_len)
{
    wp_dconn *d = s->d;
    s->si.first_upstream_rx_ns = now_ns(d);
    /* The fields point into the upstream's read buffer while the downstream head is built;
     * only access logs (%RESP()%, read when the stream ends) need a copy that outlives it. */
    bool keep = d->hcm->naccess_logs > 0;
    ptrdiff_t off = 0;
    if (keep) {
        s->resp_copy = raw_len <= sizeof(s->resp_inline) ? s->resp_inline : malloc(raw_len);
        if (!s->resp_copy) {
            wp_dconn_close(d);
            return 0;
        }
        memcpy(s->resp_copy, raw, raw_len);
        off = s->resp_copy - raw;
    }
    s->nresp_hdrs = m->nheaders < WP_MAX_HEADERS ? m->nheaders : WP_MAX_HEADERS;
    for (size_t i = 0; i < s->nresp_hdrs; i++) {
        s->resp_hdrs[i] = m->headers[i];
        s->resp_hdrs[i].name.p += off;
        s->resp_hdrs[i].value.p += off;
    }
    s->si.response_headers = s->resp_hdrs;
    s->si.nresponse_headers = s->nresp_hdrs;
    /* the codec's framing of the answer (chunked to HTTP/1.1, until close to HTTP/1.0) */
    wp_h1_framing fr =
        wp_h1_response_framing(m->status, m->framing, wp_stream_is_head(s), s->req.version_minor);
    bool upgrade = fr.upgrade, bodiless = fr.bodiless;
    /* the encoder filters (e.g. Istio's upstream peer discovery) see the upstream's fields */
    wp_filter_headers fh = {s->resp_hdrs, s->nresp_hdrs, m->status};
    if (wp_fchain_encode_headers(&s->fcs, s, &filter_cbs, &fh, bodiless) != WP_FCHAIN_DONE) {
        encode_stopped(s);
        return 0;
    }
    s->si.response_code = m->status;
    s->si.details = "via_upstream";
    s->resp_started = true;
    s->resp_chunked = fr.chunked;
    s->resp_close = fr.close; /* an upstream close does not close the downstream */
    if (d->w->draining || !s->req.keep_alive || d->close_after)
        s->resp_close = true;
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    const wp_header_ops *ops[WP_HOPS_LEVELS];
    size_t nops;
    resp_ops(s, ops, &nops);
    bool no_cl = wp_h1_drops_content_length(m->status); /* Envoy's codec removes it */
    for (size_t i = 0; i < s->nresp_hdrs; i++) {
        const h1_header *h = &s->resp_hdrs[i];
        if (wp_h1_response_field_replaced(&h->name, upgrade) ||
            wp_hops_drops(ops, nops, &h->name) || (no_cl && WP_NAME_IS(&h->name, "content-length")))
            continue;
        wp_hdr_list_add_field(&l, h);
    }
    wp_hops_add(&l, ops, nops, s->resp_hdrs, s->nresp_hdrs);
    size_t framing_at = l.n; /* the codec's framing fields, then the proxy's own */
    uint64_t ust = (s->si.first_upstream_rx_ns - s->si.first_upstream_tx_ns) / 1000000;
    size_t ul = wp_u64_str(s->ust_buf, ust);
    if (!d->hcm->suppress_envoy_headers)
        WP_HDR_LIST_ADD_LIT(&l, "x-envoy-upstream-service-time", s->ust_buf, ul);
    char attempts[WP_U64_STR_MAX];
    if (s->vhost && s->vhost->include_attempt_count_in_response)
        WP_HDR_LIST_ADD_LIT(&l, "x-envoy-attempt-count", attempts,
                            wp_u64_str(attempts, s->si.attempt_count));
    if (keep && nops) /* %RESP()% sees the route's additions and removals, as in Envoy */
        s->nresp_hdrs = wp_hops_view(s->resp_hdrs, s->nresp_hdrs, WP_MAX_HEADERS, ops, nops);
    if (s->nresp_hdrs < WP_MAX_HEADERS) { /* seen by %RESP()% as Envoy's logs see it */
        h1_header *h = &s->resp_hdrs[s->nresp_hdrs++];
        h->name = (h1_str){"x-envoy-upstream-service-time", 29};
        h->value = (h1_str){s->ust_buf, ul};
    }
    s->si.nresponse_headers = s->nresp_hdrs;
    fr.close = s->resp_close;
    if (encode_head(s, m->status, &l, framing_at, fr) != 0)
        return 0;
    if (!keep) { /* the fields pointed into the upstream's buffer: nobody reads them later */
        s->si.response_headers = NULL;
        s->si.nresponse_headers = 0;
        s->nresp_hdrs = 0;
    }
    /* The head goes out with the first body bytes (one write for a small response), or
     * at the end of the router's parsing pass (resp_flush_head). */
    s->head_unsent = true;
    if (upgrade) {
        d->tunnel = true;
        wp_hcm_stat(s->d, WP_S_downstream_cx_upgrades_total, 1);
        return resp_flush_head(s) == 1 ? 1 : 0; /* pending: the router pauses its read */
    }
    return 0;
}

/* Adds the unsent head (if any) in front of bufs; returns the new count. */
static unsigned with_head(wp_stream *s, uv_buf_t *bufs, unsigned n)
{
    if (!s->head_unsent)
        return n;
    s->head_unsent = false;
    count_response(s);
    memmove(bufs + 1, bufs, n * sizeof(*bufs));
    bufs[0] = uv_buf_init(s->resp_head.data, (unsigned)s->resp_head.len);
    return n + 1;
}

static int resp_flush_head(wp_stream *s)
{
    if (!s->head_unsent)
        return 0;
    uv_buf_t bufs[1];
    unsigned n = with_head(s, bufs, 0);
    return dwrite(s->d, bufs, n);
}

static int resp_body(wp_stream *s, const char *data, size_t len)
{
    wp_dconn *d = s->d;
    if (len == 0)
        return 0;
    if (wp_fchain_encode_data(&s->fcs, s, &filter_cbs, data, len, false) != WP_FCHAIN_DONE) {
        encode_stopped(s);
        return -1;
    }
    s->si.bytes_sent += len;
    uv_buf_t bufs[4]; /* the head, then the codec's (chunk-size line, data, CRLF) */
    unsigned n = wp_h1_encode_data(bufs, s->resp_chunked, s->chunk_out, data, len);
    return dwrite(d, bufs, with_head(s, bufs, n));
}

static void resp_done(wp_stream *s)
{
    wp_dconn *d = s->d;
    s->si.last_upstream_rx_ns = now_ns(d);
    wp_fchain_result fr =
        s->si.nresponse_trailers
            ? wp_fchain_encode_trailers(&s->fcs, s, &filter_cbs, s->si.response_trailers,
                                        s->si.nresponse_trailers)
            : wp_fchain_encode_data(&s->fcs, s, &filter_cbs, NULL, 0, true);
    if (fr != WP_FCHAIN_DONE) {
        encode_stopped(s);
        return;
    }
    s->resp_done = true;
    uv_buf_t bufs[2];
    unsigned n = with_head(s, bufs, wp_h1_encode_end(bufs, s->resp_chunked));
    if (n && dwrite(d, bufs, n) != 0)
        return; /* pending: on_dwrite completes; failed: closed */
    if (!d->writing)
        stream_complete(s);
}

/* ---------- requests ---------- */

/* Copies the head (bytes [0, used) of buf) into the stream and rebases the message. */
static int keep_head(wp_stream *s, const char *buf, size_t used, const h1_message *m)
{
    s->head = used <= sizeof(s->head_inline) ? s->head_inline : malloc(used);
    if (!s->head)
        return -1;
    memcpy(s->head, buf, used);
    s->head_len = used;
    s->req = *m;
    s->req.headers = s->hdrs; /* the parser's field array */
    wp_h1_rebase(&s->req, s->head - buf);
    /* Envoy generates x-request-id when absent (and logs it): add it to the request as
     * received, so the router forwards it and %REQ(X-REQUEST-ID)% shows it. */
    if (s->d->hcm->generate_request_id && s->req.nheaders < WP_MAX_HEADERS &&
        !h1_find_header(s->hdrs, s->req.nheaders, "x-request-id")) {
        uuid4(s->d->w, s->request_id);
        h1_header *h = &s->hdrs[s->req.nheaders++];
        h->name = (h1_str){"x-request-id", 12};
        h->value = (h1_str){s->request_id, 36};
    }
    s->req.trailers = NULL;
    s->req.ntrailers = 0;
    s->si.request = &s->req;
    s->si.protocol = s->d->parent ? "HTTP/2" : m->version_minor ? "HTTP/1.1" : "HTTP/1.0";
    return 0;
}

/* ---------- path normalization (ConnectionManagerUtility::maybeNormalizePath) ---------- */

/* The stream's path buffer with room for need bytes (kept while the stream is reused, so a
 * worker in steady state does not allocate); NULL when out of memory. */
static char *path_room(wp_stream *s, size_t need)
{
    if (s->path_cap < need) {
        char *p = realloc(s->path_buf, need);
        if (!p)
            return NULL;
        s->path_buf = p;
        s->path_cap = need;
    }
    return s->path_buf;
}

/* UNESCAPE_AND_REDIRECT: 307 to the rewritten path, details path_normalization_failed (as
 * Envoy's sendLocalReply with the Location header). */
static void path_redirect(wp_stream *s)
{
    s->extra_resp = (h1_header){{"location", 8}, s->req.target};
    stream_local_reply(s, 307, "", "path_normalization_failed", -1);
}

/* normalize_path, merge_slashes and path_with_escaped_slashes_action (http/path_norm.h) on
 * the request's path before routing: the result is what routes match, what goes upstream
 * and what %REQ(:PATH)% logs. Returns 0 to go on, -1 when the stream was answered (400
 * path_normalization_failed, or the 307) or the connection closed (out of memory).
 * "OPTIONS *" is left alone (Envoy answers it before normalizing). */
static int normalize_path(wp_stream *s)
{
    const wp_hcm *h = s->d->hcm;
    wf_path_opts o = {h->normalize_path, h->merge_slashes, h->path_with_escaped_slashes_action};
    h1_str *t = &s->req.target;
    if (t->len == 0 || t->p[0] != '/' || !wf_path_needs_sanitize(&o, t->p, t->len))
        return 0;
    size_t cap = WF_PATH_SANITIZE_CAP(t->len), n = 0;
    char *buf = path_room(s, cap);
    int act = buf ? wf_path_sanitize(&o, t->p, t->len, buf, cap, &n) : -1;
    if (act < 0) {
        wp_dconn_close(s->d);
        return -1;
    }
    *t = (h1_str){buf, n};
    if (act == WF_PATH_CONTINUE)
        return 0;
    WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, s->d->id, s->si.stream_id,
                  "path normalization: %s '%.*s'", act == WF_PATH_REJECT ? "rejected" : "redirect",
                  (int)n, buf);
    /* counted as Envoy's ActiveStream::decodeHeaders counts them */
    if (act == WF_PATH_REDIRECT && !is_grpc(s)) {
        wp_hcm_stat(s->d, WP_S_downstream_rq_redirected_with_normalized_path, 1);
        path_redirect(s);
    } else {
        wp_hcm_stat(s->d, WP_S_downstream_rq_failed_path_normalization, 1);
        stream_local_reply(s, 400, "", "path_normalization_failed", -1);
    }
    return -1;
}

/* The request headers only internal requests may carry: what Envoy's
 * ConnectionManagerUtility::cleanInternalHeaders removes from external requests (the last
 * three only from edge requests, use_remote_address). */
static bool internal_only_header(const h1_str *n, bool edge)
{
    static const char *const names[] = {
        "x-envoy-retriable-status-codes", "x-envoy-retriable-header-names", "x-envoy-retry-on",
        "x-envoy-retry-grpc-on", "x-envoy-max-retries", "x-envoy-upstream-alt-stat-name",
        "x-envoy-upstream-rq-timeout-ms", "x-envoy-upstream-rq-per-try-timeout-ms",
        "x-envoy-upstream-rq-timeout-alt-response", "x-envoy-expected-rq-timeout-ms",
        "x-envoy-force-trace", "x-envoy-ip-tags", "x-envoy-original-url",
        "x-envoy-hedge-on-per-try-timeout",
        /* edge requests only */
        "x-envoy-decorator-operation", "x-envoy-downstream-service-cluster",
        "x-envoy-downstream-service-node"};
    if (n->len < 9 || strncasecmp(n->p, "x-envoy-", 8) != 0)
        return false;
    size_t count = sizeof(names) / sizeof(names[0]) - (edge ? 0 : 3);
    for (size_t i = 0; i < count; i++)
        if (strlen(names[i]) == n->len && strncasecmp(n->p, names[i], n->len) == 0)
            return true;
    return false;
}

/* mutateRequestHeaders after the internal/external decision: x-envoy-internal as received is
 * always removed and set to "true" for internal requests; external requests lose the headers
 * above (today's behaviour for Istio's sidecars: no x-forwarded-for, so external). */
static void mark_internal(wp_stream *s, bool internal, bool use_remote_address)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->req.nheaders; i++) {
        const h1_str *n = &s->hdrs[i].name;
        if (WP_NAME_IS(n, "x-envoy-internal") ||
            (!internal && internal_only_header(n, use_remote_address)))
            continue;
        if (kept != i)
            s->hdrs[kept] = s->hdrs[i];
        kept++;
    }
    s->req.nheaders = kept;
    if (internal && kept < WP_MAX_HEADERS)
        s->hdrs[s->req.nheaders++] =
            (h1_header){.name = {"x-envoy-internal", 16}, .value = {"true", 4}};
}

/* use_remote_address: the peer's IP appended to x-forwarded-for (created when absent) in the
 * stream's buffer, which may already hold the joined header. Returns -1 when out of memory
 * (the connection is closed). */
static int append_peer(wp_stream *s, h1_header *xff, const char *ip, size_t iplen)
{
    wf_strbuf *b = &s->xff;
    bool joined = xff && b->data && xff->value.p == b->data;
    if (!joined) {
        wf_strbuf_reset(b);
        if (xff)
            wf_strbuf_append(b, xff->value.p, xff->value.len);
    }
    if (b->len)
        wf_strbuf_putc(b, ',');
    wf_strbuf_append(b, ip, iplen);
    if (wf_strbuf_failed(b)) {
        wp_dconn_close(s->d);
        return -1;
    }
    if (!xff && s->req.nheaders < WP_MAX_HEADERS) {
        xff = &s->hdrs[s->req.nheaders++];
        xff->name = (h1_str){"x-forwarded-for", 15};
    }
    if (xff)
        xff->value = (h1_str){b->data, b->len};
    return 0;
}

/* x-forwarded-for, the downstream remote address and the internal/external decision, as
 * Envoy's connection manager (xff.h): repeated x-forwarded-for fields are first joined into
 * one (s->xff, kept while the stream is reused); with use_remote_address the peer is appended
 * to the request's header (the request then carries it: the router forwards it and
 * %REQ(X-FORWARDED-FOR)% logs it). Returns -1 when out of memory (the connection is closed). */
static int mutate_xff(wp_stream *s)
{
    const wp_hcm *h = s->d->hcm;
    if (wf_strbuf_failed(&s->xff)) /* an earlier request ran out of memory */
        wf_strbuf_free(&s->xff);
    wf_strbuf_free(&s->xfcc);
    int at = wp_xff_join(s->hdrs, &s->req.nheaders, &s->xff);
    if (at == -2) {
        wp_dconn_close(s->d);
        return -1;
    }
    h1_header *xff = at >= 0 ? &s->hdrs[at] : NULL;
    uint32_t hops = h->xff_num_trusted_hops;
    if (xff && (!h->use_remote_address || hops > 0) &&
        wp_xff_pick(xff->value.p, xff->value.len, h->use_remote_address ? hops - 1 : hops,
                    s->remote_buf) == 0)
        s->si.downstream_remote = s->remote_buf;
    const char *ip;
    size_t iplen;
    wp_xff_peer_ip(s->d->remote, &ip, &iplen);
    bool internal =
        wp_xff_internal_request(h->use_remote_address, hops, xff ? &xff->value : NULL, ip, iplen);
    if (h->use_remote_address && append_peer(s, xff, ip, iplen) != 0)
        return -1;
    mark_internal(s, internal, h->use_remote_address);
    return 0;
}

/* x-forwarded-client-cert as the HCM's forward_client_cert_details says (xfcc.h): this
 * connection's element is built once, by its first request that needs it. Returns -1 when
 * out of memory (the connection is closed). */
static int mutate_xfcc(wp_stream *s)
{
    wp_dconn *d = s->d;
    const wp_hcm *h = d->hcm;
    const wp_tsock_ssl *ssl = wp_tsock_ssl_info(d->sock);
    bool mtls = ssl && ssl->peer_certificate;
    bool element = mtls && (h->forward_client_cert == WP_FCC_APPEND_FORWARD ||
                            h->forward_client_cert == WP_FCC_SANITIZE_SET);
    if (element && !d->xfcc_built) {
        if (wp_xfcc_element(d->sock, ssl, h->client_cert_details, &d->xfcc) != 0) {
            wp_dconn_close(d);
            return -1;
        }
        d->xfcc_built = true;
    }
    if (wf_strbuf_failed(&s->xfcc)) /* an earlier request ran out of memory */
        wf_strbuf_free(&s->xfcc);
    if (wp_xfcc_mutate(h->forward_client_cert, mtls, s->hdrs, &s->req.nheaders, WP_MAX_HEADERS,
                       d->xfcc.data, d->xfcc.len, &s->xfcc) != 0) {
        wp_dconn_close(d);
        return -1;
    }
    return 0;
}

static void on_request_headers(wp_stream *s)
{
    wp_dconn *d = s->d;
    if (request_received(s)) /* a body-less request ends with its head (%REQUEST_DURATION%) */
        s->si.last_rx_ns = now_ns(d);
    s->req_chunked = s->req.framing == H1_BODY_CHUNKED;
    s->upgrade = s->req.upgrade;
    if (!s->req.keep_alive)
        d->close_after = true;
    WF_STREAM_LOG(WF_LC_http, WF_LOG_DEBUG, d->id, s->si.stream_id,
                  "request headers complete: %.*s %.*s", (int)s->req.method.len, s->req.method.p,
                  (int)s->req.target.len, s->req.target.p);
    if (wp_h1_server_origin_form(&s->req, WP_MAX_HEADERS) != 0) {
        d->close_after = true;
        stream_local_reply(s, 400, "Bad Request", "http1.invalid_url", WP_RF_DPE);
        return;
    }
    if (s->req.version_minor == 0 && !d->hcm->accept_http_10) {
        /* Envoy's HCM: HTTP/1.0 (or 0.9) without accept_http_10 is "Upgrade Required" */
        d->close_after = true;
        stream_local_reply(s, 426, "", "low_version", -1);
        return;
    }
    if (!h1_find_header(s->req.headers, s->req.nheaders, "host") && s->req.version_minor == 1) {
        d->close_after = true;
        stream_local_reply(s, 400, "missing required header: host", "missing_host_header", -1);
        return;
    }
    if (s->req.version_minor == 0 && !d->hcm->default_host_for_http_10 &&
        !h1_find_header(s->req.headers, s->req.nheaders, "host")) {
        /* Envoy's decodeHeaders: after default_host_for_http_10, a request still without Host
         * is answered 400 with an empty body, details missing_host_header */
        d->close_after = true;
        stream_local_reply(s, 400, "", "missing_host_header", -1);
        return;
    }
    if (normalize_path(s) != 0 || mutate_xff(s) != 0 || mutate_xfcc(s) != 0)
        return;
    if (s->req.expect_continue) {
        /* Envoy's HCM answers 100-continue itself and drops Expect upstream */
        uv_buf_t b = uv_buf_init(WP_H1_100_CONTINUE, WP_H1_100_CONTINUE_LEN);
        if (wp_tsock_try_write(d->sock, &b, 1) != WP_H1_100_CONTINUE_LEN) {
            wp_dconn_close(d);
            return;
        }
    }
    wp_cached_route_refresh(s); /* the route, before any filter (Envoy's cached route) */
    refresh_duration(s);
    /* the HTTP filters in order, the router last; a filter may stop (the fault filter's delay)
     * or answer instead (the stream then ended; net/deferred.h frees it after this pass). */
    wp_filter_headers h = request_headers(s);
    wp_fchain_decode_headers(&s->fcs, s, &filter_cbs, &h, request_received(s));
}

/* Envoy's ActiveStream::refreshDurationTimeout for s's route (one with max_stream_duration;
 * weft has no HCM-level max_stream_duration to fall back to): the request's grpc-timeout
 * when grpc_timeout_header_max is set (capped by it unless 0, less
 * grpc_timeout_header_offset, 0 at least), else max_stream_duration (0 or unset: none),
 * counted from the stream's start. */
static void refresh_duration(wp_stream *s)
{
    wp_dconn *d = s->d;
    const wp_route *r = s->route;
    d->dur_deadline = 0;
    if (!r || r->action != WP_ACT_ROUTE || !r->has_max_stream_duration)
        return;
    uint64_t t = 0;
    const h1_header *h = h1_find_header(s->req.headers, s->req.nheaders, "grpc-timeout");
    bool hdr = h && wf_grpc_timeout_parse(h->value.p, h->value.len, &t);
    if (!hdr || !r->has_grpc_timeout_header_max) {
        if (!r->has_msd_value || r->msd_ms == 0)
            return;
        t = r->msd_ms;
    } else {
        if (r->grpc_timeout_header_max_ms && t > r->grpc_timeout_header_max_ms)
            t = r->grpc_timeout_header_max_ms;
        if (t && r->grpc_timeout_header_offset_ms)
            t = r->grpc_timeout_header_offset_ms < t ? t - r->grpc_timeout_header_offset_ms : 0;
    }
    uint64_t now = uv_now(&d->w->loop), start = s->si.start_ns / 1000000u;
    d->dur_deadline = start + t > now ? start + t : now;
    if (!d->dur_deadline)
        d->dur_deadline = 1; /* 0 means none */
    arm_deadline(d, d->dur_deadline - now);
}

static void on_request_complete(wp_stream *s)
{
    s->req_complete = true;
    s->si.last_rx_ns = now_ns(s->d);
    if (!s->resp_done) /* the end of the request through the filters (the router's end) */
        wp_fchain_decode_data(&s->fcs, s, &filter_cbs, NULL, 0, true);
}

static void protocol_error(wp_dconn *d, wp_stream *s)
{
    h1_error e = s ? s->parser.error : H1_ERR_TRUNCATED;
    wp_hcm_stat(d, WP_S_downstream_cx_protocol_error, 1);
    WF_CONN_LOG(WF_LC_http, WF_LOG_DEBUG, d->id, "dispatch error: %s", h1_error_name(e));
    d->close_after = true;
    if (!s || s->resp_started) {
        wp_dconn_close(d);
        return;
    }
    s->req.keep_alive = false;
    /* Envoy's codec error reply: the status's text as the body (CodeUtility::toString) */
    int status = h1_error_status(e);
    stream_local_reply(s, status, h1s_reason(status), h1_error_details(e), WP_RF_DPE);
}

static void parse_buffered(wp_dconn *d);

/* ---------- the codec's request events (http/codec.h) ---------- */

/* One dispatch over a stream's bytes: the stream and the buffer they are in. */
typedef struct {
    wp_stream *s;
    const wp_buf *buf;
} codec_ctx;

static void cc_consumed(void *ctx, size_t n)
{
    wp_stream *s = ((codec_ctx *)ctx)->s;
    s->si.wire_bytes_received += n; /* the request's own bytes, head included */
    s->d->rstart += n;
}

static void cc_headers(void *ctx, const h1_message *m, const char *raw, size_t raw_len)
{
    wp_stream *s = ((codec_ctx *)ctx)->s;
    if (keep_head(s, raw, raw_len, m) != 0) {
        wp_dconn_close(s->d);
        return;
    }
    on_request_headers(s);
    /* trailers are stored after the head's fields: after the ones the connection manager
     * added too (x-request-id, x-forwarded-for, ...), with the same room */
    wp_h1_server_reserve_fields(&s->parser, s->req.nheaders);
}

static void cc_data(void *ctx, const char *data, size_t len)
{
    wp_stream *s = ((codec_ctx *)ctx)->s;
    s->si.bytes_received += len;
    if (s->resp_done || s->local_reply)
        return; /* answered already: the body is read and dropped */
    s->body_ptr = data;
    s->body_len = len;
    wp_fchain_decode_data(&s->fcs, s, &filter_cbs, s->body_ptr, s->body_len, false);
}

static void cc_trailers(void *ctx, const h1_header *t, size_t n)
{
    wp_stream *s = ((codec_ctx *)ctx)->s;
    if (!s->resp_done && !s->local_reply)
        wp_fchain_decode_trailers(&s->fcs, s, &filter_cbs, t, n);
}

static void cc_complete(void *ctx)
{
    on_request_complete(((codec_ctx *)ctx)->s);
}

/* A request with Upgrade: body-less from HTTP's view; the bytes wait for the tunnel. */
static void cc_upgraded(void *ctx)
{
    wp_stream *s = ((codec_ctx *)ctx)->s;
    if (!s->req_complete)
        on_request_complete(s);
}

static void cc_error(void *ctx, h1_error e)
{
    wp_stream *s = ((codec_ctx *)ctx)->s;
    (void)e; /* the stream's parser holds it (protocol_error reads it) */
    protocol_error(s->d, s);
}

/* The same stream goes on with the same buffer, neither paused nor answered. */
static bool cc_should_continue(void *ctx)
{
    const codec_ctx *c = ctx;
    const wp_stream *s = c->s;
    const wp_dconn *d = s->d;
    return !d->closing && d->rbuf == c->buf && d->stream == s && !d->tunnel && !s->body_ptr &&
           !s->req_complete;
}

static const wp_codec_server_callbacks codec_cbs = {
    .on_consumed = cc_consumed,
    .on_headers = cc_headers,
    .on_data = cc_data,
    .on_trailers = cc_trailers,
    .on_complete = cc_complete,
    .on_upgraded = cc_upgraded,
    .on_error = cc_error,
    .should_continue = cc_should_continue,
};

/* Runs the parser over the buffered bytes until it needs more or must wait; what the
 * router has to write upstream is written after each parsing pass. */
static void process(wp_dconn *d)
{
    for (;;) {
        d->in_process = true;
        parse_buffered(d);
        d->in_process = false;
        wp_stream *s = d->stream;
        if (d->closing || !s || !wp_fchain_dispatch_pending(&s->fcs))
            return;
        bool had_body = s->body_ptr != NULL;
        wp_fchain_notify(&s->fcs, s, WP_FCHAIN_EV_DISPATCH_DONE); /* the router writes now */
        if (d->stream != s || !had_body || s->body_ptr)
            return; /* nothing new to parse, or a write is pending */
    }
}

static void parse_buffered(wp_dconn *d)
{
    while (!d->closing && d->rbuf) {
        wp_stream *s = d->stream;
        if (d->tunnel) {
            if (s && !s->body_ptr && d->rstart < d->rlen) {
                /* the tunnel's bytes: one slice of the buffer, pinned until written upstream */
                s->body_ptr = d->rbuf->data + d->rstart;
                s->body_len = d->rlen - d->rstart;
                d->rstart = d->rlen;
            }
            if (s)
                wp_fchain_decode_data(&s->fcs, s, &filter_cbs, s->body_ptr, s->body_len, false);
            return;
        }
        if (s && (s->body_ptr || s->req_complete))
            return; /* waiting for an upstream write, or for the response */
        size_t avail = d->rlen - d->rstart;
        if (!s && avail == 0)
            break;
        if (!s && !(s = stream_new(d))) {
            wp_dconn_close(d);
            return;
        }
        /* the codec delivers this stream's events until it needs more bytes or the stream
         * waits (then the checks above run again: a new stream, a tunnel, a pause) */
        codec_ctx c = {s, d->rbuf};
        wp_codec_status st =
            wp_h1_server_dispatch(&s->parser, d->rbuf->data + d->rstart, avail, &codec_cbs, &c);
        if (st == WP_CODEC_NEED_MORE)
            goto more;
        if (st != WP_CODEC_PAUSED)
            return; /* upgraded (the bytes wait for the tunnel) or a protocol error */
    }
more:
    if (d->rbuf && d->rstart == d->rlen && !(d->stream && d->stream->body_ptr)) {
        /* everything consumed: give the buffer back (idle connections hold none) */
        wp_buf_put(d->w, d->rbuf);
        d->rbuf = NULL;
        d->rlen = d->rstart = 0;
    }
    if (d->rbuf && d->rlen == d->rbuf->cap && d->rstart == 0) {
        size_t limit = (size_t)d->hcm->max_request_headers_kb * 1024 + WP_HEAD_EXTRA;
        /* the parser could not consume anything from a full buffer of the maximum size: a
         * head or a trailer section over max_request_headers_kb */
        if (d->rbuf->cap >= limit && d->stream && !d->stream->req_complete &&
            !d->stream->body_ptr) {
            d->stream->parser.error = H1_ERR_HEADERS_TOO_LARGE;
            protocol_error(d, d->stream);
        }
    }
}

static void on_read(void *owner, ssize_t n)
{
    wp_dconn *d = owner;
    if (n < 0) {
        stop_reading(d);
        d->peer_closed = true;
        if (n == UV_ENOBUFS) { /* buffer full: wait until it drains */
            d->peer_closed = false;
            return;
        }
        wp_stream *s = d->stream;
        if (s && s->req_complete && !s->resp_done && !d->tunnel && n == UV_EOF && !s->si.request) {
            wp_dconn_close(d);
            return;
        }
        if (s && !s->req_complete && s->si.request) {
            /* the request was cut short: Envoy logs DC */
            wp_hcm_stat(s->d, WP_S_downstream_rq_rx_reset, 1);
        }
        wp_dconn_close(d);
        return;
    }
    d->rlen += (size_t)n;
    if (d->stream && d->tunnel) /* HTTP bytes are counted as the parser consumes them */
        d->stream->si.wire_bytes_received += (uint64_t)n;
    d->last_activity = uv_now(&d->w->loop);
    if (__builtin_expect(d->parent != NULL, 0)) { /* a stream: the HCM directly */
        process(d);
    } else {
        wp_hcm_stat(d, WP_S_downstream_cx_rx_bytes_total, n);
        wp_nf_chain_on_data(&d->nf, false);
    }
    if (!d->closing && d->rbuf && d->rlen == d->rbuf->cap && d->rstart == 0) {
        /* full: a head still arriving makes the buffer grow (on_alloc, up to the limit);
         * otherwise wait until the buffered bytes are consumed */
        /* a head or trailers still arriving make the buffer grow (on_alloc, up to the limit) */
        bool section_pending = d->stream && !d->stream->req_complete && !d->stream->body_ptr;
        if (!section_pending)
            stop_reading(d);
    } else if (!d->closing && d->stream && d->stream->body_ptr && d->rbuf &&
               d->rlen == d->rbuf->cap) {
        stop_reading(d);
    }
}

/* decodingBuffer: the pinned slice of the read buffer, NULL when none. */
static const char *fcb_decoding_buffer(wp_stream *s, size_t *len)
{
    *len = s->body_len;
    return s->body_ptr;
}

/* The slice was taken (copied, or written at once): it no longer pins the read buffer; the
 * dispatch that handed it on (or request_body_written) parses on. */
static void fcb_drain_decoding_buffer(wp_stream *s)
{
    s->body_ptr = NULL;
    s->body_len = 0;
}

static void body_written(wp_stream *s)
{
    wp_dconn *d = s->d;
    s->body_ptr = NULL;
    s->body_len = 0;
    process(d);
    if (!d->closing)
        start_reading(d);
}

static void dconn_kick(wp_dconn *d)
{
    process(d);
    if (!d->closing)
        start_reading(d);
}

/* ---------- draining ---------- */

void wp_dconn_drain_one(wp_dconn *d)
{
    if (d->mux)
        d->mux->drain(d); /* GOAWAY; it closes when its streams are done */
    else if (!d->stream)
        wp_dconn_close(d);
    else
        d->close_after = true;
}

void wp_dconn_drain(wp_worker *w)
{
    for (wp_dconn *d = w->conns, *next; d; d = next) {
        next = d->next;
        if (d->tcp)
            continue; /* a TCP proxy session runs until one side closes (or the worker stops) */
        wp_dconn_drain_one(d);
    }
}

/* ---------- HTTP/2 streams as child connections (http/conn_h2.c) ---------- */

wp_dconn *wp_dconn_child(wp_dconn *parent,
                         wp_tsock *(*init)(void *arg, const wp_tsock_cbs *cbs, void *owner),
                         void *arg)
{
    wp_worker *w = parent->w;
    /* the stream is served on the current config: the HTTP/2 connection follows it first (a
     * long-lived connection would otherwise route every new stream on the snapshot it was
     * accepted with) */
    if (parent->wg != w->wg)
        dconn_follow_config(parent);
    wp_dconn *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->sock = init(arg, &dconn_sock_cbs, d);
    if (!d->sock) {
        free(d);
        return NULL;
    }
    d->w = w;
    d->wg = parent->wg;
    wp_wgen_use(d->wg);
    d->listener = parent->listener;
    d->chain = parent->chain;
    d->hcm = parent->hcm;
    d->hs = parent->hs;
    d->ls = parent->ls;
    d->parent = parent;
    d->proto_known = true;
    d->id = parent->id;
    d->start_ms = uv_now(&w->loop);
    memcpy(d->remote, parent->remote, sizeof(d->remote));
    memcpy(d->local, parent->local, sizeof(d->local));
    uv_timer_init(&w->loop, &d->idle_timer);
    uv_timer_init(&w->loop, &d->rq_timer);
    d->idle_timer.data = d->rq_timer.data = d;
    d->idle_timer.timer_cb = on_idle_timeout;
    d->rq_timer.timer_cb = on_rq_timeout;
    arm_idle(d);
    start_reading(d);
    return d;
}

void wp_dconn_peer_reset(wp_dconn *d, const char *details)
{
    wp_stream *s = d->stream;
    if (s && !s->resp_done) {
        wp_si_set_flag(&s->si, WP_RF_DR);
        s->si.details = details;
        wp_hcm_stat(d, WP_S_downstream_rq_rx_reset, 1);
        d->reset_by_peer = true;
    }
    d->peer_closed = true;
    wp_dconn_close(d);
}

int wp_dconn_write(wp_dconn *d, uv_buf_t *bufs, unsigned n)
{
    return dwrite(d, bufs, n);
}
