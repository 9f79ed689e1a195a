/*
 * raw_socket.c - the plain TCP transport socket (raw_socket.h).
 */
#include "proxy/net/raw_socket.h"

#include <stdlib.h>
#include <string.h>

#include "proxy/net/address.h"

/* A write request: from the pool, else malloc'd; NULL when out of memory. */
static uv_write_t *wp_wreq_get(wp_wreq_pool *p)
{
    if (p->free) {
        void **r = p->free;
        p->free = *r;
        p->nfree--;
        return (uv_write_t *)r;
    }
    return malloc(sizeof(uv_write_t));
}

/* Back to the pool (at most 1024 kept; the rest are freed). */
static void wp_wreq_put(wp_wreq_pool *p, uv_write_t *req)
{
    if (p->nfree >= 1024) {
        free(req);
        return;
    }
    *(void **)req = p->free;
    p->free = req;
    p->nfree++;
}

void wp_wreq_pool_free(wp_wreq_pool *p)
{
    while (p->free) {
        void **r = p->free;
        p->free = *r;
        free(r);
    }
    p->nfree = 0;
}

static wp_raw_socket *raw_of(uv_handle_t *h)
{
    return h->data;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    wp_raw_socket *rs = raw_of(h);
    (void)suggested;
    rs->base.cbs->alloc(rs->base.owner, buf);
    if (!buf->base)
        buf->len = 0;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    wp_raw_socket *rs = raw_of((uv_handle_t *)st);
    (void)buf;
    if (n == 0)
        return; /* EAGAIN: nothing read */
    if (n == UV_ENOBUFS)
        uv_read_stop(st); /* no room: the owner starts reading again when it has some */
    rs->base.cbs->on_read(rs->base.owner, n);
}

/* Bytes read before the owner took the socket (wp_raw_socket_unread). */
struct wp_raw_unread {
    wp_deferred_item dd_item; /* queued while reading and bytes are left */
    wp_deferred *dd;
    wp_raw_socket *rs; /* NULL once the socket closed: the item frees itself */
    bool running;      /* deliver_unread is on the stack: it frees the item */
    size_t len, off;
    unsigned char data[];
};

static void deliver_unread(wp_deferred_item *it)
{
    struct wp_raw_unread *u = (struct wp_raw_unread *)it;
    wp_raw_socket *rs = u->rs;
    u->running = true;
    while (rs && rs->reading && u->off < u->len) {
        uv_buf_t room = uv_buf_init(NULL, 0);
        rs->base.cbs->alloc(rs->base.owner, &room);
        if (!room.base || room.len == 0) {
            rs->reading = false; /* no room: the owner starts reading again when it has some */
            rs->base.cbs->on_read(rs->base.owner, UV_ENOBUFS);
            rs = u->rs;
            break;
        }
        size_t n = u->len - u->off < room.len ? u->len - u->off : room.len;
        memcpy(room.base, u->data + u->off, n);
        u->off += n;
        rs->base.cbs->on_read(rs->base.owner, (ssize_t)n); /* may stop reading or close */
        rs = u->rs;
    }
    u->running = false;
    if (u->dd_item.destroy)
        return; /* queued again meanwhile (read stopped and started): that pass goes on */
    if (!rs) {  /* closed meanwhile */
        free(u);
        return;
    }
    if (u->off < u->len)
        return; /* reading stopped: read_start queues the rest again */
    rs->unread = NULL;
    free(u);
    if (rs->reading && !rs->closing)
        uv_read_start((uv_stream_t *)&rs->tcp, on_alloc, on_read);
}

static int raw_read_start(wp_tsock *t)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    if (rs->closing)
        return UV_EINVAL;
    if (rs->unread) {
        rs->reading = true;
        wp_deferred_delete(rs->unread->dd, &rs->unread->dd_item, deliver_unread);
        return 0;
    }
    return uv_read_start((uv_stream_t *)&rs->tcp, on_alloc, on_read);
}

static void raw_read_stop(wp_tsock *t)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    rs->reading = false;
    if (!rs->closing)
        uv_read_stop((uv_stream_t *)&rs->tcp);
}

int wp_raw_socket_unread(wp_raw_socket *rs, wp_deferred *dd, const unsigned char *data, size_t len)
{
    if (len == 0)
        return 0;
    struct wp_raw_unread *u = malloc(sizeof(*u) + len);
    if (!u)
        return UV_ENOMEM;
    memset(&u->dd_item, 0, sizeof(u->dd_item));
    u->dd = dd;
    u->rs = rs;
    u->running = false;
    u->len = len;
    u->off = 0;
    memcpy(u->data, data, len);
    rs->unread = u;
    return 0;
}

static void on_written(uv_write_t *req, int status)
{
    wp_raw_socket *rs = req->data;
    wp_wreq_put(rs->wreqs, req);
    rs->base.cbs->on_written(rs->base.owner, status);
}

static int raw_write(wp_tsock *t, uv_buf_t *bufs, unsigned n)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    if (rs->closing)
        return -1;
    int r = uv_try_write((uv_stream_t *)&rs->tcp, bufs, n);
    if (r == UV_EAGAIN || r == UV_ENOSYS)
        r = 0;
    if (r < 0)
        return -1;
    size_t left = (size_t)r;
    unsigned i = 0;
    while (i < n && left >= bufs[i].len) {
        left -= bufs[i].len;
        i++;
    }
    if (i == n)
        return 0;
    bufs[i].base += left;
    bufs[i].len -= left;
    uv_write_t *req = wp_wreq_get(rs->wreqs);
    if (!req)
        return -1;
    req->data = rs;
    if (uv_write(req, (uv_stream_t *)&rs->tcp, bufs + i, n - i, on_written) != 0) {
        wp_wreq_put(rs->wreqs, req);
        return -1;
    }
    return 1;
}

static int raw_try_write(wp_tsock *t, const uv_buf_t *bufs, unsigned n)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    if (rs->closing)
        return UV_EPIPE;
    return uv_try_write((uv_stream_t *)&rs->tcp, bufs, n);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status; /* a failed shutdown shows up as a read or write error */
    free(req);
}

static int raw_shutdown(wp_tsock *t)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    if (rs->closing)
        return UV_EPIPE;
    uv_shutdown_t *req = malloc(sizeof(*req)); /* rare: no pool */
    if (!req)
        return UV_ENOMEM;
    int r = uv_shutdown(req, (uv_stream_t *)&rs->tcp, on_shutdown);
    if (r != 0)
        free(req);
    return r;
}

static void on_closed(uv_handle_t *h)
{
    wp_raw_socket *rs = raw_of(h);
    rs->base.cbs->on_closed(rs->base.owner);
}

static void raw_close(wp_tsock *t)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    if (rs->closing)
        return;
    rs->closing = true;
    rs->reading = false;
    if (rs->unread) { /* a queued delivery frees it; else it goes now */
        struct wp_raw_unread *u = rs->unread;
        rs->unread = NULL;
        u->rs = NULL;
        if (!u->dd_item.destroy && !u->running)
            free(u);
    }
    uv_close((uv_handle_t *)&rs->tcp, on_closed);
}

static void on_connect(uv_connect_t *req, int status)
{
    wp_raw_socket *rs = req->data;
    if (status == 0)
        uv_tcp_nodelay(&rs->tcp, 1);
    rs->base.cbs->on_connected(rs->base.owner, status);
}

static int raw_connect(wp_tsock *t, uv_connect_t *req, const struct sockaddr *addr)
{
    wp_raw_socket *rs = (wp_raw_socket *)t;
    if (rs->closing)
        return UV_EINVAL;
    req->data = rs;
    return uv_tcp_connect(req, &rs->tcp, addr, on_connect);
}

static int raw_address(const wp_tsock *t, bool peer, char *out, size_t cap)
{
    return wp_tcp_address(&((const wp_raw_socket *)t)->tcp, peer, out, cap);
}

static const wp_tsock_ssl *raw_ssl(const wp_tsock *t)
{
    (void)t;
    return NULL;
}

static const wp_tsock_ops raw_ops = {
    .read_start = raw_read_start,
    .read_stop = raw_read_stop,
    .write = raw_write,
    .try_write = raw_try_write,
    .shutdown = raw_shutdown,
    .close = raw_close,
    .connect = raw_connect,
    .address = raw_address,
    .ssl = raw_ssl,
};

int wp_raw_socket_init(wp_raw_socket *rs, uv_loop_t *loop, wp_wreq_pool *wreqs,
                       const wp_tsock_cbs *cbs, void *owner)
{
    rs->base = (wp_tsock){.ops = &raw_ops, .cbs = cbs, .owner = owner};
    rs->wreqs = wreqs;
    rs->unread = NULL;
    rs->closing = false;
    rs->reading = false;
    int r = uv_tcp_init(loop, &rs->tcp);
    rs->tcp.data = rs;
    return r;
}

int wp_raw_socket_accept(wp_raw_socket *rs, uv_stream_t *server)
{
    int r = uv_accept(server, (uv_stream_t *)&rs->tcp);
    if (r == 0)
        uv_tcp_nodelay(&rs->tcp, 1);
    return r;
}
