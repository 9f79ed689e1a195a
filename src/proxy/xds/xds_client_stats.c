/*
 * xds_client_stats.c - the xDS client's subscription and control-plane stats that go beyond
 * the update counters of xds_client.c (docs configuration/overview/mgmt_server "xDS
 * subscription statistics" and "Management Server" statistics; Envoy's
 * GrpcSubscriptionImpl::onConfigUpdate / onConfigUpdateFailed):
 *   cluster_manager.cds.version / listener_manager.lds.version   gauge: xxHash64 (seed 0) of
 *       the last accepted version_info (Envoy's HashUtil::xxHash64) with its top bit cleared
 *       (weft's gauges and their JSON are signed 64-bit; Envoy's gauge keeps all 64 bits, so
 *       the value differs from Envoy's when that bit is set), 0 before any
 *   cluster_manager.cds.update_time / listener_manager.lds.update_time   gauge: when the last
 *       response was accepted, milliseconds since the epoch (refreshed by a response that
 *       changed nothing, as Envoy's)
 *   cluster_manager.cds.init_fetch_timeout / listener_manager.lds.init_fetch_timeout
 *       counter: the type's initial_fetch_timeout (config.h, default 15 s, 0 = none, Istio's
 *       choice) passed before its first response (accepted or rejected); also counts an
 *       update_attempt and warns "gRPC config: initial fetch timed out for <type_url>".
 *       weft only counts it: Envoy's init manager then stops waiting for that type, weft
 *       keeps waiting (server.state stays INITIALIZING until the type arrives).
 *   control_plane.pending_requests (gauge) and control_plane.rate_limit_enforced (counter):
 *       weft does not rate-limit xDS requests (Envoy does only with rate_limit_settings), so
 *       they are registered and stay 0.
 * Not provided: version_text (weft has no text readouts), update_duration (histogram).
 * Threads: the client's loop thread, as the rest of the client.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "proxy/xds/xds_client_state.h"

/* ---- xxHash64 (Yann Collet's algorithm, public specification) ---- */

#define P1 11400714785074694791ULL
#define P2 14029467366897019727ULL
#define P3 1609587929392839161ULL
#define P4 9650029242287828579ULL
#define P5 2870177450012600261ULL

static uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t round64(uint64_t acc, uint64_t in)
{
    return rotl(acc + in * P2, 31) * P1;
}

static uint64_t merge64(uint64_t h, uint64_t v)
{
    return (h ^ round64(0, v)) * P1 + P4;
}

/* The 32-byte stripes of p[0..len) (len >= 32); *used receives the bytes consumed. */
static uint64_t stripes(const unsigned char *p, size_t len, size_t *used)
{
    uint64_t v[4] = {P1 + P2, P2, 0, 0 - P1};
    size_t i = 0;
    for (; i + 32 <= len; i += 32)
        for (int k = 0; k < 4; k++)
            v[k] = round64(v[k], rd64(p + i + 8 * k));
    *used = i;
    uint64_t h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (int k = 0; k < 4; k++)
        h = merge64(h, v[k]);
    return h;
}

uint64_t xc_xxhash64(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    uint64_t h = len >= 32 ? stripes(p, len, &i) : P5;
    h += len;
    for (; i + 8 <= len; i += 8)
        h = rotl(h ^ round64(0, rd64(p + i)), 27) * P1 + P4;
    if (i + 4 <= len) {
        h = rotl(h ^ (uint64_t)rd32(p + i) * P1, 23) * P2 + P3;
        i += 4;
    }
    for (; i < len; i++)
        h = rotl(h ^ p[i] * P5, 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
}

/* ---- stats ---- */

static int sub_index(int type)
{
    return type == WF_XDS_CDS ? 0 : type == WF_XDS_LDS ? 1 : -1;
}

static void set_gauge(wp_xds_client *c, uint32_t slot, int64_t *cur, int64_t v)
{
    wp_stat_add(c->sh, slot, v - *cur);
    *cur = v;
}

static int64_t now_epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void xc_count_accepted(wp_xds_client *c, int type, const char *version)
{
    int i = sub_index(type);
    if (i < 0)
        return;
    uv_timer_stop(&c->init_fetch[i]);
    const char *v = version ? version : "";
    set_gauge(c, c->s_version[i], &c->g_version[i],
              (int64_t)(xc_xxhash64(v, strlen(v)) & INT64_MAX));
    set_gauge(c, c->s_update_time[i], &c->g_update_time[i], now_epoch_ms());
}

void xc_count_rejected(wp_xds_client *c, int type)
{
    int i = sub_index(type);
    if (i >= 0)
        uv_timer_stop(&c->init_fetch[i]);
}

static void on_init_fetch_timeout(uv_timer_t *t)
{
    wp_xds_client *c = t->data;
    int i = t == &c->init_fetch[0] ? 0 : 1;
    int type = i == 0 ? WF_XDS_CDS : WF_XDS_LDS;
    wp_stat_add(c->sh, c->s_init_timeout[i], 1);
    wp_stat_add(c->sh, c->s_upd[i][XC_UPD_ATTEMPT], 1);
    WF_LOG(WF_LC_config, WF_LOG_WARN, "gRPC config: initial fetch timed out for %s",
           c->types[type].type_url);
}

bool xc_register_more_stats(wp_xds_client *c, wp_stats *st)
{
    static const char *const prefix[2] = {"cluster_manager.cds.", "listener_manager.lds."};
    char name[128];
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof(name), "%sversion", prefix[i]);
        c->s_version[i] = wp_stats_gauge(st, name);
        snprintf(name, sizeof(name), "%supdate_time", prefix[i]);
        c->s_update_time[i] = wp_stats_gauge(st, name);
        snprintf(name, sizeof(name), "%sinit_fetch_timeout", prefix[i]);
        c->s_init_timeout[i] = wp_stats_counter(st, name);
        ok &= c->s_version[i] != WP_STAT_INVALID && c->s_update_time[i] != WP_STAT_INVALID;
        wp_stat_add(c->sh, c->s_version[i], 0); /* gauges exist from the start */
        wp_stat_add(c->sh, c->s_update_time[i], 0);
    }
    c->s_pending = wp_stats_gauge(st, "control_plane.pending_requests");
    c->s_rate_limited = wp_stats_counter(st, "control_plane.rate_limit_enforced");
    wp_stat_add(c->sh, c->s_pending, 0);
    return ok && c->s_pending != WP_STAT_INVALID;
}

int xc_start_init_fetch(wp_xds_client *c)
{
    bool want[2] = {c->want_cds, c->want_lds};
    for (int i = 0; i < 2; i++) {
        if (want[i] && c->init_fetch_ms[i] > 0 &&
            uv_timer_start(&c->init_fetch[i], on_init_fetch_timeout, c->init_fetch_ms[i], 0) != 0)
            return -1;
    }
    return 0;
}
