/*
 * test_h1_server.c - the shared HTTP/1 server (src/http/h1_server.h) on a real libuv loop,
 * driven from the same thread: the client side is plain non-blocking loopback sockets and
 * the loop runs (UV_RUN_NOWAIT) while the test waits for bytes. Keep-alive, pipelining in
 * order with an async first answer, buffered bodies within and beyond the limit, answers
 * completed from a timer, chunked streaming (copied and borrowed pieces with back-pressure),
 * malformed requests, the idle timeout, connection limits, a handler that closes its
 * connection or the whole server inside a callback, connection takeover, and shutdown with
 * open connections (on_abort for an owed answer, on_closed, nothing left on the loop).
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

#include "http/h1_server.h"

/* ---------- the server side ---------- */

typedef struct {
    uv_loop_t loop;
    h1s_server *s;
    int port;
    int requests, aborts, closed;
    size_t last_body;
    h1s_conn *held; /* an answer owed from the timer */
    uv_timer_t timer;
    int ticks;
    char stream[1 << 16]; /* borrowed body pieces */
    size_t stream_left;
} fixture;

static fixture *F; /* the fixture of the running test (callbacks get it as ud too) */

static void answer_text(h1s_conn *c, const char *text)
{
    h1s_respond(c, 200, NULL, "Content-Type: text/plain\r\n", text, strlen(text));
}

static void on_tick(uv_timer_t *t);

static void stream_more(h1s_conn *c, void *arg)
{
    fixture *f = arg;
    while (f->stream_left) {
        size_t n = f->stream_left < 16384 ? f->stream_left : 16384;
        uv_buf_t pieces[2] = {uv_buf_init(f->stream, (unsigned)n),
                              uv_buf_init(f->stream + 16384, 0)};
        f->stream_left -= n;
        int r = h1s_resp_sendv(c, pieces, 2, stream_more, f);
        if (r != 0)
            return; /* pending: stream_more runs again once written; or closed */
    }
    h1s_resp_end(c);
}

static void deferred_answer(h1s_conn *c, void *arg)
{
    (void)arg;
    answer_text(c, "late");
}

static void quit_server(void *arg)
{
    fixture *f = arg;
    h1s_close(f->s);
}

/* Routes on the path: the behaviours under test. */
static void on_request(void *ud, h1s_conn *c, const h1s_request *r)
{
    fixture *f = ud;
    char path[64];
    snprintf(path, sizeof path, "%.*s", (int)r->path.len, r->path.p);
    f->requests++;
    f->last_body = r->body_len;
    if (strcmp(path, "/slow") == 0) {
        assert_int_equal(h1s_defer(c, 50, deferred_answer, NULL), 0);
    } else if (strcmp(path, "/timer") == 0) {
        f->held = c; /* answered by on_tick, outside any server callback */
        f->ticks = 0;
        uv_timer_start(&f->timer, on_tick, 20, 20);
    } else if (strcmp(path, "/chunks") == 0) {
        h1s_resp_head(c, 200, NULL, NULL, H1S_CHUNKED);
        f->held = c;
        f->ticks = 0;
        uv_timer_start(&f->timer, on_tick, 10, 10);
    } else if (strcmp(path, "/big") == 0) {
        h1s_resp_head(c, 200, NULL, NULL, H1S_CHUNKED);
        f->stream_left = 16u << 20;
        stream_more(c, f);
    } else if (strcmp(path, "/close") == 0) {
        h1s_conn_close(c);
        h1s_conn_close(c); /* twice: harmless */
        assert_int_equal(h1s_respond(c, 200, NULL, NULL, "x", 1), -1);
    } else if (strcmp(path, "/quit") == 0) {
        h1s_after_answer(c, quit_server, f);
        answer_text(c, "bye");
    } else if (strcmp(path, "/stopnow") == 0) {
        h1s_close(f->s); /* the server and this connection close under the handler */
        assert_int_equal(h1s_respond(c, 200, NULL, NULL, "x", 1), -1);
    } else if (strcmp(path, "/ws") == 0) {
        h1s_respond(c, 101, NULL, "Upgrade: test\r\nConnection: Upgrade\r\n", NULL, 0);
        h1s_takeover(c);
    } else if (strcmp(path, "/never") == 0) {
        f->held = c; /* never answered: closing the server aborts it */
    } else {
        char body[96];
        snprintf(body, sizeof body, "%.*s %s body=%zu", (int)r->method.len, r->method.p, path,
                 r->body_len);
        answer_text(c, body);
    }
}

static void on_tick(uv_timer_t *t)
{
    fixture *f = t->data;
    if (!f->held)
        return;
    if (f->ticks++ < 3) {
        char piece[16];
        int n = snprintf(piece, sizeof piece, "part%d;", f->ticks);
        if (h1s_resp_write(f->held, piece, (size_t)n) == 0)
            return; /* /chunks: one chunk per tick */
    }
    uv_timer_stop(t);
    h1s_conn *c = f->held;
    f->held = NULL;
    if (h1s_resp_end(c) != 0) /* /timer: the head was never sent, so end fails: answer */
        answer_text(c, "from timer");
}

static void on_abort(void *ud, h1s_conn *c)
{
    fixture *f = ud;
    f->aborts++;
    if (f->held == c)
        f->held = NULL;
}

static size_t on_raw(void *ud, h1s_conn *c, char *data, size_t len)
{
    (void)ud;
    for (size_t i = 0; i < len; i++)
        data[i] = (char)(data[i] >= 'a' && data[i] <= 'z' ? data[i] - 32 : data[i]);
    h1s_raw_send(c, data, len);
    return len;
}

static void on_closed(void *arg)
{
    ((fixture *)arg)->closed++;
}

static fixture *start(h1s_opts o)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    F = f;
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->timer);
    f->timer.data = f;
    memset(f->stream, 'z', sizeof f->stream);
    o.on_closed = on_closed;
    o.closed_arg = f;
    h1s_callbacks cb = {.on_request = on_request, .on_abort = on_abort, .on_raw = on_raw, .ud = f};
    struct sockaddr_storage sa;
    assert_int_equal(h1s_parse_address("127.0.0.1:0", &sa), 0);
    int err = 0;
    f->s = h1s_listen(&f->loop, (struct sockaddr *)&sa, &o, &cb, &err);
    assert_non_null(f->s);
    f->port = h1s_port(f->s);
    assert_true(f->port > 0);
    return f;
}

/* Closes the server (unless a test did) and runs the loop dry: every handle must be closed,
 * so uv_loop_close succeeds and nothing leaked. */
static void stop(fixture *f)
{
    if (!f->closed)
        h1s_close(f->s);
    uv_close((uv_handle_t *)&f->timer, NULL);
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(f->closed, 1);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
}

/* ---------- the client side ---------- */

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

static void send_str(fixture *f, int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) {
            uv_run(&f->loop, UV_RUN_NOWAIT);
            continue;
        }
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

typedef struct {
    char text[65536]; /* the first bytes received, NUL-terminated, for strstr */
    size_t tlen;
    char *buf; /* received bytes not parsed yet */
    size_t len, cap;
    h1_parser p;
    h1_header hdrs[32];
    bool eof;
    int status[8];
    char body[8][128]; /* the first 127 bytes of each body */
    size_t body_len[8];
    size_t chunks[8]; /* body pieces seen (one per chunk when chunked) */
    int n;            /* complete final (non-1xx) responses */
} reply;

static reply *reply_new(void)
{
    reply *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->cap = 1u << 20;
    r->buf = malloc(r->cap);
    assert_non_null(r->buf);
    h1_parser_init(&r->p, H1_RESPONSE, r->hdrs, 32, 0);
    return r;
}

static void reply_free(reply *r)
{
    free(r->buf);
    free(r);
}

/* Parses what arrived (incrementally: consumed bytes are dropped). */
static void parse_more(reply *r)
{
    size_t off = 0;
    for (;;) {
        h1_event ev;
        off += h1_parse(&r->p, r->buf + off, r->len - off, &ev);
        if (ev == H1_EV_NEED_MORE && r->eof)
            ev = h1_parse_eof(&r->p);
        int i = r->n < 8 ? r->n : 7;
        if (ev == H1_EV_HEADERS) {
            r->status[i] = r->p.msg.status;
            r->body_len[i] = r->chunks[i] = 0;
            r->body[i][0] = 0;
        } else if (ev == H1_EV_BODY) {
            size_t have = r->body_len[i] < 127 ? r->body_len[i] : 127;
            size_t k = r->p.data_len < 127 - have ? r->p.data_len : 127 - have;
            memcpy(r->body[i] + have, r->p.data, k);
            r->body[i][have + k] = 0;
            r->body_len[i] += r->p.data_len;
            r->chunks[i]++;
        } else if (ev == H1_EV_DONE) {
            if (r->status[i] >= 200)
                r->n++;
        } else if (ev != H1_EV_TRAILERS) {
            break;
        }
    }
    memmove(r->buf, r->buf + off, r->len - off);
    r->len -= off;
}

/* Runs the loop and reads fd until `want` complete responses, or needle in the text (each 0
 * or NULL: until EOF), or EOF, or 3 s. */
static void read_until(fixture *f, int fd, reply *r, int want, const char *needle)
{
    uint64_t until = uv_hrtime() + 3000000000ull;
    while (uv_hrtime() < until && !r->eof) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        ssize_t n = recv(fd, r->buf + r->len, r->cap - r->len, 0);
        if (n > 0) {
            size_t k =
                (size_t)n < sizeof r->text - 1 - r->tlen ? (size_t)n : sizeof r->text - 1 - r->tlen;
            memcpy(r->text + r->tlen, r->buf + r->len, k);
            r->tlen += k;
            r->text[r->tlen] = 0;
            r->len += (size_t)n;
        } else if (n == 0 || errno != EAGAIN) {
            r->eof = true;
        } else {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            poll(&pfd, 1, 2);
        }
        parse_more(r);
        if ((want && r->n >= want) || (needle && strstr(r->text, needle)))
            break;
    }
}

static void read_replies(fixture *f, int fd, reply *r, int want)
{
    read_until(f, fd, r, want, NULL);
}

static h1s_opts keepalive_opts(void)
{
    return (h1s_opts){.keep_alive = true, .body = H1S_BODY_BUFFER, .max_body = 64};
}

/* ---------- tests ---------- */

/* Two requests on one connection; both answered, the connection stays open. */
static void test_keep_alive(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    read_replies(f, fd, r, 1);
    send_str(f, fd, "GET /b?q=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    read_replies(f, fd, r, 2);
    assert_int_equal(r->n, 2);
    assert_false(r->eof);
    assert_string_equal(r->body[0], "GET /a body=0");
    assert_string_equal(r->body[1], "GET /b body=0");
    assert_int_equal(f->requests, 2);
    assert_int_equal(h1s_connections(f->s), 1);
    /* HTTP/1.0 without keep-alive: answered with Connection: close, then closed */
    send_str(f, fd, "HEAD /c HTTP/1.0\r\n\r\n");
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_non_null(strstr(r->text, "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n"));
    assert_non_null(strstr(r->text, "Connection: close\r\n\r\n"));
    assert_int_equal(strlen(strstr(r->text, "Connection: close\r\n\r\n")), 21); /* no body */
    close(fd);
    reply_free(r);
    stop(f);
}

/* Three requests in one write, the first answered later from a timer: answers in order. */
static void test_pipelined_in_order(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd,
             "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n"
             "POST /three HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
    read_replies(f, fd, r, 3);
    assert_int_equal(r->n, 3);
    assert_string_equal(r->body[0], "late");
    assert_string_equal(r->body[1], "GET /two body=0");
    assert_string_equal(r->body[2], "POST /three body=3");
    close(fd);
    reply_free(r);
    stop(f);
}

/* BUFFER: a body within max_body reaches the handler; beyond it: 413, then closed. */
static void test_body_limit(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd,
             "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
             "a\r\n0123456789\r\n6\r\nabcdef\r\n0\r\n\r\n");
    read_replies(f, fd, r, 1);
    assert_string_equal(r->body[0], "POST /up body=16");
    char big[256];
    snprintf(big, sizeof big, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n%065d", 7);
    send_str(f, fd, big);
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_int_equal(r->n, 2);
    assert_int_equal(r->status[1], 413);
    assert_string_equal(r->body[1], "request body too large\n");
    assert_int_equal(f->requests, 1);
    close(fd);
    reply_free(r);
    stop(f);
}

/* An answer completed from a timer outside every server callback; "Expect: 100-continue"
 * gets its interim answer first. */
static void test_async_from_timer(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd,
             "POST /timer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
             "Expect: 100-continue\r\n\r\n");
    read_until(f, fd, r, 0, "100 Continue\r\n\r\n");
    send_str(f, fd, "ok");
    read_replies(f, fd, r, 1);
    assert_int_equal(r->n, 1);
    assert_non_null(strstr(r->text, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    assert_string_equal(r->body[0], "from timer");
    assert_int_equal(f->last_body, 2);
    close(fd);
    reply_free(r);
    stop(f);
}

/* Chunked streaming: copied chunks from a timer, then borrowed 16 KiB pieces with
 * back-pressure for a 16 MiB body that the client reads slowly at first. */
static void test_chunked_streaming(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd, "GET /chunks HTTP/1.1\r\nHost: x\r\n\r\n");
    read_replies(f, fd, r, 1);
    assert_int_equal(r->n, 1);
    assert_string_equal(r->body[0], "part1;part2;part3;");
    assert_int_equal(r->chunks[0], 3);
    assert_non_null(strstr(r->text, "Transfer-Encoding: chunked\r\n"));
    reply *r2 = reply_new();
    send_str(f, fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 20; i++) /* the client does not read: the server must wait */
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_true(f->stream_left > 0);
    read_replies(f, fd, r2, 1);
    assert_int_equal(r2->n, 1);
    assert_int_equal(r2->body_len[0], 16u << 20);
    assert_true(r2->chunks[0] >= 1024); /* a chunk may arrive in pieces */
    assert_non_null(strstr(r2->text, "\r\n\r\n4000\r\nzzzz"));
    assert_false(r2->eof);
    close(fd);
    reply_free(r);
    reply_free(r2);
    stop(f);
}

/* A malformed request: 400 with the parser's details, then closed; a head beyond max_head:
 * 431 (the parser's details; no on_error here: the default answer with opts.error_head). */
static void test_malformed(void **state)
{
    (void)state;
    h1s_opts o = keepalive_opts();
    o.max_head = 512;
    o.error_head = "Content-Type: text/plain\r\nX-Err: 1\r\n";
    fixture *f = start(o);
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd, "GET /a HTTP/1.1\r\nHost : x\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->status[0], 400);
    assert_non_null(strstr(r->text, "X-Err: 1\r\nConnection: close\r\n"));
    assert_string_equal(r->body[0], "http1.codec_error\n");
    assert_int_equal(f->requests, 0);
    close(fd);
    reply_free(r);
    r = reply_new();
    fd = dial(f->port);
    char big[1024];
    snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX: %0900d\r\n", 1);
    send_str(f, fd, big);
    read_replies(f, fd, r, 0);
    assert_int_equal(r->status[0], 431);
    assert_string_equal(r->body[0], "http1.headers_too_large\n");
    close(fd);
    reply_free(r);
    stop(f);
}

/* A connection that sends nothing, or half a head, is closed after idle_timeout_ms; one that
 * keeps a request in progress is not. */
static void test_idle_timeout(void **state)
{
    (void)state;
    h1s_opts o = keepalive_opts();
    o.idle_timeout_ms = 100;
    fixture *f = start(o);
    int a = dial(f->port), b = dial(f->port);
    reply *ra = reply_new(), *rb = reply_new();
    send_str(f, b, "GET /a HTTP/1.1\r\nHo");
    uint64_t t0 = uv_hrtime();
    read_replies(f, a, ra, 0);
    read_replies(f, b, rb, 0);
    assert_true(ra->eof && rb->eof);
    assert_int_equal(ra->tlen + rb->tlen, 0);
    assert_true(uv_hrtime() - t0 < 2000000000ull);
    assert_int_equal(h1s_connections(f->s), 0);
    close(a);
    close(b);
    reply_free(ra);
    reply_free(rb);
    stop(f);
}

/* A handler that closes its connection inside on_request (no answer, no use after free);
 * one that closes the whole server inside on_request; and one after its answer. */
static void test_close_inside_callback(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd, "GET /close HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_int_equal(r->tlen, 0);
    assert_int_equal(f->aborts, 0);
    close(fd);
    reply_free(r);
    r = reply_new();
    fd = dial(f->port);
    send_str(f, fd, "GET /quit HTTP/1.1\r\nHost: x\r\n\r\n");
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_string_equal(r->body[0], "bye");
    close(fd);
    reply_free(r);
    for (int i = 0; i < 10 && !f->closed; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->closed, 1); /* h1s_close from the after-answer callback finished */
    stop(f);

    f = start(keepalive_opts());
    r = reply_new();
    fd = dial(f->port);
    send_str(f, fd, "GET /stopnow HTTP/1.1\r\nHost: x\r\n\r\n");
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_int_equal(r->tlen, 0);
    close(fd);
    reply_free(r);
    stop(f);
}

/* H1S_LIMIT_REFUSE closes the newest connection; H1S_LIMIT_CLOSE_OLDEST the oldest idle one. */
static void test_connection_limits(void **state)
{
    (void)state;
    for (int policy = 0; policy < 2; policy++) {
        h1s_opts o = keepalive_opts();
        o.max_connections = 2;
        o.limit = policy ? H1S_LIMIT_CLOSE_OLDEST : H1S_LIMIT_REFUSE;
        fixture *f = start(o);
        int fds[3];
        reply *r[3] = {reply_new(), reply_new(), reply_new()};
        for (int i = 0; i < 3; i++) {
            fds[i] = dial(f->port);
            for (int k = 0; k < 10; k++)
                uv_run(&f->loop, UV_RUN_NOWAIT);
        }
        int gone = policy ? 0 : 2;
        read_replies(f, fds[gone], r[gone], 0);
        assert_true(r[gone]->eof);
        int live = policy ? 2 : 1;
        send_str(f, fds[live], "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
        read_replies(f, fds[live], r[live], 1);
        assert_int_equal(r[live]->n, 1);
        assert_int_equal(h1s_connections(f->s), 2);
        for (int i = 0; i < 3; i++) {
            close(fds[i]);
            reply_free(r[i]);
        }
        stop(f);
    }
}

/* After a 101 the connection is raw: bytes go to on_raw, which answers them. */
static void test_takeover(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd,
             "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: test\r\n\r\nhi");
    read_until(f, fd, r, 0, "HI");
    assert_non_null(strstr(r->text, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\n"));
    assert_null(strstr(r->text, "Connection: close"));
    send_str(f, fd, "again");
    read_until(f, fd, r, 0, "AGAIN");
    assert_non_null(strstr(r->text, "\r\n\r\nHIAGAIN"));
    assert_false(r->eof);
    close(fd);
    reply_free(r);
    stop(f);
}

/* h1s_close with an idle connection, one with an answer owed and a SKIP-mode one: every
 * client sees EOF, on_abort runs for the owed answer, on_closed once, nothing left. */
static void test_shutdown_with_open_connections(void **state)
{
    (void)state;
    fixture *f = start(keepalive_opts());
    int idle = dial(f->port), owed = dial(f->port);
    reply *ri = reply_new(), *ro = reply_new();
    send_str(f, owed, "GET /never HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 50 && !f->held; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_non_null(f->held);
    assert_int_equal(h1s_connections(f->s), 2);
    h1s_close(f->s);
    assert_int_equal(f->aborts, 1);
    assert_null(f->held);
    read_replies(f, idle, ri, 0);
    read_replies(f, owed, ro, 0);
    assert_true(ri->eof && ro->eof);
    assert_int_equal(f->closed, 1);
    close(idle);
    close(owed);
    reply_free(ri);
    reply_free(ro);
    stop(f);
}

/* SKIP mode, lower-case names, echo_version and linger: a request with a body is answered at
 * its head and the connection closed; an HTTP/1.0 keep-alive client is told so. */
static void test_skip_mode_framing(void **state)
{
    (void)state;
    h1s_opts o = {.keep_alive = true, .lower_case = true, .echo_version = true, .linger_ms = 200};
    fixture *f = start(o);
    int fd = dial(f->port);
    reply *r = reply_new();
    send_str(f, fd, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    read_replies(f, fd, r, 1);
    assert_non_null(strstr(r->text, "HTTP/1.0 200 OK\r\ncontent-length: 13\r\n"));
    assert_non_null(strstr(r->text, "connection: keep-alive\r\n"));
    send_str(f, fd, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
    read_replies(f, fd, r, 0);
    assert_true(r->eof);
    assert_int_equal(r->n, 2);
    assert_string_equal(r->body[1], "POST /b body=0");
    assert_non_null(strstr(r->text, "HTTP/1.1 200 OK\r\ncontent-length: 14\r\n"));
    assert_non_null(strstr(r->text, "connection: close\r\n"));
    close(fd);
    reply_free(r);
    stop(f);
}

/* One reason-phrase table (Envoy's names) serves these servers and the proxy's codec: 413 is
 * Envoy's "Payload Too Large", the codes only the codec named before are named, others are
 * "Unknown". */
static void test_reason_phrases(void **state)
{
    (void)state;
    assert_string_equal(h1s_reason(200), "OK");
    assert_string_equal(h1s_reason(413), "Payload Too Large");
    assert_string_equal(h1s_reason(303), "See Other");
    assert_string_equal(h1s_reason(426), "Upgrade Required");
    assert_string_equal(h1s_reason(507), "Insufficient Storage");
    assert_string_equal(h1s_reason(599), "Unknown");
}

static void test_addresses(void **state)
{
    (void)state;
    struct sockaddr_storage sa;
    char buf[64];
    assert_int_equal(h1s_parse_address("[::1]:8080", &sa), 0);
    assert_int_equal(h1s_format_address((struct sockaddr *)&sa, buf, sizeof buf), 0);
    assert_string_equal(buf, "[::1]:8080");
    assert_int_equal(h1s_parse_address("10.0.0.1:65535", &sa), 0);
    assert_int_equal(h1s_parse_address("10.0.0.1:65536", &sa), -1);
    assert_int_equal(h1s_parse_address("10.0.0.1", &sa), -1);
    assert_int_equal(h1s_parse_address("::1:80", &sa), -1);
    assert_int_equal(h1s_parse_address("[::1:80", &sa), -1);
    assert_int_equal(h1s_parse_address(":80", &sa), -1);
    /* IPv6 loopback listener, and a taken port */
    uv_loop_t loop;
    uv_loop_init(&loop);
    h1s_callbacks cb = {.on_request = on_request};
    h1s_opts o = {0};
    int err = 0;
    h1s_parse_address("[::1]:0", &sa);
    h1s_server *s = h1s_listen(&loop, (struct sockaddr *)&sa, &o, &cb, &err);
    if (s) { /* no IPv6 in this namespace: skip that half */
        snprintf(buf, sizeof buf, "[::1]:%d", h1s_port(s));
        assert_string_equal(h1s_bound(s), buf);
        struct sockaddr_storage again;
        h1s_parse_address(buf, &again);
        assert_null(h1s_listen(&loop, (struct sockaddr *)&again, &o, &cb, &err));
        assert_int_equal(err, UV_EADDRINUSE);
        h1s_close(s);
    }
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void count_timer(uv_timer_t *t)
{
    (*(int *)t->data)++;
}

/* A listener that cannot bind must not run the caller's loop (weft-pilot's SIGTERM handler ran
 * inside its start that way, before the pilot existed, and pilot then never stopped): the
 * failed server is freed when the caller's loop next runs. */
static void test_failed_bind_leaves_the_loop_alone(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    h1s_callbacks cb = {.on_request = on_request};
    h1s_opts o = {0};
    int err = 0, fired = 0;
    struct sockaddr_storage sa;
    h1s_parse_address("127.0.0.1:0", &sa);
    h1s_server *s = h1s_listen(&loop, (struct sockaddr *)&sa, &o, &cb, &err);
    assert_non_null(s);
    char buf[64];
    snprintf(buf, sizeof buf, "127.0.0.1:%d", h1s_port(s));
    h1s_parse_address(buf, &sa);
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    t.data = &fired;
    uv_timer_start(&t, count_timer, 0, 0); /* due at once: any loop run fires it */
    uv_update_time(&loop);
    usleep(2000);
    assert_null(h1s_listen(&loop, (struct sockaddr *)&sa, &o, &cb, &err));
    assert_int_equal(err, UV_EADDRINUSE);
    assert_int_equal(fired, 0);
    h1s_close(s);
    uv_close((uv_handle_t *)&t, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_bind_leaves_the_loop_alone),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_pipelined_in_order),
        cmocka_unit_test(test_body_limit),
        cmocka_unit_test(test_async_from_timer),
        cmocka_unit_test(test_chunked_streaming),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_close_inside_callback),
        cmocka_unit_test(test_connection_limits),
        cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_shutdown_with_open_connections),
        cmocka_unit_test(test_skip_mode_framing),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_reason_phrases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
