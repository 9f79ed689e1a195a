/*
 * buf_pool.h - read buffers and a worker's free list of them: the buffers downstream and
 * upstream connections read into while bytes are pending (an idle connection holds none) and
 * the blocks of the router's retry buffer. Bodies are written from the buffer they were read
 * into (no copy); a buffer goes back to the free list when it empties.
 *
 * Memory: a buffer is one malloc (header and bytes). The free list keeps up to
 * WP_BUF_POOL_MAX buffers of WP_BUF_SIZE bytes; bigger buffers (a head over 16 KiB) are freed
 * when put back. Errors: wp_buf_pool_get returns NULL when out of memory. Threads: a pool
 * belongs to one worker (no lock).
 */
#ifndef WEFT_PROXY_NET_BUF_POOL_H
#define WEFT_PROXY_NET_BUF_POOL_H

#include <stddef.h>

#define WP_BUF_SIZE     (16u * 1024u) /* read buffer of a connection */
#define WP_BUF_POOL_MAX 256u          /* free buffers a worker keeps */

typedef struct wp_buf {
    struct wp_buf *next_free;
    size_t cap; /* bytes of data */
    char data[];
} wp_buf;

typedef struct wp_buf_pool {
    wp_buf *free;
    size_t nfree;
} wp_buf_pool;

/* A buffer of at least cap bytes (WP_BUF_SIZE at least; from the free list when cap fits),
 * owned by the caller until wp_buf_pool_put. NULL when out of memory. */
wp_buf *wp_buf_pool_get(wp_buf_pool *p, size_t cap);
/* Gives b back (kept for reuse or freed); b may be NULL. */
void wp_buf_pool_put(wp_buf_pool *p, wp_buf *b);
/* Frees every buffer on the free list (worker shutdown). */
void wp_buf_pool_clear(wp_buf_pool *p);

#endif
