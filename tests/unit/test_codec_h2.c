/*
 * test_codec_h2.c - the HTTP/2 server codec (proxy/http/codec_h2.h) against a real nghttp2
 * client session in memory: the preface check (AUTO detection), the HTTP/2 -> HTTP/1.1 request
 * translation (:authority as Host, cookies joined, framing, refused heads), a request with a
 * body and trailers answered with HEADERS, DATA and trailers, flow control both ways (the
 * client's window opens only when the codec's user consumed the body; a response slice waits
 * for the client's window and on_data_sent comes when it is framed), a client's RST_STREAM
 * (http2.remote_reset, rx_reset), a connection-specific field (GOAWAY PROTOCOL_ERROR,
 * http2.invalid.header.field, rx_messaging_error), a head over the limits (RST_STREAM,
 * header_overflow) and the drain GOAWAYs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "proxy/http/codec_h2.h"

/* ---------- the server side's user: records the events ---------- */

typedef struct {
    char log[4096];
    int32_t last_id;
    int streams; /* contexts handed out */
    bool refuse;
    int data_sent;
    size_t body_bytes;
    uint32_t close_code;
    const char *close_details;
    int closes;
} srv_rec;

static void rec_log(srv_rec *r, const char *fmt, ...)
{
    size_t n = strlen(r->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->log + n, sizeof(r->log) - n, fmt, ap);
    va_end(ap);
}

static void *s_request(void *ctx, int32_t id, const h1_message *m, h1_str scheme)
{
    srv_rec *r = ctx;
    if (r->refuse)
        return NULL;
    r->last_id = id;
    rec_log(r, "req %d %.*s %.*s %.*s", id, (int)m->method.len, m->method.p, (int)m->target.len,
            m->target.p, (int)scheme.len, scheme.p);
    for (size_t i = 0; i < m->nheaders; i++)
        rec_log(r, " [%.*s=%.*s]", (int)m->headers[i].name.len, m->headers[i].name.p,
                (int)m->headers[i].value.len, m->headers[i].value.p);
    rec_log(r, " framing=%d\n", (int)m->framing);
    r->streams++;
    return r;
}

static void s_data(void *sctx, const char *data, size_t len)
{
    srv_rec *r = sctx;
    if (len <= 32)
        rec_log(r, "data %.*s\n", (int)len, data);
    r->body_bytes += len;
}

static void s_trailers(void *sctx, const h1_header *t, size_t n)
{
    srv_rec *r = sctx;
    rec_log(r, "trailers");
    for (size_t i = 0; i < n; i++)
        rec_log(r, " [%.*s=%.*s]", (int)t[i].name.len, t[i].name.p, (int)t[i].value.len,
                t[i].value.p);
    rec_log(r, "\n");
}

static void s_complete(void *sctx)
{
    rec_log(sctx, "complete\n");
}

static void s_data_sent(void *sctx)
{
    ((srv_rec *)sctx)->data_sent++;
}

static void s_close(void *sctx, uint32_t code, const char *details)
{
    srv_rec *r = sctx;
    r->closes++;
    r->close_code = code;
    r->close_details = details;
}

static const wp_h2_server_callbacks scb = {s_request,  s_data,      s_trailers,
                                           s_complete, s_data_sent, s_close};

/* ---------- the client: a real nghttp2 client session ---------- */

typedef struct {
    nghttp2_session *s;
    char log[4096];
    size_t body;
    uint32_t goaway_code;
    int32_t goaway_last;
    int goaways;
    uint32_t rst_code;
    int rsts;
} cli;

static int c_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *n, size_t nl,
                    const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    (void)s;
    (void)f;
    (void)flags;
    cli *c = ud;
    size_t at = strlen(c->log);
    snprintf(c->log + at, sizeof(c->log) - at, "[%.*s=%.*s]", (int)nl, n, (int)vl, v);
    return 0;
}

static int c_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                  void *ud)
{
    (void)s;
    (void)flags;
    (void)id;
    cli *c = ud;
    size_t at = strlen(c->log);
    if (len <= 32)
        snprintf(c->log + at, sizeof(c->log) - at, "{%.*s}", (int)len, d);
    c->body += len;
    return 0;
}

static int c_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    (void)s;
    cli *c = ud;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaways++;
        c->goaway_code = f->goaway.error_code;
        c->goaway_last = f->goaway.last_stream_id;
    } else if (f->hd.type == NGHTTP2_RST_STREAM) {
        c->rsts++;
        c->rst_code = f->rst_stream.error_code;
    } else if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
               (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        strcat(c->log, "<end>");
    }
    return 0;
}

static void cli_init(cli *c, uint32_t window)
{
    memset(c, 0, sizeof(*c));
    nghttp2_session_callbacks *cb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_frame);
    nghttp2_option *opt;
    assert_int_equal(nghttp2_option_new(&opt), 0);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    assert_int_equal(nghttp2_session_client_new2(&c->s, cb, c, opt), 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
    assert_int_equal(nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, 1), 0);
}

/* Moves the bytes both ways until neither side has any to send; returns the codec's last
 * receive result (details in *details). */
static int pump(cli *c, wp_h2_server *h, const char **details)
{
    int rc = 0;
    for (int round = 0; round < 100; round++) {
        bool moved = false;
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(c->s, &p)) > 0) {
            moved = true;
            if (rc == 0)
                rc = wp_h2_server_recv(h, (const char *)p, (size_t)n, details);
        }
        wf_strbuf out = WF_STRBUF_INIT;
        long m = wp_h2_server_flush(h, &out);
        assert_true(m >= 0);
        if (m > 0) {
            moved = true;
            nghttp2_session_mem_recv(c->s, (const uint8_t *)out.data, (size_t)m);
        }
        wf_strbuf_free(&out);
        if (!moved)
            break;
    }
    return rc;
}

static const wp_h2_limits lim = {60, 100};

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, 0                            \
    }

/* A client request body of left 'x' bytes; trailers: they follow it. */
typedef struct {
    size_t left;
    bool trailers;
} body_src;

static ssize_t c_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *ud)
{
    (void)s;
    (void)id;
    (void)ud;
    body_src *b = src->ptr;
    size_t n = b->left < len ? b->left : len;
    memset(buf, 'x', n);
    b->left -= n;
    if (b->left == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF | (b->trailers ? NGHTTP2_DATA_FLAG_NO_END_STREAM : 0);
    return (ssize_t)n;
}

/* ---------- tests ---------- */

static void test_preface(void **state)
{
    (void)state;
    assert_int_equal(wp_h2_preface_check(WP_H2_PREFACE "\0\0", WP_H2_PREFACE_LEN + 2), 1);
    assert_int_equal(wp_h2_preface_check("PRI * HT", 8), 0);
    assert_int_equal(wp_h2_preface_check("PRI / HTTP/1.1\r\n", 16), -1);
    assert_int_equal(wp_h2_preface_check("GET / HTTP/1.1\r\n", 16), -1);
}

#define F(n, v)                                                                                    \
    {                                                                                              \
        {n, sizeof(n) - 1},                                                                        \
        {                                                                                          \
            v, sizeof(v) - 1                                                                       \
        }                                                                                          \
    }

static void test_request_translation(void **state)
{
    (void)state;
    h1_header in[] = {F(":method", "POST"),      F(":scheme", "https"), F(":authority", "a.b:80"),
                      F(":path", "/x?y=1"),      F("cookie", "a=1"),    F("host", "other"),
                      F("content-length", "12"), F("cookie", "b=2"),    F("x-y", "z")};
    h1_message m;
    h1_header out[8];
    wf_strbuf cookie = WF_STRBUF_INIT;
    h1_str scheme;
    const char *details = NULL;
    assert_int_equal(wp_h2_request_head(in, 9, false, &m, out, 8, &cookie, &scheme, &details), 0);
    assert_int_equal(m.method.len, 4);
    assert_memory_equal(m.target.p, "/x?y=1", 6);
    assert_int_equal(m.version_minor, 1);
    assert_memory_equal(scheme.p, "https", 5);
    assert_int_equal(m.nheaders, 4); /* host, cookie (joined), content-length, x-y */
    assert_memory_equal(out[0].name.p, "host", 4);
    assert_memory_equal(out[0].value.p, "a.b:80", 6);
    assert_int_equal(out[1].value.len, 8);
    assert_memory_equal(out[1].value.p, "a=1; b=2", 8);
    assert_int_equal(m.framing, H1_BODY_LENGTH);
    assert_int_equal(m.content_length, 12);
    /* END_STREAM on the head: no body, whatever content-length says */
    assert_int_equal(wp_h2_request_head(in, 9, true, &m, out, 8, &cookie, &scheme, &details), 0);
    assert_int_equal(m.framing, H1_BODY_NONE);
    /* no content-length: the body's length is unknown (chunked to an HTTP/1.1 upstream) */
    h1_header get[] = {F(":method", "GET"), F(":scheme", "http"), F(":path", "/"), F("host", "h")};
    assert_int_equal(wp_h2_request_head(get, 4, false, &m, out, 8, &cookie, &scheme, &details), 0);
    assert_int_equal(m.framing, H1_BODY_CHUNKED);
    assert_int_equal(m.nheaders, 1); /* no :authority: the host field stays */
    assert_memory_equal(out[0].value.p, "h", 1);
    /* refused: no :path, unknown pseudo-field, bad content-length, too many fields */
    assert_int_equal(wp_h2_request_head(get, 2, false, &m, out, 8, &cookie, &scheme, &details), -1);
    assert_string_equal(details, "http2.violation.of.messaging.rule");
    h1_header bad[] = {F(":method", "GET"), F(":path", "/"), F(":protocol", "websocket")};
    assert_int_equal(wp_h2_request_head(bad, 3, false, &m, out, 8, &cookie, &scheme, &details), -1);
    h1_header cl[] = {F(":method", "GET"), F(":path", "/"), F("content-length", "1x")};
    assert_int_equal(wp_h2_request_head(cl, 3, false, &m, out, 8, &cookie, &scheme, &details), -1);
    assert_int_equal(wp_h2_request_head(in, 9, false, &m, out, 2, &cookie, &scheme, &details), -1);
    assert_string_equal(details, "http2.too_many_headers");
    /* CONNECT: the authority is the target */
    h1_header con[] = {F(":method", "CONNECT"), F(":authority", "db:5432")};
    assert_int_equal(wp_h2_request_head(con, 2, false, &m, out, 8, &cookie, &scheme, &details), 0);
    assert_memory_equal(m.target.p, "db:5432", 7);
    wf_strbuf_free(&cookie);
}

/* A POST with a body and trailers, answered with HEADERS, DATA and trailers. */
static void test_round_trip(void **state)
{
    (void)state;
    srv_rec r = {0};
    wp_h2_stats st = {0};
    wp_h2_options o = wp_h2_options_default();
    wp_h2_server *h = wp_h2_server_new(&o, &lim, &scb, &r, &st);
    assert_non_null(h);
    cli c;
    cli_init(&c, 65535);
    nghttp2_nv req[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":authority", "svc"),
                        NV(":path", "/p"),     NV("te", "trailers"),  NV("cookie", "a=1"),
                        NV("cookie", "b=2")};
    int32_t id = nghttp2_submit_request(
        c.s, NULL, req, 7,
        &(nghttp2_data_provider){.source.ptr = &(body_src){5, true}, .read_callback = c_read},
        NULL);
    assert_true(id > 0);
    const char *details = NULL;
    assert_int_equal(pump(&c, h, &details), 0);
    nghttp2_nv trl[] = {NV("x-checksum", "abc")};
    assert_int_equal(nghttp2_submit_trailer(c.s, id, trl, 1), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_string_equal(r.log, "req 1 POST /p http [host=svc] [te=trailers] [cookie=a=1; b=2] "
                               "framing=2\ndata xxxxx\ntrailers [x-checksum=abc]\ncomplete\n");
    assert_int_equal(wp_h2_server_streams(h), 1);
    assert_int_equal(st.trailers, 1);

    wp_hdr_list l;
    wp_hdr_list_init(&l);
    WP_HDR_LIST_ADD_LIT(&l, "Content-Type", "text/plain", 10);
    WP_HDR_LIST_ADD_LIT(&l, "Connection", "keep-alive", 10);
    WP_HDR_LIST_ADD_LIT(&l, "Transfer-Encoding", "chunked", 7);
    assert_int_equal(wp_h2_server_respond(h, id, 200, &l, false), 0);
    assert_int_equal(wp_h2_server_data(h, id, "hello", 5, false), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.data_sent, 1);
    wp_hdr_list t;
    wp_hdr_list_init(&t);
    WP_HDR_LIST_ADD_LIT(&t, "Grpc-Status", "0", 1);
    assert_int_equal(wp_h2_server_trailers(h, id, &t), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_string_equal(c.log, "[:status=200][content-type=text/plain]{hello}[grpc-status=0]<end>");
    assert_int_equal(r.closes, 1);
    assert_int_equal(r.close_code, 0);
    assert_null(r.close_details);
    assert_int_equal(wp_h2_server_streams(h), 0);
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);
}

/* The client's window opens only as the body is consumed; a response slice waits for the
 * client's window, and on_data_sent comes once it is all framed. */
static void test_flow_control(void **state)
{
    (void)state;
    srv_rec r = {0};
    wp_h2_options o = wp_h2_options_default();
    o.initial_stream_window_size = 65535;
    o.initial_connection_window_size = 65535;
    wp_h2_server *h = wp_h2_server_new(&o, &lim, &scb, &r, NULL);
    assert_non_null(h);
    cli c;
    cli_init(&c, 100); /* the client takes 100 bytes of response at a time */
    nghttp2_nv req[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":authority", "svc"),
                        NV(":path", "/up")};
    body_src left = {200000, false};
    int32_t id = nghttp2_submit_request(
        c.s, NULL, req, 4, &(nghttp2_data_provider){.source.ptr = &left, .read_callback = c_read},
        NULL);
    assert_true(id > 0);
    const char *details = NULL;
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.body_bytes, 65535); /* the window, no more */
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.body_bytes, 65535); /* nothing consumed, nothing more comes */
    size_t consumed = 0;
    for (int i = 0; i < 10 && r.body_bytes < 200000; i++) {
        wp_h2_server_consume(h, id, r.body_bytes - consumed);
        consumed = r.body_bytes;
        assert_int_equal(pump(&c, h, &details), 0);
        assert_true(r.body_bytes - consumed <= 65535);
    }
    assert_int_equal(r.body_bytes, 200000);
    assert_non_null(strstr(r.log, "complete"));

    static char big[1000];
    memset(big, 'y', sizeof(big));
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    assert_int_equal(wp_h2_server_respond(h, id, 200, &l, false), 0);
    assert_int_equal(wp_h2_server_data(h, id, big, sizeof(big), true), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(c.body, 100); /* the client's window */
    assert_int_equal(r.data_sent, 0);
    nghttp2_session_consume(c.s, id, 100);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(c.body, 200);
    for (int i = 0; i < 8; i++) {
        nghttp2_session_consume(c.s, id, 100);
        assert_int_equal(pump(&c, h, &details), 0);
    }
    assert_int_equal(c.body, 1000);
    assert_int_equal(r.data_sent, 1);
    assert_int_equal(r.closes, 1);
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);
}

/* A client's RST_STREAM closes the stream with Envoy's details; a refused stream is reset. */
static void test_remote_reset_and_refuse(void **state)
{
    (void)state;
    srv_rec r = {0};
    wp_h2_stats st = {0};
    wp_h2_options o = wp_h2_options_default();
    wp_h2_server *h = wp_h2_server_new(&o, &lim, &scb, &r, &st);
    cli c;
    cli_init(&c, 65535);
    nghttp2_nv req[] = {NV(":method", "GET"), NV(":scheme", "http"), NV(":authority", "svc"),
                        NV(":path", "/")};
    int32_t id = nghttp2_submit_request(c.s, NULL, req, 4, NULL, NULL);
    const char *details = NULL;
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.streams, 1);
    nghttp2_submit_rst_stream(c.s, 0, id, NGHTTP2_CANCEL);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.closes, 1);
    assert_int_equal(r.close_code, NGHTTP2_CANCEL);
    assert_string_equal(r.close_details, "http2.remote_reset");
    assert_int_equal(st.rx_reset, 1);
    r.refuse = true;
    nghttp2_submit_request(c.s, NULL, req, 4, NULL, NULL);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(c.rsts, 1);
    assert_int_equal(c.rst_code, NGHTTP2_REFUSED_STREAM);
    assert_int_equal(st.tx_reset, 1);
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);
}

/* A connection-specific field: Envoy's default ends the connection with GOAWAY
 * PROTOCOL_ERROR (stream_error_on_invalid_http_message false). */
static void test_invalid_header_goaway(void **state)
{
    (void)state;
    srv_rec r = {0};
    wp_h2_stats st = {0};
    wp_h2_options o = wp_h2_options_default();
    wp_h2_server *h = wp_h2_server_new(&o, &lim, &scb, &r, &st);
    cli c;
    cli_init(&c, 65535);
    nghttp2_nv req[] = {NV(":method", "GET"), NV(":scheme", "http"), NV(":authority", "svc"),
                        NV(":path", "/"), NV("connection", "keep-alive")};
    nghttp2_submit_request(c.s, NULL, req, 5, NULL, NULL);
    const char *details = NULL;
    assert_int_equal(pump(&c, h, &details), -1);
    assert_string_equal(details, "http2.invalid.header.field");
    assert_int_equal(c.goaways, 1);
    assert_int_equal(c.goaway_code, NGHTTP2_PROTOCOL_ERROR);
    assert_int_equal(st.rx_messaging_error, 1);
    assert_int_equal(st.goaway_sent, 1);
    assert_int_equal(r.streams, 0);
    assert_true(wp_h2_server_done(h));
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);

    /* malformed framing (a DATA frame on stream 0) */
    h = wp_h2_server_new(&o, &lim, &scb, &r, &st);
    cli_init(&c, 65535);
    assert_int_equal(pump(&c, h, &details), 0);
    static const char bad[] = "\x00\x00\x01\x00\x00\x00\x00\x00\x00x";
    assert_int_equal(wp_h2_server_recv(h, bad, 10, &details), 0); /* nghttp2 answers it */
    wf_strbuf out = WF_STRBUF_INIT;
    assert_true(wp_h2_server_flush(h, &out) > 0);
    nghttp2_session_mem_recv(c.s, (const uint8_t *)out.data, out.len);
    wf_strbuf_free(&out);
    assert_int_equal(c.goaways, 1);
    assert_int_equal(c.goaway_code, NGHTTP2_PROTOCOL_ERROR);
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);
}

/* A head over max_headers_count or max_request_headers_kb resets the stream. */
static void test_header_overflow(void **state)
{
    (void)state;
    srv_rec r = {0};
    wp_h2_stats st = {0};
    wp_h2_options o = wp_h2_options_default();
    wp_h2_limits small = {1, 7}; /* pseudo-fields count, as in Envoy's header map */
    wp_h2_server *h = wp_h2_server_new(&o, &small, &scb, &r, &st);
    cli c;
    cli_init(&c, 65535);
    nghttp2_nv req[] = {NV(":method", "GET"), NV(":scheme", "http"), NV(":authority", "svc"),
                        NV(":path", "/"),     NV("a", "1"),          NV("b", "2"),
                        NV("c", "3"),         NV("d", "4")};
    nghttp2_submit_request(c.s, NULL, req, 7, NULL, NULL); /* 7 fields: fine */
    const char *details = NULL;
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.streams, 1);
    nghttp2_submit_request(c.s, NULL, req, 8, NULL, NULL); /* 8 */
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(r.streams, 1);
    assert_int_equal(c.rsts, 1);
    assert_int_equal(st.header_overflow, 1);
    static char v[1100];
    memset(v, 'v', sizeof(v));
    nghttp2_nv big[] = {NV(":method", "GET"),
                        NV(":scheme", "http"),
                        NV(":authority", "svc"),
                        NV(":path", "/"),
                        {(uint8_t *)"x", (uint8_t *)v, 1, sizeof(v), 0}};
    nghttp2_submit_request(c.s, NULL, big, 5, NULL, NULL);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(c.rsts, 2);
    assert_int_equal(st.header_overflow, 2);
    assert_int_equal(c.goaways, 0); /* a stream error, not the connection's */
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);
}

/* Drain: the shutdown notice (last stream id 2^31-1), then the final GOAWAY with the last
 * stream processed; a stream in flight finishes; the session is done once it has. */
static void test_goaway_drain(void **state)
{
    (void)state;
    srv_rec r = {0};
    wp_h2_options o = wp_h2_options_default();
    wp_h2_server *h = wp_h2_server_new(&o, &lim, &scb, &r, NULL);
    cli c;
    cli_init(&c, 65535);
    nghttp2_nv req[] = {NV(":method", "GET"), NV(":scheme", "http"), NV(":authority", "svc"),
                        NV(":path", "/")};
    int32_t id = nghttp2_submit_request(c.s, NULL, req, 4, NULL, NULL);
    const char *details = NULL;
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(wp_h2_server_goaway(h, true), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(c.goaways, 1);
    assert_int_equal(c.goaway_last, 2147483647);
    assert_int_equal(wp_h2_server_goaway(h, false), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_int_equal(c.goaways, 2);
    assert_int_equal(c.goaway_last, id);
    assert_int_equal(c.goaway_code, NGHTTP2_NO_ERROR);
    assert_false(wp_h2_server_done(h)); /* the stream is in flight */
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    assert_int_equal(wp_h2_server_respond(h, id, 204, &l, true), 0);
    assert_int_equal(pump(&c, h, &details), 0);
    assert_string_equal(c.log, "[:status=204]<end>");
    assert_true(wp_h2_server_done(h));
    wp_h2_server_free(h);
    nghttp2_session_del(c.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preface),
        cmocka_unit_test(test_request_translation),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_flow_control),
        cmocka_unit_test(test_remote_reset_and_refuse),
        cmocka_unit_test(test_invalid_header_goaway),
        cmocka_unit_test(test_header_overflow),
        cmocka_unit_test(test_goaway_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
