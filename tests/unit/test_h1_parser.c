/*
 * test_h1_parser.c - the HTTP/1.x pull parser (src/http/h1_parser.h): request and status
 * lines, fields, keep-alive, Expect, Upgrade/CONNECT, Content-Length, chunked with
 * extensions and trailers, read-until-close, pipelining, every error code (RFC 9112
 * smuggling defences), and the same results whatever the input split.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/h1_parser.h"

/* ---- a caller that records everything the parser reports as a text trace ---- */

typedef struct {
    char out[1 << 17];
    size_t olen;
    char body[1 << 16];
    size_t blen;
    bool upgraded;
} trace;

static void tr_add(trace *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->out + t->olen, sizeof t->out - t->olen, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof t->out - t->olen);
    t->olen += (size_t)n;
}

static void tr_flush_body(trace *t)
{
    if (t->blen)
        tr_add(t, "B[%.*s]", (int)t->blen, t->body);
    t->blen = 0;
}

static void tr_fields(trace *t, const h1_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tr_add(t, "%.*s=%.*s|", (int)h[i].name.len, h[i].name.p, (int)h[i].value.len, h[i].value.p);
}

static void tr_head(trace *t, const h1_message *m)
{
    tr_add(t, "H<%.*s %.*s %d %.*s 1.%d f%d cl%llu ka%d ex%d up%d ", (int)m->method.len,
           m->method.p, (int)m->target.len, m->target.p, m->status, (int)m->reason.len, m->reason.p,
           m->version_minor, (int)m->framing, (unsigned long long)m->content_length, m->keep_alive,
           m->expect_continue, m->upgrade);
    tr_fields(t, m->headers, m->nheaders);
    tr_add(t, ">");
}

/* Records one event; returns false when parsing must stop for this input. */
static bool tr_event(trace *t, h1_parser *p, h1_event ev)
{
    if (ev != H1_EV_BODY && ev != H1_EV_NEED_MORE)
        tr_flush_body(t);
    switch (ev) {
    case H1_EV_HEADERS:
        tr_head(t, &p->msg);
        return true;
    case H1_EV_BODY:
        assert_true(t->blen + p->data_len <= sizeof t->body);
        memcpy(t->body + t->blen, p->data, p->data_len);
        t->blen += p->data_len;
        return true;
    case H1_EV_TRAILERS:
        tr_add(t, "T<");
        tr_fields(t, p->msg.trailers, p->msg.ntrailers);
        tr_add(t, ">");
        return true;
    case H1_EV_DONE:
        tr_add(t, "D;");
        return true;
    case H1_EV_UPGRADED:
        if (!t->upgraded)
            tr_add(t, "U");
        t->upgraded = true;
        return false;
    case H1_EV_ERROR:
        tr_add(t, "E:%s", h1_error_name(p->error));
        return false;
    default:
        return false;
    }
}

typedef struct {
    h1_kind kind;
    h1_answers answers;
    size_t max_headers, max_head;
    bool eof;
} feed_opts;

/* Feeds input in pieces (cuts: sorted offsets where a new read starts) like a real
 * connection: unconsumed bytes stay at the start of the buffer. */
static void run_cuts(trace *t, const feed_opts *o, const char *in, size_t len, const size_t *cuts,
                     size_t ncuts)
{
    h1_header hdrs[64];
    h1_parser p;
    h1_parser_init(&p, o->kind, hdrs, o->max_headers ? o->max_headers : 64, o->max_head);
    h1_parser_set_answers(&p, o->answers);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    size_t have = 0, off = 0;
    bool stop = false;
    memset(t, 0, sizeof *t);
    for (size_t k = 0; k <= ncuts; k++) {
        size_t next = k < ncuts ? cuts[k] : len;
        memcpy(buf + have, in + off, next - off);
        have += next - off;
        off = next;
        while (!stop) {
            h1_event ev;
            size_t n = h1_parse(&p, buf, have, &ev);
            assert_true(n <= have);
            bool go = tr_event(t, &p, ev);
            memmove(buf, buf + n, have - n);
            have -= n;
            if (!go) {
                stop = ev == H1_EV_ERROR;
                break;
            }
        }
    }
    if (o->eof && !stop && !t->upgraded) {
        h1_event ev = h1_parse_eof(&p);
        tr_event(t, &p, ev);
        tr_add(t, "EOF%d", (int)ev);
    }
    tr_flush_body(t);
    if (t->upgraded)
        tr_add(t, "[%.*s]", (int)have, buf);
    free(buf);
}

static trace *one_shot(const feed_opts *o, const char *in, size_t len)
{
    trace *t = malloc(sizeof *t);
    assert_non_null(t);
    run_cuts(t, o, in, len, NULL, 0);
    return t;
}

/* One-shot, one byte at a time, and two pieces at every offset must all agree. */
static void check_splits(const feed_opts *o, const char *in, size_t len, const char *want)
{
    trace *ref = one_shot(o, in, len);
    if (want && strcmp(ref->out, want) != 0) {
        print_error("got:  %s\nwant: %s\n", ref->out, want);
        fail();
    }
    trace *t = malloc(sizeof *t);
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    assert_non_null(t);
    assert_non_null(cuts);
    for (size_t i = 0; i < len; i++)
        cuts[i] = i + 1;
    run_cuts(t, o, in, len, cuts, len ? len - 1 : 0);
    if (strcmp(t->out, ref->out) != 0)
        print_error("bytewise: %s\none-shot: %s\n", t->out, ref->out);
    assert_string_equal(t->out, ref->out);
    for (size_t i = 1; i < len; i++) {
        run_cuts(t, o, in, len, &i, 1);
        if (strcmp(t->out, ref->out) != 0)
            print_error("split at %zu: %s\none-shot: %s\n", i, t->out, ref->out);
        assert_string_equal(t->out, ref->out);
    }
    free(cuts);
    free(t);
    free(ref);
}

static const feed_opts REQ = {H1_REQUEST, H1_ANSWERS_OTHER, 0, 0, true};
static const feed_opts RESP = {H1_RESPONSE, H1_ANSWERS_OTHER, 0, 0, true};

static void req(const char *in, const char *want)
{
    check_splits(&REQ, in, strlen(in), want);
}

static void resp(const char *in, const char *want)
{
    check_splits(&RESP, in, strlen(in), want);
}

static void req_err(const char *in, const char *err)
{
    trace *t = one_shot(&REQ, in, strlen(in));
    const char *e = strstr(t->out, "E:");
    if (!e || strcmp(e + 2, err) != 0)
        print_error("input %s\ntrace %s\nwant error %s\n", in, t->out, err);
    assert_non_null(e);
    assert_string_equal(e + 2, err);
    free(t);
    check_splits(&REQ, in, strlen(in), NULL);
}

static void resp_err(const char *in, const char *err)
{
    trace *t = one_shot(&RESP, in, strlen(in));
    const char *e = strstr(t->out, "E:");
    assert_non_null(e);
    assert_string_equal(e + 2, err);
    free(t);
    check_splits(&RESP, in, strlen(in), NULL);
}

/* ---- requests ---- */

static void test_simple_get(void **state)
{
    req("GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent:  curl/8 \r\n\r\n",
        "H<GET /index.html?q=1 0  1.1 f0 cl0 ka1 ex0 up0 Host=example.com|User-Agent=curl/8|>"
        "D;EOF0");
}

static void test_message_struct(void **state)
{
    const char *in = "POST /p HTTP/1.1\r\nHost: h\r\ncontent-length: 3\r\n\r\nabc";
    h1_header h[8];
    h1_parser p;
    h1_parser_init(&p, H1_REQUEST, h, 8, 0);
    assert_int_equal(p.max_head, H1_DEFAULT_MAX_HEAD_BYTES);
    h1_event ev;
    size_t n = h1_parse(&p, in, strlen(in), &ev);
    assert_int_equal(ev, H1_EV_HEADERS);
    assert_int_equal(n, strlen(in) - 3);
    assert_int_equal(p.msg.head_len, n);
    assert_int_equal(p.msg.framing, H1_BODY_LENGTH);
    assert_int_equal(p.msg.content_length, 3);
    assert_ptr_equal(p.msg.method.p, in);
    const h1_header *cl = h1_find_header(p.msg.headers, p.msg.nheaders, "Content-Length");
    assert_non_null(cl);
    assert_ptr_equal(cl->value.p, in + n - 5);
    assert_null(h1_find_header(p.msg.headers, p.msg.nheaders, "x-missing"));
    n = h1_parse(&p, in + n, 3, &ev);
    assert_int_equal(ev, H1_EV_BODY);
    assert_int_equal(n, 3);
    assert_int_equal(p.data_len, 3);
    assert_int_equal(h1_parse(&p, "", 0, &ev), 0);
    assert_int_equal(ev, H1_EV_DONE);
    assert_int_equal(h1_parse(&p, "", 0, &ev), 0);
    assert_int_equal(ev, H1_EV_NEED_MORE);
}

static void test_keep_alive(void **state)
{
    req("GET / HTTP/1.0\r\n\r\n", "H<GET / 0  1.0 f0 cl0 ka0 ex0 up0 >D;EOF0");
    req("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
        "H<GET / 0  1.0 f0 cl0 ka1 ex0 up0 Connection=Keep-Alive|>D;EOF0");
    req("GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n",
        "H<GET / 0  1.1 f0 cl0 ka0 ex0 up0 Connection=foo, close|>D;EOF0");
    resp("HTTP/1.1 200 OK\r\n\r\nbody", "H<  200 OK 1.1 f3 cl0 ka0 ex0 up0 >B[body]D;EOF4");
}

static void test_expect_continue(void **state)
{
    req("PUT /u HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\nhi",
        "H<PUT /u 0  1.1 f1 cl2 ka1 ex1 up0 Expect=100-Continue|Content-Length=2|>B[hi]D;EOF0");
    req("PUT /u HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
        "H<PUT /u 0  1.0 f0 cl0 ka0 ex0 up0 Expect=100-continue|>D;EOF0");
}

static void test_upgrade(void **state)
{
    req("GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nrawbytes",
        "H<GET /ws 0  1.1 f0 cl0 ka1 ex0 up1 Connection=Upgrade|Upgrade=websocket|>D;U"
        "[rawbytes]");
    req("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n",
        "H<GET /ws 0  1.1 f0 cl0 ka1 ex0 up0 Upgrade=websocket|>D;EOF0");
    req("CONNECT host:443 HTTP/1.1\r\nHost: host:443\r\n\r\n\x16\x03",
        "H<CONNECT host:443 0  1.1 f0 cl0 ka1 ex0 up1 Host=host:443|>D;U[\x16\x03]");
    /* the upgrade was refused: back to HTTP */
    h1_header h[4];
    h1_parser p;
    h1_event ev;
    const char *in = "GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n";
    h1_parser_init(&p, H1_REQUEST, h, 4, 0);
    assert_int_equal(h1_parse(&p, in, strlen(in), &ev), strlen(in));
    h1_parse(&p, "", 0, &ev);
    assert_int_equal(ev, H1_EV_DONE);
    assert_int_equal(h1_parse(&p, "GET", 3, &ev), 0);
    assert_int_equal(ev, H1_EV_UPGRADED);
    assert_int_equal(h1_parse_eof(&p), H1_EV_NEED_MORE);
    h1_parser_reset(&p);
    assert_int_equal(h1_parse(&p, "GET / HTTP/1.1\r\n\r\n", 18, &ev), 18);
    assert_int_equal(ev, H1_EV_HEADERS);
}

static void test_content_length(void **state)
{
    req("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        "H<POST / 0  1.1 f1 cl5 ka1 ex0 up0 Content-Length=5|>B[hello]D;EOF0");
    req("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        "H<POST / 0  1.1 f0 cl0 ka1 ex0 up0 Content-Length=0|>D;EOF0");
    req("POST / HTTP/1.1\r\nContent-Length: 3, 3\r\ncontent-length: 3\r\n\r\nabc",
        "H<POST / 0  1.1 f1 cl3 ka1 ex0 up0 Content-Length=3, 3|content-length=3|>B[abc]D;"
        "EOF0");
}

static void test_chunked(void **state)
{
    req("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n1A;name=\"v\" ; x\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
        "H<POST / 0  1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=chunked|>"
        "B[helloabcdefghijklmnopqrstuvwxyz]T<>D;EOF0");
    req("POST / HTTP/1.1\r\nTransfer-Encoding:\r\nTransfer-Encoding: Chunked\r\n\r\n"
        "3 ;ext\r\nabc\r\n000\r\nX-Sum: 1\r\nX-Other:  two \r\n\r\n",
        "H<POST / 0  1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=|Transfer-Encoding=Chunked|>"
        "B[abc]T<X-Sum=1|X-Other=two|>D;EOF0");
    resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab",
         "H<  200 OK 1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=chunked|>B[ab]E:truncatedEOF6");
}

static void test_pipelined(void **state)
{
    req("\r\nGET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nxy\r\n"
        "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
        "GET /d HTTP/1.0\r\n\r\n",
        "H<GET /a 0  1.1 f0 cl0 ka1 ex0 up0 >D;"
        "H<POST /b 0  1.1 f1 cl2 ka1 ex0 up0 Content-Length=2|>B[xy]D;"
        "H<POST /c 0  1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=chunked|>B[z]T<>D;"
        "H<GET /d 0  1.0 f0 cl0 ka0 ex0 up0 >D;EOF0");
}

/* Empty lines before a request line, CRLF or bare LF, are skipped (RFC 9112 §2.2; a bare LF
 * was a 400 before). */
static void test_empty_lines_before_request(void **state)
{
    (void)state;
    req("\n\r\n\nGET /a HTTP/1.1\r\n\r\n\nGET /b HTTP/1.1\r\n\r\n",
        "H<GET /a 0  1.1 f0 cl0 ka1 ex0 up0 >D;H<GET /b 0  1.1 f0 cl0 ka1 ex0 up0 >D;EOF0");
}

/* ---- responses ---- */

static void test_responses(void **state)
{
    resp("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\n"
         "Content-Length: 0\r\n\r\n",
         "H<  200 OK 1.1 f1 cl2 ka1 ex0 up0 Content-Length=2|>B[ok]D;"
         "H<  404 Not Found 1.1 f0 cl0 ka1 ex0 up0 Content-Length=0|>D;EOF0");
    resp("HTTP/1.1 204\r\n\r\nHTTP/1.1 304 \r\nContent-Length: 10\r\n\r\n",
         "H<  204  1.1 f0 cl0 ka1 ex0 up0 >D;"
         "H<  304  1.1 f0 cl0 ka1 ex0 up0 Content-Length=10|>D;EOF0");
    resp("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
         "H<  100 Continue 1.1 f0 cl0 ka1 ex0 up0 >D;"
         "H<  200 OK 1.1 f1 cl1 ka1 ex0 up0 Content-Length=1|>B[x]D;EOF0");
    resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05",
         "H<  101 Switching Protocols 1.1 f0 cl0 ka1 ex0 up1 Upgrade=websocket|>D;U[\x81\x05]");
    /* Proxy-Connection: close ends the connection too (Envoy's shouldCloseConnection) */
    resp("HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 0\r\n\r\n",
         "H<  200 OK 1.1 f0 cl0 ka0 ex0 up0 Proxy-Connection=close|Content-Length=0|>D;EOF0");
    resp("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
         "H<  200 OK 1.1 f1 cl5 ka1 ex0 up0 Content-Length=5|>B[ab]E:truncatedEOF6");
}

static void test_response_answers(void **state)
{
    feed_opts o = RESP;
    o.answers = H1_ANSWERS_HEAD;
    const char *in = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nHTTP/1.1 200 OK\r\n\r\nx";
    check_splits(&o, in, strlen(in),
                 "H<  200 OK 1.1 f0 cl0 ka1 ex0 up0 Content-Length=9|>D;"
                 "H<  200 OK 1.1 f3 cl0 ka0 ex0 up0 >B[x]D;EOF4");
    o.answers = H1_ANSWERS_CONNECT;
    in = "HTTP/1.1 200 Connection established\r\n\r\ntunnel";
    check_splits(&o, in, strlen(in),
                 "H<  200 Connection established 1.1 f0 cl0 ka1 ex0 up1 >D;U[tunnel]");
}

/* ---- errors ---- */

static void test_err_framing(void **state)
{
    req_err("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            "cl_and_te");
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
             "cl_and_te");
    req_err("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "cl_different");
    req_err("POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n", "cl_different");
    req_err("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "cl_invalid");
    req_err("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", "cl_invalid");
    req_err("POST / HTTP/1.1\r\nContent-Length: 1a\r\n\r\n", "cl_invalid");
    req_err("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", "cl_invalid");
    req_err("POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n", "cl_invalid");
    req_err("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "te_not_chunked");
    req_err("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "te_not_chunked");
    req_err("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "te_not_chunked");
    req_err("POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", "te_not_chunked");
    req_err("POST / HTTP/1.1\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", "te_not_chunked");
    req_err("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "te_invalid");
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "te_invalid");
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", "te_invalid");
    /* as Envoy's codec: a response TE other than exactly one chunked ("unsupported transfer
     * encoding"), TE in a 1xx or 204, a Content-Length other than 0 in a 1xx or 204, and a
     * repeated Content-Length are protocol errors */
    resp_err("HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz", "te_invalid");
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "te_invalid");
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n", "te_invalid");
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
             "\r\n",
             "te_invalid");
    resp_err("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", "cl_invalid");
    resp_err("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", "te_invalid");
    resp_err("HTTP/1.1 103 Early Hints\r\nContent-Length: 1\r\n\r\n", "cl_invalid");
    resp("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
         "H<  204 No Content 1.1 f0 cl0 ka1 ex0 up0 Content-Length=0|>D;EOF0");
    resp_err("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", "cl_different");
    resp_err("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", "cl_different");
    /* not HTTP at all: fails with the first bytes, no blank line needed */
    resp_err("hello", "invalid_version");
    resp_err("SSH-2.0-OpenSSH_9.6\r\n", "invalid_version");
    resp_err("-ERR unknown command\r\n", "invalid_version");
    resp_err("HTTX", "invalid_version");
}

/* Envoy answers a request whose Transfer-Encoding is anything but exactly one "chunked"
 * with 501: an earlier coding before chunked must not be dropped and the body forwarded as
 * plain chunked (that changes the body's meaning). */
static void test_err_te_not_only_chunked(void **state)
{
    static const char *const te[] = {
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: identity, chunked\r\n",
        "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: CHUNKED,chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n",
        "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
        "Transfer-Encoding: \"gzip\", chunked\r\n",
        "Transfer-Encoding: chunked;q=1\r\n",
    };
    char buf[256];
    for (size_t i = 0; i < sizeof te / sizeof te[0]; i++) {
        int n = snprintf(buf, sizeof buf,
                         "POST / HTTP/1.1\r\nHost: a\r\n%s\r\n5\r\nhello\r\n0\r\n\r\n", te[i]);
        assert_true(n > 0 && (size_t)n < sizeof buf);
        req_err(buf, "te_not_chunked");
    }
    /* still accepted: one chunked coding, any case, empty list elements ignored */
    req("POST / HTTP/1.1\r\nTransfer-Encoding: , CHUNKED ,\r\n\r\n0\r\n\r\n",
        "H<POST / 0  1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=, CHUNKED ,|>T<>D;EOF0");
    /* Content-Length with Transfer-Encoding stays the 400 smuggling rejection */
    req_err("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
            "cl_and_te");
    req_err("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "duplicate_host");
}

static void test_err_chunks(void **state)
{
    const char *pre = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    static const struct {
        const char *body, *err;
    } cases[] = {
        {"zz\r\n", "chunk_size"},
        {"\r\n", "chunk_size"},
        {"-1\r\n", "chunk_size"},
        {"10000000000000000\r\n", "chunk_size"},
        {"5 x\r\n", "chunk_size"},
        {"5;a=\x01\r\n", "chunk_ext"},
        {"1\r\nab\r\n", "chunk_end"},
        {"5\nhello\r\n", "bare_lf"},
        {"5\rhello\r\n", "bare_cr"},
        {"1\r\na\r\r\n", "bare_cr"},
        {"5;x\n", "bare_lf"},
        {"5;x\0y\r\n", "nul"},
        {"0\r\nX: a\nY: b\r\n\r\n", "bare_lf"},
        {"0\r\nX : a\r\n\r\n", "ws_before_colon"},
    };
    char in[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(pre), bl = strlen(cases[i].body);
        if (strcmp(cases[i].err, "nul") == 0)
            bl = 7;
        memcpy(in, pre, n);
        memcpy(in + n, cases[i].body, bl);
        trace *t = one_shot(&REQ, in, n + bl);
        const char *e = strstr(t->out, "E:");
        if (!e || strcmp(e + 2, cases[i].err) != 0)
            print_error("case %zu: %s\n", i, t->out);
        assert_non_null(e);
        assert_string_equal(e + 2, cases[i].err);
        free(t);
        check_splits(&REQ, in, n + bl, NULL);
    }
    char ext[H1_MAX_CHUNK_EXT + 128];
    int n = snprintf(ext, sizeof ext, "%s1;", pre);
    memset(ext + n, 'e', H1_MAX_CHUNK_EXT + 1);
    memcpy(ext + n + H1_MAX_CHUNK_EXT + 1, "\r\n", 3);
    req_err(ext, "chunk_ext");
    /* exactly H1_MAX_CHUNK_EXT extension bytes after the ";" are fine */
    ext[n + H1_MAX_CHUNK_EXT] = '\r';
    ext[n + H1_MAX_CHUNK_EXT + 1] = '\n';
    ext[n + H1_MAX_CHUNK_EXT + 2] = 'x';
    ext[n + H1_MAX_CHUNK_EXT + 3] = '\0';
    trace *t = one_shot(&REQ, ext, strlen(ext));
    assert_non_null(strstr(t->out, "B[x]"));
    free(t);
}

static void test_err_fields(void **state)
{
    req_err("GET / HTTP/1.1\r\nHost : a\r\n\r\n", "ws_before_colon");
    req_err("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", "ws_before_colon");
    req_err("GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n", "obs_fold");
    req_err("GET / HTTP/1.1\r\n\tX-A: 1\r\n\r\n", "obs_fold");
    req_err("GET / HTTP/1.1\r\nX-A: 1\rX-B: 2\r\n\r\n", "bare_cr");
    req_err("GET / HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n", "bare_lf");
    req_err("GET / HTTP/1.1\n\n", "bare_lf");
    req_err("GET / HTTP/1.1\r\nX-A: a\x01z\r\n\r\n", "invalid_field_value");
    req_err("GET / HTTP/1.1\r\nX-A: a\x7fz\r\n\r\n", "invalid_field_value");
    req_err("GET / HTTP/1.1\r\nX(A): 1\r\n\r\n", "invalid_field_name");
    req_err("GET / HTTP/1.1\r\nX\x01: 1\r\n\r\n", "invalid_field_name");
    req_err("GET / HTTP/1.1\r\n: 1\r\n\r\n", "invalid_field_name");
    req_err("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "invalid_field_name");
    req_err("GET / HTTP/1.1\r\nX-\xc3\xa9: 1\r\n\r\n", "invalid_field_name");
    static const char nul_value[] = "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
    static const char nul_name[] = "GET / HTTP/1.1\r\nX\0A: 1\r\n\r\n";
    /* a NUL before a bare LF is the fault reported, in one piece or byte by byte (fuzzer) */
    static const char nul_then_lf[] = "GET / HTTP/1.1\r\nX-A: \0\0\x1d\n\r\n";
    const char *ins[] = {nul_value, nul_name, nul_then_lf};
    size_t lens[] = {sizeof nul_value - 1, sizeof nul_name - 1, sizeof nul_then_lf - 1};
    for (int i = 0; i < 3; i++) {
        trace *t = one_shot(&REQ, ins[i], lens[i]);
        assert_string_equal(t->out, "E:nul");
        free(t);
        check_splits(&REQ, ins[i], lens[i], "E:nul");
    }
    /* obs-text is allowed in values */
    req("GET / HTTP/1.1\r\nX-A: caf\xc3\xa9\t1\r\n\r\n",
        "H<GET / 0  1.1 f0 cl0 ka1 ex0 up0 X-A=caf\xc3\xa9\t1|>D;EOF0");
}

static void test_err_start_line(void **state)
{
    req_err("G(T / HTTP/1.1\r\n\r\n", "invalid_method");
    req_err("GET\x01 / HTTP/1.1\r\n\r\n", "invalid_method");
    req_err("GET /a\x7f HTTP/1.1\r\n\r\n", "invalid_target");
    req_err("GET /\xc3\xa9 HTTP/1.1\r\n\r\n", "invalid_target");
    req_err("GET / HTTP/2.0\r\n\r\n", "invalid_version");
    req_err("GET / HTTP/1.2\r\n\r\n", "invalid_version");
    req_err("GET / http/1.1\r\n\r\n", "invalid_version");
    req_err("GET / HTTP/1.1 \r\n\r\n", "invalid_version");
    req_err("GET  / HTTP/1.1\r\n\r\n", "invalid_start_line");
    req_err("GET /\r\n\r\n", "invalid_start_line");
    req_err("GET\r\n\r\n", "invalid_start_line");
    req_err(" GET / HTTP/1.1\r\n\r\n", "invalid_start_line");
    resp_err("HTTP/1.1 20 OK\r\n\r\n", "invalid_start_line");
    resp_err("HTTP/1.1 200OK\r\n\r\n", "invalid_start_line");
    resp_err("HTTP/1.1 099 X\r\n\r\n", "invalid_start_line");
    resp_err("HTTP/1.1 200 O\x01K\r\n\r\n", "invalid_start_line");
    resp_err("HTTP/3 200 OK\r\n\r\n", "invalid_version");
    resp_err("\r\n\r\n", "invalid_version");
}

static void test_err_limits(void **state)
{
    size_t big = H1_DEFAULT_MAX_HEAD_BYTES + 100;
    char *in = malloc(big + 1);
    assert_non_null(in);
    int n = snprintf(in, big, "GET / HTTP/1.1\r\nX-Big: ");
    memset(in + n, 'a', big - (size_t)n);
    in[big] = '\0';
    trace *t = one_shot(&REQ, in, big);
    assert_string_equal(t->out, "E:headers_too_large");
    free(t);
    /* exactly at the limit is fine; one byte more is not */
    feed_opts o = REQ;
    o.max_head = 64;
    const char *fits = "GET / HTTP/1.1\r\nX-A: 012345678901234567890123456789012345678\r\n\r\n";
    assert_int_equal(strlen(fits), 64);
    check_splits(&o, fits, 64, NULL);
    t = one_shot(&o, fits, 64);
    assert_null(strstr(t->out, "E:"));
    free(t);
    const char *over = "GET / HTTP/1.1\r\nX-A: 0123456789012345678901234567890123456789\r\n\r\n";
    check_splits(&o, over, strlen(over), "E:headers_too_large");
    /* trailers count against the same limit */
    const char *tr = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: "
                     "0123456789012345678901234567890123456789012345678901234567890\r\n\r\n";
    check_splits(&o, tr, strlen(tr),
                 "H<POST / 0  1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=chunked|>"
                 "E:headers_too_large");
    o.max_head = 0;
    o.max_headers = 2;
    const char *three = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    check_splits(&o, three, strlen(three), "E:too_many_headers");
    const char *two = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n";
    check_splits(&o, two, strlen(two), "H<GET / 0  1.1 f0 cl0 ka1 ex0 up0 A=1|B=2|>D;EOF0");
    /* trailers share the header array */
    const char *tt =
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\n\r\n";
    check_splits(&o, tt, strlen(tt),
                 "H<POST / 0  1.1 f2 cl0 ka1 ex0 up0 Transfer-Encoding=chunked|>"
                 "E:too_many_headers");
    free(in);
}

static void test_eof(void **state)
{
    req("GET / HTTP/1.1\r\n", "E:truncatedEOF6");
    req("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab",
        "H<POST / 0  1.1 f1 cl4 ka1 ex0 up0 Content-Length=4|>B[ab]E:truncatedEOF6");
    req("", "EOF0");
}

static void test_error_names(void **state)
{
    for (int i = 0; i < H1_ERR_COUNT_; i++) {
        const char *name = h1_error_name((h1_error)i);
        assert_non_null(name);
        assert_true(strlen(name) > 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(name, h1_error_name((h1_error)j));
        if (i != H1_OK)
            assert_non_null(strstr(h1_error_details((h1_error)i), "http1."));
    }
    assert_string_equal(h1_error_name(H1_ERR_COUNT_), "unknown");
    assert_int_equal(h1_error_status(H1_ERR_CL_AND_TE), 400);
    assert_int_equal(h1_error_status(H1_ERR_HEADERS_TOO_LARGE), 431);
    assert_int_equal(h1_error_status(H1_ERR_TOO_MANY_HEADERS), 431);
    assert_int_equal(h1_error_status(H1_ERR_TE_NOT_CHUNKED), 501);
    assert_string_equal(h1_error_details(H1_ERR_CL_AND_TE),
                        "http1.content_length_and_chunked_not_allowed");
    assert_string_equal(h1_error_details(H1_ERR_HEADERS_TOO_LARGE), "http1.headers_too_large");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_get),
        cmocka_unit_test(test_message_struct),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_empty_lines_before_request),
        cmocka_unit_test(test_responses),
        cmocka_unit_test(test_response_answers),
        cmocka_unit_test(test_err_framing),
        cmocka_unit_test(test_err_te_not_only_chunked),
        cmocka_unit_test(test_err_chunks),
        cmocka_unit_test(test_err_fields),
        cmocka_unit_test(test_err_start_line),
        cmocka_unit_test(test_err_limits),
        cmocka_unit_test(test_eof),
        cmocka_unit_test(test_error_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
