/*
 * gen_cache.c - the per-snapshot generation cache (istiod's XdsCache): shared outbound parts
 * serialized once per key, per-pod parts generated per proxy. See gen_cache.h.
 */
#include "pilot/gen_cache.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/strmap.h"
#include "pilot/generate_internal.h"
#include "pilot/serviceentry.h"

#define FNV_INIT  1469598103934665603ull
#define FNV_PRIME 1099511628211ull

/* The text of one response's shared part. */
typedef struct text_slot {
    struct text_slot *next;
    uint64_t names_hash; /* the requested names it answers (0 for CDS / LDS) */
    wf_h2_buf *text;     /* elements without brackets, "" when none (one reference) */
    size_t len;
    uint64_t hash;
} text_slot;

/* Everything cached for one key. */
typedef struct gen_entry {
    text_slot *slots[WF_XDS_NTYPES]; /* CDS: one; RDS, EDS: one per requested name list */
    json_t *listeners;               /* outbound listeners on 0.0.0.0, access logs applied */
} gen_entry;

struct wf_gen_cache {
    wf_pilot_env env;
    wf_arena arena;     /* keys, entries' map */
    wf_strmap *entries; /* key -> gen_entry* */
    json_t *memo;       /* ClusterLoadAssignments (eds.h wf_eds_load_assignment_memo) */
    json_t *src_keys;   /* label keys VirtualService sourceLabels read: sorted array */
};

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* ---- setup ---- */

static int add_src_keys(json_t *set, const wf_route *r)
{
    for (size_t j = 0; j < wf_seq_len(r->match); j++) {
        const wf_node *sl = wf_map_get(wf_seq_at(r->match, j), "sourceLabels");
        for (size_t k = 0; sl && sl->type == WF_NODE_MAP && k < sl->len; k++)
            if (sl->u.entries[k].key && json_object_set_new(set, sl->u.entries[k].key, json_true()))
                return -1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* The label keys any VirtualService's http, tcp or tls match reads as sourceLabels, sorted. */
static json_t *source_label_keys(const wf_store *s)
{
    size_t n = 0;
    const wf_resource *const *vss = wf_store_kind(s, WF_KIND_VIRTUALSERVICE, &n);
    json_t *set = json_object(), *out = json_array();
    for (size_t i = 0; set && out && i < n; i++)
        for (size_t h = 0; vss[i]->t.vs && h < vss[i]->t.vs->nhttp; h++)
            if (add_src_keys(set, &vss[i]->t.vs->http[h]) != 0)
                goto fail;
    for (size_t i = 0; set && out && i < n; i++) { /* tcp and tls matches (pilot/tcp.h) */
        const wf_virtualservice *v = vss[i]->t.vs;
        for (size_t h = 0; v && h < v->ntcp; h++)
            if (add_src_keys(set, &v->tcp[h]) != 0)
                goto fail;
        for (size_t h = 0; v && h < v->ntls; h++)
            if (add_src_keys(set, &v->tls[h]) != 0)
                goto fail;
    }
    const char *k;
    json_t *v;
    json_object_foreach(set, k, v)
    {
        if (json_array_append_new(out, json_string(k)) != 0)
            goto fail;
    }
    json_decref(set);
    json_t **items = NULL;
    size_t cnt = json_array_size(out);
    if (cnt > 1 && (items = calloc(cnt, sizeof *items)) != NULL) {
        for (size_t i = 0; i < cnt; i++)
            items[i] = json_incref(json_array_get(out, i));
        qsort(items, cnt, sizeof *items, cmp_str);
        json_array_clear(out);
        for (size_t i = 0; i < cnt; i++)
            json_array_append_new(out, items[i]);
        free(items);
    } else if (cnt > 1) {
        goto fail_out;
    }
    return out;
fail:
    json_decref(set);
fail_out:
    json_decref(out);
    return NULL;
}

wf_gen_cache *wf_gen_cache_new(const wf_pilot_env *env)
{
    if (!env || !env->store)
        return NULL;
    wf_gen_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->env = *env;
    wf_arena_init(&c->arena);
    c->entries = wf_strmap_new(&c->arena);
    c->memo = json_object();
    c->src_keys = source_label_keys(env->store);
    if (!c->entries || !c->memo || !c->src_keys) {
        wf_gen_cache_free(c);
        return NULL;
    }
    return c;
}

static void entry_free(gen_entry *e)
{
    if (!e)
        return;
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        for (text_slot *s = e->slots[t], *next; s; s = next) {
            next = s->next;
            wf_h2_buf_unref(s->text);
            free(s);
        }
    }
    json_decref(e->listeners);
    free(e);
}

void wf_gen_cache_free(wf_gen_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->entries && i < wf_strmap_count(c->entries); i++)
        entry_free(wf_strmap_value(c->entries, i));
    json_decref(c->memo);
    json_decref(c->src_keys);
    wf_arena_destroy(&c->arena);
    free(c);
}

size_t wf_gen_cache_keys(const wf_gen_cache *c)
{
    return c && c->entries ? wf_strmap_count(c->entries) : 0;
}

/* ---- keys ---- */

static int key_of(const wf_gen_cache *c, const wf_gen *g, char *buf, size_t cap)
{
    const wf_resource *sc = wf_scope_sidecar(g->scope);
    /* captured sidecars get other outbound listeners (per-clusterIP TCP ones, tcp.h per_vip) */
    int n = snprintf(buf, cap, "sidecar|%s|%s/%s|%s%s", g->p->ns ? g->p->ns : "", sc ? sc->ns : "",
                     sc ? sc->name : "", g->p->captured ? "captured|" : "",
                     g->p->dns_auto_allocate ? "auto|" : "");
    size_t i;
    json_t *k;
    json_array_foreach(c->src_keys, i, k)
    {
        if (n < 0 || (size_t)n >= cap)
            return -1;
        const char *v = wf_kvs_get(&g->labels, json_string_value(k));
        n += snprintf(buf + n, cap - (size_t)n, v ? "%s=%s;" : "%s;", json_string_value(k), v);
    }
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static bool cached_kind(const wf_pilot_proxy *p)
{
    return p->kind == WF_PROXY_SIDECAR && p->ns && *p->ns;
}

int wf_gen_cache_key(wf_gen_cache *c, const wf_pilot_proxy *p, char *buf, size_t cap)
{
    wf_gen g;
    if (!c || !p || cap == 0)
        return -1;
    buf[0] = '\0';
    if (!cached_kind(p))
        return 0;
    if (wf_gen_init(&g, &c->env, p) != 0)
        return -1;
    int rc = key_of(c, &g, buf, cap);
    wf_gen_fini(&g);
    return rc;
}

static gen_entry *entry_for(wf_gen_cache *c, const wf_gen *g)
{
    char key[2048];
    if (key_of(c, g, key, sizeof key) != 0)
        return NULL;
    void **slot = wf_strmap_slot(c->entries, key, true);
    if (slot && !*slot)
        *slot = calloc(1, sizeof(gen_entry));
    return slot ? *slot : NULL;
}

/* ---- text ---- */

/* The elements of array arr (released) as text without brackets into *len. NULL on OOM. */
static char *dump_elems(json_t *arr, size_t *len)
{
    char *s = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    if (n < 2) {
        free(s);
        return NULL;
    }
    memmove(s, s + 1, n - 2);
    s[n - 2] = '\0';
    *len = n - 2;
    return s;
}

static text_slot *slot_find(gen_entry *e, wf_xds_type t, uint64_t nh)
{
    for (text_slot *s = e->slots[t]; s; s = s->next)
        if (s->names_hash == nh)
            return s;
    return NULL;
}

/* The shared JSON of a sidecar for type t (CDS, RDS, EDS). */
static json_t *shared_json(wf_gen_cache *c, const wf_gen *g, wf_xds_type t,
                           const wf_xds_names *names)
{
    switch (t) {
    case WF_XDS_CDS:
        return wf_gen_outbound_clusters(g);
    case WF_XDS_RDS:
        return wf_gen_filter_names(wf_gen_sidecar_route_configs(g), names);
    case WF_XDS_EDS:
        return wf_gen_endpoints(g, names, c->memo);
    default:
        return json_array();
    }
}

static text_slot *shared_text(wf_gen_cache *c, gen_entry *e, const wf_gen *g, wf_xds_type t,
                              const wf_xds_names *names, uint64_t names_h)
{
    uint64_t nh = t == WF_XDS_CDS ? 0 : names_h;
    text_slot *s = slot_find(e, t, nh);
    if (s)
        return s;
    if (!(s = calloc(1, sizeof *s)))
        return NULL;
    s->names_hash = nh;
    char *text = dump_elems(shared_json(c, g, t, names), &s->len);
    if (!text || !(s->text = wf_h2_buf_take(text, s->len))) { /* take frees text on failure */
        free(s);
        return NULL;
    }
    s->hash = fnv(FNV_INIT, text, s->len);
    s->next = e->slots[t];
    e->slots[t] = s;
    return s;
}

/* The per-pod listeners: the cached outbound ones (rebound on WEFT_LOCALHOST) that no inbound
 * listener's name took, then the inbound ones, as wf_pilot_generate's listeners. */
static json_t *sidecar_listeners(wf_gen_cache *c, gen_entry *e, const wf_gen *g)
{
    if (!e->listeners) {
        e->listeners = wf_gen_outbound_listeners(g, NULL);
        if (!e->listeners || wf_gen_access_logs(e->listeners, c->env.mesh) != 0 ||
            wf_gen_path_normalization(e->listeners, c->env.mesh) != 0) {
            json_decref(e->listeners);
            e->listeners = NULL;
            return NULL;
        }
    }
    json_t *in = wf_gen_inbound(g, true), *out = json_array(), *l;
    if (!in || !out || wf_gen_access_logs(in, c->env.mesh) != 0 ||
        wf_gen_path_normalization(in, c->env.mesh) != 0)
        goto fail;
    if (g->p->captured) { /* Istio's capture layout: the outbound ones stay on 0.0.0.0 */
        json_decref(out);
        out = wf_gen_capture_listeners(json_incref(e->listeners), in, g);
        /* the two new listeners get the access logs the others already have */
        json_t *two = out ? json_pack("[O,O]", json_array_get(out, 0),
                                      json_array_get(out, json_array_size(out) - 1))
                          : NULL;
        if (!two || wf_gen_access_logs(two, c->env.mesh) != 0) {
            json_decref(two);
            json_decref(out);
            return NULL;
        }
        json_decref(two);
        return out;
    }
    size_t i;
    json_array_foreach(e->listeners, i, l)
    {
        json_t *copy = json_incref(l);
        if (g->p->localhost && copy) {
            json_decref(copy);
            copy = json_deep_copy(l);
            json_t *sa = json_object_get(json_object_get(copy, "address"), "socket_address");
            if (!sa || json_object_set_new(sa, "address", json_string(g->p->localhost)) != 0) {
                json_decref(copy);
                copy = NULL;
            }
        }
        if (!copy || json_array_append_new(out, copy) != 0)
            goto fail;
    }
    return wf_gen_merge_listeners(out, in);
fail:
    json_decref(in);
    json_decref(out);
    return NULL;
}

static json_t *own_json(wf_gen_cache *c, gen_entry *e, const wf_gen *g, wf_xds_type t)
{
    if (t == WF_XDS_CDS)
        return wf_gen_inbound(g, false);
    if (t == WF_XDS_LDS)
        return g->p->http10 ? wf_gen_accept_http10(sidecar_listeners(c, e, g))
                            : sidecar_listeners(c, e, g);
    return json_array();
}

static int sidecar_text(wf_gen_cache *c, const wf_gen *g, wf_xds_type t, const wf_xds_names *names,
                        uint64_t names_h, wf_gen_text *out)
{
    gen_entry *e = entry_for(c, g);
    if (!e)
        return -1;
    if (t == WF_XDS_CDS || t == WF_XDS_RDS || t == WF_XDS_EDS) {
        text_slot *s = shared_text(c, e, g, t, names, names_h);
        if (!s)
            return -1;
        out->shared = (const char *)wf_h2_buf_data(s->text);
        out->shared_len = s->len;
        out->shared_buf = s->text;
        out->hash = s->hash;
    }
    if (t == WF_XDS_CDS || t == WF_XDS_LDS) {
        if (!(out->own = dump_elems(own_json(c, e, g, t), &out->own_len)))
            return -1;
        if (out->own_len) /* the hash of the whole: the shared part's, continued */
            out->hash = fnv(out->hash ^ 0x9e3779b97f4a7c15ull, out->own, out->own_len);
    }
    return 0;
}

int wf_gen_cache_text(wf_gen_cache *c, const wf_pilot_proxy *p, wf_xds_type t,
                      const wf_xds_names *names, wf_gen_text *out)
{
    return wf_gen_cache_text_hashed(c, p, t, names, wf_xds_names_hash(names), out);
}

int wf_gen_cache_text_hashed(wf_gen_cache *c, const wf_pilot_proxy *p, wf_xds_type t,
                             const wf_xds_names *names, uint64_t names_hash, wf_gen_text *out)
{
    *out = (wf_gen_text){.shared = "", .hash = FNV_INIT};
    if (!c || !p)
        return -1;
    if (!cached_kind(p) || t >= WF_XDS_NTYPES || (int)t < 0 || t == WF_XDS_NDS) {
        json_t *arr = wf_gen_cache_json(c, p, t, names);
        if (!arr || !(out->own = dump_elems(arr, &out->own_len)))
            return -1;
        out->hash = fnv(FNV_INIT ^ 0x9e3779b97f4a7c15ull, out->own, out->own_len);
        return 0;
    }
    wf_gen g;
    if (wf_gen_init(&g, &c->env, p) != 0)
        return -1;
    int rc = sidecar_text(c, &g, t, names, names_hash, out);
    wf_gen_fini(&g);
    if (rc != 0) {
        wf_gen_text_free(out);
        *out = (wf_gen_text){.shared = ""};
    }
    return rc;
}

void wf_gen_text_free(wf_gen_text *t)
{
    if (t) {
        free(t->own);
        t->own = NULL;
    }
}

json_t *wf_gen_cache_json(wf_gen_cache *c, const wf_pilot_proxy *p, wf_xds_type t,
                          const wf_xds_names *names)
{
    if (!c || !p)
        return NULL;
    if (t != WF_XDS_EDS)
        return wf_pilot_generate(&c->env, p, t, names);
    wf_gen g;
    if (wf_gen_init(&g, &c->env, p) != 0)
        return NULL;
    json_t *out = wf_gen_endpoints(&g, names, c->memo);
    wf_gen_fini(&g);
    return out;
}

/* ---- carrying entries over to the next snapshot (istiod's selective cache clear) ---- */

#define T_CDS (1u << WF_XDS_CDS)
#define T_LDS (1u << WF_XDS_LDS)
#define T_RDS (1u << WF_XDS_RDS)
#define T_EDS (1u << WF_XDS_EDS)
#define T_ALL (T_CDS | T_LDS | T_RDS | T_EDS)

/* Does a ServiceEntry select workloads (its DNS clusters then carry Pod / WorkloadEntry
 * endpoints inline, so CDS depends on them)? */
static bool se_selects_workloads(const wf_store *s)
{
    size_t n = 0;
    const wf_resource *const *ses = wf_store_kind(s, WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n; i++)
        if (ses[i]->t.se && ses[i]->t.se->has_workload_selector)
            return true;
    return false;
}

static bool kind_is(const char *key, size_t len, const char *kind)
{
    return strlen(kind) == len && strncmp(key, kind, len) == 0;
}

/* The types a change of resource key ("Kind/ns/name") can change for a sidecar's cached parts.
 * Anything not known to be narrower invalidates everything. */
static unsigned invalidated_by(const char *key, bool se_sel)
{
    const char *slash = strchr(key, '/');
    size_t len = slash ? (size_t)(slash - key) : strlen(key);
    if (kind_is(key, len, "VirtualService")) /* tcp and tls routes are listener chains */
        return T_RDS | T_LDS;
    if (kind_is(key, len, "Gateway"))
        return T_RDS;
    if (kind_is(key, len, "DestinationRule")) /* and tcp_proxy's TCP settings (pilot/tcp.h) */
        return T_CDS | T_EDS | T_LDS;
    if (kind_is(key, len, "Pod") || kind_is(key, len, "WorkloadEntry") ||
        kind_is(key, len, "Endpoints") || kind_is(key, len, "EndpointSlice"))
        return T_EDS | (se_sel ? T_CDS : 0);
    return T_ALL;
}

static void steal(gen_entry *to, gen_entry *from, unsigned keep)
{
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        if (keep & (1u << t)) {
            to->slots[t] = from->slots[t];
            from->slots[t] = NULL;
        }
    }
    if (keep & T_LDS) {
        to->listeners = from->listeners;
        from->listeners = NULL;
    }
}

wf_gen_cache *wf_gen_cache_carry(wf_gen_cache *prev, const wf_pilot_env *env,
                                 const char *const *changed, size_t n_changed, bool mesh_changed)
{
    wf_gen_cache *c = wf_gen_cache_new(env);
    if (!c || !prev || mesh_changed)
        return c;
    unsigned drop = 0;
    bool se_sel = se_selects_workloads(prev->env.store) || se_selects_workloads(env->store);
    for (size_t i = 0; i < n_changed && drop != T_ALL; i++)
        drop |= invalidated_by(changed[i], se_sel);
    /* workloads with other service accounts: the clusters' SAN matchers change */
    if ((drop & T_EDS) && !(drop & T_CDS) && wf_svc_identities_added(prev->env.store, env->store))
        drop |= T_CDS;
    unsigned keep = T_ALL & ~drop;
    for (size_t i = 0; keep && i < wf_strmap_count(prev->entries); i++) {
        void **slot = wf_strmap_slot(c->entries, wf_strmap_key(prev->entries, i), true);
        if (!slot || !(*slot = calloc(1, sizeof(gen_entry)))) {
            wf_gen_cache_free(c);
            return wf_gen_cache_new(env);
        }
        steal(*slot, wf_strmap_value(prev->entries, i), keep);
    }
    return c;
}
