/*
 * options.h - weft-proxy's command-line options (Envoy's server options, docs operations/cli,
 * and pilot-agent's status and readiness settings) as main_proxy.c parses them and the server
 * and the admin API (/server_info) read them. Plain data: the strings and arrays point into
 * argv or into what main_proxy.c owns for the process's life.
 */
#ifndef WEFT_PROXY_OPTIONS_H
#define WEFT_PROXY_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proxy/agent/app_probe.h"
#include "proxy/server/admin/readiness.h"
#include "proxy/agent/status_metrics.h"

#define WP_MAX_STATUS_ADDRS 4

typedef struct {
    const char *config_path; /* -c */
    unsigned concurrency;    /* workers; 0 = number of CPUs */
    const char *log_level;   /* -l, NULL = info */
    const char *component_log_level;
    uint64_t drain_time_s;       /* default 600, as Envoy */
    const char *service_node;    /* overrides node.id */
    const char *service_cluster; /* overrides node.cluster */
    bool validate_only;          /* --mode validate */
    uint64_t flush_interval_ms;  /* --file-flush-interval-msec, default 10000 */
    /* --status-address (Istio's 15020: /healthz/ready, /stats/prometheus) and
     * --health-address (the gateway's 15021: /healthz/ready only), readiness.h */
    const char *status_addrs[WP_MAX_STATUS_ADDRS], *health_addrs[WP_MAX_STATUS_ADDRS];
    size_t nstatus, nhealth;
    wp_readiness_policy readiness;
    /* pilot-agent's environment (status.h): ISTIO_KUBE_APP_PROBERS parsed (NULL = none),
     * INSTANCE_IP (NULL = 127.0.0.1), ISTIO_PROMETHEUS_ANNOTATIONS (NULL = no app metrics) */
    const wp_app_probers *app_probers;
    const char *app_ip;
    const wp_prom_scrape *app_metrics;
    const char *token_path; /* --token-path: the CA token file (NULL = env / Istio's path) */
    /* `weft-proxy proxy` (agent_config.h): the bootstrap built in memory (borrowed; NULL = read
     * config_path, which then only names it in messages), and the name the CA's certificate
     * must carry when CA_ADDR is unset (discoveryAddress's host; NULL = its IP) */
    json_t *bootstrap;
    const char *ca_name;
    int argc; /* for /server_info command_line_options */
    char **argv;
} wp_server_opts;

#endif
