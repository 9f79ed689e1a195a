/*
 * alog_sink.c - access log files and non-blocking per-worker writers (see alog_sink.h).
 */
#include "proxy/access_log/alog_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALOG_OPEN_FLAGS      (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC)
#define ALOG_MAX_PENDING_CAP ((size_t)1 << 30)

typedef struct {
    char *path;
    int fd;
    bool standard; /* fd 1 or 2: never closed or reopened */
} alog_file;

struct wp_alog_files {
    pthread_mutex_t mu; /* serialises open / reopen */
    atomic_size_t n;    /* entries [0, n) are complete */
    alog_file ent[WP_ALOG_MAX_FILES];
};

struct wp_alog_filebuf {
    wp_alog_writer *w;
    int index;
    wf_strbuf pending; /* lines waiting for the next write */
    wf_strbuf flight;  /* the buffer being written */
    size_t flight_off; /* bytes of flight already written */
    uv_fs_t req;
    bool busy;
};

/* ---------------------------------------------------------------- files ------------- */

wp_alog_files *wp_alog_files_new(void)
{
    wp_alog_files *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    if (pthread_mutex_init(&f->mu, NULL) != 0) {
        free(f);
        return NULL;
    }
    atomic_init(&f->n, 0);
    return f;
}

static int find_path(const wp_alog_files *f, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f->ent[i].path, path) == 0)
            return (int)i;
    }
    return -1;
}

static int open_path(const char *path, bool *standard)
{
    *standard = false;
    if (strcmp(path, "/dev/stdout") == 0 || strcmp(path, "/dev/stderr") == 0) {
        *standard = true;
        return strcmp(path, "/dev/stdout") == 0 ? STDOUT_FILENO : STDERR_FILENO;
    }
    return open(path, ALOG_OPEN_FLAGS, 0644);
}

int wp_alog_files_open(wp_alog_files *f, const char *path, wf_strbuf *err)
{
    pthread_mutex_lock(&f->mu);
    size_t n = atomic_load_explicit(&f->n, memory_order_relaxed);
    int idx = find_path(f, n, path);
    if (idx >= 0)
        goto out;
    if (n >= WP_ALOG_MAX_FILES) {
        if (err)
            wf_strbuf_printf(err, "cannot open access log file '%s': more than %d log files", path,
                             WP_ALOG_MAX_FILES);
        goto out;
    }
    alog_file *e = &f->ent[n];
    e->path = strdup(path);
    if (!e->path) {
        if (err)
            wf_strbuf_printf(err, "cannot open access log file '%s': out of memory", path);
        goto out;
    }
    e->fd = open_path(path, &e->standard);
    if (e->fd < 0) {
        if (err)
            wf_strbuf_printf(err, "cannot open access log file '%s': %s", path, strerror(errno));
        free(e->path);
        e->path = NULL;
        goto out;
    }
    idx = (int)n;
    atomic_store_explicit(&f->n, n + 1, memory_order_release);
out:
    pthread_mutex_unlock(&f->mu);
    return idx;
}

/* The errno of creating a file in the directory part of path, 0 when it would work. */
static int parent_errno(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return ENAMETOOLONG;
    if (n)
        memcpy(dir, path, n);
    else
        dir[n++] = '.';
    dir[n] = '\0';
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    return access(dir, W_OK | X_OK) == 0 ? 0 : errno;
}

int wp_alog_path_check(const char *path, wf_strbuf *err)
{
    if (strcmp(path, "/dev/stdout") == 0 || strcmp(path, "/dev/stderr") == 0)
        return 0;
    struct stat st;
    int e;
    if (stat(path, &st) == 0)
        e = S_ISDIR(st.st_mode) ? EISDIR : access(path, W_OK) == 0 ? 0 : errno;
    else
        e = errno == ENOENT ? parent_errno(path) : errno;
    if (e == 0)
        return 0;
    wf_strbuf_printf(err, "cannot open access log file '%s': %s", path, strerror(e));
    return -1;
}

size_t wp_alog_files_count(const wp_alog_files *f)
{
    return atomic_load_explicit(&((wp_alog_files *)f)->n, memory_order_acquire);
}

int wp_alog_files_fd(const wp_alog_files *f, int index)
{
    if (index < 0 || (size_t)index >= wp_alog_files_count(f))
        return -1;
    return f->ent[index].fd;
}

int wp_alog_files_reopen(wp_alog_files *f, wf_strbuf *err)
{
    int rc = 0;
    pthread_mutex_lock(&f->mu);
    size_t n = atomic_load_explicit(&f->n, memory_order_relaxed);
    for (size_t i = 0; i < n; i++) {
        alog_file *e = &f->ent[i];
        if (e->standard)
            continue;
        int fd = open(e->path, ALOG_OPEN_FLAGS, 0644);
        if (fd < 0 || dup3(fd, e->fd, O_CLOEXEC) < 0) {
            if (err)
                wf_strbuf_printf(err, "cannot reopen access log file '%s': %s\n", e->path,
                                 strerror(errno));
            rc = -1;
        }
        if (fd >= 0)
            close(fd);
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void wp_alog_files_free(wp_alog_files *f)
{
    if (!f)
        return;
    size_t n = atomic_load(&f->n);
    for (size_t i = 0; i < n; i++) {
        if (!f->ent[i].standard)
            close(f->ent[i].fd);
        free(f->ent[i].path);
    }
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* ---------------------------------------------------------------- writer ------------ */

static void start_write(wp_alog_filebuf *b);
static void on_written(uv_fs_t *req);

static uint64_t count_lines(const char *s, size_t n)
{
    uint64_t lines = 0;
    const char *end = s + n;
    while (s < end && (s = memchr(s, '\n', (size_t)(end - s))) != NULL) {
        lines++;
        s++;
    }
    return lines;
}

static void maybe_finish(wp_alog_writer *w)
{
    if (!w->closing || !w->timer_closed || w->inflight || w->finished)
        return;
    w->finished = true;
    for (size_t i = 0; i < WP_ALOG_MAX_FILES; i++) {
        if (!w->bufs[i])
            continue;
        wf_strbuf_free(&w->bufs[i]->pending);
        wf_strbuf_free(&w->bufs[i]->flight);
        free(w->bufs[i]);
        w->bufs[i] = NULL;
    }
    if (w->done)
        w->done(w);
}

/* Issues the write of flight[flight_off..]; returns false when it could not be started. */
static bool issue(wp_alog_filebuf *b)
{
    wp_alog_writer *w = b->w;
    uv_buf_t buf =
        uv_buf_init(b->flight.data + b->flight_off, (unsigned)(b->flight.len - b->flight_off));
    int fd = wp_alog_files_fd(w->files, b->index);
    if (fd < 0 || uv_fs_write(w->loop, &b->req, fd, &buf, 1, -1, on_written) < 0)
        return false;
    return true;
}

static void finish_flight(wp_alog_filebuf *b, bool failed)
{
    wp_alog_writer *w = b->w;
    size_t left = b->flight.len - b->flight_off;
    if (failed) {
        w->write_errors++;
        w->dropped_lines += count_lines(b->flight.data + b->flight_off, left);
    }
    w->pending_bytes -= b->flight.len;
    wf_strbuf_reset(&b->flight);
    b->flight_off = 0;
    b->busy = false;
}

static void on_written(uv_fs_t *req)
{
    wp_alog_filebuf *b = req->data;
    wp_alog_writer *w = b->w;
    ssize_t r = req->result;
    uv_fs_req_cleanup(req);
    w->inflight--;
    if (r > 0) {
        b->flight_off += (size_t)r;
        w->bytes_written += (uint64_t)r;
    }
    bool failed = r < 0 || (r == 0 && b->flight_off < b->flight.len);
    if (!failed && b->flight_off < b->flight.len) { /* short write: finish the buffer */
        if (issue(b)) {
            w->inflight++;
            return;
        }
        failed = true;
    }
    finish_flight(b, failed);
    start_write(b); /* lines that arrived meanwhile */
    maybe_finish(w);
}

static void start_write(wp_alog_filebuf *b)
{
    if (b->busy || b->pending.len == 0)
        return;
    wf_strbuf tmp = b->flight; /* swap: pending goes out, the old buffer is reused */
    b->flight = b->pending;
    b->pending = tmp;
    wf_strbuf_reset(&b->pending);
    b->flight_off = 0;
    b->busy = true;
    b->req.data = b;
    if (issue(b)) {
        b->w->inflight++;
        return;
    }
    finish_flight(b, true);
}

static void on_timer(uv_timer_t *t)
{
    wp_alog_writer_flush(t->data);
}

int wp_alog_writer_init(wp_alog_writer *w, uv_loop_t *loop, wp_alog_files *files,
                        uint64_t flush_interval_ms, size_t max_pending_bytes)
{
    memset(w, 0, sizeof *w);
    w->loop = loop;
    w->files = files;
    w->flush_interval_ms =
        flush_interval_ms ? flush_interval_ms : WP_ALOG_DEFAULT_FLUSH_INTERVAL_MS;
    w->max_pending_bytes = max_pending_bytes ? max_pending_bytes : WP_ALOG_DEFAULT_MAX_PENDING;
    if (w->max_pending_bytes > ALOG_MAX_PENDING_CAP) /* one uv_buf_t must hold a buffer */
        w->max_pending_bytes = ALOG_MAX_PENDING_CAP;
    int rc = uv_timer_init(loop, &w->timer);
    if (rc < 0)
        return rc;
    w->timer.data = w;
    rc = uv_timer_start(&w->timer, on_timer, w->flush_interval_ms, w->flush_interval_ms);
    if (rc < 0) {
        uv_close((uv_handle_t *)&w->timer, NULL);
        return rc;
    }
    uv_unref((uv_handle_t *)&w->timer);
    return 0;
}

static wp_alog_filebuf *get_buf(wp_alog_writer *w, int file)
{
    if (file < 0 || file >= WP_ALOG_MAX_FILES || (size_t)file >= wp_alog_files_count(w->files))
        return NULL;
    wp_alog_filebuf *b = w->bufs[file];
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            return NULL;
        b->w = w;
        b->index = file;
        w->bufs[file] = b;
    }
    return b;
}

void wp_alog_write(wp_alog_writer *w, int file, const char *line, size_t len)
{
    wp_alog_filebuf *b = w->closing ? NULL : get_buf(w, file);
    if (!b || len > w->max_pending_bytes || w->pending_bytes > w->max_pending_bytes - len) {
        w->dropped_lines += len ? count_lines(line, len) + (line[len - 1] != '\n') : 0;
        return;
    }
    size_t before = b->pending.len;
    wf_strbuf_append(&b->pending, line, len);
    if (wf_strbuf_failed(&b->pending)) { /* keep what was there; count the loss */
        b->pending.failed = false;
        b->pending.len = before;
        if (b->pending.data)
            b->pending.data[before] = '\0';
        w->dropped_lines += count_lines(line, len) + (line[len - 1] != '\n');
        return;
    }
    w->pending_bytes += len;
    if (b->pending.len >= WP_ALOG_FLUSH_BYTES)
        start_write(b);
}

void wp_alog_writer_flush(wp_alog_writer *w)
{
    for (size_t i = 0; i < WP_ALOG_MAX_FILES; i++) {
        if (w->bufs[i])
            start_write(w->bufs[i]);
    }
}

static void on_timer_closed(uv_handle_t *h)
{
    wp_alog_writer *w = h->data;
    w->timer_closed = true;
    maybe_finish(w);
}

void wp_alog_writer_close(wp_alog_writer *w, void (*done)(wp_alog_writer *))
{
    if (w->closing)
        return;
    wp_alog_writer_flush(w);
    w->closing = true;
    w->done = done;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, on_timer_closed);
}
