/*
 * istio_stats.c - istio.stats as a network filter: Istio's TCP metrics (istio_stats.h).
 */
#include "proxy/filters/network/istio_stats.h"

#include <stdlib.h>

#include "proxy/filters/http/istio_stats.h"
#include "proxy/filters/network/metadata_exchange.h"
#include "proxy/filters/network/tcp_proxy.h"
#include "proxy/http/conn.h"

/* One connection's reporting state: what was reported so far, and the report timer. */
typedef struct {
    uv_timer_t timer;
    wp_dconn *d;
    const wp_istio_stats_filter *cfg;
    uint64_t sent, received; /* bytes reported so far */
    bool opened;             /* the connection was counted as opened */
} istio_tcp;

/* Reports what is new since the last report (Istio's TCP report: the connection as opened on
 * its first report, the byte deltas, the close at the end), with the labels as they are now. */
static void report(wp_dconn *d, const wp_istio_stats_filter *cfg, istio_tcp *st, bool closing)
{
    const wp_cluster *cl = NULL;
    const wp_stream_info *si = wp_tcp_proxy_info(d, &cl);
    if (!si || !d->w->istio)
        return; /* no TCP proxy after it: nothing to report */
    uint64_t sent = si->bytes_sent - (st ? st->sent : 0);
    uint64_t received = si->bytes_received - (st ? st->received : 0);
    bool opened = !st || !st->opened;
    if (!closing && !opened && !sent && !received)
        return;
    wp_istio_sans sans;
    const wp_istio_workload *peer; /* Istio's downstream_peer / upstream_peer filter state */
    if (cfg->reporter == WP_ISTIO_REPORTER_DESTINATION) {
        peer = wp_tcp_mx_peer_workload(d->mx);
        const wp_tsock_ssl *ssl = wp_tsock_ssl_info(d->sock);
        sans = (wp_istio_sans){wp_istio_first_san(ssl ? ssl->peer_uri_sans : NULL),
                               wp_istio_first_san(ssl ? ssl->local_uri_sans : NULL)};
    } else {
        peer = wp_tcp_proxy_upstream_peer(d);
        sans = (wp_istio_sans){wp_istio_first_san(si->upstream_peer_uri_san),
                               wp_istio_first_san(si->upstream_local_uri_san)};
    }
    wp_istio_str host, name;
    /* no Host header on TCP: the cluster's istio.services only */
    wp_istio_service(NULL, cl, (wp_istio_str){NULL, 0}, true, &host, &name);
    char flags[96];
    wp_si_flags_string(si, flags, sizeof flags);
    wp_istio_labels l;
    wp_istio_labels_build(cfg, peer, &sans, host, name, "", flags, &l);
    wp_istio_labels_tcp(&l);
    wp_istio_record_tcp(d->w->istio, d->w->id, d->w->stats, &l, opened, closing, sent, received);
    if (st) {
        st->opened = true;
        st->sent = si->bytes_sent;
        st->received = si->bytes_received;
    }
}

static void on_timer(uv_timer_t *t)
{
    istio_tcp *st = t->data;
    if (!st->d->closing)
        report(st->d, st->cfg, st, false);
}

static void on_timer_closed(uv_handle_t *h)
{
    free(h->data);
}

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    wp_dconn *d = f->self;
    const wp_istio_stats_filter *cfg = f->config;
    if (!cfg->tcp_reporting_ms)
        return WP_NF_CONTINUE; /* reported once, at close */
    istio_tcp *st = calloc(1, sizeof *st);
    if (!st)
        return WP_NF_CONTINUE; /* reported once, at close */
    st->d = d;
    st->cfg = cfg;
    uv_timer_init(&d->w->loop, &st->timer);
    st->timer.data = st;
    uv_timer_start(&st->timer, on_timer, cfg->tcp_reporting_ms, cfg->tcp_reporting_ms);
    *f->ctx = st;
    return WP_NF_CONTINUE;
}

static wp_nf_status on_data(wp_nf_filter *f, bool end_stream)
{
    (void)f;
    (void)end_stream;
    return WP_NF_CONTINUE;
}

static void on_close(wp_nf_filter *f)
{
    istio_tcp *st = *f->ctx;
    report(f->self, f->config, st, true);
    if (st) {
        *f->ctx = NULL;
        uv_close((uv_handle_t *)&st->timer, on_timer_closed);
    }
}

const wp_nf_ops wp_istio_stats_network_filter = {
    "istio.stats",
    on_new_connection,
    on_data,
    on_close,
};
