/*
 * stream_info.h - what the proxy knows about one downstream HTTP request when it ends:
 * the input of access logs (access_log.c) and, later, Istio's metrics. Filled by the
 * connection manager and the router; read-only for formatters.
 *
 * Response flags and details follow Envoy's StreamInfo (envoy/stream_info/stream_info.h,
 * source/common/stream_info/utility.{h,cc}): flags are kept in the order they were set, a
 * flag set twice is kept once, and %RESPONSE_FLAGS% joins their short names with ','
 * ("-" when none).
 *
 * Lifetime: every pointer inside stays valid until the stream is destroyed, which happens
 * after the access logs have been written. Times are monotonic nanoseconds (uv_hrtime)
 * except start_time_us (wall clock, microseconds since the epoch).
 */
#ifndef WEFT_PROXY_STREAM_INFO_H
#define WEFT_PROXY_STREAM_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/h1_parser.h"

/* Envoy's response flags, in Envoy's enum order (ResponseFlag in stream_info.h). */
typedef enum {
    WP_RF_LH,    /* FailedLocalHealthCheck */
    WP_RF_UH,    /* NoHealthyUpstream */
    WP_RF_UT,    /* UpstreamRequestTimeout */
    WP_RF_LR,    /* LocalReset */
    WP_RF_UR,    /* UpstreamRemoteReset */
    WP_RF_UF,    /* UpstreamConnectionFailure */
    WP_RF_UC,    /* UpstreamConnectionTermination */
    WP_RF_UO,    /* UpstreamOverflow */
    WP_RF_NR,    /* NoRouteFound */
    WP_RF_DI,    /* DelayInjected */
    WP_RF_FI,    /* FaultInjected */
    WP_RF_RL,    /* RateLimited */
    WP_RF_UAEX,  /* UnauthorizedExternalService */
    WP_RF_RLSE,  /* RateLimitServiceError */
    WP_RF_DC,    /* DownstreamConnectionTermination */
    WP_RF_URX,   /* UpstreamRetryLimitExceeded */
    WP_RF_SI,    /* StreamIdleTimeout */
    WP_RF_IH,    /* InvalidEnvoyRequestHeaders */
    WP_RF_DPE,   /* DownstreamProtocolError */
    WP_RF_UMSDR, /* UpstreamMaxStreamDurationReached */
    WP_RF_RFCF,  /* ResponseFromCacheFilter */
    WP_RF_NFCF,  /* NoFilterConfigFound */
    WP_RF_DT,    /* DurationTimeout */
    WP_RF_UPE,   /* UpstreamProtocolError */
    WP_RF_NC,    /* NoClusterFound */
    WP_RF_OM,    /* OverloadManagerTerminated */
    WP_RF_DF,    /* DnsResolutionFailed */
    WP_RF_DO,    /* DropOverload */
    WP_RF_DR,    /* DownstreamRemoteReset */
    WP_RF_UDO,   /* UnconditionalDropOverload */
    WP_RF_COUNT_
} wp_response_flag;

#define WP_MAX_FLAGS 8

/* Dynamic metadata (Envoy's StreamInfo::dynamicMetadata, filter_metadata by namespace): what
 * filters publish for later filters and the access log. An entry is one key of a namespace with
 * a string value (static or config-owned: the RBAC filters' shadow results) or a JSON value
 * (a google.protobuf.Struct-like tree: the JWT filter's verified `payload`), owned by whoever
 * set it and valid until the stream ends. Fixed capacity: no allocation. */
#define WP_DYN_MD_MAX 8
struct json_t;
typedef struct {
    const char *ns;  /* e.g. "envoy.filters.http.rbac" */
    const char *key; /* e.g. "istio_dry_run_allow_shadow_engine_result" */
    const char *str; /* string value, or NULL when json is set */
    const struct json_t *json;
} wp_dyn_md_entry;
typedef struct {
    wp_dyn_md_entry e[WP_DYN_MD_MAX];
    uint8_t n;
} wp_dyn_md;

/* envoy.filters.http.grpc_stats's filter state (Envoy's GrpcStatsObject, filter state
 * "envoy.filters.http.grpc_stats"): the gRPC messages counted so far, set (present) once the
 * filter counted a message with emit_filter_state on (filters/http/grpc_stats.h). */
typedef struct {
    bool present;
    uint64_t request_message_count, response_message_count;
} wp_grpc_stats_object;

typedef struct wp_stream_info {
    /* identity */
    uint64_t connection_id, stream_id;
    int64_t start_time_us; /* wall clock at the first byte of the request */
    uint64_t start_ns;     /* monotonic, same instant */
    uint64_t last_rx_ns;   /* request fully received, 0 = not (yet) */
    uint64_t first_upstream_tx_ns, last_upstream_tx_ns;
    uint64_t first_upstream_rx_ns, last_upstream_rx_ns;
    uint64_t first_downstream_tx_ns, last_downstream_tx_ns;
    uint64_t end_ns; /* stream complete */
    /* request as received (headers point into stream-owned memory) */
    const h1_message *request; /* NULL when the head never parsed */
    const char *protocol;      /* "HTTP/1.1", "HTTP/1.0" */
    /* response as sent downstream (NULL until headers went out) */
    const h1_header *response_headers;
    size_t nresponse_headers;
    /* response trailers as received from the upstream (a chunked response's trailer
     * section; %TRAILER(...)%, %GRPC_STATUS%); NULL = none. Set by the router on
     * H1_EV_TRAILERS, copied into stream-owned memory (the parser's buffer is reused). */
    const h1_header *response_trailers;
    size_t nresponse_trailers;
    int response_code;                    /* 0 = no response sent */
    const char *details;                  /* %RESPONSE_CODE_DETAILS%, NULL = "-" */
    const char *termination_details;      /* %CONNECTION_TERMINATION_DETAILS% */
    const char *transport_failure_reason; /* %UPSTREAM_TRANSPORT_FAILURE_REASON% */
    uint8_t flags[WP_MAX_FLAGS];          /* wp_response_flag values in the order set */
    uint8_t nflags;
    /* bytes (HTTP bodies, as Envoy's %BYTES_RECEIVED% / %BYTES_SENT%) */
    uint64_t bytes_received, bytes_sent;
    uint64_t wire_bytes_received, wire_bytes_sent; /* downstream, headers included */
    /* upstream bytes of this stream's attempts (headers included; %UPSTREAM_WIRE_BYTES_*%) */
    uint64_t upstream_wire_bytes_received, upstream_wire_bytes_sent;
    /* routing */
    const char *route_name;            /* NULL = none */
    const char *upstream_cluster;      /* cluster name (%UPSTREAM_CLUSTER_RAW%), NULL = none */
    const char *upstream_cluster_stat; /* alt_stat_name or name (%UPSTREAM_CLUSTER%) */
    const char *upstream_host;         /* "ip:port", NULL = none */
    /* the protocol of the attempt's upstream connection ("HTTP/1.1", "HTTP/2"; static), NULL
     * until one connected (%UPSTREAM_PROTOCOL% then says HTTP/1.1, the chosen host's default) */
    const char *upstream_protocol;
    const char *upstream_local;        /* "ip:port", NULL = none */
    const char *downstream_local;      /* "ip:port" */
    const char *downstream_remote;     /* "ip:port"; from x-forwarded-for when it applies (xff.h) */
    const char *downstream_direct_remote; /* the connection's peer "ip:port" */
    /* the server header sent downstream (the HCM's server_name, which overwrites the
     * upstream's, as Envoy's default server_header_transformation); NULL until a response
     * head was built */
    const char *server_name;
    /* TLS (NULL for plaintext): the downstream connection's facts, owned by its transport
     * socket (the connection outlives the stream), and the last attempt's upstream ones
     * (the version is a static text, the SANs a copy) */
    const char *requested_server_name; /* SNI the client sent */
    const char *downstream_peer_uri_san, *downstream_local_uri_san, *downstream_tls_version,
        *downstream_tls_cipher, *downstream_peer_subject;
    const char *upstream_peer_uri_san, *upstream_local_uri_san, *upstream_tls_version;
    uint32_t attempt_count;           /* %UPSTREAM_REQUEST_ATTEMPT_COUNT% */
    wp_dyn_md dynamic_metadata;       /* filters' dynamic metadata (wp_si_set_metadata) */
    /* the filter state of envoy.filters.http.grpc_stats */
    wp_grpc_stats_object grpc_stats;
    uint64_t upstream_connection_id;
} wp_stream_info;

/* Sets key of namespace ns in si's dynamic metadata to the string str or the JSON value json
 * (one of them; both borrowed, see wp_dyn_md), replacing an entry with the same ns and key.
 * Returns false when the metadata is full (WP_DYN_MD_MAX entries). */
bool wp_si_set_metadata(wp_stream_info *si, const char *ns, const char *key, const char *str,
                        const struct json_t *json);
/* The entry for ns and key, NULL when none. */
const wp_dyn_md_entry *wp_si_metadata(const wp_stream_info *si, const char *ns, const char *key);

/* Short name ("UH") and long name ("NoHealthyUpstream") of a flag. */
const char *wp_flag_short(wp_response_flag f);
const char *wp_flag_long(wp_response_flag f);
/* Sets a flag (kept once, in set order). */
void wp_si_set_flag(wp_stream_info *si, wp_response_flag f);
bool wp_si_has_flag(const wp_stream_info *si, wp_response_flag f);
/* Writes %RESPONSE_FLAGS% into out (capacity cap, NUL-terminated, "-" when none);
 * returns the length. cap >= 64 always suffices. */
size_t wp_si_flags_string(const wp_stream_info *si, char *out, size_t cap);
/* Request header value by lower-case name; pseudo headers ":method", ":path",
 * ":authority" (Host), ":scheme" are mapped; NULL when absent. *len receives the length. */
const char *wp_si_req_header(const wp_stream_info *si, const char *name, size_t *len);
/* Response header value by lower-case name (":status" not mapped); NULL when absent. */
const char *wp_si_resp_header(const wp_stream_info *si, const char *name, size_t *len);
/* Response trailer value by lower-case name; NULL when absent or no trailers. */
const char *wp_si_resp_trailer(const wp_stream_info *si, const char *name, size_t *len);

#endif
