/*
 * address.c - socket addresses as text (address.h).
 */
#include "proxy/net/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>

#include <uv.h>

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

int wp_tcp_address(const struct uv_tcp_s *t, bool peer, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    int r = peer ? uv_tcp_getpeername(t, (struct sockaddr *)&ss, &len)
                 : uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len);
    if (r != 0) {
        if (cap)
            snprintf(out, cap, "-");
        return r;
    }
    wp_sockaddr_text((const struct sockaddr *)&ss, out, cap);
    return 0;
}
