/*
 * bootstrap_grpc_stats.c - decode envoy.filters.http.grpc_stats's typed_config
 * (envoy.extensions.filters.http.grpc_stats.v3.FilterConfig) for an HCM's http_filters (see
 * filters/http/grpc_stats.h for the behaviour and what is supported).
 *
 * Accepted: emit_filter_state, stats_for_all_methods false (what Istio sends). Rejected by
 * JSON path as not supported by weft-proxy: stats_for_all_methods true,
 * individual_method_stats_allowlist, enable_upstream_stats true,
 * replace_dots_in_grpc_service_name true; any other key is an unknown field.
 */
#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/http/grpc_stats.h"

/* A bool field that weft supports only as false (the proto default). */
static bool only_false(bs *b, json_t *o, const char *k, const char *what)
{
    bool v = false;
    if (!bs_bool(b, o, k, &v))
        return false;
    return !v || bs_fail_atf(b, k, "%s is not supported by weft-proxy's " WP_GRPC_STATS_NAME, what);
}

static bool dec_config(bs *b, json_t *o, wp_grpc_stats_config *c)
{
    if (!bs_fields(
            b, o,
            "@type emit_filter_state stats_for_all_methods individual_method_stats_allowlist "
            "enable_upstream_stats replace_dots_in_grpc_service_name") ||
        !bs_type_is(b, o, WP_GRPC_STATS_TYPE) ||
        !bs_bool(b, o, "emit_filter_state", &c->emit_filter_state))
        return false;
    if (bs_get(o, "individual_method_stats_allowlist"))
        return bs_fail_at(b, "individual_method_stats_allowlist",
                          "per-method stats are not supported by weft-proxy's " WP_GRPC_STATS_NAME);
    return only_false(b, o, "stats_for_all_methods", "per-method stats (true)") &&
           only_false(b, o, "enable_upstream_stats", "upstream_rq_time (true)") &&
           only_false(b, o, "replace_dots_in_grpc_service_name", "renaming services (true)");
}

bool bs_grpc_stats_filter(bs *b, json_t *tc, const void **config)
{
    wp_grpc_stats_config *c = bs_alloc(b, sizeof *c);
    if (!c)
        return false;
    *config = c;
    if (!tc)
        return true;
    size_t m = bs_push(b, "typed_config");
    bool ok = dec_config(b, tc, c);
    bs_pop(b, m);
    return ok;
}
