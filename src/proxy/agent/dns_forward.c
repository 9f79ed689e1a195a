/*
 * dns_forward.c - the DNS proxy's upstream forwarding (Istio's queryUpstream): each upstream in
 * turn over the client's protocol, a timeout per try, SERVFAIL when none answers. See dns.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/agent/dns_internal.h"

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

static void try_next(fwd *f);

static void fwd_maybe_free(fwd *f)
{
    if (!f->finished || f->pending > 0)
        return;
    wp_dns *d = f->d;
    if (f->tc)
        dns_tc_unref(f->tc);
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
            dns_tc_send(f->tc, reply, len);
        else
            dns_udp_reply(f->srv, (const struct sockaddr *)&f->client, reply, len);
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
void dns_forward(wp_dns *d, const uint8_t *q, size_t len, uv_udp_t *srv,
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
            dns_tc_send(tc, r, n);
        else
            dns_udp_reply(srv, client, r, n);
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

void dns_forward_abort_all(wp_dns *d)
{
    while (d->fwds)
        finish(d->fwds, NULL, 0);
}
