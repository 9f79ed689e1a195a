/*
 * fuzz_kube_stream.c - libFuzzer target for the watch response body (kube/stream.h: chunked
 * transfer coding decoded incrementally, lines split) and each line's watch event
 * (kube/event.h), the bytes a Kubernetes API server (or anything posing as one) sends.
 *
 * Input: byte 0 = read size (1 + byte % 64: how the body is split between feeds); then the
 * chunked body. Invariants: a feed never consumes more than it was given and, until the body
 * ends, consumes all of it; the split decoding gives the same data bytes and the same verdict
 * as one feed of the whole body; every rejection (coding, line, event) has a message; a parsed
 * event of type other than ERROR has an object, and its rv is a string.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/event.h"
#include "kube/stream.h"

/* Decodes body in pieces of step bytes; *ok = no coding error. Returns the data bytes. */
static void decode(const char *body, size_t n, size_t step, wf_strbuf *data, int *ok)
{
    wf_kube_chunked d = {0};
    wf_strbuf why = WF_STRBUF_INIT;
    *ok = 1;
    for (size_t off = 0; off < n && !d.done;) {
        size_t len = n - off < step ? n - off : step;
        long used = wf_kube_chunked_feed(&d, body + off, len, data, &why);
        if (used < 0) {
            if (why.len == 0)
                abort(); /* a rejection without a message */
            *ok = 0;
            break;
        }
        if ((size_t)used > len || (!d.done && (size_t)used != len))
            abort();
        off += (size_t)used;
    }
    wf_strbuf_free(&why);
}

static void events(const wf_strbuf *data, size_t step)
{
    wf_kube_lines l = {0};
    wf_strbuf why = WF_STRBUF_INIT;
    for (size_t off = 0; off < data->len; off += step) {
        size_t len = data->len - off < step ? data->len - off : step;
        if (wf_kube_lines_push(&l, data->data + off, len, &why) != 0) {
            if (why.len == 0)
                abort();
            break;
        }
        const char *line;
        long n;
        while ((n = wf_kube_lines_pop(&l, &line)) >= 0) {
            wf_kube_event ev = {0};
            wf_strbuf_reset(&why);
            if (wf_kube_event_parse(line, (size_t)n, &ev, &why) != 0) {
                if (why.len == 0)
                    abort();
                continue;
            }
            if ((ev.type != WF_KUBE_ERROR && !ev.object) || !ev.rv)
                abort();
            wf_kube_event_clear(&ev);
        }
    }
    wf_kube_lines_free(&l);
    wf_strbuf_free(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = 1 + in[0] % 64;
    const char *body = (const char *)in + 1;
    size_t n = size - 1;
    wf_strbuf whole = WF_STRBUF_INIT, split = WF_STRBUF_INIT;
    int ok_whole, ok_split;
    decode(body, n, n ? n : 1, &whole, &ok_whole);
    decode(body, n, step, &split, &ok_split);
    if (ok_whole != ok_split ||
        (ok_whole && (whole.len != split.len || memcmp(whole.data, split.data, whole.len) != 0)))
        abort();
    events(&split, step);
    wf_strbuf_free(&whole);
    wf_strbuf_free(&split);
    return 0;
}
