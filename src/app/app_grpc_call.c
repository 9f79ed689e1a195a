/*
 * app_grpc_call.c - the calls of weft-app's gRPC server (see app_grpc.h for what they answer,
 * app_grpc_internal.h for the structures): request checks on the HEADERS, the request message
 * from DATA, shop.Echo/Echo, shop.Echo/EchoStream and grpc.health.v1.Health/Check, and the
 * response: headers (or Trailers-Only), messages through a data provider, trailers.
 *
 * A call's response bytes wait in its own buffer and reach nghttp2 through the data provider,
 * which defers (NGHTTP2_ERR_DEFERRED) while the call has nothing ready and is resumed when it
 * has; an EchoStream without delay makes its messages inside the provider, as HTTP/2 flow
 * control takes them, so a slow reader holds at most about one frame of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app_grpc_internal.h"

#define NV(n, v, vl)                                                                               \
    (nghttp2_nv)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE                  \
    }
#define NVS(n, v) NV(n, v, strlen(v))

/* ---- calls ---------------------------------------------------------------------------- */

static void call_freed(uv_handle_t *h)
{
    struct gcall *call = h->data;
    wf_grpc_decoder_free(&call->dec);
    wf_strbuf_free(&call->req);
    wf_strbuf_free(&call->out);
    free(call->x_message);
    free(call->status_msg);
    free(call);
}

void app_grpc_call_release(struct gcall *call)
{
    struct gconn *c = call->conn;
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    call->conn = NULL;
    uv_close((uv_handle_t *)&call->timer, call_freed);
}

static struct gcall *call_new(struct gconn *c, int32_t id)
{
    struct gcall *call = calloc(1, sizeof *call);
    if (!call)
        return NULL;
    if (uv_timer_init(c->g->loop, &call->timer) != 0) {
        free(call);
        return NULL;
    }
    call->timer.data = call;
    call->conn = c;
    call->id = id;
    wf_grpc_decoder_init(&call->dec, APP_GRPC_MAX_MSG);
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    return call;
}

/* The response's header list: :status, content-type, the app's x-weft-* headers, and (for a
 * Trailers-Only answer, status >= 0) grpc-status and grpc-message. Returns the count. */
static size_t response_nva(const struct gcall *call, nghttp2_nv *nv, const char *http_status,
                           int status, char *num)
{
    const struct app_grpc_config *cfg = &call->conn->g->cfg;
    size_t n = 0;
    nv[n++] = NVS(":status", http_status);
    nv[n++] = NVS("content-type", "application/grpc");
    if (cfg->name)
        nv[n++] = NVS("x-weft-app", cfg->name);
    if (cfg->pod)
        nv[n++] = NVS("x-weft-pod", cfg->pod);
    if (cfg->version)
        nv[n++] = NVS("x-weft-version", cfg->version);
    if (status >= 0) {
        snprintf(num, 12, "%d", status);
        nv[n++] = NVS("grpc-status", num);
        if (call->status_msg)
            nv[n++] = NVS("grpc-message", call->status_msg);
    }
    return n;
}

/* Keeps the status and its grpc-message (percent-encoded) for the end of the call. */
static void call_set_status(struct gcall *call, int status, const char *msg, size_t len)
{
    call->status = status;
    call->done = true;
    free(call->status_msg);
    call->status_msg = NULL;
    if (!msg || !len)
        return;
    char *raw = strndup(msg, len);
    call->status_msg = raw ? wf_grpc_message_encode(raw) : NULL;
    free(raw);
    /* out of memory: the status goes without its message */
}

static ssize_t read_out(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *ud);

/* Hands what the call has (messages and/or its end) to nghttp2: the response headers with a
 * data provider the first time, a resume after that. A call that ends before any message is
 * answered Trailers-Only. */
static void call_push(struct gcall *call)
{
    nghttp2_session *s = call->conn->session;
    nghttp2_nv nv[8];
    char num[12];
    if (!call->headers_sent) {
        bool only = call->done && call->out.len == 0 && !call->lazy;
        nghttp2_data_provider dp = {.source.ptr = call, .read_callback = read_out};
        size_t n = response_nva(call, nv, "200", only ? call->status : -1, num);
        call->headers_sent = true;
        if (nghttp2_submit_response(s, call->id, nv, n, only ? NULL : &dp) != 0)
            (void)nghttp2_submit_rst_stream(
                s, NGHTTP2_FLAG_NONE, call->id,
                NGHTTP2_INTERNAL_ERROR); /* fails only with the session */
        return;
    }
    if (call->deferred) {
        call->deferred = false;
        (void)nghttp2_session_resume_data(s, call->id); /* fails only for a closed stream */
    }
}

/* Ends the call with a status (after the messages already queued). */
static void call_finish(struct gcall *call, int status, const char *msg)
{
    uv_timer_stop(&call->timer);
    call->lazy = false;
    call_set_status(call, status, msg, msg ? strlen(msg) : 0);
    call_push(call);
}

/* An answer that is not gRPC's 200 (405 for a method, 415 for a content-type), Trailers-Only
 * style, as grpc-go's early aborts. */
static void call_reject(struct gcall *call, const char *http_status, int status, const char *msg)
{
    nghttp2_nv nv[8];
    char num[12];
    call_set_status(call, status, msg, strlen(msg));
    call->headers_sent = true;
    size_t n = response_nva(call, nv, http_status, status, num);
    if (nghttp2_submit_response(call->conn->session, call->id, nv, n, NULL) != 0)
        (void)nghttp2_submit_rst_stream(call->conn->session, NGHTTP2_FLAG_NONE, call->id,
                                        NGHTTP2_INTERNAL_ERROR); /* fails only with the session */
}

/* ---- Echo, EchoStream, Health --------------------------------------------------------- */

static void echo_put(struct gcall *call)
{
    const struct app_grpc *g = call->conn->g;
    struct app_echo_request rq;
    app_echo_request_decode((const uint8_t *)call->req.data, call->req.len, &rq); /* checked */
    app_echo_response_put(&call->out, rq.message, rq.message_len, g->hostname,
                          (int32_t)call->next_index++);
}

/* The answer after the delay: Echo's one message or status; EchoStream's next message. */
static void echo_step(struct gcall *call)
{
    if (call->method == M_ECHO && call->plan.status != 0) {
        call_set_status(call, call->plan.status, call->plan.status_msg, call->plan.status_msg_len);
        call_push(call); /* Trailers-Only */
        return;
    }
    echo_put(call);
    if (wf_strbuf_failed(&call->out)) {
        wf_strbuf_reset(&call->out);
        call->out.failed = false;
        call_finish(call, 8, "weft-app: out of memory");
        return;
    }
    if (call->next_index >= call->plan.count) {
        uv_timer_stop(&call->timer);
        call_set_status(call, call->plan.status, call->plan.status_msg, call->plan.status_msg_len);
    }
    call_push(call);
}

/* Fills a lazy EchoStream (no delay) up to `want` bytes; the last message sets the end. */
static void stream_fill(struct gcall *call, size_t want)
{
    while (call->lazy && call->out.len - call->out_off < want &&
           call->next_index < call->plan.count) {
        echo_put(call);
        if (wf_strbuf_failed(&call->out))
            return; /* read_out fails the stream */
    }
    if (call->lazy && call->next_index >= call->plan.count) {
        call->lazy = false;
        call_set_status(call, call->plan.status, call->plan.status_msg, call->plan.status_msg_len);
    }
}

static void on_delay(uv_timer_t *t)
{
    struct gcall *call = t->data;
    struct gconn *c = call->conn;
    echo_step(call);
    app_grpc_conn_flush(c);
}

static void echo_start(struct gcall *call)
{
    struct app_echo_request rq;
    const char *err = NULL;
    const char *xm = call->x_message;
    if (app_echo_request_decode((const uint8_t *)call->req.data, call->req.len, &rq) != 0) {
        call_finish(call, 13, "grpc: error unmarshalling request");
        return;
    }
    int st = app_echo_plan_make(&rq, call->x_delay[0] ? call->x_delay : NULL,
                                call->x_status[0] ? call->x_status : NULL, xm, &call->plan, &err);
    if (st != 0) {
        call_finish(call, st, err);
        return;
    }
    if (call->method == M_ECHO)
        call->plan.count = 1; /* unary: one message whatever count says */
    if (call->plan.delay_ms > 0) {
        uint64_t repeat = call->method == M_STREAM ? call->plan.delay_ms : 0;
        if (uv_timer_start(&call->timer, on_delay, call->plan.delay_ms, repeat) != 0)
            call_finish(call, 13, "weft-app: cannot start a timer");
        return;
    }
    if (call->method == M_STREAM) {
        call->lazy = true; /* messages are made as nghttp2 takes them */
        call_push(call);
        return;
    }
    echo_step(call);
}

static void health_check(struct gcall *call)
{
    const uint8_t *svc;
    size_t len;
    if (app_health_request_decode((const uint8_t *)call->req.data, call->req.len, &svc, &len) !=
        0) {
        call_finish(call, 13, "grpc: error unmarshalling request");
        return;
    }
    if (len != 0 && !(len == 9 && memcmp(svc, "shop.Echo", 9) == 0)) {
        call_finish(call, 5, "unknown service"); /* grpc-go's health server */
        return;
    }
    app_health_response_put(&call->out, APP_HEALTH_SERVING);
    call_finish(call, wf_strbuf_failed(&call->out) ? 8 : 0, NULL);
}

/* The request stream ended: answer. */
static void request_end(struct gcall *call)
{
    call->ended = true;
    if (call->done || call->headers_sent)
        return; /* already answered (an error while reading) */
    if (!wf_grpc_decoder_idle(&call->dec)) {
        call_finish(call, 13, "grpc: truncated request message");
        return;
    }
    if (call->nmsgs == 0) {
        call_finish(call, 13, "grpc: no request message");
        return;
    }
    if (call->method == M_HEALTH)
        health_check(call);
    else
        echo_start(call);
}

static int on_message(void *ud, const uint8_t *msg, size_t len)
{
    struct gcall *call = ud;
    if (++call->nmsgs > 1) {
        call_finish(call, 13, "grpc: too many request messages");
        return 1;
    }
    wf_strbuf_append(&call->req, (const char *)msg, len);
    if (wf_strbuf_failed(&call->req)) {
        call_finish(call, 8, "weft-app: out of memory");
        return 1;
    }
    return 0;
}

/* A framing error in the request: grpc-go's status and text. */
static void request_bad_frame(struct gcall *call, int err)
{
    char text[128];
    if (err == WF_GRPC_E_COMPRESSED && call->encoding[0] && strcmp(call->encoding, "identity")) {
        snprintf(text, sizeof text, "grpc: Decompressor is not installed for grpc-encoding \"%s\"",
                 call->encoding);
        call_finish(call, 12, text);
    } else if (err == WF_GRPC_E_COMPRESSED) {
        call_finish(call, 13, "grpc: compressed flag set with identity or empty encoding");
    } else if (err == WF_GRPC_E_TOO_LARGE) {
        snprintf(text, sizeof text, "grpc: received message larger than max (%zu)",
                 (size_t)APP_GRPC_MAX_MSG);
        call_finish(call, 8, text);
    } else {
        call_finish(call, wf_grpc_err_status(err), wf_grpc_strerror(err));
    }
}

/* ---- nghttp2 callbacks ---------------------------------------------------------------- */

static ssize_t read_out(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct gcall *call = src->ptr;
    stream_fill(call, length);
    if (wf_strbuf_failed(&call->out))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
    size_t avail = call->out.len - call->out_off;
    if (avail == 0 && !call->done) {
        call->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = avail < length ? avail : length;
    memcpy(buf, call->out.data + call->out_off, n);
    call->out_off += n;
    if (call->out_off == call->out.len) {
        wf_strbuf_reset(&call->out);
        call->out_off = 0;
    }
    if (call->out.len == 0 && call->done && !call->lazy) {
        nghttp2_nv nv[2];
        char num[12];
        size_t k = 0;
        snprintf(num, sizeof num, "%d", call->status);
        nv[k++] = NVS("grpc-status", num);
        if (call->status_msg)
            nv[k++] = NVS("grpc-message", call->status_msg);
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (nghttp2_submit_trailer(s, id, nv, k) == 0)
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return (ssize_t)n;
}

static struct gcall *stream_call(nghttp2_session *s, int32_t id)
{
    return id > 0 ? nghttp2_session_get_stream_user_data(s, id) : NULL;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct gconn *c = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct gcall *call = call_new(c, f->hd.stream_id);
    if (!call)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    if (nghttp2_session_set_stream_user_data(s, f->hd.stream_id, call) != 0) {
        app_grpc_call_release(call);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
}

static void keep(char *dst, size_t cap, const uint8_t *v, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

#define IS(n, nl, lit) ((nl) == sizeof(lit) - 1 && memcmp((n), lit, sizeof(lit) - 1) == 0)

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *n, size_t nl,
                     const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    struct gcall *call = stream_call(s, f->hd.stream_id);
    if (!call || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (IS(n, nl, ":method")) {
        call->post = IS(v, vl, "POST");
        keep(call->http_method, sizeof call->http_method, v, vl);
    } else if (IS(n, nl, ":path")) {
        call->path_long = vl >= sizeof call->path;
        keep(call->path, sizeof call->path, v, vl);
    } else if (IS(n, nl, "content-type")) {
        keep(call->ctype, sizeof call->ctype, v, vl);
    } else if (IS(n, nl, "grpc-encoding")) {
        keep(call->encoding, sizeof call->encoding, v, vl);
    } else if (IS(n, nl, "x-delay-ms")) {
        keep(call->x_delay, sizeof call->x_delay, v, vl);
    } else if (IS(n, nl, "x-grpc-status")) {
        keep(call->x_status, sizeof call->x_status, v, vl);
    } else if (IS(n, nl, "x-grpc-message") && !call->x_message) {
        call->x_message = strndup((const char *)v, vl);
    }
    return 0;
}

static enum grpc_method method_of(const struct gcall *call)
{
    if (call->path_long)
        return M_NONE;
    if (strcmp(call->path, APP_GRPC_PATH_ECHO) == 0)
        return M_ECHO;
    if (strcmp(call->path, APP_GRPC_PATH_ECHO_STREAM) == 0)
        return M_STREAM;
    if (strcmp(call->path, APP_GRPC_PATH_HEALTH) == 0)
        return M_HEALTH;
    return M_NONE;
}

/* The request HEADERS are in: check them (app_grpc.h) and accept the call or answer. */
static void request_head(struct gcall *call)
{
    char text[512];
    if (!call->post) {
        snprintf(text, sizeof text,
                 "Received a HEADERS frame with :method \"%s\" which should be POST",
                 call->http_method);
        call_reject(call, "405", 13, text);
        return;
    }
    if (!app_grpc_content_type_ok(call->ctype, strlen(call->ctype))) {
        snprintf(text, sizeof text, "invalid gRPC request content-type \"%s\"", call->ctype);
        call_reject(call, "415", 3, text);
        return;
    }
    call->method = method_of(call);
    if (call->method == M_NONE) {
        call_finish(call, 12,
                    app_grpc_unknown_text(call->path, strlen(call->path), text, sizeof text));
        return;
    }
    call->accepted = true;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct gcall *call = stream_call(s, f->hd.stream_id);
    if (!call || (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA))
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
        request_head(call);
    if ((f->hd.flags & NGHTTP2_FLAG_END_STREAM) && call->accepted && !call->ended)
        request_end(call);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud)
{
    struct gcall *call = stream_call(s, id);
    if (!call || !call->accepted || call->done || call->headers_sent)
        return 0; /* answered already: the rest of the request is dropped */
    int rv = wf_grpc_decoder_feed(&call->dec, data, len, on_message, call);
    if (rv != 0 && rv != WF_GRPC_E_STOPPED)
        request_bad_frame(call, rv);
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *ud)
{
    struct gcall *call = stream_call(s, id);
    if (!call)
        return 0;
    (void)nghttp2_session_set_stream_user_data(s, id, NULL); /* the stream exists here */
    app_grpc_call_release(call); /* stops its timer: a reset cancels the delay */
    return 0;
}

/* After the final HEADERS of an answer, a request still open is reset with NO_ERROR. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    if (f->hd.type == NGHTTP2_HEADERS && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        nghttp2_session_get_stream_remote_close(s, f->hd.stream_id) == 0)
        (void)nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id,
                                        NGHTTP2_NO_ERROR); /* best effort, as the trailers went */
    return 0;
}

nghttp2_session_callbacks *app_grpc_callbacks(void)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return NULL;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    return cb;
}
