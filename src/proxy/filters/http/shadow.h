/*
 * shadow.h - mirrored ("shadow") requests of Envoy's router (request_mirror_policies;
 * router.cc's shadowing through the cluster manager's async client): a copy of the request
 * goes to the mirror cluster with the Host suffixed "-shadow", fire and forget. Its answer
 * is read and dropped; its failure never touches the original request.
 *
 * Envoy behaviour followed (docs api-v3 RouteAction.RequestMirrorPolicy, reference §3.1):
 *  - the shadow is sent once the original request is complete, with the body the router
 *    buffered (a body that overflowed the retry/shadow buffer cancels the shadows);
 *  - Host gets "-shadow" appended to the host name, before a port ("catalog:8080" ->
 *    "catalog-shadow:8080") [verify: older Envoy appended after the port], unless
 *    disable_shadow_host_suffix_append;
 *  - the shadow is bounded by the route timeout (none when the route has none) and counts
 *    in the mirror cluster's stats (upstream_cx_*, upstream_rq_total, upstream_rq_completed,
 *    upstream_rq_<code>, upstream_rq_timeout).
 *
 * weft opens a connection per shadow (no pooling: mirrors are a testing tool) on the
 * worker's loop; the worker closes what is left when it stops.
 */
#ifndef WEFT_PROXY_SHADOW_H
#define WEFT_PROXY_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

typedef struct wp_worker wp_worker;
typedef struct wp_shadow wp_shadow;
typedef struct wp_wgen wp_wgen;

/* Sends a shadow request to a host of cluster index `cluster` of generation wg (the
 * shadow holds it until it ends) on worker w: head (a
 * complete HTTP/1.1 request head, CRLF CRLF included) and then the nbody buffers. Both are
 * copied; the caller keeps its memory. timeout_ms 0 = no timeout. head_request: the request is
 * a HEAD (its answer has no body). Returns 0 when started,
 * -1 when it could not be (no host, out of memory: counted, nothing else happens). */
int wp_shadow_send(wp_worker *w, wp_wgen *wg, int cluster, const char *head, size_t head_len,
                   const uv_buf_t *body, unsigned nbody, uint64_t timeout_ms, bool head_request);

/* Closes every shadow of w still in flight (worker stop). */
void wp_shadows_close(wp_worker *w);

/* Writes into out (cap bytes) the Host value with "-shadow" appended to the host name
 * (before a ":port", after a "[v6]" literal). Returns the length, or 0 when it does not fit. */
size_t wp_shadow_host(const char *host, size_t len, char *out, size_t cap);

#endif
