/*
 * validate_vs.c - VirtualService validation.
 *
 * Follows istio/istio pkg/config/validation/validation.go (ValidateVirtualService,
 * validateTLSRoute, validateTCPRoute, validateSniHost, validate*RouteDestinations,
 * validateCORSPolicy, validateHTTPFaultInjection, validateHTTPRetry, validateHTTPRedirect,
 * validateHTTPDirectResponse, validateHTTPMirrors, validateHTTPRewrite) and
 * virtualservice.go (validateHTTPRoute, validateHTTPRouteMatchRequest,
 * validateHTTPRouteConflict, validateAuthorityRewrite). The duplicate/overlapping match
 * analysis is in validate_vs_match.c.
 */
#include "model/validate_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/grpc_codes.h"

#define IN(c, key, stmt)                                                                           \
    do {                                                                                           \
        size_t in_mark_ = vc_push((c), (key));                                                     \
        stmt;                                                                                      \
        vc_pop((c), in_mark_);                                                                     \
    } while (0)

static void port_check(vc *c, const wf_node *at, int64_t port)
{
    const char *e = vc_check_port(c, port);
    if (e)
        vc_err(c, at, "%s", e);
}

/* jwt.ToRoutingClaim(name).Match */
static bool is_jwt_claim_route(const char *name)
{
    const char *prefix = "@request.auth.claims";
    size_t n = strlen(prefix);
    if (strncasecmp(name, prefix, n) != 0)
        return false;
    const char *rest = name + n;
    size_t len = strlen(rest);
    if (rest[0] == '.' && len > 1)
        return true;
    return rest[0] == '[' && len > 2 && rest[len - 1] == ']';
}

static void header_name_or_claim(vc *c, const wf_node *at, const char *name)
{
    if (*name && is_jwt_claim_route(name))
        return;
    vc_http_header_name(c, at, name);
}

/* ---- match requests ---- */

static void string_match_map(vc *c, const wf_node *m, const char *key, const char *where,
                             bool headers)
{
    const wf_node *map = vc_get(m, key);
    for (size_t i = 0; map && map->type == WF_NODE_MAP && i < map->len; i++) {
        const wf_map_entry *e = &map->u.entries[i];
        size_t mark = vc_push(c, key);
        vc_push_key(c, e->key);
        bool null = e->value->type == WF_NODE_NULL;
        if (headers && strcmp(key, "headers") == 0 && null)
            vc_err(c, e->value, "header match %s cannot be null", e->key);
        if (headers)
            header_name_or_claim(c, e->value, e->key);
        bool skip =
            strcmp(key, "withoutHeaders") == 0 && strcmp(vc_str(e->value, "regex"), "*") == 0;
        if (!null && !skip)
            vc_string_match(c, e->value, where, true);
        vc_pop(c, mark);
    }
}

static void http_match_request(vc *c, const wf_node *match)
{
    string_match_map(c, match, "headers", "headers", true);
    string_match_map(c, match, "withoutHeaders", "withoutHeaders", true);
    IN(c, "uri", vc_string_match(c, vc_get(match, "uri"), "uri", false));
    IN(c, "scheme", vc_string_match(c, vc_get(match, "scheme"), "scheme", true));
    IN(c, "method", vc_string_match(c, vc_get(match, "method"), "method", true));
    IN(c, "authority", vc_string_match(c, vc_get(match, "authority"), "authority", true));
    string_match_map(c, match, "queryParams", "queryParams", false);
}

static void match_common(vc *c, const wf_node *match)
{
    int64_t port = vc_int(match, "port");
    if (port != 0)
        IN(c, "port", port_check(c, vc_get(match, "port"), port));
    IN(c, "sourceLabels", vc_labels(c, vc_get(match, "sourceLabels")));
    IN(c, "gateways", vc_gateway_names(c, vc_get(match, "gateways"), false));
}

/* ---- HTTP route pieces ---- */

static void http_route_conflict(vc *c, const wf_node *http, bool delegate)
{
    const char *name = vc_str(http, "name");
    bool redirect = vc_has(http, "redirect"), direct = vc_has(http, "directResponse");
    bool fault = vc_has(http, "fault"), rewrite = vc_has(http, "rewrite");
    size_t routes = vc_len(http, "route");
    if (!delegate && vc_has(http, "delegate")) {
        if (redirect)
            vc_err(c, http, "root HTTP route %s must not specify redirect", name);
        if (vc_has(http, "route"))
            vc_err(c, http, "root HTTP route %s must not specify route", name);
        return;
    }
    if (delegate && vc_has(http, "delegate"))
        vc_err(c, http, "delegate HTTP route cannot contain delegate");
    if (redirect) {
        if (routes > 0)
            vc_err(c, http, "HTTP route cannot contain both route and redirect");
        if (fault)
            vc_err(c, http, "HTTP route cannot contain both fault and redirect");
        if (rewrite)
            vc_err(c, http, "HTTP route rule cannot contain both rewrite and redirect");
        if (direct)
            vc_err(c, http, "HTTP route rule cannot contain both direct_response and redirect");
    } else if (direct) {
        if (routes > 0)
            vc_err(c, http, "HTTP route cannot contain both route and direct_response");
        if (fault)
            vc_err(c, http, "HTTP route cannot contain both fault and direct_response");
        if (rewrite)
            vc_err(c, http, "HTTP route rule cannot contain both rewrite and direct_response");
    } else if (routes == 0) {
        vc_err(c, http, "HTTP route, redirect or direct_response is required");
    }
    if (vc_has(http, "mirror") && vc_len(http, "mirrors") > 0)
        vc_err(c, http, "HTTP route cannot contain both mirror and mirrors");
}

static bool is_supported_method(const char *m)
{
    static const char *const methods[] = {"GET",    "HEAD",    "POST",    "PUT",  "PATCH",
                                          "DELETE", "CONNECT", "OPTIONS", "TRACE"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (strcmp(m, methods[i]) == 0)
            return true;
    }
    return false;
}

static void cors_header_names(vc *c, const wf_node *cors, const char *key)
{
    const wf_node *seq = vc_get(cors, key);
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *h = vc_nstr(wf_seq_at(seq, i));
        size_t mark = vc_push(c, key);
        vc_push_idx(c, i);
        if (strcmp(h, "*") != 0)
            vc_http_header_name(c, wf_seq_at(seq, i), h);
        vc_pop(c, mark);
    }
}

static void cors_policy(vc *c, const wf_node *cors)
{
    if (!cors)
        return;
    const wf_node *origins = vc_get(cors, "allowOrigins");
    for (size_t i = 0; i < wf_seq_len(origins); i++) {
        const wf_node *o = wf_seq_at(origins, i);
        size_t mark = vc_push(c, "allowOrigins");
        vc_push_idx(c, i);
        const char *m = vc_str(o, "exact");
        if (!*m)
            m = vc_str(o, "prefix");
        if (!*m)
            m = vc_str(o, "regex");
        if (!*m)
            vc_err(c, o, "'%s' is not a valid match type for CORS allow origins", m);
        else if (vc_has(o, "regex"))
            vc_string_match(c, o, "corsPolicy.allowOrigins", false);
        vc_pop(c, mark);
    }
    const wf_node *methods = vc_get(cors, "allowMethods");
    for (size_t i = 0; i < wf_seq_len(methods); i++) {
        const char *m = vc_nstr(wf_seq_at(methods, i));
        if (!is_supported_method(m))
            IN(c, "allowMethods",
               vc_err(c, wf_seq_at(methods, i), "%s is not a supported HTTP method", vc_q(c, m)));
    }
    cors_header_names(c, cors, "allowHeaders");
    cors_header_names(c, cors, "exposeHeaders");
    const wf_node *max_age = vc_get(cors, "maxAge");
    if (max_age) {
        vc_duration(c, cors, "maxAge");
        int64_t ns;
        const char *msg;
        if (vc_parse_duration(c, vc_nstr(max_age), &ns, &msg) && ns % 1000000000 != 0)
            IN(c, "maxAge",
               vc_err(c, max_age, "max_age duration is accurate only to seconds precision"));
    }
}

static void http_status(vc *c, const wf_node *at, int64_t status)
{
    if (status < 200 || status > 600)
        vc_err(c, at, "HTTP status %lld is not in range 200-599", (long long)status);
}

static void fault_injection(vc *c, const wf_node *fault)
{
    if (!fault)
        return;
    const wf_node *abort = vc_get(fault, "abort"), *delay = vc_get(fault, "delay");
    if (!abort && !delay)
        vc_err(c, fault, "HTTP fault injection must have an abort and/or a delay");
    if (abort) {
        size_t mark = vc_push(c, "abort");
        IN(c, "percentage", vc_percentage(c, vc_get(abort, "percentage")));
        if (vc_has(abort, "grpcStatus")) {
            const char *s = vc_str(abort, "grpcStatus");
            if (!wf_grpc_code_known(s))
                vc_err(c, abort,
                       "gRPC status %s is not supported. See "
                       "https://github.com/grpc/grpc/blob/master/doc/statuscodes.md for a list of "
                       "supported codes, for example 'NOT_FOUND'",
                       vc_q(c, s));
        } else if (vc_has(abort, "http2Error")) {
            vc_err(c, abort, "HTTP/2 abort fault injection not supported yet");
        } else if (vc_has(abort, "httpStatus")) {
            http_status(c, abort, vc_int(abort, "httpStatus"));
        } else {
            vc_warn(c, abort, "abort configured, but error type not set");
        }
        vc_pop(c, mark);
    }
    if (delay) {
        size_t mark = vc_push(c, "delay");
        IN(c, "percentage", vc_percentage(c, vc_get(delay, "percentage")));
        if (vc_has(delay, "fixedDelay")) {
            vc_duration(c, delay, "fixedDelay");
        } else if (vc_has(delay, "exponentialDelay")) {
            vc_duration(c, delay, "exponentialDelay");
            vc_err(c, delay, "exponentialDelay not supported yet");
        }
        vc_pop(c, mark);
    }
}

/* net/http.StatusText(code) != "" */
static bool http_status_text(long code)
{
    static const short known[] = {100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208,
                                  226, 300, 301, 302, 303, 304, 305, 307, 308, 400, 401, 402, 403,
                                  404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416,
                                  417, 418, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451, 500,
                                  501, 502, 503, 504, 505, 506, 507, 508, 510, 511};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (known[i] == code)
            return true;
    }
    return false;
}

static bool retry_on_supported(const char *p, size_t n)
{
    static const char *const policies[] = {"5xx",
                                           "gateway-error",
                                           "reset",
                                           "reset-before-request",
                                           "connect-failure",
                                           "retriable-4xx",
                                           "refused-stream",
                                           "retriable-status-codes",
                                           "retriable-headers",
                                           "envoy-ratelimited",
                                           "http3-post-connect-failure",
                                           "cancelled",
                                           "deadline-exceeded",
                                           "internal",
                                           "resource-exhausted",
                                           "unavailable"};
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        if (strlen(policies[i]) == n && strncmp(policies[i], p, n) == 0)
            return true;
    }
    return false;
}

static void http_retry(vc *c, const wf_node *r)
{
    if (!r)
        return;
    int64_t attempts = vc_int(r, "attempts");
    const char *retry_on = vc_str(r, "retryOn");
    if (attempts < 0)
        vc_err(c, r, "attempts cannot be negative");
    if (attempts == 0 &&
        (vc_has(r, "perTryTimeout") || *retry_on || vc_has(r, "retryRemoteLocalities")))
        vc_err(c, r, "http retry policy configured when attempts are set to 0 (disabled)");
    vc_duration(c, r, "perTryTimeout");
    if (!*retry_on)
        return;
    for (const char *p = retry_on;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *policy = vc_fmt(c, "%.*s", (int)n, p);
        char *end;
        long code = strtol(policy, &end, 10);
        bool numeric = *policy && !*end;
        if (!(numeric && http_status_text(code)) && !retry_on_supported(p, n))
            IN(c, "retryOn",
               vc_err(c, vc_get(r, "retryOn"), "%s is not a valid retryOn policy",
                      vc_q(c, policy)));
        if (!comma)
            break;
        p = comma + 1;
    }
}

static void http_redirect(vc *c, const wf_node *r)
{
    if (!r)
        return;
    const char *scheme = vc_str(r, "scheme");
    bool port_sel = vc_has(r, "port") || vc_has(r, "derivePort");
    if (!*vc_str(r, "uri") && !*vc_str(r, "authority") && !port_sel && !*scheme) {
        vc_err(c, r, "redirect must specify URI, authority, scheme, or port");
        return;
    }
    int64_t code = vc_int(r, "redirectCode");
    if (code != 0 && (code < 300 || code > 399)) {
        vc_err(c, r, "%lld is not a valid redirect code, must be 3xx", (long long)code);
        return;
    }
    if (*scheme && strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        vc_err(c, r, "invalid redirect scheme, must be \"http\" or \"https\"");
        return;
    }
    int64_t port = vc_int(r, "port");
    if (port > 0)
        port_check(c, r, port);
}

static size_t base64_decoded_len(const char *s)
{
    size_t n = strlen(s), pad = 0;
    while (n > 0 && s[n - 1 - pad] == '=' && pad < 2)
        pad++;
    return n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) - (n % 4 ? 0 : pad);
}

static void direct_response(vc *c, const wf_node *d)
{
    if (!d)
        return;
    const wf_node *body = vc_get(d, "body");
    if (body) {
        size_t size = vc_has(body, "string") ? strlen(vc_str(body, "string"))
                                             : base64_decoded_len(vc_str(body, "bytes"));
        if (size > 1024 * 1024)
            vc_err(c, body,
                   "large direct_responses may impact control plane performance, must be less "
                   "than 1MB");
        else if (size > 100 * 1024)
            vc_warn(c, body, "large direct_responses may impact control plane performance");
    }
    http_status(c, d, vc_int(d, "status"));
}

static void mirror_percent_value(vc *c, const wf_node *pct, const char *what)
{
    if (!pct)
        return;
    double v = vc_double(pct, "value");
    if (v > 100)
        vc_err(c, pct, "%s must have a max value of 100 (it has %s)", what, vc_f(c, v));
    if (v < 0)
        vc_err(c, pct, "%s must have a min value of 0 (it has %s)", what, vc_f(c, v));
}

static void http_mirrors(vc *c, const wf_node *mirrors)
{
    for (size_t i = 0; i < wf_seq_len(mirrors); i++) {
        const wf_node *m = wf_seq_at(mirrors, i);
        size_t mark = vc_push(c, "mirrors");
        vc_push_idx(c, i);
        if (!m || m->type == WF_NODE_NULL) {
            vc_err(c, m, "mirror cannot be null");
        } else if (!vc_has(m, "destination")) {
            vc_err(c, m, "destination is required for mirrors");
        } else {
            IN(c, "destination", vc_destination(c, vc_get(m, "destination")));
            mirror_percent_value(c, vc_get(m, "percentage"), "mirror percentage");
        }
        vc_pop(c, mark);
    }
}

static void http_rewrite(vc *c, const wf_node *rw)
{
    if (!rw)
        return;
    const wf_node *rr = vc_get(rw, "uriRegexRewrite");
    const char *uri = vc_str(rw, "uri");
    if (*uri && rr) {
        vc_err(c, rw, "rewrite may only contain one of URI or UriRegexRewrite");
        return;
    }
    if (!*uri && !rr && !*vc_str(rw, "authority")) {
        vc_err(c, rw,
               "rewrite must specify at least one of URI, UriRegexRewrite, or authority. Only "
               "one of URI or UriRegexRewrite may be specified");
        return;
    }
    if (!rr)
        return;
    const char *match = vc_str(rr, "match");
    if (!*match || !*vc_str(rr, "rewrite")) {
        vc_err(c, rr,
               "UriRegexRewrite has errors\nUriRegexRewrite requires both Rewrite and "
               "Match fields to be specified");
        return;
    }
    if (strlen(match) > 1024) {
        vc_err(c, rr,
               "UriRegexRewrite has errors\n%s: regex is too large, max length allowed is 1024",
               vc_q(c, "HTTPRewrite.UriRegexRewrite.Match"));
        return;
    }
    const char *e = vc_regex_error(c, match);
    if (e)
        vc_err(c, rr,
               "UriRegexRewrite has errors\n%s: %s; Istio uses RE2 style regex-based match "
               "(https://github.com/google/re2/wiki/Syntax)",
               vc_q(c, "HTTPRewrite.UriRegexRewrite.Match"), e);
}

static void authority_rewrite(vc *c, const wf_node *http)
{
    const char *current = vc_str(vc_get(http, "rewrite"), "authority");
    const wf_node *req = vc_get(vc_get(http, "headers"), "request");
    static const char *const ops[] = {"set", "add"};
    for (size_t k = 0; k < 2; k++) {
        const wf_node *m = vc_get(req, ops[k]);
        for (size_t i = 0; m && m->type == WF_NODE_MAP && i < m->len; i++) {
            const wf_map_entry *e = &m->u.entries[i];
            if (!wf_header_is_authority(e->key))
                continue;
            if (*current) {
                vc_err(c, e->value,
                       "authority header cannot be set multiple times: have %s, attempting to "
                       "set %s",
                       vc_q(c, current), vc_q(c, vc_nstr(e->value)));
                return;
            }
            current = vc_nstr(e->value);
        }
    }
}

/* validateHTTPRouteDestinations / validateRouteDestinations */
static void route_destinations(vc *c, const wf_node *routes, bool http)
{
    int64_t total = 0;
    size_t n = wf_seq_len(routes);
    size_t mark = vc_push(c, "route");
    for (size_t i = 0; i < n; i++) {
        const wf_node *rd = wf_seq_at(routes, i);
        size_t m2 = vc_push_idx(c, i);
        if (!rd || rd->type == WF_NODE_NULL) {
            vc_err(c, rd, "weight may not be nil");
            vc_pop(c, m2);
            continue;
        }
        if (!vc_has(rd, "destination"))
            vc_err(c, rd, "destination is required");
        if (http)
            vc_header_operations(c, vc_get(rd, "headers"));
        IN(c, "destination", vc_destination(c, vc_get(rd, "destination")));
        int64_t w = vc_int(rd, "weight");
        if (w < 0)
            IN(c, "weight", vc_err(c, vc_get(rd, "weight"), "weight %lld < 0", (long long)w));
        total += w;
        vc_pop(c, m2);
    }
    if (n > 1 && (int32_t)total == 0)
        vc_err(c, routes, "total destination weight = 0");
    vc_pop(c, mark);
}

void vc_vs_http_route(vc *c, const wf_node *http, bool delegate)
{
    http_route_conflict(c, http, delegate);
    const wf_node *matches = vc_get(http, "match");
    for (size_t i = 0; i < wf_seq_len(matches); i++) {
        const wf_node *m = wf_seq_at(matches, i);
        if (!m || m->type != WF_NODE_MAP)
            continue;
        size_t mark = vc_push(c, "match");
        vc_push_idx(c, i);
        http_match_request(c, m);
        vc_pop(c, mark);
    }
    for (size_t i = 0; i < wf_seq_len(matches); i++) {
        const wf_node *m = wf_seq_at(matches, i);
        if (!m || m->type != WF_NODE_MAP)
            continue;
        size_t mark = vc_push(c, "match");
        vc_push_idx(c, i);
        match_common(c, m);
        const char *sns = vc_str(m, "sourceNamespace");
        if (*sns && !vc_is_dns1123_label(sns))
            IN(c, "sourceNamespace",
               vc_err(c, vc_get(m, "sourceNamespace"), "sourceNamespace match %s is invalid", sns));
        vc_pop(c, mark);
    }
    vc_header_operations(c, vc_get(http, "headers"));
    IN(c, "corsPolicy", cors_policy(c, vc_get(http, "corsPolicy")));
    IN(c, "fault", fault_injection(c, vc_get(http, "fault")));
    const wf_node *mp = vc_get(http, "mirrorPercent");
    if (mp) {
        int64_t v = vc_int(http, "mirrorPercent");
        if (v > 100)
            IN(c, "mirrorPercent",
               vc_err(c, mp, "mirror_percent must have a max value of 100 (it has %lld)",
                      (long long)v));
        IN(c, "mirrorPercent",
           vc_warn(c, mp,
                   "using deprecated setting \"mirrorPercent\", use \"mirrorPercentage\" "
                   "instead"));
    }
    IN(c, "mirrorPercentage",
       mirror_percent_value(c, vc_get(http, "mirrorPercentage"), "mirror_percentage"));
    IN(c, "mirror", vc_destination(c, vc_get(http, "mirror")));
    http_mirrors(c, vc_get(http, "mirrors"));
    IN(c, "redirect", http_redirect(c, vc_get(http, "redirect")));
    IN(c, "directResponse", direct_response(c, vc_get(http, "directResponse")));
    IN(c, "retries", http_retry(c, vc_get(http, "retries")));
    IN(c, "rewrite", http_rewrite(c, vc_get(http, "rewrite")));
    authority_rewrite(c, http);
    route_destinations(c, vc_get(http, "route"), true);
    vc_duration(c, http, "timeout");
}

/* ---- TLS and TCP routes ---- */

static bool vs_is_gateway(const wf_node *spec)
{
    const wf_node *gws = vc_get(spec, "gateways");
    for (size_t i = 0; i < wf_seq_len(gws); i++) {
        if (strcmp(vc_nstr(wf_seq_at(gws, i)), "mesh") == 0)
            return false;
    }
    return true;
}

static bool vs_has_sni_hosts(const wf_node *spec)
{
    const wf_node *tls = vc_get(spec, "tls");
    for (size_t i = 0; i < wf_seq_len(tls); i++) {
        const wf_node *matches = vc_get(wf_seq_at(tls, i), "match");
        for (size_t j = 0; j < wf_seq_len(matches); j++) {
            if (vc_len(wf_seq_at(matches, j), "sniHosts") > 0)
                return true;
        }
    }
    return false;
}

static void sni_host(vc *c, const wf_node *at, const char *sni, const wf_node *spec)
{
    const char *e = vs_is_gateway(spec) ? vc_check_wildcard_domain_gw_vs(c, true, sni)
                                        : vc_check_wildcard_domain(c, sni);
    if (e) {
        if (vc_is_ip(sni))
            vc_warn(c, at,
                    "using an IP address (%s) goes against SNI spec and most clients do not "
                    "support this",
                    vc_q(c, sni));
        else
            vc_err(c, at, "%s", e);
        return;
    }
    const wf_node *hosts = vc_get(spec, "hosts");
    size_t total = 1;
    for (size_t i = 0; i < wf_seq_len(hosts); i++) {
        const char *h = vc_nstr(wf_seq_at(hosts, i));
        if (vc_host_subset_of(sni, h))
            return;
        total += strlen(h) + 2;
    }
    char *joined = wf_arena_alloc(&c->scratch, total);
    if (joined) {
        for (size_t i = 0; i < wf_seq_len(hosts); i++) {
            if (i)
                strcat(joined, ", ");
            strcat(joined, vc_nstr(wf_seq_at(hosts, i)));
        }
    }
    vc_err(c, at,
           "SNI host %s is not a compatible subset of any of the virtual service hosts: [%s]",
           vc_q(c, sni), joined ? joined : "");
}

static void subnets(vc *c, const wf_node *match)
{
    const wf_node *seq = vc_get(match, "destinationSubnets");
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *e = vc_check_ip_subnet(c, vc_nstr(wf_seq_at(seq, i)));
        if (e)
            IN(c, "destinationSubnets", vc_err(c, wf_seq_at(seq, i), "%s", e));
    }
}

static void tls_route(vc *c, const wf_node *tls, const wf_node *spec)
{
    const wf_node *matches = vc_get(tls, "match");
    if (wf_seq_len(matches) == 0)
        vc_err(c, tls, "TLS route must have at least one match condition");
    for (size_t i = 0; i < wf_seq_len(matches); i++) {
        size_t mark;
        const wf_node *m = vc_item(c, matches, "match", i, "TLS match may not be null", &mark);
        if (!m)
            continue;
        const wf_node *snis = vc_get(m, "sniHosts");
        if (wf_seq_len(snis) == 0)
            vc_err(c, m, "TLS match must have at least one SNI host");
        for (size_t j = 0; j < wf_seq_len(snis); j++) {
            size_t m2 = vc_push(c, "sniHosts");
            vc_push_idx(c, j);
            sni_host(c, wf_seq_at(snis, j), vc_nstr(wf_seq_at(snis, j)), spec);
            vc_pop(c, m2);
        }
        subnets(c, m);
        match_common(c, m);
        vc_pop(c, mark);
    }
    if (vc_len(tls, "route") == 0)
        vc_err(c, tls, "TLS route is required");
    route_destinations(c, vc_get(tls, "route"), false);
}

static void tcp_route(vc *c, const wf_node *tcp)
{
    const wf_node *matches = vc_get(tcp, "match");
    for (size_t i = 0; i < wf_seq_len(matches); i++) {
        const wf_node *m = wf_seq_at(matches, i);
        size_t mark = vc_push(c, "match");
        vc_push_idx(c, i);
        if (!m || m->type == WF_NODE_NULL) {
            vc_err(c, m, "tcp match may not be nil");
        } else {
            subnets(c, m);
            match_common(c, m);
        }
        vc_pop(c, mark);
    }
    if (vc_len(tcp, "route") == 0)
        vc_err(c, tcp, "TCP route is required");
    route_destinations(c, vc_get(tcp, "route"), false);
}

/* ---- VirtualService ---- */

static void jwt_claim_routes(vc *c, const wf_node *spec)
{
    const wf_node *http = vc_get(spec, "http");
    static const char *const keys[] = {"headers", "withoutHeaders"};
    for (size_t i = 0; i < wf_seq_len(http); i++) {
        const wf_node *matches = vc_get(wf_seq_at(http, i), "match");
        for (size_t j = 0; j < wf_seq_len(matches); j++) {
            for (size_t k = 0; k < 2; k++) {
                const wf_node *h = vc_get(wf_seq_at(matches, j), keys[k]);
                for (size_t e = 0; h && h->type == WF_NODE_MAP && e < h->len; e++) {
                    if (is_jwt_claim_route(h->u.entries[e].key))
                        vc_err(c, h->u.entries[e].value,
                               "JWT claim based routing (key: %s) is only supported for "
                               "gateway, found no gateways: %s",
                               h->u.entries[e].key, vc_slice(c, vc_get(spec, "gateways")));
                }
            }
        }
    }
}

static bool vs_hosts(vc *c, const wf_node *spec, bool to_gateway, bool to_mesh)
{
    const wf_node *hosts = vc_get(spec, "hosts");
    bool all_valid = true;
    bool sni = vs_has_sni_hosts(spec);
    size_t mark = vc_push(c, "hosts");
    for (size_t i = 0; i < wf_seq_len(hosts); i++) {
        const wf_node *h = wf_seq_at(hosts, i);
        const char *host = vc_nstr(h);
        size_t m2 = vc_push_idx(c, i);
        const char *e = to_gateway ? vc_check_wildcard_domain_gw_vs(c, sni, host)
                                   : vc_check_wildcard_domain(c, host);
        if (e) {
            if (!vc_is_ip(host)) {
                vc_err(c, h, "%s", e);
                all_valid = false;
            }
        } else if (to_mesh && strcmp(host, "*") == 0) {
            vc_err(c, h,
                   "wildcard host * is not allowed for virtual services bound to the mesh "
                   "gateway");
            all_valid = false;
        }
        vc_pop(c, m2);
    }
    vc_pop(c, mark);
    return all_valid;
}

static void duplicate_hosts(vc *c, const wf_node *spec)
{
    const wf_node *hosts = vc_get(spec, "hosts");
    size_t n = wf_seq_len(hosts);
    size_t mark = vc_push(c, "hosts");
    for (size_t i = 0; i < n; i++) {
        const char *hi = vc_nstr(wf_seq_at(hosts, i));
        for (size_t j = i + 1; j < n; j++) {
            const char *hj = vc_nstr(wf_seq_at(hosts, j));
            if (vc_host_matches(hi, hj)) {
                size_t m2 = vc_push_idx(c, j);
                vc_err(c, wf_seq_at(hosts, j), "duplicate hosts in virtual service: %s & %s", hi,
                       hj);
                vc_pop(c, m2);
            }
        }
    }
    vc_pop(c, mark);
}

static void each_route(vc *c, const wf_node *spec, const char *key, bool delegate)
{
    const wf_node *seq = vc_get(spec, key);
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *r = wf_seq_at(seq, i);
        size_t mark = vc_push(c, key);
        vc_push_idx(c, i);
        if (strcmp(key, "http") == 0) {
            if (!r || r->type == WF_NODE_NULL)
                vc_err(c, r, "http route may not be null");
            else
                vc_vs_http_route(c, r, delegate);
        } else if (r && r->type != WF_NODE_NULL) {
            if (strcmp(key, "tls") == 0)
                tls_route(c, r, spec);
            else
                tcp_route(c, r);
        }
        vc_pop(c, mark);
    }
}

void vc_virtualservice(vc *c, const wf_node *spec)
{
    size_t nhosts = vc_len(spec, "hosts"), ngw = vc_len(spec, "gateways");
    if (nhosts == 0) {
        if (ngw != 0)
            vc_err(c, spec, "delegate virtual service must have no gateways specified");
        if (vc_len(spec, "tls") != 0)
            vc_err(c, spec, "delegate virtual service must have no tls route specified");
        if (vc_len(spec, "tcp") != 0)
            vc_err(c, spec, "delegate virtual service must have no tcp route specified");
    }
    bool to_mesh = true, to_gateway = false;
    if (ngw != 0) {
        IN(c, "gateways", vc_gateway_names(c, vc_get(spec, "gateways"), false));
        to_gateway = vs_is_gateway(spec);
        to_mesh = !to_gateway;
    }
    if (!to_gateway)
        jwt_claim_routes(c, spec);
    if (vs_hosts(c, spec, to_gateway, to_mesh))
        duplicate_hosts(c, spec);
    if (vc_len(spec, "http") == 0 && vc_len(spec, "tcp") == 0 && vc_len(spec, "tls") == 0)
        vc_err(c, spec, "http, tcp or tls must be provided in virtual service");
    each_route(c, spec, "http", nhosts == 0);
    each_route(c, spec, "tls", false);
    each_route(c, spec, "tcp", false);
    vc_export_to(c, spec, false, false);
    vc_vs_unreachable(c, spec);
}
