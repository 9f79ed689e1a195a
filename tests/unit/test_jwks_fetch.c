/*
 * test_jwks_fetch.c - weft-pilot's JWKS resolver (pilot/jwks_fetch.h) against a one-shot HTTP
 * server on loopback run by the test: a GET and its request line, a non-2xx status as istiod
 * words it, a refused connection, a bad URL, a body that is not JSON (not cached), and the
 * resolver: NULL until fetched, then the key set, the `changed` callback on the loop, OpenID
 * discovery when jwksUri is empty, and its counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "pilot/jwks_fetch.h"

#define KEYS "{\"keys\":[]}"

/* A server answering up to n connections, each with the response for its path. */
typedef struct {
    int fd, port, n;
    char last_request[1024];
    uv_thread_t t;
} server;

static const char *answer_for(const char *req, int port, char *buf, size_t cap)
{
    if (strncmp(req, "GET /keys ", 10) == 0)
        snprintf(buf, cap, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" KEYS);
    else if (strncmp(req, "GET /issuer/.well-known/openid-configuration ", 45) == 0)
        snprintf(buf, cap, "HTTP/1.0 200 OK\r\n\r\n{\"jwks_uri\":\"http://127.0.0.1:%d/keys\"}",
                 port);
    else if (strncmp(req, "GET /text ", 10) == 0)
        snprintf(buf, cap, "HTTP/1.0 200 OK\r\n\r\nnot json");
    else
        snprintf(buf, cap, "HTTP/1.0 404 Not Found\r\n\r\nnope");
    return buf;
}

static void serve(void *arg)
{
    server *s = arg;
    for (int i = 0; i < s->n; i++) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return;
        char req[1024] = {0}, resp[512];
        ssize_t got = 0, r;
        while (got < (ssize_t)sizeof req - 1 &&
               (r = recv(c, req + got, sizeof req - 1 - (size_t)got, 0)) > 0) {
            got += r;
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        snprintf(s->last_request, sizeof s->last_request, "%s", req);
        answer_for(req, s->port, resp, sizeof resp);
        (void)!send(c, resp, strlen(resp), MSG_NOSIGNAL);
        close(c);
    }
}

static void server_start(server *s, int n)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 8), 0);
    getsockname(s->fd, (struct sockaddr *)&a, &l);
    s->port = ntohs(a.sin_port);
    assert_int_equal(uv_thread_create(&s->t, serve, s), 0);
}

static void server_stop(server *s)
{
    shutdown(s->fd, SHUT_RDWR);
    uv_thread_join(&s->t);
    close(s->fd);
}

static void test_get(void **state)
{
    (void)state;
    server s;
    server_start(&s, 3);
    char url[128], *body = NULL;
    size_t len = 0;
    wf_strbuf why = WF_STRBUF_INIT;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/keys", s.port);
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), 0);
    assert_string_equal(body, KEYS);
    assert_int_equal(len, strlen(KEYS));
    assert_memory_equal(s.last_request, "GET /keys HTTP/1.0\r\nHost: 127.0.0.1\r\n", 37);
    free(body);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/missing", s.port);
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), -1);
    assert_null(body);
    assert_string_equal(wf_strbuf_cstr(&why), "status 404, message \"nope\"");
    wf_strbuf_reset(&why);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/text", s.port);
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), 0); /* any 2xx body */
    assert_string_equal(body, "not json");
    free(body);
    server_stop(&s);
    /* nobody listens there any more */
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "Connection refused"));
    wf_strbuf_reset(&why);
    assert_int_equal(wf_jwks_http_get("ftp://x/keys", 3000, &body, &len, &why), -1);
    assert_string_equal(wf_strbuf_cstr(&why), "invalid URL ftp://x/keys");
    wf_strbuf_free(&why);
}

/* ---------- HTTPS: a one-shot TLS server with a self-signed certificate ---------- */

typedef struct {
    server s;
    SSL_CTX *ctx;
    char cert_path[64];
} tls_server;

static X509 *self_signed(EVP_PKEY *k, const char *san)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"jwks", -1, -1, 0);
    X509_set_issuer_name(x, n);
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, san);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    e = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    X509_sign(x, k, EVP_sha256());
    return x;
}

static void serve_tls(void *arg)
{
    tls_server *t = arg;
    for (int i = 0; i < t->s.n; i++) {
        int c = accept(t->s.fd, NULL, NULL);
        if (c < 0)
            return;
        SSL *ssl = SSL_new(t->ctx);
        SSL_set_fd(ssl, c);
        if (SSL_accept(ssl) == 1) {
            char req[1024] = {0}, resp[512];
            SSL_read(ssl, req, sizeof req - 1);
            answer_for(req, t->s.port, resp, sizeof resp);
            SSL_write(ssl, resp, (int)strlen(resp));
            SSL_shutdown(ssl);
        }
        SSL_free(ssl);
        close(c);
    }
}

static void tls_start_server(tls_server *t, int n)
{
    memset(t, 0, sizeof(*t));
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *x = self_signed(k, "DNS:localhost");
    t->ctx = SSL_CTX_new(TLS_server_method());
    assert_int_equal(SSL_CTX_use_certificate(t->ctx, x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(t->ctx, k), 1);
    snprintf(t->cert_path, sizeof t->cert_path, "/tmp/weft-jwks-ca-%d.pem", (int)getpid());
    FILE *f = fopen(t->cert_path, "w");
    assert_non_null(f);
    PEM_write_X509(f, x);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(k);
    t->s.n = n;
    t->s.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    assert_int_equal(bind(t->s.fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(t->s.fd, 8), 0);
    getsockname(t->s.fd, (struct sockaddr *)&a, &l);
    t->s.port = ntohs(a.sin_port);
    assert_int_equal(uv_thread_create(&t->s.t, serve_tls, t), 0);
}

static void test_https(void **state)
{
    (void)state;
    tls_server t;
    tls_start_server(&t, 3);
    char url[128], *body = NULL;
    size_t len = 0;
    wf_strbuf why = WF_STRBUF_INIT;
    /* the certificate is not trusted */
    snprintf(url, sizeof url, "https://localhost:%d/keys", t.s.port);
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "TLS handshake with localhost failed"));
    wf_strbuf_reset(&why);
    /* trusted (OpenSSL's SSL_CERT_FILE names the roots), and it names localhost */
    setenv("SSL_CERT_FILE", t.cert_path, 1);
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), 0);
    assert_string_equal(body, KEYS);
    free(body);
    /* trusted, but it does not name 127.0.0.1 */
    snprintf(url, sizeof url, "https://127.0.0.1:%d/keys", t.s.port);
    assert_int_equal(wf_jwks_http_get(url, 3000, &body, &len, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "TLS handshake with 127.0.0.1 failed"));
    unsetenv("SSL_CERT_FILE");
    wf_strbuf_free(&why);
    server_stop(&t.s);
    SSL_CTX_free(t.ctx);
    unlink(t.cert_path);
}

typedef struct {
    int changes;
} watch;

static void on_changed(void *arg)
{
    ((watch *)arg)->changes++;
}

/* Runs loop until get returns a document (or 5 s). */
static char *wait_doc(uv_loop_t *loop, wf_jwks_resolver *r, const char *uri, const char *iss)
{
    for (int i = 0; i < 500; i++) {
        char *d = wf_jwks_resolver_get(r, uri, iss, 2000);
        if (d)
            return d;
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
    return NULL;
}

static void test_resolver(void **state)
{
    (void)state;
    server s;
    server_start(&s, 4);
    uv_loop_t loop;
    uv_loop_init(&loop);
    watch w = {0};
    wf_jwks_resolver *r = wf_jwks_resolver_new(&loop, 0, on_changed, &w);
    assert_non_null(r);
    char uri[128], iss[128];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/keys", s.port);
    assert_null(wf_jwks_resolver_get(r, uri, "i", 2000)); /* not fetched yet: the stand-in */
    char *d = wait_doc(&loop, r, uri, "i");
    assert_non_null(d);
    assert_string_equal(d, KEYS);
    free(d);
    for (int i = 0; i < 100 && w.changes == 0; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
    assert_int_equal(w.changes, 1);
    /* OpenID discovery: no jwksUri, the issuer's configuration names it */
    snprintf(iss, sizeof iss, "http://127.0.0.1:%d/issuer/", s.port);
    d = wait_doc(&loop, r, "", iss);
    assert_non_null(d);
    assert_string_equal(d, KEYS);
    free(d);
    /* a body that is not JSON is a failure: nothing cached */
    char bad[128];
    snprintf(bad, sizeof bad, "http://127.0.0.1:%d/text", s.port);
    assert_null(wf_jwks_resolver_get(r, bad, "i", 2000));
    uint64_t ok = 0, failed = 0;
    for (int i = 0; i < 300 && failed == 0; i++) {
        usleep(10000);
        wf_jwks_resolver_counts(r, &ok, &failed);
    }
    assert_int_equal(failed, 1);
    assert_int_equal(ok, 2); /* the keys, and discovery then its keys */
    assert_null(wf_jwks_resolver_get(r, bad, "i", 2000));
    wf_jwks_resolver_free(r);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_https),
        cmocka_unit_test(test_resolver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
