/*
 * http_connection_manager.h - envoy.filters.network.http_connection_manager as a network
 * filter (Envoy's Http::ConnectionManagerImpl is a Network::ReadFilter): the terminal filter
 * of a chain whose connection it serves (http/conn.h). Its per-connection instance (`self`)
 * is the downstream connection (wp_dconn); it allocates nothing.
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_HCM_H
#define WEFT_PROXY_FILTERS_NETWORK_HCM_H

#include "proxy/net/network_filter.h"

extern const wp_nf_ops wp_hcm_network_filter;

#endif
