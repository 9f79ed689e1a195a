/*
 * h2_client.c - the client side of h2_stream (see h2_internal.h): connecting over TCP or a
 * Unix socket, and opening calls (request HEADERS on opts.path).
 */
#include "xds/h2_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/un.h>

static void on_connect(uv_connect_t *req, int status)
{
    wf_h2_conn *c = req->data;
    if (c->closing)
        return;
    wf_h2_enter(c);
    if (status < 0 || wf_h2_start_io(c) != 0)
        wf_h2_fail(c, WF_H2_END_CONN_LOST);
    else
        wf_h2_read_peer(c);
    wf_h2_leave(c);
}

int wf_h2_client_connect(uv_loop_t *loop, const char *ip, int port, const wf_h2_opts *opts,
                         const wf_h2_handlers *h, wf_h2_conn **out)
{
    wf_h2_opts o;
    struct sockaddr_storage ss;
    wf_h2_opts_fill(&o, opts);
    if (wf_h2_parse_addr(ip, port, &ss) != 0)
        return WF_H2_E_INVAL;
    wf_h2_conn *c = wf_h2_conn_new(loop, &o, h, false);
    if (c == NULL)
        return WF_H2_E_NOMEM;
    snprintf(c->authority, sizeof c->authority, strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip, port);
    c->connect_req.data = c;
    int rv = o.tls ? wf_h2_tls_start_client(c, o.tls, o.tls_sni) : 0;
    if (rv == 0)
        rv = wf_h2_session_new(c);
    if (rv == 0 && uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ss, on_connect))
        rv = WF_H2_E_IO;
    if (rv != 0) {
        wf_h2_conn_discard(c);
        return rv;
    }
    *out = c;
    return 0;
}

int wf_h2_call_open(wf_h2_conn *c, wf_h2_call **out)
{
    if (c->server || c->closing || c->pending_close != NO_CLOSE)
        return c->server ? WF_H2_E_INVAL : WF_H2_E_CLOSED;
    wf_h2_call *call = wf_h2_call_new(c);
    if (call == NULL)
        return WF_H2_E_NOMEM;
    call->accepted = true;
    call->path = c->opts.path;
    nghttp2_nv nva[7 + WF_H2_MAX_METADATA] = {NV(":method", "POST"),
                                              NV(":scheme", "http"),
                                              NV(":path", c->opts.path),
                                              NV(":authority", c->authority),
                                              NV("content-type", "application/grpc"),
                                              NV("te", "trailers"),
                                              NV("user-agent", "weft-xds/0.1")};
    size_t n = 7;
    for (const char *const *m = c->opts.metadata; m && m[0] && m[1] && n < 7 + WF_H2_MAX_METADATA;
         m += 2, n++)
        nva[n] = (nghttp2_nv){(uint8_t *)m[0], (uint8_t *)m[1], strlen(m[0]), strlen(m[1]),
                              NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider dp = {.source.ptr = call, .read_callback = wf_h2_data_read};
    int32_t id = nghttp2_submit_request(c->session, NULL, nva, n, &dp, call);
    if (id < 0) {
        wf_h2_call_free(call);
        return id == NGHTTP2_ERR_NOMEM ? WF_H2_E_NOMEM : WF_H2_E_IO;
    }
    call->stream_id = id;
    *out = call;
    wf_h2_kick(c);
    return 0;
}

/* ---- Unix domain sockets ------------------------------------------------------------- */

int wf_h2_client_connect_pipe(uv_loop_t *loop, const char *path, const wf_h2_opts *opts,
                              const wf_h2_handlers *h, wf_h2_conn **out)
{
    wf_h2_opts o;
    wf_h2_opts_fill(&o, opts);
    if (path == NULL || *path == '\0' ||
        strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return WF_H2_E_INVAL;
    wf_h2_conn *c = wf_h2_conn_new(loop, &o, h, true);
    if (c == NULL)
        return WF_H2_E_NOMEM;
    snprintf(c->authority, sizeof c->authority, "localhost"); /* gRPC's unix: authority */
    c->connect_req.data = c;
    int rv = wf_h2_session_new(c);
    if (rv != 0) {
        wf_h2_conn_discard(c);
        return rv;
    }
    /* Errors (no such socket, refused) arrive in on_connect: WF_H2_END_CONN_LOST. */
    uv_pipe_connect(&c->connect_req, &c->pipe, path, on_connect);
    *out = c;
    return 0;
}
