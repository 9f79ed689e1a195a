/*
 * grpc_codes.h - the gRPC status codes 0..16 by name (grpc/doc/statuscodes.md): the
 * SNAKE_CASE names (Istio's VirtualService retryOn, Envoy's GRPC_STATUS(SNAKE_STRING)) and
 * the CamelCase ones (Envoy's GRPC_STATUS default format). One table for the validator and
 * the access log.
 */
#ifndef WF_CORE_GRPC_CODES_H
#define WF_CORE_GRPC_CODES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define WF_GRPC_CODE_MAX 16

/* The name of code 0..16 (snake: "UNAVAILABLE", else "Unavailable"); NULL for any other code.
 * Static strings. */
static inline const char *wf_grpc_code_name(unsigned code, bool snake)
{
    static const char *const s[] = {"OK",
                                    "CANCELLED",
                                    "UNKNOWN",
                                    "INVALID_ARGUMENT",
                                    "DEADLINE_EXCEEDED",
                                    "NOT_FOUND",
                                    "ALREADY_EXISTS",
                                    "PERMISSION_DENIED",
                                    "RESOURCE_EXHAUSTED",
                                    "FAILED_PRECONDITION",
                                    "ABORTED",
                                    "OUT_OF_RANGE",
                                    "UNIMPLEMENTED",
                                    "INTERNAL",
                                    "UNAVAILABLE",
                                    "DATA_LOSS",
                                    "UNAUTHENTICATED"};
    static const char *const c[] = {
        "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
        "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
        "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
        "DataLoss", "Unauthenticated"};
    if (code > WF_GRPC_CODE_MAX)
        return NULL;
    return snake ? s[code] : c[code];
}

/* The code of a SNAKE_CASE name ("UNAVAILABLE" -> 14: Istio's grpc.SupportedGRPCStatus), -1
 * when name is NULL or not one of them. */
static inline int wf_grpc_code_of(const char *name)
{
    for (unsigned i = 0; name && i <= WF_GRPC_CODE_MAX; i++)
        if (strcmp(name, wf_grpc_code_name(i, true)) == 0)
            return (int)i;
    return -1;
}

/* True when name is one of the SNAKE_CASE names. */
static inline bool wf_grpc_code_known(const char *name)
{
    return wf_grpc_code_of(name) >= 0;
}

#endif
