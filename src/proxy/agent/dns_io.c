/*
 * dns_io.c - the DNS proxy's replies and the lifetimes of its objects (dns_internal.h): a
 * reply to a UDP client or, length-prefixed, to a TCP client; a TCP client's references and
 * close; the server freed with its last live object. The server (dns.c) and forwarding
 * (dns_forward.c) both answer through it; it calls neither.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/agent/dns.h"
#include "proxy/agent/dns_internal.h"

/* ---- lifetime ---- */

void dns_unlive(wp_dns *d)
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

/* ---- TCP clients ---- */

void dns_tc_unref(tcp_client *tc)
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
    dns_tc_unref(h->data);
}

void dns_tc_close(tcp_client *tc)
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
        dns_tc_close(r->tc);
    free(r->data);
    dns_tc_unref(r->tc);
    free(r);
}

/* Sends msg (taken over) to a TCP client with its length prefix. */
void dns_tc_send(tcp_client *tc, uint8_t *msg, size_t len)
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
        dns_tc_close(tc);
        return;
    }
    tc->refs++;
}

/* ---- replies ---- */

void dns_udp_reply(uv_udp_t *srv, const struct sockaddr *to, uint8_t *msg, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
    (void)uv_udp_try_send(srv, &b, 1, to); /* a full socket drops it: DNS clients retry */
    free(msg);
}
