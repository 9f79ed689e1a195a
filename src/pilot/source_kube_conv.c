/*
 * source_kube_conv.c - reflector caches to documents, EndpointSlices applied to Pods. See
 * source_kube_conv.h.
 */
#include "pilot/source_kube_conv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/meshcfg.h"
#include "kube/kinds.h"
#include "model/types.h"

#define LBL_SERVICE_NAME "kubernetes.io/service-name"
#define LBL_MULTICLUSTER "multicluster.kubernetes.io/service-name"

void wf_kube_docs_free(wf_kube_docs *d)
{
    for (size_t i = 0; d && i < d->n; i++) {
        free((char *)d->docs[i].name);
        free((char *)d->docs[i].json);
    }
    if (!d)
        return;
    free(d->docs);
    free(d->mesh_text);
    free(d->mesh_name);
    json_decref(d->discovery);
    json_decref(d->not_ready);
    json_decref(d->ignored);
    memset(d, 0, sizeof *d);
}

static bool is_istio(const wf_kube_kind *k)
{
    return strstr(k->group, "istio.io") != NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of obj sorted (borrowed strings), *n of them; NULL with *n 0 when empty or OOM
 * (*oom set). */
static const char **sorted_keys(const json_t *obj, size_t *n, bool *oom)
{
    *n = json_object_size(obj);
    if (*n == 0)
        return NULL;
    const char **v = malloc(*n * sizeof *v);
    if (!v) {
        *oom = true;
        *n = 0;
        return NULL;
    }
    size_t i = 0;
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)obj, k, val) v[i++] = k;
    qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

/* A copy of o as served: kind and apiVersion set, bookkeeping left out. NULL on OOM. */
static json_t *clean_copy(const wf_kube_kind *k, const json_t *o)
{
    json_t *c = json_deep_copy(o);
    char av[128];
    if (!c)
        return NULL;
    snprintf(av, sizeof av, "%s%s%s", k->group, *k->group ? "/" : "", k->version);
    json_t *md = json_object_get(c, "metadata");
    if (json_is_object(md)) {
        json_object_del(md, "managedFields");
        json_object_del(md, "resourceVersion");
    }
    if (is_istio(k))
        json_object_del(c, "status");
    if (json_object_set_new(c, "kind", json_string(k->kind)) ||
        json_object_set_new(c, "apiVersion", json_string(av))) {
        json_decref(c);
        return NULL;
    }
    return c;
}

static const char *meta_str(const json_t *o, const char *f)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), f));
}

/* ---- EndpointSlices -------------------------------------------------------------------------- */

/* What the slices say of one IP or Pod: 1 ready somewhere, -1 listed only as not ready. */
typedef struct slice_view {
    json_t *by_ip;  /* {"10.0.0.1": true/false} */
    json_t *by_pod; /* {"ns/name": true/false} */
    json_t *why;    /* {"ns/name" or ip: "EndpointSlice ns/name: ready=false ..."} */
} slice_view;

static bool cond_true(const json_t *conds, const char *c, bool dflt)
{
    const json_t *v = json_object_get(conds, c);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* ready wins over not ready: an endpoint is one if any slice lists it ready. */
static int note(json_t *map, const char *key, bool ready)
{
    const json_t *had = json_object_get(map, key);
    if (had && json_is_true(had))
        return 0;
    return json_object_set_new(map, key, json_boolean(ready));
}

static int note_address(slice_view *v, const json_t *ep, const char *ip, const char *slice_ns,
                        const char *slice_key, const json_t *pods, json_t *ignored)
{
    const json_t *conds = json_object_get(ep, "conditions");
    bool ready = cond_true(conds, "ready", true);
    const json_t *ref = json_object_get(ep, "targetRef");
    const char *rkind = json_string_value(json_object_get(ref, "kind"));
    const char *rname = json_string_value(json_object_get(ref, "name"));
    const char *rns = json_string_value(json_object_get(ref, "namespace"));
    char why[512];
    snprintf(why, sizeof why, "EndpointSlice %s: %s ready=%s serving=%s terminating=%s", slice_key,
             ip, ready ? "true" : "false", cond_true(conds, "serving", ready) ? "true" : "false",
             cond_true(conds, "terminating", false) ? "true" : "false");
    if (rkind && strcmp(rkind, "Pod") == 0 && rname) {
        char key[512];
        snprintf(key, sizeof key, "%s/%s", rns ? rns : slice_ns, rname);
        if (!json_object_get(pods, key)) /* istiod: skipped until the Pod arrives */
            return 0;
        if (note(v->by_pod, key, ready) ||
            (!ready && json_object_set_new(v->why, key, json_string(why))))
            return -1;
        return 0;
    }
    if (note(v->by_ip, ip, ready) || (!ready && json_object_set_new(v->why, ip, json_string(why))))
        return -1;
    /* an address that names no Pod: an endpoint istiod would serve, weft cannot (yet) */
    bool pod_has_ip = false;
    const char *k;
    json_t *p;
    json_object_foreach((json_t *)pods, k, p)
    {
        const char *pip = json_string_value(json_object_get(json_object_get(p, "status"), "podIP"));
        pod_has_ip |= pip && strcmp(pip, ip) == 0;
    }
    if (!pod_has_ip) {
        char msg[768];
        snprintf(msg, sizeof msg,
                 "EndpointSlice %s: address %s names no Pod: not served (weft makes Kubernetes "
                 "endpoints from Pods only)",
                 slice_key, ip);
        return json_array_append_new(ignored, json_string(msg));
    }
    return 0;
}

static int read_slice(slice_view *v, const char *key, const json_t *s, const json_t *pods,
                      json_t *ignored)
{
    const json_t *labels = json_object_get(json_object_get(s, "metadata"), "labels");
    const char *at = json_string_value(json_object_get(s, "addressType"));
    const char *ns = meta_str(s, "namespace");
    if (json_object_get(labels, LBL_MULTICLUSTER) || (at && strcmp(at, "FQDN") == 0) ||
        !json_object_get(labels, LBL_SERVICE_NAME))
        return 0;
    size_t i, j;
    const json_t *ep, *addr;
    json_array_foreach(json_object_get(s, "endpoints"), i, ep)
    {
        json_array_foreach(json_object_get(ep, "addresses"), j, addr)
        {
            const char *ip = json_string_value(addr);
            if (ip && note_address(v, ep, ip, ns ? ns : "", key, pods, ignored))
                return -1;
        }
    }
    return 0;
}

/* NULL when p is an endpoint, else why not (into buf). */
static const char *pod_not_endpoint(const slice_view *v, const char *key, const json_t *p,
                                    char *buf, size_t cap)
{
    const json_t *st = json_object_get(p, "status");
    const char *ip = json_string_value(json_object_get(st, "podIP"));
    const char *phase = json_string_value(json_object_get(st, "phase"));
    if (!ip || !*ip)
        return NULL; /* nothing to take away */
    if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
        return "deletionTimestamp set (terminating)";
    if (phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Succeeded"))) {
        snprintf(buf, cap, "phase %s", phase);
        return buf;
    }
    const json_t *r = json_object_get(v->by_pod, key);
    if (!r)
        r = json_object_get(v->by_ip, ip);
    if (r) {
        if (json_is_true(r))
            return NULL;
        const char *w = json_string_value(json_object_get(v->why, key));
        snprintf(buf, cap, "%s", w ? w : json_string_value(json_object_get(v->why, ip)));
        return buf;
    }
    const json_t *conds = json_object_get(st, "conditions");
    if (!json_array_size(conds))
        return NULL;
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && strcmp(t, "Ready") == 0)
            return s && strcmp(s, "True") == 0 ? NULL : "condition Ready is not True";
    }
    return "no Ready condition";
}

/* ---- discovery selectors (§2.5) ------------------------------------------------------------ */

/* The kinds discoverySelectors filter: istiod's registry and config kinds; Namespaces and
 * Nodes are cluster-scoped, Secrets and the mesh ConfigMap are read regardless (§2.1). */
static bool filtered_kind(const wf_kube_kind *k)
{
    return k->namespaced && strcmp(k->kind, "Secret") != 0 && strcmp(k->kind, "ConfigMap") != 0;
}

/* Does any selector of the sequence sel match the Namespace ns's labels? */
static bool ns_selected(const wf_node *sel, const json_t *ns)
{
    const json_t *labels = json_object_get(json_object_get(ns, "metadata"), "labels");
    wf_kv kv[256];
    wf_kvs kvs = {0, kv};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        if (kvs.n < sizeof kv / sizeof kv[0] && json_is_string(v))
            kv[kvs.n++] = (wf_kv){.key = k, .value = json_string_value(v)};
    }
    for (size_t i = 0; i < wf_seq_len(sel); i++)
        if (wf_label_selector_matches(wf_seq_at(sel, i), &kvs))
            return true;
    return false;
}

/* out->discovery: the namespaces discoverySelectors select ({"ns": true}), or NULL when the
 * MeshConfig sets none (every namespace). A MeshConfig that does not load selects everything
 * here: source_build.c reports it and keeps the last good one. */
static int take_discovery(wf_kube_docs *d, const json_t *namespaces)
{
    if (!d->mesh_text)
        return 0;
    wf_meshcfg *m = wf_meshcfg_new_default();
    const char *err = NULL;
    if (!m)
        return -1;
    const wf_node *sel = NULL;
    if (wf_meshcfg_load_text(m, d->mesh_name, d->mesh_text, d->mesh_len, &err) == 0)
        sel = wf_meshcfg_get(m, "discoverySelectors");
    int rc = 0;
    if (wf_seq_len(sel) > 0) {
        d->discovery = json_object();
        const char *k;
        json_t *ns;
        json_object_foreach((json_t *)namespaces, k, ns)
        {
            if (rc == 0 && d->discovery && ns_selected(sel, ns))
                rc = json_object_set_new(d->discovery, k, json_true());
        }
        rc = d->discovery ? rc : -1;
    }
    wf_meshcfg_free(m);
    return rc;
}

/* Is the object (key "ns/name") of kind k discovered? */
static bool discovered(const wf_kube_docs *d, const wf_kube_kind *k, const char *key)
{
    if (!d->discovery || !filtered_kind(k))
        return true;
    const char *slash = strchr(key, '/');
    char ns[256];
    if (!slash || (size_t)(slash - key) >= sizeof ns)
        return true;
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    return json_object_get(d->discovery, ns) != NULL;
}

/* ---- documents ----------------------------------------------------------------------------- */

static int push_doc(wf_kube_docs *d, size_t *cap, const wf_kube_kind *k, const char *key,
                    json_t *obj)
{
    if (d->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        wf_source_doc *nv = realloc(d->docs, nc * sizeof *nv);
        if (!nv)
            return -1;
        d->docs = nv;
        *cap = nc;
    }
    size_t nlen = strlen(k->kind) + strlen(key) + 8;
    char *name = malloc(nlen);
    char *txt = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    if (!name || !txt) {
        free(name);
        free(txt);
        return -1;
    }
    snprintf(name, nlen, "kube:%s/%s", k->kind, key);
    d->docs[d->n++] = (wf_source_doc){.name = name, .json = txt, .len = strlen(txt)};
    return 0;
}

static int take_mesh(wf_kube_docs *d, const json_t *cms, const char *system_ns)
{
    char key[256];
    snprintf(key, sizeof key, "%s/istio", system_ns);
    const json_t *cm = json_object_get(cms, key);
    const wf_kube_kind *k = wf_kube_kind_find("ConfigMap");
    if (!cm || !k)
        return 0;
    json_t *c = clean_copy(k, cm);
    size_t nlen = strlen(key) + 32;
    d->mesh_name = malloc(nlen);
    d->mesh_text = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(c);
    if (!d->mesh_name || !d->mesh_text)
        return -1;
    snprintf(d->mesh_name, nlen, "kube:ConfigMap/%s", key);
    d->mesh_len = strlen(d->mesh_text);
    return 0;
}

static int take_kind(wf_kube_docs *d, size_t *cap, const wf_kube_kind *k, const json_t *objs,
                     const slice_view *v)
{
    bool oom = false;
    size_t n;
    const char **keys = sorted_keys(objs, &n, &oom);
    int rc = oom ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!discovered(d, k, keys[i]))
            continue;
        json_t *c = clean_copy(k, json_object_get(objs, keys[i]));
        char why[768];
        const char *no = c && strcmp(k->kind, "Pod") == 0
                             ? pod_not_endpoint(v, keys[i], c, why, sizeof why)
                             : NULL;
        if (no && (json_object_del(json_object_get(c, "status"), "podIP") ||
                   json_object_set_new(d->not_ready, keys[i], json_string(no))))
            rc = -1;
        if (rc == 0 && (!c || push_doc(d, cap, k, keys[i], c)))
            rc = -1;
        json_decref(c);
    }
    free(keys);
    return rc;
}

int wf_kube_docs_make(const json_t *in, const char *system_ns, wf_kube_docs *out)
{
    memset(out, 0, sizeof *out);
    slice_view v = {json_object(), json_object(), json_object()};
    out->not_ready = json_object();
    out->ignored = json_array();
    size_t cap = 0, nk;
    int rc = v.by_ip && v.by_pod && v.why && out->not_ready && out->ignored ? 0 : -1;
    const json_t *pods = json_object_get(in, "Pod");
    const json_t *slices = json_object_get(in, "EndpointSlice");
    bool oom = false;
    if (rc == 0)
        rc = take_mesh(out, json_object_get(in, "ConfigMap"),
                       system_ns ? system_ns : "istio-system");
    if (rc == 0)
        rc = take_discovery(out, json_object_get(in, "Namespace"));
    size_t ns_;
    const char **skeys = sorted_keys(slices, &ns_, &oom);
    rc |= oom ? -1 : 0;
    const wf_kube_kind *slice_kind = wf_kube_kind_find("EndpointSlice");
    for (size_t i = 0; rc == 0 && i < ns_; i++)
        if (discovered(out, slice_kind, skeys[i]))
            rc = read_slice(&v, skeys[i], json_object_get(slices, skeys[i]), pods, out->ignored);
    free(skeys);
    const wf_kube_kind *kinds = wf_kube_kinds(&nk);
    for (size_t i = 0; rc == 0 && i < nk; i++) {
        const wf_kube_kind *k = &kinds[i];
        if (strcmp(k->kind, "EndpointSlice") == 0 || strcmp(k->kind, "ConfigMap") == 0)
            continue;
        rc = take_kind(out, &cap, k, json_object_get(in, k->kind), &v);
    }
    json_decref(v.by_ip);
    json_decref(v.by_pod);
    json_decref(v.why);
    if (rc)
        wf_kube_docs_free(out);
    return rc;
}
