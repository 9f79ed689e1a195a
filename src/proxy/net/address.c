/*
 * address.c - socket addresses as text (address.h).
 */
#include "proxy/net/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>

void wp_sockaddr_text(const struct sockaddr *sa, char *out, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        snprintf(out, cap, "%s:%u", ip, ntohs(a->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        snprintf(out, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
    } else {
        snprintf(out, cap, "-");
    }
}
