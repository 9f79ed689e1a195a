/*
 * store_internal.h - the store's private layout, shared by load.c, store.c and decode.c.
 */
#ifndef WF_MODEL_STORE_INTERNAL_H
#define WF_MODEL_STORE_INTERNAL_H

#include "model/store.h"

typedef struct wf_ptrvec {
    const wf_resource **v;
    size_t n, cap;
} wf_ptrvec;

typedef struct wf_hslot {
    uint64_t hash;
    const char *key;                /* index key (arena) */
    size_t first;                   /* index into `chain` of the first resource with this key */
    size_t last;                    /* ... and of the last one (appends are O(1)) */
    const wf_resource *const *flat; /* the chain as an array (after wf_index_flatten) */
    size_t nflat;
} wf_hslot;

typedef struct wf_index {
    wf_hslot *slots;
    size_t cap, used;
    /* resources grouped per key: chain_res[i] with chain_next[i] */
    const wf_resource **chain_res;
    size_t *chain_next; /* SIZE_MAX ends a chain */
    size_t nchain, capchain;
} wf_index;

struct wf_store {
    wf_arena arena;
    wf_ptrvec all;
    wf_ptrvec shadowed;    /* resources a later one with the same key replaced */
    const char **excluded; /* "kind\x1fns\x1fname" keys finalize drops (arena strings) */
    size_t nexcluded, capexcluded;
    wf_ptrvec by_kind[WF_KIND_COUNT];
    wf_load_error *errors;
    size_t nerrors, caperrors;
    size_t failed_files;
    wf_index names; /* "kind\x1fns\x1fname" -> resources */
    wf_index hosts; /* host -> Services and ServiceEntries */
    wf_index by_ns; /* "kind\x1fns" -> resources */
    const char *domain_suffix;
    bool finalized;
    const char **files; /* files read, in order (arena array, grown by copying) */
    size_t nfiles, capfiles;
};

int wf_ptrvec_push(wf_ptrvec *v, const wf_resource *r);
void wf_ptrvec_free(wf_ptrvec *v);

/* Record a load error (strings copied into the arena). Returns 0 or -1 on OOM. */
int wf_store_add_error(wf_store *s, const char *file, uint32_t line, uint32_t col, const char *msg);

/* Where wf_build_resources puts what it makes: resources and their typed views are
 * allocated in `arena`; resource() receives each resource, error() each document error
 * (message valid during the call). Both return 0, or -1 to stop (out of memory). */
typedef struct wf_res_sink {
    wf_arena *arena;
    int (*resource)(void *arg, wf_resource *r);
    int (*error)(void *arg, uint32_t line, uint32_t col, const char *msg);
    void *arg;
} wf_res_sink;

/* Turn one document root into resources (kind: List gives several; a document without
 * apiVersion and kind, or a Kubernetes object of wrong field types, gives an error;
 * resources in system namespaces are dropped). Pure: touches only the sink, so parse
 * threads can run it. Returns 0, or -1 on out of memory. */
int wf_build_resources(const wf_res_sink *sink, const char *file, bool json, wf_node *root,
                       uint32_t line, uint32_t col);

/* Decode the typed view of r (r->t). Returns 0 or -1 on OOM. */
int wf_decode(wf_arena *a, wf_resource *r);

#endif
