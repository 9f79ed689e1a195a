/*
 * address.h - socket addresses as text, as Envoy prints them (Address::Instance::asString):
 * "ip:port" for IPv4, "[ip]:port" for IPv6.
 */
#ifndef WEFT_PROXY_NET_ADDRESS_H
#define WEFT_PROXY_NET_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct uv_tcp_s; /* uv_tcp_t (uv.h is not included: it would reach every includer of config.h) */

/* Writes sa as "ip:port" (IPv4) or "[ip]:port" (IPv6) into out (cap bytes, NUL-terminated,
 * cut short when cap is too small); "-" for other families. */
void wp_sockaddr_text(const struct sockaddr *sa, char *out, size_t cap);

/* The peer's (peer true) or the local address of t as wp_sockaddr_text writes it. 0, or the
 * libuv error (out is then "-"). */
int wp_tcp_address(const struct uv_tcp_s *t, bool peer, char *out, size_t cap);

#endif
