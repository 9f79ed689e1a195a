/*
 * explain_capture.c - capture outcomes of access log lines (explain_capture.h).
 */
#include "explain/explain_capture.h"

#include <stdlib.h>
#include <string.h>

#define BLACKHOLE    "BlackHoleCluster"
#define PASSTHROUGH  "PassthroughCluster"
#define INBOUND_PASS "InboundPassthroughCluster"

static bool eq(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

static bool is_http(const wf_lx_record *r)
{
    return r->method || r->path || r->protocol;
}

wf_lx_capture wf_lx_capture_of(const wf_lx_record *r)
{
    if (eq(r->cluster, INBOUND_PASS))
        return WF_LX_CAP_INBOUND_PASSTHROUGH;
    if (eq(r->cluster, BLACKHOLE))
        return WF_LX_CAP_BLACKHOLE;
    if (eq(r->route, "block_all"))
        return WF_LX_CAP_BLOCKED;
    if (eq(r->cluster, PASSTHROUGH) || eq(r->route, "allow_any"))
        return WF_LX_CAP_PASSTHROUGH;
    return WF_LX_CAP_NONE;
}

const char *wf_lx_capture_name(wf_lx_capture c)
{
    switch (c) {
    case WF_LX_CAP_BLOCKED:
        return "registry_only_blocked";
    case WF_LX_CAP_BLACKHOLE:
        return "blackhole";
    case WF_LX_CAP_PASSTHROUGH:
        return "passthrough";
    case WF_LX_CAP_INBOUND_PASSTHROUGH:
        return "inbound_passthrough";
    default:
        return "";
    }
}

const char *wf_lx_original_destination(const wf_lx_record *r)
{
    if (r->downstream_local)
        return r->downstream_local;
    wf_lx_capture c = wf_lx_capture_of(r);
    if (c == WF_LX_CAP_PASSTHROUGH || c == WF_LX_CAP_INBOUND_PASSTHROUGH)
        return r->host; /* an ORIGINAL_DST cluster dials the original destination */
    return NULL;
}

/* The port of "addr:port" / "[v6]:port"; 0 when there is none. */
static long addr_port(const char *a)
{
    const char *c = a ? strrchr(a, ':') : NULL;
    if (!c || (a[0] == '[' && !strstr(a, "]:")))
        return 0;
    char *end;
    long p = strtol(c + 1, &end, 10);
    return *end == '\0' && p > 0 && p < 65536 ? p : 0;
}

/* The authority without its ":port". */
static void host_only(const char *authority, wf_strbuf *b)
{
    size_t n = strlen(authority);
    const char *c = strrchr(authority, ':');
    if (c && authority[0] != '[' && addr_port(authority))
        n = (size_t)(c - authority);
    wf_strbuf_printf(b, "%.*s", (int)n, authority);
}

static void read_blocked(const wf_lx_record *r, const char *dst, wf_strbuf *b)
{
    wf_strbuf_puts(b, "REGISTRY_ONLY blocked an unknown host: the request for Host ");
    wf_strbuf_puts(b, r->authority ? r->authority : "(not logged)");
    if (dst)
        wf_strbuf_printf(b, " (original destination %s)", dst);
    wf_strbuf_puts(b, " matched no virtual host of its port's route and fell to Istio's "
                      "`block_all` virtual host, which answers 502 itself (response code "
                      "details direct_response): nothing was sent upstream.");
    wf_strbuf_puts(b, "\nCause: outboundTrafficPolicy is REGISTRY_ONLY (MeshConfig "
                      "outboundTrafficPolicy.mode, or the pod's Sidecar) and ");
    if (r->authority)
        host_only(r->authority, b);
    else
        wf_strbuf_puts(b, "this host");
    wf_strbuf_puts(b, " is in no Service or ServiceEntry.");
    wf_strbuf_puts(b, "\nFix: add a ServiceEntry for ");
    if (r->authority)
        host_only(r->authority, b);
    else
        wf_strbuf_puts(b, "the host");
    long port = addr_port(dst);
    if (port)
        wf_strbuf_printf(b,
                         " (location: MESH_EXTERNAL, ports: [{number: %ld, name: http, "
                         "protocol: HTTP}])",
                         port);
    wf_strbuf_puts(b, ", or set outboundTrafficPolicy ALLOW_ANY; `weftctl proxy-config route "
                      "<pod>` shows the block_all virtual host.");
}

static void read_blackhole(const wf_lx_record *r, const char *dst, wf_strbuf *b)
{
    long port = addr_port(dst);
    if (port == 15001 || port == 15006) {
        wf_strbuf_printf(b,
                         "BlackHoleCluster by the loop guard: the connection's original "
                         "destination is the proxy's own capture port %ld (%s's "
                         "%s-blackhole chain), so it would loop through the proxy; a client "
                         "(or a rule) sent traffic to %s directly. Not outboundTrafficPolicy.",
                         port, port == 15001 ? "virtualOutbound" : "virtualInbound",
                         port == 15001 ? "virtualOutbound" : "virtualInbound", dst);
        return;
    }
    wf_strbuf_puts(b, "BlackHoleCluster: the connection to ");
    wf_strbuf_puts(b, dst ? dst
                          : "its original destination (not logged: log "
                            "%DOWNSTREAM_LOCAL_ADDRESS%)");
    if (r->sni)
        wf_strbuf_printf(b, " (SNI %s)", r->sni);
    else if (!is_http(r))
        wf_strbuf_puts(b, " (no SNI logged: not TLS, or no TLS inspector ran where it was taken)");
    wf_strbuf_puts(b, " is not in the mesh registry, so the capture listener sent it to "
                      "BlackHoleCluster, which has no endpoints (UH): the proxy closed it and "
                      "the destination saw no connection (a TLS client sees a reset during "
                      "the handshake).");
    wf_strbuf_puts(b, "\nCause: outboundTrafficPolicy is REGISTRY_ONLY (MeshConfig "
                      "outboundTrafficPolicy.mode, or the pod's Sidecar).");
    wf_strbuf_puts(b, "\nFix: add a ServiceEntry for ");
    if (r->sni)
        wf_strbuf_printf(b,
                         "%s (hosts: [%s], location: MESH_EXTERNAL, ports: [{number: %ld, "
                         "name: tls, protocol: TLS}]; the proxy then picks its cluster "
                         "by SNI)",
                         r->sni, r->sni, port ? port : 443);
    else if (dst)
        wf_strbuf_printf(b, "the host behind %s (its addresses, port %ld, protocol TCP)", dst,
                         port);
    else
        wf_strbuf_puts(b, "the destination");
    wf_strbuf_puts(b, ", or set outboundTrafficPolicy ALLOW_ANY.");
    if (port)
        wf_strbuf_printf(b,
                         "\nNext: `weftctl proxy-config listener <pod> --port %ld` shows the "
                         "chain that took it; after the fix `weftctl proxy-config cluster <pod> "
                         "--fqdn %s` shows the new cluster.",
                         port, r->sni ? r->sni : "<host>");
}

static void read_passthrough(const wf_lx_record *r, const char *dst, wf_strbuf *b)
{
    wf_strbuf_printf(b,
                     "PassthroughCluster: outboundTrafficPolicy ALLOW_ANY let this %s through "
                     "to its original destination %s",
                     is_http(r) ? "request" : "connection",
                     dst ? dst : "(not logged: log %DOWNSTREAM_LOCAL_ADDRESS%)");
    if (r->sni)
        wf_strbuf_printf(b, " (SNI %s)", r->sni);
    if (is_http(r) && r->authority)
        wf_strbuf_printf(b, ", Host %s matching no virtual host but Istio's `allow_any` route",
                         r->authority);
    wf_strbuf_puts(b, ": a destination outside the mesh registry, reached without mesh policy "
                      "(no mTLS origination, VirtualService, DestinationRule or per-service "
                      "metrics; destination_service \"PassthroughCluster\").");
    if (r->flags && *r->flags)
        wf_strbuf_puts(b, "\nThe failure is the original destination's (see the flags): the "
                          "proxy dialled it directly.");
    wf_strbuf_puts(b, "\nTo bring it under mesh policy add a ServiceEntry for it; under "
                      "REGISTRY_ONLY it would be refused (BlackHoleCluster, or 502 from "
                      "block_all for HTTP).");
}

static void read_inbound(const wf_lx_record *r, const char *dst, wf_strbuf *b)
{
    long port = addr_port(dst);
    wf_strbuf_puts(b, "InboundPassthroughCluster: inbound traffic to ");
    if (port)
        wf_strbuf_printf(b, "port %ld of this pod (%s)", port, dst);
    else
        wf_strbuf_puts(b, dst ? dst : "a port of this pod");
    wf_strbuf_puts(b, ", a port no Service selecting the pod declares: virtualInbound's "
                      "catch-all chain passed it to the application from 127.0.0.6 without a "
                      "Service port's inbound config. Not outboundTrafficPolicy (that is for "
                      "outbound traffic).");
    if (r->flags && *r->flags)
        wf_strbuf_puts(b, "\nThe failure is the application's port (see the flags): nothing "
                          "listening there, or it closed the connection.");
    wf_strbuf_puts(b, "\nIf the port should be served as a mesh port, declare it in a Service "
                      "that selects the pod; `weftctl describe pod <pod>` lists its Services.");
}

const wf_lx_entry *wf_lx_capture_uh_blackhole(void)
{
    static const wf_lx_entry e = {
        WF_LX_FLAG,
        "UH",
        "NoHealthyUpstream",
        "TCP: the connection closed at once; HTTP: 503",
        "The connection went to BlackHoleCluster, which has no endpoints by design: the proxy "
        "refused it on purpose.",
        "Transparent capture under outboundTrafficPolicy REGISTRY_ONLY: the original "
        "destination is in no Service or ServiceEntry (or the loop guard of ports 15001/15006).",
        "Add a ServiceEntry for the destination (see the capture reading), or use ALLOW_ANY."};
    return &e;
}

const wf_lx_entry *wf_lx_capture_blocked_direct_response(void)
{
    static const wf_lx_entry e = {
        WF_LX_DETAIL,
        "direct_response",
        "",
        "HTTP 502 from the proxy itself",
        "Istio's `block_all` virtual host answered: the request's Host matched no virtual host "
        "of its port's route, so the proxy refused it (nothing was sent upstream).",
        "outboundTrafficPolicy REGISTRY_ONLY (MeshConfig outboundTrafficPolicy.mode, or the "
        "pod's Sidecar) and a Host in no Service or ServiceEntry.",
        "Add a ServiceEntry for the Host (location: MESH_EXTERNAL, the port with protocol HTTP), "
        "or set outboundTrafficPolicy ALLOW_ANY; `weftctl proxy-config route <pod>` shows the "
        "block_all virtual host."};
    return &e;
}

int wf_lx_capture_read(const wf_lx_record *r, wf_strbuf *out)
{
    const char *dst = wf_lx_original_destination(r);
    switch (wf_lx_capture_of(r)) {
    case WF_LX_CAP_BLOCKED:
        read_blocked(r, dst, out);
        break;
    case WF_LX_CAP_BLACKHOLE:
        read_blackhole(r, dst, out);
        break;
    case WF_LX_CAP_PASSTHROUGH:
        read_passthrough(r, dst, out);
        break;
    case WF_LX_CAP_INBOUND_PASSTHROUGH:
        read_inbound(r, dst, out);
        break;
    default:
        break;
    }
    return wf_strbuf_failed(out) ? -1 : 0;
}
