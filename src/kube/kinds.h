/*
 * kinds.h - the Kubernetes kinds weft lists and watches, with their API paths: what istiod
 * watches (../shared/reference/kubernetes.md §2.1: Namespaces, Services, EndpointSlices, Pods,
 * Nodes, ConfigMaps, Secrets) and the Istio kinds weft models at their stored versions (§2.7:
 * networking.istio.io v1 (EnvoyFilter v1alpha3, ProxyConfig v1beta1), security.istio.io v1,
 * telemetry.istio.io v1). Paths as §1.1: core group /api/v1, others /apis/<group>/<version>,
 * namespaced collections under namespaces/<ns>/, all namespaces without it.
 */
#ifndef WF_KUBE_KINDS_H
#define WF_KUBE_KINDS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct wf_kube_kind {
    const char *kind;     /* "Pod" */
    const char *group;    /* "" for the core group */
    const char *version;  /* "v1" */
    const char *resource; /* "pods" */
    bool namespaced;
} wf_kube_kind;

/* The table the config source watches, n entries. The admission kinds weft-pilot writes
 * (MutatingWebhookConfiguration, ValidatingWebhookConfiguration, admissionregistration.k8s.io
 * v1: pilot/kube_writer.h) are not in it: wf_kube_kind_find knows them too. */
const wf_kube_kind *wf_kube_kinds(size_t *n);

/* By Kind ("Pod"), plural resource ("pods") or "resource.group" ("virtualservices.networking.
 * istio.io"), case-insensitively; NULL when unknown. */
const wf_kube_kind *wf_kube_kind_find(const char *name);

/* The collection path ("/api/v1/namespaces/default/pods"; ns NULL or "" = all namespaces, and
 * always for cluster-scoped kinds) into buf. Returns buf, or NULL when cap is too small. */
const char *wf_kube_kind_path(const wf_kube_kind *k, const char *ns, char *buf, size_t cap);

#endif
