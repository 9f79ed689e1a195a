/*
 * istio_stats.c - istio.stats as a network filter: Istio's TCP metrics (istio_stats.h).
 */
#include "proxy/filters/network/istio_stats.h"

#include "proxy/filters/http/istio_stats.h"
#include "proxy/filters/network/tcp_proxy.h"
#include "proxy/http/conn.h"

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    (void)f;
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
    wp_dconn *d = f->self;
    const wp_istio_stats_filter *cfg = f->config;
    const wp_cluster *cl = NULL;
    const wp_stream_info *si = wp_tcp_proxy_info(d, &cl);
    if (!si || !d->w->istio)
        return; /* no TCP proxy after it: nothing to report */
    wp_istio_sans sans;
    if (cfg->reporter == WP_ISTIO_REPORTER_DESTINATION) {
        const wp_tsock_ssl *ssl = wp_tsock_ssl_info(d->sock);
        sans = (wp_istio_sans){wp_istio_first_san(ssl ? ssl->peer_uri_sans : NULL),
                               wp_istio_first_san(ssl ? ssl->local_uri_sans : NULL)};
    } else {
        sans = (wp_istio_sans){wp_istio_first_san(si->upstream_peer_uri_san),
                               wp_istio_first_san(si->upstream_local_uri_san)};
    }
    wp_istio_str host, name;
    /* no Host header on TCP: the cluster's istio.services only */
    wp_istio_service(NULL, cl, (wp_istio_str){NULL, 0}, true, &host, &name);
    char flags[96];
    wp_si_flags_string(si, flags, sizeof flags);
    wp_istio_labels l;
    wp_istio_labels_build(cfg, NULL, &sans, host, name, "", flags, &l);
    wp_istio_labels_tcp(&l);
    wp_istio_record_tcp(d->w->istio, d->w->id, d->w->stats, &l, 1, 1, si->bytes_sent,
                        si->bytes_received);
}

const wp_nf_ops wp_istio_stats_network_filter = {
    "istio.stats",
    on_new_connection,
    on_data,
    on_close,
};
