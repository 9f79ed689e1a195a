/*
 * registry.c - the list of analyzers, sorted by name as `istioctl analyze -L` prints them.
 *
 * Each analyzer is defined in its own an_<group>.c file. Schema validation analyzers
 * (schema.ValidationAnalyzer.<Kind>) come from an_schema.c; weft's own
 * (weft.NotImplementedAnalyzer, WFT codes) from an_weft.c.
 */
#include "analysis/analyzer.h"

#include <string.h>

extern const wf_analyzer wf_an_annotations_AlphaAnalyzer;
extern const wf_analyzer wf_an_annotations_K8sAnalyzer;
extern const wf_analyzer wf_an_applicationUID_Analyzer;
extern const wf_analyzer wf_an_auth_AuthorizationPoliciesAnalyzer;
extern const wf_analyzer wf_an_authn_BlockedCIDRsAnalyzer;
extern const wf_analyzer wf_an_conditions_ConditionAnalyzer;
extern const wf_analyzer wf_an_deployment_MultiServiceAnalyzer;
extern const wf_analyzer wf_an_deprecation_DeprecationAnalyzer;
extern const wf_analyzer wf_an_destinationrule_CaCertificateAnalyzer;
extern const wf_analyzer wf_an_destinationrule_SubsetSelectPodAnalyzer;
extern const wf_analyzer wf_an_envoyfilter_EnvoyPatchAnalyzer;
extern const wf_analyzer wf_an_externalcontrolplane_ExternalControlPlaneAnalyzer;
extern const wf_analyzer wf_an_gateway_CertificateAnalyzer;
extern const wf_analyzer wf_an_gateway_ConflictingGatewayAnalyzer;
extern const wf_analyzer wf_an_gateway_IngressGatewayPortAnalyzer;
extern const wf_analyzer wf_an_gateway_SecretAnalyzer;
extern const wf_analyzer wf_an_injection_Analyzer;
extern const wf_analyzer wf_an_injection_ImageAnalyzer;
extern const wf_analyzer wf_an_injection_ImageAutoAnalyzer;
extern const wf_analyzer wf_an_k8sgateway_CRDVersionAnalyzer;
extern const wf_analyzer wf_an_k8sgateway_SelectorAnalyzer;
extern const wf_analyzer wf_an_meshnetworks_MeshNetworksAnalyzer;
extern const wf_analyzer wf_an_service_PortNameAnalyzer;
extern const wf_analyzer wf_an_serviceentry_Analyzer;
extern const wf_analyzer wf_an_serviceentry_ConflictingServiceEntryProtocolAnalyzer;
extern const wf_analyzer wf_an_services_MultiClusterServiceAnalyzer;
extern const wf_analyzer wf_an_sidecar_SelectorAnalyzer;
extern const wf_analyzer wf_an_telemetry_DefaultSelectorAnalyzer;
extern const wf_analyzer wf_an_telemetry_LightstepAnalyzer;
extern const wf_analyzer wf_an_telemetry_ProviderAnalyzer;
extern const wf_analyzer wf_an_telemetry_SelectorAnalyzer;
extern const wf_analyzer wf_an_virtualservice_ConflictingMeshGatewayHostsAnalyzer;
extern const wf_analyzer wf_an_virtualservice_DestinationHostAnalyzer;
extern const wf_analyzer wf_an_virtualservice_DestinationRuleAnalyzer;
extern const wf_analyzer wf_an_virtualservice_GatewayAnalyzer;
extern const wf_analyzer wf_an_virtualservice_JWTClaimRouteAnalyzer;
extern const wf_analyzer wf_an_webhook_Analyzer;
extern const wf_analyzer wf_an_weft_NotImplementedAnalyzer;
extern const wf_analyzer wf_an_weft_AuthorizationPolicyPathAnalyzer;
extern const wf_analyzer wf_an_schema_AuthorizationPolicy;
extern const wf_analyzer wf_an_schema_DestinationRule;
extern const wf_analyzer wf_an_schema_EnvoyFilter;
extern const wf_analyzer wf_an_schema_Gateway;
extern const wf_analyzer wf_an_schema_PeerAuthentication;
extern const wf_analyzer wf_an_schema_ProxyConfig;
extern const wf_analyzer wf_an_schema_RequestAuthentication;
extern const wf_analyzer wf_an_schema_ServiceEntry;
extern const wf_analyzer wf_an_schema_Sidecar;
extern const wf_analyzer wf_an_schema_Telemetry;
extern const wf_analyzer wf_an_schema_TrafficExtension;
extern const wf_analyzer wf_an_schema_VirtualService;
extern const wf_analyzer wf_an_schema_WasmPlugin;
extern const wf_analyzer wf_an_schema_WorkloadEntry;
extern const wf_analyzer wf_an_schema_WorkloadGroup;
extern const wf_analyzer wf_an_schema_MeshNetworks;
extern const wf_analyzer wf_an_schema_MeshConfig;

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
    &wf_an_weft_AuthorizationPolicyPathAnalyzer,
    &wf_an_weft_NotImplementedAnalyzer,
};

#define NCAND (sizeof(candidates) / sizeof(candidates[0]))

const wf_analyzer *const *wf_analyzers_all(size_t *n)
{
    *n = NCAND;
    return candidates;
}

const wf_analyzer *wf_analyzer_find(const char *name)
{
    for (size_t i = 0; i < NCAND; i++) {
        if (strcmp(candidates[i]->name, name) == 0)
            return candidates[i];
    }
    return NULL;
}
