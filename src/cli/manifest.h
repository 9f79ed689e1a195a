/*
 * manifest.h - the install manifests of `weftctl manifest generate` (istioctl's command of
 * that name): the Kubernetes objects that run weft on a cluster, in apply order, shaped after
 * Istio's charts (manifests/charts/base, istio-control/istio-discovery/templates/ *.yaml,
 * gateways/istio-ingress) with weft's programs and image:
 *
 *   Namespace; the CRDs of the Istio kinds weft reads (kube/kinds.h, served/storage versions of
 *   ../shared/reference/kubernetes.md §2.7); ServiceAccount, ClusterRole/Binding and
 *   Role/Binding of istiod (wf_manifest_rbac: exactly what weft-pilot watches and writes,
 *   §2.1/§2.8); ConfigMaps `istio` (key mesh) and `istio-sidecar-injector` (keys config and
 *   values); Deployment and Service istiod running weft-pilot (ports 15010 grpc-xds, 15012
 *   https-dns, 443->15017 https-webhook, 15014 http-monitoring); MutatingWebhookConfiguration
 *   istio-sidecar-injector (§3.1) and ValidatingWebhookConfiguration istio-validator-<ns>
 *   (failurePolicy Ignore, as Istio starts it); the ingress gateway (ServiceAccount, Role and
 *   RoleBinding for Secrets, Deployment running `weft-proxy proxy router`, Service type
 *   LoadBalancer on 15021/80/443).
 *
 * Revisions as Istio: names istiod-<rev>, istio-<rev>, istio-sidecar-injector-<rev>; labels
 * istio.io/rev=<rev or "default">.
 *
 * Errors: wf_manifest_set and wf_manifest_values name the key (and the values file's line);
 * unknown keys are errors, never ignored. Ownership: returned JSON belongs to the caller.
 */
#ifndef WF_CLI_MANIFEST_H
#define WF_CLI_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"

typedef struct wf_manifest_opts {
    char *hub;             /* "localhost/weft" */
    char *image;           /* "weft" */
    char *tag;             /* WEFT_VERSION */
    char *ns;              /* values.global.istioNamespace: "istio-system" */
    char *revision;        /* "" = the default revision */
    char *trust_domain;    /* meshConfig.trustDomain: "cluster.local" */
    char *access_log_file; /* meshConfig.accessLogFile: "" */
    char *outbound_mode;   /* meshConfig.outboundTrafficPolicy.mode: "ALLOW_ANY" */
    bool ingress;          /* components.ingressGateways[0].enabled: true */
    bool crds;             /* components.base.enabled: true (false: the cluster has Istio's) */
} wf_manifest_opts;

/* Defaults (above). Returns 0, -1 when out of memory (free with wf_manifest_opts_free). */
int wf_manifest_opts_init(wf_manifest_opts *o);
void wf_manifest_opts_free(wf_manifest_opts *o);

/* One `--set key=value` (istioctl's keys: hub, tag, revision, namespace,
 * values.global.istioNamespace, values.global.hub, values.global.tag, meshConfig.trustDomain,
 * meshConfig.accessLogFile, meshConfig.outboundTrafficPolicy.mode,
 * components.ingressGateways[0].enabled, values.gateways.istio-ingressgateway.enabled,
 * components.base.enabled (the CRDs); the
 * "spec." prefix is accepted as istioctl does). Returns 0, or -1 with why ("unknown key
 * \"x\"", "invalid value ... for revision: ...") appended. */
int wf_manifest_set(wf_manifest_opts *o, const char *key, const char *value, wf_strbuf *why);

/* An IstioOperator values file (`-f`): kind IstioOperator, its spec's keys as --set takes
 * them. Returns 0, or -1 with why naming the file, line and key. */
int wf_manifest_values(wf_manifest_opts *o, const char *path, wf_strbuf *why);

/* The documents in apply order (a JSON array of objects); NULL when out of memory. */
json_t *wf_manifest_generate(const wf_manifest_opts *o);

/* ---- RBAC: the one table of what weft-pilot reads and writes ---------------------------- */

typedef enum wf_rbac_scope {
    WF_RBAC_CLUSTER,  /* ClusterRole istiod-clusterrole-<ns> */
    WF_RBAC_ISTIO_NS, /* Role istiod in the Istio namespace */
} wf_rbac_scope;

typedef struct wf_rbac_rule {
    wf_rbac_scope scope;
    const char *group;    /* "" = core */
    const char *resource; /* "pods", "virtualservices/status" */
    const char *verbs;    /* comma-separated: "get,list,watch" */
    const char *why;      /* what pilot does with it (docs/kubernetes.md lists these) */
} wf_rbac_rule;

/* The rules: every kind of kube/kinds.h that pilot watches (get/list/watch; ConfigMaps only in
 * the Istio namespace, where pilot watches the mesh config), then what pilot writes. Heap
 * array of *n entries (free() it; the strings are static or point into kinds.h's table);
 * NULL when out of memory. */
wf_rbac_rule *wf_manifest_rbac(size_t *n);

/* Whether rules grant verb on group/resource in scope (tests, and the docs' table). */
bool wf_manifest_rbac_allows(const wf_rbac_rule *rules, size_t n, wf_rbac_scope scope,
                             const char *group, const char *resource, const char *verb);

/* Internal parts of the generator (manifest_*.c). Each returns 0, or -1 when out of memory,
 * and appends its documents to docs. */
int wf_manifest_crds(json_t *docs);
int wf_manifest_rbac_docs(const wf_manifest_opts *o, json_t *docs);
int wf_manifest_pilot_docs(const wf_manifest_opts *o, json_t *docs);
int wf_manifest_webhook_docs(const wf_manifest_opts *o, json_t *docs);
int wf_manifest_gateway_docs(const wf_manifest_opts *o, json_t *docs);

/* Helpers shared by the parts: "istiod" or "istiod-<rev>" into buf; the istio.io/rev value. */
const char *wf_manifest_rev_name(const wf_manifest_opts *o, const char *base, char *buf,
                                 size_t cap);
const char *wf_manifest_rev_label(const wf_manifest_opts *o);
/* docs.append(doc) taking the reference; -1 when doc is NULL (out of memory). */
int wf_manifest_push(json_t *docs, json_t *doc);

#endif
