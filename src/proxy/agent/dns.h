/*
 * dns.h - the agent's DNS proxy (Istio's pkg/dns/client LocalDNSServer): DNS over UDP and TCP
 * on the agent's address (Istio's "localhost:15053", where the --redirect-dns iptables rules of
 * `weft-proxy istio-iptables` send the application's port-53 traffic), answering mesh names
 * from the NameTable pushed over NDS (dns_table.h) and forwarding every other query, bytes as
 * they came, to the upstream resolvers.
 *
 * Behaviour, as Istio's agent:
 *  - started when the bootstrap's node metadata has DNS_CAPTURE "true" (pilot-agent's
 *    ISTIO_META_DNS_CAPTURE); address from DNS_PROXY_ADDR (Istio's env; default
 *    127.0.0.1:15053, plus [::1]:15053 when resolv.conf lists an IPv6 nameserver).
 *  - upstreams: the `nameserver` lines of /etc/resolv.conf (port 53) and its last `search` /
 *    `domain` line's domains (dns.ClientConfigFromFile); weft's test hooks
 *    WEFT_DNS_RESOLV_CONF=FILE reads another file, WEFT_DNS_UPSTREAMS="IP:PORT,..." replaces
 *    the nameservers.
 *  - a forwarded query goes over the client's protocol (UDP from a fresh socket, or a new TCP
 *    connection with the 2-byte length prefix) to the first upstream; no reply within the
 *    timeout (Istio's dns.Client 5 s) or an error: the next one; none left: SERVFAIL. A UDP
 *    reply must come from the upstream and carry the query's id. The reply is re-truncated to
 *    the client's size (dns_table.h).
 *  - TCP clients may send several length-prefixed queries on one connection; answers go back
 *    as they complete. Connections idle for 30 s are closed.
 *  - nothing blocks the loop; at most 1024 forwards are in flight (dns_internal.h
 * WP_DNS_MAX_FORWARDS) (more: SERVFAIL at once). Logs (logger "dns"): debug "response for hostname
 * %q not found in dns proxy, querying upstream" and "upstream failure: ..." (info), as Istio's.
 *
 * Threads and ownership: everything on the loop given to wp_dns_start. wp_dns_update copies
 * what it needs. wp_dns_close frees from libuv close callbacks: run the loop afterwards.
 */
#ifndef WEFT_PROXY_DNS_H
#define WEFT_PROXY_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "core/strbuf.h"

#define WP_DNS_DEFAULT_ADDR        "127.0.0.1:15053"
#define WP_DNS_UPSTREAM_TIMEOUT_MS 5000u

typedef struct wp_dns wp_dns;

typedef struct wp_dns_opts {
    const char *address;     /* "IP:PORT" / "[IPv6]:PORT"; NULL = env DNS_PROXY_ADDR, else
                              * WP_DNS_DEFAULT_ADDR (and ::1 as above) */
    const char *resolv_conf; /* NULL = env WEFT_DNS_RESOLV_CONF, else /etc/resolv.conf */
    const char *upstreams;   /* "IP:PORT,..." NULL = env WEFT_DNS_UPSTREAMS, else resolv.conf */
    const char *ns;          /* the proxy's namespace (short names); NULL = none */
    const char *domain;      /* the proxy's DNS domain ("<ns>.svc.cluster.local" or
                              * "svc.cluster.local"); NULL = "svc.cluster.local" */
    uint64_t upstream_timeout_ms; /* 0 = WP_DNS_UPSTREAM_TIMEOUT_MS */
} wp_dns_opts;

/* Whether the bootstrap node (JSON, may be NULL) asks for the DNS proxy: metadata DNS_CAPTURE
 * "true" (any case), pilot-agent's ISTIO_META_DNS_CAPTURE. */
bool wp_dns_capture_enabled(const json_t *node);

/* The proxy's namespace and DNS domain from the bootstrap node (JSON): metadata NAMESPACE,
 * else the id's "<pod>.<namespace>" or Istio's "type~ip~pod.ns~ns.svc.cluster.local"; the
 * domain is the Istio id's last part, else "<ns>.svc.cluster.local". Empty strings when
 * unknown. */
void wp_dns_scope_from_node(const json_t *node, char *ns, size_t ns_cap, char *domain,
                            size_t domain_cap);

/* Reads the resolver configuration and binds UDP and TCP on the address(es). Returns the
 * server, or NULL with a message in err ("cannot listen on DNS address 127.0.0.1:15053:
 * address already in use", "resolv.conf FILE: no nameserver"). */
wp_dns *wp_dns_start(uv_loop_t *loop, const wp_dns_opts *opts, wf_strbuf *err);

/* A NameTable arrived (NDS): the lookup table is rebuilt from it. 0, or -1 on OOM (the
 * previous table stays). */
int wp_dns_update(wp_dns *d, const json_t *name_table);

/* The NameTable last applied (borrowed), NULL before any: pilot-agent's /debug/ndsz. */
const json_t *wp_dns_name_table(const wp_dns *d);

/* The first bound port (tests bind port 0). */
int wp_dns_port(const wp_dns *d);

/* Stops and frees (after the loop ran the close callbacks). NULL is ignored. */
void wp_dns_close(wp_dns *d);

#endif
