/*
 * manifest_gateway.c - the ingress gateway, as Istio's gateways/istio-ingress chart installs
 * it: ServiceAccount istio-ingressgateway-service-account; Role and RoleBinding
 * istio-ingressgateway-sds (Secrets get/watch/list: gateway credentials); Deployment
 * istio-ingressgateway (labels app=istio-ingressgateway, istio=ingressgateway; container
 * istio-proxy running weft-proxy as pilot-agent's `proxy router`, ports 15021 status-port,
 * 8080 http2, 8443 https, 15090 http-envoy-prom, readiness /healthz/ready on 15021, uid 1337);
 * Service istio-ingressgateway, type LoadBalancer, 15021/80/443. See manifest.h.
 */
#include <stdio.h>
#include <string.h>

#include "cli/manifest.h"

#define GW    "istio-ingressgateway"
#define GW_SA "istio-ingressgateway-service-account"

static json_t *labels(const wf_manifest_opts *o)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "app", GW, "istio", "ingressgateway", "release", "istio",
                     "istio.io/rev", wf_manifest_rev_label(o));
}

static json_t *env_field(const char *name, const char *path)
{
    return json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", name, "valueFrom", "fieldRef", "apiVersion",
                     "v1", "fieldPath", path);
}

static json_t *env(const wf_manifest_opts *o)
{
    char istiod[128], ca[256], owner[256], pc[320];
    wf_manifest_rev_name(o, "istiod", istiod, sizeof istiod);
    snprintf(ca, sizeof ca, "%s.%s.svc:15012", istiod, o->ns);
    /* the gateway reads no mounted mesh config: its discovery address (the revision's istiod
     * in the install namespace) comes as pilot-agent's PROXY_CONFIG */
    snprintf(pc, sizeof pc, "{\"discoveryAddress\":\"%s\"}", ca);
    snprintf(owner, sizeof owner, "kubernetes://apis/apps/v1/namespaces/%s/deployments/%s", o->ns,
             GW);
    return json_pack(
        "[{s:s,s:s},{s:s,s:s},{s:s,s:s},o,o,o,o,o,o,{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]",
        "name", "PILOT_CERT_PROVIDER", "value", "istiod", "name", "CA_ADDR", "value", ca, "name",
        "PROXY_CONFIG", "value", pc, env_field("NODE_NAME", "spec.nodeName"),
        env_field("POD_NAME", "metadata.name"), env_field("POD_NAMESPACE", "metadata.namespace"),
        env_field("INSTANCE_IP", "status.podIP"), env_field("HOST_IP", "status.hostIP"),
        env_field("SERVICE_ACCOUNT", "spec.serviceAccountName"), "name", "ISTIO_META_WORKLOAD_NAME",
        "value", GW, "name", "ISTIO_META_OWNER", "value", owner, "name", "ISTIO_META_CLUSTER_ID",
        "value", "Kubernetes", "name", "ISTIO_META_ROUTER_MODE", "value", "standard");
}

static json_t *container(const wf_manifest_opts *o)
{
    char image[512];
    snprintf(image, sizeof image, "%s/%s:%s", o->hub, o->image, o->tag);
    return json_pack(
        "{s:s,s:s,s:s,s:[s],s:[s,s,s,s,s,s],"
        "s:[{s:i,s:s,s:s},{s:i,s:s,s:s},{s:i,s:s,s:s},{s:i,s:s,s:s}],"
        "s:{s:{s:s,s:i,s:s},s:i,s:i,s:i,s:i},s:o,"
        "s:{s:b,s:i,s:i,s:b,s:b,s:{s:[s]}},"
        "s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s,s:b}]}",
        "name", "istio-proxy", "image", image, "imagePullPolicy", "IfNotPresent", "command",
        "weft-proxy", "args", "proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local",
        "--proxyLogLevel=warning", "--log_output_level=default:info", "ports", "containerPort",
        15021, "name", "status-port", "protocol", "TCP", "containerPort", 8080, "name", "http2",
        "protocol", "TCP", "containerPort", 8443, "name", "https", "protocol", "TCP",
        "containerPort", 15090, "name", "http-envoy-prom", "protocol", "TCP", "readinessProbe",
        "httpGet", "path", "/healthz/ready", "port", 15021, "scheme", "HTTP", "initialDelaySeconds",
        1, "periodSeconds", 2, "timeoutSeconds", 1, "failureThreshold", 30, "env", env(o),
        "securityContext", "allowPrivilegeEscalation", 0, "runAsUser", 1337, "runAsGroup", 1337,
        "runAsNonRoot", 1, "readOnlyRootFilesystem", 1, "capabilities", "drop", "ALL",
        "volumeMounts", "name", "istio-envoy", "mountPath", "/etc/istio/proxy", "name",
        "istio-data", "mountPath", "/var/lib/istio/data", "name", "podinfo", "mountPath",
        "/etc/istio/pod", "name", "istio-token", "mountPath", "/var/run/secrets/tokens", "name",
        "istiod-ca-cert", "mountPath", "/var/run/secrets/istio", "readOnly", 1);
}

static json_t *volumes(void)
{
    return json_pack("[{s:s,s:{}},{s:s,s:{}},{s:s,s:{s:[{s:s,s:{s:s}},{s:s,s:{s:s}}]}},"
                     "{s:s,s:{s:[{s:{s:s,s:i,s:s}}]}},{s:s,s:{s:s}}]",
                     "name", "istio-envoy", "emptyDir", "name", "istio-data", "emptyDir", "name",
                     "podinfo", "downwardAPI", "items", "path", "labels", "fieldRef", "fieldPath",
                     "metadata.labels", "path", "annotations", "fieldRef", "fieldPath",
                     "metadata.annotations", "name", "istio-token", "projected", "sources",
                     "serviceAccountToken", "audience", "istio-ca", "expirationSeconds", 43200,
                     "path", "istio-token", "name", "istiod-ca-cert", "configMap", "name",
                     "istio-ca-root-cert");
}

int wf_manifest_gateway_docs(const wf_manifest_opts *o, json_t *docs)
{
    const char *rbac = "rbac.authorization.k8s.io";
    int rc = wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o}}", "apiVersion", "v1",
                                              "kind", "ServiceAccount", "metadata", "name", GW_SA,
                                              "namespace", o->ns, "labels", labels(o)));
    rc = rc ? rc
            : wf_manifest_push(docs,
                               json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:[{s:[s],s:[s],"
                                         "s:[s,s,s]}]}",
                                         "apiVersion", "rbac.authorization.k8s.io/v1", "kind",
                                         "Role", "metadata", "name", GW "-sds", "namespace", o->ns,
                                         "labels", labels(o), "rules", "apiGroups", "", "resources",
                                         "secrets", "verbs", "get", "watch", "list"));
    rc = rc ? rc
            : wf_manifest_push(
                  docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}",
                                  "apiVersion", "rbac.authorization.k8s.io/v1", "kind",
                                  "RoleBinding", "metadata", "name", GW "-sds", "namespace", o->ns,
                                  "labels", labels(o), "roleRef", "apiGroup", rbac, "kind", "Role",
                                  "name", GW "-sds", "subjects", "kind", "ServiceAccount", "name",
                                  GW_SA, "namespace", o->ns));
    rc = rc ? rc
            : wf_manifest_push(
                  docs,
                  json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:i,s:{s:{s:s,s:s}},s:{s:{s:o,"
                            "s:{s:s,s:s,s:s,s:s}},s:{s:s,s:{s:i},s:[o],s:o}}}}",
                            "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", GW,
                            "namespace", o->ns, "labels", labels(o), "spec", "replicas", 1,
                            "selector", "matchLabels", "app", GW, "istio", "ingressgateway",
                            "template", "metadata", "labels", labels(o), "annotations",
                            "prometheus.io/port", "15020", "prometheus.io/scrape", "true",
                            "prometheus.io/path", "/stats/prometheus", "sidecar.istio.io/inject",
                            "false", "spec", "serviceAccountName", GW_SA, "securityContext",
                            "fsGroup", 1337, "containers", container(o), "volumes", volumes()));
    rc = rc ? rc
            : wf_manifest_push(
                  docs,
                  json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:{s:s,s:s},"
                            "s:[{s:s,s:i,s:s,s:i},{s:s,s:i,s:s,s:i},{s:s,s:i,s:s,s:i}]}}",
                            "apiVersion", "v1", "kind", "Service", "metadata", "name", GW,
                            "namespace", o->ns, "labels", labels(o), "spec", "type", "LoadBalancer",
                            "selector", "app", GW, "istio", "ingressgateway", "ports", "name",
                            "status-port", "port", 15021, "protocol", "TCP", "targetPort", 15021,
                            "name", "http2", "port", 80, "protocol", "TCP", "targetPort", 8080,
                            "name", "https", "port", 443, "protocol", "TCP", "targetPort", 8443));
    return rc;
}
