/*
 * explain.h - explaining one failed request in plain words: what its response flags, response
 * code details, reset reason and transport failure reason mean, the likely causes and the next
 * check (explain_table.h), with the protocol and capture readings (explain_proto.h,
 * explain_capture.h). This is `weftctl log explain`'s knowledge, kept below the CLI so that
 * weft-pilot's web view (GET /ui/api/failed) and weft-proxy's failed-request ring use the same
 * words and the same "failed" rule: `weftctl log explain` builds and prints every
 * explanation through wf_explain_record / wf_explain_item_print, so the two cannot disagree.
 * Layer: depends on core/ and jansson only (docs/log-explain.md).
 *
 * Ownership: items own their value (wf_explain_items_free); entries are static; a
 * wf_explain_out owns all its strings (wf_explain_out_free). Errors: -1 / NULL only when out
 * of memory. Pure functions; any thread.
 */
#ifndef WF_EXPLAIN_H
#define WF_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "explain/explain_proto.h"
#include "explain/explain_record.h"
#include "explain/explain_table.h"

/* ---- the "failed" rule ---------------------------------------------------------------- */

/* One request's fields as the caller has them (Envoy command operators in brackets). Every
 * string is borrowed and may be NULL; "" and "-" read as absent (as in access logs). */
typedef struct wf_explain_input {
    int response_code;                             /* %RESPONSE_CODE%; 0 none sent, -1 absent */
    const char *response_flags;                    /* %RESPONSE_FLAGS% ("UF,URX") */
    const char *response_code_details;             /* %RESPONSE_CODE_DETAILS% */
    const char *upstream_transport_failure_reason; /* %UPSTREAM_TRANSPORT_FAILURE_REASON% */
    const char *route_name;                        /* %ROUTE_NAME% */
    const char *upstream_cluster;                  /* %UPSTREAM_CLUSTER_RAW% */
    const char *grpc_status; /* %GRPC_STATUS% in any form ("14", "Unavailable") */
    /* optional, sharpen the reading (gRPC detection, 507 inference, original destination) */
    const char *upstream_host; /* %UPSTREAM_HOST% */
    const char *method;        /* %REQ(:METHOD)% */
    const char *authority;     /* %REQ(:AUTHORITY)% */
    const char *path;          /* %REQ(:PATH)% */
    const char *protocol;      /* %PROTOCOL% ("HTTP/2") */
} wf_explain_input;

/* Did this HTTP request fail? Any response flag, a response code of 0 (none sent) or >= 400,
 * response code details starting with "rbac_access_denied" (a gRPC request's denial logs 200
 * and no flag), or a gRPC status other than OK (0, "OK", "Ok"). weft-proxy's failed-request
 * ring (proxy/stream_info/failed_ring.h) records exactly these. */
bool wf_explain_input_failed(const wf_explain_input *in);

/* The same rule for a record read from an access log; a TCP connection's line (no method,
 * path or protocol, code 0 or absent, an upstream cluster; Istio's "- - -") fails only with
 * a response flag or connection termination details. */
bool wf_lx_failed(const wf_lx_record *r);

/* ---- explanation items (what `weftctl log explain` prints under a request) ---------------- */

typedef struct wf_explain_item {
    const char *kind;     /* static: "flag", "details", "reset_reason", "transport_failure",
                             "downstream_transport_failure" (value and a table entry), or a text
                             kind: "authorization", "grpc", "protocol", "tcp", "capture" (value:
                             lines separated by '\n', no entry) */
    char *value;          /* owned */
    const wf_lx_entry *e; /* static; NULL: unknown value, or a text kind */
    const char *inferred; /* static: details the line lacks, inferred: the evidence; else NULL */
} wf_explain_item;

typedef struct wf_explain_items {
    size_t n, cap;
    wf_explain_item *v;
} wf_explain_items;

/* Appends (kind, value[0..len), e) unless an item of that kind and value is there. kind must
 * be static. Returns 0, or -1 when out of memory. */
int wf_explain_items_add(wf_explain_items *l, const char *kind, const char *value, size_t len,
                         const wf_lx_entry *e);
void wf_explain_items_free(wf_explain_items *l);

/* Called after the items of a details value (%RESPONSE_CODE_DETAILS%, then
 * %CONNECTION_TERMINATION_DETAILS%) so the caller can add its own (weftctl: the
 * AuthorizationPolicy behind an RBAC denial, read from the proxy's config dump). Returns 0 or
 * -1 (stops the explanation with -1). */
typedef int (*wf_explain_details_hook)(void *ctx, const char *details, wf_explain_items *out);

/* Appends to out the explanation of one failed record, in the order `weftctl log explain`
 * prints it: each response flag, the details (with the reset reason and transport failure
 * inside upstream_reset_*{...}), hook's items, the transport failure reasons, the connection
 * termination details, inferred details, then the gRPC, protocol, TCP and capture readings.
 * rt (route timeouts of the proxy's config dump) and hook may be NULL. Returns 0 or -1. */
int wf_explain_record(const wf_lx_record *r, const wf_lx_routes *rt, wf_explain_details_hook hook,
                      void *ctx, wf_explain_items *out);

/* Is kind one of the text kinds (no table entry)? */
bool wf_explain_is_text_kind(const char *kind);

/* Appends it to out exactly as `weftctl log explain` prints it: its lines, the first indented
 * by indent spaces, "Likely causes:" / "Next:" and further lines by indent + 3, each ending
 * in '\n'. */
void wf_explain_item_print(const wf_explain_item *it, int indent, wf_strbuf *out);

/* -o json's object for it: {"kind","value","known"[,"name"],"status","meaning","causes",
 * "next"[,"inferred_from"]}. New reference; NULL when out of memory. */
json_t *wf_explain_item_json(const wf_explain_item *it);

/* What `weftctl log explain` says of a failed request with nothing to explain (no flag, no
 * details). */
extern const char WF_EXPLAIN_NOTHING_FLAGGED[];

/* ---- one request, in four strings (weft-pilot's GET /ui/api/failed) ------------------------ */

typedef struct wf_explain_out {
    char *summary; /* one line: the first line `weftctl log explain` prints under such a request
                      ("NC (NoClusterFound): The route names a cluster that does not exist in
                      this proxy."), or WF_EXPLAIN_NOTHING_FLAGGED */
    char *meaning; /* the meaning of the most specific known value: a transport failure's TLS
                      signature, else the first known flag, details or reset reason (in print
                      order) whose causes are not a pointer to another ("See ..."); with no known
                      value, the first item's text (or the summary) */
    char *causes;  /* that value's likely causes; "" when no value is known */
    char *next;    /* that value's next check or fix; "" when no value is known */
    char *text;    /* everything `weftctl log explain` prints under the request, '\n'-separated
                      lines (first lines unindented, theirs indented by 3), except the
                      "authorization:" lines weftctl adds for an RBAC denial (its hook: the
                      policy id read by cli/log_explain_rbac.h, with --pod the proxy's
                      policies) and the route timeouts of --pod */
} wf_explain_out;

/* Explains one failed request (in: see wf_explain_input) into *out (all strings owned, free
 * with wf_explain_out_free). A request that did not fail is explained all the same. Returns 0,
 * or -1 when out of memory (out then holds nothing to free). */
int wf_explain_failed(const wf_explain_input *in, wf_explain_out *out);
void wf_explain_out_free(wf_explain_out *out);

/* wf_explain_failed as the JSON object of GET /ui/api/failed's "explanation":
 * {"summary","meaning","causes","next","text"} (strings). New reference; NULL when out of
 * memory. */
json_t *wf_explain_failed_json(const wf_explain_input *in);

#endif
