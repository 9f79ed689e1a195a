#include "core/arena.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WF_ARENA_BLOCK (64u * 1024u)
#define WF_ARENA_FIRST (8u * 1024u)
#define WF_ARENA_MAX   (1024u * 1024u * 1024u)

struct wf_arena_block {
    wf_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void wf_arena_init(wf_arena *a)
{
    a->head = NULL;
    a->total = 0;
}

void wf_arena_destroy(wf_arena *a)
{
    wf_arena_block *b = a->head;
    while (b) {
        wf_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

void wf_arena_adopt(wf_arena *dst, wf_arena *src)
{
    wf_arena_block *first = src->head;
    if (!first)
        return;
    wf_arena_block *last = first;
    while (last->next)
        last = last->next;
    if (dst->head) { /* keep dst's current block in front: it still has room */
        last->next = dst->head->next;
        dst->head->next = first;
    } else {
        dst->head = first;
    }
    dst->total += src->total;
    src->head = NULL;
    src->total = 0;
}

void *wf_arena_alloc(wf_arena *a, size_t n)
{
    if (n > WF_ARENA_MAX)
        return NULL;
    n = (n + 15u) & ~(size_t)15u;
    if (n == 0)
        n = 16;
    wf_arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        /* blocks grow with the arena (8 KiB, 8, 16, 32, then 64 KiB), so the many small
         * arenas of a directory load (one per file) stay small */
        size_t want = a->total < WF_ARENA_FIRST ? WF_ARENA_FIRST : a->total;
        if (want > WF_ARENA_BLOCK)
            want = WF_ARENA_BLOCK;
        bool oneoff = n > want / 4;
        size_t cap = oneoff ? n : want;
        wf_arena_block *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        a->total += sizeof(*nb) + cap;
        if (b && oneoff) {
            /* a big one-off allocation: keep the current block as head */
            nb->next = b->next;
            b->next = nb;
            nb->used = n;
            memset(nb->data, 0, n);
            return nb->data;
        }
        nb->next = b;
        a->head = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *wf_arena_strndup(wf_arena *a, const char *s, size_t len)
{
    if (len >= WF_ARENA_MAX)
        return NULL;
    char *p = wf_arena_alloc(a, len + 1);
    if (!p)
        return NULL;
    if (len)
        memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *wf_arena_strdup(wf_arena *a, const char *s)
{
    return s ? wf_arena_strndup(a, s, strlen(s)) : NULL;
}

char *wf_arena_printf(wf_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = wf_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
