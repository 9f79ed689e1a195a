/*
 * tls_socket.h - the TLS transport socket (transport_socket.h), Envoy's SslSocket
 * (source/common/tls/ssl_socket.cc) over the TLS engine (tls/tls.h): it wraps a raw TCP
 * socket (raw_socket.h) as that socket's owner, downstream (server) or upstream (client).
 *
 *  - Handshake on the loop, never blocking: ciphertext read by the raw socket goes into the
 *    engine and its answer goes out at once. A client socket reports on_connected(0) only
 *    after its handshake; a failed handshake is on_connected(UV_EPROTO) with the failure
 *    reason in failure_reason() (Envoy's "TLS_error:|...:TLS_error_end"), so the pool
 *    reports it as the connect failure's transport failure reason. A server socket whose
 *    handshake fails reports on_read(UV_EPROTO) (the owner closes), after sending the alert.
 *  - Reads keep the zero-copy contract: the raw socket reads into a ciphertext room (a
 *    buffer from the worker's free list), which the engine reads its records from in place
 *    (lent, not copied); the engine decrypts straight into the room the owner's alloc gives,
 *    asked for only when there is plaintext. The room goes back to the free list once the
 *    engine consumed it. Records left when the owner stops reading stay in the room and
 *    are delivered after the owner starts again, from the loop (the worker's deferred list),
 *    never from inside read_start.
 *  - Writes: the owner's buffers are encrypted at once (so they are free at once); small ones
 *    are gathered into one record (one record per small response, as a proxy writing one
 *    contiguous buffer makes). Each record goes straight to the kernel when nothing waits
 *    before it (no copy); what the kernel does not take, and the handshake's flights (one
 *    write each), wait in a buffer from the worker's free list, handed to the raw socket;
 *    write() returns 1 (on_written follows) while that ciphertext is still queued.
 *  - shutdown() sends close_notify, then shuts the TCP write side.
 *  - ssl(): ALPN, SNI, URI SANs, subject, version, cipher once the handshake is done ("" before).
 *  - Envoy's ssl.* stats (SslStats, docs configuration/listeners/stats#tls-statistics and
 *    cluster_stats#tls-statistics), counted into the slots given (listener.<address>.ssl.*
 *    or cluster.<name>.ssl.*): handshake, session_reused, no_certificate (a server's peer
 *    sent none), connection_error, fail_verify_error, fail_verify_san, fail_verify_no_cert;
 *    and, registered on first use, ssl.ciphers.<cipher>, ssl.versions.<version>,
 *    ssl.curves.<curve> (BoringSSL's curve names: X25519, P-256, P-384, P-521).
 *
 * Ownership: wp_tls_socket_wrap takes the raw socket over (its callbacks now reach the TLS
 * socket) and returns the socket the owner uses instead; the owner's callbacks and pointer
 * are those the raw socket had. close() closes both; on_closed comes once both handles are
 * closed, and the TLS socket frees itself right after it (the raw socket's memory stays the
 * owner's). Memory: malloc'd on TLS connections only (the socket, the engine's connection);
 * the ciphertext buffers (16 KiB rooms, waiting ciphertext) come from the worker's free list
 * and are held only while bytes are in them, and the engine holds no buffer when idle: an
 * idle TLS connection holds none. The plaintext path never sees any of it.
 */
#ifndef WEFT_PROXY_NET_TLS_SOCKET_H
#define WEFT_PROXY_NET_TLS_SOCKET_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "proxy/net/buf_pool.h"
#include "proxy/net/deferred.h"
#include "proxy/net/transport_socket.h"
#include "proxy/stats/stats.h"
#include "tls/tls.h"

/* Envoy's SslStats counters, in slot order. */
#define WP_SSL_STATS(X)                                                                            \
    X(connection_error)                                                                            \
    X(handshake)                                                                                   \
    X(session_reused)                                                                              \
    X(no_certificate)                                                                              \
    X(fail_verify_no_cert)                                                                         \
    X(fail_verify_error)                                                                           \
    X(fail_verify_san)                                                                             \
    X(fail_verify_cert_hash)
#define WP_SSL_ENUM_(name) WP_SSL_##name,
enum { WP_SSL_STATS(WP_SSL_ENUM_) WP_SSL_COUNT_ };
#undef WP_SSL_ENUM_

/* Where a TLS socket counts (NULL sh: nowhere). slots: WP_SSL_COUNT_ counters. kind and
 * name ("listener" and its stat name, or "cluster" and its stat name; both must outlive the
 * socket, NULL kind: none) name the scope of the counters Envoy creates on first use:
 * <kind>.<name>.ssl.ciphers.<cipher>, .ssl.versions.<version>, .ssl.curves.<curve> (a
 * registration under the store's lock, once per handshake). */
typedef struct wp_tls_stats {
    wp_stats_shard *sh;
    const uint32_t *slots;
    const char *kind, *name;
} wp_tls_stats;

/* Envoy's NotReadySslSocket failure reason. */
#define WP_TLS_NOT_READY "TLS error: Secret is not supplied by SDS"

/* Wraps raw (initialised; accepted for a server context, not yet connected for a client)
 * with a TLS socket of ctx, on the loop of the worker whose buffer free list (bufs) and
 * deferred list (dd) are given (both must outlive the socket) (server: a server context; the
 * socket's connection takes its own reference). ctx NULL: the context's SDS secrets are not
 * supplied, and the socket is Envoy's NotReadySslSocket: it counts
 * <kind>.<name>.server_ssl_socket_factory.downstream_ context_secrets_not_ready
 * (client_ssl_socket_factory.upstream_context_secrets_not_ready), then fails the connection at its
 * first read (server) or once connected (client) with ssl.connection_error and the failure reason
 * WP_TLS_NOT_READY. sni: what a client sends (NULL none). stats: copied; NULL = no stats. A server
 * socket starts reading the ClientHello at once. Returns the socket to use, or NULL (out of memory,
 * or reading could not start): raw is then untouched and still the owner's. */
wp_tsock *wp_tls_socket_wrap(wp_tsock *raw, wp_buf_pool *bufs, wp_deferred *dd, wf_tls_ctx *ctx,
                             bool server, const char *sni, const wp_tls_stats *stats);

/* Buffers of the worker's free list s (a socket wp_tls_socket_wrap returned) holds now: its
 * room while ciphertext is in it, ciphertext waiting and ciphertext queued. 0 when idle. */
size_t wp_tls_socket_buffers(const wp_tsock *s);

#endif
