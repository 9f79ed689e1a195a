/*
 * h2_server.c - the server side of h2_stream (see h2_internal.h): served paths, listening on
 * TCP or a Unix socket, accepting connections, the server's connection list and pending-bytes
 * total, and closing and freeing the server.
 */
#include "xds/h2_internal.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* The server's list of served paths (opts.paths, else opts.path) into s->pathv, and
 * s->opts.paths pointing at it (connections copy s->opts). 0 or WF_H2_E_INVAL. */
static int server_paths(wf_h2_server *s)
{
    size_t n = 0;
    const char *const *src = s->opts.paths;
    if (src == NULL) {
        s->pathv[n++] = s->opts.path;
    } else {
        while (src[n] != NULL) {
            if (n == WF_H2_MAX_PATHS)
                return WF_H2_E_INVAL;
            s->pathv[n] = src[n];
            n++;
        }
    }
    if (n == 0)
        return WF_H2_E_INVAL;
    s->pathv[n] = NULL;
    s->opts.paths = s->pathv;
    return 0;
}

void wf_h2_server_maybe_free(wf_h2_server *s)
{
    if (s->closing && s->listener_closed && s->live == 0) {
        wf_tls_ctx_free(s->tls);
        free(s->conns);
        free(s);
    }
}

static int server_track(wf_h2_server *s, wf_h2_conn *c)
{
    if (s->nconns == s->capconns) {
        size_t ncap = s->capconns ? s->capconns * 2 : 8;
        wf_h2_conn **n = realloc(s->conns, ncap * sizeof *n);
        if (n == NULL)
            return WF_H2_E_NOMEM;
        s->conns = n;
        s->capconns = ncap;
    }
    s->conns[s->nconns++] = c;
    return 0;
}

static void on_connection(uv_stream_t *l, int status)
{
    wf_h2_server *s = l->data;
    if (status < 0 || s->closing)
        return;
    wf_h2_conn *c = wf_h2_conn_new(s->loop, &s->opts, &s->h, s->is_pipe);
    if (c == NULL)
        return;
    c->server = s;
    s->live++;
    if (server_track(s, c) != 0) {
        c->server = NULL;
        s->live--;
        wf_h2_conn_discard(c);
        return;
    }
    if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0 || (s->tls && wf_h2_tls_start(c, s->tls) != 0) ||
        wf_h2_session_new(c) != 0 || wf_h2_start_io(c) != 0) {
        wf_h2_conn_discard(c);
        return;
    }
    wf_h2_read_peer(c);
    wf_h2_kick(c);
}

static void on_listener_closed(uv_handle_t *h)
{
    wf_h2_server *s = h->data;
    s->listener_closed = true;
    wf_h2_server_maybe_free(s);
}

static int server_listen(wf_h2_server *s, const char *ip, int port)
{
    struct sockaddr_storage ss;
    int len = (int)sizeof ss;
    if (wf_h2_parse_addr(ip, port, &ss) != 0)
        return WF_H2_E_INVAL;
    if (uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0) != 0 ||
        uv_listen((uv_stream_t *)&s->listener, SOMAXCONN, on_connection) != 0 ||
        uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len) != 0)
        return WF_H2_E_IO;
    s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

int wf_h2_server_start(uv_loop_t *loop, const char *ip, int port, const wf_h2_opts *opts,
                       const wf_h2_handlers *h, wf_h2_server **out)
{
    wf_h2_server *s = calloc(1, sizeof *s);
    if (s == NULL)
        return WF_H2_E_NOMEM;
    s->loop = loop;
    wf_h2_opts_fill(&s->opts, opts);
    s->h = *h;
    if (server_paths(s) != 0) {
        free(s);
        return WF_H2_E_INVAL;
    }
    if (uv_tcp_init(loop, &s->listener) != 0) {
        free(s);
        return WF_H2_E_IO;
    }
    s->listener.data = s;
    int rv = server_listen(s, ip, port);
    if (rv != 0) {
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, on_listener_closed);
        return rv;
    }
    *out = s;
    return 0;
}

int wf_h2_server_port(const wf_h2_server *s)
{
    return s->port;
}

size_t wf_h2_server_pending(const wf_h2_server *s)
{
    return s->queued;
}

void wf_h2_server_close(wf_h2_server *s)
{
    if (s->closing)
        return;
    s->closing = true;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    /* Closing a connection may remove it from s->conns at once or later (when it is busy):
     * from the end, a removal only moves entries already visited. No copy, so no allocation
     * that could fail (a loop waiting for nconns to drop would never end). */
    for (size_t i = s->nconns; i-- > 0;)
        if (i < s->nconns)
            wf_h2_conn_close(s->conns[i]);
}

/* ---- Unix domain sockets ------------------------------------------------------------- */

int wf_h2_server_start_pipe(uv_loop_t *loop, const char *path, const wf_h2_opts *opts,
                            const wf_h2_handlers *h, wf_h2_server **out)
{
    if (path == NULL || *path == '\0' ||
        strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return WF_H2_E_INVAL;
    wf_h2_server *s = calloc(1, sizeof *s);
    if (s == NULL)
        return WF_H2_E_NOMEM;
    s->loop = loop;
    s->is_pipe = true;
    wf_h2_opts_fill(&s->opts, opts);
    s->h = *h;
    if (server_paths(s) != 0) {
        free(s);
        return WF_H2_E_INVAL;
    }
    if (uv_pipe_init(loop, &s->pipe_listener, 0) != 0) {
        free(s);
        return WF_H2_E_IO;
    }
    s->pipe_listener.data = s;
    if (uv_pipe_bind(&s->pipe_listener, path) != 0 ||
        uv_listen((uv_stream_t *)&s->pipe_listener, SOMAXCONN, on_connection) != 0) {
        s->closing = true;
        uv_close((uv_handle_t *)&s->pipe_listener, on_listener_closed);
        return WF_H2_E_IO;
    }
    *out = s;
    return 0;
}

void wf_h2_server_set_tls(wf_h2_server *s, wf_tls_ctx *ctx)
{
    wf_tls_ctx *old = s->tls;
    s->tls = wf_tls_ctx_ref(ctx);
    wf_tls_ctx_free(old);
}
