/*
 * explain_table.h - the knowledge behind the explanation of a failed request (explain.h):
 * one entry per response flag (Envoy's %RESPONSE_FLAGS% short names,
 * source/common/stream_info/utility.h) and per response code details string
 * (%RESPONSE_CODE_DETAILS%, envoy/stream_info/stream_info.h ResponseCodeDetailValues and the
 * extension details Istio users meet), as listed in ../shared/reference/envoy-istio-behaviour.md
 * §1.2 and §2.1, plus the reset reasons inside upstream_reset_*{...} (§2.2), the TLS failure
 * signatures of %UPSTREAM_TRANSPORT_FAILURE_REASON% / %DOWNSTREAM_TRANSPORT_FAILURE_REASON%
 * (../shared/reference/security.md §3.5 and §8.2), and pairs of signatures that together name
 * one cause (the client's UC connection_termination with the server's NR
 * filter_chain_not_found: plaintext to a STRICT port, security.md §4.3). The table is data
 * (explain_table.c); values it does not hold are reported as unknown, never guessed.
 *
 * Written for `weftctl log explain` (hence the wf_lx_ names) and shared, below the CLI, with
 * weft-pilot's web view and weft-proxy's failed-request ring. Depends on core/ only.
 *
 * Ownership: every entry and string is static. Pure functions; any thread.
 */
#ifndef WF_EXPLAIN_TABLE_H
#define WF_EXPLAIN_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "explain/explain_record.h"

typedef enum wf_lx_kind {
    WF_LX_FLAG,   /* a %RESPONSE_FLAGS% short name: key "NC" */
    WF_LX_DETAIL, /* a %RESPONSE_CODE_DETAILS% value: key "cluster_not_found"; keys ending in
                     '{', '[' or '(' match details with that prefix and a parameter */
    WF_LX_RESET,  /* a reset reason inside upstream_reset_*{...}: key "connection_termination" */
    WF_LX_TLS,    /* a TLS failure signature in a transport failure reason: key is one or more
                     '*'-separated parts that must all occur in the reason, compared with ' '
                     and '-' read as '_' ("CERTIFICATE_VERIFY_FAILED*certificate_has_expired") */
} wf_lx_kind;

typedef struct wf_lx_entry {
    wf_lx_kind kind;
    const char *key;
    const char *name;    /* flags: Envoy's long name ("NoClusterFound"); others: "" */
    const char *status;  /* what the client usually sees ("503, empty body") */
    const char *meaning; /* what happened, in plain words */
    const char *causes;  /* the usual reasons */
    const char *next;    /* the next check or the fix */
} wf_lx_entry;

size_t wf_lx_table_count(void);
const wf_lx_entry *wf_lx_table_at(size_t i);

/* The entry for a response flag ("UF"), NULL when unknown. */
const wf_lx_entry *wf_lx_find_flag(const char *flag);

/* The entry for a details value: exact match, else the longest parametrised prefix
 * ("upstream_reset_before_response_started{remote_connection_failure}" matches
 * "upstream_reset_before_response_started{"). NULL when unknown. */
const wf_lx_entry *wf_lx_find_detail(const char *details);

/* The entry for flag when the line's details are details_ctx and say the flag was set by a
 * listener, not a connection manager: "NR" with "filter_chain_not_found" is a line of a
 * Listener's access log (Envoy's ActiveStreamListenerBase::emitLogs, Istio's listener log
 * filtered to NR): a connection no filter chain took, response code 0, no HTTP request read.
 * NULL when flag has no such reading (the caller then uses wf_lx_find_flag). */
const wf_lx_entry *wf_lx_find_flag_in_context(const char *flag, const char *details_ctx);

/* The entry for a reset reason written with underscores ("remote_connection_failure"). */
const wf_lx_entry *wf_lx_find_reset(const char *reason);

/* The TLS entry for a transport failure reason as logs show it ("TLS_error:|268435581:SSL_
 * routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:verify_cert_failed:_SAN_matcher,..." or
 * with spaces, old "TLS error: 268435581:..." forms too): the most specific entry whose parts
 * all occur (most parts, then the longest key). NULL when none. */
const wf_lx_entry *wf_lx_find_tls(const char *reason);

/* Two signatures that together name one cause: when a log (or logs of both ends read
 * together) holds an `a` and a `b`, the explanation applies. a and b are (kind, key) of the
 * table above. */
typedef struct wf_lx_pair {
    wf_lx_kind kind_a;
    const char *key_a;
    wf_lx_kind kind_b;
    const char *key_b;
    const char *meaning, *causes, *next;
} wf_lx_pair;

size_t wf_lx_pair_count(void);
const wf_lx_pair *wf_lx_pair_at(size_t i);

/* The details a record without any (Envoy's default format has no %RESPONSE_CODE_DETAILS%)
 * must have had, when its status and the absence of an upstream host identify one of the
 * proxy's own replies (explain_table.c, a table: 507 with no upstream host is the router's
 * retry-buffer overflow, request_payload_exceeded_retry_buffer_limit, reference §2.1/§2.3).
 * Sets *why to the evidence in plain words. NULL when the record has details or nothing can
 * be inferred. */
const wf_lx_entry *wf_lx_infer_details(const wf_lx_record *r, const char **why);

#endif
