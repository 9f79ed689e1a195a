/*
 * xds_metrics.c - the simulated proxies' /stats/prometheus (xds_metrics.h).
 */
#include "xds_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/strbuf.h"
#include "http/h1_server.h"

typedef struct {
    char *pod, *ns, *ip, *app, *version, *wl;
} mproxy;

struct xmet_server {
    uv_loop_t *loop;
    h1s_server *srv;
    mproxy *p;
    size_t *by_ip; /* indices sorted by ip */
    size_t n, filler, scrapes;
    uint64_t start_ms;
};

static const double bounds[] = {0.5,   1,      5,      10,      25,     50,    100,
                                250,   500,    1000,   2500,    5000,   10000, 30000,
                                60000, 300000, 600000, 1800000, 3600000};
#define NB (sizeof bounds / sizeof bounds[0])

/* Share of requests within bound b (the shape in xds_metrics.h). */
static double within(double b)
{
    return b >= 250 ? 1 : b >= 100 ? 0.99 : b >= 25 ? 0.9 : b >= 5 ? 0.5 : b >= 1 ? 0.2 : 0.05;
}

static void labels(wf_strbuf *o, const char *reporter, const mproxy *src, const mproxy *dst,
                   const char *code, const char *flags)
{
    wf_strbuf_printf(o,
                     "reporter=\"%s\",source_workload=\"%s\",source_canonical_service=\"%s\","
                     "source_canonical_revision=\"%s\",source_workload_namespace=\"%s\","
                     "source_principal=\"spiffe://cluster.local/ns/%s/sa/default\","
                     "source_app=\"%s\",source_version=\"%s\",source_cluster=\"Kubernetes\","
                     "destination_workload=\"%s\",destination_workload_namespace=\"%s\","
                     "destination_principal=\"spiffe://cluster.local/ns/%s/sa/default\","
                     "destination_app=\"%s\",destination_version=\"%s\","
                     "destination_service=\"%s.%s.svc.cluster.local\","
                     "destination_canonical_service=\"%s\",destination_canonical_revision=\"%s\","
                     "destination_service_name=\"%s\",destination_service_namespace=\"%s\","
                     "destination_cluster=\"Kubernetes\",request_protocol=\"http\","
                     "response_code=\"%s\",grpc_response_status=\"\",response_flags=\"%s\","
                     "connection_security_policy=\"%s\"",
                     reporter, src->wl, src->app, src->version[0] ? src->version : "latest",
                     src->ns, src->ns, src->app, src->version, dst->wl, dst->ns, dst->ns, dst->app,
                     dst->version, dst->app, dst->ns, dst->app,
                     dst->version[0] ? dst->version : "latest", dst->app, dst->ns, code, flags,
                     strcmp(reporter, "destination") == 0 ? "mutual_tls" : "unknown");
}

static void series(wf_strbuf *o, const char *reporter, const mproxy *src, const mproxy *dst,
                   const char *code, const char *flags, double count)
{
    wf_strbuf lab = WF_STRBUF_INIT;
    labels(&lab, reporter, src, dst, code, flags);
    const char *f = wf_strbuf_cstr(&lab);
    long long c = (long long)count;
    wf_strbuf_printf(o, "istio_requests_total{%s} %lld\n", f, c);
    for (size_t i = 0; i < NB; i++)
        wf_strbuf_printf(o, "istio_request_duration_milliseconds_bucket{%s,le=\"%g\"} %lld\n", f,
                         bounds[i], (long long)(c * within(bounds[i])));
    wf_strbuf_printf(o, "istio_request_duration_milliseconds_bucket{%s,le=\"+Inf\"} %lld\n", f, c);
    wf_strbuf_printf(o, "istio_request_duration_milliseconds_sum{%s} %lld\n", f, c * 9);
    wf_strbuf_printf(o, "istio_request_duration_milliseconds_count{%s} %lld\n", f, c);
    wf_strbuf_free(&lab);
}

/* One edge src -> dst as reporter sees it, after secs seconds. */
static void edge(wf_strbuf *o, const char *reporter, const xmet_server *s, size_t src, size_t dst,
                 double secs)
{
    double rps = 1 + (double)(src % 4);
    bool errors = src % 10 == 0;
    series(o, reporter, &s->p[src], &s->p[dst], "200", "-", rps * secs * (errors ? 0.95 : 1));
    if (errors)
        series(o, reporter, &s->p[src], &s->p[dst], "503", "UF", rps * secs * 0.05);
}

static void render(const xmet_server *s, size_t i, wf_strbuf *o)
{
    static const size_t step[] = {1, 17, 101};
    double secs = (double)(uv_now(s->loop) - s->start_ms) / 1000.0;
    wf_strbuf_puts(o, "# TYPE istio_requests_total counter\n"
                      "# TYPE istio_request_duration_milliseconds histogram\n");
    for (size_t k = 0; k < 3 && s->n > 1; k++) {
        edge(o, "source", s, i, (i + step[k]) % s->n, secs);
        edge(o, "destination", s, (i + s->n - step[k] % s->n) % s->n, i, secs);
    }
    wf_strbuf_puts(o, "# TYPE envoy_server_state gauge\nenvoy_server_state{} 0\n"
                      "envoy_control_plane_connected_state{} 1\n"
                      "envoy_server_days_until_first_cert_expiring{} 365\n");
    for (size_t k = 0; k < s->filler; k++)
        wf_strbuf_printf(o,
                         "envoy_cluster_upstream_cx_total{cluster_name=\"outbound|80||svc-%zu."
                         "%s.svc.cluster.local\"} %zu\n",
                         k, s->p[i].ns, k % 7);
}

static int ip_cmp_ctx(const xmet_server *s, size_t a, size_t b)
{
    return strcmp(s->p[a].ip, s->p[b].ip);
}

/* insertion into sorted order would be quadratic for 1,000+: a shell sort on indices */
static void sort_by_ip(xmet_server *s)
{
    for (size_t gap = s->n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < s->n; i++)
            for (size_t j = i; j >= gap && ip_cmp_ctx(s, s->by_ip[j - gap], s->by_ip[j]) > 0;
                 j -= gap) {
                size_t t = s->by_ip[j];
                s->by_ip[j] = s->by_ip[j - gap];
                s->by_ip[j - gap] = t;
            }
}

static long find_ip(const xmet_server *s, const char *ip, size_t len)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *m = s->p[s->by_ip[mid]].ip;
        int c = strncmp(m, ip, len);
        if (c == 0 && m[len] != '\0')
            c = 1;
        if (c == 0)
            return (long)s->by_ip[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static void on_request(void *ud, h1s_conn *c, const h1s_request *req)
{
    xmet_server *s = ud;
    const char *host = NULL;
    size_t hl = 0;
    for (size_t i = 0; i < req->nheaders; i++)
        if (req->headers[i].name.len == 4 && strncasecmp(req->headers[i].name.p, "host", 4) == 0) {
            host = req->headers[i].value.p;
            hl = req->headers[i].value.len;
        }
    const char *colon = host ? memchr(host, ':', hl) : NULL;
    long i = colon ? find_ip(s, host, (size_t)(colon - host)) : -1;
    bool path = req->path.len == 17 && memcmp(req->path.p, "/stats/prometheus", 17) == 0;
    if (i < 0 || !path) {
        h1s_respond(c, 404, NULL, "Content-Type: text/plain\r\n", "not found\n", 10);
        return;
    }
    wf_strbuf o = WF_STRBUF_INIT;
    render(s, (size_t)i, &o);
    s->scrapes++;
    h1s_respond(c, 200, NULL, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n",
                o.data ? o.data : "", o.len);
    wf_strbuf_free(&o);
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

static void server_closed(void *arg)
{
    xmet_server *s = arg;
    for (size_t i = 0; i < s->n; i++) {
        free(s->p[i].pod);
        free(s->p[i].ns);
        free(s->p[i].ip);
        free(s->p[i].app);
        free(s->p[i].version);
        free(s->p[i].wl);
    }
    free(s->p);
    free(s->by_ip);
    free(s);
}

xmet_server *xmet_start(uv_loop_t *loop, const char *addr, const xmet_proxy *proxies, size_t n,
                        size_t filler, char *err, size_t cap)
{
    struct sockaddr_storage sa;
    if (h1s_parse_address(addr, &sa) != 0) {
        snprintf(err, cap, "--serve-metrics %s: want IP:PORT", addr);
        return NULL;
    }
    xmet_server *s = calloc(1, sizeof *s);
    if (!s || !(s->p = calloc(n ? n : 1, sizeof *s->p)) ||
        !(s->by_ip = calloc(n ? n : 1, sizeof *s->by_ip))) {
        if (s)
            free(s->p);
        free(s);
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    s->loop = loop;
    s->n = n;
    s->filler = filler;
    s->start_ms = uv_now(loop);
    for (size_t i = 0; i < n; i++) {
        mproxy *p = &s->p[i];
        const xmet_proxy *q = &proxies[i];
        p->pod = dup_or_empty(q->pod);
        p->ns = dup_or_empty(q->ns);
        p->ip = dup_or_empty(q->ip);
        p->app = dup_or_empty(q->app && q->app[0] ? q->app : q->pod);
        p->version = dup_or_empty(q->version);
        size_t wl = strlen(p->app) + strlen(p->version) + 2;
        if ((p->wl = malloc(wl)))
            snprintf(p->wl, wl, "%s%s%s", p->app, p->version[0] ? "-" : "", p->version);
        s->by_ip[i] = i;
        if (!p->pod || !p->ns || !p->ip || !p->app || !p->version || !p->wl) {
            s->n = i + 1;
            server_closed(s);
            snprintf(err, cap, "out of memory");
            return NULL;
        }
    }
    sort_by_ip(s);
    h1s_opts ho = {.body = H1S_BODY_SKIP,
                   .max_connections = 256,
                   .limit = H1S_LIMIT_CLOSE_OLDEST,
                   .idle_timeout_ms = 10000,
                   .keep_alive = true,
                   .on_closed = server_closed,
                   .closed_arg = s};
    h1s_callbacks cb = {.on_request = on_request, .ud = s};
    int rc = 0;
    s->srv = h1s_listen(loop, (struct sockaddr *)&sa, &ho, &cb, &rc);
    if (!s->srv) {
        snprintf(err, cap, "--serve-metrics %s: %s", addr, uv_strerror(rc));
        server_closed(s);
        return NULL;
    }
    return s;
}

size_t xmet_scrapes(const xmet_server *s)
{
    return s ? s->scrapes : 0;
}

void xmet_close(xmet_server *s)
{
    if (s && s->srv) {
        h1s_server *srv = s->srv;
        s->srv = NULL;
        h1s_close(srv); /* frees s through server_closed */
    }
}
