/*
 * lds.c - a sidecar's outbound HTTP listeners: one per HTTP service port, each with Istio's
 * HTTP connection manager fetching route configuration "<port>" over ADS (see lds.h).
 */
#include "pilot/lds.h"

#include <stdint.h>
#include <stdlib.h>

#include "pilot/rds_internal.h"

#define LISTENER_TYPE "type.googleapis.com/envoy.config.listener.v3.Listener"
#define HCM_NAME      "envoy.filters.network.http_connection_manager"
#define HCM_TYPE                                                                                   \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define TYPED_STRUCT "type.googleapis.com/udpa.type.v1.TypedStruct"
#define MX_URL       "type.googleapis.com/io.istio.http.peer_metadata.Config"
#define STATS_URL    "type.googleapis.com/stats.PluginConfig"
#define FAULT_TYPE   "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
#define CORS_TYPE    "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"
#define ROUTER_TYPE  "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"

/* istio.metadata_exchange as Istio writes it for a sidecar's outbound HCM. */
static json_t *mx_filter(void)
{
    return json_pack("{s:s,s:{s:s,s:s,s:{s:[{s:{}},{s:{}}],s:[{s:{}}]}}}", "name",
                     "istio.metadata_exchange", "typed_config", "@type", TYPED_STRUCT, "type_url",
                     MX_URL, "value", "upstream_discovery", "istio_headers", "workload_discovery",
                     "upstream_propagation", "istio_headers");
}

static json_t *typed_filter(const char *name, const char *type)
{
    return json_pack("{s:s,s:{s:s}}", "name", name, "typed_config", "@type", type);
}

/* Istio's sidecar-outbound HTTP filter chain for an HTTP (non-gRPC) port. */
static json_t *http_filters(void)
{
    json_t *stats = json_pack("{s:s,s:{s:s,s:s,s:{}}}", "name", "istio.stats", "typed_config",
                              "@type", TYPED_STRUCT, "type_url", STATS_URL, "value");
    return json_pack("[o,o,o,o,o]", mx_filter(),
                     typed_filter("envoy.filters.http.fault", FAULT_TYPE),
                     typed_filter("envoy.filters.http.cors", CORS_TYPE), stats,
                     typed_filter("envoy.filters.http.router", ROUTER_TYPE));
}

static json_t *hcm(int32_t port)
{
    json_t *rds =
        json_pack("{s:o,s:{s:{},s:s}}", "route_config_name", json_sprintf("%d", (int)port),
                  "config_source", "ads", "resource_api_version", "V3");
    return json_pack("{s:s,s:o,s:o,s:o,s:s,s:b,s:s,s:b,s:s}", "@type", HCM_TYPE, "stat_prefix",
                     json_sprintf("outbound_0.0.0.0_%d", (int)port), "rds", rds, "http_filters",
                     http_filters(), "server_name", "istio-envoy", "use_remote_address", 0,
                     "stream_idle_timeout", "0s", "normalize_path", 1,
                     "path_with_escaped_slashes_action", "KEEP_UNCHANGED");
}

static json_t *listener(int32_t port)
{
    return json_pack("{s:s,s:o,s:{s:{s:s,s:i}},s:[{s:[{s:s,s:o}]}],s:s}", "@type", LISTENER_TYPE,
                     "name", json_sprintf("0.0.0.0_%d", (int)port), "address", "socket_address",
                     "address", "0.0.0.0", "port_value", (int)port, "filter_chains", "filters",
                     "name", HCM_NAME, "typed_config", hcm(port), "traffic_direction", "OUTBOUND");
}

json_t *wf_lds_sidecar_outbound_listeners(const wf_store *store)
{
    if (!store)
        return NULL;
    json_t *out = json_array();
    int32_t *ports = calloc(RDS_MAX_PORTS, sizeof *ports);
    if (!out || !ports)
        goto fail;
    size_t np = rds_http_ports(store, ports);
    for (size_t i = 0; i < np; i++)
        if (json_array_append_new(out, listener(ports[i])) != 0)
            goto fail;
    free(ports);
    return out;
fail:
    free(ports);
    json_decref(out);
    return NULL;
}
