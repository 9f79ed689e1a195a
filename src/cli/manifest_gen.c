/*
 * manifest_gen.c - the generator's order and istiod's own objects: Namespace, the ConfigMaps
 * `istio` (configmap.yaml: key mesh, weft's MeshConfig defaults) and `istio-sidecar-injector`
 * (istiod-injector-configmap.yaml: keys config and values, weft's image), the Deployment
 * (deployment.yaml: weft-pilot in the `discovery` container) and the Service (service.yaml).
 * See manifest.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_pc.h"
#include "cli/manifest.h"

const char *wf_manifest_rev_name(const wf_manifest_opts *o, const char *base, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s", base, o->revision[0] ? "-" : "", o->revision);
    return buf;
}

const char *wf_manifest_rev_label(const wf_manifest_opts *o)
{
    return o->revision[0] ? o->revision : "default";
}

int wf_manifest_push(json_t *docs, json_t *doc)
{
    return doc ? json_array_append_new(docs, doc) : -1;
}

/* The MeshConfig of the `istio` ConfigMap as YAML text (Istio's configmap.yaml values with
 * weft's defaults and the --set meshConfig.* keys). NULL when out of memory. */
static char *mesh_text(const wf_manifest_opts *o)
{
    char istiod[128], addr[256];
    snprintf(addr, sizeof addr, "%s.%s.svc:15012",
             wf_manifest_rev_name(o, "istiod", istiod, sizeof istiod), o->ns);
    json_t *m = json_pack("{s:{s:s},s:b,s:s,s:s,s:{s:s}}", "defaultConfig", "discoveryAddress",
                          addr, "enablePrometheusMerge", 1, "rootNamespace", o->ns, "trustDomain",
                          o->trust_domain, "outboundTrafficPolicy", "mode", o->outbound_mode);
    if (m && o->access_log_file[0] &&
        json_object_set_new(m, "accessLogFile", json_string(o->access_log_file)) != 0) {
        json_decref(m);
        return NULL;
    }
    if (!m)
        return NULL;
    wf_strbuf b = WF_STRBUF_INIT;
    pc_yaml_write(&b, m);
    json_decref(m);
    if (wf_strbuf_failed(&b)) {
        wf_strbuf_free(&b);
        return NULL;
    }
    return wf_strbuf_take(&b);
}

static json_t *labels(const wf_manifest_opts *o)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "app", "istiod", "istio", "pilot", "release", "istio",
                     "istio.io/rev", wf_manifest_rev_label(o));
}

static int configmaps(const wf_manifest_opts *o, json_t *docs)
{
    char name[128], inj[160];
    char *mesh = mesh_text(o);
    if (!mesh)
        return -1;
    int rc = wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s}}", "apiVersion",
                                              "v1", "kind", "ConfigMap", "metadata", "name",
                                              wf_manifest_rev_name(o, "istio", name, sizeof name),
                                              "namespace", o->ns, "labels", labels(o), "data",
                                              "mesh", mesh, "meshNetworks", "networks: {}"));
    free(mesh);
    if (rc)
        return -1;
    /* the injector's config (Istio's sidecarInjectorWebhook values) and values (JSON) */
    const char *config = "policy: enabled\n"
                         "alwaysInjectSelector: []\n"
                         "neverInjectSelector: []\n"
                         "injectedAnnotations: {}\n"
                         "defaultTemplates:\n- sidecar\n";
    json_t *values =
        json_pack("{s:{s:s,s:s,s:s,s:{s:s},s:{s:s},s:s,s:{s:{s:s}}},s:s,s:{s:b,s:b}}", "global",
                  "hub", o->hub, "tag", o->tag, "istioNamespace", o->ns, "proxy", "image", o->image,
                  "proxy_init", "image", o->image, "imagePullPolicy", "IfNotPresent", "sds",
                  "token", "aud", "istio-ca", "revision", o->revision, "sidecarInjectorWebhook",
                  "rewriteAppHTTPProbe", 1, "enableNamespacesByDefault", 0);
    char *vtext = values ? json_dumps(values, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(values);
    if (!vtext)
        return -1;
    rc = wf_manifest_push(
        docs,
        json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                  "metadata", "name",
                  wf_manifest_rev_name(o, "istio-sidecar-injector", inj, sizeof inj), "namespace",
                  o->ns, "labels", labels(o), "data", "config", config, "values", vtext));
    free(vtext);
    return rc;
}

static json_t *env_field(const char *name, const char *path)
{
    return json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", name, "valueFrom", "fieldRef", "apiVersion",
                     "v1", "fieldPath", path);
}

static json_t *pilot_container(const wf_manifest_opts *o, const char *istiod)
{
    char image[512], addr[256];
    snprintf(image, sizeof image, "%s/%s:%s", o->hub, o->image, o->tag);
    snprintf(addr, sizeof addr, "%s.%s.svc:15012", istiod, o->ns);
    return json_pack(
        "{s:s,s:s,s:s,s:[s],s:[s,s,s,s,s,s],"
        "s:[{s:i,s:s,s:s},{s:i,s:s,s:s},{s:i,s:s,s:s},{s:i,s:s,s:s}],"
        "s:{s:{s:s,s:i},s:i,s:i,s:i},"
        "s:[{s:s,s:s},o,o,o,{s:s,s:s},{s:s,s:s}],"
        "s:{s:b,s:i,s:i,s:b,s:{s:[s]}},"
        "s:[{s:s,s:s,s:b},{s:s,s:s},{s:s,s:s,s:b}]}",
        "name", "discovery", "image", image, "imagePullPolicy", "IfNotPresent", "command",
        "weft-pilot", "args", "--grpcAddr=0.0.0.0:15010", "--secureGRPCAddr=0.0.0.0:15012",
        "--monitoringAddr=0.0.0.0:15014", "--webhookAddr=0.0.0.0:15017",
        "--domain-suffix=cluster.local", "--ca-dir=/var/lib/istio/ca", "ports", "containerPort",
        15010, "name", "grpc-xds", "protocol", "TCP", "containerPort", 15012, "name", "https-dns",
        "protocol", "TCP", "containerPort", 15014, "name", "http-monitoring", "protocol", "TCP",
        "containerPort", 15017, "name", "https-webhooks", "protocol", "TCP", "readinessProbe",
        "httpGet", "path", "/ready", "port", 15014, "initialDelaySeconds", 1, "periodSeconds", 3,
        "timeoutSeconds", 5, "env", "name", "REVISION", "value", wf_manifest_rev_label(o),
        env_field("POD_NAME", "metadata.name"), env_field("POD_NAMESPACE", "metadata.namespace"),
        env_field("SERVICE_ACCOUNT", "spec.serviceAccountName"), "name", "ISTIOD_ADDR", "value",
        addr, "name", "CLUSTER_ID", "value", "Kubernetes", "securityContext",
        "readOnlyRootFilesystem", 1, "runAsUser", 1337, "runAsGroup", 1337, "runAsNonRoot", 1,
        "capabilities", "drop", "ALL", "volumeMounts", "name", "inject", "mountPath",
        "/var/lib/istio/inject", "readOnly", 1, "name", "ca", "mountPath", "/var/lib/istio/ca",
        "name", "cacerts", "mountPath", "/etc/cacerts", "readOnly", 1);
}

static int deployment(const wf_manifest_opts *o, json_t *docs)
{
    char istiod[128], inj[160];
    wf_manifest_rev_name(o, "istiod", istiod, sizeof istiod);
    bool rev = o->revision[0] != 0;
    json_t *sel = rev ? json_pack("{s:s,s:s}", "app", "istiod", "istio.io/rev", o->revision)
                      : json_pack("{s:s}", "istio", "pilot");
    json_t *pod_labels =
        json_pack("{s:s,s:s,s:s,s:s}", "app", "istiod", "istio.io/rev", wf_manifest_rev_label(o),
                  "sidecar.istio.io/inject", "false", "istio", rev ? "istiod" : "pilot");
    json_t *volumes = json_pack(
        "[{s:s,s:{s:s}},{s:s,s:{}},{s:s,s:{s:s,s:b}}]", "name", "inject", "configMap", "name",
        wf_manifest_rev_name(o, "istio-sidecar-injector", inj, sizeof inj), "name", "ca",
        "emptyDir", "name", "cacerts", "secret", "secretName", "cacerts", "optional", 1);
    return wf_manifest_push(
        docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:i,s:{s:{s:s,s:s}},s:{s:o},"
                        "s:{s:{s:o,s:{s:s,s:s,s:s}},s:{s:s,s:{s:i},s:[o],s:o}}}}",
                        "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", istiod,
                        "namespace", o->ns, "labels", labels(o), "spec", "replicas", 1, "strategy",
                        "rollingUpdate", "maxSurge", "100%", "maxUnavailable", "25%", "selector",
                        "matchLabels", sel, "template", "metadata", "labels", pod_labels,
                        "annotations", "prometheus.io/port", "15014", "prometheus.io/scrape",
                        "true", "sidecar.istio.io/inject", "false", "spec", "serviceAccountName",
                        istiod, "securityContext", "fsGroup", 1337, "containers",
                        pilot_container(o, istiod), "volumes", volumes));
}

static int service(const wf_manifest_opts *o, json_t *docs)
{
    char istiod[128];
    wf_manifest_rev_name(o, "istiod", istiod, sizeof istiod);
    json_t *sel = o->revision[0]
                      ? json_pack("{s:s,s:s}", "app", "istiod", "istio.io/rev", o->revision)
                      : json_pack("{s:s,s:s}", "app", "istiod", "istio", "pilot");
    return wf_manifest_push(
        docs,
        json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:[{s:i,s:s,s:s},{s:i,s:s,s:s},"
                  "{s:i,s:s,s:i,s:s},{s:i,s:s,s:s}],s:o}}",
                  "apiVersion", "v1", "kind", "Service", "metadata", "name", istiod, "namespace",
                  o->ns, "labels", labels(o), "spec", "ports", "port", 15010, "name", "grpc-xds",
                  "protocol", "TCP", "port", 15012, "name", "https-dns", "protocol", "TCP", "port",
                  443, "name", "https-webhook", "targetPort", 15017, "protocol", "TCP", "port",
                  15014, "name", "http-monitoring", "protocol", "TCP", "selector", sel));
}

int wf_manifest_pilot_docs(const wf_manifest_opts *o, json_t *docs)
{
    return configmaps(o, docs) || deployment(o, docs) || service(o, docs) ? -1 : 0;
}

json_t *wf_manifest_generate(const wf_manifest_opts *o)
{
    json_t *docs = json_array();
    if (!docs)
        return NULL;
    /* the control plane is never injected: its pods say sidecar.istio.io/inject: "false" */
    int rc = wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1",
                                              "kind", "Namespace", "metadata", "name", o->ns,
                                              "labels", "kubernetes.io/metadata.name", o->ns));
    if (rc || (o->crds && wf_manifest_crds(docs)) || wf_manifest_rbac_docs(o, docs) ||
        wf_manifest_pilot_docs(o, docs) || wf_manifest_webhook_docs(o, docs) ||
        (o->ingress && wf_manifest_gateway_docs(o, docs))) {
        json_decref(docs);
        return NULL;
    }
    return docs;
}
