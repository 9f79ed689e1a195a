/*
 * transport_socket.h - the transport socket of a proxy connection: the one object through
 * which a downstream or upstream connection reads, writes, shuts down and closes its bytes,
 * whatever carries them (raw TCP now, TLS next).
 *
 * Envoy concepts followed (envoy/network/transport_socket.h, envoy/network/connection.h):
 *  - TransportSocket: doRead / doWrite / closeSocket / ssl() / onConnected. Here it is a small
 *    vtable (wp_tsock_ops) behind a wp_tsock; the raw TCP implementation wraps uv_tcp_t
 *    (raw_socket.h). A TLS one wraps a raw one, as its owner: it gives the raw socket its
 *    own ciphertext room, runs the handshake before it reports "connected", decrypts into
 *    the room its owner gives, and encrypts writes into its own buffer (Envoy's SslSocket
 *    does the same over the connection's IoHandle through a BIO).
 *  - TransportSocketCallbacks: what the socket calls back on its owner (wp_tsock_cbs): read
 *    room, bytes read or end of stream, write completion, connected, closed.
 *  - failureReason(): failure_reason() says why a TLS socket failed (its handshake), so a
 *    connect failure carries Envoy's transport failure reason.
 *  - Ssl::ConnectionInfo: ssl() returns the TLS facts of the connection (negotiated ALPN, SNI,
 *    the peer certificate's URI SAN, TLS version, cipher); NULL for a plain TCP socket, as
 *    Envoy's ssl() is nullptr for raw_buffer. wp_tsock_ssl_or_empty gives "" fields instead.
 *
 * Reading keeps the zero-copy design of the proxy (http/conn.h "Memory"): the socket
 * owns no read buffer. While reading is started, it asks its owner for room (cbs->alloc; the
 * owner hands out the free tail of a buffer from its worker's free list, or no room at all)
 * and reports how many bytes landed there (cbs->on_read). A TLS socket keeps its own
 * ciphertext buffer and decrypts into the room the owner gives; the owner sees plaintext
 * through the same two callbacks.
 *
 * Writing is vectored and copies nothing on the raw path: bytes are written at once when the
 * kernel takes them; what is left is queued and the caller's buffers must stay valid until
 * cbs->on_written. At most one write is pending per socket (the owner waits for
 * on_written before writing again). A TLS socket encrypts into its own buffer (so the
 * caller's are free at once) and reports a pending write when the ciphertext is queued.
 *
 * Client sockets: connect() starts the connection; cbs->on_connected(status) follows once
 * the socket can carry bytes (a TLS socket: after its handshake). The connect timeout is the
 * owner's (its own timer closes the socket).
 *
 * Ownership and lifetime: the owner embeds or allocates the socket, initialises it with its
 * callbacks and its own pointer, and calls close() exactly once. close() stops reading at
 * once; callbacks of operations already started may still come (a pending write completes
 * with a status < 0, UV_ECANCELED, a pending connect with UV_ECANCELED), then on_closed comes
 * exactly once, from the loop (never from inside close()). The socket's memory must stay
 * valid until on_closed. Single-threaded: one loop, the owner's.
 *
 * Errors: functions return 0 or a negative libuv error code (UV_E*), write as below. A read
 * error or the peer's end of stream arrives as on_read(n < 0): UV_EOF, UV_ECONNRESET, ...;
 * UV_ENOBUFS when alloc gave no room (reading stopped: start it again when there is room).
 */
#ifndef WEFT_PROXY_NET_TRANSPORT_SOCKET_H
#define WEFT_PROXY_NET_TRANSPORT_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <uv.h>

#include "core/strbuf.h"

typedef struct wp_tsock wp_tsock;

/* What ssl() returns: Envoy's Ssl::ConnectionInfo fields the proxy reads. Strings are
 * NUL-terminated, "" when unknown, owned by the socket and valid until on_closed. */
typedef struct wp_tsock_ssl {
    const char *alpn;         /* negotiated application protocol ("h2", "http/1.1", "") */
    const char *sni;          /* server name the client asked for */
    const char *peer_uri_san; /* the peer certificate's first URI SAN (SPIFFE identity) */
    const char *version;      /* "TLSv1.3" ... */
    const char *cipher;       /* "TLS_AES_128_GCM_SHA256" ... */
    /* all URI SANs joined by "," (%DOWNSTREAM_PEER_URI_SAN%, %DOWNSTREAM_LOCAL_URI_SAN%) */
    const char *peer_uri_sans, *local_uri_sans;
    const char *peer_subject; /* RFC 2253 (%DOWNSTREAM_PEER_SUBJECT%) */
    bool peer_certificate;    /* the peer presented a certificate (peerCertificatePresented) */
} wp_tsock_ssl;

/* What peer_cert() appends (tls/tls.h wf_tls_conn_peer_*, Envoy's Ssl::ConnectionInfo):
 * sha256PeerCertificateDigest, dnsSansPeerCertificate (joined by sep),
 * urlEncodedPemEncodedPeerCertificate and urlEncodedPemEncodedPeerCertificateChain. */
typedef enum { WP_PEER_SHA256, WP_PEER_DNS_SANS, WP_PEER_PEM, WP_PEER_CHAIN_PEM } wp_peer_fact;

/* The owner's callbacks (TransportSocketCallbacks); owner is the pointer given at init. */
typedef struct wp_tsock_cbs {
    /* Room for the next read: *buf = the free part of the owner's buffer; len 0 = no room
     * (on_read(UV_ENOBUFS) follows). */
    void (*alloc)(void *owner, uv_buf_t *buf);
    /* n > 0: n bytes were placed at the start of the room alloc gave last. n < 0: UV_EOF
     * (the peer shut its write side), UV_ENOBUFS (no room; reading stopped), or an error. */
    void (*on_read)(void *owner, ssize_t n);
    /* The pending write finished (status 0) or failed (< 0). */
    void (*on_written)(void *owner, int status);
    /* Client sockets: the connection is up (0) or failed (< 0). Server sockets: may be NULL;
     * when set, a TLS server socket calls it (0) once its handshake is done (before that it
     * refuses writes; the TCP proxy waits for it, Envoy buffers them). */
    void (*on_connected)(void *owner, int status);
    /* After close(): the socket is finished and its memory may go. Exactly once. */
    void (*on_closed)(void *owner);
} wp_tsock_cbs;

typedef struct wp_tsock_ops {
    /* Reading (re)starts / stops; start is a no-op while reading. 0 or UV_E*. */
    int (*read_start)(wp_tsock *t);
    void (*read_stop)(wp_tsock *t);
    /* Writes bufs[0..n) (bufs may be adjusted): 0 = all written now, 1 = the rest is
     * pending (on_written follows; the data must stay valid until then), -1 = failed (the
     * owner closes). Never while a write is pending. */
    int (*write)(wp_tsock *t, uv_buf_t *bufs, unsigned n);
    /* Writes what fits now, queues nothing: bytes written (>= 0) or UV_E* (UV_EAGAIN when
     * none fit). For small control writes ("100 Continue"). */
    int (*try_write)(wp_tsock *t, const uv_buf_t *bufs, unsigned n);
    /* Shuts the write side after pending writes (the peer reads end of stream); reading
     * goes on. 0 or UV_E*. */
    int (*shutdown)(wp_tsock *t);
    /* Closes the socket (see "Ownership and lifetime"). Exactly once. */
    void (*close)(wp_tsock *t);
    /* Client sockets: connects to addr; req is the owner's and stays valid until
     * on_connected. 0 or UV_E* (then no on_connected comes). */
    int (*connect)(wp_tsock *t, uv_connect_t *req, const struct sockaddr *addr);
    /* The peer's (peer true) or the local address as "ip:port" / "[v6]:port" ("-" when
     * unknown); 0 or UV_E*. */
    int (*address)(const wp_tsock *t, bool peer, char *out, size_t cap);
    /* TLS facts, NULL for a plain TCP socket. */
    const wp_tsock_ssl *(*ssl)(const wp_tsock *t);
    /* Why the socket failed (Envoy's TransportSocket::failureReason: a TLS socket's
     * "TLS_error:|...:TLS_error_end"), NULL or "" when it did not or cannot say. May be
     * NULL in the table (a raw socket). Valid until on_closed. */
    const char *(*failure_reason)(const wp_tsock *t);
    /* Appends a fact of the peer's certificate to out (sep: between DNS SANs): 0, or -1 when
     * there is no peer certificate or out of memory. NULL in the table: a plain socket. Made
     * on demand, for the connection manager's x-forwarded-client-cert. */
    int (*peer_cert)(const wp_tsock *t, wp_peer_fact what, const char *sep, wf_strbuf *out);
} wp_tsock_ops;

struct wp_tsock {
    const wp_tsock_ops *ops;
    const wp_tsock_cbs *cbs;
    void *owner;
};

static inline int wp_tsock_read_start(wp_tsock *t)
{
    return t->ops->read_start(t);
}
static inline void wp_tsock_read_stop(wp_tsock *t)
{
    t->ops->read_stop(t);
}
static inline int wp_tsock_write(wp_tsock *t, uv_buf_t *bufs, unsigned n)
{
    return t->ops->write(t, bufs, n);
}
static inline int wp_tsock_try_write(wp_tsock *t, const uv_buf_t *bufs, unsigned n)
{
    return t->ops->try_write(t, bufs, n);
}
static inline int wp_tsock_shutdown(wp_tsock *t)
{
    return t->ops->shutdown(t);
}
static inline void wp_tsock_close(wp_tsock *t)
{
    t->ops->close(t);
}
static inline int wp_tsock_connect(wp_tsock *t, uv_connect_t *req, const struct sockaddr *addr)
{
    return t->ops->connect(t, req, addr);
}
static inline int wp_tsock_address(const wp_tsock *t, bool peer, char *out, size_t cap)
{
    return t->ops->address(t, peer, out, cap);
}
static inline const wp_tsock_ssl *wp_tsock_ssl_info(const wp_tsock *t)
{
    return t->ops->ssl(t);
}

/* The failure reason, NULL when none. */
static inline const char *wp_tsock_failure_reason(const wp_tsock *t)
{
    const char *r = t->ops->failure_reason ? t->ops->failure_reason(t) : NULL;
    return r && *r ? r : NULL;
}

/* peer_cert(), -1 for a socket without it. */
static inline int wp_tsock_peer_cert(const wp_tsock *t, wp_peer_fact what, const char *sep,
                                     wf_strbuf *out)
{
    return t->ops->peer_cert ? t->ops->peer_cert(t, what, sep, out) : -1;
}

/* ssl(), or a wp_tsock_ssl of "" fields for a plain TCP socket (never NULL). */
const wp_tsock_ssl *wp_tsock_ssl_or_empty(const wp_tsock *t);

#endif
