/*
 * readiness.c - readiness policies (readiness.h). The config rule and its texts follow
 * pilot-agent's probe.go (checkConfigStatus, checkEnvoyReadiness); the control-plane rule is
 * weft's opt-in (issue 5, part 7).
 */
#include <stdio.h>
#include <string.h>

#include "proxy/server/admin/readiness.h"

void wp_readiness_policy_default(wp_readiness_policy *p)
{
    p->mode = WP_READINESS_ISTIO;
    p->grace_ms = WP_READINESS_DEFAULT_GRACE_MS;
    p->stability_ms = WP_READINESS_DEFAULT_STABILITY_MS;
}

int wp_readiness_mode_parse(const char *s, wp_readiness_mode *out)
{
    if (!s)
        return -1;
    if (strcmp(s, "istio") == 0)
        *out = WP_READINESS_ISTIO;
    else if (strcmp(s, "control-plane") == 0)
        *out = WP_READINESS_CONTROL_PLANE;
    else
        return -1;
    return 0;
}

const char *wp_readiness_mode_name(wp_readiness_mode m)
{
    return m == WP_READINESS_CONTROL_PLANE ? "control-plane" : "istio";
}

void wp_readiness_init(wp_readiness *r, const wp_readiness_policy *p)
{
    memset(r, 0, sizeof(*r));
    if (p)
        r->policy = *p;
    else
        wp_readiness_policy_default(&r->policy);
}

static uint64_t since(uint64_t now, uint64_t t)
{
    return now >= t ? now - t : 0;
}

/* Applies the passage of time up to now: closes an outage after stability_ms of uninterrupted
 * connection, latches "not ready" once the stream is down and the outage has lasted grace_ms.
 * Every event calls this first, so a phase that ends at the event is judged up to its end. */
static void advance(wp_readiness *r, uint64_t now)
{
    if (!r->outage)
        return;
    if (r->connected) {
        if (since(now, r->up_since) >= r->policy.stability_ms) {
            r->outage = false;
            r->cp_unready = false;
        }
    } else if (since(now, r->outage_since) >= r->policy.grace_ms) {
        r->cp_unready = true;
    }
}

void wp_readiness_set_static(wp_readiness *r)
{
    r->static_config = true;
}

void wp_readiness_workers_started(wp_readiness *r, uint64_t now_ms)
{
    advance(r, now_ms);
    r->workers = true;
}

void wp_readiness_cds_update(wp_readiness *r, bool accepted, uint64_t now_ms)
{
    advance(r, now_ms);
    if (accepted)
        r->cds_ok++;
    else
        r->cds_rejected++;
}

void wp_readiness_lds_update(wp_readiness *r, bool accepted, uint64_t now_ms)
{
    advance(r, now_ms);
    if (accepted)
        r->lds_ok++;
    else
        r->lds_rejected++;
}

void wp_readiness_note_rejection(wp_readiness *r, const char *type, const char *msg)
{
    snprintf(r->last_reject, sizeof(r->last_reject), "%s: %s", type ? type : "", msg ? msg : "");
}

void wp_readiness_stream_up(wp_readiness *r, uint64_t now_ms)
{
    advance(r, now_ms);
    if (r->connected)
        return;
    r->connected = true;
    r->up_since = now_ms;
    advance(r, now_ms); /* stability_ms == 0 closes the outage at once */
}

void wp_readiness_stream_down(wp_readiness *r, uint64_t now_ms)
{
    advance(r, now_ms);
    if (!r->connected && r->outage)
        return;
    r->connected = false;
    if (!r->outage) {
        r->outage = true;
        r->outage_since = now_ms;
    }
    advance(r, now_ms); /* grace_ms == 0, or an outage that reopened past its grace */
}

void wp_readiness_draining(wp_readiness *r, uint64_t now_ms)
{
    advance(r, now_ms);
    r->draining = true;
}

wp_readiness_state wp_readiness_state_at(wp_readiness *r, uint64_t now_ms)
{
    advance(r, now_ms);
    if (!r->static_config && !(r->cds_ok > 0 && r->lds_ok > 0))
        return WP_RS_NO_CONFIG;
    if (r->draining)
        return WP_RS_DRAINING;
    if (!r->workers)
        return WP_RS_NO_WORKERS;
    if (r->static_config)
        return WP_RS_READY;
    if (r->policy.mode == WP_READINESS_CONTROL_PLANE && r->cp_unready)
        return r->connected ? WP_RS_CP_RECOVERING : WP_RS_CP_LOST;
    return r->connected ? WP_RS_READY : WP_RS_READY_NO_CP;
}

const char *wp_readiness_state_name(wp_readiness_state s)
{
    static const char *const names[] = {
        "NO_CONFIG",
        "DRAINING",
        "NO_WORKERS",
        "READY",
        "READY_NO_CONTROL_PLANE",
        "CONTROL_PLANE_LOST",
        "CONTROL_PLANE_RECOVERING",
    };
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

/* pilot-agent's checkConfigStatus texts, in its order of tests. */
static void config_reason(const wp_readiness *r, char *out, size_t cap)
{
    const char *what;
    if (r->cds_ok == 0 && r->lds_ok == 0)
        what = "config not received from XDS server (is Istiod running?)";
    else if (r->cds_rejected > 0 || r->lds_rejected > 0)
        what = "config received from XDS server, but was rejected";
    else
        what = "config not fully received from XDS server";
    snprintf(out, cap,
             "%s: cds updates: %llu successful, %llu rejected; lds updates: %llu successful, "
             "%llu rejected%s%s",
             what, (unsigned long long)r->cds_ok, (unsigned long long)r->cds_rejected,
             (unsigned long long)r->lds_ok, (unsigned long long)r->lds_rejected,
             r->last_reject[0] ? "; last rejected: " : "", r->last_reject);
}

static double secs(uint64_t ms)
{
    return (double)ms / 1000.0;
}

static void write_reason(const wp_readiness *r, wp_readiness_state s, uint64_t now, char *out,
                         size_t cap)
{
    switch (s) {
    case WP_RS_NO_CONFIG:
        config_reason(r, out, cap);
        break;
    case WP_RS_DRAINING:
        snprintf(out, cap, "server is not live, current state is: DRAINING");
        break;
    case WP_RS_NO_WORKERS:
        snprintf(out, cap, "workers have not yet started");
        break;
    case WP_RS_CP_LOST:
        snprintf(out, cap,
                 "control plane unreachable for %.1fs (grace period %.1fs, readiness policy "
                 "control-plane)",
                 secs(since(now, r->outage_since)), secs(r->policy.grace_ms));
        break;
    case WP_RS_CP_RECOVERING:
        snprintf(out, cap,
                 "control plane reconnected %.1fs ago; ready after %.1fs connected without "
                 "interruption (outage began %.1fs ago, readiness policy control-plane)",
                 secs(since(now, r->up_since)), secs(r->policy.stability_ms),
                 secs(since(now, r->outage_since)));
        break;
    default:
        snprintf(out, cap, "%s", "");
        break;
    }
}

bool wp_readiness_check(wp_readiness *r, uint64_t now_ms, char *reason, size_t cap)
{
    wp_readiness_state s = wp_readiness_state_at(r, now_ms);
    if (reason && cap > 0)
        write_reason(r, s, now_ms, reason, cap);
    return s == WP_RS_READY || s == WP_RS_READY_NO_CP;
}

uint64_t wp_readiness_next_change_ms(wp_readiness *r, uint64_t now_ms)
{
    advance(r, now_ms);
    if (r->policy.mode != WP_READINESS_CONTROL_PLANE || r->static_config || r->draining ||
        !r->outage)
        return WP_READINESS_NO_CHANGE;
    if (r->connected)
        return r->policy.stability_ms - since(now_ms, r->up_since);
    if (!r->cp_unready)
        return r->policy.grace_ms - since(now_ms, r->outage_since);
    return WP_READINESS_NO_CHANGE; /* latched: only a stream_up can change it */
}
