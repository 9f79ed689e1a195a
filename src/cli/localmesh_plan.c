/*
 * localmesh_plan.c - the local mesh's pods and processes from the manifests in DIR
 * (localmesh_plan.h). Workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet)
 * become pods named as Kubernetes names them; the ingress gateway is added unless DIR has a
 * workload labelled istio: ingressgateway.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/localmesh_dns_relay.h"
#include "cli/localmesh_internal.h"
#include "cli/localmesh_netns.h"
#include "analysis/an_annotations_util.h"
#include "cli/localmesh_sys.h"
#include "model/kube_expand.h"
#include "model/protocol.h"
#include "model/unimplemented.h"

#define SAFE_ALPHABET                                                                              \
    "bcdfghjklmnpqrstvwxz2456789" /* k8s.io/apimachinery rand.SafeEncodeString                     \
                                   */

/* ---- names and addresses ------------------------------------------------------------------ */

const char *wf_lm_kind_name(wf_lm_kind k)
{
    switch (k) {
    case WF_LM_PILOT:
        return "pilot";
    case WF_LM_PROXY:
        return "proxy";
    case WF_LM_APP:
        return "app";
    case WF_LM_GATEWAY:
        return "gateway";
    }
    return "?";
}

void wf_lm_pod_ip(size_t i, bool localhost, char *buf)
{
    snprintf(buf, 16, "127.%d.%zu.%zu", localhost ? 11 : 10, (i / 253) % 256, 2 + i % 253);
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h * 1099511628211ull;
}

static void encode(uint64_t h, char *out, size_t n)
{
    const size_t base = sizeof SAFE_ALPHABET - 1;
    for (size_t i = 0; i < n; i++) {
        out[i] = SAFE_ALPHABET[h % base];
        h /= base;
        if (!h)
            h = fnv(1469598103934665603ull, out);
    }
    out[n] = '\0';
}

void wf_lm_template_hash(const char *ns, const char *name, const char *salt, char out[11])
{
    uint64_t h = fnv(fnv(fnv(1469598103934665603ull, ns), name), salt);
    encode(h, out, 10);
}

void wf_lm_pod_suffix(const char *hash, size_t i, char out[6])
{
    char idx[32];
    snprintf(idx, sizeof idx, "/%zu", i);
    encode(fnv(fnv(1469598103934665603ull, hash), idx), out, 5);
}

/* ---- building ----------------------------------------------------------------------------- */

typedef struct planner {
    wf_lm_plan *p;
    const wf_lm_opts *o;
    const wf_store *s;
    lm_images images;
    const wf_node *mesh;
    size_t cap_pods, cap_procs;
    wf_strbuf *err;
    wf_lm_netns_names names; /* pod network netns: the mesh's namespace names */
} planner;

static wf_lm_pod *new_pod(planner *pl)
{
    wf_lm_plan *p = pl->p;
    if (p->npods >= WF_LM_MAX_PODS) {
        wf_strbuf_printf(pl->err,
                         "more than %u pods: the local mesh has one address per pod in "
                         "127.10.0.0/16",
                         WF_LM_MAX_PODS);
        return NULL;
    }
    if (p->npods == pl->cap_pods) {
        size_t ncap = pl->cap_pods ? pl->cap_pods * 2 : 16;
        wf_lm_pod *v = wf_arena_alloc(&p->arena, ncap * sizeof *v);
        if (!v)
            return NULL;
        if (p->npods)
            memcpy(v, p->pods, p->npods * sizeof *v);
        p->pods = v;
        pl->cap_pods = ncap;
    }
    wf_lm_pod *pod = &p->pods[p->npods++];
    memset(pod, 0, sizeof *pod);
    return pod;
}

static wf_lm_proc *new_proc(planner *pl)
{
    wf_lm_plan *p = pl->p;
    if (p->nprocs == pl->cap_procs) {
        size_t ncap = pl->cap_procs ? pl->cap_procs * 2 : 16;
        wf_lm_proc *v = wf_arena_alloc(&p->arena, ncap * sizeof *v);
        if (!v)
            return NULL;
        if (p->nprocs)
            memcpy(v, p->procs, p->nprocs * sizeof *v);
        p->procs = v;
        pl->cap_procs = ncap;
    }
    wf_lm_proc *proc = &p->procs[p->nprocs++];
    memset(proc, 0, sizeof *proc);
    proc->pod = SIZE_MAX;
    proc->uid = -1;
    return proc;
}

static bool label_is(const wf_kvs *labels, const char *key, const char *value)
{
    const char *v = wf_kvs_get(labels, key);
    return v && strcmp(v, value) == 0;
}

/* The namespace of resources that name none: -n, else the one Namespace labelled for
 * injection, else "default". */
static const char *default_ns(planner *pl)
{
    if (pl->o->ns && *pl->o->ns)
        return pl->o->ns;
    size_t n;
    const wf_resource *const *nss = wf_store_kind(pl->s, WF_KIND_NAMESPACE, &n);
    const char *found = NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (!lm_in_state(pl->p, nss[i]) &&
            label_is(&nss[i]->labels, "istio-injection", "enabled")) {
            found = nss[i]->name;
            count++;
        }
    }
    return count == 1 ? found : "default";
}

/* As Istio's sidecar injector (injectRequired): the pod template's sidecar.istio.io/inject
 * label, else annotation, compared lower-cased: y, yes, true and on inject, any other value
 * does not, an empty one leaves it to the namespace (istio-injection, istio.io/rev). */
static bool wants_sidecar(planner *pl, const wf_workload *w, const char *ns)
{
    const char *v = wf_kvs_get(&w->template_labels, "sidecar.istio.io/inject");
    if (!v)
        v = wf_kvs_get(&w->template_annotations, "sidecar.istio.io/inject");
    if (v && v[0])
        return strcasecmp(v, "y") == 0 || strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 ||
               strcasecmp(v, "on") == 0;
    const wf_resource *nsr = wf_store_find(pl->s, WF_KIND_NAMESPACE, "", ns);
    if (!nsr)
        return false;
    return label_is(&nsr->labels, "istio-injection", "enabled") ||
           (wf_kvs_get(&nsr->labels, "istio.io/rev") &&
            !label_is(&nsr->labels, "istio-injection", "disabled"));
}

/* The pod's labels: the template's, pod-template-hash, and for a pod with a proxy the two
 * Istio's injector adds (pod.go: service.istio.io/canonical-name from app.kubernetes.io/name,
 * else app, else the workload's name; canonical-revision from app.kubernetes.io/version, else
 * version, else "latest"), which Istio's metrics report as canonical service and revision.
 * An injected sidecar pod also gets security.istio.io/tlsMode: istio (the sidecar template's
 * `index .ObjectMeta.Labels "security.istio.io/tlsMode" | default "istio"`), the label pilot's
 * EDS turns into the endpoints' tlsMode for auto mTLS; the gateway template sets none. */
static int copy_labels(planner *pl, wf_lm_pod *pod, const wf_kvs *labels, const char *hash)
{
    pod->labels = wf_arena_alloc(&pl->p->arena, (labels->n + 4) * sizeof *pod->labels);
    if (!pod->labels)
        return -1;
    for (size_t i = 0; i < labels->n; i++)
        pod->labels[pod->nlabels++] = (wf_lm_label){labels->items[i].key, labels->items[i].value};
    if (hash && !wf_kvs_get(labels, "pod-template-hash"))
        pod->labels[pod->nlabels++] = (wf_lm_label){"pod-template-hash", hash};
    if (!pod->sidecar && !pod->gateway)
        return 0;
    const char *name = wf_kvs_get(labels, "app.kubernetes.io/name");
    const char *rev = wf_kvs_get(labels, "app.kubernetes.io/version");
    name = name ? name : wf_kvs_get(labels, "app");
    name = name ? name : *pod->owner ? pod->owner : WF_LM_GATEWAY_NAME;
    rev = rev ? rev : wf_kvs_get(labels, "version");
    if (!wf_kvs_get(labels, "service.istio.io/canonical-name"))
        pod->labels[pod->nlabels++] = (wf_lm_label){"service.istio.io/canonical-name", name};
    if (!wf_kvs_get(labels, "service.istio.io/canonical-revision"))
        pod->labels[pod->nlabels++] =
            (wf_lm_label){"service.istio.io/canonical-revision", rev ? rev : "latest"};
    if (pod->sidecar && !wf_kvs_get(labels, "security.istio.io/tlsMode"))
        pod->labels[pod->nlabels++] = (wf_lm_label){"security.istio.io/tlsMode", "istio"};
    return 0;
}

static int container_error(planner *pl, const wf_resource *r, const char *ns, const wf_node *at,
                           const char *field, const char *msg)
{
    lm_where(pl->err, r, at);
    wf_strbuf_printf(pl->err, ": %s %s/%s: %s: %s", r->kind_name, ns, r->name, field, msg);
    return -1;
}

static int plan_containers(planner *pl, const wf_resource *r, const char *ns, wf_lm_pod *pod)
{
    const wf_pod_spec *spec = &r->t.workload->spec;
    pod->containers = wf_arena_alloc(&pl->p->arena, spec->ncontainers * sizeof *pod->containers);
    if (!pod->containers)
        return -1;
    for (size_t i = 0; i < spec->ncontainers; i++) {
        const wf_container *c = &spec->containers[i];
        const lm_image *img = lm_images_match(&pl->images, c->image);
        if (!img) {
            char msg[600];
            snprintf(msg, sizeof msg,
                     "image \"%s\" has no entry in the image map %s (and no \"*\" entry): add "
                     "one (docs/local-mesh.md)",
                     c->image ? c->image : "", pl->p->images_file ? pl->p->images_file : "");
            char field[300];
            snprintf(field, sizeof field, "container %s", c->name ? c->name : "(unnamed)");
            return container_error(pl, r, ns, wf_map_get(c->node, "image"), field, msg);
        }
        wf_lm_container *lc = &pod->containers[pod->ncontainers++];
        lc->name = c->name ? c->name : "app";
        lc->image = c->image ? c->image : "";
        lc->image_key = img->key;
        lc->ports = wf_arena_alloc(&pl->p->arena, (c->nports + 1) * sizeof *lc->ports);
        if (!lc->ports)
            return -1;
        for (size_t k = 0; k < c->nports; k++)
            if (c->ports[k].container_port > 0)
                lc->ports[lc->nports++] =
                    (wf_lm_port){c->ports[k].name, c->ports[k].container_port};
    }
    return 0;
}

static int pod_name(planner *pl, const wf_resource *r, const char *hash, size_t i, wf_lm_pod *pod)
{
    char suffix[6];
    wf_lm_pod_suffix(hash, i, suffix);
    if (r->kind == WF_KIND_STATEFULSET)
        pod->name = wf_arena_printf(&pl->p->arena, "%s-%zu", r->name, i);
    else if (r->kind == WF_KIND_DEPLOYMENT)
        pod->name = wf_arena_printf(&pl->p->arena, "%s-%s-%s", r->name, hash, suffix);
    else
        pod->name = wf_arena_printf(&pl->p->arena, "%s-%s", r->name, suffix);
    return pod->name ? 0 : -1;
}

/* As a pod mounts its namespace's istio-ca-root-cert and pilot-agent reaches istiod's secure
 * port: CA_ADDR 15012, CA_ROOT_CA the root the supervisor keeps in sync from pilot. */
static int ca_env(planner *pl, const char *ns, lm_strv *env)
{
    wf_arena *a = &pl->p->arena;
    const char *addr = wf_arena_printf(a, "CA_ADDR=%s:%d", pl->p->pilot_ip, WF_LM_SECURE_PORT);
    const char *root =
        wf_arena_printf(a, "CA_ROOT_CA=%s/%s/%s/root-cert.pem", pl->p->state, WF_LM_ROOTS_DIR, ns);
    return !addr || !root || lm_strv_add(a, env, addr) || lm_strv_add(a, env, root) ? -1 : 0;
}

static int finish_env(planner *pl, wf_lm_pod *pod, const lm_strv *env)
{
    pod->proxy_env = env->v;
    pod->nproxy_env = env->n;
    return 0;
}

/* A proxy's environment and stats inclusion inputs from MeshConfig and the workload's
 * template annotations (r NULL: the gateway we add, MeshConfig only). The annotation
 * proxy.istio.io/config is parsed once for both. */
typedef struct pc_warn {
    planner *pl;
    const wf_resource *r;
    const char *ns;
    int rc;
} pc_warn;

/* A ProxyConfig field of the annotation weft does not implement: one plan warning, at the
 * annotation's key (the positions inside its text are the value's own). */
static bool on_pc_field(const wf_unimpl_hit *h, void *arg)
{
    pc_warn *w = arg;
    wf_lm_plan *p = w->pl->p;
    const wf_map_entry *e = wf_map_entry_get(
        wf_node_path(w->r->root, "spec.template.metadata.annotations"), "proxy.istio.io/config");
    wf_strbuf b = WF_STRBUF_INIT;
    lm_where(&b, w->r, e ? e->value : NULL);
    wf_strbuf_printf(&b,
                     ": %s %s/%s: spec.template.metadata.annotations[proxy.istio.io/config].%s "
                     "has no effect in weft: ",
                     w->r->kind_name, w->ns, w->r->name, h->field);
    wf_unimpl_detail(h, &b);
    wf_strbuf_printf(&b, " [%s]", wf_unimpl_code(h->entry));
    const char *line = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(&p->arena, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    lm_strv v = {p->warnings, p->nwarnings, p->nwarnings};
    if (!line || lm_strv_add(&p->arena, &v, line) != 0) {
        w->rc = -1;
        return false;
    }
    p->warnings = v.v;
    p->nwarnings = v.n;
    return true;
}

static int plan_proxy_config(planner *pl, const wf_resource *r, lm_strv *env, wf_psc_in *stats,
                             const char **error)
{
    const wf_kvs none = {0};
    const wf_kvs *annotations = r ? &r->t.workload->template_annotations : &none;
    const wf_node *pc = NULL;
    *error = NULL;
    if (r && lm_proxy_config_doc(pl->p, r, annotations, &pc, error) != 0)
        return -1;
    if (*error) /* not started: Istio's injector refuses the pod */
        return 0;
    pc_warn w = {pl, r, r && *r->ns ? r->ns : pl->p->default_ns, 0};
    if (pc && (wf_unimpl_scan_proxyconfig(pc, r->file, WF_UNIMPL_LOCAL_MESH, on_pc_field, &w) < 0 ||
               w.rc != 0))
        return -1;
    if (lm_proxy_env(pl->p, pl->mesh, pc, env) != 0)
        return -1;
    return lm_proxy_stats(pl->p, pl->mesh, r, annotations, pc, env, stats, error, pl->err);
}

/* A traffic.sidecar.istio.io annotation of the template whose value Istio's injector refuses
 * (its validators, analysis/an_annotations_util.h: the injector refuses the pod, as for
 * proxy.istio.io/config): "FILE:LINE:COL: Kind ns/name: field: problem (...)" in the plan's
 * arena, NULL when all are valid. *oom on out of memory. */
static const char *capture_annotation_error(planner *pl, const wf_resource *r, const char *ns,
                                            bool *oom)
{
    const wf_kvs *a = &r->t.workload->template_annotations;
    wf_arena *arena = &pl->p->arena;
    *oom = false;
    for (size_t i = 0; i < a->n; i++) {
        const char *problem = NULL;
        if (strncmp(a->items[i].key, "traffic.sidecar.istio.io/", 25) != 0 ||
            !wf_inject_annotation_invalid(arena, a->items[i].key, a->items[i].value, &problem))
            continue;
        wf_strbuf b = WF_STRBUF_INIT;
        lm_where(&b, r, a->items[i].node);
        wf_strbuf_printf(&b,
                         ": %s %s/%s: spec.template.metadata.annotations[%s]: %s (Istio's "
                         "sidecar injector refuses the pod)",
                         r->kind_name, ns, r->name, a->items[i].key, problem);
        const char *out = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(arena, wf_strbuf_cstr(&b));
        wf_strbuf_free(&b);
        *oom = out == NULL;
        return out;
    }
    return NULL;
}

static void capture_annotations(const wf_kvs *a, wf_lm_capture_ann *out)
{
#define TS "traffic.sidecar.istio.io/"
    *out = (wf_lm_capture_ann){
        .include_out_cidrs = wf_kvs_get(a, TS "includeOutboundIPRanges"),
        .exclude_out_cidrs = wf_kvs_get(a, TS "excludeOutboundIPRanges"),
        .include_in_ports = wf_kvs_get(a, TS "includeInboundPorts"),
        .exclude_in_ports = wf_kvs_get(a, TS "excludeInboundPorts"),
        .exclude_out_ports = wf_kvs_get(a, TS "excludeOutboundPorts"),
        .include_out_ports = wf_kvs_get(a, TS "includeOutboundPorts"),
    };
#undef TS
}

/* What the API server's validation refuses (apps/v1 and core/v1 ValidateDeployment,
 * validateContainerPorts) among the fields the local mesh uses: a negative replicas and a
 * containerPort outside 1..65535, worded as kube-apiserver's field errors. */
static int api_validation(planner *pl, const wf_resource *r, const char *ns)
{
    const wf_node *rep = wf_node_path(r->root, "spec.replicas");
    int64_t v;
    char msg[200], field[200];
    if (rep && wf_node_int(rep, &v) && v < 0) {
        snprintf(msg, sizeof msg, "Invalid value: %lld: must be greater than or equal to 0",
                 (long long)v);
        return container_error(pl, r, ns, rep, "spec.replicas", msg);
    }
    const wf_pod_spec *spec = &r->t.workload->spec;
    for (size_t i = 0; i < spec->ncontainers; i++) {
        const wf_node *ports = wf_map_get(spec->containers[i].node, "ports");
        for (size_t k = 0; k < wf_seq_len(ports); k++) {
            const wf_node *pn = ports->u.items[k];
            const wf_node *at = wf_map_get(pn, "containerPort");
            bool ok = at && wf_node_int(at, &v);
            if (ok && v >= 1 && v <= 65535)
                continue;
            snprintf(field, sizeof field,
                     "spec.template.spec.containers[%zu].ports[%zu].containerPort", i, k);
            if (ok)
                snprintf(msg, sizeof msg,
                         "Invalid value: %lld: must be between 1 and 65535, inclusive",
                         (long long)v);
            else
                snprintf(msg, sizeof msg, "Required value");
            return container_error(pl, r, ns, at ? at : pn, field, msg);
        }
    }
    return 0;
}

static int plan_workload(planner *pl, const wf_resource *r)
{
    const wf_workload *w = r->t.workload;
    const char *ns = *r->ns ? r->ns : pl->p->default_ns;
    if (w->spec.ncontainers == 0)
        return container_error(pl, r, ns,
                               wf_node_path(r->root, "spec.template.spec.containers")
                                   ? wf_node_path(r->root, "spec.template.spec.containers")
                                   : wf_node_path(r->root, "spec.template"),
                               "spec.template.spec.containers",
                               "a workload needs at least one container");
    if (api_validation(pl, r, ns) != 0)
        return -1;
    if (w->selector && w->selector->type == WF_NODE_MAP &&
        !wf_label_selector_matches(w->selector, &w->template_labels)) {
        /* the Kubernetes API server refuses such a workload (apps/v1 validation) */
        const wf_node *at = wf_node_path(r->root, "spec.template.metadata.labels");
        return container_error(pl, r, ns, at ? at : wf_node_path(r->root, "spec.selector"),
                               "spec.template.metadata.labels",
                               "`selector` does not match template `labels`");
    }
    bool gateway = label_is(&w->template_labels, "istio", "ingressgateway");
    bool sidecar = !gateway && wants_sidecar(pl, w, ns);
    lm_strv env = {0};
    wf_psc_in stats = {0};
    const char *error = NULL;
    if ((gateway || sidecar) &&
        (plan_proxy_config(pl, r, &env, &stats, &error) != 0 || ca_env(pl, ns, &env) != 0))
        return -1;
    bool oom = false;
    if (sidecar && !error && (error = capture_annotation_error(pl, r, ns, &oom), oom))
        return -1;
    char hash[11];
    const char *image0 = w->spec.containers[0].image;
    wf_lm_template_hash(ns, r->name, image0 ? image0 : "", hash);
    size_t replicas = w->replicas < 0 ? 1 : (size_t)w->replicas;
    if (r->kind == WF_KIND_DAEMONSET)
        replicas = 1;
    const char *app = wf_kvs_get(&w->template_labels, "app");
    for (size_t i = 0; i < replicas; i++) {
        wf_lm_pod *pod = new_pod(pl);
        if (!pod || pod_name(pl, r, hash, i, pod) != 0)
            return -1;
        pod->ns = ns;
        pod->owner_kind = r->kind_name;
        pod->owner = r->name;
        pod->gateway = gateway;
        pod->sidecar = sidecar;
        pod->service_account = w->spec.service_account;
        pod->cluster = wf_arena_printf(&pl->p->arena, "%s.%s", app ? app : r->name, ns);
        const char *h = r->kind == WF_KIND_DEPLOYMENT ? wf_arena_strdup(&pl->p->arena, hash) : NULL;
        pod->stats = stats;
        pod->error = error;
        capture_annotations(&w->template_annotations, &pod->capture);
        if (!pod->cluster || copy_labels(pl, pod, &w->template_labels, h) != 0 ||
            finish_env(pl, pod, &env) != 0 || (!gateway && plan_containers(pl, r, ns, pod) != 0))
            return -1;
    }
    return 0;
}

static bool has_gateway_workload(planner *pl)
{
    for (size_t i = 0; i < pl->p->npods; i++)
        if (pl->p->pods[i].gateway)
            return true;
    return false;
}

/* A Service outside the state folder that selects the gateway's labels. */
static bool has_gateway_service(planner *pl, const wf_kvs *labels)
{
    size_t n;
    const wf_resource *const *svcs = wf_store_kind(pl->s, WF_KIND_SERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_service *svc = svcs[i]->t.service;
        if (!lm_in_state(pl->p, svcs[i]) && svc && svc->has_selector && svc->selector.n &&
            wf_kvs_subset(&svc->selector, labels))
            return true;
    }
    return false;
}

static int plan_gateway(planner *pl)
{
    static wf_kv gw_labels[] = {{"app", "istio-ingressgateway", NULL},
                                {"istio", "ingressgateway", NULL}};
    const wf_kvs labels = {2, gw_labels};
    wf_lm_pod *pod = new_pod(pl);
    if (!pod)
        return -1;
    char hash[11], suffix[6];
    wf_lm_template_hash(WF_LM_GATEWAY_NS, WF_LM_GATEWAY_NAME, "router", hash);
    wf_lm_pod_suffix(hash, 0, suffix);
    pod->name = wf_arena_printf(&pl->p->arena, WF_LM_GATEWAY_NAME "-%s-%s", hash, suffix);
    pod->ns = WF_LM_GATEWAY_NS;
    pod->owner_kind = pod->owner = "";
    pod->cluster = WF_LM_GATEWAY_NAME "." WF_LM_GATEWAY_NS;
    pod->gateway = true;
    pod->service_account = "istio-ingressgateway-service-account";
    lm_strv env = {0};
    const char *h = wf_arena_strdup(&pl->p->arena, hash);
    if (!pod->name || !h || copy_labels(pl, pod, &labels, h) != 0 ||
        plan_proxy_config(pl, NULL, &env, &pod->stats, &pod->error) != 0 ||
        ca_env(pl, pod->ns, &env) != 0)
        return -1;
    pl->p->gateway_service = !has_gateway_service(pl, &labels);
    return finish_env(pl, pod, &env);
}

/* A Service port (HTTP, or undeclared: pilot gives it an outbound listener) equal to one of
 * the pod's container ports: without traffic capture the sidecar's outbound listener for it
 * binds the pod localhost, where the app listens on that port. Sets pod->clash. */
static int find_clash(planner *pl, wf_lm_pod *pod)
{
    size_t n = 0;
    const wf_resource *const *svcs = wf_store_kind(pl->s, WF_KIND_SERVICE, &n);
    for (size_t c = 0; c < pod->ncontainers; c++)
        for (size_t k = 0; k < pod->containers[c].nports; k++) {
            int port = pod->containers[c].ports[k].port;
            for (size_t i = 0; i < n; i++) {
                const wf_service *svc = svcs[i]->t.service;
                for (size_t j = 0; svc && !lm_in_state(pl->p, svcs[i]) && j < svc->nports; j++) {
                    const wf_service_port *sp = &svc->ports[j];
                    wf_protocol pr = wf_protocol_of_kube_port(sp->port, sp->name, sp->protocol,
                                                              sp->app_protocol);
                    if (sp->port != port ||
                        !(wf_protocol_is_http(pr) || pr == WF_PROTO_UNSUPPORTED))
                        continue;
                    pod->clash = wf_arena_printf(
                        &pl->p->arena,
                        "containerPort %d of %s is also port %d of Service %s/%s: without "
                        "traffic capture the sidecar's outbound listener for it binds %s:%d, "
                        "where the app listens, so one of them cannot start (give the Service "
                        "or the container another port; docs/local-mesh.md \"Limits\")",
                        port, pod->containers[c].name, port,
                        *svcs[i]->ns ? svcs[i]->ns : pl->p->default_ns, svcs[i]->name,
                        pod->localhost, port);
                    return pod->clash ? 0 : -1;
                }
            }
        }
    return 0;
}

static int plan_pods(planner *pl)
{
    for (size_t i = 0; i < wf_store_count(pl->s); i++) {
        const wf_resource *r = wf_store_at(pl->s, i);
        if (wf_kind_is_workload_controller(r->kind) && r->t.workload && !lm_in_state(pl->p, r) &&
            plan_workload(pl, r) != 0)
            return -1;
    }
    if (!has_gateway_workload(pl) && plan_gateway(pl) != 0)
        return -1;
    /* the gateway we add comes last in planning; give it the first address */
    wf_lm_plan *p = pl->p;
    if (p->npods && p->pods[p->npods - 1].gateway && !*p->pods[p->npods - 1].owner) {
        wf_lm_pod gw = p->pods[p->npods - 1];
        memmove(p->pods + 1, p->pods, (p->npods - 1) * sizeof *p->pods);
        p->pods[0] = gw;
    }
    p->gateway = SIZE_MAX;
    for (size_t i = 0; i < p->npods; i++) {
        char ip[16], lh[16], netns[300];
        wf_lm_pod_ip(i, false, ip);
        wf_lm_pod_ip(i, true, lh);
        wf_lm_pod *pod = &p->pods[i];
        if (p->podnet == WF_LM_PODNET_NETNS) {
            wf_lm_netns_pod_ip(i, ip);
            if (wf_lm_netns_pod_name(&pl->names, pod->name, pod->ns, netns, sizeof netns) != 0)
                return wf_strbuf_printf(pl->err, "pod %s.%s: no network namespace name for it",
                                        pod->name, pod->ns),
                       -1;
            if (!(pod->netns = wf_arena_strdup(&p->arena, netns)))
                return -1;
        }
        pod->ip = wf_arena_strdup(&p->arena, ip);
        pod->localhost = wf_arena_strdup(&p->arena, lh);
        pod->pod_file =
            wf_arena_printf(&p->arena, "%s/%s.%s.json", p->pods_dir, pod->ns, pod->name);
        if ((pod->gateway || pod->sidecar) && !pod->error)
            pod->bootstrap = wf_arena_printf(&p->arena, "%s/bootstrap/%s.%s.bootstrap", p->state,
                                             pod->name, pod->ns);
        if ((pod->gateway || pod->sidecar) && !pod->error)
            pod->token = wf_arena_printf(&p->arena, "%s/tokens/%s.%s/istio-token", p->state,
                                         pod->name, pod->ns);
        if (!pod->ip || !pod->localhost || !pod->pod_file ||
            ((pod->gateway || pod->sidecar) && !pod->error && (!pod->bootstrap || !pod->token)))
            return -1;
        if (pod->gateway && p->gateway == SIZE_MAX)
            p->gateway = i;
        if (pod->sidecar && !pod->error && !p->capture && find_clash(pl, pod) != 0)
            return -1;
    }
    return 0;
}

/* ---- processes ---------------------------------------------------------------------------- */

static const char *log_path(planner *pl, const char *name)
{
    return wf_arena_printf(&pl->p->arena, "%s/logs/%s.log", pl->p->state, name);
}

static int plan_pilot(planner *pl)
{
    wf_lm_plan *p = pl->p;
    wf_lm_proc *proc = new_proc(pl);
    lm_strv argv = {0};
    wf_arena *a = &p->arena;
    if (!proc || lm_strv_add(a, &argv, lm_resolve_bin(p, pl->o, "weft-pilot", pl->o->env_pilot)) ||
        lm_strv_add(a, &argv, "--config-dir") || lm_strv_add(a, &argv, p->dir))
        return -1;
    if (p->pods_dir_watched &&
        (lm_strv_add(a, &argv, "--config-dir") || lm_strv_add(a, &argv, p->pods_dir)))
        return -1;
    /* the mesh CA's root and token key live with the mesh's state (pilot_ca.h) */
    const char *ca_dir = wf_arena_printf(a, "%s/ca", p->state);
    if (!ca_dir || lm_strv_add(a, &argv, "--ca-dir") || lm_strv_add(a, &argv, ca_dir))
        return -1;
    if (lm_strv_add(a, &argv, "--default-namespace") || lm_strv_add(a, &argv, p->default_ns) ||
        lm_strv_add(a, &argv, "--grpcAddr") || lm_strv_add(a, &argv, WF_LM_XDS_ADDR) ||
        lm_strv_add(a, &argv, "--secureGRPCAddr") || lm_strv_add(a, &argv, p->secure_addr) ||
        lm_strv_add(a, &argv, "--monitoringAddr") || lm_strv_add(a, &argv, WF_LM_MON_ADDR))
        return -1;
    /* the web view's scrape loop (pilot/scrape.h): a few pods on one machine, so every
     * WF_LM_UI_SCRAPE_INTERVAL rather than Prometheus's 15 s, and a graph shows within seconds */
    if (lm_strv_add(a, &argv, "--uiScrapeInterval") ||
        lm_strv_add(a, &argv, WF_LM_UI_SCRAPE_INTERVAL))
        return -1;
    if (p->mesh_file &&
        (lm_strv_add(a, &argv, "--meshConfig") || lm_strv_add(a, &argv, p->mesh_file)))
        return -1;
    /* pods in namespaces reach Services by name: the DNS proxy answers their clusterIPs */
    if (p->podnet == WF_LM_PODNET_NETNS && (lm_strv_add(a, &argv, "--service-cluster-ip-range") ||
                                            lm_strv_add(a, &argv, WF_LM_NETNS_SERVICE_CIDR)))
        return -1;
    proc->name = "pilot";
    proc->kind = WF_LM_PILOT;
    proc->argv = argv.v;
    proc->log = log_path(pl, "pilot");
    return proc->log ? 0 : -1;
}

static int add_port_arg(wf_arena *a, lm_strv *argv, const char *ip, int port)
{
    const char *addr = wf_arena_printf(a, "%s:%d", ip, port);
    return !addr || lm_strv_add(a, argv, "--listen") || lm_strv_add(a, argv, addr) ? -1 : 0;
}

/* The container's env: value ($(VAR) expanded with the entries before it, as the kubelet
 * does) and the downward-API fields a local pod has. */
static int manifest_env(wf_arena *a, const wf_lm_pod *pod, const wf_node *env, lm_strv *out)
{
    for (size_t i = 0; i < wf_seq_len(env); i++) {
        const wf_node *e = wf_seq_at(env, i);
        const char *name = wf_map_str(e, "name");
        const char *value = wf_map_str(e, "value");
        if (value && !(value = wf_kube_expand(a, value, out->v, out->n)))
            return -1;
        const char *field = wf_node_str(wf_node_path(e, "valueFrom.fieldRef.fieldPath"));
        if (!value && field) {
            value = !strcmp(field, "metadata.name")             ? pod->name
                    : !strcmp(field, "metadata.namespace")      ? pod->ns
                    : !strcmp(field, "status.podIP")            ? pod->ip
                    : !strcmp(field, "spec.serviceAccountName") ? pod->service_account
                                                                : NULL;
        }
        if (name && value && lm_strv_setenv(a, out, name, value) != 0)
            return -1;
    }
    return 0;
}

static const wf_resource *owner_resource(planner *pl, const wf_lm_pod *pod);

/* argv[0] of an app: weft-app as $WEFT_APP names it, others as lm_resolve_bin finds them. */
static const char *app_bin(planner *pl, const char *name)
{
    return lm_resolve_bin(pl->p, pl->o, name,
                          strcmp(name, "weft-app") == 0 ? pl->o->env_app : NULL);
}

/* The manifest container's `command` or `args` (key), each item $(VAR) expanded with env as
 * the kubelet does, appended to argv (the first one found as a program when bin). Absent,
 * null or empty: nothing. Items must be strings, as the API server wants. */
static int add_manifest_list(planner *pl, const wf_lm_pod *pod, const wf_container *c,
                             const char *key, bool bin, const lm_strv *env, lm_strv *argv)
{
    wf_arena *a = &pl->p->arena;
    const wf_node *list = wf_map_get(c->node, key);
    for (size_t i = 0; list && list->type == WF_NODE_SEQ && i < list->len; i++) {
        const wf_node *item = list->u.items[i];
        const char *s = wf_node_is_string(item) ? wf_node_str(item) : NULL;
        if (s && !(s = wf_kube_expand(a, s, env->v, env->n)))
            return -1;
        if (s && lm_strv_add(a, argv, i == 0 && bin ? app_bin(pl, s) : s))
            return -1;
        if (s)
            continue;
        const wf_resource *r = owner_resource(pl, pod);
        lm_where(pl->err, r, item);
        wf_strbuf_printf(pl->err,
                         ": %s %s/%s: container %s: %s[%zu]: want a string, not %s (the API "
                         "server refuses it: quote it)",
                         r->kind_name, pod->ns, r->name, c->name ? c->name : "(unnamed)", key, i,
                         wf_node_kind_name(item));
        return -1;
    }
    if (list && list->type != WF_NODE_SEQ && list->type != WF_NODE_NULL) {
        const wf_resource *r = owner_resource(pl, pod);
        lm_where(pl->err, r, list);
        wf_strbuf_printf(pl->err, ": %s %s/%s: container %s: %s: want a list of strings",
                         r->kind_name, pod->ns, r->name, c->name ? c->name : "(unnamed)", key);
        return -1;
    }
    return 0;
}

/* The app's command line before weftctl's own arguments: the image map's command; with
 * weftArgs false, as a container runtime starts an image (Kubernetes' Container.command
 * and args): the container's `command` in place of the image map's command (its
 * "entrypoint"), then the container's `args`. */
static int app_argv(planner *pl, const wf_lm_pod *pod, const lm_image *img, const wf_container *c,
                    const lm_strv *env, lm_strv *argv)
{
    wf_arena *a = &pl->p->arena;
    if (!img->weft_args && c && wf_seq_len(wf_map_get(c->node, "command")) > 0)
        return add_manifest_list(pl, pod, c, "command", true, env, argv) ||
                       add_manifest_list(pl, pod, c, "args", false, env, argv)
                   ? -1
                   : 0;
    if (lm_strv_add(a, argv, app_bin(pl, img->cmd[0])))
        return -1;
    for (size_t i = 1; i < img->ncmd; i++)
        if (lm_strv_add(a, argv, img->cmd[i]))
            return -1;
    if (!img->weft_args && c &&
        (add_manifest_list(pl, pod, c, "command", true, env, argv) ||
         add_manifest_list(pl, pod, c, "args", false, env, argv)))
        return -1;
    return 0;
}

static int plan_app(planner *pl, size_t podi, size_t ci, const wf_container *spec_c)
{
    wf_lm_plan *p = pl->p;
    wf_arena *a = &p->arena;
    const wf_lm_pod *pod = &p->pods[podi];
    const wf_lm_container *c = &pod->containers[ci];
    const lm_image *img = lm_images_match(&pl->images, c->image);
    wf_lm_proc *proc = new_proc(pl);
    lm_strv argv = {0}, env = {0};
    if (!proc || !img)
        return -1;
    /* where the app listens (POD_LOCALHOST): explicit mode, a sidecar pod's app on the pod's
     * localhost, where its sidecar's inbound cluster sends; captured, on every address of its
     * own namespace, as a container does (the inbound ORIGINAL_DST cluster sends to the pod
     * IP) */
    const char *listen_ip = p->capture && pod->sidecar ? "0.0.0.0"
                            : pod->sidecar             ? pod->localhost
                                                       : pod->ip;
    if (manifest_env(a, pod, spec_c ? wf_map_get(spec_c->node, "env") : NULL, &env) ||
        lm_strv_setenv(a, &env, "POD_NAME", pod->name) ||
        lm_strv_setenv(a, &env, "POD_NAMESPACE", pod->ns) ||
        lm_strv_setenv(a, &env, "POD_IP", pod->ip) ||
        lm_strv_setenv(a, &env, "POD_LOCALHOST", listen_ip) ||
        app_argv(pl, pod, img, spec_c, &env, &argv))
        return -1;
    for (size_t i = 0; img->weft_args && i < c->nports; i++)
        if (add_port_arg(a, &argv, listen_ip, c->ports[i].port))
            return -1;
    if (img->weft_args && (lm_strv_add(a, &argv, "--pod") || lm_strv_add(a, &argv, pod->name)))
        return -1;
    for (size_t i = 0; i < img->env.n; i++)
        if (lm_strv_add(a, &env, img->env.v[i]))
            return -1;
    proc->name = pod->ncontainers == 1 ? wf_arena_printf(a, "%s.app", pod->name)
                                       : wf_arena_printf(a, "%s.%s", pod->name, c->name);
    proc->kind = WF_LM_APP;
    proc->pod = podi;
    proc->netns = pod->netns;
    proc->argv = argv.v;
    proc->env = env.v;
    proc->nenv = env.n;
    proc->log = proc->name ? log_path(pl, proc->name) : NULL;
    return proc->log ? 0 : -1;
}

/* The pod's proxy: MeshConfig's and the annotation's proxyMetadata, then what Istio's
 * injector adds for a sidecar (probers, Prometheus merge: localmesh_inject.c). */
static int proxy_env(planner *pl, const wf_lm_pod *pod, lm_strv *env)
{
    wf_arena *a = &pl->p->arena;
    for (size_t i = 0; i < pod->nproxy_env; i++)
        if (lm_strv_add(a, env, pod->proxy_env[i]) != 0)
            return -1;
    /* the injector's downward-API env: the pod IP (pilot-agent's appProbersDestination) */
    if (lm_strv_setenv(a, env, "INSTANCE_IP", pod->ip) != 0)
        return -1;
    /* in its own network namespace port 53 goes to the agent's DNS proxy, as Istio's
     * ISTIO_META_DNS_CAPTURE (the proxy's metadata DNS_CAPTURE) turns on */
    if (pod->netns && lm_strv_setenv(a, env, "ISTIO_META_DNS_CAPTURE", "true") != 0)
        return -1;
    /* the host's nameserver is out of a pod's reach: its DNS proxy asks the supervisor's relay
     * on the host link instead (localmesh_dns_relay.h), as pods ask the node's DNS */
    const char *up =
        pod->netns && pl->p->dns_upstream ? wf_arena_printf(a, "%s:53", pl->p->pilot_ip) : NULL;
    if (up && lm_strv_setenv(a, env, "WEFT_DNS_UPSTREAMS", up) != 0)
        return -1;
    /* explicit mode shares the host's loopback: a DNS proxy (proxyMetadata
     * ISTIO_META_DNS_CAPTURE) answers on the pod's own localhost, not every pod's 127.0.0.1 */
    const char *dns = pod->netns ? NULL : wf_arena_printf(a, "%s:15053", pod->localhost);
    if (!pod->netns && (!dns || lm_strv_setenv(a, env, "DNS_PROXY_ADDR", dns) != 0))
        return -1;
    if (!pod->sidecar)
        return 0;
    /* where the agent's probers reach the app: captured, 127.0.0.1, which the capture rules
     * leave alone for the proxy's uid */
    const char *app = pl->p->capture ? "127.0.0.1" : pod->localhost;
    return lm_inject_env(pl->p, pl->mesh, owner_resource(pl, pod), app, env);
}

static int plan_proxy(planner *pl, size_t podi)
{
    wf_lm_plan *p = pl->p;
    wf_arena *a = &p->arena;
    const wf_lm_pod *pod = &p->pods[podi];
    wf_lm_proc *proc = new_proc(pl);
    lm_strv argv = {0};
    const char *status = wf_arena_printf(a, "%s:%d", pod->ip, WF_LM_STATUS_PORT);
    if (!proc || !status ||
        lm_strv_add(a, &argv, lm_resolve_bin(p, pl->o, "weft-proxy", pl->o->env_proxy)) ||
        lm_strv_add(a, &argv, "-c") || lm_strv_add(a, &argv, pod->bootstrap) ||
        lm_strv_add(a, &argv, "--concurrency") || lm_strv_add(a, &argv, pod->gateway ? "2" : "1") ||
        lm_strv_add(a, &argv, "--file-flush-interval-msec") || lm_strv_add(a, &argv, "1000") ||
        lm_strv_add(a, &argv, "--status-address") || lm_strv_add(a, &argv, status) ||
        lm_strv_add(a, &argv, "--token-path") || lm_strv_add(a, &argv, pod->token))
        return -1;
    if (pod->gateway) {
        const char *health = wf_arena_printf(a, "%s:%d", pod->ip, WF_LM_HEALTH_PORT);
        if (!health || lm_strv_add(a, &argv, "--health-address") || lm_strv_add(a, &argv, health))
            return -1;
    }
    proc->name = wf_arena_printf(a, "%s.proxy", pod->name);
    proc->kind = pod->gateway ? WF_LM_GATEWAY : WF_LM_PROXY;
    proc->pod = podi;
    proc->argv = argv.v;
    proc->netns = pod->netns;
    if (p->capture && pod->sidecar) /* Istio's proxy uid, which the capture rules let through */
        proc->uid = WF_LM_CAPTURE_UID;
    lm_strv env = {0};
    if (proxy_env(pl, pod, &env) != 0)
        return -1;
    proc->env = env.v;
    proc->nenv = env.n;
    proc->log = proc->name ? log_path(pl, proc->name) : NULL;
    return proc->log ? 0 : -1;
}

/* The manifest workload behind a planned pod, or NULL (the gateway we add). */
static const wf_resource *owner_resource(planner *pl, const wf_lm_pod *pod)
{
    if (!*pod->owner)
        return NULL;
    size_t n;
    const wf_resource *const *v = wf_store_kind(pl->s, wf_kind_from_name(pod->owner_kind), &n);
    for (size_t i = 0; i < n; i++) {
        const char *ns = *v[i]->ns ? v[i]->ns : pl->p->default_ns;
        if (!lm_in_state(pl->p, v[i]) && strcmp(v[i]->name, pod->owner) == 0 &&
            strcmp(ns, pod->ns) == 0 && v[i]->t.workload)
            return v[i];
    }
    return NULL;
}

/* The manifest container behind a planned pod's container (for its env), or NULL. */
static const wf_container *spec_container(planner *pl, const wf_lm_pod *pod, size_t ci)
{
    const wf_resource *r = owner_resource(pl, pod);
    return r && ci < r->t.workload->spec.ncontainers ? &r->t.workload->spec.containers[ci] : NULL;
}

static int plan_procs(planner *pl)
{
    if (plan_pilot(pl) != 0)
        return -1;
    for (size_t i = 0; i < pl->p->npods; i++) {
        const wf_lm_pod *pod = &pl->p->pods[i];
        if (pod->error) /* not started: its proxy would refuse the bootstrap */
            continue;
        for (size_t c = 0; c < pod->ncontainers; c++)
            if (plan_app(pl, i, c, spec_container(pl, pod, c)) != 0)
                return -1;
        if ((pod->sidecar || pod->gateway) && plan_proxy(pl, i) != 0)
            return -1;
    }
    return 0;
}

/* ---- entry points ------------------------------------------------------------------------- */

static bool path_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int plan_paths(wf_lm_plan *p, const wf_lm_opts *o)
{
    p->dir = wf_arena_strdup(&p->arena, o->dir);
    p->state = wf_arena_strdup(&p->arena, o->state);
    if (!p->dir || !p->state)
        return -1;
    p->pods_dir = wf_arena_printf(&p->arena, "%s/pods", p->state);
    p->pods_dir_watched = p->pods_dir && !path_inside(p->pods_dir, p->dir);
    p->podnet = o->podnet;
    p->capture = o->podnet == WF_LM_PODNET_NETNS && o->capture;
    p->pilot_ip = o->podnet == WF_LM_PODNET_NETNS ? WF_LM_NETNS_HOST_IP : "127.0.0.1";
    /* pilot's secure port where the proxies reach it: its certificate carries that IP as a SAN,
     * which the proxies' CA client verifies (CA_ADDR) */
    p->secure_addr = wf_arena_printf(&p->arena, "%s:%d", p->pilot_ip, WF_LM_SECURE_PORT);
    if (!p->secure_addr)
        return -1;
    const char *rc = getenv("WEFT_DNS_RESOLV_CONF");
    char ns_ip[64];
    if (o->podnet == WF_LM_PODNET_NETNS &&
        wf_lm_resolv_first_ipv4(rc && *rc ? rc : "/etc/resolv.conf", ns_ip, sizeof ns_ip) == 0 &&
        !(p->dns_upstream = wf_arena_strdup(&p->arena, ns_ip)))
        return -1;
    return p->pods_dir ? 0 : -1;
}

int wf_lm_plan_from_store(const wf_lm_opts *o, const wf_store *s, wf_lm_plan **out, wf_strbuf *err)
{
    *out = NULL;
    wf_lm_plan *p = calloc(1, sizeof *p);
    if (!p)
        return wf_strbuf_puts(err, "out of memory"), -1;
    wf_arena_init(&p->arena);
    planner pl = {.p = p, .o = o, .s = s, .err = err};
    size_t before = err->len;
    int rc = plan_paths(p, o);
    if (rc == 0 && p->podnet == WF_LM_PODNET_NETNS) {
        wf_lm_netns_names_of(p->state, &pl.names);
        rc = (p->netns_prefix = wf_arena_strdup(&p->arena, pl.names.prefix)) ? 0 : -1;
    }
    if (rc == 0)
        rc = lm_images_load(p, s, &pl.images, err);
    if (rc == 0)
        rc = lm_mesh_config(p, o, s, &pl.mesh, err);
    if (rc == 0) {
        p->default_ns = default_ns(&pl);
        rc = plan_pods(&pl);
    }
    if (rc == 0)
        rc = plan_procs(&pl);
    if (rc != 0) {
        if (err->len == before)
            wf_strbuf_puts(err, "out of memory");
        wf_lm_plan_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void wf_lm_plan_free(wf_lm_plan *p)
{
    if (!p)
        return;
    wf_arena_destroy(&p->arena);
    wf_store_free(p->store);
    free(p);
}

const wf_lm_pod *wf_lm_plan_pod(const wf_lm_plan *p, const char *name)
{
    for (size_t i = 0; i < p->npods; i++)
        if (strcmp(p->pods[i].name, name) == 0)
            return &p->pods[i];
    return NULL;
}

/* ---- loading DIR -------------------------------------------------------------------------- */

/* Absolute path of a folder that may not exist yet. */
static char *absolute(const char *path)
{
    char *r = realpath(path, NULL);
    if (r || path[0] == '/')
        return r ? r : strdup(path);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    size_t len = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s/%s", cwd, path);
    return out;
}

/* Load errors that matter: not in the state folder, not a plain MeshConfig DIR/mesh.yaml. */
static int check_load_errors(const wf_store *s, const char *dir, const char *state, wf_strbuf *err)
{
    size_t bad = 0;
    char mesh_yaml[4200];
    snprintf(mesh_yaml, sizeof mesh_yaml, "%s/mesh.yaml", dir);
    for (size_t i = 0; i < wf_store_error_count(s); i++) {
        const wf_load_error *e = wf_store_error(s, i);
        if (path_inside(e->file, state) || strcmp(e->file, mesh_yaml) == 0)
            continue;
        if (!bad++)
            wf_strbuf_printf(err, "cannot load the manifests in %s:", dir);
        if (e->line)
            wf_strbuf_printf(err, "\n  %s:%u:%u: %s", e->file, e->line, e->col, e->message);
        else
            wf_strbuf_printf(err, "\n  %s: %s", e->file, e->message);
    }
    return bad ? -1 : 0;
}

static int load_dir(const char *dir, const char *state, wf_store **out, wf_strbuf *err)
{
    wf_store *s = wf_store_new();
    if (!s || wf_store_load_path(s, dir, NULL, NULL) < 0 || wf_store_finalize(s, NULL, false)) {
        wf_store_free(s);
        return wf_strbuf_puts(err, "out of memory loading the manifests"), -1;
    }
    if (check_load_errors(s, dir, state, err) != 0) {
        wf_store_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int wf_lm_plan_build(const wf_lm_opts *o, wf_lm_plan **out, wf_strbuf *err)
{
    *out = NULL;
    struct stat st;
    if (stat(o->dir, &st) != 0)
        return wf_strbuf_printf(err, "%s: %s", o->dir, strerror(errno)), -1;
    if (!S_ISDIR(st.st_mode))
        return wf_strbuf_printf(err, "%s: not a folder (weftctl up takes the folder of manifests)",
                                o->dir),
               -1;
    char *dir = realpath(o->dir, NULL), *state = NULL;
    if (dir && o->state)
        state = absolute(o->state);
    else if (dir &&
             !(state = o->capture ? wf_lm_capture_state(dir, err) : wf_lm_default_state(dir, err)))
        return free(dir), -1;
    wf_store *s = NULL;
    int rc = dir && state ? load_dir(dir, state, &s, err) : -1;
    if (rc == 0) {
        wf_lm_opts abs = *o;
        abs.dir = dir;
        abs.state = state;
        rc = wf_lm_plan_from_store(&abs, s, out, err);
    }
    if (rc == 0)
        (*out)->store = s;
    else
        wf_store_free(s);
    if (!dir || !state)
        wf_strbuf_printf(err, "%s: %s", o->dir, strerror(errno));
    free(dir);
    free(state);
    return rc;
}
