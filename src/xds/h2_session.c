/*
 * h2_session.c - the nghttp2 session of a connection (see h2_internal.h): its callbacks for
 * received headers, DATA and stream closes (server request checks and responses, client
 * status mapping, message delivery) and its creation with our SETTINGS.
 */
#include "xds/h2_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- nghttp2 input callbacks --------------------------------------------------------- */

static wf_h2_call *stream_call(nghttp2_session *s, int32_t id)
{
    return id > 0 ? nghttp2_session_get_stream_user_data(s, id) : NULL;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    wf_h2_conn *c = ud;
    if (!c->server || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    wf_h2_call *call = wf_h2_call_new(c);
    if (call == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    call->stream_id = f->hd.stream_id;
    call->bad_path = true; /* until a served :path arrives */
    if (nghttp2_session_set_stream_user_data(s, f->hd.stream_id, call) != 0) {
        wf_h2_call_free(call);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
}

static bool is(const uint8_t *a, size_t alen, const char *b)
{
    return alen == strlen(b) && memcmp(a, b, alen) == 0;
}

static int atoi_n(const uint8_t *v, size_t len)
{
    int n = 0;
    if (len == 0 || len > 6)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

/* Keeps a custom metadata entry (a request header that is not a pseudo-header nor one of
 * gRPC's transport headers content-type and te), within WF_H2_MAX_META bytes per call; beyond
 * that, or with a NUL inside, it is dropped. The buffer grows to what is kept (an ADS call of
 * weft-proxy keeps nothing). */
static void keep_metadata(wf_h2_call *call, const uint8_t *n, size_t nl, const uint8_t *v,
                          size_t vl)
{
    size_t need = call->meta_len + nl + vl + 2;
    if (nl == 0 || n[0] == ':' || is(n, nl, "content-type") || is(n, nl, "te") ||
        memchr(n, 0, nl) || memchr(v, 0, vl) || need > WF_H2_MAX_META)
        return;
    char *m = realloc(call->meta, need);
    if (m == NULL)
        return;
    call->meta = m;
    char *p = m + call->meta_len;
    memcpy(p, n, nl);
    p[nl] = '\0';
    memcpy(p + nl + 1, v, vl);
    p[nl + 1 + vl] = '\0';
    call->meta_len = need;
}

static void server_header(wf_h2_conn *c, wf_h2_call *call, const uint8_t *n, size_t nl,
                          const uint8_t *v, size_t vl)
{
    keep_metadata(call, n, nl, v, vl);
    if (is(n, nl, ":method")) {
        call->bad_method = !is(v, vl, "POST");
    } else if (is(n, nl, ":path")) {
        call->path = NULL;
        for (const char *const *p = c->opts.paths; p && *p && !call->path; p++)
            if (is(v, vl, *p))
                call->path = *p;
        call->bad_path = call->path == NULL;
    } else if (is(n, nl, "content-type")) {
        call->good_ctype = vl >= 16 && memcmp(v, "application/grpc", 16) == 0 &&
                           (vl == 16 || v[16] == '+' || v[16] == ';');
    }
}

static int client_header(wf_h2_call *call, const uint8_t *n, size_t nl, const uint8_t *v, size_t vl)
{
    if (is(n, nl, ":status")) {
        call->http_status = atoi_n(v, vl);
    } else if (is(n, nl, "grpc-status")) {
        call->status = atoi_n(v, vl);
        call->got_status = call->status >= 0;
        if (!call->got_status)
            call->status = WF_GRPC_UNKNOWN;
    } else if (is(n, nl, "grpc-message")) {
        char *m = wf_grpc_message_decode((const char *)v, vl);
        if (m == NULL)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        free(call->message);
        call->message = m;
    }
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *n, size_t nl,
                     const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    wf_h2_conn *c = ud;
    wf_h2_call *call = stream_call(s, f->hd.stream_id);
    if (call == NULL || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (c->server) {
        server_header(c, call, n, nl, v, vl);
        return 0;
    }
    return client_header(call, n, nl, v, vl);
}

/* gRPC doc/http-grpc-status-mapping.md */
static int http_to_grpc(int http)
{
    switch (http) {
    case 400:
        return WF_GRPC_INTERNAL;
    case 401:
        return WF_GRPC_UNAUTHENTICATED;
    case 403:
        return WF_GRPC_PERMISSION_DENIED;
    case 404:
        return WF_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return WF_GRPC_UNAVAILABLE;
    default:
        return WF_GRPC_UNKNOWN;
    }
}

static void client_remote_end(wf_h2_conn *c, wf_h2_call *call)
{
    call->remote_ended = true;
    if (!call->got_status) {
        char text[64];
        bool http_ok = call->http_status == 200;
        call->status = http_ok ? WF_GRPC_INTERNAL : http_to_grpc(call->http_status);
        snprintf(text, sizeof text, http_ok ? "missing grpc-status" : "HTTP status %d",
                 call->http_status);
        if (wf_h2_set_message(call, text, strlen(text)) != 0)
            wf_h2_fail(c, WF_H2_END_PROTOCOL);
    }
    call->local_done = true;
    if (!nghttp2_session_get_stream_local_close(c->session, call->stream_id))
        wf_h2_check_rv(c, nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                                    NGHTTP2_NO_ERROR));
}

static int respond(wf_h2_conn *c, wf_h2_call *call)
{
    nghttp2_data_provider dp = {.source.ptr = call, .read_callback = wf_h2_data_read};
    if (call->bad_method || !call->good_ctype) {
        nghttp2_nv nva[] = {NV(":status", "415")};
        return nghttp2_submit_response(c->session, call->stream_id, nva, 1, NULL);
    }
    if (call->bad_path) {
        nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc"),
                            NV("grpc-status", "12"), NV("grpc-message", "unknown method")};
        return nghttp2_submit_response(c->session, call->stream_id, nva, 4, NULL);
    }
    nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    int rv = nghttp2_submit_response(c->session, call->stream_id, nva, 2, &dp);
    if (rv == 0)
        call->accepted = true;
    return rv;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    wf_h2_conn *c = ud;
    if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
        c->ping_outstanding = false;
        return uv_timer_stop(&c->ping_deadline) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    wf_h2_call *call = stream_call(s, f->hd.stream_id);
    if (call == NULL || (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA))
        return 0;
    if (c->server && f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        if (respond(c, call) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        if (call->accepted && c->h.on_call)
            c->h.on_call(call, c->h.ud);
        return 0;
    }
    if (!c->server && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        client_remote_end(c, call);
    return 0;
}

/* A protocol problem on one call: the server ends it with a status, the client resets. */
static void call_proto_error(wf_h2_conn *c, wf_h2_call *call, int err)
{
    const char *text = wf_grpc_strerror(err);
    call->proto_err = true;
    call->status = wf_grpc_err_status(err);
    if (wf_h2_set_message(call, text, strlen(text)) != 0)
        wf_h2_fail(c, WF_H2_END_PROTOCOL);
    wf_h2_queue_drop(call);
    call->local_done = true;
    if (c->server) {
        call->finishing = true;
        wf_h2_resume(call);
        return;
    }
    wf_h2_check_rv(c, nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                                NGHTTP2_CANCEL));
}

static int deliver(void *ud, const uint8_t *msg, size_t len)
{
    wf_h2_call *call = ud;
    wf_h2_conn *c = call->conn;
    if (call->cancelled || c->pending_close != NO_CLOSE)
        return 1;
    if (c->h.on_message)
        c->h.on_message(call, msg, len, c->h.ud);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud)
{
    wf_h2_conn *c = ud;
    wf_h2_call *call = stream_call(s, id);
    if (call == NULL || !call->accepted || call->proto_err || call->cancelled)
        return 0;
    int rv = wf_grpc_decoder_feed(&call->dec, data, len, deliver, call);
    if (rv != 0 && rv != WF_GRPC_E_STOPPED)
        call_proto_error(c, call, rv);
    return 0;
}

static wf_h2_end_reason close_reason(wf_h2_conn *c, wf_h2_call *call)
{
    if (call->proto_err)
        return WF_H2_END_PROTOCOL;
    if (call->cancelled)
        return WF_H2_END_CANCELLED;
    if ((c->server && call->trailers_sent) || (!c->server && call->remote_ended))
        return WF_H2_END_STATUS;
    return WF_H2_END_RESET;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *ud)
{
    wf_h2_conn *c = ud;
    wf_h2_call *call = stream_call(s, id);
    if (call == NULL)
        return 0;
    if (nghttp2_session_set_stream_user_data(s, id, NULL) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    wf_h2_end_reason r = close_reason(c, call);
    bool status = r == WF_H2_END_STATUS || r == WF_H2_END_PROTOCOL;
    wf_h2_call_end(call, r, status ? call->status : -1, r == WF_H2_END_RESET ? error_code : 0);
    return 0;
}

/* Server: after the final HEADERS (trailers, Trailers-Only or 415), stop the request side. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    wf_h2_conn *c = ud;
    if (!c->server || f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    if (nghttp2_session_get_stream_remote_close(s, f->hd.stream_id) == 0)
        wf_h2_check_rv(
            c, nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR));
    return 0;
}

int wf_h2_session_new(wf_h2_conn *c)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return WF_H2_E_NOMEM;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_send_data_callback(cb, wf_h2_send_data_cb);
    int rv = c->server ? nghttp2_session_server_new(&c->session, cb, c)
                       : nghttp2_session_client_new(&c->session, cb, c);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0)
        return WF_H2_E_NOMEM;
    /* Received bytes are consumed as they arrive (on_data), so a large window costs no memory
     * and lets the peer send a whole response without waiting for WINDOW_UPDATEs. */
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->opts.max_streams},
                                   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)RECV_WINDOW}};
    if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, 2) != 0 ||
        nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, RECV_WINDOW) != 0)
        return WF_H2_E_IO;
    return 0;
}
