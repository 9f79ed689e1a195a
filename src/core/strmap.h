/*
 * strmap.h - string-keyed hash map that keeps insertion order, allocated in an arena.
 *
 * Keys are copied into the arena; values are caller pointers. Nothing is freed until the
 * arena is; there is no removal. Lookups are O(1) on average (FNV-1a, linear probing).
 */
#ifndef WF_CORE_STRMAP_H
#define WF_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"

typedef struct wf_strmap wf_strmap;

/* NULL on out of memory. */
wf_strmap *wf_strmap_new(wf_arena *a);

/* Value slot for key, created (with value NULL) when create is set; NULL when absent and not
 * created, or on out of memory. The key is copied. */
void **wf_strmap_slot(wf_strmap *m, const char *key, bool create);

size_t wf_strmap_count(const wf_strmap *m);
/* Key and value of the i-th key inserted. */
const char *wf_strmap_key(const wf_strmap *m, size_t i);
void *wf_strmap_value(const wf_strmap *m, size_t i);

#endif
