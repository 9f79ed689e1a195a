/*
 * original_dst.c - envoy.filters.listener.original_dst (original_dst.h).
 */
#include "proxy/filters/listener/original_dst.h"

#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h */
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80 /* linux/netfilter_ipv6/ip6_tables.h */
#endif

bool wp_original_dst_get(int fd, int family, wp_lf_addr *out)
{
    wp_lf_addr a;
    memset(&a, 0, sizeof a);
    socklen_t len;
    int r = -1;
    if (fd < 0)
        return false;
    if (family == AF_INET) {
        len = sizeof a.in;
        r = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &a.in, &len);
    } else if (family == AF_INET6) {
        len = sizeof a.in6;
        r = getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &a.in6, &len);
    }
    if (r != 0 || a.sa.sa_family != family)
        return false;
    *out = a;
    return true;
}

static wp_lf_status on_accept(const void *self, wp_lf_callbacks *cb)
{
    (void)self;
    wp_lf_socket *s = cb->socket;
    wp_lf_addr dst;
    if (wp_original_dst_get(s->fd, s->local.sa.sa_family, &dst))
        wp_lf_restore_local_address(s, &dst.sa);
    return WP_LF_CONTINUE;
}

const wp_listener_filter_ops wp_original_dst_ops = {
    .name = WP_ORIGINAL_DST_NAME,
    .on_accept = on_accept,
};
