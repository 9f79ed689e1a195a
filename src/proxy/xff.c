/*
 * xff.c - x-forwarded-for parsing (see xff.h for the Envoy behaviour it follows).
 */
#include "proxy/xff.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

int wp_xff_pick(const char *xff, size_t len, uint32_t skip, char out[WP_XFF_ADDR_MAX])
{
    size_t end = len;
    for (;;) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        if (skip == 0) {
            size_t a = start, b = end;
            while (a < b && is_space(xff[a]))
                a++;
            while (b > a && is_space(xff[b - 1]))
                b--;
            char ip[INET6_ADDRSTRLEN];
            unsigned char bin[sizeof(struct in6_addr)];
            if (b - a == 0 || b - a >= sizeof ip)
                return -1;
            memcpy(ip, xff + a, b - a);
            ip[b - a] = '\0';
            if (inet_pton(AF_INET, ip, bin) == 1)
                snprintf(out, WP_XFF_ADDR_MAX, "%s:0", ip);
            else if (inet_pton(AF_INET6, ip, bin) == 1)
                snprintf(out, WP_XFF_ADDR_MAX, "[%s]:0", ip);
            else
                return -1;
            return 0;
        }
        if (start == 0)
            return -1;
        end = start - 1; /* before the comma */
        skip--;
    }
}

void wp_xff_peer_ip(const char *peer, const char **ip, size_t *ip_len)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
        *ip = peer + 1;
        *ip_len = n - 2;
        return;
    }
    *ip = peer;
    *ip_len = n;
}
