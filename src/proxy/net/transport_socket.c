/*
 * transport_socket.c - what all transport sockets share (transport_socket.h).
 */
#include "proxy/net/transport_socket.h"

const wp_tsock_ssl *wp_tsock_ssl_or_empty(const wp_tsock *t)
{
    static const wp_tsock_ssl none = {"", "", "", "", "", "", "", "", false};
    const wp_tsock_ssl *s = wp_tsock_ssl_info(t);
    return s ? s : &none;
}
