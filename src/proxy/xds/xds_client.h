/*
 * xds_client.h - weft-proxy's xDS client: one aggregated (ADS) stream to the control plane
 * named by the bootstrap's dynamic_resources.ads_config (config.h wp_ads_config), on the main
 * thread's libuv loop (the loop that runs admin). ads_config.api_type GRPC speaks
 * StreamAggregatedResources (state of the world, below); DELTA_GRPC speaks
 * DeltaAggregatedResources (Envoy's NewGrpcMuxImpl / DeltaSubscriptionState: legacy wildcard
 * CDS / LDS, EDS / RDS subscribe and unsubscribe, initial_resource_versions on reconnect,
 * resources updated by name and removed by removed_resources; details in
 * xds_client_delta.c and xds/discovery.h). Both compose the same accepted state, so apply,
 * the config dump, readiness, the stats and the stream's life below are the same; the log
 * lines name the method in use.
 *
 * Protocol, following Envoy's GrpcMuxImpl / GrpcStream (envoy-istio-behaviour.md §8.4, §8.5):
 *  - on stream start: a CDS wildcard request (node {id, cluster, metadata} from the
 *    bootstrap's node on the first request of the stream, or on every request when
 *    set_node_on_first_message_only is false), then LDS; then EDS and RDS with the names
 *    already known (after a reconnect), each with its last accepted version and no nonce.
 *  - each response is applied at once: the accepted resources are composed into an effective
 *    bootstrap (xds_compose.h) that callbacks.apply loads and publishes. Then the client ACKs
 *    (version_info = the response's version, response_nonce = its nonce) or NACKs (version of
 *    the last accepted response, the nonce, error_detail {13, message}) and keeps the last good
 *    state. NACK messages name the resource in Envoy's shape: "Error adding/updating
 *    listener(s) 0.0.0.0_80: <reason>" (xds_compose.h wp_xds_nack_text).
 *  - a CDS update is applied cluster by cluster, as Envoy's CdsApiHelper: a cluster that fails
 *    to load keeps its accepted version (a new one is left out), the others apply, and the
 *    update is NACKed "Error adding/updating cluster(s) NAME: reason, NAME: reason"; the set
 *    kept as accepted is the one applied (xds_client_state.c leave_out_cluster).
 *  - a rejected LDS update leaves Envoy's listener error states for /config_dump
 *    (ListenersConfigDump.DynamicListener.error_state, config_dump.h): the listener it failed
 *    on with {failed_configuration, last_update_attempt, details = the reason without the
 *    "Error adding/updating listener(s) <name>: " prefix}, plus an unnamed entry per
 *    failure; they replace those of the previous LDS update and an accepted LDS update
 *    clears them, as Envoy's ListenerManagerImpl (begin/endListenerUpdate, error_state_tracker_).
 *    They reach every snapshot composed since through its dump ("listener_errors"), updated
 *    in place on this thread; before the first accepted update of any type there is no
 *    such snapshot and a rejection is not shown.
 *  - after CDS is applied the EDS subscription follows the EDS clusters' service names; after
 *    LDS the RDS subscription follows the listeners' route_config_names (a request is sent
 *    when the set changes, after the ACK, as Envoy pauses EDS/RDS during CDS/LDS updates).
 *    Envoy waits for EDS before activating new clusters and for RDS before activating
 *    listeners; weft applies after every response: a new EDS cluster serves with no endpoints
 *    until its assignment arrives, a listener whose route configuration is missing is left
 *    out (warming) until it arrives.
 *  - LDS/CDS responses replace the whole set; RDS/EDS responses update the named resources
 *    (names no longer subscribed are dropped).
 *  - SDS (SotW and delta): after LDS the SDS subscription follows the
 *    credentialName secrets (`kubernetes://...` over ads {}) the listeners' TLS contexts name
 *    (xds_compose.h sds_names); the accepted Secrets go to callbacks.secrets, which checks and
 *    stores them (a Secret Envoy could not load NACKs the response, the previous ones stay).
 *    A listener waits (warming) for its secrets until they arrive or their
 *    initial_fetch_timeout (Envoy's default 15 s) passes; then it serves and the chains
 *    without their secret fail their handshakes (xds_client_sds.c).
 *  - Reconnect after any close that was not asked for, with Envoy's
 *    JitteredExponentialBackOffStrategy: the n-th delay is uniform in [0, I_n), I_1 = 500 ms,
 *    doubling up to 30 s; reset to the base after any received message.
 *  - Close logging (logger "config"), as Envoy's GrpcStream::logClose: status 0 at debug;
 *    statuses other than DeadlineExceeded(4), ResourceExhausted(8), Unavailable(14) at warn
 *    "StreamAggregatedResources gRPC config stream to xds-grpc closed: <code>, <message>"
 *    (DeltaAggregatedResources for a delta stream);
 *    those three at debug the first time, at warn "... closed: <code>, <message> (previously
 *    <code>, <message> since <N>s ago)" when the status changes, and at warn "... closed
 *    since <N>s ago: <code>, <message>" once the same status has lasted over 30 s. A
 *    connection that fails or ends without grpc-status closes with 14 (Unavailable) and
 *    Envoy's "upstream connect error or disconnect/reset before headers. reset reason:
 *    connection failure" (never answered) or "... connection termination".
 *    Updates: debug "gRPC config for <type_url> accepted with <n> resources with version
 *    <v>", warn "gRPC config for <type_url> rejected: <error>".
 *
 * The stream over TLS (istiod's 15012: the xds-grpc cluster's static UpstreamTlsContext,
 * xds_client_tls.c): the context's files are read again before each connection (a rotated root
 * reaches the next one) and the stream carries "authorization: Bearer <token>" from
 * opts.token_path, read for each connection, as pilot-agent's per-RPC credentials; istiod's
 * XDS_AUTH refusals arrive as closes (16 "authentication failure", 7 "authorization failed:
 * ...") logged as below.
 *
 * Two notions of "connected":
 *  - control_plane.connected_state is Envoy's: 1 as soon as the stream is opened (before TCP
 *    even connects, before any answer), 0 when it ends. In a reconnect loop against a control
 *    plane that accepts and closes it flaps 1/0, exactly as Envoy's does.
 *  - "up" (weft): the control plane has answered on the stream (a message arrived) and the
 *    stream has not ended. cluster.<ads>.upstream_cx_active, the weft gauges, the on_state
 *    callback (readiness) and wp_xds_status.connected follow it, so they do not flap.
 *
 * Stats (registered in store on start, written to shard from the loop's thread):
 *   control_plane.connected_state          gauge 1 while a stream is open, else 0 (Envoy's)
 *   control_plane.weft.connected_seconds   gauge: seconds continuously up, 0 when down
 *   control_plane.weft.seconds_since_update gauge: seconds since the last accepted update
 *                                           (0 before any); both updated every second
 *   cluster.<ads cluster>.upstream_cx_total        counter: connection attempts
 *   cluster.<ads cluster>.upstream_cx_active       gauge: connections that answered, open
 *   cluster.<ads cluster>.upstream_cx_connect_fail counter: attempts that ended unanswered
 *   cluster_manager.cds.update_attempt|update_success|update_rejected|update_failure
 *   listener_manager.lds.update_attempt|update_success|update_rejected|update_failure
 *   cluster_manager.cds.version|update_time|init_fetch_timeout (and listener_manager.lds.*),
 *   control_plane.pending_requests|rate_limit_enforced: see xds_client_stats.c
 * (update_failure: a stream that closed, counted once per type, as Envoy's
 * ConnectionFailure; update_attempt counts every outcome.) The cluster stats use the cluster's
 * alt_stat_name when set, as pstats.h does, so they are the same slots.
 *
 * Test hook: environment WEFT_PROXY_TEST_REJECT_TYPE=CDS|LDS|RDS|EDS (read at start) makes
 * every response of that type be NACKed with "rejected by test hook
 * WEFT_PROXY_TEST_REJECT_TYPE". WEFT_PROXY_SDS_INITIAL_FETCH_TIMEOUT_MS=N (read at start)
 * replaces Envoy's 15 s default initial fetch timeout of the SDS secrets whose sds_config has
 * no initial_fetch_timeout (Istio writes none for credentialName secrets).
 *
 * Threads and ownership: everything runs on `loop`'s thread; the getters are for that thread
 * too. The client copies what it needs from cfg at start (cfg may be freed afterwards).
 * wp_xds_client_stop closes the stream and handles; memory is freed from libuv close
 * callbacks, so run the loop after stopping before closing it.
 */
#ifndef WEFT_PROXY_XDS_CLIENT_H
#define WEFT_PROXY_XDS_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "core/strbuf.h"
#include "proxy/config/config.h"
#include "proxy/stats/stats.h"
#include "proxy/xds/xds_client_types.h"

/* Starts the client for cfg->ads (which must be non-NULL) and connects at once. store/shard
 * receive the stats above (shard: the loop thread's). opts may be NULL. Returns 0 and *out, or
 * -1 with a message in err (no ads config, out of memory, libuv failure). */
int wp_xds_client_start(uv_loop_t *loop, const wp_config *cfg, wp_stats *store,
                        wp_stats_shard *shard, const wp_xds_callbacks *cb,
                        const wp_xds_client_opts *opts, wp_xds_client **out, wf_strbuf *err);

/* Intentional close: no reconnect, connected_state 0, no callbacks after return. NULL ok. */
void wp_xds_client_stop(wp_xds_client *c);

/* The client's state now (wp_xds_status, xds_client_types.h). */
void wp_xds_client_status(const wp_xds_client *c, wp_xds_status *out);

#endif
