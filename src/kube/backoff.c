/*
 * backoff.c - client-go's reflector back-off (backoff.h).
 */
#include "kube/backoff.h"

uint64_t wf_kube_backoff_rand(wf_kube_backoff *b, uint64_t n)
{
    uint64_t x = b->rng ? b->rng : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b->rng = x;
    return n ? x % n : 0;
}

int64_t wf_kube_backoff_step(wf_kube_backoff *b, int64_t now_ms)
{
    if (b->next_ms == 0 || b->last_at_ms == 0 || now_ms - b->last_at_ms > WF_KUBE_BACKOFF_RESET_MS)
        b->next_ms = WF_KUBE_BACKOFF_INITIAL_MS;
    b->last_at_ms = now_ms;
    int64_t d = b->next_ms;
    b->next_ms = d * 2 > WF_KUBE_BACKOFF_MAX_MS ? WF_KUBE_BACKOFF_MAX_MS : d * 2;
    return d + (int64_t)wf_kube_backoff_rand(b, (uint64_t)d);
}
