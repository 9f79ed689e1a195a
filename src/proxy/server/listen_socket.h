/*
 * listen_socket.h - a listener's listening socket, as Envoy binds one per worker
 * (enable_reuse_port: SO_REUSEPORT, the kernel spreads connections across the workers).
 * An IPv6 address is bound IPv6-only (IPV6_V6ONLY), as Envoy binds it when the listener's
 * socket_address does not set ipv4_compat (the default): "::" then accepts IPv6 connections
 * only, and an IPv4 client needs a 0.0.0.0 listener of its own.
 */
#ifndef WEFT_PROXY_NET_LISTEN_SOCKET_H
#define WEFT_PROXY_NET_LISTEN_SOCKET_H

#include "core/strbuf.h"
#include "proxy/config/config.h"

/* A bound, non-blocking, close-on-exec SO_REUSEPORT socket for listener l (not yet
 * listening; the caller owns the fd). -1 with "listener NAME: ..." appended to err. */
int wp_listen_socket(const wp_listener *l, wf_strbuf *err);

#endif
