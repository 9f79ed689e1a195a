/*
 * fuzz_stats_matcher.c - libFuzzer target for the stats matcher configuration
 * (proxy/stats/stats_matcher.h): an Envoy v3 StatsConfig JSON object (stats_matcher,
 * histogram_bucket_settings) as the bootstrap's stats_config carries it.
 *
 * Input: the StatsConfig JSON text. Checks besides crashes, leaks and undefined behaviour: a
 * rejected configuration names why; an accepted one answers for a set of Envoy stat names
 * (and the input's own strings), gives 1..WP_HIST_MAX_BOUNDS strictly increasing positive
 * bucket bounds for every histogram, and reject_all / accept_all agree with the answers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/stats/stats_matcher.h"

static const char *const names[] = {
    "server.state",
    "cluster.outbound|80||x.ns.svc.cluster.local.upstream_rq_total",
    "cluster.xds-grpc.upstream_cx_total",
    "http.inbound_0.0.0.0_8080.downstream_rq_time",
    "listener.0.0.0.0_15006.downstream_cx_total",
    "cluster_manager.cds.update_success",
    "istio_requests_total",
    "",
};

static void ask(wp_stats_matcher *m, const char *name)
{
    bool yes = wp_stats_matcher_accepts(m, name);
    if ((wp_stats_matcher_accepts_all(m) && !yes) || (wp_stats_matcher_rejects_all(m) && yes))
        abort();
    uint32_t n = 0;
    const double *b = wp_stats_matcher_buckets(m, name, &n);
    if (!b || n < 1 || n > WP_HIST_MAX_BOUNDS)
        abort();
    for (uint32_t i = 0; i < n; i++)
        if (!(b[i] > 0) || (i && !(b[i] > b[i - 1])))
            abort();
}

/* Every string in j (keys and values), as a stat name. */
static void ask_strings(wp_stats_matcher *m, const json_t *j, int depth)
{
    if (depth > 8)
        return;
    if (json_is_string(j)) {
        ask(m, json_string_value(j));
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            ask_strings(m, json_array_get(j, i), depth + 1);
    } else if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            ask(m, k);
            ask_strings(m, v, depth + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return 0;
    wf_strbuf where = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wp_stats_matcher *m = wp_stats_matcher_new(j, &where, &why);
    if (!m) {
        if (why.len == 0)
            abort();
    } else {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            ask(m, names[i]);
        ask_strings(m, j, 0);
        wp_stats_matcher_free(m);
    }
    wf_strbuf_free(&where);
    wf_strbuf_free(&why);
    json_decref(j);
    return 0;
}
