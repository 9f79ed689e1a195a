/*
 * protowire.h - the protobuf wire format, by hand, for the few binary gRPC messages weft
 * serves (istio.v1.auth.IstioCertificateService; weft's discovery messages are JSON).
 *
 * Follows https://protobuf.dev/programming-guides/encoding/ (Go's protowire): a field is a
 * varint key (field number << 3 | wire type) then a varint (type 0), 8 bytes (type 1), a
 * varint length and that many bytes (type 2) or 4 bytes (type 5). Groups (types 3 and 4) are
 * refused. Varints are at most 10 bytes. Nothing is allocated by the reader: values point
 * into the input. The writer appends to a wf_strbuf (check wf_strbuf_failed for OOM).
 */
#ifndef WF_XDS_PROTOWIRE_H
#define WF_XDS_PROTOWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

enum { WF_PB_VARINT = 0, WF_PB_I64 = 1, WF_PB_LEN = 2, WF_PB_I32 = 5 };

/* One field read from a message. */
typedef struct wf_pb_field {
    uint32_t num;
    int wire;         /* WF_PB_* */
    uint64_t u;       /* VARINT, I64, I32 value */
    const uint8_t *p; /* LEN: the bytes */
    size_t len;
} wf_pb_field;

typedef struct wf_pb_reader {
    const uint8_t *p, *end;
} wf_pb_reader;

void wf_pb_reader_init(wf_pb_reader *r, const uint8_t *p, size_t len);
/* The next field: 1 and *f, 0 at the end of the message, -1 on malformed input (a truncated
 * or over-long varint, a length past the end, field number 0, a group or unknown wire type). */
int wf_pb_next(wf_pb_reader *r, wf_pb_field *f);

/* Appends a varint. */
void wf_pb_put_varint(wf_strbuf *b, uint64_t v);
/* Appends a length-delimited field (strings, bytes, messages). */
void wf_pb_put_bytes(wf_strbuf *b, uint32_t num, const void *p, size_t len);
/* Appends a varint field (int64 as two's complement, as protobuf does). */
void wf_pb_put_uint(wf_strbuf *b, uint32_t num, uint64_t v);

#endif
