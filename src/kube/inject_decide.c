/*
 * inject_decide.c - whether a pod gets a sidecar (inject_internal.h; Istio's
 * pkg/kube/inject/inject.go injectRequired, ../shared/reference/kubernetes.md §3.3), after the
 * webhook's namespace and object selectors matched:
 *   1. spec.hostNetwork: true → skip;
 *   2. namespaces kube-system, kube-public, kube-node-lease, local-path-storage → skip;
 *   (weft: a pod carrying sidecar.istio.io/status is already injected → skip;)
 *   3. the pod label sidecar.istio.io/inject, else the annotation of that name: "true" / "false"
 *      decide, any other value is warned about and the defaults apply;
 *   4. without an explicit value: neverInjectSelector match → no, alwaysInjectSelector → yes;
 *   5. else the policy: enabled → inject, disabled → only when explicitly requested.
 */
#include <string.h>

#include "kube/inject_internal.h"

static const char *const IGNORED_NAMESPACES[] = {"kube-system", "kube-public", "kube-node-lease",
                                                 "local-path-storage", NULL};

static const char *meta_str(const json_t *pod, const char *map, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), map), key));
}

const char *wf_inj_label(const json_t *pod, const char *key)
{
    return meta_str(pod, "labels", key);
}

const char *wf_inj_annotation(const json_t *pod, const char *key)
{
    return meta_str(pod, "annotations", key);
}

static bool in_values(const json_t *values, const char *v)
{
    size_t i;
    json_t *e;
    json_array_foreach(values, i, e)
    {
        if (v && json_is_string(e) && strcmp(json_string_value(e), v) == 0)
            return true;
    }
    return false;
}

static bool expression_matches(const json_t *e, const json_t *labels)
{
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *op = json_string_value(json_object_get(e, "operator"));
    const json_t *values = json_object_get(e, "values");
    if (!key || !op)
        return false;
    const char *v = json_string_value(json_object_get(labels, key));
    if (strcmp(op, "In") == 0)
        return v && in_values(values, v);
    if (strcmp(op, "NotIn") == 0)
        return !v || !in_values(values, v);
    if (strcmp(op, "Exists") == 0)
        return v != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return v == NULL;
    return false;
}

bool wf_inj_selector_matches(const json_t *selector, const json_t *labels)
{
    const json_t *ml = json_object_get(selector, "matchLabels");
    const json_t *me = json_object_get(selector, "matchExpressions");
    if (json_object_size(ml) == 0 && json_array_size(me) == 0)
        return false; /* Istio skips an empty selector (selector.Empty()) */
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ml, k, v)
    {
        const char *have = json_string_value(json_object_get(labels, k));
        const char *want = json_string_value(v);
        if (!have || !want || strcmp(have, want) != 0)
            return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(me, i, e)
    {
        if (!expression_matches(e, labels))
            return false;
    }
    return true;
}

static bool any_matches(const json_t *selectors, const json_t *labels)
{
    size_t i;
    json_t *s;
    json_array_foreach(selectors, i, s)
    {
        if (wf_inj_selector_matches(s, labels))
            return true;
    }
    return false;
}

bool wf_inj_wanted(const wf_inject_config *c, const char *ns, const json_t *pod, const char **why,
                   json_t *warnings)
{
    const json_t *spec = json_object_get(pod, "spec");
    if (json_is_true(json_object_get(spec, "hostNetwork"))) {
        *why = "the pod uses the host network (spec.hostNetwork)";
        return false;
    }
    for (size_t i = 0; ns && IGNORED_NAMESPACES[i]; i++)
        if (strcmp(ns, IGNORED_NAMESPACES[i]) == 0) {
            *why = "the namespace is a Kubernetes system namespace";
            return false;
        }
    if (wf_inj_annotation(pod, "sidecar.istio.io/status")) {
        *why = "the pod is already injected (annotation sidecar.istio.io/status)";
        return false;
    }
    const char *sel = wf_inj_annotation(pod, "sidecar.istio.io/inject");
    const char *src = "annotation";
    if (wf_inj_label(pod, "sidecar.istio.io/inject")) {
        sel = wf_inj_label(pod, "sidecar.istio.io/inject");
        src = "label";
    }
    bool use_default = true, inject = false;
    if (sel && strcmp(sel, "true") == 0) {
        inject = true, use_default = false;
    } else if (sel && strcmp(sel, "false") == 0) {
        use_default = false;
    } else if (sel && *sel) {
        wf_inj_warn(warnings,
                    "invalid value for %s sidecar.istio.io/inject: \"%s\": only 'true' and "
                    "'false' are accepted; falling back to the default injection policy",
                    src, sel);
    }
    const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    if (use_default && any_matches(c->never, labels)) {
        *why = "the pod's labels match the config's neverInjectSelector";
        return false;
    }
    if (use_default && any_matches(c->always, labels))
        return true;
    if (!use_default) {
        if (!inject)
            *why = strcmp(src, "label") == 0 ? "the pod's label sidecar.istio.io/inject is false"
                                             : "the pod's annotation sidecar.istio.io/inject "
                                               "is false";
        return inject;
    }
    if (!c->policy_enabled)
        *why = "the injection policy is disabled and the pod does not ask for a sidecar";
    return c->policy_enabled;
}
