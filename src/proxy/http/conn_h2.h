/*
 * conn_h2.h - HTTP/2 downstream connections (conn_h2.c): the connection manager's side of
 * the HTTP/2 server codec (http/codec_h2.h). A connection that speaks HTTP/2 (codec_type
 * HTTP2, ALPN "h2", or AUTO's prior-knowledge preface: conn.h wp_hcm_choose_codec decides,
 * the HCM network filter starts it) carries each of its
 * streams as a child connection (conn.h wp_dconn_child) whose transport socket is the
 * stream: the child reads the request translated to HTTP/1.1 (protocols.md §2.8) and the
 * HTTP/1.1 response it writes goes out as HEADERS, DATA and trailers. So each stream has the
 * connection manager's whole per-request path (filters, router, timeouts, access log with
 * %PROTOCOL% HTTP/2) and HTTP/1 connections are untouched.
 *
 * Envoy behaviour followed: the codec's (codec_h2.h); a trailers-only gRPC response (no body,
 * grpc-status in its head) goes without the content-length: 0 the child's HTTP/1.1 codec
 * gave it, as Envoy's HTTP/2 codec sends it (protocols.md §3.2); a client's RST_STREAM ends the
 * stream's request with flag DR and details http2.remote_reset (protocols.md §2.5); drain
 * sends the shutdown notice and the final GOAWAY, lets the streams in flight finish and then
 * closes (Envoy waits drain_timeout between the two GOAWAYs: weft sends both at once).
 *
 * Flow control (bounded memory both ways): a request's body is copied from the read buffer
 * into its stream's queue and its HTTP/2 window opens only as the child connection reads the
 * queue (the child stops reading while its upstream write waits), so a slow upstream stops
 * the client; a response's body is copied into the stream's two buffers (one being framed,
 * one filling) and the child's write stays pending while more than WP_H2C_BUFFER bytes wait,
 * so the upstream read pauses (HTTP/1's back-pressure); nothing is framed while the socket's
 * write is pending.
 *
 * Writes: the frames of all streams go out together, once per loop iteration (from the
 * worker's deferred list, net/deferred.h, after the iteration's timer and I/O callbacks), as
 * nghttp2's session_send once per turn: one write carries the responses that the upstream
 * reads of one poll phase completed.
 *
 * Memory: the codec and one state per stream (queues grow to the window / WP_H2C_BUFFER).
 * An ended stream's state goes back to its worker's free ones (at most 64, each keeping
 * buffers of at most 16 KiB, as the HTTP/1 streams of conn.c), so a stream in the steady
 * state allocates nothing here.
 * Threads: the connection's worker.
 */
#ifndef WEFT_PROXY_HTTP_CONN_H2_H
#define WEFT_PROXY_HTTP_CONN_H2_H

#include <stddef.h>

#include "proxy/http/conn.h"

#define WP_H2C_BUFFER (64u * 1024u) /* response bytes a stream holds before it pushes back */

typedef struct wp_h2c wp_h2c;

/* d speaks HTTP/2 from now on (its SETTINGS are queued; it plugs its side into the connection
 * manager, conn.h wp_dconn_set_mux, and the calls below reach it through those ops). 0, or -1
 * when out of memory. */
int wp_h2c_start(wp_dconn *d);
/* The bytes d buffered (d->rbuf) go to the codec; the buffer is given back. */
void wp_h2c_on_data(wp_dconn *d);
/* d's pending write finished: the next frames go out. */
void wp_h2c_on_written(wp_dconn *d);
/* d closes: its streams' child connections close (DC for unfinished requests); the codec
 * goes. */
void wp_h2c_close(wp_dconn *d);
/* d's memory goes (from the connection's last close callback). */
void wp_h2c_free(wp_h2c *c);
/* Drain: GOAWAY, d closes once its streams are done. */
void wp_h2c_drain(wp_dconn *d);
/* Open streams. */
size_t wp_h2c_streams(const wp_dconn *d);
/* The stream states w keeps for its next HTTP/2 streams go (worker shutdown). */
void wp_h2c_worker_free(wp_worker *w);

#endif
