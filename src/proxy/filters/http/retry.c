/*
 * retry.c - retry decisions and back-off (retry.h).
 */
#include "proxy/filters/http/retry.h"

#include <string.h>
#include <strings.h>

#include "proxy/http/conn.h"

#define RESET_RETRIERS (WP_RETRY_5XX | WP_RETRY_GATEWAY_ERROR | WP_RETRY_RESET)

bool wp_retry_on_reset(const wp_retry_policy *p, int reason, bool request_sent)
{
    if (reason == WP_RESET_OVERFLOW)
        return false;
    if (p->retry_on & RESET_RETRIERS)
        return true;
    if ((p->retry_on & WP_RETRY_RESET_BEFORE_REQUEST) && !request_sent)
        return true;
    if (reason == WP_RESET_REMOTE_REFUSED_STREAM_RESET && (p->retry_on & WP_RETRY_REFUSED_STREAM))
        return true;
    bool connect = reason == WP_RESET_LOCAL_CONNECTION_FAILURE ||
                   reason == WP_RESET_REMOTE_CONNECTION_FAILURE ||
                   reason == WP_RESET_CONNECTION_TIMEOUT;
    return connect && (p->retry_on & WP_RETRY_CONNECT_FAILURE);
}

static const h1_header *find(const h1_header *h, size_t n, const char *name)
{
    return h1_find_header(h, n, name);
}

static bool grpc_retry(const wp_retry_policy *p, const h1_header *h, size_t n)
{
    static const struct {
        unsigned code;
        uint32_t bit;
    } map[] = {{1, WP_RETRY_GRPC_CANCELLED},
               {4, WP_RETRY_GRPC_DEADLINE_EXCEEDED},
               {13, WP_RETRY_GRPC_INTERNAL},
               {8, WP_RETRY_GRPC_RESOURCE_EXHAUSTED},
               {14, WP_RETRY_GRPC_UNAVAILABLE}};
    const h1_header *g = find(h, n, "grpc-status");
    if (!g || g->value.len == 0 || g->value.len > 2)
        return false;
    unsigned code = 0;
    for (size_t i = 0; i < g->value.len; i++) {
        if (g->value.p[i] < '0' || g->value.p[i] > '9')
            return false;
        code = code * 10 + (unsigned)(g->value.p[i] - '0');
    }
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].code == code)
            return (p->retry_on & map[i].bit) != 0;
    return false;
}

static bool status_listed(const wp_retry_policy *p, int status)
{
    for (size_t i = 0; i < p->nstatus_codes; i++)
        if (p->status_codes[i] == (uint32_t)status)
            return true;
    return false;
}

/* retriable_headers: a retry when any one matcher matches (Envoy RetryPolicy docs). */
static bool headers_match_any(const wp_retry_policy *p, wp_regex_ctx *rx, const h1_header *h,
                              size_t n)
{
    wp_route_req rq;
    memset(&rq, 0, sizeof(rq));
    rq.headers = h;
    rq.nheaders = n;
    for (size_t i = 0; i < p->nheaders; i++)
        if (wp_route_headers_match(rx, &rq, &p->headers[i], 1))
            return true;
    return false;
}

bool wp_retry_on_response(const wp_retry_policy *p, wp_regex_ctx *rx, int status,
                          const h1_header *hdrs, size_t nhdrs)
{
    uint32_t on = p->retry_on;
    if ((on & WP_RETRY_5XX) && status >= 500)
        return true;
    if ((on & WP_RETRY_GATEWAY_ERROR) && status >= 502 && status <= 504)
        return true;
    if ((on & WP_RETRY_RETRIABLE_4XX) && status == 409)
        return true;
    if ((on & WP_RETRY_RETRIABLE_STATUS_CODES) && status_listed(p, status))
        return true;
    if ((on & WP_RETRY_ENVOY_RATELIMITED) && find(hdrs, nhdrs, "x-envoy-ratelimited"))
        return true;
    if ((on & WP_RETRY_RETRIABLE_HEADERS) && headers_match_any(p, rx, hdrs, nhdrs))
        return true;
    return grpc_retry(p, hdrs, nhdrs);
}

bool wp_retry_on_per_try_timeout(const wp_retry_policy *p)
{
    return (p->retry_on & RESET_RETRIERS) != 0;
}

uint64_t wp_retry_backoff_interval_ms(const wp_retry_policy *p, uint32_t n)
{
    uint64_t base = p->base_interval_ms ? p->base_interval_ms : 25;
    uint64_t max = p->max_interval_ms >= base ? p->max_interval_ms : base * 10;
    uint64_t i = base;
    for (uint32_t k = 1; k < n && i < max; k++)
        i = i > max / 2 ? max : i * 2;
    return i;
}

uint64_t wp_retry_backoff_ms(const wp_retry_policy *p, uint32_t n, uint64_t random,
                             wp_jitter_mode mode)
{
    uint64_t i = wp_retry_backoff_interval_ms(p, n);
    switch (mode) {
    case WP_JITTER_MAX:
        return i - 1;
    case WP_JITTER_ZERO:
        return 0;
    default:
        return random % i;
    }
}

/* ---------- the request's retry headers ---------- */

#define GRPC_RETRIERS                                                                              \
    (WP_RETRY_GRPC_CANCELLED | WP_RETRY_GRPC_DEADLINE_EXCEEDED | WP_RETRY_GRPC_INTERNAL |          \
     WP_RETRY_GRPC_RESOURCE_EXHAUSTED | WP_RETRY_GRPC_UNAVAILABLE)

/* Whether [p, e) trimmed of blanks is a non-empty token: *tp, *tn. */
static bool token(const char *p, const char *e, const char **tp, size_t *tn)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *tp = p;
    *tn = (size_t)(e - p);
    return e > p;
}

/* parseRetryOn / parseRetryGrpcOn: the comma list's known tokens of `kind`, others ignored
 * (a header is not configuration: Envoy drops what it does not know). */
static uint32_t header_conditions(const h1_str *v, uint32_t kind)
{
    uint32_t bits = 0;
    const char *p = v->p, *end = v->p + v->len;
    while (p < end) {
        const char *e = memchr(p, ',', (size_t)(end - p));
        if (!e)
            e = end;
        const char *tp;
        size_t tn;
        char tok[32];
        if (token(p, e, &tp, &tn) && tn < sizeof(tok)) {
            memcpy(tok, tp, tn);
            tok[tn] = '\0';
            uint32_t b = 0;
            const char *bad;
            size_t bad_len;
            if (wp_retry_on_parse(tok, &b, &bad, &bad_len) == 0)
                bits |= b & kind;
        }
        p = e + 1;
    }
    return bits;
}

/* absl::SimpleAtoi of an unsigned value: digits, blanks around them, an optional '+'. */
static bool simple_atou(const h1_str *v, uint64_t max, uint64_t *out)
{
    const char *p, *e;
    size_t n;
    if (!token(v->p, v->p + v->len, &p, &n))
        return false;
    e = p + n;
    if (*p == '+')
        p++;
    if (p == e)
        return false;
    uint64_t x = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9')
            return false;
        x = x * 10 + (uint64_t)(*p - '0');
        if (x > max)
            return false;
    }
    *out = x;
    return true;
}

const wp_retry_policy *wp_retry_request_policy(const wp_retry_policy *route, const h1_header *hdrs,
                                               size_t nhdrs, wp_retry_policy *own, uint32_t *codes,
                                               size_t max_codes)
{
    const h1_header *on = find(hdrs, nhdrs, "x-envoy-retry-on");
    const h1_header *grpc_on = find(hdrs, nhdrs, "x-envoy-retry-grpc-on");
    const h1_header *max = find(hdrs, nhdrs, "x-envoy-max-retries");
    const h1_header *sc = find(hdrs, nhdrs, "x-envoy-retriable-status-codes");
    /* RetryStateImpl::create: no retry state unless a retry_on header or the route's retry_on */
    if (!on && !grpc_on && (!route || !route->retry_on))
        return route;
    if (!on && !grpc_on && !max && !sc)
        return route;
    if (route)
        *own = *route;
    else
        *own = (wp_retry_policy){.num_retries = 1,
                                 .base_interval_ms = 25,
                                 .max_interval_ms = 250,
                                 .host_selection_max_attempts = 1};
    if (on)
        own->retry_on |= header_conditions(&on->value, ~(uint32_t)GRPC_RETRIERS);
    if (grpc_on)
        own->retry_on |= header_conditions(&grpc_on->value, GRPC_RETRIERS);
    uint64_t n;
    if (own->retry_on && max && simple_atou(&max->value, UINT32_MAX, &n))
        own->num_retries = (uint32_t)n; /* "The max retries header takes precedence if set." */
    if (sc && own->nstatus_codes < max_codes) { /* else the route's list stays, alone */
        size_t k = own->nstatus_codes;
        if (k)
            memcpy(codes, own->status_codes, k * sizeof(*codes));
        const char *p = sc->value.p, *end = sc->value.p + sc->value.len;
        while (p < end && k < max_codes) {
            const char *e = memchr(p, ',', (size_t)(end - p));
            if (!e)
                e = end;
            h1_str item = {p, (size_t)(e - p)};
            if (simple_atou(&item, UINT32_MAX, &n))
                codes[k++] = (uint32_t)n;
            p = e + 1;
        }
        own->status_codes = codes;
        own->nstatus_codes = k;
    }
    return own;
}
