#include "proxy/server/conn_handler.h"

#include <stdlib.h>

#include "core/log.h"
#include "proxy/filters/network/filters.h"
#include "proxy/http/conn.h"
#include "proxy/net/tls_socket.h"

/* Envoy's ActiveStreamListenerBase::newConnection, once the listener filters are done (ok:
 * none failed); sock: the accepted socket with what the listener filters found. */
static void new_connection(wp_dconn *d, const wp_lf_socket *sock, bool ok)
{
    const wp_filter_chain *fc = ok ? wp_listener_find_chain(d->listener, sock) : NULL;
    if (!fc) {
        if (ok) {
            WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id,
                        "closing connection from %s: no matching filter chain found", d->remote);
            wp_listener_stat(d, WP_LS_no_filter_chain_match, 1);
        }
        wp_dconn_close(d);
        return;
    }
    if (fc->tls) { /* the chain's DownstreamTlsContext: TLS over the accepted socket */
        wp_tls_stats st = {d->w->stats, d->ls->ssl, "listener", d->listener->stat_name};
        wp_tsock *t = wp_tls_socket_wrap(d->sock, &d->w->loop, fc->tls->ctx, NULL, &st);
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
        wp_nf_chain_add(&d->nf, wp_network_filter_ops(fc->filters[i].kind), d);
    wp_nf_chain_on_new_connection(&d->nf);
}

static void listener_filters_done(wp_lf_callbacks *cb, bool ok)
{
    wp_dconn *d = cb->owner;
    new_connection(d, &d->lf->sock, ok);
}

void wp_conn_handler_accept(wp_worker *w, size_t listener, uv_stream_t *server)
{
    wp_lf_socket sock;
    wp_dconn *d = wp_dconn_accept(w, listener, server, &sock);
    if (!d)
        return;
    const wp_listener *l = d->listener;
    if (!l->nlistener_filters) {
        new_connection(d, &sock, true);
        return;
    }
    if (!(d->lf = malloc(sizeof(*d->lf)))) {
        wp_dconn_close(d);
        return;
    }
    d->lf->sock = sock;
    wp_lf_callbacks_init(&d->lf->cb, &d->lf->sock, l->listener_filters, l->nlistener_filters,
                         listener_filters_done, d);
    if (wp_lf_run(&d->lf->cb) == WP_LF_CONTINUE)
        new_connection(d, &d->lf->sock, true);
}
