/*
 * server.c - the weft-proxy process (server.h): config, workers, admin, signals, drain.
 */
#include <netdb.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "proxy/access_log/access_log.h"
#include "proxy/server/admin/admin.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/bootstrap/bootstrap.h"
#include "proxy/server/listen_hold.h"
#include "proxy/http/conn.h"
#include "proxy/server/server.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/server/server.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/agent/status.h"
#include "proxy/xds/xds_client.h"
#include "proxy/sds/ads_secrets.h"
#include "proxy/sds/cert_provider.h"
#include "proxy/sds/sds_ctx.h"
#include "proxy/server/worker.h"
#include "proxy/server/listen_socket.h"
#include "proxy/server/gen.h"
#include "proxy/agent/dns.h"
#include "proxy/server/dns_refresh.h"

typedef struct {
    wp_server srv;
    const wp_server_opts *opts;
    uv_loop_t *loop;
    uv_signal_t sigterm, sigint, sighup, sigusr1;
    uv_timer_t drain_timer, gauge_timer, od_timer;
    uv_timer_t stop_timer; /* the end of a graceful /drain_listeners: stop_scope stops */
    uint64_t drain_deadline;
    int drain_scope; /* listeners the workers stopped: 0 none, 1 INBOUND ones, 2 all */
    int stop_scope;  /* what stop_timer stops */
    bool exit_armed; /* SIGTERM: the process exits when no connection is left or at the
                        drain_deadline */
    wp_admin *admin;
    bool stopping;
    int64_t last_uptime;
    int64_t last_mem_allocated, last_mem_heap; /* server.memory_* as last set */
    wp_readiness readiness;
    wp_xds_client *xds;
    wp_listen_hold *hold; /* warming listeners' sockets (listen_hold.h); NULL without xDS */
    bool cds_applied, lds_applied; /* initialized (Envoy's init manager): applied, not warming */
    bool cds_pending, lds_pending; /* accepted, some clusters / listeners still warming */
    bool warming_clusters, warming_listeners; /* in the snapshot applied last */
    wp_status *status[2 * WP_MAX_STATUS_ADDRS];
    size_t nstatus;
    wp_dns *dns; /* the agent's DNS proxy (agent/dns.h) when DNS_CAPTURE is on; else NULL */
    wp_cert_provider *certs; /* started by the first snapshot that uses SDS */
    char spiffe[512];        /* the provider's CSR identity */
    int64_t last_cert_days;  /* server.days_until_first_cert_expiring as last set */
    wp_dns_refresh *dnsr;    /* DNS clusters' names, resolved again (dns_refresh.h) */
} wp_main;

static int compile_routes(wp_config *cfg, wf_strbuf *err)
{
    for (size_t i = 0; i < cfg->nhcms; i++) {
        wp_route_config *rc = cfg->hcms[i]->route_config;
        if (rc && !rc->index && wp_route_index_build(&cfg->arena, rc, err) != 0)
            return -1;
    }
    return 0;
}

static void stop_all(wp_main *m)
{
    if (m->stopping)
        return;
    m->stopping = true;
    for (unsigned i = 0; i < m->srv.nworkers; i++)
        wp_worker_command(&m->srv.workers[i], WP_WORKER_STOP);
    /* SIGTERM/SIGINT stay handled (a second one during shutdown is logged and changes
     * nothing, as Envoy's handlers stay until it exits) but no longer keep the loop running:
     * stop_signals closes them once the workers are joined */
    uv_unref((uv_handle_t *)&m->sigterm);
    uv_unref((uv_handle_t *)&m->sigint);
    uv_close((uv_handle_t *)&m->drain_timer, NULL);
    uv_close((uv_handle_t *)&m->stop_timer, NULL);
    uv_close((uv_handle_t *)&m->gauge_timer, NULL);
    uv_close((uv_handle_t *)&m->od_timer, NULL);
    if (m->admin)
        wp_admin_close(m->admin);
    for (size_t i = 0; i < m->nstatus; i++)
        wp_status_close(m->status[i]);
    m->nstatus = 0;
    wp_xds_client_stop(m->xds);
    m->xds = NULL;
    wp_dns_close(m->dns);
    m->dns = NULL;
    wp_dns_refresh_close(m->dnsr);
    m->dnsr = NULL;
    wp_cert_provider_close(m->certs);
    m->certs = NULL;
    wp_listen_hold_free(m->hold); /* warming listeners' sockets: no callback uses them now */
    m->hold = NULL;
}

static void on_drain_tick(uv_timer_t *t)
{
    wp_main *m = t->data;
    size_t open = 0;
    for (unsigned i = 0; i < m->srv.nworkers; i++)
        open += wp_worker_connections(&m->srv.workers[i]);
    if (open == 0 || uv_now(m->loop) >= m->drain_deadline) {
        WF_LOG(WF_LC_main, WF_LOG_INFO, "shutting down (%zu connections left)", open);
        stop_all(m);
    }
}

/* Envoy's drain sequence (once): not ready, server.state DRAINING. */
static void enter_draining(wp_main *m)
{
    int old = atomic_exchange(&m->srv.state, 1);
    if (old == 1)
        return;
    wp_readiness_draining(&m->readiness, uv_now(m->loop));
    if (!wp_admin_hc_failed(m->admin)) /* failed health checks made it DRAINING already */
        wp_stat_add(wp_stats_get_shard(m->srv.gen->pstats->store, m->srv.nworkers),
                    m->srv.gen->pstats->server_state, 1 - old);
}

/* The workers stop the listeners of scope (1: traffic_direction INBOUND only, Envoy's
 * StopListenersType::InboundOnly; 2: all); their idle connections close now, busy ones after
 * their request. A scope never narrows. */
static void drain_workers(wp_main *m, int scope)
{
    if (scope <= m->drain_scope)
        return;
    m->drain_scope = scope;
    for (unsigned i = 0; i < m->srv.nworkers; i++)
        wp_worker_command(&m->srv.workers[i],
                          scope == 2 ? WP_WORKER_DRAIN : WP_WORKER_DRAIN_INBOUND);
}

/* SIGTERM: exit once no connection is left, at the latest --drain-time-s later. */
static void arm_exit(wp_main *m)
{
    if (m->exit_armed)
        return;
    m->exit_armed = true;
    WF_LOG(WF_LC_main, WF_LOG_INFO, "draining listeners (drain time %llus)",
           (unsigned long long)m->opts->drain_time_s);
    m->drain_deadline = uv_now(m->loop) + m->opts->drain_time_s * 1000;
    uv_timer_start(&m->drain_timer, on_drain_tick, 50, 50);
}

/* SIGTERM/SIGINT: stop accepting, let in-flight requests finish, exit when done or at the
 * deadline (an earlier inbound-only drain widens to every listener). */
static void start_drain(wp_main *m)
{
    if (m->stopping)
        return;
    enter_draining(m);
    drain_workers(m, 2);
    arm_exit(m);
}

static void on_signal(uv_signal_t *s, int signum)
{
    wp_main *m = s->data;
    WF_LOG(WF_LC_main, WF_LOG_WARN, "caught %s%s", signum == SIGTERM ? "SIGTERM" : "SIGINT",
           m->stopping ? " (already shutting down)" : "");
    start_drain(m);
}

/* Envoy's server (server.cc): SIGHUP is eaten (no hot restart), SIGUSR1 reopens the access
 * logs as POST /reopen_logs does. */
static void on_sighup(uv_signal_t *s, int signum)
{
    (void)s;
    (void)signum;
    WF_LOG(WF_LC_main, WF_LOG_WARN,
           "caught and eating SIGHUP. See documentation for how to hot restart.");
}

/* Reopens every access-log file (SIGUSR1, POST /reopen_logs); a failure is logged. */
static void reopen_logs(wp_server *srv)
{
    wf_strbuf err = WF_STRBUF_INIT;
    if (srv->alog_files && wp_alog_files_reopen(srv->alog_files, &err) != 0)
        WF_LOG(WF_LC_main, WF_LOG_ERROR, "%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
}

static void on_sigusr1(uv_signal_t *s, int signum)
{
    wp_main *m = s->data;
    (void)signum;
    WF_LOG(WF_LC_main, WF_LOG_INFO, "caught SIGUSR1. Reopening access logs.");
    reopen_logs(&m->srv);
}

static void admin_reopen_logs(void *ctx)
{
    reopen_logs(&((wp_main *)ctx)->srv);
}

static void on_stop_timer(uv_timer_t *t)
{
    wp_main *m = t->data;
    if (!m->stopping)
        drain_workers(m, m->stop_scope);
}

/* Envoy's ListenersHandler::handlerDrainListeners: without ?graceful the listeners of the
 * scope stop now; with it the drain sequence starts (not ready, server.state DRAINING; the
 * listeners keep accepting) and at its end, --drain-time-s later, they stop, unless
 * ?skip_exit. The process never exits for it (Istio's agent ends it). */
static void request_drain(void *ctx, bool inbound_only, bool graceful, bool skip_exit)
{
    wp_main *m = ctx;
    int scope = inbound_only ? 1 : 2;
    if (m->stopping)
        return;
    if (!graceful) {
        drain_workers(m, scope);
        return;
    }
    if (atomic_load(&m->srv.state) == 1) /* Envoy ignores ?graceful once draining */
        return;
    enter_draining(m);
    WF_LOG(WF_LC_main, WF_LOG_INFO, "drain sequence started (%s listeners, drain time %llus)",
           inbound_only ? "inbound" : "all", (unsigned long long)m->opts->drain_time_s);
    if (skip_exit)
        return;
    m->stop_scope = scope;
    uv_timer_start(&m->stop_timer, on_stop_timer, m->opts->drain_time_s * 1000, 0);
}

static void request_quit(void *ctx)
{
    wp_main *m = ctx;
    WF_LOG(WF_LC_main, WF_LOG_INFO, "quitquitquit: exiting");
    stop_all(m);
}

static void on_gauges(uv_timer_t *t)
{
    wp_main *m = t->data;
    int64_t up = (int64_t)((uv_now(m->loop) - (uint64_t)m->srv.start_time) / 1000);
    const wp_pstats *p = m->srv.gen->pstats;
    wp_stats_shard *sh = wp_stats_get_shard(p->store, m->srv.nworkers);
    wp_stat_add(sh, p->server_uptime, up - m->last_uptime);
    m->last_uptime = up;
    /* the allocator's figures, as /memory reports them (Envoy: server.memory_*) */
    struct mallinfo2 mi = mallinfo2();
    int64_t alloc = (int64_t)(mi.uordblks + mi.hblkhd), heap = (int64_t)(mi.arena + mi.hblkhd);
    wp_stat_add(sh, p->server_memory_allocated, alloc - m->last_mem_allocated);
    wp_stat_add(sh, p->server_memory_heap_size, heap - m->last_mem_heap);
    m->last_mem_allocated = alloc;
    m->last_mem_heap = heap;
    /* Envoy's server.days_until_first_cert_expiring: the held certificates' first NotAfter */
    int64_t first = wp_secrets_first_expiry(m->srv.secrets);
    if (first) {
        int64_t left = first - (int64_t)time(NULL), days = left > 0 ? left / 86400 : 0;
        uint32_t g = wp_stats_gauge(p->store, "server.days_until_first_cert_expiring");
        wp_stat_add(sh, g, days - m->last_cert_days);
        m->last_cert_days = days;
    }
}

/* Outlier detection's interval sweeps (outlier.h), on the main thread as Envoy's. */
static void on_outlier_timer(uv_timer_t *t)
{
    wp_main *m = t->data;
    wp_stats_shard *sh = wp_stats_get_shard(m->srv.gen->pstats->store, m->srv.nworkers);
    uint64_t next = wp_outlier_gen_tick(m->srv.gen, sh, uv_now(m->loop));
    if (next && !m->stopping)
        uv_timer_start(&m->od_timer, on_outlier_timer, next, 0);
}

/* How many hosts endpoint e of DNS cluster c makes (its addresses in *addrs: a STRICT_DNS
 * name makes a host of each, a LOGICAL_DNS one of the first); an address given as an IP makes
 * one, *addrs NULL. */
static size_t endpoint_hosts(wp_main *m, const wp_cluster *c, const wp_endpoint *e,
                             const wp_addr **addrs)
{
    *addrs = NULL;
    if (e->addr.len)
        return 1;
    size_t n = wp_dns_refresh_resolve(m->dnsr, e->hostname, e->port, c->dns_family, addrs);
    return c->type == WP_CLUSTER_LOGICAL_DNS && n > 1 ? 1 : n;
}

/* c's endpoints become its hosts: each name's addresses (dns_refresh.h: the cached answer of
 * the last refresh, or a lookup now). As Envoy's DNS clusters (strict_dns_cluster.cc), every
 * address of a STRICT_DNS name is a host with the endpoint's weight and metadata, and a name
 * that does not resolve contributes no host: the load balancer, the panic threshold,
 * /clusters and the membership gauges never see it (none left: 503 UH). Returns whether c
 * has names (its refresh rate counts). */
static bool resolve_cluster(wp_main *m, wp_config *cfg, wp_cluster *c)
{
    size_t total = 0;
    bool named = false, expands = false;
    const wp_addr *a;
    for (size_t k = 0; k < c->nendpoints; k++) {
        size_t n = endpoint_hosts(m, c, &c->endpoints[k], &a);
        total += n;
        expands |= n > 1;
        named |= !c->endpoints[k].addr.len;
    }
    /* in place only when no endpoint makes more than one host: a name with several addresses
     * would overwrite the endpoints after it before they are read */
    wp_endpoint *out = c->endpoints;
    if (expands) {
        out = wf_arena_alloc(&cfg->arena, total * sizeof(*out));
        if (!out) {
            WF_LOG(WF_LC_upstream, WF_LOG_WARN, "cluster %s: out of memory: one host per name",
                   c->name);
            out = c->endpoints; /* in place, each name its first address */
            expands = false;
        }
    }
    size_t kept = 0;
    for (size_t k = 0; k < c->nendpoints; k++) {
        wp_endpoint e = c->endpoints[k];
        size_t n = endpoint_hosts(m, c, &e, &a);
        if (!expands && n > 1)
            n = 1;
        if (n == 0)
            WF_LOG(WF_LC_upstream, WF_LOG_WARN, "cluster %s: %s has no address (no host)", c->name,
                   e.hostname);
        for (size_t j = 0; j < n; j++) {
            out[kept] = e;
            if (a)
                out[kept].addr = a[j];
            kept++;
        }
    }
    c->endpoints = out;
    c->nendpoints = kept;
    return named;
}

/* STRICT_DNS / LOGICAL_DNS clusters get their hosts before the generation is built, and the
 * names are resolved again every dns_refresh_rate (the smallest of the snapshot's). */
static void resolve_dns_clusters(wp_main *m, wp_config *cfg)
{
    uint64_t refresh_ms = 0;
    wp_dns_refresh_begin(m->dnsr);
    for (size_t i = 0; i < cfg->nclusters; i++) {
        wp_cluster *c = &cfg->clusters[i];
        if (c->type == WP_CLUSTER_STATIC)
            continue;
        if (resolve_cluster(m, cfg, c) && (refresh_ms == 0 || c->dns_refresh_rate_ms < refresh_ms))
            refresh_ms = c->dns_refresh_rate_ms;
    }
    wp_dns_refresh_end(m->dnsr, refresh_ms);
}

/* The command line's overrides of the bootstrap's node. */
static void override_node(const wp_server_opts *o, wp_config *cfg)
{
    if (o->service_node)
        cfg->node_id = wf_arena_strdup(&cfg->arena, o->service_node);
    if (o->service_cluster)
        cfg->node_cluster = wf_arena_strdup(&cfg->arena, o->service_cluster);
}

/* The snapshot's SDS contexts read the process's secrets. */
static void attach_secrets(wp_server *srv, wp_config *cfg)
{
    for (size_t i = 0; i < cfg->nsds_ctxs; i++) {
        wp_sds_ctx_attach(cfg->sds_ctxs[i], srv->secrets);
        wf_tls_ctx_free(wp_sds_ctx_acquire(cfg->sds_ctxs[i])); /* built here, not on a worker */
    }
}

/* New secrets: the current snapshot's SDS contexts are rebuilt on the main thread (Envoy's
 * ssl_context_update_by_sds); new handshakes use them, open connections keep theirs. */
static void secrets_updated(void *ud)
{
    wp_main *m = ud;
    const wp_config *cfg = m->srv.gen->cfg;
    for (size_t i = 0; i < cfg->nsds_ctxs; i++)
        wf_tls_ctx_free(wp_sds_ctx_acquire(cfg->sds_ctxs[i]));
}

/* pilot-agent's certificate provider, started with the first snapshot whose TLS contexts use
 * SDS (its CA defaults to the ADS cluster's address, as Istio's CA_ADDR does). */
static void ensure_cert_provider(wp_main *m, const wp_config *cfg)
{
    if (m->certs || m->stopping || !m->loop || cfg->nsds_ctxs == 0)
        return;
    wp_cert_provider_opts po;
    wf_strbuf err = {0};
    const char *ca = cfg->ads && !cfg->ads->pipe_path ? cfg->ads->addr.text : NULL;
    if (wp_cert_provider_opts_from_env(&po, ca, m->opts->ca_name, m->opts->token_path, m->spiffe,
                                       sizeof(m->spiffe), &err) != 0) {
        WF_LOG(WF_LC_secret, WF_LOG_CRITICAL,
               "cannot start the certificate provider: %s (SDS secrets stay not ready)",
               wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        return;
    }
    po.on_update = secrets_updated;
    po.ud = m;
    m->certs = wp_cert_provider_start(m->loop, &po, m->srv.secrets);
    if (!m->certs)
        WF_LOG(WF_LC_secret, WF_LOG_CRITICAL,
               "cannot start the certificate provider: out of memory");
}

static wp_config *load(const wp_server_opts *o, wf_strbuf *err)
{
    wp_config *cfg = o->bootstrap ? wp_bootstrap_load(o->bootstrap, o->config_path, err)
                                  : wp_bootstrap_load_file(o->config_path, err);
    if (!cfg)
        return NULL;
    override_node(o, cfg);
    if (cfg->ads && (!cfg->node_id || !*cfg->node_id || !cfg->node_cluster ||
                     !*cfg->node_cluster)) { /* Envoy's check for xDS (LocalInfo) */
        wf_strbuf_puts(err, "node 'id' and 'cluster' are required. Set it either in 'node' "
                            "config or via --service-node and --service-cluster options.");
        wp_config_unref(cfg);
        return NULL;
    }
    if (compile_routes(cfg, err) != 0) {
        wp_config_unref(cfg);
        return NULL;
    }
    return cfg;
}

static void set_gauge(wp_server *srv, uint32_t slot, int64_t v)
{
    wp_stat_add(wp_stats_get_shard(srv->gen->pstats->store, srv->nworkers), slot, v);
}

/* Adds (sign 1) or takes back (sign -1) what generation g contributes to the config gauges:
 * active clusters and listeners, and each cluster's membership. Same names share slots, so
 * taking the old generation back and adding the new one leaves the right values. */
static void config_gauges(wp_server *srv, const wp_gen *g, int sign)
{
    const wp_pstats *p = g->pstats;
    const wp_config *cfg = g->cfg;
    set_gauge(srv, p->total_listeners_active, sign * (int64_t)cfg->nlisteners);
    set_gauge(srv, p->cm_active_clusters, sign * (int64_t)cfg->nclusters);
    wp_pstats_warming_gauges(wp_stats_get_shard(p->store, srv->nworkers), p, cfg, sign);
    for (size_t i = 0; i < cfg->nclusters; i++) {
        const wp_cluster *c = &cfg->clusters[i];
        int64_t healthy = 0;
        for (size_t k = 0; k < c->nendpoints; k++)
            healthy += c->endpoints[k].health != WP_HEALTH_UNHEALTHY &&
                       c->endpoints[k].health != WP_HEALTH_DRAINING &&
                       c->endpoints[k].health != WP_HEALTH_TIMEOUT;
        set_gauge(srv, p->clusters[i].slot[WP_S_membership_total], sign * (int64_t)c->nendpoints);
        set_gauge(srv, p->clusters[i].slot[WP_S_membership_healthy], sign * healthy);
    }
}

static void initial_gauges(wp_server *srv)
{
    wp_pstats *p = srv->gen->pstats;
    set_gauge(srv, p->server_live, 1);
    set_gauge(srv, p->server_state, 0);
    set_gauge(srv, p->server_concurrency, srv->nworkers);
    set_gauge(srv, p->workers_started, 1);
    wp_pstats_config_applied(wp_stats_get_shard(p->store, srv->nworkers), p, NULL, srv->gen->cfg,
                             srv->nworkers);
    wp_pstats_tsm_counts(wp_stats_get_shard(p->store, srv->nworkers), p, NULL, srv->gen->cfg);
    config_gauges(srv, srv->gen, 1);
}

static void free_fds(int *fds, size_t n)
{
    for (size_t i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

/* Whether the current snapshot has a listener named like l on l's address whose sockets the
 * workers hold (they are kept). */
static bool has_listener(const wp_config *cur, const wp_listener *l)
{
    for (size_t i = 0; cur && i < cur->nlisteners; i++)
        if (cur->listeners[i].bound && wp_listener_same(&cur->listeners[i], l))
            return true;
    return false;
}

/* One socket per worker for listener i of cfg into fdsv[w][i]: those held since its LDS
 * update (hold, may be NULL), else new ones; -1 with err (the sockets made for it are closed
 * and set back to -1). */
static int bind_one(wp_server *srv, const wp_config *cfg, size_t i, int **fdsv,
                    wp_listen_hold *hold, wf_strbuf *err)
{
    int *held = wp_listen_hold_count(hold) ? malloc(srv->nworkers * sizeof(int)) : NULL;
    bool took = held && wp_listen_hold_take(hold, &cfg->listeners[i], held);
    for (unsigned w = 0; took && w < srv->nworkers; w++)
        fdsv[w][i] = held[w];
    free(held);
    if (took)
        return 0;
    for (unsigned w = 0; w < srv->nworkers; w++) {
        fdsv[w][i] = wp_listen_socket(&cfg->listeners[i], err);
        if (fdsv[w][i] < 0) {
            while (w-- > 0) {
                close(fdsv[w][i]);
                fdsv[w][i] = -1;
            }
            return -1;
        }
    }
    return 0;
}

/* Every worker's sockets for cfg's listeners that cur lacks (fdsv[w][i], -1 for the kept
 * ones), marking each listener bound or not. strict (the bootstrap at start): the first
 * listener that cannot bind fails it all (-1, nothing left open). Otherwise (an update, as
 * Envoy's listener manager): a listener that cannot bind is left without sockets, its error
 * appended to err ("Error adding/updating listener(s) NAME: cannot bind 'ADDR': why", one
 * "NAME: why" line more per other listener), and the return
 * is 1; the others are applied. -1 when out of memory. */
static int bind_all(wp_server *srv, wp_config *cfg, const wp_config *cur, int **fdsv, bool strict,
                    wp_listen_hold *hold, wf_strbuf *err)
{
    size_t n = cfg->nlisteners ? cfg->nlisteners : 1;
    for (unsigned w = 0; w < srv->nworkers; w++) {
        if (!(fdsv[w] = malloc(n * sizeof(int)))) {
            while (w-- > 0)
                free_fds(fdsv[w], cfg->nlisteners);
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            fdsv[w][i] = -1;
    }
    int rc = 0;
    for (size_t i = 0; i < cfg->nlisteners; i++) {
        wp_listener *l = &cfg->listeners[i];
        l->bound = true;
        if (!l->bind_to_port || has_listener(cur, l))
            continue; /* bind_to_port false: in service without a socket (handed connections) */
        wf_strbuf why = WF_STRBUF_INIT;
        if (bind_one(srv, cfg, i, fdsv, hold, &why) == 0) {
            wf_strbuf_free(&why);
            continue;
        }
        l->bound = false;
        if (strict) {
            wf_strbuf_puts(err, wf_strbuf_cstr(&why));
            wf_strbuf_free(&why);
            for (unsigned w = 0; w < srv->nworkers; w++)
                free_fds(fdsv[w], cfg->nlisteners);
            return -1;
        }
        WF_LOG(WF_LC_main, WF_LOG_ERROR, "%s", wf_strbuf_cstr(&why));
        const char *reason = wp_listen_error_reason(wf_strbuf_cstr(&why), l->name);
        /* Envoy's LdsApiImpl: one prefix, then "NAME: reason" per listener, joined by "\n" */
        wf_strbuf_printf(err, "%s%s: %s", rc ? "\n" : "Error adding/updating listener(s) ", l->name,
                         reason);
        wf_strbuf_free(&why);
        rc = 1;
    }
    return rc;
}

int wp_server_apply(wp_server *srv, wp_config *cfg, wp_listen_hold *hold, wf_strbuf *err)
{
    if (compile_routes(cfg, err) != 0) {
        wp_config_unref(cfg);
        return -1;
    }
    resolve_dns_clusters((wp_main *)srv, cfg); /* srv is wp_main's first member */
    attach_secrets(srv, cfg);
    wp_gen *g = wp_gen_new(srv, cfg, err);
    if (!g)
        return -1;
    int **fdsv = calloc(srv->nworkers, sizeof(*fdsv));
    int bound = fdsv ? bind_all(srv, cfg, srv->gen->cfg, fdsv, false, hold, err) : -1;
    if (bound < 0) {
        if (!fdsv)
            wf_strbuf_puts(err, "out of memory");
        free(fdsv);
        wp_gen_unref(g);
        return -1;
    }
    for (unsigned i = 0; i < srv->nworkers; i++) {
        wp_gen_ref(g);
        wp_worker_post(&srv->workers[i], g, fdsv[i]);
    }
    free(fdsv);
    wp_gen *old = srv->gen;
    config_gauges(srv, old, -1);
    srv->gen = g;
    config_gauges(srv, g, 1);
    wp_pstats_config_applied(wp_stats_get_shard(g->pstats->store, srv->nworkers), g->pstats,
                             old->cfg, g->cfg, srv->nworkers);
    wp_pstats_tsm_counts(wp_stats_get_shard(g->pstats->store, srv->nworkers), g->pstats, old->cfg,
                         g->cfg);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    srv->loaded_unix = (double)now.tv_sec + now.tv_nsec / 1e9;
    wp_gen_unref(old);
    wp_main *m = (wp_main *)srv; /* srv is wp_main's first member */
    if (m->loop && !m->stopping && !uv_is_active((uv_handle_t *)&m->od_timer))
        on_outlier_timer(&m->od_timer); /* the new clusters may have outlier detection */
    return bound;
}

/* ---------- status servers (status.h): readiness and merged metrics ---------- */

/* Envoy stays INITIALIZING while a cluster or listener waits for an SDS secret whose
 * initial_fetch_timeout is 0s, as Istio writes it for `default` and `ROOTCA`; pilot-agent's
 * probe then answers "server is not live, current state is: INITIALIZING". So a proxy whose
 * config uses the workload certificate is not ready before its first one arrived: traffic sent
 * to it would otherwise fail with "Secret is not supplied by SDS". */
static bool workload_secrets_pending(wp_main *m)
{
    const wp_config *cfg = m->srv.gen ? m->srv.gen->cfg : NULL;
    if (!cfg || wp_secrets_has_workload(m->srv.secrets))
        return false;
    for (size_t i = 0; i < cfg->nsds_ctxs; i++)
        if (wp_sds_ctx_uses_default(cfg->sds_ctxs[i]))
            return true;
    return false;
}

static bool st_ready(void *ud, char *reason, size_t cap)
{
    wp_main *m = ud;
    if (!wp_readiness_check(&m->readiness, uv_now(m->loop), reason, cap))
        return false;
    if (workload_secrets_pending(m)) {
        snprintf(reason, cap, "server is not live, current state is: INITIALIZING");
        return false;
    }
    return true;
}

static void st_prometheus(void *ud, wf_strbuf *out)
{
    wp_main *m = ud;
    wf_strbuf err = {0};
    wp_stats_tags *tags = wp_stats_tags_from_config(m->srv.gen->cfg->stats_config, &err);
    wf_strbuf_free(&err);
    wp_stats_render_prometheus(m->srv.stats_store, tags, false, NULL, out);
    wp_stats_tags_free(tags);
}

/* pilot-agent's POST /quitquitquit: the agent and its Envoy end, as on SIGTERM (drain, then
 * exit once no connection is left or at --drain-time-s). */
static void st_quit(void *ud)
{
    start_drain(ud);
}

/* pilot-agent's POST /drain: Envoy's drain_listeners?inboundonly&graceful for a sidecar (every
 * listener for a gateway: metadata PROXY_TYPE router, else a node id of type router), the
 * process stays up (the agent's DrainNow). */
static void st_drain(void *ud)
{
    wp_main *m = ud;
    json_t *md = json_object_get(m->srv.gen->cfg->node, "metadata");
    const char *type = json_string_value(json_object_get(md, "PROXY_TYPE"));
    const char *id = m->srv.gen->cfg->node_id; /* Istio's "router~<ip>~<pod>.<ns>~<domain>" */
    bool router = type ? strcmp(type, "router") == 0 : id && strncmp(id, "router~", 7) == 0;
    request_drain(m, !router, true, true);
}

/* Where the application listens, for the app probes and the app scrape: the node metadata
 * WEFT_LOCALHOST when the bootstrap has it (weft's local mesh without network namespaces
 * puts a sidecar's app on the pod's own loopback address, where pilot sends inbound traffic
 * too), else INSTANCE_IP (pilot-agent's appProbersDestination, the pod IP), else NULL
 * (127.0.0.1). The string is copied by the status server. */
static const char *app_address(const wp_main *m)
{
    json_t *md = json_object_get(m->srv.gen->cfg->node, "metadata");
    const char *lh = json_string_value(json_object_get(md, "WEFT_LOCALHOST"));
    return lh && *lh ? lh : m->opts->app_ip;
}

/* pilot-agent's /debug/ndsz: the DNS proxy's NameTable. */
static const json_t *st_name_table(void *ud)
{
    return wp_dns_name_table(((wp_main *)ud)->dns);
}

/* The admin's /failed_requests, relayed by the status port (agent/status.h). */
static int st_failed_requests(void *ud, size_t limit, wf_strbuf *out)
{
    json_t *j = wp_failed_requests_json(&((wp_main *)ud)->srv, limit);
    char *txt = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!txt)
        return -1;
    wf_strbuf_puts(out, txt);
    wf_strbuf_putc(out, '\n');
    free(txt);
    return 0;
}

static int start_one_status(wp_main *m, const char *addr, bool readiness_only, wf_strbuf *err)
{
    wp_status_opts opts = {.address = addr,
                           .readiness_only = readiness_only,
                           .probers = m->opts->app_probers,
                           .app_ip = app_address(m),
                           .app_metrics = m->opts->app_metrics};
    wp_status_callbacks cb = {.ready = st_ready,
                              .render_prometheus = st_prometheus,
                              .quit = st_quit,
                              .drain = st_drain,
                              .name_table = st_name_table,
                              .failed_requests = st_failed_requests,
                              .ud = m};
    wp_status *s = wp_status_start(m->loop, &opts, &cb, err);
    if (!s)
        return -1;
    m->status[m->nstatus++] = s;
    return 0;
}

/* --status-address and --health-address servers; -1 with err (those started are closed). */
static int start_status(wp_main *m, wf_strbuf *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->opts->nstatus; i++)
        rc = start_one_status(m, m->opts->status_addrs[i], false, err);
    for (size_t i = 0; rc == 0 && i < m->opts->nhealth; i++)
        rc = start_one_status(m, m->opts->health_addrs[i], true, err);
    if (rc != 0) {
        for (size_t i = 0; i < m->nstatus; i++)
            wp_status_close(m->status[i]);
        m->nstatus = 0;
    }
    return rc;
}

/* ---------- the xDS client (xds_client.h) ---------- */

/* Loads the effective bootstrap the client composed and applies it (NACKed on error). */
/* Applies a snapshot loaded from a bootstrap the xDS client composed (from_xds; dump: its
 * dynamic resources' config dump, nsc / nsl: how many clusters and listeners are the
 * bootstrap's own) or from the bootstrap alone. Inbound listeners stay stopped while a
 * /drain_listeners?inboundonly is in force. wp_server_apply's result (-1 with err). */
static int apply_snapshot(wp_main *m, wp_config *cfg, bool from_xds, json_t *dump, size_t nsc,
                          size_t nsl, wf_strbuf *err)
{
    override_node(m->opts, cfg);
    cfg->from_xds = from_xds;
    cfg->xds_dump = dump ? json_incref(dump) : NULL;
    cfg->n_static_clusters = nsc;
    cfg->n_static_listeners = nsl;
    int rc = wp_server_apply(&m->srv, cfg, m->hold, err);
    if (rc >= 0 && m->drain_scope == 1 && !m->stopping) /* listeners added since stay stopped */
        for (unsigned i = 0; i < m->srv.nworkers; i++)
            wp_worker_command(&m->srv.workers[i], WP_WORKER_DRAIN_INBOUND);
    return rc;
}

static int xds_apply(void *ud, json_t *effective, const wp_xds_dynamic *dyn, wf_strbuf *err)
{
    wp_main *m = ud;
    wp_config *cfg = wp_bootstrap_load(effective, "xds", err);
    if (!cfg)
        return -1;
    ensure_cert_provider(m, cfg); /* wp_server_apply attaches the secrets */
    int rc = apply_snapshot(m, cfg, true, dyn->dump, dyn->n_static_clusters,
                            dyn->n_static_listeners, err);
    if (rc < 0)
        return -1;
    m->warming_clusters = dyn->warming_clusters.n > 0;
    m->warming_listeners = dyn->warming_listeners.n > 0;
    return rc; /* 1: applied, some listeners could not bind (err: the NACK text) */
}

/* The LDS update's listener sockets (xds_client.h hold, listen_hold.h). */
static int xds_hold(void *ud, const wp_config *cfg, size_t first, const wf_xds_names *warming,
                    json_t *failed)
{
    wp_main *m = ud;
    return wp_listen_hold_add(m->hold, cfg, first, warming, m->srv.gen->cfg, failed);
}

static void xds_hold_settle(void *ud, bool accepted)
{
    wp_main *m = ud;
    wp_listen_hold_settle(m->hold, accepted);
}

static void xds_state(void *ud, bool up)
{
    wp_main *m = ud;
    if (up)
        wp_readiness_stream_up(&m->readiness, uv_now(m->loop));
    else
        wp_readiness_stream_down(&m->readiness, uv_now(m->loop));
}

/* Envoy's init manager: the first CDS counts once its EDS clusters have their endpoints, the
 * first LDS once its listeners have their route configurations (Envoy keeps them warming
 * until then). Readiness and the server state follow: INITIALIZING, then LIVE. */
static void xds_settle(wp_main *m)
{
    uint64_t now = uv_now(m->loop);
    if (m->cds_pending && !m->warming_clusters) {
        m->cds_pending = false;
        m->cds_applied = true;
        wp_readiness_cds_update(&m->readiness, true, now);
    }
    if (m->lds_pending && !m->warming_listeners) {
        m->lds_pending = false;
        m->lds_applied = true;
        wp_readiness_lds_update(&m->readiness, true, now);
    }
    if (m->cds_applied && m->lds_applied && atomic_load(&m->srv.state) == 3) {
        atomic_store(&m->srv.state, 0);
        /* LIVE, or DRAINING while health checks fail (Envoy's serverState) */
        set_gauge(&m->srv, m->srv.gen->pstats->server_state,
                  wp_admin_hc_failed(m->admin) ? -2 : -3);
        WF_LOG(WF_LC_main, WF_LOG_INFO, "all dependencies initialized. starting workers");
    }
}

static void xds_update(void *ud, wf_xds_type t, const char *version, bool accepted)
{
    wp_main *m = ud;
    if (!accepted) {
        if (t == WF_XDS_CDS)
            wp_readiness_cds_update(&m->readiness, false, uv_now(m->loop));
        else if (t == WF_XDS_LDS)
            wp_readiness_lds_update(&m->readiness, false, uv_now(m->loop));
        wp_xds_status st = {0};
        if ((t == WF_XDS_CDS || t == WF_XDS_LDS) && m->xds) {
            wp_xds_client_status(m->xds, &st);
            wp_readiness_note_rejection(&m->readiness, t == WF_XDS_CDS ? "CDS" : "LDS",
                                        st.last_nack);
        }
        return;
    }
    m->cds_pending |= t == WF_XDS_CDS;
    m->lds_pending |= t == WF_XDS_LDS;
    xds_settle(m);
}

/* credentialName secrets from the stream (sds/ads_secrets.h); set NULL: the wanted names
 * only. The TLS contexts naming them rebuild when the next snapshot is applied or used. */
static int xds_secrets(void *ud, const json_t *set, const wf_xds_names *wanted, wf_strbuf *err)
{
    wp_main *m = ud;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return wp_ads_secrets_store(m->srv.secrets, set, wanted,
                                (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, err);
}

/* NDS: the NameTable goes to the DNS proxy. */
static int xds_name_table(void *ud, const json_t *nt, wf_strbuf *err)
{
    wp_main *m = ud;
    if (m->dns && wp_dns_update(m->dns, nt) != 0) {
        wf_strbuf_puts(err, "out of memory building the DNS lookup table");
        return -1;
    }
    return 0;
}

/* pilot-agent's DNS proxy (agent/dns.h) when the node asks for DNS capture. */
static int start_dns(wp_main *m, wf_strbuf *err)
{
    const json_t *node = m->srv.gen->cfg->node;
    if (!wp_dns_capture_enabled(node))
        return 0;
    char ns[256], domain[512];
    wp_dns_scope_from_node(node, ns, sizeof ns, domain, sizeof domain);
    wp_dns_opts o = {.ns = *ns ? ns : NULL, .domain = *domain ? domain : NULL};
    m->dns = wp_dns_start(m->loop, &o, err);
    return m->dns ? 0 : -1;
}

static int start_xds(wp_main *m, wf_strbuf *err)
{
    if (!m->srv.gen->cfg->ads)
        return 0;
    if (!(m->hold = wp_listen_hold_new(m->srv.nworkers))) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    wp_xds_callbacks cb = {xds_apply, xds_state,       xds_update,  m,
                           xds_hold,  xds_hold_settle, xds_secrets, xds_name_table};
    /* pilot-agent's per-RPC credentials towards istiod's 15012: the pod's token */
    wp_xds_client_opts xo = {.token_path = wp_token_path(m->opts->token_path)};
    atomic_store(&m->srv.state, 3);
    set_gauge(&m->srv, m->srv.gen->pstats->server_state, 3);
    return wp_xds_client_start(m->loop, m->srv.gen->cfg, m->srv.stats_store,
                               wp_stats_get_shard(m->srv.stats_store, m->srv.nworkers), &cb, &xo,
                               &m->xds, err);
}

/* SIGTERM/SIGINT drain; SIGHUP and SIGUSR1 (ignored from the start of wp_server_run, so one
 * that comes early does not kill the process) are handled until the process ends: their
 * handles are unreferenced, so they do not keep the loop running. */
static void start_signals(wp_main *m, uv_loop_t *loop)
{
    uv_signal_t *sig[] = {&m->sigterm, &m->sigint, &m->sighup, &m->sigusr1};
    uv_signal_cb cb[] = {on_signal, on_signal, on_sighup, on_sigusr1};
    int num[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
    for (size_t i = 0; i < sizeof(sig) / sizeof(sig[0]); i++) {
        int rc = uv_signal_init(loop, sig[i]);
        sig[i]->data = m;
        if (rc == 0)
            rc = uv_signal_start(sig[i], cb[i], num[i]);
        if (rc != 0)
            WF_LOG(WF_LC_main, WF_LOG_ERROR, "cannot handle signal %d: %s", num[i],
                   uv_strerror(rc));
    }
    uv_unref((uv_handle_t *)&m->sighup);
    uv_unref((uv_handle_t *)&m->sigusr1);
}

/* Closes the signal handles; libuv then restores the default actions, so the four are ignored
 * until the process exits (a late SIGTERM does not turn a clean exit into death by signal). */
static void stop_signals(wp_main *m)
{
    uv_close((uv_handle_t *)&m->sigterm, NULL);
    uv_close((uv_handle_t *)&m->sigint, NULL);
    uv_close((uv_handle_t *)&m->sighup, NULL);
    uv_close((uv_handle_t *)&m->sigusr1, NULL);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
}

static void free_server(wp_main *m, unsigned nstarted)
{
    wp_server *srv = &m->srv;
    wp_dns_refresh_close(m->dnsr); /* before the loop ran: freed at once */
    m->dnsr = NULL;
    for (unsigned i = 0; i < nstarted; i++)
        wp_worker_free(&srv->workers[i]);
    free(srv->workers);
    wp_gen_unref(srv->gen);
    wp_istio_rt_free(srv->istio);
    wp_stats_free(srv->stats_store);
    if (srv->alog_files)
        wp_alog_files_free(srv->alog_files);
    wp_secrets_free(srv->secrets);
}

static int fail(wp_main *m, unsigned ninit, const char *what, wf_strbuf *err)
{
    fprintf(stderr, "weft-proxy: %s: %s\n", what, wf_strbuf_cstr(err));
    wf_strbuf_free(err);
    free_server(m, ninit);
    return 1;
}

static int start_workers(wp_main *m, wf_strbuf *err, unsigned *ninit)
{
    wp_server *srv = &m->srv;
    srv->workers = calloc(srv->nworkers, sizeof(*srv->workers));
    int **fdsv = calloc(srv->nworkers, sizeof(*fdsv));
    if (!srv->workers || !fdsv) {
        free(fdsv);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    if (bind_all(srv, srv->gen->cfg, NULL, fdsv, true, NULL, err) != 0) {
        free(fdsv);
        return -1;
    }
    int rc = 0;
    for (unsigned i = 0; i < srv->nworkers; i++) {
        wp_gen_ref(srv->gen);
        wp_gen_post post = {.gen = srv->gen, .fds = fdsv[i]};
        fdsv[i] = NULL;
        if (rc == 0) {
            *ninit = i + 1;
            rc = wp_worker_init(&srv->workers[i], srv, i, &post, err);
        } else { /* an earlier worker failed: nobody takes this one */
            free_fds(post.fds, srv->gen->cfg->nlisteners);
            wp_gen_unref(post.gen);
        }
    }
    free(fdsv);
    return rc;
}

/* A refresh changed a DNS cluster's address: the current snapshot is built again from its
 * own bootstrap (for xDS, the effective one the client composed), with the new answers, and
 * applied as an EDS update is (Envoy changes the cluster's hosts). */
static void dns_changed(void *ud)
{
    wp_main *m = ud;
    if (m->stopping)
        return;
    const wp_config *cur = m->srv.gen->cfg;
    wf_strbuf err = {0};
    wp_config *cfg =
        wp_bootstrap_load(cur->bootstrap, cur->from_xds ? "xds" : m->opts->config_path, &err);
    if (!cfg || apply_snapshot(m, cfg, cur->from_xds, cur->xds_dump, cur->n_static_clusters,
                               cur->n_static_listeners, &err) < 0)
        WF_LOG(WF_LC_upstream, WF_LOG_WARN,
               "DNS answers changed but the configuration could not be rebuilt: %s",
               wf_strbuf_cstr(&err));
    else
        WF_LOG(WF_LC_upstream, WF_LOG_INFO, "DNS answers changed: clusters' hosts updated");
    wf_strbuf_free(&err);
}

/* The stats store, the access-log files and the first generation. */
static int first_generation(wp_main *m, wp_config *cfg, unsigned nshards, wf_strbuf *err)
{
    wp_server *srv = &m->srv;
    srv->alog_files = wp_alog_files_new();
    srv->stats_store = wp_stats_new(nshards);
    srv->secrets = wp_secrets_new();
    m->dnsr = wp_dns_refresh_new(dns_changed, m);
    if (!srv->alog_files || !srv->stats_store || !srv->secrets || !m->dnsr ||
        !(srv->istio = wp_istio_rt_new(srv->stats_store, srv->nworkers))) {
        wp_config_unref(cfg);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    resolve_dns_clusters(m, cfg);
    attach_secrets(srv, cfg);
    wp_gen *g = wp_gen_new(srv, cfg, err);
    if (!g)
        return -1;
    srv->gen = g;
    if (wp_istio_register_build(srv->stats_store, cfg,
                                wp_stats_get_shard(srv->stats_store, srv->nworkers)) != 0) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

int wp_server_run(const wp_server_opts *o)
{
    wp_main m = {0};
    wf_strbuf err = {0};
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    m.opts = o;
    wp_config *cfg = load(o, &err);
    m.srv.nworkers = o->concurrency ? o->concurrency : uv_available_parallelism();
    m.srv.flush_interval_ms = o->flush_interval_ms;
    if (!cfg || first_generation(&m, cfg, m.srv.nworkers + 1, &err) != 0) {
        fprintf(stderr, "error initializing configuration '%s': %s\n", o->config_path,
                wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        free_server(&m, 0);
        return 1;
    }
    if (o->validate_only) {
        printf("configuration '%s' OK\n", o->config_path);
        free_server(&m, 0);
        return 0;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    m.srv.loaded_unix = (double)now.tv_sec + now.tv_nsec / 1e9; /* config_dump last_updated */
    atomic_store(&m.srv.next_conn_id, 0);
    atomic_store(&m.srv.next_stream_id, 1);
    unsigned ninit = 0;
    if (start_workers(&m, &err, &ninit) != 0)
        return fail(&m, ninit, "cannot start", &err);
    uv_loop_t loop;
    uv_loop_init(&loop);
    m.loop = &loop;
    m.srv.start_time = (int64_t)uv_now(&loop);
    wp_readiness_init(&m.readiness, &o->readiness);
    if (!m.srv.gen->cfg->ads)
        wp_readiness_set_static(&m.readiness);
    if (m.srv.gen->cfg->has_admin) {
        wp_admin_actions act = {.drain = request_drain,
                                .quit = request_quit,
                                .reopen_logs = admin_reopen_logs,
                                .ctx = &m};
        m.admin = wp_admin_start(&loop, &m.srv, &act, o, &err);
        if (!m.admin) {
            uv_loop_close(&loop);
            return fail(&m, ninit, "admin", &err);
        }
    }
    if (start_status(&m, &err) != 0) {
        if (m.admin)
            wp_admin_close(m.admin);
        uv_run(&loop, UV_RUN_DEFAULT);
        if (m.admin)
            wp_admin_free(m.admin);
        uv_loop_close(&loop);
        return fail(&m, ninit, "status server", &err);
    }
    start_signals(&m, &loop);
    uv_timer_init(&loop, &m.drain_timer);
    uv_timer_init(&loop, &m.stop_timer);
    uv_timer_init(&loop, &m.gauge_timer);
    m.drain_timer.data = m.gauge_timer.data = m.stop_timer.data = &m;
    uv_timer_start(&m.gauge_timer, on_gauges, 1000, 1000);
    uv_timer_init(&loop, &m.od_timer);
    m.od_timer.data = &m;
    on_outlier_timer(&m.od_timer);
    initial_gauges(&m.srv);
    for (unsigned i = 0; i < m.srv.nworkers; i++)
        wp_worker_start(&m.srv.workers[i]);
    atomic_store(&m.srv.workers_started, 1);
    wp_readiness_workers_started(&m.readiness, uv_now(&loop));
    ensure_cert_provider(&m, m.srv.gen->cfg);
    int exit_rc = 0; /* 1: a part the proxy needs could not start (it stopped at once) */
    if (start_dns(&m, &err) != 0) {
        WF_LOG(WF_LC_main, WF_LOG_CRITICAL, "failed to start local DNS server: %s",
               wf_strbuf_cstr(&err));
        stop_all(&m);
        exit_rc = 1;
    } else if (start_xds(&m, &err) != 0) {
        WF_LOG(WF_LC_main, WF_LOG_CRITICAL, "cannot start the xDS client: %s",
               wf_strbuf_cstr(&err));
        stop_all(&m);
        exit_rc = 1;
    }
    if (m.dnsr && wp_dns_refresh_set_loop(m.dnsr, &loop) != 0)
        WF_LOG(WF_LC_main, WF_LOG_WARN, "DNS clusters will not be resolved again (no timer)");
    WF_LOG(WF_LC_main, WF_LOG_INFO, "starting main dispatch loop (%u workers)", m.srv.nworkers);
    uv_run(&loop, UV_RUN_DEFAULT);
    for (unsigned i = 0; i < m.srv.nworkers; i++)
        wp_worker_join(&m.srv.workers[i]);
    if (m.admin)
        wp_admin_free(m.admin);
    stop_signals(&m);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    wp_listen_hold_free(m.hold);
    free_server(&m, ninit);
    wf_strbuf_free(&err);
    WF_LOG(WF_LC_main, WF_LOG_INFO, "exiting");
    return exit_rc;
}
