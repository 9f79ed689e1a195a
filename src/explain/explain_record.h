/*
 * explain_record.h - one request (or TCP connection) as an access log line records it: the
 * fields of Envoy's command operators that an explanation reads (explain.h, explain_table.h,
 * explain_proto.h, explain_capture.h). `weftctl log explain` fills records by parsing log
 * lines (cli/log_explain.h); other callers fill one from their own fields (explain.h's
 * wf_explain_input).
 *
 * Ownership: a record parsed by weftctl owns its strings (wf_lx_record_free frees them and
 * sets them NULL); the explanation functions only read a record.
 */
#ifndef WF_EXPLAIN_RECORD_H
#define WF_EXPLAIN_RECORD_H

#include <stddef.h>

typedef struct wf_lx_record {
    size_t line;        /* 1-based line number in the input */
    int code;           /* %RESPONSE_CODE%; -1 when absent */
    char *flags;        /* %RESPONSE_FLAGS% ("UF,URX"); NULL when "-" or absent */
    char *details;      /* %RESPONSE_CODE_DETAILS% */
    char *conn_details; /* %CONNECTION_TERMINATION_DETAILS% */
    char *tfr;          /* %UPSTREAM_TRANSPORT_FAILURE_REASON% */
    char *dtfr;         /* %DOWNSTREAM_TRANSPORT_FAILURE_REASON% */
    char *cluster;      /* %UPSTREAM_CLUSTER_RAW% (or %UPSTREAM_CLUSTER% without the ';') */
    char *route;        /* %ROUTE_NAME% */
    char *host;         /* %UPSTREAM_HOST% */
    char *method, *path, *authority, *start_time, *request_id, *duration;
    /* %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% (Istio's JSON: upstream_service_time): set only
     * when an upstream answered; NULL for "-" or when the format has no such field */
    char *upstream_service_time;
    /* protocol, gRPC and TCP readings (explain_proto.h) */
    char *protocol;          /* %PROTOCOL% ("HTTP/2"); NULL on a TCP line */
    char *upstream_protocol; /* %UPSTREAM_PROTOCOL% */
    char *user_agent;        /* %REQ(USER-AGENT)% */
    char *content_type;      /* %REQ(CONTENT-TYPE)% */
    char *grpc_status;  /* %GRPC_STATUS(...)% / %GRPC_STATUS_NUMBER% ("4", "DeadlineExceeded") */
    char *grpc_timeout; /* %REQ(GRPC-TIMEOUT)% ("300m") */
    char *bytes_received, *bytes_sent;
    char *sni; /* %REQUESTED_SERVER_NAME% */
    /* %DOWNSTREAM_LOCAL_ADDRESS%: under transparent capture the original destination */
    char *downstream_local;
} wf_lx_record;

void wf_lx_record_free(wf_lx_record *r);

#endif
