/*
 * manifest_webhook.c - the admission webhook configurations: MutatingWebhookConfiguration
 * istio-sidecar-injector (Istio's mutatingwebhook.yaml; ../shared/reference/kubernetes.md §3.1:
 * the rev.namespace / rev.object entries, plus namespace / object for the default revision,
 * with their namespace and object selectors) and ValidatingWebhookConfiguration
 * istio-validator[-<rev>]-<ns> (validatingwebhookconfiguration.yaml: CREATE and UPDATE of the
 * Istio groups at /validate, failurePolicy Ignore until istiod patches it to Fail with the
 * caBundle, §2.8), and for the default revision istiod-default-validator (the same without an
 * object selector: objects without istio.io/rev are validated too). All call the istiod Service on
 * 443 (container port 15017). weft's webhook server answers AdmissionReview v1 only, so
 * admissionReviewVersions is ["v1"] in both (Istio lists "v1beta1" first in the validator). See
 * manifest.h.
 */
#include <stdio.h>
#include <string.h>

#include "cli/manifest.h"

static json_t *expr(const char *key, const char *op, const char *value)
{
    return value ? json_pack("{s:s,s:s,s:[s]}", "key", key, "operator", op, "values", value)
                 : json_pack("{s:s,s:s}", "key", key, "operator", op);
}

/* One injector entry: name, then the namespace and object selectors' expressions. */
static json_t *inject_entry(const wf_manifest_opts *o, const char *istiod, const char *name,
                            json_t *ns_sel, json_t *obj_sel)
{
    return json_pack("{s:s,s:{s:{s:s,s:s,s:s,s:i}},s:s,s:[{s:[s],s:[s],s:[s],s:[s]}],s:s,s:s,s:[s],"
                     "s:{s:o},s:{s:o}}",
                     "name", name, "clientConfig", "service", "name", istiod, "namespace", o->ns,
                     "path", "/inject", "port", 443, "sideEffects", "None", "rules", "operations",
                     "CREATE", "apiGroups", "", "apiVersions", "v1", "resources", "pods",
                     "failurePolicy", "Fail", "reinvocationPolicy", "Never",
                     "admissionReviewVersions", "v1", "namespaceSelector", "matchExpressions",
                     ns_sel, "objectSelector", "matchExpressions", obj_sel);
}

static int mutating(const wf_manifest_opts *o, json_t *docs)
{
    char istiod[128], base[160], name[256];
    const char *rev = wf_manifest_rev_label(o);
    wf_manifest_rev_name(o, "istiod", istiod, sizeof istiod);
    wf_manifest_rev_name(o, "istio-sidecar-injector", base, sizeof base);
    if (strcmp(o->ns, "istio-system") != 0)
        snprintf(name, sizeof name, "%s-%s", base, o->ns);
    else
        snprintf(name, sizeof name, "%s", base);
    json_t *hooks =
        json_pack("[o,o]",
                  inject_entry(o, istiod, "rev.namespace.sidecar-injector.istio.io",
                               json_pack("[o,o]", expr("istio.io/rev", "In", rev),
                                         expr("istio-injection", "DoesNotExist", NULL)),
                               json_pack("[o]", expr("sidecar.istio.io/inject", "NotIn", "false"))),
                  inject_entry(o, istiod, "rev.object.sidecar-injector.istio.io",
                               json_pack("[o,o]", expr("istio.io/rev", "DoesNotExist", NULL),
                                         expr("istio-injection", "DoesNotExist", NULL)),
                               json_pack("[o,o]", expr("sidecar.istio.io/inject", "NotIn", "false"),
                                         expr("istio.io/rev", "In", rev))));
    if (hooks && !o->revision[0] &&
        (json_array_append_new(
             hooks,
             inject_entry(o, istiod, "namespace.sidecar-injector.istio.io",
                          json_pack("[o]", expr("istio-injection", "In", "enabled")),
                          json_pack("[o]", expr("sidecar.istio.io/inject", "NotIn", "false")))) ||
         json_array_append_new(
             hooks, inject_entry(o, istiod, "object.sidecar-injector.istio.io",
                                 json_pack("[o,o]", expr("istio-injection", "DoesNotExist", NULL),
                                           expr("istio.io/rev", "DoesNotExist", NULL)),
                                 json_pack("[o,o]", expr("sidecar.istio.io/inject", "In", "true"),
                                           expr("istio.io/rev", "DoesNotExist", NULL)))))) {
        json_decref(hooks);
        return -1;
    }
    return wf_manifest_push(docs,
                            hooks ? json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s}},s:o}", "apiVersion",
                                              "admissionregistration.k8s.io/v1", "kind",
                                              "MutatingWebhookConfiguration", "metadata", "name",
                                              name, "labels", "app", "sidecar-injector", "release",
                                              "istio", "istio.io/rev", rev, "webhooks", hooks)
                                  : NULL);
}

static int validating(const wf_manifest_opts *o, json_t *docs)
{
    char istiod[128], base[160], name[256];
    const char *rev = wf_manifest_rev_label(o);
    wf_manifest_rev_name(o, "istiod", istiod, sizeof istiod);
    wf_manifest_rev_name(o, "istio-validator", base, sizeof base);
    snprintf(name, sizeof name, "%s-%s", base, o->ns);
    return wf_manifest_push(
        docs,
        json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s,s:s}},s:[{s:s,s:{s:{s:s,s:s,s:s,s:i}},"
                  "s:[{s:[s,s],s:[s,s,s,s],s:[s],s:[s]}],s:s,s:s,s:[s],s:{s:[o]}}]}",
                  "apiVersion", "admissionregistration.k8s.io/v1", "kind",
                  "ValidatingWebhookConfiguration", "metadata", "name", name, "labels", "app",
                  "istiod", "istio", "istiod", "release", "istio", "istio.io/rev", rev, "webhooks",
                  "name", "rev.validation.istio.io", "clientConfig", "service", "name", istiod,
                  "namespace", o->ns, "path", "/validate", "port", 443, "rules", "operations",
                  "CREATE", "UPDATE", "apiGroups", "security.istio.io", "networking.istio.io",
                  "telemetry.istio.io", "extensions.istio.io", "apiVersions", "*", "resources", "*",
                  "failurePolicy", "Ignore", "sideEffects", "None", "admissionReviewVersions", "v1",
                  "objectSelector", "matchExpressions", expr("istio.io/rev", "In", rev)));
}

/* istiod-default-validator (the istiod chart's, for the default revision): the same webhook
 * without an object selector, so objects without an istio.io/rev label are validated too. */
static int default_validator(const wf_manifest_opts *o, json_t *docs)
{
    if (o->revision[0])
        return 0;
    return wf_manifest_push(
        docs,
        json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s,s:s}},s:[{s:s,s:{s:{s:s,s:s,s:s,s:i}},"
                  "s:[{s:[s,s],s:[s,s,s,s],s:[s],s:[s]}],s:s,s:s,s:[s]}]}",
                  "apiVersion", "admissionregistration.k8s.io/v1", "kind",
                  "ValidatingWebhookConfiguration", "metadata", "name", "istiod-default-validator",
                  "labels", "app", "istiod", "istio", "istiod", "release", "istio", "istio.io/rev",
                  "default", "webhooks", "name", "validation.istio.io", "clientConfig", "service",
                  "name", "istiod", "namespace", o->ns, "path", "/validate", "port", 443, "rules",
                  "operations", "CREATE", "UPDATE", "apiGroups", "security.istio.io",
                  "networking.istio.io", "telemetry.istio.io", "extensions.istio.io", "apiVersions",
                  "*", "resources", "*", "failurePolicy", "Ignore", "sideEffects", "None",
                  "admissionReviewVersions", "v1"));
}

int wf_manifest_webhook_docs(const wf_manifest_opts *o, json_t *docs)
{
    return mutating(o, docs) || validating(o, docs) || default_validator(o, docs) ? -1 : 0;
}
