/*
 * agent_bootstrap.c - the bootstrap document pilot-agent gives its proxy (agent_bootstrap.h).
 */
#include "proxy/agent/agent_bootstrap.h"

/* {"address": {"socket_address": {...}}} (an admin block, or an endpoint). */
static json_t *socket_address(const char *ip, int port)
{
    return json_pack("{s:{s:{s:s,s:i}}}", "address", "socket_address", "address", ip, "port_value",
                     port);
}

/* The "address" member of o, with its own reference; o is released. NULL passes through. */
static json_t *address_of(json_t *o)
{
    json_t *a = json_incref(json_object_get(o, "address"));
    json_decref(o);
    return a;
}

/* envoy_bootstrap.json's xds-grpc transport_socket, with pilot-agent's dial options. */
static json_t *xds_tls(const wp_agent_bootstrap *b)
{
    return json_pack("{s:s,s:{s:s,s:s,s:{s:[s],s:{s:{s:s},s:[{s:s,s:{s:s}}]}}}}", "name",
                     "envoy.transport_sockets.tls", "typed_config", "@type",
                     "type.googleapis.com/"
                     "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                     "sni", b->xds_san, "common_tls_context", "alpn_protocols", "h2",
                     "validation_context", "trusted_ca", "filename", b->xds_root,
                     "match_typed_subject_alt_names", "san_type", "DNS", "matcher", "exact",
                     b->xds_san);
}

static json_t *xds_cluster(const wp_agent_bootstrap *b)
{
    json_t *c =
        json_pack("{s:s,s:s,s:s,s:s,s:{s:s,s:[{s:[{s:{s:o}}]}]}}", "name", "xds-grpc",
                  "alt_stat_name", "xds-grpc;", "type", "STATIC", "connect_timeout", "1s",
                  "load_assignment", "cluster_name", "xds-grpc", "endpoints", "lb_endpoints",
                  "endpoint", "address", address_of(socket_address(b->xds_ip, b->xds_port)));
    if (c && b->xds_root && json_object_set_new(c, "transport_socket", xds_tls(b)) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* Istio's Prometheus listener (envoy_bootstrap.json "prometheus_stats"): prom_ip:15090 serves
 * /stats/prometheus from the admin API through the STATIC cluster prometheus_stats. */
static json_t *prometheus_listener(const wp_agent_bootstrap *b)
{
    json_t *hcm = json_pack(
        "{s:s,s:s,s:s,s:{s:[{s:s,s:[s],s:[{s:{s:s},s:{s:s}}]}]},s:[{s:s,s:{s:s}}]}", "@type",
        "type.googleapis.com/"
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "codec_type", "AUTO", "stat_prefix", "stats", "route_config", "virtual_hosts", "name",
        "backend", "domains", "*", "routes", "match", "prefix", "/stats/prometheus", "route",
        "cluster", "prometheus_stats", "http_filters", "name", "envoy.filters.http.router",
        "typed_config", "@type",
        "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router");
    return json_pack("{s:s,s:o,s:[{s:[{s:s,s:o}]}]}", "name", "prometheus_stats", "address",
                     address_of(socket_address(b->prom_ip, WP_AGENT_PROMETHEUS_PORT)),
                     "filter_chains", "filters", "name",
                     "envoy.filters.network.http_connection_manager", "typed_config", hcm);
}

static json_t *prometheus_cluster(const wp_agent_bootstrap *b)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:{s:s,s:[{s:[{s:{s:o}}]}]}}", "name", "prometheus_stats",
                     "type", "STATIC", "connect_timeout", "0.250s", "lb_policy", "ROUND_ROBIN",
                     "load_assignment", "cluster_name", "prometheus_stats", "endpoints",
                     "lb_endpoints", "endpoint", "address",
                     address_of(socket_address(b->admin_ip, b->admin_port)));
}

json_t *wp_agent_bootstrap_json(const wp_agent_bootstrap *b)
{
    json_t *ads[2];
    for (int i = 0; i < 2; i++)
        ads[i] = json_pack("{s:{},s:s,s:s}", "ads", "initial_fetch_timeout", "0s",
                           "resource_api_version", "V3");
    /* "o" takes every reference, also when the pack fails (jansson) */
    return json_pack(
        "{s:{s:s,s:s,s:o},s:o,s:o,s:{s:{s:s,s:s,s:b,s:[{s:{s:s}}]},s:o,s:o},"
        "s:{s:[o],s:[o,o]}}",
        "node", "id", b->node_id, "cluster", b->cluster, "metadata", b->metadata, "stats_config",
        b->stats_config, "admin", socket_address(b->admin_ip, b->admin_port), "dynamic_resources",
        "ads_config", "api_type", "GRPC", "transport_api_version", "V3",
        "set_node_on_first_message_only", 1, "grpc_services", "envoy_grpc", "cluster_name",
        "xds-grpc", "cds_config", ads[0], "lds_config", ads[1], "static_resources", "listeners",
        prometheus_listener(b), "clusters", xds_cluster(b), prometheus_cluster(b));
}
