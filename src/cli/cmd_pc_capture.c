/*
 * cmd_pc_capture.c - weft's note for `proxy-config listener --port N` on a sidecar with
 * Istio's capture layout (cmd_pc.h pc_capture_port_note; protocols.md §5.3-5.4, operator
 * report B039). istioctl's --port keeps the listeners of port N only, so for a port no
 * listener owns it shows nothing, although virtualOutbound decides where such a connection
 * goes: these lines name the listener or chain that takes it, and its real cluster (the table
 * prints a BlackHoleCluster tcp_proxy as Non-HTTP/Non-TCP, as istioctl does).
 *
 * The hand-off follows Envoy's use_original_dst: the listener bound to the original
 * destination's address and port, else the one on 0.0.0.0 (or ::) and that port, else
 * virtualOutbound's own chains, where the chain matching destination_port N wins over those
 * without one (Envoy's filter chain match order begins with the destination port).
 */
#include <string.h>

#include "cli/cmd_pc.h"

#define TCP_NAME  "envoy.filters.network.tcp_proxy"
#define HCM_NAME  "envoy.filters.network.http_connection_manager"
#define ODST_NAME "envoy.filters.listener.original_dst"

static long port_of(const json_t *l)
{
    return (long)wf_jint(wf_jpath(l, "address.socket_address"), "port_value");
}

static const char *addr_of(const json_t *l)
{
    const char *a = json_string_value(wf_jpath(l, "address.socket_address.address"));
    return a ? a : "";
}

static bool is_virtual_outbound(const json_t *l)
{
    return json_is_true(json_object_get(l, "use_original_dst"));
}

/* virtualInbound: the inbound listener with an original_dst listener filter. */
static bool is_virtual_inbound(const json_t *l)
{
    if (is_virtual_outbound(l))
        return false;
    const char *dir = wf_jstr(l, "traffic_direction");
    const char *name = wf_jstr_or(l, "name", "");
    if (strcmp(name, "virtualInbound") == 0)
        return true;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(l, "listener_filters"), i, f)
    {
        if (dir && strcmp(dir, "INBOUND") == 0 && strcmp(wf_jstr_or(f, "name", ""), ODST_NAME) == 0)
            return true;
    }
    return false;
}

static const json_t *find(const json_t *ls, bool (*pred)(const json_t *))
{
    size_t i;
    json_t *l;
    json_array_foreach((json_t *)ls, i, l) if (pred(l)) return l;
    return NULL;
}

/* The chain of l a connection to port takes: the first with destination_port == port, else
 * the first without a destination_port, else the default chain; NULL when none. */
static const json_t *chain_for_port(const json_t *l, long port)
{
    const json_t *chains = json_object_get(l, "filter_chains");
    size_t i;
    json_t *c;
    json_array_foreach((json_t *)chains, i, c)
    {
        const json_t *dp =
            json_object_get(json_object_get(c, "filter_chain_match"), "destination_port");
        if (dp && json_integer_value(dp) == port)
            return c;
    }
    json_array_foreach((json_t *)chains, i, c)
    {
        if (!json_object_get(json_object_get(c, "filter_chain_match"), "destination_port"))
            return c;
    }
    const json_t *def = json_object_get(l, "default_filter_chain");
    return json_is_object(def) ? def : NULL;
}

/* The chain's cluster: the tcp_proxy's, "HTTP route R" for a connection manager; "" else. */
static void chain_target(const json_t *c, wf_strbuf *b, const char **cluster)
{
    size_t i;
    json_t *f;
    *cluster = "";
    json_array_foreach(json_object_get(c, "filters"), i, f)
    {
        const char *name = wf_jstr_or(f, "name", "");
        const json_t *tc = json_object_get(f, "typed_config");
        if (strcmp(name, TCP_NAME) == 0) {
            *cluster = wf_jstr_or(tc, "cluster", "");
            wf_strbuf_puts(b, *cluster);
            return;
        }
        if (strcmp(name, HCM_NAME) == 0) {
            const char *rds = json_string_value(wf_jpath(tc, "rds.route_config_name"));
            const char *in = json_string_value(wf_jpath(tc, "route_config.name"));
            wf_strbuf_printf(b, "HTTP (%s%s)", rds ? "route " : "inline route ",
                             rds  ? rds
                             : in ? in
                                  : "");
            return;
        }
    }
    wf_strbuf_puts(b, "no filter that forwards");
}

static void chain_line(const json_t *c, wf_strbuf *b, const char **cluster)
{
    wf_strbuf_printf(b, "chain %s (MATCH ", wf_jstr_or(c, "name", "(unnamed)"));
    pc_chain_match(c, b);
    wf_strbuf_puts(b, ") -> ");
    chain_target(c, b, cluster);
}

static void outbound_meaning(const char *cluster, long port, wf_strbuf *b)
{
    if (strcmp(cluster, "BlackHoleCluster") == 0 && port == 15001)
        wf_strbuf_puts(b, ": the loop guard (a connection to the capture port itself)");
    else if (strcmp(cluster, "BlackHoleCluster") == 0)
        wf_strbuf_printf(b,
                         ": outboundTrafficPolicy REGISTRY_ONLY, the connection is closed "
                         "(access log UH, upstream_cluster BlackHoleCluster; HTTP ports answer "
                         "502 from route block_all); add a ServiceEntry for the destination's "
                         "host and port %ld to reach it",
                         port);
    else if (strcmp(cluster, "PassthroughCluster") == 0)
        wf_strbuf_puts(b, ": outboundTrafficPolicy ALLOW_ANY, passed through to the original "
                          "destination outside the mesh registry");
}

static void outbound_note(const json_t *ls, const json_t *vo, long port, wf_strbuf *b)
{
    wf_strbuf_printf(b,
                     "weft: transparent capture: an outbound connection to port %ld reaches %s "
                     "(%s:%ld, use_original_dst)",
                     port, wf_jstr_or(vo, "name", "virtualOutbound"), addr_of(vo), port_of(vo));
    size_t i, owners = 0;
    bool wildcard = false;
    json_t *l;
    json_array_foreach((json_t *)ls, i, l)
    {
        if (l == vo || is_virtual_inbound(l) || port_of(l) != port)
            continue;
        wf_strbuf_puts(b, owners++ ? ", "
                                   : ", which hands it to the listener for its original "
                                     "destination: ");
        const json_t *btp = json_object_get(l, "bind_to_port");
        wf_strbuf_printf(b, "%s (%s:%ld%s)", wf_jstr_or(l, "name", "(unnamed)"), addr_of(l), port,
                         json_is_false(btp) ? ", bind_to_port false" : "");
        const char *a = addr_of(l);
        wildcard |= strcmp(a, "0.0.0.0") == 0 || strcmp(a, "::") == 0;
    }
    if (owners)
        wf_strbuf_puts(b, "; its chains are the rows above (the one matching the connection's "
                          "SNI, ALPN and address takes it; with none and no default chain it is "
                          "closed: NR filter_chain_not_found)");
    if (wildcard) {
        wf_strbuf_puts(b, "\n");
        return;
    }
    const json_t *c = chain_for_port(vo, port);
    if (owners)
        wf_strbuf_puts(b, ".\nweft:   another destination address on that port stays in ");
    else
        wf_strbuf_printf(b, ".\nweft:   no listener owns port %ld, so it stays in ", port);
    wf_strbuf_printf(b, "%s: ", wf_jstr_or(vo, "name", "virtualOutbound"));
    if (!c) {
        wf_strbuf_puts(b, "no chain matches, the connection is closed (NR)\n");
        return;
    }
    const char *cluster;
    chain_line(c, b, &cluster);
    outbound_meaning(cluster, port, b);
    wf_strbuf_puts(b, "\n");
}

static void inbound_note(const json_t *vi, long port, wf_strbuf *b)
{
    const json_t *chains = json_object_get(vi, "filter_chains");
    size_t i, n = 0;
    json_t *c;
    json_array_foreach((json_t *)chains, i, c)
    {
        const json_t *dp =
            json_object_get(json_object_get(c, "filter_chain_match"), "destination_port");
        if (dp && json_integer_value(dp) == port)
            n++;
    }
    if (n) {
        wf_strbuf_printf(b,
                         "weft: an inbound connection to this pod's port %ld reaches %s (%s:%ld) "
                         "and its %zu chain%s for destination port %ld (`--port %ld` of the "
                         "listener %s shows them)\n",
                         port, wf_jstr_or(vi, "name", "virtualInbound"), addr_of(vi), port_of(vi),
                         n, n == 1 ? "" : "s", port, port_of(vi), wf_jstr_or(vi, "name", ""));
        return;
    }
    wf_strbuf_printf(b, "weft: an inbound connection to this pod's port %ld reaches %s (%s:%ld): ",
                     port, wf_jstr_or(vi, "name", "virtualInbound"), addr_of(vi), port_of(vi));
    /* no chain names the port: the passthrough chains (Istio's virtualInbound-catchall-http
     * and virtualInbound, one per transport and ALPN the workload's mTLS mode accepts) */
    size_t k = 0;
    bool passthrough = false;
    json_array_foreach((json_t *)chains, i, c)
    {
        const json_t *m = json_object_get(c, "filter_chain_match");
        if (json_object_get(m, "destination_port"))
            continue;
        const char *cluster;
        wf_strbuf_puts(b, k++ ? "; " : "");
        chain_line(c, b, &cluster);
        passthrough |= strcmp(cluster, "InboundPassthroughCluster") == 0;
    }
    const json_t *def = json_object_get(vi, "default_filter_chain");
    if (!k && json_is_object(def)) {
        const char *cluster;
        chain_line(def, b, &cluster);
        k++;
    }
    if (!k) {
        wf_strbuf_puts(b, "no chain matches, the connection is closed (NR)\n");
        return;
    }
    if (passthrough)
        wf_strbuf_printf(b,
                         ": no Service declares port %ld of this pod, passed to the "
                         "application from 127.0.0.6",
                         port);
    wf_strbuf_puts(b, "\n");
}

int pc_capture_port_note(const json_t *listeners, long port, wf_strbuf *note)
{
    const json_t *vo = find(listeners, is_virtual_outbound);
    const json_t *vi = find(listeners, is_virtual_inbound);
    if (vo && port != port_of(vo))
        outbound_note(listeners, vo, port, note);
    if (vi && port != port_of(vi) && (!vo || port != port_of(vo)))
        inbound_note(vi, port, note);
    return wf_strbuf_failed(note) ? -1 : 0;
}
