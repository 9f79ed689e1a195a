/*
 * manifest_rbac.c - istiod's ServiceAccount, ClusterRole/ClusterRoleBinding and
 * Role/RoleBinding (Istio's istio-discovery templates serviceaccount.yaml, clusterrole.yaml,
 * clusterrolebinding.yaml, role.yaml, rolebinding.yaml; names istiod-clusterrole-<ns>,
 * istiod-<rev>), granting exactly what weft-pilot watches (kube/kinds.h, as
 * pilot/source_kube.c starts its reflectors) and writes (../shared/reference/kubernetes.md
 * §2.8). See manifest.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/manifest.h"
#include "kube/kinds.h"

/* What pilot writes (§2.8), besides the status of the Istio kinds (added per kind below). */
static const wf_rbac_rule WRITES[] = {
    {WF_RBAC_CLUSTER, "", "configmaps", "create,get,update",
     "writes the istio-ca-root-cert ConfigMap (root-cert.pem) in every namespace"},
    {WF_RBAC_CLUSTER, "admissionregistration.k8s.io", "mutatingwebhookconfigurations",
     "get,list,watch,patch",
     "finds its injector webhook configuration (label istio.io/rev) and patches caBundle"},
    {WF_RBAC_CLUSTER, "admissionregistration.k8s.io", "validatingwebhookconfigurations",
     "get,list,watch,patch",
     "patches the validator's caBundle and failurePolicy once the webhook serves"},
    {WF_RBAC_CLUSTER, "authentication.k8s.io", "tokenreviews", "create",
     "authenticates proxies' service-account tokens (CSRs and xDS on 15012)"},
};

static bool is_istio_group(const char *g)
{
    size_t n = strlen(g), s = strlen("istio.io");
    return n >= s && strcmp(g + n - s, "istio.io") == 0;
}

wf_rbac_rule *wf_manifest_rbac(size_t *n)
{
    size_t nk, nw = sizeof WRITES / sizeof WRITES[0], at = 0;
    const wf_kube_kind *k = wf_kube_kinds(&nk);
    wf_rbac_rule *r = calloc(2 * nk + nw, sizeof *r);
    if (!r)
        return NULL;
    for (size_t i = 0; i < nk; i++) {
        bool cm = strcmp(k[i].kind, "ConfigMap") == 0; /* only the mesh config's namespace */
        r[at++] = (wf_rbac_rule){cm ? WF_RBAC_ISTIO_NS : WF_RBAC_CLUSTER, k[i].group, k[i].resource,
                                 "get,list,watch",
                                 cm ? "watches the istio ConfigMap (MeshConfig)"
                                    : "watches it (list and watch, as istiod's informers)"};
    }
    for (size_t i = 0; i < nw; i++)
        r[at++] = WRITES[i];
    *n = at;
    return r;
}

/* The status subresources of the Istio kinds, built on demand into a JSON rule list. */
static int status_rules(json_t *rules)
{
    size_t nk;
    const wf_kube_kind *k = wf_kube_kinds(&nk);
    for (size_t i = 0; i < nk; i++) {
        if (!is_istio_group(k[i].group))
            continue;
        char res[128];
        snprintf(res, sizeof res, "%s/status", k[i].resource);
        if (json_array_append_new(rules, json_pack("{s:[s],s:[s],s:[s,s]}", "apiGroups", k[i].group,
                                                   "resources", res, "verbs", "update", "patch")) !=
            0)
            return -1;
    }
    return 0;
}

static bool has_verb(const char *verbs, const char *verb)
{
    size_t vl = strlen(verb);
    for (const char *p = verbs; p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == vl && strncmp(p, verb, l) == 0)
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

bool wf_manifest_rbac_allows(const wf_rbac_rule *rules, size_t n, wf_rbac_scope scope,
                             const char *group, const char *resource, const char *verb)
{
    for (size_t i = 0; i < n; i++)
        if ((rules[i].scope == scope || rules[i].scope == WF_RBAC_CLUSTER) &&
            strcmp(rules[i].group, group) == 0 && strcmp(rules[i].resource, resource) == 0 &&
            has_verb(rules[i].verbs, verb))
            return true;
    /* the status of the Istio kinds (status_rules) */
    size_t rl = strlen(resource);
    if (is_istio_group(group) && rl > 7 && strcmp(resource + rl - 7, "/status") == 0 &&
        (strcmp(verb, "update") == 0 || strcmp(verb, "patch") == 0)) {
        size_t nk;
        const wf_kube_kind *k = wf_kube_kinds(&nk);
        for (size_t i = 0; i < nk; i++)
            if (strcmp(k[i].group, group) == 0 && strlen(k[i].resource) == rl - 7 &&
                strncmp(k[i].resource, resource, rl - 7) == 0)
                return true;
    }
    return false;
}

/* {"apiGroups":[g],"resources":[r],"verbs":[...]} of one table row. */
static json_t *rule_json(const wf_rbac_rule *r)
{
    json_t *verbs = json_array();
    for (const char *p = r->verbs; verbs && p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (json_array_append_new(verbs, json_stringn(p, l)) != 0) {
            json_decref(verbs);
            return NULL;
        }
        p = c ? c + 1 : NULL;
    }
    return verbs ? json_pack("{s:[s],s:[s],s:o}", "apiGroups", r->group, "resources", r->resource,
                             "verbs", verbs)
                 : NULL;
}

static json_t *rules_json(const wf_rbac_rule *r, size_t n, wf_rbac_scope scope)
{
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++)
        if (r[i].scope == scope && json_array_append_new(out, rule_json(&r[i])) != 0) {
            json_decref(out);
            return NULL;
        }
    if (out && scope == WF_RBAC_CLUSTER && status_rules(out) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *labels(const wf_manifest_opts *o)
{
    return json_pack("{s:s,s:s,s:s}", "app", "istiod", "release", "istio", "istio.io/rev",
                     wf_manifest_rev_label(o));
}

int wf_manifest_rbac_docs(const wf_manifest_opts *o, json_t *docs)
{
    char sa[128], role[192], crole[256];
    wf_manifest_rev_name(o, "istiod", sa, sizeof sa);
    snprintf(role, sizeof role, "%s", sa);
    char base[160];
    snprintf(base, sizeof base, "istiod-clusterrole%s%s", o->revision[0] ? "-" : "", o->revision);
    snprintf(crole, sizeof crole, "%s-%s", base, o->ns);
    size_t n;
    wf_rbac_rule *r = wf_manifest_rbac(&n);
    if (!r)
        return -1;
    json_t *cr = rules_json(r, n, WF_RBAC_CLUSTER), *nr = rules_json(r, n, WF_RBAC_ISTIO_NS);
    free(r);
    if (!cr || !nr) {
        json_decref(cr);
        json_decref(nr);
        return -1;
    }
    json_t *subj =
        json_pack("[{s:s,s:s,s:s}]", "kind", "ServiceAccount", "name", sa, "namespace", o->ns);
    int rc = wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o}}", "apiVersion", "v1",
                                              "kind", "ServiceAccount", "metadata", "name", sa,
                                              "namespace", o->ns, "labels", labels(o)));
    rc = rc ? rc
            : wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:o},s:O}", "apiVersion",
                                               "rbac.authorization.k8s.io/v1", "kind",
                                               "ClusterRole", "metadata", "name", crole, "labels",
                                               labels(o), "rules", cr));
    rc = rc ? rc
            : wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:o},s:{s:s,s:s,s:s},s:O}",
                                               "apiVersion", "rbac.authorization.k8s.io/v1", "kind",
                                               "ClusterRoleBinding", "metadata", "name", crole,
                                               "labels", labels(o), "roleRef", "apiGroup",
                                               "rbac.authorization.k8s.io", "kind", "ClusterRole",
                                               "name", crole, "subjects", subj));
    rc = rc ? rc
            : wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:O}", "apiVersion",
                                               "rbac.authorization.k8s.io/v1", "kind", "Role",
                                               "metadata", "name", role, "namespace", o->ns,
                                               "labels", labels(o), "rules", nr));
    rc = rc ? rc
            : wf_manifest_push(docs, json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s,s:s},s:O}",
                                               "apiVersion", "rbac.authorization.k8s.io/v1", "kind",
                                               "RoleBinding", "metadata", "name", role, "namespace",
                                               o->ns, "labels", labels(o), "roleRef", "apiGroup",
                                               "rbac.authorization.k8s.io", "kind", "Role", "name",
                                               role, "subjects", subj));
    json_decref(cr);
    json_decref(nr);
    json_decref(subj);
    return rc;
}
