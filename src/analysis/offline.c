/*
 * offline.c - what `istioctl analyze` adds to an analysis of files, and its documentation
 * links. See analysis.h.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"

/* istioctl adds these offline because the default MeshConfig has ingressControllerMode
 * STRICT and ingressService istio-ingressgateway (pkg/config/analysis/local/defaults.go). */
const char wf_analysis_offline_defaults[] = "apiVersion: v1\n"
                                            "kind: Pod\n"
                                            "metadata:\n"
                                            "  labels:\n"
                                            "    istio: ingressgateway\n"
                                            "  name: istio-ingressgateway-dummypod\n"
                                            "  namespace: istio-system\n"
                                            "spec:\n"
                                            "  containers:\n"
                                            "    - args:\n"
                                            "      name: istio-proxy\n"
                                            "---\n"
                                            "apiVersion: v1\n"
                                            "kind: Service\n"
                                            "metadata:\n"
                                            "  name: istio-ingressgateway\n"
                                            "  namespace: istio-system\n"
                                            "spec:\n"
                                            "  ports:\n"
                                            "  - name: http2\n"
                                            "    nodePort: 31380\n"
                                            "    port: 80\n"
                                            "    protocol: TCP\n"
                                            "    targetPort: 80\n"
                                            "  - name: https\n"
                                            "    nodePort: 31390\n"
                                            "    port: 443\n"
                                            "    protocol: TCP\n"
                                            "    targetPort: 443\n"
                                            "  - name: tcp\n"
                                            "    nodePort: 31400\n"
                                            "    port: 31400\n"
                                            "    protocol: TCP\n"
                                            "    targetPort: 31400\n"
                                            "  - name: tls\n"
                                            "    nodePort: 31447\n"
                                            "    port: 15443\n"
                                            "    protocol: TCP\n"
                                            "    targetPort: 15443\n"
                                            "  selector:\n"
                                            "    istio: ingressgateway\n";

const char *wf_analysis_doc_url(const char *code, char *buf, size_t cap)
{
    char lower[16];
    size_t i;
    for (i = 0; code[i] && i < sizeof(lower) - 1; i++)
        lower[i] = (char)(code[i] >= 'A' && code[i] <= 'Z' ? code[i] + 32 : code[i]);
    lower[i] = '\0';
    if (strncmp(code, "WFT", 3) == 0) /* weft's own codes are documented with weft */
        snprintf(buf, cap, "docs/analyze.md#%s", lower);
    else
        snprintf(buf, cap, WF_ANALYSIS_DOC_BASE "/%s/?ref=istioctl-analyze", lower);
    return buf;
}
