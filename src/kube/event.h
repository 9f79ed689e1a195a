/*
 * event.h - watch events and Status errors of the Kubernetes API
 * (../shared/reference/kubernetes.md §1.4 and §1.7).
 *
 * A watch event is one JSON object per line, {"type": T, "object": {...}} with T one of ADDED,
 * MODIFIED, DELETED, BOOKMARK (an object carrying only metadata.resourceVersion) and ERROR (a
 * Status object, e.g. code 410 reason "Expired" for a resourceVersion older than the server's
 * history). A Status body, {"kind":"Status","status":"Failure","message","reason","code",...},
 * also comes with every HTTP error; wf_kube_status_* turn both into one clear error text:
 * "410 Expired: too old resource version: 5 (9)", "401 Unauthorized: Unauthorized",
 * "HTTP 502 (not a Status: <first bytes of the body>)".
 *
 * Memory: a parsed event owns one reference to its object (jansson); clear it with
 * wf_kube_event_clear. Objects are never changed after parsing, so a reference may be handed to
 * another thread (jansson 2.14 counts references atomically).
 */
#ifndef WF_KUBE_EVENT_H
#define WF_KUBE_EVENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"

typedef enum wf_kube_event_type {
    WF_KUBE_ADDED = 0,
    WF_KUBE_MODIFIED,
    WF_KUBE_DELETED,
    WF_KUBE_BOOKMARK,
    WF_KUBE_ERROR,
} wf_kube_event_type;

/* A Status failure (or an HTTP error without one). code 0 = no HTTP status (network error). */
typedef struct wf_kube_status {
    int code;
    char reason[64];   /* "Expired", "NotFound", ... or "" */
    char message[512]; /* Status.message (cut at 511 bytes), or "" */
} wf_kube_status;

typedef struct wf_kube_event {
    wf_kube_event_type type;
    json_t *object;     /* owned reference; the Status object for ERROR */
    const char *rv;     /* object's metadata.resourceVersion (borrowed from object), or "" */
    wf_kube_status err; /* ERROR only */
} wf_kube_event;

/* "ADDED", ..., "ERROR". */
const char *wf_kube_event_type_name(wf_kube_event_type t);

/* Parses one event line. 0, or -1 with why ("watch event: not JSON: ...", "watch event: unknown
 * type \"X\"", "watch event: no object"). */
int wf_kube_event_parse(const char *line, size_t len, wf_kube_event *ev, wf_strbuf *why);
void wf_kube_event_clear(wf_kube_event *ev);

/* Fills st from an HTTP status and its body: the body's Status fields when it is one, else the
 * code and "" reason with the body's first bytes as message. */
void wf_kube_status_from_body(int http_status, const char *body, size_t len, wf_kube_status *st);
/* The same from a Status object. */
void wf_kube_status_from_json(const json_t *status, wf_kube_status *st);
/* Appends the error text ("410 Expired: too old resource version: 5 (9)"). */
void wf_kube_status_format(const wf_kube_status *st, wf_strbuf *out);
/* True for 410 (Gone, or Expired in an ERROR event or for a continue token). */
bool wf_kube_status_expired(const wf_kube_status *st);

/* metadata.resourceVersion of an object, or "". */
const char *wf_kube_obj_rv(const json_t *obj);
/* "namespace/name" (or "name" for cluster-scoped objects) into buf; NULL when the object has no
 * metadata.name or buf is too small. */
const char *wf_kube_obj_key(const json_t *obj, char *buf, size_t cap);

#endif
