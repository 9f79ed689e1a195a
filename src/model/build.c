/*
 * build.c - documents to resources: kinds, kind: List, strict Kubernetes types, typed views
 * (see store_internal.h, wf_build_resources). Follows istioctl's file reader
 * (pilot/pkg/config/file/store.go parseChunk).
 */
#include <string.h>

#include "model/kube_check.h"
#include "model/store_internal.h"

static int doc_error(const wf_res_sink *sink, const wf_node *at, uint32_t line, uint32_t col,
                     const char *msg)
{
    if (at && at->line) {
        line = at->line;
        col = at->col;
    }
    return sink->error(sink->arg, line, col, msg);
}

static int add_object(const wf_res_sink *sink, const char *file, bool json, wf_node *root,
                      uint32_t line, uint32_t col, int depth);

/* kind: List: every item is an object of its own (pilot/pkg/config/file/store.go). */
static int add_list(const wf_res_sink *sink, const char *file, bool json, wf_node *root,
                    uint32_t line, uint32_t col, int depth)
{
    wf_node *items = wf_map_get(root, "items");
    if (depth >= 8)
        return doc_error(sink, root, line, col, "kind: List nested too deeply (limit 8)");
    if (!items || items->type != WF_NODE_SEQ)
        return doc_error(sink, items, line, col,
                         "failed extracting resource chunks from list: malformed items field");
    for (size_t i = 0; i < items->len; i++) {
        wf_node *it = items->u.items[i];
        if (it->type != WF_NODE_MAP)
            return doc_error(sink, it, line, col,
                             "failed extracting resource chunks from list: malformed items field");
    }
    for (size_t i = 0; i < items->len; i++) {
        wf_node *it = items->u.items[i];
        if (add_object(sink, file, json, it, json ? 0 : it->line, json ? 0 : it->col, depth + 1))
            return -1;
    }
    return 0;
}

static int add_object(const wf_res_sink *sink, const char *file, bool json, wf_node *root,
                      uint32_t line, uint32_t col, int depth)
{
    const char *api = wf_map_str(root, "apiVersion");
    const char *kind = wf_map_str(root, "kind");
    if ((!api || !*api) && (!kind || !*kind))
        return doc_error(sink, NULL, line, col,
                         "unable to parse resource with no group, version and kind");
    if (kind && strcmp(kind, "List") == 0)
        return add_list(sink, file, json, root, line, col, depth);
    /* An unknown group/version/kind is kept opaque (WF_KIND_OTHER), never an error; no
     * analyzer reads it, as istioctl skips it. Known kinds must decode. */
    wf_kind k = wf_kind_lookup(api, kind);
    char msg[400];
    const wf_node *at = NULL;
    if (k != WF_KIND_OTHER && wf_kube_check(root, k, msg, sizeof(msg), &at))
        return doc_error(sink, at, line, col, msg);
    wf_resource *r = wf_arena_alloc(sink->arena, sizeof(*r));
    if (!r)
        return -1;
    r->kind = k;
    r->api_version = api;
    r->kind_name = kind;
    r->root = root;
    r->metadata = wf_map_get(root, "metadata");
    r->spec = wf_map_get(root, "spec");
    r->status = wf_map_get(root, "status");
    const char *name = wf_map_str(r->metadata, "name");
    const char *ns = wf_map_str(r->metadata, "namespace");
    r->name = name ? name : "";
    r->ns = (ns && !wf_kind_cluster_scoped(r->kind)) ? ns : "";
    if (wf_is_system_namespace(r->ns))
        return 0;
    r->file = file;
    r->json = json;
    r->line = line;
    r->col = col;
    if (wf_decode_kvs(sink->arena, wf_map_get(r->metadata, "labels"), &r->labels) ||
        wf_decode_kvs(sink->arena, wf_map_get(r->metadata, "annotations"), &r->annotations) ||
        wf_decode(sink->arena, r))
        return -1;
    return sink->resource(sink->arg, r);
}

int wf_build_resources(const wf_res_sink *sink, const char *file, bool json, wf_node *root,
                       uint32_t line, uint32_t col)
{
    if (!root || root->type == WF_NODE_NULL)
        return 0; /* an empty document */
    if (root->type != WF_NODE_MAP)
        return doc_error(sink, root, line, col,
                         root->type == WF_NODE_SEQ
                             ? "a document must be one object, not a list (use kind: List)"
                             : "a document must be an object with apiVersion and kind");
    return add_object(sink, file, json, root, line, col, 0);
}
