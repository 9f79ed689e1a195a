/*
 * mesh_access.c - the choice of local mesh or cluster, the dispatch, and the local
 * implementation: direct HTTP to weft-pilot and to proxies' admin addresses (mesh_access.h).
 */
#include "cli/mesh_access.h"

#include <stdlib.h>
#include <string.h>

wf_mesh_mode wf_mesh_choose(const char *pilot, const char *kubeconfig, const char *context,
                            const char *env_kubeconfig)
{
    if (pilot)
        return WF_MESH_LOCAL;
    if (kubeconfig || context || (env_kubeconfig && *env_kubeconfig))
        return WF_MESH_CLUSTER;
    return WF_MESH_LOCAL;
}

/* ---- local ----------------------------------------------------------------------------------- */

static const char *local_pilot(const wf_mesh *m)
{
    return m->priv ? (const char *)m->priv : WF_DEFAULT_PILOT;
}

static int local_pilots_get(wf_mesh *m, const char *path, wf_mesh_answer **out, size_t *n,
                            wf_strbuf *err)
{
    json_t *doc = NULL;
    if (wf_pilot_get_json(local_pilot(m), path, &doc, err) != 0)
        return -1;
    wf_mesh_answer *a = calloc(1, sizeof *a);
    if (!a || !(a->istiod = strdup("weft-pilot"))) {
        free(a);
        json_decref(doc);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    a->doc = doc;
    *out = a;
    *n = 1;
    return 0;
}

static int local_find_proxy(wf_mesh *m, const char *name, const char *ns, wf_proxy_ref *out,
                            wf_strbuf *err)
{
    return wf_proxy_find(local_pilot(m), name, ns, out, err);
}

static int local_proxy_do(wf_mesh *m, const wf_proxy_ref *ref, const char *method, const char *path,
                          long timeout_ms, wf_http_resp *out, wf_strbuf *err)
{
    (void)m;
    if (!ref->admin) {
        wf_strbuf_printf(err, "proxy %s has no admin address (WEFT_ADMIN)", ref->id);
        return -1;
    }
    return wf_http_request(method, ref->admin, path, timeout_ms, out, err);
}

static int local_select(wf_mesh *m, const char *selector, const char *ns, wf_proxy_ref **out,
                        size_t *n, wf_strbuf *err)
{
    (void)m, (void)ns, (void)out, (void)n;
    wf_strbuf_printf(err,
                     "label selector %s: weft-pilot does not know pods' labels; select pods by "
                     "label in a cluster (--kubeconfig or --context), or name the pod",
                     selector);
    return -1;
}

static int local_pilot_do(wf_mesh *m, const char *method, const char *path, long timeout_ms,
                          wf_http_resp *out, wf_mesh_pilot *who, wf_strbuf *err)
{
    if (!(who->addr = strdup(local_pilot(m)))) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return wf_http_request(method, who->addr, path, timeout_ms, out, err);
}

static void local_free(wf_mesh *m)
{
    free(m->priv);
}

static const wf_mesh_impl LOCAL = {local_pilots_get, local_find_proxy, local_select,
                                   local_proxy_do,   local_pilot_do,   local_free};

static int open_local(const wf_mesh_opts *o, wf_mesh **out, wf_strbuf *err)
{
    wf_mesh *m = calloc(1, sizeof *m);
    if (!m || !(m->default_ns = strdup("default")) || (o->pilot && !(m->priv = strdup(o->pilot)))) {
        if (m)
            free(m->default_ns);
        free(m);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    m->impl = &LOCAL;
    m->mode = WF_MESH_LOCAL;
    *out = m;
    return 0;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

int wf_mesh_open(const wf_mesh_opts *o, wf_mesh **out, wf_strbuf *err)
{
    *out = NULL;
    if (wf_mesh_choose(o->pilot, o->kubeconfig, o->context, getenv("KUBECONFIG")) ==
        WF_MESH_CLUSTER)
        return wf_mesh_open_kube(o, out, err);
    return open_local(o, out, err);
}

void wf_mesh_free(wf_mesh *m)
{
    if (!m)
        return;
    m->impl->free(m);
    free(m->default_ns);
    free(m);
}

int wf_mesh_pilots_get(wf_mesh *m, const char *path, wf_mesh_answer **out, size_t *n,
                       wf_strbuf *err)
{
    *out = NULL;
    *n = 0;
    return m->impl->pilots_get(m, path, out, n, err);
}

void wf_mesh_answers_free(wf_mesh_answer *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        free(a[i].istiod);
        json_decref(a[i].doc);
    }
    free(a);
}

int wf_mesh_pilot_get_json(wf_mesh *m, const char *path, json_t **out, wf_strbuf *err)
{
    wf_mesh_answer *a;
    size_t n;
    *out = NULL;
    if (wf_mesh_pilots_get(m, path, &a, &n, err) != 0)
        return -1;
    *out = json_incref(a[0].doc);
    wf_mesh_answers_free(a, n);
    return 0;
}

int wf_mesh_find_proxy(wf_mesh *m, const char *name, const char *ns, wf_proxy_ref *out,
                       wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    return m->impl->find_proxy(m, name, ns, out, err);
}

int wf_mesh_select_proxies(wf_mesh *m, const char *selector, const char *ns, wf_proxy_ref **out,
                           size_t *n, wf_strbuf *err)
{
    *out = NULL;
    *n = 0;
    return m->impl->select_proxies(m, selector, ns, out, n, err);
}

int wf_mesh_pilot_do(wf_mesh *m, const char *method, const char *path, long timeout_ms,
                     wf_http_resp *out, wf_mesh_pilot *who, wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    memset(who, 0, sizeof *who);
    return m->impl->pilot_do(m, method, path, timeout_ms, out, who, err);
}

void wf_mesh_pilot_free(wf_mesh_pilot *who)
{
    free(who->addr);
    free(who->pod);
    free(who->ns);
    memset(who, 0, sizeof *who);
}

int wf_mesh_proxy_do(wf_mesh *m, const wf_proxy_ref *ref, const char *method, const char *path,
                     long timeout_ms, wf_http_resp *out, wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    return m->impl->proxy_do(m, ref, method, path, timeout_ms, out, err);
}
