/*
 * decode.c - typed views (types.h) decoded from resource node trees.
 *
 * Decoding is lenient: a field of the wrong type is left absent here; schema validation
 * (validate.h) is what reports it.
 */
#include <stdlib.h>
#include <string.h>

#include "model/store_internal.h"

#define ALLOC_N(a, type, n) ((type *)wf_arena_alloc((a), sizeof(type) * ((n) ? (n) : 1)))

int wf_decode_kvs(wf_arena *a, const wf_node *map, wf_kvs *out)
{
    out->n = 0;
    out->items = NULL;
    if (!map || map->type != WF_NODE_MAP)
        return 0;
    out->items = ALLOC_N(a, wf_kv, map->len);
    if (!out->items)
        return -1;
    for (size_t i = 0; i < map->len; i++) {
        const wf_node *v = map->u.entries[i].value;
        out->items[out->n++] = (wf_kv){map->u.entries[i].key, v->type == WF_NODE_SCALAR ? v->u.str : "", v};
    }
    return 0;
}

static int decode_strs(wf_arena *a, const wf_node *seq, wf_strs *out)
{
    out->n = 0;
    if (!seq || seq->type != WF_NODE_SEQ)
        return 0;
    out->v = ALLOC_N(a, const char *, seq->len);
    out->nodes = ALLOC_N(a, const wf_node *, seq->len);
    if (!out->v || !out->nodes)
        return -1;
    for (size_t i = 0; i < seq->len; i++) {
        const wf_node *n = seq->u.items[i];
        if (n->type != WF_NODE_SCALAR)
            continue;
        out->v[out->n] = n->u.str;
        out->nodes[out->n++] = n;
    }
    return 0;
}

static int32_t int_field(const wf_node *n, const char *key, int32_t dflt)
{
    int64_t v;
    if (wf_node_int(wf_map_get(n, key), &v) && v >= INT32_MIN && v <= INT32_MAX)
        return (int32_t)v;
    /* Kubernetes accepts quoted numbers in some places; treat "80" as 80 */
    const char *s = wf_map_str(n, key);
    if (s && *s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (*end == '\0' && x >= INT32_MIN && x <= INT32_MAX)
            return (int32_t)x;
    }
    return dflt;
}

static int64_t run_as_user(const wf_node *n)
{
    int64_t v;
    return wf_node_int(wf_node_path(n, "securityContext.runAsUser"), &v) ? v : -1;
}

static int decode_containers(wf_arena *a, const wf_node *seq, wf_container **out, size_t *nout)
{
    size_t n = wf_seq_len(seq);
    *nout = 0;
    *out = ALLOC_N(a, wf_container, n);
    if (!*out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const wf_node *c = seq->u.items[i];
        wf_container *ct = &(*out)[(*nout)++];
        ct->node = c;
        ct->name = wf_map_str(c, "name");
        ct->image = wf_map_str(c, "image");
        ct->run_as_user = run_as_user(c);
        const wf_node *ports = wf_map_get(c, "ports");
        size_t np = wf_seq_len(ports);
        ct->ports = ALLOC_N(a, wf_container_port, np);
        if (!ct->ports)
            return -1;
        for (size_t j = 0; j < np; j++) {
            const wf_node *p = ports->u.items[j];
            ct->ports[ct->nports++] = (wf_container_port){
                wf_map_str(p, "name"), int_field(p, "containerPort", 0), wf_map_str(p, "protocol")};
        }
    }
    return 0;
}

static int decode_pod_spec(wf_arena *a, const wf_node *spec, wf_pod_spec *ps)
{
    ps->node = spec;
    ps->service_account = wf_map_str(spec, "serviceAccountName");
    if (!ps->service_account)
        ps->service_account = wf_map_str(spec, "serviceAccount");
    ps->node_name = wf_map_str(spec, "nodeName");
    ps->run_as_user = run_as_user(spec);
    if (decode_containers(a, wf_map_get(spec, "containers"), &ps->containers, &ps->ncontainers))
        return -1;
    return decode_containers(a, wf_map_get(spec, "initContainers"), &ps->init_containers,
                             &ps->ninit);
}

static int decode_service(wf_arena *a, wf_resource *r)
{
    wf_service *s = wf_arena_alloc(a, sizeof(*s));
    if (!s)
        return -1;
    r->t.service = s;
    const wf_node *spec = r->spec;
    s->type = wf_map_str(spec, "type");
    if (!s->type)
        s->type = "ClusterIP";
    s->external_name = wf_map_str(spec, "externalName");
    s->cluster_ip = wf_map_str(spec, "clusterIP");
    const wf_node *sel = wf_map_get(spec, "selector");
    s->has_selector = sel && sel->type == WF_NODE_MAP;
    if (wf_decode_kvs(a, sel, &s->selector))
        return -1;
    const wf_node *ports = wf_map_get(spec, "ports");
    size_t n = wf_seq_len(ports);
    s->ports = ALLOC_N(a, wf_service_port, n);
    if (!s->ports)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const wf_node *p = ports->u.items[i];
        wf_service_port *sp = &s->ports[s->nports++];
        sp->node = p;
        sp->name = wf_map_str(p, "name");
        sp->port = int_field(p, "port", 0);
        sp->protocol = wf_map_str(p, "protocol");
        if (!sp->protocol)
            sp->protocol = "TCP";
        sp->node_port = int_field(p, "nodePort", 0);
        sp->app_protocol = wf_map_str(p, "appProtocol");
        const wf_node *tp = wf_map_get(p, "targetPort");
        int64_t v;
        if (!tp || tp->type != WF_NODE_SCALAR)
            sp->target_port = sp->port;
        else if (wf_node_int(tp, &v))
            sp->target_port = (int32_t)v;
        else
            sp->target_name = tp->u.str;
    }
    return 0;
}

static int decode_workload(wf_arena *a, wf_resource *r)
{
    wf_workload *w = wf_arena_alloc(a, sizeof(*w));
    if (!w)
        return -1;
    r->t.workload = w;
    w->replicas = int_field(r->spec, "replicas", -1);
    w->selector = wf_map_get(r->spec, "selector");
    const wf_node *tmpl = wf_map_get(r->spec, "template");
    if (wf_decode_kvs(a, wf_node_path(tmpl, "metadata.labels"), &w->template_labels) ||
        wf_decode_kvs(a, wf_node_path(tmpl, "metadata.annotations"), &w->template_annotations))
        return -1;
    return decode_pod_spec(a, wf_map_get(tmpl, "spec"), &w->spec);
}

static int decode_pod(wf_arena *a, wf_resource *r)
{
    wf_pod *p = wf_arena_alloc(a, sizeof(*p));
    if (!p)
        return -1;
    r->t.pod = p;
    p->pod_ip = wf_map_str(r->status, "podIP");
    p->phase = wf_map_str(r->status, "phase");
    return decode_pod_spec(a, r->spec, &p->spec);
}

static int decode_gateway(wf_arena *a, wf_resource *r)
{
    wf_gateway *g = wf_arena_alloc(a, sizeof(*g));
    if (!g)
        return -1;
    r->t.gateway = g;
    const wf_node *sel = wf_map_get(r->spec, "selector");
    g->has_selector = sel && sel->type == WF_NODE_MAP;
    if (wf_decode_kvs(a, sel, &g->selector))
        return -1;
    const wf_node *servers = wf_map_get(r->spec, "servers");
    size_t n = wf_seq_len(servers);
    g->servers = ALLOC_N(a, wf_gateway_server, n);
    if (!g->servers)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const wf_node *sv = servers->u.items[i];
        wf_gateway_server *gs = &g->servers[g->nservers++];
        const wf_node *port = wf_map_get(sv, "port");
        gs->node = sv;
        gs->port = int_field(port, "number", 0);
        gs->port_name = wf_map_str(port, "name");
        gs->protocol = wf_map_str(port, "protocol");
        gs->target_port = int_field(port, "targetPort", 0);
        gs->tls = wf_map_get(sv, "tls");
        gs->tls_mode = wf_map_str(gs->tls, "mode");
        gs->credential_name = wf_map_str(gs->tls, "credentialName");
        if (decode_strs(a, wf_map_get(sv, "hosts"), &gs->hosts))
            return -1;
    }
    return 0;
}

static void decode_destination(const wf_node *d, wf_destination *out)
{
    out->node = d;
    out->host = wf_map_str(d, "host");
    out->subset = wf_map_str(d, "subset");
    out->port = int_field(wf_map_get(d, "port"), "number", 0);
}

static int decode_routes(wf_arena *a, const wf_node *seq, wf_route_type t, wf_route **out,
                         size_t *nout)
{
    size_t n = wf_seq_len(seq);
    *nout = 0;
    *out = ALLOC_N(a, wf_route, n);
    if (!*out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const wf_node *rn = seq->u.items[i];
        wf_route *rt = &(*out)[(*nout)++];
        rt->type = t;
        rt->node = rn;
        rt->name = wf_map_str(rn, "name");
        rt->match = wf_map_get(rn, "match");
        rt->timeout = wf_map_str(rn, "timeout");
        const wf_node *dests = wf_map_get(rn, "route");
        size_t nd = wf_seq_len(dests);
        rt->dests = ALLOC_N(a, wf_route_destination, nd);
        if (!rt->dests)
            return -1;
        for (size_t j = 0; j < nd; j++) {
            const wf_node *dn = dests->u.items[j];
            wf_route_destination *rd = &rt->dests[rt->ndest++];
            rd->node = dn;
            rd->weight = int_field(dn, "weight", -1);
            decode_destination(wf_map_get(dn, "destination"), &rd->dest);
        }
        const wf_node *mirror = wf_map_get(rn, "mirror");
        if (mirror)
            decode_destination(mirror, &rt->mirror);
        const wf_node *mirrors = wf_map_get(rn, "mirrors");
        size_t nm = wf_seq_len(mirrors);
        rt->mirrors = ALLOC_N(a, wf_destination, nm);
        if (!rt->mirrors)
            return -1;
        for (size_t j = 0; j < nm; j++)
            decode_destination(wf_map_get(mirrors->u.items[j], "destination"),
                               &rt->mirrors[rt->nmirrors++]);
    }
    return 0;
}

static int decode_vs(wf_arena *a, wf_resource *r)
{
    wf_virtualservice *v = wf_arena_alloc(a, sizeof(*v));
    if (!v)
        return -1;
    r->t.vs = v;
    const wf_node *s = r->spec;
    v->delegate = wf_map_get(s, "delegate");
    if (decode_strs(a, wf_map_get(s, "hosts"), &v->hosts) ||
        decode_strs(a, wf_map_get(s, "gateways"), &v->gateways) ||
        decode_strs(a, wf_map_get(s, "exportTo"), &v->export_to))
        return -1;
    if (decode_routes(a, wf_map_get(s, "http"), WF_ROUTE_HTTP, &v->http, &v->nhttp) ||
        decode_routes(a, wf_map_get(s, "tcp"), WF_ROUTE_TCP, &v->tcp, &v->ntcp) ||
        decode_routes(a, wf_map_get(s, "tls"), WF_ROUTE_TLS, &v->tls, &v->ntls))
        return -1;
    return 0;
}

static int decode_dr(wf_arena *a, wf_resource *r)
{
    wf_destinationrule *d = wf_arena_alloc(a, sizeof(*d));
    if (!d)
        return -1;
    r->t.dr = d;
    d->host = wf_map_str(r->spec, "host");
    d->traffic_policy = wf_map_get(r->spec, "trafficPolicy");
    const wf_node *ws = wf_node_path(r->spec, "workloadSelector.matchLabels");
    d->has_workload_selector = wf_map_get(r->spec, "workloadSelector") != NULL;
    if (wf_decode_kvs(a, ws, &d->workload_selector) ||
        decode_strs(a, wf_map_get(r->spec, "exportTo"), &d->export_to))
        return -1;
    const wf_node *subsets = wf_map_get(r->spec, "subsets");
    size_t n = wf_seq_len(subsets);
    d->subsets = ALLOC_N(a, wf_subset, n);
    if (!d->subsets)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const wf_node *sn = subsets->u.items[i];
        wf_subset *ss = &d->subsets[d->nsubsets++];
        ss->node = sn;
        ss->name = wf_map_str(sn, "name");
        ss->traffic_policy = wf_map_get(sn, "trafficPolicy");
        if (wf_decode_kvs(a, wf_map_get(sn, "labels"), &ss->labels))
            return -1;
    }
    return 0;
}

static int decode_se(wf_arena *a, wf_resource *r)
{
    wf_serviceentry *e = wf_arena_alloc(a, sizeof(*e));
    if (!e)
        return -1;
    r->t.se = e;
    const wf_node *s = r->spec;
    e->location = wf_map_str(s, "location");
    e->resolution = wf_map_str(s, "resolution");
    e->endpoints = wf_map_get(s, "endpoints");
    const wf_node *ws = wf_map_get(s, "workloadSelector");
    e->has_workload_selector = ws != NULL;
    if (decode_strs(a, wf_map_get(s, "hosts"), &e->hosts) ||
        decode_strs(a, wf_map_get(s, "addresses"), &e->addresses) ||
        decode_strs(a, wf_map_get(s, "exportTo"), &e->export_to) ||
        wf_decode_kvs(a, wf_map_get(ws, "labels"), &e->workload_selector))
        return -1;
    const wf_node *ports = wf_map_get(s, "ports");
    size_t n = wf_seq_len(ports);
    e->ports = ALLOC_N(a, wf_se_port, n);
    if (!e->ports)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const wf_node *p = ports->u.items[i];
        e->ports[e->nports++] = (wf_se_port){int_field(p, "number", 0), wf_map_str(p, "name"),
                                             wf_map_str(p, "protocol"),
                                             int_field(p, "targetPort", 0), p};
    }
    return 0;
}

static int decode_we(wf_arena *a, wf_resource *r)
{
    wf_workloadentry *w = wf_arena_alloc(a, sizeof(*w));
    if (!w)
        return -1;
    r->t.we = w;
    w->address = wf_map_str(r->spec, "address");
    w->network = wf_map_str(r->spec, "network");
    w->service_account = wf_map_str(r->spec, "serviceAccount");
    w->ports = wf_map_get(r->spec, "ports");
    return wf_decode_kvs(a, wf_map_get(r->spec, "labels"), &w->labels);
}

static int decode_sidecar(wf_arena *a, wf_resource *r)
{
    wf_sidecar *sc = wf_arena_alloc(a, sizeof(*sc));
    if (!sc)
        return -1;
    r->t.sidecar = sc;
    const wf_node *ws = wf_map_get(r->spec, "workloadSelector");
    sc->has_workload_selector = ws != NULL;
    sc->ingress = wf_map_get(r->spec, "ingress");
    sc->egress = wf_map_get(r->spec, "egress");
    sc->outbound_traffic_policy = wf_map_get(r->spec, "outboundTrafficPolicy");
    return wf_decode_kvs(a, wf_map_get(ws, "labels"), &sc->workload_selector);
}

static int decode_policy(wf_arena *a, wf_resource *r)
{
    wf_policy *p = wf_arena_alloc(a, sizeof(*p));
    if (!p)
        return -1;
    r->t.policy = p;
    const wf_node *sel = wf_map_get(r->spec, "selector");
    const wf_node *labels = wf_map_get(sel, "matchLabels");
    if (!sel) {
        sel = wf_map_get(r->spec, "workloadSelector");
        labels = wf_map_get(sel, "labels");
    }
    p->has_selector = sel != NULL;
    p->target_refs = wf_map_get(r->spec, "targetRefs");
    if (!p->target_refs)
        p->target_refs = wf_map_get(r->spec, "targetRef");
    return wf_decode_kvs(a, labels, &p->selector);
}

int wf_decode(wf_arena *a, wf_resource *r)
{
    switch (r->kind) {
    case WF_KIND_SERVICE:
        return decode_service(a, r);
    case WF_KIND_POD:
        return decode_pod(a, r);
    case WF_KIND_DEPLOYMENT:
    case WF_KIND_REPLICASET:
    case WF_KIND_STATEFULSET:
    case WF_KIND_DAEMONSET:
        return decode_workload(a, r);
    case WF_KIND_GATEWAY:
        return decode_gateway(a, r);
    case WF_KIND_VIRTUALSERVICE:
        return decode_vs(a, r);
    case WF_KIND_DESTINATIONRULE:
        return decode_dr(a, r);
    case WF_KIND_SERVICEENTRY:
        return decode_se(a, r);
    case WF_KIND_WORKLOADENTRY:
        return decode_we(a, r);
    case WF_KIND_SIDECAR:
        return decode_sidecar(a, r);
    case WF_KIND_PEERAUTHENTICATION:
    case WF_KIND_AUTHORIZATIONPOLICY:
    case WF_KIND_REQUESTAUTHENTICATION:
    case WF_KIND_TELEMETRY:
    case WF_KIND_WASMPLUGIN:
    case WF_KIND_ENVOYFILTER:
    case WF_KIND_PROXYCONFIG:
        return decode_policy(a, r);
    default:
        return 0;
    }
}

/* ---- label helpers (types.h) ---- */

const char *wf_kvs_get(const wf_kvs *kvs, const char *key)
{
    for (size_t i = 0; i < kvs->n; i++)
        if (strcmp(kvs->items[i].key, key) == 0)
            return kvs->items[i].value;
    return NULL;
}

bool wf_kvs_subset(const wf_kvs *selector, const wf_kvs *labels)
{
    for (size_t i = 0; i < selector->n; i++) {
        const char *v = wf_kvs_get(labels, selector->items[i].key);
        if (!v || strcmp(v, selector->items[i].value) != 0)
            return false;
    }
    return true;
}

static bool value_in(const wf_node *values, const char *v)
{
    for (size_t i = 0; i < wf_seq_len(values); i++) {
        const char *s = wf_node_str(values->u.items[i]);
        if (s && v && strcmp(s, v) == 0)
            return true;
    }
    return false;
}

bool wf_label_selector_matches(const wf_node *sel, const wf_kvs *labels)
{
    if (!sel || sel->type != WF_NODE_MAP)
        return false;
    const wf_node *ml = wf_map_get(sel, "matchLabels");
    for (size_t i = 0; ml && ml->type == WF_NODE_MAP && i < ml->len; i++) {
        const char *want = wf_node_str(ml->u.entries[i].value);
        const char *have = wf_kvs_get(labels, ml->u.entries[i].key);
        if (!have || !want || strcmp(have, want) != 0)
            return false;
    }
    const wf_node *exprs = wf_map_get(sel, "matchExpressions");
    for (size_t i = 0; i < wf_seq_len(exprs); i++) {
        const wf_node *e = exprs->u.items[i];
        const char *key = wf_map_str(e, "key"), *op = wf_map_str(e, "operator");
        if (!key || !op)
            return false;
        const char *have = wf_kvs_get(labels, key);
        const wf_node *values = wf_map_get(e, "values");
        bool ok = strcmp(op, "In") == 0             ? value_in(values, have)
                  : strcmp(op, "NotIn") == 0        ? !value_in(values, have)
                  : strcmp(op, "Exists") == 0       ? have != NULL
                  : strcmp(op, "DoesNotExist") == 0 ? have == NULL
                                                    : false;
        if (!ok)
            return false;
    }
    return true;
}
