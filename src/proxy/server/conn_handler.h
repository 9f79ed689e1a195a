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
 * Listener access log (Listener.access_log, Envoy's ActiveStreamListenerBase::emitLogs and
 * ActiveTcpSocket::unlink): a connection that ends before a chain's network filters take it is
 * written to the listener's access logs (access_log/alog_emit.h, their filters applied) with
 * what exists then: no chain matched = NR and details filter_chain_not_found; closed while the
 * listener filters ran (listener_filters_timeout, a filter error, the peer leaving) = no flag, no
 * details. Response code 0, bytes 0, the accept's start time, the duration up to the close, the
 * downstream addresses (the one original_dst restored), the SNI the tls_inspector saw. Only
 * these closes pay for it; an accepted connection's path is unchanged.
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
