/*
 * registry.c - the list of analyzers, sorted by name as `istioctl analyze -L` prints them.
 *
 * Each analyzer is defined in its own an_<group>.c file. Schema validation analyzers
 * (schema.ValidationAnalyzer.<Kind>) come from an_schema.c.
 */
#include "analysis/analyzer.h"

#include <string.h>

extern const wf_analyzer wf_an_annotations_AlphaAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_annotations_K8sAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_applicationUID_Analyzer __attribute__((weak));
extern const wf_analyzer wf_an_auth_AuthorizationPoliciesAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_authn_BlockedCIDRsAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_conditions_ConditionAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_deployment_MultiServiceAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_deprecation_DeprecationAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_destinationrule_CaCertificateAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_destinationrule_SubsetSelectPodAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_envoyfilter_EnvoyPatchAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_externalcontrolplane_ExternalControlPlaneAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_gateway_CertificateAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_gateway_ConflictingGatewayAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_gateway_IngressGatewayPortAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_gateway_SecretAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_injection_Analyzer __attribute__((weak));
extern const wf_analyzer wf_an_injection_ImageAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_injection_ImageAutoAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_k8sgateway_CRDVersionAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_k8sgateway_SelectorAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_meshnetworks_MeshNetworksAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_service_PortNameAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_serviceentry_Analyzer __attribute__((weak));
extern const wf_analyzer wf_an_serviceentry_ConflictingServiceEntryProtocolAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_services_MultiClusterServiceAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_sidecar_SelectorAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_telemetry_DefaultSelectorAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_telemetry_LightstepAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_telemetry_ProviderAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_telemetry_SelectorAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_virtualservice_ConflictingMeshGatewayHostsAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_virtualservice_DestinationHostAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_virtualservice_DestinationRuleAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_virtualservice_GatewayAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_virtualservice_JWTClaimRouteAnalyzer __attribute__((weak));
extern const wf_analyzer wf_an_webhook_Analyzer __attribute__((weak));
extern const wf_analyzer wf_an_schema_AuthorizationPolicy __attribute__((weak));
extern const wf_analyzer wf_an_schema_DestinationRule __attribute__((weak));
extern const wf_analyzer wf_an_schema_EnvoyFilter __attribute__((weak));
extern const wf_analyzer wf_an_schema_Gateway __attribute__((weak));
extern const wf_analyzer wf_an_schema_PeerAuthentication __attribute__((weak));
extern const wf_analyzer wf_an_schema_ProxyConfig __attribute__((weak));
extern const wf_analyzer wf_an_schema_RequestAuthentication __attribute__((weak));
extern const wf_analyzer wf_an_schema_ServiceEntry __attribute__((weak));
extern const wf_analyzer wf_an_schema_Sidecar __attribute__((weak));
extern const wf_analyzer wf_an_schema_Telemetry __attribute__((weak));
extern const wf_analyzer wf_an_schema_TrafficExtension __attribute__((weak));
extern const wf_analyzer wf_an_schema_VirtualService __attribute__((weak));
extern const wf_analyzer wf_an_schema_WasmPlugin __attribute__((weak));
extern const wf_analyzer wf_an_schema_WorkloadEntry __attribute__((weak));
extern const wf_analyzer wf_an_schema_WorkloadGroup __attribute__((weak));
extern const wf_analyzer wf_an_schema_MeshNetworks __attribute__((weak));
extern const wf_analyzer wf_an_schema_MeshConfig __attribute__((weak));

static const wf_analyzer *const candidates[] = {
    &wf_an_annotations_AlphaAnalyzer,
    &wf_an_annotations_K8sAnalyzer,
    &wf_an_applicationUID_Analyzer,
    &wf_an_auth_AuthorizationPoliciesAnalyzer,
    &wf_an_authn_BlockedCIDRsAnalyzer,
    &wf_an_conditions_ConditionAnalyzer,
    &wf_an_deployment_MultiServiceAnalyzer,
    &wf_an_deprecation_DeprecationAnalyzer,
    &wf_an_destinationrule_CaCertificateAnalyzer,
    &wf_an_destinationrule_SubsetSelectPodAnalyzer,
    &wf_an_envoyfilter_EnvoyPatchAnalyzer,
    &wf_an_externalcontrolplane_ExternalControlPlaneAnalyzer,
    &wf_an_gateway_CertificateAnalyzer,
    &wf_an_gateway_ConflictingGatewayAnalyzer,
    &wf_an_gateway_IngressGatewayPortAnalyzer,
    &wf_an_gateway_SecretAnalyzer,
    &wf_an_injection_Analyzer,
    &wf_an_injection_ImageAnalyzer,
    &wf_an_injection_ImageAutoAnalyzer,
    &wf_an_k8sgateway_CRDVersionAnalyzer,
    &wf_an_k8sgateway_SelectorAnalyzer,
    &wf_an_meshnetworks_MeshNetworksAnalyzer,
    &wf_an_schema_AuthorizationPolicy,
    &wf_an_schema_DestinationRule,
    &wf_an_schema_EnvoyFilter,
    &wf_an_schema_Gateway,
    &wf_an_schema_MeshConfig,
    &wf_an_schema_MeshNetworks,
    &wf_an_schema_PeerAuthentication,
    &wf_an_schema_ProxyConfig,
    &wf_an_schema_RequestAuthentication,
    &wf_an_schema_ServiceEntry,
    &wf_an_schema_Sidecar,
    &wf_an_schema_Telemetry,
    &wf_an_schema_TrafficExtension,
    &wf_an_schema_VirtualService,
    &wf_an_schema_WasmPlugin,
    &wf_an_schema_WorkloadEntry,
    &wf_an_schema_WorkloadGroup,
    &wf_an_service_PortNameAnalyzer,
    &wf_an_serviceentry_Analyzer,
    &wf_an_serviceentry_ConflictingServiceEntryProtocolAnalyzer,
    &wf_an_services_MultiClusterServiceAnalyzer,
    &wf_an_sidecar_SelectorAnalyzer,
    &wf_an_telemetry_DefaultSelectorAnalyzer,
    &wf_an_telemetry_LightstepAnalyzer,
    &wf_an_telemetry_ProviderAnalyzer,
    &wf_an_telemetry_SelectorAnalyzer,
    &wf_an_virtualservice_ConflictingMeshGatewayHostsAnalyzer,
    &wf_an_virtualservice_DestinationHostAnalyzer,
    &wf_an_virtualservice_DestinationRuleAnalyzer,
    &wf_an_virtualservice_GatewayAnalyzer,
    &wf_an_virtualservice_JWTClaimRouteAnalyzer,
    &wf_an_webhook_Analyzer,
};

#define NCAND (sizeof(candidates) / sizeof(candidates[0]))

const wf_analyzer *const *wf_analyzers_all(size_t *n)
{
    static const wf_analyzer *present[NCAND];
    static size_t npresent;
    if (npresent == 0) {
        for (size_t i = 0; i < NCAND; i++) {
            if (candidates[i] && candidates[i]->name)
                present[npresent++] = candidates[i];
        }
    }
    *n = npresent;
    return present;
}

const wf_analyzer *wf_analyzer_find(const char *name)
{
    size_t n;
    const wf_analyzer *const *all = wf_analyzers_all(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    }
    return NULL;
}
