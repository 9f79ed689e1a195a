/*
 * bootstrap_retry.c - the bootstrap's route retry policy, body buffer limits and mirror
 * policies (envoy.config.route.v3.RetryPolicy, RetryPolicy.RetryBackOff, Route/VirtualHost
 * request_body_buffer_limit and per_request_buffer_limit_bytes,
 * RouteAction.request_mirror_policies).
 *
 * Envoy behaviour followed (reference §3.2, §4.1–§4.3; api route_components.proto):
 *  - retry_on is a comma list, whitespace trimmed; the HTTP and gRPC tokens share the field.
 *    Envoy ignores unknown tokens in configuration; weft refuses them, naming the token, so
 *    a typo cannot silently disable a retry condition.
 *  - num_retries defaults to 1; retry_back_off.base_interval must be > 0 and defaults to
 *    25 ms; max_interval defaults to 10 x base and must not be below it.
 *  - retry_host_predicate: envoy.retry_host_predicates.previous_hosts only;
 *    host_selection_retry_max_attempts defaults to 1.
 *  - retry_priority, retry_options_predicates, rate_limited_retry_back_off and
 *    retriable_request_headers are not supported and fail the load.
 *  - request_mirror_policies[]: cluster (required; "route: unknown shadow cluster" when
 *    validate_clusters), runtime_fraction.default_value (FractionalPercent; absent = 100 %;
 *    runtime_key accepted, weft has no runtime), trace_sampled (accepted),
 *    disable_shadow_host_suffix_append.
 */
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/http/retry.h"

static bool dec_retry_on(bs *b, json_t *o, wp_retry_policy *rp)
{
    const char *list = NULL, *bad = NULL;
    size_t bad_len = 0;
    if (!bs_str(b, o, "retry_on", &list) || !list)
        return !b->failed;
    if (wp_retry_on_parse(list, &rp->retry_on, &bad, &bad_len) == 0)
        return true;
    bs_fail_atf(b, "retry_on", "unknown retry condition '%.*s'", (int)bad_len, bad);
    return false;
}

static bool dec_back_off(bs *b, json_t *o, void *arg)
{
    wp_retry_policy *rp = arg;
    bool has_base = false, has_max = false;
    if (!bs_fields(b, o, "base_interval max_interval") ||
        !bs_dur(b, o, "base_interval", &rp->base_interval_ms, &has_base) ||
        !bs_dur(b, o, "max_interval", &rp->max_interval_ms, &has_max))
        return false;
    if (!has_base || rp->base_interval_ms == 0)
        return bs_fail_at(b, "base_interval",
                          has_base ? "value must be greater than 0s" : "missing required field");
    if (!has_max)
        rp->max_interval_ms = rp->base_interval_ms * 10;
    if (rp->max_interval_ms < rp->base_interval_ms)
        return bs_fail_at(b, "max_interval",
                          "max_interval must be greater than or equal to the base_interval");
    return true;
}

static bool dec_host_predicate(bs *b, json_t *o, void *arg)
{
    bool *previous_hosts = arg;
    const char *name = NULL;
    if (!bs_fields(b, o, "name typed_config") || !bs_req_str(b, o, "name", &name))
        return false;
    if (strcmp(name, "envoy.retry_host_predicates.previous_hosts") != 0)
        return bs_fail_at(b, "name",
                          "unsupported retry host predicate (weft supports "
                          "envoy.retry_host_predicates.previous_hosts)");
    *previous_hosts = true;
    return true;
}

static bool dec_status_codes(bs *b, json_t *o, wp_retry_policy *rp)
{
    json_t *a = bs_get(o, "retriable_status_codes");
    if (!a)
        return true;
    if (!json_is_array(a))
        return bs_fail_at(b, "retriable_status_codes", "wrong type: expected an array");
    rp->status_codes = bs_alloc(b, sizeof(uint32_t) * (json_array_size(a) + 1));
    if (!rp->status_codes)
        return false;
    size_t m = bs_push(b, "retriable_status_codes");
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > UINT32_MAX) {
            size_t mi = bs_push_i(b, i);
            bs_fail(b, "wrong type: expected a status code (uint32)");
            bs_pop(b, mi);
            break;
        }
        rp->status_codes[rp->nstatus_codes++] = (uint32_t)json_integer_value(v);
    }
    bs_pop(b, m);
    return !b->failed;
}

static bool dec_retry_policy(bs *b, json_t *o, void *arg)
{
    wp_retry_policy *rp = arg;
    void *arr = NULL;
    size_t n = 0;
    uint64_t host_attempts = 1;
    rp->num_retries = 1;
    rp->base_interval_ms = 25;
    rp->max_interval_ms = 250;
    if (!bs_fields(b, o,
                   "retry_on num_retries per_try_timeout per_try_idle_timeout "
                   "retry_host_predicate host_selection_retry_max_attempts "
                   "retriable_status_codes retry_back_off retriable_headers"))
        return false;
    if (!dec_retry_on(b, o, rp) || !bs_u32(b, o, "num_retries", &rp->num_retries) ||
        !bs_dur(b, o, "per_try_timeout", &rp->per_try_timeout_ms, NULL) ||
        !bs_dur(b, o, "per_try_idle_timeout", &rp->per_try_idle_timeout_ms, NULL) ||
        !bs_u64(b, o, "host_selection_retry_max_attempts", INT64_MAX, &host_attempts) ||
        !dec_status_codes(b, o, rp) || !bs_sub(b, o, "retry_back_off", dec_back_off, rp) ||
        !bs_each(b, o, "retry_host_predicate", sizeof(bool), &arr, &n, dec_host_predicate))
        return false;
    for (size_t i = 0; i < n; i++)
        rp->previous_hosts |= ((bool *)arr)[i];
    rp->host_selection_max_attempts =
        host_attempts > UINT32_MAX ? UINT32_MAX : (uint32_t)host_attempts;
    if (!bs_each(b, o, "retriable_headers", sizeof(wp_kv_matcher), &arr, &rp->nheaders,
                 bs_header_matcher))
        return false;
    rp->headers = arr;
    return true;
}

bool bs_retry_policy(bs *b, json_t *o, const wp_retry_policy **out)
{
    if (!bs_get(o, "retry_policy"))
        return true;
    wp_retry_policy *rp = bs_alloc(b, sizeof(*rp));
    if (!rp || !bs_sub(b, o, "retry_policy", dec_retry_policy, rp))
        return false;
    *out = rp;
    return true;
}

bool bs_buffer_limits(bs *b, json_t *o, wp_buffer_limits *l)
{
    if (bs_get(o, "request_body_buffer_limit") && bs_get(o, "per_request_buffer_limit_bytes"))
        return bs_fail(b, "only one of request_body_buffer_limit, "
                          "per_request_buffer_limit_bytes may be set");
    uint64_t rbbl = 0;
    uint32_t prbl = 0;
    if (!bs_u64(b, o, "request_body_buffer_limit", UINT64_MAX, &rbbl) ||
        !bs_u32(b, o, "per_request_buffer_limit_bytes", &prbl))
        return false;
    if (bs_get(o, "request_body_buffer_limit")) {
        l->request_body_buffer_limit = rbbl;
        l->has_request_body_buffer_limit = true;
    }
    if (bs_get(o, "per_request_buffer_limit_bytes")) {
        l->per_request_buffer_limit_bytes = prbl;
        l->has_per_request_buffer_limit = true;
    }
    return true;
}

static bool dec_fraction(bs *b, json_t *o, void *arg)
{
    static const char *const kinds[] = {"HUNDRED", "TEN_THOUSAND", "MILLION", NULL};
    static const uint32_t values[] = {100, 10000, 1000000};
    wp_mirror_policy *m = arg;
    int kind = 0;
    if (!bs_fields(b, o, "numerator denominator") || !bs_u32(b, o, "numerator", &m->numerator) ||
        !bs_enum(b, o, "denominator", kinds, &kind))
        return false;
    m->denominator = values[kind];
    return true;
}

static bool dec_runtime_fraction(bs *b, json_t *o, void *arg)
{
    wp_mirror_policy *m = arg;
    const char *key = NULL;
    m->numerator = 0; /* a fraction without default_value mirrors nothing */
    return bs_fields(b, o, "default_value runtime_key") && bs_str(b, o, "runtime_key", &key) &&
           bs_sub(b, o, "default_value", dec_fraction, m);
}

static bool dec_mirror(bs *b, json_t *o, void *arg)
{
    wp_mirror_policy *m = arg;
    bool sampled = false;
    m->numerator = m->denominator = 100;
    if (!bs_fields(b, o,
                   "cluster runtime_fraction trace_sampled disable_shadow_host_suffix_append") ||
        !bs_req_str(b, o, "cluster", &m->cluster_name) ||
        !bs_bool(b, o, "trace_sampled", &sampled) ||
        !bs_bool(b, o, "disable_shadow_host_suffix_append", &m->disable_host_suffix) ||
        !bs_sub(b, o, "runtime_fraction", dec_runtime_fraction, m))
        return false;
    m->cluster = wp_config_find_cluster(b->c, m->cluster_name);
    if (m->cluster < 0 && b->validate_clusters)
        return bs_fail_at(b, "cluster", "route: unknown shadow cluster");
    return true;
}

bool bs_mirror_policies(bs *b, json_t *o, wp_route *r)
{
    void *arr = NULL;
    if (!bs_each(b, o, "request_mirror_policies", sizeof(wp_mirror_policy), &arr, &r->nmirrors,
                 dec_mirror))
        return false;
    r->mirrors = arr;
    return true;
}
