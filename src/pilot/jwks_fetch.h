/*
 * jwks_fetch.h - weft-pilot's JWKS resolver: istiod's JwksResolver (pilot/pkg/model/
 * jwks_resolver.go) for RequestAuthentication rules with `jwksUri` (or only an issuer: OpenID
 * discovery), under istiod's default PILOT_JWT_ENABLE_REMOTE_JWKS=false: pilot fetches the key
 * set and inlines it into the proxies' jwt_authn filters (pilot/jwt.h).
 *
 * Behaviour followed:
 *  - a key set is fetched with GET over HTTP or HTTPS (the server's certificate is verified
 *    against the system's roots and the URI's host), within the rule's timeout (default 5 s);
 *    a status outside 2xx, a body that is not JSON or larger than 1 MiB, or a network error is a
 *    failure;
 *  - without jwksUri the URI is `jwks_uri` of <issuer without trailing '/'>/.well-known/
 *    openid-configuration;
 *  - generation never waits for the network: a key set not fetched yet (or whose fetch failed)
 *    is NULL to the caller, which inlines the fail-closed stand-in (Istio: "The JWKS key is not
 *    yet fetched for issuer ..., using a fake JWKS for now"), and the fetch runs on the
 *    resolver's own thread; when it brings a key set that differs from what generation had, the
 *    `changed` callback runs on the loop's thread so that pilot pushes listeners again;
 *  - refresh: every key set is fetched again every refresh_ms (istiod's
 *    PILOT_JWT_PUB_KEY_REFRESH_INTERVAL, 20 minutes); a failed fetch is retried after 1 s,
 *    doubling up to 60 s (istiod's refreshIntervalOnFailure and backoff); a key set that failed
 *    to refresh keeps its last good copy; failures are logged as istiod does ("Failed to fetch
 *    public key from jwks URI <uri>: <why>") and counted.
 *
 * Threads: wf_jwks_resolver_get may be called from any thread (a mutex guards the cache); the
 * fetch thread is the resolver's; `changed` runs on the loop given to wf_jwks_resolver_new.
 * Memory: returned documents are malloc'ed copies the caller frees.
 */
#ifndef WF_PILOT_JWKS_FETCH_H
#define WF_PILOT_JWKS_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"

typedef struct wf_jwks_resolver wf_jwks_resolver;

#define WF_JWKS_REFRESH_MS (20 * 60 * 1000)

/* A resolver whose fetch thread runs until wf_jwks_resolver_free; changed(arg) runs on loop
 * after a fetch changed a key set. refresh_ms 0 = WF_JWKS_REFRESH_MS. NULL on failure. */
wf_jwks_resolver *wf_jwks_resolver_new(uv_loop_t *loop, uint64_t refresh_ms,
                                       void (*changed)(void *arg), void *arg);
/* Stops the thread (an ongoing fetch finishes within its timeout) and frees everything; must
 * be called on the loop's thread. NULL ok. */
void wf_jwks_resolver_free(wf_jwks_resolver *r);

/* The key set for (jwks_uri, issuer): a malloc'ed copy, or NULL when not fetched (yet) or on
 * out of memory; the first call for a key asks the fetch thread for it. jwks_uri "" = OpenID
 * discovery from issuer. */
char *wf_jwks_resolver_get(wf_jwks_resolver *r, const char *jwks_uri, const char *issuer,
                           long timeout_ms);

/* wf_jwks_resolve_fn (pilot/jwt.h) over a resolver (arg): the same, for pilot/jwt.c. */
char *wf_jwks_resolve(void *arg, const char *jwks_uri, const char *issuer, long timeout_ms);

/* Fetch counters (istiod's pilot_jwks_resolver_network_fetch_{success,fail}_total). */
void wf_jwks_resolver_counts(wf_jwks_resolver *r, uint64_t *ok, uint64_t *failed);

/* One blocking GET of url ("http://host[:port]/path" or "https://..."), timeout_ms for the
 * whole exchange. Returns 0 with the body in *body (malloc'ed, NUL-terminated, *len bytes), or
 * -1 with why (no body). Any status outside 200..299 is a failure ("status 404, message ...").
 * The network part of the resolver, exposed for tests. */
int wf_jwks_http_get(const char *url, long timeout_ms, char **body, size_t *len, wf_strbuf *why);

#endif
