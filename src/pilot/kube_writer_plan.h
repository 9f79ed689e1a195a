/*
 * kube_writer_plan.h - what weft-pilot writes back to the Kubernetes API and when (pure: no I/O,
 * no threads; kube_writer.h runs the requests). istiod's behaviour
 * (../shared/reference/kubernetes.md §2.8):
 *
 *  - the root ConfigMap (pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go,
 *    security/pkg/k8s/configutil.go InsertDataToConfigMap): in every Namespace the discovery
 *    selectors select (MeshConfig discoverySelectors, OR-ed; none = every namespace), except
 *    kube-public, kube-node-lease and local-path-storage (Istio's ignored namespaces less
 *    kube-system) and namespaces being deleted (status.phase Terminating or a
 *    deletionTimestamp), a ConfigMap named `istio-ca-root-cert` (PILOT_CA_CERT_CONFIGMAP) with
 *    label istio.io/config: "true" and data root-cert.pem = the mesh root bundle (both roots
 *    during a rotation: the text of root-cert.pem). Absent: POST (create). Present with another
 *    root-cert.pem (someone edited it, or the root changed): PUT of the object with only that
 *    key changed (other keys and labels kept, as istiod's insertData), carrying the
 *    resourceVersion it was read at, so a concurrent change is a 409 Conflict. Equal: nothing.
 *  - MutatingWebhookConfigurations (pkg/webhooks/webhookpatch.go): only one labelled
 *    istio.io/rev=<revision>; every webhook whose name ends in `sidecar-injector.istio.io` gets
 *    clientConfig.caBundle = base64 of the root bundle; none such: nothing (istiod's
 *    errNoWebhookWithName, not retried).
 *  - ValidatingWebhookConfigurations (pkg/webhooks/validation/controller/controller.go): those
 *    labelled istio.io/rev=<revision> (istio-validator-<rev>-istio-system,
 *    istiod-default-validator): every webhook gets the caBundle and, once pilot's webhook
 *    server is ready, failurePolicy Fail (before that the installed failurePolicy, Ignore in
 *    Istio's charts, is left as it is).
 *  - analysis status (PILOT_ENABLE_ANALYSIS=true; pkg/config/analysis/incluster, pilot/pkg/
 *    status): the Istio resources read from the API get the analyzers' findings (analysis/
 *    analysis.h, all default analyzers) as status.validationMessages, each
 *    {"documentationUrl": "https://istio.io/latest/docs/reference/config/analysis/<code>/",
 *    "level": "ERROR"|"WARNING"|"INFO", "type": {"code", "name"}} (istio.analysis.v1alpha1.
 *    AnalysisMessageBase in JSON: the level by its enum name), with a JSON merge patch of the
 *    /status subresource: {"status": {"validationMessages": [...]}}; when the findings are gone,
 *    validationMessages null (removed). Written when the messages differ from those last
 *    written (a resource never written and without findings is left alone).
 * The webhook changes are one JSON patch (RFC 6902, application/json-patch+json) per
 * configuration: for each webhook changed a `test` of /webhooks/<i>/name (so a reordered list
 * fails with 422 instead of patching the wrong entry) then `add` of the fields ("add" replaces
 * a member that exists).
 *
 * Objects are the reflectors' JSON (borrowed). Bodies are malloc'ed JSON text.
 */
#ifndef WF_PILOT_KUBE_WRITER_PLAN_H
#define WF_PILOT_KUBE_WRITER_PLAN_H

#include <stdbool.h>

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "model/store.h"

#define WF_KW_CM_NAME         "istio-ca-root-cert" /* PILOT_CA_CERT_CONFIGMAP's default */
#define WF_KW_CM_KEY          "root-cert.pem"
#define WF_KW_CM_LABEL        "istio.io/config"
#define WF_KW_REV_LABEL       "istio.io/rev"
#define WF_KW_INJECTOR_SUFFIX "sidecar-injector.istio.io"
#define WF_KW_JSON_PATCH      "application/json-patch+json"
#define WF_KW_MERGE_PATCH     "application/merge-patch+json"

/* True for kube-public, kube-node-lease and local-path-storage (not kube-system). */
bool wf_kw_ns_ignored(const char *ns);

/* The namespaces that get the root ConfigMap, from the store's Namespace objects and the
 * MeshConfig's discoverySelectors (see above): a new object {"ns": true}, NULL on OOM. */
json_t *wf_kw_wanted_namespaces(const wf_store *store, const wf_meshcfg *mesh);

typedef enum wf_kw_op {
    WF_KW_NONE = 0, /* nothing to write (note says why) */
    WF_KW_CREATE,   /* POST */
    WF_KW_UPDATE,   /* PUT */
    WF_KW_PATCH,    /* PATCH, JSON patch */
} wf_kw_op;

/* "none", "create", "update", "patch". */
const char *wf_kw_op_name(wf_kw_op op);

typedef struct wf_kw_action {
    wf_kw_op op;
    const char *method;       /* "POST", "PUT", "PATCH"; NULL for NONE */
    char path[512];           /* from the API root, "" for NONE */
    const char *content_type; /* NULL = application/json */
    char *body;               /* malloc'ed JSON; NULL for NONE */
    const char *note;         /* NONE: "in sync", "wrong revision", ... (static text) */
    char *written;            /* status: the messages (JSON text) to remember once written */
} wf_kw_action;

void wf_kw_action_clear(wf_kw_action *a);

/* The root ConfigMap cm_name in ns (existing: the cached object, NULL when absent) for the
 * bundle root_pem. 0, or -1 when out of memory (or a name too long for a path). */
int wf_kw_plan_configmap(const char *cm_name, const char *ns, const json_t *existing,
                         const char *root_pem, wf_kw_action *out);

/* One MutatingWebhookConfiguration (cached object) for revision rev. 0 or -1 (OOM). */
int wf_kw_plan_mutating(const json_t *cfg, const char *rev, const char *root_pem,
                        wf_kw_action *out);

/* One ValidatingWebhookConfiguration; ready: pilot's webhook server serves (failurePolicy
 * Fail). 0 or -1 (OOM). */
int wf_kw_plan_validating(const json_t *cfg, const char *rev, const char *root_pem, bool ready,
                          wf_kw_action *out);

/* The analysis messages of the store's Istio resources that came from the API (documents
 * "kube:Kind/ns/name"): a new object {"Kind/ns/name": {"path": the /status subresource's path,
 * "messages": [...]}} with every such resource (messages [] without findings); NULL on OOM. */
json_t *wf_kw_status_wanted(const wf_store *store, const wf_meshcfg *mesh);

/* want: one entry of wf_kw_status_wanted; last: the messages last written (JSON text), NULL =
 * never. 0 or -1 (OOM). */
int wf_kw_plan_status(const json_t *want, const char *last, wf_kw_action *out);

/* base64 of root_pem (a webhook's caBundle), malloc'ed; NULL on OOM. */
char *wf_kw_ca_bundle(const char *root_pem);

#endif
