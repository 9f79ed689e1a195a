/*
 * webhook.c - istiod's admission webhook port (see webhook.h).
 */
#include "pilot/webhook.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/log.h"
#include "http/h1_server.h"
#include "pilot/pilot.h"
#include "pilot/serving_cert.h"
#include "pilot/webhook_validate.h"
#include "tls/tls.h"

#define WH_MAX_BODY  (16u * 1024 * 1024)
#define WH_MAX_HEAD  (64u * 1024)
#define WH_MAX_CONNS 256
#define WH_IDLE_MS   (90u * 1000) /* Go's http.Server IdleTimeout istiod sets is similar */

struct wf_webhook {
    h1s_server *srv;
    const wf_inject_config *inject;
    wf_serving_cert cert;
    /* counters: {"<labels>": n} per metric, and the injector's totals */
    json_t *passed, *failed, *http_error;
    uint64_t inj_requests, inj_success, inj_skip, inj_failure;
};

static const char *const alpn[] = {"http/1.1"};

/* ---- counters ---------------------------------------------------------------------------- */

static void count(json_t *m, const char *labels)
{
    json_t *v = json_object_get(m, labels);
    json_object_set_new(m, labels, json_integer(v ? json_integer_value(v) + 1 : 1));
}

static void count_validation(wf_webhook *w, int status, const wf_whv_outcome *oc)
{
    char labels[640];
    switch (oc->result) {
    case WF_WHV_HTTP_ERROR:
        snprintf(labels, sizeof labels, "status=\"%d\"", status);
        count(w->http_error, labels);
        break;
    case WF_WHV_PASSED:
        snprintf(labels, sizeof labels, "group=\"%s\",resource=\"%s\",version=\"%s\"", oc->group,
                 oc->resource, oc->version);
        count(w->passed, labels);
        break;
    case WF_WHV_FAILED:
        snprintf(labels, sizeof labels, "group=\"%s\",reason=\"%s\",resource=\"%s\",version=\"%s\"",
                 oc->group, oc->reason, oc->resource, oc->version);
        count(w->failed, labels);
        break;
    default:
        break;
    }
}

/* The injector's answer: a patch (success), allowed without one (skip), else a failure. */
static void count_injection(wf_webhook *w, int status, const wf_strbuf *body)
{
    w->inj_requests++;
    json_t *j = status == 200 ? json_loadb(body->data ? body->data : "", body->len, 0, NULL) : NULL;
    const json_t *resp = json_object_get(j, "response");
    if (!json_is_true(json_object_get(resp, "allowed")))
        w->inj_failure++;
    else if (json_object_get(resp, "patch"))
        w->inj_success++;
    else
        w->inj_skip++;
    json_decref(j);
}

static void metric_map(wf_strbuf *out, const char *name, const char *help, const json_t *m)
{
    wf_strbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
        wf_strbuf_printf(out, "%s{%s} %lld\n", name, k, (long long)json_integer_value(v));
}

static void metric_one(wf_strbuf *out, const char *name, const char *help, uint64_t n)
{
    wf_strbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                     (unsigned long long)n);
}

void wf_webhook_metrics_text(const wf_webhook *w, wf_strbuf *out)
{
    if (!w)
        return;
    metric_map(out, "galley_validation_passed", "Resource is valid.", w->passed);
    metric_map(out, "galley_validation_failed", "Resource validation failed.", w->failed);
    metric_map(out, "galley_validation_http_error", "Resource validation http serve errors.",
               w->http_error);
    metric_one(out, "sidecar_injection_requests_total",
               "Total number of sidecar injection requests.", w->inj_requests);
    metric_one(out, "sidecar_injection_success_total",
               "Total number of successful sidecar injection requests.", w->inj_success);
    metric_one(out, "sidecar_injection_skip_total",
               "Total number of skipped sidecar injection requests.", w->inj_skip);
    metric_one(out, "sidecar_injection_failure_total",
               "Total number of failed sidecar injection requests.", w->inj_failure);
}

/* ---- requests ---------------------------------------------------------------------------- */

static bool path_is(h1_str p, const char *exact)
{
    size_t n = strlen(exact);
    return p.len == n && memcmp(p.p, exact, n) == 0;
}

/* exact, or below it ("/inject/cluster/c1") */
static bool path_under(h1_str p, const char *base)
{
    size_t n = strlen(base);
    return path_is(p, base) || (p.len > n && memcmp(p.p, base, n) == 0 && p.p[n] == '/');
}

static void answer(h1s_conn *c, int status, const wf_strbuf *body)
{
    const char *head = status == 200 ? "Content-Type: application/json\r\n"
                                     : "Content-Type: text/plain; charset=utf-8\r\n"
                                       "X-Content-Type-Options: nosniff\r\n";
    /* Go's status text where Envoy's table (h1s_reason) has none */
    const char *reason = status == 415 ? "Unsupported Media Type" : NULL;
    h1s_respond(c, status, reason, head, body->data ? body->data : "", body->len);
}

static void on_request(void *ud, h1s_conn *c, const h1s_request *req)
{
    wf_webhook *w = ud;
    const h1_header *ct = h1_find_header(req->headers, req->nheaders, "content-type");
    char ctype[256] = "";
    if (ct)
        snprintf(ctype, sizeof ctype, "%.*s", (int)ct->value.len, ct->value.p);
    wf_strbuf out = WF_STRBUF_INIT;
    int status;
    if (path_is(req->path, "/httpsReady")) {
        h1s_respond(c, 200, NULL, NULL, "", 0);
        return;
    } else if (path_under(req->path, "/inject")) {
        char path[1024];
        snprintf(path, sizeof path, "%.*s", (int)req->path.len, req->path.p);
        status =
            wf_inject_review(w->inject, path, ct ? ctype : NULL, req->body, req->body_len, &out);
        count_injection(w, status, &out);
    } else if (path_under(req->path, "/validate")) {
        wf_whv_outcome oc;
        status = wf_webhook_validate(ct ? ctype : NULL, req->body, req->body_len, &out, &oc);
        count_validation(w, status, &oc);
    } else {
        status = 404;
        wf_strbuf_puts(&out, "404 page not found\n");
    }
    if (wf_strbuf_failed(&out)) {
        wf_strbuf_reset(&out);
        status = 500;
        wf_strbuf_puts(&out, "out of memory\n");
    }
    WF_LOG(WF_LC_main, WF_LOG_DEBUG, "webhook: %.*s %.*s -> %d", (int)req->method.len,
           req->method.p, (int)req->path.len, req->path.p, status);
    answer(c, status, &out);
    wf_strbuf_free(&out);
}

static void on_error(void *ud, h1s_conn *c, int status, const char *details)
{
    (void)ud;
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_printf(&b, "%s\n", details);
    answer(c, status, &b);
    wf_strbuf_free(&b);
}

/* ---- lifetime ---------------------------------------------------------------------------- */

static void free_webhook(void *arg)
{
    wf_webhook *w = arg;
    json_decref(w->passed);
    json_decref(w->failed);
    json_decref(w->http_error);
    free(w);
}

int wf_webhook_start(uv_loop_t *loop, const wf_webhook_opts *o, int64_t now_s, wf_webhook **out,
                     int *uv_err, char *err, size_t cap)
{
    char ip[64];
    int port, rc = 0;
    struct sockaddr_storage sa;
    if (uv_err)
        *uv_err = 0;
    if (wf_pilot_parse_addr(o->addr, ip, sizeof ip, &port) ||
        h1s_parse_address(o->addr, &sa) != 0) {
        snprintf(err, cap, "bad --webhookAddr %s: want ip:port", o->addr);
        return -1;
    }
    wf_webhook *w = calloc(1, sizeof *w);
    if (!w || !(w->passed = json_object()) || !(w->failed = json_object()) ||
        !(w->http_error = json_object())) {
        if (w)
            free_webhook(w);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    w->inject = o->inject;
    wf_serving_cert_init(&w->cert, o->cas, o->names, ip, alpn, 1, false);
    char why[256];
    wf_tls_ctx *ctx = wf_serving_cert_issue(&w->cert, now_s, why, sizeof why);
    if (!ctx) {
        snprintf(err, cap, "--webhookAddr %s: cannot make the serving certificate: %s", o->addr,
                 why);
        free_webhook(w);
        return -1;
    }
    h1s_opts ho = {.body = H1S_BODY_BUFFER,
                   .max_body = WH_MAX_BODY,
                   .max_head = WH_MAX_HEAD,
                   .max_connections = WH_MAX_CONNS,
                   .limit = H1S_LIMIT_CLOSE_OLDEST,
                   .idle_timeout_ms = WH_IDLE_MS,
                   .keep_alive = true,
                   .tls = ctx,
                   .on_closed = free_webhook,
                   .closed_arg = w};
    h1s_callbacks cb = {.on_request = on_request, .on_error = on_error, .ud = w};
    w->srv = h1s_listen(loop, (struct sockaddr *)&sa, &ho, &cb, &rc);
    wf_tls_ctx_free(ctx); /* the server holds its reference */
    if (!w->srv) {
        snprintf(err, cap, "cannot listen for the webhooks on %s: %s", o->addr, uv_strerror(rc));
        if (uv_err)
            *uv_err = rc;
        free_webhook(w);
        return -1;
    }
    *out = w;
    return 0;
}

void wf_webhook_refresh(wf_webhook *w, int64_t now_s)
{
    const char *why;
    if (!w || !wf_serving_cert_due(&w->cert, now_s, &why))
        return;
    char err[256];
    wf_tls_ctx *ctx = wf_serving_cert_issue(&w->cert, now_s, err, sizeof err);
    if (!ctx) {
        WF_LOG(WF_LC_secret, WF_LOG_WARN,
               "cannot renew the serving certificate of the webhook port: %s", err);
        return;
    }
    h1s_set_tls(w->srv, ctx);
    wf_tls_ctx_free(ctx);
    WF_LOG(WF_LC_secret, WF_LOG_INFO, "webhook port: new serving certificate (%s)", why);
}

void wf_webhook_set_inject(wf_webhook *w, const wf_inject_config *inject)
{
    if (w)
        w->inject = inject;
}

int wf_webhook_port(const wf_webhook *w)
{
    return w ? h1s_port(w->srv) : -1;
}

void wf_webhook_close(wf_webhook *w)
{
    if (w)
        h1s_close(w->srv); /* w is freed by free_webhook once the server closed */
}
