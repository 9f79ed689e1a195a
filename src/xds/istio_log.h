/*
 * istio_log.h - Istio's default access log formats, as istiod writes them into every HTTP
 * connection manager when MeshConfig accessLogFile is set (pilot/pkg/networking/core/
 * accesslog.go, reference envoy-istio-behaviour.md §5.2 and §5.3). Shared by weft-pilot (which
 * sends them) and weft-proxy's tests and tools (which read them).
 */
#ifndef WF_XDS_ISTIO_LOG_H
#define WF_XDS_ISTIO_LOG_H

#include <jansson.h>

/* accessLogEncoding TEXT with no accessLogFormat (Istio >= 1.24: %UPSTREAM_CLUSTER_RAW%). */
#define WF_ISTIO_TEXT_FORMAT                                                                       \
    "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "             \
    "%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "   \
    "\"%UPSTREAM_TRANSPORT_FAILURE_REASON%\" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "            \
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "      \
    "\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\" %UPSTREAM_CLUSTER_RAW% "    \
    "%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% "             \
    "%REQUESTED_SERVER_NAME% %ROUTE_NAME%\n"

/* accessLogEncoding JSON with no accessLogFormat: Istio's key -> command map, as a new JSON
 * object the caller releases with json_decref; NULL when out of memory. */
json_t *wf_istio_json_format(void);

#endif
