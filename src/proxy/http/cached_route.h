/*
 * cached_route.h - the connection manager's cached route of a stream (Envoy's
 * ConnectionManagerImpl::ActiveStream::refreshCachedRoute / clearRouteCache): the virtual
 * host, route, weighted cluster and cluster chosen once for the request, before any HTTP
 * filter runs, so that a filter's local reply (the fault filter's abort) logs them too and the
 * router (filters/http, router.c) starts from them.
 *
 * Envoy behaviour followed: the virtual host is matched by the request's :authority (Host, or
 * the HCM's default_host_for_http_10 for an HTTP/1.0 request without one), the route by the
 * virtual host's routes in order (route.h); a weighted cluster is picked once per request (the
 * worker's random generator); %ROUTE_NAME% and %UPSTREAM_CLUSTER% come from the choice.
 *
 * Inputs: the stream's parsed request (s->req) and its connection's listener (HCM settings,
 * route configuration). Outputs: s->route, s->vhost, s->weighted, s->cluster (-1 none) and the
 * stream info's route and cluster names; nothing is allocated (the route configuration is the
 * stream's config snapshot, which outlives the stream). No errors: no match leaves NULL / -1.
 * Threads: the stream's worker.
 */
#ifndef WEFT_PROXY_HTTP_CACHED_ROUTE_H
#define WEFT_PROXY_HTTP_CACHED_ROUTE_H

#include "proxy/config/route.h"

struct wp_stream;

/* The request as route matchers see it (method, target, authority, headers): rq points into
 * s's request head (valid while the stream lives). */
void wp_cached_route_request(const struct wp_stream *s, wp_route_req *rq);

/* Chooses the route once (does nothing when it is cached). */
void wp_cached_route_refresh(struct wp_stream *s);

/* clearRouteCache: forgets the choice; the next refresh chooses again. */
void wp_cached_route_clear(struct wp_stream *s);

/* default_host_for_http_10 when it applies to s (HTTP/1.0 without Host), else NULL. */
const char *wp_cached_route_default_host(const struct wp_stream *s);

#endif
