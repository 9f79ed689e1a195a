/*
 * capture.c - Istio's capture layout for sidecars (capture.h).
 */
#include "pilot/capture.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/naming.h"
#include "pilot/sniff.h"
#include "pilot/tcp.h"

#define LISTENER_TYPE  "type.googleapis.com/envoy.config.listener.v3.Listener"
#define CLUSTER_TYPE   "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define TCP_PROXY      "envoy.filters.network.tcp_proxy"
#define TCP_PROXY_TYPE "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
#define ODST_NAME      "envoy.filters.listener.original_dst"
#define ODST_TYPE                                                                                  \
    "type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst"

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

int wf_capture_match_port(json_t *chain, uint32_t port)
{
    json_t *old = json_object_get(chain, "filter_chain_match");
    json_t *m = json_pack("{s:I}", "destination_port", (json_int_t)port);
    if (!m || (old && json_object_update(m, old) != 0) ||
        json_object_set_new(chain, "filter_chain_match", m) != 0)
        return -1;
    if (!old) { /* filter_chain_match first, Envoy's field order */
        json_t *rest = json_deep_copy(chain);
        json_object_clear(chain);
        int rc = rest ? json_object_set(chain, "filter_chain_match",
                                        json_object_get(rest, "filter_chain_match"))
                      : -1;
        if (rc == 0)
            rc = json_object_update(chain, rest);
        json_decref(rest);
        return rc;
    }
    return 0;
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
        if (!c || wf_capture_match_port(c, (uint32_t)port) != 0 ||
            json_array_append_new(chains, c) != 0) {
            json_decref(c);
            return -1;
        }
    }
    return 0;
}

/* The listener filters' per-port needs (Istio's enabledInspector map, port 0 = chains without
 * destination_port). */
typedef struct inspect {
    uint32_t port;
    bool tls, http;
} inspect;

typedef struct inspects {
    inspect *v; /* at most one per chain (malloc'd) */
    size_t n;
} inspects;

static int cmp_inspect(const void *a, const void *b)
{
    uint32_t x = ((const inspect *)a)->port, y = ((const inspect *)b)->port;
    return (x > y) - (x < y);
}

/* Fills in from chains as populateListenerFilters does (in->v freed by the caller). -1 OOM. */
static int collect_inspects(const json_t *chains, inspects *in)
{
    size_t i, k;
    json_t *fc, *a;
    in->n = 0;
    in->v = malloc((json_array_size(chains) + 1) * sizeof *in->v);
    if (!in->v)
        return -1;
    json_array_foreach(chains, i, fc)
    {
        const json_t *m = json_object_get(fc, "filter_chain_match");
        uint32_t port = (uint32_t)json_integer_value(json_object_get(m, "destination_port"));
        const char *tp = json_string_value(json_object_get(m, "transport_protocol"));
        bool http = false;
        json_array_foreach(json_object_get(m, "application_protocols"), k, a)
        {
            const char *ap = json_string_value(a);
            http = http || (ap && (!strcmp(ap, "http/1.1") || !strcmp(ap, "h2c")));
        }
        size_t j = 0;
        while (j < in->n && in->v[j].port != port)
            j++;
        if (j == in->n)
            in->v[in->n++] = (inspect){.port = port};
        in->v[j].tls = in->v[j].tls || (tp && !strcmp(tp, "tls"));
        in->v[j].http = in->v[j].http || http;
    }
    qsort(in->v, in->n, sizeof in->v[0], cmp_inspect);
    return 0;
}

/* listenerPredicateExcludePorts: the ports of in (not port 0 unless with0) whose tls (tls) or
 * http flag equals want, as [p, p+1) ranges, an or_match of them when several. NULL when
 * none (*oom false) or on OOM (*oom true). */
static json_t *port_predicate(const inspects *in, bool tls, bool want, bool with0, bool *oom)
{
    json_t *rules = json_array();
    *oom = !rules;
    for (size_t i = 0; rules && i < in->n; i++) {
        bool flag = tls ? in->v[i].tls : in->v[i].http;
        if ((in->v[i].port == 0 && !with0) || flag != want)
            continue;
        if (json_array_append_new(rules, json_pack("{s:{s:I,s:I}}", "destination_port_range",
                                                   "start", (json_int_t)in->v[i].port, "end",
                                                   (json_int_t)in->v[i].port + 1)) != 0)
            *oom = true;
    }
    json_t *out = NULL;
    if (!*oom && json_array_size(rules) == 1)
        out = json_incref(json_array_get(rules, 0));
    else if (!*oom && json_array_size(rules) > 1 &&
             !(out = json_pack("{s:{s:O}}", "or_match", "rules", rules)))
        *oom = true;
    json_decref(rules);
    return out;
}

/* filter with its filter_disabled predicate (consumed; NULL = none). -1 on OOM. */
static int add_inspector(json_t *lf, json_t *filter, json_t *disabled)
{
    if (!filter || (disabled && json_object_set_new(filter, "filter_disabled", disabled) != 0) ||
        json_array_append_new(lf, filter) != 0) {
        if (!filter)
            json_decref(disabled);
        return -1;
    }
    return 0;
}

/* Istio's populateListenerFilters for virtualInbound's chains: original_dst, then
 * tls_inspector when a chain matches transport_protocol tls (buildTLSInspector: enabled for
 * every port but those whose chains need no TLS when the catch-all needs it, else only for
 * the ports that need it, a not_match), then http_inspector when a chain matches http/1.1 or
 * h2c (buildHTTPInspector: disabled on every port, 0 included, whose chains need no HTTP). */
static json_t *inbound_listener_filters(const json_t *chains)
{
    inspects in = {0};
    bool tls = false, http = false, oom = false;
    json_t *lf =
        json_pack("[{s:s,s:{s:s}}]", "name", ODST_NAME, "typed_config", "@type", ODST_TYPE);
    if (!lf || collect_inspects(chains, &in) != 0) {
        free(in.v);
        json_decref(lf);
        return NULL;
    }
    for (size_t i = 0; i < in.n; i++) {
        tls = tls || in.v[i].tls;
        http = http || in.v[i].http;
    }
    int rc = 0;
    if (tls) {
        bool def = in.n && in.v[0].port == 0 && in.v[0].tls;
        json_t *p = port_predicate(&in, true, !def, false, &oom);
        if (p && !def && !(p = json_pack("{s:o}", "not_match", p)))
            oom = true;
        json_t *ti = wf_tcp_tls_inspector();
        rc = oom ? -1 : add_inspector(lf, json_incref(json_array_get(ti, 0)), p);
        json_decref(ti);
    }
    if (rc == 0 && http) {
        json_t *p = port_predicate(&in, false, false, true, &oom);
        rc = oom ? -1 : add_inspector(lf, wf_sniff_http_inspector(), p);
    }
    free(in.v);
    if (rc != 0) {
        json_decref(lf);
        return NULL;
    }
    return lf;
}

/* Istio's buildInboundBlackhole: destination_port 15006 -> metadata exchange, istio.stats,
 * tcp_proxy BlackHoleCluster (the loop guard). */
static json_t *inbound_blackhole(void)
{
    json_t *fc = tcp_chain("virtualInbound-blackhole",
                           json_pack("{s:i}", "destination_port", 15006), WF_CLUSTER_BLACKHOLE);
    json_t *f = fc ? json_object_get(fc, "filters") : NULL;
    if (!f || json_array_insert_new(f, 0, wf_tcp_listener_mx()) != 0 ||
        json_array_insert_new(f, 1, wf_tcp_stats_filter(true)) != 0) {
        json_decref(fc);
        return NULL;
    }
    return fc;
}

/* virtualInbound (Istio's inboundVirtualListener) from the per-port inbound listeners and the
 * passthrough one (named virtualInbound, pilot/inbound.h): the blackhole chain, the
 * passthrough chains, each port's chains; the listener filters above; the passthrough
 * listener's listener_filters_timeout; Istio's field order. */
static json_t *virtual_inbound(const json_t *inbound)
{
    json_t *chains = json_pack("[o]", inbound_blackhole());
    const json_t *pt = NULL;
    size_t i;
    json_t *in;
    json_array_foreach(inbound, i, in)
    {
        const char *n = json_string_value(json_object_get(in, "name"));
        if (n && !strcmp(n, WF_CHAIN_VIRTUAL_INBOUND))
            pt = in;
    }
    if (chains && pt && json_array_extend(chains, json_object_get(pt, "filter_chains")) != 0) {
        json_decref(chains);
        return NULL;
    }
    json_array_foreach(inbound, i, in)
    {
        if (in != pt && chains && add_port_chains(chains, in) != 0) {
            json_decref(chains);
            return NULL;
        }
    }
    json_t *lf = chains ? inbound_listener_filters(chains) : NULL;
    json_t *l = lf ? json_pack("{s:s,s:s,s:{s:{s:s,s:i}},s:o,s:o}", "@type", LISTENER_TYPE, "name",
                               "virtualInbound", "address", "socket_address", "address", "0.0.0.0",
                               "port_value", 15006, "filter_chains", chains, "listener_filters", lf)
                   : NULL;
    if (!lf)
        json_decref(chains);
    json_t *timeout = pt ? json_object_get(pt, "listener_filters_timeout") : NULL;
    if (l && timeout && json_object_set(l, "listener_filters_timeout", timeout) != 0) {
        json_decref(l);
        return NULL;
    }
    if (!l || json_object_set_new(l, "traffic_direction", json_string("INBOUND")) != 0 ||
        (timeout &&
         json_object_set_new(l, "continue_on_listener_filters_timeout", json_true()) != 0)) {
        json_decref(l);
        return NULL;
    }
    return l;
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
