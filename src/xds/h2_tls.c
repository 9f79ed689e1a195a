/*
 * h2_tls.c - TLS under a gRPC connection (h2_internal.h): istiod's secure port 15012, where
 * proxies reach the CA and the xDS server over TLS. The TLS engine is src/tls (its own BIO):
 * ciphertext read from the socket is fed to it and the plaintext goes to nghttp2; nghttp2's
 * frames are written through it and the ciphertext goes to the socket. Application data waits
 * until the handshake is done (the connection's SETTINGS included).
 */
#include "xds/h2_internal.h"

#include <stdlib.h>

#define PLAIN_CHUNK 16384u /* one TLS record of plaintext */

int wf_h2_tls_start(wf_h2_conn *c, wf_tls_ctx *ctx)
{
    c->tls = wf_tls_conn_new(ctx, NULL);
    return c->tls ? 0 : WF_H2_E_NOMEM;
}

int wf_h2_tls_start_client(wf_h2_conn *c, wf_tls_ctx *ctx, const char *sni)
{
    c->tls = wf_tls_conn_new(ctx, sni);
    return c->tls ? 0 : WF_H2_E_NOMEM;
}

int wf_h2_tls_step(wf_h2_conn *c)
{
    if (wf_tls_conn_handshake_done(c->tls))
        return 0;
    return wf_tls_conn_handshake(c->tls) == WF_TLS_FAIL ? -1 : 0; /* a client's ClientHello */
}

bool wf_h2_tls_ready(const wf_h2_conn *c)
{
    return !c->tls || wf_tls_conn_handshake_done(c->tls);
}

int wf_h2_tls_on_read(wf_h2_conn *c, const uint8_t *p, size_t n)
{
    if (wf_tls_conn_feed(c->tls, p, n) != 0)
        return -1;
    if (!wf_tls_conn_handshake_done(c->tls)) {
        int hs = wf_tls_conn_handshake(c->tls);
        if (hs == WF_TLS_FAIL)
            return -1;
        if (hs != WF_TLS_OK)
            return 0; /* more of the handshake to come; its output goes out with the pump */
    }
    uint8_t buf[PLAIN_CHUNK];
    for (;;) {
        ssize_t r = wf_tls_conn_read(c->tls, buf, sizeof buf);
        if (r == WF_TLS_WANT)
            return 0;
        if (r <= 0) /* the peer's close_notify or a failure */
            return -1;
        if (nghttp2_session_mem_recv(c->session, buf, (size_t)r) < 0)
            return -1;
    }
}

/* The engine's pending ciphertext as a new write (NULL when none, or on out of memory). */
wreq *wf_h2_tls_pending(wf_h2_conn *c)
{
    size_t n = wf_tls_conn_out_pending(c->tls);
    if (n == 0)
        return NULL;
    wreq *w = calloc(1, sizeof *w);
    uint8_t *tmp = malloc(n);
    if (!w || !tmp) {
        free(w);
        free(tmp);
        return NULL;
    }
    w->c = c;
    size_t got = wf_tls_conn_out_take(c->tls, tmp, n);
    int rc = wf_h2_batch_copy(w, tmp, got);
    free(tmp);
    if (rc != 0) {
        wf_h2_wreq_free(w);
        return NULL;
    }
    return w;
}

wreq *wf_h2_tls_encrypt(wf_h2_conn *c, wreq *plain)
{
    bool ok = true;
    for (size_t i = 0; ok && i < plain->n; i++) {
        const wpart *pt = &plain->parts[i];
        const uint8_t *base = pt->buf ? pt->buf->data : plain->scratch;
        ok = wf_tls_conn_write(c->tls, base + pt->off, pt->len) == 0;
    }
    wf_h2_wreq_free(plain);
    return ok ? wf_h2_tls_pending(c) : NULL;
}

bool wf_h2_conn_tls_info(const wf_h2_conn *conn, wf_tls_info *out)
{
    if (!conn || !conn->tls || !wf_tls_conn_handshake_done(conn->tls))
        return false;
    wf_tls_conn_info(conn->tls, out);
    return true;
}
