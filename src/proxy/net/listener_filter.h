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
 * filter waits, e.g. for the first bytes of a TLS ClientHello, and later calls
 * cb->continue_filter_chain(cb, success); success false closes the socket, as Envoy's
 * continueFilterChain(false)).
 *
 * Registered filters: none yet. The bootstrap refuses listener_filters entries by name
 * (envoy.filters.listener.tls_inspector, .http_inspector, .original_dst come with TLS, HTTP/2
 * detection and transparent capture); the accept path already runs the (empty) chain, so a
 * new filter is one wp_listener_filter_ops and one bootstrap decoder.
 *
 * Memory: a wp_lf_socket lives in the downstream connection (its addresses only: no
 * allocation per accept). What a filter detects is kept in a wp_lf_detected allocated by the
 * first setter call (the setters return -1 when that fails) and freed by
 * wp_lf_socket_release; strings are copied and truncated to its buffers.
 */
#ifndef WEFT_PROXY_NET_LISTENER_FILTER_H
#define WEFT_PROXY_NET_LISTENER_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "proxy/net/filter_chain_match.h"

#define WP_LF_MAX_ALPN      8
#define WP_LF_SNI_MAX       256 /* a DNS name fits */
#define WP_LF_ALPN_BUF      128
#define WP_LF_TRANSPORT_MAX 32

typedef enum { WP_LF_CONTINUE, WP_LF_STOP_ITERATION } wp_lf_status;

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
    wp_lf_detected *det; /* NULL: nothing detected (raw_buffer, no SNI, no ALPN) */
} wp_lf_socket;

typedef struct wp_lf_callbacks wp_lf_callbacks;

/* One listener filter type. self is the filter's per-listener config. */
typedef struct wp_listener_filter_ops {
    const char *name; /* "envoy.filters.listener.tls_inspector" */
    wp_lf_status (*on_accept)(const void *self, wp_lf_callbacks *cb);
} wp_listener_filter_ops;

/* A listener's filter: its type and config (owned by the config snapshot). */
typedef struct wp_listener_filter {
    const wp_listener_filter_ops *ops;
    const void *config;
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
    void *owner; /* the connection being accepted */
};

/* Fills s from the accepted socket's addresses (peer = source = direct source), nothing
 * detected. */
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

/* Runs cb's filters from cb->next. Returns WP_LF_CONTINUE when all continued (cb->done is
 * not called then; the caller goes on), WP_LF_STOP_ITERATION when one stopped (the rest runs
 * from continue_filter_chain, which ends with cb->done). wp_lf_callbacks_init sets
 * continue_filter_chain. */
void wp_lf_callbacks_init(wp_lf_callbacks *cb, wp_lf_socket *s, const wp_listener_filter *f,
                          size_t n, void (*done)(wp_lf_callbacks *, bool), void *owner);
wp_lf_status wp_lf_run(wp_lf_callbacks *cb);

/* The filter chain match input for s (pointers into s). */
void wp_lf_match_input(const wp_lf_socket *s, wp_fcm_input *in);

#endif
