/*
 * inject_internal.h - the sidecar injector's parts (kube/inject.h): the loaded config
 * (inject_config.c), the decision (inject_decide.c), the injected pod (inject_pod.c,
 * inject_proxy.c) and the AdmissionReview (inject_review.c).
 */
#ifndef WF_KUBE_INJECT_INTERNAL_H
#define WF_KUBE_INJECT_INTERNAL_H

#include <stdbool.h>

#include <jansson.h>

#include "kube/inject.h"

struct wf_inject_config {
    bool policy_enabled;          /* config `policy: enabled` (the chart's default) */
    json_t *always, *never;       /* arrays of LabelSelectors */
    json_t *injected_annotations; /* object of strings */
    json_t *values;               /* the chart's defaults overlaid with the values file */
    json_t *mesh;                 /* MeshConfig (object; {} = defaults) */
    json_t *unimplemented;        /* array of messages about config fields weft ignores */
    bool native_sidecars;         /* values pilot.env.ENABLE_NATIVE_SIDECARS / the env var */
};

/* values at a dotted path ("global.proxy.logLevel"), NULL when absent. */
const json_t *wf_inj_value(const wf_inject_config *c, const char *path);
const char *wf_inj_value_str(const wf_inject_config *c, const char *path, const char *def);
bool wf_inj_value_bool(const wf_inject_config *c, const char *path, bool def);
json_int_t wf_inj_value_int(const wf_inject_config *c, const char *path, json_int_t def);

/* The pod's label/annotation (NULL when absent). */
const char *wf_inj_label(const json_t *pod, const char *key);
const char *wf_inj_annotation(const json_t *pod, const char *key);

/* §3.3 (after the webhook's selectors): true to inject; else *why says why not. Warnings
 * (an invalid sidecar.istio.io/inject value) go to warnings (may be NULL). */
bool wf_inj_wanted(const wf_inject_config *c, const char *ns, const json_t *pod, const char **why,
                   json_t *warnings);

/* Whether a LabelSelector (matchLabels, matchExpressions) matches labels (an object). An empty
 * selector matches nothing here, as Istio's injector skips empty selectors. */
bool wf_inj_selector_matches(const json_t *selector, const json_t *labels);

/* inject_annotations.c: Istio's validation of the pod's annotations (-1 with why, "injection
 * failed: invalid annotation ..."); the injector annotations weft does not implement, as
 * warnings; the pod's ProxyConfig (MeshConfig defaultConfig merged with proxy.istio.io/config;
 * NULL with why when the annotation is not a ProxyConfig or out of memory). */
int wf_inj_validate_annotations(const json_t *pod, wf_strbuf *why);
void wf_inj_report_annotations(const json_t *pod, json_t *warnings);
json_t *wf_inj_proxy_config(const wf_inject_config *c, const json_t *pod, json_t *warnings,
                            wf_strbuf *why);

/* Everything inject_pod.c and inject_proxy.c share about one pod being injected. */
typedef struct inj_ctx {
    const wf_inject_config *cfg;
    const json_t *pod; /* the original */
    json_t *out;       /* the injected pod being built */
    const char *ns;
    wf_inject_owner owner;
    json_t *proxy_config; /* mesh defaultConfig merged with proxy.istio.io/config */
    json_t *warnings;     /* may be NULL */
    bool native;          /* istio-proxy as a native sidecar */
    int status_port;
    wf_strbuf *why;
} inj_ctx;

/* The istio-proxy container and istio-init (inject_proxy.c); NULL when out of memory. */
json_t *wf_inj_proxy_container(inj_ctx *x);
json_t *wf_inj_init_container(inj_ctx *x);
/* holdApplicationUntilProxyStarts (merged ProxyConfig, else values) and not a native sidecar. */
bool wf_inj_hold_application(const inj_ctx *x);

/* wf_inject_pod with path_env: the proxy environment from the webhook's /inject/k/v path (an
 * object, NULL = none) set on istio-proxy, replacing the template's value. */
int wf_inj_pod(const wf_inject_config *cfg, const json_t *pod, const char *ns,
               const wf_inject_owner *owner, const json_t *path_env, json_t **out, json_t *warnings,
               wf_strbuf *why);

void wf_inj_warn(json_t *warnings, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
