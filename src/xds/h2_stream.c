/*
 * h2_stream.c - gRPC streaming calls over nghttp2 + libuv (see h2_stream.h).
 *
 * Re-entrancy: every entry from libuv (read, write, timer, connect) and every public call
 * brackets its work with enter()/leave(). Only the outermost leave() drives nghttp2 output
 * (nghttp2 forbids session_send/recv from inside its callbacks) and tears a connection
 * down, so user callbacks may call any public function.
 */
#include "xds/h2_stream.h"

#include <arpa/inet.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "xds/grpc_frame.h"

#define WRITE_HIGH  ((size_t)256 * 1024) /* bytes handed to libuv and not yet written */
#define RECV_WINDOW ((int32_t)1 << 20)   /* our HTTP/2 receive windows, stream and connection */
#define READ_BUF    ((size_t)64 * 1024)
#define NO_CLOSE    (-1)

struct wf_h2_buf {
    size_t refs;
    size_t len;
    uint8_t *data; /* inline (after the struct) or taken over (freed with free) */
    bool owned;    /* data is a separate allocation */
};

/* A range of a buffer waiting in a call's send queue (one reference each). */
typedef struct seg {
    wf_h2_buf *buf;
    size_t off, len;
} seg;

struct wf_h2_call {
    wf_h2_conn *conn;
    wf_h2_call *prev, *next;
    int32_t stream_id;
    void *data;
    wf_grpc_decoder dec;
    seg *q; /* send queue: q[q_head..q_n), ring-less (compacted when full) */
    size_t q_head, q_n, q_cap;
    size_t queued;   /* bytes in the queue not yet framed by nghttp2 */
    bool deferred;   /* data provider returned NGHTTP2_ERR_DEFERRED */
    bool finishing;  /* end the stream once the queue drains */
    bool local_done; /* no more sends */
    bool trailers_sent;
    bool cancelled;
    bool accepted; /* server: on_call was called; client: always */
    bool proto_err;
    bool got_status;   /* client: grpc-status received */
    bool remote_ended; /* client: END_STREAM received */
    bool bad_method, bad_path, good_ctype;
    int http_status;
    int status;
    char *message;    /* plain text: to send (server) or received (client) */
    const char *path; /* the :path served (server: from opts.paths) or requested (client) */
};

struct wf_h2_conn {
    uv_loop_t *loop;
    union { /* both begin with the uv_stream_t fields, so tcp names either */
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    };
    uv_timer_t ping_timer, ping_deadline;
    uv_idle_t flush; /* runs deferred work on the next loop iteration */
    uv_connect_t connect_req;
    nghttp2_session *session;
    wf_h2_server *server;
    wf_h2_opts opts;
    wf_h2_handlers h;
    wf_h2_call *calls;
    char authority[64];
    int depth;
    int pending_close; /* wf_h2_end_reason or NO_CLOSE */
    int open_handles;
    bool connected, closing, ping_outstanding, is_pipe, has_peer;
    char peer[128]; /* "ip:port", "[ip6]:port" or "unix:path" (has_peer) */
    size_t write_inflight;
    struct wreq *batch; /* the write being collected (send_data_cb appends to it) */
    uint8_t *own_rbuf;  /* a client's read buffer (READ_BUF bytes, lazily); server connections
                         * share their server's */
};

struct wf_h2_server {
    union {
        uv_tcp_t listener;
        uv_pipe_t pipe_listener;
    };
    bool is_pipe;
    uv_loop_t *loop;
    wf_h2_opts opts;
    const char *pathv[WF_H2_MAX_PATHS + 1]; /* served paths, NULL-terminated (opts.paths) */
    wf_h2_handlers h;
    wf_h2_conn **conns; /* open (not torn down) connections */
    size_t nconns, capconns;
    size_t live; /* connections not yet freed */
    int port;
    size_t queued; /* bytes in the send queues of every call of every connection */
    bool closing, listener_closed;
    /* One read buffer for every connection of the server: libuv runs one read callback at a
     * time and nghttp2_session_mem_recv consumes the bytes before it returns, so nothing
     * refers to them afterwards (1,000 proxies would otherwise hold 64 MiB of it). */
    uint8_t rbuf[READ_BUF];
};

/* One part of a write: a range of a shared buffer, or (buf NULL) of the write's scratch. */
typedef struct wpart {
    wf_h2_buf *buf;
    size_t off, len;
} wpart;

/* One uv_write: the frames nghttp2 serialized (copied into scratch: headers, control frames,
 * DATA frame headers) and DATA payloads referenced in place (NGHTTP2_DATA_FLAG_NO_COPY). */
typedef struct wreq {
    uv_write_t req;
    wf_h2_conn *c;
    size_t len; /* bytes in all parts */
    uint8_t *scratch;
    size_t s_len, s_cap;
    wpart *parts;
    size_t n, cap;
} wreq;

static void leave(wf_h2_conn *c);

static void enter(wf_h2_conn *c)
{
    c->depth++;
}

static void fail(wf_h2_conn *c, wf_h2_end_reason r)
{
    if (!c->closing && c->pending_close == NO_CLOSE)
        c->pending_close = (int)r;
}

static void on_flush(uv_idle_t *h)
{
    wf_h2_conn *c = h->data;
    (void)uv_idle_stop(h); /* cannot fail */
    enter(c);
    leave(c);
}

/* Schedules output and pending closes for the next loop iteration, so public functions
 * never call handlers before they return. Inside an entry point the outer leave() does it. */
static void kick(wf_h2_conn *c)
{
    if (c->depth > 0 || c->closing || uv_is_active((uv_handle_t *)&c->flush))
        return;
    if (uv_idle_start(&c->flush, on_flush) != 0) {
        enter(c);
        leave(c);
    }
}

static void check_rv(wf_h2_conn *c, int rv)
{
    if (rv < 0)
        fail(c, WF_H2_END_PROTOCOL);
}

/* ---- options ------------------------------------------------------------------------ */

static void opts_fill(wf_h2_opts *dst, const wf_h2_opts *src)
{
    if (src)
        *dst = *src;
    else
        memset(dst, 0, sizeof *dst);
    if (dst->max_msg == 0)
        dst->max_msg = WF_GRPC_DEFAULT_MAX_MSG;
    if (dst->max_send_queue == 0)
        dst->max_send_queue = 2 * dst->max_msg + WF_GRPC_HDR_LEN;
    if (dst->max_streams == 0)
        dst->max_streams = 100;
    if (dst->ping_timeout_ms == 0)
        dst->ping_timeout_ms = 20000;
    if (dst->path == NULL)
        dst->path = WF_XDS_ADS_PATH;
}

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

/* ---- calls -------------------------------------------------------------------------- */

static wf_h2_call *call_new(wf_h2_conn *c)
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

/* ---- shared buffers ----------------------------------------------------------------------- */

wf_h2_buf *wf_h2_buf_new(size_t len, uint8_t **data)
{
    wf_h2_buf *b = malloc(sizeof *b + (len ? len : 1));
    if (b == NULL)
        return NULL;
    b->refs = 1;
    b->len = len;
    b->data = (uint8_t *)(b + 1);
    b->owned = false;
    if (data)
        *data = b->data;
    return b;
}

wf_h2_buf *wf_h2_buf_take(void *data, size_t len)
{
    wf_h2_buf *b = malloc(sizeof *b);
    if (b == NULL) {
        free(data);
        return NULL;
    }
    b->refs = 1;
    b->len = len;
    b->data = data;
    b->owned = true;
    return b;
}

wf_h2_buf *wf_h2_buf_ref(wf_h2_buf *b)
{
    if (b)
        b->refs++;
    return b;
}

void wf_h2_buf_unref(wf_h2_buf *b)
{
    if (b == NULL || --b->refs > 0)
        return;
    if (b->owned)
        free(b->data);
    free(b);
}

const uint8_t *wf_h2_buf_data(const wf_h2_buf *b)
{
    return b->data;
}

size_t wf_h2_buf_len(const wf_h2_buf *b)
{
    return b->len;
}

/* Adds n bytes to the call's queued count, and to its server's total. */
static void queued_add(wf_h2_call *call, size_t n)
{
    call->queued += n;
    if (call->conn->server)
        call->conn->server->queued += n;
}

/* Takes n bytes (<= the call's count) off both counts. */
static void queued_sub(wf_h2_call *call, size_t n)
{
    call->queued -= n;
    if (call->conn->server)
        call->conn->server->queued -= n;
}

static void queue_drop(wf_h2_call *call)
{
    for (size_t i = call->q_head; i < call->q_n; i++)
        wf_h2_buf_unref(call->q[i].buf);
    free(call->q);
    call->q = NULL;
    call->q_head = call->q_n = call->q_cap = 0;
    queued_sub(call, call->queued);
}

static void call_free(wf_h2_call *call)
{
    wf_h2_conn *c = call->conn;
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    queue_drop(call);
    wf_grpc_decoder_free(&call->dec);
    free(call->message);
    free(call);
}

/* Reports the end (for calls the user knows about) and frees the call. */
static void call_end(wf_h2_call *call, wf_h2_end_reason r, int status, uint32_t h2_error)
{
    wf_h2_conn *c = call->conn;
    if (call->accepted && c->h.on_end) {
        wf_h2_end e = {r, status, call->message ? call->message : "", h2_error};
        c->h.on_end(call, &e, c->h.ud);
    }
    call_free(call);
}

static int set_message(wf_h2_call *call, const char *text, size_t len)
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

/* ---- nghttp2 output: data provider ----------------------------------------------------- */

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE             \
    }

static int submit_trailers(nghttp2_session *s, wf_h2_call *call)
{
    char code[16];
    snprintf(code, sizeof code, "%d", call->status);
    char *enc = wf_grpc_message_encode(call->message ? call->message : "");
    if (enc == NULL)
        return NGHTTP2_ERR_NOMEM;
    nghttp2_nv nva[] = {NV("grpc-status", code), NV("grpc-message", enc)};
    size_t n = enc[0] ? 2 : 1;
    int rv = nghttp2_submit_trailer(s, call->stream_id, nva, n);
    free(enc);
    if (rv == 0)
        call->trailers_sent = true;
    return rv;
}

/* ---- writes: scratch bytes and referenced ranges ------------------------------------------ */

static int batch_part(wreq *w, wf_h2_buf *buf, size_t off, size_t len)
{
    wpart *last = w->n ? &w->parts[w->n - 1] : NULL;
    if (last && last->buf == buf && last->off + last->len == off) {
        last->len += len; /* contiguous: one iovec */
        w->len += len;
        return 0;
    }
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 16;
        wpart *np = realloc(w->parts, ncap * sizeof *np);
        if (np == NULL)
            return -1;
        w->parts = np;
        w->cap = ncap;
    }
    w->parts[w->n++] = (wpart){wf_h2_buf_ref(buf), off, len};
    w->len += len;
    return 0;
}

/* Appends a copy of len bytes. 0 or -1 (out of memory). */
static int batch_copy(wreq *w, const uint8_t *p, size_t len)
{
    if (len == 0)
        return 0;
    if (w->s_len + len > w->s_cap) {
        size_t ncap = w->s_cap ? w->s_cap * 2 : 4096;
        while (ncap < w->s_len + len)
            ncap *= 2;
        uint8_t *nb = realloc(w->scratch, ncap);
        if (nb == NULL)
            return -1;
        w->scratch = nb;
        w->s_cap = ncap;
    }
    memcpy(w->scratch + w->s_len, p, len);
    w->s_len += len;
    return batch_part(w, NULL, w->s_len - len, len);
}

static void wreq_free(wreq *w)
{
    for (size_t i = 0; i < w->n; i++)
        wf_h2_buf_unref(w->parts[i].buf);
    free(w->parts);
    free(w->scratch);
    free(w);
}

/* Moves length queued bytes of call into the write w (references, no copy). -1 on OOM. */
static int queue_take(wf_h2_call *call, wreq *w, size_t length)
{
    while (length > 0 && call->q_head < call->q_n) {
        seg *sg = &call->q[call->q_head];
        size_t k = sg->len < length ? sg->len : length;
        if (batch_part(w, sg->buf, sg->off, k) != 0)
            return -1;
        sg->off += k;
        sg->len -= k;
        length -= k;
        queued_sub(call, k);
        if (sg->len == 0) {
            wf_h2_buf_unref(sg->buf);
            call->q_head++;
        }
    }
    if (call->q_head == call->q_n)
        call->q_head = call->q_n = 0;
    return length == 0 ? 0 : -1;
}

/* Data is never copied into nghttp2's buffer: the length is announced (NO_COPY) and
 * send_data_cb moves the bytes by reference into the write being collected. */
static ssize_t data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    wf_h2_call *call = src->ptr;
    size_t n = call->queued < length ? call->queued : length;
    if (n > 0)
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n < call->queued)
        return (ssize_t)n;
    if (!call->finishing) {
        if (n > 0)
            return (ssize_t)n;
        call->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (call->conn->server) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (submit_trailers(s, call) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

static int send_data_cb(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *src, void *ud)
{
    wf_h2_conn *c = ud;
    wf_h2_call *call = src->ptr;
    wreq *w = c->batch;
    static const uint8_t zeros[256];
    size_t pad = frame->data.padlen;
    uint8_t padlen = pad > 0 ? (uint8_t)(pad - 1) : 0;
    if (w == NULL || batch_copy(w, framehd, 9) != 0 || (pad > 0 && batch_copy(w, &padlen, 1)) ||
        queue_take(call, w, length) != 0 || (pad > 1 && batch_copy(w, zeros, pad - 1)))
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static void resume(wf_h2_call *call)
{
    if (!call->deferred)
        return;
    call->deferred = false;
    check_rv(call->conn, nghttp2_session_resume_data(call->conn->session, call->stream_id));
}

/* ---- nghttp2 input callbacks ------------------------------------------------------------ */

static wf_h2_call *stream_call(nghttp2_session *s, int32_t id)
{
    return id > 0 ? nghttp2_session_get_stream_user_data(s, id) : NULL;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    wf_h2_conn *c = ud;
    if (!c->server || f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    wf_h2_call *call = call_new(c);
    if (call == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    call->stream_id = f->hd.stream_id;
    call->bad_path = true; /* until a served :path arrives */
    if (nghttp2_session_set_stream_user_data(s, f->hd.stream_id, call) != 0) {
        call_free(call);
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

static void server_header(wf_h2_conn *c, wf_h2_call *call, const uint8_t *n, size_t nl,
                          const uint8_t *v, size_t vl)
{
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
        if (set_message(call, text, strlen(text)) != 0)
            fail(c, WF_H2_END_PROTOCOL);
    }
    call->local_done = true;
    if (!nghttp2_session_get_stream_local_close(c->session, call->stream_id))
        check_rv(c, nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                              NGHTTP2_NO_ERROR));
}

static int respond(wf_h2_conn *c, wf_h2_call *call)
{
    nghttp2_data_provider dp = {.source.ptr = call, .read_callback = data_read};
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
    if (set_message(call, text, strlen(text)) != 0)
        fail(c, WF_H2_END_PROTOCOL);
    queue_drop(call);
    call->local_done = true;
    if (c->server) {
        call->finishing = true;
        resume(call);
        return;
    }
    check_rv(c, nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
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
    call_end(call, r, status ? call->status : -1, r == WF_H2_END_RESET ? error_code : 0);
    return 0;
}

/* Server: after the final HEADERS (trailers, Trailers-Only or 415), stop the request side. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    wf_h2_conn *c = ud;
    if (!c->server || f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    if (nghttp2_session_get_stream_remote_close(s, f->hd.stream_id) == 0)
        check_rv(
            c, nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR));
    return 0;
}

static int session_new(wf_h2_conn *c)
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
    nghttp2_session_callbacks_set_send_data_callback(cb, send_data_cb);
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

/* ---- libuv I/O -------------------------------------------------------------------------- */

static void on_write(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    wf_h2_conn *c = w->c;
    c->write_inflight -= w->len;
    wreq_free(w);
    if (c->closing)
        return;
    enter(c);
    if (status < 0)
        fail(c, WF_H2_END_CONN_LOST);
    leave(c);
}

/* Collects about WRITE_HIGH bytes of nghttp2 output into a new write. Returns it (NULL when
 * nothing is pending, or after fail()). */
static wreq *collect(wf_h2_conn *c)
{
    wreq *w = calloc(1, sizeof *w);
    if (w == NULL) {
        fail(c, WF_H2_END_PROTOCOL);
        return NULL;
    }
    w->c = c;
    c->batch = w;
    while (w->len < WRITE_HIGH && c->pending_close == NO_CLOSE) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(c->session, &p);
        if (n <= 0) {
            check_rv(c, (int)n);
            break;
        }
        if (batch_copy(w, p, (size_t)n) != 0) {
            fail(c, WF_H2_END_PROTOCOL);
            break;
        }
    }
    c->batch = NULL;
    if (w->len == 0 || c->pending_close != NO_CLOSE) {
        wreq_free(w);
        return NULL;
    }
    return w;
}

static void pump(wf_h2_conn *c)
{
    while (c->connected && c->write_inflight < WRITE_HIGH && c->pending_close == NO_CLOSE) {
        wreq *w = collect(c);
        if (w == NULL)
            return;
        uv_buf_t small[16];
        uv_buf_t *bufs = w->n <= 16 ? small : malloc(w->n * sizeof *bufs);
        if (bufs == NULL) {
            wreq_free(w);
            fail(c, WF_H2_END_PROTOCOL);
            return;
        }
        for (size_t i = 0; i < w->n; i++) {
            const wpart *pt = &w->parts[i];
            const uint8_t *base = pt->buf ? pt->buf->data : w->scratch;
            bufs[i] = uv_buf_init((char *)(base + pt->off), (unsigned)pt->len);
        }
        /* libuv copies the uv_buf_t array; the bytes stay referenced until on_write */
        int rv = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, (unsigned)w->n, on_write);
        if (bufs != small)
            free(bufs);
        if (rv != 0) {
            wreq_free(w);
            fail(c, WF_H2_END_CONN_LOST);
            return;
        }
        c->write_inflight += w->len;
    }
}

static void on_handle_closed(uv_handle_t *h);

static void teardown(wf_h2_conn *c, wf_h2_end_reason r)
{
    c->closing = true;
    while (c->calls) {
        wf_h2_call *call = c->calls;
        if (call->stream_id > 0)
            (void)nghttp2_session_set_stream_user_data(c->session, call->stream_id, NULL);
        call_end(call, r, -1, 0);
    }
    if (c->h.on_conn_closed)
        c->h.on_conn_closed(c, r, c->h.ud);
    wf_h2_server *s = c->server;
    for (size_t i = 0; s && i < s->nconns; i++) {
        if (s->conns[i] == c) {
            s->conns[i] = s->conns[--s->nconns];
            break;
        }
    }
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->ping_timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->ping_deadline, on_handle_closed);
    uv_close((uv_handle_t *)&c->flush, on_handle_closed);
}

static bool session_done(wf_h2_conn *c)
{
    return c->connected && c->write_inflight == 0 && !nghttp2_session_want_read(c->session) &&
           !nghttp2_session_want_write(c->session);
}

static void leave(wf_h2_conn *c)
{
    if (c->depth > 1 || c->closing) {
        c->depth--;
        return;
    }
    if (c->pending_close == NO_CLOSE)
        pump(c);
    c->depth = 0;
    if (c->pending_close != NO_CLOSE)
        teardown(c, (wf_h2_end_reason)c->pending_close);
    else if (session_done(c))
        teardown(c, WF_H2_END_CONN_LOST);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    wf_h2_conn *c = h->data;
    if (c->server) {
        *buf = uv_buf_init((char *)c->server->rbuf, (unsigned)sizeof c->server->rbuf);
        return;
    }
    if (!c->own_rbuf)
        c->own_rbuf = malloc(READ_BUF);
    /* out of memory: a zero-length buffer makes libuv report UV_ENOBUFS to on_read */
    *buf = uv_buf_init((char *)c->own_rbuf, c->own_rbuf ? (unsigned)READ_BUF : 0);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    wf_h2_conn *c = st->data;
    if (nread == 0 || c->closing)
        return;
    enter(c);
    if (nread < 0) {
        fail(c, WF_H2_END_CONN_LOST);
    } else {
        ssize_t rv =
            nghttp2_session_mem_recv(c->session, (const uint8_t *)buf->base, (size_t)nread);
        if (rv < 0)
            fail(c, WF_H2_END_PROTOCOL);
    }
    leave(c);
}

/* ---- keepalive -------------------------------------------------------------------------- */

static void on_ping_deadline(uv_timer_t *t)
{
    wf_h2_conn *c = t->data;
    enter(c);
    fail(c, WF_H2_END_KEEPALIVE);
    leave(c);
}

static void on_ping_timer(uv_timer_t *t)
{
    wf_h2_conn *c = t->data;
    if (c->ping_outstanding)
        return;
    enter(c);
    check_rv(c, nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL));
    c->ping_outstanding = true;
    if (uv_timer_start(&c->ping_deadline, on_ping_deadline, c->opts.ping_timeout_ms, 0) != 0)
        fail(c, WF_H2_END_PROTOCOL);
    leave(c);
}

static int start_io(wf_h2_conn *c)
{
    c->connected = true;
    int rv = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    uint64_t iv = c->opts.ping_interval_ms;
    if (rv == 0 && iv > 0)
        rv = uv_timer_start(&c->ping_timer, on_ping_timer, iv, iv);
    return rv;
}

/* ---- connections ------------------------------------------------------------------------ */

static void server_maybe_free(wf_h2_server *s)
{
    if (s->closing && s->listener_closed && s->live == 0) {
        free(s->conns);
        free(s);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    wf_h2_conn *c = h->data;
    if (--c->open_handles > 0)
        return;
    wf_h2_server *s = c->server;
    nghttp2_session_del(c->session);
    free(c->own_rbuf);
    free(c);
    if (s) {
        s->live--;
        server_maybe_free(s);
    }
}

static wf_h2_conn *conn_new(uv_loop_t *loop, const wf_h2_opts *o, const wf_h2_handlers *h,
                            bool pipe)
{
    wf_h2_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->loop = loop;
    c->opts = *o;
    c->h = *h;
    c->pending_close = NO_CLOSE;
    c->is_pipe = pipe;
    if ((pipe ? uv_pipe_init(loop, &c->pipe, 0) : uv_tcp_init(loop, &c->tcp)) != 0) {
        free(c);
        return NULL;
    }
    /* uv_timer_init and uv_idle_init cannot fail (it only initialises the struct). */
    (void)uv_timer_init(loop, &c->ping_timer);
    (void)uv_timer_init(loop, &c->ping_deadline);
    (void)uv_idle_init(loop, &c->flush);
    c->tcp.data = c->ping_timer.data = c->ping_deadline.data = c->flush.data = c;
    c->open_handles = 4;
    return c;
}

/* Frees a connection the user never saw (setup failure): no callbacks. */
static void conn_discard(wf_h2_conn *c)
{
    c->h = (wf_h2_handlers){0};
    c->depth = 0;
    c->pending_close = NO_CLOSE;
    teardown(c, WF_H2_END_LOCAL_CLOSE);
}

void wf_h2_conn_close(wf_h2_conn *c)
{
    if (c->closing)
        return;
    fail(c, WF_H2_END_LOCAL_CLOSE);
    kick(c);
}

void wf_h2_conn_pause_reads(wf_h2_conn *c, bool pause)
{
    if (c->closing || !c->connected)
        return;
    int rv = pause ? uv_read_stop((uv_stream_t *)&c->tcp)
                   : uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rv != 0) {
        fail(c, WF_H2_END_CONN_LOST);
        kick(c);
    }
}

/* ---- peer address ----------------------------------------------------------------------- */

static void pipe_peer(wf_h2_conn *c)
{
    char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
    size_t len = sizeof path;
    /* The server end knows the path it listens on; the client end knows its peer's. */
    int rv = c->server ? uv_pipe_getsockname(&c->pipe, path, &len)
                       : uv_pipe_getpeername(&c->pipe, path, &len);
    if (rv != 0 || len >= sizeof path)
        return;
    path[len] = '\0';
    snprintf(c->peer, sizeof c->peer, "unix:%s", path);
    c->has_peer = true;
}

/* Records the peer's address text (wf_h2_conn_peer); leaves has_peer false on failure. */
static void read_peer(wf_h2_conn *c)
{
    struct sockaddr_storage ss;
    int len = (int)sizeof ss;
    char ip[INET6_ADDRSTRLEN];
    if (c->is_pipe) {
        pipe_peer(c);
        return;
    }
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    bool v6 = ss.ss_family == AF_INET6;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
    int rv = v6 ? uv_ip6_name(s6, ip, sizeof ip) : uv_ip4_name(s4, ip, sizeof ip);
    if (rv != 0)
        return;
    snprintf(c->peer, sizeof c->peer, v6 ? "[%s]:%d" : "%s:%d", ip,
             ntohs(v6 ? s6->sin6_port : s4->sin_port));
    c->has_peer = true;
}

int wf_h2_conn_peer(const wf_h2_conn *conn, char *out, size_t cap)
{
    if (cap == 0)
        return WF_H2_E_INVAL;
    out[0] = '\0';
    if (!conn->has_peer)
        return WF_H2_E_IO;
    int n = snprintf(out, cap, "%s", conn->peer);
    return n >= 0 && (size_t)n < cap ? 0 : WF_H2_E_INVAL;
}

/* ---- server ----------------------------------------------------------------------------- */

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
    wf_h2_conn *c = conn_new(s->loop, &s->opts, &s->h, s->is_pipe);
    if (c == NULL)
        return;
    c->server = s;
    s->live++;
    if (server_track(s, c) != 0) {
        c->server = NULL;
        s->live--;
        conn_discard(c);
        return;
    }
    if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0 || session_new(c) != 0 || start_io(c) != 0) {
        conn_discard(c);
        return;
    }
    read_peer(c);
    kick(c);
}

static void on_listener_closed(uv_handle_t *h)
{
    wf_h2_server *s = h->data;
    s->listener_closed = true;
    server_maybe_free(s);
}

static int parse_addr(const char *ip, int port, struct sockaddr_storage *ss)
{
    if (strchr(ip, ':'))
        return uv_ip6_addr(ip, port, (struct sockaddr_in6 *)ss);
    return uv_ip4_addr(ip, port, (struct sockaddr_in *)ss);
}

static int server_listen(wf_h2_server *s, const char *ip, int port)
{
    struct sockaddr_storage ss;
    int len = (int)sizeof ss;
    if (parse_addr(ip, port, &ss) != 0)
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
    opts_fill(&s->opts, opts);
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
    /* Closing a connection removes it from s->conns (or defers that if it is busy). */
    size_t n = s->nconns;
    wf_h2_conn **copy = n ? malloc(n * sizeof *copy) : NULL;
    if (n && copy == NULL) {
        while (s->nconns)
            wf_h2_conn_close(s->conns[0]);
        return;
    }
    if (n)
        memcpy(copy, s->conns, n * sizeof *copy);
    for (size_t i = 0; i < n; i++)
        wf_h2_conn_close(copy[i]);
    free(copy);
}

/* ---- client ----------------------------------------------------------------------------- */

static void on_connect(uv_connect_t *req, int status)
{
    wf_h2_conn *c = req->data;
    if (c->closing)
        return;
    enter(c);
    if (status < 0 || start_io(c) != 0)
        fail(c, WF_H2_END_CONN_LOST);
    else
        read_peer(c);
    leave(c);
}

int wf_h2_client_connect(uv_loop_t *loop, const char *ip, int port, const wf_h2_opts *opts,
                         const wf_h2_handlers *h, wf_h2_conn **out)
{
    wf_h2_opts o;
    struct sockaddr_storage ss;
    opts_fill(&o, opts);
    if (parse_addr(ip, port, &ss) != 0)
        return WF_H2_E_INVAL;
    wf_h2_conn *c = conn_new(loop, &o, h, false);
    if (c == NULL)
        return WF_H2_E_NOMEM;
    snprintf(c->authority, sizeof c->authority, strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip, port);
    c->connect_req.data = c;
    int rv = session_new(c);
    if (rv == 0 && uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ss, on_connect))
        rv = WF_H2_E_IO;
    if (rv != 0) {
        conn_discard(c);
        return rv;
    }
    *out = c;
    return 0;
}

int wf_h2_call_open(wf_h2_conn *c, wf_h2_call **out)
{
    if (c->server || c->closing || c->pending_close != NO_CLOSE)
        return c->server ? WF_H2_E_INVAL : WF_H2_E_CLOSED;
    wf_h2_call *call = call_new(c);
    if (call == NULL)
        return WF_H2_E_NOMEM;
    call->accepted = true;
    call->path = c->opts.path;
    nghttp2_nv nva[] = {NV(":method", "POST"),
                        NV(":scheme", "http"),
                        NV(":path", c->opts.path),
                        NV(":authority", c->authority),
                        NV("content-type", "application/grpc"),
                        NV("te", "trailers"),
                        NV("user-agent", "weft-xds/0.1")};
    nghttp2_data_provider dp = {.source.ptr = call, .read_callback = data_read};
    int32_t id =
        nghttp2_submit_request(c->session, NULL, nva, sizeof nva / sizeof nva[0], &dp, call);
    if (id < 0) {
        call_free(call);
        return id == NGHTTP2_ERR_NOMEM ? WF_H2_E_NOMEM : WF_H2_E_IO;
    }
    call->stream_id = id;
    *out = call;
    kick(c);
    return 0;
}

/* ---- call API --------------------------------------------------------------------------- */

static bool call_closed(const wf_h2_call *call)
{
    const wf_h2_conn *c = call->conn;
    return call->local_done || c->closing || c->pending_close != NO_CLOSE;
}

/* Room for k more ranges in the call's queue. 0 or -1 (OOM, queue unchanged). */
static int queue_reserve(wf_h2_call *call, size_t k)
{
    if (call->q_head > 0 && call->q_n + k > call->q_cap) {
        memmove(call->q, call->q + call->q_head, (call->q_n - call->q_head) * sizeof *call->q);
        call->q_n -= call->q_head;
        call->q_head = 0;
    }
    if (call->q_n + k <= call->q_cap)
        return 0;
    size_t ncap = call->q_cap ? call->q_cap * 2 : 8;
    while (ncap < call->q_n + k)
        ncap *= 2;
    seg *nq = realloc(call->q, ncap * sizeof *nq);
    if (nq == NULL)
        return -1;
    call->q = nq;
    call->q_cap = ncap;
    return 0;
}

/* Appends one range (taking a reference) to the call's queue; room was reserved. */
static void queue_push(wf_h2_call *call, wf_h2_buf *buf, size_t off, size_t len)
{
    if (len == 0)
        return;
    queued_add(call, len);
    if (call->q_n > call->q_head) {
        seg *last = &call->q[call->q_n - 1];
        if (last->buf == buf && last->off + last->len == off) {
            last->len += len;
            return;
        }
    }
    call->q[call->q_n++] = (seg){wf_h2_buf_ref(buf), off, len};
}

int wf_h2_call_sendv(wf_h2_call *call, const wf_h2_piece *pieces, size_t n)
{
    if (call_closed(call))
        return WF_H2_E_CLOSED;
    size_t len = 0, copied = WF_GRPC_HDR_LEN;
    for (size_t i = 0; i < n; i++) {
        const wf_h2_piece *pc = &pieces[i];
        if (pc->buf && (pc->off > pc->buf->len || pc->len > pc->buf->len - pc->off))
            return WF_H2_E_INVAL;
        if (!pc->buf && pc->len && !pc->data)
            return WF_H2_E_INVAL;
        len += pc->len;
        if (!pc->buf)
            copied += pc->len;
    }
    if (len > UINT32_MAX)
        return WF_H2_E_INVAL;
    if (call->queued + len + WF_GRPC_HDR_LEN > call->conn->opts.max_send_queue)
        return WF_H2_E_BUSY;
    /* The prefix and the pieces to copy go, in order, into one new buffer. */
    uint8_t *w;
    wf_h2_buf *own = wf_h2_buf_new(copied, &w);
    if (own == NULL || queue_reserve(call, n + 1) != 0) {
        wf_h2_buf_unref(own);
        return WF_H2_E_NOMEM;
    }
    (void)wf_grpc_frame_header(w, len); /* cannot fail: len checked above */
    size_t at = WF_GRPC_HDR_LEN;
    queue_push(call, own, 0, WF_GRPC_HDR_LEN);
    for (size_t i = 0; i < n; i++) {
        const wf_h2_piece *pc = &pieces[i];
        if (pc->buf) {
            queue_push(call, pc->buf, pc->off, pc->len);
        } else if (pc->len) {
            memcpy(w + at, pc->data, pc->len);
            queue_push(call, own, at, pc->len);
            at += pc->len;
        }
    }
    wf_h2_buf_unref(own); /* the queue holds its references */
    resume(call);
    kick(call->conn);
    return 0;
}

int wf_h2_call_send(wf_h2_call *call, const void *msg, size_t len)
{
    wf_h2_piece pc = {.data = msg, .len = len};
    return wf_h2_call_sendv(call, &pc, 1);
}

size_t wf_h2_call_pending(const wf_h2_call *call)
{
    return call->queued;
}

int wf_h2_call_finish(wf_h2_call *call, int grpc_status, const char *message)
{
    if (call_closed(call))
        return WF_H2_E_CLOSED;
    if (call->conn->server) {
        const char *m = message ? message : "";
        if (set_message(call, m, strlen(m)) != 0)
            return WF_H2_E_NOMEM;
        call->status = grpc_status;
    }
    call->finishing = true;
    call->local_done = true;
    resume(call);
    kick(call->conn);
    return 0;
}

void wf_h2_call_cancel(wf_h2_call *call)
{
    wf_h2_conn *c = call->conn;
    if (call->cancelled || c->closing)
        return;
    call->cancelled = true;
    call->local_done = true;
    queue_drop(call);
    check_rv(c, nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                          NGHTTP2_CANCEL));
    kick(c);
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

/* ---- Unix domain sockets ---------------------------------------------------------------- */

int wf_h2_client_connect_pipe(uv_loop_t *loop, const char *path, const wf_h2_opts *opts,
                              const wf_h2_handlers *h, wf_h2_conn **out)
{
    wf_h2_opts o;
    opts_fill(&o, opts);
    if (path == NULL || *path == '\0' ||
        strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return WF_H2_E_INVAL;
    wf_h2_conn *c = conn_new(loop, &o, h, true);
    if (c == NULL)
        return WF_H2_E_NOMEM;
    snprintf(c->authority, sizeof c->authority, "localhost"); /* gRPC's unix: authority */
    c->connect_req.data = c;
    int rv = session_new(c);
    if (rv != 0) {
        conn_discard(c);
        return rv;
    }
    /* Errors (no such socket, refused) arrive in on_connect: WF_H2_END_CONN_LOST. */
    uv_pipe_connect(&c->connect_req, &c->pipe, path, on_connect);
    *out = c;
    return 0;
}

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
    opts_fill(&s->opts, opts);
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
