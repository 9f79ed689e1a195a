/*
 * raw_socket.h - the plain TCP transport socket (transport_socket.h), Envoy's
 * RawBufferSocket (source/common/network/raw_buffer_socket.cc) over a libuv uv_tcp_t.
 *
 * Reads go straight into the room the owner's alloc callback gives (no buffer of its own);
 * writes try the kernel first (uv_try_write) and queue only what is left (uv_write), with a
 * write request from the worker's free list (wp_wreq_pool), held only while a write is
 * pending: most writes complete at once and need none. TCP_NODELAY is set on accepted and
 * connected sockets.
 *
 * Ownership: the owner embeds a wp_raw_socket, initialises it (wp_raw_socket_init), then
 * either accepts into it (server side) or connects it (wp_tsock_connect, client side), and
 * uses it through &rs->base. Close it once with wp_tsock_close, also when init succeeded but
 * accept failed; its memory must stay valid until cbs->on_closed.
 *
 * Unread bytes (wp_raw_socket_unread): bytes read from the socket before its owner took it
 * (the listener filters' buffer, listener_filter.h) are handed to the owner as its first
 * reads, through its alloc and on_read callbacks as if the kernel gave them: from the end of
 * the loop iteration in which reading starts (never from inside read_start), as much as each
 * alloc gives room for, while the owner keeps reading; the socket reads the kernel again only
 * when they are all delivered. They are a copy (malloc'd, freed once delivered or closed).
 */
#ifndef WEFT_PROXY_NET_RAW_SOCKET_H
#define WEFT_PROXY_NET_RAW_SOCKET_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "proxy/net/deferred.h"
#include "proxy/net/transport_socket.h"

/* Write requests of one loop, reused (singly linked through their first word). */
typedef struct wp_wreq_pool {
    void *free;
    size_t nfree;
} wp_wreq_pool;

/* Frees the pooled requests (loop shutdown). */
void wp_wreq_pool_free(wp_wreq_pool *p);

typedef struct wp_raw_socket {
    wp_tsock base; /* first: a wp_tsock * to it is a wp_raw_socket * */
    uv_tcp_t tcp;
    wp_wreq_pool *wreqs;          /* the loop's write requests (not owned) */
    struct wp_raw_unread *unread; /* bytes to hand out before the kernel's, NULL none */
    bool closing;
    bool reading; /* the owner started reading (only tracked while unread bytes wait) */
} wp_raw_socket;

/* Initialises rs on loop with the owner's callbacks (cbs must outlive rs). 0, or UV_E*
 * (rs is then not initialised: no close, no on_closed). */
int wp_raw_socket_init(wp_raw_socket *rs, uv_loop_t *loop, wp_wreq_pool *wreqs,
                       const wp_tsock_cbs *cbs, void *owner);
/* Accepts a pending connection of the listening server into rs. 0 or UV_E* (close rs). */
int wp_raw_socket_accept(wp_raw_socket *rs, uv_stream_t *server);

/* Bytes data[0, len) go to the owner before anything read from now on (see above); dd is
 * the loop's deferred list that delivers them. Call while the owner is not reading. 0, or
 * UV_ENOMEM. */
int wp_raw_socket_unread(wp_raw_socket *rs, wp_deferred *dd, const unsigned char *data, size_t len);

#endif
