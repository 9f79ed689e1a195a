/*
 * reflector.h - one kind's list + watch with a local cache, client-go's Reflector
 * (k8s.io/client-go/tools/cache/reflector.go) for weft-pilot's Kubernetes config source.
 *
 * Behaviour followed (../shared/reference/kubernetes.md §1.3-1.4):
 *  - list (paged, `limit` = page_size, default 500) then watch from the list's resourceVersion
 *    with allowWatchBookmarks=true and timeoutSeconds random in [300, 600) s (client-go's
 *    minWatchTimeout 5 min, times 1 + rand); the cache, keyed "namespace/name" ("name" for
 *    cluster-scoped kinds), is replaced by each list and updated by each event; bookmarks only
 *    move the resourceVersion;
 *  - a watch that ends cleanly (the server's timeout) is renewed at once from the last
 *    resourceVersion, without a list;
 *  - `410 Gone`/`Expired`, as the watch's HTTP answer or as an in-stream ERROR event, means the
 *    resourceVersion is too old: relist (replace the cache: objects gone from the new list
 *    disappear), then watch from the new list's resourceVersion;
 *  - any other error (connection refused or reset, TLS, a Status error, a malformed stream)
 *    backs off with client-go's exponential back-off (backoff.h: 800 ms doubling to 30 s,
 *    jitter 1.0, reset after 2 min quiet) before retrying: a failed list lists again, a failed
 *    watch watches again from the same resourceVersion (a 410 then turns it into a relist), as
 *    client-go does; a 410 relist also waits one back-off step, as client-go's BackoffUntil
 *    does between two ListAndWatch runs;
 *  - while the API server is unreachable the cache keeps the last good state;
 *  - every list is a consistent read (no resourceVersion), as client-go's relist after Expired;
 *    client-go's first list asks resourceVersion "0" (the API server's watch cache, possibly
 *    stale): weft prefers a fresh state over that saving.
 *
 * Threads: the list/watch loop runs on the reflector's own thread (blocking HTTP, kube/client.h),
 * the cache is guarded by a mutex, and `changed` runs on the loop's thread (uv_async, so
 * several changes may come as one call): the consumer then takes wf_kube_reflector_snapshot and
 * wf_kube_reflector_state. Stopping wakes the thread at once (an eventfd polled with every
 * socket wait) and joins it.
 */
#ifndef WF_KUBE_REFLECTOR_H
#define WF_KUBE_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "kube/client.h"
#include "kube/kinds.h"

typedef enum wf_kube_reflector_phase {
    WF_KUBE_STARTING = 0,
    WF_KUBE_LISTING,     /* a list (first or relist) is running */
    WF_KUBE_WATCHING,    /* a watch stream is open (connected) */
    WF_KUBE_BACKING_OFF, /* waiting after an error */
    WF_KUBE_STOPPED,
} wf_kube_reflector_phase;

/* "starting", "listing", "watching", "backing-off", "stopped". */
const char *wf_kube_reflector_phase_name(wf_kube_reflector_phase p);

typedef struct wf_kube_reflector_opts {
    const wf_kube_kind *kind;
    const char *ns;             /* NULL = all namespaces; copied */
    const char *label_selector; /* NULL = none; copied */
    const char *field_selector; /* NULL = none; copied (istiod: Pods "status.phase!=Failed") */
    long page_size;             /* 0 = 500 */
    long watch_timeout_s;       /* 0 = random in [300, 600) */
    uint64_t seed;              /* random source for jitter and timeouts; 0 = from the clock */
} wf_kube_reflector_opts;

/* What /debug shows of one watch. */
typedef struct wf_kube_reflector_state {
    wf_kube_reflector_phase phase;
    char rv[64];              /* last resourceVersion seen (list, event or bookmark), "" before */
    char last_error[512];     /* the last error ("" when none yet); kept after recovery */
    bool synced;              /* a list has completed: the cache holds a full state */
    size_t objects;           /* objects in the cache */
    uint64_t generation;      /* bumped at every cache change */
    uint64_t lists;           /* completed lists */
    uint64_t pages;           /* pages read by them */
    uint64_t relists_expired; /* relists caused by 410 */
    uint64_t watches;         /* watch streams opened */
    uint64_t events;          /* watch events applied (ADDED/MODIFIED/DELETED) */
    uint64_t bookmarks;
    uint64_t errors;
    int64_t backoff_ms; /* the current (or last) back-off wait */
} wf_kube_reflector_state;

typedef struct wf_kube_reflector wf_kube_reflector;

/* A reflector over client (borrowed: it must outlive the reflector) on loop; changed(ud) runs on
 * the loop after cache or state changes. Starts its thread now. NULL with why on failure. */
wf_kube_reflector *wf_kube_reflector_start(uv_loop_t *loop, wf_kube_client *client,
                                           const wf_kube_reflector_opts *opts,
                                           void (*changed)(void *ud), void *ud, wf_strbuf *why);

/* Stops the thread (at once: blocking waits are cancelled), joins it, and frees the reflector
 * once its uv handle closed (run the loop). Call on the loop's thread. NULL ok. */
void wf_kube_reflector_stop(wf_kube_reflector *r);

/* The cache now: a new JSON object {"ns/name": object} (the objects are shared references,
 * never to be modified). NULL on out of memory. */
json_t *wf_kube_reflector_snapshot(wf_kube_reflector *r);

/* Blocks the calling thread until the first list completed (synced) or timeout_ms passed
 * (istiod's cache sync wait before it serves: a config source's start() can call it on the loop
 * thread, as the reflector's thread never waits for the loop). Returns true when synced. */
bool wf_kube_reflector_wait_synced(wf_kube_reflector *r, int64_t timeout_ms);

/* The state now (copied). */
void wf_kube_reflector_state_get(wf_kube_reflector *r, wf_kube_reflector_state *out);

#endif
