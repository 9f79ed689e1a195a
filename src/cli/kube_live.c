/*
 * kube_live.c - a live cluster's resources into a config store (kube_live.h).
 */
#include "cli/kube_live.h"

#include <stdlib.h>
#include <string.h>

#include "kube/kinds.h"

#define SECRET_TYPES "type!=helm.sh/release.v1,type!=kubernetes.io/service-account-token"

/* Kinds analysis reads that weft-pilot does not watch (kube/kinds.h has the others). */
static const wf_kube_kind EXTRA[] = {
    {"Deployment", "apps", "v1", "deployments", true},
    {"ReplicaSet", "apps", "v1", "replicasets", true},
    {"StatefulSet", "apps", "v1", "statefulsets", true},
    {"DaemonSet", "apps", "v1", "daemonsets", true},
    {"MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
     "mutatingwebhookconfigurations", false},
};

static int load_items(wf_store *store, const wf_kube_kind *k, const json_t *items, wf_strbuf *err)
{
    size_t i;
    json_t *o;
    int n = 0;
    json_array_foreach(items, i, o)
    {
        const json_t *md = json_object_get(o, "metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        if (strcmp(k->kind, "ConfigMap") == 0 && (!name || strncmp(name, "istio", 5) != 0))
            continue;
        /* istioctl lists Namespaces with metadata.name!= each ignored namespace */
        if (strcmp(k->kind, "Namespace") == 0 && name && wf_is_system_namespace(name))
            continue;
        char *text = json_dumps(o, JSON_COMPACT);
        char label[600];
        snprintf(label, sizeof label, "%s %s%s%s", k->kind, ns ? ns : "", ns ? "/" : "",
                 name ? name : "");
        if (!text || wf_store_load_live(store, label, text, strlen(text)) < 0) {
            free(text);
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
        free(text);
        n++;
    }
    return n;
}

/* Lists kind k (ns NULL = all namespaces) into the store. Returns objects loaded, or -1. */
static long list_kind(wf_kube_client *c, const wf_kube_kind *k, const char *ns,
                      const char *field_sel, wf_store *store, wf_strbuf *err)
{
    wf_kube_list_opts lo = {.field_selector = field_sel, .limit = 500};
    json_t *items = NULL;
    char *rv = NULL;
    int pages = 0;
    wf_kube_status st = {0};
    wf_strbuf why = WF_STRBUF_INIT;
    long n;
    if (wf_kube_list(c, k, ns, &lo, -1, &items, &rv, &pages, &st, &why) != 0) {
        bool absent = st.code == 404 && k->group[0]; /* a CRD that is not installed */
        n = absent ? 0 : -1;
        if (!absent)
            wf_strbuf_printf(err, "unable to list %s%s%s: %s", k->resource, k->group[0] ? "." : "",
                             k->group, wf_strbuf_cstr(&why));
    } else {
        n = load_items(store, k, items, err);
    }
    json_decref(items);
    free(rv);
    wf_strbuf_free(&why);
    return n;
}

/* The `istio` ConfigMap of the Istio namespace over the mesh defaults; a missing one is not an
 * error. */
static int load_mesh(wf_kube_client *c, const char *istio_ns, wf_meshcfg *mesh, wf_strbuf *err)
{
    char path[400];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps/istio", istio_ns);
    wf_strbuf body = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wf_kube_status st = {0};
    int rc = 0;
    if (wf_kube_request(c, "GET", path, NULL, -1, 15000, &body, &st, &why) == 0) {
        char name[300];
        const char *e = NULL;
        snprintf(name, sizeof name, "ConfigMap %s/istio", istio_ns);
        if (wf_meshcfg_load_text(mesh, name, wf_strbuf_cstr(&body), body.len, &e) != 0) {
            wf_strbuf_printf(err, "error getting mesh config from running kube source: %s", e);
            rc = -1;
        }
    } else if (st.code != 404) {
        wf_strbuf_printf(err, "error getting mesh config from running kube source: %s",
                         wf_strbuf_cstr(&why));
        rc = -1;
    }
    wf_strbuf_free(&body);
    wf_strbuf_free(&why);
    return rc;
}

long wf_kube_live_load(wf_kube_client *c, const char *istio_ns, wf_store *store, wf_meshcfg *mesh,
                       wf_strbuf *err)
{
    size_t nk;
    const wf_kube_kind *kinds = wf_kube_kinds(&nk);
    long total = 0;
    for (size_t i = 0; i < nk + sizeof EXTRA / sizeof EXTRA[0]; i++) {
        const wf_kube_kind *k = i < nk ? &kinds[i] : &EXTRA[i - nk];
        if (strcmp(k->kind, "EndpointSlice") == 0)
            continue; /* not read by analysis */
        bool cm = strcmp(k->kind, "ConfigMap") == 0, secret = strcmp(k->kind, "Secret") == 0;
        long n = list_kind(c, k, cm ? istio_ns : NULL, secret ? SECRET_TYPES : NULL, store, err);
        if (n < 0)
            return -1;
        total += n;
    }
    if (mesh && load_mesh(c, istio_ns, mesh, err) != 0)
        return -1;
    return total;
}

int wf_kube_namespace_exists(wf_kube_client *c, const char *ns, wf_strbuf *err)
{
    wf_strbuf path = WF_STRBUF_INIT, body = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wf_kube_status st = {0};
    wf_strbuf_puts(&path, "/api/v1/namespaces/");
    wf_kube_query_escape(&path, ns);
    int rc = wf_kube_request(c, "GET", wf_strbuf_cstr(&path), NULL, -1, 15000, &body, &st, &why);
    int out = rc == 0 ? 1 : st.code == 404 ? 0 : -1;
    if (out < 0)
        wf_strbuf_puts(err, wf_strbuf_cstr(&why));
    wf_strbuf_free(&path);
    wf_strbuf_free(&body);
    wf_strbuf_free(&why);
    return out;
}
