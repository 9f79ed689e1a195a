/*
 * kube_target.h - the names istioctl accepts for a pod, turned into Kubernetes API queries
 * (pure functions: no network; kube_mesh.c sends the queries).
 *
 * Behaviour followed (istioctl/pkg/util/handlers/handlers.go, kubectl's resource builder and
 * polymorphichelpers, k8s.io/kubectl/pkg/util/podutils; ../shared/reference/kubernetes.md §1.5,
 * §4):
 *  - `[<type>/]<name>[.<namespace>]`: inferNsInfo takes the namespace after the last '.' (after
 *    the last '/' when a type is given), else the default namespace (-n, else the kubeconfig
 *    context's). A type of pod (`pod`, `pods`, `po`) names the pod itself; a workload type
 *    (deployment/deploy, replicaset/rs, statefulset/sts, daemonset/ds, job,
 *    replicationcontroller/rc, service/svc, each also plural and with its API group suffix
 *    as `deployments.apps`) is read from the API, and its selector lists the pods; the first
 *    pod in kubectl's ByLogging order is used ("no pods match \"deploy/x\"" when none).
 *  - a workload's selector is `spec.selector`: for Services and ReplicationControllers a map,
 *    for the others a LabelSelector (matchLabels + matchExpressions In, NotIn, Exists,
 *    DoesNotExist), written in the label-selector syntax of §1.5 (requirements sorted by key,
 *    as labels.Selector.String() sorts them).
 *  - ByLogging: assigned to a node first, then phase Running < Unknown < Pending (any other
 *    phase counts as Running, as the Go map lookup's zero value does), ready first, ready for
 *    longer first, more container restarts first, older first.
 *  - istiod's monitoring port: the pod's `prometheus.io/port` annotation when it is a number,
 *    else 15014 (pkg/kube FindIstiodMonitoringPort).
 * Memory: strings in a wf_kube_target are malloc'd; free with wf_kube_target_free.
 */
#ifndef WF_CLI_KUBE_TARGET_H
#define WF_CLI_KUBE_TARGET_H

#include <stdbool.h>

#include <jansson.h>

#include "core/strbuf.h"

typedef struct wf_kube_workload {
    const char *resource; /* "deployments" */
    const char *api;      /* "/apis/apps/v1" or "/api/v1" */
    bool map_selector;    /* spec.selector is a plain map (Service, ReplicationController) */
} wf_kube_workload;

typedef struct wf_kube_target {
    char *type;                       /* as written ("deploy"), or NULL for a pod */
    const wf_kube_workload *workload; /* NULL for a pod */
    char *name;                       /* the pod or workload name */
    char *ns;                         /* its namespace */
} wf_kube_target;

/* Parses arg against default_ns. Returns 0, or -1 with err: an empty name or namespace, a type
 * that is no pod and no workload ("the server doesn't have a resource type \"x\"", kubectl's
 * words). */
int wf_kube_target_parse(const char *arg, const char *default_ns, wf_kube_target *t,
                         wf_strbuf *err);
void wf_kube_target_free(wf_kube_target *t);

/* The API path of the object t names: "/api/v1/namespaces/NS/pods/NAME",
 * "/apis/apps/v1/namespaces/NS/deployments/NAME". Appended to out. */
void wf_kube_target_path(const wf_kube_target *t, wf_strbuf *out);

/* The label selector of workload object obj (map_selector as its kind says) into out. Returns
 * 0, or -1 with err when the object has no selector (polymorphichelpers: "the selector of X is
 * empty") or an operator it cannot write. */
int wf_kube_workload_selector(const json_t *obj, bool map_selector, wf_strbuf *out, wf_strbuf *err);

/* "/api/v1/namespaces/NS/pods" (ns NULL or "" = all namespaces) with the label and field
 * selectors (NULL = none) as escaped query parameters. Appended to out. */
void wf_kube_pods_query(const char *ns, const char *label_sel, const char *field_sel,
                        wf_strbuf *out);

/* The index of the first pod of a PodList's items in ByLogging order, or -1 when empty. */
long wf_kube_first_pod(const json_t *items);

/* istiod's monitoring port of pod (FindIstiodMonitoringPort). */
int wf_kube_monitoring_port(const json_t *pod);

/* "/api/v1/namespaces/NS/pods/POD:PORT/proxy" + path (path starts with '/', may carry a
 * query) appended to out: the pod proxy subresource (§1.1). */
void wf_kube_pod_proxy_path(const char *ns, const char *pod, int port, const char *path,
                            wf_strbuf *out);

#endif
