/*
 * tcp_proxy.c - envoy.filters.network.tcp_proxy (tcp_proxy.h).
 */
#include "proxy/filters/network/tcp_proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/access_log/alog_emit.h"
#include "proxy/filters/listener/tls_inspector.h"
#include "proxy/filters/network/metadata_exchange.h"
#include "proxy/http/conn.h"
#include "proxy/net/address.h"
#include "proxy/upstream/lb.h"

typedef struct wp_tcp_session {
    wp_dconn *d;
    const wp_tcp_proxy *cfg;
    const wp_tstats *ts; /* tcp.<stat_prefix>.* slots */
    int cluster;         /* the cluster of the current attempt, -1 none */
    int host;            /* its host, -1 none */
    uint32_t attempts;
    wp_pool_req preq;
    bool pool_pending;
    wp_uconn *u; /* the upstream connection once connected, NULL none */
    wp_stream_info si;
    /* downstream bytes read, waiting to be written upstream (pinned while the write is
     * pending); the worker's buffer, kept for the connection's life */
    wp_buf *dbuf;
    size_t dlen;
    size_t ubuffered;        /* upstream bytes pinned in u->rbuf while written downstream */
    bool down_bulk, up_bulk; /* the last read of that side filled its buffer */
    bool reading;            /* the downstream socket is read */
    bool up_writing;         /* a write of dbuf to the upstream is pending */
    bool down_writing;       /* a write of upstream bytes downstream is pending */
    bool down_eof, up_eof;   /* end of stream from the downstream / the upstream */
    bool up_shut, down_shut; /* end of stream passed on upstream / downstream */
    bool retry_pending;
    uint64_t retry_at, duration_deadline; /* loop time (ms), 0 none */
    uint64_t last_activity;               /* loop time (ms) of the last byte either way */
    const wp_tsock_cbs *saved_cbs;        /* the connection's socket callbacks */
    void *saved_owner;
    char upstream_local[64];
    char odst[64]; /* ORIGINAL_DST: the original destination tried, as text */
    char up_peer_san[256], up_local_san[256]; /* the upstream TLS connection's URI SANs */
    char tfr[160];                            /* %UPSTREAM_TRANSPORT_FAILURE_REASON% */
    /* Istio's TCP metadata exchange (metadata_exchange.h): the upstream peer (a copy: the
     * upstream connection, whose exchange drains the peer's preamble, may go first), our
     * preamble alone being written downstream, and upstream bytes held (unread) until that
     * write or the downstream TLS handshake is done */
    wp_tcp_mx_peer up_peer; /* the upstream peer the connection's exchange read */
    bool have_up_peer;
    bool mx_down_writing, up_held;
    /* the SNI the listener filters found (Envoy's requestedServerName), or, on a connection
     * refused for want of a host, the one its ClientHello named (peeking, below); "" none */
    char sni[WP_LF_SNI_MAX];
    bool peeking;
    uint64_t peek_deadline; /* loop time (ms) the peek gives up, 0 none */
    wp_deferred_item dd;
} wp_tcp_session;

/* weft's addition for operator report B039: a connection the TCP proxy refuses because its
 * cluster has no host (UH: BlackHoleCluster under REGISTRY_ONLY, a cluster without endpoints)
 * whose server name nothing detected waits up to this long for the client's first bytes; a
 * TLS ClientHello among them gives %REQUESTED_SERVER_NAME% to the access log, which then names
 * the host that was blocked, where Envoy's line has only the address. Only refused
 * connections wait; nothing is sent upstream. */
#define WP_TCP_SNI_PEEK_MS 250

/* Bytes read per direction at a time: one read buffer per direction, held while its bytes are
 * written to the other side (the back-pressure bound). A direction whose last read filled its
 * buffer (a bulk transfer) reads into 64 KiB (a quarter of the syscalls of the HTTP path's
 * 16 KiB buffers, bench/run_tcp.sh); otherwise its buffer goes back to the worker as soon as
 * it is empty, so an idle connection holds none (and the next read takes a 16 KiB one). */
#define WP_TCP_BUF (64u * 1024u)

static void tcp_connect(wp_tcp_session *s);
static const wp_uconn_callbacks tcp_up_cbs;
static void u_data(void *owner, wp_uconn *u, size_t n);

static void tstat(wp_tcp_session *s, int which, int64_t delta)
{
    wp_stat_add(s->d->w->stats, s->ts->slot[which], delta);
}

static void cstat(wp_tcp_session *s, int which, int64_t delta)
{
    if (s->cluster >= 0)
        wp_cluster_stat(s->d->w, s->d->wg->gen, s->cluster, which, delta);
}

static uint64_t now_ms(const wp_tcp_session *s)
{
    return uv_now(&s->d->w->loop);
}

/* ---------- buffers ---------- */

/* dbuf is empty: kept for the next read of a bulk transfer, else back to the worker. */
static void down_buf_drained(wp_tcp_session *s)
{
    s->dlen = 0;
    if (s->dbuf && (!s->down_bulk || s->dbuf->cap < WP_TCP_BUF)) {
        wp_buf_put(s->d->w, s->dbuf);
        s->dbuf = NULL;
    }
}

/* u's read buffer is empty (rstart == rlen): the same for the upstream side; a bulk transfer
 * gets its 64 KiB buffer here (u_on_alloc would take a 16 KiB one). */
static void up_buf_drained(wp_tcp_session *s, wp_uconn *u)
{
    if (!u->rbuf || u->pinned || u->rstart != u->rlen)
        return;
    u->rstart = u->rlen = 0;
    if (s->up_bulk && u->rbuf->cap >= WP_TCP_BUF)
        return;
    wp_buf_put(s->d->w, u->rbuf);
    u->rbuf = s->up_bulk ? wp_buf_get(s->d->w, WP_TCP_BUF) : NULL;
}

/* ---------- reading and writing ---------- */

static void down_read_start(wp_tcp_session *s)
{
    wp_dconn *d = s->d;
    if (s->reading || d->closing || s->down_eof || s->up_writing || !s->u)
        return;
    if (wp_tsock_read_start(d->sock) == 0)
        s->reading = true;
}

static void down_read_stop(wp_tcp_session *s)
{
    if (!s->reading)
        return;
    wp_tsock_read_stop(s->d->sock);
    s->reading = false;
}

/* Both directions ended and nothing is pending: the connection closes. */
static void maybe_finish(wp_tcp_session *s)
{
    if (s->down_eof && s->up_eof && !s->up_writing && !s->down_writing && !s->up_held &&
        !s->d->closing)
        wp_dconn_close(s->d);
}

static void shut_upstream(wp_tcp_session *s)
{
    if (s->up_shut || !s->u)
        return;
    s->up_shut = true;
    wp_uconn_shutdown(s->u);
}

static void shut_downstream(wp_tcp_session *s)
{
    if (s->down_shut || s->d->closing)
        return;
    s->down_shut = true;
    wp_tsock_shutdown(s->d->sock);
}

/* The downstream bytes in dbuf go upstream; the downstream waits while the write is pending. */
static void forward_up(wp_tcp_session *s)
{
    if (!s->u || s->up_writing || s->dlen == 0)
        return;
    uv_buf_t b = uv_buf_init(s->dbuf->data, (unsigned)s->dlen);
    s->si.upstream_wire_bytes_sent += s->dlen;
    int r = wp_uconn_write(s->u, &b, 1);
    if (r < 0)
        return; /* on_reset came: the connection is closing */
    if (r == 1) {
        s->up_writing = true;
        tstat(s, WP_TS_downstream_cx_rx_bytes_buffered, (int64_t)s->dlen);
        if (s->reading) {
            down_read_stop(s);
            tstat(s, WP_TS_downstream_flow_control_paused_reading_total, 1);
        }
        return;
    }
    down_buf_drained(s);
}

/* ---------- Istio's TCP metadata exchange (metadata_exchange.h) ---------- */

/* The downstream exchange's ALPN check, once (its TLS handshake is done by the first byte). */
static wp_tcp_mx *mx_down(wp_tcp_session *s)
{
    wp_tcp_mx *m = s->d->mx;
    if (m && m->state == WP_TCP_MX_PROTOCOL_NOT_READ)
        wp_tcp_mx_begin(m, wp_tsock_ssl_or_empty(s->d->sock)->alpn);
    return m;
}

/* Our preamble alone to the downstream (Istio writes it on the first byte either way) when
 * nothing is being written there; upstream bytes wait for it (u_data). */
static void mx_down_preamble(wp_tcp_session *s)
{
    wp_tcp_mx *m = mx_down(s);
    const uint8_t *p;
    size_t n;
    if (!m || s->down_writing || !wp_tcp_mx_take_preamble(m, &p, &n))
        return;
    uv_buf_t b = uv_buf_init((char *)(uintptr_t)p, (unsigned)n);
    int r = wp_tsock_write(s->d->sock, &b, 1);
    if (r < 0) {
        wp_dconn_close(s->d);
        return;
    }
    if (r == 1)
        s->down_writing = s->mx_down_writing = true;
}

/* The downstream peer's preamble is drained from the front of dbuf. false: nothing to
 * forward now (held for more bytes, or all drained). */
static bool mx_down_bytes(wp_tcp_session *s, bool end_stream)
{
    wp_tcp_mx *m = mx_down(s);
    if (!m || m->state != WP_TCP_MX_READING)
        return true;
    mx_down_preamble(s);
    if (s->d->closing)
        return false;
    bool hold;
    size_t k = wp_tcp_mx_on_bytes(m, (const uint8_t *)s->dbuf->data, s->dlen, end_stream, &hold);
    if (k) { /* the TCP proxy's byte counts are past the filter (Envoy's addBytesReceived) */
        memmove(s->dbuf->data, s->dbuf->data + k, s->dlen - k);
        s->dlen -= k;
        s->si.bytes_received -= k;
    }
    if (hold)
        return false;
    if (s->dlen == 0) {
        down_buf_drained(s);
        return false;
    }
    return true;
}

/* Keeps the upstream peer the connection's exchange read (Istio's upstream_peer). */
static void keep_up_peer(wp_tcp_session *s)
{
    if (!s->have_up_peer && s->u && s->u->mx && s->u->mx->have_peer) {
        s->up_peer = s->u->mx->peer;
        s->up_peer.w = (wp_istio_workload){0};
        for (int i = 0; i < WP_WL_COUNT_; i++) { /* rebase the views on the copy */
            const wp_istio_str *f = &s->u->mx->peer.w.f[i];
            if (f->len)
                s->up_peer.w.f[i] = (wp_istio_str){(const char *)s->up_peer.buf +
                                                       ((const uint8_t *)f->p - s->u->mx->peer.buf),
                                                   f->len};
        }
        s->have_up_peer = true;
    }
}

/* The upstream half (the connection's, upstream.c, on the cluster's ALPN): our preamble goes
 * first (the downstream is read once it is out). */
static void mx_up_start(wp_tcp_session *s, wp_uconn *u)
{
    const uint8_t *p;
    size_t n;
    if (!u->mx || !wp_tcp_mx_take_preamble(u->mx, &p, &n))
        return; /* no exchange on this connection */
    uv_buf_t b = uv_buf_init((char *)(uintptr_t)p, (unsigned)n);
    if (wp_uconn_write(u, &b, 1) == 1)
        s->up_writing = true; /* u_written: dlen is 0 */
}

/* ---------- the downstream socket (the session's while the connection lives) ---------- */

static void d_alloc(void *owner, uv_buf_t *buf)
{
    wp_tcp_session *s = owner;
    if (!s->dbuf)
        s->dbuf = wp_buf_get(s->d->w, s->down_bulk ? WP_TCP_BUF : WP_BUF_SIZE);
    if (!s->dbuf || s->dlen == s->dbuf->cap) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init(s->dbuf->data + s->dlen, (unsigned)(s->dbuf->cap - s->dlen));
}

/* The refused connection's bytes so far: a whole ClientHello (its SNI kept), or anything else,
 * ends the wait and the connection. */
static void peek_bytes(wp_tcp_session *s)
{
    wp_client_hello ch;
    wp_client_hello_result r =
        wp_client_hello_parse((const unsigned char *)s->dbuf->data, s->dlen, &ch);
    if (r == WP_CH_NEED_MORE && s->dlen < s->dbuf->cap)
        return;
    if (r == WP_CH_FOUND)
        snprintf(s->sni, sizeof s->sni, "%s", ch.sni);
    s->peeking = false;
    down_read_stop(s);
    wp_dconn_close(s->d);
}

static void arm_rq_timer(wp_tcp_session *s);

/* Starts the wait for a refused connection's ClientHello (see WP_TCP_SNI_PEEK_MS); false
 * when there is nothing to learn (a server name known, TLS terminated here, no reading). */
static bool peek_start(wp_tcp_session *s)
{
    wp_dconn *d = s->d;
    if (s->sni[0] || wp_tsock_ssl_info(d->sock) || d->peer_closed ||
        wp_tsock_read_start(d->sock) != 0)
        return false;
    s->reading = true;
    s->peeking = true;
    s->peek_deadline = now_ms(s) + WP_TCP_SNI_PEEK_MS;
    arm_rq_timer(s);
    return true;
}

static void d_read(void *owner, ssize_t n)
{
    wp_tcp_session *s = owner;
    wp_dconn *d = s->d;
    if (n == UV_ENOBUFS) {
        down_read_stop(s);
        return;
    }
    if (n < 0 && s->peeking) { /* the refused client went first */
        s->peeking = false;
        down_read_stop(s);
        d->peer_closed = true;
        wp_dconn_close(d);
        return;
    }
    if (n < 0) {
        down_read_stop(s);
        d->peer_closed = true;
        if (n != UV_EOF) { /* a reset: both directions end */
            wp_dconn_close(d);
            return;
        }
        WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "downstream half-closed");
        s->down_eof = true;
        if (s->dlen && mx_down_bytes(s, true)) /* an incomplete preamble goes on unchanged */
            forward_up(s);
        if (!s->up_writing)
            shut_upstream(s);
        maybe_finish(s);
        return;
    }
    s->dlen += (size_t)n;
    s->down_bulk = s->dlen == s->dbuf->cap;
    s->si.bytes_received += (uint64_t)n;
    s->si.wire_bytes_received += (uint64_t)n;
    if (s->peeking) {
        peek_bytes(s);
        return;
    }
    s->last_activity = now_ms(s);
    tstat(s, WP_TS_downstream_cx_rx_bytes_total, n);
    if (!mx_down_bytes(s, false))
        return;
    /* the filters before the TCP proxy (network RBAC) see the bytes first */
    wp_nf_chain_on_data(&d->nf, false);
}

static void d_written(void *owner, int status)
{
    wp_tcp_session *s = owner;
    wp_dconn *d = s->d;
    s->down_writing = false;
    if (s->mx_down_writing) { /* our preamble alone is out: the held upstream bytes go */
        s->mx_down_writing = false;
        if (d->closing)
            return;
        if (status < 0) {
            wp_dconn_close(d);
            return;
        }
        if (s->up_held && s->u) {
            s->up_held = false;
            s->u->pinned = false;
            if (!s->up_eof)
                wp_uconn_resume_read(s->u);
            tcp_up_cbs.on_data(s, s->u, 0);
        }
        if (s->up_eof && !s->down_writing)
            shut_downstream(s);
        maybe_finish(s);
        return;
    }
    tstat(s, WP_TS_downstream_cx_tx_bytes_buffered, -(int64_t)s->ubuffered);
    s->ubuffered = 0;
    if (d->closing)
        return;
    if (status < 0) {
        wp_dconn_close(d);
        return;
    }
    s->last_activity = now_ms(s);
    if (s->u) {
        s->u->rstart = s->u->rlen;
        s->u->pinned = false;
        up_buf_drained(s, s->u);
        if (!s->up_eof) {
            wp_uconn_resume_read(s->u);
            cstat(s, WP_S_upstream_flow_control_resumed_reading_total, 1);
        }
    }
    if (s->up_eof)
        shut_downstream(s);
    maybe_finish(s);
}

/* The downstream TLS handshake is done: upstream bytes that came first go now. */
static void d_handshake(void *owner, int status)
{
    wp_tcp_session *s = owner;
    if (status < 0 || s->d->closing || s->down_writing || !s->up_held || !s->u)
        return;
    s->up_held = false;
    s->u->pinned = false;
    if (!s->up_eof)
        wp_uconn_resume_read(s->u);
    u_data(s, s->u, 0);
    if (s->up_eof && !s->down_writing)
        shut_downstream(s);
    maybe_finish(s);
}

static void d_closed(void *owner)
{
    (void)owner; /* never: the callbacks go back to the connection before it closes */
}

static const wp_tsock_cbs tcp_down_cbs = {
    .alloc = d_alloc,
    .on_read = d_read,
    .on_written = d_written,
    .on_connected = d_handshake,
    .on_closed = d_closed,
};

/* ---------- the upstream connection ---------- */

static void u_data(void *owner, wp_uconn *u, size_t n)
{
    wp_tcp_session *s = owner;
    wp_dconn *d = s->d;
    keep_up_peer(s);
    const wp_tsock_ssl *dssl = wp_tsock_ssl_info(d->sock);
    if (s->down_writing || (dssl && (!dssl->version || !*dssl->version))) {
        /* our preamble is being written downstream, or the downstream TLS handshake is not
         * done (a server-first protocol): these bytes wait (d_written / d_handshake) */
        s->up_held = true;
        u->pinned = true;
        wp_uconn_pause_read(u);
        return;
    }
    size_t len = u->rlen - u->rstart;
    if (len == 0)
        return;
    s->up_bulk = n == u->rbuf->cap || u->rlen == u->rbuf->cap;
    s->si.bytes_sent += len;
    s->si.wire_bytes_sent += len;
    s->si.upstream_wire_bytes_received += len;
    s->last_activity = now_ms(s);
    tstat(s, WP_TS_downstream_cx_tx_bytes_total, (int64_t)len);
    uv_buf_t b[2];
    unsigned nb = 0;
    wp_tcp_mx *m = mx_down(s);
    const uint8_t *pre;
    size_t pn;
    if (m && wp_tcp_mx_take_preamble(m, &pre, &pn)) /* ours ahead of the first bytes */
        b[nb++] = uv_buf_init((char *)(uintptr_t)pre, (unsigned)pn);
    b[nb++] = uv_buf_init(u->rbuf->data + u->rstart, (unsigned)len);
    int r = wp_tsock_write(d->sock, b, nb);
    if (r < 0) {
        wp_dconn_close(d);
        return;
    }
    if (r == 1) { /* the upstream waits until the downstream took these bytes */
        s->down_writing = true;
        s->ubuffered = len;
        tstat(s, WP_TS_downstream_cx_tx_bytes_buffered, (int64_t)len);
        u->pinned = true;
        wp_uconn_pause_read(u);
        cstat(s, WP_S_upstream_flow_control_paused_reading_total, 1);
        return;
    }
    u->rstart = u->rlen;
    up_buf_drained(s, u);
}

static void u_eof(void *owner, wp_uconn *u)
{
    wp_tcp_session *s = owner;
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, s->d->id, "upstream half-closed");
    s->up_eof = true;
    keep_up_peer(s);
    if (u->rbuf && u->rstart < u->rlen && !s->down_writing && !s->up_held)
        u_data(s, u, 0); /* an incomplete preamble the connection gave up goes on unchanged */
    if (!s->down_writing && !s->up_held)
        shut_downstream(s);
    maybe_finish(s);
}

static void u_written(void *owner, wp_uconn *u)
{
    wp_tcp_session *s = owner;
    (void)u;
    s->up_writing = false;
    tstat(s, WP_TS_downstream_cx_rx_bytes_buffered, -(int64_t)s->dlen);
    down_buf_drained(s);
    s->last_activity = now_ms(s);
    if (s->down_eof) {
        shut_upstream(s);
        maybe_finish(s);
        return;
    }
    if (!s->reading) {
        down_read_start(s);
        tstat(s, WP_TS_downstream_flow_control_resumed_reading_total, 1);
    }
}

/* The upstream connection reset or failed under the session (it is detached): the downstream
 * closes (Envoy's onUpstreamEvent RemoteClose / LocalClose once connected). */
static void u_reset(void *owner, wp_uconn *u, int reason)
{
    wp_tcp_session *s = owner;
    (void)u;
    keep_up_peer(s);
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, s->d->id, "upstream connection closed (reset %d)",
                reason);
    s->u = NULL;
    s->up_writing = false;
    if (!s->d->closing)
        wp_dconn_close(s->d);
}

static const wp_uconn_callbacks tcp_up_cbs = {
    .on_data = u_data,
    .on_eof = u_eof,
    .on_written = u_written,
    .on_reset = u_reset,
};

/* ---------- connecting ---------- */

static void arm_rq_timer(wp_tcp_session *s);

/* Outlier detection hears of the attempt's host (Envoy's putResult: LocalOriginConnectFailed,
 * LocalOriginTimeout, LocalOriginConnectSuccessFinal). */
static void od_report(wp_tcp_session *s, wp_od_result r)
{
    wp_outlier_report(s->d->w, s->d->wg->gen, s->cluster, s->host, r, 0);
}

static void pool_ready(void *ctx, wp_uconn *u, int host)
{
    wp_tcp_session *s = ctx;
    wp_dconn *d = s->d;
    const wp_cluster *c = &d->wg->gen->cfg->clusters[s->cluster];
    s->pool_pending = false;
    s->u = u;
    s->host = host;
    od_report(s, WP_OD_CONNECT_SUCCESS);
    wp_uconn_attach(u, &tcp_up_cbs, s);
    u->half_close = true;
    s->si.upstream_host = c->endpoints ? c->endpoints[host].addr.text : NULL;
    if (u->has_dst) { /* ORIGINAL_DST: copied, the connection may go before the session */
        snprintf(s->odst, sizeof s->odst, "%s", u->dst_text);
        s->si.upstream_host = s->odst;
    }
    snprintf(s->upstream_local, sizeof s->upstream_local, "%s", u->local);
    s->si.upstream_local = s->upstream_local;
    s->si.upstream_connection_id = u->id;
    const wp_tsock_ssl *ssl = wp_tsock_ssl_info(u->sock);
    if (ssl) { /* copies: the upstream connection may go before the session */
        snprintf(s->up_peer_san, sizeof s->up_peer_san, "%s", ssl->peer_uri_sans);
        snprintf(s->up_local_san, sizeof s->up_local_san, "%s", ssl->local_uri_sans);
        s->si.upstream_peer_uri_san = s->up_peer_san;
        s->si.upstream_local_uri_san = s->up_local_san;
        s->si.upstream_tls_version = ssl->version;
    }
    s->si.transport_failure_reason = NULL;
    s->last_activity = now_ms(s);
    mx_up_start(s, u);
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "upstream connected to %s (cluster %s)",
                s->si.upstream_host, c->name);
    down_read_start(s); /* the downstream is read from now on (Envoy's readDisable(false)) */
}

static void pool_failure(void *ctx, wp_pool_failure reason, const char *tfr, int host)
{
    wp_tcp_session *s = ctx;
    wp_dconn *d = s->d;
    s->pool_pending = false;
    const wp_cluster *c = s->cluster >= 0 ? &d->wg->gen->cfg->clusters[s->cluster] : NULL;
    const struct sockaddr *dst = wp_lf_conn_original_dst(d->lf);
    if (c && c->original_dst && dst) { /* ORIGINAL_DST: the destination it tried */
        wp_sockaddr_text(dst, s->odst, sizeof s->odst);
        s->si.upstream_host = s->odst;
    } else if (host >= 0 && c) {
        s->si.upstream_host = c->endpoints[host].addr.text;
    }
    if (tfr) {
        snprintf(s->tfr, sizeof s->tfr, "%s", tfr);
        s->si.transport_failure_reason = s->tfr;
    }
    /* Envoy's onGenericPoolFailure: a refused or reset connect (RemoteClose) and a connect
     * timeout are UF; an overflow or a local failure (LocalClose) sets no flag */
    if (reason == WP_POOL_REMOTE_CONNECTION_FAILURE || reason == WP_POOL_TIMEOUT) {
        wp_si_set_flag(&s->si, WP_RF_UF);
        s->host = host;
        od_report(s, reason == WP_POOL_TIMEOUT ? WP_OD_TIMEOUT : WP_OD_CONNECT_FAILED);
    }
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "upstream connect failed (%d): %s", reason,
                tfr ? tfr : "-");
    if (d->closing)
        return;
    if (s->attempts >= s->cfg->max_connect_attempts) {
        wp_si_set_flag(&s->si, WP_RF_URX);
        cstat(s, WP_S_upstream_cx_connect_attempts_exceeded, 1);
        wp_dconn_close(d);
        return;
    }
    /* Envoy retries from its retry timer: on a later loop iteration */
    s->retry_pending = true;
    s->retry_at = now_ms(s);
    arm_rq_timer(s);
}

static const wp_pool_callbacks tcp_pool_cbs = {pool_ready, pool_failure};

/* The cluster of this attempt: `cluster`, or one of weighted_clusters by weight (Envoy's
 * WeightedClusterUtil::pickCluster on a random value). */
static const char *pick_cluster(wp_tcp_session *s, int *index)
{
    const wp_tcp_proxy *t = s->cfg;
    if (!t->nweighted) {
        *index = t->cluster;
        return t->cluster_name;
    }
    uint64_t r = wp_rand(s->d->w) % t->total_weight, acc = 0;
    for (size_t i = 0; i < t->nweighted; i++) {
        acc += t->weighted[i].weight;
        if (r < acc) {
            *index = t->weighted[i].cluster;
            return t->weighted[i].name;
        }
    }
    *index = t->weighted[t->nweighted - 1].cluster;
    return t->weighted[t->nweighted - 1].name;
}

/* Envoy's establishUpstreamConnection. */
static void tcp_connect(wp_tcp_session *s)
{
    wp_dconn *d = s->d;
    const wp_config *cfg = d->wg->gen->cfg;
    int ci = -1;
    const char *name = pick_cluster(s, &ci);
    s->cluster = ci;
    s->host = -1;
    s->si.upstream_host = NULL;
    if (ci < 0) {
        WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "Cluster not found %s", name);
        s->si.upstream_cluster = NULL;
        tstat(s, WP_TS_downstream_cx_no_route, 1);
        wp_si_set_flag(&s->si, WP_RF_NC);
        wp_dconn_close(d);
        return;
    }
    const wp_cluster *c = &cfg->clusters[ci];
    s->si.upstream_cluster = c->name;
    s->si.upstream_cluster_stat = c->alt_stat_name ? c->alt_stat_name : c->name;
    wp_cluster_rt *rt = &d->wg->gen->crt[ci];
    /* checked here, as Envoy does: the pool would queue the connection otherwise */
    if (atomic_load_explicit(&rt->cx_open, memory_order_relaxed) >= c->cb.max_connections) {
        wp_si_set_flag(&s->si, WP_RF_UO);
        cstat(s, WP_S_upstream_cx_overflow, 1);
        wp_dconn_close(d);
        return;
    }
    /* ORIGINAL_DST: the downstream's original destination is the host (none: no host) */
    const struct sockaddr *dst = c->original_dst ? wp_lf_conn_original_dst(d->lf) : NULL;
    int host = c->original_dst ? (dst ? 0 : -1) : wp_lb_choose_host(&d->wg->lbs[ci], NULL);
    if (host < 0) {
        wp_si_set_flag(&s->si, WP_RF_UH);
        cstat(s, WP_S_upstream_cx_none_healthy, 1);
        if (!peek_start(s))
            wp_dconn_close(d);
        return;
    }
    s->attempts++;
    s->si.attempt_count = s->attempts;
    s->pool_pending = true;
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "Creating connection to cluster %s", c->name);
    if (dst)
        wp_pool_newstream_dst(&d->wg->pools[ci], dst, &s->preq, &tcp_pool_cbs, s);
    else
        wp_pool_newstream(&d->wg->pools[ci], host, &s->preq, &tcp_pool_cbs, s);
}

/* ---------- timers (the connection's: idle_timer, rq_timer) ---------- */

static void on_idle(uv_timer_t *t)
{
    wp_dconn *d = t->data;
    wp_tcp_session *s = d->tcp;
    if (!s || d->closing)
        return;
    uint64_t ms = s->cfg->idle_timeout_ms, idle = now_ms(s) - s->last_activity;
    if (idle < ms) { /* activity since: the rest of the period */
        uv_timer_start(t, on_idle, ms - idle, 0);
        return;
    }
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "Session timed out");
    tstat(s, WP_TS_idle_timeout, 1);
    wp_dconn_close(d);
}

static void on_rq_timer(uv_timer_t *t)
{
    wp_dconn *d = t->data;
    wp_tcp_session *s = d->tcp;
    if (!s || d->closing)
        return;
    uint64_t now = now_ms(s);
    if (s->peeking && now >= s->peek_deadline) { /* no ClientHello came in time */
        s->peeking = false;
        down_read_stop(s);
        wp_dconn_close(d);
        return;
    }
    if (s->duration_deadline && now >= s->duration_deadline) {
        WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "max connection duration reached");
        wp_si_set_flag(&s->si, WP_RF_DT);
        tstat(s, WP_TS_max_downstream_connection_duration, 1);
        wp_dconn_close(d);
        return;
    }
    if (s->retry_pending && now >= s->retry_at) {
        s->retry_pending = false;
        tcp_connect(s);
    }
    if (!d->closing)
        arm_rq_timer(s);
}

/* One timer for the retry and the connection's duration: armed for the earlier. */
static void arm_rq_timer(wp_tcp_session *s)
{
    uint64_t next = s->retry_pending ? s->retry_at : 0;
    if (s->duration_deadline && (!next || s->duration_deadline < next))
        next = s->duration_deadline;
    if (s->peeking && (!next || s->peek_deadline < next))
        next = s->peek_deadline;
    if (!next) {
        uv_timer_stop(&s->d->rq_timer);
        return;
    }
    uint64_t now = now_ms(s);
    uv_timer_start(&s->d->rq_timer, on_rq_timer, next > now ? next - now : 0, 0);
}

/* ---------- the filter ---------- */

static void session_release(wp_deferred_item *it)
{
    wp_tcp_session *s = (wp_tcp_session *)(void *)((char *)it - offsetof(wp_tcp_session, dd));
    wp_buf_put(s->d->w, s->dbuf);
    free(s);
}

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    wp_dconn *d = f->self;
    const wp_tcp_proxy *t = f->config;
    wp_tcp_session *s = calloc(1, sizeof(*s));
    if (!s) {
        wp_dconn_close(d);
        return WP_NF_STOP_ITERATION;
    }
    s->d = d;
    s->cfg = t;
    s->ts = &d->wg->gen->pstats->tcps[t->index];
    s->cluster = s->host = -1;
    if (d->lf && d->lf->sock.det && d->lf->sock.det->server_name[0])
        snprintf(s->sni, sizeof s->sni, "%s", d->lf->sock.det->server_name);
    *f->ctx = s;
    d->tcp = s;
    /* the downstream socket's callbacks are the session's until the connection closes */
    s->saved_cbs = d->sock->cbs;
    s->saved_owner = d->sock->owner;
    d->sock->cbs = &tcp_down_cbs;
    d->sock->owner = s;
    s->last_activity = now_ms(s);
    tstat(s, WP_TS_downstream_cx_total, 1);
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id, "new tcp proxy session");
    if (t->idle_timeout_ms) /* armed at once, as Envoy 1.36 does */
        uv_timer_start(&d->idle_timer, on_idle, t->idle_timeout_ms, 0);
    if (t->max_downstream_connection_duration_ms) {
        s->duration_deadline = s->last_activity + t->max_downstream_connection_duration_ms;
        arm_rq_timer(s);
    }
    tcp_connect(s);
    return WP_NF_STOP_ITERATION; /* the terminal filter */
}

static wp_nf_status on_data(wp_nf_filter *f, bool end_stream)
{
    (void)end_stream;
    forward_up(*f->ctx);
    return WP_NF_STOP_ITERATION;
}

/* The stream info the access log sees, completed at close. */
static void finish_info(wp_tcp_session *s)
{
    wp_dconn *d = s->d;
    wp_stream_info *si = &s->si;
    uint64_t now = now_ms(s);
    si->connection_id = d->id;
    si->start_time_us = wp_wall_us(d->w) - (int64_t)(now - d->start_ms) * 1000;
    si->start_ns = d->start_ms * 1000000ULL;
    si->end_ns = now * 1000000ULL;
    si->downstream_local = d->local;
    si->downstream_remote = d->remote;
    si->downstream_direct_remote = d->remote;
    si->termination_details = d->termination_details;
    const wp_tsock_ssl *ssl = d->sock ? wp_tsock_ssl_info(d->sock) : NULL;
    if (s->sni[0]) /* the listener filters' (or the peek's) */
        si->requested_server_name = s->sni;
    if (ssl) {
        if (ssl->sni && *ssl->sni)
            si->requested_server_name = ssl->sni;
        si->downstream_peer_uri_san = ssl->peer_uri_sans;
        si->downstream_local_uri_san = ssl->local_uri_sans;
        si->downstream_tls_version = ssl->version;
        si->downstream_tls_cipher = ssl->cipher;
        si->downstream_peer_subject = ssl->peer_subject;
    }
}

/* The connection closes (whoever closes it): log, give the upstream up, hand the socket back. */
static void on_close(wp_nf_filter *f)
{
    wp_tcp_session *s = *f->ctx;
    if (!s)
        return;
    wp_dconn *d = s->d;
    *f->ctx = NULL;
    if (s->pool_pending) {
        wp_pool_cancel(&s->preq);
        s->pool_pending = false;
    }
    finish_info(s);
    if (s->cfg->naccess_logs && d->w->alog)
        wp_alog_emit(s->cfg->access_logs, s->cfg->naccess_logs, &s->si, d->w->alog);
    if (s->up_writing)
        tstat(s, WP_TS_downstream_cx_rx_bytes_buffered, -(int64_t)s->dlen);
    if (s->down_writing)
        tstat(s, WP_TS_downstream_cx_tx_bytes_buffered, -(int64_t)s->ubuffered);
    if (s->u) {
        wp_uconn *u = s->u;
        s->u = NULL;
        wp_uconn_detach(u);
        u->pinned = false;
        wp_uconn_release(u, false); /* never back to the pool: closed */
    }
    down_read_stop(s);
    uv_timer_stop(&d->idle_timer);
    uv_timer_stop(&d->rq_timer);
    d->sock->cbs = s->saved_cbs;
    d->sock->owner = s->saved_owner;
    d->tcp = NULL;
    WF_CONN_LOG(WF_LC_filter, WF_LOG_DEBUG, d->id,
                "tcp proxy session closed: %llu bytes received, %llu bytes sent",
                (unsigned long long)s->si.bytes_received, (unsigned long long)s->si.bytes_sent);
    wp_deferred_delete(&d->w->deferred, &s->dd, session_release);
}

const wp_stream_info *wp_tcp_proxy_info(const wp_dconn *d, const wp_cluster **cluster)
{
    const wp_tcp_session *s = d->tcp;
    *cluster = NULL;
    if (!s)
        return NULL;
    if (s->cluster >= 0)
        *cluster = &d->wg->gen->cfg->clusters[s->cluster];
    return &s->si;
}

const wp_istio_workload *wp_tcp_proxy_upstream_peer(const wp_dconn *d)
{
    wp_tcp_session *s = d->tcp;
    if (!s)
        return NULL;
    keep_up_peer(s);
    return s->have_up_peer ? &s->up_peer.w : NULL;
}

const wp_nf_ops wp_tcp_proxy_network_filter = {
    WP_TCP_PROXY_NAME,
    on_new_connection,
    on_data,
    on_close,
};
