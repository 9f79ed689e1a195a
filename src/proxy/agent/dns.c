/*
 * dns.c - the agent's DNS proxy server: UDP and TCP listeners, TCP client connections,
 * answers from the lookup table (dns_table.h), the server's life. Forwarding is in
 * dns_forward.c, replies and the objects' lifetimes in dns_io.c (below both), the
 * configuration in dns_conf.c. See dns.h.
 */
#include "proxy/agent/dns.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/agent/dns_internal.h"
#include "proxy/agent/status.h"

/* ---- lifetime ---- */

static void on_listener_closed(uv_handle_t *h)
{
    dns_unlive(h->data);
}

/* ---- queries ---- */

static void handle_query(wp_dns *d, const uint8_t *q, size_t len, uv_udp_t *srv,
                         const struct sockaddr *client, tcp_client *tc)
{
    uint8_t *out = NULL;
    size_t n = 0;
    char qname[256];
    int rc = wp_dns_answer(d->table, q, len, tc != NULL, &out, &n, qname, sizeof qname);
    if (rc == WP_DNS_ANSWER) {
        WF_LOG(WF_LC_dns, WF_LOG_DEBUG, "response for hostname \"%s\" (found=true)", qname);
        if (tc)
            dns_tc_send(tc, out, n);
        else
            dns_udp_reply(srv, client, out, n);
    } else if (rc == WP_DNS_FORWARD) {
        dns_forward(d, q, len, srv, client, tc, qname);
    }
}

static void on_udp_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    wp_dns *d = h->data;
    (void)hint;
    *b = uv_buf_init((char *)d->rbuf, sizeof d->rbuf);
}

static void on_udp_query(uv_udp_t *h, ssize_t n, const uv_buf_t *b, const struct sockaddr *from,
                         unsigned flags)
{
    (void)flags;
    if (n <= 0 || !from)
        return;
    handle_query(h->data, (const uint8_t *)b->base, (size_t)n, h, from, NULL);
}

static void on_tc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    tcp_client *tc = h->data;
    (void)hint;
    if (!tc->buf)
        tc->buf = malloc(TCP_MSG_MAX);
    *b = tc->buf ? uv_buf_init((char *)tc->buf + tc->len, (unsigned)(TCP_MSG_MAX - tc->len))
                 : uv_buf_init(NULL, 0);
}

static void on_tc_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    tcp_client *tc = s->data;
    (void)b;
    if (n < 0) {
        dns_tc_close(tc);
        return;
    }
    uv_timer_again(&tc->idle);
    tc->len += (size_t)n;
    tc->refs++; /* queries below may close it */
    while (!tc->closed && tc->len >= 2) {
        size_t m = (size_t)tc->buf[0] << 8 | tc->buf[1];
        if (tc->len < m + 2)
            break;
        handle_query(tc->d, tc->buf + 2, m, NULL, NULL, tc);
        memmove(tc->buf, tc->buf + m + 2, tc->len - m - 2);
        tc->len -= m + 2;
    }
    dns_tc_unref(tc);
}

static void on_tc_idle(uv_timer_t *t)
{
    dns_tc_close(t->data);
}

static void on_tcp_conn(uv_stream_t *srv, int status)
{
    wp_dns *d = srv->data;
    if (status < 0 || d->closing)
        return;
    tcp_client *tc = calloc(1, sizeof *tc);
    if (!tc)
        return;
    tc->d = d;
    if (uv_tcp_init(d->loop, &tc->h) != 0) {
        free(tc);
        return;
    }
    tc->h.data = tc;
    tc->refs = 2;
    d->live++;
    tc->next = d->clients;
    if (d->clients)
        d->clients->prev = tc;
    d->clients = tc;
    uv_timer_init(d->loop, &tc->idle);
    tc->idle.data = tc;
    if (uv_accept(srv, (uv_stream_t *)&tc->h) != 0 ||
        uv_read_start((uv_stream_t *)&tc->h, on_tc_alloc, on_tc_read) != 0 ||
        uv_timer_start(&tc->idle, on_tc_idle, TCP_IDLE_MS, TCP_IDLE_MS) != 0)
        dns_tc_close(tc);
}

static int listen_on(wp_dns *d, const char *addr, wf_strbuf *err)
{
    struct sockaddr_storage sa;
    if (wp_status_parse_address(addr, &sa, err) != 0)
        return -1;
    size_t i = d->nlisten;
    uv_udp_t *u = &d->udp[i];
    uv_tcp_t *t = &d->tcp[i];
    int rc = uv_udp_init(d->loop, u);
    if (rc == 0) {
        u->data = d;
        d->live++;
        rc = uv_tcp_init(d->loop, t);
        if (rc == 0) {
            t->data = d;
            d->live++;
            d->nlisten++;
        } else {
            uv_close((uv_handle_t *)u, on_listener_closed);
        }
    }
    if (rc == 0 && d->port) { /* port 0 picked by UDP: TCP takes the same */
        if (sa.ss_family == AF_INET)
            ((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)d->port);
        else
            ((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)d->port);
    }
    if (rc == 0)
        rc = uv_udp_bind(u, (const struct sockaddr *)&sa, 0);
    if (rc == 0 && !d->port) {
        struct sockaddr_storage b;
        int bl = sizeof b;
        uv_udp_getsockname(u, (struct sockaddr *)&b, &bl);
        d->port = ntohs(b.ss_family == AF_INET ? ((struct sockaddr_in *)&b)->sin_port
                                               : ((struct sockaddr_in6 *)&b)->sin6_port);
        if (sa.ss_family == AF_INET)
            ((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)d->port);
        else
            ((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)d->port);
    }
    if (rc == 0)
        rc = uv_udp_recv_start(u, on_udp_alloc, on_udp_query);
    if (rc == 0)
        rc = uv_tcp_bind(t, (const struct sockaddr *)&sa, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)t, 128, on_tcp_conn);
    if (rc != 0)
        wf_strbuf_printf(err, "cannot listen on DNS address %s: %s", addr, uv_strerror(rc));
    return rc == 0 ? 0 : -1;
}

static const char *env_or(const char *v, const char *env, const char *def)
{
    const char *e = v ? v : getenv(env);
    return e && *e ? e : def;
}

wp_dns *wp_dns_start(uv_loop_t *loop, const wp_dns_opts *o, wf_strbuf *err)
{
    wp_dns_opts none = {0};
    o = o ? o : &none;
    wp_dns *d = calloc(1, sizeof *d);
    if (!d) {
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    d->loop = loop;
    d->live = 1; /* wp_dns_close's */
    d->timeout_ms = o->upstream_timeout_ms ? o->upstream_timeout_ms : WP_DNS_UPSTREAM_TIMEOUT_MS;
    d->ns = o->ns ? strdup(o->ns) : NULL;
    d->domain = strdup(o->domain && *o->domain ? o->domain : "svc.cluster.local");
    const char *rc_path = env_or(o->resolv_conf, "WEFT_DNS_RESOLV_CONF", "/etc/resolv.conf");
    const char *ups = env_or(o->upstreams, "WEFT_DNS_UPSTREAMS", NULL);
    const char *addr = env_or(o->address, "DNS_PROXY_ADDR", NULL);
    bool v6 = false;
    int rc = d->domain ? 0 : -1;
    if (rc == 0)
        rc = dns_read_resolv_conf(d, rc_path, ups == NULL, &v6, err);
    if (rc == 0 && ups)
        rc = dns_parse_upstreams(d, ups, err);
    if (rc == 0 && d->nup == 0)
        WF_LOG(WF_LC_dns, WF_LOG_WARN, "no upstream nameserver in %s: unknown names get SERVFAIL",
               rc_path);
    if (rc == 0)
        rc = listen_on(d, addr ? addr : WP_DNS_DEFAULT_ADDR, err);
    if (rc == 0 && !addr && v6) {
        char a6[32];
        snprintf(a6, sizeof a6, "[::1]:%d", d->port);
        if (listen_on(d, a6, err) != 0) { /* no IPv6 loopback: IPv4 only */
            WF_LOG(WF_LC_dns, WF_LOG_WARN, "%s", wf_strbuf_cstr(err));
            wf_strbuf_reset(err);
        }
    }
    if (rc != 0) {
        wp_dns_close(d);
        return NULL;
    }
    WF_LOG(WF_LC_dns, WF_LOG_INFO,
           "Starting local DNS server on port %d (%zu upstreams, %zu search "
           "domains)",
           d->port, d->nup, d->nsearch);
    return d;
}

int wp_dns_update(wp_dns *d, const json_t *name_table)
{
    if (!d)
        return -1;
    wp_dns_scope sc = {.ns = d->ns,
                       .domain = d->domain,
                       .search = (const char *const *)d->search,
                       .nsearch = d->nsearch};
    wp_dns_table *t = wp_dns_table_new(name_table, &sc);
    if (!t)
        return -1;
    wp_dns_table_free(d->table);
    d->table = t;
    WF_LOG(WF_LC_dns, WF_LOG_DEBUG, "updated lookup table with %zu hosts", wp_dns_table_size(t));
    return 0;
}

const json_t *wp_dns_name_table(const wp_dns *d)
{
    return d ? wp_dns_table_name_table(d->table) : NULL;
}

int wp_dns_port(const wp_dns *d)
{
    return d ? d->port : 0;
}

void wp_dns_close(wp_dns *d)
{
    if (!d || d->closing)
        return;
    d->closing = true;
    for (size_t i = 0; i < d->nlisten; i++) {
        uv_close((uv_handle_t *)&d->udp[i], on_listener_closed);
        uv_close((uv_handle_t *)&d->tcp[i], on_listener_closed);
    }
    dns_forward_abort_all(d);
    for (tcp_client *tc = d->clients; tc; tc = tc->next)
        dns_tc_close(tc);
    dns_unlive(d);
}
