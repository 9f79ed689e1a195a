/*
 * address.h - socket addresses as text, as Envoy prints them (Address::Instance::asString):
 * "ip:port" for IPv4, "[ip]:port" for IPv6.
 */
#ifndef WEFT_PROXY_NET_ADDRESS_H
#define WEFT_PROXY_NET_ADDRESS_H

#include <stddef.h>
#include <sys/socket.h>

/* Writes sa as "ip:port" (IPv4) or "[ip]:port" (IPv6) into out (cap bytes, NUL-terminated,
 * cut short when cap is too small); "-" for other families. */
void wp_sockaddr_text(const struct sockaddr *sa, char *out, size_t cap);

#endif
