/*
 * stats_internal.h - what the stats store (stats.c), its renderings (stats_render.c) and its
 * tag extraction (stats_tags.c) share. Not a public API: only those three files include it.
 */
#ifndef WEFT_PROXY_STATS_INTERNAL_H
#define WEFT_PROXY_STATS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/strmap.h"
#include "proxy/stats/histogram.h"
#include "proxy/stats/stats.h"

#define WP_MAX_SHARDS              256u
#define WP_NCODES                  (WP_CODE_MAX - WP_CODE_MIN + 1)
#define WP_MAX_SCOPES              (WP_CODE_CHUNK_SCOPES * WP_CODE_MAX_CHUNKS)
#define WP_STATS_REGEX_MATCH_LIMIT 100000u
#define WP_HMETA_CHUNK             256u
#define WP_HMETA_MAX_CHUNKS        512u /* => at most 131072 histograms */
#define WP_MAX_HISTS               (WP_HMETA_CHUNK * WP_HMETA_MAX_CHUNKS)
/* Names of a status-code scope: codes 100..599, then classes 1xx..5xx. */
#define WP_CODE_NAMES (WP_NCODES + 5)

enum { KIND_COUNTER = 0, KIND_GAUGE = 1, KIND_HIST = 2, KIND_SCRATCH = 3 };

/* Words of one histogram in a shard: count, sum, min + 1, max + 1 (0 = none yet), then one
 * count per bucket (nb + 1). */
enum { HW_COUNT, HW_SUM, HW_MIN, HW_MAX, HW_BUCKETS };

typedef struct {
    const char *name; /* in the store's arena */
    uint8_t kind;
    _Atomic int64_t baseline; /* reader side: raw sum at the last reset (counters) */
    /* custom stat namespace (wp_stats_counter_ns): Prometheus family and labels, else NULL */
    const char *prom_family, *prom_labels;
} stat_meta;

typedef struct {
    stat_meta m[WP_STATS_CHUNK_SLOTS];
} meta_chunk;

typedef struct {
    const char *scope;
    uint64_t incl[(WP_CODE_NAMES + 63) / 64]; /* names the matcher accepts (bit per name) */
    _Atomic int64_t baseline[WP_NCODES];
} code_scope;

typedef struct {
    const char *name;     /* in the store's arena; NULL for the scratch histogram */
    const double *bounds; /* nb sorted bounds, in the store's arena */
    uint32_t nb;
    uint32_t chunk, off;                   /* its words in every shard */
    const char *prom_family, *prom_labels; /* custom stat namespace, else NULL */
    /* reader side, under render_lock: nb + 3 words each (buckets, count, sum) */
    uint64_t *at_flush; /* cumulative values when the current interval began */
    uint64_t *interval; /* the last completed interval */
} hist_meta;

typedef struct {
    hist_meta m[WP_HMETA_CHUNK];
} hist_meta_chunk;

struct wp_stats {
    unsigned nshards;
    wp_stats_shard *shards;
    pthread_mutex_t reg_lock;    /* registration only */
    pthread_mutex_t render_lock; /* histogram intervals (admin readers) */
    wf_arena arena;              /* names, bounds, interval arrays; under reg_lock only */
    wf_strmap *index;            /* name -> slot + 1 */
    wf_strmap *code_index;       /* scope -> id + 1 */
    wf_strmap *hist_index;       /* name -> id + 1 */
    wp_stats_matcher *matcher;   /* NULL: accept everything */
    _Atomic uint32_t nslots;     /* published last (release) */
    _Atomic(meta_chunk *) meta[WP_STATS_MAX_CHUNKS];
    _Atomic uint32_t nscopes;
    _Atomic(code_scope *) *scopes; /* WP_MAX_SCOPES entries */
    _Atomic uint32_t nhists;
    _Atomic(hist_meta_chunk *) hmeta[WP_HMETA_MAX_CHUNKS];
    uint32_t hw_chunk, hw_used;                /* histogram word allocator (reg_lock) */
    uint64_t flush_interval_ms, last_flush_ms; /* render_lock */
};

/* ---- reading (stats.c) ---- */

/* Metadata of a rendered counter/gauge slot; NULL for slots not (yet) published. */
stat_meta *wp_stats_meta_of(wp_stats *st, uint32_t slot);
/* Value (minus the reset baseline for counters) and whether any shard wrote it. */
int64_t wp_stats_value_of(wp_stats *st, uint32_t slot, stat_meta *sm, bool *used);
code_scope *wp_stats_scope_of(wp_stats *st, uint32_t id);
/* Raw per-code sums of a scope over all shards. */
void wp_stats_code_sums(wp_stats *st, uint32_t id, int64_t sums[WP_NCODES]);
hist_meta *wp_stats_hist_meta(wp_stats *st, uint32_t id);
/* Sums of histogram m over shards into out (nb + 3 words: buckets, count, sum) and the
 * observed minimum and maximum (+1; 0 when none). */
void wp_stats_hist_sums(wp_stats *st, const hist_meta *m, uint64_t *out, uint64_t *min1,
                        uint64_t *max1);
/* Closes the interval if the flush interval passed (now from CLOCK_MONOTONIC). Call with
 * render_lock held. */
void wp_stats_maybe_flush_locked(wp_stats *st);

/* ---- tag extraction (stats_tags.c) ---- */

typedef struct {
    const char *name;
    const char *value;
    size_t vlen;
} wp_tag_hit;

/* Scratch space for wp_tags_extract_into, sized for one tag producer. */
typedef struct {
    pcre2_match_data *md;
    bool *removed;
    size_t removed_cap;
    wp_tag_hit *hits;
} wp_tag_scratch;

int wp_tag_scratch_init(wp_tag_scratch *s, const wp_stats_tags *t);
void wp_tag_scratch_free(wp_tag_scratch *s);
/* Extracts the tags of name: fills s->hits (returned count) and s->removed (chars of name that
 * the tag-extracted name drops). -1 on out of memory. */
int wp_tags_extract_into(const wp_stats_tags *t, const char *name, wp_tag_scratch *s);

#endif
