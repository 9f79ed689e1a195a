/*
 * test_retry.c - retry decisions and back-off (src/proxy/filters/http/retry.h) and the retry_on
 * parser (bootstrap_retry.c): which failures each retry_on token retries, Envoy's jittered
 * exponential back-off intervals and their distribution.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"
#include "proxy/filters/http/retry.h"
#include "proxy/filters/http/router.h"

static wp_retry_policy policy(const char *retry_on)
{
    wp_retry_policy p;
    memset(&p, 0, sizeof(p));
    const char *bad = NULL;
    size_t bad_len = 0;
    assert_int_equal(wp_retry_on_parse(retry_on, &p.retry_on, &bad, &bad_len), 0);
    p.num_retries = 1;
    p.base_interval_ms = 25;
    p.max_interval_ms = 250;
    return p;
}

static void test_parse_tokens(void **state)
{
    (void)state;
    uint32_t bits = 0;
    const char *bad = NULL;
    size_t bad_len = 0;
    assert_int_equal(wp_retry_on_parse(" 5xx , reset,unavailable ", &bits, &bad, &bad_len), 0);
    assert_int_equal(bits, WP_RETRY_5XX | WP_RETRY_RESET | WP_RETRY_GRPC_UNAVAILABLE);
    assert_int_equal(wp_retry_on_parse("", &bits, &bad, &bad_len), 0);
    assert_int_equal(bits, 0);
    assert_int_equal(wp_retry_on_parse("5xx,5XX", &bits, &bad, &bad_len), -1);
    assert_int_equal(bad_len, 3);
    assert_memory_equal(bad, "5XX", 3);
    assert_int_equal(wp_retry_on_parse("connect-failure,bogus", &bits, &bad, &bad_len), -1);
    assert_memory_equal(bad, "bogus", 5);
}

static void test_resets(void **state)
{
    (void)state;
    wp_retry_policy p = policy("connect-failure");
    assert_true(wp_retry_on_reset(&p, WP_RESET_REMOTE_CONNECTION_FAILURE, false));
    assert_true(wp_retry_on_reset(&p, WP_RESET_CONNECTION_TIMEOUT, false));
    assert_false(wp_retry_on_reset(&p, WP_RESET_CONNECTION_TERMINATION, true));
    p = policy("reset-before-request");
    assert_true(wp_retry_on_reset(&p, WP_RESET_CONNECTION_TERMINATION, false));
    assert_false(wp_retry_on_reset(&p, WP_RESET_CONNECTION_TERMINATION, true));
    for (const char *const *t = (const char *const[]){"5xx", "gateway-error", "reset", NULL}; *t;
         t++) {
        p = policy(*t);
        assert_true(wp_retry_on_reset(&p, WP_RESET_CONNECTION_TERMINATION, true));
        assert_true(wp_retry_on_reset(&p, WP_RESET_LOCAL_RESET, true));
        assert_false(wp_retry_on_reset(&p, WP_RESET_OVERFLOW, false)); /* never */
        assert_true(wp_retry_on_per_try_timeout(&p));
    }
    p = policy("refused-stream,connect-failure,retriable-status-codes");
    assert_false(wp_retry_on_per_try_timeout(&p));
    /* refused-stream: an HTTP/2 upstream's REFUSED_STREAM (or a stream past its GOAWAY) only */
    p = policy("refused-stream");
    assert_true(wp_retry_on_reset(&p, WP_RESET_REMOTE_REFUSED_STREAM_RESET, true));
    assert_false(wp_retry_on_reset(&p, WP_RESET_REMOTE_RESET, false));
    assert_false(wp_retry_on_reset(&p, WP_RESET_CONNECTION_TERMINATION, false));
    p = policy("reset");
    assert_true(wp_retry_on_reset(&p, WP_RESET_REMOTE_RESET, true));
    p = policy("connect-failure");
    assert_false(wp_retry_on_reset(&p, WP_RESET_REMOTE_REFUSED_STREAM_RESET, false));
}

static bool on_response(const char *retry_on, int status, const h1_header *h, size_t n)
{
    wp_retry_policy p = policy(retry_on);
    uint32_t codes[] = {418};
    p.status_codes = codes;
    p.nstatus_codes = 1;
    wp_regex_ctx rx;
    assert_int_equal(wp_regex_ctx_init(&rx), 0);
    bool r = wp_retry_on_response(&p, &rx, status, h, n);
    wp_regex_ctx_free(&rx);
    return r;
}

static void test_responses(void **state)
{
    (void)state;
    assert_true(on_response("5xx", 500, NULL, 0));
    assert_true(on_response("5xx", 599, NULL, 0));
    assert_false(on_response("5xx", 499, NULL, 0));
    assert_true(on_response("gateway-error", 502, NULL, 0));
    assert_true(on_response("gateway-error", 504, NULL, 0));
    assert_false(on_response("gateway-error", 500, NULL, 0));
    assert_true(on_response("retriable-4xx", 409, NULL, 0));
    assert_false(on_response("retriable-4xx", 429, NULL, 0));
    assert_true(on_response("retriable-status-codes", 418, NULL, 0));
    assert_false(on_response("5xx", 418, NULL, 0));
    assert_false(on_response("connect-failure,reset", 503, NULL, 0));
    h1_header rl[] = {{{"X-Envoy-RateLimited", 19}, {"true", 4}}};
    assert_true(on_response("envoy-ratelimited", 429, rl, 1));
    assert_false(on_response("envoy-ratelimited", 429, NULL, 0));
    h1_header g14[] = {{{"grpc-status", 11}, {"14", 2}}};
    h1_header g13[] = {{{"grpc-status", 11}, {"13", 2}}};
    assert_true(on_response("unavailable", 200, g14, 1));
    assert_false(on_response("unavailable", 200, g13, 1));
    assert_true(on_response("internal", 200, g13, 1));
    assert_false(on_response("cancelled,deadline-exceeded,resource-exhausted", 200, g14, 1));
}

static void test_backoff_intervals(void **state)
{
    (void)state;
    wp_retry_policy p = policy("5xx"); /* 25 ms base, 250 ms max */
    const uint64_t want[] = {25, 50, 100, 200, 250, 250, 250};
    for (uint32_t n = 1; n <= 7; n++)
        assert_int_equal(wp_retry_backoff_interval_ms(&p, n), want[n - 1]);
    p.base_interval_ms = 100;
    p.max_interval_ms = 150; /* doubling would pass max: max from the second retry on */
    assert_int_equal(wp_retry_backoff_interval_ms(&p, 1), 100);
    assert_int_equal(wp_retry_backoff_interval_ms(&p, 2), 150);
    assert_int_equal(wp_retry_backoff_ms(&p, 1, 12345, WP_JITTER_MAX), 99);
    assert_int_equal(wp_retry_backoff_ms(&p, 3, 12345, WP_JITTER_ZERO), 0);
}

/* Many draws with a fixed seed: every value inside [0, I_n), mean near I_n / 2, and both
 * ends of the interval reached. */
static void test_backoff_distribution(void **state)
{
    (void)state;
    wp_retry_policy p = policy("5xx");
    wp_worker w;
    memset(&w, 0, sizeof(w));
    w.rng = 42;
    for (uint32_t n = 1; n <= 5; n++) {
        uint64_t iv = wp_retry_backoff_interval_ms(&p, n), sum = 0, lo = UINT64_MAX, hi = 0;
        const int samples = 20000;
        for (int i = 0; i < samples; i++) {
            uint64_t b = wp_retry_backoff_ms(&p, n, wp_rand(&w), WP_JITTER_UNIFORM);
            assert_true(b < iv);
            sum += b;
            lo = b < lo ? b : lo;
            hi = b > hi ? b : hi;
        }
        double mean = (double)sum / samples, want = (double)(iv - 1) / 2.0;
        assert_true(mean > want * 0.95 && mean < want * 1.05);
        assert_int_equal(lo, 0);
        assert_int_equal(hi, iv - 1);
    }
}

#define HDR(n, v)                                                                                  \
    {                                                                                              \
        .name = {n, sizeof(n) - 1}, .value = { v, sizeof(v) - 1 }                                  \
    }

static void test_request_headers(void **state)
{
    (void)state;
    wp_retry_policy own;
    uint32_t codes[4];
    /* no header: the route's policy, or none */
    const h1_header plain[] = {HDR("x-other", "1")};
    assert_null(wp_retry_request_policy(NULL, plain, 1, &own, codes, 4));
    wp_retry_policy route = policy("connect-failure");
    uint32_t route_codes[] = {503};
    route.status_codes = route_codes;
    route.nstatus_codes = 1;
    assert_ptr_equal(wp_retry_request_policy(&route, plain, 1, &own, codes, 4), &route);
    /* without a route policy: the defaults, HTTP tokens only from x-envoy-retry-on */
    const h1_header h1[] = {HDR("x-envoy-retry-on", " 5xx , bogus,unavailable"),
                            HDR("x-envoy-max-retries", " 3 ")};
    const wp_retry_policy *p = wp_retry_request_policy(NULL, h1, 2, &own, codes, 4);
    assert_ptr_equal(p, &own);
    assert_int_equal(p->retry_on, WP_RETRY_5XX);
    assert_int_equal(p->num_retries, 3);
    assert_int_equal(p->base_interval_ms, 25);
    assert_int_equal(p->max_interval_ms, 250);
    /* OR-ed with the route's; gRPC tokens only from x-envoy-retry-grpc-on; codes appended */
    const h1_header h2[] = {HDR("x-envoy-retry-grpc-on", "cancelled,5xx"),
                            HDR("x-envoy-max-retries", "x"),
                            HDR("x-envoy-retriable-status-codes", "418, y,409,1,2,3")};
    p = wp_retry_request_policy(&route, h2, 3, &own, codes, 4);
    assert_int_equal(p->retry_on, WP_RETRY_CONNECT_FAILURE | WP_RETRY_GRPC_CANCELLED);
    assert_int_equal(p->num_retries, 1);
    assert_int_equal(p->nstatus_codes, 4);
    assert_int_equal(p->status_codes[0], 503);
    assert_int_equal(p->status_codes[1], 418);
    assert_int_equal(p->status_codes[2], 409);
    assert_int_equal(p->status_codes[3], 1);
    /* the route's policy is never written */
    assert_int_equal(route.retry_on, WP_RETRY_CONNECT_FAILURE);
    assert_ptr_equal(route.status_codes, route_codes);
    assert_int_equal(route.nstatus_codes, 1);
    /* x-envoy-max-retries alone needs some condition */
    const h1_header h3[] = {HDR("x-envoy-max-retries", "0")};
    assert_int_equal(wp_retry_request_policy(&route, h3, 1, &own, codes, 4)->num_retries, 0);
    assert_null(wp_retry_request_policy(NULL, h3, 1, &own, codes, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_tokens),
        cmocka_unit_test(test_resets),
        cmocka_unit_test(test_responses),
        cmocka_unit_test(test_backoff_intervals),
        cmocka_unit_test(test_backoff_distribution),
        cmocka_unit_test(test_request_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
