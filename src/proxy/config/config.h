/*
 * config.h - the proxy's immutable configuration snapshot: listeners, HTTP connection
 * managers, route configurations and clusters, decoded from Envoy v3 JSON (bootstrap.c)
 * and shared read-only by every worker thread.
 *
 * Ownership and lifetime. Everything reachable from a wp_config lives in its arena (and
 * the compiled PCRE2 codes it lists in `regexes`, freed with it). A snapshot is created
 * with one reference; workers take a reference when a request starts (wp_config_ref) and
 * drop it when the request ends (wp_config_unref); the last unref frees it. Nothing in a
 * snapshot changes after it is published, so readers need no lock. Names that the request
 * path needs are resolved when the snapshot is built (route -> cluster index), so a request
 * never looks a string up.
 *
 * Defaults follow Envoy v3 (envoy/config/{listener,cluster,route}/v3/ protos and
 * extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto):
 * per_connection_buffer_limit_bytes 1 MiB, connect_timeout 5 s, route timeout 15 s,
 * stream_idle_timeout 5 min, HCM request_timeout 0 (off), connection idle_timeout 1 h,
 * max_request_headers_kb 60, circuit breakers 1024/1024/1024/3, upstream idle_timeout 1 h.
 * Durations are milliseconds; WP_NO_TIMEOUT (0) means "disabled".
 */
#ifndef WEFT_PROXY_CONFIG_H
#define WEFT_PROXY_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/strbuf.h"
#include "http/path_norm.h"
#include "proxy/net/address.h"
#include "proxy/net/filter_chain_match.h"
#include "proxy/net/listener_filter.h"
#include "proxy/net/network_filter.h"

#include "proxy/regex/regex.h"

#define WP_NO_TIMEOUT           0
#define WP_DEFAULT_BUFFER_LIMIT (1024u * 1024u)

/* ---------- shared pieces ---------- */

/* The fault filter's per-route settings (proxy/filters/http/fault.h). */
struct wp_fault_config;
/* The HTTP filter chain built from http_filters (proxy/http/filter.h). */
struct wp_fchain;

typedef struct {
    struct sockaddr_storage sa;
    socklen_t len;
    char text[64]; /* "127.0.0.1:8080" / "[::1]:8080", as Envoy prints addresses */
} wp_addr;

typedef struct {
    const char *name; /* lower-case header name, or query parameter name as written */
    size_t name_len;
    wp_string_matcher m;
    bool invert; /* headers only: invert_match */
    bool treat_missing_as_empty;
} wp_kv_matcher;

/* request_headers_to_add / response_headers_to_add (HeaderValueOption). */
typedef enum {
    WP_APPEND_IF_EXISTS_OR_ADD, /* default (append: true) */
    WP_ADD_IF_ABSENT,
    WP_OVERWRITE_IF_EXISTS_OR_ADD, /* append: false */
    WP_OVERWRITE_IF_EXISTS,
} wp_append_action;

typedef struct {
    const char *key; /* lower-case */
    size_t key_len;
    const char *value;
    size_t value_len;
    wp_append_action action;
} wp_header_add;

typedef struct {
    wp_header_add *add;
    size_t nadd;
    const char **remove; /* lower-case names */
    size_t nremove;
} wp_header_ops;

/* ---------- routes (envoy.config.route.v3) ---------- */

typedef enum {
    WP_PATH_PREFIX,
    WP_PATH_EXACT, /* "path" */
    WP_PATH_REGEX, /* "safe_regex" on the path without the query */
    WP_PATH_SEPARATED_PREFIX,
} wp_path_kind;

typedef enum { WP_ACT_ROUTE, WP_ACT_REDIRECT, WP_ACT_DIRECT } wp_action_kind;

typedef struct {
    const char *name;
    int cluster; /* index into wp_config.clusters, -1 when no such cluster (503 NC) */
    uint32_t weight;
    wp_header_ops req, resp;
} wp_weighted_cluster;

typedef struct {
    const char *scheme;      /* NULL = keep; https_redirect sets "https" */
    const char *host;        /* host_redirect, NULL = keep */
    uint32_t port;           /* port_redirect, 0 = keep */
    const char *path;        /* path_redirect, NULL = keep */
    const char *prefix;      /* prefix_rewrite, NULL = none */
    pcre2_code *regex;       /* regex_rewrite pattern */
    const char *regex_subst; /* regex_rewrite substitution (\1 style) */
    int code;                /* 301 (default), 302, 303, 307, 308 */
    bool strip_query;
    bool ssl_redirect; /* a virtual host's require_tls: "https://" + Host + path, verbatim
                        * (Envoy's SslRedirector, Utility::createSslRedirectPath) */
} wp_redirect;

/* retry_policy (envoy.config.route.v3.RetryPolicy); retry_on tokens as bits. */
enum {
    WP_RETRY_5XX = 1u << 0,
    WP_RETRY_GATEWAY_ERROR = 1u << 1,
    WP_RETRY_RESET = 1u << 2,
    WP_RETRY_RESET_BEFORE_REQUEST = 1u << 3,
    WP_RETRY_CONNECT_FAILURE = 1u << 4,
    WP_RETRY_RETRIABLE_4XX = 1u << 5,
    WP_RETRY_REFUSED_STREAM = 1u << 6,
    WP_RETRY_RETRIABLE_STATUS_CODES = 1u << 7,
    WP_RETRY_RETRIABLE_HEADERS = 1u << 8,
    WP_RETRY_ENVOY_RATELIMITED = 1u << 9,
    WP_RETRY_HTTP3_POST_CONNECT_FAILURE = 1u << 10,
    WP_RETRY_GRPC_CANCELLED = 1u << 11,
    WP_RETRY_GRPC_DEADLINE_EXCEEDED = 1u << 12,
    WP_RETRY_GRPC_INTERNAL = 1u << 13,
    WP_RETRY_GRPC_RESOURCE_EXHAUSTED = 1u << 14,
    WP_RETRY_GRPC_UNAVAILABLE = 1u << 15,
};

/* Parses a retry_on list (comma-separated, Envoy's condition names: the route's retry_on,
 * x-envoy-retry-on, x-envoy-retry-grpc-on) into WP_RETRY_* bits (retry_on.c). Returns 0, or
 * -1 with *bad / *bad_len naming the first unknown token. */
int wp_retry_on_parse(const char *list, uint32_t *bits, const char **bad, size_t *bad_len);

typedef struct {
    uint32_t retry_on;                /* WP_RETRY_* bits */
    uint32_t num_retries;             /* default 1 */
    uint64_t per_try_timeout_ms;      /* 0 = none */
    uint64_t per_try_idle_timeout_ms; /* 0 = none */
    uint64_t base_interval_ms;        /* retry_back_off.base_interval, default 25 */
    uint64_t max_interval_ms;         /* default 10 x base */
    uint32_t *status_codes;           /* retriable_status_codes */
    size_t nstatus_codes;
    wp_kv_matcher *headers; /* retriable_headers */
    size_t nheaders;
    bool previous_hosts;                  /* retry_host_predicate previous_hosts */
    uint32_t host_selection_max_attempts; /* host_selection_retry_max_attempts, default 1 */
} wp_retry_policy;

/* request_mirror_policies[] (RouteAction.RequestMirrorPolicy). */
typedef struct {
    const char *cluster_name;
    int cluster;              /* -1: no such cluster, the shadow is skipped */
    uint32_t numerator;       /* runtime_fraction.default_value; absent = 100 % */
    uint32_t denominator;     /* 100, 10000 or 1000000 */
    bool disable_host_suffix; /* disable_shadow_host_suffix_append */
} wp_mirror_policy;

/* Envoy 1.36 request_body_buffer_limit precedence (reference §3.2): the limit of a route's
 * retry buffer. */
typedef struct {
    uint64_t request_body_buffer_limit; /* 0 = unset */
    uint32_t per_request_buffer_limit_bytes;
    bool has_request_body_buffer_limit, has_per_request_buffer_limit;
} wp_buffer_limits;

typedef struct wp_route {
    const char *name; /* route name, "" when unnamed (%ROUTE_NAME% prints "-") */
    /* match */
    wp_path_kind path_kind;
    const char *path; /* prefix / exact path / separated prefix */
    size_t path_len;
    pcre2_code *path_re;
    bool case_sensitive; /* default true */
    wp_kv_matcher *headers;
    size_t nheaders;
    wp_kv_matcher *query;
    size_t nquery;
    /* action */
    wp_action_kind action;
    const char *cluster_name; /* single cluster; NULL when weighted */
    int cluster;              /* index, -1 = not found (503 NC) */
    wp_weighted_cluster *weighted;
    size_t nweighted;
    uint32_t total_weight;
    const char *prefix_rewrite; /* NULL = none */
    pcre2_code *regex_rewrite;  /* NULL = none */
    const char *regex_rewrite_subst;
    const char *host_rewrite_literal; /* NULL = none */
    uint64_t timeout_ms;              /* default 15000; 0 = none */
    uint64_t idle_timeout_ms;         /* 0 = inherit stream_idle_timeout */
    bool has_idle_timeout;
    /* max_grpc_timeout (set: a gRPC request's grpc-timeout, capped by it unless 0, replaces
     * timeout) and grpc_timeout_offset (subtracted from grpc-timeout when smaller), router.c */
    bool has_max_grpc_timeout;
    uint64_t max_grpc_timeout_ms;    /* 0 = no cap */
    uint64_t grpc_timeout_offset_ms; /* 0 = none */
    /* max_stream_duration (RouteAction.MaxStreamDuration; Envoy's usingNewTimeouts: the
     * router then ignores timeout and max_grpc_timeout, the connection manager times the
     * stream, conn.c refresh_duration): its max_stream_duration (has_: set; 0 = none),
     * grpc_timeout_header_max (has_: a gRPC request's grpc-timeout, capped by it unless 0,
     * replaces max_stream_duration) and grpc_timeout_header_offset */
    bool has_max_stream_duration, has_msd_value, has_grpc_timeout_header_max;
    uint64_t msd_ms, grpc_timeout_header_max_ms, grpc_timeout_header_offset_ms;

    wp_redirect redirect; /* WP_ACT_REDIRECT */
    int direct_status;    /* WP_ACT_DIRECT */
    const char *direct_body;
    size_t direct_body_len;
    wp_header_ops req, resp;
    const wp_retry_policy *retry; /* the route's, else the virtual host's; NULL = none */
    wp_buffer_limits limits;      /* the route's, else the virtual host's */
    /* typed_per_filter_config["envoy.filters.http.fault"], NULL = none */
    const struct wp_fault_config *fault;
    const wp_mirror_policy *mirrors; /* request_mirror_policies */
    size_t nmirrors;
} wp_route;

typedef struct wp_vhost {
    const char *name;
    const char **domains; /* lower-case, as configured */
    size_t ndomains;
    wp_route *routes;
    size_t nroutes;
    wp_header_ops req, resp;
    const wp_retry_policy *retry; /* NULL = none */
    wp_buffer_limits limits;
    bool include_request_attempt_count;     /* x-envoy-attempt-count upstream */
    bool include_attempt_count_in_response; /* x-envoy-attempt-count downstream */
    /* typed_per_filter_config["envoy.filters.http.fault"], NULL = none */
    const struct wp_fault_config *fault;
    /* require_tls ALL: a request whose forwarded protocol is not https gets tls_redirect, a
     * 301 to https://<host><path> (Envoy's SslRedirectRoute) */
    bool require_tls_all;
    wp_route tls_redirect;
} wp_vhost;

typedef struct wp_route_index wp_route_index; /* compiled domain lookup (route.c) */

typedef struct wp_route_config {
    const char *name;
    wp_vhost *vhosts;
    size_t nvhosts;
    wp_header_ops req, resp;
    bool ignore_port_in_host_matching;
    wp_route_index *index; /* built by wp_route_index_build, owned by the snapshot */
} wp_route_config;

/* ---------- listeners and the HTTP connection manager ---------- */

typedef enum { WP_LOG_TEXT, WP_LOG_JSON } wp_log_kind;

typedef struct wp_access_log_format wp_access_log_format; /* compiled (access_log.c) */

typedef struct {
    const char *path; /* file path, "/dev/stdout", "/dev/stderr" */
    wp_log_kind kind;
    const char *text_format;      /* NULL = Envoy's default format */
    json_t *json_format;          /* WP_LOG_JSON */
    wp_access_log_format *format; /* compiled, owned by the snapshot */
    int sink;                     /* index of the process-wide file sink */
    const char *format_at; /* "FILE: JSON path" of the format for errors (arena); NULL none */
    /* filter (envoy.config.accesslog.v3.AccessLogFilter), access_log/alog_emit.h: only
     * response_flag_filter so far. has_flag_filter false = no filter (every entry logged);
     * else flag_filter is a bit set of wp_response_flag values (1u << flag), 0 = any flag. */
    bool has_flag_filter;
    uint32_t flag_filter;
} wp_access_log;

/* forward_client_cert_details (HttpConnectionManager.ForwardClientCertDetails, same order) */
typedef enum {
    WP_FCC_SANITIZE, /* default */
    WP_FCC_FORWARD_ONLY,
    WP_FCC_APPEND_FORWARD,
    WP_FCC_SANITIZE_SET,
    WP_FCC_ALWAYS_FORWARD_ONLY,
} wp_fcc_mode;

/* set_current_client_cert_details (HttpConnectionManager.SetCurrentClientCertDetails) */
enum { WP_CCD_CERT = 1, WP_CCD_CHAIN = 2, WP_CCD_SUBJECT = 4, WP_CCD_URI = 8, WP_CCD_DNS = 16 };

/* codec_type (HttpConnectionManager.CodecType, same order; HTTP3 is refused by the loader):
 * AUTO picks HTTP/2 for ALPN "h2" or the prior-knowledge preface, else HTTP/1.1. */
typedef enum { WP_CODEC_AUTO, WP_CODEC_HTTP1, WP_CODEC_HTTP2 } wp_codec_type;

/* http2_protocol_options (envoy.config.core.v3.Http2ProtocolOptions): the SETTINGS weft
 * advertises, with Envoy >= 1.36's defaults (protocols.md §2.2; wp_h2_options_default).
 * The other fields of the message are refused by name by the loader. */
typedef struct {
    uint32_t hpack_table_size;               /* SETTINGS_HEADER_TABLE_SIZE, 4096 */
    uint32_t max_concurrent_streams;         /* 1024, in [1, 2147483647] */
    uint32_t initial_stream_window_size;     /* 16 MiB, in [65535, 2147483647] */
    uint32_t initial_connection_window_size; /* 24 MiB, in [65535, 2147483647] */
} wp_h2_options;

static inline wp_h2_options wp_h2_options_default(void)
{
    return (wp_h2_options){4096, 1024, 16777216, 25165824};
}

typedef struct {
    const char *stat_prefix;
    wp_route_config *route_config; /* inline route_config */
    const char *server_name;       /* default "envoy" */
    /* http_protocol_options (Envoy's Http1ProtocolOptions): accept_http_10 (default false:
     * an HTTP/1.0 or 0.9 request is answered 426 with details low_version, as Envoy's HCM
     * does, which is also Istio's default) and default_host_for_http_10 (the Host of an
     * HTTP/1.0 request that has none: used for routing and sent upstream; NULL = none). */
    bool accept_http_10;
    const char *default_host_for_http_10;
    uint64_t stream_idle_timeout_ms; /* default 300000 */
    uint64_t request_timeout_ms;     /* default 0 */
    uint64_t idle_timeout_ms;        /* common_http_protocol_options.idle_timeout, 3600000 */
    uint32_t max_request_headers_kb; /* default 60 */
    uint32_t max_headers_count;      /* default 100 */
    wp_codec_type codec_type;        /* default AUTO */
    wp_h2_options h2;                /* http2_protocol_options, Envoy's defaults */
    bool generate_request_id;        /* default true */
    bool dynamic_stats;              /* router: per status code stats, default true */
    bool suppress_envoy_headers;     /* router: no x-envoy-* headers added, default false */
    bool use_remote_address;         /* default false */
    /* x-forwarded-client-cert (http/xfcc.h): forward_client_cert_details and the WP_CCD_* bits
     * of set_current_client_cert_details */
    wp_fcc_mode forward_client_cert;
    unsigned client_cert_details;
    uint32_t xff_num_trusted_hops;
    wp_access_log *access_logs;
    size_t naccess_logs;
    /* http_filters in order, each resolved to its filter type and decoded config (the fault
     * filter's wp_fault_filter, Istio's wp_istio_stats_filter / wp_istio_mx_filter) */
    const struct wp_fchain *filter_chain;
    /* Path normalization before routing (http/path_norm.h, Envoy's maybeNormalizePath):
     * normalize_path (default false; Istio sends true), merge_slashes (default false),
     * path_with_escaped_slashes_action (default IMPLEMENTATION_SPECIFIC_DEFAULT, which Envoy
     * resolves to KEEP_UNCHANGED). */
    bool normalize_path;
    bool merge_slashes;
    wf_esc_slash_action path_with_escaped_slashes_action;
    size_t index; /* position in wp_config.hcms (its http.<stat_prefix>.* stat slots) */
} wp_hcm;

/* envoy.filters.network.tcp_proxy (envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy),
 * decoded by bootstrap_tcp_proxy.c; the filter is filters/network/tcp_proxy.h. Defaults as
 * Envoy's: idle_timeout 1 h (0s disables), max_connect_attempts 1, no
 * max_downstream_connection_duration. */
typedef struct {
    const char *name;
    int cluster; /* index into wp_config.clusters, -1 when no such cluster (NC) */
    uint32_t weight;
} wp_tcp_cluster;

typedef struct wp_tcp_proxy {
    const char *stat_prefix;  /* tcp.<stat_prefix>.* */
    const char *cluster_name; /* `cluster`; NULL when weighted_clusters */
    int cluster;              /* index, -1 = not found (NC) */
    wp_tcp_cluster *weighted; /* weighted_clusters.clusters */
    size_t nweighted;
    uint64_t total_weight;
    uint64_t idle_timeout_ms;                       /* 3600000; 0 = none */
    uint32_t max_connect_attempts;                  /* >= 1 */
    uint64_t max_downstream_connection_duration_ms; /* 0 = none */
    wp_access_log *access_logs;
    size_t naccess_logs;
    size_t index; /* position in wp_config.tcps (its tcp.<stat_prefix>.* stat slots) */
} wp_tcp_proxy;

/* A transport_socket of kind envoy.transport_sockets.tls (a DownstreamTlsContext on a filter
 * chain, an UpstreamTlsContext on a cluster), decoded by bootstrap_tls.c. The TLS engine's
 * context (tls/tls.h) is built when the snapshot is loaded and freed with it (wp_config
 * tls_ctxs); NULL transport socket = raw_buffer. */
struct wf_tls_ctx;
struct wp_sds_ctx;
typedef struct wp_tls_config {
    struct wf_tls_ctx *ctx; /* static certificates; NULL when sds is set */
    /* SDS (tls_certificate_sds_secret_configs / validation_context_sds_secret_config /
     * combined_validation_context): the context is built from the secrets (sds/sds_ctx.h) */
    struct wp_sds_ctx *sds;
    const char *sni; /* UpstreamTlsContext.sni, NULL = none */
    bool require_client_certificate;
} wp_tls_config;

/* One filter chain of a listener (envoy.config.listener.v3.FilterChain): its
 * filter_chain_match and its network filters; the last (terminal) one is the HTTP connection
 * manager (hcm) or the TCP proxy (tcp), exactly one of the two is set. */
typedef struct wp_filter_chain {
    const char *name; /* "" when unnamed */
    wp_fcm match;     /* empty for the default_filter_chain */
    wp_nf_config *filters;
    size_t nfilters;
    wp_hcm *hcm;       /* the chain's connection manager (also filters[nfilters - 1].config) */
    wp_tcp_proxy *tcp; /* the chain's TCP proxy (also filters[nfilters - 1].config) */
    const wp_tls_config *tls; /* transport_socket: TLS, NULL = raw_buffer */
} wp_filter_chain;

typedef struct wp_listener {
    const char *name;
    wp_addr addr;
    uint32_t per_connection_buffer_limit_bytes; /* default 1 MiB */
    /* filter_chains, selected per connection by wp_fcm_select over fcms (chain i's match),
     * else default_chain (default_filter_chain, NULL when absent): no chain closes the
     * connection and counts listener.<stat_name>.no_filter_chain_match. */
    wp_filter_chain *chains;
    size_t nchains;
    const wp_fcm **fcms;
    wp_filter_chain *default_chain;
    /* listener_filters (net/listener_filter.h), run on each accepted socket in order */
    const wp_listener_filter *listener_filters;
    size_t nlistener_filters;
    uint64_t listener_filters_timeout_ms;      /* default 15 s; 0 = none */
    bool continue_on_listener_filters_timeout; /* default false: the connection closes */
    const char *stat_name; /* "0.0.0.0_15001" style (address with ':' replaced by '_') */
    int traffic_direction; /* core.v3.TrafficDirection: 0 UNSPECIFIED, 1 INBOUND, 2 OUTBOUND */
    /* use_original_dst (Envoy's Listener.use_original_dst, protocols.md §5.3): the original_dst
     * listener filter is appended and a connection whose local address it restored is handed
     * to the listener owning that address (wp_listener_find_by_address), else served here */
    bool use_original_dst;
    /* bind_to_port (default true): false = no socket of its own; it only receives connections
     * handed over by a use_original_dst listener (Istio's outbound 0.0.0.0_<port> listeners
     * under capture) */
    bool bind_to_port;
    bool bound;   /* set by the server before the snapshot is published: its sockets exist */
    bool has_tls; /* a chain has a TLS transport socket: listener.<stat_name>.ssl.* exist */
    /* access_log (Listener.access_log): written for a connection that ends before a filter
     * chain's network filters take it (no chain matched, listener filters timed out, failed or
     * saw the peer leave), as Envoy's ActiveStreamListenerBase::emitLogs; server/conn_handler.c */
    wp_access_log *access_logs;
    size_t naccess_logs;
} wp_listener;

/* ---------- clusters ---------- */

typedef enum { WP_CLUSTER_STATIC, WP_CLUSTER_STRICT_DNS, WP_CLUSTER_LOGICAL_DNS } wp_cluster_type;
/* Cluster.dns_lookup_family: AUTO takes an IPv6 address when the name has one, else IPv4;
 * V4_PREFERRED the other way round; V4_ONLY IPv4 only (Envoy's DnsLookupFamily). */
typedef enum { WP_DNS_AUTO, WP_DNS_V4_ONLY, WP_DNS_V4_PREFERRED } wp_dns_family;
typedef enum { WP_LB_ROUND_ROBIN, WP_LB_LEAST_REQUEST, WP_LB_RANDOM } wp_lb_policy;
typedef enum {
    WP_HEALTH_UNKNOWN, /* treated as healthy, as Envoy does */
    WP_HEALTH_HEALTHY,
    WP_HEALTH_UNHEALTHY,
    WP_HEALTH_DRAINING,
    WP_HEALTH_TIMEOUT,
    WP_HEALTH_DEGRADED,
} wp_health;

typedef struct {
    wp_addr addr;         /* STATIC: resolved; DNS: port only until resolved */
    const char *hostname; /* socket_address.address as written */
    uint32_t port;
    uint32_t weight; /* load_balancing_weight, default 1 */
    wp_health health;
    /* The transport socket this host's connections use (Envoy resolves it once, when the host
     * is made): the index of the first of its cluster's transport_socket_matches whose match
     * is a subset of the host's filter_metadata["envoy.transport_socket_match"] plus one, or 0
     * for the cluster's own transport_socket (wp_endpoint_tls). Resolved at load. */
    uint32_t tsm;
    /* filter_metadata["envoy.transport_socket_match"] as given (borrowed from the snapshot's
     * JSON, for /config_dump), NULL when absent; the rest of the metadata is not kept */
    const json_t *tsm_metadata;
} wp_endpoint;

/* One of a cluster's transport_socket_matches (envoy.config.cluster.v3.Cluster.
 * TransportSocketMatch {name, match, transport_socket}); the match itself is only used at
 * load (wp_endpoint.tsm). */
typedef struct {
    const char *name;         /* as given ("" when absent); stats and the debug log use it */
    const wp_tls_config *tls; /* transport_socket: TLS, NULL = raw_buffer */
} wp_tsm;

typedef struct {
    uint32_t max_connections, max_pending_requests, max_requests, max_retries;
} wp_thresholds;

/* outlier_detection (envoy.config.cluster.v3.OutlierDetection; consecutive detectors only,
 * see outlier.h). Defaults as Envoy's DetectorConfig; durations in ms. */
typedef struct {
    bool enabled; /* the field was present */
    uint32_t consecutive_5xx, consecutive_gateway_failure, consecutive_local_origin_failure;
    uint32_t enforcing_consecutive_5xx, enforcing_consecutive_gateway_failure,
        enforcing_consecutive_local_origin_failure; /* percent: 100, 0, 100 */
    uint32_t max_ejection_percent;                  /* 10 */
    uint64_t interval_ms, base_ejection_time_ms;    /* 10000, 30000 */
    uint64_t max_ejection_time_ms;                  /* max(300000, base_ejection_time) */
    uint64_t max_ejection_time_jitter_ms;           /* 0 */
    bool split_external_local_origin_errors, always_eject_one_host;
} wp_outlier_config;

/* The protocol a cluster speaks upstream (envoy.extensions.upstreams.http.v3.
 * HttpProtocolOptions, protocols.md §1.5, §2.6): explicit_http_config http_protocol_options
 * (the default) or http2_protocol_options (also the legacy cluster-level
 * http2_protocol_options), or use_downstream_protocol_config (HTTP/2 upstream when the
 * downstream request is HTTP/2 and http2_protocol_options is given). */
typedef enum { WP_UP_HTTP1, WP_UP_HTTP2, WP_UP_DOWNSTREAM } wp_upstream_proto;

typedef struct wp_cluster {
    const char *name;
    const char *alt_stat_name; /* NULL = name */
    wp_cluster_type type;
    wp_lb_policy lb_policy;
    uint64_t connect_timeout_ms;          /* default 5000 */
    wp_thresholds cb;                     /* circuit_breakers default priority */
    uint64_t idle_timeout_ms;             /* upstream connection idle, default 3600000 */
    uint32_t max_requests_per_connection; /* 0 = unlimited */
    uint32_t per_connection_buffer_limit_bytes;
    uint64_t dns_refresh_rate_ms; /* default 5000 */
    wp_dns_family dns_family;     /* dns_lookup_family, default AUTO */
    wp_upstream_proto proto;      /* WP_UP_HTTP1 unless configured */
    bool h2_allowed;              /* use_downstream_protocol_config gave http2_protocol_options */
    wp_h2_options h2;             /* the HTTP/2 options of an HTTP/2 (or use-downstream) cluster */
    wp_endpoint *endpoints;
    size_t nendpoints;
    wp_outlier_config outlier;
    uint32_t healthy_panic_threshold; /* common_lb_config, percent, default 50 */
    /* metadata.filter_metadata.istio.services[0] (Istio's destination_service), when given */
    bool istio_services;
    const char *istio_svc_host, *istio_svc_name, *istio_svc_namespace; /* NULL = absent */
    /* type ORIGINAL_DST (lb_policy CLUSTER_PROVIDED; Istio's PassthroughCluster and
     * InboundPassthroughCluster). Decoded as a STATIC cluster without endpoints: the router
     * and the TCP proxy connect to the downstream connection's original destination (the local
     * address original_dst restored, Envoy's OriginalDstCluster without use_http_header)
     * through upstream/conn_pool.h wp_pool_newstream_dst, as host 0; a connection whose local
     * address was not restored finds no host (UH, as Envoy's "original_dst_load_balancer: No
     * downstream connection or no original_dst"). */
    bool original_dst;
    /* upstream_bind_config.source_address (core.v3.BindConfig): the upstream connections'
     * source (Istio's InboundPassthroughCluster binds 127.0.0.6), NULL none */
    const wp_addr *bind_source;
    const wp_tls_config *tls; /* transport_socket: TLS (UpstreamTlsContext), NULL = raw_buffer */
    /* filters: the upstream istio.metadata_exchange (Istio's TCPClusterMx), NULL = none */
    const struct wp_tcp_mx_config *mx;
    const wp_tsm *tsms; /* transport_socket_matches, in order */
    size_t ntsms;
    bool has_tls; /* tls or a match's TLS socket: cluster.<name>.ssl.* exist */
    int index;
} wp_cluster;

/* The transport socket of host e of cluster c: its transport_socket_matches entry, else the
 * cluster's transport_socket (NULL = raw_buffer). No lookup: e->tsm was resolved at load. */
static inline const wp_tls_config *wp_endpoint_tls(const wp_cluster *c, const wp_endpoint *e)
{
    return e->tsm ? c->tsms[e->tsm - 1].tls : c->tls;
}

/* ---------- dynamic resources (bootstrap dynamic_resources, Envoy v3) ---------- */

typedef enum { WP_ADS_GRPC, WP_ADS_DELTA_GRPC } wp_ads_api;

/* dynamic_resources with ads_config (the only xDS source weft supports): the xDS client
 * (xds_client.h) streams from the static cluster named by grpc_services[0].envoy_grpc. */
typedef struct wp_ads_config {
    wp_ads_api api_type;                 /* GRPC (SotW) or DELTA_GRPC */
    bool set_node_on_first_message_only; /* default false: node on every request */
    const char *cluster_name;            /* "xds-grpc" under Istio */
    int cluster;                         /* index into wp_config.clusters */
    /* The cluster's first endpoint: AF_INET / AF_INET6, or AF_UNIX for a `pipe` endpoint
     * (addr.sa is then a sockaddr_un and pipe_path the path as written). */
    wp_addr addr;
    const char *pipe_path;       /* NULL unless the endpoint is a pipe */
    uint64_t connect_timeout_ms; /* the cluster's connect_timeout */
    bool cds, lds;               /* cds_config / lds_config {ads {}} present */
    /* initial_fetch_timeout of cds_config / lds_config: default 15000, 0 = wait forever
     * (Istio); recorded, the client does not time initial fetches out yet */
    uint64_t cds_initial_fetch_timeout_ms, lds_initial_fetch_timeout_ms;
} wp_ads_config;

/* ---------- the snapshot ---------- */

typedef struct wp_config {
    atomic_uint refs;
    wf_arena arena;
    json_t *bootstrap; /* the bootstrap as read, for /config_dump (owned) */
    uint64_t version;  /* increases with every snapshot */
    /* node */
    const char *node_id, *node_cluster;
    json_t *node; /* owned copy of "node" (metadata for Istio stats later) */
    /* admin */
    wp_addr admin_addr;
    bool has_admin;
    const char *admin_access_log_path;
    /* resources */
    wp_listener *listeners;
    size_t nlisteners;
    /* every chain's HTTP connection manager, listener by listener, chains in order then the
     * default chain (wp_hcm.index is the position; stats and per-HCM resources follow it) */
    wp_hcm **hcms;
    size_t nhcms;
    /* every chain's TCP proxy, in the same order (wp_tcp_proxy.index is the position) */
    wp_tcp_proxy **tcps;
    size_t ntcps;
    wp_cluster *clusters;
    size_t nclusters;
    struct wf_strmap *cluster_names; /* name -> index + 1 (config time only), arena */
    json_t *stats_config;            /* kept for the stats matcher (owned), NULL when absent */
    const wp_ads_config *ads;        /* dynamic_resources.ads_config, NULL when absent (arena) */
    /* A snapshot built from xDS (xds_compose.h): only the first n_static_clusters clusters and
     * n_static_listeners listeners of `bootstrap` are the bootstrap's own; xds_dump (owned) holds
     * the config-dump elements of the dynamic resources. NULL / 0 / 0 for a bootstrap alone. */
    json_t *xds_dump;
    size_t n_static_clusters, n_static_listeners;
    bool from_xds;
    /* compiled regexes to free with the snapshot */
    pcre2_code **regexes;
    size_t nregexes, capregexes;
    /* TLS contexts to free with the snapshot (transport sockets' wp_tls_config.ctx) */
    struct wf_tls_ctx **tls_ctxs;
    size_t ntls_ctxs, captls_ctxs;
    /* SDS-fed TLS contexts to free with the snapshot (wp_tls_config.sds) */
    struct wp_sds_ctx **sds_ctxs;
    size_t nsds_ctxs, capsds_ctxs;
    /* other objects a filter's config owns outside the arena (the jwt_authn filter's key
     * sets), freed with the snapshot by their free function */
    struct wp_config_owned *owned;
    size_t nowned, capowned;
} wp_config;

/* One object freed with the snapshot (wp_config_own). */
typedef struct wp_config_owned {
    void *p;
    void (*free_fn)(void *);
} wp_config_owned;

/* Takes one more reference. */
void wp_config_ref(wp_config *c);
/* Drops a reference; frees the snapshot (arena, regexes, JSON) with the last one. NULL ok. */
void wp_config_unref(wp_config *c);

/* wp_sockaddr_text: net/address.h */

/* The filter chain of listener l for an accepted socket as the listener filters left it:
 * Envoy's filter chain match over l's filter_chains, else its default_filter_chain, else
 * NULL (the connection is closed and counted in no_filter_chain_match). */
const wp_filter_chain *wp_listener_find_chain(const wp_listener *l, const wp_lf_socket *sock);
/* Envoy's ConnectionHandlerImpl::getBalancedHandlerByAddress for a connection whose local
 * address original_dst restored to sa: the index of c's listener on exactly sa, else of the
 * one on the wildcard address of sa's family (0.0.0.0 or ::) and sa's port; only listeners in
 * service (bound). -1 none (the use_original_dst listener keeps the connection). */
int wp_listener_find_by_address(const wp_config *c, const struct sockaddr *sa);

/* Index of the cluster named name, or -1. Config-time only (linear scan). */
int wp_config_find_cluster(const wp_config *c, const char *name);

/* Registers a TLS context with c so that it is freed with the snapshot. false on out of
 * memory (ctx is then freed). */
bool wp_config_add_tls_ctx(wp_config *c, struct wf_tls_ctx *ctx);
/* The same for an SDS-fed context (freed with the snapshot; on false it is freed). */
bool wp_config_add_sds_ctx(wp_config *c, struct wp_sds_ctx *s);
/* Registers p to be freed by free_fn with the snapshot (after the arena's users are gone).
 * false on out of memory (p is then freed). */
bool wp_config_own(wp_config *c, void *p, void (*free_fn)(void *));
/* The engine context a new connection of t uses: one reference (release with
 * wf_tls_ctx_free), NULL when its SDS secrets are not supplied yet. */
struct wf_tls_ctx *wp_tls_config_acquire(const wp_tls_config *t);

/* Compile an RE2-syntax regex for a matcher (full match: the pattern must match the whole
 * subject, as Envoy's safe_regex matchers do) and register it with c so that it is freed
 * with the snapshot. The pattern is first checked for RE2 syntax (backreferences,
 * lookaround, atomic groups, possessive quantifiers... are rejected, see model/re2_check.h),
 * then compiled with PCRE2 (UTF, DOLLAR_ENDONLY, anchored at both ends) and JIT-compiled
 * when possible (a JIT failure is ignored). Returns the code (owned by c), or NULL with the
 * reason appended to err (RE2's wording, "error parsing regexp: ..."; or "out of memory").
 * Matchers should match with a match limit (DESIGN.md). */
pcre2_code *wp_config_add_regex(wp_config *c, const char *re, wf_strbuf *err);

/* As wp_config_add_regex but not anchored: for patterns that search and substitute
 * (regex_rewrite). */
pcre2_code *wp_config_add_regex_search(wp_config *c, const char *re, wf_strbuf *err);

#endif
