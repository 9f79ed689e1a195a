/*
 * explain_proto.h - what `weftctl log explain` reads from one access log record beyond
 * the per-value table (explain_table.c): the protocol story of HTTP/2, gRPC and TCP lines
 * (issue 19 item 6; ../shared/reference/protocols.md §1.1, §2.5, §3, §4.3, §4.4; operator
 * reports B032 and B034 in ../shared/cases/operator-reports.md).
 *
 *  - gRPC: a request is gRPC when its content-type is application/grpc or application/grpc+...
 *    (not grpc-web; Envoy's Grpc::Common::isGrpcRequestHeaders), when the line carries a
 *    gRPC status, when the user agent is a gRPC library's ("grpc-"), or when it is an HTTP/2
 *    POST to a path of gRPC's form /package.Service/Method. The status the client got is
 *    named (%GRPC_STATUS%, any of its NUMBER / CAMEL_STRING / SNAKE_STRING forms), or, for
 *    one of the proxy's own replies (a response flag on a gRPC request), derived as Envoy
 *    derives it: a router timeout (UT) is 4 DEADLINE_EXCEEDED (envoy PR #44479; Envoy before
 *    it sent 14), anything else maps the HTTP status (400->13, 401->16, 403->7, 404->12,
 *    429/502/503/504->14, else 2; Envoy's Grpc::Utility::httpToGrpcStatus). For UT it says
 *    which timeout fired: the route's (timeout / max_grpc_timeout from a config dump, when
 *    given) or the client's grpc-timeout (from %REQ(GRPC-TIMEOUT)% when logged, else from
 *    the duration against the route's timeout).
 *  - Protocol errors: UPE / {protocol_error}, or UC / {connection_termination} on a gRPC or
 *    HTTP/2 request, read as the B032 port-naming mistake (an HTTP/2-only server behind a
 *    port Istio treats as HTTP/1.1); {remote_refused_stream_reset} as a refused stream (GOAWAY
 *    or the upstream's stream limit); {remote_reset} and the downstream http2.* details as
 *    HTTP/2 resets.
 *  - TCP: a line of the TCP proxy ("- - -", code 0; Istio's TEXT format for TCP, §4.4) is read
 *    as a connection: UF, URX, UO, UH (BlackHoleCluster), NR, NC, DC, UC, DT, and an idle
 *    timeout in %CONNECTION_TERMINATION_DETAILS%.
 *
 * Output: plain-language lines appended to wf_strbufs (one per topic; the first line is the
 * verdict, further lines follow after '\n'). Pure functions over the record; no I/O.
 */
#ifndef WF_EXPLAIN_PROTO_H
#define WF_EXPLAIN_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "explain/explain_table.h"
#include "core/strbuf.h"

/* ---- gRPC status codes (grpc/doc/statuscodes.md) ---- */

/* The code of a logged gRPC status ("4", "DeadlineExceeded", "DEADLINE_EXCEEDED"), -1 when it
 * is none of them. */
int wf_lx_grpc_code(const char *s);
const char *wf_lx_grpc_name(int code);    /* "DEADLINE_EXCEEDED"; "" when out of range */
const char *wf_lx_grpc_meaning(int code); /* one sentence */
/* Envoy's Grpc::Utility::httpToGrpcStatus. */
int wf_lx_grpc_from_http(int http_status);

/* gRPC's grpc-timeout header value ("300m", "5S") in milliseconds, -1 when malformed. */
int64_t wf_lx_grpc_timeout_ms(const char *s);

/* ---- route timeouts, read from a config dump (--pod / --config-dump) ---- */

typedef struct wf_lx_route_timeout {
    char *name;          /* the route's name, as %ROUTE_NAME% logs it */
    int64_t timeout_ms;  /* route.timeout; 15000 when absent (Envoy's default), 0 = none */
    int64_t max_grpc_ms; /* max_grpc_timeout / max_stream_duration.grpc_timeout_header_max;
                            -1 when neither is set (grpc-timeout ignored), 0 = uncapped */
    int64_t per_try_ms;  /* retry_policy.per_try_timeout; 0 when absent */
} wf_lx_route_timeout;

typedef struct wf_lx_routes {
    size_t n;
    wf_lx_route_timeout *v;
} wf_lx_routes;

/* Adds every route of a RoutesConfigDump-like array of route configurations (snake_case,
 * as wf_envoy_dump normalizes). Returns 0, or -1 when out of memory. */
int wf_lx_routes_add(wf_lx_routes *rt, const json_t *route_configs);
void wf_lx_routes_free(wf_lx_routes *rt);

/* The route named name; NULL when none or when routes of that name disagree on timeouts. */
const wf_lx_route_timeout *wf_lx_routes_find(const wf_lx_routes *rt, const char *name);

/* ---- readings ---- */

/* Is this a gRPC request? *why (may be NULL) gets the evidence ("content-type
 * application/grpc"). */
bool wf_lx_is_grpc(const wf_lx_record *r, const char **why);

/* Is this a TCP proxy's connection line (no method, path or protocol; code 0 or absent; an
 * upstream cluster, which a listener's own lines lack)? */
bool wf_lx_is_tcp(const wf_lx_record *r);

/* The readings of r. grpc: the gRPC status and what it means (and, for UT, which timeout
 * fired); proto: HTTP/2 resets, GOAWAY and protocol errors with the port-naming cause; tcp:
 * the connection's outcome. rt may be NULL. Each buffer stays empty when nothing applies.
 * Returns 0, or -1 when out of memory. */
int wf_lx_proto_read(const wf_lx_record *r, const wf_lx_routes *rt, wf_strbuf *grpc,
                     wf_strbuf *proto, wf_strbuf *tcp);

#endif
