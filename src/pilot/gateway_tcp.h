/*
 * gateway_tcp.h - TLS passthrough on a gateway (pilot/gateway.h): servers with tls.mode
 * PASSTHROUGH or AUTO_PASSTHROUGH and their SNI filter chains, as Istio's
 * buildGatewayListeners / buildGatewayNetworkFiltersFromTLSRoutes write them
 * (istio/istio pilot/pkg/networking/core/gateway.go; reference protocols.md §4.7).
 *
 *  - a passthrough server: port.protocol TLS or HTTPS (case-insensitive) with tls.mode
 *    PASSTHROUGH or AUTO_PASSTHROUGH, port 1..65535; a TCP server: port.protocol TCP, MONGO,
 *    REDIS or MYSQL (buildGatewayNetworkFiltersFromTCPRoutes). TLS servers terminating TLS for
 *    TCP traffic stay unimplemented (model/unimplemented.c).
 *  - TCP: the first tcp route (VirtualServices bound and meeting the hosts as below, load
 *    order) with a destination whose match list is empty or has a match that applies (port,
 *    gateways, sourceLabels as below) gives the server's one chain, without
 *    filter_chain_match: [RBAC..., istio.stats, tcp_proxy]; none: no chain.
 *  - PASSTHROUGH: for each VirtualService (load order) exported to the gateway's namespace whose
 *    `gateways` names the Gateway ("ns/name", or "name" in the VirtualService's namespace) and
 *    one of whose hosts (short names resolved in its namespace) meets one of the server's hosts
 *    ("ns/host" entries: ns "*", "." = the Gateway's namespace, or the VirtualService's; "*"
 *    and "*.suffix" wildcards either way), each tls route with a destination and each of its
 *    matches whose port is absent or the server's port number, whose gateways are absent or
 *    name the Gateway and whose sourceLabels are a subset of the gateway pod's labels: one
 *    chain {"filter_chain_match": {"server_names": sniHosts}, "filters": [RBAC..., istio.stats
 *    (gateway value), tcp_proxy to the route (pilot/tcp.h wf_tcp_route_filters)]}.
 *  - AUTO_PASSTHROUGH: for each service the gateway sees (pilot/serviceentry.h, its namespace)
 *    whose host one of the server's hosts covers, each TCP or HTTP port (not UDP) and each
 *    named subset of the DestinationRule for the host (pilot/cds.h
 *    wf_cds_find_destinationrule): a chain {"filter_chain_match": {"server_names":
 *    ["outbound_.<port>_.<subset>_.<host>"] (subset empty for the service itself),
 *    "application_protocols": ["istio-peer-exchange", "istio"]}, "filters": [RBAC...,
 *    istio.stats, tcp_proxy to "outbound|<port>|<subset>|<host>"]}: the mesh client's own mTLS
 *    passes through to the destination's sidecar, chosen by the SNI its cluster sends.
 *  - a chain whose server names are already all on an earlier chain of the listener is left
 *    out (Istio: "duplicate SNI host names"; Envoy refuses overlapping chains).
 *  RBAC: the gateway's network RBAC filters (pilot/authz.h wf_authz_tcp_filters), passed in.
 *  Left out: transport_socket_connect_timeout (weft-proxy's listener loader has no such field),
 *  destinationSubnets and sourceNamespace of gateway tls matches.
 *
 * Ownership: results are new JSON the caller json_decrefs; inputs are only read. Errors: -1 /
 * NULL on out of memory only. No global state.
 */
#ifndef WF_PILOT_GATEWAY_TCP_H
#define WF_PILOT_GATEWAY_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "model/store.h"

/* Is srv a passthrough server (above)? */
bool wf_gw_passthrough_server(const wf_gateway_server *srv);

/* Is srv a TCP server (above)? */
bool wf_gw_tcp_server(const wf_gateway_server *srv);

typedef struct wf_gw_tcp_in {
    const wf_store *s;
    const wf_resource *gw;
    const wf_gateway_server *srv;
    const char *proxy_ns;       /* the gateway pod's namespace; NULL = none */
    const wf_kvs *proxy_labels; /* NULL = none */
    const char *suffix;         /* cluster DNS suffix (required) */
    const char *root_ns;        /* DestinationRule root namespace; NULL = istio-system */
    const json_t *authz;        /* network RBAC filters to copy first; NULL = none */
} wf_gw_tcp_in;

/* Appends the chains of passthrough or TCP server in->srv to chains (an array, possibly holding
 * other chains of the listener). Returns 0, -1 on OOM. */
int wf_gw_passthrough_chains(const wf_gw_tcp_in *in, json_t *chains);

#endif
