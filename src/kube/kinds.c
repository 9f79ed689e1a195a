/*
 * kinds.c - the kinds table and collection paths (kinds.h).
 */
#include "kube/kinds.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define NET "networking.istio.io"
#define SEC "security.istio.io"

static const wf_kube_kind KINDS[] = {
    {"Namespace", "", "v1", "namespaces", false},
    {"Service", "", "v1", "services", true},
    {"EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", true},
    {"Pod", "", "v1", "pods", true},
    {"Node", "", "v1", "nodes", false},
    {"ConfigMap", "", "v1", "configmaps", true},
    {"Secret", "", "v1", "secrets", true},
    {"VirtualService", NET, "v1", "virtualservices", true},
    {"DestinationRule", NET, "v1", "destinationrules", true},
    {"Gateway", NET, "v1", "gateways", true},
    {"ServiceEntry", NET, "v1", "serviceentries", true},
    {"Sidecar", NET, "v1", "sidecars", true},
    {"WorkloadEntry", NET, "v1", "workloadentries", true},
    {"WorkloadGroup", NET, "v1", "workloadgroups", true},
    {"EnvoyFilter", NET, "v1alpha3", "envoyfilters", true},
    {"ProxyConfig", NET, "v1beta1", "proxyconfigs", true},
    {"AuthorizationPolicy", SEC, "v1", "authorizationpolicies", true},
    {"PeerAuthentication", SEC, "v1", "peerauthentications", true},
    {"RequestAuthentication", SEC, "v1", "requestauthentications", true},
    {"Telemetry", "telemetry.istio.io", "v1", "telemetries", true},
};

/* Kinds weft-pilot writes (kube_writer.h) but the config source does not read. */
#define ADM "admissionregistration.k8s.io"
static const wf_kube_kind WRITE_KINDS[] = {
    {"MutatingWebhookConfiguration", ADM, "v1", "mutatingwebhookconfigurations", false},
    {"ValidatingWebhookConfiguration", ADM, "v1", "validatingwebhookconfigurations", false},
};

const wf_kube_kind *wf_kube_kinds(size_t *n)
{
    *n = sizeof KINDS / sizeof KINDS[0];
    return KINDS;
}

const wf_kube_kind *wf_kube_kind_find(const char *name)
{
    size_t nk = sizeof KINDS / sizeof KINDS[0], nw = sizeof WRITE_KINDS / sizeof WRITE_KINDS[0];
    for (size_t i = 0; i < nk + nw; i++) {
        const wf_kube_kind *k = i < nk ? &KINDS[i] : &WRITE_KINDS[i - nk];
        size_t rl = strlen(k->resource);
        if (strcasecmp(name, k->kind) == 0 || strcasecmp(name, k->resource) == 0)
            return k;
        if (k->group[0] && strncasecmp(name, k->resource, rl) == 0 && name[rl] == '.' &&
            strcasecmp(name + rl + 1, k->group) == 0)
            return k;
    }
    return NULL;
}

const char *wf_kube_kind_path(const wf_kube_kind *k, const char *ns, char *buf, size_t cap)
{
    char base[160];
    if (k->group[0])
        snprintf(base, sizeof base, "/apis/%s/%s", k->group, k->version);
    else
        snprintf(base, sizeof base, "/api/%s", k->version);
    int n = k->namespaced && ns && *ns
                ? snprintf(buf, cap, "%s/namespaces/%s/%s", base, ns, k->resource)
                : snprintf(buf, cap, "%s/%s", base, k->resource);
    return n > 0 && (size_t)n < cap ? buf : NULL;
}
