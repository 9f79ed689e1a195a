/*
 * stats.h - the proxy's stats store: counters, gauges and histograms with Envoy's dotted
 * names, per-worker shards, dynamic status-code stats, the stats matcher, and the admin
 * renderings /stats, /stats?format=json and /stats/prometheus (envoy-istio-behaviour.md §6;
 * Envoy docs/root/operations/admin.rst, source/server/admin/stats_render.cc,
 * prometheus_stats.cc, source/common/stats/tag_producer_impl.cc, stats_matcher_impl.cc,
 * source/common/config/well_known_names.cc). Text readouts are out of scope.
 *
 * Threads.
 *  - Registration (wp_stats_counter, wp_stats_gauge, wp_stats_code_scope, wp_stats_histogram)
 *    happens at config time, normally on the main thread, possibly while workers run; it is
 *    serialised by a mutex. Registering never moves existing storage: values live in
 *    fixed-size chunks whose pointers are published with release stores, and the slot count
 *    is published last.
 *  - Each worker owns one shard (wp_stats_get_shard) and is its only writer: wp_stat_add and
 *    wp_hist_record are relaxed atomic loads + stores (no lock, no read-modify-write
 *    instruction, no allocation).
 *  - Readers (the admin thread) sum the shards with relaxed/acquire loads: values are
 *    eventually consistent, never torn.
 *  - /reset_counters records a per-slot baseline on the reader side (shards stay single-writer);
 *    counters then read as sum - baseline. Gauges and histograms are not reset (Envoy resets
 *    counters only).
 *
 * Stats matcher (stats_matcher.h, Envoy's StatsConfig.stats_matcher): set with
 * wp_stats_set_matcher before registering. A name the matcher rejects is not created: the
 * registration returns WP_STAT_SCRATCH, a shared slot (counter/gauge), scope (status codes)
 * or histogram that is never rendered, so writers keep their unconditional, lock-free
 * increments and pay nothing more. A status-code scope is filtered per full name
 * ("<scope>_503", "<scope>_5xx"): codes are still counted (the class sums need them) but
 * only included names are rendered; a scope with no included name is the scratch scope.
 *
 * Values: counters and gauges are both int64 sums of deltas over shards (a gauge is the sum of
 * +/- deltas). A stat is "used" (for ?usedonly) once any shard wrote it, even if its value went
 * back to 0 or was reset; a histogram once it recorded a value.
 *
 * Status-code stats (Envoy's dynamic upstream_rq_<NNN>/<N>xx, downstream_rq_<N>xx): a scope
 * such as "cluster.<name>.upstream_rq" is registered once; each worker gets a shard-local
 * handle and counts codes 100..599 (other codes are ignored). The first code a worker counts in
 * a scope allocates its per-shard array (~4 KiB) once; later increments never allocate.
 * Rendering emits "<scope>_<code>" for each code seen and "<scope>_<N>xx" for each class seen,
 * as counters.
 *
 * Histograms (Envoy's names and output; arithmetic in histogram.h): per histogram and shard a
 * fixed array of bucket counts (the bounds come from the matcher's histogram_bucket_settings
 * or Envoy's defaults), count, sum, min and max. Renderings:
 *  - text: "name: P0(i,c) P25(i,c) P50(i,c) P75(i,c) P90(i,c) P95(i,c) P99(i,c) P99.5(i,c)
 *    P99.9(i,c) P100(i,c)" after the counters and gauges, i = interval and c = cumulative
 *    quantile ("nan" without samples), or "name: No recorded values" when never used;
 *  - JSON: a last element {"histograms":{"supported_quantiles":[0,25,...,100],
 *    "computed_quantiles":[{"name":…,"values":[{"cumulative":c,"interval":i},…]},…]}}
 *    (null for NaN), only when a histogram is rendered;
 *  - Prometheus: "# TYPE <family> histogram", then per histogram cumulative
 *    <family>_bucket{<tags>,le="<bound>"} lines (bound printed as %.32g), le="+Inf" (the
 *    count), <family>_sum{<tags>} and <family>_count{<tags>}, after counters and gauges.
 * The interval is the last completed flush interval (Envoy's stats_flush_interval, default
 * 5 s): wp_stats_flush_histograms closes an interval; renderings close one themselves when
 * the flush interval has passed since the last close (weft has no flush timer), so an
 * interval ends at a render and covers at least the flush interval. Cumulative values are
 * live (Envoy updates them only at flushes).
 */
#ifndef WEFT_PROXY_STATS_H
#define WEFT_PROXY_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include "core/strbuf.h"
#include "proxy/stats/stats_matcher.h"

/* Returned by registration on error (out of memory, store full, name registered with another
 * kind, empty name). wp_stat_add ignores it, so a failed registration cannot crash a worker. */
#define WP_STAT_INVALID UINT32_MAX
/* Returned by registration for a name the stats matcher rejects: a shared slot (counter or
 * gauge), status-code scope or histogram that is written like any other and never rendered.
 * wp_stats_value and friends read 0 for it. */
#define WP_STAT_SCRATCH 0u

/* ---- storage layout (exposed for the inline hot path; treat as private) ---- */
#define WP_STATS_CHUNK_SLOTS 512u
#define WP_STATS_MAX_CHUNKS  512u /* => at most 262144 counters + gauges */
#define WP_CODE_CHUNK_SCOPES 64u
#define WP_CODE_MAX_CHUNKS   256u /* => at most 16384 status-code scopes */
#define WP_CODE_MIN          100u
#define WP_CODE_MAX          599u
#define WP_HIST_CHUNK_WORDS  4096u
#define WP_HIST_MAX_CHUNKS   1024u /* => 4 Mi words of histogram storage per shard */

typedef struct {
    _Atomic int64_t v[WP_STATS_CHUNK_SLOTS];
    _Atomic uint8_t used[WP_STATS_CHUNK_SLOTS];
} wp_stats_chunk;

typedef struct {
    _Atomic int64_t n[WP_CODE_MAX - WP_CODE_MIN + 1];
} wp_code_counts;

/* The shard-local handle of one status-code scope (see wp_stats_code_local). */
typedef struct wp_code_stats {
    _Atomic(wp_code_counts *) counts; /* allocated by the owning worker on first use */
} wp_code_stats;

typedef struct {
    wp_code_stats s[WP_CODE_CHUNK_SCOPES];
} wp_code_chunk;

typedef struct {
    _Atomic uint64_t w[WP_HIST_CHUNK_WORDS];
} wp_hist_chunk;

typedef struct wp_stats wp_stats;

typedef struct wp_stats_shard {
    _Atomic(wp_stats_chunk *) chunks[WP_STATS_MAX_CHUNKS];
    _Atomic(wp_code_chunk *) code_chunks[WP_CODE_MAX_CHUNKS];
    _Atomic(wp_hist_chunk *) hist_chunks[WP_HIST_MAX_CHUNKS];
    wp_stats *store; /* the histograms' descriptions (bounds, place) */
} wp_stats_shard;

/* ---- lifetime ---- */

/* A store with nshards shards (1..256; one per worker thread, plus one for the main thread if
 * it writes stats). NULL on out of memory or bad nshards. Free with wp_stats_free once no
 * thread uses it. */
wp_stats *wp_stats_new(unsigned nshards);
void wp_stats_free(wp_stats *st);
unsigned wp_stats_nshards(const wp_stats *st);

/* ---- registration (config time) ---- */

/* Installs the stats matcher and histogram bucket settings (stats_matcher.h); the store takes
 * ownership and frees a previous one. Applies to registrations made afterwards (call it
 * before registering, as Envoy fixes the matcher at bootstrap). m NULL: accept everything. */
void wp_stats_set_matcher(wp_stats *st, wp_stats_matcher *m);

/* Slot of the counter/gauge `name` (Envoy's dotted name, copied), registering it if new;
 * registering an existing name of the same kind returns its slot. WP_STAT_INVALID on error. */
uint32_t wp_stats_counter(wp_stats *st, const char *name);
uint32_t wp_stats_gauge(wp_stats *st, const char *name);

/* Id of the status-code scope `scope` (e.g. "cluster.x.upstream_rq", "http.in.downstream_rq"),
 * registering it if new. WP_STAT_INVALID on error, WP_STAT_SCRATCH when the matcher accepts
 * none of its names. */
uint32_t wp_stats_code_scope(wp_stats *st, const char *scope);

/* Id of the histogram `name` (values in the unit its name says, e.g. milliseconds for
 * "cluster.x.upstream_rq_time"), registering it if new with the bounds the matcher's
 * histogram_bucket_settings give. WP_STAT_INVALID on error (out of memory, store full, empty
 * name), WP_STAT_SCRATCH when the matcher rejects the name. */
uint32_t wp_stats_histogram(wp_stats *st, const char *name);

/* Registration in a custom stat namespace (Envoy's CustomStatNamespaces, e.g. Istio's
 * "istiocustom"; envoy-istio-behaviour.md §6.3): as wp_stats_counter / wp_stats_gauge /
 * wp_stats_histogram, but /stats/prometheus prints the stat as `<family>{<labels>}` (both
 * copied; labels are `name="value"` pairs already escaped, "" for none) instead of "envoy_" +
 * the tag-extracted name. The Prometheus identity is fixed by the first registration of a
 * name. The stats matcher and /stats see `name` as usual. */
uint32_t wp_stats_counter_ns(wp_stats *st, const char *name, const char *family,
                             const char *labels);
uint32_t wp_stats_gauge_ns(wp_stats *st, const char *name, const char *family, const char *labels);
uint32_t wp_stats_histogram_ns(wp_stats *st, const char *name, const char *family,
                               const char *labels);

/* ---- writers (the shard's own worker only) ---- */

/* Shard i (< nshards), NULL otherwise. The pointer is stable for the store's life. */
wp_stats_shard *wp_stats_get_shard(wp_stats *st, unsigned i);

/* Add delta to a counter (delta >= 0) or gauge (any sign). Lock-free, single writer. */
static inline void wp_stat_add(wp_stats_shard *sh, uint32_t slot, int64_t delta)
{
    if (slot == WP_STAT_INVALID)
        return;
    wp_stats_chunk *c =
        atomic_load_explicit(&sh->chunks[slot / WP_STATS_CHUNK_SLOTS], memory_order_acquire);
    uint32_t i = slot % WP_STATS_CHUNK_SLOTS;
    int64_t v = atomic_load_explicit(&c->v[i], memory_order_relaxed);
    atomic_store_explicit(&c->v[i], v + delta, memory_order_relaxed);
    if (!atomic_load_explicit(&c->used[i], memory_order_relaxed))
        atomic_store_explicit(&c->used[i], 1, memory_order_relaxed);
}

/* The shard-local handle of scope `scope_id` in shard sh (stable for the store's life; a worker
 * looks it up once and keeps it). NULL for WP_STAT_INVALID. */
wp_code_stats *wp_stats_code_local(wp_stats_shard *sh, uint32_t scope_id);

/* Slow path of wp_code_stat_add: allocate and publish the counts. NULL on out of memory. */
wp_code_counts *wp_code_stats_alloc(wp_code_stats *cs);

/* Count one response with status `code` (100..599; others ignored) in a shard-local scope.
 * cs may be NULL (ignored). Allocates only on the first call for this shard and scope. */
static inline void wp_code_stat_add(wp_code_stats *cs, unsigned code)
{
    if (!cs || code < WP_CODE_MIN || code > WP_CODE_MAX)
        return;
    wp_code_counts *c = atomic_load_explicit(&cs->counts, memory_order_relaxed);
    if (!c && !(c = wp_code_stats_alloc(cs)))
        return;
    _Atomic int64_t *p = &c->n[code - WP_CODE_MIN];
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Record one value in histogram `id` (from wp_stats_histogram) in the caller's shard. No lock,
 * no allocation; sh NULL, WP_STAT_SCRATCH and WP_STAT_INVALID are ignored. */
void wp_hist_record(wp_stats_shard *sh, uint32_t id, uint64_t value);

/* ---- readers (admin thread) ---- */

/* Current value: sum over shards (minus the reset baseline for counters). 0 for a bad slot. */
int64_t wp_stats_value(wp_stats *st, uint32_t slot);
/* True once any shard wrote the slot. */
bool wp_stats_used(wp_stats *st, uint32_t slot);
/* Value of "<scope>_<code>" (code 100..599) or, for code 1..5, of "<scope>_<code>xx". */
int64_t wp_stats_code_value(wp_stats *st, uint32_t scope_id, unsigned code);

/* Cumulative sample count and sum of histogram id (0 for scratch/invalid). */
uint64_t wp_stats_hist_count(wp_stats *st, uint32_t id);
uint64_t wp_stats_hist_sum(wp_stats *st, uint32_t id);

/* Closes the current histogram interval now (Envoy's stats flush): the interval quantiles
 * rendered from now on are those of the values recorded since the previous close. */
void wp_stats_flush_histograms(wp_stats *st);
/* The flush interval renderings use (default 5000 ms, Envoy's stats_flush_interval). */
void wp_stats_set_flush_interval(wp_stats *st, uint64_t ms);

/* Admin /reset_counters: every counter (and status-code counter) reads 0 from now on; gauges
 * keep their values. */
void wp_stats_reset_counters(wp_stats *st);

/* ---- rendering (admin thread) ---- */

/* Envoy /stats text: "name: value\n" per counter and gauge, sorted by name (strcmp), then the
 * histograms (sorted, format above). filter: compiled regex, partial match against the full
 * name (NULL: all); usedonly: skip stats never written. Output is appended to out. */
void wp_stats_render_text(wp_stats *st, const pcre2_code *filter, bool usedonly, wf_strbuf *out);

/* /stats?format=json: {"stats":[{"name":"…","value":N},…]} (compact, same order as text), with
 * the histograms element last when a histogram is rendered. */
void wp_stats_render_json(wp_stats *st, const pcre2_code *filter, bool usedonly, wf_strbuf *out);

/* /stats?type= (Envoy's StatsParams): the kinds a text or JSON rendering includes. Status-code
 * stats are counters. weft has no text readouts, so TextReadouts renders nothing. */
typedef enum {
    WP_STATS_TYPE_ALL,
    WP_STATS_TYPE_COUNTERS,
    WP_STATS_TYPE_GAUGES,
    WP_STATS_TYPE_HISTOGRAMS,
    WP_STATS_TYPE_TEXT_READOUTS,
} wp_stats_type;

/* Parses Envoy's names "All", "Counters", "Gauges", "Histograms", "TextReadouts" (exact
 * case). 0, or -1 for anything else (Envoy answers 400 "invalid &type= param"). */
int wp_stats_type_parse(const char *s, wp_stats_type *out);

/* wp_stats_render_text / _json restricted to the kinds of type (ALL: the same output). */
void wp_stats_render_text_type(wp_stats *st, const pcre2_code *filter, bool usedonly,
                               wp_stats_type type, wf_strbuf *out);
void wp_stats_render_json_type(wp_stats *st, const pcre2_code *filter, bool usedonly,
                               wp_stats_type type, wf_strbuf *out);

/* Tag extraction (stats_config.stats_tags / use_all_default_tags). */
typedef struct wp_stats_tags wp_stats_tags;

/* Build the tag producer of an Envoy v3 StatsConfig JSON object (NULL: Envoy's defaults).
 * Understands use_all_default_tags (default true) and stats_tags [{tag_name, regex} |
 * {tag_name, fixed_value} | {tag_name} (picks the default extractor of that name)]. Regexes
 * are ECMAScript-like as Envoy's std::regex tags (lookahead allowed), matched with PCRE2 under
 * a match limit. Returns NULL with a message in err (may be NULL) on error, e.g.
 * "Tag name 'x' specified twice." or a regex compile error. Free with wp_stats_tags_free. */
wp_stats_tags *wp_stats_tags_from_config(const json_t *stats_config, wf_strbuf *err);
void wp_stats_tags_free(wp_stats_tags *t);

/* Apply tag extraction to one stat name: appends the tag-extracted name to name_out and
 * "tag=value" pairs, comma-separated, to tags_out (either may be NULL). For tests and
 * explanations (weftctl). Returns the number of tags. */
int wp_stats_tags_extract(const wp_stats_tags *t, const char *name, wf_strbuf *name_out,
                          wf_strbuf *tags_out);

/* /stats/prometheus text exposition v0.0.4: counters, gauges, then histograms; per family (sorted
 * by tag-extracted name) one "# TYPE envoy_<name> counter|gauge|histogram" line, then one line per
 * stat sorted by full name: `envoy_<name>{<label>="<value>",…} <value>`, with empty braces
 * when a stat has no tags (histograms: the bucket/sum/count lines described above). Names and label
 * names: every char outside [a-zA-Z0-9_] becomes '_'; label values escape \ " and newline. tags
 * NULL: no tag extraction. filter and usedonly as in wp_stats_render_text (filter on the full
 * name). Label order: fixed tags, then extractors without a name prefix, then those keyed by the
 * name's first token, each in config order (Envoy's TagProducerImpl). Families are grouped by the
 * sanitised name (Envoy groups by the tag-extracted name; they differ only when two names sanitise
 * alike). Stats registered with a custom namespace (wp_stats_counter_ns ...) print their own
 * family and labels, e.g. istio_requests_total{reporter="source",...}. */
void wp_stats_render_prometheus(wp_stats *st, const wp_stats_tags *tags, bool usedonly,
                                const pcre2_code *filter, wf_strbuf *out);

#endif
