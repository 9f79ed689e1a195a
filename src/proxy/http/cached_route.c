/*
 * cached_route.c - the stream's cached route (see cached_route.h).
 */
#include "proxy/http/cached_route.h"

#include <string.h>
#include <strings.h>

#include "proxy/http/conn.h"
#include "proxy/http/headers.h"
#include "proxy/net/transport_socket.h"

const char *wp_cached_route_default_host(const wp_stream *s)
{
    const char *def = s->d->hcm->default_host_for_http_10;
    if (!def || s->req.version_minor != 0 ||
        h1_find_header(s->req.headers, s->req.nheaders, "host"))
        return NULL;
    return def;
}

static const char *host_of(const wp_stream *s, size_t *len)
{
    const h1_header *h = h1_find_header(s->req.headers, s->req.nheaders, "host");
    if (h) {
        *len = h->value.len;
        return h->value.p;
    }
    const char *def = wp_cached_route_default_host(s);
    *len = def ? strlen(def) : 0;
    return def ? def : "";
}

void wp_cached_route_request(const wp_stream *s, wp_route_req *rq)
{
    memset(rq, 0, sizeof(*rq));
    rq->method = s->req.method.p;
    rq->method_len = s->req.method.len;
    rq->path = s->req.target.p;
    rq->path_len = s->req.target.len;
    rq->authority = host_of(s, &rq->authority_len);
    rq->scheme = "http";
    rq->headers = s->req.headers;
    rq->nheaders = s->req.nheaders;
    /* the forwarded protocol, as the router forwards it: the client's x-forwarded-proto,
     * else the connection's (with use_remote_address the connection's alone, as Envoy's
     * edge HCM overwrites the header) */
    rq->https = s->d->sock && wp_tsock_ssl_info(s->d->sock) != NULL;
    bool edge = s->d->hcm && s->d->hcm->use_remote_address;
    for (size_t i = 0; !edge && i < s->req.nheaders; i++)
        if (WP_NAME_IS(&s->req.headers[i].name, "x-forwarded-proto"))
            rq->https = s->req.headers[i].value.len == 5 &&
                        !strncasecmp(s->req.headers[i].value.p, "https", 5);
}

void wp_cached_route_refresh(wp_stream *s)
{
    if (s->resolved)
        return;
    s->resolved = true;
    wp_worker *w = s->d->w;
    const wp_route_config *rc = s->d->hcm->route_config;
    wp_route_req rq;
    wp_cached_route_request(s, &rq);
    s->weighted = -1;
    const wp_vhost *vh = rc ? wp_route_find_vhost(rc, rq.authority, rq.authority_len) : NULL;
    const wp_route *r = vh ? wp_route_match(&w->rx, vh, &rq) : NULL;
    s->route = r;
    s->vhost = vh;
    if (!r)
        return;
    s->si.route_name = r->name && r->name[0] ? r->name : NULL;
    if (r->action != WP_ACT_ROUTE)
        return;
    int ci = r->cluster;
    if (r->nweighted) {
        s->weighted = wp_route_pick_weighted(r, wp_rand(w));
        ci = r->weighted[s->weighted].cluster;
    }
    if (ci < 0)
        return;
    const wp_cluster *c = &s->cfg->clusters[ci];
    s->cluster = ci;
    s->si.upstream_cluster = c->name;
    s->si.upstream_cluster_stat = c->alt_stat_name ? c->alt_stat_name : c->name;
}

void wp_cached_route_clear(wp_stream *s)
{
    s->resolved = false;
    s->route = NULL;
    s->vhost = NULL;
    s->weighted = -1;
    s->cluster = -1;
    s->si.route_name = NULL;
    s->si.upstream_cluster = NULL;
    s->si.upstream_cluster_stat = NULL;
}
