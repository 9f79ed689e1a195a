/*
 * an_telemetry.c - Telemetry analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers/telemetry:
 * - selector.go (SelectorAnalyzer): a Telemetry whose selector.matchLabels is not empty must
 *   select at least one pod of its namespace (IST0101, reftype "selector", the selector as
 *   k8s labels.Selector prints it: sorted "k=v" joined by ","); a pod selected by several
 *   Telemetries gives IST0159 on each of them (the sorted Telemetry names, the pod's
 *   namespace and name). Pods the store synthesizes from workload controllers count.
 * - default_selector.go (DefaultSelectorAnalyzer): more than one Telemetry without a
 *   `selector` in a namespace gives IST0160 on each.
 * - providers.go (ProviderAnalyzer): when MeshConfig has no defaultProviders.accessLogging,
 *   every accessLogging entry that is not disabled and names no provider gives IST0157.
 * - lightstep.go (LightstepAnalyzer): a tracing provider that MeshConfig defines as a
 *   Lightstep extension provider gives IST0002.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"

/* ---- helpers ---- */

/* spec.selector as a Go *WorkloadSelector: NULL when absent or null. */
static const wf_node *tel_selector(const wf_resource *r)
{
    const wf_node *s = wf_map_get(r->spec, "selector");
    return s && s->type != WF_NODE_NULL ? s : NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* selector.matchLabels as a Go map (one entry per key, the last wins), sorted by key. */
static bool match_labels(wf_analysis_ctx *ctx, const wf_node *sel, wf_kvs *out)
{
    wf_kvs raw;
    return wf_decode_kvs(wf_ctx_arena(ctx), wf_map_get(sel, "matchLabels"), &raw) == 0 &&
           wf_kvs_go_map(wf_ctx_arena(ctx), &raw, out);
}

/* The sorted names of a list of resources, as Go's %v prints a []string. */
static const char *sorted_names(wf_analysis_ctx *ctx, const wf_resource *const *rs, size_t n)
{
    const char **names = wf_arena_alloc(wf_ctx_arena(ctx), (n ? n : 1) * sizeof(*names));
    if (!names)
        return "[]";
    for (size_t i = 0; i < n; i++)
        names[i] = rs[i]->name;
    qsort(names, n, sizeof(*names), cmp_str);
    return wf_go_slice(ctx, names, n);
}

/* The scalar node at metadata.name (util.MetadataName), or NULL. */
static const wf_node *name_node(const wf_resource *r)
{
    const wf_node *n = wf_map_get(r->metadata, "name");
    return n && (n->type == WF_NODE_SCALAR || n->type == WF_NODE_NULL) ? n : NULL;
}

/* ---- SelectorAnalyzer ---- */

typedef struct tel_sel {
    const wf_resource *r;
    wf_kvs labels; /* sorted, one per key; n == 0: the Telemetry is skipped */
} tel_sel;

static void report_conflicts(wf_analysis_ctx *ctx, const wf_resource *pod, const tel_sel *ts,
                             size_t nt, const wf_resource **buf)
{
    size_t m = 0;
    for (size_t i = 0; i < nt; i++) {
        if (ts[i].labels.n && strcmp(ts[i].r->ns, pod->ns) == 0 &&
            wf_kvs_subset(&ts[i].labels, &pod->labels))
            buf[m++] = ts[i].r;
    }
    if (m < 2)
        return;
    const char *names = sorted_names(ctx, buf, m);
    for (size_t i = 0; i < m; i++)
        WF_REPORT(ctx, WF_IST0159, buf[i], name_node(buf[i]), names, pod->ns, pod->name);
}

static bool selects_some_pod(const wf_store *s, const tel_sel *t)
{
    size_t np;
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &np);
    for (size_t i = 0; i < np; i++)
        if (strcmp(pods[i]->ns, t->r->ns) == 0 && wf_kvs_subset(&t->labels, &pods[i]->labels))
            return true;
    return false;
}

static void report_not_found(wf_analysis_ctx *ctx, const tel_sel *t)
{
    /* util.ErrorLine(r, "{.spec.selector.matchLabels.<first key>}") */
    const wf_node *at = t->labels.items[0].node;
    if (at && at->type != WF_NODE_SCALAR && at->type != WF_NODE_NULL)
        at = NULL;
    WF_REPORT(ctx, WF_IST0101, t->r, at, "selector",
              wf_selector_string(wf_ctx_arena(ctx), &t->labels));
}

static void run_selector(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t nt, np;
    const wf_resource *const *tels = wf_store_kind(s, WF_KIND_TELEMETRY, &nt);
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &np);
    if (nt == 0)
        return;
    tel_sel *ts = wf_arena_alloc(wf_ctx_arena(ctx), nt * sizeof(*ts));
    const wf_resource **buf = wf_arena_alloc(wf_ctx_arena(ctx), nt * sizeof(*buf));
    if (!ts || !buf)
        return;
    for (size_t i = 0; i < nt; i++) {
        ts[i].r = tels[i];
        const wf_node *sel = tel_selector(tels[i]);
        if (sel && !match_labels(ctx, sel, &ts[i].labels))
            return;
        if (ts[i].labels.n && !selects_some_pod(s, &ts[i]))
            report_not_found(ctx, &ts[i]);
    }
    for (size_t i = 0; i < np; i++)
        report_conflicts(ctx, pods[i], ts, nt, buf);
}

const wf_analyzer wf_an_telemetry_SelectorAnalyzer = {
    .name = "telemetry.SelectorAnalyzer",
    .description = "Validates that telemetries that define a selector match at least one pod, "
                   "and that there aren't multiple telemetry resources that select overlapping "
                   "pods",
    .inputs = {WF_KIND_TELEMETRY, WF_KIND_POD, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0159, WF_MSG_COUNT},
    .default_on = true,
    .run = run_selector,
};

/* ---- DefaultSelectorAnalyzer ---- */

static void run_default_selector(wf_analysis_ctx *ctx)
{
    size_t nt;
    const wf_resource *const *tels = wf_store_kind(wf_ctx_store(ctx), WF_KIND_TELEMETRY, &nt);
    if (nt == 0)
        return;
    const wf_resource **group = wf_arena_alloc(wf_ctx_arena(ctx), nt * sizeof(*group));
    if (!group)
        return;
    for (size_t i = 0; i < nt; i++) {
        if (tel_selector(tels[i]))
            continue;
        bool seen = false; /* namespace handled at its first selector-less Telemetry */
        for (size_t j = 0; j < i && !seen; j++)
            seen = !tel_selector(tels[j]) && strcmp(tels[j]->ns, tels[i]->ns) == 0;
        if (seen)
            continue;
        size_t m = 0;
        for (size_t j = i; j < nt; j++)
            if (!tel_selector(tels[j]) && strcmp(tels[j]->ns, tels[i]->ns) == 0)
                group[m++] = tels[j];
        if (m < 2)
            continue;
        const char *names = sorted_names(ctx, group, m);
        for (size_t j = 0; j < m; j++)
            WF_REPORT(ctx, WF_IST0160, group[j], NULL, names, tels[i]->ns);
    }
}

const wf_analyzer wf_an_telemetry_DefaultSelectorAnalyzer = {
    .name = "telemetry.DefaultSelectorAnalyzer",
    .description = "Validates that there aren't multiple telemetry resources that have no "
                   "selector",
    .inputs = {WF_KIND_TELEMETRY, WF_KIND_OTHER},
    .codes = {WF_IST0160, WF_MSG_COUNT},
    .default_on = true,
    .run = run_default_selector,
};

/* ---- ProviderAnalyzer ---- */

static void run_provider(wf_analysis_ctx *ctx)
{
    if (wf_seq_len(wf_meshcfg_get(wf_ctx_mesh(ctx), "defaultProviders.accessLogging")) > 0)
        return;
    size_t nt;
    const wf_resource *const *tels = wf_store_kind(wf_ctx_store(ctx), WF_KIND_TELEMETRY, &nt);
    for (size_t i = 0; i < nt; i++) {
        const wf_node *logs = wf_map_get(tels[i]->spec, "accessLogging");
        for (size_t j = 0; j < wf_seq_len(logs); j++) {
            const wf_node *l = wf_seq_at(logs, j);
            bool disabled = false;
            if (wf_node_bool(wf_map_get(l, "disabled"), &disabled) && disabled)
                continue;
            if (wf_seq_len(wf_map_get(l, "providers")) == 0)
                WF_REPORT(ctx, WF_IST0157, tels[i], NULL, tels[i]->name, tels[i]->ns);
        }
    }
}

const wf_analyzer wf_an_telemetry_ProviderAnalyzer = {
    .name = "telemetry.ProviderAnalyzer",
    .description = "Validates that providers in telemetry resource is valid",
    .inputs = {WF_KIND_TELEMETRY, WF_KIND_OTHER},
    .codes = {WF_IST0157, WF_MSG_COUNT},
    .default_on = true,
    .run = run_provider,
};

/* ---- LightstepAnalyzer ---- */

/* Is name a MeshConfig extension provider of the Lightstep type? */
static bool is_lightstep_provider(const wf_node *providers, const char *name)
{
    for (size_t i = 0; i < wf_seq_len(providers); i++) {
        const wf_node *p = wf_seq_at(providers, i);
        const wf_node *ls = wf_map_get(p, "lightstep");
        const char *pn = wf_map_str(p, "name");
        if (ls && ls->type != WF_NODE_NULL && strcmp(pn ? pn : "", name) == 0)
            return true;
    }
    return false;
}

static bool any_lightstep_provider(const wf_node *providers)
{
    for (size_t i = 0; i < wf_seq_len(providers); i++) {
        const wf_node *ls = wf_map_get(wf_seq_at(providers, i), "lightstep");
        if (ls && ls->type != WF_NODE_NULL)
            return true;
    }
    return false;
}

static void run_lightstep(wf_analysis_ctx *ctx)
{
    const wf_node *providers = wf_meshcfg_get(wf_ctx_mesh(ctx), "extensionProviders");
    if (!any_lightstep_provider(providers))
        return;
    size_t nt;
    const wf_resource *const *tels = wf_store_kind(wf_ctx_store(ctx), WF_KIND_TELEMETRY, &nt);
    for (size_t i = 0; i < nt; i++) {
        const wf_node *tracing = wf_map_get(tels[i]->spec, "tracing");
        for (size_t j = 0; j < wf_seq_len(tracing); j++) {
            const wf_node *ps = wf_map_get(wf_seq_at(tracing, j), "providers");
            for (size_t k = 0; k < wf_seq_len(ps); k++) {
                const char *pn = wf_map_str(wf_seq_at(ps, k), "name");
                if (!is_lightstep_provider(providers, pn ? pn : ""))
                    continue;
                const char *detail = wf_arena_printf(
                    wf_ctx_arena(ctx),
                    "The Lightstep provider %s is deprecated, please migrate to OpenTelemetry "
                    "provider.",
                    pn ? pn : "");
                if (detail)
                    WF_REPORT(ctx, WF_IST0002, tels[i], NULL, detail);
            }
        }
    }
}

const wf_analyzer wf_an_telemetry_LightstepAnalyzer = {
    .name = "telemetry.LightstepAnalyzer",
    .description = "Validates that lightstep provider is still used",
    .inputs = {WF_KIND_TELEMETRY, WF_KIND_OTHER},
    .codes = {WF_IST0002, WF_MSG_COUNT},
    .default_on = true,
    .run = run_lightstep,
};
