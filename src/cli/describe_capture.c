/*
 * describe_capture.c - weft's transparent-capture lines of `weftctl describe pod` (describe.h;
 * issue 20 item 5, operator report B039; protocols.md §5.1-5.4). istioctl says nothing about
 * capture; these lines go to stderr so that stdout stays istioctl's:
 *
 *   weft: capture: on (virtualOutbound 0.0.0.0:15001 with use_original_dst, virtualInbound
 *         0.0.0.0:15006; node metadata INTERCEPTION_MODE REDIRECT)
 *   weft: capture: outbound IP ranges * (includeOutboundIPRanges), excluded none; outbound
 *         ports excluded 3306 (excludeOutboundPorts)
 *   weft: capture: inbound ports * (includeInboundPorts); excluded 15090,15021,15020 (the
 *         agent's: Envoy's Prometheus, health and the agent's status port) and 8443
 *         (excludeInboundPorts)
 *   weft: outboundTrafficPolicy: REGISTRY_ONLY (virtualOutbound's catch-all chain goes to
 *         BlackHoleCluster: ...)
 *
 * Whether capture is on comes from the proxy's config dump: a listener with use_original_dst
 * (virtualOutbound) is what pilot sends a sidecar it captures (pilot/capture.h), and the
 * bootstrap's node metadata INTERCEPTION_MODE says how; the ranges and ports are Istio's
 * istio-iptables defaults with the pod's traffic.sidecar.istio.io annotations applied, as
 * the injector passes them (-i, -x, -b, -d, -q, -o). The policy in effect is read from the
 * same dump: virtualOutbound's catch-all cluster (PassthroughCluster or BlackHoleCluster), else
 * Istio's allow_any / block_all virtual host names in the HTTP routes.
 */
#include <stdio.h>
#include <string.h>

#include "cli/describe.h"

#define BOOTSTRAP_DUMP "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"
#define LISTENERS_DUMP "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
#define ANN            "traffic.sidecar.istio.io/"

static const char *node_meta(json_t *dump, const char *key)
{
    json_t *bs = dsc_jget(dsc_dump_section(dump, BOOTSTRAP_DUMP), "bootstrap");
    json_t *md = dsc_jget(dsc_jget(bs, "node"), "metadata");
    return json_string_value(json_object_get(md, key));
}

/* Calls fn for every active or static listener of the dump until it returns true. */
static json_t *find_listener(json_t *dump, bool (*fn)(const json_t *))
{
    json_t *sec = dsc_dump_section(dump, LISTENERS_DUMP);
    size_t i;
    json_t *e;
    json_array_foreach(dsc_jget(sec, "dynamic_listeners"), i, e)
    {
        json_t *l = dsc_jget(dsc_jget(e, "active_state"), "listener");
        if (l && fn(l))
            return l;
    }
    json_array_foreach(dsc_jget(sec, "static_listeners"), i, e)
    {
        json_t *l = dsc_jget(e, "listener");
        if (l && fn(l))
            return l;
    }
    return NULL;
}

static bool is_vo(const json_t *l)
{
    return json_is_true(dsc_jget(l, "use_original_dst"));
}

static bool is_vi(const json_t *l)
{
    const char *n = json_string_value(json_object_get(l, "name"));
    return n && strcmp(n, "virtualInbound") == 0;
}

static void addr_text(const json_t *l, char *buf, size_t cap)
{
    json_t *sa = dsc_jget(dsc_jget(l, "address"), "socket_address");
    const char *a = json_string_value(json_object_get(sa, "address"));
    snprintf(buf, cap, "%s:%lld", a ? a : "?", json_integer_value(dsc_jget(sa, "port_value")));
}

/* The cluster of virtualOutbound's catch-all chain (no destination_port), or NULL. */
static const char *catchall_cluster(const json_t *vo)
{
    size_t i, j;
    json_t *c, *f;
    json_array_foreach(dsc_jget(vo, "filter_chains"), i, c)
    {
        if (dsc_jget(dsc_jget(c, "filter_chain_match"), "destination_port"))
            continue;
        json_array_foreach(dsc_jget(c, "filters"), j, f)
        {
            const char *cl =
                json_string_value(json_object_get(dsc_jget(f, "typed_config"), "cluster"));
            if (cl)
                return cl;
        }
    }
    return NULL;
}

/* Does any object in v carry "name": name (a virtual host of Istio's)? */
static bool has_named(const json_t *v, const char *name)
{
    if (json_is_object(v)) {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strcmp(n, name) == 0 && json_object_get(v, "domains"))
            return true;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) if (has_named(x, name)) return true;
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) if (has_named(x, name)) return true;
    }
    return false;
}

static const char *ann(const wf_kvs *a, const char *key)
{
    char k[128];
    snprintf(k, sizeof k, ANN "%s", key);
    const char *v = wf_kvs_get(a, k);
    return v && *v ? v : NULL;
}

static void outbound_lines(const wf_kvs *a, wf_strbuf *out)
{
    const char *inc = wf_kvs_get(a, ANN "includeOutboundIPRanges");
    const char *exc = ann(a, "excludeOutboundIPRanges");
    const char *incp = ann(a, "includeOutboundPorts"), *excp = ann(a, "excludeOutboundPorts");
    if (inc && !*inc) { /* "" = no outbound capture (istio-iptables -i "") */
        wf_strbuf_puts(out, "weft: capture: outbound: none (includeOutboundIPRanges is empty)\n");
        return;
    }
    wf_strbuf_printf(out, "weft: capture: outbound IP ranges %s%s, excluded %s%s; ",
                     inc ? inc : "*", inc ? " (includeOutboundIPRanges)" : " (all)",
                     exc ? exc : "none", exc ? " (excludeOutboundIPRanges)" : "");
    if (incp)
        wf_strbuf_printf(out, "outbound ports also captured %s (includeOutboundPorts); ", incp);
    wf_strbuf_printf(out, "outbound ports excluded %s%s\n", excp ? excp : "none",
                     excp ? " (excludeOutboundPorts: the application reaches them directly)" : "");
}

static void inbound_lines(const wf_kvs *a, const char *admin, wf_strbuf *out)
{
    const char *incb = wf_kvs_get(a, ANN "includeInboundPorts"); /* "" = no inbound capture */
    const char *excb = ann(a, "excludeInboundPorts");
    if (incb && !*incb) {
        wf_strbuf_puts(out, "weft: capture: inbound: none (includeInboundPorts is empty)\n");
        return;
    }
    const char *aport = admin ? strrchr(admin, ':') : NULL;
    wf_strbuf_printf(out,
                     "weft: capture: inbound ports %s%s; excluded 15090,15021,15020 (the "
                     "agent's: Envoy's Prometheus, health and the agent's status port)%s%s%s%s%s",
                     incb ? incb : "*", incb ? " (includeInboundPorts)" : " (all)",
                     aport ? ", " : "", aport ? aport + 1 : "",
                     aport ? " (the local mesh's admin on the pod IP, WEFT_ADMIN)" : "",
                     excb ? " and " : "", excb ? excb : "");
    wf_strbuf_puts(out, excb ? " (excludeInboundPorts)\n" : "\n");
}

static void policy_line(json_t *dump, const json_t *vo, wf_strbuf *out)
{
    const char *cl = vo ? catchall_cluster(vo) : NULL;
    const char *mode = NULL, *why = NULL;
    if (cl && strcmp(cl, "BlackHoleCluster") == 0) {
        mode = "REGISTRY_ONLY";
        why = "virtualOutbound's catch-all chain goes to BlackHoleCluster";
    } else if (cl && strcmp(cl, "PassthroughCluster") == 0) {
        mode = "ALLOW_ANY";
        why = "virtualOutbound's catch-all chain goes to PassthroughCluster";
    } else if (has_named(dump, "block_all")) {
        mode = "REGISTRY_ONLY";
        why = "the HTTP routes end in Istio's block_all virtual host";
    } else if (has_named(dump, "allow_any")) {
        mode = "ALLOW_ANY";
        why = "the HTTP routes end in Istio's allow_any virtual host";
    }
    if (!mode) {
        wf_strbuf_puts(out, "weft: outboundTrafficPolicy: unknown (the dump has neither a "
                            "virtualOutbound catch-all nor allow_any/block_all routes)\n");
        return;
    }
    wf_strbuf_printf(out, "weft: outboundTrafficPolicy: %s (%s): %s\n", mode, why,
                     strcmp(mode, "REGISTRY_ONLY") == 0
                         ? "a destination in no Service or ServiceEntry is refused (TCP: "
                           "BlackHoleCluster, UH; HTTP: 502 direct_response from route "
                           "block_all); add a ServiceEntry to reach it"
                         : "a destination outside the registry is passed through to its "
                           "original destination (PassthroughCluster, route allow_any) "
                           "without mesh policy");
}

int dsc_capture_lines(json_t *dump, const wf_kvs *annotations, wf_strbuf *out)
{
    json_t *vo = find_listener(dump, is_vo), *vi = find_listener(dump, is_vi);
    const char *mode = node_meta(dump, "INTERCEPTION_MODE");
    const char *local = node_meta(dump, "WEFT_LOCALHOST");
    if (vo) {
        char a[128], b[128] = "";
        addr_text(vo, a, sizeof a);
        if (vi)
            addr_text(vi, b, sizeof b);
        const char *name = json_string_value(json_object_get(vo, "name"));
        wf_strbuf_printf(out, "weft: capture: on (%s %s with use_original_dst",
                         name ? name : "virtualOutbound", a);
        if (vi)
            wf_strbuf_printf(out, ", virtualInbound %s", b);
        if (mode)
            wf_strbuf_printf(out, "; node metadata INTERCEPTION_MODE %s", mode);
        wf_strbuf_puts(out, ")\n");
        wf_strbuf_puts(out, "weft: capture: the rules Istio's injector asks istio-iptables for "
                            "(its defaults and the pod's traffic.sidecar.istio.io annotations, "
                            "which `weftctl up --capture` passes to it):\n");
        outbound_lines(annotations, out);
        inbound_lines(annotations, node_meta(dump, "WEFT_ADMIN"), out);
    } else if (local) {
        wf_strbuf_printf(out,
                         "weft: capture: off (explicit mode: node metadata WEFT_LOCALHOST %s; the "
                         "application calls the sidecar's listeners on that address, and pilot "
                         "sends no virtualOutbound)\n",
                         local);
    } else {
        wf_strbuf_printf(out,
                         "weft: capture: off (no virtualOutbound listener in the proxy's config%s"
                         "%s%s)\n",
                         mode ? "; node metadata INTERCEPTION_MODE " : "", mode ? mode : "",
                         mode ? " but pilot sent no capture listeners" : "");
    }
    policy_line(dump, vo, out);
    return wf_strbuf_failed(out) ? -1 : 0;
}

void dsc_print_capture(const dsc_ctx *c, const wf_resource *pod)
{
    if (c->ignore_unmeshed || !dsc_pod_meshed(c, pod))
        return;
    wf_strbuf err = WF_STRBUF_INIT, out = WF_STRBUF_INIT;
    json_t *dump = dsc_fetch_dump(c, pod, &err);
    if (dump && dsc_capture_lines(dump, &pod->annotations, &out) == 0) {
        fflush(c->out);
        fputs(wf_strbuf_cstr(&out), stderr);
    }
    json_decref(dump);
    wf_strbuf_free(&out);
    wf_strbuf_free(&err);
}
