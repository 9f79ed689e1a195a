/*
 * listener_filter.h - listener filters: what runs on an accepted socket before a filter chain
 * is chosen (Envoy's Network::ListenerFilter, envoy/network/filter.h, run by ActiveTcpSocket,
 * source/common/listener_manager/active_tcp_socket.cc).
 *
 * A listener filter only annotates the accepted socket (wp_lf_socket): the transport protocol
 * it detected ("tls"), the requested server name (SNI), the application protocols (ALPN, or
 * "http/1.1" / "h2c" sniffed by http_inspector), and the original destination (original_dst
 * restores the local address). It never owns the connection. After the last filter the
 * listener fills in the default transport protocol "raw_buffer" when none was detected and
 * runs the filter chain match (filter_chain_match.h) on what the filters found.
 *
 * on_accept returns WP_LF_CONTINUE (the next filter runs now) or WP_LF_STOP_ITERATION (the
 * filter waits and later calls cb->continue_filter_chain(cb, success); success false closes
 * the socket, as Envoy's continueFilterChain(false)).
 *
 * Filters that read (Envoy's ListenerFilter::onData and maxReadBytes, run over the
 * ListenerFilterBuffer of source/common/listener_manager/active_tcp_socket.cc): a filter with
 * on_data that stops in on_accept is given the socket's first bytes, all of them from the
 * first each time (they are not consumed: after the listener filters the connection reads
 * them first), at once when earlier filters read some, and again whenever more arrived. It
 * answers WP_LF_CONTINUE (done: the next filter runs), WP_LF_STOP_ITERATION (it needs more:
 * the owner reads on, up to max_read_bytes) or WP_LF_FAILED (the connection is closed). The
 * owner of the connection does the reading (wp_lf_wants_data, wp_lf_on_data); the peer's end
 * of stream or the listener's listener_filters_timeout while a filter waits closes the
 * connection, or, with continue_on_listener_filters_timeout, the chain goes on without it.
 *
 * Registered filters: envoy.filters.listener.tls_inspector, .http_inspector and .original_dst
 * (filters/listener/). The bootstrap refuses the others by name (.proxy_protocol).
 *
 * Memory: a wp_lf_socket lives in the downstream connection (its addresses only: no
 * allocation per accept). What a filter detects is kept in a wp_lf_detected allocated by the
 * first setter call (the setters return -1 when that fails) and freed by
 * wp_lf_socket_release; strings are copied and truncated to its buffers. A listener with
 * listener filters gives each connection a wp_lf_conn (malloc'd by the owner; the read buffer
 * grows by doubling up to the filters' max_read_bytes and is freed with wp_lf_conn_release).
 */
#ifndef WEFT_PROXY_NET_LISTENER_FILTER_H
#define WEFT_PROXY_NET_LISTENER_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "proxy/net/filter_chain_match.h"

#define WP_LF_MAX_ALPN      8
#define WP_LF_SNI_MAX       256 /* a DNS name fits */
#define WP_LF_ALPN_BUF      128
#define WP_LF_TRANSPORT_MAX 32

typedef enum { WP_LF_CONTINUE, WP_LF_STOP_ITERATION, WP_LF_FAILED } wp_lf_status;

/* An IPv4 or IPv6 socket address (AF_UNSPEC when unknown), without sockaddr_storage's 128
 * bytes: it lives in every connection. */
typedef union {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
} wp_lf_addr;

/* What listener filters detected on a socket. */
typedef struct wp_lf_detected {
    char server_name[WP_LF_SNI_MAX]; /* lower-case, "" = none */
    char transport_protocol[WP_LF_TRANSPORT_MAX];
    char alpn_buf[WP_LF_ALPN_BUF];
    const char *alpn[WP_LF_MAX_ALPN];
    size_t nalpn;
} wp_lf_detected;

/* The accepted socket as listener filters annotate it (Envoy's ConnectionSocket). */
typedef struct wp_lf_socket {
    wp_lf_addr local;         /* destination; original_dst may restore it */
    wp_lf_addr remote;        /* source; proxy_protocol may override it */
    wp_lf_addr direct_remote; /* the socket's peer, never overridden */
    bool local_restored;
    int fd;              /* the accepted socket's descriptor (original_dst asks it), -1 unknown */
    wp_lf_detected *det; /* NULL: nothing detected (raw_buffer, no SNI, no ALPN) */
} wp_lf_socket;

typedef struct wp_lf_callbacks wp_lf_callbacks;
struct uv_timer_s;
struct wp_tsock_cbs;
struct wp_stats_shard;

/* One listener filter type. self is the filter's per-listener config. */
typedef struct wp_listener_filter_ops {
    const char *name; /* "envoy.filters.listener.tls_inspector" */
    wp_lf_status (*on_accept)(const void *self, wp_lf_callbacks *cb);
    /* NULL for a filter that reads nothing; else the socket's first len bytes (see above) */
    wp_lf_status (*on_data)(const void *self, wp_lf_callbacks *cb, const unsigned char *data,
                            size_t len);
    /* the most bytes on_data may be given (the owner stops reading there) */
    size_t (*max_read_bytes)(const void *self);
} wp_listener_filter_ops;

/* Envoy's ListenerFilterChainMatchPredicate (config.listener.v3.ListenerFilterChainMatchPredicate),
 * a listener filter's filter_disabled: when it matches the accepted socket, the filter is
 * skipped (ActiveTcpSocket::continueFilterChain's isDisabled, source/common/listener_manager/
 * active_tcp_socket.cc, with ListenerFilterMatcherBuilder's matchers,
 * source/common/network/filter_matcher.cc). destination_port_range [start, end) matches the
 * socket's local port as it is when the filter's turn comes (after original_dst restored it;
 * never a socket without an IP local address); or_match / and_match any / all of kids (at
 * least two); not_match the opposite of its one kid; any_match always. Istio's virtualInbound
 * disables its inspectors per port with it. */
typedef enum {
    WP_LF_PRED_ANY,
    WP_LF_PRED_PORT_RANGE,
    WP_LF_PRED_OR,
    WP_LF_PRED_AND,
    WP_LF_PRED_NOT,
} wp_lf_pred_kind;

typedef struct wp_lf_pred {
    wp_lf_pred_kind kind;
    int32_t start, end;            /* PORT_RANGE */
    const struct wp_lf_pred *kids; /* OR, AND: nkids of them; NOT: one */
    size_t nkids;
} wp_lf_pred;

/* Whether p matches socket s (above). */
bool wp_lf_pred_match(const wp_lf_pred *p, const struct wp_lf_socket *s);

/* A listener's filter: its type, config and filter_disabled (all owned by the config
 * snapshot; disabled NULL = always runs). */
typedef struct wp_listener_filter {
    const wp_listener_filter_ops *ops;
    const void *config;
    const wp_lf_pred *disabled;
} wp_listener_filter;

/* What a filter sees: the socket, and the way to resume after WP_LF_STOP_ITERATION. */
struct wp_lf_callbacks {
    wp_lf_socket *socket;
    const wp_listener_filter *filters; /* the listener's filters */
    size_t nfilters;
    size_t next; /* the filter to run next */
    /* Called by a filter that stopped, once it is done (runs the rest, then done). */
    void (*continue_filter_chain)(wp_lf_callbacks *cb, bool success);
    /* Called by the runner when every filter continued (success) or one failed. */
    void (*done)(wp_lf_callbacks *cb, bool success);
    void *owner;                  /* the connection being accepted */
    struct wp_stats_shard *stats; /* the worker's stats shard, for the filters' counters */
    const unsigned char *data;    /* the bytes read so far (wp_lf_on_data), NULL none */
    size_t len;
};

/* A connection's listener-filter run with its read buffer (see Memory above). */
typedef struct wp_lf_conn {
    wp_lf_socket sock;
    wp_lf_callbacks cb;
    unsigned char *buf; /* the socket's first bytes (malloc'd), NULL before any read */
    size_t len, cap;
    /* the owner's while it reads for the filters: the socket's callbacks and timer
     * callback it lent out, given back when the run ends */
    const struct wp_tsock_cbs *saved_cbs;
    void *saved_owner;
    void (*saved_timer_cb)(struct uv_timer_s *);
    bool reading;
    /* handed over by a use_original_dst listener to the listener owning its original
     * destination: never handed over again (Envoy's hand_off_restored_destination_connections
     * false) */
    bool handed_off;
} wp_lf_conn;

/* Fills s from the accepted socket's addresses (peer = source = direct source), nothing
 * detected, fd -1 (the owner sets it). */
void wp_lf_socket_init(wp_lf_socket *s, const struct sockaddr *local, const struct sockaddr *peer);
/* Frees what the filters detected (s stays usable, as after init without addresses). */
void wp_lf_socket_release(wp_lf_socket *s);

/* Setters for filters (Envoy's setDetectedTransportProtocol, setRequestedServerName (lower-
 * cased), setRequestedApplicationProtocols, restoreLocalAddress); -1 out of memory. */
int wp_lf_set_transport_protocol(wp_lf_socket *s, const char *proto);
int wp_lf_set_server_name(wp_lf_socket *s, const char *name);
int wp_lf_set_application_protocols(wp_lf_socket *s, const char *const *protos, size_t n);
void wp_lf_restore_local_address(wp_lf_socket *s, const struct sockaddr *sa);

/* What was detected: the requested server name ("" none) and the transport protocol
 * ("raw_buffer" when no filter detected one, Envoy's default). */
const char *wp_lf_server_name(const wp_lf_socket *s);
const char *wp_lf_transport_protocol(const wp_lf_socket *s);

/* Runs cb's filters from cb->next (a filter whose filter_disabled matches is skipped). Returns
 * WP_LF_CONTINUE when all continued (cb->done is not called then; the caller goes on),
 * WP_LF_STOP_ITERATION when one stopped (the rest runs from continue_filter_chain or wp_lf_on_data,
 * which end with cb->done), WP_LF_FAILED when one failed (cb->done is not called: the caller closes
 * the connection). wp_lf_callbacks_init sets continue_filter_chain. */
void wp_lf_callbacks_init(wp_lf_callbacks *cb, wp_lf_socket *s, const wp_listener_filter *f,
                          size_t n, void (*done)(wp_lf_callbacks *, bool), void *owner);
wp_lf_status wp_lf_run(wp_lf_callbacks *cb);

/* Whether the filter that stopped waits for the socket's bytes (it has on_data), and how many
 * it may be given at most. */
bool wp_lf_wants_data(const wp_lf_callbacks *cb);
size_t wp_lf_max_read_bytes(const wp_lf_callbacks *cb);
/* The owner read more: data[0, len) are all the socket's bytes so far (kept valid until the
 * run ends). The waiting filter's on_data runs; when it continues, the rest of the chain runs
 * and cb->done follows (true, or false when a filter failed); while it needs more, nothing. */
void wp_lf_on_data(wp_lf_callbacks *cb, const unsigned char *data, size_t len);

/* The original destination original_dst restored on c's socket (an ORIGINAL_DST cluster's
 * upstream host), NULL when c is NULL or nothing was restored. */
const struct sockaddr *wp_lf_conn_original_dst(const wp_lf_conn *c);

/* Frees c's buffer and what its filters detected (c itself is the caller's). */
void wp_lf_conn_release(wp_lf_conn *c);

/* The filter chain match input for s (pointers into s). */
void wp_lf_match_input(const wp_lf_socket *s, wp_fcm_input *in);

#endif
