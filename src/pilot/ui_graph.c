/*
 * ui_graph.c - the traffic graph built from the metrics store's window (ui_graph.h).
 */
#include "pilot/ui_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/strmap.h"

enum { SRC, DST }; /* the reporter views */

typedef struct {
    double req, err, c4xx, mtls, csp_known, tcp_sent, tcp_recv, tcp_opened, dur_count;
    double bucket[WF_MM_NBOUNDS];
    json_t *codes, *flags; /* code / flag -> requests */
    bool any;
} gview;

typedef struct gnode gnode;

typedef struct {
    const char *id;
    gnode *from, *to;
    const char *proto;
    gview v[2];
    bool shown; /* appended to the answer */
} gedge;

struct gnode {
    const char *id, *kind, *ns, *name, *app, *version, *service, *parent;
    bool gateway, grpc;
    gview in[2], out[2]; /* request sums only (req, err, c4xx) */
    bool keep;
    const char *health;
};

typedef struct {
    wf_arena a;
    wf_strmap *nodes, *edges;
    bool oom;
} gbuild;

static const char *const health_rank[] = {"idle", "healthy", "degraded", "failure"};

static int rank_of(const char *h)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(h, health_rank[i]) == 0)
            return i;
    return 0;
}

static const char *worse(const char *a, const char *b)
{
    return rank_of(a) >= rank_of(b) ? a : b;
}

const char *wf_ui_health(double requests, double errors_pct, double client_pct, bool grpc)
{
    if (!(requests > 0))
        return "idle";
    double fail = grpc ? WF_UI_GRPC_FAILURE : WF_UI_HTTP_5XX_FAILURE;
    double deg = grpc ? WF_UI_GRPC_DEGRADED : WF_UI_HTTP_5XX_DEGRADED;
    if (errors_pct > fail || (!grpc && client_pct > WF_UI_HTTP_4XX_FAILURE))
        return "failure";
    if (errors_pct > deg || (!grpc && client_pct > WF_UI_HTTP_4XX_DEGRADED))
        return "degraded";
    return "healthy";
}

static const char *view_health(const gview *v, bool grpc)
{
    if (!v->any || !(v->req > 0))
        return "idle";
    return wf_ui_health(v->req, 100.0 * v->err / v->req, 100.0 * v->c4xx / v->req, grpc);
}

static bool known(const char *s)
{
    return s[0] && strcmp(s, "unknown") != 0;
}

/* "name.ns.svc..." -> ns into buf; "" when the host has no second label. */
static const char *service_ns(const char *host, char *buf, size_t cap)
{
    const char *d = strchr(host, '.');
    size_t n = d ? strcspn(d + 1, ".") : 0;
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), d ? d + 1 : "");
    return buf;
}

static gnode *node_get(gbuild *b, const char *id)
{
    void **slot = wf_strmap_slot(b->nodes, id, true);
    if (!slot) {
        b->oom = true;
        return NULL;
    }
    if (!*slot) {
        gnode *n = wf_arena_alloc(&b->a, sizeof *n);
        if (!n) {
            b->oom = true;
            return NULL;
        }
        memset(n, 0, sizeof *n);
        n->id = wf_strmap_key(b->nodes, wf_strmap_count(b->nodes) - 1);
        *slot = n;
    }
    return *slot;
}

static gnode *workload_node(gbuild *b, const char *const *l, bool src, bool gateway)
{
    const char *wl = l[src ? WF_MM_SOURCE_WORKLOAD : WF_MM_DESTINATION_WORKLOAD];
    const char *ns =
        l[src ? WF_MM_SOURCE_WORKLOAD_NAMESPACE : WF_MM_DESTINATION_WORKLOAD_NAMESPACE];
    const char *app = l[src ? WF_MM_SOURCE_APP : WF_MM_DESTINATION_APP];
    const char *ver = l[src ? WF_MM_SOURCE_VERSION : WF_MM_DESTINATION_VERSION];
    char fallback[256];
    if (!known(wl) && known(app)) { /* no WORKLOAD_NAME: the app and version name it */
        snprintf(fallback, sizeof fallback, "%s%s%s", app, known(ver) ? "-" : "",
                 known(ver) ? ver : "");
        wl = fallback;
    }
    if (!known(wl)) {
        if (!src)
            return NULL; /* the edge ends at the service */
        gnode *u = node_get(b, "unknown");
        if (u && !u->kind) {
            u->kind = "unknown";
            u->name = "unknown";
            u->ns = "";
        }
        return u;
    }
    char *id = wf_arena_printf(&b->a, "wl:%s/%s", ns, wl);
    gnode *n = id ? node_get(b, id) : NULL;
    if (!n)
        return NULL;
    if (!n->kind) {
        n->kind = "workload";
        n->ns = wf_arena_strdup(&b->a, ns);
        n->name = wf_arena_strdup(&b->a, wl);
        n->app = known(app) ? wf_arena_strdup(&b->a, app) : NULL;
        n->version = known(ver) ? wf_arena_strdup(&b->a, ver) : NULL;
        if (n->app && n->version)
            n->parent = wf_arena_printf(&b->a, "app:%s/%s", ns, app);
        n->gateway =
            strcmp(wl, "istio-ingressgateway") == 0 || strcmp(wl, "istio-egressgateway") == 0;
    }
    n->gateway |= gateway;
    return n;
}

static gnode *service_node(gbuild *b, const char *const *l)
{
    const char *svc = l[WF_MM_DESTINATION_SERVICE];
    if (!svc[0])
        svc = "unknown";
    char *id = wf_arena_printf(&b->a, "svc:%s", svc);
    gnode *n = id ? node_get(b, id) : NULL;
    if (n && !n->kind) {
        char ns[128];
        n->kind = "service";
        n->service = wf_arena_strdup(&b->a, svc);
        n->ns = wf_arena_strdup(&b->a, service_ns(svc, ns, sizeof ns));
        const char *d = strchr(svc, '.');
        n->name = wf_arena_strndup(&b->a, svc, d ? (size_t)(d - svc) : strlen(svc));
        if (!n->ns[0] && known(l[WF_MM_DESTINATION_WORKLOAD_NAMESPACE]))
            n->ns = wf_arena_strdup(&b->a, l[WF_MM_DESTINATION_WORKLOAD_NAMESPACE]);
    }
    return n;
}

static void add_rate(json_t *o, const char *k, double v)
{
    json_t *x = json_object_get(o, k);
    if (x)
        json_real_set(x, json_real_value(x) + v);
    else
        json_object_set_new(o, k, json_real(v));
}

/* A series' increase added into view v. */

/* An application error by Kiali's default rate tolerances (kiali.io/docs/configuration/health):
 * http codes matching ^5\d\d$; grpc statuses matching ^[1-9]$|^1[0-6]$ (a gRPC series without
 * a status falls back to its HTTP code). No code at all ("0": the caller went away, as the
 * server's sidecar reports a request the gateway timed out) matches neither rule, so it is not
 * an error, as in Kiali and in Istio's Grafana dashboards (success = not 5xx). */
static bool app_error(const char *code, bool grpc, const char *gs)
{
    if (grpc && gs[0]) {
        char *end = NULL;
        long v = strtol(gs, &end, 10);
        return end != gs && !*end && v >= 1 && v <= 16;
    }
    return code[0] == '5' && code[1] >= '0' && code[1] <= '9' && code[2] >= '0' && code[2] <= '9' &&
           !code[3];
}
static void view_add(gbuild *b, gview *v, const char *const *l, const wf_mm_values *inc)
{
    const double *x = inc->v;
    const char *code = l[WF_MM_RESPONSE_CODE], *flags = l[WF_MM_RESPONSE_FLAGS];
    bool grpc = strcmp(l[WF_MM_REQUEST_PROTOCOL], "grpc") == 0;
    const char *gs = l[WF_MM_GRPC_RESPONSE_STATUS];
    double req = x[WF_MM_V_REQUESTS];
    if (!v->codes && !(v->codes = json_object()))
        b->oom = true;
    if (!v->flags && !(v->flags = json_object()))
        b->oom = true;
    v->any = true;
    v->req += req;
    if (app_error(code, grpc, gs))
        v->err += req;
    if (!grpc && code[0] == '4')
        v->c4xx += req;
    if (req > 0 && code[0] && v->codes)
        add_rate(v->codes, code, req);
    if (req > 0 && flags[0] && strcmp(flags, "-") != 0 && v->flags)
        add_rate(v->flags, flags, req);
    /* mtls: requests, or TCP connections opened */
    double units = req > 0 ? req : x[WF_MM_V_TCP_OPENED];
    const char *csp = l[WF_MM_CONNECTION_SECURITY_POLICY];
    if (known(csp)) {
        v->csp_known += units;
        if (strcmp(csp, "mutual_tls") == 0)
            v->mtls += units;
    }
    v->tcp_sent += x[WF_MM_V_TCP_SENT];
    v->tcp_recv += x[WF_MM_V_TCP_RECEIVED];
    v->tcp_opened += x[WF_MM_V_TCP_OPENED];
    v->dur_count += x[WF_MM_V_DUR_COUNT];
    for (int i = 0; i < WF_MM_NBOUNDS; i++)
        v->bucket[i] += x[WF_MM_V_BUCKET0 + i];
}

static void sums_add(gview *v, const char *const *l, const wf_mm_values *inc)
{
    const char *code = l[WF_MM_RESPONSE_CODE];
    bool grpc = strcmp(l[WF_MM_REQUEST_PROTOCOL], "grpc") == 0;
    const char *gs = l[WF_MM_GRPC_RESPONSE_STATUS];
    double req = inc->v[WF_MM_V_REQUESTS];
    v->any = true;
    v->req += req;
    v->err += app_error(code, grpc, gs) ? req : 0;
    v->c4xx += !grpc && code[0] == '4' ? req : 0;
}

/* tcp < http < grpc: an edge carrying both says the richer one */
static int proto_rank(const char *p)
{
    return !strcmp(p, "grpc") ? 2 : !strcmp(p, "http") ? 1 : 0;
}

static gedge *edge_get(gbuild *b, gnode *from, gnode *to, const char *proto)
{
    char *id = wf_arena_printf(&b->a, "e:%s->%s", from->id, to->id);
    void **slot = id ? wf_strmap_slot(b->edges, id, true) : NULL;
    if (!slot) {
        b->oom = true;
        return NULL;
    }
    if (!*slot) {
        gedge *e = wf_arena_alloc(&b->a, sizeof *e);
        if (!e) {
            b->oom = true;
            return NULL;
        }
        memset(e, 0, sizeof *e);
        e->id = wf_strmap_key(b->edges, wf_strmap_count(b->edges) - 1);
        e->from = from;
        e->to = to;
        e->proto = proto;
        *slot = e;
    }
    gedge *e = *slot;
    if (proto_rank(proto) > proto_rank(e->proto))
        e->proto = proto;
    return e;
}

typedef struct {
    gbuild *b;
} series_ctx;

static void on_series(void *ud, const wf_mm_series_view *sv)
{
    gbuild *b = ud;
    const char *const *l = sv->labels;
    int r = !strcmp(l[WF_MM_REPORTER], "source")        ? SRC
            : !strcmp(l[WF_MM_REPORTER], "destination") ? DST
                                                        : -1;
    if (r < 0 || b->oom)
        return; /* other reporters (waypoint) are not part of this graph */
    const char *proto = l[WF_MM_REQUEST_PROTOCOL];
    proto = !strcmp(proto, "grpc") ? "grpc" : !strcmp(proto, "tcp") ? "tcp" : "http";
    gnode *src = workload_node(b, l, true, sv->gateway_source && r == SRC);
    gnode *svc = service_node(b, l);
    gnode *dst = workload_node(b, l, false, false);
    if (!src || !svc)
        return;
    if (dst && !dst->service) /* the service the workload serves (the contract's node field) */
        dst->service = svc->service;
    gedge *e1 = edge_get(b, src, svc, proto);
    gedge *e2 = dst ? edge_get(b, svc, dst, proto) : NULL;
    if (e1)
        view_add(b, &e1->v[r], l, sv->inc);
    if (e2)
        view_add(b, &e2->v[r], l, sv->inc);
    sums_add(&src->out[r], l, sv->inc);
    sums_add(&svc->in[r], l, sv->inc);
    if (dst) {
        sums_add(&svc->out[r], l, sv->inc);
        sums_add(&dst->in[r], l, sv->inc);
    }
    src->grpc |= !strcmp(proto, "grpc");
    svc->grpc |= !strcmp(proto, "grpc");
    if (dst)
        dst->grpc |= !strcmp(proto, "grpc");
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* rates: counts / covered seconds */
static json_t *rates(json_t *counts, double covered)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(counts, k, v)
        json_object_set_new(o, k, json_real(json_real_value(v) / covered));
    return o;
}

static json_t *view_json(const gview *v, double covered)
{
    if (!v->any)
        return json_null();
    double sr = v->req > 0 ? 1.0 - v->err / v->req : 1.0;
    double p50 = wf_mm_quantile(0.5, wf_mm_bounds, v->bucket, WF_MM_NBOUNDS, v->dur_count);
    double p99 = wf_mm_quantile(0.99, wf_mm_bounds, v->bucket, WF_MM_NBOUNDS, v->dur_count);
    json_t *o = json_object();
    json_object_set_new(o, "rps", json_real(v->req / covered));
    json_object_set_new(o, "success_rate", json_real(sr));
    json_object_set_new(o, "error_rate", json_real(1.0 - sr));
    json_object_set_new(o, "p50_ms", num_or_null(p50));
    json_object_set_new(o, "p99_ms", num_or_null(p99));
    json_object_set_new(o, "codes", v->codes ? rates(v->codes, covered) : json_object());
    json_object_set_new(o, "flags", v->flags ? rates(v->flags, covered) : json_object());
    json_object_set_new(o, "tcp_sent_bps", json_real(v->tcp_sent / covered));
    json_object_set_new(o, "tcp_received_bps", json_real(v->tcp_recv / covered));
    return o;
}

static bool disagree(const gview *s, const gview *d, double covered)
{
    if (!s->any || !d->any)
        return false;
    double srs = s->req > 0 ? 1 - s->err / s->req : 1, srd = d->req > 0 ? 1 - d->err / d->req : 1;
    double rs = s->req / covered, rd = d->req / covered;
    double big = rs > rd ? rs : rd;
    return fabs(srs - srd) > 0.01 || (big > 0 && fabs(rs - rd) > 0.1 * big);
}

static json_t *mtls_json(const gedge *e)
{
    const gview *d = &e->v[DST], *s = &e->v[SRC];
    if (d->csp_known > 0)
        return json_real(100.0 * d->mtls / d->csp_known);
    if (!d->any && s->csp_known > 0)
        return json_real(100.0 * s->mtls / s->csp_known);
    return json_null();
}

static const char *edge_health(const gedge *e)
{
    bool grpc = !strcmp(e->proto, "grpc");
    return worse(view_health(&e->v[SRC], grpc), view_health(&e->v[DST], grpc));
}

static const char *node_health(const gnode *n)
{
    bool in = n->in[SRC].req > 0 || n->in[DST].req > 0;
    const gview *v = in ? n->in : n->out;
    return worse(view_health(&v[SRC], n->grpc), view_health(&v[DST], n->grpc));
}

static void set_opt(json_t *o, const char *k, const char *v)
{
    if (v)
        json_object_set_new(o, k, json_string(v));
}

static json_t *node_json(const gnode *n)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(n->id));
    json_object_set_new(o, "kind", json_string(n->kind));
    set_opt(o, "parent", n->parent);
    json_object_set_new(o, "namespace", json_string(n->ns ? n->ns : ""));
    json_object_set_new(o, "name", json_string(n->name ? n->name : ""));
    set_opt(o, "app", n->app);
    set_opt(o, "version", n->version);
    set_opt(o, "service", n->service);
    json_object_set_new(o, "is_gateway", json_boolean(n->gateway));
    json_object_set_new(o, "health", json_string(n->health));
    return o;
}

static void free_views(gbuild *b)
{
    for (size_t i = 0; i < wf_strmap_count(b->edges); i++) {
        gedge *e = wf_strmap_value(b->edges, i);
        for (int r = 0; r < 2; r++) {
            json_decref(e->v[r].codes);
            json_decref(e->v[r].flags);
        }
    }
}

/* The app compound nodes of the kept versioned workloads, appended to arr. */
static void app_nodes(gbuild *b, json_t *arr)
{
    wf_strmap *apps = wf_strmap_new(&b->a);
    for (size_t i = 0; apps && i < wf_strmap_count(b->nodes); i++) {
        gnode *n = wf_strmap_value(b->nodes, i);
        if (!n->keep || !n->parent)
            continue;
        void **slot = wf_strmap_slot(apps, n->parent, true);
        if (!slot)
            break;
        json_t *o = *slot;
        if (!o) {
            o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:s}", "id", n->parent, "kind", "app",
                          "namespace", n->ns, "name", n->app, "app", n->app, "is_gateway", 0,
                          "health", n->health);
            if (!o || json_array_append_new(arr, o) != 0)
                break;
            *slot = o;
        } else {
            const char *h = json_string_value(json_object_get(o, "health"));
            json_object_set_new(o, "health", json_string(worse(h, n->health)));
        }
        if (n->gateway)
            json_object_set_new(o, "is_gateway", json_true());
    }
}

static bool in_ns(const gnode *n, const char *ns)
{
    return strcmp(n->ns ? n->ns : "", ns) == 0;
}

/* The unknown node: a source outside the mesh or a destination_service "unknown" (requests
 * no cluster took, e.g. a gateway's 503 NC: its listener has no Host fallback). */
static bool unknown_node(const gnode *n)
{
    return !strcmp(n->kind, "unknown") ||
           (!strcmp(n->kind, "service") && n->service && !strcmp(n->service, "unknown"));
}

/* Whether the filter keeps e in pass 0 (an end in ns; every edge when ns is NULL or "") or
 * pass 1 (an end is the unknown node, the other end a node pass 0 kept). */
static bool edge_kept(const gedge *e, const char *ns, int pass)
{
    if (!ns || !ns[0])
        return true;
    if (pass == 0)
        return in_ns(e->from, ns) || in_ns(e->to, ns);
    return (unknown_node(e->to) && e->from->keep) || (unknown_node(e->from) && e->to->keep);
}

/* e appended to edges as the contract's edge object (its ends marked kept); 0 or -1. */
static int edge_append(json_t *edges, gedge *e, double covered)
{
    e->shown = true;
    e->from->keep = e->to->keep = true;
    json_t *o = json_object();
    if (!o)
        return -1;
    json_object_set_new(o, "id", json_string(e->id));
    json_object_set_new(o, "source", json_string(e->from->id));
    json_object_set_new(o, "target", json_string(e->to->id));
    json_object_set_new(o, "protocol", json_string(e->proto));
    json_object_set_new(o, "mtls_percent", mtls_json(e));
    json_object_set_new(o, "health", json_string(edge_health(e)));
    json_object_set_new(o, "source_view", view_json(&e->v[SRC], covered));
    json_object_set_new(o, "destination_view", view_json(&e->v[DST], covered));
    json_object_set_new(o, "disagree", json_boolean(disagree(&e->v[SRC], &e->v[DST], covered)));
    return json_array_append_new(edges, o);
}

json_t *wf_ui_graph_build(const wf_mm_store *s, unsigned window_s, const char *ns)
{
    gbuild b = {0};
    wf_arena_init(&b.a);
    b.nodes = wf_strmap_new(&b.a);
    b.edges = wf_strmap_new(&b.a);
    double covered = b.nodes && b.edges ? wf_mm_window(s, window_s, on_series, &b) : 0;
    json_t *nodes = json_array(), *edges = json_array();
    bool all = !ns || !ns[0];
    for (size_t i = 0; b.nodes && i < wf_strmap_count(b.nodes); i++) {
        gnode *n = wf_strmap_value(b.nodes, i);
        n->health = node_health(n);
    }
    /* pass 0: the edges with an end in ns (all of them without ns); pass 1: the edges to or
     * from the unknown node whose other end pass 0 kept (a gateway's 503 NC to "unknown") */
    for (int pass = 0; pass < (all ? 1 : 2); pass++)
        for (size_t i = 0; covered > 0 && b.edges && i < wf_strmap_count(b.edges); i++) {
            gedge *e = wf_strmap_value(b.edges, i);
            if (!e->shown && edge_kept(e, ns, pass) && edge_append(edges, e, covered) != 0)
                b.oom = true;
        }
    for (size_t i = 0; b.nodes && i < wf_strmap_count(b.nodes); i++) {
        gnode *n = wf_strmap_value(b.nodes, i);
        if (n->keep && json_array_append_new(nodes, node_json(n)) != 0)
            b.oom = true;
    }
    if (nodes)
        app_nodes(&b, nodes);
    if (b.edges)
        free_views(&b);
    bool oom = b.oom || !b.nodes || !b.edges || !nodes || !edges;
    wf_arena_destroy(&b.a);
    json_t *o = oom ? NULL : json_object();
    if (!o || json_object_set_new(o, "window_s", json_integer(window_s)) ||
        json_object_set_new(o, "covered_s", json_real(covered)) ||
        json_object_set_new(o, "nodes", nodes) || json_object_set_new(o, "edges", edges)) {
        json_decref(o);
        if (!o) {
            json_decref(nodes);
            json_decref(edges);
        }
        return NULL;
    }
    return o;
}
