/*
 * store.c - the store's lifetime, finalisation and indices (see store.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/store_internal.h"

int wf_ptrvec_push(wf_ptrvec *v, const wf_resource *r)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        const wf_resource **nv = realloc(v->v, cap * sizeof(*nv));
        if (!nv)
            return -1;
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = r;
    return 0;
}

void wf_ptrvec_free(wf_ptrvec *v)
{
    free(v->v);
    memset(v, 0, sizeof(*v));
}

static void index_free(wf_index *ix)
{
    free(ix->slots);
    free(ix->chain_res);
    free(ix->chain_next);
    memset(ix, 0, sizeof(*ix));
}

wf_store *wf_store_new(void)
{
    wf_store *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    wf_arena_init(&s->arena);
    s->domain_suffix = "cluster.local";
    return s;
}

void wf_store_free(wf_store *s)
{
    if (!s)
        return;
    wf_ptrvec_free(&s->all);
    wf_ptrvec_free(&s->shadowed);
    for (int k = 0; k < WF_KIND_COUNT; k++)
        wf_ptrvec_free(&s->by_kind[k]);
    index_free(&s->names);
    index_free(&s->hosts);
    index_free(&s->by_ns);
    free(s->errors);
    wf_arena_destroy(&s->arena);
    free(s);
}

int wf_store_add_error(wf_store *s, const char *file, uint32_t line, uint32_t col, const char *msg)
{
    if (s->nerrors == s->caperrors) {
        size_t cap = s->caperrors ? s->caperrors * 2 : 8;
        wf_load_error *ne = realloc(s->errors, cap * sizeof(*ne));
        if (!ne)
            return -1;
        s->errors = ne;
        s->caperrors = cap;
    }
    const char *m = wf_arena_strdup(&s->arena, msg);
    if (!m)
        return -1;
    s->errors[s->nerrors++] = (wf_load_error){file, line, col, m};
    return 0;
}

size_t wf_store_error_count(const wf_store *s)
{
    return s->nerrors;
}

const wf_load_error *wf_store_error(const wf_store *s, size_t i)
{
    return i < s->nerrors ? &s->errors[i] : NULL;
}

size_t wf_store_failed_files(const wf_store *s)
{
    return s->failed_files;
}

size_t wf_store_count(const wf_store *s)
{
    return s->all.n;
}

const wf_resource *wf_store_at(const wf_store *s, size_t i)
{
    return i < s->all.n ? s->all.v[i] : NULL;
}

const wf_resource *const *wf_store_kind(const wf_store *s, wf_kind k, size_t *n)
{
    if (k < 0 || k >= WF_KIND_COUNT) {
        *n = 0;
        return NULL;
    }
    *n = s->by_kind[k].n;
    return s->by_kind[k].v;
}

wf_arena *wf_store_arena(wf_store *s)
{
    return &s->arena;
}

const char *wf_store_domain_suffix(const wf_store *s)
{
    return s->domain_suffix;
}

/* ---- hash index ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int index_grow(wf_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    wf_hslot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < ix->cap; i++) {
        if (!ix->slots[i].key)
            continue;
        size_t j = ix->slots[i].hash & (cap - 1);
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = ix->slots[i];
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return 0;
}

static wf_hslot *index_slot(const wf_index *ix, const char *key, uint64_t h)
{
    if (!ix->cap)
        return NULL;
    size_t j = h & (ix->cap - 1);
    while (ix->slots[j].key) {
        if (ix->slots[j].hash == h && strcmp(ix->slots[j].key, key) == 0)
            return &ix->slots[j];
        j = (j + 1) & (ix->cap - 1);
    }
    return &ix->slots[j];
}

/* Append r to the chain for key; chains keep load order. */
static int index_add(wf_index *ix, const char *key, const wf_resource *r)
{
    if ((ix->used + 1) * 2 > ix->cap && index_grow(ix))
        return -1;
    if (ix->nchain == ix->capchain) {
        size_t cap = ix->capchain ? ix->capchain * 2 : 64;
        const wf_resource **nr = realloc(ix->chain_res, cap * sizeof(*nr));
        if (!nr)
            return -1;
        ix->chain_res = nr;
        size_t *nn = realloc(ix->chain_next, cap * sizeof(*nn));
        if (!nn)
            return -1;
        ix->chain_next = nn;
        ix->capchain = cap;
    }
    size_t c = ix->nchain++;
    ix->chain_res[c] = r;
    ix->chain_next[c] = SIZE_MAX;
    uint64_t h = hash_str(key);
    wf_hslot *slot = index_slot(ix, key, h);
    if (!slot->key) {
        slot->key = key;
        slot->hash = h;
        slot->first = slot->last = c;
        ix->used++;
        return 0;
    }
    ix->chain_next[slot->last] = c;
    slot->last = c;
    return 0;
}

/* "kind\x1fpart[\x1fpart2]" into buf (cap bytes) without printf; a copy in the arena when a is
 * set. NULL when it does not fit (no real name is that long) or on out of memory. */
static const char *make_key(wf_arena *a, char *buf, size_t cap, wf_kind k, const char *p1,
                            const char *p2)
{
    size_t l1 = strlen(p1), l2 = p2 ? strlen(p2) : 0;
    size_t n = 0;
    unsigned kv = (unsigned)k;
    char digits[8];
    size_t nd = 0;
    do {
        digits[nd++] = (char)('0' + kv % 10);
        kv /= 10;
    } while (kv && nd < sizeof(digits));
    if (nd + l1 + l2 + 3 > cap)
        return NULL;
    while (nd)
        buf[n++] = digits[--nd];
    buf[n++] = '\x1f';
    memcpy(buf + n, p1, l1);
    n += l1;
    if (p2) {
        buf[n++] = '\x1f';
        memcpy(buf + n, p2, l2);
        n += l2;
    }
    buf[n] = '\0';
    return a ? wf_arena_strndup(a, buf, n) : buf;
}

const wf_resource *wf_store_find(const wf_store *s, wf_kind k, const char *ns, const char *name)
{
    char buf[512];
    const char *key = make_key(NULL, buf, sizeof(buf), k, ns ? ns : "", name);
    if (!key)
        return NULL; /* key too long to be a real name */
    wf_hslot *slot = index_slot(&s->names, key, hash_str(key));
    if (!slot || !slot->key)
        return NULL;
    size_t c = slot->last;
    return s->names.chain_res[c];
}

const wf_resource *const *wf_store_kind_ns(const wf_store *s, wf_kind k, const char *ns, size_t *n)
{
    char buf[512];
    *n = 0;
    if (!make_key(NULL, buf, sizeof(buf), k, ns ? ns : "", NULL))
        return NULL;
    wf_hslot *slot = index_slot(&s->by_ns, buf, hash_str(buf));
    if (!slot || !slot->key)
        return NULL;
    *n = slot->nflat;
    return slot->flat;
}

const wf_resource *const *wf_store_by_host(const wf_store *s, const char *host, size_t *n)
{
    wf_hslot *slot = index_slot(&s->hosts, host, hash_str(host));
    if (!slot || !slot->key) {
        *n = 0;
        return NULL;
    }
    *n = slot->nflat;
    return slot->flat;
}

/* Give every key its chain as one arena array, so lookups return without copying. */
static int index_flatten(wf_arena *a, wf_index *ix)
{
    for (size_t i = 0; i < ix->cap; i++) {
        wf_hslot *slot = &ix->slots[i];
        if (!slot->key)
            continue;
        size_t n = 0;
        for (size_t c = slot->first; c != SIZE_MAX; c = ix->chain_next[c])
            n++;
        const wf_resource **arr = wf_arena_alloc(a, n * sizeof(*arr));
        if (!arr)
            return -1;
        n = 0;
        for (size_t c = slot->first; c != SIZE_MAX; c = ix->chain_next[c])
            arr[n++] = ix->chain_res[c];
        slot->flat = arr;
        slot->nflat = n;
    }
    return 0;
}

void wf_store_pods_matching(const wf_store *s, const char *ns, const wf_kvs *selector,
                            bool (*cb)(const wf_resource *pod, void *arg), void *arg)
{
    const wf_ptrvec *pods = &s->by_kind[WF_KIND_POD];
    for (size_t i = 0; i < pods->n; i++) {
        const wf_resource *p = pods->v[i];
        if (ns && strcmp(p->ns, ns) != 0)
            continue;
        if (wf_kvs_subset(selector, &p->labels) && !cb(p, arg))
            return;
    }
}

/* ---- finalisation ---- */

/* Only the first nreal pods are real: synthetic ones are appended after them. */
static bool any_pod_matches(const wf_store *s, size_t nreal, const wf_resource *ctl)
{
    const wf_ptrvec *pods = &s->by_kind[WF_KIND_POD];
    const wf_workload *w = ctl->t.workload;
    for (size_t i = 0; i < nreal; i++) {
        const wf_resource *p = pods->v[i];
        if (!p->synthetic && strcmp(p->ns, ctl->ns) == 0 &&
            wf_label_selector_matches(w->selector, &p->labels))
            return true;
    }
    return false;
}

/* A workload controller whose template no Pod matches stands for one Pod built from its
 * template (labels, annotations, spec), named as istioctl names the pod it makes from a
 * Deployment file (pilot/pkg/config/file/store.go generateAnalyzePodFromWorkloadTemplate):
 * the template's metadata.name, else the controller's name. */
static int synthesize_pod(wf_store *s, const wf_resource *ctl)
{
    wf_resource *p = wf_arena_alloc(&s->arena, sizeof(*p));
    wf_pod *pod = wf_arena_alloc(&s->arena, sizeof(*pod));
    if (!p || !pod)
        return -1;
    *p = *ctl;
    p->kind = WF_KIND_POD;
    p->kind_name = "Pod";
    p->api_version = "v1";
    const char *tname = wf_node_str(wf_node_path(ctl->spec, "template.metadata.name"));
    p->name = tname && tname[0] ? tname : ctl->name;
    p->labels = ctl->t.workload->template_labels;
    p->annotations = ctl->t.workload->template_annotations;
    p->metadata = wf_node_path(ctl->spec, "template.metadata");
    p->spec = wf_node_path(ctl->spec, "template.spec");
    p->status = NULL;
    p->synthetic = true;
    p->owner = ctl;
    pod->spec = ctl->t.workload->spec;
    p->t.pod = pod;
    p->index = s->all.n;
    return wf_ptrvec_push(&s->all, p) || wf_ptrvec_push(&s->by_kind[WF_KIND_POD], p) ? -1 : 0;
}

static int index_hosts(wf_store *s, const wf_resource *r)
{
    if (r->kind == WF_KIND_SERVICE) {
        const char *h =
            wf_arena_printf(&s->arena, "%s.%s.svc.%s", r->name, r->ns, s->domain_suffix);
        return h ? index_add(&s->hosts, h, r) : -1;
    }
    if (r->kind == WF_KIND_SERVICEENTRY && r->t.se) {
        for (size_t i = 0; i < r->t.se->hosts.n; i++)
            if (index_add(&s->hosts, r->t.se->hosts.v[i], r))
                return -1;
    }
    return 0;
}

/* Index every resource by kind/namespace/name. */
static int index_names(wf_store *s, size_t from)
{
    char buf[512];
    for (size_t i = from; i < s->all.n; i++) {
        const wf_resource *r = s->all.v[i];
        const char *key = make_key(&s->arena, buf, sizeof(buf), r->kind, r->ns, r->name);
        if (!key || index_add(&s->names, key, r))
            return -1;
    }
    return 0;
}

/* Index every kept resource by kind/namespace (after shadowed ones are dropped). */
static int index_namespaces(wf_store *s)
{
    for (size_t i = 0; i < s->all.n; i++) {
        const wf_resource *r = s->all.v[i];
        char buf[512];
        const char *key = make_key(&s->arena, buf, sizeof(buf), r->kind, r->ns, NULL);
        if (!key || index_add(&s->by_ns, key, r))
            return -1;
    }
    return index_flatten(&s->arena, &s->by_ns);
}

int wf_store_exclude(wf_store *s, wf_kind kind, const char *ns, const char *name)
{
    char buf[512];
    if (s->finalized)
        return -1;
    const char *key = make_key(&s->arena, buf, sizeof(buf), kind, ns, name);
    if (!key)
        return -1;
    if (s->nexcluded == s->capexcluded) {
        size_t cap = s->capexcluded ? s->capexcluded * 2 : 8;
        const char **v = wf_arena_alloc(&s->arena, cap * sizeof(*v));
        if (!v)
            return -1;
        if (s->nexcluded)
            memcpy(v, s->excluded, s->nexcluded * sizeof(*v));
        s->excluded = v;
        s->capexcluded = cap;
    }
    s->excluded[s->nexcluded++] = key;
    return 0;
}

/* Drops the excluded resources from all (before the indices are built). */
static void drop_excluded(wf_store *s)
{
    if (!s->nexcluded)
        return;
    size_t k = 0;
    for (size_t i = 0; i < s->all.n; i++) {
        const wf_resource *r = s->all.v[i];
        char buf[512];
        const char *key = make_key(NULL, buf, sizeof(buf), r->kind, r->ns, r->name);
        bool excluded = false;
        for (size_t e = 0; key && r->kind != WF_KIND_OTHER && e < s->nexcluded && !excluded; e++)
            excluded = strcmp(s->excluded[e], key) == 0;
        if (!excluded)
            s->all.v[k++] = r;
    }
    s->all.n = k;
}

/* A resource loaded twice (same kind, namespace and name) counts once: the last one read
 * wins, as istioctl's file store updates a resource it sees again. */
static int drop_shadowed(wf_store *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->all.n; i++) {
        const wf_resource *r = s->all.v[i];
        if (wf_store_find(s, r->kind, r->ns, r->name) == r || r->kind == WF_KIND_OTHER)
            s->all.v[k++] = r;
        else if (wf_ptrvec_push(&s->shadowed, r))
            return -1;
    }
    s->all.n = k;
    return 0;
}

size_t wf_store_shadowed_count(const wf_store *s)
{
    return s->shadowed.n;
}

const wf_resource *wf_store_shadowed(const wf_store *s, size_t i)
{
    return i < s->shadowed.n ? s->shadowed.v[i] : NULL;
}

int wf_store_finalize(wf_store *s, const char *default_ns, bool synth_pods)
{
    if (s->finalized)
        return 0;
    s->finalized = true;
    for (size_t i = 0; i < s->all.n; i++) {
        wf_resource *r = (wf_resource *)s->all.v[i];
        if (!r->ns[0] && !wf_kind_cluster_scoped(r->kind) && default_ns && default_ns[0]) {
            r->ns = default_ns;
            r->ns_defaulted = true;
        }
    }
    drop_excluded(s);
    if (index_names(s, 0) || drop_shadowed(s))
        return -1;
    for (size_t i = 0; i < s->all.n; i++) {
        wf_resource *r = (wf_resource *)s->all.v[i];
        r->index = i;
        if (wf_ptrvec_push(&s->by_kind[r->kind], r) || index_hosts(s, r))
            return -1;
    }
    size_t nreal = s->all.n;
    if (synth_pods) {
        size_t nreal_pods = s->by_kind[WF_KIND_POD].n;
        for (int k = WF_KIND_DEPLOYMENT; k <= WF_KIND_DAEMONSET; k++) {
            const wf_ptrvec *ctls = &s->by_kind[k];
            for (size_t i = 0; i < ctls->n; i++)
                if (ctls->v[i]->t.workload && !any_pod_matches(s, nreal_pods, ctls->v[i]) &&
                    synthesize_pod(s, ctls->v[i]))
                    return -1;
        }
    }
    if (index_names(s, nreal) || index_namespaces(s))
        return -1;
    return index_flatten(&s->arena, &s->hosts);
}

/* Istio's ignored namespaces (analyzers and istiod skip them). */
static const char *const ignored_namespaces[] = {"kube-system", "kube-public", "kube-node-lease",
                                                 "local-path-storage"};

bool wf_is_system_namespace(const char *ns)
{
    for (size_t i = 0; i < sizeof(ignored_namespaces) / sizeof(ignored_namespaces[0]); i++)
        if (strcmp(ns, ignored_namespaces[i]) == 0)
            return true;
    return false;
}
