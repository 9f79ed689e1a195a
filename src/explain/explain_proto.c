/*
 * explain_proto.c - HTTP/2, gRPC and TCP readings of an access log record for `weftctl
 * log explain` (explain_proto.h). Sentences stay plain and name what an operator can
 * change (Service port name or appProtocol, VirtualService timeout, DestinationRule
 * connectionPool) and the weftctl command that shows it.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "explain/explain_proto.h"

/* ---- gRPC status codes ------------------------------------------------------------------- */

static const struct {
    const char *snake, *camel, *alias, *meaning;
} grpc_codes[] = {
    {"OK", "Ok", "OK", "the call succeeded."},
    {"CANCELLED", "Canceled", "Cancelled", "the call was cancelled, usually by the caller."},
    {"UNKNOWN", "Unknown", NULL,
     "an error the server (or the proxy mapping an HTTP status it has no gRPC code for) could "
     "not classify."},
    {"INVALID_ARGUMENT", "InvalidArgument", NULL, "the client sent an invalid argument."},
    {"DEADLINE_EXCEEDED", "DeadlineExceeded", NULL,
     "the deadline expired before the call completed (a client grpc-timeout or a proxy "
     "timeout); the call may still have run on the server."},
    {"NOT_FOUND", "NotFound", NULL, "the requested entity was not found."},
    {"ALREADY_EXISTS", "AlreadyExists", NULL, "the entity the client tried to create exists."},
    {"PERMISSION_DENIED", "PermissionDenied", NULL,
     "the caller may not do this (an AuthorizationPolicy denial arrives as this code)."},
    {"RESOURCE_EXHAUSTED", "ResourceExhausted", NULL,
     "a quota or limit ran out (rate limit, message size, server resources)."},
    {"FAILED_PRECONDITION", "FailedPrecondition", NULL,
     "the system is not in a state the operation needs."},
    {"ABORTED", "Aborted", NULL, "the operation was aborted (a concurrency conflict)."},
    {"OUT_OF_RANGE", "OutOfRange", NULL, "the operation went past a valid range."},
    {"UNIMPLEMENTED", "Unimplemented", NULL,
     "the method is not implemented by the server, or the proxy found no route for it "
     "(an HTTP 404 local reply)."},
    {"INTERNAL", "Internal", NULL,
     "an internal error: the server broke an invariant, or the proxy answered 400."},
    {"UNAVAILABLE", "Unavailable", NULL,
     "the service is unavailable right now; a retry may succeed (the proxy sends this for "
     "its own 502, 503 and 504 replies: no healthy upstream, connect failures, resets)."},
    {"DATA_LOSS", "DataLoss", NULL, "unrecoverable data loss or corruption."},
    {"UNAUTHENTICATED", "Unauthenticated", NULL,
     "the request has no valid credentials (a RequestAuthentication/JWT failure arrives as "
     "this code)."},
};

#define NGRPC ((int)(sizeof grpc_codes / sizeof grpc_codes[0]))

int wf_lx_grpc_code(const char *s)
{
    if (!s || !*s)
        return -1;
    if (isdigit((unsigned char)*s)) {
        char *end;
        long v = strtol(s, &end, 10);
        return *end == '\0' && v >= 0 && v < NGRPC ? (int)v : -1;
    }
    for (int i = 0; i < NGRPC; i++)
        if (strcmp(s, grpc_codes[i].snake) == 0 || strcmp(s, grpc_codes[i].camel) == 0 ||
            (grpc_codes[i].alias && strcasecmp(s, grpc_codes[i].alias) == 0))
            return i;
    return -1;
}

const char *wf_lx_grpc_name(int code)
{
    return code >= 0 && code < NGRPC ? grpc_codes[code].snake : "";
}

const char *wf_lx_grpc_meaning(int code)
{
    return code >= 0 && code < NGRPC ? grpc_codes[code].meaning : "";
}

int wf_lx_grpc_from_http(int s)
{
    switch (s) {
    case 400:
        return 13;
    case 401:
        return 16;
    case 403:
        return 7;
    case 404:
        return 12;
    case 429:
    case 502:
    case 503:
    case 504:
        return 14;
    default:
        return 2;
    }
}

int64_t wf_lx_grpc_timeout_ms(const char *s)
{
    size_t n = s ? strspn(s, "0123456789") : 0;
    if (n == 0 || n > 8 || strlen(s) != n + 1)
        return -1;
    int64_t v = strtoll(s, NULL, 10);
    switch (s[n]) {
    case 'H':
        return v * 3600000;
    case 'M':
        return v * 60000;
    case 'S':
        return v * 1000;
    case 'm':
        return v;
    case 'u':
        return v / 1000;
    case 'n':
        return v / 1000000;
    default:
        return -1;
    }
}

/* ---- route timeouts ---------------------------------------------------------------------- */

/* A protobuf JSON duration ("1s", "0.300s") in ms; dflt when absent or malformed. */
static int64_t dur_ms(const json_t *v, int64_t dflt)
{
    const char *s = json_string_value(v);
    if (!s)
        return dflt;
    char *end;
    double d = strtod(s, &end);
    return end != s && strcmp(end, "s") == 0 ? (int64_t)(d * 1000.0 + 0.5) : dflt;
}

/* o[k1][k2] through objects; NULL when absent. */
static const json_t *get2(const json_t *o, const char *k1, const char *k2)
{
    return json_object_get(json_object_get(o, k1), k2);
}

static int route_add(wf_lx_routes *rt, const json_t *r)
{
    const char *name = json_string_value(json_object_get(r, "name"));
    const json_t *a = json_object_get(r, "route");
    if (!name || !json_is_object(a))
        return 0;
    wf_lx_route_timeout t = {0};
    t.timeout_ms = dur_ms(json_object_get(a, "timeout"), 15000);
    const json_t *mg = json_object_get(a, "max_grpc_timeout");
    const json_t *hm = get2(a, "max_stream_duration", "grpc_timeout_header_max");
    t.max_grpc_ms = mg ? dur_ms(mg, 0) : hm ? dur_ms(hm, 0) : -1;
    t.per_try_ms = dur_ms(get2(a, "retry_policy", "per_try_timeout"), 0);
    wf_lx_route_timeout *v = realloc(rt->v, (rt->n + 1) * sizeof *v);
    if (!v)
        return -1;
    rt->v = v;
    if (!(t.name = strdup(name)))
        return -1;
    rt->v[rt->n++] = t;
    return 0;
}

int wf_lx_routes_add(wf_lx_routes *rt, const json_t *route_configs)
{
    size_t i, j, k;
    json_t *rc, *vh, *r;
    json_array_foreach((json_t *)route_configs, i, rc)
    {
        json_array_foreach(json_object_get(rc, "virtual_hosts"), j, vh)
        {
            json_array_foreach(json_object_get(vh, "routes"), k, r)
            {
                if (route_add(rt, r))
                    return -1;
            }
        }
    }
    return 0;
}

void wf_lx_routes_free(wf_lx_routes *rt)
{
    for (size_t i = 0; i < rt->n; i++)
        free(rt->v[i].name);
    free(rt->v);
    rt->v = NULL;
    rt->n = 0;
}

const wf_lx_route_timeout *wf_lx_routes_find(const wf_lx_routes *rt, const char *name)
{
    const wf_lx_route_timeout *hit = NULL;
    for (size_t i = 0; rt && name && i < rt->n; i++) {
        const wf_lx_route_timeout *t = &rt->v[i];
        if (strcmp(t->name, name) != 0)
            continue;
        if (hit && (hit->timeout_ms != t->timeout_ms || hit->max_grpc_ms != t->max_grpc_ms ||
                    hit->per_try_ms != t->per_try_ms))
            return NULL; /* same name, different timeouts: cannot tell which one */
        hit = t;
    }
    return hit;
}

/* ---- classification ---------------------------------------------------------------------- */

static bool has_flag(const wf_lx_record *r, const char *flag)
{
    size_t fl = strlen(flag);
    for (const char *p = r->flags; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == fl && strncmp(p, flag, fl) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static bool details_has(const wf_lx_record *r, const char *s)
{
    return (r->details && strstr(r->details, s)) || (r->conn_details && strstr(r->conn_details, s));
}

/* /package.Service/Method */
static bool grpc_path(const char *p)
{
    if (!p || p[0] != '/')
        return false;
    const char *slash = strchr(p + 1, '/');
    if (!slash || slash == p + 1 || !slash[1] || strchr(slash + 1, '/') || strchr(p, '?'))
        return false;
    return memchr(p + 1, '.', (size_t)(slash - p - 1)) != NULL;
}

bool wf_lx_is_grpc(const wf_lx_record *r, const char **why)
{
    const char *w = NULL;
    const char *ct = r->content_type;
    if (ct && strncmp(ct, "application/grpc-web", 20) == 0)
        return false; /* gRPC-Web is not gRPC to Envoy */
    if (ct && (strcmp(ct, "application/grpc") == 0 || strncmp(ct, "application/grpc+", 17) == 0 ||
               strncmp(ct, "application/grpc;", 17) == 0))
        w = "content-type application/grpc";
    else if (r->grpc_status)
        w = "the line carries a gRPC status";
    else if (r->user_agent && strncmp(r->user_agent, "grpc-", 5) == 0)
        w = "the user agent is a gRPC library's";
    else if (r->protocol && strcmp(r->protocol, "HTTP/2") == 0 && r->method &&
             strcmp(r->method, "POST") == 0 && grpc_path(r->path))
        w = "an HTTP/2 POST to a gRPC method path /package.Service/Method";
    if (why)
        *why = w;
    return w != NULL;
}

bool wf_lx_is_tcp(const wf_lx_record *r)
{
    /* a listener's own line (no filter chain, a TLS handshake timeout) names no cluster */
    return !r->method && !r->path && !r->protocol && r->code <= 0 && r->cluster;
}

/* ---- gRPC -------------------------------------------------------------------------------- */

/* The HTTP status of the proxy's own reply, from the flags, when the log shows the gRPC
 * reply's 200; 0 when the flags do not name a local reply. */
static int local_reply_http(const wf_lx_record *r)
{
    static const struct {
        const char *flag;
        int status;
    } m[] = {{"UT", 504}, {"UH", 503},   {"UF", 503}, {"UC", 503},    {"UR", 503},
             {"UO", 503}, {"NC", 503},   {"LR", 503}, {"OM", 503},    {"DF", 503},
             {"DO", 503}, {"UDO", 503},  {"LH", 503}, {"UPE", 502},   {"NR", 404},
             {"RL", 429}, {"UAEX", 403}, {"SI", 504}, {"UMSDR", 504}, {"DPE", 400}};
    if (r->details && strncmp(r->details, "rbac_access_denied", 18) == 0)
        return 403;
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (has_flag(r, m[i].flag))
            return m[i].status;
    return 0;
}

static const char *grpc_message(const wf_lx_record *r)
{
    if (has_flag(r, "UT"))
        return "upstream request timeout";
    if (has_flag(r, "UH"))
        return "no healthy upstream";
    if (r->details && strncmp(r->details, "rbac_access_denied", 18) == 0)
        return "RBAC: access denied";
    return NULL;
}

static void fmt_ms(wf_strbuf *b, int64_t ms)
{
    if (ms >= 1000 && ms % 1000 == 0)
        wf_strbuf_printf(b, "%llds", (long long)(ms / 1000));
    else
        wf_strbuf_printf(b, "%lldms", (long long)ms);
}

/* Which timeout fired for a UT on a gRPC request (B034). */
static void which_timeout(const wf_lx_record *r, const wf_lx_routes *rt, wf_strbuf *b)
{
    if (r->details && strcmp(r->details, "upstream_per_try_timeout") == 0) {
        wf_strbuf_puts(b, "\nThe per-try timeout fired (VirtualService retries.perTryTimeout), "
                          "and no retry was left within the route timeout.");
        return;
    }
    int64_t d = r->duration ? strtoll(r->duration, NULL, 10) : -1;
    int64_t h = r->grpc_timeout ? wf_lx_grpc_timeout_ms(r->grpc_timeout) : -1;
    const wf_lx_route_timeout *t = wf_lx_routes_find(rt, r->route);
    if (t) {
        int64_t tol = t->timeout_ms / 10 > 100 ? t->timeout_ms / 10 : 100;
        wf_strbuf_printf(b, "\nRoute %s: timeout ", t->name);
        fmt_ms(b, t->timeout_ms);
        if (t->max_grpc_ms < 0)
            wf_strbuf_puts(b, ", no max_grpc_timeout (the client's grpc-timeout is ignored)");
        else if (t->max_grpc_ms == 0)
            wf_strbuf_puts(b, ", max_grpc_timeout 0s (the client's grpc-timeout applies "
                              "uncapped)");
        else {
            wf_strbuf_puts(b, ", max_grpc_timeout ");
            fmt_ms(b, t->max_grpc_ms);
            wf_strbuf_puts(b, " (caps the client's grpc-timeout)");
        }
        wf_strbuf_putc(b, '.');
        bool client;
        if (t->max_grpc_ms < 0)
            client = false;
        else if (h >= 0)
            client = t->max_grpc_ms == 0 || h < t->max_grpc_ms;
        else
            client = t->timeout_ms == 0 || (d >= 0 && d + tol < t->timeout_ms);
        if (client) {
            wf_strbuf_puts(b, "\nThe client's grpc-timeout fired");
            if (h >= 0) {
                wf_strbuf_printf(b, " (grpc-timeout: %s", r->grpc_timeout);
                wf_strbuf_puts(b, ")");
            } else if (d >= 0) {
                wf_strbuf_printf(b, " (after %lld ms", (long long)d);
                wf_strbuf_puts(b, t->timeout_ms == 0 ? ", and the route has no timeout)"
                                                     : ", before the route's timeout)");
            }
            wf_strbuf_puts(b, ": the caller's deadline was shorter than the call took. Raise "
                              "the client's deadline, or make the call faster.");
        } else {
            wf_strbuf_puts(b, "\nThe route's timeout fired");
            if (h >= 0)
                wf_strbuf_printf(b, " (it caps the client's longer grpc-timeout: %s)",
                                 r->grpc_timeout);
            wf_strbuf_puts(b, ": raise the VirtualService `timeout` (Istio also sets "
                              "max_grpc_timeout from it), or make the call faster.");
        }
        return;
    }
    if (h >= 0 && d >= 0) {
        bool client = d <= h + (h / 10 > 100 ? h / 10 : 100);
        wf_strbuf_printf(b, "\nThe client sent grpc-timeout: %s and the call took %lld ms: ",
                         r->grpc_timeout, (long long)d);
        wf_strbuf_puts(b, client ? "the client's grpc-timeout fired (a route timeout can only "
                                   "have been as long or longer)."
                                 : "the route's timeout fired before the client's deadline.");
        return;
    }
    wf_strbuf_puts(b, "\nWhich timeout fired: the route's (VirtualService `timeout`; Istio sets "
                      "the route's timeout and max_grpc_timeout from it) or the client's "
                      "grpc-timeout (used when the route has max_grpc_timeout, capped by it), "
                      "whichever is shorter");
    if (d >= 0)
        wf_strbuf_printf(b, "; this one fired after %lld ms", (long long)d);
    wf_strbuf_puts(b, ". If the route's timeout is not about that long, the client's deadline "
                      "fired. To decide here, pass --pod POD or --config-dump FILE (the route's "
                      "timeouts), or log %REQ(GRPC-TIMEOUT)%; `weftctl proxy-config route "
                      "<pod> -o json` shows timeout and max_grpc_timeout.");
}

static void read_grpc(const wf_lx_record *r, const wf_lx_routes *rt, const char *why, wf_strbuf *b)
{
    int code = wf_lx_grpc_code(r->grpc_status);
    bool local = false;
    bool client_reset = has_flag(r, "DR") || has_flag(r, "DC") ||
                        (r->details && strcmp(r->details, "http2.remote_reset") == 0);
    if (r->grpc_status && code < 0) {
        wf_strbuf_printf(b, "gRPC request (%s); gRPC status \"%s\": not a gRPC status code.", why,
                         r->grpc_status);
        return;
    }
    if (code < 0 && client_reset) {
        wf_strbuf_printf(b,
                         "gRPC request (%s) that the client cancelled: it reset the HTTP/2 "
                         "stream (RST_STREAM) before the response was complete, so the proxy "
                         "sent no status; the client reports CANCELLED (1), or "
                         "DEADLINE_EXCEEDED (4) when its own deadline passed.",
                         why);
        return;
    }
    if (code < 0 && r->details &&
        strncmp(r->details, "upstream_reset_after_response_started", 37) == 0) {
        wf_strbuf_printf(b,
                         "gRPC request (%s) whose stream was reset after the response had "
                         "started: the proxy could not send a status, so the client sees the "
                         "stream end without grpc-status and reports INTERNAL (13) or "
                         "UNAVAILABLE (14) itself.",
                         why);
        return;
    }
    int http = r->code >= 400 ? r->code : local_reply_http(r);
    if (code < 0 && http > 0 && (r->flags || (r->details && strcmp(r->details, "via_upstream")))) {
        local = true;
        code = has_flag(r, "UT") ? 4 : wf_lx_grpc_from_http(http);
    } else if (code < 0 && r->code >= 400) {
        code = wf_lx_grpc_from_http(r->code);
    }
    if (code < 0)
        return;
    wf_strbuf_printf(b, "gRPC request (%s); gRPC status %d %s: %s", why, code,
                     wf_lx_grpc_name(code), wf_lx_grpc_meaning(code));
    if (local && !r->grpc_status) {
        const char *msg = grpc_message(r);
        wf_strbuf_printf(b,
                         "\nThe proxy answered this gRPC request itself, as gRPC: :status 200, "
                         "trailers-only, grpc-status: %d",
                         code);
        if (msg)
            wf_strbuf_printf(b, ", grpc-message: %s", msg);
        if (has_flag(r, "UT"))
            wf_strbuf_puts(b, ". A router timeout is DEADLINE_EXCEEDED since Envoy PR #44479 "
                              "(Envoy before it sent UNAVAILABLE, 14); default retries do not "
                              "retry it (4 is neither unavailable nor cancelled).");
        else
            wf_strbuf_printf(b,
                             " (its HTTP %d mapped by Envoy's httpToGrpcStatus: 400->13, "
                             "401->16, 403->7, 404->12, 429/502/503/504->14, else 2).",
                             http);
    } else if (r->grpc_status && code != 0 && !r->flags) {
        wf_strbuf_puts(b, "\nThe status came from the application (the proxy flagged nothing): "
                          "read the server's logs for this call.");
    }
    if (has_flag(r, "UT") && code == 4)
        which_timeout(r, rt, b);
}

/* ---- HTTP/2 resets, GOAWAY, protocol errors ---------------------------------------------- */

static const char B032_FIX[] =
    "the upstream may speak only HTTP/2 (gRPC): name the Service port grpc or http2 (or "
    "grpc-<suffix>), or set appProtocol: grpc; `weftctl describe pod <server>` shows the "
    "port's protocol and where it came from, `weftctl proxy-config cluster <client> --fqdn "
    "<host> -o json` shows HTTP/1.1 toward the app when the cluster has no "
    "http2_protocol_options (operator report B032).";

static void read_proto(const wf_lx_record *r, bool grpc, wf_strbuf *b)
{
    bool h1_up = r->upstream_protocol && strncmp(r->upstream_protocol, "HTTP/1", 6) == 0;
    if (has_flag(r, "UPE") || details_has(r, "{protocol_error")) {
        wf_strbuf_puts(b, "Protocol error from the upstream: its reply was not the HTTP this "
                          "cluster speaks. ");
        if (grpc || h1_up)
            wf_strbuf_printf(b, "%s request sent upstream as %s: ", grpc ? "A gRPC" : "This",
                             r->upstream_protocol ? r->upstream_protocol : "HTTP/1.1 (likely)");
        else
            wf_strbuf_puts(b, "An HTTP/2-only server behind a port Istio treats as HTTP/1.1 "
                              "(named http, or unnamed and sniffed as HTTP/1.1) answers the "
                              "proxy's HTTP/1.1 with HTTP/2 frames: ");
        wf_strbuf_puts(b, B032_FIX);
        wf_strbuf_puts(b, "\nThe reverse mismatch also gives this: a port named http2/grpc in "
                          "front of an application that speaks only HTTP/1.1.");
    } else if ((grpc || h1_up) &&
               (has_flag(r, "UC") || details_has(r, "{connection_termination"))) {
        wf_strbuf_printf(b,
                         "%s whose upstream closed the connection before answering. When every "
                         "call fails this way, ",
                         grpc ? "A gRPC request" : "An HTTP/2 request sent upstream as HTTP/1.1");
        wf_strbuf_puts(b, B032_FIX);
        wf_strbuf_puts(b, " (An occasional UC is the idle keep-alive race instead.)");
    }
    if (details_has(r, "{remote_refused_stream_reset")) {
        if (b->len)
            wf_strbuf_putc(b, '\n');
        wf_strbuf_puts(b, "The upstream refused the HTTP/2 stream (RST_STREAM REFUSED_STREAM): it "
                          "did not process the request. After a GOAWAY (the upstream draining: "
                          "shutting down, a max connection age, a restart) streams above its "
                          "last stream id are refused this way; also when the connection is over "
                          "the upstream's max_concurrent_streams. It is safe to retry: Istio's "
                          "default retry_on includes refused-stream (2 retries), so seeing it "
                          "means retries were used up or are disabled on this route.");
    } else if (details_has(r, "{remote_reset")) {
        if (b->len)
            wf_strbuf_putc(b, '\n');
        wf_strbuf_puts(b, "The upstream reset the HTTP/2 stream (RST_STREAM) ");
        wf_strbuf_puts(b, details_has(r, "upstream_reset_after_response_started")
                              ? "after the response had started: the client got a truncated "
                                "response (a gRPC client sees the stream end without "
                                "grpc-status: INTERNAL or UNAVAILABLE)."
                              : "before answering: the server or a proxy in front of it aborted "
                                "the request (a crash, an overload limit, a cancelled call). "
                                "Check the upstream's logs; VirtualService retries.retryOn "
                                "`reset` retries it.");
    }
    if (r->details && strncmp(r->details, "http2.", 6) == 0 && has_flag(r, "DPE")) {
        if (b->len)
            wf_strbuf_putc(b, '\n');
        wf_strbuf_printf(b,
                         "Downstream HTTP/2 protocol error (%s): the client broke HTTP/2, "
                         "so the proxy reset the stream or closed the connection with GOAWAY; "
                         "nothing was sent upstream.",
                         r->details);
    }
}

/* ---- TCP --------------------------------------------------------------------------------- */

static void read_tcp(const wf_lx_record *r, wf_strbuf *b)
{
    wf_strbuf_printf(b,
                     "A TCP connection (the TCP proxy's line: Istio logs \"- - -\" and code 0 "
                     "for TCP) to %s, %s bytes received from the client, %s sent to it",
                     r->cluster ? r->cluster : "no cluster",
                     r->bytes_received ? r->bytes_received : "-",
                     r->bytes_sent ? r->bytes_sent : "-");
    if (r->duration)
        wf_strbuf_printf(b, ", lasting %s ms", r->duration);
    wf_strbuf_putc(b, '.');
    bool blackhole = r->cluster && strcmp(r->cluster, "BlackHoleCluster") == 0;
    static const struct {
        const char *flag, *text;
    } m[] = {
        {"UF", "UF: the TCP proxy could not connect to the upstream (connection refused, connect "
               "timeout, or a failed TLS handshake: see the transport failure reason); the "
               "client's connection was closed without data."},
        {"URX", "URX: the connect attempts were used up (tcp_proxy max_connect_attempts, 1 by "
                "default; stat upstream_cx_connect_attempts_exceeded)."},
        {"UO", "UO: the cluster's connection circuit breaker was full (DestinationRule "
               "connectionPool.tcp.maxConnections; stat upstream_cx_overflow)."},
        {"NR", "NR: no filter chain of the listener matched the connection (destination port, "
               "SNI, transport or ALPN): plaintext to a STRICT mTLS port, or an SNI no `tls` "
               "route names; older Envoy also logged NR for a missing cluster."},
        {"NC", "NC: the tcp_proxy's cluster does not exist in this proxy (older Envoy logged NR): "
               "check `weftctl proxy-config cluster <pod>` and `weftctl proxy-status`."},
        {"DC", "DC: the client closed the connection first; the normal end of a session the "
               "client ends, a problem only when nothing was exchanged."},
        {"UC", "UC: the upstream closed the connection first; the normal end of a session the "
               "server ends (a server-first protocol such as MySQL or SMTP on a sniffed port "
               "also closes when the proxy waits for the client: name the port tcp-...)."},
        {"DT", "DT: the connection reached its maximum duration (DestinationRule "
               "connectionPool.tcp.maxConnectionDuration)."},
    };
    if (has_flag(r, "UH"))
        wf_strbuf_puts(b, blackhole ? "\nUH to BlackHoleCluster: refused on purpose, the cluster "
                                      "has no endpoints (the capture reading below says why: "
                                      "outboundTrafficPolicy REGISTRY_ONLY, or the loop guard)."
                                    : "\nUH: the cluster had no healthy endpoint (no pod selected, "
                                      "none ready, or all ejected): `weftctl proxy-config "
                                      "endpoint <pod> --cluster <cluster>`.");
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (has_flag(r, m[i].flag))
            wf_strbuf_printf(b, "\n%s", m[i].text);
    if (r->conn_details && strstr(r->conn_details, "idle"))
        wf_strbuf_printf(b,
                         "\nIdle timeout (%s): no bytes moved either way for the TCP proxy's "
                         "idle_timeout (Envoy's default 1 h; DestinationRule "
                         "connectionPool.tcp.idleTimeout or the proxy's IDLE_TIMEOUT metadata), "
                         "so the proxy closed both sides. For long quiet connections raise "
                         "idleTimeout or let the application send keepalives.",
                         r->conn_details);
}

int wf_lx_proto_read(const wf_lx_record *r, const wf_lx_routes *rt, wf_strbuf *grpc,
                     wf_strbuf *proto, wf_strbuf *tcp)
{
    if (wf_lx_is_tcp(r)) {
        read_tcp(r, tcp);
    } else if (r->method || r->path || r->protocol) { /* else a listener's line: the tables */
        const char *why = NULL;
        bool g = wf_lx_is_grpc(r, &why);
        if (g)
            read_grpc(r, rt, why, grpc);
        read_proto(r, g, proto);
    }
    return wf_strbuf_failed(grpc) || wf_strbuf_failed(proto) || wf_strbuf_failed(tcp) ? -1 : 0;
}
