/*
 * eds_update.c - the services an endpoint-only change touches (istiod's edsUpdatedServices).
 * See eds_update.h.
 */
#include "pilot/eds_update.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct upd {
    json_t *hosts;
    bool full;
    bool oom;
} upd;

static void add_host(upd *u, const char *host)
{
    if (!u->oom && json_object_set_new(u->hosts, host, json_true()) != 0)
        u->oom = true;
}

static void add_service_host(upd *u, const wf_store *s, const char *ns, const char *name)
{
    char host[1024];
    int n = snprintf(host, sizeof host, "%s.%s.svc.%s", name, ns, wf_store_domain_suffix(s));
    if (n < 0 || (size_t)n >= sizeof host)
        u->full = true; /* a name we cannot spell: do not guess */
    else
        add_host(u, host);
}

/* The services of store s a workload of namespace ns with labels can be an endpoint of. */
static void workload_services(upd *u, const wf_store *s, const char *ns, const wf_kvs *labels)
{
    size_t n = 0;
    const wf_resource *const *svcs = wf_store_kind_ns(s, WF_KIND_SERVICE, ns, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_service *sv = svcs[i]->t.service;
        if (sv && sv->has_selector && sv->selector.n && wf_kvs_subset(&sv->selector, labels))
            add_service_host(u, s, svcs[i]->ns, svcs[i]->name);
    }
    const wf_resource *const *ses = wf_store_kind_ns(s, WF_KIND_SERVICEENTRY, ns, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_serviceentry *se = ses[i]->t.se;
        if (!se || !se->has_workload_selector || !wf_kvs_subset(&se->workload_selector, labels))
            continue;
        if (!se->resolution || strcmp(se->resolution, "STATIC") != 0)
            u->full = true; /* DNS (inline in CDS) or NONE: not an EDS cluster */
        for (size_t h = 0; h < se->hosts.n; h++)
            if (se->hosts.v[h] && *se->hosts.v[h])
                add_host(u, se->hosts.v[h]);
    }
}

static void workload_in(upd *u, const wf_store *s, wf_kind k, const char *ns, const char *name)
{
    const wf_resource *r = s ? wf_store_find(s, k, ns, name) : NULL;
    if (!r)
        return;
    if (k == WF_KIND_POD)
        workload_services(u, s, r->ns, &r->labels);
    else if (r->t.we)
        workload_services(u, s, r->ns, &r->t.we->labels);
}

/* The Service an EndpointSlice names (label kubernetes.io/service-name), in either store. */
static void slice_service(upd *u, const wf_store *s, const char *ns, const char *name)
{
    size_t n = wf_store_count(s);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *r = wf_store_at(s, i);
        if (!r->kind_name || strcmp(r->kind_name, "EndpointSlice") != 0 || strcmp(r->ns, ns) != 0 ||
            strcmp(r->name, name) != 0)
            continue;
        const char *svc = wf_kvs_get(&r->labels, "kubernetes.io/service-name");
        if (svc && *svc)
            add_service_host(u, s, ns, svc);
        else
            u->full = true;
        return;
    }
}

/* One changed key "Kind/ns/name". */
static void key_services(upd *u, const wf_store *prev, const wf_store *now, const char *key)
{
    char kind[64], ns[256], name[512];
    const char *a = strchr(key, '/'), *b = a ? strchr(a + 1, '/') : NULL;
    if (!a || !b || (size_t)(a - key) >= sizeof kind || (size_t)(b - a - 1) >= sizeof ns ||
        strlen(b + 1) >= sizeof name) {
        u->full = true;
        return;
    }
    snprintf(kind, sizeof kind, "%.*s", (int)(a - key), key);
    snprintf(ns, sizeof ns, "%.*s", (int)(b - a - 1), a + 1);
    snprintf(name, sizeof name, "%s", b + 1);
    if (strcmp(kind, "Pod") == 0 || strcmp(kind, "WorkloadEntry") == 0) {
        wf_kind k = kind[0] == 'P' ? WF_KIND_POD : WF_KIND_WORKLOADENTRY;
        workload_in(u, prev, k, ns, name);
        workload_in(u, now, k, ns, name);
    } else if (strcmp(kind, "Endpoints") == 0) {
        add_service_host(u, now, ns, name);
    } else if (strcmp(kind, "EndpointSlice") == 0) {
        size_t before = json_object_size(u->hosts);
        bool was_full = u->full;
        if (prev)
            slice_service(u, prev, ns, name);
        slice_service(u, now, ns, name);
        if (!was_full && !u->full && json_object_size(u->hosts) == before)
            u->full = true; /* in neither store, or naming no service we know */
    } else {
        u->full = true;
    }
}

int wf_eds_updated_services(const wf_store *prev, const wf_store *now, const char *const *changed,
                            size_t n, json_t **out)
{
    *out = NULL;
    if (!now)
        return WF_EDS_UPDATE_FULL;
    upd u = {.hosts = json_object()};
    if (!u.hosts)
        return WF_EDS_UPDATE_OOM;
    for (size_t i = 0; i < n && !u.full && !u.oom; i++)
        key_services(&u, prev, now, changed[i]);
    if (u.oom || u.full) {
        json_decref(u.hosts);
        return u.oom ? WF_EDS_UPDATE_OOM : WF_EDS_UPDATE_FULL;
    }
    *out = u.hosts;
    return WF_EDS_UPDATE_SERVICES;
}

const char *wf_eds_cluster_host(const char *cluster)
{
    if (!cluster || strncmp(cluster, "outbound|", 9) != 0)
        return NULL;
    const char *p = strchr(cluster + 9, '|');
    p = p ? strchr(p + 1, '|') : NULL;
    return p && p[1] ? p + 1 : NULL;
}

bool wf_eds_cluster_updated(const char *cluster, const json_t *services)
{
    const char *host = wf_eds_cluster_host(cluster);
    return host && json_object_get(services, host) != NULL;
}

int wf_eds_names_updated(const wf_xds_names *names, const json_t *services, wf_xds_names *out)
{
    *out = (wf_xds_names){0};
    size_t cnt = 0;
    for (size_t i = 0; i < names->n; i++)
        cnt += wf_eds_cluster_updated(names->v[i], services);
    if (!cnt)
        return 0;
    if (!(out->v = calloc(cnt, sizeof *out->v)))
        return -1;
    for (size_t i = 0; i < names->n; i++) {
        if (!wf_eds_cluster_updated(names->v[i], services))
            continue;
        if (!(out->v[out->n] = strdup(names->v[i]))) {
            wf_xds_names_free(out);
            return -1;
        }
        out->n++;
    }
    return (int)out->n;
}
