/*
 * filters.h - the network filters weft implements, by kind (net/network_filter.h): the
 * bootstrap decodes a chain's filters into kinds (wp_nf_config), and a new connection's
 * chain is built from their ops (server/conn_handler.c). Registered:
 * envoy.filters.network.rbac, istio.metadata_exchange (TCP), istio.stats, envoy.filters.network.http_connection_manager and
 * envoy.filters.network.tcp_proxy.
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_FILTERS_H
#define WEFT_PROXY_FILTERS_NETWORK_FILTERS_H

#include "proxy/net/network_filter.h"

/* The ops of filter kind k (never NULL for a kind the bootstrap accepts). */
const wp_nf_ops *wp_network_filter_ops(wp_nf_kind k);

#endif
