/*
 * localmesh_dns_relay.c - the pod network's DNS relay (localmesh_dns_relay.h).
 */
#include "cli/localmesh_dns_relay.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INFLIGHT     512
#define QUERY_TIMEOUT_MS 5000
#define MAX_MSG          4096 /* EDNS answers over UDP stay below this */

typedef struct query {
    wf_lm_dns_relay *r;
    uv_udp_t sock; /* to the upstream */
    uv_timer_t timer;
    struct sockaddr_storage client;
    int handles; /* open handles (freed at 0) */
    bool done;
    struct query *prev, *next;
    char buf[MAX_MSG];
} query;

struct wf_lm_dns_relay {
    uv_loop_t *loop;
    uv_udp_t listener;
    struct sockaddr_in upstream;
    query *queries;
    size_t inflight;
    bool closing, listener_closed;
    char buf[MAX_MSG];
};

static void maybe_free_relay(wf_lm_dns_relay *r)
{
    if (r->closing && r->listener_closed && !r->queries)
        free(r);
}

static void on_query_handle_closed(uv_handle_t *h)
{
    query *q = h->data;
    if (--q->handles > 0)
        return;
    wf_lm_dns_relay *r = q->r;
    if (q->prev)
        q->prev->next = q->next;
    else
        r->queries = q->next;
    if (q->next)
        q->next->prev = q->prev;
    r->inflight--;
    free(q);
    maybe_free_relay(r);
}

static void query_end(query *q)
{
    if (q->done)
        return;
    q->done = true;
    uv_close((uv_handle_t *)&q->sock, on_query_handle_closed);
    uv_close((uv_handle_t *)&q->timer, on_query_handle_closed);
}

static void on_timeout(uv_timer_t *t)
{
    query_end(t->data);
}

static void alloc_query(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    query *q = h->data;
    *b = uv_buf_init(q->buf, sizeof q->buf);
}

static void on_sent(uv_udp_send_t *req, int status)
{
    (void)status;
    free(req);
}

/* Sends len bytes of data to addr from sock; the bytes are copied. */
static void send_copy(uv_udp_t *sock, const char *data, size_t len, const struct sockaddr *addr)
{
    uv_udp_send_t *req = malloc(sizeof *req + len);
    if (!req)
        return;
    char *copy = (char *)(req + 1);
    memcpy(copy, data, len);
    uv_buf_t b = uv_buf_init(copy, (unsigned)len);
    if (uv_udp_send(req, sock, &b, 1, addr, on_sent) != 0)
        free(req);
}

static void on_answer(uv_udp_t *s, ssize_t n, const uv_buf_t *b, const struct sockaddr *from,
                      unsigned flags)
{
    (void)flags;
    query *q = s->data;
    const struct sockaddr_in *f = (const struct sockaddr_in *)from;
    if (n <= 0 || !from || q->done || from->sa_family != AF_INET ||
        f->sin_addr.s_addr != q->r->upstream.sin_addr.s_addr ||
        f->sin_port != q->r->upstream.sin_port)
        return; /* only the upstream answers */
    if (!q->r->closing)
        send_copy(&q->r->listener, b->base, (size_t)n, (const struct sockaddr *)&q->client);
    query_end(q);
}

static void relay_query(wf_lm_dns_relay *r, const char *data, size_t len,
                        const struct sockaddr *from)
{
    if (r->inflight >= MAX_INFLIGHT || from->sa_family != AF_INET || len < 12)
        return; /* dropped: the client retries */
    query *q = calloc(1, sizeof *q);
    if (!q)
        return;
    q->r = r;
    memcpy(&q->client, from, sizeof(struct sockaddr_in));
    uv_udp_init(r->loop, &q->sock);
    uv_timer_init(r->loop, &q->timer);
    q->sock.data = q->timer.data = q;
    q->handles = 2;
    q->next = r->queries;
    if (r->queries)
        r->queries->prev = q;
    r->queries = q;
    r->inflight++;
    if (uv_udp_recv_start(&q->sock, alloc_query, on_answer) != 0 ||
        uv_timer_start(&q->timer, on_timeout, QUERY_TIMEOUT_MS, 0) != 0) {
        query_end(q);
        return;
    }
    send_copy(&q->sock, data, len, (const struct sockaddr *)&r->upstream);
}

static void alloc_listener(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    wf_lm_dns_relay *r = h->data;
    *b = uv_buf_init(r->buf, sizeof r->buf);
}

static void on_query(uv_udp_t *s, ssize_t n, const uv_buf_t *b, const struct sockaddr *from,
                     unsigned flags)
{
    wf_lm_dns_relay *r = s->data;
    if (n <= 0 || !from || (flags & UV_UDP_PARTIAL) || r->closing)
        return;
    relay_query(r, b->base, (size_t)n, from);
}

int wf_lm_dns_relay_start(uv_loop_t *loop, const char *listen_ip, int listen_port,
                          const char *to_ip, int to_port, wf_lm_dns_relay **out, wf_strbuf *err)
{
    *out = NULL;
    wf_lm_dns_relay *r = calloc(1, sizeof *r);
    struct sockaddr_in addr;
    if (!r)
        return wf_strbuf_puts(err, "out of memory"), -1;
    r->loop = loop;
    if (uv_ip4_addr(listen_ip, listen_port, &addr) != 0 ||
        uv_ip4_addr(to_ip, to_port, &r->upstream) != 0) {
        free(r);
        return wf_strbuf_printf(err, "bad DNS relay address %s:%d or %s:%d", listen_ip, listen_port,
                                to_ip, to_port),
               -1;
    }
    uv_udp_init(loop, &r->listener);
    r->listener.data = r;
    int rc = uv_udp_bind(&r->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_udp_recv_start(&r->listener, alloc_listener, on_query);
    if (rc != 0) {
        wf_strbuf_printf(err, "cannot listen on UDP %s:%d: %s", listen_ip, listen_port,
                         uv_strerror(rc));
        wf_lm_dns_relay_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

static void on_listener_closed(uv_handle_t *h)
{
    wf_lm_dns_relay *r = h->data;
    r->listener_closed = true;
    maybe_free_relay(r);
}

void wf_lm_dns_relay_close(wf_lm_dns_relay *r)
{
    if (!r || r->closing)
        return;
    r->closing = true;
    uv_close((uv_handle_t *)&r->listener, on_listener_closed);
    for (query *q = r->queries; q; q = q->next)
        query_end(q);
}

int wf_lm_resolv_first_ipv4(const char *path, char *ip, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int rc = -1;
    while (rc != 0 && fgets(line, sizeof line, f)) {
        char word[16], addr[64];
        struct in_addr a;
        if (sscanf(line, " %15s %63s", word, addr) == 2 && strcmp(word, "nameserver") == 0 &&
            inet_pton(AF_INET, addr, &a) == 1 && strlen(addr) < cap) {
            snprintf(ip, cap, "%s", addr);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}
