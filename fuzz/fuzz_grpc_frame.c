/*
 * fuzz_grpc_frame.c - libFuzzer target for the gRPC length-prefixed message decoder and the
 * grpc-message text codec (xds/grpc_frame.h).
 *
 * Input: byte 0 gives the read size (bits 0-4, plus 1), byte 1 the maximum message size
 * (64 << (byte & 15) bytes: 64 B .. 2 MiB); the rest is the stream. It is decoded once whole
 * and once in reads of that size, the way h2 DATA frames arrive; both runs must deliver the
 * same messages (a digest of their lengths and bytes), end with the same error and the same
 * idle state. Every message must respect the maximum. The rest is also read as a grpc-message
 * value: decode must not overrun, and encode then decode must give the text back.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xds/grpc_frame.h"

typedef struct {
    uint64_t h;
    size_t max;
    size_t count;
} digest;

static void mix(digest *d, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        d->h = (d->h ^ s[i]) * 1099511628211ull;
}

static int on_msg(void *ud, const uint8_t *msg, size_t len)
{
    digest *d = ud;
    if (!msg || len > d->max)
        abort();
    mix(d, &len, sizeof len);
    mix(d, msg, len);
    d->count++;
    /* stop after many messages sometimes, to exercise WF_GRPC_E_STOPPED */
    return d->count == 1000;
}

static uint64_t run(const uint8_t *in, size_t len, size_t step, size_t max)
{
    wf_grpc_decoder dec;
    wf_grpc_decoder_init(&dec, max);
    digest d = {1469598103934665603ull, max, 0};
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0; off += step) {
        size_t n = len - off < step ? len - off : step;
        rc = wf_grpc_decoder_feed(&dec, in + off, n, on_msg, &d);
    }
    /* errors are sticky: more input changes nothing */
    if (rc != 0 && wf_grpc_decoder_feed(&dec, (const uint8_t *)"\0\0\0\0\0", 5, on_msg, &d) != rc)
        abort();
    if (wf_grpc_strerror(rc) == NULL)
        abort();
    (void)wf_grpc_err_status(rc);
    bool idle = wf_grpc_decoder_idle(&dec);
    mix(&d, &rc, sizeof rc);
    mix(&d, &idle, sizeof idle);
    wf_grpc_decoder_free(&dec);
    return d.h;
}

static void text_codec(const uint8_t *in, size_t len)
{
    char *dec = wf_grpc_message_decode((const char *)in, len);
    if (!dec)
        abort();
    if (strlen(dec) > len) /* decoding never grows the text */
        abort();
    free(dec);
    char *s = malloc(len + 1);
    if (!s)
        abort();
    memcpy(s, in, len);
    s[len] = '\0';
    char *enc = wf_grpc_message_encode(s);
    if (!enc)
        abort();
    for (const char *p = enc; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            abort();
    char *back = wf_grpc_message_decode(enc, strlen(enc));
    if (!back || strcmp(back, s) != 0)
        abort();
    free(back);
    free(enc);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t step = (size_t)(data[0] & 31) + 1;
    size_t max = (size_t)64 << (data[1] & 15);
    const uint8_t *in = data + 2;
    size_t len = size - 2;
    if (run(in, len, len ? len : 1, max) != run(in, len, step, max))
        abort();
    text_codec(in, len);
    return 0;
}
