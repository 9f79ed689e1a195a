/*
 * proxy_stats_config.h - the Envoy bootstrap `stats_config` that Istio gives every proxy
 * (sidecar and gateway), for the bootstraps agent_bootstrap.h builds (the local mesh's and
 * `weft-proxy proxy`'s). weft-proxy reads it as Envoy does (docs/proxy.md "Stats"): stats not
 * on the inclusion list are never
 * created, and /stats/prometheus labels come from Istio's tag extractors.
 *
 * Followed (reference §6.4–6.5; istio/istio pkg/bootstrap/config.go getStatsOptions and
 * tools/packaging/common/envoy_bootstrap.json, the revision whose cluster_name extractor is
 * `^cluster(\.(.+);)`, the one that relies on pilot's alt_stat_name "<cluster>;"):
 *  - use_all_default_tags: false, and Istio's stats_tags in the template's order
 *    (cluster_name, http_conn_manager_prefix, thread_name, tcp_prefix, response_code,
 *    response_code_class, http_conn_manager_listener_prefix, listener_address, mongo_prefix,
 *    cache, component, tag, wasm_filter, authz_enforce_result, authz_dry_run_action,
 *    authz_dry_run_result).
 *  - stats_matcher.inclusion_list.patterns in the template's order: prefix "reporter=", the
 *    prefixes, the suffixes, the regexes (safe_regex, RE2, full match), prefix "component",
 *    prefix "istio". For each kind the user patterns are the annotation's comma-separated
 *    list (sidecar.istio.io/statsInclusionPrefixes|Suffixes|Regexps) when it is set and not
 *    empty, else ProxyConfig.proxyStatsMatcher's list: never both (Istio's parseOption). Then
 *    Istio's required entries are appended: prefixes cluster_manager, listener_manager,
 *    server, cluster.xds-grpc, wasm; suffixes rbac.allowed, rbac.denied, shadow_allowed,
 *    shadow_denied (+ downstream_cx_active with EXIT_ON_ZERO_ACTIVE_CONNECTIONS); regex
 *    `vhost\..*\.route\..*`. Finally every "{pod_ip}" in a pattern is replaced, one pattern
 *    per instance IP (substituteValues). Items are used as written (Go's strings.Split: no
 *    trimming, an empty item stays and weft-proxy, like Envoy, refuses it).
 *  - Not produced: extraStatTags (ProxyConfig and sidecar.istio.io/extraStatTags), the
 *    statsHistogramBuckets / statsFlushInterval / statsEvictionInterval / statsCompression
 *    annotations, the workload_discovery prefix (ambient metadata discovery only).
 *
 * Ownership: builders return new jansson references (json_decref) or NULL when out of
 * memory; inputs are borrowed and not kept.
 */
#ifndef WF_PROXY_AGENT_STATS_CONFIG_H
#define WF_PROXY_AGENT_STATS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

enum { WF_PSC_PREFIX, WF_PSC_SUFFIX, WF_PSC_REGEX, WF_PSC_NKINDS };

/* "sidecar.istio.io/statsInclusionPrefixes", "...Suffixes", "...Regexps" by kind. */
extern const char *const wf_psc_annotation[WF_PSC_NKINDS];
/* The ProxyStatsMatcher field by kind: "inclusionPrefixes", "inclusionSuffixes",
 * "inclusionRegexps". */
extern const char *const wf_psc_field[WF_PSC_NKINDS];

typedef struct wf_psc_list {
    const char *const *v;
    size_t n;
} wf_psc_list;

/* What decides one proxy's stats_config. All strings are borrowed. */
typedef struct wf_psc_in {
    const char *anno[WF_PSC_NKINDS]; /* annotation value; NULL or "" when not set */
    wf_psc_list pc[WF_PSC_NKINDS];   /* ProxyConfig.proxyStatsMatcher (MeshConfig or pod) */
    wf_psc_list ips;                 /* INSTANCE_IPS, for "{pod_ip}" */
    bool exit_on_zero_active;        /* proxy env EXIT_ON_ZERO_ACTIVE_CONNECTIONS=true */
} wf_psc_in;

/* Called for each user pattern of a kind, after "{pod_ip}" substitution: from_annotation
 * says which list it came from and index its position there (0-based). pattern is
 * NUL-terminated and valid during the call only. Non-zero stops the walk. */
typedef int (*wf_psc_visit_fn)(int kind, bool from_annotation, size_t index, const char *pattern,
                               void *arg);

/* Walk the user patterns of kind (WF_PSC_*) as Istio picks them (not the required ones).
 * Returns 0, what fn returned when it stopped the walk, or -1 when out of memory. */
int wf_psc_visit(const wf_psc_in *in, int kind, wf_psc_visit_fn fn, void *arg);

/* The whole stats_config object (use_all_default_tags, stats_tags, stats_matcher). */
json_t *wf_psc_stats_config(const wf_psc_in *in);

/* Check one pattern of kind the way weft-proxy checks its bootstrap (the same matcher code,
 * so the same verdict as Envoy's: prefix/suffix not empty, regex RE2 syntax that compiles).
 * Returns NULL when it is accepted; otherwise writes why into buf (cap bytes, NUL-terminated)
 * and returns buf. */
const char *wf_psc_check_pattern(int kind, const char *pattern, char *buf, size_t cap);

#endif
