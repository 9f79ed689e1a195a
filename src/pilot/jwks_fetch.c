/*
 * jwks_fetch.c - weft-pilot's JWKS resolver (jwks_fetch.h): a blocking HTTP(S) GET over
 * sockets and OpenSSL, the cache, and its fetch thread.
 */
#include "pilot/jwks_fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/log.h"

#define MAX_BODY       (1u << 20)
#define RETRY_FIRST_MS 1000
#define RETRY_MAX_MS   60000
#define OPENID_SUFFIX  "/.well-known/openid-configuration"

/* ---------- one GET ---------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct {
    int fd;
    SSL *ssl;
    int64_t deadline;
} conn;

/* Waits until fd is readable (in) or writable; false on timeout. */
static bool wait_fd(const conn *c, bool in)
{
    int64_t left = c->deadline - now_ms();
    if (left <= 0)
        return false;
    struct pollfd p = {c->fd, (short)(in ? POLLIN : POLLOUT), 0};
    return poll(&p, 1, (int)left) > 0;
}

static int dial(const char *host, const char *port, conn *c, wf_strbuf *why)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        wf_strbuf_printf(why, "lookup %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int err = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        c->fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
            continue;
        if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0 ||
            (errno == EINPROGRESS && wait_fd(c, false))) {
            socklen_t l = sizeof err;
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
            if (err == 0) {
                freeaddrinfo(res);
                return 0;
            }
        } else {
            err = errno ? errno : ETIMEDOUT;
        }
        close(c->fd);
        c->fd = -1;
    }
    freeaddrinfo(res);
    wf_strbuf_printf(why, "dial %s:%s: %s", host, port, strerror(err ? err : ETIMEDOUT));
    return -1;
}

/* SSL_connect / SSL_read / SSL_write with the deadline (non-blocking fd). */
static int ssl_wait(conn *c, int r)
{
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ)
        return wait_fd(c, true) ? 0 : -1;
    if (e == SSL_ERROR_WANT_WRITE)
        return wait_fd(c, false) ? 0 : -1;
    return -1;
}

static int tls_start(conn *c, SSL_CTX *ctx, const char *host, wf_strbuf *why)
{
    c->ssl = SSL_new(ctx);
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    /* the certificate must name the host: an IP SAN for an address, else a DNS name (SNI) */
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 ||
        (literal
             ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1
             : SSL_set_tlsext_host_name(c->ssl, host) != 1 || SSL_set1_host(c->ssl, host) != 1)) {
        wf_strbuf_puts(why, "TLS setup failed");
        return -1;
    }
    int r;
    while ((r = SSL_connect(c->ssl)) != 1)
        if (ssl_wait(c, r) != 0) {
            long v = SSL_get_verify_result(c->ssl);
            wf_strbuf_printf(why, "TLS handshake with %s failed: %s", host,
                             v != X509_V_OK ? X509_verify_cert_error_string(v)
                                            : "connection closed or timed out");
            return -1;
        }
    return 0;
}

static int send_all(conn *c, const char *p, size_t n)
{
    while (n) {
        ssize_t w;
        if (c->ssl) {
            int r = SSL_write(c->ssl, p, (int)n);
            if (r <= 0) {
                if (ssl_wait(c, r) != 0)
                    return -1;
                continue;
            }
            w = r;
        } else {
            w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w < 0) {
                if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_fd(c, false))
                    return -1;
                continue;
            }
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads until the server closes (an HTTP/1.0 exchange). */
static int recv_all(conn *c, wf_strbuf *out)
{
    char buf[8192];
    for (;;) {
        ssize_t n;
        if (c->ssl) {
            int r = SSL_read(c->ssl, buf, sizeof buf);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL)
                    return 0;
                if (ssl_wait(c, r) != 0)
                    return -1;
                continue;
            }
            n = r;
        } else {
            n = recv(c->fd, buf, sizeof buf, 0);
            if (n == 0)
                return 0;
            if (n < 0) {
                if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_fd(c, true))
                    return -1;
                continue;
            }
        }
        if (out->len + (size_t)n > MAX_BODY + 16384)
            return -2;
        wf_strbuf_append(out, buf, (size_t)n);
    }
}

/* "scheme://host[:port]/path" into parts; false when malformed. */
static bool parse_url(const char *url, bool *https, char *host, size_t hcap, char *port,
                      const char **path)
{
    const char *rest;
    if (strncasecmp(url, "https://", 8) == 0) {
        *https = true;
        rest = url + 8;
    } else if (strncasecmp(url, "http://", 7) == 0) {
        *https = false;
        rest = url + 7;
    } else {
        return false;
    }
    const char *slash = strchr(rest, '/');
    size_t hl = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *colon = memchr(rest, ':', hl);
    if (rest[0] == '[') { /* [v6]:port */
        const char *rb = memchr(rest, ']', hl);
        if (!rb)
            return false;
        colon = rb + 1 < rest + hl && rb[1] == ':' ? rb + 1 : NULL;
        if ((size_t)(rb - rest - 1) >= hcap)
            return false;
        memcpy(host, rest + 1, (size_t)(rb - rest - 1));
        host[rb - rest - 1] = '\0';
    } else {
        size_t n = colon ? (size_t)(colon - rest) : hl;
        if (n == 0 || n >= hcap)
            return false;
        memcpy(host, rest, n);
        host[n] = '\0';
    }
    size_t pl = colon ? (size_t)(rest + hl - colon - 1) : 0;
    if (colon && (pl == 0 || pl > 5))
        return false;
    if (colon) {
        memcpy(port, colon + 1, pl);
        port[pl] = '\0';
    } else {
        strcpy(port, *https ? "443" : "80");
    }
    *path = slash ? slash : "/";
    return true;
}

/* Status and body of a raw HTTP response. */
static int parse_response(const wf_strbuf *raw, char **body, size_t *len, wf_strbuf *why)
{
    const char *p = raw->data ? raw->data : "";
    const char *end = strstr(p, "\r\n\r\n");
    int status = 0;
    if (!end || sscanf(p, "HTTP/%*d.%*d %d", &status) != 1) {
        wf_strbuf_puts(why, "malformed HTTP response");
        return -1;
    }
    const char *b = end + 4;
    size_t n = raw->len - (size_t)(b - p);
    if (n > MAX_BODY) {
        wf_strbuf_puts(why, "response larger than 1 MiB");
        return -1;
    }
    if (status < 200 || status >= 300) {
        wf_strbuf_printf(why, "status %d, message \"%.*s\"", status, (int)(n > 100 ? 100 : n), b);
        return -1;
    }
    *body = malloc(n + 1);
    if (!*body) {
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    memcpy(*body, b, n);
    (*body)[n] = '\0';
    *len = n;
    return 0;
}

int wf_jwks_http_get(const char *url, long timeout_ms, char **body, size_t *len, wf_strbuf *why)
{
    bool https;
    char host[256], port[8];
    const char *path;
    *body = NULL;
    if (!url || !parse_url(url, &https, host, sizeof host, port, &path)) {
        wf_strbuf_printf(why, "invalid URL %s", url ? url : "(null)");
        return -1;
    }
    conn c = {.fd = -1, .deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 5000)};
    SSL_CTX *ctx = NULL;
    wf_strbuf raw = WF_STRBUF_INIT, req = WF_STRBUF_INIT;
    int rc = -1;
    if (dial(host, port, &c, why) != 0)
        goto out;
    if (https) {
        ctx = SSL_CTX_new(TLS_client_method());
        if (!ctx || SSL_CTX_set_default_verify_paths(ctx) != 1) {
            wf_strbuf_puts(why, "TLS setup failed");
            goto out;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (tls_start(&c, ctx, host, why) != 0)
            goto out;
    }
    /* HTTP/1.0: the body ends when the server closes (no chunked coding) */
    wf_strbuf_printf(&req,
                     "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: application/json\r\n"
                     "User-Agent: weft-pilot\r\nConnection: close\r\n\r\n",
                     path, host);
    if (wf_strbuf_failed(&req) || send_all(&c, req.data, req.len) != 0) {
        wf_strbuf_printf(why, "sending to %s:%s failed", host, port);
        goto out;
    }
    int r = recv_all(&c, &raw);
    if (r != 0) {
        wf_strbuf_puts(why, r == -2 ? "response larger than 1 MiB"
                                    : "no complete response within the timeout");
        goto out;
    }
    rc = parse_response(&raw, body, len, why);
out:
    if (c.ssl) {
        SSL_shutdown(c.ssl);
        SSL_free(c.ssl);
    }
    SSL_CTX_free(ctx);
    if (c.fd >= 0)
        close(c.fd);
    ERR_clear_error();
    wf_strbuf_free(&raw);
    wf_strbuf_free(&req);
    return rc;
}

/* ---------- the cache and its thread ---------- */

typedef struct entry {
    char *uri, *issuer; /* the key */
    long timeout_ms;
    char *doc;        /* last good key set, NULL none */
    bool served;      /* generation asked for it since it last changed */
    int64_t next_ms;  /* when to fetch (0 = now) */
    int64_t retry_ms; /* the current failure backoff */
    struct entry *next;
} entry;

struct wf_jwks_resolver {
    uv_mutex_t mu;
    uv_cond_t cv;
    uv_thread_t thread;
    uv_async_t async;
    bool stop;
    uint64_t refresh_ms;
    entry *entries;
    uint64_t ok, failed;
    void (*changed)(void *);
    void *arg;
};

static entry *find(wf_jwks_resolver *r, const char *uri, const char *issuer)
{
    for (entry *e = r->entries; e; e = e->next)
        if (strcmp(e->uri, uri) == 0 && strcmp(e->issuer, issuer) == 0)
            return e;
    return NULL;
}

char *wf_jwks_resolver_get(wf_jwks_resolver *r, const char *jwks_uri, const char *issuer,
                           long timeout_ms)
{
    if (!r)
        return NULL;
    jwks_uri = jwks_uri ? jwks_uri : "";
    issuer = issuer ? issuer : "";
    char *out = NULL;
    uv_mutex_lock(&r->mu);
    entry *e = find(r, jwks_uri, issuer);
    if (!e && (e = calloc(1, sizeof(*e)))) {
        e->uri = strdup(jwks_uri);
        e->issuer = strdup(issuer);
        if (!e->uri || !e->issuer) {
            free(e->uri);
            free(e->issuer);
            free(e);
            e = NULL;
        } else {
            e->timeout_ms = timeout_ms;
            e->retry_ms = RETRY_FIRST_MS;
            e->next = r->entries;
            r->entries = e;
            uv_cond_signal(&r->cv);
        }
    }
    if (e) {
        e->served = true;
        out = e->doc ? strdup(e->doc) : NULL;
    }
    uv_mutex_unlock(&r->mu);
    return out;
}

char *wf_jwks_resolve(void *arg, const char *jwks_uri, const char *issuer, long timeout_ms)
{
    return wf_jwks_resolver_get(arg, jwks_uri, issuer, timeout_ms);
}

void wf_jwks_resolver_counts(wf_jwks_resolver *r, uint64_t *ok, uint64_t *failed)
{
    uv_mutex_lock(&r->mu);
    *ok = r->ok;
    *failed = r->failed;
    uv_mutex_unlock(&r->mu);
}

/* resolveJwksURIUsingOpenID: the jwks_uri of the issuer's discovery document. */
static char *openid_jwks_uri(const char *issuer, long timeout_ms, wf_strbuf *why)
{
    wf_strbuf url = WF_STRBUF_INIT;
    size_t n = strlen(issuer);
    while (n && issuer[n - 1] == '/')
        n--;
    wf_strbuf_printf(&url, "%.*s" OPENID_SUFFIX, (int)n, issuer);
    char *body = NULL, *out = NULL;
    size_t len;
    if (wf_jwks_http_get(url.data, timeout_ms, &body, &len, why) == 0) {
        json_t *j = json_loadb(body, len, 0, NULL);
        const char *u = json_string_value(json_object_get(j, "jwks_uri"));
        if (u)
            out = strdup(u);
        else
            wf_strbuf_printf(why, "invalid jwks_uri in openID discovery configuration %s",
                             url.data);
        json_decref(j);
    }
    free(body);
    wf_strbuf_free(&url);
    return out;
}

/* One fetch (without the lock): the key set text, NULL with why on failure. */
static char *fetch(const char *uri, const char *issuer, long timeout_ms, wf_strbuf *why)
{
    char *resolved = NULL;
    if (!*uri && !(resolved = openid_jwks_uri(issuer, timeout_ms, why)))
        return NULL;
    const char *u = resolved ? resolved : uri;
    char *body = NULL;
    size_t len;
    int rc = wf_jwks_http_get(u, timeout_ms, &body, &len, why);
    json_t *j = rc == 0 ? json_loadb(body, len, 0, NULL) : NULL;
    if (rc == 0 && !json_is_object(j)) {
        wf_strbuf_puts(why, "the key set is not a JSON object");
        free(body);
        body = NULL;
    }
    if (!body)
        WF_LOG(WF_LC_jwt, WF_LOG_ERROR, "Failed to fetch public key from jwks URI \"%s\": %s", u,
               wf_strbuf_cstr(why));
    json_decref(j);
    free(resolved);
    return body;
}

/* The first entry due, copied out (uri, issuer, timeout); NULL when none is due (*wait_ms
 * until the next one). Called with the lock held. */
static entry *due(wf_jwks_resolver *r, int64_t now, int64_t *wait_ms)
{
    *wait_ms = INT64_MAX;
    for (entry *e = r->entries; e; e = e->next) {
        if (e->next_ms <= now)
            return e;
        if (e->next_ms - now < *wait_ms)
            *wait_ms = e->next_ms - now;
    }
    return NULL;
}

static void fetch_thread(void *arg)
{
    wf_jwks_resolver *r = arg;
    uv_mutex_lock(&r->mu);
    while (!r->stop) {
        int64_t wait_ms;
        entry *e = due(r, now_ms(), &wait_ms);
        if (!e) {
            if (wait_ms == INT64_MAX)
                uv_cond_wait(&r->cv, &r->mu);
            else
                uv_cond_timedwait(&r->cv, &r->mu, (uint64_t)wait_ms * 1000000u);
            continue;
        }
        char *uri = strdup(e->uri), *issuer = strdup(e->issuer);
        long timeout = e->timeout_ms;
        e->next_ms = INT64_MAX; /* in flight */
        uv_mutex_unlock(&r->mu);
        wf_strbuf why = WF_STRBUF_INIT;
        char *doc = uri && issuer ? fetch(uri, issuer, timeout, &why) : NULL;
        wf_strbuf_free(&why);
        uv_mutex_lock(&r->mu);
        e = uri && issuer ? find(r, uri, issuer) : NULL;
        bool changed = false;
        if (e && doc) {
            r->ok++;
            changed = !e->doc || strcmp(e->doc, doc) != 0;
            if (changed) {
                free(e->doc);
                e->doc = doc;
                doc = NULL;
                WF_LOG(WF_LC_jwt, WF_LOG_INFO, "Updated cached JWT public key from \"%s\"%s",
                       *uri ? uri : issuer, *uri ? "" : " (OpenID discovery)");
            }
            e->retry_ms = RETRY_FIRST_MS;
            e->next_ms = now_ms() + (int64_t)r->refresh_ms;
        } else if (e) {
            r->failed++;
            e->next_ms = now_ms() + e->retry_ms;
            e->retry_ms = e->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : e->retry_ms * 2;
        }
        if (changed && e->served && !r->stop)
            uv_async_send(&r->async);
        free(doc);
        free(uri);
        free(issuer);
    }
    uv_mutex_unlock(&r->mu);
}

static void on_async(uv_async_t *a)
{
    wf_jwks_resolver *r = a->data;
    if (r->changed)
        r->changed(r->arg);
}

static void on_closed(uv_handle_t *h)
{
    wf_jwks_resolver *r = h->data;
    for (entry *e = r->entries, *n; e; e = n) {
        n = e->next;
        free(e->uri);
        free(e->issuer);
        free(e->doc);
        free(e);
    }
    uv_cond_destroy(&r->cv);
    uv_mutex_destroy(&r->mu);
    free(r);
}

wf_jwks_resolver *wf_jwks_resolver_new(uv_loop_t *loop, uint64_t refresh_ms,
                                       void (*changed)(void *arg), void *arg)
{
    wf_jwks_resolver *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->refresh_ms = refresh_ms ? refresh_ms : WF_JWKS_REFRESH_MS;
    r->changed = changed;
    r->arg = arg;
    if (uv_mutex_init(&r->mu) != 0) {
        free(r);
        return NULL;
    }
    if (uv_cond_init(&r->cv) != 0 || uv_async_init(loop, &r->async, on_async) != 0) {
        uv_mutex_destroy(&r->mu);
        free(r);
        return NULL;
    }
    r->async.data = r;
    if (uv_thread_create(&r->thread, fetch_thread, r) != 0) {
        uv_close((uv_handle_t *)&r->async, on_closed); /* frees r */
        return NULL;
    }
    return r;
}

void wf_jwks_resolver_free(wf_jwks_resolver *r)
{
    if (!r)
        return;
    uv_mutex_lock(&r->mu);
    r->stop = true;
    uv_cond_signal(&r->cv);
    uv_mutex_unlock(&r->mu);
    uv_thread_join(&r->thread);
    uv_close((uv_handle_t *)&r->async, on_closed);
}
