/*
 * agent_config.h - `weft-proxy proxy sidecar|router [flags]`: pilot-agent's command line and the
 * environment and files Istio's injector gives the istio-proxy container, turned into the
 * proxy's bootstrap (agent_bootstrap.h) and settings, as pilot-agent builds Envoy's bootstrap
 * (istio/istio pilot/cmd/pilot-agent/app/cmd.go, pkg/istio-agent, pkg/bootstrap/config.go;
 * reference kubernetes.md §3.4, envoy-istio-behaviour.md §6.5, §8.1, security.md §1.5-1.6).
 *
 * Flags (pilot-agent's names; `--flag value` or `--flag=value`), agent_flags.c:
 *   --domain D                  the node id's domain (default <POD_NAMESPACE>.svc.cluster.local)
 *   --serviceCluster NAME       node.cluster (deprecated in Istio; see below)
 *   --proxyLogLevel L           Envoy's --log-level (default warning)
 *   --proxyComponentLogLevel S  Envoy's --component-log-level (default misc:error)
 *   --log_output_level S        the agent's scopes "scope:level,..." (Istio's levels none,
 *                               fatal, error, warn, info, debug): default, cache, sds -> weft's
 *                               secret logger; default, dns -> dns; ads, xdsproxy -> config;
 *                               other scopes are warned about
 *   --concurrency N             worker threads (0 = CPUs)
 *   --print-bootstrap           weft's own: print the bootstrap (JSON) and exit 0
 * pilot-agent flags weft does not implement (--templateFile, --outlierLogPath, --stsPort,
 * --tokenManagerPlugin, --meshConfig, --log_target, --log_caller, --log_stacktrace_level,
 * --log_as_json, --log_rotate*, --vklog) are accepted and warned about by name.
 *
 * Environment (agent_config.c): POD_NAME, POD_NAMESPACE, INSTANCE_IP are required;
 * SERVICE_ACCOUNT; PROXY_CONFIG (ProxyConfig JSON, below); ISTIO_META_* (node metadata, the
 * prefix dropped: CLUSTER_ID, MESH_ID, NODE_NAME, INTERCEPTION_MODE, WORKLOAD_NAME, OWNER,
 * POD_PORTS, APP_CONTAINERS, DNS_CAPTURE, ...); ISTIOD_SAN (the name istiod's certificate must
 * carry; default discoveryAddress's host); XDS_ROOT_CA (the root for the xDS connection;
 * default by PILOT_CERT_PROVIDER: istiod ./var/run/secrets/istio/root-cert.pem, kubernetes
 * ./var/run/secrets/kubernetes.io/serviceaccount/ca.crt); ISTIO_CPU_LIMIT (concurrency when
 * neither the flag nor ProxyConfig sets it); EXIT_ON_ZERO_ACTIVE_CONNECTIONS (stats inclusion).
 * ProxyConfig.proxyMetadata entries override the environment (pilot-agent sets them as
 * environment variables: the caller applies wp_agent_config.proxy_metadata with setenv).
 * Files, relative to the working directory as pilot-agent reads them (it runs in /):
 * ./etc/istio/pod/labels and ./etc/istio/pod/annotations (downward API, `key="value"` lines),
 * the root above (must exist with TLS: "root CA file for XDS does not exist <path>").
 *
 * ProxyConfig fields implemented: discoveryAddress (default istiod.istio-system.svc:15012; a DNS
 * name is resolved once, at start, to its first address), controlPlaneAuthPolicy (MUTUAL_TLS =
 * TLS, NONE = plaintext), proxyAdminPort (15000), statusPort (15020), drainDuration (45s: the
 * drain time of SIGTERM, /drain and /quitquitquit, Envoy's --drain-time-s), concurrency,
 * serviceCluster and tracingServiceName APP_LABEL_AND_NAMESPACE (node.cluster: the flag or a
 * serviceCluster other than istio-proxy, else "<app label>.<ns>", else
 * "<WORKLOAD_NAME>.<ns>", else "istio-proxy.<ns>"), proxyStatsMatcher inclusion lists (with
 * the sidecar.istio.io/statsInclusion* annotations, proxy_stats_config.h), proxyMetadata.
 * Every other field is warned about by name.
 *
 * The result: node id "<sidecar|router>~<INSTANCE_IP>~<POD_NAME>.<POD_NAMESPACE>~<domain>";
 * node metadata NAME, NAMESPACE, SERVICE_ACCOUNT, INSTANCE_IPS, LABELS, ANNOTATIONS,
 * ISTIO_VERSION, CLUSTER_ID (default Kubernetes), PROXY_CONFIG, PILOT_SAN, ENVOY_STATUS_PORT
 * 15021, ENVOY_PROMETHEUS_PORT 15090, and the ISTIO_META_* ones; admin on localhost
 * (127.0.0.1, ::1 for an IPv6 INSTANCE_IP) at proxyAdminPort; the Prometheus listener on
 * 0.0.0.0:15090; the status server (pilot-agent's) on 0.0.0.0:<statusPort> and the readiness
 * listener (Istio's Envoy 0.0.0.0:15021 /healthz/ready) on 0.0.0.0:15021 (:: for IPv6).
 *
 * Errors: -1 with one line in err naming the variable, field or file (exit 1 in main).
 * Ownership: wp_agent_config_free releases what a build made; flags point into argv.
 */
#ifndef WEFT_PROXY_AGENT_CONFIG_H
#define WEFT_PROXY_AGENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "core/strbuf.h"

#define WP_AGENT_STATUS_PORT 15020 /* ProxyConfig statusPort default */
#define WP_AGENT_HEALTH_PORT 15021 /* Istio's ENVOY_STATUS_PORT (/healthz/ready) */
#define WP_AGENT_MAX_WARN    24

typedef enum { WP_AGENT_SIDECAR, WP_AGENT_ROUTER } wp_agent_type;

typedef struct wp_agent_flags {
    wp_agent_type type;
    const char *domain;                    /* NULL = <POD_NAMESPACE>.svc.cluster.local */
    const char *service_cluster;           /* NULL = from ProxyConfig and labels */
    const char *proxy_log_level;           /* default "warning" */
    const char *proxy_component_log_level; /* default "misc:error" */
    const char *log_output_level;          /* NULL = none given */
    int concurrency;                       /* -1 = not given */
    bool print_bootstrap;
    /* flags accepted but not implemented, as given ("--stsPort=15463") */
    const char *unimplemented[WP_AGENT_MAX_WARN];
    size_t nunimplemented;
} wp_agent_flags;

/* Parses argv (argv[0] is "proxy"). Returns 0; 1 when --help was printed on stdout; -1 with
 * the bad flag named in err. */
int wp_agent_parse_flags(int argc, char **argv, wp_agent_flags *f, wf_strbuf *err);
void wp_agent_usage(FILE *out);

/* Istio's --log_output_level "scope:level,..." as weft's --component-log-level spec for the
 * loggers that play the agent's scopes (appended to spec); scopes without one are appended to
 * unmapped (comma-separated). 0, or -1 with err ("invalid --log_output_level ..."). */
int wp_agent_log_output_level(const char *v, wf_strbuf *spec, wf_strbuf *unmapped, wf_strbuf *err);

typedef struct wp_agent_config {
    json_t *bootstrap;      /* the document (agent_bootstrap.h) */
    json_t *proxy_metadata; /* ProxyConfig.proxyMetadata, {} when none: to setenv */
    char *node_id;          /* as in the bootstrap */
    char *xds_san;          /* what istiod's certificate must carry (and the CA's) */
    unsigned concurrency;   /* 0 = number of CPUs */
    uint64_t drain_s;       /* drainDuration, whole seconds (rounded up) */
    char status_addr[64];   /* 0.0.0.0:<statusPort> */
    char health_addr[64];   /* 0.0.0.0:15021 */
    char admin_ip[16];      /* 127.0.0.1 or ::1 */
    int admin_port;
    wf_strbuf warnings; /* '\n'-separated: what is not implemented, by name */
} wp_agent_config;

/* Builds c from the flags and envp (NULL-terminated "NAME=value" strings, e.g. environ), and
 * the files above. 0, or -1 with err; c is then freed. */
int wp_agent_config_build(const wp_agent_flags *f, char *const *envp, wp_agent_config *c,
                          wf_strbuf *err);
void wp_agent_config_free(wp_agent_config *c);

/* The downward API file format (`key="value"` per line, value a Go-quoted string) into obj.
 * 0, or -1 with the line's number in err. Exposed for the tests. */
int wp_agent_parse_downward(const char *text, json_t *obj, wf_strbuf *err);

#endif
