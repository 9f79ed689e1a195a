/*
 * kinds.h - the resource kinds weft knows, with their API groups and scope.
 *
 * Group/kind pairs follow Kubernetes and Istio (networking.istio.io, security.istio.io,
 * telemetry.istio.io, extensions.istio.io, gateway.networking.k8s.io). Any version of a known
 * group is accepted (Istio serves v1alpha3, v1beta1 and v1 for the same schema).
 */
#ifndef WF_MODEL_KINDS_H
#define WF_MODEL_KINDS_H

#include <stdbool.h>

typedef enum wf_kind {
    WF_KIND_OTHER = 0, /* unknown group/kind: kept opaque, ignored by analyzers */
    /* core / apps */
    WF_KIND_NAMESPACE,
    WF_KIND_SERVICE,
    WF_KIND_POD,
    WF_KIND_DEPLOYMENT,
    WF_KIND_REPLICASET,
    WF_KIND_STATEFULSET,
    WF_KIND_DAEMONSET,
    WF_KIND_SERVICEACCOUNT,
    WF_KIND_NODE,
    WF_KIND_SECRET,
    WF_KIND_CONFIGMAP,
    WF_KIND_MUTATINGWEBHOOK,   /* admissionregistration.k8s.io MutatingWebhookConfiguration */
    WF_KIND_VALIDATINGWEBHOOK, /* admissionregistration.k8s.io ValidatingWebhookConfiguration */
    WF_KIND_CRD,               /* apiextensions.k8s.io CustomResourceDefinition */
    /* networking.istio.io */
    WF_KIND_GATEWAY,
    WF_KIND_VIRTUALSERVICE,
    WF_KIND_DESTINATIONRULE,
    WF_KIND_SERVICEENTRY,
    WF_KIND_WORKLOADENTRY,
    WF_KIND_WORKLOADGROUP,
    WF_KIND_SIDECAR,
    WF_KIND_ENVOYFILTER,
    WF_KIND_PROXYCONFIG,
    /* security.istio.io */
    WF_KIND_PEERAUTHENTICATION,
    WF_KIND_AUTHORIZATIONPOLICY,
    WF_KIND_REQUESTAUTHENTICATION,
    /* telemetry.istio.io, extensions.istio.io */
    WF_KIND_TELEMETRY,
    WF_KIND_WASMPLUGIN,
    /* gateway.networking.k8s.io */
    WF_KIND_K8S_GATEWAY,
    WF_KIND_HTTPROUTE,
    WF_KIND_GRPCROUTE,
    WF_KIND_COUNT
} wf_kind;

/* Kind for an apiVersion ("networking.istio.io/v1beta1", "v1", "apps/v1") and kind name.
 * Returns WF_KIND_OTHER for anything not listed above. */
wf_kind wf_kind_lookup(const char *api_version, const char *kind);

/* The Kind name as written in manifests ("VirtualService"); "" for WF_KIND_OTHER. */
const char *wf_kind_name(wf_kind k);

/* True for cluster-scoped kinds (Namespace, Node, CRD, webhook configurations): they never
 * carry a namespace. */
bool wf_kind_cluster_scoped(wf_kind k);

/* True for the Istio config kinds (networking/security/telemetry/extensions.istio.io), which
 * get schema validation (IST0106). */
bool wf_kind_is_istio(wf_kind k);

/* True for Deployment, ReplicaSet, StatefulSet and DaemonSet. */
bool wf_kind_is_workload_controller(wf_kind k);

/* Kind from its manifest name only ("Pod", "virtualservice" case-insensitively, plural
 * and short forms such as "vs", "dr", "gw", "se"), for CLI arguments. WF_KIND_OTHER if none. */
wf_kind wf_kind_from_name(const char *name);

#endif
