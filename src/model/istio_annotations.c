/*
 * istio_annotations.c - Istio's resource annotations (name, feature status, deprecation,
 * resource types), sorted by name for binary search.
 *
 * Source: istio/api annotation/annotations.gen.go, AllResourceAnnotations() (the revision
 * that lists ambient.istio.io/waypoint-inbound-binding, networking.istio.io/
 * traffic-distribution and sidecar.istio.io/statsHistogramBuckets), plus the Pod
 * annotations later Istio code reads through the same table: ambient.istio.io/dns-capture,
 * istio.io/reroute-virtual-interfaces, sidecar.istio.io/statsFlushInterval,
 * sidecar.istio.io/statsEvictionInterval and sidecar.istio.io/statsCompression (deprecated
 * in favour of MeshConfig in istio/api#3628). Resource lists keep upstream's order, which
 * IST0107's message text follows.
 */
#include "model/istio_annotations.h"

#include <stdlib.h>
#include <string.h>

static const wf_annotation_def table[] = {
    {"alpha.istio.io/canonical-serviceaccounts", WF_ANN_ALPHA, true, {WF_ANN_RES_SERVICE}},
    {"alpha.istio.io/kubernetes-serviceaccounts", WF_ANN_ALPHA, true, {WF_ANN_RES_SERVICE}},
    {"ambient.istio.io/bypass-inbound-capture", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"ambient.istio.io/dns-capture", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"ambient.istio.io/redirection", WF_ANN_BETA, false, {WF_ANN_RES_POD}},
    {"ambient.istio.io/waypoint-inbound-binding",
     WF_ANN_ALPHA,
     false,
     {WF_ANN_RES_GATEWAYCLASS, WF_ANN_RES_GATEWAY}},
    {"galley.istio.io/analyze-suppress", WF_ANN_ALPHA, false, {WF_ANN_RES_ANY}},
    {"gateway.istio.io/controller-version", WF_ANN_ALPHA, false, {WF_ANN_RES_ANY}},
    {"gateway.istio.io/name-override", WF_ANN_ALPHA, false, {WF_ANN_RES_GATEWAY}},
    {"gateway.istio.io/service-account", WF_ANN_ALPHA, false, {WF_ANN_RES_GATEWAY}},
    {"inject.istio.io/templates", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"istio.io/autoRegistrationGroup", WF_ANN_ALPHA, false, {WF_ANN_RES_WORKLOADENTRY}},
    {"istio.io/connectedAt", WF_ANN_ALPHA, false, {WF_ANN_RES_WORKLOADENTRY}},
    {"istio.io/disconnectedAt", WF_ANN_ALPHA, false, {WF_ANN_RES_WORKLOADENTRY}},
    {"istio.io/dry-run", WF_ANN_ALPHA, false, {WF_ANN_RES_AUTHORIZATIONPOLICY}},
    {"istio.io/reroute-virtual-interfaces", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"istio.io/rev", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"istio.io/workloadController", WF_ANN_ALPHA, false, {WF_ANN_RES_WORKLOADENTRY}},
    {"kubernetes.io/ingress.class", WF_ANN_STABLE, false, {WF_ANN_RES_INGRESS}},
    {"networking.istio.io/exportTo", WF_ANN_ALPHA, false, {WF_ANN_RES_SERVICE}},
    {"networking.istio.io/service-type", WF_ANN_ALPHA, false, {WF_ANN_RES_GATEWAY}},
    {"networking.istio.io/traffic-distribution",
     WF_ANN_ALPHA,
     false,
     {WF_ANN_RES_SERVICE, WF_ANN_RES_SERVICEENTRY}},
    {"prometheus.istio.io/merge-metrics", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"proxy.istio.io/config", WF_ANN_BETA, false, {WF_ANN_RES_POD}},
    {"proxy.istio.io/overrides", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"readiness.status.sidecar.istio.io/applicationPorts", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"readiness.status.sidecar.istio.io/failureThreshold", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"readiness.status.sidecar.istio.io/initialDelaySeconds",
     WF_ANN_ALPHA,
     false,
     {WF_ANN_RES_POD}},
    {"readiness.status.sidecar.istio.io/periodSeconds", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/agentLogLevel", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/bootstrapOverride", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/componentLogLevel", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/discoveryAddress", WF_ANN_ALPHA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/enableCoreDump", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/extraStatTags", WF_ANN_ALPHA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/inject", WF_ANN_BETA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/interceptionMode", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/logLevel", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/nativeSidecar", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/proxyCPU", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/proxyCPULimit", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/proxyImage", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/proxyImageType", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/proxyMemory", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/proxyMemoryLimit", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/rewriteAppHTTPProbers", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsCompression", WF_ANN_ALPHA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsEvictionInterval", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsFlushInterval", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsHistogramBuckets", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsInclusionPrefixes", WF_ANN_ALPHA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsInclusionRegexps", WF_ANN_ALPHA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/statsInclusionSuffixes", WF_ANN_ALPHA, true, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/status", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/userVolume", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"sidecar.istio.io/userVolumeMount", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"status.sidecar.istio.io/port", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"topology.istio.io/controlPlaneClusters", WF_ANN_ALPHA, false, {WF_ANN_RES_NAMESPACE}},
    {"traffic.istio.io/nodeSelector", WF_ANN_STABLE, false, {WF_ANN_RES_SERVICE}},
    {"traffic.sidecar.istio.io/excludeInboundPorts", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/excludeInterfaces", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/excludeOutboundIPRanges", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/excludeOutboundPorts", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/includeInboundPorts", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/includeOutboundIPRanges", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/includeOutboundPorts", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
    {"traffic.sidecar.istio.io/kubevirtInterfaces", WF_ANN_ALPHA, false, {WF_ANN_RES_POD}},
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

static int cmp_name(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const wf_annotation_def *)elem)->name);
}

const wf_annotation_def *wf_annotation_lookup(const char *name)
{
    if (!name)
        return NULL;
    return bsearch(name, table, NTABLE, sizeof(table[0]), cmp_name);
}

const char *wf_annotation_resource_name(unsigned r)
{
    static const char *const names[] = {
        [WF_ANN_RES_ANY] = "Any",
        [WF_ANN_RES_AUTHORIZATIONPOLICY] = "AuthorizationPolicy",
        [WF_ANN_RES_GATEWAY] = "Gateway",
        [WF_ANN_RES_GATEWAYCLASS] = "GatewayClass",
        [WF_ANN_RES_INGRESS] = "Ingress",
        [WF_ANN_RES_NAMESPACE] = "Namespace",
        [WF_ANN_RES_POD] = "Pod",
        [WF_ANN_RES_SERVICE] = "Service",
        [WF_ANN_RES_SERVICEENTRY] = "ServiceEntry",
        [WF_ANN_RES_WORKLOADENTRY] = "WorkloadEntry",
    };
    if (r == WF_ANN_RES_UNKNOWN || r >= sizeof(names) / sizeof(names[0]))
        return "Unknown";
    return names[r];
}
