/*
 * rbac.c - envoy.filters.network.rbac (rbac.h).
 */
#include "proxy/filters/network/rbac.h"

#include <string.h>

#include "core/log.h"
#include "proxy/filters/rbac/rbac.h"
#include "proxy/http/conn.h"
#include "proxy/net/transport_socket.h"

enum { UNKNOWN, ALLOWED, DENIED };

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    *f->state = UNKNOWN;
    return WP_NF_CONTINUE;
}

/* The connection as the engine sees it. */
static void input_of(wp_dconn *d, wp_rbac_input *in)
{
    memset(in, 0, sizeof(*in));
    in->rx = &d->w->rx;
    in->local = d->local;
    in->direct_remote = d->remote;
    in->remote = d->remote;
    const wp_tsock_ssl *ssl = d->sock ? wp_tsock_ssl_info(d->sock) : NULL;
    if (ssl) {
        in->sni = ssl->sni;
        in->tls = true;
        in->peer_uri_sans = ssl->peer_uri_sans;
        in->peer_subject = ssl->peer_subject;
    }
}

static wp_nf_status on_data(wp_nf_filter *f, bool end_stream)
{
    (void)end_stream;
    wp_dconn *d = f->self;
    const wp_rbac_config *c = f->config;
    if (*f->state == ALLOWED && !c->continuous)
        return WP_NF_CONTINUE;
    if (*f->state == DENIED)
        return WP_NF_STOP_ITERATION;
    wp_rbac_input in;
    input_of(d, &in);
    WF_CONN_LOG(WF_LC_rbac, WF_LOG_DEBUG, d->id,
                "checking connection: remoteAddress: %s, localAddress: %s, ssl: %s", d->remote,
                d->local, in.peer_uri_sans ? in.peer_uri_sans : "none");
    /* the shadow rules are counted once per connection, like the rules */
    wp_rbac_verdict v = wp_rbac_check(c, &in, d->w->stats, NULL, d->id, 0);
    if (v.allowed) {
        *f->state = ALLOWED;
        return WP_NF_CONTINUE;
    }
    *f->state = DENIED;
    WF_CONN_LOG(WF_LC_connection, WF_LOG_DEBUG, d->id, "closing connection: %s (rbac_deny_close)",
                v.details);
    d->termination_details = v.details; /* the TCP proxy's access log shows them too */
    wp_dconn_log_close(d, v.details);
    wp_dconn_close(d);
    return WP_NF_STOP_ITERATION;
}

const wp_nf_ops wp_rbac_network_filter = {
    WP_RBAC_NETWORK_NAME,
    on_new_connection,
    on_data,
    NULL,
};
