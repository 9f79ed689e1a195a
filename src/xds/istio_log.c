/*
 * istio_log.c - Istio's default JSON access log map (istio_log.h).
 */
#include "xds/istio_log.h"

#include <stddef.h>

json_t *wf_istio_json_format(void)
{
    static const char *const MAP[][2] = {
        {"start_time", "%START_TIME%"},
        {"route_name", "%ROUTE_NAME%"},
        {"method", "%REQ(:METHOD)%"},
        {"path", "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%"},
        {"protocol", "%PROTOCOL%"},
        {"response_code", "%RESPONSE_CODE%"},
        {"response_flags", "%RESPONSE_FLAGS%"},
        {"response_code_details", "%RESPONSE_CODE_DETAILS%"},
        {"connection_termination_details", "%CONNECTION_TERMINATION_DETAILS%"},
        {"bytes_received", "%BYTES_RECEIVED%"},
        {"bytes_sent", "%BYTES_SENT%"},
        {"duration", "%DURATION%"},
        {"upstream_service_time", "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%"},
        {"x_forwarded_for", "%REQ(X-FORWARDED-FOR)%"},
        {"user_agent", "%REQ(USER-AGENT)%"},
        {"request_id", "%REQ(X-REQUEST-ID)%"},
        {"authority", "%REQ(:AUTHORITY)%"},
        {"upstream_host", "%UPSTREAM_HOST%"},
        {"upstream_cluster", "%UPSTREAM_CLUSTER_RAW%"},
        {"upstream_local_address", "%UPSTREAM_LOCAL_ADDRESS%"},
        {"downstream_local_address", "%DOWNSTREAM_LOCAL_ADDRESS%"},
        {"downstream_remote_address", "%DOWNSTREAM_REMOTE_ADDRESS%"},
        {"requested_server_name", "%REQUESTED_SERVER_NAME%"},
        {"upstream_transport_failure_reason", "%UPSTREAM_TRANSPORT_FAILURE_REASON%"},
    };
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof MAP / sizeof MAP[0]; i++) {
        if (json_object_set_new(o, MAP[i][0], json_string(MAP[i][1])) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}
