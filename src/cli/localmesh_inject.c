/*
 * localmesh_inject.c - what Istio's sidecar injector adds to a sidecar's environment that
 * pilot-agent reads (localmesh_internal.h: lm_inject_env), computed by the injector's own code
 * (kube/inject_probes.h) on the workload's pod template:
 *
 * ISTIO_KUBE_APP_PROBERS: as the injector sees a pod the API server has defaulted (path "/",
 * scheme "HTTP", timeoutSeconds 1), with host the manifest's, else the address the app listens
 * on in the local mesh (the pod localhost beside a sidecar), which is where Istio's agent
 * reaches the app at the pod IP, past its own sidecar. The template annotation
 * sidecar.istio.io/rewriteAppHTTPProbers: "false" turns rewriting off.
 *
 * ISTIO_PROMETHEUS_ANNOTATIONS: with MeshConfig enablePrometheusMerge (default true).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/localmesh_internal.h"
#include "kube/inject_probes.h"
#include "model/node_json.h"

static json_t *containers_json(const wf_workload *w)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < w->spec.ncontainers; i++)
        if (json_array_append_new(arr, wf_node_to_json(w->spec.containers[i].node)) != 0)
            json_decref(arr), arr = NULL;
    return arr;
}

static json_t *annotations_json(const wf_kvs *an)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < an->n; i++)
        if (an->items[i].value &&
            json_object_set_new(o, an->items[i].key, json_string(an->items[i].value)) != 0)
            json_decref(o), o = NULL;
    return o;
}

static int set_env(wf_lm_plan *p, lm_strv *env, const char *name, char *text)
{
    int rc = text ? lm_strv_setenv(&p->arena, env, name, text) : 0;
    free(text);
    return rc;
}

int lm_inject_env(wf_lm_plan *p, const wf_node *mesh, const wf_resource *r, const char *app_host,
                  lm_strv *env)
{
    const wf_workload *w = r ? r->t.workload : NULL;
    if (!w)
        return 0;
    char *probers = NULL, *prom = NULL;
    json_t *an = annotations_json(&w->template_annotations);
    int rc = an ? 0 : -1;
    if (rc == 0 && wf_inject_parse_bool(json_string_value(
                       json_object_get(an, "sidecar.istio.io/rewriteAppHTTPProbers"))) != 0) {
        json_t *cs = containers_json(w);
        wf_probe_opts o = {.host = app_host, .api_defaults = true};
        rc = cs ? wf_inject_app_probers(cs, &o, &probers) : -1;
        json_decref(cs);
    }
    bool mesh_merge = true;
    wf_node_bool(wf_map_get(mesh, "enablePrometheusMerge"), &mesh_merge);
    if (rc == 0)
        rc = wf_inject_prometheus_env(an, mesh_merge, 0, false, &prom);
    json_decref(an);
    if (set_env(p, env, "ISTIO_KUBE_APP_PROBERS", probers) != 0)
        rc = -1;
    if (set_env(p, env, "ISTIO_PROMETHEUS_ANNOTATIONS", prom) != 0)
        rc = -1;
    return rc;
}
