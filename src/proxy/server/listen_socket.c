/*
 * listen_socket.c - a listener's listening socket (listen_socket.h).
 */
#include "proxy/server/listen_socket.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int wp_listen_socket(const wp_listener *l, wf_strbuf *err)
{
    int fd = socket(l->addr.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        wf_strbuf_printf(err, "listener %s: socket: %s", l->name, strerror(errno));
        return -1;
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
        (l->addr.sa.ss_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0)) {
        wf_strbuf_printf(err, "listener %s: setsockopt: %s", l->name, strerror(errno));
        close(fd);
        return -1;
    }
    if (bind(fd, (const struct sockaddr *)&l->addr.sa, l->addr.len) != 0) {
        wf_strbuf_printf(err, "listener %s: cannot bind '%s': %s", l->name, l->addr.text,
                         strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}
