/*
 * http.h - one blocking HTTP/1.1 exchange with the Kubernetes API server, over TCP or TLS
 * (OpenSSL 3), for the kube client's worker thread (never on the libuv loop).
 *
 * TLS follows client-go's transport: the server certificate is verified against the
 * kubeconfig's CA (certificate-authority[-data]; the system roots when none) and the server's
 * name or IP address (or tls-server-name), unless insecure-skip-tls-verify; a client
 * certificate and key are presented when configured. TLS 1.2 at least.
 *
 * Every wait polls the socket together with a cancel fd (an eventfd or pipe that becomes
 * readable to stop) and a deadline (ms on the monotonic clock, 0 = none): a stopped reflector
 * never waits for the network. Errors say what failed ("connect 127.0.0.1:6443: Connection
 * refused", "TLS handshake with 127.0.0.1:6443: certificate verify failed", "cancelled",
 * "timed out").
 */
#ifndef WF_KUBE_HTTP_H
#define WF_KUBE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/strbuf.h"
#include "kube/kubeconfig.h"

/* The server URL split up: "https://[::1]:6443/prefix" -> https, "::1", "6443", "/prefix". */
typedef struct wf_kube_url {
    bool https;
    char host[256]; /* without brackets */
    char port[8];
    char prefix[512]; /* "" or "/prefix" without trailing '/' */
} wf_kube_url;

/* Returns 0, or -1 with why (not http(s), bad port, too long). Default ports 443 / 80. */
int wf_kube_url_parse(const char *server, wf_kube_url *u, wf_strbuf *why);

/* An SSL_CTX for c (CA, client certificate, verification mode). NULL with why when the PEM
 * data does not parse ("certificate-authority: no certificate in the PEM data"). */
SSL_CTX *wf_kube_tls_ctx(const wf_kube_config *c, wf_strbuf *why);

typedef struct wf_kube_conn {
    int fd;
    SSL *ssl;
    int cancel_fd; /* -1 = none */
    int64_t deadline_ms;
    char buf[16384]; /* received, not consumed: buf[pos..len) */
    size_t pos, len;
} wf_kube_conn;

/* Connects to u (TLS with ctx when u->https; verify_name NULL = u->host). Returns 0, or -1
 * with why (and c closed). */
int wf_kube_conn_open(wf_kube_conn *c, const wf_kube_url *u, SSL_CTX *ctx, const char *verify_name,
                      int cancel_fd, int64_t deadline_ms, wf_strbuf *why);
void wf_kube_conn_close(wf_kube_conn *c);

/* Sends all of p[0..n). 0 or -1 with why. */
int wf_kube_conn_send(wf_kube_conn *c, const char *p, size_t n, wf_strbuf *why);
/* Reads at least one byte into c->buf when it is empty. Returns bytes available (>0), 0 at
 * end of stream, -1 with why. */
int wf_kube_conn_fill(wf_kube_conn *c, wf_strbuf *why);

/* The response head. */
typedef struct wf_kube_head {
    int status;
    bool chunked;
    int64_t content_length; /* -1 = none (until close, or chunked) */
    char content_type[128];
    char retry_after[32];
} wf_kube_head;

/* Reads the status line and headers (at most 64 KiB). 0 or -1 with why. */
int wf_kube_read_head(wf_kube_conn *c, wf_kube_head *h, wf_strbuf *why);

/* Reads the whole body (chunked, Content-Length or until close), at most max bytes, into out
 * (appended, NUL-terminated). 0 or -1 with why. */
int wf_kube_read_body(wf_kube_conn *c, const wf_kube_head *h, size_t max, wf_strbuf *out,
                      wf_strbuf *why);

/* Monotonic clock, ms. */
int64_t wf_kube_now_ms(void);

#endif
