/*
 * histogram.c - bucket arithmetic, quantile estimates and number formats (histogram.h).
 */
#include "proxy/stats/histogram.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double wp_hist_quantiles_q[WP_HIST_NQ] = {0,    0.25, 0.5,   0.75,  0.90,
                                                0.95, 0.99, 0.995, 0.999, 1};
const char *const wp_hist_quantile_labels[WP_HIST_NQ] = {"0",  "25", "50",   "75",   "90",
                                                         "95", "99", "99.5", "99.9", "100"};

/* Value of rank r (1..total) by linear interpolation inside the bucket that holds it. */
static double at_rank(const double *bounds, uint32_t n, const uint64_t *counts, double r, double lo,
                      double hi)
{
    double before = 0;
    for (uint32_t i = 0; i <= n; i++) {
        if (counts[i] == 0 || before + (double)counts[i] < r) {
            before += (double)counts[i];
            continue;
        }
        /* values are integers: bucket (bounds[i-1], bounds[i]] holds floor(bounds[i-1]) + 1
         * .. floor(bounds[i]) */
        double a = i == 0 ? 0 : floor(bounds[i - 1]) + 1;
        double b = i < n ? floor(bounds[i]) : (isnan(hi) ? a : hi);
        if (a < lo)
            a = lo;
        if (!isnan(hi) && b > hi)
            b = hi;
        if (b < a)
            b = a;
        double frac = (r - before) / (double)counts[i];
        return a + (b - a) * frac;
    }
    return isnan(hi) ? floor(bounds[n - 1]) + 1 : hi;
}

void wp_hist_quantiles(const double *bounds, uint32_t n, const uint64_t *counts, uint64_t total,
                       double lo, double hi, bool exact, double out[WP_HIST_NQ])
{
    for (int k = 0; k < WP_HIST_NQ; k++) {
        if (total == 0 || n == 0) {
            out[k] = NAN;
            continue;
        }
        double q = wp_hist_quantiles_q[k];
        if (exact && q == 0) {
            out[k] = lo;
            continue;
        }
        if (exact && q == 1 && !isnan(hi)) {
            out[k] = hi;
            continue;
        }
        double r = q * (double)total;
        double v = at_rank(bounds, n, counts, r > 0 ? r : 1e-9, lo, hi);
        out[k] = round(v * 1e6) / 1e6; /* an estimate: no binary noise ("35.8", not
                                          "35.800000000000004") */
    }
}

size_t wp_fmt_double(char *out, size_t cap, double v)
{
    int n;
    if (isnan(v))
        n = snprintf(out, cap, "nan");
    else if (isinf(v))
        n = snprintf(out, cap, v < 0 ? "-inf" : "inf");
    else if (v == 0)
        n = snprintf(out, cap, "0");
    else {
        char tmp[40];
        int p = 1;
        for (; p < 17; p++) {
            snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v); /* shortest digits, exponent form */
        const char *e = strchr(tmp, 'e');
        int exp = e ? atoi(e + 1) : 0;
        if (exp >= -4 && exp < 16)
            n = snprintf(out, cap, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, v);
        else
            n = snprintf(out, cap, "%s", tmp);
    }
    if (n < 0)
        n = 0;
    return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}
