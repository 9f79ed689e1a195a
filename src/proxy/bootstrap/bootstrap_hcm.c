/*
 * bootstrap_hcm.c - the HTTP connection manager of a filter chain
 * (envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager: its
 * options, http_filters, inline route_config, access_log) and the access loggers it shares
 * with admin (envoy.access_loggers.file / stdout / stderr). Split from bootstrap.c so that the
 * decoders call down only: bootstrap.c -> bootstrap_listener.c -> here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proxy/access_log/alog_emit.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/http/fault.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/stats/stats.h"

#define HCM_TYPE                                                                                   \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define ROUTER_NAME WP_ROUTER_FILTER_NAME
#define ROUTER_TYPE "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
#define CORS_NAME   "envoy.filters.http.cors"
#define CORS_TYPE   "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"
/* ---------- access logs ---------- */

/* l->format_at: "<source>: <JSON path>" of the format field key (under the current path), so
 * that a format that does not compile (gen.c) is reported as bs_fail reports errors. */
static void format_at(bs *b, wp_access_log *l, const char *key)
{
    size_t m = bs_push(b, key);
    char at[sizeof(b->path) + 1024];
    snprintf(at, sizeof at, "%s: %s", b->src, b->path);
    l->format_at = bs_strdup(b, at);
    bs_pop(b, m);
}

/* A file log's path must be one the proxy can open (Envoy fails the load otherwise); checked
 * here, without creating the file, so the error names the JSON path. */
static bool check_log_path(bs *b, const char *path)
{
    wf_strbuf why = WF_STRBUF_INIT;
    bool ok = wp_alog_path_check(path, &why) == 0;
    if (!ok)
        bs_fail_at(b, "path", wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    return ok;
}

static bool dec_log_format(bs *b, json_t *f, void *arg)
{
    wp_access_log *l = arg;
    if (!bs_fields(b, f, "text_format text_format_source json_format"))
        return false;
    if (json_object_size(f) != 1)
        return bs_fail(b,
                       "exactly one of text_format, text_format_source, json_format is required");
    json_t *src = bs_get(f, "text_format_source");
    if (src) {
        size_t m = bs_push(b, "text_format_source");
        bool ok = bs_fields(b, src, "inline_string") &&
                  bs_req_str(b, src, "inline_string", &l->text_format);
        format_at(b, l, "inline_string");
        bs_pop(b, m);
        return ok;
    }
    json_t *j = bs_get(f, "json_format");
    if (j) {
        if (!json_is_object(j))
            return bs_wrong_type(b, "json_format", "an object");
        l->kind = WP_LOG_JSON;
        l->json_format = j; /* borrowed from the snapshot's bootstrap */
        format_at(b, l, "json_format");
        return true;
    }
    format_at(b, l, "text_format");
    return bs_str(b, f, "text_format", &l->text_format);
}

static bool dec_logger_config(bs *b, json_t *tc, wp_access_log *l, bool file)
{
    const char *fields = file ? "@type path log_format format json_format" : "@type log_format";
    if (!bs_fields(b, tc, fields))
        return false;
    int n = !!bs_get(tc, "log_format") + !!bs_get(tc, "format") + !!bs_get(tc, "json_format");
    if (n > 1)
        return bs_fail(b, "only one of log_format, format, json_format may be set");
    if (file && (!bs_req_str(b, tc, "path", &l->path) || !check_log_path(b, l->path)))
        return false;
    json_t *j = bs_get(tc, "json_format");
    if (j) {
        if (!json_is_object(j))
            return bs_wrong_type(b, "json_format", "an object");
        l->kind = WP_LOG_JSON;
        l->json_format = j;
        format_at(b, l, "json_format");
    } else if (bs_get(tc, "format")) {
        format_at(b, l, "format");
    }
    if (!bs_str(b, tc, "format", &l->text_format) ||
        !bs_sub(b, tc, "log_format", dec_log_format, l))
        return false;
    if (l->text_format && !*l->text_format)
        l->text_format = NULL; /* empty = Envoy's default format */
    return true;
}

/* AccessLogFilter.response_flag_filter {flags: [short names]} (Envoy's ResponseFlagFilter:
 * the proto allows only the known flags; an empty list means any flag). */
static bool dec_flag_filter(bs *b, json_t *o, void *arg)
{
    wp_access_log *l = arg;
    if (!bs_fields(b, o, "flags"))
        return false;
    l->has_flag_filter = true;
    json_t *v = bs_get(o, "flags");
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, "flags", "an array of strings");
    size_t m = bs_push(b, "flags"), i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        size_t mi = bs_push_i(b, i);
        int f = json_is_string(e) ? wp_alog_flag_by_short_name(json_string_value(e)) : -1;
        if (f < 0)
            return bs_fail(b, json_is_string(e) ? "value must be in the list of Envoy's response "
                                                  "flags (LH, UH, UT, ..., NR, ..., UDO)"
                                                : "wrong type: expected a string");
        l->flag_filter |= 1u << f;
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    return true;
}

/* AccessLog.filter: exactly one filter kind; weft supports response_flag_filter. */
static bool dec_log_filter(bs *b, json_t *o, void *arg)
{
    static const char kinds[] =
        "status_code_filter duration_filter not_health_check_filter traceable_filter "
        "runtime_filter and_filter or_filter header_filter response_flag_filter "
        "grpc_status_filter extension_filter metadata_filter log_type_filter";
    if (!bs_fields(b, o, kinds))
        return false;
    if (json_object_size(o) != 1)
        return bs_fail(b, "exactly one filter kind is required");
    if (!bs_get(o, "response_flag_filter"))
        return bs_fail(b, "unsupported access log filter (weft supports response_flag_filter)");
    return bs_sub(b, o, "response_flag_filter", dec_flag_filter, arg);
}

bool bs_access_log(bs *b, json_t *o, void *arg)
{
    static const char *const names[] = {"envoy.access_loggers.file", "envoy.access_loggers.stdout",
                                        "envoy.access_loggers.stderr", NULL};
    static const char *const types[] = {
        "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
        "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
        "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog", NULL};
    wp_access_log *l = arg;
    l->kind = WP_LOG_TEXT;
    l->sink = -1;
    int name = 0, type = 0;
    if (!bs_fields(b, o, "name filter typed_config") || !bs_enum(b, o, "name", names, &name) ||
        !bs_sub(b, o, "filter", dec_log_filter, l))
        return false;
    json_t *tc = bs_get(o, "typed_config");
    if (!tc)
        return bs_fail_at(b, "typed_config", "missing required field");
    size_t m = bs_push(b, "typed_config");
    bool ok = json_is_object(tc) ? bs_enum(b, tc, "@type", types, &type)
                                 : bs_fail(b, "wrong type: expected an object");
    if (ok && !bs_get(tc, "@type"))
        ok = bs_fail_at(b, "@type", "missing required field");
    if (ok && type > 0)
        l->path = type == 1 ? "/dev/stdout" : "/dev/stderr";
    ok = ok && dec_logger_config(b, tc, l, type == 0);
    bs_pop(b, m);
    return ok;
}

/* ---------- HTTP connection manager ---------- */

/* The fault filter's typed_config (HTTPFault; absent = empty), once per HCM. */
static bool dec_fault_filter(bs *b, json_t *tc)
{
    if (b->fault)
        return bs_fail_at(b, "name", "only one " WP_FAULT_NAME " filter is supported");
    size_t m = bs_push(b, "typed_config");
    b->fault = bs_fault_filter(b, tc);
    bs_pop(b, m);
    return b->fault != NULL;
}

/* envoy.filters.http.cors with an empty Cors config (what Istio sends on every HCM): without a
 * CorsPolicy on the route or virtual host the filter does nothing in Envoy, so weft accepts it
 * as a no-op. Route-level cors policies stay refused (unknown field). */
static bool dec_cors_filter(bs *b, json_t *tc, char *kind)
{
    *kind = 'c';
    if (!tc)
        return true;
    size_t m = bs_push(b, "typed_config");
    bool ok = json_is_object(tc) ? bs_fields(b, tc, "@type") && bs_type_is(b, tc, CORS_TYPE)
                                 : bs_fail(b, "wrong type: expected an object");
    bs_pop(b, m);
    return ok;
}

/* The typed_config of an http_filters entry of type t (its decoded config in *config). */
static bool dec_filter_config(bs *b, const wp_http_filter_type *t, json_t *tc, const void **config)
{
    wp_hcm *h = b->hcm;
    if (t == &wp_http_filter_fault) {
        bool ok = dec_fault_filter(b, tc);
        *config = b->fault;
        return ok;
    }
    if (t == &wp_http_filter_istio_stats) {
        bool ok = bs_istio_stats_filter(b, tc);
        *config = b->istio_stats;
        return ok;
    }
    if (t == &wp_http_filter_rbac) { /* one per action, as Istio's AUDIT, DENY, ALLOW */
        struct wp_rbac_config *rc = NULL;
        bool ok = bs_rbac_http_filter(b, tc, &rc);
        *config = rc;
        return ok;
    }
    if (t == &wp_http_filter_istio_mx) {
        bool ok = bs_istio_mx_filter(b, tc);
        *config = b->istio_mx;
        return ok;
    }
    if (t == &wp_http_filter_jwt_authn)
        return bs_jwt_authn_filter(b, tc, config);
    if (t == &wp_http_filter_grpc_stats)
        return bs_grpc_stats_filter(b, tc, config);
    if (!tc)
        return true;
    size_t m = bs_push(b, "typed_config");
    /* envoy.extensions.filters.http.router.v3.Router: dynamic_stats (default true) and
     * suppress_envoy_headers (default false) */
    bool ok = bs_fields(b, tc, "@type dynamic_stats suppress_envoy_headers") &&
              bs_type_is(b, tc, ROUTER_TYPE) &&
              bs_bool(b, tc, "dynamic_stats", &h->dynamic_stats) &&
              bs_bool(b, tc, "suppress_envoy_headers", &h->suppress_envoy_headers);
    bs_pop(b, m);
    return ok;
}

/* One http_filters entry: its name resolved to a filter type (filters/http/filters.h), its
 * typed_config decoded, the filter appended to the HCM's chain; *arg records the kind ('c'
 * cors, 'r' the terminal router, 'f' any other). */
static bool dec_http_filter(bs *b, json_t *o, void *arg)
{
    char *kind = arg;
    json_t *tc = bs_get(o, "typed_config");
    const char *name = NULL;
    if (!bs_fields(b, o, "name typed_config") || !bs_req_str(b, o, "name", &name))
        return false;
    const wp_http_filter_type *t = wp_http_filter_find(name);
    if (!t) {
        bs_fail_atf(b, "name", "unsupported http filter \"%s\" (supported: %s)", name,
                    wp_http_filter_names());
        return false;
    }
    const void *config = NULL;
    if (t == &wp_http_filter_cors) {
        if (!dec_cors_filter(b, tc, kind))
            return false;
    } else {
        *kind = t->terminal ? 'r' : 'f';
        if (tc && !json_is_object(tc))
            return bs_fail_at(b, "typed_config", "wrong type: expected an object");
        if (!dec_filter_config(b, t, tc, &config))
            return false;
    }
    /* a second terminal filter is reported by dec_http_filters with Envoy's message */
    wp_fchain *fc = (wp_fchain *)b->hcm->filter_chain;
    if (fc->n && fc->e[fc->n - 1].type->terminal)
        return true;
    if (wp_fchain_add(fc, t, config) != 0)
        return bs_fail_at(b, "name", "too many http filters (weft-proxy takes 16)");
    return true;
}

/* http_filters: [envoy.filters.http.fault, envoy.filters.http.rbac (any number),
 * envoy.filters.http.cors, envoy.filters.http.grpc_stats, istio.metadata_exchange,
 * istio.stats, in any order (Istio's inbound
 * order: istio.metadata_exchange, RBAC filters, fault, cors, istio.stats),]
 * envoy.filters.http.router (last), in the HCM's filter chain in their order. */
static bool dec_http_filters(bs *b, json_t *hcm)
{
    void *arr;
    size_t n = 0;
    wp_fchain *fc = bs_alloc(b, sizeof(*fc));
    if (!fc)
        return false;
    b->hcm->filter_chain = fc;
    if (!bs_each(b, hcm, "http_filters", 1, &arr, &n, dec_http_filter))
        return false;
    const char *kinds = arr;
    for (size_t i = 0; i + 1 < n; i++) {
        if (kinds[i] != 'r')
            continue;
        size_t m = bs_push(b, "http_filters");
        bs_push_i(b, i);
        bs_fail(b,
                "Error: terminal filter named %s of type %s must be the last filter in a http "
                "filter chain.",
                ROUTER_NAME, ROUTER_NAME);
        bs_pop(b, m);
        return false;
    }
    if (n == 0 || kinds[n - 1] != 'r')
        return bs_fail_at(b, "http_filters", "the http filter chain must end with " ROUTER_NAME);
    if (b->istio_stats) /* istio.stats reads what the exchange discovers */
        b->istio_stats->mx = b->istio_mx;
    return true;
}

static bool dec_hcm_common(bs *b, json_t *o, void *arg)
{
    wp_hcm *h = arg;
    uint32_t max_headers = h->max_headers_count;
    if (!bs_fields(b, o, "idle_timeout max_headers_count") ||
        !bs_dur(b, o, "idle_timeout", &h->idle_timeout_ms, NULL) ||
        !bs_u32(b, o, "max_headers_count", &max_headers))
        return false;
    if (max_headers < 1)
        return bs_fail_at(b, "max_headers_count", "value must be greater than or equal to 1");
    h->max_headers_count = max_headers;
    return true;
}

/* http_protocol_options: the HTTP/1.0 settings of Envoy's Http1ProtocolOptions (the other
 * fields are refused by name). */
static bool dec_hcm_h1(bs *b, json_t *o, void *arg)
{
    wp_hcm *h = arg;
    return bs_fields(b, o, "accept_http_10 default_host_for_http_10") &&
           bs_bool(b, o, "accept_http_10", &h->accept_http_10) &&
           bs_str(b, o, "default_host_for_http_10", &h->default_host_for_http_10);
}

/* http2_protocol_options: the SETTINGS fields (Envoy's ranges, protocol.proto); the other
 * fields of Http2ProtocolOptions are refused by name. */
bool bs_h2_options(bs *b, json_t *o, void *arg)
{
    wp_h2_options *h2 = arg;
    if (!bs_fields(b, o,
                   "hpack_table_size max_concurrent_streams initial_stream_window_size "
                   "initial_connection_window_size") ||
        !bs_u32(b, o, "hpack_table_size", &h2->hpack_table_size) ||
        !bs_u32(b, o, "max_concurrent_streams", &h2->max_concurrent_streams) ||
        !bs_u32(b, o, "initial_stream_window_size", &h2->initial_stream_window_size) ||
        !bs_u32(b, o, "initial_connection_window_size", &h2->initial_connection_window_size))
        return false;
    if (h2->max_concurrent_streams < 1 || h2->max_concurrent_streams > 2147483647u)
        return bs_fail_at(b, "max_concurrent_streams",
                          "value must be inside range [1, 2147483647]");
    if (h2->initial_stream_window_size < 65535 || h2->initial_stream_window_size > 2147483647u)
        return bs_fail_at(b, "initial_stream_window_size",
                          "value must be inside range [65535, 2147483647]");
    if (h2->initial_connection_window_size < 65535 ||
        h2->initial_connection_window_size > 2147483647u)
        return bs_fail_at(b, "initial_connection_window_size",
                          "value must be inside range [65535, 2147483647]");
    return true;
}

/* normalize_path, merge_slashes and path_with_escaped_slashes_action (every value of the
 * enum; http/path_norm.h applies them). */
static bool dec_path_options(bs *b, json_t *o, wp_hcm *h)
{
    static const char *const actions[] = {
        "IMPLEMENTATION_SPECIFIC_DEFAULT", "KEEP_UNCHANGED",       "REJECT_REQUEST",
        "UNESCAPE_AND_REDIRECT",           "UNESCAPE_AND_FORWARD", NULL};
    int action = WF_ESC_SLASH_DEFAULT;
    if (!bs_bool(b, o, "normalize_path", &h->normalize_path) ||
        !bs_bool(b, o, "merge_slashes", &h->merge_slashes) ||
        !bs_enum(b, o, "path_with_escaped_slashes_action", actions, &action))
        return false;
    h->path_with_escaped_slashes_action = (wf_esc_slash_action)action;
    return true;
}

/* set_current_client_cert_details {subject, cert, chain, dns, uri} (subject a BoolValue). */
static bool dec_client_cert_details(bs *b, json_t *o, void *arg)
{
    static const char *const names[] = {"cert", "chain", "subject", "uri", "dns", NULL};
    static const unsigned bits[] = {WP_CCD_CERT, WP_CCD_CHAIN, WP_CCD_SUBJECT, WP_CCD_URI,
                                    WP_CCD_DNS};
    wp_hcm *h = arg;
    if (!bs_fields(b, o, "subject cert chain dns uri"))
        return false;
    for (int i = 0; names[i]; i++) {
        bool on = false;
        if (!bs_bool(b, o, names[i], &on))
            return false;
        h->client_cert_details |= on ? bits[i] : 0;
    }
    return true;
}

static bool dec_xfcc(bs *b, json_t *o, wp_hcm *h)
{
    static const char *const modes[] = {"SANITIZE",     "FORWARD_ONLY",        "APPEND_FORWARD",
                                        "SANITIZE_SET", "ALWAYS_FORWARD_ONLY", NULL};
    int mode = WP_FCC_SANITIZE;
    if (!bs_enum(b, o, "forward_client_cert_details", modes, &mode))
        return false;
    h->forward_client_cert = (wp_fcc_mode)mode;
    return bs_sub(b, o, "set_current_client_cert_details", dec_client_cert_details, h);
}

bool bs_hcm(bs *b, json_t *o, wp_hcm *h)
{
    static const char *const codecs[] = {"AUTO", "HTTP1", "HTTP2", "HTTP3", NULL};
    int codec = WP_CODEC_AUTO;
    h->h2 = wp_h2_options_default();
    h->server_name = "envoy";
    h->stream_idle_timeout_ms = 300000;
    h->idle_timeout_ms = 3600000;
    h->max_request_headers_kb = 60;
    h->max_headers_count = 100;
    h->generate_request_id = true;
    h->dynamic_stats = true;
    if (!bs_fields(b, o,
                   "@type stat_prefix codec_type route_config rds http_filters server_name "
                   "stream_idle_timeout request_timeout common_http_protocol_options "
                   "http_protocol_options http2_protocol_options max_request_headers_kb "
                   "generate_request_id use_remote_address "
                   "xff_num_trusted_hops access_log normalize_path merge_slashes "
                   "path_with_escaped_slashes_action forward_client_cert_details "
                   "set_current_client_cert_details") ||
        !bs_type_is(b, o, HCM_TYPE) || !dec_path_options(b, o, h) || !dec_xfcc(b, o, h))
        return false;
    if (bs_get(o, "rds"))
        return bs_fail_at(b, "rds",
                          "rds is supported only in listeners received over LDS (the xDS "
                          "client inlines the route configuration); use route_config");
    if (!bs_req_str(b, o, "stat_prefix", &h->stat_prefix) ||
        !bs_enum(b, o, "codec_type", codecs, &codec) ||
        !bs_str(b, o, "server_name", &h->server_name) ||
        !bs_dur(b, o, "stream_idle_timeout", &h->stream_idle_timeout_ms, NULL) ||
        !bs_dur(b, o, "request_timeout", &h->request_timeout_ms, NULL) ||
        !bs_sub(b, o, "common_http_protocol_options", dec_hcm_common, h) ||
        !bs_sub(b, o, "http_protocol_options", dec_hcm_h1, h) ||
        !bs_sub(b, o, "http2_protocol_options", bs_h2_options, &h->h2) ||
        !bs_u32(b, o, "max_request_headers_kb", &h->max_request_headers_kb) ||
        !bs_bool(b, o, "generate_request_id", &h->generate_request_id) ||
        !bs_bool(b, o, "use_remote_address", &h->use_remote_address) ||
        !bs_u32(b, o, "xff_num_trusted_hops", &h->xff_num_trusted_hops))
        return false;
    if (codec == 3)
        return bs_fail_at(b, "codec_type",
                          "HTTP3 is not supported by weft-proxy (no QUIC listeners)");
    h->codec_type = (wp_codec_type)codec;
    if (h->max_request_headers_kb < 1 || h->max_request_headers_kb > 8192)
        return bs_fail_at(b, "max_request_headers_kb", "value must be inside range [1, 8192]");
    void *logs = NULL;
    if (!bs_each(b, o, "access_log", sizeof(wp_access_log), &logs, &h->naccess_logs, bs_access_log))
        return false;
    h->access_logs = logs;
    b->hcm = h;
    b->fault = NULL;
    b->istio_stats = NULL;
    b->istio_mx = NULL;
    if (!dec_http_filters(b, o))
        return false;
    json_t *rc = bs_get(o, "route_config");
    if (!rc)
        return bs_fail_at(b, "route_config", "missing required field");
    h->route_config = bs_alloc(b, sizeof(*h->route_config));
    if (!h->route_config)
        return false;
    size_t m = bs_push(b, "route_config");
    bool ok = bs_route_config(b, rc, h->route_config);
    bs_pop(b, m);
    return ok;
}
