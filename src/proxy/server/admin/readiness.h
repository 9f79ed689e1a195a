/*
 * readiness.h - is this proxy ready to take traffic? The answer /healthz/ready gives on the
 * status ports (status.h: 15020, and 15021 for gateways). Pure logic: no I/O, no clock, no
 * allocation; the caller passes every event and the current time in milliseconds (any
 * monotonic clock, e.g. uv_now() of the main loop; the same clock for every call).
 *
 * Two policies (docs/readiness.md explains the trade-off):
 *
 *  - WP_READINESS_ISTIO (the default) follows pilot-agent's readiness probe
 *    (istio/istio pilot/cmd/pilot-agent/status/ready/probe.go, reference §8.2): ready once the
 *    first CDS and the first LDS update have been applied (update_success > 0 for both) and the
 *    workers run, and not draining. Once the first config has arrived it is never asked for
 *    again, so losing the control plane later does NOT make the proxy unready (an istiod
 *    outage must not take every gateway out of its load balancer; the proxy keeps serving its
 *    last config, as Envoy does).
 *
 *  - WP_READINESS_CONTROL_PLANE (opt-in) adds a control-plane rule with hysteresis. An
 *    *outage* opens when the xDS stream goes down. The proxy turns not ready when the stream
 *    is down and the outage has lasted grace_ms or more (counted from the moment the outage
 *    opened). The outage closes only when the stream has then stayed up continuously for
 *    stability_ms; a reconnect that fails again before that does not close it, so a reconnect
 *    loop (streams that open and die every few hundred ms) keeps the proxy not ready and
 *    never flaps it. While a reconnect is still up the proxy is not turned unready: a proxy
 *    that reconnects within the grace period and stays connected never leaves service.
 *    Defaults: grace 10 s, stability 15 s (both configurable).
 *
 * Readiness follows the stream's *connected* state (what control_plane.connected_state shows),
 * which flaps 1/0 during reconnect loops; the hysteresis above is what makes it usable for a
 * probe. Config updates are counted for the reason text only: an accepted update does not
 * prove a stable stream.
 *
 * Reasons (the probe's 503 body) copy pilot-agent's texts where it has one:
 *   "config not received from XDS server (is Istiod running?): <summary>"   no success yet
 *   "config received from XDS server, but was rejected: <summary>"          some rejected
 *   "config not fully received from XDS server: <summary>"                 only one of the two
 *     summary = "cds updates: N successful, M rejected; lds updates: N successful, M rejected"
 *     and, once a CDS or LDS update was rejected (weft: pilot-agent only logs Envoy's warning),
 *     "; last rejected: <CDS|LDS>: <the NACK text>" (wp_readiness_note_rejection)
 *   "server is not live, current state is: DRAINING"                        draining
 *   "workers have not yet started"
 * and weft's own for the control-plane policy, e.g.
 *   "control plane unreachable for 42.0s (grace period 10.0s, readiness policy control-plane)".
 * Checks run in pilot-agent's order: config, then draining, then workers, then control plane.
 *
 * Static configuration (a bootstrap without dynamic_resources): wp_readiness_set_static()
 * makes the config rule pass and the control-plane rule not apply; ready once workers run.
 *
 * Thread-safety: none. Use one wp_readiness from the main thread only (the thread of the
 * status servers' loop); events that happen on other threads must be posted there first.
 */
#ifndef WEFT_PROXY_READINESS_H
#define WEFT_PROXY_READINESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WP_READINESS_DEFAULT_GRACE_MS     10000u
#define WP_READINESS_DEFAULT_STABILITY_MS 15000u
/* No timed change pending (wp_readiness_next_change_ms). */
#define WP_READINESS_NO_CHANGE UINT64_MAX

typedef enum {
    WP_READINESS_ISTIO = 0,     /* stay ready without a control plane (Istio's behaviour) */
    WP_READINESS_CONTROL_PLANE, /* not ready after grace_ms without one, with hysteresis */
} wp_readiness_mode;

typedef struct {
    wp_readiness_mode mode;
    uint64_t grace_ms;     /* CONTROL_PLANE: down this long -> not ready (0 = at once) */
    uint64_t stability_ms; /* CONTROL_PLANE: up this long -> outage over (0 = at once) */
} wp_readiness_policy;

/* What the proxy's readiness is, for logs, /server_info-style output and tests. */
typedef enum {
    WP_RS_NO_CONFIG,     /* first CDS and LDS not both applied: not ready */
    WP_RS_DRAINING,      /* draining: not ready */
    WP_RS_NO_WORKERS,    /* workers not started: not ready */
    WP_RS_READY,         /* ready, control plane connected (or static config) */
    WP_RS_READY_NO_CP,   /* ready, control plane not connected (Istio policy, or within grace) */
    WP_RS_CP_LOST,       /* CONTROL_PLANE: outage past grace, stream down: not ready */
    WP_RS_CP_RECOVERING, /* CONTROL_PLANE: stream up, stability period running: not ready */
} wp_readiness_state;

/* The state machine. Fields are private; the struct is public so it can live inside the
 * caller's own struct (no allocation). */
typedef struct {
    wp_readiness_policy policy;
    uint64_t cds_ok, cds_rejected, lds_ok, lds_rejected;
    bool static_config, workers, draining;
    bool connected;  /* the stream is up right now */
    bool outage;     /* an outage is open (since outage_since) */
    bool cp_unready; /* CONTROL_PLANE: latched not ready until the outage closes */
    uint64_t outage_since, up_since;
    char last_reject[384]; /* "<TYPE>: <NACK text>", "" = none */
} wp_readiness;

/* Fills p with the default policy: ISTIO, grace and stability at the defaults above. */
void wp_readiness_policy_default(wp_readiness_policy *p);
/* "istio" or "control-plane" -> *out. Returns 0, or -1 for anything else (*out untouched). */
int wp_readiness_mode_parse(const char *s, wp_readiness_mode *out);
/* "istio" / "control-plane". */
const char *wp_readiness_mode_name(wp_readiness_mode m);

/* Starts in "no config, no workers, never connected". p is copied; NULL = the default. */
void wp_readiness_init(wp_readiness *r, const wp_readiness_policy *p);

/* ---- events (now_ms: the caller's monotonic clock; never decreasing across calls) ---- */

/* The bootstrap has no dynamic_resources: no config to wait for, no control plane to lose. */
void wp_readiness_set_static(wp_readiness *r);
/* Every worker runs (Envoy's listener_manager.workers_started = 1). */
void wp_readiness_workers_started(wp_readiness *r, uint64_t now_ms);
/* A CDS / LDS update was applied (accepted = true) or rejected (NACKed). Only the counts of
 * these matter (pilot-agent reads cluster_manager.cds.update_success/update_rejected and
 * listener_manager.lds.*); call once per update, as those counters count. */
void wp_readiness_cds_update(wp_readiness *r, bool accepted, uint64_t now_ms);
void wp_readiness_lds_update(wp_readiness *r, bool accepted, uint64_t now_ms);
/* The text of the rejection just counted: type ("CDS", "LDS") and the NACK message, shown in
 * the config reason (truncated to fit). */
void wp_readiness_note_rejection(wp_readiness *r, const char *type, const char *msg);
/* The xDS stream to the control plane opened (connected_state 1) / closed or failed
 * (connected_state 0). Repeating the current state is harmless (no-op). */
void wp_readiness_stream_up(wp_readiness *r, uint64_t now_ms);
void wp_readiness_stream_down(wp_readiness *r, uint64_t now_ms);
/* The server is draining (SIGTERM, /drain_listeners?graceful): not ready from now on. */
void wp_readiness_draining(wp_readiness *r, uint64_t now_ms);

/* ---- queries ---- */

/* Ready at now_ms? When not ready and reason is non-NULL, writes the reason (see the top of
 * this file) NUL-terminated and truncated to cap bytes; when ready writes "". */
bool wp_readiness_check(wp_readiness *r, uint64_t now_ms, char *reason, size_t cap);
/* The state at now_ms (same evaluation as wp_readiness_check). */
wp_readiness_state wp_readiness_state_at(wp_readiness *r, uint64_t now_ms);
/* "NO_CONFIG", "DRAINING", "NO_WORKERS", "READY", "READY_NO_CONTROL_PLANE",
 * "CONTROL_PLANE_LOST", "CONTROL_PLANE_RECOVERING". */
const char *wp_readiness_state_name(wp_readiness_state s);
/* Milliseconds from now_ms until readiness can change without a further event (the grace or
 * stability period running out), or WP_READINESS_NO_CHANGE. 0 means "due now". For a one-shot
 * timer that logs transitions or updates a gauge; probes need no timer (they evaluate lazily). */
uint64_t wp_readiness_next_change_ms(wp_readiness *r, uint64_t now_ms);

#endif
