/*
 * inject_pod.c - the injected pod (kube/inject.h wf_inject_pod; Istio's
 * pkg/kube/inject/inject.go RunTemplate/IntoResourceFile, webhook.go injectPod,
 * postProcessPod, applyPrometheusMerge, reorderPod; ../shared/reference/kubernetes.md §3.4):
 * the pod's own annotations are validated first (inject_annotations.c), the default
 * template's containers and volumes are added (inject_proxy.c), app probes are rewritten
 * (inject_probes.h), labels and annotations set, and the containers ordered:
 * istio-init first among the init containers; istio-proxy right after it as a native sidecar,
 * else last among the containers (first with holdApplicationUntilProxyStarts). A pod's own
 * istio-proxy or istio-init container (without the status annotation: not injected yet)
 * overrides the template's fields (Istio's reinsertOverrides: strategic merge by name); the
 * pod never gets two containers of one name.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/inject_internal.h"
#include "kube/inject_probes.h"

/* ---- owner ---------------------------------------------------------------------------------- */

static char *trim_dash(const char *s)
{
    char *d = strdup(s ? s : "");
    size_t n = d ? strlen(d) : 0;
    while (n && d[n - 1] == '-')
        d[--n] = '\0';
    return d;
}

/* Istio's GetDeployMetaFromPod: the controller owner; a ReplicaSet named <deploy>-<hash> is
 * its Deployment, a Job named <cron>-<8..10 digits> its CronJob; no owner: the pod. The
 * strings live in *keep (freed by the caller). */
static void owner_from_pod(const json_t *pod, wf_inject_owner *o, char **keep)
{
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *refs = json_object_get(md, "ownerReferences");
    const json_t *ref = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(refs, i, r)
    {
        if (json_is_true(json_object_get(r, "controller")) || !ref)
            ref = r;
    }
    *keep = NULL;
    if (!ref) {
        const char *n = json_string_value(json_object_get(md, "name"));
        *keep = trim_dash(n && *n ? n : json_string_value(json_object_get(md, "generateName")));
        *o = (wf_inject_owner){"v1", "Pod", *keep};
        return;
    }
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *api = json_string_value(json_object_get(ref, "apiVersion"));
    *keep = strdup(name ? name : "");
    *o = (wf_inject_owner){api ? api : "", kind ? kind : "", *keep};
    if (!*keep || !kind)
        return;
    size_t n = strlen(*keep);
    if (strcmp(kind, "ReplicaSet") == 0) {
        const char *hash = wf_inj_label(pod, "pod-template-hash");
        size_t h = hash ? strlen(hash) : 0;
        if (h && n > h + 1 && (*keep)[n - h - 1] == '-' && strcmp(*keep + n - h, hash) == 0) {
            (*keep)[n - h - 1] = '\0';
            *o = (wf_inject_owner){"apps/v1", "Deployment", *keep};
        }
    } else if (strcmp(kind, "Job") == 0) {
        size_t d = 0;
        while (d < n && isdigit((unsigned char)(*keep)[n - 1 - d]))
            d++;
        if (d >= 8 && d <= 10 && n > d + 1 && (*keep)[n - d - 1] == '-') {
            (*keep)[n - d - 1] = '\0';
            *o = (wf_inject_owner){"batch/v1", "CronJob", *keep};
        }
    }
}

/* ---- the pod ----------------------------------------------------------------------------------
 */

static json_t *obj_at(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (json_is_object(o))
        return o;
    o = json_object();
    return o && json_object_set_new(parent, key, o) == 0 ? o : NULL;
}

static json_t *arr_at(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (json_is_array(o))
        return o;
    o = json_array();
    return o && json_object_set_new(parent, key, o) == 0 ? o : NULL;
}

static int set_default(json_t *map, const char *key, const char *value)
{
    return json_object_get(map, key) ? 0 : json_object_set_new(map, key, json_string(value));
}

static int labels(inj_ctx *x, json_t *md)
{
    json_t *l = obj_at(md, "labels");
    if (!l)
        return -1;
    const char *name = json_string_value(json_object_get(l, "app.kubernetes.io/name"));
    if (!name)
        name = json_string_value(json_object_get(l, "app"));
    if (!name)
        name = x->owner.name ? x->owner.name : "";
    char cn[64];
    snprintf(cn, sizeof cn, "%s", name);
    for (size_t n = strlen(cn); n && cn[n - 1] == '-'; n--)
        cn[n - 1] = '\0';
    const char *rev = json_string_value(json_object_get(l, "app.kubernetes.io/version"));
    if (!rev)
        rev = json_string_value(json_object_get(l, "version"));
    return set_default(l, "security.istio.io/tlsMode", "istio") ||
                   set_default(l, "service.istio.io/canonical-name", cn) ||
                   set_default(l, "service.istio.io/canonical-revision", rev ? rev : "latest")
               ? -1
               : 0;
}

static json_t *names(const json_t *arr, const char *only)
{
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (out && n && (!only || strcmp(n, only) == 0))
            json_array_append_new(out, json_string(n));
    }
    return out;
}

static json_t *volumes(const inj_ctx *x)
{
    json_t *v = json_pack(
        "[{s:s,s:{}},{s:s,s:{}},{s:s,s:{}},{s:s,s:{s:s}},{s:s,s:{}},"
        "{s:s,s:{s:[{s:s,s:{s:s}},{s:s,s:{s:s}}]}},"
        "{s:s,s:{s:[{s:{s:s,s:i,s:s}}]}},{s:s,s:{s:s}},{s:s,s:{s:s,s:b}}]",
        "name", "workload-socket", "emptyDir", "name", "credential-socket", "emptyDir", "name",
        "workload-certs", "emptyDir", "name", "istio-envoy", "emptyDir", "medium", "Memory", "name",
        "istio-data", "emptyDir", "name", "istio-podinfo", "downwardAPI", "items", "path", "labels",
        "fieldRef", "fieldPath", "metadata.labels", "path", "annotations", "fieldRef", "fieldPath",
        "metadata.annotations", "name", "istio-token", "projected", "sources",
        "serviceAccountToken", "audience",
        /* Istio's template: audience {{ .Values.global.sds.token.aud }} (chart default) */
        wf_inj_value_str(x->cfg, "global.sds.token.aud", "istio-ca"), "expirationSeconds", 43200,
        "path", "istio-token", "name", "istiod-ca-cert", "configMap", "name", "istio-ca-root-cert",
        "name", "istio-ca-crl", "configMap", "name", "istio-ca-crl", "optional", 1);
    const char *s = wf_inj_annotation(x->pod, "sidecar.istio.io/userVolume");
    json_t *user = s ? json_loads(s, 0, NULL) : NULL;
    const char *k;
    json_t *e;
    json_object_foreach(user, k, e)
    {
        json_t *c = json_deep_copy(e);
        if (!v || !c || json_object_set_new(c, "name", json_string(k)) != 0 ||
            json_array_append_new(v, c) != 0) {
            json_decref(v), v = NULL;
            break;
        }
    }
    json_decref(user);
    return v;
}

static int set_env(json_t *container, const char *name, const char *value)
{
    json_t *env = arr_at(container, "env");
    size_t i;
    json_t *e;
    if (!env)
        return -1;
    json_array_foreach(env, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, name) == 0)
            return json_array_set_new(env, i, json_pack("{s:s,s:s}", "name", name, "value", value));
    }
    return json_array_append_new(env, json_pack("{s:s,s:s}", "name", name, "value", value));
}

/* ISTIO_KUBE_APP_PROBERS on the proxy and the app probes rewritten (when on). */
static int probes(inj_ctx *x, json_t *proxy, json_t *containers)
{
    int on =
        wf_inject_parse_bool(wf_inj_annotation(x->pod, "sidecar.istio.io/rewriteAppHTTPProbers"));
    if (on < 0)
        on = wf_inj_value_bool(x->cfg, "sidecarInjectorWebhook.rewriteAppHTTPProbe", true);
    if (!on)
        return 0;
    wf_probe_opts o = {.lifecycle = true, .status_port = x->status_port};
    char *probers = NULL;
    if (wf_inject_app_probers(containers, &o, &probers) != 0)
        return -1;
    int rc = probers ? set_env(proxy, "ISTIO_KUBE_APP_PROBERS", probers) : 0;
    free(probers);
    return rc == 0 && wf_inject_rewrite_probes(containers, &o) >= 0 ? 0 : -1;
}

static int prometheus(inj_ctx *x, json_t *proxy, json_t *an)
{
    const json_t *orig = json_object_get(json_object_get(x->pod, "metadata"), "annotations");
    const json_t *m = json_object_get(x->cfg->mesh, "enablePrometheusMerge");
    bool mesh_merge = !json_is_false(m);
    if (!wf_inject_prometheus_merge(orig, mesh_merge, x->status_port))
        return 0;
    char *env = NULL;
    if (wf_inject_prometheus_env(orig, mesh_merge, x->status_port, true, &env) != 0)
        return -1;
    int rc = env ? set_env(proxy, "ISTIO_PROMETHEUS_ANNOTATIONS", env) : 0;
    free(env);
    char sp[16];
    snprintf(sp, sizeof sp, "%d", x->status_port);
    return rc || json_object_set_new(an, "prometheus.io/port", json_string(sp)) ||
                   json_object_set_new(an, "prometheus.io/path",
                                       json_string("/stats/prometheus")) ||
                   json_object_set_new(an, "prometheus.io/scrape", json_string("true"))
               ? -1
               : 0;
}

static int annotations(inj_ctx *x, json_t *md, json_t *proxy, json_t *spec)
{
    json_t *an = obj_at(md, "annotations");
    if (!an)
        return -1;
    const char *rev = wf_inj_value_str(x->cfg, "revision", "");
    int rc = json_object_set_new(an, "istio.io/rev", json_string(*rev ? rev : "default"));
    const json_t *apps = json_object_get(json_object_get(x->pod, "spec"), "containers");
    const char *first = json_string_value(json_object_get(json_array_get(apps, 0), "name"));
    if (first) {
        rc |= set_default(an, "kubectl.kubernetes.io/default-container", first);
        rc |= set_default(an, "kubectl.kubernetes.io/default-logs-container", first);
    }
    rc |= prometheus(x, proxy, an);
    const char *k;
    json_t *v;
    json_object_foreach(x->cfg->injected_annotations, k, v) rc |= json_object_set(an, k, v);
    json_t *status = json_object();
    (void)spec;
    json_t *inits = x->native ? json_pack("[s,s]", "istio-init", "istio-proxy")
                              : json_pack("[s]", "istio-init");
    json_t *ctrs = x->native ? json_null() : json_pack("[s]", "istio-proxy");
    json_t *vols = volumes(x), *vnames = vols ? names(vols, NULL) : NULL;
    json_decref(vols);
    json_t *secrets = names(wf_inj_value(x->cfg, "global.imagePullSecrets"), NULL);
    if (secrets && json_array_size(secrets) == 0)
        json_decref(secrets), secrets = json_null();
    if (!status || !inits || !ctrs || !vnames || !secrets ||
        json_object_set_new(status, "initContainers", inits) ||
        json_object_set_new(status, "containers", ctrs) ||
        json_object_set_new(status, "volumes", vnames) ||
        json_object_set_new(status, "imagePullSecrets", secrets) ||
        json_object_set_new(status, "revision", json_string(*rev ? rev : "default"))) {
        json_decref(status);
        return -1;
    }
    char *text = json_dumps(status, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(status);
    rc |= text ? json_object_set_new(an, "sidecar.istio.io/status", json_string(text)) : -1;
    free(text);
    return rc ? -1 : 0;
}

static int pull_secrets(inj_ctx *x, json_t *spec)
{
    const json_t *s = wf_inj_value(x->cfg, "global.imagePullSecrets");
    if (!json_array_size(s))
        return 0;
    json_t *arr = arr_at(spec, "imagePullSecrets");
    size_t i;
    json_t *e;
    json_array_foreach(s, i, e)
    {
        const char *n = json_is_string(e) ? json_string_value(e)
                                          : json_string_value(json_object_get(e, "name"));
        if (!arr || (n && json_array_append_new(arr, json_pack("{s:s}", "name", n)) != 0))
            return -1;
    }
    return 0;
}

static int apply_path_env(json_t *proxy, const json_t *path_env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)path_env, k, v)
    {
        if (json_is_string(v) && set_env(proxy, k, json_string_value(v)) != 0)
            return -1;
    }
    return 0;
}

/* ---- the pod's own istio-proxy / istio-init: overrides (Istio's reinsertOverrides) ---------- */

/* The strategic-merge key of a container list field (Kubernetes' patchMergeKey), NULL for a
 * list that is replaced. */
static const char *merge_key(const char *field)
{
    static const char *const keys[][2] = {{"env", "name"},
                                          {"ports", "containerPort"},
                                          {"volumeMounts", "mountPath"},
                                          {"volumeDevices", "devicePath"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(field, keys[i][0]) == 0)
            return keys[i][1];
    return NULL;
}

static int overlay(json_t *dst, const json_t *src);

static int overlay_list(json_t *dst, const json_t *src, const char *key)
{
    size_t i, j;
    json_t *s, *d;
    json_array_foreach(src, i, s)
    {
        json_t *found = NULL, *sk = json_object_get(s, key);
        json_array_foreach(dst, j, d) if (!found && sk && json_equal(json_object_get(d, key), sk))
            found = d;
        int rc = found && json_is_object(s) ? overlay(found, s)
                                            : json_array_append_new(dst, json_deep_copy(s));
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* src strategic-merged over dst (corev1.Container's patch strategy): maps merged, the keyed
 * lists merged by their key, other values replaced; null deletes. */
static int overlay(json_t *dst, const json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v)
    {
        json_t *d = json_object_get(dst, k);
        const char *key = merge_key(k);
        int rc;
        if (json_is_null(v))
            rc = json_object_del(dst, k) == 0 || !d ? 0 : -1;
        else if (json_is_object(v) && json_is_object(d))
            rc = overlay(d, v);
        else if (key && json_is_array(v) && json_is_array(d))
            rc = overlay_list(d, v, key);
        else
            rc = json_object_set_new(dst, k, json_deep_copy(v));
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* The pod's containers named name (in containers or initContainers) leave the pod; the first
 * is laid over the template's container tmpl, as Istio's injector applies a pod's own
 * istio-proxy / istio-init as overrides of the template's (never two of one name). */
static void warn_override(json_t *warnings, const char *name, const json_t *c)
{
    char keys[512] = "";
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)c, k, v)
    {
        if (strcmp(k, "name") != 0 && n < sizeof keys)
            n += (size_t)snprintf(keys + n, sizeof keys - n, "%s%s", n ? ", " : "", k);
    }
    wf_inj_warn(warnings,
                "the pod already has a container %s (and no sidecar.istio.io/status annotation): "
                "its fields override the injected one's, as Istio's injector does (%s)",
                name, n ? keys : "no fields");
}

static int take_override(json_t *spec, const char *name, json_t *tmpl, json_t *warnings)
{
    static const char *const lists[] = {"initContainers", "containers"};
    bool applied = false;
    for (size_t l = 0; l < 2; l++) {
        json_t *arr = json_object_get(spec, lists[l]);
        for (size_t i = json_array_size(arr); i-- > 0;) {
            json_t *c = json_array_get(arr, i);
            const char *n = json_string_value(json_object_get(c, "name"));
            if (!n || strcmp(n, name) != 0)
                continue;
            json_incref(c);
            json_array_remove(arr, i);
            if (!applied)
                warn_override(warnings, name, c);
            int rc = applied ? 0 : overlay(tmpl, c);
            applied = true;
            json_decref(c);
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

static int build(inj_ctx *x, const json_t *path_env)
{
    json_t *md = obj_at(x->out, "metadata"), *spec = obj_at(x->out, "spec");
    json_t *containers = spec ? arr_at(spec, "containers") : NULL;
    json_t *proxy = wf_inj_proxy_container(x), *init = wf_inj_init_container(x);
    json_t *vols = volumes(x);
    int rc = md && spec && containers && proxy && init && vols ? 0 : -1;
    if (rc == 0)
        rc = take_override(spec, "istio-proxy", proxy, x->warnings);
    if (rc == 0)
        rc = take_override(spec, "istio-init", init, x->warnings);
    if (rc == 0)
        rc = probes(x, proxy, containers);
    if (rc == 0)
        rc = apply_path_env(proxy, path_env);
    if (rc == 0)
        rc = labels(x, md);
    /* annotations before the proxy joins the pod: it gets ISTIO_PROMETHEUS_ANNOTATIONS */
    if (rc == 0)
        rc = annotations(x, md, proxy, spec);
    json_t *inits = rc == 0 ? arr_at(spec, "initContainers") : NULL;
    if (rc == 0 && inits) {
        rc = json_array_insert(inits, 0, init);
        if (rc == 0 && x->native)
            rc = json_array_insert(inits, 1, proxy);
    } else {
        rc = -1;
    }
    if (rc == 0 && !x->native)
        rc = wf_inj_hold_application(x) ? json_array_insert(containers, 0, proxy)
                                        : json_array_append(containers, proxy);
    if (rc == 0)
        rc = json_array_extend(arr_at(spec, "volumes"), vols);
    if (rc == 0)
        rc = pull_secrets(x, spec);
    json_decref(proxy);
    json_decref(init);
    json_decref(vols);
    return rc;
}

int wf_inj_pod(const wf_inject_config *cfg, const json_t *pod, const char *ns,
               const wf_inject_owner *owner, const json_t *path_env, json_t **out, json_t *warnings,
               wf_strbuf *why)
{
    *out = NULL;
    const char *pns =
        json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
    if (!ns || !*ns)
        ns = pns && *pns ? pns : "default";
    const char *skip = NULL;
    if (!json_is_object(pod)) {
        wf_strbuf_puts(why, "injection failed: the object is not a Pod");
        return -1;
    }
    if (!wf_inj_wanted(cfg, ns, pod, &skip, warnings)) {
        wf_strbuf_puts(why, skip ? skip : "not injected");
        return 0;
    }
    if (wf_inj_validate_annotations(pod, why) != 0)
        return -1;
    wf_inj_report_annotations(pod, warnings);
    inj_ctx x = {.cfg = cfg, .pod = pod, .ns = ns, .warnings = warnings, .why = why};
    if (!(x.proxy_config = wf_inj_proxy_config(cfg, pod, warnings, why))) {
        if (why->len == 0)
            wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    char *keep = NULL;
    if (owner)
        x.owner = *owner;
    else
        owner_from_pod(pod, &x.owner, &keep);
    const char *sp = wf_inj_annotation(pod, "status.sidecar.istio.io/port");
    json_t *pcs = json_object_get(x.proxy_config, "statusPort");
    x.status_port = sp ? atoi(sp)
                    : json_is_integer(pcs)
                        ? (int)json_integer_value(pcs)
                        : (int)wf_inj_value_int(cfg, "global.proxy.statusPort", 15020);
    int nat = wf_inject_parse_bool(wf_inj_annotation(pod, "sidecar.istio.io/nativeSidecar"));
    x.native = nat < 0 ? cfg->native_sidecars : nat == 1;
    x.out = json_deep_copy(pod);
    int rc = x.out ? build(&x, path_env) : -1;
    free(keep);
    json_decref(x.proxy_config);
    if (rc != 0) {
        json_decref(x.out);
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    *out = x.out;
    return 1;
}

int wf_inject_pod(const wf_inject_config *cfg, const json_t *pod, const char *ns,
                  const wf_inject_owner *owner, json_t **out, json_t *warnings, wf_strbuf *why)
{
    return wf_inj_pod(cfg, pod, ns, owner, NULL, out, warnings, why);
}
