/*
 * rbac.h - envoy.filters.network.rbac as a network filter (net/network_filter.h), Envoy's
 * network RoleBasedAccessControlFilter (source/extensions/filters/network/rbac/rbac_filter.cc):
 *  - onData checks the connection (its addresses, SNI, peer certificate; no request: header and
 *    path matchers see none) with the filter's shadow rules and rules (filters/rbac/rbac.h):
 *    once, on the first bytes (enforcement_type ONE_TIME_ON_FIRST_BYTE, the default, keeping
 *    the result for the connection) or on every read (CONTINUOUS);
 *  - a denied connection is closed at once without flushing (NoFlush, local close reason
 *    rbac_deny_close), its %CONNECTION_TERMINATION_DETAILS% set to
 *    rbac_access_denied_matched_policy[<policy>|none] (written by the listener's access_log,
 *    http/conn.h wp_dconn_log_close), and the later filters do not run;
 *  - stats <stat_prefix>rbac.allowed / denied / shadow_allowed / shadow_denied.
 * The per-connection instance is the connection (self) and one state byte; no allocation.
 */
#ifndef WEFT_PROXY_FILTERS_NETWORK_RBAC_H
#define WEFT_PROXY_FILTERS_NETWORK_RBAC_H

#include "proxy/net/network_filter.h"

extern const wp_nf_ops wp_rbac_network_filter;

#endif
