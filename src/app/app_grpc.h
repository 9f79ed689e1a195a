/*
 * app_grpc.h - weft-app's gRPC service: a small gRPC server over HTTP/2 with prior knowledge
 * (h2c, no TLS, no HTTP/1.1 Upgrade) on nghttp2 and one libuv loop, for examples and tests of
 * gRPC through the mesh (the role of grpc-go's interop server or fortio's grpcping).
 *
 * Follows "gRPC over HTTP2" (grpc/grpc doc/PROTOCOL-HTTP2.md) and grpc-go's server answers:
 *  - A call is POST :path /<service>/<method> with content-type application/grpc (or
 *    application/grpc+..., application/grpc;...). Responses: HEADERS :status 200,
 *    content-type application/grpc (plus x-weft-app / x-weft-pod / x-weft-version when
 *    configured, as weft-app's HTTP answers carry), then Length-Prefixed-Messages in DATA, then
 *    trailers grpc-status and grpc-message (percent-encoded, sent only when not empty). A call
 *    that ends before any message is answered Trailers-Only: one HEADERS frame with :status
 *    200, content-type and grpc-status (+ grpc-message), END_STREAM. When the answer ends the
 *    stream before the client half-closed, RST_STREAM NO_ERROR follows (as gRPC servers do).
 *  - Length-Prefixed-Message: Compressed-Flag (1 byte), Message-Length (4 bytes big-endian),
 *    Message. No grpc-encoding is ever used: a message with Compressed-Flag 1 ends the call with
 *    12 UNIMPLEMENTED `grpc: Decompressor is not installed for grpc-encoding "X"` when the
 *    request named a grpc-encoding X other than identity, else 13 INTERNAL `grpc: compressed
 *    flag set with identity or empty encoding` (grpc-go's texts); a flag above 1 is 13
 *    INTERNAL; a message above 4 MiB (grpc's default maximum) is 8 RESOURCE_EXHAUSTED.
 *  - Request checks, on the request HEADERS, as grpc-go's server answers them: a :method other
 *    than POST gets :status 405, grpc-status 13 `Received a HEADERS frame with :method "GET"
 *    which should be POST`; a content-type that is not gRPC :status 415, grpc-status 3
 *    `invalid gRPC request content-type "X"` (both with content-type application/grpc and
 *    END_STREAM); a :path served by nobody is answered at once 12 UNIMPLEMENTED, `unknown
 *    service S` or `unknown method M for service S` (`malformed method name` without a '/').
 *  - Unary and server-streaming methods answer once the request stream ended (END_STREAM);
 *    the first request message is the request: none is 13 INTERNAL `grpc: no request
 *    message`, a second 13 INTERNAL `grpc: too many request messages`, one that does not
 *    decode 13 INTERNAL `grpc: error unmarshalling request`.
 *  - A connection that does not start with the HTTP/2 client preface (an HTTP/1.1 request
 *    line, e.g. a proxy that speaks HTTP/1.1 to a gRPC port, operator report B032) gets our
 *    SETTINGS and a GOAWAY PROTOCOL_ERROR, then is closed, as nghttp2 and Go's HTTP/2 server do.
 *  - The client's grpc-timeout is not enforced: the server answers late and the client's
 *    deadline (or a proxy's timeout) ends the call with a reset, which stops the call's timers.
 *
 * Services (the .proto, hand-encoded: no protoc; docs/app-grpc.md has the same text):
 *
 *   syntax = "proto3";
 *   package shop;
 *   message EchoRequest {
 *     string message = 1;         // echoed back
 *     int32 delay_ms = 2;         // wait this long (a libuv timer) before answering
 *     int32 status = 3;           // 0..16: end the call with this gRPC status
 *     string status_message = 4;  // its grpc-message
 *     int32 count = 5;            // EchoStream: how many messages (0 means 1)
 *   }
 *   message EchoResponse {
 *     string message = 1;         // the request's message
 *     string hostname = 2;        // --pod, else --name, else the host name
 *     int32 index = 3;            // EchoStream: 0..count-1; Echo: 0
 *   }
 *   service Echo {
 *     rpc Echo(EchoRequest) returns (EchoResponse);
 *     rpc EchoStream(EchoRequest) returns (stream EchoResponse);
 *   }
 *
 *   /shop.Echo/Echo       waits delay_ms, then: status 0 -> one EchoResponse and grpc-status 0;
 *                         status != 0 -> Trailers-Only with that status and status_message
 *   /shop.Echo/EchoStream count responses (index 0..count-1), each after delay_ms, then
 *                         trailers with grpc-status = status (any status, after the messages)
 *   /grpc.health.v1.Health/Check  grpc.health.v1.HealthCheckResponse{status: SERVING} for
 *                         service "" and "shop.Echo"; another service: 5 NOT_FOUND (the
 *                         health protocol's answer, grpc/grpc doc/health-checking.md)
 *
 * The request headers x-delay-ms, x-grpc-status and x-grpc-message stand in for delay_ms,
 * status and status_message when those are 0 / empty in the message (for clients that
 * cannot build a message, such as curl with an empty request). Bad values end the call with
 * 3 INVALID_ARGUMENT: delay_ms outside 0..86400000, status outside 0..16, count outside
 * 0..100000.
 *
 * Ownership and lifetime: the server owns its listeners, connections and calls; a call's
 * memory is released when its stream closes (its delay timer is stopped then: a client
 * deadline that resets the stream cancels the work), a connection's when it closes.
 * Memory bounds: per connection at most 1000 concurrent streams (SETTINGS), a 64 KiB read
 * buffer and at most 64 KiB being written; per call the request message (<= 4 MiB) while it
 * waits, and an EchoStream produces its messages only as HTTP/2 flow control takes them.
 * No global mutable state; single-threaded (the loop's thread).
 */
#ifndef WF_APP_GRPC_H
#define WF_APP_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"

#define APP_GRPC_PATH_ECHO        "/shop.Echo/Echo"
#define APP_GRPC_PATH_ECHO_STREAM "/shop.Echo/EchoStream"
#define APP_GRPC_PATH_HEALTH      "/grpc.health.v1.Health/Check"
#define APP_GRPC_MAX_MSG          ((size_t)4 * 1024 * 1024) /* bytes, received message */
#define APP_GRPC_MAX_DELAY_MS     86400000
#define APP_GRPC_MAX_COUNT        100000
#define APP_GRPC_MAX_STREAMS      1000u

/* grpc.health.v1.HealthCheckResponse.ServingStatus */
enum { APP_HEALTH_UNKNOWN = 0, APP_HEALTH_SERVING = 1, APP_HEALTH_NOT_SERVING = 2 };

/* ---- messages (app_grpc_msg.c): pure functions, no allocation except into the strbuf ---- */

/* A decoded shop.EchoRequest; the strings point into the decoded bytes (not NUL-terminated). */
struct app_echo_request {
    const uint8_t *message;
    size_t message_len;
    const uint8_t *status_message;
    size_t status_message_len;
    int32_t delay_ms, status, count;
};

/* Decodes a shop.EchoRequest (protobuf wire format: unknown fields and fields of an unexpected
 * wire type are skipped; a repeated field keeps its last value, as protobuf does; an int32
 * is the low 32 bits of its varint). Returns 0, or -1 when the bytes are not a protobuf
 * message (truncated or over-long varint, length past the end, field number 0, groups). */
int app_echo_request_decode(const uint8_t *p, size_t len, struct app_echo_request *out);

/* Appends one Length-Prefixed-Message (Compressed-Flag 0) holding a shop.EchoResponse;
 * proto3 defaults (empty strings, index 0) are not written. Check wf_strbuf_failed for OOM. */
void app_echo_response_put(wf_strbuf *b, const void *msg, size_t msg_len, const char *hostname,
                           int32_t index);

/* Decodes a grpc.health.v1.HealthCheckRequest {string service = 1}: *service points into p.
 * Returns 0, or -1 when malformed. */
int app_health_request_decode(const uint8_t *p, size_t len, const uint8_t **service,
                              size_t *service_len);

/* Appends one Length-Prefixed-Message holding a grpc.health.v1.HealthCheckResponse. */
void app_health_response_put(wf_strbuf *b, int serving_status);

/* What an Echo call does, from its request and the x-* request headers (NULL when absent). */
struct app_echo_plan {
    uint64_t delay_ms;
    int status;             /* 0..16 */
    const char *status_msg; /* points into the request or the header; NULL: none */
    size_t status_msg_len;
    uint32_t count; /* messages of EchoStream, >= 1 */
};

/* Fills *plan; returns 0, or 3 (INVALID_ARGUMENT) with *err naming the bad field (a static
 * string) when delay_ms, status or count is out of range or a header is not a decimal number.
 */
int app_echo_plan_make(const struct app_echo_request *rq, const char *hdr_delay,
                       const char *hdr_status, const char *hdr_message, struct app_echo_plan *plan,
                       const char **err);

/* Splits a :path into service and method as grpc-go does and says why it is not served:
 * returns NULL when path is one of the three served paths, else the grpc-message of the
 * 12 UNIMPLEMENTED answer written into out[cap] ("unknown service S", "unknown method M for
 * service S", "malformed method name"). */
const char *app_grpc_unknown_text(const char *path, size_t len, char *out, size_t cap);

/* True when content-type value v[len] is gRPC's: application/grpc, then nothing, '+' or ';'. */
bool app_grpc_content_type_ok(const char *v, size_t len);

/* ---- the server (app_grpc.c) ---- */

struct app_grpc_config {
    const char *name;    /* --name: x-weft-app, NULL: none */
    const char *pod;     /* --pod: x-weft-pod, NULL: none */
    const char *version; /* --version-label: x-weft-version, NULL: none */
};

struct app_grpc;

/* Creates the server on loop (borrowed, must outlive it); cfg's strings are borrowed and must
 * outlive the server. The response hostname is pod, else name, else the host's name. Returns
 * NULL when out of memory. */
struct app_grpc *app_grpc_new(uv_loop_t *loop, const struct app_grpc_config *cfg);

/* Listens on sa (port 0 picks a free one) and writes the bound "ADDR:PORT" ("[v6]:PORT") to
 * bound[boundlen]. Returns 0 or a negative libuv error (UV_EADDRINUSE, UV_ENOMEM, ...). */
int app_grpc_listen(struct app_grpc *g, const struct sockaddr *sa, char *bound, size_t boundlen);

/* Closes the listeners and every connection (calls in progress are dropped, their timers
 * stopped). uv_run returns once the close callbacks ran. */
void app_grpc_stop(struct app_grpc *g);

/* Frees the server: only after app_grpc_stop and after the loop ran the close callbacks.
 * NULL is accepted. */
void app_grpc_free(struct app_grpc *g);

#endif
