/*
 * protocol.h - Istio's protocol of a port, as Istio decides it from the declared fields.
 *
 * Follows Istio's protocol selection (pkg/config/protocol Parse and kube.ConvertProtocol;
 * ../shared/reference/protocols.md): a Kubernetes port's `appProtocol` wins (with
 * Kubernetes' `kubernetes.io/h2c`, `kubernetes.io/ws` and `kubernetes.io/wss`) and is read
 * as a name would be; else the port
 * name's prefix before the first '-' ("http", "http-web", "grpc-web", "tcp-db"),
 * case-insensitively; a UDP port is UDP. Anything else is UNSUPPORTED, which Istio treats as
 * "auto" (protocol sniffing) except on ports 25, 53, 3306 and 27017, which are TCP.
 * ServiceEntry, Gateway and Sidecar ports name their protocol directly ("HTTP", "TLS").
 *
 * Pure functions; no allocation.
 */
#ifndef WF_MODEL_PROTOCOL_H
#define WF_MODEL_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum wf_protocol {
    WF_PROTO_UNSUPPORTED = 0, /* not declared: Istio sniffs ("auto") */
    WF_PROTO_HTTP,
    WF_PROTO_HTTP2,
    WF_PROTO_HTTP_PROXY,
    WF_PROTO_GRPC,
    WF_PROTO_GRPC_WEB,
    WF_PROTO_HTTPS,
    WF_PROTO_TCP,
    WF_PROTO_TLS,
    WF_PROTO_MONGO,
    WF_PROTO_REDIS,
    WF_PROTO_MYSQL,
    WF_PROTO_UDP,
} wf_protocol;

/* protocol.Parse: the protocol of a name ("HTTP", "grpc-web"); only the first len bytes are
 * read. WF_PROTO_UNSUPPORTED when unknown. */
wf_protocol wf_protocol_parse(const char *s, size_t len);

/* kube.ConvertProtocol for a Kubernetes Service or container port: port number, name (may be
 * NULL), protocol ("TCP" when NULL) and appProtocol (NULL when absent). */
wf_protocol wf_protocol_of_kube_port(int64_t port, const char *name, const char *proto,
                                     const char *app_protocol);

/* Where wf_protocol_of_kube_port took the protocol from (for weftctl describe). */
typedef enum wf_protocol_source {
    WF_PROTO_SRC_NONE = 0,     /* not declared (or not a protocol Istio knows): sniffed */
    WF_PROTO_SRC_UDP,          /* the port's protocol: UDP */
    WF_PROTO_SRC_APP_PROTOCOL, /* appProtocol */
    WF_PROTO_SRC_NAME,         /* the port name's prefix */
    WF_PROTO_SRC_WELL_KNOWN,   /* not declared, on a server-first port (25, 53, 3306, 27017) */
} wf_protocol_source;

/* wf_protocol_of_kube_port, also saying where the protocol came from (*src). */
wf_protocol wf_protocol_of_kube_port_src(int64_t port, const char *name, const char *proto,
                                         const char *app_protocol, wf_protocol_source *src);

/* Istio's name ("HTTP", "GRPC-Web", "UnsupportedProtocol"). */
const char *wf_protocol_name(wf_protocol p);

/* HTTP-family protocols (HTTP, HTTP2, HTTP_PROXY, GRPC, GRPC-Web). */
bool wf_protocol_is_http(wf_protocol p);

/* Protocols that need HTTP/2 on the wire (HTTP2, GRPC). */
bool wf_protocol_is_h2(wf_protocol p);

#endif
