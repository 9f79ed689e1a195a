/*
 * xff.h - x-forwarded-for handling of the HTTP connection manager, as Envoy's
 * ConnectionManagerUtility::mutateRequestHeaders and Utility::getLastAddressFromXFF do
 * (Envoy docs: "x-forwarded-for" in the HTTP header manipulation page, and the HCM's
 * use_remote_address / xff_num_trusted_hops):
 *
 *  - use_remote_address false (Istio's sidecars): the downstream remote address (what
 *    %DOWNSTREAM_REMOTE_ADDRESS% logs) is the address xff_num_trusted_hops entries from the
 *    right of x-forwarded-for, with port 0, when that entry is a valid IP; otherwise the
 *    connection's peer. The header is forwarded unchanged.
 *  - use_remote_address true (Istio's gateways): the connection's peer address is appended
 *    to x-forwarded-for (created when absent); the downstream remote address is the peer,
 *    or, with xff_num_trusted_hops N > 0, the entry N-1 from the right of the header as it
 *    arrived.
 */
#ifndef WEFT_PROXY_XFF_H
#define WEFT_PROXY_XFF_H

#include <stddef.h>
#include <stdint.h>

/* Bytes an address written by wp_xff_pick needs ("[" v6 "]:0" and the NUL). */
#define WP_XFF_ADDR_MAX 56

/* The entry `skip` places from the right of the comma-separated list xff[0..len) (0 = the
 * last one), trimmed of spaces, written to out as "ip:0" ("[v6]:0" for IPv6) and
 * NUL-terminated. out must hold WP_XFF_ADDR_MAX bytes. Returns 0, or -1 when the list has
 * fewer entries or that entry is not a valid IPv4/IPv6 address (out untouched). */
int wp_xff_pick(const char *xff, size_t len, uint32_t skip, char out[WP_XFF_ADDR_MAX]);

/* The IP of a peer address "ip:port" or "[v6]:port" as x-forwarded-for carries it (no port,
 * no brackets): *ip points into peer, *ip_len its bytes. */
void wp_xff_peer_ip(const char *peer, const char **ip, size_t *ip_len);

#endif
