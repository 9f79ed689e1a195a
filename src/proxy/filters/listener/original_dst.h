/*
 * original_dst.h - envoy.filters.listener.original_dst (Envoy's OriginalDstFilter,
 * source/extensions/filters/listener/original_dst/original_dst.cc; docs configuration/
 * listeners/listener_filters/original_dst_filter; reference protocols.md §5.3): restores the
 * local address of a connection that iptables REDIRECTed to the proxy to the address the client
 * dialled, read with getsockopt(SOL_IP, SO_ORIGINAL_DST) for IPv4 and getsockopt(SOL_IPV6,
 * IP6T_SO_ORIGINAL_DST) for IPv6 (both option 80). A socket that was not redirected (the
 * option fails, e.g. ENOENT without a conntrack NAT entry) keeps its local address, as Envoy's
 * getOriginalDst returning nullptr. The filter never waits and never fails a connection.
 *
 * Also added by a listener with use_original_dst (Envoy's ListenerImpl::
 * buildOriginalDstListenerFilter, appended after the configured filters); the listener then
 * hands the connection to the listener owning the restored address (config.h
 * wp_listener_find_by_address, server/conn_handler.c).
 *
 * Config: the empty OriginalDst message (TPROXY's transparent sockets keep their local address
 * anyway). Memory: none per connection.
 */
#ifndef WEFT_PROXY_FILTERS_LISTENER_ORIGINAL_DST_H
#define WEFT_PROXY_FILTERS_LISTENER_ORIGINAL_DST_H

#include <stdbool.h>
#include <sys/socket.h>

#include "proxy/net/listener_filter.h"

#define WP_ORIGINAL_DST_NAME "envoy.filters.listener.original_dst"
#define WP_ORIGINAL_DST_TYPE                                                                       \
    "type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst"

extern const wp_listener_filter_ops wp_original_dst_ops;

/* The original destination of the accepted socket fd whose local address family is family
 * (AF_INET or AF_INET6) into out (a sockaddr_in or sockaddr_in6). false: not redirected (or
 * another family): out is untouched. */
bool wp_original_dst_get(int fd, int family, wp_lf_addr *out);

#endif
