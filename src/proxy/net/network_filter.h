/*
 * network_filter.h - network (L4) filters: the filters of the chain a connection matched, run
 * in order on the connection's events (Envoy's Network::ReadFilter, envoy/network/filter.h,
 * and FilterManagerImpl, source/common/network/filter_manager_impl.cc).
 *
 * on_new_connection runs once, when the connection was accepted and its chain chosen;
 * on_data runs when bytes arrived (the connection's read buffer holds them; the terminal
 * filter consumes them through its own connection handle). Each returns WP_NF_CONTINUE (the
 * next filter runs) or WP_NF_STOP_ITERATION (the filters after it do not run for this
 * event; a filter that stopped resumes the rest with wp_nf_chain_continue, Envoy's
 * ReadFilterCallbacks::continueReading).
 *
 * Filter types are decoded by the bootstrap into wp_nf_config (the chain's list, in the config
 * snapshot); the connection layer maps each kind to its ops when it builds a connection's
 * chain (no allocation: the instances live in the connection's wp_nf_chain: the connection
 * (`self`), each filter's config, its ctx and one byte of per-connection state).
 * Registered now: envoy.filters.network.rbac (filters/network/rbac.h) and istio.stats
 * (filters/network/istio_stats.h), before the terminal filter, and the terminal filters
 * envoy.filters.network.http_connection_manager (the HTTP connection manager is a network filter)
 * and envoy.filters.network.tcp_proxy (filters/network/tcp_proxy.h).
 *
 * on_close (may be NULL) runs when the connection closes, whoever closes it (Envoy's
 * ConnectionCallbacks::onEvent LocalClose / RemoteClose): a filter that holds per-connection
 * state (ctx, its own) lets it go there; the connection is still valid during the call.
 */
#ifndef WEFT_PROXY_NET_NETWORK_FILTER_H
#define WEFT_PROXY_NET_NETWORK_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WP_NF_MAX                                                                                  \
    6 /* network filters per chain (Istio's inbound TCP chains: MX, RBACs, stats, tcp_proxy) */

typedef enum { WP_NF_CONTINUE, WP_NF_STOP_ITERATION } wp_nf_status;

/* The network filter types weft knows (bootstrap name -> kind). */
typedef enum {
    WP_NF_HTTP_CONNECTION_MANAGER, /* envoy.filters.network.http_connection_manager */
    WP_NF_RBAC,                    /* envoy.filters.network.rbac (config: wp_rbac_config) */
    WP_NF_TCP_PROXY,               /* envoy.filters.network.tcp_proxy (config: wp_tcp_proxy) */
    WP_NF_ISTIO_STATS,             /* istio.stats (config: wp_istio_stats_filter) */
    WP_NF_METADATA_EXCHANGE,       /* istio.metadata_exchange (config: wp_tcp_mx_config) */
    WP_NF_KIND_COUNT_,
} wp_nf_kind;

/* One configured filter of a chain (config snapshot). */
typedef struct wp_nf_config {
    const char *name;
    wp_nf_kind kind;
    const void *config; /* the kind's config: a wp_hcm for the connection manager */
} wp_nf_config;

/* One filter of a connection's chain as its callbacks see it (made for the call): self is the
 * connection the connection layer gave it, config the filter's wp_nf_config.config, *state one
 * byte the filter keeps per connection (0 when the chain is built), *ctx the filter's own
 * per-connection object (NULL when the chain is built; a filter that sets it frees it, at the
 * latest in on_close). ctx and state point into the chain, so what a filter stores there is
 * seen at once, also by a callback its own call leads to (a close from on_new_connection). */
typedef struct wp_nf_filter {
    void *self;
    const void *config;
    void **ctx;
    uint8_t *state;
} wp_nf_filter;

/* One filter type. */
typedef struct wp_nf_ops {
    const char *name;
    wp_nf_status (*on_new_connection)(wp_nf_filter *f);
    wp_nf_status (*on_data)(wp_nf_filter *f, bool end_stream);
    void (*on_close)(wp_nf_filter *f);
} wp_nf_ops;

/* A connection's filter chain, in every connection (memory per idle connection counts): the
 * connection once, and per filter its ops, config, ctx and state byte in arrays; the
 * wp_nf_filter a callback gets is made for the call and its ctx and state kept after it (a
 * filter never keeps the pointer). */
typedef struct wp_nf_chain {
    void *self;
    const wp_nf_ops *ops[WP_NF_MAX];
    const void *config[WP_NF_MAX];
    void *ctx[WP_NF_MAX];
    uint8_t state[WP_NF_MAX];
    uint8_t n;
    uint8_t stopped; /* index of the filter that stopped the current event, n when none */
} wp_nf_chain;

/* Empties c. */
void wp_nf_chain_init(wp_nf_chain *c);
/* Appends a filter (self: the connection, the same for every filter of c; config: its
 * wp_nf_config.config); -1 when the chain is full. */
int wp_nf_chain_add(wp_nf_chain *c, const wp_nf_ops *ops, void *self, const void *config);
/* Runs on_new_connection / on_data over the filters in order, until one stops. */
wp_nf_status wp_nf_chain_on_new_connection(wp_nf_chain *c);
wp_nf_status wp_nf_chain_on_data(wp_nf_chain *c, bool end_stream);
/* Resumes on_data after the filter that stopped (a no-op when none did). */
wp_nf_status wp_nf_chain_continue(wp_nf_chain *c, bool end_stream);
/* Runs every filter's on_close, in order (the connection closes); then the chain is empty. */
void wp_nf_chain_on_close(wp_nf_chain *c);

#endif
