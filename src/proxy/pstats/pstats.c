/*
 * pstats.c - registration of the proxy's Envoy-named stats (pstats.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "proxy/pstats/pstats.h"

#define NAME_(name, type) #name,
#define TYPE_(name, type) (#type[0] == 'G'),
static const char *const cluster_names[] = {WP_CLUSTER_STATS(NAME_)};
static const bool cluster_gauge[] = {WP_CLUSTER_STATS(TYPE_)};
static const char *const hcm_names[] = {WP_HCM_STATS(NAME_)};
static const bool hcm_gauge[] = {WP_HCM_STATS(TYPE_)};
static const char *const listener_names[] = {WP_LISTENER_STATS(NAME_)};
static const char *const tcp_names[] = {WP_TCP_STATS(NAME_)};
static const bool tcp_gauge[] = {WP_TCP_STATS(TYPE_)};
static const bool listener_gauge[] = {WP_LISTENER_STATS(TYPE_)};
#define HNAME_(name) #name,
static const char *const cluster_hists[] = {WP_CLUSTER_HISTS(HNAME_)};
static const char *const hcm_hists[] = {WP_HCM_HISTS(HNAME_)};
static const char *const listener_hists[] = {WP_LISTENER_HISTS(HNAME_)};
#define SNAME_(name) #name,
static const char *const ssl_names[] = {WP_SSL_STATS(SNAME_)};
#undef SNAME_
#undef NAME_
#undef TYPE_
#undef HNAME_

/* <scope>.ssl.<name> for every WP_SSL_* counter when on, else WP_STAT_INVALID slots (a
 * plaintext listener or cluster has no ssl.* stats, as in Envoy). */
static void reg_ssl(wp_stats *st, const char *scope, bool on, uint32_t *slots)
{
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < WP_SSL_COUNT_; i++) {
        slots[i] = WP_STAT_INVALID;
        if (!on)
            continue;
        wf_strbuf_reset(&b);
        wf_strbuf_printf(&b, "%s.ssl.%s", scope, ssl_names[i]);
        if (!wf_strbuf_failed(&b))
            slots[i] = wp_stats_counter(st, b.data);
    }
    wf_strbuf_free(&b);
}

/* <scope>.<match>.total_match_count for "default" and each of c's transport_socket_matches
 * (Envoy's generateStats: statPrefixJoin of the match name and the stat). 0 or -1. */
static int reg_tsm(wp_stats *st, const char *scope, const wp_cluster *c, wp_cstats *cs)
{
    if (!c->ntsms)
        return 0;
    cs->tsm_match = calloc(c->ntsms + 1, sizeof(*cs->tsm_match));
    if (!cs->tsm_match)
        return -1;
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i <= c->ntsms; i++) {
        wf_strbuf_reset(&b);
        wf_strbuf_printf(&b, "%s.%s.total_match_count", scope, i ? c->tsms[i - 1].name : "default");
        cs->tsm_match[i] = wf_strbuf_failed(&b) ? WP_STAT_INVALID : wp_stats_counter(st, b.data);
    }
    wf_strbuf_free(&b);
    return 0;
}

static uint32_t reg(wp_stats *st, bool gauge, const char *scope, const char *name)
{
    wf_strbuf b = {0};
    const char *cb = "circuit_breakers_default_";
    if (strncmp(name, cb, strlen(cb)) == 0)
        wf_strbuf_printf(&b, "%s.circuit_breakers.default.%s", scope, name + strlen(cb));
    else
        wf_strbuf_printf(&b, "%s.%s", scope, name);
    uint32_t slot = WP_STAT_INVALID;
    if (!wf_strbuf_failed(&b))
        slot = gauge ? wp_stats_gauge(st, b.data) : wp_stats_counter(st, b.data);
    wf_strbuf_free(&b);
    return slot;
}

static void reg_table(wp_stats *st, const char *scope, const char *const *names, const bool *gauge,
                      size_t n, uint32_t *slots)
{
    for (size_t i = 0; i < n; i++)
        slots[i] = reg(st, gauge[i], scope, names[i]);
}

static void reg_hists(wp_stats *st, const char *scope, const char *const *names, size_t n,
                      uint32_t *ids)
{
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < n; i++) {
        wf_strbuf_reset(&b);
        wf_strbuf_printf(&b, "%s.%s", scope, names[i]);
        ids[i] = wf_strbuf_failed(&b) ? WP_STAT_INVALID : wp_stats_histogram(st, b.data);
    }
    wf_strbuf_free(&b);
}

static void reg_managers(wp_stats *st, wp_pstats *p)
{
    p->lm_listener_modified = wp_stats_counter(st, "listener_manager.listener_modified");
    p->lm_listener_removed = wp_stats_counter(st, "listener_manager.listener_removed");
    p->lm_create_success = wp_stats_counter(st, "listener_manager.listener_create_success");
    p->lm_create_failure = wp_stats_counter(st, "listener_manager.listener_create_failure");
    p->lm_total_warming = wp_stats_gauge(st, "listener_manager.total_listeners_warming");
    p->lm_total_draining = wp_stats_gauge(st, "listener_manager.total_listeners_draining");
    p->cm_cluster_modified = wp_stats_counter(st, "cluster_manager.cluster_modified");
    p->cm_cluster_removed = wp_stats_counter(st, "cluster_manager.cluster_removed");
    p->cm_warming_clusters = wp_stats_gauge(st, "cluster_manager.warming_clusters");
}

wp_pstats *wp_pstats_register(wp_stats *store, const wp_config *cfg)
{
    wp_pstats *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->store = store;
    wp_stats_matcher *m = wp_stats_matcher_new(cfg->stats_config, NULL, NULL);
    if (!m) {
        free(p);
        return NULL;
    }
    wp_stats_set_matcher(store, m);
    p->clusters = calloc(cfg->nclusters ? cfg->nclusters : 1, sizeof(*p->clusters));
    p->nclusters = p->clusters ? cfg->nclusters : 0;
    p->hcms = calloc(cfg->nhcms ? cfg->nhcms : 1, sizeof(*p->hcms));
    p->listeners = calloc(cfg->nlisteners ? cfg->nlisteners : 1, sizeof(*p->listeners));
    p->tcps = calloc(cfg->ntcps ? cfg->ntcps : 1, sizeof(*p->tcps));
    if (!p->clusters || !p->hcms || !p->listeners || !p->tcps) {
        wp_pstats_free(p);
        return NULL;
    }
    wf_strbuf scope = {0};
    for (size_t i = 0; i < cfg->nclusters; i++) {
        const wp_cluster *c = &cfg->clusters[i];
        wf_strbuf_reset(&scope);
        wf_strbuf_printf(&scope, "cluster.%s", c->alt_stat_name ? c->alt_stat_name : c->name);
        reg_table(store, scope.data, cluster_names, cluster_gauge, WP_CS_COUNT_,
                  p->clusters[i].slot);
        reg_hists(store, scope.data, cluster_hists, WP_CH_COUNT_, p->clusters[i].hist);
        reg_ssl(store, scope.data, c->has_tls || c->tls, p->clusters[i].ssl);
        if (reg_tsm(store, scope.data, c, &p->clusters[i]) != 0) {
            wf_strbuf_free(&scope);
            wp_pstats_free(p);
            return NULL;
        }
        size_t base = scope.len;
        wf_strbuf_puts(&scope, ".upstream_rq");
        p->clusters[i].rq_codes = wp_stats_code_scope(store, scope.data);
        scope.len = base;
        wf_strbuf_puts(&scope, ".retry.upstream_rq");
        p->clusters[i].retry_codes = wp_stats_code_scope(store, scope.data);
    }
    for (size_t i = 0; i < cfg->nhcms; i++) {
        wf_strbuf_reset(&scope);
        wf_strbuf_printf(&scope, "http.%s", cfg->hcms[i]->stat_prefix);
        reg_table(store, scope.data, hcm_names, hcm_gauge, WP_HS_COUNT_, p->hcms[i].slot);
        reg_hists(store, scope.data, hcm_hists, WP_HH_COUNT_, p->hcms[i].hist);
    }
    for (size_t i = 0; i < cfg->ntcps; i++) {
        wf_strbuf_reset(&scope);
        wf_strbuf_printf(&scope, "tcp.%s", cfg->tcps[i]->stat_prefix);
        reg_table(store, scope.data, tcp_names, tcp_gauge, WP_TS_COUNT_, p->tcps[i].slot);
    }
    for (size_t i = 0; i < cfg->nlisteners; i++) {
        const wp_listener *l = &cfg->listeners[i];
        wf_strbuf_reset(&scope);
        wf_strbuf_printf(&scope, "listener.%s", l->stat_name);
        reg_table(store, scope.data, listener_names, listener_gauge, WP_LS_COUNT_,
                  p->listeners[i].slot);
        reg_hists(store, scope.data, listener_hists, WP_LH_COUNT_, p->listeners[i].hist);
        reg_ssl(store, scope.data, l->has_tls, p->listeners[i].ssl);
    }
    wf_strbuf_free(&scope);
    p->server_live = wp_stats_gauge(store, "server.live");
    p->server_state = wp_stats_gauge(store, "server.state");
    p->server_uptime = wp_stats_gauge(store, "server.uptime");
    p->server_concurrency = wp_stats_gauge(store, "server.concurrency");
    p->server_total_connections = wp_stats_gauge(store, "server.total_connections");
    p->server_memory_allocated = wp_stats_gauge(store, "server.memory_allocated");
    p->server_memory_heap_size = wp_stats_gauge(store, "server.memory_heap_size");
    p->server_version = wp_stats_gauge(store, "server.version");
    p->workers_started = wp_stats_gauge(store, "listener_manager.workers_started");
    p->total_listeners_active = wp_stats_gauge(store, "listener_manager.total_listeners_active");
    p->lm_listener_added = wp_stats_counter(store, "listener_manager.listener_added");
    p->cm_active_clusters = wp_stats_gauge(store, "cluster_manager.active_clusters");
    p->cm_cluster_added = wp_stats_counter(store, "cluster_manager.cluster_added");
    reg_managers(store, p);
    return p;
}

void wp_pstats_free(wp_pstats *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->clusters && i < p->nclusters; i++)
        free(p->clusters[i].tsm_match);
    free(p->clusters);
    free(p->hcms);
    free(p->tcps);
    free(p->listeners);
    free(p);
}

static const char *const grpc_names[WP_GRPC_status0] = {
    "success", "failure", "total", "request_message_count", "response_message_count"};

uint32_t wp_pstats_grpc_slot(wp_pstats *p, const wp_config *cfg, int c, int which)
{
    if (!p || c < 0 || (size_t)c >= p->nclusters || which < 0 || which >= WP_GRPC_COUNT_)
        return WP_STAT_INVALID;
    _Atomic uint64_t *cache = &p->clusters[c].grpc.id[which];
    uint64_t v = atomic_load_explicit(cache, memory_order_acquire);
    if (v)
        return (uint32_t)(v - 1);
    const wp_cluster *cl = &cfg->clusters[c];
    char name[1024];
    int n =
        which < WP_GRPC_status0
            ? snprintf(name, sizeof name, "cluster.%s.grpc.%s",
                       cl->alt_stat_name ? cl->alt_stat_name : cl->name, grpc_names[which])
            : snprintf(name, sizeof name, "cluster.%s.grpc.%d",
                       cl->alt_stat_name ? cl->alt_stat_name : cl->name, which - WP_GRPC_status0);
    if (n < 0 || (size_t)n >= sizeof name)
        return WP_STAT_INVALID;
    uint32_t slot = wp_stats_counter(p->store, name);
    if (slot != WP_STAT_INVALID) /* same name, same slot: a racing worker stores the same */
        atomic_store_explicit(cache, (uint64_t)slot + 1, memory_order_release);
    return slot;
}
