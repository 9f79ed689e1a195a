/*
 * access_log.h - compiled access log formats: Envoy's substitution format strings
 * (text_format / text_format_source) and typed json_format dictionaries, rendered from a
 * finished request's wp_stream_info.
 *
 * Behaviour follows Envoy's docs/root/configuration/observability/access_log/usage.rst and
 * source/common/formatter/substitution_formatter.cc (parser, typed JSON) plus
 * stream_info_formatter.cc (operators), and Istio's pilot/pkg/model/telemetry_logging.go
 * for the Istio formats:
 *
 *  - An operator is %COMMAND%, %COMMAND(ARG)%, %COMMAND:LEN% or %COMMAND(ARG):LEN% with
 *    COMMAND in [A-Z0-9_]+ (Envoy's regex ^%([A-Z0-9_]+)(?:\((.*?)\))?(?::([0-9]+))?%, the
 *    argument is the shortest text that lets the rest match). "%%" is a literal '%'.
 *  - Text: unset values print "-". Numbers print in decimal. Durations are whole
 *    milliseconds (truncated). %RESPONSE_CODE% is 0 when no response was sent. The text
 *    is not escaped and no newline is added (put "\n" in the format).
 *  - JSON (json_format): one compact object per line, keys sorted bytewise, "\n" appended.
 *    A value string that is exactly one operator is typed: a number for RESPONSE_CODE,
 *    BYTES_*, *_WIRE_BYTES_*, DURATION and *_DURATION, UPSTREAM_REQUEST_ATTEMPT_COUNT,
 *    CONNECTION_ID, UPSTREAM_CONNECTION_ID; a string for the others; null when unset. A
 *    value string that mixes text and operators (or has several operators) renders as one
 *    JSON string in which unset operators print "-" (JsonFormatterImpl::formatSubstitution).
 *    Strings without '%', numbers, booleans, null, nested objects and arrays are copied as
 *    they are.
 *  - JSON escaping follows nlohmann::json as used by Envoy's Json::sanitize: '"' and '\\'
 *    escaped, \b \f \n \r \t, other control characters as \u00xx (lower-case hex), valid
 *    UTF-8 copied. Deviation: for invalid UTF-8 Envoy falls back to "\ooo" octal escapes,
 *    which are not valid JSON; here every byte of an invalid sequence becomes \u00XX (the
 *    byte read as Latin-1), so the output always parses.
 *  - %START_TIME% (UTC): default "%Y-%m-%dT%H:%M:%E3SZ" (2026-11-29T21:30:00.123Z); a
 *    custom argument is strftime plus %s (epoch seconds), %f / %[1-9]f (fraction, 9 digits
 *    by default; digits below microseconds are 0), %E[1-9]S / %E*S (seconds with fraction,
 *    absl style) and %Z = "UTC". The argument is limited to 64 bytes (a weft limit).
 *  - %REQ(X?Y):Z% / %RESP(X?Y):Z%: header X, else Y, truncated to Z bytes (a cut may split
 *    a UTF-8 sequence; JSON output escapes the remainder as above). Pseudo headers
 *    :method, :path, :authority (Host) and :scheme ("http") are mapped (stream_info.h).
 *    A present but empty header prints as an empty string, as in Envoy. %TRAILER(X?Y):Z%
 *    reads the upstream response's trailers (wp_stream_info.response_trailers).
 *  - %GRPC_STATUS(CAMEL_STRING|SNAKE_STRING|NUMBER)% / %GRPC_STATUS_NUMBER%
 *    (http_specific_formatter.cc GrpcStatusFormatter, grpc/common.cc getGrpcStatus): unset
 *    unless the request is gRPC (content-type "application/grpc" or "application/grpc+..."
 *    and a :path); then grpc-status of the trailers, else of the response headers, else
 *    httpToGrpcStatus(response code) (400 Internal, 401 Unauthenticated, 403
 *    PermissionDenied, 404 Unimplemented, 429/502/503/504 Unavailable, else Unknown); unset
 *    when no response was sent. A grpc-status that is not a number is -1 (InvalidCode).
 *    Names: "Unavailable" / "UNAVAILABLE"; a code without a name prints as its number (a
 *    JSON string); NUMBER and GRPC_STATUS_NUMBER are JSON numbers.
 *  - %FILTER_STATE(KEY:TYPE:FIELD):Z% / %UPSTREAM_FILTER_STATE(...)%: validated as
 *    FilterStateFormatter::create (key required, TYPE PLAIN, TYPED (default) or FIELD, FIELD
 *    with a field name and only then); weft has no filter state, so they print "-".
 *
 * Supported operators: START_TIME, PROTOCOL, RESPONSE_CODE, RESPONSE_CODE_DETAILS,
 * CONNECTION_TERMINATION_DETAILS, RESPONSE_FLAGS, RESPONSE_FLAGS_LONG, BYTES_RECEIVED,
 * BYTES_SENT, DOWNSTREAM_WIRE_BYTES_SENT, DOWNSTREAM_WIRE_BYTES_RECEIVED, DURATION,
 * REQUEST_DURATION, REQUEST_TX_DURATION, RESPONSE_DURATION, RESPONSE_TX_DURATION,
 * UPSTREAM_REQUEST_ATTEMPT_COUNT, ROUTE_NAME, UPSTREAM_HOST, UPSTREAM_REMOTE_ADDRESS,
 * UPSTREAM_REMOTE_ADDRESS_WITHOUT_PORT, UPSTREAM_CLUSTER, UPSTREAM_CLUSTER_RAW,
 * UPSTREAM_LOCAL_ADDRESS, UPSTREAM_LOCAL_ADDRESS_WITHOUT_PORT,
 * UPSTREAM_TRANSPORT_FAILURE_REASON (spaces printed as '_', as Envoy's formatter does),
 * DOWNSTREAM_PEER_URI_SAN, DOWNSTREAM_LOCAL_URI_SAN (URI SANs joined by ','),
 * DOWNSTREAM_TLS_VERSION, DOWNSTREAM_TLS_CIPHER, DOWNSTREAM_PEER_SUBJECT,
 * UPSTREAM_PEER_URI_SAN, UPSTREAM_LOCAL_URI_SAN, UPSTREAM_TLS_VERSION (unset on plaintext
 * connections),
 * DOWNSTREAM_TRANSPORT_FAILURE_REASON (always "-": no stream outlives a failed downstream
 * handshake), DOWNSTREAM_REMOTE_ADDRESS,
 * DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT, DOWNSTREAM_DIRECT_REMOTE_ADDRESS,
 * DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT (= the remote address: no XFF handling yet),
 * DOWNSTREAM_LOCAL_ADDRESS, DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT, REQUESTED_SERVER_NAME (SNI),
 * CONNECTION_ID, UPSTREAM_CONNECTION_ID, STREAM_ID (decimal string, unset when 0),
 * HOSTNAME (read once at compile time), REQ, RESP, TRAILER, UPSTREAM_PROTOCOL,
 * UPSTREAM_WIRE_BYTES_SENT, UPSTREAM_WIRE_BYTES_RECEIVED, GRPC_STATUS, GRPC_STATUS_NUMBER;
 * DYNAMIC_METADATA(NAMESPACE:KEY) (a string value filters published in the stream's dynamic
 * metadata, e.g. the RBAC filters' istio_dry_run_allow_shadow_engine_result under
 * envoy.filters.http.rbac; a namespace alone, a nested key or a structured value print "-");
 * VIRTUAL_CLUSTER_NAME, CLUSTER_METADATA, UPSTREAM_METADATA, FILTER_STATE and
 * UPSTREAM_FILTER_STATE always print "-" (weft has no such sources).
 * [verify] resolved: %RESPONSE_FLAGS_LONG% exists in stream_info_formatter.cc and joins the
 * PascalCase names with ',' ("-" when none), like %RESPONSE_FLAGS%.
 *
 * Compile errors (message appended to err, NULL returned) use Envoy's texts followed by the
 * 1-based column of the operator's '%' in its format string:
 *   "Not supported field in StreamInfo: FOO (column 12)"
 *   "Incorrect configuration: <format>. Couldn't find valid command at position <pos>"
 *   "PROTOCOL does not take any parameters or length (column 3)"
 *   "REQ requires parameters (column 1)"
 *   "START_TIME does not allow length to be specified. (column 1)"
 *   "More than 1 alternative header specified in token: A?B?C (column 1)"
 *   "GrpcStatusFormatter only supports CAMEL_STRING, SNAKE_STRING or NUMBER. (column 1)"
 *   "Invalid filter state configuration, key cannot be empty. (column 1)"
 *   "Invalid filter state serialize type, only support PLAIN/TYPED/FIELD. (column 1)"
 *   "Invalid filter state serialize type, FIELD should be used with the field name. (column 1)"
 * JSON errors are prefixed with the key path: "json_format key \"a.b\": ...". The *_at
 * variants prefix the configuration's JSON path instead (see below).
 *
 * Thread safety: a compiled format is immutable; any number of threads may render with it.
 */
#ifndef WEFT_PROXY_ACCESS_LOG_H
#define WEFT_PROXY_ACCESS_LOG_H

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/config/config.h"
#include "proxy/stream_info/stream_info.h"

/* Envoy's default format (SubstitutionFormatUtils::DEFAULT_FORMAT, usage.rst). */
#define WP_ENVOY_DEFAULT_FORMAT                                                                    \
    "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "             \
    "%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "                   \
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "      \
    "\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\"\n"

/* Istio's formats: xds/istio_log.h (WF_ISTIO_TEXT_FORMAT, wf_istio_json_format). */

/* Compiles a text format. fmt NULL means WP_ENVOY_DEFAULT_FORMAT. Returns a format the
 * caller frees with wp_alf_free, or NULL with a message appended to err (err may be NULL)
 * on a syntax error, an unknown operator or out of memory. */
wp_access_log_format *wp_alf_compile_text(const char *fmt, wf_strbuf *err);
/* The same with at, the JSON path of the format string in the configuration
 * ("static_resources.listeners[0]...log_format.text_format_source.inline_string"), put
 * before every compile error ("<at>: <message>"); at NULL or "" = no prefix. */
wp_access_log_format *wp_alf_compile_text_at(const char *fmt, const char *at, wf_strbuf *err);

/* Compiles a json_format dictionary (must be a JSON object; the caller keeps ownership of
 * json_format, nothing refers to it afterwards). Returns NULL with a message in err on
 * error (non-object, an invalid operator in any string value, nesting deeper than 32,
 * out of memory). */
wp_access_log_format *wp_alf_compile_json(const json_t *json_format, wf_strbuf *err);
/* The same with at, the JSON path of the json_format object: an operator error is prefixed
 * with "<at>.<key path>: " instead of "json_format key \"<key path>\": ", other errors with
 * "<at>: ". */
wp_access_log_format *wp_alf_compile_json_at(const json_t *json_format, const char *at,
                                             wf_strbuf *err);

/* Frees a compiled format. NULL is ignored. */
void wp_alf_free(wp_access_log_format *f);

/* true when f renders JSON lines. */
bool wp_alf_is_json(const wp_access_log_format *f);

/* Appends one rendered log line for si to out (text: exactly as formatted; JSON: one
 * compact object followed by "\n"). Allocates nothing itself besides the growth of out;
 * an allocation failure of out shows as wf_strbuf_failed(out). */
void wp_alf_render(const wp_access_log_format *f, const wp_stream_info *si, wf_strbuf *out);

#endif
