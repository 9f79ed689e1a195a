/*
 * explain_table.c - the knowledge behind `weftctl log explain` (explain_table.h): one entry per
 * Envoy response flag, per response code details string and per upstream reset reason, from
 * ../shared/reference/envoy-istio-behaviour.md §1.2, §2.1-2.3 and §3, and the operator
 * reports in ../shared/cases/operator-reports.md (B001 NC, B003 NR, B005 507, B008/B009 UT,
 * B012 UC, B013 UF,URX, B023 UH), and the TLS failure signatures of
 * ../shared/reference/security.md §3.5, §4.3 and §8.2 (Envoy's SslSocket failure reasons with
 * BoringSSL's names, the verify details, NotReadySslSocket's "Secret is not supplied by SDS").
 * docs/log-explain.md lists the same table for readers.
 *
 * Each entry: what it means, the likely causes, and the next check or fix. Keep sentences
 * plain; name weftctl commands and Istio fields an operator can act on.
 */
#include <string.h>

#include "explain/explain_table.h"

#define F(k, n, st, m, c, x)                                                                       \
    {                                                                                              \
        WF_LX_FLAG, k, n, st, m, c, x                                                              \
    }
#define D(k, st, m, c, x)                                                                          \
    {                                                                                              \
        WF_LX_DETAIL, k, "", st, m, c, x                                                           \
    }
#define R(k, m, c, x)                                                                              \
    {                                                                                              \
        WF_LX_RESET, k, "", "", m, c, x                                                            \
    }
#define T(k, st, m, c, x)                                                                          \
    {                                                                                              \
        WF_LX_TLS, k, "", st, m, c, x                                                              \
    }

static const wf_lx_entry table[] = {
    /* ---- response flags (Envoy utility.h order) ---- */
    F("LH", "FailedLocalHealthCheck", "503",
      "The local service failed the HTTP health-check filter, so the proxy answered itself.",
      "The health-check filter marks the local service unhealthy (it failed its checks or is "
      "draining).",
      "Check the local application's health endpoint and the proxy's health_check filter "
      "configuration."),
    F("UH", "NoHealthyUpstream", "503, body \"no healthy upstream\"",
      "The target cluster exists but has no healthy endpoint to send the request to.",
      "No pod matches the service or the DestinationRule subset's labels (IST0173), all "
      "endpoints are unready, or outlier detection ejected every host.",
      "Run `weftctl proxy-config endpoint <pod> --cluster <cluster>` to see the endpoints, "
      "`weftctl analyze -A <manifests>` for subsets that select no pods, and check the pods' "
      "readiness."),
    F("UT", "UpstreamRequestTimeout", "504, body \"upstream request timeout\"",
      "The route timeout (or the last try's perTryTimeout) fired before the upstream answered, "
      "or before it finished a response it had started (then the status is the upstream's and "
      "the connection is reset).",
      "The upstream is slow or stuck; the VirtualService `timeout` is shorter than the "
      "service needs; the route timeout also bounds all retries, so no retry could start.",
      "Compare the request duration with the route's timeout (`weftctl proxy-config route "
      "<pod> -o json`); raise `timeout`, or set `retries.perTryTimeout` so slow attempts are "
      "retried within the route timeout; check the upstream's own latency."),
    F("LR", "LocalReset", "503",
      "The proxy reset the upstream stream itself (local reset, refused stream, or the "
      "upstream half-closed an HTTP/1 connection early).",
      "The proxy gave up on the upstream stream, e.g. after a protocol problem or a premature "
      "upstream close.",
      "Look at the details value and the proxy's debug log (`weftctl proxy-config log <pod> "
      "--level router:debug,connection:debug`)."),
    F("UR", "UpstreamRemoteReset", "503",
      "The upstream reset the stream (HTTP/2 RST_STREAM, REFUSED_STREAM, or a CONNECT error).",
      "The upstream application or a proxy in front of it aborted the request: a crash, an "
      "overload limit, or a protocol mismatch.",
      "Check the upstream's logs at that time; if resets are transient, a retry policy with "
      "`retryOn: reset` helps."),
    F("UF", "UpstreamConnectionFailure", "503",
      "The proxy could not open a connection to the upstream host.",
      "Nothing listens on the endpoint's port, the pod is gone or not ready, a network policy "
      "blocks it, the connect timeout fired, or the TLS handshake failed (a mTLS mode "
      "mismatch between DestinationRule `tls.mode` and the server's PeerAuthentication).",
      "Read the transport failure reason; check the endpoint with `weftctl proxy-config "
      "endpoint <pod>` and that the app listens on the target port; for TLS errors compare "
      "`weftctl describe pod` mTLS mode with the DestinationRule."),
    F("UC", "UpstreamConnectionTermination", "503",
      "The upstream closed the connection while the request was in flight.",
      "Usually a pooled keep-alive connection the server closed as idle just as the proxy "
      "reused it (the server's idle timeout is shorter than the proxy's), or the upstream "
      "crashed mid-request. When every request fails this way and the server's proxy logs NR "
      "filter_chain_not_found, this client sends plaintext to a STRICT mTLS port (a "
      "DestinationRule `tls.mode: DISABLE`, or auto mTLS off).",
      "Set DestinationRule `trafficPolicy.connectionPool.http.idleTimeout` below the "
      "server's keep-alive timeout, or retry on `reset` in the VirtualService; check the "
      "upstream for crashes. For the STRICT case: read the server proxy's log, remove the "
      "DestinationRule's `tls.mode: DISABLE` (or set ISTIO_MUTUAL), and check `weftctl describe "
      "pod <server>` for the PeerAuthentication mode."),
    F("UO", "UpstreamOverflow", "503, header x-envoy-overloaded: true",
      "A circuit breaker overflowed (connections, pending requests, requests or retries), "
      "or the cluster is in maintenance mode.",
      "DestinationRule `connectionPool` limits (maxConnections, http1MaxPendingRequests, "
      "http2MaxRequests, maxRetries) are lower than the traffic needs.",
      "Check the cluster's `upstream_rq_pending_overflow` / `upstream_cx_overflow` stats and "
      "raise the DestinationRule `connectionPool` limits, or add capacity."),
    F("NR", "NoRouteFound", "404, empty body",
      "No route matched the request (HTTP), or no filter chain matched the connection (TCP).",
      "The Host/authority is not a host of any VirtualService bound to this proxy or "
      "gateway, the path matches no route, or the VirtualService is bound to another "
      "gateway or namespace.",
      "Compare the request's Host with `weftctl proxy-config route <pod>` (DOMAINS); check "
      "the VirtualService `hosts` and `gateways` and run `weftctl analyze -A <manifests>`."),
    F("DI", "DelayInjected", "the normal status",
      "A fault-injection delay was applied to the request.",
      "A VirtualService `fault.delay` matched this request.",
      "Expected if you configured fault injection; otherwise find the VirtualService with a "
      "`fault` section."),
    F("FI", "FaultInjected", "the configured abort status",
      "A fault-injection abort answered the request instead of the upstream.",
      "A VirtualService `fault.abort` matched this request.",
      "Expected if you configured fault injection; otherwise remove the `fault.abort`."),
    F("RL", "RateLimited", "429", "A local or global rate limit rejected the request.",
      "The request rate exceeded the configured rate limit.",
      "Check the rate-limit configuration (EnvoyFilter / local rate limit) and the client's "
      "request rate."),
    F("UAEX", "UnauthorizedExternalService", "403 by default",
      "The external authorization service denied the request.",
      "An AuthorizationPolicy with action CUSTOM (ext_authz) rejected it.",
      "Check the external authorizer's decision log and the CUSTOM AuthorizationPolicy."),
    F("RLSE", "RateLimitServiceError", "typically 500",
      "The call to the rate-limit service failed and the filter is set to deny on failure.",
      "The rate-limit service is down or unreachable.",
      "Check the rate-limit service and the filter's failure mode."),
    F("DC", "DownstreamConnectionTermination", "0 (no response was sent)",
      "The client closed its connection before the response was complete.",
      "The caller gave up: a client-side timeout shorter than the request takes, a user who "
      "cancelled, or a calling proxy whose own timeout fired (its log shows 504 UT).",
      "Compare the duration with the caller's timeout; find the caller's log line with the "
      "same x-request-id; if the request is slow, look at the upstream's latency."),
    F("URX", "UpstreamRetryLimitExceeded", "the status of the last attempt",
      "The request was retried and the retries were used up; the last attempt's result was "
      "returned.",
      "The upstream kept failing (see the other flag, e.g. UF or UT) for every attempt.",
      "Fix the failure of the individual attempts (the other flag says which); more retries "
      "rarely help a persistent failure."),
    F("SI", "StreamIdleTimeout",
      "408 if the request was incomplete, else 504; body \"stream "
      "timeout\"",
      "No bytes moved on the stream for the stream idle timeout.",
      "A slow or stalled client or upstream, or a long-lived stream with no traffic.",
      "Check which side stalled; raise the idle timeout for long-lived streams."),
    F("IH", "InvalidEnvoyRequestHeaders", "400",
      "A strictly checked x-envoy-* request header had an invalid value.",
      "The client sent a malformed x-envoy-* header (e.g. x-envoy-max-retries).",
      "Fix or drop the header in the client."),
    F("DPE", "DownstreamProtocolError", "400 or connection reset",
      "The client's request broke the HTTP protocol.",
      "A malformed request, a protocol mismatch (HTTP/2 to an HTTP/1 port), or a header too "
      "large.",
      "Check the client's protocol and the Service port's protocol (port name or "
      "appProtocol)."),
    F("UMSDR", "UpstreamMaxStreamDurationReached", "408 or 504",
      "The upstream stream reached its maximum duration.",
      "A max stream duration is configured and the request ran longer.",
      "Raise the max stream duration or make the request shorter."),
    F("RFCF", "ResponseFromCacheFilter", "as cached",
      "The response was served by the cache filter, not the upstream.",
      "An HTTP cache filter is configured.",
      "Expected with caching; otherwise check the cache filter configuration."),
    F("NFCF", "NoFilterConfigFound", "5xx",
      "A filter's configuration (ECDS) had not arrived when the request came.",
      "The control plane has not delivered an extension configuration yet.",
      "Run `weftctl proxy-status` and `weftctl proxy-config ecds <pod>`."),
    F("DT", "DurationTimeout", "connection closed",
      "The connection or stream reached its maximum duration and was closed.",
      "A max connection duration is configured.",
      "Expected for long-lived connections; clients should reconnect."),
    F("UPE", "UpstreamProtocolError", "502", "The upstream's response broke the HTTP protocol.",
      "The upstream speaks another protocol than the port declares: most often an HTTP/2-only "
      "server (gRPC) behind a port Istio treats as HTTP/1.1 (named http, or unnamed), or the "
      "reverse (a port named http2/grpc in front of an HTTP/1-only app); or a malformed "
      "response.",
      "Check the Service port's name/appProtocol against what the application speaks "
      "(`weftctl describe pod <server>` says where the protocol came from); for a gRPC server "
      "name the port grpc or http2, or set appProtocol: grpc (operator report B032)."),
    F("NC", "NoClusterFound", "503, empty body",
      "The route names a cluster that does not exist in this proxy.",
      "Usually a subset without a DestinationRule: the VirtualService routes to a subset no "
      "DestinationRule defines (IST0101); or the cluster has not been delivered yet.",
      "Run `weftctl analyze -A <manifests>` (IST0101), then define the subset in a "
      "DestinationRule; check "
      "`weftctl proxy-config cluster <pod>` for the cluster and `weftctl proxy-status`."),
    F("OM", "OverloadManagerTerminated", "503, body \"envoy overloaded\"",
      "The proxy's overload manager shed the request.",
      "The proxy is short of memory or connections.",
      "Check the proxy's resources and overload manager settings."),
    F("DF", "DnsResolutionFailed", "503", "The DNS lookup for the upstream failed.",
      "A ServiceEntry with `resolution: DNS` names a host that does not resolve.",
      "Check the host name and DNS from the proxy's network."),
    F("DO", "DropOverload", "503, body \"drop overload\"",
      "The request was dropped by the endpoint drop-overload policy.",
      "The control plane asked the proxy to drop a share of traffic.",
      "Check the cluster's drop_overloads configuration."),
    F("DR", "DownstreamRemoteReset", "0 (no response)",
      "The client reset the stream (HTTP/2 or HTTP/3 RST_STREAM).",
      "The caller cancelled the request, often on its own timeout.",
      "Check the caller's timeout and logs with the same x-request-id."),
    F("UDO", "UnconditionalDropOverload", "503",
      "All requests are dropped: drop overload is configured at 100%.",
      "The control plane set an unconditional drop policy.",
      "Check the cluster's drop_overloads configuration."),

    /* ---- response code details (envoy stream_info.h ResponseCodeDetailValues) ---- */
    D("via_upstream", "the upstream's status",
      "The response came from the upstream application; the proxy did not generate it.",
      "The application itself answered with this status.",
      "Look at the upstream application's logs for this request (same x-request-id)."),
    D("request_payload_too_large", "413, body \"Payload Too Large\"",
      "A filter that needs the whole request body found it larger than the buffer limit.",
      "A buffering filter (buffer, ext_authz with body, Wasm) and a body above the listener's "
      "per-connection buffer limit.",
      "Raise the filter's max request bytes or stop buffering large bodies."),
    D("response_payload_too_large", "500",
      "A filter that needs the whole response body found it larger than the buffer limit.",
      "A buffering filter on the response path and a large response.",
      "Raise the limit or stop buffering large responses."),
    D("request_payload_exceeded_retry_buffer_limit",
      "507, body \"exceeded request buffer limit while retrying upstream\"",
      "The request needed a retry and its body was larger than the retry buffer.",
      "An attempt failed (connect failure, reset, retriable 5xx) while the client was still "
      "uploading, and the body passed the retry buffer limit (1 MiB by default) during the "
      "back-off; typical for large uploads to a flapping upstream.",
      "Raise the buffer limit for the route or listener, or turn proxy retries off for large "
      "uploads and retry in the client with an idempotency key."),
    D("stream_idle_timeout", "408 or 504, body \"stream timeout\"",
      "No bytes moved on the stream for the stream idle timeout.", "A stalled client or upstream.",
      "Find which side stalled; raise the idle timeout for "
      "long-lived streams."),
    D("request_overall_timeout", "408 or 504, body \"request timeout\"",
      "The connection manager's overall request timeout fired.",
      "The request (including its body upload) took longer than request_timeout.",
      "Raise the request timeout or make the request faster."),
    D("request_header_timeout", "408",
      "The request headers did not arrive within the header timeout.",
      "A slow or idle client connection.", "Check the client."),
    D("max_duration_timeout", "-", "The stream reached its maximum duration.",
      "A max stream duration is configured.", "Raise it or shorten the request."),
    D("overload", "503", "The overload manager rejected the request.",
      "The proxy is short of resources.", "Check the proxy's memory and connections."),
    D("low_version", "426", "The client used HTTP/1.0 or 0.9, which is not enabled.",
      "An old client.", "Use HTTP/1.1 or enable HTTP/1.0 support."),
    D("missing_host_header", "400", "The request had no Host header.", "A client that omits Host.",
      "Send a Host header."),
    D("missing_path_rejected", "400", "The request had no path.", "A malformed client request.",
      "Fix the client."),
    D("invalid_path", "400", "The request path is invalid.", "A malformed path.",
      "Fix the client's URL."),
    D("absolute_path_rejected", "404", "An absolute-form request URL was rejected.",
      "A client sending proxy-style requests to a listener that does not accept them.",
      "Send origin-form requests or enable absolute URLs."),
    D("path_normalization_failed", "400", "The path could not be normalised.",
      "A malformed or unsafe path (e.g. bad percent-encoding).", "Fix the client's URL."),
    D("upgrade_failed", "-", "A protocol upgrade (e.g. WebSocket) was not allowed.",
      "Upgrades are not enabled for this route.", "Enable the upgrade type on the route."),
    D("websocket_handshake_unsuccessful", "-", "The upstream refused the WebSocket handshake.",
      "The upstream did not answer 101.", "Check the upstream's WebSocket endpoint."),
    D("route_configuration_not_found", "404", "The listener has no route configuration yet.",
      "RDS has not delivered the route configuration to this proxy.",
      "Run `weftctl proxy-status` (RDS) and `weftctl proxy-config route <pod>`."),
    D("route_not_found", "404, empty body", "No route matched the request.",
      "The Host or path matches no route of any VirtualService bound here.",
      "Compare the Host with `weftctl proxy-config route <pod>` and check the VirtualService "
      "`hosts`/`gateways`; run `weftctl analyze -A <manifests>`."),
    D("direct_response", "the configured status", "The route answered directly (no upstream).",
      "A route with a direct response is configured.", "Expected; check the route if not."),
    D("cluster_not_found", "503, empty body", "The route's cluster does not exist in the proxy.",
      "Usually a subset without a DestinationRule, or a cluster not yet delivered.",
      "Run `weftctl analyze -A <manifests>` and `weftctl proxy-config cluster <pod>`."),
    D("maintenance_mode", "503, body \"maintenance mode\"", "The cluster is in maintenance mode.",
      "The runtime key upstream.maintenance_mode.<cluster> is set.", "Unset it."),
    D("drop_overload", "503, body \"drop overload\"",
      "The request was dropped by the drop-overload policy.", "Endpoint drop_overloads.",
      "Check the cluster's drop policy."),
    D("unconditional_drop_overload", "503", "All requests are dropped (drop overload at 100%).",
      "Endpoint drop_overloads at 100%.", "Check the cluster's drop policy."),
    D("no_healthy_upstream", "503, body \"no healthy upstream\"",
      "The cluster has no healthy endpoint.",
      "No pod matches the service or subset labels, pods are unready, or all were ejected.",
      "Run `weftctl proxy-config endpoint <pod> --cluster <cluster>` and `weftctl analyze -A "
      "<manifests>` "
      "(IST0173)."),
    D("response_timeout", "504, body \"upstream request timeout\"",
      "The route's overall timeout fired before the upstream answered.",
      "A slow upstream, or a VirtualService `timeout` shorter than the service needs.",
      "Raise `timeout` or add `retries.perTryTimeout`; check upstream latency."),
    D("upstream_response_timeout", "504",
      "Older Envoy's name for response_timeout: the route timeout fired.",
      "A slow upstream or a short VirtualService `timeout`.", "As for response_timeout."),
    D("upstream_per_try_timeout", "504, body \"upstream request timeout\"",
      "The last attempt hit its per-try timeout and no retry followed.",
      "Every attempt was slower than `retries.perTryTimeout`.",
      "Check upstream latency; raise perTryTimeout if the service is legitimately slow."),
    D("upstream_per_try_idle_timeout", "504",
      "The last attempt was idle past its per-try idle "
      "timeout.",
      "A stalled upstream.", "Check the upstream."),
    D("upstream_max_stream_duration_reached", "408 or 504",
      "The upstream stream reached its maximum duration.", "A max stream duration is set.",
      "Raise it or shorten the request."),
    D("upstream_reset_before_response_started{", "503 (502 for protocol error)",
      "The upstream connection failed or was reset before any response header arrived; the "
      "reason in braces says how.",
      "See the reset reason below.", "See the reset reason below."),
    D("upstream_reset_before_response_started", "503",
      "The upstream closed before the response started (\"upstream is closed prematurely "
      "during decoding data from downstream\").",
      "The upstream went away while the request body was still arriving.",
      "Check the upstream's logs and limits for large or slow requests."),
    D("upstream_reset_after_response_started{", "the original status (truncated response)",
      "The upstream reset after the response headers were sent; the client got a truncated "
      "response.",
      "The upstream crashed or closed mid-response.", "Check the upstream's logs."),
    D("filter_chain_not_found", "connection closed",
      "No filter chain of the listener matched the connection.",
      "Traffic to a port or SNI the listener was not configured for. On a sidecar's inbound "
      "listener (virtualInbound, port 15006) under a STRICT PeerAuthentication it is a "
      "plaintext connection: STRICT keeps only the TLS chains, so a client sending plaintext "
      "(a DestinationRule `tls.mode: DISABLE`, auto mTLS off, or a client outside the mesh) "
      "matches none; the client's proxy then logs 503 UC connection_termination.",
      "Check `weftctl proxy-config listener <pod> --port <port> -o json` for the chains "
      "(STRICT: only `transport_protocol: tls`); find the client's DestinationRule with `tls` "
      "and remove `mode: DISABLE` (or use ISTIO_MUTUAL), or set the PeerAuthentication to "
      "PERMISSIVE while clients migrate; a client outside the mesh needs a sidecar."),
    D("transport socket timeout", "connection closed",
      "The client's TLS handshake did not finish within the listener's "
      "transport_socket_connect_timeout (Envoy's handshake timeout; downstream_cx_transport_"
      "socket_connect_timeout counts it).",
      "A client that opened TCP but never completed TLS: a plaintext client waiting for the "
      "server to speak first on a TLS port, a port scanner, or a client stalled mid-handshake.",
      "Check what the client sends (`openssl s_client -connect <ip>:<port>` should finish); a "
      "plaintext client to a STRICT port must use mTLS (a sidecar) or PERMISSIVE must be set."),
    D("downstream_remote_disconnect", "0", "The client disconnected.",
      "The caller closed the connection (often its timeout).", "Check the caller."),
    D("downstream_local_disconnect(", "-",
      "The proxy closed the client connection; the reason "
      "is in parentheses.",
      "A protocol error, overload or drain.", "Read the reason in parentheses."),
    D("duration_timeout", "-", "The maximum connection or stream duration was reached.",
      "A max duration is configured.", "Expected for long-lived connections."),
    D("downstream_header_timeout", "-", "The client's headers did not arrive in time.",
      "A slow or idle client.", "Check the client."),
    D("admin_filter_response", "-", "The admin filter answered the request.",
      "A request to the proxy's admin interface.", "Expected."),
    D("internal_redirect", "-", "The proxy followed an internal redirect.",
      "An internal redirect policy on the route.", "Expected."),
    D("filter_removed_required_request_headers", "-",
      "A filter removed a header the request needs (such as :path or Host).",
      "A misconfigured filter (EnvoyFilter, Wasm, Lua).", "Check the filters on this listener."),
    D("filter_removed_required_response_headers", "-",
      "A filter removed a header the response needs (such as :status).", "A misconfigured filter.",
      "Check the filters on this listener."),
    D("rejecting_because_detection_failed", "-", "Protocol detection failed on the connection.",
      "Traffic that is not what the port declares.", "Check the port's protocol."),
    D("filter_added_invalid_request_data", "-", "A filter added invalid data to the request.",
      "A misconfigured filter.", "Check the filters."),
    D("filter_added_invalid_response_data", "-", "A filter added invalid data to the response.",
      "A misconfigured filter.", "Check the filters."),
    D("rbac_access_denied_matched_policy[", "403, body \"RBAC: access denied\"",
      "An AuthorizationPolicy denied the request; the brackets name the matching policy "
      "(`none` when ALLOW policies exist and none matched).",
      "A DENY policy matched, or ALLOW policies exist and none allows this caller/path.",
      "Check `weftctl describe pod <pod>` (RBAC policies) and the AuthorizationPolicies in "
      "the namespace and root namespace."),
    /* extension details (the fault filter, source/extensions/filters/http/fault) */
    D("fault_filter_abort", "the configured abort status (body \"fault filter abort\")",
      "The fault injection filter aborted the request on purpose: the response never came "
      "from the application (flag FI).",
      "A VirtualService `fault.abort` matches this request (httpStatus, percentage), or the "
      "request carries the x-envoy-fault-abort-request header where header-controlled faults "
      "are allowed.",
      "Check the `fault` block of the VirtualService routes for this host (`weftctl "
      "proxy-config route <pod> -o json`, typed_per_filter_config envoy.filters.http.fault); "
      "remove it or lower its percentage when the test is over."),
    /* the HTTP/1 codec's details (Envoy's Http1ResponseCodeDetails, source/common/http/http1/
     * codec_impl.cc): the request was malformed, the proxy answered itself (flag DPE) */
    D("http1.codec_error", "400 (connection closed)",
      "The request was not valid HTTP/1.1, so the proxy rejected it before routing.",
      "A malformed request line or header line, a bare CR or LF, an invalid chunk, conflicting "
      "Content-Length values, a duplicate Host, or a connection closed mid-message; often a "
      "client bug or a request smuggling attempt.",
      "Capture the raw request (`curl -v`, the client's logs); the proxy's debug log (logger "
      "http) names the exact parse error."),
    D("http1.invalid_characters", "400 (connection closed)",
      "A header value (or the request) held characters HTTP forbids, such as NUL or control "
      "characters.",
      "A client that does not escape header values, or a hostile request.",
      "Find the header in the client's request and encode it properly."),
    D("http1.invalid_url", "400, body \"Bad Request\"",
      "The request target is not a valid path or absolute URL.",
      "A path with spaces or control characters, or an absolute-form URL that does not parse.",
      "Percent-encode the path on the client."),
    D("http1.headers_too_large", "431",
      "The request headers exceeded the proxy's limit (max_request_headers_kb, 60 KiB by "
      "default).",
      "Very large cookies or tokens, or headers that grow with every hop.",
      "Shrink the headers, or raise max_request_headers_kb where the traffic is expected."),
    /* the HTTP/2 codec's details (Envoy's Http2ResponseCodeDetails, source/common/http/http2/
     * codec_impl.h; protocols.md §2.5) */
    D("http2.remote_reset", "0 (stream reset by the client)",
      "The client reset its HTTP/2 stream (RST_STREAM) before the response completed (flag DR).",
      "The caller gave up: a cancelled gRPC call or fetch, a client timeout or deadline shorter "
      "than the service's latency, a browser navigating away.",
      "Compare the request duration with the client's timeout or gRPC deadline; look at the "
      "upstream's latency (`%DURATION%`, `%RESPONSE_DURATION%`)."),
    D("http2.remote_refuse", "0 (stream refused by the client)",
      "The client refused the HTTP/2 stream (RST_STREAM REFUSED_STREAM).",
      "A client over its own concurrency limit.", "Check the client's HTTP/2 settings."),
    D("http2.too_many_headers", "stream reset",
      "The HTTP/2 request's headers exceeded max_request_headers_kb (60 KiB) or "
      "max_headers_count (100, pseudo-headers included): the proxy reset the stream "
      "(http2.header_overflow counts it).",
      "Very large cookies or tokens, or headers that grow with every hop.",
      "Shrink the headers, or raise max_request_headers_kb / max_headers_count where the "
      "traffic is expected."),
    D("http2.invalid.header.field", "connection closed (GOAWAY PROTOCOL_ERROR)",
      "An HTTP/2 request carried a field HTTP/2 forbids: a connection-specific one (connection, "
      "keep-alive, proxy-connection, transfer-encoding, upgrade), te other than trailers, an "
      "uppercase or invalid name (http2.rx_messaging_error counts it).",
      "A client or library translating HTTP/1.1 headers to HTTP/2 without dropping the "
      "hop-by-hop ones.",
      "Fix the client so it does not send connection-specific headers over HTTP/2."),
    D("http2.violation.of.messaging.rule", "connection closed (GOAWAY PROTOCOL_ERROR)",
      "An HTTP/2 request broke HTTP's messaging rules (missing or repeated pseudo-headers, a "
      "content-length that disagrees with the DATA).",
      "A buggy client, or a non-HTTP/2 peer on an HTTP/2 port.",
      "Capture the client's frames "
      "(`nghttp -v`) and fix the client."),
    D("http2.unknown.nghttp2.error", "connection closed (GOAWAY)",
      "The HTTP/2 codec (nghttp2) reported a protocol error on the connection.",
      "Malformed frames, a flow-control violation, or a non-HTTP/2 client on an HTTP/2-only "
      "port (codec_type HTTP2).",
      "Check what the client sends on this port; the proxy's debug log (logger http2) names "
      "the error."),
    D("http1.too_many_headers", "431",
      "The request had more header fields than the proxy allows (max_headers_count, 100 by "
      "default).",
      "A client or intermediary adding many headers.",
      "Reduce the headers, or raise max_headers_count where this is expected."),
    D("http1.content_length_and_chunked_not_allowed", "400",
      "The request had both Content-Length and Transfer-Encoding: chunked, which the proxy "
      "refuses (a request smuggling defence).",
      "A client or intermediary that sets both, or a smuggling attempt.",
      "Fix the client to send one of the two."),
    D("http1.invalid_transfer_encoding", "501 or 400",
      "The request's Transfer-Encoding is not the single `chunked` coding the proxy accepts.",
      "A client using gzip/other transfer codings, chunked twice, or Transfer-Encoding in an "
      "HTTP/1.0 request.",
      "Send `Transfer-Encoding: chunked` only (or a Content-Length)."),

    /* ---- upstream reset reasons (Http::Utility::resetReasonToString) ---- */
    R("local_connection_failure", "The proxy failed to open the connection locally.",
      "No local ports or file descriptors, or a local socket error.",
      "Check the proxy's resource limits."),
    R("remote_connection_failure", "The upstream refused or did not accept the connection.",
      "Nothing listens on the endpoint's port (Connection refused), the pod is gone, or the TLS "
      "handshake failed.",
      "Check the endpoint and that the app listens on the target port; read the transport "
      "failure reason."),
    R("connection_failure", "Older Envoy's name for a failed connection to the upstream.",
      "Nothing listens on the endpoint, or the connection was refused or timed out.",
      "Check the endpoint and the application's port."),
    R("connection_timeout",
      "The connection to the upstream did not complete within the "
      "connect timeout (for a TLS cluster the timeout includes the TLS handshake).",
      "The host is unreachable or overloaded, or a network policy drops packets; with TLS "
      "(mTLS or DestinationRule SIMPLE/MUTUAL) a handshake the server never answers: TLS to a "
      "port whose server waits for the client to speak first (a plaintext TCP protocol), or a "
      "server too busy to finish handshakes.",
      "Check network reachability and DestinationRule `connectionPool.tcp.connectTimeout`; "
      "if TCP connects (`weftctl proxy-config endpoint <pod>`), check whether the port speaks "
      "TLS and the DestinationRule `tls.mode` matches it."),
    R("connection_termination",
      "The upstream closed the connection while the request was in "
      "flight.",
      "A pooled keep-alive connection closed by the server as idle just as it was reused, or "
      "an upstream crash; on every request, with the server's proxy logging NR "
      "filter_chain_not_found: plaintext to a STRICT mTLS port (security.md §4.3).",
      "Set DestinationRule `connectionPool.http.idleTimeout` below the server's keep-alive "
      "timeout, or retry on `reset`; for STRICT, remove the client's DestinationRule "
      "`tls.mode: DISABLE` (or set ISTIO_MUTUAL)."),
    R("local_reset", "The proxy reset the upstream stream.", "See the response flag (LR).",
      "Enable router/connection debug logs."),
    R("local_refused_stream_reset", "The proxy refused the stream locally.",
      "Stream limits on the connection.", "Check connection pool settings."),
    R("overflow", "A circuit breaker overflowed.", "DestinationRule connectionPool limits.",
      "Raise the limits or add capacity."),
    R("remote_reset", "The upstream reset the stream (HTTP/2 RST_STREAM, not REFUSED_STREAM).",
      "An upstream abort or crash, an overload limit, or a cancelled call on the server.",
      "Check the upstream's logs; VirtualService retries.retryOn `reset` retries it."),
    R("remote_refused_stream_reset",
      "The upstream refused the HTTP/2 stream (RST_STREAM REFUSED_STREAM) without processing "
      "it.",
      "The upstream is draining after a GOAWAY (shutdown, restart, max connection age): "
      "streams above its last stream id are refused; or the connection is over the upstream's "
      "max_concurrent_streams.",
      "It is safe to retry: Istio's default retry_on has `refused-stream`; seeing it means "
      "retries were used up or disabled. Check the upstream's restarts and stream limits."),
    R("remote_error_with_CONNECT_request",
      "The upstream answered a CONNECT request with an "
      "error.",
      "The tunnel target refused.", "Check the CONNECT target."),
    R("protocol_error", "The upstream's response broke the protocol (502).",
      "A port protocol mismatch: an HTTP/2-only (gRPC) server behind a port treated as "
      "HTTP/1.1, or a port declared http2/grpc in front of an HTTP/1 app.",
      "Check the Service port name/appProtocol (`weftctl describe pod <server>`); for gRPC "
      "name the port grpc or http2, or set appProtocol: grpc."),
    R("overload_manager_reset", "The overload manager reset the stream.",
      "The proxy is short of resources.", "Check the proxy's resources."),

    /* ---- TLS failure signatures (security.md §3.5, §8.2): most specific first read ---- */
    T("CERTIFICATE_VERIFY_FAILED", "503 UF,URX (client side)",
      "This proxy rejected the certificate the peer presented (BoringSSL 268435581): its "
      "chain does not lead to a root we trust, its SAN is not the identity we expect, or it "
      "is expired or not yet valid.",
      "Different roots on the two sides (multi-cluster, a replaced `cacerts` Secret, pods "
      "started before a root change), a DestinationRule `subjectAltNames` or a trust domain "
      "that does not match the server's SPIFFE ID, or an expired certificate.",
      "Log %UPSTREAM_TRANSPORT_FAILURE_REASON% with its `verify cert failed: ...` detail "
      "(weft-proxy writes it); run `weftctl proxy-config rootca-compare <client> <server>` and "
      "`weftctl proxy-config secret <server>` (serials, NOT AFTER)."),
    T("CERTIFICATE_VERIFY_FAILED*unable_to_get_local_issuer_certificate",
      "503 UF,URX (client side)",
      "This proxy rejected the peer's certificate: it is signed by a CA this proxy does not "
      "trust (unknown CA).",
      "The two workloads have different roots: a plug-in `cacerts` Secret replaced or added "
      "on one side only, another cluster's or mesh's CA, or proxies that still hold the old "
      "ROOTCA after a root change.",
      "Run `weftctl proxy-config rootca-compare <client> <server>`; when the roots differ, "
      "give both meshes the same root (or a common root above both intermediates) and "
      "restart the pods that hold the old ROOTCA; `weftctl proxy-config secret <pod>` shows "
      "each ROOTCA's serial."),
    T("CERTIFICATE_VERIFY_FAILED*self_signed_certificate_in_certificate_chain",
      "503 UF,URX (client side)",
      "This proxy rejected the peer's certificate: its chain ends in a self-signed root this "
      "proxy does not trust (unknown CA).",
      "The peer's workload certificate comes from another root (another mesh's CA, a "
      "replaced `cacerts`, a stale pod).",
      "Run `weftctl proxy-config rootca-compare <client> <server>` and make both trust the "
      "same root; restart the pods still holding the old one."),
    T("CERTIFICATE_VERIFY_FAILED*self_signed_certificate", "503 UF,URX (client side)",
      "This proxy rejected the peer's certificate: the peer presented a self-signed "
      "certificate that is not our root.",
      "The server is not a mesh workload presenting an Istio certificate (its own "
      "self-signed server certificate) while the DestinationRule says ISTIO_MUTUAL or SIMPLE "
      "with our CA.",
      "For a server outside the mesh use DestinationRule `tls.mode: SIMPLE` with its CA in "
      "`caCertificates`/`credentialName`, or `DISABLE` if it speaks plaintext."),
    T("CERTIFICATE_VERIFY_FAILED*SAN_matcher", "503 UF,URX (client side)",
      "This proxy rejected the peer's certificate: it is trusted but names another identity "
      "than the one expected (SAN mismatch); the detail lists the SANs the certificate has.",
      "The server runs under another service account than the client expects, a "
      "DestinationRule `subjectAltNames` lists the wrong SPIFFE ID or host, the trust domain "
      "differs (MeshConfig trustDomain), or the Service selects pods of another workload.",
      "Compare the SANs in the detail with the expected ones in `weftctl proxy-config "
      "cluster <client> --fqdn <host> -o json` (match_subject_alt_names); fix the "
      "DestinationRule `subjectAltNames`, the pod's serviceAccountName or the trust domain."),
    T("CERTIFICATE_VERIFY_FAILED*certificate_has_expired", "503 UF,URX (client side)",
      "This proxy rejected the peer's certificate because it (or a CA above it) has expired.",
      "The peer's proxy stopped getting new certificates (the CA is unreachable, its token is "
      "refused) or the root or intermediate expired (old one-year roots, a plug-in CA past "
      "its NOT AFTER); clock skew between nodes.",
      "Run `weftctl proxy-config secret <server>`: NOT AFTER and VALID CERT of `default` and "
      "`ROOTCA`; check the server proxy's log for `failed to sign CSR`; rotate the expired "
      "root or intermediate (`cacerts`)."),
    T("CERTIFICATE_VERIFY_FAILED*certificate_is_not_yet_valid", "503 UF,URX (client side)",
      "This proxy rejected the peer's certificate because its NOT BEFORE is in the future.",
      "Clock skew between the machines, or a new root or intermediate issued with a start time "
      "ahead of this node's clock.",
      "Check both machines' clocks (NTP); `weftctl proxy-config secret <server>` shows NOT "
      "BEFORE."),
    T("WRONG_VERSION_NUMBER", "503 UF,URX (client side)",
      "This proxy spoke TLS and the peer answered in plaintext (BoringSSL 268435703): TLS to a "
      "plaintext port.",
      "A DestinationRule `tls.mode: ISTIO_MUTUAL` or `SIMPLE` towards a workload without a "
      "sidecar, a PeerAuthentication `DISABLE` port, or a port that does not speak TLS; "
      "auto mTLS never does this (it follows the endpoints' tlsMode label).",
      "Check `weftctl proxy-config cluster <client> --fqdn <host> -o json` (transport_socket, "
      "tlsMode-istio match) and the DestinationRule `trafficPolicy.tls`; remove it to let auto "
      "mTLS decide, or set `mode: DISABLE` for a plaintext server."),
    T("TLSV1_ALERT_UNKNOWN_CA", "503 UF,URX (client side) or a reset handshake",
      "The peer rejected our certificate chain: it does not trust the CA that signed our "
      "certificate (BoringSSL 268436504, the far end's root mismatch).",
      "The two workloads' roots differ (a plug-in `cacerts` changed on one side, another "
      "mesh or cluster, pods started before a root change).",
      "Run `weftctl proxy-config rootca-compare <client> <server>`; give both the same root "
      "and restart the pods still holding the old ROOTCA."),
    T("SSLV3_ALERT_CERTIFICATE_EXPIRED", "503 UF,URX (client side) or a reset handshake",
      "The peer rejected our certificate as expired (BoringSSL 268436501).",
      "This proxy's workload certificate was not renewed (the CA is unreachable, its token is "
      "refused, a root expired) or the clocks differ.",
      "Run `weftctl proxy-config secret <this pod>` (NOT AFTER, VALID CERT); check this "
      "proxy's log for `failed to sign CSR` and that weft-pilot's CA answers."),
    T("SSLV3_ALERT_BAD_CERTIFICATE", "503 UF,URX (client side) or a reset handshake",
      "The peer rejected our certificate (a bad certificate alert): not an identity it "
      "accepts, or not verifiable for it.",
      "The server checks client SANs or trust domains ours does not meet, or our chain is "
      "incomplete.",
      "Compare `weftctl proxy-config secret <this pod>` with what the server expects; check "
      "the server's TLS settings (Gateway MUTUAL `ca.crt`, DestinationRule on the server)."),
    T("SSLV3_ALERT_HANDSHAKE_FAILURE", "503 UF,URX (client side) or a reset handshake",
      "The peer aborted the handshake: no protocol version, cipher or certificate both sides "
      "accept; under TLS 1.2 also a server that requires a client certificate we did not send.",
      "A DestinationRule `SIMPLE` towards a STRICT/MUTUAL server (no client certificate), "
      "`minProtocolVersion` or cipher settings that do not overlap.",
      "Use `ISTIO_MUTUAL` (or `MUTUAL` with a client certificate) towards mesh workloads; "
      "compare TLS versions and ciphers of both sides."),
    T("TLSV1_ALERT_CERTIFICATE_REQUIRED", "503 UF,URX (client side)",
      "The server requires a client certificate and this proxy sent none (TLS 1.3's "
      "certificate_required alert).",
      "A DestinationRule `tls.mode: SIMPLE` towards a STRICT mTLS workload or a MUTUAL gateway, "
      "or a client without its `default` certificate.",
      "Use `ISTIO_MUTUAL` towards mesh workloads (or remove the DestinationRule `tls` to let "
      "auto mTLS decide), `MUTUAL` with `credentialName` towards a MUTUAL gateway."),
    T("PEER_DID_NOT_RETURN_A_CERTIFICATE", "connection reset (server side)",
      "This proxy requires a client certificate and the client sent none.",
      "A client outside the mesh, or a mesh client with DestinationRule `tls.mode: SIMPLE`, "
      "calling a STRICT port or a MUTUAL gateway.",
      "Give the client a sidecar (ISTIO_MUTUAL), fix its DestinationRule, or set the "
      "PeerAuthentication to PERMISSIVE while clients migrate."),
    T("peer_did_not_provide_required_client_certificate", "connection reset (server side)",
      "This proxy requires a client certificate and the client's TLS handshake carried none "
      "(Envoy's detail; ssl.fail_verify_no_cert counts it).",
      "A client outside the mesh, or a mesh client with DestinationRule `tls.mode: SIMPLE`, "
      "calling a STRICT port or a MUTUAL gateway.",
      "Give the client a sidecar (ISTIO_MUTUAL), fix its DestinationRule, or set the "
      "PeerAuthentication to PERMISSIVE while clients migrate."),
    T("Secret_is_not_supplied_by_SDS", "503 UF (client) or a reset handshake (server)",
      "The proxy has no certificate for this TLS context yet: the SDS secret (`default`, "
      "`ROOTCA`, or a gateway's `kubernetes://<name>`) was not supplied, so Envoy's "
      "NotReadySslSocket fails every handshake.",
      "The proxy could not get its workload certificate (weft-pilot's CA unreachable, "
      "`request authenticate failure`: a token refused or missing at --token-path), or a "
      "gateway's credentialName Secret is missing, in another namespace or has the wrong keys.",
      "Run `weftctl proxy-config secret <pod>` (rows WARMING, VALID CERT false); read the "
      "proxy's log for `failed to sign CSR`; for a gateway check the Secret (`weftctl analyze` "
      "IST0161)."),
    T("HTTP_REQUEST", "connection closed (server side)",
      "A client sent a plaintext HTTP request to this TLS port.",
      "Plaintext to a STRICT or TLS-only port (a client outside the mesh, DestinationRule "
      "`tls.mode: DISABLE`), or http:// to an HTTPS gateway port.",
      "Send TLS (a sidecar, ISTIO_MUTUAL, https://), or set PERMISSIVE while clients "
      "migrate."),
    T("NO_SHARED_CIPHER", "connection reset",
      "Client and server have no TLS cipher suite in common.",
      "Gateway or DestinationRule `cipherSuites` / `minProtocolVersion` that exclude the "
      "other side's suites.",
      "Compare the cipher settings of both sides; use Istio's defaults unless required."),
    T("TLSV1_ALERT_PROTOCOL_VERSION", "connection reset",
      "The peer refused the TLS version offered.",
      "`minProtocolVersion` / `maxProtocolVersion` (Gateway `tls`, MeshConfig "
      "`meshMTLS.minProtocolVersion`) that do not overlap with the other side.",
      "Align the TLS versions of both sides."),
    T("UNSUPPORTED_PROTOCOL", "connection reset",
      "The peer offered a TLS version this proxy does not allow.",
      "`minProtocolVersion` above the client's maximum (e.g. TLS 1.3 only against a TLS 1.2 "
      "client).",
      "Align the TLS versions of both sides."),
    T("TLS_error:*connection_error", "503 UF,URX or a reset handshake",
      "The peer closed the connection in the middle of the TLS handshake, without a TLS "
      "alert.",
      "The server is not a TLS server and closed on our ClientHello, the server's STRICT "
      "listener found no chain for the connection, or the peer crashed.",
      "Check the server proxy's log (NR filter_chain_not_found) and that the port speaks TLS "
      "(`openssl s_client -connect <ip>:<port>`)."),
};

/* Signatures that name one cause only together (security.md §4.3, §8.2 #6). */
static const wf_lx_pair pairs[] = {
    {WF_LX_RESET, "connection_termination", WF_LX_DETAIL, "filter_chain_not_found",
     "Plaintext sent to a STRICT mTLS port: the client's proxy sent plaintext (503 UC "
     "upstream_reset_before_response_started{connection_termination}) and the server's proxy "
     "closed the connection because STRICT keeps only TLS filter chains (NR "
     "filter_chain_not_found). Either alone is ambiguous (UC is also the idle-timeout race); "
     "both together prove the mTLS mode mismatch.",
     "A DestinationRule `trafficPolicy.tls.mode: DISABLE` (or port-level) towards a workload "
     "whose PeerAuthentication is STRICT, or auto mTLS turned off (MeshConfig "
     "enableAutoMtls: false) without an ISTIO_MUTUAL DestinationRule.",
     "Remove `tls.mode: DISABLE` from the client's DestinationRule (or set ISTIO_MUTUAL); "
     "`weftctl describe pod <server>` shows the effective PeerAuthentication, `weftctl "
     "proxy-config cluster <client> --fqdn <host> -o json` the client's transport socket."},
};

size_t wf_lx_pair_count(void)
{
    return sizeof pairs / sizeof pairs[0];
}

const wf_lx_pair *wf_lx_pair_at(size_t i)
{
    return i < wf_lx_pair_count() ? &pairs[i] : NULL;
}

size_t wf_lx_table_count(void)
{
    return sizeof table / sizeof table[0];
}

const wf_lx_entry *wf_lx_table_at(size_t i)
{
    return i < wf_lx_table_count() ? &table[i] : NULL;
}

static const wf_lx_entry *find_exact(wf_lx_kind k, const char *key)
{
    for (size_t i = 0; i < wf_lx_table_count(); i++)
        if (table[i].kind == k && strcmp(table[i].key, key) == 0)
            return &table[i];
    return NULL;
}

const wf_lx_entry *wf_lx_find_flag(const char *flag)
{
    return find_exact(WF_LX_FLAG, flag);
}

/* NR as a listener's access log writes it (the filter chain match failed, no request). */
static const wf_lx_entry LISTENER_NR = {
    WF_LX_FLAG,
    "NR",
    "NoRouteFound",
    "connection closed without a response (response code 0)",
    "No filter chain of the listener matched the connection, so the listener closed it before "
    "any HTTP was read; the listener's access log (Istio's, filtered to NR) wrote this line.",
    "The connection's transport or SNI is one the listener has no chain for: on a sidecar's "
    "inbound port under a STRICT PeerAuthentication, a plaintext client (no sidecar, a "
    "DestinationRule `tls.mode: DISABLE`, auto mTLS off).",
    "See filter_chain_not_found below: compare the chains (`weftctl proxy-config listener <pod> "
    "--port <port> -o json`) with how the client connects (`weftctl describe pod <pod>`)."};

const wf_lx_entry *wf_lx_find_flag_in_context(const char *flag, const char *details_ctx)
{
    if (flag && details_ctx && strcmp(flag, "NR") == 0 &&
        strcmp(details_ctx, "filter_chain_not_found") == 0)
        return &LISTENER_NR;
    return NULL;
}

const wf_lx_entry *wf_lx_find_reset(const char *reason)
{
    return find_exact(WF_LX_RESET, reason);
}

/* ' ' and '-' read as '_' (logs replace spaces; OpenSSL and BoringSSL spell "self-signed" and
 * "self signed"). */
static char tls_norm(char c)
{
    return c == ' ' || c == '-' ? '_' : c;
}

/* Does part (len bytes) occur in s, compared with tls_norm? */
static bool tls_contains(const char *s, const char *part, size_t len)
{
    for (; *s; s++) {
        size_t i = 0;
        while (i < len && s[i] && tls_norm(s[i]) == tls_norm(part[i]))
            i++;
        if (i == len)
            return true;
    }
    return len == 0;
}

/* The number of '*'-separated parts of key, all found in reason; 0 when one is missing. */
static size_t tls_match(const char *key, const char *reason)
{
    size_t parts = 0;
    for (const char *p = key;;) {
        size_t len = strcspn(p, "*");
        if (!tls_contains(reason, p, len))
            return 0;
        parts++;
        if (!p[len])
            return parts;
        p += len + 1;
    }
}

const wf_lx_entry *wf_lx_find_tls(const char *reason)
{
    const wf_lx_entry *best = NULL;
    size_t best_parts = 0;
    for (size_t i = 0; reason && i < wf_lx_table_count(); i++) {
        if (table[i].kind != WF_LX_TLS)
            continue;
        size_t n = tls_match(table[i].key, reason);
        if (n &&
            (n > best_parts || (n == best_parts && strlen(table[i].key) > strlen(best->key)))) {
            best = &table[i];
            best_parts = n;
        }
    }
    return best;
}

/* Local replies recognisable without %RESPONSE_CODE_DETAILS% (Envoy's default format has
 * none): by status, and by what the upstream did. An upstream that answered leaves
 * x-envoy-upstream-service-time (%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%, in Envoy's default
 * format): then the status is the upstream's. With no upstream host no attempt was in flight,
 * so the proxy answered itself. The retry-buffer overflow happens while an attempt is in
 * flight, so Envoy and weft-proxy log it with that attempt's upstream host: a 507 with an
 * upstream host but no upstream service time, on a request with a body, is that overflow. */
static const struct {
    int code;
    const char *details, *why, *why_with_host;
} inferred[] = {
    {507, "request_payload_exceeded_retry_buffer_limit",
     "the line has no response code details; a 507 with no upstream host is the proxy's own "
     "reply, and the only one weft-proxy and Envoy send with 507 is the retry-buffer overflow",
     "the line has no response code details; the upstream host is the attempt that was in "
     "flight and no upstream service time was logged, so the upstream did not answer: the 507 "
     "is the proxy's own, and the only one weft-proxy and Envoy send is the retry-buffer "
     "overflow"},
};

static bool has_body_method(const char *m)
{
    return !m || strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
}

const wf_lx_entry *wf_lx_infer_details(const wf_lx_record *r, const char **why)
{
    /* a request without a body cannot overflow the retry buffer: no guess either way */
    if (r->details || r->conn_details || r->upstream_service_time || !has_body_method(r->method))
        return NULL;
    for (size_t i = 0; i < sizeof inferred / sizeof inferred[0]; i++) {
        if (inferred[i].code == r->code) {
            *why = r->host ? inferred[i].why_with_host : inferred[i].why;
            return wf_lx_find_detail(inferred[i].details);
        }
    }
    return NULL;
}

const wf_lx_entry *wf_lx_find_detail(const char *details)
{
    const wf_lx_entry *e = find_exact(WF_LX_DETAIL, details), *best = NULL;
    if (e)
        return e;
    for (size_t i = 0; i < wf_lx_table_count(); i++) {
        const wf_lx_entry *t = &table[i];
        size_t kl = strlen(t->key);
        char last = kl ? t->key[kl - 1] : 0;
        if (t->kind == WF_LX_DETAIL && (last == '{' || last == '[' || last == '(') &&
            strncmp(details, t->key, kl) == 0 && (!best || kl > strlen(best->key)))
            best = t;
    }
    return best;
}
