/*
 * inject_probes.h - what Istio's sidecar injector derives from a pod's app containers for
 * pilot-agent (pkg/kube/inject/app_probe.go, webhook.go applyPrometheusMerge;
 * ../shared/reference/kubernetes.md §3.4-3.5), shared by the injector (kube/inject.h) and the
 * local mesh (cli/localmesh_inject.c, which gives a sidecar the same environment).
 *
 * ISTIO_KUBE_APP_PROBERS (app_probe.go DumpAppProbers): a JSON map, keys sorted as Go's
 * json.Marshal sorts a map, from /app-health/<container>/livez|readyz|startupz (and, with
 * lifecycle, /app-lifecycle/<container>/prestopz|poststartz for httpGet/tcpSocket hooks) to
 *   {"httpGet": {"path", "port", "host", "scheme", "httpHeaders"}, "timeoutSeconds"}
 *   {"tcpSocket": {"port", "host"}, "timeoutSeconds"}
 *   {"grpc": {"port", "service"}, "timeoutSeconds"}
 * built from every app container's readinessProbe, livenessProbe and startupProbe (exec probes
 * stay with the app). A named port is resolved to the container's port of that name (a name
 * the container lacks drops that probe, as Istio's); a probe already on the status port is
 * left out (already rewritten). With api_defaults the fields the API server defaults are
 * filled (path "/", scheme "HTTP", timeoutSeconds 1, grpc service "") and host is `host` when
 * the probe has none; without, fields absent from the pod are absent (Go's omitempty), as the
 * injector writes them.
 *
 * ISTIO_PROMETHEUS_ANNOTATIONS (applyPrometheusMerge): when merging is on (annotation
 * prometheus.istio.io/merge-metrics, else MeshConfig enablePrometheusMerge), prometheus.io/scrape
 * is not "false" and prometheus.io/port is not already the status port: the webhook's form,
 * {"scrape", "path", "port"} with the annotations' values ("" when absent) when any of the three
 * is set; the local mesh's form (webhook false), when scrape is "true", with path defaulting to
 * "/metrics" as pilot-agent then reads it.
 *
 * Inputs are borrowed; returned strings are malloc'd (the caller frees). No global state.
 */
#ifndef WF_KUBE_INJECT_PROBES_H
#define WF_KUBE_INJECT_PROBES_H

#include <stdbool.h>

#include <jansson.h>

#define WF_INJECT_STATUS_PORT 15020 /* pilot-agent's status port (defaultConfig.statusPort) */

typedef struct wf_probe_opts {
    const char *host;  /* api_defaults: host for probes without one (NULL: "") */
    bool api_defaults; /* fill what the API server defaults (see above) */
    bool lifecycle;    /* also the containers' httpGet/tcpSocket lifecycle hooks */
    int status_port;   /* 0: WF_INJECT_STATUS_PORT */
} wf_probe_opts;

/* ISTIO_KUBE_APP_PROBERS for containers (a JSON array of Kubernetes containers): 0 and *out
 * (NULL when no probe qualifies: Istio sets no "{}"), -1 when out of memory. */
int wf_inject_app_probers(const json_t *containers, const wf_probe_opts *o, char **out);

/* Rewrites, in place, the probes and (with lifecycle) hooks that wf_inject_app_probers
 * reports to httpGet on the status port at their /app-health|/app-lifecycle path (HTTPS
 * becomes HTTP; tcpSocket and grpc become httpGet). Returns the number rewritten, -1 when out
 * of memory. */
int wf_inject_rewrite_probes(json_t *containers, const wf_probe_opts *o);

/* ISTIO_PROMETHEUS_ANNOTATIONS from annotations (a JSON object of strings; NULL = none) and
 * MeshConfig enablePrometheusMerge: 0 and *out (NULL when not set), -1 out of memory. */
int wf_inject_prometheus_env(const json_t *annotations, bool mesh_merge, int status_port,
                             bool webhook, char **out);
/* Whether the injector merges the pod's metrics (sets the prometheus.io annotations to the
 * agent's). */
bool wf_inject_prometheus_merge(const json_t *annotations, bool mesh_merge, int status_port);

/* Go's strconv.ParseBool: 1 true, 0 false, -1 not a bool (or NULL). */
int wf_inject_parse_bool(const char *s);

#endif
