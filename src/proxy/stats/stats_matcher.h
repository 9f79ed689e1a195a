/*
 * stats_matcher.h - what an Envoy v3 StatsConfig decides about a stat when it is created:
 * whether it exists at all (`stats_matcher`) and, for a histogram, its bucket bounds
 * (`histogram_bucket_settings`).
 *
 * Followed: envoy/config/metrics/v3/stats.proto (StatsMatcher, HistogramBucketSettings),
 * source/common/stats/stats_matcher_impl.cc (StatsMatcherImpl) and histogram_impl.cc
 * (HistogramSettingsImpl), envoy/type/matcher/v3/string.proto with
 * source/common/common/matchers.h (StringMatcherImpl).
 *
 *  - stats_matcher is one of: `reject_all: true` (no stat is created; `false` keeps all),
 *    `inclusion_list: {patterns: [StringMatcher]}` (only names matched by a pattern exist),
 *    `exclusion_list: {patterns: [...]}` (names matched by a pattern do not exist). Absent:
 *    every stat exists (Envoy's default; Istio's default inclusion list comes with the
 *    bootstrap Istio's agent writes, as weftctl up writes it: src/proxy/agent/proxy_stats_config.h).
 *  - Names are Envoy's internal dotted names ("cluster.outbound|80||x.svc.cluster.local.
 *    upstream_rq_total", "server.state"), before tag extraction, never the Prometheus
 *    names: a pattern written as "envoy_cluster_upstream_rq_total" matches nothing.
 *  - StringMatcher: exactly one of exact, prefix, suffix, contains (ASCII case-insensitive
 *    with ignore_case) or safe_regex {regex} (RE2 syntax, full match as RE2::FullMatch;
 *    ignore_case with safe_regex is an error, as in Envoy). prefix, suffix and contains must
 *    not be empty. A prefix ending in '.' also matches the name without that dot (Envoy
 *    turns such prefixes into token prefixes). Regexes run under PCRE2 match limits; hitting
 *    one is a non-match.
 *  - histogram_bucket_settings: [{match: StringMatcher, buckets: [double > 0, ...]}]; the
 *    first entry whose matcher matches the histogram's name gives its bounds (sorted; weft
 *    also drops duplicates, which would repeat an `le` label); otherwise Envoy's default
 *    bounds 0.5 1 5 10 25 50 100 250 500 1000 2500 5000 10000 30000 60000 300000 600000
 *    1800000 3600000. `bins` (circllhist resolution) is not supported and is an error.
 *
 * Threads: built once (config time); wp_stats_matcher_accepts and wp_stats_matcher_buckets
 * use per-matcher regex scratch state, so calls on one matcher must be serialised (the stats
 * store calls them under its registration lock).
 */
#ifndef WEFT_PROXY_STATS_MATCHER_H
#define WEFT_PROXY_STATS_MATCHER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "core/strbuf.h"

/* At most this many bucket bounds per histogram (more is a configuration error). */
#define WP_HIST_MAX_BOUNDS 64u

typedef struct wp_stats_matcher wp_stats_matcher;

/* Envoy's default histogram bounds (ms), and their number. */
extern const double wp_hist_default_bounds[];
extern const uint32_t wp_hist_default_nbounds;

/* Builds the matcher of an Envoy v3 StatsConfig JSON object (snake_case field names; only
 * stats_matcher and histogram_bucket_settings are read, other members are ignored). NULL
 * stats_config: accept everything, default buckets. Returns NULL on error: then `where`
 * receives the JSON path of the bad value relative to stats_config (e.g.
 * "stats_matcher.inclusion_list.patterns[1].safe_regex.regex") and `why` the message
 * (either may be NULL); out of memory gives where "" and why "out of memory".
 * Free with wp_stats_matcher_free. */
wp_stats_matcher *wp_stats_matcher_new(const json_t *stats_config, wf_strbuf *where,
                                       wf_strbuf *why);
void wp_stats_matcher_free(wp_stats_matcher *m);

/* True when a stat named `name` (NUL-terminated dotted name) is to be created. NULL m:
 * true. */
bool wp_stats_matcher_accepts(wp_stats_matcher *m, const char *name);

/* True when every name is accepted (no stats_matcher, or reject_all: false). NULL m: true. */
bool wp_stats_matcher_accepts_all(const wp_stats_matcher *m);

/* True when no stat can ever be accepted (reject_all: true). NULL m: false. */
bool wp_stats_matcher_rejects_all(const wp_stats_matcher *m);

/* Bucket bounds of the histogram `name`: returns the sorted bounds (owned by m, or the
 * static defaults; valid while m lives) and their number in *n (1..WP_HIST_MAX_BOUNDS).
 * NULL m: the defaults. */
const double *wp_stats_matcher_buckets(wp_stats_matcher *m, const char *name, uint32_t *n);

#endif
