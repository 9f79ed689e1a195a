/*
 * admin.c - the admin server (admin.h): connections, dispatch and the config/stats handlers;
 * the operational endpoints are in admin_ops.c. Output shapes follow Envoy's admin docs
 * (operations/admin) and source/server/admin/{admin,clusters,listeners,stats}_handler.cc as
 * the reference §9.1 describes them. A mutating endpoint (Envoy's mutates_server_state:
 * /drain_listeners, /healthcheck/fail|ok, /logging, /quitquitquit, /reopen_logs,
 * /reset_counters) asked with another method than POST answers 405 "Method GET not allowed,
 * POST required." and has no effect, as Envoy's AdminImpl::makeRequest (Envoy >= 1.14; older
 * builds answered 400 "Invalid request; POST required", which the reference §9.1 still says).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "http/h1_server.h"
#include "proxy/server/admin/admin.h"
#include "proxy/server/admin/admin_ops.h"
#include "proxy/server/admin/config_dump.h"
#include "proxy/sds/sds_ctx.h"
#include "proxy/sds/secrets.h"

#define ADMIN_MAX_BODY (64 * 1024)
#define ADMIN_MAX_HDRS 64
/* After an answer (413 included, sent before the rest of the body was read): FIN, then input
 * is read and dropped for up to this long, so the client reads the answer, not a reset
 * (Envoy's delayed_close_timeout, 1 s by default). */
#define ADMIN_LINGER_MS 1000

/* ---------- query strings ---------- */

static bool has_param(const admin_req *r, const char *name)
{
    char tmp[8];
    return wp_admin_qparam(r, name, tmp, sizeof(tmp)) != NULL;
}

/* ---------- handlers ---------- */

bool wp_admin_hc_failed(const wp_admin *a)
{
    return a && a->hc_failed;
}

static void h_ready(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)r;
    const char *s = wp_admin_state_name(a);
    o->status = strcmp(s, "LIVE") == 0 ? 200 : 503;
    wf_strbuf_printf(&o->body, "%s\n", s);
}

static pcre2_code *compile_filter(const char *re, admin_resp *o)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, 0, &ec, &off, NULL);
    if (!c) {
        o->status = 400;
        wf_strbuf_printf(&o->body, "Invalid re2 regex");
    }
    return c;
}

/* ?type= (Envoy's StatsParams): 400 "invalid &type= param" for an unknown value. */
static bool stats_type(const admin_req *r, admin_resp *o, wp_stats_type *type)
{
    char t[32];
    *type = WP_STATS_TYPE_ALL;
    const char *v = wp_admin_qparam(r, "type", t, sizeof(t));
    if (!v || !v[0] || wp_stats_type_parse(v, type) == 0)
        return true;
    o->status = 400;
    wf_strbuf_puts(&o->body, "invalid &type= param");
    return false;
}

static void stats_prometheus(wp_admin *a, const pcre2_code *re, bool used, admin_resp *o)
{
    wf_strbuf err = {0};
    wp_stats_tags *tags = wp_stats_tags_from_config(a->srv->gen->cfg->stats_config, &err);
    wf_strbuf_free(&err);
    wp_stats_render_prometheus(a->srv->gen->pstats->store, tags, used, re, &o->body);
    wp_stats_tags_free(tags);
    o->content_type = "text/plain; version=0.0.4";
}

/* The format= values Envoy's StatsParams::parse accepts (html included: /stats/prometheus
 * renders prometheus whatever the format). */
static bool known_format(const char *f)
{
    return strcmp(f, "json") == 0 || strcmp(f, "prometheus") == 0 || strcmp(f, "text") == 0 ||
           strcmp(f, "html") == 0;
}

static void h_stats(wp_admin *a, const admin_req *r, admin_resp *o, bool prom)
{
    char fmt[32], filt[1024];
    pcre2_code *re = NULL;
    wp_stats_type type;
    if (wp_admin_qparam(r, "filter", filt, sizeof(filt)) && filt[0] &&
        !(re = compile_filter(filt, o)))
        return;
    bool used = has_param(r, "usedonly");
    const char *f = wp_admin_qparam(r, "format", fmt, sizeof(fmt));
    wp_stats *st = a->srv->gen->pstats->store;
    if (!stats_type(r, o, &type)) {
        /* answered: StatsParams::parse checks type= for /stats/prometheus too */
    } else if (prom && f && f[0] && !known_format(f)) {
        o->status = 400; /* StatsParams::parse refuses it before the prometheus handler */
        wf_strbuf_printf(&o->body, "usage: /stats?format=(json|prometheus|text)\n");
    } else if (prom || (f && strcmp(f, "prometheus") == 0)) {
        stats_prometheus(a, re, used, o);
    } else if (f && strcmp(f, "json") == 0) {
        wp_stats_render_json_type(st, re, used, type, &o->body);
        o->content_type = "application/json";
    } else if (f && f[0] && strcmp(f, "text") != 0) {
        o->status = 400;
        wf_strbuf_printf(&o->body, "usage: /stats?format=(json|prometheus|text)\n");
    } else {
        wp_stats_render_text_type(st, re, used, type, &o->body);
    }
    pcre2_code_free(re);
}

static const char *health_flags(const wp_endpoint *e)
{
    switch (e->health) {
    case WP_HEALTH_UNHEALTHY:
        return "/failed_eds_health";
    case WP_HEALTH_DRAINING:
        return "/pending_dynamic_removal";
    case WP_HEALTH_TIMEOUT:
        return "/failed_eds_health";
    case WP_HEALTH_DEGRADED:
        return "/degraded_eds_health";
    default:
        return "healthy";
    }
}

/* Envoy's healthFlagsToString: /failed_outlier_check comes before the EDS flags. */
static const char *host_flags(const wp_admin *a, size_t c, size_t k, char *buf, size_t cap)
{
    const char *eds = health_flags(&a->srv->gen->cfg->clusters[c].endpoints[k]);
    if (!wp_od_ejected(&a->srv->gen->crt[c].od, k))
        return eds;
    snprintf(buf, cap, "/failed_outlier_check%s", strcmp(eds, "healthy") ? eds : "");
    return buf;
}

static const char *const host_stat_names[] = {"cx_active",  "cx_connect_fail", "cx_total",
                                              "rq_active",  "rq_error",        "rq_success",
                                              "rq_timeout", "rq_total"};

static uint64_t host_stat(const wp_host_rt *h, int i)
{
    const atomic_uint_fast64_t *v[] = {&h->cx_active,  &h->cx_connect_fail, &h->cx_total,
                                       &h->rq_active,  &h->rq_error,        &h->rq_success,
                                       &h->rq_timeout, &h->rq_total};
    return atomic_load_explicit(v[i], memory_order_relaxed);
}

static void clusters_text(wp_admin *a, wf_strbuf *b)
{
    const wp_config *c = a->srv->gen->cfg;
    for (size_t i = 0; i < c->nclusters; i++) {
        const wp_cluster *cl = &c->clusters[i];
        const char *n = cl->name;
        wf_strbuf_printf(b, "%s::observability_name::%s\n", n,
                         cl->alt_stat_name ? cl->alt_stat_name : n);
        if (cl->outlier.enabled) /* success-rate detector not implemented: -1 as Envoy's idle */
            wf_strbuf_printf(b,
                             "%s::outlier::success_rate_average::-1\n"
                             "%s::outlier::success_rate_ejection_threshold::-1\n"
                             "%s::outlier::local_origin_success_rate_average::-1\n"
                             "%s::outlier::local_origin_success_rate_ejection_threshold::-1\n",
                             n, n, n, n);
        const char *pri[] = {"default_priority", "high_priority"};
        for (int p = 0; p < 2; p++) {
            const wp_thresholds *t = &cl->cb;
            wp_thresholds def = {1024, 1024, 1024, 3};
            if (p == 1)
                t = &def;
            wf_strbuf_printf(b,
                             "%s::%s::max_connections::%u\n%s::%s::max_pending_requests::%u\n"
                             "%s::%s::max_requests::%u\n%s::%s::max_retries::%u\n",
                             n, pri[p], t->max_connections, n, pri[p], t->max_pending_requests, n,
                             pri[p], t->max_requests, n, pri[p], t->max_retries);
        }
        wf_strbuf_printf(b, "%s::added_via_api::false\n", n);
        for (size_t k = 0; k < cl->nendpoints; k++) {
            const wp_endpoint *e = &cl->endpoints[k];
            const char *h = e->addr.len ? e->addr.text : e->hostname;
            const wp_host_rt *rt = &a->srv->gen->crt[i].hosts[k];
            char hf[96];
            for (int s = 0; s < 8; s++)
                wf_strbuf_printf(b, "%s::%s::%s::%llu\n", n, h, host_stat_names[s],
                                 (unsigned long long)host_stat(rt, s));
            wf_strbuf_printf(b,
                             "%s::%s::hostname::%s\n%s::%s::health_flags::%s\n%s::%s::weight::%u\n"
                             "%s::%s::region::\n%s::%s::zone::\n%s::%s::sub_zone::\n"
                             "%s::%s::canary::false\n%s::%s::priority::0\n"
                             "%s::%s::success_rate::-1.0\n"
                             "%s::%s::local_origin_success_rate::-1.0\n",
                             n, h, cl->type == WP_CLUSTER_STATIC ? "" : e->hostname, n, h,
                             host_flags(a, i, k, hf, sizeof(hf)), n, h, e->weight ? e->weight : 1,
                             n, h, n, h, n, h, n, h, n, h, n, h, n, h);
        }
    }
}

static json_t *socket_address(const wp_addr *ad, const char *fallback_host, uint32_t port)
{
    char host[64];
    snprintf(host, sizeof(host), "%s", ad->len ? ad->text : fallback_host);
    char *colon = strrchr(host, ':');
    unsigned p = port;
    if (ad->len && colon) {
        p = (unsigned)atoi(colon + 1);
        *colon = 0;
    }
    char *h = host;
    if (h[0] == '[') {
        h++;
        char *rb = strchr(h, ']');
        if (rb)
            *rb = 0;
    }
    return json_pack("{s:{s:s,s:i}}", "socket_address", "address", h, "port_value", (int)p);
}

/* A host without an EDS health status (static endpoints) reports HEALTHY, as Envoy's
 * /clusters?format=json does (istioctl pc endpoint shows "127.0.0.1:15000 HEALTHY"). */
static const char *const eds_health[] = {"HEALTHY",  "HEALTHY", "UNHEALTHY",
                                         "DRAINING", "TIMEOUT", "DEGRADED"};

static void clusters_json(wp_admin *a, wf_strbuf *b)
{
    const wp_config *c = a->srv->gen->cfg;
    json_t *list = json_array();
    for (size_t i = 0; i < c->nclusters; i++) {
        const wp_cluster *cl = &c->clusters[i];
        json_t *hosts = json_array();
        for (size_t k = 0; k < cl->nendpoints; k++) {
            const wp_endpoint *e = &cl->endpoints[k];
            json_t *stats = json_array();
            for (int s = 0; s < 8; s++) {
                uint64_t v = host_stat(&a->srv->gen->crt[i].hosts[k], s);
                json_t *st = json_pack("{s:s}", "name", host_stat_names[s]);
                if (v)
                    json_object_set_new(st, "value", json_sprintf("%llu", (unsigned long long)v));
                if (s == 0 || s == 3)
                    json_object_set_new(st, "type", json_string("GAUGE"));
                json_array_append_new(stats, st);
            }
            json_t *hs = json_pack("{s:o,s:o,s:{s:s},s:i}", "address",
                                   socket_address(&e->addr, e->hostname, e->port), "stats", stats,
                                   "health_status", "eds_health_status", eds_health[e->health],
                                   "weight", (int)(e->weight ? e->weight : 1));
            if (cl->type != WP_CLUSTER_STATIC)
                json_object_set_new(hs, "hostname", json_string(e->hostname));
            if (wp_od_ejected(&a->srv->gen->crt[i].od, k))
                json_object_set_new(json_object_get(hs, "health_status"), "failed_outlier_check",
                                    json_true());
            json_array_append_new(hosts, hs);
        }
        json_t *cj =
            json_pack("{s:s,s:o,s:s}", "name", cl->name, "host_statuses", hosts,
                      "observability_name", cl->alt_stat_name ? cl->alt_stat_name : cl->name);
        json_object_set_new(cj, "circuit_breakers",
                            json_pack("{s:[{s:i,s:i,s:i,s:i}]}", "thresholds", "max_connections",
                                      (int)cl->cb.max_connections, "max_pending_requests",
                                      (int)cl->cb.max_pending_requests, "max_requests",
                                      (int)cl->cb.max_requests, "max_retries",
                                      (int)cl->cb.max_retries));
        json_array_append_new(list, cj);
    }
    json_t *root = json_pack("{s:o}", "cluster_statuses", list);
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    if (s)
        wf_strbuf_puts(b, s);
    free(s);
    json_decref(root);
}

static void h_clusters(wp_admin *a, const admin_req *r, admin_resp *o)
{
    char fmt[16];
    const char *f = wp_admin_qparam(r, "format", fmt, sizeof(fmt));
    if (f && strcmp(f, "json") == 0) {
        o->content_type = "application/json";
        clusters_json(a, &o->body);
    } else {
        clusters_text(a, &o->body);
    }
}

static void h_listeners(wp_admin *a, const admin_req *r, admin_resp *o)
{
    char fmt[16];
    const char *f = wp_admin_qparam(r, "format", fmt, sizeof(fmt));
    const wp_config *c = a->srv->gen->cfg;
    if (f && strcmp(f, "json") == 0) {
        json_t *list = json_array();
        for (size_t i = 0; i < c->nlisteners; i++)
            json_array_append_new(list, json_pack("{s:s,s:o}", "name", c->listeners[i].name,
                                                  "local_address",
                                                  socket_address(&c->listeners[i].addr, "", 0)));
        json_t *root = json_pack("{s:o}", "listener_statuses", list);
        char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        if (s)
            wf_strbuf_puts(&o->body, s);
        free(s);
        json_decref(root);
        o->content_type = "application/json";
        return;
    }
    for (size_t i = 0; i < c->nlisteners; i++)
        wf_strbuf_printf(&o->body, "%s::%s\n", c->listeners[i].name, c->listeners[i].addr.text);
}

/* ?name_regex= (Envoy's buildNameMatcher: RE2, full match); NULL with o answered 400 when it
 * does not compile, *re NULL when absent or empty. */
static bool name_regex(const admin_req *r, admin_resp *o, pcre2_code **re)
{
    char v[1024];
    *re = NULL;
    if (!wp_admin_qparam(r, "name_regex", v, sizeof(v)) || !v[0])
        return true;
    int ec;
    PCRE2_SIZE off;
    *re = pcre2_compile((PCRE2_SPTR)v, PCRE2_ZERO_TERMINATED, 0, &ec, &off, NULL);
    if (*re)
        return true;
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(ec, msg, sizeof(msg));
    o->status = 400;
    wf_strbuf_printf(&o->body, "Error while parsing name_regex from %s: %s", v, (char *)msg);
    return false;
}

static json_t *dump_of(wp_admin *a, const admin_req *r, const char *mask, wf_strbuf *err,
                       int *status)
{
    char res[256];
    const char *rs = wp_admin_qparam(r, "resource", res, sizeof(res));
    const wp_config *c = a->srv->gen->cfg;
    bool sds = false; /* default / ROOTCA in use: listed warming until supplied */
    for (size_t i = 0; i < c->nsds_ctxs && !sds; i++)
        sds = wp_sds_ctx_uses_default(c->sds_ctxs[i]);
    json_t *secrets =
        sds || wp_secrets_generation(a->srv->secrets) || wp_secrets_n_wanted(a->srv->secrets)
            ? wp_secrets_dump(a->srv->secrets, sds)
            : NULL;
    json_t *d = wp_config_dump_secrets(c, secrets, rs, mask, has_param(r, "include_eds"),
                                       a->srv->loaded_unix, err, status);
    json_decref(secrets);
    return d;
}

static void h_config_dump(wp_admin *a, const admin_req *r, admin_resp *o)
{
    char mask[1024];
    const char *mk = wp_admin_qparam(r, "mask", mask, sizeof(mask));
    pcre2_code *re;
    if (!name_regex(r, o, &re))
        return;
    wf_strbuf err = {0};
    int status = 200;
    json_t *dump = dump_of(a, r, mk, &err, &status);
    json_t *plain = dump && re && mk && mk[0] ? dump_of(a, r, NULL, &err, &status) : NULL;
    if (dump && re && wp_admin_filter_names(dump, plain ? plain : dump, re) != 0) {
        json_decref(dump);
        dump = NULL;
        status = 500;
        wf_strbuf_puts(&err, "out of memory");
    }
    json_decref(plain);
    pcre2_code_free(re);
    if (!dump) {
        o->status = status;
        wf_strbuf_puts(&o->body, wf_strbuf_cstr(&err));
    } else {
        wp_admin_put_json(o, dump);
    }
    wf_strbuf_free(&err);
}

/* Envoy's LogsHandler error answer: the error, a blank line, the usage and the levels; the
 * active loggers follow as after a change. */
static void logging_error(admin_resp *o, const char *msg)
{
    o->status = 404;
    wf_strbuf_printf(&o->body,
                     "error: %s\n\n"
                     "usage: /logging?<name>=<level> (change single level)\n"
                     "usage: /logging?paths=name1:level1,name2:level2,... (change multiple "
                     "levels)\n"
                     "usage: /logging?level=<level> (change all levels)\n"
                     "levels: ",
                     msg);
    for (int l = WF_LOG_TRACE; l <= WF_LOG_OFF; l++)
        wf_strbuf_printf(&o->body, "%s ", wf_log_level_name((wf_log_level)l));
    wf_strbuf_puts(&o->body, "\n");
    wf_log_list(&o->body);
}

/* Query parameters with a value ("a=1&b" counts 1): Envoy takes exactly one. */
static size_t query_params(const char *q)
{
    size_t n = 0;
    for (const char *p = q; *p;) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        n += eq && eq + 1 < end;
        p = amp ? amp + 1 : end;
    }
    return n;
}

static void h_logging(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)a;
    if (strcmp(r->method, "POST") == 0 && r->query[0]) {
        char v[1024];
        wf_strbuf err = {0};
        if (query_params(r->query) > 1) {
            logging_error(o, "invalid number of parameters");
            return;
        }
        if (wp_admin_qparam(r, "level", v, sizeof(v))) {
            int lvl = wf_log_level_from_name(v, strlen(v));
            if (lvl < 0) {
                logging_error(o, "unknown logger level");
                return;
            }
            wf_log_set_all((wf_log_level)lvl);
        } else if (wp_admin_qparam(r, "paths", v, sizeof(v))) {
            if (wf_log_apply_component_levels(v, &err) != 0) {
                logging_error(o, wf_strbuf_cstr(&err));
                wf_strbuf_free(&err);
                return;
            }
        } else {
            /* ?<logger>=<level> */
            char spec[sizeof(r->query) + 1];
            snprintf(spec, sizeof(spec), "%s", r->query);
            char *eq = strchr(spec, '=');
            if (eq)
                *eq = ':';
            wp_admin_url_decode(spec);
            if (wf_log_apply_component_levels(spec, &err) != 0) {
                logging_error(o, wf_strbuf_cstr(&err));
                wf_strbuf_free(&err);
                return;
            }
        }
        wf_strbuf_free(&err);
    }
    wf_log_list(&o->body);
}

static void h_server_info(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)r;
    const wp_server_opts *op = a->opts;
    uint64_t up = (uv_now(a->loop) - (uint64_t)a->srv->start_time) / 1000;
    char upt[32];
    snprintf(upt, sizeof(upt), "%llus", (unsigned long long)up);
    char drain[32];
    snprintf(drain, sizeof(drain), "%llus", (unsigned long long)op->drain_time_s);
    json_t *node = a->srv->gen->cfg->node ? json_deep_copy(a->srv->gen->cfg->node) : json_object();
    if (a->srv->gen->cfg->node_id)
        json_object_set_new(node, "id", json_string(a->srv->gen->cfg->node_id));
    if (a->srv->gen->cfg->node_cluster)
        json_object_set_new(node, "cluster", json_string(a->srv->gen->cfg->node_cluster));
    json_t *root =
        json_pack("{s:s,s:s,s:s,s:{s:i,s:s,s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:o}", "version",
                  "weft-proxy/" WEFT_VERSION "/Clean/RELEASE", "state", wp_admin_state_name(a),
                  "hot_restart_version", "disabled", "command_line_options", "concurrency",
                  (int)a->srv->nworkers, "config_path", op->config_path, "log_level",
                  op->log_level ? op->log_level : "info", "component_log_level",
                  op->component_log_level ? op->component_log_level : "", "drain_time", drain,
                  "mode", op->validate_only ? "Validate" : "Serve", "service_cluster",
                  a->srv->gen->cfg->node_cluster ? a->srv->gen->cfg->node_cluster : "",
                  "uptime_current_epoch", upt, "uptime_all_epochs", upt, "node", node);
    char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    if (s)
        wf_strbuf_puts(&o->body, s);
    wf_strbuf_putc(&o->body, '\n');
    free(s);
    json_decref(root);
    o->content_type = "application/json";
}

static void h_help(wp_admin *a, const admin_req *r, admin_resp *o);

static void h_stats_text(wp_admin *a, const admin_req *r, admin_resp *o)
{
    h_stats(a, r, o, false);
}

static void h_stats_prom(wp_admin *a, const admin_req *r, admin_resp *o)
{
    h_stats(a, r, o, true);
}

static void h_reset_counters(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)r;
    wp_stats_reset_counters(a->srv->gen->pstats->store);
    wf_strbuf_puts(&o->body, "OK\n");
}

static void h_quit(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)r;
    wf_strbuf_puts(&o->body, "OK\n");
    a->quit_after = true;
}

/* Envoy's handlerDrainListeners: ?inboundonly, ?graceful, ?skip_exit (graceful only). */
static void h_drain(wp_admin *a, const admin_req *r, admin_resp *o)
{
    bool graceful = has_param(r, "graceful"), skip_exit = has_param(r, "skip_exit");
    if (skip_exit && !graceful) {
        o->status = 400;
        wf_strbuf_puts(&o->body, "skip_exit requires graceful\n");
        return;
    }
    a->act.drain(a->act.ctx, has_param(r, "inboundonly"), graceful, skip_exit);
    wf_strbuf_puts(&o->body, "OK\n");
}

static void h_hc_fail(wp_admin *a, const admin_req *r, admin_resp *o)
{
    wp_admin_healthcheck(a, r, o, true);
}

static void h_hc_ok(wp_admin *a, const admin_req *r, admin_resp *o)
{
    wp_admin_healthcheck(a, r, o, false);
}

typedef void (*admin_handler)(wp_admin *a, const admin_req *r, admin_resp *o);

/* Envoy's handler table (admin.cc): path, mutates state (POST only), help text. */
static const struct {
    const char *path;
    bool post;
    admin_handler fn;
    const char *help;
} endpoints[] = {
    {"/", false, h_help, "Admin home page"},
    {"/certs", false, wp_admin_certs, "print certs on machine"},
    {"/clusters", false, h_clusters, "upstream cluster status"},
    {"/config_dump", false, h_config_dump, "dump current Envoy configs"},
    {"/drain_listeners", true, h_drain, "drain listeners"},
    {"/failed_requests", false, wp_admin_failed_requests,
     "print the last failed requests of every worker, newest first (?limit=N)"},
    {"/healthcheck/fail", true, h_hc_fail, "cause the server to fail health checks"},
    {"/healthcheck/ok", true, h_hc_ok, "cause the server to pass health checks"},
    {"/help", false, h_help, "print out list of admin commands"},
    {"/hot_restart_version", false, wp_admin_hot_restart_version,
     "print the hot restart compatibility version"},
    {"/init_dump", false, wp_admin_init_dump,
     "dump current Envoy init manager information (experimental)"},
    {"/listeners", false, h_listeners, "print listener info"},
    {"/logging", true, h_logging, "query/change logging levels"},
    {"/memory", false, wp_admin_memory, "print current allocation/heap usage"},
    {"/quitquitquit", true, h_quit, "exit the server"},
    {"/ready", false, h_ready, "print server state, return 200 if LIVE, otherwise return 503"},
    {"/reopen_logs", true, wp_admin_reopen_logs, "reopen access logs"},
    {"/reset_counters", true, h_reset_counters, "reset all counters to zero"},
    {"/runtime", false, wp_admin_runtime, "print runtime values"},
    {"/server_info", false, h_server_info, "print server version/status information"},
    {"/stats", false, h_stats_text, "print server stats"},
    {"/stats/prometheus", false, h_stats_prom, "print server stats in prometheus format"},
    {"/stats/recentlookups", false, wp_admin_recent_lookups, "Show recent stat-name lookups"},
};

#define NENDPOINTS (sizeof(endpoints) / sizeof(endpoints[0]))

static void help_text(admin_resp *o)
{
    wf_strbuf_puts(&o->body, "admin commands are:\n");
    for (size_t i = 0; i < NENDPOINTS; i++)
        wf_strbuf_printf(&o->body, "  %s%s: %s\n", endpoints[i].post ? "POST " : "",
                         endpoints[i].path, endpoints[i].help);
}

static void h_help(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)a;
    (void)r;
    help_text(o);
}

/* Envoy's AdminImpl::makeRequest: a mutating endpoint asked with another method than POST
 * answers 405 "Method <m> not allowed, POST required." and does nothing; an unknown path
 * answers 404 "invalid path. " + the help. */
static void dispatch(wp_admin *a, const admin_req *r, admin_resp *o)
{
    for (size_t i = 0; i < NENDPOINTS; i++) {
        if (strcmp(r->path, endpoints[i].path) != 0)
            continue;
        if (endpoints[i].post && strcmp(r->method, "POST") != 0) {
            o->status = 405;
            wf_strbuf_printf(&o->body, "Method %s not allowed, POST required.", r->method);
            WF_LOG(WF_LC_admin, WF_LOG_ERROR,
                   "admin path \"%s\" mutates state, method=%s rather than POST", r->path,
                   r->method);
            return;
        }
        endpoints[i].fn(a, r, o);
        return;
    }
    o->status = 404;
    wf_strbuf_puts(&o->body, "invalid path. ");
    help_text(o);
}

/* ---------- the HTTP side (http/h1_server.h: one request per connection) ---------- */

static const char *reason(int status)
{
    const char *r = h1s_reason(status);
    return strcmp(r, "Unknown") ? r : "Bad Request";
}

#define ADMIN_HEAD(ctype)                                                                          \
    "content-type: " ctype "\r\ncache-control: no-cache, max-age=0\r\n"                            \
    "x-content-type-options: nosniff\r\n"

static void respond(h1s_conn *c, admin_resp *o)
{
    char head[192];
    snprintf(head, sizeof head, ADMIN_HEAD("%s"), o->content_type);
    if (wf_strbuf_failed(&o->body)) {
        h1s_conn_close(c);
        return;
    }
    h1s_respond(c, o->status, reason(o->status), head, o->body.data, o->body.len);
}

static void quit_after_answer(void *arg)
{
    wp_admin *a = arg;
    a->act.quit(a->act.ctx);
}

static void on_request(void *ud, h1s_conn *c, const h1s_request *m)
{
    wp_admin *a = ud;
    admin_req r = {0};
    char method[16];
    snprintf(method, sizeof(method), "%.*s", (int)m->method.len, m->method.p);
    r.method = method;
    snprintf(r.path, sizeof(r.path), "%.*s", (int)m->path.len, m->path.p);
    snprintf(r.query, sizeof(r.query), "%.*s", (int)m->query.len, m->query.p);
    admin_resp o = {.status = 200, .content_type = "text/plain; charset=UTF-8"};
    WF_LOG(WF_LC_admin, WF_LOG_DEBUG, "admin request: %s %.*s", method, (int)m->target.len,
           m->target.p);
    dispatch(a, &r, &o);
    if (a->quit_after) {
        a->quit_after = false;
        h1s_after_answer(c, quit_after_answer, a);
    }
    respond(c, &o);
    wf_strbuf_free(&o.body);
}

wp_admin *wp_admin_start(uv_loop_t *loop, wp_server *srv, const wp_admin_actions *actions,
                         const wp_server_opts *opts, wf_strbuf *err)
{
    wp_admin *a = calloc(1, sizeof(*a));
    if (!a) {
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    a->loop = loop;
    a->srv = srv;
    a->act = *actions;
    a->opts = opts;
    const wp_addr *ad = &srv->gen->cfg->admin_addr;
    h1s_opts ho = {.body = H1S_BODY_BUFFER,
                   .max_body = ADMIN_MAX_BODY,
                   .max_headers = ADMIN_MAX_HDRS,
                   .lower_case = true,
                   .linger_ms = ADMIN_LINGER_MS,
                   /* a request the admin cannot read: status, details as the body, closed */
                   .error_head = ADMIN_HEAD("text/plain; charset=UTF-8")};
    h1s_callbacks cb = {.on_request = on_request, .ud = a};
    int r = 0;
    a->http = h1s_listen(loop, (const struct sockaddr *)&ad->sa, &ho, &cb, &r);
    if (!a->http) {
        wf_strbuf_printf(err, "cannot listen on admin address %s: %s", ad->text, uv_strerror(r));
        free(a);
        return NULL;
    }
    /* the port the kernel picked when port 0 is configured */
    WF_LOG(WF_LC_main, WF_LOG_INFO, "admin address: %s", h1s_bound(a->http));
    return a;
}

void wp_admin_close(wp_admin *a)
{
    h1s_close(a->http);
    a->http = NULL;
}

void wp_admin_free(wp_admin *a)
{
    free(a);
}
