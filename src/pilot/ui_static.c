/*
 * ui_static.c - the web view's static files. See ui_static.h.
 */
#include "pilot/ui_static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder holding exe, resolved ("/repo/build"), into out. 0, or -1. */
static int exe_dir(const char *exe, char *out, size_t cap)
{
    char buf[PATH_MAX];
    size_t n = sizeof buf;
    if (!exe) {
        if (uv_exepath(buf, &n) != 0)
            return -1;
        exe = buf;
    }
    char res[PATH_MAX];
    if (!realpath(exe, res))
        snprintf(res, sizeof res, "%s", exe); /* as given */
    char *slash = strrchr(res, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return snprintf(out, cap, "%s", *res ? res : "/") < (int)cap ? 0 : -1;
}

const char *wf_ui_dir_resolve(const char *flag, const char *env, const char *exe, char *out,
                              size_t cap)
{
    char dir[PATH_MAX], parent[PATH_MAX];
    if (flag && *flag) {
        snprintf(out, cap, "%s", flag);
        return out;
    }
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return out;
    }
    if (exe_dir(exe, dir, sizeof dir) != 0) {
        snprintf(out, cap, "ui");
        return out;
    }
    char *slash = strrchr(dir, '/');
    snprintf(parent, sizeof parent, "%.*s", slash && slash != dir ? (int)(slash - dir) : 1, dir);
    const char *sep = strcmp(parent, "/") == 0 ? "" : "/";
    snprintf(out, cap, "%s%sui", parent, sep);
    if (is_dir(out))
        return out;
    char share[PATH_MAX + 32];
    snprintf(share, sizeof share, "%s%sshare/weft/ui", parent, sep);
    if (is_dir(share))
        snprintf(out, cap, "%s", share);
    return out;
}

bool wf_ui_path_safe(const char *rel)
{
    if (!rel || !*rel || strlen(rel) > 1024)
        return false;
    bool seg_start = true;
    for (const char *p = rel; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f || c == '%' || c == '\\')
            return false;
        if (seg_start && (c == '/' || c == '.'))
            return false; /* an empty segment, ".", "..", a hidden file, an absolute path */
        seg_start = c == '/';
    }
    return !seg_start; /* no trailing '/' */
}

const char *wf_ui_content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        {".woff2", "font/woff2"},
    };
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

static void reply_text(wf_debug_reply *r, int status, const char *text)
{
    r->status = status;
    r->ctype = "text/plain; charset=utf-8";
    wf_strbuf_puts(&r->body, text);
}

const char *wf_ui_dir_problem(const char *dir, const char *origin, char *buf, size_t cap)
{
    struct stat st;
    if (!dir || !*dir) {
        snprintf(buf, cap,
                 "weft-pilot's web view is not installed: no folder; run scripts/setup in the "
                 "weft repository, or give weft-pilot --uiDir DIR (or $WEFT_UI_DIR).");
        return buf;
    }
    if (stat(dir, &st) != 0) {
        if (origin)
            snprintf(buf, cap, "weft-pilot's web view: %s %s: no such folder.", origin, dir);
        else
            snprintf(buf, cap,
                     "weft-pilot's web view is not installed: the folder %s is missing; run "
                     "scripts/setup in the weft repository (it installs the view's libraries "
                     "into ui/node_modules), or give weft-pilot --uiDir DIR (or $WEFT_UI_DIR).",
                     dir);
        return buf;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(buf, cap,
                 "weft-pilot's web view: %s%s%s: not a folder (the view's files are "
                 "served from a folder holding index.html and node_modules).",
                 origin ? origin : "", origin ? " " : "", dir);
        return buf;
    }
    char nm[PATH_MAX + 16];
    snprintf(nm, sizeof nm, "%s/node_modules", dir);
    if (!is_dir(nm)) {
        snprintf(buf, cap,
                 "weft-pilot's web view is not installed: %s is missing (the view's libraries "
                 "from npm, e.g. cytoscape); run scripts/setup in the weft repository (npm ci "
                 "in ui/).",
                 nm);
        return buf;
    }
    return NULL;
}

/* 503 when the folder or its node_modules is missing; true when answered. */
static bool answer_missing(const char *dir, const char *origin, wf_debug_reply *r)
{
    char text[PATH_MAX * 2 + 512];
    if (!wf_ui_dir_problem(dir, origin, text, sizeof text))
        return false;
    r->status = 503;
    r->ctype = "text/plain; charset=utf-8";
    wf_strbuf_printf(&r->body, "%s\n", text);
    return true;
}

/* The real path of dir/rel when it lies inside dir's real path, into out. 0, -1 when missing
 * (errno), -2 when outside. */
static int inside(const char *dir, const char *rel, char *out)
{
    char root[PATH_MAX], full[PATH_MAX * 2];
    if (!realpath(dir, root))
        return -1;
    snprintf(full, sizeof full, "%s/%s", root, rel);
    if (!realpath(full, out))
        return -1;
    size_t n = strlen(root);
    bool under = strcmp(root, "/") == 0 || (strncmp(out, root, n) == 0 && out[n] == '/');
    return under ? 0 : -2;
}

/* path (a real path: no symbolic link) answered when it is a regular file. Opened without
 * blocking (a FIFO would block open() and pilot's loop), never following a link. */
static void serve_file(const char *path, const char *name, wf_debug_reply *r)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ELOOP)
            reply_text(r, 403, "forbidden: a symbolic link\n");
        else
            reply_text(r, 404, "404 page not found\n");
        return;
    }
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        reply_text(r, 404, "404 page not found\n");
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        reply_text(r, 403,
                   "forbidden: not a regular file (a FIFO, socket or device is never "
                   "served)\n");
        return;
    }
    if ((uint64_t)st.st_size > WF_UI_MAX_FILE) {
        close(fd);
        reply_text(r, 413, "file too large to serve\n");
        return;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        reply_text(r, 500, "cannot read the file\n");
        return;
    }
    int rc = wf_strbuf_read_stream(&r->body, f);
    fclose(f);
    if (rc != 0) {
        wf_strbuf_free(&r->body);
        reply_text(r, 500, "cannot read the file\n");
        return;
    }
    r->status = 200;
    r->ctype = wf_ui_content_type(name);
}

void wf_ui_static_serve(const char *dir, const char *origin, const char *path, wf_debug_reply *r)
{
    const char *rel;
    if (strcmp(path, "/ui") == 0) { /* the view's relative links resolve under /ui/ */
        r->status = 301;
        r->ctype = "text/html; charset=utf-8";
        r->location = "/ui/";
        wf_strbuf_puts(&r->body, "<a href=\"/ui/\">Moved Permanently</a>.\n");
        return;
    }
    if (strcmp(path, "/ui/") == 0)
        rel = "index.html";
    else if (strncmp(path, "/ui/", 4) == 0)
        rel = path + 4;
    else {
        reply_text(r, 404, "404 page not found\n");
        return;
    }
    if (strcmp(rel, "api") == 0 || strncmp(rel, "api/", 4) == 0) {
        reply_text(r, 404, "404 page not found: no such web view endpoint\n");
        return;
    }
    if (!wf_ui_path_safe(rel)) {
        reply_text(r, 400, "invalid path\n");
        return;
    }
    if (answer_missing(dir, origin, r))
        return;
    char real[PATH_MAX];
    int in = inside(dir, rel, real);
    if (in == -2) {
        reply_text(r, 403, "forbidden: outside the web view's folder\n");
        return;
    }
    if (in != 0) {
        reply_text(r, 404, "404 page not found\n");
        return;
    }
    serve_file(real, rel, r);
}
