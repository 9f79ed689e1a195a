#include "model/kinds.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct kind_info {
    const char *group; /* "" for core */
    const char *name;
    bool cluster_scoped;
    const char *plural;
    const char *shortname;
} kind_info;

static const kind_info kinds[WF_KIND_COUNT] = {
    [WF_KIND_OTHER] = {"", "", false, "", ""},
    [WF_KIND_NAMESPACE] = {"", "Namespace", true, "namespaces", "ns"},
    [WF_KIND_SERVICE] = {"", "Service", false, "services", "svc"},
    [WF_KIND_POD] = {"", "Pod", false, "pods", "po"},
    [WF_KIND_DEPLOYMENT] = {"apps", "Deployment", false, "deployments", "deploy"},
    [WF_KIND_REPLICASET] = {"apps", "ReplicaSet", false, "replicasets", "rs"},
    [WF_KIND_STATEFULSET] = {"apps", "StatefulSet", false, "statefulsets", "sts"},
    [WF_KIND_DAEMONSET] = {"apps", "DaemonSet", false, "daemonsets", "ds"},
    [WF_KIND_SERVICEACCOUNT] = {"", "ServiceAccount", false, "serviceaccounts", "sa"},
    [WF_KIND_NODE] = {"", "Node", true, "nodes", "no"},
    [WF_KIND_SECRET] = {"", "Secret", false, "secrets", ""},
    [WF_KIND_CONFIGMAP] = {"", "ConfigMap", false, "configmaps", "cm"},
    [WF_KIND_MUTATINGWEBHOOK] = {"admissionregistration.k8s.io", "MutatingWebhookConfiguration",
                                 true, "mutatingwebhookconfigurations", ""},
    [WF_KIND_VALIDATINGWEBHOOK] = {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration",
                                   true, "validatingwebhookconfigurations", ""},
    [WF_KIND_CRD] = {"apiextensions.k8s.io", "CustomResourceDefinition", true,
                     "customresourcedefinitions", "crd"},
    [WF_KIND_GATEWAY] = {"networking.istio.io", "Gateway", false, "gateways", "gw"},
    [WF_KIND_VIRTUALSERVICE] = {"networking.istio.io", "VirtualService", false, "virtualservices",
                                "vs"},
    [WF_KIND_DESTINATIONRULE] = {"networking.istio.io", "DestinationRule", false,
                                 "destinationrules", "dr"},
    [WF_KIND_SERVICEENTRY] = {"networking.istio.io", "ServiceEntry", false, "serviceentries", "se"},
    [WF_KIND_WORKLOADENTRY] = {"networking.istio.io", "WorkloadEntry", false, "workloadentries",
                               "we"},
    [WF_KIND_WORKLOADGROUP] = {"networking.istio.io", "WorkloadGroup", false, "workloadgroups",
                               "wg"},
    [WF_KIND_SIDECAR] = {"networking.istio.io", "Sidecar", false, "sidecars", ""},
    [WF_KIND_ENVOYFILTER] = {"networking.istio.io", "EnvoyFilter", false, "envoyfilters", ""},
    [WF_KIND_PROXYCONFIG] = {"networking.istio.io", "ProxyConfig", false, "proxyconfigs", ""},
    [WF_KIND_PEERAUTHENTICATION] = {"security.istio.io", "PeerAuthentication", false,
                                    "peerauthentications", "pa"},
    [WF_KIND_AUTHORIZATIONPOLICY] = {"security.istio.io", "AuthorizationPolicy", false,
                                     "authorizationpolicies", "ap"},
    [WF_KIND_REQUESTAUTHENTICATION] = {"security.istio.io", "RequestAuthentication", false,
                                       "requestauthentications", "ra"},
    [WF_KIND_TELEMETRY] = {"telemetry.istio.io", "Telemetry", false, "telemetries", "telemetry"},
    [WF_KIND_WASMPLUGIN] = {"extensions.istio.io", "WasmPlugin", false, "wasmplugins", ""},
    [WF_KIND_K8S_GATEWAY] = {"gateway.networking.k8s.io", "Gateway", false, "gateways", ""},
    [WF_KIND_HTTPROUTE] = {"gateway.networking.k8s.io", "HTTPRoute", false, "httproutes", ""},
    [WF_KIND_GRPCROUTE] = {"gateway.networking.k8s.io", "GRPCRoute", false, "grpcroutes", ""},
};

/* API versions served per group (Kubernetes, and Istio's CRDs which serve the same schema
 * under every listed version). An unknown version is an unknown kind, as in istioctl. */
static bool version_served(const char *group, const char *version)
{
    static const struct {
        const char *group, *versions;
    } served[] = {
        {"", " v1 "},
        {"apps", " v1 "},
        {"admissionregistration.k8s.io", " v1 v1beta1 "},
        {"apiextensions.k8s.io", " v1 v1beta1 "},
        {"networking.istio.io", " v1alpha3 v1beta1 v1 "},
        {"security.istio.io", " v1beta1 v1 "},
        {"telemetry.istio.io", " v1alpha1 v1 "},
        {"extensions.istio.io", " v1alpha1 "},
        {"gateway.networking.k8s.io", " v1alpha2 v1alpha3 v1beta1 v1 "},
    };
    char key[40];
    if (strlen(version) + 3 > sizeof(key))
        return false;
    snprintf(key, sizeof(key), " %s ", version);
    for (size_t i = 0; i < sizeof(served) / sizeof(served[0]); i++)
        if (strcmp(served[i].group, group) == 0)
            return strstr(served[i].versions, key) != NULL;
    return false;
}

wf_kind wf_kind_lookup(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return WF_KIND_OTHER;
    const char *slash = strrchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    const char *version = slash ? slash + 1 : api_version;
    for (int k = 1; k < WF_KIND_COUNT; k++) {
        const kind_info *ki = &kinds[k];
        if (strcmp(ki->name, kind) != 0)
            continue;
        if (strlen(ki->group) == glen && strncmp(ki->group, api_version, glen) == 0)
            return version_served(ki->group, version) ? (wf_kind)k : WF_KIND_OTHER;
    }
    return WF_KIND_OTHER;
}

const char *wf_kind_name(wf_kind k)
{
    return (k >= 0 && k < WF_KIND_COUNT) ? kinds[k].name : "";
}

bool wf_kind_cluster_scoped(wf_kind k)
{
    return k > 0 && k < WF_KIND_COUNT && kinds[k].cluster_scoped;
}

bool wf_kind_is_istio(wf_kind k)
{
    return k > 0 && k < WF_KIND_COUNT && strstr(kinds[k].group, "istio.io") != NULL;
}

bool wf_kind_is_workload_controller(wf_kind k)
{
    return k == WF_KIND_DEPLOYMENT || k == WF_KIND_REPLICASET || k == WF_KIND_STATEFULSET ||
           k == WF_KIND_DAEMONSET;
}

wf_kind wf_kind_from_name(const char *name)
{
    for (int k = 1; k < WF_KIND_COUNT; k++) {
        if (k == WF_KIND_K8S_GATEWAY)
            continue; /* "gateway" on the command line means the Istio Gateway */
        const kind_info *ki = &kinds[k];
        if (strcasecmp(ki->name, name) == 0 || strcasecmp(ki->plural, name) == 0 ||
            (ki->shortname[0] && strcasecmp(ki->shortname, name) == 0))
            return (wf_kind)k;
    }
    return WF_KIND_OTHER;
}
