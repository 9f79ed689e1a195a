#include "proxy/server/conn_handler.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/access_log/alog_emit.h"
#include "proxy/filters/network/filters.h"
#include "proxy/http/conn.h"
#include "proxy/net/address.h"
#include "proxy/net/tls_socket.h"

#define LF_FIRST_READ 1024u /* the listener filters' buffer starts here and doubles */

/* Envoy's ActiveStreamListenerBase::emitLogs: the listener's access_log for a connection that
 * ends before a filter chain took it (no chain matched; the listener filters timed out, failed or
 * saw the peer leave: ActiveTcpSocket::unlink of a socket never connected). The stream info
 * holds what exists then: the accept's start time, the duration up to now, the addresses, the
 * SNI the tls_inspector saw, the connection id; no response (code 0), no bytes. flag_nr sets
 * NR and details "filter_chain_not_found" (StreamInfo::ResponseCodeDetails FilterChainNotFound).
 * Off the request path: only these closes pay for it. */
static void emit_listener_logs(wp_dconn *d, const wp_lf_socket *sock, bool flag_nr)
{
    const wp_listener *l = d->listener;
    if (!l->naccess_logs || !d->w->alog)
        return;
    wp_stream_info si;
    memset(&si, 0, sizeof si);
    uint64_t now_ms = uv_now(&d->w->loop);
    si.connection_id = d->id;
    si.start_time_us = wp_wall_us(d->w) - (int64_t)(now_ms - d->start_ms) * 1000;
    si.start_ns = d->start_ms * 1000000ULL;
    si.end_ns = now_ms * 1000000ULL;
    char local[64];
    si.downstream_local = d->local;
    if (sock && sock->local_restored) { /* original_dst: the address the client dialled */
        wp_sockaddr_text(&sock->local.sa, local, sizeof local);
        si.downstream_local = local;
    }
    si.downstream_remote = d->remote;
    si.downstream_direct_remote = d->remote;
    if (sock && sock->det && sock->det->server_name[0])
        si.requested_server_name = sock->det->server_name;
    if (flag_nr) {
        wp_si_set_flag(&si, WP_RF_NR);
        si.details = "filter_chain_not_found";
    }
    wp_alog_emit(l->access_logs, l->naccess_logs, &si, d->w->alog);
}

static void run_listener_filters(wp_dconn *d);

/* Envoy's ActiveTcpSocket::newConnection with hand_off_restored_destination_connections: a
 * use_original_dst listener whose original_dst restored the local address hands the
 * connection to the listener owning that address (exact, then the wildcard one on its port);
 * that listener's own listener filters run next on the same socket. true: handed over. */
static bool hand_off(wp_dconn *d, const wp_lf_socket *sock)
{
    if (!d->listener->use_original_dst || !sock->local_restored || !d->lf || d->lf->handed_off)
        return false;
    const wp_config *cfg = d->wg->gen->cfg;
    int li = wp_listener_find_by_address(cfg, &sock->local.sa);
    if (li < 0 || &cfg->listeners[li] == d->listener)
        return false;
    WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id,
                "handing off connection to %s to listener %s", d->local, cfg->listeners[li].name);
    d->lf->handed_off = true;
    d->listener = &cfg->listeners[li];
    d->ls = &d->wg->gen->pstats->listeners[li];
    run_listener_filters(d);
    return true;
}

/* Envoy's ActiveStreamListenerBase::newConnection, once the listener filters are done (ok:
 * none failed); sock: the accepted socket with what the listener filters found. */
static void new_connection(wp_dconn *d, const wp_lf_socket *sock, bool ok)
{
    if (ok && sock->local_restored) /* the downstream local address is the one dialled */
        wp_sockaddr_text(&sock->local.sa, d->local, sizeof d->local);
    if (ok && hand_off(d, sock))
        return;
    const wp_filter_chain *fc = ok ? wp_listener_find_chain(d->listener, sock) : NULL;
    if (!fc) {
        if (ok) {
            WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id,
                        "closing connection from %s: no matching filter chain found", d->remote);
            wp_listener_stat(d, WP_LS_no_filter_chain_match, 1);
        }
        emit_listener_logs(d, sock, ok);
        wp_dconn_close(d);
        return;
    }
    if (fc->tls) { /* the chain's DownstreamTlsContext: TLS over the accepted socket */
        wp_tls_stats st = {d->w->stats, d->ls->ssl, "listener", d->listener->stat_name};
        wf_tls_ctx *ctx = wp_tls_config_acquire(fc->tls); /* NULL: SDS secrets not ready */
        wp_tsock *t =
            wp_tls_socket_wrap(d->sock, &d->w->bufs, &d->w->deferred, ctx, true, NULL, &st);
        wf_tls_ctx_free(ctx);
        if (!t) {
            wp_dconn_close(d); /* before the chain: nothing was counted for it */
            return;
        }
        d->sock = t;
    }
    wp_dconn_use_chain(d, fc);
    wp_listener_stat(d, WP_LS_downstream_cx_total, 1);
    wp_listener_stat(d, WP_LS_downstream_cx_active, 1);
    wp_nf_chain_init(&d->nf);
    for (size_t i = 0; i < fc->nfilters; i++)
        wp_nf_chain_add(&d->nf, wp_network_filter_ops(fc->filters[i].kind), d,
                        fc->filters[i].config);
    wp_nf_chain_on_new_connection(&d->nf);
}

/* ---------- reading for the listener filters ---------- */

/* Gives the socket and the idle timer back to the connection: the bytes read go back into
 * the socket, to be read first (raw_socket.h wp_raw_socket_unread). false: out of memory. */
static bool stop_reading(wp_dconn *d)
{
    wp_lf_conn *lf = d->lf;
    if (!lf->reading)
        return true;
    lf->reading = false;
    wp_listener_stat(d, WP_LS_downstream_pre_cx_active, -1);
    wp_tsock_read_stop(d->sock);
    d->raw.base.cbs = lf->saved_cbs;
    d->raw.base.owner = lf->saved_owner;
    uv_timer_stop(&d->idle_timer);
    d->idle_timer.timer_cb = lf->saved_timer_cb;
    bool ok = wp_raw_socket_unread(&d->raw, &d->w->deferred, lf->buf, lf->len) == 0;
    free(lf->buf);
    lf->buf = NULL;
    lf->len = lf->cap = 0;
    return ok;
}

static void listener_filters_done(wp_lf_callbacks *cb, bool ok)
{
    wp_dconn *d = cb->owner;
    if (!stop_reading(d))
        ok = false;
    else if (!ok)
        wp_listener_stat(d, WP_LS_downstream_listener_filter_error, 1);
    new_connection(d, &d->lf->sock, ok);
}

/* The socket asks for room: the free tail of the filters' buffer, grown by doubling up to
 * what the waiting filter may read (none left: no room, the filter decides at its limit). */
static void lf_alloc(void *owner, uv_buf_t *buf)
{
    wp_dconn *d = owner;
    wp_lf_conn *lf = d->lf;
    size_t max = wp_lf_max_read_bytes(&lf->cb);
    if (lf->len == lf->cap && lf->cap < max) {
        size_t cap = lf->cap ? lf->cap * 2 : LF_FIRST_READ;
        if (cap > max)
            cap = max;
        unsigned char *nb = realloc(lf->buf, cap);
        if (nb) {
            lf->buf = nb;
            lf->cap = cap;
        }
    }
    *buf = uv_buf_init((char *)lf->buf + lf->len, (unsigned)(lf->cap - lf->len));
    if (lf->len == lf->cap)
        *buf = uv_buf_init(NULL, 0);
}

static void lf_read(void *owner, ssize_t n)
{
    wp_dconn *d = owner;
    wp_lf_conn *lf = d->lf;
    if (n < 0) { /* the peer went away (or no room at the filter's limit) mid-inspection */
        stop_reading(d);
        wp_listener_stat(d,
                         n == UV_ENOBUFS ? WP_LS_downstream_listener_filter_error
                                         : WP_LS_downstream_listener_filter_remote_close,
                         1);
        if (n != UV_ENOBUFS)
            d->peer_closed = true;
        emit_listener_logs(d, &lf->sock, false);
        wp_dconn_close(d);
        return;
    }
    lf->len += (size_t)n;
    wp_lf_on_data(&lf->cb, lf->buf, lf->len); /* may end the run: listener_filters_done */
}

static void lf_written(void *owner, int status)
{
    wp_dconn *d = owner;
    d->lf->saved_cbs->on_written(d->lf->saved_owner, status);
}

static void lf_closed(void *owner)
{
    wp_dconn *d = owner;
    d->lf->saved_cbs->on_closed(d->lf->saved_owner);
}

static void lf_connected(void *owner, int status)
{
    (void)owner;
    (void)status; /* an accepted socket never connects */
}

static const wp_tsock_cbs lf_sock_cbs = {
    .alloc = lf_alloc,
    .on_read = lf_read,
    .on_written = lf_written,
    .on_connected = lf_connected,
    .on_closed = lf_closed,
};

/* listener_filters_timeout: Envoy's ActiveTcpSocket::onTimeout. */
static void lf_timeout(uv_timer_t *t)
{
    wp_dconn *d = t->data;
    wp_lf_conn *lf = d->lf;
    wp_listener_stat(d, WP_LS_downstream_pre_cx_timeout, 1);
    WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id, "listener filter times out after %llu ms",
                (unsigned long long)d->listener->listener_filters_timeout_ms);
    if (d->listener->continue_on_listener_filters_timeout) {
        lf->cb.continue_filter_chain(&lf->cb, true); /* the waiting filter is skipped */
        return;
    }
    stop_reading(d);
    emit_listener_logs(d, &lf->sock, false);
    wp_dconn_close(d);
}

/* The filter that stopped reads: the socket's callbacks and the idle timer are the
 * listener filters' until the run ends. */
static void start_reading(wp_dconn *d)
{
    wp_lf_conn *lf = d->lf;
    lf->saved_cbs = d->raw.base.cbs;
    lf->saved_owner = d->raw.base.owner;
    lf->saved_timer_cb = d->idle_timer.timer_cb;
    d->raw.base.cbs = &lf_sock_cbs;
    d->raw.base.owner = d;
    lf->reading = true;
    wp_listener_stat(d, WP_LS_downstream_pre_cx_active, 1);
    if (d->listener->listener_filters_timeout_ms)
        uv_timer_start(&d->idle_timer, lf_timeout, d->listener->listener_filters_timeout_ms, 0);
    if (wp_tsock_read_start(d->sock) != 0) {
        stop_reading(d);
        wp_dconn_close(d);
    }
}

/* Runs d->listener's listener filters on d->lf's socket (none: the chain is chosen now). */
static void run_listener_filters(wp_dconn *d)
{
    const wp_listener *l = d->listener;
    wp_lf_conn *lf = d->lf;
    if (!l->nlistener_filters) {
        new_connection(d, &lf->sock, true);
        return;
    }
    wp_lf_callbacks_init(&lf->cb, &lf->sock, l->listener_filters, l->nlistener_filters,
                         listener_filters_done, d);
    lf->cb.stats = d->w->stats;
    wp_lf_status st = wp_lf_run(&lf->cb);
    if (st == WP_LF_CONTINUE)
        new_connection(d, &lf->sock, true);
    else if (st == WP_LF_FAILED)
        listener_filters_done(&lf->cb, false);
    else if (wp_lf_wants_data(&lf->cb))
        start_reading(d);
}

void wp_conn_handler_accept(wp_worker *w, size_t listener, uv_stream_t *server)
{
    wp_lf_socket sock;
    wp_dconn *d = wp_dconn_accept(w, listener, server, &sock);
    if (!d)
        return;
    if (!d->listener->nlistener_filters) {
        new_connection(d, &sock, true);
        return;
    }
    if (!(d->lf = calloc(1, sizeof(*d->lf)))) {
        wp_dconn_close(d);
        return;
    }
    d->lf->sock = sock;
    uv_os_fd_t fd;
    if (uv_fileno((const uv_handle_t *)&d->raw.tcp, &fd) == 0)
        d->lf->sock.fd = fd; /* original_dst asks the socket */
    run_listener_filters(d);
}
