/*
 * istio_stats.h - Istio's standard HTTP metrics (istio_requests_total,
 * istio_request_duration_milliseconds, istio_request_bytes, istio_response_bytes, istio_build)
 * and the HTTP peer metadata exchange that feeds their peer labels: the `istio.stats` and
 * `istio.metadata_exchange` HTTP filters as Istio generates them.
 *
 * Followed: envoy-istio-behaviour.md §7 (names, labels, source vs destination) and §6.3
 * (custom stat namespace in /stats/prometheus); istio/proxy
 * source/extensions/filters/http/istio_stats/istio_stats.cc (label values and order, the
 * reporter from the listener direction, destination_service from cluster metadata
 * istio.services[0] or the Host header, BlackHole/Passthrough names, `unknown` / `latest`,
 * connection_security_policy) and source/extensions/filters/http/peer_metadata/filter.cc with
 * istio/istio pilot/pkg/xds/filters/filters.go (SidecarInbound/OutboundMetadataFilter).
 *
 * Configuration (http_filters, before the router; typed_config either the message itself or a
 * udpa.type.v1.TypedStruct / xds.type.v3.TypedStruct wrapping it, as Istio writes it):
 *  - istio.stats, stats.PluginConfig: reporter UNSPECIFIED (default: from the listener's
 *    traffic_direction, INBOUND -> reporter="destination", OUTBOUND or unset ->
 *    reporter="source"), disable_host_header_fallback, tcp_reporting_duration (the period of
 *    the TCP metrics' reports, default 5 s). Rejected by
 * path: reporter SERVER_GATEWAY (ambient waypoints), metrics / definitions (Telemetry API
 * overrides), the rotation settings.
 *  - istio.metadata_exchange, io.istio.http.peer_metadata.Config: downstream_discovery,
 *    upstream_discovery ([{istio_headers: {}} | {workload_discovery: {}}]),
 *    downstream_propagation, upstream_propagation ([{istio_headers: {}}]),
 *    shared_with_upstream. workload_discovery is accepted and finds nothing (weft has no
 *    workload-discovery xDS). Rejected: baggage, skip_external_clusters: true,
 *    additional_labels.
 *
 * Exchange (filter.cc): upstream_propagation sets x-envoy-peer-metadata-id (node.id) and
 * x-envoy-peer-metadata (this workload, istio_peer.h) on every upstream request, replacing
 * any the client sent; downstream_discovery reads them from the downstream request and
 * removes them before the application; upstream_discovery reads them from the upstream
 * response and removes them before the client; downstream_propagation answers with this
 * workload's headers, each only when the request carried that header.
 *
 * Metrics: one record per downstream stream when it ends (the access-log hook): the counter
 * and three histograms (Envoy's default buckets unless stats_config.histogram_bucket_settings
 * matches the /stats name), labels in Istio's order (wp_istio_label_names). Values: duration =
 * first request byte to stream end (ms); bytes = downstream wire bytes (headers included).
 * /stats names: "istiocustom.<metric>.<label>.<value>..." (Envoy's tag joiner; an empty value
 * adds no segment); /stats/prometheus: "<metric>{<label>="<value>",...}" (namespace
 * stripped, no envoy_ prefix). The stats matcher sees the /stats names. istio_build is the
 * gauge istiocustom.istio_build.component.proxy.tag.<ISTIO_VERSION | unknown> = 1.
 * TCP metrics (istio.stats as a network filter ahead of envoy.filters.network.tcp_proxy,
 * filters/network/istio_stats.h): istio_tcp_connections_opened_total,
 * istio_tcp_connections_closed_total, istio_tcp_sent_bytes_total and
 * istio_tcp_received_bytes_total, counters with the same labels less response_code and
 * grpc_response_status, request_protocol "tcp" (protocols.md §4.5; wp_istio_labels_tcp,
 * wp_istio_record_tcp). A gRPC request (content-type application/grpc[+...]) has
 * request_protocol "grpc" and grpc_response_status from the response trailers' grpc-status,
 * else the response headers' (a trailers-only answer, a gRPC local reply), else mapped from
 * the HTTP status (Grpc::Common::getGrpcStatus(trailers, headers, info)); "" for other
 * requests. gRPC message counts: for a gRPC request whose stream has the GrpcStatsObject
 * filter state of envoy.filters.http.grpc_stats (emit_filter_state, grpc_stats.h; Istio
 * puts that filter on gRPC ports), istio_request_messages_total and
 * istio_response_messages_total (counters) get the stream's request and response message
 * counts when it ends, with the labels reporter ... destination_cluster only - Istio's
 * reportHelper(true) records them before the protocol, code, gRPC status, flags and security
 * policy labels are added (istio_stats.cc IstioStatsFilter::log); a stream whose filter
 * counted no message has no filter state and records nothing. Istio also reports them every
 * tcp_reporting_duration while a gRPC stream lasts; weft reports at the end only.
 *
 * Threads and memory. The filter settings are part of the immutable config snapshot. Each
 * worker owns one wp_istio_shard: a hash table from the label tuple (its /stats suffix) to the
 * store ids of the four series, plus scratch buffers, touched by no other thread. A request
 * builds its label suffix in the shard's scratch buffer (no allocation once warm), looks it
 * up and adds to the counter and histograms in the worker's stats shard (relaxed stores, no
 * lock). Only a label tuple the worker has not seen before takes the slow path: it registers
 * the four names in the stats store (under the store's registration mutex) and copies the key
 * (malloc). The admin thread never touches the tables: it renders the store, which sums the
 * workers' shards of each name (wp_stats_*). When the store is full, a new series is
 * remembered with invalid ids and not counted (no retry on every request).
 */
#ifndef WEFT_PROXY_ISTIO_STATS_H
#define WEFT_PROXY_ISTIO_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/stream_info/istio_peer.h"
#include "proxy/stats/stats.h"

#define WP_ISTIO_STATS_NAME "istio.stats"
#define WP_ISTIO_STATS_TYPE "type.googleapis.com/stats.PluginConfig"
#define WP_ISTIO_MX_NAME    "istio.metadata_exchange"
#define WP_ISTIO_MX_TYPE    "type.googleapis.com/io.istio.http.peer_metadata.Config"
#define WP_ISTIO_NAMESPACE  "istiocustom"

typedef enum { WP_ISTIO_REPORTER_SOURCE, WP_ISTIO_REPORTER_DESTINATION } wp_istio_reporter;

/* This proxy's workload (node.metadata) and what the exchange sends for it. */
typedef struct wp_istio_local {
    wp_istio_workload w;
    const char *node_id;       /* x-envoy-peer-metadata-id */
    const char *istio_version; /* ISTIO_VERSION, NULL = absent */
    const char *mx_value;      /* x-envoy-peer-metadata (base64) */
} wp_istio_local;

/* istio.stats of one HTTP connection manager. */
typedef struct wp_istio_stats_filter {
    wp_istio_reporter reporter;
    bool disable_host_header_fallback;
    const wp_istio_local *local;
    /* the same HCM's istio.metadata_exchange, whose discovery feeds the peer labels; NULL
     * when it has none (set by the loader once every http_filters entry is decoded) */
    const struct wp_istio_mx_filter *mx;
    /* tcp_reporting_duration (Istio's default 5 s; 0 = at close only): how often the network
     * filter reports an open TCP connection (filters/network/istio_stats.h) */
    uint64_t tcp_reporting_ms;
} wp_istio_stats_filter;

/* istio.metadata_exchange of one HTTP connection manager: which methods are on, and the
 * header operations they amount to (applied as the least specific level, headers.h). */
typedef struct wp_istio_mx_filter {
    bool downstream_discovery, upstream_discovery, downstream_propagation, upstream_propagation;
    wp_header_ops req;     /* upstream request: remove (downstream discovery), set (upstream
                            * propagation) */
    wp_header_ops resp[4]; /* downstream response, by which exchange headers the request
                            * carried: bit 0 the id, bit 1 the metadata */
    const wp_istio_local *local;
} wp_istio_mx_filter;

/* The peer found by upstream discovery, kept in the stream until it ends. */
#define WP_ISTIO_PEER_BUF 384
typedef struct {
    wp_istio_workload peer; /* points into buf */
    char buf[WP_ISTIO_PEER_BUF];
} wp_istio_stream;

/* ---- labels (pure functions) ---- */

#define WP_ISTIO_NLABELS 25
/* reporter, source_workload, ..., response_flags, connection_security_policy (§7.2 order). */
extern const char *const wp_istio_label_names[WP_ISTIO_NLABELS];

typedef struct {
    wp_istio_str v[WP_ISTIO_NLABELS];
    bool tcp; /* TCP metrics: response_code and grpc_response_status are not labels */
    /* gRPC message counters: the labels up to destination_cluster only (istio_stats.cc
     * records them before it adds request_protocol, response_code, grpc_response_status,
     * response_flags and connection_security_policy) */
    bool messages;
} wp_istio_labels;

/* destination_service (host) and destination_service_name (name) as istio_stats.cc derives
 * them: the Host header unless disable_fallback; route "block_all" / "allow_any" give
 * BlackHoleCluster / PassthroughCluster; a cluster named BlackHoleCluster, PassthroughCluster
 * or InboundPassthroughCluster[Ipv4|Ipv6] gives its name; otherwise the cluster's
 * istio.services[0] host (and name, else the host up to the first '.'). route_name and cl may
 * be NULL; empty results mean "fall back" (see wp_istio_labels_build). */
void wp_istio_service(const char *route_name, const wp_cluster *cl, wp_istio_str host_header,
                      bool disable_fallback, wp_istio_str *host, wp_istio_str *name);

/* The TLS identities the reporter reads (istio_stats.cc populatePeerInfo): the first URI SAN
 * of the peer's and of our certificate on the connection it looks at, the downstream one at
 * the destination, the upstream one at the source; empty = none (plaintext, no SAN). */
typedef struct {
    wp_istio_str peer_san, local_san;
} wp_istio_sans;

/* The first of URI SANs joined by "," (wp_tsock_ssl's lists); empty for NULL or "". */
wp_istio_str wp_istio_first_san(const char *joined);

/* Every label value of one stream: f's reporter and local workload, the peer (NULL: none),
 * the connection's SANs (NULL: none), the service from wp_istio_service, response code text
 * ("0" when none) and flags ("-" when none). As istio_stats.cc: at the destination
 * source_principal = the peer SAN, destination_principal = the local SAN and
 * connection_security_policy "mutual_tls" when both exist, else "none"; at the source
 * source_principal = the local SAN, destination_principal = the peer SAN and the policy is
 * always "unknown"; a missing SAN is "unknown"; the peer's namespace comes from the peer
 * SAN's "/ns/<ns>/" when it has one, else from the peer metadata. out points into those
 * inputs and static strings. */
void wp_istio_labels_build(const wp_istio_stats_filter *f, const wp_istio_workload *peer,
                           const wp_istio_sans *sans, wp_istio_str svc_host, wp_istio_str svc_name,
                           const char *code, const char *flags, wp_istio_labels *out);

/* Makes l (from wp_istio_labels_build) the labels of a gRPC request (istio_stats.cc: the
 * request's content-type is gRPC): request_protocol "grpc", grpc_response_status the status
 * (static or caller-owned, outliving l's use; "" when none). */
void wp_istio_labels_grpc(wp_istio_labels *l, const char *grpc_status);

/* Makes l (from wp_istio_labels_build) the labels of Istio's TCP metrics: request_protocol
 * "tcp", no response_code / grpc_response_status label. */
void wp_istio_labels_tcp(wp_istio_labels *l);

/* Makes l (from wp_istio_labels_build) the labels of Istio's gRPC message counters:
 * reporter ... destination_cluster, without request_protocol, response_code,
 * grpc_response_status, response_flags and connection_security_policy. */
void wp_istio_labels_messages(wp_istio_labels *l);

/* Appends ".<label>.<value>" for every label with a non-empty value (the /stats suffix). */
void wp_istio_stats_suffix(const wp_istio_labels *l, wf_strbuf *out);
/* Appends `<label>="<value>"` pairs, comma-separated, values escaped for Prometheus. */
void wp_istio_prom_labels(const wp_istio_labels *l, wf_strbuf *out);

/* ---- series table (one per worker; single thread) ---- */

enum { WP_ISTIO_REQUESTS, WP_ISTIO_DURATION, WP_ISTIO_RQ_BYTES, WP_ISTIO_RESP_BYTES, WP_ISTIO_NM };

typedef struct {
    char *key; /* the /stats suffix, malloc'd; NULL = empty bucket */
    size_t len;
    uint64_t hash;
    uint32_t id[WP_ISTIO_NM]; /* store slot / histogram ids, WP_STAT_INVALID when failed */
} wp_istio_series;

typedef struct {
    wp_istio_series *v;
    size_t cap, n; /* cap: 0 or a power of two */
} wp_istio_table;

/* FNV-1a 64 of n bytes. */
uint64_t wp_istio_hash(const char *s, size_t n);
/* The series of key (len bytes, hash from wp_istio_hash), NULL when absent. */
wp_istio_series *wp_istio_table_find(const wp_istio_table *t, const char *key, size_t len,
                                     uint64_t hash);
/* Adds key (copied) with ids all WP_STAT_INVALID and returns it; grows the table at 3/4 load.
 * NULL on out of memory (the table is unchanged). The key must not be present. */
wp_istio_series *wp_istio_table_insert(wp_istio_table *t, const char *key, size_t len,
                                       uint64_t hash);
void wp_istio_table_free(wp_istio_table *t);

/* ---- runtime (one per process) ---- */

typedef struct wp_istio_rt wp_istio_rt;

/* Runtime for nworkers workers recording into store (borrowed). NULL on out of memory. */
wp_istio_rt *wp_istio_rt_new(wp_stats *store, unsigned nworkers);
void wp_istio_rt_free(wp_istio_rt *rt);

/* Registers istio_build for config c when a listener has istio.stats and sets it to 1 in
 * shard sh (the main thread's). Returns 0, or -1 when the registration failed. */
int wp_istio_register_build(wp_stats *store, const wp_config *c, wp_stats_shard *sh);

/* Records one stream in worker's shard: the series of l (registered on first sight) gets +1
 * request and the three histogram samples. Returns 0, or -1 when out of memory (the sample is
 * dropped). Only the worker's own thread may call it. */
int wp_istio_record(wp_istio_rt *rt, unsigned worker, wp_stats_shard *sh, const wp_istio_labels *l,
                    uint64_t duration_ms, uint64_t rq_bytes, uint64_t resp_bytes);

/* Records TCP metrics in worker's shard for the series of l (wp_istio_labels_tcp; registered
 * on first sight): opened / closed connections and sent / received bytes added to
 * istio_tcp_connections_opened_total, istio_tcp_connections_closed_total,
 * istio_tcp_sent_bytes_total and istio_tcp_received_bytes_total. 0, or -1 when out of
 * memory. Only the worker's own thread may call it. */
int wp_istio_record_tcp(wp_istio_rt *rt, unsigned worker, wp_stats_shard *sh,
                        const wp_istio_labels *l, uint64_t opened, uint64_t closed, uint64_t sent,
                        uint64_t received);

/* Records the gRPC messages of one stream in worker's shard for the series of l
 * (wp_istio_labels_messages; registered on first sight): requests added to
 * istio_request_messages_total, responses to istio_response_messages_total (a series is
 * registered, and shows 0, even when both are 0, as Istio adds 0). 0, or -1 when out of memory.
 * Only the worker's own thread may call it. */
int wp_istio_record_messages(wp_istio_rt *rt, unsigned worker, wp_stats_shard *sh,
                             const wp_istio_labels *l, uint64_t requests, uint64_t responses);

/* ---- request-path work (istio_filter.c; the stream's worker thread) ----
 * The filters of the HTTP filter chain (filters/http/istio_filters.c) call these. */

struct wp_stream;
/* Upstream discovery on the upstream response's headers (before they are forwarded): true
 * when f's HCM has istio.metadata_exchange with upstream_discovery and the response carried a
 * valid x-envoy-peer-metadata that fits out (the peer is then copied into out). */
bool wp_istio_upstream_peer(const wp_istio_stats_filter *f, const h1_header *hdrs, size_t n,
                            wp_istio_stream *out);
/* The stream ends (next to the access log): records the Istio metrics of s with f's labels;
 * upstream_peer is what upstream discovery found (NULL: none; a source reporter's peer);
 * header_grpc_status the grpc-status of the response headers the encoder filters saw (-1
 * none). */
void wp_istio_stream_done(struct wp_stream *s, const wp_istio_stats_filter *f,
                          const wp_istio_workload *upstream_peer, int header_grpc_status);
/* The exchange's header operations for the downstream response of a request (req NULL: no
 * request head): by which exchange headers the request carried (downstream_propagation). */
const wp_header_ops *wp_istio_mx_resp_ops(const wp_istio_mx_filter *mx, const h1_message *req);

#endif
