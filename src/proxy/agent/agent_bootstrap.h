/*
 * agent_bootstrap.h - the Envoy v3 bootstrap pilot-agent gives its proxy, as one JSON document:
 * what the local mesh writes for each pod (src/cli/localmesh_state.c) and what
 * `weft-proxy proxy sidecar|router` builds in memory from Istio's environment (agent_config.h).
 *
 * Followed: Istio's tools/packaging/common/envoy_bootstrap.json and pkg/bootstrap/config.go
 * (reference envoy-istio-behaviour.md §6.4-6.5, §8.1, §8.4; security.md §1.5, §2.2). The
 * document, keys in this order (callers print it with JSON_PRESERVE_ORDER):
 *   node {id, cluster, metadata}
 *   stats_config                      Istio's tags and inclusion list (proxy_stats_config.h)
 *   admin {address: admin_ip:admin_port}
 *   dynamic_resources                 ADS over gRPC (SotW), set_node_on_first_message_only,
 *                                     cds_config / lds_config {ads, initial_fetch_timeout 0s}
 *   static_resources
 *     listeners [prometheus_stats]    prom_ip:15090, GET /stats/prometheus -> prometheus_stats
 *     clusters  [xds-grpc, prometheus_stats]
 * xds-grpc is STATIC (1 s connect timeout, alt_stat_name "xds-grpc;" so Istio's cluster_name
 * tag extractor `^cluster(\.(.+);)` tags its stats) and goes straight to istiod: weft-proxy is
 * Envoy and pilot-agent in one process, so where Istio's Envoy dials the agent's Unix socket
 * ./etc/istio/proxy/XDS and the agent dials discoveryAddress, weft's xDS client dials
 * discoveryAddress itself, with the agent's TLS settings (pkg/istio-agent/xds_proxy.go
 * getTLSOptions): an UpstreamTlsContext whose trusted_ca is the root file (re-read before
 * every connection, xds_client_tls.c), SNI and DNS SAN the expected istiod name, ALPN h2. No
 * root file (ProxyConfig controlPlaneAuthPolicy NONE): plaintext.
 * prometheus_stats (STATIC, 0.250 s) points at the admin address.
 *
 * Ownership: wp_agent_bootstrap_json takes the metadata and stats_config references (also
 * when it fails) and borrows the strings; it returns a new reference, NULL when out of memory
 * (or when metadata/stats_config is NULL: a builder that failed makes the whole document NULL).
 */
#ifndef WEFT_PROXY_AGENT_BOOTSTRAP_H
#define WEFT_PROXY_AGENT_BOOTSTRAP_H

#include <jansson.h>

#define WP_AGENT_PROMETHEUS_PORT 15090 /* Istio's ENVOY_PROMETHEUS_PORT */

typedef struct wp_agent_bootstrap {
    const char *node_id;  /* node.id */
    const char *cluster;  /* node.cluster */
    json_t *metadata;     /* node.metadata, taken */
    json_t *stats_config; /* taken */
    const char *admin_ip; /* admin and the prometheus_stats cluster's endpoint */
    int admin_port;
    const char *prom_ip; /* the prometheus_stats listener's address (port 15090) */
    const char *xds_ip;  /* xds-grpc's endpoint: an IP address */
    int xds_port;
    const char *xds_root; /* trusted_ca file; NULL = plaintext */
    const char *xds_san;  /* SNI and the DNS SAN istiod's certificate must carry (with TLS) */
} wp_agent_bootstrap;

json_t *wp_agent_bootstrap_json(const wp_agent_bootstrap *b);

#endif
