"""The kinds the test API server serves: the §2.1 kinds of ../shared/reference/kubernetes.md
(what istiod watches) and the Istio kinds weft models (§2.7, every served version).

Each entry: group, versions (first = preferred), plural resource name, Kind, namespaced,
shortNames, and the extra field-selector labels the kind supports besides metadata.name and
metadata.namespace (kube-apiserver's per-kind field label conversion funcs)."""

from collections import namedtuple

Res = namedtuple("Res", "group versions resource kind namespaced short fields")

POD_FIELDS = (
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
)

RESOURCES = [
    Res("", ("v1",), "namespaces", "Namespace", False, ("ns",), ("status.phase",)),
    Res("", ("v1",), "services", "Service", True, ("svc",), ()),
    Res("", ("v1",), "endpoints", "Endpoints", True, ("ep",), ()),
    Res("", ("v1",), "pods", "Pod", True, ("po",), POD_FIELDS),
    Res("", ("v1",), "nodes", "Node", False, ("no",), ("spec.unschedulable",)),
    Res("", ("v1",), "configmaps", "ConfigMap", True, ("cm",), ()),
    Res("", ("v1",), "secrets", "Secret", True, (), ("type",)),
    Res("", ("v1",), "serviceaccounts", "ServiceAccount", True, ("sa",), ()),
    Res("discovery.k8s.io", ("v1",), "endpointslices", "EndpointSlice", True, (), ()),
    Res("admissionregistration.k8s.io", ("v1",), "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration", False, (), ()),
    Res("admissionregistration.k8s.io", ("v1",), "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration", False, (), ()),
    Res("apps", ("v1",), "deployments", "Deployment", True, ("deploy",), ()),
    Res("apps", ("v1",), "replicasets", "ReplicaSet", True, ("rs",), ()),
    Res("apps", ("v1",), "statefulsets", "StatefulSet", True, ("sts",), ()),
    Res("apps", ("v1",), "daemonsets", "DaemonSet", True, ("ds",), ()),
    Res("batch", ("v1",), "jobs", "Job", True, (), ()),
    Res("batch", ("v1",), "cronjobs", "CronJob", True, ("cj",), ()),
    Res("rbac.authorization.k8s.io", ("v1",), "clusterroles", "ClusterRole", False, (), ()),
    Res("rbac.authorization.k8s.io", ("v1",), "clusterrolebindings", "ClusterRoleBinding", False,
        (), ()),
    Res("rbac.authorization.k8s.io", ("v1",), "roles", "Role", True, (), ()),
    Res("rbac.authorization.k8s.io", ("v1",), "rolebindings", "RoleBinding", True, (), ()),
    Res("apiextensions.k8s.io", ("v1",), "customresourcedefinitions", "CustomResourceDefinition",
        False, ("crd", "crds"), ()),
    Res("policy", ("v1",), "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ()),
    Res("coordination.k8s.io", ("v1",), "leases", "Lease", True, (), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "virtualservices",
        "VirtualService", True, ("vs",), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "destinationrules",
        "DestinationRule", True, ("dr",), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "gateways", "Gateway", True,
        ("gw",), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "serviceentries", "ServiceEntry",
        True, ("se",), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "sidecars", "Sidecar", True, (), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "workloadentries", "WorkloadEntry",
        True, ("we",), ()),
    Res("networking.istio.io", ("v1", "v1beta1", "v1alpha3"), "workloadgroups", "WorkloadGroup",
        True, ("wg",), ()),
    Res("networking.istio.io", ("v1alpha3",), "envoyfilters", "EnvoyFilter", True, (), ()),
    Res("networking.istio.io", ("v1beta1",), "proxyconfigs", "ProxyConfig", True, (), ()),
    Res("security.istio.io", ("v1", "v1beta1"), "authorizationpolicies", "AuthorizationPolicy",
        True, ("ap",), ()),
    Res("security.istio.io", ("v1", "v1beta1"), "peerauthentications", "PeerAuthentication",
        True, ("pa",), ()),
    Res("security.istio.io", ("v1", "v1beta1"), "requestauthentications",
        "RequestAuthentication", True, ("ra",), ()),
    Res("telemetry.istio.io", ("v1", "v1alpha1"), "telemetries", "Telemetry", True,
        ("telemetry",), ()),
]

BUILTIN_GROUPS = {"", "discovery.k8s.io", "admissionregistration.k8s.io", "apps", "batch",
                  "rbac.authorization.k8s.io", "apiextensions.k8s.io", "policy",
                  "coordination.k8s.io"}


def find(group, version, resource):
    for r in RESOURCES:
        if r.group == group and r.resource == resource and version in r.versions:
            return r
    return None


def groups():
    """{group: [versions]} in first-seen order (group "" excluded)."""
    out = {}
    for r in RESOURCES:
        if r.group == "":
            continue
        vs = out.setdefault(r.group, [])
        for v in r.versions:
            if v not in vs:
                vs.append(v)
    return out


def api_version(group, version):
    return version if group == "" else "%s/%s" % (group, version)
