/*
 * kube_writer_sync.h - the write-back reconciler of weft-pilot (kube_writer.h runs it on its
 * thread): one pass compares what should be (kube_writer_plan.h) with the reflectors' caches
 * and sends the requests needed, one per object, through a request function (the Kubernetes
 * client, or a fake in tests). Level-triggered, as istiod's controllers' queues are: a pass
 * reconsiders every object, so a missed event costs nothing but the next pass.
 *
 * Per object ("ConfigMap ns", "MutatingWebhookConfiguration name", "Validating... name",
 * "Kind/ns/name" for the analysis status):
 *  - the state shown by /debug/kubez: "in sync", "created", "updated", "patched", "error",
 *    "waiting" (a write done, its watch event not seen yet), or a planner note ("wrong
 *    revision", "no webhook to patch"); the last error; counters writes, errors, conflicts;
 *  - after a write the object is not planned again until that cache changes (its generation
 *    moves: the watch brought the write back), so one change is one request;
 *  - a failed request (409 Conflict and AlreadyExists included: the cache was behind; a 5xx,
 *    the API server away, ...) is retried after client-go's back-off (kube/backoff.h: 0.8 s
 *    doubling to 30 s, jittered, reset after 2 min quiet or at the next success), re-planned
 *    from the cache then; it is logged (warning, scope config) once per cause and group,
 *    "cause" being the HTTP status and reason, or the transport error; the next success of the
 *    group logs that it recovered;
 *  - objects that are no longer wanted (a namespace deleted or deselected) are dropped.
 * Nothing is done for a group before its cache listed (a NULL cache) or without a root.
 *
 * Threads: a pass runs on one thread at a time; wf_kw_sync_debug may run on another (a mutex
 * guards the table). No globals.
 */
#ifndef WF_PILOT_KUBE_WRITER_SYNC_H
#define WF_PILOT_KUBE_WRITER_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "kube/event.h"

/* One request: 0 on a 2xx, else -1 with st (code 0 = no HTTP answer) and why. */
typedef int (*wf_kw_request_fn)(void *ud, const char *method, const char *path,
                                const char *content_type, const char *body, wf_kube_status *st,
                                wf_strbuf *why);

/* The groups of objects written; the first WF_KW_WATCHED have a cache (a reflector). */
enum { WF_KW_CM = 0, WF_KW_MWC, WF_KW_VWC, WF_KW_STATUS, WF_KW_GROUPS };
#define WF_KW_WATCHED WF_KW_STATUS

typedef struct wf_kw_inputs {
    const json_t *namespaces; /* {"ns": true} that get the ConfigMap; NULL = not known yet */
    const char *root_pem;     /* the mesh root bundle; NULL = no CA yet (nothing is done) */
    const char *cm_name;      /* the ConfigMap's name */
    const char *revision;     /* istio.io/rev of the webhook configurations */
    bool webhook_ready;       /* pilot's webhook server serves: validating failurePolicy Fail */
    /* analysis status (kube_writer_plan.h wf_kw_status_wanted); NULL = PILOT_ENABLE_ANALYSIS
     * off. Compared with what was last written (no cache): one write per change. */
    const json_t *status;
    /* the caches by group: {"ns/name": obj} for ConfigMaps, {"name": obj} for the webhook
     * configurations; NULL = not listed yet (the group is skipped) */
    const json_t *cache[WF_KW_WATCHED];
    uint64_t gen[WF_KW_GROUPS]; /* the caches' generations (status: unused) */
    int64_t now_ms;             /* monotonic */
    const atomic_bool *stop;    /* set: end the pass at once; NULL = never */
} wf_kw_inputs;

typedef struct wf_kw_sync wf_kw_sync;

/* seed: the back-off's random source (0 = fixed). NULL on OOM. */
wf_kw_sync *wf_kw_sync_new(uint64_t seed);
void wf_kw_sync_free(wf_kw_sync *s);

/* One pass. Returns when the next retry is due (ms, now_ms's clock), INT64_MAX when none is;
 * -1 when memory ran out (the pass stopped; the next one starts over). */
int64_t wf_kw_sync_pass(wf_kw_sync *s, const wf_kw_inputs *in, wf_kw_request_fn fn, void *ud);

/* Totals since start. */
typedef struct wf_kw_counts {
    uint64_t creates, updates, patches; /* successful writes */
    uint64_t errors, conflicts;         /* failed requests; conflicts: 409 among them */
} wf_kw_counts;
void wf_kw_sync_counts(wf_kw_sync *s, wf_kw_counts *out);

/* The table for /debug/kubez (a new object): {"configmaps": {ns: item},
 * "mutatingwebhookconfigurations": {name: item}, "validatingwebhookconfigurations": {name:
 * item}, "status": {"Kind/ns/name": item}, "counters": {"creates", "updates", "patches", "errors",
 * "conflicts"}} with item
 * {"state", "last_error", "writes", "errors", "conflicts", "retry_in_ms"}; at now_ms. NULL on
 * OOM. */
json_t *wf_kw_sync_debug(wf_kw_sync *s, int64_t now_ms);

/* Appends Istio's webhook patch metrics in Prometheus text format (pkg/webhooks/monitoring.go:
 * webhook_patch_attempts_total{name}, webhook_patch_retries_total{name};
 * pkg/webhooks/validation/controller/monitoring.go:
 * galley_validation_config_updates, galley_validation_config_update_error) and weft's
 * weft_pilot_kube_writes_total{op}, weft_pilot_kube_write_errors_total and
 * weft_pilot_kube_write_conflicts_total. */
void wf_kw_sync_metrics_text(wf_kw_sync *s, wf_strbuf *b);

#endif
