/*
 * app_grpc_msg.c - the messages of weft-app's gRPC service (see app_grpc.h): shop.EchoRequest
 * and EchoResponse, grpc.health.v1's HealthCheckRequest and HealthCheckResponse, by hand on
 * the protobuf wire format (xds/protowire.h), in gRPC's Length-Prefixed-Message framing
 * (xds/grpc_frame.h); what an Echo call does; the texts of grpc-go's UNIMPLEMENTED answers.
 */
#include <stdio.h>
#include <string.h>

#include "app/app_grpc.h"
#include "xds/grpc_frame.h"
#include "xds/protowire.h"

int app_echo_request_decode(const uint8_t *p, size_t len, struct app_echo_request *out)
{
    wf_pb_reader r;
    wf_pb_field f;
    int rv;
    memset(out, 0, sizeof *out);
    wf_pb_reader_init(&r, p, len);
    while ((rv = wf_pb_next(&r, &f)) == 1) {
        if (f.wire == WF_PB_LEN && f.num == 1) {
            out->message = f.p;
            out->message_len = f.len;
        } else if (f.wire == WF_PB_LEN && f.num == 4) {
            out->status_message = f.p;
            out->status_message_len = f.len;
        } else if (f.wire == WF_PB_VARINT && f.num == 2) {
            out->delay_ms = (int32_t)(uint32_t)f.u;
        } else if (f.wire == WF_PB_VARINT && f.num == 3) {
            out->status = (int32_t)(uint32_t)f.u;
        } else if (f.wire == WF_PB_VARINT && f.num == 5) {
            out->count = (int32_t)(uint32_t)f.u;
        }
    }
    return rv == 0 ? 0 : -1;
}

/* Starts a Length-Prefixed-Message: 5 bytes reserved for the prefix; returns where it is. */
static size_t frame_begin(wf_strbuf *b)
{
    static const char zero[WF_GRPC_HDR_LEN];
    size_t at = b->len;
    wf_strbuf_append(b, zero, sizeof zero);
    return at;
}

/* Writes the prefix of the message begun at `at` now that its bytes follow it. */
static void frame_end(wf_strbuf *b, size_t at)
{
    uint8_t hdr[WF_GRPC_HDR_LEN];
    if (wf_strbuf_failed(b) || wf_grpc_frame_header(hdr, b->len - at - WF_GRPC_HDR_LEN) != 0) {
        b->failed = true;
        return;
    }
    memcpy(b->data + at, hdr, sizeof hdr);
}

void app_echo_response_put(wf_strbuf *b, const void *msg, size_t msg_len, const char *hostname,
                           int32_t index)
{
    size_t at = frame_begin(b);
    if (msg_len)
        wf_pb_put_bytes(b, 1, msg, msg_len);
    if (hostname && *hostname)
        wf_pb_put_bytes(b, 2, hostname, strlen(hostname));
    if (index)
        wf_pb_put_uint(b, 3, (uint64_t)(int64_t)index); /* int32: sign-extended, as protobuf */
    frame_end(b, at);
}

int app_health_request_decode(const uint8_t *p, size_t len, const uint8_t **service,
                              size_t *service_len)
{
    wf_pb_reader r;
    wf_pb_field f;
    int rv;
    *service = NULL;
    *service_len = 0;
    wf_pb_reader_init(&r, p, len);
    while ((rv = wf_pb_next(&r, &f)) == 1) {
        if (f.wire == WF_PB_LEN && f.num == 1) {
            *service = f.p;
            *service_len = f.len;
        }
    }
    return rv == 0 ? 0 : -1;
}

void app_health_response_put(wf_strbuf *b, int serving_status)
{
    size_t at = frame_begin(b);
    if (serving_status)
        wf_pb_put_uint(b, 1, (uint64_t)serving_status);
    frame_end(b, at);
}

/* A decimal header value in 0..max (at most 9 digits) into *out; false otherwise. */
static bool header_num(const char *v, int64_t max, int64_t *out)
{
    int64_t n = 0;
    size_t len = strlen(v);
    if (len == 0 || len > 9)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (v[i] - '0');
    }
    if (n > max)
        return false;
    *out = n;
    return true;
}

int app_echo_plan_make(const struct app_echo_request *rq, const char *hdr_delay,
                       const char *hdr_status, const char *hdr_message, struct app_echo_plan *plan,
                       const char **err)
{
    int64_t delay = rq->delay_ms, status = rq->status, v;
    memset(plan, 0, sizeof *plan);
    if (delay == 0 && hdr_delay) {
        if (!header_num(hdr_delay, APP_GRPC_MAX_DELAY_MS, &v))
            return *err = "x-delay-ms: want 0..86400000", 3;
        delay = v;
    }
    if (status == 0 && hdr_status) {
        if (!header_num(hdr_status, 16, &v))
            return *err = "x-grpc-status: want 0..16", 3;
        status = v;
    }
    if (delay < 0 || delay > APP_GRPC_MAX_DELAY_MS)
        return *err = "delay_ms: want 0..86400000", 3;
    if (status < 0 || status > 16)
        return *err = "status: want 0..16", 3;
    if (rq->count < 0 || rq->count > APP_GRPC_MAX_COUNT)
        return *err = "count: want 0..100000", 3;
    plan->delay_ms = (uint64_t)delay;
    plan->status = (int)status;
    plan->count = rq->count ? (uint32_t)rq->count : 1;
    if (rq->status_message_len) {
        plan->status_msg = (const char *)rq->status_message;
        plan->status_msg_len = rq->status_message_len;
    } else if (hdr_message && *hdr_message) {
        plan->status_msg = hdr_message;
        plan->status_msg_len = strlen(hdr_message);
    }
    return 0;
}

const char *app_grpc_unknown_text(const char *path, size_t len, char *out, size_t cap)
{
    static const char *const served[] = {APP_GRPC_PATH_ECHO, APP_GRPC_PATH_ECHO_STREAM,
                                         APP_GRPC_PATH_HEALTH};
    for (size_t i = 0; i < sizeof served / sizeof served[0]; i++)
        if (strlen(served[i]) == len && memcmp(path, served[i], len) == 0)
            return NULL;
    /* grpc-go: the :path is "/service/method"; the method is after the last '/' */
    const char *slash = len > 1 && path[0] == '/' ? memrchr(path + 1, '/', len - 1) : NULL;
    if (!slash || slash == path + 1 || slash == path + len - 1) {
        snprintf(out, cap, "malformed method name: \"%.*s\"", (int)(len > 200 ? 200 : len), path);
        return out;
    }
    int slen = (int)(slash - path - 1), mlen = (int)(path + len - slash - 1);
    if (slen > 200)
        slen = 200;
    if (mlen > 200)
        mlen = 200;
    if ((size_t)slen == strlen("shop.Echo") && memcmp(path + 1, "shop.Echo", 9) == 0)
        snprintf(out, cap, "unknown method %.*s for service shop.Echo", mlen, slash + 1);
    else if ((size_t)slen == strlen("grpc.health.v1.Health") &&
             memcmp(path + 1, "grpc.health.v1.Health", (size_t)slen) == 0)
        snprintf(out, cap, "unknown method %.*s for service grpc.health.v1.Health", mlen,
                 slash + 1);
    else
        snprintf(out, cap, "unknown service %.*s", slen, path + 1);
    return out;
}

bool app_grpc_content_type_ok(const char *v, size_t len)
{
    static const char ct[] = "application/grpc";
    size_t n = sizeof ct - 1;
    return len >= n && strncmp(v, ct, n) == 0 && (len == n || v[n] == '+' || v[n] == ';');
}
