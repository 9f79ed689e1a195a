/*
 * http.c - blocking, cancellable HTTP/1.1 over TCP or TLS for the kube client (http.h).
 */
#include "kube/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "kube/stream.h"

int64_t wf_kube_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int wf_kube_url_parse(const char *server, wf_kube_url *u, wf_strbuf *why)
{
    memset(u, 0, sizeof *u);
    const char *p;
    if (strncmp(server, "https://", 8) == 0) {
        u->https = true;
        p = server + 8;
    } else if (strncmp(server, "http://", 7) == 0) {
        p = server + 7;
    } else {
        wf_strbuf_printf(why, "server %s: not an http:// or https:// URL", server);
        return -1;
    }
    const char *hend, *rest;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend) {
            wf_strbuf_printf(why, "server %s: unterminated IPv6 address", server);
            return -1;
        }
        rest = hend + 1;
        p++;
    } else {
        hend = p + strcspn(p, ":/");
        rest = hend;
    }
    size_t hl = (size_t)(hend - p);
    if (hl == 0 || hl >= sizeof u->host) {
        wf_strbuf_printf(why, "server %s: bad host", server);
        return -1;
    }
    memcpy(u->host, p, hl);
    const char *slash = strchr(rest, '/');
    if (*rest == ':') {
        size_t pl = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
        if (pl == 0 || pl >= sizeof u->port || strspn(rest + 1, "0123456789") != pl) {
            wf_strbuf_printf(why, "server %s: bad port", server);
            return -1;
        }
        memcpy(u->port, rest + 1, pl);
    } else if (*rest && *rest != '/') {
        wf_strbuf_printf(why, "server %s: bad host", server);
        return -1;
    } else {
        strcpy(u->port, u->https ? "443" : "80");
    }
    if (slash) {
        size_t n = strlen(slash);
        while (n > 0 && slash[n - 1] == '/')
            n--;
        if (n >= sizeof u->prefix) {
            wf_strbuf_printf(why, "server %s: path too long", server);
            return -1;
        }
        memcpy(u->prefix, slash, n);
    }
    return 0;
}

/* ---- TLS context ---------------------------------------------------------------------------- */

static void ssl_errors(wf_strbuf *why)
{
    unsigned long e = ERR_get_error();
    if (e) {
        char b[256];
        ERR_error_string_n(e, b, sizeof b);
        wf_strbuf_printf(why, " (%s)", b);
    }
    ERR_clear_error();
}

static int add_cas(SSL_CTX *ctx, const char *pem, size_t len, wf_strbuf *why)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509_STORE *st = SSL_CTX_get_cert_store(ctx);
    int n = 0;
    X509 *x;
    while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(st, x) == 1)
            n++;
        X509_free(x);
    }
    BIO_free(bio);
    ERR_clear_error();
    if (n == 0) {
        wf_strbuf_puts(why, "certificate-authority: no certificate in the PEM data");
        return -1;
    }
    return 0;
}

static int use_client_cert(SSL_CTX *ctx, const wf_kube_config *c, wf_strbuf *why)
{
    BIO *bio = BIO_new_mem_buf(c->cert_pem, (int)c->cert_len);
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    if (!x || SSL_CTX_use_certificate(ctx, x) != 1) {
        wf_strbuf_puts(why, "client-certificate: no certificate in the PEM data");
        ssl_errors(why);
        X509_free(x);
        BIO_free(bio);
        return -1;
    }
    X509_free(x);
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) /* the chain */
        if (SSL_CTX_add_extra_chain_cert(ctx, x) != 1)
            X509_free(x);
    ERR_clear_error();
    BIO_free(bio);
    bio = BIO_new_mem_buf(c->key_pem, (int)c->key_len);
    EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!k || SSL_CTX_use_PrivateKey(ctx, k) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        wf_strbuf_puts(why, "client-key: no private key matching the client certificate");
        ssl_errors(why);
        EVP_PKEY_free(k);
        return -1;
    }
    EVP_PKEY_free(k);
    return 0;
}

SSL_CTX *wf_kube_tls_ctx(const wf_kube_config *c, wf_strbuf *why)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        wf_strbuf_puts(why, "TLS: cannot create a context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    int rc = 0;
    if (c->insecure)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        rc = c->ca_pem ? add_cas(ctx, c->ca_pem, c->ca_len, why)
                       : (SSL_CTX_set_default_verify_paths(ctx) == 1 ? 0 : -1);
    }
    if (rc == 0 && c->cert_pem)
        rc = use_client_cert(ctx, c, why);
    if (rc != 0) {
        if (wf_strbuf_cstr(why)[0] == '\0')
            wf_strbuf_puts(why, "TLS: cannot load the system's root certificates");
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- connection ------------------------------------------------------------------------------ */

/* Waits for fd readable (in) or writable: 1 ready, 0 timed out, -1 cancelled. */
static int wait_fd(wf_kube_conn *c, bool in)
{
    struct pollfd p[2] = {{c->fd, (short)(in ? POLLIN : POLLOUT), 0}, {c->cancel_fd, POLLIN, 0}};
    for (;;) {
        int timeout = -1;
        if (c->deadline_ms > 0) {
            int64_t left = c->deadline_ms - wf_kube_now_ms();
            if (left <= 0)
                return 0;
            timeout = left > 60000 ? 60000 : (int)left;
        }
        int r = poll(p, c->cancel_fd >= 0 ? 2 : 1, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 0;
        if (c->cancel_fd >= 0 && p[1].revents)
            return -1;
        if (r > 0)
            return 1;
    }
}

static void wait_why(int w, wf_strbuf *why)
{
    wf_strbuf_puts(why, w < 0 ? "cancelled" : "timed out");
}

static int dial(wf_kube_conn *c, const wf_kube_url *u, wf_strbuf *why)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        wf_strbuf_printf(why, "lookup %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    int err = ETIMEDOUT;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        c->fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
            err = errno;
            continue;
        }
        if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0) {
            freeaddrinfo(res);
            return 0;
        }
        if (errno == EINPROGRESS) {
            int w = wait_fd(c, false);
            if (w < 0) {
                close(c->fd);
                c->fd = -1;
                freeaddrinfo(res);
                wait_why(w, why);
                return -1;
            }
            socklen_t l = sizeof err;
            err = ETIMEDOUT;
            if (w > 0)
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
            if (w > 0 && err == 0) {
                freeaddrinfo(res);
                return 0;
            }
        } else {
            err = errno;
        }
        close(c->fd);
        c->fd = -1;
    }
    freeaddrinfo(res);
    wf_strbuf_printf(why, "connect %s:%s: %s", u->host, u->port, strerror(err));
    return -1;
}

/* After an SSL call returned r <= 0: 1 to retry, 0 end of stream (clean), -1 error (why). */
static int ssl_retry(wf_kube_conn *c, int r, wf_strbuf *why)
{
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        int w = wait_fd(c, e == SSL_ERROR_WANT_READ);
        if (w > 0)
            return 1;
        wait_why(w, why);
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        if (errno == 0 || errno == ECONNRESET || errno == EPIPE)
            return 0; /* closed without close_notify: end of stream for a read */
    }
    wf_strbuf_puts(why, "TLS error");
    ssl_errors(why);
    return -1;
}

static int tls_start(wf_kube_conn *c, const wf_kube_url *u, SSL_CTX *ctx, const char *name,
                     wf_strbuf *why)
{
    c->ssl = SSL_new(ctx);
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 ||
        (literal
             ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), name) != 1
             : SSL_set_tlsext_host_name(c->ssl, name) != 1 || SSL_set1_host(c->ssl, name) != 1)) {
        wf_strbuf_puts(why, "TLS setup failed");
        return -1;
    }
    int r;
    while ((r = SSL_connect(c->ssl)) != 1) {
        wf_strbuf tmp = WF_STRBUF_INIT;
        int k = ssl_retry(c, r, &tmp);
        if (k == 1) {
            wf_strbuf_free(&tmp);
            continue;
        }
        long v = SSL_get_verify_result(c->ssl);
        if (v != X509_V_OK)
            wf_strbuf_printf(why, "TLS handshake with %s:%s: certificate verify failed: %s",
                             u->host, u->port, X509_verify_cert_error_string(v));
        else
            wf_strbuf_printf(why, "TLS handshake with %s:%s: %s", u->host, u->port,
                             k == 0 ? "connection closed" : wf_strbuf_cstr(&tmp));
        wf_strbuf_free(&tmp);
        return -1;
    }
    return 0;
}

int wf_kube_conn_open(wf_kube_conn *c, const wf_kube_url *u, SSL_CTX *ctx, const char *verify_name,
                      int cancel_fd, int64_t deadline_ms, wf_strbuf *why)
{
    c->fd = -1;
    c->ssl = NULL;
    c->pos = c->len = 0;
    c->cancel_fd = cancel_fd;
    c->deadline_ms = deadline_ms;
    if (dial(c, u, why) != 0)
        return -1;
    if (u->https && tls_start(c, u, ctx, verify_name ? verify_name : u->host, why) != 0) {
        wf_kube_conn_close(c);
        return -1;
    }
    return 0;
}

void wf_kube_conn_close(wf_kube_conn *c)
{
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

int wf_kube_conn_send(wf_kube_conn *c, const char *p, size_t n, wf_strbuf *why)
{
    while (n > 0) {
        if (c->ssl) {
            int r = SSL_write(c->ssl, p, n > 65536 ? 65536 : (int)n);
            if (r <= 0) {
                int k = ssl_retry(c, r, why);
                if (k == 1)
                    continue;
                if (k == 0)
                    wf_strbuf_puts(why, "connection closed while sending");
                return -1;
            }
            p += r;
            n -= (size_t)r;
            continue;
        }
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            int k = wait_fd(c, false);
            if (k <= 0) {
                wait_why(k, why);
                return -1;
            }
            continue;
        }
        if (w < 0) {
            wf_strbuf_printf(why, "send: %s", strerror(errno));
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int wf_kube_conn_fill(wf_kube_conn *c, wf_strbuf *why)
{
    if (c->pos < c->len)
        return (int)(c->len - c->pos);
    c->pos = c->len = 0;
    for (;;) {
        if (c->ssl) {
            int r = SSL_read(c->ssl, c->buf, sizeof c->buf);
            if (r > 0) {
                c->len = (size_t)r;
                return r;
            }
            int k = ssl_retry(c, r, why);
            if (k == 1)
                continue;
            return k;
        }
        ssize_t r = recv(c->fd, c->buf, sizeof c->buf, 0);
        if (r > 0) {
            c->len = (size_t)r;
            return (int)r;
        }
        if (r == 0)
            return 0;
        if (errno == EAGAIN || errno == EINTR) {
            int k = wait_fd(c, true);
            if (k <= 0) {
                wait_why(k, why);
                return -1;
            }
            continue;
        }
        if (errno == ECONNRESET)
            return 0;
        wf_strbuf_printf(why, "recv: %s", strerror(errno));
        return -1;
    }
}

/* ---- response -------------------------------------------------------------------------------- */

static void header(wf_kube_head *h, char *line)
{
    char *colon = strchr(line, ':');
    if (!colon)
        return;
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (strcasecmp(line, "transfer-encoding") == 0 && strcasestr(v, "chunked"))
        h->chunked = true;
    else if (strcasecmp(line, "content-length") == 0)
        h->content_length = strtoll(v, NULL, 10);
    else if (strcasecmp(line, "content-type") == 0)
        snprintf(h->content_type, sizeof h->content_type, "%s", v);
    else if (strcasecmp(line, "retry-after") == 0)
        snprintf(h->retry_after, sizeof h->retry_after, "%s", v);
}

int wf_kube_read_head(wf_kube_conn *c, wf_kube_head *h, wf_strbuf *why)
{
    memset(h, 0, sizeof *h);
    h->content_length = -1;
    wf_strbuf raw = WF_STRBUF_INIT;
    int rc = -1;
    for (;;) {
        int n = wf_kube_conn_fill(c, why);
        if (n <= 0) {
            if (n == 0)
                wf_strbuf_puts(why, "connection closed before the response");
            goto out;
        }
        /* take bytes up to the end of the head, leaving the body in c->buf */
        size_t i = c->pos;
        bool end = false;
        for (; i < c->len && !end; i++) {
            wf_strbuf_putc(&raw, c->buf[i]);
            end = raw.len >= 4 && memcmp(raw.data + raw.len - 4, "\r\n\r\n", 4) == 0;
        }
        c->pos = i;
        if (end)
            break;
        if (raw.len > 65536 || wf_strbuf_failed(&raw)) {
            wf_strbuf_puts(why, "response head too large");
            goto out;
        }
    }
    char *save = NULL, *line = strtok_r(raw.data, "\r\n", &save);
    if (!line || sscanf(line, "HTTP/1.%*d %d", &h->status) != 1) {
        wf_strbuf_printf(why, "bad status line \"%.80s\"", line ? line : "");
        goto out;
    }
    while ((line = strtok_r(NULL, "\r\n", &save)) != NULL)
        header(h, line);
    rc = 0;
out:
    wf_strbuf_free(&raw);
    return rc;
}

int wf_kube_read_body(wf_kube_conn *c, const wf_kube_head *h, size_t max, wf_strbuf *out,
                      wf_strbuf *why)
{
    wf_kube_chunked d = {0};
    size_t start = out->len;
    for (;;) {
        if (h->content_length >= 0 && !h->chunked && out->len - start >= (size_t)h->content_length)
            break;
        if (h->chunked && d.done)
            break;
        int n = wf_kube_conn_fill(c, why);
        if (n < 0)
            return -1;
        if (n == 0) {
            if (h->chunked || h->content_length >= 0) {
                wf_strbuf_puts(why, "connection closed in the middle of the body");
                return -1;
            }
            break;
        }
        if (h->chunked) {
            long used = wf_kube_chunked_feed(&d, c->buf + c->pos, c->len - c->pos, out, why);
            if (used < 0)
                return -1;
            c->pos += (size_t)used;
        } else {
            size_t take = c->len - c->pos;
            if (h->content_length >= 0 && take > (size_t)h->content_length - (out->len - start))
                take = (size_t)h->content_length - (out->len - start);
            wf_strbuf_append(out, c->buf + c->pos, take);
            c->pos += take;
        }
        if (wf_strbuf_failed(out)) {
            wf_strbuf_puts(why, "out of memory");
            return -1;
        }
        if (out->len - start > max) {
            wf_strbuf_printf(why, "response body larger than %zu bytes", max);
            return -1;
        }
    }
    if (out->len == 0)
        wf_strbuf_puts(out, ""); /* NUL-terminated even when empty */
    return 0;
}
