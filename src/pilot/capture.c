/*
 * capture.c - Istio's capture layout for sidecars (capture.h).
 */
#include "pilot/capture.h"

#include <string.h>

#include "pilot/naming.h"

#define LISTENER_TYPE  "type.googleapis.com/envoy.config.listener.v3.Listener"
#define CLUSTER_TYPE   "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define TCP_PROXY      "envoy.filters.network.tcp_proxy"
#define TCP_PROXY_TYPE "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
#define ODST_NAME      "envoy.filters.listener.original_dst"
#define ODST_TYPE                                                                                  \
    "type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst"
#define TLS_INSPECTOR "envoy.filters.listener.tls_inspector"

/* A chain named name holding one tcp_proxy to cluster; match (stolen) may be NULL. */
static json_t *tcp_chain(const char *name, json_t *match, const char *cluster)
{
    json_t *f = json_pack("[{s:s,s:{s:s,s:s,s:s}}]", "name", TCP_PROXY, "typed_config", "@type",
                          TCP_PROXY_TYPE, "stat_prefix", cluster, "cluster", cluster);
    json_t *fc = f ? json_object() : NULL;
    if (!fc || (match && json_object_set_new(fc, "filter_chain_match", match) != 0) ||
        json_object_set_new(fc, "filters", f) != 0 ||
        json_object_set_new(fc, "name", json_string(name)) != 0) {
        json_decref(fc);
        return NULL;
    }
    return fc;
}

static json_t *listener(const char *name, int port, const char *direction)
{
    return json_pack("{s:s,s:s,s:{s:{s:s,s:i}},s:s}", "@type", LISTENER_TYPE, "name", name,
                     "address", "socket_address", "address", "0.0.0.0", "port_value", port,
                     "traffic_direction", direction);
}

json_t *wf_capture_virtual_outbound(bool registry_only)
{
    json_t *l = listener("virtualOutbound", 15001, "OUTBOUND");
    json_t *chains =
        json_pack("[o,o]",
                  tcp_chain("virtualOutbound-blackhole",
                            json_pack("{s:i}", "destination_port", 15001), WF_CLUSTER_BLACKHOLE),
                  tcp_chain("virtualOutbound-catchall-tcp", NULL,
                            registry_only ? WF_CLUSTER_BLACKHOLE : WF_CLUSTER_PASSTHROUGH));
    if (!l || !chains || json_object_set_new(l, "filter_chains", chains) != 0 ||
        json_object_set_new(l, "use_original_dst", json_true()) != 0) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* Appends l's chains to chains, each matching destination_port (l's port). */
static int add_port_chains(json_t *chains, const json_t *l)
{
    json_int_t port = json_integer_value(json_object_get(
        json_object_get(json_object_get(l, "address"), "socket_address"), "port_value"));
    size_t i;
    json_t *fc;
    json_array_foreach(json_object_get(l, "filter_chains"), i, fc)
    {
        json_t *c = json_deep_copy(fc);
        json_t *m = c ? json_object_get(c, "filter_chain_match") : NULL;
        if (c && !m && json_object_set_new(c, "filter_chain_match", m = json_object()) != 0)
            m = NULL;
        if (!m || json_object_set_new(m, "destination_port", json_integer(port)) != 0 ||
            json_array_append_new(chains, c) != 0) {
            json_decref(c);
            return -1;
        }
    }
    return 0;
}

/* virtualInbound from the per-port inbound listeners. */
static json_t *virtual_inbound(const json_t *inbound)
{
    json_t *l = listener("virtualInbound", 15006, "INBOUND");
    json_t *lf =
        json_pack("[{s:s,s:{s:s}}]", "name", ODST_NAME, "typed_config", "@type", ODST_TYPE);
    json_t *chains = json_pack("[o]", tcp_chain("virtualInbound-blackhole",
                                                json_pack("{s:i}", "destination_port", 15006),
                                                WF_CLUSTER_BLACKHOLE));
    if (!l || !lf || !chains)
        goto fail;
    const json_t *tls = NULL;
    size_t i;
    json_t *in;
    json_array_foreach(inbound, i, in)
    {
        json_t *f;
        size_t k;
        json_array_foreach(json_object_get(in, "listener_filters"), k, f)
        {
            const char *n = json_string_value(json_object_get(f, "name"));
            if (!tls && n && strcmp(n, TLS_INSPECTOR) == 0)
                tls = f;
        }
        if (add_port_chains(chains, in) != 0)
            goto fail;
    }
    json_t *all =
        json_pack("{s:[{s:s,s:i}]}", "prefix_ranges", "address_prefix", "0.0.0.0", "prefix_len", 0);
    if (!all ||
        json_array_append_new(
            chains, tcp_chain("virtualInbound", all, WF_CLUSTER_INBOUND_PASSTHROUGH)) != 0 ||
        (tls && json_array_append_new(lf, json_deep_copy(tls)) != 0) ||
        json_object_set_new(l, "filter_chains", chains) != 0) {
        chains = NULL;
        goto fail;
    }
    if (json_object_set_new(l, "listener_filters", lf) != 0) {
        json_decref(l);
        return NULL;
    }
    return l;
fail:
    json_decref(l);
    json_decref(lf);
    json_decref(chains);
    return NULL;
}

json_t *wf_capture_listeners(const json_t *outbound, const json_t *inbound)
{
    json_t *out = json_array();
    size_t i;
    json_t *l;
    json_array_foreach(outbound, i, l)
    {
        json_t *c = json_deep_copy(l);
        if (!c || json_object_set_new(c, "bind_to_port", json_false()) != 0 ||
            json_array_append_new(out, c) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    json_t *vi = virtual_inbound(inbound);
    if (!out || !vi || json_array_append_new(out, vi) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* Istio's ORIGINAL_DST shape on cluster c (an object, changed in place). */
static int to_original_dst(json_t *c)
{
    json_object_del(c, "load_assignment");
    json_object_del(c, "type");
    return json_object_set_new(c, "type", json_string("ORIGINAL_DST")) ||
           json_object_set_new(c, "lb_policy", json_string("CLUSTER_PROVIDED")) ||
           json_object_set_new(c, "upstream_bind_config",
                               json_pack("{s:{s:s,s:i}}", "source_address", "address",
                                         WF_CAPTURE_INBOUND_SOURCE, "port_value", 0));
}

int wf_capture_inbound_clusters(json_t *clusters)
{
    size_t i;
    json_t *c;
    json_array_foreach(clusters, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && strncmp(n, "inbound|", 8) == 0 && to_original_dst(c) != 0)
            return -1;
    }
    json_t *ip =
        json_pack("{s:s,s:s,s:s,s:s}", "@type", CLUSTER_TYPE, "name",
                  WF_CLUSTER_INBOUND_PASSTHROUGH, "connect_timeout", "10s", "type", "STATIC");
    if (!ip || to_original_dst(ip) != 0 || json_array_append_new(clusters, ip) != 0)
        return -1;
    return 0;
}
