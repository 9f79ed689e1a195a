/*
 * source.c - the directory config source: fs events, the periodic rescan, debounce, and
 * delivery of the snapshots source_build.c makes. See source.h.
 */
#include "pilot/source.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/log.h"

typedef struct dir_src {
    wf_config_source iface;
    uv_loop_t *loop;
    wf_dir_source_opts opts; /* strings below are owned copies */
    char **dirs;
    char *mesh_file, *domain, *default_ns;
    uv_fs_event_t *watches; /* n_watch used */
    size_t n_watch;
    uv_timer_t debounce, rescan;
    bool pending;
    uint64_t first_ms;     /* loop time of the first event of the burst */
    int64_t first_wall_ms; /* wall clock of the same */
    uint64_t sig;          /* signature of the inputs when last built */
    wf_snapshot *cur;
    int open; /* handles not yet closed */
    bool started, stopping;
} dir_src;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- input signature (the rescan fallback) ------------------------------------------------ */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t sig_path(uint64_t h, const char *path, int depth);

static uint64_t sig_dir(uint64_t h, const char *path, int depth)
{
    DIR *d = opendir(path);
    struct dirent *e;
    if (!d) {
        return mix(h, "!", 1);
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue; /* ., .., and editors' hidden temporaries */
        }
        char child[4096];
        if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child) {
            h = sig_path(h, child, depth + 1);
        }
    }
    closedir(d);
    return h;
}

/* Mixes path, size, mtime and inode of every file under path (order-independent would be
 * nicer; readdir order is stable enough between two scans of an unchanged directory). */
static uint64_t sig_path(uint64_t h, const char *path, int depth)
{
    struct stat st;
    if (depth > 32 || stat(path, &st) != 0) {
        return mix(h, path, strlen(path));
    }
    if (S_ISDIR(st.st_mode)) {
        return sig_dir(h, path, depth);
    }
    h = mix(h, path, strlen(path));
    h = mix(h, &st.st_size, sizeof st.st_size);
    h = mix(h, &st.st_mtim, sizeof st.st_mtim);
    return mix(h, &st.st_ino, sizeof st.st_ino);
}

static uint64_t signature(const dir_src *d)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < d->opts.n_dirs; i++) {
        h = sig_path(h, d->dirs[i], 0);
    }
    return d->mesh_file ? sig_path(h, d->mesh_file, 0) : h;
}

/* ---- build and deliver ---------------------------------------------------------------------- */

static void rebuild(dir_src *d)
{
    d->sig = signature(d);
    int64_t changed_at = d->first_wall_ms ? d->first_wall_ms : wall_ms();
    wf_snapshot *s = wf_source_build(&d->opts, d->cur, changed_at);
    d->first_wall_ms = 0;
    if (!s) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "config: out of memory building a snapshot");
        return;
    }
    WF_LOG(WF_LC_config, WF_LOG_INFO,
           "config: snapshot %llu: %zu resources from %zu files, %zu errors, %zu warnings, "
           "change %s, built in %.1f ms",
           (unsigned long long)s->seq, wf_store_count(s->store), s->files, s->n_errors,
           s->n_warnings, wf_change_kind_name(s->change), s->build_ms);
    wf_snapshot_unref(d->cur);
    d->cur = s;
    if (d->iface.on_change) {
        d->iface.on_change(s, d->iface.on_change_ud);
    }
}

static void on_debounce(uv_timer_t *t)
{
    dir_src *d = t->data;
    d->pending = false;
    rebuild(d);
}

/* Istio's debounce: wait for debounce_after of quiet, but no longer than debounce_max after
 * the first event of the burst. */
static void poke(dir_src *d)
{
    if (d->stopping) {
        return;
    }
    uint64_t now = uv_now(d->loop);
    if (!d->pending) {
        d->pending = true;
        d->first_ms = now;
        d->first_wall_ms = wall_ms();
    }
    uint64_t elapsed = now - d->first_ms;
    uint64_t left = elapsed >= d->opts.debounce_max_ms ? 0 : d->opts.debounce_max_ms - elapsed;
    uint64_t delay = left < d->opts.debounce_after_ms ? left : d->opts.debounce_after_ms;
    uv_timer_start(&d->debounce, on_debounce, delay, 0);
}

void wf_dir_source_poke(wf_config_source *src)
{
    poke(src->impl);
}

static void on_fs_event(uv_fs_event_t *h, const char *name, int events, int status)
{
    dir_src *d = h->data;
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "config: fs event %s (%d, %d)", name ? name : "", events,
           status);
    poke(d);
}

static void on_rescan(uv_timer_t *t)
{
    dir_src *d = t->data;
    if (!d->pending && signature(d) != d->sig) {
        poke(d);
    }
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static void free_src(dir_src *d)
{
    for (size_t i = 0; i < d->opts.n_dirs; i++) {
        free(d->dirs[i]);
    }
    free(d->dirs);
    free(d->mesh_file);
    free(d->domain);
    free(d->default_ns);
    free(d->watches);
    wf_snapshot_unref(d->cur);
    free(d);
}

static void on_closed(uv_handle_t *h)
{
    dir_src *d = h->data;
    if (--d->open == 0) {
        free_src(d);
    }
}

static void close_handle(dir_src *d, uv_handle_t *h)
{
    if (!uv_is_closing(h)) {
        uv_close(h, on_closed);
    }
}

static void src_stop(wf_config_source *src)
{
    dir_src *d = src->impl;
    if (d->stopping) {
        return;
    }
    d->stopping = true;
    if (!d->started) {
        free_src(d);
        return;
    }
    for (size_t i = 0; i < d->n_watch; i++) {
        close_handle(d, (uv_handle_t *)&d->watches[i]);
    }
    close_handle(d, (uv_handle_t *)&d->debounce);
    close_handle(d, (uv_handle_t *)&d->rescan);
}

static wf_snapshot *src_current(wf_config_source *src)
{
    return ((dir_src *)src->impl)->cur;
}

/* Watches path (a directory or the MeshConfig file); failures only lose the fast path. */
static void watch(dir_src *d, const char *path)
{
    uv_fs_event_t *w = &d->watches[d->n_watch];
    if (uv_fs_event_init(d->loop, w) != 0) {
        return;
    }
    w->data = d;
    d->n_watch++;
    d->open++;
    int rc = uv_fs_event_start(w, on_fs_event, path, UV_FS_EVENT_RECURSIVE);
    if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "config: cannot watch %s (%s): rescanning every %llu ms",
               path, uv_strerror(rc), (unsigned long long)d->opts.rescan_ms);
    }
}

static int check_inputs(dir_src *d, char *err, size_t cap)
{
    struct stat st;
    for (size_t i = 0; i < d->opts.n_dirs; i++) {
        DIR *dir = NULL;
        if (stat(d->dirs[i], &st) != 0 || (S_ISDIR(st.st_mode) && !(dir = opendir(d->dirs[i])))) {
            snprintf(err, cap, "cannot read config directory %s: %s", d->dirs[i], strerror(errno));
            return -1;
        }
        if (dir) {
            closedir(dir);
        }
    }
    if (d->mesh_file) {
        const char *merr = NULL;
        wf_meshcfg *m = wf_meshcfg_new_default();
        int rc = m ? wf_meshcfg_load_file(m, d->mesh_file, &merr) : -1;
        if (rc != 0) {
            snprintf(err, cap, "cannot load MeshConfig %s: %s", d->mesh_file,
                     merr ? merr : "out of memory");
        }
        wf_meshcfg_free(m);
        return rc ? -1 : 0;
    }
    return 0;
}

static int src_start(wf_config_source *src, char *err, size_t cap)
{
    dir_src *d = src->impl;
    if (d->started || d->stopping) {
        snprintf(err, cap, "config source already started");
        return -1;
    }
    if (check_inputs(d, err, cap)) {
        return -1;
    }
    uv_timer_init(d->loop, &d->debounce);
    uv_timer_init(d->loop, &d->rescan);
    d->debounce.data = d->rescan.data = d;
    d->open = 2;
    d->started = true;
    for (size_t i = 0; i < d->opts.n_dirs; i++) {
        watch(d, d->dirs[i]);
    }
    if (d->mesh_file) {
        watch(d, d->mesh_file);
    }
    rebuild(d);
    if (!d->cur) {
        snprintf(err, cap, "out of memory building the first config snapshot");
        return -1;
    }
    uv_timer_start(&d->rescan, on_rescan, d->opts.rescan_ms, d->opts.rescan_ms);
    return 0;
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *c = s ? strdup(s) : NULL;
    if (s && !c) {
        *oom = true;
    }
    return c;
}

int wf_dir_source_new(uv_loop_t *loop, const wf_dir_source_opts *opts, wf_config_source **out)
{
    bool oom = false;
    dir_src *d = calloc(1, sizeof *d);
    if (!d) {
        return -1;
    }
    d->loop = loop;
    d->opts = *opts;
    d->dirs = calloc(opts->n_dirs ? opts->n_dirs : 1, sizeof *d->dirs);
    d->watches = calloc(opts->n_dirs + 1, sizeof *d->watches);
    oom = !d->dirs || !d->watches;
    for (size_t i = 0; !oom && i < opts->n_dirs; i++) {
        d->dirs[i] = dup_or_null(opts->dirs[i], &oom);
    }
    d->mesh_file = dup_or_null(opts->mesh_file, &oom);
    d->domain = dup_or_null(opts->domain_suffix, &oom);
    d->default_ns = dup_or_null(opts->default_ns, &oom);
    if (oom) {
        d->opts.n_dirs = d->dirs ? opts->n_dirs : 0;
        free_src(d);
        return -1;
    }
    d->opts.dirs = (const char *const *)d->dirs;
    d->opts.mesh_file = d->mesh_file;
    d->opts.domain_suffix = d->domain;
    d->opts.default_ns = d->default_ns;
    d->opts.debounce_after_ms = opts->debounce_after_ms ? opts->debounce_after_ms : 100;
    d->opts.debounce_max_ms = opts->debounce_max_ms ? opts->debounce_max_ms : 10000;
    d->opts.rescan_ms = opts->rescan_ms ? opts->rescan_ms : 2000;
    d->iface.start = src_start;
    d->iface.stop = src_stop;
    d->iface.current = src_current;
    d->iface.impl = d;
    *out = &d->iface;
    return 0;
}
