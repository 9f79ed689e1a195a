/*
 * stats.c - the stats store, status-code stats, tag extraction and renderings (see stats.h).
 */
#include "proxy/stats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/strmap.h"

#define WP_MAX_SHARDS        256u
#define WP_NCODES            (WP_CODE_MAX - WP_CODE_MIN + 1)
#define WP_MAX_SCOPES        (WP_CODE_CHUNK_SCOPES * WP_CODE_MAX_CHUNKS)
#define WP_REGEX_MATCH_LIMIT 100000u

enum { KIND_COUNTER = 0, KIND_GAUGE = 1 };

typedef struct {
    const char *name; /* in the store's arena */
    uint8_t kind;
    _Atomic int64_t baseline; /* reader side: raw sum at the last reset (counters) */
} stat_meta;

typedef struct {
    stat_meta m[WP_STATS_CHUNK_SLOTS];
} meta_chunk;

typedef struct {
    const char *scope;
    _Atomic int64_t baseline[WP_NCODES];
} code_scope;

struct wp_stats {
    unsigned nshards;
    wp_stats_shard *shards;
    pthread_mutex_t reg_lock; /* registration only */
    wf_arena arena;           /* names; touched under reg_lock only */
    wf_strmap *index;         /* name -> slot + 1 */
    wf_strmap *code_index;    /* scope -> id + 1 */
    _Atomic uint32_t nslots;  /* published last (release) */
    _Atomic(meta_chunk *) meta[WP_STATS_MAX_CHUNKS];
    _Atomic uint32_t nscopes;
    _Atomic(code_scope *) *scopes; /* WP_MAX_SCOPES entries */
};

/* ------------------------------------------------------------------ lifetime */

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
    if (!st->shards || !st->scopes || !st->index || !st->code_index ||
        pthread_mutex_init(&st->reg_lock, NULL) != 0) {
        free(st->shards);
        free(st->scopes);
        wf_arena_destroy(&st->arena);
        free(st);
        return NULL;
    }
    return st;
}

void wp_stats_free(wp_stats *st)
{
    if (!st)
        return;
    for (unsigned s = 0; s < st->nshards; s++) {
        wp_stats_shard *sh = &st->shards[s];
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
    }
    for (unsigned c = 0; c < WP_STATS_MAX_CHUNKS; c++)
        free(atomic_load_explicit(&st->meta[c], memory_order_relaxed));
    for (unsigned i = 0; i < WP_MAX_SCOPES; i++)
        free(atomic_load_explicit(&st->scopes[i], memory_order_relaxed));
    free(st->scopes);
    free(st->shards);
    pthread_mutex_destroy(&st->reg_lock);
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

static uint32_t register_locked(wp_stats *st, const char *name, uint8_t kind)
{
    void **v = wf_strmap_slot(st->index, name, true);
    if (!v)
        return WP_STAT_INVALID;
    if (*v) {
        uint32_t slot = (uint32_t)((uintptr_t)*v - 1);
        meta_chunk *m =
            atomic_load_explicit(&st->meta[slot / WP_STATS_CHUNK_SLOTS], memory_order_relaxed);
        return m->m[slot % WP_STATS_CHUNK_SLOTS].kind == kind ? slot : WP_STAT_INVALID;
    }
    uint32_t slot = atomic_load_explicit(&st->nslots, memory_order_relaxed);
    if (slot >= WP_STATS_CHUNK_SLOTS * WP_STATS_MAX_CHUNKS ||
        ensure_chunk(st, slot / WP_STATS_CHUNK_SLOTS) != 0)
        return WP_STAT_INVALID; /* the key stays with a NULL value: treated as absent */
    meta_chunk *m =
        atomic_load_explicit(&st->meta[slot / WP_STATS_CHUNK_SLOTS], memory_order_relaxed);
    stat_meta *sm = &m->m[slot % WP_STATS_CHUNK_SLOTS];
    sm->name = wf_strmap_key(st->index, wf_strmap_count(st->index) - 1);
    sm->kind = kind;
    atomic_store_explicit(&sm->baseline, 0, memory_order_relaxed);
    *v = (void *)(uintptr_t)(slot + 1);
    atomic_store_explicit(&st->nslots, slot + 1, memory_order_release);
    return slot;
}

static uint32_t register_stat(wp_stats *st, const char *name, uint8_t kind)
{
    if (!st || !name || !*name)
        return WP_STAT_INVALID;
    pthread_mutex_lock(&st->reg_lock);
    uint32_t slot = register_locked(st, name, kind);
    pthread_mutex_unlock(&st->reg_lock);
    return slot;
}

uint32_t wp_stats_counter(wp_stats *st, const char *name)
{
    return register_stat(st, name, KIND_COUNTER);
}

uint32_t wp_stats_gauge(wp_stats *st, const char *name)
{
    return register_stat(st, name, KIND_GAUGE);
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

static uint32_t code_scope_locked(wp_stats *st, const char *scope)
{
    void **v = wf_strmap_slot(st->code_index, scope, true);
    if (!v)
        return WP_STAT_INVALID;
    if (*v)
        return (uint32_t)((uintptr_t)*v - 1);
    uint32_t id = atomic_load_explicit(&st->nscopes, memory_order_relaxed);
    if (id >= WP_MAX_SCOPES || ensure_code_chunk(st, id / WP_CODE_CHUNK_SCOPES) != 0)
        return WP_STAT_INVALID;
    code_scope *cs = calloc(1, sizeof *cs);
    if (!cs)
        return WP_STAT_INVALID;
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

static stat_meta *meta_of(wp_stats *st, uint32_t slot)
{
    if (slot >= atomic_load_explicit(&st->nslots, memory_order_acquire))
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

static int64_t value_of(wp_stats *st, uint32_t slot, stat_meta *sm, bool *used)
{
    int64_t v = raw_sum(st, slot, used);
    if (sm->kind == KIND_COUNTER)
        v -= atomic_load_explicit(&sm->baseline, memory_order_relaxed);
    return v;
}

int64_t wp_stats_value(wp_stats *st, uint32_t slot)
{
    stat_meta *sm = meta_of(st, slot);
    return sm ? value_of(st, slot, sm, NULL) : 0;
}

bool wp_stats_used(wp_stats *st, uint32_t slot)
{
    bool used = false;
    if (meta_of(st, slot))
        raw_sum(st, slot, &used);
    return used;
}

/* Raw per-code sums of a scope over all shards. */
static void code_sums(wp_stats *st, uint32_t id, int64_t sums[WP_NCODES])
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

static code_scope *scope_of(wp_stats *st, uint32_t id)
{
    if (id >= atomic_load_explicit(&st->nscopes, memory_order_acquire))
        return NULL;
    return atomic_load_explicit(&st->scopes[id], memory_order_acquire);
}

int64_t wp_stats_code_value(wp_stats *st, uint32_t scope_id, unsigned code)
{
    code_scope *cs = scope_of(st, scope_id);
    if (!cs)
        return 0;
    int64_t sums[WP_NCODES];
    code_sums(st, scope_id, sums);
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
    for (uint32_t slot = 0; slot < n; slot++) {
        stat_meta *sm = meta_of(st, slot);
        if (sm->kind == KIND_COUNTER)
            atomic_store_explicit(&sm->baseline, raw_sum(st, slot, NULL), memory_order_relaxed);
    }
    uint32_t ns = atomic_load_explicit(&st->nscopes, memory_order_acquire);
    int64_t sums[WP_NCODES];
    for (uint32_t id = 0; id < ns; id++) {
        code_scope *cs = scope_of(st, id);
        code_sums(st, id, sums);
        for (unsigned i = 0; i < WP_NCODES; i++)
            atomic_store_explicit(&cs->baseline[i], sums[i], memory_order_relaxed);
    }
}

/* ------------------------------------------------------------------ collecting for rendering */

typedef struct {
    const char *name;
    int64_t value;
    bool gauge;
    const char *family; /* Prometheus only */
    const char *labels; /* Prometheus only */
} entry;

typedef struct {
    entry *v;
    size_t n, cap;
    bool failed;
    wf_arena arena; /* generated names and labels */
    pcre2_match_data *md;
    pcre2_match_context *mctx;
} entry_list;

static void list_push(entry_list *l, const char *name, int64_t value, bool gauge)
{
    if (!name) {
        l->failed = true;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        entry *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (entry){name, value, gauge, NULL, NULL};
}

static bool filter_passes(entry_list *l, const pcre2_code *filter, const char *name)
{
    if (!filter)
        return true;
    if (!l->md)
        l->md = pcre2_match_data_create_from_pattern(filter, NULL);
    if (!l->md)
        return false;
    return pcre2_match(filter, (PCRE2_SPTR)name, strlen(name), 0, 0, l->md, l->mctx) >= 0;
}

static void collect_codes(wp_stats *st, uint32_t id, const pcre2_code *filter, entry_list *l)
{
    code_scope *cs = scope_of(st, id);
    int64_t sums[WP_NCODES], cls[6] = {0};
    bool seen[6] = {false};
    code_sums(st, id, sums);
    for (unsigned i = 0; i < WP_NCODES; i++) {
        if (sums[i] <= 0)
            continue;
        unsigned code = i + WP_CODE_MIN;
        int64_t v = sums[i] - atomic_load_explicit(&cs->baseline[i], memory_order_relaxed);
        seen[code / 100] = true;
        cls[code / 100] += v;
        char *name = wf_arena_printf(&l->arena, "%s_%u", cs->scope, code);
        if (!name || filter_passes(l, filter, name))
            list_push(l, name, v, false);
    }
    for (unsigned k = 1; k <= 5; k++) {
        if (!seen[k])
            continue;
        char *name = wf_arena_printf(&l->arena, "%s_%uxx", cs->scope, k);
        if (!name || filter_passes(l, filter, name))
            list_push(l, name, cls[k], false);
    }
}

static void collect(wp_stats *st, const pcre2_code *filter, bool usedonly, entry_list *l)
{
    memset(l, 0, sizeof *l);
    wf_arena_init(&l->arena);
    l->mctx = pcre2_match_context_create(NULL);
    if (!l->mctx) {
        l->failed = true;
        return;
    }
    pcre2_set_match_limit(l->mctx, WP_REGEX_MATCH_LIMIT);
    uint32_t n = atomic_load_explicit(&st->nslots, memory_order_acquire);
    for (uint32_t slot = 0; slot < n; slot++) {
        stat_meta *sm = meta_of(st, slot);
        bool used;
        int64_t v = value_of(st, slot, sm, &used);
        if ((usedonly && !used) || !filter_passes(l, filter, sm->name))
            continue;
        list_push(l, sm->name, v, sm->kind == KIND_GAUGE);
    }
    uint32_t ns = atomic_load_explicit(&st->nscopes, memory_order_acquire);
    for (uint32_t id = 0; id < ns; id++)
        collect_codes(st, id, filter, l);
}

static void list_free(entry_list *l)
{
    free(l->v);
    pcre2_match_data_free(l->md);
    pcre2_match_context_free(l->mctx);
    wf_arena_destroy(&l->arena);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

void wp_stats_render_text(wp_stats *st, const pcre2_code *filter, bool usedonly, wf_strbuf *out)
{
    entry_list l;
    collect(st, filter, usedonly, &l);
    if (l.failed)
        out->failed = true;
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, by_name);
    for (size_t i = 0; i < l.n; i++)
        wf_strbuf_printf(out, "%s: %" PRId64 "\n", l.v[i].name, l.v[i].value);
    list_free(&l);
}

static void put_json_string(wf_strbuf *out, const char *s)
{
    wf_strbuf_putc(out, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            wf_strbuf_putc(out, '\\');
            wf_strbuf_putc(out, (char)c);
        } else if (c < 0x20) {
            wf_strbuf_printf(out, "\\u%04x", c);
        } else {
            wf_strbuf_putc(out, (char)c);
        }
    }
    wf_strbuf_putc(out, '"');
}

void wp_stats_render_json(wp_stats *st, const pcre2_code *filter, bool usedonly, wf_strbuf *out)
{
    entry_list l;
    collect(st, filter, usedonly, &l);
    if (l.failed)
        out->failed = true;
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, by_name);
    wf_strbuf_puts(out, "{\"stats\":[");
    for (size_t i = 0; i < l.n; i++) {
        wf_strbuf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        put_json_string(out, l.v[i].name);
        wf_strbuf_printf(out, ",\"value\":%" PRId64 "}", l.v[i].value);
    }
    wf_strbuf_puts(out, "]}");
    list_free(&l);
}

/* ------------------------------------------------------------------ tag extraction */

/* Envoy's default tag extractors (source/common/config/well_known_names.cc, revision with
 * addTokenized): the regex extractors first, then the tokenized ones, each in Envoy's order
 * (Envoy's addDefaultExtractors adds them in that order [verify]). Tokenized patterns
 * ("cluster.$.**") are written here as the equivalent regexes: '*' is one dot-free token, '$'
 * the tag value, removed with its following dot. Left out (weft has no such stats, tag names
 * not verified): ssl curves/sigalgs/versions, listener_local_ratelimit, dns_filter. */
#define ADDR_RE "(?:(?:\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}|\\[[a-fA-F_\\d]+\\])_\\d+)"

typedef struct {
    const char *name;
    const char *regex;
    const char *substr;
    const char *negative;
} default_tag;

static const default_tag default_tags[] = {
    {"envoy.response_code", "_rq(_(\\d{3}))$", "_rq_", NULL},
    {"envoy.response_code_class", "_rq_((\\d))xx$", "_rq_", NULL},
    {"envoy.dynamo_partition_id",
     "^http\\.[^.]+\\.dynamodb\\.table\\.[^.]+\\.capacity\\.[^.]+(\\.__partition_id=(\\w{7}))$",
     ".dynamodb.table.", NULL},
    {"envoy.dynamo_operation",
     "^http\\.[^.]+\\.dynamodb.(?:operation|table\\.[^.]+\\.capacity)(\\.([^.]+))(?:\\.|$)",
     ".dynamodb.", NULL},
    {"envoy.dynamo_table", "^http\\.[^.]+\\.dynamodb.(?:table|error)\\.(([^.]+)\\.)", ".dynamodb.",
     NULL},
    {"envoy.ssl_cipher", "^listener\\..*?\\.ssl\\.ciphers(\\.([\\w-]+))$", ".ssl.ciphers.", NULL},
    {"cipher_suite", "^cluster\\.[^.]+\\.ssl\\.ciphers(\\.([\\w-]+))$", ".ssl.ciphers.", NULL},
    {"envoy.http_conn_manager_prefix", "^listener\\..*?\\.http\\.(([^.]+)\\.)", ".http.", NULL},
    {"envoy.worker_id",
     "^(?:listener\\.(?:" ADDR_RE "|[^.]+)\\.|server\\.|listener_manager\\.)worker_((\\d+)\\.)",
     NULL, NULL},
    {"envoy.listener_address", "^listener\\.((" ADDR_RE "|[^.]+)\\.)", NULL, "admin"},
    {"envoy.rds_route_config", "^http\\.[^.]+\\.rds\\.(([\\w.-]+)\\.)\\w+?$", ".rds.", NULL},
    /* tokenized */
    {"envoy.mongo_callsite",
     "^mongo\\.[^.]+\\.collection\\.[^.]+\\.callsite\\.(([^.]+)\\.)query(?:\\.|$)", NULL, NULL},
    {"envoy.mongo_collection",
     "^mongo\\.[^.]+\\.collection\\.(([^.]+)\\.)(?:[^.]+\\.)*query\\.[^.]+$", NULL, NULL},
    {"envoy.mongo_cmd", "^mongo\\.[^.]+\\.cmd\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.grpc_bridge_method", "^cluster\\.[^.]+\\.grpc\\.[^.]+\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.http_user_agent", "^http\\.[^.]+\\.user_agent\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.virtual_cluster", "^vhost\\.[^.]+\\.vcluster\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.fault_downstream_cluster", "^http\\.[^.]+\\.fault\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.grpc_bridge_service", "^cluster\\.[^.]+\\.grpc\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.tcp_prefix", "^tcp\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.udp_prefix", "^udp\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.clientssl_prefix", "^auth\\.clientssl\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.ratelimit_prefix", "^ratelimit\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.cluster_name", "^cluster\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.ext_authz_prefix", "^cluster\\.[^.]+\\.ext_authz\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.ext_authz_prefix", "^http\\.[^.]+\\.ext_authz\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.http_conn_manager_prefix", "^http\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.virtual_host", "^vhost\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.mongo_prefix", "^mongo\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.route", "^vhost\\.[^.]+\\.route\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.thrift_prefix", "^thrift\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.redis_prefix", "^redis\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.local_http_ratelimit_prefix", "^(([^.]+)\\.)http_local_rate_limit(?:\\.|$)", NULL,
     NULL},
    {"envoy.local_network_ratelimit_prefix", "^local_rate_limit\\.(([^.]+)\\.)", NULL, NULL},
};
#define N_DEFAULT_TAGS (sizeof default_tags / sizeof default_tags[0])

typedef struct {
    const char *name;
    pcre2_code *re;
    const char *substr;   /* NULL: none */
    const char *negative; /* NULL: none */
    const char *prefix;   /* first token the name must have; "" for any */
    uint32_t ncaps;
} extractor;

typedef struct {
    const char *name;
    const char *value;
} fixed_tag;

struct wp_stats_tags {
    wf_arena arena;
    extractor *ex;
    size_t nex, excap;
    fixed_tag *fixed;
    size_t nfixed;
    uint32_t max_caps;
    pcre2_match_context *mctx;
};

/* Envoy's TagExtractorImplBase::extractRegexPrefix: "^word\." or "^word(?=\.)" gives "word". */
static const char *regex_prefix(wf_arena *a, const char *re)
{
    if (re[0] != '^')
        return "";
    size_t i = 1;
    while ((re[i] >= 'a' && re[i] <= 'z') || (re[i] >= 'A' && re[i] <= 'Z') ||
           (re[i] >= '0' && re[i] <= '9') || re[i] == '_')
        i++;
    if (i == 1 || !re[i])
        return "";
    if (re[i + 1] == '\0' || strncmp(re + i, "\\.", 2) == 0 || strncmp(re + i, "(?=\\.)", 6) == 0)
        return wf_arena_strndup(a, re + 1, i - 1);
    return "";
}

static int add_extractor(wp_stats_tags *t, const char *name, const char *regex, const char *substr,
                         const char *negative, wf_strbuf *err)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        if (err)
            wf_strbuf_printf(err, "tag '%s': invalid regex '%s': %s at offset %zu", name, regex,
                             (const char *)msg, (size_t)eo);
        return -1;
    }
    uint32_t ncaps = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &ncaps);
    if (ncaps == 0 || t->nex == t->excap) {
        if (err && ncaps == 0)
            wf_strbuf_printf(err, "tag '%s': regex '%s' has no capture group", name, regex);
        pcre2_code_free(re);
        return -1;
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional speed-up */
    const char *prefix = regex_prefix(&t->arena, regex);
    extractor *e = &t->ex[t->nex++];
    *e = (extractor){name, re, substr, negative, prefix ? prefix : "", ncaps};
    if (ncaps > t->max_caps)
        t->max_caps = ncaps;
    return 0;
}

static int add_defaults_named(wp_stats_tags *t, const char *only, wf_strbuf *err)
{
    int added = 0;
    for (size_t i = 0; i < N_DEFAULT_TAGS; i++) {
        const default_tag *d = &default_tags[i];
        if (only && strcmp(only, d->name) != 0)
            continue;
        if (add_extractor(t, d->name, d->regex, d->substr, d->negative, err) != 0)
            return -1;
        added++;
    }
    return added;
}

static int add_spec(wp_stats_tags *t, wf_strmap *names, const json_t *spec, size_t i,
                    wf_strbuf *err)
{
    const char *name = json_string_value(json_object_get(spec, "tag_name"));
    const json_t *jre = json_object_get(spec, "regex");
    const json_t *jfixed = json_object_get(spec, "fixed_value");
    if (!json_is_object(spec) || !name || !*name || (jre && !json_is_string(jre)) ||
        (jfixed && !json_is_string(jfixed)) || (jre && jfixed)) {
        if (err)
            wf_strbuf_printf(err,
                             "stats_tags[%zu]: needs a tag_name and at most one of regex, "
                             "fixed_value (strings)",
                             i);
        return -1;
    }
    void **seen = wf_strmap_slot(names, name, true);
    if (!seen || *seen) {
        if (err && seen)
            wf_strbuf_printf(err, "Tag name '%s' specified twice.", name);
        return -1;
    }
    *seen = (void *)1;
    const char *n = wf_arena_strdup(&t->arena, name);
    if (!n)
        return -1;
    if (jfixed) {
        const char *v = wf_arena_strdup(&t->arena, json_string_value(jfixed));
        if (!v)
            return -1;
        t->fixed[t->nfixed++] = (fixed_tag){n, v};
        return 0;
    }
    if (jre)
        return add_extractor(t, n, json_string_value(jre), NULL, NULL, err);
    int added = add_defaults_named(t, n, err);
    if (added == 0 && err)
        wf_strbuf_printf(err,
                         "No regex specified for tag specifier and no default regex for name: "
                         "'%s'",
                         name);
    return added > 0 ? 0 : -1;
}

static int read_config(const json_t *cfg, bool *use_defaults, const json_t **specs, wf_strbuf *err)
{
    *use_defaults = true;
    *specs = NULL;
    if (!cfg)
        return 0;
    const json_t *u = json_object_get(cfg, "use_all_default_tags");
    if (json_is_object(u)) /* BoolValue wrapper spelled as an object */
        u = json_object_get(u, "value");
    *specs = json_object_get(cfg, "stats_tags");
    if (!json_is_object(cfg) || (u && !json_is_boolean(u)) || (*specs && !json_is_array(*specs))) {
        if (err)
            wf_strbuf_puts(err, "stats_config: use_all_default_tags must be a bool and "
                                "stats_tags a list");
        return -1;
    }
    if (u)
        *use_defaults = json_is_true(u);
    return 0;
}

wp_stats_tags *wp_stats_tags_from_config(const json_t *stats_config, wf_strbuf *err)
{
    bool use_defaults;
    const json_t *specs;
    if (read_config(stats_config, &use_defaults, &specs, err) != 0)
        return NULL;
    size_t nspecs = specs ? json_array_size(specs) : 0;
    wp_stats_tags *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    wf_arena_init(&t->arena);
    t->excap = 2 * N_DEFAULT_TAGS + nspecs;
    t->ex = wf_arena_alloc(&t->arena, t->excap * sizeof *t->ex);
    t->fixed = wf_arena_alloc(&t->arena, (nspecs + 1) * sizeof *t->fixed);
    t->mctx = pcre2_match_context_create(NULL);
    wf_strmap *names = wf_strmap_new(&t->arena);
    if (!t->ex || !t->fixed || !t->mctx || !names)
        goto fail;
    pcre2_set_match_limit(t->mctx, WP_REGEX_MATCH_LIMIT);
    if (use_defaults) {
        if (add_defaults_named(t, NULL, err) < 0)
            goto fail;
        for (size_t i = 0; i < N_DEFAULT_TAGS; i++) {
            void **v = wf_strmap_slot(names, default_tags[i].name, true);
            if (!v)
                goto fail;
            *v = (void *)1;
        }
    }
    for (size_t i = 0; i < nspecs; i++) {
        if (add_spec(t, names, json_array_get(specs, i), i, err) != 0)
            goto fail;
    }
    return t;
fail:
    wp_stats_tags_free(t);
    return NULL;
}

void wp_stats_tags_free(wp_stats_tags *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nex; i++)
        pcre2_code_free(t->ex[i].re);
    pcre2_match_context_free(t->mctx);
    wf_arena_destroy(&t->arena);
    free(t);
}

typedef struct {
    const char *name;
    const char *value;
    size_t vlen;
} tag_hit;

/* Run one extractor on the original name (Envoy matches every extractor against the full name
 * and removes the union of the first groups at the end). */
static bool run_extractor(const wp_stats_tags *t, const extractor *e, const char *name, size_t len,
                          pcre2_match_data *md, bool *removed, tag_hit *hit)
{
    if (e->substr && !strstr(name, e->substr))
        return false;
    if (pcre2_match(e->re, (PCRE2_SPTR)name, len, 0, 0, md, t->mctx) < 0)
        return false;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    PCRE2_SIZE rs = ov[2], re = ov[3];
    PCRE2_SIZE vs = e->ncaps >= 2 ? ov[4] : rs, ve = e->ncaps >= 2 ? ov[5] : re;
    if (vs == PCRE2_UNSET)
        vs = ve = 0;
    if (e->negative && strlen(e->negative) == ve - vs && !memcmp(name + vs, e->negative, ve - vs))
        return false;
    for (PCRE2_SIZE k = rs; rs != PCRE2_UNSET && k < re; k++)
        removed[k] = true;
    *hit = (tag_hit){e->name, name + vs, ve - vs};
    return true;
}

/* Extract tags of `name`: hits (fixed tags first, then extractors without a prefix, then those
 * whose prefix is the name's first token, as Envoy's TagProducerImpl) and the removed chars.
 * hits must hold nfixed + nex entries. Returns the number of hits. */
static size_t extract(const wp_stats_tags *t, const char *name, pcre2_match_data *md, bool *removed,
                      tag_hit *hits)
{
    size_t len = strlen(name), n = 0;
    memset(removed, 0, len);
    for (size_t i = 0; i < t->nfixed; i++)
        hits[n++] = (tag_hit){t->fixed[i].name, t->fixed[i].value, strlen(t->fixed[i].value)};
    const char *dot = strchr(name, '.');
    size_t tok = dot ? (size_t)(dot - name) : 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < t->nex; i++) {
            const extractor *e = &t->ex[i];
            bool any = e->prefix[0] == '\0';
            if (pass == 0 ? !any
                          : (any || !dot || strlen(e->prefix) != tok ||
                             memcmp(e->prefix, name, tok) != 0))
                continue;
            if (run_extractor(t, e, name, len, md, removed, &hits[n]))
                n++;
        }
    }
    return n;
}

static void put_extracted_name(wf_strbuf *out, const char *name, const bool *removed)
{
    for (size_t i = 0; name[i]; i++) {
        if (!removed[i])
            wf_strbuf_putc(out, name[i]);
    }
}

int wp_stats_tags_extract(const wp_stats_tags *t, const char *name, wf_strbuf *name_out,
                          wf_strbuf *tags_out)
{
    size_t len = strlen(name);
    bool *removed = malloc(len + 1);
    tag_hit *hits = malloc((t->nfixed + t->nex + 1) * sizeof *hits);
    pcre2_match_data *md = pcre2_match_data_create(t->max_caps + 1, NULL);
    int n = -1;
    if (removed && hits && md) {
        n = (int)extract(t, name, md, removed, hits);
        if (name_out)
            put_extracted_name(name_out, name, removed);
        for (int i = 0; tags_out && i < n; i++)
            wf_strbuf_printf(tags_out, "%s%s=%.*s", i ? "," : "", hits[i].name, (int)hits[i].vlen,
                             hits[i].value);
    }
    free(removed);
    free(hits);
    pcre2_match_data_free(md);
    return n;
}

/* ------------------------------------------------------------------ Prometheus */

static void prom_sanitize(wf_strbuf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        wf_strbuf_putc(out, ok ? c : '_');
    }
}

static void prom_escape_value(wf_strbuf *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\')
            wf_strbuf_puts(out, "\\\\");
        else if (s[i] == '\n')
            wf_strbuf_puts(out, "\\n");
        else if (s[i] == '"')
            wf_strbuf_puts(out, "\\\"");
        else
            wf_strbuf_putc(out, s[i]);
    }
}

typedef struct {
    const wp_stats_tags *tags;
    pcre2_match_data *md;
    bool *removed;
    size_t removed_cap;
    tag_hit *hits;
    wf_strbuf fam, lab;
} prom_ctx;

/* Fill e->family and e->labels (in the list's arena). */
static int prom_describe(prom_ctx *pc, entry_list *l, entry *e)
{
    size_t len = strlen(e->name), n = 0;
    wf_strbuf_reset(&pc->fam);
    wf_strbuf_reset(&pc->lab);
    wf_strbuf_puts(&pc->fam, "envoy_");
    if (pc->tags) {
        if (len + 1 > pc->removed_cap) {
            bool *r = realloc(pc->removed, len + 1);
            if (!r)
                return -1;
            pc->removed = r;
            pc->removed_cap = len + 1;
        }
        n = extract(pc->tags, e->name, pc->md, pc->removed, pc->hits);
        for (size_t i = 0; i < len; i++) {
            if (!pc->removed[i])
                prom_sanitize(&pc->fam, e->name + i, 1);
        }
    } else {
        prom_sanitize(&pc->fam, e->name, len);
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            wf_strbuf_putc(&pc->lab, ',');
        prom_sanitize(&pc->lab, pc->hits[i].name, strlen(pc->hits[i].name));
        wf_strbuf_puts(&pc->lab, "=\"");
        prom_escape_value(&pc->lab, pc->hits[i].value, pc->hits[i].vlen);
        wf_strbuf_putc(&pc->lab, '"');
    }
    if (wf_strbuf_failed(&pc->fam) || wf_strbuf_failed(&pc->lab))
        return -1;
    e->family = wf_arena_strdup(&l->arena, wf_strbuf_cstr(&pc->fam));
    e->labels = wf_arena_strdup(&l->arena, wf_strbuf_cstr(&pc->lab));
    return e->family && e->labels ? 0 : -1;
}

static int by_family(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->gauge != y->gauge)
        return x->gauge ? 1 : -1; /* counters first, as Envoy */
    int c = strcmp(x->family, y->family);
    return c ? c : strcmp(x->name, y->name);
}

static int prom_describe_all(const wp_stats_tags *tags, entry_list *l)
{
    prom_ctx pc = {.tags = tags, .fam = WF_STRBUF_INIT, .lab = WF_STRBUF_INIT};
    int rc = 0;
    if (tags) {
        pc.md = pcre2_match_data_create(tags->max_caps + 1, NULL);
        pc.hits = malloc((tags->nfixed + tags->nex + 1) * sizeof *pc.hits);
        if (!pc.md || !pc.hits)
            rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < l->n; i++)
        rc = prom_describe(&pc, l, &l->v[i]);
    pcre2_match_data_free(pc.md);
    free(pc.hits);
    free(pc.removed);
    wf_strbuf_free(&pc.fam);
    wf_strbuf_free(&pc.lab);
    return rc;
}

void wp_stats_render_prometheus(wp_stats *st, const wp_stats_tags *tags, bool usedonly,
                                const pcre2_code *filter, wf_strbuf *out)
{
    entry_list l;
    collect(st, filter, usedonly, &l);
    if (l.failed || prom_describe_all(tags, &l) != 0) {
        out->failed = true;
        list_free(&l);
        return;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, by_family);
    for (size_t i = 0; i < l.n; i++) {
        const entry *e = &l.v[i];
        if (i == 0 || e->gauge != l.v[i - 1].gauge || strcmp(e->family, l.v[i - 1].family) != 0)
            wf_strbuf_printf(out, "# TYPE %s %s\n", e->family, e->gauge ? "gauge" : "counter");
        wf_strbuf_printf(out, "%s{%s} %" PRId64 "\n", e->family, e->labels, e->value);
    }
    list_free(&l);
}
