/*
 * h2_stream.c - gRPC streaming calls over nghttp2 + libuv (see h2_stream.h): the call core,
 * a call's life (creation, end report, freeing) and the call API other than sending. The rest
 * of the module: h2_conn.c (connections, I/O, keepalive), h2_session.c (nghttp2 callbacks),
 * h2_send.c (shared buffers, send queues, NO_COPY output), h2_server.c and h2_client.c; what
 * they share is in h2_internal.h.
 */
#include "xds/h2_internal.h"

#include <stdlib.h>
#include <string.h>

const char *wf_h2_end_reason_str(wf_h2_end_reason r)
{
    static const char *const names[] = {
        "grpc status",       "cancelled",      "stream reset",   "connection lost",
        "keepalive timeout", "protocol error", "closed locally",
    };
    if ((unsigned)r < sizeof names / sizeof names[0])
        return names[r];
    return "unknown";
}

/* ---- calls --------------------------------------------------------------------------- */

wf_h2_call *wf_h2_call_new(wf_h2_conn *c)
{
    wf_h2_call *call = calloc(1, sizeof *call);
    if (call == NULL)
        return NULL;
    call->conn = c;
    call->status = -1;
    wf_grpc_decoder_init(&call->dec, c->opts.max_msg);
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    return call;
}

void wf_h2_call_free(wf_h2_call *call)
{
    wf_h2_conn *c = call->conn;
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    wf_h2_queue_drop(call);
    wf_grpc_decoder_free(&call->dec);
    free(call->message);
    free(call->meta);
    free(call);
}

/* Reports the end (for calls the user knows about) and frees the call. */
void wf_h2_call_end(wf_h2_call *call, wf_h2_end_reason r, int status, uint32_t h2_error)
{
    wf_h2_conn *c = call->conn;
    if (call->accepted && c->h.on_end) {
        wf_h2_end e = {r, status, call->message ? call->message : "", h2_error};
        c->h.on_end(call, &e, c->h.ud);
    }
    wf_h2_call_free(call);
}

int wf_h2_set_message(wf_h2_call *call, const char *text, size_t len)
{
    char *m = malloc(len + 1);
    if (m == NULL)
        return WF_H2_E_NOMEM;
    memcpy(m, text, len);
    m[len] = '\0';
    free(call->message);
    call->message = m;
    return 0;
}

/* ---- call API ------------------------------------------------------------------------ */

bool wf_h2_call_closed(const wf_h2_call *call)
{
    const wf_h2_conn *c = call->conn;
    return call->local_done || c->closing || c->pending_close != NO_CLOSE;
}

int wf_h2_call_finish(wf_h2_call *call, int grpc_status, const char *message)
{
    if (wf_h2_call_closed(call))
        return WF_H2_E_CLOSED;
    if (call->conn->server) {
        const char *m = message ? message : "";
        if (wf_h2_set_message(call, m, strlen(m)) != 0)
            return WF_H2_E_NOMEM;
        call->status = grpc_status;
    }
    call->finishing = true;
    call->local_done = true;
    wf_h2_resume(call);
    wf_h2_kick(call->conn);
    return 0;
}

void wf_h2_call_cancel(wf_h2_call *call)
{
    wf_h2_conn *c = call->conn;
    if (call->cancelled || c->closing)
        return;
    call->cancelled = true;
    call->local_done = true;
    wf_h2_queue_drop(call);
    wf_h2_check_rv(c, nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                                NGHTTP2_CANCEL));
    wf_h2_kick(c);
}

void wf_h2_call_set_data(wf_h2_call *call, void *data)
{
    call->data = data;
}

void *wf_h2_call_data(const wf_h2_call *call)
{
    return call->data;
}

wf_h2_conn *wf_h2_call_conn(const wf_h2_call *call)
{
    return call->conn;
}

const char *wf_h2_call_path(const wf_h2_call *call)
{
    return call->path;
}

const char *wf_h2_call_metadata(const wf_h2_call *call, const char *name)
{
    for (size_t off = 0; off < call->meta_len;) {
        const char *n = call->meta + off;
        const char *v = n + strlen(n) + 1;
        if (strcmp(n, name) == 0)
            return v;
        off = (size_t)(v + strlen(v) + 1 - call->meta);
    }
    return NULL;
}
