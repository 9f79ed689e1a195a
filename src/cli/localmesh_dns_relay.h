/*
 * localmesh_dns_relay.h - a UDP DNS relay on a libuv loop: what a Kubernetes node's DNS
 * (kube-dns' Service) is to pods, for the local mesh's pod network. Pods in their own network
 * namespaces cannot reach the host's nameserver (a loopback resolver such as 127.0.0.53, or
 * one behind the host's routes, which the pod network does not forward to), so names outside
 * the mesh failed only after the resolver's timeouts. The supervisor listens on the host
 * link's IP:53 and relays each query to the host's nameserver; the pods' DNS proxies use it
 * as their upstream (localmesh_plan.c). TCP 53 goes through the TCP forwarder
 * (localmesh_fwd.h).
 *
 * Each query (at most 512 in flight; more are dropped, as a busy resolver drops them) gets
 * its own socket to the upstream; the first answer goes back to the querier from the relay's
 * address; a query with no answer within 5 s is forgotten (the client retries).
 *
 * Ownership: wf_lm_dns_relay_start allocates; wf_lm_dns_relay_close closes every handle and
 * frees the relay once libuv has closed them (run the loop after).
 */
#ifndef WF_CLI_LOCALMESH_DNS_RELAY_H
#define WF_CLI_LOCALMESH_DNS_RELAY_H

#include <uv.h>

#include "core/strbuf.h"

typedef struct wf_lm_dns_relay wf_lm_dns_relay;

/* Listen on UDP listen_ip:listen_port, relaying to to_ip:to_port (IPv4). Returns 0, or -1
 * with err naming the address. */
int wf_lm_dns_relay_start(uv_loop_t *loop, const char *listen_ip, int listen_port,
                          const char *to_ip, int to_port, wf_lm_dns_relay **out, wf_strbuf *err);

/* Stop, drop the queries in flight, free when closed. NULL is ignored. */
void wf_lm_dns_relay_close(wf_lm_dns_relay *r);

/* The first IPv4 `nameserver` of a resolv.conf file into ip (cap bytes). Returns 0, or -1
 * when the file cannot be read or lists none. */
int wf_lm_resolv_first_ipv4(const char *path, char *ip, size_t cap);

#endif
