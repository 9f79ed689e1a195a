/*
 * load.c - reading files, directories and stdin into the store (see store.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/parse.h"
#include "model/parse_file.h"
#include "model/store_internal.h"

#define MAX_DIR_DEPTH 64

static bool has_ext(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    return lp > le && strcmp(path + lp - le, ext) == 0;
}

static int note_file(wf_store *s, const char *path)
{
    if (s->nfiles == s->capfiles) {
        size_t cap = s->capfiles ? s->capfiles * 2 : 16;
        const char **nf = wf_arena_alloc(&s->arena, cap * sizeof(*nf));
        if (!nf)
            return -1;
        if (s->nfiles)
            memcpy(nf, s->files, s->nfiles * sizeof(*nf));
        s->files = nf;
        s->capfiles = cap;
    }
    const char *copy = wf_arena_strdup(&s->arena, path);
    if (!copy)
        return -1;
    s->files[s->nfiles++] = copy;
    return 0;
}

/* Take over one parsed file: its resources (in document order), its document errors, then
 * its parse error. Returns the number of errors added, or -1 on out of memory. */
static int commit_parsed(wf_store *s, wf_parsed_file *pf)
{
    if (pf->from_file && note_file(s, pf->path))
        return -1;
    const char *file = pf->file ? pf->file : wf_arena_strdup(&s->arena, pf->path);
    if (!file)
        return -1;
    wf_arena_adopt(&s->arena, &pf->arena);
    size_t before = s->nerrors;
    for (size_t i = 0; i < pf->nres; i++) {
        pf->res[i]->index = s->all.n;
        if (wf_ptrvec_push(&s->all, pf->res[i]))
            return -1;
    }
    for (size_t i = 0; i < pf->ndoc_errors; i++) {
        const wf_doc_error *e = &pf->doc_errors[i];
        if (wf_store_add_error(s, file, e->line, e->col, e->message))
            return -1;
    }
    if (pf->failed && wf_store_add_error(s, file, pf->err_line, pf->err_col, pf->err))
        return -1;
    int added = (int)(s->nerrors - before);
    if (added)
        s->failed_files++;
    return added;
}
int wf_store_load_buffer(wf_store *s, const char *name, const char *buf, size_t len, bool json)
{
    wf_parsed_file pf;
    wf_parsed_file_init(&pf, name, json);
    int rc = wf_parsed_file_text(&pf, buf, len);
    if (rc == 0)
        rc = commit_parsed(s, &pf);
    wf_parsed_file_free(&pf);
    return rc;
}

int wf_store_load_live(wf_store *s, const char *name, const char *buf, size_t len)
{
    size_t before = s->all.n;
    int rc = wf_store_load_buffer(s, name, buf, len, true);
    for (size_t i = before; rc >= 0 && i < s->all.n; i++)
        ((wf_resource *)s->all.v[i])->live = true;
    return rc;
}

size_t wf_store_file_count(const wf_store *s)
{
    return s->nfiles;
}

const char *wf_store_file(const wf_store *s, size_t i)
{
    return i < s->nfiles ? s->files[i] : NULL;
}

static int load_file(wf_store *s, const char *path, bool json)
{
    wf_parsed_file pf;
    wf_parsed_file_init(&pf, path, json);
    int rc = wf_parsed_file_read(&pf);
    if (rc == 0)
        rc = commit_parsed(s, &pf);
    wf_parsed_file_free(&pf);
    return rc;
}

/* Files found while walking directories, parsed together (in parallel) afterwards. */
typedef struct file_list {
    wf_parsed_file *v;
    size_t n, cap;
} file_list;

static int list_add(file_list *l, const char *path, bool json)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        wf_parsed_file *nv = realloc(l->v, cap * sizeof(*nv));
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return -1;
    wf_parsed_file_init(&l->v[l->n++], copy, json);
    return 0;
}

static void list_free(file_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free((char *)l->v[i].path);
        wf_parsed_file_free(&l->v[i]);
    }
    free(l->v);
}

typedef struct commit_state {
    wf_store *s;
    int total;
} commit_state;

static int take_parsed(wf_parsed_file *pf, void *arg)
{
    commit_state *cs = arg;
    int rc = commit_parsed(cs->s, pf);
    wf_parsed_file_free(pf);
    if (rc < 0)
        return -1;
    cs->total += rc;
    return 0;
}

/* Parse every listed file on up to two threads and commit them in walk order meanwhile. */
static int load_listed(wf_store *s, file_list *l)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = l->n < 8 ? 1 : (ncpu >= 2 ? 2 : 1);
    commit_state cs = {s, 0};
    return wf_parse_files(l->v, l->n, threads, take_parsed, &cs) < 0 ? -1 : cs.total;
}

/* A FIFO, socket or device (after following symlinks): never read while walking a
 * directory. */
static bool is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static int not_regular(wf_store *s, const char *path)
{
    const char *file = wf_arena_strdup(&s->arena, path);
    s->failed_files++;
    return file && wf_store_add_error(s, file, 0, 0, "not a regular file") == 0 ? 1 : -1;
}

/* Go's filepath.Clean, in place: collapse "//", drop "." elements, resolve "x/.." where x is
 * not "..", and never leave an empty path (it becomes "."). */
static void clean_path(char *p)
{
    bool rooted = p[0] == '/';
    char *out = p + rooted, *r = p + rooted;
    char *floor = out; /* ".." may not remove anything before this */
    while (*r) {
        if (*r == '/') {
            r++;
        } else if (r[0] == '.' && (r[1] == '/' || r[1] == '\0')) {
            r++;
        } else if (r[0] == '.' && r[1] == '.' && (r[2] == '/' || r[2] == '\0')) {
            r += 2;
            if (out > floor) {
                out--;
                while (out > floor && *(out - 1) != '/')
                    out--;
                if (out > floor)
                    out--; /* the "/" before the removed element */
            } else if (!rooted) {
                if (out != p)
                    *out++ = '/';
                *out++ = '.';
                *out++ = '.';
                floor = out;
            }
        } else {
            if (out != p + rooted)
                *out++ = '/';
            while (*r && *r != '/')
                *out++ = *r++;
        }
    }
    if (out == p)
        *out++ = '.';
    *out = '\0';
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int walk_dir(wf_store *s, file_list *files, const char *path, int depth,
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
                /* joined as Go's filepath.Join does */
                snprintf(child, len, "%s/%s", path, name);
                clean_path(child);
                struct stat st;
                int rc = 0;
                if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                    rc = walk_dir(s, files, child, depth + 1, skipped_cb, arg);
                else if (is_special(child) && (has_ext(child, ".yaml") || has_ext(child, ".yml") ||
                                               has_ext(child, ".json")))
                    rc = not_regular(s, child); /* a FIFO would block the walk forever */
                else if (has_ext(child, ".yaml") || has_ext(child, ".yml"))
                    rc = list_add(files, child, false);
                else if (has_ext(child, ".json"))
                    rc = list_add(files, child, true);
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
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        file_list files = {NULL, 0, 0};
        int rc = walk_dir(s, &files, path, 0, skipped_cb, arg);
        int loaded = rc < 0 ? -1 : load_listed(s, &files);
        list_free(&files);
        return rc < 0 || loaded < 0 ? -1 : rc + loaded;
    }
    if (has_ext(path, ".json"))
        return load_file(s, path, true);
    if (!has_ext(path, ".yaml") && !has_ext(path, ".yml") && stat(path, &st) == 0 && skipped_cb) {
        skipped_cb(path, arg);
        return 0;
    }
    return load_file(s, path, false);
}
