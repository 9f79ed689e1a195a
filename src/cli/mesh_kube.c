/*
 * mesh_kube.c - weftctl reaching istiod and the proxies through the Kubernetes API server
 * (the cluster implementation of mesh_access.h; names resolved as kube_target.h says).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/kube_target.h"
#include "cli/mesh_access.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

#define API_TIMEOUT_MS 15000 /* istioctl's --kubeclient-timeout default */

typedef struct kube_mesh {
    wf_kube_client *client;
    char *istio_ns;
    int admin_port;
} kube_mesh;

static kube_mesh *km(wf_mesh *m)
{
    return m->priv;
}

/* GET path from the API server as JSON. Returns the document, or NULL with err: without prefix
 * an API error is its Status message, as client-go's errors read (`pods "x" not found`); with
 * prefix, the prefix and the client's whole error ("GET /api/v1/...: 401 Unauthorized: ...");
 * network errors always in full. *st when st. */
static json_t *api_get(wf_mesh *m, const char *path, const char *prefix, wf_kube_status *st,
                       wf_strbuf *err)
{
    wf_strbuf body = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wf_kube_status s = {0};
    json_t *doc = NULL;
    if (wf_kube_request(km(m)->client, "GET", path, NULL, -1, API_TIMEOUT_MS, &body, &s, &why) ==
        0) {
        json_error_t je;
        doc = json_loadb(wf_strbuf_cstr(&body), body.len, 0, &je);
        if (!doc)
            wf_strbuf_printf(&why, "GET %s: not JSON: %s", path, je.text);
    }
    if (!doc && s.reason[0] && !prefix) /* the API server's Status: its message, as client-go */
        wf_strbuf_puts(err, s.message);
    else if (!doc)
        wf_strbuf_printf(err, "%s%s", prefix ? prefix : "", wf_strbuf_cstr(&why));
    if (st)
        *st = s;
    wf_strbuf_free(&body);
    wf_strbuf_free(&why);
    return doc;
}

static const char *jstr2(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* ---- istiod ---------------------------------------------------------------------------------- */

/* The running istiod pods (a new PodList items array), or NULL with err. */
static json_t *istiods(wf_mesh *m, wf_strbuf *err)
{
    wf_strbuf q = WF_STRBUF_INIT;
    wf_kube_pods_query(km(m)->istio_ns, "app=istiod", "status.phase=Running", &q);
    json_t *list = api_get(m, wf_strbuf_cstr(&q), "unable to retrieve Pods: ", NULL, err);
    wf_strbuf_free(&q);
    if (!list)
        return NULL;
    json_t *items = json_incref(json_object_get(list, "items"));
    json_decref(list);
    if (json_array_size(items) == 0) {
        wf_strbuf_printf(err, "no running Istio pods in \"%s\"", km(m)->istio_ns);
        json_decref(items);
        return NULL;
    }
    return items;
}

/* One request through the pod proxy subresource. A Status answer (the API server's own error:
 * no such pod, unreachable pod) is an error; any other answer is the pod's, in *out. */
static int pod_proxy(wf_mesh *m, const char *ns, const char *pod, int port, const char *method,
                     const char *path, long timeout_ms, wf_http_resp *out, wf_strbuf *err)
{
    wf_strbuf p = WF_STRBUF_INIT, body = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wf_kube_status st = {0};
    wf_kube_pod_proxy_path(ns, pod, port, path, &p);
    int rc = wf_kube_request(km(m)->client, method, wf_strbuf_cstr(&p), NULL, -1, timeout_ms, &body,
                             &st, &why);
    if (rc == 0) {
        out->status = 200;
    } else if (st.code != 0 && !st.reason[0]) { /* the pod's own non-2xx answer */
        out->status = st.code;
        wf_strbuf_reset(&body);
        wf_strbuf_puts(&body, st.message);
        rc = 0;
    } else {
        wf_strbuf_puts(err, wf_strbuf_cstr(&why));
    }
    if (rc == 0) {
        out->len = body.len;
        out->body = wf_strbuf_take(&body);
        if (!out->body) {
            wf_strbuf_puts(err, "out of memory");
            rc = -1;
        }
    }
    wf_strbuf_free(&p);
    wf_strbuf_free(&body);
    wf_strbuf_free(&why);
    return rc;
}

static int answer_from(wf_mesh *m, const json_t *pod, const char *path, wf_mesh_answer *a,
                       wf_strbuf *err)
{
    const char *name = jstr2(pod, "metadata", "name");
    const char *ns = jstr2(pod, "metadata", "namespace");
    wf_http_resp r = {0};
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = -1;
    if (!name || !ns) {
        wf_strbuf_puts(&why, "pod without metadata.name or namespace");
    } else if (pod_proxy(m, ns, name, wf_kube_monitoring_port(pod), "GET", path, API_TIMEOUT_MS, &r,
                         &why) == 0) {
        json_error_t je;
        if (r.status != 200)
            wf_strbuf_printf(&why, "unexpected status code: %d", r.status);
        else if (!(a->doc = json_loadb(r.body, r.len, JSON_DECODE_ANY, &je)))
            wf_strbuf_printf(&why, "GET %s is not JSON: %s", path, je.text);
        else if (!(a->istiod = strdup(name)))
            wf_strbuf_puts(&why, "out of memory");
        else
            rc = 0;
    }
    if (rc != 0)
        wf_strbuf_printf(err, "istiod pod %s.%s: %s", name ? name : "?", ns ? ns : "?",
                         wf_strbuf_cstr(&why));
    wf_http_resp_free(&r);
    wf_strbuf_free(&why);
    return rc;
}

static int kube_pilots_get(wf_mesh *m, const char *path, wf_mesh_answer **out, size_t *n,
                           wf_strbuf *err)
{
    json_t *pods = istiods(m, err);
    if (!pods)
        return -1;
    size_t np = json_array_size(pods);
    wf_mesh_answer *a = calloc(np, sizeof *a);
    int rc = a ? 0 : -1;
    if (!a)
        wf_strbuf_puts(err, "out of memory");
    for (size_t i = 0; rc == 0 && i < np; i++) {
        rc = answer_from(m, json_array_get(pods, i), path, &a[i], err);
        *n = i + 1;
    }
    json_decref(pods);
    if (rc != 0) {
        wf_mesh_answers_free(a, *n);
        *n = 0;
        return -1;
    }
    *out = a;
    return 0;
}

/* ---- proxies --------------------------------------------------------------------------------- */

/* The pod name a workload target stands for (malloc'd), or NULL with err. */
static char *workload_pod(wf_mesh *m, const wf_kube_target *t, wf_strbuf *err)
{
    wf_strbuf path = WF_STRBUF_INIT, sel = WF_STRBUF_INIT, e = WF_STRBUF_INIT;
    char *pod = NULL;
    wf_kube_target_path(t, &path);
    json_t *obj = api_get(m, wf_strbuf_cstr(&path), NULL, NULL, &e), *list = NULL;
    if (!obj) {
        wf_strbuf_printf(err, "failed retrieving: %s in the \"%s\" namespace", wf_strbuf_cstr(&e),
                         t->ns);
    } else if (wf_kube_workload_selector(obj, t->workload->map_selector, &sel, &e) != 0) {
        wf_strbuf_printf(err, "\"%s/%s\" does not refer to a pod: %s", t->type, t->name,
                         wf_strbuf_cstr(&e));
    } else {
        wf_strbuf_reset(&path);
        wf_kube_pods_query(t->ns, wf_strbuf_cstr(&sel), NULL, &path);
        list = api_get(m, wf_strbuf_cstr(&path), "unable to retrieve Pods: ", NULL, err);
    }
    long i = list ? wf_kube_first_pod(json_object_get(list, "items")) : -1;
    if (list && i < 0)
        wf_strbuf_printf(err, "no pods match \"%s/%s\"", t->type, t->name);
    const char *name = i >= 0 ? jstr2(json_array_get(json_object_get(list, "items"), (size_t)i),
                                      "metadata", "name")
                              : NULL;
    if (name && !(pod = strdup(name)))
        wf_strbuf_puts(err, "out of memory");
    json_decref(obj);
    json_decref(list);
    wf_strbuf_free(&path);
    wf_strbuf_free(&sel);
    wf_strbuf_free(&e);
    return pod;
}

static int fill_ref(wf_mesh *m, const json_t *pod, wf_proxy_ref *out, wf_strbuf *err)
{
    const char *name = jstr2(pod, "metadata", "name"), *ns = jstr2(pod, "metadata", "namespace");
    const char *istio = json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"), "istio"));
    bool gw = istio && strstr(istio, "gateway");
    if (!name || !ns) {
        wf_strbuf_puts(err, "pod without metadata.name or namespace");
        return -1;
    }
    if (asprintf(&out->id, "%s.%s", name, ns) < 0)
        out->id = NULL;
    if (asprintf(&out->admin, "%s.%s:%d via the API server", name, ns, km(m)->admin_port) < 0)
        out->admin = NULL;
    out->pod = strdup(name);
    out->ns = strdup(ns);
    out->type = strdup(gw ? "router" : "sidecar");
    if (!out->id || !out->admin || !out->pod || !out->ns || !out->type) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

static int kube_find_proxy(wf_mesh *m, const char *name, const char *ns, wf_proxy_ref *out,
                           wf_strbuf *err)
{
    wf_kube_target t;
    if (wf_kube_target_parse(name, ns && *ns ? ns : m->default_ns, &t, err) != 0)
        return -1;
    char *podname = t.workload ? workload_pod(m, &t, err) : strdup(t.name);
    if (!podname && !t.workload)
        wf_strbuf_puts(err, "out of memory");
    json_t *pod = NULL;
    int rc = -1;
    if (podname) {
        wf_strbuf path = WF_STRBUF_INIT;
        wf_strbuf_printf(&path, "/api/v1/namespaces/%s/pods/%s", t.ns, podname);
        pod = api_get(m, wf_strbuf_cstr(&path), NULL, NULL, err);
        wf_strbuf_free(&path);
    }
    const char *phase = pod ? jstr2(pod, "status", "phase") : NULL;
    if (pod && (!phase || strcmp(phase, "Running") != 0))
        wf_strbuf_printf(err, "pod %s.%s: pod is not running. Status=%s", podname, t.ns,
                         phase ? phase : "");
    else if (pod)
        rc = fill_ref(m, pod, out, err);
    if (rc != 0)
        wf_proxy_ref_free(out);
    json_decref(pod);
    free(podname);
    wf_kube_target_free(&t);
    return rc;
}

static int kube_select(wf_mesh *m, const char *selector, const char *ns, wf_proxy_ref **out,
                       size_t *n, wf_strbuf *err)
{
    wf_strbuf q = WF_STRBUF_INIT, e = WF_STRBUF_INIT;
    wf_kube_pods_query(ns && *ns ? ns : m->default_ns, selector, NULL, &q);
    json_t *list = api_get(m, wf_strbuf_cstr(&q), NULL, NULL, &e);
    wf_strbuf_free(&q);
    if (!list) {
        wf_strbuf_printf(err, "not able to locate pod with selector %s: %s", selector,
                         wf_strbuf_cstr(&e));
        wf_strbuf_free(&e);
        return -1;
    }
    wf_strbuf_free(&e);
    const json_t *items = json_object_get(list, "items");
    size_t np = json_array_size(items);
    int rc = 0;
    if (np == 0) {
        wf_strbuf_puts(err, "no pods found");
        rc = -1;
    } else if (!(*out = calloc(np, sizeof **out))) {
        wf_strbuf_puts(err, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < np; i++) {
        rc = fill_ref(m, json_array_get(items, i), &(*out)[i], err);
        *n = i + 1;
    }
    if (rc != 0) {
        for (size_t i = 0; *out && i < *n; i++)
            wf_proxy_ref_free(&(*out)[i]);
        free(*out);
        *out = NULL;
        *n = 0;
    }
    json_decref(list);
    return rc;
}

static int kube_proxy_do(wf_mesh *m, const wf_proxy_ref *ref, const char *method, const char *path,
                         long timeout_ms, wf_http_resp *out, wf_strbuf *err)
{
    return pod_proxy(m, ref->ns, ref->pod, km(m)->admin_port, method, path, timeout_ms, out, err);
}

static int kube_pilot_do(wf_mesh *m, const char *method, const char *path, long timeout_ms,
                         wf_http_resp *out, wf_mesh_pilot *who, wf_strbuf *err)
{
    json_t *pods = istiods(m, err);
    if (!pods)
        return -1;
    const json_t *pod = json_array_get(pods, 0);
    const char *name = jstr2(pod, "metadata", "name"), *ns = jstr2(pod, "metadata", "namespace");
    int rc = -1;
    if (!name || !ns)
        wf_strbuf_puts(err, "istiod pod without metadata.name or namespace");
    else if (!(who->pod = strdup(name)) || !(who->ns = strdup(ns)))
        wf_strbuf_puts(err, "out of memory");
    else if (pod_proxy(m, ns, name, who->port = wf_kube_monitoring_port(pod), method, path,
                       timeout_ms, out, err) == 0)
        rc = 0;
    json_decref(pods);
    return rc;
}

static void kube_free(wf_mesh *m)
{
    kube_mesh *k = km(m);
    if (!k)
        return;
    wf_kube_client_free(k->client);
    free(k->istio_ns);
    free(k);
}

static const wf_mesh_impl KUBE = {kube_pilots_get, kube_find_proxy, kube_select,
                                  kube_proxy_do,   kube_pilot_do,   kube_free};

static int admin_port(const char *s, int *port, wf_strbuf *err)
{
    *port = 15000;
    if (!s)
        return 0;
    char *end;
    long p = strtol(s, &end, 10);
    if (!*s || *end || p <= 0 || p > 65535) {
        wf_strbuf_printf(err, "invalid argument \"%s\" for \"--proxy-admin-port\" flag", s);
        return -1;
    }
    *port = (int)p;
    return 0;
}

struct wf_kube_client *wf_mesh_kube_client(wf_mesh *m)
{
    return m && m->mode == WF_MESH_CLUSTER ? km(m)->client : NULL;
}

int wf_mesh_open_kube(const wf_mesh_opts *o, wf_mesh **out, wf_strbuf *err)
{
    *out = NULL;
    wf_kube_config *cfg = NULL;
    wf_mesh *m = calloc(1, sizeof *m);
    kube_mesh *k = calloc(1, sizeof *k);
    if (!m || !k) {
        free(m);
        free(k);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    m->impl = &KUBE;
    m->mode = WF_MESH_CLUSTER;
    m->priv = k;
    int rc = admin_port(o->admin_port, &k->admin_port, err);
    if (rc == 0)
        rc = wf_kubeconfig_load(o->kubeconfig, o->context, &cfg, err);
    if (rc == 0 &&
        (!(m->default_ns = strdup(cfg->ns)) ||
         !(k->istio_ns = strdup(o->istio_ns && *o->istio_ns ? o->istio_ns : "istio-system")))) {
        wf_strbuf_puts(err, "out of memory");
        wf_kube_config_free(cfg);
        rc = -1;
    }
    if (rc == 0)
        rc = wf_kube_client_new(cfg, &k->client, err); /* takes cfg */
    if (rc != 0) {
        wf_mesh_free(m);
        return -1;
    }
    *out = m;
    return 0;
}
