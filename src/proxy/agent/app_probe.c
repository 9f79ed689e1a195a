/*
 * app_probe.c - pilot-agent's application probes (app_probe.h).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/log.h"
#include "proxy/agent/app_probe.h"
#include "http/http_fetch.h"

#define MAX_REDIRECTS 10 /* Kubernetes' prober and pilot-agent's redirectChecker */
#define PATH_PATTERN                                                                               \
    "^/(app-health|app-lifecycle)/[^/]+/(livez|readyz|startupz|prestopz|poststartz)$"

/* ---------- parsing ---------- */

static bool path_ok(const char *p)
{
    static const char *const roots[] = {"/app-health/", "/app-lifecycle/"};
    static const char *const kinds[] = {"livez", "readyz", "startupz", "prestopz", "poststartz"};
    for (size_t i = 0; i < 2; i++) {
        size_t rl = strlen(roots[i]);
        if (strncmp(p, roots[i], rl) != 0)
            continue;
        const char *c = p + rl, *slash = strchr(c, '/');
        if (!slash || slash == c)
            return false;
        for (size_t k = 0; k < 5; k++)
            if (strcmp(slash + 1, kinds[k]) == 0)
                return true;
    }
    return false;
}

static char *dup_str(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *oom = true;
    return d;
}

/* httpGet.httpHeaders [{"name","value"}] as header lines. */
static char *header_lines(json_t *arr, bool *oom)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return NULL;
    wf_strbuf b = WF_STRBUF_INIT;
    size_t i;
    json_t *h;
    json_array_foreach(arr, i, h)
    {
        const char *n = json_string_value(json_object_get(h, "name"));
        const char *v = json_string_value(json_object_get(h, "value"));
        if (n && *n && !strpbrk(n, "\r\n: ") && (!v || !strpbrk(v, "\r\n")))
            wf_strbuf_printf(&b, "%s: %s\r\n", n, v ? v : "");
    }
    if (wf_strbuf_failed(&b)) {
        *oom = true;
        wf_strbuf_free(&b);
        return NULL;
    }
    return b.data; /* NULL when no valid header */
}

static int int_port(json_t *action, const char *path, int *port, wf_strbuf *err)
{
    json_t *p = json_object_get(action, "port");
    json_int_t v = json_is_integer(p) ? json_integer_value(p) : -1;
    if (!json_is_integer(p)) {
        wf_strbuf_printf(err, "invalid prober config for %s, the port must be int type", path);
        return -1;
    }
    if (v < 1 || v > 65535) {
        wf_strbuf_printf(err, "invalid prober config for %s, port %lld is not 1..65535", path,
                         (long long)v);
        return -1;
    }
    *port = (int)v;
    return 0;
}

static int parse_one(const char *path, json_t *o, wp_app_prober *p, wf_strbuf *err)
{
    bool oom = false;
    if (!path_ok(path)) {
        wf_strbuf_printf(err, "invalid path, must be in form of regex pattern %s", PATH_PATTERN);
        return -1;
    }
    json_t *http = json_object_get(o, "httpGet"), *tcp = json_object_get(o, "tcpSocket"),
           *grpc = json_object_get(o, "grpc");
    if (!json_is_object(o) ||
        (json_is_object(http) + json_is_object(tcp) + json_is_object(grpc)) != 1) {
        wf_strbuf_puts(err, "invalid prober type, must be one of type httpGet, tcpSocket or gRPC");
        return -1;
    }
    p->path = dup_str(path, &oom);
    json_t *to = json_object_get(o, "timeoutSeconds");
    p->timeout_ms = json_is_integer(to) && json_integer_value(to) > 0
                        ? (uint64_t)json_integer_value(to) * 1000
                        : 1000;
    json_t *action = http ? http : tcp ? tcp : grpc;
    p->kind = http ? WP_PROBE_HTTP : tcp ? WP_PROBE_TCP : WP_PROBE_GRPC;
    if (int_port(action, path, &p->port, err) != 0)
        return -1;
    if (http) {
        const char *hp = json_string_value(json_object_get(http, "path"));
        char *full = malloc(strlen(hp ? hp : "") + 2);
        if (full)
            snprintf(full, strlen(hp ? hp : "") + 2, "%s%s", hp && hp[0] == '/' ? "" : "/",
                     hp ? hp : "");
        p->http_path = full;
        oom |= !full;
        const char *scheme = json_string_value(json_object_get(http, "scheme"));
        p->https = scheme && strcmp(scheme, "HTTPS") == 0;
        p->http_headers = header_lines(json_object_get(http, "httpHeaders"), &oom);
    }
    if (grpc)
        p->grpc_service = dup_str(json_string_value(json_object_get(grpc, "service")), &oom);
    if (oom) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

int wp_app_probers_parse(const char *text, wp_app_probers *out, wf_strbuf *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *root = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        wf_strbuf_printf(err, "failed to decode app prober: %s (json string = %s)",
                         root ? "not a JSON object" : je.text, text ? text : "");
        json_decref(root);
        return -1;
    }
    out->v = calloc(json_object_size(root) + 1, sizeof(*out->v));
    if (!out->v) {
        json_decref(root);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (parse_one(key, val, &out->v[out->n++], err) != 0) {
            json_decref(root);
            wp_app_probers_free(out);
            return -1;
        }
    }
    json_decref(root);
    return 0;
}

void wp_app_probers_free(wp_app_probers *p)
{
    for (size_t i = 0; p && i < p->n; i++) {
        free(p->v[i].path);
        free(p->v[i].http_path);
        free(p->v[i].http_headers);
        free(p->v[i].grpc_service);
    }
    if (p) {
        free(p->v);
        p->v = NULL;
        p->n = 0;
    }
}

const wp_app_prober *wp_app_probers_find(const wp_app_probers *p, const char *path, size_t len)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (strlen(p->v[i].path) == len && memcmp(p->v[i].path, path, len) == 0)
            return &p->v[i];
    return NULL;
}

/* ---------- probing ---------- */

struct wp_app_probe {
    uv_loop_t *loop;
    const wp_app_prober *p;
    struct sockaddr_storage dest, source;
    bool has_source;
    char dest_ip[64];
    char host[300];
    char *headers; /* forwarded + the prober's, header lines */
    char target[1024];
    int redirects;
    wf_http_fetch *fetch;
    wp_app_probe_cb cb;
    void *ud;
};

static void probe_free(wp_app_probe *pr)
{
    free(pr->headers);
    free(pr);
}

static void answer(wp_app_probe *pr, int status, const char *body, size_t len)
{
    pr->fetch = NULL;
    pr->cb(pr->ud, status, body, len);
    probe_free(pr);
}

static int start_fetch(wp_app_probe *pr);

/* A 3xx: follow a Location on the same host (its port and path). Returns 1 when a new
 * request went out, 0 when the redirect is not followed (a success), -1 when more than
 * MAX_REDIRECTS or out of memory. */
static int follow(wp_app_probe *pr, const char *loc)
{
    const char *path = loc;
    int port = -1;
    if (strncmp(loc, "http://", 7) == 0) {
        const char *h = loc + 7, *end = h + strcspn(h, "/?#");
        const char *colon = memchr(h, ':', (size_t)(end - h));
        size_t hl = (size_t)((colon ? colon : end) - h);
        if (h[0] == '[') { /* [v6]:port */
            const char *rb = memchr(h, ']', (size_t)(end - h));
            if (!rb)
                return 0;
            colon = rb[1] == ':' ? rb + 1 : NULL;
            hl = (size_t)(rb - h - 1);
            h++;
        }
        if (hl != strlen(pr->dest_ip) || strncmp(h, pr->dest_ip, hl) != 0)
            return 0; /* another host: Kubernetes counts the redirect as a success */
        port = colon ? atoi(colon + 1) : 80;
        path = *end ? end : "/";
    } else if (loc[0] != '/') {
        return 0;
    }
    if (++pr->redirects > MAX_REDIRECTS)
        return -1;
    if (port > 0 && port < 65536) {
        if (pr->dest.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&pr->dest)->sin6_port = htons((uint16_t)port);
        else
            ((struct sockaddr_in *)&pr->dest)->sin_port = htons((uint16_t)port);
    }
    snprintf(pr->target, sizeof pr->target, "%s", path);
    return start_fetch(pr) == 0 ? 1 : -1;
}

static void on_fetched(void *ud, const wf_http_fetch_result *r)
{
    wp_app_probe *pr = ud;
    pr->fetch = NULL;
    if (!r->ok) {
        WF_LOG(WF_LC_admin, WF_LOG_ERROR,
               "probes: Request to probe app failed: %s, original URL path = %s\napp URL path = %s",
               r->error, pr->p->path, pr->target);
        answer(pr, 500, "", 0);
        return;
    }
    if (pr->p->kind == WP_PROBE_TCP) {
        answer(pr, 200, "", 0);
        return;
    }
    if (r->status >= 300 && r->status < 400) {
        int f = r->location[0] ? follow(pr, r->location) : 0;
        if (f < 0)
            WF_LOG(WF_LC_admin, WF_LOG_ERROR, "probes: Request to probe app failed: %s: %s",
                   pr->p->path,
                   pr->redirects > MAX_REDIRECTS ? "stopped after 10 redirects" : "out of memory");
        if (f <= 0) /* not followed: a redirect is a success (Kubernetes) */
            answer(pr, f < 0 ? 500 : 200, "", 0);
        return;
    }
    answer(pr, r->status, r->body, r->body_len);
}

static int start_fetch(wp_app_probe *pr)
{
    wf_http_fetch_req req = {.dest = (struct sockaddr *)&pr->dest,
                             .source = pr->has_source ? (struct sockaddr *)&pr->source : NULL,
                             .connect_only = pr->p->kind == WP_PROBE_TCP,
                             .target = pr->target,
                             .host = pr->host,
                             .headers = pr->headers,
                             .timeout_ms = pr->p->timeout_ms,
                             .max_body = WP_APP_PROBE_MAX_BODY};
    pr->fetch = wf_http_fetch_start(pr->loop, &req, on_fetched, pr);
    return pr->fetch ? 0 : -1;
}

/* Host: the incoming one, its port replaced by the probe's when it named the status port;
 * without one, dest:port. */
static void make_host(wp_app_probe *pr, const wp_app_probe_ctx *ctx)
{
    bool v6 = strchr(pr->dest_ip, ':') != NULL;
    if (!ctx->host || !*ctx->host) {
        snprintf(pr->host, sizeof pr->host, v6 ? "[%s]:%d" : "%s:%d", pr->dest_ip, pr->p->port);
        return;
    }
    const char *colon = strrchr(ctx->host, ':');
    const char *rb = strrchr(ctx->host, ']');
    if (colon && (!rb || colon > rb) && atoi(colon + 1) == ctx->status_port)
        snprintf(pr->host, sizeof pr->host, "%.*s:%d", (int)(colon - ctx->host), ctx->host,
                 pr->p->port);
    else
        snprintf(pr->host, sizeof pr->host, "%s", ctx->host);
}

/* The forwarded lines, then the prober's httpHeaders whose names were not forwarded. */
static char *merge_headers(const char *fwd, const char *own)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, fwd ? fwd : "");
    for (const char *l = own; l && *l;) {
        const char *eol = strstr(l, "\r\n"), *colon = strchr(l, ':');
        if (!eol || !colon)
            break;
        size_t nl = (size_t)(colon - l);
        bool dup = false;
        for (const char *f = fwd; f && *f && !dup;) {
            const char *fe = strstr(f, "\r\n");
            if (!fe)
                break;
            dup = strncasecmp(f, l, nl) == 0 && f[nl] == ':';
            f = fe + 2;
        }
        if (!dup)
            wf_strbuf_append(&b, l, (size_t)(eol + 2 - l));
        l = eol + 2;
    }
    if (wf_strbuf_failed(&b)) {
        wf_strbuf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

wp_app_probe *wp_app_probe_start(uv_loop_t *loop, const wp_app_prober *p,
                                 const wp_app_probe_ctx *ctx, wp_app_probe_cb cb, void *ud)
{
    wp_app_probe *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return NULL;
    pr->loop = loop;
    pr->p = p;
    pr->cb = cb;
    pr->ud = ud;
    snprintf(pr->dest_ip, sizeof pr->dest_ip, "%s", ctx->dest_ip ? ctx->dest_ip : "127.0.0.1");
    if (uv_ip4_addr(pr->dest_ip, p->port, (struct sockaddr_in *)&pr->dest) == 0) {
        pr->has_source = uv_ip4_addr("127.0.0.6", 0, (struct sockaddr_in *)&pr->source) == 0;
    } else if (uv_ip6_addr(pr->dest_ip, p->port, (struct sockaddr_in6 *)&pr->dest) != 0) {
        free(pr);
        return NULL;
    }
    make_host(pr, ctx);
    snprintf(pr->target, sizeof pr->target, "%s", p->http_path ? p->http_path : "/");
    pr->headers = merge_headers(ctx->headers, p->http_headers);
    if (!pr->headers) {
        free(pr);
        return NULL;
    }
    if (start_fetch(pr) != 0) {
        probe_free(pr);
        return NULL;
    }
    return pr;
}

const char *wp_app_probe_unsupported(const wp_app_prober *p)
{
    if (p->kind == WP_PROBE_GRPC)
        return "grpc probes are not implemented by weft-proxy";
    if (p->kind == WP_PROBE_HTTP && p->https)
        return "httpGet probes with scheme HTTPS are not implemented by weft-proxy";
    return NULL;
}

void wp_app_probe_cancel(wp_app_probe *pr)
{
    if (!pr)
        return;
    wf_http_fetch_cancel(pr->fetch);
    probe_free(pr);
}
