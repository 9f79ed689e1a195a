/*
 * tls_socket.c - the TLS transport socket (tls_socket.h).
 */
#include "proxy/net/tls_socket.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TLS_ROOM 16384u /* one TLS record of ciphertext per raw read */

typedef struct wp_tls_socket {
    wp_tsock base; /* first: a wp_tsock * to it is a wp_tls_socket * */
    wp_tsock *raw;
    wf_tls_conn *conn;
    bool server;
    uv_timer_t kick;    /* delivers plaintext left in the engine from the loop */
    uv_connect_t rreq;  /* the raw socket's connect */
    wp_tls_stats stats; /* stats.sh NULL: no stats */
    char *obuf;         /* ciphertext the raw socket is writing */
    size_t ocap;
    bool want_read;      /* the owner reads */
    bool raw_reading;    /* the raw socket reads */
    bool raw_wpending;   /* the raw socket has a write pending (obuf) */
    bool owner_wpending; /* the owner waits for on_written */
    bool connecting;     /* client: the owner waits for on_connected */
    bool hs_done, failed, closing, shut_wanted, shut_done, read_done;
    bool obuf_settled; /* the handshake's ciphertext buffer was dropped (drop_obuf) */
    int pending_err;   /* to deliver to the owner after the plaintext (UV_EOF...) */
    int closed_handles;
    wp_tsock_ssl info;
    char *room; /* the raw socket's ciphertext room: held from its alloc to its read only */
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

/* The ciphertext buffer of a write that is done: freed while the handshake runs and once
 * after it (its flights are a few KiB an idle connection need not keep), then kept when small
 * (small answers reuse it, no allocation per request) and freed when a burst made it large. */
#define OBUF_KEEP 4096u

static void drop_obuf(wp_tls_socket *t)
{
    bool settled = t->obuf_settled;
    t->obuf_settled = t->hs_done;
    if (!settled || t->ocap > OBUF_KEEP) {
        free(t->obuf);
        t->obuf = NULL;
        t->ocap = 0;
    }
}

/* Hands the engine's pending ciphertext to the raw socket (unless a write is pending there:
 * it goes after it). 0, or -1 when the raw socket failed the write. */
static int flush(wp_tls_socket *t)
{
    if (t->raw_wpending || t->closing || !t->conn)
        return 0;
    size_t n = wf_tls_conn_out_pending(t->conn);
    if (n == 0) {
        raw_shutdown_if_due(t);
        return 0;
    }
    if (n > t->ocap) {
        char *nb = realloc(t->obuf, n);
        if (!nb)
            return -1;
        t->obuf = nb;
        t->ocap = n;
    }
    n = wf_tls_conn_out_take(t->conn, t->obuf, n);
    uv_buf_t b = uv_buf_init(t->obuf, (unsigned)n);
    int r = wp_tsock_write(t->raw, &b, 1);
    if (r < 0)
        return -1;
    t->raw_wpending = r == 1;
    if (!t->raw_wpending)
        drop_obuf(t);
    raw_shutdown_if_due(t);
    return 0;
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

static void on_kick(uv_timer_t *tm)
{
    deliver(tm->data);
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
    const wf_tls_info *i = wf_tls_conn_info(t->conn);
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
        }
        if (!t->want_read)
            stop_raw(t);
    }
    deliver(t);
}

/* ---------- the raw socket's callbacks ---------- */

static void r_alloc(void *owner, uv_buf_t *buf)
{
    wp_tls_socket *t = owner;
    if (!t->room)
        t->room = malloc(TLS_ROOM);
    *buf = t->room ? uv_buf_init(t->room, TLS_ROOM) : uv_buf_init(NULL, 0);
}

static void r_on_read(void *owner, ssize_t n)
{
    wp_tls_socket *t = owner;
    if (t->closing)
        return;
    if (n > 0) {
        /* the engine copies the ciphertext in: the room goes (an idle connection holds none) */
        int r = t->conn ? wf_tls_conn_feed(t->conn, t->room, (size_t)n) : WF_TLS_OK;
        free(t->room);
        t->room = NULL;
        if (r != WF_TLS_OK) {
            n = UV_ENOMEM;
        } else {
            step(t);
            return;
        }
    }
    /* end of stream or an error of the TCP connection */
    t->raw_reading = false;
    if (!t->hs_done && !t->failed) {
        if (t->connecting) {
            t->connecting = false;
            t->base.cbs->on_connected(t->base.owner, (int)n);
            return;
        }
        t->failed = true;
    }
    if (!t->pending_err)
        t->pending_err = (int)n;
    deliver(t);
}

static void r_on_written(void *owner, int status)
{
    wp_tls_socket *t = owner;
    t->raw_wpending = false;
    drop_obuf(t);
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

static void closed_one(wp_tls_socket *t)
{
    if (++t->closed_handles < 2)
        return;
    if (t->connecting) {
        t->connecting = false;
        t->base.cbs->on_connected(t->base.owner, UV_ECANCELED);
    }
    if (t->owner_wpending) {
        t->owner_wpending = false;
        t->base.cbs->on_written(t->base.owner, UV_ECANCELED);
    }
    t->base.cbs->on_closed(t->base.owner);
    wf_tls_conn_free(t->conn);
    free(t->obuf);
    free(t->room);
    free(t);
}

static void r_on_closed(void *owner)
{
    closed_one(owner);
}

static void on_kick_closed(uv_handle_t *h)
{
    closed_one(h->data);
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
        uv_timer_start(&t->kick, on_kick, 0, 0);
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
    if (t->closing || t->failed || !t->hs_done)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (bufs[i].len && wf_tls_conn_write(t->conn, bufs[i].base, bufs[i].len) != WF_TLS_OK)
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
    for (unsigned i = 0; i < n; i++) {
        if (bufs[i].len && wf_tls_conn_write(t->conn, bufs[i].base, bufs[i].len) != WF_TLS_OK)
            return UV_EPROTO;
        total += bufs[i].len;
    }
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
        wf_tls_conn_shutdown(t->conn);
        char note[128];
        size_t n = wf_tls_conn_out_take(t->conn, note, sizeof(note));
        uv_buf_t b = uv_buf_init(note, (unsigned)n);
        if (n)
            wp_tsock_try_write(t->raw, &b, 1);
    }
    t->closing = true;
    t->raw_reading = false;
    uv_close((uv_handle_t *)&t->kick, on_kick_closed);
    wp_tsock_close(t->raw);
}

static int tls_connect(wp_tsock *s, uv_connect_t *req, const struct sockaddr *addr)
{
    wp_tls_socket *t = (wp_tls_socket *)s;
    (void)req; /* the owner's; the TLS socket connects the raw one with its own */
    if (t->closing || t->server)
        return UV_EINVAL;
    int r = wp_tsock_connect(t->raw, &t->rreq, addr);
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

static void free_on_close(uv_handle_t *h)
{
    free(h->data);
}

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

wp_tsock *wp_tls_socket_wrap(wp_tsock *raw, uv_loop_t *loop, wf_tls_ctx *ctx, bool server,
                             const char *sni, const wp_tls_stats *stats)
{
    wp_tls_socket *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->conn = ctx ? wf_tls_conn_new(ctx, sni) : NULL;
    if ((ctx && !t->conn) || uv_timer_init(loop, &t->kick) != 0) {
        wf_tls_conn_free(t->conn);
        free(t);
        return NULL;
    }
    t->kick.data = t;
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
            /* the timer handle must be closed before its memory goes */
            t->closed_handles = 1;
            t->conn = NULL;
            uv_close((uv_handle_t *)&t->kick, free_on_close);
            return NULL;
        }
        t->raw_reading = true;
    }
    return &t->base;
}
