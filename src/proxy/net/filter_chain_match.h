/*
 * filter_chain_match.h - Envoy's filter chain match (envoy.config.listener.v3.FilterChainMatch):
 * which of a listener's filter chains serves a new connection.
 *
 * Inputs: the matchers of a listener's chains (decoded from the bootstrap, read-only, owned by
 * the config snapshot) and what is known of the connection (wp_fcm_input: its addresses as
 * the socket gives them, and what listener filters found: requested server name, transport
 * protocol, application protocols). Output: the index of the chain, or -1 (the caller then
 * uses the listener's default_filter_chain, or closes the connection and counts
 * listener.<address>.no_filter_chain_match, as Envoy's ActiveStreamListenerBase does).
 *
 * Behaviour follows Envoy's FilterChainManagerImpl::findFilterChain
 * (source/common/listener_manager/filter_chain_manager_impl.cc) and the FilterChainMatch docs:
 * the criteria are decided one after the other in this order,
 *   destination_port, prefix_ranges (destination IP), server_names, transport_protocol,
 *   application_protocols, direct_source_prefix_ranges, source_type, source_prefix_ranges,
 *   source_ports,
 * and at each step the most specific value that any remaining chain names and the connection
 * has wins (an exact port before "any port"; the longest matching prefix, a chain without
 * ranges counting as 0.0.0.0/0 and ::/0; an exact server name, then the wildcards "*.b.c" from
 * the longest suffix down, then chains without server_names; the detected transport protocol,
 * then chains without one; the first requested application protocol some chain names, then
 * chains without any; SAME_IP_OR_LOOPBACK for a local peer or EXTERNAL for another, else ANY;
 * an exact source port, then chains without source_ports). Only the chains that chose that
 * value go on to the next criterion: there is no going back, so a connection whose exact
 * destination port has chains of which none matches further gets no chain (-1), even if a
 * chain for any port would have matched (Envoy: "instead of matching catch-all port 0, the
 * fallback filter chain is returned").
 *
 * Config-time checks (wp_fcm_check) follow FilterChainManagerImpl too: two chains with equal
 * matchers, or whose matchers overlap (every criterion shares a value, "any" being its own
 * value), are an error; a server name with '*' anywhere but a leading "*." is refused.
 *
 * wp_fcm_select allocates nothing and compares strings only for the chains that name server
 * names, transport or application protocols; a listener with one chain without a match pays
 * one test.
 */
#ifndef WEFT_PROXY_NET_FILTER_CHAIN_MATCH_H
#define WEFT_PROXY_NET_FILTER_CHAIN_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* An address prefix (core.v3.CidrRange): family AF_INET or AF_INET6, the address with the
 * bits past len cleared, len 0..32 / 0..128. */
typedef struct {
    uint8_t family;
    uint8_t len;
    uint8_t addr[16];
} wp_cidr;

/* FilterChainMatch.ConnectionSourceType */
typedef enum {
    WP_FCM_SOURCE_ANY = 0,
    WP_FCM_SOURCE_SAME_IP_OR_LOOPBACK = 1,
    WP_FCM_SOURCE_EXTERNAL = 2,
} wp_fcm_source_type;

/* One chain's filter_chain_match; empty lists / 0 / NULL mean "any". Strings lower-case
 * (server names) or as written; arrays owned by the snapshot. */
typedef struct wp_fcm {
    uint32_t destination_port;
    const wp_cidr *prefix_ranges;
    size_t nprefix_ranges;
    const char *const *server_names; /* exact "a.b.c" or wildcard "*.b.c" */
    size_t nserver_names;
    const char *transport_protocol; /* NULL = any ("raw_buffer", "tls") */
    const char *const *application_protocols;
    size_t napplication_protocols;
    const wp_cidr *direct_source_prefix_ranges;
    size_t ndirect_source_prefix_ranges;
    wp_fcm_source_type source_type;
    const wp_cidr *source_prefix_ranges;
    size_t nsource_prefix_ranges;
    const uint32_t *source_ports;
    size_t nsource_ports;
} wp_fcm;

/* What the connection offers to the match. Addresses are AF_INET / AF_INET6 sockaddrs; any
 * other family (or NULL) matches only chains without ranges on that address, as Envoy's
 * fake 255.255.255.255 address does. server_name lower-case, "" when none;
 * transport_protocol "raw_buffer" unless a listener filter detected another (Envoy's
 * ActiveTcpSocket::newConnection default). */
typedef struct {
    const struct sockaddr *local;         /* destination (after original_dst, when restored) */
    const struct sockaddr *remote;        /* source (a listener filter may override it) */
    const struct sockaddr *direct_remote; /* the peer of the socket */
    const char *server_name;
    const char *transport_protocol;
    const char *const *application_protocols;
    size_t napplication_protocols;
} wp_fcm_input;

/* Parses "10.0.0.0" with prefix_len (Envoy's CidrRange {address_prefix, prefix_len}) into
 * *out, clearing the host bits (Envoy prints "10.1.2.3/8" as "10.0.0.0/8"). Returns 0, or -1
 * for an address that is not an IP or a length past the family's width. */
int wp_cidr_parse(const char *address_prefix, uint32_t prefix_len, wp_cidr *out);
/* "10.0.0.0/8" / "2001:db8::/32" into out (cap bytes, NUL-terminated). */
void wp_cidr_text(const wp_cidr *c, char *out, size_t cap);
/* True when sa (AF_INET / AF_INET6) lies inside c. */
bool wp_cidr_contains(const wp_cidr *c, const struct sockaddr *sa);

/* The chain for in among the n matchers m[0..n-1] (NULL entries are not allowed), or -1 when
 * none matches. Never allocates. */
int wp_fcm_select(const wp_fcm *const *m, size_t n, const wp_fcm_input *in);

/* True when m has no criterion (matches every connection). */
bool wp_fcm_is_empty(const wp_fcm *m);

/* Config-time checks over n matchers: 0 when they are fine; else fills *first and *second
 * (first < second) with the pair that collides and returns WP_FCM_SAME (equal matchers:
 * Envoy's "filter chain 'B' has the same matching rules defined as 'A'") or WP_FCM_OVERLAP
 * (Envoy's "multiple filter chains with overlapping matching rules are defined"). */
enum { WP_FCM_OK = 0, WP_FCM_SAME = 1, WP_FCM_OVERLAP = 2 };
int wp_fcm_check(const wp_fcm *const *m, size_t n, size_t *first, size_t *second);

/* True when a server_names entry is acceptable: no '*', or a leading "*." followed by no
 * other '*' (Envoy refuses "partial wildcards are not supported in \"server_names\""). */
bool wp_fcm_server_name_ok(const char *name);

#endif
