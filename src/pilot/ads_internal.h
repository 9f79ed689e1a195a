/*
 * ads_internal.h - what the files of the xDS server share. Layers, each calling only the ones
 * below it (never up):
 *   ads.c        listeners, call handlers, reaper, lifecycle, queries (top)
 *   ads_push.c   the push queue served from the loop's idle phase; pushes of a new snapshot
 *   ads_sotw.c   state-of-the-world streams        delta.c  delta streams
 *   ads_auth.c   a stream's identity: XDS_AUTH caller, node and proxy
 *   ads_gen.c    the snapshot, its generation cache, a connection's resources
 *   ads_conn.c   connections as data: list, queue links, refused ring, send, fail (bottom)
 */
#ifndef WF_PILOT_ADS_INTERNAL_H
#define WF_PILOT_ADS_INTERNAL_H

#include "pilot/ads.h"
#include "pilot/gen_cache.h"
#include "xds/h2_stream.h"

struct wf_ads {
    uv_loop_t *loop;
    wf_ads_opts opts;
    wf_h2_server *h2;                /* the xDS listener: SotW and delta methods */
    wf_h2_server *h2_secure;         /* the same over TLS (istiod's 15012), NULL when not asked */
    const struct wf_ca_server *auth; /* XDS_AUTH on the secure port: the tokens' CA server;
                                      * NULL = off (ads_auth.c) */
    uv_timer_t reaper;               /* drops disconnected proxies after retention_ms */
    uv_idle_t q_idle;                /* serves the push queue (ads_push.c) */
    uv_idle_cb q_turn;               /* ads_push.c's wf_ads_on_queue_turn, set by ads.c */
    uv_timer_t q_timer;              /* resumes the queue once send queues drained */
    wf_ads_conn *q_head, *q_tail;
    int open_handles;        /* reaper, q_idle, q_timer not yet closed */
    wf_gen_cache *cache;     /* of snap; NULL until used or with an injected generator */
    wf_xds_name_pool *names; /* the watches' resource_names, shared between proxies */
    wf_ads_conn **conns;
    size_t n_conns, cap_conns;
    size_t live_calls; /* calls not yet ended (listed or not) */
    uint64_t conn_seq;
    uint64_t push_seq;
    char version[64];
    wf_snapshot *snap;
    wf_ads_metrics metrics;
    uint64_t rng[2];                               /* xorshift128+ for nonces */
    wf_ads_rejected rejected[WF_ADS_MAX_REJECTED]; /* ring */
    size_t n_rejected, next_rejected;
    bool closing;
    wf_ads_service services[WF_ADS_MAX_SERVICES]; /* opts.services, copied */
    const char *paths[3 + WF_ADS_MAX_SERVICES];   /* served :paths, NULL-terminated */
};

/* ---- ads_conn.c ---- */

/* c goes (its watches, delta state, proxy, caller); it must be out of the list. */
void wf_ads_conn_free(wf_ads_conn *c);
/* The list of connections (a->conns): add (0, or -1 out of memory), remove entry i. */
int wf_ads_list_add(wf_ads *a, wf_ads_conn *c);
void wf_ads_list_remove(wf_ads *a, size_t i);
/* A reconnecting proxy replaces its retained (disconnected) entries: they are freed. */
void wf_ads_drop_retained(wf_ads *a, const char *proxy_id);
/* A new UUID-shaped nonce into buf (>= 37 bytes). */
void wf_ads_nonce(wf_ads *a, char *buf);
/* Sends text on the connection's call; 0 or -1 (logged). */
int wf_ads_send(wf_ads_conn *c, const char *text, size_t len);
/* Ends the call with grpc-status code and message. */
void wf_ads_fail(wf_ads_conn *c, int code, const char *msg);
/* Lists a refused stream for /debug/adsz (the last WF_ADS_MAX_REJECTED). */
void wf_ads_note_rejected(wf_ads *a, const char *node, const char *address, const char *reason);
/* Records a NACK's metric and log line (istiod's). */
void wf_ads_log_nack(wf_ads_conn *c, wf_xds_type t, int code, const char *msg);
uint64_t wf_ads_hash(const char *s, size_t n);
/* Adds an event to c's history (ads.h wf_ads_history; the oldest goes when full); detail
 * printf-style, cut at WF_ADS_HISTORY_DETAIL bytes (fmt NULL = none). Out of memory drops
 * the detail. */
void wf_ads_history_add(wf_ads_conn *c, wf_ads_event_kind k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The first ACK of type t on c's stream goes to its history. */
void wf_ads_note_ack(wf_ads_conn *c, wf_xds_type t);
/* c (just listed for its proxy) takes over the history of the newest retained entry of the
 * same proxy, which drop_retained then frees. */
void wf_ads_history_inherit(wf_ads *a, wf_ads_conn *c);
/* The push queue's links (served by ads_push.c). Queues c (at the tail unless already
 * waiting) for the types in push (sent when changed) and force (answered anyway), bits
 * 1 << wf_xds_type; changed_at_ms: the config event a push answers (0 = none), the earliest
 * one is kept. The queue is then served from the loop's idle phase (a->q_turn). */
void wf_ads_enqueue(wf_ads_conn *c, unsigned push, unsigned force, int64_t changed_at_ms);
/* Queues c for an incremental EDS push of services (object host -> true, copied; merged with
 * an incremental push already waiting; nothing more when a whole-watch EDS waits). */
void wf_ads_enqueue_eds(wf_ads_conn *c, const json_t *services, int64_t changed_at_ms);
/* Takes c out of the queue (before freeing it). */
void wf_ads_dequeue(wf_ads_conn *c);
/* Serves the queue from the next idle phase (unless a retry timer waits). */
void wf_ads_kick(wf_ads *a);

/* ---- ads_gen.c ---- */

/* The generator on the current snapshot (NULL when none). */
json_t *wf_ads_gen(wf_ads_conn *c, wf_xds_type t, const wf_xds_names *names);
/* The resources of t for c's watch w as text (gen_cache.h). 0 or -1. */
int wf_ads_gen_text(wf_ads_conn *c, wf_xds_type t, const wf_xds_watch *w, wf_gen_text *out);
/* The same for names (names_hash = wf_xds_names_hash(names)). 0 or -1. */
int wf_ads_gen_text_names(wf_ads_conn *c, wf_xds_type t, const wf_xds_names *names,
                          uint64_t names_hash, wf_gen_text *out);
/* After a push to c of snapshot changes: observe convergence. */
void wf_ads_observe_push(wf_ads_conn *c, wf_xds_type t, uint64_t t0_ns);
/* Replaces the current snapshot (the reference passes to a) and drops its generation cache. */
void wf_ads_set_snapshot(wf_ads *a, wf_snapshot *snap);

/* ---- ads_sotw.c ---- */

/* A message of a SotW stream (the ACK fast path, else the request decoded). */
void wf_ads_sotw_on_message(wf_ads_conn *c, const uint8_t *msg, size_t len);
/* Generates and sends type t to a SotW connection. force: answer a request even when the
 * resources did not change. services (EDS only; NULL = the whole watch): an incremental EDS
 * push, the watched clusters of these hosts only (pilot/eds_update.h). Returns 1 when sent, 0
 * when skipped, -1 on failure. */
int wf_ads_sotw_push(wf_ads_conn *c, wf_xds_type t, bool force, const json_t *services);

/* ---- ads_push.c ---- */

/* The idle callback serving a batch of the queue. */
void wf_ads_on_queue_turn(uv_idle_t *h);

/* ---- ads_auth.c ---- */

/* The first request of a stream carries the node: makes the proxy and lists the connection.
 * 0, or -1 after ending the call. */
int wf_ads_on_node(wf_ads_conn *c, bool has_node, const wf_xds_node *node);
/* XDS_AUTH (xds_auth.h). At a new stream: a TLS stream is authenticated (the
 * caller kept in c); 0, or -1 after ending the call with UNAUTHENTICATED. At its node: the
 * caller's identities must match the proxy's namespace and service account; 0, or -1 after
 * ending the call with PERMISSION_DENIED (the proxy not listed). */
/* In Kubernetes mode a bearer token that is not pilot's own goes to a TokenReview: 0 with
 * c->review pending, answered through on_reviewed(c, ...) (the caller's: it calls
 * wf_ads_reviewed, then replays the held requests). */
int wf_ads_authenticate(wf_ads_conn *c, wf_h2_call *call,
                        void (*on_reviewed)(void *c, bool ok, const char *ns, const char *sa,
                                            const char *why));
/* A request that came while the stream's TokenReview is pending, kept (copied) until it
 * answers. */
typedef struct wf_ads_held {
    struct wf_ads_held *next;
    size_t len;
    uint8_t data[];
} wf_ads_held;
#define WF_ADS_HELD_MAX (8u << 20) /* bytes held per stream; beyond: RESOURCE_EXHAUSTED */
/* Keeps msg while c->review is pending. 0, or -1 after ending the call. */
int wf_ads_hold(wf_ads_conn *c, const uint8_t *msg, size_t len);
/* The stream's TokenReview answered (ca_tokenreview.h wf_tr_done): ok adds the identity
 * spiffe://<td>/ns/<ns>/sa/<sa> (the stream is authenticated; 0: the caller replays c->held),
 * else the call ends with UNAUTHENTICATED and istiod's log line naming every authenticator
 * (-1). */
int wf_ads_reviewed(wf_ads_conn *c, bool ok, const char *ns, const char *sa, const char *why);
int wf_ads_authorize(wf_ads_conn *c);

/* ---- delta.c ---- */
void wf_delta_on_message(wf_ads_conn *c, const json_t *j);
/* Pushes type t to a delta connection: the resources that changed; force answers even with
 * nothing changed. services as wf_ads_sotw_push's (a wildcard watch ignores it): only those
 * clusters are generated and compared, none is removed. 1 sent, 0 skipped, -1. */
int wf_delta_push(wf_ads_conn *c, wf_xds_type t, bool force, const json_t *services);

#endif
