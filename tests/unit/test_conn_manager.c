/*
 * test_conn_manager.c - the HTTP connection manager (proxy/http/conn.c: stream lifecycle,
 * keep-alive, local replies, timeouts, access-log and stats hand-off) on a real worker loop
 * driven on the test's thread (proxy_loop.h, shared with test_router.c): one listener on a
 * loopback port the kernel picks routes to cluster "c", whose one endpoint is a loopback
 * socket the test serves itself with scripted HTTP/1.1 answers (or a bound socket that refuses
 * connections). Client sockets write raw bytes; the test checks what they read back
 * byte-exact (the date and x-envoy-upstream-service-time values masked as "*"), whether the
 * proxy closed the connection, the http.ingress_http.* counters, and the access log file's
 * lines, as Envoy answers (envoy-istio-behaviour.md, Envoy's conn_manager_impl.cc):
 *  - keep-alive: requests on one connection are answered on it, one downstream connection
 *    counted; "Connection: close" closes after the answer; pipelined requests are answered in
 *    order;
 *  - HTTP/1.0 (accept_http_10): closed after the answer unless "Connection: keep-alive";
 *    without accept_http_10 426 Upgrade Required (low_version);
 *  - codec errors: a head over max_request_headers_kb is 431, a malformed request 400, a
 *    non-chunked Transfer-Encoding 501, the reason phrase as body, flag DPE, http1.* details,
 *    the connection closed; the connection manager's own 400 (a path rejected by
 *    path_with_escaped_slashes_action) closes it too;
 *  - per_try_timeout: a silent try is retried, the second try's answer reaches the client;
 *    with no retry left 504 "upstream request timeout" (UT,URX upstream_per_try_timeout);
 *  - the retry buffer: a body over per_request_buffer_limit_bytes arriving during a back-off
 *    is 507 (request_payload_exceeded_retry_buffer_limit); arriving while an attempt is in
 *    flight it streams on unprotected (the upstream's 503 is not retried);
 *  - stream_idle_timeout ("stream timeout", SI: 408 and closed while the request is
 *    incomplete, 504 and kept open once it was read whole), request_timeout (408 "request
 *    timeout", request_overall_timeout), the connection idle_timeout (closed, no bytes);
 *  - a response to a request not read whole counts downstream_rq_response_before_rq_complete;
 *  - the file access log: one line per request with the response flags (NR for no route).
 * Every wait is bounded (5 s), so a bug fails the test instead of hanging it.
 */
#include "proxy_loop.h"

static const char ROUTE_ALL[] = "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]";

#define GET(path) "GET " path " HTTP/1.1\r\nHost: example.com\r\n\r\n"

/* What the proxy writes for an upstream answer "HTTP/1.1 200 OK", "content-length: <n>", body
 * (conn_hdr: "" or a "connection: ...\r\n" line). */
#define RELAYED_200(n, conn_hdr, body)                                                             \
    "HTTP/1.1 200 OK\r\ncontent-length: " n "\r\nx-envoy-upstream-service-time: *\r\n"             \
    "date: *\r\nserver: envoy\r\n" conn_hdr "\r\n" body
#define UP_200(n, body) "HTTP/1.1 200 OK\r\ncontent-length: " n "\r\n\r\n" body

/* A local reply with a text/plain body (conn_hdr as above). */
#define LOCAL_REPLY(status, n, conn_hdr, body)                                                     \
    "HTTP/1.1 " status "\r\ncontent-type: text/plain\r\ncontent-length: " n "\r\n"                 \
    "date: *\r\nserver: envoy\r\n" conn_hdr "\r\n" body
#define CLOSE "connection: close\r\n"

/* ---------- keep-alive, pipelining, HTTP/1.0 ---------- */

/* Two requests one after the other on one connection: both answered on it, one downstream
 * connection counted and still open; "Connection: close" on a third closes after its answer
 * (connection: close in the answer, a local close). */
static void test_keep_alive_then_connection_close(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {UP_200("5", "first"), UP_200("6", "second"),
                                          UP_200("4", "last")};
    pl_start(e, "", ROUTE_ALL, pl_upstream_start(e, answers, 3));
    pl_client_connect(e);
    pl_client_puts(e, GET("/one"));
    pl_expect_response(e, RELAYED_200("5", "", "first"));
    pl_client_puts(e, GET("/two"));
    pl_expect_response(e, RELAYED_200("6", "", "second"));
    pl_expect_open(e, 50);
    assert_int_equal(pl_hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(pl_hgauge(e, "downstream_cx_active"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_total"), 2);
    assert_int_equal(pl_hstat(e, "downstream_rq_completed"), 2);
    assert_int_equal(pl_hstat(e, "downstream_rq_2xx"), 2);
    assert_int_equal(pl_hgauge(e, "downstream_rq_active"), 0);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 0);
    pl_client_puts(e, "GET /three HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    pl_expect_response(e, RELAYED_200("4", CLOSE, "last"));
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 3);
    assert_string_equal(e->up.lines[0], "GET /one HTTP/1.1");
    assert_string_equal(e->up.lines[1], "GET /two HTTP/1.1");
    assert_string_equal(e->up.lines[2], "GET /three HTTP/1.1");
    assert_int_equal(pl_hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_total"), 3);
    assert_int_equal(pl_hstat(e, "downstream_cx_destroy"), 1);
    assert_int_equal(pl_hstat(e, "downstream_cx_destroy_local"), 1);
    assert_int_equal(pl_hstat(e, "downstream_cx_destroy_remote"), 0);
    assert_int_equal(pl_hgauge(e, "downstream_cx_active"), 0);
}

/* Two requests in one write: answered in order, the second only after the first. */
static void test_pipelined_answered_in_order(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {UP_200("1", "a"), UP_200("2", "bb")};
    pl_start(e, "", ROUTE_ALL, pl_upstream_start(e, answers, 2));
    pl_client_connect(e);
    pl_client_puts(e, GET("/a") GET("/b"));
    pl_expect_response(e, RELAYED_200("1", "", "a"));
    pl_expect_response(e, RELAYED_200("2", "", "bb"));
    pl_expect_open(e, 50);
    assert_int_equal(e->up.requests, 2);
    assert_string_equal(e->up.lines[0], "GET /a HTTP/1.1");
    assert_string_equal(e->up.lines[1], "GET /b HTTP/1.1");
    assert_int_equal(pl_hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_total"), 2);
    assert_int_equal(pl_hstat(e, "downstream_rq_2xx"), 2);
}

static const char HTTP10[] = "\"http_protocol_options\":{\"accept_http_10\":true},";

/* HTTP/1.0 without keep-alive: answered (HTTP/1.1 status line, as Envoy's codec writes it,
 * connection: close) and closed; the upstream request is HTTP/1.1. */
static void test_http10_closes_after_answer(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {UP_200("2", "ok")};
    pl_start(e, HTTP10, ROUTE_ALL, pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, "GET /old HTTP/1.0\r\nHost: example.com\r\n\r\n");
    pl_expect_response(e, RELAYED_200("2", CLOSE, "ok"));
    pl_expect_closed(e);
    assert_string_equal(e->up.lines[0], "GET /old HTTP/1.1");
    assert_int_equal(pl_hstat(e, "downstream_cx_destroy_local"), 1);
}

/* HTTP/1.0 with "Connection: keep-alive": the answer says keep-alive and the connection
 * carries a second request. */
static void test_http10_keep_alive(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {UP_200("1", "x"), UP_200("1", "y")};
    pl_start(e, HTTP10, ROUTE_ALL, pl_upstream_start(e, answers, 2));
    pl_client_connect(e);
    pl_client_puts(e, "GET /1 HTTP/1.0\r\nHost: example.com\r\nConnection: keep-alive\r\n\r\n");
    pl_expect_response(e, RELAYED_200("1", "connection: keep-alive\r\n", "x"));
    pl_client_puts(e, "GET /2 HTTP/1.0\r\nHost: example.com\r\nConnection: keep-alive\r\n\r\n");
    pl_expect_response(e, RELAYED_200("1", "connection: keep-alive\r\n", "y"));
    pl_expect_open(e, 50);
    assert_int_equal(pl_hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_total"), 2);
}

/* Without accept_http_10 HTTP/1.0 is 426 Upgrade Required, empty body, details low_version,
 * and the connection closes; nothing goes upstream. */
static void test_http10_not_accepted_426(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    pl_start(e, pl_access_log(e), ROUTE_ALL, pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, "GET /old HTTP/1.0\r\nHost: example.com\r\n\r\n");
    pl_expect_response(e, "HTTP/1.1 426 Upgrade Required\r\ncontent-length: 0\r\ndate: *\r\n"
                          "server: envoy\r\nconnection: close\r\n\r\n");
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_hstat(e, "downstream_rq_4xx"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 0);
    pl_expect_log(e, 1, "GET /old HTTP/1.0 426 - low_version\n");
}

/* ---------- codec errors ---------- */

/* A head over max_request_headers_kb (1 KiB here): 431 with the reason phrase as body, DPE
 * http1.headers_too_large, downstream_cx_protocol_error, closed; nothing goes upstream. */
static void test_head_over_limit_431(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    char field[2048];
    pl_start(e, "\"max_request_headers_kb\":1,", ROUTE_ALL, pl_upstream_start(e, answers, 1));
    memset(field, 'a', sizeof(field) - 1);
    field[sizeof(field) - 1] = '\0';
    pl_client_connect(e);
    pl_client_puts(e, "GET / HTTP/1.1\r\nHost: example.com\r\nx-big: ");
    pl_client_puts(e, field);
    pl_client_puts(e, "\r\n\r\n");
    pl_expect_response(e, LOCAL_REPLY("431 Request Header Fields Too Large", "31", CLOSE,
                                      "Request Header Fields Too Large"));
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_hstat(e, "downstream_cx_protocol_error"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_4xx"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 1);
}

/* The default limit (60 KiB) with a 70 KiB head: the read buffer grows to the limit, then
 * 431 as above; the access log shows DPE http1.headers_too_large with no method or path (the
 * head was never parsed) and the codec's protocol, HTTP/1.1, as Envoy's stream info has it
 * from the stream's creation. */
static void test_head_over_default_limit_431(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    pl_start(e, pl_access_log(e), ROUTE_ALL, pl_upstream_start(e, answers, 1));
    size_t n = 70 * 1024;
    char *field = malloc(n + 1);
    assert_non_null(field);
    memset(field, 'a', n);
    field[n] = '\0';
    pl_client_connect(e);
    pl_client_puts(e, "GET /big HTTP/1.1\r\nHost: example.com\r\nx-big: ");
    pl_client_puts(e, field);
    free(field);
    pl_expect_response(e, LOCAL_REPLY("431 Request Header Fields Too Large", "31", CLOSE,
                                      "Request Header Fields Too Large"));
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_hstat(e, "downstream_cx_protocol_error"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 1);
    pl_expect_log(e, 1, "- - HTTP/1.1 431 DPE http1.headers_too_large\n");
}

/* A malformed field line (no colon): 400 "Bad Request", DPE http1.codec_error, closed. */
static void test_malformed_request_400(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    pl_start(e, pl_access_log(e), ROUTE_ALL, pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, "GET /x HTTP/1.1\r\nHost: example.com\r\nno colon here\r\n\r\n");
    pl_expect_response(e, LOCAL_REPLY("400 Bad Request", "11", CLOSE, "Bad Request"));
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_hstat(e, "downstream_cx_protocol_error"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_4xx"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 1);
    pl_expect_log(e, 1, "- - HTTP/1.1 400 DPE http1.codec_error\n");
}

/* Content-Length with Transfer-Encoding: chunked: 400, DPE
 * http1.content_length_and_chunked_not_allowed; a Transfer-Encoding other than chunked on a
 * second connection: 501 Not Implemented, http1.invalid_transfer_encoding. */
static void test_bad_framing_400_501(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    pl_start(e, pl_access_log(e), ROUTE_ALL, pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, "POST /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    pl_expect_response(e, LOCAL_REPLY("400 Bad Request", "11", CLOSE, "Bad Request"));
    pl_expect_closed(e);
    pl_client_close(e);
    pl_client_connect(e);
    pl_client_puts(e, "POST /y HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip\r\n\r\n");
    pl_expect_response(e, LOCAL_REPLY("501 Not Implemented", "15", CLOSE, "Not Implemented"));
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_hstat(e, "downstream_cx_protocol_error"), 2);
    assert_int_equal(pl_hstat(e, "downstream_rq_4xx"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_5xx"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 2);
    pl_expect_log(e, 2,
                  "- - HTTP/1.1 400 DPE http1.content_length_and_chunked_not_allowed\n"
                  "- - HTTP/1.1 501 DPE http1.invalid_transfer_encoding\n");
}

/* A 400 local reply of the connection manager itself (path_with_escaped_slashes_action
 * REJECT_REQUEST on "%2F"): empty body, details path_normalization_failed,
 * downstream_rq_failed_path_normalization; on HTTP/1 Envoy closes the connection after any 400
 * local reply (ActiveStream::onLocalReply: saw_connection_close_ unless
 * stream_error_on_invalid_http_message), so the answer says connection: close. The log shows
 * the path as unescaped before the rejection (Envoy's PathUtil::unescapeSlashes rewrites it in
 * place). */
static void test_rejected_path_400_closes(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"path_with_escaped_slashes_action\":\"REJECT_REQUEST\",%s",
             pl_access_log(e));
    pl_start(e, hcm, ROUTE_ALL, pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, GET("/a%2Fb"));
    pl_expect_response(e, "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: *\r\n"
                          "server: envoy\r\nconnection: close\r\n\r\n");
    pl_expect_closed(e);
    assert_int_equal(e->up.requests, 0);
    assert_int_equal(pl_hstat(e, "downstream_rq_failed_path_normalization"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 0);
    pl_expect_log(e, 1, "GET /a/b HTTP/1.1 400 - path_normalization_failed\n");
}

/* ---------- per-try timeouts ---------- */

static const char PER_TRY_ROUTE[] =
    "[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\",\"retry_policy\":{"
    "\"retry_on\":\"5xx\",\"num_retries\":1,\"per_try_timeout\":\"0.2s\"}}}]";

/* The first try is silent past per_try_timeout (0.2 s): it is reset and retried; the
 * second try's 200 reaches the client. */
static void test_per_try_timeout_retried(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL, UP_200("6", "second")};
    pl_start(e, pl_access_log(e), PER_TRY_ROUTE, pl_upstream_start(e, answers, 2));
    uint64_t t0 = uv_hrtime();
    pl_client_connect(e);
    pl_client_puts(e, GET("/try"));
    pl_expect_response(e, RELAYED_200("6", "", "second"));
    assert_true(uv_hrtime() - t0 >= 190000000ULL);
    pl_expect_open(e, 20);
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(pl_cstat(e, "upstream_rq_per_try_timeout"), 1);
    assert_int_equal(pl_cstat(e, "upstream_rq_retry"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_2xx"), 1);
    pl_expect_log(e, 1, "GET /try HTTP/1.1 200 - via_upstream\n");
}

/* Both tries silent: after the second per-try timeout no retry is left: 504 "upstream
 * request timeout", UT,URX upstream_per_try_timeout; the connection stays open. */
static void test_per_try_timeout_no_retry_left_504(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL, NULL};
    pl_start(e, pl_access_log(e), PER_TRY_ROUTE, pl_upstream_start(e, answers, 2));
    uint64_t t0 = uv_hrtime();
    pl_client_connect(e);
    pl_client_puts(e, GET("/slow"));
    pl_expect_response(e, LOCAL_REPLY("504 Gateway Timeout", "24", "", "upstream request timeout"));
    assert_true(uv_hrtime() - t0 >= 390000000ULL);
    pl_expect_open(e, 20);
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(pl_cstat(e, "upstream_rq_per_try_timeout"), 2);
    assert_int_equal(pl_cstat(e, "upstream_rq_retry"), 1);
    assert_int_equal(pl_cstat(e, "upstream_rq_retry_limit_exceeded"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_5xx"), 1);
    pl_expect_log(e, 1, "GET /slow HTTP/1.1 504 UT,URX upstream_per_try_timeout\n");
}

/* ---------- the retry buffer ---------- */

/* A 4 KiB body, a 1 KiB per_request_buffer_limit_bytes, retry_on connect-failure with a 1 s
 * back-off (at the top of its interval: WEFT_PROXY_TEST_BACKOFF_JITTER=max): the first 512
 * bytes are buffered, the connect is refused and a retry waits; the rest of the body then
 * overflows the buffer with no attempt in flight: 507 "exceeded request buffer limit while
 * retrying upstream", details request_payload_exceeded_retry_buffer_limit, retry abandoned
 * (retry_or_shadow_abandoned), the connection closed (the request was not read whole). */
static void test_retry_buffer_overflow_in_backoff_507(void **state)
{
    pl_env *e = *state;
    char body[4096];
    memset(body, 'b', sizeof(body));
    setenv("WEFT_PROXY_TEST_BACKOFF_JITTER", "max", 1);
    pl_start(e, pl_access_log(e),
             "[{\"match\":{\"prefix\":\"/\"},\"per_request_buffer_limit_bytes\":1024,\"route\":{"
             "\"cluster\":\"c\",\"retry_policy\":{\"retry_on\":\"connect-failure\",\"num_retries\":"
             "1,\"retry_back_off\":{\"base_interval\":\"1s\"}}}}]",
             pl_refusing_port(e));
    unsetenv("WEFT_PROXY_TEST_BACKOFF_JITTER");
    pl_client_connect(e);
    pl_client_puts(e, "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 4096\r\n\r\n");
    pl_client_send(e, body, 512);
    pl_stat_want retried = {"upstream_rq_retry", 1};
    pl_pump_until(e, pl_cstat_reached, &retried, "a retry waiting after the refused connect");
    assert_int_equal(pl_cstat(e, "upstream_cx_connect_fail"), 1);
    assert_int_equal(e->rxlen, 0);
    pl_client_send(e, body + 512, sizeof(body) - 512);
    pl_expect_response(e, LOCAL_REPLY("507 Insufficient Storage", "53", CLOSE,
                                      "exceeded request buffer limit while retrying upstream"));
    pl_expect_closed(e);
    assert_int_equal(pl_cstat(e, "retry_or_shadow_abandoned"), 1);
    assert_int_equal(pl_cstat(e, "upstream_cx_connect_fail"), 1); /* no second try */
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 1);
    pl_expect_log(e, 1,
                  "POST /upload HTTP/1.1 507 - request_payload_exceeded_retry_buffer_limit\n");
}

/* The same limit with the attempt in flight (the upstream reads the whole 4 KiB body): the
 * body streams on to it unprotected and its 503 is relayed, not retried (retry_on 5xx). */
static void test_retry_buffer_overflow_in_flight_streams_on(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy", UP_200("2", "ok")};
    char body[4096];
    memset(body, 'b', sizeof(body));
    pl_start(e, pl_access_log(e),
             "[{\"match\":{\"prefix\":\"/\"},\"per_request_buffer_limit_bytes\":1024,\"route\":{"
             "\"cluster\":\"c\",\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":1}}}]",
             pl_upstream_start(e, answers, 2));
    pl_client_connect(e);
    pl_client_puts(e, "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 4096\r\n\r\n");
    pl_client_send(e, body, sizeof(body));
    pl_expect_response(e,
                       "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n"
                       "x-envoy-upstream-service-time: *\r\ndate: *\r\nserver: envoy\r\n\r\nbusy");
    pl_expect_open(e, 20);
    assert_int_equal(e->up.requests, 1);
    assert_int_equal(e->up.body_len[0], 4096);
    assert_int_equal(pl_cstat(e, "retry_or_shadow_abandoned"), 1);
    assert_int_equal(pl_cstat(e, "upstream_rq_retry"), 0);
    pl_expect_log(e, 1, "POST /upload HTTP/1.1 503 - via_upstream\n");
}

/* ---------- connection manager timeouts ---------- */

/* stream_idle_timeout 0.2 s, the request body never completes: 408 "stream timeout", SI
 * stream_idle_timeout, downstream_rq_idle_timeout, closed. */
static void test_stream_idle_timeout_408(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"stream_idle_timeout\":\"0.2s\",%s", pl_access_log(e));
    pl_start(e, hcm, ROUTE_ALL, pl_upstream_start(e, answers, 1));
    uint64_t t0 = uv_hrtime();
    pl_client_connect(e);
    pl_client_puts(e, "POST /in HTTP/1.1\r\nHost: example.com\r\nContent-Length: 10\r\n\r\nabc");
    pl_expect_response(e, LOCAL_REPLY("408 Request Timeout", "14", CLOSE, "stream timeout"));
    assert_true(uv_hrtime() - t0 >= 190000000ULL);
    pl_expect_closed(e);
    assert_int_equal(pl_hstat(e, "downstream_rq_idle_timeout"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 1);
    pl_expect_log(e, 1, "POST /in HTTP/1.1 408 SI stream_idle_timeout\n");
}

/* stream_idle_timeout 0.2 s, the request complete and the upstream silent (route timeout
 * 15 s): 504 "stream timeout", SI. The request was read whole, so the connection stays open
 * (Envoy's onIdleTimeout only sends the local reply; the HTTP/1 connection closes after a
 * local reply only when the request was incomplete or the status is 400) and carries the
 * next request. */
static void test_stream_idle_timeout_504(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL, UP_200("4", "next")};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"stream_idle_timeout\":\"0.2s\",%s", pl_access_log(e));
    pl_start(e, hcm, ROUTE_ALL, pl_upstream_start(e, answers, 2));
    pl_client_connect(e);
    pl_client_puts(e, GET("/wait"));
    pl_expect_response(e, LOCAL_REPLY("504 Gateway Timeout", "14", "", "stream timeout"));
    pl_expect_open(e, 20);
    pl_client_puts(e, GET("/next"));
    pl_expect_response(e, RELAYED_200("4", "", "next"));
    assert_int_equal(e->up.requests, 2);
    assert_int_equal(pl_hstat(e, "downstream_rq_idle_timeout"), 1);
    assert_int_equal(pl_hstat(e, "downstream_cx_total"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 0);
    pl_expect_log(e, 2,
                  "GET /wait HTTP/1.1 504 SI stream_idle_timeout\n"
                  "GET /next HTTP/1.1 200 - via_upstream\n");
}

/* request_timeout 0.3 s with bytes still trickling in (so the stream is never idle): 408
 * "request timeout", request_overall_timeout, downstream_rq_timeout, closed. */
static void test_request_timeout_408(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {NULL};
    char hcm[1200];
    snprintf(hcm, sizeof(hcm), "\"request_timeout\":\"0.3s\",\"stream_idle_timeout\":\"0.2s\",%s",
             pl_access_log(e));
    pl_start(e, hcm, ROUTE_ALL, pl_upstream_start(e, answers, 1));
    uint64_t t0 = uv_hrtime();
    pl_client_connect(e);
    pl_client_puts(e, "POST /in HTTP/1.1\r\nHost: example.com\r\nContent-Length: 100\r\n\r\n");
    while (!pl_response_len(e) && uv_hrtime() - t0 < 2000000000ULL) {
        pl_client_puts(e, "x"); /* a byte every 50 ms: the stream idle timer never fires */
        pl_pump_for(e, 50);
    }
    pl_expect_response(e, LOCAL_REPLY("408 Request Timeout", "15", CLOSE, "request timeout"));
    assert_true(uv_hrtime() - t0 >= 290000000ULL);
    pl_expect_closed(e);
    assert_int_equal(pl_hstat(e, "downstream_rq_timeout"), 1);
    assert_int_equal(pl_hstat(e, "downstream_rq_idle_timeout"), 0);
    assert_int_equal(pl_hstat(e, "downstream_rq_response_before_rq_complete"), 1);
    pl_expect_log(e, 1, "POST /in HTTP/1.1 408 - request_overall_timeout\n");
}

/* The connection's idle_timeout (common_http_protocol_options, 0.2 s) after an answered
 * request: closed with nothing written, downstream_cx_idle_timeout. */
static void test_connection_idle_timeout(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {UP_200("2", "ok")};
    pl_start(e, "\"common_http_protocol_options\":{\"idle_timeout\":\"0.2s\"},", ROUTE_ALL,
             pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, GET("/"));
    pl_expect_response(e, RELAYED_200("2", "", "ok"));
    uint64_t t0 = uv_hrtime();
    pl_expect_closed(e);
    assert_true(uv_hrtime() - t0 >= 150000000ULL);
    assert_int_equal(pl_hstat(e, "downstream_cx_idle_timeout"), 1);
    assert_int_equal(pl_hstat(e, "downstream_cx_destroy_local"), 1);
}

/* ---------- access log hand-off ---------- */

/* One line per request, in order, on one connection: a routed 200 (no flags, via_upstream)
 * and a path no route matches (404 NR route_not_found, empty body). */
static void test_access_log_line_per_request(void **state)
{
    pl_env *e = *state;
    static const char *const answers[] = {UP_200("2", "ok")};
    pl_start(e, pl_access_log(e),
             "[{\"match\":{\"prefix\":\"/api\"},\"route\":{\"cluster\":\"c\"}}]",
             pl_upstream_start(e, answers, 1));
    pl_client_connect(e);
    pl_client_puts(e, GET("/api/items"));
    pl_expect_response(e, RELAYED_200("2", "", "ok"));
    pl_client_puts(e, GET("/nowhere"));
    pl_expect_response(e, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\ndate: *\r\n"
                          "server: envoy\r\n\r\n");
    pl_expect_open(e, 20);
    assert_int_equal(pl_hstat(e, "no_route"), 1);
    pl_expect_log(e, 2,
                  "GET /api/items HTTP/1.1 200 - via_upstream\n"
                  "GET /nowhere HTTP/1.1 404 NR route_not_found\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keep_alive_then_connection_close, pl_setup,
                                        pl_teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_answered_in_order, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_http10_closes_after_answer, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_http10_keep_alive, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_http10_not_accepted_426, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_head_over_limit_431, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_head_over_default_limit_431, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_request_400, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_bad_framing_400_501, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_rejected_path_400_closes, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_per_try_timeout_retried, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_per_try_timeout_no_retry_left_504, pl_setup,
                                        pl_teardown),
        cmocka_unit_test_setup_teardown(test_retry_buffer_overflow_in_backoff_507, pl_setup,
                                        pl_teardown),
        cmocka_unit_test_setup_teardown(test_retry_buffer_overflow_in_flight_streams_on, pl_setup,
                                        pl_teardown),
        cmocka_unit_test_setup_teardown(test_stream_idle_timeout_408, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_stream_idle_timeout_504, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_request_timeout_408, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_connection_idle_timeout, pl_setup, pl_teardown),
        cmocka_unit_test_setup_teardown(test_access_log_line_per_request, pl_setup, pl_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
