/*
 * ca_tokenreview.h - Kubernetes service-account tokens authenticated with a TokenReview, as
 * istiod's KubeJWTAuthenticator does for the CSR service (ca_server.h) and XDS_AUTH
 * (xds_auth.h) in a Kubernetes cluster.
 *
 * Istio behaviour followed (security/pkg/server/ca/authenticate/kubeauth/kube_jwt.go,
 * pkg/kube/tokenreview.go ValidateK8sJwt / getTokenReviewResult, pkg/security TokenAudiences
 * default "istio-ca", the default cluster ID "Kubernetes"):
 *  - POST /apis/authentication.k8s.io/v1/tokenreviews
 *    {"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",
 *     "spec":{"token":"<token>","audiences":["istio-ca"]}}
 *  - the answer: status.error non-empty -> "the service account authentication returns an
 *    error: <error>"; status.authenticated false -> "the token is not authenticated"; no group
 *    "system:serviceaccounts" in status.user.groups -> "the token is not a service account";
 *    status.user.username not "system:serviceaccount:<ns>:<sa>" (four ':'-separated parts) ->
 *    "invalid username field in the token review result"; an empty namespace or service
 *    account -> "failed to parse the JWT; namespace required" / "... service account required".
 *    weft also checks status.audiences, when the server returns it, holds "istio-ca" (as the
 *    TokenReview API asks clients to): else "the token audiences [<a> ...] do not include
 *    istio-ca" (weft's text).
 *  - every failure is reported as "failed to validate the JWT from cluster \"Kubernetes\":
 *    <why>" (a request error: the client's text, kube/client.h).
 *  - the identity is then spiffe://<trust domain>/ns/<ns>/sa/<sa> (the caller makes it).
 * Not in istiod: successful reviews are cached for cache_ttl_s (default 60 s), never past the
 * token's own exp claim (read, unverified, from its payload), keyed by the SHA-256 of the token
 * (tokens are never stored beyond a request nor logged). Failures are not cached: an API server
 * that was away answers the next call.
 *
 * Threads: the requests are blocking (kube/client.h) and run on the reviewer's worker threads
 * (WF_TR_WORKERS), never on the loop; answers come back on the loop (a uv_async, which keeps
 * the loop alive only while reviews are pending). Everything
 * below except the pure helpers is for the loop's thread. No globals.
 */
#ifndef WF_PILOT_CA_TOKENREVIEW_H
#define WF_PILOT_CA_TOKENREVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"

#define WF_TR_AUTHENTICATOR "KubeJWTAuthenticator"
#define WF_TR_CLUSTER_ID    "Kubernetes"
#define WF_TR_AUDIENCE      "istio-ca"
#define WF_TR_PATH          "/apis/authentication.k8s.io/v1/tokenreviews"
#define WF_TR_WORKERS       2
#define WF_TR_DEFAULT_TTL_S 60
#define WF_TR_CACHE_MAX     1024
#define WF_TR_NAME_MAX      254

/* ---- pure helpers (any thread) ---------------------------------------------------------- */

/* "system:serviceaccount:<ns>:<sa>" -> ns, sa (WF_TR_NAME_MAX bytes each). 0, or -1 when not
 * four ':'-separated parts with that prefix or a part is too long. Empty ns / sa are returned
 * as such (the caller reports them). */
int wf_tr_parse_username(const char *username, char *ns, char *sa);

/* The TokenReview request body for token into out. 0, or -1 (out of memory). */
int wf_tr_request_body(const char *token, wf_strbuf *out);

/* A TokenReview answer (JSON text, len bytes) -> ns, sa. 0, or -1 with getTokenReviewResult's
 * / KubeJWTAuthenticator's reason in why (without the "failed to validate" prefix). */
int wf_tr_parse_review(const char *json, size_t len, char *ns, char *sa, char *why, size_t cap);

/* The token's exp claim, read without verification; 0 when it has none or is not a JWT. */
int64_t wf_tr_token_exp(const char *token);

/* ---- the cache ------------------------------------------------------------------------- */

typedef struct wf_tr_cache wf_tr_cache;

/* A cache of at most max entries (0 = WF_TR_CACHE_MAX), each kept ttl_s seconds at most
 * (0 = WF_TR_DEFAULT_TTL_S). NULL when out of memory. */
wf_tr_cache *wf_tr_cache_new(size_t max, int64_t ttl_s);
void wf_tr_cache_free(wf_tr_cache *c);
/* 1 with ns / sa when token is cached and fresh at now_s, else 0. */
int wf_tr_cache_get(wf_tr_cache *c, const char *token, int64_t now_s, char *ns, char *sa);
/* Keeps token -> ns/sa from now_s until min(now_s + ttl, exp) (exp 0 = no bound); a full cache
 * drops expired entries, then the one that expires first. Nothing when exp <= now_s. */
void wf_tr_cache_put(wf_tr_cache *c, const char *token, int64_t now_s, int64_t exp, const char *ns,
                     const char *sa);
size_t wf_tr_cache_len(const wf_tr_cache *c);

/* ---- the reviewer ------------------------------------------------------------------------ */

struct wf_kube_client;
typedef struct wf_tokenreview wf_tokenreview;
typedef struct wf_tr_pending wf_tr_pending;

typedef struct wf_tokenreview_opts {
    int64_t cache_ttl_s;     /* 0 = WF_TR_DEFAULT_TTL_S */
    long request_timeout_ms; /* per TokenReview; 0 = 10000 */
} wf_tokenreview_opts;

/* The answer, on the loop: ok with ns / sa, or not with why ("failed to validate the JWT from
 * cluster \"Kubernetes\": ..."). The pending handle is gone when this returns. */
typedef void (*wf_tr_done)(void *ud, bool ok, const char *ns, const char *sa, const char *why);

/* Starts the workers over client (borrowed: it must outlive the reviewer). NULL with why. */
wf_tokenreview *wf_tokenreview_start(uv_loop_t *loop, struct wf_kube_client *client,
                                     const wf_tokenreview_opts *opts, wf_strbuf *why);
/* Cancels the request in flight, joins the workers and answers every review still pending
 * (not ok, "... the TokenReview authenticator stopped"); the memory goes once the loop has
 * closed the reviewer's handle. NULL ok. */
void wf_tokenreview_stop(wf_tokenreview *tr);

/* Authenticates token at now_s: 1 with ns / sa at once (a cached review), 0 with *out when
 * the answer will come through cb(ud, ...), -1 with why (out of memory, stopping). */
int wf_tokenreview_check(wf_tokenreview *tr, const char *token, int64_t now_s, char *ns, char *sa,
                         wf_tr_done cb, void *ud, wf_tr_pending **out, char *why, size_t cap);
/* The caller no longer wants the answer (cb will not be called). p must not have been
 * answered yet. */
void wf_tokenreview_cancel(wf_tr_pending *p);

/* Counters: reviews sent, answered authenticated, cache hits. */
typedef struct wf_tr_stats {
    uint64_t requests, authenticated, cache_hits;
} wf_tr_stats;
wf_tr_stats wf_tokenreview_stats(const wf_tokenreview *tr);

#endif
