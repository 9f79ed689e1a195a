/*
 * arena.h - bump allocator for data that lives and dies together.
 *
 * A model store keeps every parsed node, string and typed struct in one arena and frees
 * them all at once with wf_arena_destroy(). Individual allocations are never freed.
 * Allocation failure is reported by returning NULL; callers must check.
 */
#ifndef WF_CORE_ARENA_H
#define WF_CORE_ARENA_H

#include <stddef.h>

typedef struct wf_arena_block wf_arena_block;

typedef struct wf_arena {
    wf_arena_block *head; /* current block (newest first) */
    size_t total;         /* bytes obtained from malloc, for accounting */
} wf_arena;

/* Initialise an empty arena (no allocation happens until the first wf_arena_alloc). */
void wf_arena_init(wf_arena *a);

/* Free every block; the arena is left empty and may be reused. */
void wf_arena_destroy(wf_arena *a);

/* Move every block of src into dst (no copying); src is left empty. Memory allocated from src
 * stays valid and is now freed with dst. */
void wf_arena_adopt(wf_arena *dst, wf_arena *src);

/* Allocate n bytes aligned to 16, zero-filled. Returns NULL when out of memory or n is
 * absurdly large (> 1 GiB). The memory belongs to the arena. */
void *wf_arena_alloc(wf_arena *a, size_t n);

/* Copy len bytes of s into the arena and NUL-terminate. Returns NULL on out of memory. */
char *wf_arena_strndup(wf_arena *a, const char *s, size_t len);

/* wf_arena_strndup(a, s, strlen(s)); s may be NULL, which yields NULL. */
char *wf_arena_strdup(wf_arena *a, const char *s);

/* printf into the arena. Returns NULL on out of memory or formatting error. */
char *wf_arena_printf(wf_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
