/*
 * retry_on.c - Envoy's retry_on condition names (docs configuration/http/http_filters/
 * router_filter, x-envoy-retry-on and x-envoy-retry-grpc-on; route RetryPolicy.retry_on):
 * one list parser for the route's policy (bootstrap/bootstrap_retry.c) and the request's
 * headers (filters/http/retry.c). Declared in config.h, beside the bits.
 */
#include <string.h>

#include "proxy/config/config.h"

static const struct {
    const char *name;
    uint32_t bit;
} retry_tokens[] = {
    {"5xx", WP_RETRY_5XX},
    {"gateway-error", WP_RETRY_GATEWAY_ERROR},
    {"reset", WP_RETRY_RESET},
    {"reset-before-request", WP_RETRY_RESET_BEFORE_REQUEST},
    {"connect-failure", WP_RETRY_CONNECT_FAILURE},
    {"retriable-4xx", WP_RETRY_RETRIABLE_4XX},
    {"refused-stream", WP_RETRY_REFUSED_STREAM},
    {"retriable-status-codes", WP_RETRY_RETRIABLE_STATUS_CODES},
    {"retriable-headers", WP_RETRY_RETRIABLE_HEADERS},
    {"envoy-ratelimited", WP_RETRY_ENVOY_RATELIMITED},
    {"http3-post-connect-failure", WP_RETRY_HTTP3_POST_CONNECT_FAILURE},
    {"cancelled", WP_RETRY_GRPC_CANCELLED},
    {"deadline-exceeded", WP_RETRY_GRPC_DEADLINE_EXCEEDED},
    {"internal", WP_RETRY_GRPC_INTERNAL},
    {"resource-exhausted", WP_RETRY_GRPC_RESOURCE_EXHAUSTED},
    {"unavailable", WP_RETRY_GRPC_UNAVAILABLE},
};

int wp_retry_on_parse(const char *list, uint32_t *bits, const char **bad, size_t *bad_len)
{
    *bits = 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if (t == p)
            break;
        size_t n = (size_t)(t - p), i = 0;
        for (; i < sizeof(retry_tokens) / sizeof(retry_tokens[0]); i++)
            if (strlen(retry_tokens[i].name) == n && memcmp(retry_tokens[i].name, p, n) == 0)
                break;
        if (i == sizeof(retry_tokens) / sizeof(retry_tokens[0])) {
            *bad = p;
            *bad_len = n;
            return -1;
        }
        *bits |= retry_tokens[i].bit;
        p = e;
    }
    return 0;
}
