/*
 * failed_ring.h - a worker's bounded ring of its most recent failed HTTP requests, read by the
 * admin API (GET /failed_requests, server/admin/admin_ops.h). No Envoy counterpart: it keeps,
 * per request, the fields of Envoy's access log (%START_TIME%, %REQ(:METHOD)%,
 * %REQ(:AUTHORITY)%, %REQ(:PATH)%, %RESPONSE_CODE%, %RESPONSE_FLAGS%,
 * %RESPONSE_CODE_DETAILS%, %ROUTE_NAME%, %UPSTREAM_CLUSTER_RAW%, %UPSTREAM_HOST%,
 * %DOWNSTREAM_REMOTE_ADDRESS%, %DURATION%, %REQ(X-REQUEST-ID)%) that `weftctl log explain`
 * explains, so the last failures can be seen without an access log configured.
 *
 * Privacy: no body and no header other than :authority and x-request-id is kept; the path
 * loses its query string (it may carry secrets) and is cut to WP_FRING_PATH_MAX bytes. Bytes
 * outside printable ASCII are kept as %XX so that every field is valid JSON text.
 *
 * "Failed" is wp_fring_failed's rule, which is explain/explain.h's wf_explain_input_failed (the
 * rule `weftctl log explain` and weft-pilot's view apply): any response flag, a response code
 * of 0 (none sent) or >= 400, a response code details starting with "rbac_access_denied", or a
 * gRPC status (trailer or header grpc-status, looked up on HTTP/2 streams only) other than 0.
 *
 * Memory: fixed; WP_FRING_SLOTS slots of fixed-size text fields, no allocation ever.
 * Threads: one writer (the worker's loop thread: wp_fring_record) and any number of readers
 * on other threads (wp_fring_read), without locks. Each slot has a sequence number (a
 * seqlock): odd while its writer fills it; a reader copies the slot and keeps the copy only
 * when the sequence was even and unchanged around the copy. So a reader sees only whole
 * entries; an entry being overwritten during the read is left out of that read (the
 * answer may then hold fewer entries than asked for, never a torn one).
 */
#ifndef WEFT_PROXY_FAILED_RING_H
#define WEFT_PROXY_FAILED_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/stream_info/stream_info.h"

#define WP_FRING_SLOTS    64  /* entries kept per worker */
#define WP_FRING_PATH_MAX 256 /* bytes of path kept (after the query string is dropped) */

/* One failed request; every text is NUL-terminated, "" when unknown. */
typedef struct {
    int64_t start_time_us; /* wall clock, microseconds since the epoch */
    int64_t end_time_us;   /* wall clock when recorded (the stream's end) */
    uint64_t recorded_ns;  /* CLOCK_MONOTONIC when recorded: orders entries across workers */
    uint64_t duration_ms;  /* %DURATION% */
    uint64_t seq;          /* 1-based position in its ring's history */
    int response_code;     /* 0 = none sent */
    bool path_truncated;   /* the path was longer than WP_FRING_PATH_MAX */
    char method[24];
    char authority[256];
    char path[WP_FRING_PATH_MAX + 1];
    char response_flags[64]; /* "UF,URX"; "-" when none */
    char details[128];       /* %RESPONSE_CODE_DETAILS% */
    char route_name[128];
    char upstream_cluster[256];
    char upstream_host[64];
    char downstream_remote[64];
    char request_id[128];
} wp_failed_entry;

typedef struct {
    atomic_uint_fast64_t seq; /* seqlock: odd while being written; 0 = never written */
    wp_failed_entry e;
} wp_fring_slot;

typedef struct {
    atomic_uint_fast64_t written; /* entries recorded so far (next slot: written % SLOTS) */
    wp_fring_slot slot[WP_FRING_SLOTS];
} wp_failed_ring;

/* Empties r (before any writer or reader uses it; a zeroed ring is empty too). */
void wp_fring_init(wp_failed_ring *r);

/* Whether si's request failed (the rule above). */
bool wp_fring_failed(const wp_stream_info *si);

/* Records si in r when wp_fring_failed(si), over the oldest entry when r is full; end_us is
 * the wall clock now (microseconds). Writer thread only. Returns whether it was recorded. */
bool wp_fring_record(wp_failed_ring *r, const wp_stream_info *si, int64_t end_us);

/* Copies up to max of r's entries into out, newest first, skipping any being overwritten
 * meanwhile (see above). Any thread. Returns how many were copied. */
size_t wp_fring_read(const wp_failed_ring *r, wp_failed_entry *out, size_t max);

/* Formats e->start_time_us as RFC 3339 UTC with milliseconds ("2026-12-06T06:40:01.123Z")
 * into out (cap >= 32). */
void wp_fring_time(int64_t us, char *out, size_t cap);

#endif
