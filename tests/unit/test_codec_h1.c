/*
 * test_codec_h1.c - the HTTP/1 codec (proxy/http/codec.h, http/codec_h1.c): bytes in -> request
 * events (pipelined requests one stream at a time, chunked bodies and trailers as slices of
 * the input, a dispatch that pauses, the room for the connection manager's added fields,
 * 100-continue, upgrade, protocol errors with Envoy's details and status), an upstream's
 * responses through the client side (a 1xx, then a chunked answer with trailers; a HEAD's
 * answer), and response events in -> the exact bytes out (framing, status line, dropped
 * fields, connection field, chunks; the upstream request's line and framing fields), the
 * encoders over a header list (http/header_list.h): status line + list + framing -> exact
 * bytes, the request head and its access-log view, a list at its capacity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/codec.h"

/* ---------- a fake connection manager recording the events ---------- */

typedef struct {
    const char *input; /* the dispatched bytes: slices must point into them */
    size_t input_len;
    size_t consumed;
    char log[1024];
    bool complete;
    int pause_after_headers; /* should_continue says no once headers were seen */
    bool headers_seen;
    h1_error error;
    const h1_message *msg;
} rec;

static void add(rec *r, const char *fmt, ...)
{
    size_t n = strlen(r->log);
    if (n)
        r->log[n++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->log + n, sizeof r->log - n, fmt, ap);
    va_end(ap);
}

static bool inside(const rec *r, const char *p, size_t len)
{
    return p >= r->input && p + len <= r->input + r->input_len;
}

static void on_consumed(void *ctx, size_t n)
{
    ((rec *)ctx)->consumed += n;
}

static void on_headers(void *ctx, const h1_message *m, const char *raw, size_t raw_len)
{
    rec *r = ctx;
    assert_true(inside(r, raw, raw_len));
    assert_int_equal(raw_len, m->head_len);
    r->msg = m;
    r->headers_seen = true;
    add(r, "H(%.*s %.*s n=%zu%s%s)", (int)m->method.len, m->method.p, (int)m->target.len,
        m->target.p, m->nheaders, m->expect_continue ? " expect" : "",
        m->upgrade ? " upgrade" : "");
}

static void on_data(void *ctx, const char *data, size_t len)
{
    rec *r = ctx;
    assert_true(inside(r, data, len)); /* zero copy: a slice of what was read */
    add(r, "D(%.*s)", (int)len, data);
}

static void on_trailers(void *ctx, const h1_header *t, size_t n)
{
    rec *r = ctx;
    add(r, "T(");
    for (size_t i = 0; i < n; i++)
        add(r, "%.*s=%.*s", (int)t[i].name.len, t[i].name.p, (int)t[i].value.len, t[i].value.p);
    add(r, ")");
}

static void on_complete(void *ctx)
{
    rec *r = ctx;
    r->complete = true;
    add(r, "C");
}

static void on_upgraded(void *ctx)
{
    add(ctx, "U");
}

static void on_error(void *ctx, h1_error e)
{
    rec *r = ctx;
    r->error = e;
    add(r, "E(%s %d)", h1_error_details(e), h1_error_status(e));
}

/* As the connection manager: one stream until its request is complete. */
static bool should_continue(void *ctx)
{
    rec *r = ctx;
    return !r->complete && !(r->pause_after_headers && r->headers_seen);
}

static const wp_codec_server_callbacks cbs = {
    .on_consumed = on_consumed,
    .on_headers = on_headers,
    .on_data = on_data,
    .on_trailers = on_trailers,
    .on_complete = on_complete,
    .on_upgraded = on_upgraded,
    .on_error = on_error,
    .should_continue = should_continue,
};

typedef struct {
    h1_parser p;
    h1_header hdrs[16];
} req_parser;

static void start(req_parser *rp, size_t max_head)
{
    h1_parser_init(&rp->p, H1_REQUEST, rp->hdrs, 16, max_head);
}

static wp_codec_status dispatch(req_parser *rp, rec *r, const char *data, size_t len)
{
    r->input = data;
    r->input_len = len;
    return wp_h1_server_dispatch(&rp->p, data, len, &cbs, r);
}

/* ---------- decoding ---------- */

static void test_pipelined(void **state)
{
    (void)state;
    const char in[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                      "POST /b HTTP/1.1\r\nHost: y\r\nContent-Length: 3\r\n\r\nabc";
    size_t first = strlen("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    req_parser rp;
    start(&rp, 8192);
    rec r = {0};
    /* the first stream: its head and its end; the second request waits in the buffer */
    assert_int_equal(dispatch(&rp, &r, in, sizeof in - 1), WP_CODEC_PAUSED);
    assert_string_equal(r.log, "H(GET /a n=1) C");
    assert_int_equal(r.consumed, first);
    /* the next stream, on the rest */
    start(&rp, 8192);
    rec r2 = {0};
    assert_int_equal(dispatch(&rp, &r2, in + first, sizeof in - 1 - first), WP_CODEC_PAUSED);
    assert_string_equal(r2.log, "H(POST /b n=2) D(abc) C");
    assert_int_equal(r2.consumed, sizeof in - 1 - first);
}

static void test_chunked_trailers(void **state)
{
    (void)state;
    const char in[] = "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\r\nhello\r\n6\r\n world\r\n0\r\nx-t: 1\r\nx-u: two\r\n\r\n";
    req_parser rp;
    start(&rp, 8192);
    rec r = {0};
    assert_int_equal(dispatch(&rp, &r, in, sizeof in - 1), WP_CODEC_PAUSED);
    assert_string_equal(r.log, "H(POST /u n=2) D(hello) D( world) T( x-t=1 x-u=two ) C");
    assert_int_equal(r.consumed, sizeof in - 1);
}

static void test_split_and_pause(void **state)
{
    (void)state;
    const char in[] = "PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nwxyz";
    size_t cut = 10;
    req_parser rp;
    start(&rp, 8192);
    rec r = {0};
    /* part of the head: the codec needs more (it keeps what it scanned) */
    assert_int_equal(dispatch(&rp, &r, in, cut), WP_CODEC_NEED_MORE);
    assert_string_equal(r.log, "");
    /* the connection manager pauses after the head (e.g. the router waits for a connection):
     * the body stays unread */
    r.pause_after_headers = 1;
    size_t before = r.consumed;
    assert_int_equal(dispatch(&rp, &r, in + before, sizeof in - 1 - before), WP_CODEC_PAUSED);
    assert_string_equal(r.log, "H(PUT /p n=2)");
    size_t head = strlen(in) - 4;
    assert_int_equal(r.consumed, head);
    /* resumed: the body and the end */
    r.pause_after_headers = 0;
    r.log[0] = 0;
    assert_int_equal(dispatch(&rp, &r, in + head, 4), WP_CODEC_PAUSED);
    assert_string_equal(r.log, "D(wxyz) C");
    assert_int_equal(r.consumed, sizeof in - 1);
}

static void test_reserve_fields(void **state)
{
    (void)state;
    const char in[] = "POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "1\r\na\r\n0\r\nx-t: 1\r\n\r\n";
    req_parser rp;
    start(&rp, 8192);
    rec r = {0};
    r.pause_after_headers = 1;
    assert_int_equal(dispatch(&rp, &r, in, sizeof in - 1), WP_CODEC_PAUSED);
    assert_int_equal(rp.p.msg.nheaders, 2);
    /* the connection manager appended two fields (x-request-id, x-forwarded-for) */
    rp.hdrs[2] = (h1_header){{"x-request-id", 12}, {"id", 2}};
    rp.hdrs[3] = (h1_header){{"x-forwarded-for", 15}, {"1.2.3.4", 7}};
    wp_h1_server_reserve_fields(&rp.p, 4);
    wp_h1_server_reserve_fields(&rp.p, 4); /* once is enough */
    r.pause_after_headers = 0;
    size_t off = r.consumed;
    assert_int_equal(dispatch(&rp, &r, in + off, sizeof in - 1 - off), WP_CODEC_PAUSED);
    assert_ptr_equal(rp.p.msg.trailers, &rp.hdrs[4]); /* after the added fields */
    assert_int_equal(rp.hdrs[3].name.len, 15);        /* kept */
    assert_string_equal(r.log, "H(POST /r n=2) D(a) T( x-t=1 ) C");
}

static void test_expect_continue(void **state)
{
    (void)state;
    const char in[] = "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      "Content-Length: 2\r\n\r\nok";
    req_parser rp;
    start(&rp, 8192);
    rec r = {0};
    assert_int_equal(dispatch(&rp, &r, in, sizeof in - 1), WP_CODEC_PAUSED);
    assert_string_equal(r.log, "H(POST /e n=3 expect) D(ok) C");
    /* the connection manager's interim answer, byte for byte */
    assert_int_equal(strlen(WP_H1_100_CONTINUE), WP_H1_100_CONTINUE_LEN);
    assert_memory_equal(WP_H1_100_CONTINUE, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void test_upgrade(void **state)
{
    (void)state;
    const char head[] = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n"
                        "Upgrade: websocket\r\n\r\n";
    const char in[] = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n"
                      "Upgrade: websocket\r\n\r\nRAW-BYTES";
    req_parser rp;
    start(&rp, 8192);
    rec r = {0};
    /* the request ends with its head (Envoy's codec ends an upgrade's HTTP part there); the
     * bytes after it stay for the tunnel */
    assert_int_equal(dispatch(&rp, &r, in, sizeof in - 1), WP_CODEC_PAUSED);
    assert_string_equal(r.log, "H(GET /ws n=3 upgrade) C");
    assert_int_equal(r.consumed, sizeof head - 1);
    /* dispatched again, the codec says the rest is the tunnel's, consuming nothing */
    r.complete = false;
    r.log[0] = 0;
    assert_int_equal(dispatch(&rp, &r, in + r.consumed, sizeof in - 1 - r.consumed),
                     WP_CODEC_UPGRADED);
    assert_string_equal(r.log, "U");
    assert_int_equal(r.consumed, sizeof head - 1);
}

static void test_protocol_errors(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t max_head;
        const char *log;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 8192, "E(http1.codec_error 400)"},
        {"GET / HTTP/1.1\r\nHost: a\r\nX: "
         "0123456789012345678901234567890123456789\r\n\r\n",
         40, "E(http1.headers_too_large 431)"},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 8192,
         "E(http1.invalid_transfer_encoding 501)"},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
         8192, "E(http1.content_length_and_chunked_not_allowed 400)"},
        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01"
         "b\r\n\r\n",
         8192, "E(http1.invalid_characters 400)"},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 8192,
         "H(POST / n=2) E(http1.codec_error 400)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        req_parser rp;
        start(&rp, cases[i].max_head);
        rec r = {0};
        assert_int_equal(dispatch(&rp, &r, cases[i].in, strlen(cases[i].in)), WP_CODEC_ERROR);
        assert_string_equal(r.log, cases[i].log);
        /* the parser stays failed: a later dispatch reports the error again, consuming
         * nothing */
        size_t c = r.consumed;
        r.log[0] = 0;
        assert_int_equal(dispatch(&rp, &r, "x", 1), WP_CODEC_ERROR);
        assert_int_equal(r.consumed, c);
    }
}

/* The client side: an upstream's responses, a 1xx first, then the final one; a HEAD's answer
 * has no body whatever its content-length. */
static void test_client_responses(void **state)
{
    (void)state;
    const char in[] = "HTTP/1.1 100 Continue\r\n\r\n"
                      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n0\r\ngrpc-status: 0\r\n\r\n";
    h1_header hdrs[16];
    h1_parser p;
    h1_parser_init(&p, H1_RESPONSE, hdrs, 16, 8192);
    rec r = {.input = in, .input_len = sizeof in - 1};
    /* one event per step when the router wants to look in between */
    size_t off = 0;
    wp_codec_status st;
    int steps = 0;
    while ((st = wp_h1_client_dispatch(&p, in + off, sizeof in - 1 - off, &cbs, &r)) ==
               WP_CODEC_PAUSED &&
           steps++ < 20) {
        off = r.consumed;
        if (r.complete && p.msg.status == 200)
            break;
        r.complete = false; /* the 1xx's end: the final response follows */
    }
    assert_string_equal(r.log, "H(  n=0) C H(  n=1) D(abc) T( grpc-status=0 ) C");
    assert_int_equal(p.msg.status, 200);
    assert_int_equal(r.consumed, sizeof in - 1);

    const char head_answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    h1_parser_init(&p, H1_RESPONSE, hdrs, 16, 8192);
    h1_parser_set_answers(&p, H1_ANSWERS_HEAD);
    rec r2 = {.input = head_answer, .input_len = sizeof head_answer - 1};
    assert_int_equal(wp_h1_client_dispatch(&p, head_answer, sizeof head_answer - 1, &cbs, &r2),
                     WP_CODEC_PAUSED);
    assert_string_equal(r2.log, "H(  n=1) C");
}

/* ---------- encoding ---------- */

static void test_framing(void **state)
{
    (void)state;
    wp_h1_framing f = wp_h1_response_framing(200, H1_BODY_LENGTH, false, 1);
    assert_false(f.chunked || f.close || f.bodiless || f.upgrade);
    f = wp_h1_response_framing(200, H1_BODY_CHUNKED, false, 1);
    assert_true(f.chunked);
    assert_false(f.close);
    f = wp_h1_response_framing(200, H1_BODY_UNTIL_CLOSE, false, 1);
    assert_true(f.chunked); /* re-framed for an HTTP/1.1 client */
    f = wp_h1_response_framing(200, H1_BODY_UNTIL_CLOSE, false, 0);
    assert_false(f.chunked); /* an HTTP/1.0 client reads until close */
    assert_true(f.close);
    f = wp_h1_response_framing(200, H1_BODY_NONE, false, 1);
    assert_false(f.chunked || f.close || f.bodiless);
    f = wp_h1_response_framing(200, H1_BODY_CHUNKED, true, 1); /* HEAD */
    assert_true(f.bodiless);
    assert_false(f.chunked);
    for (int st = 204; st <= 304; st += 100) {
        f = wp_h1_response_framing(st, H1_BODY_CHUNKED, false, 1);
        assert_true(f.bodiless);
        assert_false(f.chunked);
    }
    f = wp_h1_response_framing(101, H1_BODY_NONE, false, 1);
    assert_true(f.upgrade && f.bodiless);
}

/* A response head: the status line, the list in order with the codec's framing fields where
 * the connection manager put framing_at, the connection field, the blank line. */
static void encode_resp(wf_strbuf *b, int status, const wp_hdr_list *l, size_t framing_at,
                        wp_h1_framing f, int minor)
{
    wf_strbuf_reset(b);
    wp_codec_response_head h = {status, l, framing_at, f, minor};
    assert_int_equal(wp_h1_encode_response_head(b, &h), 0);
}

static void test_head_bytes(void **state)
{
    (void)state;
    wf_strbuf b = {0};
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    wp_h1_framing plain = {0};
    encode_resp(&b, 200, &l, 0, plain, 1);
    assert_string_equal(wf_strbuf_cstr(&b), "HTTP/1.1 200 OK\r\n\r\n");
    encode_resp(&b, 431, &l, 0, plain, 1);
    assert_string_equal(wf_strbuf_cstr(&b), "HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n");
    encode_resp(&b, 599, &l, 0, plain, 1);
    assert_string_equal(wf_strbuf_cstr(&b), "HTTP/1.1 599 Unknown\r\n\r\n");
    /* an upstream's fields, then the framing fields, then the proxy's own */
    WP_HDR_LIST_ADD_LIT(&l, "Content-Type", "text/html", 9);
    WP_HDR_LIST_ADD_LIT(&l, "x-added", "", 0);
    WP_HDR_LIST_ADD_LIT(&l, "x-envoy-upstream-service-time", "3", 1);
    WP_HDR_LIST_ADD_LIT(&l, "server", "envoy", 5);
    wp_h1_framing ch = wp_h1_response_framing(200, H1_BODY_CHUNKED, false, 1);
    ch.close = true;
    encode_resp(&b, 200, &l, 2, ch, 1);
    assert_string_equal(wf_strbuf_cstr(&b), "HTTP/1.1 200 OK\r\n"
                                            "Content-Type: text/html\r\n"
                                            "x-added: \r\n"
                                            "transfer-encoding: chunked\r\n"
                                            "x-envoy-upstream-service-time: 3\r\n"
                                            "server: envoy\r\n"
                                            "connection: close\r\n\r\n");
    /* the same bytes when the buffer already has the room (a reused stream's: the fields are
     * written in place) as when it grows */
    char grown[512];
    snprintf(grown, sizeof grown, "%s", wf_strbuf_cstr(&b));
    wf_strbuf big = {0};
    for (int i = 0; i < 64; i++)
        wf_strbuf_append(&big, "0123456789abcdef", 16);
    wf_strbuf_reset(&big);
    size_t cap = big.cap;
    encode_resp(&big, 200, &l, 2, ch, 1);
    assert_int_equal(big.cap, cap); /* no growth: the in-place path */
    assert_string_equal(wf_strbuf_cstr(&big), grown);
    wf_strbuf_free(&big);
    wf_strbuf small = {0};
    encode_resp(&small, 200, &l, 2, ch, 1); /* empty: the growing path */
    assert_string_equal(wf_strbuf_cstr(&small), grown);
    wf_strbuf_free(&small);
    wp_h1_framing up = wp_h1_response_framing(101, H1_BODY_NONE, false, 1);
    up.close = true; /* a 101: no connection: close/keep-alive */
    encode_resp(&b, 101, &l, 0, up, 1);
    assert_string_equal(wf_strbuf_cstr(&b), "HTTP/1.1 101 Switching Protocols\r\n"
                                            "connection: upgrade\r\n"
                                            "Content-Type: text/html\r\n"
                                            "x-added: \r\n"
                                            "x-envoy-upstream-service-time: 3\r\n"
                                            "server: envoy\r\n\r\n");
    wp_hdr_list_init(&l);
    WP_HDR_LIST_ADD_LIT(&l, "content-length", "0", 1);
    encode_resp(&b, 204, &l, l.n, plain, 0); /* HTTP/1.0 kept alive */
    assert_string_equal(
        wf_strbuf_cstr(&b),
        "HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n");
    wp_codec_response_head bad = {200, &l, l.n + 1, plain, 1}; /* framing_at past the end */
    wf_strbuf_reset(&b);
    assert_int_equal(wp_h1_encode_response_head(&b, &bad), -1);
    assert_int_equal(b.len, 0);
    wf_strbuf_free(&b);
}

/* A list takes WP_HDR_LIST_MAX fields and no more: the one past it is not stored, the list is
 * marked, and neither encoder writes a head from it. */
static void test_list_capacity(void **state)
{
    (void)state;
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    for (size_t i = 0; i < WP_HDR_LIST_MAX; i++)
        assert_true(WP_HDR_LIST_ADD_LIT(&l, "x-f", "v", 1));
    assert_int_equal(l.n, WP_HDR_LIST_MAX);
    assert_false(l.overflow);
    wf_strbuf b = {0};
    wp_codec_response_head rh = {200, &l, l.n, {0}, 1};
    assert_int_equal(wp_h1_encode_response_head(&b, &rh), 0); /* a full list still encodes */
    assert_int_equal(b.len, strlen("HTTP/1.1 200 OK\r\n") + WP_HDR_LIST_MAX * strlen("x-f: v\r\n") +
                                strlen("\r\n"));
    h1_header extra = {{"x-last", 6}, {"1", 1}};
    assert_false(wp_hdr_list_add_field(&l, &extra));
    assert_int_equal(l.n, WP_HDR_LIST_MAX);
    assert_true(l.overflow);
    wf_strbuf_reset(&b);
    assert_int_equal(wp_h1_encode_response_head(&b, &rh), -1);
    assert_int_equal(b.len, 0);
    wp_codec_request_head qh = {{"GET", 3}, {"/", 1}, &l, H1_BODY_NONE, 0, false, false};
    assert_int_equal(wp_h1_encode_request_head(&b, &qh), -1);
    assert_int_equal(b.len, 0);
    wp_hdr_list_init(&l); /* reusable */
    assert_false(l.overflow);
    assert_int_equal(l.n, 0);
    wf_strbuf_free(&b);
}

static void test_dropped_fields(void **state)
{
    (void)state;
    static const char *const dropped[] = {"Date",
                                          "SERVER",
                                          "connection",
                                          "Keep-Alive",
                                          "proxy-connection",
                                          "Transfer-Encoding",
                                          "x-envoy-upstream-service-time"};
    for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++) {
        h1_str n = {dropped[i], strlen(dropped[i])};
        assert_true(wp_h1_response_field_replaced(&n, false));
        assert_true(wp_h1_response_field_replaced(&n, true));
    }
    h1_str up = {"Upgrade", 7}, ct = {"content-type", 12}, dat = {"data", 4};
    assert_true(wp_h1_response_field_replaced(&up, false));
    assert_false(wp_h1_response_field_replaced(&up, true)); /* a 101 keeps it */
    assert_false(wp_h1_response_field_replaced(&ct, false));
    assert_false(wp_h1_response_field_replaced(&dat, false));
    assert_true(wp_h1_drops_content_length(100));
    assert_true(wp_h1_drops_content_length(204));
    assert_false(wp_h1_drops_content_length(200));
    assert_false(wp_h1_drops_content_length(304));
}

/* The client side's request head: the line, the fields it writes itself and drops. */
static void test_request_head(void **state)
{
    (void)state;
    wf_strbuf b = {0};
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    WP_HDR_LIST_ADD_LIT(&l, "x-envoy-original-path", "/old", 4);
    WP_HDR_LIST_ADD_LIT(&l, "Accept", "*/*", 3);
    WP_HDR_LIST_ADD_LIT(&l, "host", "catalog", 7);
    wp_codec_request_head h = {{"POST", 4}, {"/items?x=1", 10}, &l, H1_BODY_LENGTH, 12, false,
                               false};
    assert_int_equal(wp_h1_encode_request_head(&b, &h), 0);
    assert_string_equal(wf_strbuf_cstr(&b), "POST /items?x=1 HTTP/1.1\r\n"
                                            "x-envoy-original-path: /old\r\n"
                                            "Accept: */*\r\n"
                                            "host: catalog\r\n"
                                            "content-length: 12\r\n\r\n");
    /* what the access log reads of it: the line's parts and every field, framing included */
    h1_header view[8];
    h1_message m;
    assert_true(wp_h1_request_head_view(b.data, b.len, view, 8, &m));
    assert_memory_equal(m.method.p, "POST", 4);
    assert_int_equal(m.target.len, 10);
    assert_int_equal(m.nheaders, 4);
    assert_memory_equal(m.headers[3].name.p, "content-length", 14);
    assert_memory_equal(m.headers[3].value.p, "12", 2);
    assert_false(wp_h1_request_head_view(b.data, b.len, view, 3, &m)); /* no room */
    wp_hdr_list_init(&l);
    h = (wp_codec_request_head){{"GET", 3}, {"/", 1}, &l, H1_BODY_CHUNKED, 0, true, false};
    wf_strbuf_reset(&b);
    assert_int_equal(wp_h1_encode_request_head(&b, &h), 0);
    assert_string_equal(wf_strbuf_cstr(&b), "GET / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n");
    h = (wp_codec_request_head){{"GET", 3}, {"/ws", 3}, &l, H1_BODY_NONE, 0, false, true};
    wf_strbuf_reset(&b);
    assert_int_equal(wp_h1_encode_request_head(&b, &h), 0);
    assert_string_equal(wf_strbuf_cstr(&b), "GET /ws HTTP/1.1\r\nconnection: upgrade\r\n\r\n");
    h = (wp_codec_request_head){{"GET", 3}, {"/", 1}, &l, H1_BODY_NONE, 0, false, false};
    wf_strbuf_reset(&b);
    assert_int_equal(wp_h1_encode_request_head(&b, &h), 0);
    assert_string_equal(wf_strbuf_cstr(&b), "GET / HTTP/1.1\r\n\r\n");
    wf_strbuf_free(&b);
    static const char *const hop[] = {
        "Connection", "keep-alive", "Proxy-Connection", "transfer-encoding", "Content-Length",
        "Expect",     "TE"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++) {
        h1_str n = {hop[i], strlen(hop[i])};
        assert_true(wp_h1_request_field_hop_by_hop(&n, false));
        assert_true(wp_h1_request_field_hop_by_hop(&n, true));
    }
    h1_str up = {"Upgrade", 7}, host = {"host", 4}, xff = {"x-forwarded-for", 15};
    assert_true(wp_h1_request_field_hop_by_hop(&up, false));
    assert_false(wp_h1_request_field_hop_by_hop(&up, true)); /* an upgrade forwards it */
    assert_false(wp_h1_request_field_hop_by_hop(&host, false));
    assert_false(wp_h1_request_field_hop_by_hop(&xff, false));
}

static void test_chunks(void **state)
{
    (void)state;
    char line[WP_H1_CHUNK_LINE_MAX];
    const char body[] = "0123456789abcdef0123456789abcde"; /* 31 bytes */
    uv_buf_t v[3];
    assert_int_equal(wp_h1_encode_data(v, true, line, body, 31), 3);
    assert_int_equal(v[0].len, 4);
    assert_memory_equal(v[0].base, "1f\r\n", 4);
    assert_ptr_equal(v[1].base, body); /* the caller's bytes, not a copy */
    assert_int_equal(v[1].len, 31);
    assert_int_equal(v[2].len, 2);
    assert_memory_equal(v[2].base, "\r\n", 2);
    assert_int_equal(wp_h1_encode_data(v, false, line, body, 31), 1);
    assert_ptr_equal(v[0].base, body);
    assert_int_equal(v[0].len, 31);
    assert_int_equal(wp_h1_chunk_line(line, 0x12345), 7);
    assert_memory_equal(line, "12345\r\n", 7);
    assert_int_equal(strlen(WP_H1_LAST_CHUNK), WP_H1_LAST_CHUNK_LEN);
    assert_memory_equal(WP_H1_LAST_CHUNK, "0\r\n\r\n", 5);
    assert_int_equal(wp_h1_encode_end(v, false), 0);
    assert_int_equal(wp_h1_encode_end(v, true), 1);
    assert_int_equal(v[0].len, 5);
    assert_memory_equal(v[0].base, "0\r\n\r\n", 5);
}

/* Joins the vectors' bytes. */
static size_t joined(const uv_buf_t *v, unsigned n, char *out)
{
    size_t len = 0;
    for (unsigned i = 0; i < n; i++) {
        memcpy(out + len, v[i].base, v[i].len);
        len += v[i].len;
    }
    out[len] = 0;
    return len;
}

/* Body slices as one write: one chunk around all of them, the last chunk at the end; the
 * vectors in front of first (a head) untouched; unchunked slices as they are. */
static void test_body_slices(void **state)
{
    (void)state;
    char line[WP_H1_CHUNK_LINE_MAX], out[256];
    char head[] = "HEAD\r\n", a[] = "0123456789", b[] = "abcdef";
    uv_buf_t v[8] = {uv_buf_init(head, 6), uv_buf_init(a, 10), uv_buf_init(b, 6)};
    unsigned n = wp_h1_encode_body(v, 1, 3, true, false, line);
    assert_int_equal(n, 5);
    assert_ptr_equal(v[0].base, head);
    assert_ptr_equal(v[2].base, a); /* the caller's bytes, not copies */
    joined(v, n, out);
    assert_string_equal(out, "HEAD\r\n10\r\n0123456789abcdef\r\n");
    v[0] = uv_buf_init(a, 10);
    n = wp_h1_encode_body(v, 0, 1, true, true, line); /* the body's last slice */
    joined(v, n, out);
    assert_string_equal(out, "a\r\n0123456789\r\n0\r\n\r\n");
    n = wp_h1_encode_body(v, 0, 0, true, true, line); /* an empty body's end */
    joined(v, n, out);
    assert_string_equal(out, "0\r\n\r\n");
    assert_int_equal(wp_h1_encode_body(v, 0, 0, true, false, line), 0); /* nothing yet */
    v[0] = uv_buf_init(a, 10);
    v[1] = uv_buf_init(b, 6);
    assert_int_equal(wp_h1_encode_body(v, 0, 2, false, true, line), 2); /* length-framed */
    assert_ptr_equal(v[0].base, a);
    assert_ptr_equal(v[1].base, b);
}

/* Absolute-form targets as Envoy's codec takes them: origin-form path, the authority as Host
 * (replacing a Host field, or appended within the room); targets no route can take refused. */
static void test_origin_form(void **state)
{
    (void)state;
    h1_header f[3] = {{{"Host", 4}, {"ignored", 7}}, {{"accept", 6}, {"*/*", 3}}};
    h1_message m = {.method = {"GET", 3}, .target = {"http://catalog:8080/items?a=1", 29}};
    m.headers = f;
    m.nheaders = 2;
    assert_int_equal(wp_h1_server_origin_form(&m, 3), 0);
    assert_int_equal(m.target.len, 10);
    assert_memory_equal(m.target.p, "/items?a=1", 10);
    assert_int_equal(m.nheaders, 2);
    assert_int_equal(f[0].value.len, 12);
    assert_memory_equal(f[0].value.p, "catalog:8080", 12);
    m.target = (h1_str){"HTTPS://reviews", 15}; /* no path: "/" */
    m.nheaders = 1;
    f[0].name = (h1_str){"accept", 6};
    assert_int_equal(wp_h1_server_origin_form(&m, 3), 0);
    assert_int_equal(m.nheaders, 2); /* Host appended */
    assert_memory_equal(f[1].name.p, "host", 4);
    assert_int_equal(f[1].value.len, 7);
    assert_memory_equal(m.target.p, "/", 1);
    m.target = (h1_str){"http://reviews/", 15};
    assert_int_equal(wp_h1_server_origin_form(&m, 1), 0); /* a Host exists: no room needed */
    m.nheaders = 1;
    m.target = (h1_str){"http://reviews/", 15};
    assert_int_equal(wp_h1_server_origin_form(&m, 1), -1); /* no room for a Host */
    static const char *const bad[] = {"http://", "http://u@h/", "http://h?x", "items", "*"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m.target = (h1_str){bad[i], strlen(bad[i])};
        assert_int_equal(wp_h1_server_origin_form(&m, 3), -1);
    }
    m.target = (h1_str){"/already", 8};
    assert_int_equal(wp_h1_server_origin_form(&m, 3), 0);
    m.method = (h1_str){"OPTIONS", 7};
    m.target = (h1_str){"*", 1};
    assert_int_equal(wp_h1_server_origin_form(&m, 3), 0);
}

/* A copied head: the line's parts and every field move by the copy's offset. */
static void test_rebase(void **state)
{
    (void)state;
    const char raw[] = "GET /a HTTP/1.1\r\nX: y\r\n\r\n";
    char copy[sizeof raw];
    memcpy(copy, raw, sizeof raw);
    h1_header f[1] = {{{raw + 17, 1}, {raw + 20, 1}}};
    h1_message m = {.method = {raw, 3}, .target = {raw + 4, 2}, .headers = f, .nheaders = 1};
    wp_h1_rebase(&m, copy - raw);
    assert_ptr_equal(m.method.p, copy);
    assert_ptr_equal(m.target.p, copy + 4);
    assert_ptr_equal(f[0].name.p, copy + 17);
    assert_ptr_equal(f[0].value.p, copy + 20);
    assert_memory_equal(f[0].value.p, "y", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined),       cmocka_unit_test(test_chunked_trailers),
        cmocka_unit_test(test_split_and_pause), cmocka_unit_test(test_reserve_fields),
        cmocka_unit_test(test_expect_continue), cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_protocol_errors), cmocka_unit_test(test_client_responses),
        cmocka_unit_test(test_framing),         cmocka_unit_test(test_head_bytes),
        cmocka_unit_test(test_dropped_fields),  cmocka_unit_test(test_request_head),
        cmocka_unit_test(test_chunks),          cmocka_unit_test(test_list_capacity),
        cmocka_unit_test(test_body_slices),     cmocka_unit_test(test_origin_form),
        cmocka_unit_test(test_rebase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
