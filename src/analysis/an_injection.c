/*
 * an_injection.c - sidecar injection checks.
 *
 * Ports istio/istio pkg/config/analysis/analyzers/injection:
 * - injection.Analyzer (injection.go): namespaces not enabled for injection (IST0102) or
 *   enabled by the injector's enableNamespacesByDefault (IST0148), namespaces with several
 *   injection/dataplane labels (IST0123), and pods in injected namespaces without an
 *   istio-proxy container (IST0103);
 * - injection.ImageAnalyzer (injection-image.go, with util/proxyconfig.go's effective image
 *   type): pods whose istio-proxy image differs from the injector ConfigMap's (IST0158,
 *   reported once per namespace);
 * - injection.ImageAutoAnalyzer (image-auto.go): Pods (IST0147) and Deployments not matched
 *   by any Istio injection webhook (IST0146) that carry `image: auto`.
 * Pods the store synthesized from workload templates are skipped throughout: these analyzers
 * report on, or name, the pods themselves.
 */
#include <jansson.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"
#include "model/parse.h"

#define INJECTION_LABEL    "istio-injection"
#define REVISION_LABEL     "istio.io/rev"
#define DATAPLANE_LABEL    "istio.io/dataplane-mode"
#define SIDECAR_INJECT     "sidecar.istio.io/inject"
#define PROXY_NAME         "istio-proxy"
#define INJECTOR_CM_PREFIX "istio-sidecar-injector"

/* util.GetInjectorConfigMapName */
static const char *injector_cm_name(wf_analysis_ctx *ctx, const char *revision)
{
    if (!revision || !*revision || strcmp(revision, "default") == 0)
        return INJECTOR_CM_PREFIX;
    const char *s = wf_arena_printf(wf_ctx_arena(ctx), "%s-%s", INJECTOR_CM_PREFIX, revision);
    return s ? s : INJECTOR_CM_PREFIX;
}

static const wf_resource *const *kind_list(wf_analysis_ctx *ctx, wf_kind k, size_t *n)
{
    return wf_store_kind(wf_ctx_store(ctx), k, n);
}

/* The `values` document of an injector ConfigMap, parsed as JSON; NULL when absent or not
 * JSON. The caller releases it with json_decref. */
static json_t *cm_values(const wf_resource *cm)
{
    const char *values = wf_node_str(wf_node_path(cm->root, "data.values"));
    if (!values)
        return NULL;
    return json_loads(values, JSON_DECODE_ANY, NULL);
}

/* First container (then init container) named istio-proxy, or NULL. */
static const wf_container *proxy_container(const wf_pod_spec *spec)
{
    for (size_t i = 0; i < spec->ncontainers; i++) {
        const char *name = spec->containers[i].name;
        if (name && strcmp(name, PROXY_NAME) == 0)
            return &spec->containers[i];
    }
    for (size_t i = 0; i < spec->ninit; i++) {
        const char *name = spec->init_containers[i].name;
        if (name && strcmp(name, PROXY_NAME) == 0)
            return &spec->init_containers[i];
    }
    return NULL;
}

/* ---- injection.Analyzer ---- */

/* GetEnableNamespacesByDefaultFromInjectedConfigMap */
static bool enable_ns_by_default(const wf_resource *cm)
{
    json_t *root = cm_values(cm);
    json_t *hook = json_object_get(root, "sidecarInjectorWebhook");
    json_t *v = json_object_get(hook, "enableNamespacesByDefault");
    bool on = json_is_true(v);
    json_decref(root);
    return on;
}

typedef struct inj_state {
    bool enable_by_default; /* sticky across namespaces, as upstream */
    const char **injected;  /* namespace names */
    size_t ninjected, cap;
    bool oom;
} inj_state;

static void add_injected(wf_analysis_ctx *ctx, inj_state *st, const char *ns)
{
    if (st->ninjected == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        const char **v = wf_arena_alloc(wf_ctx_arena(ctx), cap * sizeof(*v));
        if (!v) {
            st->oom = true;
            return;
        }
        if (st->ninjected)
            memcpy(v, st->injected, st->ninjected * sizeof(*v));
        st->injected = v;
        st->cap = cap;
    }
    st->injected[st->ninjected++] = ns;
}

static bool is_injected(const inj_state *st, const char *ns)
{
    for (size_t i = 0; i < st->ninjected; i++) {
        if (strcmp(st->injected[i], ns) == 0)
            return true;
    }
    return false;
}

/* IST0123 when more than one of istio-injection, istio.io/rev, istio.io/dataplane-mode
 * applies (rev and dataplane-mode only count unless injection is set to something other
 * than "enabled"). */
static void check_multiple_labels(wf_analysis_ctx *ctx, const wf_resource *ns)
{
    static const char *const others[] = {REVISION_LABEL, DATAPLANE_LABEL};
    const char *inj = wf_kvs_get(&ns->labels, INJECTION_LABEL);
    const char *labels[3];
    size_t n = 0;
    wf_arena *a = wf_ctx_arena(ctx);
    if (inj)
        labels[n++] = wf_arena_printf(a, "%s=%s", INJECTION_LABEL, inj);
    for (size_t i = 0; i < 2; i++) {
        const char *v = wf_kvs_get(&ns->labels, others[i]);
        if (v && (!inj || strcmp(inj, "enabled") == 0))
            labels[n++] = wf_arena_printf(a, "%s=%s", others[i], v);
    }
    for (size_t i = 0; i < n; i++) {
        if (!labels[i])
            return; /* out of memory */
    }
    if (n > 1)
        WF_REPORT(ctx, WF_IST0123, ns, NULL, wf_go_slice(ctx, labels, n));
}

static void lookup_injector_cm(wf_analysis_ctx *ctx, inj_state *st, const char *revision)
{
    const char *want = injector_cm_name(ctx, revision);
    size_t n;
    const wf_resource *const *cms = kind_list(ctx, WF_KIND_CONFIGMAP, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cms[i]->name, want) == 0) {
            st->enable_by_default = enable_ns_by_default(cms[i]);
            return;
        }
    }
}

static void check_namespace(wf_analysis_ctx *ctx, inj_state *st, const wf_resource *ns)
{
    const char *name = ns->name;
    if (strcmp(name, "istio-system") == 0 || wf_is_system_namespace(name))
        return;
    check_multiple_labels(ctx, ns);
    const char *mode = wf_kvs_get(&ns->labels, DATAPLANE_LABEL);
    if (mode && strcmp(mode, "ambient") == 0)
        return;
    const char *inj = wf_kvs_get(&ns->labels, INJECTION_LABEL);
    const char *rev = wf_kvs_get(&ns->labels, REVISION_LABEL);
    lookup_injector_cm(ctx, st, rev);
    if ((!inj || !*inj) && !rev) {
        if (st->enable_by_default)
            WF_REPORT0(ctx, WF_IST0148, ns, NULL);
        else
            WF_REPORT(ctx, WF_IST0102, ns, wf_map_get(ns->metadata, "name"), name, name);
        return;
    }
    if (!inj || strcmp(inj, "enabled") != 0)
        return;
    add_injected(ctx, st, name);
}

static bool injection_disabled(const wf_resource *pod)
{
    const char *inj = wf_kvs_get(&pod->annotations, SIDECAR_INJECT);
    const char *label = wf_kvs_get(&pod->labels, SIDECAR_INJECT);
    if (label)
        inj = label;
    return inj && strcasecmp(inj, "false") == 0;
}

static void check_pod(wf_analysis_ctx *ctx, const inj_state *st, const wf_resource *pod)
{
    if (pod->synthetic || !pod->t.pod || !is_injected(st, pod->ns) || injection_disabled(pod))
        return;
    bool host_network = false;
    if (wf_node_bool(wf_map_get(pod->spec, "hostNetwork"), &host_network) && host_network)
        return;
    const wf_container *c = proxy_container(&pod->t.pod->spec);
    if (!c || !c->image || !*c->image)
        WF_REPORT(ctx, WF_IST0103, pod, NULL, wf_full_name(ctx, pod));
}

static void run_injection(wf_analysis_ctx *ctx)
{
    inj_state st = {0};
    size_t n;
    const wf_resource *const *nss = kind_list(ctx, WF_KIND_NAMESPACE, &n);
    for (size_t i = 0; i < n; i++)
        check_namespace(ctx, &st, nss[i]);
    if (st.oom)
        return;
    const wf_resource *const *pods = kind_list(ctx, WF_KIND_POD, &n);
    for (size_t i = 0; i < n; i++)
        check_pod(ctx, &st, pods[i]);
}

const wf_analyzer wf_an_injection_Analyzer = {
    .name = "injection.Analyzer",
    .description = "Checks conditions related to Istio sidecar injection",
    .inputs = {WF_KIND_NAMESPACE, WF_KIND_POD, WF_KIND_CONFIGMAP, WF_KIND_OTHER},
    .codes = {WF_IST0102, WF_IST0103, WF_IST0123, WF_IST0148, WF_MSG_COUNT},
    .default_on = true,
    .run = run_injection,
};

/* ---- injection.ImageAnalyzer ---- */

/* A member of a Go struct decoded by encoding/json: the last key matching name exactly or
 * case-insensitively. *bad is set when the value has the wrong type (not null and not
 * `want`), which makes json.Unmarshal fail. */
static json_t *go_field(json_t *obj, const char *name, json_type want, bool *bad)
{
    const char *key;
    json_t *v, *found = NULL;
    json_object_foreach(obj, key, v)
    {
        if (strcasecmp(key, name) == 0)
            found = v;
    }
    if (found && !json_is_null(found) && json_typeof(found) != want)
        *bad = true;
    return (found && json_typeof(found) == want) ? found : NULL;
}

/* GetIstioProxyImage: global.proxy.image when it contains '/', else hub/image:tag; "" when
 * `values` does not decode. Result in the arena (NULL on out of memory). */
static const char *injector_proxy_image(wf_analysis_ctx *ctx, const wf_resource *cm)
{
    json_t *root = cm_values(cm);
    if (!root || !(json_is_object(root) || json_is_null(root))) {
        json_decref(root);
        return "";
    }
    bool bad = false;
    json_t *global = go_field(root, "global", JSON_OBJECT, &bad);
    json_t *hub = go_field(global, "hub", JSON_STRING, &bad);
    json_t *tag = go_field(global, "tag", JSON_STRING, &bad);
    json_t *proxy = go_field(global, "proxy", JSON_OBJECT, &bad);
    json_t *image = go_field(proxy, "image", JSON_STRING, &bad);
    const char *img = image ? json_string_value(image) : "";
    const char *out;
    if (bad)
        out = "";
    else if (strchr(img, '/'))
        out = wf_arena_strdup(wf_ctx_arena(ctx), img);
    else
        out = wf_arena_printf(wf_ctx_arena(ctx), "%s/%s:%s", hub ? json_string_value(hub) : "", img,
                              tag ? json_string_value(tag) : "");
    json_decref(root);
    return out;
}

/* proxyImageMap: injector ConfigMap name -> image; the last ConfigMap of a name wins. */
typedef struct image_map {
    const char **names, **images;
    size_t n;
} image_map;

static const char *image_for(const image_map *m, const char *cm_name, bool *found)
{
    *found = false;
    const char *img = NULL;
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->names[i], cm_name) == 0) {
            img = m->images[i];
            *found = true;
        }
    }
    return img;
}

static int collect_injector_images(wf_analysis_ctx *ctx, image_map *m)
{
    size_t n;
    const wf_resource *const *cms = kind_list(ctx, WF_KIND_CONFIGMAP, &n);
    wf_arena *a = wf_ctx_arena(ctx);
    m->n = 0;
    m->names = wf_arena_alloc(a, (n + 1) * sizeof(*m->names));
    m->images = wf_arena_alloc(a, (n + 1) * sizeof(*m->images));
    if (!m->names || !m->images)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(cms[i]->name, INJECTOR_CM_PREFIX, strlen(INJECTOR_CM_PREFIX)) != 0)
            continue;
        const char *img = injector_proxy_image(ctx, cms[i]);
        if (!img)
            return -1;
        m->names[m->n] = cms[i]->name;
        m->images[m->n++] = img;
    }
    return 0;
}

/* util.EffectiveProxyConfigResolver: the image type (variant) that applies to a pod. */
typedef struct resolver {
    const char *mesh_type;
    const wf_resource *root;
} resolver;

static const char *image_type_of(const wf_node *cfg)
{
    const char *t = wf_node_str(wf_node_path(cfg, "image.imageType"));
    return (t && *t) ? t : NULL;
}

static bool has_selector(const wf_resource *pc)
{
    const wf_node *sel = wf_map_get(pc->spec, "selector");
    return sel && sel->type != WF_NODE_NULL;
}

/* maps.Contains(pod labels, selector.matchLabels) */
static bool pc_selects(const wf_resource *pc, const wf_resource *pod)
{
    const wf_node *ml = wf_node_path(pc->spec, "selector.matchLabels");
    for (size_t i = 0; ml && ml->type == WF_NODE_MAP && i < ml->len; i++) {
        const char *want = wf_node_str(ml->u.entries[i].value);
        const char *have = wf_kvs_get(&pod->labels, ml->u.entries[i].key);
        if (!have || strcmp(have, want ? want : "") != 0)
            return false;
    }
    return true;
}

typedef struct first_doc {
    wf_node *root;
} first_doc;

static int take_first(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    first_doc *d = arg;
    if (!d->root)
        d->root = root;
    return 0;
}

/* image.imageType of a proxy.istio.io/config annotation (YAML ProxyConfig), copied into the
 * run's arena; NULL when unset or not parsable. */
static const char *annotation_image_type(wf_analysis_ctx *ctx, const char *yaml)
{
    wf_arena a;
    wf_arena_init(&a);
    first_doc doc = {NULL};
    wf_parse_error err;
    const char *out = NULL;
    if (wf_parse_yaml(&a, yaml, strlen(yaml), take_first, &doc, &err) == 0) {
        const char *t = image_type_of(doc.root);
        if (t)
            out = wf_arena_strdup(wf_ctx_arena(ctx), t);
    }
    wf_arena_destroy(&a);
    return out;
}

static const char *pod_image_type(wf_analysis_ctx *ctx, const resolver *rs, const wf_resource *pod)
{
    const char *variant = rs->mesh_type ? rs->mesh_type : "";
    const char *t;
    if (rs->root && (t = image_type_of(rs->root->spec)))
        variant = t;
    size_t n;
    const wf_resource *const *pcs = kind_list(ctx, WF_KIND_PROXYCONFIG, &n);
    const wf_resource *ns_pc = NULL;
    const char *root_ns = wf_meshcfg_root_ns(wf_ctx_mesh(ctx));
    for (size_t i = 0; i < n; i++) { /* the namespace-wide one: last without selector */
        if (strcmp(pcs[i]->ns, root_ns) != 0 && !has_selector(pcs[i]) &&
            strcmp(pcs[i]->ns, pod->ns) == 0)
            ns_pc = pcs[i];
    }
    if (ns_pc && (t = image_type_of(ns_pc->spec)))
        variant = t;
    for (size_t i = 0; i < n; i++) { /* workload ones: "ns/name" starting with the pod's ns */
        const wf_resource *pc = pcs[i];
        if (strcmp(pc->ns, root_ns) == 0 || !has_selector(pc))
            continue;
        if (strncmp(wf_full_name(ctx, pc), pod->ns, strlen(pod->ns)) != 0)
            continue;
        if (pc_selects(pc, pod) && (t = image_type_of(pc->spec)))
            variant = t;
    }
    const char *anno = wf_kvs_get(&pod->annotations, "proxy.istio.io/config");
    if (anno && (t = annotation_image_type(ctx, anno)))
        variant = t;
    return strcmp(variant, "default") == 0 ? "" : variant;
}

static void init_resolver(wf_analysis_ctx *ctx, resolver *rs)
{
    const wf_meshcfg *mesh = wf_ctx_mesh(ctx);
    rs->mesh_type = wf_meshcfg_str(mesh, "defaultConfig.image.imageType");
    rs->root = NULL;
    const char *root_ns = wf_meshcfg_root_ns(mesh);
    size_t n;
    const wf_resource *const *pcs = kind_list(ctx, WF_KIND_PROXYCONFIG, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(pcs[i]->ns, root_ns) == 0)
            rs->root = pcs[i];
    }
}

/* The revision a namespace injects with ("default" for istio-injection=enabled), or NULL. */
static const char *ns_revision(const wf_resource *ns)
{
    const char *rev = wf_kvs_get(&ns->labels, REVISION_LABEL);
    if (rev)
        return rev;
    const char *inj = wf_kvs_get(&ns->labels, INJECTION_LABEL);
    return (inj && strcmp(inj, "enabled") == 0) ? "default" : NULL;
}

/* The last Namespace resource of that name (namespaceResources / injectedNamespaces). */
static const wf_resource *find_namespace(wf_analysis_ctx *ctx, const char *name)
{
    size_t n;
    const wf_resource *const *nss = kind_list(ctx, WF_KIND_NAMESPACE, &n);
    const wf_resource *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nss[i]->name, name) == 0)
            found = nss[i];
    }
    return found;
}

/* Does the pod run a proxy image other than (and not the image-type variant of) the
 * injector's? Pods with a custom proxy image, or whose revision has no injector ConfigMap,
 * are not checked. */
static bool pod_mismatched(wf_analysis_ctx *ctx, const image_map *m, const resolver *rs,
                           const wf_resource *pod, const char *cm_name)
{
    const char *custom = wf_kvs_get(&pod->annotations, "sidecar.istio.io/proxyImage");
    if ((custom && *custom) || !pod->t.pod)
        return false;
    const char *variant = pod_image_type(ctx, rs, pod);
    const wf_pod_spec *spec = &pod->t.pod->spec;
    bool mismatched = false;
    for (size_t i = 0; i < spec->ncontainers + spec->ninit; i++) {
        const wf_container *c = i < spec->ncontainers
                                    ? &spec->containers[i]
                                    : &spec->init_containers[i - spec->ncontainers];
        if (!c->name || strcmp(c->name, PROXY_NAME) != 0)
            continue;
        bool found;
        const char *want = image_for(m, cm_name, &found);
        if (!found)
            return false;
        const char *img = c->image ? c->image : "";
        const char *with_variant = wf_arena_printf(wf_ctx_arena(ctx), "%s-%s", want, variant);
        if (strcmp(img, want) != 0 && (!with_variant || strcmp(img, with_variant) != 0))
            mismatched = true;
    }
    return mismatched;
}

/* Pods of one namespace whose proxy image mismatches, in load order. */
static void check_namespace_images(wf_analysis_ctx *ctx, const image_map *m, const resolver *rs,
                                   const wf_resource *ns)
{
    const char *rev = ns_revision(ns);
    if (!rev || find_namespace(ctx, ns->name) != ns)
        return;
    const char *cm_name = injector_cm_name(ctx, rev);
    size_t n;
    const wf_resource *const *pods = kind_list(ctx, WF_KIND_POD, &n);
    const char **names = wf_arena_alloc(wf_ctx_arena(ctx), (n + 1) * sizeof(*names));
    if (!names)
        return;
    size_t nnames = 0;
    for (size_t i = 0; i < n; i++) {
        const wf_resource *pod = pods[i];
        if (pod->synthetic || strcmp(pod->ns, ns->name) != 0)
            continue;
        if (pod_mismatched(ctx, m, rs, pod, cm_name))
            names[nnames++] = pod->name;
    }
    if (nnames)
        WF_REPORT(ctx, WF_IST0158, ns, NULL, wf_go_slice(ctx, names, nnames));
}

static void run_image(wf_analysis_ctx *ctx)
{
    image_map m;
    if (collect_injector_images(ctx, &m) != 0 || m.n == 0)
        return;
    resolver rs;
    init_resolver(ctx, &rs);
    size_t n;
    const wf_resource *const *nss = kind_list(ctx, WF_KIND_NAMESPACE, &n);
    for (size_t i = 0; i < n; i++)
        check_namespace_images(ctx, &m, &rs, nss[i]);
}

const wf_analyzer wf_an_injection_ImageAnalyzer = {
    .name = "injection.ImageAnalyzer",
    .description = "Checks the image of auto-injection configured with the running proxies on pods",
    .inputs = {WF_KIND_NAMESPACE, WF_KIND_POD, WF_KIND_CONFIGMAP, WF_KIND_PROXYCONFIG,
               WF_KIND_OTHER},
    .codes = {WF_IST0158, WF_MSG_COUNT},
    .default_on = true,
    .run = run_image,
};

/* ---- injection.ImageAutoAnalyzer ---- */

/* hasAutoImage: a container (not an init container) istio-proxy with image "auto". */
static bool has_auto_image(const wf_pod_spec *spec)
{
    for (size_t i = 0; i < spec->ncontainers; i++) {
        const wf_container *c = &spec->containers[i];
        if (c->name && strcmp(c->name, PROXY_NAME) == 0 && c->image &&
            strcmp(c->image, "auto") == 0)
            return true;
    }
    return false;
}

/* selectorMatches: an absent selector matches everything. */
static bool selector_matches(const wf_node *sel, const wf_kvs *labels)
{
    if (!sel || sel->type == WF_NODE_NULL)
        return true;
    return wf_label_selector_matches(sel, labels);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* matchesWebhooks over every webhook named "*istio.io" of every
 * MutatingWebhookConfiguration. */
static bool matches_istio_webhook(wf_analysis_ctx *ctx, const wf_kvs *ns_labels,
                                  const wf_kvs *pod_labels)
{
    size_t n;
    const wf_resource *const *cfgs = kind_list(ctx, WF_KIND_MUTATINGWEBHOOK, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_node *hooks = wf_map_get(cfgs[i]->root, "webhooks");
        for (size_t j = 0; j < wf_seq_len(hooks); j++) {
            const wf_node *wh = wf_seq_at(hooks, j);
            const char *name = wf_map_str(wh, "name");
            if (!name || !ends_with(name, "istio.io"))
                continue;
            if (selector_matches(wf_map_get(wh, "namespaceSelector"), ns_labels) &&
                selector_matches(wf_map_get(wh, "objectSelector"), pod_labels))
                return true;
        }
    }
    return false;
}

static void check_auto_deployment(wf_analysis_ctx *ctx, const wf_resource *d)
{
    if (!d->t.workload || !has_auto_image(&d->t.workload->spec))
        return;
    const char *ns = (d->ns && *d->ns) ? d->ns : "default";
    const wf_resource *nsr = wf_store_find(wf_ctx_store(ctx), WF_KIND_NAMESPACE, "", ns);
    static const wf_kvs none = {0, NULL};
    const wf_kvs *ns_labels = nsr ? &nsr->labels : &none;
    if (!matches_istio_webhook(ctx, ns_labels, &d->t.workload->template_labels))
        WF_REPORT(ctx, WF_IST0146, d, NULL, "Deployment", d->name);
}

static void run_image_auto(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *pods = kind_list(ctx, WF_KIND_POD, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *p = pods[i];
        if (!p->synthetic && p->t.pod && has_auto_image(&p->t.pod->spec))
            WF_REPORT(ctx, WF_IST0147, p, NULL, "Pod", p->name);
    }
    const wf_resource *const *deps = kind_list(ctx, WF_KIND_DEPLOYMENT, &n);
    for (size_t i = 0; i < n; i++)
        check_auto_deployment(ctx, deps[i]);
}

const wf_analyzer wf_an_injection_ImageAutoAnalyzer = {
    .name = "injection.ImageAutoAnalyzer",
    .description = "Makes sure that Pods and Deployments with `image: auto` are going to be "
                   "injected",
    .inputs = {WF_KIND_NAMESPACE, WF_KIND_POD, WF_KIND_DEPLOYMENT, WF_KIND_MUTATINGWEBHOOK,
               WF_KIND_OTHER},
    .codes = {WF_IST0146, WF_IST0147, WF_MSG_COUNT},
    .default_on = true,
    .run = run_image_auto,
};
