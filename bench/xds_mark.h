/*
 * xds_mark.h - marked changes for weft-xds-load (bench/xds_load.c) under continuous churn: the
 * convergence of one change while other changes keep coming, where "the last response with a
 * new version" never settles.
 *
 * A mark is a change the load client makes itself at t0 (one CLOCK_MONOTONIC clock for t0 and
 * every ACK) plus a marker: a byte string that no EDS response contains before the change and
 * every EDS response carrying the changed cluster contains after it (the benchmark uses an
 * endpoint IP with its quotes, "\"10.10.3.7\"", of a Pod that becomes ready). A client has
 * converged on a mark at its first ACK of an EDS response containing the marker. Marks overlap:
 * each has its own t0 and per-client times.
 *
 * The change itself is one of:
 *  - xm_http_send: one HTTP/1.1 request (plain TCP, Connection: close) to the test Kubernetes
 *    API server (tests/kubeapi), e.g. a JSON merge patch of an EndpointSlice; the status code
 *    comes back through a callback (the mark's clock does not wait for it);
 *  - a rename(2) of a prepared file over a watched one (done by the caller).
 *
 * Memory: xm_marks owns its marks (xm_marks_free); xm_http_send owns its request until its
 * callback ran. Single-threaded (the caller's libuv loop). No globals.
 */
#ifndef WF_BENCH_XDS_MARK_H
#define WF_BENCH_XDS_MARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

typedef struct xm_mark {
    char label[64];
    char *marker; /* owned; searched with memmem */
    size_t marker_len;
    uint64_t t0;       /* ns, uv_hrtime */
    uint64_t first_ns; /* first client's convergence, 0 = none yet */
    uint64_t *conv;    /* per client: ns of the converging ACK, 0 = not yet */
    size_t n_conv;     /* clients converged */
    int http_status;   /* 0 = none (rename, or no answer yet), -1 = the request failed */
    bool done;         /* reported */
} xm_mark;

typedef struct xm_marks {
    size_t n_clients;
    xm_mark *v;
    size_t n, cap;
    size_t open; /* marks not yet reported */
} xm_marks;

/* Adds a mark (label truncated to 63 bytes, marker copied) started at t0. Returns its index,
 * or -1 when out of memory. */
long xm_add(xm_marks *m, const char *label, const char *marker, uint64_t t0);

/* A client ACKed an EDS response (body, len) at now: it converges on every open mark whose
 * marker the body contains. */
void xm_on_eds(xm_marks *m, size_t client, const char *body, size_t len, uint64_t now);

/* Prints "MARK {json}" for mark i (label, clients, live, converged, timed_out, http_status,
 * first_ms, conv_p50_ms/p99/max from t0) and closes it. */
void xm_report(xm_marks *m, size_t i, size_t live, bool timed_out, FILE *out);

void xm_marks_free(xm_marks *m);

/* Sorts n values ascending; the nearest-rank percentile p (0-100) of n sorted values (0 when
 * n is 0). Shared with weft-xds-load's own reports. */
void xm_sort_u64(uint64_t *v, size_t n);
uint64_t xm_pct(const uint64_t *v, size_t n, double p);

/* Sends METHOD PATH to ip:port with body (copied) and calls done(ud, tag, status) once: the
 * HTTP status code, or -1 when connecting, writing or reading failed. Returns 0, or -1 when the
 * request could not start (done is then not called). */
typedef void (*xm_http_done)(void *ud, long tag, int status);
int xm_http_send(uv_loop_t *loop, const char *ip, int port, const char *method, const char *path,
                 const char *ctype, const char *body, size_t len, xm_http_done done, void *ud,
                 long tag);

#endif
