/*
 * bootstrap_cluster.c - the clusters of a bootstrap (static_resources.clusters[], Envoy v3
 * envoy.config.cluster.v3.Cluster): types STATIC, STRICT_DNS, LOGICAL_DNS and ORIGINAL_DST,
 * lb_policy, connect_timeout, circuit_breakers, HttpProtocolOptions, load_assignment,
 * outlier_detection, common_lb_config, metadata, transport_socket (bootstrap_tls.c) and
 * transport_socket_matches. Part of the loader (bootstrap.c), same rules: anything
 * unsupported is refused naming its JSON path.
 *
 * transport_socket_matches follow Envoy's TransportSocketMatcherImpl (legacy metadata
 * matching, source/common/upstream/transport_socket_match_impl.cc): for each host the first
 * entry whose `match` (a Struct) is a subset of the host's endpoint metadata
 * filter_metadata["envoy.transport_socket_match"] is used (an empty match matches every host),
 * else the cluster's transport_socket (raw_buffer when absent). The choice is made once per
 * host at load (wp_endpoint.tsm) and logged at debug as Envoy's
 * HostDescriptionImplBase::resolveTransportSocketFactory does ("transport socket match, socket
 * <name> selected for host with address <ip:port>", logger upstream).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "core/log.h"
#include "core/strmap.h"
#include "proxy/bootstrap/bootstrap_read.h"

#define HPO_NAME        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define HPO_TYPE        "type.googleapis.com/" HPO_NAME
#define WP_CLA_TYPE     "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define WP_CLUSTER_TYPE "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define STATIC_IP_MSG                                                                              \
    "malformed IP address: %s. Consider setting resolver_name or setting cluster type to "         \
    "'STRICT_DNS' or 'LOGICAL_DNS'"

/* ---------- clusters ---------- */

static bool dec_thresholds(bs *b, json_t *o, void *arg)
{
    static const char *const prios[] = {"DEFAULT", NULL};
    wp_thresholds *t = arg;
    int prio = 0;
    *t = (wp_thresholds){1024, 1024, 1024, 3};
    bool track = false; /* remaining_* gauges: not kept by weft, accepted and ignored */
    if (!bs_fields(b, o,
                   "priority max_connections max_pending_requests max_requests max_retries "
                   "track_remaining") ||
        !bs_bool(b, o, "track_remaining", &track))
        return false;
    json_t *p = bs_get(o, "priority");
    if (json_is_string(p) && strcmp(json_string_value(p), "HIGH") == 0)
        return bs_fail_at(b, "priority",
                          "unsupported value \"HIGH\" (only DEFAULT priority "
                          "thresholds are supported)");
    return bs_enum(b, o, "priority", prios, &prio) &&
           bs_u32(b, o, "max_connections", &t->max_connections) &&
           bs_u32(b, o, "max_pending_requests", &t->max_pending_requests) &&
           bs_u32(b, o, "max_requests", &t->max_requests) &&
           bs_u32(b, o, "max_retries", &t->max_retries);
}

static bool dec_circuit_breakers(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    void *arr;
    size_t n = 0;
    if (!bs_fields(b, o, "thresholds") ||
        !bs_each(b, o, "thresholds", sizeof(wp_thresholds), &arr, &n, dec_thresholds))
        return false;
    if (n > 1)
        return bs_fail_at(b, "thresholds",
                          "only one thresholds entry (priority DEFAULT) is "
                          "supported");
    if (n == 1)
        cl->cb = *(wp_thresholds *)arr;
    return true;
}

static bool dec_upstream_common(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    return bs_fields(b, o, "idle_timeout max_requests_per_connection") &&
           bs_dur(b, o, "idle_timeout", &cl->idle_timeout_ms, NULL) &&
           bs_u32(b, o, "max_requests_per_connection", &cl->max_requests_per_connection);
}

/* http_protocol_options (empty: no field of Http1ProtocolOptions is implemented upstream) */
static bool dec_empty_h1(bs *b, json_t *o, void *arg)
{
    (void)arg;
    return bs_fields(b, o, "");
}

/* explicit_http_config: one of http_protocol_options / http2_protocol_options (Envoy's
 * oneof; http3_protocol_options is refused by name). */
static bool dec_explicit_http(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    if (!bs_fields(b, o, "http_protocol_options http2_protocol_options"))
        return false;
    if (bs_get(o, "http_protocol_options") && bs_get(o, "http2_protocol_options"))
        return bs_fail(b, "only one of http_protocol_options, http2_protocol_options");
    if (bs_get(o, "http2_protocol_options"))
        cl->proto = WP_UP_HTTP2;
    return bs_sub(b, o, "http_protocol_options", dec_empty_h1, cl) &&
           bs_sub(b, o, "http2_protocol_options", bs_h2_options, &cl->h2);
}

/* use_downstream_protocol_config (Istio's auto ports, PassthroughCluster): the upstream
 * speaks the downstream request's protocol; HTTP/2 only when http2_protocol_options is
 * given (Envoy's ClusterInfoImpl::upstreamHttpProtocol). */
static bool dec_downstream_proto(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    if (!bs_fields(b, o, "http_protocol_options http2_protocol_options"))
        return false;
    cl->proto = WP_UP_DOWNSTREAM;
    cl->h2_allowed = bs_get(o, "http2_protocol_options") != NULL;
    return bs_sub(b, o, "http_protocol_options", dec_empty_h1, cl) &&
           bs_sub(b, o, "http2_protocol_options", bs_h2_options, &cl->h2);
}

static bool dec_protocol_options(bs *b, json_t *o, void *arg)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t m = b->plen;
        int n = snprintf(b->path + m, sizeof(b->path) - m, "[%s]", k);
        b->plen = n > 0 && m + (size_t)n < sizeof(b->path) ? m + (size_t)n : m;
        bool ok = strcmp(k, HPO_NAME) == 0 ? true : bs_fail(b, "unsupported protocol options");
        if (ok && bs_get(v, "explicit_http_config") && bs_get(v, "use_downstream_protocol_config"))
            ok = bs_fail(b, "only one of explicit_http_config, use_downstream_protocol_config");
        ok = ok &&
             bs_fields(b, v,
                       "@type common_http_protocol_options explicit_http_config "
                       "use_downstream_protocol_config") &&
             bs_sub(b, v, "use_downstream_protocol_config", dec_downstream_proto, arg) &&
             bs_type_is(b, v, HPO_TYPE) &&
             bs_sub(b, v, "common_http_protocol_options", dec_upstream_common, arg) &&
             bs_sub(b, v, "explicit_http_config", dec_explicit_http, arg);
        bs_pop(b, m);
        if (!ok)
            return false;
    }
    return true;
}

/* address {pipe {path, mode}} of a STATIC cluster's endpoint (a Unix socket; Istio's xds-grpc
 * cluster). Only the ADS cluster may use one (checked in bootstrap_dynamic.c): the data plane
 * connects over TCP only. */
/* endpoint.health_check_config: only used by active health checking, which weft does not
 * have (Istio sends an empty one); port_value and hostname are checked and ignored. */
static bool check_health_check_config(bs *b, json_t *ep)
{
    json_t *hc = bs_get(ep, "health_check_config");
    if (!hc)
        return true;
    size_t m = bs_push(b, "health_check_config");
    uint32_t port = 0;
    const char *host = NULL;
    bool ok = json_is_object(hc) ? bs_fields(b, hc, "port_value hostname")
                                 : bs_fail(b, "wrong type: expected an object");
    ok = ok && bs_u32(b, hc, "port_value", &port) && bs_str(b, hc, "hostname", &host);
    bs_pop(b, m);
    return ok;
}

static bool dec_pipe_address(bs *b, json_t *addr, wp_endpoint *e)
{
    json_t *pipe = bs_get(addr, "pipe");
    if (!bs_fields(b, addr, "pipe socket_address"))
        return false;
    if (bs_get(addr, "socket_address"))
        return bs_fail(b, "only one of socket_address, pipe may be set");
    if (!b->ip_msg)
        return bs_fail_at(b, "pipe", "pipe addresses are only supported in STATIC clusters");
    size_t m = bs_push(b, "pipe");
    const char *path = NULL;
    uint32_t mode = 0;
    struct sockaddr_un *un = (struct sockaddr_un *)&e->addr.sa;
    bool ok = json_is_object(pipe) ? bs_fields(b, pipe, "path mode")
                                   : bs_fail(b, "wrong type: expected an object");
    ok = ok && bs_req_str(b, pipe, "path", &path) && bs_u32(b, pipe, "mode", &mode);
    if (ok && strlen(path) >= sizeof(un->sun_path))
        ok = bs_fail_at(b, "path", "path too long for a Unix socket");
    if (ok && !b->pipe_cluster) {
        b->pipe_cluster = b->cur_cluster;
        ok = (b->pipe_at = bs_strdup(b, b->path)) != NULL;
    }
    bs_pop(b, m);
    if (!ok)
        return false;
    memset(&e->addr, 0, sizeof(e->addr));
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path, strlen(path) + 1);
    e->addr.len = (socklen_t)sizeof(*un);
    snprintf(e->addr.text, sizeof(e->addr.text), "%s", path);
    e->hostname = path;
    return true;
}

/* Envoy's ValueUtil::equal on two google.protobuf.Value (numbers are doubles). */
static bool value_equal(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* Config::Metadata::metadataLabelMatch(label_set, metadata, "envoy.transport_socket_match",
 * false): every field of match is in md with an equal value (md NULL: match must be empty). */
static bool tsm_matches(json_t *match, const json_t *md)
{
    const char *k;
    json_t *v;
    json_object_foreach(match, k, v)
    {
        json_t *have = json_is_object(md) ? json_object_get(md, k) : NULL;
        if (!have || !value_equal(v, have))
            return false;
    }
    return true;
}

/* The host's transport socket (e->tsm), from its metadata o.metadata (shape checked). */
static void resolve_tsm(bs *b, json_t *o, wp_endpoint *e)
{
    json_t *md = bs_get(o, "metadata");
    json_t *fm = md ? bs_get(md, "filter_metadata") : NULL;
    e->tsm_metadata = fm ? bs_get(fm, "envoy.transport_socket_match") : NULL;
    const wp_cluster *cl = b->cur_cluster;
    json_t *matches = b->tsm_json;
    for (size_t i = 0; i < cl->ntsms; i++) {
        json_t *m = bs_get(json_array_get(matches, i), "match");
        if (!m || tsm_matches(m, e->tsm_metadata)) {
            e->tsm = (uint32_t)i + 1;
            break;
        }
    }
}

static bool dec_lb_endpoint(bs *b, json_t *o, void *arg)
{
    static const char *const health[] = {"UNKNOWN", "HEALTHY",  "UNHEALTHY", "DRAINING",
                                         "TIMEOUT", "DEGRADED", NULL};
    wp_endpoint *e = arg;
    int h = 0;
    e->weight = 1;
    json_t *ep = bs_get(o, "endpoint");
    if (!bs_fields(b, o, "endpoint health_status load_balancing_weight metadata") ||
        !bs_metadata(b, o) || !bs_enum(b, o, "health_status", health, &h) ||
        !bs_u32(b, o, "load_balancing_weight", &e->weight))
        return false;
    e->health = (wp_health)h;
    if (e->weight < 1)
        return bs_fail_at(b, "load_balancing_weight", "value must be greater than or equal to 1");
    if (!ep)
        return bs_fail_at(b, "endpoint", "missing required field");
    size_t m = bs_push(b, "endpoint");
    const char *hostname = NULL;
    json_t *addr = bs_get(ep, "address");
    bool ok = bs_fields(b, ep, "address hostname health_check_config") &&
              bs_str(b, ep, "hostname", &hostname) && check_health_check_config(b, ep);
    if (ok && json_is_object(addr) && bs_get(addr, "pipe")) {
        size_t ma = bs_push(b, "address");
        ok = dec_pipe_address(b, addr, e);
        bs_pop(b, ma);
    } else if (ok) {
        ok = bs_req_address(b, ep, &e->addr, &e->hostname, &e->port, b->ip_msg);
    }
    if (ok && hostname)
        e->hostname = hostname;
    bs_pop(b, m);
    if (ok)
        resolve_tsm(b, o, e);
    return ok;
}

typedef struct {
    wp_endpoint *eps;
    size_t n;
} ep_list;

static bool dec_locality_eps(bs *b, json_t *o, void *arg)
{
    ep_list *out = arg;
    void *arr;
    size_t n = 0;
    json_t *loc = bs_get(o, "locality");
    uint32_t weight = 0, priority = 0;
    /* load_balancing_weight is used only with locality_weighted_lb_config (not supported), so
     * Envoy ignores it otherwise; priority must be 0 (one priority level). */
    if (!bs_fields(b, o, "lb_endpoints locality load_balancing_weight priority") ||
        !bs_u32(b, o, "load_balancing_weight", &weight) || !bs_u32(b, o, "priority", &priority))
        return false;
    if (priority != 0)
        return bs_fail_at(b, "priority", "only priority 0 is supported");
    if (loc) {
        size_t m = bs_push(b, "locality");
        bool ok = bs_fields(b, loc, "region zone sub_zone");
        bs_pop(b, m);
        if (!ok)
            return false;
    }
    if (!bs_each(b, o, "lb_endpoints", sizeof(wp_endpoint), &arr, &n, dec_lb_endpoint))
        return false;
    out->eps = arr;
    out->n = n;
    return true;
}

/* ClusterLoadAssignment.policy: overprovisioning_factor only matters when hosts are
 * unhealthy across priorities/localities (weft has one priority); checked and ignored. */
static bool dec_cla_policy(bs *b, json_t *o, void *arg)
{
    uint32_t f = 140;
    return bs_fields(b, o, "overprovisioning_factor") &&
           bs_u32(b, o, "overprovisioning_factor", &f) &&
           (f > 0 || bs_fail_at(b, "overprovisioning_factor", "value must be greater than 0"));
}

static bool dec_load_assignment(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    void *arr;
    size_t n = 0, total = 0;
    const char *name = NULL;
    if (!bs_fields(b, o, "@type cluster_name endpoints policy") ||
        !bs_opt_type(b, o, WP_CLA_TYPE) || !bs_sub(b, o, "policy", dec_cla_policy, NULL) ||
        !bs_str(b, o, "cluster_name", &name) ||
        !bs_each(b, o, "endpoints", sizeof(ep_list), &arr, &n, dec_locality_eps))
        return false;
    ep_list *groups = arr;
    for (size_t i = 0; i < n; i++)
        total += groups[i].n;
    if (cl->type == WP_CLUSTER_LOGICAL_DNS && (n != 1 || total != 1))
        return bs_fail_at(b, "endpoints",
                          "LOGICAL_DNS clusters must have a single "
                          "locality_lb_endpoint and a single lb_endpoint");
    cl->endpoints = bs_alloc(b, sizeof(wp_endpoint) * total);
    if (!cl->endpoints)
        return false;
    for (size_t i = 0; i < n; i++) {
        memcpy(cl->endpoints + cl->nendpoints, groups[i].eps, groups[i].n * sizeof(wp_endpoint));
        cl->nendpoints += groups[i].n;
    }
    return true;
}

/* outlier_detection accepts Envoy's JSON names of the _5xx fields too ("consecutive5xx"
 * snake-cases to "consecutive5xx", not "consecutive_5xx"). */
static bool od_alias(bs *b, json_t *o, const char *json_name, const char *field)
{
    json_t *v = json_object_get(o, json_name);
    if (!v)
        return true;
    if (json_object_get(o, field))
        return bs_fail_at(b, json_name,
                          "duplicate field (given in snake_case and in lowerCamelCase)");
    json_incref(v);
    json_object_del(o, json_name);
    return json_object_set_new(o, field, v) == 0 || bs_fail(b, "out of memory");
}

/* The success-rate and failure-percentage detectors are not implemented: their settings are
 * rejected, except an enforcing_* of 0, which disables them (Istio always sends
 * enforcing_success_rate: 0). */
static bool od_unsupported(bs *b, json_t *o)
{
    static const char *const fields[] = {"success_rate_minimum_hosts",
                                         "success_rate_request_volume",
                                         "success_rate_stdev_factor",
                                         "failure_percentage_threshold",
                                         "failure_percentage_minimum_hosts",
                                         "failure_percentage_request_volume",
                                         "monitors",
                                         NULL};
    static const char *const enforcing[] = {
        "enforcing_success_rate", "enforcing_local_origin_success_rate",
        "enforcing_failure_percentage", "enforcing_failure_percentage_local_origin", NULL};
    for (int i = 0; fields[i]; i++)
        if (bs_get(o, fields[i]))
            return bs_fail_at(b, fields[i],
                              "unsupported field (only the consecutive_* outlier detectors "
                              "are implemented)");
    for (int i = 0; enforcing[i]; i++) {
        uint32_t v = 0;
        if (!bs_u32(b, o, enforcing[i], &v))
            return false;
        if (v != 0)
            return bs_fail_at(b, enforcing[i],
                              "unsupported value (only 0 is accepted: the success-rate and "
                              "failure-percentage outlier detectors are not implemented)");
    }
    return true;
}

static bool od_percent(bs *b, json_t *o, const char *k, uint32_t *out)
{
    if (!bs_u32(b, o, k, out))
        return false;
    return *out <= 100 || bs_fail_at(b, k, "value must be less than or equal to 100");
}

static bool od_positive(bs *b, json_t *o, const char *k, uint64_t *ms, bool *present)
{
    if (!bs_dur(b, o, k, ms, present))
        return false;
    return !bs_get(o, k) || *ms > 0 || bs_fail_at(b, k, "value must be greater than 0s");
}

static bool od_read(bs *b, json_t *o, wp_outlier_config *od)
{
    bool has_max = false, uneject = true;
    if (!bs_u32(b, o, "consecutive_5xx", &od->consecutive_5xx) ||
        !bs_u32(b, o, "consecutive_gateway_failure", &od->consecutive_gateway_failure) ||
        !bs_u32(b, o, "consecutive_local_origin_failure", &od->consecutive_local_origin_failure) ||
        !od_percent(b, o, "enforcing_consecutive_5xx", &od->enforcing_consecutive_5xx) ||
        !od_percent(b, o, "enforcing_consecutive_gateway_failure",
                    &od->enforcing_consecutive_gateway_failure) ||
        !od_percent(b, o, "enforcing_consecutive_local_origin_failure",
                    &od->enforcing_consecutive_local_origin_failure) ||
        !od_percent(b, o, "max_ejection_percent", &od->max_ejection_percent) ||
        !od_positive(b, o, "interval", &od->interval_ms, NULL) ||
        !od_positive(b, o, "base_ejection_time", &od->base_ejection_time_ms, NULL) ||
        !od_positive(b, o, "max_ejection_time", &od->max_ejection_time_ms, &has_max) ||
        !bs_dur(b, o, "max_ejection_time_jitter", &od->max_ejection_time_jitter_ms, NULL) ||
        !bs_bool(b, o, "split_external_local_origin_errors",
                 &od->split_external_local_origin_errors) ||
        !bs_bool(b, o, "always_eject_one_host", &od->always_eject_one_host) ||
        !bs_bool(b, o, "successful_active_health_check_uneject_host", &uneject))
        return false;
    if (!has_max && od->max_ejection_time_ms < od->base_ejection_time_ms)
        od->max_ejection_time_ms = od->base_ejection_time_ms;
    if (od->max_ejection_time_ms < od->base_ejection_time_ms)
        return bs_fail(b, "outlier detector's max_ejection_time cannot be smaller than "
                          "base_ejection_time");
    return true;
}

/* Cluster.outlier_detection (outlier.h); defaults as Envoy's DetectorConfig. */
static bool dec_outlier_detection(bs *b, json_t *o, void *arg)
{
    wp_outlier_config *od = &((wp_cluster *)arg)->outlier;
    *od = (wp_outlier_config){.enabled = true,
                              .consecutive_5xx = 5,
                              .consecutive_gateway_failure = 5,
                              .consecutive_local_origin_failure = 5,
                              .enforcing_consecutive_5xx = 100,
                              .enforcing_consecutive_local_origin_failure = 100,
                              .max_ejection_percent = 10,
                              .interval_ms = 10000,
                              .base_ejection_time_ms = 30000,
                              .max_ejection_time_ms = 300000};
    if (!od_alias(b, o, "consecutive5xx", "consecutive_5xx") ||
        !od_alias(b, o, "enforcing_consecutive5xx", "enforcing_consecutive_5xx") ||
        !od_unsupported(b, o) ||
        !bs_fields(b, o,
                   "consecutive_5xx interval base_ejection_time max_ejection_percent "
                   "enforcing_consecutive_5xx enforcing_success_rate consecutive_gateway_failure "
                   "enforcing_consecutive_gateway_failure split_external_local_origin_errors "
                   "consecutive_local_origin_failure enforcing_consecutive_local_origin_failure "
                   "enforcing_local_origin_success_rate enforcing_failure_percentage "
                   "enforcing_failure_percentage_local_origin max_ejection_time "
                   "max_ejection_time_jitter successful_active_health_check_uneject_host "
                   "always_eject_one_host"))
        return false;
    return od_read(b, o, od);
}

/* Cluster.common_lb_config: only healthy_panic_threshold (a Percent, rounded as Envoy's
 * PROTOBUF_PERCENT_TO_ROUNDED_INTEGER_OR_DEFAULT). */
static bool dec_common_lb_config(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    json_t *t = bs_get(o, "healthy_panic_threshold");
    if (!bs_fields(b, o, "healthy_panic_threshold"))
        return false;
    if (!t)
        return true;
    size_t m = bs_push(b, "healthy_panic_threshold");
    json_t *v = json_is_object(t) ? bs_get(t, "value") : NULL;
    bool ok =
        json_is_object(t) ? bs_fields(b, t, "value") : bs_fail(b, "wrong type: expected an object");
    if (ok && v && !json_is_number(v))
        ok = bs_fail_at(b, "value", "wrong type: expected a number");
    double pct = v ? json_number_value(v) : 0.0; /* Percent{} is 0 */
    if (ok && (pct < 0.0 || pct > 100.0))
        ok = bs_fail_at(b, "value", "value must be inside range [0, 100]");
    bs_pop(b, m);
    cl->healthy_panic_threshold = (uint32_t)(pct + 0.5);
    return ok;
}

/* Cluster.transport_socket_matches[i] {name, match, transport_socket}. */
static bool dec_tsm(bs *b, json_t *o, void *arg)
{
    wp_tsm *t = arg;
    json_t *match = bs_get(o, "match");
    t->name = "";
    if (!bs_fields(b, o, "name match transport_socket") || !bs_str(b, o, "name", &t->name))
        return false;
    if (match && !json_is_object(match))
        return bs_wrong_type(b, "match", "an object");
    if (!bs_get(o, "transport_socket"))
        return bs_fail_at(b, "transport_socket", "missing required field");
    return bs_transport_socket(b, o, false, &t->tls);
}

static bool dec_tsms(bs *b, json_t *o, wp_cluster *cl)
{
    void *arr = NULL;
    size_t n = 0;
    b->tsm_json = bs_get(o, "transport_socket_matches");
    if (!bs_each(b, o, "transport_socket_matches", sizeof(wp_tsm), &arr, &n, dec_tsm))
        return false;
    cl->tsms = arr;
    cl->ntsms = n;
    cl->has_tls = cl->tls != NULL;
    for (size_t i = 0; i < n; i++)
        cl->has_tls = cl->has_tls || cl->tsms[i].tls;
    return true;
}

/* Envoy's debug line for each host's transport socket (see the top). */
static void log_tsms(const wp_cluster *cl)
{
    if (!wf_log_enabled(WF_LC_upstream, WF_LOG_DEBUG))
        return;
    for (size_t i = 0; i < cl->nendpoints; i++) {
        const wp_endpoint *e = &cl->endpoints[i];
        WF_LOG(WF_LC_upstream, WF_LOG_DEBUG,
               "transport socket match, socket %s selected for host with address %s",
               e->tsm ? cl->tsms[e->tsm - 1].name : "default", e->addr.text);
    }
}

/* The deprecated cluster-level http2_protocol_options (Envoy v3 Cluster field 14): an HTTP/2
 * cluster unless typed_extension_protocol_options chose already. */
static bool legacy_h2(bs *b, json_t *o, wp_cluster *cl)
{
    if (!bs_get(o, "http2_protocol_options"))
        return true;
    if (cl->proto != WP_UP_HTTP1)
        return bs_fail_at(
            b, "http2_protocol_options",
            "the cluster's typed_extension_protocol_options already set the protocol");
    cl->proto = WP_UP_HTTP2;
    return bs_sub(b, o, "http2_protocol_options", bs_h2_options, &cl->h2);
}

/* ORIGINAL_DST goes with lb_policy CLUSTER_PROVIDED and no endpoints (Envoy's rules); it is
 * kept as a STATIC cluster without endpoints marked original_dst (config.h). */
static bool check_original_dst(bs *b, json_t *o, wp_cluster *cl, int type, int lb)
{
    bool odst = type == 3, provided = lb == 3;
    if (provided && !odst)
        return bs_fail_at(b, "lb_policy",
                          "cluster: LB policy CLUSTER_PROVIDED is not valid for Cluster type "
                          "other than ORIGINAL_DST");
    if (!odst)
        return true;
    if (!provided && bs_get(o, "lb_policy"))
        return bs_fail_at(b, "lb_policy",
                          "cluster: cluster type 'original_dst' may only be used with LB type "
                          "'CLUSTER_PROVIDED'");
    if (bs_get(o, "load_assignment"))
        return bs_fail_at(b, "load_assignment",
                          "ORIGINAL_DST clusters must have no load assignment configured");
    cl->original_dst = true;
    return true;
}

/* upstream_bind_config (core.v3.BindConfig): source_address only. */
static bool dec_bind_config(bs *b, json_t *o, void *arg)
{
    wp_cluster *cl = arg;
    if (!bs_fields(b, o, "source_address freebind socket_options extra_source_addresses"))
        return false;
    if (bs_get(o, "freebind") || bs_get(o, "socket_options") || bs_get(o, "extra_source_addresses"))
        return bs_fail(b, "only source_address is supported by weft-proxy");
    json_t *sa = bs_get(o, "source_address");
    if (!sa)
        return bs_fail(b, "source_address is required");
    const char *ip = json_string_value(bs_get(sa, "address"));
    unsigned char buf[sizeof(struct in6_addr)];
    if (ip && inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1) {
        size_t m = bs_push(b, "source_address");
        bs_fail_atf(b, "address", "malformed IP address: %s", ip);
        bs_pop(b, m);
        return false;
    }
    wp_addr *a = bs_alloc(b, sizeof(*a));
    if (!a)
        return false;
    /* decoded as an Address {socket_address} */
    json_t *o2 = json_pack("{s:{s:O}}", "address", "socket_address", sa);
    if (!o2)
        return bs_fail(b, "out of memory");
    bool ok = bs_req_address(b, o2, a, NULL, NULL, "malformed IP address: %s");
    json_decref(o2);
    if (ok)
        cl->bind_source = a;
    return ok;
}

bool bs_dec_cluster(bs *b, json_t *o, void *arg)
{
    static const char *const types[] = {"STATIC", "STRICT_DNS", "LOGICAL_DNS", "ORIGINAL_DST",
                                        NULL};
    static const char *const lbs[] = {"ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "CLUSTER_PROVIDED",
                                      NULL};
    static const char *const families[] = {"AUTO", "V4_ONLY", "V4_PREFERRED", NULL};
    wp_cluster *cl = arg;
    int type = 0, lb = 0, family = 0;
    cl->connect_timeout_ms = 5000;
    cl->cb = (wp_thresholds){1024, 1024, 1024, 3};
    cl->idle_timeout_ms = 3600000;
    cl->per_connection_buffer_limit_bytes = WP_DEFAULT_BUFFER_LIMIT;
    cl->dns_refresh_rate_ms = 5000;
    cl->h2 = wp_h2_options_default();
    b->cur_cluster = cl;
    if (!bs_fields(
            b, o,
            "@type name alt_stat_name type lb_policy connect_timeout "
            "per_connection_buffer_limit_bytes circuit_breakers common_http_protocol_options "
            "typed_extension_protocol_options max_requests_per_connection dns_refresh_rate "
            "dns_lookup_family load_assignment outlier_detection common_lb_config metadata "
            "transport_socket transport_socket_matches http2_protocol_options "
            "upstream_bind_config filters") ||
        !bs_opt_type(b, o, WP_CLUSTER_TYPE) || !bs_req_str(b, o, "name", &cl->name) ||
        !bs_str(b, o, "alt_stat_name", &cl->alt_stat_name) ||
        !bs_enum(b, o, "type", types, &type) || !bs_enum(b, o, "lb_policy", lbs, &lb) ||
        !bs_enum(b, o, "dns_lookup_family", families, &family) ||
        !bs_dur(b, o, "connect_timeout", &cl->connect_timeout_ms, NULL) ||
        !bs_u32(b, o, "per_connection_buffer_limit_bytes",
                &cl->per_connection_buffer_limit_bytes) ||
        !bs_u32(b, o, "max_requests_per_connection", &cl->max_requests_per_connection) ||
        !bs_sub(b, o, "common_http_protocol_options", dec_upstream_common, cl) ||
        !bs_sub(b, o, "typed_extension_protocol_options", dec_protocol_options, cl) ||
        !legacy_h2(b, o, cl) || !bs_dur(b, o, "dns_refresh_rate", &cl->dns_refresh_rate_ms, NULL))
        return false;
    if (!check_original_dst(b, o, cl, type, lb) ||
        !bs_sub(b, o, "upstream_bind_config", dec_bind_config, cl))
        return false;
    if (!bs_transport_socket(b, o, false, &cl->tls) || !dec_tsms(b, o, cl) ||
        !bs_cluster_filters(b, o, cl))
        return false;
    cl->type = cl->original_dst ? WP_CLUSTER_STATIC : (wp_cluster_type)type;
    cl->dns_family = (wp_dns_family)family;
    cl->lb_policy = cl->original_dst ? WP_LB_ROUND_ROBIN : (wp_lb_policy)lb;
    if (cl->connect_timeout_ms == 0)
        return bs_fail_at(b, "connect_timeout", "value must be greater than 0s");
    if (cl->dns_refresh_rate_ms < 1)
        return bs_fail_at(b, "dns_refresh_rate", "value must be greater than 1ms");
    b->ip_msg = cl->type == WP_CLUSTER_STATIC ? STATIC_IP_MSG : NULL;
    cl->healthy_panic_threshold = 50;
    bool ok = bs_sub(b, o, "circuit_breakers", dec_circuit_breakers, cl) &&
              bs_sub(b, o, "outlier_detection", dec_outlier_detection, cl) &&
              bs_sub(b, o, "common_lb_config", dec_common_lb_config, cl) &&
              bs_cluster_metadata(b, o, cl) &&
              bs_sub(b, o, "load_assignment", dec_load_assignment, cl);
    b->tsm_json = NULL;
    if (ok)
        log_tsms(cl);
    return ok;
}

/* Indexes the clusters by name (wp_config_find_cluster) and rejects duplicates, in
 * linear time: a mesh has thousands of clusters. */
bool bs_check_clusters(bs *b)
{
    wp_config *c = b->c;
    if (!(c->cluster_names = wf_strmap_new(&c->arena)))
        return bs_fail(b, "out of memory");
    for (size_t i = 0; i < c->nclusters; i++) {
        c->clusters[i].index = (int)i;
        void **slot = wf_strmap_slot(c->cluster_names, c->clusters[i].name, true);
        if (!slot)
            return bs_fail(b, "out of memory");
        if (*slot) {
            bs_push(b, "clusters");
            bs_push_i(b, i);
            bs_push(b, "name");
            return bs_fail(b, "cluster manager: duplicate cluster '%s'", c->clusters[i].name);
        }
        *slot = (void *)(intptr_t)(i + 1);
    }
    return true;
}
