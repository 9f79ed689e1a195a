/*
 * bootstrap_tcp_proxy.c - a chain's envoy.filters.network.tcp_proxy typed_config
 * (envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, data-plane-api
 * envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto) into a wp_tcp_proxy
 * (config.h): stat_prefix (required, non-empty), cluster or weighted_clusters {clusters[]
 * {name, weight >= 1}} (one of them), idle_timeout (Envoy's 1 h default; 0s disables),
 * max_connect_attempts (default 1, at least 1), max_downstream_connection_duration and
 * access_log (the HCM's access loggers, bootstrap_hcm.c bs_access_log).
 *
 * Refused by name, because weft-proxy does not implement what they ask for: hash_policy (no
 * hash-based load balancer), metadata_match and weighted_clusters' metadata_match (no subset
 * load balancer), tunneling_config, on_demand, backoff_options, access_log_options,
 * proxy_protocol_tlvs, max_early_data_bytes; any other key is refused as the loader does
 * (bs_fields). A cluster name the snapshot does not have is kept (resolved to -1): as in
 * Envoy, such a connection is closed with NC (the cluster may come later over CDS).
 */
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"

#define TCP_PROXY_TYPE "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"

/* One weighted_clusters.clusters element (bs_each callback). */
static bool dec_cluster_weight(bs *b, json_t *o, void *arg)
{
    wp_tcp_cluster *c = arg;
    if (!bs_fields(b, o, "name weight metadata_match") || !bs_req_str(b, o, "name", &c->name) ||
        !bs_u32(b, o, "weight", &c->weight))
        return false;
    if (bs_get(o, "metadata_match"))
        return bs_fail_at(b, "metadata_match",
                          "not supported by weft-proxy (subset load balancing is not implemented)");
    if (c->weight < 1)
        return bs_fail_at(b, "weight", "value must be greater than or equal to 1");
    c->cluster = wp_config_find_cluster(b->c, c->name);
    return true;
}

static bool dec_weighted(bs *b, json_t *o, void *arg)
{
    wp_tcp_proxy *t = arg;
    void *arr = NULL;
    if (!bs_fields(b, o, "clusters") ||
        !bs_each(b, o, "clusters", sizeof(wp_tcp_cluster), &arr, &t->nweighted, dec_cluster_weight))
        return false;
    if (t->nweighted < 1)
        return bs_fail_at(b, "clusters", "value must contain at least 1 item(s)");
    t->weighted = arr;
    for (size_t i = 0; i < t->nweighted; i++)
        t->total_weight += t->weighted[i].weight;
    return true;
}

/* Fields of TcpProxy weft-proxy does not implement, each with what is missing. */
static bool refuse_unimplemented(bs *b, json_t *o)
{
    static const struct {
        const char *field, *why;
    } no[] = {
        {"hash_policy", "no hash-based load balancer (ring hash, Maglev)"},
        {"metadata_match", "subset load balancing is not implemented"},
        {"tunneling_config", "TCP tunneling over HTTP CONNECT/POST is not implemented"},
        {"on_demand", "on-demand cluster discovery is not implemented"},
        {"backoff_options", "connect retries are made at once, without back-off"},
        {"access_log_options", "TCP access logs are written once, when the connection closes"},
        {"proxy_protocol_tlvs", "the PROXY protocol is not implemented"},
        {"max_early_data_bytes", "reading before the upstream connects is not implemented"},
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (bs_get(o, no[i].field))
            return bs_fail_atf(b, no[i].field, "not supported by weft-proxy (%s)", no[i].why);
    return true;
}

bool bs_tcp_proxy(bs *b, json_t *o, wp_tcp_proxy *t)
{
    t->cluster = -1;
    t->idle_timeout_ms = 3600000; /* Envoy's default: 1 h */
    t->max_connect_attempts = 1;
    if (!refuse_unimplemented(b, o) ||
        !bs_fields(b, o,
                   "@type stat_prefix cluster weighted_clusters idle_timeout "
                   "max_connect_attempts access_log max_downstream_connection_duration") ||
        !bs_opt_type(b, o, TCP_PROXY_TYPE) || !bs_str(b, o, "stat_prefix", &t->stat_prefix) ||
        !bs_str(b, o, "cluster", &t->cluster_name) ||
        !bs_sub(b, o, "weighted_clusters", dec_weighted, t) ||
        !bs_dur(b, o, "idle_timeout", &t->idle_timeout_ms, NULL) ||
        !bs_dur(b, o, "max_downstream_connection_duration",
                &t->max_downstream_connection_duration_ms, NULL))
        return false;
    json_t *mca = bs_get(o, "max_connect_attempts");
    if (mca) { /* google.protobuf.UInt32Value: a number, or {"value": n} */
        json_t *v = json_is_object(mca) ? json_object_get(mca, "value") : mca;
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > UINT32_MAX)
            return bs_fail_at(b, "max_connect_attempts",
                              "value must be greater than or equal to 1");
        t->max_connect_attempts = (uint32_t)json_integer_value(v);
    }
    if (!t->stat_prefix || !*t->stat_prefix)
        return bs_fail_at(b, "stat_prefix", "value length must be at least 1 characters");
    if (t->cluster_name && !*t->cluster_name)
        t->cluster_name = NULL;
    if (t->cluster_name && t->weighted)
        return bs_fail(b, "only one of cluster and weighted_clusters may be set");
    if (!t->cluster_name && !t->weighted)
        return bs_fail(b, "cluster_specifier: one of cluster or weighted_clusters is required");
    if (t->cluster_name)
        t->cluster = wp_config_find_cluster(b->c, t->cluster_name);
    void *logs = NULL;
    if (!bs_each(b, o, "access_log", sizeof(wp_access_log), &logs, &t->naccess_logs, bs_access_log))
        return false;
    t->access_logs = logs;
    return true;
}
