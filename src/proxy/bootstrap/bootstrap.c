/*
 * bootstrap.c - decode an Envoy v3 bootstrap (JSON) into a wp_config snapshot.
 *
 * Supported subset (Envoy v3 field names; anything else is an error naming its JSON path):
 *   node {id, cluster, metadata, locality, user_agent_name, user_agent_version}
 *   admin {address, access_log_path, access_log[] (file/stdout/stderr), profile_path}
 *   static_resources.listeners[] (bootstrap_listener.c: filter chains with
 *     filter_chain_match, default_filter_chain; their envoy.filters.network.
 *     http_connection_manager and the access logs in bootstrap_hcm.c)
 *   static_resources.clusters[] (STATIC, STRICT_DNS, LOGICAL_DNS, ORIGINAL_DST;
 *     bootstrap_cluster.c)
 *   stats_config {stats_tags, use_all_default_tags, stats_matcher, histogram_bucket_settings}
 *     (checked, kept as JSON for the stats store);
 *   dynamic_resources {ads_config, cds_config, lds_config} (bootstrap_dynamic.c);
 *   layered_runtime, cluster_manager, overload_manager only as empty objects.
 * What xDS resources carry (weft-pilot's and Istio's output, composed into a bootstrap by
 * xds_compose.h) is accepted where it is harmless: "@type" naming the right type on a
 * Listener, Cluster, RouteConfiguration or ClusterLoadAssignment; envoy.filters.http.cors
 * without a policy (a no-op in Envoy without route/vhost cors policies); HCM normalize_path,
 * merge_slashes and path_with_escaped_slashes_action (applied: http/path_norm.h);
 * ORIGINAL_DST / CLUSTER_PROVIDED (kept without endpoints, config.h original_dst);
 * circuit-breaker track_remaining; use_downstream_protocol_config with empty options;
 * endpoint metadata and health_check_config, locality load_balancing_weight, the assignment's
 * policy.overprovisioning_factor (ignored: one priority, no locality weighting); a `pipe`
 * endpoint in the ADS cluster only.
 * Route configurations are decoded in the second half of this file.
 *
 * Choices where Envoy leaves room ([verify] in the behaviour reference):
 *   - a listener without a name is named after its address in stat form ("0.0.0.0_15001");
 *     Envoy would assign a UUID.
 *   - listener stat names replace every ':' of the printed address with '_', so IPv6 gives
 *     "[__]_80" (Envoy's listener.[__]_80. prefix).
 *   - an unknown route cluster is not an error (503 NC at request time) unless the route
 *     configuration sets validate_clusters: true explicitly (Envoy defaults it to true for
 *     inline route configs; weft follows the project brief and defaults to false).
 *   - durations are truncated to whole milliseconds (DurationUtil::durationToMilliseconds).
 */
#include "proxy/bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "core/strmap.h"
#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/stats/stats.h"

/* ---------- top level ---------- */

static bool dec_node(bs *b, json_t *o, void *arg)
{
    wp_config *c = arg;
    json_t *md = bs_get(o, "metadata");
    json_t *loc = bs_get(o, "locality");
    if (!bs_fields(b, o, "id cluster metadata locality user_agent_name user_agent_version") ||
        !bs_str(b, o, "id", &c->node_id) || !bs_str(b, o, "cluster", &c->node_cluster))
        return false;
    const char *s = NULL;
    if (!bs_str(b, o, "user_agent_name", &s) || !bs_str(b, o, "user_agent_version", &s))
        return false;
    if (md && !json_is_object(md))
        return bs_wrong_type(b, "metadata", "an object");
    if (loc) {
        size_t m = bs_push(b, "locality");
        bool ok = bs_fields(b, loc, "region zone sub_zone") && bs_str(b, loc, "region", &s) &&
                  bs_str(b, loc, "zone", &s) && bs_str(b, loc, "sub_zone", &s);
        bs_pop(b, m);
        if (!ok)
            return false;
    }
    c->node = json_deep_copy(o);
    return c->node ? true : bs_fail(b, "out of memory");
}

static bool dec_admin(bs *b, json_t *o, void *arg)
{
    wp_config *c = arg;
    const char *profile = NULL;
    void *logs = NULL;
    size_t nlogs = 0;
    if (!bs_fields(b, o, "address access_log_path access_log profile_path") ||
        !bs_str(b, o, "access_log_path", &c->admin_access_log_path) ||
        !bs_str(b, o, "profile_path", &profile) ||
        !bs_each(b, o, "access_log", sizeof(wp_access_log), &logs, &nlogs, bs_access_log))
        return false;
    if (nlogs + (c->admin_access_log_path != NULL) > 1)
        return bs_fail_at(b, "access_log", "only one admin access log is supported");
    if (nlogs == 1)
        c->admin_access_log_path = ((wp_access_log *)logs)->path;
    if (!bs_get(o, "address"))
        return true;
    c->has_admin = true;
    return bs_req_address(b, o, &c->admin_addr, NULL, NULL, "malformed IP address: %s");
}

static bool dec_static(bs *b, json_t *o, void *arg)
{
    wp_config *c = arg;
    void *arr = NULL;
    if (!bs_fields(b, o, "listeners clusters"))
        return false;
    /* clusters first: routes resolve cluster names to indexes */
    if (!bs_each(b, o, "clusters", sizeof(wp_cluster), &arr, &c->nclusters, bs_dec_cluster))
        return false;
    c->clusters = arr;
    size_t m = b->plen;
    bool ok = bs_check_clusters(b);
    bs_pop(b, m);
    if (!ok ||
        !bs_each(b, o, "listeners", sizeof(wp_listener), &arr, &c->nlisteners, bs_dec_listener))
        return false;
    c->listeners = arr;
    ok = bs_check_listeners(b);
    bs_pop(b, m);
    return ok;
}

/* stats_matcher and histogram_bucket_settings (stats_matcher.h): compiled now and dropped;
 * the stats store builds its own from the kept JSON (pstats.c). Errors name the JSON path. */
static bool check_stats_matcher(bs *b, json_t *sc)
{
    wf_strbuf where = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wp_stats_matcher *sm = wp_stats_matcher_new(sc, &where, &why);
    bool ok = sm != NULL;
    if (!ok) {
        size_t m = where.len ? bs_push(b, wf_strbuf_cstr(&where)) : b->plen;
        bs_fail(b, "%s", wf_strbuf_cstr(&why));
        bs_pop(b, m);
    }
    wp_stats_matcher_free(sm);
    wf_strbuf_free(&where);
    wf_strbuf_free(&why);
    return ok;
}

/* stats_config: the tag extractors and the matcher are checked now (stats.c compiles them),
 * so a bad regex fails the load instead of silently changing the stats. */
static bool dec_stats_config(bs *b, json_t *sc)
{
    size_t m = bs_push(b, "stats_config");
    bool ok =
        bs_fields(b, sc, "stats_tags use_all_default_tags stats_matcher histogram_bucket_settings");
    ok = ok && check_stats_matcher(b, sc);
    if (ok) {
        wf_strbuf e = {0};
        wp_stats_tags *t = wp_stats_tags_from_config(sc, &e);
        if (!t)
            ok = bs_fail(b, "%s", wf_strbuf_cstr(&e));
        wp_stats_tags_free(t);
        wf_strbuf_free(&e);
    }
    bs_pop(b, m);
    return ok;
}

static bool dec_bootstrap(bs *b, json_t *o)
{
    static const char *const empty_only[] = {"layered_runtime", "cluster_manager",
                                             "overload_manager", NULL};
    wp_config *c = b->c;
    if (!bs_fields(b, o,
                   "node admin static_resources stats_config layered_runtime dynamic_resources "
                   "cluster_manager overload_manager"))
        return false;
    for (int i = 0; empty_only[i]; i++) {
        json_t *v = bs_get(o, empty_only[i]);
        if (v && (!json_is_object(v) || json_object_size(v) != 0)) {
            size_t m = bs_push(b, empty_only[i]);
            bs_fail(b, "%s is not supported by weft-proxy (only an empty object is accepted)",
                    empty_only[i]);
            bs_pop(b, m);
            return false;
        }
    }
    json_t *sc = bs_get(o, "stats_config");
    if (sc && !json_is_object(sc))
        return bs_wrong_type(b, "stats_config", "an object");
    if (sc && !dec_stats_config(b, sc))
        return false;
    if (sc && !(c->stats_config = json_deep_copy(sc)))
        return bs_fail(b, "out of memory");
    return bs_sub(b, o, "node", dec_node, c) && bs_sub(b, o, "admin", dec_admin, c) &&
           bs_sub(b, o, "static_resources", dec_static, c) && bs_dynamic_resources(b, o);
}

wp_config *wp_bootstrap_load(json_t *root, const char *source, wf_strbuf *err)
{
    wp_config *c = calloc(1, sizeof(*c));
    if (!c) {
        wf_strbuf_printf(err, "%s: out of memory", source ? source : "bootstrap");
        return NULL;
    }
    atomic_init(&c->refs, 1);
    wf_arena_init(&c->arena);
    c->version = 1;
    bs b = {.c = c, .a = &c->arena, .err = err, .src = source ? source : "bootstrap"};
    if (!json_is_object(root))
        bs_fail(&b, "wrong type: the bootstrap must be a JSON object");
    else
        c->bootstrap = bs_normalize(&b, root);
    if (!b.failed)
        dec_bootstrap(&b, c->bootstrap);
    if (b.failed) {
        wp_config_unref(c);
        return NULL;
    }
    return c;
}

wp_config *wp_bootstrap_load_file(const char *path, wf_strbuf *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    int e = !f || fstat(fileno(f), &st) != 0 ? errno : 0;
    if (e == 0 && S_ISDIR(st.st_mode))
        e = EISDIR; /* fopen succeeds on a directory, reading it fails */
    if (e != 0) {
        wf_strbuf_printf(err, "%s: cannot read: %s", path, strerror(e));
        if (f)
            fclose(f);
        return NULL;
    }
    if (st.st_size > (off_t)WP_BOOTSTRAP_MAX_BYTES) {
        fclose(f);
        wf_strbuf_printf(err, "%s: file too large (%lld bytes, at most %u)", path,
                         (long long)st.st_size, WP_BOOTSTRAP_MAX_BYTES);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        wf_strbuf_printf(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return NULL;
    }
    wp_config *c = wp_bootstrap_load(root, path, err);
    json_decref(root);
    return c;
}
