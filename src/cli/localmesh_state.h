/*
 * localmesh_state.h - the local mesh's state folder (docs/local-mesh.md "The state folder"):
 *
 *   STATE/pods/<ns>.<pod>.json            Pod objects (labels, status.podIP), read by pilot
 *   STATE/pods/istio-system.istio-ingressgateway.service.json   (unless DIR has the Service)
 *   STATE/bootstrap/<pod>.<ns>.bootstrap  each weft-proxy's Envoy bootstrap (JSON)
 *   STATE/tokens/<pod>.<ns>/istio-token  each proxy's service-account token (localmesh_tokens.h)
 *   STATE/meshconfig                      MeshConfig taken from a ConfigMap istio (data.mesh)
 *   STATE/logs/<process>.log              stdout and stderr of every process; supervisor.log
 *   STATE/mesh.json                       what runs (kind LocalMesh; shape below)
 *   STATE/supervisor.pid
 *
 * Files that pilot (and `weftctl analyze DIR`) would read as manifests are valid resources
 * (Pods, a Service, mesh.json as kind LocalMesh); the others carry no .yaml/.json extension.
 *
 * JSON builders return new references (json_decref) or NULL when out of memory.
 */
#ifndef WF_CLI_LOCALMESH_STATE_H
#define WF_CLI_LOCALMESH_STATE_H

#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "cli/localmesh_plan.h"
#include "core/strbuf.h"

#define WF_LM_MESH_JSON      "mesh.json"
#define WF_LM_SUPERVISOR_PID "supervisor.pid"
#define WF_LM_SUPERVISOR_LOG "logs/supervisor.log"

/* The Envoy bootstrap of a pod's proxy: node id "<pod>.<ns>", cluster, Istio's metadata
 * (NAME, NAMESPACE, LABELS, INSTANCE_IPS, PROXY_TYPE, ISTIO_VERSION, CLUSTER_ID, WEFT_ADMIN,
 * WEFT_LOCALHOST for sidecars), Istio's stats_config (tag extraction and the stats inclusion
 * list with the pod's proxyStatsMatcher: proxy_stats_config.h), admin on podIP:15000, ADS to
 * pilot through the static cluster xds-grpc (alt_stat_name "xds-grpc;", as Istio's). */
json_t *wf_lm_bootstrap_json(const wf_lm_plan *p, const wf_lm_pod *pod);

/* The Pod object pilot reads: metadata (name, namespace, labels), spec.containers (the
 * application containers with their ports, plus istio-proxy when a proxy runs), status
 * (phase Running, podIP, podIPs, Ready). */
json_t *wf_lm_pod_json(const wf_lm_plan *p, const wf_lm_pod *pod);

/* The ingress gateway's Service as Istio's default profile installs it (NodePort: http2
 * 80 -> 8080 on node port 30000, https 443 -> 8443). */
json_t *wf_lm_gateway_service_json(void);

/* The last mesh `up` started on this machine, so that `status` and `down` without a DIR find
 * it from any folder (the mesh's fixed ports allow one at a time): its absolute state folder
 * is kept in $XDG_RUNTIME_DIR/weft-last-mesh, else /tmp/weft-last-mesh-<uid> (mode 0600,
 * never through a symlink; a record another user could have written is ignored).
 * wf_lm_remember_state writes it (best effort: returns 0 or -1, nothing else is harmed);
 * wf_lm_recall_state returns a malloc'd copy of it (the caller frees), NULL when none. */
int wf_lm_remember_state(const char *state);
char *wf_lm_recall_state(void);

/* Create the state folder and write pods, bootstraps, the proxies' tokens (with the CA's
 * token key in STATE/ca, made when missing), the gateway Service and the MeshConfig (old pods,
 * bootstraps and tokens are removed first). Returns 0 or -1 with err. */
int wf_lm_state_prepare(const wf_lm_plan *p, wf_strbuf *err);

/* When the MeshConfig came from a ConfigMap (p->mesh_cm_file): read that file again and
 * rewrite STATE/meshconfig when data.mesh differs from *last (a malloc'd copy the caller
 * keeps; NULL at first means p->mesh_text). Sets *changed. A file that does not parse or no
 * longer holds the ConfigMap changes nothing (pilot keeps its MeshConfig). Returns 0, or -1
 * with err. */
int wf_lm_mesh_refresh(const wf_lm_plan *p, char **last, bool *changed, wf_strbuf *err);

/* What a process is doing, as the supervisor knows it. */
typedef struct wf_lm_proc_status {
    pid_t pid;         /* 0 when not running */
    const char *state; /* "starting", "running", "restarting", "stopping", "stopped" */
    unsigned restarts;
    const char *last_exit; /* why it last stopped: "exited with status 1", "killed by signal 9
                              (Killed)", "command not found: NAME"; NULL when never */
    long long started_ms;  /* Unix ms of the running process's start, 0 when not running */
    unsigned long long start_ticks; /* its /proc start time (localmesh_sys.h), 0 unknown */
} wf_lm_proc_status;

/* mesh.json:
 * {"apiVersion": "weft.dev/v1", "kind": "LocalMesh", "metadata": {"name": "local-mesh"},
 *  "dir", "state", "defaultNamespace", "meshConfig" (path or null),
 *  "supervisor": {"pid"},
 *  "pilot": {"xds": "127.0.0.1:15010" (plaintext), "secureXds": "127.0.0.1:15012" (TLS: the
 *            proxies' xDS and CSRs), "monitoring": "127.0.0.1:15014"},
 *  "gateway": {"url": "http://127.0.0.1:30000", "pod", "namespace", "target": "IP:8080"} | null,
 *  "pods": [{"name", "namespace", "labels", "ip", "localhost", "admin": "IP:15000",
 *            "statusPort": 15020, "healthPort": 15021 (gateways), "sidecar", "gateway",
 *            "owner": "Deployment/catalog" | "", "bootstrap" (path or null),
 *            "error" (only for a pod that is not started: why)}],
 *  "processes": [{"name", "kind": "pilot|proxy|app|gateway", "pod" (or null), "namespace",
 *                 "podIP", "pid", "state", "restarts", "log", "argv": [...],
 *                 "startedAt" (Unix ms, 0 when not running), "startTicks" (its /proc start
 *                 time: pid + startTicks name the process), "lastExit" (only once it
 *                 stopped or could not start: why)}]}
 * status may be NULL (nothing started yet). */
json_t *wf_lm_mesh_json(const wf_lm_plan *p, const wf_lm_proc_status *status, pid_t supervisor_pid);

/* Write mesh.json (atomically). Returns 0 or -1 with err. */
int wf_lm_write_mesh_json(const wf_lm_plan *p, const wf_lm_proc_status *status,
                          pid_t supervisor_pid, wf_strbuf *err);

#endif
