/*
 * test_h1_server_tls.c - the shared HTTP/1 server over TLS (h1_server.h opts.tls, the engine of
 * tls/tls.h), on a real libuv loop driven from the test's thread, with a TLS client of the same
 * engine on a non-blocking loopback socket: keep-alive; pipelined requests in one TLS write with
 * the first answered later (so the next ones wait, decrypted, in the engine and in the read
 * buffer); a body far beyond the request-head buffer; an answer completed from a timer outside
 * the server's callbacks; a 4 MiB chunked answer of borrowed pieces under back-pressure; a
 * plaintext client refused (handshake failure, connection closed, no request); h1s_set_tls:
 * new connections get the new certificate while an open one keeps its session; shutdown with
 * nothing left on the loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "http/h1_server.h"
#include "tls/tls.h"

#define BIG (4u << 20)

/* ---------- a server certificate ---------- */

/* A self-signed P-256 certificate with CN cn: a server context. */
static wf_tls_ctx *server_ctx(const char *cn)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    assert_non_null(k);
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, n);
    assert_true(X509_sign(x, k, EVP_sha256()) > 0);
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(cb, x);
    PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL);
    char *cert, *key;
    long cl = BIO_get_mem_data(cb, &cert), kl = BIO_get_mem_data(kb, &key);
    char err[256];
    wf_tls_ctx_opts o = {.server = true,
                         .cert_chain = cert,
                         .cert_chain_len = (size_t)cl,
                         .private_key = key,
                         .private_key_len = (size_t)kl};
    wf_tls_ctx *ctx = wf_tls_ctx_new(&o, err, sizeof err);
    assert_non_null(ctx);
    BIO_free(cb);
    BIO_free(kb);
    X509_free(x);
    EVP_PKEY_free(k);
    return ctx;
}

/* ---------- the server side ---------- */

typedef struct {
    uv_loop_t loop;
    h1s_server *s;
    int port, requests, closed;
    size_t last_body;
    h1s_conn *held;
    uv_timer_t timer;
    char stream[16384];
    size_t stream_left;
} fixture;

static void answer_text(h1s_conn *c, const char *text)
{
    h1s_respond(c, 200, NULL, "Content-Type: text/plain\r\n", text, strlen(text));
}

static void stream_more(h1s_conn *c, void *arg)
{
    fixture *f = arg;
    while (f->stream_left) {
        size_t n = f->stream_left < sizeof f->stream ? f->stream_left : sizeof f->stream;
        uv_buf_t piece = uv_buf_init(f->stream, (unsigned)n);
        f->stream_left -= n;
        if (h1s_resp_sendv(c, &piece, 1, stream_more, f) != 0)
            return; /* pending (stream_more runs again once written), or closed */
    }
    h1s_resp_end(c);
}

static void deferred(h1s_conn *c, void *arg)
{
    (void)arg;
    answer_text(c, "late");
}

static void on_tick(uv_timer_t *t)
{
    fixture *f = t->data;
    uv_timer_stop(t);
    if (f->held)
        answer_text(f->held, "from timer");
    f->held = NULL;
}

static void on_request(void *ud, h1s_conn *c, const h1s_request *r)
{
    fixture *f = ud;
    char path[64], body[128];
    snprintf(path, sizeof path, "%.*s", (int)r->path.len, r->path.p);
    f->requests++;
    f->last_body = r->body_len;
    if (strcmp(path, "/slow") == 0) {
        assert_int_equal(h1s_defer(c, 30, deferred, NULL), 0);
    } else if (strcmp(path, "/timer") == 0) {
        f->held = c;
        uv_timer_start(&f->timer, on_tick, 20, 0);
    } else if (strcmp(path, "/big") == 0) {
        h1s_resp_head(c, 200, NULL, NULL, H1S_CHUNKED);
        f->stream_left = BIG;
        stream_more(c, f);
    } else {
        snprintf(body, sizeof body, "%.*s %s body=%zu", (int)r->method.len, r->method.p, path,
                 r->body_len);
        answer_text(c, body);
    }
}

static void on_abort(void *ud, h1s_conn *c)
{
    fixture *f = ud;
    if (f->held == c)
        f->held = NULL;
}

static void on_closed(void *arg)
{
    ((fixture *)arg)->closed++;
}

static fixture *start(wf_tls_ctx *ctx)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->timer);
    f->timer.data = f;
    memset(f->stream, 'z', sizeof f->stream);
    h1s_opts o = {.keep_alive = true,
                  .body = H1S_BODY_BUFFER,
                  .max_body = 1u << 20,
                  .max_head = 1024, /* small: bodies and pipelined requests overflow it */
                  .tls = ctx,
                  .on_closed = on_closed,
                  .closed_arg = f};
    h1s_callbacks cb = {.on_request = on_request, .on_abort = on_abort, .ud = f};
    struct sockaddr_storage sa;
    assert_int_equal(h1s_parse_address("127.0.0.1:0", &sa), 0);
    int err = 0;
    f->s = h1s_listen(&f->loop, (struct sockaddr *)&sa, &o, &cb, &err);
    assert_non_null(f->s);
    f->port = h1s_port(f->s);
    return f;
}

static void stop(fixture *f)
{
    h1s_close(f->s);
    uv_close((uv_handle_t *)&f->timer, NULL);
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(f->closed, 1);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
}

/* ---------- a TLS client ---------- */

typedef struct {
    int fd;
    wf_tls_ctx *ctx;
    wf_tls_conn *tls;
    char *in; /* plaintext received, NUL-terminated */
    size_t len, cap;
    bool eof;
} client;

static void send_raw(fixture *f, int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) {
            uv_run(&f->loop, UV_RUN_NOWAIT);
            continue;
        }
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static void flush(fixture *f, client *c)
{
    char buf[16384];
    size_t n;
    while ((n = wf_tls_conn_out_take(c->tls, buf, sizeof buf)) > 0)
        send_raw(f, c->fd, buf, n);
}

/* One round: the loop runs, ciphertext read is fed, the handshake driven, plaintext taken. */
static void step(fixture *f, client *c)
{
    char buf[65536];
    uv_run(&f->loop, UV_RUN_NOWAIT);
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
        assert_int_equal(wf_tls_conn_feed(c->tls, buf, (size_t)n), WF_TLS_OK);
    } else if (n == 0 || errno != EAGAIN) {
        c->eof = true;
    } else {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        poll(&pfd, 1, 2);
    }
    if (!wf_tls_conn_handshake_done(c->tls) && wf_tls_conn_handshake(c->tls) == WF_TLS_FAIL)
        c->eof = true;
    flush(f, c);
    while (wf_tls_conn_handshake_done(c->tls)) {
        if (c->cap - c->len < sizeof buf) {
            c->cap = c->cap ? c->cap * 2 : 1u << 20;
            c->in = realloc(c->in, c->cap + 1);
            assert_non_null(c->in);
        }
        ssize_t r = wf_tls_conn_read(c->tls, c->in + c->len, c->cap - c->len);
        if (r <= 0)
            break;
        c->len += (size_t)r;
        c->in[c->len] = 0;
    }
}

static client *connect_tls(fixture *f)
{
    client *c = calloc(1, sizeof *c);
    assert_non_null(c);
    char err[256];
    wf_tls_ctx_opts o = {.server = false};
    c->ctx = wf_tls_ctx_new(&o, err, sizeof err);
    assert_non_null(c->ctx);
    c->tls = wf_tls_conn_new(c->ctx, NULL);
    c->fd = dial(f->port);
    wf_tls_conn_handshake(c->tls); /* the ClientHello */
    flush(f, c);
    uint64_t until = uv_hrtime() + 3000000000ull;
    while (!wf_tls_conn_handshake_done(c->tls) && !c->eof && uv_hrtime() < until)
        step(f, c);
    assert_true(wf_tls_conn_handshake_done(c->tls));
    return c;
}

static void send_tls(fixture *f, client *c, const char *s, size_t n)
{
    assert_int_equal(wf_tls_conn_write(c->tls, s, n), WF_TLS_OK);
    flush(f, c);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Steps until needle appears `times` times in the plaintext, EOF, or 5 s. */
static void wait_for(fixture *f, client *c, const char *needle, size_t times)
{
    uint64_t until = uv_hrtime() + 5000000000ull;
    while (!c->eof && uv_hrtime() < until && (!c->in || count(c->in, needle) < times))
        step(f, c);
}

static void client_free(client *c)
{
    close(c->fd);
    wf_tls_conn_free(c->tls);
    wf_tls_ctx_free(c->ctx);
    free(c->in);
    free(c);
}

/* ---------- tests ---------- */

static void test_keepalive_pipelining_bodies(void **state)
{
    (void)state;
    wf_tls_ctx *ctx = server_ctx("first");
    fixture *f = start(ctx);
    wf_tls_ctx_free(ctx); /* the server holds its reference */
    client *c = connect_tls(f);
    send_tls(f, c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", 28);
    wait_for(f, c, "HTTP/1.1 200", 1);
    assert_non_null(strstr(c->in, "GET /a body=0"));
    /* pipelined in one write, the first answered later, the last with a body > max_head */
    static char req[8192];
    char body[3000];
    memset(body, 'b', sizeof body);
    int n = snprintf(req, sizeof req,
                     "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n"
                     "POST /three HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%.*s",
                     sizeof body, (int)sizeof body, body);
    send_tls(f, c, req, (size_t)n);
    wait_for(f, c, "HTTP/1.1 200", 4);
    assert_int_equal(count(c->in, "HTTP/1.1 200"), 4);
    const char *late = strstr(c->in, "late"), *two = strstr(c->in, "GET /two body=0"),
               *three = strstr(c->in, "POST /three body=3000");
    assert_non_null(late);
    assert_non_null(two);
    assert_non_null(three);
    assert_true(late < two && two < three); /* in order */
    /* an answer from a timer, outside the server's callbacks */
    send_tls(f, c, "GET /timer HTTP/1.1\r\nHost: x\r\n\r\n", 32);
    wait_for(f, c, "from timer", 1);
    assert_non_null(strstr(c->in, "from timer"));
    /* 4 MiB of borrowed chunks; the client reads only after a while (back-pressure) */
    size_t before = c->len;
    send_tls(f, c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 30);
    for (int i = 0; i < 20; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_true(f->stream_left > 0);
    uint64_t until = uv_hrtime() + 10000000000ull;
    while (!c->eof && uv_hrtime() < until &&
           !(c->len > before + BIG && strcmp(c->in + c->len - 5, "0\r\n\r\n") == 0))
        step(f, c);
    assert_true(c->len > before + BIG);
    assert_string_equal(c->in + c->len - 5, "0\r\n\r\n");
    assert_false(c->eof);
    assert_int_equal(f->requests, 6);
    client_free(c);
    stop(f);
}

static void test_plaintext_refused(void **state)
{
    (void)state;
    wf_tls_ctx *ctx = server_ctx("first");
    fixture *f = start(ctx);
    wf_tls_ctx_free(ctx);
    int fd = dial(f->port);
    send_raw(f, fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    uint64_t until = uv_hrtime() + 3000000000ull;
    bool closed = false;
    char buf[4096];
    while (!closed && uv_hrtime() < until) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        closed = n == 0 || (n < 0 && errno != EAGAIN);
        if (n < 0 && errno == EAGAIN)
            poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, 2);
    }
    assert_true(closed);
    assert_int_equal(f->requests, 0);
    close(fd);
    stop(f);
}

static void test_rotation(void **state)
{
    (void)state;
    wf_tls_ctx *one = server_ctx("first"), *two = server_ctx("second");
    fixture *f = start(one);
    wf_tls_ctx_free(one);
    client *old = connect_tls(f);
    h1s_set_tls(f->s, two);
    wf_tls_ctx_free(two);
    client *fresh = connect_tls(f);
    wf_tls_info a, b;
    wf_tls_conn_info(old->tls, &a);
    wf_tls_conn_info(fresh->tls, &b);
    assert_non_null(strstr(a.peer_subject, "CN=first"));
    assert_non_null(strstr(b.peer_subject, "CN=second"));
    send_tls(f, old, "GET /old HTTP/1.1\r\nHost: x\r\n\r\n", 30);
    wait_for(f, old, "GET /old body=0", 1);
    assert_non_null(strstr(old->in, "GET /old body=0"));
    client_free(old);
    client_free(fresh);
    stop(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keepalive_pipelining_bodies),
        cmocka_unit_test(test_plaintext_refused),
        cmocka_unit_test(test_rotation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
