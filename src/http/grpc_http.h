/*
 * grpc_http.h - the gRPC-over-HTTP facts a proxy needs, as Envoy implements them: which
 * requests are gRPC, the HTTP-to-gRPC status map, the grpc-timeout header and the
 * grpc-message encoding of a local reply. Pure functions: no allocation, no global state,
 * safe from any thread. Strings are (pointer, length), not NUL-terminated, unless said.
 *
 * Envoy behaviour followed (source/common/grpc/common.cc, status.cc, source/common/http/
 * utility.cc; gRPC's doc/PROTOCOL-HTTP2.md and doc/http-grpc-status-mapping.md;
 * ../shared/reference/protocols.md §3):
 *  - wf_grpc_content_type is Grpc::Common::hasGrpcContentType: "application/grpc" exactly or
 *    followed by '+' ("application/grpc+proto"); "application/grpc-web..." is not gRPC;
 *  - wf_grpc_http_to_status is Grpc::Utility::httpToGrpcStatus: 400 -> 13 INTERNAL,
 *    401 -> 16 UNAUTHENTICATED, 403 -> 7 PERMISSION_DENIED, 404 -> 12 UNIMPLEMENTED,
 *    429, 502, 503, 504 -> 14 UNAVAILABLE, anything else -> 2 UNKNOWN;
 *  - wf_grpc_timeout_parse is Grpc::Common::getGrpcTimeout: at most 8 digits (0..99999999)
 *    then one unit H, M, S, m, u, n; u and n round up to whole milliseconds;
 *  - wf_grpc_timeout_format is Grpc::Common::toGrpcTimeout: milliseconds with unit m while
 *    they fit in 8 digits, else S, M, H (clipped at 99999999H);
 *  - wf_grpc_message_percent is Http::Utility::PercentEncoding::encode(body, "%") as
 *    sendLocalReply applies it to grpc-message: bytes below ' ', from '~' up, and '%' become
 *    %XX (upper-case hex). (sendLocalReply drops one trailing '\n', a JSON body format's,
 *    before: the caller's part.)
 */
#ifndef WF_HTTP_GRPC_HTTP_H
#define WF_HTTP_GRPC_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WF_GRPC_STATUS_OK                0
#define WF_GRPC_STATUS_CANCELED          1
#define WF_GRPC_STATUS_UNKNOWN           2
#define WF_GRPC_STATUS_DEADLINE_EXCEEDED 4
#define WF_GRPC_STATUS_UNAVAILABLE       14

#define WF_GRPC_TIMEOUT_MAX_VALUE 99999999u /* 8 digits */
#define WF_GRPC_TIMEOUT_STR_MAX   16        /* room for a formatted grpc-timeout value */

/* True when the content-type value ct (len bytes; NULL = absent) marks a gRPC message. */
bool wf_grpc_content_type(const char *ct, size_t len);

/* The gRPC status for an HTTP status (see above). */
int wf_grpc_http_to_status(int http_status);

/* Parses a grpc-status value (decimal digits, at most 0..16 known codes and up to 2^31-1) into
 * *code; false for NULL, "" or anything else. */
bool wf_grpc_status_parse(const char *v, size_t len, int *code);

/* Parses a grpc-timeout value into *ms; returns false (and leaves *ms) when it is not one. */
bool wf_grpc_timeout_parse(const char *v, size_t len, uint64_t *ms);

/* Formats ms as a grpc-timeout value into out (WF_GRPC_TIMEOUT_STR_MAX bytes, NUL-terminated);
 * returns its length. */
size_t wf_grpc_timeout_format(uint64_t ms, char out[WF_GRPC_TIMEOUT_STR_MAX]);

/* Percent-encodes body (len bytes) for grpc-message into out (cap bytes, NUL-terminated);
 * returns the encoded length, or (size_t)-1 when it does not fit (out is then ""). A body
 * needs at most 3 * len + 1 bytes. */
size_t wf_grpc_message_percent(const char *body, size_t len, char *out, size_t cap);

#endif
