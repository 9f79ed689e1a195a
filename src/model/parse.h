/*
 * parse.h - YAML (libyaml) and JSON (jansson) text to wf_node trees, with limits.
 *
 * Used by the store and by anything that must parse YAML text itself (MeshConfig files,
 * YAML inside annotation values). Both parsers allocate nodes in the given arena and call `doc`
 * once per document root (a YAML stream may hold several; a JSON text holds one). On a syntax error
 * or a broken limit they stop and fill *err; documents already delivered stay valid.
 *
 * Limits (DESIGN.md "Untrusted input is bounded"): nesting depth WF_LOAD_MAX_DEPTH; nodes
 * reachable through aliases WF_LOAD_MAX_ALIAS_NODES per document (aliases share the anchored
 * node, never copy it, and the budget counts what a full expansion would produce, so
 * "billion laughs" stops early); duplicate mapping keys are an error, as in Kubernetes' YAML
 * decoding ("mapping key \"x\" already defined at line N").
 */
#ifndef WF_MODEL_PARSE_H
#define WF_MODEL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "model/node.h"

/* YAML positions (errors, nodes, documents) are 1-based. Lines end at LF only, as editors, grep -n
 * and the chunk reader (parse_file.c) count them, also where YAML 1.1 breaks lines at a lone CR,
 * NEL, LS or PS; columns count characters, and a leading byte order mark is none. An error found
 * at the end of the text is at its end (a parser error: just after its last non-white-space
 * character), never on a line after a last line that has no final newline. */
typedef struct wf_parse_error {
    uint32_t line, col; /* 1-based; 0 when unknown */
    char message[256];
} wf_parse_error;

/* Called for each document root; return 0 to continue, -1 to stop (out of memory). */
typedef int (*wf_doc_cb)(wf_node *root, uint32_t line, uint32_t col, void *arg);

/* Returns 0 when the whole stream parsed, 1 on a syntax/limit error (*err filled), -1 on
 * out of memory. */
int wf_parse_yaml(wf_arena *a, const char *buf, size_t len, wf_doc_cb doc, void *arg,
                  wf_parse_error *err);
int wf_parse_json(wf_arena *a, const char *buf, size_t len, wf_doc_cb doc, void *arg,
                  wf_parse_error *err);
/* wf_parse_yaml on a piece of a file that starts after line0 lines: every line number it
 * reports (nodes, documents, *err) counts those lines too. */
int wf_parse_yaml_lines(wf_arena *a, const char *buf, size_t len, uint32_t line0, wf_doc_cb doc,
                        void *arg, wf_parse_error *err);

/* Offset of the first byte that is not valid UTF-8 (overlongs, surrogates and > U+10FFFF
 * are invalid), or len when all valid. line and col are set to its 1-based position. */
size_t wf_utf8_check(const char *buf, size_t len, uint32_t *line, uint32_t *col);

#endif
