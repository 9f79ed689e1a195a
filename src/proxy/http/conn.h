/*
 * conn.h - downstream connections and their HTTP connection manager (conn.c, Envoy's
 * ConnectionManagerImpl over the HTTP/1 codec, http/codec.h): accepted by a worker's
 * listening socket, closed and drained by the worker. A connection closes its socket at once
 * and is freed from the close callbacks at the end of the loop iteration; its streams go on
 * the worker's deferred-delete list (net/deferred.h).
 */
#ifndef WEFT_PROXY_HTTP_CONN_H
#define WEFT_PROXY_HTTP_CONN_H

#include "proxy/proxy_internal.h"

/* The listening socket's connection callback (uv_connection_cb): server->data is the
 * worker's wp_wlistener, server->loop->data the worker. */
void wp_dconn_on_accept(uv_stream_t *server, int status);
/* Closes d now (its socket, timers; its stream ends). */
void wp_dconn_close(wp_dconn *d);
/* Drain: idle connections close, busy ones after their current request. */
void wp_dconn_drain(wp_worker *w);
/* Frees a stream for good (worker shutdown, or a stream the free list does not keep). */
void wp_stream_destroy(wp_stream *s);

#endif
