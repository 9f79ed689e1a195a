/*
 * bootstrap_istio.c - decode Istio's HTTP filters (istio.stats: stats.PluginConfig,
 * istio.metadata_exchange: io.istio.http.peer_metadata.Config) and cluster metadata
 * (filter_metadata.istio.services) for the Istio standard metrics; behaviour and the
 * supported subset are described in istio_stats.h.
 *
 * Istio writes both filters' typed_config as a udpa.type.v1.TypedStruct {type_url, value}
 * (pilot/pkg/xds/filters/filters.go, pilot/pkg/model/telemetry.go); the message itself with
 * its own "@type" is accepted too. Fields weft cannot honour are rejected by JSON path.
 */
#include <stdio.h>
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/filters/network/metadata_exchange.h"

#define TYPED_STRUCT_V1 "type.googleapis.com/udpa.type.v1.TypedStruct"
#define TYPED_STRUCT_V3 "type.googleapis.com/xds.type.v3.TypedStruct"

/* The local workload from node.metadata, built once per load and shared by the filters. */
static const wp_istio_local *local_info(bs *b)
{
    if (b->istio_local)
        return b->istio_local;
    wp_istio_local *l = bs_alloc(b, sizeof *l);
    if (!l)
        return NULL;
    json_t *md = b->c->node ? json_object_get(b->c->node, "metadata") : NULL;
    wp_istio_workload_from_node(md, &l->w);
    json_t *v = md ? json_object_get(md, "ISTIO_VERSION") : NULL;
    l->istio_version = json_is_string(v) ? json_string_value(v) : NULL;
    l->node_id = b->c->node_id ? b->c->node_id : "";
    wf_strbuf mx = WF_STRBUF_INIT;
    wp_istio_peer_value(&l->w, &mx);
    l->mx_value = wf_strbuf_failed(&mx) ? NULL : bs_strdup(b, wf_strbuf_cstr(&mx));
    wf_strbuf_free(&mx);
    if (!l->mx_value)
        return bs_fail(b, "out of memory"), NULL;
    b->istio_local = l;
    return l;
}

/* The message of typed_config tc: tc itself ("@type" want) or the value of a TypedStruct whose
 * type_url is want. *path_key receives "value" for a TypedStruct (NULL otherwise). */
static json_t *unwrap(bs *b, json_t *tc, const char *want, const char **path_key)
{
    *path_key = NULL;
    json_t *t = bs_get(tc, "@type");
    if (json_is_string(t) && (strcmp(json_string_value(t), TYPED_STRUCT_V1) == 0 ||
                              strcmp(json_string_value(t), TYPED_STRUCT_V3) == 0)) {
        const char *url = NULL;
        if (!bs_fields(b, tc, "@type type_url value") || !bs_req_str(b, tc, "type_url", &url))
            return NULL;
        if (strcmp(url, want) != 0) {
            bs_fail_atf(b, "type_url", "unsupported value \"%s\" (expected \"%s\")", url, want);
            return NULL;
        }
        json_t *v = bs_get(tc, "value");
        if (v && !json_is_object(v))
            return bs_fail_at(b, "value", "wrong type: expected an object"), NULL;
        *path_key = "value";
        return v; /* NULL (absent value): the empty message */
    }
    return bs_type_is(b, tc, want) ? tc : NULL;
}

/* ------------------------------------------------------------------ istio.stats */

static bool reject_nonempty(bs *b, json_t *o, const char *k, const char *why)
{
    json_t *v = bs_get(o, k);
    if (!v || (json_is_array(v) && json_array_size(v) == 0))
        return true;
    return bs_fail_at(b, k, why);
}

static bool dec_plugin_config(bs *b, json_t *o, wp_istio_stats_filter *f, bool wrapped)
{
    static const char *const reporters[] = {"UNSPECIFIED", "SERVER_GATEWAY", NULL};
    static const char *const rotation[] = {"rotation_interval", "graceful_deletion_interval",
                                           "rescoping_duration", "scope_grace_period_duration",
                                           NULL};
    int reporter = 0;
    const char *fields = wrapped ? "disable_host_header_fallback reporter tcp_reporting_duration "
                                   "metrics definitions rotation_interval "
                                   "graceful_deletion_interval rescoping_duration "
                                   "scope_grace_period_duration"
                                 : "@type disable_host_header_fallback reporter "
                                   "tcp_reporting_duration metrics definitions rotation_interval "
                                   "graceful_deletion_interval rescoping_duration "
                                   "scope_grace_period_duration";
    if (!bs_fields(b, o, fields) ||
        !bs_bool(b, o, "disable_host_header_fallback", &f->disable_host_header_fallback) ||
        !bs_enum(b, o, "reporter", reporters, &reporter) ||
        !bs_dur(b, o, "tcp_reporting_duration", &f->tcp_reporting_ms, NULL) ||
        !reject_nonempty(b, o, "metrics",
                         "metric overrides (Telemetry API metrics) are not supported by "
                         "weft-proxy") ||
        !reject_nonempty(b, o, "definitions",
                         "custom metric definitions are not supported by weft-proxy"))
        return false;
    for (int i = 0; rotation[i]; i++) {
        if (bs_get(o, rotation[i]))
            return bs_fail_at(b, rotation[i],
                              "stats scope rotation is not supported by weft-proxy");
    }
    if (reporter == 1)
        return bs_fail_at(b, "reporter",
                          "SERVER_GATEWAY (ambient waypoint) is not supported by weft-proxy; leave "
                          "it UNSPECIFIED to report by the listener's traffic_direction");
    f->reporter = b->direction == 1 ? WP_ISTIO_REPORTER_DESTINATION : WP_ISTIO_REPORTER_SOURCE;
    return true;
}

/* A new istio.stats config from typed_config tc (NULL = the empty PluginConfig). */
static wp_istio_stats_filter *dec_stats_filter(bs *b, json_t *tc)
{
    wp_istio_stats_filter *f = bs_alloc(b, sizeof *f);
    if (!f || !(f->local = local_info(b)))
        return NULL;
    f->reporter = b->direction == 1 ? WP_ISTIO_REPORTER_DESTINATION : WP_ISTIO_REPORTER_SOURCE;
    f->tcp_reporting_ms = 5000; /* Istio's tcpReportingDuration default */
    if (tc) {
        size_t m = bs_push(b, "typed_config");
        const char *key;
        json_t *msg = unwrap(b, tc, WP_ISTIO_STATS_TYPE, &key);
        size_t mk = key ? bs_push(b, key) : b->plen;
        bool ok = !b->failed && (!msg || dec_plugin_config(b, msg, f, key != NULL));
        bs_pop(b, mk);
        bs_pop(b, m);
        if (!ok)
            return NULL;
    }
    return f;
}

bool bs_istio_stats_filter(bs *b, json_t *tc)
{
    if (b->istio_stats)
        return bs_fail_at(b, "name", "only one " WP_ISTIO_STATS_NAME " filter is supported");
    wp_istio_stats_filter *f = dec_stats_filter(b, tc);
    if (!f)
        return false;
    b->istio_stats = f;
    return true;
}

bool bs_istio_network_stats(bs *b, json_t *tc, struct wp_istio_stats_filter **out)
{
    return (*out = dec_stats_filter(b, tc)) != NULL;
}

/* ------------------------------------------------------------------ istio.metadata_exchange */

/* An IstioHeaders message. */
static bool dec_istio_headers(bs *b, json_t *o, void *arg)
{
    (void)arg;
    bool skip = false;
    if (!bs_fields(b, o, "skip_external_clusters") ||
        !bs_bool(b, o, "skip_external_clusters", &skip))
        return false;
    return !skip || bs_fail_at(b, "skip_external_clusters",
                               "skipping external clusters is not supported by weft-proxy");
}

static bool dec_empty(bs *b, json_t *o, void *arg)
{
    (void)arg;
    return bs_fields(b, o, "");
}

/* One DiscoveryMethod / PropagationMethod; *arg is set to 'h' for istio_headers. */
static bool dec_method(bs *b, json_t *o, void *arg, bool discovery)
{
    char *kind = arg;
    const char *fields = discovery ? "baggage workload_discovery istio_headers" : "istio_headers";
    if (!bs_fields(b, o, fields))
        return false;
    if (json_object_size(o) != 1)
        return bs_fail(b, "exactly one method is required");
    if (bs_get(o, "baggage"))
        return bs_fail_at(b, "baggage", "the baggage method is not supported by weft-proxy");
    if (bs_get(o, "istio_headers"))
        *kind = 'h';
    return bs_sub(b, o, "istio_headers", dec_istio_headers, NULL) &&
           bs_sub(b, o, "workload_discovery", dec_empty, NULL);
}

static bool dec_discovery(bs *b, json_t *o, void *arg)
{
    return dec_method(b, o, arg, true);
}

static bool dec_propagation(bs *b, json_t *o, void *arg)
{
    return dec_method(b, o, arg, false);
}

/* o[k]: a method list; *on = one of them is istio_headers. */
static bool dec_methods(bs *b, json_t *o, const char *k, bool discovery, bool *on)
{
    void *arr = NULL;
    size_t n = 0;
    if (!bs_each(b, o, k, 1, &arr, &n, discovery ? dec_discovery : dec_propagation))
        return false;
    for (size_t i = 0; i < n; i++)
        *on |= ((char *)arr)[i] == 'h';
    return true;
}

static const char *MX_NAMES[] = {WP_MX_HEADER_ID, WP_MX_HEADER};

/* The exchange's header operations (istio_stats.h). */
static bool build_ops(bs *b, wp_istio_mx_filter *f)
{
    const wp_istio_local *l = f->local;
    wp_header_add *adds = bs_alloc(b, 10 * sizeof *adds);
    if (!adds)
        return false;
    wp_header_add id = {WP_MX_HEADER_ID, sizeof(WP_MX_HEADER_ID) - 1, l->node_id,
                        strlen(l->node_id), WP_OVERWRITE_IF_EXISTS_OR_ADD};
    wp_header_add md = {WP_MX_HEADER, sizeof(WP_MX_HEADER) - 1, l->mx_value, strlen(l->mx_value),
                        WP_OVERWRITE_IF_EXISTS_OR_ADD};
    if (f->downstream_discovery) {
        f->req.remove = MX_NAMES;
        f->req.nremove = 2;
    }
    if (f->upstream_propagation) {
        adds[0] = id;
        adds[1] = md;
        f->req.add = adds;
        f->req.nadd = 2;
    }
    for (int k = 0; k < 4; k++) {
        wp_header_ops *o = &f->resp[k];
        if (f->upstream_discovery) {
            o->remove = MX_NAMES;
            o->nremove = 2;
        }
        o->add = adds + 2 + 2 * k;
        if (f->downstream_propagation && (k & 1))
            o->add[o->nadd++] = id;
        if (f->downstream_propagation && (k & 2))
            o->add[o->nadd++] = md;
    }
    return true;
}

static bool dec_peer_metadata_config(bs *b, json_t *o, wp_istio_mx_filter *f, bool wrapped)
{
    bool shared = false;
    const char *fields =
        wrapped ? "downstream_discovery upstream_discovery downstream_propagation "
                  "upstream_propagation shared_with_upstream additional_labels"
                : "@type downstream_discovery upstream_discovery downstream_propagation "
                  "upstream_propagation shared_with_upstream additional_labels";
    return bs_fields(b, o, fields) &&
           dec_methods(b, o, "downstream_discovery", true, &f->downstream_discovery) &&
           dec_methods(b, o, "upstream_discovery", true, &f->upstream_discovery) &&
           dec_methods(b, o, "downstream_propagation", false, &f->downstream_propagation) &&
           dec_methods(b, o, "upstream_propagation", false, &f->upstream_propagation) &&
           bs_bool(b, o, "shared_with_upstream", &shared) &&
           reject_nonempty(b, o, "additional_labels",
                           "additional peer labels are not supported by weft-proxy");
}

bool bs_istio_mx_filter(bs *b, json_t *tc)
{
    if (b->istio_mx)
        return bs_fail_at(b, "name", "only one " WP_ISTIO_MX_NAME " filter is supported");
    wp_istio_mx_filter *f = bs_alloc(b, sizeof *f);
    if (!f || !(f->local = local_info(b)))
        return false;
    if (tc) {
        size_t m = bs_push(b, "typed_config");
        const char *key;
        json_t *msg = unwrap(b, tc, WP_ISTIO_MX_TYPE, &key);
        size_t mk = key ? bs_push(b, key) : b->plen;
        bool ok = !b->failed && (!msg || dec_peer_metadata_config(b, msg, f, key != NULL));
        bs_pop(b, mk);
        bs_pop(b, m);
        if (!ok)
            return false;
    }
    if (!build_ops(b, f))
        return false;
    b->istio_mx = f;
    return true;
}

/* ------------------------------------------------------------------ cluster metadata */

/* istio.services[0] {host, name, namespace}: strings when present. */
static bool dec_istio_service(bs *b, json_t *svc, wp_cluster *cl)
{
    static const char *const keys[] = {"host", "name", "namespace"};
    const char **out[] = {&cl->istio_svc_host, &cl->istio_svc_name, &cl->istio_svc_namespace};
    if (!json_is_object(svc))
        return bs_fail(b, "wrong type: expected an object");
    for (int i = 0; i < 3; i++) {
        json_t *v = json_object_get(svc, keys[i]);
        if (v && !json_is_string(v))
            return bs_fail_at(b, keys[i], "wrong type: expected a string");
        if (v && !(*out[i] = bs_strdup(b, json_string_value(v))))
            return false;
    }
    cl->istio_services = true;
    return true;
}

bool bs_cluster_metadata(bs *b, json_t *o, wp_cluster *cl)
{
    json_t *md = bs_get(o, "metadata");
    if (!md)
        return true;
    size_t m = bs_push(b, "metadata");
    bool ok = bs_fields(b, md, "filter_metadata filterMetadata");
    json_t *fm = bs_get(md, "filter_metadata");
    const char *fk = "filter_metadata";
    if (!fm) {
        fm = bs_get(md, "filterMetadata");
        fk = "filterMetadata";
    }
    if (ok && fm && !json_is_object(fm))
        ok = bs_fail_at(b, fk, "wrong type: expected an object");
    json_t *istio = ok && fm ? bs_get(fm, "istio") : NULL;
    json_t *svcs = json_is_object(istio) ? bs_get(istio, "services") : NULL;
    if (ok && svcs) {
        size_t ms = bs_push(b, fk);
        bs_push(b, "istio");
        bs_push(b, "services");
        if (!json_is_array(svcs))
            ok = bs_fail(b, "wrong type: expected an array");
        else if (json_array_size(svcs) > 0) {
            bs_push_i(b, 0);
            ok = dec_istio_service(b, json_array_get(svcs, 0), cl);
        }
        bs_pop(b, ms);
    }
    bs_pop(b, m);
    return ok;
}

/* ------------------------------------------------------------------ TCP metadata exchange */

/* A MetadataExchange message (protocol; enable_discovery and additional_labels are accepted:
 * weft has no workload discovery, so without an exchange the labels stay unknown). */
static bool dec_tcp_mx(bs *b, json_t *msg, wp_tcp_mx_config *c)
{
    if (msg && (!bs_fields(b, msg, "@type protocol enable_discovery additional_labels") ||
                !bs_str(b, msg, "protocol", &c->protocol)))
        return false;
    if (!c->protocol || !*c->protocol)
        return bs_fail_at(b, "protocol", "value length must be at least 1 characters");
    return true;
}

bool bs_tcp_mx_config(bs *b, json_t *tc, const wp_tcp_mx_config **out)
{
    if (!tc)
        return bs_fail_at(b, "typed_config", "missing required field");
    wp_tcp_mx_config *c = bs_alloc(b, sizeof *c);
    const wp_istio_local *l = local_info(b);
    if (!c || !l)
        return false;
    size_t m = bs_push(b, "typed_config");
    const char *key = NULL;
    json_t *msg = json_is_object(tc) ? unwrap(b, tc, WP_TCP_MX_TYPE, &key)
                                     : (bs_fail(b, "wrong type: expected an object"), NULL);
    size_t mk = key ? bs_push(b, key) : b->plen;
    bool ok = !b->failed && dec_tcp_mx(b, msg, c);
    bs_pop(b, mk);
    bs_pop(b, m);
    if (!ok)
        return false;
    wf_strbuf pre = WF_STRBUF_INIT;
    wp_tcp_mx_encode(&l->w, l->node_id, &pre);
    uint8_t *bytes = wf_strbuf_failed(&pre) ? NULL : bs_alloc(b, pre.len);
    if (bytes)
        memcpy(bytes, pre.data, pre.len);
    c->preamble = bytes;
    c->preamble_len = bytes ? pre.len : 0;
    wf_strbuf_free(&pre);
    if (!bytes)
        return bs_fail(b, "out of memory");
    *out = c;
    return true;
}

/* One element of a cluster's filters: its upstream istio.metadata_exchange. */
static bool dec_cluster_filter(bs *b, json_t *f, wp_cluster *cl)
{
    const char *name = NULL;
    if (!json_is_object(f))
        return bs_fail(b, "wrong type: expected an object");
    if (!bs_fields(b, f, "name typed_config") || !bs_req_str(b, f, "name", &name))
        return false;
    if (strcmp(name, WP_TCP_MX_NAME) != 0 && strcmp(name, WP_TCP_MX_UPSTREAM_NAME) != 0)
        return bs_fail_atf(b, "name",
                           "unsupported upstream network filter \"%s\" (supported: %s, %s)", name,
                           WP_TCP_MX_NAME, WP_TCP_MX_UPSTREAM_NAME);
    if (cl->mx)
        return bs_fail_at(b, "name", "only one " WP_TCP_MX_NAME " filter is supported");
    return bs_tcp_mx_config(b, bs_get(f, "typed_config"), &cl->mx);
}

bool bs_cluster_filters(bs *b, json_t *o, wp_cluster *cl)
{
    json_t *v = bs_get(o, "filters");
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, "filters", "an array");
    size_t m = bs_push(b, "filters");
    bool ok = true;
    for (size_t i = 0; ok && i < json_array_size(v); i++) {
        size_t mi = bs_push_i(b, i);
        ok = dec_cluster_filter(b, json_array_get(v, i), cl);
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    return ok;
}
