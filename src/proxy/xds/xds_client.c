/*
 * xds_client.c - the ADS client (behaviour in xds_client.h): the stream's life (connect,
 * answer timeout, close logging, back-off, stats), for both protocols; the messages are
 * handled in xds_client_sotw.c (state of the world) and xds_client_delta.c (delta).
 */
#include "proxy/xds/xds_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#include "core/log.h"
#include "proxy/xds/xds_client_state.h"
#include "tls/tls.h"

#define MAX_MSG         (64u * 1024u * 1024u)
#define RETRY_MAX_DELAY 30000u /* Envoy's RetryMaxDelayMs: transient closes warn after this */
#define MSG_CONN_FAILURE                                                                           \
    "upstream connect error or disconnect/reset before headers. reset reason: connection "         \
    "failure"
#define MSG_CONN_TERMINATION                                                                       \
    "upstream connect error or disconnect/reset before headers. reset reason: connection "         \
    "termination"

static const char *xc_method(const wp_xds_client *c)
{
    return c->delta ? "DeltaAggregatedResources" : "StreamAggregatedResources";
}

/* ---- stats ---- */

static void gauge_set(wp_xds_client *c, uint32_t slot, int64_t *cur, int64_t v)
{
    wp_stat_add(c->sh, slot, v - *cur);
    *cur = v;
}

static bool register_stats(wp_xds_client *c, wp_stats *st, const char *stat_cluster)
{
    static const char *const kinds[XC_UPD_N] = {"update_attempt", "update_success",
                                                "update_rejected", "update_failure"};
    static const char *const prefix[2] = {"cluster_manager.cds.", "listener_manager.lds."};
    char name[512];
    c->s_state = wp_stats_gauge(st, "control_plane.connected_state");
    c->s_up = wp_stats_gauge(st, "control_plane.weft.connected_seconds");
    c->s_since = wp_stats_gauge(st, "control_plane.weft.seconds_since_update");
    snprintf(name, sizeof(name), "cluster.%s.upstream_cx_total", stat_cluster);
    c->s_cx_total = wp_stats_counter(st, name);
    snprintf(name, sizeof(name), "cluster.%s.upstream_cx_active", stat_cluster);
    c->s_cx_active = wp_stats_gauge(st, name);
    snprintf(name, sizeof(name), "cluster.%s.upstream_cx_connect_fail", stat_cluster);
    c->s_cx_fail = wp_stats_counter(st, name);
    bool ok = c->s_state != WP_STAT_INVALID && c->s_up != WP_STAT_INVALID &&
              c->s_since != WP_STAT_INVALID;
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < XC_UPD_N; k++) {
            snprintf(name, sizeof(name), "%s%s", prefix[t], kinds[k]);
            c->s_upd[t][k] = wp_stats_counter(st, name);
        }
    }
    /* the gauges exist (and read 0) from the start, as Envoy's */
    wp_stat_add(c->sh, c->s_state, 0);
    wp_stat_add(c->sh, c->s_cx_active, 0);
    return ok;
}

static void tick_gauges(wp_xds_client *c)
{
    uint64_t now = uv_now(c->loop);
    int64_t up = c->up_since ? (int64_t)((now - c->up_since) / 1000u) : 0;
    int64_t since = c->updated ? (int64_t)((now - c->last_update) / 1000u) : 0;
    gauge_set(c, c->s_up, &c->g_up, up);
    gauge_set(c, c->s_since, &c->g_since, since);
}

static void on_tick(uv_timer_t *t)
{
    tick_gauges(t->data);
}

/* ---- connected state ---- */

static void set_connected(wp_xds_client *c, bool up)
{
    if (c->answered == up)
        return;
    c->answered = up;
    c->up_since = up ? uv_now(c->loop) : 0;
    if (c->up_since == 0 && up)
        c->up_since = 1;
    gauge_set(c, c->s_cx_active, &c->g_cx_active, up ? 1 : 0);
    tick_gauges(c);
    if (!c->stopping && c->cb.on_state)
        c->cb.on_state(c->cb.ud, up);
}

static void xc_answered(wp_xds_client *c)
{
    c->backoff_next = c->opts.backoff_base_ms; /* Envoy resets the back-off on any message */
    free(c->close_msg);
    c->close_msg = NULL;
    c->close_set = false;
    if (c->answered)
        return;
    uv_timer_stop(&c->answer);
    set_connected(c, true);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "%s gRPC config stream to %s established", xc_method(c),
           c->cluster_name);
}

/* ---- close logging (Envoy's GrpcStream::logClose) ---- */

static bool transient(int status)
{
    return status == 4 || status == 8 || status == 14;
}

static void log_close(wp_xds_client *c, int status, const char *msg)
{
    if (status == 0) {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "%s gRPC config stream to %s closed: %d, %s",
               xc_method(c), c->cluster_name, status, msg);
        return;
    }
    if (!transient(status)) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "%s gRPC config stream to %s closed: %d, %s",
               xc_method(c), c->cluster_name, status, msg);
        return;
    }
    uint64_t now = uv_now(c->loop);
    char *copy = strdup(msg);
    if (!c->close_set || status != c->close_status) {
        if (c->close_set)
            WF_LOG(WF_LC_config, WF_LOG_WARN,
                   "%s gRPC config stream to %s closed: %d, %s (previously %d, %s since %llus "
                   "ago)",
                   xc_method(c), c->cluster_name, status, msg, c->close_status,
                   c->close_msg ? c->close_msg : "",
                   (unsigned long long)((now - c->close_since) / 1000));
        else
            WF_LOG(WF_LC_config, WF_LOG_DEBUG, "%s gRPC config stream to %s closed: %d, %s",
                   xc_method(c), c->cluster_name, status, msg);
        c->close_set = true;
        c->close_status = status;
        c->close_since = now;
    } else if (now - c->close_since > RETRY_MAX_DELAY) {
        WF_LOG(WF_LC_config, WF_LOG_WARN,
               "%s gRPC config stream to %s closed since %llus ago: %d, %s", xc_method(c),
               c->cluster_name, (unsigned long long)((now - c->close_since) / 1000), status, msg);
    } else {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "%s gRPC config stream to %s closed: %d, %s",
               xc_method(c), c->cluster_name, status, msg);
    }
    free(c->close_msg);
    c->close_msg = copy;
}

/* ---- back-off (Envoy's JitteredExponentialBackOffStrategy) ---- */

static uint64_t next_random(wp_xds_client *c)
{
    uint64_t x = c->rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t xc_next_backoff(wp_xds_client *c)
{
    uint64_t cur = c->backoff_next;
    uint64_t max = c->opts.backoff_max_ms;
    c->backoff_next = cur > max / 2 ? max : cur * 2;
    uint64_t d = next_random(c) % cur;
    return d < max ? d : max;
}

/* ---- the stream ---- */

static void connect_now(wp_xds_client *c);

static void on_retry(uv_timer_t *t)
{
    connect_now(t->data);
}

static void schedule_retry(wp_xds_client *c)
{
    if (c->stopping)
        return;
    uint64_t d = xc_next_backoff(c);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "%s gRPC config stream to %s: retrying in %llums",
           xc_method(c), c->cluster_name, (unsigned long long)d);
    if (uv_timer_start(&c->retry, on_retry, d, 0) != 0)
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "cannot arm the xDS retry timer");
}

/* A stream ended for a reason other than wp_xds_client_stop. */
static void stream_failed(wp_xds_client *c, int status, const char *msg)
{
    log_close(c, status, msg);
    xc_count_update(c, WF_XDS_CDS, XC_UPD_FAILURE);
    xc_count_update(c, WF_XDS_LDS, XC_UPD_FAILURE);
    for (int t = 0; t < XC_NTYPES; t++) {
        wf_xds_client_stream_reset(&c->types[t]);
        wf_xds_delta_client_stream_reset(&c->dtypes[t]);
    }
    wf_xds_client_stream_reset(&c->nds);
    schedule_retry(c);
}

/* control_plane.connected_state as Envoy sets it: 1 as soon as the stream is opened (before
 * any answer, even before TCP connects), 0 when it closes. So it flaps in a reconnect loop;
 * the weft gauges and readiness follow the answered state instead. */
static void set_stream_open(wp_xds_client *c, bool open)
{
    gauge_set(c, c->s_state, &c->g_state, open ? 1 : 0);
}

static void end_stream(wp_xds_client *c)
{
    uv_timer_stop(&c->answer);
    set_stream_open(c, false);
    c->call = NULL;
    if (c->conn) {
        wf_h2_conn_close(c->conn);
        c->conn = NULL;
    }
    if (!c->answered)
        wp_stat_add(c->sh, c->s_cx_fail, 1);
    set_connected(c, false);
}

static void on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    wp_xds_client *c = ud;
    if (call != c->call)
        return;
    bool answered = c->answered;
    end_stream(c);
    if (c->stopping)
        return;
    if (c->answer_expired) {
        c->answer_expired = false;
        stream_failed(c, 4, "no response from the control plane in time");
    } else if (end->reason == WF_H2_END_STATUS) {
        stream_failed(c, end->grpc_status, end->grpc_message);
    } else if (end->reason == WF_H2_END_CONN_LOST) {
        stream_failed(c, 14, answered ? MSG_CONN_TERMINATION : MSG_CONN_FAILURE);
    } else {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s%s", end->reason == WF_H2_END_PROTOCOL ? "" : "reset: ",
                 wf_h2_end_reason_str(end->reason));
        stream_failed(c, end->reason == WF_H2_END_PROTOCOL ? 13 : 14, msg);
    }
}

static void maybe_free(wp_xds_client *c)
{
    if (!c->stopping || c->open_handles > 0 || c->live_conns > 0)
        return;
    xc_state_free(c);
    free(c);
}

static void on_conn_closed(wf_h2_conn *conn, wf_h2_end_reason r, void *ud)
{
    wp_xds_client *c = ud;
    if (conn == c->conn)
        c->conn = NULL;
    c->live_conns--;
    maybe_free(c);
}

static void on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    wp_xds_client *c = ud;
    if (call != c->call || c->stopping)
        return;
    xc_answered(c);
    if (c->delta)
        xc_delta_on_response(c, (const char *)msg, len);
    else
        xc_on_response(c, (const char *)msg, len);
}

static void on_answer_timeout(uv_timer_t *t)
{
    wp_xds_client *c = t->data;
    if (!c->call || c->answered)
        return;
    c->answer_expired = true;
    wf_h2_call_cancel(c->call);
}

static int open_conn(wp_xds_client *c)
{
    xc_tls_refresh(c); /* a root file that changed reaches this connection */
    wf_h2_opts o = {.max_msg = MAX_MSG,
                    .max_send_queue = MAX_MSG,
                    .ping_interval_ms = c->opts.ping_interval_ms,
                    .ping_timeout_ms = 20000,
                    .path = c->delta ? WF_XDS_DELTA_PATH : WF_XDS_ADS_PATH,
                    .tls = c->tls,
                    .tls_sni = c->tls_sni,
                    .metadata = xc_tls_metadata(c)};
    wf_h2_handlers h = {NULL, on_message, on_end, on_conn_closed, c};
    if (c->pipe_path)
        return wf_h2_client_connect_pipe(c->loop, c->pipe_path, &o, &h, &c->conn);
    return wf_h2_client_connect(c->loop, c->host, c->port, &o, &h, &c->conn);
}

static void connect_now(wp_xds_client *c)
{
    if (c->stopping || c->conn)
        return;
    c->attempts++;
    wp_stat_add(c->sh, c->s_cx_total, 1);
    int rv = open_conn(c);
    if (rv != 0) {
        c->conn = NULL;
        wp_stat_add(c->sh, c->s_cx_fail, 1);
        stream_failed(c, 14, MSG_CONN_FAILURE);
        return;
    }
    c->live_conns++;
    if (wf_h2_call_open(c->conn, &c->call) != 0) {
        c->call = NULL;
        end_stream(c);
        stream_failed(c, 13, "cannot open the gRPC stream");
        return;
    }
    c->node_sent = false;
    set_stream_open(c, true);
    if (uv_timer_start(&c->answer, on_answer_timeout, c->opts.answer_timeout_ms, 0) != 0)
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "cannot arm the xDS answer timer");
    if (c->delta)
        xc_delta_send_initial(c);
    else
        xc_send_initial(c);
}

/* ---- lifecycle ---- */

static void on_handle_closed(uv_handle_t *h)
{
    wp_xds_client *c = h->data;
    c->open_handles--;
    maybe_free(c);
}

static void apply_opts(wp_xds_client *c, const wp_xds_client_opts *o)
{
    if (o)
        c->opts = *o;
    if (!c->opts.backoff_base_ms)
        c->opts.backoff_base_ms = 500;
    if (!c->opts.backoff_max_ms)
        c->opts.backoff_max_ms = 30000;
    if (!c->opts.answer_timeout_ms)
        c->opts.answer_timeout_ms = 15000;
    if (!c->opts.ping_interval_ms)
        c->opts.ping_interval_ms = 30000;
    c->backoff_next = c->opts.backoff_base_ms;
    c->rng = c->opts.seed ? c->opts.seed : (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)c;
    if (!c->rng)
        c->rng = 88172645463325252ULL;
    const char *rej =
        c->opts.reject_type ? c->opts.reject_type : getenv("WEFT_PROXY_TEST_REJECT_TYPE");
    c->reject_type = -1;
    const char *sds_ms = getenv("WEFT_PROXY_SDS_INITIAL_FETCH_TIMEOUT_MS");
    c->sds_default_fetch_ms = sds_ms ? strtoull(sds_ms, NULL, 10) : 0;
    for (int t = 0; rej && t < XC_NTYPES; t++)
        if (strcmp(rej, wf_xds_type_short((wf_xds_type)t)) == 0)
            c->reject_type = t;
    c->opts.reject_type = NULL;
}

/* Where to connect: an IP and port, or a Unix socket path. */
static bool copy_target(wp_xds_client *c, const wp_ads_config *ads)
{
    const struct sockaddr *sa = (const struct sockaddr *)&ads->addr.sa;
    if (sa->sa_family == AF_UNIX) {
        c->pipe_path = strdup(((const struct sockaddr_un *)sa)->sun_path);
        return c->pipe_path != NULL;
    }
    const void *ip = sa->sa_family == AF_INET6
                         ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                         : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
    c->port = ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                              : ((const struct sockaddr_in *)sa)->sin_port);
    return inet_ntop(sa->sa_family, ip, c->host, sizeof(c->host)) != NULL;
}

static int start_handles(wp_xds_client *c)
{
    uv_timer_t *timers[] = {&c->retry,         &c->tick,          &c->answer,
                            &c->init_fetch[0], &c->init_fetch[1], &c->sds_fetch};
    for (size_t i = 0; i < 6; i++) {
        if (uv_timer_init(c->loop, timers[i]) != 0)
            return -1;
        timers[i]->data = c;
        c->open_handles++;
    }
    if (xc_start_init_fetch(c) != 0)
        return -1;
    return uv_timer_start(&c->tick, on_tick, 1000, 1000);
}

int wp_xds_client_start(uv_loop_t *loop, const wp_config *cfg, wp_stats *store,
                        wp_stats_shard *shard, const wp_xds_callbacks *cb,
                        const wp_xds_client_opts *opts, wp_xds_client **out, wf_strbuf *err)
{
    if (!cfg || !cfg->ads || !cb || !cb->apply) {
        wf_strbuf_puts(err, "xDS client: no dynamic_resources.ads_config in the bootstrap");
        return -1;
    }
    wp_xds_client *c = calloc(1, sizeof(*c));
    if (!c) {
        wf_strbuf_puts(err, "xDS client: out of memory");
        return -1;
    }
    c->loop = loop;
    c->cb = *cb;
    c->sh = shard;
    apply_opts(c, opts);
    const wp_cluster *cl = &cfg->clusters[cfg->ads->cluster];
    c->init_fetch_ms[0] = cfg->ads->cds_initial_fetch_timeout_ms;
    c->init_fetch_ms[1] = cfg->ads->lds_initial_fetch_timeout_ms;
    bool ok = copy_target(c, cfg->ads) && xc_state_init(c, cfg);
    if (ok && !xc_tls_init(c, cl, err)) {
        xc_state_free(c);
        free(c);
        return -1;
    }
    ok = ok && (!c->opts.token_path || (c->token_path = strdup(c->opts.token_path))) &&
         register_stats(c, store, cl->alt_stat_name ? cl->alt_stat_name : cl->name) &&
         xc_register_more_stats(c, store);
    if (!ok || start_handles(c) != 0) {
        wf_strbuf_puts(err, "xDS client: out of memory or timer failure");
        c->stopping = true;
        if (c->open_handles == 0) {
            xc_state_free(c);
            free(c);
        } else {
            wp_xds_client_stop(c);
        }
        return -1;
    }
    connect_now(c);
    *out = c;
    return 0;
}

void wp_xds_client_stop(wp_xds_client *c)
{
    if (!c)
        return;
    c->stopping = true;
    if (c->call)
        wf_h2_call_cancel(c->call);
    if (c->conn) {
        wf_h2_conn_close(c->conn);
        c->conn = NULL;
    }
    c->call = NULL;
    set_stream_open(c, false);
    set_connected(c, false);
    uv_timer_t *timers[] = {&c->retry,         &c->tick,          &c->answer,
                            &c->init_fetch[0], &c->init_fetch[1], &c->sds_fetch};
    int n = c->open_handles;
    for (int i = 0; i < n; i++) {
        uv_timer_stop(timers[i]);
        uv_close((uv_handle_t *)timers[i], on_handle_closed);
    }
}

void wp_xds_client_status(const wp_xds_client *c, wp_xds_status *out)
{
    uint64_t now = uv_now(c->loop);
    memset(out, 0, sizeof(*out));
    out->connected = c->answered;
    out->connected_ms = c->up_since ? now - c->up_since : 0;
    out->since_update_ms = c->updated ? (int64_t)(now - c->last_update) : -1;
    out->cds_applied = c->cds_applied;
    out->lds_applied = c->lds_applied;
    out->attempts = c->attempts;
    out->last_nack = c->last_nack;
}
