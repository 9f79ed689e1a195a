/*
 * metadata_exchange.c - the istio.metadata_exchange network filter (metadata_exchange.h); the
 * wire protocol is net/peer_exchange.c.
 */
#include "proxy/filters/network/metadata_exchange.h"

#include <stdlib.h>

#include "proxy/http/conn.h"

/* ------------------------------------------------------------------ the downstream filter */

static void mx_release(wp_deferred_item *it)
{
    free((char *)it - offsetof(wp_tcp_mx, dd));
}

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    wp_dconn *d = f->self;
    wp_tcp_mx *m = calloc(1, sizeof *m);
    if (!m)
        return WP_NF_CONTINUE; /* no exchange: the labels stay unknown */
    m->cfg = f->config;
    *f->ctx = m;
    d->mx = m;
    return WP_NF_CONTINUE;
}

static wp_nf_status on_data(wp_nf_filter *f, bool end_stream)
{
    (void)f;
    (void)end_stream; /* the TCP proxy drains the preamble from its buffer (header comment) */
    return WP_NF_CONTINUE;
}

/* The filters after this one (istio.stats) still read the peer during this close: freed at
 * the end of the loop iteration. */
static void on_close(wp_nf_filter *f)
{
    wp_tcp_mx *m = *f->ctx;
    if (!m)
        return;
    *f->ctx = NULL;
    wp_dconn *d = f->self;
    wp_deferred_delete(&d->w->deferred, &m->dd, mx_release);
}

const wp_nf_ops wp_tcp_mx_network_filter = {
    WP_TCP_MX_NAME,
    on_new_connection,
    on_data,
    on_close,
};
