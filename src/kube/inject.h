/*
 * inject.h - Istio's sidecar injector (pkg/kube/inject: webhook.go, inject.go, app_probe.go;
 * the default injection template; ../shared/reference/kubernetes.md §3): the decision whether
 * a pod gets a sidecar, the injected pod (weft-proxy as istio-proxy, the istio-init capture
 * container running `weft-proxy istio-iptables`, Istio's labels, annotations, environment,
 * volumes, probe rewriting and Prometheus merge), and the AdmissionReview v1 exchange of the
 * `/inject` webhook (a JSON Patch from the original pod to the injected one).
 *
 * Users: weft-pilot's webhook server (pilot/webhook.h) and `weftctl kube-inject` (offline).
 *
 * Config: Istio's injector ConfigMap `istio-sidecar-injector` as istiod mounts it, the files
 * `config` (policy, alwaysInjectSelector, neverInjectSelector, injectedAnnotations, ...) and
 * `values` (JSON: global.hub/tag/proxy..., sidecarInjectorWebhook...) in one folder, plus the
 * mesh config. Fields weft does not implement (custom `templates`) are reported, never
 * silently ignored (wf_inject_config_unimplemented).
 *
 * Threads: a config is read-only once loaded (shared by threads). No global state.
 */
#ifndef WF_KUBE_INJECT_H
#define WF_KUBE_INJECT_H

#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"

typedef struct wf_inject_config wf_inject_config;

/* Loads the injector config from dir (files `config` and `values`, either may be absent: the
 * defaults of Istio's chart) and mesh_file (MeshConfig YAML; NULL = defaults). Returns 0 and
 * *out, or -1 with why naming file, line and field. */
int wf_inject_config_load(const char *dir, const char *mesh_file, wf_inject_config **out,
                          wf_strbuf *why);
/* A copy of base whose MeshConfig is mesh (a JSON object of MeshConfig fields, the `istio`
 * ConfigMap's data.mesh as weft-pilot watches it; copied) instead of base's: istiod's injector
 * follows the watched MeshConfig (pkg/kube/inject/webhook.go, Webhook.meshConfig from the mesh
 * watcher). name names the mesh in why. Returns 0 and *out, or -1 with why (mesh not an object,
 * defaultConfig not an object, trustDomain not a string, out of memory). */
int wf_inject_config_with_mesh(const wf_inject_config *base, const json_t *mesh, const char *name,
                               wf_inject_config **out, wf_strbuf *why);
/* The built-in defaults (Istio's chart values). Returns NULL only when out of memory. */
wf_inject_config *wf_inject_config_default(void);
void wf_inject_config_free(wf_inject_config *c);

/* One `/inject` request: the HTTP path ("/inject", "/inject/", "/inject/cluster/c1/net/n1"),
 * Content-Type and body of an AdmissionReview v1. Writes the response body (an AdmissionReview
 * with the request's uid, apiVersion and kind; allowed true with a base64 JSONPatch, allowed
 * true without patch for a skipped pod, allowed false with status.message for an injection
 * error) or, for a bad request, Istio's error text. Returns the HTTP status: 200, 400 ("no
 * body found", bad JSON), 415 ("invalid Content-Type, want `application/json`"). */
int wf_inject_review(const wf_inject_config *cfg, const char *path, const char *content_type,
                     const char *body, size_t len, wf_strbuf *out);

/* ---- offline injection (`weftctl kube-inject`, istioctl/pkg/kubeinject) and the config's
 * own files ---------------------------------------------------------------------------------- */

/* As wf_inject_config_load from the three files istioctl kube-inject takes
 * (--injectConfigFile: the `config` text, --valuesFile: the `values` JSON/YAML,
 * --meshConfigFile: MeshConfig YAML); NULL = that part's defaults. */
int wf_inject_config_load_files(const char *config_file, const char *values_file,
                                const char *mesh_file, wf_inject_config **out, wf_strbuf *why);

/* The config fields weft does not implement, one message each ("config: templates: custom
 * injection templates are not implemented (ignored)"); an array owned by the config. */
const json_t *wf_inject_config_unimplemented(const wf_inject_config *c);

/* The workload a pod belongs to, as Istio's DeploymentMeta/TypeMeta (ISTIO_META_WORKLOAD_NAME,
 * ISTIO_META_OWNER): for kube-inject the Deployment (etc.) the template comes from. */
typedef struct wf_inject_owner {
    const char *api_version, *kind, *name; /* "apps/v1", "Deployment", "hello" */
} wf_inject_owner;

/* Injects one pod (a Pod JSON object; borrowed) in namespace ns (NULL: the pod's, else
 * "default"). owner NULL: derived from the pod (its ownerReferences, as the webhook does).
 * Returns 1 and *out (a new pod) when injected; 0 when the decision (§3.3) skips it, with the
 * reason in why; -1 when injection fails (why: Istio's refusal, e.g. an invalid annotation).
 * Each annotation or field of the pod that weft does not implement is appended to warnings (an
 * array of strings; may be NULL). */
int wf_inject_pod(const wf_inject_config *cfg, const json_t *pod, const char *ns,
                  const wf_inject_owner *owner, json_t **out, json_t *warnings, wf_strbuf *why);

#endif
