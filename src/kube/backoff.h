/*
 * backoff.h - the reflector's back-off, as client-go's reflector sets it up:
 * wait.NewExponentialBackoffManager(800*time.Millisecond, 30*time.Second, 2*time.Minute, 2.0,
 * 1.0, clock) (k8s.io/client-go/tools/cache/reflector.go; "backoff will stop at [30,60) sec
 * interval ... If we don't backoff for 2min, assume API server is healthy and we reset the
 * backoff"):
 *  - each step returns the current duration d plus jitter, a random part of [0, d) (jitter
 *    factor 1.0: wait.Jitter(d, 1.0) = d + rand*d), then doubles d, capped at 30 s;
 *  - when the previous step was more than 2 minutes ago, d starts again at 800 ms.
 * So the waits are [0.8,1.6) s, [1.6,3.2) s, ... and at most [30,60) s. Pure; the caller gives
 * the time and the random source (a seed it owns).
 */
#ifndef WF_KUBE_BACKOFF_H
#define WF_KUBE_BACKOFF_H

#include <stdint.h>

#define WF_KUBE_BACKOFF_INITIAL_MS 800
#define WF_KUBE_BACKOFF_MAX_MS     30000
#define WF_KUBE_BACKOFF_RESET_MS   120000

typedef struct wf_kube_backoff {
    int64_t next_ms;    /* the duration of the next step before jitter; 0 = initial */
    int64_t last_at_ms; /* when the last step was taken; 0 = never */
    uint64_t rng;       /* xorshift state; any non-zero seed */
} wf_kube_backoff;

/* The wait before the next retry, in ms, at time now_ms (monotonic). */
int64_t wf_kube_backoff_step(wf_kube_backoff *b, int64_t now_ms);

/* A random value in [0, n) from b's generator (also used for the watch timeout). */
uint64_t wf_kube_backoff_rand(wf_kube_backoff *b, uint64_t n);

#endif
