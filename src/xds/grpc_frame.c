/*
 * grpc_frame.c - gRPC length-prefixed message framing (see grpc_frame.h).
 */
#include "xds/grpc_frame.h"
#include "core/hex.h"

#include <stdlib.h>
#include <string.h>

void wf_grpc_decoder_init(wf_grpc_decoder *d, size_t max_msg)
{
    memset(d, 0, sizeof *d);
    d->max_msg = max_msg ? max_msg : WF_GRPC_DEFAULT_MAX_MSG;
}

void wf_grpc_decoder_free(wf_grpc_decoder *d)
{
    free(d->buf);
    d->buf = NULL;
    d->hdr_have = 0;
    d->msg_have = 0;
    d->msg_len = 0;
}

bool wf_grpc_decoder_idle(const wf_grpc_decoder *d)
{
    return d->hdr_have == 0 && d->buf == NULL;
}

/* Validates a complete header; sets d->msg_len. */
static int parse_header(wf_grpc_decoder *d)
{
    if (d->hdr[0] == 1)
        return WF_GRPC_E_COMPRESSED;
    if (d->hdr[0] != 0)
        return WF_GRPC_E_BAD_FLAG;
    uint32_t n = ((uint32_t)d->hdr[1] << 24) | ((uint32_t)d->hdr[2] << 16) |
                 ((uint32_t)d->hdr[3] << 8) | (uint32_t)d->hdr[4];
    if (n > d->max_msg)
        return WF_GRPC_E_TOO_LARGE;
    d->msg_len = n;
    return 0;
}

static int deliver(wf_grpc_decoder *d, const uint8_t *msg, wf_grpc_msg_fn fn, void *ud)
{
    static const uint8_t empty[1] = {0};
    int stop = fn(ud, msg ? msg : empty, d->msg_len);
    d->hdr_have = 0;
    d->msg_have = 0;
    d->msg_len = 0;
    return stop ? WF_GRPC_E_STOPPED : 0;
}

/* Consumes header bytes; returns bytes used or a negative error. */
static long take_header(wf_grpc_decoder *d, const uint8_t *data, size_t len)
{
    size_t n = WF_GRPC_HDR_LEN - d->hdr_have;
    if (n > len)
        n = len;
    memcpy(d->hdr + d->hdr_have, data, n);
    d->hdr_have += n;
    if (d->hdr_have < WF_GRPC_HDR_LEN)
        return (long)n;
    int rc = parse_header(d);
    return rc ? rc : (long)n;
}

/* Consumes payload bytes of the current message; returns bytes used or a negative error. */
static long take_body(wf_grpc_decoder *d, const uint8_t *data, size_t len, wf_grpc_msg_fn fn,
                      void *ud)
{
    size_t need = d->msg_len - d->msg_have;
    if (d->buf == NULL && len >= need) { /* whole message in this piece: no copy */
        int rc = deliver(d, need ? data : NULL, fn, ud);
        return rc ? rc : (long)need;
    }
    if (d->buf == NULL) {
        d->buf = malloc(d->msg_len);
        if (d->buf == NULL)
            return WF_GRPC_E_NOMEM;
    }
    size_t n = need < len ? need : len;
    memcpy(d->buf + d->msg_have, data, n);
    d->msg_have += n;
    if (d->msg_have < d->msg_len)
        return (long)n;
    uint8_t *msg = d->buf;
    d->buf = NULL;
    int rc = deliver(d, msg, fn, ud);
    free(msg);
    return rc ? rc : (long)n;
}

int wf_grpc_decoder_feed(wf_grpc_decoder *d, const uint8_t *data, size_t len, wf_grpc_msg_fn fn,
                         void *ud)
{
    if (d->err)
        return d->err;
    size_t off = 0;
    for (;;) {
        long used;
        if (d->hdr_have < WF_GRPC_HDR_LEN) {
            if (off == len)
                break;
            used = take_header(d, data + off, len - off);
        } else {
            if (off == len && d->msg_have < d->msg_len)
                break;
            used = take_body(d, data + off, len - off, fn, ud);
        }
        if (used < 0) {
            d->err = (int)used;
            wf_grpc_decoder_free(d);
            return d->err;
        }
        off += (size_t)used;
    }
    return 0;
}

int wf_grpc_frame_header(uint8_t out[WF_GRPC_HDR_LEN], size_t len)
{
    if (len > UINT32_MAX)
        return WF_GRPC_E_TOO_LARGE;
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
    return 0;
}

const char *wf_grpc_strerror(int err)
{
    switch (err) {
    case WF_GRPC_E_OK:
        return "ok";
    case WF_GRPC_E_COMPRESSED:
        return "compressed message but no grpc-encoding negotiated";
    case WF_GRPC_E_BAD_FLAG:
        return "invalid compressed-flag byte";
    case WF_GRPC_E_TOO_LARGE:
        return "message larger than the maximum";
    case WF_GRPC_E_NOMEM:
        return "out of memory";
    case WF_GRPC_E_STOPPED:
        return "decoding stopped";
    default:
        return "unknown error";
    }
}

int wf_grpc_err_status(int err)
{
    return err == WF_GRPC_E_TOO_LARGE ? WF_GRPC_RESOURCE_EXHAUSTED : WF_GRPC_INTERNAL;
}

static bool plain(unsigned char c)
{
    return c >= 0x20 && c <= 0x7e && c != '%';
}

char *wf_grpc_message_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += plain(*p) ? 1 : 3;
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (plain(*p)) {
            *o++ = (char)*p;
            continue;
        }
        *o++ = '%';
        *o++ = hex[*p >> 4];
        *o++ = hex[*p & 15];
    }
    *o = '\0';
    return out;
}

char *wf_grpc_message_decode(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int hi = -1, lo = -1;
        if (s[i] == '%' && len - i >= 3) {
            hi = wf_hex_value(s[i + 1]);
            lo = wf_hex_value(s[i + 2]);
        }
        if (hi < 0 || lo < 0) {
            out[o++] = s[i];
            continue;
        }
        out[o++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[o] = '\0';
    return out;
}
