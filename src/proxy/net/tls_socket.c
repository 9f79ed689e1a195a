/*
 * tls_socket.c - the TLS transport socket (tls_socket.h).
 */
#include "proxy/net/tls_socket.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TLS_ROOM   WP_BUF_SIZE /* 16 KiB: a whole TLS record of ciphertext per raw read */
#define TLS_GATHER 16384u      /* plaintext of a write gathered into one record */

typedef struct wp_tls_socket {
    wp_tsock base; /* first: a wp_tsock * to it is a wp_tls_socket * */
    wp_tsock *raw;
    wf_tls_conn *conn;
    wp_buf_pool *bufs;     /* the worker's: rooms and ciphertext waiting */
    wp_deferred *dd;       /* the worker's: kick */
    wp_deferred_item kick; /* delivers plaintext left in the engine from the loop */
    wp_tls_stats stats;    /* stats.sh NULL: no stats */
    /* ciphertext read into room->data[0, rend) and lent to the engine: its last
     * wf_tls_conn_input_left bytes not consumed yet; the room is held only while bytes are in
     * it (or the raw socket reads into it) */
    wp_buf *room;
    wp_buf *obuf; /* ciphertext waiting for the raw socket: obuf->data[0, olen), NULL none */
    wp_buf *wbuf; /* ciphertext the raw socket is writing (queued in libuv), NULL none */
    uint32_t rend, olen;
    int werr;    /* the raw socket failed a write: the connection writes no more */
    bool direct; /* the sink may write to the kernel at once (one record at a time) */
    bool server;
    bool want_read;      /* the owner reads */
    bool raw_reading;    /* the raw socket reads */
    bool raw_wpending;   /* the raw socket has a write pending (wbuf) */
    bool owner_wpending; /* the owner waits for on_written */
    bool connecting;     /* client: the owner waits for on_connected */
    bool hs_done, failed, closing, shut_wanted, shut_done, read_done;
    bool free_on_kick; /* closed while the kick was queued: the kick frees the socket */
    int pending_err;   /* to deliver to the owner after the plaintext (UV_EOF...) */
    wp_tsock_ssl info;
    uv_connect_t rreq[]; /* a client's: the raw socket's connect (none on a server) */
} wp_tls_socket;

static void count(wp_tls_socket *t, int which)
{
    if (t->stats.sh && t->stats.slots)
        wp_stat_add(t->stats.sh, t->stats.slots[which], 1);
}

/* A failure's stat (the handshake's success is counted by handshake_done, once). */
static void count_outcome(wp_tls_socket *t)
{
    switch (wf_tls_conn_outcome(t->conn)) {
    case WF_TLS_STAT_CONNECTION_ERROR:
        count(t, WP_SSL_connection_error);
        break;
    case WF_TLS_STAT_FAIL_VERIFY_ERROR:
        count(t, WP_SSL_fail_verify_error);
        break;
    case WF_TLS_STAT_FAIL_VERIFY_SAN:
        count(t, WP_SSL_fail_verify_san);
        break;
    case WF_TLS_STAT_FAIL_VERIFY_NO_CERT:
        count(t, WP_SSL_fail_verify_no_cert);
        break;
    default:
        break;
    }
}

/* ---------- writing ciphertext ---------- */

static void raw_shutdown_if_due(wp_tls_socket *t)
{
    if (t->shut_wanted && !t->shut_done && !t->raw_wpending && !t->closing) {
        t->shut_done = true;
        wp_tsock_shutdown(t->raw);
    }
}

/* Appends ciphertext to obuf (a buffer of the worker's, doubled when it is full). 0 or -1. */
static int stage(wp_tls_socket *t, const char *data, size_t len)
{
    size_t need = t->olen + len;
    if (need > UINT32_MAX)
        return -1;
    if (!t->obuf || need > t->obuf->cap) {
        size_t cap = t->obuf && t->obuf->cap * 2 > need ? t->obuf->cap * 2 : need;
        wp_buf *nb = wp_buf_pool_get(t->bufs, cap);
        if (!nb)
            return -1;
        if (t->olen)
            memcpy(nb->data, t->obuf->data, t->olen);
        wp_buf_pool_put(t->bufs, t->obuf);
        t->obuf = nb;
    }
    memcpy(t->obuf->data + t->olen, data, len);
    t->olen = (uint32_t)need;
    return 0;
}

/* The engine's sink: a record of ciphertext. While the socket writes the owner's data
 * (direct) and nothing waits before it, the kernel takes it at once, with no copy; what it
 * does not take, and every record of the handshake, waits in obuf until flush() (so that a
 * flight goes out in one write). */
static int on_ciphertext(void *arg, const void *data, size_t len)
{
    wp_tls_socket *t = arg;
    const char *p = data;
    if (t->werr)
        return 0; /* the connection failed: nothing more goes out */
    if (t->direct && t->olen == 0 && !t->raw_wpending) {
        uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);
        int n = wp_tsock_try_write(t->raw, &b, 1);
        if (n >= 0 && (size_t)n == len)
            return 0;
        if (n < 0 && n != UV_EAGAIN && n != UV_ENOSYS) {
            t->werr = n;
            return 0;
        }
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        }
    }
    return stage(t, p, len);
}

/* Hands the ciphertext waiting in obuf to the raw socket (unless a write is pending there:
 * it goes after it). 0, or -1 when the raw socket failed a write. */
static int flush(wp_tls_socket *t)
{
    if (t->werr)
        return -1;
    if (t->raw_wpending || t->closing || !t->conn)
        return 0;
    if (t->olen == 0) {
        raw_shutdown_if_due(t);
        return 0;
    }
    wp_buf *b = t->obuf;
    uv_buf_t ub = uv_buf_init(b->data, (unsigned)t->olen);
    t->obuf = NULL;
    t->olen = 0;
    int r = wp_tsock_write(t->raw, &ub, 1);
    if (r == 1) {
        t->wbuf = b; /* until on_written */
        t->raw_wpending = true;
    } else {
        wp_buf_pool_put(t->bufs, b);
    }
    if (r < 0) {
        t->werr = UV_EPIPE;
        return -1;
    }
    raw_shutdown_if_due(t);
    return 0;
}

/* Encrypts the owner's buffers: small ones gathered into one record (one encryption, one
 * record header, as one contiguous buffer would be), large ones as they are; the records go
 * to the kernel directly when it takes them. 0, or -1 on failure. */
static int encrypt(wp_tls_socket *t, const uv_buf_t *bufs, unsigned n)
{
    char gather[TLS_GATHER];
    size_t used = 0;
    int r = WF_TLS_OK;
    t->direct = true;
    for (unsigned i = 0; i < n && r == WF_TLS_OK; i++) {
        if (bufs[i].len == 0)
            continue;
        if (n == 1 || bufs[i].len > TLS_GATHER / 2) {
            if (used)
                r = wf_tls_conn_write(t->conn, gather, used);
            used = 0;
            if (r == WF_TLS_OK)
                r = wf_tls_conn_write(t->conn, bufs[i].base, bufs[i].len);
            continue;
        }
        if (used + bufs[i].len > sizeof(gather)) {
            r = wf_tls_conn_write(t->conn, gather, used);
            used = 0;
        }
        memcpy(gather + used, bufs[i].base, bufs[i].len);
        used += bufs[i].len;
    }
    if (used && r == WF_TLS_OK)
        r = wf_tls_conn_write(t->conn, gather, used);
    t->direct = false;
    return r == WF_TLS_OK && !t->werr ? 0 : -1;
}

/* ---------- delivering plaintext ---------- */

static void stop_raw(wp_tls_socket *t)
{
    if (t->raw_reading) {
        wp_tsock_read_stop(t->raw);
        t->raw_reading = false;
    }
}

/* Decrypts into the owner's room while it reads; then an end of stream or error. */
static void deliver(wp_tls_socket *t)
{
    while (t->want_read && !t->closing && !t->read_done) {
        if (!t->failed && wf_tls_conn_readable(t->conn)) {
            /* records are processed first (session tickets, key updates): the owner's room is
             * asked for only when there is plaintext to put in it */
            ssize_t n = wf_tls_conn_peek(t->conn);
            flush(t); /* a key update or ticket answer */
            if (n > 0) {
                uv_buf_t b = uv_buf_init(NULL, 0);
                t->base.cbs->alloc(t->base.owner, &b);
                if (!b.base || b.len == 0) {
                    t->want_read = false;
                    stop_raw(t);
                    t->base.cbs->on_read(t->base.owner, UV_ENOBUFS);
                    return;
                }
                n = wf_tls_conn_read(t->conn, b.base, b.len);
                if (n > 0) {
                    t->base.cbs->on_read(t->base.owner, n);
                    continue;
                }
            }
            if (n == WF_TLS_EOF) {
                t->pending_err = UV_EOF;
            } else if (n == WF_TLS_FAIL) {
                t->failed = true;
                count_outcome(t);
                flush(t);
                t->pending_err = UV_EPROTO;
            } else if (!t->pending_err) {
                return; /* a partial record: more ciphertext will come */
            }
        }
        if (!t->pending_err)
            return;
        int e = t->pending_err;
        t->read_done = true;
        stop_raw(t);
        t->base.cbs->on_read(t->base.owner, e);
        return;
    }
}

/* The room goes back to the worker once the engine consumed what it lent (the rest of it,
 * left while the owner does not read, is kept). */
static void settle_room(wp_tls_socket *t)
{
    if (!t->room)
        return;
    size_t left = t->conn ? wf_tls_conn_input_left(t->conn) : 0;
    if (left && !t->closing && !t->failed && !t->read_done)
        return;
    if (t->conn)
        wf_tls_conn_lend(t->conn, NULL, 0);
    wp_buf_pool_put(t->bufs, t->room);
    t->room = NULL;
}

static void free_socket(wp_tls_socket *t)
{
    wf_tls_conn_free(t->conn);
    wp_buf_pool_put(t->bufs, t->room);
    wp_buf_pool_put(t->bufs, t->obuf);
    wp_buf_pool_put(t->bufs, t->wbuf);
    free(t);
}

static void on_kick(wp_deferred_item *it)
{
    wp_tls_socket *t = (wp_tls_socket *)(void *)((char *)it - offsetof(wp_tls_socket, kick));
    if (t->free_on_kick) {
        free_socket(t);
        return;
    }
    deliver(t);
    settle_room(t);
}

/* ---------- the handshake ---------- */

/* <kind>.<name>.ssl.<what>.<value>, registered on first use (Envoy's StatNameSet counters of
 * ContextImpl::logHandshake). */
static void count_named(wp_tls_socket *t, const char *what, const char *value)
{
    if (!t->stats.sh || !t->stats.kind || !value || !*value)
        return;
    char n[384];
    int len = snprintf(n, sizeof(n), "%s.%s.ssl.%s.%s", t->stats.kind, t->stats.name, what, value);
    if (len > 0 && (size_t)len < sizeof(n))
        wp_stat_add(t->stats.sh, wp_stats_counter(t->stats.sh->store, n), 1);
}

static void handshake_done(wp_tls_socket *t)
{
    t->hs_done = true;
    count(t, WP_SSL_handshake);
    if (wf_tls_conn_session_reused(t->conn))
        count(t, WP_SSL_session_reused);
    if (t->server && wf_tls_conn_no_peer_cert(t->conn))
        count(t, WP_SSL_no_certificate);
    wf_tls_info ii;
    wf_tls_conn_info(t->conn, &ii);
    const wf_tls_info *i = &ii;
    count_named(t, "ciphers", i->cipher);
    count_named(t, "versions", i->version);
    count_named(t, "curves", i->curve);
    t->info =
        (wp_tsock_ssl){i->alpn,           i->sni,          i->peer_uri_san,
                       i->version,        i->cipher,       i->peer_uri_sans,
                       i->local_uri_sans, i->peer_subject, !wf_tls_conn_no_peer_cert(t->conn)};
}

static void handshake_failed(wp_tls_socket *t)
{
    t->failed = true;
    count_outcome(t);
    flush(t); /* the alert */
    if (t->connecting) {
        t->connecting = false;
        stop_raw(t);
        t->base.cbs->on_connected(t->base.owner, UV_EPROTO);
        return;
    }
    t->pending_err = UV_EPROTO;
    deliver(t);
}

/* New ciphertext arrived (or the connection came up): drive the handshake, then read. */
static void step(wp_tls_socket *t)
{
    if (!t->conn) { /* Envoy's NotReadySslSocket: the secrets are not supplied */
        if (!t->failed) {
            t->failed = true;
            count(t, WP_SSL_connection_error);
            if (t->connecting) {
                t->connecting = false;
                stop_raw(t);
                t->base.cbs->on_connected(t->base.owner, UV_EPROTO);
                return;
            }
            t->pending_err = UV_EPROTO;
            deliver(t);
        }
        return;
    }
    if (!t->hs_done && !t->failed) {
        int r = wf_tls_conn_handshake(t->conn);
        if (flush(t) < 0 && r != WF_TLS_FAIL)
            r = WF_TLS_FAIL;
        if (r == WF_TLS_WANT)
            return;
        if (r != WF_TLS_OK) {
            handshake_failed(t);
            return;
        }
        handshake_done(t);
        if (t->connecting) {
            t->connecting = false;
            t->base.cbs->on_connected(t->base.owner, 0);
            if (t->closing)
                return;
        } else if (t->base.cbs->on_connected) { /* a server socket: writes may start now */
            t->base.cbs->on_connected(t->base.owner, 0);
            if (t->closing)
                return;
        }
        if (!t->want_read)
            stop_raw(t);
    }
    deliver(t);
}

/* ---------- the raw socket's callbacks ---------- */

/* The raw socket reads into the room, after the bytes the engine has not consumed yet (moved
 * to its front first); a new room comes from the worker's free list. */
static void r_alloc(void *owner, uv_buf_t *buf)
{
    wp_tls_socket *t = owner;
    size_t left = t->room && t->conn ? wf_tls_conn_input_left(t->conn) : 0;
    if (!t->room) {
        t->room = wp_buf_pool_get(t->bufs, TLS_ROOM);
        t->rend = 0;
    } else if (left < t->rend) { /* consumed bytes before the rest: it moves to the front */
        memmove(t->room->data, t->room->data + t->rend - left, left);
        t->rend = (uint32_t)left;
        wf_tls_conn_lend(t->conn, t->room->data, left);
    }
    if (!t->room || t->rend == t->room->cap) { /* none, or full: the raw socket stops */
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init(t->room->data + t->rend, (unsigned)(t->room->cap - t->rend));
}

static void r_on_read(void *owner, ssize_t n)
{
    wp_tls_socket *t = owner;
    if (t->closing)
        return;
    if (n > 0) { /* lent to the engine as they are: no copy */
        size_t left = t->conn ? wf_tls_conn_input_left(t->conn) : 0;
        t->rend += (uint32_t)n;
        if (t->conn)
            wf_tls_conn_lend(t->conn, t->room->data + t->rend - n - left, left + (size_t)n);
        step(t);
        settle_room(t);
        return;
    }
    if (n == UV_ENOBUFS && t->room) { /* the room is full of records the owner has not read */
        t->raw_reading = false;       /* the raw socket stopped: read_start starts it again */
        return;
    }
    /* end of stream or an error of the TCP connection */
    t->raw_reading = false;
    if (!t->hs_done && !t->failed) {
        t->failed = true;
        if (t->connecting) {
            t->connecting = false;
            t->base.cbs->on_connected(t->base.owner, (int)n);
            settle_room(t);
            return;
        }
    }
    if (!t->pending_err)
        t->pending_err = (int)n;
    deliver(t);
    settle_room(t);
}

static void r_on_written(void *owner, int status)
{
    wp_tls_socket *t = owner;
    t->raw_wpending = false;
    wp_buf_pool_put(t->bufs, t->wbuf);
    t->wbuf = NULL;
    if (status == 0 && !t->closing && flush(t) < 0)
        status = UV_EPIPE;
    if (t->raw_wpending && status == 0)
        return;
    if (t->owner_wpending) {
        t->owner_wpending = false;
        t->base.cbs->on_written(t->base.owner, status);
    }
}

static void r_on_connected(void *owner, int status)
{
    wp_tls_socket *t = owner;
    if (status < 0 || t->closing) {
        if (t->connecting) {
            t->connecting = false;
            t->base.cbs->on_connected(t->base.owner, status < 0 ? status : UV_ECANCELED);
        }
        return;
    }
    if (wp_tsock_read_start(t->raw) == 0)
        t->raw_reading = true;
    step(t); /* the ClientHello */
}

static void r_on_closed(void *owner)
{
    wp_tls_socket *t = owner;
    t->closing = true;
    if (t->connecting) {
        t->connecting = false;
        t->base.cbs->on_connected(t->base.owner, UV_ECANCELED);
    }
    if (t->owner_wpending) {
        t->owner_wpending = false;
        t->base.cbs->on_written(t->base.owner, UV_ECANCELED);
    }
    t->base.cbs->on_closed(t->base.owner);
    if (t->kick.destroy) /* queued: the deferred list still points at it */
        t->free_on_kick = true;
    else
        free_socket(t);
}

static const wp_tsock_cbs raw_cbs = {
    .alloc = r_alloc,
    .on_read = r_on_read,
    .on_written = r_on_written,
    .on_connected = r_on_connected,
    .on_closed = r_on_closed,
};

/* ---------- the socket's operations ---------- */

static int tls_read_start(wp_tsock *s)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    if (t->closing)
        return UV_EINVAL;
    t->want_read = true;
    if (t->read_done)
        return 0;
    if (t->hs_done && !t->raw_reading && !t->failed && !t->pending_err) {
        int r = wp_tsock_read_start(t->raw);
        if (r != 0)
            return r;
        t->raw_reading = true;
    }
    if (t->pending_err || (t->hs_done && wf_tls_conn_readable(t->conn)))
        wp_deferred_delete(t->dd, &t->kick, on_kick);
    return 0;
}

static void tls_read_stop(wp_tsock *s)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    t->want_read = false;
    if (t->hs_done)
        stop_raw(t); /* the handshake reads on regardless */
}

static int tls_write(wp_tsock *s, uv_buf_t *bufs, unsigned n)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    if (t->closing || t->failed || !t->hs_done || encrypt(t, bufs, n) != 0)
        return -1;
    if (flush(t) < 0)
        return -1;
    if (!t->raw_wpending)
        return 0;
    t->owner_wpending = true;
    return 1;
}

static int tls_try_write(wp_tsock *s, const uv_buf_t *bufs, unsigned n)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    if (t->closing || t->failed)
        return UV_EPIPE;
    if (!t->hs_done || t->raw_wpending)
        return UV_EAGAIN;
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    if (encrypt(t, bufs, n) != 0)
        return t->werr ? UV_EPIPE : UV_EPROTO;
    if (flush(t) < 0)
        return UV_EPIPE;
    return (int)total; /* encrypted and handed on: the rest follows the raw socket's queue */
}

static int tls_shutdown(wp_tsock *s)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    if (t->closing)
        return UV_EPIPE;
    if (t->conn)
        wf_tls_conn_shutdown(t->conn);
    t->shut_wanted = true;
    return flush(t) < 0 ? UV_EPIPE : 0;
}

static void tls_close(wp_tsock *s)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    if (t->closing)
        return;
    /* Envoy's SslSocket::closeSocket: close_notify first, as far as the kernel takes it */
    if (t->hs_done && !t->failed && !t->raw_wpending && !t->shut_wanted) {
        t->direct = true;
        wf_tls_conn_shutdown(t->conn);
        t->direct = false;
    }
    t->closing = true;
    t->raw_reading = false;
    settle_room(t);
    wp_buf_pool_put(t->bufs, t->obuf); /* what the kernel did not take */
    t->obuf = NULL;
    t->olen = 0;
    wp_tsock_close(t->raw);
}

static int tls_connect(wp_tsock *s, uv_connect_t *req, const struct sockaddr *addr)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    (void)req; /* the owner's; the TLS socket connects the raw one with its own */
    if (t->closing || t->server)
        return UV_EINVAL;
    int r = wp_tsock_connect(t->raw, t->rreq, addr);
    if (r == 0)
        t->connecting = true;
    return r;
}

static int tls_address(const wp_tsock *s, bool peer, char *out, size_t cap)
{
    const wp_tls_socket *t = (const wp_tls_socket *)s;
    return wp_tsock_address(t->raw, peer, out, cap);
}

static const wp_tsock_ssl *tls_ssl(const wp_tsock *s)
{
    return &((const wp_tls_socket *)s)->info;
}

static const char *tls_failure_reason(const wp_tsock *s)
{
    const wp_tls_socket *t = (const wp_tls_socket *)s;
    return t->conn ? wf_tls_conn_failure(t->conn) : WP_TLS_NOT_READY;
}

static int tls_peer_cert(const wp_tsock *s, wp_peer_fact what, const char *sep, wf_strbuf *out)
{
    const wp_tls_socket *t = (const wp_tls_socket *)s;
    if (!t->conn || !t->hs_done)
        return -1;
    switch (what) {
    case WP_PEER_SHA256:
        return wf_tls_conn_peer_sha256(t->conn, out);
    case WP_PEER_DNS_SANS:
        return wf_tls_conn_peer_sans(t->conn, WF_TLS_SAN_DNS, sep, out);
    case WP_PEER_PEM:
    case WP_PEER_CHAIN_PEM:
        return wf_tls_conn_peer_pem(t->conn, what == WP_PEER_CHAIN_PEM, out);
    }
    return -1;
}

static const wp_tsock_ops tls_ops = {
    .read_start = tls_read_start,
    .read_stop = tls_read_stop,
    .write = tls_write,
    .try_write = tls_try_write,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .connect = tls_connect,
    .address = tls_address,
    .ssl = tls_ssl,
    .failure_reason = tls_failure_reason,
    .peer_cert = tls_peer_cert,
};

/* <kind>.<name>.<server|client>_ssl_socket_factory.<downstream|upstream>_context_secrets_
 * not_ready, registered on first use (Envoy's SslSocketFactoryStats). */
static void count_not_ready(const wp_tls_stats *st, bool server)
{
    if (!st || !st->sh || !st->kind)
        return;
    char n[384];
    int len = snprintf(n, sizeof(n), "%s.%s.%s", st->kind, st->name,
                       server ? "server_ssl_socket_factory.downstream_context_secrets_not_ready"
                              : "client_ssl_socket_factory.upstream_context_secrets_not_ready");
    if (len > 0 && (size_t)len < sizeof(n))
        wp_stat_add(st->sh, wp_stats_counter(st->sh->store, n), 1);
}

wp_tsock *wp_tls_socket_wrap(wp_tsock *raw, wp_buf_pool *bufs, wp_deferred *dd, wf_tls_ctx *ctx,
                             bool server, const char *sni, const wp_tls_stats *stats)
{
    wp_tls_socket *t = calloc(1, sizeof(*t) + (server ? 0 : sizeof(uv_connect_t)));
    if (!t)
        return NULL;
    t->conn = ctx ? wf_tls_conn_new(ctx, sni) : NULL;
    if (ctx && !t->conn) {
        free(t);
        return NULL;
    }
    if (t->conn)
        wf_tls_conn_set_sink(t->conn, on_ciphertext, t);
    t->bufs = bufs;
    t->dd = dd;
    t->base = (wp_tsock){.ops = &tls_ops, .cbs = raw->cbs, .owner = raw->owner};
    t->raw = raw;
    t->server = server;
    if (stats)
        t->stats = *stats;
    if (!ctx)
        count_not_ready(stats, server);
    t->info = (wp_tsock_ssl){"", "", "", "", "", "", "", "", false};
    raw->cbs = &raw_cbs;
    raw->owner = t;
    if (t->server) {
        if (wp_tsock_read_start(raw) != 0) {
            raw->cbs = t->base.cbs;
            raw->owner = t->base.owner;
            wf_tls_conn_free(t->conn);
            free(t);
            return NULL;
        }
        t->raw_reading = true;
    }
    return &t->base;
}

size_t wp_tls_socket_buffers(const wp_tsock *s)
{
    const wp_tls_socket *t = (const wp_tls_socket *)s;
    return (t->room != NULL) + (t->obuf != NULL) + (t->wbuf != NULL);
}
