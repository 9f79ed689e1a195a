/*
 * stats.c - the stats store: shards, registration (with the stats matcher), writers, readers,
 * counter reset and histogram intervals (see stats.h). Renderings are in stats_render.c, tag
 * extraction in stats_tags.c.
 */
#include "proxy/stats/stats.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/stats/stats_internal.h"

/* ------------------------------------------------------------------ lifetime */

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int ensure_chunk(wp_stats *st, unsigned ci);
static int ensure_code_chunk(wp_stats *st, unsigned ci);

/* Slot 0, scope 0 and histogram 0 are the scratch stats of rejected names. */
static int reserve_scratch(wp_stats *st)
{
    if (ensure_chunk(st, 0) != 0 || ensure_code_chunk(st, 0) != 0)
        return -1;
    meta_chunk *m = atomic_load_explicit(&st->meta[0], memory_order_relaxed);
    m->m[0].kind = KIND_SCRATCH;
    atomic_store_explicit(&st->nslots, 1, memory_order_release);
    code_scope *cs = calloc(1, sizeof *cs);
    if (!cs)
        return -1;
    atomic_store_explicit(&st->scopes[0], cs, memory_order_release);
    for (unsigned s = 0; s < st->nshards; s++) {
        if (!wp_code_stats_alloc(wp_stats_code_local(&st->shards[s], 0)))
            return -1;
    }
    atomic_store_explicit(&st->nscopes, 1, memory_order_release);
    hist_meta_chunk *hm = calloc(1, sizeof *hm);
    if (!hm)
        return -1;
    atomic_store_explicit(&st->hmeta[0], hm, memory_order_release);
    atomic_store_explicit(&st->nhists, 1, memory_order_release);
    return 0;
}

wp_stats *wp_stats_new(unsigned nshards)
{
    if (nshards == 0 || nshards > WP_MAX_SHARDS)
        return NULL;
    wp_stats *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->nshards = nshards;
    wf_arena_init(&st->arena);
    st->shards = calloc(nshards, sizeof *st->shards);
    st->scopes = calloc(WP_MAX_SCOPES, sizeof *st->scopes);
    st->index = wf_strmap_new(&st->arena);
    st->code_index = wf_strmap_new(&st->arena);
    st->hist_index = wf_strmap_new(&st->arena);
    st->flush_interval_ms = 5000;
    st->last_flush_ms = mono_ms();
    bool locks = false;
    if (st->shards && st->scopes && st->index && st->code_index && st->hist_index &&
        pthread_mutex_init(&st->reg_lock, NULL) == 0) {
        locks = pthread_mutex_init(&st->render_lock, NULL) == 0;
        if (!locks)
            pthread_mutex_destroy(&st->reg_lock);
    }
    if (!locks) {
        free(st->shards);
        free(st->scopes);
        wf_arena_destroy(&st->arena);
        free(st);
        return NULL;
    }
    for (unsigned s = 0; s < nshards; s++)
        st->shards[s].store = st;
    if (reserve_scratch(st) != 0) {
        wp_stats_free(st);
        return NULL;
    }
    return st;
}

static void free_shard(wp_stats_shard *sh)
{
    for (unsigned c = 0; c < WP_STATS_MAX_CHUNKS; c++)
        free(atomic_load_explicit(&sh->chunks[c], memory_order_relaxed));
    for (unsigned c = 0; c < WP_CODE_MAX_CHUNKS; c++) {
        wp_code_chunk *cc = atomic_load_explicit(&sh->code_chunks[c], memory_order_relaxed);
        if (!cc)
            continue;
        for (unsigned i = 0; i < WP_CODE_CHUNK_SCOPES; i++)
            free(atomic_load_explicit(&cc->s[i].counts, memory_order_relaxed));
        free(cc);
    }
    for (unsigned c = 0; c < WP_HIST_MAX_CHUNKS; c++)
        free(atomic_load_explicit(&sh->hist_chunks[c], memory_order_relaxed));
}

void wp_stats_free(wp_stats *st)
{
    if (!st)
        return;
    for (unsigned s = 0; s < st->nshards; s++)
        free_shard(&st->shards[s]);
    for (unsigned c = 0; c < WP_STATS_MAX_CHUNKS; c++)
        free(atomic_load_explicit(&st->meta[c], memory_order_relaxed));
    for (unsigned i = 0; i < WP_MAX_SCOPES; i++)
        free(atomic_load_explicit(&st->scopes[i], memory_order_relaxed));
    for (unsigned c = 0; c < WP_HMETA_MAX_CHUNKS; c++)
        free(atomic_load_explicit(&st->hmeta[c], memory_order_relaxed));
    wp_stats_matcher_free(st->matcher);
    free(st->scopes);
    free(st->shards);
    pthread_mutex_destroy(&st->reg_lock);
    pthread_mutex_destroy(&st->render_lock);
    wf_arena_destroy(&st->arena);
    free(st);
}

unsigned wp_stats_nshards(const wp_stats *st)
{
    return st->nshards;
}

wp_stats_shard *wp_stats_get_shard(wp_stats *st, unsigned i)
{
    return st && i < st->nshards ? &st->shards[i] : NULL;
}

void wp_stats_set_matcher(wp_stats *st, wp_stats_matcher *m)
{
    pthread_mutex_lock(&st->reg_lock);
    wp_stats_matcher *old = st->matcher;
    st->matcher = m;
    pthread_mutex_unlock(&st->reg_lock);
    wp_stats_matcher_free(old);
}

/* ------------------------------------------------------------------ registration */

/* Make sure chunk ci exists for the metadata and in every shard. Called under reg_lock. */
static int ensure_chunk(wp_stats *st, unsigned ci)
{
    if (atomic_load_explicit(&st->meta[ci], memory_order_relaxed))
        return 0;
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_stats_shard *sh = &st->shards[s];
        if (atomic_load_explicit(&sh->chunks[ci], memory_order_relaxed))
            continue;
        wp_stats_chunk *c = calloc(1, sizeof *c);
        if (!c)
            return -1; /* chunks made so far stay; they are reused on the next try */
        atomic_store_explicit(&sh->chunks[ci], c, memory_order_release);
    }
    meta_chunk *m = calloc(1, sizeof *m);
    if (!m)
        return -1;
    atomic_store_explicit(&st->meta[ci], m, memory_order_release);
    return 0;
}

static uint32_t register_locked(wp_stats *st, const char *name, uint8_t kind, const char *fam,
                                const char *labels)
{
    void **v = wf_strmap_slot(st->index, name, false);
    if (v && *v) {
        uint32_t slot = (uint32_t)((uintptr_t)*v - 1);
        meta_chunk *m =
            atomic_load_explicit(&st->meta[slot / WP_STATS_CHUNK_SLOTS], memory_order_relaxed);
        return m->m[slot % WP_STATS_CHUNK_SLOTS].kind == kind ? slot : WP_STAT_INVALID;
    }
    if (!wp_stats_matcher_accepts(st->matcher, name))
        return WP_STAT_SCRATCH;
    v = wf_strmap_slot(st->index, name, true);
    if (!v)
        return WP_STAT_INVALID;
    uint32_t slot = atomic_load_explicit(&st->nslots, memory_order_relaxed);
    if (slot >= WP_STATS_CHUNK_SLOTS * WP_STATS_MAX_CHUNKS ||
        ensure_chunk(st, slot / WP_STATS_CHUNK_SLOTS) != 0)
        return WP_STAT_INVALID; /* the key stays with a NULL value: treated as absent */
    meta_chunk *m =
        atomic_load_explicit(&st->meta[slot / WP_STATS_CHUNK_SLOTS], memory_order_relaxed);
    stat_meta *sm = &m->m[slot % WP_STATS_CHUNK_SLOTS];
    sm->name = wf_strmap_key(st->index, wf_strmap_count(st->index) - 1);
    sm->kind = kind;
    sm->prom_family = fam ? wf_arena_strdup(&st->arena, fam) : NULL;
    sm->prom_labels = fam ? wf_arena_strdup(&st->arena, labels ? labels : "") : NULL;
    if (fam && (!sm->prom_family || !sm->prom_labels))
        sm->prom_family = sm->prom_labels = NULL; /* out of memory: rendered as an Envoy stat */
    atomic_store_explicit(&sm->baseline, 0, memory_order_relaxed);
    *v = (void *)(uintptr_t)(slot + 1);
    atomic_store_explicit(&st->nslots, slot + 1, memory_order_release);
    return slot;
}

static uint32_t register_stat(wp_stats *st, const char *name, uint8_t kind, const char *fam,
                              const char *labels)
{
    if (!st || !name || !*name)
        return WP_STAT_INVALID;
    pthread_mutex_lock(&st->reg_lock);
    uint32_t slot = register_locked(st, name, kind, fam, labels);
    pthread_mutex_unlock(&st->reg_lock);
    return slot;
}

uint32_t wp_stats_counter(wp_stats *st, const char *name)
{
    return register_stat(st, name, KIND_COUNTER, NULL, NULL);
}

uint32_t wp_stats_gauge(wp_stats *st, const char *name)
{
    return register_stat(st, name, KIND_GAUGE, NULL, NULL);
}

uint32_t wp_stats_counter_ns(wp_stats *st, const char *name, const char *family, const char *labels)
{
    return register_stat(st, name, KIND_COUNTER, family, labels);
}

uint32_t wp_stats_gauge_ns(wp_stats *st, const char *name, const char *family, const char *labels)
{
    return register_stat(st, name, KIND_GAUGE, family, labels);
}

static int ensure_code_chunk(wp_stats *st, unsigned ci)
{
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_stats_shard *sh = &st->shards[s];
        if (atomic_load_explicit(&sh->code_chunks[ci], memory_order_relaxed))
            continue;
        wp_code_chunk *c = calloc(1, sizeof *c);
        if (!c)
            return -1;
        atomic_store_explicit(&sh->code_chunks[ci], c, memory_order_release);
    }
    return 0;
}

/* Which names of the scope the matcher accepts; false when none. */
static bool scope_names(wp_stats *st, const char *scope, code_scope *cs)
{
    if (wp_stats_matcher_accepts_all(st->matcher)) {
        memset(cs->incl, 0xff, sizeof cs->incl);
        return true;
    }
    wf_strbuf b = WF_STRBUF_INIT;
    bool any = false;
    for (unsigned i = 0; i < WP_CODE_NAMES; i++) {
        wf_strbuf_reset(&b);
        if (i < WP_NCODES)
            wf_strbuf_printf(&b, "%s_%u", scope, i + WP_CODE_MIN);
        else
            wf_strbuf_printf(&b, "%s_%uxx", scope, i - WP_NCODES + 1);
        if (!wf_strbuf_failed(&b) && wp_stats_matcher_accepts(st->matcher, b.data)) {
            cs->incl[i / 64] |= 1ull << (i % 64);
            any = true;
        }
    }
    wf_strbuf_free(&b);
    return any;
}

static uint32_t code_scope_locked(wp_stats *st, const char *scope)
{
    void **v = wf_strmap_slot(st->code_index, scope, false);
    if (v && *v)
        return (uint32_t)((uintptr_t)*v - 1);
    code_scope *cs = calloc(1, sizeof *cs);
    if (!cs)
        return WP_STAT_INVALID;
    if (!scope_names(st, scope, cs)) {
        free(cs);
        return WP_STAT_SCRATCH;
    }
    uint32_t id = atomic_load_explicit(&st->nscopes, memory_order_relaxed);
    v = wf_strmap_slot(st->code_index, scope, true);
    if (!v || id >= WP_MAX_SCOPES || ensure_code_chunk(st, id / WP_CODE_CHUNK_SCOPES) != 0) {
        free(cs);
        return WP_STAT_INVALID;
    }
    cs->scope = wf_strmap_key(st->code_index, wf_strmap_count(st->code_index) - 1);
    atomic_store_explicit(&st->scopes[id], cs, memory_order_release);
    *v = (void *)(uintptr_t)(id + 1);
    atomic_store_explicit(&st->nscopes, id + 1, memory_order_release);
    return id;
}

uint32_t wp_stats_code_scope(wp_stats *st, const char *scope)
{
    if (!st || !scope || !*scope)
        return WP_STAT_INVALID;
    pthread_mutex_lock(&st->reg_lock);
    uint32_t id = code_scope_locked(st, scope);
    pthread_mutex_unlock(&st->reg_lock);
    return id;
}

wp_code_stats *wp_stats_code_local(wp_stats_shard *sh, uint32_t scope_id)
{
    if (!sh || scope_id >= WP_MAX_SCOPES)
        return NULL;
    wp_code_chunk *c = atomic_load_explicit(&sh->code_chunks[scope_id / WP_CODE_CHUNK_SCOPES],
                                            memory_order_acquire);
    return c ? &c->s[scope_id % WP_CODE_CHUNK_SCOPES] : NULL;
}

wp_code_counts *wp_code_stats_alloc(wp_code_stats *cs)
{
    wp_code_counts *c = calloc(1, sizeof *c);
    if (c)
        atomic_store_explicit(&cs->counts, c, memory_order_release);
    return c;
}

/* ------------------------------------------------------------------ reading */

stat_meta *wp_stats_meta_of(wp_stats *st, uint32_t slot)
{
    if (slot == WP_STAT_SCRATCH || slot >= atomic_load_explicit(&st->nslots, memory_order_acquire))
        return NULL;
    meta_chunk *m =
        atomic_load_explicit(&st->meta[slot / WP_STATS_CHUNK_SLOTS], memory_order_acquire);
    return &m->m[slot % WP_STATS_CHUNK_SLOTS];
}

static int64_t raw_sum(wp_stats *st, uint32_t slot, bool *used)
{
    int64_t sum = 0;
    bool u = false;
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_stats_chunk *c = atomic_load_explicit(&st->shards[s].chunks[slot / WP_STATS_CHUNK_SLOTS],
                                                 memory_order_acquire);
        if (!c)
            continue;
        sum += atomic_load_explicit(&c->v[slot % WP_STATS_CHUNK_SLOTS], memory_order_relaxed);
        u |= atomic_load_explicit(&c->used[slot % WP_STATS_CHUNK_SLOTS], memory_order_relaxed);
    }
    if (used)
        *used = u;
    return sum;
}

int64_t wp_stats_value_of(wp_stats *st, uint32_t slot, stat_meta *sm, bool *used)
{
    int64_t v = raw_sum(st, slot, used);
    if (sm->kind == KIND_COUNTER)
        v -= atomic_load_explicit(&sm->baseline, memory_order_relaxed);
    return v;
}

int64_t wp_stats_value(wp_stats *st, uint32_t slot)
{
    stat_meta *sm = wp_stats_meta_of(st, slot);
    return sm ? wp_stats_value_of(st, slot, sm, NULL) : 0;
}

bool wp_stats_used(wp_stats *st, uint32_t slot)
{
    bool used = false;
    if (wp_stats_meta_of(st, slot))
        raw_sum(st, slot, &used);
    return used;
}

void wp_stats_code_sums(wp_stats *st, uint32_t id, int64_t sums[WP_NCODES])
{
    memset(sums, 0, sizeof(int64_t) * WP_NCODES);
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_code_stats *cs = wp_stats_code_local(&st->shards[s], id);
        wp_code_counts *c = cs ? atomic_load_explicit(&cs->counts, memory_order_acquire) : NULL;
        if (!c)
            continue;
        for (unsigned i = 0; i < WP_NCODES; i++)
            sums[i] += atomic_load_explicit(&c->n[i], memory_order_relaxed);
    }
}

code_scope *wp_stats_scope_of(wp_stats *st, uint32_t id)
{
    if (id == WP_STAT_SCRATCH || id >= atomic_load_explicit(&st->nscopes, memory_order_acquire))
        return NULL;
    return atomic_load_explicit(&st->scopes[id], memory_order_acquire);
}

int64_t wp_stats_code_value(wp_stats *st, uint32_t scope_id, unsigned code)
{
    code_scope *cs = wp_stats_scope_of(st, scope_id);
    if (!cs)
        return 0;
    int64_t sums[WP_NCODES];
    wp_stats_code_sums(st, scope_id, sums);
    int64_t v = 0;
    for (unsigned i = 0; i < WP_NCODES; i++) {
        unsigned c = i + WP_CODE_MIN;
        if (c == code || c / 100 == code)
            v += sums[i] - atomic_load_explicit(&cs->baseline[i], memory_order_relaxed);
    }
    return v;
}

void wp_stats_reset_counters(wp_stats *st)
{
    uint32_t n = atomic_load_explicit(&st->nslots, memory_order_acquire);
    for (uint32_t slot = 1; slot < n; slot++) {
        stat_meta *sm = wp_stats_meta_of(st, slot);
        if (sm && sm->kind == KIND_COUNTER)
            atomic_store_explicit(&sm->baseline, raw_sum(st, slot, NULL), memory_order_relaxed);
    }
    uint32_t ns = atomic_load_explicit(&st->nscopes, memory_order_acquire);
    int64_t sums[WP_NCODES];
    for (uint32_t id = 1; id < ns; id++) {
        code_scope *cs = wp_stats_scope_of(st, id);
        if (!cs)
            continue;
        wp_stats_code_sums(st, id, sums);
        for (unsigned i = 0; i < WP_NCODES; i++)
            atomic_store_explicit(&cs->baseline[i], sums[i], memory_order_relaxed);
    }
}

/* ------------------------------------------------------------------ histograms: registration */

static int ensure_hist_words(wp_stats *st, unsigned ci)
{
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_stats_shard *sh = &st->shards[s];
        if (atomic_load_explicit(&sh->hist_chunks[ci], memory_order_relaxed))
            continue;
        wp_hist_chunk *c = calloc(1, sizeof *c);
        if (!c)
            return -1;
        atomic_store_explicit(&sh->hist_chunks[ci], c, memory_order_release);
    }
    return 0;
}

/* Reserve `words` consecutive words in every shard; sets m->chunk and m->off. */
static int alloc_hist_words(wp_stats *st, uint32_t words, hist_meta *m)
{
    if (st->hw_used + words > WP_HIST_CHUNK_WORDS) {
        st->hw_chunk++;
        st->hw_used = 0;
    }
    if (st->hw_chunk >= WP_HIST_MAX_CHUNKS || ensure_hist_words(st, st->hw_chunk) != 0)
        return -1;
    m->chunk = st->hw_chunk;
    m->off = st->hw_used;
    st->hw_used += words;
    return 0;
}

static int fill_hist_meta(wp_stats *st, const char *name, hist_meta *m)
{
    uint32_t nb;
    const double *b = wp_stats_matcher_buckets(st->matcher, name, &nb);
    double *bounds = wf_arena_alloc(&st->arena, nb * sizeof *bounds);
    m->at_flush = wf_arena_alloc(&st->arena, (nb + 3) * sizeof *m->at_flush);
    m->interval = wf_arena_alloc(&st->arena, (nb + 3) * sizeof *m->interval);
    if (!bounds || !m->at_flush || !m->interval)
        return -1;
    memcpy(bounds, b, nb * sizeof *bounds);
    m->bounds = bounds;
    m->nb = nb;
    return alloc_hist_words(st, HW_BUCKETS + nb + 1, m);
}

static uint32_t histogram_locked(wp_stats *st, const char *name, const char *fam,
                                 const char *labels)
{
    void **v = wf_strmap_slot(st->hist_index, name, false);
    if (v && *v)
        return (uint32_t)((uintptr_t)*v - 1);
    if (!wp_stats_matcher_accepts(st->matcher, name))
        return WP_STAT_SCRATCH;
    uint32_t id = atomic_load_explicit(&st->nhists, memory_order_relaxed);
    if (id >= WP_MAX_HISTS)
        return WP_STAT_INVALID;
    unsigned ci = id / WP_HMETA_CHUNK;
    hist_meta_chunk *mc = atomic_load_explicit(&st->hmeta[ci], memory_order_relaxed);
    if (!mc) {
        if (!(mc = calloc(1, sizeof *mc)))
            return WP_STAT_INVALID;
        atomic_store_explicit(&st->hmeta[ci], mc, memory_order_release);
    }
    hist_meta *m = &mc->m[id % WP_HMETA_CHUNK];
    v = wf_strmap_slot(st->hist_index, name, true);
    if (!v || fill_hist_meta(st, name, m) != 0)
        return WP_STAT_INVALID;
    m->name = wf_strmap_key(st->hist_index, wf_strmap_count(st->hist_index) - 1);
    m->prom_family = fam ? wf_arena_strdup(&st->arena, fam) : NULL;
    m->prom_labels = fam ? wf_arena_strdup(&st->arena, labels ? labels : "") : NULL;
    if (fam && (!m->prom_family || !m->prom_labels))
        m->prom_family = m->prom_labels = NULL; /* out of memory: rendered as an Envoy stat */
    *v = (void *)(uintptr_t)(id + 1);
    atomic_store_explicit(&st->nhists, id + 1, memory_order_release);
    return id;
}

uint32_t wp_stats_histogram_ns(wp_stats *st, const char *name, const char *family,
                               const char *labels)
{
    if (!st || !name || !*name)
        return WP_STAT_INVALID;
    pthread_mutex_lock(&st->reg_lock);
    uint32_t id = histogram_locked(st, name, family, labels);
    pthread_mutex_unlock(&st->reg_lock);
    return id;
}

uint32_t wp_stats_histogram(wp_stats *st, const char *name)
{
    return wp_stats_histogram_ns(st, name, NULL, NULL);
}

/* ------------------------------------------------------------------ histograms: recording */

static inline void bump(_Atomic uint64_t *w, uint64_t d)
{
    atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

void wp_hist_record(wp_stats_shard *sh, uint32_t id, uint64_t value)
{
    if (!sh || id == WP_STAT_SCRATCH || id >= WP_MAX_HISTS)
        return;
    hist_meta_chunk *mc =
        atomic_load_explicit(&sh->store->hmeta[id / WP_HMETA_CHUNK], memory_order_acquire);
    if (!mc)
        return;
    const hist_meta *m = &mc->m[id % WP_HMETA_CHUNK];
    wp_hist_chunk *c = atomic_load_explicit(&sh->hist_chunks[m->chunk], memory_order_acquire);
    if (!c || !m->bounds)
        return;
    _Atomic uint64_t *w = c->w + m->off;
    uint64_t v1 = value < UINT64_MAX ? value + 1 : value;
    bump(&w[HW_BUCKETS + wp_hist_bucket_index(m->bounds, m->nb, value)], 1);
    bump(&w[HW_SUM], value);
    uint64_t mn = atomic_load_explicit(&w[HW_MIN], memory_order_relaxed);
    if (mn == 0 || v1 < mn)
        atomic_store_explicit(&w[HW_MIN], v1, memory_order_relaxed);
    if (v1 > atomic_load_explicit(&w[HW_MAX], memory_order_relaxed))
        atomic_store_explicit(&w[HW_MAX], v1, memory_order_relaxed);
    bump(&w[HW_COUNT], 1);
}

/* ------------------------------------------------------------------ histograms: reading */

hist_meta *wp_stats_hist_meta(wp_stats *st, uint32_t id)
{
    if (id == WP_STAT_SCRATCH || id >= atomic_load_explicit(&st->nhists, memory_order_acquire))
        return NULL;
    hist_meta_chunk *mc =
        atomic_load_explicit(&st->hmeta[id / WP_HMETA_CHUNK], memory_order_acquire);
    return mc ? &mc->m[id % WP_HMETA_CHUNK] : NULL;
}

void wp_stats_hist_sums(wp_stats *st, const hist_meta *m, uint64_t *out, uint64_t *min1,
                        uint64_t *max1)
{
    memset(out, 0, (m->nb + 3) * sizeof *out);
    *min1 = *max1 = 0;
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_hist_chunk *c =
            atomic_load_explicit(&st->shards[s].hist_chunks[m->chunk], memory_order_acquire);
        if (!c)
            continue;
        const _Atomic uint64_t *w = c->w + m->off;
        for (uint32_t b = 0; b <= m->nb; b++)
            out[b] += atomic_load_explicit(&w[HW_BUCKETS + b], memory_order_relaxed);
        out[m->nb + 1] += atomic_load_explicit(&w[HW_COUNT], memory_order_relaxed);
        out[m->nb + 2] += atomic_load_explicit(&w[HW_SUM], memory_order_relaxed);
        uint64_t mn = atomic_load_explicit(&w[HW_MIN], memory_order_relaxed);
        uint64_t mx = atomic_load_explicit(&w[HW_MAX], memory_order_relaxed);
        if (mn && (*min1 == 0 || mn < *min1))
            *min1 = mn;
        if (mx > *max1)
            *max1 = mx;
    }
}

static uint64_t hist_word(wp_stats *st, uint32_t id, unsigned which)
{
    hist_meta *m = wp_stats_hist_meta(st, id);
    if (!m)
        return 0;
    uint64_t sums[WP_HIST_MAX_BOUNDS + 3], mn, mx;
    wp_stats_hist_sums(st, m, sums, &mn, &mx);
    return sums[m->nb + which];
}

uint64_t wp_stats_hist_count(wp_stats *st, uint32_t id)
{
    return hist_word(st, id, 1);
}

uint64_t wp_stats_hist_sum(wp_stats *st, uint32_t id)
{
    return hist_word(st, id, 2);
}

static void flush_locked(wp_stats *st)
{
    uint32_t n = atomic_load_explicit(&st->nhists, memory_order_acquire);
    uint64_t cur[WP_HIST_MAX_BOUNDS + 3], mn, mx;
    for (uint32_t id = 1; id < n; id++) {
        hist_meta *m = wp_stats_hist_meta(st, id);
        if (!m || !m->bounds)
            continue;
        wp_stats_hist_sums(st, m, cur, &mn, &mx);
        for (uint32_t k = 0; k < m->nb + 3; k++) {
            m->interval[k] = cur[k] - m->at_flush[k];
            m->at_flush[k] = cur[k];
        }
    }
    st->last_flush_ms = mono_ms();
}

void wp_stats_maybe_flush_locked(wp_stats *st)
{
    if (mono_ms() - st->last_flush_ms >= st->flush_interval_ms)
        flush_locked(st);
}

void wp_stats_flush_histograms(wp_stats *st)
{
    pthread_mutex_lock(&st->render_lock);
    flush_locked(st);
    pthread_mutex_unlock(&st->render_lock);
}

void wp_stats_set_flush_interval(wp_stats *st, uint64_t ms)
{
    pthread_mutex_lock(&st->render_lock);
    st->flush_interval_ms = ms;
    pthread_mutex_unlock(&st->render_lock);
}
