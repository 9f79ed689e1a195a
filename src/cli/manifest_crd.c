/*
 * manifest_crd.c - the CustomResourceDefinitions of the Istio kinds weft reads (kube/kinds.h),
 * apiextensions.k8s.io/v1, named and versioned as Istio's (manifests/charts/base/files/
 * crd-all.gen.yaml: names plural/singular/kind/listKind, shortNames, categories istio-io and
 * <group>-istio-io; served versions and the storage version of ../shared/reference/
 * kubernetes.md §2.7), each version with the status subresource and a schema that keeps every
 * field (x-kubernetes-preserve-unknown-fields: weft validates the content itself, as the
 * validating webhook does). See manifest.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/manifest.h"
#include "kube/kinds.h"

/* Istio's short names and the versions served besides the stored one (§2.7). */
static const struct {
    const char *resource, *short_name, *also[2];
} EXTRA[] = {
    {"virtualservices", "vs", {"v1alpha3", "v1beta1"}},
    {"destinationrules", "dr", {"v1alpha3", "v1beta1"}},
    {"gateways", "gw", {"v1alpha3", "v1beta1"}},
    {"serviceentries", "se", {"v1alpha3", "v1beta1"}},
    {"sidecars", NULL, {"v1alpha3", "v1beta1"}},
    {"workloadentries", "we", {"v1alpha3", "v1beta1"}},
    {"workloadgroups", "wg", {"v1alpha3", "v1beta1"}},
    {"envoyfilters", NULL, {NULL, NULL}},
    {"proxyconfigs", NULL, {NULL, NULL}},
    {"authorizationpolicies", "ap", {"v1beta1", NULL}},
    {"peerauthentications", "pa", {"v1beta1", NULL}},
    {"requestauthentications", "ra", {"v1beta1", NULL}},
    {"telemetries", "telemetry", {"v1alpha1", NULL}},
};

static json_t *version(const char *name, bool storage)
{
    return json_pack("{s:s,s:b,s:b,s:{s:{}},s:{s:{s:s,s:b}}}", "name", name, "served", 1, "storage",
                     storage, "subresources", "status", "schema", "openAPIV3Schema", "type",
                     "object", "x-kubernetes-preserve-unknown-fields", 1);
}

static json_t *crd(const wf_kube_kind *k, const char *short_name, const char *const also[2])
{
    char name[160], singular[64], list_kind[80], cat[80];
    snprintf(name, sizeof name, "%s.%s", k->resource, k->group);
    size_t i = 0;
    for (; k->kind[i] && i + 1 < sizeof singular; i++)
        singular[i] = (char)tolower((unsigned char)k->kind[i]);
    singular[i] = 0;
    snprintf(list_kind, sizeof list_kind, "%sList", k->kind);
    /* "networking.istio.io" -> "networking-istio-io" */
    snprintf(cat, sizeof cat, "%s", k->group);
    for (char *p = cat; *p; p++)
        if (*p == '.')
            *p = '-';
    json_t *versions = json_array(),
           *names =
               json_pack("{s:s,s:s,s:s,s:s,s:[s,s]}", "plural", k->resource, "singular", singular,
                         "kind", k->kind, "listKind", list_kind, "categories", "istio-io", cat);
    if (!versions || !names)
        goto oom;
    if (short_name && json_object_set_new(names, "shortNames", json_pack("[s]", short_name)))
        goto oom;
    if (json_array_append_new(versions, version(k->version, true)) != 0)
        goto oom;
    for (int j = 0; j < 2; j++)
        if (also[j] && json_array_append_new(versions, version(also[j], false)) != 0)
            goto oom;
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:s,s:o,s:s,s:o}}", "apiVersion",
                     "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
                     "name", name, "labels", "app", "istio-pilot", "release", "istio", "spec",
                     "group", k->group, "names", names, "scope", "Namespaced", "versions",
                     versions);
oom:
    json_decref(versions);
    json_decref(names);
    return NULL;
}

int wf_manifest_crds(json_t *docs)
{
    size_t nk;
    const wf_kube_kind *k = wf_kube_kinds(&nk);
    for (size_t i = 0; i < nk; i++) {
        if (!strstr(k[i].group, "istio.io"))
            continue; /* built-in kinds: the cluster has them */
        const char *sn = NULL;
        const char *none[2] = {NULL, NULL};
        const char *const *also = none;
        for (size_t j = 0; j < sizeof EXTRA / sizeof EXTRA[0]; j++)
            if (strcmp(EXTRA[j].resource, k[i].resource) == 0) {
                sn = EXTRA[j].short_name;
                also = EXTRA[j].also;
            }
        if (wf_manifest_push(docs, crd(&k[i], sn, also)) != 0)
            return -1;
    }
    return 0;
}
