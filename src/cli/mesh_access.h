/*
 * mesh_access.h - how weftctl reaches the control plane and the proxies, written once for the
 * commands (proxy-status, proxy-config, describe) with two implementations:
 *
 *  - local (mesh_access.c): plain HTTP to weft-pilot's monitoring address (--pilot, default
 *    WF_DEFAULT_PILOT, the local mesh's) and to each proxy's admin address, which pilot's
 *    /debug/syncz names (proxy_find.h). This is weftctl's behaviour before clusters.
 *  - cluster (mesh_kube.c): through the Kubernetes API server, as istioctl reaches a cluster
 *    (../shared/reference/kubernetes.md §4; istioctl/pkg/cli/option.go, pkg/kube/client.go):
 *    istiod = the pods in the Istio namespace (-i, default istio-system) labelled app=istiod
 *    with status.phase=Running ("no running Istio pods in \"istio-system\"" when none), asked
 *    on its monitoring port (annotation prometheus.io/port, else 15014); proxies = pods found
 *    by the names of kube_target.h, asked on the admin port (--proxy-admin-port, default
 *    15000). Both through the pod `proxy` subresource
 *    (/api/v1/namespaces/NS/pods/POD:PORT/proxy/PATH) instead of istioctl's port-forward;
 *    like istioctl's port-forwarder a pod whose phase is not Running is refused
 *    ("pod is not running. Status=Pending").
 *
 * Which one (wf_mesh_choose; docs/weftctl.md "Local mesh or cluster"): --pilot given → local;
 * else --kubeconfig or --context given, or $KUBECONFIG set and not empty → cluster; else local.
 * (~/.kube/config alone does not select the cluster: the local mesh keeps today's behaviour.)
 *
 * Errors are appended to err without "Error: " and name what failed. Memory: a wf_mesh owns its
 * kube client; free with wf_mesh_free.
 */
#ifndef WF_CLI_MESH_ACCESS_H
#define WF_CLI_MESH_ACCESS_H

#include <stdbool.h>

#include <jansson.h>

#include "cli/http_client.h"
#include "cli/proxy_find.h"
#include "core/strbuf.h"

typedef enum { WF_MESH_LOCAL, WF_MESH_CLUSTER } wf_mesh_mode;

typedef struct wf_mesh_opts {
    const char *pilot;      /* --pilot, NULL when not given */
    const char *kubeconfig; /* --kubeconfig / -c, NULL when not given */
    const char *context;    /* --context, NULL when not given */
    const char *istio_ns;   /* -i / --istioNamespace, NULL = "istio-system" */
    const char *admin_port; /* --proxy-admin-port as given, NULL = 15000 */
} wf_mesh_opts;

/* The rule above; env_kubeconfig is $KUBECONFIG (NULL when unset). */
wf_mesh_mode wf_mesh_choose(const char *pilot, const char *kubeconfig, const char *context,
                            const char *env_kubeconfig);

typedef struct wf_mesh wf_mesh;

/* One control plane's answer to a GET. */
typedef struct wf_mesh_answer {
    char *istiod; /* its name: the istiod pod, or "weft-pilot" locally (malloc'd) */
    json_t *doc;  /* the JSON answer (owned) */
} wf_mesh_answer;

/* The control plane one request went to (wf_mesh_pilot_do): locally weft-pilot at addr; in a
 * cluster the istiod pod ns/pod and its monitoring port. Strings owned (wf_mesh_pilot_free). */
typedef struct wf_mesh_pilot {
    char *addr; /* local: "ip:port"; cluster: NULL */
    char *pod;  /* cluster: the istiod pod's name; local: NULL */
    char *ns;   /* cluster: its namespace; local: NULL */
    int port;   /* cluster: its monitoring port (prometheus.io/port, else 15014); local: 0 */
} wf_mesh_pilot;

typedef struct wf_mesh_impl {
    /* GET path (JSON) from every control plane: *out an array of n answers (n >= 1). */
    int (*pilots_get)(wf_mesh *m, const char *path, wf_mesh_answer **out, size_t *n,
                      wf_strbuf *err);
    /* Resolves a proxy name (POD, POD.NS, TYPE/NAME[.NS]) with default namespace ns. */
    int (*find_proxy)(wf_mesh *m, const char *name, const char *ns, wf_proxy_ref *out,
                      wf_strbuf *err);
    /* The proxies of every pod the label selector matches in namespace ns (NULL = the default
     * namespace): *out an array of n refs (n >= 1). */
    int (*select_proxies)(wf_mesh *m, const char *selector, const char *ns, wf_proxy_ref **out,
                          size_t *n, wf_strbuf *err);
    /* One request to the proxy's admin API; *out filled for any answer the proxy gave. */
    int (*proxy_do)(wf_mesh *m, const wf_proxy_ref *ref, const char *method, const char *path,
                    long timeout_ms, wf_http_resp *out, wf_strbuf *err);
    /* One request to the first control plane's monitoring port, any answer in *out; *who is
     * filled once the control plane is known (also when the request then fails). */
    int (*pilot_do)(wf_mesh *m, const char *method, const char *path, long timeout_ms,
                    wf_http_resp *out, wf_mesh_pilot *who, wf_strbuf *err);
    void (*free)(wf_mesh *m);
} wf_mesh_impl;

struct wf_mesh {
    const wf_mesh_impl *impl;
    wf_mesh_mode mode;
    char *default_ns; /* the kubeconfig context's namespace, or "default" */
    void *priv;       /* the implementation's state */
};

/* Opens the mode wf_mesh_choose picks for o and $KUBECONFIG (cluster: loads the kubeconfig and
 * makes the client; nothing is contacted yet). Returns 0 with *out, or -1 with err (kubeconfig
 * errors name the file and field, an invalid --proxy-admin-port). */
int wf_mesh_open(const wf_mesh_opts *o, wf_mesh **out, wf_strbuf *err);
/* The cluster implementation for o (mesh_kube.c); kubeconfig NULL = $KUBECONFIG, else
 * ~/.kube/config. */
int wf_mesh_open_kube(const wf_mesh_opts *o, wf_mesh **out, wf_strbuf *err);
void wf_mesh_free(wf_mesh *m);
/* The cluster's API client (owned by m), or NULL for the local mesh. */
struct wf_kube_client *wf_mesh_kube_client(wf_mesh *m);

int wf_mesh_pilots_get(wf_mesh *m, const char *path, wf_mesh_answer **out, size_t *n,
                       wf_strbuf *err);
void wf_mesh_answers_free(wf_mesh_answer *a, size_t n);
/* The first control plane's answer (*out owned by the caller). */
int wf_mesh_pilot_get_json(wf_mesh *m, const char *path, json_t **out, wf_strbuf *err);
int wf_mesh_find_proxy(wf_mesh *m, const char *name, const char *ns, wf_proxy_ref *out,
                       wf_strbuf *err);
/* Cluster only (pilot does not know pods' labels; locally an error saying so). Errors as
 * istioctl's getPodNameBySelector: "no pods found", "not able to locate pod with selector S:
 * ...". The caller frees each ref and the array. */
int wf_mesh_select_proxies(wf_mesh *m, const char *selector, const char *ns, wf_proxy_ref **out,
                           size_t *n, wf_strbuf *err);
int wf_mesh_proxy_do(wf_mesh *m, const wf_proxy_ref *ref, const char *method, const char *path,
                     long timeout_ms, wf_http_resp *out, wf_strbuf *err);
/* One request (any content) to the control plane's monitoring port: locally weft-pilot's
 * address, in a cluster the first running istiod pod through the pod proxy subresource. Returns
 * 0 with *out filled for any answer (the caller frees it with wf_http_resp_free), or -1 with err
 * (not reachable, no istiod pod). *who (zeroed first) names where it went whenever that is known;
 * free with wf_mesh_pilot_free. */
int wf_mesh_pilot_do(wf_mesh *m, const char *method, const char *path, long timeout_ms,
                     wf_http_resp *out, wf_mesh_pilot *who, wf_strbuf *err);
void wf_mesh_pilot_free(wf_mesh_pilot *who);

/* The flags every command that reaches the mesh adds (help texts in one place). */
#define WF_MESH_FLAG_KUBECONFIG                                                                    \
    {                                                                                              \
        "kubeconfig", 'c', WF_FLAG_STRING,                                                         \
            "Kubernetes configuration file: reach the mesh through the cluster's API server",      \
            "string"                                                                               \
    }
#define WF_MESH_FLAG_CONTEXT                                                                       \
    {                                                                                              \
        "context", 0, WF_FLAG_STRING, "Kubernetes configuration context (selects the cluster)",    \
            "string"                                                                               \
    }
#define WF_MESH_FLAG_ISTIONS                                                                       \
    {                                                                                              \
        "istioNamespace", 'i', WF_FLAG_STRING,                                                     \
            "Istio system namespace: where istiod pods are found (default istio-system)", "string" \
    }
#define WF_MESH_MODE_HELP                                                                          \
    "Local mesh or cluster: --pilot ADDR talks to that weft-pilot directly; otherwise\n"           \
    "--kubeconfig, --context or a non-empty $KUBECONFIG reach the cluster through its API\n"       \
    "server (istiod: pods app=istiod in -i, monitoring port from prometheus.io/port or 15014;\n"   \
    "proxies: the pod's admin port, --proxy-admin-port or 15000, via the pod proxy\n"              \
    "subresource); otherwise the local mesh's weft-pilot (" WF_DEFAULT_PILOT ").\n"

#endif
