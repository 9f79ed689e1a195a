/*
 * retry.h - the retry decisions of Envoy's router (RetryStateImpl, retry_state_impl.cc) as
 * pure functions over a route's wp_retry_policy: which failures a policy retries, and the
 * jittered exponential back-off. The stream-level state machine that uses them is in
 * router_retry.c.
 *
 * Envoy behaviour followed (reference §4.1–§4.4; docs configuration/http/http_filters/
 * router_filter "x-envoy-retry-on"):
 *  - resets: 5xx, gateway-error and reset retry any reset or connection failure;
 *    connect-failure retries connection failures and connect timeouts;
 *    reset-before-request retries a reset only when no request byte went upstream;
 *    refused-stream retries remote_refused_stream_reset (an HTTP/2 upstream's REFUSED_STREAM
 *    or a stream its GOAWAY did not process; never on HTTP/1.1); an overflow is never
 *    retried;
 *  - responses: 5xx any status >= 500; gateway-error 502, 503, 504; retriable-4xx 409;
 *    retriable-status-codes the configured list; retriable-headers a configured matcher;
 *    envoy-ratelimited a response carrying x-envoy-ratelimited; the gRPC tokens a
 *    grpc-status in the response headers (1 cancelled, 4 deadline-exceeded, 13 internal,
 *    8 resource-exhausted, 14 unavailable);
 *  - per-try timeouts are retried by the policies that retry resets (5xx, gateway-error,
 *    reset);
 *  - back-off: the n-th retry waits a uniform draw in [0, I_n) ms with I_1 = base and I
 *    doubling until doubling would pass max, then max (JitteredExponentialBackOffStrategy;
 *    the code, not the docs' (2^n - 1) x base).
 */
#ifndef WEFT_PROXY_RETRY_H
#define WEFT_PROXY_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/h1_parser.h"
#include "proxy/config/config.h"
#include "proxy/config/route.h"

/* How the back-off is drawn: uniformly (Envoy), or at the top or bottom of the interval
 * (test hooks: --retry-backoff-jitter max|zero make races in tests exact). */
typedef enum { WP_JITTER_UNIFORM, WP_JITTER_MAX, WP_JITTER_ZERO } wp_jitter_mode;

/* Whether policy p retries an attempt that ended with reset reason `reason`
 * (WP_RESET_* of upstream/conn_pool.h) after `request_sent` (any request byte written). */
bool wp_retry_on_reset(const wp_retry_policy *p, int reason, bool request_sent);

/* Whether policy p retries a response with `status` and the given header fields. rx is the
 * worker's regex context (retriable_headers may hold regexes). */
bool wp_retry_on_response(const wp_retry_policy *p, wp_regex_ctx *rx, int status,
                          const h1_header *hdrs, size_t nhdrs);

/* Whether policy p retries an attempt whose per-try timeout expired. */
bool wp_retry_on_per_try_timeout(const wp_retry_policy *p);

/* Upper end (exclusive) of the n-th back-off interval (n >= 1) in milliseconds. */
uint64_t wp_retry_backoff_interval_ms(const wp_retry_policy *p, uint32_t n);

/* The n-th back-off in milliseconds: uniform in [0, interval) from `random` (a 64-bit
 * draw), or interval - 1 / 0 in the test modes. */
uint64_t wp_retry_backoff_ms(const wp_retry_policy *p, uint32_t n, uint64_t random,
                             wp_jitter_mode mode);

/* The policy a request runs under (RetryStateImpl's constructor, retry_state_impl.cc): the
 * route's `route` (NULL = none), with an internal request's retry headers merged in when it
 * carries x-envoy-retry-on or x-envoy-retry-grpc-on: their conditions OR-ed into retry_on
 * (unknown tokens ignored; x-envoy-retry-on takes the HTTP conditions, x-envoy-retry-grpc-on
 * the gRPC ones), x-envoy-max-retries overriding num_retries when the merged retry_on is not
 * empty, and x-envoy-retriable-status-codes appended to the status codes (up to max_codes in
 * all, the route's first). The merge is a copy in *own, its codes in `codes`; the route's
 * policy is never written. Without a route policy the copy starts from the defaults
 * (num_retries 1, 25 ms back-off). Returns `route` when no header applies. */
const wp_retry_policy *wp_retry_request_policy(const wp_retry_policy *route, const h1_header *hdrs,
                                               size_t nhdrs, wp_retry_policy *own, uint32_t *codes,
                                               size_t max_codes);

#endif
