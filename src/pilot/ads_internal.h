/*
 * ads_internal.h - what ads.c (connections, SotW, pushes) and delta.c (delta xDS) share.
 */
#ifndef WF_PILOT_ADS_INTERNAL_H
#define WF_PILOT_ADS_INTERNAL_H

#include "pilot/ads.h"
#include "xds/h2_stream.h"

struct wf_ads {
    uv_loop_t *loop;
    wf_ads_opts opts;
    wf_h2_server *h2;  /* the xDS listener: SotW and delta methods */
    uv_timer_t reaper; /* drops disconnected proxies after retention_ms */
    wf_ads_conn **conns;
    size_t n_conns, cap_conns;
    size_t live_calls; /* calls not yet ended (listed or not) */
    uint64_t conn_seq;
    uint64_t push_seq;
    char version[64];
    wf_snapshot *snap;
    wf_ads_metrics metrics;
    uint64_t rng[2]; /* xorshift128+ for nonces */
    bool closing, reaper_closed;
};

/* A new UUID-shaped nonce into buf (>= 37 bytes). */
void wf_ads_nonce(wf_ads *a, char *buf);
/* Sends text on the connection's call; 0 or -1 (logged). */
int wf_ads_send(wf_ads_conn *c, const char *text, size_t len);
/* Ends the call with grpc-status code and message. */
void wf_ads_fail(wf_ads_conn *c, int code, const char *msg);
/* The generator on the current snapshot (NULL when none). */
json_t *wf_ads_gen(wf_ads_conn *c, wf_xds_type t, const wf_xds_names *names);
/* The first request of a stream carries the node: makes the proxy and lists the connection.
 * 0, or -1 after ending the call. */
int wf_ads_on_node(wf_ads_conn *c, bool has_node, const wf_xds_node *node);
/* Records a NACK's metric and log line (istiod's). */
void wf_ads_log_nack(wf_ads_conn *c, wf_xds_type t, int code, const char *msg);
/* After a push to c of snapshot changes: observe convergence. */
void wf_ads_observe_push(wf_ads_conn *c, wf_xds_type t, uint64_t t0_ns);
uint64_t wf_ads_hash(const char *s, size_t n);

/* delta.c */
void wf_delta_on_message(wf_ads_conn *c, const json_t *j);
/* Pushes type t to a delta connection: the resources that changed; force answers even with
 * nothing changed. 0 or -1. */
int wf_delta_push(wf_ads_conn *c, wf_xds_type t, bool force);
void wf_delta_type_free(wf_ads_type *t);

#endif
