/*
 * gateway_hosts.h - which VirtualServices bind a Gateway and how their hosts meet its
 * servers' hosts, shared by the HTTP (gateway.c) and the TLS passthrough / TCP (gateway_tcp.c)
 * listeners of a gateway. Istio's gateway.go and host.Name (SubsetOf), as istiod reads them.
 * Pure: strings are borrowed.
 */
#ifndef WF_PILOT_GATEWAY_HOSTS_H
#define WF_PILOT_GATEWAY_HOSTS_H

#include <stdbool.h>

#include "model/store.h"

/* Does the VirtualService's `gateways` name gw ("name" in the VirtualService's namespace, or
 * "ns/name")? */
bool wf_gw_vs_binds(const wf_resource *vs, const wf_resource *gw);

/* host.Name.SubsetOf: is host a covered by b ("*", "*.example.com" or an exact name)? */
bool wf_gw_host_subset(const char *a, const char *b);

/* A server host h ("host", or "ns/host" with "*" any namespace and "." the gateway's own) as
 * seen from a VirtualService in vs_ns: the host, or NULL when that VirtualService may not use
 * it. */
const char *wf_gw_server_host(const char *h, const char *vs_ns, const char *gw_ns);

#endif
