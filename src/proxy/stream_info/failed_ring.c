/*
 * failed_ring.c - see failed_ring.h.
 */
#include "proxy/stream_info/failed_ring.h"

#include "explain/explain.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void wp_fring_init(wp_failed_ring *r)
{
    atomic_store_explicit(&r->written, 0, memory_order_relaxed);
    for (size_t i = 0; i < WP_FRING_SLOTS; i++)
        atomic_store_explicit(&r->slot[i].seq, 0, memory_order_relaxed);
}

/* The rule of explain/explain.h (wf_explain_input_failed), shared with `weftctl log explain`
 * and weft-pilot's view. */
bool wp_fring_failed(const wp_stream_info *si)
{
    char flags[64], grpc[16];
    flags[0] = grpc[0] = '\0';
    if (si->nflags) /* the failure path only */
        wp_si_flags_string(si, flags, sizeof flags);
    /* gRPC runs over HTTP/2 only: no header lookups for an HTTP/1 stream (the hot path) */
    if (si->protocol && strcmp(si->protocol, "HTTP/2") == 0) {
        size_t n = 0;
        const char *g = wp_si_resp_trailer(si, "grpc-status", &n);
        if (!g)
            g = wp_si_resp_header(si, "grpc-status", &n);
        if (g) /* a status too long for grpc[] is cut, and is no OK status either way */
            snprintf(grpc, sizeof grpc, "%.*s", (int)n, g);
    }
    wf_explain_input in = {.response_code = si->response_code,
                           .response_flags = flags,
                           .response_code_details = si->details,
                           .grpc_status = grpc};
    return wf_explain_input_failed(&in);
}

/* Copies s[0..n) into out (cap bytes, NUL-terminated), bytes outside printable ASCII as %XX,
 * stopping before one that does not fit whole. Returns whether all of s fit. */
static bool copy_text(char *out, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    size_t i = 0;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) {
            if (o + 1 >= cap)
                break;
            out[o++] = (char)c;
        } else {
            if (o + 3 >= cap)
                break;
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return i == n;
}

static void copy_cstr(char *out, size_t cap, const char *s)
{
    copy_text(out, cap, s ? s : "", s ? strlen(s) : 0);
}

static void copy_req(char *out, size_t cap, const wp_stream_info *si, const char *name)
{
    size_t n = 0;
    const char *v = si->request ? wp_si_req_header(si, name, &n) : NULL;
    copy_text(out, cap, v ? v : "", v ? n : 0);
}

static void fill(wp_failed_entry *e, const wp_stream_info *si, int64_t end_us)
{
    e->start_time_us = si->start_time_us;
    e->end_time_us = end_us;
    struct timespec ts; /* read for failed requests only; the loop clock has ms steps */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    e->recorded_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    e->duration_ms = si->end_ns > si->start_ns ? (si->end_ns - si->start_ns) / 1000000 : 0;
    e->response_code = si->response_code;
    copy_req(e->method, sizeof e->method, si, ":method");
    copy_req(e->authority, sizeof e->authority, si, ":authority");
    size_t n = 0;
    const char *p = si->request ? wp_si_req_header(si, ":path", &n) : NULL;
    const char *q = p ? memchr(p, '?', n) : NULL;
    if (q)
        n = (size_t)(q - p);
    e->path_truncated = !copy_text(e->path, sizeof e->path, p ? p : "", p ? n : 0);
    wp_si_flags_string(si, e->response_flags, sizeof e->response_flags);
    copy_cstr(e->details, sizeof e->details, si->details);
    copy_cstr(e->route_name, sizeof e->route_name, si->route_name);
    copy_cstr(e->upstream_cluster, sizeof e->upstream_cluster, si->upstream_cluster);
    copy_cstr(e->upstream_host, sizeof e->upstream_host, si->upstream_host);
    copy_cstr(e->downstream_remote, sizeof e->downstream_remote, si->downstream_remote);
    copy_req(e->request_id, sizeof e->request_id, si, "x-request-id");
}

bool wp_fring_record(wp_failed_ring *r, const wp_stream_info *si, int64_t end_us)
{
    if (!wp_fring_failed(si))
        return false;
    uint64_t n = atomic_load_explicit(&r->written, memory_order_relaxed);
    wp_fring_slot *s = &r->slot[n % WP_FRING_SLOTS];
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed); /* odd: being written */
    atomic_thread_fence(memory_order_release);
    fill(&s->e, si, end_us);
    s->e.seq = n + 1;
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
    atomic_store_explicit(&r->written, n + 1, memory_order_release);
    return true;
}

/* Copies slot s into out when it holds a whole entry (seqlock read). */
static bool read_slot(const wp_fring_slot *s, wp_failed_entry *out)
{
    uint64_t a = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (a == 0 || (a & 1))
        return false;
    memcpy(out, &s->e, sizeof *out);
    atomic_thread_fence(memory_order_acquire);
    uint64_t b = atomic_load_explicit(&s->seq, memory_order_relaxed);
    return a == b;
}

size_t wp_fring_read(const wp_failed_ring *r, wp_failed_entry *out, size_t max)
{
    uint64_t n = atomic_load_explicit(&r->written, memory_order_acquire);
    size_t avail = n < WP_FRING_SLOTS ? (size_t)n : WP_FRING_SLOTS;
    size_t got = 0;
    for (size_t k = 0; k < avail && got < max; k++) {
        uint64_t want = n - k; /* the entry's seq */
        if (!read_slot(&r->slot[(want - 1) % WP_FRING_SLOTS], &out[got]))
            continue;
        if (out[got].seq != want) /* overwritten since `written` was read */
            continue;
        got++;
    }
    return got;
}

void wp_fring_time(int64_t us, char *out, size_t cap)
{
    time_t sec = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char d[24];
    strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03dZ", d, (int)((us % 1000000) / 1000));
}
