/*
 * source_kube.h - weft-pilot's Kubernetes config source: a wf_config_source (source.h) over the
 * Kubernetes API, as istiod's Kubernetes registry and CRD client (pilot/pkg/serviceregistry/kube,
 * pilot/pkg/config/kube/crdclient; ../shared/reference/kubernetes.md §2).
 *
 * start():
 *  - makes the client: the kubeconfig (paths, context) or, with in_cluster, the in-cluster
 *    configuration (kube/kubeconfig.h);
 *  - starts one reflector (kube/reflector.h) per kind with istiod's filters: Namespaces,
 *    Services, EndpointSlices, Pods (fieldSelector status.phase!=Failed), Nodes, Secrets
 *    (fieldSelector type!=helm.sh/release.v1,type!=kubernetes.io/service-account-token), the
 *    `istio` ConfigMap of the system namespace (fieldSelector metadata.name=istio), and the
 *    Istio kinds of kube/kinds.h;
 *  - waits until every reflector has listed once (istiod's cache sync wait) for at most
 *    sync_timeout_ms, else fails naming the kinds not synced and their last errors;
 *  - builds and delivers the first snapshot.
 * Then every cache change (the reflectors' `changed` on the loop) goes through the directory
 * source's debounce (debounce_after_ms quiet, debounce_max_ms at most) into a build: the caches
 * become documents (source_kube_conv.h) that wf_source_build validates, keeps last-good and
 * classifies exactly as it does for files. A change of reflector state only (listing,
 * backing-off while the API server is away) builds nothing: the last snapshot keeps serving.
 *
 * The source's debug() returns /debug/kubez: the server, context, each watch's phase, last
 * resourceVersion, counters and last error, and the Pods served without their IP.
 *
 * Threads: the loop's; the reflectors have their own (kube/reflector.h). No global state.
 */
#ifndef WF_PILOT_SOURCE_KUBE_H
#define WF_PILOT_SOURCE_KUBE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "pilot/source.h"

typedef struct wf_kube_source_opts {
    const char *kubeconfig;     /* ':'-separated paths; NULL = $KUBECONFIG, else ~/.kube/config */
    const char *context;        /* NULL = current-context */
    bool in_cluster;            /* the in-cluster configuration instead of a kubeconfig */
    const char *incluster_root; /* where the service-account files are; NULL = "/" */
    const char *system_ns;      /* where the `istio` ConfigMap is; NULL = "istio-system" */
    const char *domain_suffix;  /* NULL = "cluster.local" */
    uint64_t debounce_after_ms; /* 0 = 100 */
    uint64_t debounce_max_ms;   /* 0 = 10000 */
    int64_t sync_timeout_ms;    /* 0 = 30000 */
    long page_size;             /* list limit; 0 = 500 */
    wf_ip_range service_ips;    /* as wf_dir_source_opts */
} wf_kube_source_opts;

/* Makes a Kubernetes source on loop (strings copied). Returns 0 and *out, or -1 (out of
 * memory). */
int wf_kube_source_new(uv_loop_t *loop, const wf_kube_source_opts *opts, wf_config_source **out);

struct wf_kube_client;
/* The source's API client (borrowed: valid from a successful start() until stop()), for what
 * pilot writes back (kube_writer.h); NULL before start. src must be a Kubernetes source. */
struct wf_kube_client *wf_kube_source_client(wf_config_source *src);

#endif
