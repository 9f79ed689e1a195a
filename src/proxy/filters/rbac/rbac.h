/*
 * rbac.h - the RBAC filters' common part: the decoded config of envoy.filters.http.rbac
 * (envoy.extensions.filters.http.rbac.v3.RBAC) and envoy.filters.network.rbac
 * (envoy.extensions.filters.network.rbac.v3.RBAC), their stats and the decision both filters
 * take (rules, then shadow rules), as Envoy's RoleBasedAccessControlFilter does
 * (source/extensions/filters/{http,network}/rbac/rbac_filter.cc,
 * source/extensions/filters/common/rbac/utility.cc).
 *
 * Stats (Envoy's generateStats, statPrefixJoin: a '.' is added unless the prefix ends with one):
 *   <prefix>rbac.<rules_stat_prefix>{allowed,denied}
 *   <prefix>rbac.<shadow_rules_stat_prefix>{shadow_allowed,shadow_denied}
 * with <prefix> = "http.<HCM stat_prefix>." for the HTTP filter and the filter's stat_prefix
 * for the network filter. A non-empty rules prefix is joined with '.': Istio's
 * shadow_rules_stat_prefix "istio_dry_run_allow_" gives
 * "http.inbound_0.0.0.0_80.rbac.istio_dry_run_allow_.shadow_denied", which Istio's
 * authz_dry_run_* tag regexes expect. The counters are registered once per config (slots kept
 * here), never looked up per request.
 *
 * Dynamic metadata (namespace = the filter's name): "<shadow_rules_stat_prefix>
 * shadow_effective_policy_id" (when a shadow policy matched) and "<shadow_rules_stat_prefix>
 * shadow_engine_result" ("allowed" / "denied"); a LOG engine sets envoy.common access_log_hint.
 * Older Envoys also had rbac.logged / rbac.not_logged counters; current ones do not, nor weft.
 *
 * Denials: details "rbac_access_denied_matched_policy[<policy>]" for the effective policy of a
 * DENY engine, "rbac_access_denied_matched_policy[none]" when an ALLOW engine matched nothing
 * (white space in ids as '_'). No response flag (Envoy's RBAC filter sets none).
 */
#ifndef WEFT_PROXY_FILTERS_RBAC_RBAC_H
#define WEFT_PROXY_FILTERS_RBAC_RBAC_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/filters/rbac/engine.h"

#define WP_RBAC_HTTP_NAME    "envoy.filters.http.rbac"
#define WP_RBAC_NETWORK_NAME "envoy.filters.network.rbac"
#define WP_RBAC_DENIED_BODY  "RBAC: access denied"
#define WP_RBAC_DENIED_NONE  "rbac_access_denied_matched_policy[none]"

struct wp_stats;
struct wp_stats_shard;

/* The stat slots of one filter (WP_STAT_INVALID until registered). */
enum {
    WP_RBAC_ST_ALLOWED,
    WP_RBAC_ST_DENIED,
    WP_RBAC_ST_SHADOW_ALLOWED,
    WP_RBAC_ST_SHADOW_DENIED,
    WP_RBAC_ST_COUNT_
};

typedef struct wp_rbac_config {
    const char *ns;                 /* WP_RBAC_HTTP_NAME / WP_RBAC_NETWORK_NAME */
    const wp_rbac_engine *rules;    /* NULL: no rules (allowed by default) */
    const wp_rbac_engine *shadow;   /* NULL: no shadow rules */
    const char *rules_stat_prefix;  /* "" when absent */
    const char *shadow_stat_prefix; /* "" when absent */
    const char *stat_prefix;        /* network filter's stat_prefix (required there) */
    bool continuous;                /* network: enforcement_type CONTINUOUS */
    /* "<shadow prefix>shadow_effective_policy_id" / "...shadow_engine_result" (arena) */
    const char *md_policy_key, *md_result_key;
    uint32_t st[WP_RBAC_ST_COUNT_]; /* stat slots (the mutable part, set at registration) */
} wp_rbac_config;

/* What one check decided. */
typedef struct {
    bool allowed;        /* the rules' verdict (true without rules) */
    const char *details; /* denied: rbac_access_denied_matched_policy[...] (config-owned) */
    int policy;          /* the rules' effective policy, -1 none */
} wp_rbac_verdict;

/* Runs c's shadow rules (counted, published as dynamic metadata into si when si is not NULL)
 * then its rules (counted as allowed / denied, Envoy's current ENFORCE_RBAC_FILTER_STATS; a
 * LOG engine always allows and sets envoy.common access_log_hint to whether a policy matched). sh:
 * the worker's stats shard; conn_id / stream_id (0: a connection) for the rbac logger's debug lines
 * (Envoy's "enforced denied, matched policy <id>"). No allocation. */
wp_rbac_verdict wp_rbac_check(const wp_rbac_config *c, wp_rbac_input *in, struct wp_stats_shard *sh,
                              wp_stream_info *si, uint64_t conn_id, uint64_t stream_id);

/* Registers the counters of c under prefix ("http.<stat_prefix>." or the network filter's
 * stat_prefix) into c->st. Returns 0, or -1 when out of memory. Config time only. */
int wp_rbac_register_stats(struct wp_stats *st, wp_rbac_config *c, const char *prefix);

/* Registers the stats of every RBAC filter of c (HTTP filters of every connection manager,
 * network filters of every filter chain). Returns 0 or -1. */
int wp_rbac_register_all_stats(struct wp_stats *st, const wp_config *c);

#endif
