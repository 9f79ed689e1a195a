/*
 * conn.h - downstream connections and their HTTP connection manager (conn.c, Envoy's
 * ConnectionManagerImpl over the HTTP/1 codec, http/codec.h): accepted by a worker's
 * listening socket, closed and drained by the worker.
 *
 * Memory: an idle downstream connection holds only wp_dconn (no read buffer, no stream);
 * read buffers come from the worker's free list while bytes are pending and go back when
 * the buffer empties. Bodies are not copied: a body slice is written from the buffer it was
 * read into, and the reading side stops reading until the write completes (that is the
 * back-pressure: at most one buffer per direction per connection is held). The one
 * exception is the retry/shadow buffer (filters/http/router_retry.c): while a request may
 * still be retried or mirrored, its body is also copied once into blocks of the worker's
 * free list, up to the route's buffer limit (1 MiB by default).
 *
 * Lifetimes (net/deferred.h, Envoy's deferred delete): a stream that ends (conn.c
 * stream_finish) is put on its worker's deferred-delete list and goes back to the worker's
 * free streams at the end of the loop iteration; a connection that closes closes its socket
 * and timers at once and is freed from their close callbacks, also at the end of the
 * iteration. A stream or connection therefore stays valid for the rest of the callback that
 * ended it: callers may look at it after any call (s->d->stream != s: the stream ended;
 * d->closing, u->closing: the connection closed).
 */
#ifndef WEFT_PROXY_HTTP_CONN_H
#define WEFT_PROXY_HTTP_CONN_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <uv.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/config/route.h"
#include "proxy/event/worker.h"
#include "proxy/http/filter.h"
#include "proxy/http/xfcc.h"
#include "proxy/http/xff.h"
#include "proxy/net/deferred.h"
#include "proxy/net/listener_filter.h"
#include "proxy/net/network_filter.h"
#include "proxy/net/raw_socket.h"
#include "proxy/pstats/pstats.h"
#include "proxy/stream_info/stream_info.h"
#include "proxy/upstream/cluster_manager.h"
#include "proxy/upstream/conn_pool.h"

#define WP_MAX_TRAILERS 16           /* response trailers kept per stream for %TRAILER()% */
#define WP_HEAD_EXTRA   (4u * 1024u) /* room past max_request_headers_kb for the request line */
#define WP_MAX_HEADERS  104u         /* 99 parsed (conn.c), +5 added by the proxy */
_Static_assert(WP_MAX_HEADERS == WP_UPSTREAM_MAX_HEADERS, "one header limit both ways");
/* header-ops levels of one head: weighted cluster, route, virtual host, route configuration
 * and the HTTP filters' (proxy/http/filter.h) */
#define WP_HOPS_LEVELS (4 + WP_FILTER_MAX_OPS)

typedef struct wp_dconn wp_dconn;
struct wp_h2c;

/* A connection that multiplexes streams (HTTP/2: http/conn_h2.h) plugs its side into the
 * connection manager with these, as an Envoy codec sits behind its connection: this layer
 * calls them and never names the module above it that provides them. */
typedef struct wp_dconn_mux_ops {
    void (*on_data)(wp_dconn *d);         /* the bytes d buffered (d->rbuf) */
    void (*on_written)(wp_dconn *d);      /* d's pending write finished */
    void (*close)(wp_dconn *d);           /* d closes: its streams end */
    void (*free)(struct wp_h2c *state);   /* from d's last close callback */
    void (*drain)(wp_dconn *d);           /* GOAWAY; d closes when its streams are done */
    size_t (*streams)(const wp_dconn *d); /* open streams */
} wp_dconn_mux_ops;
typedef struct wp_stream wp_stream;

/* ---------- downstream ---------- */

struct wp_dconn {
    wp_raw_socket raw;     /* the TCP socket under sock */
    wp_tsock *sock;        /* the transport socket (net/transport_socket.h): &raw.base */
    uv_timer_t idle_timer; /* connection idle / stream idle */
    uv_timer_t rq_timer;   /* route timeout (or request_timeout) */
    wp_worker *w;
    wp_wgen *wg; /* the generation of listener, hs, ls (one use of it) */
    /* the generation the transport socket and the network filters were made from, once the
     * connection followed a newer config (conn.c dconn_follow_config; one use of it); NULL
     * while it is wg */
    wp_wgen *sock_wg;
    const wp_listener *listener;
    /* The filter chain the connection matched (net/filter_chain_match.h) and its HTTP
     * connection manager; NULL while listener filters run and for a connection no chain
     * matched (closed, counted in no_filter_chain_match). */
    const wp_filter_chain *chain;
    const wp_hcm *hcm;   /* NULL on a chain whose terminal filter is the TCP proxy */
    const wp_hstats *hs; /* its connection manager's stat slots */
    const wp_lstats *ls; /* its listener's stat slots */
    uint64_t id;
    wp_buf *rbuf;
    size_t rlen;   /* bytes in rbuf */
    size_t rstart; /* bytes before rstart are consumed */
    wp_stream *stream;
    struct wp_dconn *prev, *next; /* worker's connection list */
    char remote[48], local[48];   /* "ip:port", "[v6]:port" */
    uint64_t last_activity;       /* loop time (ms) of the last read or write */
    uint64_t start_ms;            /* loop time (ms) of the accept (downstream_cx_length_ms) */
    uint64_t rq_deadline;         /* loop time (ms) of the route/request timeout, 0 = none */
    uint64_t try_deadline;        /* loop time (ms) of the per-try timeout or back-off, 0 = none */
    /* loop time (ms) when the stream's max_stream_duration ends (conn.c refresh_duration) */
    uint64_t dur_deadline;
    bool writing, reading, peer_closed, closing, close_after;
    bool tunnel;
    bool in_process; /* parsing: upstream writes wait until the pass ends */
    int closed_handles;
    /* the listener filters' state (net/listener_filter.h): the accepted socket as they
     * annotate it, their run and read buffer; malloc'd by the connection handler
     * (server/conn_handler.c) only on a listener that has listener filters, NULL otherwise */
    wp_lf_conn *lf;
    wp_nf_chain nf; /* the chain's network filters (the HCM: this connection) */
    /* the TCP proxy's session (filters/network/tcp_proxy.h) when the chain's terminal filter
     * is envoy.filters.network.tcp_proxy: it owns the socket's callbacks and the two timers */
    struct wp_tcp_session *tcp;
    /* the istio.metadata_exchange network filter's state (filters/network/metadata_exchange.h)
     * when the chain has one: the downstream peer's workload (filter state downstream_peer) */
    struct wp_tcp_mx *mx;
    /* %CONNECTION_TERMINATION_DETAILS% of a network filter that closes the connection (the
     * network RBAC filter's rbac_access_denied_matched_policy[...]), NULL none */
    const char *termination_details;
    /* this connection's x-forwarded-client-cert element (http/xfcc.h), built by its first
     * request that needs it (a TLS connection keeps its chain and HCM) */
    wf_strbuf xfcc;
    bool xfcc_built;
    /* HTTP/2 (http/conn_h2.h): proto_known once the codec was chosen (codec_type, ALPN, the
     * preface); mux and h2 the HTTP/2 side of a connection that speaks it (NULL for HTTP/1:
     * the HTTP/1 path is this file's own); parent set on the child
     * connection that carries one of its streams (its socket is the stream); reset_by_peer:
     * the client reset that stream (DR, not DC) */
    bool proto_known, reset_by_peer;
    const wp_dconn_mux_ops *mux;
    struct wp_h2c *h2;
    wp_dconn *parent;
};

typedef enum {
    WP_ST_HEADERS,  /* request head parsed, upstream being chosen */
    WP_ST_UPSTREAM, /* waiting for / talking to an upstream */
    WP_ST_DONE,     /* response complete */
} wp_stream_state;

struct wp_stream {
    wp_dconn *d;
    wp_config *cfg; /* d->wg's snapshot (the connection holds it for the stream's life) */
    wp_stream_info si;
    h1_parser parser; /* request parser (the connection's, while this stream lives) */
    h1_message req;   /* rebased into head */
    char *head;       /* copy of the request head (head_inline or malloc'd) */
    size_t head_len;
    const wp_route *route;
    const wp_vhost *vhost;
    int weighted; /* index of the weighted cluster chosen, -1 none */
    int cluster;  /* -1 none */
    /* request body flow */
    const char *body_ptr; /* slice of d->rbuf waiting to be written upstream */
    size_t body_len;
    bool req_complete, req_chunked, upgrade;
    bool charged;  /* counted in downstream_rq_completed and _<N>xx (count_response) */
    bool resolved; /* wp_cached_route_refresh ran: route, vhost, weighted, cluster are set */
    char request_id[40];
    char remote_buf[WP_XFF_ADDR_MAX]; /* downstream remote taken from x-forwarded-for (xff.h) */
    char ust_buf[24];
    char chunk_out[24];
    /* a field a local reply carries (e.g. location of a redirect, x-envoy-overloaded); name.p
     * NULL: none. Its bytes must outlive the reply (the stream's extra, the config, static). */
    h1_header extra_resp;
    /* response */
    size_t nresp_hdrs;
    char *resp_copy; /* copy of the upstream response head (resp_inline or malloc'd) */
    bool resp_started, resp_chunked, resp_close, resp_done;
    bool head_unsent;     /* response head built, not yet written */
    bool upstream_failed; /* the upstream failed after the response started (not DC) */
    bool local_reply;
    /* grpc-status of a gRPC local reply (conn.c local_reply) */
    char grpc_status_buf[4];
    wp_fchain_state fcs; /* the HTTP filter chain's state (proxy/http/filter.h) */
    wp_deferred_item dd; /* on the worker's deferred-delete list once ended (stream_finish) */
    /* ---- from here on, kept when a stream is reused (not zeroed per request): buffers that
     * are written before they are read ---- */
    struct wp_stream *next_free;
    /* the filters' per-stream slots (fcs.slots): each filter's init sets its slot up */
    alignas(max_align_t) unsigned char fslots[WP_FCHAIN_SLOTS_MAX];
    wf_strbuf extra;
    /* grpc-message of a gRPC local reply (its body percent-encoded) */
    wf_strbuf grpc_msg;
    wf_strbuf xff;  /* x-forwarded-for with the peer appended (use_remote_address) */
    wf_strbuf xfcc; /* x-forwarded-client-cert with this connection's element appended */
    wf_strbuf trl;  /* bytes of the upstream response's trailers (resp_trl points here) */
    h1_header resp_trl[WP_MAX_TRAILERS]; /* the response trailers kept for the access log */
    wf_strbuf up_head;                   /* upstream request head */
    wf_strbuf resp_head;                 /* head sent downstream */
    char *path_buf;  /* the normalized :path when normalization changed it (conn.c) */
    size_t path_cap; /* bytes of path_buf; grown, never shrunk, while the stream is reused */
    char head_inline[2048];
    char resp_inline[1024];
    h1_header hdrs[WP_MAX_HEADERS];
    h1_header resp_hdrs[WP_MAX_HEADERS];
    /* what access logs see of the request once the router changed it (router.c log_view) */
    wf_strbuf log_head;
    h1_message log_req;
    h1_header log_hdrs[WP_MAX_HEADERS];
};

#define WP_STREAM_RESET_BYTES offsetof(wp_stream, next_free)

/* Whether s's request is a HEAD (its answer has no body). */
static inline bool wp_stream_is_head(const wp_stream *s)
{
    return s->req.method.len == 4 && memcmp(s->req.method.p, "HEAD", 4) == 0;
}

/* A stat of the connection's HTTP connection manager (http.<stat_prefix>.*). */
static inline void wp_hcm_stat(wp_dconn *d, int which, int64_t delta)
{
    wp_stat_add(d->w->stats, d->hs->slot[which], delta);
}

/* A stat of the connection's listener (listener.<address>.*). */
static inline void wp_listener_stat(wp_dconn *d, int which, int64_t delta)
{
    wp_stat_add(d->w->stats, d->ls->slot[which], delta);
}

/* The generation of a stream. */
static inline wp_gen *wp_stream_gen(const wp_stream *s)
{
    return s->d->wg->gen;
}

/* Accepts a connection of listening socket server, which belongs to listener index listener
 * of the worker's current snapshot (w->cfg): its transport socket, timers, id and place in
 * the worker's list; *sock gets the accepted socket's addresses for the listener filters
 * and the filter chain match (server/conn_handler.c runs them). Returns the connection, not
 * yet reading, or NULL when it could not be set up (out of memory, accept failed: nothing
 * was counted; a half-made connection closes itself). */
wp_dconn *wp_dconn_accept(wp_worker *w, size_t listener, uv_stream_t *server, wp_lf_socket *sock);
/* The connection takes filter chain fc of its listener: its HTTP connection manager and stat
 * slots, none for a TCP proxy chain (before the chain's network filters run). */
void wp_dconn_use_chain(wp_dconn *d, const wp_filter_chain *fc);

/* The HTTP connection manager's side of its network filter (filters/network/
 * http_connection_manager.c): Envoy's ConnectionManagerImpl::onNewConnection (the HCM's
 * connection stats, the idle timer, reading starts) and onData (the codec dispatches what
 * the connection buffered). Both return WP_NF_STOP_ITERATION: the HCM is the terminal
 * filter. */
wp_nf_status wp_hcm_on_new_connection(wp_dconn *d);
wp_nf_status wp_hcm_on_data(wp_dconn *d, bool end_stream);

/* Envoy's codec choice for the HCM's codec_type (AUTO: ALPN "h2", else the prior-knowledge
 * preface in the first bytes): WAIT while those bytes may still be the preface. Once it
 * decided, d->proto_known is set; the HCM network filter starts HTTP/2 (conn_h2.h) for H2. */
typedef enum { WP_DCONN_CODEC_WAIT, WP_DCONN_CODEC_H1, WP_DCONN_CODEC_H2 } wp_dconn_codec;
wp_dconn_codec wp_hcm_choose_codec(wp_dconn *d);
/* d speaks the multiplexed protocol of ops from now on, with state (freed by ops->free); it
 * is counted as HTTP/2, no longer as HTTP/1 (downstream_cx_http2_*). */
void wp_dconn_set_mux(wp_dconn *d, const wp_dconn_mux_ops *ops, struct wp_h2c *state);

/* HTTP/2 (http/conn_h2.c carries each stream of an HTTP/2 connection as a child connection
 * whose transport socket is the stream): a child of parent over socket sock, which
 * init sets up with the connection's callbacks and owner (it returns NULL on failure). The
 * child shares the parent's listener, chain, HCM, addresses and connection id, is not counted
 * as a connection and reads at once. NULL when out of memory. */
wp_dconn *wp_dconn_child(wp_dconn *parent,
                         wp_tsock *(*init)(void *arg, const wp_tsock_cbs *cbs, void *owner),
                         void *arg);
/* The client reset the child's stream: its request ends with flag DR and details (static),
 * and the child closes. */
void wp_dconn_peer_reset(wp_dconn *d, const char *details);
/* Writes bufs on d's socket (one write at a time): 0 written, 1 pending (the connection's
 * on_written follows), -1 failed (d closed). */
int wp_dconn_write(wp_dconn *d, uv_buf_t *bufs, unsigned n);

/* Closes d now (its socket, timers; its stream ends; the network filters' on_close run
 * first). */
void wp_dconn_close(wp_dconn *d);
/* The listener's access_log for a connection a network filter closes before any request
 * (Envoy writes a listener's access logs when a connection ends): start time and duration,
 * addresses, SNI, connection id and %CONNECTION_TERMINATION_DETAILS% (details, static or
 * config-owned). Nothing when the listener has no access_log. */
void wp_dconn_log_close(wp_dconn *d, const char *details);
/* Drain: idle connections close, busy ones after their current request; an HTTP/2 one
 * sends GOAWAY and closes once its streams are done. */
void wp_dconn_drain(wp_worker *w);
/* The same for one connection. */
void wp_dconn_drain_one(wp_dconn *d);
/* Frees a stream for good (worker shutdown, or a stream the free list does not keep). */
void wp_stream_destroy(wp_stream *s);

#endif
