/*
 * jsonpatch.h - RFC 6902 JSON Patch: the diff from one document to another as Istio's sidecar
 * injector makes it (gomodules.xyz/jsonpatch/v2 CreatePatch, pkg/kube/inject/webhook.go
 * createPatch), and applying a patch (RFC 6902 §4: add, remove, replace, move, copy, test).
 *
 * Diff (CreatePatch): objects are compared key by key: a key only in `to` is an "add", only in
 * `from` a "remove", in both with different values a recursion when both are objects or both
 * arrays, else a "replace". Arrays are compared index by index: the surplus tail of `from`
 * removed from its end, the tail of `to` added at its end, then each common index diffed.
 * Paths are JSON Pointers (RFC 6901): "~" written "~0", "/" written "~1". Equal documents give
 * an empty array.
 *
 * Inputs are borrowed; results are new references owned by the caller. No global state.
 */
#ifndef WF_KUBE_JSONPATCH_H
#define WF_KUBE_JSONPATCH_H

#include <jansson.h>

#include "core/strbuf.h"

/* The patch turning `from` into `to`, or NULL when out of memory. */
json_t *wf_jsonpatch_create(const json_t *from, const json_t *to);

/* Applies patch (an array of operations) to *doc in place (*doc may be replaced when an
 * operation targets the root ""). Returns 0, or -1 with why ("operation 3 (add /a/b): ...");
 * *doc is then partly patched. */
int wf_jsonpatch_apply(json_t **doc, const json_t *patch, wf_strbuf *why);

/* A JSON Pointer token escaped (RFC 6901): appended to b after a '/'. */
void wf_jsonpointer_append(wf_strbuf *b, const char *token);

#endif
