/*
 * dns.c - the agent's DNS proxy server: UDP and TCP listeners, upstream forwarding with
 * timeouts, the resolver configuration. See dns.h; answers come from dns_table.h.
 */
#include "proxy/agent/dns.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "proxy/agent/dns_table.h"
#include "proxy/agent/status.h"

#define MAX_SEARCH  6
#define TCP_IDLE_MS 30000u
#define TCP_MSG_MAX (2u + 65535u)
#define MAX_LISTEN  2

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

/* One try at one upstream; freed from its handle's close callback. */
typedef struct attempt {
    union {
        uv_udp_t udp;
        uv_tcp_t tcp;
        uv_handle_t any;
    } h;
    fwd *f;
    bool tcp;
    uv_connect_t conn;
    uv_write_t wr;
    uv_udp_send_t us;
    uint8_t pfx[2];
    uint8_t *rbuf;
    size_t rlen, rcap;
} attempt;

struct fwd {
    wp_dns *d;
    uint8_t *q;
    size_t qlen;
    bool tcp, finished;
    size_t next_up;
    attempt *cur;
    int pending; /* the timer and attempts not yet closed */
    uv_timer_t timer;
    uv_udp_t *srv; /* UDP: the listener and the client's address */
    struct sockaddr_storage client;
    tcp_client *tc; /* TCP: the client connection (a reference) */
    char qname[256];
    fwd *next, *prev;
};

/* ---- lifetime ---- */

static void dns_unlive(wp_dns *d)
{
    if (--d->live == 0 && d->closing) {
        wp_dns_table_free(d->table);
        free(d->ns);
        free(d->domain);
        for (size_t i = 0; i < d->nsearch; i++)
            free(d->search[i]);
        free(d);
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    dns_unlive(h->data);
}

/* ---- TCP clients ---- */

static void tc_unref(tcp_client *tc)
{
    if (--tc->refs > 0)
        return;
    wp_dns *d = tc->d;
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        d->clients = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
    free(tc->buf);
    free(tc);
    dns_unlive(d);
}

static void on_tc_handle_closed(uv_handle_t *h)
{
    tc_unref(h->data);
}

static void tc_close(tcp_client *tc)
{
    if (tc->closed)
        return;
    tc->closed = true;
    uv_close((uv_handle_t *)&tc->h, on_tc_handle_closed);
    uv_close((uv_handle_t *)&tc->idle, on_tc_handle_closed);
}

typedef struct wreq {
    uv_write_t w;
    tcp_client *tc;
    uint8_t *data;
} wreq;

static void on_tc_written(uv_write_t *w, int status)
{
    wreq *r = (wreq *)w;
    if (status < 0)
        tc_close(r->tc);
    free(r->data);
    tc_unref(r->tc);
    free(r);
}

/* Sends msg (taken over) to a TCP client with its length prefix. */
static void tc_send(tcp_client *tc, uint8_t *msg, size_t len)
{
    wreq *r = tc->closed || len > 65535 ? NULL : calloc(1, sizeof *r);
    uint8_t *data = r ? malloc(len + 2) : NULL;
    if (!data) {
        free(r);
        free(msg);
        return;
    }
    data[0] = (uint8_t)(len >> 8);
    data[1] = (uint8_t)len;
    memcpy(data + 2, msg, len);
    free(msg);
    r->tc = tc;
    r->data = data;
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)(len + 2));
    if (uv_write(&r->w, (uv_stream_t *)&tc->h, &b, 1, on_tc_written) != 0) {
        free(data);
        free(r);
        tc_close(tc);
        return;
    }
    tc->refs++;
}

/* ---- replies ---- */

static void udp_reply(uv_udp_t *srv, const struct sockaddr *to, uint8_t *msg, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
    (void)uv_udp_try_send(srv, &b, 1, to); /* a full socket drops it: DNS clients retry */
    free(msg);
}

/* ---- forwarding ---- */

static void try_next(fwd *f);

static void fwd_maybe_free(fwd *f)
{
    if (!f->finished || f->pending > 0)
        return;
    wp_dns *d = f->d;
    if (f->tc)
        tc_unref(f->tc);
    free(f->q);
    free(f);
    dns_unlive(d);
}

static void on_attempt_closed(uv_handle_t *h)
{
    attempt *a = h->data;
    fwd *f = a->f;
    free(a->rbuf);
    free(a);
    f->pending--;
    fwd_maybe_free(f);
}

static void on_timer_closed(uv_handle_t *h)
{
    fwd *f = h->data;
    f->pending--;
    fwd_maybe_free(f);
}

static void attempt_close(attempt *a)
{
    if (a && !uv_is_closing(&a->h.any))
        uv_close(&a->h.any, on_attempt_closed);
}

/* The forward ends: reply (taken over; NULL = SERVFAIL) goes to the client. */
static void finish(fwd *f, uint8_t *reply, size_t len)
{
    if (f->finished) {
        free(reply);
        return;
    }
    wp_dns *d = f->d;
    f->finished = true;
    d->inflight--;
    if (f->prev)
        f->prev->next = f->next;
    else
        d->fwds = f->next;
    if (f->next)
        f->next->prev = f->prev;
    attempt_close(f->cur);
    f->cur = NULL;
    uv_close((uv_handle_t *)&f->timer, on_timer_closed);
    if (!reply && !d->closing && wp_dns_servfail(f->q, f->qlen, &reply, &len) != WP_DNS_ANSWER)
        reply = NULL;
    if (reply && !d->closing &&
        wp_dns_truncate(&reply, &len, wp_dns_max_size(f->q, f->qlen, f->tcp)) == 0) {
        if (f->tcp)
            tc_send(f->tc, reply, len);
        else
            udp_reply(f->srv, (const struct sockaddr *)&f->client, reply, len);
    } else {
        free(reply);
    }
}

static void attempt_failed(attempt *a, const char *why)
{
    fwd *f = a->f;
    if (f->cur != a || f->finished)
        return;
    WF_LOG(WF_LC_dns, WF_LOG_INFO, "upstream failure: %s", why);
    f->cur = NULL;
    attempt_close(a);
    try_next(f);
}

static void on_timeout(uv_timer_t *t)
{
    fwd *f = t->data;
    if (f->cur)
        attempt_failed(f->cur, "i/o timeout");
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    attempt *a = h->data;
    (void)hint;
    if (!a->tcp) {
        wp_dns *d = a->f->d;
        *b = uv_buf_init((char *)d->rbuf, sizeof d->rbuf);
        return;
    }
    if (a->rcap - a->rlen < 4096 && a->rcap < TCP_MSG_MAX) {
        size_t nc = a->rcap ? a->rcap * 2 : 4096;
        nc = nc > TCP_MSG_MAX ? TCP_MSG_MAX : nc;
        uint8_t *nb = realloc(a->rbuf, nc);
        if (nb) {
            a->rbuf = nb;
            a->rcap = nc;
        }
    }
    *b = uv_buf_init((char *)a->rbuf + a->rlen, (unsigned)(a->rcap - a->rlen));
}

static bool same_addr(const struct sockaddr *x, const struct sockaddr_storage *y)
{
    if (!x || x->sa_family != y->ss_family)
        return false;
    if (x->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)x, *b = (const void *)y;
        return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
    }
    const struct sockaddr_in6 *a = (const void *)x, *b = (const void *)y;
    return a->sin6_port == b->sin6_port && memcmp(&a->sin6_addr, &b->sin6_addr, 16) == 0;
}

static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *o = malloc(n ? n : 1);
    if (o)
        memcpy(o, p, n);
    return o;
}

static void on_udp_up_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *b, const struct sockaddr *from,
                           unsigned flags)
{
    attempt *a = h->data;
    fwd *f = a->f;
    (void)flags;
    if (f->cur != a || f->finished || n == 0)
        return;
    if (n < 0) {
        attempt_failed(a, uv_strerror((int)n));
        return;
    }
    const uint8_t *r = (const uint8_t *)b->base;
    if (!same_addr(from, &f->d->up[f->next_up - 1]) || n < 12 || r[0] != f->q[0] || r[1] != f->q[1])
        return; /* not the upstream's reply to this query */
    uint8_t *copy = dup_bytes(r, (size_t)n);
    finish(f, copy, copy ? (size_t)n : 0);
}

static void on_udp_sent(uv_udp_send_t *s, int status)
{
    attempt *a = s->handle->data;
    if (status < 0)
        attempt_failed(a, uv_strerror(status));
}

static void on_tcp_up_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    attempt *a = s->data;
    fwd *f = a->f;
    (void)b;
    if (f->cur != a || f->finished)
        return;
    if (n < 0) {
        attempt_failed(a, n == UV_EOF ? "EOF" : uv_strerror((int)n));
        return;
    }
    a->rlen += (size_t)n;
    if (a->rlen < 2)
        return;
    size_t want = ((size_t)a->rbuf[0] << 8 | a->rbuf[1]) + 2;
    if (a->rlen >= want) {
        uint8_t *copy = dup_bytes(a->rbuf + 2, want - 2);
        finish(f, copy, copy ? want - 2 : 0);
    } else if (a->rlen >= a->rcap && a->rcap >= TCP_MSG_MAX) {
        attempt_failed(a, "reply too long");
    }
}

static void on_tcp_up_written(uv_write_t *w, int status)
{
    attempt *a = w->handle->data;
    if (status < 0)
        attempt_failed(a, uv_strerror(status));
}

static void on_tcp_up_connect(uv_connect_t *c, int status)
{
    attempt *a = c->handle->data;
    fwd *f = a->f;
    if (f->cur != a || f->finished)
        return;
    if (status < 0) {
        attempt_failed(a, uv_strerror(status));
        return;
    }
    a->pfx[0] = (uint8_t)(f->qlen >> 8);
    a->pfx[1] = (uint8_t)f->qlen;
    uv_buf_t bufs[2] = {uv_buf_init((char *)a->pfx, 2),
                        uv_buf_init((char *)f->q, (unsigned)f->qlen)};
    int rc = uv_write(&a->wr, (uv_stream_t *)&a->h.tcp, bufs, 2, on_tcp_up_written);
    if (rc == 0)
        rc = uv_read_start((uv_stream_t *)&a->h.tcp, on_alloc, on_tcp_up_read);
    if (rc != 0)
        attempt_failed(a, uv_strerror(rc));
}

static int start_attempt(fwd *f, attempt *a, const struct sockaddr *up)
{
    uv_loop_t *loop = f->d->loop;
    if (a->tcp) {
        if (uv_tcp_init(loop, &a->h.tcp) != 0)
            return -1;
        a->h.any.data = a;
        f->pending++;
        return uv_tcp_connect(&a->conn, &a->h.tcp, up, on_tcp_up_connect);
    }
    if (uv_udp_init(loop, &a->h.udp) != 0)
        return -1;
    a->h.any.data = a;
    f->pending++;
    uv_buf_t b = uv_buf_init((char *)f->q, (unsigned)f->qlen);
    int rc = uv_udp_send(&a->us, &a->h.udp, &b, 1, up, on_udp_sent);
    return rc == 0 ? uv_udp_recv_start(&a->h.udp, on_alloc, on_udp_up_recv) : rc;
}

static void try_next(fwd *f)
{
    wp_dns *d = f->d;
    while (!f->finished && f->next_up < d->nup) {
        attempt *a = calloc(1, sizeof *a);
        if (!a)
            break;
        a->f = f;
        a->tcp = f->tcp;
        const struct sockaddr *up = (const struct sockaddr *)&d->up[f->next_up++];
        int before = f->pending;
        f->cur = a;
        int rc = start_attempt(f, a, up);
        if (rc == 0) {
            uv_timer_start(&f->timer, on_timeout, d->timeout_ms, 0);
            return;
        }
        WF_LOG(WF_LC_dns, WF_LOG_INFO, "upstream failure: %s", uv_strerror(rc));
        f->cur = NULL;
        if (f->pending > before)
            attempt_close(a); /* initialised: freed from its close callback */
        else
            free(a);
    }
    finish(f, NULL, 0);
}

/* Forwards q upstream for a client; answers SERVFAIL when it cannot. */
static void forward(wp_dns *d, const uint8_t *q, size_t len, uv_udp_t *srv,
                    const struct sockaddr *client, tcp_client *tc, const char *qname)
{
    fwd *f = d->inflight < WP_DNS_MAX_FORWARDS && d->nup ? calloc(1, sizeof *f) : NULL;
    uint8_t *copy = f ? dup_bytes(q, len) : NULL;
    if (!copy || uv_timer_init(d->loop, &f->timer) != 0) {
        free(copy);
        free(f);
        uint8_t *r = NULL;
        size_t n = 0;
        if (wp_dns_servfail(q, len, &r, &n) != WP_DNS_ANSWER)
            return;
        if (tc)
            tc_send(tc, r, n);
        else
            udp_reply(srv, client, r, n);
        return;
    }
    WF_LOG(WF_LC_dns, WF_LOG_DEBUG,
           "response for hostname \"%s\" not found in dns proxy, querying upstream", qname);
    f->d = d;
    f->q = copy;
    f->qlen = len;
    f->tcp = tc != NULL;
    f->timer.data = f;
    f->pending = 1;
    f->srv = srv;
    if (client)
        memcpy(&f->client, client,
               client->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                             : sizeof(struct sockaddr_in));
    f->tc = tc;
    if (tc)
        tc->refs++;
    snprintf(f->qname, sizeof f->qname, "%s", qname);
    f->next = d->fwds;
    if (d->fwds)
        d->fwds->prev = f;
    d->fwds = f;
    d->inflight++;
    d->live++;
    try_next(f);
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
            tc_send(tc, out, n);
        else
            udp_reply(srv, client, out, n);
    } else if (rc == WP_DNS_FORWARD) {
        forward(d, q, len, srv, client, tc, qname);
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
        tc_close(tc);
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
    tc_unref(tc);
}

static void on_tc_idle(uv_timer_t *t)
{
    tc_close(t->data);
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
        tc_close(tc);
}

/* ---- configuration ---- */

static int add_upstream(wp_dns *d, const char *ip, int port)
{
    if (d->nup >= WP_DNS_MAX_UPSTREAMS)
        return 0;
    struct sockaddr_storage *sa = &d->up[d->nup];
    if (uv_ip4_addr(ip, port, (struct sockaddr_in *)sa) == 0 ||
        uv_ip6_addr(ip, port, (struct sockaddr_in6 *)sa) == 0) {
        d->nup++;
        return 0;
    }
    return -1;
}

static int parse_upstreams(wp_dns *d, const char *list, wf_strbuf *err)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return -1;
    for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        struct sockaddr_storage sa;
        if (wp_status_parse_address(t, &sa, NULL) != 0) {
            wf_strbuf_printf(err, "WEFT_DNS_UPSTREAMS: \"%s\" is not IP:PORT", t);
            free(copy);
            return -1;
        }
        if (d->nup < WP_DNS_MAX_UPSTREAMS)
            d->up[d->nup++] = sa;
    }
    free(copy);
    return 0;
}

static void set_search(wp_dns *d, char *rest)
{
    for (size_t i = 0; i < d->nsearch; i++)
        free(d->search[i]);
    d->nsearch = 0;
    char *save = NULL;
    for (char *t = strtok_r(rest, " \t\r\n", &save); t && d->nsearch < MAX_SEARCH;
         t = strtok_r(NULL, " \t\r\n", &save))
        if ((d->search[d->nsearch] = strdup(t)))
            d->nsearch++;
}

/* dns.ClientConfigFromFile: nameserver (port 53), search / domain (the last line wins). */
static int read_resolv_conf(wp_dns *d, const char *path, bool servers, bool *v6, wf_strbuf *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        wf_strbuf_printf(err, "resolv.conf %s: cannot read it", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        char *p = line + strspn(line, " \t");
        size_t k = strcspn(p, " \t\r\n");
        char *rest = p + k + strspn(p + k, " \t");
        if (k == 10 && strncmp(p, "nameserver", 10) == 0 && servers) {
            char ip[64];
            snprintf(ip, sizeof ip, "%.*s", (int)strcspn(rest, " \t\r\n%"), rest);
            if (add_upstream(d, ip, 53) == 0 && strchr(ip, ':'))
                *v6 = true;
        } else if ((k == 6 && strncmp(p, "search", 6) == 0) ||
                   (k == 6 && strncmp(p, "domain", 6) == 0)) {
            set_search(d, rest);
        }
    }
    fclose(fp);
    return 0;
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
        rc = read_resolv_conf(d, rc_path, ups == NULL, &v6, err);
    if (rc == 0 && ups)
        rc = parse_upstreams(d, ups, err);
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
            err->len = 0;
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

bool wp_dns_capture_enabled(const json_t *node)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "DNS_CAPTURE"));
    return v && strcasecmp(v, "true") == 0;
}

void wp_dns_scope_from_node(const json_t *node, char *ns, size_t ns_cap, char *domain,
                            size_t domain_cap)
{
    const char *id = json_string_value(json_object_get(node, "id"));
    const char *mns =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "NAMESPACE"));
    snprintf(ns, ns_cap, "%s", "");
    snprintf(domain, domain_cap, "%s", "");
    const char *t1 = id ? strchr(id, '~') : NULL;
    const char *t2 = t1 ? strchr(t1 + 1, '~') : NULL;
    const char *t3 = t2 ? strchr(t2 + 1, '~') : NULL;
    if (t3) { /* Istio's id: the pod part "pod.ns", the domain part */
        const char *dot = memchr(t2 + 1, '.', (size_t)(t3 - t2 - 1));
        if (dot)
            snprintf(ns, ns_cap, "%.*s", (int)(t3 - dot - 1), dot + 1);
        snprintf(domain, domain_cap, "%s", t3 + 1);
    } else if (id && strrchr(id, '.')) {
        snprintf(ns, ns_cap, "%s", strrchr(id, '.') + 1);
    }
    if (mns && *mns)
        snprintf(ns, ns_cap, "%s", mns);
    if (!*domain && *ns)
        snprintf(domain, domain_cap, "%s.svc.cluster.local", ns);
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
    while (d->fwds)
        finish(d->fwds, NULL, 0);
    for (tcp_client *tc = d->clients; tc; tc = tc->next)
        tc_close(tc);
    dns_unlive(d);
}
