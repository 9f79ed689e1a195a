/*
 * bootstrap_fault.c - decode the fault filter's config (envoy.extensions.filters.http.fault.v3
 * .HTTPFault) for the listener's http_filters and for typed_per_filter_config on routes and
 * virtual hosts (see fault.h for the behaviour).
 *
 * Supported: HTTPFault {delay {fixed_delay, percentage}, abort {http_status | grpc_status,
 * percentage},
 * headers (route HeaderMatcher), max_active_faults}; FractionalPercent {numerator,
 * denominator HUNDRED | TEN_THOUSAND | MILLION}. The other HTTPFault fields are rejected by
 * path as unsupported. Validation messages copy protoc-gen-validate's wording for the rules of
 * envoy/extensions/filters/http/fault/v3/fault.proto and
 * envoy/extensions/filters/common/fault/v3/fault.proto (fixed_delay gt 0, http_status in
 * [200, 600)).
 */
#include <stdio.h>
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/http/fault.h"

#define UNSUPPORTED_MSG "not supported by weft-proxy's fault filter"

/* FractionalPercent at o[k] into *p (absent: 0 %, as the proto default). */
static bool dec_percent(bs *b, json_t *o, const char *k, wp_fault_percent *p)
{
    static const char *const dens[] = {"HUNDRED", "TEN_THOUSAND", "MILLION", NULL};
    p->numerator = 0;
    p->denominator = 100;
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    size_t m = bs_push(b, k);
    int den = 0;
    bool ok = bs_fields(b, v, "numerator denominator") &&
              bs_u32(b, v, "numerator", &p->numerator) && bs_enum(b, v, "denominator", dens, &den);
    if (ok)
        p->denominator = wp_fault_denominator(den);
    bs_pop(b, m);
    return ok;
}

/* The first of names[] present in o fails as unsupported. */
static bool reject_unsupported(bs *b, json_t *o, const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        if (bs_get(o, names[i]))
            return bs_fail_at(b, names[i], UNSUPPORTED_MSG);
    }
    return true;
}

/* FaultDelay */
static bool dec_delay(bs *b, json_t *o, void *arg)
{
    static const char *const unsupported[] = {"header_delay", NULL};
    wp_fault_config *c = arg;
    bool present = false;
    if (!bs_fields(b, o, "fixed_delay header_delay percentage") ||
        !reject_unsupported(b, o, unsupported) ||
        !bs_dur(b, o, "fixed_delay", &c->delay_ms, &present) ||
        !dec_percent(b, o, "percentage", &c->delay_pct))
        return false;
    if (!present)
        return bs_fail_at(b, "fixed_delay", "missing required field");
    json_t *canon = bs_get(o, "fixed_delay"); /* rewritten by bs_dur: "0s" only for zero */
    if (json_is_string(canon) && strcmp(json_string_value(canon), "0s") == 0)
        return bs_fail_at(b, "fixed_delay", "value must be greater than 0s");
    c->has_delay = true;
    return true;
}

/* FaultAbort */
static bool dec_abort(bs *b, json_t *o, void *arg)
{
    static const char *const unsupported[] = {"header_abort", NULL};
    wp_fault_config *c = arg;
    uint32_t grpc = 0;
    c->abort_grpc_status = -1;
    if (!bs_fields(b, o, "http_status grpc_status header_abort percentage") ||
        !reject_unsupported(b, o, unsupported) || !bs_u32(b, o, "http_status", &c->abort_status) ||
        !bs_u32(b, o, "grpc_status", &grpc) || !dec_percent(b, o, "percentage", &c->abort_pct))
        return false;
    if (bs_get(o, "http_status") && bs_get(o, "grpc_status"))
        return bs_fail(b, "only one of http_status, grpc_status may be set (oneof error_type)");
    if (bs_get(o, "grpc_status")) { /* FaultFilter::abortStatus: HTTP 200 and the gRPC status */
        if (grpc > INT16_MAX)
            return bs_fail_at(b, "grpc_status", "value must be at most 32767");
        c->abort_grpc_status = (int)grpc;
        c->abort_status = 200;
        c->has_abort = true;
        return true;
    }
    if (!bs_get(o, "http_status"))
        return bs_fail_at(b, "http_status", "missing required field");
    if (c->abort_status < 200 || c->abort_status >= 600)
        return bs_fail_at(b, "http_status", "value must be inside range [200, 600)");
    c->has_abort = true;
    return true;
}

bool bs_http_fault(bs *b, json_t *o, wp_fault_config *c)
{
    static const char *const unsupported[] = {"upstream_cluster",
                                              "downstream_nodes",
                                              "response_rate_limit",
                                              "delay_percent_runtime",
                                              "abort_percent_runtime",
                                              "delay_duration_runtime",
                                              "abort_http_status_runtime",
                                              "max_active_faults_runtime",
                                              "response_rate_limit_percent_runtime",
                                              "abort_grpc_status_runtime",
                                              "disable_downstream_cluster_stats",
                                              "filter_metadata",
                                              NULL};
    void *arr = NULL;
    if (!bs_fields(b, o,
                   "@type delay abort headers max_active_faults upstream_cluster downstream_nodes "
                   "response_rate_limit delay_percent_runtime abort_percent_runtime "
                   "delay_duration_runtime abort_http_status_runtime max_active_faults_runtime "
                   "response_rate_limit_percent_runtime abort_grpc_status_runtime "
                   "disable_downstream_cluster_stats filter_metadata") ||
        !bs_type_is(b, o, WP_FAULT_TYPE) || !reject_unsupported(b, o, unsupported) ||
        !bs_u32(b, o, "max_active_faults", &c->max_active) ||
        !bs_sub(b, o, "delay", dec_delay, c) || !bs_sub(b, o, "abort", dec_abort, c) ||
        !bs_each(b, o, "headers", sizeof(wp_kv_matcher), &arr, &c->nheaders, bs_header_matcher))
        return false;
    c->has_max_active = bs_get(o, "max_active_faults") != NULL;
    c->headers = arr;
    return true;
}

wp_fault_filter *bs_fault_filter(bs *b, json_t *tc)
{
    wp_fault_filter *f = bs_alloc(b, sizeof(*f));
    if (!f)
        return NULL;
    f->st_delays = f->st_aborts = f->st_overflow = f->st_active = WP_STAT_INVALID;
    atomic_init(&f->active, 0);
    if (tc && !bs_http_fault(b, tc, &f->cfg))
        return NULL;
    return f;
}

bool bs_per_filter_config(bs *b, json_t *o, const wp_fault_config **out)
{
    json_t *map = bs_get(o, "typed_per_filter_config");
    if (!map)
        return true;
    size_t m = bs_push(b, "typed_per_filter_config");
    const char *k;
    json_t *v;
    if (!json_is_object(map))
        bs_fail(b, "wrong type: expected an object");
    json_object_foreach(map, k, v)
    {
        if (b->failed)
            break;
        size_t mk = bs_push(b, k);
        wp_fault_config *c = NULL;
        if (strcmp(k, WP_FAULT_NAME) != 0)
            bs_fail(b, "unsupported filter \"%s\" (only %s takes per-route config)", k,
                    WP_FAULT_NAME);
        else if (!json_is_object(v))
            bs_fail(b, "wrong type: expected an object");
        else if ((c = bs_alloc(b, sizeof(*c))) && bs_http_fault(b, v, c))
            *out = c;
        if (c && !b->failed && b->hcm && b->fault)
            b->fault->per_route = true;
        bs_pop(b, mk);
    }
    bs_pop(b, m);
    return !b->failed;
}
