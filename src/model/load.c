/*
 * load.c - reading files, directories and stdin into the store (see store.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/parse.h"
#include "model/store_internal.h"

#define MAX_DIR_DEPTH 64

static const char *const ignored_namespaces[] = {"kube-system", "kube-public", "kube-node-lease",
                                                 "local-path-storage"};

typedef struct doc_ctx {
    wf_store *s;
    const char *file;
    bool json;
} doc_ctx;

static int on_document(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    doc_ctx *d = arg;
    return wf_store_add_document(d->s, d->file, d->json, root, line, col);
}

static bool has_ext(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    return lp > le && strcmp(path + lp - le, ext) == 0;
}

int wf_store_load_buffer(wf_store *s, const char *name, const char *buf, size_t len, bool json)
{
    const char *file = wf_arena_strdup(&s->arena, name);
    if (!file)
        return -1;
    size_t before = s->nerrors;
    if (len > WF_LOAD_MAX_FILE_BYTES) {
        char msg[128];
        snprintf(msg, sizeof(msg), "file is %zu bytes, larger than the limit of %u bytes", len,
                 WF_LOAD_MAX_FILE_BYTES);
        if (wf_store_add_error(s, file, 0, 0, msg))
            return -1;
    } else {
        uint32_t line, col;
        size_t bad = wf_utf8_check(buf, len, NULL, NULL);
        if (bad < len) {
            wf_utf8_check(buf, bad, &line, &col); /* the position, only when needed */
            char msg[128];
            snprintf(msg, sizeof(msg), "invalid UTF-8 (byte 0x%02X at offset %zu)",
                     (unsigned char)buf[bad], bad);
            if (wf_store_add_error(s, file, line, col, msg))
                return -1;
        } else {
            doc_ctx d = {s, file, json};
            wf_parse_error err = {0};
            int rc = json ? wf_parse_json(&s->arena, buf, len, on_document, &d, &err)
                          : wf_parse_yaml(&s->arena, buf, len, on_document, &d, &err);
            if (rc < 0)
                return -1;
            if (rc > 0 && wf_store_add_error(s, file, err.line, err.col, err.message))
                return -1;
        }
    }
    int added = (int)(s->nerrors - before);
    if (added)
        s->failed_files++;
    return added;
}

static int read_stream(FILE *f, char **out, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    for (;;) {
        if (n == cap) {
            if (cap > WF_LOAD_MAX_FILE_BYTES) /* stop reading: the size error is reported */
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return 1;
    }
    *out = buf;
    *len = n;
    return 0;
}

static int load_file(wf_store *s, const char *path, bool json)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        const char *file = wf_arena_strdup(&s->arena, path);
        s->failed_files++;
        return file && wf_store_add_error(s, file, 0, 0, strerror(errno)) == 0 ? 1 : -1;
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = read_stream(f, &buf, &len);
    if (f != stdin)
        fclose(f);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        const char *file = wf_arena_strdup(&s->arena, path);
        s->failed_files++;
        return file && wf_store_add_error(s, file, 0, 0, "read error") == 0 ? 1 : -1;
    }
    rc = wf_store_load_buffer(s, path, buf, len, json);
    free(buf);
    return rc;
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int load_dir(wf_store *s, const char *path, int depth,
                    void (*skipped_cb)(const char *, void *), void *arg)
{
    if (depth > MAX_DIR_DEPTH)
        return 0;
    struct dirent **list;
    int n = scandir(path, &list, NULL, cmp_names);
    if (n < 0) {
        const char *file = wf_arena_strdup(&s->arena, path);
        s->failed_files++;
        return file && wf_store_add_error(s, file, 0, 0, strerror(errno)) == 0 ? 1 : -1;
    }
    int total = 0;
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (total >= 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            size_t len = strlen(path) + strlen(name) + 2;
            char *child = malloc(len);
            if (!child) {
                total = -1;
            } else {
                /* joined as Go's filepath.Join does: "." + "x" is "x", no doubled "/" */
                if (strcmp(path, ".") == 0)
                    snprintf(child, len, "%s", name);
                else
                    snprintf(child, len, "%s%s%s", path, has_ext(path, "/") ? "" : "/", name);
                struct stat st;
                int rc = 0;
                if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                    rc = load_dir(s, child, depth + 1, skipped_cb, arg);
                else if (has_ext(child, ".yaml") || has_ext(child, ".yml"))
                    rc = load_file(s, child, false);
                else if (has_ext(child, ".json"))
                    rc = load_file(s, child, true);
                else if (skipped_cb)
                    skipped_cb(child, arg);
                free(child);
                total = rc < 0 ? -1 : total + rc;
            }
        }
        free(list[i]);
    }
    free(list);
    return total;
}

int wf_store_load_path(wf_store *s, const char *path, void (*skipped_cb)(const char *, void *),
                       void *arg)
{
    if (strcmp(path, "-") == 0)
        return load_file(s, path, false);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return load_dir(s, path, 0, skipped_cb, arg);
    if (has_ext(path, ".json"))
        return load_file(s, path, true);
    if (!has_ext(path, ".yaml") && !has_ext(path, ".yml") && stat(path, &st) == 0 && skipped_cb) {
        skipped_cb(path, arg);
        return 0;
    }
    return load_file(s, path, false);
}

static bool ignored_namespace(const char *ns)
{
    for (size_t i = 0; i < sizeof(ignored_namespaces) / sizeof(ignored_namespaces[0]); i++)
        if (strcmp(ns, ignored_namespaces[i]) == 0)
            return true;
    return false;
}

static int add_resource(wf_store *s, const char *file, bool json, wf_node *root, uint32_t line,
                        uint32_t col)
{
    const char *api = wf_map_str(root, "apiVersion");
    const char *kind = wf_map_str(root, "kind");
    if (!api || !kind)
        return 0; /* not a Kubernetes object: skipped, as istioctl does */
    wf_resource *r = wf_arena_alloc(&s->arena, sizeof(*r));
    if (!r)
        return -1;
    r->kind = wf_kind_lookup(api, kind);
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
    if (ignored_namespace(r->ns))
        return 0;
    r->file = file;
    r->json = json;
    r->line = line;
    r->col = col;
    if (wf_decode_kvs(&s->arena, wf_map_get(r->metadata, "labels"), &r->labels) ||
        wf_decode_kvs(&s->arena, wf_map_get(r->metadata, "annotations"), &r->annotations))
        return -1;
    r->index = s->all.n;
    return wf_ptrvec_push(&s->all, r);
}

int wf_store_add_document(wf_store *s, const char *file, bool json, wf_node *root, uint32_t line,
                          uint32_t col)
{
    if (!root || root->type != WF_NODE_MAP)
        return 0;
    const char *kind = wf_map_str(root, "kind");
    wf_node *items = wf_map_get(root, "items");
    if (kind && strcmp(kind, "List") == 0 && items && items->type == WF_NODE_SEQ) {
        for (size_t i = 0; i < items->len; i++) {
            wf_node *it = items->u.items[i];
            if (it->type == WF_NODE_MAP &&
                add_resource(s, file, json, it, json ? 0 : it->line, json ? 0 : it->col) != 0)
                return -1;
        }
        return 0;
    }
    return add_resource(s, file, json, root, line, col);
}
