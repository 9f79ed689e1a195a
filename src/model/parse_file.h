/*
 * parse_file.h - one input file parsed into document trees, independently of any store.
 *
 * The parse step touches nothing but its own wf_parsed_file, so several files can be parsed
 * on several threads at once; a store then takes them over in input order, which keeps
 * load order and error order deterministic. Checks on untrusted input (size, UTF-8, parser limits)
 * happen here.
 */
#ifndef WF_MODEL_PARSE_FILE_H
#define WF_MODEL_PARSE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "model/node.h"

typedef struct wf_parsed_doc {
    wf_node *root;
    uint32_t line, col;
} wf_parsed_doc;

typedef struct wf_doc_error {
    uint32_t line, col;
    const char *message; /* in the file's arena */
} wf_doc_error;

struct wf_resource;

typedef struct wf_parsed_file {
    const char *path; /* as given (not owned); "-" for stdin */
    const char *file; /* path copied into the arena: what resources and errors name */
    bool json;
    bool from_file;      /* read from path (counts as a file read), not a caller's buffer */
    wf_arena arena;      /* the document trees */
    wf_parsed_doc *docs; /* heap array */
    size_t ndocs, capdocs;
    struct wf_resource **res; /* resources built from the documents (heap array) */
    size_t nres, capres;
    wf_doc_error *doc_errors; /* documents that are not valid resources (heap array) */
    size_t ndoc_errors, capdoc_errors;
    bool failed; /* a read, size, UTF-8 or syntax error (below) */
    uint32_t err_line, err_col;
    char err[256];
    bool oom;
} wf_parsed_file;

/* Initialise for path (json selects the JSON parser). */
void wf_parsed_file_init(wf_parsed_file *pf, const char *path, bool json);

/* Read the file (or stdin for "-") and parse it. Returns 0 (see pf->failed) or -1 on out of
 * memory. */
int wf_parsed_file_read(wf_parsed_file *pf);

/* Parse a caller's buffer as this file's text and build its resources (typed views
 * included). Returns 0 or -1 on out of memory. */
int wf_parsed_file_text(wf_parsed_file *pf, const char *buf, size_t len);

/* Free the docs array and whatever the arena still holds (nothing, once a store adopted it). */
void wf_parsed_file_free(wf_parsed_file *pf);

/* Parse files[0..n) using up to `threads` threads (1 = only the calling thread) and hand each
 * one to take() in order, in the calling thread, as soon as it and all before it are parsed:
 * parsing and taking over overlap. take() returns 0, or -1 to fail (the rest is still parsed
 * but not taken). Returns 0, or -1 on out of memory or when take() failed. */
int wf_parse_files(wf_parsed_file *files, size_t n, unsigned threads,
                   int (*take)(wf_parsed_file *pf, void *arg), void *arg);

#endif
