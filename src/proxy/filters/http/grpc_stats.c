/*
 * grpc_stats.c - the frame counter and response test of envoy.filters.http.grpc_stats
 * (grpc_stats.h): Envoy's Grpc::FrameInspector::inspect (source/common/grpc/codec.cc) and
 * Grpc::Common::isGrpcResponseHeaders (source/common/grpc/common.cc).
 */
#include "proxy/filters/http/grpc_stats.h"

#include "http/grpc_http.h"

enum { FH_FLAG = 0, FH_LEN3 = 4, FH_DATA = 5 };

/* Skips what is left of the current message in [p, end); returns the new position. */
static const unsigned char *skip_data(wp_grpc_frame_counter *fc, const unsigned char *p,
                                      const unsigned char *end)
{
    size_t avail = (size_t)(end - p);
    size_t n = avail < fc->remaining ? avail : fc->remaining;
    fc->remaining -= (uint32_t)n;
    if (fc->remaining == 0)
        fc->state = FH_FLAG;
    return p + n;
}

/* One header byte (the flag or a length byte). */
static uint64_t header_byte(wp_grpc_frame_counter *fc, unsigned char c)
{
    if (fc->state == FH_FLAG) {
        fc->count++; /* a message starts at its flag byte, whatever the flag says */
        fc->state = 1;
        return 1;
    }
    fc->len_bytes[fc->state - 1] = c;
    if (fc->state < FH_LEN3) {
        fc->state++;
        return 0;
    }
    fc->remaining = (uint32_t)fc->len_bytes[0] << 24 | (uint32_t)fc->len_bytes[1] << 16 |
                    (uint32_t)fc->len_bytes[2] << 8 | fc->len_bytes[3];
    fc->state = fc->remaining ? FH_DATA : FH_FLAG; /* a 0-length message has no bytes */
    return 0;
}

uint64_t wp_grpc_frame_count(wp_grpc_frame_counter *fc, const char *data, size_t len)
{
    if (len == 0)
        return 0; /* data may be NULL */
    const unsigned char *p = (const unsigned char *)data, *end = p + len;
    uint64_t started = 0;
    while (p < end) {
        if (fc->state == FH_DATA)
            p = skip_data(fc, p, end);
        else
            started += header_byte(fc, *p++);
    }
    return started;
}

bool wp_grpc_is_response(int status, const char *ct, size_t ct_len, bool has_grpc_status,
                         bool end_stream)
{
    if (end_stream)
        return has_grpc_status;
    return status == 200 && ct && wf_grpc_content_type(ct, ct_len);
}
