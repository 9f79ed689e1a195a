/*
 * protowire.c - protobuf wire format reader and writer. See protowire.h.
 */
#include "xds/protowire.h"

void wf_pb_reader_init(wf_pb_reader *r, const uint8_t *p, size_t len)
{
    r->p = p;
    r->end = p + len;
}

static int varint(wf_pb_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return -1;
        uint8_t c = *r->p++;
        if (i == 9 && c > 1)
            return -1; /* more than 64 bits */
        v |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int fixed(wf_pb_reader *r, int n, uint64_t *out)
{
    if (r->end - r->p < n)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    *out = v;
    return 0;
}

int wf_pb_next(wf_pb_reader *r, wf_pb_field *f)
{
    uint64_t key, len;
    if (r->p >= r->end)
        return 0;
    if (varint(r, &key) != 0 || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return -1;
    f->num = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    f->u = 0;
    f->p = NULL;
    f->len = 0;
    switch (f->wire) {
    case WF_PB_VARINT:
        return varint(r, &f->u) ? -1 : 1;
    case WF_PB_I64:
        return fixed(r, 8, &f->u) ? -1 : 1;
    case WF_PB_I32:
        return fixed(r, 4, &f->u) ? -1 : 1;
    case WF_PB_LEN:
        if (varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p))
            return -1;
        f->p = r->p;
        f->len = (size_t)len;
        r->p += len;
        return 1;
    default:
        return -1;
    }
}

void wf_pb_put_varint(wf_strbuf *b, uint64_t v)
{
    char buf[10];
    size_t n = 0;
    do {
        buf[n] = (char)(v & 0x7f);
        v >>= 7;
        if (v)
            buf[n] |= (char)0x80;
        n++;
    } while (v);
    wf_strbuf_append(b, buf, n);
}

void wf_pb_put_bytes(wf_strbuf *b, uint32_t num, const void *p, size_t len)
{
    wf_pb_put_varint(b, (uint64_t)num << 3 | WF_PB_LEN);
    wf_pb_put_varint(b, len);
    wf_strbuf_append(b, p, len);
}

void wf_pb_put_uint(wf_strbuf *b, uint32_t num, uint64_t v)
{
    wf_pb_put_varint(b, (uint64_t)num << 3 | WF_PB_VARINT);
    wf_pb_put_varint(b, v);
}
