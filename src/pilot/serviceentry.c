/*
 * serviceentry.c - Kubernetes Services and ServiceEntry hosts as one service view, their
 * visibility to a proxy, and their endpoints from Pods, WorkloadEntries and ServiceEntry
 * endpoints (see serviceentry.h).
 */
#include "pilot/serviceentry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define EXPORT_TO_ANNOTATION "networking.istio.io/exportTo"

/* ---------- services ---------- */

void wf_svc_clear(wf_svc *s)
{
    if (!s)
        return;
    free(s->host);
    free(s->ports);
    *s = (wf_svc){0};
}

int wf_svc_from_service(const wf_resource *r, const char *suffix, wf_svc *out)
{
    *out = (wf_svc){0};
    const wf_service *svc = r ? r->t.service : NULL;
    if (!svc || !r->name || !*r->name)
        return 0;
    if ((svc->type && strcmp(svc->type, "ExternalName") == 0) ||
        (svc->cluster_ip && strcmp(svc->cluster_ip, "None") == 0))
        return 0;
    out->res = r;
    out->name = r->name;
    out->ns = r->ns;
    out->vip = svc->cluster_ip && *svc->cluster_ip ? svc->cluster_ip : NULL;
    out->resolution = WF_SVC_EDS;
    if (asprintf(&out->host, "%s.%s.svc.%s", r->name, r->ns, suffix) < 0) {
        out->host = NULL;
        return -1;
    }
    out->ports = calloc(svc->nports ? svc->nports : 1, sizeof *out->ports);
    if (!out->ports) {
        wf_svc_clear(out);
        return -1;
    }
    memcpy(out->ports, svc->ports, svc->nports * sizeof *out->ports);
    out->nports = svc->nports;
    return 1;
}

static wf_svc_resolution se_resolution(const char *r)
{
    if (r && strcmp(r, "STATIC") == 0)
        return WF_SVC_EDS;
    if (r && strcmp(r, "DNS") == 0)
        return WF_SVC_DNS;
    if (r && strcmp(r, "DNS_ROUND_ROBIN") == 0)
        return WF_SVC_DNS_RR;
    return WF_SVC_NONE; /* NONE, Istio's default */
}

int wf_svc_from_se(const wf_resource *r, size_t i, wf_svc *out)
{
    *out = (wf_svc){0};
    const wf_serviceentry *se = r ? r->t.se : NULL;
    if (!se || i >= se->hosts.n || !se->hosts.v[i] || !*se->hosts.v[i])
        return 0;
    out->res = r;
    out->is_se = true;
    out->ns = r->ns;
    out->resolution = se_resolution(se->resolution);
    out->host = strdup(se->hosts.v[i]);
    out->ports = calloc(se->nports ? se->nports : 1, sizeof *out->ports);
    if (!out->host || !out->ports) {
        wf_svc_clear(out);
        return -1;
    }
    out->name = out->host;
    for (size_t k = 0; k < se->nports; k++) {
        const wf_se_port *p = &se->ports[k];
        out->ports[out->nports++] = (wf_service_port){
            .name = p->name,
            .port = p->number,
            .protocol = "TCP",
            .target_port = p->target_port > 0 ? p->target_port : p->number,
            .app_protocol = p->protocol && *p->protocol ? p->protocol : NULL,
            .node = p->node,
        };
    }
    return 1;
}

/* exportTo values (Istio's visibility): empty or "*" everywhere, "." own namespace, "~"
 * nowhere, else the namespace named. */
static bool export_matches(const char *v, size_t len, const char *own_ns, const char *proxy_ns)
{
    if (len == 1 && v[0] == '*')
        return true;
    if (!proxy_ns)
        return false;
    if (len == 1 && v[0] == '.')
        return strcmp(own_ns, proxy_ns) == 0;
    return strlen(proxy_ns) == len && strncmp(v, proxy_ns, len) == 0;
}

/* The Service annotation: a comma-separated list. */
static bool annotation_exported(const wf_resource *r, const char *proxy_ns)
{
    const char *a = wf_kvs_get(&r->annotations, EXPORT_TO_ANNOTATION);
    if (!a || !*a)
        return true;
    for (const char *p = a; *p;) {
        size_t len = strcspn(p, ",");
        const char *v = p;
        size_t vl = len;
        while (vl && (*v == ' ')) {
            v++;
            vl--;
        }
        while (vl && v[vl - 1] == ' ')
            vl--;
        if (vl && export_matches(v, vl, r->ns, proxy_ns))
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static bool exported(const wf_svc *s, const char *proxy_ns)
{
    if (!s->is_se)
        return annotation_exported(s->res, proxy_ns);
    const wf_strs *e = &s->res->t.se->export_to;
    if (e->n == 0)
        return true;
    for (size_t i = 0; i < e->n; i++)
        if (e->v[i] && export_matches(e->v[i], strlen(e->v[i]), s->ns, proxy_ns))
            return true;
    return false;
}

bool wf_svc_visible(const wf_svc *s, const wf_svc_view *v)
{
    const char *pns = v && v->proxy_ns && *v->proxy_ns ? v->proxy_ns : NULL;
    return exported(s, pns) && wf_scope_visible(v ? v->scope : NULL, s->ns, s->host);
}

const wf_strs *wf_svc_addresses(const wf_svc *s)
{
    return s && s->is_se ? &s->res->t.se->addresses : NULL;
}

const wf_service_port *wf_svc_port(const wf_svc *s, int32_t port)
{
    for (size_t i = 0; s && i < s->nports; i++)
        if (s->ports[i].port == port &&
            !(s->ports[i].protocol && strcmp(s->ports[i].protocol, "UDP") == 0))
            return &s->ports[i];
    return NULL;
}

/* ---------- the list a proxy sees ---------- */

static const char *view_suffix(const wf_store *s, const wf_svc_view *v)
{
    return v && v->suffix ? v->suffix : wf_store_domain_suffix(s);
}

/* Keep *sv when visible and its host is new (taken by `seen`). Returns 1 kept, 0 dropped (and
 * cleared), -1 OOM. */
static int keep(wf_svcs *l, wf_svc *sv, const wf_svc_view *v, json_t *seen)
{
    if (!wf_svc_visible(sv, v) || json_object_get(seen, sv->host)) {
        wf_svc_clear(sv);
        return 0;
    }
    if (json_object_set_new(seen, sv->host, json_true()) != 0) {
        wf_svc_clear(sv);
        return -1;
    }
    l->v[l->n++] = *sv;
    return 1;
}

static size_t capacity(const wf_store *s)
{
    size_t n = 0, total = 0;
    (void)wf_store_kind(s, WF_KIND_SERVICE, &n);
    total = n;
    const wf_resource *const *ses = wf_store_kind(s, WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n; i++)
        total += ses[i]->t.se ? ses[i]->t.se->hosts.n : 0;
    return total;
}

static int collect_all(const wf_store *s, const wf_svc_view *v, wf_svcs *out, json_t *seen)
{
    size_t n = 0;
    wf_svc sv;
    const wf_resource *const *svcs = wf_store_kind(s, WF_KIND_SERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        int rc = wf_svc_from_service(svcs[i], view_suffix(s, v), &sv);
        if (rc < 0 || (rc > 0 && keep(out, &sv, v, seen) < 0))
            return -1;
    }
    const wf_resource *const *ses = wf_store_kind(s, WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n; i++) {
        for (size_t h = 0; ses[i]->t.se && h < ses[i]->t.se->hosts.n; h++) {
            int rc = wf_svc_from_se(ses[i], h, &sv);
            if (rc < 0 || (rc > 0 && keep(out, &sv, v, seen) < 0))
                return -1;
        }
    }
    return 0;
}

int wf_svcs_collect(const wf_store *s, const wf_svc_view *v, wf_svcs *out)
{
    *out = (wf_svcs){0};
    size_t cap = capacity(s);
    json_t *seen = json_object();
    out->v = calloc(cap ? cap : 1, sizeof *out->v);
    if (!seen || !out->v || collect_all(s, v, out, seen) != 0) {
        json_decref(seen);
        wf_svcs_free(out);
        return -1;
    }
    json_decref(seen);
    return 0;
}

void wf_svcs_free(wf_svcs *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        wf_svc_clear(&l->v[i]);
    free(l->v);
    *l = (wf_svcs){0};
}

/* The first visible candidate of one kind for host among the indexed resources. */
static int find_kind(const wf_resource *const *rs, size_t n, bool se, const char *host,
                     const wf_store *s, const wf_svc_view *v, wf_svc *out)
{
    for (size_t i = 0; i < n; i++) {
        const wf_resource *r = rs[i];
        if (se != (r->kind == WF_KIND_SERVICEENTRY))
            continue;
        for (size_t h = 0; h < (se ? r->t.se->hosts.n : 1); h++) {
            int rc =
                se ? wf_svc_from_se(r, h, out) : wf_svc_from_service(r, view_suffix(s, v), out);
            if (rc < 0)
                return -1;
            if (rc > 0 && strcmp(out->host, host) == 0 && wf_svc_visible(out, v))
                return 1;
            wf_svc_clear(out);
        }
    }
    return 0;
}

int wf_svc_find(const wf_store *s, const char *host, const wf_svc_view *v, wf_svc *out)
{
    *out = (wf_svc){0};
    size_t n = 0;
    const wf_resource *const *rs = wf_store_by_host(s, host, &n);
    int rc = find_kind(rs, n, false, host, s, v, out);
    return rc != 0 ? rc : find_kind(rs, n, true, host, s, v, out);
}

/* ---------- endpoints ---------- */

typedef struct ep_walk {
    const wf_svc *svc;
    const wf_service_port *sp;
    const wf_kvs *subset;
    bool (*cb)(const wf_endpoint *, void *);
    void *arg;
    bool stop;
} ep_walk;

const char *wf_endpoint_label(const wf_endpoint *ep, const char *key)
{
    if (ep->labels)
        return wf_kvs_get(ep->labels, key);
    return ep->label_map ? wf_map_str(ep->label_map, key) : NULL;
}

static bool subset_ok(const ep_walk *w, const wf_endpoint *ep)
{
    if (!w->subset)
        return true;
    for (size_t i = 0; i < w->subset->n; i++) {
        const char *v = wf_endpoint_label(ep, w->subset->items[i].key);
        if (!v || !w->subset->items[i].value || strcmp(v, w->subset->items[i].value) != 0)
            return false;
    }
    return true;
}

static void emit(ep_walk *w, const wf_endpoint *ep)
{
    if (w->stop || ep->port <= 0 || ep->port > 65535 || !ep->address || !*ep->address)
        return;
    if (subset_ok(w, ep) && !w->cb(ep, w->arg))
        w->stop = true;
}

/* Kubernetes' endpoints controller: a pod with an IP that has not terminated. */
static bool pod_ready(const wf_pod *p)
{
    if (!p || !p->pod_ip || !*p->pod_ip)
        return false;
    return !(p->phase && (!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed")));
}

static int32_t container_port(const wf_pod *p, const char *name)
{
    for (size_t c = 0; name && c < p->spec.ncontainers; c++) {
        const wf_container *ct = &p->spec.containers[c];
        for (size_t i = 0; i < ct->nports; i++)
            if (ct->ports[i].name && strcmp(ct->ports[i].name, name) == 0)
                return ct->ports[i].container_port;
    }
    return 0;
}

/* The port of a named-port map (WorkloadEntry / SE endpoint `ports`), 0 when absent. */
static int32_t map_port(const wf_node *ports, const char *name)
{
    int64_t v = 0;
    if (!name || !wf_node_int(wf_map_get(ports, name), &v) || v <= 0 || v > 65535)
        return 0;
    return (int32_t)v;
}

static bool pod_cb(const wf_resource *r, void *arg)
{
    ep_walk *w = arg;
    if (!pod_ready(r->t.pod))
        return true;
    int32_t port;
    if (w->svc->is_se) {
        port = container_port(r->t.pod, w->sp->name);
        port = port > 0 ? port : w->sp->target_port;
    } else {
        port = w->sp->target_name       ? container_port(r->t.pod, w->sp->target_name)
               : w->sp->target_port > 0 ? w->sp->target_port
                                        : w->sp->port;
    }
    const wf_endpoint ep = {
        .address = r->t.pod->pod_ip, .port = port, .weight = 1, .src = r, .labels = &r->labels};
    emit(w, &ep);
    return !w->stop;
}

static void workload_entries(const wf_store *s, ep_walk *w, const wf_kvs *selector)
{
    size_t n = 0;
    const wf_resource *const *wes = wf_store_kind_ns(s, WF_KIND_WORKLOADENTRY, w->svc->ns, &n);
    for (size_t i = 0; i < n && !w->stop; i++) {
        const wf_workloadentry *we = wes[i]->t.we;
        if (!we || !wf_kvs_subset(selector, &we->labels))
            continue;
        int32_t port;
        if (w->svc->is_se) {
            port = map_port(we->ports, w->sp->name);
            port = port > 0 ? port : w->sp->target_port;
        } else {
            port = w->sp->target_name       ? map_port(we->ports, w->sp->target_name)
                   : w->sp->target_port > 0 ? w->sp->target_port
                                            : w->sp->port;
        }
        const wf_endpoint ep = {.address = we->address,
                                .port = port,
                                .weight = 1,
                                .src = wes[i],
                                .labels = &we->labels};
        emit(w, &ep);
    }
}

static uint32_t endpoint_weight(const wf_node *e)
{
    int64_t v = 0;
    return wf_node_int(wf_map_get(e, "weight"), &v) && v > 0 && v <= UINT32_MAX ? (uint32_t)v : 1;
}

static void se_endpoints(ep_walk *w)
{
    const wf_node *eps = w->svc->res->t.se->endpoints;
    for (size_t i = 0; i < wf_seq_len(eps) && !w->stop; i++) {
        const wf_node *e = wf_seq_at(eps, i);
        const char *addr = wf_map_str(e, "address");
        if (!addr || strncmp(addr, "unix://", 7) == 0)
            continue;
        int32_t port = map_port(wf_map_get(e, "ports"), w->sp->name);
        const wf_endpoint ep = {.address = addr,
                                .port = port > 0 ? port : w->sp->target_port,
                                .weight = endpoint_weight(e),
                                .src = w->svc->res,
                                .label_map = wf_map_get(e, "labels")};
        emit(w, &ep);
    }
}

static void se_all(const wf_store *s, ep_walk *w)
{
    const wf_serviceentry *se = w->svc->res->t.se;
    if (se->has_workload_selector) {
        workload_entries(s, w, &se->workload_selector);
        if (!w->stop)
            wf_store_pods_matching(s, w->svc->ns, &se->workload_selector, pod_cb, w);
        return;
    }
    if (wf_seq_len(se->endpoints) > 0) {
        se_endpoints(w);
        return;
    }
    bool dns = w->svc->resolution == WF_SVC_DNS || w->svc->resolution == WF_SVC_DNS_RR;
    if (dns && w->svc->host[0] != '*') {
        const wf_endpoint ep = {.address = w->svc->host, .port = w->sp->target_port, .weight = 1};
        emit(w, &ep);
    }
}

void wf_svc_endpoints(const wf_store *s, const wf_svc *svc, const wf_service_port *sp,
                      const wf_kvs *subset, bool (*cb)(const wf_endpoint *ep, void *arg), void *arg)
{
    if (!s || !svc || !sp || !cb)
        return;
    ep_walk w = {.svc = svc, .sp = sp, .subset = subset, .cb = cb, .arg = arg};
    if (svc->is_se) {
        se_all(s, &w);
        return;
    }
    const wf_service *k = svc->res->t.service;
    if (!k->has_selector || k->selector.n == 0)
        return;
    wf_store_pods_matching(s, svc->ns, &k->selector, pod_cb, &w);
    if (!w.stop)
        workload_entries(s, &w, &k->selector);
}

/* ---- workload identities ---- */

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    h ^= 0xff; /* field separator */
    return h * 1099511628211ULL;
}

static uint64_t identity_of(const wf_resource *r)
{
    uint64_t h = fnv1a(14695981039346656037ULL, r->kind == WF_KIND_POD ? "Pod" : "WorkloadEntry");
    const char *sa = NULL;
    const wf_kvs *labels = &r->labels;
    if (r->kind == WF_KIND_POD && r->t.pod) {
        sa = r->t.pod->spec.service_account && *r->t.pod->spec.service_account
                 ? r->t.pod->spec.service_account
                 : "default";
    } else if (r->t.we) {
        sa = r->t.we->service_account;
        labels = &r->t.we->labels;
    }
    h = fnv1a(fnv1a(h, r->ns), sa);
    uint64_t lh = 0; /* labels in any order: a sum of their hashes */
    for (size_t i = 0; i < labels->n; i++)
        if (strcmp(labels->items[i].key, "pod-template-hash") != 0)
            lh +=
                fnv1a(fnv1a(14695981039346656037ULL, labels->items[i].key), labels->items[i].value);
    return h ^ (lh * 1099511628211ULL);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The sorted identities of s (duplicates kept); *n set; NULL when none or out of memory
 * (*oom set then). */
static uint64_t *identities(const wf_store *s, size_t *n, bool *oom)
{
    size_t np = 0, nw = 0;
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &np);
    const wf_resource *const *wes = wf_store_kind(s, WF_KIND_WORKLOADENTRY, &nw);
    *n = np + nw;
    uint64_t *v = *n ? malloc(*n * sizeof *v) : NULL;
    if (*n && !v) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < np; i++)
        v[i] = identity_of(pods[i]);
    for (size_t i = 0; i < nw; i++)
        v[np + i] = identity_of(wes[i]);
    if (v)
        qsort(v, *n, sizeof *v, cmp_u64);
    return v;
}

bool wf_svc_identities_added(const wf_store *prev, const wf_store *now)
{
    if (!prev || !now)
        return prev != now;
    size_t na = 0, nb = 0;
    bool oom = false;
    uint64_t *a = identities(prev, &na, &oom), *b = identities(now, &nb, &oom);
    bool added = oom;
    for (size_t i = 0, j = 0; !added && j < nb; j++) {
        while (i < na && a[i] < b[j])
            i++;
        added = i == na || a[i] != b[j];
    }
    free(a);
    free(b);
    return added;
}
