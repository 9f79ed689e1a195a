/*
 * xff.c - x-forwarded-for parsing (see xff.h for the Envoy behaviour it follows).
 */
#include "proxy/http/xff.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

static bool is_xff(const h1_str *name)
{
    return name->len == 15 && strncasecmp(name->p, "x-forwarded-for", 15) == 0;
}

/* The values of the x-forwarded-for fields from hdrs[first] on, joined with "," into out. */
static void join_values(const h1_header *hdrs, size_t first, size_t n, wf_strbuf *out)
{
    wf_strbuf_reset(out);
    for (size_t i = first; i < n; i++) {
        const h1_str *v = &hdrs[i].value;
        if (!is_xff(&hdrs[i].name) || v->len == 0)
            continue;
        if (out->len)
            wf_strbuf_putc(out, ',');
        wf_strbuf_append(out, v->p, v->len);
    }
}

int wp_xff_join(h1_header *hdrs, size_t *n, wf_strbuf *out)
{
    size_t first = 0, count = 0;
    for (size_t i = 0; i < *n; i++)
        if (is_xff(&hdrs[i].name) && count++ == 0)
            first = i;
    if (count < 2)
        return count ? (int)first : -1;
    join_values(hdrs, first, *n, out);
    if (wf_strbuf_failed(out))
        return -2;
    size_t kept = first + 1;
    for (size_t i = first + 1; i < *n; i++)
        if (!is_xff(&hdrs[i].name))
            hdrs[kept++] = hdrs[i];
    *n = kept;
    hdrs[first].value = (h1_str){out->len ? out->data : "", out->len};
    return (int)first;
}

bool wp_xff_is_internal(const char *ip, size_t len)
{
    char text[INET6_ADDRSTRLEN];
    unsigned char a[sizeof(struct in6_addr)];
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, ip, len);
    text[len] = '\0';
    if (inet_pton(AF_INET, text, a) == 1)
        return a[0] == 10 || (a[0] == 172 && a[1] >= 16 && a[1] <= 31) ||
               (a[0] == 192 && a[1] == 168) || (a[0] == 127 && a[1] == 0 && a[2] == 0 && a[3] == 1);
    if (inet_pton(AF_INET6, text, a) != 1)
        return false;
    static const unsigned char loopback[16] = {[15] = 1};
    return a[0] == 0xfd || memcmp(a, loopback, 16) == 0;
}

bool wp_xff_internal_request(bool use_remote_address, uint32_t xff_num_trusted_hops,
                             const h1_str *xff, const char *peer_ip, size_t peer_ip_len)
{
    if (use_remote_address) /* the peer, and only when no x-forwarded-for arrived */
        return !xff && wp_xff_is_internal(peer_ip, peer_ip_len);
    /* getLastAddressFromXFF's single_address: one entry and nothing skipped */
    if (!xff || xff_num_trusted_hops || xff->len == 0 || memchr(xff->p, ',', xff->len))
        return false;
    size_t a = 0, b = xff->len;
    while (a < b && is_space(xff->p[a]))
        a++;
    while (b > a && is_space(xff->p[b - 1]))
        b--;
    return wp_xff_is_internal(xff->p + a, b - a);
}
