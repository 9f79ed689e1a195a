/*
 * h2_send.c - the send path of h2_stream (see h2_internal.h): reference-counted shared
 * buffers (wf_h2_buf), each call's send queue of buffer ranges and its byte counts (with the
 * server's total), wf_h2_call_sendv / wf_h2_call_send, and the NGHTTP2_DATA_FLAG_NO_COPY data
 * provider and send_data callback that move queued ranges into libuv writes by reference.
 */
#include "xds/h2_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared buffers ------------------------------------------------------------------ */

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

/* ---- send queues --------------------------------------------------------------------- */

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

void wf_h2_queue_drop(wf_h2_call *call)
{
    for (size_t i = call->q_head; i < call->q_n; i++)
        wf_h2_buf_unref(call->q[i].buf);
    free(call->q);
    call->q = NULL;
    call->q_head = call->q_n = call->q_cap = 0;
    queued_sub(call, call->queued);
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

/* ---- nghttp2 output: data provider --------------------------------------------------- */

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

/* ---- writes: scratch bytes and referenced ranges ------------------------------------- */

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
int wf_h2_batch_copy(wreq *w, const uint8_t *p, size_t len)
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

void wf_h2_wreq_free(wreq *w)
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
ssize_t wf_h2_data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
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

int wf_h2_send_data_cb(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                       size_t length, nghttp2_data_source *src, void *ud)
{
    wf_h2_conn *c = ud;
    wf_h2_call *call = src->ptr;
    wreq *w = c->batch;
    static const uint8_t zeros[256];
    size_t pad = frame->data.padlen;
    uint8_t padlen = pad > 0 ? (uint8_t)(pad - 1) : 0;
    if (w == NULL || wf_h2_batch_copy(w, framehd, 9) != 0 ||
        (pad > 0 && wf_h2_batch_copy(w, &padlen, 1)) || queue_take(call, w, length) != 0 ||
        (pad > 1 && wf_h2_batch_copy(w, zeros, pad - 1)))
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

void wf_h2_resume(wf_h2_call *call)
{
    if (!call->deferred)
        return;
    call->deferred = false;
    wf_h2_check_rv(call->conn, nghttp2_session_resume_data(call->conn->session, call->stream_id));
}

/* ---- call API: sending --------------------------------------------------------------- */

int wf_h2_call_sendv(wf_h2_call *call, const wf_h2_piece *pieces, size_t n)
{
    if (wf_h2_call_closed(call))
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
    /* a message that could never fit is refused as such, not reported as "retry later" */
    if (len > UINT32_MAX || len + WF_GRPC_HDR_LEN > call->conn->opts.max_send_queue)
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
    wf_h2_resume(call);
    wf_h2_kick(call->conn);
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
