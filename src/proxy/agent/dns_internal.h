/*
 * dns_internal.h - what the DNS proxy's files share (dns.h is the API): the server's state,
 * TCP client connections, replies, forwarding (dns_forward.c) and the resolver configuration
 * (dns_conf.c). Not a public API. Everything runs on the server's loop thread.
 */
#ifndef WEFT_PROXY_DNS_INTERNAL_H
#define WEFT_PROXY_DNS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "core/strbuf.h"
#include "proxy/agent/dns.h"
#include "proxy/agent/dns_table.h"

#define WP_DNS_MAX_FORWARDS  1024u /* forwards in flight (dns.h) */
#define WP_DNS_MAX_UPSTREAMS 8u    /* upstream resolvers kept */
#define MAX_SEARCH           6
#define TCP_IDLE_MS          30000u
#define TCP_MSG_MAX          (2u + 65535u)
#define MAX_LISTEN           2

typedef struct tcp_client tcp_client;
typedef struct fwd fwd;

struct wp_dns {
    uv_loop_t *loop;
    wp_dns_table *table;
    char *ns, *domain;
    char *search[MAX_SEARCH];
    size_t nsearch;
    struct sockaddr_storage up[WP_DNS_MAX_UPSTREAMS];
    size_t nup;
    uint64_t timeout_ms;
    uv_udp_t udp[MAX_LISTEN];
    uv_tcp_t tcp[MAX_LISTEN];
    size_t nlisten;
    int port;
    size_t live; /* listener handles, clients and forwards not yet freed */
    size_t inflight;
    bool closing;
    tcp_client *clients;
    fwd *fwds;
    uint8_t rbuf[65536]; /* UDP receive buffer (one loop thread) */
};

struct tcp_client {
    uv_tcp_t h;
    uv_timer_t idle;
    wp_dns *d;
    uint8_t *buf;
    size_t len;
    int refs; /* handles open + forwards + writes pending */
    bool closed;
    tcp_client *next, *prev;
};

/* dns_io.c: one live object less (listener handle, client, forward); frees d when closing and
 * none is left. */
void dns_unlive(wp_dns *d);
/* dns_io.c: replies. msg is taken over (freed). A TCP client gets the length prefix; a UDP
 * reply that cannot be sent at once is dropped (clients retry). */
void dns_tc_send(tcp_client *tc, uint8_t *msg, size_t len);
void dns_tc_unref(tcp_client *tc);
/* dns_io.c: closes a TCP client's handles (its references go as they close). */
void dns_tc_close(tcp_client *tc);
void dns_udp_reply(uv_udp_t *srv, const struct sockaddr *to, uint8_t *msg, size_t len);

/* dns_forward.c: forwards query q (copied) upstream for a UDP client (srv, client) or a TCP
 * one (tc, referenced until answered); SERVFAIL at once when it cannot. */
void dns_forward(wp_dns *d, const uint8_t *q, size_t len, uv_udp_t *srv,
                 const struct sockaddr *client, tcp_client *tc, const char *qname);
/* dns_forward.c: ends every forward in flight without answering (the server closes). */
void dns_forward_abort_all(wp_dns *d);

/* dns_conf.c: the resolver configuration into d. read: `nameserver` (when servers; *v6 set
 * when one is IPv6) and `search`/`domain` lines of path; parse: "IP:PORT,...". 0 or -1 with
 * err. */
int dns_read_resolv_conf(wp_dns *d, const char *path, bool servers, bool *v6, wf_strbuf *err);
int dns_parse_upstreams(wp_dns *d, const char *list, wf_strbuf *err);

#endif
