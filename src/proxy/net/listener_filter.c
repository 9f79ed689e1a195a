/*
 * listener_filter.c - the listener filter runner and socket annotations (listener_filter.h).
 */
#include "proxy/net/listener_filter.h"

#include <ctype.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static void sa_copy(wp_lf_addr *dst, const struct sockaddr *sa)
{
    memset(dst, 0, sizeof(*dst));
    if (!sa)
        return;
    size_t n = sa->sa_family == AF_INET6  ? sizeof(struct sockaddr_in6)
               : sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                          : 0;
    memcpy(dst, sa, n);
}

void wp_lf_socket_init(wp_lf_socket *s, const struct sockaddr *local, const struct sockaddr *peer)
{
    sa_copy(&s->local, local);
    sa_copy(&s->remote, peer);
    sa_copy(&s->direct_remote, peer);
    s->local_restored = false;
    s->fd = -1;
    s->det = NULL;
}

void wp_lf_socket_release(wp_lf_socket *s)
{
    free(s->det);
    s->det = NULL;
}

static wp_lf_detected *detected(wp_lf_socket *s)
{
    if (!s->det)
        s->det = calloc(1, sizeof(*s->det));
    return s->det;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

int wp_lf_set_transport_protocol(wp_lf_socket *s, const char *proto)
{
    wp_lf_detected *d = detected(s);
    if (!d)
        return -1;
    copy_str(d->transport_protocol, sizeof(d->transport_protocol), proto);
    return 0;
}

int wp_lf_set_server_name(wp_lf_socket *s, const char *name)
{
    wp_lf_detected *d = detected(s);
    if (!d)
        return -1;
    copy_str(d->server_name, sizeof(d->server_name), name);
    for (char *p = d->server_name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return 0;
}

int wp_lf_set_application_protocols(wp_lf_socket *s, const char *const *protos, size_t n)
{
    wp_lf_detected *d = detected(s);
    if (!d)
        return -1;
    size_t used = 0;
    d->nalpn = 0;
    for (size_t i = 0; i < n && d->nalpn < WP_LF_MAX_ALPN; i++) {
        size_t len = strlen(protos[i]);
        if (used + len + 1 > sizeof(d->alpn_buf))
            break;
        memcpy(d->alpn_buf + used, protos[i], len + 1);
        d->alpn[d->nalpn++] = d->alpn_buf + used;
        used += len + 1;
    }
    return 0;
}

void wp_lf_restore_local_address(wp_lf_socket *s, const struct sockaddr *sa)
{
    sa_copy(&s->local, sa);
    s->local_restored = true;
}

const char *wp_lf_server_name(const wp_lf_socket *s)
{
    return s->det ? s->det->server_name : "";
}

const char *wp_lf_transport_protocol(const wp_lf_socket *s)
{
    /* Envoy's ActiveTcpSocket::newConnection default */
    return s->det && s->det->transport_protocol[0] ? s->det->transport_protocol : "raw_buffer";
}

/* The filter that stopped the run (cb->next is past it). */
static const wp_listener_filter *waiting(const wp_lf_callbacks *cb)
{
    return cb->next > 0 ? &cb->filters[cb->next - 1] : NULL;
}

bool wp_lf_wants_data(const wp_lf_callbacks *cb)
{
    const wp_listener_filter *f = waiting(cb);
    return f && f->ops->on_data;
}

size_t wp_lf_max_read_bytes(const wp_lf_callbacks *cb)
{
    const wp_listener_filter *f = waiting(cb);
    return f && f->ops->on_data && f->ops->max_read_bytes ? f->ops->max_read_bytes(f->config) : 0;
}

/* The socket's local (possibly restored) port; -1 when it is not an IP address (Envoy's
 * ListenerFilterDstPortMatcher then does not match). */
static int local_port(const wp_lf_socket *s)
{
    if (s->local.sa.sa_family == AF_INET)
        return ntohs(s->local.in.sin_port);
    if (s->local.sa.sa_family == AF_INET6)
        return ntohs(s->local.in6.sin6_port);
    return -1;
}

bool wp_lf_pred_match(const wp_lf_pred *p, const wp_lf_socket *s)
{
    switch (p->kind) {
    case WP_LF_PRED_ANY:
        return true;
    case WP_LF_PRED_PORT_RANGE: {
        int port = local_port(s);
        return port >= 0 && p->start <= port && port < p->end;
    }
    case WP_LF_PRED_OR:
        for (size_t i = 0; i < p->nkids; i++)
            if (wp_lf_pred_match(&p->kids[i], s))
                return true;
        return false;
    case WP_LF_PRED_AND:
        for (size_t i = 0; i < p->nkids; i++)
            if (!wp_lf_pred_match(&p->kids[i], s))
                return false;
        return true;
    case WP_LF_PRED_NOT:
        return !wp_lf_pred_match(p->kids, s);
    }
    return false;
}

wp_lf_status wp_lf_run(wp_lf_callbacks *cb)
{
    while (cb->next < cb->nfilters) {
        const wp_listener_filter *f = &cb->filters[cb->next++];
        if (f->disabled && wp_lf_pred_match(f->disabled, cb->socket))
            continue;
        wp_lf_status st = f->ops->on_accept(f->config, cb);
        /* a reading filter is given what earlier filters read at once (Envoy's
         * ActiveTcpSocket::continueFilterChain with a non-empty listener filter buffer) */
        if (st == WP_LF_STOP_ITERATION && f->ops->on_data && cb->len > 0)
            st = f->ops->on_data(f->config, cb, cb->data, cb->len);
        if (st != WP_LF_CONTINUE)
            return st;
    }
    return WP_LF_CONTINUE;
}

/* The rest of the chain after a filter that stopped is done (success) or failed. */
static void continue_chain(wp_lf_callbacks *cb, bool success)
{
    if (!success) {
        cb->done(cb, false);
        return;
    }
    wp_lf_status st = wp_lf_run(cb);
    if (st != WP_LF_STOP_ITERATION)
        cb->done(cb, st == WP_LF_CONTINUE);
}

void wp_lf_on_data(wp_lf_callbacks *cb, const unsigned char *data, size_t len)
{
    cb->data = data;
    cb->len = len;
    const wp_listener_filter *f = waiting(cb);
    if (!f || !f->ops->on_data)
        return;
    wp_lf_status st = f->ops->on_data(f->config, cb, data, len);
    if (st != WP_LF_STOP_ITERATION)
        continue_chain(cb, st == WP_LF_CONTINUE);
}

const struct sockaddr *wp_lf_conn_original_dst(const wp_lf_conn *c)
{
    return c && c->sock.local_restored ? &c->sock.local.sa : NULL;
}

void wp_lf_conn_release(wp_lf_conn *c)
{
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
    wp_lf_socket_release(&c->sock);
}

void wp_lf_callbacks_init(wp_lf_callbacks *cb, wp_lf_socket *s, const wp_listener_filter *f,
                          size_t n, void (*done)(wp_lf_callbacks *, bool), void *owner)
{
    cb->socket = s;
    cb->filters = f;
    cb->nfilters = n;
    cb->next = 0;
    cb->continue_filter_chain = continue_chain;
    cb->done = done;
    cb->owner = owner;
    cb->stats = NULL;
    cb->data = NULL;
    cb->len = 0;
}

void wp_lf_match_input(const wp_lf_socket *s, wp_fcm_input *in)
{
    in->local = (const struct sockaddr *)&s->local;
    in->remote = (const struct sockaddr *)&s->remote;
    in->direct_remote = (const struct sockaddr *)&s->direct_remote;
    in->server_name = wp_lf_server_name(s);
    in->transport_protocol = wp_lf_transport_protocol(s);
    in->application_protocols = s->det ? s->det->alpn : NULL;
    in->napplication_protocols = s->det ? s->det->nalpn : 0;
}
