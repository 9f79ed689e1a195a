/*
 * conn_handler.h - a worker's accepted connections, from the listening socket to their
 * network filters (Envoy's ActiveTcpListener and ActiveStreamListenerBase::newConnection,
 * source/server/active_tcp_listener.cc, active_stream_listener_base.cc): the connection is
 * set up (http/conn.h wp_dconn_accept), the listener's listener filters run on it
 * (net/listener_filter.h), Envoy's filter chain match picks its chain or the
 * default_filter_chain (config.h wp_listener_find_chain), a chain with a DownstreamTlsContext
 * wraps the accepted socket in a TLS one (net/tls_socket.h), and the chain's network filters are
 * built from their kinds (filters/network/filters.h) and told of the new connection. A
 * connection no chain matches is closed and counted in listener.<address>.no_filter_chain_match
 * (logged "closing connection from ...: no matching filter chain found", as Envoy).
 *
 * Memory: the listener filters' state is malloc'd only on a listener that has listener
 * filters (an idle connection of the others carries none) and freed with the connection.
 * Threads: the worker's.
 */
#ifndef WEFT_PROXY_SERVER_CONN_HANDLER_H
#define WEFT_PROXY_SERVER_CONN_HANDLER_H

#include <stddef.h>

#include <uv.h>

#include "proxy/event/worker.h"

/* A connection arrived on listening socket server of listener index listener (w->cfg). */
void wp_conn_handler_accept(wp_worker *w, size_t listener, uv_stream_t *server);

#endif
