/*
 * status_metrics.h - pilot-agent's merged Prometheus scrape on the status port (Istio
 * pilot/cmd/pilot-agent/status/server.go handleStats; reference istioctl-troubleshooting.md
 * §6.2): the agent's own metrics, then Envoy's, then the application's, concatenated.
 *
 * The application part is configured by the environment variable ISTIO_PROMETHEUS_ANNOTATIONS,
 * which Istio's injector sets from the pod's prometheus.io/scrape, /path and /port annotations
 * before rewriting them to point at 15020: {"scrape":"true","path":"/metrics","port":"9080"}.
 * As pilot-agent: "scrape":"false" turns it off, the path defaults to /metrics and the port to
 * 80, and a port equal to the status port is refused ("invalid prometheus scrape
 * configuration: application port is the same as agent port, which may lead to a recursive
 * loop. ..."), which stops the agent. (pilot-agent reads it for sidecars only; weft for any
 * proxy given the variable.)
 *
 * The agent's metrics are pilot-agent's scrape counters, in the Prometheus text format Go's
 * client writes (families sorted by name; a family with no series is left out):
 *   istio_agent_scrape_failures_total{type="envoy"|"application"|"agent"}  failed scrapes
 *   istio_agent_scrapes_total                                              scrapes
 */
#ifndef WEFT_PROXY_STATUS_METRICS_H
#define WEFT_PROXY_STATUS_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/strbuf.h"

typedef struct {
    int port;       /* 1..65535 */
    char path[512]; /* starting with "/" */
} wp_prom_scrape;

/* Parses ISTIO_PROMETHEUS_ANNOTATIONS. Returns 1 with *out set when the app is to be scraped,
 * 0 when "scrape" is "false", -1 with the reason in err (not JSON, a port that is not a
 * number 1..65535, the status port). */
int wp_prom_scrape_parse(const char *json_text, int status_port, wp_prom_scrape *out,
                         wf_strbuf *err);

typedef struct {
    uint64_t scrapes;
    uint64_t failures_envoy, failures_app, failures_agent;
} wp_agent_metrics;

/* Appends the agent's metric families (above) to out. */
void wp_agent_metrics_render(const wp_agent_metrics *m, wf_strbuf *out);

/* The Content-Type of the merged answer for the app's Content-Type (NULL or "" without an app
 * part): OpenMetrics 1.0.0 or 0.0.1 when the app answered OpenMetrics, else Prometheus text
 * 0.0.4 (pilot-agent's negotiateMetricsFormat). A static string. */
const char *wp_metrics_content_type(const char *app_content_type);

#endif
