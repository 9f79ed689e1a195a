/*
 * an_annotations.c - Istio annotations on Kubernetes resources.
 *
 * Ports two upstream analyzers (istio/istio pkg/config/analysis/analyzers):
 * - annotations.K8sAnalyzer (annotations/annotations.go): unknown Istio annotations
 *   (IST0108), deprecated ones (IST0135), ones on a kind they do not attach to (IST0107)
 *   and values that fail the injector's validation (IST0125);
 * - annotations.AlphaAnalyzer (maturity/maturity.go): annotations of alpha-phase features
 *   (IST0136). Not registered in Istio's All(), so it only runs when asked for.
 * Both look at Namespaces, Services, Pods and Deployments (the Deployment's own metadata, not
 * its pod template). Pods the store synthesized from a workload template are skipped: the
 * findings belong to real Pods only.
 */
#include <stdbool.h>
#include <string.h>

#include "model/istio_annotations.h"
#include "analysis/an_annotations_util.h"
#include "analysis/analyzer.h"
#include "core/strbuf.h"

#define SIDECAR_INJECT "sidecar.istio.io/inject"

typedef void (*check_fn)(wf_analysis_ctx *ctx, const wf_resource *r, const char *kind);

/* Run check on every Namespace, Service, (real) Pod and Deployment, in that order. */
static void for_annotated(wf_analysis_ctx *ctx, check_fn check)
{
    static const struct {
        wf_kind kind;
        const char *name;
    } kinds[] = {{WF_KIND_NAMESPACE, "Namespace"},
                 {WF_KIND_SERVICE, "Service"},
                 {WF_KIND_POD, "Pod"},
                 {WF_KIND_DEPLOYMENT, "Deployment"}};
    const wf_store *s = wf_ctx_store(ctx);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t n;
        const wf_resource *const *rs = wf_store_kind(s, kinds[k].kind, &n);
        for (size_t i = 0; i < n; i++) {
            if (rs[i]->synthetic || rs[i]->annotations.n == 0)
                continue;
            check(ctx, rs[i], kinds[k].name);
        }
    }
}

/* istioAnnotation: kubernetes.io/ingress.class, or a name whose prefix (before the first
 * '/') ends in "istio.io". */
static bool istio_annotation(const char *ann)
{
    if (strcmp(ann, "kubernetes.io/ingress.class") == 0)
        return true;
    const char *slash = strchr(ann, '/');
    size_t len = slash ? (size_t)(slash - ann) : strlen(ann);
    static const char suffix[] = "istio.io";
    size_t sl = sizeof(suffix) - 1;
    return len >= sl && memcmp(ann + len - sl, suffix, sl) == 0;
}

static bool attaches_to_any(const wf_annotation_def *def)
{
    for (size_t i = 0; i < WF_ANN_MAX_RESOURCES && def->resources[i]; i++) {
        if (def->resources[i] == WF_ANN_RES_ANY)
            return true;
    }
    return false;
}

/* strings.Join(resourceTypesAsStrings(def.Resources), ", ") into the arena; sets *found when
 * kind is one of them. */
static const char *attach_list(wf_analysis_ctx *ctx, const wf_annotation_def *def, const char *kind,
                               bool *found)
{
    wf_strbuf b = WF_STRBUF_INIT;
    *found = false;
    bool first = true;
    for (size_t i = 0; i < WF_ANN_MAX_RESOURCES && def->resources[i]; i++) {
        const char *name = wf_annotation_resource_name(def->resources[i]);
        if (strcmp(name, "Unknown") == 0)
            continue;
        if (strcmp(name, kind) == 0)
            *found = true;
        if (!first)
            wf_strbuf_puts(&b, ", ");
        wf_strbuf_puts(&b, name);
        first = false;
    }
    const char *out = wf_arena_strdup(wf_ctx_arena(ctx), wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return out ? out : "";
}

static void k8s_check_one(wf_analysis_ctx *ctx, const wf_resource *r, const char *kind,
                          const wf_kv *kv)
{
    const wf_annotation_def *def = wf_annotation_lookup(kv->key);
    if (!def) {
        WF_REPORT(ctx, WF_IST0108, r, kv->node, kv->key);
        return;
    }
    if (def->deprecated) {
        bool is_inject = strcmp(kv->key, SIDECAR_INJECT) == 0;
        /* Both the deprecated annotation and its replacement label: the user knows. */
        if (!(is_inject && wf_kvs_get(&r->labels, SIDECAR_INJECT))) {
            const char *extra =
                is_inject ? " in favor of the \"sidecar.istio.io/inject\" label" : "";
            WF_REPORT(ctx, WF_IST0135, r, kv->node, kv->key, extra);
        }
    }
    if (attaches_to_any(def))
        return;
    bool found;
    const char *list = attach_list(ctx, def, kind, &found);
    if (!found) {
        WF_REPORT(ctx, WF_IST0107, r, kv->node, kv->key, list);
        return;
    }
    const char *problem;
    if (wf_inject_annotation_invalid(wf_ctx_arena(ctx), kv->key, kv->value, &problem))
        WF_REPORT(ctx, WF_IST0125, r, kv->node, kv->key, problem);
}

static void k8s_check(wf_analysis_ctx *ctx, const wf_resource *r, const char *kind)
{
    for (size_t i = 0; i < r->annotations.n; i++) {
        const wf_kv *kv = &r->annotations.items[i];
        if (istio_annotation(kv->key))
            k8s_check_one(ctx, r, kind, kv);
    }
}

static void run_k8s(wf_analysis_ctx *ctx)
{
    for_annotated(ctx, k8s_check);
}

const wf_analyzer wf_an_annotations_K8sAnalyzer = {
    .name = "annotations.K8sAnalyzer",
    .description = "Checks for misplaced and invalid Istio annotations in Kubernetes resources",
    .inputs = {WF_KIND_NAMESPACE, WF_KIND_SERVICE, WF_KIND_POD, WF_KIND_DEPLOYMENT, WF_KIND_OTHER},
    .codes = {WF_IST0107, WF_IST0108, WF_IST0125, WF_IST0135, WF_MSG_COUNT},
    .default_on = true,
    .run = run_k8s,
};

/* ---- annotations.AlphaAnalyzer (maturity.go) ---- */

/* Set by istiod or controllers, never by users: never reported. */
static bool always_ignored(const char *ann)
{
    return strcmp(ann, "sidecar.istio.io/status") == 0 ||
           strcmp(ann, "gateway.istio.io/controller-version") == 0 ||
           strcmp(ann, "istio.io/rev") == 0;
}

/* Set by default when the CNI plugin (no istio-init container) does the redirection. */
static bool ignored_with_cni(const char *ann)
{
    return strcmp(ann, "sidecar.istio.io/interceptionMode") == 0 ||
           strcmp(ann, "traffic.sidecar.istio.io/includeInboundPorts") == 0 ||
           strcmp(ann, "traffic.sidecar.istio.io/excludeInboundPorts") == 0 ||
           strcmp(ann, "traffic.sidecar.istio.io/includeOutboundIPRanges") == 0;
}

/* isCNIEnabled: the pod has no init container named istio-init. */
static bool cni_enabled(const wf_resource *pod)
{
    const wf_pod_spec *spec = pod->t.pod ? &pod->t.pod->spec : NULL;
    for (size_t i = 0; spec && i < spec->ninit; i++) {
        const char *name = spec->init_containers[i].name;
        if (name && strcmp(name, "istio-init") == 0)
            return false;
    }
    return true;
}

static void alpha_check(wf_analysis_ctx *ctx, const wf_resource *r, const char *kind)
{
    bool skip_default = r->kind == WF_KIND_POD && cni_enabled(r);
    for (size_t i = 0; i < r->annotations.n; i++) {
        const wf_kv *kv = &r->annotations.items[i];
        if (!istio_annotation(kv->key))
            continue;
        const wf_annotation_def *def = wf_annotation_lookup(kv->key);
        if (!def || def->status != WF_ANN_ALPHA || always_ignored(kv->key))
            continue;
        if (skip_default && ignored_with_cni(kv->key))
            continue;
        WF_REPORT(ctx, WF_IST0136, r, kv->node, kv->key);
    }
}

static void run_alpha(wf_analysis_ctx *ctx)
{
    for_annotated(ctx, alpha_check);
}

const wf_analyzer wf_an_annotations_AlphaAnalyzer = {
    .name = "annotations.AlphaAnalyzer",
    .description = "Checks for alpha Istio annotations in Kubernetes resources",
    .inputs = {WF_KIND_NAMESPACE, WF_KIND_SERVICE, WF_KIND_POD, WF_KIND_DEPLOYMENT, WF_KIND_OTHER},
    .codes = {WF_IST0136, WF_MSG_COUNT},
    .default_on = false,
    .run = run_alpha,
};
