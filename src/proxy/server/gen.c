/*
 * gen.c - generations of the applied configuration (upstream/cluster_manager.h): the
 * process-wide part (cluster runtime, outlier state, stat slots) and each worker's part
 * (connection pools), with their lifetimes.
 *
 * Envoy keeps the same split: a config update builds new cluster and listener objects on
 * the main thread and posts them to the workers; requests that started on the old objects
 * finish on them (docs intro/arch_overview/operations/draining, "Listener and cluster
 * updates").
 */
#include <stdlib.h>

#include "core/log.h"
#include "proxy/access_log/access_log.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/filters/http/fault.h"
#include "proxy/filters/http/jwt_authn.h"
#include "proxy/filters/listener/http_inspector.h"
#include "proxy/filters/listener/tls_inspector.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/filters/rbac/rbac.h"
#include "proxy/upstream/lb.h"
#include "proxy/server/gen.h"

static int compile_logs(wp_server *srv, wp_access_log *logs, size_t n, wf_strbuf *err)
{
    for (size_t k = 0; k < n; k++) {
        wp_access_log *al = &logs[k];
        al->format = al->kind == WP_LOG_JSON
                         ? wp_alf_compile_json_at(al->json_format, al->format_at, err)
                         : wp_alf_compile_text_at(al->text_format ? al->text_format
                                                                  : WP_ENVOY_DEFAULT_FORMAT,
                                                  al->format_at, err);
        if (!al->format)
            return -1;
        al->sink = wp_alog_files_open(srv->alog_files, al->path, err);
        if (al->sink < 0)
            return -1;
    }
    return 0;
}

/* Every HCM's and every listener's access_log. */
static int compile_access_logs(wp_server *srv, wp_config *cfg, wf_strbuf *err)
{
    for (size_t i = 0; i < cfg->nhcms; i++) {
        wp_hcm *h = cfg->hcms[i];
        if (compile_logs(srv, h->access_logs, h->naccess_logs, err) != 0)
            return -1;
    }
    for (size_t i = 0; i < cfg->ntcps; i++) {
        wp_tcp_proxy *t = cfg->tcps[i];
        if (compile_logs(srv, t->access_logs, t->naccess_logs, err) != 0)
            return -1;
    }
    for (size_t i = 0; i < cfg->nlisteners; i++) {
        wp_listener *l = &cfg->listeners[i];
        if (compile_logs(srv, l->access_logs, l->naccess_logs, err) != 0)
            return -1;
    }
    return 0;
}

static void free_logs(wp_access_log *logs, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        wp_alf_free(logs[k].format);
        logs[k].format = NULL;
    }
}

static void free_access_logs(wp_config *cfg)
{
    for (size_t i = 0; i < cfg->nhcms; i++)
        free_logs(cfg->hcms[i]->access_logs, cfg->hcms[i]->naccess_logs);
    for (size_t i = 0; i < cfg->ntcps; i++)
        free_logs(cfg->tcps[i]->access_logs, cfg->tcps[i]->naccess_logs);
    for (size_t i = 0; i < cfg->nlisteners; i++)
        free_logs(cfg->listeners[i].access_logs, cfg->listeners[i].naccess_logs);
}

static void gen_free(wp_gen *g)
{
    if (g->crt) {
        for (size_t i = 0; i < g->cfg->nclusters; i++) {
            wp_od_free(&g->crt[i].od);
            free(g->crt[i].hosts);
        }
        free(g->crt);
    }
    wp_pstats_free(g->pstats);
    free_access_logs(g->cfg);
    wp_config_unref(g->cfg);
    free(g);
}

static int gen_runtime(wp_gen *g, uint64_t now_ms)
{
    const wp_config *c = g->cfg;
    g->crt = calloc(c->nclusters ? c->nclusters : 1, sizeof(*g->crt));
    if (!g->crt)
        return -1;
    for (size_t i = 0; i < c->nclusters; i++) {
        size_t n = c->clusters[i].nendpoints;
        g->crt[i].hosts = calloc(n ? n : 1, sizeof(wp_host_rt));
        if (!g->crt[i].hosts)
            return -1;
    }
    return wp_outlier_gen_init(g, now_ms);
}

wp_gen *wp_gen_new(wp_server *srv, wp_config *cfg, wf_strbuf *err)
{
    wp_gen *g = calloc(1, sizeof(*g));
    if (!g) {
        wp_config_unref(cfg);
        return NULL;
    }
    atomic_init(&g->refs, 1);
    g->cfg = cfg;
    if (compile_access_logs(srv, cfg, err) != 0) {
        gen_free(g);
        return NULL;
    }
    wp_stats *store = srv->stats_store;
    g->pstats = wp_pstats_register(store, cfg);
    if (!g->pstats || wp_fault_register_stats(store, cfg) != 0 ||
        wp_jwt_authn_register_stats(store, cfg) != 0 ||
        wp_rbac_register_all_stats(store, cfg) != 0 ||
        wp_tls_inspector_register_stats(store, cfg) != 0 ||
        wp_http_inspector_register_stats(store, cfg) != 0 ||
        gen_runtime(g, uv_hrtime() / 1000000u) != 0) {
        wf_strbuf_puts(err, "out of memory");
        gen_free(g);
        return NULL;
    }
    return g;
}

void wp_gen_ref(wp_gen *g)
{
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void wp_gen_unref(wp_gen *g)
{
    if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
        gen_free(g);
}

/* ---------- the worker's side ---------- */

/* The worker's load balancer of every cluster of wg (upstream/lb.h). */
static int lbs_init(wp_worker *w, wp_wgen *wg)
{
    const wp_gen *g = wg->gen;
    size_t n = g->cfg->nclusters;
    wg->lbs = calloc(n ? n : 1, sizeof(*wg->lbs));
    if (!wg->lbs)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (wp_lb_init(&wg->lbs[i], &g->cfg->clusters[i], &g->crt[i].od, w->stats, &w->rng) != 0)
            return -1;
    return 0;
}

static void lbs_free(wp_wgen *wg)
{
    for (size_t i = 0; wg->lbs && i < wg->gen->cfg->nclusters; i++)
        wp_lb_free(&wg->lbs[i]);
    free(wg->lbs);
    wg->lbs = NULL;
}

static void wgen_free(wp_wgen *wg)
{
    wp_pools_free(wg);
    lbs_free(wg);
    wp_gen_unref(wg->gen);
    free(wg);
}

static void wgen_unlink(wp_worker *w, wp_wgen *wg)
{
    for (wp_wgen **pp = &w->retired; *pp; pp = &(*pp)->next) {
        if (*pp == wg) {
            *pp = wg->next;
            return;
        }
    }
}

/* wp_wgen_release's last user of a retired generation (upstream/cluster_manager.h). */
static void wgen_free_retired(wp_worker *w, wp_wgen *wg)
{
    wgen_unlink(w, wg);
    wgen_free(wg);
}

wp_wgen *wp_wgen_new(wp_worker *w, wp_gen *gen)
{
    wp_wgen *wg = calloc(1, sizeof(*wg));
    if (!wg) {
        wp_gen_unref(gen);
        return NULL;
    }
    wg->gen = gen;
    wg->free_retired = wgen_free_retired;
    if (wp_pools_init(w, wg) != 0 || lbs_init(w, wg) != 0) {
        wp_pools_free(wg);
        lbs_free(wg);
        wp_gen_unref(gen);
        free(wg);
        return NULL;
    }
    return wg;
}

void wp_wgen_install(wp_worker *w, wp_wgen *wg)
{
    wp_wgen *old = w->wg;
    w->wg = wg;
    w->cfg = wg->gen->cfg;
    if (!old)
        return;
    old->retired = true;
    old->next = w->retired;
    w->retired = old;
    old->users++; /* closing idle connections may release the last user */
    wp_pools_close_idle(old);
    wp_wgen_release(w, old);
}

void wp_wgen_free_all(wp_worker *w)
{
    while (w->retired) {
        wp_wgen *wg = w->retired;
        w->retired = wg->next;
        wgen_free(wg);
    }
    if (w->wg)
        wgen_free(w->wg);
    w->wg = NULL;
    w->cfg = NULL;
}
