/*
 * xds_client_state.h - the xDS client's state and the steps both protocols share
 * (xds_client_state.c), its stats (xds_client_stats.c), and the entry points of the two
 * protocols (xds_client_sotw.c, xds_client_delta.c) the stream (xds_client.c) calls. The
 * layers, top down: xds_client.c -> the protocols -> state and stats; none calls up.
 * Not a public API.
 */
#ifndef WEFT_PROXY_XDS_CLIENT_STATE_H
#define WEFT_PROXY_XDS_CLIENT_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/xds/xds_client_types.h"
#include "xds/h2_stream.h"

/* The types the client subscribes to: wf_xds_type values WF_XDS_CDS..WF_XDS_SDS (SDS: the
 * credentialName secrets the listeners name). */
#define XC_NTYPES 5

enum { XC_UPD_ATTEMPT, XC_UPD_SUCCESS, XC_UPD_REJECTED, XC_UPD_FAILURE, XC_UPD_N };

struct wp_xds_client {
    uv_loop_t *loop;
    wp_xds_callbacks cb;
    wp_xds_client_opts opts;
    int reject_type; /* test hook: the type to reject, -1 = none */
    /* from the bootstrap */
    char host[64];
    int port;
    char *pipe_path;        /* NULL: host:port */
    struct wf_tls_ctx *tls; /* the xDS cluster's static UpstreamTlsContext (a reference), NULL =
                             * plaintext; its sni in tls_sni */
    char *tls_sni;
    bool tls_files;          /* its DataSources name files, followed (xds_client_tls.c) */
    uint64_t tls_files_hash; /* of their bytes at the last check (0: none yet; 1: unreadable) */
    char *token_path;        /* opts.token_path, copied; NULL = none */
    char *auth;              /* "Bearer <token>" of the current connection */
    const char *md[3];       /* its gRPC metadata: authorization, auth, NULL */
    bool token_warned;
    char *cluster_name; /* for logs */
    bool node_once;     /* set_node_on_first_message_only */
    bool delta;         /* api_type DELTA_GRPC: DeltaAggregatedResources */
    bool want_cds, want_lds;
    bool want_nds;          /* DNS_CAPTURE "true" and a name_table callback (SotW only) */
    wf_xds_client_type nds; /* NDS state: outside types[] (not composed into the bootstrap) */
    wf_xds_node node;
    json_t *base; /* the bootstrap the resources are added to (own reference) */
    /* protocol state (kept across streams): SotW, or delta (dtypes) when c->delta; the SotW
     * state is initialised in both modes (its type_url names the type in logs) */
    wf_xds_client_type types[XC_NTYPES];
    wf_xds_delta_client_type dtypes[XC_NTYPES];
    json_t *sets[XC_NTYPES]; /* accepted resources: name -> entry (xds_compose.h) */
    /* the stream */
    wf_h2_conn *conn;
    wf_h2_call *call;
    int live_conns; /* connections not yet closed (on_conn_closed pending) */
    bool node_sent, answered, answer_expired, stopping;
    uv_timer_t retry, tick, answer;
    int open_handles;
    uint64_t backoff_next, rng;
    bool close_set; /* Envoy's logClose state */
    int close_status;
    char *close_msg;
    uint64_t close_since;
    /* status (uv_now milliseconds) */
    uint64_t up_since, last_update, attempts;
    bool updated, cds_applied, lds_applied;
    char *last_nack;
    char *partial; /* NACK text of an update that was applied with failures, until sent */
    /* Envoy's listener error states (ListenerManagerImpl error_state_tracker_ and
     * overall_error_state_) after the last LDS update: an array of DynamicListener-shaped
     * entries, {"name", "error_state"} for a listener that failed and {"error_state"} for
     * each failure of the update, empty after an accepted one. Created at start and only
     * changed in place: every dump composed since references it as "listener_errors"
     * (xds_compose.h), so the published snapshot's /config_dump shows a rejection at once. */
    json_t *lds_errors;
    /* The listener the current LDS update failed on (set by xc_compose_apply, taken by
     * xc_note_rejected): {"name", "resource", "details"}; NULL when not known. */
    json_t *lds_failed;
    /* stats */
    wp_stats_shard *sh;
    uint32_t s_state, s_up, s_since, s_cx_total, s_cx_active, s_cx_fail;
    uint32_t s_upd[2][XC_UPD_N]; /* [0] cluster_manager.cds, [1] listener_manager.lds */
    int64_t g_state, g_up, g_since, g_cx_active;
    /* per [0] cds / [1] lds: version (xxHash64 of version_info), update_time (ms since the
     * epoch), init_fetch_timeout; and the initial fetch timers (0 ms = none) */
    uint32_t s_version[2], s_update_time[2], s_init_timeout[2];
    int64_t g_version[2], g_update_time[2];
    uv_timer_t init_fetch[2];
    uint64_t init_fetch_ms[2];
    /* SDS (credentialName secrets): the initial fetch timer of the names subscribed while
     * missing, and the names whose fetch timed out (object name -> true; their listeners then
     * serve, failing the handshakes of the chains without their secret, xds_compose.h) */
    uv_timer_t sds_fetch;
    uint64_t sds_fetch_ms;
    json_t *sds_expired;
    json_t *lds_active; /* name -> entry of the listener version serving (xds_compose.h), or
                         * NULL: an update that warms leaves the older one serving */
    uint64_t sds_default_fetch_ms; /* WEFT_PROXY_SDS_INITIAL_FETCH_TIMEOUT_MS; 0 = 15 s */
    /* control_plane.pending_requests / rate_limit_enforced: no rate limiting, stay 0 */
    uint32_t s_pending, s_rate_limited;
};

/* xds_client_tls.c: TLS to istiod's secure port (its header comment says how) */
/* The xDS cluster's static TLS context (a reference) and its files' fingerprint; true, or false
 * with err (SDS secrets on this connection, out of memory). */
bool xc_tls_init(wp_xds_client *c, const wp_cluster *cl, wf_strbuf *err);
/* Before a connection: the context built again when its files changed. */
void xc_tls_refresh(wp_xds_client *c);
/* The metadata of the next stream (the Bearer token over TLS), NULL = none; valid until the
 * next call. */
const char *const *xc_tls_metadata(wp_xds_client *c);

/* xds_client_state.c: the state, and the steps both protocols share */
/* update_attempt and the update_<kind> counter of type (CDS and LDS only). */
void xc_count_update(wp_xds_client *c, int type, int kind);
/* Encodes and sends req on the current call; 0 or negative. */
int xc_send(wp_xds_client *c, const wf_xds_request *req);
/* Sends the JSON message j (consumed) of type type_url on the current call; 0 or negative
 * (logged). */
int xc_send_json(wp_xds_client *c, json_t *j, const char *type_url);

bool xc_state_init(wp_xds_client *c, const wp_config *cfg);
void xc_state_free(wp_xds_client *c);
/* The accepted version of type t: SotW version_info or delta system_version_info; NULL. */
const char *xc_version(const wp_xds_client *c, int t);
/* RFC 3339 UTC now (last_updated of the entries). */
void xc_now_text(char *buf, size_t cap);
/* Composes the accepted state with set as type t's (version: its version) and hands it to
 * callbacks.apply. 0 with *dyn filled (caller frees), or -1 with the NACK text in err. */
int xc_compose_apply(wp_xds_client *c, int t, json_t *set, const char *version, wp_xds_dynamic *dyn,
                     wf_strbuf *err);
/* The step both protocols take on a response's new set of type t (changed: it differs from
 * the accepted set): composed and applied (xc_compose_apply) when changed or nothing of t was
 * accepted yet, else kept as is. Returns set, or NULL (set freed, the NACK text in err) when
 * compose / apply failed; *composed is true when *dyn was filled (the caller frees it). */
json_t *xc_compose_new_set(wp_xds_client *c, int t, json_t *set, bool changed, const char *version,
                           wp_xds_dynamic *dyn, bool *composed, wf_strbuf *err);
/* Drops the accepted resources of type t whose names are not in names. */
void xc_prune(wp_xds_client *c, int t, const wf_xds_names *names);
/* A rejected response of type t: warn "gRPC config for <type_url> rejected: <msg>",
 * update_rejected, on_update(false), last_nack. The caller sends the NACK. */
void xc_note_rejected(wp_xds_client *c, int t, const char *version, const char *msg);
/* An accepted response of type t: update_success and the status (updated, cds/lds applied).
 * The caller sends the ACK and calls on_update. */
void xc_note_accepted(wp_xds_client *c, int t);

/* xds_client_stats.c */
/* A response of type was accepted (version: its version_info) or rejected: the subscription
 * stats (version, update_time) and the end of the initial fetch timer. */
void xc_count_accepted(wp_xds_client *c, int type, const char *version);
void xc_count_rejected(wp_xds_client *c, int type);
/* xxHash64 (seed 0) of s, as Envoy's HashUtil::xxHash64 for the `version` gauges. */
uint64_t xc_xxhash64(const char *s, size_t len);
/* Registers the stats above in st (false on failure; registration is at start). */
bool xc_register_more_stats(wp_xds_client *c, wp_stats *st);
/* Starts the initial fetch timers of the subscribed types (init_fetch_ms set, timers
 * initialised). 0 or -1. */
int xc_start_init_fetch(wp_xds_client *c);

/* xds_client_sotw.c */
/* The requests of a new stream: CDS, EDS (names known), LDS, RDS (names known). */
void xc_send_initial(wp_xds_client *c);
/* One DiscoveryResponse (JSON text). */
void xc_on_response(wp_xds_client *c, const char *text, size_t len);

/* xds_client_sds.c: credentialName secrets (both protocols) */
/* After an update composed into dyn: the wanted names go to callbacks.secrets and the initial
 * fetch timer is armed when a secret the listeners name is missing. */
void xc_sds_watch(wp_xds_client *c, const wp_xds_dynamic *dyn);
/* A response's accepted Secret set handed to callbacks.secrets; 0 or -1 with the NACK text. */
int xc_sds_store(wp_xds_client *c, const json_t *set, wf_strbuf *err);

/* xds_client_delta.c */
/* The requests of a new stream: CDS, EDS, LDS, RDS, each when due (wf_xds_delta_client_
 * pending), with initial_resource_versions from the accepted sets. */
void xc_delta_send_initial(wp_xds_client *c);
/* One DeltaDiscoveryResponse (JSON text). */
void xc_delta_on_response(wp_xds_client *c, const char *text, size_t len);

#endif
