/*
 * pstats_config.c - the listener and cluster managers' configuration stats
 * (pstats.h wp_pstats_config_applied, wp_pstats_warming_gauges): what changed between two
 * snapshots, by resource name.
 *
 * A resource's identity is its configuration as written: for a bootstrap-only snapshot every
 * static_resources entry; for a snapshot built from xDS (config.h from_xds) the first
 * n_static_* entries of the effective bootstrap, then the dynamic resources as received from
 * the config-dump elements in xds_dump (so the EDS assignment or RDS route configuration
 * compose inlines does not make a cluster or listener look modified, as in Envoy, whose
 * CDS/LDS compare the resource's hash).
 */
#include <stdint.h>
#include <string.h>

#include "core/strmap.h"

#include "proxy/pstats/pstats.h"

/* name -> resource (borrowed) of the n first entries of arr (all when n is SIZE_MAX). */
static void add_named(json_t *map, const json_t *arr, size_t n)
{
    size_t i;
    json_t *r;
    json_array_foreach(arr, i, r)
    {
        if (i >= n)
            break;
        const char *name = json_string_value(json_object_get(r, "name"));
        if (name)
            json_object_set(map, name, r);
    }
}

/* Adds the resources under key (cluster or listener) of the dump elements in arr, reading
 * them from the element itself or from its active_state / warming_state. */
static void add_dumped(json_t *map, const json_t *arr, const char *key)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        const json_t *r = json_object_get(e, key);
        if (!r)
            r = json_object_get(json_object_get(e, "active_state"), key);
        if (!r)
            r = json_object_get(json_object_get(e, "warming_state"), key);
        const char *name = json_string_value(json_object_get(r, "name"));
        if (name)
            json_object_set(map, name, (json_t *)r);
    }
}

/* name -> configuration of cfg's clusters (listeners = false) or listeners. NULL cfg: an
 * empty map. NULL on out of memory. */
static json_t *resources(const wp_config *cfg, bool listeners)
{
    json_t *map = json_object();
    if (!map || !cfg)
        return map;
    const char *kind = listeners ? "listeners" : "clusters";
    const json_t *st = json_object_get(json_object_get(cfg->bootstrap, "static_resources"), kind);
    if (!cfg->from_xds) {
        add_named(map, st, SIZE_MAX);
        return map;
    }
    add_named(map, st, listeners ? cfg->n_static_listeners : cfg->n_static_clusters);
    const json_t *d = json_object_get(cfg->xds_dump, kind);
    if (listeners) {
        add_dumped(map, json_object_get(d, "dynamic_listeners"), "listener");
    } else {
        add_dumped(map, json_object_get(d, "dynamic_active_clusters"), "cluster");
        add_dumped(map, json_object_get(d, "dynamic_warming_clusters"), "cluster");
    }
    return map;
}

typedef struct {
    int64_t added, modified, removed;
} delta;

static delta diff(const json_t *old, const json_t *cur)
{
    delta d = {0, 0, 0};
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)cur, name, v)
    {
        const json_t *o = json_object_get(old, name);
        d.added += o == NULL;
        d.modified += o != NULL && !json_equal(o, v);
    }
    json_object_foreach((json_t *)old, name, v) d.removed += json_object_get(cur, name) == NULL;
    return d;
}

static void count(wp_stats_shard *sh, const delta *d, uint32_t added, uint32_t modified,
                  uint32_t removed)
{
    wp_stat_add(sh, added, d->added);
    wp_stat_add(sh, modified, d->modified);
    wp_stat_add(sh, removed, d->removed);
}

/* The listener of old named like l, NULL when none. */
static const wp_listener *old_listener(const wp_config *old, const wp_listener *l)
{
    for (size_t i = 0; old && i < old->nlisteners; i++)
        if (strcmp(old->listeners[i].name, l->name) == 0)
            return &old->listeners[i];
    return NULL;
}

/* Listeners handed to the workers with sockets: new, modified, or bound again. */
static int64_t created(const wp_config *old, const wp_config *cur, const json_t *oldmap,
                       const json_t *curmap)
{
    int64_t n = 0;
    for (size_t i = 0; i < cur->nlisteners; i++) {
        const wp_listener *l = &cur->listeners[i];
        const wp_listener *o = old_listener(old, l);
        if (!l->bound)
            continue;
        n += !o || !o->bound ||
             !json_equal(json_object_get(oldmap, l->name), json_object_get(curmap, l->name));
    }
    return n;
}

void wp_pstats_config_applied(wp_stats_shard *sh, const wp_pstats *p, const wp_config *old,
                              const wp_config *cur, unsigned nworkers)
{
    json_t *oc = resources(old, false), *cc = resources(cur, false);
    json_t *ol = resources(old, true), *cl = resources(cur, true);
    if (oc && cc && ol && cl) {
        delta d = diff(oc, cc);
        count(sh, &d, p->cm_cluster_added, p->cm_cluster_modified, p->cm_cluster_removed);
        d = diff(ol, cl);
        count(sh, &d, p->lm_listener_added, p->lm_listener_modified, p->lm_listener_removed);
        wp_stat_add(sh, p->lm_create_success, (int64_t)nworkers * created(old, cur, ol, cl));
    }
    /* the gauges exist (and read 0) from the start, as Envoy's */
    wp_stat_add(sh, p->lm_create_failure, 0);
    wp_stat_add(sh, p->lm_total_draining, 0);
    json_decref(oc);
    json_decref(cc);
    json_decref(ol);
    json_decref(cl);
}

static int64_t warming_listeners(const wp_config *cfg)
{
    const json_t *dl =
        json_object_get(json_object_get(cfg->xds_dump, "listeners"), "dynamic_listeners");
    int64_t n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(dl, i, e) n += json_object_get(e, "warming_state") != NULL;
    return n;
}

void wp_pstats_warming_gauges(wp_stats_shard *sh, const wp_pstats *p, const wp_config *cfg,
                              int sign)
{
    const json_t *wc =
        json_object_get(json_object_get(cfg->xds_dump, "clusters"), "dynamic_warming_clusters");
    wp_stat_add(sh, p->cm_warming_clusters, sign * (int64_t)json_array_size(wc));
    wp_stat_add(sh, p->lm_total_warming, sign * warming_listeners(cfg));
}

/* The choice old made for a host of c at addr: its wp_endpoint.tsm + 1, 0 when old had no
 * such cluster or host. */
static uint32_t old_choice(const wp_config *old, const wp_cluster *c, const wp_endpoint *e)
{
    void **slot =
        old && old->cluster_names ? wf_strmap_slot(old->cluster_names, c->name, false) : NULL;
    if (!slot || !*slot)
        return 0;
    const wp_cluster *oc = &old->clusters[(intptr_t)*slot - 1];
    for (size_t k = 0; k < oc->nendpoints; k++)
        if (strcmp(oc->endpoints[k].addr.text, e->addr.text) == 0)
            return oc->endpoints[k].tsm + 1;
    return 0;
}

void wp_pstats_tsm_counts(wp_stats_shard *sh, const wp_pstats *p, const wp_config *old,
                          const wp_config *cur)
{
    for (size_t i = 0; i < cur->nclusters && i < p->nclusters; i++) {
        const wp_cluster *c = &cur->clusters[i];
        const uint32_t *slots = p->clusters[i].tsm_match;
        if (!slots)
            continue;
        for (size_t k = 0; k <= c->ntsms; k++) /* they exist (and read 0), as Envoy's */
            wp_stat_add(sh, slots[k], 0);
        for (size_t k = 0; k < c->nendpoints; k++) {
            const wp_endpoint *e = &c->endpoints[k];
            if (old_choice(old, c, e) != e->tsm + 1)
                wp_stat_add(sh, slots[e->tsm], 1);
        }
    }
}
