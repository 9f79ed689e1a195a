/*
 * an_service.c - Service analyzers.
 *
 * Follows istio/istio pkg/config/analysis/analyzers:
 * - service/portname.go (PortNameAnalyzer): IST0118 for a port whose protocol
 *   (kube.ConvertProtocol over protocol, name and appProtocol) is unsupported; on an
 *   ExternalName Service IST0150 instead, also for a port named exactly "tcp". Istio
 *   control-plane Services (label `istio`, or `release: istio`) and gateway-managed Services
 *   are skipped.
 * - multicluster/service.go (ServiceAnalyzer, "services.MultiClusterServiceAnalyzer"):
 *   IST0170 when a Service with the same namespace/name read from several clusters differs in
 *   headless mode, type or ports. Upstream only considers Services whose origin carries a
 *   cluster ID (live clusters, or per-cluster sources in its test harness); files read by
 *   `istioctl analyze` carry none. weft's store has one unnamed cluster, so no Service has a
 *   cluster ID and the analyzer reports nothing; the comparison is kept complete for when the
 *   store records a cluster per resource (see resource_cluster()).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"

/* ---- service.PortNameAnalyzer ---- */

/* util.IsIstioControlPlane, and the gateway-managed Services upstream skips. */
static bool skipped_service(const wf_resource *r)
{
    if (wf_kvs_get(&r->labels, "istio"))
        return true;
    const char *release = wf_kvs_get(&r->labels, "release");
    if (release && strcmp(release, "istio") == 0)
        return true;
    const char *managed = wf_kvs_get(&r->labels, "gateway.istio.io/managed");
    return managed && (strcmp(managed, "istio.io-gateway-controller") == 0 ||
                       strcmp(managed, "istio.io-mesh-controller") == 0 ||
                       strcmp(managed, "istio.io-eastwest-controller") == 0);
}

/* protocol.Parse of a name prefix: true for the protocols Istio knows. */
static bool known_protocol(const char *name, size_t len)
{
    static const char *const known[] = {"tcp",   "udp",   "grpc", "grpc-web", "http",  "http_proxy",
                                        "http2", "https", "tls",  "mongo",    "redis", "mysql"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strlen(known[i]) == len && strncasecmp(known[i], name, len) == 0)
            return true;
    return false;
}

/* kube.ConvertProtocol(...).IsUnsupported(). app_protocol is NULL when the field is absent. */
static bool protocol_unsupported(int64_t port, const char *name, const char *proto,
                                 const char *app_protocol)
{
    if (proto && strcmp(proto, "UDP") == 0)
        return false;
    if (app_protocol) {
        name = app_protocol;
        if (strcmp(name, "kubernetes.io/h2c") == 0 || strcmp(name, "kubernetes.io/ws") == 0 ||
            strcmp(name, "kubernetes.io/wss") == 0)
            return false;
    }
    if (strncasecmp(name, "grpc-web", 8) == 0)
        return false;
    const char *dash = strchr(name, '-');
    if (known_protocol(name, dash ? (size_t)(dash - name) : strlen(name)))
        return false;
    return !(port == 25 || port == 53 || port == 3306 || port == 27017);
}

/* IntOrString.String() of targetPort as written ("0" when absent). */
static const char *target_port_text(wf_analysis_ctx *ctx, const wf_node *tp)
{
    int64_t v;
    if (!tp || tp->type != WF_NODE_SCALAR)
        return "0";
    if (!tp->quoted && wf_node_int(tp, &v))
        return wf_arena_printf(wf_ctx_arena(ctx), "%lld", (long long)v);
    return wf_node_str(tp);
}

static void analyze_port(wf_analysis_ctx *ctx, const wf_resource *r, bool external_name,
                         const wf_node *p)
{
    const char *name = wf_map_str(p, "name");
    const wf_node *app = wf_map_get(p, "appProtocol");
    const wf_node *port_node = wf_map_get(p, "port");
    int64_t port = 0;
    if (!wf_node_int(port_node, &port))
        port = 0;
    if (!name)
        name = "";
    const char *app_protocol = app && app->type != WF_NODE_NULL ? wf_node_str(app) : NULL;
    if (app && app->type != WF_NODE_NULL && !app_protocol)
        app_protocol = "";
    bool bad = protocol_unsupported(port, name, wf_map_str(p, "protocol"), app_protocol);
    if (!bad && !(external_name && strcmp(name, "tcp") == 0))
        return;
    if (external_name) {
        WF_REPORT0(ctx, WF_IST0150, r, port_node);
        return;
    }
    const char *port_s = wf_arena_printf(wf_ctx_arena(ctx), "%lld", (long long)port);
    const char *target = target_port_text(ctx, wf_map_get(p, "targetPort"));
    if (port_s && target)
        WF_REPORT(ctx, WF_IST0118, r, port_node, name, port_s, target);
}

static void run_port_name(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *svcs = wf_store_kind(wf_ctx_store(ctx), WF_KIND_SERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *r = svcs[i];
        if (skipped_service(r))
            continue;
        const char *type = wf_map_str(r->spec, "type");
        bool external_name = type && strcmp(type, "ExternalName") == 0;
        const wf_node *ports = wf_map_get(r->spec, "ports");
        for (size_t k = 0; k < wf_seq_len(ports); k++)
            analyze_port(ctx, r, external_name, wf_seq_at(ports, k));
    }
}

const wf_analyzer wf_an_service_PortNameAnalyzer = {
    .name = "service.PortNameAnalyzer",
    .description = "Checks the port names associated with each service",
    .inputs = {WF_KIND_SERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0118, WF_IST0150, WF_MSG_COUNT},
    .default_on = true,
    .run = run_port_name,
};

/* ---- services.MultiClusterServiceAnalyzer ---- */

/* The cluster a resource was read from; NULL (upstream: "") when unknown, which is always
 * the case for resources read from files. */
static const char *resource_cluster(const wf_resource *r)
{
    (void)r;
    return NULL;
}

static bool is_headless(const wf_resource *r)
{
    const char *ip = wf_map_str(r->spec, "clusterIP");
    return ip && strcmp(ip, "None") == 0;
}

static bool same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static int cmp_port_name(const void *a, const void *b)
{
    const char *x = wf_map_str(*(const wf_node *const *)a, "name");
    const char *y = wf_map_str(*(const wf_node *const *)b, "name");
    return strcmp(x ? x : "", y ? y : "");
}

/* Do two port nodes hold the same ServicePort (name, protocol, appProtocol, port,
 * targetPort, nodePort)? */
static bool same_port(const wf_node *a, const wf_node *b)
{
    static const char *const fields[] = {"name",       "protocol", "appProtocol",
                                         "targetPort", "nodePort", "port"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (!same_str(wf_map_str(a, fields[i]), wf_map_str(b, fields[i])))
            return false;
    return true;
}

/* compareServicePorts: same count and, sorted stably by name, equal one by one. */
static bool same_ports(wf_analysis_ctx *ctx, const wf_resource *a, const wf_resource *b)
{
    const wf_node *pa = wf_map_get(a->spec, "ports"), *pb = wf_map_get(b->spec, "ports");
    size_t n = wf_seq_len(pa);
    if (n != wf_seq_len(pb))
        return false;
    const wf_node **va = wf_arena_alloc(wf_ctx_arena(ctx), (2 * n + 1) * sizeof(*va));
    if (!va)
        return true;
    const wf_node **vb = va + n;
    for (size_t i = 0; i < n; i++) {
        va[i] = wf_seq_at(pa, i);
        vb[i] = wf_seq_at(pb, i);
    }
    qsort(va, n, sizeof(*va), cmp_port_name); /* names are unique within a Service */
    qsort(vb, n, sizeof(*vb), cmp_port_name);
    for (size_t i = 0; i < n; i++)
        if (!same_port(va[i], vb[i]))
            return false;
    return true;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The clusters findInconsistencies names: all of them for mixed headless/ClusterIP mode,
 * else those whose copy differs plus the first. Sorted, unique; returns the count. */
static size_t inconsistent_clusters(const wf_resource **copies, const bool *differs, size_t n,
                                    bool mixed, const char **out)
{
    size_t nc = 0;
    for (size_t i = 0; i < n; i++)
        if (mixed || differs[i])
            out[nc++] = resource_cluster(copies[i]);
    if (nc && !mixed && !differs[0])
        out[nc++] = resource_cluster(copies[0]);
    qsort(out, nc, sizeof(*out), cmp_cstr);
    size_t u = 0;
    for (size_t i = 0; i < nc; i++)
        if (u == 0 || strcmp(out[i], out[u - 1]) != 0)
            out[u++] = out[i];
    return u;
}

/* findInconsistencies over one Service's copies (one per cluster, first = reference). The
 * message's clusters argument is a Go %q of a []string upstream (["c1" "c2"]); it is passed
 * here as the %v form, which the formatter quotes as one string. */
static void compare_copies(wf_analysis_ctx *ctx, const wf_resource **copies, size_t n)
{
    wf_arena *a = wf_ctx_arena(ctx);
    const char **clusters = wf_arena_alloc(a, (n + 1) * sizeof(*clusters));
    bool *differs = wf_arena_alloc(a, (n + 1) * sizeof(*differs));
    bool bad[3] = {false, false, false}; /* headless, type, ports */
    if (!clusters || !differs)
        return;
    for (size_t i = 0; i < n; i++) {
        if (is_headless(copies[0]) != is_headless(copies[i]))
            bad[0] = true;
        if (!same_str(wf_map_str(copies[0]->spec, "type"), wf_map_str(copies[i]->spec, "type")))
            differs[i] = bad[1] = true;
        if (!same_ports(ctx, copies[0], copies[i]))
            differs[i] = bad[2] = true;
    }
    size_t nc = inconsistent_clusters(copies, differs, n, bad[0], clusters);
    if (nc == 0)
        return;
    static const char *const reasons[] = {"service has mixed mode like headless and clusterIP",
                                          "service type is inconsistent",
                                          "service ports are inconsistent"};
    wf_strbuf why = WF_STRBUF_INIT;
    for (size_t k = 0; k < 3; k++) { /* already in sorted order */
        if (!bad[k])
            continue;
        wf_strbuf_puts(&why, why.len ? "; " : "");
        wf_strbuf_puts(&why, reasons[k]);
    }
    const char *list = wf_go_slice(ctx, clusters, nc);
    if (list && !wf_strbuf_failed(&why))
        WF_REPORT(ctx, WF_IST0170, copies[0], NULL, copies[0]->name, copies[0]->ns, list,
                  wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
}

/* Copies of Service i (same namespace/name) from distinct clusters, the last read per
 * cluster; none when i is not the first of its name. */
static size_t gather_copies(const wf_resource *const *svcs, size_t n, size_t i,
                            const wf_resource **out)
{
    const wf_resource *r = svcs[i];
    size_t nc = 0;
    for (size_t j = 0; j < n; j++) {
        const wf_resource *o = svcs[j];
        const char *cl = resource_cluster(o);
        if (!cl || strcmp(o->ns, r->ns) != 0 || strcmp(o->name, r->name) != 0)
            continue;
        if (j < i)
            return 0;
        size_t k = 0;
        while (k < nc && strcmp(resource_cluster(out[k]), cl) != 0)
            k++;
        out[k] = o;
        nc += k == nc;
    }
    return nc;
}

static void run_multicluster_service(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *svcs = wf_store_kind(wf_ctx_store(ctx), WF_KIND_SERVICE, &n);
    const wf_resource **copies = wf_arena_alloc(wf_ctx_arena(ctx), (n + 1) * sizeof(*copies));
    if (!copies)
        return;
    for (size_t i = 0; i < n; i++) {
        if (!resource_cluster(svcs[i]))
            continue;
        size_t nc = gather_copies(svcs, n, i, copies);
        if (nc > 1)
            compare_copies(ctx, copies, nc);
    }
}

const wf_analyzer wf_an_services_MultiClusterServiceAnalyzer = {
    .name = "services.MultiClusterServiceAnalyzer",
    .description = "Check the validity of services in the multi-cluster environment",
    .inputs = {WF_KIND_SERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0170, WF_MSG_COUNT},
    .default_on = true,
    .run = run_multicluster_service,
};
