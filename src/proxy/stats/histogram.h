/*
 * histogram.h - the arithmetic of the proxy's histograms: which bucket a value falls in,
 * quantile estimates from bucket counts, and the number formats Envoy's admin uses for them.
 * Storage, registration and rendering live in the stats store (stats.h).
 *
 * Envoy keeps histograms as circllhist log-linear sketches (2 significant digits) and
 * derives both quantiles and the Prometheus buckets from them
 * (source/common/stats/histogram_impl.cc). weft keeps, per histogram and worker, one count
 * per configured bucket bound (+ one above the last bound), the sample count, sum, minimum
 * and maximum: Prometheus buckets are exact (`le` = "value <= bound"), and quantiles are
 * estimated by linear interpolation inside the bucket that holds the rank (over the integers
 * the bucket can hold), clamped to the observed minimum and maximum. P0 is the minimum and P100 the
 * maximum when they are known (cumulative); quantiles therefore differ from Envoy's by at most the
 * width of a bucket.
 *
 * Values are unsigned integers (Envoy records whole milliseconds for the *_ms and *_time
 * histograms).
 */
#ifndef WEFT_PROXY_HISTOGRAM_H
#define WEFT_PROXY_HISTOGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Envoy's supported quantiles (HistogramStatisticsImpl::supportedQuantiles), as fractions
 * and as the labels printed by /stats ("P99.5"). */
#define WP_HIST_NQ 10
extern const double wp_hist_quantiles_q[WP_HIST_NQ];
extern const char *const wp_hist_quantile_labels[WP_HIST_NQ]; /* "0", "25", ..., "100" */

/* Index of the bucket of value v: the first i with v <= bounds[i], or n when v is above
 * every bound. bounds: n sorted values. */
static inline uint32_t wp_hist_bucket_index(const double *bounds, uint32_t n, uint64_t v)
{
    double x = (double)v;
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (x <= bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Quantile estimates of a distribution given as disjoint bucket counts.
 * bounds: n sorted upper bounds; counts: n + 1 counts (counts[n] is above the last bound);
 * total: sum of counts. [lo, hi] clamps the interpolation (pass the observed minimum and
 * maximum; hi NAN = unknown, then the overflow bucket is taken as one value above the last
 * bound). exact: lo and hi are this distribution's own minimum and maximum, so P0 = lo and
 * P100 = hi. Writes WP_HIST_NQ values to out: NAN for every quantile when total is 0. */
void wp_hist_quantiles(const double *bounds, uint32_t n, const uint64_t *counts, uint64_t total,
                       double lo, double hi, bool exact, double out[WP_HIST_NQ]);

/* Formats v the way Envoy's fmt "{}" does: the shortest text that reads back as v,
 * fixed-point for decimal exponents -4..15 and exponent form ("1e+16") outside; "nan",
 * "inf", "-inf". Writes at most cap bytes (NUL-terminated); returns the length. */
size_t wp_fmt_double(char *out, size_t cap, double v);

#endif
