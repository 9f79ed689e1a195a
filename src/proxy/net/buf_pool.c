/*
 * buf_pool.c - read buffers and a worker's free list of them (see buf_pool.h).
 */
#include "proxy/net/buf_pool.h"

#include <stdlib.h>

wp_buf *wp_buf_pool_get(wp_buf_pool *p, size_t cap)
{
    if (cap <= WP_BUF_SIZE && p->free) {
        wp_buf *b = p->free;
        p->free = b->next_free;
        p->nfree--;
        return b;
    }
    if (cap < WP_BUF_SIZE)
        cap = WP_BUF_SIZE;
    wp_buf *b = malloc(sizeof(*b) + cap);
    if (!b)
        return NULL;
    b->cap = cap;
    b->next_free = NULL;
    return b;
}

void wp_buf_pool_put(wp_buf_pool *p, wp_buf *b)
{
    if (!b)
        return;
    if (b->cap == WP_BUF_SIZE && p->nfree < WP_BUF_POOL_MAX) {
        b->next_free = p->free;
        p->free = b;
        p->nfree++;
        return;
    }
    free(b);
}

void wp_buf_pool_clear(wp_buf_pool *p)
{
    while (p->free) {
        wp_buf *b = p->free;
        p->free = b->next_free;
        free(b);
    }
    p->nfree = 0;
}
