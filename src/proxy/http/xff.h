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
 *  - repeated x-forwarded-for fields are one header: Envoy keeps x-forwarded-for as an inline
 *    header, so a repeat is appended to the first with "," when the request is decoded
 *    (HeaderMapImpl::insertByKey, delimiterByHeader; appendToHeader skips empty values).
 *  - internal requests (ConnectionManagerUtility::mutateRequestHeaders): with
 *    use_remote_address, a request that arrived without x-forwarded-for from an internal peer;
 *    without it, a request whose x-forwarded-for holds exactly one entry (and
 *    xff_num_trusted_hops 0) that is an internal address. Internal addresses are
 *    Network::Utility::isInternalAddress's: 10/8, 172.16/12, 192.168/16, 127.0.0.1, fd00::/8
 *    and ::1.
 */
#ifndef WEFT_PROXY_XFF_H
#define WEFT_PROXY_XFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "http/h1_parser.h"

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

/* Joins every x-forwarded-for field of hdrs[0..*n) into the first one, as Envoy's header map
 * does: with two or more fields, out (reset first) gets the non-empty values joined with ","
 * and the first field's value points at it; the others are removed from the array (the
 * remaining fields keep their order, *n shrinks). One field or none: nothing changes. Returns
 * the index of the (first) field, -1 when there is none, or -2 when out of memory (out is
 * failed; the array is untouched). */
int wp_xff_join(h1_header *hdrs, size_t *n, wf_strbuf *out);

/* Network::Utility::isInternalAddress for the text ip[0..len) (no port, no brackets): false
 * for anything that is not an IPv4/IPv6 address. */
bool wp_xff_is_internal(const char *ip, size_t len);

/* Whether the request is internal, as mutateRequestHeaders decides (see above): xff is the
 * x-forwarded-for as it arrived (joined; NULL when absent) and peer_ip the connection's peer
 * IP. */
bool wp_xff_internal_request(bool use_remote_address, uint32_t xff_num_trusted_hops,
                             const h1_str *xff, const char *peer_ip, size_t peer_ip_len);

#endif
