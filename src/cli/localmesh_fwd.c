/*
 * localmesh_fwd.c - the TCP port forwarder (localmesh_fwd.h).
 *
 * A pair holds the two sides; each side reads into a heap buffer that is handed to a write on
 * the other side and freed when that write completes. A side whose peer has more than
 * HIGH_WATER bytes queued stops reading until the queue drains. The pair is freed when both
 * handles are closed.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/localmesh_fwd.h"

#define HIGH_WATER (1u << 20)
#define READ_SIZE  (64u * 1024u)

typedef struct fwd_pair fwd_pair;

typedef struct fwd_side {
    uv_tcp_t tcp;
    fwd_pair *pair;
    struct fwd_side *peer;
    bool eof;    /* read EOF (shutdown sent to the peer) */
    bool paused; /* reading stopped for back-pressure */
} fwd_side;

struct fwd_pair {
    fwd_side client, target;
    wf_lm_fwd *fwd;
    fwd_pair *next, *prev;
    int open_handles;
    bool closing;
};

struct wf_lm_fwd {
    uv_loop_t *loop;
    uv_tcp_t listener;
    struct sockaddr_in target;
    FILE *log;
    fwd_pair *pairs;
    bool closing, listener_closed;
};

typedef struct fwd_write {
    uv_write_t req;
    fwd_side *to;
    char *buf;
} fwd_write;

static void maybe_free_fwd(wf_lm_fwd *f)
{
    if (f->closing && f->listener_closed && !f->pairs)
        free(f);
}

static void on_side_closed(uv_handle_t *h)
{
    fwd_side *s = h->data;
    fwd_pair *p = s->pair;
    if (--p->open_handles > 0)
        return;
    wf_lm_fwd *f = p->fwd;
    if (p->prev)
        p->prev->next = p->next;
    else
        f->pairs = p->next;
    if (p->next)
        p->next->prev = p->prev;
    free(p);
    maybe_free_fwd(f);
}

static void pair_close(fwd_pair *p)
{
    if (p->closing)
        return;
    p->closing = true;
    uv_close((uv_handle_t *)&p->client.tcp, on_side_closed);
    uv_close((uv_handle_t *)&p->target.tcp, on_side_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    (void)h;
    buf->base = malloc(READ_SIZE);
    buf->len = buf->base ? READ_SIZE : 0;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

static void resume(fwd_side *s)
{
    if (s->paused && !s->eof && !s->pair->closing) {
        s->paused = false;
        if (uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read) != 0)
            pair_close(s->pair);
    }
}

static void on_write(uv_write_t *req, int status)
{
    fwd_write *w = (fwd_write *)req;
    fwd_side *to = w->to;
    free(w->buf);
    free(w);
    if (status < 0) {
        pair_close(to->pair);
        return;
    }
    if (to->tcp.write_queue_size < HIGH_WATER / 2)
        resume(to->peer);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    fwd_side *s = req->data;
    free(req);
    if (status < 0 || (s->eof && s->peer->eof))
        pair_close(s->pair);
}

static void pass_eof(fwd_side *from)
{
    from->eof = true;
    uv_shutdown_t *req = malloc(sizeof *req);
    if (req)
        req->data = from->peer;
    if (!req || uv_shutdown(req, (uv_stream_t *)&from->peer->tcp, on_shutdown) != 0) {
        free(req);
        pair_close(from->pair);
    }
}

static void forward(fwd_side *from, char *data, size_t len)
{
    fwd_write *w = malloc(sizeof *w);
    if (!w) {
        free(data);
        pair_close(from->pair);
        return;
    }
    w->to = from->peer;
    w->buf = data;
    uv_buf_t b = uv_buf_init(data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&from->peer->tcp, &b, 1, on_write) != 0) {
        free(data);
        free(w);
        pair_close(from->pair);
        return;
    }
    if (from->peer->tcp.write_queue_size > HIGH_WATER) {
        from->paused = true;
        uv_read_stop((uv_stream_t *)&from->tcp);
    }
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    fwd_side *s = st->data;
    if (n > 0 && !s->pair->closing) {
        forward(s, buf->base, (size_t)n);
        return;
    }
    free(buf->base);
    if (n == 0 || s->pair->closing)
        return;
    uv_read_stop(st);
    if (n == UV_EOF)
        pass_eof(s);
    else
        pair_close(s->pair);
}

static void on_connect(uv_connect_t *req, int status)
{
    fwd_pair *p = req->data;
    free(req);
    if (p->closing)
        return;
    if (status < 0) {
        if (p->fwd->log) {
            fprintf(p->fwd->log, "forwarder: cannot connect to the target: %s\n",
                    uv_strerror(status));
            fflush(p->fwd->log);
        }
        pair_close(p);
        return;
    }
    if (uv_read_start((uv_stream_t *)&p->client.tcp, on_alloc, on_read) != 0 ||
        uv_read_start((uv_stream_t *)&p->target.tcp, on_alloc, on_read) != 0)
        pair_close(p);
}

static void side_init(fwd_pair *p, fwd_side *s, fwd_side *peer)
{
    s->pair = p;
    s->peer = peer;
    s->tcp.data = s;
}

static void on_accept(uv_stream_t *server, int status)
{
    wf_lm_fwd *f = server->data;
    fwd_pair *p = status < 0 || f->closing ? NULL : calloc(1, sizeof *p);
    if (!p)
        return;
    p->fwd = f;
    side_init(p, &p->client, &p->target);
    side_init(p, &p->target, &p->client);
    uv_tcp_init(f->loop, &p->client.tcp);
    uv_tcp_init(f->loop, &p->target.tcp);
    p->open_handles = 2;
    p->next = f->pairs;
    if (f->pairs)
        f->pairs->prev = p;
    f->pairs = p;
    uv_connect_t *req = malloc(sizeof *req);
    if (!req || uv_accept(server, (uv_stream_t *)&p->client.tcp) != 0) {
        free(req);
        pair_close(p);
        return;
    }
    uv_tcp_nodelay(&p->client.tcp, 1);
    uv_tcp_nodelay(&p->target.tcp, 1);
    req->data = p;
    if (uv_tcp_connect(req, &p->target.tcp, (const struct sockaddr *)&f->target, on_connect) != 0) {
        free(req);
        pair_close(p);
    }
}

int wf_lm_fwd_start(uv_loop_t *loop, const char *listen_ip, int listen_port, const char *to_ip,
                    int to_port, FILE *log, wf_lm_fwd **out, wf_strbuf *err)
{
    *out = NULL;
    wf_lm_fwd *f = calloc(1, sizeof *f);
    struct sockaddr_in addr;
    if (!f)
        return wf_strbuf_puts(err, "out of memory"), -1;
    f->loop = loop;
    f->log = log;
    if (uv_ip4_addr(listen_ip, listen_port, &addr) != 0 ||
        uv_ip4_addr(to_ip, to_port, &f->target) != 0) {
        free(f);
        return wf_strbuf_printf(err, "bad forwarder address %s:%d or %s:%d", listen_ip, listen_port,
                                to_ip, to_port),
               -1;
    }
    uv_tcp_init(loop, &f->listener);
    f->listener.data = f;
    int rc = uv_tcp_bind(&f->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&f->listener, 128, on_accept);
    if (rc != 0) {
        wf_strbuf_printf(err, "cannot listen on %s:%d: %s", listen_ip, listen_port,
                         uv_strerror(rc));
        wf_lm_fwd_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

static void on_listener_closed(uv_handle_t *h)
{
    wf_lm_fwd *f = h->data;
    f->listener_closed = true;
    maybe_free_fwd(f);
}

void wf_lm_fwd_close(wf_lm_fwd *f)
{
    if (!f || f->closing)
        return;
    f->closing = true;
    uv_close((uv_handle_t *)&f->listener, on_listener_closed);
    for (fwd_pair *p = f->pairs; p; p = p->next)
        pair_close(p);
}
