/*
 * client.h - requests to the Kubernetes API server: one request, a paged list, a watch stream
 * (../shared/reference/kubernetes.md §1.1-1.4, §1.7). Blocking: for a worker thread (the
 * reflector's), never for the libuv loop.
 *
 * Behaviour followed (client-go's rest client and pager):
 *  - every request carries `Accept: application/json` and, when the config has one, the bearer
 *    token; a tokenFile is read again once its copy is 50 s old (client-go's cached file token
 *    source: a one-minute period less 10 s leeway) and at once after a 401 (client-go resets
 *    the token source on 401), so rotated projected tokens are picked up;
 *    `User-Agent: weft/<version>`. One connection per request (no keep-alive yet).
 *  - a status outside 2xx is an error whose text is the Status body (§1.7):
 *    "GET /api/v1/pods: 403 Forbidden: pods is forbidden: ...".
 *  - list: `limit` pages (0 = no limit; client-go's pager and kubectl use 500) followed through
 *    `continue` with the same selectors; the list resourceVersion is the first page's. A
 *    continue token that expired (410) restarts the list once without it, as the pager's
 *    full-list fallback does.
 *  - watch: `watch=true&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N` (+
 *    selectors); the chunked body is read event by event (stream.h, event.h).
 *
 * Threads: a client may be used by several threads at once (its config and SSL_CTX are only
 * read). Every call takes a cancel fd (readable = stop now; -1 = none).
 */
#ifndef WF_KUBE_CLIENT_H
#define WF_KUBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "kube/event.h"
#include "kube/http.h"
#include "kube/kinds.h"
#include "kube/kubeconfig.h"
#include "kube/stream.h"

typedef struct wf_kube_client wf_kube_client;

/* A client for cfg (the client takes ownership of cfg). Returns 0, or -1 with why (a bad server
 * URL, CA or client certificate); cfg is freed either way. */
int wf_kube_client_new(wf_kube_config *cfg, wf_kube_client **out, wf_strbuf *why);
void wf_kube_client_free(wf_kube_client *c);
const wf_kube_config *wf_kube_client_config(const wf_kube_client *c);

/* One request (method "GET", "POST", ...; path with its query, from the API root; body JSON or
 * NULL), timeout_ms for the whole exchange (0 = none). On a 2xx returns 0 with the body in resp
 * (appended). Otherwise returns -1 with st filled (st->code 0 = no HTTP response) and why
 * ("GET /api/v1/pods: 401 Unauthorized: Unauthorized"). */
int wf_kube_request(wf_kube_client *c, const char *method, const char *path, const char *body,
                    int cancel_fd, long timeout_ms, wf_strbuf *resp, wf_kube_status *st,
                    wf_strbuf *why);

/* The same with the body's Content-Type (NULL = "application/json"): PATCH takes
 * "application/json-patch+json", "application/merge-patch+json", ... (§1.6). */
int wf_kube_request_ct(wf_kube_client *c, const char *method, const char *path,
                       const char *content_type, const char *body, int cancel_fd, long timeout_ms,
                       wf_strbuf *resp, wf_kube_status *st, wf_strbuf *why);

typedef struct wf_kube_list_opts {
    const char *label_selector; /* NULL = none */
    const char *field_selector; /* NULL = none */
    long limit;                 /* page size; 0 = one unpaged list */
    long timeout_ms;            /* per page; 0 = 60000 */
} wf_kube_list_opts;

/* Percent-encodes s for a query value (RFC 3986 unreserved bytes kept) into out. */
void wf_kube_query_escape(wf_strbuf *out, const char *s);

/* Lists kind in ns (NULL = all namespaces) following every page. Returns 0 with *items (a new
 * JSON array of the objects, each with kind and apiVersion set as watch events carry them),
 * *rv (malloc'ed list resourceVersion) and *pages, or -1 with st and why. */
int wf_kube_list(wf_kube_client *c, const wf_kube_kind *k, const char *ns,
                 const wf_kube_list_opts *o, int cancel_fd, json_t **items, char **rv, int *pages,
                 wf_kube_status *st, wf_strbuf *why);

typedef struct wf_kube_watch wf_kube_watch;

typedef struct wf_kube_watch_opts {
    const char *label_selector, *field_selector; /* NULL = none */
    const char *rv;                              /* resourceVersion to start after */
    long timeout_s;                              /* timeoutSeconds (server side); 0 = none */
    bool bookmarks;                              /* allowWatchBookmarks=true */
} wf_kube_watch_opts;

/* Opens a watch; the connection waits at most timeout_s + 30 s for data (the server's timeout
 * plus slack) before "timed out". Returns 0 with *w, or -1 with st and why (an HTTP error before
 * the stream: bad parameters, auth). */
int wf_kube_watch_open(wf_kube_client *c, const wf_kube_kind *k, const char *ns,
                       const wf_kube_watch_opts *o, int cancel_fd, wf_kube_watch **w,
                       wf_kube_status *st, wf_strbuf *why);
/* The next event: 1 with *ev (clear it), 0 at the clean end of the stream (the server's
 * timeout), -1 with why (network error, malformed body or event). */
int wf_kube_watch_next(wf_kube_watch *w, wf_kube_event *ev, wf_strbuf *why);
void wf_kube_watch_close(wf_kube_watch *w);

#endif
