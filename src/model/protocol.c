/*
 * protocol.c - Istio's protocol of a port. See protocol.h.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "model/protocol.h"

static const struct {
    const char *name; /* protocol.Parse's spelling, matched case-insensitively */
    const char *istio;
    wf_protocol p;
} protos[] = {
    {"tcp", "TCP", WF_PROTO_TCP},       {"udp", "UDP", WF_PROTO_UDP},
    {"grpc", "GRPC", WF_PROTO_GRPC},    {"grpc-web", "GRPC-Web", WF_PROTO_GRPC_WEB},
    {"http", "HTTP", WF_PROTO_HTTP},    {"http_proxy", "HTTP_PROXY", WF_PROTO_HTTP_PROXY},
    {"http2", "HTTP2", WF_PROTO_HTTP2}, {"https", "HTTPS", WF_PROTO_HTTPS},
    {"tls", "TLS", WF_PROTO_TLS},       {"mongo", "Mongo", WF_PROTO_MONGO},
    {"redis", "Redis", WF_PROTO_REDIS}, {"mysql", "MySQL", WF_PROTO_MYSQL},
};

wf_protocol wf_protocol_parse(const char *s, size_t len)
{
    for (size_t i = 0; s && i < sizeof protos / sizeof protos[0]; i++)
        if (strlen(protos[i].name) == len && strncasecmp(protos[i].name, s, len) == 0)
            return protos[i].p;
    return WF_PROTO_UNSUPPORTED;
}

wf_protocol wf_protocol_of_kube_port_src(int64_t port, const char *name, const char *proto,
                                         const char *app_protocol, wf_protocol_source *src)
{
    *src = WF_PROTO_SRC_UDP;
    if (proto && strcmp(proto, "UDP") == 0)
        return WF_PROTO_UDP;
    *src = app_protocol ? WF_PROTO_SRC_APP_PROTOCOL : WF_PROTO_SRC_NAME;
    const char *s = name ? name : "";
    if (app_protocol) {
        if (strcmp(app_protocol, "kubernetes.io/h2c") == 0)
            return WF_PROTO_HTTP2;
        if (strcmp(app_protocol, "kubernetes.io/ws") == 0)
            return WF_PROTO_HTTP;
        if (strcmp(app_protocol, "kubernetes.io/wss") == 0)
            return WF_PROTO_HTTPS;
        s = app_protocol;
    }
    /* appProtocol replaces the name and is then read like one (ConvertProtocol) */
    wf_protocol p = strncasecmp(s, "grpc-web", 8) == 0 ? WF_PROTO_GRPC_WEB
                                                       : wf_protocol_parse(s, strcspn(s, "-"));
    if (p != WF_PROTO_UNSUPPORTED)
        return p;
    *src = WF_PROTO_SRC_NONE;
    if (port == 25 || port == 53 || port == 3306 || port == 27017) {
        *src = WF_PROTO_SRC_WELL_KNOWN;
        return WF_PROTO_TCP;
    }
    return p;
}

wf_protocol wf_protocol_of_kube_port(int64_t port, const char *name, const char *proto,
                                     const char *app_protocol)
{
    wf_protocol_source src;
    return wf_protocol_of_kube_port_src(port, name, proto, app_protocol, &src);
}

const char *wf_protocol_name(wf_protocol p)
{
    for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++)
        if (protos[i].p == p)
            return protos[i].istio;
    return "UnsupportedProtocol";
}

bool wf_protocol_is_http(wf_protocol p)
{
    return p == WF_PROTO_HTTP || p == WF_PROTO_HTTP2 || p == WF_PROTO_HTTP_PROXY ||
           p == WF_PROTO_GRPC || p == WF_PROTO_GRPC_WEB;
}

bool wf_protocol_is_h2(wf_protocol p)
{
    return p == WF_PROTO_HTTP2 || p == WF_PROTO_GRPC;
}
