/*
 * ads.h - weft-pilot's xDS server: the aggregated discovery service (SotW and delta) over
 * gRPC/HTTP2 (xds/h2_stream.h), per-proxy watches and sync state, pushes.
 *
 * Istio behaviour followed (pilot/pkg/xds/ads.go, delta.go, discovery.go, monitoring.go;
 * reference envoy-istio-behaviour.md §8.5-8.6):
 *  - one call = one proxy connection, id "<node.id>-<n>" (istiod's connectionID). The first
 *    request must carry a node; wf_pilot_proxy_from_node turns it into the proxy. A bad node
 *    ends the call with grpc-status 3 INVALID_ARGUMENT and the reason as grpc-message; so does
 *    an undecodable request.
 *  - SotW requests are classified by wf_xds_watch (discovery.h) exactly as istiod's
 *    shouldRespond: INITIAL and RESOURCE_CHANGE get a response (wf_pilot_generate output);
 *    ACK and STALE_NONCE get none; a NACK gets none, keeps the proxy's acked version, records
 *    error_detail (sync ERROR until the next ACK), counts pilot_total_xds_rejects{type} and
 *    logs "ADS:<TYPE>: ACK ERROR <conID> <code>:<message>" at warning.
 *  - versions: one push version per snapshot, istiod's "<RFC3339 UTC>/<n>"
 *    ("2026-11-30T02:33:10Z/3"); nonces are random UUIDs, unique per response.
 *  - pushes: wf_ads_push(snapshot) queues every connected proxy for a push in Istio's order
 *    CDS, EDS, LDS, RDS of each type it watches (full push); a snapshot whose change is
 *    ENDPOINTS (source.h) is istiod's incremental EDS push (pilot/pkg/xds/eds.go, PushRequest
 *    Full false with ServiceEntry-kind ConfigsUpdated; pilot/eds_update.h): no CDS, LDS or RDS
 *    is generated or sent; only the proxies whose EDS watch holds a cluster of an updated
 *    service (snapshot eds_services) are queued, and they get EDS with those clusters only:
 *    on a SotW stream too, as istiod's EdsGenerator does (edsUpdatedServices: "Cluster was
 *    not updated, skip recomputing"); Envoy keeps the ClusterLoadAssignments a SotW EDS
 *    response leaves out (only LDS and CDS responses are the whole set, xDS protocol
 *    "Grouping resources into responses", envoy#13009), so does weft-proxy. A delta stream
 *    gets the changed ClusterLoadAssignments among those, and no removals. A proxy whose own
 *    Pod changed gets a full push instead (istiod's ProxyUpdate for the proxy's workload).
 *    Pushes merged while a proxy waits merge their services; a full push or request of EDS
 *    makes it the whole watch. After an incremental push the next full push resends EDS.
 *    The queue (Istio's push queue and push throttle, ads_push.c) is served from the loop's
 *    idle phase, 32 proxies per loop turn, and pauses while more than 48 MiB wait in the
 *    HTTP/2 send queues, so that the loop keeps accepting and reading ACKs, early proxies
 *    converge early and responses are never all queued at once. A proxy still waiting when
 *    the next push comes is pushed once, with the newest snapshot and version (Istio merges
 *    push requests). SotW requests (INITIAL, RESOURCE_CHANGE) are answered through the same
 *    queue, on the next loop turn. Resources come from the snapshot's generation cache
 *    (gen_cache.h, istiod's XdsCache) unless a generator is injected.
 *    Deviation, for scale: a type whose generated resources are byte-identical to what was
 *    last sent to that proxy is NOT resent on a push (istiod would resend); requests
 *    (INITIAL, RESOURCE_CHANGE) are always answered. A change of VirtualServices only pushes
 *    RDS to sidecars (their CDS, EDS and LDS do not read VirtualServices, so they would be
 *    generated only to be found unchanged); routers still get the full push.
 *    Responses are queued without copying the resources: the generation cache's serialized
 *    text is shared by every proxy it is sent to (xds/h2_stream.h wf_h2_call_sendv).
 *  - ACKs: a SotW ACK of the last response whose resource_names are byte-identical to the
 *    request the watch's names came from is recorded without decoding the request
 *    (xds/discovery.h, the ACK fast path); everything else is decoded and classified as above.
 *    The watches' name lists are interned (one copy per distinct list, shared by proxies).
 *  - delta xDS (DeltaAggregatedResources): per-type subscriptions (resource_names_subscribe /
 *    _unsubscribe, "*" or an empty first subscribe = wildcard for CDS and LDS; RDS and EDS
 *    are explicit), per-resource versions (FNV-1a 64 of the resource's JSON, 16 hex digits),
 *    initial_resource_versions honoured on reconnect, removed_resources for resources the
 *    proxy has that no longer exist; only changed resources are sent. ACK/NACK by
 *    response_nonce as SotW; the sync state uses the same wf_xds_watch.
 *    Both methods are served on the one listener (istiod serves both on 15010): the call's
 *    :path (xds/h2_stream.h wf_h2_call_path) says which protocol a stream speaks.
 *  - XDS_AUTH (istiod's, xds_auth.h; ads_auth.c): streams of the secure listener (istiod's
 *    15012, wf_ads_listen_secure) are authenticated when they open (a verified client
 *    certificate's URI SANs, else "authorization: Bearer <token>"; none: UNAUTHENTICATED
 *    "authentication failure") and authorized at their first request (an identity of the
 *    node's namespace and SERVICE_ACCOUNT; else PERMISSION_DENIED "authorization failed:
 *    ..."); both refusals are listed with the bad nodes (wf_ads_rejected_at). The plaintext
 *    listener is never authenticated, as istiod's 15010.
 *  - keepalive: HTTP/2 PING every ping_interval_ms, connection closed when no PING ACK
 *    arrives within ping_timeout_ms (gRPC keepalive, istiod's --keepaliveInterval).
 *  - disconnected proxies stay listed (connected=false) for retention_ms, then are dropped.
 *
 * Metrics (Istio's names, pilot/pkg/xds/monitoring.go): pilot_xds_pushes{type} counter
 * (responses sent, type "cds|eds|lds|rds"), pilot_xds_push_time{type} histogram (seconds to
 * generate and queue one response), pilot_proxy_convergence_time histogram (seconds from the
 * first config event of the change to the push to a proxy, as istiod measures it: at send),
 * pilot_xds gauge (connected proxies), pilot_total_xds_rejects{type} counter (NACKs),
 * pilot_sds_certificate_errors_total counter (pilot/sds.h).
 *
 * SDS (type Secret): the credentialName Secrets a proxy subscribes to (pilot/sds.h), generated
 * with the failures logged (logger "config", warn) and counted; pushed again, as istiod's
 * sdsNeedsPush, only when a push's changes include a Secret (or are unknown, or MeshConfig
 * changed), and then sent only when the resources differ.
 *
 * Ownership: the server owns its connections; wf_ads_conn pointers are valid until the next
 * loop iteration (read them, do not keep them). Single-threaded (one loop). No globals.
 */
#ifndef WF_PILOT_ADS_H
#define WF_PILOT_ADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "pilot/generate.h"
#include "pilot/source.h"
#include "pilot/xds_auth.h"
#include "tls/tls.h"
#include "xds/discovery.h"
#include "xds/h2_stream.h" /* WF_XDS_ADS_PATH, WF_XDS_DELTA_PATH */

typedef json_t *(*wf_ads_generate_fn)(const wf_pilot_env *env, const wf_pilot_proxy *p,
                                      wf_xds_type t, const wf_xds_names *names);
typedef int (*wf_ads_node_fn)(const wf_xds_node *node, const wf_store *store, wf_pilot_proxy *out,
                              char *err, size_t cap);

/* Another gRPC method served on the xDS listener (istiod hosts the CA service next to ADS):
 * calls opened on path go to h, with h.ud; ADS never sees them. */
typedef struct wf_ads_service {
    const char *path; /* ":path", e.g. "/istio.v1.auth.IstioCertificateService/CreateCertificate" */
    wf_h2_handlers h;
} wf_ads_service;
#define WF_ADS_MAX_SERVICES 4

typedef struct wf_ads_opts {
    const char *ip;              /* the xDS listener (SotW and delta); NULL = "127.0.0.1" */
    int port;                    /* 0 = pick a free port */
    const char *pipe;            /* non-NULL: listen on this Unix socket instead of ip:port (Istio's
                                  * xds-grpc pipe); it must not exist, it is not removed */
    uint64_t ping_interval_ms;   /* 0 = no keepalive pings */
    uint64_t ping_timeout_ms;    /* 0 = 20000 */
    size_t max_msg;              /* largest request accepted, bytes; 0 = 4 MiB */
    uint64_t retention_ms;       /* how long disconnected proxies stay listed; 0 = 300000 */
    wf_ads_generate_fn generate; /* NULL = wf_pilot_generate (tests inject fakes) */
    wf_ads_node_fn proxy_from_node; /* NULL = wf_pilot_proxy_from_node */
    const wf_ads_service *services; /* other methods on the listener (copied; the path
                                     * strings must outlive the server) */
    size_t n_services;              /* at most WF_ADS_MAX_SERVICES */
    /* wf_pilot_env's jwksUri resolver for every generation (NULL = none) */
    char *(*jwks_resolve)(void *arg, const char *jwks_uri, const char *issuer, long timeout_ms);
    void *jwks_arg;
} wf_ads_opts;

/* Histogram with fixed upper bounds (seconds), Prometheus style. */
#define WF_ADS_HIST_MAX 12
typedef struct wf_ads_hist {
    const double *bounds; /* n_bounds upper bounds, ascending (+Inf implied) */
    size_t n_bounds;
    uint64_t counts[WF_ADS_HIST_MAX]; /* per bucket (not cumulative); last = +Inf */
    uint64_t count;
    double sum;
} wf_ads_hist;

typedef struct wf_ads_metrics {
    uint64_t pushes[WF_XDS_NTYPES];
    uint64_t rejects[WF_XDS_NTYPES];
    wf_ads_hist push_time[WF_XDS_NTYPES];
    wf_ads_hist convergence;
    uint64_t full_pushes, eds_pushes; /* wf_ads_push calls by kind */
    uint64_t last_push_proxies;       /* proxies the last wf_ads_push queued */
    uint64_t sds_cert_errors;         /* pilot_sds_certificate_errors_total (pilot/sds.h) */
} wf_ads_metrics;

/* Per type of one connection. */
typedef struct wf_ads_type {
    wf_xds_watch w;     /* SotW and delta sync state */
    int64_t sent_at_ms; /* wall clock of the last response, 0 = never */
    uint64_t sent_hash; /* FNV-1a of the resources last sent (SotW) */
    bool sent_any;
    bool wildcard;      /* delta: wildcard subscription */
    json_t *subscribed; /* delta: object of explicitly subscribed names -> true */
    json_t *versions;   /* delta: object name -> version the proxy has (as sent) */
} wf_ads_type;

typedef struct wf_ads wf_ads;

/* A proxy's control-plane history (weft-pilot's web view, ui_proxies.h): its streams
 * connected (detail: the connection id and peer) and disconnected (the reason), the NACKs
 * ("<TYPE>: <code>: <message>") and the first ACK of each type per stream ("<TYPE> <version>").
 * The last WF_ADS_HISTORY events are kept per proxy, with the retained (disconnected) entry; a
 * reconnecting proxy's new entry takes over the history of the one it replaces. */
#define WF_ADS_HISTORY        32
#define WF_ADS_HISTORY_DETAIL 512 /* bytes of detail kept per event, at most */
typedef enum wf_ads_event_kind {
    WF_ADS_EV_CONNECTED,
    WF_ADS_EV_DISCONNECTED,
    WF_ADS_EV_NACK,
    WF_ADS_EV_ACK,
} wf_ads_event_kind;
typedef struct wf_ads_event {
    int64_t t_ms; /* wall clock */
    wf_ads_event_kind kind;
    char *detail; /* heap, NULL = none */
} wf_ads_event;
typedef struct wf_ads_history {
    wf_ads_event ev[WF_ADS_HISTORY]; /* a ring: next is the slot written next */
    uint8_t n, next;
} wf_ads_history;

typedef struct wf_ads_conn {
    char *id; /* istiod connection id "<proxy id>-<n>" */
    bool has_proxy;
    wf_pilot_proxy proxy;
    bool delta;           /* a DeltaAggregatedResources stream */
    bool authenticated;   /* caller holds the identities the secure port authenticated */
    bool refused;         /* authentication or authorization ended the call: no more requests */
    wf_xds_caller caller; /* (xds_auth.h); empty on the plaintext port or without XDS_AUTH */
    struct wf_tr_pending *review; /* XDS_AUTH: a TokenReview in flight (ca_tokenreview.h);
                                   * the stream's requests wait in held until it answers */
    struct wf_ads_held *held, **held_tail;
    size_t held_bytes;
    char address[128]; /* the peer, "ip:port" or "unix:path" (istiod's adsz "address");
                        * "" when unknown */
    bool connected;
    int64_t connected_at_ms, disconnected_at_ms; /* wall clock */
    wf_ads_type types[WF_XDS_NTYPES];
    struct wf_h2_call *call; /* NULL once disconnected */
    wf_ads *ads;
    /* the push queue (ads_push.c): waiting types, bit 1 << wf_xds_type */
    struct wf_ads_conn *q_next, *q_prev;
    bool q_in;
    unsigned q_push;         /* pushes: sent only when the resources changed */
    unsigned q_force;        /* requests: answered even when unchanged */
    int64_t q_changed_at_ms; /* first config event of the merged pushes; 0 = requests only */
    json_t *q_eds_services;  /* EDS waits as an incremental push (istiod's edsUpdatedServices):
                              * only the watched clusters of these hosts (object host -> true);
                              * NULL: the whole watch */
    wf_ads_history history;  /* the proxy's control-plane events (the web view) */
    unsigned acked_once;     /* types ACKed on this stream, bit 1 << wf_xds_type */
} wf_ads_conn;

/* Starts listening. Returns 0 and *out, or -1 with a message naming the address in err. */
int wf_ads_start(uv_loop_t *loop, const wf_ads_opts *opts, wf_ads **out, char *err, size_t cap);
/* The bound port (host order); 0 on a Unix socket. */
int wf_ads_port(const wf_ads *a);

/* istiod's secure gRPC port (15012): the same methods and services as the xDS listener, over
 * TLS with tls (a server context of src/tls; a reference is taken). Returns 0, or -1 with a
 * message naming the address in err. */
int wf_ads_listen_secure(wf_ads *a, const char *ip, int port, wf_tls_ctx *tls, char *err,
                         size_t cap);
/* XDS_AUTH on the secure port (xds_auth.h): its streams are authenticated when they open, by
 * the verified client certificate or a token of cas (its key and trust domain, read for each
 * stream), and authorized for their node at the first request; cas NULL turns it off
 * (XDS_AUTH=false). The plaintext listener never authenticates, as istiod's 15010. */
struct wf_ca_server;
void wf_ads_set_secure_auth(wf_ads *a, const struct wf_ca_server *cas);
/* A new serving certificate for the secure port: connections from now on use tls. */
void wf_ads_set_secure_tls(wf_ads *a, wf_tls_ctx *tls);
/* The secure port's bound port, -1 when there is none. */
int wf_ads_secure_port(const wf_ads *a);

/* A new snapshot: kept (one reference taken), a push version made, and every connected proxy
 * pushed according to snap->change (NONE: the snapshot is only kept, for the debug views;
 * no new version). */
void wf_ads_push(wf_ads *a, wf_snapshot *snap);
/* Current snapshot (borrowed) and push version ("" before any). */
wf_snapshot *wf_ads_snapshot(const wf_ads *a);
/* Listeners again for every connected proxy on the current snapshot (a new version): what a
 * RequestAuthentication jwksUri key set that pilot fetched changes (pilot/jwks_fetch.h). */
void wf_ads_push_listeners(wf_ads *a);
const char *wf_ads_version(const wf_ads *a);

/* Connections, connected and retained, in connection order. */
/* The last WF_ADS_MAX_REJECTED streams refused because of their node (bad id, metadata...) or
 * by XDS_AUTH, newest first: what the proxy was told, so /debug/adsz can show why it cannot
 * connect. */
#define WF_ADS_MAX_REJECTED 16
typedef struct wf_ads_rejected {
    int64_t at_ms;     /* wall clock, ms */
    char node[160];    /* node.id as sent ("" when none) */
    char address[128]; /* the peer */
    char reason[512];  /* the grpc-message sent: INVALID_ARGUMENT for a bad node, XDS_AUTH's
                        * UNAUTHENTICATED / PERMISSION_DENIED on the secure port */
} wf_ads_rejected;
size_t wf_ads_rejected_count(const wf_ads *a);
const wf_ads_rejected *wf_ads_rejected_at(const wf_ads *a, size_t i);

size_t wf_ads_conn_count(const wf_ads *a);
const wf_ads_conn *wf_ads_conn_at(const wf_ads *a, size_t i);
/* The history of c (wf_ads_history): count, and event i, 0 the oldest. */
size_t wf_ads_history_count(const wf_ads_conn *c);
const wf_ads_event *wf_ads_history_at(const wf_ads_conn *c, size_t i);
/* "connected", "disconnected", "nack", "ack". */
const char *wf_ads_event_name(wf_ads_event_kind k);
/* The sync state of type t of c, as /debug/syncz and proxy-status show it: "IGNORED" when not
 * watched, else wf_xds_sync_name ("SYNCED", "NOT SENT", "STALE", "ERROR"). */
const char *wf_ads_type_status(const wf_ads_conn *c, wf_xds_type t);
/* Connected proxies (the pilot_xds gauge). */
size_t wf_ads_connected(const wf_ads *a);
const wf_ads_metrics *wf_ads_get_metrics(const wf_ads *a);

/* What the server would send p now (the injected generator on the current snapshot): a new
 * JSON array, or NULL when there is no snapshot or on out of memory. */
json_t *wf_ads_generate(const wf_ads *a, const wf_pilot_proxy *p, wf_xds_type t,
                        const wf_xds_names *names);
/* The proxy for a node on the current snapshot (the injected proxy_from_node). */
int wf_ads_proxy_from_node(const wf_ads *a, const wf_xds_node *node, wf_pilot_proxy *out, char *err,
                           size_t cap);

/* Stops listening, ends every call, frees everything once the handles closed (run the
 * loop until it has no handles). */
void wf_ads_close(wf_ads *a);

/* The wall clock in milliseconds: the clock of the *_ms times above (also for debug views). */
int64_t wf_ads_now_ms(void);

/* Prometheus histogram helper (also used by debug.c). */
void wf_ads_hist_observe(wf_ads_hist *h, double v);

#endif
