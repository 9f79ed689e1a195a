/*
 * an_deployment.c - Deployment analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers/deployment/services.go
 * (ServiceAssociationAnalyzer, "deployment.MultiServiceAnalyzer"). For each Deployment in
 * the mesh (util.DeploymentInMesh: an istio-proxy container with an image, else the
 * sidecar.istio.io/inject label, then annotation, of the pod template, else the namespace's
 * istio-injection=enabled label) that is not a waypoint, take the Services of its namespace
 * whose non-empty selector matches the template labels, then report
 * - IST0116 for each port number those Services expose with different protocols, and
 * - IST0137 for each targetPort (the port number when unset or 0) that they reach through
 *   different ports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"

/* ---- util.DeploymentInMesh ---- */

static bool has_istio_proxy(const wf_pod_spec *spec)
{
    for (size_t i = 0; i < spec->ncontainers; i++) {
        const wf_container *c = &spec->containers[i];
        if (c->name && strcmp(c->name, "istio-proxy") == 0)
            return c->image && c->image[0];
    }
    return false;
}

static bool deployment_in_mesh(const wf_store *s, const wf_resource *r)
{
    const wf_workload *w = r->t.workload;
    if (has_istio_proxy(&w->spec))
        return true;
    const char *v = wf_kvs_get(&w->template_labels, "sidecar.istio.io/inject");
    if (!v)
        v = wf_kvs_get(&w->template_annotations, "sidecar.istio.io/inject");
    if (v)
        return strcmp(v, "true") == 0;
    const wf_resource *ns = wf_store_find(s, WF_KIND_NAMESPACE, "", r->ns);
    const char *inj = ns ? wf_kvs_get(&ns->labels, "istio-injection") : NULL;
    return inj && strcmp(inj, "enabled") == 0;
}

static bool is_waypoint(const wf_resource *r)
{
    const char *m = wf_kvs_get(&r->labels, "gateway.istio.io/managed");
    return m && strcmp(m, "istio.io-mesh-controller") == 0;
}

/* ---- the Services behind a Deployment ---- */

/* One port of a matching Service. */
typedef struct svc_port {
    const char *service; /* "<ns>/<name>" */
    int64_t port;
    const char *protocol; /* "TCP" when unset */
    const char *target;   /* targetPort as IntOrString.String(), the port when unset/0 */
} svc_port;

static const char *target_key(wf_analysis_ctx *ctx, const wf_node *tp, int64_t port)
{
    int64_t v;
    const char *s = wf_node_str(tp);
    if (s && !tp->quoted && wf_node_int(tp, &v))
        s = wf_arena_printf(wf_ctx_arena(ctx), "%lld", (long long)v);
    if (!s || !s[0] || strcmp(s, "0") == 0)
        s = wf_arena_printf(wf_ctx_arena(ctx), "%lld", (long long)port);
    return s;
}

static bool service_selects(const wf_resource *svc, const wf_resource *dep)
{
    const wf_service *s = svc->t.service;
    if (!s || s->selector.n == 0 || strcmp(svc->ns, dep->ns) != 0)
        return false;
    return wf_kvs_subset(&s->selector, &dep->t.workload->template_labels);
}

/* Ports of every Service selecting the Deployment's pods, in Service then port order. */
static svc_port *matching_ports(wf_analysis_ctx *ctx, const wf_resource *dep, size_t *count)
{
    size_t n, total = 0;
    const wf_resource *const *svcs =
        wf_store_kind_ns(wf_ctx_store(ctx), WF_KIND_SERVICE, dep->ns, &n);
    for (size_t i = 0; i < n; i++)
        if (service_selects(svcs[i], dep))
            total += wf_seq_len(wf_map_get(svcs[i]->spec, "ports"));
    svc_port *out = wf_arena_alloc(wf_ctx_arena(ctx), (total + 1) * sizeof(*out));
    *count = 0;
    for (size_t i = 0; out && i < n; i++) {
        if (!service_selects(svcs[i], dep))
            continue;
        const char *name = wf_full_name(ctx, svcs[i]);
        const wf_node *ports = wf_map_get(svcs[i]->spec, "ports");
        for (size_t k = 0; name && k < wf_seq_len(ports); k++) {
            const wf_node *p = wf_seq_at(ports, k);
            svc_port *sp = &out[*count];
            if (!wf_node_int(wf_map_get(p, "port"), &sp->port))
                sp->port = 0;
            sp->service = name;
            sp->protocol = wf_map_str(p, "protocol");
            if (!sp->protocol || !sp->protocol[0])
                sp->protocol = "TCP";
            sp->target = target_key(ctx, wf_map_get(p, "targetPort"), sp->port);
            *count += sp->target != NULL;
        }
    }
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- IST0116: one port number, several protocols ---- */

static bool port_seen_before(const svc_port *v, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (v[j].port == v[i].port)
            return true;
    return false;
}

static void report_port_protocols(wf_analysis_ctx *ctx, const wf_resource *dep, const svc_port *v,
                                  size_t n, const char **names)
{
    for (size_t i = 0; i < n; i++) {
        if (port_seen_before(v, i))
            continue;
        size_t nn = 0;
        bool multi = false;
        for (size_t j = i; j < n; j++) {
            if (v[j].port != v[i].port)
                continue;
            multi |= strcmp(v[j].protocol, v[i].protocol) != 0;
            names[nn++] = v[j].service;
        }
        if (!multi)
            continue;
        qsort(names, nn, sizeof(*names), cmp_str);
        const char *port = wf_arena_printf(wf_ctx_arena(ctx), "%lld", (long long)v[i].port);
        const char *list = wf_go_slice(ctx, names, nn);
        if (port && list)
            WF_REPORT(ctx, WF_IST0116, dep, wf_map_get(dep->metadata, "name"), dep->name, port,
                      list);
    }
}

/* ---- IST0137: one targetPort, several ports ---- */

static bool target_seen_before(const svc_port *v, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(v[j].target, v[i].target) == 0)
            return true;
    return false;
}

/* The (port -> service) map of one targetPort: the last Service per port number wins. */
static size_t target_ports(const svc_port *v, size_t n, size_t i, const char **names,
                           int64_t *ports)
{
    size_t np = 0;
    for (size_t j = i; j < n; j++) {
        if (strcmp(v[j].target, v[i].target) != 0)
            continue;
        size_t k = 0;
        while (k < np && ports[k] != v[j].port)
            k++;
        ports[k] = v[j].port;
        names[k] = v[j].service;
        np += k == np;
    }
    return np;
}

static const char *int_slice(wf_analysis_ctx *ctx, const int64_t *v, size_t n)
{
    const char **s = wf_arena_alloc(wf_ctx_arena(ctx), (n + 1) * sizeof(*s));
    for (size_t i = 0; s && i < n; i++)
        if (!(s[i] = wf_arena_printf(wf_ctx_arena(ctx), "%lld", (long long)v[i])))
            return NULL;
    return s ? wf_go_slice(ctx, s, n) : NULL;
}

static void report_target_ports(wf_analysis_ctx *ctx, const wf_resource *dep, const svc_port *v,
                                size_t n, const char **names)
{
    int64_t *ports = wf_arena_alloc(wf_ctx_arena(ctx), (n + 1) * sizeof(*ports));
    for (size_t i = 0; ports && i < n; i++) {
        if (target_seen_before(v, i))
            continue;
        size_t np = target_ports(v, n, i, names, ports);
        if (np < 2)
            continue;
        qsort(names, np, sizeof(*names), cmp_str);
        qsort(ports, np, sizeof(*ports), cmp_i64);
        const char *svcs = wf_go_slice(ctx, names, np);
        const char *plist = int_slice(ctx, ports, np);
        if (svcs && plist)
            WF_REPORT(ctx, WF_IST0137, dep, wf_map_get(dep->metadata, "name"), dep->name, svcs,
                      v[i].target, plist);
    }
}

static void run_multi_service(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t n;
    const wf_resource *const *deps = wf_store_kind(s, WF_KIND_DEPLOYMENT, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *dep = deps[i];
        if (!dep->t.workload || is_waypoint(dep) || !deployment_in_mesh(s, dep))
            continue;
        size_t np;
        svc_port *ports = matching_ports(ctx, dep, &np);
        const char **names = wf_arena_alloc(wf_ctx_arena(ctx), (np + 1) * sizeof(*names));
        if (!ports || !names)
            continue;
        report_port_protocols(ctx, dep, ports, np, names);
        report_target_ports(ctx, dep, ports, np, names);
    }
}

const wf_analyzer wf_an_deployment_MultiServiceAnalyzer = {
    .name = "deployment.MultiServiceAnalyzer",
    .description = "Checks association between services and pods",
    .inputs = {WF_KIND_SERVICE, WF_KIND_DEPLOYMENT, WF_KIND_NAMESPACE, WF_KIND_OTHER},
    .codes = {WF_IST0116, WF_IST0137, WF_MSG_COUNT},
    .default_on = true,
    .run = run_multi_service,
};
