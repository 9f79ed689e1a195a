/*
 * discovery.h - xDS discovery messages (JSON) and the ACK/NACK bookkeeping of both ends of
 * an aggregated stream. Pure: no I/O, no clocks (times are passed in), no global mutable
 * state. The bytes travel over grpc_frame.h / h2_stream.h.
 *
 * Messages follow Envoy's envoy.service.discovery.v3 protos in protobuf JSON form:
 *   DiscoveryRequest       version_info, node {id, cluster, metadata}, resource_names,
 *                          type_url, response_nonce, error_detail {code, message}
 *   DiscoveryResponse      version_info, resources (google.protobuf.Any: objects with "@type"),
 *                          type_url, nonce
 *   DeltaDiscoveryRequest  node, type_url, resource_names_subscribe,
 *                          resource_names_unsubscribe, initial_resource_versions (map),
 *                          response_nonce, error_detail
 *   DeltaDiscoveryResponse system_version_info, resources (Resource {name, version, resource}),
 *                          type_url, removed_resources, nonce
 * Decoding accepts each field under its proto name (snake_case) or its lowerCamelCase JSON
 * name, as protobuf JSON parsers do; giving both is an error. A JSON null is the default value.
 * Fields outside this subset are ignored. Encoding writes snake_case and, like protobuf JSON,
 * omits empty strings and empty lists (type_url is always written).
 *
 * Errors: decoders fill a wf_xds_err whose `field` is the path of the field at fault, in
 * snake_case ("type_url", "error_detail.code", "resources[2].@type") and whose `text` is
 * "<field>: <reason>".
 *
 * Ownership: every struct here owns its strings (heap, NUL-terminated) and its json_t
 * references; release with the matching _free function (safe on a zeroed struct, and leaves the
 * struct zeroed). A NULL string means "absent" and reads as "". Functions that return json_t*
 * return a new reference: the caller decrefs it. Decoders never take over the caller's json_t;
 * where a struct keeps part of the input (metadata, resources) it takes its own reference.
 */
#ifndef WF_XDS_DISCOVERY_H
#define WF_XDS_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Return codes (0 is success). */
enum {
    WF_XDS_OK = 0,
    WF_XDS_E_NOMEM = -1,   /* allocation failed; outputs are left zeroed */
    WF_XDS_E_INVALID = -2, /* malformed message; wf_xds_err says which field */
};

/* ---- Type URLs (Envoy's v3 resource types) -------------------------------------------- */

#define WF_XDS_TYPE_CLUSTER   "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define WF_XDS_TYPE_LISTENER  "type.googleapis.com/envoy.config.listener.v3.Listener"
#define WF_XDS_TYPE_ROUTE     "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
#define WF_XDS_TYPE_ENDPOINT  "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define WF_XDS_TYPE_SECRET    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
#define WF_XDS_TYPE_EXTENSION "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"
/* Istio's NDS (pilot/pkg/xds/nds.go, v3.NameTableType): one istio.networking.nds.v1.NameTable
 * for the agent's DNS proxy, sent to proxies whose node metadata has DNS_CAPTURE "true". */
#define WF_XDS_TYPE_NAME_TABLE "type.googleapis.com/istio.networking.nds.v1.NameTable"

typedef enum wf_xds_type {
    WF_XDS_CDS = 0,
    WF_XDS_LDS,
    WF_XDS_RDS,
    WF_XDS_EDS,
    WF_XDS_SDS,
    WF_XDS_ECDS,
    WF_XDS_NDS,
    WF_XDS_NTYPES,
} wf_xds_type;

/* Type URL of t (static string), NULL when t is out of range. */
const char *wf_xds_type_url(wf_xds_type t);
/* Short table name: "CDS", "LDS", "RDS", "EDS", "SDS", "ECDS", "NDS"; NULL when out of range. */
const char *wf_xds_type_short(wf_xds_type t);
/* The type whose URL is url, or -1 when none (NULL url included). */
int wf_xds_type_from_url(const char *url);

/* ---- Messages ---------------------------------------------------------------------------- */

typedef struct wf_xds_err {
    char field[96]; /* snake_case path of the field at fault */
    char text[256]; /* "<field>: <reason>" */
} wf_xds_err;

typedef struct wf_xds_names {
    char **v; /* n heap strings */
    size_t n;
} wf_xds_names;

typedef struct wf_xds_node {
    char *id;
    char *cluster;
    json_t *metadata; /* google.protobuf.Struct: a JSON object, or NULL */
} wf_xds_node;

typedef struct wf_xds_status {
    int code; /* google.rpc.Code */
    char *message;
} wf_xds_status;

typedef struct wf_xds_request {
    char *version_info;
    bool has_node;
    wf_xds_node node;
    wf_xds_names resource_names;
    char *type_url; /* required */
    char *response_nonce;
    bool has_error; /* error_detail present: a NACK */
    wf_xds_status error_detail;
} wf_xds_request;

typedef struct wf_xds_response {
    char *version_info;
    json_t *resources; /* JSON array of objects each with a string "@type", or NULL */
    char *type_url;    /* required */
    char *nonce;
} wf_xds_response;

typedef struct wf_xds_delta_request {
    bool has_node;
    wf_xds_node node;
    char *type_url; /* required */
    wf_xds_names subscribe;
    wf_xds_names unsubscribe;
    json_t *initial_resource_versions; /* JSON object name -> version string, or NULL */
    char *response_nonce;
    bool has_error;
    wf_xds_status error_detail;
} wf_xds_delta_request;

typedef struct wf_xds_resource {
    char *name;
    char *version;
    json_t *resource; /* Any: object with "@type", or NULL */
} wf_xds_resource;

typedef struct wf_xds_delta_response {
    char *system_version_info;
    wf_xds_resource *resources;
    size_t n_resources;
    char *type_url; /* required */
    wf_xds_names removed_resources;
    char *nonce; /* required */
} wf_xds_delta_response;

/* Parses len bytes of JSON text (UTF-8 checked by jansson, duplicate keys rejected) whose root
 * must be an object. Returns 0 and *out (new reference, caller decrefs), or WF_XDS_E_INVALID
 * (err->field "" and the parser's message) / WF_XDS_E_NOMEM. */
int wf_xds_parse_text(const char *buf, size_t len, json_t **out, wf_xds_err *err);

/* Decoders: j must be a JSON object. Return 0 and fill *out (caller frees it with the
 * matching _free), WF_XDS_E_INVALID with *err set, or WF_XDS_E_NOMEM. On failure *out is
 * zeroed. Required: type_url (all four), nonce (delta response). A SotW response's resources
 * must each carry "@type" equal to type_url (Envoy rejects a mismatch). */
int wf_xds_request_decode(const json_t *j, wf_xds_request *out, wf_xds_err *err);
int wf_xds_response_decode(const json_t *j, wf_xds_response *out, wf_xds_err *err);
int wf_xds_delta_request_decode(const json_t *j, wf_xds_delta_request *out, wf_xds_err *err);
int wf_xds_delta_response_decode(const json_t *j, wf_xds_delta_response *out, wf_xds_err *err);

/* Encoders: a new JSON object (caller decrefs; json_t members are shared, not copied), or
 * NULL when out of memory or a string is not valid UTF-8 (jansson refuses it). */
json_t *wf_xds_request_encode(const wf_xds_request *r);
json_t *wf_xds_response_encode(const wf_xds_response *r);
json_t *wf_xds_delta_request_encode(const wf_xds_delta_request *r);
json_t *wf_xds_delta_response_encode(const wf_xds_delta_response *r);

void wf_xds_names_free(wf_xds_names *n);
/* Deep copy; 0 or WF_XDS_E_NOMEM (dst zeroed then). dst must not hold names. */
int wf_xds_names_copy(wf_xds_names *dst, const wf_xds_names *src);
void wf_xds_node_free(wf_xds_node *n);
void wf_xds_request_free(wf_xds_request *r);
void wf_xds_response_free(wf_xds_response *r);
void wf_xds_delta_request_free(wf_xds_delta_request *r);
void wf_xds_delta_response_free(wf_xds_delta_response *r);

/* ---- Server side (istiod's per-connection WatchedResource), SotW ------------------------- */

/* What istiod does with a request (pilot/pkg/xds/ads.go shouldRespond). */
typedef enum wf_xds_req_kind {
    WF_XDS_REQ_INITIAL = 0,     /* no response_nonce, or first request for the type on this
                                 * stream (reconnect): respond with the full set */
    WF_XDS_REQ_ACK,             /* nonce == last sent, no error_detail: do not respond */
    WF_XDS_REQ_NACK,            /* nonce == last sent, error_detail: do not respond */
    WF_XDS_REQ_STALE_NONCE,     /* nonce != last sent: ignore */
    WF_XDS_REQ_RESOURCE_CHANGE, /* an ACK whose resource_names changed: respond */
} wf_xds_req_kind;

/* Proxy-status sync state (istioctl proxy-status, reference §8.6). */
typedef enum wf_xds_sync {
    WF_XDS_SYNC_NOT_SENT = 0, /* nothing sent for this type on this stream */
    WF_XDS_SYNC_SYNCED,       /* last ACKed nonce == last sent nonce */
    WF_XDS_SYNC_STALE,        /* sent, ACK for the last nonce not received yet */
    WF_XDS_SYNC_ERROR,        /* last response was NACKed (cleared by the next ACK) */
} wf_xds_sync;

/* Interned name lists. A server keeps, per proxy and type, the resource_names last requested;
 * 1,000 sidecars with the same Sidecar scope ask for the same ~1,700 EDS names, so watches
 * that hold a pool share one immutable copy of each distinct list (reference-counted, found by
 * wf_xds_names_hash and compared name by name). Single-threaded; no global state: the server
 * owns its pool. */
typedef struct wf_xds_name_pool wf_xds_name_pool;
typedef struct wf_xds_name_list wf_xds_name_list;
/* A new empty pool, NULL when out of memory. */
wf_xds_name_pool *wf_xds_name_pool_new(void);
/* Frees the pool. Lists still held by watches stay valid (each is freed with its last
 * reference). NULL is fine. */
void wf_xds_name_pool_free(wf_xds_name_pool *p);
/* Distinct lists in the pool (tests, debug). */
size_t wf_xds_name_pool_count(const wf_xds_name_pool *p);
/* 64-bit FNV-1a of the names in order, each with its NUL, then the count (the generation
 * cache's key of a requested name list, pilot/gen_cache.h). */
uint64_t wf_xds_names_hash(const wf_xds_names *n);

/* One type on one stream. Zero-initialise (or wf_xds_watch_free) to start; set pool before the
 * first request to share name lists. */
typedef struct wf_xds_watch {
    wf_xds_name_pool *pool; /* borrowed, must outlive the watch's requests; NULL = private copies.
                             * Kept by wf_xds_watch_free. */
    wf_xds_name_list *list; /* the storage of names (one reference), NULL when no names */
    uint64_t names_hash;    /* wf_xds_names_hash(&names), kept with them */
    bool watched;           /* a request for this type arrived on this stream */
    wf_xds_names names;     /* read-only view of list: change it with wf_xds_watch_set_names */
    char *version_sent, *nonce_sent;
    char *version_acked, *nonce_acked; /* the proxy's version: kept across NACKs */
    bool nacked;
    int error_code;
    char *error_message; /* of the last NACK; NULL once an ACK clears it */
    uint64_t changes;    /* bumped whenever wf_xds_watch_sync changes value */
    int64_t sync_since_ms;
    bool has_names_key; /* names_key: wf_xds_watch_set_names_key (the ACK fast path) */
    uint64_t names_key;
} wf_xds_watch;

/* Classifies req against w without changing anything. Order (as istiod, but see NACK):
 * unwatched or empty response_nonce -> INITIAL; nonce != nonce_sent -> STALE_NONCE (also for a
 * request carrying error_detail: a NACK of a superseded response does not mark the proxy
 * ERROR; istiod records it anyway); error_detail -> NACK; names changed (as sets) ->
 * RESOURCE_CHANGE; else ACK. */
wf_xds_req_kind wf_xds_watch_classify(const wf_xds_watch *w, const wf_xds_request *req);

/* Classifies req (*kind) and records it: INITIAL resets the watch to req's names (nothing sent
 * yet); ACK / RESOURCE_CHANGE record nonce and version acked, the names, and clear the error;
 * NACK records error code and message and keeps the acked version; STALE_NONCE changes
 * nothing. now_ms stamps a sync-state change. Returns 0 or WF_XDS_E_NOMEM (w unchanged). */
int wf_xds_watch_on_request(wf_xds_watch *w, const wf_xds_request *req, int64_t now_ms,
                            wf_xds_req_kind *kind);

/* Replaces the watch's names (copied, or shared from the pool). 0 or WF_XDS_E_NOMEM (w
 * unchanged). names may be w's own (no-op). */
int wf_xds_watch_set_names(wf_xds_watch *w, const wf_xds_names *names);

/* Records a response sent for this type. 0 or WF_XDS_E_NOMEM (w unchanged). */
int wf_xds_watch_on_sent(wf_xds_watch *w, const char *version, const char *nonce, int64_t now_ms);

wf_xds_sync wf_xds_watch_sync(const wf_xds_watch *w);
/* "SYNCED", "NOT SENT", "STALE", "ERROR" (istioctl's spellings). */
const char *wf_xds_sync_name(wf_xds_sync s);
/* "INITIAL", "ACK", "NACK", "STALE_NONCE", "RESOURCE_CHANGE" (for logs). */
const char *wf_xds_req_kind_name(wf_xds_req_kind k);
/* Releases what the watch holds and zeroes it, except pool. */
void wf_xds_watch_free(wf_xds_watch *w);

/* ---- Server side: the ACK fast path ----------------------------------------------------- *
 * Most requests on a busy server are ACKs of the latest response whose resource_names did not
 * change (each EDS ACK of a sidecar lists every cluster: ~100 KB). wf_xds_request_peek scans
 * the request text without building a JSON tree; wf_xds_watch_ack_peeked then records such an
 * ACK exactly as wf_xds_watch_on_request would, and refuses anything else (the caller then
 * decodes the request as usual). The names are compared by a 64-bit hash of the raw bytes of
 * the resource_names value against the bytes of the request that last set the watch's names
 * (wf_xds_watch_set_names_key): equal bytes are equal names, in the same order. */

typedef struct wf_xds_req_peek {
    /* Only version_info, resource_names, type_url and response_nonce (snake_case or
     * lowerCamelCase, each at most once), the three strings plain printable ASCII (no escapes)
     * and resource_names' value skipped structurally. Anything else (node, error_detail, an
     * unknown field, escapes, JSON the scan does not understand) leaves simple false. */
    bool simple;
    bool names_ok;        /* resource_names (or its absence) was scanned: names_key is valid */
    uint64_t names_key;   /* hash of resource_names' raw value bytes (a fixed key when absent) */
    const char *type_url; /* pointers into the scanned text (not NUL-terminated); valid while */
    size_t type_url_len;  /* it is; NULL/0 when absent */
    const char *nonce;
    size_t nonce_len;
    const char *version;
    size_t version_len;
} wf_xds_req_peek;

/* Scans len bytes of request text into *out. Never allocates, never fails: an unusual request
 * just leaves out->simple false (and out->names_ok false if the top level did not scan). */
void wf_xds_request_peek(const char *buf, size_t len, wf_xds_req_peek *out);

/* The type of a peeked type_url, or -1. */
int wf_xds_type_from_url_n(const char *url, size_t len);

/* Records the names key of the request whose names w now holds (after wf_xds_watch_on_request
 * returned INITIAL, ACK or RESOURCE_CHANGE for it); names_ok false forgets the key. */
void wf_xds_watch_set_names_key(wf_xds_watch *w, bool names_ok, uint64_t key);

/* If p (simple) is an ACK of w's last sent nonce with the names key w holds, records it as
 * wf_xds_watch_on_request records an ACK and returns 1; returns 0 (w unchanged) when the
 * request needs the full decode; WF_XDS_E_NOMEM (w unchanged). */
int wf_xds_watch_ack_peeked(wf_xds_watch *w, const wf_xds_req_peek *p, int64_t now_ms);

/* ---- Client side (Envoy's GrpcMuxImpl per-type state), SotW ------------------------------ */

typedef struct wf_xds_client_type {
    char *type_url;
    char *version; /* version_info of the last accepted response; NULL before any */
    char *nonce;   /* nonce of the last response received on this stream, to echo */
    wf_xds_names names;
} wf_xds_client_type;

/* Starts the state for type_url with no names (wildcard). 0 or WF_XDS_E_NOMEM. */
int wf_xds_client_init(wf_xds_client_type *c, const char *type_url);
/* Replaces the subscribed names (deep copy). 0 or WF_XDS_E_NOMEM (c unchanged). */
int wf_xds_client_set_names(wf_xds_client_type *c, const wf_xds_names *names);
/* A new stream: forget the nonce (Envoy clears it on reconnect; the version stays). */
void wf_xds_client_stream_reset(wf_xds_client_type *c);

/* The request for the current state: version_info = accepted version, response_nonce = the
 * nonce to echo (none on a new stream), names, node copied when node is non-NULL (Envoy sends
 * it on the first request of a stream). Fills *out (caller frees). 0 or WF_XDS_E_NOMEM. */
int wf_xds_client_request(const wf_xds_client_type *c, const wf_xds_node *node,
                          wf_xds_request *out);

/* The caller applied resp: accept its version, echo its nonce, build the ACK into *out. */
int wf_xds_client_ack(wf_xds_client_type *c, const wf_xds_response *resp, wf_xds_request *out);

/* The caller rejected resp: echo its nonce, keep the accepted version, build the NACK into *out
 * with error_detail {code 13 (INTERNAL, as Envoy), message}. The error is not kept: the next
 * request carries none (Envoy clears error_detail once sent). 0 or WF_XDS_E_NOMEM. */
int wf_xds_client_nack(wf_xds_client_type *c, const wf_xds_response *resp, const char *message,
                       wf_xds_request *out);
void wf_xds_client_free(wf_xds_client_type *c);

/* ---- Client side, delta (Envoy's DeltaSubscriptionState, xds_mux variant) ---------------- *
 * Implemented in discovery_delta.c. Behaviour followed (Envoy source/extensions/
 * config_subscription/grpc/delta_subscription_state.cc; reference §8.5):
 *  - a wildcard type (CDS, LDS: no names asked for) starts in "legacy wildcard" mode: its
 *    first request on every stream has an empty resource_names_subscribe (Envoy does not send
 *    "*" unless a name was also subscribed explicitly, which weft never does);
 *  - the first request of a stream subscribes every wanted name again (the server may be a
 *    new one) and carries initial_resource_versions: the versions of the resources the client
 *    holds (resources it waits for are left out);
 *  - later requests carry only the changes: resource_names_subscribe = names wanted and not
 *    yet told on this stream, resource_names_unsubscribe = names told and no longer wanted;
 *  - an ACK is a request with response_nonce (and any pending subscription changes); a NACK
 *    adds error_detail {13 INTERNAL, message}; a request that is neither carries no
 *    response_nonce;
 *  - a non-wildcard type with no names sends nothing on a new stream (Envoy's
 *    subscriptionUpdatePending). */

typedef struct wf_xds_delta_client_type {
    char *type_url;
    bool wildcard;        /* legacy wildcard (CDS/LDS) */
    wf_xds_names names;   /* explicit names wanted (EDS/RDS), in the caller's order */
    wf_xds_names told;    /* names subscribed on the current stream */
    bool sent_any;        /* a request went out on the current stream */
    char *system_version; /* system_version_info of the last accepted response; NULL = none */
} wf_xds_delta_client_type;

/* Starts the state for type_url (wildcard or by name, no names yet). 0 or WF_XDS_E_NOMEM. */
int wf_xds_delta_client_init(wf_xds_delta_client_type *c, const char *type_url, bool wildcard);
/* Replaces the wanted names (deep copy). 0 or WF_XDS_E_NOMEM (c unchanged). */
int wf_xds_delta_client_set_names(wf_xds_delta_client_type *c, const wf_xds_names *names);
/* A new stream: nothing told yet (the next request is a stream's first). */
void wf_xds_delta_client_stream_reset(wf_xds_delta_client_type *c);
/* Whether a request is due without a response to answer: the stream's first for a wildcard
 * type or one with names, or wanted names that differ from what the stream was told. */
bool wf_xds_delta_client_pending(const wf_xds_delta_client_type *c);

/* Builds the next request into *out (caller frees) and records the names as told. node:
 * copied when non-NULL. versions: a JSON object name -> version string of the resources held,
 * used on the stream's first request only (shared reference; NULL = none). nonce: non-NULL
 * for an ACK / NACK (the response's nonce); error: non-NULL makes it a NACK. Returns 0 or
 * WF_XDS_E_NOMEM (c unchanged, *out zeroed). */
int wf_xds_delta_client_request(wf_xds_delta_client_type *c, const wf_xds_node *node,
                                json_t *versions, const char *nonce, const char *error,
                                wf_xds_delta_request *out);
/* A response was accepted: remember its system_version_info. 0 or WF_XDS_E_NOMEM. */
int wf_xds_delta_client_accepted(wf_xds_delta_client_type *c, const char *system_version);
void wf_xds_delta_client_free(wf_xds_delta_client_type *c);

#endif
