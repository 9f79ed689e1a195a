/*
 * strmap.c - insertion-ordered string-keyed hash map in an arena (see strmap.h).
 */
#include "core/strmap.h"

#include <stdint.h>
#include <string.h>

typedef struct strmap_entry {
    const char *key;
    void *value;
    uint64_t hash;
} strmap_entry;

struct wf_strmap {
    wf_arena *arena;
    strmap_entry *entries;
    size_t n, cap;
    size_t *index; /* entry position + 1; 0 = free */
    size_t icap;   /* power of two */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

wf_strmap *wf_strmap_new(wf_arena *a)
{
    wf_strmap *m = wf_arena_alloc(a, sizeof(*m));
    if (!m)
        return NULL;
    m->arena = a;
    return m;
}

static int map_reindex(wf_strmap *m, size_t icap)
{
    size_t *index = wf_arena_alloc(m->arena, icap * sizeof(*index));
    if (!index)
        return -1;
    for (size_t i = 0; i < m->n; i++) {
        size_t p = (size_t)m->entries[i].hash & (icap - 1);
        while (index[p])
            p = (p + 1) & (icap - 1);
        index[p] = i + 1;
    }
    m->index = index;
    m->icap = icap;
    return 0;
}

static strmap_entry *map_append(wf_strmap *m, const char *key, uint64_t h)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        strmap_entry *e = wf_arena_alloc(m->arena, cap * sizeof(*e));
        if (!e)
            return NULL;
        if (m->n)
            memcpy(e, m->entries, m->n * sizeof(*e));
        m->entries = e;
        m->cap = cap;
    }
    if ((m->n + 1) * 2 > m->icap && map_reindex(m, m->icap ? m->icap * 2 : 32) != 0)
        return NULL;
    const char *k = wf_arena_strdup(m->arena, key);
    if (!k)
        return NULL;
    strmap_entry *e = &m->entries[m->n++];
    e->key = k;
    e->value = NULL;
    e->hash = h;
    size_t p = (size_t)h & (m->icap - 1);
    while (m->index[p])
        p = (p + 1) & (m->icap - 1);
    m->index[p] = m->n;
    return e;
}

void **wf_strmap_slot(wf_strmap *m, const char *key, bool create)
{
    uint64_t h = hash_str(key);
    if (m->icap) {
        size_t p = (size_t)h & (m->icap - 1);
        for (; m->index[p]; p = (p + 1) & (m->icap - 1)) {
            strmap_entry *e = &m->entries[m->index[p] - 1];
            if (e->hash == h && strcmp(e->key, key) == 0)
                return &e->value;
        }
    }
    if (!create)
        return NULL;
    strmap_entry *e = map_append(m, key, h);
    return e ? &e->value : NULL;
}

size_t wf_strmap_count(const wf_strmap *m)
{
    return m->n;
}

const char *wf_strmap_key(const wf_strmap *m, size_t i)
{
    return m->entries[i].key;
}

void *wf_strmap_value(const wf_strmap *m, size_t i)
{
    return m->entries[i].value;
}
