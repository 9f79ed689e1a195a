/*
 * an_virtualservice.c - the virtualservice analyzers.
 *
 * Ports Istio's pkg/config/analysis/analyzers/virtualservice:
 *   destinationhosts.go             virtualservice.DestinationHostAnalyzer (IST0101, IST0112,
 *                                   IST0140)
 *   destinationrules.go             virtualservice.DestinationRuleAnalyzer (IST0101)
 *   gateways.go                     virtualservice.GatewayAnalyzer (IST0101, IST0132, IST0165)
 *   conflictingmeshgatewayhosts.go  virtualservice.ConflictingMeshGatewayHostsAnalyzer
 *                                   (IST0109)
 *   jwtclaimroute.go                virtualservice.JWTClaimRouteAnalyzer (IST0149)
 *
 * Deliberate differences from upstream (operator reports B018 and B020):
 * - DestinationRuleAnalyzer only counts DestinationRules visible from the VirtualService's
 *   namespace by their exportTo (or the mesh's defaultDestinationRuleExportTo), the way the
 *   proxy config does; rules in the root namespace are visible everywhere unless they
 *   restrict exportTo.
 * - ConflictingMeshGatewayHostsAnalyzer lists each VirtualService once per finding, so one
 *   VirtualService naming a host both short and fully qualified conflicts with nobody.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "analysis/an_virtualservice_util.h"
#include "analysis/util.h"

#define MESH_GATEWAY "mesh"

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

/* ======================= DestinationHostAnalyzer ======================= */

/* Go's %v of a []int: "[80 443]". */
static const char *ports_slice(wf_analysis_ctx *ctx, const wf_resource *svc)
{
    size_t n = wf_vsu_service_nports(svc);
    const char **v = wf_arena_alloc(wf_ctx_arena(ctx), (n ? n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        v[i] = wf_arena_printf(wf_ctx_arena(ctx), "%d", (int)wf_vsu_service_port(svc, i));
        if (!v[i])
            return NULL;
    }
    return wf_go_slice(ctx, v, n);
}

/* checkServiceEntryPorts: the line is the mirror host for "http.mirror", else the
 * DestinationHost path (which does not exist for "http.mirrors"). */
static void check_ports(wf_analysis_ctx *ctx, const wf_resource *vs, const wf_vsu_dest *d,
                        const wf_resource *svc)
{
    const wf_node *at = strcmp(d->rule, "http.mirror") == 0
                            ? wf_vsu_mirror_host_node(vs, d->rule_index)
                            : wf_vsu_dest_host_node(vs, d->rule, d->rule_index, d->dest_index);
    size_t n = wf_vsu_service_nports(svc);
    if (!d->has_port) {
        if (n > 1) {
            const char *ports = ports_slice(ctx, svc);
            if (ports)
                WF_REPORT(ctx, WF_IST0112, vs, at, d->host, ports);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (wf_vsu_service_port(svc, i) == d->port)
            return;
    }
    const char *hp = wf_arena_printf(wf_ctx_arena(ctx), "%s:%d", d->host, (int)d->port);
    if (hp)
        WF_REPORT(ctx, WF_IST0101, vs, at, "host:port", hp);
}

static void dh_check_hosts(wf_analysis_ctx *ctx, const wf_strmap *hosts, const wf_resource *vs)
{
    const wf_strs *export_to = &vs->t.vs->export_to;
    size_t n;
    const wf_vsu_dest *d = wf_vsu_route_dests(ctx, vs, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *svc = wf_vsu_dest_service(ctx, hosts, vs->ns, export_to, d[i].host);
        if (!svc) {
            const wf_node *at =
                wf_vsu_dest_host_node(vs, d[i].rule, d[i].rule_index, d[i].dest_index);
            WF_REPORT(ctx, WF_IST0101, vs, at, "host", d[i].host);
            continue;
        }
        check_ports(ctx, vs, &d[i], svc);
    }
    d = wf_vsu_mirror_dests(ctx, vs, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *svc = wf_vsu_dest_service(ctx, hosts, vs->ns, export_to, d[i].host);
        if (!svc) {
            const wf_node *at = wf_vsu_mirror_host_node(vs, d[i].rule_index);
            WF_REPORT(ctx, WF_IST0101, vs, at, "mirror host", d[i].host);
            continue;
        }
        check_ports(ctx, vs, &d[i], svc);
    }
}

/* initVirtualServiceDestinations: the http route destinations with a subset whose host is one of
 * their VirtualService's hosts. */
typedef struct subset_dest {
    const wf_resource *vs;
    const char *host;
} subset_dest;

typedef struct subset_dests {
    size_t n, cap;
    subset_dest *v;
} subset_dests;

static int sd_push(wf_arena *a, subset_dests *sd, const wf_resource *vs, const char *host)
{
    if (sd->n == sd->cap) {
        size_t cap = sd->cap ? sd->cap * 2 : 16;
        subset_dest *v = wf_arena_alloc(a, cap * sizeof(*v));
        if (!v)
            return -1;
        if (sd->n)
            memcpy(v, sd->v, sd->n * sizeof(*v));
        sd->v = v;
        sd->cap = cap;
    }
    sd->v[sd->n++] = (subset_dest){vs, host};
    return 0;
}

/* Entries of one VirtualService: each http route destination with a subset, once per
 * VirtualService host equal to its host. */
static int sd_add_vs(wf_arena *a, subset_dests *sd, const wf_resource *r)
{
    const wf_virtualservice *vs = r->t.vs;
    for (size_t i = 0; vs && i < vs->nhttp; i++) {
        for (size_t j = 0; j < vs->http[i].ndest; j++) {
            const wf_destination *d = &vs->http[i].dests[j].dest;
            const char *host = str_or_empty(d->host);
            if (!d->subset || !*d->subset)
                continue;
            for (size_t h = 0; h < vs->hosts.n; h++) {
                if (strcmp(host, str_or_empty(vs->hosts.v[h])) == 0 && sd_push(a, sd, r, host))
                    return -1;
            }
        }
    }
    return 0;
}

/* The line upstream gives IST0140: util.DestinationHost with the http route's *name* as the
 * rule, which resolves only when a rule list of that name exists. */
static const wf_node *ingress_line(const wf_resource *vs, const wf_route *http, size_t i, size_t j)
{
    return http->name ? wf_vsu_dest_host_node(vs, http->name, i, j) : NULL;
}

/* analyzeSubset (IST0140). */
static void dh_check_subset(wf_analysis_ctx *ctx, const wf_resource *vs, const subset_dests *sd)
{
    const wf_virtualservice *v = vs->t.vs;
    if (v->gateways.n == 0)
        return;
    for (size_t i = 0; i < v->nhttp; i++) {
        for (size_t j = 0; j < v->http[i].ndest; j++) {
            const wf_destination *d = &v->http[i].dests[j].dest;
            if (d->subset && *d->subset)
                continue;
            for (size_t k = 0; k < sd->n; k++) {
                if (strcmp(sd->v[k].host, str_or_empty(d->host)) != 0)
                    continue;
                WF_REPORT(ctx, WF_IST0140, vs, ingress_line(vs, &v->http[i], i, j),
                          wf_full_name(ctx, sd->v[k].vs), wf_full_name(ctx, vs));
            }
        }
    }
}

static void run_destination_host(wf_analysis_ctx *ctx)
{
    size_t nvs;
    const wf_resource *const *vss = wf_store_kind(wf_ctx_store(ctx), WF_KIND_VIRTUALSERVICE, &nvs);
    wf_strmap *hosts = wf_vsu_service_hosts(ctx);
    subset_dests sd = {0, 0, NULL};
    if (!hosts)
        return;
    for (size_t i = 0; i < nvs; i++) {
        if (sd_add_vs(wf_ctx_arena(ctx), &sd, vss[i]) != 0)
            return;
    }
    for (size_t i = 0; i < nvs; i++) {
        if (!vss[i]->t.vs)
            continue;
        dh_check_hosts(ctx, hosts, vss[i]);
        dh_check_subset(ctx, vss[i], &sd);
    }
}

const wf_analyzer wf_an_virtualservice_DestinationHostAnalyzer = {
    .name = "virtualservice.DestinationHostAnalyzer",
    .description = "Checks the destination hosts associated with each virtual service",
    .inputs = {WF_KIND_SERVICEENTRY, WF_KIND_VIRTUALSERVICE, WF_KIND_SERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0112, WF_IST0140, WF_MSG_COUNT},
    .default_on = true,
    .run = run_destination_host,
};

/* ======================= DestinationRuleAnalyzer ======================= */

typedef struct dr_subsets {
    const char *key; /* GetResourceNameFromHost(dr namespace, dr host) */
    const wf_resource *dr;
    const wf_strs *export_to;
    size_t next; /* next entry with the same key, SIZE_MAX at the end */
} dr_subsets;

/* DestinationRules with subsets, chained per key (the map gives the first entry + 1). */
typedef struct dr_index_t {
    dr_subsets *v;
    size_t n;
    wf_strmap *first;
} dr_index_t;

/* The mesh-wide default exportTo of DestinationRules (empty = everywhere). */
static wf_strs mesh_default_export(wf_analysis_ctx *ctx)
{
    wf_strs out = {0, NULL, NULL};
    const wf_node *n = wf_meshcfg_get(wf_ctx_mesh(ctx), "defaultDestinationRuleExportTo");
    size_t len = wf_seq_len(n);
    const char **v = len ? wf_arena_alloc(wf_ctx_arena(ctx), len * sizeof(*v)) : NULL;
    if (!v)
        return out;
    for (size_t i = 0; i < len; i++) {
        const char *s = wf_node_str(wf_seq_at(n, i));
        if (s)
            v[out.n++] = s;
    }
    out.v = v;
    return out;
}

static bool dr_index(wf_analysis_ctx *ctx, const wf_strs *def_export, dr_index_t *ix)
{
    size_t n;
    const wf_resource *const *drs = wf_store_kind(wf_ctx_store(ctx), WF_KIND_DESTINATIONRULE, &n);
    dr_subsets *out = wf_arena_alloc(wf_ctx_arena(ctx), (n ? n : 1) * sizeof(*out));
    size_t k = 0;
    ix->first = wf_strmap_new(wf_ctx_arena(ctx));
    if (!out || !ix->first)
        return false;
    for (size_t i = 0; i < n; i++) {
        const wf_destinationrule *dr = drs[i]->t.dr;
        if (!dr || dr->nsubsets == 0)
            continue;
        out[k].key = wf_vsu_resource_key(ctx, drs[i]->ns, str_or_empty(dr->host));
        void **slot = out[k].key ? wf_strmap_slot(ix->first, out[k].key, true) : NULL;
        if (!slot)
            return false;
        out[k].dr = drs[i];
        out[k].export_to = dr->export_to.n ? &dr->export_to : def_export;
        out[k].next = *slot ? (uintptr_t)*slot - 1 : SIZE_MAX;
        *slot = (void *)(uintptr_t)(k + 1);
        k++;
    }
    ix->v = out;
    ix->n = k;
    return true;
}

static bool dr_has_subset(const wf_destinationrule *dr, const char *subset)
{
    for (size_t i = 0; i < dr->nsubsets; i++) {
        if (strcmp(str_or_empty(dr->subsets[i].name), subset) == 0)
            return true;
    }
    return false;
}

/* checkDestinationSubset, restricted to the DestinationRules visible from the VirtualService's
 * namespace. */
static bool subset_defined(wf_analysis_ctx *ctx, const dr_index_t *ix, const char *vs_ns,
                           const wf_vsu_dest *d)
{
    if (!*d->subset)
        return true;
    const char *key = wf_vsu_resource_key(ctx, vs_ns, d->host);
    if (!key)
        return true;
    void **slot = wf_strmap_slot(ix->first, key, false);
    size_t i = slot && *slot ? (uintptr_t)*slot - 1 : SIZE_MAX;
    for (; i != SIZE_MAX; i = ix->v[i].next) {
        const dr_subsets *e = &ix->v[i];
        if (dr_has_subset(e->dr->t.dr, d->subset) &&
            wf_export_visible(e->export_to, e->dr->ns, vs_ns))
            return true;
    }
    return false;
}

static void dr_check_vs(wf_analysis_ctx *ctx, const dr_index_t *ix, const wf_resource *vs)
{
    size_t n;
    const wf_vsu_dest *d = wf_vsu_route_dests(ctx, vs, &n);
    for (size_t i = 0; i < n; i++) {
        if (subset_defined(ctx, ix, vs->ns, &d[i]))
            continue;
        const char *hs = wf_arena_printf(wf_ctx_arena(ctx), "%s+%s", d[i].host, d[i].subset);
        const wf_node *at = wf_vsu_dest_host_node(vs, d[i].rule, d[i].rule_index, d[i].dest_index);
        if (hs)
            WF_REPORT(ctx, WF_IST0101, vs, at, "host+subset in destinationrule", hs);
    }
    d = wf_vsu_mirror_dests(ctx, vs, &n);
    for (size_t i = 0; i < n; i++) {
        if (subset_defined(ctx, ix, vs->ns, &d[i]))
            continue;
        const char *hs = wf_arena_printf(wf_ctx_arena(ctx), "%s+%s", d[i].host, d[i].subset);
        const wf_node *at = wf_vsu_mirror_host_node(vs, d[i].rule_index);
        if (hs)
            WF_REPORT(ctx, WF_IST0101, vs, at, "mirror+subset in destinationrule", hs);
    }
}

static void run_destination_rule(wf_analysis_ctx *ctx)
{
    size_t nvs;
    wf_strs def_export = mesh_default_export(ctx);
    dr_index_t ix;
    const wf_resource *const *vss = wf_store_kind(wf_ctx_store(ctx), WF_KIND_VIRTUALSERVICE, &nvs);
    if (!dr_index(ctx, &def_export, &ix))
        return;
    for (size_t i = 0; i < nvs; i++) {
        if (vss[i]->t.vs)
            dr_check_vs(ctx, &ix, vss[i]);
    }
}

const wf_analyzer wf_an_virtualservice_DestinationRuleAnalyzer = {
    .name = "virtualservice.DestinationRuleAnalyzer",
    .description = "Checks the destination rules associated with each virtual service",
    .inputs = {WF_KIND_VIRTUALSERVICE, WF_KIND_DESTINATIONRULE, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_MSG_COUNT},
    .default_on = true,
    .run = run_destination_rule,
};

/* ======================= GatewayAnalyzer ======================= */

/* kube.IsInternalGatewayReference: "[ns/]<name>~istio-autogenerated-k8s-gateway~<listener>". */
static bool is_internal_gateway_ref(const char *gw)
{
    const char *slash = strchr(gw, '/');
    return strstr(slash ? slash + 1 : gw, "~istio-autogenerated-k8s-gateway~") != NULL;
}

/* Does any VirtualService host match one of hosts[0..n)? */
static bool any_vs_host_matches(const wf_strs *vs_hosts, const char *gw_host)
{
    for (size_t i = 0; i < vs_hosts->n; i++) {
        if (wf_vsu_host_matches(gw_host, str_or_empty(vs_hosts->v[i])))
            return true;
    }
    return false;
}

/* One server host after sanitizeServerHostNamespace and host.NamesForNamespace: the host
 * name seen from vs_ns, or NULL. A "." namespace part means the gateway's namespace, "*" every
 * namespace; "*" with host "*" gives "*", which matches every host just as the single "*"
 * that upstream's sanitizing leaves in that server does. */
static const char *gateway_host_for(wf_analysis_ctx *ctx, const char *h, const char *gw_ns,
                                    const char *vs_ns)
{
    const char *slash = strchr(h, '/');
    if (!slash)
        return h;
    size_t plen = (size_t)(slash - h);
    const char *p1 = slash + 1;
    const char *end = strchr(p1, '/'); /* strings.Split(h, "/")[1] */
    const char *name = end ? wf_arena_strndup(wf_ctx_arena(ctx), p1, (size_t)(end - p1)) : p1;
    bool dot = plen == 1 && h[0] == '.';
    bool star = plen == 1 && h[0] == '*';
    bool same = strlen(vs_ns) == plen && memcmp(h, vs_ns, plen) == 0;
    return (dot && strcmp(gw_ns, vs_ns) == 0) || star || same ? name : NULL;
}

/* vsHostInGateway for an Istio Gateway (none loaded = no hosts). */
static bool vs_host_in_gateway(wf_analysis_ctx *ctx, const char *gw_ns, const char *gw_name,
                               const wf_strs *vs_hosts, const char *vs_ns)
{
    const wf_resource *gw = wf_store_find(wf_ctx_store(ctx), WF_KIND_GATEWAY, gw_ns, gw_name);
    if (!gw || !gw->t.gateway)
        return false;
    const wf_gateway *g = gw->t.gateway;
    for (size_t s = 0; s < g->nservers; s++) {
        const wf_strs *hosts = &g->servers[s].hosts;
        for (size_t i = 0; i < hosts->n; i++) {
            const char *name =
                gateway_host_for(ctx, str_or_empty(hosts->v[i]), str_or_empty(gw->ns), vs_ns);
            if (name && any_vs_host_matches(vs_hosts, name))
                return true;
        }
    }
    return false;
}

/* vsHostInKubernetesGateway: a listener without hostname accepts every host. */
static bool vs_host_in_k8s_gateway(const wf_resource *gw, const wf_strs *vs_hosts)
{
    const wf_node *listeners = gw->spec ? wf_map_get(gw->spec, "listeners") : NULL;
    for (size_t i = 0; i < wf_seq_len(listeners); i++) {
        const char *h = wf_map_str(wf_seq_at(listeners, i), "hostname");
        if (!h || !*h)
            return true;
    }
    for (size_t i = 0; i < wf_seq_len(listeners); i++) {
        if (any_vs_host_matches(vs_hosts, wf_map_str(wf_seq_at(listeners, i), "hostname")))
            return true;
    }
    return false;
}

static void gw_check_ref(wf_analysis_ctx *ctx, const wf_resource *vs, size_t i)
{
    const wf_virtualservice *v = vs->t.vs;
    const char *ref = str_or_empty(v->gateways.v[i]);
    const wf_node *at = v->gateways.nodes ? v->gateways.nodes[i] : NULL;
    const char *vs_name = wf_full_name(ctx, vs);
    if (strcmp(ref, MESH_GATEWAY) == 0)
        return;
    if (is_internal_gateway_ref(ref)) {
        WF_REPORT(ctx, WF_IST0165, vs, at, vs_name, ref);
        return;
    }
    const char *ns, *name;
    wf_vsu_short_or_full(ctx, vs->ns, ref, &ns, &name);
    const wf_store *s = wf_ctx_store(ctx);
    const wf_resource *k8s = NULL;
    bool exists = wf_store_find(s, WF_KIND_GATEWAY, ns, name) != NULL;
    if (!exists) {
        k8s = wf_store_find(s, WF_KIND_K8S_GATEWAY, ns, name);
        exists = k8s != NULL;
    }
    if (!exists)
        WF_REPORT(ctx, WF_IST0101, vs, at, "gateway", ref);
    bool match = k8s ? vs_host_in_k8s_gateway(k8s, &v->hosts)
                     : vs_host_in_gateway(ctx, ns, name, &v->hosts, str_or_empty(vs->ns));
    if (!match) {
        const char *hosts = wf_go_slice(ctx, v->hosts.v, v->hosts.n);
        WF_REPORT(ctx, WF_IST0132, vs, at, hosts ? hosts : "[]", vs_name,
                  wf_vsu_full_name_str(ctx, ns, name));
    }
}

static void run_gateway(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *vss = wf_store_kind(wf_ctx_store(ctx), WF_KIND_VIRTUALSERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        if (!vss[i]->t.vs)
            continue;
        for (size_t g = 0; g < vss[i]->t.vs->gateways.n; g++)
            gw_check_ref(ctx, vss[i], g);
    }
}

const wf_analyzer wf_an_virtualservice_GatewayAnalyzer = {
    .name = "virtualservice.GatewayAnalyzer",
    .description = "Checks the gateways associated with each virtual service",
    .inputs = {WF_KIND_GATEWAY, WF_KIND_K8S_GATEWAY, WF_KIND_VIRTUALSERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0132, WF_IST0165, WF_MSG_COUNT},
    .default_on = true,
    .run = run_gateway,
};

/* ======================= ConflictingMeshGatewayHostsAnalyzer ======================= */

/* VirtualServices of one scoped host ("<scope>/<fqdn>"), in load order. */
typedef struct vs_list {
    size_t n, cap;
    const wf_resource **v;
} vs_list;

static int list_push(wf_arena *a, vs_list *l, const wf_resource *r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        const wf_resource **v = wf_arena_alloc(a, cap * sizeof(*v));
        if (!v)
            return -1;
        if (l->n)
            memcpy(v, l->v, l->n * sizeof(*v));
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = r;
    return 0;
}

/* Append r unless a VirtualService of the same namespace/name is listed (B020: one
 * VirtualService never conflicts with itself). */
static int list_add_unique(wf_arena *a, vs_list *l, const wf_resource *r)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i] == r ||
            (strcmp(l->v[i]->ns, r->ns) == 0 && strcmp(l->v[i]->name, r->name) == 0))
            return 0;
    }
    return list_push(a, l, r);
}

static bool attached_to_mesh(const wf_virtualservice *v)
{
    if (v->gateways.n == 0)
        return true;
    for (size_t i = 0; i < v->gateways.n; i++) {
        if (strcmp(str_or_empty(v->gateways.v[i]), MESH_GATEWAY) == 0)
            return true;
    }
    return false;
}

static bool exports_to_all(const wf_strs *export_to)
{
    if (export_to->n == 0)
        return true;
    for (size_t i = 0; i < export_to->n; i++) {
        if (strcmp(str_or_empty(export_to->v[i]), "*") == 0)
            return true;
    }
    return false;
}

static int add_scoped_hosts(wf_analysis_ctx *ctx, wf_strmap *m, const wf_resource *vs,
                            const char *scope)
{
    const wf_strs *hosts = &vs->t.vs->hosts;
    for (size_t h = 0; h < hosts->n; h++) {
        const char *fqdn = wf_fqdn(ctx, vs->ns, str_or_empty(hosts->v[h]));
        const char *key = wf_arena_printf(wf_ctx_arena(ctx), "%s/%s", scope, fqdn);
        void **slot = key ? wf_strmap_slot(m, key, true) : NULL;
        if (!slot)
            return -1;
        if (!*slot && !(*slot = wf_arena_alloc(wf_ctx_arena(ctx), sizeof(vs_list))))
            return -1;
        if (list_push(wf_ctx_arena(ctx), *slot, vs) != 0)
            return -1;
    }
    return 0;
}

/* The namespaces a VirtualService's hosts are scoped to ("*" when exported everywhere). */
static int add_vs_scopes(wf_analysis_ctx *ctx, wf_strmap *m, const wf_resource *vs)
{
    const wf_strs *et = &vs->t.vs->export_to;
    if (exports_to_all(et))
        return add_scoped_hosts(ctx, m, vs, "*");
    for (size_t i = 0; i < et->n; i++) {
        const char *scope = str_or_empty(et->v[i]);
        if (strcmp(scope, ".") == 0)
            scope = str_or_empty(vs->ns);
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *prev = str_or_empty(et->v[j]);
            seen = strcmp(strcmp(prev, ".") == 0 ? str_or_empty(vs->ns) : prev, scope) == 0;
        }
        if (!seen && add_scoped_hosts(ctx, m, vs, scope) != 0)
            return -1;
    }
    return 0;
}

/* The VirtualServices of scoped host i, plus (for a namespace scope) those exported to all
 * namespaces whose host matches, each once. */
static int conflict_list(wf_analysis_ctx *ctx, const wf_strmap *m, size_t i, vs_list *out)
{
    wf_arena *a = wf_ctx_arena(ctx);
    const char *key = wf_strmap_key(m, i);
    const vs_list *own = wf_strmap_value(m, i);
    for (size_t k = 0; k < own->n; k++) {
        if (list_add_unique(a, out, own->v[k]) != 0)
            return -1;
    }
    if (strncmp(key, "*/", 2) == 0)
        return 0;
    const char *host = strchr(key, '/') + 1;
    for (size_t j = 0; j < wf_strmap_count(m); j++) {
        const char *other = wf_strmap_key(m, j);
        if (strncmp(other, "*/", 2) != 0 || !wf_vsu_host_matches(host, other + 2))
            continue;
        const vs_list *l = wf_strmap_value(m, j);
        for (size_t k = 0; k < l->n; k++) {
            if (list_add_unique(a, out, l->v[k]) != 0)
                return -1;
        }
    }
    return 0;
}

static const char *join_names(wf_analysis_ctx *ctx, const vs_list *l)
{
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            wf_strbuf_putc(&b, ',');
        wf_strbuf_puts(&b, wf_full_name(ctx, l->v[i]));
    }
    const char *s =
        wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(wf_ctx_arena(ctx), wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return s;
}

static void run_conflicting_mesh(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *vss = wf_store_kind(wf_ctx_store(ctx), WF_KIND_VIRTUALSERVICE, &n);
    wf_strmap *m = wf_strmap_new(wf_ctx_arena(ctx));
    wf_strmap *reported = wf_strmap_new(wf_ctx_arena(ctx));
    if (!m || !reported)
        return;
    for (size_t i = 0; i < n; i++) {
        if (vss[i]->t.vs && attached_to_mesh(vss[i]->t.vs) && add_vs_scopes(ctx, m, vss[i]) != 0)
            return;
    }
    for (size_t i = 0; i < wf_strmap_count(m); i++) {
        vs_list l = {0, 0, NULL};
        if (conflict_list(ctx, m, i, &l) != 0)
            return;
        if (l.n < 2)
            continue;
        const char *names = join_names(ctx, &l);
        for (size_t k = 0; names && k < l.n; k++) {
            void **done = wf_strmap_slot(reported, wf_full_name(ctx, l.v[k]), true);
            if (!done || *done)
                continue;
            *done = (void *)l.v[k];
            const wf_node *at = l.v[k]->metadata ? wf_map_get(l.v[k]->metadata, "name") : NULL;
            WF_REPORT(ctx, WF_IST0109, l.v[k], at, names, wf_strmap_key(m, i));
        }
    }
}

const wf_analyzer wf_an_virtualservice_ConflictingMeshGatewayHostsAnalyzer = {
    .name = "virtualservice.ConflictingMeshGatewayHostsAnalyzer",
    .description = "Checks if multiple virtual services associated with the mesh gateway have "
                   "conflicting hosts",
    .inputs = {WF_KIND_VIRTUALSERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0109, WF_MSG_COUNT},
    .default_on = true,
    .run = run_conflicting_mesh,
};

/* ======================= JWTClaimRouteAnalyzer ======================= */

#define JWT_CLAIM_HEADER "@request.auth.claims"

/* jwt.ToRoutingClaim(key).Match: "@request.auth.claims.<a>[.<b>]" or "...[<a>][<b>]". */
static bool is_jwt_claim_key(const char *key)
{
    size_t plen = strlen(JWT_CLAIM_HEADER);
    if (strncasecmp(key, JWT_CLAIM_HEADER, plen) != 0)
        return false;
    const char *name = key + plen;
    size_t len = strlen(name);
    if (name[0] == '.' && len > 1)
        return true;
    return name[0] == '[' && len > 2 && name[len - 1] == ']';
}

static const char *claim_key_in(const wf_node *headers)
{
    if (!headers || headers->type != WF_NODE_MAP)
        return NULL;
    for (size_t i = 0; i < headers->len; i++) {
        if (is_jwt_claim_key(headers->u.entries[i].key))
            return headers->u.entries[i].key;
    }
    return NULL;
}

/* routeBasedOnJWTClaimKey: the first header or withoutHeaders key routing on a JWT claim. */
static const char *jwt_route_key(const wf_virtualservice *v)
{
    for (size_t i = 0; i < v->nhttp; i++) {
        const wf_node *match = v->http[i].match;
        for (size_t m = 0; m < wf_seq_len(match); m++) {
            const wf_node *mi = wf_seq_at(match, m);
            const char *key = claim_key_in(wf_map_get(mi, "headers"));
            if (!key)
                key = claim_key_in(wf_map_get(mi, "withoutHeaders"));
            if (key)
                return key;
        }
    }
    return NULL;
}

/* Is there a RequestAuthentication in the root namespace or the pod's namespace whose
 * selector (matchLabels; none = all) selects the pod? */
static bool pod_has_request_authn(wf_analysis_ctx *ctx, const wf_resource *pod)
{
    size_t n;
    const wf_resource *const *ras =
        wf_store_kind(wf_ctx_store(ctx), WF_KIND_REQUESTAUTHENTICATION, &n);
    const char *root = wf_meshcfg_root_ns(wf_ctx_mesh(ctx));
    for (size_t i = 0; i < n; i++) {
        const char *ns = str_or_empty(ras[i]->ns);
        if (strcmp(ns, str_or_empty(root)) != 0 && strcmp(ns, str_or_empty(pod->ns)) != 0)
            continue;
        const wf_policy *p = ras[i]->t.policy;
        if (!p || wf_kvs_subset(&p->selector, &pod->labels))
            return true;
    }
    return false;
}

static void jwt_check_vs(wf_analysis_ctx *ctx, const wf_resource *vs)
{
    const wf_virtualservice *v = vs->t.vs;
    const char *key = jwt_route_key(v);
    if (!key)
        return;
    size_t npods;
    const wf_resource *const *pods = wf_store_kind(wf_ctx_store(ctx), WF_KIND_POD, &npods);
    for (size_t g = 0; g < v->gateways.n; g++) {
        const char *ref = str_or_empty(v->gateways.v[g]);
        if (strcmp(ref, MESH_GATEWAY) == 0)
            continue;
        const char *ns, *name;
        wf_vsu_short_or_full(ctx, vs->ns, ref, &ns, &name);
        const wf_resource *gw = wf_store_find(wf_ctx_store(ctx), WF_KIND_GATEWAY, ns, name);
        if (!gw || !gw->t.gateway)
            continue;
        const char *gw_name = wf_vsu_full_name_str(ctx, ns, name);
        for (size_t p = 0; p < npods; p++) {
            if (!wf_kvs_subset(&gw->t.gateway->selector, &pods[p]->labels) ||
                pod_has_request_authn(ctx, pods[p]))
                continue;
            WF_REPORT(ctx, WF_IST0149, vs, NULL, key, gw_name, pods[p]->name);
        }
    }
}

static void run_jwt_claim_route(wf_analysis_ctx *ctx)
{
    size_t n;
    const wf_resource *const *vss = wf_store_kind(wf_ctx_store(ctx), WF_KIND_VIRTUALSERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        if (vss[i]->t.vs)
            jwt_check_vs(ctx, vss[i]);
    }
}

const wf_analyzer wf_an_virtualservice_JWTClaimRouteAnalyzer = {
    .name = "virtualservice.JWTClaimRouteAnalyzer",
    .description = "Checks the VirtualService using JWT claim based routing has corresponding "
                   "RequestAuthentication",
    .inputs = {WF_KIND_VIRTUALSERVICE, WF_KIND_REQUESTAUTHENTICATION, WF_KIND_GATEWAY, WF_KIND_POD,
               WF_KIND_OTHER},
    .codes = {WF_IST0149, WF_MSG_COUNT},
    .default_on = true,
    .run = run_jwt_claim_route,
};
